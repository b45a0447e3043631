/* zdtm.c: the protocol of zdtm.h. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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
