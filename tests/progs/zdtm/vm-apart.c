/* zdtm-vm-apart: two anonymous private mappings side by side with the same
 * protections that the kernel keeps apart, as malloc's grown blocks are
 * (mremap moved one next to the other: its offset does not follow on from
 * its neighbour's), in a process and in a child that shares them
 * (copy-on-write: the restore premaps them for it).
 *
 * Before READY: A (8 pages) is mapped, B (4 pages) is mapped elsewhere and
 * moved with mremap to just above A; both are filled with a pattern. The
 * child then grows the heap it shares with its parent (sbrk): the kernel
 * makes the growth a mapping of its own (the shared part's anon_vma is
 * not the child's alone), so its [heap] is two mappings. The parent grows
 * its heap too, after the fork, past the end of the child's (a prefork
 * server's master allocates on after forking its workers: PostgreSQL's
 * postmaster): the child's heap must not come back with the parent's
 * growth. After restore: /proc/self/maps still shows A and B as two lines,
 * with every byte, in the parent and in the child, and each one's [heap]
 * lines as before. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGE 4096UL

/* The maps line that starts at ADDR, and the one that ends there: are
   they two lines, [A, A + LA) and [A + LA, A + LA + LB)? */
static bool
apart(uint8_t *a, size_t la, size_t lb, char *why, size_t len)
{
  char line[512];
  bool first = false, second = false;
  FILE *f = fopen("/proc/self/maps", "re");
  unsigned long s, e;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "%lx-%lx", &s, &e) == 2)
      {
        if (s == (unsigned long)a && e == (unsigned long)(a + la))
          first = true;
        if (s == (unsigned long)(a + la) && e == (unsigned long)(a + la + lb))
          second = true;
        if (s <= (unsigned long)a && e > (unsigned long)a)
          snprintf(why, len, "%.*s", (int)strcspn(line, "\n"), line);
      }
  if (f)
    fclose(f);
  return first && second;
}

/* The [heap] lines of /proc/self/maps, their ranges only, into BUF. */
static void
heaps(char *buf, size_t len)
{
  char line[512];
  size_t n = 0;
  FILE *f = fopen("/proc/self/maps", "re");
  buf[0] = 0;
  while (f && fgets(line, sizeof line, f))
    if (strstr(line, "[heap]") && n + 40 < len)
      n += (size_t)snprintf(buf + n, len - n, "%.*s ", (int)strcspn(line, " "), line);
  if (f)
    fclose(f);
}

static void
check(const char *who, uint8_t *a, size_t la, size_t lb)
{
  char why[512] = "no mapping at A";
  size_t off;
  if (!apart(a, la, lb, why, sizeof why))
    zdtm_fail("%s: A and B are not two mappings any more: %s", who, why);
  if ((off = zdtm_check(a, la, 71, 0)) != (size_t)-1)
    zdtm_fail("%s: A's byte %zu differs", who, off);
  if ((off = zdtm_check(a + la, lb, 72, 0)) != (size_t)-1)
    zdtm_fail("%s: B's byte %zu differs", who, off);
}

int
main(int argc, char **argv)
{
  size_t la = 8 * PAGE, lb = 4 * PAGE;
  uint8_t *a, *b, *r, *hp;
  char why[512] = "", before[512], after[512];
  pid_t child;
  int st;

  zdtm_init(argc, argv);
  /* A with room above it, then the room given back for B to move into. */
  a = mmap(NULL, la + lb, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  b = mmap(NULL, lb, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (a == MAP_FAILED || b == MAP_FAILED)
    zdtm_error("mmap: %s", strerror(errno));
  munmap(a + la, lb);
  zdtm_fill(a, la, 71, 0);
  zdtm_fill(b, lb, 72, 0);
  r = mremap(b, lb, lb, MREMAP_MAYMOVE | MREMAP_FIXED, a + la);
  if (r != a + la)
    zdtm_error("mremap B next to A: %s", strerror(errno));
  if (!apart(a, la, lb, why, sizeof why))
    zdtm_error("the kernel made A and B one mapping: %s", why);

  child = fork();
  if (child < 0)
    zdtm_error("fork: %s", strerror(errno));
  if (child == 0)
    {
      uint8_t *h = sbrk(0);
      if (sbrk(16 * PAGE) == (void *)-1)
        zdtm_error("child: sbrk: %s", strerror(errno));
      zdtm_fill(h, 16 * PAGE, 73, 0);
      heaps(before, sizeof before);
      zdtm_wait();
      check("child", a, la, lb);
      heaps(after, sizeof after);
      if (strcmp(before, after) != 0)
        zdtm_fail("child: [heap] mappings %s, before the checkpoint %s", after, before);
      if (zdtm_check(h, 16 * PAGE, 73, 0) != (size_t)-1)
        zdtm_fail("child: its heap's growth differs");
      _exit(zdtm_status());
    }
  usleep(200000); /* the child has grown its heap */
  hp = sbrk(0);
  if (sbrk(40 * PAGE) == (void *)-1)
    zdtm_error("sbrk: %s", strerror(errno));
  zdtm_fill(hp, 40 * PAGE, 74, 0);
  heaps(before, sizeof before);
  zdtm_ready();
  zdtm_wait();
  check("parent", a, la, lb);
  heaps(after, sizeof after);
  if (strcmp(before, after) != 0)
    zdtm_fail("parent: [heap] mappings %s, before the checkpoint %s", after, before);
  if (zdtm_check(hp, 40 * PAGE, 74, 0) != (size_t)-1)
    zdtm_fail("parent: its heap's growth differs");
  kill(child, SIGTERM);
  if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
    zdtm_fail("child: status %#x", st);
  zdtm_finish();
}
