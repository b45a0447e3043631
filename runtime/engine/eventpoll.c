/* crest: epoll descriptors (docs/engine.md, "Event descriptors"): every
 * registered target with its descriptor number, events and data. A target
 * is an open file description of the tree, found with kcmp; restore adds it
 * back once every file exists, under the number it was added with. */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "dump-int.h"
#include "engine-int.h"
#include "files.h"
#include "restore-int.h"
#include "image.h"
#include "util.h"

#define KCMP_EPOLL_TFD 7
#define PRIVATE_BITS (EPOLLWAKEUP | EPOLLONESHOT | EPOLLET | EPOLLEXCLUSIVE)
/* The poll bits a target may be ready with. */
#define POLL_BITS                                                                                  \
  (EPOLLIN | EPOLLPRI | EPOLLOUT | EPOLLRDNORM | EPOLLRDBAND | EPOLLWRNORM | EPOLLWRBAND           \
   | EPOLLMSG | EPOLLRDHUP | EPOLLERR | EPOLLHUP)
#define TARGETS_MAX (1 << 20)

struct kcmp_epoll_slot
{
  uint32_t efd, tfd, toff;
};

static int
epoll_dump(pid_t pid, int fd, struct evfd **evp, crest_error_t *err)
{
  struct evfd *ev = *evp;
  cleanup_free char *info = NULL;
  const char *s;
  if (evfd_fdinfo(pid, fd, &info, err) < 0)
    return -1;
  for (s = strstr(info, "tfd:"); s; s = strstr(s + 4, "\ntfd:"))
    {
      struct epoll_target t;
      unsigned long long data, ino;
      unsigned int events;
      if (*s == '\n')
        s++;
      memset(&t, 0, sizeof t);
      if (sscanf(s, "tfd: %d events: %x data: %llx pos:%*s ino:%llx", &t.tfd, &events, &data, &ino)
          != 4)
        return crest_error_make(err, EIO, "fdinfo: cannot read the target line %.40s", s);
      t.events = events, t.data = data, t.ino = ino, t.file = -1;
      /* Without CAP_BLOCK_SUSPEND epoll_ctl drops it without a word. */
      if (events & EPOLLWAKEUP)
        return crest_error_make(err, ENOTSUP,
                                "target fd %d: EPOLLWAKEUP is not restored (it needs "
                                "CAP_BLOCK_SUSPEND), cannot checkpoint it",
                                t.tfd);
      /* kcmp names a target by its number and its rank among the targets
         of that number, in the order fdinfo lists them. */
      for (size_t k = 0; k < ev->nt; k++)
        t.toff += ev->t[k].tfd == t.tfd;
      if (ev->nt >= TARGETS_MAX)
        return crest_error_make(err, ENOTSUP, "more than %d targets", TARGETS_MAX);
      ev = *evp = xrealloc(ev, sizeof *ev + (ev->nt + 1) * sizeof *ev->t);
      ev->t[ev->nt++] = t;
    }
  return 0;
}

static bool
epoll_target_is(pid_t epid, int efd, const struct epoll_target *t, pid_t pid, int fd)
{
  struct kcmp_epoll_slot slot = { (uint32_t)efd, (uint32_t)t->tfd, (uint32_t)t->toff };
  return syscall(SYS_kcmp, pid, epid, KCMP_EPOLL_TFD, fd, &slot) == 0;
}

static bool
epoll_target_fired(const struct epoll_target *t)
{
  return !(t->events & ~PRIVATE_BITS);
}

/* An EPOLLONESHOT target that fired shows no poll bits, not even EPOLLERR
   and EPOLLHUP, which every epoll_ctl adds: restore can only get there by
   firing it again, which needs the target ready for something (on its
   copy FD). */
static int
epoll_check_fired(const struct epoll_target *t, int fd, crest_error_t *err)
{
  struct pollfd p = { .fd = fd, .events = POLL_BITS & 0xffff };
  if (poll(&p, 1, 0) < 0)
    return crest_error_errno(err, "poll target fd %d", t->tfd);
  if (!p.revents)
    return crest_error_make(err, ENOTSUP,
                            "target fd %d: an EPOLLONESHOT target that fired and is not ready now, "
                            "which restore cannot disarm again, cannot checkpoint it",
                            t->tfd);
  return 0;
}

static void
epoll_put(yajl_gen g, const struct evfd *ev)
{
  jput_key(g, "targets");
  yajl_gen_array_open(g);
  for (size_t i = 0; i < ev->nt; i++)
    {
      yajl_gen_map_open(g);
      jput_int(g, "tfd", ev->t[i].tfd);
      jput_int(g, "events", ev->t[i].events);
      jput_u64(g, "data", ev->t[i].data);
      jput_int(g, "file", ev->t[i].file);
      yajl_gen_map_close(g);
    }
  yajl_gen_array_close(g);
}

int
epoll_parse(yajl_val v, size_t nf, struct evfd **evp, crest_error_t *err)
{
  struct evfd *ev;
  yajl_val *items;
  long n = jget_array(v, "targets", &items, err);
  if (n < 0 || n > TARGETS_MAX)
    return crest_error_make(err, EINVAL, "bad epoll target list");
  ev = *evp = xrealloc(*evp, sizeof *ev + (n + 1) * sizeof *ev->t);
  memset(ev->t, 0, (n + 1) * sizeof *ev->t);
  ev->nt = n;
  for (long i = 0; i < n; i++)
    {
      struct epoll_target *t = &ev->t[i];
      int64_t tfd, events, file;
      if (jget_i64(items[i], "tfd", &tfd, err) < 0 || jget_i64(items[i], "events", &events, err) < 0
          || jget_u64(items[i], "data", &t->data, err) < 0
          || jget_i64(items[i], "file", &file, err) < 0)
        return crest_error_wrap(err, "epoll target %ld", i);
      if (tfd < 0 || tfd >= INT_MAX || events < 0 || events > UINT32_MAX || file < 0
          || (uint64_t)file >= nf || (events & EPOLLWAKEUP))
        return crest_error_make(err, EINVAL,
                                "epoll target %ld: descriptor, events or file out "
                                "of range",
                                i);
      t->tfd = (int)tfd, t->events = (uint32_t)events, t->file = (int)file;
      for (long k = 0; k < i; k++)
        if (ev->t[k].tfd == t->tfd && ev->t[k].file == t->file)
          return crest_error_make(err, EINVAL, "epoll target %ld appears twice", i);
    }
  return 0;
}

static int
epoll_open(const struct evfd *ev, int flags, crest_error_t *err)
{
  int fd = epoll_create1(EPOLL_CLOEXEC);
  (void)ev;
  if (fd < 0)
    return crest_error_errno(err, "restore: epoll_create1");
  if ((flags & O_NONBLOCK) && fcntl(fd, F_SETFL, O_NONBLOCK) < 0)
    {
      crest_error_errno(err, "restore: epoll: O_NONBLOCK");
      close(fd);
      return -1;
    }
  return fd;
}

/* The kernel keys a target by its open file description and the number it
   was added with, and EPOLL_CTL_MOD or DEL from the task finds it only by
   both. So the target goes in under that number: for the call, that number
   of the restorer's table holds the target (what held it is moved aside and
   put back after). The entry lives on with the open file description, not
   with the number. */
static int
epoll_add_target(int ep, const struct epoll_target *t, int target, crest_error_t *err)
{
  struct epoll_event e = { .events = t->events, .data.u64 = t->data };
  int saved = -1, saved_fd = 0, use = ep, rc, en;
  if (target != t->tfd)
    {
      saved_fd = fcntl(t->tfd, F_GETFD);
      if (saved_fd >= 0 && (saved = fcntl(t->tfd, F_DUPFD_CLOEXEC, 0)) < 0)
        return crest_error_errno(err, "restore: epoll target %d: move aside", t->tfd);
      if (t->tfd == ep)
        use = saved;
      if (dup2(target, t->tfd) < 0)
        {
          en = errno;
          if (saved >= 0)
            close(saved);
          return crest_error_sys(err, en, "restore: epoll target %d: dup2", t->tfd);
        }
    }
  if (epoll_target_fired(t))
    {
      /* Fired again at once (see epoll_check_fired): the caller adds these
         first, so no other target of EP can be reported. */
      struct pollfd p = { .fd = target, .events = POLL_BITS & 0xffff };
      struct epoll_event got;
      if (poll(&p, 1, 0) == 1)
        e.events |= p.revents & POLL_BITS;
      rc = epoll_ctl(use, EPOLL_CTL_ADD, t->tfd, &e);
      if (rc == 0 && (epoll_wait(use, &got, 1, 0) != 1 || got.data.u64 != t->data))
        rc = -1, errno = EAGAIN;
    }
  else
    rc = epoll_ctl(use, EPOLL_CTL_ADD, t->tfd, &e);
  en = errno;
  if (target != t->tfd)
    {
      bool back = saved < 0 || dup3(saved, t->tfd, saved_fd & FD_CLOEXEC ? O_CLOEXEC : 0) >= 0;
      if (saved >= 0)
        close(saved);
      else
        close(t->tfd);
      /* The restore stops here; what it made is thrown away. */
      if (!back)
        return crest_error_errno(err, "restore: epoll target %d: put back what it was", t->tfd);
    }
  if (rc < 0)
    return crest_error_sys(err, en, "restore: epoll: add target fd %d (events %#x)", t->tfd,
                           t->events);
  return 0;
}

/* --- the descriptor type (files.h) --- */

static int
epoll_probe(struct dctx *c, struct dproc *p, const struct fd_probe *d, struct dfile *nf,
            crest_error_t *err)
{
  (void)c, (void)p;
  if (strcmp(d->link, "anon_inode:[eventpoll]") != 0)
    return 0;
  nf->priv = xzalloc(sizeof(struct evfd));
  if (epoll_dump(d->pid, d->fd, (struct evfd **)&nf->priv, err) < 0)
    return crest_error_wrap(err, "task %d: fd %d (%s)", d->pid, d->fd, d->link);
  return 1;
}

static void
epoll_write(struct dctx *c, const struct dfile *f, yajl_gen g)
{
  (void)c;
  epoll_put(g, f->priv);
}

static int
epoll_parse_rec(struct rctx *c, yajl_val v, struct rfile *f, crest_error_t *err)
{
  yajl_val *items;
  /* Targets may come later in the list: checked against all of it. */
  long nf = jget_array(c->tree, "files", &items, err);
  f->priv = xzalloc(sizeof(struct evfd));
  if (nf < 0 || epoll_parse(v, (size_t)nf, (struct evfd **)&f->priv, err) < 0)
    return -1;
  for (size_t k = 0; k < ((struct evfd *)f->priv)->nt; k++)
    if (((struct evfd *)f->priv)->t[k].file == f->id)
      return crest_error_make(err, EINVAL, "epoll target %zu is the epoll itself", k);
  return 0;
}

/* Each target is an open file description of the tree: found among the
   files by kcmp, once every descriptor is known. A target held only
   outside the tree, or standing for a file outside it, is refused; so is
   a fired one-shot target that restore could not disarm again. */
static int
epoll_resolve(struct dctx *c, struct dfile *ep, crest_error_t *err)
{
  struct evfd *ev = ep->priv;
  for (size_t k = 0; k < ev->nt; k++)
    {
      struct epoll_target *t = &ev->t[k];
      const struct dfile *tf;
      for (size_t j = 0; j < c->nf && t->file < 0; j++)
        if (c->f[j].ino == t->ino && epoll_target_is(ep->pid, ep->fd, t, c->f[j].pid, c->f[j].fd))
          t->file = c->f[j].id;
      if (t->file < 0)
        return crest_error_make(err, ENOTSUP,
                                "task %d: fd %d (%s): watches fd %d, a file held only outside the "
                                "checkpointed tree, cannot checkpoint it",
                                ep->pid, ep->fd, ep->path, t->tfd);
      tf = &c->f[t->file];
      if (tf->ops->flags & FDT_OUTSIDE || tf->ops == &fd_tty_ops)
        return crest_error_make(err, ENOTSUP,
                                "task %d: fd %d (%s): watches fd %d (%s), which leads outside the "
                                "checkpointed tree, cannot checkpoint it",
                                ep->pid, ep->fd, ep->path, t->tfd, tf->path);
      if (epoll_target_fired(t))
        {
          cleanup_close int d = getfd(tf->pid, tf->fd, err);
          if (d < 0 || epoll_check_fired(t, d, err) < 0)
            return crest_error_wrap(err, "task %d: fd %d (%s)", ep->pid, ep->fd, ep->path);
        }
    }
  return 0;
}

/* Once every file is open: the targets, under the numbers they were
   added with, fired one-shot targets first (each is fired again alone). */
static int
epoll_finish(struct rctx *c, struct rfile *f, crest_error_t *err)
{
  const struct evfd *ev = f->priv;
  for (int pass = 0; pass < 2; pass++)
    for (size_t k = 0; k < ev->nt; k++)
      {
        const struct rfile *t = &c->f[ev->t[k].file];
        if (epoll_target_fired(&ev->t[k]) != (pass == 0))
          continue;
        if (t->svc < 0)
          return crest_error_make(err, EINVAL,
                                  "image %s: file %d: epoll target %d is file %d (%s), which "
                                  "restore does not open",
                                  c->o->image_dir, f->id, ev->t[k].tfd, t->id, t->ops->type);
        if (epoll_add_target(f->svc, &ev->t[k], t->svc, err) < 0)
          return -1;
      }
  return 0;
}

static int
epoll_open_rec(struct rctx *c, struct rfile *f, int flags, crest_error_t *err)
{
  (void)flags;
  if (file_place(c, f, epoll_open(f->priv, f->flags, err), false, err) < 0)
    return crest_error_wrap(err, "file %d (anon_inode:[eventpoll])", f->id);
  return 0;
}

const struct fd_ops fd_epoll_ops = {
  .type = "epoll",
  .probe = epoll_probe,
  .resolve = epoll_resolve,
  .write = epoll_write,
  .parse = epoll_parse_rec,
  .open = epoll_open_rec,
  .finish = epoll_finish,
};
