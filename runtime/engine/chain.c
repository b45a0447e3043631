/* crest: pre-dumps and parent images (docs/engine.md, "Pre-dumps").
 *
 * A pre-dump copies a tree's memory while it runs: the tree is held only
 * to read which pages each process has (pagemap) and to clear their
 * soft-dirty bits (clear_refs 4); the pages are copied once it runs on.
 * A later checkpoint with --parent-path reads pagemap's soft-dirty bit
 * (55): a page not written since the clear is taken from the parent
 * image, or from the image the parent took it from, instead of copied. */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>
#include "dump-int.h"
#include "engine-int.h"
#include "image.h"
#include "log.h"
#include "restore-int.h"
#include "digest.h"
#include "testhook.h"
#include "util.h"

/* A pre-dump's page file is hashed block by block as well (its sums file,
   img_sums_name: the digest of each SUM_BLOCK bytes, the last block
   shorter, with the page file's algorithm: XXH3-128, 16 bytes a block, or
   in an image of format 9 or older SHA-256, 32 bytes): a restore reads
   only some of a parent's pages, and checks only the blocks it reads
   (chain_check_reads). */
#define SUM_BLOCK (256u << 10)

struct sums
{
  struct digest s;
  uint8_t *out; /* digest_size bytes a block */
  size_t n;
};

static void
sums_block(struct sums *b)
{
  size_t len = digest_size(b->s.alg);
  b->out = xrealloc(b->out, (b->n + 1) * len);
  digest_final(&b->s, b->out + len * b->n++);
}

static void
sums_add(struct sums *b, const void *buf, uint64_t size_after)
{
  digest_update(&b->s, buf, PAGE);
  if (size_after % SUM_BLOCK == 0)
    {
      sums_block(b);
      digest_init(&b->s, b->s.alg);
    }
}

/* The last, short block, and the sums file beside page file NAME. */
static int
sums_write(struct dctx *c, struct sums *b, const char *name, uint64_t size, crest_error_t *err)
{
  cleanup_free char *sname = img_sums_name(name);
  if (size % SUM_BLOCK)
    sums_block(b);
  return img_write_file(c->w, sname, b->out ? (const void *)b->out : "",
                        b->n * digest_size(b->s.alg), err);
}

struct chain_vma
{
  uint64_t start, end, pgoff;
  char kind[16];
  char *path;
};

struct chain_proc
{
  pid_t pid;
  uint64_t start; /* its start time, field 22 of /proc/PID/stat */
  struct chain_vma *v;
  size_t nv;
  struct prun *runs; /* FROM relative to the image being written */
  size_t nr;
};

struct chain
{
  struct img_reader *r[CHAIN_MAX]; /* r[0]: the parent */
  int n;
  char *path; /* the parent's directory */
  pid_t root;
  uint64_t root_start;
  struct chain_proc *p;
  size_t np;
};

/* A process of the pre-dump being written. */
struct pre_proc
{
  pid_t pid, ipid;
  uint64_t start;
  struct vma *v;
  size_t nv;
  struct prun *runs; /* as planned; own runs' offsets are replaced as copied */
  size_t nr;
};

struct predump
{
  struct pre_proc *p;
  size_t np;
};

static int
proc_start_time(pid_t pid, uint64_t *out, crest_error_t *err)
{
  cleanup_free char *st = NULL;
  const char *q;
  int n = 2;
  if (read_proc(pid, "stat", &st, err) < 0)
    return -1;
  q = strrchr(st, ')');
  for (; q && *q && n < 22; q++)
    if (*q == ' ')
      n++;
  if (!q || !*q)
    return crest_error_make(err, EINVAL, "task %d: cannot parse /proc stat", pid);
  *out = strtoull(q, NULL, 10);
  return 0;
}

/* DIR/PARENT with "." and ".." taken out as a path's text says (DIR need
   not exist yet); PARENT itself when absolute. */
char *
chain_path(const char *dir, const char *parent)
{
  cleanup_free char *all = parent[0] == '/' ? xstrdup(parent) : xasprintf("%s/%s", dir, parent);
  char *out = xmalloc(strlen(all) + 3), *save = NULL;
  size_t len = 0, up = 0;
  bool abs = all[0] == '/';
  out[0] = 0;
  for (char *t = strtok_r(all, "/", &save); t; t = strtok_r(NULL, "/", &save))
    {
      if (strcmp(t, ".") == 0)
        continue;
      if (strcmp(t, "..") == 0 && len > up)
        {
          char *sl = strrchr(out, '/');
          len = sl ? (size_t)(sl - out) : 0;
          out[len] = 0;
          continue;
        }
      if (strcmp(t, "..") == 0 && abs)
        continue;
      len += sprintf(out + len, "%s%s", len || abs ? "/" : "", t);
      if (strcmp(t, "..") == 0)
        up = len;
    }
  if (!len)
    strcpy(out, abs ? "/" : ".");
  return out;
}

/* Open the chain of images from DIR on (expected manifest digest SHA,
   or NULL): each must be a pre-dump, each is checked as a restore checks
   an image (its page files by a thread when LATE). */
int
chain_open(const char *dir, const char *sha, int late, struct img_reader **r, int *n,
           crest_error_t *err)
{
  return chain_open_at(dir, sha, late, NULL, 0, r, n, err);
}

int
chain_open_at(const char *dir, const char *sha, int late, const char *const *dirs, int ndirs,
              struct img_reader **r, int *n, crest_error_t *err)
{
  cleanup_free char *path = xstrdup(ndirs ? dirs[0] : dir);
  char want[65] = "";
  if (sha)
    memcpy(want, sha, 65);
  for (*n = 0;; (*n)++)
    {
      struct img_reader *x;
      if (*n == CHAIN_MAX)
        return crest_error_make(err, ELOOP, "parent image %s: more than %d parent images", path,
                                CHAIN_MAX);
      if (img_reader_open_late(path, true, true, late, &x, err) < 0)
        return crest_error_wrap(err, "parent image");
      r[(*n)] = x;
      if (*want && strcmp(x->manifest_sha, want) != 0)
        {
          (*n)++;
          return crest_error_make(err, ESTALE,
                                  "parent image %s: not the image the checkpoint was made on "
                                  "(its manifest changed, or another image is there)",
                                  path);
        }
      if (!x->pre_dump)
        {
          (*n)++;
          return crest_error_make(err, EINVAL, "parent image %s: not a pre-dump (--pre-dump)",
                                  path);
        }
      if (!x->parent_path)
        {
          (*n)++;
          if (ndirs && *n != ndirs)
            return crest_error_make(
                err, EINVAL, "parent image %s: %d images given, %d in the chain", path, ndirs, *n);
          return 0;
        }
      memcpy(want, x->parent_sha, 65);
      free(path);
      if (ndirs && *n + 1 >= ndirs)
        return crest_error_make(err, EINVAL, "parent image %s: has a parent, none given", path);
      path = ndirs ? xstrdup(dirs[*n + 1]) : chain_path(x->dir, x->parent_path);
    }
}

static bool
key_in(yajl_val v, const char *key)
{
  for (size_t i = 0; YAJL_IS_OBJECT(v) && i < v->u.object.len; i++)
    if (strcmp(v->u.object.keys[i], key) == 0)
      return true;
  return false;
}

static int
parse_run(yajl_val it, struct prun *r, crest_error_t *err)
{
  int64_t from = 0;
  if (jget_u64(it, "vaddr", &r->vaddr, err) < 0 || jget_u64(it, "len", &r->len, err) < 0
      || jget_u64(it, "off", &r->off, err) < 0)
    return -1;
  if (key_in(it, "from") && jget_i64(it, "from", &from, err) < 0)
    return -1;
  r->from = from < 0 || from >= CHAIN_MAX ? CHAIN_MAX : (int)from;
  return 0;
}

/* Process record PV of the parent image (tree.json of a pre-dump). */
static int
parse_proc(struct chain *ch, yajl_val pv, struct chain_proc *cp, crest_error_t *err)
{
  yajl_val *items;
  long n;
  int64_t pid;
  if (jget_i64(pv, "pid", &pid, err) < 0 || jget_u64(pv, "starttime", &cp->start, err) < 0)
    return -1;
  cp->pid = pid;
  if ((n = jget_array(pv, "vmas", &items, err)) < 0)
    return -1;
  cp->v = xzalloc((n + 1) * sizeof *cp->v);
  for (long i = 0; i < n; i++, cp->nv++)
    {
      struct chain_vma *m = &cp->v[i];
      const char *kind, *path = NULL;
      if (jget_u64(items[i], "start", &m->start, err) < 0
          || jget_u64(items[i], "end", &m->end, err) < 0
          || jget_str(items[i], "kind", &kind, err) < 0
          || (key_in(items[i], "path") && jget_str(items[i], "path", &path, err) < 0)
          || (key_in(items[i], "pgoff") && jget_u64(items[i], "pgoff", &m->pgoff, err) < 0))
        return -1;
      snprintf(m->kind, sizeof m->kind, "%s", kind);
      m->path = path ? xstrdup(path) : NULL;
    }
  if ((n = jget_array(pv, "pages", &items, err)) < 0)
    return -1;
  cp->runs = xzalloc((n + 1) * sizeof *cp->runs);
  for (long i = 0; i < n; i++, cp->nr++)
    {
      struct prun *r = &cp->runs[i];
      cleanup_free char *name = NULL;
      const struct img_file *f;
      if (parse_run(items[i], r, err) < 0)
        return -1;
      r->from++;
      name = xasprintf("pages-%d.img", (int)pid);
      f = r->from <= ch->n ? img_reader_find(ch->r[r->from - 1], name) : NULL;
      if (!f || r->vaddr % PAGE || r->len % PAGE || r->off % PAGE || !r->len || r->off > f->size
          || r->len > f->size - r->off
          || (i && r->vaddr < cp->runs[i - 1].vaddr + cp->runs[i - 1].len))
        return crest_error_make(err, EINVAL,
                                "parent image %s: process %d: page run %ld lies outside its "
                                "images",
                                ch->path, (int)pid, i);
    }
  return 0;
}

int
chain_load(struct dctx *c, crest_error_t *err)
{
  struct chain *ch = xzalloc(sizeof *ch);
  yajl_val tree = NULL, *items;
  int64_t root;
  long n;
  int rc = -1;

  c->chain = ch;
  ch->path = chain_path(c->o->image_dir, c->o->parent_path);
  /* The checkpoint reads no page of its parents, only their records:
     their page files are checked where a restore reads them (their
     sums); the rest is hashed now, before the tree is stopped. */
  if (chain_open(ch->path, NULL, IMG_LATE_BLOCKS, ch->r, &ch->n, err) < 0)
    return -1;
  if (img_reader_json(ch->r[0], "tree.json", &tree, err) < 0)
    return crest_error_wrap(err, "parent image %s", ch->path);
  if (jget_i64(tree, "root", &root, err) < 0
      || jget_u64(tree, "root_start", &ch->root_start, err) < 0
      || (n = jget_array(tree, "processes", &items, err)) < 0)
    goto out;
  ch->root = root;
  ch->p = xzalloc((n + 1) * sizeof *ch->p);
  for (long i = 0; i < n; i++, ch->np++)
    if (parse_proc(ch, items[i], &ch->p[i], err) < 0)
      goto out;
  rc = 0;
out:
  if (rc < 0)
    crest_error_wrap(err, "parent image %s: tree.json", ch->path);
  yajl_tree_free(tree);
  return rc;
}

int
chain_check_root(struct dctx *c, crest_error_t *err)
{
  uint64_t st;
  if (proc_start_time(c->p[0].pid, &st, err) < 0)
    return -1;
  if (c->chain->root != c->p[0].ipid || c->chain->root_start != st)
    return crest_error_make(err, EINVAL,
                            "parent image %s: made of another tree (root %d started at %" PRIu64
                            ", this root is %d started at %" PRIu64 ")",
                            c->chain->path, (int)c->chain->root, c->chain->root_start,
                            (int)c->p[0].ipid, st);
  return 0;
}

const struct chain_proc *
chain_proc_of(struct dctx *c, const struct dproc *p)
{
  uint64_t st;
  crest_error_t e = NULL;
  if (!c->chain)
    return NULL;
  if (proc_start_time(p->pid, &st, &e) < 0)
    {
      crest_error_release(&e);
      return NULL;
    }
  for (size_t i = 0; i < c->chain->np; i++)
    if (c->chain->p[i].pid == p->ipid)
      return c->chain->p[i].start == st ? &c->chain->p[i] : NULL;
  return NULL;
}

bool
chain_take(const struct chain_proc *cp, const struct vma *m, uint64_t addr, uint64_t e, int *from,
           uint64_t *off)
{
  const struct chain_vma *pv = NULL;
  const struct prun *r;
  /* Present, mapped by this process only (bit 56: never the shared zero
     page a read fault maps, nor a page shared copy-on-write), and not
     written since the parent cleared the soft-dirty bits (bit 55). */
  if (!((e >> 63) & 1) || !((e >> 56) & 1) || ((e >> 55) & 1))
    return false;
  /* The parent saw this page in a mapping of the same kind, of the same
     file offset: else it is copied (a moved mapping's pages are soft-dirty
     anyway: the kernel marks them). */
  for (size_t i = 0; i < cp->nv && !pv; i++)
    if (cp->v[i].start <= addr && addr < cp->v[i].end)
      pv = &cp->v[i];
  if (!pv || strcmp(pv->kind, m->kind) != 0 || (!pv->path) != (!m->path)
      || (m->path
          && (strcmp(pv->path, m->path) != 0
              || pv->pgoff * PAGE + (addr - pv->start) != m->pgoff * PAGE + (addr - m->start))))
    return false;
  r = prun_find(cp->runs, cp->nr, addr);
  if (!r)
    return false;
  *from = r->from;
  *off = r->off + (addr - r->vaddr);
  return true;
}

void
chain_name_parent(struct dctx *c)
{
  c->w->parent_path = c->o->parent_path;
  memcpy(c->w->parent_sha, c->chain->r[0]->manifest_sha, 65);
}

int
chain_verified(struct dctx *c, crest_error_t *err)
{
  for (int i = 0; c->chain && i < c->chain->n; i++)
    if (img_reader_verified(c->chain->r[i], err) < 0)
      return crest_error_wrap(err, "parent image");
  return 0;
}

static void
free_pre(struct predump *pre)
{
  if (!pre)
    return;
  for (size_t i = 0; i < pre->np; i++)
    free_vmas(pre->p[i].v, pre->p[i].nv), free(pre->p[i].runs);
  free(pre->p);
  free(pre);
}

void
chain_free(struct dctx *c)
{
  struct chain *ch = c->chain;
  free_pre(c->pre);
  c->pre = NULL;
  if (!ch)
    return;
  for (int i = 0; i < ch->n; i++)
    img_reader_free(ch->r[i]);
  for (size_t i = 0; i < ch->np; i++)
    {
      for (size_t k = 0; k < ch->p[i].nv; k++)
        free(ch->p[i].v[k].path);
      free(ch->p[i].v), free(ch->p[i].runs);
    }
  free(ch->p), free(ch->path), free(ch);
  c->chain = NULL;
}

int
soft_dirty_probe(crest_error_t *err)
{
  uint64_t e = 0;
  const char *knob = crest_test_knob("CREST_NO_SOFT_DIRTY");
  char *pg = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (pg != MAP_FAILED && fd >= 0)
    {
      /* A page just written is soft-dirty where the kernel tracks it. */
      pg[0] = 1;
      if (pread(fd, &e, 8, (uintptr_t)pg / PAGE * 8) != 8)
        e = 0;
    }
  if (fd >= 0)
    close(fd);
  if (pg != MAP_FAILED)
    munmap(pg, PAGE);
  if (!((e >> 55) & 1) || (knob && *knob == '1'))
    return crest_error_make(err, ENOTSUP,
                            "checkpoint --pre-dump: this kernel does not track soft-dirty pages "
                            "(CONFIG_MEM_SOFT_DIRTY)");
  return 0;
}

int
predump_scan(struct dctx *c, crest_error_t *err)
{
  struct predump *pre = xzalloc(sizeof *pre);
  c->pre = pre;
  pre->p = xzalloc((c->np + 1) * sizeof *pre->p);
  for (size_t i = 0; i < c->np; i++)
    {
      struct dproc *p = &c->p[i];
      struct pre_proc *q = &pre->p[pre->np];
      uint64_t own;
      cleanup_close int cr = -1;
      cleanup_free char *crpath = xasprintf("/proc/%d/clear_refs", p->pid);
      if (p->zombie)
        continue;
      pre->np++;
      q->pid = p->pid, q->ipid = p->ipid;
      if (proc_start_time(p->pid, &q->start, err) < 0 || parse_maps(p->pid, &q->v, &q->nv, err) < 0
          || mem_plan(p, q->v, q->nv, NULL, chain_proc_of(c, p), &q->runs, &q->nr, &own, err) < 0)
        return -1;
      /* From now on a write to a page marks it again. */
      cr = open(crpath, O_WRONLY | O_CLOEXEC);
      if (cr < 0 || write(cr, "4", 1) != 1)
        return crest_error_errno(err, "task %d: clear its soft-dirty bits (clear_refs)", p->pid);
    }
  return 0;
}

/* Copy LEN bytes at ADDR of task PID into BUF while it runs: what cannot
   be read (unmapped meanwhile) is left out, page by page: *GOT[k] says
   whether page k was read. */
static void
copy_running(pid_t pid, int mem, uint64_t addr, uint64_t len, char *buf, bool noread, bool *got)
{
  struct iovec l = { buf, len }, r = { (void *)addr, len };
  if (!noread && process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)len)
    {
      memset(got, 1, len / PAGE);
      return;
    }
  for (uint64_t k = 0; k < len / PAGE; k++)
    got[k] = mem >= 0 && pread(mem, buf + k * PAGE, PAGE, addr + k * PAGE) == (ssize_t)PAGE;
}

/* Process Q's own pages, copied now that the tree runs: the runs are
   rebuilt from what was read. */
static int
predump_copy(struct dctx *c, struct pre_proc *q, struct img_out *o, struct sums *sums,
             crest_error_t *err)
{
  const uint64_t chunk = 1 << 20;
  cleanup_free char *buf = xmalloc(chunk);
  cleanup_free bool *got = xmalloc(chunk / PAGE);
  cleanup_free char *mempath = xasprintf("/proc/%d/mem", q->pid);
  cleanup_close int mem = open(mempath, O_RDONLY | O_CLOEXEC);
  struct prun *out = NULL;
  size_t nout = 0;
  for (size_t i = 0; i < q->nr; i++)
    {
      const struct prun *r = &q->runs[i];
      if (r->from)
        {
          out = xrealloc(out, (nout + 1) * sizeof *out);
          out[nout++] = *r;
          continue;
        }
      for (uint64_t d = 0; d < r->len; d += chunk)
        {
          uint64_t len = r->len - d < chunk ? r->len - d : chunk;
          copy_running(q->pid, mem, r->vaddr + d, len, buf, r->noread, got);
          for (uint64_t k = 0; k < len / PAGE; k++)
            {
              struct prun *l = nout ? &out[nout - 1] : NULL;
              uint64_t a = r->vaddr + d + k * PAGE;
              if (!got[k])
                continue;
              if (img_out_write(o, buf + k * PAGE, PAGE, err) < 0)
                {
                  free(out);
                  return -1;
                }
              sums_add(sums, buf + k * PAGE, o->size);
              c->pages_bytes += PAGE;
              if (l && !l->from && l->vaddr + l->len == a && l->off + l->len == o->size - PAGE)
                l->len += PAGE;
              else
                {
                  out = xrealloc(out, (nout + 1) * sizeof *out);
                  out[nout++] = (struct prun){ a, PAGE, o->size - PAGE, 0, false, false };
                }
            }
        }
    }
  free(q->runs);
  q->runs = out, q->nr = nout;
  return 0;
}

static void
put_pre_vmas(const struct pre_proc *q, yajl_gen g)
{
  jput_key(g, "vmas");
  yajl_gen_array_open(g);
  for (size_t k = 0; k < q->nv; k++)
    {
      yajl_gen_map_open(g);
      jput_u64(g, "start", q->v[k].start);
      jput_u64(g, "end", q->v[k].end);
      jput_str(g, "kind", q->v[k].kind);
      if (q->v[k].path)
        {
          jput_str(g, "path", q->v[k].path);
          jput_u64(g, "pgoff", q->v[k].pgoff);
        }
      yajl_gen_map_close(g);
    }
  yajl_gen_array_close(g);
}

int
predump_finish(struct dctx *c, crest_error_t *err)
{
  struct predump *pre = c->pre;
  yajl_gen g = yajl_gen_alloc(NULL);
  uint64_t rst = 0;
  int rc = -1;

  /* Not indented, as the dump's tree.json (dump.c: write_tree). */
  yajl_gen_map_open(g);
  jput_int(g, "root", c->p[0].ipid);
  for (size_t i = 0; i < pre->np; i++)
    if (pre->p[i].pid == c->p[0].pid)
      rst = pre->p[i].start;
  jput_u64(g, "root_start", rst);
  jput_key(g, "processes");
  yajl_gen_array_open(g);
  for (size_t i = 0; i < pre->np; i++)
    {
      struct pre_proc *q = &pre->p[i];
      cleanup_free char *name = xasprintf("pages-%d.img", q->ipid);
      struct img_out o;
      struct sums sums = { .n = 0 };
      uint64_t size;
      if (img_out_open(c->w, name, &o, err) < 0)
        goto out;
      digest_init(&sums.s, o.dg.alg);
      if (predump_copy(c, q, &o, &sums, err) < 0 || (size = o.size, img_out_close(&o, err)) < 0)
        {
          if (o.fd >= 0)
            close(o.fd), free(o.name);
          free(sums.out);
          goto out;
        }
      if (sums_write(c, &sums, name, size, err) < 0)
        {
          free(sums.out);
          goto out;
        }
      free(sums.out);
      yajl_gen_map_open(g);
      jput_int(g, "pid", q->ipid);
      jput_u64(g, "starttime", q->start);
      put_pre_vmas(q, g);
      put_runs(g, name, q->runs, q->nr);
      yajl_gen_map_close(g);
    }
  yajl_gen_array_close(g);
  yajl_gen_map_close(g);
  c->w->pre_dump = true;
  if (img_write_json(c->w, "tree.json", g, err) < 0 || chain_verified(c, err) < 0
      || img_writer_commit(c->w, NULL, CREST_IMAGE_FORMAT_CHAIN, err) < 0)
    goto out;
  rc = 0;
out:
  yajl_gen_free(g);
  return rc;
}

int
crest_engine_image_chain(const char *image_dir, char ***dirs, int *n, crest_error_t *err)
{
  cleanup_free char *path = xstrdup(image_dir);
  *dirs = NULL, *n = 0;
  for (;;)
    {
      struct img_reader *r;
      char *next;
      if (img_reader_open(path, false, false, &r, err) < 0)
        return *n ? crest_error_wrap(err, "parent image") : -1;
      next = r->parent_path ? chain_path(r->dir, r->parent_path) : NULL;
      img_reader_free(r);
      if (!next)
        return 0;
      if (*n == CHAIN_MAX)
        {
          free(next);
          return crest_error_make(err, ELOOP, "image %s: more than %d parent images", image_dir,
                                  CHAIN_MAX);
        }
      *dirs = xrealloc(*dirs, (*n + 1) * sizeof **dirs);
      (*dirs)[(*n)++] = next;
      free(path);
      path = xstrdup(next);
    }
}

/* The blocks of page file F (of image R, whose sums file it has) that
   process P's runs from that image read: each hashed once (DONE), against
   SUMS. */
static int
check_blocks(const struct img_reader *r, const struct img_file *f, const uint8_t *sums,
             const struct rproc *p, int from, uint8_t *buf, bool *done, crest_error_t *err)
{
  for (size_t i = 0; i < p->nruns; i++)
    {
      const struct rrun *run = &p->runs[i];
      if (run->from != from)
        continue;
      for (uint64_t b = run->off / SUM_BLOCK; b <= (run->off + run->len - 1) / SUM_BLOCK; b++)
        {
          uint64_t len = f->size - b * SUM_BLOCK < SUM_BLOCK ? f->size - b * SUM_BLOCK : SUM_BLOCK;
          size_t dlen = digest_size(f->alg);
          uint8_t d[32];
          if (done[b])
            continue;
          if (pread(f->fd, buf, len, (off_t)(b * SUM_BLOCK)) != (ssize_t)len)
            return crest_error_errno(err, "image %s: file %s: read", r->dir, f->name);
          digest_of(f->alg, buf, len, d);
          if (memcmp(d, sums + dlen * b, dlen) != 0)
            return crest_error_make(err, EINVAL,
                                    "image %s: file %s: block %" PRIu64
                                    ": checksum mismatch (corrupted image)",
                                    r->dir, f->name, b);
          done[b] = true;
        }
    }
  return 0;
}

int
chain_check_reads(const struct rctx *c, crest_error_t *err)
{
  cleanup_free uint8_t *buf = NULL;
  for (int k = 1; k <= c->nchain; k++)
    for (size_t i = 0; i < c->np; i++)
      {
        const struct rproc *p = &c->p[i];
        struct img_reader *r = c->chain[k - 1];
        cleanup_free char *name = NULL, *sname = NULL, *sums = NULL;
        cleanup_free bool *done = NULL;
        const struct img_file *f;
        size_t nblocks, dlen, len = 0;
        if (p->zombie || !p->chain_size[k])
          continue;
        name = xasprintf("pages-%d.img", p->pid);
        f = img_reader_find(r, name);
        if (!f || !f->blocks)
          continue;
        nblocks = (f->size + SUM_BLOCK - 1) / SUM_BLOCK;
        dlen = digest_size(f->alg);
        sname = img_sums_name(name);
        if (img_reader_read(r, sname, nblocks * dlen, &sums, &len, err) < 0)
          return crest_error_wrap(err, "parent image");
        if (len != nblocks * dlen)
          return crest_error_make(err, EINVAL,
                                  "image %s: file %s: %zu bytes, %zu blocks of %s need %zu", r->dir,
                                  sname, len, nblocks, name, nblocks * dlen);
        if (!buf)
          buf = xmalloc(SUM_BLOCK);
        done = xzalloc(nblocks + 1);
        if (check_blocks(r, f, (const uint8_t *)sums, p, k, buf, done, err) < 0)
          return crest_error_wrap(err, "parent image");
      }
  return 0;
}
