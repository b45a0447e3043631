/* zdtm-pidfd: pidfds of the process's children (pidfd_open and
 * CLONE_PIDFD) come back naming the same processes (fdinfo's Pid), at the
 * same numbers, with their status flags (PIDFD_NONBLOCK) and close-on-exec
 * flags; a dup shares its file with the original (F_SETFL on one shows on
 * the other); a pidfd of a zombie child still collects its exit status
 * (waitid P_PIDFD); a signal sent through a pidfd reaches its child, whose
 * exit makes that pidfd readable. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

static pid_t
child_sleeping(void)
{
  pid_t c = fork();
  if (c < 0)
    zdtm_error("fork: %s", strerror(errno));
  if (c == 0)
    {
      signal(SIGTERM, SIG_DFL);
      for (;;)
        pause();
    }
  return c;
}

static int
pidfd_of(pid_t pid, unsigned flags)
{
  int fd = (int)syscall(SYS_pidfd_open, pid, flags);
  if (fd < 0)
    zdtm_error("pidfd_open %d: %s", (int)pid, strerror(errno));
  return fd;
}

static long
fdinfo_pid(int fd)
{
  char path[64], line[128];
  long pid = -2;
  FILE *f;
  snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
  if (!(f = fopen(path, "r")))
    return -3;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "Pid:", 4) == 0)
      pid = strtol(line + 4, NULL, 10);
  fclose(f);
  return pid;
}

static void
expect(int fd, pid_t pid, int nonblock, int cloexec)
{
  long got = fdinfo_pid(fd);
  int fl = fcntl(fd, F_GETFL), fdf = fcntl(fd, F_GETFD);
  if (got != pid)
    zdtm_fail("fd %d: a pidfd of %ld, expected %d", fd, got, (int)pid);
  if (fl < 0 || !!(fl & O_NONBLOCK) != nonblock)
    zdtm_fail("fd %d: O_NONBLOCK %s, expected %s", fd,
              fl < 0            ? "?"
              : fl & O_NONBLOCK ? "on"
                                : "off",
              nonblock ? "on" : "off");
  if (fdf < 0 || !!(fdf & FD_CLOEXEC) != cloexec)
    zdtm_fail("fd %d: FD_CLOEXEC %s, expected %s", fd,
              fdf < 0 ? "?"
              : fdf   ? "on"
                      : "off",
              cloexec ? "on" : "off");
}

int
main(int argc, char **argv)
{
  pid_t a, b, z;
  int fa, fb, fz, fdup = 40;
  siginfo_t si;
  struct pollfd pf;

  zdtm_init(argc, argv);
  a = child_sleeping();
  b = child_sleeping();
  z = fork();
  if (z == 0)
    _exit(7);
  fa = pidfd_of(a, 0);
  fb = pidfd_of(b, O_NONBLOCK /* PIDFD_NONBLOCK */);
  if (fcntl(fb, F_SETFD, 0) < 0)
    zdtm_error("F_SETFD: %s", strerror(errno));
  fz = pidfd_of(z, 0);
  if (dup2(fa, fdup) != fdup)
    zdtm_error("dup2: %s", strerror(errno));
  /* z is a zombie from here on (not waited for). */
  memset(&si, 0, sizeof si);
  if (waitid(P_PID, z, &si, WEXITED | WNOWAIT) < 0)
    zdtm_error("waitid: %s", strerror(errno));

  zdtm_ready();
  zdtm_wait();

  expect(fa, a, 0, 1);
  expect(fb, b, 1, 0);
  expect(fz, z, 0, 1);
  expect(fdup, a, 0, 0);
  /* fa and its dup are one file. */
  if (fcntl(fa, F_SETFL, O_NONBLOCK) < 0 || !(fcntl(fdup, F_GETFL) & O_NONBLOCK))
    zdtm_fail("fd %d and its dup %d are no longer one file", fa, fdup);
  /* The zombie's status through its pidfd. */
  memset(&si, 0, sizeof si);
  if (waitid(P_PIDFD, fz, &si, WEXITED | WNOHANG) < 0)
    zdtm_fail("waitid P_PIDFD on the zombie: %s", strerror(errno));
  else if (si.si_pid != z || si.si_code != CLD_EXITED || si.si_status != 7)
    zdtm_fail("waitid P_PIDFD: pid %d code %d status %d, expected %d exited 7", (int)si.si_pid,
              si.si_code, si.si_status, (int)z);
  /* A signal through fb reaches b; b's exit makes fb readable. */
  if (syscall(SYS_pidfd_send_signal, fb, SIGTERM, NULL, 0) < 0)
    zdtm_fail("pidfd_send_signal: %s", strerror(errno));
  pf.fd = fb, pf.events = POLLIN;
  if (poll(&pf, 1, 5000) != 1)
    zdtm_fail("the pidfd of the child sent SIGTERM did not become readable in 5 s");
  if (waitpid(b, NULL, 0) != b)
    zdtm_fail("waitpid %d: %s", (int)b, strerror(errno));
  kill(a, SIGKILL);
  waitpid(a, NULL, 0);
  zdtm_finish();
}
