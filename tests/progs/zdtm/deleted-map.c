/* zdtm-deleted-map: mappings of a file that was deleted (and whose
 * descriptor was closed): shared (3 pages), and private (the same 3 pages,
 * page 0 written: copied on write; page 1 never touched). After restore:
 * - the bytes of both (the private copy, the file's pages through both);
 * - maps shows both as one object, "(deleted)";
 * - a write through the shared mapping shows through the private mapping's
 *   page 2, never copied: one file, shared as before. */
#define _GNU_SOURCE
#include "zdtm.h"
#include "maps.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PG 4096

int
main(int argc, char **argv)
{
  char path[] = "zdtm-deleted-map.XXXXXX";
  uint8_t *sh, *pr;
  struct zdtm_map ms, mp;
  size_t off;
  int fd;

  zdtm_init(argc, argv);
  fd = mkstemp(path);
  if (fd < 0 || ftruncate(fd, 3 * PG) < 0)
    zdtm_error("mkstemp in the current directory: %s", strerror(errno));
  sh = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (sh == MAP_FAILED)
    zdtm_error("mmap shared: %s", strerror(errno));
  zdtm_fill(sh, 3 * PG, 91, 0);
  pr = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  if (pr == MAP_FAILED)
    zdtm_error("mmap private: %s", strerror(errno));
  zdtm_fill(pr, PG, 92, 0);
  close(fd);
  if (unlink(path) < 0)
    zdtm_error("unlink %s: %s", path, strerror(errno));

  zdtm_ready();
  zdtm_wait();

  if ((off = zdtm_check(sh, 3 * PG, 91, 0)) != (size_t)-1)
    zdtm_fail("shared mapping: byte %zu differs (expected 0x%02x, got 0x%02x)", off,
              zdtm_pattern(91, off), sh[off]);
  if ((off = zdtm_check(pr, PG, 92, 0)) != (size_t)-1)
    zdtm_fail("private mapping, copied page: byte %zu differs", off);
  if ((off = zdtm_check(pr + PG, 2 * PG, 91, PG)) != (size_t)-1)
    zdtm_fail("private mapping, the file's pages: byte %zu differs", PG + off);
  if (zdtm_map_of(sh, &ms) < 0 || zdtm_map_of(pr, &mp) < 0)
    zdtm_fail("a mapping is gone");
  else
    {
      size_t nl = strlen(ms.name);
      if (nl < 10 || strcmp(ms.name + nl - 10, " (deleted)") != 0)
        zdtm_fail("shared mapping: maps names %s, expected a deleted file", ms.name);
      if (strcmp(ms.perms, "rw-s") != 0 || strcmp(mp.perms, "rw-p") != 0)
        zdtm_fail("protections expected rw-s and rw-p, got %s and %s", ms.perms, mp.perms);
      if (ms.ino != mp.ino || strcmp(ms.dev, mp.dev) != 0)
        zdtm_fail("the two mappings are two objects now (%s/%lu and %s/%lu)", ms.dev, ms.ino,
                  mp.dev, mp.ino);
    }
  sh[2 * PG + 1] = 0xC3;
  if (pr[2 * PG + 1] != 0xC3)
    zdtm_fail("a write through the shared mapping does not show through the private one: not "
              "one file any more");
  zdtm_finish();
}
