/* zdtm-shm-anon: shared anonymous memory (MAP_SHARED|MAP_ANONYMOUS) in one
 * process survives, and is still shared memory:
 * - a 16-page region filled with a pattern, byte for byte, three pages of
 *   which the process dropped from its page tables (MADV_DONTNEED: the
 *   bytes stay in the object, but no mapping shows them present);
 * - a 64-page region with every fourth page written: the others read zero;
 * - a 4-page region whose first half was made read-only (two mappings of one
 *   object): protections kept, both halves still one object (same inode);
 * - after restore a child forked then writes into the first region, and the
 *   parent sees the write: the mapping is still MAP_SHARED. */
#define _GNU_SOURCE
#include "zdtm.h"
#include "maps.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define PG 4096

static uint8_t *
shmap(size_t len)
{
  void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    zdtm_error("mmap MAP_SHARED|MAP_ANONYMOUS %zu bytes: %s", len, strerror(errno));
  return p;
}

static void
expect_map(const char *what, const void *p, const char *perms, struct zdtm_map *m)
{
  if (zdtm_map_of(p, m) < 0)
    {
      zdtm_fail("%s at %p: no mapping any more", what, p);
      return;
    }
  if (strcmp(m->perms, perms) != 0)
    zdtm_fail("%s at %p: protections expected %s, got %s", what, p, perms, m->perms);
}

int
main(int argc, char **argv)
{
  uint8_t *a, *b, *c;
  struct zdtm_map ma, mb, mc0, mc1;
  size_t off;
  pid_t kid;
  int st;

  zdtm_init(argc, argv);
  a = shmap(16 * PG);
  b = shmap(64 * PG);
  c = shmap(4 * PG);
  zdtm_fill(a, 16 * PG, 61, 0);
  if (madvise(a + 2 * PG, 3 * PG, MADV_DONTNEED) < 0)
    zdtm_error("madvise MADV_DONTNEED: %s", strerror(errno));
  for (int i = 0; i < 64; i += 4)
    zdtm_fill(b + i * PG, PG, 62, i * PG);
  zdtm_fill(c, 4 * PG, 63, 0);
  if (mprotect(c, 2 * PG, PROT_READ) < 0)
    zdtm_error("mprotect: %s", strerror(errno));

  zdtm_ready();
  zdtm_wait();

  if ((off = zdtm_check(a, 16 * PG, 61, 0)) != (size_t)-1)
    zdtm_fail("16-page region: byte %zu differs (expected 0x%02x, got 0x%02x)", off,
              zdtm_pattern(61, off), a[off]);
  for (int i = 0; i < 64; i++)
    {
      if (i % 4 == 0 && (off = zdtm_check(b + i * PG, PG, 62, i * PG)) != (size_t)-1)
        zdtm_fail("sparse region, page %d: byte %zu differs", i, off);
      for (size_t k = 0; i % 4 && k < PG; k++)
        if (b[i * PG + k])
          {
            zdtm_fail("sparse region, page %d never written: byte %zu is 0x%02x, expected 0", i, k,
                      b[i * PG + k]);
            break;
          }
    }
  if ((off = zdtm_check(c, 4 * PG, 63, 0)) != (size_t)-1)
    zdtm_fail("4-page region: byte %zu differs", off);
  expect_map("16-page region", a, "rw-s", &ma);
  expect_map("sparse region", b, "rw-s", &mb);
  expect_map("read-only half", c, "r--s", &mc0);
  expect_map("writable half", c + 2 * PG, "rw-s", &mc1);
  if (mc0.ino != mc1.ino || strcmp(mc0.dev, mc1.dev) != 0)
    zdtm_fail("the two halves of the 4-page region are two objects now (%s/%lu and %s/%lu)",
              mc0.dev, mc0.ino, mc1.dev, mc1.ino);
  if (mc1.pgoff != 2 * PG)
    zdtm_fail("writable half: offset in its object expected %#x, got %#lx", 2 * PG, mc1.pgoff);
  if (ma.ino == mb.ino && strcmp(ma.dev, mb.dev) == 0)
    zdtm_fail("two regions of separate mmap calls became one object (%s/%lu)", ma.dev, ma.ino);

  /* Still shared memory: a child's write is the parent's. */
  kid = fork();
  if (kid == 0)
    {
      a[5] = 0xEE;
      c[3 * PG] = 0xDD;
      _exit(0);
    }
  if (kid < 0 || waitpid(kid, &st, 0) != kid || st != 0)
    zdtm_fail("child after restore: fork or exit failed (status %#x)", st);
  else
    {
      if (a[5] != 0xEE)
        zdtm_fail("16-page region: a child's write is not seen by its parent (got 0x%02x): not "
                  "shared any more",
                  a[5]);
      if (c[3 * PG] != 0xDD)
        zdtm_fail("4-page region: a child's write is not seen by its parent: not shared any more");
    }
  zdtm_finish();
}
