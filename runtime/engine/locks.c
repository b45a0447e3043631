/* crest: file locks (docs/engine.md, "Open file description"), as the
 * "lock:" lines of /proc/PID/fdinfo/N show them. flock() and open file
 * description locks belong to the open file description: crest takes them
 * again on its own copy of it before the tree inherits it. POSIX record
 * locks belong to the process: its restorer blob takes them, after it has
 * closed crest's service descriptors (closing any descriptor of a file
 * drops the process's POSIX locks on it). Leases and mandatory locks are
 * refused. */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include "engine.h"
#include "engine-int.h"
#include "image.h"
#include "util.h"

static const char *kinds[] = { "", "POSIX", "FLOCK", "OFDLCK" };

/* One "lock:" line: "lock:\tN: KIND MODE RW PID MAJ:MIN:INO START END". */
static int
parse_line(const char *line, struct lock_rec *l, const char **why)
{
  char kind[16], mode[16], rw[16], end[32];
  long long start, pid;
  int n;
  *why = NULL;
  if (sscanf(line, "lock:\t%*d: %15s %15s %15s %lld %*s %lld %31s%n", kind, mode, rw, &pid, &start,
             end, &n)
      != 6)
    {
      *why = strstr(line, "->") ? NULL : "a lock line crest cannot read";
      return 0; /* "->": a task waiting for the lock, not a lock */
    }
  if (strcmp(kind, "LEASE") == 0 || strcmp(kind, "DELEG") == 0)
    return *why = "a lease (F_SETLEASE)", 0;
  if (strcmp(mode, "ADVISORY") != 0)
    return *why = "a mandatory or breaking lock", 0;
  l->kind = 0;
  for (int k = 1; k < 4; k++)
    if (strcmp(kind, kinds[k]) == 0)
      l->kind = k;
  if (!l->kind || (strcmp(rw, "READ") && strcmp(rw, "WRITE")))
    return *why = "a lock of a kind crest does not know", 0;
  l->write = strcmp(rw, "WRITE") == 0;
  l->start = start;
  l->len = strcmp(end, "EOF") == 0 ? 0 : strtoll(end, NULL, 10) - start + 1;
  l->owner = l->kind == LOCK_KIND_FLOCK && pid > 0 ? pid : 0;
  return 1;
}

int
locks_read(pid_t pid, int fd, const char *info, const char *link, struct lock_set *out,
           crest_error_t *err)
{
  const char *s = info;
  memset(out, 0, sizeof *out);
  while ((s = strstr(s, "lock:")))
    {
      char line[256];
      const char *why;
      struct lock_rec l;
      snprintf(line, sizeof line, "%.*s", (int)strcspn(s, "\n"), s);
      s += 5;
      if (!parse_line(line, &l, &why))
        {
          if (!why)
            continue;
          return crest_error_make(err, ENOTSUP,
                                  "task %d: fd %d (%s): holds %s (%s), which crest does not "
                                  "restore: cannot checkpoint it",
                                  pid, fd, link, why, line);
        }
      if (out->n == LOCK_MAX)
        return crest_error_make(err, ENOTSUP,
                                "task %d: fd %d (%s): more than %d locks: cannot checkpoint it",
                                pid, fd, link, LOCK_MAX);
      out->l[out->n++] = l;
    }
  return 0;
}

bool
locks_put(yajl_gen g, const struct lock_set *s, unsigned kinds_mask)
{
  bool any = false;
  for (size_t i = 0; i < s->n; i++)
    any |= (kinds_mask >> s->l[i].kind) & 1;
  if (!any)
    return false;
  jput_key(g, "locks");
  yajl_gen_array_open(g);
  for (size_t i = 0; i < s->n; i++)
    if ((kinds_mask >> s->l[i].kind) & 1)
      {
        yajl_gen_array_open(g);
        yajl_gen_integer(g, s->l[i].kind);
        yajl_gen_integer(g, s->l[i].write);
        yajl_gen_integer(g, s->l[i].start);
        yajl_gen_integer(g, s->l[i].len);
        if (s->l[i].owner)
          yajl_gen_integer(g, s->l[i].owner);
        yajl_gen_array_close(g);
      }
  yajl_gen_array_close(g);
  return true;
}

int
locks_parse(yajl_val v, int format, unsigned kinds_mask, struct lock_set *out, crest_error_t *err)
{
  yajl_val a = yajl_tree_get(v, (const char *[]){ "locks", NULL }, yajl_t_any);
  memset(out, 0, sizeof *out);
  if (!a)
    return 0;
  if (format < CREST_IMAGE_FORMAT_ATTRS || !YAJL_IS_ARRAY(a) || a->u.array.len > LOCK_MAX)
    return crest_error_make(err, EINVAL, "locks: not a list of at most %d in a format 3 image",
                            LOCK_MAX);
  for (size_t i = 0; i < a->u.array.len; i++)
    {
      yajl_val e = a->u.array.values[i];
      long long x[5] = { 0 };
      size_t len = YAJL_IS_ARRAY(e) ? e->u.array.len : 0;
      if (len != 4 && (len != 5 || format < CREST_IMAGE_FORMAT_FLOCKPID))
        return crest_error_make(err, EINVAL, "locks: entry %zu malformed", i);
      for (size_t k = 0; k < len; k++)
        {
          if (!YAJL_IS_INTEGER(e->u.array.values[k]))
            return crest_error_make(err, EINVAL, "locks: entry %zu malformed", i);
          x[k] = YAJL_GET_INTEGER(e->u.array.values[k]);
        }
      if (x[0] < 1 || x[0] > 3 || !((kinds_mask >> x[0]) & 1) || (x[1] != 0 && x[1] != 1)
          || x[2] < 0 || x[3] < 0
          || (len == 5 && (x[0] != LOCK_KIND_FLOCK || x[4] < 1 || x[4] >= (1 << 22))))
        return crest_error_make(err, EINVAL, "locks: entry %zu out of range", i);
      out->l[i] = (struct lock_rec){ (int)x[0], (int)x[1], x[2], x[3], x[4] };
    }
  out->n = a->u.array.len;
  return 0;
}

void
locks_flock(const struct lock_rec *l, struct flock *fl)
{
  memset(fl, 0, sizeof *fl);
  fl->l_type = l->write ? F_WRLCK : F_RDLCK;
  fl->l_whence = SEEK_SET;
  fl->l_start = l->start;
  fl->l_len = l->len;
}

/* A flock the tree's process S->l[I].owner took is taken by that process
   (locks_take_flock): the one who takes it is who /proc shows. */
int
locks_apply_ofd(int fd, const char *path, const struct lock_set *s, crest_error_t *err)
{
  for (size_t i = 0; i < s->n; i++)
    {
      struct flock fl;
      int r;
      locks_flock(&s->l[i], &fl);
      if (s->l[i].kind == LOCK_KIND_FLOCK && s->l[i].owner)
        continue;
      if (s->l[i].kind == LOCK_KIND_FLOCK)
        r = flock(fd, (s->l[i].write ? LOCK_EX : LOCK_SH) | LOCK_NB);
      else if (s->l[i].kind == LOCK_KIND_OFD)
        r = fcntl(fd, F_OFD_SETLK, &fl);
      else
        continue;
      if (r < 0)
        return crest_error_errno(err, "restore: %s: take its %s lock again", path,
                                 kinds[s->l[i].kind]);
    }
  return 0;
}
