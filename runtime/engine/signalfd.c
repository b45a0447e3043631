/* crest: signalfd descriptors (docs/engine.md, "Event descriptors"): the
 * signal mask and status flags. Which signals a read takes depends on the
 * reading task, not on the descriptor: nothing else to keep. */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "dump-int.h"
#include "engine-int.h"
#include "files.h"
#include "restore-int.h"
#include "image.h"
#include "util.h"

/* SIGKILL and SIGSTOP, which the kernel never puts in a signalfd's mask. */
#define NEVER ((1ULL << (SIGKILL - 1)) | (1ULL << (SIGSTOP - 1)))

static int
signalfd_dump(pid_t pid, int fd, struct evfd *ev, crest_error_t *err)
{
  cleanup_free char *info = NULL;
  const char *s;
  if (evfd_fdinfo(pid, fd, &info, err) < 0)
    return -1;
  if (!(s = strstr(info, "sigmask:")))
    return crest_error_make(err, EIO, "fdinfo shows no sigmask");
  ev->sigmask = strtoull(s + 8, NULL, 16);
  return 0;
}

static void
signalfd_put(yajl_gen g, const struct evfd *ev)
{
  jput_u64(g, "sigmask", ev->sigmask);
}

static int
signalfd_parse(yajl_val v, struct evfd *ev, crest_error_t *err)
{
  if (jget_u64(v, "sigmask", &ev->sigmask, err) < 0)
    return -1;
  if (ev->sigmask & NEVER)
    return crest_error_make(err, EINVAL, "signalfd mask %#" PRIx64 " has SIGKILL or SIGSTOP",
                            ev->sigmask);
  return 0;
}

static int
signalfd_open(const struct evfd *ev, int flags, crest_error_t *err)
{
  /* The kernel's sigset (8 bytes), not glibc's. */
  int fd = syscall(SYS_signalfd4, -1, &ev->sigmask, sizeof ev->sigmask,
                   SFD_CLOEXEC | (flags & O_NONBLOCK));
  if (fd < 0)
    return crest_error_errno(err, "restore: signalfd with mask %#" PRIx64, ev->sigmask);
  return fd;
}

/* --- the descriptor type (files.h) --- */

static const struct evfd_ops signalfd_ev = {
  .link = "anon_inode:[signalfd]",
  .dump = signalfd_dump,
  .put = signalfd_put,
  .parse = signalfd_parse,
  .open = signalfd_open,
};

const struct fd_ops fd_signalfd_ops = {
  .type = "signalfd",
  .ev = &signalfd_ev,
  EVFD_FD_OPS,
};
