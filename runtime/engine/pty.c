/* crest: pseudo-terminals the tree holds both ends of ("pty"; docs/engine.md,
 * "Pseudo-terminals"): tmux's and screen's panes, script(1), expect.
 *
 * A master (/dev/ptmx) is known by its index (TIOCGPTN) and, through an
 * O_PATH descriptor of its slave (TIOCGPTPEER, which opens no terminal), by
 * the devpts it lives in; a slave (/dev/pts/N) by its device. The
 * checkpoint records each end's termios, the window size, packet mode, the
 * lock and exclusive mode, and refuses bytes waiting on either end (no
 * interface gives them back without reading them). A slave whose master
 * the tree does not hold is left to tty.c (the container's console) or
 * refused there. The restore opens the ptmx of the restoring process's
 * root until it hands out the same index (devpts gives the lowest free
 * one: the lower ones opened on the way are closed once every file is
 * open), then each slave by its path. A session whose controlling
 * terminal is such a pty gets it back at the end: its leader is made to
 * call TIOCSCTTY and TIOCSPGRP (pty_ctty_finish). */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/user.h>
#include <termios.h>
#include <unistd.h>

#include "blob/blob-abi.h"
#include "dump-int.h"
#include "engine-int.h"
#include "files.h"
#include "image.h"
#include "log.h"
#include "restore-int.h"
#include "util.h"

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

#define PTY_INDEX_MAX (1 << 20)
/* the kernel's O_LARGEFILE, which fdinfo shows (0 in 64-bit user headers) */
#define K_O_LARGEFILE 0100000

/* A master of the tree: its slave's devpts and device number. */
struct pty_known
{
  dev_t pts_dev, rdev;
};

struct pty_rec
{
  int index;
  bool master;
  struct termios tio;
  struct winsize ws; /* master */
  int pkt, locked;   /* master */
  int excl;          /* slave */
  bool via_tty;      /* slave: opened as /dev/tty by a task it is the terminal of */
};

static bool
is_slave(dev_t rdev)
{
  return major(rdev) >= 136 && major(rdev) <= 143;
}

/* A master's slave, without opening it: its devpts and device. */
static int
master_peer(int m, struct pty_known *k)
{
  struct stat st;
  cleanup_close int peer = ioctl(m, TIOCGPTPEER, O_PATH | O_NOCTTY | O_CLOEXEC);
  if (peer < 0 || fstat(peer, &st) < 0)
    return -1;
  k->pts_dev = st.st_dev, k->rdev = st.st_rdev;
  return 0;
}

/* Every master the tree holds (once). */
static void
scan_masters(struct dctx *c)
{
  if (c->ptys_scanned)
    return;
  c->ptys_scanned = true;
  for (size_t i = 0; i < c->np; i++)
    {
      cleanup_free char *dir = xasprintf("/proc/%d/fd", (int)c->p[i].pid);
      DIR *d = c->p[i].zombie ? NULL : opendir(dir);
      struct dirent *de;
      while (d && (de = readdir(d)))
        {
          struct stat st;
          struct pty_known k;
          crest_error_t e = NULL;
          cleanup_close int m = -1;
          if (de->d_name[0] == '.' || fstatat(dirfd(d), de->d_name, &st, 0) < 0
              || !S_ISCHR(st.st_mode) || st.st_rdev != makedev(5, 2))
            continue;
          m = getfd(c->p[i].pid, atoi(de->d_name), &e);
          crest_error_release(&e);
          if (m < 0 || master_peer(m, &k) < 0)
            continue;
          c->ptys = xrealloc(c->ptys, (c->nptys + 1) * sizeof *c->ptys);
          c->ptys[c->nptys++] = k;
        }
      if (d)
        closedir(d);
    }
}

/* Is the slave (PTS_DEV, RDEV) one whose master the tree holds? */
static bool
tree_master(struct dctx *c, dev_t pts_dev, dev_t rdev)
{
  scan_masters(c);
  for (size_t i = 0; i < c->nptys; i++)
    if (c->ptys[i].rdev == rdev && (!pts_dev || c->ptys[i].pts_dev == pts_dev))
      return true;
  return false;
}

static int
pty_probe(struct dctx *c, struct dproc *p, const struct fd_probe *d, struct dfile *nf,
          crest_error_t *err)
{
  cleanup_close int dup = -1;
  struct pty_rec *r;
  struct pty_known k;
  int n = 0;
  bool master = d->st->st_rdev == makedev(5, 2), via_tty = d->st->st_rdev == makedev(5, 0);
  dev_t rdev = d->st->st_rdev;
  if (!S_ISCHR(d->st->st_mode) || !(master || via_tty || is_slave(rdev)))
    return 0;
  if (via_tty)
    {
      /* /dev/tty: the terminal of the task that opened it */
      unsigned real = 0;
      if ((dup = getfd(p->pid, d->fd, err)) < 0)
        return -1;
      if (ioctl(dup, TIOCGDEV, &real) < 0 || !is_slave((dev_t)real) || !tree_master(c, 0, real))
        return 0;
      rdev = (dev_t)real;
    }
  /* a slave of a master outside the tree: the container's console, or
     refused (tty.c) */
  else if (!master && !tree_master(c, d->st->st_dev, rdev))
    return 0;
  if (dup < 0 && (dup = getfd(p->pid, d->fd, err)) < 0)
    return -1;
  r = nf->priv = xzalloc(sizeof *r);
  r->via_tty = via_tty;
  if (master)
    {
      unsigned idx = 0;
      if (ioctl(dup, TIOCGPTN, &idx) < 0 || master_peer(dup, &k) < 0)
        return crest_error_errno(err, "task %d: fd %d: a pty master: its index", p->pid, d->fd);
      r->index = (int)idx;
    }
  else
    r->index = (int)minor(rdev) + (int)(major(rdev) - 136) * 256;
  r->master = master;
  if (ioctl(dup, FIONREAD, &n) == 0 && n > 0)
    return crest_error_make(err, ENOTSUP,
                            "task %d: fd %d: pty %d: %d bytes wait to be read on its %s, which "
                            "crest cannot put back",
                            p->pid, d->fd, r->index, n, master ? "master" : "terminal");
  if (tcgetattr(dup, &r->tio) < 0)
    return crest_error_errno(err, "task %d: fd %d: pty %d: its settings", p->pid, d->fd, r->index);
  if (master
      && (ioctl(dup, TIOCGWINSZ, &r->ws) < 0 || ioctl(dup, TIOCGPKT, &r->pkt) < 0
          || ioctl(dup, TIOCGPTLCK, &r->locked) < 0))
    return crest_error_errno(err, "task %d: fd %d: pty %d: its size, packet mode or lock", p->pid,
                             d->fd, r->index);
  if (!master && ioctl(dup, TIOCGEXCL, &r->excl) < 0)
    return crest_error_errno(err, "task %d: fd %d: pty %d: TIOCGEXCL", p->pid, d->fd, r->index);
  return 1;
}

static void
pty_write(struct dctx *c, const struct dfile *f, yajl_gen g)
{
  const struct pty_rec *r = f->priv;
  (void)c;
  jput_int(g, "index", r->index);
  jput_bool(g, "master", r->master);
  jput_int(g, "iflag", r->tio.c_iflag);
  jput_int(g, "oflag", r->tio.c_oflag);
  jput_int(g, "cflag", r->tio.c_cflag);
  jput_int(g, "lflag", r->tio.c_lflag);
  jput_int(g, "line", r->tio.c_line);
  jput_int(g, "ispeed", r->tio.c_ispeed);
  jput_int(g, "ospeed", r->tio.c_ospeed);
  jput_hex(g, "cc", r->tio.c_cc, sizeof r->tio.c_cc);
  if (r->master)
    {
      jput_int(g, "rows", r->ws.ws_row);
      jput_int(g, "cols", r->ws.ws_col);
      jput_int(g, "xpixel", r->ws.ws_xpixel);
      jput_int(g, "ypixel", r->ws.ws_ypixel);
      jput_int(g, "pkt", r->pkt != 0);
      jput_int(g, "locked", r->locked != 0);
    }
  else
    jput_int(g, "excl", r->excl != 0);
  if (r->via_tty)
    jput_bool(g, "via_tty", true);
}

/* tty_nr and tpgid of PID (its stat); -1 when it cannot be read. */
int
stat_tty(pid_t pid, long *tty, long *tpgid, crest_error_t *err)
{
  cleanup_free char *stat = NULL;
  const char *q;
  if (read_proc(pid, "stat", &stat, err) < 0)
    return -1;
  q = strrchr(stat, ')');
  if (!q || sscanf(q + 2, "%*c %*d %*d %*d %ld %ld", tty, tpgid) != 2)
    return crest_error_make(err, EIO, "task %d: its stat", pid);
  return 0;
}

/* Process mode: P's controlling terminal TTY is not a pty of the tree (its
   master elsewhere: a job of a shell, started under script(1) or ssh, or a
   console). Until December 2026 it was left out without a word: the
   restored task had whatever terminal the restore's session had, and a
   session leader none. Without --shell-job refused; with it a task whose
   session leader is outside the tree is taken, and its restore, from a
   terminal, gives it that one (as CRIU's --shell-job), and the terminal's
   foreground to its process group if it had it; a session leader
   is refused either way (a restore cannot make it the terminal's
   controller again). A container's console is its runtime's: left out. */
static int
outside_ctty(struct dctx *c, struct dproc *p, dev_t tty, long tpgid, crest_error_t *err)
{
  char name[32];
  if (c->o->root_is_ns_init)
    return 0;
  if (major(tty) >= 136 && major(tty) < 144)
    snprintf(name, sizeof name, "pts/%u", (major(tty) - 136) * 256 + minor(tty));
  else
    snprintf(name, sizeof name, "%u:%u", major(tty), minor(tty));
  if (p->sid == p->pid)
    return crest_error_make(err, ENOTSUP,
                            "task %d: leads its session, whose controlling terminal (%s) is "
                            "outside the tree: a restore could not make it that terminal's "
                            "session again (--shell-job takes only a job whose session leader, "
                            "a shell, is outside the tree)",
                            p->pid, name);
  if (!c->o->shell_job)
    return crest_error_make(err, ENOTSUP,
                            "task %d: its controlling terminal (%s) is outside the tree (a job "
                            "of a shell): give --shell-job to restore it on the terminal the "
                            "restore runs on, or start it without one (setsid)",
                            p->pid, name);
  c->shell_job_used = true;
  /* A group of the tree's own (its leader in the tree) in the terminal's
     foreground: the restore puts it there again. A task in its shell's
     group is in the restore's after it. */
  for (size_t i = 0; i < c->np && tpgid > 0; i++)
    if (c->p[i].pid == (pid_t)tpgid && c->p[i].pgid == (pid_t)tpgid)
      c->shell_job_fg = c->p[i].ipgid;
  return 0;
}

/* A process whose controlling terminal is a pty of the tree: its index
   (+ 1) for the image, and for a session leader the terminal's foreground
   group as the tree sees it. A process that is not its session's leader
   got its terminal from its parent at fork, and gets it so at restore: a
   parent without it is refused. */
int
pty_ctty_dump(struct dctx *c, struct dproc *p, crest_error_t *err)
{
  long tty = 0, tpgid = 0, ptty = 0, ptpgid = 0;
  p->ctty = 0, p->itpgid = 0;
  if (p->zombie)
    return 0;
  if (stat_tty(p->pid, &tty, &tpgid, err) < 0)
    return -1;
  if (tty == 0)
    return 0;
  if (!is_slave((dev_t)tty) || !tree_master(c, 0, (dev_t)tty))
    return outside_ctty(c, p, (dev_t)tty, tpgid, err);
  p->ctty = (int)minor((dev_t)tty) + (int)(major((dev_t)tty) - 136) * 256 + 1;
  if (p->sid != p->pid)
    {
      bool in_tree = false;
      for (size_t i = 0; i < c->np; i++)
        in_tree |= c->p[i].pid == p->ppid && !c->p[i].zombie;
      if (!in_tree || stat_tty(p->ppid, &ptty, &ptpgid, err) < 0 || ptty != tty)
        {
          crest_error_release(err);
          return crest_error_make(err, ENOTSUP,
                                  "task %d: its controlling terminal, pty %d, is not its "
                                  "parent's: a restore gives a process its terminal through "
                                  "its parent",
                                  p->pid, p->ctty - 1);
        }
      return 0;
    }
  {
    /* the leader takes it at restore through a descriptor of it, and sets
       its foreground group through one of its own */
    bool held = false, own = false;
    for (size_t k = 0; k < c->nfds; k++)
      {
        const struct dfile *f = &c->f[c->fds[k].file];
        const struct pty_rec *r = f->priv;
        if (f->ops == &fd_pty_ops && !r->master && r->index == p->ctty - 1)
          held = true, own |= c->fds[k].pid == p->pid;
      }
    if (!held || (tpgid > 0 && !own))
      return crest_error_make(err, ENOTSUP,
                              "task %d: its controlling terminal, pty %d, is open %s: a "
                              "restore gives it back through a descriptor of it",
                              p->pid, p->ctty - 1,
                              held ? "in other processes only" : "in no process of the tree");
  }
  if (tpgid > 0)
    {
      for (size_t i = 0; i < c->np && !p->itpgid; i++)
        if (c->p[i].pgid == (pid_t)tpgid)
          p->itpgid = c->p[i].ipgid;
      if (!p->itpgid)
        return crest_error_make(err, ENOTSUP,
                                "task %d: the foreground process group %ld of its terminal "
                                "(pty %d) is not in the tree",
                                p->pid, tpgid, p->ctty - 1);
    }
  return 0;
}

/* --- restore --- */

static int
pty_parse(struct rctx *c, yajl_val v, struct rfile *f, crest_error_t *err)
{
  struct pty_rec *r = f->priv = xzalloc(sizeof *r);
  static const char *const keys[]
      = { "index", "iflag", "oflag", "cflag", "lflag", "line", "ispeed", "ospeed" };
  int64_t x[8];
  yajl_val m = NULL;
  (void)c;
  for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
    if (jget_i64(v, keys[i], &x[i], err) < 0 || x[i] < 0
        || x[i] > (i == 0   ? PTY_INDEX_MAX
                   : i == 5 ? 255
                            : (int64_t)UINT32_MAX))
      return crest_error_make(err, EINVAL, "pty: %s missing or out of range", keys[i]);
  for (size_t i = 0; YAJL_IS_OBJECT(v) && i < v->u.object.len; i++)
    if (strcmp(v->u.object.keys[i], "master") == 0)
      m = v->u.object.values[i];
  if (!m || !(YAJL_IS_TRUE(m) || YAJL_IS_FALSE(m))
      || jget_hex(v, "cc", r->tio.c_cc, sizeof r->tio.c_cc, err) < 0)
    return crest_error_make(err, EINVAL, "pty %lld: master or cc", (long long)x[0]);
  r->index = (int)x[0], r->master = YAJL_IS_TRUE(m);
  r->tio.c_iflag = x[1], r->tio.c_oflag = x[2], r->tio.c_cflag = x[3], r->tio.c_lflag = x[4];
  r->tio.c_line = (cc_t)x[5], r->tio.c_ispeed = x[6], r->tio.c_ospeed = x[7];
  if (r->master)
    {
      static const char *const mk[] = { "rows", "cols", "xpixel", "ypixel", "pkt", "locked" };
      int64_t y[6];
      for (size_t i = 0; i < ARRAY_SIZE(mk); i++)
        if (jget_i64(v, mk[i], &y[i], err) < 0 || y[i] < 0 || y[i] > (i < 4 ? 65535 : 1))
          return crest_error_make(err, EINVAL, "pty %d: %s missing or out of range", r->index,
                                  mk[i]);
      r->ws = (struct winsize){ (unsigned short)y[0], (unsigned short)y[1], (unsigned short)y[2],
                                (unsigned short)y[3] };
      r->pkt = (int)y[4], r->locked = (int)y[5];
    }
  else
    {
      int64_t e;
      if (jget_i64(v, "excl", &e, err) < 0 || e < 0 || e > 1)
        return crest_error_make(err, EINVAL, "pty %d: excl", r->index);
      r->excl = (int)e;
      for (size_t i = 0; YAJL_IS_OBJECT(v) && i < v->u.object.len; i++)
        if (strcmp(v->u.object.keys[i], "via_tty") == 0)
          r->via_tty = YAJL_IS_TRUE(v->u.object.values[i]);
    }
  return 0;
}

/* A new master of index R->index: opened until devpts hands that index
   out; the lower ones it hands out meanwhile are kept (c->pty_fill), for
   a master of a lower index to take, and closed in pty_finish. */
static int
master_open(struct rctx *c, const struct pty_rec *r, int flags, crest_error_t *err)
{
  int fd = -1;
  unsigned idx = 0;
  for (size_t k = 0; k < c->npty_fill; k++)
    if (c->pty_fill[k] >= 0 && ioctl(c->pty_fill[k], TIOCGPTN, &idx) == 0 && (int)idx == r->index)
      {
        fd = c->pty_fill[k];
        c->pty_fill[k] = -1;
        break;
      }
  while (fd < 0)
    {
      int m = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
      if (m < 0)
        return crest_error_errno(err, "restore: open /dev/ptmx for pty %d", r->index);
      if (ioctl(m, TIOCGPTN, &idx) < 0)
        {
          close(m);
          return crest_error_errno(err, "restore: pty %d: TIOCGPTN", r->index);
        }
      if ((int)idx == r->index)
        fd = m;
      else if ((int)idx > r->index)
        {
          close(m);
          return crest_error_make(err, EEXIST,
                                  "restore: pty %d is taken where the tree is restored "
                                  "(/dev/pts/%d exists: devpts handed out %u)",
                                  r->index, r->index, idx);
        }
      else
        {
          c->pty_fill = xrealloc(c->pty_fill, (c->npty_fill + 1) * sizeof *c->pty_fill);
          c->pty_fill[c->npty_fill++] = m;
        }
    }
  if (fcntl(fd, F_SETFL, flags & ~(O_ACCMODE | O_CLOEXEC | O_NOCTTY)) < 0
      || tcsetattr(fd, TCSANOW, &r->tio) < 0 || ioctl(fd, TIOCSWINSZ, &r->ws) < 0
      || ioctl(fd, TIOCPKT, &r->pkt) < 0 || ioctl(fd, TIOCSPTLCK, &r->locked) < 0)
    {
      crest_error_errno(err, "restore: pty %d: its flags, settings, size, packet mode or lock",
                        r->index);
      close(fd);
      return -1;
    }
  return fd;
}

/* /dev/tty bound to pty R->index, as a task of the tree opened it: in a
   helper child that leads a session of its own with the pty as its
   terminal, handed back over a socket pair. The helper then exits: the
   pty is left with no session (the tree's leader takes it later), and
   the SIGHUP its exit sends goes to its own group only. */
static int
open_via_tty(const struct pty_rec *r, int flags, crest_error_t *err)
{
  int sv[2], fd = -1, st = 0;
  char path[64], byte = 0;
  struct msghdr mh = { 0 };
  struct iovec io = { &byte, 1 };
  union
  {
    struct cmsghdr h;
    char b[CMSG_SPACE(sizeof(int))];
  } cm;
  pid_t pid;
  snprintf(path, sizeof path, "/dev/pts/%d", r->index);
  if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) < 0)
    return crest_error_errno(err, "restore: socketpair");
  pid = fork();
  if (pid == 0)
    {
      int s = -1, t = -1;
      close(sv[0]);
      if (setsid() >= 0 && (s = open(path, O_RDWR | O_NOCTTY)) >= 0 && ioctl(s, TIOCSCTTY, 0) == 0)
        t = open("/dev/tty", flags);
      if (t >= 0)
        {
          memset(&cm, 0, sizeof cm);
          mh.msg_iov = &io, mh.msg_iovlen = 1, mh.msg_control = cm.b,
          mh.msg_controllen = sizeof cm.b;
          CMSG_FIRSTHDR(&mh)->cmsg_level = SOL_SOCKET;
          CMSG_FIRSTHDR(&mh)->cmsg_type = SCM_RIGHTS;
          CMSG_FIRSTHDR(&mh)->cmsg_len = CMSG_LEN(sizeof(int));
          memcpy(CMSG_DATA(CMSG_FIRSTHDR(&mh)), &t, sizeof t);
          _exit(sendmsg(sv[1], &mh, 0) == 1 ? 0 : 1);
        }
      _exit(1);
    }
  close(sv[1]);
  if (pid > 0)
    {
      memset(&cm, 0, sizeof cm);
      mh.msg_iov = &io, mh.msg_iovlen = 1, mh.msg_control = cm.b, mh.msg_controllen = sizeof cm.b;
      if (recvmsg(sv[0], &mh, MSG_CMSG_CLOEXEC) == 1 && CMSG_FIRSTHDR(&mh)
          && CMSG_FIRSTHDR(&mh)->cmsg_type == SCM_RIGHTS)
        memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&mh)), sizeof fd);
      while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    }
  close(sv[0]);
  if (fd < 0)
    return crest_error_make(err, EIO,
                            "restore: open /dev/tty on %s (a helper in a session of "
                            "its own could not)",
                            path);
  return fd;
}

static int
pty_open(struct rctx *c, struct rfile *f, int flags, crest_error_t *err)
{
  const struct pty_rec *r = f->priv;
  int fd;
  if (f->svc >= 0)
    return 0; /* a master opened early for its slave */
  if (r->master)
    fd = master_open(c, r, flags, err);
  else
    {
      cleanup_free char *path = xasprintf("/dev/pts/%d", r->index);
      int msvc = -1;
      /* its master first, whatever the order of the records */
      for (size_t k = 0; k < c->nf; k++)
        if (c->f[k].ops == &fd_pty_ops && ((struct pty_rec *)c->f[k].priv)->master
            && ((struct pty_rec *)c->f[k].priv)->index == r->index)
          {
            if (c->f[k].svc < 0
                && pty_open(c, &c->f[k], c->f[k].flags | O_CLOEXEC | O_NOCTTY, err) < 0)
              return -1;
            msvc = c->f[k].svc;
          }
      if (r->via_tty)
        fd = open_via_tty(r, flags | O_NOCTTY, err);
      else if (!(f->flags & K_O_LARGEFILE) && msvc >= 0)
        {
          /* as openpty(3) makes it (TIOCGPTPEER): without the O_LARGEFILE
             open(2) adds; the flags TIOCGPTPEER does not take, after */
          /* (O_CLOEXEC would stay in the file's flags: set on the
             descriptor alone) */
          fd = ioctl(msvc, TIOCGPTPEER, flags & (O_ACCMODE | O_NOCTTY | O_NONBLOCK));
          if (fd >= 0
              && (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0
                  || fcntl(fd, F_SETFL, flags & ~(O_ACCMODE | O_NOCTTY | O_CLOEXEC)) < 0))
            {
              close(fd);
              fd = -1;
            }
        }
      else
        fd = open(path, flags | O_NOCTTY);
      if (fd < 0)
        return r->via_tty ? -1 : crest_error_errno(err, "restore: open %s", path);
      if (tcsetattr(fd, TCSANOW, &r->tio) < 0 || (r->excl && ioctl(fd, TIOCEXCL) < 0))
        {
          crest_error_errno(err, "restore: %s: its settings", path);
          close(fd);
          return -1;
        }
    }
  if (fd < 0 || file_place(c, f, fd, true, err) < 0)
    return crest_error_wrap(err, "restore: file %d (pty %d)", f->id, r->index);
  return 0;
}

/* Every file is open: the masters opened on the way go. */
static int
pty_finish(struct rctx *c, struct rfile *f, crest_error_t *err)
{
  (void)f, (void)err;
  for (size_t k = 0; k < c->npty_fill; k++)
    if (c->pty_fill[k] >= 0)
      close(c->pty_fill[k]);
  free(c->pty_fill);
  c->pty_fill = NULL, c->npty_fill = 0;
  return 0;
}

/* In the new task P, once it has its session and group: a session
   leader takes its pty as its controlling terminal (before it forks the
   others of its session, which inherit it); a process that had none
   drops the one its parent gave it. -1 with ERR. */
int
pty_task_ctty(const struct rctx *c, const struct rproc *p, crest_error_t *err)
{
  for (size_t k = 0; k < c->nf; k++)
    {
      const struct rfile *f = &c->f[k];
      const struct pty_rec *r = f->priv;
      if (f->ops != &fd_pty_ops || r->master || f->svc < 0)
        continue;
      if (p->ctty == r->index + 1 && p->sid == p->pid)
        {
          if (ioctl(f->svc, TIOCSCTTY, 0) < 0)
            return crest_error_errno(err, "process %d: make pty %d its controlling terminal",
                                     p->pid, r->index);
          return 0;
        }
      /* not its terminal (ENOTTY when it is not the caller's either) */
      if (p->ctty != r->index + 1)
        ioctl(f->svc, TIOCNOTTY);
    }
  return 0;
}

/* P's terminal's foreground group, once every group exists (P its session
   leader, parked in the blob): P is made to call TIOCSPGRP on the pty's
   descriptor, the group written for the call into the blob's zero
   timeout and put back (P is in the foreground group then: no SIGTTOU). */
int
pty_ctty_finish(struct rctx *c, struct rproc *p, crest_error_t *err)
{
  struct user_regs_struct u;
  uint64_t at = p->base + BLOB_OFF_ZERO_TIMEOUT;
  long a[6] = { -1, TIOCSPGRP, (long)at, 0, 0, 0 }, ret, old;
  if (!p->ctty || !p->tpgid || p->zombie || p->sid != p->pid)
    return 0;
  for (size_t k = 0; k < p->nfds && a[0] < 0; k++)
    {
      const struct rfile *f = &c->f[p->fds[k].file];
      if (f->ops == &fd_pty_ops && ((struct pty_rec *)f->priv)->index == p->ctty - 1)
        a[0] = p->fds[k].fd;
    }
  if (a[0] < 0)
    return crest_error_make(err, EINVAL,
                            "restore: process %d: no descriptor of its terminal, pty %d, to set "
                            "its foreground group with",
                            p->pid, p->ctty - 1);
  errno = 0;
  old = ptrace(PTRACE_PEEKDATA, p->th[0].tid, (void *)at, NULL);
  if (errno || ptrace(PTRACE_POKEDATA, p->th[0].tid, (void *)at, (void *)(long)p->tpgid) < 0)
    return crest_error_errno(err, "restore: process %d: write its foreground group", p->pid);
  if (pt_getregs(p->th[0].tid, &u, err) < 0
      || pt_inject(p->th[0].tid, &u, p->base + BLOB_OFF_SYSCALL, SYS_ioctl, a, &ret, err) < 0)
    return -1;
  if (ptrace(PTRACE_POKEDATA, p->th[0].tid, (void *)at, (void *)old) < 0)
    return crest_error_errno(err, "restore: process %d: put the blob back", p->pid);
  if (ret < 0)
    return crest_error_sys(err, (int)-ret,
                           "restore: process %d: make group %d pty %d's foreground group", p->pid,
                           (int)p->tpgid, p->ctty - 1);
  return 0;
}

const struct fd_ops fd_pty_ops = {
  .type = "pty",
  .probe = pty_probe,
  .write = pty_write,
  .parse = pty_parse,
  .open = pty_open,
  .finish = pty_finish,
};
