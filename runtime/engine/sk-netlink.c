/* crest: netlink sockets (docs/engine.md, "Netlink sockets").
 *
 * What a program holds a netlink socket for is a conversation with the
 * kernel (rtnetlink, audit, generic netlink...): the socket itself is its
 * protocol and type, its port ID (getsockname's nl_pid, 0 while unbound),
 * the multicast groups it listens to (NETLINK_LIST_MEMBERSHIPS), the
 * destination it was connected to (getpeername), its SOL_NETLINK flags and
 * the common SOL_SOCKET options (sockets.c). All of it is made again by the
 * restorer, in the tree's network namespace, before any task exists. What
 * waits in its receive queue (an answer not yet read, an event) cannot be
 * put back, so a socket with bytes queued is refused (SO_MEMINFO); so is
 * NETLINK_LISTEN_ALL_NSID, which needs CAP_NET_BROADCAST in the initial
 * user namespace. A dump the kernel is still producing always has its next
 * part queued (netlink_recvmsg refills the queue), so it is refused too. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dump-int.h"
#include "engine-int.h"
#include "files.h"
#include "image.h"
#include "log.h"
#include "restore-int.h"
#include "sockets.h"
#include "util.h"

#ifndef SO_MEMINFO
#define SO_MEMINFO 55
#endif

/* Groups numbered 1 to NL_GROUPS_MAX. */
#define NL_GROUPS_MAX 1024

static const struct
{
  int name;
  const char *key;
} nl_opts[] = {
  { NETLINK_PKTINFO, "NETLINK_PKTINFO" },
  { NETLINK_BROADCAST_ERROR, "NETLINK_BROADCAST_ERROR" },
  { NETLINK_NO_ENOBUFS, "NETLINK_NO_ENOBUFS" },
  { NETLINK_CAP_ACK, "NETLINK_CAP_ACK" },
  { NETLINK_EXT_ACK, "NETLINK_EXT_ACK" },
  { NETLINK_GET_STRICT_CHK, "NETLINK_GET_STRICT_CHK" },
};
#define NL_NOPTS ARRAY_SIZE(nl_opts)

struct nl_sk
{
  int type, proto;
  uint32_t portid, dst_portid, dst_group;
  uint32_t groups[NL_GROUPS_MAX / 32]; /* bit G-1: group G */
  int val[NL_NOPTS];
  struct sk_opts so;
};

static bool
group_has(const struct nl_sk *s, unsigned g)
{
  return g >= 1 && g <= NL_GROUPS_MAX && (s->groups[(g - 1) / 32] >> ((g - 1) % 32) & 1);
}

/* --- checkpoint --- */

static int
nl_dump(int d, struct nl_sk *s, bool owns_net, crest_error_t *err)
{
  struct sockaddr_nl a;
  socklen_t len = sizeof a;
  uint32_t mem[SK_MEMINFO_VARS];
  struct sk_opts def;
  int v = 0;
  memset(&a, 0, sizeof a);
  if (getsockname(d, (struct sockaddr *)&a, &len) < 0)
    return crest_error_errno(err, "getsockname");
  s->portid = a.nl_pid;
  len = sizeof s->groups;
  if (getsockopt(d, SOL_NETLINK, NETLINK_LIST_MEMBERSHIPS, s->groups, &len) < 0)
    return crest_error_errno(err, "getsockopt NETLINK_LIST_MEMBERSHIPS");
  if (len > sizeof s->groups)
    return crest_error_make(err, ENOTSUP,
                            "it listens to multicast groups above %d, which crest does not "
                            "restore",
                            NL_GROUPS_MAX);
  memset(&a, 0, sizeof a);
  len = sizeof a;
  if (getpeername(d, (struct sockaddr *)&a, &len) == 0)
    s->dst_portid = a.nl_pid, s->dst_group = a.nl_groups;
  for (size_t i = 0; i < NL_NOPTS; i++)
    {
      len = sizeof v;
      v = 0;
      if (getsockopt(d, SOL_NETLINK, nl_opts[i].name, &v, &len) == 0)
        s->val[i] = v;
    }
  len = sizeof v;
  v = 0;
  if (getsockopt(d, SOL_NETLINK, NETLINK_LISTEN_ALL_NSID, &v, &len) == 0 && v)
    return crest_error_make(err, ENOTSUP,
                            "NETLINK_LISTEN_ALL_NSID is set, which only a task with "
                            "CAP_NET_BROADCAST in the initial user namespace can set again");
  memset(mem, 0, sizeof mem);
  len = sizeof mem;
  if (getsockopt(d, SOL_SOCKET, SO_MEMINFO, mem, &len) == 0 && mem[SK_MEMINFO_RMEM_ALLOC])
    return crest_error_make(err, ENOTSUP,
                            "%u bytes of netlink messages wait to be read on it (an answer, an "
                            "event, the rest of a dump), which crest cannot put back",
                            mem[SK_MEMINFO_RMEM_ALLOC]);
  if (sk_opts_get(d, &s->so, err) < 0)
    return -1;
  sk_opts_default(AF_NETLINK, s->type, s->proto, &def);
  return sk_opts_check(&s->so, &def, owns_net, err);
}

static int
nl_probe(struct dctx *c, struct dproc *p, const struct fd_probe *pr, struct dfile *nf,
         crest_error_t *err)
{
  cleanup_close int d = -1;
  int family = 0, type = 0, proto = 0;
  socklen_t len = sizeof family;
  struct nl_sk *s;
  (void)c, (void)p;
  if (!S_ISSOCK(pr->st->st_mode))
    return 0;
  if ((d = sk_getfd(pr->pid, pr->fd, err)) < 0)
    return crest_error_wrap(err, "task %d: fd %d (%s)", pr->pid, pr->fd, pr->link);
  if (getsockopt(d, SOL_SOCKET, SO_DOMAIN, &family, &len) < 0 || family != AF_NETLINK)
    return 0;
  len = sizeof type;
  if (getsockopt(d, SOL_SOCKET, SO_TYPE, &type, &len) < 0
      || getsockopt(d, SOL_SOCKET, SO_PROTOCOL, &proto, &(socklen_t){ sizeof proto }) < 0
      || (type != SOCK_RAW && type != SOCK_DGRAM))
    return crest_error_make(
        err, ENOTSUP, "task %d: fd %d (%s): a netlink socket of type %d, cannot checkpoint it",
        pr->pid, pr->fd, pr->link, type);
  s = nf->priv = xzalloc(sizeof *s);
  s->type = type;
  s->proto = proto;
  if (nl_dump(d, s, sk_other_netns(pr->pid), err) < 0)
    return crest_error_wrap(err, "task %d: fd %d (netlink socket, protocol %d)", pr->pid, pr->fd,
                            proto);
  return 1;
}

static void
nl_write(struct dctx *c, const struct dfile *f, yajl_gen g)
{
  const struct nl_sk *s = f->priv;
  (void)c;
  jput_int(g, "proto", s->proto);
  jput_str(g, "sotype", s->type == SOCK_RAW ? "raw" : "dgram");
  if (s->portid)
    jput_int(g, "portid", s->portid);
  if (s->dst_portid)
    jput_int(g, "dst_portid", s->dst_portid);
  if (s->dst_group)
    jput_int(g, "dst_group", s->dst_group);
  jput_key(g, "groups");
  yajl_gen_array_open(g);
  for (unsigned grp = 1; grp <= NL_GROUPS_MAX; grp++)
    if (group_has(s, grp))
      yajl_gen_integer(g, grp);
  yajl_gen_array_close(g);
  sk_opts_put(g, &s->so);
  jput_key(g, "opts");
  yajl_gen_map_open(g);
  for (size_t i = 0; i < NL_NOPTS; i++)
    if (s->val[i])
      jput_int(g, nl_opts[i].key, s->val[i]);
  yajl_gen_map_close(g);
}

/* --- restore --- */

static int
u32_of(yajl_val v, const char *key, uint32_t *out, crest_error_t *err)
{
  int64_t x = 0;
  crest_error_t e = NULL;
  if (jget_i64(v, key, &x, &e) < 0)
    {
      crest_error_release(&e);
      *out = 0;
      return 0;
    }
  if (x < 0 || x > UINT32_MAX)
    return crest_error_make(err, EINVAL, "%s %lld out of range", key, (long long)x);
  *out = (uint32_t)x;
  return 0;
}

static int
nl_parse(struct rctx *c, yajl_val v, struct rfile *f, crest_error_t *err)
{
  struct nl_sk *s = f->priv = xzalloc(sizeof *s);
  const char *type;
  int64_t proto;
  yajl_val *items, o = NULL;
  long n;
  (void)c;
  if (jget_i64(v, "proto", &proto, err) < 0 || jget_str(v, "sotype", &type, err) < 0)
    return -1;
  if (proto < 0 || proto >= 32 || (strcmp(type, "raw") != 0 && strcmp(type, "dgram") != 0))
    return crest_error_make(err, EINVAL, "netlink socket of protocol %lld, type %.10s",
                            (long long)proto, type);
  s->proto = (int)proto;
  s->type = strcmp(type, "raw") == 0 ? SOCK_RAW : SOCK_DGRAM;
  if (u32_of(v, "portid", &s->portid, err) < 0 || u32_of(v, "dst_portid", &s->dst_portid, err) < 0
      || u32_of(v, "dst_group", &s->dst_group, err) < 0)
    return -1;
  if ((n = jget_array(v, "groups", &items, err)) < 0)
    return -1;
  for (long i = 0; i < n; i++)
    {
      if (!YAJL_IS_INTEGER(items[i]) || YAJL_GET_INTEGER(items[i]) < 1
          || YAJL_GET_INTEGER(items[i]) > NL_GROUPS_MAX)
        return crest_error_make(err, EINVAL, "netlink group %ld out of range", i);
      unsigned g = (unsigned)YAJL_GET_INTEGER(items[i]);
      s->groups[(g - 1) / 32] |= 1u << ((g - 1) % 32);
    }
  for (size_t i = 0; YAJL_IS_OBJECT(v) && i < v->u.object.len; i++)
    if (strcmp(v->u.object.keys[i], "opts") == 0)
      o = v->u.object.values[i];
  for (size_t k = 0; YAJL_IS_OBJECT(o) && k < o->u.object.len; k++)
    {
      size_t i = 0;
      while (i < NL_NOPTS && strcmp(nl_opts[i].key, o->u.object.keys[k]) != 0)
        i++;
      if (i == NL_NOPTS || !YAJL_IS_INTEGER(o->u.object.values[k]))
        return crest_error_make(err, EINVAL, "netlink option %.40s", o->u.object.keys[k]);
      s->val[i] = YAJL_GET_INTEGER(o->u.object.values[k]) != 0;
    }
  return sk_opts_parse(v, &s->so, err);
}

/* The socket of S, made again: options, port, groups, destination, each
   read back. */
static int
nl_make(const struct rfile *f, const struct nl_sk *s, crest_error_t *err)
{
  cleanup_close int fd = socket(
      AF_NETLINK, s->type | SOCK_CLOEXEC | ((f->flags & O_NONBLOCK) ? SOCK_NONBLOCK : 0), s->proto);
  struct sockaddr_nl a = { .nl_family = AF_NETLINK, .nl_pid = s->portid };
  uint32_t got[NL_GROUPS_MAX / 32];
  socklen_t len = sizeof a;
  int r;
  if (fd < 0)
    return crest_error_errno(err, "netlink socket of protocol %d", s->proto);
  if (sk_opts_apply(fd, &s->so, SKO_ALL, err) < 0)
    return -1;
  for (size_t i = 0; i < NL_NOPTS; i++)
    if (s->val[i] && setsockopt(fd, SOL_NETLINK, nl_opts[i].name, &s->val[i], sizeof(int)) < 0)
      return crest_error_errno(err, "set %s", nl_opts[i].key);
  if (s->portid && bind(fd, (struct sockaddr *)&a, sizeof a) < 0)
    return crest_error_errno(err, "bind to netlink port %u", s->portid);
  for (unsigned g = 1; g <= NL_GROUPS_MAX; g++)
    if (group_has(s, g) && setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &g, sizeof g) < 0)
      return crest_error_errno(err, "listen to netlink group %u", g);
  if (s->dst_portid || s->dst_group)
    {
      struct sockaddr_nl dst
          = { .nl_family = AF_NETLINK, .nl_pid = s->dst_portid, .nl_groups = s->dst_group };
      if (connect(fd, (struct sockaddr *)&dst, sizeof dst) < 0)
        return crest_error_errno(err, "connect to netlink port %u, groups %#x", s->dst_portid,
                                 s->dst_group);
    }
  memset(&a, 0, sizeof a);
  memset(got, 0, sizeof got);
  if (getsockname(fd, (struct sockaddr *)&a, &len) < 0 || (s->portid && a.nl_pid != s->portid))
    return crest_error_make(err, EIO, "netlink port %u reads %u", s->portid, a.nl_pid);
  len = sizeof got;
  if (getsockopt(fd, SOL_NETLINK, NETLINK_LIST_MEMBERSHIPS, got, &len) < 0
      || memcmp(got, s->groups, sizeof got) != 0)
    return crest_error_make(err, EIO, "its netlink groups do not read as recorded");
  r = fd;
  fd = -1;
  return r;
}

static int
nl_open(struct rctx *c, struct rfile *f, int flags, crest_error_t *err)
{
  (void)flags;
  if (file_place(c, f, nl_make(f, f->priv, err), false, err) < 0)
    return crest_error_wrap(err, "restore: file %d (%s)", f->id, f->path);
  return 0;
}

const struct fd_ops fd_netlink_ops = {
  .type = "netlink",
  .probe = nl_probe,
  .write = nl_write,
  .parse = nl_parse,
  .open = nl_open,
};
