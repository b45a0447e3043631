/* crest: copy-on-write kept (docs/engine.md, "Memory shared with the
 * parent"). A child's private mapping (anonymous, its stack, or the
 * written pages of a private file mapping) at the same range as one of its
 * parent's (inherited through fork) holds pages that are still the
 * parent's. At checkpoint those pages, compared by content with the
 * parent's, are not saved again: the child's record lists them as
 * "parent_pages". At restore the parent maps and fills such a mapping
 * before it forks the child (cow_premap), the child inherits it
 * copy-on-write, drops what it does not share and writes only its own
 * pages; a mapping that cannot be premapped is filled from the parent's
 * page file instead (a full copy). */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include "dump-int.h"
#include "restore-int.h"
#include "blob/blob-abi.h"
#include "image.h"
#include "log.h"
#include "testhook.h"
#include "util.h"

#define PM_PRESENT (1ULL << 63)
#define PM_SWAP (1ULL << 62)
#define PM_FILE (1ULL << 61) /* a page of the file (or shared): not the mapping's own */
#define PM_EXCLUSIVE (1ULL << 56)
#define CMP_PAGES 256 /* pages compared per read */

/* Kinds of mapping whose pages may be shared with the parent: private
   memory as fork leaves it, anonymous (the heap and the stack too) or the
   pages written of a private file mapping (a library's data and
   relocations, say: the rest are the file's, in every process alike). */
static bool
cow_kind(const char *kind, bool shared)
{
  return !shared
         && (strcmp(kind, "anon") == 0 || strcmp(kind, "heap") == 0 || strcmp(kind, "stack") == 0
             || strcmp(kind, "file") == 0);
}

/* The same mapping in parent and child: range, kind and, for a file, the
   file and its offset. */
static bool
cow_same_dump(const struct vma *a, const struct vma *b)
{
  return a->start == b->start && a->end == b->end && strcmp(a->kind, b->kind) == 0
         && (strcmp(a->kind, "file") != 0
             || (a->pgoff == b->pgoff && a->ino == b->ino && a->dev_major == b->dev_major
                 && a->dev_minor == b->dev_minor && a->path && b->path
                 && strcmp(a->path, b->path) == 0));
}

/* A page the mapping holds itself, in memory or swapped: every page of an
   anonymous mapping, of a private file mapping those written (copies). */
static bool
own_page(uint64_t e, bool file)
{
  return ((e & PM_PRESENT) && !(file && (e & PM_FILE))) || (e & PM_SWAP);
}

/* Test hook CREST_COW=off|no-premap|aside (testhook.c). */
static bool
cow_knob(const char *what)
{
  const char *k = crest_test_knob("CREST_COW");
  return k && strcmp(k, what) == 0;
}

/* ---------- checkpoint ---------- */

struct cow_dump
{
  pid_t pid, ppid;      /* the child and its parent (host PIDs) */
  struct dproc *pp;     /* the parent, whose page file may hold its pages */
  int dirfd;            /* the image's directory */
  const struct vma *pv; /* the parent's mappings (its dproc's) */
  size_t npv;
  int ppm;            /* the parent's pagemap */
  uint64_t (*ref)[2]; /* parent_pages: start, length */
  size_t nref;
  uint64_t shared, equal; /* pages referenced: not exclusively mapped, exclusive but equal */
  uint64_t in_file;       /* pages compared with the parent's page file */
  char *a, *b;
};

int
cow_dump_begin(struct dctx *c, struct dproc *p, struct cow_dump **out, crest_error_t *err)
{
  struct dproc *pp = p == &c->p[0] ? NULL : find_proc(c, p->ppid);
  struct cow_dump *d;
  cleanup_free char *pm = NULL;

  *out = NULL;
  if (!pp || pp->zombie || cow_knob("off"))
    return 0;
  d = xzalloc(sizeof *d);
  d->pid = p->pid, d->ppid = pp->pid;
  d->pp = pp, d->dirfd = c->w->dirfd;
  /* The parent's mappings as its own dump read them (it is dumped before
     its children), not read again for each child. */
  if (!pp->maps && parse_maps(pp->pid, &pp->maps, &pp->nmaps, err) < 0)
    {
      free(d);
      return -1;
    }
  d->pv = pp->maps, d->npv = pp->nmaps;
  pm = xasprintf("/proc/%d/pagemap", pp->pid);
  d->ppm = open(pm, O_RDONLY | O_CLOEXEC);
  if (d->ppm < 0)
    {
      crest_error_errno(err, "task %d: open pagemap", pp->pid);
      cow_dump_free(d);
      return -1;
    }
  d->a = xmalloc(CMP_PAGES * PAGE);
  d->b = xmalloc(CMP_PAGES * PAGE);
  *out = d;
  return 0;
}

/* A referenced page at ADDR; runs do not cross the mapping's start VS. */
static void
add_ref(struct cow_dump *d, uint64_t addr, uint64_t vs)
{
  if (d->nref && addr != vs && d->ref[d->nref - 1][0] + d->ref[d->nref - 1][1] == addr)
    {
      d->ref[d->nref - 1][1] += PAGE;
      return;
    }
  d->ref = xrealloc(d->ref, (d->nref + 1) * sizeof *d->ref);
  d->ref[d->nref][0] = addr, d->ref[d->nref][1] = PAGE;
  d->nref++;
}

/* The parent's pages as its own page file holds them (the parent was
   checkpointed before its children, and the tree is still since), mapped
   from the image: read there rather than out of the parent again, once for
   each of its children. The file mapped (once, for all its children), or
   false where it cannot be (a parent not written yet, mmap refused). */
static bool
parent_file_map(struct cow_dump *d)
{
  struct dproc *pp = d->pp;
  struct stat st;
  int fd;
  void *m = MAP_FAILED;

  if (pp->pf_map)
    return true;
  if (!pp->pages_name || pp->pf_failed)
    return false;
  fd = openat(d->dirfd, pp->pages_name, O_RDONLY | O_CLOEXEC);
  if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 0)
    m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
  if (fd >= 0)
    close(fd);
  if (m == MAP_FAILED)
    {
      pp->pf_failed = true;
      return false;
    }
  pp->pf_map = m, pp->pf_len = (size_t)st.st_size;
  return true;
}

/* The parent's page at ADDR in its mapped page file (parent_file_map
   first), NULL where the file does not hold it (a page the parent shares
   with its own parent). *HINT: the run of the
   last page found, tried first (the pages come in ascending order). */
static const char *
parent_page(const struct cow_dump *d, uint64_t addr, size_t *hint)
{
  const struct dproc *pp = d->pp;
  const struct prun *r = *hint < pp->nruns ? &pp->runs[*hint] : NULL;
  size_t lo = 0, hi = pp->nruns;

  if (!pp->pf_map)
    return NULL;
  while (!r || addr < r->vaddr || addr >= r->vaddr + r->len)
    {
      size_t mid;
      if (lo >= hi)
        return NULL;
      mid = lo + (hi - lo) / 2;
      r = &pp->runs[mid];
      if (addr < r->vaddr)
        hi = mid, r = NULL;
      else if (addr >= r->vaddr + r->len)
        lo = mid + 1, r = NULL;
      else
        *hint = mid;
    }
  {
    uint64_t off = r->off + (addr - r->vaddr);
    return r->from || off + PAGE > pp->pf_len ? NULL : pp->pf_map + off;
  }
}

/* Does the parent's image hold its page at ADDR in a run (of its own page
   file or of an image it takes pages from)? A page of zeros it does not
   hold there may be one it left out as the zero page (mem.c, dump_memory):
   a child's equal page is then not made a reference to it (which the
   restore would refuse), and is left out as well where it is not the
   child's own. (A page of zeros the parent holds through a reference of
   its own is not told apart: the child's copy is saved, or left out.) */
static bool
parent_has(const struct cow_dump *d, uint64_t addr)
{
  return prun_find(d->pp->runs, d->pp->nruns, addr) != NULL;
}

/* Pages K..J-1 from START compared, EQ[i] set for page K+i equal to the
   parent's and one its image holds (A, B: buffers of CMP_PAGES pages).
   Run by two threads at once
   on the halves of a long run; the parent's page file is mapped before
   (parent_page only reads then). */
struct cmp_part
{
  struct cow_dump *d;
  uint64_t start, k, j, in_file;
  uint8_t *eq;
  char *a, *b;
  crest_error_t err;
  int rc;
};

static void *
compare_part(void *arg)
{
  struct cmp_part *c = arg;
  const char *src[CMP_PAGES];
  size_t hint = 0;
  c->rc = 0;
  for (uint64_t k = c->k; k < c->j;)
    {
      uint64_t n = c->j - k < CMP_PAGES ? c->j - k : CMP_PAGES, addr = c->start + k * PAGE;
      bool remote = false;
      if (vm_read(c->d->pid, addr, c->a, n * PAGE, &c->err) < 0)
        return c->rc = -1, NULL;
      for (uint64_t i = 0; i < n; i++)
        if (!(src[i] = parent_page(c->d, addr + i * PAGE, &hint)))
          remote = true;
        else
          c->in_file++;
      if (remote && vm_read(c->d->ppid, addr, c->b, n * PAGE, &c->err) < 0)
        return c->rc = -1, NULL;
      /* A page read out of the parent (not in its page file) that is all
         zeros is a reference only where the parent's image holds it. */
      for (uint64_t i = 0; i < n; i++)
        {
          const char *pa = c->a + i * PAGE;
          c->eq[k - c->k + i] = memcmp(pa, src[i] ? src[i] : c->b + i * PAGE, PAGE) == 0
                                && (src[i] || !page_zero(pa) || parent_has(c->d, addr + i * PAGE));
        }
      k += n;
    }
  return NULL;
}

/* Pages K..J-1 from START in M (present in both): those equal to the parent's lose
   their present and swap bits in ENT (not saved) and become references. A
   run of at least 2 * CMP_PAGES pages is compared in two halves at once
   (the second by a thread of its own), as the copies out of the child
   are most of a tree's checkpoint where children share much. */
static int
compare_run(struct cow_dump *d, const struct vma *m, uint64_t start, uint64_t *ent, uint64_t k,
            uint64_t j, crest_error_t *err)
{
  cleanup_free uint8_t *eq = xzalloc(j - k);
  struct cmp_part part[2] = { { d, start, k, j, 0, eq, d->a, d->b, NULL, 0 } };
  cleanup_free char *bufs = NULL;
  pthread_t th;
  bool two = false;

  (void)parent_file_map(d); /* before the second thread reads it */
  if (j - k >= 2 * CMP_PAGES)
    {
      uint64_t mid = k + (j - k) / 2;
      bufs = xmalloc(2 * CMP_PAGES * PAGE);
      part[1] = (struct cmp_part){
        d, start, mid, j, 0, eq + (mid - k), bufs, bufs + CMP_PAGES * PAGE, NULL, 0
      };
      part[0].j = mid;
      two = pthread_create(&th, NULL, compare_part, &part[1]) == 0;
      if (!two)
        part[0].j = j;
    }
  compare_part(&part[0]);
  if (two)
    pthread_join(th, NULL);
  for (int t = 0; t < 2; t++)
    {
      d->in_file += part[t].in_file;
      if (part[t].rc < 0 && !*err)
        *err = part[t].err, part[t].err = NULL;
      crest_error_release(&part[t].err);
    }
  if (part[0].rc < 0 || part[1].rc < 0)
    return -1;
  for (uint64_t i = 0; i < j - k; i++)
    if (eq[i])
      {
        if (ent[k + i] & PM_EXCLUSIVE)
          d->equal++;
        else
          d->shared++;
        ent[k + i] &= ~(PM_PRESENT | PM_SWAP);
        add_ref(d, start + (k + i) * PAGE, m->start);
      }
  return 0;
}

/* Mapping M of the child, ENT the pagemap entries of its NPAGES pages
   from START (a window of it): the pages it shares with the parent's
   mapping of the same range are taken out. */
int
cow_dump_filter(struct cow_dump *d, const struct vma *m, uint64_t start, uint64_t *ent,
                uint64_t npages, crest_error_t *err)
{
  const struct vma *pm = NULL;
  cleanup_free uint64_t *pe = NULL;
  bool file;

  if (!d || !cow_kind(m->kind, m->shared) || !(m->prot & PROT_READ))
    return 0;
  file = strcmp(m->kind, "file") == 0;
  for (size_t i = 0; i < d->npv && !pm; i++)
    if (cow_same_dump(&d->pv[i], m) && !d->pv[i].shared && (d->pv[i].prot & PROT_READ))
      pm = &d->pv[i];
  if (!pm)
    return 0;
  pe = xmalloc(npages * 8);
  if (pagemap_read(d->ppm, d->ppid, start, npages, pe, err) < 0)
    return -1;
  /* The parent's pages that only the checkpoint's own injected calls made
     present are not in its image: not to be referred to. */
  unfresh(d->pp, start, npages, pe);
#define BOTH(k) (own_page(ent[k], file) && own_page(pe[k], file))
  for (uint64_t k = 0; k < npages;)
    {
      uint64_t j = k;
      while (j < npages && BOTH(j))
        j++;
      if (j > k && compare_run(d, m, start, ent, k, j, err) < 0)
        return -1;
      k = j + 1;
    }
#undef BOTH
  return 0;
}

/* "parent_pages" of the child's record, when it shares any. */
void
cow_dump_put(struct dctx *c, struct cow_dump *d, yajl_gen g)
{
  if (!d || !d->nref)
    return;
  if (c->w->format < CREST_IMAGE_FORMAT_COW)
    c->w->format = CREST_IMAGE_FORMAT_COW;
  jput_key(g, "parent_pages");
  yajl_gen_array_open(g);
  for (size_t i = 0; i < d->nref; i++)
    {
      yajl_gen_map_open(g);
      jput_u64(g, "vaddr", d->ref[i][0]);
      jput_u64(g, "len", d->ref[i][1]);
      yajl_gen_map_close(g);
    }
  yajl_gen_array_close(g);
  crest_debug("task %d: %" PRIu64 " pages shared with parent %d (%" PRIu64
              " not exclusively mapped, %" PRIu64 " exclusive with equal content; %" PRIu64
              " compared with the parent's page file)",
              d->pid, d->shared + d->equal, d->ppid, d->shared, d->equal, d->in_file);
}

void
cow_dump_free(struct cow_dump *d)
{
  if (!d)
    return;
  if (d->ppm >= 0)
    close(d->ppm);
  free(d->ref), free(d->a), free(d->b);
  free(d);
}

/* ---------- restore ---------- */

/* A page run of the child equal to its parent's, resolved to the page file
   that holds it (the parent's, or further up). */
struct cow_src
{
  uint64_t vaddr, len, off;
  const struct rproc *from; /* whose pages_file */
  size_t vma;               /* the child's mapping that holds it */
};

struct cow_proc
{
  const struct rproc *parent;
  struct cow_src *src; /* parent_pages, resolved, ascending */
  size_t nsrc;
  /* Per mapping: it exists before the blob runs, filled (premapped, or
     inherited from the parent premapped), and the blob keeps it. Set in
     the task before it forks its children, who inherit it. */
  bool *kept;
  /* Per kept mapping: where it lies until the blob moves it to its own
     place, which crest's memory held when it was premapped (0: in its
     own place). Inherited by the children with the mapping. */
  uint64_t *aside;
  bool has_children_refs; /* a child refers to its pages */
  bool heap_brk;          /* its heap made by brk() in place (premap_heap): */
  size_t heap0, heap1;    /* its mappings heap0 .. heap1 - 1 */
};

static struct cow_proc *
cow_of(struct rproc *p)
{
  if (!p->cow)
    {
      p->cow = xzalloc(sizeof *p->cow);
      p->cow->kept = xzalloc((p->nvmas + 1) * sizeof *p->cow->kept);
      p->cow->aside = xzalloc((p->nvmas + 1) * sizeof *p->cow->aside);
    }
  return p->cow;
}

/* The piece of P's memory at A: from its own page file or resolved
   further up; its length to its end in *LEN. */
static bool
find_piece(const struct rproc *p, uint64_t a, uint64_t *len, const struct rproc **from,
           uint64_t *off)
{
  size_t lo = 0, hi = p->nruns;
  while (lo < hi)
    {
      size_t mid = (lo + hi) / 2;
      if (p->runs[mid].vaddr + p->runs[mid].len <= a)
        lo = mid + 1;
      else
        hi = mid;
    }
  if (lo < p->nruns && p->runs[lo].vaddr <= a)
    {
      *len = p->runs[lo].vaddr + p->runs[lo].len - a;
      *from = p, *off = p->runs[lo].off + (a - p->runs[lo].vaddr);
      return true;
    }
  lo = 0, hi = p->cow ? p->cow->nsrc : 0;
  while (lo < hi)
    {
      size_t mid = (lo + hi) / 2;
      if (p->cow->src[mid].vaddr + p->cow->src[mid].len <= a)
        lo = mid + 1;
      else
        hi = mid;
    }
  if (p->cow && lo < p->cow->nsrc && p->cow->src[lo].vaddr <= a)
    {
      const struct cow_src *s = &p->cow->src[lo];
      *len = s->vaddr + s->len - a;
      *from = s->from, *off = s->off + (a - s->vaddr);
      return true;
    }
  return false;
}

/* The mapping of P that holds [A, A + LEN), a kind that may be shared. */
static long
vma_of(const struct rproc *p, uint64_t a, uint64_t len)
{
  for (size_t i = 0; i < p->nvmas; i++)
    if (p->vmas[i].start <= a && a + len <= p->vmas[i].end && a + len > a
        && cow_kind(p->vmas[i].kind, p->vmas[i].shared))
      return (long)i;
  return -1;
}

/* The parent's mapping of the same range (and kind, file and offset) as
   P's mapping M. */
static long
parent_vma(const struct rproc *par, const struct rvma *m)
{
  for (size_t j = 0; j < par->nvmas; j++)
    {
      const struct rvma *q = &par->vmas[j];
      if (q->start == m->start && q->end == m->end && strcmp(q->kind, m->kind) == 0 && !q->shared
          && (strcmp(m->kind, "file") != 0
              || (q->pgoff == m->pgoff && q->path && m->path && strcmp(q->path, m->path) == 0)))
        return (long)j;
    }
  return -1;
}

static bool
overlaps_runs(const struct rproc *p, uint64_t a, uint64_t len)
{
  for (size_t i = 0; i < p->nruns; i++)
    if (p->runs[i].vaddr < a + len && a < p->runs[i].vaddr + p->runs[i].len)
      return true;
  return false;
}

/* One "parent_pages" run of P, [A, A + LEN), resolved into P's sources. */
static int
resolve_ref(struct rproc *p, struct rproc *par, uint64_t a, uint64_t len, crest_error_t *err)
{
  long vi = vma_of(p, a, len);
  struct cow_proc *cw = cow_of(p);
  CHECK(vi >= 0 && parent_vma(par, &p->vmas[vi]) >= 0,
        "process %d: parent_pages %#" PRIx64 "+%#" PRIx64
        " not in a private mapping that its parent %d has too",
        p->pid, a, len, par->pid);
  CHECK(!overlaps_runs(p, a, len), "process %d: parent_pages %#" PRIx64 " are also in its pages",
        p->pid, a);
  for (uint64_t end = a + len; a < end;)
    {
      struct cow_src s;
      uint64_t plen;
      CHECK(find_piece(par, a, &plen, &s.from, &s.off),
            "process %d: parent_pages at %#" PRIx64 ": its parent %d has no page there", p->pid, a,
            par->pid);
      s.vaddr = a, s.len = plen < end - a ? plen : end - a, s.vma = (size_t)vi;
      cw->src = xrealloc(cw->src, (cw->nsrc + 1) * sizeof *cw->src);
      cw->src[cw->nsrc++] = s;
      a += s.len;
    }
  return 0;
}

/* "parent_pages" of process P (format 5): checked, and resolved into the
   page files that hold them. Its parent is parsed before it. */
int
cow_parse(struct rctx *c, yajl_val v, struct rproc *p, crest_error_t *err)
{
  yajl_val *items;
  struct rproc *par = NULL;
  uint64_t prev = 0;
  long n;

  if (!has_key(v, "parent_pages"))
    return 0;
  CHECK(c->img->format >= CREST_IMAGE_FORMAT_COW,
        "process %d: parent_pages in an image of format %d (it needs format %d)", p->pid,
        c->img->format, CREST_IMAGE_FORMAT_COW);
  for (struct rproc *q = c->p; q < p && !par; q++)
    if (q->pid == p->ppid && !q->zombie)
      par = q;
  CHECK(par, "process %d: parent_pages, but its parent %d is not before it", p->pid, p->ppid);
  CHECK(c->nchain == 0, "process %d: parent_pages in an image with a parent image", p->pid);
  n = jget_array(v, "parent_pages", &items, err);
  CHECK(n >= 0 && n <= (1 << 24), "process %d: %ld parent_pages runs", p->pid, n);
  cow_of(p)->parent = par;
  cow_of(par)->has_children_refs = true;
  for (long i = 0; i < n; i++)
    {
      uint64_t a, len;
      if (jget_u64(items[i], "vaddr", &a, err) < 0 || jget_u64(items[i], "len", &len, err) < 0)
        return -1;
      CHECK(a % PAGE == 0 && len % PAGE == 0 && len > 0 && a + len > a && a + len <= TASK_TOP
                && a >= prev,
            "process %d: parent_pages run %ld (%#" PRIx64 "+%#" PRIx64 ") is malformed", p->pid, i,
            a, len);
      if (resolve_ref(p, par, a, len, err) < 0)
        return -1;
      prev = a + len;
    }
  return 0;
}

void
cow_free(struct rproc *p)
{
  if (!p->cow)
    return;
  free(p->cow->src), free(p->cow->kept), free(p->cow->aside), free(p->cow);
  p->cow = NULL;
}

/* Where mapping I of P lies now (its own place, or aside). */
static uint64_t
now_at(const struct rproc *p, size_t i)
{
  return p->cow->aside[i] ? p->cow->aside[i] : p->vmas[i].start;
}

/* Copy [VADDR, VADDR + LEN) of FD at OFF into memory, within [VS, VE),
   which lies DELTA bytes further now. */
static int
fill(int fd, uint64_t vaddr, uint64_t len, uint64_t off, uint64_t vs, uint64_t ve, uint64_t delta)
{
  uint64_t s = vaddr > vs ? vaddr : vs, e = vaddr + len < ve ? vaddr + len : ve;
  for (uint64_t a = s; a < e;)
    {
      ssize_t n = pread(fd, (void *)(a + delta), e - a, off + (a - vaddr));
      if (n <= 0)
        {
          if (n < 0 && errno == EINTR)
            continue;
          if (n == 0)
            errno = EIO;
          return -1;
        }
      a += n;
    }
  return 0;
}

/* P's own pages and (SRC) its resolved parent's pages inside mapping VI,
   where it lies now. */
static int
fill_vma(const struct rproc *p, size_t vi, bool src)
{
  const struct rvma *m = &p->vmas[vi];
  uint64_t delta = now_at(p, vi) - m->start;
  for (size_t i = 0; i < p->nruns; i++)
    if (p->runs[i].vaddr < m->end && m->start < p->runs[i].vaddr + p->runs[i].len
        && fill(p->pages_svc, p->runs[i].vaddr, p->runs[i].len, p->runs[i].off, m->start, m->end,
                delta)
               < 0)
      return -1;
  for (size_t i = 0; src && i < p->cow->nsrc; i++)
    {
      const struct cow_src *s = &p->cow->src[i];
      if (s->vaddr < m->end && m->start < s->vaddr + s->len
          && fill(s->from->pages_svc, s->vaddr, s->len, s->off, m->start, m->end, delta) < 0)
        return -1;
    }
  return 0;
}

/* Mapping I of P, inherited from its parent, which premapped it: what P
   does not share goes (reads zero, as a page it never had, or a file
   mapping's page the file's again), then P's own pages are written. */
static int
take_inherited(struct rproc *p, size_t i)
{
  const struct rvma *m = &p->vmas[i];
  uint64_t a = m->start, delta = now_at(p, i) - m->start;
  for (size_t k = 0; k <= p->cow->nsrc; k++)
    {
      const struct cow_src *s = k < p->cow->nsrc ? &p->cow->src[k] : NULL;
      uint64_t e = s && s->vma == i ? s->vaddr : m->end;
      if (s && s->vma != i)
        continue;
      if (e > a && madvise((void *)(a + delta), e - a, MADV_DONTNEED) < 0)
        return -1;
      if (!s)
        break;
      a = s->vaddr + s->len;
    }
  return fill_vma(p, i, false);
}

static bool
child_refers(struct rctx *c, const struct rproc *p, const struct rvma *m)
{
  for (size_t i = 1; i < c->np; i++)
    {
      const struct cow_proc *q = c->p[i].cow;
      if (!q || q->parent != p)
        continue;
      for (size_t k = 0; k < q->nsrc; k++)
        if (q->src[k].vaddr >= m->start && q->src[k].vaddr < m->end)
          return true;
    }
  return false;
}

/* The parent's premapped mappings P does not keep go at once: they are
   not P's, and would stand in the way of its own. */
static void
drop_unshared(const struct rproc *p, const struct cow_proc *pc)
{
  for (size_t j = 0; pc && j < p->cow->parent->nvmas; j++)
    {
      const struct rvma *pm = &p->cow->parent->vmas[j];
      bool kept = false;
      if (!pc->kept[j])
        continue;
      for (size_t i = 0; i < p->nvmas && !kept; i++)
        kept = p->cow->kept[i] && p->vmas[i].start == pm->start && p->vmas[i].end == pm->end;
      if (!kept)
        munmap((void *)now_at(p->cow->parent, j), pm->end - pm->start);
    }
}

/* Mapping I of P mapped as the blob would (a file's at its offset, from
   the service descriptor; the stack growing down), writable, in its own
   place or else aside (p->cow->aside[i]). False where neither can be: the
   children then copy its pages. */
static bool
premap(struct rctx *c, struct rproc *p, size_t i)
{
  const struct rvma *m = &p->vmas[i];
  uint64_t len = m->end - m->start;
  bool file = m->path != NULL;
  int flags = MAP_PRIVATE | MAP_FIXED_NOREPLACE | (file ? 0 : MAP_ANONYMOUS)
              | (strcmp(m->kind, "stack") == 0 ? MAP_GROWSDOWN : 0)
              | (m->madv & VMF_NORESERVE ? MAP_NORESERVE : 0);
  int fd = file ? m->svc : -1, e;
  off_t off = file ? (off_t)(m->pgoff * PAGE) : 0;
  bool apart = mem_keep_apart(p, i);
  if (p->cow->heap_brk && i >= p->cow->heap0 && i < p->cow->heap1)
    return true; /* made in place (premap_heap) */
  /* One that must stay apart from the mapping below it (mem_keep_apart):
     aside, so that the blob's move gives it an offset of its own. */
  void *r = cow_knob("aside") || apart
                ? MAP_FAILED
                : mmap((void *)m->start, len, PROT_READ | PROT_WRITE, flags, fd, off);
  if (r == (void *)m->start)
    return true;
  e = r == MAP_FAILED ? errno : EEXIST;
  if (r != MAP_FAILED)
    munmap(r, len);
  r = task_map_aside(c, len, flags & (MAP_NORESERVE | MAP_GROWSDOWN));
  if (r && file
      && mmap(r, len, PROT_READ | PROT_WRITE, (flags & ~MAP_FIXED_NOREPLACE) | MAP_FIXED, fd, off)
             != r)
    e = errno, munmap(r, len), r = NULL;
  if (!r)
    {
      crest_debug("process %d: mapping %#" PRIx64 "-%#" PRIx64
                  " not premapped (%s), nor aside: its children copy it",
                  p->pid, m->start, m->end, strerror(e));
      return false;
    }
  if (apart)
    {
      /* An anon_vma of its own (mem_keep_apart): a page written, dropped. */
      *(volatile uint8_t *)r = 1;
      madvise(r, PAGE, MADV_DONTNEED);
    }
  crest_debug("process %d: mapping %#" PRIx64 "-%#" PRIx64 " premapped aside at %p (%s)", p->pid,
              m->start, m->end, r,
              apart ? "to stay apart from the one below" : "its place is crest's");
  p->cow->aside[i] = (uint64_t)r;
  return true;
}

/* This process's own layout as PR_SET_MM_MAP takes it (exe and auxv left
   as they are), from /proc/self/stat and brk(0). */
static bool
self_mm(struct mm_map *mm)
{
  char buf[1024], *q;
  uint64_t f[53] = { 0 };
  int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC), n = 4;
  ssize_t len = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
  if (fd >= 0)
    close(fd);
  if (len <= 0 || !(buf[len] = 0, q = strrchr(buf, ')')) || strlen(q) < 4)
    return false;
  for (char *t = q + 4; *t && n < 53; n++) /* from field 4, past ") S " */
    {
      f[n] = strtoull(t, &t, 10);
      while (*t == ' ')
        t++;
    }
  if (n < 52)
    return false;
  *mm = (struct mm_map){ f[26], f[27],       f[45], f[46], f[47], (uint64_t)syscall(SYS_brk, 0),
                         f[28], f[48],       f[49], f[50], f[51], 0,
                         0,     (uint32_t)-1 };
  return true;
}

/* P's heap made in place by brk(), as the kernel made it (mem_heap_by_brk),
   in the task before it forks the children that share it: the mm fields
   are the image's for that call, crest's own again after it (its malloc
   knows its own break). False, with nothing made, when brk() would not
   (crest's memory lies there). */
static bool
premap_heap(struct rctx *c, int idx, const struct rproc *p)
{
  struct mm_map self, tmp = p->mm;
  long r;
  if (cow_knob("aside") || !self_mm(&self))
    return false;
  uint64_t to = p->vmas[p->cow->heap1 - 1].end;
  tmp.brk = tmp.start_brk, tmp.auxv = 0, tmp.auxv_size = 0, tmp.exe_fd = (uint32_t)-1;
  if (prctl(PR_SET_MM, PR_SET_MM_MAP, &tmp, sizeof tmp, 0) < 0)
    return false;
  r = syscall(SYS_brk, to);
  if (prctl(PR_SET_MM, PR_SET_MM_MAP, &self, sizeof self, 0) < 0)
    task_fail(c, idx, "process %d: give crest's own memory layout back after making its heap: %s",
              p->pid, strerror(errno));
  return r == (long)to;
}

/* Mapping I of P premapped and filled, for its children to inherit, when
   they refer to its pages. */
static void
premap_fill(struct rctx *c, int idx, struct rproc *p, size_t i)
{
  const struct rvma *m = &p->vmas[i];
  /* Not one never writable: premapped writable, the kernel would charge
     it to the commit accounting (VmFlags "ac"), which the original never
     was; its children copy its pages instead. */
  if (p->cow->kept[i] || !cow_kind(m->kind, m->shared) || (m->madv & VMF_NOACCOUNT)
      || !child_refers(c, p, m) || cow_knob("no-premap") || !premap(c, p, i))
    return;
  if (fill_vma(p, i, true) < 0)
    task_fail(c, idx, "process %d: fill mapping %#" PRIx64 "-%#" PRIx64 ": %s", p->pid, m->start,
              m->end, strerror(errno));
  p->cow->kept[i] = true;
}

/* In task IDX, before it forks its children: the mappings it inherited
   from its parent made its own, and those its children share with it
   mapped and filled, so that they inherit them. A mapping whose place
   crest's own memory holds is mapped aside (where no task of the tree has
   a mapping) and moved to its place by the blob (cow_unmap_ops); one that
   cannot be mapped at all is left to the blob, and the children then copy
   the pages in full. */
void
cow_premap(struct rctx *c, int idx)
{
  struct rproc *p = &c->p[idx];
  const struct cow_proc *pc = p->cow && p->cow->parent ? p->cow->parent->cow : NULL;
  if (!p->cow)
    return;
  for (size_t i = 0; pc && i < p->nvmas; i++)
    {
      long j = parent_vma(p->cow->parent, &p->vmas[i]);
      bool mine = false;
      for (size_t k = 0; k < p->cow->nsrc && !mine; k++)
        mine = p->cow->src[k].vma == i;
      if (!mine || j < 0 || !pc->kept[j])
        continue;
      p->cow->aside[i] = pc->aside[j];
      if (take_inherited(p, i) < 0)
        task_fail(c, idx,
                  "process %d: mapping %#" PRIx64 "-%#" PRIx64 " shared with its parent: %s",
                  p->pid, p->vmas[i].start, p->vmas[i].end, strerror(errno));
      p->cow->kept[i] = true;
    }
  drop_unshared(p, pc);
  /* The heap, when its children share all of it, by brk(), once what lies
     below it is mapped: a mapping made next to it after would merge with
     it (premap_heap). */
  size_t h0 = 0, h1 = 0;
  bool all = p->cow->has_children_refs && mem_heap_by_brk(p, &h0, &h1) && !cow_knob("no-premap");
  for (size_t i = h0; all && i < h1; i++)
    all = !p->cow->kept[i] && child_refers(c, p, &p->vmas[i]);
  if (!all)
    h0 = h1 = 0;
  for (size_t i = 0; p->cow->has_children_refs && i < p->nvmas; i++)
    if (i < h0 || i >= h1)
      premap_fill(c, idx, p, i);
  if (h1 > h0)
    {
      p->cow->heap0 = h0, p->cow->heap1 = h1;
      p->cow->heap_brk = premap_heap(c, idx, p);
      for (size_t i = h0; i < h1; i++)
        premap_fill(c, idx, p, i);
    }
}

bool
cow_kept(const struct rproc *p, size_t i)
{
  return p->cow && p->cow->kept[i];
}

/* Operations the blob may add for P's pages (cow_unmap_ops, cow_page_ops). */
size_t
cow_ops_bound(const struct rproc *p)
{
  return p->cow ? 2 * (2 * p->nvmas + p->nruns + p->cow->nsrc) + 4 : 0;
}

static int
by_start(const void *a, const void *b)
{
  const uint64_t *x = a, *y = b;
  return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Everything but the blob region [BASE, BASE + SIZE) and P's kept
   mappings goes; then the kept mappings that lie aside move to their
   place (free now: no task's mapping is where they lay, and theirs were
   crest's). */
void
cow_unmap_ops(const struct rproc *p, uint64_t base, uint64_t size, struct oplist *l)
{
  uint64_t(*keep)[2] = xmalloc((p->nvmas + 1) * sizeof *keep), a = 0;
  size_t n = 0;
  keep[n][0] = base, keep[n][1] = base + size, n++;
  for (size_t i = 0; i < p->nvmas; i++)
    if (cow_kept(p, i))
      {
        keep[n][0] = now_at(p, i);
        keep[n][1] = keep[n][0] + (p->vmas[i].end - p->vmas[i].start);
        n++;
      }
  qsort(keep, n, sizeof *keep, by_start);
  for (size_t k = 0; k <= n; k++)
    {
      uint64_t s = k < n ? keep[k][0] : TASK_TOP;
      if (s > a)
        OP(l, SYS_munmap, a, s - a, 0, 0, 0, 0);
      if (k < n)
        a = keep[k][1];
    }
  free(keep);
  for (size_t i = 0; i < p->nvmas; i++)
    if (cow_kept(p, i) && p->cow->aside[i])
      {
        uint64_t len = p->vmas[i].end - p->vmas[i].start;
        OPEQ(l, SYS_mremap, p->vmas[i].start, p->cow->aside[i], len, len,
             MREMAP_MAYMOVE | MREMAP_FIXED, p->vmas[i].start, 0);
      }
}

/* The index of P's first mapping that ends after A (nvmas if none). */
static size_t
vma_after(const struct rproc *p, uint64_t a)
{
  size_t lo = 0, hi = p->nvmas;
  while (lo < hi)
    {
      size_t mid = lo + (hi - lo) / 2;
      if (p->vmas[mid].end <= a)
        lo = mid + 1;
      else
        hi = mid;
    }
  return lo;
}

/* Does [A, A + LEN) meet one of P's mappings never writable? */
static bool
meets_noacct(const struct rproc *p, uint64_t a, uint64_t len)
{
  for (size_t k = vma_after(p, a); k < p->nvmas && p->vmas[k].start < a + len; k++)
    if (p->vmas[k].madv & VMF_NOACCOUNT)
      return true;
  return false;
}

bool
fill_needs_force(const struct rproc *p)
{
  for (size_t i = 0; i < p->nruns; i++)
    if (meets_noacct(p, p->runs[i].vaddr, p->runs[i].len))
      return true;
  for (size_t i = 0; p->cow && i < p->cow->nsrc; i++)
    if (meets_noacct(p, p->cow->src[i].vaddr, p->cow->src[i].len))
      return true;
  return false;
}

static int force_mem = -1;
static uint64_t force_buf;

void
fill_force_set(int mem, uint64_t buf)
{
  force_mem = mem, force_buf = buf;
}

void
fill_ops(const struct rproc *p, struct oplist *l, int svc, uint64_t vaddr, uint64_t len,
         uint64_t off)
{
  size_t k = vma_after(p, vaddr);
  while (len)
    {
      uint64_t e = vaddr + len;
      bool force = false;
      while (k < p->nvmas && p->vmas[k].end <= vaddr)
        k++;
      if (k < p->nvmas && p->vmas[k].start <= vaddr)
        {
          force = (p->vmas[k].madv & VMF_NOACCOUNT) != 0;
          e = p->vmas[k].end < e ? p->vmas[k].end : e;
        }
      else if (k < p->nvmas && p->vmas[k].start < e)
        e = p->vmas[k].start;
      if (force)
        OP(l, BLOB_OP_FORCE_FILL, svc, vaddr, e - vaddr, off, force_mem, force_buf);
      else
        PAGES_OPS(l, svc, vaddr, e - vaddr, off);
      off += e - vaddr, len -= e - vaddr, vaddr = e;
    }
}

/* P's pages: its own runs and, in mappings not inherited, its parent's
   pages it shares, read from the page file holding them. */
void
cow_page_ops(const struct rproc *p, struct oplist *l)
{
  size_t k = 0;
  for (size_t i = 0; i < p->nruns; i++)
    {
      const struct rrun *r = &p->runs[i];
      if (!p->cow)
        {
          lazy_pages_ops(p, r, l); /* lazy.c: all of it without --lazy-pages */
          continue;
        }
      for (uint64_t a = r->vaddr; a < r->vaddr + r->len;)
        {
          uint64_t e = r->vaddr + r->len;
          while (k < p->nvmas && p->vmas[k].end <= a)
            k++;
          if (k < p->nvmas && p->vmas[k].end < e)
            e = p->vmas[k].end;
          if (!cow_kept(p, k))
            fill_ops(p, l, p->pages_svc, a, e - a, r->off + (a - r->vaddr));
          a = e;
        }
    }
  for (size_t i = 0; p->cow && i < p->cow->nsrc; i++)
    {
      const struct cow_src *s = &p->cow->src[i];
      if (!p->cow->kept[s->vma])
        fill_ops(p, l, s->from->pages_svc, s->vaddr, s->len, s->off);
    }
}
