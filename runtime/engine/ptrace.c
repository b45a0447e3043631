/* crest: ptrace helpers of the engine. */
#include <config.h>
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include "engine-int.h"
#include "util.h"

static struct
{
  pid_t tid;
  int sig;
} deferred[64];

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
  int sig = 0;
  for (size_t i = 0; i < ARRAY_SIZE(deferred); i++)
    if (deferred[i].tid == tid)
      {
        sig = deferred[i].sig;
        deferred[i].tid = 0;
      }
  return ptrace(PTRACE_DETACH, tid, 0, sig);
}

int
pt_wait_stop(pid_t tid, int *status, crest_error_t *err)
{
  for (;;)
    {
      pid_t r = waitpid(tid, status, __WALL);
      if (r < 0 && errno == EINTR)
        continue;
      if (r < 0)
        return crest_error_errno(err, "task %d: wait", tid);
      if (WIFEXITED(*status) || WIFSIGNALED(*status))
        return crest_error_make(err, ESRCH, "task %d: exited while being checkpointed/restored",
                                tid);
      return 0;
    }
}

int
pt_seize_interrupt(pid_t tid, crest_error_t *err)
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
      if (WIFSTOPPED(st) && (st >> 16) == PTRACE_EVENT_STOP)
        return 0;
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

int
pt_inject(pid_t tid, const struct user_regs_struct *saved, uint64_t gadget, long nr,
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
      if (pt_wait_stop(tid, &st, err) < 0)
        return -1;
      if (WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP && (st >> 16) == 0)
        break;
      /* Another signal arrived first: put the registers back, keep the
         signal for the detach, and give up on this dump. */
      if (WIFSTOPPED(st) && (st >> 16) == 0)
        {
          pt_defer_signal(tid, WSTOPSIG(st));
          pt_setregs(tid, saved, err);
          return crest_error_make(err, EAGAIN, "task %d: signal %d arrived during the checkpoint",
                                  tid, WSTOPSIG(st));
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
        r->rax = (unsigned long)-EINTR; /* the restart block did not survive */
    }
  r->orig_rax = (unsigned long)-1;
}
