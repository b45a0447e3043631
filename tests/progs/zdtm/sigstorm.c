/* zdtm-sigstorm: signals that arrive while the checkpoint works on the task.
 *
 *   zdtm-sigstorm [READY [RESULT [PROGRESS]]]
 *
 * The root arms ITIMER_REAL every millisecond (a SIGALRM handler counts
 * them) and, in a loop, forks a child that spins for 0 to 140 microseconds
 * and exits with a code derived from its sequence number. The root keeps
 * SIGCHLD blocked but while it waits for it in sigsuspend(), and only
 * reaps a child once its SIGCHLD has been handled. So whenever a checkpoint
 * seizes the tree, a SIGALRM is due within a millisecond, and a child is
 * running, exiting or a zombie whose SIGCHLD is pending or handled.
 *
 * Checked at the end (after any number of checkpoints, with or without
 * --leave-running, and restores):
 * - every child was reaped with its own exit code, one at a time;
 * - exactly one SIGCHLD was handled per child: a lost one stalls the loop
 *   and is reported, a duplicate makes the count exceed the children;
 * - SIGALRMs kept arriving and the timer is still armed at 1 ms.
 * PROGRESS (optional) gets "children alarms\n" rewritten every 64 children,
 * so that a harness can see the loop go on after a restore.
 *
 * With a fourth argument "nowait", SIGCHLD is ignored instead and a child
 * that sleeps 0 to 80 us is forked every 50 us without waiting: the kernel reaps each as it exits
 * (a checkpoint meets children that vanish between the walk and the
 * seize), and the root checks that wait() never finds one. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t alarms, chld_count;

static void
on_alrm(int sig)
{
  (void)sig;
  alarms++;
}

static void
on_chld(int sig)
{
  (void)sig;
  chld_count++;
}

static long
now_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

static void
handler(int sig, void (*fn)(int))
{
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = fn;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(sig, &sa, NULL) < 0)
    zdtm_error("sigaction %d: %s", sig, strerror(errno));
}

static void
progress(int fd, long children)
{
  char buf[64];
  int n;
  if (fd < 0)
    return;
  n = snprintf(buf, sizeof buf, "%ld %ld\n", children, (long)alarms);
  if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)n, 0) != n)
    zdtm_fail("write progress: %s", strerror(errno));
}

int
main(int argc, char **argv)
{
  struct itimerval it = { { 0, 1000 }, { 0, 1000 } };
  sigset_t block, wait_mask;
  long seq = 0;
  int fd = -1;
  bool nowait = false;

  zdtm_init(argc, argv);
  if (argc > 3 && (fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
    zdtm_error("open %s: %s", argv[3], strerror(errno));
  handler(SIGALRM, on_alrm);
  if (argc > 4 && strcmp(argv[4], "nowait") == 0)
    nowait = true;
  if (nowait)
    signal(SIGCHLD, SIG_IGN);
  else
    handler(SIGCHLD, on_chld);
  sigemptyset(&block);
  sigaddset(&block, SIGCHLD);
  if (sigprocmask(SIG_BLOCK, &block, &wait_mask) < 0)
    zdtm_error("sigprocmask: %s", strerror(errno));
  sigdelset(&wait_mask, SIGCHLD);
  if (setitimer(ITIMER_REAL, &it, NULL) < 0)
    zdtm_error("setitimer: %s", strerror(errno));
  zdtm_ready();

  while (!zdtm_stopped())
    {
      long before = chld_count, deadline;
      int code = (int)(seq % 100), st;
      pid_t child = fork(), r;

      if (child < 0)
        {
          zdtm_fail("fork of child %ld: %s", seq, strerror(errno));
          break;
        }
      if (child == 0)
        {
          long until = now_us() + (seq % 8) * 20;
          struct timespec ts = { 0, (seq % 5) * 20000 };
          if (nowait)
            nanosleep(&ts, NULL); /* asleep, like most processes */
          else
            while (now_us() < until)
              ;
          _exit(code);
        }
      if (nowait)
        {
          /* Children overlap (one every 50 us, each living up to 140 us),
             and the kernel reaps them: wait() never finds one. */
          struct timespec ts = { 0, 50000 };
          nanosleep(&ts, NULL);
          r = waitpid(-1, &st, WNOHANG);
          if (r > 0)
            zdtm_fail("child %ld: waitpid found PID %d with SIGCHLD ignored", seq, (int)r);
          seq++;
          chld_count = (sig_atomic_t)seq;
          if (seq % 64 == 0)
            progress(fd, seq);
          if (zdtm_failed())
            break;
          continue;
        }
      /* The SIGCHLD of this child, and only then reap it. A SIGTERM ends
         the wait but not before the child's signal has come. */
      deadline = 0;
      while (chld_count == before)
        {
          sigsuspend(&wait_mask);
          if (zdtm_stopped() && !deadline)
            deadline = now_us() + 3000000L;
          if (deadline && now_us() > deadline)
            break;
        }
      if (chld_count == before)
        {
          r = waitpid(child, &st, WNOHANG);
          zdtm_fail("child %ld (PID %d) %s but its SIGCHLD never came", seq, (int)child,
                    r == child ? "exited" : "did not exit");
          break;
        }
      if (chld_count != before + 1)
        zdtm_fail("child %ld: %ld SIGCHLD instead of 1", seq, (long)(chld_count - before));
      r = waitpid(-1, &st, 0);
      if (r != child)
        zdtm_fail("child %ld: waitpid gave PID %d, expected %d", seq, (int)r, (int)child);
      else if (!WIFEXITED(st) || WEXITSTATUS(st) != code)
        zdtm_fail("child %ld (PID %d): status %#x, expected exit %d", seq, (int)child, st, code);
      seq++;
      if (seq % 64 == 0)
        progress(fd, seq);
      if (zdtm_failed())
        break;
    }

  if (nowait)
    {
      struct sigaction sa;
      if (sigaction(SIGCHLD, NULL, &sa) < 0 || sa.sa_handler != SIG_IGN)
        zdtm_fail("SIGCHLD is no longer ignored");
    }
  if (getitimer(ITIMER_REAL, &it) < 0)
    zdtm_fail("getitimer: %s", strerror(errno));
  else if (it.it_interval.tv_sec != 0 || it.it_interval.tv_usec != 1000)
    zdtm_fail("ITIMER_REAL interval expected 1000 us, got %ld.%06ld s", (long)it.it_interval.tv_sec,
              (long)it.it_interval.tv_usec);
  if (chld_count != seq && !zdtm_failed())
    zdtm_fail("%ld SIGCHLD handled for %ld children", (long)chld_count, seq);
  if (seq == 0 || alarms == 0)
    zdtm_fail("no progress: %ld children, %ld alarms", seq, (long)alarms);
  progress(fd, seq);
  zdtm_finish();
}
