/* zdtm-shm-sparse: large memory objects that hold little, as a server's
 * shared buffer pool does (PostgreSQL maps 146 MB of shared anonymous
 * memory and touches a few MB of it):
 * - 32 MiB of shared anonymous memory, of which every 37th page holds a
 *   pattern and every 101st was written with zeros (in memory, reading
 *   zero); the rest never touched;
 * - an 8 MiB memfd, written through its descriptor (not mapped): a pattern
 *   in its first 64 KiB and its last page, one page of zeros at 4 MiB, the
 *   rest a hole.
 * After restore every byte is as before (pattern or zero), the sizes are
 * the same, and what was never written is still not in memory: no page of
 * the anonymous region outside those written is resident (mincore), and
 * the memfd's hole between 64 KiB and 4 MiB is still one (SEEK_DATA): the
 * restore did not fill the objects out to their size (which made a
 * restored PostgreSQL 146 MB larger). A child forked after restore still
 * shares the anonymous region. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define PG 4096
#define ANON_PAGES (32 * 256)
#define MFD_SIZE (8 << 20)
#define MFD_HEAD (64 << 10)

static bool
patterned(size_t k)
{
  return k % 37 == 0;
}

static bool
zeroed(size_t k)
{
  return k % 101 == 0 && !patterned(k);
}

static void
check_anon(const uint8_t *a)
{
  static unsigned char vec[ANON_PAGES];
  size_t off, resident = 0, filled = 0;
  /* Before any read: a read of a hole of shared memory allocates it. */
  if (mincore((void *)a, (size_t)ANON_PAGES * PG, vec) < 0)
    zdtm_error("mincore: %s", strerror(errno));
  for (size_t k = 0; k < ANON_PAGES; k++)
    if (vec[k] & 1)
      {
        resident++;
        if (!patterned(k) && !zeroed(k))
          filled++;
      }
  if (filled)
    zdtm_fail("anonymous region: %zu of its never-written pages are in memory after restore "
              "(%zu resident in all): the object was filled out",
              filled, resident);
  for (size_t k = 0; k < ANON_PAGES; k++)
    {
      const uint8_t *p = a + k * PG;
      if (patterned(k))
        {
          if ((off = zdtm_check(p, PG, 71, k * PG)) != (size_t)-1)
            zdtm_fail("anonymous region, page %zu: byte %zu differs", k, off);
          continue;
        }
      for (off = 0; off < PG && !p[off]; off++)
        ;
      if (off < PG)
        zdtm_fail("anonymous region, page %zu (%s): byte %zu is 0x%02x, expected 0", k,
                  zeroed(k) ? "written with zeros" : "never written", off, p[off]);
    }
}

static void
check_memfd(int fd)
{
  static uint8_t buf[MFD_HEAD];
  struct stat st;
  off_t d;
  size_t off;
  if (fstat(fd, &st) < 0 || st.st_size != MFD_SIZE)
    zdtm_fail("memfd: size expected %d, got %ld", MFD_SIZE, (long)st.st_size);
  if (pread(fd, buf, MFD_HEAD, 0) != MFD_HEAD
      || (off = zdtm_check(buf, MFD_HEAD, 72, 0)) != (size_t)-1)
    zdtm_fail("memfd: its first 64 KiB differ");
  if (pread(fd, buf, PG, MFD_SIZE - PG) != PG
      || zdtm_check(buf, PG, 73, MFD_SIZE - PG) != (size_t)-1)
    zdtm_fail("memfd: its last page differs");
  if (pread(fd, buf, PG, 4 << 20) != PG)
    zdtm_fail("memfd: reading the page at 4 MiB failed");
  for (off = 0; off < PG; off++)
    if (buf[off])
      {
        zdtm_fail("memfd: the page of zeros at 4 MiB has 0x%02x at %zu", buf[off], off);
        break;
      }
  d = lseek(fd, MFD_HEAD, SEEK_DATA);
  if (d >= 0 && d < (4 << 20))
    zdtm_fail("memfd: data at %ld, in the hole from 64 KiB to 4 MiB: the hole was filled", (long)d);
}

int
main(int argc, char **argv)
{
  static uint8_t buf[MFD_HEAD];
  uint8_t *a;
  int fd, st;
  pid_t kid;

  zdtm_init(argc, argv);
  a = mmap(NULL, (size_t)ANON_PAGES * PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
           0);
  if (a == MAP_FAILED)
    zdtm_error("mmap: %s", strerror(errno));
  for (size_t k = 0; k < ANON_PAGES; k++)
    if (patterned(k))
      zdtm_fill(a + k * PG, PG, 71, k * PG);
    else if (zeroed(k))
      memset(a + k * PG, 0, PG);
  fd = syscall(SYS_memfd_create, "zdtm-sparse", 0);
  if (fd < 0 || ftruncate(fd, MFD_SIZE) < 0)
    zdtm_error("memfd: %s", strerror(errno));
  zdtm_fill(buf, MFD_HEAD, 72, 0);
  if (pwrite(fd, buf, MFD_HEAD, 0) != MFD_HEAD)
    zdtm_error("memfd: write: %s", strerror(errno));
  zdtm_fill(buf, PG, 73, MFD_SIZE - PG);
  if (pwrite(fd, buf, PG, MFD_SIZE - PG) != PG)
    zdtm_error("memfd: write: %s", strerror(errno));
  memset(buf, 0, PG);
  if (pwrite(fd, buf, PG, 4 << 20) != PG)
    zdtm_error("memfd: write: %s", strerror(errno));

  zdtm_ready();
  zdtm_wait();

  check_anon(a);
  check_memfd(fd);
  kid = fork();
  if (kid == 0)
    {
      a[37 * PG + 1] = 0xEE;
      _exit(0);
    }
  if (kid < 0 || waitpid(kid, &st, 0) != kid || st != 0)
    zdtm_fail("child after restore: fork or exit failed");
  else if (a[37 * PG + 1] != 0xEE)
    zdtm_fail("anonymous region: a child's write is not seen by its parent: not shared any more");
  zdtm_finish();
}
