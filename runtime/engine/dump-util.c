/* crest: helpers of the dump shared by dump.c and the files that dump one
 * kind of object: reading /proc of a task, paths in its root, IDs as the
 * tree sees them, a copy of one of its descriptors. */
#include <config.h>
#include <signal.h>
#include <time.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <linux/magic.h>
#include <sys/uio.h>
#include <unistd.h>
#include <linux/openat2.h>
#include "dump-int.h"
#include "elfid.h"
#include "image.h"
#include "log.h"
#include "util.h"

int
read_proc(pid_t pid, const char *what, char **out, crest_error_t *err)
{
  cleanup_free char *path = xasprintf("/proc/%d/%s", pid, what);
  if (read_file(path, out, NULL, 0, err) < 0)
    return crest_error_wrap(err, "task %d", pid);
  return 0;
}

/* A directory's identity: device, inode and mount. Two mounts of one
   directory show different things below them; only all three together say
   that two paths lead to the same place. */
int
dir_id(int fd, uint64_t id[3])
{
  struct statx sx;
  if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_INO | STATX_MNT_ID, &sx) < 0)
    return -1;
  id[0] = makedev(sx.stx_dev_major, sx.stx_dev_minor);
  id[1] = sx.stx_ino;
  id[2] = sx.stx_mask & STATX_MNT_ID ? sx.stx_mnt_id : 0;
  return 0;
}

/* Open PATH, a path /proc showed for task P. The dump runs outside the
   tree's mount namespace (a container's paths mean nothing on the host), so
   the path is resolved under the task's root directory, where absolute
   symlinks and ".." stay inside it and no magic link (a /proc/self/... of
   the container's /proc would be crest's own) is followed: nothing in the
   task's file system can make crest open a file of its own. /proc shows a
   chroot'd task's paths from the tree's top, not from its root (open_top):
   for such a task the top is where they are resolved. */
bool
shows_deleted(const char *name)
{
  size_t l = strlen(name);
  return l > 10 && strcmp(name + l - 10, " (deleted)") == 0;
}

int
open_in_root(const struct dctx *c, const struct dproc *p, const char *path, int flags,
             crest_error_t *err)
{
  cleanup_free char *rp = xasprintf("/proc/%d/root", p->pid);
  cleanup_close int own = -1;
  struct open_how how;
  int fd, root;
  if (p->root_dir)
    root = c->topfd;
  else if ((root = own = open(rp, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
    return crest_error_errno(err, "open the task's root directory");
  memset(&how, 0, sizeof how);
  how.flags = flags | O_CLOEXEC
              | (flags & O_PATH ? 0 : O_NOCTTY); /* openat2 takes nothing else with O_PATH */
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  fd = syscall(SYS_openat2, root, path, &how, sizeof how);
  /* A file of a container user closed to crest: asked of the broker, in
     the tree's user namespace (broker.c). */
  if (fd < 0 && errno == EACCES && c->foreign_userns)
    fd = broker_openat2(c->root, root, path, &how);
  if (fd < 0)
    return crest_error_errno(err, "open inside the task's root directory");
  return fd;
}

/* Is the regular file FD (of task P, PATH) on a tmpfs the tree mounted in
   its own mount namespace (the root of that tmpfs mounted there, as a
   runtime mounts /dev/shm or /run for a container)? Its files are not in
   the image and a restore mounts a new, empty one: a POSIX shared memory
   object of /dev/shm would be gone. -1 with ERR then, else 0. A bind of a
   directory of crest's own file systems (its root is not "/") stays. */
int
check_volatile_tmpfs(const struct dctx *c, const struct dproc *p, int fd, const char *path,
                     crest_error_t *err)
{
  cleanup_free char *ns = xasprintf("/proc/%d/ns/mnt", p->pid), *info = NULL;
  struct statfs sf;
  struct statx sx;
  struct stat a, b;
  char want[32], *l;
  (void)c;
  if (fstatfs(fd, &sf) < 0 || sf.f_type != TMPFS_MAGIC || stat("/proc/self/ns/mnt", &a) < 0
      || stat(ns, &b) < 0 || (a.st_dev == b.st_dev && a.st_ino == b.st_ino)
      || statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) < 0 || !(sx.stx_mask & STATX_MNT_ID))
    return 0;
  if (read_proc(p->pid, "mountinfo", &info, err) < 0)
    return -1;
  snprintf(want, sizeof want, "%llu ", (unsigned long long)sx.stx_mnt_id);
  for (l = info; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
    {
      char root[8], point[256];
      if (strncmp(l, want, strlen(want)) != 0)
        continue;
      if (sscanf(l, "%*u %*u %*u:%*u %7s %255s", root, point) == 2 && strcmp(root, "/") == 0)
        return crest_error_make(err, ENOTSUP,
                                "task %d: %s is a file of the tmpfs %s that the container mounts "
                                "itself (POSIX shared memory, in /dev/shm), which a restore "
                                "mounts new and empty: cannot checkpoint it",
                                p->pid, path, point);
      break;
    }
  return 0;
}

/* A file mapped in the tree, found by the path /proc showed for it from
   the directory whose identity is KEY (dir_id, and the mount namespace's
   inode; 0 there for the tree's top, open_top). */
struct mapped_file
{
  uint64_t key[4];
  char *path;
  struct stat st;
  char build_id[129]; /* an ELF file's GNU build ID ("" none, or unreadable) */
};

/* KEY of task P's mapped paths: the directory open_in_root resolves them
   from, in P's mount namespace. */
static int
root_key(const struct dctx *c, const struct dproc *p, uint64_t key[4], crest_error_t *err)
{
  cleanup_free char *rp = xasprintf("/proc/%d/root", p->pid);
  cleanup_free char *ns = xasprintf("/proc/%d/ns/mnt", p->pid);
  cleanup_close int own = -1;
  struct stat st;
  if (p->root_dir)
    {
      key[3] = 0;
      if (dir_id(c->topfd, key) < 0)
        return crest_error_errno(err, "the tree's top directory");
      return 0;
    }
  if ((own = open(rp, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0 || dir_id(own, key) < 0
      || stat(ns, &st) < 0)
    return crest_error_errno(err, "task %d: its root directory", p->pid);
  key[3] = st.st_ino;
  return 0;
}

/* The build ID of the file open (O_PATH) on FD, read through a
   descriptor of its own; "" where it has none or may not be read (a
   program mode 0711). */
static void
build_id_of(int fd, char out[129])
{
  cleanup_free char *self = xasprintf("/proc/self/fd/%d", fd);
  cleanup_close int r = open(self, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (r < 0 || elf_build_id(r, out) <= 0)
    out[0] = 0;
}

int
mapped_file_stat(struct dctx *c, const struct dproc *p, const struct vma *v, struct stat *st,
                 crest_error_t *err)
{
  const char *path = v->path;
  cleanup_close int fd = -1;
  uint64_t *key = c->mf_key;
  if (c->mf_of != p && root_key(c, p, key, err) < 0)
    return -1;
  c->mf_of = p;
  for (size_t k = 0; k < c->nmfiles; k++)
    if (memcmp(c->mfiles[k].key, key, sizeof c->mf_key) == 0
        && strcmp(c->mfiles[k].path, path) == 0)
      {
        *st = c->mfiles[k].st;
        c->mf_build_id = c->mfiles[k].build_id;
        return 0;
      }
  if ((fd = open_in_root(c, p, path, O_PATH, err)) < 0)
    return crest_error_wrap(err, "task %d: mapping %" PRIx64 "-%" PRIx64 " of %s", p->pid, v->start,
                            v->end, path);
  if (fstat(fd, st) < 0)
    return crest_error_errno(err, "task %d: mapped file %s: stat", p->pid, path);
  if (!S_ISREG(st->st_mode))
    return crest_error_make(err, ENOTSUP,
                            "task %d: mapping %" PRIx64 "-%" PRIx64 " of %s: not a regular file",
                            p->pid, v->start, v->end, path);
  if (check_volatile_tmpfs(c, p, fd, path, err) < 0)
    return -1;
  c->mfiles = xrealloc(c->mfiles, (c->nmfiles + 1) * sizeof *c->mfiles);
  memcpy(c->mfiles[c->nmfiles].key, key, sizeof c->mf_key);
  c->mfiles[c->nmfiles].path = xstrdup(path);
  c->mfiles[c->nmfiles].st = *st;
  build_id_of(fd, c->mfiles[c->nmfiles].build_id);
  c->mf_build_id = c->mfiles[c->nmfiles++].build_id;
  return 0;
}

void
mapped_files_free(struct dctx *c)
{
  for (size_t k = 0; k < c->nmfiles; k++)
    free(c->mfiles[k].path);
  free(c->mfiles);
  c->mfiles = NULL;
  c->nmfiles = 0;
}

const char *
status_field(const char *status, const char *key)
{
  size_t n = strlen(key);
  for (const char *l = status; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
    if (strncmp(l, key, n) == 0 && l[n] == ':')
      {
        l += n + 1;
        while (*l == ' ' || *l == '\t')
          l++;
        return l;
      }
  return NULL;
}

/* An ID as the tree's user namespace sees it; one it does not map reads
   there as the overflow ID, 65534. */
long
inner_id(const struct dctx *c, const struct idmap *m, long id)
{
  if (!c->foreign_userns)
    return id;
  for (size_t i = 0; i < m->n; i++)
    if ((uint64_t)id >= m->out[i] && (uint64_t)id - m->out[i] < m->len[i])
      return m->in[i] + (id - m->out[i]);
  return 65534;
}

int
getfd(pid_t pid, int fd, crest_error_t *err)
{
  cleanup_close int pfd = syscall(SYS_pidfd_open, pid, 0);
  int r;
  if (pfd < 0)
    return crest_error_errno(err, "task %d: pidfd_open", pid);
  r = syscall(SYS_pidfd_getfd, pfd, fd, 0);
  if (r < 0)
    return crest_error_errno(err, "task %d: fd %d: pidfd_getfd", pid, fd);
  return r;
}

/* WROTE (> 0): a record of docs/engine.md's attribute tables went into
   the image, which makes it format 3 at least. Returns WROTE. */
int
put_attrs(struct dctx *c, int wrote)
{
  if (wrote > 0 && c->w->format < CREST_IMAGE_FORMAT_ATTRS)
    c->w->format = CREST_IMAGE_FORMAT_ATTRS;
  return wrote;
}

int
vm_read(pid_t pid, uint64_t addr, void *buf, size_t len, crest_error_t *err)
{
  struct iovec l = { buf, len }, r = { (void *)addr, len };
  ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
  if (n != (ssize_t)len)
    return crest_error_sys(err, n < 0 ? errno : EIO, "task %d: read memory at %#" PRIx64, pid,
                           addr);
  return 0;
}

/* SIGINT, SIGTERM, SIGHUP and SIGQUIT are held off during a dump (dying with
   threads half-injected would leave them with foreign registers) and turn
   into a clean failure at the next safe point. */
int
interrupted(crest_error_t *err)
{
  sigset_t set;
  static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
  sigpending(&set);
  for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
    if (sigismember(&set, sigs[i]))
      return crest_error_make(err, EINTR, "checkpoint interrupted by signal %d (%s)", sigs[i],
                              strsignal(sigs[i]));
  return 0;
}

void
maybe_progress(struct dctx *c, const char *what)
{
  struct timespec now;
  double t;
  clock_gettime(CLOCK_MONOTONIC, &now);
  t = (double)(now.tv_sec - c->t0.tv_sec) + (now.tv_nsec - c->t0.tv_nsec) / 1e9;
  /* From the first second on, a line a second at most (one a batch
     before December 2026: hundreds for a large tree), and not the same
     line again (a process whose memory is copied in one long call). */
  if (t >= 1.0 && (!c->progress || t - c->progress_at >= 1.0)
      && (!c->progress || (c->pages_bytes >> 20) != c->progress_mib
          || strcmp(what, c->progress_what) != 0))
    {
      c->progress = true;
      c->progress_at = t;
      c->progress_mib = c->pages_bytes >> 20;
      snprintf(c->progress_what, sizeof c->progress_what, "%s", what);
      crest_progress("checkpoint of %d: %s (%" PRIu64 " MiB so far)", c->root, what,
                     c->pages_bytes >> 20);
    }
}
