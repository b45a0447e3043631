/* crest: TCP and UDP sockets, IPv4 and IPv6 (docs/engine.md, "Inet
 * sockets"): the family and protocol, the local and peer addresses, the
 * state (unbound, bound, listening with its backlog, UDP connected), the
 * options a program can see, and a UDP socket's queued datagrams with
 * their source addresses, in order. An established TCP connection is
 * refused unless --tcp-close (restored closed).
 *
 * Everything is read through crest's own copy of the socket (pidfd_getfd),
 * which works in any network namespace: getsockname, getpeername,
 * getsockopt and, for the datagrams, MSG_PEEK with SO_PEEK_OFF moving the
 * peek offset from one datagram to the next (set back afterwards). The
 * restore creates each socket in the restoring process, which is in the
 * tree's network namespace (the container's restorer, or crest in process
 * mode), and sends the datagrams again from their source address. */
#include <config.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/inet_diag.h>
#include <linux/sock_diag.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "dump-int.h"
#include "engine-int.h"
#include "files.h"
#include "image.h"
#include "kernel-abi.h"
#include "restore-int.h"
#include "sk-mcast.h"
#include "sk-tcp.h"
#include "sockets.h"
#include "log.h"
#include "util.h"

#ifndef SO_MEMINFO
#define SO_MEMINFO 55
#endif
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

#define SK_QUEUE_MAX (4u << 20) /* bytes of queued datagrams one socket may hold */
#define SK_DGRAM_MAX 65536u
#define SK_NQ_MAX 65536 /* datagrams one socket may hold */

enum sk_state
{
  SK_UNBOUND,
  SK_BOUND,
  SK_LISTEN,
  SK_CONNECTED,   /* UDP */
  SK_CLOSED,      /* TCP that was connected: --tcp-close */
  SK_ESTABLISHED, /* TCP: --tcp-established (sk-tcp.c) */
};
static const char *const state_names[]
    = { "unbound", "bound", "listen", "connected", "closed", "established" };

/* The options of the IP, IPv6, TCP and UDP levels (and the few of
   SOL_SOCKET that sockets.c does not have, which only inet sockets use):
   an int read with getsockopt, set again only where a new socket differs,
   then read back and compared. sockets.c has the SOL_SOCKET ones. */
enum
{
  F4 = 1,
  F6 = 2,
  PT = 4, /* TCP */
  PU = 8, /* UDP */
  ALL = F4 | F6 | PT | PU,
};
enum opt_kind
{
  OK_INT,
  OK_DEFAULT, /* must be what a new socket has: refused at checkpoint otherwise */
};
struct sk_opt
{
  int level, name;
  const char *key;
  unsigned where;
  enum opt_kind kind;
};
#define O(l, n, w)                                                                                 \
  {                                                                                                \
    l, n, #n, w, OK_INT                                                                            \
  }
/* An option whose setting needs a privilege crest does not hold, or
   state it cannot make again: refused when it is not a new socket's. */
#define D(l, n, w)                                                                                 \
  {                                                                                                \
    l, n, #n, w, OK_DEFAULT                                                                        \
  }
static const struct sk_opt sk_opts[] = {
  O(SOL_SOCKET, SO_TIMESTAMPNS, ALL),
  O(SOL_SOCKET, SO_TIMESTAMPING, ALL),
  O(SOL_SOCKET, SO_RXQ_OVFL, ALL),
  O(SOL_SOCKET, SO_SELECT_ERR_QUEUE, ALL),
  O(SOL_SOCKET, SO_ZEROCOPY, ALL),
  O(SOL_SOCKET, SO_INCOMING_CPU, ALL),
  O(SOL_SOCKET, SO_WIFI_STATUS, ALL),
  O(SOL_SOCKET, SO_MAX_PACING_RATE, ALL),
  O(SOL_SOCKET, SO_PREFER_BUSY_POLL, ALL),
  O(SOL_SOCKET, SO_TXREHASH, ALL),
  O(SOL_SOCKET, SO_RCVMARK, ALL),
  /* raised only with CAP_NET_ADMIN; memory reserved against the cgroup */
  D(SOL_SOCKET, SO_BUSY_POLL, ALL),
  D(SOL_SOCKET, SO_BUSY_POLL_BUDGET, ALL),
  D(SOL_SOCKET, SO_RESERVE_MEM, ALL),
  { SOL_IP, IP_TRANSPARENT, "IP_TRANSPARENT", ALL, OK_DEFAULT },
  O(SOL_IP, IP_TOS, ALL),
  O(SOL_IP, IP_TTL, ALL),
  /* What a dual-stack IPv6 socket receives over IPv4 comes with these
     too (the kernel answers SOL_IP on an IPv6 socket). */
  O(SOL_IP, IP_RECVERR, ALL),
  O(SOL_IP, IP_PKTINFO, F4 | F6 | PU),
  O(SOL_IP, IP_RECVTOS, F4 | F6 | PU),
  O(SOL_IP, IP_RECVTTL, F4 | F6 | PU),
  O(SOL_IP, IP_RECVOPTS, F4 | F6 | PU),
  O(SOL_IP, IP_RETOPTS, F4 | F6 | PU),
  O(SOL_IP, IP_RECVORIGDSTADDR, F4 | F6 | PU),
  O(SOL_IP, IP_MTU_DISCOVER, F4 | PT | PU),
  O(SOL_IP, IP_FREEBIND, F4 | PT | PU),
  O(SOL_IP, IP_BIND_ADDRESS_NO_PORT, F4 | PT | PU),
  O(SOL_IP, IP_MULTICAST_TTL, F4 | PU),
  O(SOL_IP, IP_MULTICAST_LOOP, F4 | PU),
  O(SOL_IP, IP_MULTICAST_ALL, F4 | PU),
  /* the address it was given (by an interface index alone: not shown) */
  O(SOL_IP, IP_MULTICAST_IF, F4 | PU),
  O(SOL_IP, IP_UNICAST_IF, F4 | PT | PU),
  O(SOL_IP, IP_RECVFRAGSIZE, F4 | F6 | PU),
  O(SOL_IP, IP_CHECKSUM, F4 | F6 | PU),
  O(SOL_IP, IP_PASSSEC, F4 | F6 | PU),
  O(SOL_IP, IP_MINTTL, F4 | PT),
  O(SOL_IP, IP_RECVERR_RFC4884, F4 | PT | PU),
  O(SOL_IP, IP_LOCAL_PORT_RANGE, F4 | PT | PU),
  O(SOL_IPV6, IPV6_V6ONLY, F6 | PT | PU),
  O(SOL_IPV6, IPV6_TCLASS, F6 | PT | PU),
  O(SOL_IPV6, IPV6_UNICAST_HOPS, F6 | PT | PU),
  O(SOL_IPV6, IPV6_MULTICAST_HOPS, F6 | PU),
  O(SOL_IPV6, IPV6_MULTICAST_LOOP, F6 | PU),
  O(SOL_IPV6, IPV6_RECVPKTINFO, F6 | PU),
  O(SOL_IPV6, IPV6_RECVHOPLIMIT, F6 | PU),
  O(SOL_IPV6, IPV6_RECVTCLASS, F6 | PU),
  O(SOL_IPV6, IPV6_RECVERR, F6 | PT | PU),
  O(SOL_IPV6, IPV6_MTU_DISCOVER, F6 | PT | PU),
  O(SOL_IPV6, IPV6_DONTFRAG, F6 | PU),
  O(SOL_IPV6, IPV6_AUTOFLOWLABEL, F6 | PT | PU),
  O(SOL_IPV6, IPV6_FREEBIND, F6 | PT | PU),
  O(SOL_IPV6, IPV6_UNICAST_IF, F6 | PT | PU),
  O(SOL_IPV6, IPV6_RECVFRAGSIZE, F6 | PU),
  O(SOL_IPV6, IPV6_RECVORIGDSTADDR, F6 | PU),
  O(SOL_IPV6, IPV6_RECVRTHDR, F6 | PU),
  O(SOL_IPV6, IPV6_RECVHOPOPTS, F6 | PU),
  O(SOL_IPV6, IPV6_RECVDSTOPTS, F6 | PU),
  O(SOL_IPV6, IPV6_RECVPATHMTU, F6 | PU),
  O(SOL_IPV6, IPV6_FLOWINFO, F6 | PU),
  O(SOL_IPV6, IPV6_FLOWINFO_SEND, F6 | PT | PU),
  O(SOL_IPV6, IPV6_MULTICAST_ALL, F6 | PU),
  O(SOL_IPV6, IPV6_MINHOPCOUNT, F6 | PT),
  O(SOL_IPV6, IPV6_ADDR_PREFERENCES, F6 | PT | PU),
  O(SOL_IPV6, IPV6_RECVERR_RFC4884, F6 | PT | PU),
  D(SOL_IPV6, IPV6_TRANSPARENT, F6 | PT | PU),
  O(SOL_TCP, TCP_NODELAY, F4 | F6 | PT),
  O(SOL_TCP, TCP_CORK, F4 | F6 | PT),
  O(SOL_TCP, TCP_MAXSEG, F4 | F6 | PT),
  O(SOL_TCP, TCP_KEEPIDLE, F4 | F6 | PT),
  O(SOL_TCP, TCP_KEEPINTVL, F4 | F6 | PT),
  O(SOL_TCP, TCP_KEEPCNT, F4 | F6 | PT),
  O(SOL_TCP, TCP_SYNCNT, F4 | F6 | PT),
  O(SOL_TCP, TCP_LINGER2, F4 | F6 | PT),
  O(SOL_TCP, TCP_DEFER_ACCEPT, F4 | F6 | PT),
  O(SOL_TCP, TCP_WINDOW_CLAMP, F4 | F6 | PT),
  O(SOL_TCP, TCP_USER_TIMEOUT, F4 | F6 | PT),
  O(SOL_TCP, TCP_NOTSENT_LOWAT, F4 | F6 | PT),
  O(SOL_TCP, TCP_FASTOPEN, F4 | F6 | PT),
  O(SOL_TCP, TCP_THIN_LINEAR_TIMEOUTS, F4 | F6 | PT),
  O(SOL_TCP, TCP_SAVE_SYN, F4 | F6 | PT),
  O(SOL_TCP, TCP_INQ, F4 | F6 | PT),
  O(SOL_TCP, TCP_FASTOPEN_CONNECT, F4 | F6 | PT),
  O(SOL_TCP, TCP_FASTOPEN_NO_COOKIE, F4 | F6 | PT),
  D(SOL_TCP, TCP_TX_DELAY, F4 | F6 | PT),
  O(SOL_UDP, UDP_CORK, F4 | F6 | PU),
  O(SOL_UDP, UDP_SEGMENT, F4 | F6 | PU),
  O(SOL_UDP, UDP_GRO, F4 | F6 | PU),
  O(SOL_UDP, UDP_NO_CHECK6_TX, F6 | PU),
  O(SOL_UDP, UDP_NO_CHECK6_RX, F6 | PU),
  D(SOL_UDP, UDP_ENCAP, F4 | F6 | PU),
};
#undef O
#define NOPTS ARRAY_SIZE(sk_opts)

struct dgram
{
  struct sockaddr_storage from;
  uint8_t *data;
  size_t len;
  /* Its destination address (port 0), where the socket reads it
     (IP_PKTINFO, IPV6_RECVPKTINFO): format 22. */
  bool has_to;
  struct sockaddr_storage to;
};

struct inet_sk
{
  int family, proto;
  enum sk_state state;
  struct sockaddr_storage local, peer;
  int backlog;
  char cong[16];       /* TCP_CONGESTION */
  struct sk_opts so;   /* SOL_SOCKET (sockets.c) */
  struct tcp_conn tcp; /* SK_ESTABLISHED */
  bool have[NOPTS];
  long long val[NOPTS];
  struct dgram *q;
  size_t nq;
  struct sk_mcast *mcast; /* UDP: the multicast groups it joined */
  size_t nmcast;
  char mcast_if6[IFNAMSIZ]; /* UDP IPv6: IPV6_MULTICAST_IF, by name */
  char bind_dev[IFNAMSIZ];  /* SO_BINDTODEVICE */
  int shut;                 /* UDP: shutdown(2) so far, 1 reading, 2 writing */
};

static unsigned
sk_where(const struct inet_sk *s)
{
  return (s->family == AF_INET ? F4 : F6) | (s->proto == IPPROTO_TCP ? PT : PU);
}

/* Option I of socket FD. */
static int
opt_get(int fd, size_t i, long long *v)
{
  int x = 0;
  socklen_t len = sizeof x;
  if (getsockopt(fd, sk_opts[i].level, sk_opts[i].name, &x, &len) < 0)
    return -1;
  *v = x;
  return 0;
}

static int
opt_set(int fd, size_t i, long long v)
{
  int x = (int)v;
  return setsockopt(fd, sk_opts[i].level, sk_opts[i].name, &x, sizeof x);
}

/* --- addresses --- */

static int
addr_port(const struct sockaddr_storage *a)
{
  return ntohs(a->ss_family == AF_INET ? ((const struct sockaddr_in *)a)->sin_port
                                       : ((const struct sockaddr_in6 *)a)->sin6_port);
}

static bool
addr_any(const struct sockaddr_storage *a)
{
  if (a->ss_family == AF_INET)
    return ((const struct sockaddr_in *)a)->sin_addr.s_addr == htonl(INADDR_ANY);
  return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)a)->sin6_addr);
}

static socklen_t
addr_len(int family)
{
  return family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
}

static bool
addr_eq(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
  return a->ss_family == b->ss_family && memcmp(a, b, addr_len(a->ss_family)) == 0;
}

static void
addr_put(yajl_gen g, const char *key, const struct sockaddr_storage *a)
{
  char buf[INET6_ADDRSTRLEN + 16], ip[INET6_ADDRSTRLEN];
  if (a->ss_family == AF_INET)
    inet_ntop(AF_INET, &((const struct sockaddr_in *)a)->sin_addr, ip, sizeof ip);
  else
    inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)a)->sin6_addr, ip, sizeof ip);
  snprintf(buf, sizeof buf, a->ss_family == AF_INET ? "%s:%d" : "[%s]:%d", ip, addr_port(a));
  jput_str(g, key, buf);
  if (a->ss_family == AF_INET6 && ((const struct sockaddr_in6 *)a)->sin6_scope_id)
    {
      cleanup_free char *k = xasprintf("%s_scope", key);
      jput_int(g, k, ((const struct sockaddr_in6 *)a)->sin6_scope_id);
    }
}

/* "a.b.c.d:port" or "[v6]:port" of FAMILY. */
static int
addr_parse(yajl_val v, const char *key, int family, struct sockaddr_storage *a, crest_error_t *err)
{
  const char *s, *colon;
  char ip[INET6_ADDRSTRLEN + 1];
  char *end;
  long port;
  size_t n;
  memset(a, 0, sizeof *a);
  if (jget_str(v, key, &s, err) < 0)
    return -1;
  colon = strrchr(s, ':');
  if (!colon)
    goto bad;
  port = strtol(colon + 1, &end, 10);
  if (*end || colon[1] == 0 || port < 0 || port > 65535)
    goto bad;
  if (family == AF_INET6)
    {
      if (s[0] != '[' || colon < s + 2 || colon[-1] != ']')
        goto bad;
      s++, colon--;
    }
  n = (size_t)(colon - s);
  if (n >= sizeof ip)
    goto bad;
  memcpy(ip, s, n);
  ip[n] = 0;
  a->ss_family = family;
  if (family == AF_INET)
    {
      struct sockaddr_in *in = (struct sockaddr_in *)a;
      in->sin_port = htons(port);
      if (inet_pton(AF_INET, ip, &in->sin_addr) != 1)
        goto bad;
    }
  else
    {
      struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)a;
      cleanup_free char *k = xasprintf("%s_scope", key);
      int64_t scope = 0;
      crest_error_t e2 = NULL;
      in6->sin6_port = htons(port);
      if (inet_pton(AF_INET6, ip, &in6->sin6_addr) != 1)
        goto bad;
      if (jget_i64(v, k, &scope, &e2) == 0 && (scope < 0 || scope > UINT32_MAX))
        {
          crest_error_release(&e2);
          goto bad;
        }
      crest_error_release(&e2);
      in6->sin6_scope_id = (uint32_t)scope;
    }
  return 0;
bad:
  return crest_error_make(err, EINVAL, "key \"%s\": not an address of its family", key);
}

/* --- checkpoint --- */

/* The destination a datagram peeked with M was sent to, where the socket
   reads it (IP_PKTINFO, IPV6_RECVPKTINFO), into G (family FAMILY, port
   0). A restore sends it again to that address from the same host: the
   same address and interface (loopback) only for one that came in on
   loopback; one from another interface, or to a multicast group, is a
   passing state for a server that drains its queue (EAGAIN: the
   checkpoint tries again). */
static int
dgram_dest(struct msghdr *m, int family, struct dgram *g, crest_error_t *err)
{
  for (struct cmsghdr *h = CMSG_FIRSTHDR(m); h; h = CMSG_NXTHDR(m, h))
    {
      int ifindex = 0;
      struct sockaddr_storage to;
      memset(&to, 0, sizeof to);
      if (h->cmsg_level == IPPROTO_IP && h->cmsg_type == IP_PKTINFO
          && h->cmsg_len >= CMSG_LEN(sizeof(struct in_pktinfo)))
        {
          struct in_pktinfo pi;
          memcpy(&pi, CMSG_DATA(h), sizeof pi);
          ifindex = pi.ipi_ifindex;
          if (family == AF_INET)
            {
              to.ss_family = AF_INET;
              ((struct sockaddr_in *)&to)->sin_addr = pi.ipi_addr;
            }
          else
            {
              struct in6_addr *a6 = &((struct sockaddr_in6 *)&to)->sin6_addr;
              to.ss_family = AF_INET6;
              a6->s6_addr[10] = a6->s6_addr[11] = 0xff; /* ::ffff:a.b.c.d */
              memcpy(&a6->s6_addr[12], &pi.ipi_addr, 4);
            }
        }
      else if (h->cmsg_level == IPPROTO_IPV6 && h->cmsg_type == IPV6_PKTINFO
               && h->cmsg_len >= CMSG_LEN(sizeof(struct in6_pktinfo)))
        {
          struct in6_pktinfo pi;
          memcpy(&pi, CMSG_DATA(h), sizeof pi);
          ifindex = (int)pi.ipi6_ifindex;
          to.ss_family = AF_INET6;
          ((struct sockaddr_in6 *)&to)->sin6_addr = pi.ipi6_addr;
        }
      else
        continue;
      if (ifindex != 1 /* loopback, in every namespace */)
        return crest_error_make(err, EAGAIN,
                                "a queued datagram came in on interface %d, and the socket reads "
                                "where (IP_PKTINFO): a restore would queue it again through "
                                "loopback",
                                ifindex);
      if ((to.ss_family == AF_INET
           && IN_MULTICAST(ntohl(((struct sockaddr_in *)&to)->sin_addr.s_addr)))
          || (to.ss_family == AF_INET6
              && IN6_IS_ADDR_MULTICAST(&((struct sockaddr_in6 *)&to)->sin6_addr)))
        return crest_error_make(err, EAGAIN,
                                "a multicast datagram is queued, and the socket reads its "
                                "destination (IP_PKTINFO), which a restore cannot give again");
      g->has_to = true;
      g->to = to;
    }
  return 0;
}

/* Every datagram waiting on D, a copy of a UDP socket, read without taking
   it: SO_PEEK_OFF makes each MSG_PEEK start after the one before. The
   program's own peek offset is put back. */
static int
peek_queue(int d, struct inet_sk *s, crest_error_t *err)
{
  int off = 0, was = -1;
  socklen_t len = sizeof was;
  size_t total = 0;
  cleanup_free uint8_t *buf = xmalloc(SK_DGRAM_MAX);
  int rc = 0;

  if (getsockopt(d, SOL_SOCKET, SO_PEEK_OFF, &was, &len) < 0
      || setsockopt(d, SOL_SOCKET, SO_PEEK_OFF, &off, sizeof off) < 0)
    return crest_error_errno(err, "read its queued datagrams (SO_PEEK_OFF)");
  for (;;)
    {
      struct dgram g;
      union
      {
        struct cmsghdr h;
        uint8_t b[256];
      } cm;
      struct iovec iov = { buf, SK_DGRAM_MAX };
      struct msghdr m = { .msg_name = &g.from,
                          .msg_namelen = sizeof g.from,
                          .msg_iov = &iov,
                          .msg_iovlen = 1,
                          .msg_control = &cm,
                          .msg_controllen = sizeof cm };
      ssize_t n;
      memset(&g, 0, sizeof g);
      n = recvmsg(d, &m, MSG_PEEK | MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        break;
      if (n < 0)
        {
          rc = crest_error_errno(err, "read its queued datagrams");
          break;
        }
      if ((m.msg_flags & MSG_TRUNC) || (total += (size_t)n) > SK_QUEUE_MAX || s->nq == SK_NQ_MAX)
        {
          rc = crest_error_make(
              err, EFBIG, "its queued datagrams exceed what crest saves (%u bytes)", SK_QUEUE_MAX);
          break;
        }
      if (g.from.ss_family != s->family)
        {
          rc = crest_error_make(err, ENOTSUP, "a queued datagram has a source of family %d",
                                g.from.ss_family);
          break;
        }
      if (dgram_dest(&m, s->family, &g, err) < 0)
        {
          rc = -1;
          break;
        }
      g.len = (size_t)n;
      g.data = xmalloc(g.len + 1);
      memcpy(g.data, buf, g.len);
      s->q = xrealloc(s->q, (s->nq + 1) * sizeof *s->q);
      s->q[s->nq++] = g;
      if (n == 0)
        {
          /* An empty datagram does not move the peek offset: the kernel
             would show it again. Only one can be told apart this way. */
          rc = crest_error_make(err, ENOTSUP, "an empty datagram is queued on it");
          break;
        }
    }
  if (setsockopt(d, SOL_SOCKET, SO_PEEK_OFF, &was, sizeof was) < 0 && rc == 0)
    rc = crest_error_errno(err, "put its peek offset back");
  return rc;
}

/* The UDP sockets of a dump's network namespace as udp_diag shows them,
   by family; NULL where the kernel has no udp_diag. */
static const struct sk_diag_set *
udp_diag(struct dctx *c, pid_t pid, int family)
{
  static struct sk_diag_cache udiag[2];
  struct inet_diag_req_v2 req
      = { .sdiag_family = (uint8_t)family, .sdiag_protocol = IPPROTO_UDP, .idiag_states = ~0u };
  struct sk_diag_req q = { &req, sizeof req, offsetof(struct inet_diag_msg, idiag_inode) };
  const struct sk_diag_set *set;
  crest_error_t e = NULL;
  if (sk_diag_cached(&udiag[family == AF_INET6], c, pid, &q, &set, &e) == 0)
    return set;
  crest_debug("checkpoint: no udp_diag (%s): a UDP socket's shutdown for reading is seen by "
              "poll, for writing not at all",
              e->msg);
  crest_error_release(&e);
  return NULL;
}

/* Is M's peer on the loopback network of the container's own namespace
   (a client inside the container: it ends with the namespace too, and no
   one outside finds the connection reset)? With nothing but its FIN
   unacknowledged (a delayed ACK), such an orphan holds nothing the peer
   still needs: left out. */
static bool
diag_loopback(const struct inet_diag_msg *m)
{
  const uint8_t *a = (const uint8_t *)m->id.idiag_dst;
  static const uint8_t lo6[16] = { [15] = 1 };
  static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
  if (m->idiag_family == AF_INET)
    return a[0] == 127;
  return memcmp(a, lo6, 16) == 0 || (memcmp(a, mapped, 12) == 0 && a[12] == 127);
}

static int
tcp_orphans_once(struct dctx *c, crest_error_t *err);

/* Connections the container closed whose FIN its peer has not taken yet
   (FIN_WAIT1, CLOSING, LAST_ACK; orphans of no descriptor): the peer's
   ACK may be a delayed one (up to 200 ms), so they are looked at again
   for a moment, while the tree is held and makes no new ones, before the
   try is given up (helper finding, December 2026: php-fpm behind nginx
   under load, refused 5 tries in 5 as each pause between tries made new
   ones). */
int
tcp_orphans_check(struct dctx *c, crest_error_t *err)
{
  int rc = 0;
  for (int k = 0; k < 8; k++)
    {
      crest_error_release(err);
      if ((rc = tcp_orphans_once(c, err)) == 0 || poll(NULL, 0, 50) < 0)
        break;
    }
  return rc;
}

static int
tcp_orphans_once(struct dctx *c, crest_error_t *err)
{
  static const char *const name[]
      = { [TCP_FIN_WAIT1] = "FIN_WAIT1", [TCP_CLOSING] = "CLOSING", [TCP_LAST_ACK] = "LAST_ACK" };
  pid_t root = c->p[0].pid;
  if (!c->o->root_is_ns_init || !sk_other_netns(root))
    return 0;
  for (int k = 0; k < 2; k++)
    {
      struct inet_diag_req_v2 req = {
        .sdiag_family = (uint8_t)(k ? AF_INET6 : AF_INET),
        .sdiag_protocol = IPPROTO_TCP,
        .idiag_states = (1u << TCP_FIN_WAIT1) | (1u << TCP_CLOSING) | (1u << TCP_LAST_ACK),
      };
      struct sk_diag_req q = { &req, sizeof req, offsetof(struct inet_diag_msg, idiag_inode) };
      struct sk_diag_set set = { 0 };
      crest_error_t e = NULL;
      int rc = 0;
      if (sk_diag_query(root, &q, &set, &e) < 0)
        {
          /* No tcp_diag (a kernel without it): nothing to go by. */
          crest_debug("checkpoint: TCP connections closed by the tree not looked for: %s", e->msg);
          crest_error_release(&e);
          continue;
        }
      for (size_t i = 0; rc == 0 && i < set.n; i++)
        {
          const struct inet_diag_msg *m = (const void *)set.r[i].msg;
          if (set.r[i].len < sizeof *m || m->idiag_inode != 0 || m->idiag_state >= 12
              || !name[m->idiag_state] || (m->idiag_wqueue <= 1 && diag_loopback(m)))
            continue;
          rc = crest_error_make(err, EAGAIN,
                                "a TCP connection the container closed (port %u to %u) is still "
                                "in %s, %u bytes not yet taken by its peer: the checkpoint would "
                                "end it with the container's network namespace, and the peer "
                                "find it reset; try again once it is done",
                                ntohs(m->id.idiag_sport), ntohs(m->id.idiag_dport),
                                name[m->idiag_state], m->idiag_wqueue);
        }
      sk_diag_free(&set);
      if (rc < 0)
        return -1;
    }
  return 0;
}

/* Is copy D of a socket shut down for reading? */
static bool
shut_for_reading(int d)
{
  struct pollfd pf = { .fd = d, .events = POLLRDHUP };
  return poll(&pf, 1, 0) == 1 && (pf.revents & POLLRDHUP);
}

/* What shutdown(2) did to D, a copy of a UDP socket (also allowed on one
   that is not connected, which keeps the bits but says ENOTCONN):
   sock_diag's INET_DIAG_SHUTDOWN where udp_diag is; else POLLRDHUP tells
   the reading half, and the writing half is not visible (a known gap of
   such kernels: docs/engine.md). */
static void
udp_shut_dump(struct dctx *c, pid_t pid, int d, struct inet_sk *s)
{
  const struct sk_diag_set *set = udp_diag(c, pid, s->family);
  const struct sk_diag_rec *r;
  struct stat st;
  s->shut = shut_for_reading(d) ? 1 : 0;
  if (set && fstat(d, &st) == 0 && (r = sk_diag_find(set, (uint32_t)st.st_ino)))
    {
      size_t len = 0;
      const uint8_t *v = sk_diag_attr(r, sizeof(struct inet_diag_msg), INET_DIAG_SHUTDOWN, &len);
      if (v && len >= 1)
        s->shut = *v & 3;
    }
}

/* S's SO_REUSEADDR, which leaving TCP repair mode clears. */
static bool
reuse_of(const struct inet_sk *s)
{
  return s->so.have[SKO_REUSEADDR] && s->so.v[SKO_REUSEADDR];
}

/* A TCP socket that is connected, or was: refused, or closed
   (--tcp-close), or read through repair mode (--tcp-established). */
/* The name of TCP state STATE (the kernel's numbers, as tcp_info shows
   them), for messages. */
static const char *
tcp_state_name(unsigned state)
{
  static const char *const names[]
      = { "?",         "ESTABLISHED", "SYN_SENT",   "SYN_RECV", "FIN_WAIT1", "FIN_WAIT2",
          "TIME_WAIT", "CLOSE",       "CLOSE_WAIT", "LAST_ACK", "LISTEN",    "CLOSING" };
  return state < ARRAY_SIZE(names) ? names[state] : "?";
}

static int
tcp_connected(struct dctx *c, int d, struct inet_sk *s, unsigned state, crest_error_t *err)
{
  if (c->o->tcp_mode == CREST_TCP_REFUSE && state == TCP_ESTABLISHED)
    return crest_error_make(err, ENOTSUP,
                            "an established TCP connection (state %u): give --tcp-close to "
                            "restore it closed, or --tcp-established",
                            state);
  if (c->o->tcp_mode == CREST_TCP_REFUSE)
    return crest_error_make(err, ENOTSUP,
                            "a TCP connection in state %s (%u): give --tcp-close to restore it "
                            "closed (--tcp-established restores ESTABLISHED ones only)",
                            tcp_state_name(state), state);
  /* A connection being made or ending moves on by itself (a worker
     closes a CLOSE_WAIT one in a moment): a passing state, tried again. */
  if (c->o->tcp_mode == CREST_TCP_ESTABLISHED && state != TCP_ESTABLISHED)
    return crest_error_make(err, EAGAIN,
                            "a TCP connection in state %s (%u): --tcp-established restores "
                            "ESTABLISHED ones only (--tcp-close restores it closed)",
                            tcp_state_name(state), state);
  /* What the connection negotiated or tuned is the kernel's, not the
     program's: repair mode sets the MSS again, a closed socket has none. */
  for (size_t i = 0; i < NOPTS; i++)
    if (sk_opts[i].level == SOL_TCP
        && (sk_opts[i].name == TCP_MAXSEG || sk_opts[i].name == TCP_WINDOW_CLAMP))
      s->have[i] = false;
  s->so.have[SKO_RCVBUF] = s->so.have[SKO_SNDBUF] = false;
  if (c->o->tcp_mode == CREST_TCP_CLOSE)
    {
      s->state = SK_CLOSED;
      return 0;
    }
  /* Shut for reading by the program (an ESTABLISHED socket has had no
     FIN): repair mode does not carry that over. */
  if (shut_for_reading(d))
    return crest_error_make(err, ENOTSUP,
                            "--tcp-established: the connection is shut down for reading "
                            "(shutdown SHUT_RD), which crest does not restore");
  /* Urgent data received and not read yet (the peer's MSG_OOB, without
     SO_OOBINLINE): repair mode's peek leaves its byte out of the queue,
     and the urgent mark is the kernel's alone. */
  {
    char urg;
    if (recv(d, &urg, 1, MSG_OOB | MSG_PEEK | MSG_DONTWAIT) == 1)
      return crest_error_make(err, ENOTSUP,
                              "--tcp-established: urgent data received and not read yet "
                              "(MSG_OOB), which crest does not restore");
  }
  /* A container's restorer holds CAP_CHECKPOINT_RESTORE, not
     CAP_NET_ADMIN: on a stock kernel crest outside, the owner of its user
     namespace, puts its sockets in repair mode (tcp_repair_helper). */
  if (tcp_conn_dump(d, &s->tcp, err) < 0)
    return crest_error_wrap(err, "--tcp-established");
  /* In repair mode until the end of the checkpoint: then out of it if
     the tree runs on, or closed in it once the tree is gone, which sends
     the peer nothing (taken out before the kill, the dying task's close
     sent a FIN and the peer outside the tree read the end of the
     connection; with both ends in the tree, a TIME_WAIT kept the port). */
  {
    int h = fcntl(d, F_DUPFD_CLOEXEC, 3);
    if (h < 0)
      {
        tcp_conn_unrepair(d, reuse_of(s));
        return crest_error_errno(err, "--tcp-established: dup");
      }
    c->tcp_held = xrealloc(c->tcp_held, (c->ntcp_held + 1) * sizeof *c->tcp_held);
    c->tcp_held[c->ntcp_held].fd = h;
    c->tcp_held[c->ntcp_held++].reuse = reuse_of(s);
    dump_guard_hold(h, reuse_of(s));
  }
  s->state = SK_ESTABLISHED;
  return 0;
}

/* The state of a TCP socket, and what makes it refused. */
static int
tcp_state(struct dctx *c, int d, struct inet_sk *s, crest_error_t *err)
{
  struct tcp_info ti;
  socklen_t len = sizeof ti;
  char cong[sizeof s->cong];
  memset(&ti, 0, sizeof ti);
  if (getsockopt(d, SOL_TCP, TCP_INFO, &ti, &len) < 0)
    return crest_error_errno(err, "getsockopt TCP_INFO");
  len = sizeof cong;
  memset(cong, 0, sizeof cong);
  if (getsockopt(d, SOL_TCP, TCP_CONGESTION, cong, &len) == 0)
    {
      /* Kept only when the program chose it: the default is the
         restoring system's. */
      char def[sizeof cong];
      socklen_t dl = sizeof def;
      cleanup_close int n = socket(s->family, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
      memset(def, 0, sizeof def);
      if (n < 0 || getsockopt(n, SOL_TCP, TCP_CONGESTION, def, &dl) < 0
          || strncmp(def, cong, sizeof cong) != 0)
        memcpy(s->cong, cong, sizeof cong - 1);
    }
  switch (ti.tcpi_state)
    {
    case TCP_LISTEN:
      /* Connections the program has not accepted yet cannot be put back
         in a listener's queue: a passing state (the program accepts them
         soon; tried again), or left out with --skip-in-flight or
         --tcp-close, their clients then reset when the tree ends (one
         left running keeps them). A frozen tree's listener fills while
         clients outside connect: under load most checkpoints met some
         (helper finding, December 2026: 20 of 20 of MariaDB's). */
      if (ti.tcpi_unacked && c->o->tcp_mode != CREST_TCP_CLOSE && !c->o->skip_in_flight)
        return crest_error_make(err, EAGAIN,
                                "a listening TCP socket with %u connection(s) waiting to be "
                                "accepted, which crest cannot put back in its queue: give "
                                "--skip-in-flight to leave them out (their clients are reset "
                                "when the tree ends), or --tcp-close",
                                ti.tcpi_unacked);
      /* Said once the checkpoint is complete (dump_tree_here), where
         their clients will see it: the tree ends. */
      if (ti.tcpi_unacked && !c->o->leave_running)
        c->inflight_left += ti.tcpi_unacked;
      else if (ti.tcpi_unacked)
        crest_debug("checkpoint: a listening TCP socket: %u connection(s) waiting to be "
                    "accepted are left out of the image, and stay with the tree left running",
                    ti.tcpi_unacked);
      s->state = SK_LISTEN;
      s->backlog = (int)ti.tcpi_sacked;
      return 0;
    case TCP_CLOSE:
      /* A connection that has ended (reset, or closed both ways), its
         descriptor still open: shut both ways, it reads the end (and
         ECONNRESET). No socket can be made so: with --tcp-close it comes
         back closed as any connection; else a passing state (the program
         closes it in a moment: a server between a client's reset and its
         close), refused when it stays. Until December 2026 taken for a
         socket never connected: it read ENOTCONN after restore, and the
         MSS it kept (32768 on loopback) failed every restore (helper
         finding: Node's cluster under load). */
      if (shut_for_reading(d))
        {
          if (c->o->tcp_mode != CREST_TCP_CLOSE)
            return crest_error_make(err, EAGAIN,
                                    "a TCP connection that has ended (state CLOSE, shut both "
                                    "ways), its descriptor still open, which crest cannot make "
                                    "again: give --tcp-close to restore it closed as another");
          return tcp_connected(c, d, s, ti.tcpi_state, err);
        }
      s->state = addr_port(&s->local) || !addr_any(&s->local) ? SK_BOUND : SK_UNBOUND;
      return 0;
    default:
      return tcp_connected(c, d, s, ti.tcpi_state, err);
    }
}

/* The SOL_SOCKET options an unprivileged restore could not set again. */
static int
so_check(const struct inet_sk *s, bool owns_net, crest_error_t *err)
{
  struct sk_opts def;
  sk_opts_default(s->family, s->proto == IPPROTO_TCP ? SOCK_STREAM : SOCK_DGRAM, s->proto, &def);
  return sk_opts_check(&s->so, &def, owns_net, err);
}

/* A UDP socket with OUTQ bytes sent that the kernel still holds. Bytes in
   flight (an unresolved neighbour keeps a datagram about three seconds, a
   device's queue less) go out or are dropped whatever becomes of the
   socket's owner, as the network may drop any datagram: the checkpoint
   waits for the kernel to let them go. Corked bytes (UDP_CORK, or a send
   with MSG_MORE not followed yet) wait for the program's next send and
   would be lost: refused. The kernel shows no difference between the two
   but UDP_CORK, and no event when the bytes leave: a bounded wait, taken
   only by a socket with bytes held. */
#define DGRAM_WAIT_MS 5000
static int
dgram_held(int d, int outq, crest_error_t *err)
{
  int cork = 0, ms = 0;
  socklen_t cl = sizeof cork;
  if (getsockopt(d, SOL_UDP, UDP_CORK, &cork, &cl) == 0 && cork)
    return crest_error_make(err, ENOTSUP,
                            "%d bytes of a corked datagram (UDP_CORK) wait to be sent", outq);
  for (; outq > 0 && ms < DGRAM_WAIT_MS; ms += 10)
    if (poll(NULL, 0, 10) < 0 || ioctl(d, SIOCOUTQ, &outq) < 0)
      return crest_error_errno(err, "SIOCOUTQ");
  if (outq > 0)
    return crest_error_make(err, ENOTSUP,
                            "%d bytes of a datagram wait to be sent after %d s: corked (a send "
                            "with MSG_MORE) or held by the network (a neighbour that does not "
                            "answer, a device's queue)",
                            outq, DGRAM_WAIT_MS / 1000);
  crest_debug("checkpoint: waited %d ms for a UDP socket's datagrams in flight to leave", ms);
  return 0;
}

/* What a copy D of a UDP or TCP socket shows. */
static int
inet_dump(struct dctx *c, pid_t pid, int d, struct inet_sk *s, bool owns_net, crest_error_t *err)
{
  socklen_t len = sizeof s->local;
  int outq = 0;
  if (getsockname(d, (struct sockaddr *)&s->local, &len) < 0)
    return crest_error_errno(err, "getsockname");
  len = sizeof s->peer;
  if (getpeername(d, (struct sockaddr *)&s->peer, &len) < 0)
    s->peer.ss_family = AF_UNSPEC;
  if (sk_opts_get(d, &s->so, err) < 0)
    return -1;
  for (size_t i = 0; i < NOPTS; i++)
    if ((sk_opts[i].where & sk_where(s)) == sk_where(s) && opt_get(d, i, &s->val[i]) == 0)
      {
        if (sk_opts[i].kind == OK_DEFAULT && s->val[i])
          return crest_error_make(err, ENOTSUP, "%s is set (to %lld): crest does not restore it",
                                  sk_opts[i].key, s->val[i]);
        s->have[i] = sk_opts[i].kind != OK_DEFAULT;
      }
  {
    char dev[IFNAMSIZ + 1] = "";
    socklen_t dl = sizeof dev - 1;
    /* by name: made again in the same namespace, where it names the
       same interface (a new socket may be bound to one unprivileged) */
    if (getsockopt(d, SOL_SOCKET, SO_BINDTODEVICE, dev, &dl) == 0 && dl && dev[0])
      snprintf(s->bind_dev, sizeof s->bind_dev, "%s", dev);
  }
  if (s->proto == IPPROTO_TCP)
    {
      /* an upper layer protocol on the connection (kernel TLS) */
      char ulp[32] = "";
      socklen_t ul = sizeof ulp - 1;
      if (getsockopt(d, SOL_TCP, TCP_ULP, ulp, &ul) == 0 && ulp[0])
        return crest_error_make(err, ENOTSUP,
                                "an upper layer protocol \"%.31s\" (TCP_ULP): crest does not "
                                "restore it",
                                ulp);
    }
  if (s->proto == IPPROTO_TCP)
    /* After the state: a connection's buffers are the kernel's to tune,
       and are not kept (tcp_connected). */
    return tcp_state(c, d, s, err) < 0 ? -1 : so_check(s, owns_net, err);
  if (ioctl(d, SIOCOUTQ, &outq) == 0 && outq > 0 && dgram_held(d, outq, err) < 0)
    return -1;
  s->state = s->peer.ss_family != AF_UNSPEC                 ? SK_CONNECTED
             : addr_port(&s->local) || !addr_any(&s->local) ? SK_BOUND
                                                            : SK_UNBOUND;
  if (sk_mcast_dump(pid, d, s->family, &s->mcast, &s->nmcast, err) < 0
      || (s->family == AF_INET6 && sk_mcast_if6_dump(pid, d, s->mcast_if6, err) < 0))
    return -1;
  udp_shut_dump(c, pid, d, s);
  return so_check(s, owns_net, err) < 0 ? -1 : peek_queue(d, s, err);
}

static void
inet_free(struct inet_sk *s)
{
  for (size_t i = 0; s && i < s->nq; i++)
    free(s->q[i].data);
  if (s)
    tcp_conn_free(&s->tcp);
  if (s)
    free(s->q), free(s->mcast);
}

static int
inet_probe(struct dctx *c, struct dproc *p, const struct fd_probe *pr, struct dfile *nf,
           crest_error_t *err)
{
  cleanup_close int d = -1;
  int family = 0, type = 0, proto = 0;
  socklen_t len = sizeof family;
  struct inet_sk *s;
  (void)p;
  if (!S_ISSOCK(pr->st->st_mode))
    return 0;
  if ((d = sk_getfd(pr->pid, pr->fd, err)) < 0)
    return crest_error_wrap(err, "task %d: fd %d (%s)", pr->pid, pr->fd, pr->link);
  if (getsockopt(d, SOL_SOCKET, SO_DOMAIN, &family, &len) < 0
      || (family != AF_INET && family != AF_INET6))
    return 0;
  len = sizeof type;
  if (getsockopt(d, SOL_SOCKET, SO_TYPE, &type, &len) < 0)
    return 0;
  len = sizeof proto;
  if (getsockopt(d, SOL_SOCKET, SO_PROTOCOL, &proto, &len) < 0
      || !((type == SOCK_STREAM && proto == IPPROTO_TCP)
           || (type == SOCK_DGRAM && proto == IPPROTO_UDP)))
    return crest_error_make(err, ENOTSUP,
                            "task %d: fd %d (%s): an %s socket of type %d, protocol %d: only TCP "
                            "and UDP are supported, cannot checkpoint it",
                            pr->pid, pr->fd, pr->link, family == AF_INET ? "IPv4" : "IPv6", type,
                            proto);
  s = nf->priv = xzalloc(sizeof *s);
  s->family = family;
  s->proto = proto;
  if (inet_dump(c, pr->pid, d, s, sk_other_netns(pr->pid), err) < 0)
    {
      inet_free(s);
      return crest_error_wrap(err, "task %d: fd %d (%s %s socket)", pr->pid, pr->fd,
                              proto == IPPROTO_TCP ? "TCP" : "UDP",
                              family == AF_INET ? "IPv4" : "IPv6");
    }
  return 1;
}

static void
inet_write(struct dctx *c, const struct dfile *f, yajl_gen g)
{
  const struct inet_sk *s = f->priv;
  jput_str(g, "family", s->family == AF_INET ? "inet" : "inet6");
  jput_str(g, "proto", s->proto == IPPROTO_TCP ? "tcp" : "udp");
  jput_str(g, "state", state_names[s->state]);
  if (s->state != SK_UNBOUND && s->state != SK_CLOSED)
    addr_put(g, "local", &s->local);
  if (s->state == SK_CONNECTED || s->state == SK_ESTABLISHED)
    addr_put(g, "peer", &s->peer);
  if (s->state == SK_ESTABLISHED)
    {
      tcp_conn_put(g, &s->tcp);
      if (c->w->format < CREST_IMAGE_FORMAT_TCP_BUFS)
        c->w->format = CREST_IMAGE_FORMAT_TCP_BUFS;
    }
  if (s->state == SK_LISTEN)
    jput_int(g, "backlog", s->backlog);
  if (s->cong[0])
    jput_str(g, "TCP_CONGESTION", s->cong);
  sk_opts_put(g, &s->so);
  jput_key(g, "opts");
  yajl_gen_map_open(g);
  for (size_t i = 0; i < NOPTS; i++)
    if (s->have[i])
      jput_int(g, sk_opts[i].key, s->val[i]);
  yajl_gen_map_close(g);
  sk_mcast_put(g, s->mcast, s->nmcast);
  if (s->mcast_if6[0])
    jput_str(g, "IPV6_MULTICAST_IF", s->mcast_if6);
  if (s->bind_dev[0])
    jput_str(g, "SO_BINDTODEVICE", s->bind_dev);
  if ((s->nmcast || s->mcast_if6[0] || s->bind_dev[0]) && c->w->format < CREST_IMAGE_FORMAT_MCAST)
    c->w->format = CREST_IMAGE_FORMAT_MCAST;
  if (s->shut)
    {
      jput_int(g, "shutdown", s->shut);
      if (c->w->format < CREST_IMAGE_FORMAT_UDP_SHUT)
        c->w->format = CREST_IMAGE_FORMAT_UDP_SHUT;
    }
  if (s->nq)
    {
      jput_key(g, "queue");
      yajl_gen_array_open(g);
      for (size_t i = 0; i < s->nq; i++)
        {
          yajl_gen_map_open(g);
          addr_put(g, "from", &s->q[i].from);
          jput_hex(g, "data", s->q[i].data, s->q[i].len);
          if (s->q[i].has_to)
            {
              addr_put(g, "to", &s->q[i].to);
              if (c->w->format < CREST_IMAGE_FORMAT_UDP_DEST)
                c->w->format = CREST_IMAGE_FORMAT_UDP_DEST;
            }
          yajl_gen_map_close(g);
        }
      yajl_gen_array_close(g);
    }
  (void)c;
}

/* --- restore --- */

static int
parse_opts(yajl_val v, struct inet_sk *s, crest_error_t *err)
{
  yajl_val o = NULL;
  for (size_t i = 0; YAJL_IS_OBJECT(v) && i < v->u.object.len; i++)
    if (strcmp(v->u.object.keys[i], "opts") == 0)
      o = v->u.object.values[i];
  if (!YAJL_IS_OBJECT(o))
    return crest_error_make(err, EINVAL, "no \"opts\" object");
  for (size_t k = 0; k < o->u.object.len; k++)
    {
      size_t i = 0;
      while (i < NOPTS && strcmp(sk_opts[i].key, o->u.object.keys[k]) != 0)
        i++;
      if (i == NOPTS || sk_opts[i].kind == OK_DEFAULT
          || (sk_opts[i].where & sk_where(s)) != sk_where(s)
          || !YAJL_IS_INTEGER(o->u.object.values[k]))
        return crest_error_make(err, EINVAL, "option %.40s is not one of its kind",
                                o->u.object.keys[k]);
      s->have[i] = true;
      s->val[i] = YAJL_GET_INTEGER(o->u.object.values[k]);
    }
  return 0;
}

static int
parse_queue(yajl_val v, struct inet_sk *s, crest_error_t *err)
{
  yajl_val *items;
  crest_error_t e2 = NULL;
  long n = jget_array(v, "queue", &items, &e2);
  size_t total = 0;
  crest_error_release(&e2);
  if (n <= 0)
    return 0;
  if (s->proto != IPPROTO_UDP || n > SK_NQ_MAX)
    return crest_error_make(err, EINVAL, "a queue on a socket that has none");
  s->q = xzalloc(n * sizeof *s->q);
  for (long i = 0; i < n; i++)
    {
      struct dgram *g = &s->q[i];
      if (addr_parse(items[i], "from", s->family, &g->from, err) < 0
          || jget_hex_alloc(items[i], "data", SK_DGRAM_MAX, &g->data, &g->len, err) < 0
          || (yajl_tree_get(items[i], (const char *[]){ "to", NULL }, yajl_t_any)
              && addr_parse(items[i], "to", s->family, &g->to, err) < 0))
        return crest_error_wrap(err, "datagram %ld", i);
      g->has_to = g->to.ss_family != 0;
      s->nq++;
      if (g->len == 0 || (total += g->len) > SK_QUEUE_MAX)
        return crest_error_make(err, EINVAL, "datagram %ld: bad length", i);
    }
  return 0;
}

static int
inet_parse(struct rctx *c, yajl_val v, struct rfile *f, crest_error_t *err)
{
  struct inet_sk *s = f->priv = xzalloc(sizeof *s);
  const char *fam, *proto, *state, *cong, *mif;
  crest_error_t e2 = NULL;
  int64_t backlog = 0, shut = 0;
  size_t k = 0;
  (void)c;
  if (jget_str(v, "family", &fam, err) < 0 || jget_str(v, "proto", &proto, err) < 0
      || jget_str(v, "state", &state, err) < 0)
    return -1;
  s->family = strcmp(fam, "inet") == 0 ? AF_INET : strcmp(fam, "inet6") == 0 ? AF_INET6 : 0;
  s->proto = strcmp(proto, "tcp") == 0 ? IPPROTO_TCP : strcmp(proto, "udp") == 0 ? IPPROTO_UDP : 0;
  while (k < ARRAY_SIZE(state_names) && strcmp(state, state_names[k]) != 0)
    k++;
  if (!s->family || !s->proto || k == ARRAY_SIZE(state_names)
      || (s->proto == IPPROTO_TCP && k == SK_CONNECTED)
      || (s->proto == IPPROTO_UDP && (k == SK_LISTEN || k == SK_CLOSED || k == SK_ESTABLISHED)))
    return crest_error_make(err, EINVAL, "socket %.16s %.16s %.16s is not one crest makes", fam,
                            proto, state);
  s->state = (enum sk_state)k;
  if ((s->state != SK_UNBOUND && s->state != SK_CLOSED
       && addr_parse(v, "local", s->family, &s->local, err) < 0)
      || ((s->state == SK_CONNECTED || s->state == SK_ESTABLISHED)
          && addr_parse(v, "peer", s->family, &s->peer, err) < 0)
      || (s->state == SK_ESTABLISHED && tcp_conn_parse(v, &s->tcp, err) < 0)
      || (s->state == SK_LISTEN && jget_i64(v, "backlog", &backlog, err) < 0))
    return -1;
  if (backlog < 0 || backlog > INT_MAX)
    return crest_error_make(err, EINVAL, "backlog %lld out of range", (long long)backlog);
  s->backlog = (int)backlog;
  if (jget_str(v, "TCP_CONGESTION", &cong, &e2) == 0)
    {
      if (strlen(cong) >= sizeof s->cong || s->proto != IPPROTO_TCP)
        return crest_error_make(err, EINVAL, "TCP_CONGESTION %.20s out of range", cong);
      strcpy(s->cong, cong);
    }
  crest_error_release(&e2);
  if (jget_str(v, "IPV6_MULTICAST_IF", &mif, &e2) == 0)
    {
      if (!mif[0] || strlen(mif) >= sizeof s->mcast_if6 || s->family != AF_INET6
          || s->proto != IPPROTO_UDP)
        return crest_error_make(err, EINVAL, "IPV6_MULTICAST_IF %.20s out of range", mif);
      strcpy(s->mcast_if6, mif);
    }
  crest_error_release(&e2);
  if (jget_str(v, "SO_BINDTODEVICE", &mif, &e2) == 0)
    {
      if (!mif[0] || strlen(mif) >= sizeof s->bind_dev)
        return crest_error_make(err, EINVAL, "SO_BINDTODEVICE %.20s out of range", mif);
      strcpy(s->bind_dev, mif);
    }
  crest_error_release(&e2);
  if (jget_i64(v, "shutdown", &shut, &e2) == 0)
    {
      if (shut < 1 || shut > 3 || s->proto != IPPROTO_UDP)
        return crest_error_make(err, EINVAL, "shutdown %lld out of range", (long long)shut);
      s->shut = (int)shut;
    }
  crest_error_release(&e2);
  return sk_opts_parse(v, &s->so, err) < 0 || parse_opts(v, s, err) < 0
                 || parse_queue(v, s, err) < 0
                 || sk_mcast_parse(v, s->family, &s->mcast, &s->nmcast, err) < 0
             ? -1
             : 0;
}

/* The options of S on FD, a new socket: each one that differs is set, and
   must then read as recorded. */
static int
apply_opts(int fd, const struct inet_sk *s, crest_error_t *err)
{
  char cong[sizeof s->cong];
  socklen_t len = sizeof cong;
  memset(cong, 0, sizeof cong);
  if (sk_opts_apply(fd, &s->so, SKO_ALL & ~SKO_BIT(SKO_PEEK_OFF), err) < 0)
    return -1;
  if (s->cong[0] && getsockopt(fd, SOL_TCP, TCP_CONGESTION, cong, &len) == 0
      && strncmp(cong, s->cong, sizeof cong - 1) != 0
      && setsockopt(fd, SOL_TCP, TCP_CONGESTION, s->cong, strlen(s->cong)) < 0)
    return crest_error_errno(err, "set TCP_CONGESTION to %s", s->cong);
  for (size_t i = 0; i < NOPTS; i++)
    {
      long long now;
      if (!s->have[i])
        continue;
      if (opt_get(fd, i, &now) < 0)
        return crest_error_errno(err, "read %s", sk_opts[i].key);
      if (now == s->val[i])
        continue;
      if (opt_set(fd, i, s->val[i]) < 0)
        return crest_error_errno(err, "set %s to %lld", sk_opts[i].key, s->val[i]);
      if (opt_get(fd, i, &now) < 0 || now != s->val[i])
        return crest_error_make(err, EIO, "%s set to %lld reads %lld", sk_opts[i].key, s->val[i],
                                now);
    }
  return 0;
}

static int
inet_make(const struct rfile *f, const struct inet_sk *s, crest_error_t *err)
{
  int type = (s->proto == IPPROTO_TCP ? SOCK_STREAM : SOCK_DGRAM) | SOCK_CLOEXEC
             | ((f->flags & O_NONBLOCK) ? SOCK_NONBLOCK : 0);
  int fd = socket(s->family, type, s->proto);
  if (fd < 0)
    return crest_error_errno(err, "socket");
  /* Options first: SO_REUSEADDR, IPV6_V6ONLY and the like change what
     bind accepts. */
  if (apply_opts(fd, s, err) < 0
      || (s->mcast_if6[0] && sk_mcast_if6_set(fd, s->mcast_if6, err) < 0))
    goto fail;
  /* before bind: the device decides which addresses and ports it takes */
  if (s->bind_dev[0]
      && setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, s->bind_dev, strlen(s->bind_dev) + 1) < 0)
    {
      crest_error_errno(err, "bind to device %s (SO_BINDTODEVICE)", s->bind_dev);
      goto fail;
    }
  if (s->state == SK_ESTABLISHED)
    {
      if (tcp_conn_restore(fd, (const struct sockaddr *)&s->local,
                           (const struct sockaddr *)&s->peer, addr_len(s->family), &s->tcp, err)
          < 0)
        goto fail;
      return fd;
    }
  if (s->state != SK_UNBOUND && s->state != SK_CLOSED
      && bind(fd, (const struct sockaddr *)&s->local, addr_len(s->family)) < 0)
    {
      crest_error_errno(err, "bind to port %d", addr_port(&s->local));
      goto fail;
    }
  if (s->state == SK_LISTEN && listen(fd, s->backlog) < 0)
    {
      crest_error_errno(err, "listen");
      goto fail;
    }
  if (s->state == SK_CONNECTED
      && connect(fd, (const struct sockaddr *)&s->peer, addr_len(s->family)) < 0)
    {
      crest_error_errno(err, "connect to port %d", addr_port(&s->peer));
      goto fail;
    }
  if (sk_mcast_join(fd, s->mcast, s->nmcast, err) < 0)
    goto fail;
  return fd;
fail:
  close(fd);
  return -1;
}

static int
inet_open(struct rctx *c, struct rfile *f, int flags, crest_error_t *err)
{
  (void)flags;
  if (file_place(c, f, inet_make(f, f->priv, err), false, err) < 0)
    return crest_error_wrap(err, "restore: file %d (%s)", f->id, f->path);
  return 0;
}

static long long
rmem_now(int fd)
{
  uint32_t mi[16];
  socklen_t len = sizeof mi;
  memset(mi, 0, sizeof mi);
  if (getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mi, &len) < 0)
    return -1;
  return mi[0]; /* SK_MEMINFO_RMEM_ALLOC */
}

/* The descriptor to send a datagram from FROM with: a restored UDP socket
   of the tree bound to it, else a new one bound to it (*TMP). */
/* A, an IPv4-mapped IPv6 address, as IPv4 in *V4 (its port kept). */
static bool
v4_mapped(const struct sockaddr_storage *a, struct sockaddr_storage *v4)
{
  const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)a;
  struct sockaddr_in *o = (struct sockaddr_in *)v4;
  if (a->ss_family != AF_INET6 || !IN6_IS_ADDR_V4MAPPED(&a6->sin6_addr))
    return false;
  memset(v4, 0, sizeof *v4);
  o->sin_family = AF_INET;
  o->sin_port = a6->sin6_port;
  memcpy(&o->sin_addr, &a6->sin6_addr.s6_addr[12], 4);
  return true;
}

/* Is FROM, a datagram's source, where a socket bound to any address on
   its port (LOCAL) sent it from? (The kernel picked the source address
   for the destination, as it does again.) An IPv4 source shows IPv4-mapped
   to a dual-stack IPv6 receiver. */
static bool
sent_from_any(const struct sockaddr_storage *local, const struct sockaddr_storage *from)
{
  struct sockaddr_storage f4;
  if (!addr_any(local) || addr_port(local) != addr_port(from))
    return false;
  return local->ss_family == from->ss_family
         || (local->ss_family == AF_INET && v4_mapped(from, &f4));
}

static int
sender_for(struct rctx *c, const struct sockaddr_storage *from, int *tmp, crest_error_t *err)
{
  for (size_t i = 0; i < c->nf; i++)
    {
      const struct inet_sk *o = c->f[i].priv;
      if (c->f[i].ops == &fd_inet_ops && o->proto == IPPROTO_UDP && c->f[i].svc >= 0
          && (addr_eq(&o->local, from) || sent_from_any(&o->local, from)))
        return c->f[i].svc;
    }
  *tmp = socket(from->ss_family, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_UDP);
  if (*tmp < 0 || bind(*tmp, (const struct sockaddr *)from, addr_len(from->ss_family)) < 0)
    return crest_error_errno(err, "bind a socket to a datagram's source port %d", addr_port(from));
  return *tmp;
}

/* Send datagram G to FD (bound to TO) and wait until it is queued there.
   From an IPv4 socket, an IPv4-mapped destination as IPv4. */
static int
requeue(struct rctx *c, int fd, const struct sockaddr_storage *to, const struct dgram *g,
        crest_error_t *err)
{
  cleanup_close int tmp = -1;
  long long before = rmem_now(fd);
  int src = sender_for(c, &g->from, &tmp, err);
  struct sockaddr_storage own, to4;
  socklen_t ol = sizeof own;
  if (src < 0)
    return -1;
  if (to->ss_family == AF_INET6 && getsockname(src, (struct sockaddr *)&own, &ol) == 0
      && own.ss_family == AF_INET && v4_mapped(to, &to4))
    to = &to4;
  if (sendto(src, g->data, g->len, 0, (const struct sockaddr *)to, addr_len(to->ss_family))
      != (ssize_t)g->len)
    return crest_error_errno(err, "send a queued datagram again");
  for (int i = 0; i < 2000 && rmem_now(fd) == before; i++)
    {
      struct timespec ts = { 0, 1000000 };
      nanosleep(&ts, NULL);
    }
  if (rmem_now(fd) == before)
    return crest_error_make(err, EIO, "a queued datagram sent again did not arrive");
  return 0;
}

/* Once every socket is bound: the queued datagrams, in order, sent from
   their sources to the socket's address (its loopback one when it is bound
   to any). */
/* The UDP sockets' shutdown(2), at the last inet file's finish: after
   every queue is back (a socket shut for reading still hands out what it
   holds, one shut for writing may be the source another's queued
   datagram is sent from again). The kernel keeps the bits on a socket
   that is not connected too, and says ENOTCONN. */
static int
udp_shut_restore(struct rctx *c, const struct rfile *f, crest_error_t *err)
{
  for (size_t i = (size_t)(f - c->f) + 1; i < c->nf; i++)
    if (c->f[i].ops == &fd_inet_ops)
      return 0;
  for (size_t i = 0; i < c->nf; i++)
    {
      const struct inet_sk *o = c->f[i].priv;
      if (c->f[i].ops != &fd_inet_ops || !o->shut || c->f[i].svc < 0)
        continue;
      if (shutdown(c->f[i].svc, o->shut - 1) < 0 && errno != ENOTCONN)
        return crest_error_errno(err, "restore: file %d (%s): shutdown(%d)", c->f[i].id,
                                 c->f[i].path, o->shut - 1);
    }
  return 0;
}

/* Where datagram G goes again: its own destination (format 22) on the
   socket's port, else TO (the socket's address, loopback for any). */
static const struct sockaddr_storage *
dgram_to(struct dgram *g, const struct sockaddr_storage *to)
{
  if (!g->has_to)
    return to;
  if (g->to.ss_family == AF_INET)
    ((struct sockaddr_in *)&g->to)->sin_port = ((const struct sockaddr_in *)to)->sin_port;
  else
    ((struct sockaddr_in6 *)&g->to)->sin6_port = ((const struct sockaddr_in6 *)to)->sin6_port;
  return &g->to;
}

static int
inet_finish(struct rctx *c, struct rfile *f, crest_error_t *err)
{
  const struct inet_sk *s = f->priv;
  struct sockaddr_storage to;
  socklen_t len = sizeof to;
  if (s->state == SK_ESTABLISHED && tcp_conn_release(f->svc, reuse_of(s), err) < 0)
    return crest_error_wrap(err, "restore: file %d (%s)", f->id, f->path);
  if (s->nq)
    {
      if (getsockname(f->svc, (struct sockaddr *)&to, &len) < 0)
        return crest_error_errno(err, "restore: file %d: getsockname", f->id);
      if (addr_any(&to))
        {
          if (to.ss_family == AF_INET)
            ((struct sockaddr_in *)&to)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
          else
            ((struct sockaddr_in6 *)&to)->sin6_addr = in6addr_loopback;
        }
    }
  for (size_t i = 0; i < s->nq; i++)
    if (requeue(c, f->svc, dgram_to(&s->q[i], &to), &s->q[i], err) < 0)
      return crest_error_wrap(err, "restore: file %d (%s): datagram %zu of %zu", f->id, f->path,
                              i + 1, s->nq);
  if (sk_opts_apply(f->svc, &s->so, SKO_BIT(SKO_PEEK_OFF), err) < 0)
    return crest_error_wrap(err, "restore: file %d (%s)", f->id, f->path);
  return udp_shut_restore(c, f, err);
}

static void
inet_release(struct rfile *f)
{
  inet_free(f->priv);
}

/* Is a UDP socket outside the tree (not one of C's files) bound where
   datagram source FROM came from (its port, its address or any)? The
   restore sends a queued datagram again from its source; one a client
   outside still holds (a DNS client waiting for its answer) could not be
   bound to. */
static bool
source_held_outside(struct dctx *c, pid_t pid, const struct sockaddr_storage *from)
{
  struct sockaddr_storage f4;
  const struct sockaddr_storage *v4 = from->ss_family == AF_INET ? from
                                      : v4_mapped(from, &f4)     ? &f4
                                                                 : NULL;
  for (int k = 0; k < 2; k++)
    {
      int fam = k ? AF_INET6 : AF_INET;
      const struct sk_diag_set *set = udp_diag(c, pid, fam);
      for (size_t i = 0; set && i < set->n; i++)
        {
          const struct inet_diag_msg *m = (const void *)set->r[i].msg;
          bool mine = false, any = true, same;
          if (ntohs(m->id.idiag_sport) != addr_port(from))
            continue;
          for (size_t j = 0; j < c->nf && !mine; j++)
            mine = c->f[j].ops == &fd_inet_ops && (uint32_t)c->f[j].ino == m->idiag_inode;
          for (int w = 0; w < (fam == AF_INET ? 1 : 4); w++)
            any &= m->id.idiag_src[w] == 0;
          if (fam == AF_INET)
            same = v4 && m->id.idiag_src[0] == ((const struct sockaddr_in *)v4)->sin_addr.s_addr;
          else
            same = from->ss_family == AF_INET6
                   && memcmp(m->id.idiag_src, &((const struct sockaddr_in6 *)from)->sin6_addr, 16)
                          == 0;
          if (!mine && (any || same))
            return true;
        }
    }
  return false;
}

/* A queued datagram whose source a socket outside the tree holds (the
   sender waits for its answer): a passing state (EAGAIN: the checkpoint
   tries again once the program has read it). Until December 2026 the
   restore failed on it ("bind a socket to a datagram's source port P:
   Address already in use"), after the checkpoint had ended the tree
   (dnsmasq with queries waiting; helper finding). */
static int
from_cmp(const void *a, const void *b)
{
  const struct sockaddr_storage *x = *(const struct sockaddr_storage *const *)a;
  const struct sockaddr_storage *y = *(const struct sockaddr_storage *const *)b;
  size_t len = x->ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
  if (x->ss_family != y->ss_family)
    return x->ss_family < y->ss_family ? -1 : 1;
  return memcmp(x, y, len);
}

/* Each distinct source once (a queue of up to 65,536 datagrams comes
   from a few senders): the sources sorted, the tree's files and the
   namespace's UDP sockets looked through once a source. */
static int
inet_resolve(struct dctx *c, struct dfile *f, crest_error_t *err)
{
  const struct inet_sk *s = f->priv;
  cleanup_free const struct sockaddr_storage **from = NULL;
  if (!s->nq)
    return 0;
  from = xmalloc(s->nq * sizeof *from);
  for (size_t i = 0; i < s->nq; i++)
    from[i] = &s->q[i].from;
  qsort(from, s->nq, sizeof *from, from_cmp);
  for (size_t i = 0; i < s->nq; i++)
    {
      bool in_tree = false;
      if (i && from_cmp(&from[i - 1], &from[i]) == 0)
        continue;
      for (size_t j = 0; j < c->nf && !in_tree; j++)
        {
          const struct inet_sk *o = c->f[j].priv;
          in_tree = c->f[j].ops == &fd_inet_ops && o->proto == IPPROTO_UDP
                    && (addr_eq(&o->local, from[i]) || sent_from_any(&o->local, from[i]));
        }
      if (!in_tree && source_held_outside(c, f->pid, from[i]))
        return crest_error_make(err, EAGAIN,
                                "task %d: fd %d (%s): a queued datagram from port %d, which a "
                                "socket outside the tree holds: a restore could not send it again "
                                "from there (it waits to be read)",
                                f->pid, f->fd, f->path, addr_port(from[i]));
    }
  return 0;
}

const struct fd_ops fd_inet_ops = {
  .type = "inet",
  .resolve = inet_resolve,
  .probe = inet_probe,
  .write = inet_write,
  .parse = inet_parse,
  .open = inet_open,
  .finish = inet_finish,
  .release = inet_release,
};
