/* crest: pipe helpers shared by dump.c and restore.c (docs/engine.md,
 * "Pipes and FIFOs"): whether a pipe's other end is still open anywhere,
 * and a second open file description of one end. */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include "engine-int.h"
#include "util.h"

/* FD is an end of a pipe (crest's own copy of the tree's open file
   description). Is the other end closed in every process, not only in the
   tree? The kernel tells through poll: a read end with no writer left
   reports POLLHUP, a write end with no reader left POLLERR. 1 yes, 0 no. */
int
pipe_other_end_closed(int fd, bool read_end)
{
  struct pollfd p = { .fd = fd, .events = read_end ? POLLIN : POLLOUT };
  if (poll(&p, 1, 0) < 0)
    return 0;
  return (p.revents & (read_end ? POLLHUP : POLLERR)) != 0;
}

/* Another open file description of the pipe end SVC (crest's descriptor),
   with the status flags FLAGS: two opens of one end keep their own
   O_NONBLOCK. Opening the pipe through /proc/self/fd makes a new one. */
int
pipe_reopen(int svc, bool read_end, int flags, crest_error_t *err)
{
  cleanup_free char *p = xasprintf("/proc/self/fd/%d", svc);
  int fd = open(p, (read_end ? O_RDONLY : O_WRONLY) | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return crest_error_errno(err, "restore: open a pipe end again");
  if (fcntl(fd, F_SETFL, flags & (O_NONBLOCK | O_APPEND)) < 0)
    {
      close(fd);
      return crest_error_errno(err, "restore: pipe flags");
    }
  return fd;
}
