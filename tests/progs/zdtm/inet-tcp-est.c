/* zdtm-inet-tcp-est: an established TCP connection on 127.0.0.1, both ends
 * in the tree, with bytes unread in both directions, TCP_NODELAY on one
 * end. Checkpointed with --tcp-established (sequence numbers, queues,
 * options and window through TCP_REPAIR): after restore the same ports on
 * both ends, the unread bytes in order, then 100 KiB more each way, and a
 * close seen by the other end; a second connection with its queues full
 * (below, big_set). Refused where TCP_REPAIR is not open to the
 * dump or the restore (process mode in the host's network namespace; a
 * container on a stock kernel). */
#define _GNU_SOURCE
#include "zdtm.h"

#include <stdio.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int
port(int fd, bool peer)
{
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  memset(&a, 0, sizeof a);
  if ((peer ? getpeername : getsockname)(fd, (struct sockaddr *)&a, &len) < 0)
    return -1;
  return ntohs(a.sin_port);
}

static void
expect(const char *what, int fd, const char *want, size_t len)
{
  char buf[64];
  ssize_t n = recv(fd, buf, len, MSG_WAITALL);
  if (n != (ssize_t)len || memcmp(buf, want, len))
    zdtm_fail("%s: expected \"%s\", got %zd bytes (%s)", what, want, n,
              n < 0 ? strerror(errno) : "");
}

/* N bytes of pattern SEED from A to B, written and read in turns. */
static void
stream(const char *what, int a, int b, size_t n, uint32_t seed)
{
  static char out[4096], in[4096];
  for (size_t off = 0; off < n; off += sizeof out)
    {
      for (size_t i = 0; i < sizeof out; i++)
        out[i] = (char)zdtm_pattern(seed, off + i);
      if (write(a, out, sizeof out) != sizeof out
          || recv(b, in, sizeof in, MSG_WAITALL) != sizeof in || memcmp(in, out, sizeof in))
        {
          zdtm_fail("%s: bytes at %zu lost or changed", what, off);
          return;
        }
    }
}

/* A second connection whose writer ran ahead of a reader that reads
   nothing: the server's send queue and the client's receive queue full,
   the server's buffers set by the program (SO_SNDBUF, SO_RCVBUF), the
   client's grown by the kernel. Each of the four sizes read back the same
   after restore (before December 2026 a connection's were the new
   socket's, and a send queue larger than a new socket's buffer failed the
   restore, the tree gone: redis answering a slow client). */
static int bc, bs;
static size_t big;
static int bufs[4];

static void
read_bufs(int out[4])
{
  int fds[2] = { bs, bc };
  for (int k = 0; k < 4; k++)
    {
      socklen_t len = sizeof out[k];
      if (getsockopt(fds[k / 2], SOL_SOCKET, k % 2 ? SO_RCVBUF : SO_SNDBUF, &out[k], &len) < 0)
        out[k] = -1;
    }
}

/* What /proc/sys/net/core/NAME holds, or DFLT. */
static long
core_sysctl(const char *name, long dflt)
{
  char p[64];
  long v = dflt;
  FILE *f;
  snprintf(p, sizeof p, "/proc/sys/net/core/%s", name);
  if ((f = fopen(p, "r")))
    {
      if (fscanf(f, "%ld", &v) != 1)
        v = dflt;
      fclose(f);
    }
  return v;
}

/* The server's buffers: 1 MiB asked for (2 MiB given), or half of what
   net.core.wmem_max allows where that is less (the VM's 212,992): a send
   queue full to the largest buffer a program may set is refused at
   checkpoint (its segments cost more once restored), this one must
   restore. */
static void
big_set(void)
{
  struct sockaddr_in a;
  long m = core_sysctl("wmem_max", 1 << 21), r = core_sysctl("rmem_max", 1 << 21);
  int l, sz = (int)(m < r ? m : r) / 2;
  static char out[65536];
  if (sz > 1 << 20)
    sz = 1 << 20;
  zdtm_tcp_pair(&l, &a, &bc, &bs);
  close(l);
  if (setsockopt(bs, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz) < 0
      || setsockopt(bs, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz) < 0)
    zdtm_error("SO_SNDBUF: %s", strerror(errno));
  for (;;)
    {
      ssize_t n;
      for (size_t i = 0; i < sizeof out; i++)
        out[i] = (char)zdtm_pattern(3, big + i);
      n = send(bs, out, sizeof out, MSG_DONTWAIT);
      if (n <= 0)
        break;
      big += (size_t)n;
    }
  usleep(100000); /* the last segments into the client's queue */
  read_bufs(bufs);
}

/* The largest buffer of kind OPT a program without root gets (twice
   net.core.wmem_max or rmem_max), asked of a socket of its own. */
static int
buf_max(int opt)
{
  int v = 1 << 30, got = 0, s = socket(AF_UNIX, SOCK_STREAM, 0);
  socklen_t len = sizeof got;
  if (s < 0 || setsockopt(s, SOL_SOCKET, opt, &v, sizeof v) < 0
      || getsockopt(s, SOL_SOCKET, opt, &got, &len) < 0)
    got = -1;
  if (s >= 0)
    close(s);
  return got;
}

static void
big_check(void)
{
  static char in[65536];
  int now[4];
  size_t got = 0;
  read_bufs(now);
  for (int k = 0; k < 4; k++)
    {
      /* A size the kernel grew past what a program may set (the
         client's, as it read) comes back as the most a restore without
         root may set (docs/engine.md); the rest as they were, an odd one
         a byte less. */
      int max = buf_max(k % 2 ? SO_RCVBUF : SO_SNDBUF), want = bufs[k];
      if (max > 0 && want > max)
        want = max;
      if (now[k] != want && now[k] != (want & ~1))
        zdtm_fail("the full connection's %s %s: %d after restore, %d before (%d expected)",
                  k / 2 ? "client's" : "server's", k % 2 ? "SO_RCVBUF" : "SO_SNDBUF", now[k],
                  bufs[k], want);
    }
  while (got < big)
    {
      ssize_t n = recv(bc, in, sizeof in < big - got ? sizeof in : big - got, 0);
      if (n <= 0)
        {
          zdtm_fail("the full connection: %zu of its %zu queued bytes read (%s)", got, big,
                    n < 0 ? strerror(errno) : "closed");
          return;
        }
      for (ssize_t i = 0; i < n; i++)
        if (in[i] != (char)zdtm_pattern(3, got + (size_t)i))
          {
            zdtm_fail("the full connection: byte %zu of %zu changed", got + (size_t)i, big);
            return;
          }
      got += (size_t)n;
    }
}

int
main(int argc, char **argv)
{
  struct sockaddr_in a;
  socklen_t len;
  int l, c, s, v = 0, cport, sport;
  char buf[4];

  zdtm_init(argc, argv);
  zdtm_tcp_pair(&l, &a, &c, &s);
  close(l);
  if (write(c, "to the server", 13) != 13 || write(s, "to the client", 13) != 13)
    zdtm_error("write: %s", strerror(errno));
  cport = port(c, false), sport = port(s, false);
  big_set();

  zdtm_ready();
  zdtm_wait();

  big_check();

  if (port(c, false) != cport || port(c, true) != sport || port(s, false) != sport
      || port(s, true) != cport)
    zdtm_fail("ports (expected %d<->%d, got %d->%d, %d->%d)", cport, sport, port(c, false),
              port(c, true), port(s, false), port(s, true));
  len = sizeof v;
  if (getsockopt(c, SOL_TCP, TCP_NODELAY, &v, &len) < 0 || v != 1)
    zdtm_fail("client: TCP_NODELAY (expected 1, got %d)", v);
  expect("server: the unread bytes", s, "to the server", 13);
  expect("client: the unread bytes", c, "to the client", 13);
  stream("client to server", c, s, 100 << 10, 1);
  stream("server to client", s, c, 100 << 10, 2);
  close(c);
  if (recv(s, buf, sizeof buf, 0) != 0)
    zdtm_fail("server: the client's close is not seen");
  zdtm_finish();
}
