/* crest: memfd descriptors ("memfd"), and the memfd that restore makes
 * for each saved memory object (shmem.c), which memfd descriptors and
 * mappings of it share. */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ioctl.h>
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
#include "util.h"

/* A memfd descriptor: its object's bytes (shared with its mappings) and
   seals. */
static int
parse_memfd(struct rctx *c, yajl_val v, struct rfile *f, crest_error_t *err)
{
  int64_t seals;
  const struct img_file *df;
  if (!f->data || jget_i64(v, "seals", &seals, err) < 0)
    return crest_error_make(err, EINVAL, "memfd without data or seals");
  df = img_reader_find(c->img, f->data);
  if (!df || seals < 0 || seals > 0x1f || strncmp(f->path, "/memfd:", 7) != 0)
    return crest_error_make(err, EINVAL, "memfd %s: data %s missing, or bad seals or name", f->path,
                            f->data);
  f->seals = seals;
  return 0;
}

/* One memfd per saved memory object, whatever process maps it: the
   mappings share it as they shared the object. */
int
memfile_svc(struct rctx *c, const char *data, const char *path, crest_error_t *err)
{
  char name[250]; /* a memfd's name: at most 249 bytes (NAME_MAX - "memfd:") */
  const char *base;
  size_t len;
  uint64_t size;
  int fd, in;
  for (size_t k = 0; k < c->nmf; k++)
    if (strcmp(c->mf[k].data, data) == 0)
      return c->mf[k].svc;
  base = strncmp(path, "/memfd:", 7) == 0 ? path + 7 : path;
  /* The name maps showed, without the " (deleted)" every memfd's has (a
     deleted file's name comes back as a memfd's: docs/engine.md). */
  len = strlen(base);
  if (len >= 10 && strcmp(base + len - 10, " (deleted)") == 0)
    len -= 10;
  snprintf(name, sizeof name, "%.*s", (int)len, base);
  /* Sealing allowed: a memfd descriptor gets its seals back at the end
     (memfd_seal). */
  fd = syscall(SYS_memfd_create, name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0)
    return crest_error_errno(err, "memfd_create");
  in = img_reader_open_file(c->img, data, &size, err);
  if (in < 0)
    {
      close(fd);
      return -1;
    }
  for (off_t done = 0; done < (off_t)size;)
    {
      char buf[65536];
      ssize_t r = pread(in, buf, sizeof buf, done);
      if (r <= 0 || write_all(fd, buf, r) < 0)
        {
          int e = r < 0 ? errno : EIO;
          close(in), close(fd);
          return crest_error_make(err, e, "refill from %s", data);
        }
      done += r;
    }
  close(in);
  if ((fd = svc_place(c, fd, err)) < 0)
    return -1;
  c->mf = xrealloc(c->mf, (c->nmf + 1) * sizeof *c->mf);
  c->mf[c->nmf].data = data, c->mf[c->nmf].svc = fd;
  c->nmf++;
  return fd;
}

/* A memfd descriptor: a new open of its object's memfd, with the flags
   the descriptor had. */
static int
open_memfd(struct rctx *c, const struct rfile *f, int flags, crest_error_t *err)
{
  cleanup_free char *self = NULL;
  int m = memfile_svc(c, f->data, f->path, err);
  if (m < 0)
    return -1;
  self = xasprintf("/proc/self/fd/%d", m);
  m = open(self, flags);
  if (m < 0)
    return crest_error_errno(err, "restore: reopen memfd %s", f->path);
  return m;
}

/* A memfd descriptor's seals go on once its object is refilled and every
   descriptor of it is open (F_SEAL_SEAL forbids later seals). Checkpoint
   refuses write seals on an object with shared mappings, which the tasks
   could not map again. A memfd with no descriptor left shows no seals
   without map_files: it gets none. */
static int
memfd_seal(struct rctx *c, struct rfile *f, crest_error_t *err)
{
  if (!f->seals)
    return 0;
  /* Two open file descriptions of one memfd: sealed once. */
  for (size_t k = 0; k < c->nmf; k++)
    if (strcmp(c->mf[k].data, f->data) == 0
        && (fcntl(c->mf[k].svc, F_GET_SEALS) & f->seals) != f->seals
        && fcntl(c->mf[k].svc, F_ADD_SEALS, f->seals) < 0)
      return crest_error_errno(err, "restore: memfd %s: seals %#x", f->path, f->seals);
  return 0;
}

/* One object with its mappings (shmem.c). */
static int
memfd_probe(struct dctx *c, struct dproc *p, const struct fd_probe *d, struct dfile *nf,
            crest_error_t *err)
{
  const struct shm_obj *o;
  if (!S_ISREG(d->st->st_mode) || strncmp(d->link, "/memfd:", 7) != 0)
    return 0;
  if (shm_save_fd(&c->shm, c->w, p->pid, d->fd, d->st, d->link, &o, err) < 0)
    return -1;
  nf->data = xstrdup(o->data);
  nf->seals = o->seals;
  return 1;
}

static void
memfd_write(struct dctx *c, const struct dfile *f, yajl_gen g)
{
  files_put_attrs(c, f, g);
  jput_int(g, "seals", f->seals);
}

static int
memfd_open(struct rctx *c, struct rfile *f, int flags, crest_error_t *err)
{
  int fd = open_memfd(c, f, flags, err);
  if (fd < 0)
    return -1;
  return file_place(c, f, fd, true, err);
}

const struct fd_ops fd_memfd_ops = {
  .type = "memfd",
  .flags = FDT_PATH | FDT_DATA,
  .probe = memfd_probe,
  .write = memfd_write,
  .parse = parse_memfd,
  .open = memfd_open,
  .finish = memfd_seal,
};
