/* engine-memfile-prog READY RESULT: a process whose memory has no path to
 * open again: a memfd mapped shared, shared anonymous memory, and a deleted
 * file mapped private with one page copied on write. A child shares the
 * first two. On SIGTERM (after checkpoint and restore) the parent checks
 * every byte, writes a marker into both shared objects and lets the child
 * check that it sees the marker: the objects are still shared. RESULT gets
 * PASS or FAIL lines. Used by tests/host/engine-memfile.test. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define PG 4096
static FILE *out;
static int fails;
static volatile sig_atomic_t got;

static void
on_sig(int s)
{
  got = s;
}

static void
failf(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fputs("FAIL: ", out);
  vfprintf(out, fmt, ap);
  fputc('\n', out);
  va_end(ap);
  fails++;
}

static int
check(const unsigned char *p, size_t n, unsigned char seed, const char *what)
{
  for (size_t i = 0; i < n; i++)
    if (p[i] != (unsigned char)(seed + i * 7))
      {
        failf("%s: byte %zu is %u, expected %u", what, i, p[i], (unsigned char)(seed + i * 7));
        return -1;
      }
  return 0;
}

static void
fill(unsigned char *p, size_t n, unsigned char seed)
{
  for (size_t i = 0; i < n; i++)
    p[i] = (unsigned char)(seed + i * 7);
}

int
main(int argc, char **argv)
{
  unsigned char *mfd, *shanon, *del;
  char path[] = "engine-memfile.XXXXXX";
  int fd, st;
  pid_t kid;
  sigset_t mask, old;
  FILE *r;

  if (argc != 3)
    return 2;
  out = fopen(argv[2], "w");
  if (!out)
    return 2;
  setvbuf(out, NULL, _IONBF, 0);
  signal(SIGTERM, on_sig);
  signal(SIGUSR1, on_sig);
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGUSR1);
  sigprocmask(SIG_BLOCK, &mask, &old);

  fd = memfd_create("crest-test", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, 3 * PG) < 0
      || (mfd = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED)
    return fprintf(out, "ERROR: memfd: %s\n", strerror(errno)), 1;
  close(fd);
  fill(mfd, 3 * PG, 11);
  shanon = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shanon == MAP_FAILED)
    return fprintf(out, "ERROR: shared anonymous: %s\n", strerror(errno)), 1;
  fill(shanon, 2 * PG, 23);
  fd = mkstemp(path);
  if (fd < 0 || ftruncate(fd, 2 * PG) < 0)
    return fprintf(out, "ERROR: %s: %s\n", path, strerror(errno)), 1;
  del = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (del == MAP_FAILED)
    return fprintf(out, "ERROR: map %s: %s\n", path, strerror(errno)), 1;
  fill(del, 2 * PG, 37);
  munmap(del, 2 * PG);
  del = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  if (del == MAP_FAILED)
    return fprintf(out, "ERROR: map %s privately: %s\n", path, strerror(errno)), 1;
  close(fd);
  unlink(path);
  fill(del, PG, 41); /* page 0 copied on write, page 1 still the file's */

  kid = fork();
  if (kid == 0)
    {
      int s;
      sigwait(&mask, &s);
      if (check(mfd, 3 * PG - 1, 11, "child: memfd") == 0 && mfd[3 * PG - 1] != 0xA5)
        failf("child: the parent's marker is not in the memfd: not shared any more");
      if (check(shanon, 2 * PG - 1, 23, "child: shared anonymous") == 0
          && shanon[2 * PG - 1] != 0x5A)
        failf("child: the parent's marker is not in the shared anonymous memory: not shared any "
              "more");
      _exit(fails ? 1 : 0);
    }
  r = fopen(argv[1], "w");
  if (!r)
    return 2;
  fprintf(r, "%d\n", (int)getpid());
  fclose(r);
  while (got != SIGTERM)
    {
      int s;
      if (sigwait(&mask, &s) == 0)
        got = s;
    }
  check(mfd, 3 * PG, 11, "memfd");
  check(shanon, 2 * PG, 23, "shared anonymous");
  check(del, PG, 41, "deleted file, page copied on write");
  check(del + PG, PG, (unsigned char)(37 + PG * 7), "deleted file, page of the file");
  mfd[3 * PG - 1] = 0xA5;
  shanon[2 * PG - 1] = 0x5A;
  kill(kid, SIGUSR1);
  if (waitpid(kid, &st, 0) != kid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
    failf("child %d ended with status %#x", (int)kid, st);
  fputs(fails ? "FAIL\n" : "PASS\n", out);
  return fails ? 1 : 0;
}
