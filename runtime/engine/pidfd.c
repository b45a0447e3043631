/* crest: pidfds (pidfd_open, CLONE_PIDFD), both directions.
 *
 * A pidfd names a process of the tree: its fdinfo's "Pid:" line (in the
 * reader's PID namespace; -1 once the process is reaped). A new one can
 * only be opened once its process exists, so a pidfd is not opened by the
 * restoring process with the other files: the task's blob opens it, after
 * every task of the tree exists (BLOB_OP_PIDFD), at its descriptor number;
 * a second descriptor of the same file in the process is a dup of the
 * first. Refused in one line: a pidfd of a process outside the tree, of a
 * reaped one, of a thread (PIDFD_THREAD), and one file held by two
 * processes (each would get a file of its own). docs/engine.md, "Files". */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "engine.h"
#include "engine-int.h"
#include "image.h"
#include "util.h"
#include "blob/blob-abi.h"
#include "dump-int.h"
#include "files.h"
#include "restore-int.h"

bool
pidfd_link(const char *link)
{
  return strcmp(link, "anon_inode:[pidfd]") == 0 || strncmp(link, "pidfd:", 6) == 0;
}

static int
pidfd_probe(struct dctx *c, struct dproc *p, const struct fd_probe *d, struct dfile *nf,
            crest_error_t *err)
{
  cleanup_free char *info = NULL;
  const struct dproc *t;
  const char *s;
  long pid;

  if (!pidfd_link(d->link))
    return 0;
  if (evfd_fdinfo(p->pid, d->fd, &info, err) < 0)
    return -1;
  if (!(s = status_field(info, "Pid")))
    return crest_error_make(err, EIO, "task %d: fd %d (%s): fdinfo shows no Pid", p->pid, d->fd,
                            d->link);
  pid = strtol(s, NULL, 10);
  if (d->flags & O_EXCL)
    return crest_error_make(err, ENOTSUP,
                            "task %d: fd %d (%s): a pidfd of a thread (PIDFD_THREAD) is not "
                            "restored: cannot checkpoint it",
                            p->pid, d->fd, d->link);
  if (pid <= 0)
    return crest_error_make(err, ENOTSUP,
                            "task %d: fd %d (%s): a pidfd of a process that has exited and been "
                            "reaped, which restore cannot open again: cannot checkpoint it",
                            p->pid, d->fd, d->link);
  if (!(t = find_proc(c, (pid_t)pid)))
    return crest_error_make(err, ENOTSUP,
                            "task %d: fd %d (%s): a pidfd of process %ld, outside the "
                            "checkpointed tree: cannot checkpoint it",
                            p->pid, d->fd, d->link, pid);
  nf->priv = xmalloc(sizeof(pid_t));
  *(pid_t *)nf->priv = t->ipid;
  return 1;
}

/* Every descriptor on a pidfd file is in one process. */
static int
pidfd_resolve(struct dctx *c, struct dfile *f, crest_error_t *err)
{
  for (size_t i = 0; i < c->nfds; i++)
    if (c->fds[i].file == f->id && c->fds[i].pid != f->pid)
      return crest_error_make(err, ENOTSUP,
                              "task %d: fd %d: a pidfd it shares with process %d (inherited or "
                              "passed), which restore would give each a file of its own: cannot "
                              "checkpoint it",
                              c->fds[i].pid, c->fds[i].fd, f->pid);
  return 0;
}

static void
pidfd_write(struct dctx *c, const struct dfile *f, yajl_gen g)
{
  jput_int(g, "pid", *(const pid_t *)f->priv);
  if (c->w->format < CREST_IMAGE_FORMAT_TIMERS)
    c->w->format = CREST_IMAGE_FORMAT_TIMERS; /* format 9: pidfds and POSIX timers */
}

static int
pidfd_parse(struct rctx *c, yajl_val v, struct rfile *f, crest_error_t *err)
{
  int64_t pid;
  CHECK(c->img->format >= CREST_IMAGE_FORMAT_TIMERS, "file %d: a pidfd in an image of format %d",
        f->id, c->img->format);
  if (jget_i64(v, "pid", &pid, err) < 0)
    return -1;
  CHECK(pid > 0 && pid < (1 << 22), "file %d: pidfd of process %lld", f->id, (long long)pid);
  CHECK((f->flags & ~(O_NONBLOCK | O_ACCMODE | O_LARGEFILE)) == 0, "file %d: pidfd flags %#o",
        f->id, f->flags);
  f->priv = xmalloc(sizeof(pid_t));
  *(pid_t *)f->priv = (pid_t)pid;
  f->svc = -1;
  return 0;
}

/* In the new task, as the blob's last descriptors: each pidfd of process
   P opened again (or a dup of the first descriptor of the same file). */
void
pidfd_ops(const struct rctx *c, const struct rproc *p, struct oplist *l)
{
  for (size_t k = 0; k < p->nfds; k++)
    {
      const struct rfd *d = &p->fds[k];
      const struct rfile *f = &c->f[d->file];
      const struct rfd *first = NULL;
      if (f->ops != &fd_pidfd_ops)
        continue;
      for (size_t j = 0; j < k && !first; j++)
        if (p->fds[j].file == d->file)
          first = &p->fds[j];
      if (first)
        OPEQ(l, SYS_dup3, d->fd, first->fd, d->fd, d->cloexec ? O_CLOEXEC : 0, 0, 0, 0);
      else
        OPEQ(l, BLOB_OP_PIDFD, d->fd, *(const pid_t *)f->priv, f->flags & O_NONBLOCK, d->fd,
             d->cloexec, 0, 0);
    }
}

const struct fd_ops fd_pidfd_ops = {
  .type = "pidfd",
  .flags = FDT_LATE,
  .probe = pidfd_probe,
  .resolve = pidfd_resolve,
  .write = pidfd_write,
  .parse = pidfd_parse,
};
