/* write-file PATH VALUE: write VALUE (no newline added) to PATH in one write().
 *
 * For sysctls and cgroup files, whose errors matter: on failure the program
 * prints the errno name alone (EINVAL, ERANGE, EPERM, ...) and exits 1.
 * Prints "ok" and exits 0 on success.  Usage errors exit 2.
 *
 * Standalone: gcc -static -O2 -Wall -Wextra -o write-file write-file.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
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
  size_t len;
  ssize_t n;
  int fd;

  if (argc != 3)
    {
      fprintf(stderr, "usage: %s PATH VALUE\n", argv[0]);
      return 2;
    }
  fd = open(argv[1], O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    {
      printf("%s\n", errno_name(errno));
      return 1;
    }
  len = strlen(argv[2]);
  n = write(fd, argv[2], len);
  if (n < 0 || close(fd) < 0)
    {
      printf("%s\n", errno_name(errno));
      return 1;
    }
  if ((size_t)n != len)
    {
      printf("SHORT_WRITE\n");
      return 1;
    }
  printf("ok\n");
  return 0;
}
