/* crest: inotify descriptors (docs/engine.md, "Event descriptors"): each
 * watch with its descriptor number (wd), mask and a path to its inode.
 * fdinfo shows a watch's inode, not a path, and the file handle it also
 * shows needs CAP_DAC_READ_SEARCH to open: crest looks for the inodes where
 * a task's watches usually are (its root, its cwd, its open files, their
 * directories), then walks the tree once for all the watches, bounded:
 * below the watches found (a recursive watcher's tree), below the cwd and
 * the open files' directories, then from the root, breadth first (a
 * daemon's configuration directories: dbus-daemon watches
 * /etc/dbus-1/session.d), and refuses a watch it finds nowhere. Queued
 * events are not shown at all: a descriptor with unread events is
 * refused. */
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

#define INOTIFY_WATCHES_MAX 8192

/* Each watch with its number, mask and a path to its inode, in the same
   allocation as the record (one free() frees all). DEV and INO: the inode
   fdinfo shows, used at checkpoint only (not in the image). */
struct inotify_watch
{
  int wd;
  uint32_t mask;
  dev_t dev;
  ino_t ino;
  char path[PATH_MAX];
};
struct inotify_rec
{
  size_t nw;
  struct inotify_watch w[];
};

/* --- the search for the watches' paths ---
   One search for all the watches of a descriptor: the places a task's
   watches usually are (its root, its cwd, its open files and their
   directories) are looked at first, then one walk reads directories until
   every watch has a path, or WALK_MAX entries are read. The walk reads the
   directories of the watches it has found first (a recursive watcher,
   inotifywait -r or a build tool's, watches a whole tree: its watches are
   below the ones found), then the directories below the cwd and below the
   open files' directories, then the tree from the root, breadth first (a
   daemon's configuration directories are near the top: dbus-daemon watches
   /etc/dbus-1/session.d). The order of the watches' numbers does not matter
   (inotifywait -r watches a directory after those below it). Until December
   2026 each watch not found among the first places was looked for by a walk
   of its own from the root: up to a second per watch, the tree stopped all
   along, and a watch more than 8 levels below the root, or past the walk's
   200,000 entries, was refused. */
#define WALK_MAX 200000
/* The cwd and open files' directories read before the root: at most half
   of WALK_MAX, so that a large cwd (a home directory) leaves the root's
   walk its share. */
#define WALK_NEAR_MAX (WALK_MAX / 2)
/* Levels below where a walk starts (the root, the cwd, an open file's
   directory, a watch's directory). */
#define WALK_DEPTH 8

/* A watch's inode and its place in the record: sorted by inode, looked up
   for each entry the walk reads. */
struct wkey
{
  dev_t dev;
  ino_t ino;
  size_t i;
};

/* The directories queued so far, by inode, so that each is read once (the
   cwd is also below the root; a bind mount of a directory below itself
   would be read again and again): a hash table, open addressing. */
struct dslot
{
  dev_t dev;
  ino_t ino;
  bool used;
};
struct dirset
{
  struct dslot *s;
  size_t cap, n;
};

/* The queues of directories to read, in the order they are taken: the
   directories of found watches, then those near the task (its cwd, its
   open files' directories, and what is below them), then the tree from
   its root. */
enum
{
  TIER_WATCH,
  TIER_NEAR,
  TIER_ROOT,
  TIERS
};
struct witem
{
  char *path;
  unsigned depth;
};
struct wqueue
{
  struct witem *v;
  size_t head, tail, cap;
};

struct walk
{
  int rootfd;
  struct inotify_rec *r;
  struct wkey *keys;
  size_t nkeys, left, seen; /* left: watches not found yet; seen: entries read */
  struct dirset dirs;
  struct wqueue q[TIERS];
};

static int
cmp_key(const void *a, const void *b)
{
  const struct wkey *x = a, *y = b;
  if (x->dev != y->dev)
    return x->dev < y->dev ? -1 : 1;
  return (x->ino > y->ino) - (x->ino < y->ino);
}

/* Adds directory (DEV, INO) to S: false if it was there already. */
static bool
dirset_add(struct dirset *s, dev_t dev, ino_t ino)
{
  uint64_t h = ((uint64_t)ino ^ ((uint64_t)dev << 40)) * 0x9e3779b97f4a7c15ULL;
  size_t i;
  if (2 * (s->n + 1) > s->cap)
    {
      struct dirset g
          = { xzalloc((s->cap ? 2 * s->cap : 1024) * sizeof *g.s), s->cap ? 2 * s->cap : 1024, 0 };
      for (size_t j = 0; j < s->cap; j++)
        if (s->s[j].used)
          dirset_add(&g, s->s[j].dev, s->s[j].ino);
      free(s->s);
      *s = g;
    }
  for (i = (h ^ (h >> 32)) & (s->cap - 1); s->s[i].used; i = (i + 1) & (s->cap - 1))
    if (s->s[i].dev == dev && s->s[i].ino == ino)
      return false;
  s->s[i] = (struct dslot){ dev, ino, true };
  s->n++;
  return true;
}

/* The watches on the inode of ST: PATH for those not found yet. True if
   ST is a watched inode. */
static bool
walk_match(struct walk *w, const struct stat *st, const char *path)
{
  struct wkey k = { st->st_dev, st->st_ino, 0 };
  struct wkey *f = bsearch(&k, w->keys, w->nkeys, sizeof k, cmp_key);
  if (!f)
    return false;
  while (f > w->keys && !cmp_key(f - 1, &k))
    f--;
  for (; f < w->keys + w->nkeys && !cmp_key(f, &k); f++)
    {
      struct inotify_watch *x = &w->r->w[f->i];
      if (!x->path[0] && strlen(path) < PATH_MAX)
        strcpy(x->path, path), w->left--;
    }
  return true;
}

/* Queues directory PATH (ST) on queue T, unless it was queued before. */
static void
walk_push(struct walk *w, int t, const char *path, const struct stat *st, unsigned depth)
{
  struct wqueue *q = &w->q[t];
  if (!S_ISDIR(st->st_mode) || strlen(path) >= PATH_MAX - 256
      || !dirset_add(&w->dirs, st->st_dev, st->st_ino))
    return;
  if (q->tail == q->cap)
    q->v = xrealloc(q->v, (q->cap = q->cap ? 2 * q->cap : 64) * sizeof *q->v);
  q->v[q->tail++] = (struct witem){ xstrdup(path), depth };
}

/* /proc, /sys and /dev: not walked into (an open file's directory there
   is still read). */
static bool
walk_skipped(const char *path)
{
  static const char *const skip[] = { "/proc", "/sys", "/dev" };
  for (size_t i = 0; i < sizeof skip / sizeof *skip; i++)
    {
      size_t l = strlen(skip[i]);
      if (!strncmp(path, skip[i], l) && (path[l] == 0 || path[l] == '/'))
        return true;
    }
  return false;
}

/* Reads directory IT, taken from queue T: each entry is matched against
   the watches, and each directory in it queued (a watched one on
   TIER_WATCH, to be read next). */
static void
walk_dir(struct walk *w, int t, const struct witem *it)
{
  struct open_how how = { .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW,
                          .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
  int fd = syscall(SYS_openat2, w->rootfd, it->path, &how, sizeof how);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  struct dirent *de;
  char path[PATH_MAX];
  if (!d)
    {
      if (fd >= 0)
        close(fd);
      return;
    }
  while (w->left && w->seen < WALK_MAX && (de = readdir(d)))
    {
      struct stat st;
      w->seen++;
      /* Not d_ino: an overlay file system may show another number there. */
      if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")
          || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0
          || snprintf(path, sizeof path, "%s/%s", strcmp(it->path, "/") ? it->path : "", de->d_name)
                 >= (int)sizeof path)
        continue;
      if (walk_match(w, &st, path))
        walk_push(w, TIER_WATCH, path, &st, 0);
      else if (it->depth < WALK_DEPTH && !walk_skipped(path))
        walk_push(w, t == TIER_ROOT ? TIER_ROOT : TIER_NEAR, path, &st, it->depth + 1);
    }
  closedir(d);
}

/* One of the first places, PATH in the task's root: matched against the
   watches, and queued on T if a directory. */
static void
walk_seed(struct walk *w, int t, const char *path)
{
  struct open_how how = { .flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
                          .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
  struct stat st;
  int fd = syscall(SYS_openat2, w->rootfd, path, &how, sizeof how);
  if (fd < 0)
    return;
  if (fstat(fd, &st) == 0)
    walk_push(w, walk_match(w, &st, path) ? TIER_WATCH : t, path, &st, 0);
  close(fd);
}

/* The first places of task PID: its root, its cwd, every open file and
   the directory of each. */
static void
walk_seeds(struct walk *w, pid_t pid)
{
  cleanup_free char *fdpath = xasprintf("/proc/%d/fd", pid);
  cleanup_free char *cwd = xasprintf("/proc/%d/cwd", pid);
  char link[PATH_MAX + 1], *slash;
  DIR *d;
  struct dirent *de;
  ssize_t l;
  walk_seed(w, TIER_ROOT, "/");
  if ((l = readlink(cwd, link, PATH_MAX)) > 0 && link[0] == '/')
    link[l] = 0, walk_seed(w, TIER_NEAR, link);
  if (!(d = opendir(fdpath)))
    return;
  while ((de = readdir(d)))
    {
      cleanup_free char *lp = xasprintf("%s/%s", fdpath, de->d_name);
      if (de->d_name[0] == '.' || (l = readlink(lp, link, PATH_MAX)) <= 0 || link[0] != '/')
        continue;
      link[l] = 0;
      walk_seed(w, TIER_NEAR, link);
      if ((slash = strrchr(link, '/')) && slash != link)
        *slash = 0, walk_seed(w, TIER_NEAR, link);
    }
  closedir(d);
}

/* The queue to take the next directory from: -1 when all are empty. */
static int
walk_next(const struct walk *w)
{
  bool near = w->q[TIER_NEAR].head < w->q[TIER_NEAR].tail;
  bool root = w->q[TIER_ROOT].head < w->q[TIER_ROOT].tail;
  if (w->q[TIER_WATCH].head < w->q[TIER_WATCH].tail)
    return TIER_WATCH;
  if (near && (w->seen < WALK_NEAR_MAX || !root))
    return TIER_NEAR;
  return root ? TIER_ROOT : -1;
}

/* A path in the task's root (ROOTFD) to each watch of R: the watches not
   found keep an empty path. Returns the entries read. */
static size_t
find_paths(pid_t pid, int rootfd, struct inotify_rec *r)
{
  struct walk w = { .rootfd = rootfd, .r = r, .nkeys = r->nw, .left = r->nw };
  int t;
  if (!r->nw)
    return 0;
  w.keys = xmalloc((r->nw + 1) * sizeof *w.keys);
  for (size_t i = 0; i < r->nw; i++)
    w.keys[i] = (struct wkey){ r->w[i].dev, r->w[i].ino, i };
  qsort(w.keys, w.nkeys, sizeof *w.keys, cmp_key);
  walk_seeds(&w, pid);
  while (w.left && w.seen < WALK_MAX && (t = walk_next(&w)) >= 0)
    {
      struct witem it = w.q[t].v[w.q[t].head++];
      walk_dir(&w, t, &it);
      free(it.path);
    }
  for (t = 0; t < TIERS; t++)
    {
      for (size_t i = w.q[t].head; i < w.q[t].tail; i++)
        free(w.q[t].v[i].path);
      free(w.q[t].v);
    }
  free(w.dirs.s);
  free(w.keys);
  return w.seen;
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
  char root[3];
  const char *s;
  size_t seen;
  if (readlink(rootl, root, sizeof root) != 1 || root[0] != '/')
    return crest_error_make(err, ENOTSUP, "inotify watches of a chroot'd task are not restored");
  if (unread_events(pid, fd, err) < 0 || evfd_fdinfo(pid, fd, &info, err) < 0)
    return -1;
  if ((rootfd = open(rootl, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
    return crest_error_errno(err, "open its root directory");
  for (s = strstr(info, "inotify wd:"); s; s = strstr(s + 1, "inotify wd:"))
    {
      struct inotify_rec *r = *recp;
      struct inotify_watch *w;
      unsigned int wd, sdev, mask;
      unsigned long long ino;
      if (sscanf(s, "inotify wd:%x ino:%llx sdev:%x mask:%x", &wd, &ino, &sdev, &mask) != 4)
        return crest_error_make(err, EIO, "fdinfo: cannot read the watch line %.40s", s);
      if (r->nw >= INOTIFY_WATCHES_MAX)
        return crest_error_make(err, ENOTSUP, "more than %d inotify watches", INOTIFY_WATCHES_MAX);
      r = *recp = xrealloc(r, sizeof *r + (r->nw + 1) * sizeof *r->w);
      w = &r->w[r->nw++];
      memset(w, 0, sizeof *w);
      w->wd = (int)wd, w->mask = mask;
      /* fdinfo shows the kernel's dev_t: 12 bits of major above 20 of minor. */
      w->dev = makedev(sdev >> 20, sdev & 0xfffff), w->ino = (ino_t)ino;
    }
  /* fdinfo lists the newest first; restore takes the numbers in order, and
     a watch not found is named by the lowest number. */
  qsort((*recp)->w, (*recp)->nw, sizeof *(*recp)->w, cmp_wd);
  seen = find_paths(pid, rootfd, *recp);
  for (size_t i = 0; i < (*recp)->nw; i++)
    if (!(*recp)->w[i].path[0])
      return crest_error_make(err, ENOTSUP,
                              "inotify watch %d (inode %llu): no path to it found from the task's "
                              "root (crest looks at its cwd, its open files and their directories, "
                              "then at %zu entries below them, below its other watches and from "
                              "its root), cannot checkpoint it",
                              (*recp)->w[i].wd, (unsigned long long)(*recp)->w[i].ino, seen);
  return 0;
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
