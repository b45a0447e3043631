/* crest: what the engine and the restorer blob agree on. Fixed-size types
 * only: the blob is built freestanding, without libc headers. */
#ifndef CREST_BLOB_ABI_H
#define CREST_BLOB_ABI_H

#include <stdint.h>

/* Offsets inside the blob. */
#define BLOB_OFF_ENTRY 0 /* entry(struct blob_args *) on the blob's stack */
#define BLOB_OFF_SYSCALL                                                                           \
  8 /* "syscall; int3": where the engine makes a task                                              \
       issue a syscall with ptrace */

/* 8 bytes, the signal set {SIGCHLD}, then a struct timespec of zero. */
#define BLOB_OFF_SIGCHLD_SET 16
#define BLOB_OFF_ZERO_TIMEOUT 24

#define BLOB_MAGIC 0x63726573746f7265ULL /* "crestore" */

/* Pseudo syscall numbers handled by the blob itself. */
#define BLOB_OP_CLONE_THREAD                                                                       \
  (-1000) /* a0 = struct clone_args *, a1 = its size,                                              \
             a2 = child's struct blob_ops *       */
#define BLOB_OP_PREAD_FULL                                                                         \
  (-1001)                    /* a0 = fd, a1 = addr, a2 = len, a3 = off:                            \
                                loops over short reads              */
#define BLOB_OP_TRAP (-1002) /* int3 (debugging) */
#define BLOB_OP_UFFD                                                                               \
  (-1003) /* a0 = unix socket, a1 = struct blob_uffd *: a userfaultfd over                         \
             the lazy ranges, sent to crest (lazy.c)  */
#define BLOB_OP_PIDFD                                                                              \
  (-1004) /* a0 = pid, a1 = pidfd_open flags, a2 = the descriptor it must                          \
             be, a3 = close-on-exec: returns a2 */
/* a0 = a 64-byte tile configuration: LDTILECFG, TILEZERO of tile 0 and
   TILERELEASE, the thread's first use of AMX's tile data, after which the
   kernel has room for it (the process holds the permission). */
#define BLOB_OP_TILE_TOUCH (-1005)
/* a0 = fd, a1 = addr, a2 = len, a3 = off, a4 = /proc/self/mem, a5 = a
   buffer of BLOB_FORCE_BUF bytes: the pages read there and written to
   their place through /proc/self/mem, which writes a mapping that is not
   writable (a private mapping never made writable keeps it so). */
#define BLOB_OP_FORCE_FILL (-1006)
#define BLOB_FORCE_BUF (64u << 10)

/* Checks on a result. */
#define BLOB_CHECK_NONE 0
#define BLOB_CHECK_NONNEG 1 /* result must be >= 0 */
#define BLOB_CHECK_EQ 2     /* result must equal expect */

struct blob_op
{
  int64_t nr;
  uint64_t a[6];
  int32_t check;
  uint32_t tag; /* for the error message: the engine's own label */
  int64_t expect;
};

/* A list of operations and where its thread reports back. */
struct blob_ops
{
  uint64_t n;
  uint64_t ops;   /* struct blob_op * */
  int64_t status; /* -1 running, 0 done, else index + 1 of the failed op */
  int64_t result; /* its result (negative errno) */
};

/* BLOB_OP_UFFD: userfaultfd(flags), UFFDIO_API (api_nr, features),
   UFFDIO_REGISTER (reg_nr, missing mode) of each range, then sendmsg of the
   prepared message with the descriptor written at fd_slot, and close. */
struct blob_uffd
{
  uint64_t flags, api_nr, reg_nr, features;
  uint64_t n, ranges; /* n of { start, len } */
  uint64_t msg;       /* struct msghdr *, SCM_RIGHTS of one descriptor */
  uint64_t fd_slot;   /* int * inside its control buffer */
};

struct blob_args
{
  uint64_t magic;
  struct blob_ops main;
};

#endif
