/* crest: signal-driven I/O (O_ASYNC) on an open file description: the
 * owner SIGIO goes to (a thread, a process or a process group, F_GETOWN_EX)
 * and the signal (F_GETSIG), read at checkpoint through crest's own copy of
 * the descriptor; at restore they are set on the restorer's service
 * descriptor once every task of the tree exists, before any runs
 * (docs/engine.md, "Descriptors"). nginx's master takes SIGIO on the
 * socketpairs it shares with its workers this way. */
#define _GNU_SOURCE
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "dump-int.h"
#include "image.h"
#include "restore-int.h"
#include "util.h"

static const char *
owner_kind(int type)
{
  return type == F_OWNER_TID ? "thread" : type == F_OWNER_PGRP ? "process group" : "process";
}

/* The owner's real, effective and saved UIDs (host view): "Uid:" of its
   status file. -1 when it cannot be read. */
static int
owner_uids(pid_t pid, long u[3])
{
  cleanup_free char *path = xasprintf("/proc/%d/status", (int)pid);
  cleanup_free char *text = NULL;
  size_t len;
  crest_error_t e = NULL;
  const char *s;
  if (read_file(path, &text, &len, 0, &e) < 0)
    {
      crest_error_release(&e);
      return -1;
    }
  if (!(s = strstr(text, "\nUid:")) || sscanf(s + 5, "%ld %ld %ld", &u[0], &u[1], &u[2]) != 3)
    return -1;
  return 0;
}

/* The owner as the tree sees it (its recorded PID, TID or group), and the
   host PID of one process it names; 0 when the tree has none. */
static pid_t
owner_in_tree(const struct dctx *c, int type, pid_t owner, pid_t *task)
{
  for (size_t i = 0; i < c->np; i++)
    {
      const struct dproc *p = &c->p[i];
      if (p->zombie)
        continue;
      if (type == F_OWNER_PGRP && p->pgid == owner)
        return *task = p->pid, p->ipgid;
      if (type == F_OWNER_PID && p->pid == owner)
        return *task = p->pid, p->ipid;
      for (size_t t = 0; type == F_OWNER_TID && t < p->nth; t++)
        if (p->th[t].tid == owner)
          return *task = p->pid, p->th[t].itid;
    }
  return 0;
}

/* Is the owner O_PID of TYPE gone (no process, thread or group of that
   number any more)? */
static bool
owner_gone(int type, pid_t o_pid)
{
  /* kill() finds a thread by its TID too. */
  return kill(type == F_OWNER_PGRP ? -o_pid : o_pid, 0) < 0 && errno == ESRCH;
}

int
fown_dump(struct dctx *c, pid_t pid, int fd, const char *link, int flags, struct fown *out,
          crest_error_t *err)
{
  struct f_owner_ex o;
  pid_t task = 0;
  long u[3];
  bool async = (flags & O_ASYNC) != 0;
  const char *how = async ? "O_ASYNC: SIGIO" : "its owner (F_SETOWN): SIGURG";
  cleanup_close int d = -1;
  memset(out, 0, sizeof *out);
  /* An O_PATH descriptor has no owner (fcntl answers EBADF). */
  if (flags & O_PATH)
    return 0;
  if ((d = getfd(pid, fd, err)) < 0)
    return -1;
  if (fcntl(d, F_GETOWN_EX, &o) < 0 || (out->sig = fcntl(d, F_GETSIG)) < 0)
    {
      if (!async)
        return out->sig = 0, 0;
      return crest_error_errno(err, "task %d: fd %d (%s): read its owner (F_GETOWN_EX)", pid, fd,
                               link);
    }
  /* Without O_ASYNC an owner still takes a socket's SIGURG, and both the
     owner and the signal are there for an O_ASYNC set later; a gone owner
     takes nothing, and is left out. */
  if (!async && o.pid && !owner_in_tree(c, o.type, o.pid, &task) && owner_gone(o.type, o.pid))
    o.pid = 0;
  if (!async && o.pid == 0 && out->sig == 0)
    return 0;
  out->on = true;
  out->type = o.type;
  if (o.pid == 0)
    return 0;
  if (!(out->pid = owner_in_tree(c, o.type, o.pid, &task)))
    return crest_error_make(err, ENOTSUP,
                            "task %d: fd %d (%s): %s goes to %s %d, outside the checkpointed "
                            "tree: cannot checkpoint it",
                            pid, fd, link, how, owner_kind(o.type), o.pid);
  /* The kernel keeps the credentials of whoever set the owner, for the
     permission check of each SIGIO, and does not show them: the restorer
     sets the owner with its own, which must let SIGIO through to the
     owner as the originals would have (same UID). */
  if (owner_uids(task, u) < 0
      || (u[0] != (long)geteuid() && u[2] != (long)geteuid() && u[0] != (long)getuid()
          && u[2] != (long)getuid()))
    return crest_error_make(err, ENOTSUP,
                            "task %d: fd %d (%s): %s goes to %s %d, whose UID is not the "
                            "checkpointing user's (the restored owner's credentials would not let "
                            "the signal reach it): cannot checkpoint it",
                            pid, fd, link, how, owner_kind(o.type), o.pid);
  return 0;
}

bool
fown_put(yajl_gen g, const struct fown *o)
{
  if (!o->on)
    return false;
  jput_key(g, "fown");
  yajl_gen_map_open(g);
  jput_int(g, "type", o->type);
  jput_int(g, "pid", o->pid);
  jput_int(g, "sig", o->sig);
  yajl_gen_map_close(g);
  return true;
}

int
fown_parse(yajl_val v, int format, int flags, struct fown *out, crest_error_t *err)
{
  yajl_val o = yajl_tree_get(v, (const char *[]){ "fown", NULL }, yajl_t_object);
  int64_t type, pid, sig;
  memset(out, 0, sizeof *out);
  if (!o && (flags & O_ASYNC) && format >= CREST_IMAGE_FORMAT_FOWN)
    return crest_error_make(err, EINVAL, "O_ASYNC without its \"fown\"");
  if (!o)
    return 0;
  if (format < CREST_IMAGE_FORMAT_FOWN
      || (!(flags & O_ASYNC) && format < CREST_IMAGE_FORMAT_FOWN_ANY))
    return crest_error_make(err, EINVAL, "\"fown\" in an image of format %d%s", format,
                            flags & O_ASYNC ? "" : " without O_ASYNC");
  if (jget_i64(o, "type", &type, err) < 0 || jget_i64(o, "pid", &pid, err) < 0
      || jget_i64(o, "sig", &sig, err) < 0)
    return crest_error_wrap(err, "fown");
  if ((type != F_OWNER_TID && type != F_OWNER_PID && type != F_OWNER_PGRP) || pid < 0
      || pid >= (1 << 22) || sig < 0 || sig > SIGRTMAX)
    return crest_error_make(err, EINVAL, "fown: bad type %lld, pid %lld or signal %lld",
                            (long long)type, (long long)pid, (long long)sig);
  out->on = true;
  out->type = (int)type;
  out->pid = (pid_t)pid;
  out->sig = (int)sig;
  return 0;
}

/* Every task exists and none runs: the owner, the signal, then O_ASYNC
   (which a file whose owner is set only now would otherwise not signal
   anyone with meanwhile). */
int
files_fown(struct rctx *c, crest_error_t *err)
{
  for (size_t i = 0; i < c->nf; i++)
    {
      const struct rfile *f = &c->f[i];
      struct f_owner_ex o;
      int fl;
      if (!f->fown.on || f->svc < 0)
        continue;
      o.type = f->fown.type;
      o.pid = f->fown.pid;
      if ((o.pid && fcntl(f->svc, F_SETOWN_EX, &o) < 0)
          || (f->fown.sig && fcntl(f->svc, F_SETSIG, f->fown.sig) < 0)
          || ((f->flags & O_ASYNC)
              && ((fl = fcntl(f->svc, F_GETFL)) < 0 || fcntl(f->svc, F_SETFL, fl | O_ASYNC) < 0)))
        return crest_error_errno(err, "restore: file %d (%s): its owner, %s %d", f->id, f->path,
                                 owner_kind(o.type), (int)o.pid);
    }
  return 0;
}
