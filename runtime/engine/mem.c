/* crest: memory of a process (docs/engine.md, "Memory"): its mappings as
 * /proc/PID/maps shows them, their advice (vmflags.c), its pages, and the
 * layout of its mm. Objects shared between mappings: shmem.c. */
#include <config.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <unistd.h>
#include "dump-int.h"
#include "image-check.h"
#include "restore-int.h"
#include "image.h"
#include "kernel-abi.h"
#include "log.h"
#include "util.h"

/* One line of /proc/PID/maps ("START-END PERMS OFFSET MAJ:MIN INODE
   NAME", the name padded, or none) read into *M, or false. By hand: a
   tree's checkpoint reads maps several times a process, and sscanf was
   most of the time its parsing took. */
bool
maps_line(const char *l, struct maps_line *m)
{
  char *p;
  if (!isxdigit((unsigned char)l[0]))
    return false;
  m->start = strtoull(l, &p, 16);
  if (*p != '-' || !isxdigit((unsigned char)p[1]))
    return false;
  m->end = strtoull(p + 1, &p, 16);
  if (*p != ' ' || strnlen(p + 1, 5) < 5 || p[5] != ' ')
    return false;
  memcpy(m->perms, p + 1, 4);
  m->perms[4] = 0;
  p += 6;
  if (!isxdigit((unsigned char)*p))
    return false;
  m->off = strtoull(p, &p, 16);
  if (*p != ' ' || !isxdigit((unsigned char)p[1]))
    return false;
  m->maj = (unsigned)strtoul(p + 1, &p, 16);
  if (*p != ':' || !isxdigit((unsigned char)p[1]))
    return false;
  m->min = (unsigned)strtoul(p + 1, &p, 16);
  if (*p != ' ' || !isdigit((unsigned char)p[1]))
    return false;
  m->ino = strtoull(p + 1, &p, 10);
  if (*p && *p != ' ')
    return false;
  m->name = p + strspn(p, " ");
  return true;
}

/* Is the mapping START-END of PID memory of memfd_secret? Asked of its
   map_files entry's file system; where that cannot be asked, its name
   ("/secretmem (deleted)") is taken for it. */
static bool
secretmem_map(pid_t pid, uint64_t start, uint64_t end)
{
  cleanup_free char *mf = xasprintf("/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, start, end);
  struct statfs sf;
  return statfs(mf, &sf) < 0 || sf.f_type == SECRETMEM_MAGIC;
}

char *
maps_linked_name(pid_t pid, const char *shown, unsigned maj, unsigned min, uint64_t ino)
{
  size_t nl = strlen(shown), dl;
  const char *slash;
  cleanup_free char *dir = NULL;
  char *found = NULL;
  DIR *d;
  struct dirent *e;
  if (shown[0] != '/' || !shows_deleted(shown) || strncmp(shown, "/memfd:", 7) == 0
      || strcmp(shown, "/dev/zero (deleted)") == 0)
    return NULL;
  slash = memrchr(shown, '/', nl - 10);
  dl = (size_t)(slash - shown);
  dir = xasprintf("/proc/%d/root%.*s/", pid, (int)dl, shown);
  if (!(d = opendir(dir)))
    return NULL;
  while (!found && (e = readdir(d)))
    {
      struct stat st;
      if (e->d_ino == ino && fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0
          && S_ISREG(st.st_mode) && st.st_ino == ino && major(st.st_dev) == maj
          && minor(st.st_dev) == min)
        found = xasprintf("%.*s/%s", (int)dl, shown, e->d_name);
    }
  closedir(d);
  return found;
}

int
parse_maps(pid_t pid, struct vma **out, size_t *n, crest_error_t *err)
{
  cleanup_free char *maps = NULL;
  char *save = NULL;
  struct vma *v = NULL;
  size_t nv = 0;

  if (read_proc(pid, "maps", &maps, err) < 0)
    return -1;
  for (char *l = strtok_r(maps, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
    {
      struct maps_line ml;
      struct vma x;
      memset(&x, 0, sizeof x);
      if (!maps_line(l, &ml))
        continue;
      x.start = ml.start, x.end = ml.end, x.pgoff = ml.off / PAGE;
      x.prot = (ml.perms[0] == 'r' ? PROT_READ : 0) | (ml.perms[1] == 'w' ? PROT_WRITE : 0)
               | (ml.perms[2] == 'x' ? PROT_EXEC : 0);
      x.shared = ml.perms[3] == 's';
      x.ino = ml.ino;
      x.dev_major = ml.maj, x.dev_minor = ml.min;
      const char *name = ml.name;
      if (*name == 0 || strncmp(name, "[anon:", 6) == 0)
        strcpy(x.kind, "anon");
      else if (strcmp(name, "[heap]") == 0)
        strcpy(x.kind, "heap");
      else if (strcmp(name, "[stack]") == 0)
        strcpy(x.kind, "stack");
      else if (strcmp(name, "[vdso]") == 0)
        strcpy(x.kind, "vdso");
      else if (strcmp(name, "[vvar]") == 0)
        strcpy(x.kind, "vvar");
      else if (strcmp(name, "[vvar_vclock]") == 0)
        strcpy(x.kind, "vvar_vclock");
      else if (strcmp(name, "[vsyscall]") == 0)
        continue;
      else if (name[0] == '/')
        {
          size_t nl = strlen(name);
          /* A SysV segment (ipc.c): "sysv", the shmid in the inode field. */
          if (strncmp(name, "/SYSV", 5) == 0)
            {
              if (ipc_sysv_map(pid, ml.start, ml.end, name, ml.ino, err) < 0)
                {
                  free_vmas(v, nv);
                  return -1;
                }
              strcpy(x.kind, "sysv");
            }
          /* memfd_secret's memory: no process but its own may read it
             (its pages are out of the kernel's direct map), so its
             contents cannot be saved. */
          else if (strcmp(name, "/secretmem (deleted)") == 0
                   && secretmem_map(pid, ml.start, ml.end))
            {
              free_vmas(v, nv);
              return crest_error_make(err, ENOTSUP,
                                      "task %d: mapping %" PRIx64 "-%" PRIx64 ": memory of "
                                      "memfd_secret, which no other process may read, crest "
                                      "included: cannot checkpoint it",
                                      pid, ml.start, ml.end);
            }
          /* A file removed from the name shown but linked under another
             in the same directory: mapped again through that name. */
          else if ((x.path = maps_linked_name(pid, name, ml.maj, ml.min, ml.ino)))
            {
              strcpy(x.kind, "file");
              x.removed = xasprintf("%.*s", (int)(nl - 10), name);
            }
          /* A memfd, shared anonymous memory or a deleted file: no path to
             open again, its contents are saved through map_files. */
          else if (shows_deleted(name) || strncmp(name, "/memfd:", 7) == 0)
            strcpy(x.kind, "memfile");
          else
            strcpy(x.kind, "file");
          if (strcmp(x.kind, "sysv") != 0 && !x.path)
            x.path = xstrdup(name);
        }
      else if (strcmp(name, "anon_inode:[io_uring]") == 0)
        {
          /* io_uring's rings, mapped where the descriptor may be gone. */
          free_vmas(v, nv);
          return crest_error_make(err, ENOTSUP,
                                  "task %d: mapping %" PRIx64 "-%" PRIx64 ": the rings of an "
                                  "io_uring instance, which crest does not restore",
                                  pid, x.start, x.end);
        }
      else
        {
          free_vmas(v, nv);
          return crest_error_make(
              err, ENOTSUP, "task %d: mapping %" PRIx64 "-%" PRIx64 " of type %s is not supported",
              pid, x.start, x.end, name);
        }
      if (x.shared && strcmp(x.kind, "file") != 0 && strcmp(x.kind, "memfile") != 0
          && strcmp(x.kind, "sysv") != 0)
        {
          free(x.path);
          free_vmas(v, nv);
          return crest_error_make(err, ENOTSUP,
                                  "task %d: shared anonymous mapping %" PRIx64 "-%" PRIx64
                                  " is not supported",
                                  pid, x.start, x.end);
        }
      v = xrealloc(v, (nv + 1) * sizeof *v);
      v[nv++] = x;
    }
  *out = v;
  *n = nv;
  return 0;
}

void
free_vmas(struct vma *v, size_t n)
{
  for (size_t i = 0; i < n; i++)
    free(v[i].path), free(v[i].removed);
  free(v);
}

const struct prun *
prun_find(const struct prun *runs, size_t n, uint64_t addr)
{
  size_t lo = 0, hi = n;
  while (lo < hi)
    {
      size_t mid = lo + (hi - lo) / 2;
      const struct prun *r = &runs[mid];
      if (addr < r->vaddr)
        hi = mid;
      else if (addr >= r->vaddr + r->len)
        lo = mid + 1;
      else
        return r;
    }
  return NULL;
}

/* The record of a process's page file NAME and its RUNS. */
void
put_runs(yajl_gen g, const char *name, const struct prun *runs, size_t nruns)
{
  jput_str(g, "pages_file", name);
  jput_key(g, "pages");
  yajl_gen_array_open(g);
  for (size_t i = 0; i < nruns; i++)
    {
      yajl_gen_map_open(g);
      jput_u64(g, "vaddr", runs[i].vaddr);
      jput_u64(g, "len", runs[i].len);
      jput_u64(g, "off", runs[i].off);
      if (runs[i].from)
        jput_int(g, "from", runs[i].from);
      yajl_gen_map_close(g);
    }
  yajl_gen_array_close(g);
}

/* Add LEN bytes at ADDR to RUNS: from image FROM at OFF (FROM 0: this
   image's page file, OFF its running size). */
static void
add_run(struct prun **runs, size_t *n, uint64_t addr, uint64_t len, int from, uint64_t off,
        bool noread, bool zcand)
{
  struct prun *l = *n ? &(*runs)[*n - 1] : NULL;
  if (l && !zcand && !l->zcand && l->vaddr + l->len == addr && l->from == from
      && l->off + l->len == off && l->noread == noread)
    {
      l->len += len;
      return;
    }
  *runs = xrealloc(*runs, (*n + 1) * sizeof **runs);
  (*runs)[(*n)++] = (struct prun){ addr, len, off, from, noread, zcand };
}

/* Entries ENT of the NPAGES pages from START: those the checkpoint's own
   injected calls made present (struct dthread: fresh_mask) read as absent
   again (in the task's own dump, and in its side of a child's comparison,
   mem-cow.c). A thread's window is 16 pages: most mappings meet none. */
void
unfresh(const struct dproc *p, uint64_t start, uint64_t npages, uint64_t *ent)
{
  uint64_t end = start + npages * PAGE;
  for (size_t t = 0; t < p->nth; t++)
    {
      uint64_t mask = p->th[t].fresh_mask, lo = p->th[t].fresh_lo;
      if (!mask || lo >= end || lo + 64 * PAGE <= start)
        continue;
      for (; mask; mask &= mask - 1)
        {
          uint64_t a = lo + (uint64_t)__builtin_ctzll(mask) * PAGE;
          if (a >= start && a < end)
            ent[(a - start) / PAGE] = 0;
        }
    }
}

int
pagemap_read(int fd, pid_t pid, uint64_t start, uint64_t npages, uint64_t *ent, crest_error_t *err)
{
  uint64_t done = 0;
  while (done < npages * 8)
    {
      ssize_t n
          = pread(fd, (char *)ent + done, npages * 8 - done, (off_t)(start / PAGE * 8 + done));
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        return crest_error_errno(err, "task %d: read pagemap of %" PRIx64 "-%" PRIx64, pid, start,
                                 start + npages * PAGE);
      if (n == 0)
        return crest_error_make(err, EIO,
                                "task %d: read pagemap of %" PRIx64 "-%" PRIx64
                                ": it ended %" PRIu64 " entries early",
                                pid, start, start + npages * PAGE, npages - done / 8);
      done += (uint64_t)n;
    }
  return 0;
}

/* The pages of a window of mapping M (WN entries ENT from WS) the image
   holds, added to *RUNS; *OFF: the bytes of this image's own so far. */
static void
plan_window(const struct vma *m, uint64_t ws, const uint64_t *ent, uint64_t wn, bool file,
            const struct chain_proc *cp, struct prun **runs, size_t *nruns, uint64_t *off)
{
  for (uint64_t k = 0; k < wn; k++)
    {
      uint64_t e = ent[k], addr = ws + k * PAGE, poff;
      int from;
      if (!(((e >> 63) & 1 && (!file || !((e >> 61) & 1))) || ((e >> 62) & 1)))
        continue;
      if (cp && chain_take(cp, m, addr, e, &from, &poff))
        add_run(runs, nruns, addr, PAGE, from, poff, false, false);
      else
        {
          /* Present, not swapped, not exclusively mapped (bit 56), in a
             private anonymous mapping: maybe the zero page (a page only
             read; the huge zero page shows as a file's, bit 61), else
             shared with a process the comparison with the parent did not
             cover. */
          bool z = !file && (m->prot & PROT_READ) && ((e >> 62) & 3) == 2 && !((e >> 56) & 1);
          add_run(runs, nruns, addr, PAGE, 0, *off, !(m->prot & PROT_READ), z);
          *off += PAGE;
        }
    }
}

/* Which pages of process P (mappings V) the image holds, and where
   from: present or swapped; in a file mapping only the private
   (copied-on-write) pages, the rest comes from the file; with a parent
   image (CP), a page the parent holds and that was not written since
   (chain_take) is taken from it. *OWN: the bytes of this image's own. */
int
mem_plan(const struct dproc *p, const struct vma *v, size_t nv, struct cow_dump *cow,
         const struct chain_proc *cp, struct prun **out, size_t *nout, uint64_t *own,
         crest_error_t *err)
{
  pid_t pid = p->pid;
  cleanup_free char *pmpath = xasprintf("/proc/%d/pagemap", pid);
  cleanup_close int pm = open(pmpath, O_RDONLY | O_CLOEXEC);
  cleanup_free uint64_t *ent = NULL;
  struct prun *runs = NULL;
  size_t nruns = 0;
  uint64_t off = 0;

  if (pm < 0)
    return crest_error_errno(err, "task %d: open pagemap", pid);
  for (size_t i = 0; i < nv; i++)
    {
      const struct vma *m = &v[i];
      uint64_t npages = (m->end - m->start) / PAGE;
      bool file = strcmp(m->kind, "file") == 0 || strcmp(m->kind, "memfile") == 0;
      if (m->shared || m->no_pages || strcmp(m->kind, "vdso") == 0
          || strncmp(m->kind, "vvar", 4) == 0)
        continue;
      for (uint64_t w = 0; w < npages; w += PAGEMAP_WINDOW)
        {
          uint64_t wn = npages - w < PAGEMAP_WINDOW ? npages - w : PAGEMAP_WINDOW;
          uint64_t ws = m->start + w * PAGE;
          if (!ent)
            ent = xmalloc(PAGEMAP_WINDOW * 8);
          if (pagemap_read(pm, pid, ws, wn, ent, err) < 0)
            {
              free(runs);
              return -1;
            }
          unfresh(p, ws, wn, ent);
          if (cow_dump_filter(cow, m, ws, ent, wn, err) < 0)
            {
              free(runs);
              return -1;
            }
          plan_window(m, ws, ent, wn, file, cp, &runs, &nruns, &off);
        }
    }
  *out = runs, *nout = nruns, *own = off;
  return 0;
}

bool
page_zero(const char *b)
{
  static const char zero[PAGE];
  return memcmp(b, zero, PAGE) == 0;
}

/* The NB pieces of BUF just read (RIOV; RIX their runs, FIRST whether a
   piece starts its run) made into what the page file gets, in place: a
   candidate zero page (struct prun: zcand) that reads as zeros is left
   out (its run's length becomes 0), and each run's offset is where its
   first byte lands, WROFF being the file's size before. The bytes kept. */
static uint64_t
batch_compact(char *buf, const struct iovec *riov, const size_t *rix, const bool *first, size_t nb,
              struct prun *runs, uint64_t wroff)
{
  uint64_t pos = 0, dst = 0;
  for (size_t k = 0; k < nb; k++)
    {
      struct prun *r = &runs[rix[k]];
      uint64_t len = riov[k].iov_len;
      if (r->zcand && page_zero(buf + pos))
        r->len = 0;
      else
        {
          if (first[k])
            r->off = wroff + dst;
          if (dst != pos)
            memmove(buf + dst, buf + pos, len);
          dst += len;
        }
      pos += len;
    }
  return dst;
}

/* RUNS (N) once written: the zero pages left out have no run; the
   candidates kept (each a run of its own while it was one) are joined to
   their neighbours again. The runs left. */
static size_t
runs_settle(struct prun *runs, size_t nruns, pid_t pid)
{
  size_t n = 0, left = 0;
  for (size_t i = 0; i < nruns; i++)
    {
      struct prun *l = n ? &runs[n - 1] : NULL, *r = &runs[i];
      if (!r->len)
        {
          left++;
          continue;
        }
      if (l && !l->from && !r->from && l->noread == r->noread && l->vaddr + l->len == r->vaddr
          && l->off + l->len == r->off)
        l->len += r->len;
      else
        runs[n++] = *r;
    }
  if (left)
    crest_debug("task %d: %zu pages read as zeros and not its own (the zero page) left out", pid,
                left);
  return n;
}

static int
dump_memory(struct dctx *c, struct dproc *p, struct vma *v, size_t nv, struct cow_dump *cow,
            yajl_gen g, crest_error_t *err)
{
  cleanup_free char *name = xasprintf("pages-%d.img", p->ipid);
  cleanup_free char *mempath = xasprintf("/proc/%d/mem", p->pid);
  cleanup_close int mem = -1;
  cleanup_free char *bufs = NULL;
  char *buf;
  struct prun *runs = NULL;
  size_t nruns = 0, nbatch = 0;
  struct iovec riov[IOV_MAX];
  size_t rix[IOV_MAX];
  bool first[IOV_MAX];
  uint64_t own = 0, bfill = 0, wroff = 0, kept;
  struct img_out o;
  int rc = -1;

  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  if (mem_plan(p, v, nv, cow, chain_proc_of(c, p), &runs, &nruns, &own, err) < 0)
    return -1;
  c->ms_plan += ms_since(&ts);
  if (img_out_open(c->w, name, &o, err) < 0)
    {
      free(runs);
      return -1;
    }
  /* Without the thread (one buffer's worth, where starting it costs more
     than it saves; or it could not start) the file is written and hashed
     in place. */
  if (own > BATCH && img_out_async(&o, err) < 0)
    crest_error_release(err);
  /* Two buffers in turn: one is written by the image's thread
     (img_out_async) while the next is read out of the task. */
  bufs = xmalloc(2 * BATCH);
  buf = bufs;

  /* Flush the batch: one process_vm_readv for up to IOV_MAX runs. */
#define FLUSH()                                                                                    \
  do                                                                                               \
    {                                                                                              \
      if (bfill)                                                                                   \
        {                                                                                          \
          struct iovec l = { buf, bfill };                                                         \
          ssize_t got;                                                                             \
          clock_gettime(CLOCK_MONOTONIC, &ts);                                                     \
          got = process_vm_readv(p->pid, &l, 1, riov, nbatch, 0);                                  \
          c->ms_readv += ms_since(&ts);                                                            \
          c->readv_calls++;                                                                        \
          if (got != (ssize_t)bfill)                                                               \
            {                                                                                      \
              crest_error_sys(err, got < 0 ? errno : EIO,                                          \
                              "task %d: copy memory (process_vm_readv)", p->pid);                  \
              goto out;                                                                            \
            }                                                                                      \
          kept = batch_compact(buf, riov, rix, first, nbatch, runs, wroff);                        \
          wroff += kept;                                                                           \
          clock_gettime(CLOCK_MONOTONIC, &ts);                                                     \
          if (img_out_write(&o, buf, kept, err) < 0)                                               \
            goto out;                                                                              \
          c->ms_out += ms_since(&ts);                                                              \
          buf = buf == bufs ? bufs + BATCH : bufs;                                                 \
          bfill = 0, nbatch = 0;                                                                   \
        }                                                                                          \
    }                                                                                              \
  while (0)

  for (size_t i = 0; i < nruns; i++)
    {
      uint64_t addr = runs[i].vaddr, len = runs[i].len;
      if (runs[i].from)
        continue;
      c->pages_bytes += len;
      p->mem_bytes += len;
      if (runs[i].noread)
        {
          FLUSH();
          runs[i].off = wroff;
          wroff += len;
          /* process_vm_readv honours protections; /proc/PID/mem does not. */
          if (mem < 0 && (mem = open(mempath, O_RDONLY | O_CLOEXEC)) < 0)
            {
              crest_error_errno(err, "task %d: open mem", p->pid);
              goto out;
            }
          for (uint64_t done = 0; done < len;)
            {
              uint64_t chunk = len - done < BATCH ? len - done : BATCH;
              if (pread(mem, buf, chunk, addr + done) != (ssize_t)chunk)
                {
                  crest_error_errno(err, "task %d: read memory at %#" PRIx64, p->pid, addr + done);
                  goto out;
                }
              if (img_out_write(&o, buf, chunk, err) < 0)
                goto out;
              buf = buf == bufs ? bufs + BATCH : bufs;
              done += chunk;
            }
          continue;
        }
      while (len)
        {
          uint64_t room = BATCH - bfill, chunk = len < room ? len : room;
          riov[nbatch].iov_base = (void *)addr;
          riov[nbatch].iov_len = chunk;
          rix[nbatch] = i, first[nbatch] = addr == runs[i].vaddr;
          nbatch++, bfill += chunk, addr += chunk, len -= chunk;
          if (bfill == BATCH || nbatch == IOV_MAX)
            {
              FLUSH();
              maybe_progress(c, "copying memory");
              if (interrupted(err) < 0)
                goto out;
            }
        }
    }
  FLUSH();
#undef FLUSH
  clock_gettime(CLOCK_MONOTONIC, &ts);
  if (img_out_close(&o, err) < 0)
    goto out;
  c->ms_close += ms_since(&ts);
  nruns = runs_settle(runs, nruns, p->pid);
  put_runs(g, name, runs, nruns);
  cow_dump_put(c, cow, g);
  /* Kept for the children's comparison (mem-cow.c: parent_page). */
  free(p->pages_name);
  free(p->runs);
  p->pages_name = xstrdup(name);
  p->runs = runs, p->nruns = nruns;
  runs = NULL;
  rc = 0;
out:
  if (rc < 0)
    img_out_abort(&o);
  free(runs);
  return rc;
}

/* A mapping with no path to open again (memfd, shared anonymous memory, a
   deleted file): its object is saved once (shmem.c); restore maps a memfd
   holding the same bytes, shared as the object was. */
static int
dump_memfile(struct dctx *c, struct dproc *p, struct vma *m, yajl_gen g, crest_error_t *err)
{
  const struct shm_obj *o;
  if (shm_save(&c->shm, c->w, p->pid, m->start, m->end, &o, err) < 0)
    return -1;
  jput_str(g, "path", m->path);
  jput_u64(g, "pgoff", m->pgoff);
  jput_u64(g, "file_size", o->size);
  jput_str(g, "data", o->data);
  return 0;
}

/* The "mm" record: the layout prctl(PR_SET_MM_MAP) puts back. F[n] is
   field n of /proc/PID/stat. */
void
mem_put_mm(const struct dproc *p, const unsigned long long f[64], const char *auxv, size_t auxlen,
           yajl_gen g)
{
  jput_key(g, "mm");
  yajl_gen_map_open(g);
  jput_u64(g, "start_code", f[26]);
  jput_u64(g, "end_code", f[27]);
  jput_u64(g, "start_stack", f[28]);
  jput_u64(g, "start_data", f[45]);
  jput_u64(g, "end_data", f[46]);
  jput_u64(g, "start_brk", f[47]);
  jput_u64(g, "brk", p->brk);
  jput_u64(g, "arg_start", f[48]);
  jput_u64(g, "arg_end", f[49]);
  jput_u64(g, "env_start", f[50]);
  jput_u64(g, "env_end", f[51]);
  jput_hex(g, "auxv", auxv, auxlen);
  yajl_gen_map_close(g);
}

/* The "vmas" of process P and its pages. */
/* While a task is restored, crest's own mappings and its are there at
   once: a process with nearly vm.max_map_count mappings cannot be made
   again (its restore failed in the middle, "mprotect ... Cannot allocate
   memory"). Refused before: at checkpoint, where the tree runs on, and at
   restore, before anything is made. */
#define MAP_COUNT_MARGIN 512
int
map_count_check(pid_t pid, size_t n, const char *when, crest_error_t *err)
{
  static long max = -1; /* read once: asked for every process of a tree */
  if (max < 0)
    max = read_long_file("/proc/sys/vm/max_map_count", 0);
  if (max <= 0 || (long)n + MAP_COUNT_MARGIN <= max)
    return 0;
  return crest_error_make(err, ENOTSUP,
                          "%s %d: %zu mappings, and its restore needs about %d more while "
                          "crest's own are mapped too: over vm.max_map_count (%ld) here",
                          strcmp(when, "restore") == 0 ? "restore: process" : "task", (int)pid, n,
                          MAP_COUNT_MARGIN, max);
}

int
mem_dump(struct dctx *c, struct dproc *p, yajl_gen g, crest_error_t *err)
{
  struct vma *v = NULL;
  struct vmflags_ent *vf = NULL;
  struct cow_dump *cow = NULL;
  size_t nv = 0, nvf = 0;
  int rc = -1;

  if (parse_maps(p->pid, &v, &nv, err) < 0 || vmflags_load(p->pid, &vf, &nvf, err) < 0
      || map_count_check(p->pid, nv, "checkpoint", err) < 0)
    goto fail;
  jput_key(g, "vmas");
  yajl_gen_array_open(g);
  for (size_t i = 0; i < nv; i++)
    {
      /* A range reserved and never touched (an 8 TiB PROT_NONE one in
         MariaDB) is not read page by page from pagemap. */
      v[i].no_pages = vmflags_no_pages(vf, nvf, v[i].start);
      /* The kernel's own ring of an AIO context (io_setup: libaio's,
         MariaDB's native AIO without io_uring), which VmFlags "de" would
         refuse with less to say. */
      if (v[i].path && strcmp(v[i].path, "/[aio] (deleted)") == 0)
        {
          crest_error_make(err, ENOTSUP,
                           "task %d: mapping %" PRIx64 "-%" PRIx64 ": the ring of an AIO context "
                           "(io_setup, as libaio makes one), which crest does not restore: "
                           "cannot checkpoint it",
                           p->pid, v[i].start, v[i].end);
          goto fail;
        }
      yajl_gen_map_open(g);
      jput_u64(g, "start", v[i].start);
      jput_u64(g, "end", v[i].end);
      jput_int(g, "prot", v[i].prot);
      jput_bool(g, "shared", v[i].shared);
      jput_str(g, "kind", v[i].kind);
      {
        int w = vmflags_put(g, vf, nvf, p->pid, v[i].start, v[i].end, v[i].kind, err);
        if (w == 2 && c->w->format < CREST_IMAGE_FORMAT_TIMERS)
          c->w->format = CREST_IMAGE_FORMAT_TIMERS; /* format 9: mlock */
        if (w == 3 && c->w->format < CREST_IMAGE_FORMAT_NOACCT)
          c->w->format = CREST_IMAGE_FORMAT_NOACCT;
        if (w == 4 && c->w->format < CREST_IMAGE_FORMAT_SHARED_RO)
          c->w->format = CREST_IMAGE_FORMAT_SHARED_RO;
        if (put_attrs(c, w) < 0)
          goto fail;
      }
      {
        const struct mpol_rec *mp = mpol_of_vma(p, v[i].start);
        if (mp)
          {
            mpol_put(g, "mpol", mp->mode, &mp->nodes);
            if (c->w->format < CREST_IMAGE_FORMAT_AFFINITY)
              c->w->format = CREST_IMAGE_FORMAT_AFFINITY;
          }
      }
      if (strcmp(v[i].kind, "sysv") == 0)
        {
          if (ipc_put_vma(c, p->pid, &v[i], g, err) < 0)
            goto fail;
        }
      else if (v[i].path && strcmp(v[i].kind, "memfile") == 0)
        {
          if (dump_memfile(c, p, &v[i], g, err) < 0)
            goto fail;
        }
      else if (v[i].path)
        {
          struct stat st;
          if (mapped_file_stat(c, p, &v[i], &st, err) < 0)
            goto fail;
          /* An overlay file system shows the layer's device and inode in
             maps and its own in stat: a difference is only worth a note. */
          if (st.st_ino != v[i].ino || major(st.st_dev) != v[i].dev_major
              || minor(st.st_dev) != v[i].dev_minor)
            crest_debug("task %d: mapping %" PRIx64 "-%" PRIx64 ": %s is inode %u:%u/%" PRIu64
                        " in maps, %u:%u/%" PRIu64 " by its path",
                        p->pid, v[i].start, v[i].end, v[i].path, v[i].dev_major, v[i].dev_minor,
                        v[i].ino, major(st.st_dev), minor(st.st_dev), (uint64_t)st.st_ino);
          jput_str(g, "path", v[i].path);
          if (v[i].removed)
            {
              jput_str(g, "removed_name", v[i].removed);
              if (c->w->format < CREST_IMAGE_FORMAT_REMOVED_NAME)
                c->w->format = CREST_IMAGE_FORMAT_REMOVED_NAME;
            }
          jput_u64(g, "pgoff", v[i].pgoff);
          jput_u64(g, "file_size", st.st_size);
          jput_u64(g, "file_mtime", st.st_mtime);
          if (c->mf_build_id && *c->mf_build_id)
            {
              jput_str(g, "file_build_id", c->mf_build_id);
              if (c->w->format < CREST_IMAGE_FORMAT_BUILD_ID)
                c->w->format = CREST_IMAGE_FORMAT_BUILD_ID;
            }
        }
      yajl_gen_map_close(g);
    }
  yajl_gen_array_close(g);
  if ((!c->chain && cow_dump_begin(c, p, &cow, err) < 0)
      || dump_memory(c, p, v, nv, cow, g, err) < 0)
    goto fail;
  rc = 0;
  free_vmas(p->maps, p->nmaps); /* read already only if a child came first */
  p->maps = v, p->nmaps = nv, v = NULL, nv = 0;
fail:
  cow_dump_free(cow);
  free_vmas(v, nv);
  free(vf);
  return rc;
}

/* The "mm" record MM of process P. */
static bool
anonymous(const struct rvma *m)
{
  return strcmp(m->kind, "anon") == 0 || strcmp(m->kind, "heap") == 0;
}

/* Must mapping I of P be kept apart from the one below it? Two anonymous
   private mappings side by side with the same protections and flags are
   one to the kernel unless something kept them apart (an offset that does
   not follow on, after mremap moved one; anon_vmas of their own): made by
   mmap() in place, they would merge. Such a mapping is made aside, given
   an anon_vma of its own (a page written, then dropped: the kernel
   relocates the offset of a moved mapping that never had a page, 6.18
   does) and moved into place, where its offset and anon_vma keep it
   apart. Not one never writable (VMF_NOACCOUNT): no page of it can be
   written without charging it. */
bool
mem_keep_apart(const struct rproc *p, size_t i)
{
  const struct rvma *a, *m;
  if (i == 0 || i >= p->nvmas)
    return false;
  a = &p->vmas[i - 1], m = &p->vmas[i];
  return a->end == m->start && anonymous(a) && anonymous(m) && !a->shared && !m->shared && !a->path
         && !m->path && a->prot == m->prot && a->madv == m->madv && !(m->madv & VMF_NOACCOUNT);
}

/* Can P's heap be made again the way the kernel made it, by brk() from its
   start_brk? Its mappings of kind heap from start_brk, back to back,
   private, anonymous, and of nothing brk() does not make (MAP_NORESERVE,
   never writable), are *FIRST .. *END - 1, up to the first one the kernel
   kept apart from the one below it (mem_keep_apart: that one and those
   above it are made by mmap(), aside when they must stay apart); brk()
   then goes to the end of *END - 1. The kernel's brk() extends only the
   heap's own mapping, never one below start_brk: a heap made by mmap()
   next to a mapping of the same flags (a static program's bss without
   address randomisation) merges with it, where the original had two. A
   mapping of kind heap that ends at start_brk is not the heap: kernels
   before the label's fix (6.1) call the bss "[heap]" too. */
bool
mem_heap_by_brk(const struct rproc *p, size_t *first, size_t *end)
{
  uint64_t want = p->mm.start_brk;
  size_t i = 0, f;
  if (p->mm.brk <= p->mm.start_brk || (p->mm.start_brk & (PAGE - 1)))
    return false;
  while (i < p->nvmas
         && (strcmp(p->vmas[i].kind, "heap") != 0 || p->vmas[i].end <= p->mm.start_brk))
    i++;
  if (i == p->nvmas || p->vmas[i].start != want)
    return false;
  for (f = i; i < p->nvmas && strcmp(p->vmas[i].kind, "heap") == 0 && p->vmas[i].start == want
              && (i == f || !mem_keep_apart(p, i));
       i++)
    {
      const struct rvma *m = &p->vmas[i];
      if (m->shared || m->path || (m->madv & (VMF_NORESERVE | VMF_NOACCOUNT)))
        break;
      want = m->end;
    }
  if (i == f)
    return false;
  *first = f, *end = i;
  return true;
}

int
mem_parse_mm(yajl_val mm, struct rproc *p, crest_error_t *err)
{
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
  return 0;
}

int
mem_parse_vmas(struct rctx *c, yajl_val v, struct rproc *p, crest_error_t *err)
{
  yajl_val *items;
  long n;

  /* VMAs: page aligned, ordered, inside the user address space. */
  n = jget_array(v, "vmas", &items, err);
  CHECK(n > 0 && n <= 65536, "process %d: %ld mappings", p->pid, n);
  p->vmas = plan_zalloc(c, n * sizeof *p->vmas);
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
      if (has_key(items[i], "mpol"))
        {
          m->mpol_nodes = plan_zalloc(c, sizeof *m->mpol_nodes);
          if (mpol_parse(items[i], "mpol", c->img->format, &m->mpol_mode, m->mpol_nodes, err) < 0)
            return crest_error_wrap(err, "process %d: mapping %ld", p->pid, i);
        }
      if (has_key(items[i], "madv"))
        {
          int64_t madv;
          if (jget_i64(items[i], "madv", &madv, err) < 0)
            return -1;
          CHECK(c->img->format >= CREST_IMAGE_FORMAT_ATTRS && madv > 0 && madv <= VMF_ALL
                    && (!(madv & VMF_LOCKS) || c->img->format >= CREST_IMAGE_FORMAT_TIMERS)
                    && (!(madv & VMF_LOCKONFAULT) || (madv & VMF_LOCKED))
                    && (!(madv & VMF_NOACCOUNT)
                        || (c->img->format >= CREST_IMAGE_FORMAT_NOACCT && !m->shared
                            && !(madv & VMF_NORESERVE)))
                    && (!(madv & VMF_SHAREDWRITE)
                        || (c->img->format >= CREST_IMAGE_FORMAT_NOACCT && m->shared
                            && strcmp(kind, "file") == 0))
                    && (!(madv & VMF_SHAREDRO)
                        || (c->img->format >= CREST_IMAGE_FORMAT_SHARED_RO && m->shared
                            && !(m->prot & PROT_WRITE) && strcmp(kind, "memfile") == 0)),
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
          if (has_key(items[i], "removed_name"))
            {
              const char *slash;
              if (jget_str(items[i], "removed_name", &m->removed, err) < 0)
                return -1;
              slash = strrchr(m->path, '/');
              /* In the same directory as the path. */
              CHECK(c->img->format >= CREST_IMAGE_FORMAT_REMOVED_NAME && img_path_ok(m->removed)
                        && slash && strncmp(m->removed, m->path, (size_t)(slash - m->path + 1)) == 0
                        && !strchr(m->removed + (slash - m->path + 1), '/')
                        && m->removed[slash - m->path + 1],
                    "process %d: mapping %ld: bad removed_name (format %d)", p->pid, i,
                    c->img->format);
            }
          if (has_key(items[i], "file_build_id"))
            {
              if (jget_str(items[i], "file_build_id", &m->build_id, err) < 0)
                return -1;
              CHECK(c->img->format >= CREST_IMAGE_FORMAT_BUILD_ID && *m->build_id
                        && strlen(m->build_id) <= 128
                        && strspn(m->build_id, "0123456789abcdef") == strlen(m->build_id),
                    "process %d: mapping %ld: bad file_build_id (format %d)", p->pid, i,
                    c->img->format);
            }
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
          CHECK(df && memfile_size(c, m->data, df->size) == m->file_size,
                "process %d: mapping %ld: memory object %s missing or not %" PRIu64 " bytes",
                p->pid, i, m->data, m->file_size);
        }
      else if (strcmp(kind, "sysv") == 0)
        {
          if (ipc_parse_vma(c, items[i], p->pid, m, err) < 0)
            return -1;
        }
      else
        CHECK(!m->shared
                  && (strcmp(kind, "anon") == 0 || strcmp(kind, "heap") == 0
                      || strcmp(kind, "stack") == 0 || strcmp(kind, "vdso") == 0
                      || strcmp(kind, "vvar") == 0 || strcmp(kind, "vvar_vclock") == 0),
              "process %d: mapping %ld: unknown kind %s", p->pid, i, kind);
    }
  p->nvmas = n;

  return 0;
}

/* A run's "from" (format 6): the K-th parent image, whose page file of
   the same process must exist (its size in p->chain_size[K]). */
static int
run_source(struct rctx *c, yajl_val it, struct rproc *p, struct rrun *r, crest_error_t *err)
{
  int64_t from;
  cleanup_free char *name = NULL;
  const struct img_file *f;
  r->from = 0;
  if (!has_key(it, "from"))
    return 0;
  if (jget_i64(it, "from", &from, err) < 0)
    return -1;
  CHECK(c->img->format >= CREST_IMAGE_FORMAT_CHAIN && from >= 1 && from <= c->nchain,
        "process %d: a page run from parent image %lld, the image has %d (format %d)", p->pid,
        (long long)from, c->nchain, c->img->format);
  r->from = (int)from;
  name = xasprintf("pages-%d.img", p->pid);
  f = img_reader_find(c->chain[from - 1], name);
  CHECK(f, "process %d: parent image %s has no %s", p->pid, c->chain[from - 1]->dir, name);
  p->chain_size[from] = f->size;
  return 0;
}

int
mem_parse_pages(struct rctx *c, yajl_val v, struct rproc *p, crest_error_t *err)
{
  yajl_val *items;
  long n;
  uint64_t pages_size = 0;

  /* Page runs: inside private mappings, inside the page file. */
  {
    const struct img_file *pf = img_reader_find(c->img, p->pages_file);
    CHECK(pf, "process %d: page file %s is not in the manifest", p->pid, p->pages_file);
    pages_size = pf->size;
  }
  n = jget_array(v, "pages", &items, err);
  CHECK(n >= 0 && n <= (1 << 24), "process %d: %ld page runs", p->pid, n);
  p->runs = plan_zalloc(c, (n + 1) * sizeof *p->runs);
  for (long i = 0; i < n; i++)
    {
      struct rrun *r = &p->runs[i];
      uint64_t a, size;
      size_t k = 0;
      if (jget_u64(items[i], "vaddr", &r->vaddr, err) < 0
          || jget_u64(items[i], "len", &r->len, err) < 0
          || jget_u64(items[i], "off", &r->off, err) < 0 || run_source(c, items[i], p, r, err) < 0)
        return -1;
      size = r->from ? p->chain_size[r->from] : pages_size;
      CHECK(r->vaddr % PAGE == 0 && r->len % PAGE == 0 && r->off % PAGE == 0 && r->len > 0
                && r->vaddr + r->len > r->vaddr && r->vaddr + r->len <= TASK_TOP && r->off <= size
                && r->len <= size - r->off
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

  return 0;
}
