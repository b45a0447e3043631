/* crest: the restore finishes its tree. Once every thread is parked, the
 * blobs' verdicts are read, the terminal's foreground group and the owners
 * of signal-driven I/O set, each parent's view of its children's stops put
 * back, every thread's registers, FPU state and mask set, the blob
 * unmapped, a stopped process stopped again, and the tree let go. */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include "engine.h"
#include "engine-int.h"
#include "image.h"
#include "log.h"
#include "util.h"
#include "blob/blob-abi.h"

#include "dump-int.h"
#include "restore-int.h"

static const char *
op_name(long nr)
{
  switch (nr)
    {
    case SYS_mmap:
      return "mmap";
    case SYS_munmap:
      return "munmap";
    case SYS_mremap:
      return "mremap (vDSO)";
    case SYS_mprotect:
      return "mprotect";
    case BLOB_OP_PREAD_FULL:
      return "read pages";
    case BLOB_OP_FORCE_FILL:
      return "write pages through /proc/self/mem";
    case BLOB_OP_CLONE_THREAD:
      return "clone3 (thread)";
    case BLOB_OP_UFFD:
      return "userfaultfd (--lazy-pages)";
    case SYS_prctl:
      return "prctl";
    case SYS_rt_sigaction:
      return "rt_sigaction";
    case SYS_capset:
      return "capset";
    case SYS_sched_setattr:
      return "sched_setattr";
    case SYS_prlimit64:
      return "prlimit";
    case SYS_sched_setaffinity:
      return "sched_setaffinity (its CPU affinity)";
    case SYS_ioprio_set:
      return "ioprio_set (its I/O priority)";
    case SYS_arch_prctl:
      return "arch_prctl";
    case SYS_set_mempolicy:
      return "set_mempolicy (its NUMA memory policy)";
    case SYS_mbind:
      return "mbind (a mapping's NUMA memory policy)";
    case SYS_sigaltstack:
      return "sigaltstack";
    case 334:
      return "rseq";
    case SYS_seccomp:
      return "seccomp (the container's profile)";
    default:
      return "syscall";
    }
}

/* Read N bytes at ADDR of the stopped tracee TID. Once the blob has given
   a task other IDs than crest's, process_vm_readv needs CAP_SYS_PTRACE
   over it, which a container's restorer lacks; ptrace's own requests
   serve its tracer whatever the IDs. */
static ssize_t
tracee_read(pid_t tid, void *buf, size_t n, uint64_t addr)
{
  struct iovec l = { buf, n }, r = { (void *)addr, n };
  ssize_t got = process_vm_readv(tid, &l, 1, &r, 1, 0);
  if (got >= 0 || errno != EPERM)
    return got;
  for (size_t off = 0; off < n; off += sizeof(long))
    {
      long w;
      size_t k = n - off < sizeof w ? n - off : sizeof w;
      errno = 0;
      w = ptrace(PTRACE_PEEKDATA, tid, (void *)(addr + off), NULL);
      if (errno)
        return -1;
      memcpy((uint8_t *)buf + off, &w, k);
    }
  return (ssize_t)n;
}

static int
check_blob_status(struct rctx *c, struct rproc *p, crest_error_t *err)
{
  uint64_t args = p->base + ((crest_restorer_blob_size + PAGE - 1) & ~(PAGE - 1));
  size_t n = sizeof(struct blob_args) + (p->nth - 1) * sizeof(struct blob_ops);
  cleanup_free uint8_t *buf = xmalloc(n);
  if (tracee_read(p->pid, buf, n, args) != (ssize_t)n)
    return crest_error_errno(err, "restore: process %d: read the restorer's status", p->pid);
  for (size_t t = 0; t < p->nth; t++)
    {
      struct blob_ops *o = t == 0 ? &((struct blob_args *)buf)->main
                                  : (struct blob_ops *)(buf + sizeof(struct blob_args)) + (t - 1);
      if (o->status != 0)
        {
          struct blob_op bop;
          uint64_t at = o->ops + (o->status > 0 ? o->status - 1 : 0) * sizeof bop;
          if (o->status < 0 || tracee_read(p->pid, &bop, sizeof bop, at) != sizeof bop)
            return crest_error_make(err, EIO, "restore: thread %d: the restorer did not finish",
                                    p->th[t].tid);
          /* A POSIX lock taken again (restore-task.c): another process
             took the range meanwhile. */
          if (bop.nr == SYS_fcntl && bop.a[1] == F_SETLK && (long)bop.a[0] != c->nslp_fd)
            return crest_error_make(
                err, 0,
                "restore: process %d: take its POSIX lock on descriptor %lld "
                "again: %s (another process holds the range now)",
                p->pid, (long long)bop.a[0],
                strerror(o->result < 0 && o->result > -4096 ? (int)-o->result : EIO));
          return crest_error_make(
              err, o->result < 0 && o->result > -4096 ? (int)-o->result : 0,
              "restore: thread %d: restorer step %lld (%s %#llx) failed with %lld", p->th[t].tid,
              (long long)o->status, op_name(bop.nr), (unsigned long long)bop.a[0],
              (long long)o->result);
        }
    }
  (void)c;
  return 0;
}

/* The blob unmapped by P's main thread itself, from the blob's syscall
   instruction, stopped at the syscall's exit, before it would return into
   the vanished blob: in three steps, so that a tree's processes can make
   their calls at once (finish_tree). Started: dumpable set last (not
   dumpable: once crest has read all it reads; dumpable: after the blob
   changed its IDs, which cleared it), the call's registers, resumed to
   the syscall's entry. */
static int
unmap_start(struct rproc *p, crest_error_t *err)
{
  struct rthread *th = &p->th[0];
  struct user_regs_struct u = th->regs;
  pt_normalize_restart(&u);
  if (p->pr.dumpable == 0 || creds_change(p))
    {
      long a[6] = { PR_SET_DUMPABLE, p->pr.dumpable, 0, 0, 0, 0 }, ret;
      if (pt_inject(th->tid, &u, p->base + BLOB_OFF_SYSCALL, SYS_prctl, a, &ret, err) < 0)
        return -1;
      if (ret != 0)
        return crest_error_sys(err, (int)-ret, "restore: task %d: PR_SET_DUMPABLE", th->tid);
    }
  u.rip = p->base + BLOB_OFF_SYSCALL;
  u.rax = SYS_munmap;
  u.orig_rax = (unsigned long)-1;
  u.rdi = p->base;
  u.rsi = p->size;
  if (pt_setregs(th->tid, &u, err) < 0)
    return -1;
  if (ptrace(PTRACE_SYSCALL, th->tid, 0, 0) < 0)
    return crest_error_errno(err, "restore: task %d: ptrace syscall", th->tid);
  return 0;
}

/* Wait for the main thread's syscall stop (entry, or EXIT); at the entry,
   resume it to the exit; at the exit, the call's result. */
static int
unmap_stop(struct rproc *p, bool exit, crest_error_t *err)
{
  pid_t tid = p->th[0].tid;
  struct user_regs_struct u;
  int st;
  if (pt_wait_stop(tid, &st, err) < 0)
    return -1;
  if (!WIFSTOPPED(st) || WSTOPSIG(st) != (SIGTRAP | 0x80))
    return crest_error_make(
        err, EPROTO, "restore: task %d: unexpected stop %#x unmapping the restorer", tid, st);
  if (!exit)
    {
      if (ptrace(PTRACE_SYSCALL, tid, 0, 0) < 0)
        return crest_error_errno(err, "restore: task %d: ptrace syscall", tid);
      return 0;
    }
  if (pt_getregs(tid, &u, err) < 0)
    return -1;
  if (u.rax != 0)
    return crest_error_sys(err, (int)-u.rax, "restore: task %d: unmap the restorer", tid);
  return 0;
}

/* Registers, extended state and signal mask back, every thread. */
static int
threads_back(struct rproc *p, crest_error_t *err)
{
  for (size_t t = 0; t < p->nth; t++)
    {
      struct rthread *th = &p->th[t];
      struct user_regs_struct r = th->regs;
      pt_normalize_restart(&r);
      if (pt_setregs(th->tid, &r, err) < 0 || pt_setxstate(th->tid, th->xstate, th->xlen, err) < 0)
        return -1;
      if (ptrace(PTRACE_SETSIGMASK, th->tid, sizeof th->sigmask, &th->sigmask) < 0)
        return crest_error_errno(err, "restore: task %d: set signal mask", th->tid);
    }
  return 0;
}

/* One process, start to end. */
static int
finish_process(struct rproc *p, crest_error_t *err)
{
  if (unmap_start(p, err) < 0 || unmap_stop(p, false, err) < 0 || unmap_stop(p, true, err) < 0)
    return -1;
  return threads_back(p, err);
}

/* P, still parked in the blob, after every child of it that was in a group
   stop has been stopped again (stop_process): that stop was reported to P
   anew, as a SIGCHLD (unless P ignores it or set SA_NOCLDSTOP) and as a
   stop its waitpid(WUNTRACED) would collect. P had seen the original one:
   the collection is repeated where P had made it (stop_reported), and the
   SIGCHLD is taken back unless one was pending at checkpoint, so that P
   sees neither twice. P makes the calls itself, from the blob's syscall
   instruction, with no memory of its own written or read: P may run under
   another UID already, whose memory crest may not touch (wait4 names the
   child it collected; rt_sigtimedwait's set and timeout are the blob's
   constants). */
static int
fixup_parent(struct rctx *c, struct rproc *p, crest_error_t *err)
{
  struct rthread *m = &p->th[0];
  struct user_regs_struct r;
  uint64_t gadget = p->base + BLOB_OFF_SYSCALL;
  bool any = false;
  long ret;

  for (size_t k = 0; k < p->nkids; k++)
    any |= c->p[c->kids[p->kid0 + k]].stop_sig && !c->p[c->kids[p->kid0 + k]].zombie;
  if (!any)
    return 0;
  if (pt_getregs(m->tid, &r, err) < 0)
    return -1;
  for (size_t k = 1; k < c->np; k++)
    {
      struct rproc *ch = &c->p[k];
      long a[6] = { ch->pid, 0, WUNTRACED | WNOHANG | __WALL, 0, 0, 0 };
      if (ch->ppid != p->pid || !ch->stop_sig || ch->zombie || !ch->stop_reported)
        continue;
      if (pt_inject(m->tid, &r, gadget, SYS_wait4, a, &ret, err) < 0)
        return crest_error_wrap(err, "restore: process %d: collect the stop of %d", p->pid,
                                ch->pid);
      if (ret < 0)
        return crest_error_sys(err, (int)-ret, "restore: process %d: collect the stop of %d",
                               p->pid, ch->pid);
      if (ret != ch->pid)
        return crest_error_make(err, EPROTO,
                                "restore: process %d: no stop of %d to collect (wait4: %ld)",
                                p->pid, ch->pid, ret);
    }
  if (!sig_in(p->shared_pending, p->nshared_pending, SIGCHLD)
      && !sig_in(m->pending, m->npending, SIGCHLD))
    {
      long a[6] = {
        (long)(p->base + BLOB_OFF_SIGCHLD_SET), 0, (long)(p->base + BLOB_OFF_ZERO_TIMEOUT), 8, 0, 0
      };
      if (pt_inject(m->tid, &r, gadget, SYS_rt_sigtimedwait, a, &ret, err) < 0)
        return crest_error_wrap(err, "restore: process %d: take back SIGCHLD", p->pid);
      if (ret != SIGCHLD && ret != -EAGAIN)
        return crest_error_sys(err, ret < 0 ? (int)-ret : EPROTO,
                               "restore: process %d: take back SIGCHLD (got %ld)", p->pid, ret);
    }
  return 0;
}

/* A process that was in a group stop at checkpoint goes back into one
   before it runs a single instruction of its own: finished (registers,
   masks), every thread still held, it is sent its stop signal; the main
   thread, resumed with every other signal blocked, takes it off the queue
   and is held in its delivery stop; it is let go with an interrupt asked
   first, so that whatever the kernel does with the signal the next stop
   comes before the task's own code: a group stop (PTRACE_EVENT_STOP with
   the stop signal) or, when the kernel discarded a SIGTSTP, SIGTTIN or
   SIGTTOU (a process group with no parent outside it in the session),
   a plain interrupt, and SIGSTOP is sent instead. The other threads join
   the group stop; every one is then held in it until the detach, which
   leaves the process stopped (the kernel stops a detached task again when
   its group stop is in effect). The parent sees the stop reported: see
   fixup_parent. */
static int
stop_process(struct rctx *c, struct rproc *p, crest_error_t *err)
{
  struct rthread *m = &p->th[0];
  struct user_regs_struct want, now;
  uint64_t all = ~0ULL;
  int sig = p->stop_sig, st;

  if (pt_getregs(m->tid, &want, err) < 0)
    return -1;
  for (int attempt = 0;; attempt++)
    {
      uint64_t mask = ~(1ULL << (sig - 1));
      if (ptrace(PTRACE_SETSIGMASK, m->tid, sizeof mask, &mask) < 0)
        return crest_error_errno(err, "restore: task %d: set signal mask", m->tid);
      if (kill(p->pid, sig) < 0)
        return crest_error_errno(err, "restore: process %d: send signal %d", p->pid, sig);
      if (ptrace(PTRACE_CONT, m->tid, 0, 0) < 0)
        return crest_error_errno(err, "restore: task %d: ptrace cont", m->tid);
      if (pt_wait_stop(m->tid, &st, err) < 0)
        return -1;
      if (!WIFSTOPPED(st) || (st >> 16) != 0 || WSTOPSIG(st) != sig)
        return crest_error_make(err, EPROTO,
                                "restore: task %d: unexpected stop %#x waiting for signal %d to "
                                "stop it",
                                m->tid, st, sig);
      if (ptrace(PTRACE_INTERRUPT, m->tid, 0, 0) < 0)
        return crest_error_errno(err, "restore: task %d: ptrace interrupt", m->tid);
      if (ptrace(PTRACE_CONT, m->tid, 0, sig) < 0)
        return crest_error_errno(err, "restore: task %d: ptrace cont", m->tid);
      if (pt_wait_stop(m->tid, &st, err) < 0)
        return -1;
      if (WIFSTOPPED(st) && (st >> 16) == PTRACE_EVENT_STOP && WSTOPSIG(st) == sig)
        break;
      if (WIFSTOPPED(st) && (st >> 16) == PTRACE_EVENT_STOP && WSTOPSIG(st) == SIGTRAP
          && sig != SIGSTOP && attempt == 0)
        {
          crest_debug("restore: process %d: signal %d did not stop it (orphaned process group): "
                      "stopped with SIGSTOP",
                      p->pid, sig);
          sig = SIGSTOP;
          continue;
        }
      return crest_error_make(err, EPROTO,
                              "restore: task %d: unexpected stop %#x stopping it with signal %d",
                              m->tid, st, sig);
    }
  for (size_t t = 1; t < p->nth; t++)
    {
      pid_t tid = p->th[t].tid;
      if (ptrace(PTRACE_SETSIGMASK, tid, sizeof all, &all) < 0)
        return crest_error_errno(err, "restore: task %d: set signal mask", tid);
      if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0 || ptrace(PTRACE_CONT, tid, 0, 0) < 0)
        return crest_error_errno(err, "restore: task %d: ptrace interrupt and cont", tid);
      if (pt_wait_stop(tid, &st, err) < 0)
        return -1;
      if (!WIFSTOPPED(st) || (st >> 16) != PTRACE_EVENT_STOP || WSTOPSIG(st) != sig)
        return crest_error_make(
            err, EPROTO, "restore: task %d: unexpected stop %#x joining the group stop", tid, st);
    }
  /* Nothing ran: the main thread is where it was set to resume. */
  if (pt_getregs(m->tid, &now, err) < 0)
    return -1;
  if (now.rip != want.rip || now.rsp != want.rsp)
    return crest_error_make(err, EPROTO,
                            "restore: task %d: moved (rip %#llx, was %#llx) while "
                            "being stopped",
                            m->tid, (unsigned long long)now.rip, (unsigned long long)want.rip);
  for (size_t t = 0; t < p->nth; t++)
    if (ptrace(PTRACE_SETSIGMASK, p->th[t].tid, sizeof p->th[t].sigmask, &p->th[t].sigmask) < 0)
      return crest_error_errno(err, "restore: task %d: set signal mask", p->th[t].tid);
  (void)c;
  return 0;
}

/* A container's init, its registers set, is made to reap the finishing
   helper (this process, its child) before it runs a single instruction of
   its own: its main thread is set to make wait4(helper, __WALL) at a
   syscall instruction of its vDSO, with every signal blocked and a way
   home below its stack pointer (inject-home.c), a signal frame holding the
   registers, mask and extended state just set, which the rt_sigreturn of
   its own C library puts back once the helper has exited and been reaped.
   Without it the helper stays a zombie child of the init named
   crest-restoring until the init waits, and an init that looks every PID
   it reaps up among the children it made (a supervisor) finds a stranger.
   Best effort: without a gadget, rt_sigreturn code, room on the stack or
   the right to write there, the zombie is left as before (debug line). */
static void
init_reaps_helper(struct rctx *c)
{
  struct rproc *p = &c->p[0];
  struct rthread *th = &p->th[0];
  struct vma *vv = NULL;
  size_t nv = 0;
  uint64_t gadget = 0, sigret, all = ~0ULL;
  int pops = -1;
  struct dthread d;
  struct home h;
  struct user_regs_struct r;
  crest_error_t e = NULL;
  const char *why = NULL;

  if (!c->o->as_ns_init || c->lazy || p->zombie || p->stop_sig || !th->xstate)
    return;
  if (parse_maps(p->pid, &vv, &nv, &e) < 0)
    goto out;
  if (home_vdso_gadget(p->pid, vv, nv, &gadget, &pops, &e) < 0)
    goto out;
  if (!gadget || pops < 0)
    {
      why = "no syscall instruction followed by a return in its vDSO";
      goto out;
    }
  sigret = home_find_sigreturn(p->pid, vv, nv);
  if (!sigret)
    {
      why = "no rt_sigreturn code in its executable mappings";
      goto out;
    }
  memset(&d, 0, sizeof d);
  d.tid = th->tid, d.regs = th->regs, d.xstate = th->xstate, d.xlen = th->xlen;
  d.sigmask = th->sigmask;
  pt_normalize_restart(&d.regs);
  if (home_build(p->pid, &d, vv, nv, pops, sigret, 0, 0, &h, &e) < 0)
    goto out;
  pt_set_home(th->tid, 0);
  free(h.saved);
  if (!h.sp)
    {
      why = "no room below its stack pointer";
      goto out;
    }
  r = d.regs;
  r.rip = gadget, r.rsp = h.sp, r.orig_rax = (unsigned long)-1;
  r.rax = SYS_wait4, r.rdi = (unsigned long)getpid(), r.rsi = 0, r.rdx = __WALL, r.r10 = 0;
  /* Registers last: a failure before leaves the thread as it was set. */
  if (ptrace(PTRACE_SETSIGMASK, th->tid, sizeof all, &all) < 0)
    {
      crest_error_errno(&e, "set its signal mask");
      goto out;
    }
  if (pt_setregs(th->tid, &r, &e) < 0)
    {
      ptrace(PTRACE_SETSIGMASK, th->tid, sizeof th->sigmask, &th->sigmask);
      goto out;
    }
  crest_debug("restore: the init reaps the finishing helper %d first (way home at %#llx)",
              (int)getpid(), (unsigned long long)h.sp);
out:
  if (e || why)
    {
      cleanup_free char *text = e ? crest_error_text(e) : NULL;
      crest_debug("restore: the init is left to reap the finishing helper itself: %s",
                  why ? why : text);
    }
  crest_error_release(&e);
  free_vmas(vv, nv);
}

/* Seize every task as it reports, wait for every thread to park in the
   blob, check the blob's verdicts, set the registers, unmap the blob, let go. */
int
finish_tree(struct rctx *c, crest_error_t *err)
{
  if (wait_parked(c, err) < 0)
    return -1;
  c->ms_parked = ms_since(&c->t0);
  /* --lazy-pages: the verdict is awaited once every page is in (lazy.c). */
  if (!c->lazy && img_reader_verified(c->img, err) < 0)
    return -1;
  for (int i = 0; !c->lazy && i < c->nchain; i++)
    if (img_reader_verified(c->chain[i], err) < 0)
      return crest_error_wrap(err, "parent image");
  c->ms_verified = ms_since(&c->t0);
  for (size_t i = 0; i < c->np; i++)
    if (!c->p[i].zombie && check_blob_status(c, &c->p[i], err) < 0)
      return -1;
  /* Every process group exists now, and no task runs yet: the terminal's
     foreground group goes back to the one the checkpoint saw. */
  if (c->term_fg > 0 && c->term_svc >= 0 && c->o->as_ns_init
      && tcsetpgrp(c->term_svc, c->term_fg) < 0)
    return crest_error_errno(err, "restore: make process group %d the terminal's foreground group",
                             (int)c->term_fg);
  /* Every process group exists, and the descriptors are in place: the
     sessions' ptys become their controlling terminals again (pty.c). */
  for (size_t i = 0; i < c->np; i++)
    if (pty_ctty_finish(c, &c->p[i], err) < 0)
      return -1;
  /* Every owner of signal-driven I/O exists now. */
  if (files_fown(c, err) < 0)
    return -1;
  /* Children before their parents (the image lists parents first): a
     stopped child is stopped again before its parent, still in the blob,
     has its view of that stop put back. Without a stopped process there
     is no such order to keep, and every process unmaps its blob at once:
     each step is started for all before the first is waited for (200
     processes: about 10 ms less than one after the other, each a round
     trip to a task and back). */
  bool stopped = false;
  for (size_t i = 0; i < c->np; i++)
    stopped |= c->p[i].stop_sig && !c->p[i].zombie;
  if (stopped)
    for (size_t i = c->np; i-- > 0;)
      {
        struct rproc *p = &c->p[i];
        if (p->zombie)
          continue;
        if (fixup_parent(c, p, err) < 0 || finish_process(p, err) < 0)
          return -1;
        if (i == 1)
          fault_kill("finishing");
        if (p->stop_sig && stop_process(c, p, err) < 0)
          return -1;
      }
  else
    {
      for (size_t i = c->np; i-- > 0;)
        if (!c->p[i].zombie && unmap_start(&c->p[i], err) < 0)
          return -1;
      for (size_t i = c->np; i-- > 0;)
        if (!c->p[i].zombie && unmap_stop(&c->p[i], false, err) < 0)
          return -1;
      for (size_t i = c->np; i-- > 0;)
        {
          if (c->p[i].zombie)
            continue;
          if (unmap_stop(&c->p[i], true, err) < 0 || threads_back(&c->p[i], err) < 0)
            return -1;
          if (i == 1)
            fault_kill("finishing");
        }
    }
  c->ms_finished = ms_since(&c->t0);
  init_reaps_helper(c);
  for (size_t i = 0; i < c->np; i++)
    for (size_t t = 0; t < c->p[i].nth && !lazy_proc(c, &c->p[i]); t++)
      pt_detach(c->p[i].th[t].tid);
  return 0;
}
