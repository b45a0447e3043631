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
  size_t pl = strlen(f->path);
  df = img_reader_find(c->img, f->data);
  /* a memfd's name, or an unlinked file's (one the tree also maps) */
  if (!df || seals < 0 || seals > 0x1f
      || (strncmp(f->path, "/memfd:", 7) != 0
          && !(f->path[0] == '/' && pl > 10 && strcmp(f->path + pl - 10, " (deleted)") == 0)))
    return crest_error_make(err, EINVAL, "memfd %s: data %s missing, or bad seals or name", f->path,
                            f->data);
  f->seals = seals;
  /* an unlinked file's: its mode, to make it again as a file */
  if (strncmp(f->path, "/memfd:", 7) != 0)
    {
      int64_t mode;
      crest_error_t e = NULL;
      if (jget_i64(v, "file_mode", &mode, &e) == 0 && mode >= 0 && mode <= 07777)
        f->file_mode = (int)mode, f->as_file = true;
      crest_error_release(&e);
    }
  return 0;
}

/* SVC is the descriptor every mapping and descriptor of object DATA uses. */
static void
mf_add(struct rctx *c, const char *data, int svc)
{
  c->mf = xrealloc(c->mf, (c->nmf + 1) * sizeof *c->mf);
  c->mf[c->nmf].data = data, c->mf[c->nmf].svc = svc;
  c->mf[c->nmf].svc_ro = -1;
  c->nmf++;
}

int
memfile_svc_ro(struct rctx *c, int svc, crest_error_t *err)
{
  char path[64];
  int fd;
  for (size_t k = 0; k < c->nmf; k++)
    if (c->mf[k].svc == svc)
      {
        if (c->mf[k].svc_ro >= 0)
          return c->mf[k].svc_ro;
        snprintf(path, sizeof path, "/proc/self/fd/%d", svc);
        if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
          return crest_error_errno(err, "open memfd %s again read-only", c->mf[k].data);
        if ((fd = svc_place(c, fd, err)) < 0)
          return -1;
        return c->mf[k].svc_ro = fd;
      }
  return crest_error_make(err, EINVAL, "memfd descriptor %d unknown", svc);
}

static const struct rmemfile *
memfile_find(const struct rctx *c, const char *data)
{
  for (size_t i = 0; i < c->nmemfiles; i++)
    if (strcmp(c->memfiles[i].data, data) == 0)
      return &c->memfiles[i];
  return NULL;
}

uint64_t
memfile_size(const struct rctx *c, const char *data, uint64_t dsize)
{
  const struct rmemfile *m = memfile_find(c, data);
  return m ? m->size : dsize;
}

int
memfiles_parse(struct rctx *c, crest_error_t *err)
{
  yajl_val *items;
  long n;
  if (!yajl_tree_get(c->tree, (const char *[]){ "memfiles", NULL }, yajl_t_any))
    return 0;
  CHECK(c->img->format >= CREST_IMAGE_FORMAT_MEMFILES, "image %s: memfiles in a format %d image",
        c->o->image_dir, c->img->format);
  n = jget_array(c->tree, "memfiles", &items, err);
  CHECK(n >= 0 && n <= 65536, "image %s: bad memfiles list", c->o->image_dir);
  c->memfiles = plan_zalloc(c, (n + 1) * sizeof *c->memfiles);
  for (long i = 0; i < n; i++)
    {
      struct rmemfile *m = &c->memfiles[i];
      const struct img_file *df;
      cleanup_free uint64_t(*ext)[2] = NULL;
      cleanup_free char *what = NULL;
      long ne;
      if (jget_str(items[i], "data", &m->data, err) < 0
          || jget_u64(items[i], "size", &m->size, err) < 0)
        return crest_error_wrap(err, "image %s: memfile %ld", c->o->image_dir, i);
      df = img_reader_find(c->img, m->data);
      CHECK(df && m->size <= (1ULL << 30) && !memfile_find(c, m->data),
            "image %s: memfile %ld: data %s missing, listed twice, or size over 1 GiB",
            c->o->image_dir, i, m->data);
      what = xasprintf("image %s: memfile %s", c->o->image_dir, m->data);
      if ((ne = jget_extents(items[i], m->size, 1, 65536, df->size, what, &ext, err)) < 0)
        return -1;
      m->ext = plan_zalloc(c, (ne + 1) * sizeof *m->ext);
      memcpy(m->ext, ext, ne * sizeof *m->ext);
      m->next = ne;
      c->nmemfiles++;
    }
  return 0;
}

/* FD filled with the bytes of the image's file DATA: the whole object, or
   its extents (the rest holes, which read as zeros). */
static int
refill(struct rctx *c, int fd, const char *data, crest_error_t *err)
{
  const struct rmemfile *m = memfile_find(c, data);
  uint64_t size, at = 0;
  int in = img_reader_open_file(c->img, data, &size, err);
  if (in < 0)
    return -1;
  if (m && ftruncate(fd, m->size) < 0)
    {
      close(in);
      return crest_error_errno(err, "refill from %s: size", data);
    }
  for (size_t k = 0; k < (m ? m->next : 1); k++)
    {
      uint64_t to = m ? m->ext[k][0] : 0, len = m ? m->ext[k][1] : size;
      for (uint64_t done = 0; done < len;)
        {
          char buf[65536];
          ssize_t r = pread(in, buf, len - done < sizeof buf ? len - done : sizeof buf, at);
          if (r <= 0 || pwrite_all(fd, buf, r, to + done) < 0)
            {
              int e = r < 0 ? errno : EIO;
              close(in);
              return crest_error_sys(err, e, "refill from %s", data);
            }
          done += r, at += r;
        }
    }
  close(in);
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
  int fd;
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
  if (refill(c, fd, data, err) < 0)
    {
      close(fd);
      return -1;
    }
  if ((fd = svc_place(c, fd, err)) < 0)
    return -1;
  mf_add(c, data, fd);
  return fd;
}

/* The first descriptor of an unlinked file the tree also maps (F has its
   mode): the file made again at its path, with its bytes and mode, its
   descriptor opened with its own flags, then unlinked: /proc shows the
   same name, "(deleted)", for the descriptor and the mappings, which
   share it (memfile_svc finds it). -1 failed (the path is taken, its
   directory gone or closed to the restorer: a memfd in its place would
   show another name and inode); -2 made already: the caller opens it
   again. */
static int
memfile_as_file(struct rctx *c, const struct rfile *f, int flags, crest_error_t *err)
{
  size_t len = strlen(f->path) - 10;
  cleanup_free char *name = xasprintf("%.*s", (int)len, f->path);
  int svc, fd;
  for (size_t k = 0; k < c->nmf; k++)
    if (strcmp(c->mf[k].data, f->data) == 0)
      return -2;
  svc = open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (svc < 0)
    return crest_error_errno(err, "restore: make the unlinked file %s again at its path", name);
  if (fchmod(svc, (mode_t)f->file_mode) < 0 || refill(c, svc, f->data, err) < 0)
    goto fail;
  if ((fd = open(name, flags)) < 0)
    {
      crest_error_errno(err, "restore: open %s again", name);
      goto fail;
    }
  unlink(name);
  if ((svc = svc_place(c, svc, err)) < 0)
    {
      close(fd);
      return -1;
    }
  mf_add(c, f->data, svc);
  return fd;
fail:
  unlink(name);
  close(svc);
  return -1;
}

/* A memfd descriptor: a new open of its object's memfd, with the flags
   the descriptor had. */
static int
open_memfd(struct rctx *c, const struct rfile *f, int flags, crest_error_t *err)
{
  cleanup_free char *self = NULL;
  int m;
  if (f->as_file && (m = memfile_as_file(c, f, flags, err)) != -2)
    return m;
  m = memfile_svc(c, f->data, f->path, err);
  if (m < 0)
    return -1;
  self = xasprintf("/proc/self/fd/%d", m);
  /* O_NOFOLLOW (kept in the flags of an open that had it) would refuse
     the magic link */
  m = open(self, flags & ~O_NOFOLLOW);
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

/* Does a task of the tree map the file ST (its /proc/PID/maps)? */
static bool
tree_maps(const struct dctx *c, const struct stat *st)
{
  for (size_t i = 0; i < c->np; i++)
    {
      cleanup_free char *path = xasprintf("/proc/%d/maps", (int)c->p[i].pid), *maps = NULL;
      crest_error_t e = NULL;
      char *save = NULL;
      if (c->p[i].zombie || read_file(path, &maps, NULL, 0, &e) < 0)
        {
          crest_error_release(&e);
          continue;
        }
      for (char *l = strtok_r(maps, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
        {
          unsigned ma, mi;
          unsigned long long ino;
          if (sscanf(l, "%*x-%*x %*s %*x %x:%x %llu", &ma, &mi, &ino) == 3 && ino == st->st_ino
              && ma == major(st->st_dev) && mi == minor(st->st_dev))
            return true;
        }
    }
  return false;
}

/* One object with its mappings (shmem.c): a memfd, or an unlinked file
   that a task of the tree also maps (a mapping of a deleted file comes
   back as a memfd: its descriptors open that memfd too, so that both
   keep sharing its bytes; Python's multiprocessing holds its shared
   arenas so). */
static int
memfd_probe(struct dctx *c, struct dproc *p, const struct fd_probe *d, struct dfile *nf,
            crest_error_t *err)
{
  const struct shm_obj *o;
  size_t ll = strlen(d->link);
  if (!S_ISREG(d->st->st_mode))
    return 0;
  if (strncmp(d->link, "/memfd:", 7) != 0
      && !(d->st->st_nlink == 0 && ll > 10 && strcmp(d->link + ll - 10, " (deleted)") == 0
           && tree_maps(c, d->st)))
    return 0;
  /* The restore makes it again at its path (memfile_as_file): its
     directory must still be there (knotd removes the directory of its
     temporary configuration database with it). */
  if (strncmp(d->link, "/memfd:", 7) != 0 && unlinked_dir_check(c, p, d->fd, d->link, err) < 0)
    return -1;
  if (shm_save_fd(&c->shm, c->w, p->pid, d->fd, d->st, d->link, &o, err) < 0)
    return -1;
  nf->u.mode = (int)(d->st->st_mode & 07777);
  nf->data = xstrdup(o->data);
  nf->seals = o->seals;
  return 1;
}

static void
memfd_write(struct dctx *c, const struct dfile *f, yajl_gen g)
{
  files_put_attrs(c, f, g);
  files_put_locks(c, f, g);
  jput_int(g, "seals", f->seals);
  if (strncmp(f->path, "/memfd:", 7) != 0)
    jput_int(g, "file_mode", f->u.mode);
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
  .flags = FDT_LOCKS | FDT_PATH | FDT_DATA,
  .probe = memfd_probe,
  .write = memfd_write,
  .parse = parse_memfd,
  .open = memfd_open,
  .finish = memfd_seal,
};
