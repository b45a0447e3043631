/* zdtm-posix-timers: POSIX timers (timer_create) keep their IDs (with a gap
 * where one was deleted), clocks, notification (a signal with its value, a
 * signal to one thread, none), intervals, and time left within what the
 * elapsed time allows; /proc/self/timers reads the same after restore; the
 * periodic ones go on firing, each signal carrying its timer's ID and value
 * (and the thread-directed one reaching its thread). */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SIG_PERIODIC (SIGRTMIN + 1)
#define SIG_THREAD (SIGRTMIN + 2)

static timer_t t_mono, t_real, t_boot, t_thread, t_cpu;
static int marker;
static volatile pid_t worker_tid;
static volatile sig_atomic_t real_n, real_bad, thread_n, thread_bad;

static void
on_signal(int s, siginfo_t *si, void *uc)
{
  (void)uc;
  if (s == SIG_PERIODIC)
    {
      real_n++;
      if (si->si_code != SI_TIMER || si->si_value.sival_ptr != &marker
          || si->si_timerid != (int)(intptr_t)t_real)
        real_bad++;
    }
  else if (s == SIG_THREAD)
    {
      thread_n++;
      if (si->si_code != SI_TIMER || si->si_value.sival_int != 4242
          || (pid_t)syscall(SYS_gettid) != worker_tid)
        thread_bad++;
    }
}

static void *
worker(void *arg)
{
  sigset_t s;
  (void)arg;
  worker_tid = (pid_t)syscall(SYS_gettid);
  sigemptyset(&s);
  sigaddset(&s, SIG_THREAD);
  pthread_sigmask(SIG_UNBLOCK, &s, NULL);
  for (;;)
    pause();
  return NULL;
}

static timer_t
make(clockid_t clk, int notify, int sig, void *value, int tid)
{
  struct sigevent ev;
  timer_t t;
  memset(&ev, 0, sizeof ev);
  ev.sigev_notify = notify;
  ev.sigev_signo = sig;
  ev.sigev_value.sival_ptr = value;
  if (notify & SIGEV_THREAD_ID)
    ev._sigev_un._tid = tid;
  if (timer_create(clk, &ev, &t) < 0)
    zdtm_error("timer_create (clock %d): %s", (int)clk, strerror(errno));
  return t;
}

static void
arm(timer_t t, time_t isec, long insec, time_t vsec, long vnsec)
{
  struct itimerspec it = { { isec, insec }, { vsec, vnsec } };
  if (timer_settime(t, 0, &it, NULL) < 0)
    zdtm_error("timer_settime: %s", strerror(errno));
}

/* /proc/self/timers, its entries sorted (the kernel lists them in no set
   order). */
static char *
timers_text(void)
{
  static char buf[8192];
  char *ent[64];
  int n = 0;
  size_t len = 0;
  FILE *f = fopen("/proc/self/timers", "r");
  char line[256], *out;
  if (!f)
    zdtm_error("/proc/self/timers: %s", strerror(errno));
  while (fgets(line, sizeof line, f) && len + strlen(line) < sizeof buf - 1)
    {
      if (strncmp(line, "ID:", 3) == 0 && n < 64)
        ent[n++] = buf + len;
      memcpy(buf + len, line, strlen(line) + 1);
      len += strlen(line);
    }
  fclose(f);
  out = calloc(1, sizeof buf + 64);
  for (int k = 0; k < n; k++)
    {
      int best = -1;
      for (int j = 0; j < n; j++)
        if (ent[j] && (best < 0 || atoi(ent[j] + 3) < atoi(ent[best] + 3)))
          best = j;
      char *end = strstr(ent[best] + 1, "ID:");
      strncat(out, ent[best], end ? (size_t)(end - ent[best]) : strlen(ent[best]));
      ent[best] = NULL;
    }
  return out;
}

static void
check_one(const char *name, timer_t t, time_t isec, long insec, double want, double elapsed)
{
  struct itimerspec it;
  double got;
  if (timer_gettime(t, &it) < 0)
    {
      zdtm_fail("%s (ID %ld): timer_gettime: %s", name, (long)(intptr_t)t, strerror(errno));
      return;
    }
  if (it.it_interval.tv_sec != isec || it.it_interval.tv_nsec != insec)
    zdtm_fail("%s: interval %ld.%09ld s, expected %ld.%09ld s", name, (long)it.it_interval.tv_sec,
              it.it_interval.tv_nsec, (long)isec, insec);
  got = it.it_value.tv_sec + it.it_value.tv_nsec / 1e9;
  if (want == 0 ? got != 0 : (got > want + 0.01 || got < want - elapsed - 0.5 || got == 0))
    zdtm_fail("%s: %.6f s left, expected %.3f s less at most %.3f s elapsed", name, got, want,
              elapsed);
}

int
main(int argc, char **argv)
{
  struct sigaction sa;
  struct timespec t0, t1;
  pthread_t th;
  sigset_t s;
  timer_t gap;
  char *before, *after;
  int n0, m0;

  zdtm_init(argc, argv);
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIG_PERIODIC, &sa, NULL);
  sigaction(SIG_THREAD, &sa, NULL);
  /* Only the worker takes the thread-directed signal. */
  sigemptyset(&s);
  sigaddset(&s, SIG_THREAD);
  pthread_sigmask(SIG_BLOCK, &s, NULL);
  if (pthread_create(&th, NULL, worker, NULL) != 0)
    zdtm_error("pthread_create");
  while (!worker_tid)
    usleep(1000);

  gap = make(CLOCK_MONOTONIC, SIGEV_NONE, 0, NULL, 0); /* ID 0, deleted below */
  t_mono = make(CLOCK_MONOTONIC, SIGEV_SIGNAL, SIGUSR1, (void *)(intptr_t)77, 0);
  t_real = make(CLOCK_REALTIME, SIGEV_SIGNAL, SIG_PERIODIC, &marker, 0);
  t_boot = make(CLOCK_BOOTTIME, SIGEV_NONE, 0, NULL, 0);
  timer_delete(make(CLOCK_MONOTONIC, SIGEV_NONE, 0, NULL, 0)); /* ID 4 */
  t_thread = make(CLOCK_MONOTONIC, SIGEV_SIGNAL | SIGEV_THREAD_ID, SIG_THREAD,
                  (void *)(intptr_t)4242, worker_tid);
  t_cpu = make(CLOCK_PROCESS_CPUTIME_ID, SIGEV_SIGNAL, SIGUSR2, NULL, 0);
  if (timer_delete(gap) < 0)
    zdtm_error("timer_delete: %s", strerror(errno));
  signal(SIGUSR1, SIG_IGN);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  arm(t_mono, 100, 0, 200, 0);
  arm(t_real, 0, 300000000, 0, 300000000);
  arm(t_boot, 0, 0, 300, 0);
  arm(t_thread, 0, 250000000, 0, 250000000);
  before = timers_text();

  zdtm_ready();
  zdtm_wait();

  clock_gettime(CLOCK_MONOTONIC, &t1);
  double elapsed = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
  after = timers_text();
  if (strcmp(before, after) != 0)
    zdtm_fail("/proc/self/timers changed:\n--- before\n%s--- after\n%s", before, after);
  check_one("CLOCK_MONOTONIC 100/200 s", t_mono, 100, 0, 200, elapsed);
  check_one("CLOCK_BOOTTIME one-shot 300 s", t_boot, 0, 0, 300, elapsed);
  check_one("CLOCK_PROCESS_CPUTIME_ID disarmed", t_cpu, 0, 0, 0, elapsed);
  /* The periodic ones fire on: two more of each within 3 s. */
  n0 = real_n, m0 = thread_n;
  for (int k = 0; k < 300 && (real_n < n0 + 2 || thread_n < m0 + 2); k++)
    usleep(10000);
  if (real_n < n0 + 2 || thread_n < m0 + 2)
    zdtm_fail("periodic timers: %d and %d signals in 3 s after restore (300 and 250 ms timers)",
              real_n - n0, thread_n - m0);
  if (real_bad || thread_bad)
    zdtm_fail("%d CLOCK_REALTIME and %d thread-directed timer signals with the wrong ID, value "
              "or thread",
              real_bad, thread_bad);
  zdtm_finish();
}
