/* crest: pipes and named FIFOs (docs/engine.md, "Pipes and FIFOs"): the
 * descriptor types "pipe" and "fifo", and the pipe list of the image with
 * each pipe's unread bytes, both directions. */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include "dump-int.h"
#include "engine-int.h"
#include "files.h"
#include "image.h"
#include "image-check.h"
#include "restore-int.h"
#include "util.h"

/* FD is an end of a pipe (crest's own copy of the tree's open file
   description). Is the other end closed in every process, not only in the
   tree? The kernel tells through poll: a read end with no writer left
   reports POLLHUP, a write end with no reader left POLLERR. 1 yes, 0 no. */
int
pipe_other_end_closed(int fd, bool read_end)
{
  struct pollfd p = { .fd = fd, .events = read_end ? POLLIN : POLLOUT };
  if (poll(&p, 1, 0) < 0)
    return 0;
  return (p.revents & (read_end ? POLLHUP : POLLERR)) != 0;
}

/* Another open file description of the pipe end SVC (crest's descriptor),
   with the status flags FLAGS: two opens of one end keep their own
   O_NONBLOCK. Opening the pipe through /proc/self/fd makes a new one. */
int
pipe_reopen(int svc, bool read_end, int flags, crest_error_t *err)
{
  cleanup_free char *p = xasprintf("/proc/self/fd/%d", svc);
  int fd = open(p, (read_end ? O_RDONLY : O_WRONLY) | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return crest_error_errno(err, "restore: open a pipe end again");
  if (fcntl(fd, F_SETFL, flags & (O_NONBLOCK | O_APPEND)) < 0)
    {
      close(fd);
      return crest_error_errno(err, "restore: pipe flags");
    }
  return fd;
}
static struct dpipe *
find_pipe(struct dctx *c, uint64_t ino)
{
  for (size_t i = 0; i < c->npp; i++)
    if (c->pp[i].ino == ino)
      return &c->pp[i];
  c->pp = xrealloc(c->pp, (c->npp + 1) * sizeof *c->pp);
  memset(&c->pp[c->npp], 0, sizeof *c->pp);
  c->pp[c->npp].ino = ino;
  c->pp[c->npp].low_fds_only = true;
  return &c->pp[c->npp++];
}

/* Is the other end of pipe PP, which the tree holds on stdio only, closed
   in every process? Asked of the first of its descriptors. */
static bool
stdio_end_closed(struct dctx *c, const struct dpipe *pp)
{
  for (size_t k = 0; k < c->nfds; k++)
    if (c->f[c->fds[k].file].ops == &fd_pipe_ops && c->f[c->fds[k].file].ino_pipe == pp->ino)
      {
        crest_error_t e = NULL;
        cleanup_close int d = getfd(c->fds[k].pid, c->fds[k].fd, &e);
        crest_error_release(&e);
        return d >= 0 && pipe_other_end_closed(d, pp->has_r) == 1;
      }
  return false;
}

/* Pipes: both ends must be in the tree (or be inherited stdio); their
   unread bytes are peeked with tee(), which leaves them in place. */
int
dump_pipes(struct dctx *c, crest_error_t *err)
{
  for (size_t i = 0; i < c->npp; i++)
    {
      struct dpipe *pp = &c->pp[i];
      cleanup_close int rd = -1;
      int tmp[2];
      ssize_t n;
      if (pp->path)
        {
          /* A reading descriptor of the tree is peeked like a pipe's. With
             only writers, the FIFO is opened anew through the task's own
             descriptor (its path is the container's, not the host's): a
             reader and writer at once never blocks and leaves the FIFO as it
             was. */
          if (!pp->has_r)
            {
              cleanup_free char *lp = xasprintf("/proc/%d/fd/%d", pp->opid, pp->ofd);
              rd = open(lp, O_RDWR | O_NONBLOCK | O_CLOEXEC);
              if (rd < 0)
                return crest_error_errno(err,
                                         "task %d: fd %d (named FIFO %s): open to read its bytes",
                                         pp->opid, pp->ofd, pp->path);
              pp->rpid = pp->opid, pp->rfd = pp->ofd;
            }
        }
      else if (!pp->has_r || !pp->has_w)
        {
          /* On stdio only, with its other end open outside the tree (a
             shell's pipeline into it): the restorer's stdio takes its
             place, as crun's. With that end closed everywhere (the
             writer of `seq | prog` gone), it is the tree's own, and is
             saved like any other: taken for stdio, its unread bytes were
             lost and the restorer's stdin read instead (December 2026). */
          if (pp->low_fds_only && !stdio_end_closed(c, pp))
            {
              for (size_t k = 0; k < c->nf; k++)
                if (c->f[k].ops == &fd_pipe_ops && c->f[k].ino_pipe == pp->ino)
                  c->f[k].ops = &fd_inherited_ops;
              pp->ino = 0;
              continue;
            }
          for (size_t k = 0; k < c->nfds && !pp->no_r && !pp->no_w; k++)
            if (c->f[c->fds[k].file].ops == &fd_pipe_ops
                && c->f[c->fds[k].file].ino_pipe == pp->ino)
              {
                cleanup_close int d = getfd(c->fds[k].pid, c->fds[k].fd, err);
                if (d < 0)
                  return -1;
                if (!pipe_other_end_closed(d, pp->has_r))
                  return crest_error_make(err, ENOTSUP,
                                          "task %d: fd %d (pipe:[%" PRIu64
                                          "]): its other end is open in a process outside the "
                                          "checkpointed tree",
                                          c->fds[k].pid, c->fds[k].fd, pp->ino);
                /* Closed everywhere: restore closes it again. Bytes left
                   without a reader are peeked through a read end opened
                   anew from the writer's descriptor. */
                pp->no_r = !pp->has_r, pp->no_w = !pp->has_w;
                if (pp->no_r)
                  {
                    cleanup_free char *lp
                        = xasprintf("/proc/%d/fd/%d", c->fds[k].pid, c->fds[k].fd);
                    rd = open(lp, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
                    if (rd < 0)
                      return crest_error_errno(err, "task %d: fd %d: open the pipe to read it",
                                               c->fds[k].pid, c->fds[k].fd);
                    pp->rpid = c->fds[k].pid, pp->rfd = c->fds[k].fd;
                  }
              }
        }
      if (rd < 0)
        rd = getfd(pp->rpid, pp->rfd, err);
      if (rd < 0)
        return -1;
      pp->size = fcntl(rd, F_GETPIPE_SZ);
      if (pp->size < 0)
        return crest_error_errno(err, "task %d: fd %d: F_GETPIPE_SZ", pp->rpid, pp->rfd);
      if (pipe2(tmp, O_CLOEXEC) < 0)
        return crest_error_errno(err, "pipe");
      if (fcntl(tmp[1], F_SETPIPE_SZ, pp->size) < 0)
        {
          close(tmp[0]), close(tmp[1]);
          return crest_error_errno(err, "task %d: fd %d: size a pipe to peek %d bytes", pp->rpid,
                                   pp->rfd, pp->size);
        }
      n = tee(rd, tmp[1], pp->size, SPLICE_F_NONBLOCK);
      if (n < 0 && errno == EAGAIN)
        n = 0;
      if (n < 0)
        {
          close(tmp[0]), close(tmp[1]);
          return crest_error_errno(err, "task %d: fd %d: peek pipe with tee", pp->rpid, pp->rfd);
        }
      pp->len = n;
      if (n > 0)
        {
          cleanup_free char *buf = xmalloc(n);
          struct img_out o;
          if (read_all(tmp[0], buf, n) < 0)
            {
              close(tmp[0]), close(tmp[1]);
              return crest_error_errno(err, "read peeked pipe bytes");
            }
          pp->data = xasprintf("pipe-%" PRIu64 ".img", pp->ino);
          if (img_out_open(c->w, pp->data, &o, err) < 0 || img_out_write(&o, buf, n, err) < 0
              || img_out_close(&o, err) < 0)
            {
              close(tmp[0]), close(tmp[1]);
              return -1;
            }
        }
      close(tmp[0]), close(tmp[1]);
    }
  return 0;
}

/* The pipes and FIFOs with their unread bytes; every pipe descriptor's
   pipe is among them. */
int
pipes_parse(struct rctx *c, crest_error_t *err)
{
  yajl_val *items;
  long n;

  n = jget_array(c->tree, "pipes", &items, err);
  if (n < 0 || n > (1 << 20))
    return crest_error_make(err, EINVAL, "image %s: tree.json: bad pipe list", c->o->image_dir);
  c->pp = xzalloc((n + 1) * sizeof *c->pp);
  for (long i = 0; i < n; i++)
    {
      struct rpipe *pp = &c->pp[i];
      crest_error_t e2 = NULL;
      if (jget_u64(items[i], "ino", &pp->ino, err) < 0
          || jget_i64(items[i], "size", &pp->size, err) < 0)
        return crest_error_wrap(err, "image %s: tree.json: pipe %ld", c->o->image_dir, i);
      if (jget_str(items[i], "data", &pp->data, &e2) < 0)
        pp->data = NULL;
      crest_error_release(&e2);
      if (jget_str(items[i], "path", &pp->path, &e2) < 0)
        pp->path = NULL;
      crest_error_release(&e2);
      /* F_SETPIPE_SZ takes an int, and the saved bytes must fit. */
      if (pp->size < 0 || pp->size > INT_MAX)
        return crest_error_make(err, EINVAL,
                                "image %s: tree.json: pipe %ld: size %lld out of range",
                                c->o->image_dir, i, (long long)pp->size);
      if (pp->data)
        {
          const struct img_file *df = img_reader_find(c->img, pp->data);
          if (!df || df->size > (uint64_t)(pp->size > 0 ? pp->size : 65536))
            return crest_error_make(err, EINVAL,
                                    "image %s: tree.json: pipe %ld: data %s missing or larger "
                                    "than the pipe",
                                    c->o->image_dir, i, pp->data);
        }
      if (pp->path && !img_path_ok(pp->path))
        return crest_error_make(err, EINVAL, "image %s: tree.json: pipe %ld: relative FIFO path",
                                c->o->image_dir, i);
      pp->no_r = has_key(items[i], "no_reader");
      pp->no_w = has_key(items[i], "no_writer");
      if ((pp->no_r || pp->no_w)
          && (c->img->format < CREST_IMAGE_FORMAT_ATTRS || pp->path || (pp->no_r && pp->no_w)))
        return crest_error_make(err, EINVAL,
                                "image %s: tree.json: pipe %ld: bad no_reader/no_writer",
                                c->o->image_dir, i);
      pp->r = pp->w = -1;
    }
  c->npp = n;
  for (size_t i = 0; i < c->nf; i++)
    if (c->f[i].ops == &fd_pipe_ops)
      {
        bool found = false;
        for (size_t k = 0; k < c->npp && !found; k++)
          found = c->pp[k].ino == c->f[i].pipe;
        if (!found)
          return crest_error_make(err, EINVAL,
                                  "image %s: file %zu: pipe:[%" PRIu64 "] is not in the pipe list",
                                  c->o->image_dir, i, c->f[i].pipe);
      }
  return 0;
}

static int
pipe_probe(struct dctx *c, struct dproc *p, const struct fd_probe *d, struct dfile *nf,
           crest_error_t *err)
{
  struct dpipe *pp;
  (void)err;
  if (!S_ISFIFO(d->st->st_mode) || strncmp(d->link, "pipe:[", 6) != 0)
    return 0;
  pp = find_pipe(c, d->st->st_ino);
  nf->ino_pipe = d->st->st_ino;
  nf->pipe_read = (d->flags & O_ACCMODE) == O_RDONLY;
  if (nf->pipe_read && !pp->has_r)
    pp->rpid = p->pid, pp->rfd = d->fd;
  if (nf->pipe_read)
    pp->has_r = true;
  else
    pp->has_w = true;
  return 1;
}

static void
pipe_attach(struct dctx *c, struct dfile *f, int fd)
{
  if (fd > 2)
    find_pipe(c, f->ino_pipe)->low_fds_only = false;
}

static void
pipe_write(struct dctx *c, const struct dfile *f, yajl_gen g)
{
  (void)c;
  jput_u64(g, "pipe", f->ino_pipe);
  jput_bool(g, "read_end", f->pipe_read);
}

static int
pipe_parse(struct rctx *c, yajl_val v, struct rfile *f, crest_error_t *err)
{
  (void)c;
  if (jget_u64(v, "pipe", &f->pipe, err) < 0 || jget_bool(v, "read_end", &f->read_end, err) < 0)
    return -1;
  return 0;
}

/* An end of a pipe pipes_open made. */
static int
pipe_open(struct rctx *c, struct rfile *f, int flags, crest_error_t *err)
{
  struct rpipe *pp = NULL;
  (void)flags;
  for (size_t k = 0; k < c->npp; k++)
    if (c->pp[k].ino == f->pipe)
      pp = &c->pp[k];
  if (!pp)
    return crest_error_make(err, EINVAL,
                            "image %s: file %d: pipe:[%" PRIu64 "] is not in the pipe list",
                            c->o->image_dir, f->id, f->pipe);
  f->svc = f->read_end ? pp->r : pp->w;
  /* A second open file description of the same end: its own. */
  if (f->read_end ? pp->r_taken : pp->w_taken)
    {
      int d = pipe_reopen(f->svc, f->read_end, f->flags, err);
      if (d < 0 || (f->svc = svc_place(c, d, err)) < 0)
        return -1;
      return 0;
    }
  *(f->read_end ? &pp->r_taken : &pp->w_taken) = true;
  /* O_NONBLOCK lives in the open file description. */
  if (fcntl(f->svc, F_SETFL, f->flags & (O_NONBLOCK | O_APPEND)) < 0)
    return crest_error_errno(err, "restore: pipe flags");
  return 0;
}

const struct fd_ops fd_pipe_ops = {
  .type = "pipe",
  .probe = pipe_probe,
  .attach = pipe_attach,
  .write = pipe_write,
  .parse = pipe_parse,
  .open = pipe_open,
};

/* A named FIFO: reopened by path; its bytes are kept like a pipe's. */
static int
fifo_probe(struct dctx *c, struct dproc *p, const struct fd_probe *d, struct dfile *nf,
           crest_error_t *err)
{
  struct dpipe *pp;
  if (!S_ISFIFO(d->st->st_mode) || d->link[0] != '/')
    return 0;
  pp = find_pipe(c, d->st->st_ino);
  nf->ino_pipe = d->st->st_ino;
  if (!pp->path)
    pp->path = xstrdup(d->link), pp->opid = p->pid, pp->ofd = d->fd;
  if ((d->flags & O_ACCMODE) != O_WRONLY && !pp->has_r)
    pp->has_r = true, pp->rpid = p->pid, pp->rfd = d->fd;
  return files_check_path(c, p, d, false, err) < 0 ? -1 : 1;
}

static void
fifo_write(struct dctx *c, const struct dfile *f, yajl_gen g)
{
  (void)c;
  jput_u64(g, "pipe", f->ino_pipe);
}

static int
fifo_parse(struct rctx *c, yajl_val v, struct rfile *f, crest_error_t *err)
{
  (void)c;
  return jget_u64(v, "pipe", &f->pipe, err);
}

static int
fifo_open(struct rctx *c, struct rfile *f, int flags, crest_error_t *err)
{
  int fd = img_open_typed(f->path, flags | O_NONBLOCK, S_IFIFO, "FIFO", err);
  if (fd >= 0 && !(f->flags & O_NONBLOCK) && fcntl(fd, F_SETFL, f->flags & O_APPEND) < 0)
    {
      close(fd);
      return crest_error_errno(err, "restore: FIFO %s: flags", f->path);
    }
  return file_place(c, f, fd, false, err);
}

const struct fd_ops fd_fifo_ops = {
  .type = "fifo",
  .flags = FDT_PATH,
  .probe = fifo_probe,
  .write = fifo_write,
  .parse = fifo_parse,
  .open = fifo_open,
};

/* The "pipes" list of tree.json. */
void
pipes_put(struct dctx *c, yajl_gen g)
{
  jput_key(g, "pipes");
  yajl_gen_array_open(g);
  for (size_t i = 0; i < c->npp; i++)
    if (c->pp[i].ino)
      {
        yajl_gen_map_open(g);
        jput_u64(g, "ino", c->pp[i].ino);
        jput_int(g, "size", c->pp[i].size);
        if (c->pp[i].path)
          jput_str(g, "path", c->pp[i].path);
        if (c->pp[i].data)
          jput_str(g, "data", c->pp[i].data);
        if (c->pp[i].no_r || c->pp[i].no_w)
          jput_bool(g, c->pp[i].no_r ? "no_reader" : "no_writer", put_attrs(c, 1));
        yajl_gen_map_close(g);
      }
  yajl_gen_array_close(g);
}

/* A named FIFO that a process outside the tree held open since the
   checkpoint still has its bytes: refilling it would repeat them. Returns
   1 when the FIFO already begins with the SIZE saved bytes (they are left
   alone), 0 when it is empty, -1 (refused) when it holds something else. */
static int
fifo_still_holds(int fd, const char *path, const char *buf, uint64_t size, crest_error_t *err)
{
  int have = 0, tmp[2];
  if (ioctl(fd, FIONREAD, &have) < 0)
    return crest_error_errno(err, "restore: named FIFO %s: FIONREAD", path);
  if (have == 0)
    return 0;
  if (pipe2(tmp, O_CLOEXEC | O_NONBLOCK) < 0)
    return crest_error_errno(err, "restore: pipe");
  (void)fcntl(tmp[1], F_SETPIPE_SZ, have);
  cleanup_free char *peek = xmalloc(size + 1);
  ssize_t n = tee(fd, tmp[1], size, SPLICE_F_NONBLOCK);
  ssize_t got = n > 0 ? read(tmp[0], peek, (size_t)n) : -1;
  close(tmp[0]), close(tmp[1]);
  if ((uint64_t)have >= size && got == (ssize_t)size && memcmp(peek, buf, size) == 0)
    return 1;
  return crest_error_make(err, EEXIST,
                          "restore: named FIFO %s already holds %d byte(s) other than the %" PRIu64
                          " saved (a process outside the tree has it open): refilling it would "
                          "repeat or reorder them",
                          path, have, size);
}

/* Each pipe and named FIFO of the image made again, refilled with its
   bytes, both ends among the service descriptors. */
int
pipes_open(struct rctx *c, crest_error_t *err)
{
  for (size_t i = 0; i < c->npp; i++)
    {
      struct rpipe *pp = &c->pp[i];
      int fds[2];
      if (pp->path)
        {
          /* Named FIFO: one descriptor that both reads and writes holds the
             bytes until the tree's own descriptors are open. */
          fds[0] = img_open_typed(pp->path, O_RDWR | O_NONBLOCK, S_IFIFO, "named FIFO", err);
          if (fds[0] < 0)
            return -1;
          fds[1] = fcntl(fds[0], F_DUPFD_CLOEXEC, 0);
        }
      else if (pipe2(fds, O_CLOEXEC) < 0)
        return crest_error_errno(err, "restore: pipe");
      if (pp->size > 0 && fcntl(fds[1], F_SETPIPE_SZ, (int)pp->size) < 0)
        {
          close(fds[0]), close(fds[1]);
          return crest_error_errno(err, "restore: pipe:[%" PRIu64 "]: set size %lld", pp->ino,
                                   (long long)pp->size);
        }
      if (pp->data)
        {
          uint64_t size;
          cleanup_close int d = img_reader_open_file(c->img, pp->data, &size, err);
          cleanup_free char *buf = NULL;
          if (d < 0 || size > (uint64_t)(pp->size > 0 ? pp->size : 65536))
            {
              close(fds[0]), close(fds[1]);
              if (d >= 0)
                crest_error_make(err, EINVAL, "image %s: %s: more bytes than the pipe holds",
                                 c->o->image_dir, pp->data);
              return -1;
            }
          buf = xmalloc(size + 1);
          int held = 0;
          if (read_all(d, buf, size) < 0
              || (pp->path && (held = fifo_still_holds(fds[0], pp->path, buf, size, err)) < 0))
            {
              close(fds[0]), close(fds[1]);
              return held < 0 ? -1
                              : crest_error_errno(err, "image %s: %s", c->o->image_dir, pp->data);
            }
          /* Non-blocking: bytes that do not fit fail here instead of
             waiting for a reader that never comes. */
          if (fcntl(fds[1], F_SETFL, O_NONBLOCK) < 0 || (!held && write_all(fds[1], buf, size) < 0))
            {
              close(fds[0]), close(fds[1]);
              return crest_error_errno(
                  err, "restore: refill pipe:[%" PRIu64 "] with %" PRIu64 " bytes", pp->ino, size);
            }
        }
      if ((pp->r = svc_place(c, fds[0], err)) < 0 || (pp->w = svc_place(c, fds[1], err)) < 0)
        return -1;
    }
  return 0;
}

/* An end closed in every process at checkpoint is closed again, once
   every descriptor is open. */
void
pipes_close_unused(struct rctx *c)
{
  for (size_t i = 0; i < c->npp; i++)
    if (c->pp[i].no_r || c->pp[i].no_w)
      {
        int *end = c->pp[i].no_r ? &c->pp[i].r : &c->pp[i].w;
        close(*end);
        *end = -1;
      }
}
