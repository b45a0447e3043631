/* zdtm-stopped: processes in a group stop (kill -STOP, ^Z) through
 * checkpoint and restore.
 *
 *   zdtm-stopped [READY [RESULT [root]]]
 *
 * The tree (default):
 *
 *   root: a SIGCHLD handler records every stop and continue reported
 *   +- a: stops itself (kill(getpid(), SIGSTOP)); the root collects that
 *   |     stop with waitid(WSTOPPED) before READY
 *   +- b: three threads and a process group of its own; the root stops it
 *   |     with SIGTSTP and leaves that stop uncollected
 *   +- c: runs (sleeps)
 *
 * READY once a and b are stopped and the root has had each stop reported
 * once. After SIGTERM the root checks, before anything else:
 * - a and b (every thread of b) are still stopped (State T), c is not;
 * - its handler saw exactly one CLD_STOPPED for a and one for b: a restore
 *   must not report a stop again;
 * - waitid(WSTOPPED | WNOWAIT) finds nothing for a (collected before) and
 *   finds b stopped by SIGTSTP (never collected), which it then collects;
 * then it continues a and b with SIGCONT (each reported once, as
 * CLD_CONTINUED and to waitid(WCONTINUED)) and forwards SIGTERM to a, b
 * and c. a checks that it resumed through the root's SIGCONT only: its
 * kill() returns after its SIGCONT handler ran, with the root as sender.
 * b checks the same and that its three threads go on. Nobody may get
 * SIGHUP (the kernel sends SIGHUP and SIGCONT to a process group that
 * becomes orphaned with a stopped member).
 *
 * In a container that maps UID 1000 and gives CAP_SETUID and CAP_SETGID the
 * tree runs as UID 1000 (zdtm_become).
 *
 * "root": the root alone, with two more threads, for a harness that stops
 * it from outside (kill -STOP) and continues it (kill -CONT) before
 * SIGTERM; it checks that it was continued by exactly one SIGCONT, never
 * got SIGHUP, and that its threads go on. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t conts, hups, nev;
static volatile pid_t cont_from;
static struct
{
  int code, status;
  pid_t pid;
} ev[64];

static void
on_cont(int sig, siginfo_t *si, void *u)
{
  (void)sig, (void)u;
  conts++;
  cont_from = si->si_pid;
}

static void
on_hup(int sig)
{
  (void)sig;
  hups++;
}

static void
on_chld(int sig, siginfo_t *si, void *u)
{
  (void)sig, (void)u;
  if (nev < (int)(sizeof ev / sizeof ev[0]))
    {
      ev[nev].code = si->si_code;
      ev[nev].status = si->si_status;
      ev[nev].pid = si->si_pid;
      nev++;
    }
}

static int
count(int code, pid_t pid)
{
  int n = 0;
  for (int i = 0; i < nev; i++)
    n += ev[i].code == code && ev[i].pid == pid;
  return n;
}

static void
nap(long ms)
{
  struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
    ;
}

static void
handle(int sig, void (*fn)(int, siginfo_t *, void *))
{
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = fn;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(sig, &sa, NULL) < 0)
    zdtm_error("sigaction %d: %s", sig, strerror(errno));
}

static void
handle_hup(void)
{
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_hup;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGHUP, &sa, NULL) < 0)
    zdtm_error("sigaction SIGHUP: %s", strerror(errno));
}

/* Every thread of PID in state WANT ('T'), or none of them ('!T'). */
static bool
threads_in(pid_t pid, bool stopped, char *seen, size_t len)
{
  char path[64];
  DIR *d;
  struct dirent *de;
  bool all = true;
  size_t used = 0;

  snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
  if (!(d = opendir(path)))
    {
      snprintf(seen, len, "gone");
      return false;
    }
  seen[0] = 0;
  while ((de = readdir(d)))
    {
      char sp[320], buf[512], *q;
      FILE *f;
      if (de->d_name[0] == '.')
        continue;
      snprintf(sp, sizeof sp, "/proc/%d/task/%s/stat", (int)pid, de->d_name);
      if (!(f = fopen(sp, "re")))
        continue;
      if (!fgets(buf, sizeof buf, f))
        buf[0] = 0;
      fclose(f);
      q = strrchr(buf, ')');
      if (!q || !q[1] || !q[2])
        continue;
      if ((q[2] == 'T') != stopped)
        all = false;
      if (used + 16 < len)
        used += snprintf(seen + used, len - used, "%s%s:%c", used ? " " : "", de->d_name, q[2]);
    }
  closedir(d);
  return all;
}

/* --- threads that count while they run --- */

static volatile long counters[3];
static volatile sig_atomic_t threads_done;

static void *
counter(void *arg)
{
  long i = (long)arg;
  while (!threads_done)
    {
      counters[i]++;
      nap(1);
    }
  return NULL;
}

static void
start_threads(pthread_t *t, int n)
{
  for (long i = 0; i < n; i++)
    if (pthread_create(&t[i], NULL, counter, (void *)i) != 0)
      zdtm_error("pthread_create: %s", strerror(errno));
}

/* The threads go on: each counter grows within a second. */
static void
check_threads(const char *who, pthread_t *t, int n)
{
  long before[3];
  for (int i = 0; i < n; i++)
    before[i] = counters[i];
  for (int k = 0; k < 100; k++)
    {
      bool all = true;
      for (int i = 0; i < n; i++)
        all &= counters[i] > before[i];
      if (all)
        break;
      nap(10);
    }
  for (int i = 0; i < n; i++)
    if (counters[i] <= before[i])
      zdtm_fail("%s: thread %d does not go on after SIGCONT (counter stays %ld)", who, i + 1,
                before[i]);
  threads_done = 1;
  for (int i = 0; i < n; i++)
    pthread_join(t[i], NULL);
}

static void
check_cont(const char *who, pid_t want_from)
{
  if (conts != 1)
    zdtm_fail("%s: %d SIGCONT handled (expected 1)", who, (int)conts);
  else if (want_from && cont_from != want_from)
    zdtm_fail("%s: continued by %d (expected its parent %d)", who, (int)cont_from, (int)want_from);
  if (hups)
    zdtm_fail("%s: got SIGHUP (its process group was orphaned while it was stopped)", who);
}

/* --- the tree --- */

static void
child_a(void)
{
  static char mem[65536];
  size_t off;
  zdtm_fill(mem, sizeof mem, 7, 0);
  if (kill(getpid(), SIGSTOP) < 0)
    zdtm_error("a: kill SIGSTOP: %s", strerror(errno));
  /* Only the root's SIGCONT may bring it here, its handler run first. */
  if (conts != 1)
    zdtm_fail("a: kill(SIGSTOP) returned with %d SIGCONT handled (expected 1): it ran while "
              "stopped",
              (int)conts);
  zdtm_wait();
  check_cont("a", getppid());
  if ((off = zdtm_check(mem, sizeof mem, 7, 0)) != (size_t)-1)
    zdtm_fail("a: memory differs at offset %zu", off);
  _exit(zdtm_status());
}

static void
child_b(int ready_fd)
{
  pthread_t t[2];
  if (setpgid(0, 0) < 0)
    zdtm_error("b: setpgid: %s", strerror(errno));
  start_threads(t, 2);
  if (write(ready_fd, "b", 1) != 1)
    _exit(2);
  close(ready_fd);
  /* Stopped by the root (SIGTSTP) somewhere in here. */
  while (!conts && !zdtm_stopped())
    nap(2);
  if (!conts)
    zdtm_fail("b: SIGTERM came before any SIGCONT");
  check_threads("b", t, 2);
  zdtm_wait();
  check_cont("b", getppid());
  _exit(zdtm_status());
}

static pid_t
spawn(int which, int ready_fd)
{
  pid_t p = fork();
  if (p < 0)
    zdtm_error("fork: %s", strerror(errno));
  if (p == 0)
    {
      nev = 0;
      if (which == 'a')
        child_a();
      if (which == 'b')
        child_b(ready_fd);
      zdtm_wait();
      _exit(0);
    }
  return p;
}

static void
wait_event(int code, pid_t pid, int want, const char *what)
{
  for (int k = 0; k < 1000 && count(code, pid) < want; k++)
    nap(10);
  if (count(code, pid) < want)
    zdtm_error("%s: no SIGCHLD (code %d) for %d within 10 s", what, code, (int)pid);
}

static void
tree(void)
{
  pid_t a, b, c;
  int fds[2], st;
  char ch, seen[256];
  siginfo_t si;

  /* The whole tree as UID 1000 where the container maps it: the restore
     then collects and takes back the stops' reports in a parent of another
     UID than its own. */
  if (zdtm_become(1000) < 0)
    zdtm_error("become UID 1000: %s", strerror(errno));
  handle(SIGCHLD, on_chld);
  if (pipe(fds) < 0)
    zdtm_error("pipe: %s", strerror(errno));

  a = spawn('a', -1);
  wait_event(CLD_STOPPED, a, 1, "a stops itself");
  memset(&si, 0, sizeof si);
  if (waitid(P_PID, a, &si, WSTOPPED) < 0 || si.si_pid != a || si.si_status != SIGSTOP)
    zdtm_error("collect a's stop: %s (pid %d, status %d)", strerror(errno), (int)si.si_pid,
               si.si_status);

  b = spawn('b', fds[1]);
  close(fds[1]);
  setpgid(b, b); /* as b does itself: whichever comes first */
  if (read(fds[0], &ch, 1) != 1)
    zdtm_error("b did not start");
  close(fds[0]);
  if (kill(b, SIGTSTP) < 0)
    zdtm_error("kill b SIGTSTP: %s", strerror(errno));
  wait_event(CLD_STOPPED, b, 1, "b stopped by SIGTSTP");
  for (int k = 0; k < 500 && !threads_in(b, true, seen, sizeof seen); k++)
    nap(10);

  c = spawn('c', -1);
  zdtm_ready();
  zdtm_wait();

  /* Still stopped, and seen stopped once. */
  if (!threads_in(a, true, seen, sizeof seen))
    zdtm_fail("a is not stopped (threads: %s)", seen);
  if (!threads_in(b, true, seen, sizeof seen))
    zdtm_fail("b is not stopped (threads: %s)", seen);
  if (!threads_in(c, false, seen, sizeof seen))
    zdtm_fail("c is stopped (threads: %s)", seen);
  if (count(CLD_STOPPED, a) != 1 || count(CLD_STOPPED, b) != 1)
    zdtm_fail("stops reported by SIGCHLD: a %d, b %d (expected 1 each)", count(CLD_STOPPED, a),
              count(CLD_STOPPED, b));
  memset(&si, 0, sizeof si);
  if (waitid(P_PID, a, &si, WSTOPPED | WNOHANG | WNOWAIT) < 0 || si.si_pid != 0)
    zdtm_fail("waitid(WSTOPPED) reports a's stop again (pid %d, status %d): it was collected "
              "before",
              (int)si.si_pid, si.si_status);
  memset(&si, 0, sizeof si);
  if (waitid(P_PID, b, &si, WSTOPPED | WNOHANG | WNOWAIT) < 0 || si.si_pid != b
      || si.si_code != CLD_STOPPED || si.si_status != SIGTSTP)
    zdtm_fail("waitid(WSTOPPED) for b (expected stopped by %d, never collected): pid %d, code %d, "
              "status %d",
              SIGTSTP, (int)si.si_pid, si.si_code, si.si_status);
  memset(&si, 0, sizeof si);
  waitid(P_PID, b, &si, WSTOPPED | WNOHANG);
  memset(&si, 0, sizeof si);
  if (waitid(P_PID, b, &si, WSTOPPED | WNOHANG | WNOWAIT) < 0 || si.si_pid != 0)
    zdtm_fail("b's stop is still reported after it was collected");

  /* Go on. */
  for (int k = 0; k < 2; k++)
    {
      pid_t p = k ? b : a;
      const char *name = k ? "b" : "a";
      kill(p, SIGCONT);
      wait_event(CLD_CONTINUED, p, 1, name);
      memset(&si, 0, sizeof si);
      if (waitid(P_PID, p, &si, WCONTINUED | WNOHANG) < 0 || si.si_pid != p
          || si.si_code != CLD_CONTINUED)
        zdtm_fail("waitid(WCONTINUED) for %s: pid %d, code %d", name, (int)si.si_pid, si.si_code);
    }
  nap(100);
  for (int k = 0; k < 2; k++)
    {
      pid_t p = k ? b : a;
      if (count(CLD_STOPPED, p) != 1 || count(CLD_CONTINUED, p) != 1)
        zdtm_fail("%s reported %d times stopped and %d times continued (expected 1 and 1)",
                  k ? "b" : "a", count(CLD_STOPPED, p), count(CLD_CONTINUED, p));
    }
  for (int k = 0; k < 3; k++)
    {
      pid_t p = k == 0 ? a : k == 1 ? b : c;
      kill(p, SIGTERM);
      while (waitpid(p, &st, 0) < 0)
        if (errno != EINTR)
          {
            zdtm_fail("waitpid %d: %s", (int)p, strerror(errno));
            break;
          }
      if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        zdtm_fail("child %c (%d) ended with status 0x%x", "abc"[k], (int)p, st);
    }
  if (hups)
    zdtm_fail("root: got SIGHUP");
}

static void
root_alone(void)
{
  pthread_t t[2];
  start_threads(t, 2);
  zdtm_ready();
  zdtm_wait();
  check_threads("root", t, 2);
  check_cont("root", 0);
}

int
main(int argc, char **argv)
{
  zdtm_init(argc, argv);
  handle(SIGCONT, on_cont);
  handle_hup();
  if (argc > 3 && strcmp(argv[3], "root") == 0)
    root_alone();
  else
    tree();
  zdtm_finish();
}
