/* zdtm-eventfd: eventfd descriptors.
 * - "big": counter 0x123456789 (above 32 bits), O_NONBLOCK, no
 *   close-on-exec, shared with a child (fork);
 * - "sem": EFD_SEMAPHORE, counter 5, close-on-exec;
 * - "zero": counter 0, blocking.
 * After restore: the link, status flags and close-on-exec of each; "big"
 * reads all of its counter at once and then EAGAIN; "sem" reads 1 five
 * times and is then empty (semaphore mode and count); "zero" is empty and
 * counts a new write; the child's descriptor is still the parent's: what
 * it writes after restore is read by the parent. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#define BIG 0x123456789ULL

static bool
readable(int fd)
{
  struct pollfd p = { .fd = fd, .events = POLLIN };
  return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static void
check_flags(int fd, const char *name, int nonblock, int cloexec)
{
  char lp[64], link[128] = "";
  int fl = fcntl(fd, F_GETFL);
  snprintf(lp, sizeof lp, "/proc/self/fd/%d", fd);
  if (readlink(lp, link, sizeof link - 1) < 0 || strcmp(link, "anon_inode:[eventfd]") != 0)
    zdtm_fail("%s: link expected anon_inode:[eventfd], got %s", name, link);
  if (fl < 0 || (fl & O_ACCMODE) != O_RDWR || !!(fl & O_NONBLOCK) != nonblock)
    zdtm_fail("%s: status flags %#x (expected O_RDWR%s)", name, fl, nonblock ? "|O_NONBLOCK" : "");
  if (!!(fcntl(fd, F_GETFD) & FD_CLOEXEC) != cloexec)
    zdtm_fail("%s: close-on-exec expected %d", name, cloexec);
}

int
main(int argc, char **argv)
{
  uint64_t v = BIG;
  int big, sem, zero, st;
  pid_t kid;

  zdtm_init(argc, argv);
  big = eventfd(0, EFD_NONBLOCK);
  sem = eventfd(5, EFD_SEMAPHORE | EFD_CLOEXEC);
  zero = eventfd(0, 0);
  if (big < 0 || sem < 0 || zero < 0)
    zdtm_error("eventfd: %s", strerror(errno));
  if (write(big, &v, 8) != 8)
    zdtm_error("write the big counter: %s", strerror(errno));
  kid = fork();
  if (kid < 0)
    zdtm_error("fork: %s", strerror(errno));
  if (kid == 0)
    {
      v = 0x10;
      zdtm_wait();
      if (write(big, &v, 8) != 8)
        zdtm_fail("child: write to the shared eventfd: %s", strerror(errno));
      _exit(zdtm_status());
    }

  zdtm_ready();
  zdtm_wait();

  check_flags(big, "big", 1, 0);
  check_flags(sem, "sem", 0, 1);
  check_flags(zero, "zero", 0, 0);
  /* The child adds 0x10 to the counter of the same open file description. */
  kill(kid, SIGTERM);
  if (waitpid(kid, &st, 0) != kid || st != 0)
    zdtm_fail("child ended with status %#x", st);
  v = 0;
  if (read(big, &v, 8) != 8 || v != BIG + 0x10)
    zdtm_fail("big: read expected %#llx (its count and the child's write), got %#" PRIx64,
              BIG + 0x10, v);
  if (read(big, &v, 8) != -1 || errno != EAGAIN)
    zdtm_fail("big: a second read did not fail with EAGAIN (not one counter any more)");
  for (int i = 0; i < 5; i++)
    {
      v = 0;
      if (!readable(sem) || read(sem, &v, 8) != 8 || v != 1)
        {
          zdtm_fail("sem: read %d expected 1 (semaphore mode, count 5), got %" PRIu64, i + 1, v);
          break;
        }
    }
  if (readable(sem))
    zdtm_fail("sem: still readable after five reads (count above 5, or not a semaphore)");
  if (readable(zero))
    zdtm_fail("zero: readable (counter not 0)");
  v = 7;
  if (write(zero, &v, 8) != 8 || !readable(zero) || read(zero, &v, 8) != 8 || v != 7)
    zdtm_fail("zero: a write of 7 reads back as %" PRIu64, v);
  zdtm_finish();
}
