/* crest: an established TCP connection through TCP_REPAIR (--tcp-established,
 * docs/engine.md, "Inet sockets"). The dump puts crest's copy of the socket
 * in repair mode for as long as it reads the sequence numbers, both queues
 * (peeked), the options the handshake agreed on, the timestamp and the
 * window, and takes it out again without a window probe. The restore makes
 * the connection again in repair mode (no handshake: connect() only sets
 * the state), fills the queues, and leaves repair mode once every socket of
 * the tree exists (tcp_conn_release), so that a peer in the tree is there to
 * hear it. */
#define _GNU_SOURCE
#include <config.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "log.h"
#include "image.h"
#include "sk-tcp.h"
#include "util.h"

/* A queue can hold what the buffer allows: tcp_rmem's default maximum is 6
   MiB (4 MiB refused a fast loopback transfer's, December 2026). */
#define TCP_QUEUE_MAX (16u << 20)

/* The channel to crest outside a rootless container, or -1 (see
   tcp_repair_helper). */
static int helper = -1;

void
tcp_repair_helper(int fd)
{
  helper = fd;
}

/* Repair mode set to ON (TCP_REPAIR's value) on FD by crest outside the
   container: the socket goes to it (SCM_RIGHTS) with "T" and the value as
   a digit, and it answers "t" and an errno (0: done). crest, in the user
   namespace that owns the container's and as its owner, holds
   CAP_NET_ADMIN over the container's network namespace, which a stock
   kernel wants for TCP_REPAIR and the restorer does not hold. */
static int
helper_request(int fd, const char *req, size_t len)
{
  char ans[16];
  struct pollfd p = { helper, POLLIN, 0 };
  ssize_t n;
  if (send_with_fd(helper, req, len, fd) != (ssize_t)len)
    return -1;
  if (poll(&p, 1, 10000) != 1)
    return errno = ETIMEDOUT, -1;
  n = recv(helper, ans, sizeof ans - 1, 0);
  if (n < 2 || ans[0] != 't')
    return errno = EPROTO, -1;
  ans[n] = 0;
  errno = atoi(ans + 1);
  return errno ? -1 : 0;
}

static int
repair_by_helper(int fd, int on)
{
  char req[2] = { 'T', on == TCP_REPAIR_OFF_NO_WP ? '2' : on ? '1' : '0' };
  return helper_request(fd, req, sizeof req);
}

/* FD's send (SND) or receive buffer set to V bytes as getsockopt reads it,
   past net.core.wmem_max and rmem_max (SO_SNDBUFFORCE, SO_RCVBUFFORCE:
   CAP_NET_ADMIN in the socket's network namespace, or crest outside a
   container, "TS<V>" or "TR<V>"); without either, as far as the maximum
   lets a plain SO_SNDBUF go. 0 when it reads V after. */
/* May this crest set a buffer past net.core.rmem_max and wmem_max
   (SO_RCVBUFFORCE, SO_SNDBUFFORCE)? The kernel asks for CAP_NET_ADMIN in
   the initial user namespace, not the socket's network namespace's: root
   only, never a rootless crest. Tried once on a socket of its own. */
static bool
force_allowed(void)
{
  static int known = -1;
  if (known < 0)
    {
      int v = 1 << 16, s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      known = s >= 0 && setsockopt(s, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof v) == 0;
      if (s >= 0)
        close(s);
    }
  return known == 1;
}

/* The largest buffer a plain setsockopt gives (twice net.core.rmem_max or
   wmem_max), or INT_MAX where this crest may force one. Asked of a socket
   of its own, the most asked for: the sysctls are the initial network
   namespace's only, and a container's restorer does not see them. */
static long
buf_cap(bool snd)
{
  static long cap[2];
  if (force_allowed())
    return INT_MAX;
  if (!cap[snd])
    {
      int v = INT_MAX / 2, got = 0, s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      socklen_t l = sizeof got;
      cap[snd] = INT_MAX;
      if (s >= 0 && setsockopt(s, SOL_SOCKET, snd ? SO_SNDBUF : SO_RCVBUF, &v, sizeof v) == 0
          && getsockopt(s, SOL_SOCKET, snd ? SO_SNDBUF : SO_RCVBUF, &got, &l) == 0 && got > 0)
        cap[snd] = got;
      if (s >= 0)
        close(s);
    }
  return cap[snd];
}

/* The buffer a queue of LEN bytes needs in repair mode, where nothing
   drains it: a receive queue fills its buffer to the byte, a send queue
   to about 97% of it (each segment's bookkeeping; measured December 2026
   with an 8 MiB buffer: 8,388,608 and 8,191,320 bytes). */
static long
queue_need(size_t len, bool snd)
{
  return (long)(snd ? len + len / 32 : len);
}

/* The size a buffer of V reads once set: the kernel doubles the half it
   is given, so only even sizes can be set; one it grew itself (TCP's
   tuning) may be odd, and comes back one byte less. Until December 2026
   that byte failed the restore of half of the connections of a loopback
   transfer ("set SO_RCVBUF to 1599445"), the tree ended. */
static int
even(int v)
{
  return v & ~1;
}

static int
set_buf(int fd, bool snd, int v)
{
  int half = v / 2, now = 0;
  socklen_t l = sizeof now;
  if (setsockopt(fd, SOL_SOCKET, snd ? SO_SNDBUFFORCE : SO_RCVBUFFORCE, &half, sizeof half) < 0)
    {
      char req[24];
      int n = snprintf(req, sizeof req, "T%c%d", snd ? 'S' : 'R', half);
      if (errno != EPERM || helper < 0 || helper_request(fd, req, (size_t)n) < 0)
        setsockopt(fd, SOL_SOCKET, snd ? SO_SNDBUF : SO_RCVBUF, &half, sizeof half);
    }
  if (getsockopt(fd, SOL_SOCKET, snd ? SO_SNDBUF : SO_RCVBUF, &now, &l) < 0)
    return -1;
  return now == even(v) ? 0 : (errno = EPERM, -1);
}

static int
repair(int fd, int on)
{
  if (setsockopt(fd, SOL_TCP, TCP_REPAIR, &on, sizeof on) == 0)
    return 0;
  if (errno != EPERM || helper < 0)
    return -1;
  return repair_by_helper(fd, on);
}

static int
select_queue(int fd, int q)
{
  return setsockopt(fd, SOL_TCP, TCP_REPAIR_QUEUE, &q, sizeof q);
}

/* Queue Q of D (in repair mode): its first sequence number and its bytes. */
static int
read_queue(int d, int q, int ioc, uint32_t *seq, uint8_t **buf, size_t *len, crest_error_t *err)
{
  int n = 0;
  uint32_t end = 0;
  socklen_t sl = sizeof end;
  if (select_queue(d, q) < 0 || getsockopt(d, SOL_TCP, TCP_QUEUE_SEQ, &end, &sl) < 0
      || ioctl(d, ioc, &n) < 0)
    return crest_error_errno(err, "read the %s queue's sequence",
                             q == TCP_SEND_QUEUE ? "send" : "receive");
  if ((unsigned)n > TCP_QUEUE_MAX)
    return crest_error_make(err, EFBIG, "%d bytes in its %s queue: more than crest saves", n,
                            q == TCP_SEND_QUEUE ? "send" : "receive");
  *seq = end - (uint32_t)n;
  *len = (size_t)n;
  *buf = xmalloc(*len + 1);
  if (n && recv(d, *buf, *len, MSG_PEEK | MSG_DONTWAIT) != n)
    return crest_error_errno(err, "peek its %s queue", q == TCP_SEND_QUEUE ? "send" : "receive");
  return 0;
}

static int
conn_read(int d, struct tcp_conn *t, crest_error_t *err)
{
  struct tcp_info ti;
  socklen_t len = sizeof ti;
  int mss = 0;
  memset(&ti, 0, sizeof ti);
  if (getsockopt(d, SOL_TCP, TCP_INFO, &ti, &len) < 0)
    return crest_error_errno(err, "getsockopt TCP_INFO");
  t->ts = ti.tcpi_options & TCPI_OPT_TIMESTAMPS;
  t->sack = ti.tcpi_options & TCPI_OPT_SACK;
  t->wscale = ti.tcpi_options & TCPI_OPT_WSCALE;
  t->snd_wscale = ti.tcpi_snd_wscale;
  t->rcv_wscale = ti.tcpi_rcv_wscale;
  len = sizeof mss;
  if (getsockopt(d, SOL_TCP, TCP_MAXSEG, &mss, &len) < 0)
    return crest_error_errno(err, "getsockopt TCP_MAXSEG");
  t->mss = (uint32_t)mss;
  len = sizeof t->tsval;
  if (t->ts && getsockopt(d, SOL_TCP, TCP_TIMESTAMP, &t->tsval, &len) < 0)
    return crest_error_errno(err, "getsockopt TCP_TIMESTAMP");
  len = sizeof t->win;
  if (getsockopt(d, SOL_TCP, TCP_REPAIR_WINDOW, &t->win, &len) < 0)
    return crest_error_errno(err, "getsockopt TCP_REPAIR_WINDOW");
  if (read_queue(d, TCP_SEND_QUEUE, SIOCOUTQ, &t->snd_seq, &t->sndq, &t->nsnd, err) < 0
      || read_queue(d, TCP_RECV_QUEUE, SIOCINQ, &t->rcv_seq, &t->rcvq, &t->nrcv, err) < 0)
    return -1;
  len = sizeof t->sndbuf;
  if (getsockopt(d, SOL_SOCKET, SO_SNDBUF, &t->sndbuf, &len) < 0)
    return crest_error_errno(err, "getsockopt SO_SNDBUF");
  len = sizeof t->rcvbuf;
  if (getsockopt(d, SOL_SOCKET, SO_RCVBUF, &t->rcvbuf, &len) < 0)
    return crest_error_errno(err, "getsockopt SO_RCVBUF");
  return 0;
}

int
tcp_conn_dump(int d, struct tcp_conn *t, crest_error_t *err)
{
  int rc;
  memset(t, 0, sizeof *t);
  if (repair(d, 1) < 0)
    return crest_error_errno(err, "an established TCP connection: TCP_REPAIR (crest holds no "
                                  "CAP_NET_ADMIN in the socket's network namespace)");
  rc = conn_read(d, t, err);
  select_queue(d, TCP_NO_QUEUE);
  /* Its queues go back in repair mode, where nothing drains them: each
     needs a buffer that holds it (queue_need), which a restore without
     CAP_NET_ADMIN of the initial user namespace gets only up to twice
     net.core.rmem_max or wmem_max (a send queue full to a buffer of that
     size does not fit it again: the restore's segments cost more than the
     connection's). Refused now, while the tree runs, rather than failing
     the restore once it is gone. */
  for (int k = 0; rc == 0 && k < 2; k++)
    {
      size_t len = k ? t->nrcv : t->nsnd;
      long cap = buf_cap(!k);
      if (len && queue_need(len, !k) > cap)
        rc = crest_error_make(err, ENOTSUP,
                              "%zu bytes in its %s queue, more than a buffer a restore without "
                              "root may set can hold (%ld bytes: twice net.core.%s)",
                              len, k ? "receive" : "send", cap, k ? "rmem_max" : "wmem_max");
    }
  if (rc == 0)
    return 0;
  if (repair(d, TCP_REPAIR_OFF_NO_WP) < 0)
    crest_debug("checkpoint: a TCP socket could not be taken out of repair mode: %s",
                strerror(errno));
  return rc;
}

int
tcp_conn_unrepair(int d, bool reuse)
{
  int one = 1;
  if (repair(d, TCP_REPAIR_OFF_NO_WP) < 0)
    return -1;
  /* Leaving repair mode clears SO_REUSEADDR (the kernel forced it on in
     repair mode): the program's value again. */
  return reuse ? setsockopt(d, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) : 0;
}

void
tcp_conn_free(struct tcp_conn *t)
{
  free(t->sndq), free(t->rcvq);
  t->sndq = t->rcvq = NULL;
}

void
tcp_conn_put(yajl_gen g, const struct tcp_conn *t)
{
  jput_key(g, "tcp");
  yajl_gen_map_open(g);
  jput_int(g, "snd_seq", t->snd_seq);
  jput_int(g, "rcv_seq", t->rcv_seq);
  jput_int(g, "mss", t->mss);
  jput_bool(g, "timestamps", t->ts);
  jput_bool(g, "sack", t->sack);
  jput_bool(g, "wscale", t->wscale);
  jput_int(g, "snd_wscale", t->snd_wscale);
  jput_int(g, "rcv_wscale", t->rcv_wscale);
  jput_int(g, "tsval", t->tsval);
  jput_int(g, "snd_wl1", t->win.snd_wl1);
  jput_int(g, "snd_wnd", t->win.snd_wnd);
  jput_int(g, "max_window", t->win.max_window);
  jput_int(g, "rcv_wnd", t->win.rcv_wnd);
  jput_int(g, "rcv_wup", t->win.rcv_wup);
  jput_hex(g, "sndq", t->sndq, t->nsnd);
  jput_hex(g, "rcvq", t->rcvq, t->nrcv);
  jput_int(g, "sndbuf", t->sndbuf);
  jput_int(g, "rcvbuf", t->rcvbuf);
  yajl_gen_map_close(g);
}

static int
get_u32(yajl_val v, const char *key, uint32_t max, uint32_t *out, crest_error_t *err)
{
  int64_t x;
  if (jget_i64(v, key, &x, err) < 0)
    return -1;
  if (x < 0 || x > max)
    return crest_error_make(err, EINVAL, "key \"%s\": %lld out of range", key, (long long)x);
  *out = (uint32_t)x;
  return 0;
}

int
tcp_conn_parse(yajl_val v, struct tcp_conn *t, crest_error_t *err)
{
  const char *path[] = { "tcp", NULL };
  yajl_val m = yajl_tree_get(v, path, yajl_t_object);
  uint32_t a, b;
  memset(t, 0, sizeof *t);
  if (!m)
    return crest_error_make(err, EINVAL, "key \"tcp\": missing or not an object");
  if (get_u32(m, "snd_seq", UINT32_MAX, &t->snd_seq, err) < 0
      || get_u32(m, "rcv_seq", UINT32_MAX, &t->rcv_seq, err) < 0
      || get_u32(m, "mss", 65535, &t->mss, err) < 0 || jget_bool(m, "timestamps", &t->ts, err) < 0
      || jget_bool(m, "sack", &t->sack, err) < 0 || jget_bool(m, "wscale", &t->wscale, err) < 0
      || get_u32(m, "snd_wscale", 14, &a, err) < 0 || get_u32(m, "rcv_wscale", 14, &b, err) < 0
      || get_u32(m, "tsval", UINT32_MAX, &t->tsval, err) < 0
      || get_u32(m, "snd_wl1", UINT32_MAX, &t->win.snd_wl1, err) < 0
      || get_u32(m, "snd_wnd", UINT32_MAX, &t->win.snd_wnd, err) < 0
      || get_u32(m, "max_window", UINT32_MAX, &t->win.max_window, err) < 0
      || get_u32(m, "rcv_wnd", UINT32_MAX, &t->win.rcv_wnd, err) < 0
      || get_u32(m, "rcv_wup", UINT32_MAX, &t->win.rcv_wup, err) < 0
      || jget_hex_alloc(m, "sndq", TCP_QUEUE_MAX, &t->sndq, &t->nsnd, err) < 0
      || jget_hex_alloc(m, "rcvq", TCP_QUEUE_MAX, &t->rcvq, &t->nrcv, err) < 0)
    return crest_error_wrap(err, "tcp");
  t->snd_wscale = (int)a, t->rcv_wscale = (int)b;
  /* Format 21; before it the new socket's own sizes stood. */
  if (yajl_tree_get(m, (const char *[]){ "sndbuf", NULL }, yajl_t_any))
    {
      if (get_u32(m, "sndbuf", INT32_MAX, &a, err) < 0
          || get_u32(m, "rcvbuf", INT32_MAX, &b, err) < 0)
        return crest_error_wrap(err, "tcp");
      t->sndbuf = (int)a, t->rcvbuf = (int)b;
    }
  return 0;
}

/* Write LEN bytes of BUF into queue Q of FD, in repair mode. Nothing
   drains a socket in repair mode, so the queue must fit its buffer: a
   new socket's is smaller than a connection that grew its own held (a
   client slow to read 3.8 MB of redis's answer: "fill its send queue:
   Resource temporarily unavailable" until December 2026, the tree gone).
   Raised first where it would not hold the bytes (queue_need, and some),
   as far as this crest may; tcp_conn_restore then sets the connection's
   own size. */
static int
fill_queue(int fd, int q, const uint8_t *buf, size_t len, crest_error_t *err)
{
  int have = 0;
  socklen_t l = sizeof have;
  bool snd = q == TCP_SEND_QUEUE;
  if (select_queue(fd, q) < 0)
    return crest_error_errno(err, "select a queue");
  if (len && getsockopt(fd, SOL_SOCKET, snd ? SO_SNDBUF : SO_RCVBUF, &have, &l) == 0
      && have < queue_need(len, snd) + (64 << 10))
    set_buf(fd, snd, (int)(queue_need(len, snd) + (64 << 10)));
  while (len)
    {
      ssize_t n = send(fd, buf, len > 65536 ? 65536 : len, 0);
      if (n <= 0)
        {
          have = 0, l = sizeof have;
          getsockopt(fd, SOL_SOCKET, snd ? SO_SNDBUF : SO_RCVBUF, &have, &l);
          return crest_error_errno(err,
                                   "fill its %s queue: %zu bytes more do not fit its buffer (%s "
                                   "%d; a larger one needs CAP_NET_ADMIN of the initial user "
                                   "namespace)",
                                   snd ? "send" : "receive", len, snd ? "SO_SNDBUF" : "SO_RCVBUF",
                                   have);
        }
      buf += n, len -= (size_t)n;
    }
  return 0;
}

static int
set_options(int fd, const struct tcp_conn *t, crest_error_t *err)
{
  struct tcp_repair_opt o[4];
  int n = 0;
  o[n].opt_code = TCPOPT_MAXSEG, o[n++].opt_val = t->mss;
  if (t->wscale)
    o[n].opt_code = TCPOPT_WINDOW,
    o[n++].opt_val = (uint32_t)t->snd_wscale | ((uint32_t)t->rcv_wscale << 16);
  if (t->sack)
    o[n].opt_code = TCPOPT_SACK_PERMITTED, o[n++].opt_val = 0;
  if (t->ts)
    o[n].opt_code = TCPOPT_TIMESTAMP, o[n++].opt_val = 0;
  if (setsockopt(fd, SOL_TCP, TCP_REPAIR_OPTIONS, o, n * sizeof o[0]) < 0)
    return crest_error_errno(err, "TCP_REPAIR_OPTIONS");
  return 0;
}

int
tcp_conn_restore(int fd, const struct sockaddr *local, const struct sockaddr *peer, socklen_t alen,
                 const struct tcp_conn *t, crest_error_t *err)
{
  uint32_t snd = t->snd_seq, rcv = t->rcv_seq;
  if (repair(fd, 1) < 0)
    return crest_error_errno(err, "TCP_REPAIR (the restore needs CAP_NET_ADMIN in the network "
                                  "namespace, or crest outside the container to set it, or "
                                  "CAP_CHECKPOINT_RESTORE on the patched kernel)");
  if (bind(fd, local, alen) < 0)
    return crest_error_errno(err, "bind");
  if (select_queue(fd, TCP_SEND_QUEUE) < 0
      || setsockopt(fd, SOL_TCP, TCP_QUEUE_SEQ, &snd, sizeof snd) < 0
      || select_queue(fd, TCP_RECV_QUEUE) < 0
      || setsockopt(fd, SOL_TCP, TCP_QUEUE_SEQ, &rcv, sizeof rcv) < 0)
    return crest_error_errno(err, "set its sequence numbers");
  if (t->ts && setsockopt(fd, SOL_TCP, TCP_TIMESTAMP, &t->tsval, sizeof t->tsval) < 0)
    return crest_error_errno(err, "set TCP_TIMESTAMP");
  /* The segment size the connection's MSS gives, before the connect in
     repair mode computes it (from TCP_MAXSEG, or else the 536 of a
     connection that has agreed on none: TCP_REPAIR_OPTIONS after it
     raises the clamp, not the size already computed). Until December 2026
     a restored loopback connection sent segments of 524 bytes, most of
     them sent again, at a tenth of its speed. TCP_MAXSEG takes at most
     32,767 (loopback's 65,495 is then about halved, still its own order);
     a refusal leaves the kernel's. */
  {
    int mss = t->mss > 32767 ? 32767 : (int)t->mss;
    if (mss >= 88 && setsockopt(fd, SOL_TCP, TCP_MAXSEG, &mss, sizeof mss) < 0)
      crest_debug("restore: TCP_MAXSEG %d: %s", mss, strerror(errno));
  }
  if (connect(fd, peer, alen) < 0)
    return crest_error_errno(err, "connect in repair mode");
  if (set_options(fd, t, err) < 0 || fill_queue(fd, TCP_RECV_QUEUE, t->rcvq, t->nrcv, err) < 0
      || fill_queue(fd, TCP_SEND_QUEUE, t->sndq, t->nsnd, err) < 0)
    return -1;
  if (setsockopt(fd, SOL_TCP, TCP_REPAIR_WINDOW, &t->win, sizeof t->win) < 0)
    return crest_error_errno(err, "set TCP_REPAIR_WINDOW");
  select_queue(fd, TCP_NO_QUEUE);
  /* The connection's buffers as they were (a size the program set, or
     the one the kernel had grown to); the kernel keeps them so from now
     on, where before it would have grown them further. */
  for (int k = 0; k < 2; k++)
    {
      int want = k ? t->rcvbuf : t->sndbuf, now = 0;
      socklen_t l = sizeof now;
      if (want > 0 && getsockopt(fd, SOL_SOCKET, k ? SO_RCVBUF : SO_SNDBUF, &now, &l) == 0
          && now != even(want) && set_buf(fd, !k, want) < 0)
        {
          /* Larger than a restore without root may set: a size the
             kernel grew to itself (TCP's tuning, up to tcp_rmem's
             maximum), which no unprivileged program could have set. As
             large as may be, rather than the tree lost: its queue fit
             (tcp_conn_dump). */
          long cap = buf_cap(!k);
          int half = (int)(cap / 2);
          if (want > cap
              && setsockopt(fd, SOL_SOCKET, k ? SO_RCVBUF : SO_SNDBUF, &half, sizeof half) == 0)
            {
              crest_debug("restore: a TCP connection's %s was %d, set to %ld (the most a restore "
                          "without root may)",
                          k ? "SO_RCVBUF" : "SO_SNDBUF", want, cap);
              continue;
            }
          return crest_error_errno(err,
                                   "set %s to %d (it reads %d; over twice net.core.%s it needs "
                                   "CAP_NET_ADMIN of the initial user namespace)",
                                   k ? "SO_RCVBUF" : "SO_SNDBUF", want, now,
                                   k ? "rmem_max" : "wmem_max");
        }
    }
  return 0;
}

int
tcp_conn_release(int fd, bool reuse, crest_error_t *err)
{
  int one = 1;
  if (repair(fd, TCP_REPAIR_OFF) < 0)
    return crest_error_errno(err, "leave TCP repair mode");
  /* Leaving repair mode cleared SO_REUSEADDR, as at checkpoint
     (tcp_conn_unrepair). */
  if (reuse && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0)
    return crest_error_errno(err, "SO_REUSEADDR again after repair mode");
  return 0;
}
