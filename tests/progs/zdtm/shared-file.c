/* zdtm-shared-file: a MAP_SHARED mapping of a file (4 pages) whose pages
 * have mixed protections: page 0 rw, page 1 read-only, page 2 PROT_NONE,
 * page 3 rw. After restore:
 * - each page's protection, and one file and offset for all four (maps);
 * - the bytes: through the mapping where it is readable, through the file
 *   for page 2;
 * - still the file: a write through page 3 is in the file (pread), and a
 *   pwrite to the file shows in page 1. */
#define _GNU_SOURCE
#include "zdtm.h"
#include "maps.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define PG 4096

int
main(int argc, char **argv)
{
  static const char *want[4] = { "rw-s", "r--s", "---s", "rw-s" };
  const char *path = "zdtm-shared-file.dat";
  uint8_t *m, page[PG];
  struct zdtm_map mm[4];
  struct stat st;
  size_t off;
  int fd;

  zdtm_init(argc, argv);
  fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || ftruncate(fd, 4 * PG) < 0 || fstat(fd, &st) < 0)
    zdtm_error("%s: %s", path, strerror(errno));
  m = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED)
    zdtm_error("mmap: %s", strerror(errno));
  close(fd);
  zdtm_fill(m, 4 * PG, 95, 0);
  if (mprotect(m + PG, PG, PROT_READ) < 0 || mprotect(m + 2 * PG, PG, PROT_NONE) < 0)
    zdtm_error("mprotect: %s", strerror(errno));

  zdtm_ready();
  zdtm_wait();

  for (int i = 0; i < 4; i++)
    if (zdtm_map_of(m + i * PG, &mm[i]) < 0)
      zdtm_fail("page %d: no mapping", i);
    else
      {
        if (strcmp(mm[i].perms, want[i]) != 0)
          zdtm_fail("page %d: protections expected %s, got %s", i, want[i], mm[i].perms);
        if (mm[i].ino != st.st_ino)
          zdtm_fail("page %d: inode expected %lu, got %lu", i, (unsigned long)st.st_ino, mm[i].ino);
        if (mm[i].pgoff + (uintptr_t)m != mm[i].start)
          zdtm_fail("page %d: file offset %#lx does not match its place", i, mm[i].pgoff);
      }
  for (int i = 0; i < 4; i++)
    if (i != 2 && (off = zdtm_check(m + i * PG, PG, 95, i * PG)) != (size_t)-1)
      zdtm_fail("page %d: byte %zu differs", i, off);
  fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0)
    zdtm_fail("%s: %s", path, strerror(errno));
  else
    {
      if (pread(fd, page, PG, 2 * PG) != PG
          || (off = zdtm_check(page, PG, 95, 2 * PG)) != (size_t)-1)
        zdtm_fail("page 2 (PROT_NONE) in the file differs");
      m[3 * PG + 7] = 0x77;
      if (pread(fd, page, 16, 3 * PG) != 16 || page[7] != 0x77)
        zdtm_fail("a write through page 3 is not in the file: not a shared mapping of it any "
                  "more");
      page[0] = 0x66;
      if (pwrite(fd, page, 1, PG + 11) != 1 || m[PG + 11] != 0x66)
        zdtm_fail("a write to the file does not show in page 1: not a mapping of it any more");
      close(fd);
    }
  /* The file was open for writing when it was mapped: the read-only and
     the PROT_NONE pages may be made writable again (VmFlags "sh mw"), and
     a write through them reaches the file. */
  for (int i = 1; i <= 2; i++)
    if (mprotect(m + i * PG, PG, PROT_READ | PROT_WRITE) < 0)
      zdtm_fail("page %d: mprotect to read-write: %s (the file was open for writing)", i,
                strerror(errno));
    else
      {
        m[i * PG + 5] = (char)(0x50 + i);
        mprotect(m + i * PG, PG, i == 1 ? PROT_READ : PROT_NONE);
      }
  zdtm_finish();
}
