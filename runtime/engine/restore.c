/* crest: the restore. Read and check the image, recreate every task with its
 * PID (clone3 + set_tid, or ns_last_pid), let each one rebuild its address
 * space through the restorer blob, then set every thread's registers with
 * ptrace, unmap the blob and let the tree go. All or nothing. This file
 * drives; tree.json is read in restore-parse.c, the files the tasks need
 * opened in restore-svc.c, each task forked and run in restore-task.c,
 * seized in restore-seize.c and finished in restore-finish.c. */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/futex.h>
#include <linux/sched.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "engine.h"
#include "engine-int.h"
#include "image.h"
#include "kernel-abi.h"
#include "log.h"
#include "testhook.h"
#include "sk-tcp.h"
#include "util.h"

#include "restore-int.h"

/* ---------- the engine side ---------- */

double
ms_since(const struct timespec *t0)
{
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (now.tv_sec - t0->tv_sec) * 1e3 + (now.tv_nsec - t0->tv_nsec) / 1e6;
}

static void
kill_all(struct rctx *c)
{
  int st;
  for (size_t i = 0; i < c->np; i++)
    if (c->p[i].real > 0 || c->p[i].seized)
      kill(c->p[i].pid, SIGKILL);
  /* Tasks not yet reported are still ours: they carry PIDs that were free. */
  for (size_t i = 0; i < c->np; i++)
    kill(c->p[i].pid, SIGKILL);
  if (c->go)
    for (size_t i = 0; i < c->np; i++)
      {
        __atomic_store_n(&c->go[i], 2, __ATOMIC_RELEASE);
        syscall(SYS_futex, &c->go[i], FUTEX_WAKE, 1, NULL, NULL, 0);
      }
  while (waitpid(-1, &st, __WALL) > 0 || errno == EINTR)
    ;
}

/* Test hook (docs/engine.md): CREST_FAULT=restore-kill:PHASE makes the
   restore SIGKILL itself at PHASE, to check what a killed restore leaves. */
void
fault_kill(const char *phase)
{
  const char *f = crest_test_knob("CREST_FAULT");
  if (!f || strncmp(f, "restore-kill:", 13) != 0 || strcmp(f + 13, phase) != 0)
    return;
  /* The init of a PID namespace (a container's restorer) cannot kill
     itself: the kernel drops a signal it sends itself. It creates
     /crest-killme in its root and waits for the test to kill it from
     outside (keeping its name, by which crest follows it). */
  if (getpid() == 1)
    for (close(open("/crest-killme", O_WRONLY | O_CREAT | O_CLOEXEC, 0600));;)
      pause();
  raise(SIGKILL);
}

/* The helper of a namespace-init restore: a child with the highest PID
   below pid_max that the image does not use. Its exit signal is none: the
   init reaps it with __WALL before its own code runs (init_reaps_helper),
   and a SIGCHLD would reach the restored init's handler for a child it
   never had (until December 2026 once a restore: a Python init's handler
   ran, rsyslogd's reaped a zombie of the image). With --lazy-pages it
   outlives the restore, serving pages, and says it ends with SIGCHLD. */
static pid_t
helper_fork(struct rctx *c)
{
  long pid_max = read_long_file("/proc/sys/kernel/pid_max", 32768);
  for (pid_t cand = pid_max - 1; cand > pid_max - 64; cand--)
    {
      struct clone_args ca;
      pid_t r;
      if (find_thread(c, cand, NULL))
        continue;
      memset(&ca, 0, sizeof ca);
      ca.exit_signal = c->o->lazy_pages ? SIGCHLD : 0;
      ca.set_tid = (uint64_t)&cand;
      ca.set_tid_size = 1;
      r = syscall(SYS_clone3, &ca, sizeof ca);
      if (r >= 0 || (errno != EEXIST && errno != EBUSY))
        return r;
    }
  errno = EEXIST;
  return -1;
}

static void
free_ctx(struct rctx *c)
{
  lazy_free(c);
  for (size_t i = 0; i < c->np; i++)
    {
      struct rproc *p = &c->p[i];
      free(p->groups), free(p->auxv);
      free(p->shared_pending), free(p->timers);
      cow_free(p);
    }
  for (size_t i = 0; i < c->nf; i++)
    {
      if (c->f[i].priv && c->f[i].ops && c->f[i].ops->release)
        c->f[i].ops->release(&c->f[i]);
      free(c->f[i].priv), free(c->f[i].u.ext), free(c->f[i].deleted_dir.ext);
    }
  free(c->kids), free(c->f), free(c->pp), free(c->mf);
  ipc_free(c->ipc);
  jtree_free(c->jt);
  arena_free(&c->tracer);
  arena_free(&c->plan); /* c->p and what it points to */
  img_reader_free(c->img);
  for (int i = 0; i < c->nchain; i++)
    img_reader_free(c->chain[i]);
}

/* The pid file's directory exists and may be written: checked before
   anything is created, so that the common mistake costs nothing. */
static int
check_pid_file_dir(const char *path, crest_error_t *err)
{
  cleanup_free char *dir = xstrdup(path);
  char *slash = strrchr(dir, '/');
  const char *d = slash ? (slash == dir ? "/" : (*slash = 0, dir)) : ".";
  if (access(d, W_OK | X_OK) < 0)
    return crest_error_errno(err, "restore: pid file %s: directory %s", path, d);
  return 0;
}

/* A pre-dump is never restored; an image with a parent reads pages
   through the chain of its parent images (chain.c), checked here: their
   page files only where the restore reads them (chain_check_reads, once
   the tree is parsed). */
static int
open_chain(struct rctx *c, crest_error_t *err)
{
  cleanup_free char *path = NULL;
  if (c->img->pre_dump)
    return crest_error_make(err, EINVAL,
                            "image %s: a pre-dump holds memory only; restore the checkpoint made "
                            "with --parent-path of it",
                            c->img->dir);
  if (!c->img->parent_path)
    return 0;
  if (c->img->dirfd < 0)
    return crest_error_make(err, EINVAL, "image %s: a parent image, in an image held in memory",
                            c->img->dir);
  path = chain_path(c->img->dir, c->img->parent_path);
  return chain_open_at(path, c->img->parent_sha, IMG_LATE_BLOCKS, c->o->chain_dirs,
                       c->o->nchain_dirs, c->chain, &c->nchain, err);
}

int
crest_engine_check_image_open(const char *image_dir, struct img_reader **out, crest_error_t *err)
{
  struct rctx c;
  struct crest_restore_opts o;
  int rc;
  memset(&c, 0, sizeof c);
  memset(&o, 0, sizeof o);
  o.image_dir = image_dir;
  c.o = &o;
  c.term_svc = -1;
  if (img_reader_open(image_dir, false, true, &c.img, err) < 0)
    return -1;
  rc = open_chain(&c, err);
  if (rc == 0)
    rc = parse_tree(&c, err);
  if (rc == 0)
    rc = chain_check_reads(&c, err);
  if (rc == 0 && out)
    {
      *out = c.img; /* handed over: free_ctx leaves it alone */
      c.img = NULL;
    }
  free_ctx(&c);
  return rc;
}

int
crest_engine_check_image(const char *image_dir, crest_error_t *err)
{
  return crest_engine_check_image_open(image_dir, NULL, err);
}

/* Read the image and build the restore's plan from it: every check of the
   image, against the format and against what this restore may give,
   without changing anything on the system (the fuzzer's target,
   tests/fuzz/fuzz-image.c, runs exactly this). */
static int
plan_restore(struct rctx *c, bool check_kernel, crest_error_t *err)
{
  const struct crest_restore_opts *o = c->o;
  /* In process mode the page files are hashed by a thread while the
     tasks read them (img_reader_open_late); a namespace init's restore
     finishes in a forked helper, which has no such thread. */
  if ((!c->img
       && img_reader_open_late(o->image_dir, check_kernel, true, !o->as_ns_init, &c->img, err) < 0)
      || open_chain(c, err) < 0 || parse_tree(c, err) < 0 || chain_check_reads(c, err) < 0)
    return -1;
  if (o->as_ns_init && c->p[0].pid != 1)
    return crest_error_make(err, EINVAL,
                            "image %s: its root is PID %d, not the init of a PID namespace",
                            o->image_dir, c->p[0].pid);
  /* Every task inherits the filters the restore runs under, and the CPUs
     it may use. */
  if (seccomp_restore_check(c, err) < 0 || affinity_restore_check(c, err) < 0)
    return -1;
  /* Every task starts with the restorer's capabilities: a chroot'd one
     needs CAP_SYS_CHROOT among them. Known now, before anything exists. */
  for (size_t i = 0; i < c->np; i++)
    if (c->p[i].root_dir)
      {
        struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
        struct __user_cap_data_struct d[2];
        if (syscall(SYS_capget, &h, d) < 0)
          crest_error_errno(err, "restore: capget");
        else if (!(d[0].effective & (1U << CAP_SYS_CHROOT)))
          crest_error_make(err, EPERM,
                           "restore: process %d has a root directory of its own (chroot to %s): "
                           "giving it back needs CAP_SYS_CHROOT, which this restore does not hold",
                           c->p[i].pid, c->p[i].root_dir);
        else
          break;
        return -1;
      }
  /* A shell job's tree takes the restore's controlling terminal, as it
     had its shell's (checkpoint --shell-job): the restore must have one. */
  if (c->shell_job)
    {
      int t;
      if (c->img->format < CREST_IMAGE_FORMAT_SHELL_JOB)
        return crest_error_make(err, EINVAL, "image %s: shell_job in an image of format %d",
                                o->image_dir, c->img->format);
      t = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
      if (t < 0)
        return crest_error_make(err, ENOTTY,
                                "image %s: a shell job (checkpoint --shell-job), whose "
                                "controlling terminal was its shell's: restore it from a "
                                "terminal, which the tree takes (/dev/tty: %s)",
                                o->image_dir, strerror(errno));
      close(t);
    }
  /* Process mode: a root whose process group or session was led outside
     the tree (a program started in the background by a shell or a script)
     joins crest's own; said once, not silently (a shell job's is meant:
     checkpoint --shell-job). */
  if (!o->as_ns_init && !c->shell_job && c->np)
    {
      bool g = false, s = false;
      for (size_t i = 0; i < c->np; i++)
        g |= c->p[i].pid == c->p[0].pgid, s |= c->p[i].pid == c->p[0].sid;
      c->joins_crest = !s ? 1 : !g ? 2 : 0;
    }
  /* After the chroot check: that refusal names the one capability missing. */
  {
    uint64_t bound = 0;
    const char *whose = "";
    if (caps_bound(o, &bound, &whose, err) < 0 || check_caps(c, bound, whose, err) < 0)
      return -1;
  }
  /* Parsed: the tree's nodes go before any task is forked (jtree.c); the
     strings the plan points into stay. */
  jtree_drop_nodes(c->jt);
  c->tree = NULL;
  return 0;
}

int
crest_engine_plan(const struct crest_restore_opts *o, struct img_reader *img, crest_error_t *err)
{
  struct rctx c;
  int rc;
  memset(&c, 0, sizeof c);
  c.o = o;
  c.img = img;
  c.term_svc = -1;
  rc = plan_restore(&c, false, err);
  free_ctx(&c);
  return rc;
}

/* Is TID taken, waiting up to 2 s while a zombie holds it: a process of
   the tree a checkpoint has just ended, not yet reaped by its reaper (a
   shell as the PID namespace's init reaps when it gets to it: a restore
   right after the checkpoint found it once in CI, December 2026). */
static bool
pid_taken(pid_t tid)
{
  for (int k = 0; k < 40; k++)
    {
      char path[48], st[64], *z;
      int fd;
      ssize_t n;
      struct timespec pause = { 0, 50L * 1000 * 1000 };
      if (kill(tid, 0) < 0 && errno == ESRCH)
        return false;
      snprintf(path, sizeof path, "/proc/%d/stat", (int)tid);
      if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return errno != ENOENT;
      n = read(fd, st, sizeof st - 1);
      close(fd);
      st[n > 0 ? n : 0] = 0;
      if (!(z = strrchr(st, ')')) || z[1] != ' ' || z[2] != 'Z')
        return true;
      nanosleep(&pause, NULL);
    }
  return true;
}

/* Every PID and TID of the image is free here. */
static int
check_pids_free(struct rctx *c, crest_error_t *err)
{
  for (size_t i = 0; i < c->np; i++)
    for (size_t t = 0; t < c->p[i].nth + c->p[i].zombie; t++)
      {
        pid_t tid = c->p[i].zombie ? c->p[i].pid : c->p[i].th[t].tid;
        if (!(c->o->as_ns_init && tid == 1) && pid_taken(tid))
          return crest_error_make(err, EEXIST, "restore: PID %d is in use in this PID namespace%s",
                                  tid,
                                  tid == getpid() || tid == getppid()
                                      ? " (by this crest or its caller: start the restore "
                                        "from a process of another PID)"
                                      : "");
      }
  return 0;
}

/* How the tasks report (a pipe) and are told to go (a shared page). */
static int
open_report(struct rctx *c, crest_error_t *err)
{
  if (pipe2(c->report, O_CLOEXEC) < 0)
    return crest_error_errno(err, "restore: pipe");
  /* The write end must survive each task's clean-up of low descriptors. */
  if ((c->report[1] = svc_place(c, c->report[1], err)) < 0)
    return -1;
  c->done_svc = -1;
  if (c->o->done_fd > 0
      && (c->done_svc = svc_place(c, fcntl(c->o->done_fd, F_DUPFD_CLOEXEC, 0), err)) < 0)
    return -1;
  c->go = mmap(NULL, ((c->np * 4 + PAGE - 1) & ~(PAGE - 1)) + PAGE, PROT_READ | PROT_WRITE,
               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (c->go == MAP_FAILED)
    {
      c->go = NULL;
      return crest_error_errno(err, "restore: mmap");
    }
  c->grp = mmap(NULL, (c->np * 4 + PAGE - 1) & ~(PAGE - 1), PROT_READ | PROT_WRITE,
                MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (c->grp == MAP_FAILED)
    {
      c->grp = NULL;
      return crest_error_errno(err, "restore: mmap");
    }
  return 0;
}

/* As the init of a new PID namespace: this process becomes the image's
   init. Comes back only on a failure: -1, with OLD the signal mask put
   back. */
static int
restore_as_init(struct rctx *c, sigset_t *all, sigset_t *old, crest_error_t *err)
{
  /* We are PID 1 and become the image's init. A helper child, with a PID
     the image does not use, is the tracer that finishes the tree; it
     exits when done (the restored init reaps it like any orphan). */
  pid_t h;
  sigprocmask(SIG_BLOCK, all, old);
  h = helper_fork(c);
  c->helper = h;
  if (h <= 0)
    arena_unseal(&c->plan); /* the helper's own copy */
  if (h < 0)
    {
      crest_error_errno(err, "restore: create the finishing helper");
      sigprocmask(SIG_SETMASK, old, NULL);
      return -1;
    }
  if (h == 0)
    {
      crest_error_t e = NULL;
      close(c->report[1]);
      c->report[1] = -1;
      fault_kill("created");
      if (finish_tree(c, &e) < 0)
        {
          cleanup_free char *text = crest_error_text(e);
          struct timespec ack = { 2, 0 };
          snprintf((char *)(c->go + c->np), PAGE - 1, "%s", text ? text : "restore failed");
          /* To crest, through the sync pipe, by this process: the init
             may be stopped at its blob's int3, traced by this process,
             and would never say it (it dies with this process). */
          if (c->o->done_fd > 0)
            dprintf(c->o->done_fd, "%s\n", (char *)(c->go + c->np));
          /* Tasks that are not traced yet go by hand; the traced ones by
             PTRACE_O_EXITKILL when we exit. The init says why, once:
             wait until it has (it sets 3), or it failed on its own and
             says that instead. */
          for (size_t i = 1; i < c->np; i++)
            kill(c->p[i].pid, SIGKILL);
          __atomic_store_n(&c->go[0], 2, __ATOMIC_RELEASE);
          syscall(SYS_futex, &c->go[0], FUTEX_WAKE, 1, NULL, NULL, 0);
          syscall(SYS_futex, &c->go[0], FUTEX_WAIT, 2, &ack, NULL, 0);
          _exit(1);
        }
      /* Only now is the tree restored: say so to whoever follows the
         restore (crest, through the restorer's sync pipe). */
      if (c->o->done_fd > 0 && write(c->o->done_fd, "D\n", 2) != 2)
        _exit(1);
      _exit(0);
    }
  {
    sigjmp_buf jb;
    if (sigsetjmp(jb, 0) == 0)
      {
        c->init_fail = &jb;
        task_main(c, 0);
      }
    /* Only a failure comes back: the helper and the tasks created so far
       go with this process (their PID namespace ends with its init). */
    c->init_fail = NULL;
    kill(h, SIGKILL);
    /* The caller reports the failure through done_fd, whose number one of
       the init's own descriptors may have taken meanwhile. */
    if (c->done_svc >= 0)
      dup2(c->done_svc, c->o->done_fd);
    crest_error_make(err, 0, "restore: %s", c->init_msg);
    sigprocmask(SIG_SETMASK, old, NULL);
    return -1;
  }
}

/* The tree runs: its root's PID, the pid file, and the wait for the root
   unless detached. */
static int
restore_done(struct rctx *c, pid_t *root_out, crest_error_t *err)
{
  *root_out = c->p[0].pid;
  if (crest_test_knob("CREST_STATS"))
    fprintf(stderr,
            "crest: restore stats: processes %zu, ms: planned %.1f, files open %.1f, every "
            "thread parked %.1f, checksums %.1f, registers set %.1f, detached %.1f\n",
            c->np, c->ms_planned, c->ms_files, c->ms_parked, c->ms_verified, c->ms_finished,
            ms_since(&c->t0));
  {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (c->progress
        || (now.tv_sec - c->t0.tv_sec) * 1000000000L + (now.tv_nsec - c->t0.tv_nsec) >= 1000000000L)
      crest_progress("restore of %s: done, %zu processes running", c->o->image_dir, c->np);
  }
  if (c->o->pid_file)
    {
      /* All or nothing: a caller that gets no PID must not find the tree
         running (its retry would meet "PID in use"). */
      char num[24];
      int n = snprintf(num, sizeof num, "%d", c->p[0].pid);
      if (write_file_atomic(c->o->pid_file, num, n, 0644, err) < 0)
        {
          kill_all(c);
          return -1;
        }
    }
  /* Once nothing can fail it any more (the pid file is written). */
  if (c->joins_crest)
    {
      pid_t id = c->joins_crest == 1 ? c->p[0].sid : c->p[0].pgid;
      char num[32] = "";
      if (id > 0)
        snprintf(num, sizeof num, " %d", (int)id);
      crest_warn("restore: process %d's %s%s was led outside the tree%s: it is in the restoring "
                 "crest's %s",
                 c->p[0].pid, c->joins_crest == 1 ? "session" : "process group", num,
                 id > 0 ? "" : " (outside its PID namespace)",
                 c->joins_crest == 1 ? "session and process group" : "process group");
    }
  if (c->shell_job_fg && !c->o->detach)
    {
      /* The shell job was in its terminal's foreground: there again, as
         the restore, its shell's job now, was (with -d the shell takes
         the terminal back once crest exits: left in the background). */
      int t = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
      if (t < 0 || tcsetpgrp(t, (pid_t)c->shell_job_fg) < 0)
        crest_progress("restore of %s: the shell job's process group %lld not put in the "
                       "terminal's foreground: %s",
                       c->o->image_dir, (long long)c->shell_job_fg, strerror(errno));
      if (t >= 0)
        close(t);
    }
  if (!c->o->detach)
    {
      int st = 0;
      /* --lazy-pages: the root may have exited while crest traced it. */
      if (!lazy_root_status(c, &st))
        while (waitpid(c->p[0].pid, &st, 0) < 0 && errno == EINTR)
          ;
      if (c->o->root_status)
        *c->o->root_status = st;
    }
  return 0;
}

int
crest_engine_restore(const struct crest_restore_opts *o, pid_t *root_out, crest_error_t *err)
{
  struct rctx c;
  sigset_t all, old;
  volatile int rc = -1; /* sigsetjmp below */
  const char *force = crest_test_knob("CREST_FORCE_NS_LAST_PID");

  memset(&c, 0, sizeof c);
  c.o = o;
  c.report[0] = c.report[1] = -1;
  c.nslp_fd = -1;
  c.term_svc = -1;
  clock_gettime(CLOCK_MONOTONIC, &c.t0);
  {
    struct stat st;
    if (o->done_fd > 0 && fstat(o->done_fd, &st) == 0 && S_ISSOCK(st.st_mode))
      tcp_repair_helper(o->done_fd);
  }
  if (o->lazy_pages && o->detach && !o->as_ns_init && !lazy_is_child())
    return lazy_detached(o, root_out, err);
  if (o->as_ns_init && getpid() != 1)
    return crest_error_make(err, EINVAL,
                            "restore: as the init of a new PID namespace, but this is PID %d",
                            (int)getpid());
  if (plan_restore(&c, true, err) < 0)
    {
      free_ctx(&c);
      return -1;
    }
  {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((now.tv_sec - c.t0.tv_sec) * 1000000000L + (now.tv_nsec - c.t0.tv_nsec) >= 1000000000L)
      {
        c.progress = true;
        crest_progress("restore of %s: image checked, recreating %zu processes", o->image_dir,
                       c.np);
      }
  }
  for (size_t i = 0; i < c.np; i++)
    if (map_count_check(c.p[i].pid, c.p[i].nvmas, "restore", err) < 0)
      {
        free_ctx(&c);
        return -1;
      }
  if (!o->as_ns_init && keys_restore_session(&c, err) < 0)
    {
      free_ctx(&c);
      return -1;
    }
  c.use_nslp = o->force_ns_last_pid || (force && strcmp(force, "1") == 0);
  if (!c.use_nslp && syscall(SYS_clone3, NULL, 0) < 0 && errno == ENOSYS)
    c.use_nslp = true;
  if (check_pids_free(&c, err) < 0)
    {
      free_ctx(&c);
      return -1;
    }
  if (o->pid_file && check_pid_file_dir(o->pid_file, err) < 0)
    goto out;
  fault_kill("checked");
  c.ms_planned = ms_since(&c.t0);
  rc = open_files(&c, err);
  creds_open_as_tasks(&c, false);
  if (rc < 0)
    goto out;
  rc = -1;
  c.ms_files = ms_since(&c.t0);
  if (lazy_plan(&c, err) < 0)
    goto out;
  fault_kill("files");
  if (open_report(&c, err) < 0 || ipc_restore(&c, err) < 0)
    goto out;
  sigfillset(&all);
  /* The plan is complete: from here the tasks, forks of crest, read it
     from a mapping no process writes (arena.h), and crest writes only its
     own copy once they exist. */
  if (arena_seal(&c.plan) < 0)
    {
      crest_error_errno(err, "restore: seal the plan");
      arena_unseal(&c.plan);
      goto out;
    }
  if (o->as_ns_init)
    {
      restore_as_init(&c, &all, &old, err);
      arena_unseal(&c.plan);
      goto out;
    }
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  sigprocmask(SIG_BLOCK, &all, &old);
  task_layout_prime();
  restore_bounding_prime();
  if (create_task(&c, 0) < 0)
    {
      arena_unseal(&c.plan); /* keeps errno */
      crest_error_errno(err, "restore: create process %d", c.p[0].pid);
      sigprocmask(SIG_SETMASK, &old, NULL);
      goto out;
    }
  arena_unseal(&c.plan); /* crest's own copy from here on */
  close(c.report[1]);
  c.report[1] = -1;
  fault_kill("created");
  if (finish_tree(&c, err) < 0)
    goto fail;
  if (lazy_run(&c, err) < 0)
    goto fail;
  fault_kill("running");
  sigprocmask(SIG_SETMASK, &old, NULL);
  if (restore_done(&c, root_out, err) < 0)
    goto out;
  rc = 0;
  goto out;
fail:
  kill_all(&c);
  sigprocmask(SIG_SETMASK, &old, NULL);
out:
  if (c.svc_base > 0)
    close_fd_range(c.svc_base, c.svc_next - 1);
  if (c.report[0] >= 0)
    close(c.report[0]);
  if (c.report[1] >= 0)
    close(c.report[1]);
  if (c.go)
    munmap(c.go, ((c.np * 4 + PAGE - 1) & ~(PAGE - 1)) + PAGE);
  free_ctx(&c);
  return rc;
}
