/* crest: descriptors of files opened again by path at restore: regular
 * files (unlinked ones with files-unlinked.c), directories, symbolic links
 * (O_PATH), the memory devices, and stdio that leads outside the tree
 * ("inherited"), which the restorer's own stdio replaces. */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Does PATH, resolved inside the task's root as the task would resolve it,
   name the file ST describes? 1 yes, 0 no (absent there, or another file). */
static int
same_in_root(const struct dctx *c, const struct dproc *p, const char *path, const struct stat *st)
{
  crest_error_t e = NULL;
  struct stat pst;
  cleanup_close int pf = open_in_root(c, p, path, O_PATH, &e);
  if (pf < 0)
    {
      crest_error_release(&e);
      return 0;
    }
  if (fstat(pf, &pst) < 0)
    return 0;
  return pst.st_dev == st->st_dev && pst.st_ino == st->st_ino;
}

/* A regular file or directory removed while open, LINK its path with
   " (deleted)" (cut off here); NF its new record (files-unlinked.c). A
   file's contents go into the image once per inode; a directory is empty
   and is made again beside its old name, whose directory must still be
   there. */
static int
dump_removed(struct dctx *c, struct dproc *p, int fd, int flags, char *link, const struct stat *st,
             struct dfile *nf, crest_error_t *err)
{
  link[strlen(link) - 10] = 0;
  nf->u.mode = st->st_mode & 07777;
  nf->u.uid = inner_id(c, &c->uidmap, st->st_uid);
  nf->u.gid = inner_id(c, &c->gidmap, st->st_gid);
  put_attrs(c, 1);
  if (S_ISDIR(st->st_mode))
    {
      cleanup_free char *parent = xstrdup(link);
      cleanup_close int pf = -1;
      *strrchr(parent, '/') = 0;
      pf = open_in_root(c, p, *parent ? parent : "/", O_PATH | O_DIRECTORY, err);
      if (pf < 0)
        return crest_error_wrap(err, "task %d: fd %d: deleted directory %s", p->pid, fd, link);
      nf->deleted_dir = true;
      return 0;
    }
  if (unlinked_dir_check(c, p, fd, link, err) < 0)
    return -1;
  nf->unlinked = true;
  nf->u.same_as = -1;
  for (size_t k = 0; k < c->nf && nf->u.same_as < 0; k++)
    if (c->f[k].unlinked && c->f[k].dev == st->st_dev && c->f[k].ino == st->st_ino)
      nf->u.same_as = c->f[k].id;
  if (nf->u.same_as >= 0)
    return 0;
  return unlinked_dump(c->w, p->pid, fd, flags, st, nf->id, &nf->u, &nf->data, err);
}

int
unlinked_dir_check(struct dctx *c, struct dproc *p, int fd, const char *link, crest_error_t *err)
{
  cleanup_free char *parent = xstrdup(link);
  cleanup_close int pf = -1;
  crest_error_t e = NULL;
  *strrchr(parent, '/') = 0;
  pf = open_in_root(c, p, *parent ? parent : "/", O_PATH | O_DIRECTORY, &e);
  if (pf >= 0)
    return 0;
  crest_error_release(&e);
  return crest_error_make(err, ENOTSUP,
                          "task %d: fd %d (%s): an unlinked file whose directory is gone too "
                          "(or closed to crest): a restore could not make it again beside its "
                          "path: cannot checkpoint it",
                          p->pid, fd, link);
}

/* Process mode: may this crest open the file PF again as the task has it
   open (read, write or both)? The restore, as the same user, opens it so
   before any task exists; a file the task opened before it dropped its
   privileges (a log of root's) or on a file system since made read-only
   was checkpointed, and the tree ended, only for the restore to fail
   ("Permission denied"; until December 2026). The kernel's own check
   (faccessat2 with AT_EACCESS: crest's effective IDs and capabilities).
   A container's restorer is the container's root, not this crest. */
static int
reopenable(struct dctx *c, struct dproc *p, const struct fd_probe *d, int pf, crest_error_t *err)
{
  static const char *const how[] = { "reading", "writing", "reading and writing" };
  int acc = d->flags & O_ACCMODE;
  int want = acc == O_RDONLY ? R_OK : acc == O_WRONLY ? W_OK : R_OK | W_OK;
  char pp[64];
  if (c->o->root_is_ns_init || (d->flags & O_PATH) || acc > O_RDWR)
    return 0;
  snprintf(pp, sizeof pp, "/proc/self/fd/%d", pf);
  if (faccessat(AT_FDCWD, pp, want, AT_EACCESS) == 0
      || (errno != EACCES && errno != EPERM && errno != EROFS))
    return 0;
  return crest_error_make(err, ENOTSUP,
                          "task %d: fd %d (%s): open for %s, which this crest may not open it "
                          "for (%s): a restore could not open it again, cannot checkpoint it",
                          p->pid, d->fd, d->link, how[acc], strerror(errno));
}

int
files_check_path(struct dctx *c, struct dproc *p, const struct fd_probe *d, bool nofollow,
                 crest_error_t *err)
{
  struct stat pst;
  cleanup_close int pf = open_in_root(c, p, d->link, O_PATH | (nofollow ? O_NOFOLLOW : 0), err);
  if (pf < 0)
    return crest_error_wrap(err, "task %d: fd %d (%s)", p->pid, d->fd, d->link);
  if (fstat(pf, &pst) < 0)
    return crest_error_errno(err, "task %d: fd %d (%s): stat by path", p->pid, d->fd, d->link);
  if (pst.st_dev != d->st->st_dev || pst.st_ino != d->st->st_ino)
    return crest_error_make(
        err, ENOTSUP, "task %d: fd %d (%s): the path now names another file, cannot checkpoint it",
        p->pid, d->fd, d->link);
  if (S_ISREG(pst.st_mode) && check_volatile_tmpfs(c, p, pf, d->link, err) < 0)
    return -1;
  return reopenable(c, p, d, pf, err);
}

void
files_put_attrs(struct dctx *c, const struct dfile *f, yajl_gen g)
{
  if (f->data)
    jput_str(g, "data", f->data);
  if (f->unlinked)
    unlinked_put(g, &f->u);
  if (f->deleted_dir)
    deleted_dir_put(g, &f->u);
  files_put_locks(c, f, g);
}

void
files_put_locks(struct dctx *c, const struct dfile *f, yajl_gen g)
{
  /* A flock's taker as the tree knows it: a live process of the tree,
     or none (crest takes it at restore). */
  struct lock_set ls = f->locks;
  for (size_t i = 0; i < ls.n; i++)
    if (ls.l[i].owner)
      {
        struct dproc *q = find_proc(c, (pid_t)ls.l[i].owner);
        ls.l[i].owner = q && !q->zombie ? q->ipid : 0;
        if (ls.l[i].owner && c->w->format < CREST_IMAGE_FORMAT_FLOCKPID)
          c->w->format = CREST_IMAGE_FORMAT_FLOCKPID;
      }
  put_attrs(c, locks_put(g, &ls, (1u << LOCK_KIND_FLOCK) | (1u << LOCK_KIND_OFD)));
}

static bool
removed(const struct fd_probe *d)
{
  return d->st->st_nlink == 0 && shows_deleted(d->link);
}

/* Stdio that is a file or device outside the task's root (a log file of
   the caller, the host's /dev/null): the restorer's own stdio takes its
   place, as crun's inherited descriptors. */
static int
inherited_probe(struct dctx *c, struct dproc *p, const struct fd_probe *d, struct dfile *nf,
                crest_error_t *err)
{
  const struct stat *st = d->st;
  (void)nf, (void)err;
  return d->fd <= 2 && (S_ISREG(st->st_mode) || S_ISCHR(st->st_mode)) && d->link[0] == '/'
         && st->st_nlink > 0 && strncmp(d->link, "/memfd:", 7) != 0
         && !same_in_root(c, p, d->link, st);
}

/* The restorer's descriptor of the same number; above 2 (a dup of stdio:
   dash keeps stdout at 10 while a builtin's output is redirected) the one
   of the lowest stdio number the file is at in the image. */
static int
inherited_install(const struct rctx *c, const struct rfile *f, int fd)
{
  return fd <= 2 ? c->stdio_svc[fd] : f->stdio >= 0 ? c->stdio_svc[f->stdio] : -1;
}

const struct fd_ops fd_inherited_ops = {
  .type = "inherited",
  .flags = FDT_OUTSIDE,
  .probe = inherited_probe,
  .install = inherited_install,
};

static int
reg_probe(struct dctx *c, struct dproc *p, const struct fd_probe *d, struct dfile *nf,
          crest_error_t *err)
{
  if (!S_ISREG(d->st->st_mode))
    return 0;
  if (removed(d))
    return dump_removed(c, p, d->fd, d->flags, d->link, d->st, nf, err) < 0 ? -1 : 1;
  /* Its name removed while the file lives on under another (a hard link,
     or linked again elsewhere): the path /proc shows no longer leads to
     it, and crest knows no name that does. */
  if (shows_deleted(d->link))
    return crest_error_make(err, ENOTSUP,
                            "task %d: fd %d (%s): its name was removed while the file lives on "
                            "under another (%ju links), which crest does not look for: cannot "
                            "checkpoint it",
                            p->pid, d->fd, d->link, (uintmax_t)d->st->st_nlink);
  return files_check_path(c, p, d, false, err) < 0 ? -1 : 1;
}

static void
reg_write(struct dctx *c, const struct dfile *f, yajl_gen g)
{
  files_put_attrs(c, f, g);
  /* A file opened again by its path: its size, which the restore checks. */
  if (f->ops == &fd_reg_ops && !f->data && !f->unlinked)
    {
      jput_u64(g, "open_size", f->size);
      if (c->w->format < CREST_IMAGE_FORMAT_REG_SIZE)
        c->w->format = CREST_IMAGE_FORMAT_REG_SIZE;
    }
}

static int
reg_open(struct rctx *c, struct rfile *f, int flags, crest_error_t *err)
{
  int fd;
  if (f->u.same_as >= 0)
    {
      /* Another open of an unlinked file restored before: its inode,
         through the link /proc shows, which O_NOFOLLOW would refuse
         (that flag is lost: docs/engine.md). */
      cleanup_free char *lp = xasprintf("/proc/self/fd/%d", c->f[f->u.same_as].svc);
      fd = open(lp, flags & ~O_NOFOLLOW);
      if (fd < 0)
        return crest_error_errno(err, "restore: %s: open it again", f->path);
    }
  else if (f->data)
    {
      /* An unlinked file (files-unlinked.c); made with O_TMPFILE again
         when it was (files_open took the flag out). */
      int tmpfile = (f->flags & O_TMPFILE) == O_TMPFILE ? O_TMPFILE : 0;
      fd = unlinked_open(c->img, f->data, f->path, &f->u, flags | tmpfile, err);
      if (fd < 0)
        return -1;
    }
  else
    {
      struct stat st;
      fd = img_open_typed(f->path, flags, S_IFREG, "file", err);
      /* Shorter than the offset the tree had in it: truncated or
         replaced since, the bytes before its offset gone. A file rewritten
         meanwhile (a program's own progress file, when an earlier image
         is restored) or one others append to is taken. */
      if (fd >= 0 && f->size >= 0 && fstat(fd, &st) == 0 && st.st_size < f->pos)
        {
          close(fd);
          return crest_error_make(
              err, ESTALE,
              "restore: file %s is %lld bytes, shorter than the offset %lld the "
              "tree had in it (%lld bytes at the checkpoint): truncated or "
              "replaced since, cannot restore it",
              f->path, (long long)st.st_size, (long long)f->pos, (long long)f->size);
        }
    }
  return file_place(c, f, fd, true, err);
}

const struct fd_ops fd_reg_ops = {
  .type = "reg",
  .flags = FDT_LOCKS | FDT_PATH | FDT_DATA,
  .probe = reg_probe,
  .write = reg_write,
  .open = reg_open,
};

static int
dir_probe(struct dctx *c, struct dproc *p, const struct fd_probe *d, struct dfile *nf,
          crest_error_t *err)
{
  if (!S_ISDIR(d->st->st_mode))
    return 0;
  if (removed(d))
    return dump_removed(c, p, d->fd, d->flags, d->link, d->st, nf, err) < 0 ? -1 : 1;
  return files_check_path(c, p, d, false, err) < 0 ? -1 : 1;
}

static int
dir_open(struct rctx *c, struct rfile *f, int flags, crest_error_t *err)
{
  int fd;
  if (f->deleted_dir.present)
    {
      fd = deleted_dir_open(f->path, &f->deleted_dir, flags, err);
      if (fd < 0)
        return -1;
    }
  else /* With its own flags: O_DIRECTORY shows in its fdinfo (the type is
          checked before the open and the inode after it). */
    fd = img_open_typed(f->path, flags, S_IFDIR, "directory", err);
  return file_place(c, f, fd, true, err);
}

const struct fd_ops fd_dir_ops = {
  .type = "dir",
  .flags = FDT_LOCKS | FDT_PATH,
  .probe = dir_probe,
  .write = reg_write,
  .open = dir_open,
};

/* O_PATH | O_NOFOLLOW on a symlink: opened again the same way. */
static int
link_probe(struct dctx *c, struct dproc *p, const struct fd_probe *d, struct dfile *nf,
           crest_error_t *err)
{
  (void)nf;
  if (!S_ISLNK(d->st->st_mode) || !(d->flags & O_PATH))
    return 0;
  return files_check_path(c, p, d, true, err) < 0 ? -1 : 1;
}

static void
link_write(struct dctx *c, const struct dfile *f, yajl_gen g)
{
  (void)f, (void)g;
  put_attrs(c, 1);
}

static int
link_parse(struct rctx *c, yajl_val v, struct rfile *f, crest_error_t *err)
{
  (void)v;
  if (!(f->flags & O_PATH) || !(f->flags & O_NOFOLLOW) || c->img->format < CREST_IMAGE_FORMAT_ATTRS)
    return crest_error_make(err, EINVAL,
                            "a link must be an O_PATH|O_NOFOLLOW open, in a format 3 image");
  return 0;
}

static int
link_open(struct rctx *c, struct rfile *f, int flags, crest_error_t *err)
{
  int fd = img_open_typed(f->path, flags, S_IFLNK, "symbolic link", err);
  return file_place(c, f, fd, true, err);
}

const struct fd_ops fd_link_ops = {
  .type = "link",
  .flags = FDT_PATH,
  .probe = link_probe,
  .write = link_write,
  .parse = link_parse,
  .open = link_open,
};

/* The memory devices, opened again by name. */
static int
dev_probe(struct dctx *c, struct dproc *p, const struct fd_probe *d, struct dfile *nf,
          crest_error_t *err)
{
  static const char *const devs[]
      = { "/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", "/dev/full" };
  (void)c, (void)p, (void)nf, (void)err;
  if (!S_ISCHR(d->st->st_mode))
    return 0;
  for (size_t i = 0; i < ARRAY_SIZE(devs); i++)
    if (strcmp(d->link, devs[i]) == 0)
      return 1;
  return 0;
}

static int
dev_parse(struct rctx *c, yajl_val v, struct rfile *f, crest_error_t *err)
{
  (void)c, (void)v;
  if (!img_dev_ok(f->path))
    return crest_error_make(err, EINVAL, "%.64s is not a device crest restores", f->path);
  return 0;
}

static int
dev_open(struct rctx *c, struct rfile *f, int flags, crest_error_t *err)
{
  int fd = img_open_typed(f->path, flags, S_IFCHR, "device", err);
  return file_place(c, f, fd, true, err);
}

const struct fd_ops fd_dev_ops = {
  .type = "dev",
  .flags = FDT_PATH,
  .probe = dev_probe,
  .parse = dev_parse,
  .open = dev_open,
};
