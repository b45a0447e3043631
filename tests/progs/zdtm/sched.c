/* zdtm-sched: scheduling policy, nice value and uclamp (seed 010) of a
 * process and of one of its threads, read with sched_getattr; their I/O
 * priorities (ioprio_get) and CPU affinities (sched_getaffinity).
 *
 * The process runs SCHED_BATCH at nice 7, the thread SCHED_IDLE; uclamp
 * min/max are lowered where the kernel supports it (CONFIG_UCLAMP_TASK): a
 * NOTE says when it does not and uclamp is then not compared. The main
 * thread's I/O priority is best-effort level 6, the thread's the idle
 * class; the thread runs on the last CPU it may use only, where it may use
 * more than one (a NOTE says when it may not), the main thread on all. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct attr
{
  uint32_t size, policy;
  uint64_t flags;
  int32_t nice;
  uint32_t prio;
  uint64_t runtime, deadline, period;
  uint32_t util_min, util_max;
};
#define FLAG_KEEP_ALL 0x18
#define FLAG_UTIL_CLAMP 0x60

static bool have_uclamp;

#define IOPRIO(class, data) (((class) << 13) | (data))

struct more
{
  long ioprio;
  cpu_set_t cpus;
};

static void
get_more(pid_t tid, struct more *m)
{
  m->ioprio = syscall(SYS_ioprio_get, 1 /* IOPRIO_WHO_PROCESS */, tid);
  CPU_ZERO(&m->cpus);
  if (m->ioprio < 0 || sched_getaffinity(tid, sizeof m->cpus, &m->cpus) < 0)
    zdtm_error("TID %d: ioprio_get or sched_getaffinity: %s", tid, strerror(errno));
}

static void
compare_more(const char *who, pid_t tid, const struct more *want)
{
  struct more got;
  get_more(tid, &got);
  if (got.ioprio != want->ioprio)
    zdtm_fail("%s (TID %d): I/O priority expected %#lx, got %#lx", who, tid, want->ioprio,
              got.ioprio);
  if (!CPU_EQUAL(&got.cpus, &want->cpus))
    zdtm_fail("%s (TID %d): CPU affinity expected %d CPUs, got %d", who, tid,
              CPU_COUNT(&want->cpus), CPU_COUNT(&got.cpus));
}

static struct more thread_more;

static int
get_attr(pid_t tid, struct attr *a)
{
  memset(a, 0, sizeof(*a));
  return syscall(SYS_sched_getattr, tid, a, sizeof(*a), 0);
}

static void
compare(const char *who, pid_t tid, const struct attr *want)
{
  struct attr got;
  if (get_attr(tid, &got) < 0)
    {
      zdtm_fail("%s (TID %d): sched_getattr: %s", who, tid, strerror(errno));
      return;
    }
  if (got.policy != want->policy)
    zdtm_fail("%s (TID %d): policy expected %u, got %u", who, tid, want->policy, got.policy);
  if (got.nice != want->nice)
    zdtm_fail("%s (TID %d): nice expected %d, got %d", who, tid, want->nice, got.nice);
  if (have_uclamp && (got.util_min != want->util_min || got.util_max != want->util_max))
    zdtm_fail("%s (TID %d): uclamp expected %u..%u, got %u..%u", who, tid, want->util_min,
              want->util_max, got.util_min, got.util_max);
}

static struct attr thread_want;
static pid_t thread_tid;
static volatile int thread_up;

static void *
idle_thread(void *arg)
{
  struct sched_param p = { 0 };
  (void)arg;
  thread_tid = gettid();
  if (sched_setscheduler(0, SCHED_IDLE, &p) < 0)
    zdtm_error("thread: SCHED_IDLE: %s", strerror(errno));
  get_attr(0, &thread_want);
  if (syscall(SYS_ioprio_set, 1, 0, IOPRIO(3 /* IDLE */, 0)) < 0)
    zdtm_error("thread: ioprio_set idle: %s", strerror(errno));
  get_more(0, &thread_more);
  if (CPU_COUNT(&thread_more.cpus) > 1)
    {
      cpu_set_t one;
      int last = 0;
      for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &thread_more.cpus))
          last = c;
      CPU_ZERO(&one);
      CPU_SET(last, &one);
      if (sched_setaffinity(0, sizeof one, &one) < 0)
        zdtm_error("thread: sched_setaffinity to CPU %d: %s", last, strerror(errno));
      get_more(0, &thread_more);
    }
  else
    zdtm_note("one CPU only: the thread's affinity is not narrowed");
  thread_up = 1;
  while (!zdtm_stopped())
    {
      struct timespec t = { 0, 20 * 1000 * 1000 };
      nanosleep(&t, NULL);
    }
  compare("thread", thread_tid, &thread_want);
  compare_more("thread", thread_tid, &thread_more);
  return NULL;
}

int
main(int argc, char **argv)
{
  struct attr a, want;
  struct more more;
  pthread_t th;

  zdtm_init(argc, argv);
  memset(&a, 0, sizeof(a));
  a.size = sizeof(a);
  a.policy = SCHED_BATCH;
  a.nice = 7;
  if (syscall(SYS_sched_setattr, 0, &a, 0) < 0)
    zdtm_error("sched_setattr SCHED_BATCH nice 7: %s", strerror(errno));
  memset(&a, 0, sizeof(a));
  a.size = sizeof(a);
  a.flags = FLAG_KEEP_ALL | FLAG_UTIL_CLAMP;
  a.util_min = 0;
  a.util_max = 611;
  if (syscall(SYS_sched_setattr, 0, &a, 0) == 0)
    have_uclamp = true;
  else
    zdtm_note("uclamp not settable here (%s): uclamp values not compared", strerror(errno));
  get_attr(0, &want);
  if (syscall(SYS_ioprio_set, 1, 0, IOPRIO(2 /* BE */, 6)) < 0)
    zdtm_error("ioprio_set best-effort 6: %s", strerror(errno));
  get_more(0, &more);
  if (have_uclamp && want.util_max != 611)
    zdtm_error("uclamp max set to 611 reads back as %u", want.util_max);
  if (pthread_create(&th, NULL, idle_thread, NULL))
    zdtm_error("pthread_create failed");
  while (!thread_up)
    usleep(1000);

  zdtm_ready();
  zdtm_wait();

  compare("main thread", getpid(), &want);
  compare_more("main thread", getpid(), &more);
  pthread_join(th, NULL);
  zdtm_finish();
}
