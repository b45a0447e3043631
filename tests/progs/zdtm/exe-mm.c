/* zdtm-exe-mm: the exe link (seed 006, PR_SET_MM_MAP with exe_fd) and the mm
 * fields of /proc/self/stat (code, data, brk, stack, argument and
 * environment bounds), plus the command line and environment they point to. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Fields 26-28 and 45-51 of /proc/self/stat (startcode endcode startstack,
   start_data end_data start_brk arg_start arg_end env_start env_end). */
static int
mm_fields(unsigned long out[10])
{
  char buf[4096], *p;
  int fd = open("/proc/self/stat", O_RDONLY), n, field = 3;

  if (fd < 0)
    return -1;
  n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0)
    return -1;
  buf[n] = 0;
  p = strrchr(buf, ')');
  if (!p)
    return -1;
  p += 2;
  int k = 0;
  while (*p && k < 10)
    {
      unsigned long v = strtoul(p, &p, 10);
      if ((field >= 26 && field <= 28) || (field >= 45 && field <= 51))
        out[k++] = v;
      field++;
      while (*p == ' ')
        p++;
      if (*p == '-')
        p++;
    }
  return k == 10 ? 0 : -1;
}

static ssize_t
slurp(const char *path, char *buf, size_t len)
{
  int fd = open(path, O_RDONLY);
  ssize_t n = fd < 0 ? -1 : read(fd, buf, len);
  if (fd >= 0)
    close(fd);
  return n;
}

int
main(int argc, char **argv)
{
  static const char *names[10]
      = { "start_code", "end_code",  "start_stack", "start_data", "end_data",
          "start_brk",  "arg_start", "arg_end",     "env_start",  "env_end" };
  unsigned long want[10], got[10];
  char exe_want[4096], exe_got[4096], cmd_want[8192], cmd_got[8192];
  struct stat st_want, st_got;
  ssize_t n, cn;

  zdtm_init(argc, argv);
  n = readlink("/proc/self/exe", exe_want, sizeof(exe_want) - 1);
  if (n < 0 || stat("/proc/self/exe", &st_want) < 0)
    zdtm_error("readlink /proc/self/exe: %s", strerror(errno));
  exe_want[n] = 0;
  if (mm_fields(want) < 0)
    zdtm_error("cannot parse /proc/self/stat");
  cn = slurp("/proc/self/cmdline", cmd_want, sizeof(cmd_want));

  zdtm_ready();
  zdtm_wait();

  n = readlink("/proc/self/exe", exe_got, sizeof(exe_got) - 1);
  if (n < 0)
    zdtm_fail("exe link: readlink: %s", strerror(errno));
  else
    {
      exe_got[n] = 0;
      if (strcmp(exe_got, exe_want))
        zdtm_fail("exe link: expected %s, got %s", exe_want, exe_got);
      if (stat("/proc/self/exe", &st_got) < 0 || st_got.st_ino != st_want.st_ino)
        zdtm_fail("exe link: names another file (inode %lu expected, got %lu)",
                  (unsigned long)st_want.st_ino, (unsigned long)st_got.st_ino);
    }
  if (mm_fields(got) < 0)
    zdtm_fail("cannot parse /proc/self/stat after restore");
  else
    for (int i = 0; i < 10; i++)
      if (got[i] != want[i])
        zdtm_fail("mm %s: expected 0x%lx, got 0x%lx", names[i], want[i], got[i]);
  if (slurp("/proc/self/cmdline", cmd_got, sizeof(cmd_got)) != cn || memcmp(cmd_want, cmd_got, cn))
    zdtm_fail("/proc/self/cmdline differs after restore");
  zdtm_finish();
}
