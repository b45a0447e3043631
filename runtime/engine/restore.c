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
#include <sys/signalfd.h>
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
  /* "regs" and "xstate" are decoded here and never kept: jtree.c frees
     their text with the tree's nodes. */
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
  p->th = xzalloc(n * sizeof *p->th);
  /* nth counts the threads parsed so far: free_ctx frees what they hold
     also when one fails. */
  for (long i = 0; i < n; i++)
    if (p->nth++, parse_thread(c, items[i], &p->th[i], err) < 0)
      return crest_error_wrap(err, "process %d", p->pid);
  CHECK(p->th[0].tid == p->pid, "process %d: first thread is %d", p->pid, p->th[0].tid);
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

static int
parse_tree(struct rctx *c, crest_error_t *err)
{
  yajl_val *items;
  long n;
  int64_t root;

  if (img_reader_json_tree(c->img, "tree.json", &c->jt, &c->tree, err) < 0)
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

/* ---------- service descriptors ---------- */

/* Process P's page files in the parent images its runs read from. */
static int
open_chain_pages(struct rctx *c, struct rproc *p, crest_error_t *err)
{
  cleanup_free char *name = xasprintf("pages-%d.img", p->pid);
  for (int k = 0; k <= CHAIN_MAX; k++)
    p->chain_svc[k] = -1;
  for (int k = 1; k <= c->nchain; k++)
    {
      uint64_t size;
      int fd;
      if (!p->chain_size[k])
        continue;
      fd = img_reader_open_file(c->chain[k - 1], name, &size, err);
      if (fd < 0 || (p->chain_svc[k] = svc_place(c, fd, err)) < 0)
        return -1;
    }
  return 0;
}

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

/* Files opened by path for the tasks (executables, mapped files), one
   descriptor per path, mode and use for the whole tree: every task
   inherits every service descriptor, the same open file description in
   each, so a second open of the same path gave nothing but one more
   descriptor to copy at each fork and close in each task (1,200 of them
   for 200 processes). */
struct svc_file
{
  const char *path;
  int kind; /* 0 executable, 1 mapped read-only, 2 mapped shared and writable */
  int fd;
  uint64_t size;
};

struct svc_files
{
  struct svc_file *t;
  size_t cap, n;
};

static size_t
svc_hash(const char *path, int kind, size_t cap)
{
  uint64_t h = 1469598103934665603ULL ^ (uint64_t)kind;
  for (const unsigned char *s = (const unsigned char *)path; *s; s++)
    h = (h ^ *s) * 1099511628211ULL;
  return (size_t)h & (cap - 1);
}

static struct svc_file *
svc_slot(struct svc_files *sf, const char *path, int kind)
{
  size_t i;
  if (2 * (sf->n + 1) > sf->cap)
    {
      struct svc_files g = { xzalloc(2 * (sf->cap ? sf->cap : 64) * sizeof *g.t),
                             2 * (sf->cap ? sf->cap : 64), sf->n };
      for (size_t k = 0; k < sf->cap; k++)
        if (sf->t[k].path)
          {
            size_t j = svc_hash(sf->t[k].path, sf->t[k].kind, g.cap);
            while (g.t[j].path)
              j = (j + 1) & (g.cap - 1);
            g.t[j] = sf->t[k];
          }
      free(sf->t);
      *sf = g;
    }
  for (i = svc_hash(path, kind, sf->cap); sf->t[i].path; i = (i + 1) & (sf->cap - 1))
    if (sf->t[i].kind == kind && strcmp(sf->t[i].path, path) == 0)
      return &sf->t[i];
  return &sf->t[i];
}

/* The service descriptor of PATH opened as KIND, opened on first use; a
   mapped file's size is checked against SIZE at every use. */
static int
svc_open_path(struct rctx *c, struct svc_files *sf, const char *path, int kind, uint64_t size,
              pid_t pid, crest_error_t *err)
{
  struct svc_file *e = svc_slot(sf, path, kind);
  if (!e->path)
    {
      struct stat st;
      int fd = img_open_typed(path, kind == 2 ? O_RDWR : O_RDONLY, S_IFREG,
                              kind ? "mapped file" : "executable", err);
      if (fd < 0)
        return crest_error_wrap(err, "process %d", pid);
      if (fstat(fd, &st) < 0)
        {
          close(fd);
          return crest_error_errno(err, "restore: process %d: stat %s", pid, path);
        }
      if ((e->fd = svc_place(c, fd, err)) < 0)
        return -1;
      e->path = path, e->kind = kind, e->size = (uint64_t)st.st_size;
      sf->n++;
    }
  if (kind && e->size != size)
    return crest_error_make(err, ESTALE,
                            "restore: process %d: mapped file %s changed size since the checkpoint",
                            pid, path);
  return e->fd;
}

static int
open_proc_files(struct rctx *c, struct rproc *p, struct svc_files *sf, crest_error_t *err)
{
  uint64_t size;
  int fd = img_reader_open_file(c->img, p->pages_file, &size, err);
  if (fd < 0 || (p->pages_svc = svc_place(c, fd, err)) < 0 || open_chain_pages(c, p, err) < 0)
    return -1;
  if ((p->exe_svc = svc_open_path(c, sf, p->exe, 0, 0, p->pid, err)) < 0)
    return -1;
  for (size_t k = 0; k < p->nvmas; k++)
    {
      struct rvma *m = &p->vmas[k];
      if (!m->path)
        continue;
      if (m->data)
        {
          if ((m->svc = memfile_svc(c, m->data, m->path, err)) < 0)
            return crest_error_wrap(err, "restore: process %d: mapping of %s", p->pid, m->path);
          continue;
        }
      m->svc = svc_open_path(c, sf, m->path, m->shared && (m->prot & PROT_WRITE) ? 2 : 1,
                             m->file_size, p->pid, err);
      if (m->svc < 0)
        return -1;
    }
  return 0;
}

static int
open_files(struct rctx *c, crest_error_t *err)
{
  int maxfd = 2, rc = 0;
  struct rlimit rl;
  struct svc_files sf = { NULL, 0, 0 };

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
  /* Files of a container user (mode 0600, or under a directory of mode
     0700) are opened as that user (creds.c). */
  creds_open_as_tasks(c, true);
  if (tty_open(c, err) < 0 || pipes_open(c, err) < 0 || files_open(c, err) < 0)
    return -1;
  for (size_t i = 0; i < c->np && rc == 0; i++)
    if (!c->p[i].zombie)
      rc = open_proc_files(c, &c->p[i], &sf, err);
  free(sf.t);
  if (rc < 0 || files_finish(c, err) < 0)
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

/* ---------- the engine side ---------- */

static double
ms_since(const struct timespec *t0)
{
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (now.tv_sec - t0->tv_sec) * 1e3 + (now.tv_nsec - t0->tv_nsec) / 1e6;
}

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

/* CPU time (clock ticks) the processes that reported have used so far:
   the restore's progress that sends no event (a blob filling a large
   mapping). */
static unsigned long long
tree_cpu(struct rctx *c)
{
  unsigned long long sum = 0;
  for (size_t i = 0; i < c->np; i++)
    {
      char path[40], buf[1024], *s;
      unsigned long long ut = 0, st = 0;
      ssize_t n;
      int fd;
      if (c->p[i].real <= 0)
        continue;
      snprintf(path, sizeof path, "/proc/%d/stat", (int)c->p[i].real);
      if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        continue;
      n = read(fd, buf, sizeof buf - 1);
      close(fd);
      if (n <= 0)
        continue;
      buf[n] = 0;
      /* After the command's closing parenthesis: state is field 3, utime
         and stime are fields 14 and 15. */
      if ((s = strrchr(buf, ')'))
          && sscanf(s + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) == 2)
        sum += ut + st;
    }
  return sum;
}

/* One report of a task: seize it and tell it to go on. 1: taken, 0: the
   pipe is at its end (every task closed it), -1: an error. */
static int
take_report(struct rctx *c, crest_error_t *err)
{
  struct report r;
  ssize_t got = read(c->report[0], &r, sizeof r);
  if (got == 0)
    return 0;
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
  return 1;
}

/* Every stop and exit waiting to be collected: a thread parked at the
   blob's int3 counts in *PARKED; any collected event is progress. */
static int
reap_events(struct rctx *c, size_t *parked, bool *progress, crest_error_t *err)
{
  pid_t w;
  int st;
  while ((w = waitpid(-1, &st, __WALL | WNOHANG)) > 0)
    {
      struct rproc *p = NULL;
      struct rthread *t = find_thread(c, w, &p);
      *progress = true;
      if (WIFEXITED(st) || WIFSIGNALED(st))
        {
          if (t)
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
            (*parked)++;
          t->parked = true;
        }
      else
        ptrace(PTRACE_CONT, w, 0, WSTOPSIG(st) == SIGTRAP ? 0 : WSTOPSIG(st));
    }
  return 0;
}

/* A signalfd of SIGCHLD, which the caller holds blocked: the tracer is
   sent one for every stop and exit of a tracee (unless it ignores SIGCHLD
   or set SA_NOCLDSTOP: put back to the default while this runs, in OLD). */
static int
chld_fd(struct sigaction *old, crest_error_t *err)
{
  struct sigaction dfl;
  sigset_t chld;
  int fd;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, NULL);
  sigaction(SIGCHLD, &dfl, old);
  fd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  if (fd < 0)
    {
      sigaction(SIGCHLD, old, NULL);
      return crest_error_errno(err, "restore: signalfd");
    }
  return fd;
}

/* Seize every task as it reports and wait until every thread is parked,
   in one poll of the report pipe and SIGCHLD: no sleep. A restore is stuck
   when for 30 s nothing was reported, no task stopped or exited, and the
   reported processes used no CPU time (a blob filling memory on a loaded
   machine is slow, not stuck). */
static int
wait_parked(struct rctx *c, crest_error_t *err)
{
  size_t reported = 0, parked = 0, total = 0, live = 0;
  struct sigaction old;
  struct signalfd_siginfo si;
  unsigned long long cpu = 0;
  time_t last = time(NULL);
  bool eof = false;
  int sfd, rc = 0;

  for (size_t i = 0; i < c->np; i++)
    total += c->p[i].nth, live += !c->p[i].zombie;
  if ((sfd = chld_fd(&old, err)) < 0)
    return -1;
  while (rc == 0 && (reported < live || parked < total))
    {
      struct pollfd pfd[2]
          = { { reported < live && !eof ? c->report[0] : -1, POLLIN, 0 }, { sfd, POLLIN, 0 } };
      bool progress = false;
      int n = poll(pfd, 2, 1000);
      if (n < 0 && errno != EINTR)
        rc = crest_error_errno(err, "restore: poll");
      else if (n > 0 && (pfd[0].revents & (POLLIN | POLLHUP)))
        {
          /* At its end: every task closed it, so one died before it
             reported; its exit, when ours to see, says which. */
          int r = take_report(c, err);
          rc = r < 0 ? -1 : 0;
          reported += r > 0;
          eof = r == 0;
          progress = r > 0;
        }
      while (rc == 0 && read(sfd, &si, sizeof si) == sizeof si)
        ;
      if (rc == 0)
        rc = reap_events(c, &parked, &progress, err);
      if (rc == 0 && n == 0 && !progress)
        {
          unsigned long long now_cpu = tree_cpu(c);
          progress = now_cpu != cpu;
          cpu = now_cpu;
        }
      if (progress)
        last = time(NULL);
      else if (rc == 0 && time(NULL) - last > 30)
        rc = crest_error_make(err, ETIMEDOUT,
                              "restore: no progress for 30 s (%zu of %zu processes ready, %zu of "
                              "%zu threads done%s)",
                              reported, live, parked, total,
                              eof && reported < live ? ", a process exited before it was ready"
                                                     : "");
    }
  close(sfd);
  sigaction(SIGCHLD, &old, NULL);
  return rc;
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
    case BLOB_OP_UFFD:
      return "userfaultfd (--lazy-pages)";
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
    case SYS_seccomp:
      return "seccomp (the container's profile)";
    default:
      return "syscall";
    }
}

/* Read N bytes at ADDR of the stopped tracee TID. Once the blob has given
   a task other IDs than crest's, process_vm_readv needs CAP_SYS_PTRACE
   over it, which a container's restorer lacks; ptrace's own requests
   serve its tracer whatever the IDs. */
static ssize_t
tracee_read(pid_t tid, void *buf, size_t n, uint64_t addr)
{
  struct iovec l = { buf, n }, r = { (void *)addr, n };
  ssize_t got = process_vm_readv(tid, &l, 1, &r, 1, 0);
  if (got >= 0 || errno != EPERM)
    return got;
  for (size_t off = 0; off < n; off += sizeof(long))
    {
      long w;
      size_t k = n - off < sizeof w ? n - off : sizeof w;
      errno = 0;
      w = ptrace(PTRACE_PEEKDATA, tid, (void *)(addr + off), NULL);
      if (errno)
        return -1;
      memcpy((uint8_t *)buf + off, &w, k);
    }
  return (ssize_t)n;
}

static int
check_blob_status(struct rctx *c, struct rproc *p, crest_error_t *err)
{
  uint64_t args = p->base + ((crest_restorer_blob_size + PAGE - 1) & ~(PAGE - 1));
  size_t n = sizeof(struct blob_args) + (p->nth - 1) * sizeof(struct blob_ops);
  cleanup_free uint8_t *buf = xmalloc(n);
  if (tracee_read(p->pid, buf, n, args) != (ssize_t)n)
    return crest_error_errno(err, "restore: process %d: read the restorer's status", p->pid);
  for (size_t t = 0; t < p->nth; t++)
    {
      struct blob_ops *o = t == 0 ? &((struct blob_args *)buf)->main
                                  : (struct blob_ops *)(buf + sizeof(struct blob_args)) + (t - 1);
      if (o->status != 0)
        {
          struct blob_op bop;
          uint64_t at = o->ops + (o->status > 0 ? o->status - 1 : 0) * sizeof bop;
          if (o->status < 0 || tracee_read(p->pid, &bop, sizeof bop, at) != sizeof bop)
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
          /* Not dumpable: last, once crest has read all it reads. Or
             dumpable, after the blob changed its IDs, which cleared it. */
          if (p->pr.dumpable == 0 || creds_change(p))
            {
              long a[6] = { PR_SET_DUMPABLE, p->pr.dumpable, 0, 0, 0, 0 }, ret;
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

  for (size_t k = 0; k < p->nkids; k++)
    any |= c->p[c->kids[p->kid0 + k]].stop_sig && !c->p[c->kids[p->kid0 + k]].zombie;
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
  c->ms_parked = ms_since(&c->t0);
  /* --lazy-pages: the verdict is awaited once every page is in (lazy.c). */
  if (!c->lazy && img_reader_verified(c->img, err) < 0)
    return -1;
  for (int i = 0; !c->lazy && i < c->nchain; i++)
    if (img_reader_verified(c->chain[i], err) < 0)
      return crest_error_wrap(err, "parent image");
  c->ms_verified = ms_since(&c->t0);
  for (size_t i = 0; i < c->np; i++)
    if (!c->p[i].zombie && check_blob_status(c, &c->p[i], err) < 0)
      return -1;
  /* Every process group exists now, and no task runs yet: the terminal's
     foreground group goes back to the one the checkpoint saw. */
  if (c->term_fg > 0 && c->term_svc >= 0 && c->o->as_ns_init
      && tcsetpgrp(c->term_svc, c->term_fg) < 0)
    return crest_error_errno(err, "restore: make process group %d the terminal's foreground group",
                             (int)c->term_fg);
  /* Every owner of signal-driven I/O exists now. */
  if (files_fown(c, err) < 0)
    return -1;
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
  c->ms_finished = ms_since(&c->t0);
  for (size_t i = 0; i < c->np; i++)
    for (size_t t = 0; t < c->p[i].nth && !lazy_proc(c, &c->p[i]); t++)
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
  lazy_free(c);
  for (size_t i = 0; i < c->np; i++)
    {
      struct rproc *p = &c->p[i];
      for (size_t t = 0; t < p->nth; t++)
        free(p->th[t].xstate), free(p->th[t].pending);
      free(p->th), free(p->vmas), free(p->runs), free(p->fds), free(p->groups), free(p->auxv);
      free(p->shared_pending), free(p->timers);
      cow_free(p);
    }
  for (size_t i = 0; i < c->nf; i++)
    free(c->f[i].priv), free(c->f[i].u.ext), free(c->f[i].deleted_dir.ext);
  free(c->p), free(c->kids), free(c->f), free(c->pp), free(c->mf);
  ipc_free(c->ipc);
  jtree_free(c->jt);
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
  /* Every task inherits the filters the restore runs under. */
  if (seccomp_restore_check(c, err) < 0)
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
  c->helper = h;
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
  if (o->as_ns_init)
    {
      restore_as_init(&c, &all, &old, err);
      goto out;
    }
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  sigprocmask(SIG_BLOCK, &all, &old);
  task_layout_prime();
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
