/* crest: lazy restore (docs/engine.md, "Lazy restore"). With --lazy-pages
 * the private anonymous mappings of a process go in empty: its blob, once
 * the layout is final, makes a userfaultfd (UFFD_USER_MODE_ONLY, no
 * privilege needed since Linux 5.11), registers them (missing pages) and
 * sends the descriptor to crest over a unix socket. The tree then runs; crest,
 * still its tracer, answers each fault with the page from the image and
 * copies the rest in the background; a guard process holds the same
 * descriptors and kills the tree if crest dies before the end. */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/kcmp.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "engine.h"
#include "engine-int.h"
#include "image.h"
#include "log.h"
#include "testhook.h"
#include "util.h"
#include "blob/blob-abi.h"

#include "restore-int.h"

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#define LAZY_FEATURES                                                                              \
  (UFFD_FEATURE_EVENT_REMAP | UFFD_FEATURE_EVENT_REMOVE | UFFD_FEATURE_EVENT_UNMAP)
#define CHUNK_PAGES 256 /* a background copy: 1 MiB */
#define MAX_LAZY 128
#define FAULT_PAGES 16 /* a fault's copy: the page and up to 15 after it */

/* A page's state: the image has no data for it (it reads zero), data to
   copy in, copied in, answered with a zero page (removed by the program, or
   no data). */
enum
{
  PG_NODATA,
  PG_DATA,
  PG_FILLED,
  PG_ZEROED
};

/* Where lazy pages are now: [cur, cur + len) holds the pages the image had
   at [orig, orig + len) (mremap moves them; the registration moves too). */
struct seg
{
  uint64_t cur, orig, len;
};

struct lproc
{
  struct rproc *p;
  int uffd;                       /* crest's; -1: none, or its memory is gone */
  uint64_t *vstart, *vend, *vidx; /* its lazy mappings, and their first page's index */
  size_t nv;
  uint8_t *st; /* per page */
  uint64_t npages, left, cursor;
  struct seg *seg;
  size_t nseg;
  bool unreg;   /* every page in and the ranges unregistered (fill_all) */
  bool done;    /* every page in, its descriptors closed */
  bool moved;   /* a lazy mapping was moved (mremap): it may have grown */
  uint8_t *src; /* its page file, mapped read-only, or NULL */
  uint64_t src_len;
  bool unreg_wait;             /* a copy found no registered range, no event read since */
  struct timespec unreg_since; /* since when */
};

struct ltask
{
  pid_t tid;
  struct lproc *lp;
};

struct lazy
{
  int sock[2];
  struct lproc *lp;
  size_t nlp;
  struct ltask *t;
  size_t nt;
  uint8_t *buf;
  pid_t guard;
  int guard_fd, done_w;
  int root_status;
  bool root_exited;
  uint64_t filled_chunks;
  uint64_t n_faults, n_syscalls, n_fill_all, n_forks, n_unreg; /* CREST_STATS */
  int caller_fd;   /* --detach: a pidfd of the caller, until it has returned */
  uint64_t *retry; /* faults to answer again: (process index, address) pairs */
  size_t nretry;
};

bool
lazy_proc(const struct rctx *c, const struct rproc *p)
{
  if (!c->lazy)
    return false;
  for (size_t i = 0; i < p->nvmas; i++)
    if (p->vmas[i].lazy)
      return true;
  return false;
}

/* Is mapping I of P lazy: private anonymous memory, not locked, with
   pages in this image's own page file (runs of a parent image are read by
   the blob), in a process that shares no pages copy-on-write (mem-cow.c)
   and is not stopped. */
static bool
vma_lazy(const struct rproc *p, size_t i)
{
  const struct rvma *m = &p->vmas[i];
  bool any = false;
  /* A locked mapping is made present by the blob's mlock2, a fault the
     kernel takes itself, which a user-mode-only userfaultfd fails. So is
     every mapping of a process under mlockall(MCL_FUTURE). */
  if (p->zombie || p->cow || p->stop_sig || m->shared || !(m->prot & PROT_READ)
      || (m->madv & (VMF_LOCKS | VMF_NOACCOUNT)) || p->mcl
      || (strcmp(m->kind, "anon") != 0 && strcmp(m->kind, "heap") != 0))
    return false;
  for (size_t k = 0; k < p->nruns; k++)
    {
      const struct rrun *r = &p->runs[k];
      if (r->vaddr >= m->end || r->vaddr + r->len <= m->start)
        continue;
      if (r->from)
        return false;
      any = true;
    }
  return any;
}

/* Range K of thread T that the kernel touches on its own, where a fault
   cannot wait (module comment of lazy-sys.c): its rseq area, clear_tid
   word, robust list head, alternate signal stack and the stack just below
   its stack pointer (signal frames). Those pages are read by the blob. */
static bool
eager_range(const struct rthread *t, int k, uint64_t *s, uint64_t *len)
{
  switch (k)
    {
    case 0:
      *s = t->rseq, *len = t->rseq_size;
      break;
    case 1:
      *s = t->clear_tid, *len = 4;
      break;
    case 2:
      *s = t->robust, *len = t->robust_len ? t->robust_len : 24;
      break;
    case 3:
      *s = t->alt_sp, *len = t->alt_size < 65536 ? t->alt_size : 65536;
      if (t->alt_flags & SS_DISABLE)
        *len = 0;
      break;
    default:
      *s = t->regs.rsp > 32768 ? t->regs.rsp - 32768 : 0, *len = 32768 + 256;
      break;
    }
  return *s && *len;
}
#define EAGER_RANGES 5

/* Is A in a lazy mapping the blob may still write (eager pages: the
   protections are final by then; a read-only page is only read by the
   kernel, in a system call whose memory is made present first). */
static bool
in_lazy_vma(const struct rproc *p, uint64_t a)
{
  for (size_t i = 0; i < p->nvmas; i++)
    if (p->vmas[i].lazy && (p->vmas[i].prot & PROT_WRITE) && a >= p->vmas[i].start
        && a < p->vmas[i].end)
      return true;
  return false;
}

static bool
run_at(const struct rproc *p, uint64_t a, uint64_t *off, uint64_t *end);

/* The blob reads P's eager pages (eager_range) before it registers the rest. */
static void
eager_ops(const struct rproc *p, struct oplist *l)
{
  for (size_t t = 0; t < p->nth; t++)
    for (int k = 0; k < EAGER_RANGES; k++)
      {
        uint64_t s, len, off, end;
        if (!eager_range(&p->th[t], k, &s, &len))
          continue;
        for (uint64_t a = s & ~(PAGE - 1); a < s + len; a += PAGE)
          if (!in_lazy_vma(p, a))
            continue;
          else if (run_at(p, a, &off, &end))
            PAGES_OPS(l, p->pages_svc, a, PAGE, off);
          else
            op(l, SYS_madvise, BLOB_CHECK_NONE, 0, a, PAGE, MADV_POPULATE_WRITE, 0, 0, 0);
      }
}

/* One line for what this kernel cannot do, or 0. */
static int
check_kernel(crest_error_t *err)
{
  struct uffdio_api api = { .api = UFFD_API, .features = LAZY_FEATURES };
  int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY), e;
  const char *f = crest_test_knob("CREST_FAULT");
  if (fd >= 0 && f && strcmp(f, "lazy-old-kernel") == 0)
    {
      /* Test hook: as on a kernel before 5.11, which has no such flag. */
      close(fd);
      fd = -1;
      errno = EINVAL;
    }
  if (fd < 0)
    {
      e = errno;
      return crest_error_make(
          err, 0, "restore --lazy-pages: %s",
          e == ENOSYS   ? "this kernel has no userfaultfd (CONFIG_USERFAULTFD)"
          : e == EINVAL ? "this kernel has no UFFD_USER_MODE_ONLY (Linux 5.11)"
          : e == EPERM ? "userfaultfd is not permitted here (a seccomp filter or an LSM refuses it)"
                       : strerror(e));
    }
  if (ioctl(fd, UFFDIO_API, &api) < 0)
    {
      e = errno;
      close(fd);
      return crest_error_make(err, 0,
                              "restore --lazy-pages: userfaultfd without the remap, remove and "
                              "unmap events (UFFDIO_API: %s)",
                              strerror(e));
    }
  close(fd);
  if (syscall(SYS_kcmp, getpid(), getpid(), KCMP_VM, 0, 0) != 0)
    return crest_error_make(err, 0,
                            "restore --lazy-pages: this kernel has no kcmp (CONFIG_KCMP), which "
                            "tells a fork from a thread while the pages come in");
  return 0;
}

int
lazy_plan(struct rctx *c, crest_error_t *err)
{
  struct lazy *L;
  int fd;
  if (!c->o->lazy_pages)
    return 0;
  if (c->o->as_ns_init)
    return crest_error_make(err, 0,
                            "restore --lazy-pages: only in process mode (not for a container yet)");
  if (check_kernel(err) < 0)
    return -1;
  L = c->lazy = xzalloc(sizeof *L);
  L->sock[0] = L->sock[1] = L->guard_fd = L->done_w = L->caller_fd = -1;
  /* At most MAX_LAZY processes: their blobs' messages wait in the socket
     until crest takes them, after the last one parked. */
  for (size_t i = 0, n = 0; i < c->np; i++)
    {
      for (size_t k = 0; k < c->p[i].nvmas; k++)
        c->p[i].vmas[k].lazy = n < MAX_LAZY && vma_lazy(&c->p[i], k);
      n += lazy_proc(c, &c->p[i]);
    }
  if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, L->sock) < 0)
    return crest_error_errno(err, "restore --lazy-pages: socketpair");
  fd = L->sock[1];
  L->sock[1] = -1;
  if ((L->sock[1] = svc_place(c, fd, err)) < 0)
    return -1;
  return 0;
}

size_t
lazy_ops_bound(const struct rproc *p)
{
  return 2 * p->nvmas + 4 + p->nth * 2 * 32;
}

/* P's runs of pages outside its lazy mappings: read by the blob. */
void
lazy_pages_ops(const struct rproc *p, const struct rrun *r, struct oplist *l)
{
  uint64_t a = r->vaddr, end = r->vaddr + r->len;
  size_t k = 0;
  bool any = false;
  for (size_t i = 0; i < p->nvmas; i++)
    any |= p->vmas[i].lazy;
  if (!any)
    {
      fill_ops(p, l, RUN_SVC(p, r), r->vaddr, r->len, r->off);
      return;
    }
  while (a < end)
    {
      uint64_t e = end;
      bool lazy = false;
      while (k < p->nvmas && p->vmas[k].end <= a)
        k++;
      if (k < p->nvmas && p->vmas[k].start <= a)
        {
          lazy = p->vmas[k].lazy;
          e = p->vmas[k].end < end ? p->vmas[k].end : end;
        }
      else if (k < p->nvmas && p->vmas[k].start < end)
        e = p->vmas[k].start;
      if (!lazy)
        fill_ops(p, l, RUN_SVC(p, r), a, e - a, r->off + (a - r->vaddr));
      a = e;
    }
}

/* The blob's last memory operation: the userfaultfd over P's lazy
   mappings, sent to crest with P's PID (of the image) as the message. */
void
lazy_task_ops(struct rctx *c, const struct rproc *p, struct oplist *l, struct bld *b)
{
  struct blob_uffd u;
  struct msghdr mh;
  struct iovec iov;
  uint64_t *ranges = xmalloc(p->nvmas * 16 + 16), ctl, n = 0;
  int64_t pid = p->pid;
  char cbuf[CMSG_SPACE(sizeof(int))];
  struct cmsghdr *cm = (struct cmsghdr *)cbuf;

  if (!lazy_proc(c, p))
    {
      free(ranges);
      return;
    }
  for (size_t i = 0; i < p->nvmas; i++)
    if (p->vmas[i].lazy)
      {
        ranges[2 * n] = p->vmas[i].start;
        ranges[2 * n + 1] = p->vmas[i].end - p->vmas[i].start;
        n++;
      }
  memset(cbuf, 0, sizeof cbuf);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN(sizeof(int));
  ctl = bld_alloc(b, sizeof cbuf, 8, cbuf);
  iov.iov_base = (void *)bld_alloc(b, sizeof pid, 8, &pid);
  iov.iov_len = sizeof pid;
  memset(&mh, 0, sizeof mh);
  mh.msg_iov = (void *)bld_alloc(b, sizeof iov, 8, &iov);
  mh.msg_iovlen = 1;
  mh.msg_control = (void *)ctl;
  mh.msg_controllen = sizeof cbuf;
  memset(&u, 0, sizeof u);
  u.flags = O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY;
  u.api_nr = UFFDIO_API;
  u.reg_nr = UFFDIO_REGISTER;
  u.features = LAZY_FEATURES;
  u.n = n;
  u.ranges = bld_alloc(b, n * 16, 8, ranges);
  free(ranges);
  u.msg = bld_alloc(b, sizeof mh, 8, &mh);
  u.fd_slot = ctl + ((uint8_t *)CMSG_DATA(cm) - (uint8_t *)cbuf);
  eager_ops(p, l);
  OP(l, BLOB_OP_UFFD, (uint64_t)c->lazy->sock[1], bld_alloc(b, sizeof u, 8, &u), 0, 0, 0, 0);
}

/* ---------- crest's side, once every task is finished ---------- */

/* --lazy-pages --detach, in the child that restores (lazy_detached): its
   parent waits on this descriptor for "R" and the root's PID, or "E" and
   the reason. */
static int notify_fd = -1;
static bool in_child;

bool
lazy_is_child(void)
{
  return in_child;
}

bool
lazy_root_status(struct rctx *c, int *st)
{
  if (!c->lazy || !c->lazy->root_exited)
    return false;
  *st = c->lazy->root_status;
  return true;
}

static void
notify(char kind, const char *text)
{
  char line[512];
  int n = snprintf(line, sizeof line, "%c%s", kind, text);
  if (notify_fd < 0)
    return;
  if (write(notify_fd, line, n > (int)sizeof line - 1 ? (int)sizeof line - 1 : n) < 0)
    crest_debug("lazy restore: notify: %s", strerror(errno));
  close(notify_fd);
  notify_fd = -1;
}

/* Page file offset of the image's page at A of P, the end of its run in
 *END; false: the image has no page there. */
static bool
run_at(const struct rproc *p, uint64_t a, uint64_t *off, uint64_t *end)
{
  size_t lo = 0, hi = p->nruns;
  while (lo < hi)
    {
      size_t mid = (lo + hi) / 2;
      const struct rrun *r = &p->runs[mid];
      if (a < r->vaddr)
        hi = mid;
      else if (a >= r->vaddr + r->len)
        lo = mid + 1;
      else
        {
          *off = r->off + (a - r->vaddr);
          *end = r->vaddr + r->len;
          return true;
        }
    }
  return false;
}

static uint64_t
idx_of(const struct lproc *lp, uint64_t orig);

static void
lproc_init(struct lproc *lp, struct rproc *p)
{
  uint64_t n = 0;
  lp->p = p;
  lp->uffd = -1;
  for (size_t i = 0; i < p->nvmas; i++)
    lp->nv += p->vmas[i].lazy;
  lp->vstart = xzalloc(lp->nv * sizeof *lp->vstart);
  lp->vend = xzalloc(lp->nv * sizeof *lp->vend);
  lp->vidx = xzalloc(lp->nv * sizeof *lp->vidx);
  lp->seg = xzalloc(lp->nv * sizeof *lp->seg);
  for (size_t i = 0, k = 0; i < p->nvmas; i++)
    if (p->vmas[i].lazy)
      {
        lp->vstart[k] = p->vmas[i].start, lp->vend[k] = p->vmas[i].end, lp->vidx[k] = n;
        lp->seg[k]
            = (struct seg){ p->vmas[i].start, p->vmas[i].start, p->vmas[i].end - p->vmas[i].start };
        n += (p->vmas[i].end - p->vmas[i].start) / PAGE;
        k++;
      }
  lp->nseg = lp->nv;
  lp->npages = n;
  lp->st = xzalloc(n + 1);
  /* By runs, then the eager pages: not page by page over every run. */
  for (size_t k = 0, r = 0; k < lp->nv; k++)
    {
      while (r < p->nruns && p->runs[r].vaddr + p->runs[r].len <= lp->vstart[k])
        r++;
      for (size_t q = r; q < p->nruns && p->runs[q].vaddr < lp->vend[k]; q++)
        {
          uint64_t s0 = p->runs[q].vaddr > lp->vstart[k] ? p->runs[q].vaddr : lp->vstart[k];
          uint64_t e0 = p->runs[q].vaddr + p->runs[q].len < lp->vend[k]
                            ? p->runs[q].vaddr + p->runs[q].len
                            : lp->vend[k];
          memset(lp->st + lp->vidx[k] + (s0 - lp->vstart[k]) / PAGE, PG_DATA, (e0 - s0) / PAGE);
          lp->left += (e0 - s0) / PAGE;
        }
    }
  for (size_t t = 0; t < p->nth; t++)
    for (int k = 0; k < EAGER_RANGES; k++)
      {
        uint64_t s0, len;
        if (!eager_range(&p->th[t], k, &s0, &len))
          continue;
        for (uint64_t a = s0 & ~(PAGE - 1); a < s0 + len; a += PAGE)
          {
            uint64_t idx = idx_of(lp, a);
            if (idx == UINT64_MAX || !in_lazy_vma(p, a) || lp->st[idx] == PG_FILLED
                || lp->st[idx] == PG_ZEROED)
              continue;
            if (lp->st[idx] == PG_DATA)
              lp->left--;
            lp->st[idx] = lp->st[idx] == PG_DATA ? PG_FILLED : PG_ZEROED;
          }
      }
}

/* The index of the image's page at ORIG, or UINT64_MAX. */
static uint64_t
idx_of(const struct lproc *lp, uint64_t orig)
{
  for (size_t k = 0; k < lp->nv; k++)
    if (orig >= lp->vstart[k] && orig < lp->vend[k])
      return lp->vidx[k] + (orig - lp->vstart[k]) / PAGE;
  return UINT64_MAX;
}

static uint64_t
addr_of(const struct lproc *lp, uint64_t idx)
{
  size_t k = 0;
  while (k + 1 < lp->nv && lp->vidx[k + 1] <= idx)
    k++;
  return lp->vstart[k] + (idx - lp->vidx[k]) * PAGE;
}

/* The segment holding the page now at CUR (or, CUR_OF false, the image's
   page at ORIG), or NULL. */
static struct seg *
seg_at(struct lproc *lp, uint64_t a, bool by_cur)
{
  for (size_t i = 0; i < lp->nseg; i++)
    {
      uint64_t s = by_cur ? lp->seg[i].cur : lp->seg[i].orig;
      if (lp->seg[i].len && a >= s && a < s + lp->seg[i].len)
        return &lp->seg[i];
    }
  return NULL;
}

static void
set_state(struct lproc *lp, uint64_t idx, int st)
{
  if (lp->st[idx] == PG_DATA && st != PG_DATA)
    lp->left--;
  lp->st[idx] = st;
}

/* The pages now at [S, E): removed (REMOVE: they read zero from now on),
   gone (UNMAP: the segment loses them), or moved by SHIFT (REMAP). */
static void
segs_change(struct lproc *lp, uint64_t s, uint64_t e, int how, int64_t shift)
{
  size_t n = lp->nseg;
  for (size_t i = 0; i < n; i++)
    {
      struct seg g = lp->seg[i];
      uint64_t a = g.cur > s ? g.cur : s, b = g.cur + g.len < e ? g.cur + g.len : e;
      if (!g.len || a >= b)
        continue;
      for (uint64_t x = a; x < b; x += PAGE)
        if (how != 2)
          set_state(lp, idx_of(lp, g.orig + (x - g.cur)), how == 0 ? PG_ZEROED : PG_FILLED);
      if (how == 0)
        continue;
      /* Split into before, inside (moved or dropped), after. */
      lp->seg[i].len = a - g.cur;
      if (b < g.cur + g.len)
        {
          lp->seg = xrealloc(lp->seg, (lp->nseg + 1) * sizeof *lp->seg);
          lp->seg[lp->nseg++] = (struct seg){ b, g.orig + (b - g.cur), g.cur + g.len - b };
        }
      if (how == 2)
        {
          lp->seg = xrealloc(lp->seg, (lp->nseg + 1) * sizeof *lp->seg);
          lp->seg[lp->nseg++] = (struct seg){ a + shift, g.orig + (a - g.cur), b - a };
        }
    }
}

/* Fill up to MAX pages to copy from page IDX on (its state PG_DATA), as
   far as they are contiguous in the image and where they are now. 0 done,
   1 to try again once the events are read (the layout is changing), -1. */
static int
copy_pages(struct lazy *L, struct lproc *lp, uint64_t idx, uint64_t max, crest_error_t *err)
{
  uint64_t orig = addr_of(lp, idx), off, rend, n = 0, done = 0;
  struct seg *g = seg_at(lp, orig, false);
  struct uffdio_copy cp;
  if (!g || !run_at(lp->p, orig, &off, &rend))
    {
      set_state(lp, idx, PG_FILLED);
      return 0;
    }
  if (max > CHUNK_PAGES)
    max = CHUNK_PAGES; /* the buffer's size */
  while (n < max && orig + n * PAGE < rend && orig + n * PAGE < g->orig + g->len
         && idx + n < lp->npages && lp->st[idx + n] == PG_DATA)
    n++;
  /* From the page file's mapping (the kernel copies once; crest never
     reads it itself: a file shortened meanwhile fails the copy, EFAULT),
     else through a buffer. */
  if (!lp->src && pread(lp->p->pages_svc, L->buf, n * PAGE, off) != (ssize_t)(n * PAGE))
    return crest_error_errno(err, "lazy restore: process %d: read its page file", lp->p->pid);
  while (done < n)
    {
      memset(&cp, 0, sizeof cp);
      cp.dst = g->cur + (orig - g->orig) + done * PAGE;
      cp.src = (lp->src ? (uint64_t)lp->src + off : (uint64_t)L->buf) + done * PAGE;
      cp.len = (n - done) * PAGE;
      if (ioctl(lp->uffd, UFFDIO_COPY, &cp) == 0)
        cp.copy = cp.len;
      for (int64_t k = 0; cp.copy > 0 && k < cp.copy / (int64_t)PAGE; k++)
        set_state(lp, idx + done + k, PG_FILLED);
      if (cp.copy > 0)
        done += cp.copy / PAGE;
      if (done == n)
        break;
      if (errno == EAGAIN)
        return 1;
      if (errno == ENOENT)
        {
          /* Nothing registered there: an unmap, or a move (mremap: the
             pages go with it, and are missing at the new place) whose
             event comes next. Again once the events are read; an event
             that never comes is a layout crest does not know, and no
             page of it is answered with zeros. */
          L->n_unreg++;
          if (!lp->unreg_wait)
            clock_gettime(CLOCK_MONOTONIC, &lp->unreg_since);
          lp->unreg_wait = true;
          if (ms_since(&lp->unreg_since) > 5000)
            return crest_error_make(err, ENOENT,
                                    "lazy restore: process %d: the page at %#" PRIx64
                                    " is no longer registered, and no event says where it went",
                                    lp->p->pid, (uint64_t)cp.dst);
          return 1;
        }
      if (errno == ESRCH)
        {
          /* Its memory is gone (it exited or replaced its program). */
          lp->left = 0;
          return 0;
        }
      if (errno != EEXIST)
        return crest_error_errno(err, "lazy restore: process %d: UFFDIO_COPY at %#" PRIx64,
                                 lp->p->pid, (uint64_t)cp.dst);
      /* Present already: nothing to copy there. */
      set_state(lp, idx + done, PG_FILLED);
      done++;
    }
  return 0;
}

/* A zero page at CUR (a page the image does not have, or the program
   removed), or the thread woken if the page is there. */
static void
zero_page(struct lproc *lp, uint64_t cur)
{
  struct uffdio_zeropage z;
  memset(&z, 0, sizeof z);
  z.range.start = cur;
  z.range.len = PAGE;
  if (ioctl(lp->uffd, UFFDIO_ZEROPAGE, &z) < 0 && errno == EEXIST)
    {
      struct uffdio_range r = { cur, PAGE };
      ioctl(lp->uffd, UFFDIO_WAKE, &r);
    }
}

/* A fault at ADDR: 0 answered, 1 to try again after the events. */
static int
on_fault(struct lazy *L, struct lproc *lp, uint64_t addr, crest_error_t *err)
{
  uint64_t cur = addr & ~(PAGE - 1), idx;
  struct seg *g = seg_at(lp, cur, true);
  if (!g)
    {
      zero_page(lp, cur);
      return 0;
    }
  idx = idx_of(lp, g->orig + (cur - g->cur));
  L->n_faults++;
  if (lp->st[idx] == PG_DATA)
    return copy_pages(L, lp, idx, FAULT_PAGES, err);
  if (lp->st[idx] == PG_NODATA)
    lp->st[idx] = PG_ZEROED;
  zero_page(lp, cur);
  return 0;
}

/* Every message waiting on LP's descriptor. RETRY collects the faults to
   answer again once the layout stops changing. */
static int
read_events(struct lazy *L, struct lproc *lp, crest_error_t *err)
{
  struct uffd_msg m[64];
  ssize_t got;
  while ((got = read(lp->uffd, m, sizeof m)) > 0)
    for (size_t i = 0; i < (size_t)got / sizeof m[0]; i++)
      {
        int r = 0;
        if (m[i].event != UFFD_EVENT_PAGEFAULT)
          {
            lp->unreg_wait = false; /* a layout change: a copy may find its place */
            crest_debug("lazy restore: process %d: event %#x %#" PRIx64 " %#" PRIx64 " %#" PRIx64,
                        lp->p->pid, m[i].event, (uint64_t)m[i].arg.remap.from,
                        (uint64_t)m[i].arg.remap.to, (uint64_t)m[i].arg.remap.len);
          }
        if (m[i].event == UFFD_EVENT_PAGEFAULT)
          r = on_fault(L, lp, m[i].arg.pagefault.address, err);
        else if (m[i].event == UFFD_EVENT_REMOVE)
          segs_change(lp, m[i].arg.remove.start, m[i].arg.remove.end, 0, 0);
        else if (m[i].event == UFFD_EVENT_UNMAP)
          segs_change(lp, m[i].arg.remove.start, m[i].arg.remove.end, 1, 0);
        else if (m[i].event == UFFD_EVENT_REMAP && (lp->moved = true))
          segs_change(lp, m[i].arg.remap.from, m[i].arg.remap.from + m[i].arg.remap.len, 2,
                      (int64_t)(m[i].arg.remap.to - m[i].arg.remap.from));
        if (r < 0)
          return -1;
        if (r == 1)
          {
            L->retry = xrealloc(L->retry, (L->nretry + 1) * 2 * sizeof *L->retry);
            L->retry[2 * L->nretry] = (uint64_t)(lp - L->lp);
            L->retry[2 * L->nretry + 1] = m[i].arg.pagefault.address;
            L->nretry++;
          }
      }
  if (got < 0 && errno != EAGAIN)
    return crest_error_errno(err, "lazy restore: process %d: read its userfaultfd", lp->p->pid);
  return 0;
}

/* The events of LP until a copy stops saying "try again". */
static int
settle(struct lazy *L, struct lproc *lp, crest_error_t *err);

/* Before the kernel touches [A, A + LEN) for LP's task: every page of it
   that is lazy is made present (the image's bytes, or a zero page). */
static int
prefill(struct lazy *L, struct lproc *lp, uint64_t a, uint64_t len, crest_error_t *err)
{
  if (lp->uffd < 0 || lp->unreg || !len || a + len < a)
    return 0;
  for (uint64_t cur = a & ~(PAGE - 1); cur < a + len; cur += PAGE)
    {
      struct seg *g = seg_at(lp, cur, true);
      uint64_t idx;
      if (!g)
        {
          /* A part mremap added to a lazy mapping is registered too, and
             holds no page of the image: a zero page (elsewhere the call
             fails, ENOENT: nothing registered there). */
          if (lp->moved)
            zero_page(lp, cur);
          continue;
        }
      idx = idx_of(lp, g->orig + (cur - g->cur));
      if (lp->st[idx] == PG_DATA)
        {
          int r;
          for (int tries = 0;
               (r = copy_pages(L, lp, idx, (a + len - cur + PAGE - 1) / PAGE, err)) == 1
               && tries < 1000;
               tries++)
            if (settle(L, lp, err) < 0)
              return -1;
          if (r < 0)
            return -1;
        }
      else if (lp->st[idx] != PG_FILLED)
        {
          /* No data, or dropped by the program: a zero page. (A filled
             page is present: only MADV_FREE's reclaim could take it.) */
          if (lp->st[idx] == PG_NODATA)
            lp->st[idx] = PG_ZEROED;
          zero_page(lp, cur);
        }
    }
  return 0;
}

/* A call whose memory is not known: every page of LP first, then its
   ranges unregistered, so that nothing of it can fault to crest again. */
static int
fill_all(struct lazy *L, struct lproc *lp, crest_error_t *err)
{
  if (lp->uffd < 0 || lp->unreg)
    return 0;
  for (uint64_t i = 0; i < lp->npages && lp->uffd >= 0 && lp->left; i++)
    while (lp->st[i] == PG_DATA && lp->left)
      {
        int r = copy_pages(L, lp, i, CHUNK_PAGES, err);
        if (r < 0 || (r == 1 && settle(L, lp, err) < 0))
          return -1;
      }
  for (size_t k = 0; lp->uffd >= 0 && k < lp->nseg; k++)
    if (lp->seg[k].len)
      {
        struct uffdio_range r = { lp->seg[k].cur, lp->seg[k].len };
        if (ioctl(lp->uffd, UFFDIO_UNREGISTER, &r) < 0 && errno != ESRCH && errno != ENOENT
            && errno != EINVAL)
          return crest_error_errno(err, "lazy restore: process %d: unregister %#" PRIx64,
                                   lp->p->pid, lp->seg[k].cur);
      }
  lp->unreg = true;
  lp->left = 0;
  return 0;
}

static int
settle(struct lazy *L, struct lproc *lp, crest_error_t *err)
{
  struct pollfd w = { lp->uffd, POLLIN, 0 };
  /* A layout change of another thread waits for crest to read its event. */
  if (poll(&w, 1, 10) < 0 && errno != EINTR)
    return crest_error_errno(err, "lazy restore: poll");
  return read_events(L, lp, err);
}

/* A system call's entry in LP's task TID: its memory made present first. */
static int
on_syscall(struct lazy *L, struct lproc *lp, pid_t tid, crest_error_t *err)
{
  struct __ptrace_syscall_info si;
  uint64_t r[4][2], iov[2 * 64], m[7];
  int n;
  if (lp->uffd < 0 || lp->unreg || ptrace(PTRACE_GET_SYSCALL_INFO, tid, sizeof si, &si) <= 0
      || si.op != PTRACE_SYSCALL_INFO_ENTRY)
    return 0;
  L->n_syscalls++;
  if (si.entry.nr == SYS_rt_sigreturn)
    return prefill(L, lp, si.stack_pointer, 16384, err); /* the frame it reads back */
  n = lazy_sys_ranges((long)si.entry.nr, si.entry.args, r);
  if (n == LAZY_SYS_ALL)
    {
      L->n_fill_all++;
      crest_debug("lazy restore: process %d: system call %llu: every page first", lp->p->pid,
                  (unsigned long long)si.entry.nr);
    }
  if (n == LAZY_SYS_ALL)
    return fill_all(L, lp, err);
  if (n == LAZY_SYS_MSG)
    {
      /* struct msghdr: name, namelen, iov, iovlen, control, controllen. */
      struct iovec l = { m, 56 }, rm = { (void *)si.entry.args[1], 56 };
      if (prefill(L, lp, si.entry.args[1], 56, err) < 0)
        return -1;
      if (process_vm_readv(tid, &l, 1, &rm, 1, 0) != 56)
        return 0;
      if (prefill(L, lp, m[0], m[1] & 0xffffffff, err) < 0 || prefill(L, lp, m[4], m[5], err) < 0)
        return -1;
      si.entry.args[1] = m[2], si.entry.args[2] = m[3];
      n = LAZY_SYS_IOV;
    }
  if (n == LAZY_SYS_IOV)
    {
      uint64_t cnt = si.entry.args[2];
      struct iovec l = { iov, 0 }, rm = { (void *)si.entry.args[1], 0 };
      if (cnt > 64)
        return fill_all(L, lp, err);
      l.iov_len = rm.iov_len = cnt * 16;
      if (prefill(L, lp, si.entry.args[1], cnt * 16, err) < 0)
        return -1;
      if (cnt && process_vm_readv(tid, &l, 1, &rm, 1, 0) != (ssize_t)(cnt * 16))
        return 0;
      for (uint64_t i = 0; i < cnt; i++)
        if (prefill(L, lp, iov[2 * i], iov[2 * i + 1], err) < 0)
          return -1;
      return 0;
    }
  for (int i = 0; i < n; i++)
    if (prefill(L, lp, r[i][0], r[i][1], err) < 0)
      return -1;
  return 0;
}

/* A signal about to be delivered to TID: its frame goes below the stack
   pointer (an alternate stack was read by the blob). */
static int
on_signal(struct lazy *L, struct lproc *lp, pid_t tid, crest_error_t *err)
{
  struct user_regs_struct regs;
  if (lp->uffd < 0 || lp->unreg || ptrace(PTRACE_GETREGS, tid, 0, &regs) < 0)
    return 0;
  return prefill(L, lp, regs.rsp > 24576 ? regs.rsp - 24576 : 0, 24576, err);
}

/* Does LP's task stop at every system call (its memory still lazy)? */
static bool
tracing(const struct ltask *t)
{
  return t && t->tid && t->lp->uffd >= 0 && !t->lp->unreg && !t->lp->done;
}

/* A process forked while pages were missing: its copy of the lazy
   mappings is not registered (a fork event needs CAP_SYS_PTRACE), so every
   page it would read as zero that the image holds is written into it now,
   before it runs: a page not yet copied into the parent, or copied after
   the fork took its copy of the page tables. A page the parent had removed
   or that held no data stays zero. */
static int
fill_child(struct lazy *L, struct lproc *lp, pid_t child, crest_error_t *err)
{
  char path[64];
  uint64_t pm_ent[CHUNK_PAGES];
  cleanup_close int pm = -1, mem = -1;
  snprintf(path, sizeof path, "/proc/%d/pagemap", (int)child);
  pm = open(path, O_RDONLY | O_CLOEXEC);
  snprintf(path, sizeof path, "/proc/%d/mem", (int)child);
  mem = open(path, O_RDWR | O_CLOEXEC);
  if (pm < 0 || mem < 0)
    return crest_error_errno(err, "lazy restore: process %d forked by %d: open %s", child,
                             lp->p->pid, pm < 0 ? "pagemap" : "mem");
  for (size_t i = 0; i < lp->nseg; i++)
    {
      struct seg *g = &lp->seg[i];
      for (uint64_t a0 = 0; a0 < g->len; a0 += CHUNK_PAGES * PAGE)
        {
          uint64_t n = (g->len - a0) / PAGE < CHUNK_PAGES ? (g->len - a0) / PAGE : CHUNK_PAGES;
          if (pread(pm, pm_ent, n * 8, (g->cur + a0) / PAGE * 8) != (ssize_t)(n * 8))
            return crest_error_errno(err, "lazy restore: process %d: read pagemap", child);
          /* Runs of pages to write: contiguous in the child and in the page file. */
          for (uint64_t k = 0; k < n;)
            {
              uint64_t orig = g->orig + a0 + k * PAGE, off, rend, m = 0, o2, e2;
              int s = lp->st[idx_of(lp, orig)];
              if ((s != PG_DATA && s != PG_FILLED) || (pm_ent[k] >> 62) & 3
                  || !run_at(lp->p, orig, &off, &rend))
                {
                  k++;
                  continue;
                }
              while (k + m < n && orig + m * PAGE < rend && !((pm_ent[k + m] >> 62) & 3))
                {
                  int s2 = lp->st[idx_of(lp, orig + m * PAGE)];
                  if ((s2 != PG_DATA && s2 != PG_FILLED)
                      || !run_at(lp->p, orig + m * PAGE, &o2, &e2) || o2 != off + m * PAGE)
                    break;
                  m++;
                }
              if (pread(lp->p->pages_svc, L->buf, m * PAGE, off) != (ssize_t)(m * PAGE)
                  || pwrite(mem, L->buf, m * PAGE, g->cur + a0 + k * PAGE) != (ssize_t)(m * PAGE))
                return crest_error_errno(err,
                                         "lazy restore: process %d forked by %d: write %#" PRIx64,
                                         child, lp->p->pid, g->cur + a0 + k * PAGE);
              k += m;
            }
        }
    }
  return 0;
}

static struct ltask *
task_of(struct lazy *L, pid_t tid)
{
  for (size_t i = 0; i < L->nt; i++)
    if (L->t[i].tid == tid)
      return &L->t[i];
  return NULL;
}

static void
track(struct lazy *L, pid_t tid, struct lproc *lp)
{
  L->t = xrealloc(L->t, (L->nt + 1) * sizeof *L->t);
  L->t[L->nt++] = (struct ltask){ tid, lp };
}

/* Stops of tasks not known yet: new ones whose creator's event is still to
   be collected. */
static pid_t early[256];

static bool
take_early(pid_t tid)
{
  for (size_t i = 0; i < ARRAY_SIZE(early); i++)
    if (early[i] == tid)
      {
        early[i] = 0;
        return true;
      }
  return false;
}

/* NW, made by tracked task T (fork, vfork, clone): a thread or a process
   sharing its memory is followed like it; another process gets its missing
   pages, then goes free. */
static int
on_new(struct lazy *L, struct ltask *t, pid_t nw, crest_error_t *err)
{
  struct lproc *lp = t->lp;
  int st;
  if (syscall(SYS_kcmp, t->tid, nw, KCMP_VM, 0, 0) == 0)
    {
      track(L, nw, lp);
      if (take_early(nw))
        ptrace(tracing(&L->t[L->nt - 1]) ? PTRACE_SYSCALL : PTRACE_CONT, nw, 0, 0);
      return 0;
    }
  if (!take_early(nw))
    while (waitpid(nw, &st, __WALL) < 0)
      if (errno != EINTR)
        return 0;
  L->n_forks++;
  if (lp->uffd >= 0 && lp->left && fill_child(L, lp, nw, err) < 0)
    return -1;
  ptrace(PTRACE_DETACH, nw, 0, 0);
  return 0;
}

/* One stop or exit of the traced tasks. */
static int
on_wait(struct rctx *c, struct lazy *L, pid_t w, int st, int *sig, crest_error_t *err)
{
  struct ltask *t = task_of(L, w);
  int ev = st >> 16;
  *sig = -1;
  if (WIFEXITED(st) || WIFSIGNALED(st))
    {
      if (t)
        t->tid = 0;
      if (w == c->p[0].pid)
        L->root_exited = true, L->root_status = st;
      return 0;
    }
  if (!WIFSTOPPED(st))
    return 0;
  if (!t)
    {
      for (size_t i = 0; i < ARRAY_SIZE(early); i++)
        if (!early[i])
          {
            early[i] = w;
            break;
          }
      return 0;
    }
  if (ev == PTRACE_EVENT_FORK || ev == PTRACE_EVENT_VFORK || ev == PTRACE_EVENT_CLONE)
    {
      unsigned long nw = 0;
      if (ptrace(PTRACE_GETEVENTMSG, w, 0, &nw) == 0 && on_new(L, t, (pid_t)nw, err) < 0)
        return -1;
      *sig = 0;
    }
  else if (ev == PTRACE_EVENT_EXEC)
    {
      /* A new program, a new memory: nothing of it is lazy. */
      t->tid = 0;
      ptrace(PTRACE_DETACH, w, 0, 0);
    }
  else if (ev == PTRACE_EVENT_STOP)
    {
      int s = WSTOPSIG(st);
      if (s == SIGSTOP || s == SIGTSTP || s == SIGTTIN || s == SIGTTOU)
        *sig = -2; /* a group stop: it stays stopped */
      else
        *sig = 0;
    }
  else if (WSTOPSIG(st) == (SIGTRAP | 0x80))
    {
      if (on_syscall(L, t->lp, w, err) < 0)
        return -1;
      *sig = 0;
    }
  else
    {
      if (on_signal(L, t->lp, w, err) < 0)
        return -1;
      *sig = WSTOPSIG(st);
    }
  return 0;
}

/* One stop or exit of W, and W let go on as it should. */
static int
reap_one(struct rctx *c, struct lazy *L, pid_t w, int st, crest_error_t *err)
{
  int sig;
  if (on_wait(c, L, w, st, &sig, err) < 0)
    return -1;
  if (sig == -2)
    ptrace(PTRACE_LISTEN, w, 0, 0);
  else if (sig >= 0)
    ptrace(tracing(task_of(L, w)) ? PTRACE_SYSCALL : PTRACE_CONT, w, 0, sig);
  return 0;
}

static int
reap(struct rctx *c, struct lazy *L, crest_error_t *err)
{
  pid_t w;
  int st;
  while ((w = waitpid(-1, &st, __WALL | WNOHANG)) > 0)
    if (reap_one(c, L, w, st, err) < 0)
      return -1;
  return 0;
}

/* Test hook (CREST_FAULT=lazy-late-detach): once every page is in, the
   tree's tasks run on until its root has exited before crest lets go of
   them, as when crest is slow (a loaded machine checking the page files)
   and the program ends at once: their stops are answered, their exits
   left to collect (a leader that exited waits for its traced threads).
   Looks every 10 ms, at most 60 s. */
static void
late_detach(struct rctx *c, struct lazy *L)
{
  const char *f = crest_test_knob("CREST_FAULT");
  char path[64], buf[256], *p;
  crest_error_t e = NULL;
  if (!f || strcmp(f, "lazy-late-detach") != 0)
    return;
  snprintf(path, sizeof path, "/proc/%d/stat", (int)c->p[0].pid);
  for (int i = 0; i < 6000; i++)
    {
      cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
      ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
      if (n <= 0)
        break;
      buf[n] = 0;
      if ((p = strrchr(buf, ')')) && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'))
        break;
      for (size_t k = 0; k < L->nt; k++)
        {
          siginfo_t si;
          pid_t tid = L->t[k].tid;
          int st;
          memset(&si, 0, sizeof si);
          if (tid && waitid(P_PID, tid, &si, WSTOPPED | WNOHANG | WNOWAIT | __WALL) == 0
              && si.si_pid == tid && waitpid(tid, &st, __WALL | WNOHANG) == tid)
            {
              reap_one(c, L, tid, st, &e);
              crest_error_release(&e);
            }
        }
      usleep(10000);
    }
}

/* Every page is in: each traced task is stopped and let go (one in a group
   stop stays stopped, a signal that was being delivered goes with it).
   Waits are for any task, never one TID: a leader that exited waits for
   its other threads, and a traced thread that exited is a zombie until its
   tracer, this, collects it. */
static int
detach_all(struct rctx *c, struct lazy *L, crest_error_t *err)
{
  size_t asked = 0;
  for (;;)
    {
      bool any = false;
      pid_t w;
      int st, sig, ev;
      struct ltask *t;
      /* Stopped once each, followed ones included (an interrupt asked
         twice is harmless: it is due once). */
      for (; asked < L->nt; asked++)
        if (L->t[asked].tid)
          ptrace(PTRACE_INTERRUPT, L->t[asked].tid, 0, 0);
      for (size_t i = 0; i < L->nt; i++)
        any |= L->t[i].tid != 0;
      if (!any)
        return 0;
      w = waitpid(-1, &st, __WALL);
      if (w < 0 && errno == EINTR)
        continue;
      if (w < 0)
        {
          /* ECHILD: no task of crest's is left to wait for. */
          for (size_t i = 0; i < L->nt; i++)
            L->t[i].tid = 0;
          return 0;
        }
      if (on_wait(c, L, w, st, &sig, err) < 0)
        return -1;
      if (!(t = task_of(L, w)))
        continue; /* gone, a new program (let go), or not yet known */
      ev = st >> 16;
      if (ev == PTRACE_EVENT_FORK || ev == PTRACE_EVENT_VFORK || ev == PTRACE_EVENT_CLONE)
        {
          /* The interrupt is still due: it stops again. */
          ptrace(tracing(t) ? PTRACE_SYSCALL : PTRACE_CONT, w, 0, 0);
          continue;
        }
      ptrace(PTRACE_DETACH, w, 0, sig > 0 ? sig : 0);
      t->tid = 0;
    }
}

/* Close every descriptor from 3 on but the N in KEEP. */
static void
close_except(const int *keep, size_t n)
{
  int lo = 3;
  for (;;)
    {
      int next = -1;
      for (size_t i = 0; i < n; i++)
        if (keep[i] >= lo && (next < 0 || keep[i] < next))
          next = keep[i];
      if (next < 0)
        {
          syscall(SYS_close_range, lo, ~0U, 0);
          return;
        }
      if (next > lo)
        syscall(SYS_close_range, lo, next - 1, 0);
      lo = next + 1;
    }
}

/* The guard: a second holder of every userfaultfd. When crest dies before
   it says "done", the descriptors stay open (a fault would otherwise get a
   zero page once the last one closed), and the guard kills every process of
   the tree, waits until each is gone, and only then exits. */
static void __attribute__((noreturn))
guard_main(struct rctx *c, struct lazy *L, int rd, int crest_fd)
{
  int *pfd = xzalloc((c->np + 1) * sizeof *pfd),
      *keep = xzalloc((c->np + L->nlp + 4) * sizeof *keep);
  size_t nk = 0;
  char b = 0;
  struct pollfd w[2] = { { rd, POLLIN, 0 }, { crest_fd, POLLIN, 0 } };
  prctl(PR_SET_NAME, "crest-lazyguard", 0, 0, 0);
  /* Out of crest's process group: a kill of that group (SIGKILL too) does
     not take both holders at once. Every signal but SIGKILL stays blocked,
     as crest had them. */
  setpgid(0, 0);
  keep[nk++] = rd, keep[nk++] = crest_fd;
  for (size_t i = 0; i < L->nlp; i++)
    keep[nk++] = L->lp[i].uffd;
  for (size_t i = 0; i < c->np; i++)
    {
      pfd[i] = c->p[i].zombie ? -1 : (int)syscall(SYS_pidfd_open, c->p[i].real, 0);
      keep[nk++] = pfd[i];
    }
  close_except(keep, nk);
  while (poll(w, 2, -1) < 0 && errno == EINTR)
    ;
  if ((w[0].revents & POLLIN) && read(rd, &b, 1) == 1 && b == 'D')
    _exit(0);
  /* 'E': the filling process stopped on an error, which it says itself. */
  if (b != 'E')
    dprintf(2, "crest: lazy restore: the process filling the memory of the restored tree died "
               "before every page was in: the tree is killed\n");
  for (size_t i = 0; i < c->np; i++)
    if (pfd[i] >= 0)
      syscall(SYS_pidfd_send_signal, pfd[i], SIGKILL, NULL, 0);
  for (size_t i = 0; i < c->np; i++)
    if (pfd[i] >= 0)
      {
        struct pollfd gone = { pfd[i], POLLIN, 0 };
        while (poll(&gone, 1, -1) < 0 && errno == EINTR)
          ;
      }
  _exit(1);
}

static int
start_guard(struct rctx *c, struct lazy *L, crest_error_t *err)
{
  int p[2], me = (int)syscall(SYS_pidfd_open, getpid(), 0);
  if (me < 0 || pipe2(p, O_CLOEXEC) < 0)
    return crest_error_errno(err, "lazy restore: the guard's pidfd and pipe");
  L->guard = fork();
  if (L->guard < 0)
    return crest_error_errno(err, "lazy restore: fork the guard");
  if (L->guard == 0)
    guard_main(c, L, p[0], me);
  close(p[0]);
  close(me);
  L->done_w = p[1];
  L->guard_fd = (int)syscall(SYS_pidfd_open, L->guard, 0);
  if (L->guard_fd < 0)
    return crest_error_errno(err, "lazy restore: pidfd of the guard");
  return 0;
}

/* Every blob sent its descriptor before its int3: take them. */
static int
collect(struct rctx *c, struct lazy *L, crest_error_t *err)
{
  size_t want = 0;
  for (size_t i = 0; i < c->np; i++)
    want += lazy_proc(c, &c->p[i]);
  L->lp = xzalloc((want + 1) * sizeof *L->lp);
  for (size_t i = 0; i < c->np; i++)
    if (lazy_proc(c, &c->p[i]))
      lproc_init(&L->lp[L->nlp++], &c->p[i]);
  for (size_t got = 0; got < want; got++)
    {
      int64_t pid = 0;
      char cbuf[CMSG_SPACE(sizeof(int))];
      struct iovec iov = { &pid, sizeof pid };
      struct msghdr mh;
      struct cmsghdr *cm;
      int fd = -1;
      memset(&mh, 0, sizeof mh);
      mh.msg_iov = &iov, mh.msg_iovlen = 1;
      mh.msg_control = cbuf, mh.msg_controllen = sizeof cbuf;
      if (recvmsg(L->sock[0], &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) != sizeof pid)
        return crest_error_errno(err, "lazy restore: %zu of %zu userfaultfds received", got, want);
      cm = CMSG_FIRSTHDR(&mh);
      if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
        memcpy(&fd, CMSG_DATA(cm), sizeof fd);
      for (size_t k = 0; fd >= 0 && k < L->nlp; k++)
        if (L->lp[k].p->pid == pid && L->lp[k].uffd < 0)
          {
            L->lp[k].uffd = fd;
            fd = -1;
          }
      if (fd >= 0 || (cm == NULL))
        return crest_error_make(err, EPROTO, "lazy restore: a stray userfaultfd message");
    }
  return 0;
}

/* Test hooks (docs/engine.md, "Test hooks"): CREST_FAULT=lazy-kill-filler
   or lazy-kill-guard after CREST_FAULT_AFTER background copies (default
   0); CREST_LAZY_PACE_MS=N waits up to N ms between two background copies
   (faults are answered meanwhile), so that a test sees pages come by
   fault. */
static void
fault_point(struct lazy *L)
{
  const char *f = crest_test_knob("CREST_FAULT"), *a = crest_test_knob("CREST_FAULT_AFTER");
  if (!f || strncmp(f, "lazy-kill-", 10) != 0
      || L->filled_chunks != (a ? strtoull(a, NULL, 10) : 0))
    return;
  if (strcmp(f + 10, "filler") == 0)
    raise(SIGKILL);
  if (strcmp(f + 10, "guard") == 0 && L->guard > 0)
    kill(L->guard, SIGKILL);
}

/* One background copy: the next pages still to copy, process after
   process. 0, 1 when the layout is changing (an event to read first), -1. */
static int
background(struct lazy *L, size_t *rr, crest_error_t *err)
{
  for (size_t n = 0; n < L->nlp; n++)
    {
      struct lproc *lp = &L->lp[(*rr + n) % L->nlp];
      if (lp->uffd < 0 || !lp->left)
        continue;
      while (lp->cursor < lp->npages && lp->st[lp->cursor] != PG_DATA)
        lp->cursor++;
      if (lp->cursor >= lp->npages)
        {
          /* Faults took the pages ahead: look from the start once more. */
          for (lp->cursor = 0; lp->cursor < lp->npages && lp->st[lp->cursor] != PG_DATA;)
            lp->cursor++;
          if (lp->cursor >= lp->npages)
            {
              lp->left = 0;
              continue;
            }
        }
      *rr = (*rr + n) % L->nlp;
      L->filled_chunks++;
      return copy_pages(L, lp, lp->cursor, CHUNK_PAGES, err);
    }
  return 0;
}

/* Faults, the events of the traced tasks, and the background copies, until
   every page is in. */
static int
fill_loop(struct rctx *c, struct lazy *L, int sfd, crest_error_t *err)
{
  struct pollfd *pfd = xzalloc((L->nlp + 3) * sizeof *pfd);
  long hold = 0, pace_left = 0, timeout;
  struct timespec t0, last;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  last = t0;
  size_t rr = 0;
  const char *pace = crest_test_knob("CREST_LAZY_PACE_MS");
  int rc = -1, wait_ms = pace ? atoi(pace) : 0, changing = 0;
  for (;;)
    {
      uint64_t left = 0;
      struct signalfd_siginfo si;
      for (size_t i = 0; i < L->nlp; i++)
        left += L->lp[i].uffd >= 0 ? L->lp[i].left : 0;
      if (!left)
        break;
      for (size_t i = 0; i < L->nlp; i++)
        pfd[i] = (struct pollfd){ L->lp[i].uffd, POLLIN, 0 };
      pfd[L->nlp] = (struct pollfd){ sfd, POLLIN, 0 };
      pfd[L->nlp + 1] = (struct pollfd){ L->guard_fd, POLLIN, 0 };
      pfd[L->nlp + 2] = (struct pollfd){ L->caller_fd, POLLIN, 0 };
      /* --detach: no background copy until the caller has returned (at
         most 100 ms), so that it does not wait for a CPU behind them;
         faults are answered meanwhile. */
      if (L->caller_fd >= 0)
        {
          hold = 100 - (long)ms_since(&t0);
          if (hold <= 0)
            {
              close(L->caller_fd);
              L->caller_fd = -1;
            }
        }
      /* CREST_LAZY_PACE_MS: at most one background copy per WAIT_MS,
         whatever else wakes the loop. */
      if (wait_ms > 0 && L->caller_fd < 0)
        {
          long since = (long)ms_since(&last);
          pace_left = since < wait_ms ? wait_ms - since : 0;
        }
      /* A copy found the layout changing: its event is due (at most
         10 ms to wait for it before copying on). */
      timeout = L->caller_fd >= 0 ? hold : pace_left;
      if (changing && timeout < 10)
        timeout = 10;
      if (poll(pfd, L->nlp + 3, (int)timeout) < 0 && errno != EINTR)
        {
          crest_error_errno(err, "lazy restore: poll");
          goto out;
        }
      if (L->caller_fd >= 0 && pfd[L->nlp + 2].revents)
        {
          close(L->caller_fd);
          L->caller_fd = -1;
        }
      if (pfd[L->nlp + 1].revents)
        {
          crest_error_make(err, 0, "lazy restore: its guard process died: the tree is killed");
          goto out;
        }
      for (size_t i = 0; i < L->nlp; i++)
        if (pfd[i].revents && read_events(L, &L->lp[i], err) < 0)
          goto out;
      while (read(sfd, &si, sizeof si) == sizeof si)
        ;
      if (reap(c, L, err) < 0)
        goto out;
      {
        size_t n = L->nretry;
        L->nretry = 0;
        for (size_t k = 0; k < n; k++)
          {
            struct lproc *lp = &L->lp[L->retry[2 * k]];
            uint64_t a = L->retry[2 * k + 1];
            int r = lp->uffd >= 0 ? on_fault(L, lp, a, err) : 0;
            if (r < 0)
              goto out;
            if (r == 1)
              {
                L->retry[2 * L->nretry] = L->retry[2 * k], L->retry[2 * L->nretry + 1] = a;
                L->nretry++;
              }
          }
      }
      fault_point(L);
      if (wait_ms > 0 && pace_left > 0)
        continue; /* not yet: the pace's wait was cut short by an event */
      clock_gettime(CLOCK_MONOTONIC, &last);
      if (L->caller_fd < 0 && (changing = background(L, &rr, err)) < 0)
        goto out;
    }
  rc = 0;
out:
  free(pfd);
  return rc;
}

/* The tree's descriptors in crest's service range go (a pipe's other end
   held here would keep a reader of the tree from its end of file), but the
   page files the filling reads. */
static void
close_service(struct rctx *c, struct lazy *L)
{
  for (int fd = c->svc_base; fd > 0 && fd < c->svc_next; fd++)
    {
      bool keep = fd == L->sock[1];
      for (size_t i = 0; i < L->nlp; i++)
        keep |= fd == L->lp[i].p->pages_svc;
      if (!keep)
        close(fd);
    }
  close(L->sock[1]);
  L->sock[1] = -1;
}

/* Let the lazy processes run, traced, and fill them. */
static int
start_tasks(struct rctx *c, struct lazy *L, crest_error_t *err)
{
  long opts = PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACEEXEC
              | PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL;
  for (size_t i = 0; i < L->nlp; i++)
    for (size_t t = 0; t < L->lp[i].p->nth; t++)
      {
        pid_t tid = L->lp[i].p->th[t].tid;
        if (ptrace(PTRACE_SETOPTIONS, tid, 0, opts) < 0)
          return crest_error_errno(err, "lazy restore: thread %d: ptrace options", tid);
        track(L, tid, &L->lp[i]);
      }
  for (size_t i = 0; i < L->nt; i++)
    if (pt_release(L->t[i].tid, PTRACE_SYSCALL) < 0)
      return crest_error_errno(err, "lazy restore: thread %d: let it run", L->t[i].tid);
  return 0;
}

int
lazy_run(struct rctx *c, crest_error_t *err)
{
  struct lazy *L = c->lazy;
  struct sigaction dfl, old;
  sigset_t chld;
  double ms_running;
  int sfd = -1, rc = -1;
  uint64_t pages = 0;

  if (!L)
    return 0;
  if (collect(c, L, err) < 0)
    return -1;
  close_service(c, L);
  L->buf
      = mmap(NULL, CHUNK_PAGES * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (L->buf == MAP_FAILED)
    {
      L->buf = NULL;
      return crest_error_errno(err, "lazy restore: buffer");
    }
  for (size_t i = 0; i < L->nlp; i++)
    {
      struct lproc *lp = &L->lp[i];
      const struct img_file *f = img_reader_find(c->img, lp->p->pages_file);
      pages += lp->left;
      lp->src_len = f ? f->size : 0;
      if (lp->src_len)
        {
          lp->src = mmap(NULL, lp->src_len, PROT_READ, MAP_SHARED, lp->p->pages_svc, 0);
          if (lp->src == MAP_FAILED)
            lp->src = NULL;
        }
    }
  /* Put the default SIGCHLD back while this runs (blocked, read through a
     signalfd), as the restore's own wait does. */
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigaction(SIGCHLD, &dfl, &old);
  if ((sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK)) < 0)
    {
      crest_error_errno(err, "lazy restore: signalfd");
      goto out;
    }
  if (start_guard(c, L, err) < 0 || start_tasks(c, L, err) < 0)
    goto out;
  ms_running = ms_since(&c->t0);
  if (c->o->pid_file)
    {
      char num[24];
      int n = snprintf(num, sizeof num, "%d", c->p[0].pid);
      if (write_file_atomic(c->o->pid_file, num, n, 0644, err) < 0)
        goto out;
    }
  if (in_child)
    L->caller_fd = (int)syscall(SYS_pidfd_open, getppid(), 0);
  {
    char num[24];
    snprintf(num, sizeof num, "%d", c->p[0].pid);
    notify('R', num);
  }
  if (fill_loop(c, L, sfd, err) < 0)
    goto out;
  /* The page files' checksums (computed meanwhile): a mismatch kills the
     tree, which ran on those pages. */
  if (img_reader_verified(c->img, err) < 0)
    goto out;
  for (int i = 0; i < c->nchain; i++)
    if (img_reader_verified(c->chain[i], err) < 0)
      {
        crest_error_wrap(err, "parent image");
        goto out;
      }
  if (write(L->done_w, "D", 1) != 1)
    {
      crest_error_errno(err, "lazy restore: tell the guard");
      goto out;
    }
  /* The guard's descriptors close with it; then crest's: the kernel drops
     the registrations, and the tasks stop at system calls no more. */
  while (waitpid(L->guard, NULL, __WALL) < 0 && errno == EINTR)
    ;
  L->guard = 0;
  for (size_t i = 0; i < L->nlp; i++)
    {
      if (L->lp[i].uffd >= 0)
        close(L->lp[i].uffd);
      L->lp[i].uffd = -1;
      L->lp[i].done = true;
    }
  late_detach(c, L);
  if (detach_all(c, L, err) < 0)
    goto out;
  if (crest_test_knob("CREST_STATS"))
    fprintf(stderr,
            "crest: lazy restore stats: %zu processes, %" PRIu64 " pages, running %.1f ms, every "
            "page in %.1f ms; faults %" PRIu64 ", system calls %" PRIu64 " (%" PRIu64
            " filled the process first), forks %" PRIu64 ", background copies %" PRIu64
            ", copies to wait for an unmap or move %" PRIu64 "\n",
            L->nlp, pages, ms_running, ms_since(&c->t0), L->n_faults, L->n_syscalls, L->n_fill_all,
            L->n_forks, L->filled_chunks, L->n_unreg);
  rc = 0;
out:
  if (sfd >= 0)
    close(sfd);
  sigaction(SIGCHLD, &old, NULL);
  if (rc < 0 && L->done_w >= 0)
    {
      /* The guard kills the tree and exits (before the restore's own
         kill, which waits for every child); told it is an error said
         here (a page file's checksum), not the filling process's death. */
      if (write(L->done_w, "E", 1) != 1)
        crest_debug("lazy restore: tell the guard of the error: %s", strerror(errno));
      close(L->done_w);
      L->done_w = -1;
      crest_error_wrap(err, "lazy restore: the restored tree is killed");
    }
  return rc;
}

void
lazy_free(struct rctx *c)
{
  struct lazy *L = c->lazy;
  if (!L)
    return;
  for (size_t i = 0; i < L->nlp; i++)
    {
      struct lproc *lp = &L->lp[i];
      if (lp->uffd >= 0)
        close(lp->uffd);
      free(lp->vstart), free(lp->vend), free(lp->vidx), free(lp->st), free(lp->seg);
      if (lp->src)
        munmap(lp->src, lp->src_len);
    }
  if (L->done_w >= 0)
    close(L->done_w);
  if (L->guard > 0)
    waitpid(L->guard, NULL, 0);
  if (L->guard_fd >= 0)
    close(L->guard_fd);
  if (L->caller_fd >= 0)
    close(L->caller_fd);
  if (L->sock[0] >= 0)
    close(L->sock[0]);
  if (L->buf)
    munmap(L->buf, CHUNK_PAGES * PAGE);
  free(L->lp);
  free(L->t);
  free(L);
  c->lazy = NULL;
}

/* --lazy-pages --detach: the caller returns once the tree runs, and a
   child of it, the tree's tracer, goes on filling. */
int
lazy_detached(const struct crest_restore_opts *o, pid_t *root_out, crest_error_t *err)
{
  struct crest_restore_opts co = *o;
  char msg[512];
  ssize_t n;
  int p[2];
  pid_t ch;
  if (pipe2(p, O_CLOEXEC) < 0)
    return crest_error_errno(err, "restore --lazy-pages: pipe");
  if ((ch = fork()) < 0)
    return crest_error_errno(err, "restore --lazy-pages: fork");
  if (ch == 0)
    {
      crest_error_t e = NULL;
      pid_t root;
      close(p[0]);
      notify_fd = p[1];
      in_child = true;
      co.root_status = NULL;
      if (crest_engine_restore(&co, &root, &e) < 0)
        {
          char *t = crest_error_text(e);
          if (notify_fd >= 0)
            notify('E', t ? t : "restore failed");
          else
            fprintf(stderr, "crest: %s\n", t ? t : "lazy restore failed");
          _exit(1);
        }
      _exit(0);
    }
  close(p[1]);
  while ((n = read(p[0], msg, sizeof msg - 1)) < 0 && errno == EINTR)
    ;
  close(p[0]);
  if (n <= 0)
    {
      int st;
      waitpid(ch, &st, 0);
      return crest_error_make(err, ECHILD, "restore --lazy-pages: the restoring process died");
    }
  msg[n] = 0;
  if (msg[0] != 'R')
    {
      waitpid(ch, NULL, 0);
      return crest_error_make(err, 0, "%s", msg + 1);
    }
  *root_out = (pid_t)atoi(msg + 1);
  return 0;
}
