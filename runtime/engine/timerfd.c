/* crest: timerfd descriptors (docs/engine.md, "Event descriptors"): clock,
 * interval, time left, absolute or relative (settime flags), expirations
 * not yet read (ticks), status flags. */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include "dump-int.h"
#include "engine-int.h"
#include "files.h"
#include "restore-int.h"
#include "image.h"
#include "util.h"

#ifndef TFD_TIMER_CANCEL_ON_SET
#define TFD_TIMER_CANCEL_ON_SET (1 << 1)
#endif
#ifndef TFD_IOC_SET_TICKS
#define TFD_IOC_SET_TICKS _IOW('T', 0, uint64_t)
#endif
#define NSEC 1000000000LL

static bool
clock_ok(int64_t id)
{
  return id == CLOCK_REALTIME || id == CLOCK_MONOTONIC || id == CLOCK_BOOTTIME
         || id == CLOCK_REALTIME_ALARM || id == CLOCK_BOOTTIME_ALARM;
}

/* "KEY (SEC, NSEC)" in INFO. */
static int
pair(const char *info, const char *key, int64_t out[2])
{
  const char *s = strstr(info, key);
  unsigned long long a, b;
  if (!s || sscanf(s + strlen(key), " (%llu, %llu)", &a, &b) != 2 || a > INT64_MAX
      || b >= (unsigned long long)NSEC)
    return -1;
  out[0] = (int64_t)a, out[1] = (int64_t)b;
  return 0;
}

static int
timerfd_dump(pid_t pid, int fd, struct evfd *ev, crest_error_t *err)
{
  cleanup_free char *info = NULL;
  const char *s, *t;
  struct timespec now;
  unsigned int fl;
  /* The clock is read before the time left, so an absolute expiry comes
     out no later than the real one. */
  if (evfd_fdinfo(pid, fd, &info, err) < 0)
    return -1;
  if (!(s = strstr(info, "clockid:")) || !(t = strstr(info, "ticks:"))
      || !strstr(info, "settime flags:"))
    return crest_error_make(err, EIO, "fdinfo shows no timerfd state");
  ev->clockid = (int)strtol(s + 8, NULL, 10);
  ev->ticks = strtoull(t + 6, NULL, 10);
  if (!clock_ok(ev->clockid) || clock_gettime(ev->clockid, &now) < 0)
    return crest_error_make(err, ENOTSUP, "a timerfd on clock %d, which crest does not know",
                            ev->clockid);
  free(info), info = NULL;
  if (evfd_fdinfo(pid, fd, &info, err) < 0)
    return -1;
  if (!(s = strstr(info, "settime flags:")) || sscanf(s + 14, " %o", &fl) != 1
      || !(t = strstr(info, "ticks:")) || pair(info, "it_value:", ev->value) < 0
      || pair(info, "it_interval:", ev->interval) < 0)
    return crest_error_make(err, EIO, "fdinfo shows no timerfd value");
  ev->ticks = strtoull(t + 6, NULL, 10);
  if (fl & ~(unsigned)(TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET))
    return crest_error_make(err, ENOTSUP, "timerfd settime flags 0%o are unknown to crest", fl);
  ev->settime_flags = (int)fl;
  /* A pending expiration and a cancellation by a clock change look the
     same in fdinfo (ticks), and a read answers them differently. */
  if ((fl & TFD_TIMER_CANCEL_ON_SET) && ev->ticks)
    return crest_error_make(err, ENOTSUP,
                            "a TFD_TIMER_CANCEL_ON_SET timerfd with %" PRIu64
                            " unread expiration(s), which may be a cancellation crest cannot "
                            "tell apart",
                            ev->ticks);
  /* An interval timer that expired is re-armed only at the next read: no
     time left shows, and it runs again one interval later. */
  if (!ev->value[0] && !ev->value[1] && (ev->interval[0] || ev->interval[1]))
    memcpy(ev->value, ev->interval, sizeof ev->value);
  if ((fl & TFD_TIMER_ABSTIME) && (ev->value[0] || ev->value[1]))
    {
      ev->value[0] += now.tv_sec, ev->value[1] += now.tv_nsec;
      if (ev->value[1] >= NSEC)
        ev->value[0]++, ev->value[1] -= NSEC;
    }
  return 0;
}

static void
timerfd_put(yajl_gen g, const struct evfd *ev)
{
  jput_int(g, "clockid", ev->clockid);
  jput_int(g, "settime_flags", ev->settime_flags);
  jput_u64(g, "ticks", ev->ticks);
  jput_int(g, "value_sec", ev->value[0]);
  jput_int(g, "value_nsec", ev->value[1]);
  jput_int(g, "interval_sec", ev->interval[0]);
  jput_int(g, "interval_nsec", ev->interval[1]);
}

static int
timerfd_parse(yajl_val v, struct evfd *ev, crest_error_t *err)
{
  int64_t id, fl;
  if (jget_i64(v, "clockid", &id, err) < 0 || jget_i64(v, "settime_flags", &fl, err) < 0
      || jget_u64(v, "ticks", &ev->ticks, err) < 0
      || jget_i64(v, "value_sec", &ev->value[0], err) < 0
      || jget_i64(v, "value_nsec", &ev->value[1], err) < 0
      || jget_i64(v, "interval_sec", &ev->interval[0], err) < 0
      || jget_i64(v, "interval_nsec", &ev->interval[1], err) < 0)
    return -1;
  if (!clock_ok(id) || fl < 0 || fl > (TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET)
      || ev->value[0] < 0 || ev->value[1] < 0 || ev->value[1] >= NSEC || ev->interval[0] < 0
      || ev->interval[1] < 0 || ev->interval[1] >= NSEC)
    return crest_error_make(err, EINVAL, "timerfd clock, flags or times out of range");
  ev->clockid = (int)id, ev->settime_flags = (int)fl;
  return 0;
}

static int
timerfd_open(const struct evfd *ev, int flags, crest_error_t *err)
{
  struct itimerspec its;
  int fd = timerfd_create(ev->clockid, TFD_CLOEXEC | (flags & O_NONBLOCK));
  if (fd < 0)
    return crest_error_errno(err, "restore: timerfd_create on clock %d", ev->clockid);
  its.it_value.tv_sec = ev->value[0], its.it_value.tv_nsec = ev->value[1];
  its.it_interval.tv_sec = ev->interval[0], its.it_interval.tv_nsec = ev->interval[1];
  /* Unread expirations last: arming the timer sets them to 0. */
  if (timerfd_settime(fd, ev->settime_flags, &its, NULL) < 0)
    crest_error_errno(err, "restore: timerfd_settime (clock %d, flags 0%o)", ev->clockid,
                      ev->settime_flags);
  else if (ev->ticks && ioctl(fd, TFD_IOC_SET_TICKS, &ev->ticks) < 0)
    crest_error_errno(
        err, "restore: timerfd: set %" PRIu64 " unread expirations (TFD_IOC_SET_TICKS)", ev->ticks);
  else
    return fd;
  close(fd);
  return -1;
}

/* --- the descriptor type (files.h) --- */

static const struct evfd_ops timerfd_ev = {
  .link = "anon_inode:[timerfd]",
  .dump = timerfd_dump,
  .put = timerfd_put,
  .parse = timerfd_parse,
  .open = timerfd_open,
};

const struct fd_ops fd_timerfd_ops = {
  .type = "timerfd",
  .ev = &timerfd_ev,
  EVFD_FD_OPS,
};
