/* crest: the restore seizes its tasks. Each task reports once it has its
 * PID and its blob mapped; crest seizes it and tells it to go on, then
 * waits, in one poll of the report pipe and SIGCHLD, until every thread is
 * parked at the blob's end. */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <linux/futex.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "engine.h"
#include "engine-int.h"
#include "util.h"

#include "restore-int.h"

struct rthread *
find_thread(struct rctx *c, pid_t tid, struct rproc **pp)
{
  for (size_t i = 0; i < c->np; i++)
    for (size_t t = 0; t < c->p[i].nth; t++)
      if (c->p[i].th[t].tid == tid)
        {
          if (pp)
            *pp = &c->p[i];
          return &c->p[i].th[t];
        }
  return NULL;
}

/* CPU time (clock ticks) the processes that reported have used so far:
   the restore's progress that sends no event (a blob filling a large
   mapping). */
static unsigned long long
tree_cpu(struct rctx *c)
{
  unsigned long long sum = 0;
  for (size_t i = 0; i < c->np; i++)
    {
      char path[40], buf[1024], *s;
      unsigned long long ut = 0, st = 0;
      ssize_t n;
      int fd;
      if (c->p[i].real <= 0)
        continue;
      snprintf(path, sizeof path, "/proc/%d/stat", (int)c->p[i].real);
      if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        continue;
      n = read(fd, buf, sizeof buf - 1);
      close(fd);
      if (n <= 0)
        continue;
      buf[n] = 0;
      /* After the command's closing parenthesis: state is field 3, utime
         and stime are fields 14 and 15. */
      if ((s = strrchr(buf, ')'))
          && sscanf(s + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) == 2)
        sum += ut + st;
    }
  return sum;
}

/* One report of a task: seize it and tell it to go on. 1: taken, 0: the
   pipe is at its end (every task closed it), -1: an error. */
static int
take_report(struct rctx *c, crest_error_t *err)
{
  struct report r;
  ssize_t got = read(c->report[0], &r, sizeof r);
  if (got == 0)
    return 0;
  if (got != sizeof r)
    return crest_error_errno(err, "restore: read task report");
  if (r.idx < 0 || (size_t)r.idx >= c->np)
    return crest_error_make(err, EPROTO, "restore: bad task report");
  if (r.kind == 'E')
    return crest_error_make(err, 0, "restore: %s", r.msg);
  c->p[r.idx].real = r.pid;
  c->p[r.idx].base = r.base;
  c->p[r.idx].size = r.size;
  if (ptrace(PTRACE_SEIZE, r.pid, 0,
             PTRACE_O_TRACECLONE | PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL)
      < 0)
    return crest_error_errno(err, "restore: process %d: ptrace seize", r.pid);
  c->p[r.idx].seized = true;
  __atomic_store_n(&c->go[r.idx], 1, __ATOMIC_RELEASE);
  syscall(SYS_futex, &c->go[r.idx], FUTEX_WAKE, 1, NULL, NULL, 0);
  return 1;
}

/* Every stop and exit waiting to be collected: a thread parked at the
   blob's int3 counts in *PARKED; any collected event is progress. */
static int
reap_events(struct rctx *c, size_t *parked, bool *progress, crest_error_t *err)
{
  pid_t w;
  int st;
  while ((w = waitpid(-1, &st, __WALL | WNOHANG)) > 0)
    {
      struct rproc *p = NULL;
      struct rthread *t = find_thread(c, w, &p);
      *progress = true;
      if (WIFEXITED(st) || WIFSIGNALED(st))
        {
          if (t)
            return crest_error_make(err, ESRCH,
                                    "restore: task %d died while being restored (%s %d)", w,
                                    WIFEXITED(st) ? "exit status" : "signal",
                                    WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
          continue;
        }
      if (!WIFSTOPPED(st))
        continue;
      if ((st >> 16) == PTRACE_EVENT_CLONE || (st >> 16) == PTRACE_EVENT_STOP)
        ptrace(PTRACE_CONT, w, 0, 0);
      else if (WSTOPSIG(st) == SIGTRAP && t)
        {
          if (!t->parked)
            (*parked)++;
          t->parked = true;
        }
      else
        ptrace(PTRACE_CONT, w, 0, WSTOPSIG(st) == SIGTRAP ? 0 : WSTOPSIG(st));
    }
  return 0;
}

/* A signalfd of SIGCHLD, which the caller holds blocked: the tracer is
   sent one for every stop and exit of a tracee (unless it ignores SIGCHLD
   or set SA_NOCLDSTOP: put back to the default while this runs, in OLD). */
static int
chld_fd(struct sigaction *old, crest_error_t *err)
{
  struct sigaction dfl;
  sigset_t chld;
  int fd;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, NULL);
  sigaction(SIGCHLD, &dfl, old);
  fd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  if (fd < 0)
    {
      sigaction(SIGCHLD, old, NULL);
      return crest_error_errno(err, "restore: signalfd");
    }
  return fd;
}

/* Seize every task as it reports and wait until every thread is parked,
   in one poll of the report pipe and SIGCHLD: no sleep. A restore is stuck
   when for 30 s nothing was reported, no task stopped or exited, and the
   reported processes used no CPU time (a blob filling memory on a loaded
   machine is slow, not stuck). */
int
wait_parked(struct rctx *c, crest_error_t *err)
{
  size_t reported = 0, parked = 0, total = 0, live = 0;
  struct sigaction old;
  struct signalfd_siginfo si;
  unsigned long long cpu = 0;
  time_t last = time(NULL);
  bool eof = false;
  int sfd, rc = 0;

  for (size_t i = 0; i < c->np; i++)
    total += c->p[i].nth, live += !c->p[i].zombie;
  if ((sfd = chld_fd(&old, err)) < 0)
    return -1;
  while (rc == 0 && (reported < live || parked < total))
    {
      struct pollfd pfd[2]
          = { { reported < live && !eof ? c->report[0] : -1, POLLIN, 0 }, { sfd, POLLIN, 0 } };
      bool progress = false;
      int n = poll(pfd, 2, 1000);
      if (n < 0 && errno != EINTR)
        rc = crest_error_errno(err, "restore: poll");
      else if (n > 0 && (pfd[0].revents & (POLLIN | POLLHUP)))
        {
          /* At its end: every task closed it, so one died before it
             reported; its exit, when ours to see, says which. */
          int r = take_report(c, err);
          rc = r < 0 ? -1 : 0;
          reported += r > 0;
          eof = r == 0;
          progress = r > 0;
        }
      while (rc == 0 && read(sfd, &si, sizeof si) == sizeof si)
        ;
      if (rc == 0)
        rc = reap_events(c, &parked, &progress, err);
      if (rc == 0 && n == 0 && !progress)
        {
          unsigned long long now_cpu = tree_cpu(c);
          progress = now_cpu != cpu;
          cpu = now_cpu;
        }
      if (progress)
        last = time(NULL);
      else if (rc == 0 && time(NULL) - last > 30)
        rc = crest_error_make(err, ETIMEDOUT,
                              "restore: no progress for 30 s (%zu of %zu processes ready, %zu of "
                              "%zu threads done%s)",
                              reported, live, parked, total,
                              eof && reported < live ? ", a process exited before it was ready"
                                                     : "");
    }
  close(sfd);
  sigaction(SIGCHLD, &old, NULL);
  return rc;
}
