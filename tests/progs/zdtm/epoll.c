/* zdtm-epoll: an epoll and its targets, shared with a child.
 * "ep" (close-on-exec) watches:
 * - an eventfd with count 1: EPOLLIN, data 0x1111222233334444;
 * - a pipe with 3 bytes: the read end EPOLLIN | EPOLLET (its edge not yet
 *   taken), data 7; the write end EPOLLOUT, data 0xfeed;
 * - an eventfd with count 1, EPOLLIN | EPOLLONESHOT, data 9, which fired
 *   once: disarmed;
 * - an empty eventfd added as fd 100, then moved to fd 101 (dup2, close):
 *   its entry keeps number 100, data 100;
 * - an eventfd with count 3 added as its fd, data 0x20, then closed in the
 *   parent: only the child holds it (at the same number).
 * "ep2" (O_NONBLOCK) watches ep: EPOLLIN, data 0xe9.
 * After restore: each epoll's fdinfo lists exactly these targets (number,
 * events, data); ep2 reports ep ready; ep reports exactly the four ready
 * targets, not the disarmed one nor the empty one; EPOLL_CTL_MOD finds the
 * eventfd; fd 101 is not a target but the same file as fd 100 is; the
 * child removes its target through its copy of ep, and the parent's ep no
 * longer lists it (one epoll); flags and close-on-exec. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

struct tgt
{
  int tfd;
  unsigned events;
  unsigned long long data;
};

static void
add(int ep, int fd, unsigned events, uint64_t data)
{
  struct epoll_event e = { .events = events, .data.u64 = data };
  if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e) < 0)
    zdtm_error("epoll_ctl add fd %d: %s", fd, strerror(errno));
}

static int
efd(uint64_t count)
{
  int fd = eventfd(0, EFD_NONBLOCK);
  if (fd < 0 || (count && write(fd, &count, 8) != 8))
    zdtm_error("eventfd: %s", strerror(errno));
  return fd;
}

/* The targets fdinfo lists for EP, at most MAX. */
static int
listed(int ep, struct tgt *t, int max)
{
  char p[64], b[512];
  int n = 0;
  FILE *in;
  snprintf(p, sizeof p, "/proc/self/fdinfo/%d", ep);
  if (!(in = fopen(p, "r")))
    return -1;
  while (fgets(b, sizeof b, in) && n < max)
    if (sscanf(b, "tfd: %d events: %x data: %llx", &t[n].tfd, &t[n].events, &t[n].data) == 3)
      n++;
  fclose(in);
  return n;
}

/* fdinfo of EP lists exactly the N targets WANT, in any order. */
static void
check_listed(int ep, const char *name, const struct tgt *want, int n)
{
  struct tgt got[16];
  int m = listed(ep, got, 16);
  if (m != n)
    zdtm_fail("%s: fdinfo lists %d targets (expected %d)", name, m, n);
  for (int i = 0; i < n; i++)
    {
      bool found = false;
      for (int k = 0; k < m && !found; k++)
        found = got[k].tfd == want[i].tfd && got[k].events == want[i].events
                && got[k].data == want[i].data;
      if (!found)
        zdtm_fail("%s: target fd %d events %#x data %#llx missing or changed", name, want[i].tfd,
                  want[i].events, want[i].data);
    }
}

int
main(int argc, char **argv)
{
  struct epoll_event ev[16];
  int ep, ep2, p[2], ready, once, moved, shared, n, st;
  unsigned long long seen = 0;
  pid_t kid;

  zdtm_init(argc, argv);
  ep = epoll_create1(EPOLL_CLOEXEC);
  ep2 = epoll_create1(0);
  if (ep < 0 || ep2 < 0 || fcntl(ep2, F_SETFL, O_NONBLOCK) < 0 || pipe(p) < 0)
    zdtm_error("epoll_create1 or pipe: %s", strerror(errno));
  once = efd(1);
  add(ep, once, EPOLLIN | EPOLLONESHOT, 9);
  if (epoll_wait(ep, ev, 16, 0) != 1 || ev[0].data.u64 != 9)
    zdtm_error("the one-shot target did not fire");
  ready = efd(1);
  add(ep, ready, EPOLLIN, 0x1111222233334444ULL);
  if (write(p[1], "abc", 3) != 3)
    zdtm_error("write the pipe: %s", strerror(errno));
  add(ep, p[0], EPOLLIN | EPOLLET, 7);
  add(ep, p[1], EPOLLOUT, 0xfeed);
  moved = efd(0);
  if (dup2(moved, 100) != 100)
    zdtm_error("dup2: %s", strerror(errno));
  close(moved);
  add(ep, 100, EPOLLIN, 100);
  if (dup2(100, 101) != 101)
    zdtm_error("dup2: %s", strerror(errno));
  close(100);
  shared = efd(3);
  add(ep, shared, EPOLLIN, 0x20);
  add(ep2, ep, EPOLLIN, 0xe9);
  kid = fork();
  if (kid < 0)
    zdtm_error("fork: %s", strerror(errno));
  if (kid == 0)
    {
      zdtm_wait();
      if (epoll_ctl(ep, EPOLL_CTL_DEL, shared, NULL) < 0)
        zdtm_fail("child: remove fd %d from its copy of ep: %s", shared, strerror(errno));
      _exit(zdtm_status());
    }
  close(shared);

  zdtm_ready();
  zdtm_wait();

  {
    /* The kernel adds EPOLLERR and EPOLLHUP to every target (EH), and
       clears all but the private bits of a one-shot that fired. */
    const unsigned EH = EPOLLERR | EPOLLHUP;
    const struct tgt want[] = {
      { once, EPOLLONESHOT, 9 },           { ready, EPOLLIN | EH, 0x1111222233334444ULL },
      { p[0], EPOLLIN | EPOLLET | EH, 7 }, { p[1], EPOLLOUT | EH, 0xfeed },
      { 100, EPOLLIN | EH, 100 },          { shared, EPOLLIN | EH, 0x20 },
    };
    const struct tgt want2[] = { { ep, EPOLLIN | EH, 0xe9 } };
    check_listed(ep, "ep", want, 6);
    check_listed(ep2, "ep2", want2, 1);
  }
  if ((fcntl(ep2, F_GETFL) & O_NONBLOCK) == 0 || (fcntl(ep, F_GETFL) & O_NONBLOCK) != 0)
    zdtm_fail("O_NONBLOCK of ep2 or ep changed");
  if (!(fcntl(ep, F_GETFD) & FD_CLOEXEC) || (fcntl(ep2, F_GETFD) & FD_CLOEXEC))
    zdtm_fail("close-on-exec of ep or ep2 changed");
  n = epoll_wait(ep2, ev, 16, 0);
  if (n != 1 || ev[0].data.u64 != 0xe9)
    zdtm_fail("ep2: %d ready (expected ep, data 0xe9)", n);
  n = epoll_wait(ep, ev, 16, 0);
  for (int i = 0; i < n; i++)
    seen |= ev[i].data.u64 == 0x1111222233334444ULL ? 1
            : ev[i].data.u64 == 7                   ? 2
            : ev[i].data.u64 == 0xfeed              ? 4
            : ev[i].data.u64 == 0x20                ? 8
                                                    : 16;
  if (n != 4 || seen != 15)
    zdtm_fail("ep: %d ready, mask %#llx (expected the eventfd, both pipe ends and the child's "
              "eventfd: 0xf)",
              n, seen);
  {
    struct epoll_event e = { .events = EPOLLIN, .data.u64 = 1 };
    if (epoll_ctl(ep, EPOLL_CTL_MOD, ready, &e) < 0)
      zdtm_fail("ep: EPOLL_CTL_MOD of fd %d: %s", ready, strerror(errno));
  }
  if (epoll_ctl(ep, EPOLL_CTL_DEL, 101, NULL) == 0 || errno != ENOENT)
    zdtm_fail("ep: fd 101 is a target (expected its entry under number 100 only)");
  if (dup2(101, 100) != 100 || epoll_ctl(ep, EPOLL_CTL_DEL, 100, NULL) < 0)
    zdtm_fail("ep: the file of fd 101 is not the target registered as fd 100: %s", strerror(errno));
  kill(kid, SIGTERM);
  if (waitpid(kid, &st, 0) != kid || st != 0)
    zdtm_fail("child ended with status %#x", st);
  {
    struct tgt got[16];
    n = listed(ep, got, 16);
    for (int i = 0; i < n; i++)
      if (got[i].data == 0x20)
        zdtm_fail("ep: the child removed fd %d from its copy, the parent's still lists it (two "
                  "epolls now)",
                  shared);
  }
  zdtm_finish();
}
