/* zdtm-predump: memory written while pre-dumps copy it (crest checkpoint
 * --pre-dump, then --parent-path): every page is checked after restore.
 *
 * Until SIGTERM the program keeps changing its memory, 5 ms a round:
 * - region A (ZDTM_PREDUMP_MIB, 16 MiB by default): ZDTM_PREDUMP_PAGES
 *   pages a round (16) rewritten with a new generation, kept in a table;
 * - region B (8 pages, a fixed pattern) moved with mremap between two
 *   places every 25 rounds (its pages must come back at the new place);
 * - page Z: written with a new seed, or emptied with MADV_DONTNEED and read
 *   (the shared zero page is mapped: not soft-dirty, yet not the parent's
 *   page), every 10 rounds in turn;
 * - region R (4 pages) unmapped and mapped again at the same address with
 *   a new seed every 30 rounds;
 * - page P: a pattern behind PROT_NONE, never changed.
 * After restore: every page of A holds its generation's pattern (but the
 * one page being written at the checkpoint, if any), B its pattern at its
 * current place, Z zero or its seed, R its seed, P its pattern. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PG 4096UL

static uint8_t *
map_at(void *at, size_t len, int prot)
{
  void *p = mmap(at, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED : 0), -1, 0);
  if (p == MAP_FAILED)
    zdtm_error("mmap %zu bytes: %s", len, strerror(errno));
  return p;
}

static uint32_t
seed_of(size_t i, uint32_t gen)
{
  return (uint32_t)(i * 2654435761u) ^ (gen * 40503u) ^ 0x5a5a;
}

static void
check(const char *what, size_t i, const uint8_t *p, size_t len, uint32_t seed)
{
  size_t off = zdtm_check(p, len, seed, 0);
  if (off != (size_t)-1)
    zdtm_fail("%s %zu at %p: byte %zu: expected 0x%02x, got 0x%02x", what, i, (void *)p, off,
              zdtm_pattern(seed, off), p[off]);
}

int
main(int argc, char **argv)
{
  const char *e = getenv("ZDTM_PREDUMP_MIB"), *r = getenv("ZDTM_PREDUMP_PAGES");
  size_t npages = (e ? strtoul(e, NULL, 10) : 16) * 256, rate = r ? strtoul(r, NULL, 10) : 16;
  uint8_t *a, *slots, *b, *z, *rr, *p;
  uint32_t *gen, zseed = 0, rseed = 1, zstep = 0;
  volatile size_t cur = (size_t)-1;
  uint64_t rounds = 0, x = 12345;
  bool zzero = false;

  zdtm_init(argc, argv);
  if (!npages)
    zdtm_error("ZDTM_PREDUMP_MIB is 0");
  a = map_at(NULL, npages * PG, PROT_READ | PROT_WRITE);
  /* Pages, not huge pages: a write marks a whole huge page soft-dirty, and
     16 MiB of them would all be written again within a round. */
  madvise(a, npages * PG, MADV_NOHUGEPAGE);
  gen = calloc(npages, sizeof *gen);
  if (!gen)
    zdtm_error("calloc");
  for (size_t i = 0; i < npages; i++)
    zdtm_fill(a + i * PG, PG, seed_of(i, 0), 0);
  /* Two places for B, 8 pages each, with a page between them. */
  slots = map_at(NULL, 17 * PG, PROT_NONE);
  b = map_at(slots, 8 * PG, PROT_READ | PROT_WRITE);
  zdtm_fill(b, 8 * PG, 77, 0);
  z = map_at(NULL, PG, PROT_READ | PROT_WRITE);
  zdtm_fill(z, PG, zseed, 0);
  rr = map_at(NULL, 4 * PG, PROT_READ | PROT_WRITE);
  zdtm_fill(rr, 4 * PG, rseed, 0);
  p = map_at(NULL, PG, PROT_READ | PROT_WRITE);
  zdtm_fill(p, PG, 99, 0);
  if (mprotect(p, PG, PROT_NONE) < 0)
    zdtm_error("mprotect: %s", strerror(errno));
  zdtm_ready();

  while (!zdtm_stopped())
    {
      struct timespec ts = { 0, 5000000 };
      for (size_t k = 0; k < rate; k++)
        {
          size_t i;
          x ^= x << 13, x ^= x >> 7, x ^= x << 17;
          i = x % npages;
          cur = i;
          gen[i]++;
          zdtm_fill(a + i * PG, PG, seed_of(i, gen[i]), 0);
          cur = (size_t)-1;
        }
      rounds++;
      if (rounds % 25 == 0)
        {
          uint8_t *to = b == slots ? slots + 9 * PG : slots;
          void *q = mremap(b, 8 * PG, 8 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, to);
          if (q == MAP_FAILED)
            zdtm_error("mremap: %s", strerror(errno));
          map_at(b, 8 * PG, PROT_NONE); /* the old place reserved again */
          b = q;
        }
      if (rounds % 10 == 0)
        {
          zstep++;
          if (zstep % 2)
            {
              zzero = true;
              madvise(z, PG, MADV_DONTNEED);
              if (*(volatile uint8_t *)z != 0)
                zdtm_fail("page Z after MADV_DONTNEED is not zero");
            }
          else
            {
              zzero = false;
              zseed++;
              zdtm_fill(z, PG, zseed, 0);
            }
        }
      if (rounds % 30 == 0)
        {
          munmap(rr, 4 * PG);
          map_at(rr, 4 * PG, PROT_READ | PROT_WRITE);
          rseed++;
          zdtm_fill(rr, 4 * PG, rseed, 0);
        }
      nanosleep(&ts, NULL);
    }

  for (size_t i = 0; i < npages; i++)
    if (i != cur)
      check("page of A", i, a + i * PG, PG, seed_of(i, gen[i]));
  check("region B, page 0 of 8,", 0, b, 8 * PG, 77);
  if (zzero)
    {
      for (size_t k = 0; k < PG; k++)
        if (z[k])
          {
            zdtm_fail("page Z: byte %zu is 0x%02x, expected zero (emptied by MADV_DONTNEED)", k,
                      z[k]);
            break;
          }
    }
  else
    check("page Z, seed", zseed, z, PG, zseed);
  check("region R, seed", rseed, rr, 4 * PG, rseed);
  if (mprotect(p, PG, PROT_READ) < 0)
    zdtm_fail("mprotect P: %s", strerror(errno));
  else
    check("page P", 0, p, PG, 99);
  zdtm_note("%" PRIu64 " rounds of writes", rounds);
  zdtm_finish();
}
