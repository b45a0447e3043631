/* crest: unix sockets (docs/engine.md, "Unix sockets"): stream, datagram and
 * seqpacket; bound to a path (also one unlinked since), an abstract name,
 * or unbound; listening, with the connections waiting in the backlog;
 * connected pairs inside the tree; the queued data of every socket, in
 * order, with datagram boundaries; shutdown state; SOL_SOCKET options.
 *
 * Checkpoint: the kernel's sock_diag records of the tree's network
 * namespace (sockets.c) give the type, state, name, peer, backlog and
 * shutdown; crest's own copy of the descriptor gives the options and the
 * receive queue, peeked with SO_PEEK_OFF (and the offset put back).
 * Restore: every unix socket of the image is made on the first open, in
 * an order that rebuilds the links: listeners, named sockets, connected
 * pairs (socketpair, or connect and accept on the listener whose name an
 * accepted socket carries), connections waiting in a backlog (connected
 * in their order), then the queues (sent again by their sender), the
 * shutdowns, the unlinks and the options. */
#include <config.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <netinet/tcp.h>
#include <sys/eventfd.h>
#include <linux/capability.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>
#include "dump-int.h"
#include "engine-int.h"
#include "files.h"
#include "image.h"
#include "log.h"
#include "restore-int.h"
#include "sockets.h"
#include "util.h"
#include "kernel-abi.h" /* after the system headers, which may define its constants */

#define UNAME_MAX ((int)sizeof(((struct sockaddr_un *)0)->sun_path))
#define QUEUE_MAX (64u << 20) /* bytes of queued data per socket */
#define PID_MAX 4194304       /* the kernel's PID_MAX_LIMIT on 64 bits */

struct umsg
{
  uint8_t *data;
  size_t len;
  uint8_t from[UNAME_MAX]; /* a datagram's sender address */
  int fromlen;
  int sender; /* file id of the sender (resolve; restore) */
  /* A datagram with no sender address from no socket of the tree (an
     unbound one outside it, as logger's to /dev/log, or one closed since):
     any unbound socket sends it again the same (format 22). */
  bool anon;
  /* Its sender's credentials, as crest's peek got them (SCM_CREDENTIALS:
     the socket reads them, SO_PASSCRED). */
  bool has_cred;
  struct ucred cred;
};

struct usk
{
  uint32_t ino, peer;
  int type, state;
  uint8_t name[UNAME_MAX];
  int namelen; /* 0: unbound; name[0] == 0: abstract */
  bool unlinked;
  /* Unlinked from its name, but found under another name of the same
     directory (renamed: HotSpot's attach listener binds ".java_pidN.tmp"
     and renames it): that path, MOVEDLEN bytes. */
  char moved[UNAME_MAX];
  int movedlen;
  /* A name relative to the binder's working directory (Postfix binds
     "private/smtp" and "public/pickup" in its queue directory): the
     directory it leads to the socket from, as the tree sees it. */
  char base[512];
  uint32_t mode;
  /* The socket file's owner, as crest sees it (a path name whose file was
     found). */
  bool has_owner;
  uid_t ouid;
  gid_t ogid;
  int backlog;
  uint32_t *icons;
  size_t nicons;
  uint8_t shutdown;
  uint32_t wqueue; /* bytes sent, not yet read by the other end */
  struct sk_opts opts;
  struct umsg *q;
  size_t nq;
  /* resolve (files of the tree, -1 none) */
  int peer_file;
  int accept_from; /* accepted: the listener whose name it carries */
  /* Accepted from a listener gone since (closed, or in a process outside
     the tree that has exited), whose name nothing listens on now: made
     again through a listener of that name for the moment (format 22). */
  bool accept_gone;
  int backlog_of;         /* waiting in this listener's backlog, */
  int backlog_pos;        /* at this place */
  bool peer_gone;         /* a stream whose peer closed: the queue, then EOF */
  uint8_t ext[UNAME_MAX]; /* --ext-unix-sk: the outside peer's name */
  int extlen;
  pid_t cred; /* the PID SO_PEERCRED names, in crest's namespace (0: none) */
};

/* --- checkpoint --- */

/* One dump per checkpoint: the tree's sockets all live in one network
   namespace (a task in another is refused: its socket is not found). */
static struct sk_diag_cache diag;

static int
diag_get(struct dctx *c, pid_t pid, crest_error_t *err)
{
  static const struct unix_diag_req req
      = { .sdiag_family = AF_UNIX,
          .udiag_states = ~0u,
          .udiag_show = UDIAG_SHOW_NAME | UDIAG_SHOW_VFS | UDIAG_SHOW_PEER | UDIAG_SHOW_ICONS
                        | UDIAG_SHOW_RQLEN | UDIAG_SHOW_UID };
  static const struct sk_diag_req q
      = { &req, sizeof req, offsetof(struct unix_diag_msg, udiag_ino) };
  return sk_diag_cached(&diag, c, pid, &q, NULL, err);
}

static const void *
uattr(const struct sk_diag_rec *r, unsigned type, size_t *len)
{
  return sk_diag_attr(r, sizeof(struct unix_diag_msg), type, len);
}

/* The entry of the directory of NAME (LEN bytes, absolute, as task PID
   sees it) that is the socket file VFS: its path in U->moved and its
   stat in *ST. False: none (unlinked). A rename within the directory is
   what programs do (bind a temporary name, rename it into place). */
static bool
find_moved(pid_t pid, const uint8_t *name, size_t len, const struct unix_diag_vfs *vfs,
           struct usk *u, struct stat *st)
{
  const char *slash = memrchr(name, '/', len);
  size_t dl = slash ? (size_t)(slash - (const char *)name) : 0;
  cleanup_free char *dir = xasprintf("/proc/%d/root%.*s/", pid, (int)dl, (const char *)name);
  DIR *d = opendir(dir);
  struct dirent *e;
  bool found = false;
  if (!d)
    return false;
  while (!found && (e = readdir(d)))
    if (fstatat(dirfd(d), e->d_name, st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISSOCK(st->st_mode)
        && st->st_ino == vfs->udiag_vfs_ino && major(st->st_dev) == vfs->udiag_vfs_dev >> 20
        && minor(st->st_dev) == (vfs->udiag_vfs_dev & 0xfffff))
      {
        int n = snprintf(u->moved, sizeof u->moved, "%.*s/%s", (int)dl, (const char *)name,
                         e->d_name);
        found = n > 0 && n < (int)sizeof u->moved;
        u->movedlen = found ? n : 0;
      }
  closedir(d);
  return found;
}

/* Stat AT (a path through /proc of task P), the socket file of a name;
   where crest may not pass a directory on the way (one of a container
   user's, mode 0700: Postfix's public/), PATH (the same in the task's
   root, NULL: none) is asked of the broker in the tree's user namespace.
   0, or -1 with errno: ENOENT and ENOTDIR say the file is not there. */
static int
name_stat(const struct dctx *c, const struct dproc *p, const char *at, const char *path,
          struct stat *st)
{
  int fd, e;
  crest_error_t x = NULL;
  if (stat(at, st) == 0)
    return 0;
  if (errno != EACCES || !path)
    return -1;
  fd = open_in_root(c, p, path, O_PATH | O_NOFOLLOW, &x);
  e = x ? x->status : 0;
  crest_error_release(&x);
  if (fd < 0)
    {
      errno = e ? e : EACCES;
      return -1;
    }
  e = fstat(fd, st) < 0 ? errno : 0;
  close(fd);
  errno = e;
  return e ? -1 : 0;
}

/* A name relative to the directory the binder was in: the task's working
   directory when the name leads there to this socket (the base the
   restore binds and connects from), else refused. */
static int
relative_name(const struct dctx *c, const struct dproc *pr, const uint8_t *n, size_t len,
              const struct unix_diag_vfs *vfs, struct usk *u, crest_error_t *err)
{
  pid_t pid = pr->pid;
  cleanup_free char *cwdl = xasprintf("/proc/%d/cwd", pid);
  cleanup_free char *at = xasprintf("/proc/%d/cwd/%.*s", pid, (int)len, (const char *)n);
  cleanup_free char *in = NULL;
  struct stat st;
  ssize_t cl = readlink(cwdl, u->base, sizeof u->base - 1);
  bool base_ok = cl > 0 && u->base[0] == '/' && (size_t)cl < sizeof u->base - 1;
  int found = -1;
  if (base_ok && vfs)
    {
      in = xasprintf("%.*s/%.*s", (int)cl, u->base, (int)len, (const char *)n);
      found = name_stat(c, pr, at, in, &st);
      if (found < 0 && errno != ENOENT && errno != ENOTDIR)
        return crest_error_sys(err, errno,
                               "unix socket bound to the relative path \"%.*s\": its socket file "
                               "cannot be looked at",
                               (int)len, (const char *)n);
    }
  if (found < 0 || !S_ISSOCK(st.st_mode) || st.st_ino != vfs->udiag_vfs_ino)
    return crest_error_make(err, ENOTSUP,
                            "unix socket bound to the relative path \"%.*s\", which does not "
                            "lead to it from the task's working directory: cannot checkpoint it",
                            (int)len, (const char *)n);
  u->base[cl] = 0;
  u->mode = st.st_mode & 07777;
  u->has_owner = true, u->ouid = st.st_uid, u->ogid = st.st_gid;
  return 0;
}

/* The name, and whether the path still names this socket: a file crest
   may not look at is not taken for gone (until December 2026 it was, in a
   directory of a container user's of mode 0700, and the restored socket
   had no file: its clients found nothing there). */
static int
dump_name(const struct dctx *c, const struct dproc *pr, const struct sk_diag_rec *r, struct usk *u,
          crest_error_t *err)
{
  pid_t pid = pr->pid;
  size_t len = 0;
  const uint8_t *n = uattr(r, UNIX_DIAG_NAME, &len);
  const struct unix_diag_vfs *vfs = uattr(r, UNIX_DIAG_VFS, &(size_t){ 0 });
  struct stat st;
  cleanup_free char *p = NULL;
  if (!n || !len)
    return 0;
  if (len > (size_t)UNAME_MAX)
    return crest_error_make(err, EINVAL, "a unix socket name of %zu bytes", len);
  memcpy(u->name, n, len);
  u->namelen = (int)len;
  if (n[0] == 0)
    return 0;
  if (n[0] != '/')
    return relative_name(c, pr, n, len, vfs, u, err);
  p = xasprintf("/proc/%d/root%.*s", pid, (int)len, n);
  {
    cleanup_free char *in = xasprintf("%.*s", (int)len, (const char *)n);
    int e = 0;
    if (vfs && name_stat(c, pr, p, in, &st) < 0 && (e = errno) != ENOENT && e != ENOTDIR)
      return crest_error_sys(err, e, "unix socket bound to %s: its socket file cannot be looked at",
                             in);
    u->unlinked = !vfs || e || st.st_ino != vfs->udiag_vfs_ino;
  }
  u->mode = u->unlinked ? 0777 : st.st_mode & 07777;
  u->has_owner = !u->unlinked;
  if (u->unlinked && vfs && find_moved(pid, n, len, vfs, u, &st))
    u->mode = st.st_mode & 07777, u->has_owner = true;
  if (u->has_owner)
    u->ouid = st.st_uid, u->ogid = st.st_gid;
  return 0;
}

/* The receive queue of crest's copy FD, peeked from offset 0 on. */
static int
peek_one(int fd, struct usk *u, uint8_t *buf, size_t size, crest_error_t *err)
{
  union
  {
    struct cmsghdr h;
    uint8_t b[CMSG_SPACE(sizeof(int) * 253) + CMSG_SPACE(sizeof(struct ucred))
              + CMSG_SPACE(sizeof(int))];
  } cm;
  struct ucred cred;
  bool has_cred = false;
  struct sockaddr_un from;
  struct iovec iov = { buf, size };
  struct msghdr m = { .msg_name = &from,
                      .msg_namelen = sizeof from,
                      .msg_iov = &iov,
                      .msg_iovlen = 1,
                      .msg_control = &cm,
                      .msg_controllen = sizeof cm };
  ssize_t n = recvmsg(fd, &m, MSG_PEEK | MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  struct umsg *q;
  if (n < 0)
    return errno == EAGAIN ? 0 : crest_error_errno(err, "peek at its queue");
  for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h))
    if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_CREDENTIALS
        && h->cmsg_len >= CMSG_LEN(sizeof cred))
      {
        memcpy(&cred, CMSG_DATA(h), sizeof cred);
        has_cred = true;
      }
    else if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_PIDFD
             && h->cmsg_len >= CMSG_LEN(sizeof(int)))
      {
        /* SO_PASSPIDFD: the sender as a pidfd, handed to crest. */
        int pfd;
        memcpy(&pfd, CMSG_DATA(h), sizeof pfd);
        close(pfd);
      }
  for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h))
    if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS)
      {
        int *fds = (int *)CMSG_DATA(h);
        for (size_t i = 0; i < (h->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++)
          close(fds[i]);
        return crest_error_make(err, ENOTSUP,
                                "descriptors in flight (SCM_RIGHTS queued), cannot checkpoint it");
      }
  if (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
    return crest_error_make(err, ENOTSUP, "a queued message over %zu bytes", size);
  /* The end: a stream's, or a seqpacket socket's shut for reading (its
     peer closed): a zero-length message queued before that end would read
     the same, and is taken for it (docs/engine.md). */
  if (n == 0 && (u->type == SOCK_STREAM || (u->type == SOCK_SEQPACKET && (u->shutdown & 1))))
    return 0;
  if (n == 0)
    return crest_error_make(err, ENOTSUP, "a zero-length datagram queued, cannot checkpoint it");
  u->q = xrealloc(u->q, (u->nq + 1) * sizeof *u->q);
  q = &u->q[u->nq++];
  memset(q, 0, sizeof *q);
  q->data = xmalloc(n);
  memcpy(q->data, buf, n);
  q->len = n;
  q->sender = -1;
  q->has_cred = has_cred;
  if (has_cred)
    q->cred = cred;
  if (m.msg_namelen > sizeof(sa_family_t) && u->type == SOCK_DGRAM)
    {
      q->fromlen = (int)(m.msg_namelen - sizeof(sa_family_t));
      memcpy(q->from, from.sun_path, q->fromlen);
    }
  return 1;
}

static int
dump_queue(int fd, struct usk *u, crest_error_t *err)
{
  size_t total = 0, size = 4u << 20;
  cleanup_free uint8_t *buf = xmalloc(size);
  int zero = 0, back = (int)u->opts.v[SKO_PEEK_OFF], r = 1;
  /* A stream or seqpacket socket neither connected nor listening (made,
     perhaps bound, not connected yet) has no queue: its peek says EINVAL
     or ENOTCONN (until December 2026 that failed the checkpoint). */
  if (u->state == TCP_LISTEN || (u->type != SOCK_DGRAM && u->state != TCP_ESTABLISHED))
    return 0;
  /* Out-of-band data (send with MSG_OOB on a unix stream, Linux 5.15):
     the peeks below read its byte in line with the rest, where the
     program reads it apart, at its mark. Refused. */
  if (u->type == SOCK_STREAM)
    {
      char oob;
      if (recv(fd, &oob, 1, MSG_OOB | MSG_PEEK | MSG_DONTWAIT) == 1)
        return crest_error_make(err, ENOTSUP,
                                "out-of-band data queued (MSG_OOB), which crest does not restore");
    }
  if (setsockopt(fd, SOL_SOCKET, SO_PEEK_OFF, &zero, sizeof zero) < 0)
    return crest_error_errno(err, "set SO_PEEK_OFF to read its queue");
  while (r > 0 && total <= QUEUE_MAX)
    if ((r = peek_one(fd, u, buf, size, err)) > 0)
      total += u->q[u->nq - 1].len;
  if (setsockopt(fd, SOL_SOCKET, SO_PEEK_OFF, &back, sizeof back) < 0 && r >= 0)
    return crest_error_errno(err, "put SO_PEEK_OFF back to %d", back);
  if (r >= 0 && total > QUEUE_MAX)
    return crest_error_make(err, ENOTSUP, "over %u bytes queued", QUEUE_MAX);
  return r < 0 ? -1 : 0;
}

static int
dump_usk(const struct dctx *c, const struct dproc *pr, const struct sk_diag_rec *r, int fd,
         struct usk *u, crest_error_t *err)
{
  const struct unix_diag_msg *m = (const void *)r->msg;
  const uint32_t *peer, *icons;
  const struct unix_diag_rqlen *rq;
  const uint8_t *sh;
  size_t len = 0;
  struct sk_opts def;
  u->ino = m->udiag_ino;
  u->type = m->udiag_type;
  u->state = m->udiag_state;
  u->peer_file = u->accept_from = u->backlog_of = -1;
  if ((peer = uattr(r, UNIX_DIAG_PEER, &len)) && len == 4)
    u->peer = *peer;
  if ((icons = uattr(r, UNIX_DIAG_ICONS, &len)) && len)
    {
      u->nicons = len / 4;
      u->icons = xmalloc(len);
      memcpy(u->icons, icons, len);
    }
  if ((rq = uattr(r, UNIX_DIAG_RQLEN, &len)) && u->state == TCP_LISTEN)
    u->backlog = (int)rq->udiag_wqueue;
  else if (rq)
    u->wqueue = rq->udiag_wqueue;
  if ((sh = uattr(r, UNIX_DIAG_SHUTDOWN, &len)) && len >= 1)
    u->shutdown = *sh & 3;
  if (u->type != SOCK_STREAM && u->type != SOCK_DGRAM && u->type != SOCK_SEQPACKET)
    return crest_error_make(err, ENOTSUP, "unix socket of type %d, cannot checkpoint it", u->type);
  if (dump_name(c, pr, r, u, err) < 0 || sk_opts_get(fd, &u->opts, err) < 0)
    return -1;
  {
    struct ucred cr;
    socklen_t cl = sizeof cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0 && cr.pid > 0)
      u->cred = cr.pid;
  }
  sk_opts_default(AF_UNIX, u->type, 0, &def);
  if (sk_opts_check(&u->opts, &def, false, err) < 0)
    return -1;
  return dump_queue(fd, u, err);
}

static int
unix_probe(struct dctx *c, struct dproc *p, const struct fd_probe *d, struct dfile *nf,
           crest_error_t *err)
{
  uint32_t ino = sk_link_ino(d->link);
  int dom = 0;
  socklen_t len = sizeof dom;
  cleanup_close int fd = -1;
  const struct sk_diag_rec *r;
  if (!S_ISSOCK(d->st->st_mode) || !ino)
    return 0;
  if ((fd = sk_getfd(d->pid, d->fd, err)) < 0)
    return -1;
  if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &len) < 0 || dom != AF_UNIX)
    return 0;
  if (diag_get(c, d->pid, err) < 0)
    return crest_error_wrap(err, "task %d: fd %d (%s)", d->pid, d->fd, d->link);
  if (!(r = sk_diag_find(&diag.s, ino)))
    return crest_error_make(err, ENOTSUP,
                            "task %d: fd %d (%s): a unix socket of another network namespace than "
                            "the tree's (a connection accepted from a client outside it, whose "
                            "namespace the kernel gives the accepted end, or a socket made "
                            "outside), cannot checkpoint it",
                            d->pid, d->fd, d->link);
  nf->priv = xzalloc(sizeof(struct usk));
  if (dump_usk(c, p, r, fd, nf->priv, err) < 0)
    return crest_error_wrap(err, "task %d: fd %d (%s)", d->pid, d->fd, d->link);
  return 1;
}

/* The unix socket file of the tree with inode INO, or -1. */
static int
file_of_ino(const struct dctx *c, uint32_t ino)
{
  for (size_t i = 0; i < c->nf; i++)
    if (c->f[i].ops == &fd_unix_ops && ((struct usk *)c->f[i].priv)->ino == ino)
      return (int)i;
  return -1;
}

/* The unix socket file of the tree bound to NAME (LEN bytes), or -1;
   LISTEN: a listener only. */
static int
file_of_name(const struct dctx *c, const uint8_t *name, int len, bool listen)
{
  for (size_t i = 0; len && i < c->nf; i++)
    if (c->f[i].ops == &fd_unix_ops)
      {
        const struct usk *u = c->f[i].priv;
        if (u->namelen == len && memcmp(u->name, name, len) == 0
            && (!listen || u->state == TCP_LISTEN))
          return (int)i;
      }
  return -1;
}

/* The listener of the tree whose backlog holds INO, or -1. */
static int
backlog_holder(const struct dctx *c, uint32_t ino, int *pos)
{
  for (size_t i = 0; i < c->nf; i++)
    if (c->f[i].ops == &fd_unix_ops)
      {
        const struct usk *u = c->f[i].priv;
        for (size_t k = 0; k < u->nicons; k++)
          if (u->icons[k] == ino)
            return *pos = (int)k, (int)i;
      }
  return -1;
}

/* Every connection waiting in listener U's backlog comes from the tree. */
static int
resolve_backlog(struct dctx *c, struct dfile *f, const struct usk *u, crest_error_t *err)
{
  for (size_t k = 0; k < u->nicons; k++)
    {
      if (file_of_ino(c, u->icons[k]) < 0) /* a passing state: accepted soon */
        return crest_error_make(
            err, EAGAIN,
            "task %d: fd %d (%s): a connection from outside the tree waits in the "
            "backlog of this unix socket listener, cannot checkpoint it",
            f->pid, f->fd, f->path);
    }
  return 0;
}

/* --ext-unix-sk: the outside peer's name, to connect to again. */
static int
resolve_ext(struct dfile *f, struct usk *u, crest_error_t *err)
{
  const struct sk_diag_rec *pr = sk_diag_find(&diag.s, u->peer);
  size_t len = 0;
  const uint8_t *n = pr ? uattr(pr, UNIX_DIAG_NAME, &len) : NULL;
  if (!n || !len || len > (size_t)UNAME_MAX || (n[0] && n[0] != '/'))
    return crest_error_make(err, ENOTSUP,
                            "task %d: fd %d (%s): unix socket connected to a peer outside the "
                            "tree (socket:[%u]) %s, which --ext-unix-sk cannot connect to again",
                            f->pid, f->fd, f->path, u->peer,
                            !pr          ? "in another network namespace"
                            : !n || !len ? "with no name"
                                         : "bound to a relative path");
  memcpy(u->ext, n, len);
  u->extlen = (int)len;
  return 0;
}

/* Does this process hold capability CAP in its effective set (over its
   own user namespace: crest as root of a user namespace of its own)? */
static bool
cap_here(int cap)
{
  struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
  struct __user_cap_data_struct d[2];
  return syscall(SYS_capget, &h, d) == 0 && (d[cap / 32].effective >> (cap % 32) & 1);
}

/* U's socket file: the restore binds it as the container's root, or as
   the user of the restoring crest, and then gives it its owner, which
   that one must be allowed to. */
static int
owner_check(struct dctx *c, struct dfile *f, const struct usk *u, crest_error_t *err)
{
  long iu, ig;
  if (!u->has_owner)
    return 0;
  iu = inner_id(c, &c->uidmap, u->ouid), ig = inner_id(c, &c->gidmap, u->ogid);
  if (c->o->root_is_ns_init && c->o->no_chown_cap && c->o->no_setid_cap && (iu || ig))
    return crest_error_make(err, ENOTSUP,
                            "task %d: fd %d: unix socket bound to %.*s, whose file belongs to "
                            "%ld:%ld: a restore gives it that owner with CAP_SETUID and "
                            "CAP_SETGID, or CAP_CHOWN, and the container's config gives neither",
                            f->pid, f->fd, u->namelen, (const char *)u->name, iu, ig);
  if (!c->o->root_is_ns_init && u->ouid != geteuid() && !cap_here(CAP_CHOWN)
      && !cap_here(CAP_SETUID))
    return crest_error_make(err, ENOTSUP,
                            "task %d: fd %d: unix socket bound to %.*s, whose file belongs to "
                            "UID %u, which a restore by UID %u could not give it",
                            f->pid, f->fd, u->namelen, (const char *)u->name, (unsigned)u->ouid,
                            (unsigned)geteuid());
  return 0;
}

static int
resolve_peer(struct dctx *c, struct dfile *f, struct usk *u, crest_error_t *err)
{
  /* Waiting in a backlog: the listener shows the client's inode (the
     connection's own socket has none), and what the client sent it counts
     in the client's send queue, which crest cannot read. */
  if ((u->backlog_of = backlog_holder(c, u->ino, &u->backlog_pos)) >= 0)
    {
      /* A passing state: the program accepts it soon (tried again). */
      if (u->wqueue)
        return crest_error_make(
            err, EAGAIN,
            "task %d: fd %d (%s): data sent on a connection not accepted yet (%u bytes "
            "of buffers), cannot checkpoint it",
            f->pid, f->fd, f->path, u->wqueue);
      return 0;
    }
  if (!u->peer)
    {
      u->peer_gone = u->type != SOCK_DGRAM && u->state == TCP_ESTABLISHED;
      return 0;
    }
  if ((u->peer_file = file_of_ino(c, u->peer)) >= 0)
    return 0;
  if (c->o->ext_unix_sk)
    return resolve_ext(f, u, err);
  return crest_error_make(err, ENOTSUP,
                          "task %d: fd %d (%s): unix socket connected to a peer outside the tree "
                          "(socket:[%u]), cannot checkpoint it (--ext-unix-sk: connect again to "
                          "its name at restore)",
                          f->pid, f->fd, f->path, u->peer);
}

/* An accepted socket carries its listener's name. */
/* Does a listener outside the tree (in the sockets of its network
   namespace, sock_diag) have U's name? 1 yes, 0 no, -1 the query failed. */
static int
listened_outside(struct dctx *c, pid_t pid, const struct usk *u, crest_error_t *err)
{
  const struct sk_diag_set *s;
  if (diag_get(c, pid, err) < 0)
    return -1;
  s = &diag.s;
  for (size_t i = 0; i < s->n; i++)
    {
      const struct unix_diag_msg *m = (const void *)s->r[i].msg;
      size_t len = 0;
      const uint8_t *n = uattr(&s->r[i], UNIX_DIAG_NAME, &len);
      if (m->udiag_state == TCP_LISTEN && n && (int)len == u->namelen
          && memcmp(n, u->name, len) == 0)
        return 1;
    }
  return 0;
}

static int
resolve_names(struct dctx *c, struct dfile *f, struct usk *u, crest_error_t *err)
{
  const struct usk *p = u->peer_file >= 0 ? c->f[u->peer_file].priv : NULL;
  /* A stream whose peer closed may have been accepted too (a client's
     request, then its close, not read yet). */
  if (u->state == TCP_LISTEN || u->type == SOCK_DGRAM || !u->namelen || (!p && !u->peer_gone))
    return 0;
  if ((u->accept_from = file_of_name(c, u->name, u->namelen, true)) >= 0)
    return 0;
  if (p && p->namelen && file_of_name(c, p->name, p->namelen, true) >= 0)
    return 0; /* its peer is the accepted one: it was bound, then connected */
  /* The listener is gone: made again for the moment at restore, where
     its name is abstract or an absolute path and no listener outside the
     tree has it now (its connections would go there). */
  if (u->name[0] == 0 || u->name[0] == '/')
    {
      int out = listened_outside(c, f->pid, u, err);
      if (out < 0)
        return -1;
      if (!out)
        {
          u->accept_gone = true;
          return 0;
        }
    }
  return crest_error_make(err, ENOTSUP,
                          "task %d: fd %d (%s): a connection accepted from a unix socket listener "
                          "that is no longer in the tree, %s, cannot checkpoint it",
                          f->pid, f->fd, f->path,
                          u->name[0] == 0 || u->name[0] == '/'
                              ? "whose name another listener outside the tree has"
                              : "bound to a relative path");
}

/* An unbound socket of the tree connected to INO: a datagram without a
   sender address came from one (which one, the receiver cannot tell). */
static int
unnamed_sender(const struct dctx *c, uint32_t ino)
{
  for (size_t i = 0; i < c->nf; i++)
    if (c->f[i].ops == &fd_unix_ops && ((struct usk *)c->f[i].priv)->peer == ino
        && !((struct usk *)c->f[i].priv)->namelen)
      return (int)i;
  return -1;
}

static pid_t
cred_in_tree(const struct dctx *c, pid_t pid);

/* A queued message's sender credentials, which the socket reads
   (SO_PASSCRED): given again at restore by a process of that PID, they
   need one the tree's namespace numbers; a pidfd of the sender
   (SO_PASSPIDFD) would name that short-lived process, not the sender. */
static int
check_msg_cred(const struct dctx *c, const struct dfile *f, const struct usk *u,
               const struct umsg *m, crest_error_t *err)
{
  if (u->opts.have[SKO_PASSPIDFD] && u->opts.v[SKO_PASSPIDFD] > 0)
    return crest_error_make(err, ENOTSUP,
                            "task %d: fd %d (%s): messages queued on a unix socket that receives "
                            "their senders as pidfds (SO_PASSPIDFD), which a restore cannot give "
                            "again, cannot checkpoint it",
                            f->pid, f->fd, f->path);
  if (m->has_cred && cred_in_tree(c, m->cred.pid) <= 0)
    return crest_error_make(err, ENOTSUP,
                            "task %d: fd %d (%s): a message queued by PID %d, which has no "
                            "number in the tree's PID namespace: its sender's credentials "
                            "(SO_PASSCRED) cannot be given again, cannot checkpoint it",
                            f->pid, f->fd, f->path, (int)m->cred.pid);
  return 0;
}

static int
resolve_senders(struct dctx *c, struct dfile *f, struct usk *u, crest_error_t *err)
{
  for (size_t i = 0; i < u->nq; i++)
    {
      struct umsg *m = &u->q[i];
      if (check_msg_cred(c, f, u, m, err) < 0)
        return -1;
      const struct usk *pu = u->peer_file >= 0 ? c->f[u->peer_file].priv : NULL;
      if (u->type != SOCK_DGRAM)
        m->sender = u->peer_file;
      else if (m->fromlen)
        m->sender = file_of_name(c, m->from, m->fromlen, false);
      else if (pu && !pu->namelen && pu->peer == u->ino)
        m->sender = u->peer_file;
      else
        m->sender = unnamed_sender(c, u->ino);
      if (m->sender < 0 && u->type == SOCK_DGRAM && !m->fromlen && u->namelen
          && (u->name[0] == 0 || u->name[0] == '/'))
        m->anon = true;
      if (m->sender < 0 && !m->anon && !(u->peer_gone && u->type != SOCK_DGRAM))
        return crest_error_make(
            err, ENOTSUP,
            "task %d: fd %d (%s): data queued by a unix socket not in the tree (outside it, "
            "or closed since), cannot checkpoint it",
            f->pid, f->fd, f->path);
      if (u->type == SOCK_DGRAM && m->sender >= 0 && !u->namelen
          && ((struct usk *)c->f[m->sender].priv)->peer != u->ino)
        return crest_error_make(
            err, ENOTSUP,
            "task %d: fd %d (%s): a datagram queued on an unbound socket by one not "
            "connected to it, cannot checkpoint it",
            f->pid, f->fd, f->path);
    }
  return 0;
}

static int
unix_resolve(struct dctx *c, struct dfile *f, crest_error_t *err)
{
  struct usk *u = f->priv;
  const struct usk *p;
  if (owner_check(c, f, u, err) < 0 || resolve_peer(c, f, u, err) < 0
      || resolve_names(c, f, u, err) < 0 || resolve_backlog(c, f, u, err) < 0)
    return -1;
  p = u->peer_file >= 0 ? c->f[u->peer_file].priv : NULL;
  if (p && u->type == SOCK_DGRAM && !p->namelen && p->peer != u->ino)
    return crest_error_make(err, ENOTSUP,
                            "task %d: fd %d (%s): a datagram socket connected to an unbound one, "
                            "cannot checkpoint it",
                            f->pid, f->fd, f->path);
  return resolve_senders(c, f, u, err);
}

static const char *
type_name(int t)
{
  return t == SOCK_STREAM ? "stream" : t == SOCK_DGRAM ? "dgram" : "seqpacket";
}

/* A unix socket's SO_PEERCRED PID as the tree sees it: a process of the
   tree by its recorded PID; another where the tree shares crest's PID
   namespace (process mode: a process outside, or one gone); 0 where there
   is none (never connected) or it has no number in the tree's namespace. */
static pid_t
cred_in_tree(const struct dctx *c, pid_t pid)
{
  if (pid <= 0)
    return 0;
  for (size_t i = 0; i < c->np; i++)
    if (c->p[i].pid == pid)
      return c->p[i].ipid;
  return c->o->root_is_ns_init ? 0 : pid;
}

static void
unix_write(struct dctx *c, const struct dfile *f, yajl_gen g)
{
  const struct usk *u = f->priv;
  pid_t cred = cred_in_tree(c, u->cred);
  jput_str(g, "sotype", type_name(u->type));
  jput_bool(g, "listening", u->state == TCP_LISTEN);
  jput_int(g, "backlog", u->backlog);
  jput_hex(g, "name", u->name, u->namelen);
  jput_bool(g, "unlinked", u->unlinked);
  if (u->movedlen)
    {
      jput_hex(g, "moved", (const uint8_t *)u->moved, u->movedlen);
      if (c->w->format < CREST_IMAGE_FORMAT_UNIX_MOVED)
        c->w->format = CREST_IMAGE_FORMAT_UNIX_MOVED;
    }
  if (u->base[0])
    {
      jput_str(g, "base", u->base);
      if (c->w->format < CREST_IMAGE_FORMAT_UNIX_BASE)
        c->w->format = CREST_IMAGE_FORMAT_UNIX_BASE;
    }
  jput_int(g, "mode", u->mode);
  if (u->has_owner)
    {
      jput_int(g, "uid", inner_id(c, &c->uidmap, u->ouid));
      jput_int(g, "gid", inner_id(c, &c->gidmap, u->ogid));
      if (c->w->format < CREST_IMAGE_FORMAT_UNIX_OWNER)
        c->w->format = CREST_IMAGE_FORMAT_UNIX_OWNER;
    }
  jput_int(g, "peer", u->peer_file);
  jput_bool(g, "peer_gone", u->peer_gone);
  jput_hex(g, "ext_peer", u->ext, u->extlen);
  jput_int(g, "accept_from", u->accept_from);
  if (u->accept_gone)
    {
      jput_bool(g, "accept_gone", true);
      if (c->w->format < CREST_IMAGE_FORMAT_UNIX_ACCEPT_GONE)
        c->w->format = CREST_IMAGE_FORMAT_UNIX_ACCEPT_GONE;
    }
  jput_int(g, "backlog_of", u->backlog_of);
  jput_int(g, "backlog_pos", u->backlog_pos);
  jput_int(g, "shutdown", u->shutdown);
  if (cred > 0)
    {
      jput_int(g, "cred_pid", cred);
      if (c->w->format < CREST_IMAGE_FORMAT_UNIX_CRED)
        c->w->format = CREST_IMAGE_FORMAT_UNIX_CRED;
    }
  sk_opts_put(g, &u->opts);
  jput_key(g, "queue");
  yajl_gen_array_open(g);
  for (size_t i = 0; i < u->nq; i++)
    {
      yajl_gen_map_open(g);
      jput_int(g, "sender", u->q[i].sender);
      jput_hex(g, "data", u->q[i].data, u->q[i].len);
      if (u->q[i].anon)
        {
          jput_bool(g, "anon", true);
          if (c->w->format < CREST_IMAGE_FORMAT_UNIX_ANON_DGRAM)
            c->w->format = CREST_IMAGE_FORMAT_UNIX_ANON_DGRAM;
        }
      if (u->q[i].has_cred)
        {
          /* As the tree sees them (resolve_senders checked the PID). */
          jput_int(g, "cred_pid", cred_in_tree(c, u->q[i].cred.pid));
          jput_int(g, "cred_uid", inner_id(c, &c->uidmap, u->q[i].cred.uid));
          jput_int(g, "cred_gid", inner_id(c, &c->gidmap, u->q[i].cred.gid));
          if (c->w->format < CREST_IMAGE_FORMAT_UNIX_MSG_CRED)
            c->w->format = CREST_IMAGE_FORMAT_UNIX_MSG_CRED;
        }
      yajl_gen_map_close(g);
    }
  yajl_gen_array_close(g);
}

/* --- restore --- */

struct ursk
{
  int type;
  bool listening, unlinked, peer_gone;
  int backlog;
  uint8_t *name;
  size_t namelen;
  uint8_t *moved; /* format 20: renamed there at the end (NUL-terminated) */
  size_t movedlen;
  char *base; /* format 20: the directory a relative name is bound from */
  int mode;
  bool has_owner; /* format 23: the socket file's owner */
  int uid, gid;
  int peer, accept_from, backlog_of, backlog_pos, shutdown;
  bool accept_gone; /* format 22 */
  struct sk_opts opts;
  struct rumsg
  {
    int sender;
    uint8_t *data;
    size_t len;
    bool has_cred; /* format 22: its sender's credentials */
    bool anon;     /* format 22: sent by no socket of the tree, unbound */
    struct ucred cred;
  } * q;
  size_t nq;
  uint8_t *ext; /* the outside peer's name (--ext-unix-sk) */
  size_t extlen;
  int fd;     /* made, not yet placed: -1 */
  int gone;   /* the other end of a peer_gone pair, closed after the queue */
  pid_t cred; /* the PID SO_PEERCRED named (0: none recorded) */
};

static int
get_int(yajl_val v, const char *k, int lo, int hi, int *out, crest_error_t *err)
{
  int64_t x;
  if (jget_i64(v, k, &x, err) < 0)
    return -1;
  if (x < lo || x > hi)
    return crest_error_make(err, EINVAL, "key \"%s\": %lld out of range", k, (long long)x);
  *out = (int)x;
  return 0;
}

static int
parse_queue(yajl_val v, struct ursk *u, int nf, crest_error_t *err)
{
  yajl_val *items;
  long n = jget_array(v, "queue", &items, err);
  size_t total = 0;
  if (n < 0)
    return -1;
  u->q = xzalloc((n ? n : 1) * sizeof *u->q);
  for (long i = 0; i < n; i++)
    {
      if (get_int(items[i], "sender", -1, nf - 1, &u->q[i].sender, err) < 0
          || jget_hex_alloc(items[i], "data", QUEUE_MAX, &u->q[i].data, &u->q[i].len, err) < 0)
        return crest_error_wrap(err, "queue entry %ld", i);
      u->nq++; /* its data is the record's, to release */
      if (yajl_tree_get(items[i], (const char *[]){ "anon", NULL }, yajl_t_any)
          && (jget_bool(items[i], "anon", &u->q[i].anon, err) < 0
              || (u->q[i].anon && u->q[i].sender != -1)))
        return *err ? crest_error_wrap(err, "queue entry %ld", i)
                    : crest_error_make(err, EINVAL, "queue entry %ld: a bad \"anon\"", i);
      if (yajl_tree_get(items[i], (const char *[]){ "cred_pid", NULL }, yajl_t_any))
        {
          int pid, uid, gid;
          if (get_int(items[i], "cred_pid", 1, PID_MAX, &pid, err) < 0
              || get_int(items[i], "cred_uid", 0, INT32_MAX, &uid, err) < 0
              || get_int(items[i], "cred_gid", 0, INT32_MAX, &gid, err) < 0)
            return crest_error_wrap(err, "queue entry %ld", i);
          u->q[i].has_cred = true;
          u->q[i].cred = (struct ucred){ (pid_t)pid, (uid_t)uid, (gid_t)gid };
        }
      if ((total += u->q[i].len) > QUEUE_MAX)
        return crest_error_make(err, EINVAL, "queue over %u bytes", QUEUE_MAX);
    }
  return 0;
}

static int
unix_parse(struct rctx *c, yajl_val v, struct rfile *f, crest_error_t *err)
{
  struct ursk *u = xzalloc(sizeof *u);
  const char *t;
  int nf = (int)c->nf;
  f->priv = u;
  u->fd = u->gone = -1;
  if (jget_str(v, "sotype", &t, err) < 0 || jget_bool(v, "listening", &u->listening, err) < 0
      || get_int(v, "backlog", 0, 1 << 20, &u->backlog, err) < 0
      || jget_hex_alloc(v, "name", UNAME_MAX, &u->name, &u->namelen, err) < 0
      || jget_bool(v, "unlinked", &u->unlinked, err) < 0
      || get_int(v, "mode", 0, 07777, &u->mode, err) < 0
      || get_int(v, "peer", -1, nf - 1, &u->peer, err) < 0
      || jget_bool(v, "peer_gone", &u->peer_gone, err) < 0
      || jget_hex_alloc(v, "ext_peer", UNAME_MAX, &u->ext, &u->extlen, err) < 0
      || get_int(v, "accept_from", -1, nf - 1, &u->accept_from, err) < 0
      || get_int(v, "backlog_of", -1, nf - 1, &u->backlog_of, err) < 0
      || get_int(v, "backlog_pos", 0, 1 << 20, &u->backlog_pos, err) < 0
      || get_int(v, "shutdown", 0, 3, &u->shutdown, err) < 0 || sk_opts_parse(v, &u->opts, err) < 0
      || parse_queue(v, u, nf, err) < 0
      || (yajl_tree_get(v, (const char *[]){ "moved", NULL }, yajl_t_any)
          && jget_hex_alloc(v, "moved", UNAME_MAX - 1, &u->moved, &u->movedlen, err) < 0))
    return crest_error_wrap(err, "file %d (unix socket)", f->id);
  {
    const char *b = NULL;
    if (yajl_tree_get(v, (const char *[]){ "base", NULL }, yajl_t_any)
        && jget_str(v, "base", &b, err) < 0)
      return crest_error_wrap(err, "file %d (unix socket)", f->id);
    if (b && (b[0] != '/' || !u->namelen || u->name[0] == '/' || u->name[0] == 0))
      return crest_error_make(err, EINVAL, "file %d (unix socket): a bad \"base\"", f->id);
    u->base = b ? xstrdup(b) : NULL;
  }
  if (u->moved)
    {
      uint8_t *m = xrealloc(u->moved, u->movedlen + 1);
      m[u->movedlen] = 0;
      u->moved = m;
      if (!u->unlinked || u->movedlen < 2 || m[0] != '/' || memchr(m, 0, u->movedlen))
        return crest_error_make(err, EINVAL, "file %d (unix socket): a bad \"moved\"", f->id);
    }
  if (yajl_tree_get(v, (const char *[]){ "accept_gone", NULL }, yajl_t_any)
      && (jget_bool(v, "accept_gone", &u->accept_gone, err) < 0
          || (u->accept_gone
              && (u->accept_from >= 0 || u->listening || !u->namelen
                  || (u->name[0] != 0 && u->name[0] != '/')))))
    return *err ? crest_error_wrap(err, "file %d (unix socket)", f->id)
                : crest_error_make(err, EINVAL, "file %d (unix socket): a bad \"accept_gone\"",
                                   f->id);
  if (yajl_tree_get(v, (const char *[]){ "uid", NULL }, yajl_t_any))
    {
      if (get_int(v, "uid", 0, INT32_MAX, &u->uid, err) < 0
          || get_int(v, "gid", 0, INT32_MAX, &u->gid, err) < 0)
        return crest_error_wrap(err, "file %d (unix socket)", f->id);
      u->has_owner = true;
    }
  {
    crest_error_t e2 = NULL;
    int64_t cred;
    if (jget_i64(v, "cred_pid", &cred, &e2) == 0)
      {
        if (cred < 1 || cred > PID_MAX)
          return crest_error_make(err, EINVAL, "file %d: cred_pid %lld out of range", f->id,
                                  (long long)cred);
        u->cred = (pid_t)cred;
      }
    crest_error_release(&e2);
  }
  u->type = strcmp(t, "stream") == 0      ? SOCK_STREAM
            : strcmp(t, "dgram") == 0     ? SOCK_DGRAM
            : strcmp(t, "seqpacket") == 0 ? SOCK_SEQPACKET
                                          : -1;
  if (u->type < 0)
    return crest_error_make(err, EINVAL, "file %d: unix socket type \"%s\"", f->id, t);
  for (size_t i = 0; i < u->nq; i++)
    if (u->q[i].anon && (u->type != SOCK_DGRAM || !u->namelen))
      return crest_error_make(err, EINVAL,
                              "file %d: an \"anon\" datagram on a socket that has none", f->id);
  u->name = xrealloc(u->name, u->namelen + 1);
  u->name[u->namelen] = 0;
  if (u->namelen && u->name[0] && strlen((const char *)u->name) + 1 < u->namelen)
    return crest_error_make(err, EINVAL, "file %d: a unix socket path with a NUL", f->id);
  if (u->namelen && u->name[0] && u->name[0] != '/' && !u->base)
    return crest_error_make(err, EINVAL, "file %d: a unix socket path not absolute", f->id);
  return 0;
}

/* The unix socket record of file ID (checked: a unix socket), or NULL. */
static struct ursk *
ur(struct rctx *c, int id)
{
  return id >= 0 && (size_t)id < c->nf && c->f[id].ops == &fd_unix_ops ? c->f[id].priv : NULL;
}

static socklen_t
uaddr(const struct ursk *u, struct sockaddr_un *a)
{
  memset(a, 0, sizeof *a);
  a->sun_family = AF_UNIX;
  memcpy(a->sun_path, u->name, u->namelen);
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + u->namelen);
}

static const char *
uname_text(const struct ursk *u, char *buf, size_t size)
{
  snprintf(buf, size, "%s%.*s", u->name[0] ? "" : "@", (int)u->namelen - (u->name[0] ? 0 : 1),
           u->name + (u->name[0] ? 0 : 1));
  return buf;
}

/* Is the socket file at A (LEN) stale: is no socket bound to it? Asked by
   a datagram socket's connect, which a live socket of another type
   answers with EPROTOTYPE and a live datagram socket takes without a
   word: a stream socket's connect would have queued a connection on a
   live listener, which its server then accepted and saw closed (helper
   finding, December 2026: a restore that failed on the name it found
   taken broke a running server's unix-socket thread). */
static bool
stale(const struct sockaddr_un *a, socklen_t len)
{
  cleanup_close int t = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  return t >= 0 && connect(t, (const struct sockaddr *)a, len) < 0 && errno == ECONNREFUSED;
}

/* FD bound to A (LEN), U's name, its socket file given U's mode and
   owner: made as that owner (setfsuid, setfsgid: CAP_SETUID and
   CAP_SETGID, which a container whose tasks run as other users gives),
   else given it (lchown: CAP_CHOWN). Until December 2026 it stayed the
   restorer's, and a server's workers of another user could no longer
   connect to it (Apache's mod_cgid, whose daemon chowns its socket to
   the workers' user: every CGI request failed). */
static int
bind_owned(const struct ursk *u, int fd, const struct sockaddr_un *a, socklen_t len,
           crest_error_t *err)
{
  char nb[120];
  struct stat st;
  bool path = u->name[0] != 0, as_owner = false;
  uid_t fu = 0;
  gid_t fg = 0;
  int rc = 0, b = -1;
  int dumpable = prctl(PR_GET_DUMPABLE);
  if (path && u->has_owner && ((uid_t)u->uid != geteuid() || (gid_t)u->gid != getegid()))
    {
      fg = (gid_t)setfsgid((gid_t)u->gid);
      fu = (uid_t)setfsuid((uid_t)u->uid);
      as_owner = true;
    }
  /* A socket file left by the checkpointed tree, which nothing answers
     at: asked as its owner, whose mode may let no one else connect. */
  if (path && lstat(a->sun_path, &st) == 0 && S_ISSOCK(st.st_mode) && stale(a, len))
    unlink(a->sun_path);
  /* As the owner, the directory may not let it in (a root server that
     gave its socket away): then as the restorer, and given after. */
  if (as_owner && (b = bind(fd, (const struct sockaddr *)a, len)) < 0)
    {
      setfsuid(fu);
      setfsgid(fg);
      as_owner = false;
    }
  if (b < 0 && bind(fd, (const struct sockaddr *)a, len) < 0)
    rc = crest_error_errno(err, "bind to %s", uname_text(u, nb, sizeof nb));
  else if (path && chmod(a->sun_path, u->mode) < 0 && !as_owner)
    rc = crest_error_errno(err, "chmod %s", a->sun_path);
  if (as_owner)
    {
      setfsuid(fu);
      setfsgid(fg);
    }
  /* A change of the file system IDs made the process not dumpable, and
     the restore's tracer could no longer seize it. */
  if (dumpable > 0 && prctl(PR_GET_DUMPABLE) != dumpable)
    prctl(PR_SET_DUMPABLE, dumpable);
  if (rc < 0 || !path || !u->has_owner || lstat(a->sun_path, &st) < 0)
    return rc;
  if ((st.st_uid != (uid_t)u->uid || st.st_gid != (gid_t)u->gid)
      && lchown(a->sun_path, (uid_t)u->uid, (gid_t)u->gid) < 0)
    return crest_error_errno(err, "give %s its owner %d:%d", a->sun_path, u->uid, u->gid);
  if ((st.st_mode & 07777) != (mode_t)u->mode && chmod(a->sun_path, u->mode) < 0)
    return crest_error_errno(err, "chmod %s", a->sun_path);
  return 0;
}

/* A socket bound to its name and renamed since (format 20 "moved"): its
   file renamed there once every connection to the name is made. What is
   there already must be a stale socket file (the checkpointed tree's);
   a live socket's (the original's, with --leave-running) or another file
   is not replaced: the restore fails in one line. */
static int
move_bound(struct ursk *u, crest_error_t *err)
{
  struct sockaddr_un a = { .sun_family = AF_UNIX };
  struct stat st;
  memcpy(a.sun_path, u->moved, u->movedlen + 1);
  if (lstat(a.sun_path, &st) == 0 && (!S_ISSOCK(st.st_mode) || !stale(&a, sizeof a)))
    return crest_error_make(err, EEXIST, "move the socket to %s, as it was: %s is there",
                            a.sun_path, S_ISSOCK(st.st_mode) ? "a live socket" : "another file");
  if (rename((const char *)u->name, a.sun_path) < 0)
    return crest_error_errno(err, "rename %s to %s", (const char *)u->name, a.sun_path);
  return 0;
}

/* --- made by the process SO_PEERCRED names ---
   SO_PEERCRED names the process that made a pair (socketpair), that
   listened (for the sockets that connect to the listener), or that
   connected (for the socket accept returns). crest makes each again in a
   short-lived child of that PID sharing its descriptors (run_as_pid):
   before any task of the tree exists, its PIDs are free. A PID taken by
   another process (process mode: a process outside the tree) cannot be
   had: crest makes it itself, as before format 18 (docs/engine.md). */
enum
{
  AS_PAIR,
  AS_LISTEN,
  AS_CONNECT
};
struct as_op
{
  int what, fd, type, backlog;
  int a, b; /* AS_PAIR: the descriptors the pair's ends take */
  struct sockaddr_un addr;
  socklen_t len;
};

/* O, in whichever process: 0 or an errno. */
static int
as_op_run(const void *arg)
{
  const struct as_op *o = arg;
  int sv[2];
  switch (o->what)
    {
    case AS_PAIR:
      if (socketpair(AF_UNIX, o->type | SOCK_CLOEXEC, 0, sv) < 0)
        return errno;
      if (dup3(sv[0], o->a, O_CLOEXEC) < 0 || dup3(sv[1], o->b, O_CLOEXEC) < 0)
        return errno;
      close(sv[0]);
      close(sv[1]);
      return 0;
    case AS_LISTEN:
      return listen(o->fd, o->backlog) < 0 ? errno : 0;
    default:
      return connect(o->fd, (const struct sockaddr *)&o->addr, o->len) < 0 ? errno : 0;
    }
}

/* O done by PID (0: none recorded, crest itself); -1 with errno. */
static int
as_cred(struct rctx *c, pid_t pid, const struct as_op *o)
{
  int e;
  if (pid > 0 && pid != getpid())
    {
      if (run_as_pid(c, pid, as_op_run, o) == 0)
        return 0;
      if (errno != EEXIST && errno != EBUSY)
        return -1;
      /* Process mode: the process outside the tree that made the socket
         still runs. Not silent: the restored socket names another PID. */
      crest_warn("restore: PID %d, which a unix socket's SO_PEERCRED named (the process that "
                 "made it, outside the tree), is taken: the socket names crest's PID %d instead",
                 pid, (int)getpid());
    }
  e = as_op_run(o);
  errno = e;
  return e ? -1 : 0;
}

/* A pair of TYPE in SV, made by PID. */
static int
pair_as(struct rctx *c, int type, pid_t pid, int sv[2])
{
  struct as_op o = { .what = AS_PAIR, .type = type, .a = -1, .b = -1 };
  int e;
  if (pid <= 0 || pid == getpid())
    return socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv);
  /* The numbers the ends take, held meanwhile. */
  if ((o.a = eventfd(0, EFD_CLOEXEC)) < 0 || (o.b = eventfd(0, EFD_CLOEXEC)) < 0
      || as_cred(c, pid, &o) < 0)
    {
      e = errno;
      if (o.a >= 0)
        close(o.a);
      if (o.b >= 0)
        close(o.b);
      errno = e;
      return -1;
    }
  sv[0] = o.a, sv[1] = o.b;
  return 0;
}

/* A relative name (U->base) is bound, connected to, sent to, moved and
   removed from its base directory: entered for the call, then left for
   the directory crest was in (*SAVED). */
static int
base_enter(const struct ursk *u, int *saved, crest_error_t *err)
{
  *saved = -1;
  if (!u || !u->base)
    return 0;
  if ((*saved = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
    return crest_error_errno(err, "open the working directory");
  if (chdir(u->base) < 0)
    {
      int e = errno;
      close(*saved);
      *saved = -1;
      errno = e;
      return crest_error_errno(err, "enter %s, the directory of a relative socket name", u->base);
    }
  return 0;
}

static void
base_leave(int saved)
{
  if (saved < 0)
    return;
  if (fchdir(saved) < 0)
    crest_warn("restore: back to the working directory: %s", strerror(errno));
  close(saved);
}

/* A new socket of U's type, bound to its name (a stale socket file left
   at the path by the checkpointed tree is removed first; one a live socket
   holds, as the original's with --leave-running, is left: bind fails). */
static int
make_bound_here(struct rctx *c, struct ursk *u, crest_error_t *err);

static int
make_bound(struct rctx *c, struct ursk *u, crest_error_t *err)
{
  int saved, rc;
  if (base_enter(u, &saved, err) < 0)
    return -1;
  rc = make_bound_here(c, u, err);
  base_leave(saved);
  return rc;
}

static int
make_bound_here(struct rctx *c, struct ursk *u, crest_error_t *err)
{
  struct sockaddr_un a;
  socklen_t len = uaddr(u, &a);
  char nb[120];
  int fd = socket(AF_UNIX, u->type | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return crest_error_errno(err, "socket");
  if (!u->namelen)
    return u->fd = fd;
  if (bind_owned(u, fd, &a, len, err) < 0)
    {
      close(fd);
      return -1;
    }
  if (u->listening
      && as_cred(c, u->cred, &(struct as_op){ .what = AS_LISTEN, .fd = fd, .backlog = u->backlog })
             < 0)
    {
      crest_error_errno(err, "listen on %s", uname_text(u, nb, sizeof nb));
      close(fd);
      return -1;
    }
  return u->fd = fd;
}

/* FD connected to TO's name by PID (0: by crest). */
static int
connect_as(struct rctx *c, pid_t pid, int fd, const struct ursk *to, crest_error_t *err)
{
  struct as_op o = { .what = AS_CONNECT, .fd = fd };
  char nb[120];
  int saved, rc;
  o.len = uaddr(to, &o.addr);
  if (base_enter(to, &saved, err) < 0)
    return -1;
  rc = as_cred(c, pid, &o);
  base_leave(saved);
  if (rc < 0)
    return crest_error_errno(err, "connect to %s", uname_text(to, nb, sizeof nb));
  return 0;
}

static int
connect_to(int fd, const struct ursk *to, crest_error_t *err)
{
  return connect_as(NULL, 0, fd, to, err);
}

/* The end that connects for U, an accepted end: its peer P (made now
   where it is not yet), or, the peer closed (P NULL), a socket of crest's,
   closed once U's queue is in (U->gone). -1 on failure. */
static int
client_end(struct rctx *c, struct ursk *u, struct ursk *p, crest_error_t *err)
{
  if (p)
    return p->fd >= 0 || make_bound(c, p, err) >= 0 ? p->fd : -1;
  if ((u->gone = socket(AF_UNIX, u->type | SOCK_CLOEXEC, 0)) < 0)
    return crest_error_errno(err, "socket");
  return u->gone;
}

/* U, accepted from a listener gone since, and P, its peer (NULL: it
   closed; a client of crest's then, closed once the queue is in): made
   through a listener of U's name for the moment, listening as the process
   P's SO_PEERCRED names, connected to as the one U's names; a socket file
   of a path name set aside meanwhile (the closed listener's) and put
   back. */
static int
accept_again(struct rctx *c, struct ursk *u, struct ursk *p, crest_error_t *err)
{
  struct ursk tmp = { .type = u->type, .name = u->name, .namelen = u->namelen };
  struct sockaddr_un a;
  socklen_t len = uaddr(u, &a);
  cleanup_free char *aside = NULL;
  char nb[120];
  int l = socket(AF_UNIX, u->type | SOCK_CLOEXEC, 0), rc = -1, cfd;
  bool moved = false;
  if (l < 0)
    return crest_error_errno(err, "socket");
  if (u->name[0])
    {
      aside = xasprintf("%s.crest-%d", a.sun_path, (int)getpid());
      if (rename(a.sun_path, aside) == 0)
        moved = true;
      else if (errno != ENOENT)
        {
          crest_error_errno(err, "set %s aside", a.sun_path);
          goto out;
        }
    }
  if (bind(l, (struct sockaddr *)&a, len) < 0)
    {
      crest_error_errno(err, "bind to %s (its listener gone)", uname_text(u, nb, sizeof nb));
      goto out;
    }
  if (as_cred(c, p ? p->cred : 0, &(struct as_op){ .what = AS_LISTEN, .fd = l, .backlog = 1 }) < 0)
    crest_error_errno(err, "listen on %s", uname_text(u, nb, sizeof nb));
  else if ((cfd = client_end(c, u, p, err)) >= 0 && connect_as(c, u->cred, cfd, &tmp, err) == 0)
    {
      if ((u->fd = accept4(l, NULL, NULL, SOCK_CLOEXEC)) < 0)
        crest_error_errno(err, "accept");
      else
        rc = 0;
    }
  if (u->name[0])
    unlink(a.sun_path);
out:
  close(l);
  if (moved && rename(aside, a.sun_path) < 0 && rc == 0)
    rc = crest_error_errno(err, "put %s back", a.sun_path);
  return rc;
}

/* Stream and seqpacket pairs, and peers gone. */
static int
make_pair(struct rctx *c, struct ursk *u, crest_error_t *err)
{
  struct ursk *p = ur(c, u->peer);
  int sv[2];
  if (u->fd >= 0)
    return 0;
  if (u->accept_from >= 0 && (p || u->peer_gone))
    {
      struct ursk *l = ur(c, u->accept_from);
      int cfd;
      if (!l)
        return crest_error_make(err, EINVAL, "its listener, file %d, is no unix socket",
                                u->accept_from);
      /* The accepted end's SO_PEERCRED names the process that connected. */
      if ((cfd = client_end(c, u, p, err)) < 0 || connect_as(c, u->cred, cfd, l, err) < 0)
        return -1;
      if ((u->fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC)) < 0)
        return crest_error_errno(err, "accept");
      return 0;
    }
  if (u->accept_gone && (p || u->peer_gone))
    return accept_again(c, u, p, err);
  if (p && (p->accept_from >= 0 || p->accept_gone))
    return make_pair(c, p, err);
  if (u->namelen || (p && p->namelen))
    return crest_error_make(err, EINVAL, "a named pair with no listener");
  if (pair_as(c, u->type, u->cred, sv) < 0)
    return crest_error_errno(err, "socketpair");
  u->fd = sv[0];
  if (p)
    p->fd = sv[1];
  else
    u->gone = sv[1];
  return 0;
}

/* Listeners and named sockets; then the connections. */
static int
make_all(struct rctx *c, crest_error_t *err)
{
  for (int pass = 0; pass < 4; pass++)
    for (size_t i = 0; i < c->nf; i++)
      {
        struct ursk *u = ur(c, (int)i), *p;
        if (!u || u->fd >= 0)
          continue;
        p = ur(c, u->peer);
        if (pass == 0 && (u->listening || (u->namelen && u->accept_from < 0 && !u->accept_gone))
            && make_bound(c, u, err) < 0)
          return crest_error_wrap(err, "file %zu (unix socket)", i);
        if (pass == 1 && u->type != SOCK_DGRAM && (p || u->peer_gone) && make_pair(c, u, err) < 0)
          return crest_error_wrap(err, "file %zu (unix socket)", i);
        if (pass == 2 && u->type == SOCK_DGRAM && p && !u->namelen && !p->namelen)
          {
            int sv[2];
            if (pair_as(c, SOCK_DGRAM, u->cred, sv) < 0)
              return crest_error_errno(err, "file %zu: socketpair", i);
            u->fd = sv[0], p->fd = sv[1];
          }
        if (pass == 3 && make_bound(c, u, err) < 0)
          return crest_error_wrap(err, "file %zu (unix socket)", i);
      }
  return 0;
}

/* Backlogs in their order, datagram connections. */
static int
connect_all(struct rctx *c, crest_error_t *err)
{
  for (int pos = 0; pos <= (1 << 20); pos++)
    {
      bool more = false;
      for (size_t i = 0; i < c->nf; i++)
        {
          struct ursk *u = ur(c, (int)i);
          if (!u || u->backlog_of < 0 || u->backlog_pos < pos)
            continue;
          more = true;
          if (u->backlog_pos == pos
              && (!ur(c, u->backlog_of) || connect_to(u->fd, ur(c, u->backlog_of), err) < 0))
            return crest_error_wrap(err, "file %zu (unix socket)", i);
        }
      if (!more)
        break;
    }
  for (size_t i = 0; i < c->nf; i++)
    {
      struct ursk *u = ur(c, (int)i), *p = u ? ur(c, u->peer) : NULL;
      if (u && u->type == SOCK_DGRAM && p && p->namelen && connect_to(u->fd, p, err) < 0)
        return crest_error_wrap(err, "file %zu (unix socket)", i);
      if (u && u->extlen)
        {
          struct ursk to = { .name = u->ext, .namelen = u->extlen };
          if (connect_to(u->fd, &to, err) < 0)
            return crest_error_wrap(err, "file %zu (unix socket, --ext-unix-sk)", i);
        }
    }
  return 0;
}

/* Room in sender FD's buffer for a stream's LEN queued bytes. The
   kernel charges each queued buffer's whole size to the sender, and cuts
   one send into other pieces than the program's writes made: a queue near
   the sender's SO_SNDBUF did not go back in (233,152 bytes of a default
   socketpair: "queue its 233152 bytes again (short)" until December 2026,
   after the checkpoint had ended the tree). Raised as far as the restore
   may (SO_SNDBUFFORCE with CAP_NET_ADMIN, else up to net.core.wmem_max);
   finish_all sets the socket's own size again once the queues are in. */
static void
stream_room(int fd, size_t len)
{
  int have = 0, half;
  socklen_t l = sizeof have;
  size_t want = 2 * len + (256u << 10);
  if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &have, &l) < 0 || (size_t)have >= want
      || want > INT32_MAX)
    return;
  half = (int)(want / 2);
  if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &half, sizeof half) < 0)
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &half, sizeof half);
}

/* Queued messages sent again with their sender's credentials
   (SCM_CREDENTIALS): by a process of that PID, since the kernel takes a
   PID only of the sender itself or of a process that exists, when the
   sender holds CAP_SYS_ADMIN over the PID namespace. A run of N messages
   (Q) of one sender's PID goes in one process. */
struct cred_send
{
  int fd, stream;
  const struct rumsg *q;
  size_t n;
  const struct sockaddr_un *to;
  socklen_t tolen;
};

/* S, in whichever process: 0 or an errno. */
static int
cred_send_run(const void *arg)
{
  const struct cred_send *s = arg;
  for (size_t k = 0; k < s->n; k++)
    {
      const struct rumsg *q = &s->q[k];
      size_t done = 0;
      do
        {
          union
          {
            struct cmsghdr h;
            uint8_t b[CMSG_SPACE(sizeof(struct ucred))];
          } cm;
          struct iovec iov = { (void *)(q->data + done), q->len - done };
          struct msghdr m = { .msg_name = (void *)s->to,
                              .msg_namelen = s->to ? s->tolen : 0,
                              .msg_iov = &iov,
                              .msg_iovlen = 1,
                              .msg_control = &cm,
                              .msg_controllen = sizeof cm };
          ssize_t n;
          memset(&cm, 0, sizeof cm);
          cm.h.cmsg_level = SOL_SOCKET;
          cm.h.cmsg_type = SCM_CREDENTIALS;
          cm.h.cmsg_len = CMSG_LEN(sizeof(struct ucred));
          memcpy(CMSG_DATA(&cm.h), &q->cred, sizeof q->cred);
          n = sendmsg(s->fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
          if (n <= 0)
            return n < 0 ? errno : EIO;
          done += (size_t)n;
        }
      while (s->stream && done < q->len);
      if (done != q->len)
        return EIO;
    }
  return 0;
}

/* S by the process of its PID: a short-lived child of that PID sharing
   crest's descriptors (the PIDs are free: no task of the tree exists
   yet), or crest itself, as that PID or where the PID is taken (process
   mode: a process outside the tree that sent it still runs; the kernel
   lets crest name it where crest holds CAP_SYS_ADMIN over the PID
   namespace). -1 with errno. */
static int
cred_send(struct rctx *c, const struct cred_send *s)
{
  int e;
  if (s->q[0].cred.pid != getpid())
    {
      if (run_as_pid(c, s->q[0].cred.pid, cred_send_run, s) == 0)
        return 0;
      if (errno != EEXIST && errno != EBUSY)
        return -1;
    }
  e = cred_send_run(s);
  errno = e;
  return e ? -1 : 0;
}

/* An unbound datagram socket of crest's, which sends the datagrams that
   came from no socket of the tree (their receiver sees no sender address
   either way); made once a restore, closed with the service range. */
static int anon_fd = -1;
static int
anon_sender(struct rctx *c, crest_error_t *err)
{
  int fd;
  if (anon_fd >= 0 && fcntl(anon_fd, F_GETFD) >= 0)
    return anon_fd;
  if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
    return crest_error_errno(err, "socket");
  return anon_fd = svc_place(c, fd, err);
}

static int
send_queue(struct rctx *c, int id, struct ursk *u, crest_error_t *err)
{
  for (size_t k = 0; k < u->nq; k++)
    {
      struct ursk *s = ur(c, u->q[k].sender);
      int fd = s ? s->fd : u->q[k].anon ? anon_sender(c, err) : u->gone;
      struct sockaddr_un a;
      socklen_t alen = uaddr(u, &a);
      bool to = u->type == SOCK_DGRAM && ((s && s->peer != id) || u->q[k].anon);
      ssize_t n;
      int saved = -1;
      if (fd < 0 && u->q[k].anon)
        return -1;
      if (fd < 0)
        return crest_error_make(err, EINVAL, "file %d: queued data with no sender", id);
      if (to && base_enter(u, &saved, err) < 0)
        return -1;
      /* With credentials: with the messages after it from the same sender
         and PID. */
      size_t run = 1, total = u->q[k].len;
      while (u->q[k].has_cred && k + run < u->nq && u->q[k + run].has_cred
             && u->q[k + run].sender == u->q[k].sender && u->q[k + run].anon == u->q[k].anon
             && u->q[k + run].cred.pid == u->q[k].cred.pid)
        total += u->q[k + run++].len;
      if (u->type == SOCK_STREAM)
        stream_room(fd, total);
      if (u->q[k].has_cred)
        {
          struct cred_send cs = { fd, u->type == SOCK_STREAM, &u->q[k], run, to ? &a : NULL, alen };
          int r = cred_send(c, &cs), e = errno;
          base_leave(saved);
          if (r < 0)
            return crest_error_sys(err, e,
                                   "file %d: queue its %zu bytes again as sent by PID %d, UID %d, "
                                   "GID %d (SO_PASSCRED)",
                                   id, total, (int)u->q[k].cred.pid, (int)u->q[k].cred.uid,
                                   (int)u->q[k].cred.gid);
          k += run - 1;
          continue;
        }
      n = sendto(fd, u->q[k].data, u->q[k].len, MSG_DONTWAIT | MSG_NOSIGNAL,
                 to ? (struct sockaddr *)&a : NULL, to ? alen : 0);
      /* A stream takes its bytes in as many sends as it needs. */
      while (u->type == SOCK_STREAM && n > 0 && (size_t)n < u->q[k].len)
        {
          ssize_t m
              = send(fd, u->q[k].data + n, u->q[k].len - (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
          if (m <= 0)
            break;
          n += m;
        }
      base_leave(saved);
      if (n != (ssize_t)u->q[k].len)
        return crest_error_sys(err, n < 0 ? errno : EIO, "file %d: queue its %zu bytes again%s", id,
                               u->q[k].len, n < 0 ? "" : " (short)");
    }
  return 0;
}

static int
finish_all(struct rctx *c, crest_error_t *err)
{
  for (size_t i = 0; i < c->nf; i++)
    {
      struct ursk *u = ur(c, (int)i);
      if (u
          && (sk_opts_apply(u->fd, &u->opts, SKO_ALL & ~SKO_BIT(SKO_PEEK_OFF), err) < 0
              || send_queue(c, (int)i, u, err) < 0))
        return crest_error_wrap(err, "file %zu (unix socket)", i);
    }
  /* Each sender's own SO_SNDBUF again (stream_room raised some). */
  for (size_t i = 0; i < c->nf; i++)
    {
      struct ursk *u = ur(c, (int)i);
      if (u && u->type == SOCK_STREAM
          && sk_opts_apply(u->fd, &u->opts, SKO_BIT(SKO_SNDBUF), err) < 0)
        return crest_error_wrap(err, "file %zu (unix socket)", i);
    }
  for (size_t i = 0; i < c->nf; i++)
    {
      struct ursk *u = ur(c, (int)i);
      if (!u)
        continue;
      if (u->gone >= 0)
        close(u->gone), u->gone = -1;
      if (!u->peer_gone
          && (((u->shutdown & 2) && shutdown(u->fd, SHUT_WR) < 0)
              || ((u->shutdown & 1) && shutdown(u->fd, SHUT_RD) < 0)))
        return crest_error_errno(err, "file %zu (unix socket): shutdown", i);
      if (u->unlinked && u->namelen && u->name[0])
        {
          int saved;
          if (base_enter(u, &saved, err) < 0)
            return crest_error_wrap(err, "file %zu (unix socket)", i);
          if (!u->moved)
            unlink((const char *)u->name);
          else if (move_bound(u, err) < 0)
            {
              base_leave(saved);
              return crest_error_wrap(err, "file %zu (unix socket)", i);
            }
          base_leave(saved);
        }
      if (sk_opts_apply(u->fd, &u->opts, SKO_BIT(SKO_PEEK_OFF), err) < 0)
        return crest_error_wrap(err, "file %zu (unix socket)", i);
      if ((c->f[i].flags & O_NONBLOCK) && fcntl(u->fd, F_SETFL, O_NONBLOCK) < 0)
        return crest_error_errno(err, "file %zu (unix socket): O_NONBLOCK", i);
    }
  return 0;
}

static int
unix_open(struct rctx *c, struct rfile *f, int flags, crest_error_t *err)
{
  struct ursk *u = f->priv;
  (void)flags;
  if (u->fd < 0)
    {
      /* The first unix socket of the image: make them all. */
      if (make_all(c, err) < 0 || connect_all(c, err) < 0 || finish_all(c, err) < 0)
        return -1;
    }
  if (file_place(c, f, u->fd, false, err) < 0)
    return crest_error_wrap(err, "file %d (unix socket)", f->id);
  u->fd = -2; /* placed: f->svc */
  return 0;
}

static void
unix_release(struct rfile *f)
{
  struct ursk *u = f->priv;
  for (size_t i = 0; i < u->nq; i++)
    free(u->q[i].data);
  free(u->q), free(u->name), free(u->ext), free(u->moved), free(u->base);
}

const struct fd_ops fd_unix_ops = {
  .type = "unix",
  .probe = unix_probe,
  .resolve = unix_resolve,
  .write = unix_write,
  .parse = unix_parse,
  .open = unix_open,
  .release = unix_release,
};
