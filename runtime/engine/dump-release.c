/* crest: the end of a dump. The tree is let go as it was (its freezer put
 * back first, each task made dumpable again, every thread detached), or
 * killed while every task is still held, and waited for until every
 * process of it has exited. */
#include <config.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#ifndef SYS_process_mrelease
#define SYS_process_mrelease 448
#endif
#include "engine.h"
#include "engine-int.h"
#include "util.h"

#include "dump-int.h"

/* Has every thread of process P exited? A pidfd of a process polls
   readable once its whole thread group has exited (a zombie awaiting its
   parent's wait() counts as exited); without one, /proc says so. */
static bool
proc_dead(pid_t pid, int pfd)
{
  cleanup_free char *st = NULL;
  crest_error_t e = NULL;
  const char *state;
  if (pfd >= 0)
    {
      struct pollfd p = { .fd = pfd, .events = POLLIN };
      return poll(&p, 1, 0) > 0;
    }
  if (read_proc(pid, "status", &st, &e) < 0)
    {
      crest_error_release(&e);
      return true;
    }
  state = status_field(st, "State");
  return !state || ((*state == 'Z' || *state == 'X') && strstr(st, "\nThreads:\t1\n"));
}

/* Until every process of the killed tree has exited (PFD: a pidfd of each,
   -1 where there is none, -2 once gone). Woken by the pidfds and by
   SIGCHLD (chld_wait), which a tracer is sent for each exit of a thread it
   still traces. Only a process without a pidfd (a kernel before 5.3) is
   looked at every 10 ms. */
static int
wait_tree_gone(struct dctx *c, int *pfd, crest_error_t *err)
{
  const int limit_ms = 10000;
  cleanup_free struct pollfd *set = xmalloc((c->np + 1) * sizeof *set);
  struct timespec t0, now;
  struct chld_wait w;
  int rc = 0;

  chld_wait_begin(&w);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;)
    {
      size_t left = 0, n = 0;
      bool blind = false;
      pid_t first = 0;
      for (size_t i = 0; i < c->np; i++)
        {
          /* A killed thread the detach missed (SIGKILL had already woken
             it) is still ours: as its tracer, collect its exit, or it stays
             in its thread group, and its parent's wait() (the PID
             namespace's init waits for every task before it can exit)
             cannot have it, until crest exits. Asked of every process,
             dead or not: a process can be counted dead (its pidfd readable)
             before its tracer collected it. A thread is asked until its
             exit is collected or it is not ours. */
          for (size_t t = 0; t < c->p[i].nth; t++)
            if (c->p[i].th[t].tid)
              {
                pid_t r = waitpid(c->p[i].th[t].tid, NULL, __WALL | WNOHANG);
                if (r == c->p[i].th[t].tid || (r < 0 && errno == ECHILD))
                  c->p[i].th[t].tid = 0;
              }
          if (pfd[i] == -2)
            continue;
          if (proc_dead(c->p[i].pid, pfd[i]))
            {
              if (pfd[i] >= 0)
                close(pfd[i]);
              pfd[i] = -2;
              continue;
            }
          if (!left++)
            first = c->p[i].pid;
          if (pfd[i] >= 0)
            set[n++] = (struct pollfd){ .fd = pfd[i], .events = POLLIN };
          else
            blind = true;
        }
      if (!left)
        break;
      clock_gettime(CLOCK_MONOTONIC, &now);
      if ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 > limit_ms)
        {
          for (size_t i = 0; i < c->np; i++)
            if (pfd[i] >= 0)
              close(pfd[i]);
          rc = crest_error_make(err, ETIMEDOUT,
                                "checkpoint written, but task %d still runs %d s after "
                                "SIGKILL (%zu process(es) of the tree left)",
                                first, limit_ms / 1000, left);
          break;
        }
      if (w.fd >= 0)
        set[n++] = (struct pollfd){ .fd = w.fd, .events = POLLIN };
      poll(set, n, blind || w.fd < 0 ? 10 : 1000);
      chld_wait_drain(&w);
    }
  chld_wait_end(&w);
  return rc;
}

/* Detach every thread; with KILL_IT, kill the tree first (while every task is
   still held, so none runs another instruction) and return only once every
   process of it has exited: a checkpoint without --leave-running ends with
   the tree gone, its PIDs free for a restore once the zombies are reaped. */
int
release_tree(struct dctx *c, bool kill_it, bool *frozen, crest_error_t *thaw_err,
             crest_error_t *err)
{
  cleanup_free int *pfd = xmalloc((c->np ? c->np : 1) * sizeof *pfd);

  for (size_t i = 0; i < c->np; i++)
    {
      pfd[i] = -1;
      if (kill_it)
        {
          pfd[i] = syscall(SYS_pidfd_open, c->p[i].pid, 0);
          if (pfd[i] < 0 || syscall(SYS_pidfd_send_signal, pfd[i], SIGKILL, NULL, 0) < 0)
            kill(c->p[i].pid, SIGKILL);
        }
      else if (c->p[i].nth && c->p[i].th[0].tid)
        raise_dumpable(&c->p[i]);
      for (size_t t = 0; t < c->p[i].nth; t++)
        if (c->p[i].th[t].tid)
          pt_detach(c->p[i].th[t].tid);
    }
  /* Thawed now, before waiting for the killed tree to go: SIGKILL is
     already pending for every task, so none runs its own code again, and a
     task of a frozen cgroup (one in a group stop was seen to) need not
     leave the freezer on its own to die. (A tree left running was put back
     as it was before the detach: dump_tree_here.) */
  if (*frozen)
    {
      *frozen = false;
      c->o->freeze(c->o->freeze_data, c->root, CREST_FREEZE_THAW, thaw_err);
    }
  if (!kill_it)
    return 0;
  /* A large process's memory given back by crest as well, beside its own
     exit (process_mrelease, Linux 5.15, on a pidfd of one's own: no
     privilege): 1 GiB of touched memory goes in 40 ms rather than 60, and
     the tree's PIDs are free that much sooner (a 1 GiB checkpoint: 491 ->
     478 ms, median of 10). Not for small ones: 200 calls made a tree of
     200 small processes 15 ms slower. A refusal (an older kernel, a process
     already past it, one whose memory a process outside the tree shares)
     leaves that to the exit alone. */
  for (size_t i = 0; i < c->np; i++)
    if (pfd[i] >= 0 && c->p[i].mem_bytes >= (16u << 20))
      syscall(SYS_process_mrelease, pfd[i], 0);
  return wait_tree_gone(c, pfd, err);
}

/* A tree left running goes back to how it was while every task is still
   held: a container the user paused is frozen again before its tasks are
   let go, so that none of them runs an instruction in between. A failure
   to do so fails a checkpoint that had succeeded (*RC). */
void
put_back_freezer(struct dctx *c, bool *frozen, int *rc, crest_error_t *err)
{
  crest_error_t e2 = NULL;
  *frozen = false;
  if (c->o->freeze(c->o->freeze_data, c->root, CREST_FREEZE_RESTORE, &e2) < 0)
    {
      if (*rc == 0)
        *err = e2, *rc = -1;
      else
        crest_error_release(&e2);
    }
}
