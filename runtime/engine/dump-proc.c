/* crest: each process's record in tree.json at checkpoint: its root
 * directory (a chroot found from the tree's top), executable, working
 * directory, IDs, limits, memory, signals, timers, descriptors, threads and
 * group stop, written by the object files' writers. */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/openat2.h>
#include "engine.h"
#include "engine-int.h"
#include "image.h"
#include "kernel-abi.h"
#include "log.h"
#include "util.h"

#include "dump-int.h"

/* --- files --- */

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
int
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

/* --- the per-process record --- */

/* Its executable and working directory, in EXE and CWD (PATH_MAX + 1). */
static int
dump_exe_cwd(struct dctx *c, struct dproc *p, char *exe, char *cwd, crest_error_t *err)
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
  return 0;
}

int
put_rlimits(struct dproc *p, yajl_gen g, crest_error_t *err)
{
  jput_key(g, "rlimits");
  yajl_gen_array_open(g);
  for (int r = 0; r < RLIM_NLIMITS; r++)
    {
      struct rlimit rl;
      if (prlimit(p->pid, r, NULL, &rl) < 0)
        return crest_error_errno(err, "task %d: prlimit %d", p->pid, r);
      yajl_gen_map_open(g);
      jput_u64(g, "cur", rl.rlim_cur);
      jput_u64(g, "max", rl.rlim_max);
      yajl_gen_map_close(g);
    }
  yajl_gen_array_close(g);
  return 0;
}

/* A thread's CPU affinity, when narrower than what its cpuset allows (a
   restore elsewhere then keeps every CPU of its own), and its I/O
   priority, when set (ioprio_get's raw value: 0 follows the nice value). */
static int
dump_affinity(struct dctx *c, struct dproc *p, struct dthread *th, yajl_gen g, crest_error_t *err)
{
  cpu_set_t cs;
  long io;
  CPU_ZERO(&cs);
  if (sched_getaffinity(th->tid, sizeof cs, &cs) < 0)
    return crest_error_errno(err, "task %d: sched_getaffinity", th->tid);
  if (!CPU_EQUAL(&cs, &p->cpus))
    {
      char list[1024];
      cpulist_format(&cs, list, sizeof list);
      jput_str(g, "affinity", list);
      if (c->w->format < CREST_IMAGE_FORMAT_AFFINITY)
        c->w->format = CREST_IMAGE_FORMAT_AFFINITY;
    }
  io = syscall(SYS_ioprio_get, 1 /* IOPRIO_WHO_PROCESS */, th->tid);
  if (io < 0)
    return crest_error_errno(err, "task %d: ioprio_get", th->tid);
  if (io != 0)
    {
      jput_int(g, "ioprio", io);
      if (c->w->format < CREST_IMAGE_FORMAT_AFFINITY)
        c->w->format = CREST_IMAGE_FORMAT_AFFINITY;
    }
  return 0;
}

/* One thread's record: registers, FPU state, signal mask, rseq, robust
   list, alternate stack, scheduling, name, prctl state, pending signals
   (*CONT: a SIGCONT among them). */
static int
dump_thread(struct dctx *c, struct dproc *p, struct dthread *th, yajl_gen g, bool *cont,
            crest_error_t *err)
{
  uint64_t mask;
  struct user_regs_struct regs;
  struct rseq_conf rc_;
  uint64_t head = 0;
  size_t hlen = 0;
  struct crest_sched_attr sa;
  struct peeksiginfo arg = { 0, 0, 64 };
  uint8_t si[64 * 128];
  long n;
  cleanup_free char *what = xasprintf("task/%d/comm", th->tid);
  cleanup_free char *tcomm = NULL;

  yajl_gen_map_open(g);
  jput_int(g, "tid", th->itid);
  regs = th->regs;
  restart_fix(c, th->tid, &regs);
  jput_hex(g, "regs", &regs, sizeof regs);
  /* Nearly all zeros (2,341 of 2,432 bytes in a thread that never used
     AVX-512's registers): its zero runs make it a third of its hex. */
  if (jput_hex_runs(g, "xstate", th->xstate, th->xlen) && c->w->format < CREST_IMAGE_FORMAT_XRUNS)
    c->w->format = CREST_IMAGE_FORMAT_XRUNS;
  mask = th->sigmask; /* read by inject_state */
  jput_u64(g, "sigmask", mask);
  memset(&rc_, 0, sizeof rc_);
  if (ptrace(PTRACE_GET_RSEQ_CONFIGURATION, th->tid, sizeof rc_, &rc_) < 0)
    return crest_error_errno(err, "task %d: read rseq configuration", th->tid);
  jput_u64(g, "rseq", rc_.rseq_abi_pointer);
  jput_int(g, "rseq_size", rc_.rseq_abi_size);
  jput_u64(g, "rseq_sig", rc_.signature);
  if (syscall(SYS_get_robust_list, th->tid, &head, &hlen) < 0)
    return crest_error_errno(err, "task %d: get_robust_list", th->tid);
  jput_u64(g, "robust_list", head);
  jput_int(g, "robust_len", hlen);
  jput_u64(g, "clear_child_tid", th->clear_tid);
  jput_u64(g, "altstack_sp", th->alt_sp);
  jput_u64(g, "altstack_size", th->alt_size);
  jput_int(g, "altstack_flags", th->alt_flags);
  memset(&sa, 0, sizeof sa);
  if (syscall(SYS_sched_getattr, th->tid, &sa, sizeof sa, 0) < 0)
    return crest_error_errno(err, "task %d: sched_getattr", th->tid);
  jput_int(g, "sched_policy", sa.policy);
  jput_u64(g, "sched_flags", sa.flags);
  jput_int(g, "nice", sa.nice);
  jput_int(g, "sched_priority", sa.prio);
  jput_int(g, "uclamp_min", sa.umin);
  jput_int(g, "uclamp_max", sa.umax);
  if (dump_affinity(c, p, th, g, err) < 0 || read_proc(p->pid, what, &tcomm, err) < 0)
    return -1;
  tcomm[strcspn(tcomm, "\n")] = 0;
  jput_str(g, "comm", tcomm);
  put_attrs(c, prctl_put_thread(g, &th->pr));
  if (th->mpol_mode)
    {
      mpol_put(g, "mempolicy", th->mpol_mode, &th->mpol_nodes);
      if (c->w->format < CREST_IMAGE_FORMAT_AFFINITY)
        c->w->format = CREST_IMAGE_FORMAT_AFFINITY;
    }
  if (prctl_spec_set(&th->pr))
    {
      prctl_put_spec(g, &th->pr);
      if (c->w->format < CREST_IMAGE_FORMAT_AFFINITY)
        c->w->format = CREST_IMAGE_FORMAT_AFFINITY;
    }
  n = ptrace(PTRACE_PEEKSIGINFO, th->tid, &arg, si);
  if (n < 0)
    return crest_error_errno(err, "task %d: read pending signals", th->tid);
  *cont |= sig_put_pending(g, "pending", si, n);
  yajl_gen_map_close(g);
  return 0;
}

int
dump_process(struct dctx *c, struct dproc *p, yajl_gen g, crest_error_t *err)
{
  cleanup_free char *statb = NULL, *status = NULL, *auxv = NULL, *pers = NULL, *oom = NULL;
  cleanup_free char *cdf = NULL;
  char exe[PATH_MAX + 1], cwd[PATH_MAX + 1];
  unsigned long long f[64] = { 0 };
  size_t auxlen = 0;
  const char *s;
  char *q;
  bool cont_pending = false;

  if (p->zombie)
    return dump_zombie(c, p, g, err);
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
  if (dump_exe_cwd(c, p, exe, cwd, err) < 0)
    return -1;
  if (read_proc(p->pid, "personality", &pers, err) < 0
      || read_proc(p->pid, "oom_score_adj", &oom, err) < 0)
    return -1;
  {
    /* A kernel without core dumps (CONFIG_COREDUMP) has no filter. */
    cleanup_free char *path = xasprintf("/proc/%d/coredump_filter", p->pid);
    if ((access(path, F_OK) == 0 || errno != ENOENT)
        && read_proc(p->pid, "coredump_filter", &cdf, err) < 0)
      return -1;
  }
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
  if (p->ctty)
    {
      /* the session's controlling terminal, a pty of the tree (pty.c) */
      jput_int(g, "ctty", p->ctty);
      if (p->itpgid)
        jput_int(g, "tpgid", p->itpgid);
    }
  jput_str(g, "exe", exe);
  jput_str(g, "cwd", cwd);
  if (p->root_dir)
    jput_str(g, "root_dir", p->root_dir);
  s = status_field(status, "Umask");
  jput_int(g, "umask", s ? strtol(s, NULL, 8) : 022);
  jput_u64(g, "personality", strtoull(pers, NULL, 16));
  if (p->seccomp_filters)
    jput_int(g, "seccomp_filters", p->seccomp_filters);
  jput_int(g, "oom_score_adj", atoi(oom));
  /* A session leader's autogroup (the scheduler's group of its session,
     made anew by the restore's setsid): its nice value, when set. */
  if (p->pid == p->sid)
    {
      cleanup_free char *ag = NULL;
      const char *n;
      crest_error_t e = NULL;
      if (read_proc(p->pid, "autogroup", &ag, &e) == 0 && (n = strstr(ag, " nice "))
          && atoi(n + 6) != 0)
        {
          jput_int(g, "autogroup_nice", atoi(n + 6));
          if (c->w->format < CREST_IMAGE_FORMAT_AFFINITY)
            c->w->format = CREST_IMAGE_FORMAT_AFFINITY;
        }
      crest_error_release(&e); /* no autogroups in this kernel */
    }
  /* Recorded always; a reader of format 14 would ignore it, so an image
     whose value is not the kernel's default (0x33) is of format 15. */
  if (cdf)
    jput_u64(g, "coredump_filter", strtoull(cdf, NULL, 16));
  if (cdf && strtoull(cdf, NULL, 16) != 0x33 && c->w->format < CREST_IMAGE_FORMAT_AFFINITY)
    c->w->format = CREST_IMAGE_FORMAT_AFFINITY;
  put_attrs(c, prctl_put_process(g, &p->pr));
  if (p->pr.xcomp_perm && c->w->format < CREST_IMAGE_FORMAT_XCOMP)
    c->w->format = CREST_IMAGE_FORMAT_XCOMP;
  if (p->pr.ksm_any && c->w->format < CREST_IMAGE_FORMAT_KSM_ANY)
    c->w->format = CREST_IMAGE_FORMAT_KSM_ANY;
  if (creds_put(c, p, status, g, err) < 0 || put_rlimits(p, g, err) < 0)
    return -1;
  mem_put_mm(p, f, auxv, auxlen, g);
  if (sig_put_process(p, g, &cont_pending, err) < 0 || mem_dump(c, p, g, err) < 0)
    return -1;
  timers_put(p, g);
  if (p->mcl)
    jput_int(g, "mlockall", p->mcl);
  if ((p->ntimers || p->mcl) && c->w->format < CREST_IMAGE_FORMAT_TIMERS)
    c->w->format = CREST_IMAGE_FORMAT_TIMERS;
  files_put_fds(c, p, g);
  if (cpus_allowed(p->pid, &c->cpus_cache, &p->cpus, err) < 0)
    return crest_error_wrap(err, "task %d: the CPUs its cpuset allows", p->pid);
  jput_key(g, "threads");
  yajl_gen_array_open(g);
  for (size_t t = 0; t < p->nth; t++)
    if (dump_thread(c, p, &p->th[t], g, &cont_pending, err) < 0)
      return -1;
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
  put_exit_signal(c, p, g);
  if (p->stop_sig)
    {
      jput_int(g, "stop_signal", p->stop_sig);
      if (p != &c->p[0] && find_proc(c, p->ppid))
        jput_bool(g, "stop_reported", p->stop_reported);
      if (c->w->format < CREST_IMAGE_FORMAT_STOP)
        c->w->format = CREST_IMAGE_FORMAT_STOP;
    }
  yajl_gen_map_close(g);
  return 0;
}
