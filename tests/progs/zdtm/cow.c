/* zdtm-cow: private anonymous memory a parent shares copy-on-write with the
 * children it forked (1024 pages, MAP_PRIVATE, filled before the forks):
 * - child 1 rewrote pages 0-3 and dropped pages 10-11 (MADV_DONTNEED);
 * - child 2 only reads, and forked a grandchild that only reads;
 * - child 3 only reads;
 * - the parent rewrote page 5 after the forks (the children keep the old).
 * After restore, before anything is written:
 * - each process's view of the region, byte for byte, as set up;
 * - each process's region is still shared, as smaps shows it: at most 8
 *   private pages (child 1: pages 0-3 and 5; the parent and the others:
 *   page 5), the rest (1016 pages and more) shared, and the parent's Pss
 *   at most half its Rss (the pages are not copied once per process);
 * then, in turn (flags in a shared page):
 * - the parent writes page 100: no child sees it;
 * - each child writes page 200: neither the parent nor another sees it.
 * The root forwards SIGTERM to the children and reports their status. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
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
#define NPROC 5 /* the parent, three children, a grandchild */

struct sync
{
  volatile uint32_t ready[NPROC];    /* set up, before the checkpoint */
  volatile uint32_t measured[NPROC]; /* after restore: smaps read */
  volatile uint32_t parent_wrote;
  volatile uint32_t child_wrote[NPROC];
  volatile uint32_t checked[NPROC];
};

static uint8_t *mem;
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
}

/* Rss, Pss, Shared_* and Private_* (KiB) of the region, from smaps. */
static int
region_smaps(long *rss, long *pss, long *shared, long *priv)
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
          in = s == (unsigned long)mem && e == (unsigned long)(mem + NPG * PG);
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

static void
check_shared(int me)
{
  long rss, pss, shared, priv;
  long present = me == 1 ? (long)(NPG - 2) * 4 : (long)NPG * 4;
  if (region_smaps(&rss, &pss, &shared, &priv) < 0)
    {
      zdtm_fail("process %d: the region %p is not one mapping in smaps", me, (void *)mem);
      return;
    }
  if (rss != present)
    zdtm_fail("process %d: region Rss expected %ld kB, got %ld kB", me, present, rss);
  if (priv > 8 * 4)
    zdtm_fail("process %d: region Private_* expected at most %d kB, got %ld kB (not shared)", me,
              8 * 4, priv);
  if (shared < (long)(NPG - 8) * 4)
    zdtm_fail("process %d: region Shared_* expected at least %ld kB, got %ld kB", me,
              (long)(NPG - 8) * 4, shared);
  if (me == 0 && pss > rss / 2)
    zdtm_fail("process 0: region Pss expected at most %ld kB, got %ld kB", rss / 2, pss);
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
      sy->parent_wrote = 1;
      for (int i = 1; i < NPROC; i++)
        if (!zdtm_await(&sy->checked[i], 1))
          zdtm_fail("process 0: process %d did not finish", i);
      expected(0, 200, exp);
      if (memcmp(mem + 200 * PG, exp, PG) != 0)
        zdtm_fail("process 0: a child's write to page 200 shows in the parent");
      return;
    }
  if (!zdtm_await(&sy->parent_wrote, 1))
    zdtm_fail("process %d: the parent never wrote", me);
  expected(me, 100, exp);
  if (memcmp(mem + 100 * PG, exp, PG) != 0)
    zdtm_fail("process %d: the parent's write to page 100 shows in the child", me);
  memset(mem + 200 * PG, 0xB0 + me, PG);
  sy->child_wrote[me] = 1;
  for (int i = 1; i < NPROC; i++)
    if (i != me && !zdtm_await(&sy->child_wrote[i], 1))
      zdtm_fail("process %d: process %d never wrote", me, i);
  if (mem[200 * PG] != 0xB0 + me || mem[201 * PG - 1] != 0xB0 + me)
    zdtm_fail("process %d: page 200 holds another process's write", me);
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

int
main(int argc, char **argv)
{
  pid_t kids[3];
  uint8_t *all;

  zdtm_init(argc, argv);
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
  for (int i = 0; i < 3; i++)
    kids[i] = spawn(i + 1);
  for (int i = 1; i < NPROC; i++)
    if (!zdtm_await(&sy->ready[i], 1))
      zdtm_error("process %d did not set up", i);
  zdtm_fill(mem + 5 * PG, PG, 93, 5 * PG);

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
