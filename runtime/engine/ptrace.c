/* crest: ptrace helpers of the engine. */
#include <config.h>
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include "engine-int.h"
#include "testhook.h"
#include "util.h"

static struct
{
  pid_t tid;
  int sig;
} deferred[64];

static bool drop_stop_signals;

bool
pt_drop_stop_signals(bool on)
{
  bool was = drop_stop_signals;
  drop_stop_signals = on;
  return was;
}

void
pt_defer_signal(pid_t tid, int sig)
{
  for (size_t i = 0; i < ARRAY_SIZE(deferred); i++)
    if (deferred[i].tid == 0)
      {
        deferred[i].tid = tid;
        deferred[i].sig = sig;
        return;
      }
}

int
pt_detach(pid_t tid)
{
  return pt_release(tid, PTRACE_DETACH);
}

/* PTRACE_DETACH or PTRACE_CONT (REQ) with the signal deferred for TID.
   The kernel delivers the signal given to REQ only from that signal's own
   delivery stop; from any other stop (the interrupt stop where a failed
   checkpoint's clean-up left the thread, after more injected calls) it
   drops it. There, the thread is released without it and is sent it
   again (a stop signal has no information to lose: a kill -STOP sent
   during a checkpoint that was tried again stopped nothing, found December
   2026). */
int
pt_release(pid_t tid, int req)
{
  int sig = 0, rc;
  siginfo_t si;
  bool own_stop;
  for (size_t i = 0; i < ARRAY_SIZE(deferred); i++)
    if (deferred[i].tid == tid)
      {
        sig = deferred[i].sig;
        deferred[i].tid = 0;
      }
  if (!sig)
    return ptrace(req, tid, 0, 0);
  own_stop = ptrace(PTRACE_GETSIGINFO, tid, 0, &si) == 0 && si.si_signo == sig
             && si.si_code != (SIGTRAP | (PTRACE_EVENT_STOP << 8));
  rc = ptrace(req, tid, 0, own_stop ? sig : 0);
  if (rc == 0 && !own_stop)
    syscall(SYS_tkill, tid, sig);
  return rc;
}

/* Collect the exits of TID's other threads that crest traces: a
   thread-group leader's own exit is reported only once every other thread
   of its group is reaped, and a traced thread is reaped by its tracer only.
   WEXITED alone: a stop of another thread stays for its own waiter. */
static void
reap_exited_siblings(pid_t tid)
{
  char path[48];
  DIR *d;
  struct dirent *e;
  snprintf(path, sizeof path, "/proc/%d/task", tid);
  d = opendir(path);
  if (!d)
    return;
  while ((e = readdir(d)))
    {
      pid_t t = (pid_t)strtol(e->d_name, NULL, 10);
      siginfo_t si;
      if (t > 0 && t != tid)
        waitid(P_PID, (id_t)t, &si, WEXITED | WNOHANG | __WALL);
    }
  closedir(d);
}

/* Test hook (CREST_FAULT=kill-tree@wait): the process is killed while crest
   waits for its leader, every thread of it traced by crest. */
static void
wait_fault(pid_t tid)
{
  char path[64];
  DIR *d;
  struct dirent *e;
  int threads = 0, ours = 0;
  crest_error_t err = NULL;
  if (!crest_test_knob("CREST_FAULT"))
    return;
  snprintf(path, sizeof path, "/proc/%d/task", tid);
  if (syscall(SYS_tgkill, tid, tid, 0) < 0 || !(d = opendir(path)))
    return; /* not a thread-group leader (tgkill: TID in group TID) */
  while ((e = readdir(d)))
    if (e->d_name[0] != '.')
      {
        char status[320], line[128];
        FILE *f;
        threads++;
        snprintf(status, sizeof status, "/proc/%d/task/%s/status", tid, e->d_name);
        if (!(f = fopen(status, "r")))
          continue;
        while (fgets(line, sizeof line, f))
          if (strncmp(line, "TracerPid:", 10) == 0 && strtol(line + 10, NULL, 10) == getpid())
            ours++;
        fclose(f);
      }
  closedir(d);
  if (threads < 2 || ours != threads)
    return;
  dump_fault_target(tid);
  if (dump_fault("wait", &err) < 0)
    crest_error_release(&err);
  dump_fault_target(0);
}

void
chld_wait_begin(struct chld_wait *w)
{
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, &w->old);
  w->fd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  w->took = false;
}

void
chld_wait_drain(struct chld_wait *w)
{
  struct signalfd_siginfo si;
  while (w->fd >= 0 && read(w->fd, &si, sizeof si) == sizeof si)
    w->took = true;
}

void
chld_wait_end(struct chld_wait *w)
{
  if (w->fd >= 0)
    close(w->fd);
  w->fd = -1;
  if (w->took)
    raise(SIGCHLD);
  sigprocmask(SIG_SETMASK, &w->old, NULL);
}

/* SIGCHLD blocked, for sigtimedwait (chld_take) rather than a signalfd. */
static void
chld_block(struct chld_wait *w)
{
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, &w->old);
  w->fd = -1;
  w->took = false;
}

/* Until a SIGCHLD comes (taken off the pending set in the same call: one
   system call where a signalfd takes three), or 1 s, a safety net: every
   wake-up is an event. */
static void
chld_take(struct chld_wait *w)
{
  sigset_t chld;
  struct timespec one = { 1, 0 };
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  if (sigtimedwait(&chld, NULL, &one) == SIGCHLD)
    w->took = true;
}

/* pt_wait_scope: SIGCHLD held blocked across the waits of a stretch of
   injected calls (two stops each), rather than blocked and let through at
   each wait. */
static struct chld_wait scope;
static int scope_depth;

void
pt_wait_scope(bool on)
{
  if (on && scope_depth++ == 0)
    chld_block(&scope);
  else if (!on && scope_depth > 0 && --scope_depth == 0)
    chld_wait_end(&scope);
}

/* pt_wait_lone: the threads waited for are each the only thread of their
   process (set around a single-threaded process's injected calls). */
static bool lone;

void
pt_wait_lone(bool on)
{
  lone = on;
}

void
pt_wait_event(void)
{
  chld_take(&scope);
}

/* Until TID stops (or exits: an error). Woken by SIGCHLD (chld_take);
   while TID has not reported, the exits of its other threads are
   collected, or a killed leader's exit would never come. Asked first, then
   waited for: a SIGCHLD an earlier wait took may have been this stop's. */
int
pt_wait_stop(pid_t tid, int *status, crest_error_t *err)
{
  struct chld_wait own, *w = &own;
  int rc;
  bool waiting = false, woken = false;

  if (crest_test_hooks_built())
    wait_fault(tid);
  for (;;)
    {
      /* The only thread of its process reports its own exit at once: no
         sibling can hold it back, and one blocking wait does. */
      pid_t r = waitpid(tid, status, __WALL | (lone ? 0 : WNOHANG));
      if (r < 0 && errno == EINTR)
        continue;
      if (r < 0)
        {
          rc = crest_error_errno(err, "task %d: wait", tid);
          break;
        }
      if (r == tid)
        {
          rc = 0;
          if (WIFEXITED(*status) || WIFSIGNALED(*status))
            rc = crest_error_make(err, ESRCH, "task %d: exited while being checkpointed/restored",
                                  tid);
          break;
        }
      if (!waiting)
        {
          /* Blocked first, then asked again: a SIGCHLD sent before the
             block was taken by its default action. In a scope, it was
             blocked before this wait began. */
          waiting = true;
          if (scope_depth > 0)
            w = &scope;
          else
            {
              chld_block(w);
              continue;
            }
        }
      if (woken)
        reap_exited_siblings(tid);
      if (!par_yield(tid))
        chld_take(w);
      woken = true;
    }
  if (waiting && w == &own)
    chld_wait_end(w);
  return rc;
}

int
pt_seize_interrupt(pid_t tid, int *stopsig, crest_error_t *err)
{
  int st;

  if (ptrace(PTRACE_SEIZE, tid, 0, PTRACE_O_TRACESYSGOOD) < 0)
    return crest_error_errno(err, "task %d: ptrace seize", tid);
  if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0)
    return crest_error_errno(err, "task %d: ptrace interrupt", tid);
  for (;;)
    {
      if (pt_wait_stop(tid, &st, err) < 0)
        return -1;
      /* The stop's signal is SIGTRAP for a running task; for one in a
         group stop (stopped by SIGSTOP, SIGTSTP, SIGTTIN or SIGTTOU, or
         in the middle of stopping) it is that stop signal. The interrupt
         asked for above may show up once more as a second stop of the
         same kind when the task is next resumed: every caller resumes
         through a loop that takes such stops in its stride. */
      if (WIFSTOPPED(st) && (st >> 16) == PTRACE_EVENT_STOP)
        {
          *stopsig = WSTOPSIG(st);
          return 0;
        }
      /* A signal was being delivered: let it go (it was on its way anyway)
         and wait for the interrupt stop that is still pending. */
      if (WIFSTOPPED(st))
        {
          int sig = WSTOPSIG(st);
          if (sig == SIGTRAP || (st >> 16) != 0)
            sig = 0;
          if (ptrace(PTRACE_CONT, tid, 0, sig) < 0)
            return crest_error_errno(err, "task %d: ptrace cont", tid);
        }
    }
}

int
pt_getregs(pid_t tid, struct user_regs_struct *r, crest_error_t *err)
{
  struct iovec iov = { r, sizeof *r };
  if (ptrace(PTRACE_GETREGSET, tid, NT_PRSTATUS, &iov) < 0)
    return crest_error_errno(err, "task %d: read registers", tid);
  /* A 32-bit (ia32) program's registers come in the 32-bit layout. */
  if (iov.iov_len != sizeof *r)
    return crest_error_make(
        err, ENOTSUP, "task %d is a 32-bit program: crest checkpoints 64-bit programs only", tid);
  return 0;
}

int
pt_setregs(pid_t tid, const struct user_regs_struct *r, crest_error_t *err)
{
  struct iovec iov = { (void *)r, sizeof *r };
  if (ptrace(PTRACE_SETREGSET, tid, NT_PRSTATUS, &iov) < 0)
    return crest_error_errno(err, "task %d: set registers", tid);
  return 0;
}

int
pt_getxstate(pid_t tid, uint8_t *buf, size_t *len, crest_error_t *err)
{
  struct iovec iov = { buf, XSTATE_MAX };
  if (ptrace(PTRACE_GETREGSET, tid, NT_X86_XSTATE, &iov) < 0)
    return crest_error_errno(err, "task %d: read xstate (FPU/SSE/AVX)", tid);
  *len = iov.iov_len;
  return 0;
}

int
pt_setxstate(pid_t tid, const uint8_t *buf, size_t len, crest_error_t *err)
{
  struct iovec iov = { (void *)buf, len };
  if (ptrace(PTRACE_SETREGSET, tid, NT_X86_XSTATE, &iov) < 0)
    return crest_error_errno(err, "task %d: set xstate (FPU/SSE/AVX)", tid);
  return 0;
}

/* The kernel's internal restart codes and EINTR: an injected syscall that
   ends with one of them was interrupted before it did anything and is
   issued again (every syscall the engine injects can be repeated). */
static bool
interrupted_syscall(long ret)
{
  return ret == -EINTR || ret == -512 /* ERESTARTSYS */ || ret == -513 /* ERESTARTNOINTR */
         || ret == -514 /* ERESTARTNOHAND */ || ret == -516 /* ERESTART_RESTARTBLOCK */;
}

static int
inject_once(pid_t tid, const struct user_regs_struct *saved, uint64_t gadget, long nr,
            const long a[6], long *ret, crest_error_t *err)
{
  struct user_regs_struct r = *saved;
  int st;

  r.rip = gadget;
  r.rax = nr;
  r.orig_rax = (unsigned long)-1; /* no syscall restart on the way out */
  r.rdi = a[0], r.rsi = a[1], r.rdx = a[2], r.r10 = a[3], r.r8 = a[4], r.r9 = a[5];
  if (pt_setregs(tid, &r, err) < 0)
    return -1;
  /* One step over the syscall instruction: the task stops right after it,
     in a signal-delivery stop (SIGTRAP), whatever the syscall did. */
  if (ptrace(PTRACE_SINGLESTEP, tid, 0, 0) < 0)
    return crest_error_errno(err, "task %d: ptrace single-step", tid);
  for (;;)
    {
      siginfo_t si;
      if (pt_wait_stop(tid, &st, err) < 0)
        return -1;
      if (WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP && (st >> 16) == 0)
        {
          /* Ours comes from the kernel (TRAP_*); a SIGTRAP sent by
             kill() or tgkill() (si_code <= 0) is the task's own: it was
             taken off its queue here, and is handed back on detach. */
          if (ptrace(PTRACE_GETSIGINFO, tid, 0, &si) == 0 && si.si_code <= 0)
            {
              pt_defer_signal(tid, SIGTRAP);
              pt_setregs(tid, saved, err);
              return crest_error_make(err, EAGAIN,
                                      "task %d: signal %d (%s) sent to it during the checkpoint",
                                      tid, SIGTRAP, strsignal(SIGTRAP));
            }
          break;
        }
      /* Every other signal is blocked while the engine injects (see
         pt_block_signals): only SIGSTOP, which cannot be, gets here.
         Queued for a process already in a group stop (kill -STOP sent
         twice) it can do nothing: the SIGCONT that ends the stop takes it
         off the queue unseen. Taken here, it is dropped and the step goes
         on. */
      if (WIFSTOPPED(st) && (st >> 16) == 0 && drop_stop_signals
          && (WSTOPSIG(st) == SIGSTOP || WSTOPSIG(st) == SIGTSTP || WSTOPSIG(st) == SIGTTIN
              || WSTOPSIG(st) == SIGTTOU))
        {
          if (ptrace(PTRACE_SINGLESTEP, tid, 0, 0) < 0)
            return crest_error_errno(err, "task %d: ptrace single-step", tid);
          continue;
        }
      /* For a running task it is handed back on detach, so the task stops
         as it would have, and the checkpoint fails: it began to stop in
         the middle of it. */
      if (WIFSTOPPED(st) && (st >> 16) == 0)
        {
          pt_defer_signal(tid, WSTOPSIG(st));
          pt_setregs(tid, saved, err);
          return crest_error_make(err, EAGAIN,
                                  "task %d: signal %d (%s) arrived during the checkpoint", tid,
                                  WSTOPSIG(st), strsignal(WSTOPSIG(st)));
        }
      if (ptrace(PTRACE_SINGLESTEP, tid, 0, 0) < 0)
        return crest_error_errno(err, "task %d: ptrace single-step", tid);
    }
  if (pt_getregs(tid, &r, err) < 0)
    return -1;
  if (r.rip != gadget + 2)
    {
      pt_setregs(tid, saved, err);
      return crest_error_make(err, EFAULT,
                              "task %d: injected syscall %ld did not complete (rip %#llx)", tid, nr,
                              (unsigned long long)r.rip);
    }
  *ret = (long)r.rax;
  return pt_setregs(tid, saved, err);
}

/* After an injected call that returned RET on its TRIES-th try: 0 when it
   is done, 1 to run it again (a signal interrupted it), -1 with ERR when it
   was interrupted too often. Both injection paths retry the same way. */
static int
retry_interrupted(pid_t tid, long nr, int tries, long ret, crest_error_t *err)
{
  if (!interrupted_syscall(ret))
    return 0;
  if (tries == 100)
    return crest_error_make(err, EINTR, "task %d: injected syscall %ld interrupted %d times", tid,
                            nr, tries + 1);
  return 1;
}

int
pt_inject(pid_t tid, const struct user_regs_struct *saved, uint64_t gadget, long nr,
          const long a[6], long *ret, crest_error_t *err)
{
  int r;
  for (int tries = 0;; tries++)
    {
      if (inject_once(tid, saved, gadget, nr, a, ret, err) < 0)
        return -1;
      if ((r = retry_interrupted(tid, nr, tries, *ret, err)) <= 0)
        return r;
    }
}

/* A stop signal (or any signal: only those that cannot be blocked get here
   while the engine holds the thread with every other signal blocked) was
   taken off the queue in the middle of an injected syscall. Returns 1 when
   it is dropped (a process already in a group stop: the SIGCONT that ends
   the stop would discard it unseen), or -1 with the thread's registers put
   back and the signal kept for the detach (a running task began to stop:
   the checkpoint fails, the task stops as it would have). */
static int
signal_during_injection(pid_t tid, const struct user_regs_struct *saved, int sig,
                        crest_error_t *err)
{
  if (drop_stop_signals && (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU))
    return 1;
  pt_defer_signal(tid, sig);
  pt_setregs(tid, saved, err);
  return crest_error_make(err, EAGAIN, "task %d: signal %d (%s) arrived during the checkpoint", tid,
                          sig, strsignal(sig));
}

/* From the syscall-exit stop of an injected call, back to a stop inside the
   kernel's signal handling with the thread's own registers: asked for with
   PTRACE_INTERRUPT, which also marks a signal as due, so that the way back
   to user space goes through the place where the kernel restarts an
   interrupted syscall. The order matters if crest dies in between: once
   the registers are the thread's own, the kernel's implicit detach lets it
   run on from exactly there, through that same restart logic. */
static int
back_to_interrupt_stop(pid_t tid, const struct user_regs_struct *saved, crest_error_t *err)
{
  int st;
  if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0)
    return crest_error_errno(err, "task %d: ptrace interrupt", tid);
  if (pt_setregs(tid, saved, err) < 0)
    return -1;
  if (ptrace(PTRACE_CONT, tid, 0, 0) < 0)
    return crest_error_errno(err, "task %d: ptrace cont", tid);
  for (;;)
    {
      if (pt_wait_stop(tid, &st, err) < 0)
        return -1;
      if (WIFSTOPPED(st) && (st >> 16) == PTRACE_EVENT_STOP)
        return 0;
      if (WIFSTOPPED(st) && (st >> 16) == 0 && WSTOPSIG(st) != (SIGTRAP | 0x80))
        {
          int r = signal_during_injection(tid, saved, WSTOPSIG(st), err);
          if (r < 0)
            return -1;
        }
      if (ptrace(PTRACE_CONT, tid, 0, 0) < 0)
        return crest_error_errno(err, "task %d: ptrace cont", tid);
    }
}

/* One injected syscall without single-stepping: run to the syscall-entry
   stop and on to the syscall-exit stop (PTRACE_SYSCALL). The trap flag is
   never set and no SIGTRAP is ever forced on the task, so if crest dies at
   any moment the kernel's implicit detach (which neither clears a trap flag
   nor takes back a stop's pending signal) has nothing to undo but the
   registers of the call in flight. */
static int
run_injected(pid_t tid, const struct user_regs_struct *saved, uint64_t mask, crest_error_t *err)
{
  int st, syscall_stops = 0;

  if (ptrace(PTRACE_SYSCALL, tid, 0, 0) < 0)
    return crest_error_errno(err, "task %d: ptrace syscall", tid);
  while (syscall_stops < 2)
    {
      if (pt_wait_stop(tid, &st, err) < 0)
        return -1;
      if (WIFSTOPPED(st) && WSTOPSIG(st) == (SIGTRAP | 0x80))
        {
          /* Test hook (CREST_FAULT=kill-worker@in-call): the worker dies
             with this call in flight, the gap docs/engine.md names. */
          crest_error_t e = NULL;
          if (++syscall_stops == 1 && dump_fault("in-call", &e) < 0)
            crest_error_release(&e);
        }
      else if (WIFSTOPPED(st) && (st >> 16) == 0)
        {
          /* A signal-delivery stop, before the call: dropped, or the end. */
          if (signal_during_injection(tid, saved, WSTOPSIG(st), err) < 0)
            {
              pt_restore_signals(tid, mask, err);
              back_to_interrupt_stop(tid, saved, err);
              return -1;
            }
        }
      /* Other stops (the seize's interrupt, asked for once and reported
         again when the thread is first resumed) are stepped over. */
      if (syscall_stops < 2 && ptrace(PTRACE_SYSCALL, tid, 0, 0) < 0)
        return crest_error_errno(err, "task %d: ptrace syscall", tid);
    }
  return 0;
}

/* The ways home (inject-home.c), by thread; CHAIN: its injected calls are
   chained (pt_chain_begin), PARKED: it waits at the last one's
   syscall-exit stop, every signal blocked. */
static struct home_ent
{
  pid_t tid;
  uint64_t sp;
  bool chain, parked;
} * homes;
static size_t nhomes;

void
pt_set_home(pid_t tid, uint64_t sp)
{
  for (size_t i = 0; i < nhomes; i++)
    if (homes[i].tid == tid)
      {
        if (sp)
          homes[i].sp = sp;
        else
          homes[i] = homes[--nhomes];
        return;
      }
  if (!sp)
    return;
  homes = xrealloc(homes, (nhomes + 1) * sizeof *homes);
  homes[nhomes].tid = tid, homes[nhomes].sp = sp;
  homes[nhomes].chain = homes[nhomes].parked = false;
  nhomes++;
}

static uint64_t
home_of(pid_t tid)
{
  for (size_t i = 0; i < nhomes; i++)
    if (homes[i].tid == tid)
      return homes[i].sp;
  return 0;
}

/* TID's entry while its calls are chained, else NULL. */
static struct home_ent *
chain_of(pid_t tid)
{
  for (size_t i = 0; i < nhomes; i++)
    if (homes[i].tid == tid && homes[i].chain)
      return &homes[i];
  return NULL;
}

static bool *
parked_of(pid_t tid)
{
  struct home_ent *h = chain_of(tid);
  return h ? &h->parked : NULL;
}

void
pt_chain_begin(pid_t tid)
{
  for (size_t i = 0; i < nhomes; i++)
    if (homes[i].tid == tid)
      homes[i].chain = true;
}

int
pt_chain_end(pid_t tid, const struct user_regs_struct *saved, uint64_t mask, crest_error_t *err)
{
  struct home_ent *h = chain_of(tid);
  bool parked = h && h->parked;
  if (h)
    h->chain = h->parked = false;
  if (!parked)
    return 0;
  if (pt_restore_signals(tid, mask, err) < 0 || back_to_interrupt_stop(tid, saved, err) < 0)
    return -1;
  return 0;
}

static int
inject_nostep_once(pid_t tid, const struct user_regs_struct *saved, uint64_t mask, uint64_t gadget,
                   long nr, const long a[6], long *ret, crest_error_t *err)
{
  struct user_regs_struct r = *saved;
  uint64_t all = ~0ULL;

  r.rip = gadget;
  r.rax = nr;
  r.orig_rax = (unsigned long)-1; /* no syscall restart on the way out */
  if (home_of(tid))
    r.rsp = home_of(tid); /* cut off, the call returns home from there */
  r.rdi = a[0], r.rsi = a[1], r.rdx = a[2], r.r10 = a[3], r.r8 = a[4], r.r9 = a[5];
  /* Registers first, then the mask, and back in the reverse order: the
     thread's mask is its own whenever its registers are. A signal that
     arrives meanwhile stays pending, SIGTRAP included (nothing here forces
     one); SIGKILL and SIGSTOP cannot be blocked. A thread parked at the
     exit stop of the chain's last call has every signal blocked already,
     and is taken on from there. */
  bool *parked = parked_of(tid);
  if (pt_setregs(tid, &r, err) < 0)
    return -1;
  if (parked && *parked)
    *parked = false;
  else if (ptrace(PTRACE_SETSIGMASK, tid, sizeof all, &all) < 0)
    {
      crest_error_errno(err, "task %d: block signals", tid);
      pt_setregs(tid, saved, err);
      return -1;
    }
  if (run_injected(tid, saved, mask, err) < 0)
    return -1;
  /* Looked up again: the table may have grown while another process's
     calls ran (dump-par.c). */
  parked = parked_of(tid);
  if (pt_getregs(tid, &r, err) < 0)
    return -1;
  if (parked && r.rip == gadget + 2 && (long)r.orig_rax == nr)
    {
      /* Chained: the thread waits at this exit stop for the next call. If
         crest dies meanwhile, it runs on to its way home, which puts back
         its registers and mask, as it would in the middle of a call. */
      crest_error_t e = NULL;
      *parked = true;
      *ret = (long)r.rax;
      /* Test hook (CREST_FAULT=kill-worker@parked): the worker dies while
         the thread waits here. */
      if (dump_fault("parked", &e) < 0)
        crest_error_release(&e);
      return 0;
    }
  if (pt_restore_signals(tid, mask, err) < 0)
    return -1;
  if (r.rip != gadget + 2 || (long)r.orig_rax != nr)
    {
      back_to_interrupt_stop(tid, saved, err);
      return crest_error_make(err, EFAULT,
                              "task %d: injected syscall %ld did not complete (rip %#llx)", tid, nr,
                              (unsigned long long)r.rip);
    }
  *ret = (long)r.rax;
  return back_to_interrupt_stop(tid, saved, err);
}

int
pt_inject_nostep(pid_t tid, const struct user_regs_struct *saved, uint64_t mask, uint64_t gadget,
                 long nr, const long a[6], long *ret, crest_error_t *err)
{
  int r;
  for (int tries = 0;; tries++)
    {
      if (inject_nostep_once(tid, saved, mask, gadget, nr, a, ret, err) < 0)
        return -1;
      if ((r = retry_interrupted(tid, nr, tries, *ret, err)) <= 0)
        return r;
    }
}

int
pt_get_sigmask(pid_t tid, uint64_t *mask, crest_error_t *err)
{
  if (ptrace(PTRACE_GETSIGMASK, tid, sizeof *mask, mask) < 0)
    return crest_error_errno(err, "task %d: read signal mask", tid);
  return 0;
}

int
pt_restore_signals(pid_t tid, uint64_t saved, crest_error_t *err)
{
  if (ptrace(PTRACE_SETSIGMASK, tid, sizeof saved, &saved) < 0)
    return *err ? -1 : crest_error_errno(err, "task %d: restore signal mask", tid);
  return 0;
}

void
pt_normalize_restart(struct user_regs_struct *r)
{
  long ax = (long)r->rax;
  if ((long)r->orig_rax >= 0)
    {
      if (ax == -512 /* ERESTARTSYS */ || ax == -513 /* ERESTARTNOINTR */
          || ax == -514 /* ERESTARTNOHAND */)
        {
          r->rax = r->orig_rax;
          r->rip -= 2;
        }
      else if (ax == -516 /* ERESTART_RESTARTBLOCK */)
        {
          /* The kernel's restart block (the time left) did not survive:
             a sleep, poll or futex wait is made again with its own
             arguments, still in the registers (exact for an absolute
             deadline, the whole timeout again for a relative one: later,
             as after a suspension, never early). A restart_syscall (the
             call was interrupted before, by a stop or an earlier
             checkpoint) names no call to make again: -EINTR. */
          bool again = false;
          for (size_t k = 0; k < sizeof restart_block_calls / sizeof *restart_block_calls; k++)
            again |= (long)r->orig_rax == restart_block_calls[k];
          if (again)
            {
              r->rax = r->orig_rax;
              r->rip -= 2;
            }
          else
            r->rax = (unsigned long)-EINTR;
        }
    }
  r->orig_rax = (unsigned long)-1;
}
