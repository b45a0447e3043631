/* crest: the restore. Read and check the image, recreate every task with its
 * PID (clone3 + set_tid, or ns_last_pid), let each one rebuild its address
 * space through the restorer blob, then set every thread's registers with
 * ptrace, unmap the blob and let the tree go. All or nothing. */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/futex.h>
#include <linux/sched.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/auxv.h>
#include <sys/file.h>
#include <sys/xattr.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <asm/prctl.h>
#include <termios.h>
#include <unistd.h>
#include "engine.h"
#include "engine-int.h"
#include "image.h"
#include "image-check.h"
#include "kernel-abi.h"
#include "log.h"
#include "testhook.h"
#include "util.h"
#include "blob/blob-abi.h"

#define PAGE 4096UL
#define TASK_TOP 0x7ffffffff000UL
#define SVC_MIN 100
#define THREAD_STACK (32 * 1024)
#define MAIN_STACK (64 * 1024)

#ifndef PR_SET_MM_MAP
#define PR_SET_MM 35
#define PR_SET_MM_MAP 14
#endif
struct mm_map
{
  uint64_t start_code, end_code, start_data, end_data, start_brk, brk, start_stack, arg_start,
      arg_end, env_start, env_end;
  uint64_t auxv;
  uint32_t auxv_size;
  uint32_t exe_fd;
};

struct rthread
{
  pid_t tid;
  struct user_regs_struct regs;
  uint8_t *xstate;
  size_t xlen;
  uint64_t sigmask, rseq, rseq_sig, robust, robust_len, clear_tid, alt_sp, alt_size;
  int64_t rseq_size, alt_flags, policy, nice, prio, umin, umax;
  uint64_t sched_flags;
  char comm[16];
  uint8_t (*pending)[128];
  size_t npending;
  bool parked;
  struct prctl_thread pr;
};

struct rvma
{
  uint64_t start, end, pgoff;
  int prot;
  bool shared;
  char kind[16];
  const char *path;
  uint64_t file_size;
  const char *data; /* memfile: the image file with the object's bytes */
  int svc;          /* file mappings: the descriptor the blob maps */
  uint32_t madv;    /* VMF_* bits (vmflags.c) */
};

struct rrun
{
  uint64_t vaddr, len, off;
};

struct rfd
{
  int fd;
  bool cloexec;
  int file;
  struct lock_set locks; /* POSIX locks, taken by the blob (locks.c) */
};

struct rproc
{
  pid_t pid, ppid, pgid, sid;
  const char *exe, *cwd;
  const char *root_dir; /* its chroot, a path in the tree's root; NULL: none */
  int64_t umask, oom;
  struct prctl_proc pr;
  uint64_t personality;
  int64_t uids[4], gids[4];
  gid_t *groups;
  size_t ngroups;
  uint64_t caps[5]; /* inh prm eff bnd amb */
  int64_t securebits;
  bool nnp;
  uint64_t rl[RLIM_NLIMITS][2];
  struct mm_map mm;
  uint8_t *auxv;
  size_t auxv_len;
  struct ksigaction sa[65];
  uint64_t itimer[3][4];
  uint8_t (*shared_pending)[128];
  size_t nshared_pending;
  struct rvma *vmas;
  size_t nvmas;
  struct rrun *runs;
  size_t nruns;
  const char *pages_file;
  int pages_svc, exe_svc;
  struct rfd *fds;
  size_t nfds;
  struct rthread *th;
  size_t nth;
  bool zombie;      /* exited before the checkpoint, not yet waited for */
  int exit_status;  /* then: the status its parent's wait() gets */
  const char *comm; /* and its name */
  /* In a group stop at checkpoint: its stop signal (else 0), and whether
     its parent had already collected that stop with waitpid(WUNTRACED). */
  int stop_sig;
  bool stop_reported;
  /* at restore time */
  pid_t real;
  uint64_t base, size;
  bool seized;
};

struct rfile
{
  int id;
  const char *type, *path, *data;
  int flags;
  int64_t pos;
  uint64_t pipe;
  bool read_end;
  int seals; /* memfd: F_ADD_SEALS once every descriptor and mapping exists */
  int svc;
  int stdio; /* tty: the lowest descriptor 0-2 on it in the image, or -1 */
  struct unlinked_info u;
  struct unlinked_info deleted_dir; /* present: a directory removed while open */
  struct lock_set locks;            /* flock and OFD locks, taken by crest (locks.c) */
};

struct rpipe
{
  uint64_t ino;
  int64_t size;
  const char *data, *path;
  int r, w;
  bool no_r, no_w;       /* that end was closed everywhere: closed again */
  bool r_taken, w_taken; /* an open file description of the tree has it */
};

struct rctx
{
  const struct crest_restore_opts *o;
  struct img_reader *img;
  yajl_val tree;
  struct rproc *p;
  size_t np;
  struct rfile *f;
  size_t nf;
  struct rpipe *pp;
  size_t npp;
  int svc_base, svc_next;
  int stdio_svc[3];
  /* The container's terminal (tree.json "terminal"): its settings, and the
     restore's own terminal (/dev/tty) to give them to. */
  bool has_term;
  struct termios tio;
  struct winsize ws;
  pid_t term_fg; /* foreground process group to set, 0: none */
  int term_svc;
  int nslp_fd;
  bool use_nslp;
  int report[2];
  int32_t *go;
  struct
  {
    const char *data;
    int svc;
  } * mf; /* memory files made so far, shared by every mapping of one */
  size_t nmf;
  bool progress;
  struct timespec t0;
  /* Container mode: the restorer itself, as the image's init, fails back
     into crest_engine_restore so that its caller can report the reason
     (when init exits, the PID namespace and every line it would print go). */
  sigjmp_buf *init_fail;
  char init_msg[240];
};

struct report
{
  char kind; /* 'R' ready, 'E' error */
  int32_t idx;
  int32_t pid;
  uint64_t base, size;
  char msg[240];
};

/* ---------- reading the image ---------- */

#define CHECK(cond, ...)                                                                           \
  do                                                                                               \
    {                                                                                              \
      if (!(cond))                                                                                 \
        return crest_error_make(err, EINVAL, __VA_ARGS__);                                         \
    }                                                                                              \
  while (0)

static int
parse_thread(struct rctx *c, yajl_val v, struct rthread *t, crest_error_t *err)
{
  int64_t tid;
  const char *comm;
  yajl_val *items;
  long n;
  if (jget_i64(v, "tid", &tid, err) < 0 || jget_hex(v, "regs", &t->regs, sizeof t->regs, err) < 0
      || jget_hex_alloc(v, "xstate", XSTATE_MAX, &t->xstate, &t->xlen, err) < 0
      || jget_u64(v, "sigmask", &t->sigmask, err) < 0 || jget_u64(v, "rseq", &t->rseq, err) < 0
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
  if (prctl_parse_thread(v, c->img->format, &t->pr, err) < 0)
    return crest_error_wrap(err, "thread %d", t->tid);
  n = jget_array(v, "pending", &items, err);
  CHECK(n >= 0 && n <= 64, "thread %d: bad pending signal list", t->tid);
  t->pending = xzalloc((n + 1) * 128);
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

static int
parse_siginfos(yajl_val v, const char *key, uint8_t (**out)[128], size_t *nout, crest_error_t *err)
{
  yajl_val *items;
  long n = jget_array(v, key, &items, err);
  if (n < 0)
    return -1;
  CHECK(n <= 64, "%s: %ld entries", key, n);
  *out = xzalloc((n + 1) * 128);
  for (long i = 0; i < n; i++)
    {
      const char *k = "s";
      struct yajl_val_s obj;
      uint8_t *b;
      size_t len;
      obj.type = yajl_t_object;
      obj.u.object.keys = &k;
      obj.u.object.values = &items[i];
      obj.u.object.len = 1;
      if (jget_hex_alloc(&obj, "s", 128, &b, &len, err) < 0)
        return -1;
      if (len != 128)
        {
          free(b);
          return crest_error_make(err, EINVAL, "%s: siginfo of %zu bytes", key, len);
        }
      memcpy((*out)[i], b, 128);
      free(b);
    }
  *nout = n;
  return 0;
}

static bool
has_key(yajl_val v, const char *key)
{
  for (size_t i = 0; YAJL_IS_OBJECT(v) && i < YAJL_GET_OBJECT(v)->len; i++)
    if (strcmp(v->u.object.keys[i], key) == 0)
      return true;
  return false;
}

static int
parse_process(struct rctx *c, yajl_val v, struct rproc *p, crest_error_t *err)
{
  int64_t pid, ppid, pgid, sid, pers;
  yajl_val *items, cr = NULL, mm = NULL;
  long n;
  uint64_t pages_size = 0;

  {
    /* A zombie: its IDs and its exit status are all there is. */
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
        return 0;
      }
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
  {
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
      CHECK(p->uids[i] >= 0 && p->uids[i] < UINT32_MAX && p->gids[i] >= 0
                && p->gids[i] < UINT32_MAX,
            "process %d: a UID or GID out of range", p->pid);
    CHECK(p->securebits >= 0 && p->securebits <= 0xff, "process %d: securebits out of range",
          p->pid);
  }
  CHECK(img_path_ok(p->exe) && img_path_ok(p->cwd),
        "process %d: exe or cwd is not an absolute path", p->pid);
  CHECK(p->umask >= 0 && p->umask <= 0777 && p->oom >= -1000 && p->oom <= 1000
            && p->personality <= UINT32_MAX,
        "process %d: umask, oom_score_adj or personality out of range", p->pid);
  n = jget_array(v, "rlimits", &items, err);
  CHECK(n == RLIM_NLIMITS, "process %d: %ld rlimits, expected %d", p->pid, n, RLIM_NLIMITS);
  for (long i = 0; i < n; i++)
    if (jget_u64(items[i], "cur", &p->rl[i][0], err) < 0
        || jget_u64(items[i], "max", &p->rl[i][1], err) < 0)
      return -1;
  if (jget_u64(mm, "start_code", &p->mm.start_code, err) < 0
      || jget_u64(mm, "end_code", &p->mm.end_code, err) < 0
      || jget_u64(mm, "start_stack", &p->mm.start_stack, err) < 0
      || jget_u64(mm, "start_data", &p->mm.start_data, err) < 0
      || jget_u64(mm, "end_data", &p->mm.end_data, err) < 0
      || jget_u64(mm, "start_brk", &p->mm.start_brk, err) < 0
      || jget_u64(mm, "brk", &p->mm.brk, err) < 0
      || jget_u64(mm, "arg_start", &p->mm.arg_start, err) < 0
      || jget_u64(mm, "arg_end", &p->mm.arg_end, err) < 0
      || jget_u64(mm, "env_start", &p->mm.env_start, err) < 0
      || jget_u64(mm, "env_end", &p->mm.env_end, err) < 0
      || jget_hex_alloc(mm, "auxv", 4096, &p->auxv, &p->auxv_len, err) < 0)
    return -1;
  n = jget_array(v, "sigactions", &items, err);
  CHECK(n >= 0 && n <= 64, "process %d: sigactions", p->pid);
  for (long i = 0; i < n; i++)
    {
      int64_t sg;
      struct ksigaction a;
      if (jget_i64(items[i], "sig", &sg, err) < 0
          || jget_u64(items[i], "handler", &a.handler, err) < 0
          || jget_u64(items[i], "flags", &a.flags, err) < 0
          || jget_u64(items[i], "restorer", &a.restorer, err) < 0
          || jget_u64(items[i], "mask", &a.mask, err) < 0)
        return -1;
      CHECK(sg >= 1 && sg <= 64 && sg != SIGKILL && sg != SIGSTOP,
            "process %d: sigaction for signal %lld", p->pid, (long long)sg);
      p->sa[sg] = a;
    }
  n = jget_array(v, "itimers", &items, err);
  CHECK(n == 3, "process %d: itimers", p->pid);
  for (long i = 0; i < 3; i++)
    {
      if (jget_u64(items[i], "interval_sec", &p->itimer[i][0], err) < 0
          || jget_u64(items[i], "interval_usec", &p->itimer[i][1], err) < 0
          || jget_u64(items[i], "value_sec", &p->itimer[i][2], err) < 0
          || jget_u64(items[i], "value_usec", &p->itimer[i][3], err) < 0)
        return -1;
      CHECK(p->itimer[i][0] <= INT64_MAX && p->itimer[i][2] <= INT64_MAX
                && p->itimer[i][1] < 1000000 && p->itimer[i][3] < 1000000,
            "process %d: itimer %ld out of range", p->pid, i);
    }
  if (parse_siginfos(v, "shared_pending", &p->shared_pending, &p->nshared_pending, err) < 0)
    return -1;
  if (prctl_parse_process(v, c->img->format, &p->pr, err) < 0)
    return crest_error_wrap(err, "process %d", p->pid);
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

  /* VMAs: page aligned, ordered, inside the user address space. */
  n = jget_array(v, "vmas", &items, err);
  CHECK(n > 0 && n <= 65536, "process %d: %ld mappings", p->pid, n);
  p->vmas = xzalloc(n * sizeof *p->vmas);
  for (long i = 0; i < n; i++)
    {
      struct rvma *m = &p->vmas[i];
      const char *kind;
      int64_t prot;
      if (jget_u64(items[i], "start", &m->start, err) < 0
          || jget_u64(items[i], "end", &m->end, err) < 0
          || jget_i64(items[i], "prot", &prot, err) < 0
          || jget_bool(items[i], "shared", &m->shared, err) < 0
          || jget_str(items[i], "kind", &kind, err) < 0)
        return -1;
      CHECK(m->start < m->end && m->start % PAGE == 0 && m->end % PAGE == 0 && m->end <= TASK_TOP
                && (i == 0 || m->start >= p->vmas[i - 1].end) && prot >= 0 && prot <= 7
                && strlen(kind) < 16,
            "process %d: mapping %ld (%#" PRIx64 "-%#" PRIx64 ") is malformed", p->pid, i, m->start,
            m->end);
      m->prot = prot;
      strcpy(m->kind, kind);
      if (has_key(items[i], "madv"))
        {
          int64_t madv;
          if (jget_i64(items[i], "madv", &madv, err) < 0)
            return -1;
          CHECK(c->img->format >= CREST_IMAGE_FORMAT_ATTRS && madv > 0 && madv <= VMF_ALL,
                "process %d: mapping %ld: bad madv %lld (format %d)", p->pid, i, (long long)madv,
                c->img->format);
          m->madv = (uint32_t)madv;
        }
      m->svc = -1;
      if (strcmp(kind, "file") == 0)
        {
          if (jget_str(items[i], "path", &m->path, err) < 0
              || jget_u64(items[i], "pgoff", &m->pgoff, err) < 0
              || jget_u64(items[i], "file_size", &m->file_size, err) < 0)
            return -1;
          CHECK(img_path_ok(m->path) && m->pgoff < (1UL << 52),
                "process %d: mapping %ld: relative path or offset out of range", p->pid, i);
        }
      else if (strcmp(kind, "memfile") == 0)
        {
          const struct img_file *df;
          if (jget_str(items[i], "path", &m->path, err) < 0
              || jget_u64(items[i], "pgoff", &m->pgoff, err) < 0
              || jget_u64(items[i], "file_size", &m->file_size, err) < 0
              || jget_str(items[i], "data", &m->data, err) < 0)
            return -1;
          CHECK(img_path_ok(m->path) && m->pgoff < (1UL << 52),
                "process %d: mapping %ld: relative path or offset out of range", p->pid, i);
          df = img_reader_find(c->img, m->data);
          CHECK(df && df->size == m->file_size,
                "process %d: mapping %ld: memory file %s missing or not %" PRIu64 " bytes", p->pid,
                i, m->data, m->file_size);
        }
      else
        CHECK(!m->shared
                  && (strcmp(kind, "anon") == 0 || strcmp(kind, "heap") == 0
                      || strcmp(kind, "stack") == 0 || strcmp(kind, "vdso") == 0
                      || strcmp(kind, "vvar") == 0 || strcmp(kind, "vvar_vclock") == 0),
              "process %d: mapping %ld: unknown kind %s", p->pid, i, kind);
    }
  p->nvmas = n;

  /* Page runs: inside private mappings, inside the page file. */
  {
    const struct img_file *pf = img_reader_find(c->img, p->pages_file);
    CHECK(pf, "process %d: page file %s is not in the manifest", p->pid, p->pages_file);
    pages_size = pf->size;
  }
  n = jget_array(v, "pages", &items, err);
  CHECK(n >= 0 && n <= (1 << 24), "process %d: %ld page runs", p->pid, n);
  p->runs = xzalloc((n + 1) * sizeof *p->runs);
  for (long i = 0; i < n; i++)
    {
      struct rrun *r = &p->runs[i];
      uint64_t a;
      size_t k = 0;
      if (jget_u64(items[i], "vaddr", &r->vaddr, err) < 0
          || jget_u64(items[i], "len", &r->len, err) < 0
          || jget_u64(items[i], "off", &r->off, err) < 0)
        return -1;
      CHECK(r->vaddr % PAGE == 0 && r->len % PAGE == 0 && r->off % PAGE == 0 && r->len > 0
                && r->vaddr + r->len > r->vaddr && r->vaddr + r->len <= TASK_TOP
                && r->off <= pages_size && r->len <= pages_size - r->off
                && (i == 0 || r->vaddr >= p->runs[i - 1].vaddr + p->runs[i - 1].len),
            "process %d: page run %ld (%#" PRIx64 "+%#" PRIx64 " at %" PRIu64
            ") lies outside %s or its mappings",
            p->pid, i, r->vaddr, r->len, r->off, p->pages_file);
      /* Every page of the run must be in a private, ordinary mapping. */
      for (a = r->vaddr; a < r->vaddr + r->len;)
        {
          while (k < p->nvmas && p->vmas[k].end <= a)
            k++;
          CHECK(k < p->nvmas && p->vmas[k].start <= a && !p->vmas[k].shared
                    && strcmp(p->vmas[k].kind, "vdso") != 0
                    && strncmp(p->vmas[k].kind, "vvar", 4) != 0,
                "process %d: page run %ld covers %#" PRIx64 ", which no private mapping holds",
                p->pid, i, a);
          a = p->vmas[k].end < r->vaddr + r->len ? p->vmas[k].end : r->vaddr + r->len;
        }
    }
  p->nruns = n;

  n = jget_array(v, "fds", &items, err);
  CHECK(n >= 0 && n <= 65536, "process %d: %ld descriptors", p->pid, n);
  p->fds = xzalloc((n + 1) * sizeof *p->fds);
  for (long i = 0; i < n; i++)
    {
      int64_t fd, file;
      if (jget_i64(items[i], "fd", &fd, err) < 0
          || jget_bool(items[i], "cloexec", &p->fds[i].cloexec, err) < 0
          || jget_i64(items[i], "file", &file, err) < 0)
        return -1;
      CHECK(fd >= 0 && fd < (1 << 20) && file >= 0 && file <= (1 << 20)
                && (i == 0 || fd > p->fds[i - 1].fd),
            "process %d: descriptor entry %ld is malformed", p->pid, i);
      p->fds[i].fd = fd, p->fds[i].file = file;
      if (locks_parse(items[i], c->img->format, 1u << LOCK_KIND_POSIX, &p->fds[i].locks, err) < 0)
        return crest_error_wrap(err, "process %d: fd %lld", p->pid, (long long)fd);
    }
  p->nfds = n;

  n = jget_array(v, "threads", &items, err);
  CHECK(n >= 1 && n <= 4096, "process %d: %ld threads", p->pid, n);
  p->th = xzalloc(n * sizeof *p->th);
  /* nth counts the threads parsed so far: free_ctx frees what they hold
     also when one fails. */
  for (long i = 0; i < n; i++)
    if (p->nth++, parse_thread(c, items[i], &p->th[i], err) < 0)
      return crest_error_wrap(err, "process %d", p->pid);
  CHECK(p->th[0].tid == p->pid, "process %d: first thread is %d", p->pid, p->th[0].tid);
  return 0;
}

/* The optional "terminal" object: the container's terminal's settings. */
static int
parse_terminal(struct rctx *c, crest_error_t *err)
{
  const char *path[] = { "terminal", NULL };
  yajl_val t = yajl_tree_get(c->tree, path, yajl_t_any);
  int64_t v[11], fg = 0;
  static const char *const keys[] = { "iflag", "oflag", "cflag", "lflag",  "ispeed", "ospeed",
                                      "line",  "rows",  "cols",  "xpixel", "ypixel" };
  crest_error_t e2 = NULL;

  if (!t)
    return 0;
  if (!YAJL_IS_OBJECT(t))
    return crest_error_make(err, EINVAL, "image %s: tree.json: terminal is not an object",
                            c->o->image_dir);
  for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
    {
      /* flags and speeds are 32 bits, the line discipline 8, sizes 16. */
      int64_t max = i < 6 ? (int64_t)UINT32_MAX : i == 6 ? 255 : 65535;
      if (jget_i64(t, keys[i], &v[i], err) < 0)
        return crest_error_wrap(err, "image %s: tree.json: terminal", c->o->image_dir);
      CHECK(v[i] >= 0 && v[i] <= max, "image %s: tree.json: terminal: %s %lld out of range",
            c->o->image_dir, keys[i], (long long)v[i]);
    }
  if (jget_hex(t, "cc", c->tio.c_cc, sizeof c->tio.c_cc, err) < 0)
    return crest_error_wrap(err, "image %s: tree.json: terminal", c->o->image_dir);
  if (jget_i64(t, "fg_pgid", &fg, &e2) < 0)
    fg = 0;
  crest_error_release(&e2);
  CHECK(fg >= 0 && fg < (1 << 22), "image %s: tree.json: terminal: bad fg_pgid %lld",
        c->o->image_dir, (long long)fg);
  c->tio.c_iflag = v[0], c->tio.c_oflag = v[1], c->tio.c_cflag = v[2], c->tio.c_lflag = v[3];
  c->tio.c_ispeed = v[4], c->tio.c_ospeed = v[5], c->tio.c_line = v[6];
  c->ws.ws_row = v[7], c->ws.ws_col = v[8], c->ws.ws_xpixel = v[9], c->ws.ws_ypixel = v[10];
  c->term_fg = fg;
  c->has_term = true;
  return 0;
}

/* A file record: the paths restore opens are absolute, a device is one of
   the memory devices, the bytes of an unlinked file are in the image. */
static int
check_file(struct rctx *c, const struct rfile *f, crest_error_t *err)
{
  bool opened = strcmp(f->type, "inherited") != 0 && strcmp(f->type, "tty") != 0
                && strcmp(f->type, "pipe") != 0;
  if (opened && !img_path_ok(f->path))
    return crest_error_make(err, EINVAL, "image %s: tree.json: file %d: path %.64s is not absolute",
                            c->o->image_dir, f->id, f->path);
  if (strcmp(f->type, "dev") == 0 && !img_dev_ok(f->path))
    return crest_error_make(err, EINVAL,
                            "image %s: tree.json: file %d: %.64s is not a device crest restores",
                            c->o->image_dir, f->id, f->path);
  if (f->data
      && ((strcmp(f->type, "reg") != 0 && strcmp(f->type, "memfd") != 0)
          || !img_reader_find(c->img, f->data)))
    return crest_error_make(err, EINVAL,
                            "image %s: tree.json: file %d: data %.64s is not a listed file",
                            c->o->image_dir, f->id, f->data);
  return 0;
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

/* The pipes and FIFOs with their unread bytes; every pipe descriptor's
   pipe is among them. */
static int
parse_pipes(struct rctx *c, crest_error_t *err)
{
  yajl_val *items;
  long n;

  n = jget_array(c->tree, "pipes", &items, err);
  if (n < 0 || n > (1 << 20))
    return crest_error_make(err, EINVAL, "image %s: tree.json: bad pipe list", c->o->image_dir);
  c->pp = xzalloc((n + 1) * sizeof *c->pp);
  for (long i = 0; i < n; i++)
    {
      struct rpipe *pp = &c->pp[i];
      crest_error_t e2 = NULL;
      if (jget_u64(items[i], "ino", &pp->ino, err) < 0
          || jget_i64(items[i], "size", &pp->size, err) < 0)
        return crest_error_wrap(err, "image %s: tree.json: pipe %ld", c->o->image_dir, i);
      if (jget_str(items[i], "data", &pp->data, &e2) < 0)
        pp->data = NULL;
      crest_error_release(&e2);
      if (jget_str(items[i], "path", &pp->path, &e2) < 0)
        pp->path = NULL;
      crest_error_release(&e2);
      /* F_SETPIPE_SZ takes an int, and the saved bytes must fit. */
      if (pp->size < 0 || pp->size > INT_MAX)
        return crest_error_make(err, EINVAL,
                                "image %s: tree.json: pipe %ld: size %lld out of range",
                                c->o->image_dir, i, (long long)pp->size);
      if (pp->data)
        {
          const struct img_file *df = img_reader_find(c->img, pp->data);
          if (!df || df->size > (uint64_t)(pp->size > 0 ? pp->size : 65536))
            return crest_error_make(err, EINVAL,
                                    "image %s: tree.json: pipe %ld: data %s missing or larger "
                                    "than the pipe",
                                    c->o->image_dir, i, pp->data);
        }
      if (pp->path && !img_path_ok(pp->path))
        return crest_error_make(err, EINVAL, "image %s: tree.json: pipe %ld: relative FIFO path",
                                c->o->image_dir, i);
      pp->no_r = has_key(items[i], "no_reader");
      pp->no_w = has_key(items[i], "no_writer");
      if ((pp->no_r || pp->no_w)
          && (c->img->format < CREST_IMAGE_FORMAT_ATTRS || pp->path || (pp->no_r && pp->no_w)))
        return crest_error_make(err, EINVAL,
                                "image %s: tree.json: pipe %ld: bad no_reader/no_writer",
                                c->o->image_dir, i);
      pp->r = pp->w = -1;
    }
  c->npp = n;
  for (size_t i = 0; i < c->nf; i++)
    if (strcmp(c->f[i].type, "pipe") == 0)
      {
        bool found = false;
        for (size_t k = 0; k < c->npp && !found; k++)
          found = c->pp[k].ino == c->f[i].pipe;
        if (!found)
          return crest_error_make(err, EINVAL,
                                  "image %s: file %zu: pipe:[%" PRIu64 "] is not in the pipe list",
                                  c->o->image_dir, i, c->f[i].pipe);
      }
  return 0;
}

/* A file's records of docs/engine.md's attribute tables (format 3): an
   unlinked file's extents or the file it opens again, a deleted
   directory, flock and OFD locks, a symlink's O_PATH open. F is the
   F->id-th of c->f, the ones before it parsed. */
static int
parse_file_attrs(struct rctx *c, yajl_val v, struct rfile *f, crest_error_t *err)
{
  const struct img_file *df = f->data ? img_reader_find(c->img, f->data) : NULL;
  if (unlinked_parse(v, c->img->format, f->id, df ? df->size : 0, &f->u, err) < 0
      || deleted_dir_parse(v, c->img->format, f->id, &f->deleted_dir, err) < 0
      || locks_parse(v, c->img->format, (1u << LOCK_KIND_FLOCK) | (1u << LOCK_KIND_OFD), &f->locks,
                     err)
             < 0)
    return -1;
  if (f->deleted_dir.present && strcmp(f->type, "dir"))
    return crest_error_make(err, EINVAL, "deleted_dir on a %s", f->type);
  if (f->u.same_as >= 0 && (f->data || !c->f[f->u.same_as].data))
    return crest_error_make(err, EINVAL, "unlinked_of a file without data");
  if (strcmp(f->type, "link") == 0
      && (!(f->flags & O_PATH) || !(f->flags & O_NOFOLLOW)
          || c->img->format < CREST_IMAGE_FORMAT_ATTRS))
    return crest_error_make(err, EINVAL,
                            "a link must be an O_PATH|O_NOFOLLOW open, in a format 3 image");
  return 0;
}

/* A memfd descriptor: its object's bytes (shared with its mappings) and
   seals. */
static int
parse_memfd(struct rctx *c, yajl_val v, struct rfile *f, crest_error_t *err)
{
  int64_t seals;
  const struct img_file *df;
  if (!f->data || jget_i64(v, "seals", &seals, err) < 0)
    return crest_error_make(err, EINVAL, "memfd without data or seals");
  df = img_reader_find(c->img, f->data);
  if (!df || seals < 0 || seals > 0x1f || strncmp(f->path, "/memfd:", 7) != 0)
    return crest_error_make(err, EINVAL, "memfd %s: data %s missing, or bad seals or name", f->path,
                            f->data);
  f->seals = seals;
  return 0;
}

static int
parse_tree(struct rctx *c, crest_error_t *err)
{
  yajl_val *items;
  long n;
  int64_t root;

  if (img_reader_json(c->img, "tree.json", &c->tree, err) < 0)
    return -1;
  if (jget_i64(c->tree, "root", &root, err) < 0)
    return crest_error_wrap(err, "image %s: tree.json", c->o->image_dir);
  n = jget_array(c->tree, "processes", &items, err);
  if (n < 1 || n > 65536)
    return crest_error_make(err, EINVAL, "image %s: tree.json: bad process list", c->o->image_dir);
  c->p = xzalloc(n * sizeof *c->p);
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
  for (size_t i = 0; i < c->np; i++)
    {
      bool found = i == 0;
      if (c->p[i].zombie && i == 0)
        return crest_error_make(err, EINVAL, "image %s: tree.json: the root is a zombie",
                                c->o->image_dir);
      for (size_t j = 0; j < i; j++)
        {
          if (c->p[j].pid == c->p[i].ppid && c->p[j].zombie)
            return crest_error_make(err, EINVAL,
                                    "image %s: tree.json: process %d has a zombie parent",
                                    c->o->image_dir, c->p[i].pid);
          if (c->p[j].pid == c->p[i].ppid)
            found = true;
        }
      if (!found)
        return crest_error_make(err, EINVAL,
                                "image %s: tree.json: parent %d of %d is not in the image",
                                c->o->image_dir, c->p[i].ppid, c->p[i].pid);
    }

  n = jget_array(c->tree, "files", &items, err);
  if (n < 0 || n > (1 << 20))
    return crest_error_make(err, EINVAL, "image %s: tree.json: bad file list", c->o->image_dir);
  c->f = xzalloc((n + 1) * sizeof *c->f);
  c->nf = n; /* all of them for free_ctx, also when one fails */
  for (long i = 0; i < n; i++)
    {
      struct rfile *f = &c->f[i];
      int64_t id, flags;
      if (jget_i64(items[i], "id", &id, err) < 0 || jget_str(items[i], "type", &f->type, err) < 0
          || jget_str(items[i], "path", &f->path, err) < 0
          || jget_i64(items[i], "flags", &flags, err) < 0
          || jget_i64(items[i], "pos", &f->pos, err) < 0)
        return crest_error_wrap(err, "image %s: tree.json: file %ld", c->o->image_dir, i);
      if (id != i)
        return crest_error_make(err, EINVAL, "image %s: tree.json: file %ld has id %lld",
                                c->o->image_dir, i, (long long)id);
      if (flags < 0 || flags > INT_MAX || f->pos < 0)
        return crest_error_make(err, EINVAL,
                                "image %s: tree.json: file %ld: flags or pos out of range",
                                c->o->image_dir, i);
      f->id = id;
      f->flags = flags;
      f->svc = -1;
      if (strcmp(f->type, "fifo") == 0 && jget_u64(items[i], "pipe", &f->pipe, err) < 0)
        return crest_error_wrap(err, "image %s: tree.json: file %ld", c->o->image_dir, i);
      if (strcmp(f->type, "pipe") == 0
          && (jget_u64(items[i], "pipe", &f->pipe, err) < 0
              || jget_bool(items[i], "read_end", &f->read_end, err) < 0))
        return crest_error_wrap(err, "image %s: tree.json: file %ld", c->o->image_dir, i);
      {
        const char *d = NULL;
        crest_error_t e2 = NULL;
        if (jget_str(items[i], "data", &d, &e2) == 0)
          f->data = d;
        crest_error_release(&e2);
      }
      f->stdio = -1;
      if (strcmp(f->type, "memfd") == 0 && parse_memfd(c, items[i], f, err) < 0)
        return crest_error_wrap(err, "image %s: tree.json: file %ld", c->o->image_dir, i);
      if (strcmp(f->type, "reg") && strcmp(f->type, "dir") && strcmp(f->type, "dev")
          && strcmp(f->type, "pipe") && strcmp(f->type, "fifo") && strcmp(f->type, "inherited")
          && strcmp(f->type, "tty") && strcmp(f->type, "link") && strcmp(f->type, "memfd"))
        return crest_error_make(err, EINVAL, "image %s: tree.json: file %ld has unknown type %s",
                                c->o->image_dir, i, f->type);
      if (check_file(c, f, err) < 0)
        return -1;
      if (parse_file_attrs(c, items[i], f, err) < 0)
        return crest_error_wrap(err, "image %s: tree.json: file %ld", c->o->image_dir, i);
    }
  for (size_t i = 0; i < c->np; i++)
    for (size_t k = 0; k < c->p[i].nfds; k++)
      {
        const struct rfd *d = &c->p[i].fds[k];
        if ((size_t)d->file >= c->nf)
          return crest_error_make(err, EINVAL,
                                  "image %s: tree.json: process %d fd %d names file %d of %zu",
                                  c->o->image_dir, c->p[i].pid, d->fd, d->file, c->nf);
        if (d->fd <= 2 && (c->f[d->file].stdio < 0 || d->fd < c->f[d->file].stdio))
          c->f[d->file].stdio = d->fd;
      }
  if (parse_terminal(c, err) < 0)
    return -1;
  if (parse_pipes(c, err) < 0)
    return -1;
  return 0;
}

/* ---------- service descriptors ---------- */

/* Move FD to the service range, above every descriptor of the tree. */
static int
svc_place(struct rctx *c, int fd, crest_error_t *err)
{
  int n;
  if (fd < 0)
    return -1;
  n = fcntl(fd, F_DUPFD_CLOEXEC, c->svc_next);
  if (n < 0)
    {
      close(fd);
      return crest_error_errno(err, "restore: service descriptor");
    }
  close(fd);
  c->svc_next = n + 1;
  return n;
}

/* One memfd per saved memory object, whatever process maps it: the
   mappings share it as they shared the object. */
static int
memfile_svc(struct rctx *c, const char *data, const char *path, crest_error_t *err)
{
  char name[64];
  const char *base;
  uint64_t size;
  int fd, in;
  for (size_t k = 0; k < c->nmf; k++)
    if (strcmp(c->mf[k].data, data) == 0)
      return c->mf[k].svc;
  base = strncmp(path, "/memfd:", 7) == 0 ? path + 7 : path;
  snprintf(name, sizeof name, "%s", base);
  name[strcspn(name, " ")] = 0;
  /* Sealing allowed: a memfd descriptor gets its seals back at the end
     (seal_memfds). */
  fd = syscall(SYS_memfd_create, name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0)
    return crest_error_errno(err, "memfd_create");
  in = img_reader_open_file(c->img, data, &size, err);
  if (in < 0)
    {
      close(fd);
      return -1;
    }
  for (off_t done = 0; done < (off_t)size;)
    {
      char buf[65536];
      ssize_t r = pread(in, buf, sizeof buf, done);
      if (r <= 0 || write_all(fd, buf, r) < 0)
        {
          int e = r < 0 ? errno : EIO;
          close(in), close(fd);
          return crest_error_make(err, e, "refill from %s", data);
        }
      done += r;
    }
  close(in);
  if ((fd = svc_place(c, fd, err)) < 0)
    return -1;
  c->mf = xrealloc(c->mf, (c->nmf + 1) * sizeof *c->mf);
  c->mf[c->nmf].data = data, c->mf[c->nmf].svc = fd;
  c->nmf++;
  return fd;
}

/* A memfd descriptor: a new open of its object's memfd, with the flags
   the descriptor had. */
static int
open_memfd(struct rctx *c, const struct rfile *f, int flags, crest_error_t *err)
{
  cleanup_free char *self = NULL;
  int m = memfile_svc(c, f->data, f->path, err);
  if (m < 0)
    return -1;
  self = xasprintf("/proc/self/fd/%d", m);
  m = open(self, flags);
  if (m < 0)
    return crest_error_errno(err, "restore: reopen memfd %s", f->path);
  return m;
}

/* A memfd descriptor's seals go on once its object is refilled and every
   descriptor of it is open (F_SEAL_SEAL forbids later seals). Checkpoint
   refuses write seals on an object with shared mappings, which the tasks
   could not map again. A memfd with no descriptor left shows no seals
   without map_files: it gets none. */
static int
seal_memfds(struct rctx *c, crest_error_t *err)
{
  for (size_t i = 0; i < c->nf; i++)
    {
      const struct rfile *f = &c->f[i];
      if (strcmp(f->type, "memfd") != 0 || !f->seals)
        continue;
      /* Two open file descriptions of one memfd: sealed once. */
      for (size_t k = 0; k < c->nmf; k++)
        if (strcmp(c->mf[k].data, f->data) == 0
            && (fcntl(c->mf[k].svc, F_GET_SEALS) & f->seals) != f->seals
            && fcntl(c->mf[k].svc, F_ADD_SEALS, f->seals) < 0)
          return crest_error_errno(err, "restore: memfd %s: seals %#x", f->path, f->seals);
    }
  return 0;
}

/* The container's terminal. Descriptors on it (type "tty") get the
   restore's own terminal: those at 0-2 the restorer's descriptor of the same
   number, like "inherited" ones; one above 2 the description of a stdio
   descriptor it shared in the image, or else a new open of /dev/tty, the
   restorer's controlling terminal (crun, with process.terminal, makes the
   pty it creates that). In container mode the terminal also gets the
   checkpointed settings, and the window size unless the holder of its
   master set one already. This runs before any other task exists, so the
   SIGWINCH a new size sends to the foreground group reaches this process
   alone, which takes it off its queue. */
static int
open_terminal(struct rctx *c, crest_error_t *err)
{
  bool need = c->has_term && c->o->as_ns_init;
  const char *why = NULL;
  int fd;

  for (size_t i = 0; i < c->nf; i++)
    if (strcmp(c->f[i].type, "tty") == 0 && c->f[i].stdio < 0)
      need = true, why = c->f[i].path;
  if (!need)
    return 0;
  fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    return crest_error_errno(err,
                             "restore: the checkpointed tree used its container's terminal%s%s%s, "
                             "but this restore has no controlling terminal (open /dev/tty)",
                             why ? " (" : "", why ? why : "", why ? ")" : "");
  if ((c->term_svc = svc_place(c, fd, err)) < 0)
    return -1;
  if (c->has_term && c->o->as_ns_init)
    {
      struct winsize now;
      sigset_t winch, old;
      const struct timespec zero = { 0, 0 };
      int r = 0;
      if (tcsetattr(c->term_svc, TCSANOW, &c->tio) < 0)
        return crest_error_errno(err, "restore: give the terminal its checkpointed settings");
      if (ioctl(c->term_svc, TIOCGWINSZ, &now) < 0)
        return crest_error_errno(err, "restore: read the terminal's window size");
      if (now.ws_row == 0 && now.ws_col == 0)
        {
          sigemptyset(&winch);
          sigaddset(&winch, SIGWINCH);
          sigprocmask(SIG_BLOCK, &winch, &old);
          r = ioctl(c->term_svc, TIOCSWINSZ, &c->ws);
          while (sigtimedwait(&winch, NULL, &zero) == SIGWINCH)
            ;
          sigprocmask(SIG_SETMASK, &old, NULL);
        }
      if (r < 0)
        return crest_error_errno(err, "restore: set the terminal's window size to %ux%u",
                                 c->ws.ws_row, c->ws.ws_col);
    }
  return 0;
}

static int
open_files(struct rctx *c, crest_error_t *err)
{
  int maxfd = 2;
  struct rlimit rl;

  for (size_t i = 0; i < c->np; i++)
    for (size_t k = 0; k < c->p[i].nfds; k++)
      if (c->p[i].fds[k].fd > maxfd)
        maxfd = c->p[i].fds[k].fd;
  c->svc_base = c->svc_next = maxfd + 1 > SVC_MIN ? maxfd + 1 : SVC_MIN;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max)
    {
      rl.rlim_cur = rl.rlim_max;
      setrlimit(RLIMIT_NOFILE, &rl);
    }

  for (int i = 0; i < 3; i++)
    {
      int src = c->o->stdio_fds[i] >= 0 ? c->o->stdio_fds[i] : i;
      int d = fcntl(src, F_DUPFD_CLOEXEC, 0);
      c->stdio_svc[i] = d < 0 ? -1 : svc_place(c, d, err);
    }
  if (open_terminal(c, err) < 0)
    return -1;
  for (size_t i = 0; i < c->npp; i++)
    {
      struct rpipe *pp = &c->pp[i];
      int fds[2];
      if (pp->path)
        {
          /* Named FIFO: one descriptor that both reads and writes holds the
             bytes until the tree's own descriptors are open. */
          fds[0] = img_open_typed(pp->path, O_RDWR | O_NONBLOCK, S_IFIFO, "named FIFO", err);
          if (fds[0] < 0)
            return -1;
          fds[1] = fcntl(fds[0], F_DUPFD_CLOEXEC, 0);
        }
      else if (pipe2(fds, O_CLOEXEC) < 0)
        return crest_error_errno(err, "restore: pipe");
      if (pp->size > 0 && fcntl(fds[1], F_SETPIPE_SZ, (int)pp->size) < 0)
        {
          close(fds[0]), close(fds[1]);
          return crest_error_errno(err, "restore: pipe:[%" PRIu64 "]: set size %lld", pp->ino,
                                   (long long)pp->size);
        }
      if (pp->data)
        {
          uint64_t size;
          cleanup_close int d = img_reader_open_file(c->img, pp->data, &size, err);
          cleanup_free char *buf = NULL;
          if (d < 0 || size > (uint64_t)(pp->size > 0 ? pp->size : 65536))
            {
              close(fds[0]), close(fds[1]);
              if (d >= 0)
                crest_error_make(err, EINVAL, "image %s: %s: more bytes than the pipe holds",
                                 c->o->image_dir, pp->data);
              return -1;
            }
          buf = xmalloc(size + 1);
          /* Non-blocking: bytes that do not fit fail here instead of
             waiting for a reader that never comes. */
          if (read_all(d, buf, size) < 0 || fcntl(fds[1], F_SETFL, O_NONBLOCK) < 0
              || write_all(fds[1], buf, size) < 0)
            {
              close(fds[0]), close(fds[1]);
              return crest_error_errno(
                  err, "restore: refill pipe:[%" PRIu64 "] with %" PRIu64 " bytes", pp->ino, size);
            }
        }
      if ((pp->r = svc_place(c, fds[0], err)) < 0 || (pp->w = svc_place(c, fds[1], err)) < 0)
        return -1;
    }
  for (size_t i = 0; i < c->nf; i++)
    {
      struct rfile *f = &c->f[i];
      int fd = -1;
      int flags = (f->flags & ~(O_CREAT | O_EXCL | O_TRUNC | O_NOCTTY)) | O_CLOEXEC | O_NOCTTY;
      if (strcmp(f->type, "inherited") == 0)
        continue;
      if (strcmp(f->type, "tty") == 0)
        {
          /* Its own open file description (see open_terminal). */
          if (f->stdio >= 0)
            continue;
          fd = open("/dev/tty",
                    (f->flags & (O_ACCMODE | O_NONBLOCK | O_APPEND)) | O_NOCTTY | O_CLOEXEC);
          if (fd < 0)
            return crest_error_errno(err, "restore: open the terminal /dev/tty in place of %s",
                                     f->path);
          if ((f->svc = svc_place(c, fd, err)) < 0)
            return -1;
          continue;
        }
      if (strcmp(f->type, "pipe") == 0)
        {
          struct rpipe *pp = NULL;
          for (size_t k = 0; k < c->npp; k++)
            if (c->pp[k].ino == f->pipe)
              pp = &c->pp[k];
          if (!pp)
            return crest_error_make(err, EINVAL,
                                    "image %s: file %d: pipe:[%" PRIu64 "] is not in the pipe list",
                                    c->o->image_dir, f->id, f->pipe);
          f->svc = f->read_end ? pp->r : pp->w;
          /* A second open file description of the same end: its own. */
          if (f->read_end ? pp->r_taken : pp->w_taken)
            {
              int d = pipe_reopen(f->svc, f->read_end, f->flags, err);
              if (d < 0 || (f->svc = svc_place(c, d, err)) < 0)
                return -1;
              continue;
            }
          *(f->read_end ? &pp->r_taken : &pp->w_taken) = true;
          /* O_NONBLOCK lives in the open file description. */
          if (fcntl(f->svc, F_SETFL, f->flags & (O_NONBLOCK | O_APPEND)) < 0)
            return crest_error_errno(err, "restore: pipe flags");
          continue;
        }
      if (strcmp(f->type, "memfd") == 0)
        {
          if ((fd = open_memfd(c, f, flags, err)) < 0)
            return -1;
        }
      else if (strcmp(f->type, "fifo") == 0)
        {
          fd = img_open_typed(f->path, flags | O_NONBLOCK, S_IFIFO, "FIFO", err);
          if (fd >= 0 && !(f->flags & O_NONBLOCK) && fcntl(fd, F_SETFL, f->flags & O_APPEND) < 0)
            {
              close(fd);
              return crest_error_errno(err, "restore: FIFO %s: flags", f->path);
            }
        }
      else if (f->u.same_as >= 0)
        {
          /* Another open of an unlinked file restored before: its inode. */
          cleanup_free char *lp = xasprintf("/proc/self/fd/%d", c->f[f->u.same_as].svc);
          fd = open(lp, flags);
        }
      else if (f->data)
        {
          /* An unlinked file (files-unlinked.c). */
          fd = unlinked_open(c->img, f->data, f->path, &f->u, flags, err);
          if (fd < 0)
            return -1;
        }
      else if (strcmp(f->type, "dir") == 0 && f->deleted_dir.present)
        {
          fd = deleted_dir_open(f->path, &f->deleted_dir, flags, err);
          if (fd < 0)
            return -1;
        }
      else if (strcmp(f->type, "dir") == 0)
        fd = img_open_typed(f->path, flags | O_DIRECTORY, S_IFDIR, "directory", err);
      else if (strcmp(f->type, "dev") == 0)
        fd = img_open_typed(f->path, flags, S_IFCHR, "device", err);
      else if (strcmp(f->type, "link") == 0)
        fd = img_open_typed(f->path, flags, S_IFLNK, "symbolic link", err);
      else
        fd = img_open_typed(f->path, flags, S_IFREG, "file", err);
      if (fd < 0)
        return -1;
      if (f->pos && strcmp(f->type, "fifo") != 0 && lseek(fd, f->pos, SEEK_SET) < 0)
        {
          close(fd);
          return crest_error_errno(err, "restore: %s: seek to %lld", f->path, (long long)f->pos);
        }
      if ((f->svc = svc_place(c, fd, err)) < 0)
        return -1;
      if (f->locks.n && locks_apply_ofd(f->svc, f->path, &f->locks, err) < 0)
        return -1;
    }
  /* An end closed in every process at checkpoint is closed again. */
  for (size_t i = 0; i < c->npp; i++)
    if (c->pp[i].no_r || c->pp[i].no_w)
      {
        int *end = c->pp[i].no_r ? &c->pp[i].r : &c->pp[i].w;
        close(*end);
        *end = -1;
      }
  for (size_t i = 0; i < c->np; i++)
    {
      struct rproc *p = &c->p[i];
      uint64_t size;
      int fd;
      if (p->zombie)
        continue;
      fd = img_reader_open_file(c->img, p->pages_file, &size, err);
      if (fd < 0 || (p->pages_svc = svc_place(c, fd, err)) < 0)
        return -1;
      fd = img_open_typed(p->exe, O_RDONLY, S_IFREG, "executable", err);
      if (fd < 0)
        return crest_error_wrap(err, "process %d", p->pid);
      if ((p->exe_svc = svc_place(c, fd, err)) < 0)
        return -1;
      for (size_t k = 0; k < p->nvmas; k++)
        {
          struct rvma *m = &p->vmas[k];
          struct stat st;
          bool rw = m->shared && (m->prot & PROT_WRITE);
          if (!m->path)
            continue;
          if (m->data)
            {
              if ((m->svc = memfile_svc(c, m->data, m->path, err)) < 0)
                return crest_error_wrap(err, "restore: process %d: mapping of %s", p->pid, m->path);
              continue;
            }
          for (size_t j = 0; j < k; j++)
            if (p->vmas[j].path && !p->vmas[j].data && strcmp(p->vmas[j].path, m->path) == 0
                && p->vmas[j].shared == m->shared)
              m->svc = p->vmas[j].svc;
          if (m->svc >= 0)
            continue;
          fd = img_open_typed(m->path, rw ? O_RDWR : O_RDONLY, S_IFREG, "mapped file", err);
          if (fd < 0)
            return crest_error_wrap(err, "process %d", p->pid);
          if (fstat(fd, &st) < 0 || (uint64_t)st.st_size != m->file_size)
            {
              close(fd);
              return crest_error_make(err, ESTALE,
                                      "restore: process %d: mapped file %s changed size since the "
                                      "checkpoint",
                                      p->pid, m->path);
            }
          if ((m->svc = svc_place(c, fd, err)) < 0)
            return -1;
        }
    }
  if (seal_memfds(c, err) < 0)
    return -1;
  if (c->use_nslp)
    {
      int fd = open("/proc/sys/kernel/ns_last_pid", O_RDWR | O_CLOEXEC);
      if (fd < 0)
        return crest_error_errno(err, "restore: open /proc/sys/kernel/ns_last_pid");
      if ((c->nslp_fd = svc_place(c, fd, err)) < 0)
        return -1;
    }
  return 0;
}

/* ---------- the task side (runs in each new task, on crest's code) ---------- */

struct bld
{
  uint8_t *buf;
  uint64_t base, cap, used;
};

static uint64_t
bld_alloc(struct bld *b, uint64_t size, uint64_t align, const void *init)
{
  uint64_t off = (b->used + align - 1) & ~(align - 1);
  if (off + size > b->cap)
    abort(); /* sized beforehand: a bug, not an input problem */
  if (init)
    memcpy(b->buf + off, init, size);
  b->used = off + size;
  return b->base + off;
}

struct oplist
{
  struct blob_op *ops;
  size_t n;
};

static void
op(struct oplist *l, long nr, int check, int64_t expect, uint64_t a0, uint64_t a1, uint64_t a2,
   uint64_t a3, uint64_t a4, uint64_t a5)
{
  struct blob_op *o;
  l->ops = xrealloc(l->ops, (l->n + 1) * sizeof *l->ops);
  o = &l->ops[l->n++];
  memset(o, 0, sizeof *o);
  o->nr = nr, o->check = check, o->expect = expect;
  o->a[0] = a0, o->a[1] = a1, o->a[2] = a2, o->a[3] = a3, o->a[4] = a4, o->a[5] = a5;
}
#define OP(l, nr, ...) op((l), (nr), BLOB_CHECK_NONNEG, 0, __VA_ARGS__)
#define OPEQ(l, nr, ex, ...) op((l), (nr), BLOB_CHECK_EQ, (ex), __VA_ARGS__)

static void __attribute__((noreturn)) task_fail(struct rctx *c, int idx, const char *fmt, ...)
{
  struct report r;
  va_list ap;
  memset(&r, 0, sizeof r);
  r.kind = 'E';
  r.idx = idx;
  r.pid = getpid();
  va_start(ap, fmt);
  vsnprintf(r.msg, sizeof r.msg, fmt, ap);
  va_end(ap);
  if (c->init_fail && idx == 0 && getpid() == 1)
    {
      memcpy(c->init_msg, r.msg, sizeof r.msg);
      siglongjmp(*c->init_fail, 1);
    }
  if (write(c->report[1], &r, sizeof r) < 0)
    _exit(126);
  _exit(127);
}

struct special
{
  uint64_t start, end;
  char kind[16];
};

static size_t
self_specials(struct special *s, uint64_t *lo, uint64_t *hi, size_t *nlay, uint64_t lay[][2])
{
  FILE *f = fopen("/proc/self/maps", "re");
  char line[512];
  size_t n = 0;
  *nlay = 0;
  if (!f)
    return 0;
  while (fgets(line, sizeof line, f))
    {
      unsigned long a, b;
      char name[256] = "";
      if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %255s", &a, &b, name) < 2)
        continue;
      if (*nlay < 4096)
        lay[*nlay][0] = a, lay[*nlay][1] = b, (*nlay)++;
      if (strcmp(name, "[vdso]") == 0 || strcmp(name, "[vvar]") == 0
          || strcmp(name, "[vvar_vclock]") == 0)
        {
          s[n].start = a, s[n].end = b;
          snprintf(s[n].kind, sizeof s[n].kind, "%.*s", (int)strlen(name) - 2, name + 1);
          n++;
        }
    }
  fclose(f);
  (void)lo, (void)hi;
  return n;
}

/* The lowest gap of SIZE bytes (plus a guard page on each side) that
   neither the current layout nor the target one uses. */
static uint64_t
find_gap(struct rproc *p, uint64_t lay[][2], size_t nlay, uint64_t size)
{
  for (uint64_t cand = 0x10000000; cand + size < TASK_TOP;)
    {
      uint64_t lo = cand - PAGE, hi = cand + size + PAGE, next = 0;
      for (size_t i = 0; i < nlay; i++)
        if (lay[i][0] < hi && lay[i][1] > lo && lay[i][1] > next)
          next = lay[i][1];
      for (size_t i = 0; i < p->nvmas; i++)
        if (p->vmas[i].start < hi && p->vmas[i].end > lo && p->vmas[i].end > next)
          next = p->vmas[i].end;
      if (!next)
        return cand;
      cand = (next + PAGE + 0xfffff) & ~0xfffffUL;
    }
  return 0;
}

/* Is signal SIG among the N siginfos in SI (128 bytes each, as the image
   holds them)? */
static bool
sig_in(const uint8_t (*si)[128], size_t n, int sig)
{
  for (size_t i = 0; i < n; i++)
    {
      int32_t s;
      memcpy(&s, si[i], 4);
      if (s == sig)
        return true;
    }
  return false;
}

/* The process-wide state of docs/engine.md's attribute tables (prctl.c,
   locks.c), after the service descriptors are closed: closing any
   descriptor of a file drops the process's POSIX locks on it. */
static void
process_attr_ops(struct rproc *p, struct oplist *l, struct bld *b)
{
  long pops[8][3];
  size_t npops = prctl_ops_process(&p->pr, pops);
  for (size_t i = 0; i < npops; i++)
    OP(l, pops[i][0], pops[i][1], pops[i][2], 0, 0, 0, 0);
  for (size_t k = 0; k < p->nfds; k++)
    for (size_t j = 0; j < p->fds[k].locks.n; j++)
      {
        struct flock fl;
        locks_flock(&p->fds[k].locks.l[j], &fl);
        OP(l, SYS_fcntl, p->fds[k].fd, F_SETLK, bld_alloc(b, sizeof fl, 8, &fl), 0, 0, 0);
      }
}

static void
thread_tail_ops(struct rctx *c, struct rproc *p, struct rthread *t, struct oplist *l, struct bld *b)
{
  uint8_t zero_attr[56];
  (void)c;
  OP(l, SYS_set_tid_address, t->clear_tid, 0, 0, 0, 0, 0);
  if (t->robust)
    OP(l, SYS_set_robust_list, t->robust, t->robust_len, 0, 0, 0, 0);
  if (t->rseq)
    OP(l, 334 /* rseq */, t->rseq, t->rseq_size, 0, t->rseq_sig, 0, 0);
  if (t->alt_sp || t->alt_size || (t->alt_flags & ~4 /* SS_AUTODISARM */) != 2 /* SS_DISABLE */)
    {
      uint64_t ss[3] = { t->alt_sp, (uint64_t)(t->alt_flags & ~1 /* SS_ONSTACK */), t->alt_size };
      OP(l, SYS_sigaltstack, bld_alloc(b, sizeof ss, 8, ss), 0, 0, 0, 0, 0);
    }
  OP(l, SYS_prctl, PR_SET_NAME, bld_alloc(b, 16, 8, t->comm), 0, 0, 0, 0);
  /* 0: a real-time thread's, which the kernel keeps at 0 by itself (and
     a write of 0 would mean "the default"). */
  if (t->pr.slack > 0)
    OP(l, SYS_prctl, PR_SET_TIMERSLACK, t->pr.slack, 0, 0, 0, 0);
  if (t->pr.pdeathsig)
    OP(l, SYS_prctl, PR_SET_PDEATHSIG, t->pr.pdeathsig, 0, 0, 0, 0);
  memset(zero_attr, 0, sizeof zero_attr);
  bool uclamp = t->umin != 0 || (t->umax != 0 && t->umax != 1024); /* 0: kernel without uclamp */
  if (t->policy != 0 || t->nice != 0 || uclamp)
    {
      struct crest_sched_attr sa;
      memset(&sa, 0, sizeof sa);
      sa.size = sizeof sa;
      sa.policy = t->policy;
      sa.flags = t->sched_flags & ~0x60ULL;
      if (uclamp)
        sa.flags |= 0x20 | 0x40; /* SCHED_FLAG_UTIL_CLAMP_MIN | _MAX */
      sa.nice = t->nice;
      sa.prio = t->prio;
      sa.umin = t->umin;
      sa.umax = t->umax;
      if (t->policy != 0 && t->policy != 3 /* SCHED_BATCH */ && t->nice != 0)
        {
          /* Outside the fair policies the kernel ignores the nice value:
             set it under SCHED_NORMAL first. */
          uint32_t pol = sa.policy;
          uint64_t fl = sa.flags;
          sa.policy = 0;
          sa.flags = 0;
          OP(l, SYS_sched_setattr, 0, bld_alloc(b, sizeof sa, 8, &sa), 0, 0, 0, 0);
          sa.policy = pol;
          sa.flags = fl;
        }
      OP(l, SYS_sched_setattr, 0, bld_alloc(b, sizeof sa, 8, &sa), 0, 0, 0, 0);
    }
  for (size_t i = 0; i < t->npending; i++)
    {
      int32_t sig;
      memcpy(&sig, t->pending[i], 4);
      OP(l, SYS_rt_tgsigqueueinfo, p->pid, t->tid, sig, bld_alloc(b, 128, 8, t->pending[i]), 0, 0);
    }
  /* The thread ends its operations at an int3. A SIGTRAP the kernel forces
     while it is blocked resets its disposition to the default, and the
     process's handler would be lost: SIGTRAP is unblocked for that moment
     (crest, the tracer, takes the stop; the thread's mask is set afterwards
     with ptrace). Not when a SIGTRAP of the image is pending: it would be
     taken at once. */
  if (!sig_in(t->pending, t->npending, SIGTRAP)
      && !sig_in(p->shared_pending, p->nshared_pending, SIGTRAP))
    {
      uint64_t trap = 1ULL << (SIGTRAP - 1);
      OP(l, SYS_rt_sigprocmask, SIG_UNBLOCK, bld_alloc(b, sizeof trap, 8, &trap), 0, 8, 0, 0);
    }
  /* Capabilities last: after them the thread may hold less than it needs
     for anything above (set_tid, exe link). */
  {
    struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct d[2];
    d[0].effective = p->caps[2], d[1].effective = p->caps[2] >> 32;
    d[0].permitted = p->caps[1], d[1].permitted = p->caps[1] >> 32;
    d[0].inheritable = p->caps[0], d[1].inheritable = p->caps[0] >> 32;
    OP(l, SYS_capset, bld_alloc(b, sizeof h, 8, &h), bld_alloc(b, sizeof d, 8, d), 0, 0, 0, 0);
    OP(l, SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0, 0);
    for (int cap = 0; cap < 64; cap++)
      if (p->caps[4] & (1ULL << cap))
        OP(l, SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0, 0);
    if (p->nnp)
      OP(l, SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0);
  }
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
static void
restore_bounding(struct rctx *c, int idx, const struct rproc *p)
{
  const uint64_t cr = 1ULL << CAP_CHECKPOINT_RESTORE;
  uint64_t have = 0, kept = 0;

  for (int cap = 0; cap < 64; cap++)
    {
      int r = prctl(PR_CAPBSET_READ, cap);
      if (r < 0)
        break; /* past the kernel's last capability */
      if (r == 1)
        have |= 1ULL << cap;
    }
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

/* A zombie of the image: exit the way it did, so that its parent's wait()
   gets the same status. A signal death is made without a core dump (and
   without the core flag in the status, which is not reproduced). */
static void __attribute__((noreturn)) zombie_exit(const struct rproc *p)
{
  int st = p->exit_status;
  prctl(PR_SET_NAME, p->comm); /* all a zombie shows but its IDs */
  if (WIFSIGNALED(st))
    {
      struct rlimit none = { 0, 0 };
      sigset_t s;
      int sig = WTERMSIG(st);
      if (WCOREDUMP(st))
        crest_debug("process %d: died with a core dump; restored without one", p->pid);
      setrlimit(RLIMIT_CORE, &none);
      prctl(PR_SET_DUMPABLE, 0);
      signal(sig, SIG_DFL);
      sigemptyset(&s);
      sigaddset(&s, sig);
      sigprocmask(SIG_UNBLOCK, &s, NULL);
      kill(getpid(), sig);
    }
  _exit(WEXITSTATUS(st));
}

static void __attribute__((noreturn)) task_jump(uint64_t entry, uint64_t sp, uint64_t args)
{
  __asm__ volatile("mov %0, %%rsp\n\t"
                   "xor %%ebp, %%ebp\n\t"
                   "jmp *%2\n\t"
                   :
                   : "r"(sp), "D"(args), "r"(entry)
                   : "memory");
  __builtin_unreachable();
}

/* The ns_last_pid fallback: one lock orders every write of ns_last_pid and
   the fork that follows it, across all restoring tasks. It is a POSIX record
   lock on the shared descriptor: such a lock belongs to the process (its
   descriptor table), so tasks that inherited the same open file description
   still exclude each other, and a child never inherits its parent's lock.
   flock() would not do: its lock belongs to the open file description,
   which every task shares, so each task's LOCK_EX succeeded at once. */
static struct flock
nslp_lock(short type)
{
  struct flock l;
  memset(&l, 0, sizeof l);
  l.l_type = type;
  l.l_whence = SEEK_SET;
  return l;
}

static int
nslp_set(struct rctx *c, short type)
{
  struct flock l = nslp_lock(type);
  while (fcntl(c->nslp_fd, F_SETLKW, &l) < 0)
    if (errno != EINTR)
      return -1;
  return 0;
}

static pid_t
create_task(struct rctx *c, int idx);

static void __attribute__((noreturn)) task_main(struct rctx *c, int idx)
{
  struct rproc *p = &c->p[idx];
  struct special sp[8];
  static uint64_t lay[4096][2];
  size_t nsp, nlay, nvsp = 0;
  uint64_t size, base, args_addr, scratch;
  struct bld b;
  struct oplist main_ops = { 0 }, *tops;
  struct report r;
  uint8_t *region;

  if (!(c->o->as_ns_init && idx == 0))
    prctl(PR_SET_PDEATHSIG, SIGKILL);
  close(c->report[0]);

  /* Session and process group, before the children inherit them. */
  /* crun already made a container's init lead its own session. */
  if (p->sid == p->pid && getsid(0) != getpid())
    {
      if (setsid() < 0)
        task_fail(c, idx, "process %d: setsid: %s", p->pid, strerror(errno));
    }
  else if (idx != 0 && getsid(0) != p->sid)
    task_fail(c, idx, "process %d: session %d is neither its own nor its parent's", p->pid, p->sid);
  if (p->pgid != getpgid(0) && (idx != 0 || p->pgid == p->pid))
    {
      if (setpgid(0, p->pgid) < 0)
        task_fail(c, idx, "process %d: join process group %d: %s", p->pid, p->pgid,
                  strerror(errno));
    }

  if (p->zombie)
    zombie_exit(p);

  /* Children: group leaders first, so that their groups exist for the
     others to join. A zombie child exits at once; its SIGCHLD is taken
     back here (the checkpointed pending signals come back in the blob),
     after it has exited, so the restored process sees no new one. A group
     a zombie leads lives on until the zombie is waited for. */
  {
    sigset_t chld, old;
    bool zombies = false;
    for (size_t i = 1; i < c->np; i++)
      zombies |= c->p[i].ppid == p->pid && c->p[i].zombie;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    if (zombies)
      sigprocmask(SIG_BLOCK, &chld, &old);
    for (int pass = 0; pass < 2; pass++)
      for (size_t i = 1; i < c->np; i++)
        if (c->p[i].ppid == p->pid && ((c->p[i].pgid == c->p[i].pid) == (pass == 0)))
          {
            siginfo_t si;
            if (create_task(c, i) < 0)
              task_fail(c, idx, "process %d: create child %d: %s", p->pid, c->p[i].pid,
                        strerror(errno));
            /* Not reaped (WNOWAIT); once it has exited, its group exists
               for the members created after it. */
            while (c->p[i].zombie && waitid(P_PID, c->p[i].pid, &si, WEXITED | WNOWAIT) < 0)
              if (errno != EINTR)
                task_fail(c, idx, "process %d: wait for zombie %d: %s", p->pid, c->p[i].pid,
                          strerror(errno));
          }
    if (zombies)
      {
        struct timespec zero = { 0, 0 };
        while (sigtimedwait(&chld, NULL, &zero) == SIGCHLD)
          ;
        sigprocmask(SIG_SETMASK, &old, NULL);
      }
  }

  /* After the children exist (each one drops its own), before setresuid
     could clear the capabilities the drops need. */
  restore_bounding(c, idx, p);

  /* Credentials that are the same for the whole process. */
  {
    uid_t ru, eu, su;
    gid_t rg, eg, sg;
    getresuid(&ru, &eu, &su);
    getresgid(&rg, &eg, &sg);
    if ((rg != (gid_t)p->gids[0] || eg != (gid_t)p->gids[1] || sg != (gid_t)p->gids[2])
        && setresgid(p->gids[0], p->gids[1], p->gids[2]) < 0)
      task_fail(c, idx, "process %d: setresgid: %s", p->pid, strerror(errno));
    {
      gid_t cur[256];
      int n = getgroups(256, cur);
      bool same = n >= 0 && (size_t)n == p->ngroups;
      for (int i = 0; same && i < n; i++)
        same = cur[i] == p->groups[i];
      if (!same && setgroups(p->ngroups, p->groups) < 0)
        task_fail(c, idx, "process %d: set %zu supplementary groups: %s", p->pid, p->ngroups,
                  strerror(errno));
    }
    if ((ru != (uid_t)p->uids[0] || eu != (uid_t)p->uids[1] || su != (uid_t)p->uids[2])
        && setresuid(p->uids[0], p->uids[1], p->uids[2]) < 0)
      task_fail(c, idx, "process %d: setresuid: %s", p->pid, strerror(errno));
  }
  {
    /* The tree may not hold more than the restorer does. */
    struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct d[2];
    uint64_t prm, want = p->caps[1] | p->caps[0];
    if (syscall(SYS_capget, &h, d) < 0)
      task_fail(c, idx, "process %d: capget: %s", p->pid, strerror(errno));
    prm = d[0].permitted | (uint64_t)d[1].permitted << 32;
    if ((p->caps[1] & ~prm) != 0)
      task_fail(c, idx,
                "process %d: held capabilities %#" PRIx64
                " at checkpoint, the restorer holds only %#" PRIx64,
                p->pid, p->caps[1], prm);
    (void)want;
    if (p->securebits != prctl(PR_GET_SECUREBITS) && prctl(PR_SET_SECUREBITS, p->securebits) < 0)
      task_fail(c, idx, "process %d: set securebits %#llx: %s", p->pid, (long long)p->securebits,
                strerror(errno));
  }
  umask(p->umask);
  if (personality(p->personality) < 0)
    task_fail(c, idx, "process %d: personality %#" PRIx64 ": %s", p->pid, p->personality,
              strerror(errno));
  if (chdir(p->cwd) < 0)
    task_fail(c, idx, "process %d: chdir %s: %s", p->pid, p->cwd, strerror(errno));
  {
    FILE *f = fopen("/proc/self/oom_score_adj", "we");
    if (f)
      {
        fprintf(f, "%lld", (long long)p->oom);
        if (fclose(f) != 0)
          task_fail(c, idx, "process %d: oom_score_adj %lld: %s", p->pid, (long long)p->oom,
                    strerror(errno));
      }
  }

  /* Descriptors: install the tree's, close the rest below the service
     range. */
  for (int fd = 0; fd < c->svc_base; fd++)
    {
      struct rfd *want = NULL;
      for (size_t k = 0; k < p->nfds; k++)
        if (p->fds[k].fd == fd)
          want = &p->fds[k];
      if (!want)
        {
          close(fd);
          continue;
        }
      struct rfile *f = &c->f[want->file];
      int src = f->svc;
      if (strcmp(f->type, "inherited") == 0)
        src = fd <= 2 ? c->stdio_svc[fd] : -1;
      else if (strcmp(f->type, "tty") == 0)
        src = fd <= 2 ? c->stdio_svc[fd] : f->stdio >= 0 ? c->stdio_svc[f->stdio] : f->svc;
      if (src < 0 || dup2(src, fd) < 0)
        task_fail(c, idx, "process %d: install fd %d (%s): %s", p->pid, fd, f->path,
                  strerror(errno));
      if (fcntl(fd, F_SETFD, want->cloexec ? FD_CLOEXEC : 0) < 0)
        task_fail(c, idx, "process %d: fd %d: set close-on-exec: %s", p->pid, fd, strerror(errno));
    }
  for (size_t k = 0; k < p->nfds; k++)
    if (p->fds[k].fd >= c->svc_base)
      task_fail(c, idx, "process %d: fd %d lies in the service range", p->pid, p->fds[k].fd);

  /* The blob region: code, arguments, operations, data, stacks. */
  nsp = self_specials(sp, NULL, NULL, &nlay, lay);
  for (size_t i = 0; i < p->nvmas; i++)
    if (strcmp(p->vmas[i].kind, "vdso") == 0 || strncmp(p->vmas[i].kind, "vvar", 4) == 0)
      {
        bool match = false;
        for (size_t k = 0; k < nsp; k++)
          match |= strcmp(sp[k].kind, p->vmas[i].kind) == 0
                   && sp[k].end - sp[k].start == p->vmas[i].end - p->vmas[i].start;
        if (!match)
          task_fail(c, idx, "process %d: its [%s] does not match this kernel's", p->pid,
                    p->vmas[i].kind);
        nvsp++;
      }
  if (nvsp != nsp)
    task_fail(c, idx,
              "process %d: vDSO layout differs from this kernel's (%zu special mappings, here %zu)",
              p->pid, nvsp, nsp);
  size = ((crest_restorer_blob_size + PAGE - 1) & ~(PAGE - 1)) + PAGE /* args */
         + (16 + 3 * p->nvmas + p->nruns + 80 + p->nth * 90 + p->nshared_pending)
               * sizeof(struct blob_op)
         + 65536 + p->auxv_len + p->nth * (4096 + 128 * 64) + p->nshared_pending * 128
         + (p->nth - 1) * THREAD_STACK + MAIN_STACK;
  for (size_t k = 0; k < nsp; k++)
    size += sp[k].end - sp[k].start;
  size = (size + PAGE - 1) & ~(PAGE - 1);
  base = find_gap(p, lay, nlay, size);
  if (!base)
    task_fail(c, idx, "process %d: no room for the restorer (%" PRIu64 " bytes)", p->pid, size);
  region = mmap((void *)base, size, PROT_READ | PROT_WRITE | PROT_EXEC,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  if (region != (void *)base)
    task_fail(c, idx, "process %d: map the restorer at %#" PRIx64 ": %s", p->pid, base,
              strerror(errno));
  memcpy(region, crest_restorer_blob, crest_restorer_blob_size);
  b.buf = region, b.base = base, b.cap = size;
  b.used = (crest_restorer_blob_size + PAGE - 1) & ~(PAGE - 1);
  args_addr
      = bld_alloc(&b, sizeof(struct blob_args) + (p->nth - 1) * sizeof(struct blob_ops), 64, NULL);
  scratch = 0;
  for (size_t k = 0; k < nsp; k++)
    scratch += sp[k].end - sp[k].start;
  scratch = bld_alloc(&b, scratch, PAGE, NULL);

  /* 1. the vDSO and vvar out of the way, 2. everything else gone,
     3. the vDSO where it was. */
  {
    uint64_t s = scratch;
    for (size_t k = 0; k < nsp; k++)
      {
        uint64_t len = sp[k].end - sp[k].start;
        OPEQ(&main_ops, SYS_mremap, s, sp[k].start, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, s, 0);
        sp[k].start = s, sp[k].end = s + len;
        s += len;
      }
    OP(&main_ops, SYS_munmap, 0, base, 0, 0, 0, 0);
    OP(&main_ops, SYS_munmap, base + size, TASK_TOP - (base + size), 0, 0, 0, 0);
    for (size_t i = 0; i < p->nvmas; i++)
      for (size_t k = 0; k < nsp; k++)
        if (strcmp(sp[k].kind, p->vmas[i].kind) == 0 && sp[k].start)
          {
            uint64_t len = sp[k].end - sp[k].start;
            OPEQ(&main_ops, SYS_mremap, p->vmas[i].start, sp[k].start, len, len,
                 MREMAP_MAYMOVE | MREMAP_FIXED, p->vmas[i].start, 0);
            sp[k].start = 0;
            break;
          }
  }
  /* 4. the target mappings, writable until filled. */
  for (size_t i = 0; i < p->nvmas; i++)
    {
      struct rvma *m = &p->vmas[i];
      int flags = MAP_FIXED | (m->shared ? MAP_SHARED : MAP_PRIVATE);
      int prot = m->shared ? m->prot : m->prot | PROT_WRITE | PROT_READ;
      if (strcmp(m->kind, "vdso") == 0 || strncmp(m->kind, "vvar", 4) == 0)
        continue;
      if (!m->path)
        flags |= MAP_ANONYMOUS;
      if (strcmp(m->kind, "stack") == 0)
        flags |= MAP_GROWSDOWN;
      if (m->madv & VMF_NORESERVE)
        flags |= MAP_NORESERVE;
      OPEQ(&main_ops, SYS_mmap, (int64_t)m->start, m->start, m->end - m->start, prot, flags,
           m->path ? (uint64_t)m->svc : (uint64_t)-1, m->path ? m->pgoff * PAGE : 0);
    }
  for (size_t i = 0; i < p->nruns; i++)
    OP(&main_ops, BLOB_OP_PREAD_FULL, p->pages_svc, p->runs[i].vaddr, p->runs[i].len,
       p->runs[i].off, 0, 0);
  for (size_t i = 0; i < p->nvmas; i++)
    {
      struct rvma *m = &p->vmas[i];
      if (m->shared || strcmp(m->kind, "vdso") == 0 || strncmp(m->kind, "vvar", 4) == 0
          || m->prot == (PROT_READ | PROT_WRITE))
        continue;
      OP(&main_ops, SYS_mprotect, m->start, m->end - m->start, m->prot, 0, 0, 0);
    }
  /* The advice smaps showed (vmflags.c), once the pages are in. */
  for (size_t i = 0; i < p->nvmas; i++)
    for (uint32_t bit = 1; bit <= VMF_ALL; bit <<= 1)
      if ((p->vmas[i].madv & bit) && vmflags_advice(bit))
        OP(&main_ops, SYS_madvise, p->vmas[i].start, p->vmas[i].end - p->vmas[i].start,
           vmflags_advice(bit), 0, 0, 0);
  /* 5. mm fields and the exe link (CAP_CHECKPOINT_RESTORE). */
  {
    struct mm_map mm = p->mm;
    mm.auxv = bld_alloc(&b, p->auxv_len, 8, p->auxv);
    mm.auxv_size = p->auxv_len;
    mm.exe_fd = p->exe_svc;
    OP(&main_ops, SYS_prctl, PR_SET_MM, PR_SET_MM_MAP, bld_alloc(&b, sizeof mm, 8, &mm), sizeof mm,
       0, 0);
  }
  /* 6. signal dispositions and timers. */
  for (int sg = 1; sg <= 64; sg++)
    {
      if (sg == SIGKILL || sg == SIGSTOP)
        continue;
      OP(&main_ops, SYS_rt_sigaction, sg, bld_alloc(&b, sizeof p->sa[sg], 8, &p->sa[sg]), 0, 8, 0,
         0);
    }
  for (int w = 0; w < 3; w++)
    if (p->itimer[w][2] || p->itimer[w][3])
      OP(&main_ops, SYS_setitimer, w, bld_alloc(&b, sizeof p->itimer[w], 8, p->itimer[w]), 0, 0, 0,
         0);
  /* 7. the other threads, each finishing its own state. */
  tops = xzalloc(p->nth * sizeof *tops);
  for (size_t t = 1; t < p->nth; t++)
    {
      struct rthread *th = &p->th[t];
      struct clone_args ca;
      uint64_t stack = bld_alloc(&b, THREAD_STACK, 64, NULL);
      uint64_t tidp = bld_alloc(&b, sizeof(pid_t), 8, &th->tid);
      memset(&ca, 0, sizeof ca);
      ca.flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM;
      ca.stack = stack;
      ca.stack_size = THREAD_STACK;
      if (c->use_nslp)
        {
          char num[24];
          int len = snprintf(num, sizeof num, "%d", th->tid - 1);
          struct flock lk = nslp_lock(F_WRLCK);
          OP(&main_ops, SYS_fcntl, c->nslp_fd, F_SETLKW, bld_alloc(&b, sizeof lk, 8, &lk), 0, 0, 0);
          OPEQ(&main_ops, SYS_pwrite64, len, c->nslp_fd, bld_alloc(&b, len + 1, 8, num), len, 0, 0,
               0);
        }
      else
        {
          ca.set_tid = tidp;
          ca.set_tid_size = 1;
        }
      thread_tail_ops(c, p, th, &tops[t], &b);
      OPEQ(&main_ops, BLOB_OP_CLONE_THREAD, th->tid, bld_alloc(&b, sizeof ca, 8, &ca), sizeof ca,
           args_addr + sizeof(struct blob_args) + (t - 1) * sizeof(struct blob_ops), 0, 0, 0);
      if (c->use_nslp)
        {
          struct flock ul = nslp_lock(F_UNLCK);
          OP(&main_ops, SYS_fcntl, c->nslp_fd, F_SETLK, bld_alloc(&b, sizeof ul, 8, &ul), 0, 0, 0);
        }
    }
  /* 8. the main thread's own state, process-wide pending signals, limits,
     and the service descriptors gone. */
  OP(&main_ops, SYS_prctl, PR_SET_PDEATHSIG, 0, 0, 0, 0, 0);
  for (size_t i = 0; i < p->nshared_pending; i++)
    {
      int32_t sig;
      memcpy(&sig, p->shared_pending[i], 4);
      OP(&main_ops, SYS_rt_sigqueueinfo, p->pid, sig, bld_alloc(&b, 128, 8, p->shared_pending[i]),
         0, 0, 0);
    }
  for (int r_ = 0; r_ < RLIM_NLIMITS; r_++)
    OP(&main_ops, SYS_prlimit64, 0, r_, bld_alloc(&b, 16, 8, p->rl[r_]), 0, 0, 0);
  OP(&main_ops, SYS_close_range, c->svc_base, ~0U, 0, 0, 0, 0);
  process_attr_ops(p, &main_ops, &b);
  {
    /* Test hook: the last process's restorer fails here, after every task
       exists, to prove that a late failure leaves nothing behind. */
    const char *fault = crest_test_knob("CREST_FAULT");
    if (fault && strcmp(fault, "restore-blob") == 0 && (size_t)idx == c->np - 1)
      OP(&main_ops, SYS_close, (uint64_t)-1, 0, 0, 0, 0, 0);
  }
  thread_tail_ops(c, p, &p->th[0], &main_ops, &b);

  /* Lay the operation lists out in the region. */
  {
    struct blob_args a;
    memset(&a, 0, sizeof a);
    a.magic = BLOB_MAGIC;
    a.main.n = main_ops.n;
    a.main.ops = bld_alloc(&b, main_ops.n * sizeof *main_ops.ops, 64, main_ops.ops);
    a.main.status = -1;
    memcpy(region + (args_addr - base), &a, sizeof a);
    for (size_t t = 1; t < p->nth; t++)
      {
        struct blob_ops h;
        h.n = tops[t].n;
        h.ops = bld_alloc(&b, tops[t].n * sizeof *tops[t].ops, 64, tops[t].ops);
        h.status = -1;
        h.result = 0;
        memcpy(region + (args_addr - base) + sizeof a + (t - 1) * sizeof h, &h, sizeof h);
      }
  }
  /* The root directory last of everything opened by path (files, exe and
     mapped files are open in the service range, the cwd and /proc/self are
     done): the image's paths are all in the tree's root, and a chroot'd
     task's cwd may lie outside its root, as it did. Its children already
     exist (they chroot themselves if they were). Still with the restorer's
     capabilities; the blob lowers them to the task's own at its end. */
  if (p->root_dir && chroot(p->root_dir) < 0)
    task_fail(c, idx, "process %d: chroot %s: %s%s", p->pid, p->root_dir, strerror(errno),
              errno == EPERM ? " (it needs CAP_SYS_CHROOT)" : "");
  {
    uint64_t stack_lo = bld_alloc(&b, MAIN_STACK, 64, NULL);

    /* glibc registered rseq for crest's thread area, which is about to
       vanish: unregister it first. */
    {
      uint64_t tp;
      extern const ptrdiff_t __rseq_offset __attribute__((weak));
      extern const unsigned int __rseq_size __attribute__((weak));
      if (&__rseq_size && __rseq_size && syscall(SYS_arch_prctl, ARCH_GET_FS, &tp) == 0)
        {
          if (syscall(334, tp + __rseq_offset, 32, 1 /* RSEQ_FLAG_UNREGISTER */, 0x53053053) < 0
              && syscall(334, tp + __rseq_offset, __rseq_size, 1, 0x53053053) < 0)
            task_fail(c, idx, "process %d: unregister crest's rseq area: %s", p->pid,
                      strerror(errno));
        }
    }
    memset(&r, 0, sizeof r);
    r.kind = 'R';
    r.idx = idx;
    r.pid = getpid();
    r.base = base;
    r.size = size;
    if (write(c->report[1], &r, sizeof r) != sizeof r)
      _exit(125);
    while (__atomic_load_n(&c->go[idx], __ATOMIC_ACQUIRE) == 0)
      syscall(SYS_futex, &c->go[idx], FUTEX_WAIT, 0, NULL, NULL, 0);
    if (__atomic_load_n(&c->go[idx], __ATOMIC_ACQUIRE) != 1)
      {
        if (c->o->as_ns_init && idx == 0)
          {
            /* The helper failed: its message is in the shared page. */
            dprintf(2, "crest: %s\n", (char *)(c->go + c->np));
            __atomic_store_n(&c->go[idx], 3, __ATOMIC_RELEASE);
            syscall(SYS_futex, &c->go[idx], FUTEX_WAKE, 1, NULL, NULL, 0);
          }
        _exit(124);
      }
    task_jump(base + BLOB_OFF_ENTRY, stack_lo + MAIN_STACK - 64, args_addr);
  }
}

static pid_t
create_task(struct rctx *c, int idx)
{
  struct rproc *p = &c->p[idx];
  struct clone_args ca;
  pid_t tid = p->pid, r;

  memset(&ca, 0, sizeof ca);
  ca.exit_signal = SIGCHLD;
  if (!c->use_nslp)
    {
      ca.set_tid = (uint64_t)&tid;
      ca.set_tid_size = 1;
      r = syscall(SYS_clone3, &ca, sizeof ca);
      if (r == 0)
        task_main(c, idx);
      return r;
    }
  /* Held from the write to the moment the child exists. A fork by anything
     outside the restore (or another writer of ns_last_pid) can still come
     in between: the child with the wrong PID exits before doing anything,
     and the write and fork are tried again while the PID is still free. */
  for (int attempt = 0; attempt < 8; attempt++)
    {
      char num[24];
      int len = snprintf(num, sizeof num, "%d", p->pid - 1), e;
      if (nslp_set(c, F_WRLCK) < 0)
        return -1;
      if (pwrite(c->nslp_fd, num, len, 0) != len)
        {
          e = errno;
          nslp_set(c, F_UNLCK);
          errno = e;
          return -1;
        }
      r = syscall(SYS_clone3, &ca, sizeof ca);
      if (r == 0)
        {
          if (getpid() != p->pid)
            _exit(0);
          task_main(c, idx);
        }
      e = errno;
      nslp_set(c, F_UNLCK);
      if (r < 0)
        {
          errno = e;
          return -1;
        }
      if (r == p->pid)
        return r;
      while (waitpid(r, NULL, 0) < 0 && errno == EINTR)
        ;
      if (kill(p->pid, 0) == 0 || errno != ESRCH)
        break; /* taken meanwhile */
    }
  errno = EEXIST;
  return -1;
}

/* ---------- the engine side ---------- */

static struct rthread *
find_thread(struct rctx *c, pid_t tid, struct rproc **pp)
{
  for (size_t i = 0; i < c->np; i++)
    for (size_t t = 0; t < c->p[i].nth; t++)
      if (c->p[i].th[t].tid == tid)
        {
          if (pp)
            *pp = &c->p[i];
          return &c->p[i].th[t];
        }
  return NULL;
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

static int
wait_parked(struct rctx *c, crest_error_t *err)
{
  size_t reported = 0, parked = 0, total = 0, live = 0;
  time_t last = time(NULL);

  for (size_t i = 0; i < c->np; i++)
    total += c->p[i].nth, live += !c->p[i].zombie;
  while (reported < live || parked < total)
    {
      struct pollfd pfd = { c->report[0], POLLIN, 0 };
      int st;
      pid_t w;
      if (reported < live && poll(&pfd, 1, 10) > 0 && (pfd.revents & POLLIN))
        {
          struct report r;
          ssize_t got = read(c->report[0], &r, sizeof r);
          if (got == 0)
            {
              /* Every task closed it: one died; waitpid below says which. */
              usleep(10000);
              goto reap;
            }
          if (got != sizeof r)
            return crest_error_errno(err, "restore: read task report");
          if (r.idx < 0 || (size_t)r.idx >= c->np)
            return crest_error_make(err, EPROTO, "restore: bad task report");
          if (r.kind == 'E')
            return crest_error_make(err, 0, "restore: %s", r.msg);
          c->p[r.idx].real = r.pid;
          c->p[r.idx].base = r.base;
          c->p[r.idx].size = r.size;
          if (ptrace(PTRACE_SEIZE, r.pid, 0,
                     PTRACE_O_TRACECLONE | PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL)
              < 0)
            return crest_error_errno(err, "restore: process %d: ptrace seize", r.pid);
          c->p[r.idx].seized = true;
          __atomic_store_n(&c->go[r.idx], 1, __ATOMIC_RELEASE);
          syscall(SYS_futex, &c->go[r.idx], FUTEX_WAKE, 1, NULL, NULL, 0);
          reported++;
          last = time(NULL);
        }
    reap:
      if (reported == live)
        usleep(1000);
      while ((w = waitpid(-1, &st, __WALL | WNOHANG)) > 0)
        {
          struct rproc *p = NULL;
          struct rthread *t = find_thread(c, w, &p);
          last = time(NULL);
          if (WIFEXITED(st) || WIFSIGNALED(st))
            {
              if (t || find_thread(c, w, NULL))
                return crest_error_make(err, ESRCH,
                                        "restore: task %d died while being restored (%s %d)", w,
                                        WIFEXITED(st) ? "exit status" : "signal",
                                        WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
              continue;
            }
          if (!WIFSTOPPED(st))
            continue;
          if ((st >> 16) == PTRACE_EVENT_CLONE || (st >> 16) == PTRACE_EVENT_STOP)
            ptrace(PTRACE_CONT, w, 0, 0);
          else if (WSTOPSIG(st) == SIGTRAP && t)
            {
              if (!t->parked)
                parked++;
              t->parked = true;
            }
          else
            ptrace(PTRACE_CONT, w, 0, WSTOPSIG(st) == SIGTRAP ? 0 : WSTOPSIG(st));
        }
      if (time(NULL) - last > 30)
        return crest_error_make(err, ETIMEDOUT,
                                "restore: no progress for 30 s (%zu of %zu processes ready, %zu of "
                                "%zu threads done)",
                                reported, live, parked, total);
    }
  return 0;
}

static const char *
op_name(long nr)
{
  switch (nr)
    {
    case SYS_mmap:
      return "mmap";
    case SYS_munmap:
      return "munmap";
    case SYS_mremap:
      return "mremap (vDSO)";
    case SYS_mprotect:
      return "mprotect";
    case BLOB_OP_PREAD_FULL:
      return "read pages";
    case BLOB_OP_CLONE_THREAD:
      return "clone3 (thread)";
    case SYS_prctl:
      return "prctl";
    case SYS_rt_sigaction:
      return "rt_sigaction";
    case SYS_capset:
      return "capset";
    case SYS_sched_setattr:
      return "sched_setattr";
    case SYS_prlimit64:
      return "prlimit";
    case SYS_sigaltstack:
      return "sigaltstack";
    case 334:
      return "rseq";
    default:
      return "syscall";
    }
}

static int
check_blob_status(struct rctx *c, struct rproc *p, crest_error_t *err)
{
  uint64_t args = p->base + ((crest_restorer_blob_size + PAGE - 1) & ~(PAGE - 1));
  size_t n = sizeof(struct blob_args) + (p->nth - 1) * sizeof(struct blob_ops);
  cleanup_free uint8_t *buf = xmalloc(n);
  struct iovec l = { buf, n }, r = { (void *)args, n };
  if (process_vm_readv(p->pid, &l, 1, &r, 1, 0) != (ssize_t)n)
    return crest_error_errno(err, "restore: process %d: read the restorer's status", p->pid);
  for (size_t t = 0; t < p->nth; t++)
    {
      struct blob_ops *o = t == 0 ? &((struct blob_args *)buf)->main
                                  : (struct blob_ops *)(buf + sizeof(struct blob_args)) + (t - 1);
      if (o->status != 0)
        {
          struct blob_op bop;
          struct iovec l2 = { &bop, sizeof bop },
                       r2 = { (void *)(o->ops + (o->status > 0 ? o->status - 1 : 0) * sizeof bop),
                              sizeof bop };
          if (o->status < 0 || process_vm_readv(p->pid, &l2, 1, &r2, 1, 0) != sizeof bop)
            return crest_error_make(err, EIO, "restore: thread %d: the restorer did not finish",
                                    p->th[t].tid);
          return crest_error_make(
              err, o->result < 0 && o->result > -4096 ? (int)-o->result : 0,
              "restore: thread %d: restorer step %lld (%s %#llx) failed with %lld", p->th[t].tid,
              (long long)o->status, op_name(bop.nr), (unsigned long long)bop.a[0],
              (long long)o->result);
        }
    }
  (void)c;
  return 0;
}

/* Registers back, the blob unmapped by the main thread itself (stopped at
   the syscall's exit, before it would return into the vanished blob). */
static int
finish_process(struct rctx *c, struct rproc *p, crest_error_t *err)
{
  for (size_t t = 0; t < p->nth; t++)
    {
      struct rthread *th = &p->th[t];
      struct user_regs_struct r = th->regs;
      pt_normalize_restart(&r);
      if (t == 0)
        {
          struct user_regs_struct u = r;
          int st;
          /* Not dumpable: last, once crest has read all it reads. */
          if (p->pr.dumpable == 0)
            {
              long a[6] = { PR_SET_DUMPABLE, 0, 0, 0, 0, 0 }, ret;
              if (pt_inject(th->tid, &u, p->base + BLOB_OFF_SYSCALL, SYS_prctl, a, &ret, err) < 0)
                return -1;
              if (ret != 0)
                return crest_error_make(err, (int)-ret, "restore: task %d: PR_SET_DUMPABLE",
                                        th->tid);
            }
          u.rip = p->base + BLOB_OFF_SYSCALL;
          u.rax = SYS_munmap;
          u.orig_rax = (unsigned long)-1;
          u.rdi = p->base;
          u.rsi = p->size;
          if (pt_setregs(th->tid, &u, err) < 0)
            return -1;
          for (int stop = 0; stop < 2; stop++)
            {
              if (ptrace(PTRACE_SYSCALL, th->tid, 0, 0) < 0)
                return crest_error_errno(err, "restore: task %d: ptrace syscall", th->tid);
              if (pt_wait_stop(th->tid, &st, err) < 0)
                return -1;
              if (!WIFSTOPPED(st) || WSTOPSIG(st) != (SIGTRAP | 0x80))
                return crest_error_make(
                    err, EPROTO, "restore: task %d: unexpected stop %#x unmapping the restorer",
                    th->tid, st);
            }
          if (pt_getregs(th->tid, &u, err) < 0)
            return -1;
          if (u.rax != 0)
            return crest_error_make(err, (int)-u.rax, "restore: task %d: unmap the restorer",
                                    th->tid);
        }
      if (pt_setregs(th->tid, &r, err) < 0 || pt_setxstate(th->tid, th->xstate, th->xlen, err) < 0)
        return -1;
      if (ptrace(PTRACE_SETSIGMASK, th->tid, sizeof th->sigmask, &th->sigmask) < 0)
        return crest_error_errno(err, "restore: task %d: set signal mask", th->tid);
    }
  (void)c;
  return 0;
}

/* P, still parked in the blob, after every child of it that was in a group
   stop has been stopped again (stop_process): that stop was reported to P
   anew, as a SIGCHLD (unless P ignores it or set SA_NOCLDSTOP) and as a
   stop its waitpid(WUNTRACED) would collect. P had seen the original one:
   the collection is repeated where P had made it (stop_reported), and the
   SIGCHLD is taken back unless one was pending at checkpoint, so that P
   sees neither twice. P makes the calls itself, from the blob's syscall
   instruction, with a scratch area far below its stack pointer on the
   blob's own stack. */
static int
fixup_parent(struct rctx *c, struct rproc *p, crest_error_t *err)
{
  struct rthread *m = &p->th[0];
  struct user_regs_struct r;
  uint64_t gadget = p->base + BLOB_OFF_SYSCALL, scratch;
  bool any = false;
  long ret;

  for (size_t k = 1; k < c->np; k++)
    any |= c->p[k].ppid == p->pid && c->p[k].stop_sig && !c->p[k].zombie;
  if (!any)
    return 0;
  if (pt_getregs(m->tid, &r, err) < 0)
    return -1;
  scratch = (r.rsp - 4096) & ~63UL; /* the blob's stack is MAIN_STACK deep */
  for (size_t k = 1; k < c->np; k++)
    {
      struct rproc *ch = &c->p[k];
      int32_t si[8] = { 0 };
      long a[6] = { P_PID, ch->pid, (long)scratch, WSTOPPED | WNOHANG, 0, 0 };
      struct iovec l = { si, sizeof si }, rv = { (void *)scratch, sizeof si };
      if (ch->ppid != p->pid || !ch->stop_sig || ch->zombie || !ch->stop_reported)
        continue;
      if (pt_inject(m->tid, &r, gadget, SYS_waitid, a, &ret, err) < 0)
        return crest_error_wrap(err, "restore: process %d: collect the stop of %d", p->pid,
                                ch->pid);
      if (ret < 0)
        return crest_error_make(err, (int)-ret, "restore: process %d: collect the stop of %d",
                                p->pid, ch->pid);
      if (process_vm_readv(p->pid, &l, 1, &rv, 1, 0) != sizeof si)
        return crest_error_errno(err, "restore: process %d: read waitid's answer", p->pid);
      if (si[4] != ch->pid)
        return crest_error_make(err, EPROTO,
                                "restore: process %d: no stop of %d to collect (waitid found %d)",
                                p->pid, ch->pid, si[4]);
    }
  if (!sig_in(p->shared_pending, p->nshared_pending, SIGCHLD)
      && !sig_in(m->pending, m->npending, SIGCHLD))
    {
      uint64_t set = 1ULL << (SIGCHLD - 1), zero[2] = { 0, 0 };
      struct iovec l[2] = { { &set, 8 }, { zero, 16 } }, rv = { (void *)scratch, 24 };
      long a[6] = { (long)scratch, 0, (long)scratch + 8, 8, 0, 0 };
      if (process_vm_writev(p->pid, l, 2, &rv, 1, 0) != 24)
        return crest_error_errno(err, "restore: process %d: write its scratch area", p->pid);
      if (pt_inject(m->tid, &r, gadget, SYS_rt_sigtimedwait, a, &ret, err) < 0)
        return crest_error_wrap(err, "restore: process %d: take back SIGCHLD", p->pid);
      if (ret != SIGCHLD && ret != -EAGAIN)
        return crest_error_make(err, ret < 0 ? (int)-ret : EPROTO,
                                "restore: process %d: take back SIGCHLD (got %ld)", p->pid, ret);
    }
  return 0;
}

/* A process that was in a group stop at checkpoint goes back into one
   before it runs a single instruction of its own: finished (registers,
   masks), every thread still held, it is sent its stop signal; the main
   thread, resumed with every other signal blocked, takes it off the queue
   and is held in its delivery stop; it is let go with an interrupt asked
   first, so that whatever the kernel does with the signal the next stop
   comes before the task's own code: a group stop (PTRACE_EVENT_STOP with
   the stop signal) or, when the kernel discarded a SIGTSTP, SIGTTIN or
   SIGTTOU (a process group with no parent outside it in the session),
   a plain interrupt, and SIGSTOP is sent instead. The other threads join
   the group stop; every one is then held in it until the detach, which
   leaves the process stopped (the kernel stops a detached task again when
   its group stop is in effect). The parent sees the stop reported: see
   fixup_parent. */
static int
stop_process(struct rctx *c, struct rproc *p, crest_error_t *err)
{
  struct rthread *m = &p->th[0];
  struct user_regs_struct want, now;
  uint64_t all = ~0ULL;
  int sig = p->stop_sig, st;

  if (pt_getregs(m->tid, &want, err) < 0)
    return -1;
  for (int attempt = 0;; attempt++)
    {
      uint64_t mask = ~(1ULL << (sig - 1));
      if (ptrace(PTRACE_SETSIGMASK, m->tid, sizeof mask, &mask) < 0)
        return crest_error_errno(err, "restore: task %d: set signal mask", m->tid);
      if (kill(p->pid, sig) < 0)
        return crest_error_errno(err, "restore: process %d: send signal %d", p->pid, sig);
      if (ptrace(PTRACE_CONT, m->tid, 0, 0) < 0)
        return crest_error_errno(err, "restore: task %d: ptrace cont", m->tid);
      if (pt_wait_stop(m->tid, &st, err) < 0)
        return -1;
      if (!WIFSTOPPED(st) || (st >> 16) != 0 || WSTOPSIG(st) != sig)
        return crest_error_make(err, EPROTO,
                                "restore: task %d: unexpected stop %#x waiting for signal %d to "
                                "stop it",
                                m->tid, st, sig);
      if (ptrace(PTRACE_INTERRUPT, m->tid, 0, 0) < 0)
        return crest_error_errno(err, "restore: task %d: ptrace interrupt", m->tid);
      if (ptrace(PTRACE_CONT, m->tid, 0, sig) < 0)
        return crest_error_errno(err, "restore: task %d: ptrace cont", m->tid);
      if (pt_wait_stop(m->tid, &st, err) < 0)
        return -1;
      if (WIFSTOPPED(st) && (st >> 16) == PTRACE_EVENT_STOP && WSTOPSIG(st) == sig)
        break;
      if (WIFSTOPPED(st) && (st >> 16) == PTRACE_EVENT_STOP && WSTOPSIG(st) == SIGTRAP
          && sig != SIGSTOP && attempt == 0)
        {
          crest_debug("restore: process %d: signal %d did not stop it (orphaned process group): "
                      "stopped with SIGSTOP",
                      p->pid, sig);
          sig = SIGSTOP;
          continue;
        }
      return crest_error_make(err, EPROTO,
                              "restore: task %d: unexpected stop %#x stopping it with signal %d",
                              m->tid, st, sig);
    }
  for (size_t t = 1; t < p->nth; t++)
    {
      pid_t tid = p->th[t].tid;
      if (ptrace(PTRACE_SETSIGMASK, tid, sizeof all, &all) < 0)
        return crest_error_errno(err, "restore: task %d: set signal mask", tid);
      if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0 || ptrace(PTRACE_CONT, tid, 0, 0) < 0)
        return crest_error_errno(err, "restore: task %d: ptrace interrupt and cont", tid);
      if (pt_wait_stop(tid, &st, err) < 0)
        return -1;
      if (!WIFSTOPPED(st) || (st >> 16) != PTRACE_EVENT_STOP || WSTOPSIG(st) != sig)
        return crest_error_make(
            err, EPROTO, "restore: task %d: unexpected stop %#x joining the group stop", tid, st);
    }
  /* Nothing ran: the main thread is where it was set to resume. */
  if (pt_getregs(m->tid, &now, err) < 0)
    return -1;
  if (now.rip != want.rip || now.rsp != want.rsp)
    return crest_error_make(err, EPROTO,
                            "restore: task %d: moved (rip %#llx, was %#llx) while "
                            "being stopped",
                            m->tid, (unsigned long long)now.rip, (unsigned long long)want.rip);
  for (size_t t = 0; t < p->nth; t++)
    if (ptrace(PTRACE_SETSIGMASK, p->th[t].tid, sizeof p->th[t].sigmask, &p->th[t].sigmask) < 0)
      return crest_error_errno(err, "restore: task %d: set signal mask", p->th[t].tid);
  (void)c;
  return 0;
}

/* Test hook (docs/engine.md): CREST_FAULT=restore-kill:PHASE makes the
   restore SIGKILL itself at PHASE, to check what a killed restore leaves. */
static void
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

/* Seize every task as it reports, wait for every thread to park in the
   blob, check the blob's verdicts, set the registers, unmap the blob, let go. */
static int
finish_tree(struct rctx *c, crest_error_t *err)
{
  if (wait_parked(c, err) < 0)
    return -1;
  for (size_t i = 0; i < c->np; i++)
    if (!c->p[i].zombie && check_blob_status(c, &c->p[i], err) < 0)
      return -1;
  /* Every process group exists now, and no task runs yet: the terminal's
     foreground group goes back to the one the checkpoint saw. */
  if (c->term_fg > 0 && c->term_svc >= 0 && c->o->as_ns_init
      && tcsetpgrp(c->term_svc, c->term_fg) < 0)
    return crest_error_errno(err, "restore: make process group %d the terminal's foreground group",
                             (int)c->term_fg);
  /* Children before their parents (the image lists parents first): a
     stopped child is stopped again before its parent, still in the blob,
     has its view of that stop put back. */
  for (size_t i = c->np; i-- > 0;)
    {
      struct rproc *p = &c->p[i];
      if (p->zombie)
        continue;
      if (fixup_parent(c, p, err) < 0 || finish_process(c, p, err) < 0)
        return -1;
      if (i == 1)
        fault_kill("finishing");
      if (p->stop_sig && stop_process(c, p, err) < 0)
        return -1;
    }
  for (size_t i = 0; i < c->np; i++)
    for (size_t t = 0; t < c->p[i].nth; t++)
      pt_detach(c->p[i].th[t].tid);
  return 0;
}

/* The helper of a namespace-init restore: a plain child with the highest PID
   below pid_max that the image does not use. */
static pid_t
helper_fork(struct rctx *c)
{
  long pid_max = 32768;
  FILE *f = fopen("/proc/sys/kernel/pid_max", "re");
  if (f)
    {
      if (fscanf(f, "%ld", &pid_max) != 1)
        pid_max = 32768;
      fclose(f);
    }
  for (pid_t cand = pid_max - 1; cand > pid_max - 64; cand--)
    {
      struct clone_args ca;
      pid_t r;
      if (find_thread(c, cand, NULL))
        continue;
      memset(&ca, 0, sizeof ca);
      ca.exit_signal = SIGCHLD;
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
  for (size_t i = 0; i < c->np; i++)
    {
      struct rproc *p = &c->p[i];
      for (size_t t = 0; t < p->nth; t++)
        free(p->th[t].xstate), free(p->th[t].pending);
      free(p->th), free(p->vmas), free(p->runs), free(p->fds), free(p->groups), free(p->auxv);
      free(p->shared_pending);
    }
  for (size_t i = 0; i < c->nf; i++)
    free(c->f[i].u.ext);
  free(c->p), free(c->f), free(c->pp), free(c->mf);
  if (c->tree)
    yajl_tree_free(c->tree);
  img_reader_free(c->img);
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

/* The capabilities a restored task may hold (docs/engine.md, "Capabilities
   from the image"). An image is not signed: crest cannot tell the sets a
   task really had from sets edited in, so it bounds them by what the
   restore may give on its own authority. Container mode: what the
   configuration gives (the restorer's permitted and inheritable sets, less
   CAP_CHECKPOINT_RESTORE unless the configuration grants it). Process mode:
   the restorer's permitted and inheritable sets, unless the kernel marked
   this exec AT_SECURE: crest then holds its capabilities through its file
   capability, they are crest's and not the user's, and no task gets any. */
static int
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
static bool
cr_regainable(const struct rproc *p)
{
  const uint64_t cr = 1ULL << CAP_CHECKPOINT_RESTORE;
  struct vfs_ns_cap_data fc;
  ssize_t n;
  if (p->uids[1] == 0 && (p->caps[3] & cr) && !(p->securebits & (1 << 0) /* SECBIT_NOROOT */))
    return true;
  memset(&fc, 0, sizeof fc);
  n = getxattr(p->exe, "security.capability", &fc, sizeof fc);
  return n >= (ssize_t)XATTR_CAPS_SZ_2
         && (fc.data[CAP_CHECKPOINT_RESTORE / 32].permitted & (1U << CAP_CHECKPOINT_RESTORE % 32));
}

/* Every process's inheritable, permitted, effective and ambient sets lie
   within BOUND; one line naming the first capability that does not. */
static int
check_caps(struct rctx *c, uint64_t bound, const char *whose, crest_error_t *err)
{
  static const char *const set[] = { "inheritable", "permitted", "effective", NULL, "ambient" };
  for (size_t i = 0; i < c->np; i++)
    for (int k = 0; k < 5 && !c->p[i].zombie; k++)
      {
        uint64_t b = bound;
        uint64_t extra;
        const char *who = whose;
        if (!c->o->caps_from_config && (b & (1ULL << CAP_CHECKPOINT_RESTORE))
            && !cr_regainable(&c->p[i]))
          {
            b &= ~(1ULL << CAP_CHECKPOINT_RESTORE);
            who = "the task could not regain by itself (it is not root with it in its bounding "
                  "set, its executable has no such file capability)";
          }
        extra = set[k] ? c->p[i].caps[k] & ~b : 0;
        int cap = extra ? __builtin_ctzll(extra) : -1;
        if (cap >= 0)
          return crest_error_make(err, EPERM,
                                  "image %s: process %d: its %s set has capability %d%s, which "
                                  "%s",
                                  c->o->image_dir, c->p[i].pid, set[k], cap,
                                  cap == CAP_CHECKPOINT_RESTORE ? " (CAP_CHECKPOINT_RESTORE)" : "",
                                  extra & bound ? who : whose);
      }
  return 0;
}

int
crest_engine_check_image(const char *image_dir, crest_error_t *err)
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
  rc = parse_tree(&c, err);
  free_ctx(&c);
  return rc;
}

/* Read the image and build the restore's plan from it: every check of the
   image, against the format and against what this restore may give,
   without changing anything on the system (the fuzzer's target,
   tests/fuzz/fuzz-image.c, runs exactly this). */
static int
plan_restore(struct rctx *c, bool check_kernel, crest_error_t *err)
{
  const struct crest_restore_opts *o = c->o;
  if ((!c->img && img_reader_open(o->image_dir, check_kernel, true, &c->img, err) < 0)
      || parse_tree(c, err) < 0)
    return -1;
  if (o->as_ns_init && c->p[0].pid != 1)
    return crest_error_make(err, EINVAL,
                            "image %s: its root is PID %d, not the init of a PID namespace",
                            o->image_dir, c->p[0].pid);
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
  /* After the chroot check: that refusal names the one capability missing. */
  {
    uint64_t bound = 0;
    const char *whose = "";
    if (caps_bound(o, &bound, &whose, err) < 0 || check_caps(c, bound, whose, err) < 0)
      return -1;
  }
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
  c.use_nslp = o->force_ns_last_pid || (force && strcmp(force, "1") == 0);
  if (!c.use_nslp && syscall(SYS_clone3, NULL, 0) < 0 && errno == ENOSYS)
    c.use_nslp = true;
  for (size_t i = 0; i < c.np; i++)
    for (size_t t = 0; t < c.p[i].nth + c.p[i].zombie; t++)
      {
        pid_t tid = c.p[i].zombie ? c.p[i].pid : c.p[i].th[t].tid;
        if (!(o->as_ns_init && tid == 1) && (kill(tid, 0) == 0 || errno != ESRCH))
          {
            crest_error_make(err, EEXIST, "restore: PID %d is in use in this PID namespace", tid);
            free_ctx(&c);
            return -1;
          }
      }
  if (o->pid_file && check_pid_file_dir(o->pid_file, err) < 0)
    goto out;
  fault_kill("checked");
  if (open_files(&c, err) < 0)
    goto out;
  fault_kill("files");
  if (pipe2(c.report, O_CLOEXEC) < 0)
    {
      crest_error_errno(err, "restore: pipe");
      goto out;
    }
  /* The write end must survive each task's clean-up of low descriptors. */
  if ((c.report[1] = svc_place(&c, c.report[1], err)) < 0)
    goto out;
  c.go = mmap(NULL, ((c.np * 4 + PAGE - 1) & ~(PAGE - 1)) + PAGE, PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (c.go == MAP_FAILED)
    {
      c.go = NULL;
      crest_error_errno(err, "restore: mmap");
      goto out;
    }
  sigfillset(&all);
  if (o->as_ns_init)
    {
      /* We are PID 1 and become the image's init. A helper child, with a PID
         the image does not use, is the tracer that finishes the tree; it
         exits when done (the restored init reaps it like any orphan). */
      pid_t h;
      sigprocmask(SIG_BLOCK, &all, &old);
      h = helper_fork(&c);
      if (h < 0)
        {
          crest_error_errno(err, "restore: create the finishing helper");
          sigprocmask(SIG_SETMASK, &old, NULL);
          goto out;
        }
      if (h == 0)
        {
          crest_error_t e = NULL;
          close(c.report[1]);
          c.report[1] = -1;
          fault_kill("created");
          if (finish_tree(&c, &e) < 0)
            {
              cleanup_free char *text = crest_error_text(e);
              struct timespec ack = { 2, 0 };
              snprintf((char *)(c.go + c.np), PAGE - 1, "%s", text ? text : "restore failed");
              /* Tasks that are not traced yet go by hand; the traced ones by
                 PTRACE_O_EXITKILL when we exit. The init says why, once:
                 wait until it has (it sets 3), or it failed on its own and
                 says that instead. */
              for (size_t i = 1; i < c.np; i++)
                kill(c.p[i].pid, SIGKILL);
              __atomic_store_n(&c.go[0], 2, __ATOMIC_RELEASE);
              syscall(SYS_futex, &c.go[0], FUTEX_WAKE, 1, NULL, NULL, 0);
              syscall(SYS_futex, &c.go[0], FUTEX_WAIT, 2, &ack, NULL, 0);
              _exit(1);
            }
          /* Only now is the tree restored: say so to whoever follows the
             restore (crest, through the restorer's sync pipe). */
          if (o->done_fd > 0 && write(o->done_fd, "D\n", 2) != 2)
            _exit(1);
          _exit(0);
        }
      {
        sigjmp_buf jb;
        if (sigsetjmp(jb, 0) == 0)
          {
            c.init_fail = &jb;
            task_main(&c, 0);
          }
        /* Only a failure comes back: the helper and the tasks created so far
           go with this process (their PID namespace ends with its init). */
        c.init_fail = NULL;
        kill(h, SIGKILL);
        crest_error_make(err, 0, "restore: %s", c.init_msg);
        sigprocmask(SIG_SETMASK, &old, NULL);
        goto out;
      }
    }
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  sigprocmask(SIG_BLOCK, &all, &old);
  if (create_task(&c, 0) < 0)
    {
      crest_error_errno(err, "restore: create process %d", c.p[0].pid);
      sigprocmask(SIG_SETMASK, &old, NULL);
      goto out;
    }
  close(c.report[1]);
  c.report[1] = -1;
  fault_kill("created");
  if (finish_tree(&c, err) < 0)
    goto fail;
  fault_kill("running");
  sigprocmask(SIG_SETMASK, &old, NULL);
  *root_out = c.p[0].pid;
  {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (c.progress
        || (now.tv_sec - c.t0.tv_sec) * 1000000000L + (now.tv_nsec - c.t0.tv_nsec) >= 1000000000L)
      crest_progress("restore of %s: done, %zu processes running", o->image_dir, c.np);
  }
  if (o->pid_file)
    {
      /* All or nothing: a caller that gets no PID must not find the tree
         running (its retry would meet "PID in use"). */
      char num[24];
      int n = snprintf(num, sizeof num, "%d", c.p[0].pid);
      if (write_file_atomic(o->pid_file, num, n, 0644, err) < 0)
        {
          kill_all(&c);
          goto out;
        }
    }
  if (!o->detach)
    {
      int st;
      while (waitpid(c.p[0].pid, &st, 0) < 0 && errno == EINTR)
        ;
      if (o->root_status)
        *o->root_status = st;
    }
  rc = 0;
  goto out;
fail:
  kill_all(&c);
  sigprocmask(SIG_SETMASK, &old, NULL);
out:
  for (int fd = c.svc_base; fd > 0 && fd < c.svc_next; fd++)
    close(fd);
  if (c.report[0] >= 0)
    close(c.report[0]);
  if (c.report[1] >= 0)
    close(c.report[1]);
  if (c.go)
    munmap(c.go, ((c.np * 4 + PAGE - 1) & ~(PAGE - 1)) + PAGE);
  free_ctx(&c);
  return rc;
}
