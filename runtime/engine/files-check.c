/* crest: what a descriptor carries that crest does not restore, refused at
 * checkpoint with one line (anonymous inodes other than the event
 * descriptors, fanotify among them); its locks are read here (locks.c)
 * (docs/engine.md, "Descriptors"). Called for each new open file
 * description before dump.c records it. */
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
#include "files.h"
#include "util.h"

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

int
files_check_fd(pid_t pid, int fd, const char *link, const struct stat *st, struct lock_set *locks,
               crest_error_t *err)
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
  if (locks_read(pid, fd, info, link, locks, err) < 0)
    return -1;
  if (locks->n && !S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode))
    return crest_error_make(err, ENOTSUP,
                            "task %d: fd %d (%s): a lock on a file that is neither regular nor a "
                            "directory is not restored: cannot checkpoint it",
                            pid, fd, link);
  if (S_ISFIFO(st->st_mode) && (flags & O_DIRECT))
    return crest_error_make(err, ENOTSUP,
                            "task %d: fd %d (%s): a packet-mode pipe (O_DIRECT) is not restored: "
                            "cannot checkpoint it",
                            pid, fd, link);
  if (strcmp(link, "anon_inode:[fanotify]") == 0)
    return crest_error_make(err, ENOTSUP,
                            "task %d: fd %d (%s): fanotify marks are not restored yet: cannot "
                            "checkpoint it",
                            pid, fd, link);
  if (strncmp(link, "anon_inode:", 11) == 0 && !evfd_kind(link) && !pidfd_link(link))
    return crest_error_make(err, ENOTSUP,
                            "task %d: fd %d (%s): %s is not supported: cannot "
                            "checkpoint it",
                            pid, fd, link, "this kind of descriptor");
  if (flags & O_PATH && !S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode)
      && !(S_ISLNK(st->st_mode) && (flags & O_NOFOLLOW)))
    return crest_error_make(err, ENOTSUP,
                            "task %d: fd %d (%s): an O_PATH descriptor of a %s is not supported: "
                            "cannot checkpoint it",
                            pid, fd, link,
                            S_ISLNK(st->st_mode)    ? "symlink"
                            : S_ISFIFO(st->st_mode) ? "FIFO"
                            : S_ISCHR(st->st_mode)  ? "character device"
                                                    : "special file");
  /* EAGAIN: such a file is often held for a moment only (redis reads its
     memory use in /proc/PID/stat every 100 ms), and the checkpoint is
     tried again (dump-guard.c). */
  if (task_proc_path(link) && statfs(lpath, &sf) == 0 && sf.f_type == PROC_SUPER_MAGIC)
    return crest_error_make(err, EAGAIN,
                            "task %d: fd %d (%s): a file in /proc of a task is not supported "
                            "(restore would open it before that task exists): cannot checkpoint "
                            "it",
                            pid, fd, link);
  if (strncmp(link, "/secretmem", 10) == 0 && statfs(lpath, &sf) == 0
      && sf.f_type == SECRETMEM_MAGIC)
    return crest_error_make(err, ENOTSUP,
                            "task %d: fd %d (%s): memory of memfd_secret, which no other process "
                            "may read, crest included: cannot checkpoint it",
                            pid, fd, link);
  if (S_ISREG(st->st_mode) && ipc_is_mqueue(lpath))
    return crest_error_make(err, ENOTSUP,
                            "task %d: fd %d (%s): a POSIX message queue (mq_open) is not restored "
                            "yet: cannot checkpoint it",
                            pid, fd, link);
  if (shows_deleted(link) && S_ISFIFO(st->st_mode))
    return crest_error_make(err, ENOTSUP,
                            "task %d: fd %d (%s): a deleted FIFO is not supported: cannot "
                            "checkpoint it",
                            pid, fd, link);
  return 0;
}
