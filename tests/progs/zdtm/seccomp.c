/* zdtm-seccomp: the seccomp filters a task runs under, kept by checkpoint
 * and restore: the mode and filter count /proc shows for each of its two
 * threads, and what a probe call returns in each (a call a container's
 * profile may deny): keyctl(KEYCTL_GET_KEYRING_ID), or with
 * ZDTM_SECCOMP_PROBE=userfaultfd a user-mode userfaultfd (which podman's
 * default profile denies).
 *
 * ZDTM_SECCOMP_PROBE=ptrace: four probes, keyctl as above, ptrace
 * (PTRACE_PEEKDATA of itself: ESRCH when allowed), process_vm_readv and
 * process_vm_writev of its own memory (which succeed when allowed): a
 * profile the restore itself could not run under.
 * ZDTM_SECCOMP_CHILD=1: a child process does the same with two threads of
 * its own, and its findings join the verdict (every thread of every
 * process).
 *
 * ZDTM_SECCOMP_EXPECT=E: the profile the test gives denies every probe
 * with errno E; the setup checks it does (else ERROR), the verdict that it
 * still does.
 * ZDTM_SECCOMP_OWN=main|thread: that thread installs a filter of its own
 * (allowing everything, with no_new_privs), which a checkpoint must refuse.
 * ZDTM_SECCOMP_OWN=strict: the process enters strict mode once ready and
 * waits in read(0); a byte on stdin makes it write "alive" to stdout and
 * exit (no verdict file). */
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
#include <signal.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define NPROBE 4

struct view
{
  int mode, filters, probe[NPROBE]; /* probe: 0 or the errno it failed with */
};

static bool probe_uffd, probe_ptrace;
static int nprobe = 1;
static long word = 0x5eccc0;

/* Probe K (0: keyctl or userfaultfd; 1-3: ptrace, process_vm_readv,
   process_vm_writev). */
static int
probe(int k)
{
  long r, copy = 0;
  struct iovec local = { &copy, sizeof copy }, remote = { &word, sizeof word };
  if (k == 1)
    {
      r = syscall(SYS_ptrace, PTRACE_PEEKDATA, getpid(), &word, &copy);
      return r < 0 && errno != ESRCH ? errno : 0;
    }
  if (k == 2 || k == 3)
    {
      copy = word;
      r = k == 2 ? process_vm_readv(getpid(), &local, 1, &remote, 1, 0)
                 : process_vm_writev(getpid(), &local, 1, &remote, 1, 0);
      if (r >= 0 && (r != sizeof word || copy != word))
        zdtm_error("process_vm_%s of itself: %ld bytes, %lx", k == 2 ? "readv" : "writev", r, copy);
      return r < 0 ? errno : 0;
    }
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
  for (int k = 0; k < nprobe; k++)
    v->probe[k] = probe(k);
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
name(int k)
{
  static const char *const names[]
      = { "keyctl", "ptrace", "process_vm_readv", "process_vm_writev" };
  return k == 0 && probe_uffd ? "userfaultfd" : names[k];
}

/* Thread T's views differ from what they must be: appended to MSG. */
static void
compare(int t, const char *expect, char *msg, size_t cap)
{
  const struct view *b = &before[t], *a = &after[t];
  size_t n = strlen(msg);
  if (a->mode != b->mode || a->filters != b->filters)
    n += (size_t)snprintf(msg + n, cap - n,
                          "thread %d: seccomp mode/filters (expected %d/%d, got %d/%d); ", t,
                          b->mode, b->filters, a->mode, a->filters);
  for (int k = 0; k < nprobe && n < cap; k++)
    if (a->probe[k] != b->probe[k] || (expect && a->probe[k] != atoi(expect)))
      n += (size_t)snprintf(msg + n, cap - n, "thread %d: %s errno %d (expected %d%s); ", t,
                            name(k), a->probe[k], expect ? atoi(expect) : b->probe[k],
                            expect ? ", the profile's" : "");
}

/* Both threads look, wait for SIGTERM, look again: what differs in MSG. */
static void
look_twice(const char *expect, char *msg, size_t cap, int ready_fd)
{
  pthread_t th;
  look(&before[0]);
  for (int k = 0; k < nprobe; k++)
    if (expect && before[0].probe[k] != atoi(expect))
      zdtm_error("%s is not denied with errno %s before the checkpoint (got %d): the profile "
                 "does not apply",
                 name(k), expect, before[0].probe[k]);
  if (pthread_create(&th, NULL, thread_main, NULL) != 0)
    zdtm_error("pthread_create");
  while (__atomic_load_n(&thread_state, __ATOMIC_SEQ_CST) != 1)
    usleep(1000);
  if (ready_fd >= 0 && (write(ready_fd, "r", 1) != 1 || close(ready_fd) < 0))
    zdtm_error("tell the parent: %s", strerror(errno));
  if (ready_fd < 0)
    zdtm_ready();
  zdtm_wait();
  look(&after[0]);
  __atomic_store_n(&thread_state, 2, __ATOMIC_SEQ_CST);
  pthread_join(th, NULL);
  msg[0] = '\0';
  compare(0, expect, msg, cap);
  compare(1, expect, msg, cap);
}

/* ZDTM_SECCOMP_CHILD: a child process doing the same; *REPORT its end of
   the pipe its findings come back on. */
static pid_t
child(const char *expect, int *report)
{
  int ready[2], back[2];
  char c, msg[1024];
  pid_t pid;
  if (pipe(ready) < 0 || pipe(back) < 0)
    zdtm_error("pipe: %s", strerror(errno));
  pid = fork();
  if (pid < 0)
    zdtm_error("fork: %s", strerror(errno));
  if (pid == 0)
    {
      close(ready[0]);
      close(back[0]);
      look_twice(expect, msg, sizeof msg, ready[1]);
      _exit(write(back[1], msg, strlen(msg)) == (ssize_t)strlen(msg) ? 0 : 1);
    }
  close(ready[1]);
  close(back[1]);
  if (read(ready[0], &c, 1) != 1)
    zdtm_error("the child did not start");
  close(ready[0]);
  *report = back[0];
  return pid;
}

int
main(int argc, char **argv)
{
  const char *expect = getenv("ZDTM_SECCOMP_EXPECT");
  const char *pr = getenv("ZDTM_SECCOMP_PROBE");
  char msg[1024], cmsg[1024];
  int report = -1, st = 0;
  pid_t kid = 0;

  zdtm_init(argc, argv);
  own = getenv("ZDTM_SECCOMP_OWN");
  probe_uffd = pr && strcmp(pr, "userfaultfd") == 0;
  probe_ptrace = pr && strcmp(pr, "ptrace") == 0;
  nprobe = probe_ptrace ? NPROBE : 1;
  if (own && strcmp(own, "strict") == 0)
    {
      /* Strict mode: read, write, _exit and sigreturn only, anything else
         kills. Ready, then blocked in read(0) until a byte comes; then
         "alive" on stdout. A checkpoint must refuse it without a call
         injected (one would kill it). */
      char c;
      long r;
      zdtm_ready();
      if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT) != 0)
        zdtm_error("PR_SET_SECCOMP strict: %s", strerror(errno));
      r = syscall(SYS_read, 0, &c, 1);
      syscall(SYS_write, 1, r == 1 ? "alive\n" : "read failed\n", r == 1 ? 6 : 12);
      syscall(SYS_exit, 0);
    }
  if (own && strcmp(own, "main") == 0)
    own_filter();
  if (getenv("ZDTM_SECCOMP_CHILD"))
    kid = child(expect, &report);

  look_twice(expect, msg, sizeof msg, -1);
  if (msg[0])
    zdtm_fail("%s", msg);
  if (kid > 0)
    {
      ssize_t n;
      kill(kid, SIGTERM);
      n = read(report, cmsg, sizeof cmsg - 1);
      cmsg[n > 0 ? n : 0] = '\0';
      if (waitpid(kid, &st, 0) != kid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        zdtm_fail("the child process: exit status %#x", st);
      if (cmsg[0])
        zdtm_fail("the child process: %s", cmsg);
    }
  zdtm_note("seccomp mode %d, %d filters, %s errno %d", after[0].mode, after[0].filters, name(0),
            after[0].probe[0]);
  if (probe_ptrace)
    zdtm_note("ptrace errno %d, process_vm_readv errno %d, process_vm_writev errno %d",
              after[0].probe[1], after[0].probe[2], after[0].probe[3]);
  if (kid > 0)
    zdtm_note("child process: %s", cmsg[0] ? "differs" : "the same, its two threads checked");
  zdtm_finish();
}
