/* crest: regular files that are open but unlinked (docs/engine.md,
 * "Regular files"). Their bytes go into the image as they are in the file:
 * only the data extents (SEEK_DATA/SEEK_HOLE), streamed in pieces, so a
 * sparse file of any size costs what it holds. Restore recreates the file
 * with its size, holes, mode and owner, and opens it once per open file
 * description of the tree: two opens of one unlinked file share one inode
 * again. */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "engine.h"
#include "engine-int.h"
#include "image.h"
#include "util.h"

#define CHUNK (4UL << 20)
#define MAX_EXTENTS 65536

/* A readable descriptor of the tree's file: its own when it reads, else a
   new open of it through /proc (a write-only descriptor). */
static int
readable(pid_t pid, int fd, int flags, crest_error_t *err)
{
  cleanup_free char *lp = xasprintf("/proc/%d/fd/%d", pid, fd);
  int r;
  if ((flags & O_ACCMODE) != O_WRONLY && !(flags & O_PATH))
    {
      cleanup_close int pfd = syscall(SYS_pidfd_open, pid, 0);
      if (pfd >= 0 && (r = syscall(SYS_pidfd_getfd, pfd, fd, 0)) >= 0)
        return r;
    }
  r = open(lp, O_RDONLY | O_CLOEXEC);
  if (r < 0)
    return crest_error_errno(err, "task %d: fd %d: open the unlinked file to read it", pid, fd);
  return r;
}

static int
add_extent(struct unlinked_info *u, uint64_t off, uint64_t len, crest_error_t *err)
{
  if (u->next >= MAX_EXTENTS)
    return crest_error_make(err, E2BIG, "more than %d data extents", MAX_EXTENTS);
  u->ext = xrealloc(u->ext, (u->next + 1) * sizeof *u->ext);
  u->ext[u->next][0] = off, u->ext[u->next][1] = len;
  u->next++;
  return 0;
}

/* Copy [OFF, OFF+LEN) of IN to O, CHUNK bytes at a time. */
static int
copy_range(int in, uint64_t off, uint64_t len, struct img_out *o, char *buf, crest_error_t *err)
{
  while (len)
    {
      size_t n = len < CHUNK ? len : CHUNK;
      ssize_t r = pread(in, buf, n, off);
      if (r <= 0)
        return crest_error_sys(err, r < 0 ? errno : EIO, "read at %" PRIu64, off);
      if (img_out_write(o, buf, r, err) < 0)
        return -1;
      off += r, len -= r;
    }
  return 0;
}

/* The data extents of IN, SIZE bytes, into the image file *DATA. */
static int
scan_extents(pid_t pid, int fd, int in, int id, uint64_t size, struct unlinked_info *u, char **data,
             struct img_writer *w, crest_error_t *err)
{
  cleanup_free char *buf = xmalloc(CHUNK);
  struct img_out o;
  uint64_t off = 0;
  *data = xasprintf("file-%d.img", id);
  if (img_out_open(w, *data, &o, err) < 0)
    return -1;
  while (off < size)
    {
      off_t d = lseek(in, off, SEEK_DATA), h;
      if (d < 0 && errno == ENXIO)
        break;
      h = d < 0 ? -1 : lseek(in, d, SEEK_HOLE);
      if (d < 0 || h < 0)
        {
          /* A file system without SEEK_DATA: all of it is data. */
          if (errno != EINVAL || off != 0)
            goto fail;
          d = 0, h = size;
        }
      if ((uint64_t)h > size)
        h = size;
      if (add_extent(u, d, h - d, err) < 0 || copy_range(in, d, h - d, &o, buf, err) < 0)
        goto fail_wrapped;
      off = h;
    }
  return img_out_close(&o, err);
fail:
  crest_error_errno(err, "seek");
fail_wrapped:
  img_out_close(&o, NULL);
  return crest_error_wrap(err, "task %d: fd %d: unlinked file", pid, fd);
}

int
unlinked_dump(struct img_writer *w, pid_t pid, int fd, int flags, const struct stat *st, int id,
              struct unlinked_info *u, char **data, crest_error_t *err)
{
  cleanup_close int in = readable(pid, fd, flags, err);
  off_t was;
  int rc;
  if (in < 0)
    return -1;
  u->present = true;
  u->size = st->st_size;
  u->mode = st->st_mode & 07777;
  /* IN may be the tree's own open file description (pidfd_getfd), whose
     offset SEEK_DATA and SEEK_HOLE move: put back after the scan (the
     tree is stopped meanwhile; the bytes are read with pread). */
  was = lseek(in, 0, SEEK_CUR);
  rc = scan_extents(pid, fd, in, id, st->st_size, u, data, w, err);
  if (was >= 0 && lseek(in, was, SEEK_SET) != was && rc == 0)
    rc = crest_error_errno(err, "task %d: fd %d: unlinked file: put its offset back", pid, fd);
  return rc;
}

void
unlinked_put(yajl_gen g, const struct unlinked_info *u)
{
  if (u->same_as >= 0)
    {
      jput_int(g, "unlinked_of", u->same_as);
      return;
    }
  jput_u64(g, "size", u->size);
  jput_int(g, "mode", u->mode);
  jput_int(g, "uid", u->uid);
  jput_int(g, "gid", u->gid);
  jput_extents(g, (const uint64_t(*)[2])u->ext, u->next);
}

/* Every number checked: extents inside the file, in order, not
   overlapping, together exactly as long as the data file DSIZE. */
int
unlinked_parse(yajl_val v, int format, long id, uint64_t dsize, struct unlinked_info *u,
               crest_error_t *err)
{
  int64_t mode, uid, gid, of;
  cleanup_free char *what = NULL;
  long n;
  memset(u, 0, sizeof *u);
  u->same_as = -1;
  if (!yajl_tree_get(v, (const char *[]){ "unlinked_of", NULL }, yajl_t_any)
      && !yajl_tree_get(v, (const char *[]){ "extents", NULL }, yajl_t_any))
    return 0;
  if (format < CREST_IMAGE_FORMAT_ATTRS)
    return crest_error_make(err, EINVAL, "file %ld: unlinked file record in a format %d image", id,
                            format);
  if (yajl_tree_get(v, (const char *[]){ "unlinked_of", NULL }, yajl_t_any))
    {
      if (jget_i64(v, "unlinked_of", &of, err) < 0)
        return -1;
      if (of < 0 || of >= id)
        return crest_error_make(err, EINVAL, "file %ld: unlinked_of %lld", id, (long long)of);
      u->same_as = (int)of;
      return 0;
    }
  if (jget_u64(v, "size", &u->size, err) < 0 || jget_i64(v, "mode", &mode, err) < 0
      || jget_i64(v, "uid", &uid, err) < 0 || jget_i64(v, "gid", &gid, err) < 0)
    return -1;
  if (mode < 0 || mode > 07777 || uid < 0 || uid > UINT32_MAX || gid < 0 || gid > UINT32_MAX
      || u->size > (1ULL << 50))
    return crest_error_make(err, EINVAL, "file %ld: bad unlinked file record", id);
  u->present = true;
  u->mode = (int)mode, u->uid = uid, u->gid = gid;
  what = xasprintf("file %ld", id);
  if ((n = jget_extents(v, u->size, 1, MAX_EXTENTS, dsize, what, &u->ext, err)) < 0)
    return -1;
  u->next = n;
  return 0;
}

/* Remove TMP, the file or directory (DIR) made for PATH, so that what
   stays open of it shows PATH's name as the original did ("PATH
   (deleted)"): renamed to PATH first when nothing has that name now (an
   open file's name is its dentry's, which the rename moves), else removed
   under its own name (a name of PATH's directory can then be told apart by
   its ".crest-PID" suffix: docs/engine.md, known losses). */
static void
remove_as(const char *tmp, const char *path, bool dir)
{
  struct stat a, b;
  const char *name = tmp;
  if (lstat(tmp, &a) == 0
      && syscall(SYS_renameat2, AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0)
    {
      name = path;
      /* Only what was renamed: not a file another process put there since. */
      if (lstat(path, &b) < 0 || a.st_ino != b.st_ino || a.st_dev != b.st_dev)
        return;
    }
  if (dir)
    rmdir(name);
  else
    unlink(name);
}

/* W refilled from D (DSIZE bytes): its size, then its data extents
   (format 1 and 2: the whole file, holes written as zeros). -1 with ERR
   set. */
static int
refill(int d, uint64_t dsize, int w, struct unlinked_info *u, crest_error_t *err)
{
  cleanup_free char *buf = xmalloc(CHUNK);
  if (!u->present)
    {
      if (add_extent(u, 0, dsize, err) < 0)
        return -1;
    }
  else if (ftruncate(w, u->size) < 0)
    return crest_error_errno(err, "truncate");
  for (size_t i = 0; i < u->next; i++)
    for (uint64_t done = 0; done < u->ext[i][1];)
      {
        size_t n = u->ext[i][1] - done < CHUNK ? u->ext[i][1] - done : CHUNK;
        if (read_all(d, buf, n) < 0 || pwrite(w, buf, n, u->ext[i][0] + done) != (ssize_t)n)
          return crest_error_errno(err, "write");
        done += n;
      }
  return 0;
}

/* A file made with O_TMPFILE (FLAGS has it): made so again in PATH's
   directory (it shows as "DIR/#INODE (deleted)", with the new inode's
   number), filled from D (DSIZE bytes) through that open file
   description itself, which FLAGS describes (O_TMPFILE needs write access:
   the original had it). */
static int
tmpfile_open(int d, uint64_t dsize, const char *path, struct unlinked_info *u, int flags,
             crest_error_t *err)
{
  cleanup_free char *dir = xstrdup(path);
  char *slash = strrchr(dir, '/');
  int fd;
  if (!slash)
    return crest_error_make(err, EINVAL, "restore: unlinked file %s: not an absolute path", path);
  slash[slash == dir] = 0;
  fd = open(dir, flags, 0600);
  if (fd < 0)
    return crest_error_errno(err, "restore: recreate unlinked file %s with O_TMPFILE", path);
  if (refill(d, dsize, fd, u, err) < 0)
    {
      crest_error_wrap(err, "restore: refill unlinked file %s", path);
      goto out;
    }
  if (!u->present || (fchmod(fd, u->mode) == 0 && fchown(fd, u->uid, u->gid) == 0))
    return fd;
  crest_error_errno(err, "restore: set the mode and owner of unlinked file %s", path);
out:
  close(fd);
  return -1;
}

/* Recreate the file beside PATH, refill it from DATA, reopen it with FLAGS
   and unlink it again. */
int
unlinked_open(struct img_reader *img, const char *data, const char *path, struct unlinked_info *u,
              int flags, crest_error_t *err)
{
  uint64_t dsize;
  cleanup_close int d = img_reader_open_file(img, data, &dsize, err);
  cleanup_free char *tmp = xasprintf("%s.crest-%d", path, (int)getpid());
  cleanup_close int w = -1;
  int fd = -1;
  if (d < 0)
    return -1;
  if ((flags & O_TMPFILE) == O_TMPFILE)
    return tmpfile_open(d, dsize, path, u, flags, err);
  w = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (w < 0)
    return crest_error_errno(err, "restore: recreate unlinked file %s", path);
  if (refill(d, dsize, w, u, err) < 0)
    {
      crest_error_wrap(err, "restore: refill unlinked file %s", path);
      goto out;
    }
  fd = open(tmp, flags);
  if (fd < 0)
    goto fail;
  if (u->present && (fchmod(w, u->mode) < 0 || fchown(w, u->uid, u->gid) < 0))
    {
      close(fd);
      fd = -1;
      goto fail;
    }
  goto out;
fail:
  crest_error_errno(err, "restore: refill unlinked file %s", path);
out:
  remove_as(tmp, path, false);
  return fd;
}

/* A directory that was removed while open: empty (rmdir wants it so), so
   all there is to give back is an open directory of that mode and owner
   with no name. Restore makes one beside where it was and removes it. */
void
deleted_dir_put(yajl_gen g, const struct unlinked_info *u)
{
  jput_bool(g, "deleted_dir", true);
  jput_int(g, "mode", u->mode);
  jput_int(g, "uid", u->uid);
  jput_int(g, "gid", u->gid);
}

int
deleted_dir_parse(yajl_val v, int format, long id, struct unlinked_info *u, crest_error_t *err)
{
  int64_t mode, uid, gid;
  if (!yajl_tree_get(v, (const char *[]){ "deleted_dir", NULL }, yajl_t_any))
    return 0;
  if (format < CREST_IMAGE_FORMAT_ATTRS || jget_i64(v, "mode", &mode, err) < 0
      || jget_i64(v, "uid", &uid, err) < 0 || jget_i64(v, "gid", &gid, err) < 0)
    return *err ? -1
                : crest_error_make(err, EINVAL, "file %ld: deleted_dir in a format %d image", id,
                                   format);
  if (mode < 0 || mode > 07777 || uid < 0 || uid > UINT32_MAX || gid < 0 || gid > UINT32_MAX)
    return crest_error_make(err, EINVAL, "file %ld: bad deleted directory record", id);
  u->present = true;
  u->mode = (int)mode, u->uid = uid, u->gid = gid;
  return 0;
}

int
deleted_dir_open(const char *path, const struct unlinked_info *u, int flags, crest_error_t *err)
{
  cleanup_free char *tmp = xasprintf("%s.crest-%d", path, (int)getpid());
  int fd;
  if (mkdir(tmp, 0700) < 0)
    return crest_error_errno(err, "restore: recreate deleted directory %s", path);
  fd = open(tmp, flags); /* made just now: a directory; O_DIRECTORY as it was */
  if (fd < 0 || fchmod(fd, u->mode) < 0 || fchown(fd, u->uid, u->gid) < 0)
    {
      crest_error_errno(err, "restore: recreate deleted directory %s", path);
      if (fd >= 0)
        close(fd);
      fd = -1;
    }
  remove_as(tmp, path, true);
  return fd;
}
