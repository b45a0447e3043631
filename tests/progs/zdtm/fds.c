/* zdtm-fds: regular files and the other descriptor kinds of v1.
 *
 * - fd A: a file opened O_RDWR, offset 12345; fd B = dup(A) shares that
 *   offset (moving one moves the other after restore);
 * - fd C: the same file opened again, O_WRONLY|O_APPEND, close-on-exec;
 *   a write through it lands at the end;
 * - fd D: a directory; fd D2, the same opened without O_DIRECTORY (the
 *   flag shows in fdinfo: varnish's); /dev/null, /dev/zero, /dev/urandom;
 * - a descriptor number far from the others (100).
 * A child process shares A's open file description through fork(): after
 * restore the child moves the offset and the parent sees it. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void
expect_fd(int fd, const char *what, int acc_flags, int fd_flags, const struct stat *want)
{
  struct stat st;
  int fl = fcntl(fd, F_GETFL), fdf = fcntl(fd, F_GETFD);

  if (fl < 0 || fdf < 0 || fstat(fd, &st) < 0)
    {
      zdtm_fail("fd %d (%s): not open after restore: %s", fd, what, strerror(errno));
      return;
    }
  if ((fl & (O_ACCMODE | O_APPEND | O_NONBLOCK)) != acc_flags)
    zdtm_fail("fd %d (%s): flags expected 0%o, got 0%o", fd, what, acc_flags,
              fl & (O_ACCMODE | O_APPEND | O_NONBLOCK));
  if (fdf != fd_flags)
    zdtm_fail("fd %d (%s): descriptor flags expected %d, got %d", fd, what, fd_flags, fdf);
  if (st.st_dev != want->st_dev || st.st_ino != want->st_ino || st.st_rdev != want->st_rdev)
    zdtm_fail("fd %d (%s): file expected dev %lu ino %lu rdev %lu, got dev %lu ino %lu rdev %lu",
              fd, what, (unsigned long)want->st_dev, (unsigned long)want->st_ino,
              (unsigned long)want->st_rdev, (unsigned long)st.st_dev, (unsigned long)st.st_ino,
              (unsigned long)st.st_rdev);
}

int
main(int argc, char **argv)
{
  char path[] = "zdtm-fds.XXXXXX";
  uint8_t buf[20000];
  int a, b, c, d, d2, dn, dz, du, far;
  struct stat sa, sd, sdn, sdz, sdu;
  pid_t kid;
  int st;

  zdtm_init(argc, argv);
  a = mkstemp(path);
  if (a < 0)
    zdtm_error("mkstemp in the current directory: %s", strerror(errno));
  zdtm_fill(buf, sizeof(buf), 30, 0);
  if (write(a, buf, sizeof(buf)) != sizeof(buf))
    zdtm_error("write %s: %s", path, strerror(errno));
  lseek(a, 12345, SEEK_SET);
  b = dup(a);
  c = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
  d = open(".", O_RDONLY | O_DIRECTORY);
  d2 = open(".", O_RDONLY);
  dn = open("/dev/null", O_WRONLY);
  dz = open("/dev/zero", O_RDONLY | O_NONBLOCK);
  du = open("/dev/urandom", O_RDONLY);
  far = fcntl(a, F_DUPFD_CLOEXEC, 100);
  if (b < 0 || c < 0 || d < 0 || d2 < 0 || dn < 0 || dz < 0 || du < 0 || far != 100)
    zdtm_error("open: %s", strerror(errno));
  fstat(a, &sa);
  fstat(d, &sd);
  fstat(dn, &sdn);
  fstat(dz, &sdz);
  fstat(du, &sdu);

  kid = fork();
  if (kid < 0)
    zdtm_error("fork: %s", strerror(errno));
  if (kid == 0)
    {
      zdtm_wait();
      /* The parent has checked offset 12345 and is waiting for us. */
      if (lseek(a, 0, SEEK_CUR) != 12345)
        zdtm_fail("child: shared offset expected 12345, got %ld", (long)lseek(a, 0, SEEK_CUR));
      lseek(a, 777, SEEK_SET);
      _exit(zdtm_status());
    }

  zdtm_ready();
  zdtm_wait();

  expect_fd(a, "file, read-write", O_RDWR, 0, &sa);
  expect_fd(b, "dup of it", O_RDWR, 0, &sa);
  expect_fd(c, "file, append", O_WRONLY | O_APPEND, FD_CLOEXEC, &sa);
  expect_fd(far, "dup at 100", O_RDWR, FD_CLOEXEC, &sa);
  expect_fd(d, "directory", O_RDONLY, 0, &sd);
  expect_fd(d2, "directory without O_DIRECTORY", O_RDONLY, 0, &sd);
  if (!(fcntl(d, F_GETFL) & O_DIRECTORY))
    zdtm_fail("fd %d: opened with O_DIRECTORY, restored without it", d);
  if (fcntl(d2, F_GETFL) & O_DIRECTORY)
    zdtm_fail("fd %d: opened without O_DIRECTORY, restored with it", d2);
  expect_fd(dn, "/dev/null", O_WRONLY, 0, &sdn);
  expect_fd(dz, "/dev/zero", O_RDONLY | O_NONBLOCK, 0, &sdz);
  expect_fd(du, "/dev/urandom", O_RDONLY, 0, &sdu);
  if (lseek(a, 0, SEEK_CUR) != 12345)
    zdtm_fail("fd %d: offset expected 12345, got %ld", a, (long)lseek(a, 0, SEEK_CUR));
  /* A and B share one description: reading through B moves A. */
  uint8_t got[10];
  if (read(b, got, 10) != 10 || zdtm_check(got, 10, 30, 12345) != (size_t)-1)
    zdtm_fail("fd %d: the 10 bytes at offset 12345 differ", b);
  if (lseek(a, 0, SEEK_CUR) != 12355)
    zdtm_fail("fd %d and %d: no longer share an offset (expected 12355, got %ld)", a, b,
              (long)lseek(a, 0, SEEK_CUR));
  if (lseek(far, 0, SEEK_CUR) != 12355)
    zdtm_fail("fd 100 no longer shares the offset of fd %d (expected 12355, got %ld)", a,
              (long)lseek(far, 0, SEEK_CUR));
  lseek(a, 12345, SEEK_SET);
  /* The child shares the description too. */
  kill(kid, SIGTERM);
  if (waitpid(kid, &st, 0) != kid || !WIFEXITED(st) || WEXITSTATUS(st))
    zdtm_fail("child %d ended with status 0x%x", kid, st);
  else if (lseek(a, 0, SEEK_CUR) != 777)
    zdtm_fail("fd %d: the child's seek did not reach the parent (expected 777, got %ld)", a,
              (long)lseek(a, 0, SEEK_CUR));
  /* The append descriptor writes at the end. */
  if (write(c, "END", 3) != 3)
    zdtm_fail("write through the append fd %d: %s", c, strerror(errno));
  else if (fstat(a, &sa) == 0 && sa.st_size != (off_t)sizeof(buf) + 3)
    zdtm_fail("after an append write, size expected %zu, got %ld", sizeof(buf) + 3,
              (long)sa.st_size);
  else if (pread(a, got, 3, sizeof(buf)) != 3 || memcmp(got, "END", 3))
    zdtm_fail("append write did not land at offset %zu", sizeof(buf));
  if (read(dz, got, 4) != 4 || got[0] || got[3])
    zdtm_fail("/dev/zero does not read zeros");
  unlink(path);
  zdtm_finish();
}
