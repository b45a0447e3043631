/* crest: the restore reads tree.json. Every process, zombie and thread is
 * parsed and checked (the object files read their own records), every ID
 * is unique, every parent listed before its children; then the tree-wide
 * records: files, terminal, pipes, IPC. */
#include <config.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include "engine.h"
#include "engine-int.h"
#include "image.h"
#include "image-check.h"
#include "util.h"

#include "restore-int.h"

/* ---------- reading the image ---------- */

/* Thread TID's extended state XS (*LEN bytes) in this CPU's XSAVE layout:
   moved where the image records another (xsave.c); an image that records
   none (made before December 2026) is taken as it is when its size is
   this CPU's, and refused otherwise. *TILES: the dynamic components (AMX's
   tile data) it holds. */
static int
xstate_here(struct rctx *c, int tid, uint8_t *xs, size_t *len, uint64_t *tiles, crest_error_t *err)
{
  static uint8_t moved[XSTATE_MAX];
  const struct xsave_layout *here = xsave_layout_here();
  uint64_t bv;

  *tiles = 0;
  if (!here)
    return 0;
  if (!c->img->has_xsave && *len != here->size)
    return crest_error_make(err, ENOTSUP,
                            "thread %d: its extended state is %zu bytes, this CPU's %" PRIu32
                            ": the image was made on another CPU and does not record its XSAVE "
                            "layout",
                            tid, *len, here->size);
  if (c->img->has_xsave && !xsave_layout_same(&c->img->xsave, here))
    {
      if (here->size > sizeof moved)
        return crest_error_make(err, ENOTSUP, "this CPU's extended state is %" PRIu32 " bytes",
                                here->size);
      if (xsave_convert(&c->img->xsave, xs, *len, here, moved, err) < 0)
        return crest_error_wrap(err, "thread %d: made on another CPU", tid);
      memcpy(xs, moved, here->size);
      *len = here->size;
    }
  if (*len >= 520)
    memcpy(&bv, xs + 512, 8), *tiles = bv & here->xfd;
  return 0;
}

void *
plan_zalloc(struct rctx *c, size_t n)
{
  void *p = arena_alloc(&c->plan, n ? n : 1);
  if (!p)
    oom();
  return p;
}

static int
parse_thread(struct rctx *c, yajl_val v, struct rthread *t, crest_error_t *err)
{
  int64_t tid;
  const char *comm;
  yajl_val *items;
  long n;
  static uint8_t xs[XSTATE_MAX];
  /* "regs" and "xstate" are decoded here and never kept: jtree.c frees
     their text with the tree's nodes. Only crest's own process sets a
     thread's extended state (restore-finish.c): it is kept where no task
     inherits it (c->tracer). */
  if (jget_i64(v, "tid", &tid, err) < 0 || jget_hex(v, "regs", &t->regs, sizeof t->regs, err) < 0
      || jget_xhex_into(v, "xstate", c->img->format >= CREST_IMAGE_FORMAT_XRUNS, xs, sizeof xs,
                        &t->xlen, err)
             < 0)
    return -1;
  if (xstate_here(c, (int)tid, xs, &t->xlen, &t->tiles, err) < 0)
    return -1;
  if (!(t->xstate = arena_alloc(&c->tracer, t->xlen)))
    return crest_error_errno(err, "thread %d: memory for its extended state", (int)tid);
  memcpy(t->xstate, xs, t->xlen);
  if (jget_u64(v, "sigmask", &t->sigmask, err) < 0 || jget_u64(v, "rseq", &t->rseq, err) < 0
      || jget_i64(v, "rseq_size", &t->rseq_size, err) < 0
      || jget_u64(v, "rseq_sig", &t->rseq_sig, err) < 0
      || jget_u64(v, "robust_list", &t->robust, err) < 0
      || jget_u64(v, "robust_len", &t->robust_len, err) < 0
      || jget_u64(v, "clear_child_tid", &t->clear_tid, err) < 0
      || jget_u64(v, "altstack_sp", &t->alt_sp, err) < 0
      || jget_u64(v, "altstack_size", &t->alt_size, err) < 0
      || jget_i64(v, "altstack_flags", &t->alt_flags, err) < 0
      || jget_i64(v, "sched_policy", &t->policy, err) < 0
      || jget_u64(v, "sched_flags", &t->sched_flags, err) < 0
      || jget_i64(v, "nice", &t->nice, err) < 0 || jget_i64(v, "sched_priority", &t->prio, err) < 0
      || jget_i64(v, "uclamp_min", &t->umin, err) < 0
      || jget_i64(v, "uclamp_max", &t->umax, err) < 0 || jget_str(v, "comm", &comm, err) < 0)
    return -1;
  CHECK(tid > 0 && tid < (1 << 22), "thread id %lld out of range", (long long)tid);
  t->tid = tid;
  /* Every number in range before the restore narrows it to a kernel type. */
  CHECK(t->rseq_size >= 0 && t->rseq_size <= 4096 && t->rseq_sig <= UINT32_MAX
            && t->alt_flags >= INT32_MIN && t->alt_flags <= INT32_MAX && t->policy >= 0
            && t->policy <= 7 && t->nice >= -20 && t->nice <= 19 && t->prio >= 0 && t->prio <= 99
            && t->umin >= 0 && t->umin <= 1024 && t->umax >= 0 && t->umax <= 1024,
        "thread %d: rseq, altstack or scheduling value out of range", t->tid);
  snprintf(t->comm, sizeof t->comm, "%s", comm);
  if (has_key(v, "affinity"))
    {
      const char *list = NULL;
      if (jget_str(v, "affinity", &list, err) < 0)
        return -1;
      CHECK(cpulist_parse(list, &t->aff) == 0, "thread %d: bad CPU affinity", t->tid);
      t->has_aff = true;
    }
  if (mpol_parse(v, "mempolicy", c->img->format, &t->mpol_mode, &t->mpol_nodes, err) < 0)
    return crest_error_wrap(err, "thread %d", t->tid);
  if (has_key(v, "ioprio"))
    {
      if (jget_i64(v, "ioprio", &t->ioprio, err) < 0)
        return -1;
      /* class (3 bits) << 13 | data: RT, BE, IDLE (0-3) */
      CHECK(t->ioprio > 0 && t->ioprio < (4 << 13), "thread %d: bad I/O priority", t->tid);
      t->has_ioprio = true;
    }
  if (prctl_parse_thread(v, c->img->format, &t->pr, err) < 0)
    return crest_error_wrap(err, "thread %d", t->tid);
  n = jget_array(v, "pending", &items, err);
  CHECK(n >= 0 && n <= 64, "thread %d: bad pending signal list", t->tid);
  t->pending = plan_zalloc(c, (n + 1) * 128);
  for (long i = 0; i < n; i++)
    {
      yajl_val wrap = NULL;
      uint8_t *b;
      size_t len;
      if (!YAJL_IS_STRING(items[i]))
        return crest_error_make(err, EINVAL, "thread %d: bad pending signal", t->tid);
      {
        /* jget_hex wants an object: look the string up through a tiny one. */
        const char *k = "s";
        struct yajl_val_s obj;
        obj.type = yajl_t_object;
        obj.u.object.keys = &k;
        obj.u.object.values = &items[i];
        obj.u.object.len = 1;
        wrap = &obj;
        if (jget_hex_alloc(wrap, "s", 128, &b, &len, err) < 0)
          return -1;
      }
      if (len != 128)
        free(b);
      CHECK(len == 128, "thread %d: pending siginfo of %zu bytes", t->tid, len);
      memcpy(t->pending[i], b, 128);
      free(b);
    }
  t->npending = n;
  (void)c;
  return 0;
}

bool
has_key(yajl_val v, const char *key)
{
  for (size_t i = 0; YAJL_IS_OBJECT(v) && i < YAJL_GET_OBJECT(v)->len; i++)
    if (strcmp(v->u.object.keys[i], key) == 0)
      return true;
  return false;
}

static int
parse_rlimits(yajl_val v, struct rproc *p, crest_error_t *err)
{
  yajl_val *items;
  long n = jget_array(v, "rlimits", &items, err);
  CHECK(n == RLIM_NLIMITS, "process %d: %ld rlimits, expected %d", p->pid, n, RLIM_NLIMITS);
  for (long i = 0; i < n; i++)
    if (jget_u64(items[i], "cur", &p->rl[i][0], err) < 0
        || jget_u64(items[i], "max", &p->rl[i][1], err) < 0)
      return -1;
  return 0;
}

/* What a zombie of format 14 shows besides its IDs and exit status. */
static int
parse_zombie_state(struct rctx *c, yajl_val v, struct rproc *p, crest_error_t *err)
{
  static const char *const jk[] = { "sigblk", "sigign", "sigcgt" };
  yajl_val cr = yajl_tree_get(v, (const char *[]){ "creds", NULL }, yajl_t_object);
  int64_t nice;
  CHECK(c->img->format >= CREST_IMAGE_FORMAT_ZOMBIE && cr,
        "process %d: a zombie's state in an image of format %d, or without creds", p->pid,
        c->img->format);
  for (int k = 0; k < 3; k++)
    if (jget_u64(v, jk[k], &p->zsig[k], err) < 0)
      return -1;
  if (jget_i64(v, "nice", &nice, err) < 0 || creds_parse(cr, p, err) < 0
      || parse_rlimits(v, p, err) < 0)
    return -1;
  CHECK(nice >= -20 && nice <= 19, "process %d: nice %lld", p->pid, (long long)nice);
  p->znice = (int)nice;
  if (has_key(v, "personality"))
    {
      if (jget_u64(v, "personality", &p->personality, err) < 0)
        return -1;
      CHECK(p->personality <= UINT32_MAX, "process %d: personality out of range", p->pid);
      p->zpers = true;
    }
  p->zstate = true;
  return 0;
}

/* A zombie: its IDs and its exit status, and in format 14 what /proc
   shows of it. 1: V is one, 0: it is not, -1: bad. */
static int
parse_zombie(struct rctx *c, yajl_val v, struct rproc *p, crest_error_t *err)
{
  int64_t pid, ppid, pgid, sid;
  crest_error_t e2 = NULL;
  bool z = false;
  int64_t st;
  if (jget_bool(v, "zombie", &z, &e2) < 0)
    crest_error_release(&e2), z = false;
  if (z)
    {
      if (jget_i64(v, "pid", &pid, err) < 0 || jget_i64(v, "ppid", &ppid, err) < 0
          || jget_i64(v, "pgid", &pgid, err) < 0 || jget_i64(v, "sid", &sid, err) < 0
          || jget_i64(v, "exit_status", &st, err) < 0)
        return -1;
      CHECK(pid > 0 && pid < (1 << 22) && ppid > 0 && ppid < (1 << 22) && pgid >= 0
                && pgid < (1 << 22) && sid >= 0 && sid < (1 << 22),
            "process %lld: bad ids", (long long)pid);
      CHECK(st >= 0 && st <= 0xffff && (WIFEXITED(st) || WIFSIGNALED(st)),
            "process %lld: bad exit status %lld", (long long)pid, (long long)st);
      p->pid = pid, p->ppid = ppid, p->pgid = pgid, p->sid = sid;
      p->zombie = true;
      p->exit_status = (int)st;
      if (jget_str(v, "comm", &p->comm, err) < 0)
        return -1;
      if (has_key(v, "sigblk") && parse_zombie_state(c, v, p, err) < 0)
        return -1;
      return 1;
    }
  return 0;
}

/* "exit_signal" (format 21): the signal a process's parent gets when it
   exits, where not SIGCHLD; 0 is none. */
static int
parse_exit_signal(struct rctx *c, yajl_val v, struct rproc *p, crest_error_t *err)
{
  int64_t s;
  p->exit_sig = SIGCHLD;
  if (!has_key(v, "exit_signal"))
    return 0;
  if (jget_i64(v, "exit_signal", &s, err) < 0)
    return -1;
  CHECK(c->img->format >= CREST_IMAGE_FORMAT_EXIT_SIGNAL && s >= 0 && s <= 64,
        "process %d: exit_signal %lld (format %d)", p->pid, (long long)s, c->img->format);
  p->exit_sig = (int)s;
  return 0;
}

static int
parse_process(struct rctx *c, yajl_val v, struct rproc *p, crest_error_t *err)
{
  int64_t pid, ppid, pgid, sid, pers;
  yajl_val *items, cr = NULL, mm = NULL;
  long n;

  {
    int z = parse_zombie(c, v, p, err);
    if (z != 0)
      return z < 0 || parse_exit_signal(c, v, p, err) < 0 ? -1 : 0;
  }
  if (jget_i64(v, "pid", &pid, err) < 0 || jget_i64(v, "ppid", &ppid, err) < 0
      || jget_i64(v, "pgid", &pgid, err) < 0 || jget_i64(v, "sid", &sid, err) < 0
      || jget_str(v, "exe", &p->exe, err) < 0 || jget_str(v, "cwd", &p->cwd, err) < 0
      || jget_i64(v, "umask", &p->umask, err) < 0
      || jget_u64(v, "personality", &p->personality, err) < 0
      || jget_i64(v, "oom_score_adj", &p->oom, err) < 0
      || jget_str(v, "pages_file", &p->pages_file, err) < 0)
    return -1;
  (void)pers;
  CHECK(pid > 0 && pid < (1 << 22) && ppid >= 0 && ppid < (1 << 22) && pgid >= 0 && pgid < (1 << 22)
            && sid >= 0 && sid < (1 << 22),
        "process %lld: bad ids", (long long)pid);
  p->pid = pid, p->ppid = ppid, p->pgid = pgid, p->sid = sid;
  if (parse_exit_signal(c, v, p, err) < 0)
    return -1;
  for (size_t i = 0; i < YAJL_GET_OBJECT(v)->len; i++)
    {
      if (strcmp(v->u.object.keys[i], "creds") == 0)
        cr = v->u.object.values[i];
      if (strcmp(v->u.object.keys[i], "mm") == 0)
        mm = v->u.object.values[i];
      if (strcmp(v->u.object.keys[i], "root_dir") == 0)
        {
          yajl_val rd = v->u.object.values[i];
          CHECK(YAJL_IS_STRING(rd) && rd->u.string[0] == '/' && strlen(rd->u.string) < PATH_MAX,
                "process %d: root_dir is not an absolute path", p->pid);
          CHECK(c->img->format >= CREST_IMAGE_FORMAT_CHROOT,
                "process %d: root_dir in an image of format %d (it needs format %d)", p->pid,
                c->img->format, CREST_IMAGE_FORMAT_CHROOT);
          p->root_dir = rd->u.string;
        }
    }
  CHECK(cr && mm, "process %d: missing creds or mm", p->pid);
  if (creds_parse(cr, p, err) < 0)
    return -1;
  CHECK(img_path_ok(p->exe) && img_path_ok(p->cwd),
        "process %d: exe or cwd is not an absolute path", p->pid);
  CHECK(p->umask >= 0 && p->umask <= 0777 && p->oom >= -1000 && p->oom <= 1000
            && p->personality <= UINT32_MAX,
        "process %d: umask, oom_score_adj or personality out of range", p->pid);
  if (parse_rlimits(v, p, err) < 0)
    return -1;
  if (mem_parse_mm(mm, p, err) < 0)
    return -1;
  if (sig_parse_process(v, p, err) < 0)
    return -1;
  if (has_key(v, "coredump_filter"))
    {
      if (jget_u64(v, "coredump_filter", &p->coredump, err) < 0)
        return -1;
      CHECK(p->coredump <= 0x1ff, "process %d: coredump_filter %#" PRIx64 " out of range", p->pid,
            p->coredump);
      p->has_coredump = true;
    }
  if (has_key(v, "autogroup_nice"))
    {
      if (jget_i64(v, "autogroup_nice", &p->autogroup_nice, err) < 0)
        return -1;
      CHECK(p->autogroup_nice >= -20 && p->autogroup_nice <= 19 && p->sid == p->pid
                && c->img->format >= CREST_IMAGE_FORMAT_AFFINITY,
            "process %d: autogroup_nice %lld", p->pid, (long long)p->autogroup_nice);
    }
  if (has_key(v, "ctty"))
    {
      int64_t t, g = 0;
      if (jget_i64(v, "ctty", &t, err) < 0
          || (has_key(v, "tpgid") && jget_i64(v, "tpgid", &g, err) < 0))
        return -1;
      CHECK(t >= 1 && t <= (1 << 20) && g >= 0 && g < (1 << 22) && (!g || p->sid == p->pid),
            "process %d: ctty %lld, tpgid %lld", p->pid, (long long)t, (long long)g);
      p->ctty = (int)t, p->tpgid = (pid_t)g;
    }
  if (has_key(v, "mlockall"))
    {
      int64_t mcl;
      if (jget_i64(v, "mlockall", &mcl, err) < 0)
        return -1;
      CHECK(c->img->format >= CREST_IMAGE_FORMAT_TIMERS
                && (mcl == MCL_FUTURE || mcl == (MCL_FUTURE | MCL_ONFAULT)),
            "process %d: mlockall %lld (format %d)", p->pid, (long long)mcl, c->img->format);
      p->mcl = (int)mcl;
    }
  if (prctl_parse_process(v, c->img->format, &p->pr, err) < 0)
    return crest_error_wrap(err, "process %d", p->pid);
  if (has_key(v, "seccomp_filters"))
    {
      int64_t nf;
      if (jget_i64(v, "seccomp_filters", &nf, err) < 0)
        return -1;
      CHECK(nf >= 0 && nf <= 64, "process %d: seccomp_filters %lld", p->pid, (long long)nf);
      p->seccomp_filters = (int)nf;
    }
  if (has_key(v, "stop_signal"))
    {
      int64_t sg;
      if (jget_i64(v, "stop_signal", &sg, err) < 0)
        return -1;
      CHECK(sg == SIGSTOP || sg == SIGTSTP || sg == SIGTTIN || sg == SIGTTOU,
            "process %d: stop_signal %lld is not a stop signal", p->pid, (long long)sg);
      p->stop_sig = (int)sg;
    }
  if (has_key(v, "stop_reported"))
    {
      CHECK(p->stop_sig, "process %d: stop_reported without stop_signal", p->pid);
      if (jget_bool(v, "stop_reported", &p->stop_reported, err) < 0)
        return -1;
    }

  if (mem_parse_vmas(c, v, p, err) < 0 || mem_parse_pages(c, v, p, err) < 0
      || cow_parse(c, v, p, err) < 0)
    return -1;
  if (files_parse_fds(c, v, p, err) < 0)
    return -1;

  n = jget_array(v, "threads", &items, err);
  CHECK(n >= 1 && n <= 4096, "process %d: %ld threads", p->pid, n);
  p->th = plan_zalloc(c, n * sizeof *p->th);
  /* nth counts the threads parsed so far: free_ctx frees what they hold
     also when one fails. */
  for (long i = 0; i < n; i++)
    if (p->nth++, parse_thread(c, items[i], &p->th[i], err) < 0)
      return crest_error_wrap(err, "process %d", p->pid);
  CHECK(p->th[0].tid == p->pid, "process %d: first thread is %d", p->pid, p->th[0].tid);
  for (size_t i = 0; i < p->nth; i++)
    CHECK(!(p->th[i].tiles & ~p->pr.xcomp_perm),
          "process %d: thread %d holds AMX tile data (XSAVE components %#" PRIx64
          ") the process has no permission for",
          p->pid, p->th[i].tid, p->th[i].tiles);
  /* After the threads: a timer may signal one of them. */
  return timers_parse(v, c->img->format, p, err);
}

/* PIDs and TIDs are unique in the whole tree, threads of one process
   included: two tasks cannot be created with one ID. */
static int
check_ids_unique(struct rctx *c, crest_error_t *err)
{
  size_t n = 0;
  pid_t dup = 0;
  cleanup_free pid_t *ids = NULL;
  for (size_t i = 0; i < c->np; i++)
    n += c->p[i].zombie ? 1 : c->p[i].nth;
  ids = xmalloc((n + 1) * sizeof *ids);
  n = 0;
  for (size_t i = 0; i < c->np; i++)
    if (c->p[i].zombie)
      ids[n++] = c->p[i].pid;
    else
      for (size_t t = 0; t < c->p[i].nth; t++)
        ids[n++] = c->p[i].th[t].tid;
  if (img_ids_unique(ids, n, &dup) < 0)
    return crest_error_make(err, EINVAL, "image %s: tree.json: PID or TID %d appears twice",
                            c->o->image_dir, dup);
  return 0;
}

/* c->kids: each process's children (PARENT[i]: the index of process i's
   parent; rproc.nkids counted) laid out parent by parent, in image order. */
static void
index_children(struct rctx *c, const size_t *parent)
{
  size_t off = 0;
  for (size_t j = 0; j < c->np; j++)
    c->p[j].kid0 = off, off += c->p[j].nkids, c->p[j].nkids = 0;
  for (size_t i = 1; i < c->np; i++)
    {
      struct rproc *pp = &c->p[parent[i]];
      c->kids[pp->kid0 + pp->nkids++] = i;
    }
}

int
parse_tree(struct rctx *c, crest_error_t *err)
{
  yajl_val *items;
  long n;
  int64_t root;

  /* A namespace init's restore finishes in a helper it forks (restore.c:
     helper_fork), which needs them. */
  c->tracer.kind = c->o->as_ns_init ? ARENA_PRIVATE : ARENA_DONTFORK;
  c->plan.kind = ARENA_FILE;
  if (img_reader_json_tree(c->img, "tree.json", &c->jt, &c->tree, err) < 0)
    return -1;
  if (jget_i64(c->tree, "root", &root, err) < 0
      || (yajl_tree_get(c->tree, (const char *[]){ "session_users", NULL }, yajl_t_any)
          && jget_bool(c->tree, "session_users", &c->session_users, err) < 0)
      || (yajl_tree_get(c->tree, (const char *[]){ "shell_job", NULL }, yajl_t_any)
          && jget_bool(c->tree, "shell_job", &c->shell_job, err) < 0)
      || (yajl_tree_get(c->tree, (const char *[]){ "shell_job_fg", NULL }, yajl_t_any)
          && jget_i64(c->tree, "shell_job_fg", &c->shell_job_fg, err) < 0))
    return crest_error_wrap(err, "image %s: tree.json", c->o->image_dir);
  if (c->shell_job_fg && (!c->shell_job || c->shell_job_fg < 1 || c->shell_job_fg > (1 << 22)))
    return crest_error_make(err, EINVAL, "image %s: tree.json: shell_job_fg %lld", c->o->image_dir,
                            (long long)c->shell_job_fg);
  if (c->shell_job && c->o->as_ns_init)
    return crest_error_make(err, EINVAL,
                            "image %s: a shell job's (checkpoint --shell-job of a process tree), "
                            "not a container's",
                            c->o->image_dir);
  if (memfiles_parse(c, err) < 0)
    return -1;
  n = jget_array(c->tree, "processes", &items, err);
  if (n < 1 || n > 65536)
    return crest_error_make(err, EINVAL, "image %s: tree.json: bad process list", c->o->image_dir);
  c->p = plan_zalloc(c, n * sizeof *c->p);
  c->np = n;
  for (long i = 0; i < n; i++)
    if (parse_process(c, items[i], &c->p[i], err) < 0)
      return crest_error_wrap(err, "image %s: tree.json", c->o->image_dir);
  if (c->p[0].pid != root)
    return crest_error_make(err, EINVAL, "image %s: tree.json: root %lld is not the first process",
                            c->o->image_dir, (long long)root);
  if (check_ids_unique(c, err) < 0)
    return -1;
  /* Every parent is in the image and listed before its children. */
  size_t *parent = calloc(c->np, sizeof *parent);
  c->kids = calloc(c->np, sizeof *c->kids);
  if (!parent || !c->kids)
    {
      free(parent);
      return crest_error_make(err, ENOMEM, "restore: out of memory");
    }
  for (size_t i = 0; i < c->np; i++)
    {
      bool found = i == 0;
      if (c->p[i].zombie && i == 0)
        return crest_error_make(err, EINVAL, "image %s: tree.json: the root is a zombie",
                                c->o->image_dir);
      for (size_t j = 0; j < i && !found; j++)
        if (c->p[j].pid == c->p[i].ppid)
          {
            if (c->p[j].zombie)
              {
                free(parent);
                return crest_error_make(err, EINVAL,
                                        "image %s: tree.json: process %d has a zombie parent",
                                        c->o->image_dir, c->p[i].pid);
              }
            found = true;
            parent[i] = j;
            c->p[j].nkids++;
          }
      if (!found)
        {
          free(parent);
          return crest_error_make(err, EINVAL,
                                  "image %s: tree.json: parent %d of %d is not in the image",
                                  c->o->image_dir, c->p[i].ppid, c->p[i].pid);
        }
    }
  index_children(c, parent);
  free(parent);

  if (files_parse(c, err) < 0)
    return -1;
  if (tty_parse(c, err) < 0)
    return -1;
  if (pipes_parse(c, err) < 0)
    return -1;
  if (ipc_parse(c, err) < 0)
    return -1;
  return 0;
}
