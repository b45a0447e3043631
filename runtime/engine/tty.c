/* crest: the container's terminal, and descriptors on it ("tty"): on
 * restore, the new container's terminal takes its place. */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "dump-int.h"
#include "files.h"
#include "image.h"
#include "image-check.h"
#include "log.h"
#include "restore-int.h"
#include "util.h"

/* Container mode: find the container's terminal (c->term), if it has one:
   /dev/console inside the root's root, a character device that is also the
   root's controlling terminal. crun makes both the pty whose master it
   hands to --console-socket. No terminal is no error: a descriptor on any
   terminal is then refused (dump_fd). */
void
tty_find(struct dctx *c)
{
  crest_error_t e = NULL;
  cleanup_close int fd = -1;
  struct stat st;
  long tty_nr = 0, tpgid = 0;

  if (stat_tty(c->root, &tty_nr, &tpgid, &e) < 0 || tty_nr == 0)
    {
      crest_error_release(&e);
      return;
    }
  fd = open_in_root(c, &c->p[0], "/dev/console", O_PATH, &e);
  crest_error_release(&e);
  if (fd < 0 || fstat(fd, &st) < 0 || !S_ISCHR(st.st_mode) || st.st_rdev != (dev_t)tty_nr)
    {
      crest_debug("checkpoint: task %d: its controlling terminal %lu:%lu is not /dev/console",
                  c->root, (unsigned long)major((dev_t)tty_nr),
                  (unsigned long)minor((dev_t)tty_nr));
      return;
    }
  c->term.found = true;
  c->term.dev = st.st_dev;
  c->term.ino = st.st_ino;
  c->term.rdev = st.st_rdev;
  c->term.fg = tpgid > 0 ? (pid_t)tpgid : 0;
}

/* Is this character device a terminal, and which? 1: the container's
   terminal (c->term; its settings are read the first time), 0: no terminal,
   -1 with *what set: another terminal or a pty master, which restore could
   not give back. -2: error. */
static int
terminal_kind(struct dctx *c, struct dproc *p, int fd, const struct stat *st, const char **what,
              crest_error_t *err)
{
  cleanup_close int dup = -1;
  unsigned int real = 0;

  if (st->st_rdev == makedev(5, 2))
    {
      *what = "pty master";
      return -1;
    }
  if ((dup = getfd(p->pid, fd, err)) < 0)
    return -2;
  if (ioctl(dup, TIOCGDEV, &real) < 0)
    return 0;
  /* The pty slave itself (/dev/pts/N, /dev/console), or /dev/tty opened by
     a task whose controlling terminal it is. */
  if (!c->term.found
      || !((st->st_dev == c->term.dev && st->st_ino == c->term.ino)
           || (st->st_rdev == makedev(5, 0) && (dev_t)real == c->term.rdev)))
    {
      *what = c->o->root_is_ns_init ? "a terminal that is not the container's console"
                                    : "a terminal above descriptor 2 (process mode)";
      return -1;
    }
  if (!c->term.saved)
    {
      if (tcgetattr(dup, &c->term.tio) < 0 || ioctl(dup, TIOCGWINSZ, &c->term.ws) < 0)
        return crest_error_errno(err, "task %d: fd %d: read the terminal's settings", p->pid, fd);
      c->term.saved = true;
    }
  return 1;
}

/* The optional "terminal" object: the container's terminal's settings. */
int
tty_parse(struct rctx *c, crest_error_t *err)
{
  const char *path[] = { "terminal", NULL };
  yajl_val t = yajl_tree_get(c->tree, path, yajl_t_any);
  int64_t v[11], fg = 0;
  static const char *const keys[] = { "iflag", "oflag", "cflag", "lflag",  "ispeed", "ospeed",
                                      "line",  "rows",  "cols",  "xpixel", "ypixel" };
  crest_error_t e2 = NULL;

  if (!t)
    return 0;
  if (!YAJL_IS_OBJECT(t))
    return crest_error_make(err, EINVAL, "image %s: tree.json: terminal is not an object",
                            c->o->image_dir);
  for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
    {
      /* flags and speeds are 32 bits, the line discipline 8, sizes 16. */
      int64_t max = i < 6 ? (int64_t)UINT32_MAX : i == 6 ? 255 : 65535;
      if (jget_i64(t, keys[i], &v[i], err) < 0)
        return crest_error_wrap(err, "image %s: tree.json: terminal", c->o->image_dir);
      CHECK(v[i] >= 0 && v[i] <= max, "image %s: tree.json: terminal: %s %lld out of range",
            c->o->image_dir, keys[i], (long long)v[i]);
    }
  if (jget_hex(t, "cc", c->tio.c_cc, sizeof c->tio.c_cc, err) < 0)
    return crest_error_wrap(err, "image %s: tree.json: terminal", c->o->image_dir);
  if (jget_i64(t, "fg_pgid", &fg, &e2) < 0)
    fg = 0;
  crest_error_release(&e2);
  CHECK(fg >= 0 && fg < (1 << 22), "image %s: tree.json: terminal: bad fg_pgid %lld",
        c->o->image_dir, (long long)fg);
  c->tio.c_iflag = v[0], c->tio.c_oflag = v[1], c->tio.c_cflag = v[2], c->tio.c_lflag = v[3];
  c->tio.c_ispeed = v[4], c->tio.c_ospeed = v[5], c->tio.c_line = v[6];
  c->ws.ws_row = v[7], c->ws.ws_col = v[8], c->ws.ws_xpixel = v[9], c->ws.ws_ypixel = v[10];
  c->term_fg = fg;
  c->has_term = true;
  return 0;
}

/* The container's terminal. Descriptors on it (type "tty") get the
   restore's own terminal: those at 0-2 the restorer's descriptor of the same
   number, like "inherited" ones; one above 2 the description of a stdio
   descriptor it shared in the image, or else a new open of /dev/tty, the
   restorer's controlling terminal (crun, with process.terminal, makes the
   pty it creates that). In container mode the terminal also gets the
   checkpointed settings, and the window size unless the holder of its
   master set one already. This runs before any other task exists, so the
   SIGWINCH a new size sends to the foreground group reaches this process
   alone, which takes it off its queue. */
int
tty_open(struct rctx *c, crest_error_t *err)
{
  bool need = c->has_term && c->o->as_ns_init;
  const char *why = NULL;
  int fd;

  for (size_t i = 0; i < c->nf; i++)
    if (c->f[i].ops == &fd_tty_ops && c->f[i].stdio < 0)
      need = true, why = c->f[i].path;
  if (!need)
    return 0;
  fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    return crest_error_errno(err,
                             "restore: the checkpointed tree used its container's terminal%s%s%s, "
                             "but this restore has no controlling terminal (open /dev/tty)",
                             why ? " (" : "", why ? why : "", why ? ")" : "");
  if ((c->term_svc = svc_place(c, fd, err)) < 0)
    return -1;
  if (c->has_term && c->o->as_ns_init)
    {
      struct winsize now;
      sigset_t winch, old;
      const struct timespec zero = { 0, 0 };
      int r = 0;
      if (tcsetattr(c->term_svc, TCSANOW, &c->tio) < 0)
        return crest_error_errno(err, "restore: give the terminal its checkpointed settings");
      if (ioctl(c->term_svc, TIOCGWINSZ, &now) < 0)
        return crest_error_errno(err, "restore: read the terminal's window size");
      if (now.ws_row == 0 && now.ws_col == 0)
        {
          sigemptyset(&winch);
          sigaddset(&winch, SIGWINCH);
          sigprocmask(SIG_BLOCK, &winch, &old);
          r = ioctl(c->term_svc, TIOCSWINSZ, &c->ws);
          while (sigtimedwait(&winch, NULL, &zero) == SIGWINCH)
            ;
          sigprocmask(SIG_SETMASK, &old, NULL);
        }
      if (r < 0)
        return crest_error_errno(err, "restore: set the terminal's window size to %ux%u",
                                 c->ws.ws_row, c->ws.ws_col);
    }
  return 0;
}

/* A descriptor on a terminal. */
static int
tty_probe(struct dctx *c, struct dproc *p, const struct fd_probe *d, struct dfile *nf,
          crest_error_t *err)
{
  const char *what = NULL;
  int tk;
  if (!S_ISCHR(d->st->st_mode))
    return 0;
  tk = terminal_kind(c, p, d->fd, d->st, &what, err);
  if (tk == -2)
    return -1;
  if (tk == 1)
    /* On restore, the new container's terminal takes its place. */
    return 1;
  if (d->fd <= 2 && (tk == 0 || !c->o->root_is_ns_init))
    {
      /* Process mode: the caller's terminal, as before; or stdio on a
         character device that is no terminal: the restorer's own stdio. */
      nf->ops = &fd_inherited_ops;
      return 1;
    }
  if (tk == 0)
    return 0;
  return crest_error_make(err, ENOTSUP, "task %d: fd %d (%s): %s, cannot checkpoint it", p->pid,
                          d->fd, d->link, what);
}

/* Its own open file description (see tty_open); at 0-2, the restorer's. */
static int
tty_open_file(struct rctx *c, struct rfile *f, int flags, crest_error_t *err)
{
  int fd;
  (void)flags;
  if (f->stdio >= 0)
    return 0;
  fd = open("/dev/tty", (f->flags & (O_ACCMODE | O_NONBLOCK | O_APPEND)) | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    return crest_error_errno(err, "restore: open the terminal /dev/tty in place of %s", f->path);
  if ((f->svc = svc_place(c, fd, err)) < 0)
    return -1;
  return 0;
}

static int
tty_install(const struct rctx *c, const struct rfile *f, int fd)
{
  return fd <= 2 ? c->stdio_svc[fd] : f->stdio >= 0 ? c->stdio_svc[f->stdio] : f->svc;
}

const struct fd_ops fd_tty_ops = {
  .type = "tty",
  .probe = tty_probe,
  .open = tty_open_file,
  .install = tty_install,
};

/* The container's terminal: its settings, and its foreground process
   group when that is one of the tree's. */
void
tty_put(struct dctx *c, yajl_gen g)
{
  if (!c->term.saved)
    return;
  jput_key(g, "terminal");
  yajl_gen_map_open(g);
  jput_int(g, "iflag", c->term.tio.c_iflag);
  jput_int(g, "oflag", c->term.tio.c_oflag);
  jput_int(g, "cflag", c->term.tio.c_cflag);
  jput_int(g, "lflag", c->term.tio.c_lflag);
  jput_int(g, "ispeed", c->term.tio.c_ispeed);
  jput_int(g, "ospeed", c->term.tio.c_ospeed);
  jput_int(g, "line", c->term.tio.c_line);
  jput_hex(g, "cc", c->term.tio.c_cc, sizeof c->term.tio.c_cc);
  jput_int(g, "rows", c->term.ws.ws_row);
  jput_int(g, "cols", c->term.ws.ws_col);
  jput_int(g, "xpixel", c->term.ws.ws_xpixel);
  jput_int(g, "ypixel", c->term.ws.ws_ypixel);
  for (size_t i = 0; i < c->np && c->term.fg; i++)
    if (c->p[i].pgid == c->term.fg)
      {
        jput_int(g, "fg_pgid", c->p[i].ipgid);
        break;
      }
  yajl_gen_map_close(g);
}
