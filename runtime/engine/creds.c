/* crest: credentials of a process: user and group IDs as the tree sees
 * them, supplementary groups, capabilities, securebits, no_new_privs. */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <grp.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/fsuid.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <unistd.h>
#include "dump-int.h"
#include "image-check.h"
#include "restore-int.h"
#include "blob/blob-abi.h"
#include "image.h"
#include "log.h"
#include "util.h"

static int
parse_ids(const char *s, long out[4])
{
  return s && sscanf(s, "%ld %ld %ld %ld", &out[0], &out[1], &out[2], &out[3]) == 4 ? 0 : -1;
}

/* Does a task of STATUS have IDs other than the container root's, or
   supplementary groups? (Its restore then changes them.) */
static bool
setid_needed(struct dctx *c, const char *status)
{
  long ids[4];
  const char *s;
  for (int k = 0; k < 2; k++)
    {
      if (parse_ids(status_field(status, k ? "Gid" : "Uid"), ids) < 0)
        return false;
      for (int i = 0; i < 4; i++)
        if (inner_id(c, k ? &c->gidmap : &c->uidmap, ids[i]) != 0)
          return true;
    }
  /* The groups the container's init got from the runtime (in a rootless
     container with one ID mapped, the caller's, which it may not drop) are
     the restorer's too: only others need a change. */
  {
    static char root_groups[1024];
    static pid_t of;
    const char *r;
    size_t n;
    if (of != c->root)
      {
        cleanup_free char *st = NULL;
        crest_error_t e = NULL;
        root_groups[0] = 0;
        if (read_proc(c->root, "status", &st, &e) == 0 && (r = status_field(st, "Groups")))
          snprintf(root_groups, sizeof root_groups, "%.*s", (int)strcspn(r, "\n"), r);
        crest_error_release(&e);
        of = c->root;
      }
    s = status_field(status, "Groups");
    n = s ? strcspn(s, "\n") : 0;
    return n != strlen(root_groups) || (n && memcmp(s, root_groups, n) != 0);
  }
}

/* The "creds" record of process P: IDs as the tree sees them, groups,
   capabilities, securebits, no_new_privs; STATUS is its /proc status. */
int
creds_put(struct dctx *c, struct dproc *p, const char *status, yajl_gen g, crest_error_t *err)
{
  const char *s;
  long ids[4], euid;
  jput_key(g, "creds");
  yajl_gen_map_open(g);
  if (parse_ids(status_field(status, "Uid"), ids) < 0)
    return crest_error_make(err, EINVAL, "task %d: cannot parse /proc status", p->pid);
  euid = inner_id(c, &c->uidmap, ids[1]);
  jput_key(g, "uids");
  yajl_gen_array_open(g);
  for (int i = 0; i < 4; i++)
    yajl_gen_integer(g, inner_id(c, &c->uidmap, ids[i]));
  yajl_gen_array_close(g);
  if (parse_ids(status_field(status, "Gid"), ids) < 0)
    return crest_error_make(err, EINVAL, "task %d: cannot parse /proc status", p->pid);
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
    uint64_t v[5];
    for (int i = 0; i < 5; i++)
      {
        s = status_field(status, caps[i]);
        if (!s)
          return crest_error_make(err, EINVAL, "task %d: cannot parse /proc status", p->pid);
        jput_u64(g, keys[i], v[i] = strtoull(s, NULL, 16));
      }
    if (!c->o->root_is_ns_init && !p->zombie && caps_restorable(p, euid, v, err) < 0)
      return -1;
  }
  if (c->o->no_setid_cap && setid_needed(c, status))
    return crest_error_make(err, ENOTSUP,
                            "task %d: runs as another user or group than the container's root, "
                            "or has supplementary groups: %s",
                            p->pid, c->o->no_setid_cap);
  jput_int(g, "securebits", p->securebits);
  s = status_field(status, "NoNewPrivs");
  jput_bool(g, "no_new_privs", s && atoi(s));
  yajl_gen_map_close(g);
  return 0;
}

/* The "creds" record CR of process P. */
int
creds_parse(yajl_val cr, struct rproc *p, crest_error_t *err)
{
  long n;
  static const char *ck[] = { "cap_inh", "cap_prm", "cap_eff", "cap_bnd", "cap_amb" };
  yajl_val *u;
  if (jget_array(cr, "uids", &u, err) != 4)
    return crest_error_make(err, EINVAL, "process %d: uids", p->pid);
  for (int i = 0; i < 4; i++)
    {
      CHECK(YAJL_IS_INTEGER(u[i]), "process %d: uids", p->pid);
      p->uids[i] = YAJL_GET_INTEGER(u[i]);
    }
  if (jget_array(cr, "gids", &u, err) != 4)
    return crest_error_make(err, EINVAL, "process %d: gids", p->pid);
  for (int i = 0; i < 4; i++)
    {
      CHECK(YAJL_IS_INTEGER(u[i]), "process %d: gids", p->pid);
      p->gids[i] = YAJL_GET_INTEGER(u[i]);
    }
  n = jget_array(cr, "groups", &u, err);
  CHECK(n >= 0 && n <= 65536, "process %d: groups", p->pid);
  p->groups = xzalloc((n + 1) * sizeof *p->groups);
  for (long i = 0; i < n; i++)
    {
      CHECK(YAJL_IS_INTEGER(u[i]) && YAJL_GET_INTEGER(u[i]) >= 0
                && YAJL_GET_INTEGER(u[i]) < UINT32_MAX,
            "process %d: groups", p->pid);
      p->groups[i] = YAJL_GET_INTEGER(u[i]);
    }
  p->ngroups = n;
  for (int i = 0; i < 5; i++)
    if (jget_u64(cr, ck[i], &p->caps[i], err) < 0)
      return -1;
  if (jget_i64(cr, "securebits", &p->securebits, err) < 0
      || jget_bool(cr, "no_new_privs", &p->nnp, err) < 0)
    return -1;
  for (int i = 0; i < 4; i++)
    CHECK(p->uids[i] >= 0 && p->uids[i] < UINT32_MAX && p->gids[i] >= 0 && p->gids[i] < UINT32_MAX,
          "process %d: a UID or GID out of range", p->pid);
  CHECK(p->securebits >= 0 && p->securebits <= 0xff, "process %d: securebits out of range", p->pid);
  return 0;
}
/* Do P's user or group IDs (real, effective, saved) differ from the
   caller's, the restorer's? Then the blob changes them (creds_setid_ops). */
bool
creds_change(const struct rproc *p)
{
  uid_t u[3];
  gid_t g[3];
  getresuid(&u[0], &u[1], &u[2]);
  getresgid(&g[0], &g[1], &g[2]);
  for (int i = 0; i < 3; i++)
    if (p->uids[i] != (int64_t)u[i] || p->gids[i] != (int64_t)g[i])
      return true;
  return false;
}

/* In the new task: credentials that are the same for the whole process
   (the blob sets each thread's own). The tree may not hold more
   capabilities than the restorer does.

   The user and group IDs change in the blob, last of all but the
   capabilities (creds_setid_ops): a change from root to another user
   clears the permitted and effective capabilities everything before needs
   (files, chroot, PR_SET_MM, clone3 with set_tid), resets the dumpable
   flag and the parent-death signal, and a task of other IDs than the
   restorer's can no longer be seized by it without CAP_SYS_PTRACE, which a
   container's restorer does not hold. Here only the supplementary groups
   and the file-system IDs are set (creds_fs): what the task does by path
   from now on (its cwd, its root) is done as the task would. */
void
creds_restore(struct rctx *c, int idx, const struct rproc *p)
{
  /* The tree may not hold more than the restorer does. */
  struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
  struct __user_cap_data_struct d[2];
  uint64_t prm;
  if (syscall(SYS_capget, &h, d) < 0)
    task_fail(c, idx, "process %d: capget: %s", p->pid, strerror(errno));
  prm = d[0].permitted | (uint64_t)d[1].permitted << 32;
  if ((p->caps[1] & ~prm) != 0)
    task_fail(c, idx,
              "process %d: held capabilities %#" PRIx64
              " at checkpoint, the restorer holds only %#" PRIx64,
              p->pid, p->caps[1], prm);
  if (p->securebits != prctl(PR_GET_SECUREBITS) && prctl(PR_SET_SECUREBITS, p->securebits) < 0)
    task_fail(c, idx, "process %d: set securebits %#llx: %s", p->pid, (long long)p->securebits,
              strerror(errno));
}

/* The supplementary groups and file-system IDs, before the task's work by
   path (cwd, root). A change of file-system IDs resets the dumpable flag
   (crest must still seize the task: set again; the blob's end and
   finish_process give the image's) and the parent-death signal. */
void
creds_fs(struct rctx *c, int idx, const struct rproc *p)
{
  gid_t cur[256];
  int n = getgroups(256, cur);
  bool same = n >= 0 && (size_t)n == p->ngroups;
  for (int i = 0; same && i < n; i++)
    same = cur[i] == p->groups[i];
  if (!same && setgroups(p->ngroups, p->groups) < 0)
    task_fail(c, idx, "process %d: set %zu supplementary groups: %s%s", p->pid, p->ngroups,
              strerror(errno), errno == EPERM ? " (it needs CAP_SETGID)" : "");
  if ((int64_t)setfsgid(-1) == p->gids[3] && (int64_t)setfsuid(-1) == p->uids[3])
    return;
  setfsgid(p->gids[3]);
  setfsuid(p->uids[3]);
  if ((int64_t)setfsgid(-1) != p->gids[3] || (int64_t)setfsuid(-1) != p->uids[3])
    task_fail(c, idx,
              "process %d: its file-system IDs %" PRId64 ":%" PRId64
              " cannot be given (it needs CAP_SETUID and CAP_SETGID)",
              p->pid, p->uids[3], p->gids[3]);
  prctl(PR_SET_DUMPABLE, 1);
  if (!(c->o->as_ns_init && idx == 0))
    prctl(PR_SET_PDEATHSIG, SIGKILL);
}

/* In the blob, each thread: its user and group IDs, before its
   capabilities are set (thread_tail_ops). SECBIT_KEEP_CAPS keeps the
   permitted set across the change from root (the effective set is cleared
   all the same, and the capset after raises it to the image's); it is put
   back as the image has it by creds_keepcaps_op, after the capset. */
void
creds_setid_ops(const struct rproc *p, struct oplist *l)
{
  const long locked = 1 << 5; /* SECBIT_KEEP_CAPS_LOCKED */
  if (!creds_change(p))
    return;
  if (!(p->securebits & locked))
    OP(l, SYS_prctl, PR_SET_KEEPCAPS, 1, 0, 0, 0, 0);
  OP(l, SYS_setresgid, p->gids[0], p->gids[1], p->gids[2], 0, 0, 0);
  OP(l, SYS_setresuid, p->uids[0], p->uids[1], p->uids[2], 0, 0, 0);
  op(l, SYS_setfsgid, BLOB_CHECK_NONE, 0, p->gids[3], 0, 0, 0, 0, 0);
  op(l, SYS_setfsuid, BLOB_CHECK_NONE, 0, p->uids[3], 0, 0, 0, 0, 0);
  OPEQ(l, SYS_setfsgid, p->gids[3], (uint64_t)-1, 0, 0, 0, 0, 0);
  OPEQ(l, SYS_setfsuid, p->uids[3], (uint64_t)-1, 0, 0, 0, 0, 0);
  /* The change made the task not dumpable, and crest, its tracer, could
     no longer read its memory (PTRACE_PEEKDATA checks that flag) without
     CAP_SYS_PTRACE: dumpable until finish_process gives the image's. Every
     thread sets it after its own change, so the last word is this one. */
  OP(l, SYS_prctl, PR_SET_DUMPABLE, 1, 0, 0, 0, 0);
}

/* P's inheritable, permitted and effective sets as capset(2) takes them (D[0], D[1]). */
void
creds_cap_data(const struct rproc *p, struct __user_cap_data_struct *d)
{
  for (int k = 0; k < 2; k++)
    {
      d[k].inheritable = (uint32_t)(p->caps[0] >> 32 * k);
      d[k].permitted = (uint32_t)(p->caps[1] >> 32 * k);
      d[k].effective = (uint32_t)(p->caps[2] >> 32 * k);
    }
}

/* A zombie of format 14, about to exit: its credentials as /proc showed
   them (its securebits do not show). Plain calls: no blob, no seize. */
void
creds_zombie(struct rctx *c, int idx, const struct rproc *p)
{
  struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
  struct __user_cap_data_struct d[2];
  restore_bounding(c, idx, p);
  creds_fs(c, idx, p);
  if (creds_change(p))
    {
      prctl(PR_SET_KEEPCAPS, 1);
      if (setresgid(p->gids[0], p->gids[1], p->gids[2]) < 0
          || setresuid(p->uids[0], p->uids[1], p->uids[2]) < 0)
        task_fail(c, idx, "process %d (a zombie): set its user and group IDs: %s", p->pid,
                  strerror(errno));
      setfsgid(p->gids[3]);
      setfsuid(p->uids[3]);
      prctl(PR_SET_KEEPCAPS, 0);
    }
  creds_cap_data(p, d);
  if (syscall(SYS_capset, &h, d) < 0)
    task_fail(c, idx, "process %d (a zombie): capset: %s", p->pid, strerror(errno));
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
    task_fail(c, idx, "process %d (a zombie): clear its ambient set: %s", p->pid, strerror(errno));
  for (int cap = 0; cap < 64; cap++)
    if ((p->caps[4] >> cap) & 1 && prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) < 0)
      task_fail(c, idx, "process %d (a zombie): raise ambient capability %d: %s", p->pid, cap,
                strerror(errno));
  if (p->nnp && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
    task_fail(c, idx, "process %d (a zombie): no_new_privs: %s", p->pid, strerror(errno));
}

/* ON: the task's effective IDs for a moment (a SysV segment of mode 0600
   of its user attached: shmat checks the effective IDs, not the file-system
   ones); else back to the restorer's, which the real UID, still the
   restorer's, allows, and which gives back the effective capabilities
   (from the permitted set). True when there was something to do. */
bool
creds_euid_ops(const struct rproc *p, struct oplist *l, bool on)
{
  if (!creds_change(p))
    return false;
  /* The real UID stays the restorer's: the permitted set is kept (only a
     change that leaves no root UID clears it). */
  if (on)
    {
      OP(l, SYS_setresgid, -1, p->gids[1], -1, 0, 0, 0);
      OP(l, SYS_setresuid, -1, p->uids[1], -1, 0, 0, 0);
    }
  else
    {
      OP(l, SYS_setresuid, -1, geteuid(), -1, 0, 0, 0);
      OP(l, SYS_setresgid, -1, getegid(), -1, 0, 0, 0);
      OP(l, SYS_prctl, PR_SET_DUMPABLE, 1, 0, 0, 0, 0);
    }
  return true;
}

void
creds_keepcaps_op(const struct rproc *p, struct oplist *l)
{
  const long keep = 1 << 4, locked = 1 << 5; /* SECBIT_KEEP_CAPS, _LOCKED */
  if (creds_change(p) && !(p->securebits & (keep | locked)))
    OP(l, SYS_prctl, PR_SET_KEEPCAPS, 0, 0, 0, 0, 0);
}

/* The restorer's opens by path that are denied to it are tried again with
   the file-system identity of each process of the image (image-check.c),
   while ON: its files are opened before any task exists. */
void
creds_open_as_tasks(struct rctx *c, bool on)
{
  static struct img_fsid *ids;
  size_t n = 0;
  img_set_fsids(NULL, 0);
  free(ids);
  ids = NULL;
  if (!on)
    return;
  ids = xzalloc((c->np + 1) * sizeof *ids);
  for (size_t i = 0; i < c->np; i++)
    {
      const struct rproc *p = &c->p[i];
      bool seen = p->zombie
                  || (p->uids[3] == (int64_t)setfsuid(-1) && p->gids[3] == (int64_t)setfsgid(-1));
      for (size_t k = 0; k < n && !seen; k++)
        seen = ids[k].uid == (uid_t)p->uids[3] && ids[k].gid == (gid_t)p->gids[3]
               && ids[k].ngroups == p->ngroups
               && memcmp(ids[k].groups, p->groups, p->ngroups * sizeof *p->groups) == 0;
      if (seen)
        continue;
      ids[n].uid = p->uids[3];
      ids[n].gid = p->gids[3];
      ids[n].groups = p->groups;
      ids[n].ngroups = p->ngroups;
      n++;
    }
  img_set_fsids(ids, n);
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

int
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
      /* A zombie that was not dumpable shows its namespaces to no one
         below root on kernels that keep a dead task's dumpable flag (6.18
         does): its own are of no use to a restore anyway. */
      if (stat(tp, &t) < 0)
        {
          if (c->p[i].zombie && errno == EACCES)
            continue;
          return crest_error_errno(err, "task %d: its user namespace", c->p[i].pid);
        }
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
int
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

/* The bounding set, set by the task itself (threads inherit it from the
   main thread's clone3 in the blob). The restorer's is the container's
   plus CAP_CHECKPOINT_RESTORE, so usually that one bit is all there is to
   drop. A stock kernel drops a bounding capability only for a task holding
   CAP_SETPCAP; a kernel with the project's series also drops
   CAP_CHECKPOINT_RESTORE, and only that one, for a task holding
   CAP_CHECKPOINT_RESTORE in its own user namespace, which every task does
   here: the capset that lowers its sets comes at the very end of the blob.
   Whether the kernel allows it is learned from the call itself, never from
   the kernel's version: EPERM leaves the bit in place (the documented gap,
   docs/engine.md) and the restore goes on as it always did; any other
   error is a failure. */
/* The calling process's bounding set, one bit a capability. */
static uint64_t
bounding_set(void)
{
  uint64_t have = 0;
  for (int cap = 0; cap < 64; cap++)
    {
      int r = prctl(PR_CAPBSET_READ, cap);
      if (r < 0)
        break; /* past the kernel's last capability */
      if (r == 1)
        have |= 1ULL << cap;
    }
  return have;
}

/* Every task starts with crest's bounding set: a parent drops from its own
   only once its children exist (task_main). Read once by crest before the
   first fork, rather than with 41 calls in each task. */
static uint64_t bset_have;
static bool bset_valid;

void
restore_bounding_prime(void)
{
  bset_have = bounding_set();
  bset_valid = true;
}

void
restore_bounding(struct rctx *c, int idx, const struct rproc *p)
{
  const uint64_t cr = 1ULL << CAP_CHECKPOINT_RESTORE;
  uint64_t have = bset_valid ? bset_have : bounding_set(), kept = 0;

  /* CAP_CHECKPOINT_RESTORE first: with only that one allowed, the other
     refusals must not decide anything about it. */
  for (int k = -1; k < 64; k++)
    {
      int cap = k < 0 ? CAP_CHECKPOINT_RESTORE : k;
      uint64_t bit = 1ULL << cap;
      if ((k >= 0 && cap == CAP_CHECKPOINT_RESTORE) || !(have & bit) || (p->caps[3] & bit))
        continue;
      if (prctl(PR_CAPBSET_DROP, cap) == 0)
        continue;
      if (errno != EPERM)
        task_fail(c, idx, "process %d: drop capability %d from the bounding set: %s", p->pid, cap,
                  strerror(errno));
      kept |= bit;
    }
  if (kept & cr)
    crest_debug("process %d: this kernel does not let a task drop CAP_CHECKPOINT_RESTORE from "
                "its bounding set without CAP_SETPCAP: it stays there (docs/engine.md)",
                p->pid);
  if (kept & ~cr)
    crest_debug("process %d: bounding set keeps %#" PRIx64
                " the task did not have: dropping them needs CAP_SETPCAP, which the "
                "restorer lacks",
                p->pid, kept & ~cr);
  if (p->caps[3] & ~have)
    crest_debug("process %d: bounding set lacks %#" PRIx64 " the task had: the restorer lacks them",
                p->pid, p->caps[3] & ~have);
}

/* The capabilities a restored task may hold (docs/engine.md, "Capabilities
   from the image"). An image is not signed: crest cannot tell the sets a
   task really had from sets edited in, so it bounds them by what the
   restore may give on its own authority. Container mode: what the
   configuration gives (the restorer's permitted and inheritable sets, less
   CAP_CHECKPOINT_RESTORE unless the configuration grants it). Process mode:
   the restorer's permitted and inheritable sets, unless the kernel marked
   this exec AT_SECURE: crest then holds its capabilities through its file
   capability, they are crest's and not the user's, and no task gets any. */
int
caps_bound(const struct crest_restore_opts *o, uint64_t *bound, const char **whose,
           crest_error_t *err)
{
  struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
  struct __user_cap_data_struct d[2];
  if (syscall(SYS_capget, &h, d) < 0)
    return crest_error_errno(err, "restore: capget");
  *bound = (uint64_t)(d[0].permitted | d[0].inheritable)
           | (uint64_t)(d[1].permitted | d[1].inheritable) << 32;
  *whose = "this restore does not hold";
  if (o->caps_from_config)
    {
      *whose = "the container's configuration does not give";
      if (!o->cr_granted)
        *bound &= ~(1ULL << CAP_CHECKPOINT_RESTORE);
      if (o->setpcap_added)
        *bound &= ~(1ULL << CAP_SETPCAP);
    }
  else if (getauxval(AT_SECURE))
    {
      *bound = 0;
      *whose = "the user running this restore does not hold (crest's own, from its file "
               "capability, are not for the tree)";
    }
  return 0;
}

/* Process mode: could P get CAP_CHECKPOINT_RESTORE back by itself, by
   executing a program? As root of its user namespace with the capability
   in its bounding set (root's execve takes the bounding set), or through
   its executable's file capabilities. The restorer holds the capability
   for the restore, so holding it says nothing about what the task may. */
/* Does crest run in the initial user namespace (its uid_map the identity
   of every ID)? In another one, its capabilities are over namespaces the
   user made, which the user holds as their root anyway. */
static bool
initial_userns(void)
{
  static int known = -1; /* read once: asked for every process of a tree */
  char line[128] = "";
  unsigned long a = 1, b = 1, n = 0;
  FILE *f;
  if (known >= 0)
    return known;
  if (!(f = fopen("/proc/self/uid_map", "re")))
    return (known = 1);
  if (!fgets(line, sizeof line, f) || sscanf(line, "%lu %lu %lu", &a, &b, &n) != 3)
    a = 0, b = 0, n = 4294967295UL;
  fclose(f);
  return (known = a == 0 && b == 0 && n == 4294967295UL);
}

static bool
regainable(long euid, uint64_t bnd, int securebits, const char *exe)
{
  const uint64_t cr = 1ULL << CAP_CHECKPOINT_RESTORE;
  struct vfs_ns_cap_data fc;
  ssize_t n;
  /* In a user namespace of the user's own, with bit 40 still in the
     task's bounding set: the capability is over that namespace's objects,
     which the user's root there may touch anyway. A task that kept its
     capabilities after leaving root (Squid as "proxy") gets it back
     (refused until December 2026, after the checkpoint had ended the
     tree); one that dropped it from its bounding set does not. */
  if ((bnd & cr) && !initial_userns())
    return true;
  if (euid == 0 && (bnd & cr) && !(securebits & (1 << 0) /* SECBIT_NOROOT */))
    return true;
  if (!exe) /* a zombie */
    return false;
  memset(&fc, 0, sizeof fc);
  n = getxattr(exe, "security.capability", &fc, sizeof fc);
  return n >= (ssize_t)XATTR_CAPS_SZ_2
         && (fc.data[CAP_CHECKPOINT_RESTORE / 32].permitted & (1U << CAP_CHECKPOINT_RESTORE % 32));
}

static bool
cr_regainable(const struct rproc *p)
{
  return regainable(p->uids[1], p->caps[3], p->securebits, p->exe);
}

/* Names of capabilities 0-40, for messages. */
static const char *const cap_names[] = {
  "CAP_CHOWN",
  "CAP_DAC_OVERRIDE",
  "CAP_DAC_READ_SEARCH",
  "CAP_FOWNER",
  "CAP_FSETID",
  "CAP_KILL",
  "CAP_SETGID",
  "CAP_SETUID",
  "CAP_SETPCAP",
  "CAP_LINUX_IMMUTABLE",
  "CAP_NET_BIND_SERVICE",
  "CAP_NET_BROADCAST",
  "CAP_NET_ADMIN",
  "CAP_NET_RAW",
  "CAP_IPC_LOCK",
  "CAP_IPC_OWNER",
  "CAP_SYS_MODULE",
  "CAP_SYS_RAWIO",
  "CAP_SYS_CHROOT",
  "CAP_SYS_PTRACE",
  "CAP_SYS_PACCT",
  "CAP_SYS_ADMIN",
  "CAP_SYS_BOOT",
  "CAP_SYS_NICE",
  "CAP_SYS_RESOURCE",
  "CAP_SYS_TIME",
  "CAP_SYS_TTY_CONFIG",
  "CAP_MKNOD",
  "CAP_LEASE",
  "CAP_AUDIT_WRITE",
  "CAP_AUDIT_CONTROL",
  "CAP_SETFCAP",
  "CAP_MAC_OVERRIDE",
  "CAP_MAC_ADMIN",
  "CAP_SYSLOG",
  "CAP_WAKE_ALARM",
  "CAP_BLOCK_SUSPEND",
  "CAP_AUDIT_READ",
  "CAP_PERFMON",
  "CAP_BPF",
  "CAP_CHECKPOINT_RESTORE",
};

/* Process mode, at checkpoint: would a restore by this same crest give
   task P its capability sets CAPS back (check_caps with caps_bound's
   bound)? A task that got a capability from its executable's file
   capability (a user's `ping`: CAP_NET_RAW) or kept one crest does not
   hold was checkpointed, and the tree ended, only for the restore to refuse
   it (until December 2026); now refused here, the tree running on. The
   restore still checks, against whatever crest restores it. EUID is the
   task's effective UID as crest sees it. */
int
caps_restorable(const struct dproc *p, long euid, const uint64_t caps[5], crest_error_t *err)
{
  static const char *const set[] = { "inheritable", "permitted", "effective", NULL, "ambient" };
  static uint64_t bound;
  static int known, secure;
  const uint64_t cr = 1ULL << CAP_CHECKPOINT_RESTORE;
  uint64_t b, any = caps[0] | caps[1] | caps[2] | caps[4];
  if (!known)
    {
      struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
      struct __user_cap_data_struct d[2];
      if (syscall(SYS_capget, &h, d) < 0)
        return crest_error_errno(err, "checkpoint: capget");
      bound = (uint64_t)(d[0].permitted | d[0].inheritable)
              | (uint64_t)(d[1].permitted | d[1].inheritable) << 32;
      if ((secure = getauxval(AT_SECURE) != 0)) /* crest's own, from its file capability */
        bound = 0;
      known = 1;
    }
  b = bound;
  if ((any & cr) && (b & cr))
    {
      cleanup_free char *exe = xasprintf("/proc/%d/exe", p->pid);
      if (!regainable(euid, caps[3], p->securebits, exe))
        b &= ~cr;
    }
  for (int k = 0; k < 5; k++)
    {
      uint64_t extra = set[k] ? caps[k] & ~b : 0;
      int cap = extra ? __builtin_ctzll(extra) : -1;
      if (cap >= 0)
        return crest_error_make(
            err, ENOTSUP,
            "task %d: its %s set has capability %d (%s), which %s: a restore by this crest "
            "could not give it back, cannot checkpoint it",
            p->pid, set[k], cap, cap < (int)ARRAY_SIZE(cap_names) ? cap_names[cap] : "?",
            extra & bound ? "the task could not regain by itself (it is not root with it in its "
                            "bounding set, its executable has no such file capability)"
            : secure      ? "this crest holds only through its own file capability, not for "
                            "the tree"
                          : "this crest does not hold");
    }
  return 0;
}

/* Every process's inheritable, permitted, effective and ambient sets lie
   within BOUND; one line naming the first capability that does not. */
int
check_caps(struct rctx *c, uint64_t bound, const char *whose, crest_error_t *err)
{
  static const char *const set[] = { "inheritable", "permitted", "effective", NULL, "ambient" };
  for (size_t i = 0; i < c->np; i++)
    {
      uint64_t b = bound;
      const char *who = whose;
      /* Asked once a process (its executable's file capabilities). */
      if ((!c->p[i].zombie || c->p[i].zstate) && !c->o->caps_from_config
          && (b & (1ULL << CAP_CHECKPOINT_RESTORE)) && !cr_regainable(&c->p[i]))
        {
          b &= ~(1ULL << CAP_CHECKPOINT_RESTORE);
          who = "the task could not regain by itself (it is not root with it in its bounding "
                "set, its executable has no such file capability)";
        }
      for (int k = 0; k < 5 && (!c->p[i].zombie || c->p[i].zstate); k++)
        {
          uint64_t extra = set[k] ? c->p[i].caps[k] & ~b : 0;
          int cap = extra ? __builtin_ctzll(extra) : -1;
          if (cap >= 0)
            return crest_error_make(err, EPERM,
                                    "image %s: process %d: its %s set has capability %d (%s), "
                                    "which %s",
                                    c->o->image_dir, c->p[i].pid, set[k], cap,
                                    cap < (int)ARRAY_SIZE(cap_names) ? cap_names[cap] : "?",
                                    extra & bound ? who : whose);
        }
    }
  return 0;
}
