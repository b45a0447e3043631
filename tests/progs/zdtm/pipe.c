/* zdtm-pipe: a pipe with 3000 unread bytes, both ends shared by a parent
 * and its child, and a FIFO with unread bytes, held open read-write.
 * After restore the parent reads the first half and checks it, writes a
 * marker, and lets the child read the rest plus the marker through its own
 * descriptor: the bytes are there, in order, and it is still one pipe. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define N 3000
#define HALF 1200

int
main(int argc, char **argv)
{
  int p[2], fifo, st;
  uint8_t buf[N + 16];
  char fpath[64] = "zdtm-pipe.fifo.XXXXXX";
  pid_t kid;

  zdtm_init(argc, argv);
  if (pipe(p) < 0)
    zdtm_error("pipe: %s", strerror(errno));
  zdtm_fill(buf, N, 50, 0);
  if (write(p[1], buf, N) != N)
    zdtm_error("write pipe: %s", strerror(errno));
  if (!mkdtemp(fpath))
    zdtm_error("mkdtemp: %s", strerror(errno));
  strcat(fpath, "/f");
  if (mkfifo(fpath, 0600) < 0 || (fifo = open(fpath, O_RDWR)) < 0)
    zdtm_error("fifo %s: %s", fpath, strerror(errno));
  zdtm_fill(buf, 100, 51, 0);
  if (write(fifo, buf, 100) != 100)
    zdtm_error("write fifo: %s", strerror(errno));

  kid = fork();
  if (kid < 0)
    zdtm_error("fork: %s", strerror(errno));
  if (kid == 0)
    {
      struct stat r2, w2;
      ssize_t n, got = 0;
      zdtm_wait();
      /* A restored pipe is a new pipe (a new inode): what must hold is that
         both ends are one pipe, and that the parent's bytes arrive (below). */
      if (fstat(p[0], &r2) < 0 || fstat(p[1], &w2) < 0 || r2.st_ino != w2.st_ino
          || !S_ISFIFO(r2.st_mode))
        zdtm_fail("child: its two ends are no longer one pipe");
      while (got < N - HALF + 6 && (n = read(p[0], buf + got, sizeof(buf) - got)) > 0)
        got += n;
      if (got != N - HALF + 6)
        zdtm_fail("child: read %ld bytes, expected %d", (long)got, N - HALF + 6);
      else if (zdtm_check(buf, N - HALF, 50, HALF) != (size_t)-1)
        zdtm_fail("child: pipe byte %zu differs", HALF + zdtm_check(buf, N - HALF, 50, HALF));
      else if (memcmp(buf + N - HALF, "MARKER", 6))
        zdtm_fail("child: the parent's marker is not at the end of the pipe");
      _exit(zdtm_status());
    }

  zdtm_ready();
  zdtm_wait();

  {
    struct stat r1, w1;
    if (fstat(p[0], &r1) < 0 || fstat(p[1], &w1) < 0 || r1.st_ino != w1.st_ino
        || !S_ISFIFO(r1.st_mode))
      zdtm_fail("parent: its two ends are no longer one pipe");
  }
  int fl = fcntl(p[0], F_GETFL);
  fcntl(p[0], F_SETFL, fl | O_NONBLOCK);
  ssize_t n = read(p[0], buf, HALF);
  if (n != HALF)
    zdtm_fail("pipe: read %ld of the first %d bytes (%s)", (long)n, HALF,
              n < 0 ? strerror(errno) : "short");
  else if (zdtm_check(buf, HALF, 50, 0) != (size_t)-1)
    zdtm_fail("pipe byte %zu differs", zdtm_check(buf, HALF, 50, 0));
  fcntl(p[0], F_SETFL, fl);
  if (write(p[1], "MARKER", 6) != 6)
    zdtm_fail("pipe: write after restore: %s", strerror(errno));
  kill(kid, SIGTERM);
  if (waitpid(kid, &st, 0) != kid || !WIFEXITED(st) || WEXITSTATUS(st))
    zdtm_fail("child %d ended with status 0x%x", kid, st);
  /* The pipe is now empty. */
  fcntl(p[0], F_SETFL, fl | O_NONBLOCK);
  if (read(p[0], buf, 1) != -1 || errno != EAGAIN)
    zdtm_fail("pipe: expected empty after both reads");
  /* The FIFO */
  n = read(fifo, buf, 200);
  if (n != 100)
    zdtm_fail("fifo %s: expected 100 unread bytes, got %ld", fpath, (long)n);
  else if (zdtm_check(buf, 100, 51, 0) != (size_t)-1)
    zdtm_fail("fifo byte %zu differs", zdtm_check(buf, 100, 51, 0));
  unlink(fpath);
  *strrchr(fpath, '/') = 0;
  rmdir(fpath);
  zdtm_finish();
}
