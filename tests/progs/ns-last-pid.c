/* ns-last-pid N: write N to /proc/sys/kernel/ns_last_pid, then fork once.
 *
 * The kernel applies the write to the PID namespace the caller lives in and
 * wants CAP_CHECKPOINT_RESTORE (or CAP_SYS_ADMIN) in the user namespace that
 * owns it.  On success the program prints "pid M", M being the PID of the
 * child it forked right after the write (the caller expects N + 1 when
 * nothing else forks in that namespace).  On failure of the write it prints
 * the errno name alone and exits 1.  Usage errors exit 2.
 *
 * Standalone: gcc -static -O2 -Wall -Wextra -o ns-last-pid ns-last-pid.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *
errno_name(int e)
{
  const char *name = strerrorname_np(e);
  return name ? name : "UNKNOWN_ERRNO";
}

int
main(int argc, char **argv)
{
  char buf[32];
  char *end;
  long n;
  int fd, len, status;
  pid_t child;

  if (argc != 2)
    {
      fprintf(stderr, "usage: %s N (the PID the next fork should follow)\n", argv[0]);
      return 2;
    }
  errno = 0;
  n = strtol(argv[1], &end, 10);
  if (errno || end == argv[1] || *end || n < 0 || n >= INT_MAX)
    {
      fprintf(stderr, "%s: not a PID: '%s'\n", argv[0], argv[1]);
      return 2;
    }

  fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    {
      printf("%s\n", errno_name(errno));
      return 1;
    }
  len = snprintf(buf, sizeof(buf), "%ld", n);
  if (write(fd, buf, (size_t)len) != len)
    {
      printf("%s\n", errno_name(errno));
      return 1;
    }
  close(fd);

  fflush(NULL);
  child = fork();
  if (child < 0)
    {
      fprintf(stderr, "%s: fork: %s\n", argv[0], strerror(errno));
      return 1;
    }
  if (child == 0)
    _exit(0);
  if (waitpid(child, &status, 0) != child)
    {
      fprintf(stderr, "%s: waitpid: %s\n", argv[0], strerror(errno));
      return 1;
    }
  printf("pid %d\n", (int)child);
  return 0;
}
