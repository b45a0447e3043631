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

#include "restore-int.h"

/* ---------- reading the image ---------- */

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

bool
has_key(yajl_val v, const char *key)
{
  for (size_t i = 0; YAJL_IS_OBJECT(v) && i < YAJL_GET_OBJECT(v)->len; i++)
    if (strcmp(v->u.object.keys[i], key) == 0)
      return true;
  return false;
}

/* A zombie: its IDs and its exit status are all there is. 1: V is one,
   0: it is not, -1: bad. */
static int
parse_zombie(yajl_val v, struct rproc *p, crest_error_t *err)
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
      return 1;
    }
  return 0;
}

static int
parse_process(struct rctx *c, yajl_val v, struct rproc *p, crest_error_t *err)
{
  int64_t pid, ppid, pgid, sid, pers;
  yajl_val *items, cr = NULL, mm = NULL;
  long n;

  {
    int z = parse_zombie(v, p, err);
    if (z != 0)
      return z < 0 ? -1 : 0;
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
  if (creds_parse(cr, p, err) < 0)
    return -1;
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
  if (mem_parse_mm(mm, p, err) < 0)
    return -1;
  if (sig_parse_process(v, p, err) < 0)
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

  if (mem_parse_vmas(c, v, p, err) < 0 || mem_parse_pages(c, v, p, err) < 0)
    return -1;
  if (files_parse_fds(c, v, p, err) < 0)
    return -1;

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

  if (files_parse(c, err) < 0)
    return -1;
  if (tty_parse(c, err) < 0)
    return -1;
  if (pipes_parse(c, err) < 0)
    return -1;
  return 0;
}

/* ---------- service descriptors ---------- */

/* Move FD to the service range, above every descriptor of the tree. */
int
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
  if (tty_open(c, err) < 0 || pipes_open(c, err) < 0 || files_open(c, err) < 0)
    return -1;
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
  if (files_finish(c, err) < 0)
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

void __attribute__((noreturn)) task_fail(struct rctx *c, int idx, const char *fmt, ...)
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

static void
task_session(struct rctx *c, int idx, const struct rproc *p)
{
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
}

/* Children: group leaders first, so that their groups exist for the
   others to join. A zombie child exits at once; its SIGCHLD is taken
   back here (the checkpointed pending signals come back in the blob),
   after it has exited, so the restored process sees no new one. A group
   a zombie leads lives on until the zombie is waited for. */
static void
task_children(struct rctx *c, int idx, const struct rproc *p)
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

static void
task_attrs(struct rctx *c, int idx, const struct rproc *p)
{
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
}

/* Its vDSO and vvar match this kernel's (SP, NSP: this process's). */
static void
check_specials(struct rctx *c, int idx, const struct rproc *p, const struct special *sp, size_t nsp)
{
  size_t nvsp = 0;
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
}

/* The mappings: 1. the vDSO and vvar out of the way, 2. everything else
   gone, 3. the vDSO where it was, 4. the target mappings, filled, then
   their protections and advice. The blob region is BASE, SIZE long;
   SCRATCH is room for the specials SP. */
static void
mem_ops(const struct rproc *p, struct special *sp, size_t nsp, uint64_t base, uint64_t size,
        uint64_t scratch, struct oplist *l)
{
  /* 1. the vDSO and vvar out of the way, 2. everything else gone,
     3. the vDSO where it was. */
  {
    uint64_t s = scratch;
    for (size_t k = 0; k < nsp; k++)
      {
        uint64_t len = sp[k].end - sp[k].start;
        OPEQ(l, SYS_mremap, s, sp[k].start, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, s, 0);
        sp[k].start = s, sp[k].end = s + len;
        s += len;
      }
    OP(l, SYS_munmap, 0, base, 0, 0, 0, 0);
    OP(l, SYS_munmap, base + size, TASK_TOP - (base + size), 0, 0, 0, 0);
    for (size_t i = 0; i < p->nvmas; i++)
      for (size_t k = 0; k < nsp; k++)
        if (strcmp(sp[k].kind, p->vmas[i].kind) == 0 && sp[k].start)
          {
            uint64_t len = sp[k].end - sp[k].start;
            OPEQ(l, SYS_mremap, p->vmas[i].start, sp[k].start, len, len,
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
      OPEQ(l, SYS_mmap, (int64_t)m->start, m->start, m->end - m->start, prot, flags,
           m->path ? (uint64_t)m->svc : (uint64_t)-1, m->path ? m->pgoff * PAGE : 0);
    }
  for (size_t i = 0; i < p->nruns; i++)
    OP(l, BLOB_OP_PREAD_FULL, p->pages_svc, p->runs[i].vaddr, p->runs[i].len, p->runs[i].off, 0, 0);
  for (size_t i = 0; i < p->nvmas; i++)
    {
      struct rvma *m = &p->vmas[i];
      if (m->shared || strcmp(m->kind, "vdso") == 0 || strncmp(m->kind, "vvar", 4) == 0
          || m->prot == (PROT_READ | PROT_WRITE))
        continue;
      OP(l, SYS_mprotect, m->start, m->end - m->start, m->prot, 0, 0, 0);
    }
  /* The advice smaps showed (vmflags.c), once the pages are in. */
  for (size_t i = 0; i < p->nvmas; i++)
    for (uint32_t bit = 1; bit <= VMF_ALL; bit <<= 1)
      if ((p->vmas[i].madv & bit) && vmflags_advice(bit))
        OP(l, SYS_madvise, p->vmas[i].start, p->vmas[i].end - p->vmas[i].start, vmflags_advice(bit),
           0, 0, 0);
}

/* 5. mm fields and the exe link (CAP_CHECKPOINT_RESTORE), 6. signal
   dispositions and timers. */
static void
mm_sig_ops(const struct rproc *p, struct oplist *l, struct bld *b)
{
  /* 5. mm fields and the exe link (CAP_CHECKPOINT_RESTORE). */
  {
    struct mm_map mm = p->mm;
    mm.auxv = bld_alloc(b, p->auxv_len, 8, p->auxv);
    mm.auxv_size = p->auxv_len;
    mm.exe_fd = p->exe_svc;
    OP(l, SYS_prctl, PR_SET_MM, PR_SET_MM_MAP, bld_alloc(b, sizeof mm, 8, &mm), sizeof mm, 0, 0);
  }
  /* 6. signal dispositions and timers. */
  for (int sg = 1; sg <= 64; sg++)
    {
      if (sg == SIGKILL || sg == SIGSTOP)
        continue;
      OP(l, SYS_rt_sigaction, sg, bld_alloc(b, sizeof p->sa[sg], 8, &p->sa[sg]), 0, 8, 0, 0);
    }
  for (int w = 0; w < 3; w++)
    if (p->itimer[w][2] || p->itimer[w][3])
      OP(l, SYS_setitimer, w, bld_alloc(b, sizeof p->itimer[w], 8, p->itimer[w]), 0, 0, 0, 0);
}

/* 7. the other threads, each finishing its own state (TOPS[t], t > 0);
   ARGS_ADDR is the blob's arguments. */
static void
thread_ops(struct rctx *c, struct rproc *p, uint64_t args_addr, struct oplist *l,
           struct oplist *tops, struct bld *b)
{
  for (size_t t = 1; t < p->nth; t++)
    {
      struct rthread *th = &p->th[t];
      struct clone_args ca;
      uint64_t stack = bld_alloc(b, THREAD_STACK, 64, NULL);
      uint64_t tidp = bld_alloc(b, sizeof(pid_t), 8, &th->tid);
      memset(&ca, 0, sizeof ca);
      ca.flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM;
      ca.stack = stack;
      ca.stack_size = THREAD_STACK;
      if (c->use_nslp)
        {
          char num[24];
          int len = snprintf(num, sizeof num, "%d", th->tid - 1);
          struct flock lk = nslp_lock(F_WRLCK);
          OP(l, SYS_fcntl, c->nslp_fd, F_SETLKW, bld_alloc(b, sizeof lk, 8, &lk), 0, 0, 0);
          OPEQ(l, SYS_pwrite64, len, c->nslp_fd, bld_alloc(b, len + 1, 8, num), len, 0, 0, 0);
        }
      else
        {
          ca.set_tid = tidp;
          ca.set_tid_size = 1;
        }
      thread_tail_ops(c, p, th, &tops[t], b);
      OPEQ(l, BLOB_OP_CLONE_THREAD, th->tid, bld_alloc(b, sizeof ca, 8, &ca), sizeof ca,
           args_addr + sizeof(struct blob_args) + (t - 1) * sizeof(struct blob_ops), 0, 0, 0);
      if (c->use_nslp)
        {
          struct flock ul = nslp_lock(F_UNLCK);
          OP(l, SYS_fcntl, c->nslp_fd, F_SETLK, bld_alloc(b, sizeof ul, 8, &ul), 0, 0, 0);
        }
    }
}

/* 8. the main thread's own state, process-wide pending signals, limits,
   and the service descriptors gone. */
static void
main_tail_ops(struct rctx *c, int idx, struct rproc *p, struct oplist *l, struct bld *b)
{
  OP(l, SYS_prctl, PR_SET_PDEATHSIG, 0, 0, 0, 0, 0);
  for (size_t i = 0; i < p->nshared_pending; i++)
    {
      int32_t sig;
      memcpy(&sig, p->shared_pending[i], 4);
      OP(l, SYS_rt_sigqueueinfo, p->pid, sig, bld_alloc(b, 128, 8, p->shared_pending[i]), 0, 0, 0);
    }
  for (int r_ = 0; r_ < RLIM_NLIMITS; r_++)
    OP(l, SYS_prlimit64, 0, r_, bld_alloc(b, 16, 8, p->rl[r_]), 0, 0, 0);
  OP(l, SYS_close_range, c->svc_base, ~0U, 0, 0, 0, 0);
  process_attr_ops(p, l, b);
  {
    /* Test hook: the last process's restorer fails here, after every task
       exists, to prove that a late failure leaves nothing behind. */
    const char *fault = crest_test_knob("CREST_FAULT");
    if (fault && strcmp(fault, "restore-blob") == 0 && (size_t)idx == c->np - 1)
      OP(l, SYS_close, (uint64_t)-1, 0, 0, 0, 0, 0);
  }
  thread_tail_ops(c, p, &p->th[0], l, b);
}

/* Lay the operation lists out in the region at BASE (REGION here). */
static void
lay_out_ops(const struct rproc *p, uint8_t *region, uint64_t base, uint64_t args_addr,
            const struct oplist *main_ops, const struct oplist *tops, struct bld *b)
{
  struct blob_args a;
  memset(&a, 0, sizeof a);
  a.magic = BLOB_MAGIC;
  a.main.n = main_ops->n;
  a.main.ops = bld_alloc(b, main_ops->n * sizeof *main_ops->ops, 64, main_ops->ops);
  a.main.status = -1;
  memcpy(region + (args_addr - base), &a, sizeof a);
  for (size_t t = 1; t < p->nth; t++)
    {
      struct blob_ops h;
      h.n = tops[t].n;
      h.ops = bld_alloc(b, tops[t].n * sizeof *tops[t].ops, 64, tops[t].ops);
      h.status = -1;
      h.result = 0;
      memcpy(region + (args_addr - base) + sizeof a + (t - 1) * sizeof h, &h, sizeof h);
    }
}

/* Report ready, wait for the go, and jump to the blob at BASE. */
static void __attribute__((noreturn))
task_go(struct rctx *c, int idx, uint64_t base, uint64_t size, uint64_t args_addr, struct bld *b)
{
  const struct rproc *p = &c->p[idx];
  struct report r;
  uint64_t stack_lo = bld_alloc(b, MAIN_STACK, 64, NULL);

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

static void __attribute__((noreturn)) task_main(struct rctx *c, int idx)
{
  struct rproc *p = &c->p[idx];
  struct special sp[8];
  static uint64_t lay[4096][2];
  size_t nsp, nlay;
  uint64_t size, base, args_addr, scratch;
  struct bld b;
  struct oplist main_ops = { 0 }, *tops;
  uint8_t *region;

  if (!(c->o->as_ns_init && idx == 0))
    prctl(PR_SET_PDEATHSIG, SIGKILL);
  close(c->report[0]);

  task_session(c, idx, p);

  if (p->zombie)
    zombie_exit(p);

  task_children(c, idx, p);

  /* After the children exist (each one drops its own), before setresuid
     could clear the capabilities the drops need. */
  restore_bounding(c, idx, p);

  creds_restore(c, idx, p);
  task_attrs(c, idx, p);

  files_install(c, idx, p);

  /* The blob region: code, arguments, operations, data, stacks. */
  nsp = self_specials(sp, NULL, NULL, &nlay, lay);
  check_specials(c, idx, p, sp, nsp);
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

  mem_ops(p, sp, nsp, base, size, scratch, &main_ops);
  mm_sig_ops(p, &main_ops, &b);
  tops = xzalloc(p->nth * sizeof *tops);
  thread_ops(c, p, args_addr, &main_ops, tops, &b);
  main_tail_ops(c, idx, p, &main_ops, &b);

  lay_out_ops(p, region, base, args_addr, &main_ops, tops, &b);
  /* The root directory last of everything opened by path (files, exe and
     mapped files are open in the service range, the cwd and /proc/self are
     done): the image's paths are all in the tree's root, and a chroot'd
     task's cwd may lie outside its root, as it did. Its children already
     exist (they chroot themselves if they were). Still with the restorer's
     capabilities; the blob lowers them to the task's own at its end. */
  if (p->root_dir && chroot(p->root_dir) < 0)
    task_fail(c, idx, "process %d: chroot %s: %s%s", p->pid, p->root_dir, strerror(errno),
              errno == EPERM ? " (it needs CAP_SYS_CHROOT)" : "");
  task_go(c, idx, base, size, args_addr, &b);
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
  if (f && strncmp(f, "restore-kill:", 13) == 0 && strcmp(f + 13, phase) == 0)
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
    free(c->f[i].priv);
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
  if (img_reader_open(o->image_dir, check_kernel, true, &c->img, err) < 0 || parse_tree(c, err) < 0)
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
crest_engine_plan(const struct crest_restore_opts *o, crest_error_t *err)
{
  struct rctx c;
  int rc;
  memset(&c, 0, sizeof c);
  c.o = o;
  c.term_svc = -1;
  rc = plan_restore(&c, false, err);
  free_ctx(&c);
  return rc;
}

/* Every PID and TID of the image is free here. */
static int
check_pids_free(struct rctx *c, crest_error_t *err)
{
  for (size_t i = 0; i < c->np; i++)
    for (size_t t = 0; t < c->p[i].nth + c->p[i].zombie; t++)
      {
        pid_t tid = c->p[i].zombie ? c->p[i].pid : c->p[i].th[t].tid;
        if (!(c->o->as_ns_init && tid == 1) && (kill(tid, 0) == 0 || errno != ESRCH))
          return crest_error_make(err, EEXIST, "restore: PID %d is in use in this PID namespace",
                                  tid);
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
  c->go = mmap(NULL, ((c->np * 4 + PAGE - 1) & ~(PAGE - 1)) + PAGE, PROT_READ | PROT_WRITE,
               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (c->go == MAP_FAILED)
    {
      c->go = NULL;
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
      if (finish_tree(c, &e) < 0)
        {
          cleanup_free char *text = crest_error_text(e);
          struct timespec ack = { 2, 0 };
          snprintf((char *)(c->go + c->np), PAGE - 1, "%s", text ? text : "restore failed");
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
  if (!c->o->detach)
    {
      int st;
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
  if (check_pids_free(&c, err) < 0)
    {
      free_ctx(&c);
      return -1;
    }
  if (o->pid_file && check_pid_file_dir(o->pid_file, err) < 0)
    goto out;
  fault_kill("checked");
  if (open_files(&c, err) < 0)
    goto out;
  fault_kill("files");
  if (open_report(&c, err) < 0)
    goto out;
  sigfillset(&all);
  if (o->as_ns_init)
    {
      restore_as_init(&c, &all, &old, err);
      goto out;
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
  if (restore_done(&c, root_out, err) < 0)
    goto out;
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
