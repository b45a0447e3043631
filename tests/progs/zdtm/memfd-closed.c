/* zdtm-memfd-closed: a memfd whose descriptor was closed, still mapped
 * twice: shared (5 pages, all written) and private (pages 1-3 of it, page 1
 * written: copied on write). After restore:
 * - both mappings hold their bytes (the private one: its copy on page 1,
 *   the memfd's bytes on pages 2-3);
 * - maps still names the memfd ("/memfd:zdtm-closed") and both mappings are
 *   one object (same inode);
 * - a write through the shared mapping shows through the private mapping's
 *   page that was never copied: they still share the memfd. */
#define _GNU_SOURCE
#include "zdtm.h"
#include "maps.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PG 4096

int
main(int argc, char **argv)
{
  uint8_t *sh, *pr;
  struct zdtm_map ms, mp;
  size_t off;
  int fd;

  zdtm_init(argc, argv);
  fd = memfd_create("zdtm-closed", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, 5 * PG) < 0)
    zdtm_error("memfd: %s", strerror(errno));
  sh = mmap(NULL, 5 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  pr = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, PG);
  if (sh == MAP_FAILED || pr == MAP_FAILED)
    zdtm_error("mmap the memfd: %s", strerror(errno));
  close(fd);
  zdtm_fill(sh, 5 * PG, 81, 0);
  zdtm_fill(pr, PG, 82, 0); /* the private mapping's page 0 (memfd page 1): a copy */
  if (pr[PG] != sh[2 * PG])
    zdtm_error("the private mapping does not show the memfd");

  zdtm_ready();
  zdtm_wait();

  if ((off = zdtm_check(sh, 5 * PG, 81, 0)) != (size_t)-1)
    zdtm_fail("shared mapping: byte %zu differs (expected 0x%02x, got 0x%02x)", off,
              zdtm_pattern(81, off), sh[off]);
  if ((off = zdtm_check(pr, PG, 82, 0)) != (size_t)-1)
    zdtm_fail("private mapping, copied page: byte %zu differs", off);
  if ((off = zdtm_check(pr + PG, 2 * PG, 81, 2 * PG)) != (size_t)-1)
    zdtm_fail("private mapping, the memfd's pages: byte %zu differs", off);
  if (zdtm_map_of(sh, &ms) < 0 || zdtm_map_of(pr, &mp) < 0)
    zdtm_fail("a mapping is gone");
  else
    {
      if (strncmp(ms.name, "/memfd:zdtm-closed", 18) != 0)
        zdtm_fail("shared mapping: maps names %s, expected /memfd:zdtm-closed", ms.name);
      if (strcmp(ms.perms, "rw-s") != 0 || strcmp(mp.perms, "rw-p") != 0)
        zdtm_fail("protections expected rw-s and rw-p, got %s and %s", ms.perms, mp.perms);
      if (ms.ino != mp.ino)
        zdtm_fail("the two mappings are two objects now (inodes %lu and %lu)", ms.ino, mp.ino);
      if (mp.pgoff != PG)
        zdtm_fail("private mapping: offset expected %#x, got %#lx", PG, mp.pgoff);
    }
  sh[3 * PG + 9] = 0x5A;
  if (pr[2 * PG + 9] != 0x5A)
    zdtm_fail("a write through the shared mapping does not show through the private one: not "
              "one memfd any more");
  zdtm_finish();
}
