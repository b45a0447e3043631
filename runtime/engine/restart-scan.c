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
 * wait, a sleep, or a generic one (do_syscall_64, where the kernel inlined
 * the waiting functions). Once the thread is seized, the calls its
 * registers fit are found (a relative clock_nanosleep, a nanosleep, a poll,
 * a futex wait: each argument of the right kind, the pointers readable in
 * its memory); the one wchan names, or else the only one they fit, is the
 * call its recorded registers name instead (restart_fix), and the
 * restore makes it again with them as it does for a first interruption
 * (pt_normalize_restart: exact for an absolute deadline, the whole timeout
 * again for a relative one). Otherwise, as before, the call returns EINTR
 * after restore. Best effort: a /proc file that cannot be read leaves the
 * thread as it was. */
#include <config.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include "dump-int.h"
#include "engine-int.h"
#include "log.h"
#include "util.h"

enum
{
  RS_ANY = 1,
  RS_SLEEP,
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
  /* A kind where wchan names one (the function may also be a generic
     one, do_syscall_64, where the waiting ones were inlined). */
  kind = strstr(buf, "poll")        ? RS_POLL
         : strstr(buf, "futex")     ? RS_FUTEX
         : strstr(buf, "nanosleep") ? RS_SLEEP
                                    : RS_ANY;
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

/* Can LEN bytes at ADDR of TID's memory be read (into BUF)? */
static bool
peek_mem(pid_t tid, unsigned long long addr, void *buf, size_t len)
{
  struct iovec l = { buf, len }, r = { (void *)(uintptr_t)addr, len };
  return user_ptr(addr) && process_vm_readv(tid, &l, 1, &r, 1, 0) == (ssize_t)len;
}

/* A struct timespec a sleep would take, at ADDR of TID's memory. */
static bool
timespec_at(pid_t tid, unsigned long long addr)
{
  struct timespec ts;
  return peek_mem(tid, addr, &ts, sizeof ts) && ts.tv_sec >= 0 && ts.tv_nsec >= 0
         && ts.tv_nsec < 1000000000;
}

/* X, a register, as a clockid_t argument (an int: zero- or sign-extended):
   a clock's number, or a CPU-time clock's (negative). */
static bool
clock_arg(unsigned long long x)
{
  int v = (int)x;
  if (x != (unsigned long long)(unsigned)v && x != (unsigned long long)(long long)v)
    return false;
  return v < 0 || v <= 11;
}

const long restart_block_calls[4] = { SYS_clock_nanosleep, SYS_nanosleep, SYS_poll, SYS_futex };

/* The calls of restart_block_calls whose arguments R holds: bit K for
   restart_block_calls[K]. */
static unsigned
candidates(pid_t tid, const struct user_regs_struct *r)
{
  unsigned m = 0;
  int op = (int)r->rsi & FUTEX_CMD_MASK;
  uint8_t probe;
  /* clock_nanosleep(clock, 0, req, rem): relative (an absolute one
     restarts as itself). */
  if (clock_arg(r->rdi) && r->rsi == 0 && timespec_at(tid, r->rdx))
    m |= 1;
  /* nanosleep(req, rem) */
  if (timespec_at(tid, r->rdi))
    m |= 2;
  /* poll(fds, nfds, timeout): an int timeout, positive. */
  if (r->rsi <= 1u << 20 && r->rdx > 0 && r->rdx <= 0x7fffffff
      && (r->rsi == 0 || peek_mem(tid, r->rdi, &probe, 1)))
    m |= 4;
  /* futex(uaddr, FUTEX_WAIT or _BITSET, val, timeout, ...) */
  if (!(r->rdi & 3) && peek_mem(tid, r->rdi, &probe, 1)
      && (op == FUTEX_WAIT || op == FUTEX_WAIT_BITSET) && timespec_at(tid, r->r10))
    m |= 8;
  return m;
}

void
restart_fix(const struct dctx *c, pid_t tid, struct user_regs_struct *r)
{
  unsigned m, hint = 0;
  int kind = 0;
  if ((long)r->orig_rax != SYS_restart_syscall || (long)r->rax != -516 /* ERESTART_RESTARTBLOCK */)
    return;
  for (size_t i = 0; i < c->nrs; i++)
    if (c->rs[i].tid == tid)
      kind = c->rs[i].kind;
  if (!kind)
    return; /* not seen waiting there before the stop: left as it is */
  /* Where wchan names the kind, the call of that kind the arguments fit;
     else the one call they fit, if only one does. */
  m = candidates(tid, r);
  hint = kind == RS_POLL ? 4 : kind == RS_FUTEX ? 8 : kind == RS_SLEEP ? 3 : 0;
  if (m & hint)
    m &= hint;
  if (m && !(m & (m - 1)))
    r->orig_rax = (unsigned long long)restart_block_calls[__builtin_ctz(m)];
  else
    crest_debug("checkpoint: task %d: restart_syscall: its arguments fit %s (mask %#x)", tid,
                m ? "several calls" : "no call", m);
}
