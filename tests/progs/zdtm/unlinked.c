/* zdtm-unlinked: a file that is open but unlinked keeps its contents, size,
 * offset and zero link count; the file is not re-linked under its name. A
 * second descriptor (dup) shares its open file description and offset
 * still (the checkpoint's scan of the file's data extents moved the
 * shared offset once, and the two came back as two). */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
  char path[] = "zdtm-unlinked.XXXXXX";
  size_t len = 300000;
  uint8_t *buf = malloc(len);
  struct stat st;
  int fd, fd2;

  zdtm_init(argc, argv);
  fd = mkstemp(path);
  if (fd < 0 || !buf)
    zdtm_error("mkstemp in the current directory: %s", strerror(errno));
  zdtm_fill(buf, len, 40, 0);
  if (write(fd, buf, len) != (ssize_t)len)
    zdtm_error("write %s: %s", path, strerror(errno));
  if (unlink(path) < 0)
    zdtm_error("unlink %s: %s", path, strerror(errno));
  lseek(fd, 4242, SEEK_SET);
  fd2 = dup(fd);
  if (fd2 < 0)
    zdtm_error("dup: %s", strerror(errno));

  zdtm_ready();
  zdtm_wait();

  if (fstat(fd, &st) < 0)
    zdtm_fail("fd %d: fstat: %s", fd, strerror(errno));
  else
    {
      if (st.st_nlink != 0)
        zdtm_fail("fd %d: link count expected 0, got %lu", fd, (unsigned long)st.st_nlink);
      if (st.st_size != (off_t)len)
        zdtm_fail("fd %d: size expected %zu, got %ld", fd, len, (long)st.st_size);
    }
  if (lseek(fd, 0, SEEK_CUR) != 4242)
    zdtm_fail("fd %d: offset expected 4242, got %ld", fd, (long)lseek(fd, 0, SEEK_CUR));
  if (lseek(fd2, 0, SEEK_CUR) != 4242)
    zdtm_fail("fd %d (a dup of %d): offset expected 4242, got %ld", fd2, fd,
              (long)lseek(fd2, 0, SEEK_CUR));
  lseek(fd, 777, SEEK_SET);
  if (lseek(fd2, 0, SEEK_CUR) != 777)
    zdtm_fail("fd %d and its dup %d no longer share their offset", fd, fd2);
  lseek(fd, 4242, SEEK_SET);
  memset(buf, 0, len);
  if (pread(fd, buf, len, 0) != (ssize_t)len)
    zdtm_fail("fd %d: short read", fd);
  else
    {
      size_t off = zdtm_check(buf, len, 40, 0);
      if (off != (size_t)-1)
        zdtm_fail("unlinked file: byte %zu differs", off);
    }
  if (access(path, F_OK) == 0)
    zdtm_fail("%s exists again after restore (expected it to stay unlinked)", path);
  zdtm_finish();
}
