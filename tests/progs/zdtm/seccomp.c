/* zdtm-seccomp: the seccomp filters a task runs under, kept by checkpoint
 * and restore: the mode and filter count /proc shows for each of its two
 * threads, and what a probe call returns in each (a call a container's
 * profile may deny): keyctl(KEYCTL_GET_KEYRING_ID), or with
 * ZDTM_SECCOMP_PROBE=userfaultfd a user-mode userfaultfd (which podman's
 * default profile denies).
 *
 * ZDTM_SECCOMP_EXPECT=E: the profile the test gives denies the probe with
 * errno E; the setup checks it does (else ERROR), the verdict that it still
 * does.
 * ZDTM_SECCOMP_OWN=main|thread: that thread installs a filter of its own
 * (allowing everything, with no_new_privs), which a checkpoint must refuse. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

struct view
{
  int mode, filters, probe; /* probe: 0 or the errno it failed with */
};

static bool probe_uffd;

static int
probe(void)
{
  long r;
  if (probe_uffd)
    {
      /* UFFD_USER_MODE_ONLY (1): allowed without privilege since 5.11. */
      r = syscall(SYS_userfaultfd, 1 | O_CLOEXEC);
      if (r >= 0)
        close((int)r);
    }
  else
    /* KEYCTL_GET_KEYRING_ID (0) of the session keyring (-3), not created. */
    r = syscall(SYS_keyctl, 0, -3, 0);
  return r < 0 ? errno : 0;
}

static void
look(struct view *v)
{
  char path[64], line[256];
  FILE *f;
  snprintf(path, sizeof path, "/proc/self/task/%ld/status", (long)syscall(SYS_gettid));
  v->mode = v->filters = -1;
  if ((f = fopen(path, "r")))
    {
      while (fgets(line, sizeof line, f))
        {
          if (strncmp(line, "Seccomp:", 8) == 0)
            v->mode = atoi(line + 8);
          if (strncmp(line, "Seccomp_filters:", 16) == 0)
            v->filters = atoi(line + 16);
        }
      fclose(f);
    }
  v->probe = probe();
}

static void
own_filter(void)
{
  struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  struct sock_fprog prog = { 1, &allow };
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0
      || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
    zdtm_error("install a filter of its own: %s", strerror(errno));
}

static const char *own;
static struct view before[2], after[2];
static volatile int thread_state; /* 1: looked, 2: asked to look again, 3: done */

static void *
thread_main(void *arg)
{
  (void)arg;
  if (own && strcmp(own, "thread") == 0)
    own_filter();
  look(&before[1]);
  __atomic_store_n(&thread_state, 1, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(&thread_state, __ATOMIC_SEQ_CST) != 2)
    usleep(20000);
  look(&after[1]);
  __atomic_store_n(&thread_state, 3, __ATOMIC_SEQ_CST);
  return NULL;
}

static const char *
name(void)
{
  return probe_uffd ? "userfaultfd" : "keyctl";
}

static void
compare(int t, const char *expect)
{
  const struct view *b = &before[t], *a = &after[t];
  if (a->mode != b->mode || a->filters != b->filters)
    zdtm_fail("thread %d: seccomp mode/filters (expected %d/%d, got %d/%d)", t, b->mode, b->filters,
              a->mode, a->filters);
  if (a->probe != b->probe)
    zdtm_fail("thread %d: %s (expected errno %d, got %d)", t, name(), b->probe, a->probe);
  if (expect && a->probe != atoi(expect))
    zdtm_fail("thread %d: %s not denied by the profile (expected errno %s, got %d)", t, name(),
              expect, a->probe);
}

int
main(int argc, char **argv)
{
  const char *expect = getenv("ZDTM_SECCOMP_EXPECT");
  pthread_t th;

  zdtm_init(argc, argv);
  own = getenv("ZDTM_SECCOMP_OWN");
  probe_uffd
      = getenv("ZDTM_SECCOMP_PROBE") && strcmp(getenv("ZDTM_SECCOMP_PROBE"), "userfaultfd") == 0;
  if (own && strcmp(own, "main") == 0)
    own_filter();
  look(&before[0]);
  if (expect && before[0].probe != atoi(expect))
    zdtm_error("%s is not denied with errno %s before the checkpoint (got %d): the profile "
               "does not apply",
               name(), expect, before[0].probe);
  if (pthread_create(&th, NULL, thread_main, NULL) != 0)
    zdtm_error("pthread_create");
  while (__atomic_load_n(&thread_state, __ATOMIC_SEQ_CST) != 1)
    usleep(1000);

  zdtm_ready();
  zdtm_wait();

  look(&after[0]);
  __atomic_store_n(&thread_state, 2, __ATOMIC_SEQ_CST);
  pthread_join(th, NULL);
  compare(0, expect);
  compare(1, expect);
  zdtm_note("seccomp mode %d, %d filters, %s errno %d", after[0].mode, after[0].filters, name(),
            after[0].probe);
  zdtm_finish();
}
