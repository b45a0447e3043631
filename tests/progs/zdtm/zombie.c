/* zdtm-zombie: children that have exited and were not waited for.
 *
 *   root
 *   +- P (a SIGCHLD handler counts the signals it gets)
 *      +- z1: leader of its own process group, exits with status 42
 *      +- m:  alive, a member of z1's group (which only the zombie keeps)
 *      +- z2: killed by SIGUSR1 (its default action, no core dump)
 *
 * P, not the root, is the parent: in a container the root is the init, to
 * which the restore's finishing helper adds a SIGCHLD of its own
 * (docs/engine.md).
 *
 * Before READY both z1 and z2 have exited and are zombies (waitid with
 * WNOWAIT). After restore: both are still zombies with their PIDs, names and
 * groups, m is still in z1's group, no SIGCHLD arrived that had not
 * arrived before, and waitpid() reports exit status 42 for z1 and death by
 * SIGUSR1 without a core dump for z2. The root forwards SIGTERM to P, P to
 * m, which checks its own IDs and exits 0. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t chld_count;

static void
on_chld(int sig)
{
  (void)sig;
  chld_count++;
}

/* The state letter of /proc/PID/stat, or '?'. */
static char
state_of(pid_t pid)
{
  char path[64], buf[512], *q;
  FILE *f;
  size_t n;
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  f = fopen(path, "re");
  if (!f)
    return '?';
  n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  q = strrchr(buf, ')');
  return q && q[1] == ' ' ? q[2] : '?';
}

/* /proc/PID/comm without its newline, into BUF. */
static void
comm_of(pid_t pid, char *buf, size_t len)
{
  char path[64];
  FILE *f;
  snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
  buf[0] = 0;
  f = fopen(path, "re");
  if (!f)
    return;
  if (!fgets(buf, (int)len, f))
    buf[0] = 0;
  fclose(f);
  buf[strcspn(buf, "\n")] = 0;
}

static void
sleep_ms(long ms)
{
  struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
    ;
}

static void
member(pid_t root, pid_t leader, int ready_fd)
{
  if (setpgid(0, leader) < 0 && getpgid(0) != leader)
    zdtm_error("m: join group %d: %s", leader, strerror(errno));
  if (write(ready_fd, "m", 1) != 1)
    zdtm_error("m: report ready: %s", strerror(errno));
  close(ready_fd);
  zdtm_wait();
  if (getppid() != root)
    zdtm_fail("m: parent expected %d, got %d", root, getppid());
  if (getpgid(0) != leader)
    zdtm_fail("m: process group expected %d (the zombie's), got %d", leader, getpgid(0));
  _exit(zdtm_status());
}

/* P: the parent of the zombies. */
static void
parent(int up_fd)
{
  int go[2], ready[2], st, chld_before;
  pid_t root, z1, z2, m;
  struct sigaction sa;
  siginfo_t si;
  char c, comm1[32], comm2[32], now[32];

  root = getpid(); /* m's parent */
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_chld;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGCHLD, &sa, NULL) < 0)
    zdtm_error("sigaction SIGCHLD: %s", strerror(errno));
  if (pipe(go) < 0 || pipe(ready) < 0)
    zdtm_error("pipe: %s", strerror(errno));

  z1 = fork();
  if (z1 < 0)
    zdtm_error("fork z1: %s", strerror(errno));
  if (z1 == 0)
    {
      setpgid(0, 0);
      close(go[1]);
      while (read(go[0], &c, 1) < 0 && errno == EINTR)
        ;
      _exit(42);
    }
  if (setpgid(z1, z1) < 0 && getpgid(z1) != z1)
    zdtm_error("setpgid z1: %s", strerror(errno));

  m = fork();
  if (m < 0)
    zdtm_error("fork m: %s", strerror(errno));
  if (m == 0)
    {
      close(go[0]), close(go[1]), close(ready[0]), close(up_fd);
      member(root, z1, ready[1]);
    }
  close(ready[1]);
  if (read(ready[0], &c, 1) != 1)
    zdtm_error("m never became ready");
  close(ready[0]);

  z2 = fork();
  if (z2 < 0)
    zdtm_error("fork z2: %s", strerror(errno));
  if (z2 == 0)
    {
      close(go[0]), close(go[1]);
      signal(SIGUSR1, SIG_DFL);
      for (;;)
        pause();
    }
  close(go[0]);
  close(go[1]); /* z1 exits */
  kill(z2, SIGUSR1);
  if (waitid(P_PID, z1, &si, WEXITED | WNOWAIT) < 0
      || waitid(P_PID, z2, &si, WEXITED | WNOWAIT) < 0)
    zdtm_error("waitid WNOWAIT: %s", strerror(errno));
  sleep_ms(100); /* both SIGCHLDs handled */
  chld_before = chld_count;
  if (state_of(z1) != 'Z' || state_of(z2) != 'Z')
    zdtm_error("z1 (%c) and z2 (%c) are not zombies", state_of(z1), state_of(z2));

  comm_of(z1, comm1, sizeof comm1);
  comm_of(z2, comm2, sizeof comm2);

  if (write(up_fd, "P", 1) != 1)
    zdtm_error("report ready: %s", strerror(errno));
  close(up_fd);
  zdtm_wait();

  comm_of(z1, now, sizeof now);
  if (strcmp(now, comm1) != 0)
    zdtm_fail("z1 (PID %d): comm expected %s, got %s", z1, comm1, now);
  comm_of(z2, now, sizeof now);
  if (strcmp(now, comm2) != 0)
    zdtm_fail("z2 (PID %d): comm expected %s, got %s", z2, comm2, now);

  if (chld_count != chld_before)
    zdtm_fail("SIGCHLD handled %d times before checkpoint, %d after restore", chld_before,
              (int)chld_count);
  if (state_of(z1) != 'Z')
    zdtm_fail("z1 (PID %d): state expected Z, got %c", z1, state_of(z1));
  if (state_of(z2) != 'Z')
    zdtm_fail("z2 (PID %d): state expected Z, got %c", z2, state_of(z2));
  if (getpgid(z1) != z1)
    zdtm_fail("z1 (PID %d): process group expected %d, got %d", z1, z1, getpgid(z1));
  if (getpgid(z2) != getpgid(0))
    zdtm_fail("z2 (PID %d): process group expected %d, got %d", z2, getpgid(0), getpgid(z2));
  if (getpgid(m) != z1)
    zdtm_fail("m (PID %d): process group expected %d, got %d", m, z1, getpgid(m));
  if (waitpid(z1, &st, WNOHANG) != z1)
    zdtm_fail("z1 (PID %d): waitpid did not find it exited: %s", z1, strerror(errno));
  else if (!WIFEXITED(st) || WEXITSTATUS(st) != 42)
    zdtm_fail("z1 (PID %d): status expected exit 42 (0x2a00), got 0x%x", z1, st);
  if (waitpid(z2, &st, WNOHANG) != z2)
    zdtm_fail("z2 (PID %d): waitpid did not find it exited: %s", z2, strerror(errno));
  else if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGUSR1 || WCOREDUMP(st))
    zdtm_fail("z2 (PID %d): status expected SIGUSR1 without core (0x%x), got 0x%x", z2, SIGUSR1,
              st);
  kill(m, SIGTERM);
  if (waitpid(m, &st, 0) != m)
    zdtm_fail("m (PID %d): waitpid: %s", m, strerror(errno));
  else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    zdtm_fail("m (PID %d): ended with status 0x%x", m, st);
  _exit(zdtm_status());
}

int
main(int argc, char **argv)
{
  int up[2], st;
  pid_t p;
  char c;

  zdtm_init(argc, argv);
  if (pipe(up) < 0)
    zdtm_error("pipe: %s", strerror(errno));
  p = fork();
  if (p < 0)
    zdtm_error("fork: %s", strerror(errno));
  if (p == 0)
    {
      close(up[0]);
      parent(up[1]);
    }
  close(up[1]);
  if (read(up[0], &c, 1) != 1)
    {
      waitpid(p, &st, 0);
      exit(2); /* P wrote its ERROR line */
    }
  close(up[0]);
  zdtm_ready();
  zdtm_wait();
  kill(p, SIGTERM);
  if (waitpid(p, &st, 0) != p)
    zdtm_fail("P (PID %d): waitpid: %s", p, strerror(errno));
  else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    zdtm_fail("P (PID %d): ended with status 0x%x", p, st);
  zdtm_finish();
}
