/* zdtm-nonroot: tasks under a non-root UID of the container (issue 12).
 * The root stays the container's root; two children switch to UID and
 * GID 1000 with the supplementary groups 1001 and 1002, as a service
 * that drops its privileges does: one sets itself dumpable again (nginx's
 * workers do, after setuid), the other stays non-dumpable (the kernel's
 * choice after a change of UID). Each then creates a file of mode 0600,
 * writes a pattern and leaves the offset in the middle, fills a region of
 * private memory and leaves bytes unread in a pipe of its own.
 *
 * After restore each child checks its real, effective, saved and file
 * system IDs, its groups, its capability sets (all empty, as setresuid
 * left them), its dumpable flag, its file (owner, mode, offset, bytes),
 * its memory and its pipe, and that a file it creates now is its own;
 * each also listens on a unix socket bound to a path (mode 0600) in a
 * directory of mode 0700, whose file must be its own after restore and let
 * it connect (until December 2026 the restore bound it as the container's
 * root, and the owner could not connect; or, not seen through the closed
 * directory, left it out as unlinked).
 * The container's config must give CAP_SETUID and CAP_SETGID, and its user
 * namespace must map 1000-1002. /tmp (the working directory) must be
 * writable by UID 1000: the children write their verdicts there. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define ID 1000
#define FILE_LEN 8192
#define FILE_OFF 3000
#define MEM_LEN (1 << 20)
#define PIPE_LEN 1000

static void
check_ids(int k)
{
  uid_t r, e, s;
  gid_t rg, eg, sg, groups[8];
  int n;
  if (getresuid(&r, &e, &s) < 0 || r != ID || e != ID || s != ID)
    zdtm_fail("child %d: UIDs (expected %d %d %d, got %d %d %d)", k, ID, ID, ID, r, e, s);
  if (getresgid(&rg, &eg, &sg) < 0 || rg != ID || eg != ID || sg != ID)
    zdtm_fail("child %d: GIDs (expected %d %d %d, got %d %d %d)", k, ID, ID, ID, rg, eg, sg);
  /* setfsuid answers the previous value whatever it does: ask for the
     current one. */
  if ((r = setfsuid(-1)) != ID || (rg = setfsgid(-1)) != ID)
    zdtm_fail("child %d: file system IDs (expected %d:%d, got %d:%d)", k, ID, ID, r, rg);
  n = getgroups(8, groups);
  if (n != 2 || groups[0] != ID + 1 || groups[1] != ID + 2)
    zdtm_fail("child %d: supplementary groups (expected 2: %d %d, got %d: %d %d)", k, ID + 1,
              ID + 2, n, n > 0 ? (int)groups[0] : -1, n > 1 ? (int)groups[1] : -1);
  {
    struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct d[2];
    if (syscall(SYS_capget, &h, d) < 0)
      zdtm_fail("child %d: capget: %s", k, strerror(errno));
    else if (d[0].effective | d[1].effective | d[0].permitted | d[1].permitted | d[0].inheritable
             | d[1].inheritable)
      zdtm_fail("child %d: capabilities (expected none, got eff %#x%08x prm %#x%08x inh %#x%08x)",
                k, d[1].effective, d[0].effective, d[1].permitted, d[0].permitted, d[1].inheritable,
                d[0].inheritable);
    for (int cap = 0; cap < 64; cap++)
      if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, cap, 0, 0) == 1)
        zdtm_fail("child %d: ambient capability %d set", k, cap);
  }
}

static void
check_file(int k, int fd)
{
  struct stat st;
  static uint8_t buf[FILE_LEN];
  off_t off = lseek(fd, 0, SEEK_CUR);
  if (fstat(fd, &st) < 0)
    zdtm_fail("child %d: fstat: %s", k, strerror(errno));
  else if (st.st_uid != ID || st.st_gid != ID || (st.st_mode & 07777) != 0600)
    zdtm_fail("child %d: file owner and mode (expected %d:%d 0600, got %d:%d %04o)", k, ID, ID,
              st.st_uid, st.st_gid, st.st_mode & 07777);
  if (off != FILE_OFF)
    zdtm_fail("child %d: file offset (expected %d, got %ld)", k, FILE_OFF, (long)off);
  if (pread(fd, buf, FILE_LEN, 0) != FILE_LEN)
    zdtm_fail("child %d: read the file: %s", k, strerror(errno));
  else if (zdtm_check(buf, FILE_LEN, 60 + k, 0) != (size_t)-1)
    zdtm_fail("child %d: file byte %zu differs", k, zdtm_check(buf, FILE_LEN, 60 + k, 0));
  /* Reading and writing at the offset still work. */
  if (read(fd, buf, 10) != 10 || zdtm_check(buf, 10, 60 + k, FILE_OFF) != (size_t)-1)
    zdtm_fail("child %d: read at the offset", k);
}

static void
check_new_file(int k)
{
  char name[32];
  struct stat st;
  int fd;
  snprintf(name, sizeof name, "nonroot.new.%d", k);
  unlink(name);
  fd = open(name, O_CREAT | O_EXCL | O_WRONLY, 0600);
  if (fd < 0 || fstat(fd, &st) < 0)
    zdtm_fail("child %d: create %s after restore: %s", k, name, strerror(errno));
  else if (st.st_uid != ID || st.st_gid != ID)
    zdtm_fail("child %d: a file created after restore belongs to %d:%d, not %d:%d", k, st.st_uid,
              st.st_gid, ID, ID);
  if (fd >= 0)
    close(fd);
  unlink(name);
}

static socklen_t
sock_addr(int k, struct sockaddr_un *a)
{
  memset(a, 0, sizeof *a);
  a->sun_family = AF_UNIX;
  snprintf(a->sun_path, sizeof a->sun_path, "nonroot.dir.%d/sock", k);
  return sizeof *a;
}

static int
listen_own(int k)
{
  struct sockaddr_un a;
  socklen_t len = sock_addr(k, &a);
  int l = socket(AF_UNIX, SOCK_STREAM, 0);
  char dir[32];
  /* In a directory only its user may enter (Postfix's public/): crest,
     outside, may not look in (until December 2026 the socket was then
     taken for unlinked, and restored without its file). */
  snprintf(dir, sizeof dir, "nonroot.dir.%d", k);
  unlink(a.sun_path);
  rmdir(dir);
  if (mkdir(dir, 0700) < 0)
    zdtm_error("child %d: mkdir %s: %s", k, dir, strerror(errno));
  if (l < 0 || bind(l, (struct sockaddr *)&a, len) < 0 || chmod(a.sun_path, 0600) < 0
      || listen(l, 4) < 0)
    zdtm_error("child %d: a unix listener on %s: %s", k, a.sun_path, strerror(errno));
  return l;
}

static void
check_sock(int k, int l)
{
  struct sockaddr_un a;
  socklen_t len = sock_addr(k, &a);
  struct stat st;
  int c = socket(AF_UNIX, SOCK_STREAM, 0), s = -1;
  if (lstat(a.sun_path, &st) < 0 || st.st_uid != ID || st.st_gid != ID
      || (st.st_mode & 07777) != 0600)
    zdtm_fail("child %d: socket file %s: %s, owner %d:%d mode %#o (expected %d:%d 0600)", k,
              a.sun_path, strerror(errno), st.st_uid, st.st_gid, st.st_mode & 07777, ID, ID);
  if (c < 0 || connect(c, (struct sockaddr *)&a, len) < 0 || (s = accept(l, NULL, NULL)) < 0)
    zdtm_fail("child %d: connect to its own listener %s: %s", k, a.sun_path, strerror(errno));
  if (c >= 0)
    close(c);
  if (s >= 0)
    close(s);
  unlink(a.sun_path);
  *strrchr(a.sun_path, '/') = 0;
  rmdir(a.sun_path);
}

static void __attribute__((noreturn)) child(int k, int sync)
{
  static const gid_t groups[] = { ID + 1, ID + 2 };
  static uint8_t filebuf[FILE_LEN], pbuf[PIPE_LEN];
  char name[32];
  uint8_t *mem;
  int fd, p[2], l, dumpable = k == 0;

  if (setgroups(2, groups) < 0 || setresgid(ID, ID, ID) < 0 || setresuid(ID, ID, ID) < 0)
    zdtm_error("child %d: setgroups/setresgid/setresuid %d: %s", k, ID, strerror(errno));
  if (dumpable && prctl(PR_SET_DUMPABLE, 1) < 0)
    zdtm_error("child %d: PR_SET_DUMPABLE: %s", k, strerror(errno));
  snprintf(name, sizeof name, "nonroot.%d", k);
  unlink(name);
  fd = open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0)
    zdtm_error("child %d: create %s: %s", k, name, strerror(errno));
  zdtm_fill(filebuf, FILE_LEN, 60 + k, 0);
  if (write(fd, filebuf, FILE_LEN) != FILE_LEN || lseek(fd, FILE_OFF, SEEK_SET) != FILE_OFF)
    zdtm_error("child %d: write %s: %s", k, name, strerror(errno));
  mem = mmap(NULL, MEM_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED)
    zdtm_error("child %d: mmap: %s", k, strerror(errno));
  zdtm_fill(mem, MEM_LEN, 70 + k, 0);
  if (pipe(p) < 0)
    zdtm_error("child %d: pipe: %s", k, strerror(errno));
  zdtm_fill(pbuf, PIPE_LEN, 80 + k, 0);
  if (write(p[1], pbuf, PIPE_LEN) != PIPE_LEN)
    zdtm_error("child %d: write pipe: %s", k, strerror(errno));
  l = listen_own(k);
  if (write(sync, "r", 1) != 1)
    zdtm_error("child %d: report ready: %s", k, strerror(errno));
  close(sync);

  zdtm_wait();

  check_ids(k);
  if (prctl(PR_GET_DUMPABLE) != dumpable)
    zdtm_fail("child %d: dumpable (expected %d, got %d)", k, dumpable, prctl(PR_GET_DUMPABLE));
  check_file(k, fd);
  if (zdtm_check(mem, MEM_LEN, 70 + k, 0) != (size_t)-1)
    zdtm_fail("child %d: memory byte %zu differs", k, zdtm_check(mem, MEM_LEN, 70 + k, 0));
  fcntl(p[0], F_SETFL, O_NONBLOCK);
  memset(pbuf, 0, sizeof pbuf);
  if (read(p[0], pbuf, PIPE_LEN) != PIPE_LEN || zdtm_check(pbuf, PIPE_LEN, 80 + k, 0) != (size_t)-1)
    zdtm_fail("child %d: the pipe's %d unread bytes", k, PIPE_LEN);
  else if (read(p[0], pbuf, 1) != -1 || errno != EAGAIN)
    zdtm_fail("child %d: the pipe holds more than its %d bytes", k, PIPE_LEN);
  check_new_file(k);
  check_sock(k, l);
  unlink(name);
  _exit(zdtm_status());
}

/* A third child keeps root's effective IDs under real IDs of ID (Squid's
   master: setresuid(nobody, 0, 0)): its user keyrings are ID's, which the
   checkpoint reads through the thread's own keyring specs (by number it
   may not: refused until December 2026). */
static void __attribute__((noreturn)) mixed_child(int sync)
{
  uid_t r, e, s;
  gid_t rg, eg, sg;
  if (setresgid(ID, 0, 0) < 0 || setresuid(ID, 0, 0) < 0)
    zdtm_error("child 2: setresuid(%d, 0, 0): %s", ID, strerror(errno));
  if (write(sync, "r", 1) != 1)
    zdtm_error("child 2: report ready: %s", strerror(errno));
  close(sync);
  zdtm_wait();
  if (getresuid(&r, &e, &s) < 0 || r != ID || e != 0 || s != 0)
    zdtm_fail("child 2: UIDs (expected %d 0 0, got %d %d %d)", ID, r, e, s);
  if (getresgid(&rg, &eg, &sg) < 0 || rg != ID || eg != 0 || sg != 0)
    zdtm_fail("child 2: GIDs (expected %d 0 0, got %d %d %d)", ID, rg, eg, sg);
  _exit(zdtm_status());
}

int
main(int argc, char **argv)
{
  pid_t kids[3];
  int sync[2];
  char c;
  zdtm_init(argc, argv);
  if (getuid() != 0)
    zdtm_error("must start as the container's root (it is UID %d)", getuid());
  if (pipe(sync) < 0)
    zdtm_error("pipe: %s", strerror(errno));
  for (int k = 0; k < 3; k++)
    {
      kids[k] = fork();
      if (kids[k] < 0)
        zdtm_error("fork: %s", strerror(errno));
      if (kids[k] == 0)
        {
          close(sync[0]);
          if (k == 2)
            mixed_child(sync[1]);
          child(k, sync[1]);
        }
    }
  close(sync[1]);
  for (int k = 0; k < 3; k++)
    if (read(sync[0], &c, 1) != 1)
      zdtm_error("a child failed to set up");
  close(sync[0]);
  zdtm_ready();
  zdtm_wait();
  for (int k = 0; k < 3; k++)
    {
      int st;
      kill(kids[k], SIGTERM);
      if (waitpid(kids[k], &st, 0) != kids[k] || !WIFEXITED(st) || WEXITSTATUS(st))
        zdtm_fail("child %d ended with status 0x%x", kids[k], st);
    }
  zdtm_finish();
}
