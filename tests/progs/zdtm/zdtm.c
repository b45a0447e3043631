/* zdtm.c: the protocol of zdtm.h. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *ready_path;
static const char *result_path;
static int paths_fd = AT_FDCWD; /* what absolute READY and RESULT paths start from */
volatile sig_atomic_t zdtm_stop_flag;
static bool failed;

static void
on_term(int sig)
{
  (void)sig;
  zdtm_stop_flag = 1;
}

/* Tests may chdir: resolve relative paths once, at start. */
static const char *
absolute(const char *p)
{
  char cwd[4096];
  char *out;

  if (p[0] == '/' || !getcwd(cwd, sizeof(cwd)))
    return p;
  if (asprintf(&out, "%s/%s", cwd, p) < 0)
    return p;
  return out;
}

void
zdtm_init(int argc, char **argv)
{
  struct sigaction sa;

  if (argc > 1 && argv[1][0])
    ready_path = absolute(argv[1]);
  if (argc > 2 && argv[2][0])
    result_path = absolute(argv[2]);
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_term;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGTERM, &sa, NULL) < 0)
    zdtm_error("sigaction SIGTERM: %s", strerror(errno));
  /* Line-buffered stdout even on a file, so that lines are whole. */
  setvbuf(stdout, NULL, _IOLBF, 0);
}

void
zdtm_paths_from(int dirfd)
{
  paths_fd = dirfd;
}

/* PATH as openat() takes it from paths_fd: without its leading slashes once
   that is a directory of its own. */
static const char *
at_path(const char *path)
{
  if (paths_fd != AT_FDCWD)
    while (*path == '/')
      path++;
  return path;
}

void
zdtm_ready(void)
{
  char tmp[4096], buf[32];
  int fd, n;

  if (!ready_path)
    {
      printf("READY %d\n", (int)getpid());
      fflush(stdout);
      return;
    }
  snprintf(tmp, sizeof(tmp), "%s.tmp", ready_path);
  fd = openat(paths_fd, at_path(tmp), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    zdtm_error("create %s: %s", tmp, strerror(errno));
  n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
  if (write(fd, buf, n) != n || close(fd) < 0)
    zdtm_error("write %s: %s", tmp, strerror(errno));
  if (renameat(paths_fd, at_path(tmp), paths_fd, at_path(ready_path)) < 0)
    zdtm_error("rename %s: %s", tmp, strerror(errno));
}

bool
zdtm_stopped(void)
{
  return zdtm_stop_flag;
}

void
zdtm_wait(void)
{
  while (!zdtm_stop_flag)
    {
      struct timespec ts = { 0, 20 * 1000 * 1000 };
      nanosleep(&ts, NULL);
    }
}

static void
out_line(const char *prefix, const char *fmt, va_list ap)
{
  char line[4096];
  int n, fd;

  n = snprintf(line, sizeof(line), "%s", prefix);
  n += vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
  if (n > (int)sizeof(line) - 2)
    n = sizeof(line) - 2;
  line[n++] = '\n';
  if (!result_path)
    {
      fflush(stdout);
      if (write(1, line, n) < 0)
        _exit(3);
      return;
    }
  fd = openat(paths_fd, at_path(result_path), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0 || write(fd, line, n) != n)
    {
      fprintf(stderr, "zdtm: cannot write %s: %s\n", result_path, strerror(errno));
      _exit(3);
    }
  close(fd);
}

void
zdtm_fail(const char *fmt, ...)
{
  va_list ap;

  failed = true;
  va_start(ap, fmt);
  out_line("FAIL: ", fmt, ap);
  va_end(ap);
}

bool
zdtm_failed(void)
{
  return failed;
}

void
zdtm_note(const char *fmt, ...)
{
  va_list ap;

  va_start(ap, fmt);
  out_line("NOTE: ", fmt, ap);
  va_end(ap);
}

void
zdtm_known(const char *fmt, ...)
{
  va_list ap;

  va_start(ap, fmt);
  out_line("KNOWN: ", fmt, ap);
  va_end(ap);
}

void
zdtm_error(const char *fmt, ...)
{
  va_list ap;

  va_start(ap, fmt);
  out_line("ERROR: ", fmt, ap);
  va_end(ap);
  exit(2);
}

int
zdtm_status(void)
{
  return failed ? 1 : 0;
}

static void
write_pass(const char *fmt, ...)
{
  va_list ap;

  va_start(ap, fmt);
  out_line("", fmt, ap);
  va_end(ap);
}

void
zdtm_finish(void)
{
  if (!failed)
    write_pass("PASS");
  exit(failed ? 1 : 0);
}

void
zdtm_fill(void *p, size_t len, uint32_t seed, uint64_t base)
{
  uint8_t *b = p;
  for (size_t i = 0; i < len; i++)
    b[i] = zdtm_pattern(seed, base + i);
}

size_t
zdtm_check(const void *p, size_t len, uint32_t seed, uint64_t base)
{
  const uint8_t *b = p;
  for (size_t i = 0; i < len; i++)
    if (b[i] != zdtm_pattern(seed, base + i))
      return i;
  return (size_t)-1;
}

bool
zdtm_await(volatile uint32_t *w, uint32_t want)
{
  struct timespec ts = { 0, 1000000 };
  for (int i = 0; i < 20000; i++)
    {
      if (*w == want)
        return true;
      nanosleep(&ts, NULL);
    }
  return false;
}

void
zdtm_tcp_pair(int *l, struct sockaddr_in *a, int *c, int *s)
{
  socklen_t len = sizeof *a;
  int one = 1;

  memset(a, 0, sizeof *a);
  a->sin_family = AF_INET;
  a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  *l = socket(AF_INET, SOCK_STREAM, 0);
  *c = socket(AF_INET, SOCK_STREAM, 0);
  if (*l < 0 || *c < 0 || bind(*l, (struct sockaddr *)a, sizeof *a) < 0 || listen(*l, 2) < 0
      || getsockname(*l, (struct sockaddr *)a, &len) < 0)
    zdtm_error("listener: %s", strerror(errno));
  if (setsockopt(*c, SOL_TCP, TCP_NODELAY, &one, sizeof one) < 0
      || connect(*c, (struct sockaddr *)a, sizeof *a) < 0 || (*s = accept(*l, NULL, NULL)) < 0)
    zdtm_error("connection: %s", strerror(errno));
}

int
zdtm_become(unsigned id)
{
  char map[512];
  long inner, outer, count;
  bool mapped = false;
  uint64_t inh, prm, eff, need = 1ULL << CAP_SETUID | 1ULL << CAP_SETGID;
  gid_t g = id;
  int fd = open("/proc/self/uid_map", O_RDONLY | O_CLOEXEC);
  ssize_t n = fd < 0 ? -1 : read(fd, map, sizeof map - 1);
  if (fd >= 0)
    close(fd);
  map[n > 0 ? n : 0] = 0;
  for (char *l = map; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] == '\n'))
    if (sscanf(l, "%ld %ld %ld", &inner, &outer, &count) == 3 && inner <= (long)id
        && (long)id < inner + count)
      mapped = true;
  if (!mapped || getuid() != 0 || zdtm_get_caps(&inh, &prm, &eff) < 0 || (eff & need) != need)
    return 0;
  if (setgroups(1, &g) < 0 || setresgid(id, id, id) < 0 || setresuid(id, id, id) < 0)
    return -1;
  return 1;
}

/* The calling thread's capability sets (capget, capset). */
int
zdtm_get_caps(uint64_t *inh, uint64_t *prm, uint64_t *eff)
{
  struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
  struct __user_cap_data_struct d[2];
  memset(d, 0, sizeof(d));
  if (syscall(SYS_capget, &h, d) < 0)
    return -1;
  *inh = d[0].inheritable | (uint64_t)d[1].inheritable << 32;
  *prm = d[0].permitted | (uint64_t)d[1].permitted << 32;
  *eff = d[0].effective | (uint64_t)d[1].effective << 32;
  return 0;
}

int
zdtm_set_caps(uint64_t inh, uint64_t prm, uint64_t eff)
{
  struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
  struct __user_cap_data_struct d[2] = {
    { (uint32_t)eff, (uint32_t)prm, (uint32_t)inh },
    { (uint32_t)(eff >> 32), (uint32_t)(prm >> 32), (uint32_t)(inh >> 32) },
  };
  return syscall(SYS_capset, &h, d);
}

/* Does this kernel let a task that holds CAP_CHECKPOINT_RESTORE in its own
   user namespace, but not CAP_SETPCAP, drop CAP_CHECKPOINT_RESTORE from its
   bounding set (what the restore of a task that did not have it needs)?
   A child enters a new user namespace, where it holds every capability and
   a full bounding set, takes CAP_SETPCAP out of its effective set and
   tries. 1: allowed; 0: refused (EPERM); -1: could not be asked (WHY). */
int
zdtm_probe_bnd_drop(char *why, size_t len)
{
  int pfd[2], st;
  int res[2] = { 0, 0 }; /* step, errno */
  pid_t pid;

  if (pipe(pfd) < 0)
    {
      snprintf(why, len, "pipe: %s", strerror(errno));
      return -1;
    }
  pid = fork();
  if (pid < 0)
    {
      snprintf(why, len, "fork: %s", strerror(errno));
      close(pfd[0]);
      close(pfd[1]);
      return -1;
    }
  if (pid == 0)
    {
      uint64_t inh, prm, eff;
      close(pfd[0]);
      if (unshare(CLONE_NEWUSER) < 0)
        res[0] = 1, res[1] = errno;
      else if (zdtm_get_caps(&inh, &prm, &eff) < 0)
        res[0] = 2, res[1] = errno;
      else if (zdtm_set_caps(inh, prm, eff & ~(1ULL << CAP_SETPCAP)) < 0)
        res[0] = 3, res[1] = errno;
      else if (prctl(PR_CAPBSET_DROP, CAP_CHECKPOINT_RESTORE, 0, 0, 0) < 0)
        res[0] = 4, res[1] = errno;
      else if (prctl(PR_CAPBSET_READ, CAP_CHECKPOINT_RESTORE, 0, 0, 0) != 0)
        res[0] = 5, res[1] = 0;
      if (write(pfd[1], res, sizeof res) != sizeof res)
        _exit(3);
      _exit(0);
    }
  close(pfd[1]);
  if (read(pfd[0], res, sizeof res) != sizeof res)
    res[0] = -1;
  close(pfd[0]);
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  switch (res[0])
    {
    case 0:
      return 1;
    case 4:
      if (res[1] == EPERM)
        return 0;
      snprintf(why, len, "PR_CAPBSET_DROP: %s", strerror(res[1]));
      return -1;
    case 1:
      snprintf(why, len, "unshare(CLONE_NEWUSER): %s", strerror(res[1]));
      return -1;
    case 2:
    case 3:
      snprintf(why, len, "%s in a new user namespace: %s", res[0] == 2 ? "capget" : "capset",
               strerror(res[1]));
      return -1;
    case 5:
      snprintf(why, len, "PR_CAPBSET_DROP succeeded but the capability is still there");
      return -1;
    default:
      snprintf(why, len, "the probing child died");
      return -1;
    }
}

/* Child K, of directory NAME, has made READY: K; 0 (a failure said) when
   it ended first or not within 120 s (then killed). */
static pid_t
batch_await(pid_t k, const char *name, const char *ready)
{
  for (int ms = 0; ms < 120000; ms++)
    {
      int st;
      if (access(ready, F_OK) == 0)
        return k;
      if (waitpid(k, &st, WNOHANG) == k)
        {
          zdtm_fail("%s ended before it was ready (status 0x%x; its lines: %s/result)", name, st,
                    name);
          return 0;
        }
      usleep(1000);
    }
  zdtm_fail("%s not ready within 120 s", name);
  kill(k, SIGKILL);
  return 0;
}

void
zdtm_batch(int n, const char *const *names,
           void (*run)(int j, const char *ready, const char *result, void *arg), void *arg)
{
  pid_t *kids = calloc(n > 0 ? n : 1, sizeof *kids);
  char cwd[4096];
  if (!kids || !getcwd(cwd, sizeof cwd))
    zdtm_error("batch: %s", strerror(errno));
  for (int j = 0; j < n; j++)
    {
      char ready[4096 + 300], result[4096 + 300];
      if (strlen(names[j]) > 200 || strchr(names[j], '/'))
        zdtm_error("batch: a directory name that is a path or too long: %s", names[j]);
      snprintf(ready, sizeof ready, "%s/%s/ready", cwd, names[j]);
      snprintf(result, sizeof result, "%s/%s/result", cwd, names[j]);
      if (mkdir(names[j], 0755) < 0 && errno != EEXIST)
        zdtm_error("mkdir %s: %s", names[j], strerror(errno));
      kids[j] = fork();
      if (kids[j] < 0)
        zdtm_error("fork: %s", strerror(errno));
      if (kids[j] == 0)
        {
          if (chdir(names[j]) < 0)
            _exit(127);
          run(j, ready, result, arg);
          _exit(127);
        }
      if (!batch_await(kids[j], names[j], ready))
        {
          for (int k = 0; k < j; k++)
            kill(kids[k], SIGKILL);
          zdtm_finish();
        }
    }
  zdtm_ready();
  zdtm_wait();
  for (int j = 0; j < n; j++)
    {
      int st = 0;
      kill(kids[j], SIGTERM);
      while (waitpid(kids[j], &st, 0) < 0 && errno == EINTR)
        ;
      if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        zdtm_fail("%s: status 0x%x (its lines: %s/result)", names[j], st, names[j]);
    }
  zdtm_finish();
}
