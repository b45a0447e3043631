/* zdtm-signals: signal state of a task.
 *
 * - SIGUSR1: handler h_info, SA_SIGINFO|SA_ONSTACK|SA_RESTART, mask {SIGUSR2}
 * - SIGHUP: handler h_plain, SA_NODEFER|SA_RESETHAND
 * - SIGINT: ignored; SIGQUIT: default; SIGTRAP: handler h_plain, SA_RESTART
 * - each handler's sa_restorer as glibc set it (read back before checkpoint)
 * - blocked: SIGUSR2 and SIGRTMIN+3
 * - pending: SIGUSR2 sent to the thread (tgkill), SIGRTMIN+3 queued twice to
 *   the process with values 111 and 222 (shared pending, order kept)
 * - an alternate signal stack
 * After restore every value is compared; then the pending signals are
 * collected and SIGUSR1 is raised to see it run on the alternate stack. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t got_usr1, got_usr1_code, got_hup;
static volatile uintptr_t usr1_stack_addr;

static void
h_info(int sig, siginfo_t *si, void *uc)
{
  int local;
  (void)uc;
  got_usr1 = sig;
  got_usr1_code = si->si_code;
  usr1_stack_addr = (uintptr_t)&local;
}

static void
h_plain(int sig)
{
  got_hup = sig;
}

/* The kernel's view: struct k_sigaction as rt_sigaction reads and writes it. */
struct ksa
{
  void *handler;
  unsigned long flags;
  void *restorer;
  uint64_t mask;
};

static int
kget(int sig, struct ksa *k)
{
  return syscall(SYS_rt_sigaction, sig, NULL, k, 8);
}

static const int sigs[] = { SIGUSR1, SIGHUP, SIGINT, SIGQUIT, SIGUSR2, SIGTRAP };
#define NSIGS ((int)(sizeof sigs / sizeof sigs[0]))

int
main(int argc, char **argv)
{
  struct sigaction sa;
  struct ksa before[NSIGS], after;
  sigset_t blk, cur, pend;
  stack_t ss, ss_now;
  union sigval v;
  int rt = SIGRTMIN + 3;

  zdtm_init(argc, argv);
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = h_info;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGUSR2);
  sigaction(SIGUSR1, &sa, NULL);
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = h_plain;
  sa.sa_flags = SA_NODEFER | SA_RESETHAND;
  sigaction(SIGHUP, &sa, NULL);
  signal(SIGINT, SIG_IGN);
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = h_plain;
  sigaction(SIGUSR2, &sa, NULL);
  /* The engine stops each task at an int3 (SIGTRAP) at the end of its
     restore: the handler must survive that. */
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = h_plain;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTRAP, &sa, NULL);
  for (int i = 0; i < NSIGS; i++)
    if (kget(sigs[i], &before[i]) < 0)
      zdtm_error("rt_sigaction %d: %s", sigs[i], strerror(errno));

  ss.ss_sp = malloc(SIGSTKSZ * 4);
  ss.ss_size = SIGSTKSZ * 4;
  ss.ss_flags = 0;
  if (sigaltstack(&ss, NULL) < 0)
    zdtm_error("sigaltstack: %s", strerror(errno));

  sigemptyset(&blk);
  sigaddset(&blk, SIGUSR2);
  sigaddset(&blk, rt);
  sigprocmask(SIG_BLOCK, &blk, NULL);
  syscall(SYS_tgkill, getpid(), gettid(), SIGUSR2);
  v.sival_int = 111;
  sigqueue(getpid(), rt, v);
  v.sival_int = 222;
  sigqueue(getpid(), rt, v);

  zdtm_ready();
  zdtm_wait();

  for (int i = 0; i < NSIGS; i++)
    {
      if (kget(sigs[i], &after) < 0)
        {
          zdtm_fail("rt_sigaction %d after restore: %s", sigs[i], strerror(errno));
          continue;
        }
      if (after.handler != before[i].handler)
        zdtm_fail("signal %d: handler expected %p, got %p", sigs[i], before[i].handler,
                  after.handler);
      if (after.flags != before[i].flags)
        zdtm_fail("signal %d: flags expected 0x%lx, got 0x%lx", sigs[i], before[i].flags,
                  after.flags);
      if (after.restorer != before[i].restorer)
        zdtm_fail("signal %d: sa_restorer expected %p, got %p", sigs[i], before[i].restorer,
                  after.restorer);
      if (after.mask != before[i].mask)
        zdtm_fail("signal %d: sa_mask expected 0x%llx, got 0x%llx", sigs[i],
                  (unsigned long long)before[i].mask, (unsigned long long)after.mask);
    }
  sigprocmask(SIG_BLOCK, NULL, &cur);
  for (int s = 1; s < 65; s++)
    if (sigismember(&cur, s) != sigismember(&blk, s))
      zdtm_fail("blocked mask: signal %d expected %s, got %s", s,
                sigismember(&blk, s) ? "blocked" : "unblocked",
                sigismember(&cur, s) ? "blocked" : "unblocked");
  sigpending(&pend);
  if (!sigismember(&pend, SIGUSR2) || !sigismember(&pend, rt))
    zdtm_fail("pending: expected SIGUSR2 and SIGRTMIN+3, got SIGUSR2 %s, SIGRTMIN+3 %s",
              sigismember(&pend, SIGUSR2) ? "pending" : "missing",
              sigismember(&pend, rt) ? "pending" : "missing");
  if (sigaltstack(NULL, &ss_now) < 0 || ss_now.ss_sp != ss.ss_sp || ss_now.ss_size != ss.ss_size
      || ss_now.ss_flags != 0)
    zdtm_fail("alternate stack: expected %p size %zu flags 0, got %p size %zu flags %d", ss.ss_sp,
              ss.ss_size, ss_now.ss_sp, ss_now.ss_size, ss_now.ss_flags);

  /* Collect the queued real-time signals: two, in order, with their values. */
  for (int k = 0; k < 2; k++)
    {
      siginfo_t si;
      struct timespec zero = { 0, 0 };
      sigset_t only;
      sigemptyset(&only);
      sigaddset(&only, rt);
      if (sigtimedwait(&only, &si, &zero) != rt)
        zdtm_fail("SIGRTMIN+3 instance %d: not pending after restore (%s)", k + 1, strerror(errno));
      else if (si.si_value.sival_int != (k ? 222 : 111) || si.si_code != SI_QUEUE)
        zdtm_fail("SIGRTMIN+3 instance %d: value expected %d code %d, got %d code %d", k + 1,
                  k ? 222 : 111, SI_QUEUE, si.si_value.sival_int, si.si_code);
    }
  /* The thread-directed SIGUSR2 is delivered to its handler once unblocked. */
  got_hup = 0;
  sigprocmask(SIG_UNBLOCK, &blk, NULL);
  if (got_hup != SIGUSR2)
    zdtm_fail("pending SIGUSR2 was not delivered to its handler when unblocked");
  raise(SIGUSR1);
  if (got_usr1 != SIGUSR1 || got_usr1_code != SI_TKILL)
    zdtm_fail("SIGUSR1 handler: expected signal %d code %d, got %d code %d", SIGUSR1, SI_TKILL,
              (int)got_usr1, (int)got_usr1_code);
  else if (usr1_stack_addr < (uintptr_t)ss.ss_sp
           || usr1_stack_addr >= (uintptr_t)ss.ss_sp + ss.ss_size)
    zdtm_fail("SIGUSR1 handler ran at %p, not on the alternate stack %p-%p",
              (void *)usr1_stack_addr, ss.ss_sp, (char *)ss.ss_sp + ss.ss_size);
  zdtm_finish();
}
