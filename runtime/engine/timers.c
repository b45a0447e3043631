/* crest: POSIX timers (timer_create), both directions.
 *
 * Checkpoint: /proc/PID/timers lists each timer's ID, signal and value
 * (sigev_value), notification (signal, none, or a thread) and clock; the
 * time left and the interval come from timer_gettime and the overrun count
 * from timer_getoverrun, injected into the task (timers_query). Restore: a
 * new process hands out timer IDs in creation order from 0 (6.1 as 6.18), so
 * the blob creates timers 0..highest ID in order, deletes those the process
 * did not hold, and arms the others; every ID is proven by the call that
 * uses it (timer_delete, timer_settime or timer_gettime fails on an ID that
 * does not exist). What cannot be restored is refused in one line:
 * docs/engine.md, "Tasks". */
#include <config.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "engine.h"
#include "engine-int.h"
#include "image.h"
#include "util.h"
#include "blob/blob-abi.h"
#include "dump-int.h"
#include "restore-int.h"

#ifndef SIGEV_THREAD_ID
#define SIGEV_THREAD_ID 4
#endif

/* Why a timer on clock CLK of a process cannot be restored, or NULL. SELF
   is the process's PID and TID(K) its thread K's, both as its PID
   namespace shows them (as recorded), NTH its number of threads. The
   kernel shows a CPU-time clock encoded as ~PID << 3 | thread bit (4) |
   type (0 prof, 1 virt, 2 sched; 3 is a clock descriptor), with PID 0 for
   the caller: the process's own clock is -6, the calling thread's -2. A
   clock the process named by its own PID (clock_getcpuclockid) or by one
   of its threads' TIDs (pthread_getcpuclockid) names the same one after a
   restore, which gives every thread its TID back before the timers are
   made: all are given back to timer_create as they are. */
static const char *
clock_refusal(int64_t clk, pid_t self, size_t nth, pid_t (*tid)(const void *p, size_t k),
              const void *p)
{
  int64_t pid;
  if (clk == CLOCK_REALTIME || clk == CLOCK_MONOTONIC || clk == CLOCK_BOOTTIME || clk == CLOCK_TAI)
    return NULL;
  if (clk == CLOCK_REALTIME_ALARM || clk == CLOCK_BOOTTIME_ALARM)
    return "an alarm clock, which needs CAP_WAKE_ALARM";
  if (clk >= 0 || clk < INT32_MIN)
    return "a clock crest does not know";
  if ((clk & 3) == 3)
    return "a clock descriptor";
  pid = ~(clk >> 3);
  if (pid == 0)
    return (clk & 4) && nth > 1
               ? "the CPU-time clock of the thread that created it, which /proc does not name"
               : NULL;
  if (!(clk & 4))
    return pid == self ? NULL : "the CPU-time clock of another process (clock_getcpuclockid)";
  for (size_t k = 0; k < nth; k++)
    if (tid(p, k) == pid)
      return NULL;
  return "the CPU-time clock of a thread of another process";
}

static pid_t
dump_tid(const void *p, size_t k)
{
  return ((const struct dproc *)p)->th[k].itid;
}

static pid_t
restore_tid(const void *p, size_t k)
{
  return ((const struct rproc *)p)->th[k].tid;
}

static int
notify_code(const char *s, size_t n)
{
  if (n == 6 && strncmp(s, "signal", 6) == 0)
    return SIGEV_SIGNAL;
  if (n == 4 && strncmp(s, "none", 4) == 0)
    return SIGEV_NONE;
  if (n == 6 && strncmp(s, "thread", 6) == 0)
    return SIGEV_THREAD;
  return -1;
}

/* One entry of /proc/PID/timers, from its "ID:" line (T) on. */
static int
parse_entry(struct dproc *p, const char *t, struct ptimer *o, crest_error_t *err)
{
  const char *sig = strstr(t, "\nsignal: "), *nt = strstr(t, "\nnotify: ");
  const char *clk = strstr(t, "\nClockID: "), *slash, *dot;
  const char *why;
  long target;
  int code;

  memset(o, 0, sizeof *o);
  o->id = strtol(t + 3, NULL, 10);
  if (!sig || !nt || !clk || !(slash = strchr(nt + 9, '/')) || !(dot = strchr(slash, '.')))
    return crest_error_make(err, EINVAL, "task %d: cannot parse /proc timers (timer %d)", p->pid,
                            o->id);
  o->signo = (int32_t)strtol(sig + 9, NULL, 10);
  o->value = strchr(sig + 9, '/') ? strtoull(strchr(sig + 9, '/') + 1, NULL, 16) : 0;
  o->clock = strtol(clk + 10, NULL, 10);
  code = notify_code(nt + 9, (size_t)(slash - nt - 9));
  target = strtol(dot + 1, NULL, 10);
  o->thread = -1;
  if (code < 0)
    return crest_error_make(err, EINVAL, "task %d: POSIX timer ID %d: unknown notification", p->pid,
                            o->id);
  if (strncmp(slash + 1, "tid", 3) == 0)
    {
      for (size_t k = 0; k < p->nth; k++)
        if (p->th[k].tid == target)
          o->thread = (int32_t)k;
      if (o->thread < 0)
        return crest_error_make(err, ENOTSUP,
                                "task %d: POSIX timer ID %d signals thread %ld, which is not "
                                "one of its threads",
                                p->pid, o->id, target);
      code |= SIGEV_THREAD_ID;
    }
  o->notify = code;
  if (o->id < 0 || o->id >= TIMERS_MAX)
    return crest_error_make(err, ENOTSUP,
                            "task %d: POSIX timer ID %d: IDs from %d on are not restored (a "
                            "restore creates every ID below it)",
                            p->pid, o->id, TIMERS_MAX);
  if ((why = clock_refusal(o->clock, p->ipid, p->nth, dump_tid, p)) != NULL)
    return crest_error_make(err, ENOTSUP,
                            "task %d: POSIX timer ID %d on clock %" PRId64 " (%s) is not restored",
                            p->pid, o->id, o->clock, why);
  return 0;
}

/* Is a signal of P's timer ID pending (SI_TIMER, in the process's queue or
   a thread's) while every thread blocks it? Its number, else 0. */
static int
pending_held(const struct dproc *p, int id)
{
  struct peeksiginfo arg = { 0, 0, 64 };
  uint8_t si[64 * 128];
  for (size_t t = 0; t <= p->nth; t++)
    {
      long n;
      arg.flags = t == p->nth ? PTRACE_PEEKSIGINFO_SHARED : 0;
      n = ptrace(PTRACE_PEEKSIGINFO, t == p->nth ? p->pid : p->th[t].tid, &arg, si);
      for (long k = 0; k < n; k++)
        {
          int32_t f[6];
          int sig;
          bool everywhere = true;
          memcpy(f, si + k * 128, sizeof f);
          sig = f[0];
          /* si_code SI_TIMER (-2), then the timer's ID (si_timerid) */
          if (f[2] != SI_TIMER || f[4] != id || sig < 1 || sig > 64)
            continue;
          for (size_t u = 0; u < p->nth && everywhere; u++)
            everywhere = (p->th[u].sigmask >> (sig - 1)) & 1;
          if (everywhere)
            return sig;
        }
    }
  return 0;
}

/* Read the timers of process P from /proc, then ask the task (INJECT, its
   answers in SCRATCH, 32 bytes) for each one's time left and overrun. */
int
timers_query(struct dproc *p, timers_inject_fn inject, void *ctx, uint64_t scratch,
             crest_error_t *err)
{
  cleanup_free char *path = xasprintf("/proc/%d/timers", p->pid);
  cleanup_free char *t = NULL;
  size_t len, n = 0;

  p->ntimers = 0;
  if (read_file(path, &t, &len, 0, err) < 0)
    return -1;
  for (const char *s = t; (s = strstr(s, "ID: ")) != NULL; s += 4)
    if (s == t || s[-1] == '\n')
      n++;
  if (n == 0)
    return 0;
  if (n > TIMERS_MAX)
    return crest_error_make(err, ENOTSUP, "task %d: %zu POSIX timers, more than %d", p->pid, n,
                            TIMERS_MAX);
  free(p->timers);
  p->timers = xzalloc(n * sizeof *p->timers);
  for (const char *s = t; (s = strstr(s, "ID: ")) != NULL; s += 4)
    {
      struct ptimer *o = &p->timers[p->ntimers];
      long a[6] = { 0 };
      long ret;
      int64_t its[4];
      int sig;
      if (s != t && s[-1] != '\n')
        continue;
      if (parse_entry(p, s, o, err) < 0)
        return -1;
      p->ntimers++;
      a[0] = o->id, a[1] = (long)scratch;
      if (inject(ctx, SYS_timer_gettime, a, &ret, err) < 0)
        return -1;
      if (ret < 0 || vm_read(p->pid, scratch, its, sizeof its, err) < 0)
        return ret < 0
                   ? crest_error_sys(err, (int)-ret, "task %d: timer_gettime(%d)", p->pid, o->id)
                   : -1;
      memcpy(o->it, its, sizeof its);
      a[1] = 0;
      if (inject(ctx, SYS_timer_getoverrun, a, &ret, err) < 0)
        return -1;
      if (ret != 0)
        return crest_error_make(err, ENOTSUP,
                                "task %d: POSIX timer ID %d: an overrun count of %ld "
                                "(timer_getoverrun), which crest cannot restore",
                                p->pid, o->id, ret);
      /* A periodic timer whose signal the program holds pending (blocked
         in every thread: read by sigwaitinfo or a signalfd now and then)
         counts its expirations since in the kernel alone, which the
         signal's overrun gives when it is taken; a restore could only
         queue a copy without them (helper finding, December 2026: 300
         expirations of a 10 ms timer lost). One pending because the tree
         is held by the checkpoint, its handler not blocked, counts only
         the time the tree stands still, which a restore leaves out of
         every relative timer. */
      if ((its[0] || its[1]) && (sig = pending_held(p, o->id)))
        return crest_error_make(err, ENOTSUP,
                                "task %d: POSIX timer ID %d: its signal %d is pending and blocked "
                                "while the timer runs on: the expirations it counts meanwhile "
                                "(its overrun) are the kernel's alone, which crest cannot restore",
                                p->pid, o->id, sig);
    }
  return 0;
}

void
timers_put(const struct dproc *p, yajl_gen g)
{
  if (p->ntimers == 0)
    return;
  jput_key(g, "posix_timers");
  yajl_gen_array_open(g);
  for (size_t i = 0; i < p->ntimers; i++)
    {
      const struct ptimer *o = &p->timers[i];
      yajl_gen_map_open(g);
      jput_int(g, "id", o->id);
      jput_int(g, "clock", o->clock);
      jput_int(g, "notify", o->notify);
      jput_int(g, "signal", o->signo);
      if (o->thread >= 0)
        jput_int(g, "thread", o->thread);
      jput_u64(g, "value", o->value);
      jput_int(g, "interval_sec", o->it[0]);
      jput_int(g, "interval_nsec", o->it[1]);
      jput_int(g, "value_sec", o->it[2]);
      jput_int(g, "value_nsec", o->it[3]);
      yajl_gen_map_close(g);
    }
  yajl_gen_array_close(g);
}

static int
parse_one(yajl_val v, struct rproc *p, struct ptimer *o, crest_error_t *err)
{
  int64_t id, notify, sig, th = -1;
  if (jget_i64(v, "id", &id, err) < 0 || jget_i64(v, "clock", &o->clock, err) < 0
      || jget_i64(v, "notify", &notify, err) < 0 || jget_i64(v, "signal", &sig, err) < 0
      || jget_u64(v, "value", &o->value, err) < 0 || jget_i64(v, "interval_sec", &o->it[0], err) < 0
      || jget_i64(v, "interval_nsec", &o->it[1], err) < 0
      || jget_i64(v, "value_sec", &o->it[2], err) < 0
      || jget_i64(v, "value_nsec", &o->it[3], err) < 0)
    return -1;
  if (has_key(v, "thread") && jget_i64(v, "thread", &th, err) < 0)
    return -1;
  CHECK(id >= 0 && id < TIMERS_MAX && !clock_refusal(o->clock, p->pid, p->nth, restore_tid, p),
        "process %d: timer %lld, clock %lld", p->pid, (long long)id, (long long)o->clock);
  CHECK(notify == SIGEV_SIGNAL || notify == SIGEV_NONE || notify == SIGEV_THREAD
            || notify == (SIGEV_SIGNAL | SIGEV_THREAD_ID),
        "process %d: timer %lld: notification %lld", p->pid, (long long)id, (long long)notify);
  CHECK((notify & SIGEV_THREAD_ID) ? th >= 0 && (uint64_t)th < p->nth : th == -1,
        "process %d: timer %lld: thread %lld", p->pid, (long long)id, (long long)th);
  CHECK(notify == SIGEV_NONE || (sig >= 1 && sig <= 64), "process %d: timer %lld: signal %lld",
        p->pid, (long long)id, (long long)sig);
  for (int k = 0; k < 4; k++)
    CHECK(o->it[k] >= 0 && (k % 2 == 0 || o->it[k] < 1000000000),
          "process %d: timer %lld: time out of range", p->pid, (long long)id);
  o->id = (int32_t)id, o->notify = (int32_t)notify, o->signo = (int32_t)sig;
  o->thread = (int32_t)th;
  return 0;
}

int
timers_parse(yajl_val v, int format, struct rproc *p, crest_error_t *err)
{
  yajl_val *items;
  long n;
  p->ntimers = 0;
  if (!has_key(v, "posix_timers"))
    return 0;
  CHECK(format >= CREST_IMAGE_FORMAT_TIMERS, "process %d: posix_timers in an image of format %d",
        p->pid, format);
  n = jget_array(v, "posix_timers", &items, err);
  CHECK(n > 0 && n <= TIMERS_MAX, "process %d: posix_timers", p->pid);
  p->timers = xzalloc(n * sizeof *p->timers);
  for (long i = 0; i < n; i++)
    {
      if (parse_one(items[i], p, &p->timers[i], err) < 0)
        return -1;
      for (long k = 0; k < i; k++)
        CHECK(p->timers[k].id != p->timers[i].id, "process %d: timer %d twice", p->pid,
              p->timers[i].id);
      p->ntimers++;
    }
  return 0;
}

/* Blob operations bound for P's timers. */
size_t
timers_ops_bound(const struct rproc *p)
{
  int32_t top = -1;
  for (size_t i = 0; i < p->ntimers; i++)
    if (p->timers[i].id > top)
      top = p->timers[i].id;
  return 2 * (size_t)(top + 1) + p->ntimers;
}

/* The blob creates IDs 0..highest in order (a placeholder that notifies
   nobody where the process held none, deleted at once), then arms each. */
void
timers_ops(const struct rproc *p, struct oplist *l, struct bld *b)
{
  int32_t top = -1;
  uint64_t idp, none;
  struct sigevent ev;

  for (size_t i = 0; i < p->ntimers; i++)
    if (p->timers[i].id > top)
      top = p->timers[i].id;
  if (top < 0)
    return;
  idp = bld_alloc(b, 32, 8, NULL); /* a timer ID, or a timer_gettime answer */
  memset(&ev, 0, sizeof ev);
  ev.sigev_notify = SIGEV_NONE;
  none = bld_alloc(b, sizeof ev, 8, &ev);
  for (int32_t id = 0; id <= top; id++)
    {
      const struct ptimer *o = NULL;
      for (size_t i = 0; i < p->ntimers; i++)
        if (p->timers[i].id == id)
          o = &p->timers[i];
      if (!o)
        {
          OPEQ(l, SYS_timer_create, 0, CLOCK_MONOTONIC, none, idp, 0, 0, 0);
          OPEQ(l, SYS_timer_delete, 0, id, 0, 0, 0, 0, 0);
          continue;
        }
      memset(&ev, 0, sizeof ev);
      ev.sigev_notify = o->notify;
      ev.sigev_signo = o->signo;
      ev.sigev_value.sival_ptr = (void *)(uintptr_t)o->value;
      if (o->notify & SIGEV_THREAD_ID)
        ev._sigev_un._tid = p->th[o->thread].tid;
      OPEQ(l, SYS_timer_create, 0, o->clock, bld_alloc(b, sizeof ev, 8, &ev), idp, 0, 0, 0);
    }
  for (size_t i = 0; i < p->ntimers; i++)
    {
      const struct ptimer *o = &p->timers[i];
      if (o->it[2] || o->it[3])
        OPEQ(l, SYS_timer_settime, 0, o->id, 0, bld_alloc(b, sizeof o->it, 8, o->it), 0, 0, 0);
      else
        OPEQ(l, SYS_timer_gettime, 0, o->id, idp, 0, 0, 0, 0);
    }
}
