/* crest: descriptor types. Every kind of open file description crest
 * checkpoints is one struct fd_ops, in a file of its own that holds both
 * directions (files-reg.c, files-memfd.c, pipes.c, tty.c, eventfd.c,
 * timerfd.c, signalfd.c, eventpoll.c, inotify.c, sk-inet.c, pidfd.c), and one row of
 * fd_types[] in files.c. files.c walks the descriptors (the kcmp sharing,
 * locks, placement) and dispatches to the type in one place on each side:
 * dump_fd (probe), files_put (write), files_parse (parse), files_open
 * (open, finish), files_task_src (install).
 *
 * How to add a type (an eventfd, say):
 *   1. eventfd.c: the functions of its struct fd_ops and
 *      `const struct fd_ops fd_eventfd_ops = { .type = "eventfd", ... }`;
 *      its own state in a record of its own, hung on dfile->priv at dump
 *      and rfile->priv at restore (malloc'd; freed with the context, and
 *      what the record points to by the type's release), not in new
 *      fields of struct dfile or struct rfile;
 *   2. its extern line below, and its row in fd_types[] (files.c): the
 *      first type whose probe claims a descriptor takes it, so a type that
 *      is a special case of another comes before it;
 *   3. eventfd.c in local.mk, its attribute table in docs/engine.md, and
 *      a new image format version (image.h) if older crest could not read
 *      the record.
 * A descriptor no probe claims is refused at checkpoint in one line. */
#ifndef CREST_FILES_H
#define CREST_FILES_H

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>
#include "error.h"

struct dctx;
struct dproc;
struct dfile;
struct rctx;
struct rfile;

/* One descriptor of a task, as /proc shows it, offered to each probe. */
struct fd_probe
{
  pid_t pid;
  int fd;
  char *link; /* readlink of /proc/PID/fd/FD (a probe may cut " (deleted)") */
  const struct stat *st;
  int flags; /* fdinfo flags, O_CLOEXEC included */
};

/* fd_ops.flags */
#define FDT_LOCKS 0x1u   /* flock and OFD locks on it are restored */
#define FDT_PATH 0x2u    /* restore opens "path", which must be absolute */
#define FDT_DATA 0x4u    /* may name a "data" file of the image */
#define FDT_OUTSIDE 0x8u /* stands for a file outside the tree (stdio only) */
#define FDT_LATE 0x10u   /* opened by the task's blob once every task exists (pidfd.c) */

struct evfd;

/* Signal-driven I/O (O_ASYNC) of an open file description (fown.c): the
   owner SIGIO goes to, as the tree sees it, and its signal. */
struct fown
{
  bool on;   /* a record: the file has O_ASYNC, or an owner or a signal */
  int type;  /* F_OWNER_TID, F_OWNER_PID or F_OWNER_PGRP */
  pid_t pid; /* 0: no owner */
  int sig;   /* F_GETSIG: 0 is SIGIO */
};
int
fown_dump(struct dctx *c, pid_t pid, int fd, const char *link, int flags, struct fown *out,
          crest_error_t *err);
bool
fown_put(yajl_gen g, const struct fown *o);
int
fown_parse(yajl_val v, int format, int flags, struct fown *out, crest_error_t *err);
int
files_fown(struct rctx *c, crest_error_t *err);

/* A descriptor whose whole state is one struct evfd (engine-int.h) read out
   of its fdinfo (eventfd, timerfd, signalfd): its type gives these four and
   takes evfd_probe, evfd_write, evfd_parse and evfd_open (eventfd.c) as its
   fd_ops functions (EVFD_FD_OPS). */
struct evfd_ops
{
  const char *link; /* readlink of the descriptor, "anon_inode:[eventfd]" */
  int (*dump)(pid_t pid, int fd, struct evfd *ev, crest_error_t *err);
  void (*put)(yajl_gen g, const struct evfd *ev);
  int (*parse)(yajl_val v, struct evfd *ev, crest_error_t *err);
  /* The new descriptor (O_CLOEXEC), FLAGS the recorded status flags. */
  int (*open)(const struct evfd *ev, int flags, crest_error_t *err);
};

struct fd_ops
{
  const char *type;          /* "type" of the image's file record */
  unsigned flags;            /* FDT_* */
  const struct evfd_ops *ev; /* for the evfd_* functions below, else NULL */

  /* Checkpoint. probe: is this descriptor of this type? 1 yes, with NF
     filled (NF->ops is this type unless the probe hands it to another), 0
     no, -1 refused or failed (ERR says why in one line). NF holds the
     common fields (id, flags, pos, dev, ino, pid, fd) already. */
  int (*probe)(struct dctx *c, struct dproc *p, const struct fd_probe *d, struct dfile *nf,
               crest_error_t *err);
  /* Optional: each descriptor on the file, the first included. */
  void (*attach)(struct dctx *c, struct dfile *f, int fd);
  /* Optional: once every descriptor of the tree is known and the pipes
     are read, before anything is written (an epoll finds its targets
     among the files); -1 refused or failed. */
  int (*resolve)(struct dctx *c, struct dfile *f, crest_error_t *err);
  /* Optional: the record's keys after the common ones (id, type, path,
     flags, pos). */
  void (*write)(struct dctx *c, const struct dfile *f, yajl_gen g);

  /* Restore. parse (optional): the type's keys of record V, the common
     ones (and "data") read already; files before F->id are parsed. */
  int (*parse)(struct rctx *c, yajl_val v, struct rfile *f, crest_error_t *err);
  /* Optional: open the file again in the restoring process, before any
     task exists, with open(2) FLAGS (the recorded ones, O_CLOEXEC and
     O_NOCTTY). Sets F->svc, the service descriptor tasks dup (svc_place);
     file_place does the common rest. */
  int (*open)(struct rctx *c, struct rfile *f, int flags, crest_error_t *err);
  /* Optional: once every file is open (a memfd's seals). */
  int (*finish)(struct rctx *c, struct rfile *f, crest_error_t *err);
  /* Optional, in the new task: the descriptor that becomes its FD (else
     F->svc); -1: none. */
  int (*install)(const struct rctx *c, const struct rfile *f, int fd);
  /* Optional: frees what parse hung on F->priv besides the record itself
     (the context frees that), whether the parse finished or failed. */
  void (*release)(struct rfile *f);
};

extern const struct fd_ops fd_inherited_ops, fd_reg_ops, fd_dir_ops, fd_link_ops, fd_dev_ops;
extern const struct fd_ops fd_memfd_ops;
extern const struct fd_ops fd_tty_ops;
extern const struct fd_ops fd_pty_ops;
struct rproc;
struct dproc;
/* pty.c: a session leader's controlling terminal when it is a pty of the
   tree (its index and foreground group, for the image); given back at
   finish, the leader parked in its blob. */
int
pty_ctty_dump(struct dctx *c, struct dproc *p, crest_error_t *err);
/* pty.c: tty_nr and tpgid of task PID (/proc/PID/stat). */
int
stat_tty(pid_t pid, long *tty, long *tpgid, crest_error_t *err);
int
pty_task_ctty(const struct rctx *c, const struct rproc *p, crest_error_t *err);
int
pty_ctty_finish(struct rctx *c, struct rproc *p, crest_error_t *err);
extern const struct fd_ops fd_pipe_ops, fd_fifo_ops;
extern const struct fd_ops fd_eventfd_ops, fd_timerfd_ops, fd_signalfd_ops, fd_epoll_ops;
extern const struct fd_ops fd_inotify_ops;
extern const struct fd_ops fd_unix_ops;
extern const struct fd_ops fd_pidfd_ops;
/* pidfd.c: is LINK (readlink of a descriptor) a pidfd's? */
bool
pidfd_link(const char *link);

/* eventfd.c: the fd_ops functions of a type with an evfd_ops. */
int
evfd_probe(struct dctx *c, struct dproc *p, const struct fd_probe *d, struct dfile *nf,
           crest_error_t *err);
void
evfd_write(struct dctx *c, const struct dfile *f, yajl_gen g);
int
evfd_parse(struct rctx *c, yajl_val v, struct rfile *f, crest_error_t *err);
int
evfd_open(struct rctx *c, struct rfile *f, int flags, crest_error_t *err);
#define EVFD_FD_OPS .probe = evfd_probe, .write = evfd_write, .parse = evfd_parse, .open = evfd_open
extern const struct fd_ops fd_inet_ops;
extern const struct fd_ops fd_netlink_ops;

/* files.c: the dump side. */
int
dump_fds(struct dctx *c, struct dproc *p, crest_error_t *err);
int
files_resolve(struct dctx *c, crest_error_t *err);
void
files_put(struct dctx *c, yajl_gen g);
/* files.c: the restore side. */
int
files_parse(struct rctx *c, crest_error_t *err);
int
files_open(struct rctx *c, crest_error_t *err);
int
files_finish(struct rctx *c, crest_error_t *err);
int
files_task_src(const struct rctx *c, const struct rfile *f, int fd);
/* The common end of an open: seek to the recorded offset (SEEK), place FD
   among the service descriptors as F->svc, take F's flock and OFD locks. */
int
file_place(struct rctx *c, struct rfile *f, int fd, bool seek, crest_error_t *err);

/* files-reg.c: restore opens PATH again inside the task's root: it must
   name this very file there (refused in one line if not). */
int
files_check_path(struct dctx *c, struct dproc *p, const struct fd_probe *d, bool nofollow,
                 crest_error_t *err);
/* files-reg.c: the keys of a file's records of docs/engine.md's attribute
   tables (data, unlinked, deleted_dir, flock and OFD locks). */
void
files_put_attrs(struct dctx *c, const struct dfile *f, yajl_gen g);
/* files-reg.c: refused (-1, one line) when the directory of LINK, an
   unlinked file of task P's descriptor FD, is gone as well: the restore
   makes the file again there. */
int
unlinked_dir_check(struct dctx *c, struct dproc *p, int fd, const char *link, crest_error_t *err);
/* Its flock and OFD locks (files-reg.c), for the types with FDT_LOCKS. */
void
files_put_locks(struct dctx *c, const struct dfile *f, yajl_gen g);

/* pipes.c: the pipes and FIFOs, with their bytes. */
int
dump_pipes(struct dctx *c, crest_error_t *err);
void
pipes_put(struct dctx *c, yajl_gen g);
int
pipes_parse(struct rctx *c, crest_error_t *err);
int
pipes_open(struct rctx *c, crest_error_t *err);
void
pipes_close_unused(struct rctx *c);

/* tty.c: the container's terminal. */
void
tty_find(struct dctx *c);
void
tty_put(struct dctx *c, yajl_gen g);
int
tty_parse(struct rctx *c, crest_error_t *err);
int
tty_open(struct rctx *c, crest_error_t *err);

/* files-memfd.c: one memfd per saved memory object (memfd descriptors and
   mappings of it share it). */
int
memfile_svc(struct rctx *c, const char *data, const char *path, crest_error_t *err);
/* A read-only descriptor of the memfd SVC (memfile_svc's), in the service
   range, one per object: the shared mappings made through a descriptor not
   open for writing (VMF_SHAREDRO) are made through it. */
int
memfile_svc_ro(struct rctx *c, int svc, crest_error_t *err);
/* "memfiles" (format 19): the objects whose data file holds only their
   extents; parsed before the processes, whose mappings name them. */
int
memfiles_parse(struct rctx *c, crest_error_t *err);
/* The object's size: its "memfiles" entry's, else its data file's (DF). */
uint64_t
memfile_size(const struct rctx *c, const char *data, uint64_t dsize);

#endif
