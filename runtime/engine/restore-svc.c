/* crest: the restore's service descriptors. Before any task exists, crest
 * opens what the tasks will need (page files, executables, mapped files,
 * the terminal, pipes, the tree's files, ns_last_pid) and moves each above
 * every descriptor of the tree, where every task inherits it. */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include "engine.h"
#include "engine-int.h"
#include "elfid.h"
#include "image.h"
#include "image-check.h"
#include "util.h"

#include "log.h"
#include "restore-int.h"

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
  const char *path; /* its key: the name it is mapped by (a removed one, or path) */
  int kind;         /* 0 executable, 1 mapped read-only, 2 mapped shared and writable */
  int fd;
  uint64_t size;
  char build_id[129]; /* its GNU build ID, an ELF file ("" none) */
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

/* PATH opened as a mapped file (MODE) through REMOVED, a name in its
   directory it was mapped by and that was removed since: linked for the
   open and removed again, so that the mapping shows "REMOVED (deleted)"
   as the original did. Where that name is taken again, or the link is not
   allowed, through PATH (the mapping then shows PATH). */
static int
open_removed(const char *path, const char *removed, int mode, crest_error_t *err)
{
  int fd;
  if (link(path, removed) < 0)
    {
      crest_debug("restore: mapped file %s: link it to %s, the name it was mapped by: %s", path,
                  removed, strerror(errno));
      return img_open_typed(path, mode, S_IFREG, "mapped file", err);
    }
  fd = img_open_typed(removed, mode, S_IFREG, "mapped file", err);
  unlink(removed);
  return fd;
}

/* The service descriptor of PATH opened as KIND (through REMOVED, the
   name it was mapped by, where not NULL), opened on first use; a mapped
   file's size is checked against SIZE at every use. */
static int
svc_open_path(struct rctx *c, struct svc_files *sf, const char *path, const char *removed, int kind,
              uint64_t size, const char *build_id, pid_t pid, crest_error_t *err)
{
  struct svc_file *e = svc_slot(sf, removed ? removed : path, kind);
  if (!e->path)
    {
      struct stat st;
      int fd = removed ? open_removed(path, removed, kind == 2 ? O_RDWR : O_RDONLY, err)
                       : img_open_typed(path, kind == 2 ? O_RDWR : O_RDONLY, S_IFREG,
                                        kind ? "mapped file" : "executable", err);
      if (fd < 0)
        return crest_error_wrap(err, "process %d", pid);
      if (fstat(fd, &st) < 0)
        {
          close(fd);
          return crest_error_errno(err, "restore: process %d: stat %s", pid, path);
        }
      if (kind && elf_build_id(fd, e->build_id) <= 0)
        e->build_id[0] = 0;
      if ((e->fd = svc_place(c, fd, err)) < 0)
        return -1;
      e->path = removed ? removed : path, e->kind = kind, e->size = (uint64_t)st.st_size;
      sf->n++;
    }
  if (kind && e->size != size)
    return crest_error_make(err, ESTALE,
                            "restore: process %d: mapped file %s changed size since the checkpoint",
                            pid, path);
  /* Same size, another build: a program or library rebuilt or upgraded in
     place, whose pages the restore would mix with the checkpointed ones. */
  if (kind && build_id && strcmp(e->build_id, build_id) != 0)
    return crest_error_make(err, ESTALE,
                            "restore: process %d: mapped file %s is not the checkpointed one (its "
                            "ELF build ID is %s, was %s)",
                            pid, path, *e->build_id ? e->build_id : "none", build_id);
  return e->fd;
}

static int
open_proc_files(struct rctx *c, struct rproc *p, struct svc_files *sf, crest_error_t *err)
{
  uint64_t size;
  int fd = img_reader_open_file(c->img, p->pages_file, &size, err);
  if (fd < 0 || (p->pages_svc = svc_place(c, fd, err)) < 0 || open_chain_pages(c, p, err) < 0)
    return -1;
  if ((p->exe_svc = svc_open_path(c, sf, p->exe, NULL, 0, 0, NULL, p->pid, err)) < 0)
    return -1;
  for (size_t k = 0; k < p->nvmas; k++)
    {
      struct rvma *m = &p->vmas[k];
      if (!m->path)
        continue;
      if (m->data)
        {
          if ((m->svc = memfile_svc(c, m->data, m->path, err)) < 0
              || (m->shared && (m->madv & VMF_SHAREDRO)
                  && (m->svc = memfile_svc_ro(c, m->svc, err)) < 0))
            return crest_error_wrap(err, "restore: process %d: mapping of %s", p->pid, m->path);
          continue;
        }
      m->svc = svc_open_path(
          c, sf, m->path, m->removed,
          m->shared && ((m->prot & PROT_WRITE) || (m->madv & VMF_SHAREDWRITE)) ? 2 : 1,
          m->file_size, m->build_id, p->pid, err);
      if (m->svc < 0)
        return -1;
    }
  return 0;
}

int
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
  /* ns_last_pid first: unix sockets are made by processes of given PIDs
     (sk-unix.c, run_as_pid). */
  if (c->use_nslp)
    {
      int fd = open("/proc/sys/kernel/ns_last_pid", O_RDWR | O_CLOEXEC);
      if (fd < 0)
        return crest_error_errno(err, "restore: open /proc/sys/kernel/ns_last_pid");
      if ((c->nslp_fd = svc_place(c, fd, err)) < 0)
        return -1;
    }
  if (tty_open(c, err) < 0 || pipes_open(c, err) < 0 || files_open(c, err) < 0)
    return -1;
  for (size_t i = 0; i < c->np && rc == 0; i++)
    if (!c->p[i].zombie)
      rc = open_proc_files(c, &c->p[i], &sf, err);
  free(sf.t);
  if (rc < 0 || files_finish(c, err) < 0)
    return -1;
  return 0;
}
