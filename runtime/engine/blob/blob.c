/* crest restorer blob: runs inside a task being restored, after the task has
 * jumped off crest's own code for good. It executes a list of system calls
 * prepared by the engine (unmap the old layout, move the vDSO, map and fill
 * the new one, recreate threads, restore per-task state) and stops at int3;
 * the engine then sets the registers with ptrace and unmaps the blob.
 *
 * Freestanding: no libc, no relocations, no global data. */
#include "blob-abi.h"

long
blob_clone_thread(void *clone_args, long size, struct blob_ops *child)
    __attribute__((visibility("hidden")));
void
blob_run_ops(struct blob_ops *o) __attribute__((visibility("hidden")));
void
blob_main(struct blob_args *a) __attribute__((visibility("hidden"), noreturn));

static inline long
sys6(long nr, long a, long b, long c, long d, long e, long f)
{
  long ret;
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return ret;
}

static long
pread_full(long fd, uint64_t addr, uint64_t len, uint64_t off)
{
  while (len)
    {
      uint64_t chunk = len > 0x40000000 ? 0x40000000 : len;
      long r = sys6(17 /* pread64 */, fd, (long)addr, (long)chunk, (long)off, 0, 0);
      if (r == -4 /* EINTR */)
        continue;
      if (r < 0)
        return r;
      if (r == 0)
        return -5; /* EIO: the page file is shorter than its index */
      addr += r, len -= r, off += r;
    }
  return 0;
}

/* BLOB_OP_FORCE_FILL: [ADDR, ADDR + LEN) from FD at OFF, through BUF and
   the process's own /proc/self/mem (MEM). */
static long
force_fill(long fd, uint64_t addr, uint64_t len, uint64_t off, long mem, uint64_t buf)
{
  while (len)
    {
      uint64_t chunk = len > BLOB_FORCE_BUF ? BLOB_FORCE_BUF : len;
      long r = pread_full(fd, buf, chunk, off);
      if (r < 0)
        return r;
      for (uint64_t done = 0; done < chunk;)
        {
          long w = sys6(18 /* pwrite64 */, mem, (long)(buf + done), (long)(chunk - done),
                        (long)(addr + done), 0, 0);
          if (w == -4 /* EINTR */)
            continue;
          if (w <= 0)
            return w < 0 ? w : -5; /* EIO */
          done += w;
        }
      addr += chunk, len -= chunk, off += chunk;
    }
  return 0;
}

/* pidfd_open(PID, FLAGS) as descriptor FD (its close-on-exec flag CLOEXEC). */
static long
pidfd_at(long pid, long flags, long fd, long cloexec)
{
  long r = sys6(434 /* pidfd_open */, pid, flags, 0, 0, 0, 0), d;
  if (r < 0)
    return r;
  if (r == fd)
    {
      /* pidfd_open sets close-on-exec. */
      d = cloexec ? 0 : sys6(72 /* fcntl */, fd, 2 /* F_SETFD */, 0, 0, 0, 0);
      return d < 0 ? d : fd;
    }
  d = sys6(292 /* dup3 */, r, fd, cloexec ? 02000000 /* O_CLOEXEC */ : 0, 0, 0, 0);
  sys6(3 /* close */, r, 0, 0, 0, 0, 0);
  return d;
}

/* BLOB_OP_UFFD: the descriptor is made by the task itself (userfaultfd
   works on the caller's memory), over its final layout, and leaves it. */
static long
make_uffd(long sock, const struct blob_uffd *u)
{
  uint64_t api[3] = { 0xAA /* UFFD_API */, u->features, 0 };
  const uint64_t *r = (const uint64_t *)u->ranges;
  long fd = sys6(323 /* userfaultfd */, (long)u->flags, 0, 0, 0, 0, 0), e;
  if (fd < 0)
    return fd;
  e = sys6(16 /* ioctl */, fd, (long)u->api_nr, (long)api, 0, 0, 0);
  for (uint64_t i = 0; e >= 0 && i < u->n; i++)
    {
      uint64_t reg[4] = { r[2 * i], r[2 * i + 1], 1 /* UFFDIO_REGISTER_MODE_MISSING */, 0 };
      e = sys6(16, fd, (long)u->reg_nr, (long)reg, 0, 0, 0);
    }
  if (e >= 0)
    {
      *(int32_t *)u->fd_slot = (int32_t)fd;
      e = sys6(46 /* sendmsg */, sock, (long)u->msg, 0, 0, 0, 0);
    }
  sys6(3 /* close */, fd, 0, 0, 0, 0, 0);
  return e < 0 ? e : 0;
}

void
blob_run_ops(struct blob_ops *o)
{
  struct blob_op *ops = (struct blob_op *)o->ops;

  for (uint64_t i = 0; i < o->n; i++)
    {
      struct blob_op *op = &ops[i];
      long r;
      int bad = 0;

      if (op->nr == BLOB_OP_CLONE_THREAD)
        r = blob_clone_thread((void *)op->a[0], (long)op->a[1], (struct blob_ops *)op->a[2]);
      else if (op->nr == BLOB_OP_PREAD_FULL)
        r = pread_full((long)op->a[0], op->a[1], op->a[2], op->a[3]);
      else if (op->nr == BLOB_OP_FORCE_FILL)
        r = force_fill((long)op->a[0], op->a[1], op->a[2], op->a[3], (long)op->a[4], op->a[5]);
      else if (op->nr == BLOB_OP_PIDFD)
        r = pidfd_at((long)op->a[0], (long)op->a[1], (long)op->a[2], (long)op->a[3]);
      else if (op->nr == BLOB_OP_UFFD)
        r = make_uffd((long)op->a[0], (const struct blob_uffd *)op->a[1]);
      else if (op->nr == BLOB_OP_TILE_TOUCH)
        {
          /* ldtilecfg (%rax); tilezero %tmm0; tilerelease */
          __asm__ volatile(".byte 0xc4, 0xe2, 0x78, 0x49, 0x00\n\t"
                           ".byte 0xc4, 0xe2, 0x7b, 0x49, 0xc0\n\t"
                           ".byte 0xc4, 0xe2, 0x78, 0x49, 0xc0"
                           :
                           : "a"(op->a[0])
                           : "memory");
          r = 0;
        }
      else if (op->nr == BLOB_OP_TRAP)
        {
          __asm__ volatile("int3");
          r = 0;
        }
      else
        r = sys6(op->nr, op->a[0], op->a[1], op->a[2], op->a[3], op->a[4], op->a[5]);
      if (op->check == BLOB_CHECK_NONNEG)
        bad = r < 0;
      else if (op->check == BLOB_CHECK_EQ)
        bad = r != op->expect;
      if (bad)
        {
          o->result = r;
          o->status = (int64_t)i + 1;
          return;
        }
    }
  o->status = 0;
}

void
blob_main(struct blob_args *a)
{
  if (a->magic == BLOB_MAGIC)
    blob_run_ops(&a->main);
  for (;;)
    __asm__ volatile("int3");
}
