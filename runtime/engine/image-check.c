/* crest: checks of what an untrusted image names (see image-check.h). */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "image-check.h"
#include "log.h"

static const struct img_fsid *fsids;
static size_t nfsids;

void
img_set_fsids(const struct img_fsid *ids, size_t n)
{
  fsids = ids;
  nfsids = n;
}

/* open(PATH, FLAGS) as ID: its file-system UID and GID and its groups, on
   this thread only (raw setgroups), put back afterwards. A change of the
   file-system IDs makes the kernel reset the dumpable flag and the
   parent-death signal, which the tasks forked later inherit or need: both
   are put back too. -1 with errno EACCES when the restorer cannot take
   that identity (no CAP_SETUID or CAP_SETGID). */
static int
open_as(const struct img_fsid *id, const char *path, int flags)
{
  gid_t old_groups[256];
  int nold = getgroups(256, old_groups), dumpable = prctl(PR_GET_DUMPABLE), pdeath = 0, fd = -1, e;
  uid_t ou = setfsuid(-1);
  gid_t og = setfsgid(-1);
  prctl(PR_GET_PDEATHSIG, &pdeath);
  if (nold < 0 || syscall(SYS_setgroups, id->ngroups, id->groups) < 0)
    {
      errno = EACCES;
      return -1;
    }
  setfsgid(id->gid);
  setfsuid(id->uid);
  if ((uid_t)setfsuid(-1) == id->uid && (gid_t)setfsgid(-1) == id->gid)
    fd = open(path, flags);
  else
    errno = EACCES;
  e = errno;
  setfsuid(ou);
  setfsgid(og);
  if (syscall(SYS_setgroups, nold, old_groups) < 0)
    crest_debug("restore: put back the restorer's groups: %s", strerror(errno));
  prctl(PR_SET_DUMPABLE, dumpable);
  if (pdeath)
    prctl(PR_SET_PDEATHSIG, pdeath);
  errno = e;
  return fd;
}

/* open(PATH, FLAGS); denied, again as each identity of the image. */
static int
open_fsids(const char *path, int flags)
{
  int fd = open(path, flags), e = errno;
  for (size_t i = 0; fd < 0 && (e == EACCES || e == EPERM) && i < nfsids; i++)
    {
      fd = open_as(&fsids[i], path, flags);
      if (fd >= 0)
        crest_debug("restore: %s opened as %u:%u", path, fsids[i].uid, fsids[i].gid);
    }
  if (fd < 0)
    errno = e;
  return fd;
}

bool
img_path_ok(const char *path)
{
  return path && path[0] == '/' && strnlen(path, PATH_MAX) < PATH_MAX;
}

/* docs/image-format.md: a "dev" file is one of these, the memory devices
   (major 1) that have no state a restore could get wrong. */
static const struct
{
  const char *path;
  int minor;
} devs[] = {
  { "/dev/null", 3 },   { "/dev/zero", 5 },    { "/dev/full", 7 },
  { "/dev/random", 8 }, { "/dev/urandom", 9 },
};

/* The minor number PATH must have, or -1 when it is not one of devs. */
static int
dev_minor(const char *path)
{
  for (size_t i = 0; i < sizeof devs / sizeof devs[0]; i++)
    if (strcmp(path, devs[i].path) == 0)
      return (int)devs[i].minor;
  return -1;
}

bool
img_dev_ok(const char *path)
{
  return dev_minor(path) >= 0;
}

static const char *
type_name(mode_t m)
{
  switch (m & S_IFMT)
    {
    case S_IFREG:
      return "a regular file";
    case S_IFDIR:
      return "a directory";
    case S_IFIFO:
      return "a FIFO";
    case S_IFCHR:
      return "a character device";
    case S_IFBLK:
      return "a block device";
    case S_IFSOCK:
      return "a socket";
    case S_IFLNK:
      return "a symbolic link";
    default:
      return "of an unknown type";
    }
}

int
img_open_typed(const char *path, int flags, mode_t type, const char *what, crest_error_t *err)
{
  struct stat st, st2;
  int pfd, fd;

  if (!img_path_ok(path))
    return crest_error_make(err, EINVAL, "restore: %s: path \"%.64s\" is not absolute", what,
                            path ? path : "");
  /* The check opens what the real open will: the link itself when that
     one does not follow it (an O_PATH|O_NOFOLLOW descriptor). */
  pfd = open_fsids(path, O_PATH | O_CLOEXEC | (flags & O_NOFOLLOW));
  if (pfd < 0)
    return crest_error_errno(err, "restore: %s %s", what, path);
  if (fstat(pfd, &st) < 0)
    {
      crest_error_errno(err, "restore: %s %s: stat", what, path);
      close(pfd);
      return -1;
    }
  close(pfd);
  if ((st.st_mode & S_IFMT) != type)
    return crest_error_make(err, EINVAL, "restore: %s %s is %s, the image says %s", what, path,
                            type_name(st.st_mode), type_name(type));
  if (type == S_IFCHR && (major(st.st_rdev) != 1 || (int)minor(st.st_rdev) != dev_minor(path)))
    return crest_error_make(err, EINVAL, "restore: %s %s is device %u:%u, not that memory device",
                            what, path, major(st.st_rdev), minor(st.st_rdev));
  fd = open_fsids(path, flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    return crest_error_errno(err, "restore: %s %s", what, path);
  if (fstat(fd, &st2) < 0 || st2.st_dev != st.st_dev || st2.st_ino != st.st_ino)
    {
      close(fd);
      return crest_error_make(err, ESTALE, "restore: %s %s changed while it was opened", what,
                              path);
    }
  /* An O_PATH descriptor has no status flags to clear (F_SETFL fails). */
  if (!(flags & (O_NONBLOCK | O_PATH)) && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0)
    {
      crest_error_errno(err, "restore: %s %s: clear O_NONBLOCK", what, path);
      close(fd);
      return -1;
    }
  return fd;
}

static int
cmp_pid(const void *a, const void *b)
{
  pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
  return (x > y) - (x < y);
}

int
img_ids_unique(pid_t *ids, size_t n, pid_t *dup)
{
  qsort(ids, n, sizeof *ids, cmp_pid);
  for (size_t i = 1; i < n; i++)
    if (ids[i] == ids[i - 1])
      {
        *dup = ids[i];
        return -1;
      }
  return 0;
}
