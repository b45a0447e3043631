/* crest: what every socket type shares, whatever its family (sk-unix.c,
 * sk-inet.c): the kernel's sock_diag records of the tree's network
 * namespace, the SOL_SOCKET options a program can see, and crest's own
 * copy of a socket descriptor. */
#ifndef CREST_SOCKETS_H
#define CREST_SOCKETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>
#include "error.h"

/* --- sock_diag (NETLINK_SOCK_DIAG) --- */

/* One answer of a dump: the message after its nlmsghdr (a unix_diag_msg,
   an inet_diag_msg, ... and its attributes), and the socket's inode. */
struct sk_diag_rec
{
  uint32_t ino;
  uint8_t *msg;
  size_t len;
};

struct sk_diag_set
{
  struct sk_diag_rec *r;
  size_t n;
};

/* A dump request: REQ (LEN bytes, e.g. a struct unix_diag_req) sent with
   NLM_F_DUMP of type SOCK_DIAG_BY_FAMILY; each answer's inode is the u32
   at INO_OFF in its message. */
struct sk_diag_req
{
  const void *req;
  size_t len;
  size_t ino_off;
};

/* Ask the kernel about the sockets of PID's network namespace. When PID
   lives in another user or network namespace than crest, a short-lived
   child enters them (setns: first the user namespace, which crest owns
   for a container, then the network namespace) and asks there; the
   answers come back through a pipe. Rootless, on a stock kernel. */
int
sk_diag_query(pid_t pid, const struct sk_diag_req *q, struct sk_diag_set *out, crest_error_t *err);
/* The record of inode INO, or NULL. */
const struct sk_diag_rec *
sk_diag_find(const struct sk_diag_set *s, uint32_t ino);
/* Attribute TYPE (an rtattr) of record R after HDR bytes of fixed
   header: its payload and length, or NULL. */
const void *
sk_diag_attr(const struct sk_diag_rec *r, size_t hdr, unsigned type, size_t *len);
void
sk_diag_free(struct sk_diag_set *s);

/* One dump's answers to one request, asked once per checkpoint (a child
   may have to enter the tree's namespaces for it), its failure kept too. */
struct dctx;
struct sk_diag_cache
{
  const struct dctx *c;
  struct timespec t0;
  int err;   /* errno of a failed query, 0 */
  char *why; /* its message */
  struct sk_diag_set s;
};
/* K's answers for checkpoint C (in K->s, and *OUT unless NULL), asking Q
   of PID's namespace the first time; -1 with ERR when the query failed
   (each call says so). */
int
sk_diag_cached(struct sk_diag_cache *k, const struct dctx *c, pid_t pid,
               const struct sk_diag_req *q, const struct sk_diag_set **out, crest_error_t *err);

/* --- SOL_SOCKET options --- */

/* Every option a program can read with getsockopt(SOL_SOCKET, ...) and
   crest restores; the table in sockets.c names them. Times in
   microseconds; linger: -1 off, else the seconds. */
enum
{
  SKO_RCVBUF,
  SKO_SNDBUF,
  SKO_PASSCRED,
  SKO_PASSSEC,
  SKO_PEEK_OFF,
  SKO_KEEPALIVE,
  SKO_REUSEADDR,
  SKO_REUSEPORT,
  SKO_BROADCAST,
  SKO_DONTROUTE,
  SKO_OOBINLINE,
  SKO_NO_CHECK,
  SKO_PRIORITY,
  SKO_RCVLOWAT,
  SKO_TIMESTAMP,
  SKO_MARK,
  SKO_LINGER,
  SKO_RCVTIMEO,
  SKO_SNDTIMEO,
  SKO_PASSPIDFD,  /* Linux 6.5 */
  SKO_PASSRIGHTS, /* Linux 6.16: 0 refuses descriptors sent to it */
  SKO_N
};

struct sk_opts
{
  int64_t v[SKO_N];
  bool have[SKO_N]; /* the kernel answered for this family */
};

/* Read the options of socket FD (crest's copy). */
int
sk_opts_get(int fd, struct sk_opts *o, crest_error_t *err);
/* Refuse (-1, one line naming the option) an option whose value differs
   from a new socket's (DEF, read from a fresh socket of the same family
   and type) and that an unprivileged restore cannot set: buffers over
   net.core.[rw]mem_max, SO_MARK, SO_PRIORITY above 6. OWNS_NET: the tree
   has a network namespace of its own, in which the restore holds
   CAP_NET_ADMIN (SO_MARK and SO_PRIORITY can be restored there). */
int
sk_opts_check(const struct sk_opts *o, const struct sk_opts *def, bool owns_net,
              crest_error_t *err);
/* The options of a new socket of FAMILY, TYPE, PROTO made by crest (the
   defaults to compare with); all zero when crest cannot make one. */
void
sk_opts_default(int family, int type, int proto, struct sk_opts *def);
/* Set on FD every option of MASK (SKO_BIT(SKO_x) | ...) whose value
   differs from FD's own, then read them back: -1 with one line naming the
   first that did not take. A family applies SO_PEEK_OFF after it queued
   the data again (SKO_ALL & ~SKO_BIT(SKO_PEEK_OFF), then the rest). */
#define SKO_BIT(i) (1u << (i))
#define SKO_ALL ((1u << SKO_N) - 1)
int
sk_opts_apply(int fd, const struct sk_opts *o, uint32_t mask, crest_error_t *err);
/* "sockopts": { "SO_RCVBUF": n, ... } (the options the kernel answered). */
void
sk_opts_put(yajl_gen g, const struct sk_opts *o);
int
sk_opts_parse(yajl_val v, struct sk_opts *o, crest_error_t *err);

/* --- the descriptor --- */

/* Crest's own copy of descriptor FD of task PID (pidfd_getfd): the same
   open file description, to read options and queues without consuming. */
int
sk_getfd(pid_t pid, int fd, crest_error_t *err);
/* Is task PID in another network namespace than crest (a container's)? */
bool
sk_other_netns(pid_t pid);
/* A container's network namespace ends with the checkpoint: a TCP
   connection the tree closed that the kernel still holds to deliver its
   last bytes or its FIN (an orphan: FIN_WAIT1, CLOSING, LAST_ACK; sock_diag
   shows it without an inode) would end with it, its peer finding it reset
   after restore (a server that closes after its answer). Refused as a
   passing state (EAGAIN). */
int
tcp_orphans_check(struct dctx *c, crest_error_t *err);
/* The socket inode a /proc/PID/fd link "socket:[INO]" names; 0 if none. */
uint32_t
sk_link_ino(const char *link);

#endif
