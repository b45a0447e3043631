/* zdtm-anon-mem: private anonymous memory survives byte for byte.
 *
 * - a small region and a large one (64 MiB, ZDTM_ANON_MIB to change) filled
 *   with a pattern;
 * - a region with holes: every other page touched, one page in the middle
 *   unmapped; untouched pages must still read zero and must not be resident
 *   right after restore (only touched pages are saved and restored);
 * - a read-only region and a PROT_NONE guard keep their protections;
 * - the addresses are the same (the pointers are checked through the maps).
 */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static size_t page;

static void *
map(size_t len, int prot)
{
  void *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    zdtm_error("mmap %zu bytes: %s", len, strerror(errno));
  return p;
}

static void
check_region(const char *what, const void *p, size_t len, uint32_t seed)
{
  size_t off = zdtm_check(p, len, seed, 0);
  if (off != (size_t)-1)
    zdtm_fail("%s at %p: byte %zu: expected 0x%02x, got 0x%02x", what, p, off,
              zdtm_pattern(seed, off), ((const uint8_t *)p)[off]);
}

/* The protection string of the mapping that holds P, from /proc/self/maps. */
static int
prot_of(const void *p, char perms[5])
{
  FILE *f = fopen("/proc/self/maps", "re");
  char line[512];
  int found = -1;

  if (!f)
    return -1;
  while (fgets(line, sizeof(line), f))
    {
      unsigned long lo, hi;
      char pr[5];
      if (sscanf(line, "%lx-%lx %4s", &lo, &hi, pr) != 3)
        continue;
      if ((unsigned long)p >= lo && (unsigned long)p < hi)
        {
          memcpy(perms, pr, 5);
          found = 0;
          break;
        }
    }
  fclose(f);
  return found;
}

int
main(int argc, char **argv)
{
  size_t big_len, holes_pages = 64, i;
  const char *mib = getenv("ZDTM_ANON_MIB");
  uint8_t *small, *big, *holes, *ro, *guard;
  unsigned char vec[64];
  char perms[5];

  zdtm_init(argc, argv);
  page = sysconf(_SC_PAGESIZE);
  big_len = (size_t)(mib ? atol(mib) : 64) << 20;

  small = map(3 * page, PROT_READ | PROT_WRITE);
  zdtm_fill(small, 3 * page, 1, 0);
  big = map(big_len, PROT_READ | PROT_WRITE);
  zdtm_fill(big, big_len, 2, 0);
  holes = map(holes_pages * page, PROT_READ | PROT_WRITE);
  for (i = 0; i < holes_pages; i += 2)
    zdtm_fill(holes + i * page, page, 3, i * page);
  ro = map(2 * page, PROT_READ | PROT_WRITE);
  zdtm_fill(ro, 2 * page, 4, 0);
  if (mprotect(ro, 2 * page, PROT_READ) < 0)
    zdtm_error("mprotect: %s", strerror(errno));
  guard = map(page, PROT_NONE);
  /* Punch the hole last, so that no later mapping lands in it. */
  if (munmap(holes + 32 * page, page) < 0)
    zdtm_error("munmap: %s", strerror(errno));

  zdtm_ready();
  zdtm_wait();

  /* Residency first: reading a hole would fault it in. */
  if (mincore(holes, 32 * page, vec) < 0
      || mincore(holes + 33 * page, (holes_pages - 33) * page, vec + 33) < 0)
    zdtm_fail("mincore on the region with holes at %p: %s", holes, strerror(errno));
  else
    for (i = 1; i < holes_pages; i += 2)
      if (i != 32 && (vec[i] & 1))
        {
          zdtm_fail("untouched page %zu of the region with holes is resident after restore "
                    "(expected not resident)",
                    i);
          break;
        }
  if (mincore(holes + 32 * page, page, vec) == 0)
    zdtm_fail("page 32 of the region with holes: expected unmapped, got mapped");
  else if (errno != ENOMEM)
    zdtm_fail("page 32 of the region with holes: expected ENOMEM from mincore, got %s",
              strerror(errno));

  check_region("small region", small, 3 * page, 1);
  check_region("large region", big, big_len, 2);
  for (i = 0; i < holes_pages; i++)
    {
      if (i == 32)
        continue;
      if (i % 2 == 0)
        {
          size_t off = zdtm_check(holes + i * page, page, 3, i * page);
          if (off != (size_t)-1)
            zdtm_fail("touched page %zu of the region with holes: byte %zu differs", i, off);
        }
      else
        for (size_t b = 0; b < page; b++)
          if (holes[i * page + b])
            {
              zdtm_fail("untouched page %zu: byte %zu: expected 0, got 0x%02x", i, b,
                        holes[i * page + b]);
              break;
            }
    }
  check_region("read-only region", ro, 2 * page, 4);
  if (prot_of(ro, perms) < 0 || strcmp(perms, "r--p"))
    zdtm_fail("read-only region at %p: expected r--p, got %s", ro,
              prot_of(ro, perms) < 0 ? "no mapping" : perms);
  if (prot_of(guard, perms) < 0 || strcmp(perms, "---p"))
    zdtm_fail("guard page at %p: expected ---p, got %s", guard,
              prot_of(guard, perms) < 0 ? "no mapping" : perms);
  zdtm_finish();
}
