/* zdtm-vm-account: which private mappings the kernel charges to the commit
 * accounting (smaps VmFlags "ac") is kept, with every byte:
 * - anonymous, read-only and never writable, two pages read (the zero
 *   page): not charged;
 * - anonymous, written, then made read-only: charged;
 * - anonymous PROT_NONE, a reservation of 1 MiB: not charged;
 * - anonymous, read-only and never writable, two pages written through
 *   /proc/self/mem (as a debugger writes): not charged, the bytes its own;
 * - a private mapping of a file, read-only, one page written through
 *   /proc/self/mem (a debugger's breakpoint): not charged;
 * - anonymous, writable, MAP_NORESERVE: not charged ("nr");
 * and as many mappings in /proc/self/maps as before (a mapping charged
 * next to one that is not, of the same file, stays apart from it; a
 * static program's bss and heap without address randomisation too). */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define NREG 6

struct region
{
  const char *what;
  uint8_t *at;
  size_t len;
  bool charged;  /* "ac" expected */
  int seed;      /* its bytes: zdtm_fill's seed, or -1 for zeros */
  size_t filled; /* bytes of it filled from the start (the rest: zeros, or the file) */
};

/* The VmFlags line of the mapping that starts at AT, in OUT; false if none. */
static bool
vmflags_at(const void *at, char *out, size_t cap)
{
  char line[512], want[32];
  bool in = false, found = false;
  FILE *f = fopen("/proc/self/smaps", "re");
  snprintf(want, sizeof want, "%lx-", (unsigned long)at);
  while (f && !found && fgets(line, sizeof line, f))
    {
      if (strncmp(line, want, strlen(want)) == 0)
        in = true;
      else if (in && strncmp(line, "VmFlags:", 8) == 0)
        {
          size_t n = strcspn(line + 8, "\n");
          if (n + 3 > cap)
            n = cap - 3;
          out[0] = ' ';
          memcpy(out + 1, line + 8, n);
          out[n + 1] = ' ', out[n + 2] = 0;
          found = true;
        }
    }
  if (f)
    fclose(f);
  return found;
}

/* This process's /proc/self/maps lines, a line each in LINES (at most 64
   kept); their number. A mapping that is charged next to one that is not,
   both of one file, stays apart from it; so do a static program's bss and
   its heap without address randomisation (the heap made by brk()). */
static int
read_maps(char lines[][160])
{
  char line[512];
  int n = 0;
  FILE *f = fopen("/proc/self/maps", "re");
  while (f && fgets(line, sizeof line, f))
    {
      if (n < 64)
        {
          line[strcspn(line, "\n")] = 0;
          snprintf(lines[n], 160, "%.159s", line);
        }
      n++;
    }
  if (f)
    fclose(f);
  return n;
}

static char maps_before[64][160], maps_after[64][160];

/* LEN bytes of BUF written at ADDR through /proc/self/mem (FOLL_FORCE: a
   mapping that is not writable is written all the same). */
static void
force_write(const void *buf, size_t len, void *addr)
{
  int fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
  if (fd < 0 || pwrite(fd, buf, len, (off_t)(uintptr_t)addr) != (ssize_t)len)
    zdtm_error("write through /proc/self/mem at %p: %s", addr, strerror(errno));
  close(fd);
}

static void
check_flags(const struct region *r, const char *when)
{
  char flags[256];
  if (!vmflags_at(r->at, flags, sizeof flags))
    {
      zdtm_fail("%s: %s: no mapping starts at %p", when, r->what, (void *)r->at);
      return;
    }
  if ((strstr(flags, " ac ") != NULL) != r->charged)
    zdtm_fail("%s: %s: VmFlags%s (expected %s \"ac\")", when, r->what, flags,
              r->charged ? "with" : "without");
}

int
main(int argc, char **argv)
{
  size_t page = sysconf(_SC_PAGESIZE);
  char path[] = "zdtm-vm-account.XXXXXX";
  struct region r[NREG];
  uint8_t *buf = malloc(4 * page), *fm;
  int fd, nbefore, nafter;

  zdtm_init(argc, argv);
  memset(r, 0, sizeof r);
  /* 1. read-only from the start, two pages read. */
  r[0] = (struct region){ "anonymous read-only, read", NULL, 4 * page, false, -1, 0 };
  r[0].at = mmap(NULL, r[0].len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  /* 2. written, then read-only. */
  r[1] = (struct region){ "anonymous written, then read-only", NULL, 4 * page, true, 31, 4 * page };
  r[1].at = mmap(NULL, r[1].len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  /* 3. a reservation. */
  r[2] = (struct region){ "anonymous PROT_NONE reservation", NULL, 256 * page, false, -1, 0 };
  r[2].at = mmap(NULL, r[2].len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  /* 4. read-only, written as a debugger would. */
  r[3] = (struct region){
    "anonymous read-only, written through /proc/self/mem", NULL, 4 * page, false, 32, 2 * page
  };
  r[3].at = mmap(NULL, r[3].len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  /* 5. writable, not reserved. */
  r[4] = (struct region){ "anonymous MAP_NORESERVE", NULL, 4 * page, false, 33, 4 * page };
  r[4].at = mmap(NULL, r[4].len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  /* 6. a file, read-only, one page written as a breakpoint would be. */
  fd = mkstemp(path);
  if (fd < 0)
    zdtm_error("mkstemp in the current directory: %s", strerror(errno));
  zdtm_fill(buf, 4 * page, 34, 0);
  if (write(fd, buf, 4 * page) != (ssize_t)(4 * page))
    zdtm_error("write %s: %s", path, strerror(errno));
  fm = mmap(NULL, 4 * page, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  r[5] = (struct region){
    "file read-only, a page written through /proc/self/mem", fm, 4 * page, false, 35, page
  };
  for (int i = 0; i < NREG; i++)
    if (r[i].at == MAP_FAILED)
      zdtm_error("mmap (%s): %s", r[i].what, strerror(errno));

  (void)*(volatile uint8_t *)r[0].at, (void)*(volatile uint8_t *)(r[0].at + 2 * page);
  zdtm_fill(r[1].at, r[1].len, 31, 0);
  if (mprotect(r[1].at, r[1].len, PROT_READ) < 0)
    zdtm_error("mprotect: %s", strerror(errno));
  zdtm_fill(buf, 2 * page, 32, 0);
  force_write(buf, 2 * page, r[3].at);
  zdtm_fill(r[4].at, r[4].len, 33, 0);
  zdtm_fill(buf, page, 35, 0);
  force_write(buf, page, fm);
  for (int i = 0; i < NREG; i++)
    check_flags(&r[i], "before the checkpoint");
  if (zdtm_failed())
    zdtm_error("this kernel charges mappings otherwise than the test expects (above)");
  nbefore = read_maps(maps_before);

  zdtm_ready();
  zdtm_wait();

  for (int i = 0; i < NREG; i++)
    {
      size_t off;
      check_flags(&r[i], "after restore");
      off = r[i].seed >= 0 ? zdtm_check(r[i].at, r[i].filled, r[i].seed, 0) : (size_t)-1;
      if (off != (size_t)-1)
        zdtm_fail("%s: byte %zu differs", r[i].what, off);
      if (i == 5)
        {
          /* The file's own bytes after the written page. */
          zdtm_fill(buf, 4 * page, 34, 0);
          if (memcmp(fm + page, buf + page, 3 * page) != 0)
            zdtm_fail("%s: the file's pages differ", r[i].what);
        }
      else if (i != 2)
        for (size_t k = r[i].filled; k < r[i].len; k++)
          if (r[i].at[k])
            {
              zdtm_fail("%s: byte %zu is %u, not 0", r[i].what, k, r[i].at[k]);
              break;
            }
    }
  nafter = read_maps(maps_after);
  if (nafter != nbefore)
    {
      int k = 0;
      while (k < 63 && k < nbefore && k < nafter && strcmp(maps_before[k], maps_after[k]) == 0)
        k++;
      zdtm_fail("/proc/self/maps has %d mappings, %d before the checkpoint; the first that "
                "differs: before [%s], after [%s]",
                nafter, nbefore, k < nbefore ? maps_before[k] : "",
                k < nafter ? maps_after[k] : "");
      for (int i = 0; i < nbefore && i < 64; i++)
        zdtm_note("before: %s", maps_before[i]);
      for (int i = 0; i < nafter && i < 64; i++)
        zdtm_note("after: %s", maps_after[i]);
    }
  unlink(path);
  zdtm_finish();
}
