/* crest: the socket layer every family shares (sockets.h): sock_diag
 * queries made in the tree's network namespace, the SOL_SOCKET options,
 * crest's own copy of a socket descriptor. */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include "dump-int.h"
#include "image.h"
#include "kernel-abi.h"
#include "sockets.h"
#include "util.h"

/* --- sock_diag --- */

struct nlbuf
{
  uint8_t *b;
  size_t len;
};

/* Send Q over a new NETLINK_SOCK_DIAG socket of the calling process's
   network namespace and append every answer (nlmsghdr included) to OUT.
   -1 with errno set. */
static int
diag_ask(const struct sk_diag_req *q, struct nlbuf *out)
{
  struct
  {
    struct nlmsghdr h;
    uint8_t req[256];
  } m = { 0 };
  static uint8_t buf[32768];
  cleanup_close int nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (nl < 0)
    return -1;
  if (q->len > sizeof m.req)
    return errno = EINVAL, -1;
  m.h.nlmsg_len = NLMSG_LENGTH(q->len);
  m.h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  m.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  m.h.nlmsg_seq = 1;
  memcpy(m.req, q->req, q->len);
  if (send(nl, &m, m.h.nlmsg_len, 0) < 0)
    return -1;
  for (;;)
    {
      ssize_t n = recv(nl, buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return n == 0 ? (errno = EPIPE, -1) : -1;
      for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
           h = NLMSG_NEXT(h, n))
        {
          if (h->nlmsg_type == NLMSG_DONE)
            return 0;
          if (h->nlmsg_type == NLMSG_ERROR)
            {
              struct nlmsgerr *e = NLMSG_DATA(h);
              return errno = e->error ? -e->error : EIO, -1;
            }
          out->b = xrealloc(out->b, out->len + h->nlmsg_len);
          memcpy(out->b + out->len, h, h->nlmsg_len);
          out->len += h->nlmsg_len;
        }
    }
}

/* The answers in BUF as records. */
static int
diag_split(const struct nlbuf *buf, size_t ino_off, struct sk_diag_set *out, crest_error_t *err)
{
  size_t off = 0;
  while (off + NLMSG_HDRLEN <= buf->len)
    {
      const struct nlmsghdr *h = (const void *)(buf->b + off);
      size_t plen;
      struct sk_diag_rec *r;
      if (h->nlmsg_len < NLMSG_HDRLEN || h->nlmsg_len > buf->len - off)
        return crest_error_make(err, EIO, "sock_diag: a truncated answer");
      plen = h->nlmsg_len - NLMSG_HDRLEN;
      if (plen < ino_off + 4)
        return crest_error_make(err, EIO, "sock_diag: an answer of %zu bytes", plen);
      out->r = xrealloc(out->r, (out->n + 1) * sizeof *out->r);
      r = &out->r[out->n++];
      r->len = plen;
      r->msg = xmalloc(plen ? plen : 1);
      memcpy(r->msg, (const uint8_t *)h + NLMSG_HDRLEN, plen);
      memcpy(&r->ino, r->msg + ino_off, 4);
      off += NLMSG_ALIGN(h->nlmsg_len);
    }
  return 0;
}

/* *FD: PID's namespace NS, or -1 when it is crest's own. */
static int
ns_other(pid_t pid, const char *ns, int *fd, crest_error_t *err)
{
  cleanup_free char *self = xasprintf("/proc/self/ns/%s", ns);
  cleanup_free char *path = xasprintf("/proc/%d/ns/%s", pid, ns);
  struct stat a, b;
  *fd = -1;
  if (stat(self, &a) < 0 || stat(path, &b) < 0)
    return crest_error_errno(err, "task %d: %s namespace", pid, ns);
  if (a.st_dev == b.st_dev && a.st_ino == b.st_ino)
    return 0;
  if ((*fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
    return crest_error_errno(err, "task %d: open its %s namespace", pid, ns);
  return 0;
}

/* The child: enter the namespaces, ask, and write to OUT a status (the
   step that failed, 0 for none, and its errno) and then the answers. */
static _Noreturn void
diag_child(int userfd, int netfd, const struct sk_diag_req *q, int out)
{
  struct nlbuf b = { 0 };
  int32_t st[2] = { 0, 0 };
  if (userfd >= 0 && setns(userfd, CLONE_NEWUSER) < 0)
    st[0] = 1;
  else if (netfd >= 0 && setns(netfd, CLONE_NEWNET) < 0)
    st[0] = 2;
  else if (diag_ask(q, &b) < 0)
    st[0] = 3;
  st[1] = st[0] ? errno : 0;
  if (write_all(out, st, sizeof st) < 0 || (b.len && write_all(out, b.b, b.len) < 0))
    _exit(1);
  _exit(0);
}

static int
diag_read_child(int in, struct nlbuf *b, crest_error_t *err)
{
  static const char *const step[]
      = { "", "enter its user namespace", "enter its network namespace", "ask NETLINK_SOCK_DIAG" };
  int32_t st[2];
  uint8_t chunk[16384];
  ssize_t n;
  if (read_all(in, st, sizeof st) < 0)
    return crest_error_make(err, EIO, "sock_diag: the helper process died");
  if (st[0])
    return crest_error_sys(err, st[1], "sock_diag: %s", step[st[0] & 3]);
  while ((n = read(in, chunk, sizeof chunk)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0)
      {
        b->b = xrealloc(b->b, b->len + n);
        memcpy(b->b + b->len, chunk, n);
        b->len += n;
      }
  return n < 0 ? crest_error_errno(err, "sock_diag: read the answers") : 0;
}

static int
diag_in_child(int userfd, int netfd, const struct sk_diag_req *q, struct nlbuf *b,
              crest_error_t *err)
{
  int p[2], status, r;
  pid_t child;
  if (pipe2(p, O_CLOEXEC) < 0)
    return crest_error_errno(err, "sock_diag: pipe");
  if ((child = fork()) < 0)
    {
      close(p[0]), close(p[1]);
      return crest_error_errno(err, "sock_diag: fork");
    }
  if (child == 0)
    {
      close(p[0]);
      diag_child(userfd, netfd, q, p[1]);
    }
  close(p[1]);
  r = diag_read_child(p[0], b, err);
  close(p[0]);
  while (waitpid(child, &status, 0) < 0 && errno == EINTR)
    ;
  return r;
}

int
sk_diag_query(pid_t pid, const struct sk_diag_req *q, struct sk_diag_set *out, crest_error_t *err)
{
  cleanup_close int userfd = -1, netfd = -1;
  struct nlbuf b = { 0 };
  int r;
  if (ns_other(pid, "user", &userfd, err) < 0 || ns_other(pid, "net", &netfd, err) < 0)
    return -1;
  if (userfd < 0 && netfd < 0)
    r = diag_ask(q, &b) < 0 ? crest_error_errno(err, "sock_diag: ask NETLINK_SOCK_DIAG") : 0;
  else
    r = diag_in_child(userfd, netfd, q, &b, err);
  if (r == 0)
    r = diag_split(&b, q->ino_off, out, err);
  free(b.b);
  return r;
}

const struct sk_diag_rec *
sk_diag_find(const struct sk_diag_set *s, uint32_t ino)
{
  for (size_t i = 0; i < s->n; i++)
    if (s->r[i].ino == ino)
      return &s->r[i];
  return NULL;
}

const void *
sk_diag_attr(const struct sk_diag_rec *r, size_t hdr, unsigned type, size_t *len)
{
  size_t off = NLMSG_ALIGN(hdr);
  while (off + sizeof(struct rtattr) <= r->len)
    {
      const struct rtattr *a = (const void *)(r->msg + off);
      if (a->rta_len < sizeof *a || a->rta_len > r->len - off)
        return NULL;
      if (a->rta_type == type)
        {
          *len = a->rta_len - RTA_LENGTH(0);
          return (const uint8_t *)a + RTA_LENGTH(0);
        }
      off += RTA_ALIGN(a->rta_len);
    }
  return NULL;
}

void
sk_diag_free(struct sk_diag_set *s)
{
  for (size_t i = 0; i < s->n; i++)
    free(s->r[i].msg);
  free(s->r);
  s->r = NULL;
  s->n = 0;
}

int
sk_diag_cached(struct sk_diag_cache *k, const struct dctx *c, pid_t pid,
               const struct sk_diag_req *q, const struct sk_diag_set **out, crest_error_t *err)
{
  if (k->c != c || k->t0.tv_sec != c->t0.tv_sec || k->t0.tv_nsec != c->t0.tv_nsec)
    {
      crest_error_t e = NULL;
      sk_diag_free(&k->s);
      free(k->why);
      k->why = NULL;
      k->c = c;
      k->t0 = c->t0;
      k->err = 0;
      if (sk_diag_query(pid, q, &k->s, &e) < 0)
        {
          k->err = e && e->status ? e->status : EIO;
          k->why = xstrdup(e && e->msg ? e->msg : "sock_diag failed");
          crest_error_release(&e);
        }
    }
  if (out)
    *out = &k->s;
  return k->err ? crest_error_make(err, k->err, "%s", k->why) : 0;
}

/* --- SOL_SOCKET options --- */

enum sko_kind
{
  SKO_INT,
  SKO_LINGERK,
  SKO_TIME
};

static const struct
{
  const char *name;
  int opt;
  enum sko_kind kind;
} sko[SKO_N] = {
  [SKO_RCVBUF] = { "SO_RCVBUF", SO_RCVBUF, SKO_INT },
  [SKO_SNDBUF] = { "SO_SNDBUF", SO_SNDBUF, SKO_INT },
  [SKO_PASSCRED] = { "SO_PASSCRED", SO_PASSCRED, SKO_INT },
  [SKO_PASSSEC] = { "SO_PASSSEC", SO_PASSSEC, SKO_INT },
  [SKO_PEEK_OFF] = { "SO_PEEK_OFF", SO_PEEK_OFF, SKO_INT },
  [SKO_KEEPALIVE] = { "SO_KEEPALIVE", SO_KEEPALIVE, SKO_INT },
  [SKO_REUSEADDR] = { "SO_REUSEADDR", SO_REUSEADDR, SKO_INT },
  [SKO_REUSEPORT] = { "SO_REUSEPORT", SO_REUSEPORT, SKO_INT },
  [SKO_BROADCAST] = { "SO_BROADCAST", SO_BROADCAST, SKO_INT },
  [SKO_DONTROUTE] = { "SO_DONTROUTE", SO_DONTROUTE, SKO_INT },
  [SKO_OOBINLINE] = { "SO_OOBINLINE", SO_OOBINLINE, SKO_INT },
  [SKO_NO_CHECK] = { "SO_NO_CHECK", SO_NO_CHECK, SKO_INT },
  [SKO_PRIORITY] = { "SO_PRIORITY", SO_PRIORITY, SKO_INT },
  [SKO_RCVLOWAT] = { "SO_RCVLOWAT", SO_RCVLOWAT, SKO_INT },
  [SKO_TIMESTAMP] = { "SO_TIMESTAMP", SO_TIMESTAMP, SKO_INT },
  [SKO_MARK] = { "SO_MARK", SO_MARK, SKO_INT },
  [SKO_LINGER] = { "SO_LINGER", SO_LINGER, SKO_LINGERK },
  [SKO_RCVTIMEO] = { "SO_RCVTIMEO", SO_RCVTIMEO, SKO_TIME },
  [SKO_SNDTIMEO] = { "SO_SNDTIMEO", SO_SNDTIMEO, SKO_TIME },
  [SKO_PASSPIDFD] = { "SO_PASSPIDFD", SO_PASSPIDFD, SKO_INT },
  [SKO_PASSRIGHTS] = { "SO_PASSRIGHTS", SO_PASSRIGHTS, SKO_INT },
};

/* Option I of FD in *V; 1 read, 0 the family has none, -1 failed. */
static int
sko_get(int fd, int i, int64_t *v)
{
  int x = 0;
  struct linger l = { 0 };
  struct timeval tv = { 0 };
  void *p = sko[i].kind == SKO_INT ? (void *)&x : sko[i].kind == SKO_LINGERK ? (void *)&l : &tv;
  socklen_t len = sko[i].kind == SKO_INT       ? sizeof x
                  : sko[i].kind == SKO_LINGERK ? sizeof l
                                               : sizeof tv;
  if (getsockopt(fd, SOL_SOCKET, sko[i].opt, p, &len) < 0)
    return errno == ENOPROTOOPT || errno == EOPNOTSUPP || errno == EINVAL ? 0 : -1;
  *v = sko[i].kind == SKO_INT       ? x
       : sko[i].kind == SKO_LINGERK ? (l.l_onoff ? l.l_linger : -1)
                                    : (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
  return 1;
}

static int
sko_set(int fd, int i, int64_t v)
{
  int x = (int)v;
  struct linger l = { .l_onoff = v >= 0, .l_linger = v >= 0 ? (int)v : 0 };
  struct timeval tv = { .tv_sec = v / 1000000, .tv_usec = v % 1000000 };
  void *p = sko[i].kind == SKO_INT ? (void *)&x : sko[i].kind == SKO_LINGERK ? (void *)&l : &tv;
  socklen_t len = sko[i].kind == SKO_INT       ? sizeof x
                  : sko[i].kind == SKO_LINGERK ? sizeof l
                                               : sizeof tv;
  /* The kernel doubles the buffer sizes it is given. */
  if (i == SKO_RCVBUF || i == SKO_SNDBUF)
    x = (int)(v / 2);
  return setsockopt(fd, SOL_SOCKET, sko[i].opt, p, len);
}

int
sk_opts_get(int fd, struct sk_opts *o, crest_error_t *err)
{
  socklen_t fl = 0;
  int r;
  /* A filter on what the socket receives, of every family (udev's
     netlink monitors have one): EACCES is an eBPF one, which has no
     program to show. Refused. */
  r = getsockopt(fd, SOL_SOCKET, SO_GET_FILTER, NULL, &fl);
  if ((r == 0 && fl) || (r < 0 && errno == EACCES))
    return crest_error_make(err, ENOTSUP,
                            "a socket filter is attached (SO_ATTACH_FILTER, SO_ATTACH_BPF): "
                            "crest does not restore it");
  memset(o, 0, sizeof *o);
  for (int i = 0; i < SKO_N; i++)
    {
      r = sko_get(fd, i, &o->v[i]);
      if (r < 0)
        return crest_error_errno(err, "getsockopt %s", sko[i].name);
      o->have[i] = r > 0;
    }
  return 0;
}

void
sk_opts_default(int family, int type, int proto, struct sk_opts *def)
{
  crest_error_t e = NULL;
  cleanup_close int fd = socket(family, type | SOCK_CLOEXEC, proto);
  memset(def, 0, sizeof *def);
  if (fd >= 0 && sk_opts_get(fd, def, &e) < 0)
    {
      crest_error_release(&e);
      memset(def, 0, sizeof *def);
    }
}

static long
sysctl_long(const char *path)
{
  cleanup_free char *s = NULL;
  crest_error_t e = NULL;
  size_t len;
  if (read_file(path, &s, &len, 64, &e) < 0)
    {
      crest_error_release(&e);
      return -1;
    }
  return strtol(s, NULL, 10);
}

int
sk_opts_check(const struct sk_opts *o, const struct sk_opts *def, bool owns_net, crest_error_t *err)
{
  static const char *const max[2]
      = { "/proc/sys/net/core/rmem_max", "/proc/sys/net/core/wmem_max" };
  for (int i = SKO_RCVBUF; i <= SKO_SNDBUF; i++)
    {
      long m;
      if (!o->have[i] || o->v[i] == def->v[i])
        continue;
      m = sysctl_long(max[i - SKO_RCVBUF]);
      if (m >= 0 && o->v[i] / 2 > m)
        return crest_error_make(err, EPERM,
                                "%s %" PRId64 " is over net.core.%s (%ld): a restore without "
                                "CAP_NET_ADMIN cannot set it",
                                sko[i].name, o->v[i], i == SKO_RCVBUF ? "rmem_max" : "wmem_max", m);
    }
  if (!owns_net && o->have[SKO_MARK] && o->v[SKO_MARK] != def->v[SKO_MARK])
    return crest_error_make(err, EPERM,
                            "SO_MARK %" PRId64 ": setting it needs CAP_NET_ADMIN, which a "
                            "restore in the host's network namespace does not have",
                            o->v[SKO_MARK]);
  if (!owns_net && o->have[SKO_PRIORITY] && o->v[SKO_PRIORITY] > 6)
    return crest_error_make(err, EPERM,
                            "SO_PRIORITY %" PRId64 ": above 6 needs CAP_NET_ADMIN, which a "
                            "restore in the host's network namespace does not have",
                            o->v[SKO_PRIORITY]);
  return 0;
}

int
sk_opts_apply(int fd, const struct sk_opts *o, uint32_t mask, crest_error_t *err)
{
  struct sk_opts now;
  if (sk_opts_get(fd, &now, err) < 0)
    return -1;
  for (int i = 0; i < SKO_N; i++)
    if ((mask & SKO_BIT(i)) && o->have[i] && now.have[i] && o->v[i] != now.v[i]
        && sko_set(fd, i, o->v[i]) < 0)
      return crest_error_errno(err, "setsockopt %s %" PRId64, sko[i].name, o->v[i]);
  if (sk_opts_get(fd, &now, err) < 0)
    return -1;
  for (int i = 0; i < SKO_N; i++)
    if ((mask & SKO_BIT(i)) && o->have[i] && (!now.have[i] || o->v[i] != now.v[i]))
      return crest_error_make(err, EINVAL, "%s: set to %" PRId64 ", the kernel keeps %" PRId64,
                              sko[i].name, o->v[i], now.v[i]);
  return 0;
}

void
sk_opts_put(yajl_gen g, const struct sk_opts *o)
{
  jput_key(g, "sockopts");
  yajl_gen_map_open(g);
  for (int i = 0; i < SKO_N; i++)
    if (o->have[i])
      jput_int(g, sko[i].name, o->v[i]);
  yajl_gen_map_close(g);
}

int
sk_opts_parse(yajl_val v, struct sk_opts *o, crest_error_t *err)
{
  const char *path[] = { "sockopts", NULL };
  yajl_val m = yajl_tree_get(v, path, yajl_t_object);
  memset(o, 0, sizeof *o);
  if (!m)
    return crest_error_make(err, EINVAL, "key \"sockopts\": missing or not an object");
  for (size_t k = 0; k < m->u.object.len; k++)
    {
      int i = 0;
      while (i < SKO_N && strcmp(sko[i].name, m->u.object.keys[k]) != 0)
        i++;
      if (i == SKO_N)
        return crest_error_make(err, EINVAL, "sockopts: unknown option \"%s\"",
                                m->u.object.keys[k]);
      if (jget_i64(m, sko[i].name, &o->v[i], err) < 0)
        return -1;
      o->have[i] = true;
    }
  return 0;
}

/* --- the descriptor --- */

int
sk_getfd(pid_t pid, int fd, crest_error_t *err)
{
  return getfd(pid, fd, err);
}

uint32_t
sk_link_ino(const char *link)
{
  unsigned long ino;
  char end;
  if (sscanf(link, "socket:[%lu%c", &ino, &end) != 2 || end != ']')
    return 0;
  return (uint32_t)ino;
}

bool
sk_other_netns(pid_t pid)
{
  struct stat a, b;
  cleanup_free char *p = xasprintf("/proc/%d/ns/net", pid);
  return stat(p, &a) == 0 && stat("/proc/self/ns/net", &b) == 0 && a.st_ino != b.st_ino;
}
