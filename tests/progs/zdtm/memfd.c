/* zdtm-memfd: memfds and their descriptors:
 * - "zdtm-memfd": 3 pages + 100 bytes, written through the descriptor,
 *   sealed against shrinking and growing, mapped shared (3 pages) through
 *   which page 1 is changed; the descriptor at offset 777, O_RDWR, without
 *   close-on-exec. A child shares the descriptor and the mapping.
 * - "zdtm-sealed": 2 pages, F_SEAL_WRITE and F_SEAL_SEAL, descriptor only,
 *   close-on-exec, and a second, read-only open of it (/proc/self/fd).
 * After restore: names (the /proc link), sizes, seals, contents (through the
 * descriptor and the mapping), offset, flags, close-on-exec; the
 * descriptor and the mapping are still one memfd (a pwrite shows in the
 * mapping, a store shows in a pread), the child's descriptor is the same
 * open file (an lseek in the child moves the parent's offset), the write
 * seal still holds (write fails with EPERM), growing still fails.
 * ZDTM_MEMFD_REFUSE=1 adds a memfd mapped shared and writable, then sealed
 * with F_SEAL_FUTURE_WRITE: restore could not map it again, so checkpoint
 * must refuse the process (and leave it running). */
#define _GNU_SOURCE
#include "zdtm.h"
#include "maps.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PG 4096
#define SIZE (3 * PG + 100)

static void
check_fd(int fd, const char *name, off_t size, int seals, int cloexec)
{
  char lp[64], link[256] = "";
  struct stat st;
  int s, fl;
  snprintf(lp, sizeof lp, "/proc/self/fd/%d", fd);
  if (readlink(lp, link, sizeof link - 1) < 0 || strncmp(link, name, strlen(name)) != 0)
    zdtm_fail("fd %d: link expected %s..., got %s", fd, name, link);
  if (fstat(fd, &st) < 0 || st.st_size != size)
    zdtm_fail("fd %d: size expected %ld, got %ld", fd, (long)size, (long)st.st_size);
  if ((s = fcntl(fd, F_GET_SEALS)) != seals)
    zdtm_fail("fd %d: seals expected %#x, got %#x", fd, seals, s);
  if ((fl = fcntl(fd, F_GETFL)) < 0 || (fl & O_ACCMODE) != O_RDWR)
    zdtm_fail("fd %d: not O_RDWR any more (flags %#x)", fd, fl);
  if (!!(fcntl(fd, F_GETFD) & FD_CLOEXEC) != cloexec)
    zdtm_fail("fd %d: close-on-exec expected %d", fd, cloexec);
}

int
main(int argc, char **argv)
{
  uint8_t *buf = malloc(SIZE), *m;
  int fd, sfd, rfd, st;
  struct stat s1, s2;
  char self[64];
  size_t off;
  pid_t kid;
  struct zdtm_map mm;

  zdtm_init(argc, argv);
  fd = memfd_create("zdtm-memfd", MFD_ALLOW_SEALING);
  sfd = memfd_create("zdtm-sealed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0 || sfd < 0 || !buf)
    zdtm_error("memfd_create: %s", strerror(errno));
  zdtm_fill(buf, SIZE, 101, 0);
  if (pwrite(fd, buf, SIZE, 0) != SIZE || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0)
    zdtm_error("fill and seal zdtm-memfd: %s", strerror(errno));
  m = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED)
    zdtm_error("mmap: %s", strerror(errno));
  zdtm_fill(m + PG, PG, 102, 0);
  lseek(fd, 777, SEEK_SET);
  zdtm_fill(buf, 2 * PG, 103, 0);
  if (pwrite(sfd, buf, 2 * PG, 0) != 2 * PG
      || fcntl(sfd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SEAL | F_SEAL_GROW) < 0)
    zdtm_error("fill and seal zdtm-sealed: %s", strerror(errno));
  snprintf(self, sizeof self, "/proc/self/fd/%d", sfd);
  if ((rfd = open(self, O_RDONLY | O_CLOEXEC)) < 0)
    zdtm_error("open %s: %s", self, strerror(errno));
  if (getenv("ZDTM_MEMFD_REFUSE"))
    {
      int ffd = memfd_create("zdtm-future", MFD_CLOEXEC | MFD_ALLOW_SEALING);
      uint8_t *fm;
      if (ffd < 0 || ftruncate(ffd, PG) < 0
          || (fm = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, ffd, 0)) == MAP_FAILED
          || fcntl(ffd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE) < 0)
        zdtm_error("memfd sealed with F_SEAL_FUTURE_WRITE: %s", strerror(errno));
      fm[0] = 1;
    }
  kid = fork();
  if (kid == 0)
    {
      zdtm_wait();
      /* The same open file as the parent's: the parent sees this offset. */
      if (m[PG] != zdtm_pattern(102, 0) || lseek(fd, 4321, SEEK_SET) != 4321)
        zdtm_fail("child: mapping or descriptor differs");
      _exit(zdtm_status());
    }

  zdtm_ready();
  zdtm_wait();

  check_fd(fd, "/memfd:zdtm-memfd", SIZE, F_SEAL_SHRINK | F_SEAL_GROW, 0);
  check_fd(sfd, "/memfd:zdtm-sealed", 2 * PG, F_SEAL_WRITE | F_SEAL_SEAL | F_SEAL_GROW, 1);
  if (lseek(fd, 0, SEEK_CUR) != 777)
    zdtm_fail("zdtm-memfd: offset expected 777, got %ld", (long)lseek(fd, 0, SEEK_CUR));
  memset(buf, 0, SIZE);
  if (pread(fd, buf, SIZE, 0) != SIZE)
    zdtm_fail("zdtm-memfd: short read");
  if ((off = zdtm_check(buf, PG, 101, 0)) != (size_t)-1
      || (off = zdtm_check(buf + PG, PG, 102, 0)) != (size_t)-1
      || (off = zdtm_check(buf + 2 * PG, PG + 100, 101, 2 * PG)) != (size_t)-1)
    zdtm_fail("zdtm-memfd: contents differ near byte %zu of a page", off);
  if ((off = zdtm_check(m + 2 * PG, PG, 101, 2 * PG)) != (size_t)-1)
    zdtm_fail("zdtm-memfd mapping: byte %zu of page 2 differs", off);
  if (zdtm_map_of(m, &mm) < 0 || strcmp(mm.perms, "rw-s") != 0
      || strncmp(mm.name, "/memfd:zdtm-memfd", 17) != 0)
    zdtm_fail("zdtm-memfd mapping: maps shows %s %s", mm.perms, mm.name);
  buf[0] = 0x42;
  if (pwrite(fd, buf, 1, 5) != 1 || m[5] != 0x42)
    zdtm_fail("a pwrite to the descriptor does not show in the mapping: two memfds now");
  m[PG + 3] = 0x24;
  if (pread(fd, buf, 8, PG) != 8 || buf[3] != 0x24)
    zdtm_fail("a store to the mapping does not show through the descriptor: two memfds now");
  if (ftruncate(fd, SIZE + PG) == 0 || errno != EPERM)
    zdtm_fail("zdtm-memfd: growing it is allowed now (F_SEAL_GROW lost)");
  if (pread(sfd, buf, 2 * PG, 0) != 2 * PG || (off = zdtm_check(buf, 2 * PG, 103, 0)) != (size_t)-1)
    zdtm_fail("zdtm-sealed: contents differ");
  if (pwrite(sfd, buf, 1, 0) >= 0 || errno != EPERM)
    zdtm_fail("zdtm-sealed: a write is allowed now (F_SEAL_WRITE lost)");
  if (fstat(sfd, &s1) < 0 || fstat(rfd, &s2) < 0 || s1.st_ino != s2.st_ino
      || s1.st_dev != s2.st_dev)
    zdtm_fail("zdtm-sealed: the read-only open is another file now");
  if ((fcntl(rfd, F_GETFL) & O_ACCMODE) != O_RDONLY)
    zdtm_fail("zdtm-sealed: the second open is not read-only any more");
  if (pread(rfd, buf, 16, 0) != 16 || (off = zdtm_check(buf, 16, 103, 0)) != (size_t)-1)
    zdtm_fail("zdtm-sealed: the read-only open reads other bytes");
  kill(kid, SIGTERM);
  if (waitpid(kid, &st, 0) != kid || st != 0)
    zdtm_fail("child ended with status %#x", st);
  else if (lseek(fd, 0, SEEK_CUR) != 4321)
    zdtm_fail("the child's descriptor is not the parent's open file any more (offset %ld)",
              (long)lseek(fd, 0, SEEK_CUR));
  zdtm_finish();
}
