/* crest: the process tree at checkpoint (docs/engine.md, "Dump"): each
 * task seized with its threads, its parent, group and session as the
 * tree's PID namespace sees them, zombies, and the checks of
 * pstree-check.c on what restore could not rebuild. */
#include <config.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/kcmp.h>
#include "dump-int.h"
#include "image.h"
#include "kernel-abi.h"
#include "log.h"
#include "testhook.h"
#include "util.h"

struct dproc *
find_proc(struct dctx *c, pid_t pid)
{
  for (size_t i = 0; i < c->np; i++)
    if (c->p[i].pid == pid)
      return &c->p[i];
  return NULL;
}

/* An ID from a /proc status line listing it per PID namespace level
   (NSpid, NSpgid, NSsid): the innermost level for a container, the first
   (crest's own) otherwise. 0 when the level shows none (a session or group
   whose leader lives outside the namespace). */
static pid_t
ns_field(const char *status, const char *key, bool inner, pid_t fallback)
{
  const char *s = status_field(status, key);
  long v = fallback;
  if (!s)
    return fallback;
  for (;;)
    {
      char *e;
      long x = strtol(s, &e, 10);
      if (e == s)
        break;
      v = x;
      if (!inner)
        break;
      s = e;
      while (*s == ' ' || *s == '\t')
        s++;
      if (*s == '\n' || *s == 0)
        break;
    }
  return (pid_t)v;
}

/* The security label the kernel's LSM (AppArmor, SELinux, Smack) gives
   thread TID of process PID, without its trailing newline ("unconfined",
   "profile (enforce)", a context), or NULL where no LSM shows one (the
   file fails or is empty). PID 0: crest itself. */
static char *
lsm_label(pid_t pid, pid_t tid)
{
  cleanup_free char *path = pid ? xasprintf("/proc/%d/task/%d/attr/current", pid, tid)
                                : xstrdup("/proc/thread-self/attr/current");
  char *l = NULL;
  size_t n = 0;
  crest_error_t e = NULL;
  if (read_file(path, &l, &n, 4096, &e) < 0)
    {
      crest_error_release(&e);
      return NULL;
    }
  while (n > 0 && (l[n - 1] == '\n' || l[n - 1] == '\0'))
    l[--n] = 0;
  if (n == 0)
    {
      free(l);
      return NULL;
    }
  return l;
}

/* A restored task runs under the label of the process that made it: crest
   (process mode) or the container's restorer, which crun gives the label
   of the container's configuration, the one its init has. A task under
   another label would come back without its confinement, or with
   another: refused. */
static int
check_lsm(struct dctx *c, crest_error_t *err)
{
  cleanup_free char *ref
      = c->o->label_of_init ? lsm_label(c->p[0].pid, c->p[0].pid) : lsm_label(0, 0);
  for (size_t i = 0; i < c->np; i++)
    for (size_t t = 0; t < c->p[i].nth; t++)
      {
        cleanup_free char *l = lsm_label(c->p[i].pid, c->p[i].th[t].tid);
        if ((l || ref) && (!l || !ref || strcmp(l, ref) != 0))
          return crest_error_make(err, ENOTSUP,
                                  "task %d: thread %d runs under the security label \"%.200s\", "
                                  "and a restore would give it \"%.200s\" (%s's): cannot "
                                  "checkpoint it",
                                  c->p[i].pid, c->p[i].th[t].tid, l ? l : "", ref ? ref : "",
                                  c->o->label_of_init ? "its container's init" : "crest");
      }
  return 0;
}

/* Syscall user dispatch (prctl PR_SET_SYSCALL_USER_DISPATCH, Linux 5.11:
   Wine's way to catch a Windows program's system calls): the kernel sends
   the thread SIGSYS for a call made outside the region it allowed, which
   would take crest's injected calls too, and no restore sets it again.
   Shown only to a tracer, from Linux 6.4 (older kernels: EIO, nothing to
   see). */
static int
check_sud(pid_t pid, pid_t tid, crest_error_t *err)
{
  struct
  {
    uint64_t mode, selector, offset, len;
  } sud = { 0, 0, 0, 0 };
  if (ptrace((enum __ptrace_request)PTRACE_GET_SYSCALL_USER_DISPATCH_CONFIG, tid, sizeof sud, &sud)
          < 0
      || sud.mode == 0)
    return 0;
  return crest_error_make(err, ENOTSUP,
                          "task %d: thread %d dispatches its system calls to itself (prctl "
                          "PR_SET_SYSCALL_USER_DISPATCH, as Wine does), which crest does not "
                          "restore: cannot checkpoint it",
                          pid, tid);
}

/* Two processes of the tree that share what clone() lets threads share
   (CLONE_VM, CLONE_FILES, CLONE_FS, CLONE_SIGHAND without CLONE_THREAD), or
   a thread that does not share its process's descriptors or root (its
   own unshare): a restore would give each process its own, and every
   thread its process's. Found by sorting the
   processes in kcmp's order of that object, where the ones that share it
   come side by side. */
static int kcmp_type;

static int
kcmp_order(const void *a, const void *b)
{
  long r = syscall(SYS_kcmp, *(const pid_t *)a, *(const pid_t *)b, kcmp_type, 0, 0);
  return r == 1 ? -1 : r == 2 ? 1 : 0;
}

static int
shared_objects(const struct dctx *c, crest_error_t *err)
{
  static const struct
  {
    int type;
    const char *what, *flag;
  } k[] = {
    { KCMP_VM, "one memory", "CLONE_VM" },
    { KCMP_FILES, "one table of descriptors", "CLONE_FILES" },
    { KCMP_FS, "one root, working directory and umask", "CLONE_FS" },
    { KCMP_SIGHAND, "one table of signal handlers", "CLONE_SIGHAND" },
  };
  cleanup_free pid_t *v = xmalloc((c->np + 1) * sizeof *v);
  size_t n = 0;
  for (size_t i = 0; i < c->np; i++)
    if (!c->p[i].zombie)
      v[n++] = c->p[i].pid;
  /* kcmp not there (a kernel without it) or not allowed: nothing to go
     by. */
  if (n < 1 || syscall(SYS_kcmp, v[0], v[0], KCMP_VM, 0, 0) != 0)
    return 0;
  /* A thread that left its process's table of descriptors or its root,
     working directory and umask (unshare(CLONE_FILES), unshare(CLONE_FS):
     a per-thread working directory, as Samba's): a restore makes every
     thread share its process's. */
  for (size_t i = 0; i < c->np; i++)
    for (size_t t = 1; t < c->p[i].nth; t++)
      for (size_t j = 1; j <= 2; j++)
        if (syscall(SYS_kcmp, c->p[i].th[0].tid, c->p[i].th[t].tid, k[j].type, 0, 0) > 0)
          return crest_error_make(
              err, ENOTSUP,
              "task %d: thread %d has %s of its own (unshare(%s)), which a "
              "restore would make its process's: cannot checkpoint it",
              c->p[i].pid, c->p[i].th[t].tid,
              j == 1 ? "a table of descriptors" : "a root, working directory and umask", k[j].flag);
  for (size_t t = 0; n > 1 && t < sizeof k / sizeof k[0]; t++)
    {
      kcmp_type = k[t].type;
      qsort(v, n, sizeof *v, kcmp_order);
      for (size_t i = 1; i < n; i++)
        if (syscall(SYS_kcmp, v[i - 1], v[i], k[t].type, 0, 0) == 0)
          return crest_error_make(err, ENOTSUP,
                                  "task %d shares %s with task %d (clone with %s and without "
                                  "CLONE_THREAD), which a restore would make two: cannot "
                                  "checkpoint them",
                                  v[i - 1], k[t].what, v[i], k[t].flag);
    }
  return 0;
}

int
ns_ids(struct dctx *c, crest_error_t *err)
{
  bool inner = c->o->root_is_ns_init;
  for (size_t i = 0; i < c->np; i++)
    {
      struct dproc *p = &c->p[i];
      cleanup_free char *st = NULL;
      cleanup_free char *statb = NULL;
      char *q;
      long ppid = 0, pgid = 0, sid = 0;
      if (read_proc(p->pid, "status", &st, err) < 0 || read_proc(p->pid, "stat", &statb, err) < 0)
        return -1;
      q = strrchr(statb, ')');
      if (!q || sscanf(q + 2, "%*c %ld %ld %ld", &ppid, &pgid, &sid) != 3)
        return crest_error_make(err, EINVAL, "task %d: cannot parse /proc stat", p->pid);
      p->ppid = ppid, p->pgid = pgid, p->sid = sid;
      /* Field 38, exit_signal: 35 fields after the state. */
      {
        const char *f = q + 2;
        for (int k = 3; k < 38 && f; k++)
          f = (f = strchr(f, ' ')) ? f + 1 : NULL;
        p->exit_sig = f ? atoi(f) : SIGCHLD;
      }
      /* The restore stops threads at the int3 breakpoints of its blob: a
         SIGTRAP the kernel forces while the task ignores it resets the
         task's disposition to the default, which would change the tree. */
      {
        const char *ign = status_field(st, "SigIgn");
        if (ign && strtoull(ign, NULL, 16) & (1ULL << (SIGTRAP - 1)))
          return crest_error_make(err, ENOTSUP,
                                  "task %d: ignores SIGTRAP, which crest's breakpoints would reset "
                                  "to the default action: cannot checkpoint it",
                                  p->pid);
      }
      p->ipid = ns_field(st, "NSpid", inner, p->pid);
      p->ipgid = ns_field(st, "NSpgid", inner, p->pgid);
      p->isid = ns_field(st, "NSsid", inner, p->sid);
      if (inner && i == 0 && p->ipid != 1)
        return crest_error_make(err, EINVAL,
                                "task %d: not the init of its PID namespace (PID %d there)", p->pid,
                                p->ipid);
      for (size_t t = 0; t < p->nth; t++)
        {
          cleanup_free char *ts = NULL;
          cleanup_free char *what = xasprintf("task/%d/status", p->th[t].tid);
          if (read_proc(p->pid, what, &ts, err) < 0)
            return -1;
          p->th[t].itid = ns_field(ts, "NSpid", inner, p->th[t].tid);
          if (p->th[t].tid != p->pid && check_thread_creds(p, p->th[t].tid, st, ts, err) < 0)
            return -1;
          if (check_sud(p->pid, p->th[t].tid, err) < 0)
            return -1;
        }
    }
  if (shared_objects(c, err) < 0)
    return -1;
  return check_lsm(c, err);
}

void
put_exit_signal(struct dctx *c, const struct dproc *p, yajl_gen g)
{
  if (p == &c->p[0] || p->exit_sig == SIGCHLD || !find_proc(c, p->ppid))
    return;
  jput_int(g, "exit_signal", p->exit_sig);
  if (c->w->format < CREST_IMAGE_FORMAT_EXIT_SIGNAL)
    c->w->format = CREST_IMAGE_FORMAT_EXIT_SIGNAL;
}

int
check_groups(struct dctx *c, crest_error_t *err)
{
  cleanup_free pid_t *ids = xmalloc(3 * c->np * sizeof *ids);
  for (size_t i = 0; i < c->np; i++)
    ids[i] = c->p[i].ipid, ids[c->np + i] = c->p[i].ipgid, ids[2 * c->np + i] = c->p[i].isid;
  if (pstree_check_groups(c->np, ids, ids + c->np, ids + 2 * c->np, err) < 0)
    return -1;
  /* A restore makes each process in its parent's session or in one of its
     own (setsid): a process in another (an orphan of a session's process,
     reparented to the init: `sh -c 'cmd &'` under dumb-init, runsv's or
     s6-supervise's services; until December 2026 checkpointed, and every
     restore of the image failed) is refused while the tree runs on. */
  for (size_t i = 1; i < c->np; i++)
    for (size_t j = 0; j < c->np; j++)
      if (c->p[j].pid == c->p[i].ppid && c->p[i].isid != c->p[i].ipid
          && c->p[i].isid != c->p[j].isid)
        return crest_error_make(err, ENOTSUP,
                                "task %d: its session %d is neither its own nor its parent's "
                                "(%d's, %d): a restore cannot put it there (an orphan of another "
                                "session, reparented): cannot checkpoint it",
                                c->p[i].ipid, c->p[i].isid, c->p[j].ipid, c->p[j].isid);
  return 0;
}

/* Is P a process that has exited and waits for its parent's wait() (its
   whole thread group gone, only the leader's entry left)? Then its
   exit_status is what wait() will report, from the exit_code field of
   /proc/PID/stat, which shows 0 to a reader without ptrace access (a
   zombie that was not dumpable, where the kernel keeps that flag: 6.18
   does): status_hidden then, and its parent is asked (inject_own). */
static int
zombie_process(struct dproc *p, crest_error_t *err)
{
  pid_t pid = p->pid;
  bool *zombie = &p->zombie;
  int *status = &p->exit_status;
  cleanup_free char *st = NULL, *statb = NULL;
  cleanup_free char *path = xasprintf("/proc/%d/task", pid);
  const char *s;
  char *q, *save = NULL, *t;
  int n = 0, field = 3;
  DIR *d;
  struct dirent *de;

  *zombie = false;
  if (read_proc(pid, "status", &st, err) < 0)
    return -1;
  s = status_field(st, "State");
  if (!s || *s != 'Z')
    return 0;
  if (!(d = opendir(path)))
    return crest_error_errno(err, "task %d: list threads", pid);
  while ((de = readdir(d)))
    n += atoi(de->d_name) > 0;
  closedir(d);
  if (n != 1)
    return 0; /* a leader gone before its threads: refused below */
  if (read_proc(pid, "stat", &statb, err) < 0)
    return -1;
  q = strrchr(statb, ')');
  for (t = q ? strtok_r(q + 2, " \n", &save) : NULL; t; t = strtok_r(NULL, " \n", &save), field++)
    if (field == 19)
      p->znice = strtol(t, NULL, 10);
    else if (field == 52)
      {
        char ns[64], link[64];
        *status = atoi(t);
        *zombie = true;
        snprintf(ns, sizeof ns, "/proc/%d/ns/user", (int)pid);
        p->status_hidden = *status == 0 && readlink(ns, link, sizeof link) < 0 && errno == EACCES;
        return 0;
      }
  return crest_error_make(err, ENOTSUP, "task %d: zombie whose exit status /proc does not show",
                          pid);
}

/* PID, not the root, was alive when the walk found it and not one of its
   threads is seized yet, but seizing its first thread failed: it may have
   exited just now (a short-lived child of a busy parent). Its parent is
   seized and cannot have waited for it, so it is either a zombie, dumped
   as one, or, when its parent does not wait for children (SIGCHLD ignored,
   SA_NOCLDWAIT), gone. Returns 1 then (*GONE tells which) with ERR
   released, 0 when it is neither (ERR holds the first failure). */
static int
exited_meanwhile(struct dctx *c, struct dproc *p, bool *gone, crest_error_t *err)
{
  cleanup_free char *st = NULL;
  crest_error_t e2 = NULL;
  const char *s;
  if (p == &c->p[0] || p->nth)
    return 0;
  /* No /proc entry, or one in state X (reaped, being released): gone. */
  *gone
      = read_proc(p->pid, "status", &st, &e2) < 0 || !(s = status_field(st, "State")) || *s == 'X';
  crest_error_release(&e2);
  if (!*gone && (zombie_process(p, &e2) < 0 || !p->zombie))
    {
      crest_error_release(&e2);
      return 0;
    }
  crest_debug("checkpoint: task %d exited while the tree was seized: %s", p->pid,
              *gone ? "reaped at once" : "dumped as a zombie");
  crest_error_release(err);
  return 1;
}

/* Is TRACER another crest (a checkpoint of the same tree under way)? */
static bool
tracer_is_crest(pid_t tracer)
{
  cleanup_free char *comm = NULL;
  crest_error_t e = NULL;
  if (read_proc(tracer, "comm", &comm, &e) < 0)
    {
      crest_error_release(&e);
      return false;
    }
  return strcmp(comm, "crest\n") == 0;
}

/* TID, a thread of PID whose /proc status is STATUS: refused when it is
   traced by another process, or in a tracing stop (t) without a tracer
   (one that has just detached). */
static int
traced_by_other(pid_t pid, pid_t tid, const char *status, crest_error_t *err)
{
  const char *s = status_field(status, "TracerPid");
  if (s && atoi(s) != 0 && tracer_is_crest(atoi(s)))
    return crest_error_make(err, 0,
                            "task %d (thread %d): held by crest (PID %d): a checkpoint in "
                            "progress, or a lazy restore still filling its memory; one at a "
                            "time",
                            pid, tid, atoi(s));
  if (s && atoi(s) != 0)
    return crest_error_make(err, 0,
                            "task %d (thread %d): traced by another process (TracerPid %d): "
                            "cannot checkpoint a task another tracer holds",
                            pid, tid, atoi(s));
  s = status_field(status, "State");
  if (s && *s == 't')
    return crest_error_make(err, 0,
                            "task %d (thread %d): in a tracing stop (t): cannot checkpoint a "
                            "traced task",
                            pid, tid);
  return 0;
}

/* K, a child of a container's init, is the finishing helper of an earlier
   restore of that container (restore.c, restore_as_init): a zombie named
   crest-restoring until the init reaps it, which an init that reaps no
   child it did not make never does. It is crest's, not the program's:
   left out, as if reaped, or the next restore would make it again, with
   the restorer's capabilities, which the config need not give. */
static bool
restorer_zombie(const struct dctx *c, pid_t k)
{
  char path[64], buf[512], *q;
  ssize_t n;
  int fd;
  if (!c->o->root_is_ns_init)
    return false;
  snprintf(path, sizeof path, "/proc/%d/stat", (int)k);
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0)
    return false;
  buf[n] = 0;
  q = strrchr(buf, ')');
  return q && q[1] == ' ' && q[2] == 'Z'
         && strncmp(buf + strcspn(buf, "("), "(crest-restoring)", 17) == 0;
}
/* Is thread TID of PID held in vfork(), or in a clone with CLONE_VFORK
   (posix_spawn's), until its child runs another program or exits? The
   kernel keeps it there (State D) where no ptrace stop reaches it: a
   checkpoint would wait for as long as the child takes. */
static bool
in_vfork(pid_t pid, pid_t tid, const char *status)
{
  const uint64_t clone_vfork = 0x4000;
  const char *s = status_field(status, "State");
  cleanup_free char *what = xasprintf("task/%d/syscall", tid);
  cleanup_free char *sc = NULL;
  crest_error_t e = NULL;
  long nr;
  unsigned long a0;
  if (!s || *s != 'D')
    return false;
  if (read_proc(pid, what, &sc, &e) < 0)
    {
      crest_error_release(&e);
      return false;
    }
  if (sscanf(sc, "%ld %lx", &nr, &a0) != 2)
    return false;
  if (nr == SYS_vfork)
    return true;
  if (nr == SYS_clone)
    return (a0 & clone_vfork) != 0;
  if (nr == SYS_clone3)
    {
      /* struct clone_args begins with its flags. */
      uint64_t fl = 0;
      struct iovec l = { &fl, sizeof fl }, r = { (void *)a0, sizeof fl };
      return process_vm_readv(pid, &l, 1, &r, 1, 0) == sizeof fl && (fl & clone_vfork);
    }
  return false;
}

/* Did thread TID of PID, whose status could not be read or which could
   not be seized (ERR), end meanwhile while its process lives on (a
   program that starts and ends threads all the time: a Python thread
   pool)? It is then left out, as if it had ended just before: released,
   ERR is emptied. Until December 2026 the checkpoint failed on it, with
   the /proc file or ptrace call in its line, 6 to 14 times in 15. A
   thread past its exit but not yet released (state X, or Z) cannot be
   seized either: the kernel says EPERM (once in 15 checkpoints of such a
   program on a loaded machine, until December 2026). */
static bool
thread_gone_state(pid_t pid, pid_t tid)
{
  cleanup_free char *st = NULL;
  cleanup_free char *sp = xasprintf("task/%d/status", tid);
  crest_error_t e = NULL;
  const char *s;
  if (read_proc(pid, sp, &st, &e) < 0)
    {
      bool gone = e && (e->status == ENOENT || e->status == ESRCH);
      crest_error_release(&e);
      return gone;
    }
  s = status_field(st, "State");
  return s && (*s == 'X' || *s == 'Z');
}

static bool
thread_ended(pid_t pid, pid_t tid, crest_error_t *err)
{
  if (tid == pid || !*err || kill(pid, 0) < 0)
    return false;
  if ((*err)->status != ENOENT && (*err)->status != ESRCH
      && ((*err)->status != EPERM || !thread_gone_state(pid, tid)))
    return false;
  crest_debug("checkpoint: task %d: thread %d ended while it was seized", pid, tid);
  crest_error_release(err);
  return true;
}

/* Seize every thread of PID, repeating until the set is stable. Returns 1
   when PID exited before any of it was seized and nothing is left of it
   (see exited_meanwhile). */
static int
seize_process(struct dctx *c, struct dproc *p, crest_error_t *err)
{
  bool gone = false;
  bool again = true;
  int stopsig = 0;
  if (zombie_process(p, err) < 0)
    return exited_meanwhile(c, p, &gone, err) ? gone : -1;
  if (p->zombie && p == &c->p[0])
    return crest_error_make(err, ENOTSUP, "task %d: the root of the tree is a zombie", p->pid);
  if (p->zombie)
    return 0; /* nothing to seize: restore recreates it and lets it exit */
  if (pstree_check_leader(p->pid, err) < 0)
    return -1;
  while (again)
    {
      cleanup_free char *path = xasprintf("/proc/%d/task", p->pid);
      DIR *d = opendir(path);
      struct dirent *de;
      again = false;
      if (!d)
        {
          crest_error_errno(err, "task %d: list threads", p->pid);
          return exited_meanwhile(c, p, &gone, err) ? gone : -1;
        }
      while ((de = readdir(d)))
        {
          pid_t tid = atoi(de->d_name);
          bool known = false;
          if (tid <= 0)
            continue;
          for (size_t i = 0; i < p->nth; i++)
            known |= p->th[i].tid == tid;
          if (known)
            continue;
          {
            cleanup_free char *st = NULL;
            cleanup_free char *sp = xasprintf("task/%d/status", tid);
            const char *s;
            if (read_proc(p->pid, sp, &st, err) < 0)
              {
                if (thread_ended(p->pid, tid, err))
                  continue;
                closedir(d);
                return exited_meanwhile(c, p, &gone, err) ? gone : -1;
              }
            s = status_field(st, "State");
            if (s && (*s == 'Z' || *s == 'X') && tid != p->pid && kill(p->pid, 0) == 0)
              {
                crest_debug("checkpoint: task %d: thread %d is ending (state %c): left out", p->pid,
                            tid, *s);
                continue;
              }
            if (s && (*s == 'Z' || *s == 'X'))
              {
                closedir(d);
                crest_error_make(err, ENOTSUP,
                                 "task %d (thread %d): zombie tasks are not supported", p->pid,
                                 tid);
                return exited_meanwhile(c, p, &gone, err) ? gone : -1;
              }
            /* Another tracer (a debugger, strace) owns it: taking it over
               is impossible, and even a failed attempt must not disturb
               it. A task stopped by a signal (T) is checkpointed. */
            if (traced_by_other(p->pid, tid, st, err) < 0)
              {
                closedir(d);
                return -1;
              }
            if (in_vfork(p->pid, tid, st))
              {
                closedir(d);
                return crest_error_make(err, EAGAIN,
                                        "task %d (thread %d): in vfork() or posix_spawn(), "
                                        "which holds it where no checkpoint can stop it until "
                                        "its child runs another program or exits; try again",
                                        p->pid, tid);
              }
          }
          p->th = xrealloc(p->th, (p->nth + 1) * sizeof *p->th);
          memset(&p->th[p->nth], 0, sizeof *p->th);
          p->th[p->nth].tid = tid;
          if (pt_seize_interrupt(tid, &stopsig, err) < 0)
            {
              cleanup_free char *st = NULL;
              if (thread_ended(p->pid, tid, err))
                {
                  /* Seized before it ended: let go of whatever is left. */
                  ptrace(PTRACE_DETACH, tid, 0, 0);
                  continue;
                }
              cleanup_free char *sp = xasprintf("task/%d/status", tid);
              crest_error_t e2 = NULL;
              closedir(d);
              /* A tracer that came in between the check and the seize. */
              if (*err && (*err)->status == EPERM && read_proc(p->pid, sp, &st, &e2) == 0
                  && traced_by_other(p->pid, tid, st, &e2) < 0)
                {
                  crest_error_release(err);
                  *err = e2;
                  return -1;
                }
              crest_error_release(&e2);
              return exited_meanwhile(c, p, &gone, err) ? gone : -1;
            }
          /* Every thread of a process in a group stop reports its stop
             signal, every thread of a running one SIGTRAP; a mix means
             the group began to stop while its threads were being seized. */
          if (p->nth && (stopsig == SIGTRAP) != (p->stop_sig == 0))
            {
              closedir(d);
              p->nth++;
              return crest_error_make(err, EAGAIN,
                                      "task %d (thread %d): began to stop (group stop) while it "
                                      "was being seized; try again",
                                      p->pid, tid);
            }
          p->stop_sig = stopsig == SIGTRAP ? 0 : stopsig;
          p->nth++;
          again = true;
        }
      closedir(d);
    }
  /* Its thread list emptied under us: it exited after the checks above. */
  if (!p->nth)
    {
      crest_error_make(err, ESRCH, "task %d: no thread left to seize", p->pid);
      return exited_meanwhile(c, p, &gone, err) ? gone : -1;
    }
  /* The thread group leader first: restore recreates the others. */
  for (size_t i = 0; i < p->nth; i++)
    if (p->th[i].tid == p->pid && i)
      {
        struct dthread t = p->th[0];
        p->th[0] = p->th[i];
        p->th[i] = t;
      }
  (void)c;
  return 0;
}

int
collect_tree(struct dctx *c, crest_error_t *err)
{
  c->p = xzalloc(sizeof *c->p);
  c->p[0].pid = c->root;
  c->np = 1;
  for (size_t i = 0; i < c->np; i++)
    {
      struct dproc *p = &c->p[i];
      pid_t pid = p->pid;
      int r = seize_process(c, p, err);
      if (r < 0)
        return -1;
      if (r > 0)
        {
          /* Exited and reaped since the walk found it: as if before. */
          free(p->th);
          memmove(p, p + 1, (c->np - i - 1) * sizeof *p);
          c->np--;
          i--;
          continue;
        }
      if (p->zombie)
        continue;
      for (size_t t = 0; t < c->p[i].nth; t++)
        {
          cleanup_free char *kids = NULL;
          cleanup_free char *what = xasprintf("task/%d/children", c->p[i].th[t].tid);
          char *s, *save = NULL;
          if (read_proc(pid, what, &kids, err) < 0)
            return -1;
          for (s = strtok_r(kids, " \n", &save); s; s = strtok_r(NULL, " \n", &save))
            {
              pid_t k = atoi(s);
              if (k <= 0 || find_proc(c, k) || (i == 0 && restorer_zombie(c, k)))
                continue;
              c->p = xrealloc(c->p, (c->np + 1) * sizeof *c->p);
              memset(&c->p[c->np], 0, sizeof *c->p);
              c->p[c->np].pid = k;
              c->np++;
            }
        }
    }
  return 0;
}

int
check_strangers(struct dctx *c, crest_error_t *err)
{
  struct stat ns, st;
  char path[64];
  DIR *d;
  struct dirent *e;
  int rc = 0;
  snprintf(path, sizeof path, "/proc/%d/ns/pid", (int)c->root);
  if (stat(path, &ns) < 0)
    return crest_error_errno(err, "task %d: its PID namespace", c->root);
  if (!(d = opendir("/proc")))
    return crest_error_errno(err, "open /proc");
  while (rc == 0 && (e = readdir(d)))
    {
      char *end;
      long k = strtol(e->d_name, &end, 10);
      if (k <= 0 || *end || find_proc(c, (pid_t)k))
        continue;
      snprintf(path, sizeof path, "/proc/%ld/ns/pid", k);
      /* Gone, or another user's (not the container's: its processes are
         all in the user namespace crest's user owns). */
      if (stat(path, &st) < 0 || st.st_dev != ns.st_dev || st.st_ino != ns.st_ino
          || restorer_zombie(c, (pid_t)k))
        continue;
      {
        cleanup_free char *status = NULL;
        crest_error_t e2 = NULL;
        pid_t inner = 0;
        if (read_proc((pid_t)k, "status", &status, &e2) == 0)
          inner = ns_field(status, "NSpid", true, 0);
        crest_error_release(&e2);
        rc = crest_error_make(err, ENOTSUP,
                              "process %ld (PID %d in the container) is in the container but not "
                              "a descendant of its init (started by `exec`, whose parent is "
                              "outside), which a restore would not make again: cannot checkpoint "
                              "it (let it end first)",
                              k, (int)inner);
      }
    }
  closedir(d);
  return rc;
}

/* A zombie: what its parent's wait() will see, and what /proc still shows
   of it (format 14): its signal dispositions (SigIgn, SigCgt: a handler's
   address is gone with its memory) and blocked signals, its limits,
   credentials, nice value and personality. */
int
dump_zombie(struct dctx *c, struct dproc *p, yajl_gen g, crest_error_t *err)
{
  static const char *const sk[] = { "SigBlk", "SigIgn", "SigCgt" };
  static const char *const jk[] = { "sigblk", "sigign", "sigcgt" };
  cleanup_free char *name = NULL, *status = NULL, *pers = NULL;
  crest_error_t e2 = NULL;
  if (p->status_hidden)
    return crest_error_make(err, ENOTSUP,
                            "task %d: a zombie whose exit status neither /proc nor its parent "
                            "showed, cannot checkpoint it",
                            p->pid);
  if (read_proc(p->pid, "comm", &name, err) < 0 || read_proc(p->pid, "status", &status, err) < 0)
    return -1;
  name[strcspn(name, "\n")] = 0;
  /* Unreadable when the zombie was not dumpable (ptrace access): then to
     its own user too, and it is left as the restore makes it. */
  if (read_proc(p->pid, "personality", &pers, &e2) < 0)
    crest_error_release(&e2);
  yajl_gen_map_open(g);
  jput_int(g, "pid", p->ipid);
  jput_int(g, "ppid", find_proc(c, p->ppid) ? find_proc(c, p->ppid)->ipid : 0);
  jput_int(g, "pgid", p->ipgid);
  jput_int(g, "sid", p->isid);
  jput_bool(g, "zombie", true);
  jput_int(g, "exit_status", p->exit_status);
  jput_str(g, "comm", name);
  for (int k = 0; k < 3; k++)
    {
      const char *s = status_field(status, sk[k]);
      if (!s)
        return crest_error_make(err, EINVAL, "task %d: no %s in /proc status", p->pid, sk[k]);
      jput_u64(g, jk[k], strtoull(s, NULL, 16));
    }
  jput_int(g, "nice", p->znice);
  put_exit_signal(c, p, g);
  if (pers)
    jput_u64(g, "personality", strtoull(pers, NULL, 16));
  if (creds_put(c, p, status, g, err) < 0 || put_rlimits(p, g, err) < 0)
    return -1;
  yajl_gen_map_close(g);
  if (c->w->format < CREST_IMAGE_FORMAT_ZOMBIE)
    c->w->format = CREST_IMAGE_FORMAT_ZOMBIE;
  return 0;
}
