/* pty-child CMD [ARG...]: run CMD on a pty of its own, for tests.
 *
 * Opens a new pty (/dev/ptmx of the devpts where this runs), makes its slave
 * descriptors 0, 1 and 2 and execs CMD in this very process; a child keeps
 * the master and drains what CMD writes (discarding it) until the slave is
 * closed. The PID of CMD stays this program's, and the slave comes first in
 * a walk of the tree from its parent: a checkpoint meets CMD's fd 0 on a
 * terminal that is not the container's console before it meets the master.
 *
 * Errors: one line on stderr, exit 1; usage errors exit 2.
 *
 * Standalone: gcc -static -O2 -Wall -Wextra -o pty-child pty-child.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
  int master, slave;
  const char *name;
  pid_t pid;

  if (argc < 2)
    {
      fprintf(stderr, "usage: %s CMD [ARG...]\n", argv[0]);
      return 2;
    }
  master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0 || !(name = ptsname(master)))
    {
      fprintf(stderr, "pty-child: open a new pty: %s\n", strerror(errno));
      return 1;
    }
  slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (slave < 0)
    {
      fprintf(stderr, "pty-child: open `%s`: %s\n", name, strerror(errno));
      return 1;
    }
  pid = fork();
  if (pid < 0)
    {
      fprintf(stderr, "pty-child: fork: %s\n", strerror(errno));
      return 1;
    }
  if (pid == 0)
    {
      char buf[4096];
      close(slave);
      while (read(master, buf, sizeof buf) > 0)
        ;
      _exit(0);
    }
  close(master);
  if (dup2(slave, 0) < 0 || dup2(slave, 1) < 0 || dup2(slave, 2) < 0)
    {
      fprintf(stderr, "pty-child: put `%s` on stdio: %s\n", name, strerror(errno));
      return 1;
    }
  execvp(argv[1], argv + 1);
  /* stderr is the pty now: say it on the pty, which nobody reads. */
  fprintf(stderr, "pty-child: exec `%s`: %s\n", argv[1], strerror(errno));
  return 1;
}
