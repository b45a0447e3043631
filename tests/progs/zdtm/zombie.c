/* zdtm-zombie: children that have exited and were not waited for.
 *
 *   root
 *   +- P (a SIGCHLD handler counts the signals it gets)
 *      +- z1: leader of its own process group, exits with status 42
 *      +- m:  alive, a member of z1's group (which only the zombie keeps)
 *      +- z2: killed by SIGUSR1 (its default action, no core dump)
 *      +- z3: changed what /proc shows of it before it died: signals
 *             blocked, ignored and caught, limits, nice, personality,
 *             bounding set, no_new_privs and, where the user namespace
 *             maps UID 1000, its IDs; killed by SIGABRT (a core signal)
 *             with a soft core limit of 0, or by SIGTERM where
 *             core_pattern is a pipe (whose helper runs whatever the limit)
 *
 * P, not the root, is the parent: in a container the root is the init, to
 * which the restore's finishing helper adds a SIGCHLD of its own
 * (docs/engine.md).
 *
 * Before READY both z1 and z2 have exited and are zombies (waitid with
 * WNOWAIT). After restore: both are still zombies with their PIDs, names and
 * groups, m is still in z1's group, no SIGCHLD arrived that had not
 * arrived before, each zombie's /proc (status: signals and credentials;
 * limits, nice, personality) reads as before, and waitpid() reports exit
 * status 42 for z1, death by SIGUSR1 without a core dump for z2 and by
 * z3's signal without one for z3. The root forwards SIGTERM to P, P to
 * m, which checks its own IDs and exits 0. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t chld_count;

static void
on_chld(int sig)
{
  (void)sig;
  chld_count++;
}

/* The state letter of /proc/PID/stat, or '?'. */
static char
state_of(pid_t pid)
{
  char path[64], buf[512], *q;
  FILE *f;
  size_t n;
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  f = fopen(path, "re");
  if (!f)
    return '?';
  n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  q = strrchr(buf, ')');
  return q && q[1] == ' ' ? q[2] : '?';
}

/* /proc/PID/comm without its newline, into BUF. */
static void
comm_of(pid_t pid, char *buf, size_t len)
{
  char path[64];
  FILE *f;
  snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
  buf[0] = 0;
  f = fopen(path, "re");
  if (!f)
    return;
  if (!fgets(buf, (int)len, f))
    buf[0] = 0;
  fclose(f);
  buf[strcspn(buf, "\n")] = 0;
}

/* What /proc shows of zombie PID that a restore keeps, into BUF: its
   status's signal and credential lines, its limits, nice value (stat
   field 19) and personality. */
static void
zombie_view(pid_t pid, char *buf, size_t len)
{
  static const char *const keys[]
      = { "SigBlk:", "SigIgn:", "SigCgt:", "Uid:",    "Gid:",        "Groups:", "CapInh:",
          "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:", "NoNewPrivs:", NULL };
  char path[64], line[512];
  size_t used = 0;
  FILE *f;
  buf[0] = 0;
#define ADD(...)                                                                                   \
  do                                                                                               \
    if (used < len)                                                                                \
      used += snprintf(buf + used, len - used, __VA_ARGS__);                                       \
  while (0)
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  if ((f = fopen(path, "re")))
    {
      while (fgets(line, sizeof line, f))
        for (int k = 0; keys[k]; k++)
          if (strncmp(line, keys[k], strlen(keys[k])) == 0)
            ADD("%s", line);
      fclose(f);
    }
  snprintf(path, sizeof path, "/proc/%d/limits", (int)pid);
  if ((f = fopen(path, "re")))
    {
      while (fgets(line, sizeof line, f))
        ADD("%s", line);
      fclose(f);
    }
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  if ((f = fopen(path, "re")))
    {
      char *q;
      if (fgets(line, sizeof line, f) && (q = strrchr(line, ')')))
        {
          for (int n = 0; q && n < 17; n++)
            q = strchr(q + 1, ' ');
          ADD("nice %ld\n", q ? strtol(q + 1, NULL, 10) : -99L);
        }
      fclose(f);
    }
  snprintf(path, sizeof path, "/proc/%d/personality", (int)pid);
  if ((f = fopen(path, "re")))
    {
      if (fgets(line, sizeof line, f))
        ADD("personality %s", line);
      fclose(f);
    }
#undef ADD
}

/* The lines where A and B differ (the first three), for a FAIL line. */
static const char *
first_diff(const char *a, const char *b, char *out, size_t len)
{
  size_t used = 0;
  int shown = 0;
  out[0] = 0;
  while ((*a || *b) && shown < 3 && used < len)
    {
      size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n");
      if (la != lb || strncmp(a, b, la) != 0)
        used += snprintf(out + used, len - used, "%sbefore \"%.*s\", after \"%.*s\"",
                         shown++ ? "; " : "", (int)la, a, (int)lb, b);
      a += la + (a[la] == '\n'), b += lb + (b[lb] == '\n');
    }
  return out;
}

/* Do views A and B differ only in B's bounding set holding
   CAP_CHECKPOINT_RESTORE in addition (a known gap: zdtm-caps)? */
static bool
only_bnd_cr(const char *a, const char *b)
{
  const char *pa = strstr(a, "CapBnd:\t"), *pb = strstr(b, "CapBnd:\t");
  uint64_t ba, bb;
  if (!pa || !pb || pa - a != pb - b)
    return false;
  ba = strtoull(pa + 8, NULL, 16), bb = strtoull(pb + 8, NULL, 16);
  return bb == (ba | 1ULL << CAP_CHECKPOINT_RESTORE) && ba != bb && strncmp(a, b, pa - a) == 0
         && strcmp(strchr(pa, '\n'), strchr(pb, '\n')) == 0;
}

/* z3's life: change what a zombie shows, then die by SIG. */
static void __attribute__((noreturn)) z3_main(int sig)
{
  struct sigaction sa;
  sigset_t blk;
  struct rlimit nofile = { 100, 200 }, core = { 0, 1 << 20 };
  sigemptyset(&blk);
  sigaddset(&blk, SIGUSR2);
  sigaddset(&blk, SIGHUP);
  sigprocmask(SIG_BLOCK, &blk, NULL);
  signal(SIGPIPE, SIG_IGN);
  signal(SIGINT, SIG_IGN);
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_chld;
  sigaction(SIGWINCH, &sa, NULL);
  signal(SIGCHLD, SIG_DFL);
  setrlimit(RLIMIT_NOFILE, &nofile);
  setrlimit(RLIMIT_CORE, &core);
  setpriority(PRIO_PROCESS, 0, 3);
  personality(PER_LINUX | ADDR_NO_RANDOMIZE);
  prctl(PR_CAPBSET_DROP, CAP_NET_RAW, 0, 0, 0);
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  /* Another user where the namespace has one (a container's). */
  if (zdtm_become(1000) < 0)
    _exit(98); /* P finds the wrong status */
  signal(sig, SIG_DFL);
  raise(sig);
  _exit(99);
}

/* SIGABRT when a core signal's death makes no core here (a file
   core_pattern, a soft limit of 0), else SIGTERM. */
static int
z3_signal(void)
{
  char c = '|';
  int fd = open("/proc/sys/kernel/core_pattern", O_RDONLY | O_CLOEXEC);
  if (fd >= 0)
    {
      if (read(fd, &c, 1) != 1)
        c = '|';
      close(fd);
    }
  return c == '|' ? SIGTERM : SIGABRT;
}

static void
sleep_ms(long ms)
{
  struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
    ;
}

static void
member(pid_t root, pid_t leader, int ready_fd)
{
  if (setpgid(0, leader) < 0 && getpgid(0) != leader)
    zdtm_error("m: join group %d: %s", leader, strerror(errno));
  if (write(ready_fd, "m", 1) != 1)
    zdtm_error("m: report ready: %s", strerror(errno));
  close(ready_fd);
  zdtm_wait();
  if (getppid() != root)
    zdtm_fail("m: parent expected %d, got %d", root, getppid());
  if (getpgid(0) != leader)
    zdtm_fail("m: process group expected %d (the zombie's), got %d", leader, getpgid(0));
  _exit(zdtm_status());
}

/* P: the parent of the zombies. */
static void
parent(int up_fd)
{
  int go[2], ready[2], st, chld_before, sig3 = z3_signal();
  pid_t root, z1, z2, z3, m;
  struct sigaction sa;
  siginfo_t si;
  char c, comm1[32], comm2[32], now[32];
  static char view[3][4096], view_now[4096], why[512];

  root = getpid(); /* m's parent */
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_chld;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGCHLD, &sa, NULL) < 0)
    zdtm_error("sigaction SIGCHLD: %s", strerror(errno));
  if (pipe(go) < 0 || pipe(ready) < 0)
    zdtm_error("pipe: %s", strerror(errno));

  z1 = fork();
  if (z1 < 0)
    zdtm_error("fork z1: %s", strerror(errno));
  if (z1 == 0)
    {
      setpgid(0, 0);
      close(go[1]);
      while (read(go[0], &c, 1) < 0 && errno == EINTR)
        ;
      _exit(42);
    }
  if (setpgid(z1, z1) < 0 && getpgid(z1) != z1)
    zdtm_error("setpgid z1: %s", strerror(errno));

  m = fork();
  if (m < 0)
    zdtm_error("fork m: %s", strerror(errno));
  if (m == 0)
    {
      close(go[0]), close(go[1]), close(ready[0]), close(up_fd);
      member(root, z1, ready[1]);
    }
  close(ready[1]);
  if (read(ready[0], &c, 1) != 1)
    zdtm_error("m never became ready");
  close(ready[0]);

  z2 = fork();
  if (z2 < 0)
    zdtm_error("fork z2: %s", strerror(errno));
  if (z2 == 0)
    {
      close(go[0]), close(go[1]);
      signal(SIGUSR1, SIG_DFL);
      for (;;)
        pause();
    }
  z3 = fork();
  if (z3 < 0)
    zdtm_error("fork z3: %s", strerror(errno));
  if (z3 == 0)
    {
      close(go[1]);
      while (read(go[0], &c, 1) < 0 && errno == EINTR)
        ;
      z3_main(sig3);
    }
  close(go[0]);
  close(go[1]); /* z1 and z3 exit */
  kill(z2, SIGUSR1);
  if (waitid(P_PID, z1, &si, WEXITED | WNOWAIT) < 0 || waitid(P_PID, z2, &si, WEXITED | WNOWAIT) < 0
      || waitid(P_PID, z3, &si, WEXITED | WNOWAIT) < 0)
    zdtm_error("waitid WNOWAIT: %s", strerror(errno));
  sleep_ms(100); /* the SIGCHLDs handled */
  chld_before = chld_count;
  if (state_of(z1) != 'Z' || state_of(z2) != 'Z' || state_of(z3) != 'Z')
    zdtm_error("z1 (%c), z2 (%c) and z3 (%c) are not zombies", state_of(z1), state_of(z2),
               state_of(z3));
  zombie_view(z1, view[0], sizeof view[0]);
  zombie_view(z2, view[1], sizeof view[1]);
  zombie_view(z3, view[2], sizeof view[2]);
  if (!strstr(view[2], "NoNewPrivs:\t1") || !strstr(view[2], "nice 3"))
    zdtm_error("z3 did not change its state: %s", view[2]);
  if (!strstr(view[2], "Uid:\t1000\t"))
    zdtm_note("z3 kept its user IDs (this user namespace maps no UID 1000, or it lacks "
              "CAP_SETUID and CAP_SETGID)");
  if (sig3 != SIGABRT)
    zdtm_note("z3 died by SIGTERM, not a core signal: core_pattern is a pipe here");

  comm_of(z1, comm1, sizeof comm1);
  comm_of(z2, comm2, sizeof comm2);

  if (write(up_fd, "P", 1) != 1)
    zdtm_error("report ready: %s", strerror(errno));
  close(up_fd);
  zdtm_wait();

  comm_of(z1, now, sizeof now);
  if (strcmp(now, comm1) != 0)
    zdtm_fail("z1 (PID %d): comm expected %s, got %s", z1, comm1, now);
  comm_of(z2, now, sizeof now);
  if (strcmp(now, comm2) != 0)
    zdtm_fail("z2 (PID %d): comm expected %s, got %s", z2, comm2, now);

  if (chld_count != chld_before)
    zdtm_fail("SIGCHLD handled %d times before checkpoint, %d after restore", chld_before,
              (int)chld_count);
  /* After that count: the probe forks a child. */
  for (int k = 0; k < 3; k++)
    {
      pid_t z = k == 0 ? z1 : k == 1 ? z2 : z3;
      zombie_view(z, view_now, sizeof view_now);
      if (strcmp(view_now, view[k]) != 0 && only_bnd_cr(view[k], view_now)
          && zdtm_probe_bnd_drop(why, sizeof why) == 0)
        zdtm_known("z%d (PID %d): its bounding set keeps CAP_CHECKPOINT_RESTORE after restore: "
                   "this kernel drops a bounding capability only with CAP_SETPCAP",
                   k + 1, z);
      else if (strcmp(view_now, view[k]) != 0)
        zdtm_fail("z%d (PID %d): /proc differs: %s", k + 1, z,
                  first_diff(view[k], view_now, why, sizeof why));
    }
  if (state_of(z1) != 'Z')
    zdtm_fail("z1 (PID %d): state expected Z, got %c", z1, state_of(z1));
  if (state_of(z2) != 'Z')
    zdtm_fail("z2 (PID %d): state expected Z, got %c", z2, state_of(z2));
  if (getpgid(z1) != z1)
    zdtm_fail("z1 (PID %d): process group expected %d, got %d", z1, z1, getpgid(z1));
  if (getpgid(z2) != getpgid(0))
    zdtm_fail("z2 (PID %d): process group expected %d, got %d", z2, getpgid(0), getpgid(z2));
  if (getpgid(m) != z1)
    zdtm_fail("m (PID %d): process group expected %d, got %d", m, z1, getpgid(m));
  if (waitpid(z1, &st, WNOHANG) != z1)
    zdtm_fail("z1 (PID %d): waitpid did not find it exited: %s", z1, strerror(errno));
  else if (!WIFEXITED(st) || WEXITSTATUS(st) != 42)
    zdtm_fail("z1 (PID %d): status expected exit 42 (0x2a00), got 0x%x", z1, st);
  if (waitpid(z2, &st, WNOHANG) != z2)
    zdtm_fail("z2 (PID %d): waitpid did not find it exited: %s", z2, strerror(errno));
  else if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGUSR1 || WCOREDUMP(st))
    zdtm_fail("z2 (PID %d): status expected SIGUSR1 without core (0x%x), got 0x%x", z2, SIGUSR1,
              st);
  if (waitpid(z3, &st, WNOHANG) != z3)
    zdtm_fail("z3 (PID %d): waitpid did not find it exited: %s", z3, strerror(errno));
  else if (!WIFSIGNALED(st) || WTERMSIG(st) != sig3 || WCOREDUMP(st))
    zdtm_fail("z3 (PID %d): status expected signal %d without core, got 0x%x", z3, sig3, st);
  kill(m, SIGTERM);
  if (waitpid(m, &st, 0) != m)
    zdtm_fail("m (PID %d): waitpid: %s", m, strerror(errno));
  else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    zdtm_fail("m (PID %d): ended with status 0x%x", m, st);
  _exit(zdtm_status());
}

int
main(int argc, char **argv)
{
  int up[2], st;
  pid_t p;
  char c;

  zdtm_init(argc, argv);
  if (pipe(up) < 0)
    zdtm_error("pipe: %s", strerror(errno));
  p = fork();
  if (p < 0)
    zdtm_error("fork: %s", strerror(errno));
  if (p == 0)
    {
      close(up[0]);
      parent(up[1]);
    }
  close(up[1]);
  if (read(up[0], &c, 1) != 1)
    {
      waitpid(p, &st, 0);
      exit(2); /* P wrote its ERROR line */
    }
  close(up[0]);
  zdtm_ready();
  zdtm_wait();
  kill(p, SIGTERM);
  if (waitpid(p, &st, 0) != p)
    zdtm_fail("P (PID %d): waitpid: %s", p, strerror(errno));
  else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    zdtm_fail("P (PID %d): ended with status 0x%x", p, st);
  zdtm_finish();
}
