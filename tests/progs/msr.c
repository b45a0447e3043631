/* msr read REG | msr write REG VALUE: one MSR of CPU 0 through /dev/cpu/0/msr.
 *
 * REG and VALUE are numbers in C notation (0x174).  read prints the value as
 * 0x and 16 hex digits; write prints "pid N" (N being this process, which
 * the kernel names in its warning about the write).  On failure the program
 * prints the errno name alone and exits 1.  Usage errors exit 2.
 *
 * Standalone: gcc -static -O2 -Wall -Wextra -o msr msr.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *
errno_name(int e)
{
  const char *name = strerrorname_np(e);
  return name ? name : "UNKNOWN_ERRNO";
}

static int
parse(const char *s, uint64_t *out)
{
  char *end;

  errno = 0;
  *out = strtoull(s, &end, 0);
  return errno || end == s || *end ? -1 : 0;
}

int
main(int argc, char **argv)
{
  uint64_t reg, value;
  int fd;

  if (!((argc == 3 && strcmp(argv[1], "read") == 0) || (argc == 4 && strcmp(argv[1], "write") == 0))
      || parse(argv[2], &reg) < 0 || reg > UINT32_MAX || (argc == 4 && parse(argv[3], &value) < 0))
    {
      fprintf(stderr, "usage: %s read REG | %s write REG VALUE\n", argv[0], argv[0]);
      return 2;
    }

  fd = open("/dev/cpu/0/msr", (argc == 3 ? O_RDONLY : O_WRONLY) | O_CLOEXEC);
  if (fd < 0)
    {
      printf("%s\n", errno_name(errno));
      return 1;
    }
  if (argc == 3)
    {
      if (pread(fd, &value, sizeof(value), (off_t)reg) != (ssize_t)sizeof(value))
        {
          printf("%s\n", errno_name(errno));
          return 1;
        }
      printf("0x%016" PRIx64 "\n", value);
    }
  else
    {
      if (pwrite(fd, &value, sizeof(value), (off_t)reg) != (ssize_t)sizeof(value))
        {
          printf("%s\n", errno_name(errno));
          return 1;
        }
      printf("pid %d\n", (int)getpid());
    }
  close(fd);
  return 0;
}
