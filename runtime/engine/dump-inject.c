/* crest: the dump's injected calls. What only a task can answer (signal
 * dispositions, itimers, POSIX timers, mlockall, brk, securebits, prctl
 * state, TID addresses, alternate stacks, its view of its children's
 * stops, its shared memory pages, its IPC namespace's objects) is asked of
 * it through system calls injected at a syscall instruction of its vDSO,
 * with a scratch area for their answers. */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include "engine.h"
#include "engine-int.h"
#include "log.h"
#include "shmem.h"
#include "util.h"

#include "dump-int.h"

const char *const crest_dump_injected[] = { "mmap",
                                            "munmap",
                                            "mincore",
                                            "prctl",
                                            "arch_prctl",
                                            "membarrier",
                                            "sigaltstack",
                                            "rt_sigaction",
                                            "getitimer",
                                            "brk",
                                            "uname",
                                            "waitid",
                                            "semctl",
                                            "msgctl",
                                            "shmctl",
                                            "msgrcv",
                                            "shmat",
                                            "shmdt",
                                            "timer_gettime",
                                            "timer_getoverrun",
                                            "restart_syscall",
                                            "rt_sigreturn",
                                            NULL };

/* shmem.c's probe runs its syscalls through this, without single-step as
   every injected call of the dump. */
struct inj_ctx
{
  pid_t tid;
  const struct user_regs_struct *regs;
  uint64_t mask;
  uint64_t gadget;
};

static int
inject_cb(void *ctx, long nr, const long a[6], long *ret, crest_error_t *err)
{
  const struct inj_ctx *ic = ctx;
  return pt_inject_nostep(ic->tid, ic->regs, ic->mask, ic->gadget, nr, a, ret, err);
}

#define SCRATCH_LEN (2 * PAGE)

/* Where the injected calls write their answers (SCRATCH_LEN bytes). When
   the main thread's stack pointer is in the process's [stack] mapping, the
   area is taken from that stack, pages below the stack pointer and its red
   zone: memory that exists already and that the ABI leaves dead (every
   signal delivered there overwrites it). Its bytes are saved here and
   written back; if crest dies meanwhile, what is left is dead bytes below
   a stack pointer, and no mapping. Otherwise (a main thread on an
   alternate or a user-made stack) a private mapping is made and removed
   again by injected calls, before the memory layout is read. */
struct scratch
{
  uint64_t addr;
  bool mapped;
  uint8_t *saved;
};

static int
scratch_get(struct dproc *p, const struct vma *vv, size_t nv, int pops, struct scratch *s,
            crest_error_t *err)
{
  struct dthread *m = &p->th[0];
  uint64_t sp = m->regs.rsp, gap = home_room(m, pops);
  long a[6] = { 0, SCRATCH_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0 };
  long ret;

  memset(s, 0, sizeof *s);
  for (size_t i = 0; i < nv; i++)
    if (strcmp(vv[i].kind, "stack") == 0 && sp > vv[i].start && sp <= vv[i].end)
      {
        /* Below the main thread's way home (inject-home.c), which a
           signal frame's extended state can make 12 KiB long (AMX). */
        uint64_t at
            = (sp - (gap > 128 + 2 * PAGE ? gap : 128 + 2 * PAGE) - SCRATCH_LEN) & ~(PAGE - 1);
        if (at < vv[i].start + PAGE || at > sp)
          break;
        s->saved = xmalloc(SCRATCH_LEN);
        if (vm_read(p->pid, at, s->saved, SCRATCH_LEN, err) < 0)
          {
            free(s->saved);
            s->saved = NULL;
            return -1;
          }
        s->addr = at;
        return 0;
      }
  if (pt_inject_nostep(m->tid, &m->regs, m->sigmask, p->gadget, SYS_mmap, a, &ret, err) < 0)
    return -1;
  if (ret < 0 && ret > -4096)
    return crest_error_sys(err, -ret, "task %d: injected mmap", p->pid);
  s->addr = ret;
  s->mapped = true;
  return 0;
}

/* Give the scratch area back; on a failure ERR keeps the first reason. */
static int
scratch_put(struct dproc *p, struct scratch *s, crest_error_t *err)
{
  struct dthread *m = &p->th[0];
  crest_error_t e2 = NULL;
  long a[6] = { (long)s->addr, SCRATCH_LEN }, ret = 0;
  int rc = 0;

  if (s->saved)
    {
      struct iovec l = { s->saved, SCRATCH_LEN }, r = { (void *)s->addr, SCRATCH_LEN };
      if (process_vm_writev(p->pid, &l, 1, &r, 1, 0) != (ssize_t)SCRATCH_LEN)
        rc = crest_error_errno(&e2, "task %d: write back its stack at %#" PRIx64, p->pid, s->addr);
      free(s->saved);
      s->saved = NULL;
    }
  else if (s->mapped)
    {
      if (pt_inject_nostep(m->tid, &m->regs, m->sigmask, p->gadget, SYS_munmap, a, &ret, &e2) < 0)
        rc = -1;
      else if (ret != 0)
        rc = crest_error_make(&e2, -ret, "task %d: injected munmap", p->pid);
      s->mapped = false;
    }
  if (rc < 0 && !*err)
    *err = e2, e2 = NULL;
  crest_error_release(&e2);
  return rc;
}

/* Before the injected calls touch anything: which of the pages below each
   thread's stack pointer (the scratch area and the way home lie within
   FRESH_PAGES of it) are neither present nor swapped (struct dthread:
   fresh_mask). Without pagemap, none: they are then saved as any page. */
#define FRESH_PAGES 16
static void
mark_fresh(struct dproc *p)
{
  cleanup_free char *path = xasprintf("/proc/%d/pagemap", p->pid);
  cleanup_close int pm = open(path, O_RDONLY | O_CLOEXEC);
  for (size_t t = 0; t < p->nth; t++)
    {
      struct dthread *th = &p->th[t];
      uint64_t ent[FRESH_PAGES], top = th->regs.rsp & ~(PAGE - 1);
      th->fresh_lo = th->fresh_mask = 0;
      if (pm < 0 || top < (FRESH_PAGES - 1) * PAGE)
        continue;
      th->fresh_lo = top - (FRESH_PAGES - 1) * PAGE;
      if (pread(pm, ent, sizeof ent, (off_t)(th->fresh_lo / PAGE * 8)) != (ssize_t)sizeof ent)
        {
          th->fresh_lo = 0;
          continue;
        }
      for (int k = 0; k < FRESH_PAGES; k++)
        if (!(ent[k] >> 62 & 3))
          th->fresh_mask |= 1ULL << k;
    }
}

/* P's gadget: a syscall instruction of its vDSO with a way home after it
   (inject-home.c: *POPS pops before its ret), or else any (*POPS -1). */
static int
vdso_gadget(struct dproc *p, const struct vma *vv, size_t nv, int *pops, crest_error_t *err)
{
  bool vdso = false;
  for (size_t i = 0; i < nv; i++)
    vdso |= strcmp(vv[i].kind, "vdso") == 0;
  if (!vdso)
    return crest_error_make(err, ENOTSUP,
                            "task %d: no vDSO mapping (unmapped, as under valgrind), whose "
                            "system call instruction crest's injected calls go through: "
                            "cannot checkpoint it",
                            p->pid);
  if (home_vdso_gadget(p->pid, vv, nv, &p->gadget, pops, err) < 0)
    return -1;
  if (!p->gadget)
    return crest_error_make(err, ENOTSUP, "task %d: no syscall instruction in the vDSO", p->pid);
  return 0;
}

/* mlockall(MCL_FUTURE) leaves no trace /proc shows but in the mappings made
   after it: with memory locked (status VmLck), one page is mapped by the
   task itself and its VmFlags read, then unmapped. */
static int
mlockall_probe(struct dproc *p, int (*inject)(void *, long, const long[6], long *, crest_error_t *),
               struct dthread *m, crest_error_t *err)
{
  cleanup_free char *status = NULL;
  cleanup_free struct vmflags_ent *vf = NULL;
  struct inj_ctx ic = { m->tid, &m->regs, m->sigmask, p->gadget };
  long a[6] = { 0, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0 }, addr, ret;
  size_t nvf = 0;
  const char *lck;
  int rc;

  p->mcl = 0;
  if (read_proc(p->pid, "status", &status, err) < 0)
    return -1;
  lck = status_field(status, "VmLck");
  if (!lck || strtoul(lck, NULL, 10) == 0)
    return 0;
  if (inject(&ic, SYS_mmap, a, &addr, err) < 0)
    return -1;
  if (addr < 0 && addr > -4096)
    return crest_error_sys(err, (int)-addr, "task %d: map a page to probe mlockall", p->pid);
  rc = vmflags_load(p->pid, &vf, &nvf, err);
  if (rc == 0 && vmflags_at_has(vf, nvf, (uint64_t)addr, "lo"))
    p->mcl = MCL_FUTURE | (vmflags_at_has(vf, nvf, (uint64_t)addr, "lf") ? MCL_ONFAULT : 0);
  /* A kernel that names no "lf" (6.1 shows two question marks) cannot say
     whether MCL_ONFAULT is in force. */
  if (rc == 0 && p->mcl && vmflags_at_has(vf, nvf, (uint64_t)addr, "??"))
    rc = crest_error_make(
        err, ENOTSUP,
        "task %d: mlockall(MCL_FUTURE) with a flag this kernel's smaps does not "
        "name (\"?\?\": MCL_ONFAULT), which crest cannot restore: cannot checkpoint it",
        p->pid);
  a[0] = addr, a[1] = PAGE;
  if (inject(&ic, SYS_munmap, a, &ret, err) < 0)
    return -1;
  if (ret != 0)
    return crest_error_sys(err, (int)-ret, "task %d: unmap the mlockall probe", p->pid);
  return rc;
}

/* POSIX timers (answers in SCRATCH) and mlockall's flags, asked of the
   task through its main thread M. */
static int
timers_locks(struct dproc *p, struct dthread *m, uint64_t scratch, crest_error_t *err)
{
  struct inj_ctx ic = { m->tid, &m->regs, m->sigmask, p->gadget };
  if (timers_query(p, inject_cb, &ic, scratch, err) < 0)
    return -1;
  return mlockall_probe(p, inject_cb, m, err);
}

/* Do PID's files in /proc belong to crest's user? */
static bool
proc_is_ours(pid_t pid)
{
  char path[32];
  struct stat st;
  snprintf(path, sizeof path, "/proc/%d", pid);
  return stat(path, &st) == 0 && st.st_uid == geteuid();
}

/* The dumpable flag a task had (inject_state lowered it), before it is let
   go. No way home here: a crest killed in this one call leaves the task
   not dumpable, nothing else (docs/engine.md). */
void
raise_dumpable(struct dproc *p)
{
  long a[6] = { PR_SET_DUMPABLE, 1, 0, 0, 0, 0 }, ret;
  crest_error_t e2 = NULL;
  if (!p->dumpable_lowered)
    return;
  if (pt_inject_nostep(p->th[0].tid, &p->th[0].regs, p->th[0].sigmask, p->gadget, SYS_prctl, a,
                       &ret, &e2)
          < 0
      || ret != 0)
    {
      cleanup_free char *why = e2 ? crest_error_text(e2) : NULL;
      crest_warn("task %d: could not make it dumpable again: %s", p->pid,
                 why ? why : strerror((int)-ret));
    }
  crest_error_release(&e2);
  p->dumpable_lowered = false;
}

/* A dumpable task's /proc files (fd, mem, pagemap...) belong to its
   effective UID, here one of the container's subordinate IDs, mode 0500 or
   0600: closed to crest, which holds no capability in the initial user
   namespace. Not dumpable, they are the root's of the user namespace its
   memory was made in, the container's: crest's. Its record keeps 1, and
   the task is made dumpable again before it is let go (raise_dumpable). */
static int
lower_dumpable(struct dproc *p, crest_error_t *err)
{
  long a[6] = { PR_SET_DUMPABLE, 0, 0, 0, 0, 0 }, ret;
  if (p->pr.dumpable != 1 || proc_is_ours(p->pid))
    return 0;
  if (pt_inject_nostep(p->th[0].tid, &p->th[0].regs, p->th[0].sigmask, p->gadget, SYS_prctl, a,
                       &ret, err)
      < 0)
    return -1;
  if (ret != 0)
    return crest_error_sys(err, (int)-ret, "task %d: injected PR_SET_DUMPABLE", p->pid);
  p->dumpable_lowered = true;
  crest_debug("checkpoint: task %d: not dumpable while it is checkpointed", p->pid);
  return 0;
}

/* Syscalls only the task can answer, injected at a syscall instruction of
   its vDSO, with a scratch area for their answers (scratch_get). */
/* Each thread's way home (inject-home.c) into HM, below SCRATCH; with one,
   its calls are chained from here on (pt_chain_begin). */
static int
ways_home(struct dproc *p, const struct vma *vv, size_t nv, int pops, uint64_t scratch,
          struct home *hm, crest_error_t *err)
{
  uint64_t sigret = pops < 0 ? 0 : home_find_sigreturn(p->pid, vv, nv);
  for (size_t t = 0; t < p->nth; t++)
    if (home_build(p->pid, &p->th[t], vv, nv, pops, sigret, scratch, SCRATCH_LEN, &hm[t], err) < 0)
      return -1;
  crest_debug("checkpoint: task %d: injected calls %s (gadget %#" PRIx64 " with %d pops, "
              "rt_sigreturn at %#" PRIx64 ")",
              p->pid, hm[0].sp ? "have a way home" : "have no way home", p->gadget, pops, sigret);
  for (size_t t = 0; t < p->nth; t++)
    pt_chain_begin(p->th[t].tid);
  return 0;
}

/* A process's injected calls, from inject_open to inject_close: its
   mappings as they were, the scratch area, every thread's way home. */
struct inj_sess
{
  struct vma *vv;
  size_t nv;
  struct scratch sc;
  struct home *hm; /* a way home a thread, once they are being built */
};

int
inject_open(struct dctx *c, struct dproc *p, crest_error_t *err)
{
  struct inj_sess *s = xzalloc(sizeof *s);
  int pops = -1;

  (void)c;
  p->inj = s;
  if (parse_maps(p->pid, &s->vv, &s->nv, err) < 0 || vdso_gadget(p, s->vv, s->nv, &pops, err) < 0)
    return -1;
  /* Each injected call blocks every signal while it runs and puts the
     thread's own mask back (pt_inject_nostep): a signal arriving meanwhile
     stays pending, and goes into the image with the others. */
  for (size_t t = 0; t < p->nth; t++)
    if (pt_get_sigmask(p->th[t].tid, &p->th[t].sigmask, err) < 0)
      return -1;
  pt_drop_stop_signals(p->stop_sig != 0);
  mark_fresh(p);
  if (scratch_get(p, s->vv, s->nv, pops, &s->sc, err) < 0)
    return -1;
  s->hm = xzalloc(p->nth * sizeof *s->hm);
  return ways_home(p, s->vv, s->nv, pops, s->sc.addr, s->hm, err);
}

int
inject_close(struct dproc *p, crest_error_t *err)
{
  struct inj_sess *s = p->inj;
  int rc = 0;

  if (!s)
    return 0;
  pt_drop_stop_signals(p->stop_sig != 0);
  if (scratch_put(p, &s->sc, err) < 0)
    rc = -1;
  for (size_t t = 0; s->hm && t < p->nth; t++)
    if (pt_chain_end(p->th[t].tid, &p->th[t].regs, p->th[t].sigmask, err) < 0)
      rc = -1;
  for (size_t t = 0; s->hm && t < p->nth; t++)
    if (home_put(p->pid, p->th[t].tid, &s->hm[t], err) < 0)
      rc = -1;
  for (size_t i = 0; i < s->nv; i++)
    free(s->vv[i].path);
  free(s->vv);
  free(s->hm);
  free(s);
  p->inj = NULL;
  pt_drop_stop_signals(false);
  return rc;
}

#define INJ(th_, nr_, ...)                                                                         \
  do                                                                                               \
    {                                                                                              \
      long aa[6] = { __VA_ARGS__ };                                                                \
      if (pt_inject_nostep((th_)->tid, &(th_)->regs, (th_)->sigmask, p->gadget, (nr_), aa, &ret,   \
                           err)                                                                    \
          < 0)                                                                                     \
        return -1;                                                                                 \
      if (ret < 0 && ret > -4096)                                                                  \
        return crest_error_sys(err, -ret, "task %d: injected syscall %d", (th_)->tid, (int)(nr_)); \
    }                                                                                              \
  while (0)

/* The threads' own state: their prctl attributes, TID addresses,
   alternate stacks and keyrings. */
static int
inject_threads(struct dctx *c, struct dproc *p, uint64_t scratch, crest_error_t *err)
{
  long ret;
  for (size_t t = 0; t < p->nth; t++)
    {
      struct dthread *th = &p->th[t];
      uint64_t v[3];
      /* The root's parent is outside the tree, except for a container's
         init, whose parent is the runtime's, as the restored one's is. */
      if (prctl_dump_thread(p->pid, th->tid, &th->regs, th->sigmask, p->gadget,
                            scratch + 4096 + 1024, p == &c->p[0] && !c->o->root_is_ns_init, &th->pr,
                            err)
          < 0)
        return -1;
      INJ(th, SYS_prctl, 40 /* PR_GET_TID_ADDRESS */, scratch + 4096 + 128);
      INJ(th, SYS_sigaltstack, 0, scratch + 4096 + 256);
      if (vm_read(p->pid, scratch + 4096 + 128, &th->clear_tid, 8, err) < 0
          || vm_read(p->pid, scratch + 4096 + 256, v, 24, err) < 0)
        return -1;
      th->alt_sp = v[0], th->alt_flags = (int32_t)v[1], th->alt_size = v[2];
      struct inj_ctx ic = { th->tid, &th->regs, th->sigmask, p->gadget };
      if (keys_dump_thread(c, p, t, inject_cb, &ic, scratch + 4096 + 3072, err) < 0
          || mpol_dump_thread(p, th, inject_cb, &ic, scratch + 4096 + 2560, err) < 0)
        return -1;
    }
  return 0;
}

/* A local descriptor table (modify_ldt(2): Wine's, DOSEMU's segments):
   nothing in /proc shows it. Its reading (8 bytes to SCRATCH) returns 0
   when the process has none (ENOSYS where the kernel has no LDT support);
   it is not restored: refused. */
static int
ldt_check(struct dproc *p, uint64_t scratch, crest_error_t *err)
{
  struct dthread *m = &p->th[0];
  const long a[6] = { 0 /* read */, (long)scratch, 8, 0, 0, 0 };
  long ret;
  if (pt_inject_nostep(m->tid, &m->regs, m->sigmask, p->gadget, SYS_modify_ldt, a, &ret, err) < 0)
    return -1;
  if (ret > 0)
    return crest_error_make(err, ENOTSUP,
                            "task %d: a local descriptor table (modify_ldt), which crest does not "
                            "restore",
                            p->pid);
  return 0;
}

int
inject_own(struct dctx *c, struct dproc *p, crest_error_t *err)
{
  struct dthread *m = &p->th[0];
  long ret, scratch = (long)p->inj->sc.addr;

  for (int s = 1; s <= 64; s++)
    {
      if (s == SIGKILL || s == SIGSTOP)
        continue;
      INJ(m, SYS_rt_sigaction, s, 0, scratch + s * 32, 8);
    }
  if (vm_read(p->pid, scratch, p->sa, sizeof p->sa, err) < 0 || dump_fault("inject", err) < 0)
    return -1;
  for (int w = 0; w < 3; w++)
    INJ(m, SYS_getitimer, w, scratch + 4096 + w * 32);
  if (vm_read(p->pid, scratch + 4096, p->itimer, sizeof p->itimer, err) < 0)
    return -1;
  /* A periodic ITIMER_REAL that fired while its SIGALRM is still pending
     (blocked, or the task held here) shows no time left: the kernel re-arms
     it only when the signal is taken off the queue. It is recorded as due
     in one interval, which is what it will be once the signal is taken. */
  for (int w = 0; w < 3; w++)
    if (!p->itimer[w][2] && !p->itimer[w][3] && (p->itimer[w][0] || p->itimer[w][1]))
      p->itimer[w][2] = p->itimer[w][0], p->itimer[w][3] = p->itimer[w][1];
  if (timers_locks(p, m, scratch + 4096, err) < 0)
    return -1;
  INJ(m, SYS_brk, 0);
  p->brk = ret;
  {
    struct inj_ctx ic = { m->tid, &m->regs, m->sigmask, p->gadget };
    if (mpol_dump_vmas(p, inject_cb, &ic, scratch + 4096 + 2560, err) < 0)
      return -1;
  }
  /* A container's host and domain names, which its tasks may have set
     (sethostname with CAP_SYS_ADMIN in its user namespace): a restore has
     crun make the container with these (uts.json). */
  if (c->o->root_is_ns_init && p == &c->p[0])
    {
      char u[6][65];
      INJ(m, SYS_uname, (long)(scratch + 4096 + 2048));
      if (vm_read(p->pid, scratch + 4096 + 2048, u, sizeof u, err) < 0)
        return -1;
      memcpy(c->uts[0], u[1], 65), memcpy(c->uts[1], u[5], 65);
      c->uts[0][64] = c->uts[1][64] = 0;
      c->has_uts = true;
    }
  INJ(m, SYS_prctl, PR_GET_SECUREBITS);
  p->securebits = ret;
  if (!c->o->no_modify_ldt && ldt_check(p, scratch + 4096 + 768, err) < 0)
    return -1;
  if (prctl_dump_process(m->tid, &m->regs, m->sigmask, p->gadget, scratch + 4096 + 1024, &p->pr,
                         err)
          < 0
      || lower_dumpable(p, err) < 0 || inject_threads(c, p, scratch, err) < 0)
    return -1;
  /* A child of this process in a group stop: has this process collected
     that stop with waitpid(WUNTRACED) already, or is it still to be
     reported? Asked with WNOWAIT, which leaves it as it is. */
  for (size_t k = 1; k < c->np; k++)
    {
      struct dproc *ch = &c->p[k];
      int32_t si[8];
      if (ch->zombie || !ch->stop_sig || ch->ppid != p->pid)
        continue;
      INJ(m, SYS_waitid, P_PID, ch->ipid, scratch + 4096 + 512, WSTOPPED | WNOHANG | WNOWAIT, 0);
      if (vm_read(p->pid, scratch + 4096 + 512, si, sizeof si, err) < 0)
        return -1;
      ch->stop_reported = si[4] == 0; /* si_pid: 0 when there was nothing to report */
      crest_debug("checkpoint: task %d stopped by signal %d, its stop %s by its parent %d", ch->pid,
                  ch->stop_sig, ch->stop_reported ? "already collected" : "not yet collected",
                  p->pid);
    }
  /* A zombie child whose exit status /proc hides (zombie_process): what
     this process's wait() would get, asked with WNOWAIT. siginfo: si_code
     at 8, si_pid at 16, si_status at 24. */
  for (size_t k = 1; k < c->np; k++)
    {
      struct dproc *ch = &c->p[k];
      int32_t si[8];
      if (!ch->zombie || !ch->status_hidden || ch->ppid != p->pid)
        continue;
      memset(si, 0, sizeof si);
      INJ(m, SYS_waitid, P_PID, ch->ipid, scratch + 4096 + 512, WEXITED | WNOHANG | WNOWAIT, 0);
      if (vm_read(p->pid, scratch + 4096 + 512, si, sizeof si, err) < 0)
        return -1;
      if (si[4] != ch->ipid || si[2] < CLD_EXITED || si[2] > CLD_DUMPED)
        continue; /* not shown: dump_zombie refuses it */
      ch->exit_status = si[2] == CLD_EXITED   ? (si[6] & 0xff) << 8
                        : si[2] == CLD_KILLED ? si[6] & 0x7f
                                              : (si[6] & 0x7f) | 0x80;
      ch->status_hidden = false;
      crest_debug("checkpoint: zombie %d's exit status %#x, from its parent %d", ch->pid,
                  ch->exit_status, p->pid);
    }
  return 0;
}
#undef INJ

int
inject_shared(struct dctx *c, struct dproc *p, crest_error_t *err)
{
  struct dthread *m = &p->th[0];
  uint64_t scratch = p->inj->sc.addr;
  /* Which pages of its shared memory objects are in memory (shmem.c);
     the first scratch page is free again. */
  struct inj_ctx ic = { m->tid, &m->regs, m->sigmask, p->gadget };
  pt_drop_stop_signals(p->stop_sig != 0);
  if (shm_probe(&c->shm, p->pid, p->inj->vv, p->inj->nv, inject_cb, &ic, scratch, PAGE, err) < 0)
    return -1;
  /* The objects of the tree's own IPC namespace, counted by its root. */
  if (p == &c->p[0] && ipc_check_ns(c, p, inject_cb, &ic, scratch, SCRATCH_LEN, err) < 0)
    return -1;
  /* Segments of a container user the root may not read: by this task? */
  if (p != &c->p[0] && ipc_pending(c, p, inject_cb, &ic, scratch, SCRATCH_LEN, err) < 0)
    return -1;
  return 0;
}

int
inject_state(struct dctx *c, struct dproc *p, crest_error_t *err)
{
  int rc = inject_open(c, p, err);
  if (rc == 0)
    rc = inject_own(c, p, err);
  if (rc == 0)
    rc = inject_shared(c, p, err);
  if (inject_close(p, err) < 0)
    rc = -1;
  return rc;
}
