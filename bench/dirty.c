/* bench/dirty: a process that keeps writing its memory, for the downtime
 * benchmark of pre-dumps (bench/run-bench, section 3).
 *
 *   dirty MIB RATE READY RESULT
 *
 * touches MIB MiB of private anonymous memory, announces READY (zdtm
 * protocol, tests/README.md), then until SIGTERM rewrites RATE MiB/s of
 * it, 100 slices a second, one page after the other round the region,
 * each page filled with its generation (a byte) after its number and
 * generation (16 bytes). After SIGTERM it checks every page against the
 * generations it wrote (a wrong restore does not count) and writes PASS,
 * or FAIL and the first page that differs, to RESULT. */
#include "zdtm.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define PG 4096UL

static void
fill(uint8_t *p, uint64_t idx, uint8_t gen)
{
  memset(p + 16, gen, PG - 16);
  memcpy(p, &idx, 8);
  p[8] = gen;
}

int
main(int argc, char **argv)
{
  size_t npages, per_slice, next = 0;
  volatile size_t cur = (size_t)-1;
  uint8_t *a, *gen;

  if (argc < 3)
    zdtm_error("usage: dirty MIB RATE [READY [RESULT]]");
  npages = strtoul(argv[1], NULL, 10) * 256;
  per_slice = strtoul(argv[2], NULL, 10) * 256 / 100;
  zdtm_init(argc - 2, argv + 2);
  if (!npages)
    zdtm_error("no memory to touch");
  a = mmap(NULL, npages * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  gen = calloc(npages, 1);
  if (a == MAP_FAILED || !gen)
    zdtm_error("mmap or calloc of %zu pages", npages);
  for (size_t i = 0; i < npages; i++)
    fill(a + i * PG, i, 0);
  zdtm_ready();
  while (!zdtm_stopped())
    {
      struct timespec t0, t1, ts;
      clock_gettime(CLOCK_MONOTONIC, &t0);
      for (size_t k = 0; k < per_slice; k++, next = (next + 1) % npages)
        {
          cur = next;
          gen[next]++;
          fill(a + next * PG, next, gen[next]);
          cur = (size_t)-1;
        }
      clock_gettime(CLOCK_MONOTONIC, &t1);
      /* The rest of the 10 ms slice. */
      long ns = 10000000L - ((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec));
      if (ns > 0)
        {
          ts.tv_sec = 0, ts.tv_nsec = ns;
          nanosleep(&ts, NULL);
        }
    }
  for (size_t i = 0; i < npages; i++)
    {
      uint64_t idx;
      const uint8_t *p = a + i * PG;
      if (i == cur)
        continue;
      memcpy(&idx, p, 8);
      if (idx != i || p[8] != gen[i] || p[16] != gen[i] || p[PG - 1] != gen[i])
        {
          zdtm_fail("page %zu: number %llu, generation %u, expected %zu and %u", i,
                    (unsigned long long)idx, p[8], i, gen[i]);
          break;
        }
    }
  zdtm_finish();
}
