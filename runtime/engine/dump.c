/* crest: the dump. Seize the tree, read what the kernel shows from outside,
 * inject a few syscalls for what only the task knows, copy memory in bulk,
 * write the image, then let the tree go or kill it. Any failure leaves the
 * tree running exactly as it was and no image behind. This file drives; the
 * injected calls are in dump-inject.c, each process's record in
 * dump-proc.c, the tree let go or killed in dump-release.c. */
#include <config.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "engine.h"
#include "engine-int.h"
#include "image.h"
#include "log.h"
#include "testhook.h"
#include "shmem.h"
#include "util.h"

#include "dump-int.h"
#include "sockets.h"
#include "sk-tcp.h"

/* Process mode: the restore makes the tree in the namespaces of the crest
   that restores it, so the root's must be those of the crest that
   checkpoints it, which a restore from the same place gives back (a
   container's, or --ns-init's, are made again by their caller). Until
   December 2026 a tree started with `unshare -n` (or -u, -i, -m) came back
   in crest's namespaces without a word: on the network it had been cut
   off from. */
static int
same_as_crest(struct dctx *c, crest_error_t *err)
{
  static const char *const ns[] = { "user", "mnt", "uts", "ipc", "net", "pid", "cgroup", "time" };
  for (size_t k = 0; k < ARRAY_SIZE(ns); k++)
    {
      struct stat r, self;
      cleanup_free char *rp = xasprintf("/proc/%d/ns/%s", c->root, ns[k]);
      cleanup_free char *sp = xasprintf("/proc/self/ns/%s", ns[k]);
      if (stat(sp, &self) < 0)
        continue;
      if (stat(rp, &r) < 0)
        return crest_error_errno(err, "task %d: its %s namespace", c->root, ns[k]);
      if (r.st_dev != self.st_dev || r.st_ino != self.st_ino)
        return crest_error_make(err, ENOTSUP,
                                "task %d: its %s namespace is not crest's, and a restore makes "
                                "the tree in the namespaces of the crest that restores it: cannot "
                                "checkpoint it (run crest in the tree's namespaces, as `nsenter "
                                "-t %d -a crest checkpoint ...`, or checkpoint its container)",
                                c->root, ns[k], c->root);
    }
  return 0;
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
  return c->o->root_is_ns_init ? 0 : same_as_crest(c, err);
}

/* Process mode: does a task of the tree trace a process outside it
   (`strace -p`, a debugger attached)? Its tracee shows the tracer's PID
   as TracerPid; one inside the tree was refused when it was seized (its
   tracer not crest). The kill would detach the tracee and a restore could
   not attach it again: the restored tracer would find it gone (strace:
   "wait4: No child processes"). Until December 2026 not asked. */
static int
traces_outside(struct dctx *c, crest_error_t *err)
{
  DIR *d = opendir("/proc");
  struct dirent *de;
  int rc = 0;
  if (!d)
    return crest_error_errno(err, "checkpoint: open /proc");
  while (rc == 0 && (de = readdir(d)))
    {
      char *end;
      long pid = strtol(de->d_name, &end, 10);
      DIR *t;
      struct dirent *te;
      if (*end || pid <= 0 || find_proc(c, (pid_t)pid))
        continue;
      {
        cleanup_free char *tp = xasprintf("/proc/%ld/task", pid);
        if (!(t = opendir(tp)))
          continue; /* gone meanwhile */
      }
      while (rc == 0 && (te = readdir(t)))
        {
          cleanup_free char *sp = xasprintf("task/%s/status", te->d_name);
          cleanup_free char *st = NULL;
          crest_error_t e = NULL;
          const struct dproc *tracer;
          const char *s;
          if (te->d_name[0] == '.' || read_proc((pid_t)pid, sp, &st, &e) < 0)
            {
              crest_error_release(&e);
              continue;
            }
          if ((s = status_field(st, "TracerPid")) && atoi(s) > 0
              && (tracer = find_proc(c, atoi(s))))
            rc = crest_error_make(err, ENOTSUP,
                                  "task %d traces process %ld (thread %s) outside the tree "
                                  "(ptrace: a debugger, strace -p), which a restore could not "
                                  "attach again: cannot checkpoint it",
                                  tracer->pid, pid, te->d_name);
        }
      closedir(t);
    }
  closedir(d);
  return rc;
}

void
dump_tcp_release(struct dctx *c, bool killed)
{
  for (size_t i = 0; i < c->ntcp_held; i++)
    {
      if (!killed && tcp_conn_unrepair(c->tcp_held[i].fd, c->tcp_held[i].reuse) < 0)
        crest_warn("checkpoint: a TCP connection could not be taken out of repair mode: %s",
                   strerror(errno));
      close(c->tcp_held[i].fd);
    }
  free(c->tcp_held);
  c->tcp_held = NULL;
  c->ntcp_held = 0;
}

static void
free_ctx(struct dctx *c)
{
  free(c->rs);
  for (size_t i = 0; i < c->np; i++)
    {
      for (size_t t = 0; t < c->p[i].nth; t++)
        free(c->p[i].th[t].xstate);
      free(c->p[i].th);
      free(c->p[i].root_dir);
      free(c->p[i].timers);
      free(c->p[i].mpols);
      free(c->p[i].pages_name);
      free(c->p[i].runs);
      if (c->p[i].pf_map)
        munmap((void *)c->p[i].pf_map, c->p[i].pf_len);
      free_vmas(c->p[i].maps, c->p[i].nmaps);
    }
  if (c->topfd >= 0)
    close(c->topfd);
  free(c->p);
  free(c->ptys);
  for (size_t i = 0; i < c->nf; i++)
    free(c->f[i].path), free(c->f[i].data), free(c->f[i].priv), free(c->f[i].u.ext);
  free(c->f);
  for (size_t i = 0; i < c->npp; i++)
    free(c->pp[i].data), free(c->pp[i].path);
  free(c->pp);
  shm_free(&c->shm);
  free(c->cpus_cache.cgroup);
  mapped_files_free(c);
  ipc_free(c->ipc);
  free(c->fds);
  broker_stop();
}

/* What the kernel shows of every task, from outside and through injected
   calls, and its descriptors, pipes and shared memory objects. */
static int
dump_objects(struct dctx *c, crest_error_t *err)
{
  for (size_t i = 0; i < c->np; i++)
    {
      struct dproc *p = &c->p[i];
      if (p->zombie)
        continue;
      for (size_t t = 0; t < p->nth; t++)
        {
          p->th[t].xstate = xmalloc(XSTATE_MAX);
          if (pt_getregs(p->th[t].tid, &p->th[t].regs, err) < 0
              || pt_getxstate(p->th[t].tid, p->th[t].xstate, &p->th[t].xlen, err) < 0)
            return -1;
          /* A call injected into code running in a 32-bit segment (a far
             jump away from the 64-bit one) would be read as another call,
             or fault and kill the task. */
          if (p->th[t].regs.cs != USER_CS_64)
            return crest_error_make(err, ENOTSUP,
                                    "task %d: thread %d runs 32-bit code (code segment %#llx): "
                                    "crest checkpoints 64-bit code only",
                                    p->pid, p->th[t].tid, (unsigned long long)p->th[t].regs.cs);
        }
    }
  /* Before a call is injected: a task under a filter of its own (or in
     strict mode) could be killed by one; the container's profile has been
     checked by the caller against the calls the dump injects. */
  for (size_t i = 0; i < c->np; i++)
    if (!c->p[i].zombie
        && seccomp_dump_check(&c->p[i], c->o->seccomp_filters, &c->p[i].seccomp_filters, err) < 0)
      return -1;
  {
    int r;
    pt_wait_scope(true);
    r = inject_tree(c, err);
    pt_wait_scope(false);
    if (r < 0 || interrupted(err) < 0)
      return -1;
  }
  for (size_t i = 0; i < c->np; i++)
    if (!c->p[i].zombie && dump_fds(c, &c->p[i], err) < 0)
      return -1;
  if (ipc_pending(c, NULL, NULL, NULL, 0, 0, err) < 0)
    return -1;
  if (dump_fault("files", err) < 0 || dump_pipes(c, err) < 0 || files_resolve(c, err) < 0)
    return -1;
  for (size_t i = 0; i < c->np; i++)
    if (pty_ctty_dump(c, &c->p[i], err) < 0)
      return -1;
  /* Memory objects are shared across the tree: every mapping of each is
     known before the first is saved. */
  for (size_t i = 0; i < c->np; i++)
    if (!c->p[i].zombie && shm_collect(&c->shm, c->p[i].pid, err) < 0)
      return -1;
  if (shm_outside(&c->shm, err) < 0)
    return -1;
  /* An unlinked file comes back as a new file for its descriptors and a
     memfd for its mappings: they would no longer share its bytes. */
  for (size_t i = 0; i < c->nf; i++)
    if (c->f[i].unlinked && shm_find(&c->shm, c->f[i].dev, c->f[i].ino))
      return crest_error_make(err, ENOTSUP,
                              "task %d: fd %d (%s): an unlinked file that is also mapped, cannot "
                              "checkpoint it",
                              c->f[i].pid, c->f[i].fd, c->f[i].path);
  c->ms_objects = ms_since(&c->t0);
  return 0;
}

/* tree.json: the processes, their files and pipes, the terminal. */
static int
write_tree(struct dctx *c, crest_error_t *err)
{
  yajl_gen g;
  int rc = -1;

  /* Not indented: for 200 processes the indentation was 2 MB of a 4.5 MB
     file, parsed by every restore before it creates anything (`jq .`
     shows it indented). */
  g = yajl_gen_alloc(NULL);
  yajl_gen_map_open(g);
  jput_int(g, "root", c->p[0].ipid);
  jput_bool(g, "root_is_ns_init", c->o->root_is_ns_init);
  if (c->session_is_users)
    jput_bool(g, "session_users", true);
  if (c->shell_job_used)
    {
      jput_bool(g, "shell_job", true);
      if (c->shell_job_fg)
        jput_int(g, "shell_job_fg", c->shell_job_fg);
      if (c->w->format < CREST_IMAGE_FORMAT_SHELL_JOB)
        c->w->format = CREST_IMAGE_FORMAT_SHELL_JOB;
    }
  if (c->o->cgroup_path)
    jput_str(g, "cgroup", c->o->cgroup_path);
  jput_key(g, "processes");
  yajl_gen_array_open(g);
  for (size_t i = 0; i < c->np; i++)
    {
      if (dump_process(c, &c->p[i], g, err) < 0 || interrupted(err) < 0)
        goto fail;
      if (kill(c->p[i].pid, 0) < 0)
        {
          crest_error_make(err, ESRCH, "task %d: exited during the checkpoint", c->p[i].pid);
          goto fail;
        }
    }
  yajl_gen_array_close(g);
  files_put(c, g);
  pipes_put(c, g);
  tty_put(c, g);
  if (ipc_put(c, g) && c->w->format < CREST_IMAGE_FORMAT_IPC)
    c->w->format = CREST_IMAGE_FORMAT_IPC;
  if (shm_put(&c->shm, g) && c->w->format < CREST_IMAGE_FORMAT_MEMFILES)
    c->w->format = CREST_IMAGE_FORMAT_MEMFILES;
  yajl_gen_map_close(g);
  if (img_write_json(c->w, "tree.json", g, err) < 0)
    goto fail;
  if (c->has_uts)
    {
      yajl_gen_free(g);
      g = yajl_gen_alloc(NULL);
      yajl_gen_map_open(g);
      jput_str(g, "nodename", c->uts[0]);
      jput_str(g, "domainname", c->uts[1]);
      yajl_gen_map_close(g);
      if (img_write_json(c->w, "uts.json", g, err) < 0)
        goto fail;
    }
  c->ms_tree = ms_since(&c->t0);
  rc = 0;
fail:
  yajl_gen_free(g);
  return rc;
}

/* Has task PID exited (or can its state no longer be read)? */
static bool
task_gone(pid_t pid)
{
  cleanup_free char *st = NULL;
  crest_error_t e2 = NULL;
  const char *s;
  if (read_proc(pid, "status", &st, &e2) < 0 || !(s = status_field(st, "State")) || *s == 'Z'
      || *s == 'X')
    {
      crest_error_release(&e2);
      return true;
    }
  return false;
}

static int
check_alive(struct dctx *c, crest_error_t *err)
{
  /* A task that died while we worked: the image would be inconsistent. */
  for (size_t i = 0; i < c->np; i++)
    {
      if (c->p[i].zombie)
        {
          /* Reaped meanwhile: its parent's wait() already happened. */
          if (kill(c->p[i].pid, 0) < 0)
            return crest_error_make(err, ESRCH, "task %d: reaped during the checkpoint",
                                    c->p[i].pid);
          continue;
        }
      if (task_gone(c->p[i].pid))
        return crest_error_make(err, ESRCH, "task %d: exited during the checkpoint", c->p[i].pid);
    }
  return 0;
}

/* Whatever failed, a task that died meanwhile is the reason to report. */
static void
exit_reason(struct dctx *c, crest_error_t *err)
{
  for (size_t i = 0; i < c->np; i++)
    {
      crest_error_t e2 = NULL;
      if (c->p[i].zombie)
        continue;
      /* A leader gone before its other threads shows Z too: that was
         the reason given (pstree_check_leader), not an exit. */
      if (pstree_check_leader(c->p[i].pid, &e2) < 0)
        {
          crest_error_release(&e2);
          continue;
        }
      if (task_gone(c->p[i].pid))
        {
          if (*err)
            {
              cleanup_free char *why = crest_error_text(*err);
              crest_debug("checkpoint: %s", why);
            }
          crest_error_release(err);
          crest_error_make(err, ESRCH, "task %d: exited during the checkpoint", c->p[i].pid);
          break;
        }
    }
}

/* The dump failed and the tree is released: a held signal may now do what
   it was sent for, after the error line is out. Drop ours from the pending
   set only by restoring the mask in the caller's hands. */
static void
say_held_signal(const sigset_t *hold, crest_error_t *err)
{
  sigset_t pend;
  sigpending(&pend);
  for (int sg = 1; sg < 32; sg++)
    if (sigismember(hold, sg) && sigismember(&pend, sg))
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

/* A complete checkpoint: what it left out, and with the test hook
   CREST_STATS its figures and phases, on stderr. */
static void
say_done(const struct dctx *c)
{
  /* Once, not at each try (sk-inet.c). */
  if (c->inflight_left)
    crest_warn("checkpoint: %u connection(s) queued on listening TCP sockets, not accepted yet, "
               "were left out (%s): their clients are reset as the tree ends",
               c->inflight_left, c->o->skip_in_flight ? "--skip-in-flight" : "--tcp-close");
  if (!crest_test_knob("CREST_STATS"))
    return;
  fprintf(stderr,
          "crest: checkpoint stats: processes %zu, memory bytes %" PRIu64
          ", process_vm_readv calls %" PRIu64
          "; ms from the start: seized %.1f, objects %.1f (of which pagemap %.1f, copy out "
          "%.1f, hash and hand-over %.1f, close and fsync %.1f), tree %.1f, committed %.1f, "
          "released %.1f\n",
          c->np, c->pages_bytes, c->readv_calls, c->ms_seized, c->ms_objects, c->ms_plan,
          c->ms_readv, c->ms_out, c->ms_close, c->ms_tree, c->ms_commit, ms_since(&c->t0));
}

/* Signals that would end crest held (HOLD) until the tree is let go;
   where each thread waits read while it still does (restart_scan); then
   the tree frozen, where the caller gives a freezer. */
static int
hold_and_freeze(struct dctx *c, sigset_t *hold, sigset_t *old_mask, bool *frozen,
                crest_error_t *err)
{
  sigemptyset(hold);
  sigaddset(hold, SIGINT);
  sigaddset(hold, SIGTERM);
  sigaddset(hold, SIGHUP);
  sigaddset(hold, SIGQUIT);
  sigprocmask(SIG_BLOCK, hold, old_mask);
  restart_scan(c);
  if (c->o->freeze && c->o->freeze(c->o->freeze_data, c->root, CREST_FREEZE_ON, err) < 0)
    {
      sigprocmask(SIG_SETMASK, old_mask, NULL);
      return -1;
    }
  *frozen = c->o->freeze != NULL;
  return 0;
}

/* The dump itself, in the tracer (crest_engine_dump runs it in a worker
   process: dump-guard.c). */
int
dump_tree_here(pid_t root, const struct crest_dump_opts *o, crest_error_t *err)
{
  struct dctx c;
  int rc = -1;
  bool frozen = false;
  const char *fault = crest_test_knob("CREST_FAULT");

  sigset_t hold, old_mask;

  memset(&c, 0, sizeof c);
  c.o = o;
  c.root = root;
  c.topfd = -1;
  c.own_session_key = keys_own_session();
  clock_gettime(CLOCK_MONOTONIC, &c.t0);
  if (root <= 0)
    return crest_error_make(err, EINVAL, "checkpoint: bad PID %d", root);
  if (kill(root, 0) < 0)
    return crest_error_errno(err, "checkpoint: task %d", root);
  /* Before the tree is stopped: the parent images are read and checked. */
  if ((o->pre_dump && soft_dirty_probe(err) < 0) || (o->parent_path && chain_load(&c, err) < 0))
    {
      chain_free(&c);
      return -1;
    }
  if (hold_and_freeze(&c, &hold, &old_mask, &frozen, err) < 0)
    {
      free(c.rs);
      chain_free(&c);
      return -1;
    }
  if (frozen && dump_fault("frozen", err) < 0)
    goto out;
  if (img_writer_open(o->image_dir, &c.w, err) < 0)
    goto out;
  if (c.chain)
    chain_name_parent(&c);
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
  c.ms_seized = ms_since(&c.t0);
  if (ns_ids(&c, err) < 0 || (c.chain && chain_check_root(&c, err) < 0))
    goto out;
  if (o->pre_dump)
    {
      /* The pages are copied once the tree runs on (predump_finish). */
      rc = predump_scan(&c, err);
      goto out;
    }
  if (user_ns(&c, err) < 0 || same_namespaces(&c, err) < 0
      || (!o->root_is_ns_init && traces_outside(&c, err) < 0) || dump_roots(&c, err) < 0
      || check_groups(&c, err) < 0 || tcp_orphans_check(&c, err) < 0
      || (o->root_is_ns_init && check_strangers(&c, err) < 0))
    goto out;
  if (o->root_is_ns_init)
    tty_find(&c);

  if (dump_objects(&c, err) < 0)
    goto out;
  if (fault && strcmp(fault, "dump-signal") == 0)
    kill(getpid(), SIGTERM); /* test hook: crest is told to stop mid-dump */
  if (fault && strcmp(fault, "dump-task-exit") == 0 && c.np > 1)
    {
      /* Test hook: a task of the tree dies in the middle of the dump. */
      kill(c.p[c.np - 1].pid, SIGKILL);
    }

  for (size_t i = 0; i < o->n_extra_files; i++)
    if (img_write_file(c.w, o->extra_files[i].name, o->extra_files[i].data, o->extra_files[i].len,
                       err)
        < 0)
      goto out;
  if (write_tree(&c, err) < 0)
    goto out;
  if (check_alive(&c, err) < 0)
    goto out;
  {
    int format = 1;
    for (size_t i = 0; i < c.np; i++)
      if (c.p[i].root_dir)
        format = CREST_IMAGE_FORMAT_CHROOT;
    if (interrupted(err) < 0 || chain_verified(&c, err) < 0
        || img_writer_commit(c.w, o->config_digest, format, err) < 0
        || dump_fault("committed", err) < 0)
      goto out;
  }
  crest_debug("checkpoint: %" PRIu64 " bytes of memory in %" PRIu64 " process_vm_readv calls",
              c.pages_bytes, c.readv_calls);
  c.ms_commit = ms_since(&c.t0);
  rc = 0;
out:
  if (rc < 0)
    exit_reason(&c, err);
  if (frozen && !(rc == 0 && !o->leave_running && !o->pre_dump))
    put_back_freezer(&c, &frozen, &rc, err);
  if (!(rc == 0 && !o->leave_running && !o->pre_dump))
    dump_tcp_release(&c, false);
  {
    crest_error_t e2 = NULL, thaw = NULL;
    if (release_tree(&c, rc == 0 && !o->leave_running && !o->pre_dump, &frozen, &thaw, &e2) < 0)
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
  dump_tcp_release(&c, true); /* the tree is gone (or they were released above) */
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
  if (rc == 0 && o->pre_dump && predump_finish(&c, err) < 0)
    rc = -1;
  if (rc == 0)
    say_done(&c);
  img_writer_free(c.w);
  chain_free(&c);
  free_ctx(&c); /* stops the broker too */
  if (c.progress)
    crest_progress("checkpoint of %d: %s", root, rc == 0 ? "done" : "failed");
  if (rc < 0)
    say_held_signal(&hold, err);
  sigprocmask(SIG_SETMASK, &old_mask, NULL);
  return rc;
}
