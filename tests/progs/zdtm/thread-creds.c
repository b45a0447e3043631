/* zdtm-thread-creds: a thread with credentials of its own. A second thread
 * lowers its own effective capability set with the raw capset system call
 * (glibc's wrappers would apply a change to every thread; the raw call
 * changes only the caller). crest restores credentials per process, so a
 * checkpoint must refuse this process and leave it running untouched. After
 * SIGTERM the program checks that each thread still has the effective set
 * it had: the main thread its original one, the other thread the lowered
 * one. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <linux/capability.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile pid_t thread_tid;
static volatile int thread_done;

/* The CapEff line of /proc/self/task/TID/status, as a number. */
static unsigned long long
cap_eff(pid_t tid)
{
  char path[64], line[256];
  unsigned long long v = ~0ULL;
  FILE *f;
  snprintf(path, sizeof path, "/proc/self/task/%d/status", (int)tid);
  f = fopen(path, "re");
  if (!f)
    return v;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "CapEff: %llx", &v) == 1)
      break;
  fclose(f);
  return v;
}

static void *
lowering(void *arg)
{
  struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
  struct __user_cap_data_struct d[2];
  (void)arg;
  if (syscall(SYS_capget, &h, d) < 0)
    zdtm_error("capget: %s", strerror(errno));
  d[0].effective = 0;
  d[1].effective = 0;
  if (syscall(SYS_capset, &h, d) < 0)
    zdtm_error("capset: %s", strerror(errno));
  thread_tid = (pid_t)syscall(SYS_gettid);
  while (!thread_done)
    usleep(10000);
  return NULL;
}

int
main(int argc, char **argv)
{
  pthread_t th;
  unsigned long long main_before, thread_before, v;
  int r;

  zdtm_init(argc, argv);
  main_before = cap_eff((pid_t)syscall(SYS_gettid));
  if (main_before == 0 || main_before == ~0ULL)
    zdtm_error("the main thread needs some effective capability to lower (CapEff %llx)",
               main_before);
  r = pthread_create(&th, NULL, lowering, NULL);
  if (r)
    zdtm_error("pthread_create: %s", strerror(r));
  while (!thread_tid)
    usleep(1000);
  thread_before = cap_eff(thread_tid);
  if (thread_before != 0)
    zdtm_error("the thread's CapEff is %llx after capset, not 0", thread_before);

  zdtm_ready();
  zdtm_wait();

  if ((v = cap_eff((pid_t)syscall(SYS_gettid))) != main_before)
    zdtm_fail("main thread CapEff (expected %llx, got %llx)", main_before, v);
  if ((v = cap_eff(thread_tid)) != thread_before)
    zdtm_fail("second thread CapEff (expected %llx, got %llx)", thread_before, v);
  thread_done = 1;
  pthread_join(th, NULL);
  zdtm_finish();
}
