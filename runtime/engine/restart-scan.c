/* crest: which call a thread waiting in restart_syscall was making
 * (docs/engine.md, "Tasks": interrupted calls).
 *
 * A sleep, a poll or a futex wait with a timeout that a stop interrupts (a
 * SIGSTOP and SIGCONT, the ptrace stop of an earlier checkpoint with
 * --leave-running or --pre-dump) goes on in restart_syscall: its
 * registers name that call, not the first, and its deadline is in the
 * kernel's restart block, which no restore can make again. Its own
 * arguments are still in its registers, though. Before the tree is
 * stopped, every thread that waits in restart_syscall (/proc's syscall
 * file) has the kernel function it waits in read (wchan): a poll, a futex
 * wait, or a sleep. Once the thread is seized, its recorded registers name
 * that call instead (restart_fix), when its arguments fit it, and the
 * restore makes it again with them as it does for a first interruption
 * (pt_normalize_restart: exact for an absolute deadline, the whole timeout
 * again for a relative one). Otherwise, as before, the call returns EINTR
 * after restore. Best effort: a /proc file that cannot be read leaves the
 * thread as it was. */
#include <config.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "dump-int.h"
#include "engine-int.h"
#include "log.h"
#include "util.h"

enum
{
  RS_SLEEP = 1,
  RS_POLL,
  RS_FUTEX
};

/* The first bytes of a /proc file, NUL-terminated ("" when unreadable). */
static void
proc_peek(const char *path, char *buf, size_t len)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  ssize_t n = fd < 0 ? -1 : read(fd, buf, len - 1);
  buf[n > 0 ? n : 0] = 0;
  if (fd >= 0)
    close(fd);
}

static void
note_thread(struct dctx *c, pid_t pid, pid_t tid)
{
  char path[96], buf[128];
  int kind;
  snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", pid, tid);
  proc_peek(path, buf, sizeof buf);
  if (atol(buf) != SYS_restart_syscall || !strchr(buf, ' '))
    return;
  snprintf(path, sizeof path, "/proc/%d/task/%d/wchan", pid, tid);
  proc_peek(path, buf, sizeof buf);
  if (!buf[0] || strcmp(buf, "0") == 0)
    return;
  kind = strstr(buf, "poll") ? RS_POLL : strstr(buf, "futex") ? RS_FUTEX : RS_SLEEP;
  c->rs = xrealloc(c->rs, (c->nrs + 1) * sizeof *c->rs);
  c->rs[c->nrs].tid = tid;
  c->rs[c->nrs++].kind = kind;
  crest_debug("checkpoint: task %d waits in restart_syscall (%s)", tid, buf);
}

void
restart_scan(struct dctx *c)
{
  size_t n = 1, cap = 16;
  pid_t *todo = xmalloc(cap * sizeof *todo);
  todo[0] = c->root;
  /* Breadth first from the root, by each thread's children. */
  for (size_t i = 0; i < n && n < 1u << 20; i++)
    {
      char path[64];
      struct dirent *e;
      DIR *d;
      snprintf(path, sizeof path, "/proc/%d/task", todo[i]);
      if (!(d = opendir(path)))
        continue;
      while ((e = readdir(d)))
        {
          pid_t tid = atoi(e->d_name);
          char kids[4096], *s, *end;
          if (tid <= 0)
            continue;
          note_thread(c, todo[i], tid);
          snprintf(path, sizeof path, "/proc/%d/task/%d/children", todo[i], tid);
          proc_peek(path, kids, sizeof kids);
          for (s = kids;; s = end)
            {
              long k = strtol(s, &end, 10);
              if (end == s || k <= 0)
                break;
              if (n == cap)
                todo = xrealloc(todo, (cap *= 2) * sizeof *todo);
              todo[n++] = (pid_t)k;
            }
        }
      closedir(d);
    }
  free(todo);
}

/* Is X what a pointer into user space looks like? */
static bool
user_ptr(unsigned long long x)
{
  return x >= 4096 && x < 1ULL << 47;
}

void
restart_fix(const struct dctx *c, pid_t tid, struct user_regs_struct *r)
{
  long nr = -1;
  int kind = 0;
  if ((long)r->orig_rax != SYS_restart_syscall || (long)r->rax != -516 /* ERESTART_RESTARTBLOCK */)
    return;
  for (size_t i = 0; i < c->nrs; i++)
    if (c->rs[i].tid == tid)
      kind = c->rs[i].kind;
  switch (kind)
    {
    case RS_POLL: /* poll(fds, nfds, timeout in ms) */
      if (r->rsi <= 1u << 20 && (int)r->rdx > 0 && (r->rsi == 0 || user_ptr(r->rdi)))
        nr = SYS_poll;
      break;
    case RS_FUTEX: /* futex(uaddr, FUTEX_WAIT or _BITSET, val, timeout, ...) */
      {
        int op = (int)r->rsi & FUTEX_CMD_MASK;
        if (user_ptr(r->rdi) && (op == FUTEX_WAIT || op == FUTEX_WAIT_BITSET) && user_ptr(r->r10))
          nr = SYS_futex;
        break;
      }
    case RS_SLEEP:
      /* nanosleep(req, rem), or clock_nanosleep(clock, 0, req, rem): a
         relative one (an absolute one restarts as itself). */
      if (user_ptr(r->rdi))
        nr = SYS_nanosleep;
      else if (r->rsi == 0 && user_ptr(r->rdx))
        nr = SYS_clock_nanosleep;
      break;
    }
  if (nr >= 0)
    r->orig_rax = (unsigned long long)nr;
  else if (kind)
    crest_debug("checkpoint: task %d: restart_syscall's arguments fit no call of its kind %d", tid,
                kind);
}
