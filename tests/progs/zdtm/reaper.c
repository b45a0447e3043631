/* zdtm-reaper: a supervisor, as a container's init often is (tini,
 * dumb-init, a Python os.wait() loop, runit): it waits for any child,
 * blocked in wait4(-1), and looks every PID it reaps up among the children
 * it made.
 *
 *   root
 *   +- s: ends with status 0 at SIGTERM
 *   +- r: ends with status 7 at SIGTERM
 *
 * Any PID it reaps that it never made is a failure: until December 2026 a
 * container's init reaped crest's finishing helper ("crest-restoring")
 * just after its restore, and a Python supervisor died of a KeyError. So
 * is a SIGCHLD before SIGTERM, when no child of its has ended (the
 * helper's exit sent one, December 2026: a handler's run for nothing, and
 * rsyslogd's reaped a zombie of the image). At SIGTERM it sends SIGTERM
 * to both and reaps them: each must end with its own status, reaped
 * once. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t chld;
static void
on_chld(int sig)
{
  (void)sig;
  chld++;
}

static pid_t
child(int status)
{
  pid_t p = fork();
  if (p < 0)
    zdtm_error("fork: %s", strerror(errno));
  if (p == 0)
    {
      zdtm_wait();
      _exit(status);
    }
  return p;
}

int
main(int argc, char **argv)
{
  pid_t kid[2];
  const int want[2] = { 0, 7 };
  const char *name[2] = { "s", "r" };
  int reaped[2] = { 0, 0 };
  bool term_sent = false;
  struct sigaction sa;

  zdtm_init(argc, argv);
  /* SIGTERM interrupts the wait (no SA_RESTART): the loop sees the flag. */
  sigaction(SIGTERM, NULL, &sa);
  sa.sa_flags &= ~SA_RESTART;
  sigaction(SIGTERM, &sa, NULL);
  sa.sa_handler = on_chld;
  sigaction(SIGCHLD, &sa, NULL);
  kid[0] = child(want[0]);
  kid[1] = child(want[1]);
  zdtm_ready();
  while (reaped[0] + reaped[1] < 2)
    {
      int st, k;
      pid_t p;
      if (zdtm_stopped() && !term_sent)
        {
          if (chld)
            zdtm_fail("%d SIGCHLD arrived before SIGTERM, when no child of its had ended",
                      (int)chld);
          for (k = 0; k < 2; k++)
            if (!reaped[k])
              kill(kid[k], SIGTERM);
          term_sent = true;
        }
      p = wait4(-1, &st, 0, NULL);
      if (p < 0 && errno == EINTR)
        continue;
      if (p < 0)
        {
          zdtm_fail("wait4: %s, with %d of its 2 children reaped", strerror(errno),
                    reaped[0] + reaped[1]);
          break;
        }
      for (k = 0; k < 2 && p != kid[k]; k++)
        ;
      if (k == 2)
        {
          zdtm_fail("reaped PID %d (status 0x%x), which it never made (its children: %d, %d)", p,
                    st, kid[0], kid[1]);
          continue;
        }
      reaped[k]++;
      if (!term_sent)
        zdtm_fail("child %s (%d) ended before SIGTERM, status 0x%x", name[k], p, st);
      else if (!WIFEXITED(st) || WEXITSTATUS(st) != want[k])
        zdtm_fail("child %s (%d) ended with status 0x%x, not exit %d", name[k], p, st, want[k]);
    }
  zdtm_finish();
}
