/* crest: SysV IPC objects (shared memory segments, semaphore sets, message
 * queues) and POSIX message queues (docs/engine.md, "SysV IPC and POSIX
 * message queues"). None is restored yet; what a checkpoint would lose is
 * refused in one line:
 *   - a mapping of a SysV segment (maps: "/SYSV<key>", the shmid in the
 *     inode field). In the IPC namespace crest shares with the rest of the
 *     system (process mode) the segment is not the tree's to take along;
 *   - any object of an IPC namespace of the tree's own (a container's),
 *     counted by the tree's root itself with injected *_INFO calls (nothing
 *     else shows another namespace's objects: /proc/sysvipc lists the
 *     reader's), and the queues its /dev/mqueue lists;
 *   - a POSIX message queue descriptor (mq_open), in either mode. */
#include <config.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/magic.h>
#include "dump-int.h"
#include "util.h"

#ifndef MQUEUE_MAGIC
#define MQUEUE_MAGIC 0x19800202
#endif

/* Is task PID in another IPC namespace than crest (1), the same (0)? */
static int
own_ipc_ns(pid_t pid, crest_error_t *err)
{
  cleanup_free char *tp = xasprintf("/proc/%d/ns/ipc", pid);
  struct stat t, s;
  if (stat(tp, &t) < 0 || stat("/proc/self/ns/ipc", &s) < 0)
    return crest_error_errno(err, "task %d: stat its IPC namespace", pid);
  return t.st_dev != s.st_dev || t.st_ino != s.st_ino;
}

int
ipc_refuse_sysv_map(pid_t pid, uint64_t start, uint64_t end, const char *name, uint64_t shmid,
                    crest_error_t *err)
{
  unsigned key = 0;
  int own = own_ipc_ns(pid, err);
  if (own < 0)
    return -1;
  if (sscanf(name, "/SYSV%8x", &key) != 1)
    key = 0;
  return crest_error_make(err, ENOTSUP,
                          "task %d: mapping %" PRIx64 "-%" PRIx64
                          " of SysV shared memory segment %" PRIu64 " (key %#x): %s: cannot "
                          "checkpoint it",
                          pid, start, end, shmid, key,
                          own ? "SysV IPC of the tree's own IPC namespace is not restored yet"
                              : "the segment belongs to the IPC namespace crest shares with the "
                                "rest of the system, not to the checkpointed tree");
}

bool
ipc_is_mqueue(const char *fd_link_path)
{
  struct statfs sf;
  return statfs(fd_link_path, &sf) == 0 && sf.f_type == MQUEUE_MAGIC;
}

/* The first ID of a SysV kind in use up to index MAX (*_STAT_ANY answers
   the ID of a used index, EINVAL for a free one), or -1. */
static long
first_id(shm_inject_fn inject, void *ctx, long nr, long cmd, long max, uint64_t scratch,
         crest_error_t *err)
{
  for (long i = 0; i <= max && i < 32768; i++)
    {
      long a[6] = { i, nr == SYS_semctl ? 0 : cmd, nr == SYS_semctl ? cmd : (long)scratch,
                    (long)scratch };
      long ret;
      if (inject(ctx, nr, a, &ret, err) < 0)
        return -2;
      if (ret >= 0)
        return ret;
    }
  return -1;
}

/* The POSIX message queues the tree's /dev/mqueue lists: *N of them, the
   first one's name in FIRST. No mqueue file system there: nothing seen. */
static int
mqueues_in(struct dctx *c, struct dproc *root, size_t *n, char first[256], crest_error_t *err)
{
  crest_error_t e2 = NULL;
  struct statfs sf;
  struct dirent *de;
  int fd = open_in_root(c, root, "/dev/mqueue", O_RDONLY | O_DIRECTORY, &e2);
  DIR *d;

  *n = 0;
  crest_error_release(&e2);
  if (fd < 0)
    return 0;
  if (fstatfs(fd, &sf) < 0 || sf.f_type != MQUEUE_MAGIC || !(d = fdopendir(fd)))
    {
      close(fd);
      return 0;
    }
  while ((errno = 0, de = readdir(d)))
    if (de->d_name[0] != '.' && (*n)++ == 0)
      {
        size_t l = strnlen(de->d_name, 254);
        first[0] = '/';
        memcpy(first + 1, de->d_name, l);
        first[l + 1] = 0;
      }
  if (errno)
    (void)crest_error_errno(err, "task %d: read /dev/mqueue", root->pid);
  closedir(d);
  return errno ? -1 : 0;
}

int
ipc_check_ns(struct dctx *c, struct dproc *root, shm_inject_fn inject, void *ctx, uint64_t scratch,
             crest_error_t *err)
{
  static const struct
  {
    const char *what;
    long nr, info, stat_any;
    int count_at; /* the int of the *_INFO answer that counts objects in use */
  } kinds[] = {
    { "shared memory segment", SYS_shmctl, SHM_INFO, SHM_STAT_ANY, 0 },
    { "semaphore set", SYS_semctl, SEM_INFO, SEM_STAT_ANY, 7 /* semusz */ },
    { "message queue", SYS_msgctl, MSG_INFO, MSG_STAT_ANY, 0 /* msgpool */ },
  };
  char held[512] = "", mq[256] = "";
  size_t len = 0, nmq = 0;
  int own = own_ipc_ns(root->pid, err);

  if (own <= 0)
    return own;
  for (size_t k = 0; k < ARRAY_SIZE(kinds); k++)
    {
      bool sem = kinds[k].nr == SYS_semctl;
      long a[6]
          = { 0, sem ? 0 : kinds[k].info, sem ? kinds[k].info : (long)scratch, (long)scratch };
      long max, id;
      int32_t info[10];
      if (inject(ctx, kinds[k].nr, a, &max, err) < 0)
        return -1;
      if (max == -ENOSYS)
        return 0; /* a kernel without SysV IPC */
      if (max < 0)
        return crest_error_make(err, (int)-max, "task %d: injected %s info", root->pid,
                                kinds[k].what);
      if (vm_read(root->pid, scratch, info, sizeof info, err) < 0)
        return -1;
      if (info[kinds[k].count_at] <= 0)
        continue;
      id = first_id(inject, ctx, kinds[k].nr, kinds[k].stat_any, max, scratch, err);
      if (id < -1)
        return -1;
      len += snprintf(held + len, sizeof held - len, "%sSysV %s %ld (%d in all)", len ? ", " : "",
                      kinds[k].what, id, info[kinds[k].count_at]);
    }
  if (mqueues_in(c, root, &nmq, mq, err) < 0)
    return -1;
  if (nmq)
    snprintf(held + len, sizeof held - len, "%sPOSIX message queue %s (%zu in all)",
             len ? ", " : "", mq, nmq);
  if (!held[0])
    return 0;
  return crest_error_make(err, ENOTSUP,
                          "task %d: its IPC namespace holds %s, which crest does not restore yet: "
                          "cannot checkpoint it",
                          root->pid, held);
}
