/* crest: the descriptor walk (docs/engine.md, "Layout"): each descriptor of
 * each task, the open file descriptions they share (kcmp), their locks, and
 * the dispatch to the descriptor types of files.h, on both sides. */
#include <config.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "dump-int.h"
#include "files.h"
#include "image.h"
#include "image-check.h"
#include "log.h"
#include "restore-int.h"
#include "sockets.h"
#include "util.h"

/* Every descriptor type, in probe order: the first whose probe claims a
   descriptor takes it (files.h says how to add one). */
static const struct fd_ops *const fd_types[] = {
  /* Event descriptors first: they claim their anon_inode link by name,
     whatever mode a kernel gives anonymous inodes. */
  &fd_eventfd_ops, &fd_timerfd_ops, &fd_signalfd_ops,  &fd_epoll_ops,
  &fd_inotify_ops, &fd_pidfd_ops,   &fd_inherited_ops, /* stdio leading outside the task's root,
                                           before the file types */
  &fd_memfd_ops, /* before reg: a memfd is a regular file too */
  &fd_pty_ops,   /* before dev and tty: ptys whose both ends the tree holds */
  &fd_reg_ops,     &fd_dir_ops,     &fd_link_ops,      &fd_dev_ops,
  &fd_tty_ops, /* after dev; hands stdio on another terminal to inherited */
  &fd_pipe_ops,    &fd_fifo_ops,    &fd_unix_ops, /* unix sockets; a socket of another family is
                                                     refused */
  &fd_inet_ops,                                   /* TCP and UDP sockets */
  &fd_netlink_ops,                                /* netlink sockets; any other socket is refused */
};

/* The type an image's file record names, or NULL. */
static const struct fd_ops *
fd_ops_find(const char *type)
{
  for (size_t i = 0; i < ARRAY_SIZE(fd_types); i++)
    if (strcmp(fd_types[i]->type, type) == 0)
      return fd_types[i];
  return NULL;
}

/* --- checkpoint --- */

static int
fdinfo_get(pid_t pid, int fd, int64_t *pos, int *flags, crest_error_t *err)
{
  cleanup_free char *what = xasprintf("fdinfo/%d", fd);
  cleanup_free char *info = NULL;
  const char *s;
  if (read_proc(pid, what, &info, err) < 0)
    return -1;
  s = status_field(info, "pos");
  *pos = s ? strtoll(s, NULL, 10) : 0;
  s = status_field(info, "flags");
  *flags = s ? (int)strtol(s, NULL, 8) : 0;
  return 0;
}

/* A socket no probe claims, named by its family, type and protocol (a
   copy of the descriptor asked): "a socket of AF_ALG (38), SOCK_SEQPACKET,
   protocol 0" into BUF, or "socket" where it cannot be asked. */
static const char *
socket_kind(pid_t pid, int fd, char *buf, size_t len)
{
  static const struct
  {
    int af;
    const char *name;
  } fam[] = { { AF_INET, "AF_INET" },   { AF_INET6, "AF_INET6" }, { AF_PACKET, "AF_PACKET" },
              { AF_ALG, "AF_ALG" },     { AF_VSOCK, "AF_VSOCK" }, { AF_BLUETOOTH, "AF_BLUETOOTH" },
              { AF_CAN, "AF_CAN" },     { AF_TIPC, "AF_TIPC" },   { AF_KEY, "AF_KEY" },
              { AF_XDP, "AF_XDP" },     { AF_RDS, "AF_RDS" },     { AF_QIPCRTR, "AF_QIPCRTR" },
              { AF_PPPOX, "AF_PPPOX" }, { AF_SMC, "AF_SMC" },     { AF_NETLINK, "AF_NETLINK" },
              { AF_UNIX, "AF_UNIX" } };
  static const char *const types[]
      = { "?", "SOCK_STREAM", "SOCK_DGRAM", "SOCK_RAW", "SOCK_RDM", "SOCK_SEQPACKET" };
  crest_error_t e = NULL;
  int c = sk_getfd(pid, fd, &e), af = -1, type = -1, proto = -1;
  socklen_t l = sizeof af;
  const char *an = "family";
  crest_error_release(&e);
  if (c < 0)
    return "socket";
  getsockopt(c, SOL_SOCKET, SO_DOMAIN, &af, &l);
  l = sizeof type;
  getsockopt(c, SOL_SOCKET, SO_TYPE, &type, &l);
  l = sizeof proto;
  getsockopt(c, SOL_SOCKET, SO_PROTOCOL, &proto, &l);
  close(c);
  if (af < 0)
    return "socket";
  for (size_t i = 0; i < ARRAY_SIZE(fam); i++)
    if (fam[i].af == af)
      an = fam[i].name;
  snprintf(buf, len, "a socket of %s (%d), %s, protocol %d", an, af,
           type > 0 && type < (int)ARRAY_SIZE(types) ? types[type] : "type ?", proto);
  return buf;
}

/* The type of a descriptor met for the first time: the first row of
   fd_types whose probe claims it, or a refusal in one line. */
static int
probe_fd(struct dctx *c, struct dproc *p, const struct fd_probe *d, struct dfile *nf,
         crest_error_t *err)
{
  for (size_t i = 0; i < ARRAY_SIZE(fd_types); i++)
    {
      int r;
      nf->ops = fd_types[i];
      r = fd_types[i]->probe(c, p, d, nf, err);
      if (r != 0)
        return r < 0 ? -1 : 0;
    }
  {
    char buf[160];
    const char *t = S_ISSOCK(d->st->st_mode)   ? socket_kind(p->pid, d->fd, buf, sizeof buf)
                    : S_ISFIFO(d->st->st_mode) ? "named FIFO"
                                               : "unsupported type";
    return crest_error_make(err, ENOTSUP, "task %d: fd %d (%s): %s, cannot checkpoint it", p->pid,
                            d->fd, d->link, t);
  }
}

/* A new open file description: its record, typed by probe_fd. */
static int
new_file(struct dctx *c, struct dproc *p, const struct fd_probe *d, int64_t pos,
         const struct lock_set *locks, crest_error_t *err)
{
  struct dfile nf;
  memset(&nf, 0, sizeof nf);
  nf.id = (int)c->nf;
  nf.flags = d->flags & ~O_CLOEXEC;
  nf.pos = pos;
  nf.dev = d->st->st_dev;
  nf.ino = d->st->st_ino;
  nf.size = (uint64_t)d->st->st_size;
  nf.pid = p->pid;
  nf.fd = d->fd;
  if (fown_dump(c, p->pid, d->fd, d->link, nf.flags, &nf.fown, err) < 0
      || probe_fd(c, p, d, &nf, err) < 0)
    {
      free(nf.data), free(nf.priv);
      return -1;
    }
  nf.path = xstrdup(d->link);
  if (locks->n && !(nf.ops->flags & FDT_LOCKS))
    {
      free(nf.path), free(nf.data), free(nf.priv);
      return crest_error_make(err, ENOTSUP,
                              nf.ops == &fd_inherited_ops
                                  ? "task %d: fd %d (%s): a lock on a descriptor that leads "
                                    "outside the tree is not restored: cannot checkpoint it"
                                  : "task %d: fd %d (%s): a lock on a descriptor of type %s, "
                                    "which crest does not restore: cannot checkpoint it",
                              p->pid, d->fd, d->link, nf.ops->type);
    }
  nf.locks = *locks;
  c->f = xrealloc(c->f, (c->nf + 1) * sizeof *c->f);
  c->f[c->nf++] = nf;
  return nf.id;
}

static int
dump_fd(struct dctx *c, struct dproc *p, int fd, crest_error_t *err)
{
  char lpath[64], link[PATH_MAX + 1];
  struct stat st;
  ssize_t n;
  int64_t pos;
  int flags, id = -1;
  struct lock_set locks;
  struct fd_probe d;

  snprintf(lpath, sizeof lpath, "/proc/%d/fd/%d", p->pid, fd);
  n = readlink(lpath, link, PATH_MAX);
  if (n < 0)
    return crest_error_errno(err, "task %d: fd %d: readlink", p->pid, fd);
  link[n] = 0;
  if (stat(lpath, &st) < 0)
    return crest_error_errno(err, "task %d: fd %d (%s): stat", p->pid, fd, link);
  if (fdinfo_get(p->pid, fd, &pos, &flags, err) < 0
      || files_check_fd(p->pid, fd, link, &st, &locks, err) < 0)
    return -1;

  /* Same open file description as one seen before? */
  for (size_t i = 0; i < c->nf; i++)
    {
      struct dfile *f = &c->f[i];
      if (f->dev == st.st_dev && f->ino == st.st_ino && f->pos == pos
          && (f->flags & ~O_CLOEXEC) == (flags & ~O_CLOEXEC)
          && syscall(SYS_kcmp, f->pid, p->pid, KCMP_FILE, f->fd, fd) == 0)
        {
          id = f->id;
          break;
        }
    }
  d.pid = p->pid, d.fd = fd, d.link = link, d.st = &st, d.flags = flags;
  if (id < 0 && (id = new_file(c, p, &d, pos, &locks, err)) < 0)
    return -1;
  if (c->f[id].ops->attach)
    c->f[id].ops->attach(c, &c->f[id], fd);
  c->fds = xrealloc(c->fds, (c->nfds + 1) * sizeof *c->fds);
  c->fds[c->nfds].pid = p->pid;
  c->fds[c->nfds].fd = fd;
  c->fds[c->nfds].cloexec = (flags & O_CLOEXEC) != 0;
  c->fds[c->nfds].file = id;
  memset(&c->fds[c->nfds].locks, 0, sizeof c->fds[c->nfds].locks);
  {
    /* POSIX locks show on every descriptor of the open file description
       they were taken through: kept once per process. */
    bool seen = false;
    for (size_t k = 0; k < c->nfds; k++)
      seen |= c->fds[k].pid == p->pid && c->fds[k].file == id && c->fds[k].locks.n;
    for (size_t k = 0; k < locks.n && !seen; k++)
      if (locks.l[k].kind == LOCK_KIND_POSIX)
        c->fds[c->nfds].locks.l[c->fds[c->nfds].locks.n++] = locks.l[k];
  }
  c->nfds++;
  return 0;
}

static int
cmp_int(const void *a, const void *b)
{
  return *(const int *)a - *(const int *)b;
}

int
dump_fds(struct dctx *c, struct dproc *p, crest_error_t *err)
{
  cleanup_free char *path = xasprintf("/proc/%d/fd", p->pid);
  cleanup_free int *fds = NULL;
  size_t n = 0;
  DIR *d = opendir(path);
  struct dirent *de;
  if (!d && errno == EACCES)
    /* /proc/PID/fd is the task's own UID's, mode 0500: a task of another
       UID of the container that is dumpable (its files in /proc then are
       that UID's, not the container root's) is closed to crest, which holds
       no capability of the initial user namespace. */
    return crest_error_make(err, ENOTSUP,
                            "task %d: its descriptors (/proc/%d/fd) are closed to crest: it runs "
                            "as another UID than the container's root and is dumpable, cannot "
                            "checkpoint it",
                            p->pid, p->pid);
  if (!d)
    return crest_error_errno(err, "task %d: list fds", p->pid);
  while ((de = readdir(d)))
    if (de->d_name[0] != '.')
      {
        fds = xrealloc(fds, (n + 1) * sizeof *fds);
        fds[n++] = atoi(de->d_name);
      }
  closedir(d);
  qsort(fds, n, sizeof *fds, cmp_int);
  for (size_t i = 0; i < n; i++)
    if (dump_fd(c, p, fds[i], err) < 0)
      return -1;
  return 0;
}

/* The "files" list of tree.json: the common keys of each record, then
   its type's. */
void
files_put(struct dctx *c, yajl_gen g)
{
  jput_key(g, "files");
  yajl_gen_array_open(g);
  for (size_t i = 0; i < c->nf; i++)
    {
      struct dfile *f = &c->f[i];
      yajl_gen_map_open(g);
      jput_int(g, "id", f->id);
      jput_str(g, "type", f->ops->type);
      jput_str(g, "path", f->path);
      jput_int(g, "flags", f->flags);
      jput_int(g, "pos", f->pos);
      if (f->ops->write)
        f->ops->write(c, f, g);
      if (fown_put(g, &f->fown))
        {
          int need = f->flags & O_ASYNC ? CREST_IMAGE_FORMAT_FOWN : CREST_IMAGE_FORMAT_FOWN_ANY;
          if (c->w->format < need)
            c->w->format = need;
        }
      yajl_gen_map_close(g);
    }
  yajl_gen_array_close(g);
}

/* Process P's descriptors ("fds"): which file each is, close-on-exec,
   its POSIX locks. */
void
files_put_fds(struct dctx *c, const struct dproc *p, yajl_gen g)
{
  jput_key(g, "fds");
  yajl_gen_array_open(g);
  for (size_t i = 0; i < c->nfds; i++)
    if (c->fds[i].pid == p->pid)
      {
        yajl_gen_map_open(g);
        jput_int(g, "fd", c->fds[i].fd);
        jput_bool(g, "cloexec", c->fds[i].cloexec);
        jput_int(g, "file", c->fds[i].file);
        put_attrs(c, locks_put(g, &c->fds[i].locks, 1u << LOCK_KIND_POSIX));
        yajl_gen_map_close(g);
      }
  yajl_gen_array_close(g);
}

/* --- restore --- */

/* A file record: the paths restore opens are absolute, the bytes of an
   unlinked file are in the image. */
static int
check_file(struct rctx *c, const struct rfile *f, crest_error_t *err)
{
  if ((f->ops->flags & FDT_PATH) && !img_path_ok(f->path))
    return crest_error_make(err, EINVAL, "image %s: tree.json: file %d: path %.64s is not absolute",
                            c->o->image_dir, f->id, f->path);
  if (f->data && (!(f->ops->flags & FDT_DATA) || !img_reader_find(c->img, f->data)))
    return crest_error_make(err, EINVAL,
                            "image %s: tree.json: file %d: data %.64s is not a listed file",
                            c->o->image_dir, f->id, f->data);
  return 0;
}

/* A file's records of docs/engine.md's attribute tables (format 3): an
   unlinked file's extents or the file it opens again, a deleted
   directory, flock and OFD locks. F is the F->id-th of c->f, the ones
   before it parsed. */
static int
parse_file_attrs(struct rctx *c, yajl_val v, struct rfile *f, crest_error_t *err)
{
  const struct img_file *df = f->data ? img_reader_find(c->img, f->data) : NULL;
  if (unlinked_parse(v, c->img->format, f->id, df ? df->size : 0, &f->u, err) < 0
      || deleted_dir_parse(v, c->img->format, f->id, &f->deleted_dir, err) < 0
      || locks_parse(v, c->img->format, (1u << LOCK_KIND_FLOCK) | (1u << LOCK_KIND_OFD), &f->locks,
                     err)
             < 0
      || fown_parse(v, c->img->format, f->flags, &f->fown, err) < 0)
    return -1;
  if (f->deleted_dir.present && f->ops != &fd_dir_ops)
    return crest_error_make(err, EINVAL, "deleted_dir on a %s", f->ops->type);
  if (f->u.same_as >= 0 && (f->data || !c->f[f->u.same_as].data))
    return crest_error_make(err, EINVAL, "unlinked_of a file without data");
  return 0;
}

/* One record of the "files" list. */
static int
parse_file(struct rctx *c, long i, yajl_val v, struct rfile *f, crest_error_t *err)
{
  int64_t id, flags;
  const char *type;
  if (jget_i64(v, "id", &id, err) < 0 || jget_str(v, "type", &type, err) < 0
      || jget_str(v, "path", &f->path, err) < 0 || jget_i64(v, "flags", &flags, err) < 0
      || jget_i64(v, "pos", &f->pos, err) < 0)
    return crest_error_wrap(err, "image %s: tree.json: file %ld", c->o->image_dir, i);
  if (id != i)
    return crest_error_make(err, EINVAL, "image %s: tree.json: file %ld has id %lld",
                            c->o->image_dir, i, (long long)id);
  if (flags < 0 || flags > INT_MAX || f->pos < 0)
    return crest_error_make(err, EINVAL, "image %s: tree.json: file %ld: flags or pos out of range",
                            c->o->image_dir, i);
  if (!(f->ops = fd_ops_find(type)))
    return crest_error_make(err, EINVAL, "image %s: tree.json: file %ld has unknown type %s",
                            c->o->image_dir, i, type);
  f->id = id;
  f->flags = flags;
  f->svc = -1;
  f->stdio = -1;
  f->size = -1;
  if (has_key(v, "open_size"))
    {
      uint64_t sz = 0;
      if (c->img->format < CREST_IMAGE_FORMAT_REG_SIZE || f->ops != &fd_reg_ops
          || jget_u64(v, "open_size", &sz, err) < 0 || sz > INT64_MAX)
        return *err ? crest_error_wrap(err, "image %s: tree.json: file %ld", c->o->image_dir, i)
                    : crest_error_make(
                        err, EINVAL, "image %s: tree.json: file %ld: open_size on a %s (format %d)",
                        c->o->image_dir, i, f->ops->type, c->img->format);
      f->size = (int64_t)sz;
    }
  {
    const char *d = NULL;
    crest_error_t e2 = NULL;
    if (jget_str(v, "data", &d, &e2) == 0)
      f->data = d;
    crest_error_release(&e2);
  }
  if (check_file(c, f, err) < 0)
    return -1;
  if ((f->ops->parse && f->ops->parse(c, v, f, err) < 0) || parse_file_attrs(c, v, f, err) < 0)
    return crest_error_wrap(err, "image %s: tree.json: file %ld", c->o->image_dir, i);
  return 0;
}

/* The "files" list, and which of them each process's stdio is on. */
int
files_parse(struct rctx *c, crest_error_t *err)
{
  yajl_val *items;
  long n = jget_array(c->tree, "files", &items, err);
  if (n < 0 || n > (1 << 20))
    return crest_error_make(err, EINVAL, "image %s: tree.json: bad file list", c->o->image_dir);
  c->f = xzalloc((n + 1) * sizeof *c->f);
  c->nf = n; /* all of them for free_ctx, also when one fails */
  for (long i = 0; i < n; i++)
    if (parse_file(c, i, items[i], &c->f[i], err) < 0)
      return -1;
  for (size_t i = 0; i < c->np; i++)
    for (size_t k = 0; k < c->p[i].nfds; k++)
      {
        const struct rfd *d = &c->p[i].fds[k];
        if ((size_t)d->file >= c->nf)
          return crest_error_make(err, EINVAL,
                                  "image %s: tree.json: process %d fd %d names file %d of %zu",
                                  c->o->image_dir, c->p[i].pid, d->fd, d->file, c->nf);
        if (d->fd <= 2 && (c->f[d->file].stdio < 0 || d->fd < c->f[d->file].stdio))
          c->f[d->file].stdio = d->fd;
      }
  return 0;
}

int
file_place(struct rctx *c, struct rfile *f, int fd, bool seek, crest_error_t *err)
{
  if (fd < 0)
    return -1;
  if (seek && f->pos && lseek(fd, f->pos, SEEK_SET) < 0)
    {
      close(fd);
      return crest_error_errno(err, "restore: %s: seek to %lld", f->path, (long long)f->pos);
    }
  if ((f->svc = svc_place(c, fd, err)) < 0)
    return -1;
  for (size_t k = 0; k < f->locks.n; k++)
    {
      int64_t who = f->locks.l[k].owner;
      bool live = false;
      for (size_t i = 0; who && !live && i < c->np; i++)
        if ((live = c->p[i].pid == who && !c->p[i].zombie))
          c->p[i].takes_flock = true;
      if (who && !live)
        return crest_error_make(err, EINVAL,
                                "image: %s: its flock's taker %lld is no live process of the tree",
                                f->path, (long long)who);
    }
  if (f->locks.n && locks_apply_ofd(f->svc, f->path, &f->locks, err) < 0)
    return -1;
  return 0;
}

/* Every file of the image opened again in the restoring process, as a
   service descriptor the tasks dup later (files_task_src). */
int
files_open(struct rctx *c, crest_error_t *err)
{
  for (size_t i = 0; i < c->nf; i++)
    {
      struct rfile *f = &c->f[i];
      /* O_ASYNC comes last, with its owner (files_fown). A file made with
         O_TMPFILE keeps that flag (O_DIRECTORY with a bit of its own) in
         its status flags: reopened without it, as any file. */
      int tmpfile = (f->flags & O_TMPFILE) == O_TMPFILE ? O_TMPFILE : 0;
      int flags = (f->flags & ~(O_CREAT | O_EXCL | O_TRUNC | O_NOCTTY | O_ASYNC | tmpfile))
                  | O_CLOEXEC | O_NOCTTY;
      if (f->ops->open && f->ops->open(c, f, flags, err) < 0)
        return -1;
    }
  pipes_close_unused(c);
  return 0;
}

/* Once every descriptor of the tree is known (fd_ops.resolve). */
int
files_resolve(struct dctx *c, crest_error_t *err)
{
  for (size_t i = 0; i < c->nf; i++)
    if (c->f[i].ops->resolve && c->f[i].ops->resolve(c, &c->f[i], err) < 0)
      return -1;
  return 0;
}

/* Once everything of the image is open. */
int
files_finish(struct rctx *c, crest_error_t *err)
{
  for (size_t i = 0; i < c->nf; i++)
    if (c->f[i].ops->finish && c->f[i].ops->finish(c, &c->f[i], err) < 0)
      return -1;
  return 0;
}

int
files_task_src(const struct rctx *c, const struct rfile *f, int fd)
{
  return f->ops->install ? f->ops->install(c, f, fd) : f->svc;
}

/* Process P's descriptors: which file each is, close-on-exec, its POSIX
   locks. */
int
files_parse_fds(struct rctx *c, yajl_val v, struct rproc *p, crest_error_t *err)
{
  yajl_val *items;
  long n;

  n = jget_array(v, "fds", &items, err);
  CHECK(n >= 0 && n <= 65536, "process %d: %ld descriptors", p->pid, n);
  p->fds = plan_zalloc(c, (n + 1) * sizeof *p->fds);
  for (long i = 0; i < n; i++)
    {
      int64_t fd, file;
      if (jget_i64(items[i], "fd", &fd, err) < 0
          || jget_bool(items[i], "cloexec", &p->fds[i].cloexec, err) < 0
          || jget_i64(items[i], "file", &file, err) < 0)
        return -1;
      CHECK(fd >= 0 && fd < (1 << 20) && file >= 0 && file <= (1 << 20)
                && (i == 0 || fd > p->fds[i - 1].fd),
            "process %d: descriptor entry %ld is malformed", p->pid, i);
      p->fds[i].fd = fd, p->fds[i].file = file;
      if (locks_parse(items[i], c->img->format, 1u << LOCK_KIND_POSIX, &p->fds[i].locks, err) < 0)
        return crest_error_wrap(err, "process %d: fd %lld", p->pid, (long long)fd);
    }
  p->nfds = n;

  return 0;
}

/* In the new task: install the tree's descriptors, close the rest below
   the service range. */
void
files_install(struct rctx *c, int idx, const struct rproc *p)
{
  int next = 0; /* the lowest descriptor not dealt with yet */
  /* The process's descriptors in order (files_parse_fds), and what lies
     between them closed in one call a gap (a task inherits crest's). */
  for (size_t k = 0; k <= p->nfds; k++)
    {
      const struct rfd *want = k < p->nfds ? &p->fds[k] : NULL;
      int fd = want ? (int)want->fd : c->svc_base;
      if (want && fd >= c->svc_base)
        task_fail(c, idx, "process %d: fd %d lies in the service range", p->pid, fd);
      close_fd_range(next, fd - 1);
      next = fd + 1;
      if (!want)
        break;
      struct rfile *f = &c->f[want->file];
      int src;
      if (f->ops->flags & FDT_LATE)
        {
          close(fd); /* the blob opens it (pidfd_ops) */
          continue;
        }
      src = files_task_src(c, f, fd);
      if (src < 0 || dup2(src, fd) < 0)
        task_fail(c, idx, "process %d: install fd %d (%s): %s", p->pid, fd, f->path,
                  strerror(errno));
      if (fcntl(fd, F_SETFD, want->cloexec ? FD_CLOEXEC : 0) < 0)
        task_fail(c, idx, "process %d: fd %d: set close-on-exec: %s", p->pid, fd, strerror(errno));
    }
  /* The flocks this process took (locks_apply_ofd left them): on crest's
     descriptor of the open file description, which it may no longer hold
     a descriptor of itself. */
  for (size_t i = 0; p->takes_flock && i < c->nf; i++)
    for (size_t k = 0; k < c->f[i].locks.n; k++)
      {
        const struct lock_rec *l = &c->f[i].locks.l[k];
        if (l->kind == LOCK_KIND_FLOCK && l->owner == p->pid
            && flock(c->f[i].svc, (l->write ? LOCK_EX : LOCK_SH) | LOCK_NB) < 0)
          task_fail(c, idx, "process %d: %s: take its flock again: %s", p->pid, c->f[i].path,
                    strerror(errno));
      }
}
