/* zdtm-itimer: the three interval timers keep their intervals exactly and
 * their remaining values within what the elapsed time allows; the real
 * timer still fires (a short one is armed after restore and must deliver
 * SIGALRM), and the vDSO clock still runs forward. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t alarms;
static void
on_alarm(int s)
{
  (void)s;
  alarms++;
}

static double
tv(struct timeval t)
{
  return t.tv_sec + t.tv_usec / 1e6;
}

int
main(int argc, char **argv)
{
  static const int which[3] = { ITIMER_REAL, ITIMER_VIRTUAL, ITIMER_PROF };
  static const char *names[3] = { "ITIMER_REAL", "ITIMER_VIRTUAL", "ITIMER_PROF" };
  struct itimerval set[3] = {
    { { 500, 250000 }, { 1000, 0 } },
    { { 300, 0 }, { 700, 500000 } },
    { { 200, 125000 }, { 900, 0 } },
  };
  struct timespec t0, t1;

  zdtm_init(argc, argv);
  signal(SIGALRM, on_alarm);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < 3; i++)
    if (setitimer(which[i], &set[i], NULL) < 0)
      zdtm_error("setitimer %s: %s", names[i], strerror(errno));

  zdtm_ready();
  zdtm_wait();

  clock_gettime(CLOCK_MONOTONIC, &t1);
  double elapsed = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
  if (elapsed <= 0)
    zdtm_fail("CLOCK_MONOTONIC went backwards across checkpoint/restore (%.3f s)", elapsed);
  for (int i = 0; i < 3; i++)
    {
      struct itimerval now;
      if (getitimer(which[i], &now) < 0)
        {
          zdtm_fail("getitimer %s: %s", names[i], strerror(errno));
          continue;
        }
      if (now.it_interval.tv_sec != set[i].it_interval.tv_sec
          || now.it_interval.tv_usec != set[i].it_interval.tv_usec)
        zdtm_fail("%s interval: expected %.6f s, got %.6f s", names[i], tv(set[i].it_interval),
                  tv(now.it_interval));
      /* Never more than was set (plus the rounding of CPU-time timers to a
         tick, 10 ms at most); never less than set minus the wall time since
         then (CPU-time timers run slower than the wall clock). */
      double want = tv(set[i].it_value), got = tv(now.it_value);
      if (got > want + 0.01 || got < want - elapsed - 0.5 || got == 0)
        zdtm_fail("%s value: expected between %.3f and %.3f s, got %.6f s", names[i],
                  want - elapsed - 0.5, want + 0.01, got);
    }
  struct itimerval shortt = { { 0, 0 }, { 0, 10000 } };
  setitimer(ITIMER_REAL, &shortt, NULL);
  for (int k = 0; k < 200 && !alarms; k++)
    usleep(5000);
  if (!alarms)
    zdtm_fail("SIGALRM did not arrive within 1 s of a 10 ms ITIMER_REAL armed after restore");
  zdtm_finish();
}
