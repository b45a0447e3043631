/* map-files FILE: map FILE, then go through /proc/self/map_files for it.
 *
 * Prints, one per line:
 *   listed NAME   the directory entry of the mapping, found with readdir()
 *   link PATH     its readlink() target
 *   open ok       after opening the link and reading the file's first bytes
 *                 back through it (compared with the mapping)
 * Listing and readlink need no capability; opening the link needs
 * CAP_CHECKPOINT_RESTORE (or CAP_SYS_ADMIN) in the initial user namespace on
 * a stock kernel.  When a step fails the program prints the errno name alone
 * on the last line and exits 1 (NOT_LISTED if readdir does not show the
 * mapping, MISMATCH if the bytes differ).  Usage errors exit 2.
 *
 * Standalone: gcc -static -O2 -Wall -Wextra -o map-files map-files.c
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
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
  char name[64], path[PATH_MAX], target[PATH_MAX], head[64];
  struct stat st;
  size_t len, cmp;
  ssize_t n;
  void *addr;
  DIR *dir;
  struct dirent *de;
  int fd, listed = 0;

  if (argc != 2)
    {
      fprintf(stderr, "usage: %s FILE (a non-empty regular file to map)\n", argv[0]);
      return 2;
    }

  /* A file capability makes the process non-dumpable, and /proc/self then
   * belongs to root: become dumpable again so that the directory is ours. */
  if (prctl(PR_SET_DUMPABLE, 1L, 0L, 0L, 0L) < 0)
    {
      fprintf(stderr, "%s: prctl(PR_SET_DUMPABLE): %s\n", argv[0], strerror(errno));
      return 1;
    }

  fd = open(argv[1], O_RDONLY | O_CLOEXEC);
  if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size == 0)
    {
      fprintf(stderr, "%s: %s: not a readable non-empty regular file\n", argv[0], argv[1]);
      return 2;
    }
  len = (size_t)st.st_size;
  addr = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
  if (addr == MAP_FAILED)
    {
      fprintf(stderr, "%s: mmap %s: %s\n", argv[0], argv[1], strerror(errno));
      return 1;
    }
  close(fd);

  /* The entry covers whole pages: start-end of the VMA, in hex. */
  snprintf(name, sizeof(name), "%lx-%lx", (unsigned long)(uintptr_t)addr,
           (unsigned long)(uintptr_t)addr
               + ((len + (size_t)getpagesize() - 1) & ~((size_t)getpagesize() - 1)));

  dir = opendir("/proc/self/map_files");
  if (!dir)
    {
      printf("%s\n", errno_name(errno));
      return 1;
    }
  while ((de = readdir(dir)))
    if (strcmp(de->d_name, name) == 0)
      listed = 1;
  closedir(dir);
  if (!listed)
    {
      printf("NOT_LISTED\n");
      return 1;
    }
  printf("listed %s\n", name);

  snprintf(path, sizeof(path), "/proc/self/map_files/%s", name);
  n = readlink(path, target, sizeof(target) - 1);
  if (n < 0)
    {
      printf("%s\n", errno_name(errno));
      return 1;
    }
  target[n] = '\0';
  printf("link %s\n", target);

  fflush(stdout);
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    {
      printf("%s\n", errno_name(errno));
      return 1;
    }
  cmp = len < sizeof(head) ? len : sizeof(head);
  n = read(fd, head, cmp);
  if (n < 0)
    {
      printf("%s\n", errno_name(errno));
      return 1;
    }
  if ((size_t)n != cmp || memcmp(head, addr, cmp) != 0)
    {
      printf("MISMATCH\n");
      return 1;
    }
  close(fd);
  printf("open ok\n");
  return 0;
}
