/* zdtm-file-private: a private file-backed mapping keeps its file, offset,
 * unmodified pages (the file's) and modified pages (copy-on-write, ours). */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
  size_t page = sysconf(_SC_PAGESIZE), pages = 16, i;
  char path[] = "zdtm-file-private.XXXXXX";
  uint8_t *buf, *m;
  struct stat st;
  int fd;
  char line[1024], want[64];
  FILE *f;
  bool found = false;

  zdtm_init(argc, argv);
  fd = mkstemp(path);
  if (fd < 0)
    zdtm_error("mkstemp in the current directory: %s", strerror(errno));
  buf = malloc(pages * page);
  zdtm_fill(buf, pages * page, 20, 0);
  if (write(fd, buf, pages * page) != (ssize_t)(pages * page))
    zdtm_error("write %s: %s", path, strerror(errno));
  /* Map from the second page on, so the file offset matters. */
  m = mmap(NULL, (pages - 1) * page, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, page);
  if (m == MAP_FAILED)
    zdtm_error("mmap %s: %s", path, strerror(errno));
  fstat(fd, &st);
  close(fd);
  /* Touch (read) some pages, modify others. */
  for (i = 0; i < pages - 1; i++)
    if (i % 3 == 0)
      zdtm_fill(m + i * page, page, 21, i * page);
    else if (i % 3 == 1)
      (void)*(volatile uint8_t *)(m + i * page);

  zdtm_ready();
  zdtm_wait();

  for (i = 0; i < pages - 1; i++)
    {
      size_t off = i % 3 == 0 ? zdtm_check(m + i * page, page, 21, i * page)
                              : zdtm_check(m + i * page, page, 20, (i + 1) * page);
      if (off != (size_t)-1)
        zdtm_fail("%s page %zu of the mapping at %p: byte %zu differs",
                  i % 3 == 0 ? "modified" : "file", i, (void *)m, off);
    }
  /* The mapping still names the file, at file offset one page. */
  snprintf(want, sizeof(want), "%lx-", (unsigned long)m);
  f = fopen("/proc/self/maps", "re");
  while (f && fgets(line, sizeof(line), f))
    if (!strncmp(line, want, strlen(want)))
      {
        unsigned long lo, hi, off, ino;
        char perms[5], dev[16];
        found = true;
        if (sscanf(line, "%lx-%lx %4s %lx %15s %lu", &lo, &hi, perms, &off, dev, &ino) != 6)
          zdtm_fail("cannot parse maps line: %s", line);
        else
          {
            if (off != page)
              zdtm_fail("mapping at %p: file offset expected %zu, got %lu", (void *)m, page, off);
            if (ino != (unsigned long)st.st_ino)
              zdtm_fail("mapping at %p: inode expected %lu, got %lu", (void *)m,
                        (unsigned long)st.st_ino, ino);
            if (strcmp(perms, "rw-p"))
              zdtm_fail("mapping at %p: expected rw-p, got %s", (void *)m, perms);
            if (hi - lo != (pages - 1) * page)
              zdtm_fail("mapping at %p: length expected %zu, got %lu", (void *)m,
                        (pages - 1) * page, hi - lo);
          }
      }
  if (f)
    fclose(f);
  if (!found)
    zdtm_fail("no mapping starts at %p after restore", (void *)m);
  unlink(path);
  zdtm_finish();
}
