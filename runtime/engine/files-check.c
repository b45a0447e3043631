/* crest: what a descriptor carries that crest does not restore, refused at
 * checkpoint with one line (docs/engine.md, "Descriptors"). Called for each
 * new open file description before dump.c records it. */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include "engine-int.h"
#include "util.h"

/* The first "lock:" line of fdinfo FDINFO, or NULL. The kernel lists there
   every lock whose owner is this descriptor's open file description (flock,
   OFD locks, leases) or the task's file table (POSIX record locks). */
static const char *
lock_line(const char *fdinfo)
{
  const char *s = strstr(fdinfo, "\nlock:");
  return s ? s + 1 : NULL;
}

static const char *
lock_kind(const char *line)
{
  if (strstr(line, "LEASE") || strstr(line, "BREAKING") || strstr(line, "BREAKER"))
    return "a lease (F_SETLEASE)";
  if (strstr(line, "FLOCK"))
    return "a flock() lock";
  if (strstr(line, "OFDLCK"))
    return "an open file description lock (F_OFD_SETLK)";
  return "a POSIX record lock (F_SETLK)";
}

/* /proc/N or below, for a number N: a task's own files, which name a PID
   restore cannot open before that task exists. */
static bool
task_proc_path(const char *link)
{
  const char *s = link;
  if (strncmp(s, "/proc/", 6) != 0)
    return false;
  s += 6;
  if (*s < '0' || *s > '9')
    return false;
  while (*s >= '0' && *s <= '9')
    s++;
  return *s == '/' || *s == 0;
}

static bool
deleted(const char *link)
{
  size_t l = strlen(link);
  return l > 10 && strcmp(link + l - 10, " (deleted)") == 0;
}

int
files_check_fd(pid_t pid, int fd, const char *link, const struct stat *st, crest_error_t *err)
{
  cleanup_free char *path = xasprintf("/proc/%d/fdinfo/%d", pid, fd);
  cleanup_free char *lpath = xasprintf("/proc/%d/fd/%d", pid, fd);
  struct statfs sf;
  cleanup_free char *info = NULL;
  const char *s;
  size_t len;
  int flags = 0;

  if (read_file(path, &info, &len, 0, err) < 0)
    return -1;
  if ((s = strstr(info, "flags:")))
    flags = (int)strtol(s + 6, NULL, 8);
  if ((s = lock_line(info)))
    {
      char line[160];
      snprintf(line, sizeof line, "%.*s", (int)strcspn(s, "\n"), s);
      return crest_error_make(err, ENOTSUP,
                              "task %d: fd %d (%s): holds %s (%s), which crest does not restore "
                              "yet: cannot checkpoint it",
                              pid, fd, link, lock_kind(s), line);
    }
  if (flags & O_ASYNC)
    return crest_error_make(err, ENOTSUP,
                            "task %d: fd %d (%s): O_ASYNC (signal-driven I/O) is not restored: "
                            "cannot checkpoint it",
                            pid, fd, link);
  if (S_ISFIFO(st->st_mode) && (flags & O_DIRECT))
    return crest_error_make(err, ENOTSUP,
                            "task %d: fd %d (%s): a packet-mode pipe (O_DIRECT) is not restored: "
                            "cannot checkpoint it",
                            pid, fd, link);
  if (strncmp(link, "anon_inode:", 11) == 0 || strncmp(link, "pidfd:", 6) == 0)
    return crest_error_make(err, ENOTSUP,
                            "task %d: fd %d (%s): %s is not supported: cannot "
                            "checkpoint it",
                            pid, fd, link,
                            strstr(link, "pidfd") ? "a pidfd" : "this kind of descriptor");
  if (flags & O_PATH && !S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode))
    return crest_error_make(err, ENOTSUP,
                            "task %d: fd %d (%s): an O_PATH descriptor of a %s is not supported: "
                            "cannot checkpoint it",
                            pid, fd, link,
                            S_ISLNK(st->st_mode)    ? "symlink"
                            : S_ISFIFO(st->st_mode) ? "FIFO"
                            : S_ISCHR(st->st_mode)  ? "character device"
                                                    : "special file");
  if (task_proc_path(link) && statfs(lpath, &sf) == 0 && sf.f_type == PROC_SUPER_MAGIC)
    return crest_error_make(err, ENOTSUP,
                            "task %d: fd %d (%s): a file in /proc of a task is not supported "
                            "(restore would open it before that task exists): cannot checkpoint "
                            "it",
                            pid, fd, link);
  if (deleted(link) && S_ISDIR(st->st_mode))
    return crest_error_make(err, ENOTSUP,
                            "task %d: fd %d (%s): a deleted directory is not supported: cannot "
                            "checkpoint it",
                            pid, fd, link);
  if (deleted(link) && S_ISFIFO(st->st_mode))
    return crest_error_make(err, ENOTSUP,
                            "task %d: fd %d (%s): a deleted FIFO is not supported: cannot "
                            "checkpoint it",
                            pid, fd, link);
  return 0;
}
