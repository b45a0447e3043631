/* zdtm-chroot: processes whose root directory is not the tree's (chroot).
 *
 *   root R: makes D = ./zdtm-chroot.XXXXXX with a marker file at its top and
 *           D/sub/data (8 KiB of a pattern), opens D/sub/data at offset 1234,
 *           keeps descriptors of the real root and of its start directory,
 *           forks U, then chdir D/sub and chroot D (needs CAP_SYS_CHROOT:
 *           `unshare -Urpf` gives it, a container's config must), then
 *           forks C
 *   U:      forked before the chroot: keeps the real root
 *   C:      inherits the chroot, opens /sub/cfile (a path inside it) at
 *           offset 77, then fchdir's to the start directory: its cwd lies
 *           outside its root
 *
 * After restore each checks its own state:
 *   R: "/" and "/.." are D (at a chroot's top ".." is itself), /marker holds
 *      its token, getcwd is /sub and "." is D/sub, the data descriptor is at
 *      1234, on the inode /sub/data names, with the bytes written there;
 *   C: "/" is D, /marker holds its token, "." is the start directory and
 *      getcwd finds no path to it (it lies outside the root), its cfile
 *      descriptor is at 77 on the inode /sub/cfile names;
 *   U: "/" is the real root (no marker there), "." is the start directory.
 * R forwards SIGTERM to C and U and reports a child that did not exit 0.
 * READY and RESULT are reached through the real root's descriptor
 * (zdtm_paths_from), since they lie outside the chroot.
 *
 * ZDTM_CHROOT_REFUSE=deleted or covered adds a child X, forked before R's
 * chroot, that chroots into an empty directory E of the start directory
 * which is then removed (deleted) or has a tmpfs mounted over it by R
 * (covered: R needs the right to mount, as in `unshare -Urpf --mount-proc`).
 * No path leads to X's root any more: a checkpoint must refuse the tree and
 * leave it running; the rest is checked as above. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MARKER "zdtm-chroot-marker"
#define DATA_LEN 8192
#define DATA_POS 1234
#define CFILE_LEN 300
#define CFILE_POS 77

static char token[64];
static pid_t kids[3]; /* R's children so far, killed when R's setup fails */
static struct stat st_d, st_sub, st_start, st_realroot;

static bool
same(const struct stat *a, const struct stat *b)
{
  return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

static void
check_dir(const char *who, const char *path, const struct stat *want, const char *what)
{
  struct stat st;
  if (stat(path, &st) < 0)
    zdtm_fail("%s: stat %s: %s", who, path, strerror(errno));
  else if (!same(&st, want))
    zdtm_fail("%s: %s is not %s (expected dev %lu inode %lu, got dev %lu inode %lu)", who, path,
              what, (unsigned long)want->st_dev, (unsigned long)want->st_ino,
              (unsigned long)st.st_dev, (unsigned long)st.st_ino);
}

/* The marker at "/" holds the token: the root is D. */
static void
check_marker(const char *who)
{
  char buf[64] = "";
  int fd = open("/" MARKER, O_RDONLY | O_CLOEXEC);
  ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
  if (fd >= 0)
    close(fd);
  if (n < 0)
    zdtm_fail("%s: /%s: %s (the root is not the chroot's)", who, MARKER, strerror(errno));
  else if (strcmp(buf, token) != 0)
    zdtm_fail("%s: /%s: expected \"%s\", got \"%.*s\"", who, MARKER, token, (int)n, buf);
}

/* A descriptor's offset, its file (the one PATH names) and LEN bytes of its
   pattern from the offset on. */
static void
check_file(const char *who, int fd, const char *path, off_t want_pos, uint32_t seed, size_t len)
{
  struct stat a, b;
  off_t pos = lseek(fd, 0, SEEK_CUR);
  char buf[256];
  ssize_t n;
  size_t bad;
  if (pos != want_pos)
    zdtm_fail("%s: offset of %s: expected %lld, got %lld", who, path, (long long)want_pos,
              (long long)pos);
  if (fstat(fd, &a) < 0 || stat(path, &b) < 0)
    zdtm_fail("%s: stat %s: %s", who, path, strerror(errno));
  else if (!same(&a, &b))
    zdtm_fail("%s: the descriptor is not on %s (inode %lu, %s is %lu)", who, path,
              (unsigned long)a.st_ino, path, (unsigned long)b.st_ino);
  n = pread(fd, buf, sizeof buf < len - (size_t)want_pos ? sizeof buf : len - (size_t)want_pos,
            want_pos);
  if (n <= 0)
    zdtm_fail("%s: read %s at %lld: %s", who, path, (long long)want_pos,
              n < 0 ? strerror(errno) : "end of file");
  else if ((bad = zdtm_check(buf, (size_t)n, seed, (uint64_t)want_pos)) != (size_t)-1)
    zdtm_fail("%s: %s: byte %lld differs", who, path, (long long)(want_pos + bad));
}

static void
write_pattern(const char *path, size_t len, uint32_t seed)
{
  char *buf = malloc(len);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (!buf || fd < 0)
    zdtm_error("create %s: %s", path, strerror(errno));
  zdtm_fill(buf, len, seed, 0);
  if (write(fd, buf, len) != (ssize_t)len || close(fd) < 0)
    zdtm_error("write %s: %s", path, strerror(errno));
  free(buf);
}

/* A child of R: tell R it is set up (one byte on SYNC), wait for SIGTERM. */
static void
child_ready(int sync)
{
  if (write(sync, "x", 1) != 1)
    zdtm_error("child %d: sync: %s", (int)getpid(), strerror(errno));
  close(sync);
  zdtm_wait();
}

static void __attribute__((noreturn)) run_u(int sync)
{
  char want[4096], got[4096];
  if (!getcwd(want, sizeof want))
    zdtm_error("U: getcwd: %s", strerror(errno));
  child_ready(sync);
  check_dir("U (not chroot'd)", "/", &st_realroot, "the real root");
  if (access("/" MARKER, F_OK) == 0)
    zdtm_fail("U (not chroot'd): /%s exists: its root is the chroot's", MARKER);
  check_dir("U (not chroot'd)", ".", &st_start, "the start directory");
  if (!getcwd(got, sizeof got) || strcmp(got, want) != 0)
    zdtm_fail("U (not chroot'd): cwd: expected %s, got %s", want,
              getcwd(got, sizeof got) ? got : strerror(errno));
  exit(zdtm_status());
}

static void __attribute__((noreturn)) run_c(int sync, int startfd)
{
  char buf[4096];
  int fd;
  write_pattern("/sub/cfile", CFILE_LEN, 99);
  fd = open("/sub/cfile", O_RDWR | O_CLOEXEC);
  if (fd < 0 || lseek(fd, CFILE_POS, SEEK_SET) != CFILE_POS)
    zdtm_error("C: open /sub/cfile: %s", strerror(errno));
  if (fchdir(startfd) < 0)
    zdtm_error("C: fchdir to the start directory: %s", strerror(errno));
  if (getcwd(buf, sizeof buf) && buf[0] == '/')
    zdtm_error("C: getcwd found %s for a directory outside the root", buf);
  child_ready(sync);
  check_dir("C (chroot'd)", "/", &st_d, "the chroot directory");
  check_marker("C (chroot'd)");
  check_dir("C (chroot'd)", ".", &st_start, "the start directory");
  if (getcwd(buf, sizeof buf) && buf[0] == '/')
    zdtm_fail("C (chroot'd): getcwd: expected no path (the cwd lies outside the root), got %s",
              buf);
  check_file("C (chroot'd)", fd, "/sub/cfile", CFILE_POS, 99, CFILE_LEN);
  exit(zdtm_status());
}

/* X: chroot into E (a directory of the start directory, empty), then, for
   "deleted", remove E. Waits for SIGTERM; checks nothing. */
static void __attribute__((noreturn)) run_x(int sync, int startfd, const char *e, bool deleted)
{
  if (chdir(e) < 0 || chroot(".") < 0)
    zdtm_error("X: chroot %s: %s", e, strerror(errno));
  if (deleted && unlinkat(startfd, e, AT_REMOVEDIR) < 0)
    zdtm_error("X: rmdir %s: %s", e, strerror(errno));
  child_ready(sync);
  exit(zdtm_status());
}

/* R's setup failed after it forked: its children go too. */
static void __attribute__((noreturn, format(printf, 1, 2))) setup_error(const char *fmt, ...)
{
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  for (size_t i = 0; i < sizeof kids / sizeof kids[0]; i++)
    if (kids[i] > 0)
      kill(kids[i], SIGKILL);
  zdtm_error("%s", msg);
}

static void
reap(const char *name, pid_t pid)
{
  int st;
  kill(pid, SIGTERM);
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR)
      {
        zdtm_fail("R: waitpid %s (%d): %s", name, (int)pid, strerror(errno));
        return;
      }
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    zdtm_fail("R: child %s (%d) ended with status 0x%x", name, (int)pid, st);
}

int
main(int argc, char **argv)
{
  char dir[] = "zdtm-chroot.XXXXXX", path[4400], buf[4096], dabs[4200];
  int rootfd, startfd, datafd, sync[2];
  pid_t u, c, x = 0;
  const char *refuse = getenv("ZDTM_CHROOT_REFUSE");

  zdtm_init(argc, argv);
  rootfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  startfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (rootfd < 0 || startfd < 0 || fstat(rootfd, &st_realroot) < 0 || fstat(startfd, &st_start) < 0)
    zdtm_error("open / and .: %s", strerror(errno));
  zdtm_paths_from(rootfd);
  if (!mkdtemp(dir) || stat(dir, &st_d) < 0)
    zdtm_error("mkdtemp: %s", strerror(errno));
  snprintf(token, sizeof token, "zdtm-chroot %d", (int)getpid());
  snprintf(path, sizeof path, "%s/%s", dir, MARKER);
  {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, token, strlen(token)) != (ssize_t)strlen(token) || close(fd) < 0)
      zdtm_error("write %s: %s", path, strerror(errno));
  }
  if (refuse && strcmp(refuse, "deleted") != 0 && strcmp(refuse, "covered") != 0)
    zdtm_error("ZDTM_CHROOT_REFUSE=%s: expected deleted or covered", refuse);
  snprintf(path, sizeof path, "%s/sub", dir);
  if (mkdir(path, 0755) < 0 || stat(path, &st_sub) < 0)
    zdtm_error("mkdir %s: %s", path, strerror(errno));
  snprintf(path, sizeof path, "%s/sub/data", dir);
  write_pattern(path, DATA_LEN, 7);
  datafd = open(path, O_RDWR | O_CLOEXEC);
  if (datafd < 0 || lseek(datafd, DATA_POS, SEEK_SET) != DATA_POS)
    zdtm_error("open %s: %s", path, strerror(errno));

  if (pipe2(sync, O_CLOEXEC) < 0)
    zdtm_error("pipe: %s", strerror(errno));
  u = fork();
  if (u < 0)
    zdtm_error("fork: %s", strerror(errno));
  if (u == 0)
    {
      close(sync[0]);
      run_u(sync[1]);
    }
  kids[0] = u;
  if (refuse)
    {
      char e[] = "zdtm-chroot-x.XXXXXX";
      int xs[2];
      if (!mkdtemp(e) || pipe2(xs, O_CLOEXEC) < 0)
        setup_error("mkdtemp, pipe: %s", strerror(errno));
      x = fork();
      if (x < 0)
        setup_error("fork: %s", strerror(errno));
      if (x == 0)
        {
          close(sync[0]);
          close(sync[1]);
          close(xs[0]);
          run_x(xs[1], startfd, e, strcmp(refuse, "deleted") == 0);
        }
      kids[1] = x;
      close(xs[1]);
      if (read(xs[0], buf, 1) != 1)
        setup_error("X did not get ready");
      close(xs[0]);
      if (strcmp(refuse, "covered") == 0 && mount("tmpfs", e, "tmpfs", 0, "size=64k") < 0)
        setup_error("mount a tmpfs over %s: %s", e, strerror(errno));
    }
  if (!getcwd(buf, sizeof buf))
    setup_error("getcwd: %s", strerror(errno));
  snprintf(dabs, sizeof dabs, "%s/%s", strcmp(buf, "/") ? buf : "", dir);
  snprintf(path, sizeof path, "%s/sub", dabs);
  if (chdir(path) < 0)
    setup_error("chdir %s: %s", path, strerror(errno));
  if (chroot(dabs) < 0)
    setup_error("chroot %s: %s%s", dabs, strerror(errno),
                errno == EPERM ? " (needs CAP_SYS_CHROOT)" : "");
  c = fork();
  if (c < 0)
    setup_error("fork: %s", strerror(errno));
  if (c == 0)
    {
      close(sync[0]);
      run_c(sync[1], startfd);
    }
  kids[2] = c;
  close(sync[1]);
  for (int k = 0; k < 2; k++)
    if (read(sync[0], buf, 1) != 1)
      setup_error("a child did not get ready");
  close(sync[0]);
  if (!getcwd(buf, sizeof buf) || strcmp(buf, "/sub") != 0)
    setup_error("getcwd after chroot: expected /sub, got %s",
                getcwd(buf, sizeof buf) ? buf : strerror(errno));

  zdtm_ready();
  zdtm_wait();

  check_dir("R (chroot'd)", "/", &st_d, "the chroot directory");
  check_dir("R (chroot'd)", "/..", &st_d, "the chroot directory (\"..\" at the root's top)");
  check_marker("R (chroot'd)");
  if (faccessat(rootfd, MARKER, F_OK, 0) == 0)
    zdtm_fail("R: the real root has a %s: the test's premise is wrong", MARKER);
  check_dir("R (chroot'd)", ".", &st_sub, "D/sub");
  if (!getcwd(buf, sizeof buf) || strcmp(buf, "/sub") != 0)
    zdtm_fail("R (chroot'd): cwd: expected /sub, got %s",
              getcwd(buf, sizeof buf) ? buf : strerror(errno));
  check_file("R (chroot'd)", datafd, "/sub/data", DATA_POS, 7, DATA_LEN);
  reap("U", u);
  reap("C", c);
  if (x)
    reap("X", x);

  /* Leave nothing behind: D's contents from inside, D from the start
     directory. */
  unlink("/sub/data");
  unlink("/sub/cfile");
  unlink("/" MARKER);
  rmdir("/sub");
  unlinkat(startfd, dir, AT_REMOVEDIR);
  zdtm_finish();
}
