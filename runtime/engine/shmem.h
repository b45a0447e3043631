/* crest: memory objects with no path to open again (shared anonymous
   memory, memfds, deleted files), found through the mappings of every task
   of the tree and saved once each (docs/engine.md, "Memory objects"). */
#ifndef CREST_SHMEM_H
#define CREST_SHMEM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <yajl/yajl_gen.h>
#include "error.h"

struct img_writer;

/* One mapping of an object, in one task. */
struct shm_map
{
  pid_t pid;
  uint64_t start, end, pgoff;
  bool shared;
};

struct shm_obj
{
  unsigned dev_major, dev_minor;
  uint64_t ino; /* the object, as /proc/PID/maps shows it */
  char *path;   /* as maps shows it */
  bool shmem;   /* shared anonymous memory or a memfd (not a disk file) */
  struct shm_map *m;
  size_t nm;
  char *data;    /* memfile-N.img once saved */
  uint64_t size; /* the object's bytes */
  /* SPARSE: DATA holds only the bytes of NEXT extents EXT of the object
     (docs/image-format.md, "memfiles"), the rest zeros; else all of it. */
  bool sparse;
  uint64_t (*ext)[2];
  size_t next;
  int seals;      /* a memfd's, when a descriptor showed them (F_GET_SEALS) */
  const char *by; /* how it was read: map_files, a descriptor, or the mappings */
};

/* Which pages of a shmem mapping are in the object's page cache, as
   mincore(2) run by the task itself answered (VEC NULL: it could not say). */
struct shm_resident
{
  pid_t pid;
  uint64_t start, end;
  uint8_t *vec;
};

struct shm_table
{
  struct shm_obj *o;
  size_t n, nsaved;
  pid_t *pids; /* every live task of the tree (descriptors are looked for there) */
  size_t npids;
  struct shm_resident *res;
  size_t nres;
  int map_files; /* does the kernel open map_files to crest: 0 not tried yet, 1 yes, -1 no */
  /* Lookups by mapping, in the order the dump asks (address order within
     a task): where the last one was found, to try first (a process with
     20,000 mappings of one object made linear searches quadratic). */
  size_t hint_obj, hint_map, hint_res;
  /* The smaps of task swap_pid (vmflags.c), read once for every mapping of
     it whose object is read through its mappings. */
  struct vmflags_ent *swap;
  size_t nswap;
  pid_t swap_pid;
};

/* Run one syscall NR with arguments A in the seized task (dump-inject.c's
   injection); *RET is its result. */
typedef int (*shm_inject_fn)(void *ctx, long nr, const long a[6], long *ret, crest_error_t *err);

/* While task PID runs injected syscalls: ask it, with mincore(2) into its
   scratch page SCRATCH (LEN bytes), which pages of each of its shmem
   mappings are in memory, mapped by it or not. VV: its NV mappings, as
   parse_maps read them for the injected calls. */
struct vma;
int
shm_probe(struct shm_table *t, pid_t pid, const struct vma *vv, size_t nv, shm_inject_fn inject,
          void *ctx, uint64_t scratch, size_t len, crest_error_t *err);

/* Record every mapping of task PID whose object has no path to open again. */
int
shm_collect(struct shm_table *t, pid_t pid, crest_error_t *err);

/* Once every task is collected: is one of the objects mapped or open in a
   process outside the tree (of those crest may look at)? Refused then. */
int
shm_outside(struct shm_table *t, crest_error_t *err);

/* The object with device DEV and inode INO, if the tree maps it. */
const struct shm_obj *
shm_find(struct shm_table *t, dev_t dev, ino_t ino);

/* The object mapped at START-END in task PID: save its bytes into the image
   (once per object) and return the image file and its size. */
int
shm_save(struct shm_table *t, struct img_writer *w, pid_t pid, uint64_t start, uint64_t end,
         const struct shm_obj **out, crest_error_t *err);

/* A memfd descriptor FD of task PID (ST: its stat, LINK: its /proc link):
   save its object once, through the descriptor (contents, size, seals). Its
   mappings, collected later, name the same object. */
struct stat;
int
shm_save_fd(struct shm_table *t, struct img_writer *w, pid_t pid, int fd, const struct stat *st,
            const char *link, const struct shm_obj **out, crest_error_t *err);

/* "memfiles": each saved object with holes, its size and extents; true
   when one was written (format 19). */
bool
shm_put(const struct shm_table *t, yajl_gen g);

void
shm_free(struct shm_table *t);

#endif
