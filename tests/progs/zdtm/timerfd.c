/* zdtm-timerfd: timerfd descriptors.
 * - "rel": CLOCK_MONOTONIC, relative, 1000 s left, interval 3.0005 s,
 *   O_NONBLOCK;
 * - "abs": CLOCK_REALTIME, absolute (TFD_TIMER_ABSTIME), 2000 s from the
 *   start, no interval, close-on-exec;
 * - "cancel": CLOCK_REALTIME, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET,
 *   3000 s from the start;
 * - "ticks": CLOCK_BOOTTIME, a one-shot that expired, its unread
 *   expirations set to 5 (TFD_IOC_SET_TICKS), then disarmed;
 * - "off": never armed, settime flags TFD_TIMER_ABSTIME (a disarming
 *   settime with the flag);
 * - "run": CLOCK_MONOTONIC, every 20 ms.
 * After restore: each one's clock and settime flags (fdinfo), status flags
 * and close-on-exec; intervals exactly; "rel" has at most 1000 s left and
 * no less than 1000 s less the time since it was armed; "abs" and "cancel"
 * still expire at the same time of day (within 1 s: the checkpoint computes
 * it from the time left); "ticks" reads 5; "off" is disarmed; "run" fires
 * again (waited for up to 10 s).
 * (A TFD_TIMER_CANCEL_ON_SET timer with an unread expiration, which
 * checkpoint refuses: zdtm-lost timerfd-cancel.) */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <sys/timerfd.h>
#include <unistd.h>

#ifndef TFD_TIMER_CANCEL_ON_SET
#define TFD_TIMER_CANCEL_ON_SET (1 << 1)
#endif
#ifndef TFD_IOC_SET_TICKS
#define TFD_IOC_SET_TICKS _IOW('T', 0, uint64_t)
#endif

static double
now(clockid_t c)
{
  struct timespec t;
  clock_gettime(c, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static int
timer(clockid_t c, int flags, int sflags, time_t sec, long nsec, time_t isec, long insec)
{
  struct itimerspec its = { { isec, insec }, { sec, nsec } };
  int fd = timerfd_create(c, flags);
  if (fd < 0 || timerfd_settime(fd, sflags, &its, NULL) < 0)
    zdtm_error("timerfd on clock %d: %s", (int)c, strerror(errno));
  return fd;
}

/* fdinfo's clock and settime flags, status flags, close-on-exec. */
static void
check_fd(int fd, const char *name, int clock, int sflags, int nonblock, int cloexec)
{
  char p[64], b[1024];
  int ck = -1, fl = -1, n, f;
  FILE *in;
  snprintf(p, sizeof p, "/proc/self/fdinfo/%d", fd);
  if ((in = fopen(p, "r")))
    {
      while (fgets(b, sizeof b, in))
        if (sscanf(b, "clockid: %d", &n) == 1)
          ck = n;
        else if (sscanf(b, "settime flags: %o", &n) == 1)
          fl = n;
      fclose(in);
    }
  if (ck != clock || fl != sflags)
    zdtm_fail("%s: clock %d, settime flags 0%o (expected %d, 0%o)", name, ck, fl, clock, sflags);
  f = fcntl(fd, F_GETFL);
  if (f < 0 || !!(f & O_NONBLOCK) != nonblock)
    zdtm_fail("%s: status flags %#x, O_NONBLOCK expected %d", name, f, nonblock);
  if (!!(fcntl(fd, F_GETFD) & FD_CLOEXEC) != cloexec)
    zdtm_fail("%s: close-on-exec expected %d", name, cloexec);
}

static double
left(int fd, struct itimerspec *its)
{
  if (timerfd_gettime(fd, its) < 0)
    zdtm_fail("timerfd_gettime: %s", strerror(errno));
  return its->it_value.tv_sec + its->it_value.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
  struct itimerspec its;
  struct pollfd pf;
  uint64_t v = 5;
  double t0, wall0, l;
  int rel, abs_, cancel, ticks, off, run;

  zdtm_init(argc, argv);
  t0 = now(CLOCK_MONOTONIC);
  wall0 = now(CLOCK_REALTIME);
  rel = timer(CLOCK_MONOTONIC, TFD_NONBLOCK, 0, 1000, 0, 3, 500000);
  abs_ = timer(CLOCK_REALTIME, TFD_CLOEXEC, TFD_TIMER_ABSTIME, (time_t)wall0 + 2000, 0, 0, 0);
  cancel = timer(CLOCK_REALTIME, 0, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET,
                 (time_t)wall0 + 3000, 0, 0, 0);
  ticks = timer(CLOCK_BOOTTIME, 0, 0, 0, 1000000, 0, 0);
  pf.fd = ticks, pf.events = POLLIN;
  if (poll(&pf, 1, 10000) != 1 || ioctl(ticks, TFD_IOC_SET_TICKS, &v) < 0)
    zdtm_error("expire a timer and set its ticks to 5: %s", strerror(errno));
  off = timer(CLOCK_MONOTONIC, 0, TFD_TIMER_ABSTIME, 0, 0, 0, 0);
  run = timer(CLOCK_MONOTONIC, TFD_NONBLOCK, 0, 0, 20000000, 0, 20000000);

  zdtm_ready();
  zdtm_wait();

  check_fd(rel, "rel", CLOCK_MONOTONIC, 0, 1, 0);
  check_fd(abs_, "abs", CLOCK_REALTIME, TFD_TIMER_ABSTIME, 0, 1);
  check_fd(cancel, "cancel", CLOCK_REALTIME, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, 0, 0);
  check_fd(ticks, "ticks", CLOCK_BOOTTIME, 0, 0, 0);
  check_fd(off, "off", CLOCK_MONOTONIC, TFD_TIMER_ABSTIME, 0, 0);
  l = left(rel, &its);
  if (its.it_interval.tv_sec != 3 || its.it_interval.tv_nsec != 500000)
    zdtm_fail("rel: interval %ld.%09ld (expected 3.000500000)", (long)its.it_interval.tv_sec,
              its.it_interval.tv_nsec);
  if (l > 1000 || l < 1000 - (now(CLOCK_MONOTONIC) - t0) - 0.001)
    zdtm_fail("rel: %.3f s left, expected between %.3f and 1000", l,
              1000 - (now(CLOCK_MONOTONIC) - t0));
  l = left(abs_, &its) + now(CLOCK_REALTIME);
  if (l < (time_t)wall0 + 2000 - 1 || l > (time_t)wall0 + 2000 + 1 || its.it_interval.tv_sec
      || its.it_interval.tv_nsec)
    zdtm_fail("abs: expires at %.3f, expected %ld (absolute), no interval", l, (long)wall0 + 2000);
  l = left(cancel, &its) + now(CLOCK_REALTIME);
  if (l < (time_t)wall0 + 3000 - 1 || l > (time_t)wall0 + 3000 + 1)
    zdtm_fail("cancel: expires at %.3f, expected %ld", l, (long)wall0 + 3000);
  v = 0;
  pf.fd = ticks;
  if (poll(&pf, 1, 0) != 1 || read(ticks, &v, 8) != 8 || v != 5)
    zdtm_fail("ticks: read %" PRIu64 " expirations (expected 5)", v);
  if (left(ticks, &its) != 0 || left(off, &its) != 0 || its.it_interval.tv_sec)
    zdtm_fail("ticks or off: armed after restore");
  pf.fd = run;
  if (read(run, &v, 8) < 0 && errno != EAGAIN)
    zdtm_fail("run: read: %s", strerror(errno));
  if (poll(&pf, 1, 10000) != 1 || read(run, &v, 8) != 8 || v < 1)
    zdtm_fail("run: did not fire within 10 s after restore");
  zdtm_finish();
}
