/* zdtm-busy-tree: a tree that a checkpoint must leave as it was, whatever
 * happens to crest (tests/host/checkpoint-safety.test kills crest at many
 * moments of a checkpoint of it).
 *
 * - a root and three children; memory filled with a pattern, ZDTM_BUSY_MIB
 *   in all (default 200): the root holds all but 8 MiB per child;
 * - the root computes in user space all the time (a thread seized there),
 *   the children sleep in nanosleep (a thread seized in a syscall, which
 *   must restart as if nothing happened);
 * - every process: a SIGUSR1 handler (counts), SIGUSR2 blocked, an
 *   alternate signal stack, SIGTRAP and SIGSEGV at their defaults (a stray
 *   trap flag or foreign registers kill it, and the harness sees that);
 * - SIGUSR1 sent by the harness must arrive (counted: the harness sends one
 *   to each process before SIGTERM; a count of 0 means a signal was lost or
 *   stayed blocked);
 * - at SIGTERM each process checks its memory, its handler, mask and
 *   altstack, and the count; the root forwards SIGTERM, waits for the
 *   children and reports their status.
 */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NKIDS 3
#define KID_MIB 8

static volatile sig_atomic_t usr1;
static char altstack[64 * 1024];

static void
on_usr1(int sig)
{
  (void)sig;
  usr1++;
}

static void
setup_signals(void)
{
  struct sigaction sa;
  sigset_t set;
  stack_t ss = { .ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 0 };

  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sa.sa_flags = SA_RESTART | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGUSR2);
  if (sigaction(SIGUSR1, &sa, NULL) < 0)
    zdtm_error("sigaction SIGUSR1: %s", strerror(errno));
  sigemptyset(&set);
  sigaddset(&set, SIGUSR2);
  if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
    zdtm_error("sigprocmask: %s", strerror(errno));
  if (sigaltstack(&ss, NULL) < 0)
    zdtm_error("sigaltstack: %s", strerror(errno));
}

static void
check_signals(const char *who)
{
  struct sigaction sa;
  sigset_t set;
  stack_t ss;

  if (sigaction(SIGUSR1, NULL, &sa) < 0 || sa.sa_handler != on_usr1
      || (sa.sa_flags & (SA_RESTART | SA_ONSTACK)) != (SA_RESTART | SA_ONSTACK)
      || !sigismember(&sa.sa_mask, SIGUSR2))
    zdtm_fail("%s: SIGUSR1 handler changed (handler %p flags %#lx)", who, (void *)sa.sa_handler,
              (unsigned long)sa.sa_flags);
  if (sigaction(SIGTRAP, NULL, &sa) < 0 || sa.sa_handler != SIG_DFL)
    zdtm_fail("%s: SIGTRAP disposition changed", who);
  if (sigprocmask(SIG_BLOCK, NULL, &set) < 0)
    zdtm_fail("%s: sigprocmask: %s", who, strerror(errno));
  for (int s = 1; s < NSIG; s++)
    if (s != SIGKILL && s != SIGSTOP && sigismember(&set, s) != (s == SIGUSR2))
      zdtm_fail("%s: signal %d %s (expected only SIGUSR2 blocked)", who, s,
                sigismember(&set, s) ? "blocked" : "not blocked");
  if (sigaltstack(NULL, &ss) < 0 || ss.ss_sp != altstack || ss.ss_size != sizeof altstack
      || (ss.ss_flags & SS_DISABLE))
    zdtm_fail("%s: alternate signal stack changed", who);
  if (usr1 == 0)
    zdtm_fail("%s: the SIGUSR1 sent before SIGTERM never arrived", who);
}

static uint8_t *
fill(size_t len, uint32_t seed)
{
  uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    zdtm_error("mmap %zu bytes: %s", len, strerror(errno));
  zdtm_fill(p, len, seed, 0);
  return p;
}

static void
check_mem(const char *who, const uint8_t *p, size_t len, uint32_t seed)
{
  size_t off = zdtm_check(p, len, seed, 0);
  if (off != (size_t)-1)
    zdtm_fail("%s: memory byte %zu: expected 0x%02x, got 0x%02x", who, off, zdtm_pattern(seed, off),
              p[off]);
}

static void __attribute__((noreturn)) child(int i)
{
  char who[32];
  size_t len = (size_t)KID_MIB << 20;
  uint8_t *m = fill(len, 100 + i);
  struct timespec ts = { 0, 50 * 1000 * 1000 };

  snprintf(who, sizeof who, "child %d", i);
  /* Asleep in nanosleep nearly all the time. */
  while (!zdtm_stopped())
    nanosleep(&ts, NULL);
  check_mem(who, m, len, 100 + i);
  check_signals(who);
  _exit(zdtm_status());
}

int
main(int argc, char **argv)
{
  const char *mib = getenv("ZDTM_BUSY_MIB");
  size_t total = (size_t)(mib ? atol(mib) : 200) << 20, len;
  pid_t kids[NKIDS];
  uint8_t *m;
  volatile uint64_t work = 0;

  zdtm_init(argc, argv);
  setup_signals();
  len = total > (size_t)(NKIDS * KID_MIB + 8) << 20 ? total - ((size_t)NKIDS * KID_MIB << 20)
                                                    : (size_t)8 << 20;
  m = fill(len, 7);
  for (int i = 0; i < NKIDS; i++)
    {
      kids[i] = fork();
      if (kids[i] < 0)
        zdtm_error("fork: %s", strerror(errno));
      if (kids[i] == 0)
        child(i);
    }
  zdtm_ready();
  /* Busy in user space: the checkpoint finds it between instructions. */
  while (!zdtm_stopped())
    for (int i = 0; i < 100000; i++)
      work += i ^ (work >> 3);
  for (int i = 0; i < NKIDS; i++)
    kill(kids[i], SIGTERM);
  check_mem("root", m, len, 7);
  check_signals("root");
  for (int i = 0; i < NKIDS; i++)
    {
      int st;
      if (waitpid(kids[i], &st, 0) < 0)
        zdtm_fail("root: waitpid %d: %s", kids[i], strerror(errno));
      else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        zdtm_fail("child %d (PID %d) ended with status %#x", i, kids[i], st);
    }
  zdtm_finish();
}
