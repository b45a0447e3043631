/* crest: the /proc and file broker of a checkpoint (docs/engine.md, "Tasks
 * under another UID of the container").
 *
 * crest runs as the user who owns a rootless container's user namespace,
 * in the initial one, where it holds no capability. A file of a container
 * user (a subordinate ID on the host) of mode 0600, or under a directory of
 * mode 0700 (PostgreSQL's data directory), is closed to it. The owner of a
 * user namespace may enter it (setns needs CAP_SYS_ADMIN there, which the
 * owner holds) and then holds every capability over the IDs it maps:
 * CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH over exactly the container's
 * files. So an open denied to crest is asked of a child that entered the
 * tree's user namespace: it opens the path (relative to a directory crest
 * sends it, with the same openat2 resolution flags) and sends the
 * descriptor back (SCM_RIGHTS). The child is forked on the first denied
 * open of a checkpoint, is single-threaded with a file-system context of
 * its own (setns requires both), dies with its parent, and is stopped at
 * the end of the checkpoint (broker_stop). */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "dump-int.h"
#include "log.h"
#include "util.h"

struct broker_req
{
  uint64_t flags, mode, resolve;
  int has_dir;
  char path[PATH_MAX];
};

struct broker_ans
{
  int err;
};

static int broker_fd = -1;
static pid_t broker_pid;
static bool broker_failed;

/* Send BUF with descriptor FD (when >= 0) on socket S. */
static int
send_fd(int s, const void *buf, size_t len, int fd)
{
  struct iovec iov = { (void *)buf, len };
  union
  {
    char b[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } u;
  struct msghdr m;
  memset(&m, 0, sizeof m);
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  if (fd >= 0)
    {
      struct cmsghdr *cm;
      memset(&u, 0, sizeof u);
      m.msg_control = u.b;
      m.msg_controllen = sizeof u.b;
      cm = CMSG_FIRSTHDR(&m);
      cm->cmsg_level = SOL_SOCKET;
      cm->cmsg_type = SCM_RIGHTS;
      cm->cmsg_len = CMSG_LEN(sizeof(int));
      memcpy(CMSG_DATA(cm), &fd, sizeof fd);
    }
  return sendmsg(s, &m, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -1;
}

/* Receive into BUF and the descriptor that came with it (-1: none). */
static ssize_t
recv_fd(int s, void *buf, size_t len, int *fd)
{
  struct iovec iov = { buf, len };
  union
  {
    char b[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } u;
  struct msghdr m;
  struct cmsghdr *cm;
  ssize_t n;
  memset(&m, 0, sizeof m);
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = u.b;
  m.msg_controllen = sizeof u.b;
  *fd = -1;
  n = recvmsg(s, &m, MSG_CMSG_CLOEXEC);
  for (cm = n > 0 ? CMSG_FIRSTHDR(&m) : NULL; cm; cm = CMSG_NXTHDR(&m, cm))
    if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
      memcpy(fd, CMSG_DATA(cm), sizeof *fd);
  return n;
}

/* The child: enter the user namespace USERNS, then answer requests until
   crest closes its end. */
static void __attribute__((noreturn)) broker_serve(int s, int userns, pid_t parent)
{
  struct broker_req r;
  if (setns(userns, CLONE_NEWUSER) < 0)
    {
      struct broker_ans a = { errno };
      send_fd(s, &a, sizeof a, -1);
      _exit(1);
    }
  close(userns);
  /* Entering the namespace changed the credentials, which cleared the
     parent-death signal. */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent)
    _exit(1);
  {
    struct broker_ans a = { 0 };
    if (send_fd(s, &a, sizeof a, -1) < 0)
      _exit(1);
  }
  for (;;)
    {
      struct open_how how;
      struct broker_ans a = { 0 };
      int dir, fd = -1;
      ssize_t n = recv_fd(s, &r, sizeof r, &dir);
      if (n <= 0)
        _exit(0);
      if (n != sizeof r || (r.has_dir && dir < 0) || !memchr(r.path, 0, sizeof r.path))
        a.err = EINVAL;
      else
        {
          memset(&how, 0, sizeof how);
          how.flags = r.flags;
          how.mode = r.mode;
          how.resolve = r.resolve;
          fd = syscall(SYS_openat2, r.has_dir ? dir : AT_FDCWD, r.path, &how, sizeof how);
          a.err = fd < 0 ? errno : 0;
        }
      if (dir >= 0)
        close(dir);
      if (send_fd(s, &a, sizeof a, fd) < 0)
        _exit(1);
      if (fd >= 0)
        close(fd);
    }
}

static int
broker_start(pid_t task)
{
  int sv[2], userns, fd;
  struct broker_ans a;
  char path[64];
  pid_t self = getpid();
  snprintf(path, sizeof path, "/proc/%d/ns/user", task);
  userns = open(path, O_RDONLY | O_CLOEXEC);
  if (userns < 0)
    return -1;
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
    {
      close(userns);
      return -1;
    }
  broker_pid = fork();
  if (broker_pid == 0)
    {
      close(sv[0]);
      broker_serve(sv[1], userns, self);
    }
  close(sv[1]);
  close(userns);
  if (broker_pid < 0)
    {
      close(sv[0]);
      return -1;
    }
  broker_fd = sv[0];
  if (recv_fd(broker_fd, &a, sizeof a, &fd) != sizeof a || a.err)
    {
      crest_debug("checkpoint: the broker could not enter the tree's user namespace: %s",
                  strerror(a.err));
      broker_stop();
      errno = EACCES;
      return -1;
    }
  crest_debug("checkpoint: broker %d in the user namespace of task %d", broker_pid, task);
  return 0;
}

int
broker_openat2(pid_t task, int dir, const char *path, const struct open_how *how)
{
  struct broker_req r;
  struct broker_ans a;
  int fd;
  if (broker_failed || strlen(path) >= sizeof r.path)
    {
      errno = EACCES;
      return -1;
    }
  if (broker_fd < 0 && broker_start(task) < 0)
    {
      broker_failed = true;
      errno = EACCES;
      return -1;
    }
  memset(&r, 0, sizeof r);
  r.flags = how->flags;
  r.mode = how->mode;
  r.resolve = how->resolve;
  r.has_dir = dir >= 0;
  strcpy(r.path, path);
  if (send_fd(broker_fd, &r, sizeof r, dir) < 0
      || recv_fd(broker_fd, &a, sizeof a, &fd) != sizeof a)
    {
      errno = EIO;
      return -1;
    }
  if (a.err)
    {
      if (fd >= 0)
        close(fd);
      errno = a.err;
      return -1;
    }
  return fd;
}

void
broker_stop(void)
{
  if (broker_fd >= 0)
    close(broker_fd);
  broker_fd = -1;
  if (broker_pid > 0)
    {
      kill(broker_pid, SIGKILL);
      while (waitpid(broker_pid, NULL, 0) < 0 && errno == EINTR)
        ;
    }
  broker_pid = 0;
  broker_failed = false;
}
