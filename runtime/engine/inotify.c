/* crest: inotify descriptors (docs/engine.md, "Event descriptors"): each
 * watch with its descriptor number (wd), mask and a path to its inode.
 * fdinfo shows a watch's inode, not a path, and the file handle it also
 * shows needs CAP_DAC_READ_SEARCH to open: crest looks for the inode where
 * a task's watches usually are (its root, its cwd, its open files, their
 * directories, and the entries of those directories), then walks the tree
 * from its root, breadth first and bounded (a daemon's configuration
 * directories: dbus-daemon watches /etc/dbus-1/session.d), and refuses a
 * watch it finds nowhere. Queued events are not shown at all: a descriptor with
 * unread events is refused. */
#include <config.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/openat2.h>
#include "dump-int.h"
#include "engine-int.h"
#include "files.h"
#include "restore-int.h"
#include "image.h"
#include "image-check.h"
#include "util.h"

#define DIR_ENTRIES_MAX 4096 /* entries looked at in one directory */
#define INOTIFY_WATCHES_MAX 8192

/* Each watch with its number, mask and a path to its inode, in the same
   allocation as the record (one free() frees all). */
struct inotify_watch
{
  int wd;
  uint32_t mask;
  char path[PATH_MAX];
};
struct inotify_rec
{
  size_t nw;
  struct inotify_watch w[];
};

/* The inode a path leads to inside the task's root ROOTFD (the path
   itself if a symlink). */
static bool
same_inode(int rootfd, const char *path, dev_t dev, ino_t ino, bool *link)
{
  struct open_how how = { .flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
                          .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
  struct stat st;
  int fd = syscall(SYS_openat2, rootfd, path, &how, sizeof how);
  bool same;
  if (fd < 0)
    return false;
  same = fstat(fd, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
  *link = S_ISLNK(st.st_mode);
  close(fd);
  return same;
}

/* The places to look, as absolute paths: the root, the cwd, every open
   file of the task, the directory of each. */
static char **
candidates(pid_t pid, size_t *n)
{
  cleanup_free char *fdpath = xasprintf("/proc/%d/fd", pid);
  char **out = NULL, link[PATH_MAX + 1];
  DIR *d;
  struct dirent *de;
  ssize_t l;
  *n = 0;
  out = xrealloc(out, 2 * sizeof *out);
  out[(*n)++] = xstrdup("/");
  {
    cleanup_free char *cwd = xasprintf("/proc/%d/cwd", pid);
    if ((l = readlink(cwd, link, PATH_MAX)) > 0 && link[0] == '/')
      link[l] = 0, out[(*n)++] = xstrdup(link);
  }
  if (!(d = opendir(fdpath)))
    return out;
  while ((de = readdir(d)))
    {
      cleanup_free char *lp = xasprintf("%s/%s", fdpath, de->d_name);
      char *slash;
      if (de->d_name[0] == '.' || (l = readlink(lp, link, PATH_MAX)) <= 0 || link[0] != '/')
        continue;
      link[l] = 0;
      out = xrealloc(out, (*n + 2) * sizeof *out);
      out[(*n)++] = xstrdup(link);
      if ((slash = strrchr(link, '/')) && slash != link)
        *slash = 0, out[(*n)++] = xstrdup(link);
    }
  closedir(d);
  return out;
}

/* A path in the task's root to inode (DEV, INO): one of CAND, or an entry
   of one of them. */
static bool
find_path(int rootfd, char **cand, size_t n, dev_t dev, ino_t ino, char *out, bool *link)
{
  for (size_t i = 0; i < n; i++)
    if (same_inode(rootfd, cand[i], dev, ino, link))
      {
        snprintf(out, PATH_MAX, "%s", cand[i]);
        return true;
      }
  for (size_t i = 0; i < n; i++)
    {
      struct open_how how = { .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
                              .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
      int fd = syscall(SYS_openat2, rootfd, cand[i], &how, sizeof how);
      DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
      struct dirent *de;
      int seen = 0;
      bool found = false;
      if (!d)
        {
          if (fd >= 0)
            close(fd);
          continue;
        }
      while (!found && (de = readdir(d)) && seen++ < DIR_ENTRIES_MAX)
        /* Not d_ino: an overlay file system may show another number there. */
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
          {
            snprintf(out, PATH_MAX, "%s/%s", strcmp(cand[i], "/") ? cand[i] : "", de->d_name);
            found = same_inode(rootfd, out, dev, ino, link);
          }
      closedir(d);
      if (found)
        return true;
    }
  return false;
}

/* The last resort: a walk of the task's root, breadth first (a program's
   configuration directories are near the top), skipping /proc, /sys and
   /dev, at most WALK_MAX entries looked at in all (about 0.1 s on this
   project's machines) and WALK_DEPTH levels deep. *SEEN: the entries. */
#define WALK_MAX 200000
#define WALK_DEPTH 8
static bool
walk_find(int rootfd, dev_t dev, ino_t ino, char *out, bool *link, size_t *seen)
{
  char **q = xmalloc(sizeof *q);
  size_t head = 0, tail = 0, cap = 1;
  bool found = false;
  q[tail++] = xstrdup("/");
  *seen = 0;
  while (!found && head < tail && *seen < WALK_MAX)
    {
      char *dir = q[head++];
      struct open_how how = { .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW,
                              .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
      int fd = syscall(SYS_openat2, rootfd, dir, &how, sizeof how);
      DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
      struct dirent *de;
      size_t depth = 0;
      for (const char *c = dir; *c; c++)
        depth += *c == '/';
      if (!d && fd >= 0)
        close(fd);
      while (d && !found && (de = readdir(d)) && (*seen)++ < WALK_MAX)
        {
          struct stat st;
          if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")
              || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
          snprintf(out, PATH_MAX, "%s/%s", strcmp(dir, "/") ? dir : "", de->d_name);
          if (st.st_dev == dev && st.st_ino == ino)
            found = true, *link = S_ISLNK(st.st_mode);
          else if (S_ISDIR(st.st_mode) && depth < WALK_DEPTH && strlen(out) < PATH_MAX - 256
                   && !(strcmp(dir, "/") == 0
                        && (!strcmp(de->d_name, "proc") || !strcmp(de->d_name, "sys")
                            || !strcmp(de->d_name, "dev"))))
            {
              if (tail == cap)
                q = xrealloc(q, (cap *= 2) * sizeof *q);
              q[tail++] = xstrdup(out);
            }
        }
      if (d)
        closedir(d);
    }
  for (size_t i = 0; i < tail; i++)
    free(q[i]);
  free(q);
  return found;
}

static int
unread_events(pid_t pid, int fd, crest_error_t *err)
{
  cleanup_close int pfd = syscall(SYS_pidfd_open, pid, 0);
  cleanup_close int d = -1;
  int n = 0;
  if (pfd < 0 || (d = syscall(SYS_pidfd_getfd, pfd, fd, 0)) < 0 || ioctl(d, FIONREAD, &n) < 0)
    return crest_error_errno(err, "count its unread events (FIONREAD)");
  /* A passing state of a program that reads its events (rsyslog's imfile
     while a followed file is written): EAGAIN, the checkpoint is tried
     again once the tree has run on; refused in the end if they stay. */
  if (n)
    return crest_error_make(err, EAGAIN,
                            "%d bytes of unread inotify events, which fdinfo does not show, "
                            "cannot checkpoint it",
                            n);
  return 0;
}

static int
cmp_wd(const void *a, const void *b)
{
  const struct inotify_watch *x = a, *y = b;
  return (x->wd > y->wd) - (x->wd < y->wd);
}

static int
inotify_dump(pid_t pid, int fd, struct inotify_rec **recp, crest_error_t *err)
{
  cleanup_free char *info = NULL, *rootl = xasprintf("/proc/%d/root", pid);
  cleanup_close int rootfd = -1;
  char **cand = NULL, root[3];
  size_t ncand = 0;
  const char *s;
  int rc = 0;
  if (readlink(rootl, root, sizeof root) != 1 || root[0] != '/')
    return crest_error_make(err, ENOTSUP, "inotify watches of a chroot'd task are not restored");
  if (unread_events(pid, fd, err) < 0 || evfd_fdinfo(pid, fd, &info, err) < 0)
    return -1;
  if ((rootfd = open(rootl, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
    return crest_error_errno(err, "open its root directory");
  cand = candidates(pid, &ncand);
  for (s = strstr(info, "inotify wd:"); s && rc == 0; s = strstr(s + 1, "inotify wd:"))
    {
      struct inotify_rec *r = *recp;
      struct inotify_watch *w;
      unsigned int wd, sdev, mask;
      unsigned long long ino;
      size_t seen = 0;
      bool link = false;
      if (sscanf(s, "inotify wd:%x ino:%llx sdev:%x mask:%x", &wd, &ino, &sdev, &mask) != 4)
        rc = crest_error_make(err, EIO, "fdinfo: cannot read the watch line %.40s", s);
      else if (r->nw >= INOTIFY_WATCHES_MAX)
        rc = crest_error_make(err, ENOTSUP, "more than %d inotify watches", INOTIFY_WATCHES_MAX);
      if (rc < 0)
        break;
      r = *recp = xrealloc(r, sizeof *r + (r->nw + 1) * sizeof *r->w);
      w = &r->w[r->nw++];
      memset(w, 0, sizeof *w);
      w->wd = (int)wd, w->mask = mask;
      /* fdinfo shows the kernel's dev_t: 12 bits of major above 20 of minor. */
      if (!find_path(rootfd, cand, ncand, makedev(sdev >> 20, sdev & 0xfffff), ino, w->path, &link)
          && !walk_find(rootfd, makedev(sdev >> 20, sdev & 0xfffff), ino, w->path, &link, &seen))
        rc = crest_error_make(err, ENOTSUP,
                              "inotify watch %d (inode %llu): no path to it found from the task's "
                              "root (crest looks at its cwd, its open files and their directories, "
                              "and what they hold, then at %zu entries of the tree from its root), "
                              "cannot checkpoint it",
                              w->wd, ino, seen);
    }
  for (size_t i = 0; i < ncand; i++)
    free(cand[i]);
  free(cand);
  /* fdinfo lists the newest first; restore takes the numbers in order. */
  qsort((*recp)->w, (*recp)->nw, sizeof *(*recp)->w, cmp_wd);
  return rc;
}

static void
inotify_put(yajl_gen g, const struct inotify_rec *r)
{
  jput_key(g, "watches");
  yajl_gen_array_open(g);
  for (size_t i = 0; i < r->nw; i++)
    {
      yajl_gen_map_open(g);
      jput_int(g, "wd", r->w[i].wd);
      jput_int(g, "mask", r->w[i].mask);
      jput_str(g, "path", r->w[i].path);
      yajl_gen_map_close(g);
    }
  yajl_gen_array_close(g);
}

static int
inotify_parse(yajl_val v, struct inotify_rec **recp, crest_error_t *err)
{
  yajl_val *items;
  long n = jget_array(v, "watches", &items, err);
  struct inotify_rec *r;
  if (n < 0 || n > INOTIFY_WATCHES_MAX)
    return crest_error_make(err, EINVAL, "bad inotify watch list");
  r = *recp = xrealloc(*recp, sizeof *r + (n + 1) * sizeof *r->w);
  memset(r->w, 0, (n + 1) * sizeof *r->w);
  r->nw = n;
  for (long i = 0; i < n; i++)
    {
      int64_t wd, mask;
      const char *path;
      if (jget_i64(items[i], "wd", &wd, err) < 0 || jget_i64(items[i], "mask", &mask, err) < 0
          || jget_str(items[i], "path", &path, err) < 0)
        return crest_error_wrap(err, "inotify watch %ld", i);
      /* Ascending: restore takes the numbers in order. */
      if (wd < 1 || wd >= INT_MAX || (i > 0 && wd <= r->w[i - 1].wd) || mask < 0
          || mask > UINT32_MAX || !img_path_ok(path) || strlen(path) >= PATH_MAX)
        return crest_error_make(err, EINVAL, "inotify watch %ld: wd, mask or path out of range", i);
      r->w[i].wd = (int)wd, r->w[i].mask = (uint32_t)mask;
      strcpy(r->w[i].path, path);
    }
  return 0;
}

/* Watch W under its own number: the kernel hands out the next number
   after the last one given, so numbers below it are used up by adding the
   watch and removing it again. */
static int
add_watch(int fd, const struct inotify_watch *w, crest_error_t *err)
{
  for (int tries = 0; tries <= w->wd; tries++)
    {
      int got = inotify_add_watch(fd, w->path, w->mask | IN_DONT_FOLLOW);
      if (got < 0)
        return crest_error_errno(err, "restore: inotify: watch %s (mask %#x)", w->path, w->mask);
      if (got == w->wd)
        return 0;
      if (got > w->wd || inotify_rm_watch(fd, got) < 0)
        break;
    }
  return crest_error_make(err, EBUSY, "restore: inotify: watch %s cannot get number %d back",
                          w->path, w->wd);
}

static int
inotify_open(const struct inotify_rec *r, int flags, crest_error_t *err)
{
  char buf[4096];
  int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (fd < 0)
    return crest_error_errno(err, "restore: inotify_init1");
  for (size_t i = 0; i < r->nw; i++)
    if (add_watch(fd, &r->w[i], err) < 0)
      {
        close(fd);
        return -1;
      }
  /* The IN_IGNORED events of the numbers used up; the queue was empty. */
  while (read(fd, buf, sizeof buf) > 0)
    ;
  if (!(flags & O_NONBLOCK) && fcntl(fd, F_SETFL, 0) < 0)
    {
      crest_error_errno(err, "restore: inotify: status flags");
      close(fd);
      return -1;
    }
  return fd;
}

/* --- the descriptor type (files.h) --- */

static int
inotify_probe(struct dctx *c, struct dproc *p, const struct fd_probe *d, struct dfile *nf,
              crest_error_t *err)
{
  (void)c, (void)p;
  if (strcmp(d->link, "anon_inode:inotify") != 0)
    return 0;
  nf->priv = xzalloc(sizeof(struct inotify_rec));
  if (inotify_dump(d->pid, d->fd, (struct inotify_rec **)&nf->priv, err) < 0)
    return crest_error_wrap(err, "task %d: fd %d (%s)", d->pid, d->fd, d->link);
  return 1;
}

static void
inotify_write(struct dctx *c, const struct dfile *f, yajl_gen g)
{
  (void)c;
  inotify_put(g, f->priv);
}

static int
inotify_parse_rec(struct rctx *c, yajl_val v, struct rfile *f, crest_error_t *err)
{
  (void)c;
  f->priv = xzalloc(sizeof(struct inotify_rec));
  return inotify_parse(v, (struct inotify_rec **)&f->priv, err);
}

static int
inotify_open_rec(struct rctx *c, struct rfile *f, int flags, crest_error_t *err)
{
  (void)flags;
  if (file_place(c, f, inotify_open(f->priv, f->flags, err), false, err) < 0)
    return crest_error_wrap(err, "file %d (anon_inode:inotify)", f->id);
  return 0;
}

const struct fd_ops fd_inotify_ops = {
  .type = "inotify",
  .probe = inotify_probe,
  .write = inotify_write,
  .parse = inotify_parse_rec,
  .open = inotify_open_rec,
};
