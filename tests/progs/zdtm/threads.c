/* zdtm-threads: three pthreads beside the main thread. Each checks after
 * restore its own TID, a thread-local value and a value on its stack, its
 * rseq registration (registering the same area again must answer EBUSY),
 * its robust futex list head and its clear_child_tid address, and its
 * signal mask (each blocks a different signal). */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef PR_GET_TID_ADDRESS
#define PR_GET_TID_ADDRESS 40
#endif

#define NTHREADS 3

/* glibc >= 2.35 exports where it put the thread's rseq area. */
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));
#define RSEQ_SIG 0x53053053

struct tstate
{
  pid_t tid;
  long tls_copy;
  void *robust_head;
  void *tid_address;
  bool rseq;
  int blocked_sig;
  pthread_t th;
  int ok_ready;
  int done;
};

static __thread long tls_value;
static struct tstate ts[NTHREADS + 1];
static volatile int nready;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void
record(struct tstate *s, int idx)
{
  struct robust_list_head *h;
  size_t len;

  s->tid = gettid();
  tls_value = 0x1000L * (idx + 1) + s->tid;
  s->tls_copy = tls_value;
  if (syscall(SYS_get_robust_list, 0, &h, &len) == 0)
    s->robust_head = h;
  prctl(PR_GET_TID_ADDRESS, &s->tid_address, 0, 0, 0);
  s->rseq = &__rseq_size && __rseq_size > 0;
  if (s->blocked_sig)
    {
      sigset_t set;
      sigemptyset(&set);
      sigaddset(&set, s->blocked_sig);
      pthread_sigmask(SIG_BLOCK, &set, NULL);
    }
}

static void
verify(struct tstate *s, int idx, long stack_value)
{
  struct robust_list_head *h = NULL;
  size_t len;
  void *ta = NULL;
  sigset_t cur;

  if (gettid() != s->tid)
    zdtm_fail("thread %d: TID expected %d, got %d", idx, s->tid, (int)gettid());
  if (tls_value != s->tls_copy)
    zdtm_fail("thread %d (TID %d): TLS value expected %ld, got %ld", idx, s->tid, s->tls_copy,
              tls_value);
  if (stack_value != 0x5a5a0000L + idx)
    zdtm_fail("thread %d (TID %d): stack value expected %ld, got %ld", idx, s->tid,
              0x5a5a0000L + idx, stack_value);
  if (syscall(SYS_get_robust_list, 0, &h, &len) < 0 || (void *)h != s->robust_head)
    zdtm_fail("thread %d (TID %d): robust list head expected %p, got %p", idx, s->tid,
              s->robust_head, (void *)h);
  if (prctl(PR_GET_TID_ADDRESS, &ta, 0, 0, 0) < 0)
    zdtm_note("thread %d: PR_GET_TID_ADDRESS: %s (clear_child_tid not checked)", idx,
              strerror(errno));
  else if (ta != s->tid_address)
    zdtm_fail("thread %d (TID %d): clear_child_tid expected %p, got %p", idx, s->tid,
              s->tid_address, ta);
  if (s->rseq)
    {
      void *area = (char *)__builtin_thread_pointer() + __rseq_offset;
      long r = syscall(SYS_rseq, area, __rseq_size < 32 ? 32 : __rseq_size, 0, RSEQ_SIG);
      if (r == 0)
        zdtm_fail("thread %d (TID %d): rseq area %p was not registered after restore", idx, s->tid,
                  area);
      else if (errno != EBUSY)
        zdtm_fail("thread %d (TID %d): rseq registration differs (re-register: %s, expected EBUSY)",
                  idx, s->tid, strerror(errno));
    }
  pthread_sigmask(SIG_BLOCK, NULL, &cur);
  for (int sig = 1; sig < 32; sig++)
    if (sig != SIGTERM && sigismember(&cur, sig) != (sig == s->blocked_sig))
      zdtm_fail("thread %d (TID %d): signal %d %s in the mask, expected %s", idx, s->tid, sig,
                sigismember(&cur, sig) ? "set" : "clear", sig == s->blocked_sig ? "set" : "clear");
}

static void *
worker(void *arg)
{
  int idx = (int)(long)arg;
  volatile long stack_value = 0x5a5a0000L + idx;

  record(&ts[idx], idx);
  pthread_mutex_lock(&lock);
  nready++;
  pthread_mutex_unlock(&lock);
  while (!zdtm_stopped())
    {
      struct timespec t = { 0, 20 * 1000 * 1000 };
      nanosleep(&t, NULL);
    }
  verify(&ts[idx], idx, stack_value);
  return NULL;
}

int
main(int argc, char **argv)
{
  volatile long stack_value = 0x5a5a0000L;
  sigset_t term;

  zdtm_init(argc, argv);
  /* SIGTERM goes to the main thread only: the workers block it. */
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, NULL);
  for (int i = 1; i <= NTHREADS; i++)
    {
      static const int sigs[NTHREADS + 1] = { 0, SIGUSR1, SIGUSR2, SIGHUP };
      ts[i].blocked_sig = sigs[i];
      int r = pthread_create(&ts[i].th, NULL, worker, (void *)(long)i);
      if (r)
        zdtm_error("pthread_create: %s", strerror(r));
    }
  pthread_sigmask(SIG_UNBLOCK, &term, NULL);
  ts[0].blocked_sig = SIGPIPE;
  record(&ts[0], 0);
  while (nready < NTHREADS)
    usleep(1000);
  if (!ts[0].rseq)
    zdtm_note("glibc does not register rseq here: rseq not checked");

  zdtm_ready();
  zdtm_wait();

  verify(&ts[0], 0, stack_value);
  for (int i = 1; i <= NTHREADS; i++)
    pthread_join(ts[i].th, NULL);
  zdtm_finish();
}
