/* zdtm-pty: a pseudo-terminal whose both ends the tree holds, as tmux
 * holds its panes': the root holds the master (window 40x120); a child,
 * session leader, has the slave as its controlling terminal and its
 * stdio, in raw mode; a grandchild in a process group of its own is the
 * terminal's foreground group and answers each byte it reads with its
 * upper case. After restore: the same index and window size, the child's
 * controlling terminal and foreground group (/proc/PID/stat), and the
 * conversation in raw mode (bytes through unechoed, unbuffered). */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

/* Up to LEN bytes from FD within 2 s, NUL-ended. */
static ssize_t
read_some(int fd, char *buf, size_t len)
{
  struct pollfd p = { fd, POLLIN, 0 };
  ssize_t n = 0, r;
  while ((size_t)n < len && poll(&p, 1, n ? 200 : 2000) == 1
         && (r = read(fd, buf + n, len - n)) > 0)
    n += r;
  buf[n] = '\0';
  return n;
}

/* tty_nr and tpgid of PID, from its stat. */
static void
stat_tty(pid_t pid, long *tty, long *tpgid)
{
  char path[64], buf[1024];
  FILE *f;
  const char *q;
  *tty = *tpgid = -1;
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  if (!(f = fopen(path, "r")))
    return;
  if (fgets(buf, sizeof buf, f) && (q = strrchr(buf, ')')))
    sscanf(q + 2, "%*c %*d %*d %*d %ld %ld", tty, tpgid);
  fclose(f);
}

int
main(int argc, char **argv)
{
  struct winsize ws = { .ws_row = 40, .ws_col = 120 }, now;
  int m, idx = -1, sync[2];
  pid_t child, grand = 0;
  char name[64], buf[64];
  long tty, tpgid;
  unsigned n = 0;

  zdtm_init(argc, argv);
  m = posix_openpt(O_RDWR | O_NOCTTY);
  if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0 || ioctl(m, TIOCGPTN, &n) < 0
      || ioctl(m, TIOCSWINSZ, &ws) < 0 || pipe(sync) < 0)
    zdtm_error("a pty: %s", strerror(errno));
  idx = (int)n;
  snprintf(name, sizeof name, "/dev/pts/%d", idx);
  child = fork();
  if (child == 0)
    {
      struct termios t;
      int s;
      close(m);
      if (setsid() < 0 || (s = open(name, O_RDWR)) < 0 || tcgetattr(s, &t) < 0)
        _exit(1);
      cfmakeraw(&t);
      t.c_cc[VMIN] = 1, t.c_cc[VTIME] = 0;
      if (tcsetattr(s, TCSANOW, &t) < 0 || dup2(s, 0) < 0 || dup2(s, 1) < 0 || dup2(s, 2) < 0)
        _exit(1);
      if (s > 2)
        close(s);
      grand = fork();
      if (grand == 0)
        {
          /* the foreground group: it reads the terminal (a background
             reader would be stopped by SIGTTIN) */
          setpgid(0, 0);
          while (tcgetpgrp(0) != getpgrp())
            usleep(1000);
          for (;;)
            {
              char c;
              if (read(0, &c, 1) != 1)
                _exit(4);
              c = (char)(c >= 'a' && c <= 'z' ? c - 32 : c);
              if (write(1, &c, 1) != 1)
                _exit(5);
            }
        }
      setpgid(grand, grand);
      signal(SIGTTOU, SIG_IGN);
      if (tcsetpgrp(0, grand) < 0)
        _exit(2);
      if (write(sync[1], &grand, sizeof grand) != sizeof grand)
        _exit(3);
      for (;;)
        pause();
    }
  if (child < 0 || read(sync[0], &grand, sizeof grand) != sizeof grand)
    zdtm_error("the child did not take the terminal");
  close(sync[0]), close(sync[1]);
  /* a first exchange, which leaves both queues empty */
  if (write(m, "hi", 2) != 2 || read_some(m, buf, 2) != 2 || strcmp(buf, "HI") != 0)
    zdtm_error("the child does not answer before the checkpoint (\"%s\")", buf);

  zdtm_ready();
  zdtm_wait();

  if (ioctl(m, TIOCGPTN, &n) < 0 || (int)n != idx)
    zdtm_fail("the master's index is %u, expected %d", n, idx);
  if (ioctl(m, TIOCGWINSZ, &now) < 0 || now.ws_row != 40 || now.ws_col != 120)
    zdtm_fail("the window is %ux%u, expected 40x120", now.ws_row, now.ws_col);
  stat_tty(child, &tty, &tpgid);
  if (tty != (long)makedev(136, idx))
    zdtm_fail("the child's controlling terminal is %ld, expected /dev/pts/%d (%ld)", tty, idx,
              (long)makedev(136, idx));
  if (tpgid != grand)
    zdtm_fail("the terminal's foreground group is %ld, expected %d", tpgid, (int)grand);
  stat_tty(grand, &tty, &tpgid);
  if (tty != (long)makedev(136, idx))
    zdtm_fail("the grandchild's controlling terminal is %ld", tty);
  if (write(m, "abc", 3) != 3 || read_some(m, buf, 8) != 3 || strcmp(buf, "ABC") != 0)
    zdtm_fail("in raw mode \"abc\" should come back \"ABC\", came back \"%s\"", buf);
  kill(grand, SIGKILL);
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  zdtm_finish();
}
