/* crest: memory objects with no path to open again: shared anonymous
 * memory (an anonymous shmem object per mmap call, which maps shows as
 * "/dev/zero (deleted)"), memfds and deleted files.
 *
 * The object is what two mappings share, in one task or several, so it is
 * found through the mappings of every task first (shm_collect), keyed by the
 * device and inode maps shows, and saved once (shm_save). Its bytes come
 * from the fastest source the kernel opens to crest:
 *   1. /proc/PID/map_files/START-END: the object itself. A stock kernel opens
 *      it only with CAP_CHECKPOINT_RESTORE in the initial user namespace (a
 *      file capability on crest); the project's kernel series also to the
 *      owner of the task's user namespace. Found by trying, once.
 *   2. a descriptor of the object some task of the tree holds (a memfd, an
 *      unlinked file), taken with pidfd_getfd;
 *   3. the mappings themselves, through /proc/PID/mem, which the owner of
 *      the tree may always read. Of a shmem object only the pages in memory
 *      are read (reading a hole through a mapping would allocate it in the
 *      running tree): those the task itself reports with mincore(2), run as
 *      an injected syscall (shm_probe), which for shmem answers from the
 *      object's page cache, mapped or not (pagemap shows only what this
 *      mapping has present: nothing right after a restore). Where smaps
 *      shows part of the object swapped out, or mincore could not say, the
 *      whole mapping is read, which brings those pages back. Of a disk file
 *      every page but a task's private copy is read, from the file.
 * Whatever the source, the image holds the same: the object's bytes, one
 * file per object (docs/image-format.md). */
#include <config.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "image.h"
#include "log.h"
#include "shmem.h"
#include "util.h"
#include "dump-int.h"

#define SHM_PAGE 4096UL
#define SHM_MAX (1ULL << 30)

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

#define PM_PRESENT(e) (((e) >> 63) & 1)
#define PM_SWAPPED(e) (((e) >> 62) & 1)
#define PM_FILE(e) (((e) >> 61) & 1)

const struct shm_obj *
shm_find(struct shm_table *t, dev_t dev, ino_t ino)
{
  for (size_t i = 0; i < t->n; i++)
    if (t->o[i].dev_major == major(dev) && t->o[i].dev_minor == minor(dev) && t->o[i].ino == ino)
      return &t->o[i];
  return NULL;
}

static struct shm_obj *
find_obj(struct shm_table *t, unsigned maj, unsigned min, uint64_t ino)
{
  for (size_t i = 0; i < t->n; i++)
    if (t->o[i].dev_major == maj && t->o[i].dev_minor == min && t->o[i].ino == ino)
      return &t->o[i];
  return NULL;
}

static bool
shmem_name(const char *name);

static struct shm_obj *
add_obj(struct shm_table *t, unsigned maj, unsigned min, uint64_t ino, const char *path)
{
  struct shm_obj *o;
  t->o = xrealloc(t->o, (t->n + 1) * sizeof *t->o);
  o = &t->o[t->n++];
  memset(o, 0, sizeof *o);
  o->dev_major = maj, o->dev_minor = min, o->ino = ino;
  o->path = xstrdup(path);
  o->shmem = shmem_name(path);
  return o;
}

/* A mapping whose object has no path: a memfd, shared anonymous memory or a
   deleted file. SysV shared memory is refused by the caller. */
static bool
pathless(const char *name)
{
  size_t nl = strlen(name);
  if (strncmp(name, "/SYSV", 5) == 0)
    return false;
  return strncmp(name, "/memfd:", 7) == 0
         || (name[0] == '/' && nl > 10 && strcmp(name + nl - 10, " (deleted)") == 0);
}

int
shm_collect(struct shm_table *t, pid_t pid, crest_error_t *err)
{
  cleanup_free char *path = xasprintf("/proc/%d/maps", pid);
  cleanup_free char *maps = NULL;
  char *save = NULL;

  if (read_file(path, &maps, NULL, 0, err) < 0)
    return crest_error_wrap(err, "task %d", pid);
  t->pids = xrealloc(t->pids, (t->npids + 1) * sizeof *t->pids);
  t->pids[t->npids++] = pid;
  for (char *l = strtok_r(maps, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
    {
      struct maps_line ml;
      struct shm_obj *o;
      if (!maps_line(l, &ml) || !*ml.name || !pathless(ml.name))
        continue;
      /* Still linked under another name: a file mapping (parse_maps). */
      {
        cleanup_free char *linked = maps_linked_name(pid, ml.name, ml.maj, ml.min, ml.ino);
        if (linked)
          continue;
      }
      o = find_obj(t, ml.maj, ml.min, ml.ino);
      if (!o)
        o = add_obj(t, ml.maj, ml.min, ml.ino, ml.name);
      /* Sealed with F_SEAL_WRITE, every shared mapping of it may never
         write (VMF_SHAREDRO: mapped again read-only after the seals); one
         sealed with F_SEAL_FUTURE_WRITE may have writable ones, which the
         restore could not map once the seals are back. */
      if (ml.perms[3] == 's' && (o->seals & F_SEAL_FUTURE_WRITE))
        return crest_error_make(err, ENOTSUP,
                                "task %d: mapping %" PRIx64 "-%" PRIx64
                                " of %s: shared, of a memfd "
                                "sealed against future writes (seals %#x), which restore cannot "
                                "map again",
                                pid, ml.start, ml.end, o->path, o->seals);
      o->m = xrealloc(o->m, (o->nm + 1) * sizeof *o->m);
      o->m[o->nm].pid = pid, o->m[o->nm].start = ml.start, o->m[o->nm].end = ml.end;
      o->m[o->nm].pgoff = ml.off / SHM_PAGE, o->m[o->nm].shared = ml.perms[3] == 's';
      o->nm++;
    }
  return 0;
}

/* Is PID one of the tree's, or crest's own (this process, its parent)? */
static bool
ours_or_tree(const struct shm_table *t, pid_t pid)
{
  if (pid == getpid() || pid == getppid())
    return true;
  for (size_t i = 0; i < t->npids; i++)
    if (t->pids[i] == pid)
      return true;
  return false;
}

/* Is PID a child of this process (the broker), or gone? Asked only of a
   process found holding an object. */
static bool
child_or_gone(pid_t pid)
{
  cleanup_free char *stat = NULL;
  crest_error_t e = NULL;
  const char *r;
  if (read_proc(pid, "stat", &stat, &e) < 0)
    {
      crest_error_release(&e);
      return true;
    }
  r = strrchr(stat, ')');
  return r && atoi(r + 4) == getpid();
}

/* Does the tree map O shared (a private mapping of it, a deleted library
   after an upgrade, say, shares nothing worth keeping)? */
static struct shm_obj *
shared_in_tree(struct shm_obj *o)
{
  for (size_t k = 0; o && k < o->nm; k++)
    if (o->m[k].shared)
      return o;
  return NULL;
}

/* The object of T that the tree maps shared and PID maps or holds open,
   or NULL. */
static struct shm_obj *
held_outside(struct shm_table *t, pid_t pid)
{
  cleanup_free char *maps = NULL, *fddir = xasprintf("/proc/%d/fd", pid);
  crest_error_t e = NULL;
  char *save = NULL;
  struct shm_obj *o = NULL;
  DIR *d;
  struct dirent *de;
  if (read_proc(pid, "maps", &maps, &e) < 0)
    {
      crest_error_release(&e); /* another user's, or gone */
      return NULL;
    }
  for (char *l = strtok_r(maps, "\n", &save); l && !o; l = strtok_r(NULL, "\n", &save))
    {
      struct maps_line ml;
      if (maps_line(l, &ml) && *ml.name && pathless(ml.name))
        o = shared_in_tree(find_obj(t, ml.maj, ml.min, ml.ino));
    }
  if (o || !(d = opendir(fddir)))
    return o;
  while (!o && (de = readdir(d)))
    {
      char link[64];
      struct stat st;
      ssize_t n = readlinkat(dirfd(d), de->d_name, link, sizeof link - 1);
      if (n <= 0)
        continue;
      link[n] = 0;
      if ((strncmp(link, "/memfd:", 7) == 0 || shows_deleted(link))
          && fstatat(dirfd(d), de->d_name, &st, 0) == 0)
        o = shared_in_tree(find_obj(t, major(st.st_dev), minor(st.st_dev), st.st_ino));
    }
  closedir(d);
  return o;
}

int
shm_outside(struct shm_table *t, crest_error_t *err)
{
  DIR *d;
  struct dirent *de;
  struct shm_obj *o = NULL;
  pid_t by = 0;
  if (t->n == 0 || !(d = opendir("/proc")))
    return 0;
  while (!o && (de = readdir(d)))
    {
      pid_t pid = (pid_t)atoi(de->d_name);
      if (pid <= 0 || ours_or_tree(t, pid) || !(o = held_outside(t, pid)))
        continue;
      if (child_or_gone(pid))
        o = NULL;
      else
        by = pid;
    }
  closedir(d);
  if (o)
    return crest_error_make(err, ENOTSUP,
                            "task %d: %s: shared with process %d, outside the tree, from which a "
                            "restore would cut it off (their writes no longer seen by each "
                            "other): cannot checkpoint it",
                            o->m[0].pid, o->path, by);
  return 0;
}

static bool
shmem_name(const char *name)
{
  return strncmp(name, "/memfd:", 7) == 0 || strcmp(name, "/dev/zero (deleted)") == 0;
}

int
shm_probe(struct shm_table *t, pid_t pid, const struct vma *vv, size_t nv, shm_inject_fn inject,
          void *ctx, uint64_t scratch, size_t len, crest_error_t *err)
{
  for (size_t i = 0; i < nv; i++)
    {
      uint64_t s = vv[i].start, e = vv[i].end;
      uint64_t npages;
      struct shm_resident *r;
      if (!vv[i].path || !shmem_name(vv[i].path))
        continue;
      npages = (e - s) / SHM_PAGE;
      t->res = xrealloc(t->res, (t->nres + 1) * sizeof *t->res);
      r = &t->res[t->nres++];
      r->pid = pid, r->start = s, r->end = e;
      r->vec = xmalloc(npages + 1);
      for (uint64_t off = 0; off < npages; off += len)
        {
          uint64_t n = npages - off < len ? npages - off : len;
          long a[6] = { (long)(s + off * SHM_PAGE), (long)(n * SHM_PAGE), (long)scratch };
          long ret;
          struct iovec lo = { r->vec + off, n }, ro = { (void *)scratch, n };
          if (inject(ctx, SYS_mincore, a, &ret, err) < 0)
            return -1;
          if (ret != 0 || process_vm_readv(pid, &lo, 1, &ro, 1, 0) != (ssize_t)n)
            {
              /* Unknown: the whole mapping is read (shm_save). */
              crest_debug("task %d: mincore of %lx-%lx: %ld: reading all of it", pid, s, e, ret);
              free(r->vec);
              r->vec = NULL;
              break;
            }
        }
      if (r->vec)
        {
          size_t nin = 0;
          for (uint64_t k = 0; k < npages; k++)
            nin += r->vec[k] & 1;
          crest_debug("task %d: %lx-%lx: %zu of %" PRIu64 " pages in memory", pid, s, e, nin,
                      npages);
        }
    }
  return 0;
}

static const struct shm_resident *
resident(struct shm_table *t, pid_t pid, uint64_t start)
{
  for (size_t k = 0; k < t->nres; k++)
    {
      size_t i = (t->hint_res + k) % t->nres;
      if (t->res[i].pid == pid && t->res[i].start == start)
        {
          t->hint_res = i + 1;
          return &t->res[i];
        }
    }
  return NULL;
}

/* 1. map_files, when the kernel opens it to crest. */
static int
open_map_files(struct shm_table *t, pid_t pid, uint64_t start, uint64_t end)
{
  cleanup_free char *link = NULL;
  int fd;
  if (t->map_files < 0)
    return -1;
  link = xasprintf("/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, start, end);
  fd = open(link, O_RDONLY | O_CLOEXEC);
  if (fd < 0 && (errno == EPERM || errno == EACCES))
    {
      crest_debug("map_files closed to crest (%s): reading memory objects another way", link);
      t->map_files = -1;
    }
  else if (fd >= 0)
    t->map_files = 1;
  return fd;
}

/* 2. a readable descriptor of the object held by a task of the tree. */
static int
open_tree_fd(const struct shm_table *t, const struct shm_obj *o)
{
  for (size_t i = 0; i < t->npids; i++)
    {
      cleanup_free char *dir = xasprintf("/proc/%d/fd", t->pids[i]);
      DIR *d = opendir(dir);
      struct dirent *de;
      int found = -1;
      if (!d)
        continue;
      while (found < 0 && (de = readdir(d)))
        {
          struct stat st;
          int n, pfd, fd, fl;
          if (de->d_name[0] == '.' || fstatat(dirfd(d), de->d_name, &st, 0) < 0
              || !S_ISREG(st.st_mode) || major(st.st_dev) != o->dev_major
              || minor(st.st_dev) != o->dev_minor || st.st_ino != o->ino)
            continue;
          n = atoi(de->d_name);
          pfd = syscall(SYS_pidfd_open, t->pids[i], 0);
          if (pfd < 0)
            continue;
          fd = syscall(SYS_pidfd_getfd, pfd, n, 0);
          close(pfd);
          if (fd < 0)
            continue;
          fl = fcntl(fd, F_GETFL);
          if (fl < 0 || (fl & O_PATH) || (fl & O_ACCMODE) == O_WRONLY)
            close(fd);
          else
            found = fd;
        }
      closedir(d);
      if (found >= 0)
        return found;
    }
  return -1;
}

/* The data of FD, SIZE bytes, into BUF, HAVE marking the pages read:
   SEEK_DATA and SEEK_HOLE skip the holes (without reading or allocating
   them; a swapped-out page of a shmem object is data); where the file
   system cannot say, all of it is read. */
static int
read_data(int fd, off_t size, uint8_t *buf, uint8_t *have, crest_error_t *err)
{
  for (off_t off = 0; off < size;)
    {
      off_t d = lseek(fd, off, SEEK_DATA), h;
      if (d < 0 && errno == ENXIO)
        break;
      if (d < 0 && errno != EINVAL)
        return crest_error_errno(err, "seek");
      h = d < 0 ? size : lseek(fd, d, SEEK_HOLE);
      if (d < 0)
        d = off;
      if (d >= size)
        break;
      if (h <= d || h > size)
        h = size;
      for (off_t at = d; at < h;)
        {
          ssize_t r = pread(fd, buf + at, h - at, at);
          if (r <= 0)
            return crest_error_sys(err, r < 0 ? errno : EIO, "read");
          at += r;
        }
      memset(have + d / SHM_PAGE, 1, (h - 1) / SHM_PAGE - d / SHM_PAGE + 1);
      off = h;
    }
  return 0;
}

/* The object behind FD into BUF (its size, zeros where nothing is read),
   HAVE marking the pages read. */
static int
read_whole(int fd, struct shm_obj *o, uint8_t **buf, uint8_t **have, crest_error_t *err)
{
  struct stat st;
  off_t was;
  int rc;
  if (fstat(fd, &st) < 0)
    return crest_error_errno(err, "%s: stat", o->path);
  if (!S_ISREG(st.st_mode))
    return crest_error_make(err, ENOTSUP, "%s: not a regular file or memfd, cannot checkpoint it",
                            o->path);
  if ((uint64_t)st.st_size > SHM_MAX)
    return crest_error_make(err, EFBIG, "%s: larger than 1 GiB", o->path);
  *buf = xzalloc(st.st_size + 1);
  *have = xzalloc(st.st_size / SHM_PAGE + 2);
  /* FD may be the tree's own open file description (pidfd_getfd), whose
     offset the seeks move: put back, whatever happened (the bytes are read
     with pread). */
  was = lseek(fd, 0, SEEK_CUR);
  rc = read_data(fd, st.st_size, *buf, *have, err);
  if (was >= 0 && lseek(fd, was, SEEK_SET) != was && rc == 0)
    rc = crest_error_errno(err, "put the descriptor's offset back");
  if (rc < 0)
    return crest_error_wrap(err, "%s", o->path);
  o->size = st.st_size;
  return 0;
}

/* Kilobytes of the object swapped out in the mapping at START of task PID
   (smaps counts a shmem object's swapped pages, which pagemap does not
   show); -1 when smaps does not say. A task's smaps is read once for all
   its mappings (vmflags.c). */
static long
swapped_kb(struct shm_table *t, pid_t pid, uint64_t start)
{
  if (t->swap_pid != pid || !t->swap)
    {
      crest_error_t e = NULL;
      free(t->swap);
      t->swap = NULL, t->nswap = 0, t->swap_pid = pid;
      if (vmflags_load(pid, &t->swap, &t->nswap, &e) < 0)
        {
          crest_error_release(&e);
          return -1;
        }
    }
  return vmflags_swap_kb(t->swap, t->nswap, start);
}

/* Read pages [K, J) of mapping M (object pages from M->pgoff + K) through
   /proc/PID/mem into BUF; pages that cannot be read (past the end of a
   file) stay unread. */
static void
read_run(int mem, const struct shm_map *m, uint64_t k, uint64_t j, uint8_t *buf, uint8_t *have)
{
  uint64_t len = (j - k) * SHM_PAGE, obj = (m->pgoff + k) * SHM_PAGE;
  if (pread(mem, buf + obj, len, m->start + k * SHM_PAGE) == (ssize_t)len)
    {
      memset(have + m->pgoff + k, 1, j - k);
      return;
    }
  for (uint64_t i = k; i < j; i++)
    if (pread(mem, buf + (m->pgoff + i) * SHM_PAGE, SHM_PAGE, m->start + i * SHM_PAGE)
        == (ssize_t)SHM_PAGE)
      have[m->pgoff + i] = 1;
    else
      memset(buf + (m->pgoff + i) * SHM_PAGE, 0, SHM_PAGE);
}

static int
read_mapping(struct shm_table *t, struct shm_obj *o, const struct shm_map *m, uint8_t *buf,
             uint8_t *have, crest_error_t *err)
{
  uint64_t npages = (m->end - m->start) / SHM_PAGE;
  cleanup_free char *pmpath = xasprintf("/proc/%d/pagemap", m->pid);
  cleanup_free char *mempath = xasprintf("/proc/%d/mem", m->pid);
  cleanup_free uint64_t *ent = xmalloc(npages * 8);
  cleanup_close int pm = open(pmpath, O_RDONLY | O_CLOEXEC);
  cleanup_close int mem = open(mempath, O_RDONLY | O_CLOEXEC);
  /* A disk file's pages come from the file wherever they are not mapped;
     a shmem object's swapped-out pages only through a read of them; and
     where the task could not tell which pages are in memory, all are
     read. */
  const struct shm_resident *r = o->shmem ? resident(t, m->pid, m->start) : NULL;
  bool full = !o->shmem || !r || !r->vec || swapped_kb(t, m->pid, m->start) > 0;

  if (pm < 0 || mem < 0)
    return crest_error_errno(err, "task %d: open %s", m->pid, pm < 0 ? "pagemap" : "mem");
  if (pagemap_read(pm, m->pid, m->start, npages, ent, err) < 0)
    return -1;
  for (uint64_t k = 0; k < npages;)
    {
      uint64_t j;
      /* Not a page of the object: a private copy (anonymous, present or
         swapped) in a private mapping. */
#define OWN(e) (PM_SWAPPED(e) || (PM_PRESENT(e) && !PM_FILE(e)))
#define WANT(i)                                                                                    \
  (!have[m->pgoff + (i)] && !OWN(ent[i]) && (full || PM_PRESENT(ent[i]) || (r->vec[i] & 1)))
      if (!WANT(k))
        {
          k++;
          continue;
        }
      for (j = k; j < npages && WANT(j); j++)
        ;
      read_run(mem, m, k, j, buf, have);
      k = j;
#undef WANT
#undef OWN
    }
  return 0;
}

/* 3. the object's bytes through every mapping of it in the tree. */
static int
read_mappings(struct shm_table *t, struct shm_obj *o, uint8_t **buf, uint8_t **have,
              crest_error_t *err)
{
  uint64_t size = 0, last = 0, npages;
  for (size_t i = 0; i < o->nm; i++)
    {
      uint64_t e = o->m[i].pgoff * SHM_PAGE + (o->m[i].end - o->m[i].start);
      if (e < o->m[i].pgoff * SHM_PAGE || e > SHM_MAX)
        return crest_error_make(err, EFBIG, "%s: larger than 1 GiB", o->path);
      size = e > size ? e : size;
    }
  npages = size / SHM_PAGE;
  *buf = xzalloc(size + 1);
  *have = xzalloc(npages + 1);
  for (size_t i = 0; i < o->nm; i++)
    if (read_mapping(t, o, &o->m[i], *buf, *have, err) < 0)
      return -1;
  /* A shmem object is as large as its largest mapping says; a disk file
     ends after the last page that could be read (pages past its end fault
     with SIGBUS, and still do after restore). */
  for (uint64_t p = 0; p < npages; p++)
    if ((*have)[p])
      last = p + 1;
  o->size = o->shmem ? size : last * SHM_PAGE;
  return 0;
}

static struct shm_obj *
obj_of(struct shm_table *t, pid_t pid, uint64_t start, uint64_t end)
{
  /* The mapping after the last one found first: the dump asks in the
     order they were collected. */
  if (t->hint_obj < t->n)
    {
      const struct shm_obj *o = &t->o[t->hint_obj];
      size_t k = t->hint_map;
      if (k < o->nm && o->m[k].pid == pid && o->m[k].start == start && o->m[k].end == end)
        {
          t->hint_map = k + 1;
          return &t->o[t->hint_obj];
        }
    }
  for (size_t i = 0; i < t->n; i++)
    for (size_t k = 0; k < t->o[i].nm; k++)
      if (t->o[i].m[k].pid == pid && t->o[i].m[k].start == start && t->o[i].m[k].end == end)
        {
          t->hint_obj = i, t->hint_map = k + 1;
          return &t->o[i];
        }
  return NULL;
}

static int
write_obj(struct shm_table *t, struct img_writer *w, struct shm_obj *o, const uint8_t *buf,
          const uint8_t *have, crest_error_t *err);

int
shm_save(struct shm_table *t, struct img_writer *w, pid_t pid, uint64_t start, uint64_t end,
         const struct shm_obj **out, crest_error_t *err)
{
  struct shm_obj *o = obj_of(t, pid, start, end);
  cleanup_free uint8_t *buf = NULL;
  cleanup_free uint8_t *have = NULL;
  int fd, rc;

  if (!o)
    return crest_error_make(
        err, ESRCH, "task %d: mapping %" PRIx64 "-%" PRIx64 " changed during the checkpoint", pid,
        start, end);
  *out = o;
  if (o->data)
    return 0;
  if ((fd = open_map_files(t, pid, start, end)) >= 0)
    o->by = "map_files";
  else if ((fd = open_tree_fd(t, o)) >= 0)
    o->by = "a descriptor of the tree";
  if (fd >= 0)
    {
      rc = read_whole(fd, o, &buf, &have, err);
      close(fd);
    }
  else
    {
      o->by = "its mappings";
      rc = read_mappings(t, o, &buf, &have, err);
    }
  if (rc < 0)
    return crest_error_wrap(err, "task %d: mapping %" PRIx64 "-%" PRIx64, pid, start, end);
  return write_obj(t, w, o, buf, have, err);
}

static bool
zero_page(const uint8_t *p, size_t len)
{
  return p[0] == 0 && memcmp(p, p + 1, len - 1) == 0;
}

/* The extents of O worth saving: the pages read (HAVE) that hold more than
   zeros; two of them closer than MERGE_GAP pages are one, the zeros
   between them saved (fewer extents: at most 1 GiB / 5 pages). */
#define MERGE_GAP 4
static void
find_extents(struct shm_obj *o, const uint8_t *buf, const uint8_t *have)
{
  uint64_t npages = (o->size + SHM_PAGE - 1) / SHM_PAGE;
  for (uint64_t k = 0; k < npages; k++)
    {
      uint64_t off = k * SHM_PAGE, len = o->size - off < SHM_PAGE ? o->size - off : SHM_PAGE;
      uint64_t(*last)[2] = o->next ? &o->ext[o->next - 1] : NULL;
      if (!have[k] || zero_page(buf + off, len))
        continue;
      if (last && (*last)[0] + (*last)[1] + MERGE_GAP * SHM_PAGE >= off)
        (*last)[1] = off + len - (*last)[0];
      else
        {
          o->ext = xrealloc(o->ext, (o->next + 1) * sizeof *o->ext);
          o->ext[o->next][0] = off, o->ext[o->next][1] = len;
          o->next++;
        }
    }
}

/* O's data file: the bytes of its extents, back to back, or (no holes)
   the whole object. */
static int
write_obj(struct shm_table *t, struct img_writer *w, struct shm_obj *o, const uint8_t *buf,
          const uint8_t *have, crest_error_t *err)
{
  struct img_out io;
  uint64_t saved = 0;
  find_extents(o, buf, have);
  o->sparse = o->size && !(o->next == 1 && o->ext[0][0] == 0 && o->ext[0][1] == o->size);
  o->data = xasprintf("memfile-%zu.img", t->nsaved++);
  if (img_out_open(w, o->data, &io, err) < 0)
    return -1;
  for (size_t i = 0; o->sparse && i < o->next; i++)
    if (img_out_write(&io, buf + o->ext[i][0], o->ext[i][1], err) < 0)
      goto fail;
  if (!o->sparse && o->size && img_out_write(&io, buf, o->size, err) < 0)
    goto fail;
  if (img_out_close(&io, err) < 0)
    return -1;
  for (size_t i = 0; i < o->next; i++)
    saved += o->ext[i][1];
  crest_debug("memory object %s (%u:%u/%" PRIu64 ", %zu mappings): %" PRIu64
              " bytes read through %s, %" PRIu64 " saved in %zu extents",
              o->path, o->dev_major, o->dev_minor, o->ino, o->nm, o->size, o->by,
              o->sparse ? saved : o->size, o->sparse ? o->next : 1);
  return 0;
fail:
  img_out_abort(&io);
  return -1;
}

bool
shm_put(const struct shm_table *t, yajl_gen g)
{
  bool any = false;
  for (size_t i = 0; i < t->n; i++)
    {
      const struct shm_obj *o = &t->o[i];
      if (!o->data || !o->sparse)
        continue;
      if (!any)
        {
          jput_key(g, "memfiles");
          yajl_gen_array_open(g);
          any = true;
        }
      yajl_gen_map_open(g);
      jput_str(g, "data", o->data);
      jput_u64(g, "size", o->size);
      jput_extents(g, (const uint64_t(*)[2])o->ext, o->next);
      yajl_gen_map_close(g);
    }
  if (any)
    yajl_gen_array_close(g);
  return any;
}

int
shm_save_fd(struct shm_table *t, struct img_writer *w, pid_t pid, int fd, const struct stat *st,
            const char *link, const struct shm_obj **out, crest_error_t *err)
{
  struct shm_obj *o = find_obj(t, major(st->st_dev), minor(st->st_dev), st->st_ino);
  cleanup_free uint8_t *buf = NULL;
  cleanup_free uint8_t *have = NULL;
  cleanup_close int dup = -1;
  int pfd, fl;

  if (!o)
    o = add_obj(t, major(st->st_dev), minor(st->st_dev), st->st_ino, link);
  *out = o;
  if (o->data)
    return 0;
  pfd = syscall(SYS_pidfd_open, pid, 0);
  if (pfd < 0)
    return crest_error_errno(err, "task %d: pidfd_open", pid);
  dup = syscall(SYS_pidfd_getfd, pfd, fd, 0);
  close(pfd);
  if (dup < 0)
    return crest_error_errno(err, "task %d: fd %d (%s): pidfd_getfd", pid, fd, link);
  fl = fcntl(dup, F_GETFL);
  if (fl >= 0 && (fl & O_ACCMODE) == O_WRONLY)
    {
      /* A write-only descriptor: read through a new open of the same file. */
      cleanup_free char *lp = xasprintf("/proc/%d/fd/%d", pid, fd);
      int r = open(lp, O_RDONLY | O_CLOEXEC);
      if (r < 0)
        return crest_error_errno(err, "task %d: fd %d (%s): open to read", pid, fd, link);
      close(dup);
      dup = r;
    }
  fl = fcntl(dup, F_GET_SEALS);
  o->seals = fl < 0 ? 0 : fl;
  o->by = "a descriptor of the tree";
  if (read_whole(dup, o, &buf, &have, err) < 0)
    return crest_error_wrap(err, "task %d: fd %d", pid, fd);
  return write_obj(t, w, o, buf, have, err);
}

void
shm_free(struct shm_table *t)
{
  for (size_t i = 0; i < t->n; i++)
    free(t->o[i].path), free(t->o[i].m), free(t->o[i].data), free(t->o[i].ext);
  free(t->o);
  free(t->pids);
  for (size_t i = 0; i < t->nres; i++)
    free(t->res[i].vec);
  free(t->res);
  free(t->swap);
  memset(t, 0, sizeof *t);
}
