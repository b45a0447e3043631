/* zdtm-signalfd: signalfd descriptors.
 * - "a": SIGUSR1 and SIGRTMIN+3, O_NONBLOCK; a SIGUSR1 and a SIGRTMIN+3
 *   with value 42 are pending (blocked) at checkpoint;
 * - "b": SIGUSR2 only, close-on-exec, shared with a child (fork).
 * After restore: each one's mask (fdinfo sigmask), status flags and
 * close-on-exec; "a" reads the two pending signals (the value of the
 * queued one), then EAGAIN; "b" reads a SIGUSR2 sent after restore, and
 * the child reads its own through its copy. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t
bit(int sig)
{
  return 1ULL << (sig - 1);
}

static void
check_fd(int fd, const char *name, uint64_t mask, int nonblock, int cloexec)
{
  char p[64], b[256];
  unsigned long long m = 0;
  int f;
  FILE *in;
  snprintf(p, sizeof p, "/proc/self/fdinfo/%d", fd);
  if ((in = fopen(p, "r")))
    {
      while (fgets(b, sizeof b, in))
        sscanf(b, "sigmask: %llx", &m);
      fclose(in);
    }
  if (m != mask)
    zdtm_fail("%s: sigmask %#llx (expected %#" PRIx64 ")", name, m, mask);
  f = fcntl(fd, F_GETFL);
  if (f < 0 || !!(f & O_NONBLOCK) != nonblock)
    zdtm_fail("%s: status flags %#x, O_NONBLOCK expected %d", name, f, nonblock);
  if (!!(fcntl(fd, F_GETFD) & FD_CLOEXEC) != cloexec)
    zdtm_fail("%s: close-on-exec expected %d", name, cloexec);
}

/* Read one signal from FD: its number and value. */
static int
take(int fd, int *value)
{
  struct signalfd_siginfo si;
  if (read(fd, &si, sizeof si) != sizeof si)
    return -1;
  *value = si.ssi_int;
  return si.ssi_signo;
}

int
main(int argc, char **argv)
{
  sigset_t sa, sb, all;
  union sigval val = { .sival_int = 42 };
  int a, b, s, v, st;
  pid_t kid;

  zdtm_init(argc, argv);
  sigemptyset(&sa);
  sigaddset(&sa, SIGUSR1);
  sigaddset(&sa, SIGRTMIN + 3);
  sigemptyset(&sb);
  sigaddset(&sb, SIGUSR2);
  sigemptyset(&all);
  sigaddset(&all, SIGUSR1);
  sigaddset(&all, SIGUSR2);
  sigaddset(&all, SIGRTMIN + 3);
  if (sigprocmask(SIG_BLOCK, &all, NULL) < 0)
    zdtm_error("sigprocmask: %s", strerror(errno));
  a = signalfd(-1, &sa, SFD_NONBLOCK);
  b = signalfd(-1, &sb, SFD_CLOEXEC);
  if (a < 0 || b < 0)
    zdtm_error("signalfd: %s", strerror(errno));
  kid = fork();
  if (kid < 0)
    zdtm_error("fork: %s", strerror(errno));
  if (kid == 0)
    {
      zdtm_wait();
      kill(getpid(), SIGUSR2);
      if ((s = take(b, &v)) != SIGUSR2)
        zdtm_fail("child: read %d from its copy of b (expected SIGUSR2)", s);
      _exit(zdtm_status());
    }
  if (kill(getpid(), SIGUSR1) < 0 || sigqueue(getpid(), SIGRTMIN + 3, val) < 0)
    zdtm_error("send the pending signals: %s", strerror(errno));

  zdtm_ready();
  zdtm_wait();

  check_fd(a, "a", bit(SIGUSR1) | bit(SIGRTMIN + 3), 1, 0);
  check_fd(b, "b", bit(SIGUSR2), 0, 1);
  if ((s = take(a, &v)) != SIGUSR1)
    zdtm_fail("a: first read %d (expected SIGUSR1, pending at checkpoint)", s);
  if ((s = take(a, &v)) != SIGRTMIN + 3 || v != 42)
    zdtm_fail("a: second read %d value %d (expected SIGRTMIN+3, 42)", s, v);
  if (take(a, &v) != -1 || errno != EAGAIN)
    zdtm_fail("a: a third read did not fail with EAGAIN");
  kill(getpid(), SIGUSR2);
  if ((s = take(b, &v)) != SIGUSR2)
    zdtm_fail("b: read %d (expected SIGUSR2)", s);
  kill(kid, SIGTERM);
  if (waitpid(kid, &st, 0) != kid || st != 0)
    zdtm_fail("child ended with status %#x", st);
  zdtm_finish();
}
