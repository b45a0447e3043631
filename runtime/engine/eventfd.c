/* crest: eventfd descriptors (docs/engine.md, "Event descriptors"): the
 * counter, semaphore mode and status flags. Also the helpers the four event
 * descriptors share (evfd_kind, evfd_fdinfo). */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "dump-int.h"
#include "engine-int.h"
#include "files.h"
#include "restore-int.h"
#include "image.h"
#include "util.h"

bool
evfd_kind(const char *link)
{
  static const char *const links[]
      = { "anon_inode:[eventfd]", "anon_inode:[timerfd]", "anon_inode:[signalfd]",
          "anon_inode:[eventpoll]", "anon_inode:inotify" };
  for (size_t i = 0; i < ARRAY_SIZE(links); i++)
    if (strcmp(link, links[i]) == 0)
      return true;
  return false;
}

int
evfd_fdinfo(pid_t pid, int fd, char **info, crest_error_t *err)
{
  cleanup_free char *path = xasprintf("/proc/%d/fdinfo/%d", pid, fd);
  size_t len;
  return read_file(path, info, &len, 0, err);
}

/* The counter as an fdinfo text INFO shows it. */
static int
count_in(const char *info, uint64_t *count, crest_error_t *err)
{
  const char *s = strstr(info, "eventfd-count:");
  if (!s)
    return crest_error_make(err, EIO, "fdinfo shows no eventfd-count");
  *count = strtoull(s + 14, NULL, 16);
  return 0;
}

static int
count_now(pid_t pid, int fd, uint64_t *count, crest_error_t *err)
{
  cleanup_free char *info = NULL;
  if (evfd_fdinfo(pid, fd, &info, err) < 0)
    return -1;
  return count_in(info, count, err);
}

/* Kernels before 6.4 do not show EFD_SEMAPHORE. It shows in what a read
   takes from a counter of 2 or more: 1 in semaphore mode, all of it
   otherwise. Through crest's own copy of the open file description, with
   the tree held: the counter is made 2 or more if it is less, read once,
   and put back exactly, which fdinfo then confirms. Nothing reads or
   writes it meanwhile; a read only happens on a counter above 0 and a
   write never overflows it, so neither blocks. The one trace: a watcher in
   edge-triggered epoll sees one more event (docs/engine.md). */
static int
probe_semaphore(pid_t pid, int fd, struct evfd *ev, crest_error_t *err)
{
  cleanup_close int pfd = syscall(SYS_pidfd_open, pid, 0);
  cleanup_close int d = -1;
  uint64_t add = ev->count < 2 ? 2 - ev->count : 0, got = 0, now, one = 1;
  if (pfd < 0 || (d = syscall(SYS_pidfd_getfd, pfd, fd, 0)) < 0)
    return crest_error_errno(err, "take a copy to learn its semaphore mode");
  if ((add && write(d, &add, 8) != 8) || read(d, &got, 8) != 8)
    return crest_error_errno(err, "learn its semaphore mode (counter %" PRIu64 ")", ev->count);
  ev->semaphore = got == 1;
  /* Now: count + add - got. */
  if (ev->count + add - got < ev->count)
    {
      uint64_t back = ev->count - (ev->count + add - got);
      if (write(d, &back, 8) != 8)
        return crest_error_errno(err, "put its counter back to %" PRIu64, ev->count);
    }
  else if (ev->count + add - got > ev->count && read(d, &one, 8) != 8)
    return crest_error_errno(err, "put its counter back to %" PRIu64, ev->count);
  if (count_now(pid, fd, &now, err) < 0)
    return -1;
  if (now != ev->count)
    return crest_error_make(err, EIO,
                            "its counter changed from %" PRIu64 " to %" PRIu64
                            " while crest learned its semaphore mode",
                            ev->count, now);
  return 0;
}

static int
eventfd_dump(pid_t pid, int fd, struct evfd *ev, crest_error_t *err)
{
  cleanup_free char *info = NULL;
  const char *s;
  if (evfd_fdinfo(pid, fd, &info, err) < 0 || count_in(info, &ev->count, err) < 0)
    return -1;
  if ((s = strstr(info, "eventfd-semaphore:")))
    {
      ev->semaphore = strtol(s + 18, NULL, 10) != 0;
      return 0;
    }
  return probe_semaphore(pid, fd, ev, err);
}

static void
eventfd_put(yajl_gen g, const struct evfd *ev)
{
  jput_u64(g, "count", ev->count);
  jput_bool(g, "semaphore", ev->semaphore);
}

static int
eventfd_parse(yajl_val v, struct evfd *ev, crest_error_t *err)
{
  if (jget_u64(v, "count", &ev->count, err) < 0
      || jget_bool(v, "semaphore", &ev->semaphore, err) < 0)
    return -1;
  /* The kernel's counter never reaches 2^64 - 1. */
  if (ev->count == UINT64_MAX)
    return crest_error_make(err, EINVAL, "eventfd count out of range");
  return 0;
}

static int
eventfd_open(const struct evfd *ev, int flags, crest_error_t *err)
{
  /* eventfd() takes an unsigned int: the count is written instead, which
     on a new counter never blocks. */
  int fd = eventfd(0, EFD_CLOEXEC | (flags & O_NONBLOCK) | (ev->semaphore ? EFD_SEMAPHORE : 0));
  if (fd < 0)
    return crest_error_errno(err, "restore: eventfd");
  if (ev->count && write(fd, &ev->count, 8) != 8)
    {
      crest_error_errno(err, "restore: eventfd: set its counter to %" PRIu64, ev->count);
      close(fd);
      return -1;
    }
  return fd;
}

/* --- the descriptor types of one struct evfd (files.h) --- */

int
evfd_probe(struct dctx *c, struct dproc *p, const struct fd_probe *d, struct dfile *nf,
           crest_error_t *err)
{
  const struct evfd_ops *ev = nf->ops->ev;
  (void)c, (void)p;
  if (strcmp(d->link, ev->link) != 0)
    return 0;
  nf->priv = xzalloc(sizeof(struct evfd));
  if (ev->dump(d->pid, d->fd, nf->priv, err) < 0)
    return crest_error_wrap(err, "task %d: fd %d (%s)", d->pid, d->fd, d->link);
  return 1;
}

void
evfd_write(struct dctx *c, const struct dfile *f, yajl_gen g)
{
  (void)c;
  f->ops->ev->put(g, f->priv);
}

int
evfd_parse(struct rctx *c, yajl_val v, struct rfile *f, crest_error_t *err)
{
  (void)c;
  f->priv = xzalloc(sizeof(struct evfd));
  return f->ops->ev->parse(v, f->priv, err);
}

int
evfd_open(struct rctx *c, struct rfile *f, int flags, crest_error_t *err)
{
  (void)flags;
  if (file_place(c, f, f->ops->ev->open(f->priv, f->flags, err), false, err) < 0)
    return crest_error_wrap(err, "file %d (%s)", f->id, f->ops->ev->link);
  return 0;
}

static const struct evfd_ops eventfd_ev = {
  .link = "anon_inode:[eventfd]",
  .dump = eventfd_dump,
  .put = eventfd_put,
  .parse = eventfd_parse,
  .open = eventfd_open,
};

const struct fd_ops fd_eventfd_ops = {
  .type = "eventfd",
  .ev = &eventfd_ev,
  EVFD_FD_OPS,
};
