/* crest: the dump. Seize the tree, read what the kernel shows from outside,
 * inject a few syscalls for what only the task knows, copy memory in bulk,
 * write the image, then let the tree go or kill it. Any failure leaves the
 * tree running exactly as it was and no image behind. */
#include <config.h>
#include <ctype.h>
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
#include <time.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>
#include <linux/openat2.h>
#include "engine.h"
#include "engine-int.h"
#include "image.h"
#include "kernel-abi.h"
#include "log.h"
#include "testhook.h"
#include "shmem.h"
#include "util.h"

#ifndef PTRACE_PEEKSIGINFO
#define PTRACE_PEEKSIGINFO 0x4209
#endif
#ifndef PTRACE_PEEKSIGINFO_SHARED
#define PTRACE_PEEKSIGINFO_SHARED 1
#endif
#define KCMP_FILE 0
#define PAGE 4096UL
#define BATCH (64UL << 20) /* bytes per process_vm_readv batch */

struct dthread
{
  pid_t tid;
  pid_t itid; /* as recorded: inside the tree's PID namespace for a container */
  struct user_regs_struct regs;
  uint8_t *xstate;
  size_t xlen;
  uint64_t clear_tid;
  uint64_t alt_sp, alt_size;
  int32_t alt_flags;
  uint64_t sigmask; /* the thread's own (blocked only within an injected call) */
  struct prctl_thread pr;
};

struct dproc
{
  pid_t pid, ppid, pgid, sid;
  pid_t ipid, ipgid, isid; /* as recorded (see struct dthread) */
  struct dthread *th;
  size_t nth;
  uint64_t gadget;
  struct ksigaction sa[65];
  uint64_t itimer[3][4]; /* interval sec, usec, value sec, usec */
  uint64_t brk;
  long securebits;
  struct prctl_proc pr;
  bool zombie;     /* exited, waiting for its parent's wait() */
  int exit_status; /* then: the status wait() will report */
  /* In a group stop (kill -STOP, ^Z): the stop signal, else 0. */
  int stop_sig;
  /* Its parent, seized with it, has already collected that stop with
     waitpid(WUNTRACED) (so another would report nothing). */
  bool stop_reported;
  char *root_dir; /* its root directory when it is not the tree's top (a
                     chroot), as a path from the top; NULL: the top */
};

struct dfile
{
  int id;
  const char *type; /* reg, dir, dev, pipe, fifo, inherited, tty */
  char *path;
  int flags;
  int64_t pos;
  dev_t dev;
  ino_t ino;
  pid_t pid; /* one user of it (for kcmp and pidfd_getfd) */
  int fd;
  bool unlinked;
  char *data; /* image file with the contents of an unlinked file */
  struct unlinked_info u;
  bool deleted_dir;      /* a directory removed while open: u holds its mode and owner */
  struct lock_set locks; /* flock and OFD locks (locks.c) */
  int seals;             /* memfd */
  uint64_t ino_pipe;
  bool pipe_read;
};

struct dpipe
{
  uint64_t ino;
  char *path; /* named FIFO */
  bool has_r, has_w;
  bool low_fds_only; /* every descriptor on it is 0, 1 or 2 */
  bool no_r, no_w;   /* that end is closed in every process (pipe_other_end_closed) */
  pid_t rpid;
  int rfd;
  pid_t opid; /* a named FIFO: any descriptor on it */
  int ofd;
  int size;
  char *data;
  size_t len;
};

struct dfd
{
  pid_t pid;
  int fd;
  bool cloexec;
  int file;
  struct lock_set locks; /* the process's POSIX locks through this descriptor */
};

/* One user namespace ID map, as /proc/PID/[ug]id_map shows it to crest:
   inside the task's namespace, outside in crest's. */
struct idmap
{
  uint32_t in[64], out[64], len[64];
  size_t n;
};

struct dctx
{
  const struct crest_dump_opts *o;
  bool foreign_userns; /* the tree lives in another user namespace than crest */
  struct idmap uidmap, gidmap;
  pid_t root;
  int topfd; /* the directory the paths /proc shows are relative to (open_top) */
  struct dproc *p;
  size_t np;
  struct dfile *f;
  size_t nf;
  struct dpipe *pp;
  size_t npp;
  struct dfd *fds;
  size_t nfds;
  struct img_writer *w;
  uint64_t pages_bytes, readv_calls;
  struct timespec t0;
  bool progress;
  struct shm_table shm; /* objects with no path, mapped in the tree */
  /* Container mode: the container's terminal, the pty slave that
     /dev/console names inside the container and that is its init's
     controlling terminal (what crun sets up for process.terminal). */
  struct
  {
    bool found;
    dev_t dev, rdev;
    ino_t ino;
    pid_t fg;   /* its foreground process group, as /proc shows it (0: none) */
    bool saved; /* termios and ws read through a descriptor of the tree */
    struct termios tio;
    struct winsize ws;
  } term;
};

/* SIGINT, SIGTERM, SIGHUP and SIGQUIT are held off during a dump (dying with
   threads half-injected would leave them with foreign registers) and turn
   into a clean failure at the next safe point. */
static int
interrupted(crest_error_t *err)
{
  sigset_t set;
  static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
  sigpending(&set);
  for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
    if (sigismember(&set, sigs[i]))
      return crest_error_make(err, EINTR, "checkpoint interrupted by signal %d (%s)", sigs[i],
                              strsignal(sigs[i]));
  return 0;
}

static void
maybe_progress(struct dctx *c, const char *what)
{
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  if ((now.tv_sec - c->t0.tv_sec) * 1000000000L + (now.tv_nsec - c->t0.tv_nsec) >= 1000000000L)
    {
      c->progress = true;
      crest_progress("checkpoint of %d: %s", c->root, what);
    }
}

static struct dproc *
find_proc(struct dctx *c, pid_t pid)
{
  for (size_t i = 0; i < c->np; i++)
    if (c->p[i].pid == pid)
      return &c->p[i];
  return NULL;
}

static int
read_proc(pid_t pid, const char *what, char **out, crest_error_t *err)
{
  cleanup_free char *path = xasprintf("/proc/%d/%s", pid, what);
  if (read_file(path, out, NULL, 0, err) < 0)
    return crest_error_wrap(err, "task %d", pid);
  return 0;
}

/* Open PATH, a path /proc showed for task P. The dump runs outside the
   tree's mount namespace (a container's paths mean nothing on the host), so
   the path is resolved under the task's root directory, where absolute
   symlinks and ".." stay inside it and no magic link (a /proc/self/... of
   the container's /proc would be crest's own) is followed: nothing in the
   task's file system can make crest open a file of its own. /proc shows a
   chroot'd task's paths from the tree's top, not from its root (open_top):
   for such a task the top is where they are resolved. */
static int
open_in_root(const struct dctx *c, const struct dproc *p, const char *path, int flags,
             crest_error_t *err)
{
  cleanup_free char *rp = xasprintf("/proc/%d/root", p->pid);
  cleanup_close int own = -1;
  struct open_how how;
  int fd, root;
  if (p->root_dir)
    root = c->topfd;
  else if ((root = own = open(rp, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
    return crest_error_errno(err, "open the task's root directory");
  memset(&how, 0, sizeof how);
  how.flags = flags | O_CLOEXEC
              | (flags & O_PATH ? 0 : O_NOCTTY); /* openat2 takes nothing else with O_PATH */
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  fd = syscall(SYS_openat2, root, path, &how, sizeof how);
  if (fd < 0)
    return crest_error_errno(err, "open inside the task's root directory");
  return fd;
}

static const char *
status_field(const char *status, const char *key)
{
  size_t n = strlen(key);
  for (const char *l = status; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
    if (strncmp(l, key, n) == 0 && l[n] == ':')
      {
        l += n + 1;
        while (*l == ' ' || *l == '\t')
          l++;
        return l;
      }
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

/* /proc/PID/status shows IDs as crest's user namespace sees them; the
   restore sets them from inside the tree's own one (a rootless container
   maps its root to the user who runs crest). */
static int
load_idmap(pid_t pid, const char *which, struct idmap *m, crest_error_t *err)
{
  cleanup_free char *text = NULL;
  char *save = NULL;
  if (read_proc(pid, which, &text, err) < 0)
    return -1;
  m->n = 0;
  for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
    {
      unsigned long in, out, len;
      if (sscanf(l, "%lu %lu %lu", &in, &out, &len) != 3 || m->n == ARRAY_SIZE(m->in))
        return crest_error_make(err, EINVAL, "task %d: cannot parse /proc %s", pid, which);
      m->in[m->n] = in, m->out[m->n] = out, m->len[m->n] = len;
      m->n++;
    }
  return 0;
}

/* An ID as the tree's user namespace sees it; one it does not map reads
   there as the overflow ID, 65534. */
static long
inner_id(const struct dctx *c, const struct idmap *m, long id)
{
  if (!c->foreign_userns)
    return id;
  for (size_t i = 0; i < m->n; i++)
    if ((uint64_t)id >= m->out[i] && (uint64_t)id - m->out[i] < m->len[i])
      return m->in[i] + (id - m->out[i]);
  return 65534;
}

/* Every task must share the root task's namespaces: restore makes each
   task in the namespaces its restorer runs in, so a task that unshared one
   (a mount, UTS, IPC, network, PID, cgroup or time namespace of its own,
   including one only for its future children) would come back in the wrong
   one. Namespace types this kernel lacks are skipped. */
static int
same_namespaces(struct dctx *c, crest_error_t *err)
{
  static const struct
  {
    const char *name, *like; /* LIKE: the root's namespace it must equal */
  } ns[] = { { "mnt", "mnt" },       { "uts", "uts" },   { "ipc", "ipc" },
             { "net", "net" },       { "pid", "pid" },   { "pid_for_children", "pid" },
             { "cgroup", "cgroup" }, { "time", "time" }, { "time_for_children", "time" } };
  for (size_t k = 0; k < ARRAY_SIZE(ns); k++)
    {
      struct stat r, t;
      cleanup_free char *rp = xasprintf("/proc/%d/ns/%s", c->root, ns[k].like);
      if (stat(rp, &r) < 0)
        continue;
      for (size_t i = 0; i < c->np; i++)
        {
          cleanup_free char *tp = xasprintf("/proc/%d/ns/%s", c->p[i].pid, ns[k].name);
          if (c->p[i].zombie)
            continue;
          if (stat(tp, &t) < 0 || t.st_dev != r.st_dev || t.st_ino != r.st_ino)
            return crest_error_make(err, ENOTSUP,
                                    "task %d: a %s namespace of its own (nested), cannot "
                                    "checkpoint it",
                                    c->p[i].pid, ns[k].name);
        }
    }
  return 0;
}

static int
user_ns(struct dctx *c, crest_error_t *err)
{
  struct stat r, self;
  cleanup_free char *rp = xasprintf("/proc/%d/ns/user", c->root);
  if (stat(rp, &r) < 0)
    return crest_error_errno(err, "task %d: its user namespace", c->root);
  if (stat("/proc/self/ns/user", &self) < 0)
    return crest_error_errno(err, "checkpoint: crest's own user namespace");
  c->foreign_userns = r.st_dev != self.st_dev || r.st_ino != self.st_ino;
  if (c->foreign_userns
      && (load_idmap(c->root, "uid_map", &c->uidmap, err) < 0
          || load_idmap(c->root, "gid_map", &c->gidmap, err) < 0))
    return -1;
  for (size_t i = 1; i < c->np; i++)
    {
      struct stat t;
      cleanup_free char *tp = xasprintf("/proc/%d/ns/user", c->p[i].pid);
      if (stat(tp, &t) < 0)
        return crest_error_errno(err, "task %d: its user namespace", c->p[i].pid);
      if (t.st_dev != r.st_dev || t.st_ino != r.st_ino)
        return crest_error_make(
            err, ENOTSUP, "task %d: a user namespace of its own (nested), cannot checkpoint it",
            c->p[i].pid);
    }
  return 0;
}

/* Do status lines KEY of A and B say the same? */
static bool
same_status_line(const char *a, const char *b, const char *key)
{
  const char *x = status_field(a, key), *y = status_field(b, key);
  size_t nx, ny;
  if (!x || !y)
    return x == y;
  nx = strcspn(x, "\n");
  ny = strcspn(y, "\n");
  return nx == ny && memcmp(x, y, nx) == 0;
}

/* Credentials are restored per process: every thread gets the main
   thread's. A thread that changed its own (a raw setresuid or capset, which
   glibc's wrappers would have applied to all threads) cannot be restored
   as it is, so it is refused. */
static int
check_thread_creds(const struct dproc *p, pid_t tid, const char *main_st, const char *st,
                   crest_error_t *err)
{
  static const char *const keys[]
      = { "Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs" };
  for (size_t k = 0; k < ARRAY_SIZE(keys); k++)
    if (!same_status_line(main_st, st, keys[k]))
      return crest_error_make(err, ENOTSUP,
                              "task %d: thread %d has credentials of its own (%s differs from the "
                              "main thread's), which crest cannot restore",
                              p->pid, tid, keys[k]);
  return 0;
}

static int
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
        }
    }
  return 0;
}

static int
check_groups(struct dctx *c, crest_error_t *err)
{
  cleanup_free pid_t *ids = xmalloc(3 * c->np * sizeof *ids);
  for (size_t i = 0; i < c->np; i++)
    ids[i] = c->p[i].ipid, ids[c->np + i] = c->p[i].ipgid, ids[2 * c->np + i] = c->p[i].isid;
  return pstree_check_groups(c->np, ids, ids + c->np, ids + 2 * c->np, err);
}

/* Is PID a process that has exited and waits for its parent's wait() (its
   whole thread group gone, only the leader's entry left)? Then *STATUS is
   what wait() will report, from the exit_code field of /proc/PID/stat. */
static int
zombie_process(pid_t pid, bool *zombie, int *status, crest_error_t *err)
{
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
    if (field == 52)
      {
        *status = atoi(t);
        *zombie = true;
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
  if (!*gone && (zombie_process(p->pid, &p->zombie, &p->exit_status, &e2) < 0 || !p->zombie))
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
                            "task %d (thread %d): already being checkpointed by crest (PID %d); "
                            "one checkpoint at a time",
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

/* Seize every thread of PID, repeating until the set is stable. Returns 1
   when PID exited before any of it was seized and nothing is left of it
   (see exited_meanwhile). */
static int
seize_process(struct dctx *c, struct dproc *p, crest_error_t *err)
{
  bool gone = false;
  bool again = true;
  int stopsig = 0;
  if (zombie_process(p->pid, &p->zombie, &p->exit_status, err) < 0)
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
                closedir(d);
                return exited_meanwhile(c, p, &gone, err) ? gone : -1;
              }
            s = status_field(st, "State");
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
          }
          p->th = xrealloc(p->th, (p->nth + 1) * sizeof *p->th);
          memset(&p->th[p->nth], 0, sizeof *p->th);
          p->th[p->nth].tid = tid;
          if (pt_seize_interrupt(tid, &stopsig, err) < 0)
            {
              cleanup_free char *st = NULL;
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

static int
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
              if (k <= 0 || find_proc(c, k))
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

static int
vm_read(pid_t pid, uint64_t addr, void *buf, size_t len, crest_error_t *err)
{
  struct iovec l = { buf, len }, r = { (void *)addr, len };
  ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
  if (n != (ssize_t)len)
    return crest_error_make(err, n < 0 ? errno : EIO, "task %d: read memory at %#" PRIx64, pid,
                            addr);
  return 0;
}

struct vma
{
  uint64_t start, end, pgoff;
  int prot;
  bool shared;
  char kind[16];
  char *path;
  unsigned dev_major, dev_minor;
  uint64_t ino;
};

static int
parse_maps(pid_t pid, struct vma **out, size_t *n, crest_error_t *err)
{
  cleanup_free char *maps = NULL;
  char *save = NULL;
  struct vma *v = NULL;
  size_t nv = 0;

  if (read_proc(pid, "maps", &maps, err) < 0)
    return -1;
  for (char *l = strtok_r(maps, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
    {
      unsigned long s, e, off, ino;
      char perms[8], dev[16];
      int pos = 0;
      struct vma x;
      memset(&x, 0, sizeof x);
      if (sscanf(l, "%lx-%lx %7s %lx %15s %lu %n", &s, &e, perms, &off, dev, &ino, &pos) < 6)
        continue;
      x.start = s, x.end = e, x.pgoff = off / PAGE;
      x.prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0)
               | (perms[2] == 'x' ? PROT_EXEC : 0);
      x.shared = perms[3] == 's';
      x.ino = ino;
      if (sscanf(dev, "%x:%x", &x.dev_major, &x.dev_minor) != 2)
        x.dev_major = x.dev_minor = 0;
      const char *name = pos ? l + pos : "";
      if (*name == 0 || strncmp(name, "[anon:", 6) == 0)
        strcpy(x.kind, "anon");
      else if (strcmp(name, "[heap]") == 0)
        strcpy(x.kind, "heap");
      else if (strcmp(name, "[stack]") == 0)
        strcpy(x.kind, "stack");
      else if (strcmp(name, "[vdso]") == 0)
        strcpy(x.kind, "vdso");
      else if (strcmp(name, "[vvar]") == 0)
        strcpy(x.kind, "vvar");
      else if (strcmp(name, "[vvar_vclock]") == 0)
        strcpy(x.kind, "vvar_vclock");
      else if (strcmp(name, "[vsyscall]") == 0)
        continue;
      else if (name[0] == '/')
        {
          size_t nl = strlen(name);
          if (strncmp(name, "/SYSV", 5) == 0)
            {
              free(v);
              return crest_error_make(err, ENOTSUP,
                                      "task %d: mapping %lx-%lx of SysV shared memory %s is not "
                                      "supported",
                                      pid, s, e, name);
            }
          /* A memfd, shared anonymous memory or a deleted file: no path to
             open again, its contents are saved through map_files. */
          if ((nl > 10 && strcmp(name + nl - 10, " (deleted)") == 0)
              || strncmp(name, "/memfd:", 7) == 0)
            strcpy(x.kind, "memfile");
          else
            strcpy(x.kind, "file");
          x.path = xstrdup(name);
        }
      else
        {
          free(v);
          return crest_error_make(err, ENOTSUP,
                                  "task %d: mapping %lx-%lx of type %s is not supported", pid, s, e,
                                  name);
        }
      if (x.shared && strcmp(x.kind, "file") != 0 && strcmp(x.kind, "memfile") != 0)
        {
          free(v);
          return crest_error_make(err, ENOTSUP,
                                  "task %d: shared anonymous mapping %lx-%lx is not supported", pid,
                                  s, e);
        }
      v = xrealloc(v, (nv + 1) * sizeof *v);
      v[nv++] = x;
    }
  *out = v;
  *n = nv;
  return 0;
}

static void
free_vmas(struct vma *v, size_t n)
{
  for (size_t i = 0; i < n; i++)
    free(v[i].path);
  free(v);
}

/* shmem.c's probe runs its syscalls through this, without single-step as
   every injected call of the dump. */
struct inj_ctx
{
  pid_t tid;
  const struct user_regs_struct *regs;
  uint64_t mask;
  uint64_t gadget;
};

static int
inject_cb(void *ctx, long nr, const long a[6], long *ret, crest_error_t *err)
{
  const struct inj_ctx *ic = ctx;
  return pt_inject_nostep(ic->tid, ic->regs, ic->mask, ic->gadget, nr, a, ret, err);
}

#define SCRATCH_LEN (2 * PAGE)

/* Where the injected calls write their answers (SCRATCH_LEN bytes). When
   the main thread's stack pointer is in the process's [stack] mapping, the
   area is taken from that stack, pages below the stack pointer and its red
   zone: memory that exists already and that the ABI leaves dead (every
   signal delivered there overwrites it). Its bytes are saved here and
   written back; if crest dies meanwhile, what is left is dead bytes below
   a stack pointer, and no mapping. Otherwise (a main thread on an
   alternate or a user-made stack) a private mapping is made and removed
   again by injected calls, before the memory layout is read. */
struct scratch
{
  uint64_t addr;
  bool mapped;
  uint8_t *saved;
};

static int
scratch_get(struct dproc *p, const struct vma *vv, size_t nv, struct scratch *s, crest_error_t *err)
{
  struct dthread *m = &p->th[0];
  uint64_t sp = m->regs.rsp;
  long a[6] = { 0, SCRATCH_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0 };
  long ret;

  memset(s, 0, sizeof *s);
  for (size_t i = 0; i < nv; i++)
    if (strcmp(vv[i].kind, "stack") == 0 && sp > vv[i].start && sp <= vv[i].end)
      {
        uint64_t at = (sp - 128 - 2 * PAGE - SCRATCH_LEN) & ~(PAGE - 1);
        if (at < vv[i].start + PAGE || at > sp)
          break;
        s->saved = xmalloc(SCRATCH_LEN);
        if (vm_read(p->pid, at, s->saved, SCRATCH_LEN, err) < 0)
          {
            free(s->saved);
            s->saved = NULL;
            return -1;
          }
        s->addr = at;
        return 0;
      }
  if (pt_inject_nostep(m->tid, &m->regs, m->sigmask, p->gadget, SYS_mmap, a, &ret, err) < 0)
    return -1;
  if (ret < 0 && ret > -4096)
    return crest_error_make(err, -ret, "task %d: injected mmap", p->pid);
  s->addr = ret;
  s->mapped = true;
  return 0;
}

/* Give the scratch area back; on a failure ERR keeps the first reason. */
static int
scratch_put(struct dproc *p, struct scratch *s, crest_error_t *err)
{
  struct dthread *m = &p->th[0];
  crest_error_t e2 = NULL;
  long a[6] = { (long)s->addr, SCRATCH_LEN }, ret = 0;
  int rc = 0;

  if (s->saved)
    {
      struct iovec l = { s->saved, SCRATCH_LEN }, r = { (void *)s->addr, SCRATCH_LEN };
      if (process_vm_writev(p->pid, &l, 1, &r, 1, 0) != (ssize_t)SCRATCH_LEN)
        rc = crest_error_errno(&e2, "task %d: write back its stack at %#" PRIx64, p->pid, s->addr);
      free(s->saved);
      s->saved = NULL;
    }
  else if (s->mapped)
    {
      if (pt_inject_nostep(m->tid, &m->regs, m->sigmask, p->gadget, SYS_munmap, a, &ret, &e2) < 0)
        rc = -1;
      else if (ret != 0)
        rc = crest_error_make(&e2, -ret, "task %d: injected munmap", p->pid);
      s->mapped = false;
    }
  if (rc < 0 && !*err)
    *err = e2, e2 = NULL;
  crest_error_release(&e2);
  return rc;
}

/* Syscalls only the task can answer, injected at a syscall instruction of
   its vDSO, with a scratch area for their answers (scratch_get). */
static int
inject_state(struct dctx *c, struct dproc *p, crest_error_t *err)
{
  struct dthread *m = &p->th[0];
  long ret, scratch;
  struct scratch sc;
  cleanup_free struct vma *vv = NULL;
  size_t nv = 0;
  uint64_t vdso = 0, vdso_end = 0;
  cleanup_free uint8_t *buf = NULL;
  int rc = -1;

  if (parse_maps(p->pid, &vv, &nv, err) < 0)
    return -1;
  for (size_t i = 0; i < nv; i++)
    {
      if (strcmp(vv[i].kind, "vdso") == 0)
        vdso = vv[i].start, vdso_end = vv[i].end;
      free(vv[i].path);
    }
  if (!vdso)
    return crest_error_make(err, ENOTSUP, "task %d: no vDSO mapping", p->pid);
  buf = xmalloc(vdso_end - vdso);
  if (vm_read(p->pid, vdso, buf, vdso_end - vdso, err) < 0)
    return -1;
  for (uint64_t i = 0; i + 1 < vdso_end - vdso; i++)
    if (buf[i] == 0x0f && buf[i + 1] == 0x05)
      {
        p->gadget = vdso + i;
        break;
      }
  if (!p->gadget)
    return crest_error_make(err, ENOTSUP, "task %d: no syscall instruction in the vDSO", p->pid);

  /* Each injected call blocks every signal while it runs and puts the
     thread's own mask back (pt_inject_nostep): a signal arriving meanwhile
     stays pending, and goes into the image with the others. */
  for (size_t t = 0; t < p->nth; t++)
    if (pt_get_sigmask(p->th[t].tid, &p->th[t].sigmask, err) < 0)
      return -1;
  pt_drop_stop_signals(p->stop_sig != 0);
  if (scratch_get(p, vv, nv, &sc, err) < 0)
    goto done;
  scratch = (long)sc.addr;

#define INJ(th_, nr_, ...)                                                                         \
  do                                                                                               \
    {                                                                                              \
      long aa[6] = { __VA_ARGS__ };                                                                \
      if (pt_inject_nostep((th_)->tid, &(th_)->regs, (th_)->sigmask, p->gadget, (nr_), aa, &ret,   \
                           err)                                                                    \
          < 0)                                                                                     \
        goto out;                                                                                  \
      if (ret < 0 && ret > -4096)                                                                  \
        {                                                                                          \
          crest_error_make(err, -ret, "task %d: injected syscall %d", (th_)->tid, (int)(nr_));     \
          goto out;                                                                                \
        }                                                                                          \
    }                                                                                              \
  while (0)

  for (int s = 1; s <= 64; s++)
    {
      if (s == SIGKILL || s == SIGSTOP)
        continue;
      INJ(m, SYS_rt_sigaction, s, 0, scratch + s * 32, 8);
    }
  if (vm_read(p->pid, scratch, p->sa, sizeof p->sa, err) < 0 || dump_fault("inject", err) < 0)
    goto out;
  for (int w = 0; w < 3; w++)
    INJ(m, SYS_getitimer, w, scratch + 4096 + w * 32);
  if (vm_read(p->pid, scratch + 4096, p->itimer, sizeof p->itimer, err) < 0)
    goto out;
  /* A periodic ITIMER_REAL that fired while its SIGALRM is still pending
     (blocked, or the task held here) shows no time left: the kernel re-arms
     it only when the signal is taken off the queue. It is recorded as due
     in one interval, which is what it will be once the signal is taken. */
  for (int w = 0; w < 3; w++)
    if (!p->itimer[w][2] && !p->itimer[w][3] && (p->itimer[w][0] || p->itimer[w][1]))
      p->itimer[w][2] = p->itimer[w][0], p->itimer[w][3] = p->itimer[w][1];
  INJ(m, SYS_brk, 0);
  p->brk = ret;
  INJ(m, SYS_prctl, PR_GET_SECUREBITS);
  p->securebits = ret;
  if (prctl_dump_process(m->tid, &m->regs, m->sigmask, p->gadget, scratch + 4096 + 1024, &p->pr,
                         err)
      < 0)
    goto out;
  for (size_t t = 0; t < p->nth; t++)
    {
      struct dthread *th = &p->th[t];
      uint64_t v[3];
      /* The root's parent is outside the tree, except for a container's
         init, whose parent is the runtime's, as the restored one's is. */
      if (prctl_dump_thread(p->pid, th->tid, &th->regs, th->sigmask, p->gadget,
                            scratch + 4096 + 1024, p == &c->p[0] && !c->o->root_is_ns_init, &th->pr,
                            err)
          < 0)
        goto out;
      INJ(th, SYS_prctl, 40 /* PR_GET_TID_ADDRESS */, scratch + 4096 + 128);
      INJ(th, SYS_sigaltstack, 0, scratch + 4096 + 256);
      if (vm_read(p->pid, scratch + 4096 + 128, &th->clear_tid, 8, err) < 0
          || vm_read(p->pid, scratch + 4096 + 256, v, 24, err) < 0)
        goto out;
      th->alt_sp = v[0], th->alt_flags = (int32_t)v[1], th->alt_size = v[2];
    }
  /* A child of this process in a group stop: has this process collected
     that stop with waitpid(WUNTRACED) already, or is it still to be
     reported? Asked with WNOWAIT, which leaves it as it is. */
  for (size_t k = 1; k < c->np; k++)
    {
      struct dproc *ch = &c->p[k];
      int32_t si[8];
      if (ch->zombie || !ch->stop_sig || ch->ppid != p->pid)
        continue;
      INJ(m, SYS_waitid, P_PID, ch->ipid, scratch + 4096 + 512, WSTOPPED | WNOHANG | WNOWAIT, 0);
      if (vm_read(p->pid, scratch + 4096 + 512, si, sizeof si, err) < 0)
        goto out;
      ch->stop_reported = si[4] == 0; /* si_pid: 0 when there was nothing to report */
      crest_debug("checkpoint: task %d stopped by signal %d, its stop %s by its parent %d", ch->pid,
                  ch->stop_sig, ch->stop_reported ? "already collected" : "not yet collected",
                  p->pid);
    }
  {
    /* Which pages of its shared memory objects are in memory (shmem.c);
       the first scratch page is free again. */
    struct inj_ctx ic = { m->tid, &m->regs, m->sigmask, p->gadget };
    if (shm_probe(&c->shm, p->pid, inject_cb, &ic, scratch, PAGE, err) < 0)
      goto out;
  }
  rc = 0;
out:
  if (scratch_put(p, &sc, err) < 0)
    rc = -1;
done:
  pt_drop_stop_signals(false);
  (void)c;
  return rc;
}

/* --- files --- */

static int
fdinfo_get(pid_t pid, int fd, int64_t *pos, int *flags, crest_error_t *err)
{
  cleanup_free char *what = xasprintf("fdinfo/%d", fd);
  cleanup_free char *info = NULL;
  const char *s;
  if (read_proc(pid, what, &info, err) < 0)
    return -1;
  s = status_field(info, "pos");
  *pos = s ? strtoll(s, NULL, 10) : 0;
  s = status_field(info, "flags");
  *flags = s ? (int)strtol(s, NULL, 8) : 0;
  return 0;
}

static int
getfd(pid_t pid, int fd, crest_error_t *err)
{
  cleanup_close int pfd = syscall(SYS_pidfd_open, pid, 0);
  int r;
  if (pfd < 0)
    return crest_error_errno(err, "task %d: pidfd_open", pid);
  r = syscall(SYS_pidfd_getfd, pfd, fd, 0);
  if (r < 0)
    return crest_error_errno(err, "task %d: fd %d: pidfd_getfd", pid, fd);
  return r;
}

/* Does PATH, resolved inside the task's root as the task would resolve it,
   name the file ST describes? 1 yes, 0 no (absent there, or another file). */
static int
same_in_root(const struct dctx *c, const struct dproc *p, const char *path, const struct stat *st)
{
  crest_error_t e = NULL;
  struct stat pst;
  cleanup_close int pf = open_in_root(c, p, path, O_PATH, &e);
  if (pf < 0)
    {
      crest_error_release(&e);
      return 0;
    }
  if (fstat(pf, &pst) < 0)
    return 0;
  return pst.st_dev == st->st_dev && pst.st_ino == st->st_ino;
}

/* A directory's identity: device, inode and mount. Two mounts of one
   directory show different things below them; only all three together say
   that two paths lead to the same place. */
static int
dir_id(int fd, uint64_t id[3])
{
  struct statx sx;
  if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_INO | STATX_MNT_ID, &sx) < 0)
    return -1;
  id[0] = makedev(sx.stx_dev_major, sx.stx_dev_minor);
  id[1] = sx.stx_ino;
  id[2] = sx.stx_mask & STATX_MNT_ID ? sx.stx_mnt_id : 0;
  return 0;
}

/* The tree's top: the directory every path /proc shows crest for the tree
   (readlink of fd, cwd, exe, root; maps) is relative to. The kernel writes
   those paths as seen from the reader's root directory, or, for a task in
   another mount namespace, from the top of that namespace; never from the
   task's own root. So they are relative to crest's root when the tree shares
   crest's mount namespace, and to the container's root file system for a
   container (the restore, in the new container, sees the same). A task's
   "..", taken from the root task's root directory, climbs to exactly that
   place: it stops at crest's root and at the top of a mount namespace.
   Needed only when some task is chroot'd; a root task whose root /proc
   shows as "/" is at the top already. */
static int
open_top(struct dctx *c, crest_error_t *err)
{
  cleanup_free char *rp = xasprintf("/proc/%d/root", c->root);
  char link[3];
  ssize_t n = readlink(rp, link, sizeof link);
  int fd = open(rp, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return crest_error_errno(err, "task %d: open its root directory", c->root);
  if (n == 1 && link[0] == '/')
    {
      c->topfd = fd;
      return 0;
    }
  for (int depth = 0; depth < PATH_MAX / 2; depth++)
    {
      uint64_t here[3], up_id[3];
      int up = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
      if (up < 0 || dir_id(fd, here) < 0 || dir_id(up, up_id) < 0)
        {
          crest_error_errno(err, "task %d: the top of its root directory", c->root);
          if (up >= 0)
            close(up);
          close(fd);
          return -1;
        }
      if (memcmp(here, up_id, sizeof here) == 0)
        {
          close(up);
          c->topfd = fd;
          return 0;
        }
      close(fd);
      fd = up;
    }
  close(fd);
  return crest_error_make(err, ELOOP, "task %d: its root directory lies too deep", c->root);
}

/* Each task's root directory. The tree's top is a task's root as it is; any
   other (a chroot) is recorded as the path /proc shows, which leads to it
   from the top, and restored with chroot(2) once everything else the task
   opens by path is open. Refused, leaving the tree running: a root directory
   that was deleted, or that the path does not lead to from the top (outside
   the tree's root, or on another mount than the one the path reaches), which
   the restore could not find again; and any chroot when the restore will
   not hold CAP_SYS_CHROOT (opts->no_chroot_cap). */
static int
dump_roots(struct dctx *c, crest_error_t *err)
{
  for (size_t i = 0; i < c->np; i++)
    {
      struct dproc *p = &c->p[i];
      cleanup_free char *link = xasprintf("/proc/%d/root", p->pid);
      cleanup_close int own = -1, byp = -1;
      char root[PATH_MAX + 1];
      uint64_t want[3], got[3];
      ssize_t n;
      size_t l;
      if (p->zombie)
        continue;
      if ((n = readlink(link, root, PATH_MAX)) < 0)
        return crest_error_errno(err, "task %d: readlink its root directory", p->pid);
      root[n] = 0;
      if (strcmp(root, "/") == 0)
        continue;
      l = strlen(root);
      if (l > 10 && strcmp(root + l - 10, " (deleted)") == 0)
        return crest_error_make(err, ENOTSUP,
                                "task %d: root directory %.*s (chroot): deleted, cannot checkpoint "
                                "it",
                                p->pid, (int)(l - 10), root);
      if (root[0] != '/')
        return crest_error_make(err, ENOTSUP,
                                "task %d: root directory %s (chroot): not a path from the tree's "
                                "root, cannot checkpoint it",
                                p->pid, root);
      if ((own = open(link, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0 || dir_id(own, want) < 0)
        return crest_error_errno(err, "task %d: root directory %s (chroot): stat", p->pid, root);
      if (c->topfd < 0 && open_top(c, err) < 0)
        return crest_error_wrap(err, "task %d: root directory %s (chroot)", p->pid, root);
      {
        struct open_how how;
        memset(&how, 0, sizeof how);
        how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
        how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
        byp = syscall(SYS_openat2, c->topfd, root, &how, sizeof how);
      }
      if (byp < 0 || dir_id(byp, got) < 0 || memcmp(want, got, sizeof want) != 0)
        return crest_error_make(err, ENOTSUP,
                                "task %d: root directory %s (chroot): the path does not lead to it "
                                "from the tree's root (another directory or mount, or none), "
                                "cannot checkpoint it",
                                p->pid, root);
      if (c->o->no_chroot_cap)
        return crest_error_make(err, ENOTSUP, "task %d: root directory %s (chroot): %s", p->pid,
                                root, c->o->no_chroot_cap);
      p->root_dir = xstrdup(root);
    }
  return 0;
}

/* Container mode: find the container's terminal (c->term), if it has one:
   /dev/console inside the root's root, a character device that is also the
   root's controlling terminal. crun makes both the pty whose master it
   hands to --console-socket. No terminal is no error: a descriptor on any
   terminal is then refused (dump_fd). */
static void
find_terminal(struct dctx *c)
{
  cleanup_free char *statb = NULL;
  crest_error_t e = NULL;
  cleanup_close int fd = -1;
  struct stat st;
  long tty_nr = 0, tpgid = 0;
  char *q;

  if (read_proc(c->root, "stat", &statb, &e) < 0)
    {
      crest_error_release(&e);
      return;
    }
  q = strrchr(statb, ')');
  if (!q || sscanf(q + 2, "%*c %*d %*d %*d %ld %ld", &tty_nr, &tpgid) != 2 || tty_nr == 0)
    return;
  fd = open_in_root(c, &c->p[0], "/dev/console", O_PATH, &e);
  crest_error_release(&e);
  if (fd < 0 || fstat(fd, &st) < 0 || !S_ISCHR(st.st_mode) || st.st_rdev != (dev_t)tty_nr)
    {
      crest_debug("checkpoint: task %d: its controlling terminal %lu:%lu is not /dev/console",
                  c->root, (unsigned long)major((dev_t)tty_nr),
                  (unsigned long)minor((dev_t)tty_nr));
      return;
    }
  c->term.found = true;
  c->term.dev = st.st_dev;
  c->term.ino = st.st_ino;
  c->term.rdev = st.st_rdev;
  c->term.fg = tpgid > 0 ? (pid_t)tpgid : 0;
}

/* Is this character device a terminal, and which? 1: the container's
   terminal (c->term; its settings are read the first time), 0: no terminal,
   -1 with *what set: another terminal or a pty master, which restore could
   not give back. -2: error. */
static int
terminal_kind(struct dctx *c, struct dproc *p, int fd, const struct stat *st, const char **what,
              crest_error_t *err)
{
  cleanup_close int dup = -1;
  unsigned int real = 0;

  if (st->st_rdev == makedev(5, 2))
    {
      *what = "pty master";
      return -1;
    }
  if ((dup = getfd(p->pid, fd, err)) < 0)
    return -2;
  if (ioctl(dup, TIOCGDEV, &real) < 0)
    return 0;
  /* The pty slave itself (/dev/pts/N, /dev/console), or /dev/tty opened by
     a task whose controlling terminal it is. */
  if (!c->term.found
      || !((st->st_dev == c->term.dev && st->st_ino == c->term.ino)
           || (st->st_rdev == makedev(5, 0) && (dev_t)real == c->term.rdev)))
    {
      *what = c->o->root_is_ns_init ? "a terminal that is not the container's console"
                                    : "a terminal above descriptor 2 (process mode)";
      return -1;
    }
  if (!c->term.saved)
    {
      if (tcgetattr(dup, &c->term.tio) < 0 || ioctl(dup, TIOCGWINSZ, &c->term.ws) < 0)
        return crest_error_errno(err, "task %d: fd %d: read the terminal's settings", p->pid, fd);
      c->term.saved = true;
    }
  return 1;
}

static struct dpipe *
find_pipe(struct dctx *c, uint64_t ino)
{
  for (size_t i = 0; i < c->npp; i++)
    if (c->pp[i].ino == ino)
      return &c->pp[i];
  c->pp = xrealloc(c->pp, (c->npp + 1) * sizeof *c->pp);
  memset(&c->pp[c->npp], 0, sizeof *c->pp);
  c->pp[c->npp].ino = ino;
  c->pp[c->npp].low_fds_only = true;
  return &c->pp[c->npp++];
}

/* WROTE (> 0): a record of docs/engine.md's attribute tables went into
   the image, which makes it format 3 at least. Returns WROTE. */
static int
put_attrs(struct dctx *c, int wrote)
{
  if (wrote > 0 && c->w->format < CREST_IMAGE_FORMAT_ATTRS)
    c->w->format = CREST_IMAGE_FORMAT_ATTRS;
  return wrote;
}

/* A regular file or directory removed while open, LINK its path with
   " (deleted)" (cut off here); NF its new record (files-unlinked.c). A
   file's contents go into the image once per inode; a directory is empty
   and is made again beside its old name, whose directory must still be
   there. */
static int
dump_removed(struct dctx *c, struct dproc *p, int fd, int flags, char *link, const struct stat *st,
             struct dfile *nf, crest_error_t *err)
{
  link[strlen(link) - 10] = 0;
  nf->u.mode = st->st_mode & 07777;
  nf->u.uid = inner_id(c, &c->uidmap, st->st_uid);
  nf->u.gid = inner_id(c, &c->gidmap, st->st_gid);
  put_attrs(c, 1);
  if (S_ISDIR(st->st_mode))
    {
      cleanup_free char *parent = xstrdup(link);
      cleanup_close int pf = -1;
      *strrchr(parent, '/') = 0;
      pf = open_in_root(c, p, *parent ? parent : "/", O_PATH | O_DIRECTORY, err);
      if (pf < 0)
        return crest_error_wrap(err, "task %d: fd %d: deleted directory %s", p->pid, fd, link);
      nf->deleted_dir = true;
      return 0;
    }
  nf->unlinked = true;
  nf->u.same_as = -1;
  for (size_t k = 0; k < c->nf && nf->u.same_as < 0; k++)
    if (c->f[k].unlinked && c->f[k].dev == st->st_dev && c->f[k].ino == st->st_ino)
      nf->u.same_as = c->f[k].id;
  if (nf->u.same_as >= 0)
    return 0;
  return unlinked_dump(c->w, p->pid, fd, flags, st, nf->id, &nf->u, &nf->data, err);
}

static int
dump_fd(struct dctx *c, struct dproc *p, int fd, crest_error_t *err)
{
  char lpath[64], link[PATH_MAX + 1];
  struct stat st;
  ssize_t n;
  int64_t pos;
  int flags, id = -1, tk;
  const char *what = NULL;
  struct dfile nf;
  struct lock_set locks;

  snprintf(lpath, sizeof lpath, "/proc/%d/fd/%d", p->pid, fd);
  n = readlink(lpath, link, PATH_MAX);
  if (n < 0)
    return crest_error_errno(err, "task %d: fd %d: readlink", p->pid, fd);
  link[n] = 0;
  if (stat(lpath, &st) < 0)
    return crest_error_errno(err, "task %d: fd %d (%s): stat", p->pid, fd, link);
  if (fdinfo_get(p->pid, fd, &pos, &flags, err) < 0
      || files_check_fd(p->pid, fd, link, &st, &locks, err) < 0)
    return -1;

  /* Same open file description as one seen before? */
  for (size_t i = 0; i < c->nf; i++)
    {
      struct dfile *f = &c->f[i];
      if (f->dev == st.st_dev && f->ino == st.st_ino && f->pos == pos
          && (f->flags & ~O_CLOEXEC) == (flags & ~O_CLOEXEC)
          && syscall(SYS_kcmp, f->pid, p->pid, KCMP_FILE, f->fd, fd) == 0)
        {
          id = f->id;
          break;
        }
    }
  if (id >= 0 && fd > 2 && strcmp(c->f[id].type, "inherited") == 0)
    return crest_error_make(err, ENOTSUP,
                            "task %d: fd %d (%s): shares its open file with the stdio of task %d, "
                            "which leads outside the checkpointed tree, cannot checkpoint it",
                            p->pid, fd, link, c->f[id].pid);
  if (id < 0)
    {
      memset(&nf, 0, sizeof nf);
      nf.id = (int)c->nf;
      nf.flags = flags & ~O_CLOEXEC;
      nf.pos = pos;
      nf.dev = st.st_dev;
      nf.ino = st.st_ino;
      nf.pid = p->pid;
      nf.fd = fd;
      if (fd <= 2 && (S_ISREG(st.st_mode) || S_ISCHR(st.st_mode)) && link[0] == '/'
          && st.st_nlink > 0 && strncmp(link, "/memfd:", 7) != 0 && !same_in_root(c, p, link, &st))
        /* Stdio that is a file or device outside the task's root (a log
           file of the caller, the host's /dev/null): the restorer's own
           stdio takes its place, as crun's inherited descriptors. */
        nf.type = "inherited";
      else if (S_ISREG(st.st_mode))
        {
          size_t ll = strlen(link);
          nf.type = "reg";
          if (strncmp(link, "/memfd:", 7) == 0)
            {
              /* One object with its mappings (shmem.c). */
              const struct shm_obj *o;
              if (shm_save_fd(&c->shm, c->w, p->pid, fd, &st, link, &o, err) < 0)
                return -1;
              nf.type = "memfd";
              nf.data = xstrdup(o->data);
              nf.seals = o->seals;
            }
          else if (st.st_nlink == 0 && ll > 10 && strcmp(link + ll - 10, " (deleted)") == 0
                   && dump_removed(c, p, fd, flags, link, &st, &nf, err) < 0)
            return -1;
        }
      else if (S_ISDIR(st.st_mode))
        {
          size_t ll = strlen(link);
          nf.type = "dir";
          if (st.st_nlink == 0 && ll > 10 && strcmp(link + ll - 10, " (deleted)") == 0
              && dump_removed(c, p, fd, flags, link, &st, &nf, err) < 0)
            return -1;
        }
      else if (S_ISLNK(st.st_mode) && (flags & O_PATH))
        nf.type = "link"; /* O_PATH | O_NOFOLLOW on a symlink: opened again the same way */
      else if (S_ISCHR(st.st_mode)
               && (strcmp(link, "/dev/null") == 0 || strcmp(link, "/dev/zero") == 0
                   || strcmp(link, "/dev/urandom") == 0 || strcmp(link, "/dev/random") == 0
                   || strcmp(link, "/dev/full") == 0))
        nf.type = "dev";
      else if (S_ISCHR(st.st_mode) && (tk = terminal_kind(c, p, fd, &st, &what, err)) != 0)
        {
          if (tk == -2)
            return -1;
          if (tk == 1)
            /* On restore, the new container's terminal takes its place. */
            nf.type = "tty";
          else if (fd <= 2 && !c->o->root_is_ns_init)
            nf.type = "inherited"; /* process mode: the caller's terminal, as before */
          else
            return crest_error_make(err, ENOTSUP, "task %d: fd %d (%s): %s, cannot checkpoint it",
                                    p->pid, fd, link, what);
        }
      else if (S_ISFIFO(st.st_mode) && strncmp(link, "pipe:[", 6) == 0)
        {
          struct dpipe *pp = find_pipe(c, st.st_ino);
          nf.type = "pipe";
          nf.ino_pipe = st.st_ino;
          nf.pipe_read = (flags & O_ACCMODE) == O_RDONLY;
          if (nf.pipe_read && !pp->has_r)
            pp->rpid = p->pid, pp->rfd = fd;
          if (nf.pipe_read)
            pp->has_r = true;
          else
            pp->has_w = true;
        }
      else if (S_ISFIFO(st.st_mode) && link[0] == '/')
        {
          /* A named FIFO: reopened by path; its bytes are kept like a pipe's. */
          struct dpipe *pp = find_pipe(c, st.st_ino);
          nf.type = "fifo";
          nf.ino_pipe = st.st_ino;
          if (!pp->path)
            pp->path = xstrdup(link), pp->opid = p->pid, pp->ofd = fd;
          if ((flags & O_ACCMODE) != O_WRONLY && !pp->has_r)
            pp->has_r = true, pp->rpid = p->pid, pp->rfd = fd;
        }
      else if (fd <= 2 && S_ISCHR(st.st_mode))
        nf.type = "inherited"; /* a terminal: the restorer's own stdio */
      else
        {
          const char *t = S_ISSOCK(st.st_mode)   ? "socket"
                          : S_ISFIFO(st.st_mode) ? "named FIFO"
                                                 : "unsupported type";
          return crest_error_make(err, ENOTSUP, "task %d: fd %d (%s): %s, cannot checkpoint it",
                                  p->pid, fd, link, t);
        }
      if ((strcmp(nf.type, "dir") == 0 && !nf.deleted_dir) || strcmp(nf.type, "fifo") == 0
          || strcmp(nf.type, "link") == 0 || (strcmp(nf.type, "reg") == 0 && !nf.unlinked))
        {
          /* Restore opens it again by this path, inside the container: it
             must name this very file there. */
          struct stat pst;
          cleanup_close int pf
              = open_in_root(c, p, link, O_PATH | (strcmp(nf.type, "link") ? 0 : O_NOFOLLOW), err);
          if (pf < 0)
            return crest_error_wrap(err, "task %d: fd %d (%s)", p->pid, fd, link);
          if (fstat(pf, &pst) < 0)
            return crest_error_errno(err, "task %d: fd %d (%s): stat by path", p->pid, fd, link);
          if (pst.st_dev != st.st_dev || pst.st_ino != st.st_ino)
            return crest_error_make(
                err, ENOTSUP,
                "task %d: fd %d (%s): the path now names another file, cannot checkpoint it",
                p->pid, fd, link);
        }
      nf.path = xstrdup(link);
      if (locks.n && strcmp(nf.type, "reg") && strcmp(nf.type, "dir"))
        return crest_error_make(err, ENOTSUP,
                                "task %d: fd %d (%s): a lock on a descriptor that leads outside "
                                "the tree is not restored: cannot checkpoint it",
                                p->pid, fd, link);
      nf.locks = locks;
      c->f = xrealloc(c->f, (c->nf + 1) * sizeof *c->f);
      c->f[c->nf++] = nf;
      id = nf.id;
    }
  if (strcmp(c->f[id].type, "pipe") == 0 && fd > 2)
    find_pipe(c, c->f[id].ino_pipe)->low_fds_only = false;
  c->fds = xrealloc(c->fds, (c->nfds + 1) * sizeof *c->fds);
  c->fds[c->nfds].pid = p->pid;
  c->fds[c->nfds].fd = fd;
  c->fds[c->nfds].cloexec = (flags & O_CLOEXEC) != 0;
  c->fds[c->nfds].file = id;
  memset(&c->fds[c->nfds].locks, 0, sizeof c->fds[c->nfds].locks);
  {
    /* POSIX locks show on every descriptor of the open file description
       they were taken through: kept once per process. */
    bool seen = false;
    for (size_t k = 0; k < c->nfds; k++)
      seen |= c->fds[k].pid == p->pid && c->fds[k].file == id && c->fds[k].locks.n;
    for (size_t k = 0; k < locks.n && !seen; k++)
      if (locks.l[k].kind == LOCK_KIND_POSIX)
        c->fds[c->nfds].locks.l[c->fds[c->nfds].locks.n++] = locks.l[k];
  }
  c->nfds++;
  return 0;
}

static int
cmp_int(const void *a, const void *b)
{
  return *(const int *)a - *(const int *)b;
}

static int
dump_fds(struct dctx *c, struct dproc *p, crest_error_t *err)
{
  cleanup_free char *path = xasprintf("/proc/%d/fd", p->pid);
  cleanup_free int *fds = NULL;
  size_t n = 0;
  DIR *d = opendir(path);
  struct dirent *de;
  if (!d)
    return crest_error_errno(err, "task %d: list fds", p->pid);
  while ((de = readdir(d)))
    if (de->d_name[0] != '.')
      {
        fds = xrealloc(fds, (n + 1) * sizeof *fds);
        fds[n++] = atoi(de->d_name);
      }
  closedir(d);
  qsort(fds, n, sizeof *fds, cmp_int);
  for (size_t i = 0; i < n; i++)
    if (dump_fd(c, p, fds[i], err) < 0)
      return -1;
  return 0;
}

/* Pipes: both ends must be in the tree (or be inherited stdio); their
   unread bytes are peeked with tee(), which leaves them in place. */
static int
dump_pipes(struct dctx *c, crest_error_t *err)
{
  for (size_t i = 0; i < c->npp; i++)
    {
      struct dpipe *pp = &c->pp[i];
      cleanup_close int rd = -1;
      int tmp[2];
      ssize_t n;
      if (pp->path)
        {
          /* A reading descriptor of the tree is peeked like a pipe's. With
             only writers, the FIFO is opened anew through the task's own
             descriptor (its path is the container's, not the host's): a
             reader and writer at once never blocks and leaves the FIFO as it
             was. */
          if (!pp->has_r)
            {
              cleanup_free char *lp = xasprintf("/proc/%d/fd/%d", pp->opid, pp->ofd);
              rd = open(lp, O_RDWR | O_NONBLOCK | O_CLOEXEC);
              if (rd < 0)
                return crest_error_errno(err,
                                         "task %d: fd %d (named FIFO %s): open to read its bytes",
                                         pp->opid, pp->ofd, pp->path);
              pp->rpid = pp->opid, pp->rfd = pp->ofd;
            }
        }
      else if (!pp->has_r || !pp->has_w)
        {
          if (pp->low_fds_only)
            {
              for (size_t k = 0; k < c->nf; k++)
                if (strcmp(c->f[k].type, "pipe") == 0 && c->f[k].ino_pipe == pp->ino)
                  c->f[k].type = "inherited";
              pp->ino = 0;
              continue;
            }
          for (size_t k = 0; k < c->nfds && !pp->no_r && !pp->no_w; k++)
            if (strcmp(c->f[c->fds[k].file].type, "pipe") == 0
                && c->f[c->fds[k].file].ino_pipe == pp->ino)
              {
                cleanup_close int d = getfd(c->fds[k].pid, c->fds[k].fd, err);
                if (d < 0)
                  return -1;
                if (!pipe_other_end_closed(d, pp->has_r))
                  return crest_error_make(err, ENOTSUP,
                                          "task %d: fd %d (pipe:[%" PRIu64
                                          "]): its other end is open in a process outside the "
                                          "checkpointed tree",
                                          c->fds[k].pid, c->fds[k].fd, pp->ino);
                /* Closed everywhere: restore closes it again. Bytes left
                   without a reader are peeked through a read end opened
                   anew from the writer's descriptor. */
                pp->no_r = !pp->has_r, pp->no_w = !pp->has_w;
                if (pp->no_r)
                  {
                    cleanup_free char *lp
                        = xasprintf("/proc/%d/fd/%d", c->fds[k].pid, c->fds[k].fd);
                    rd = open(lp, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
                    if (rd < 0)
                      return crest_error_errno(err, "task %d: fd %d: open the pipe to read it",
                                               c->fds[k].pid, c->fds[k].fd);
                    pp->rpid = c->fds[k].pid, pp->rfd = c->fds[k].fd;
                  }
              }
        }
      if (rd < 0)
        rd = getfd(pp->rpid, pp->rfd, err);
      if (rd < 0)
        return -1;
      pp->size = fcntl(rd, F_GETPIPE_SZ);
      if (pp->size < 0)
        return crest_error_errno(err, "task %d: fd %d: F_GETPIPE_SZ", pp->rpid, pp->rfd);
      if (pipe2(tmp, O_CLOEXEC) < 0)
        return crest_error_errno(err, "pipe");
      if (fcntl(tmp[1], F_SETPIPE_SZ, pp->size) < 0)
        {
          close(tmp[0]), close(tmp[1]);
          return crest_error_errno(err, "task %d: fd %d: size a pipe to peek %d bytes", pp->rpid,
                                   pp->rfd, pp->size);
        }
      n = tee(rd, tmp[1], pp->size, SPLICE_F_NONBLOCK);
      if (n < 0 && errno == EAGAIN)
        n = 0;
      if (n < 0)
        {
          close(tmp[0]), close(tmp[1]);
          return crest_error_errno(err, "task %d: fd %d: peek pipe with tee", pp->rpid, pp->rfd);
        }
      pp->len = n;
      if (n > 0)
        {
          cleanup_free char *buf = xmalloc(n);
          struct img_out o;
          if (read_all(tmp[0], buf, n) < 0)
            {
              close(tmp[0]), close(tmp[1]);
              return crest_error_errno(err, "read peeked pipe bytes");
            }
          pp->data = xasprintf("pipe-%" PRIu64 ".img", pp->ino);
          if (img_out_open(c->w, pp->data, &o, err) < 0 || img_out_write(&o, buf, n, err) < 0
              || img_out_close(&o, err) < 0)
            {
              close(tmp[0]), close(tmp[1]);
              return -1;
            }
        }
      close(tmp[0]), close(tmp[1]);
    }
  return 0;
}

/* --- memory --- */

struct run
{
  uint64_t vaddr, len, off;
};

static int
dump_memory(struct dctx *c, struct dproc *p, struct vma *v, size_t nv, yajl_gen g,
            crest_error_t *err)
{
  cleanup_free char *name = xasprintf("pages-%d.img", p->ipid);
  cleanup_free char *pmpath = xasprintf("/proc/%d/pagemap", p->pid);
  cleanup_free char *mempath = xasprintf("/proc/%d/mem", p->pid);
  cleanup_close int pm = open(pmpath, O_RDONLY | O_CLOEXEC);
  cleanup_close int mem = -1;
  cleanup_free uint64_t *ent = NULL;
  cleanup_free char *buf = NULL;
  struct run *runs = NULL;
  size_t nruns = 0, nbatch = 0;
  struct iovec riov[IOV_MAX];
  uint64_t off = 0, bfill = 0;
  struct img_out o;
  int rc = -1;

  if (pm < 0)
    return crest_error_errno(err, "task %d: open pagemap", p->pid);
  if (img_out_open(c->w, name, &o, err) < 0)
    return -1;
  buf = xmalloc(BATCH);

  /* Flush the batch: one process_vm_readv for up to IOV_MAX runs. */
#define FLUSH()                                                                                    \
  do                                                                                               \
    {                                                                                              \
      if (bfill)                                                                                   \
        {                                                                                          \
          struct iovec l = { buf, bfill };                                                         \
          ssize_t got = process_vm_readv(p->pid, &l, 1, riov, nbatch, 0);                          \
          c->readv_calls++;                                                                        \
          if (got != (ssize_t)bfill)                                                               \
            {                                                                                      \
              crest_error_make(err, got < 0 ? errno : EIO,                                         \
                               "task %d: copy memory (process_vm_readv)", p->pid);                 \
              goto out;                                                                            \
            }                                                                                      \
          if (img_out_write(&o, buf, bfill, err) < 0)                                              \
            goto out;                                                                              \
          bfill = 0, nbatch = 0;                                                                   \
        }                                                                                          \
    }                                                                                              \
  while (0)

  for (size_t i = 0; i < nv; i++)
    {
      struct vma *m = &v[i];
      uint64_t npages = (m->end - m->start) / PAGE;
      bool file = strcmp(m->kind, "file") == 0 || strcmp(m->kind, "memfile") == 0;
      if (m->shared || strcmp(m->kind, "vdso") == 0 || strncmp(m->kind, "vvar", 4) == 0)
        continue;
      ent = xrealloc(ent, npages * 8);
      if (pread(pm, ent, npages * 8, m->start / PAGE * 8) != (ssize_t)(npages * 8))
        {
          crest_error_errno(err, "task %d: read pagemap of %" PRIx64 "-%" PRIx64, p->pid, m->start,
                            m->end);
          goto out;
        }
      for (uint64_t k = 0; k < npages;)
        {
          /* present or swapped; in a file mapping only the private
             (copied-on-write) pages, the rest comes from the file. */
#define WANT(e) ((((e) >> 63) & 1 && (!file || !(((e) >> 61) & 1))) || (((e) >> 62) & 1))
          uint64_t j;
          if (!WANT(ent[k]))
            {
              k++;
              continue;
            }
          for (j = k; j < npages && WANT(ent[j]); j++)
            ;
          uint64_t addr = m->start + k * PAGE, len = (j - k) * PAGE;
          if (nruns && runs[nruns - 1].vaddr + runs[nruns - 1].len == addr)
            runs[nruns - 1].len += len;
          else
            {
              runs = xrealloc(runs, (nruns + 1) * sizeof *runs);
              runs[nruns].vaddr = addr, runs[nruns].len = len, runs[nruns].off = off;
              nruns++;
            }
          off += len;
          c->pages_bytes += len;
          if (!(m->prot & PROT_READ))
            {
              /* process_vm_readv honours protections; /proc/PID/mem does not. */
              FLUSH();
              if (mem < 0 && (mem = open(mempath, O_RDONLY | O_CLOEXEC)) < 0)
                {
                  crest_error_errno(err, "task %d: open mem", p->pid);
                  goto out;
                }
              for (uint64_t done = 0; done < len;)
                {
                  uint64_t chunk = len - done < BATCH ? len - done : BATCH;
                  if (pread(mem, buf, chunk, addr + done) != (ssize_t)chunk)
                    {
                      crest_error_errno(err, "task %d: read memory at %#" PRIx64, p->pid,
                                        addr + done);
                      goto out;
                    }
                  if (img_out_write(&o, buf, chunk, err) < 0)
                    goto out;
                  done += chunk;
                }
            }
          else
            while (len)
              {
                uint64_t room = BATCH - bfill, chunk = len < room ? len : room;
                riov[nbatch].iov_base = (void *)addr;
                riov[nbatch].iov_len = chunk;
                nbatch++, bfill += chunk, addr += chunk, len -= chunk;
                if (bfill == BATCH || nbatch == IOV_MAX)
                  {
                    FLUSH();
                    maybe_progress(c, "copying memory");
                    if (interrupted(err) < 0)
                      goto out;
                  }
              }
          k = j;
        }
    }
  FLUSH();
#undef FLUSH
  if (img_out_close(&o, err) < 0)
    goto out;
  jput_str(g, "pages_file", name);
  jput_key(g, "pages");
  yajl_gen_array_open(g);
  for (size_t i = 0; i < nruns; i++)
    {
      yajl_gen_map_open(g);
      jput_u64(g, "vaddr", runs[i].vaddr);
      jput_u64(g, "len", runs[i].len);
      jput_u64(g, "off", runs[i].off);
      yajl_gen_map_close(g);
    }
  yajl_gen_array_close(g);
  rc = 0;
out:
  if (o.fd >= 0 && rc < 0)
    {
      close(o.fd);
      free(o.name);
    }
  free(runs);
  return rc;
}

/* A mapping with no path to open again (memfd, shared anonymous memory, a
   deleted file): its object is saved once (shmem.c); restore maps a memfd
   holding the same bytes, shared as the object was. */
static int
dump_memfile(struct dctx *c, struct dproc *p, struct vma *m, yajl_gen g, crest_error_t *err)
{
  const struct shm_obj *o;
  if (shm_save(&c->shm, c->w, p->pid, m->start, m->end, &o, err) < 0)
    return -1;
  jput_str(g, "path", m->path);
  jput_u64(g, "pgoff", m->pgoff);
  jput_u64(g, "file_size", o->size);
  jput_str(g, "data", o->data);
  return 0;
}

/* --- the per-process record --- */

static int
parse_ids(const char *s, long out[4])
{
  return s && sscanf(s, "%ld %ld %ld %ld", &out[0], &out[1], &out[2], &out[3]) == 4 ? 0 : -1;
}

/* Write KEY: the N siginfos (128 bytes each, as PTRACE_PEEKSIGINFO gives
   them) in SI. Is a SIGCONT among them? */
static bool
put_pending(yajl_gen g, const char *key, const uint8_t *si, long n)
{
  bool cont = false;
  jput_key(g, key);
  yajl_gen_array_open(g);
  for (long i = 0; i < n; i++)
    {
      int32_t sig;
      memcpy(&sig, si + 128 * i, sizeof sig);
      cont |= sig == SIGCONT;
      jput_hex(g, NULL, si + 128 * i, 128);
    }
  yajl_gen_array_close(g);
  return cont;
}

static int
dump_process(struct dctx *c, struct dproc *p, yajl_gen g, crest_error_t *err)
{
  cleanup_free char *statb = NULL, *status = NULL, *auxv = NULL, *pers = NULL, *oom = NULL,
                    *comm = NULL;
  char exe[PATH_MAX + 1], cwd[PATH_MAX + 1];
  unsigned long long f[64] = { 0 };
  struct vma *v = NULL;
  struct vmflags_ent *vf = NULL;
  size_t nv = 0, auxlen = 0, nvf = 0;
  const char *s;
  long ids[4];
  char *q;
  int rc = -1;
  bool cont_pending = false;

  if (p->zombie)
    {
      cleanup_free char *name = NULL;
      if (read_proc(p->pid, "comm", &name, err) < 0)
        return -1;
      name[strcspn(name, "\n")] = 0;
      yajl_gen_map_open(g);
      jput_int(g, "pid", p->ipid);
      jput_int(g, "ppid", find_proc(c, p->ppid) ? find_proc(c, p->ppid)->ipid : 0);
      jput_int(g, "pgid", p->ipgid);
      jput_int(g, "sid", p->isid);
      jput_bool(g, "zombie", true);
      jput_int(g, "exit_status", p->exit_status);
      jput_str(g, "comm", name);
      yajl_gen_map_close(g);
      return 0;
    }
  if (read_proc(p->pid, "stat", &statb, err) < 0 || read_proc(p->pid, "status", &status, err) < 0)
    return -1;
  q = strrchr(statb, ')');
  if (!q)
    return crest_error_make(err, EINVAL, "task %d: cannot parse /proc stat", p->pid);
  {
    /* Fields from 3 (state) on; f[n] is field n. */
    char *save = NULL, *t;
    int n = 3;
    for (t = strtok_r(q + 2, " ", &save); t && n < 64; t = strtok_r(NULL, " ", &save), n++)
      f[n] = n == 3 ? 0 : strtoull(t, NULL, 10);
  }
  s = status_field(status, "Seccomp");
  if (s && atoi(s) != 0)
    return crest_error_make(err, ENOTSUP, "task %d: seccomp filters are not supported yet", p->pid);
  if (timers_check(p->pid, err) < 0)
    return -1;
  {
    cleanup_free char *path = NULL;
    ssize_t n;
    path = xasprintf("/proc/%d/exe", p->pid);
    if ((n = readlink(path, exe, PATH_MAX)) < 0)
      return crest_error_errno(err, "task %d: readlink exe", p->pid);
    exe[n] = 0;
    free(path);
    path = xasprintf("/proc/%d/cwd", p->pid);
    if ((n = readlink(path, cwd, PATH_MAX)) < 0)
      return crest_error_errno(err, "task %d: readlink cwd", p->pid);
    cwd[n] = 0;
    /* Restore opens both again by path inside the tree's root, before a
       chroot'd task's chroot (dump_roots checked its root directory). */
    {
      const char *what[2] = { "exe", "cwd" }, *val[2] = { exe, cwd };
      for (int k = 0; k < 2; k++)
        {
          struct stat want, got;
          cleanup_free char *link = xasprintf("/proc/%d/%s", p->pid, what[k]);
          cleanup_close int fd = -1;
          size_t l = strlen(val[k]);
          if (l > 10 && strcmp(val[k] + l - 10, " (deleted)") == 0)
            return crest_error_make(err, ENOTSUP, "task %d: %s %s: deleted, cannot checkpoint it",
                                    p->pid, what[k], val[k]);
          if (stat(link, &want) < 0)
            return crest_error_errno(err, "task %d: stat its %s", p->pid, what[k]);
          if ((fd = open_in_root(c, p, val[k], O_PATH, err)) < 0)
            return crest_error_wrap(err, "task %d: %s %s", p->pid, what[k], val[k]);
          if (fstat(fd, &got) < 0)
            return crest_error_errno(err, "task %d: %s %s: stat by path", p->pid, what[k], val[k]);
          if (got.st_dev != want.st_dev || got.st_ino != want.st_ino)
            return crest_error_make(err, ENOTSUP,
                                    "task %d: %s %s: the path now names another file, cannot "
                                    "checkpoint it",
                                    p->pid, what[k], val[k]);
        }
    }
  }
  if (read_proc(p->pid, "personality", &pers, err) < 0
      || read_proc(p->pid, "oom_score_adj", &oom, err) < 0)
    return -1;
  {
    cleanup_free char *path = xasprintf("/proc/%d/auxv", p->pid);
    if (read_file(path, &auxv, &auxlen, 0, err) < 0)
      return -1;
  }

  yajl_gen_map_open(g);
  jput_int(g, "pid", p->ipid);
  jput_int(g, "ppid", p == &c->p[0] ? 0 : find_proc(c, p->ppid) ? find_proc(c, p->ppid)->ipid : 0);
  jput_int(g, "pgid", p->ipgid);
  jput_int(g, "sid", p->isid);
  jput_str(g, "exe", exe);
  jput_str(g, "cwd", cwd);
  if (p->root_dir)
    jput_str(g, "root_dir", p->root_dir);
  s = status_field(status, "Umask");
  jput_int(g, "umask", s ? strtol(s, NULL, 8) : 022);
  jput_u64(g, "personality", strtoull(pers, NULL, 16));
  jput_int(g, "oom_score_adj", atoi(oom));
  put_attrs(c, prctl_put_process(g, &p->pr));
  jput_key(g, "creds");
  yajl_gen_map_open(g);
  if (parse_ids(status_field(status, "Uid"), ids) < 0)
    goto bad_status;
  jput_key(g, "uids");
  yajl_gen_array_open(g);
  for (int i = 0; i < 4; i++)
    yajl_gen_integer(g, inner_id(c, &c->uidmap, ids[i]));
  yajl_gen_array_close(g);
  if (parse_ids(status_field(status, "Gid"), ids) < 0)
    goto bad_status;
  jput_key(g, "gids");
  yajl_gen_array_open(g);
  for (int i = 0; i < 4; i++)
    yajl_gen_integer(g, inner_id(c, &c->gidmap, ids[i]));
  yajl_gen_array_close(g);
  jput_key(g, "groups");
  yajl_gen_array_open(g);
  s = status_field(status, "Groups");
  while (s && *s && *s != '\n')
    {
      char *e;
      long gid = strtol(s, &e, 10);
      if (e == s)
        break;
      yajl_gen_integer(g, inner_id(c, &c->gidmap, gid));
      s = e;
      while (*s == ' ')
        s++;
    }
  yajl_gen_array_close(g);
  {
    static const char *caps[] = { "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb" };
    static const char *keys[] = { "cap_inh", "cap_prm", "cap_eff", "cap_bnd", "cap_amb" };
    for (int i = 0; i < 5; i++)
      {
        s = status_field(status, caps[i]);
        if (!s)
          goto bad_status;
        jput_u64(g, keys[i], strtoull(s, NULL, 16));
      }
  }
  jput_int(g, "securebits", p->securebits);
  s = status_field(status, "NoNewPrivs");
  jput_bool(g, "no_new_privs", s && atoi(s));
  yajl_gen_map_close(g);

  jput_key(g, "rlimits");
  yajl_gen_array_open(g);
  for (int r = 0; r < RLIM_NLIMITS; r++)
    {
      struct rlimit rl;
      if (prlimit(p->pid, r, NULL, &rl) < 0)
        {
          crest_error_errno(err, "task %d: prlimit %d", p->pid, r);
          goto out;
        }
      yajl_gen_map_open(g);
      jput_u64(g, "cur", rl.rlim_cur);
      jput_u64(g, "max", rl.rlim_max);
      yajl_gen_map_close(g);
    }
  yajl_gen_array_close(g);

  jput_key(g, "mm");
  yajl_gen_map_open(g);
  jput_u64(g, "start_code", f[26]);
  jput_u64(g, "end_code", f[27]);
  jput_u64(g, "start_stack", f[28]);
  jput_u64(g, "start_data", f[45]);
  jput_u64(g, "end_data", f[46]);
  jput_u64(g, "start_brk", f[47]);
  jput_u64(g, "brk", p->brk);
  jput_u64(g, "arg_start", f[48]);
  jput_u64(g, "arg_end", f[49]);
  jput_u64(g, "env_start", f[50]);
  jput_u64(g, "env_end", f[51]);
  jput_hex(g, "auxv", auxv, auxlen);
  yajl_gen_map_close(g);

  jput_key(g, "sigactions");
  yajl_gen_array_open(g);
  for (int sg = 1; sg <= 64; sg++)
    {
      struct ksigaction *a = &p->sa[sg];
      if (sg == SIGKILL || sg == SIGSTOP || (a->handler == 0 && a->flags == 0 && a->mask == 0))
        continue;
      yajl_gen_map_open(g);
      jput_int(g, "sig", sg);
      jput_u64(g, "handler", a->handler);
      jput_u64(g, "flags", a->flags);
      jput_u64(g, "restorer", a->restorer);
      jput_u64(g, "mask", a->mask);
      yajl_gen_map_close(g);
    }
  yajl_gen_array_close(g);
  jput_key(g, "itimers");
  yajl_gen_array_open(g);
  for (int w = 0; w < 3; w++)
    {
      yajl_gen_map_open(g);
      jput_u64(g, "interval_sec", p->itimer[w][0]);
      jput_u64(g, "interval_usec", p->itimer[w][1]);
      jput_u64(g, "value_sec", p->itimer[w][2]);
      jput_u64(g, "value_usec", p->itimer[w][3]);
      yajl_gen_map_close(g);
    }
  yajl_gen_array_close(g);
  {
    /* Process-wide pending signals. */
    struct
    {
      uint64_t off;
      uint32_t flags;
      int32_t nr;
    } arg = { 0, PTRACE_PEEKSIGINFO_SHARED, 64 };
    uint8_t si[64 * 128];
    long n = ptrace(PTRACE_PEEKSIGINFO, p->pid, &arg, si);
    if (n < 0)
      {
        crest_error_errno(err, "task %d: read shared pending signals", p->pid);
        goto out;
      }
    cont_pending |= put_pending(g, "shared_pending", si, n);
  }

  if (parse_maps(p->pid, &v, &nv, err) < 0 || vmflags_load(p->pid, &vf, &nvf, err) < 0)
    goto out;
  jput_key(g, "vmas");
  yajl_gen_array_open(g);
  for (size_t i = 0; i < nv; i++)
    {
      yajl_gen_map_open(g);
      jput_u64(g, "start", v[i].start);
      jput_u64(g, "end", v[i].end);
      jput_int(g, "prot", v[i].prot);
      jput_bool(g, "shared", v[i].shared);
      jput_str(g, "kind", v[i].kind);
      if (put_attrs(c, vmflags_put(g, vf, nvf, p->pid, v[i].start, v[i].end, v[i].kind, err)) < 0)
        goto out;
      if (v[i].path && strcmp(v[i].kind, "memfile") == 0)
        {
          if (dump_memfile(c, p, &v[i], g, err) < 0)
            goto out;
        }
      else if (v[i].path)
        {
          struct stat st;
          cleanup_close int mf = open_in_root(c, p, v[i].path, O_PATH, err);
          if (mf < 0)
            {
              crest_error_wrap(err, "task %d: mapping %" PRIx64 "-%" PRIx64 " of %s", p->pid,
                               v[i].start, v[i].end, v[i].path);
              goto out;
            }
          if (fstat(mf, &st) < 0)
            {
              crest_error_errno(err, "task %d: mapped file %s: stat", p->pid, v[i].path);
              goto out;
            }
          if (!S_ISREG(st.st_mode))
            {
              crest_error_make(err, ENOTSUP,
                               "task %d: mapping %" PRIx64 "-%" PRIx64 " of %s: not a regular file",
                               p->pid, v[i].start, v[i].end, v[i].path);
              goto out;
            }
          /* An overlay file system shows the layer's device and inode in
             maps and its own in stat: a difference is only worth a note. */
          if (st.st_ino != v[i].ino || major(st.st_dev) != v[i].dev_major
              || minor(st.st_dev) != v[i].dev_minor)
            crest_debug("task %d: mapping %" PRIx64 "-%" PRIx64 ": %s is inode %u:%u/%" PRIu64
                        " in maps, %u:%u/%" PRIu64 " by its path",
                        p->pid, v[i].start, v[i].end, v[i].path, v[i].dev_major, v[i].dev_minor,
                        v[i].ino, major(st.st_dev), minor(st.st_dev), (uint64_t)st.st_ino);
          jput_str(g, "path", v[i].path);
          jput_u64(g, "pgoff", v[i].pgoff);
          jput_u64(g, "file_size", st.st_size);
          jput_u64(g, "file_mtime", st.st_mtime);
        }
      yajl_gen_map_close(g);
    }
  yajl_gen_array_close(g);
  if (dump_memory(c, p, v, nv, g, err) < 0)
    goto out;

  jput_key(g, "fds");
  yajl_gen_array_open(g);
  for (size_t i = 0; i < c->nfds; i++)
    if (c->fds[i].pid == p->pid)
      {
        yajl_gen_map_open(g);
        jput_int(g, "fd", c->fds[i].fd);
        jput_bool(g, "cloexec", c->fds[i].cloexec);
        jput_int(g, "file", c->fds[i].file);
        put_attrs(c, locks_put(g, &c->fds[i].locks, 1u << LOCK_KIND_POSIX));
        yajl_gen_map_close(g);
      }
  yajl_gen_array_close(g);

  jput_key(g, "threads");
  yajl_gen_array_open(g);
  for (size_t t = 0; t < p->nth; t++)
    {
      struct dthread *th = &p->th[t];
      uint64_t mask;
      struct rseq_conf rc_;
      uint64_t head = 0;
      size_t hlen = 0;
      struct crest_sched_attr sa;
      struct
      {
        uint64_t off;
        uint32_t flags;
        int32_t nr;
      } arg = { 0, 0, 64 };
      uint8_t si[64 * 128];
      long n;
      cleanup_free char *what = xasprintf("task/%d/comm", th->tid);
      cleanup_free char *tcomm = NULL;

      yajl_gen_map_open(g);
      jput_int(g, "tid", th->itid);
      jput_hex(g, "regs", &th->regs, sizeof th->regs);
      jput_hex(g, "xstate", th->xstate, th->xlen);
      mask = th->sigmask; /* read by inject_state */
      jput_u64(g, "sigmask", mask);
      memset(&rc_, 0, sizeof rc_);
      if (ptrace(PTRACE_GET_RSEQ_CONFIGURATION, th->tid, sizeof rc_, &rc_) < 0)
        {
          crest_error_errno(err, "task %d: read rseq configuration", th->tid);
          goto out;
        }
      jput_u64(g, "rseq", rc_.rseq_abi_pointer);
      jput_int(g, "rseq_size", rc_.rseq_abi_size);
      jput_u64(g, "rseq_sig", rc_.signature);
      if (syscall(SYS_get_robust_list, th->tid, &head, &hlen) < 0)
        {
          crest_error_errno(err, "task %d: get_robust_list", th->tid);
          goto out;
        }
      jput_u64(g, "robust_list", head);
      jput_int(g, "robust_len", hlen);
      jput_u64(g, "clear_child_tid", th->clear_tid);
      jput_u64(g, "altstack_sp", th->alt_sp);
      jput_u64(g, "altstack_size", th->alt_size);
      jput_int(g, "altstack_flags", th->alt_flags);
      memset(&sa, 0, sizeof sa);
      if (syscall(SYS_sched_getattr, th->tid, &sa, sizeof sa, 0) < 0)
        {
          crest_error_errno(err, "task %d: sched_getattr", th->tid);
          goto out;
        }
      jput_int(g, "sched_policy", sa.policy);
      jput_u64(g, "sched_flags", sa.flags);
      jput_int(g, "nice", sa.nice);
      jput_int(g, "sched_priority", sa.prio);
      jput_int(g, "uclamp_min", sa.umin);
      jput_int(g, "uclamp_max", sa.umax);
      if (read_proc(p->pid, what, &tcomm, err) < 0)
        goto out;
      tcomm[strcspn(tcomm, "\n")] = 0;
      jput_str(g, "comm", tcomm);
      put_attrs(c, prctl_put_thread(g, &th->pr));
      n = ptrace(PTRACE_PEEKSIGINFO, th->tid, &arg, si);
      if (n < 0)
        {
          crest_error_errno(err, "task %d: read pending signals", th->tid);
          goto out;
        }
      cont_pending |= put_pending(g, "pending", si, n);
      yajl_gen_map_close(g);
    }
  yajl_gen_array_close(g);
  /* A SIGCONT that came while the engine held a stopped task ended its
     group stop at once (and the SIGCONT stays queued, as for any traced
     task): detached, it runs on and takes it. The image says the same, so
     that the restored task does too. */
  if (p->stop_sig && cont_pending)
    {
      crest_debug("checkpoint: task %d was continued (SIGCONT) during the checkpoint", p->pid);
      p->stop_sig = 0;
    }
  if (p->stop_sig)
    {
      jput_int(g, "stop_signal", p->stop_sig);
      if (p != &c->p[0] && find_proc(c, p->ppid))
        jput_bool(g, "stop_reported", p->stop_reported);
      if (c->w->format < CREST_IMAGE_FORMAT_STOP)
        c->w->format = CREST_IMAGE_FORMAT_STOP;
    }
  yajl_gen_map_close(g);
  rc = 0;
  goto out;
bad_status:
  crest_error_make(err, EINVAL, "task %d: cannot parse /proc status", p->pid);
out:
  free_vmas(v, nv);
  free(vf);
  (void)comm;
  return rc;
}

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

/* Detach every thread; with KILL_IT, kill the tree first (while every task is
   still held, so none runs another instruction) and return only once every
   process of it has exited: a checkpoint without --leave-running ends with
   the tree gone, its PIDs free for a restore once the zombies are reaped. */
static int
release_tree(struct dctx *c, bool kill_it, bool *frozen, crest_error_t *thaw_err,
             crest_error_t *err)
{
  const int limit_ms = 10000;
  cleanup_free int *pfd = xmalloc((c->np ? c->np : 1) * sizeof *pfd);
  struct timespec t0, now;

  for (size_t i = 0; i < c->np; i++)
    {
      pfd[i] = -1;
      if (kill_it)
        {
          pfd[i] = syscall(SYS_pidfd_open, c->p[i].pid, 0);
          if (pfd[i] < 0 || syscall(SYS_pidfd_send_signal, pfd[i], SIGKILL, NULL, 0) < 0)
            kill(c->p[i].pid, SIGKILL);
        }
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
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;)
    {
      size_t left = 0;
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
        }
      if (!left)
        return 0;
      clock_gettime(CLOCK_MONOTONIC, &now);
      if ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 > limit_ms)
        {
          for (size_t i = 0; i < c->np; i++)
            if (pfd[i] >= 0)
              close(pfd[i]);
          return crest_error_make(err, ETIMEDOUT,
                                  "checkpoint written, but task %d still runs %d s after "
                                  "SIGKILL (%zu process(es) of the tree left)",
                                  first, limit_ms / 1000, left);
        }
      usleep(1000);
    }
}

/* A tree left running goes back to how it was while every task is still
   held: a container the user paused is frozen again before its tasks are
   let go, so that none of them runs an instruction in between. A failure
   to do so fails a checkpoint that had succeeded (*RC). */
static void
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

static void
free_ctx(struct dctx *c)
{
  for (size_t i = 0; i < c->np; i++)
    {
      for (size_t t = 0; t < c->p[i].nth; t++)
        free(c->p[i].th[t].xstate);
      free(c->p[i].th);
      free(c->p[i].root_dir);
    }
  if (c->topfd >= 0)
    close(c->topfd);
  free(c->p);
  for (size_t i = 0; i < c->nf; i++)
    free(c->f[i].path), free(c->f[i].data), free(c->f[i].u.ext);
  free(c->f);
  for (size_t i = 0; i < c->npp; i++)
    free(c->pp[i].data), free(c->pp[i].path);
  free(c->pp);
  shm_free(&c->shm);
  free(c->fds);
}

/* The dump itself, in the tracer (crest_engine_dump runs it in a worker
   process: dump-guard.c). */
int
dump_tree_here(pid_t root, const struct crest_dump_opts *o, crest_error_t *err)
{
  struct dctx c;
  yajl_gen g = NULL;
  int rc = -1;
  bool frozen = false;
  const char *fault = crest_test_knob("CREST_FAULT");

  sigset_t hold, old_mask;

  memset(&c, 0, sizeof c);
  c.o = o;
  c.root = root;
  c.topfd = -1;
  clock_gettime(CLOCK_MONOTONIC, &c.t0);
  if (root <= 0)
    return crest_error_make(err, EINVAL, "checkpoint: bad PID %d", root);
  if (kill(root, 0) < 0)
    return crest_error_errno(err, "checkpoint: task %d", root);
  sigemptyset(&hold);
  sigaddset(&hold, SIGINT);
  sigaddset(&hold, SIGTERM);
  sigaddset(&hold, SIGHUP);
  sigaddset(&hold, SIGQUIT);
  sigprocmask(SIG_BLOCK, &hold, &old_mask);
  if (o->freeze)
    {
      if (o->freeze(o->freeze_data, root, CREST_FREEZE_ON, err) < 0)
        return -1;
      frozen = true;
    }
  if (img_writer_open(o->image_dir, &c.w, err) < 0)
    goto out;
  if (collect_tree(&c, err) < 0)
    goto out;
  /* Every task is in a ptrace stop now (the interrupt stop is reached in a
     frozen cgroup too), which holds the tree as still as the freezer: no
     task runs its own code or forks until it is detached. The freezer is
     let go, because a task it holds never runs what the dump injects (it
     would wait for a stop that never comes); put back as it was before
     crest came, before the detach, at the end. */
  if (frozen && o->freeze(o->freeze_data, root, CREST_FREEZE_THAW, err) < 0)
    goto out;
  if (dump_fault("seize", err) < 0)
    goto out;
  crest_debug("checkpoint: %zu processes seized", c.np);
  if (ns_ids(&c, err) < 0 || user_ns(&c, err) < 0 || same_namespaces(&c, err) < 0
      || dump_roots(&c, err) < 0 || check_groups(&c, err) < 0)
    goto out;
  if (o->root_is_ns_init)
    find_terminal(&c);

  for (size_t i = 0; i < c.np; i++)
    {
      struct dproc *p = &c.p[i];
      if (p->zombie)
        continue;
      for (size_t t = 0; t < p->nth; t++)
        {
          p->th[t].xstate = xmalloc(XSTATE_MAX);
          if (pt_getregs(p->th[t].tid, &p->th[t].regs, err) < 0
              || pt_getxstate(p->th[t].tid, p->th[t].xstate, &p->th[t].xlen, err) < 0)
            goto out;
        }
      if (inject_state(&c, p, err) < 0 || interrupted(err) < 0)
        goto out;
      if (dump_fds(&c, p, err) < 0)
        goto out;
    }
  if (dump_fault("files", err) < 0 || dump_pipes(&c, err) < 0)
    goto out;
  /* Memory objects are shared across the tree: every mapping of each is
     known before the first is saved. */
  for (size_t i = 0; i < c.np; i++)
    if (!c.p[i].zombie && shm_collect(&c.shm, c.p[i].pid, err) < 0)
      goto out;
  /* An unlinked file comes back as a new file for its descriptors and a
     memfd for its mappings: they would no longer share its bytes. */
  for (size_t i = 0; i < c.nf; i++)
    if (c.f[i].unlinked && shm_find(&c.shm, c.f[i].dev, c.f[i].ino))
      {
        crest_error_make(err, ENOTSUP,
                         "task %d: fd %d (%s): an unlinked file that is also mapped, cannot "
                         "checkpoint it",
                         c.f[i].pid, c.f[i].fd, c.f[i].path);
        goto out;
      }
  if (fault && strcmp(fault, "dump-signal") == 0)
    kill(getpid(), SIGTERM); /* test hook: crest is told to stop mid-dump */
  if (fault && strcmp(fault, "dump-task-exit") == 0 && c.np > 1)
    {
      /* Test hook: a task of the tree dies in the middle of the dump. */
      kill(c.p[c.np - 1].pid, SIGKILL);
    }

  g = yajl_gen_alloc(NULL);
  yajl_gen_config(g, yajl_gen_beautify, 1);
  yajl_gen_map_open(g);
  jput_int(g, "root", c.p[0].ipid);
  jput_bool(g, "root_is_ns_init", o->root_is_ns_init);
  if (o->cgroup_path)
    jput_str(g, "cgroup", o->cgroup_path);
  jput_key(g, "processes");
  yajl_gen_array_open(g);
  for (size_t i = 0; i < c.np; i++)
    {
      if (dump_process(&c, &c.p[i], g, err) < 0 || interrupted(err) < 0)
        goto out;
      if (kill(c.p[i].pid, 0) < 0)
        {
          crest_error_make(err, ESRCH, "task %d: exited during the checkpoint", c.p[i].pid);
          goto out;
        }
    }
  yajl_gen_array_close(g);
  jput_key(g, "files");
  yajl_gen_array_open(g);
  for (size_t i = 0; i < c.nf; i++)
    {
      struct dfile *f = &c.f[i];
      yajl_gen_map_open(g);
      jput_int(g, "id", f->id);
      jput_str(g, "type", f->type);
      put_attrs(&c, strcmp(f->type, "link") == 0);
      jput_str(g, "path", f->path);
      jput_int(g, "flags", f->flags);
      jput_int(g, "pos", f->pos);
      if (strcmp(f->type, "fifo") == 0)
        jput_u64(g, "pipe", f->ino_pipe);
      if (strcmp(f->type, "pipe") == 0)
        {
          jput_u64(g, "pipe", f->ino_pipe);
          jput_bool(g, "read_end", f->pipe_read);
        }
      if (f->data)
        jput_str(g, "data", f->data);
      if (f->unlinked)
        unlinked_put(g, &f->u);
      if (f->deleted_dir)
        deleted_dir_put(g, &f->u);
      put_attrs(&c, locks_put(g, &f->locks, (1u << LOCK_KIND_FLOCK) | (1u << LOCK_KIND_OFD)));
      if (strcmp(f->type, "memfd") == 0)
        jput_int(g, "seals", f->seals);
      yajl_gen_map_close(g);
    }
  yajl_gen_array_close(g);
  jput_key(g, "pipes");
  yajl_gen_array_open(g);
  for (size_t i = 0; i < c.npp; i++)
    if (c.pp[i].ino)
      {
        yajl_gen_map_open(g);
        jput_u64(g, "ino", c.pp[i].ino);
        jput_int(g, "size", c.pp[i].size);
        if (c.pp[i].path)
          jput_str(g, "path", c.pp[i].path);
        if (c.pp[i].data)
          jput_str(g, "data", c.pp[i].data);
        if (c.pp[i].no_r || c.pp[i].no_w)
          jput_bool(g, c.pp[i].no_r ? "no_reader" : "no_writer", put_attrs(&c, 1));
        yajl_gen_map_close(g);
      }
  yajl_gen_array_close(g);
  if (c.term.saved)
    {
      /* The container's terminal: its settings, and its foreground process
         group when that is one of the tree's. */
      jput_key(g, "terminal");
      yajl_gen_map_open(g);
      jput_int(g, "iflag", c.term.tio.c_iflag);
      jput_int(g, "oflag", c.term.tio.c_oflag);
      jput_int(g, "cflag", c.term.tio.c_cflag);
      jput_int(g, "lflag", c.term.tio.c_lflag);
      jput_int(g, "ispeed", c.term.tio.c_ispeed);
      jput_int(g, "ospeed", c.term.tio.c_ospeed);
      jput_int(g, "line", c.term.tio.c_line);
      jput_hex(g, "cc", c.term.tio.c_cc, sizeof c.term.tio.c_cc);
      jput_int(g, "rows", c.term.ws.ws_row);
      jput_int(g, "cols", c.term.ws.ws_col);
      jput_int(g, "xpixel", c.term.ws.ws_xpixel);
      jput_int(g, "ypixel", c.term.ws.ws_ypixel);
      for (size_t i = 0; i < c.np && c.term.fg; i++)
        if (c.p[i].pgid == c.term.fg)
          {
            jput_int(g, "fg_pgid", c.p[i].ipgid);
            break;
          }
      yajl_gen_map_close(g);
    }
  yajl_gen_map_close(g);
  if (img_write_json(c.w, "tree.json", g, err) < 0)
    goto out;
  /* A task that died while we worked: the image would be inconsistent. */
  for (size_t i = 0; i < c.np; i++)
    {
      cleanup_free char *st = NULL;
      crest_error_t e2 = NULL;
      const char *s;
      if (c.p[i].zombie)
        {
          /* Reaped meanwhile: its parent's wait() already happened. */
          if (kill(c.p[i].pid, 0) < 0)
            {
              crest_error_make(err, ESRCH, "task %d: reaped during the checkpoint", c.p[i].pid);
              goto out;
            }
          continue;
        }
      if (read_proc(c.p[i].pid, "status", &st, &e2) < 0 || !(s = status_field(st, "State"))
          || *s == 'Z' || *s == 'X')
        {
          crest_error_release(&e2);
          crest_error_make(err, ESRCH, "task %d: exited during the checkpoint", c.p[i].pid);
          goto out;
        }
    }
  {
    int format = 1;
    for (size_t i = 0; i < c.np; i++)
      if (c.p[i].root_dir)
        format = CREST_IMAGE_FORMAT_CHROOT;
    if (interrupted(err) < 0 || img_writer_commit(c.w, o->config_digest, format, err) < 0)
      goto out;
  }
  crest_debug("checkpoint: %" PRIu64 " bytes of memory in %" PRIu64 " process_vm_readv calls",
              c.pages_bytes, c.readv_calls);
  if (crest_test_knob("CREST_STATS"))
    fprintf(stderr,
            "crest: checkpoint stats: processes %zu, memory bytes %" PRIu64
            ", process_vm_readv calls %" PRIu64 "\n",
            c.np, c.pages_bytes, c.readv_calls);
  rc = 0;
out:
  if (g)
    yajl_gen_free(g);
  if (rc < 0)
    /* Whatever failed, a task that died meanwhile is the reason to report. */
    for (size_t i = 0; i < c.np; i++)
      {
        cleanup_free char *st = NULL;
        crest_error_t e2 = NULL;
        const char *s;
        if (c.p[i].zombie)
          continue;
        /* A leader gone before its other threads shows Z too: that was
           the reason given (pstree_check_leader), not an exit. */
        if (pstree_check_leader(c.p[i].pid, &e2) < 0)
          {
            crest_error_release(&e2);
            continue;
          }
        if (read_proc(c.p[i].pid, "status", &st, &e2) < 0 || !(s = status_field(st, "State"))
            || *s == 'Z' || *s == 'X')
          {
            crest_error_release(&e2);
            if (*err)
              {
                cleanup_free char *why = crest_error_text(*err);
                crest_debug("checkpoint: %s", why);
              }
            crest_error_release(err);
            crest_error_make(err, ESRCH, "task %d: exited during the checkpoint", c.p[i].pid);
            break;
          }
      }
  if (frozen && !(rc == 0 && !o->leave_running))
    put_back_freezer(&c, &frozen, &rc, err);
  {
    crest_error_t e2 = NULL, thaw = NULL;
    if (release_tree(&c, rc == 0 && !o->leave_running, &frozen, &thaw, &e2) < 0)
      {
        if (rc == 0)
          *err = e2, rc = -1;
        else
          crest_error_release(&e2);
      }
    if (thaw)
      {
        if (rc == 0)
          *err = thaw, rc = -1;
        else
          crest_error_release(&thaw);
      }
  }
  if (frozen)
    {
      crest_error_t e2 = NULL;
      if (o->freeze(o->freeze_data, root, CREST_FREEZE_RESTORE, &e2) < 0)
        {
          if (rc == 0)
            *err = e2, rc = -1;
          else
            crest_error_release(&e2);
        }
    }
  img_writer_free(c.w);
  free_ctx(&c);
  if (c.progress)
    crest_progress("checkpoint of %d: %s", root, rc == 0 ? "done" : "failed");
  if (rc < 0)
    {
      /* The tree is released: a held signal may now do what it was sent
         for, after the error line is out. Drop ours from the pending set
         only by restoring the mask in the caller's hands. */
      sigset_t pend;
      sigpending(&pend);
      for (int sg = 1; sg < 32; sg++)
        if (sigismember(&hold, sg) && sigismember(&pend, sg))
          {
            struct sigaction sa;
            /* A signal whose default action ends crest: say why first. */
            if (sigaction(sg, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL && *err)
              {
                crest_error_report(err);
                crest_error_make(err, EINTR, "checkpoint interrupted");
              }
            break;
          }
    }
  sigprocmask(SIG_SETMASK, &old_mask, NULL);
  return rc;
}
