/* crest: the new task's side of the restore (docs/engine.md, "Restore"):
 * each task, forked with its PID (create_task), takes its session, group
 * and credentials, forks its children, installs its descriptors, and
 * builds the program the restorer blob runs to rebuild its address space
 * and threads, then jumps to it (task_main). */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/futex.h>
#include <linux/sched.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/auxv.h>
#include <sys/file.h>
#include <sys/xattr.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <asm/prctl.h>
#include <termios.h>
#include <unistd.h>
#include "engine.h"
#include "engine-int.h"
#include "image.h"
#include "image-check.h"
#include "kernel-abi.h"
#include "log.h"
#include "testhook.h"
#include "util.h"
#include "blob/blob-abi.h"

#include "restore-int.h"

/* ---------- the task side (runs in each new task, on crest's code) ---------- */

uint64_t
bld_alloc(struct bld *b, uint64_t size, uint64_t align, const void *init)
{
  uint64_t off = (b->used + align - 1) & ~(align - 1);
  if (off + size > b->cap)
    abort(); /* sized beforehand: a bug, not an input problem */
  if (init)
    memcpy(b->buf + off, init, size);
  b->used = off + size;
  return b->base + off;
}

void
op(struct oplist *l, long nr, int check, int64_t expect, uint64_t a0, uint64_t a1, uint64_t a2,
   uint64_t a3, uint64_t a4, uint64_t a5)
{
  struct blob_op *o;
  /* Grown by doubling: a task builds a hundred or more operations, and a
     realloc per operation walks and writes crest's inherited heap, each
     page of it a copy-on-write fault in the task. */
  if (l->n == l->cap)
    {
      l->cap = l->cap ? 2 * l->cap : 64;
      l->ops = xrealloc(l->ops, l->cap * sizeof *l->ops);
    }
  o = &l->ops[l->n++];
  memset(o, 0, sizeof *o);
  o->nr = nr, o->check = check, o->expect = expect;
  o->a[0] = a0, o->a[1] = a1, o->a[2] = a2, o->a[3] = a3, o->a[4] = a4, o->a[5] = a5;
}

void __attribute__((noreturn)) task_fail(struct rctx *c, int idx, const char *fmt, ...)
{
  struct report r;
  va_list ap;
  memset(&r, 0, sizeof r);
  r.kind = 'E';
  r.idx = idx;
  r.pid = getpid();
  va_start(ap, fmt);
  vsnprintf(r.msg, sizeof r.msg, fmt, ap);
  va_end(ap);
  if (c->init_fail && idx == 0 && getpid() == 1)
    {
      memcpy(c->init_msg, r.msg, sizeof r.msg);
      siglongjmp(*c->init_fail, 1);
    }
  if (write(c->report[1], &r, sizeof r) < 0)
    _exit(126);
  _exit(127);
}

struct special
{
  uint64_t start, end;
  char kind[16];
};

static size_t
self_specials(struct special *s, uint64_t *lo, uint64_t *hi, size_t *nlay, uint64_t lay[][2])
{
  FILE *f = fopen("/proc/self/maps", "re");
  char line[512];
  size_t n = 0;
  *nlay = 0;
  if (!f)
    return 0;
  while (fgets(line, sizeof line, f))
    {
      unsigned long a, b;
      char name[256] = "";
      if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %255s", &a, &b, name) < 2)
        continue;
      if (*nlay < 4096)
        lay[*nlay][0] = a, lay[*nlay][1] = b, (*nlay)++;
      if (strcmp(name, "[vdso]") == 0 || strcmp(name, "[vvar]") == 0
          || strcmp(name, "[vvar_vclock]") == 0)
        {
          s[n].start = a, s[n].end = b;
          snprintf(s[n].kind, sizeof s[n].kind, "%.*s", (int)strlen(name) - 2, name + 1);
          n++;
        }
    }
  fclose(f);
  (void)lo, (void)hi;
  return n;
}

/* crest's own layout and special mappings as self_specials reads them,
   read once by crest before the first task is forked (task_layout_prime):
   every task starts as a copy of it, so none reads and parses
   /proc/self/maps for itself (200 tasks did, 6% of a tree's restore). A
   task's layout has more than crest's (what its ancestors premapped, its
   own allocations since): a blob region that meets one of those cannot be
   mapped (MAP_FIXED_NOREPLACE), and the task then reads its own. */
static struct
{
  bool valid;
  size_t nsp, nlay;
  struct special sp[8];
  uint64_t lay[4096][2];
} self_layout;

void
task_layout_prime(void)
{
  self_layout.nsp = self_specials(self_layout.sp, NULL, NULL, &self_layout.nlay, self_layout.lay);
  self_layout.valid = true;
}

/* The lowest gap of SIZE bytes (plus a guard page on each side) that
   neither the current layout nor the target one of any of the NP tasks
   at P uses. */
static uint64_t
find_gap(const struct rproc *p, size_t np, uint64_t lay[][2], size_t nlay, uint64_t size)
{
  for (uint64_t cand = 0x10000000; cand + size < TASK_TOP;)
    {
      uint64_t lo = cand - PAGE, hi = cand + size + PAGE, next = 0;
      for (size_t i = 0; i < nlay; i++)
        if (lay[i][0] < hi && lay[i][1] > lo && lay[i][1] > next)
          next = lay[i][1];
      for (size_t k = 0; k < np; k++)
        for (size_t i = 0; i < p[k].nvmas; i++)
          if (p[k].vmas[i].start < hi && p[k].vmas[i].end > lo && p[k].vmas[i].end > next)
            next = p[k].vmas[i].end;
      if (!next)
        return cand;
      cand = (next + PAGE + 0xfffff) & ~0xfffffUL;
    }
  return 0;
}

/* SIZE bytes mapped (PROT, private anonymous, FLAGS) in the lowest gap
   that neither this task's layout nor the target layout of the NP tasks at
   P uses: first by the layout the task inherited, then, if that met a
   mapping made since (MAP_FIXED_NOREPLACE fails), by its own read again.
   NULL with errno (ENOMEM: no gap); *BASE is the place tried last. */
static void *
map_in_gap(const struct rproc *p, size_t np, uint64_t size, int prot, int flags, uint64_t *base)
{
  for (int fresh = 0; fresh < 2; fresh++)
    {
      void *r;
      if (fresh || !self_layout.valid)
        task_layout_prime();
      *base = find_gap(p, np, self_layout.lay, self_layout.nlay, size);
      if (!*base)
        return errno = ENOMEM, NULL;
      r = mmap((void *)*base, size, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | flags,
               -1, 0);
      if (r == (void *)*base)
        return r;
      if (r != MAP_FAILED) /* a kernel without MAP_FIXED_NOREPLACE: a hint */
        munmap(r, size), errno = EEXIST;
      else if (errno != EEXIST)
        return NULL;
    }
  return NULL;
}

/* Where the blob makes the mappings it must keep apart from their
   neighbours (mem_keep_apart) before it moves them into place: a range
   free in every task of the tree and in this one, as long as the longest
   of them, with a page free on either side (find_gap: a mapping made there
   has no neighbour to merge with). Reserved here, freed by the blob with
   the rest of crest's memory. 0: none needed, or none found (the mappings
   then merge: a debug line says so). */
static uint64_t
task_apart_area(struct rctx *c, const struct rproc *p)
{
  uint64_t len = 0, base;
  for (size_t i = 0; i < p->nvmas; i++)
    if (mem_keep_apart(p, i) && !cow_kept(p, i) && p->vmas[i].end - p->vmas[i].start > len)
      len = p->vmas[i].end - p->vmas[i].start;
  if (!len)
    return 0;
  if (!map_in_gap(c->p, c->np, len, PROT_NONE, MAP_NORESERVE, &base))
    {
      crest_debug("process %d: no room to make mappings apart: some merge with their neighbours",
                  p->pid);
      return 0;
    }
  return base;
}

/* SIZE bytes of private anonymous memory (FLAGS: MAP_NORESERVE or 0)
   where no task of the tree has a mapping: a mapping that its children
   share and whose own place crest's memory holds waits there until the
   blob moves it (mem-cow.c). NULL if there is no such place. */
void *
task_map_aside(struct rctx *c, uint64_t size, int flags)
{
  uint64_t base;
  return map_in_gap(c->p, c->np, size, PROT_READ | PROT_WRITE, flags, &base);
}

/* The process-wide state of docs/engine.md's attribute tables (prctl.c,
   locks.c), after the service descriptors are closed: closing any
   descriptor of a file drops the process's POSIX locks on it. */
static void
process_attr_ops(struct rproc *p, struct oplist *l, struct bld *b)
{
  long pops[8][3];
  size_t npops = prctl_ops_process(&p->pr, pops);
  for (size_t i = 0; i < npops; i++)
    OP(l, pops[i][0], pops[i][1], pops[i][2], 0, 0, 0, 0);
  for (size_t k = 0; k < p->nfds; k++)
    for (size_t j = 0; j < p->fds[k].locks.n; j++)
      {
        struct flock fl;
        locks_flock(&p->fds[k].locks.l[j], &fl);
        OP(l, SYS_fcntl, p->fds[k].fd, F_SETLK, bld_alloc(b, sizeof fl, 8, &fl), 0, 0, 0);
      }
}

static void
thread_tail_ops(struct rctx *c, struct rproc *p, struct rthread *t, struct oplist *l, struct bld *b)
{
  uint8_t zero_attr[56];
  (void)c;
  /* A thread that held AMX tile data: its first AMX instruction, so that
     the kernel takes the data back at the registers' phase (ptrace). */
  if (t->tiles)
    {
      /* Palette 1, tile 0 of 16 rows of 64 bytes. */
      uint8_t cfg[64] = { 1 };
      cfg[16] = 64, cfg[48] = 16;
      OP(l, BLOB_OP_TILE_TOUCH, bld_alloc(b, sizeof cfg, 64, cfg), 0, 0, 0, 0, 0);
    }
  OP(l, SYS_set_tid_address, t->clear_tid, 0, 0, 0, 0, 0);
  if (t->robust)
    OP(l, SYS_set_robust_list, t->robust, t->robust_len, 0, 0, 0, 0);
  if (t->rseq)
    OP(l, 334 /* rseq */, t->rseq, t->rseq_size, 0, t->rseq_sig, 0, 0);
  if (t->alt_sp || t->alt_size || (t->alt_flags & ~4 /* SS_AUTODISARM */) != 2 /* SS_DISABLE */)
    {
      uint64_t ss[3] = { t->alt_sp, (uint64_t)(t->alt_flags & ~1 /* SS_ONSTACK */), t->alt_size };
      OP(l, SYS_sigaltstack, bld_alloc(b, sizeof ss, 8, ss), 0, 0, 0, 0, 0);
    }
  OP(l, SYS_prctl, PR_SET_NAME, bld_alloc(b, 16, 8, t->comm), 0, 0, 0, 0);
  /* 0: a real-time thread's, which the kernel keeps at 0 by itself (and
     a write of 0 would mean "the default"). */
  if (t->pr.slack > 0)
    OP(l, SYS_prctl, PR_SET_TIMERSLACK, t->pr.slack, 0, 0, 0, 0);
  memset(zero_attr, 0, sizeof zero_attr);
  bool uclamp = t->umin != 0 || (t->umax != 0 && t->umax != 1024); /* 0: kernel without uclamp */
  if (t->policy != 0 || t->nice != 0 || uclamp)
    {
      struct crest_sched_attr sa;
      memset(&sa, 0, sizeof sa);
      sa.size = sizeof sa;
      sa.policy = t->policy;
      sa.flags = t->sched_flags & ~0x60ULL;
      if (uclamp)
        sa.flags |= 0x20 | 0x40; /* SCHED_FLAG_UTIL_CLAMP_MIN | _MAX */
      sa.nice = t->nice;
      sa.prio = t->prio;
      sa.umin = t->umin;
      sa.umax = t->umax;
      if (t->policy != 0 && t->policy != 3 /* SCHED_BATCH */ && t->nice != 0)
        {
          /* Outside the fair policies the kernel ignores the nice value:
             set it under SCHED_NORMAL first. */
          uint32_t pol = sa.policy;
          uint64_t fl = sa.flags;
          sa.policy = 0;
          sa.flags = 0;
          OP(l, SYS_sched_setattr, 0, bld_alloc(b, sizeof sa, 8, &sa), 0, 0, 0, 0);
          sa.policy = pol;
          sa.flags = fl;
        }
      OP(l, SYS_sched_setattr, 0, bld_alloc(b, sizeof sa, 8, &sa), 0, 0, 0, 0);
    }
  /* A subset of the restorer's CPUs (affinity_restore_check), so the
     kernel gives it exactly. */
  if (t->has_aff)
    OP(l, SYS_sched_setaffinity, 0, sizeof t->aff, bld_alloc(b, sizeof t->aff, 8, &t->aff), 0, 0,
       0);
  if (t->has_ioprio)
    OP(l, SYS_ioprio_set, 1 /* IOPRIO_WHO_PROCESS */, 0, t->ioprio, 0, 0, 0);
  if (t->mpol_mode)
    OP(l, SYS_set_mempolicy, t->mpol_mode, bld_alloc(b, sizeof t->mpol_nodes, 8, &t->mpol_nodes),
       MPOL_MAXNODE + 1, 0, 0, 0);
  {
    long spec[6][3];
    size_t ns = prctl_ops_spec(&t->pr, spec);
    for (size_t k = 0; k < ns; k++)
      if (spec[k][0] < 0)
        OP(l, SYS_arch_prctl, spec[k][1], spec[k][2], 0, 0, 0, 0);
      else
        OP(l, SYS_prctl, spec[k][0], spec[k][1], spec[k][2], 0, 0, 0);
  }
  for (size_t i = 0; i < t->npending; i++)
    {
      int32_t sig;
      memcpy(&sig, t->pending[i], 4);
      OP(l, SYS_rt_tgsigqueueinfo, p->pid, t->tid, sig, bld_alloc(b, 128, 8, t->pending[i]), 0, 0);
    }
  /* The thread ends its operations at an int3. A SIGTRAP the kernel forces
     while it is blocked resets its disposition to the default, and the
     process's handler would be lost: SIGTRAP is unblocked for that moment
     (crest, the tracer, takes the stop; the thread's mask is set afterwards
     with ptrace). Not when a SIGTRAP of the image is pending: it would be
     taken at once. */
  if (!sig_in(t->pending, t->npending, SIGTRAP)
      && !sig_in(p->shared_pending, p->nshared_pending, SIGTRAP))
    {
      uint64_t trap = 1ULL << (SIGTRAP - 1);
      OP(l, SYS_rt_sigprocmask, SIG_UNBLOCK, bld_alloc(b, sizeof trap, 8, &trap), 0, 8, 0, 0);
    }
  seccomp_install_op(c, l, b);
  /* User and group IDs, then capabilities, last: after them the thread
     may hold less than it needs for anything above (set_tid, exe link). */
  creds_setid_ops(p, l);
  {
    struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct d[2];
    creds_cap_data(p, d);
    OP(l, SYS_capset, bld_alloc(b, sizeof h, 8, &h), bld_alloc(b, sizeof d, 8, d), 0, 0, 0, 0);
    OP(l, SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0, 0);
    for (int cap = 0; cap < 64; cap++)
      if (p->caps[4] & (1ULL << cap))
        OP(l, SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0, 0);
    if (p->nnp)
      OP(l, SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0);
  }
  creds_keepcaps_op(p, l);
  /* After the change of IDs, which clears it. */
  if (t->pr.pdeathsig)
    OP(l, SYS_prctl, PR_SET_PDEATHSIG, t->pr.pdeathsig, 0, 0, 0, 0);
}

static void
zombie_noop(int sig)
{
  (void)sig;
}

/* The signals whose default action dumps core (the kernel's
   SIG_KERNEL_COREDUMP_MASK). */
static bool
core_signal(int sig)
{
  return sig == SIGQUIT || sig == SIGILL || sig == SIGTRAP || sig == SIGABRT || sig == SIGBUS
         || sig == SIGFPE || sig == SIGSEGV || sig == SIGXCPU || sig == SIGXFSZ || sig == SIGSYS;
}

/* Will a death by a core signal with these limits write no core? Only with
   a soft RLIMIT_CORE of 0 and a core_pattern that is a file's (a pipe's
   helper is started whatever the limit). */
static bool
core_off(const struct rproc *p)
{
  char pat[2] = "";
  int fd = open("/proc/sys/kernel/core_pattern", O_RDONLY | O_CLOEXEC);
  if (fd >= 0)
    {
      if (read(fd, pat, 1) < 0)
        pat[0] = '|';
      close(fd);
    }
  return p->rl[RLIMIT_CORE][0] == 0 && fd >= 0 && pat[0] != '|';
}

/* What /proc shows of a zombie of format 14 besides its IDs: signal
   dispositions (a caught signal gets a handler of crest's: a zombie's
   address space is gone), limits, nice, personality, credentials, and
   its blocked signals last. The signal it dies of (SIG) stays at its
   default action, unblocked. */
static void
zombie_state(struct rctx *c, int idx, const struct rproc *p, int sig)
{
  uint64_t mine = sig ? 1ULL << (sig - 1) : 0, mask;
  struct ksigaction libc = { 0, 0, 0, 0 };
  struct sigaction sa;
  /* libc's return trampoline, for a handler that may yet run before the
     exit: from a handler libc installs. */
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = zombie_noop;
  sigaction(SIGUSR1, &sa, NULL);
  syscall(SYS_rt_sigaction, SIGUSR1, NULL, &libc, 8);
  for (int s = 1; s <= 64; s++)
    {
      uint64_t bit = 1ULL << (s - 1);
      struct ksigaction ka = { (uint64_t)(uintptr_t)SIG_DFL, 0, 0, 0 };
      if (s == SIGKILL || s == SIGSTOP)
        continue;
      if (!(mine & bit) && (p->zsig[1] & bit))
        ka.handler = (uint64_t)(uintptr_t)SIG_IGN;
      else if (!(mine & bit) && (p->zsig[2] & bit))
        ka = (struct ksigaction){ (uint64_t)(uintptr_t)zombie_noop, libc.flags, libc.restorer, 0 };
      if (syscall(SYS_rt_sigaction, s, &ka, NULL, 8) < 0)
        task_fail(c, idx, "process %d (a zombie): signal %d's action: %s", p->pid, s,
                  strerror(errno));
    }
  for (int r = 0; r < RLIM_NLIMITS; r++)
    {
      struct rlimit rl = { p->rl[r][0], p->rl[r][1] };
      if (setrlimit(r, &rl) < 0)
        task_fail(c, idx, "process %d (a zombie): limit %d: %s", p->pid, r, strerror(errno));
    }
  if (getpriority(PRIO_PROCESS, 0) != p->znice && setpriority(PRIO_PROCESS, 0, p->znice) < 0)
    task_fail(c, idx, "process %d (a zombie): nice %d: %s", p->pid, p->znice, strerror(errno));
  if (p->zpers && personality(p->personality) < 0)
    task_fail(c, idx, "process %d (a zombie): personality %#" PRIx64 ": %s", p->pid, p->personality,
              strerror(errno));
  creds_zombie(c, idx, p);
  mask = p->zsig[0] & ~mine;
  syscall(SYS_rt_sigprocmask, SIG_SETMASK, &mask, NULL, 8);
}

/* A zombie of the image: what /proc shows of it (format 14), then it exits
   the way it did, so that its parent's wait() gets the same status. A
   signal death is made without a core dump (and without the core flag in
   the status, which is not reproduced): a core signal's death is made
   not dumpable unless its limits already prevent a core (the zombie's
   namespace links then refuse its user on kernels that keep a dead task's
   dumpable flag: docs/engine.md). */
static void __attribute__((noreturn)) zombie_exit(struct rctx *c, int idx, const struct rproc *p)
{
  int st = p->exit_status;
  int sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
  prctl(PR_SET_NAME, p->comm);
  if (p->zstate)
    zombie_state(c, idx, p, sig);
  if (sig)
    {
      uint64_t unblock = 1ULL << (sig - 1);
      if (WCOREDUMP(st))
        crest_debug("process %d: died with a core dump; restored without one", p->pid);
      if (core_signal(sig) && !p->zstate)
        {
          struct rlimit none = { 0, 0 };
          setrlimit(RLIMIT_CORE, &none);
        }
      if (core_signal(sig) && !(p->zstate && core_off(p)))
        prctl(PR_SET_DUMPABLE, 0);
      signal(sig, SIG_DFL);
      syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &unblock, NULL, 8);
      kill(getpid(), sig);
    }
  _exit(WEXITSTATUS(st));
}

static void __attribute__((noreturn)) task_jump(uint64_t entry, uint64_t sp, uint64_t args)
{
  __asm__ volatile("mov %0, %%rsp\n\t"
                   "xor %%ebp, %%ebp\n\t"
                   "jmp *%2\n\t"
                   :
                   : "r"(sp), "D"(args), "r"(entry)
                   : "memory");
  __builtin_unreachable();
}

/* The ns_last_pid fallback: one lock orders every write of ns_last_pid and
   the fork that follows it, across all restoring tasks. It is a POSIX record
   lock on the shared descriptor: such a lock belongs to the process (its
   descriptor table), so tasks that inherited the same open file description
   still exclude each other, and a child never inherits its parent's lock.
   flock() would not do: its lock belongs to the open file description,
   which every task shares, so each task's LOCK_EX succeeded at once. */
static struct flock
nslp_lock(short type)
{
  struct flock l;
  memset(&l, 0, sizeof l);
  l.l_type = type;
  l.l_whence = SEEK_SET;
  return l;
}

static int
nslp_set(struct rctx *c, short type)
{
  struct flock l = nslp_lock(type);
  while (fcntl(c->nslp_fd, F_SETLKW, &l) < 0)
    if (errno != EINTR)
      return -1;
  return 0;
}

/* The index of the process of PID in the image, or -1. */
static long
proc_index(const struct rctx *c, pid_t pid)
{
  for (size_t i = 0; i < c->np; i++)
    if (c->p[i].pid == pid)
      return (long)i;
  return -1;
}

/* Before joining the group of LEADER (its index), made by another branch
   of the tree: wait until its leader has made it. The leader's parent may
   have created it a moment ago, or not yet (a cousin), and a setpgid to a
   group that does not exist yet fails (until December 2026 a restore of
   tini's or bash's job-control trees failed now and then: "join process
   group 2: Operation not permitted"). Not for a leader below this
   process, which it creates only later: that join fails as before. */
static void
wait_group(struct rctx *c, int idx, const struct rproc *p, long leader)
{
  const struct timespec tick = { 1, 0 };
  int waited = 0;
  for (long a = leader; a >= 0; a = proc_index(c, c->p[a].ppid))
    if (a == idx || a == 0)
      {
        if (a == idx)
          return;
        break;
      }
  while (__atomic_load_n(&c->grp[leader], __ATOMIC_ACQUIRE) == 0)
    {
      if (waited++ == 10)
        task_fail(c, idx, "process %d: join process group %d: its leader did not make it in 10 s",
                  p->pid, p->pgid);
      syscall(SYS_futex, &c->grp[leader], FUTEX_WAIT, 0, &tick, NULL, 0);
    }
}

/* This process has made the group it leads: said to those waiting. */
static void
group_made(struct rctx *c, int idx)
{
  __atomic_store_n(&c->grp[idx], 1, __ATOMIC_RELEASE);
  syscall(SYS_futex, &c->grp[idx], FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static void
task_session(struct rctx *c, int idx, const struct rproc *p)
{
  /* Session and process group, before the children inherit them. */
  /* crun already made a container's init lead its own session. */
  if (p->sid == p->pid && getsid(0) != getpid())
    {
      if (setsid() < 0)
        task_fail(c, idx, "process %d: setsid: %s", p->pid, strerror(errno));
    }
  else if (idx != 0 && getsid(0) != p->sid)
    task_fail(c, idx, "process %d: session %d is neither its own nor its parent's", p->pid, p->sid);
  if (p->pgid != getpgid(0) && (idx != 0 || p->pgid == p->pid))
    {
      long leader = p->pgid == p->pid ? -1 : proc_index(c, p->pgid);
      const char *fault = crest_test_knob("CREST_FAULT");
      /* Test hook: a group's leader makes it late, after its members. */
      if (fault && strcmp(fault, "group-late") == 0 && leader < 0 && idx != 0)
        {
          struct timespec late = { 0, 300 * 1000 * 1000 };
          nanosleep(&late, NULL);
        }
      if (leader >= 0)
        wait_group(c, idx, p, leader);
      if (setpgid(0, p->pgid) < 0)
        task_fail(c, idx, "process %d: join process group %d: %s", p->pid, p->pgid,
                  strerror(errno));
    }
  if (p->pgid == p->pid)
    group_made(c, idx);
  {
    /* its controlling terminal, when a pty of the tree (pty.c) */
    crest_error_t e = NULL;
    if (pty_task_ctty(c, p, &e) < 0)
      {
        cleanup_free char *why = crest_error_text(e);
        crest_error_release(&e);
        task_fail(c, idx, "%s", why);
      }
  }
}

/* Children: group leaders first, so that their groups exist for the
   others to join. A zombie child exits at once; its SIGCHLD is taken
   back here (the checkpointed pending signals come back in the blob),
   after it has exited, so the restored process sees no new one. A group
   a zombie leads lives on until the zombie is waited for. */
static void
task_children(struct rctx *c, int idx, const struct rproc *p)
{
  sigset_t chld, old;
  bool zombies = false;
  const size_t *kid = c->kids + p->kid0;
  for (size_t k = 0; k < p->nkids; k++)
    zombies |= c->p[kid[k]].zombie;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  /* A zombie made with another exit signal sends that one. */
  for (size_t k = 0; k < p->nkids; k++)
    if (c->p[kid[k]].zombie && c->p[kid[k]].exit_sig > 0)
      sigaddset(&chld, c->p[kid[k]].exit_sig);
  if (zombies)
    sigprocmask(SIG_BLOCK, &chld, &old);
  for (int pass = 0; pass < 2; pass++)
    for (size_t k = 0; k < p->nkids; k++)
      {
        size_t i = kid[k];
        siginfo_t si;
        if ((c->p[i].pgid == c->p[i].pid) != (pass == 0))
          continue;
        if (create_task(c, i) < 0)
          task_fail(c, idx, "process %d: create child %d: %s", p->pid, c->p[i].pid,
                    strerror(errno));
        /* Not reaped (WNOWAIT); once it has exited, its group exists for
           the members created after it. */
        while (c->p[i].zombie && waitid(P_PID, c->p[i].pid, &si, WEXITED | WNOWAIT | __WALL) < 0)
          if (errno != EINTR)
            task_fail(c, idx, "process %d: wait for zombie %d: %s", p->pid, c->p[i].pid,
                      strerror(errno));
      }
  if (zombies)
    {
      struct timespec zero = { 0, 0 };
      while (sigtimedwait(&chld, NULL, &zero) > 0)
        ;
      sigprocmask(SIG_SETMASK, &old, NULL);
    }
}

/* Write VALUE to /proc/self/NAME, or fail the task; unless the file is
   not there and MAY_LACK (a kernel without the feature: without core dumps
   there is no coredump_filter, and nothing for the value to act on).
   Without stdio: its buffer would be one more of crest's pages each task
   writes. */
static void
proc_self_write(struct rctx *c, int idx, const struct rproc *p, const char *name, const char *value,
                bool may_lack)
{
  char path[64];
  int fd, e = 0;
  ssize_t w = -1, len = (ssize_t)strlen(value);
  snprintf(path, sizeof path, "/proc/self/%s", name);
  fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd >= 0)
    {
      w = write(fd, value, (size_t)len);
      e = errno;
      close(fd);
    }
  else if ((e = errno) == ENOENT && may_lack)
    return;
  if (w != len)
    task_fail(c, idx, "process %d: %s %s: %s", p->pid, name, value,
              w < 0 ? strerror(e) : "short write");
}

/* Its session's autogroup nice value. The kernel lets an unprivileged
   user change one autogroup a second, machine-wide (EAGAIN within it): one
   wait of that second, once, then one more try. */
static void
autogroup_write(struct rctx *c, int idx, const struct rproc *p, const char *num)
{
  int fd = open("/proc/self/autogroup", O_WRONLY | O_CLOEXEC), e = 0;
  ssize_t w = -1;
  if (fd < 0 && errno == ENOENT)
    return; /* no autogroups in this kernel: nothing for it to act on */
  for (int tries = 0; fd >= 0 && tries < 2; tries++)
    {
      struct timespec second = { 1, 50 * 1000 * 1000 };
      w = write(fd, num, strlen(num));
      e = errno;
      if (w >= 0 || e != EAGAIN || tries)
        break;
      nanosleep(&second, NULL);
    }
  if (fd < 0)
    e = errno;
  else
    close(fd);
  if (w < 0)
    task_fail(c, idx, "process %d: its session's autogroup nice %s: %s", p->pid, num, strerror(e));
}

static void
task_attrs(struct rctx *c, int idx, const struct rproc *p)
{
  umask(p->umask);
  if (personality(p->personality) < 0)
    task_fail(c, idx, "process %d: personality %#" PRIx64 ": %s", p->pid, p->personality,
              strerror(errno));
  {
    char num[24];
    snprintf(num, sizeof num, "%lld", (long long)p->oom);
    proc_self_write(c, idx, p, "oom_score_adj", num, false);
    snprintf(num, sizeof num, "0x%" PRIx64, p->coredump);
    if (p->has_coredump)
      proc_self_write(c, idx, p, "coredump_filter", num, true);
    /* Its session's new autogroup (task_session made the session). */
    snprintf(num, sizeof num, "%lld", (long long)p->autogroup_nice);
    if (p->autogroup_nice)
      autogroup_write(c, idx, p, num);
  }
  /* /proc/self is done: from here on by path as the task. */
  creds_fs(c, idx, p);
  if (chdir(p->cwd) < 0)
    task_fail(c, idx, "process %d: chdir %s: %s", p->pid, p->cwd, strerror(errno));
}

/* Its vDSO and vvar match this kernel's (SP, NSP: this process's). */
static void
check_specials(struct rctx *c, int idx, const struct rproc *p, const struct special *sp, size_t nsp)
{
  size_t nvsp = 0;
  for (size_t i = 0; i < p->nvmas; i++)
    if (strcmp(p->vmas[i].kind, "vdso") == 0 || strncmp(p->vmas[i].kind, "vvar", 4) == 0)
      {
        bool match = false;
        for (size_t k = 0; k < nsp; k++)
          match |= strcmp(sp[k].kind, p->vmas[i].kind) == 0
                   && sp[k].end - sp[k].start == p->vmas[i].end - p->vmas[i].start;
        if (!match)
          task_fail(c, idx, "process %d: its [%s] does not match this kernel's", p->pid,
                    p->vmas[i].kind);
        nvsp++;
      }
  if (nvsp != nsp)
    task_fail(c, idx,
              "process %d: vDSO layout differs from this kernel's (%zu special mappings, here %zu)",
              p->pid, nvsp, nsp);
}

/* Is P's heap made by the blob with brk() (mem_heap_by_brk: *FIRST ..
   *END - 1)? Not when any of it is kept (premapped: premap_heap made it
   or mmap did), nor when a mapping the blob keeps lies where brk() would
   grow it or within the page above (brk() refuses then): the blob region
   [BASE, BASE + SIZE), a kept mapping. */
static bool
heap_ops_by_brk(const struct rproc *p, uint64_t base, uint64_t size, size_t *first, size_t *end)
{
  uint64_t lo, hi;
  if (!mem_heap_by_brk(p, first, end))
    return false;
  lo = p->vmas[*first].start, hi = p->vmas[*end - 1].end + PAGE;
  if (base < hi && base + size > lo)
    return false;
  for (size_t i = 0; i < p->nvmas; i++)
    if (cow_kept(p, i) && p->vmas[i].start < hi && p->vmas[i].end > lo)
      return false;
  return true;
}

/* The mappings: 1. the vDSO and vvar out of the way, 2. everything else
   gone, 3. the vDSO where it was, 4. the target mappings, filled, then
   their protections and advice. The blob region is BASE, SIZE long;
   SCRATCH is room for the specials SP. */
static void
mem_ops(const struct rproc *p, struct special *sp, size_t nsp, uint64_t base, uint64_t size,
        uint64_t scratch, uint64_t apart, struct oplist *l, struct bld *b)
{
  size_t heap0 = 0, heap1 = 0;
  /* 1. the vDSO and vvar out of the way, 2. everything else gone,
     3. the vDSO where it was. */
  {
    uint64_t s = scratch;
    for (size_t k = 0; k < nsp; k++)
      {
        uint64_t len = sp[k].end - sp[k].start;
        OPEQ(l, SYS_mremap, s, sp[k].start, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, s, 0);
        sp[k].start = s, sp[k].end = s + len;
        s += len;
      }
    cow_unmap_ops(p, base, size, l);
    for (size_t i = 0; i < p->nvmas; i++)
      for (size_t k = 0; k < nsp; k++)
        if (strcmp(sp[k].kind, p->vmas[i].kind) == 0 && sp[k].start)
          {
            uint64_t len = sp[k].end - sp[k].start;
            OPEQ(l, SYS_mremap, p->vmas[i].start, sp[k].start, len, len,
                 MREMAP_MAYMOVE | MREMAP_FIXED, p->vmas[i].start, 0);
            sp[k].start = 0;
            break;
          }
  }
  /* 4. the target mappings, writable until filled. */
  bool as_task = false; /* SysV segments attached with the task's IDs */
  if (!heap_ops_by_brk(p, base, size, &heap0, &heap1))
    heap0 = heap1 = 0;
  for (size_t i = 0; i < p->nvmas; i++)
    {
      struct rvma *m = &p->vmas[i];
      if (i == heap0 && heap1)
        {
          /* The heap by brk(), from start_brk to the end of its last
             mapping brk() makes, with the image's layout but the break at
             start_brk for that call (exe and auxv untouched: step 5 sets
             them, and the break). */
          struct mm_map mm = p->mm;
          mm.brk = mm.start_brk, mm.auxv = 0, mm.auxv_size = 0, mm.exe_fd = (uint32_t)-1;
          OP(l, SYS_prctl, PR_SET_MM, PR_SET_MM_MAP, bld_alloc(b, sizeof mm, 8, &mm), sizeof mm, 0,
             0);
          OPEQ(l, SYS_brk, (int64_t)p->vmas[heap1 - 1].end, p->vmas[heap1 - 1].end, 0, 0, 0, 0, 0);
        }
      if (i >= heap0 && i < heap1)
        continue;
      int flags = MAP_FIXED | (m->shared ? MAP_SHARED : MAP_PRIVATE);
      /* Writable until filled, but for a private mapping that was never
         writable: the kernel would charge it to the commit accounting
         (VmFlags "ac") for good, which it was not (fill_ops writes its
         pages through /proc/self/mem). */
      int prot
          = m->shared || (m->madv & VMF_NOACCOUNT) ? m->prot : m->prot | PROT_WRITE | PROT_READ;
      if (strcmp(m->kind, "vdso") == 0 || strncmp(m->kind, "vvar", 4) == 0 || cow_kept(p, i))
        continue;
      if (strcmp(m->kind, "sysv") == 0)
        {
          /* The segment, made by the restorer with its ID (ipc.c). */
          if (!as_task)
            as_task = creds_euid_ops(p, l, true);
          OPEQ(l, SYS_shmat, (int64_t)m->start, m->shmid, m->start, m->shmflg, 0, 0, 0);
          continue;
        }
      if (!m->path)
        flags |= MAP_ANONYMOUS;
      if (strcmp(m->kind, "stack") == 0)
        flags |= MAP_GROWSDOWN;
      if (m->madv & VMF_NORESERVE)
        flags |= MAP_NORESERVE;
      if (apart && mem_keep_apart(p, i))
        {
          /* Made at APART (free: task_apart_area), its first page
             written (by clock_gettime: an anon_vma of its own), moved
             into place, that page dropped again (mem_keep_apart). */
          OPEQ(l, SYS_mmap, (int64_t)apart, apart, m->end - m->start, prot, flags, (uint64_t)-1, 0);
          OP(l, SYS_clock_gettime, CLOCK_MONOTONIC, apart, 0, 0, 0, 0);
          OPEQ(l, SYS_mremap, (int64_t)m->start, apart, m->end - m->start, m->end - m->start,
               MREMAP_MAYMOVE | MREMAP_FIXED, m->start, 0);
          OP(l, SYS_madvise, m->start, PAGE, MADV_DONTNEED, 0, 0, 0);
          continue;
        }
      OPEQ(l, SYS_mmap, (int64_t)m->start, m->start, m->end - m->start, prot, flags,
           m->path ? (uint64_t)m->svc : (uint64_t)-1, m->path ? m->pgoff * PAGE : 0);
    }
  if (as_task)
    creds_euid_ops(p, l, false);
  cow_page_ops(p, l);
  for (size_t i = 0; i < p->nvmas; i++)
    {
      struct rvma *m = &p->vmas[i];
      /* A SysV attachment's protections, as shmat gave them. */
      int at_prot = (m->shmflg & SHM_RDONLY ? PROT_READ : PROT_READ | PROT_WRITE)
                    | (m->shmflg & SHM_EXEC ? PROT_EXEC : 0);
      if (strcmp(m->kind, "sysv") == 0 && m->prot != at_prot)
        OP(l, SYS_mprotect, m->start, m->end - m->start, m->prot, 0, 0, 0);
      if (m->shared || strcmp(m->kind, "vdso") == 0 || strncmp(m->kind, "vvar", 4) == 0
          || m->prot == (PROT_READ | PROT_WRITE) || (m->madv & VMF_NOACCOUNT))
        continue;
      OP(l, SYS_mprotect, m->start, m->end - m->start, m->prot, 0, 0, 0);
    }
  /* The advice smaps showed (vmflags.c), once the pages are in; the
     memory policy numa_maps showed (mempolicy.c). */
  for (size_t i = 0; i < p->nvmas; i++)
    {
      for (uint32_t bit = 1; bit <= VMF_ALL; bit <<= 1)
        if ((p->vmas[i].madv & bit) && vmflags_advice(bit))
          OP(l, SYS_madvise, p->vmas[i].start, p->vmas[i].end - p->vmas[i].start,
             vmflags_advice(bit), 0, 0, 0);
      if (p->vmas[i].mpol_mode)
        OP(l, SYS_mbind, p->vmas[i].start, p->vmas[i].end - p->vmas[i].start, p->vmas[i].mpol_mode,
           bld_alloc(b, sizeof *p->vmas[i].mpol_nodes, 8, p->vmas[i].mpol_nodes), MPOL_MAXNODE + 1,
           0);
    }
}

/* How many of P's mappings have a memory policy (their node masks go into
   the blob's data). */
static size_t
mpol_vmas(const struct rproc *p)
{
  size_t n = 0;
  for (size_t i = 0; i < p->nvmas; i++)
    n += p->vmas[i].mpol_mode != 0;
  return n;
}

/* 5. mm fields and the exe link (CAP_CHECKPOINT_RESTORE), 6. signal
   dispositions and timers. */
static void
mm_sig_ops(const struct rproc *p, struct oplist *l, struct bld *b)
{
  /* 5. mm fields and the exe link (CAP_CHECKPOINT_RESTORE). */
  {
    struct mm_map mm = p->mm;
    mm.auxv = bld_alloc(b, p->auxv_len, 8, p->auxv);
    mm.auxv_size = p->auxv_len;
    mm.exe_fd = p->exe_svc;
    OP(l, SYS_prctl, PR_SET_MM, PR_SET_MM_MAP, bld_alloc(b, sizeof mm, 8, &mm), sizeof mm, 0, 0);
  }
  /* 6. signal dispositions and timers. */
  for (int sg = 1; sg <= 64; sg++)
    {
      if (sg == SIGKILL || sg == SIGSTOP)
        continue;
      OP(l, SYS_rt_sigaction, sg, bld_alloc(b, sizeof p->sa[sg], 8, &p->sa[sg]), 0, 8, 0, 0);
    }
  for (int w = 0; w < 3; w++)
    if (p->itimer[w][2] || p->itimer[w][3])
      OP(l, SYS_setitimer, w, bld_alloc(b, sizeof p->itimer[w], 8, p->itimer[w]), 0, 0, 0, 0);
}

/* 7. the other threads, each finishing its own state (TOPS[t], t > 0);
   ARGS_ADDR is the blob's arguments. */
static void
thread_ops(struct rctx *c, struct rproc *p, uint64_t args_addr, struct oplist *l,
           struct oplist *tops, struct bld *b)
{
  /* AMX's permission before any thread takes its tiles back (thread_tail_ops). */
  long xops[8][3];
  size_t nx = prctl_ops_xcomp(&p->pr, xops);
  for (size_t i = 0; i < nx; i++)
    OP(l, xops[i][0], xops[i][1], xops[i][2], 0, 0, 0, 0);
  for (size_t t = 1; t < p->nth; t++)
    {
      struct rthread *th = &p->th[t];
      struct clone_args ca;
      uint64_t stack = bld_alloc(b, THREAD_STACK, 64, NULL);
      uint64_t tidp = bld_alloc(b, sizeof(pid_t), 8, &th->tid);
      memset(&ca, 0, sizeof ca);
      ca.flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM;
      ca.stack = stack;
      ca.stack_size = THREAD_STACK;
      if (c->use_nslp)
        {
          char num[24];
          int len = snprintf(num, sizeof num, "%d", th->tid - 1);
          struct flock lk = nslp_lock(F_WRLCK);
          OP(l, SYS_fcntl, c->nslp_fd, F_SETLKW, bld_alloc(b, sizeof lk, 8, &lk), 0, 0, 0);
          OPEQ(l, SYS_pwrite64, len, c->nslp_fd, bld_alloc(b, len + 1, 8, num), len, 0, 0, 0);
        }
      else
        {
          ca.set_tid = tidp;
          ca.set_tid_size = 1;
        }
      thread_tail_ops(c, p, th, &tops[t], b);
      OPEQ(l, BLOB_OP_CLONE_THREAD, th->tid, bld_alloc(b, sizeof ca, 8, &ca), sizeof ca,
           args_addr + sizeof(struct blob_args) + (t - 1) * sizeof(struct blob_ops), 0, 0, 0);
      if (c->use_nslp)
        {
          struct flock ul = nslp_lock(F_UNLCK);
          OP(l, SYS_fcntl, c->nslp_fd, F_SETLK, bld_alloc(b, sizeof ul, 8, &ul), 0, 0, 0);
        }
    }
}

/* 8. the main thread's own state, process-wide pending signals, limits,
   and the service descriptors gone. */
static void
main_tail_ops(struct rctx *c, int idx, struct rproc *p, struct oplist *l, struct bld *b)
{
  OP(l, SYS_prctl, PR_SET_PDEATHSIG, 0, 0, 0, 0, 0);
  for (size_t i = 0; i < p->nshared_pending; i++)
    {
      int32_t sig;
      memcpy(&sig, p->shared_pending[i], 4);
      OP(l, SYS_rt_sigqueueinfo, p->pid, sig, bld_alloc(b, 128, 8, p->shared_pending[i]), 0, 0, 0);
    }
  for (int r_ = 0; r_ < RLIM_NLIMITS; r_++)
    OP(l, SYS_prlimit64, 0, r_, bld_alloc(b, 16, 8, p->rl[r_]), 0, 0, 0);
  /* Memory locks within the task's own RLIMIT_MEMLOCK, now back. */
  for (size_t i = 0; i < p->nvmas; i++)
    if (p->vmas[i].madv & VMF_LOCKED)
      OP(l, SYS_mlock2, p->vmas[i].start, p->vmas[i].end - p->vmas[i].start,
         (p->vmas[i].madv & VMF_LOCKONFAULT) ? MLOCK_ONFAULT : 0, 0, 0, 0);
  if (p->mcl)
    OP(l, SYS_mlockall, p->mcl, 0, 0, 0, 0, 0);
  OP(l, SYS_close_range, c->svc_base, ~0U, 0, 0, 0, 0);
  /* Every thread exists (a timer may signal one of them), and every task
     of the tree (a pidfd names one). */
  timers_ops(p, l, b);
  pidfd_ops(c, p, l);
  process_attr_ops(p, l, b);
  {
    /* Test hook: the last process's restorer fails here, after every task
       exists, to prove that a late failure leaves nothing behind. */
    const char *fault = crest_test_knob("CREST_FAULT");
    if (fault && strcmp(fault, "restore-blob") == 0 && (size_t)idx == c->np - 1)
      OP(l, SYS_close, (uint64_t)-1, 0, 0, 0, 0, 0);
  }
  thread_tail_ops(c, p, &p->th[0], l, b);
}

/* Lay the operation lists out in the region at BASE (REGION here). */
static void
lay_out_ops(const struct rproc *p, uint8_t *region, uint64_t base, uint64_t args_addr,
            const struct oplist *main_ops, const struct oplist *tops, struct bld *b)
{
  struct blob_args a;
  memset(&a, 0, sizeof a);
  a.magic = BLOB_MAGIC;
  a.main.n = main_ops->n;
  a.main.ops = bld_alloc(b, main_ops->n * sizeof *main_ops->ops, 64, main_ops->ops);
  a.main.status = -1;
  memcpy(region + (args_addr - base), &a, sizeof a);
  for (size_t t = 1; t < p->nth; t++)
    {
      struct blob_ops h;
      h.n = tops[t].n;
      h.ops = bld_alloc(b, tops[t].n * sizeof *tops[t].ops, 64, tops[t].ops);
      h.status = -1;
      h.result = 0;
      memcpy(region + (args_addr - base) + sizeof a + (t - 1) * sizeof h, &h, sizeof h);
    }
}

/* Report ready, wait for the go, and jump to the blob at BASE. */

/* Wait for the tracer's word (go[idx]). A task's parent dying kills it
   (PR_SET_PDEATHSIG), and a report that finds the tracer gone fails; but a
   container's init has no parent to follow, and its report may have gone
   into the pipe just before its finishing helper died: it also watches the
   helper (a pidfd), so that it ends rather than waits for a word that will
   never come. */
static void
park(struct rctx *c, int idx)
{
  struct timespec tick = { 1, 0 };
  int hfd = -1;

  if (c->o->as_ns_init && idx == 0 && c->helper > 0)
    hfd = (int)syscall(SYS_pidfd_open, c->helper, 0);
  while (__atomic_load_n(&c->go[idx], __ATOMIC_ACQUIRE) == 0)
    {
      struct pollfd gone = { hfd, POLLIN, 0 };
      syscall(SYS_futex, &c->go[idx], FUTEX_WAIT, 0, hfd >= 0 ? &tick : NULL, NULL, 0);
      if (hfd >= 0 && __atomic_load_n(&c->go[idx], __ATOMIC_ACQUIRE) == 0 && poll(&gone, 1, 0) == 1)
        _exit(124); /* crest says the restorer exited */
    }
  if (hfd >= 0)
    close(hfd);
}

static void __attribute__((noreturn))
task_go(struct rctx *c, int idx, uint64_t base, uint64_t size, uint64_t args_addr, struct bld *b)
{
  const struct rproc *p = &c->p[idx];
  struct report r;
  uint64_t stack_lo = bld_alloc(b, MAIN_STACK, 64, NULL);

  /* glibc registered rseq for crest's thread area, which is about to
     vanish: unregister it first. */
  {
    uint64_t tp;
    extern const ptrdiff_t __rseq_offset __attribute__((weak));
    extern const unsigned int __rseq_size __attribute__((weak));
    if (&__rseq_size && __rseq_size && syscall(SYS_arch_prctl, ARCH_GET_FS, &tp) == 0)
      {
        if (syscall(334, tp + __rseq_offset, 32, 1 /* RSEQ_FLAG_UNREGISTER */, 0x53053053) < 0
            && syscall(334, tp + __rseq_offset, __rseq_size, 1, 0x53053053) < 0)
          task_fail(c, idx, "process %d: unregister crest's rseq area: %s", p->pid,
                    strerror(errno));
      }
  }
  memset(&r, 0, sizeof r);
  r.kind = 'R';
  r.idx = idx;
  r.pid = getpid();
  r.base = base;
  r.size = size;
  if (write(c->report[1], &r, sizeof r) != sizeof r)
    _exit(125);
  park(c, idx);
  if (__atomic_load_n(&c->go[idx], __ATOMIC_ACQUIRE) != 1)
    {
      if (c->o->as_ns_init && idx == 0)
        {
          /* The helper failed: its message is in the shared page. */
          /* Without a sync pipe (started by hand); else the helper has
             written it there. */
          if (c->o->done_fd <= 0)
            dprintf(2, "crest: %s\n", (char *)(c->go + c->np));
          __atomic_store_n(&c->go[idx], 3, __ATOMIC_RELEASE);
          syscall(SYS_futex, &c->go[idx], FUTEX_WAKE, 1, NULL, NULL, 0);
        }
      _exit(124);
    }
  task_jump(base + BLOB_OFF_ENTRY, stack_lo + MAIN_STACK - 64, args_addr);
}

/* Map the blob region of SIZE bytes in the lowest gap (map_in_gap). */
static uint8_t *
map_region(struct rctx *c, int idx, struct rproc *p, uint64_t size)
{
  uint64_t base;
  uint8_t *region = map_in_gap(p, 1, size, PROT_READ | PROT_WRITE | PROT_EXEC, 0, &base);
  if (!region && !base)
    task_fail(c, idx, "process %d: no room for the restorer (%" PRIu64 " bytes)", p->pid, size);
  if (!region)
    task_fail(c, idx, "process %d: map the restorer at %#" PRIx64 ": %s", p->pid, base,
              strerror(errno));
  return region;
}

/* The image readers' descriptors (one per file of the image and of each
   parent image): crest hashes through them, a task reads its files
   through service copies. The root drops them first thing, so that no
   other task inherits them (200 processes: 200 descriptors each task would
   copy at its fork and close again). */
static void
close_image_fds(struct rctx *c)
{
  for (int k = -1; k < c->nchain; k++)
    {
      struct img_reader *r = k < 0 ? c->img : c->chain[k];
      if (r)
        img_reader_close_fds(r);
    }
}

void __attribute__((noreturn)) task_main(struct rctx *c, int idx)
{
  struct rproc *p = &c->p[idx];
  struct special sp[8];
  size_t nsp;
  uint64_t size, base, args_addr, scratch;
  struct bld b;
  struct oplist main_ops = { 0 }, *tops;
  uint8_t *region;
  int force_fd = -1;

  if (!(c->o->as_ns_init && idx == 0))
    prctl(PR_SET_PDEATHSIG, SIGKILL);
  close(c->report[0]);
  if (idx == 0)
    close_image_fds(c);

  task_session(c, idx, p);

  if (p->zombie)
    zombie_exit(c, idx, p);

  cow_premap(c, idx);
  task_children(c, idx, p);

  /* After the children exist (each one drops its own), before setresuid
     could clear the capabilities the drops need. */
  restore_bounding(c, idx, p);
  /* The pages of a mapping never writable are written through the
     process's own memory file (fill_ops), opened while the process is
     still crest's (its owner then), above the service range: the blob
     closes it with the rest. */
  if (fill_needs_force(p))
    {
      int mem = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
      if (mem < 0 || (force_fd = fcntl(mem, F_DUPFD_CLOEXEC, c->svc_next)) < 0)
        task_fail(c, idx,
                  "process %d: open /proc/self/mem (to write the pages of a mapping that was "
                  "never writable): %s",
                  p->pid, strerror(errno));
      close(mem);
    }

  creds_restore(c, idx, p);
  task_attrs(c, idx, p);

  files_install(c, idx, p);
  {
    /* Test hook: the init fails once its own descriptors are in place
       (the restorer's sync pipe's number closed or taken by one). */
    const char *fault = crest_test_knob("CREST_FAULT");
    if (fault && strcmp(fault, "restore-init-fail") == 0 && idx == 0)
      task_fail(c, idx, "process %d: test hook: the init fails once its descriptors are in place",
                p->pid);
  }

  /* The blob region: code, arguments, operations, data, stacks. */
  if (!self_layout.valid)
    task_layout_prime();
  nsp = self_layout.nsp;
  memcpy(sp, self_layout.sp, sizeof sp);
  check_specials(c, idx, p, sp, nsp);
  size = ((crest_restorer_blob_size + PAGE - 1) & ~(PAGE - 1)) + PAGE /* args */
         + (16 + 3 * p->nvmas + 2 * p->nruns + 80 + p->nth * 90 + p->nshared_pending
            + cow_ops_bound(p) + timers_ops_bound(p) + p->nfds + p->nvmas + lazy_ops_bound(p))
               * sizeof(struct blob_op)
         + p->nvmas * 16 + 512 /* lazy.c */ + mpol_vmas(p) * (sizeof(cpu_set_t) + 8) + 65536
         + p->auxv_len + p->nth * (4096 + 128 * 64) + p->nshared_pending * 128 + p->ntimers * 128
         + (p->nth - 1) * THREAD_STACK + MAIN_STACK + c->o->seccomp_len + 64
         + (force_fd >= 0 ? BLOB_FORCE_BUF + PAGE : 0);
  for (size_t k = 0; k < nsp; k++)
    size += sp[k].end - sp[k].start;
  size = (size + PAGE - 1) & ~(PAGE - 1);
  region = map_region(c, idx, p, size);
  base = (uint64_t)region;
  memcpy(region, crest_restorer_blob, crest_restorer_blob_size);
  b.buf = region, b.base = base, b.cap = size, b.seccomp_fprog = 0;
  b.used = (crest_restorer_blob_size + PAGE - 1) & ~(PAGE - 1);
  args_addr
      = bld_alloc(&b, sizeof(struct blob_args) + (p->nth - 1) * sizeof(struct blob_ops), 64, NULL);
  scratch = 0;
  for (size_t k = 0; k < nsp; k++)
    scratch += sp[k].end - sp[k].start;
  scratch = bld_alloc(&b, scratch, PAGE, NULL);
  if (force_fd >= 0)
    fill_force_set(force_fd, bld_alloc(&b, BLOB_FORCE_BUF, PAGE, NULL));

  mem_ops(p, sp, nsp, base, size, scratch, task_apart_area(c, p), &main_ops, &b);
  lazy_task_ops(c, p, &main_ops, &b);
  mm_sig_ops(p, &main_ops, &b);
  tops = xzalloc(p->nth * sizeof *tops);
  thread_ops(c, p, args_addr, &main_ops, tops, &b);
  main_tail_ops(c, idx, p, &main_ops, &b);

  lay_out_ops(p, region, base, args_addr, &main_ops, tops, &b);
  /* The root directory last of everything opened by path (files, exe and
     mapped files are open in the service range, the cwd and /proc/self are
     done): the image's paths are all in the tree's root, and a chroot'd
     task's cwd may lie outside its root, as it did. Its children already
     exist (they chroot themselves if they were). Still with the restorer's
     capabilities; the blob lowers them to the task's own at its end. */
  if (p->root_dir && chroot(p->root_dir) < 0)
    task_fail(c, idx, "process %d: chroot %s: %s%s", p->pid, p->root_dir, strerror(errno),
              errno == EPERM ? " (it needs CAP_SYS_CHROOT)" : "");
  task_go(c, idx, base, size, args_addr, &b);
}

/* clone3 with CA, the child's PID in the restore's namespace PID (set_tid,
   or ns_last_pid where set_tid cannot be used): the child's PID in the
   parent, 0 in the child, as fork. */
static pid_t
clone_pid(struct rctx *c, pid_t pid, struct clone_args *ca)
{
  pid_t tid = pid, r;
  if (!c->use_nslp)
    {
      ca->set_tid = (uint64_t)&tid;
      ca->set_tid_size = 1;
      return (pid_t)syscall(SYS_clone3, ca, sizeof *ca);
    }
  /* Held from the write to the moment the child exists. A fork by anything
     outside the restore (or another writer of ns_last_pid) can still come
     in between: the child with the wrong PID exits before doing anything,
     and the write and fork are tried again while the PID is still free. */
  for (int attempt = 0; attempt < 8; attempt++)
    {
      char num[24];
      int len = snprintf(num, sizeof num, "%d", pid - 1), e;
      if (nslp_set(c, F_WRLCK) < 0)
        return -1;
      if (pwrite(c->nslp_fd, num, len, 0) != len)
        {
          e = errno;
          nslp_set(c, F_UNLCK);
          errno = e;
          return -1;
        }
      r = (pid_t)syscall(SYS_clone3, ca, sizeof *ca);
      if (r == 0)
        {
          if (getpid() != pid)
            _exit(0);
          return 0;
        }
      e = errno;
      nslp_set(c, F_UNLCK);
      if (r < 0)
        {
          errno = e;
          return -1;
        }
      if (r == pid)
        return r;
      while (waitpid(r, NULL, 0) < 0 && errno == EINTR)
        ;
      if (kill(pid, 0) == 0 || errno != ESRCH)
        break; /* taken meanwhile */
    }
  errno = EEXIST;
  return -1;
}

pid_t
create_task(struct rctx *c, int idx)
{
  struct rproc *p = &c->p[idx];
  struct clone_args ca;
  pid_t r;

  memset(&ca, 0, sizeof ca);
  ca.exit_signal = (uint64_t)p->exit_sig;
  /* restore --lazy-pages --detach: the root is the caller's child, as with
     an eager restore -d, not the child's that fills its pages (lazy.c). */
  if (idx == 0 && lazy_is_child())
    ca.flags |= CLONE_PARENT, ca.exit_signal = 0; /* the caller's own is used */
  r = clone_pid(c, p->pid, &ca);
  if (r == 0)
    task_main(c, idx);
  return r;
}

int
run_as_pid(struct rctx *c, pid_t pid, int (*fn)(const void *), const void *arg)
{
  struct clone_args ca;
  pid_t r;
  int st;
  memset(&ca, 0, sizeof ca);
  ca.flags = CLONE_FILES;
  ca.exit_signal = SIGCHLD;
  r = clone_pid(c, pid, &ca);
  if (r == 0)
    _exit(fn(arg));
  if (r < 0)
    return -1;
  while (waitpid(r, &st, 0) < 0)
    if (errno != EINTR)
      return -1;
  if (!WIFEXITED(st) || WEXITSTATUS(st))
    {
      errno = WIFEXITED(st) ? WEXITSTATUS(st) : EPROTO;
      return -1;
    }
  return 0;
}
