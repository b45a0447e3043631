/* zdtm-cow: private anonymous memory a parent shares copy-on-write with the
 * children it forked (1024 pages, MAP_PRIVATE, filled before the forks):
 * - child 1 rewrote pages 0-3 and dropped pages 10-11 (MADV_DONTNEED);
 * - child 2 only reads, and forked a grandchild that only reads;
 * - child 3 only reads;
 * - the parent rewrote page 5 after the forks (the children keep the old).
 * A private mapping of a file (64 pages, zdtm-cow.dat in the current
 * directory) the same way: the parent wrote pages 0-47 before the forks
 * (48-63 stay the file's), child 1 rewrote pages 0-1 and 50 and dropped
 * 10-11 (which read the file again), the parent rewrote page 5 after the
 * forks. And the stack: 16 KiB of main's frame, filled before the forks
 * and written by nobody since.
 * After restore, before anything is written:
 * - each process's view of the region, byte for byte, as set up;
 * - each process's region is still shared, as smaps shows it: at most 8
 *   private pages (child 1: pages 0-3 and 5; the parent and the others:
 *   page 5), the rest (1016 pages and more) shared, and the parent's Pss
 *   at most half its Rss (the pages are not copied once per process);
 *   the same of the file mapping (at most 8 private pages, at least 40
 *   shared, only the written pages present); at least 12 KiB of each
 *   process's [stack] shared;
 * then, in turn (flags in a shared page):
 * - the parent writes page 100: no child sees it;
 * - each child writes page 200: neither the parent nor another sees it;
 * the same with pages 20 and 30 of the file mapping.
 * The root forwards SIGTERM to the children and reports their status. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PG 4096UL
#define NPG 1024UL
#define NPROC 5       /* the parent, three children, a grandchild */
#define FPG 64UL      /* pages of the file mapping */
#define FWROTE 48UL   /* of which the parent wrote the first ones */
#define DEEP (4 * PG) /* main's frame filled before the forks */

struct sync
{
  volatile uint32_t ready[NPROC];    /* set up, before the checkpoint */
  volatile uint32_t measured[NPROC]; /* after restore: smaps read */
  volatile uint32_t parent_wrote;
  volatile uint32_t child_wrote[NPROC];
  volatile uint32_t checked[NPROC];
};

static uint8_t *mem, *fmem; /* the anonymous and the file region */
static uint8_t *deep;       /* in main's frame */
static struct sync *sy;

/* What process ME must see at page PGNO: fill EXP. */
static void
expected(int me, size_t pgno, uint8_t *exp)
{
  if (me == 1 && pgno < 4)
    zdtm_fill(exp, PG, 92, pgno * PG);
  else if (me == 1 && (pgno == 10 || pgno == 11))
    memset(exp, 0, PG);
  else if (me == 0 && pgno == 5)
    zdtm_fill(exp, PG, 93, pgno * PG);
  else
    zdtm_fill(exp, PG, 91, pgno * PG);
}

/* The same for page PGNO of the file mapping. */
static void
fexpected(int me, size_t pgno, uint8_t *exp)
{
  uint32_t seed = 95; /* the file's own */
  if (me == 1 && (pgno < 2 || pgno == 50))
    seed = 97;
  else if (me == 1 && (pgno == 10 || pgno == 11))
    seed = 95;
  else if (me == 0 && pgno == 5)
    seed = 98;
  else if (pgno < FWROTE)
    seed = 96;
  zdtm_fill(exp, PG, seed, pgno * PG);
}

static void
check_content(int me, const char *when)
{
  static uint8_t exp[PG];
  for (size_t i = 0; i < NPG; i++)
    {
      expected(me, i, exp);
      if (memcmp(mem + i * PG, exp, PG) != 0)
        {
          zdtm_fail("process %d: %s: page %zu differs from what it held", me, when, i);
          return;
        }
    }
  for (size_t i = 0; i < FPG; i++)
    {
      fexpected(me, i, exp);
      if (memcmp(fmem + i * PG, exp, PG) != 0)
        {
          zdtm_fail("process %d: %s: page %zu of the file mapping differs from what it held", me,
                    when, i);
          return;
        }
    }
  if (zdtm_check(deep, DEEP, 94, 0) != (size_t)-1)
    zdtm_fail("process %d: %s: main's frame differs from what it held", me, when);
}

/* Rss, Pss, Shared_* and Private_* (KiB) of the mapping [S, E), or of
   the one named NAME (S = 0), from smaps. */
static int
region_smaps(unsigned long rs, unsigned long re, const char *name, long *rss, long *pss,
             long *shared, long *priv)
{
  FILE *f = fopen("/proc/self/smaps", "re");
  char line[512];
  bool in = false;
  int got = 0;
  *rss = *pss = *shared = *priv = 0;
  if (!f)
    return -1;
  while (fgets(line, sizeof line, f))
    {
      unsigned long s, e, off;
      long v;
      char key[64], perms[8];
      if (sscanf(line, "%lx-%lx %4s %lx", &s, &e, perms, &off) == 4)
        {
          in = rs ? s == rs && e == re : strstr(line, name) != NULL;
          got += in;
          continue;
        }
      if (!in || sscanf(line, "%63[^:]: %ld kB", key, &v) != 2)
        continue;
      if (strcmp(key, "Rss") == 0)
        *rss = v;
      else if (strcmp(key, "Pss") == 0)
        *pss = v;
      else if (strncmp(key, "Shared_", 7) == 0)
        *shared += v;
      else if (strncmp(key, "Private_", 8) == 0)
        *priv += v;
    }
  fclose(f);
  return got == 1 ? 0 : -1;
}

/* Region WHAT at [R, R + N pages): PRESENT pages in memory, at most 8
   private, at least MINSHARED shared, the parent's Pss at most half its
   Rss. */
static void
check_region(int me, const char *what, uint8_t *r, long n, long present, long minshared)
{
  long rss, pss, shared, priv;
  if (region_smaps((unsigned long)r, (unsigned long)(r + n * PG), NULL, &rss, &pss, &shared, &priv)
      < 0)
    {
      zdtm_fail("process %d: the %s region %p is not one mapping in smaps", me, what, (void *)r);
      return;
    }
  if (rss != present * 4)
    zdtm_fail("process %d: %s region Rss expected %ld kB, got %ld kB", me, what, present * 4, rss);
  if (priv > 8 * 4)
    zdtm_fail("process %d: %s region Private_* expected at most %d kB, got %ld kB (not shared)", me,
              what, 8 * 4, priv);
  if (shared < minshared * 4)
    zdtm_fail("process %d: %s region Shared_* expected at least %ld kB, got %ld kB", me, what,
              minshared * 4, shared);
  if (me == 0 && pss > rss / 2)
    zdtm_fail("process 0: %s region Pss expected at most %ld kB, got %ld kB", what, rss / 2, pss);
}

static void
check_shared(int me)
{
  long rss, pss, shared, priv;
  check_region(me, "anonymous", mem, NPG, me == 1 ? NPG - 2 : NPG, NPG - 8);
  /* Only the pages written are the mapping's own; the file's are not
     touched yet. Child 1: 0-47 but 10-11, and 50. */
  check_region(me, "file", fmem, FPG, me == 1 ? FWROTE - 1 : FWROTE, FWROTE - 8);
  if (region_smaps(0, 0, "[stack]", &rss, &pss, &shared, &priv) < 0)
    zdtm_fail("process %d: no [stack] in smaps", me);
  else if (shared < 12)
    zdtm_fail("process %d: [stack] Shared_* expected at least 12 kB (main's frame), got %ld kB", me,
              shared);
}

/* After restore: measure, check, then the writes in turn. */
static void
after(int me)
{
  static uint8_t exp[PG];
  check_shared(me);
  check_content(me, "after restore");
  sy->measured[me] = 1;
  if (me == 0)
    {
      for (int i = 1; i < NPROC; i++)
        if (!zdtm_await(&sy->measured[i], 1))
          zdtm_fail("process 0: process %d did not get to its checks", i);
      memset(mem + 100 * PG, 0xA0, PG);
      memset(fmem + 20 * PG, 0xA0, PG);
      sy->parent_wrote = 1;
      for (int i = 1; i < NPROC; i++)
        if (!zdtm_await(&sy->checked[i], 1))
          zdtm_fail("process 0: process %d did not finish", i);
      expected(0, 200, exp);
      if (memcmp(mem + 200 * PG, exp, PG) != 0)
        zdtm_fail("process 0: a child's write to page 200 shows in the parent");
      fexpected(0, 30, exp);
      if (memcmp(fmem + 30 * PG, exp, PG) != 0)
        zdtm_fail("process 0: a child's write to page 30 of the file mapping shows in the parent");
      return;
    }
  if (!zdtm_await(&sy->parent_wrote, 1))
    zdtm_fail("process %d: the parent never wrote", me);
  expected(me, 100, exp);
  if (memcmp(mem + 100 * PG, exp, PG) != 0)
    zdtm_fail("process %d: the parent's write to page 100 shows in the child", me);
  fexpected(me, 20, exp);
  if (memcmp(fmem + 20 * PG, exp, PG) != 0)
    zdtm_fail("process %d: the parent's write to page 20 of the file mapping shows in the child",
              me);
  memset(mem + 200 * PG, 0xB0 + me, PG);
  memset(fmem + 30 * PG, 0xB0 + me, PG);
  sy->child_wrote[me] = 1;
  for (int i = 1; i < NPROC; i++)
    if (i != me && !zdtm_await(&sy->child_wrote[i], 1))
      zdtm_fail("process %d: process %d never wrote", me, i);
  if (mem[200 * PG] != 0xB0 + me || mem[201 * PG - 1] != 0xB0 + me)
    zdtm_fail("process %d: page 200 holds another process's write", me);
  if (fmem[30 * PG] != 0xB0 + me || fmem[31 * PG - 1] != 0xB0 + me)
    zdtm_fail("process %d: page 30 of the file mapping holds another process's write", me);
  sy->checked[me] = 1;
}

static pid_t
spawn(int me)
{
  pid_t pid = fork();
  if (pid < 0)
    zdtm_error("fork: %s", strerror(errno));
  if (pid > 0)
    return pid;
  if (me == 1)
    {
      for (size_t i = 0; i < 4; i++)
        zdtm_fill(mem + i * PG, PG, 92, i * PG);
      madvise(mem + 10 * PG, 2 * PG, MADV_DONTNEED);
      for (size_t i = 0; i < 2; i++)
        zdtm_fill(fmem + i * PG, PG, 97, i * PG);
      zdtm_fill(fmem + 50 * PG, PG, 97, 50 * PG);
      madvise(fmem + 10 * PG, 2 * PG, MADV_DONTNEED);
    }
  if (me == 2)
    {
      pid_t g = spawn(4);
      sy->ready[me] = 1;
      zdtm_wait();
      kill(g, SIGTERM);
      after(me);
      int st;
      if (waitpid(g, &st, 0) != g || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        zdtm_fail("process 2: grandchild ended with status %#x", st);
      _exit(zdtm_status());
    }
  sy->ready[me] = 1;
  zdtm_wait();
  after(me);
  _exit(zdtm_status());
}

/* The file region: FPG pages of zdtm-cow.dat (in the current directory,
   the file's own pattern) mapped privately between two guard pages, the
   first FWROTE written. */
static void
map_file(void)
{
  static uint8_t buf[FPG * PG];
  uint8_t *all = mmap(NULL, (FPG + 2) * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  int fd = open("zdtm-cow.dat", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (all == MAP_FAILED || fd < 0)
    zdtm_error("zdtm-cow.dat: %s", strerror(errno));
  zdtm_fill(buf, sizeof buf, 95, 0);
  if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
    zdtm_error("write zdtm-cow.dat: %s", strerror(errno));
  fmem = mmap(all + PG, FPG * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd, 0);
  if (fmem == MAP_FAILED)
    zdtm_error("mmap zdtm-cow.dat: %s", strerror(errno));
  close(fd);
  madvise(fmem, FPG * PG, MADV_NOHUGEPAGE);
  for (size_t i = 0; i < FWROTE; i++)
    zdtm_fill(fmem + i * PG, PG, 96, i * PG);
}

int
main(int argc, char **argv)
{
  pid_t kids[3];
  uint8_t *all;
  uint8_t frame[DEEP]; /* written before the forks only */

  zdtm_init(argc, argv);
  deep = frame;
  zdtm_fill(deep, DEEP, 94, 0);
  sy = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  all = mmap(NULL, (NPG + 2) * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (sy == MAP_FAILED || all == MAP_FAILED)
    zdtm_error("mmap: %s", strerror(errno));
  /* guard pages: the region is one mapping of its own */
  if (mprotect(all, PG, PROT_NONE) < 0 || mprotect(all + (NPG + 1) * PG, PG, PROT_NONE) < 0)
    zdtm_error("mprotect: %s", strerror(errno));
  mem = all + PG;
  madvise(mem, NPG * PG, MADV_NOHUGEPAGE);
  zdtm_fill(mem, NPG * PG, 91, 0);
  map_file();
  for (int i = 0; i < 3; i++)
    kids[i] = spawn(i + 1);
  for (int i = 1; i < NPROC; i++)
    if (!zdtm_await(&sy->ready[i], 1))
      zdtm_error("process %d did not set up", i);
  zdtm_fill(mem + 5 * PG, PG, 93, 5 * PG);
  zdtm_fill(fmem + 5 * PG, PG, 98, 5 * PG);

  zdtm_ready();
  zdtm_wait();
  for (int i = 0; i < 3; i++)
    kill(kids[i], SIGTERM);
  after(0);
  for (int i = 0; i < 3; i++)
    {
      int st;
      if (waitpid(kids[i], &st, 0) != kids[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        zdtm_fail("child %d ended with status %#x", (int)kids[i], st);
    }
  zdtm_finish();
}
