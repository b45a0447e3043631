/* crest: what keeps a checkpoint from harming the tree when crest itself
 * dies (docs/engine.md, "A checkpoint never harms the tree"). The dump runs
 * in a worker process, the tracer, in a session of its own; the process the
 * caller started only waits for it. If the caller's process dies (SIGKILL,
 * the OOM killer, a kill of its process group, a lost terminal), the worker
 * is told (PR_SET_PDEATHSIG) and fails the dump at its next safe point like
 * any interrupted checkpoint: registers, masks and mappings put back, every
 * thread detached, cgroup put back as it was (frozen again only if the user
 * had paused the container), temporary image removed. If the worker dies
 * instead, the caller's process puts the cgroup back and removes the
 * temporary image; the kernel's own detach lets the threads go, in a state
 * the injection keeps sound at every moment but one syscall's (ptrace.c). */
#include <config.h>
#include <dirent.h>
#include <errno.h>
#include <time.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "engine.h"
#include "engine-int.h"
#include "log.h"
#include "sk-tcp.h"
#include "testhook.h"
#include "util.h"

static const int held_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };

/* CREST_FAULT=ACTION@POINT (test hooks, docs/engine.md "Test hooks"): the
   action asked for at POINT, or NULL; with CREST_FAULT_AFTER=N, only once
   POINT has been passed N times. */
static const char *
fault_at(const char *point)
{
  static char action[32];
  static long passed;
  const char *f = crest_test_knob("CREST_FAULT"), *at, *after;
  if (!f || !(at = strchr(f, '@')) || strcmp(at + 1, point) != 0
      || (size_t)(at - f) >= sizeof action)
    return NULL;
  after = crest_test_knob("CREST_FAULT_AFTER");
  if (after && passed++ < strtol(after, NULL, 10))
    return NULL;
  memcpy(action, f, at - f);
  action[at - f] = 0;
  return action;
}

static pid_t fault_target;

void
dump_fault_target(pid_t tid)
{
  fault_target = tid;
}

/* Which try of crest_engine_dump this worker makes (the first is 1). */
static int dump_try = 1;

int
dump_fault(const char *point, crest_error_t *err)
{
  const char *a = fault_at(point);
  if (!a)
    return 0;
  crest_debug("checkpoint: test hook %s at %s", a, point);
  if (strcmp(a, "kill-crest") == 0)
    {
      /* The caller's process, as an OOM kill would; dead, and the worker
         told (PR_SET_PDEATHSIG comes with the reparenting), before the
         dump goes on. */
      pid_t parent = getppid();
      int pfd = syscall(SYS_pidfd_open, parent, 0);
      struct pollfd p = { pfd, POLLIN, 0 };
      kill(parent, SIGKILL);
      if (pfd >= 0)
        {
          poll(&p, 1, 10000);
          close(pfd);
        }
    }
  else if (strcmp(a, "kill-worker") == 0)
    kill(getpid(), SIGKILL);
  else if (strcmp(a, "sigterm-crest") == 0)
    /* The caller's process is asked to end (a service manager's stop, a
       ^C), as it may be at any moment. */
    kill(getppid(), SIGTERM);
  else if (strcmp(a, "kill-both") == 0)
    {
      /* Both crest processes (a kill of every crest, a stopped scope):
         nothing of crest is left to undo anything. */
      kill(getppid(), SIGKILL);
      kill(getpid(), SIGKILL);
    }
  else if (strcmp(a, "kill-tree") == 0 && fault_target > 0)
    /* Someone else kills the process crest waits for (the OOM killer, a
       user's kill -9), its other threads traced by crest (ptrace.c). */
    kill(fault_target, SIGKILL);
  else if (strcmp(a, "eio") == 0)
    return crest_error_make(err, EIO, "image: write at %s", point);
  else if (strcmp(a, "eagain") == 0 || (strcmp(a, "eagain-once") == 0 && dump_try == 1))
    return crest_error_make(err, EAGAIN, "test hook: a passing state at %s (try %d)", point,
                            dump_try);
  return 0;
}

int
dump_interrupted(crest_error_t *err)
{
  sigset_t set;
  sigpending(&set);
  for (size_t i = 0; i < ARRAY_SIZE(held_signals); i++)
    if (sigismember(&set, held_signals[i]))
      return crest_error_make(err, EINTR, "checkpoint interrupted by signal %d (%s)",
                              held_signals[i], strsignal(held_signals[i]));
  return 0;
}

/* The temporary directories of checkpoints to FINAL_DIR whose crest is
   gone ("FINAL_DIR.tmp-PID" with no process PID): removed. A directory of a
   crest that still runs (another checkpoint to the same place) is left. */
void
dump_remove_stale_tmp(const char *final_dir)
{
  cleanup_free char *copy = xstrdup(final_dir);
  char *slash = strrchr(copy, '/');
  const char *dir = ".", *base = copy;
  cleanup_free char *prefix = NULL;
  size_t plen;
  DIR *d;
  struct dirent *de;

  while (slash && slash > copy && slash[1] == 0) /* trailing slashes */
    *slash = 0, slash = strrchr(copy, '/');
  if (slash)
    {
      *slash = 0;
      dir = slash == copy ? "/" : copy;
      base = slash + 1;
    }
  prefix = xasprintf("%s.tmp-", base);
  plen = strlen(prefix);
  if (!(d = opendir(dir)))
    return;
  while ((de = readdir(d)))
    {
      char *end;
      long pid;
      if (strncmp(de->d_name, prefix, plen) != 0)
        continue;
      errno = 0;
      pid = strtol(de->d_name + plen, &end, 10);
      if (errno || *end || end == de->d_name + plen || pid <= 0 || pid > INT_MAX || pid == getpid())
        continue;
      if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
        continue;
      {
        cleanup_free char *path = xasprintf("%s/%s", dir, de->d_name);
        crest_error_t e = NULL;
        crest_debug("checkpoint: removing %s, left by a crest that is gone", path);
        if (remove_tree(path, &e) < 0)
          crest_error_release(&e);
      }
    }
  closedir(d);
}

/* In the worker: the channel to the caller's process (-1: the dump runs
   in the caller's process itself). */
static int guard_chan = -1;

void
dump_guard_hold(int fd, bool reuse)
{
  char msg[2] = { 'R', reuse ? '1' : '0' };
  if (guard_chan < 0)
    return;
  if (send_with_fd(guard_chan, msg, sizeof msg, fd) < 0)
    crest_debug("checkpoint: a TCP socket in repair mode not handed to the caller: %s",
                strerror(errno));
}

/* In the worker: the dump itself, its result sent to the caller's process
   through FD (status, then the message), and _exit. */
static void __attribute__((noreturn))
worker(pid_t parent, int fd, pid_t root, const struct crest_dump_opts *o)
{
  crest_error_t err = NULL;
  struct sigaction ign = { .sa_handler = SIG_IGN };
  int rc;

  /* Out of the caller's session and process group: a signal for the
     group (Ctrl-C, `timeout -s KILL`, a hangup) reaches the caller only. */
  setsid();
  /* The held signals are blocked (the caller blocked them before the
     fork) and ignored: still queued, because blocked, and seen by
     dump_interrupted, but never acted upon. */
  for (size_t i = 0; i < ARRAY_SIZE(held_signals); i++)
    sigaction(held_signals[i], &ign, NULL);
  sigaction(SIGPIPE, &ign, NULL); /* the caller's terminal or pipe may be gone */
  prctl(PR_SET_PDEATHSIG, SIGHUP);
  if (getppid() != parent)
    kill(getpid(), SIGHUP); /* died before the prctl */
  guard_chan = fd;
  rc = dump_tree_here(root, o, &err);
  if (rc < 0)
    {
      char *msg = err && err->msg ? err->msg : "checkpoint failed";
      dprintf(fd, "%d\n%s", err ? err->status : 0, msg);
    }
  fflush(NULL);
  _exit(rc < 0 ? 1 : 0);
}

/* Forward a held signal the caller's process got to the worker, once: it
   fails the dump at its next safe point. */
static void
forward_held(pid_t w, bool *sent)
{
  sigset_t set;
  if (*sent)
    return;
  sigpending(&set);
  for (size_t i = 0; i < ARRAY_SIZE(held_signals); i++)
    if (sigismember(&set, held_signals[i]))
      {
        kill(w, held_signals[i]);
        *sent = true;
        return;
      }
}

/* The worker died without a word (killed, crashed): what the kernel did not
   undo is undone here, and said in one line. */
static int
worker_died(pid_t w, int st, const struct crest_dump_opts *o, pid_t root, crest_error_t *err)
{
  cleanup_free char *tmp = xasprintf("%s.tmp-%d", o->image_dir, (int)w);
  crest_error_t e = NULL;
  if (o->freeze && o->freeze(o->freeze_data, root, CREST_FREEZE_RESTORE, &e) < 0)
    crest_error_release(&e);
  if (remove_tree(tmp, &e) < 0)
    crest_error_release(&e);
  if (WIFSIGNALED(st))
    return crest_error_make(err, 0,
                            "checkpoint of %d: the engine's worker (PID %d) was killed by "
                            "signal %d (%s); the tree was let go, no image written",
                            root, (int)w, WTERMSIG(st), strsignal(WTERMSIG(st)));
  return crest_error_make(err, 0,
                          "checkpoint of %d: the engine's worker (PID %d) ended with status %d "
                          "and no reason",
                          root, (int)w, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

/* The worker's sockets in TCP repair mode (dump_guard_hold), held here
   until it is gone: closed then, in repair mode if the tree was killed,
   which sends its peers nothing; taken out of it first if the worker died
   without a word, as the tree then runs on. */
struct held
{
  int *fd;
  bool *reuse;
  size_t n;
};

static void
held_release(struct held *h, bool worker_died)
{
  for (size_t i = 0; i < h->n; i++)
    {
      if (worker_died && tcp_conn_unrepair(h->fd[i], h->reuse[i]) < 0)
        crest_warn("checkpoint: a TCP connection could not be taken out of repair mode: %s",
                   strerror(errno));
      close(h->fd[i]);
    }
  free(h->fd);
  free(h->reuse);
}

/* One message of the worker: a socket to hold (into H) or bytes of its
   answer (into BUF at *LEN). 0 at its end. */
static ssize_t
guard_recv(int fd, struct held *h, char *buf, size_t *len, size_t cap)
{
  union
  {
    struct cmsghdr c;
    char b[CMSG_SPACE(sizeof(int))];
  } u;
  char tmp[4096];
  struct iovec iov = { tmp, sizeof tmp };
  struct msghdr m
      = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof u.b };
  struct cmsghdr *c;
  ssize_t n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
  if (n <= 0)
    return n;
  c = CMSG_FIRSTHDR(&m);
  if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
    {
      h->fd = xrealloc(h->fd, (h->n + 1) * sizeof *h->fd);
      h->reuse = xrealloc(h->reuse, (h->n + 1) * sizeof *h->reuse);
      memcpy(&h->fd[h->n], CMSG_DATA(c), sizeof(int));
      h->reuse[h->n++] = n >= 2 && tmp[1] == '1';
      return n;
    }
  if ((size_t)n > cap - 1 - *len)
    n = (ssize_t)(cap - 1 - *len);
  memcpy(buf + *len, tmp, n);
  *len += n;
  return n;
}

/* Wait for the worker W, forwarding held signals, and read its answer
   (*CODE: the errno of its failure, 0 if none was given). */
static int
supervise(pid_t w, int fd, pid_t root, const struct crest_dump_opts *o, int *code,
          crest_error_t *err)
{
  char buf[4096];
  size_t len = 0;
  bool sent = false;
  int st = 0;
  struct held h = { NULL, NULL, 0 };

  for (;;)
    {
      struct pollfd p = { .fd = fd, .events = POLLIN };
      ssize_t n;
      forward_held(w, &sent);
      if (poll(&p, 1, 100) <= 0)
        continue;
      n = guard_recv(fd, &h, buf, &len, sizeof buf);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
    }
  buf[len] = 0;
  while (waitpid(w, &st, 0) < 0 && errno == EINTR)
    ;
  held_release(&h, !(WIFEXITED(st) && (WEXITSTATUS(st) == 0 || len)));
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
    return 0;
  if (WIFEXITED(st) && len)
    {
      char *nl = strchr(buf, '\n');
      *code = atoi(buf);
      return crest_error_make(err, *code, "%s", nl ? nl + 1 : buf);
    }
  return worker_died(w, st, o, root, err);
}

/* oom_score_adj of the caller's process while it waits: the highest, so
   that under memory pressure the kernel kills it, which the worker survives
   and turns into a clean failure, rather than the worker. Raising it needs
   no privilege; putting back a value no lower than where it started does
   not either. */
static int
oom_adj(int value)
{
  int old = 0;
  FILE *f = fopen("/proc/self/oom_score_adj", "r+e");
  if (!f)
    return INT_MIN;
  if (fscanf(f, "%d", &old) != 1)
    old = INT_MIN;
  else if (fseek(f, 0, SEEK_SET) != 0 || fprintf(f, "%d\n", value) < 0)
    old = INT_MIN;
  fclose(f);
  return old;
}

/* One checkpoint by a worker; *CODE as supervise's. */
static int
dump_once(pid_t root, const struct crest_dump_opts *o, int *code, crest_error_t *err)
{
  int pfd[2], rc, old_oom;
  pid_t w;

  *code = 0;
  /* Messages, not a stream: the sockets the worker hands over
     (dump_guard_hold) arrive one by one beside its answer. */
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pfd) < 0)
    return crest_error_errno(err, "checkpoint: socketpair");
  fflush(NULL);
  w = fork();
  if (w < 0)
    {
      close(pfd[0]), close(pfd[1]);
      return crest_error_errno(err, "checkpoint: fork the engine's worker");
    }
  if (w == 0)
    {
      close(pfd[0]);
      worker(getppid(), pfd[1], root, o);
    }
  close(pfd[1]);
  old_oom = oom_adj(1000);
  rc = supervise(w, pfd[0], root, o, code, err);
  close(pfd[0]);
  if (old_oom != INT_MIN)
    oom_adj(old_oom);
  return rc;
}

/* The first held signal pending (the caller wants the checkpoint to
   end), or 0. */
static int
held_pending(void)
{
  sigset_t pend;
  sigpending(&pend);
  for (size_t i = 0; i < ARRAY_SIZE(held_signals); i++)
    if (sigismember(&pend, held_signals[i]))
      return held_signals[i];
  return 0;
}

/* A checkpoint that failed on a passing state of the tree (EAGAIN: a
   signal that came while it was seized, a group stop begun meanwhile, a
   file of /proc held open for a moment, as redis does every 100 ms to read
   its memory use) has left the tree as it was: it is tried again at once
   (the tree has run on meanwhile, while the worker let it go and a new
   one seized it), at most DUMP_TRIES times in all, after a pause that
   grows by 20 ms a try (200 ms in all), in which the tree runs: a server
   accepts the connections its listener queued while it was stopped, a
   worker closes a connection its peer ended. */
#define DUMP_TRIES 5

int
crest_engine_dump(pid_t root, const struct crest_dump_opts *o, crest_error_t *err)
{
  sigset_t hold, old_mask;
  int rc, code, t;

  if (o->image_dir)
    dump_remove_stale_tmp(o->image_dir);
  sigemptyset(&hold);
  for (size_t i = 0; i < ARRAY_SIZE(held_signals); i++)
    sigaddset(&hold, held_signals[i]);
  sigprocmask(SIG_BLOCK, &hold, &old_mask);
  for (t = 1;; t++)
    {
      dump_try = t;
      rc = dump_once(root, o, &code, err);
      if (rc == 0 || code != EAGAIN || t == DUMP_TRIES || held_pending())
        break;
      {
        cleanup_free char *why = crest_error_text(*err);
        struct timespec pause = { 0, 20L * 1000 * 1000 * t };
        crest_debug("checkpoint: try %d of %d failed (%s); trying again", t, DUMP_TRIES, why);
        while (nanosleep(&pause, &pause) < 0 && errno == EINTR)
          ;
      }
      crest_error_release(err);
    }
  if (rc < 0 && code == EAGAIN && t > 1)
    crest_error_wrap(err, "tried %d times", t);
  if (rc == 0)
    {
      /* The checkpoint is complete (its image committed, the tree ended
         unless --leave-running): a SIGINT or SIGTERM held since would end
         crest now with nothing said and a status that says it failed, and
         a container's clean-up after it (crun delete) undone. Taken and
         said instead; crest goes on to its end. A caller's own handler
         gets it as sent. */
      int sig = held_pending();
      struct sigaction sa;
      if (sig && sigaction(sig, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL)
        {
          struct timespec zero = { 0, 0 };
          while (sigtimedwait(&hold, NULL, &zero) > 0)
            ;
          crest_warn("checkpoint of %d: done; signal %d (%s) came once its image was complete, "
                     "and is not acted on",
                     root, sig, strsignal(sig));
        }
    }
  if (rc < 0)
    {
      /* A held signal may now do what it was sent for (the worker has let
         the tree go): its default action ends crest, so the reason is
         said first. */
      int sig = held_pending();
      struct sigaction sa;
      if (sig && sigaction(sig, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL && *err)
        {
          crest_error_report(err);
          crest_error_make(err, EINTR, "checkpoint interrupted");
        }
    }
  sigprocmask(SIG_SETMASK, &old_mask, NULL);
  return rc;
}
