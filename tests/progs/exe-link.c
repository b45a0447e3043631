/* exe-link FILE: point /proc/self/exe at FILE with
 * prctl(PR_SET_MM, PR_SET_MM_MAP) and exe_fd, then print the new link target.
 *
 * Every field of the map other than exe_fd is the current value (from
 * /proc/self/stat, brk(0) and /proc/self/auxv), so that the only change asked
 * of the kernel is the exe link.  Since Linux 5.9 the kernel wants
 * CAP_CHECKPOINT_RESTORE (or CAP_SYS_ADMIN) in the caller's user namespace
 * for that and answers EPERM without it.
 *
 * The kernel also refuses (EBUSY) to change the link while the old executable
 * is still mapped (6.1 does; the check is cheap to satisfy on any kernel), so
 * the program first replaces each mapping of its own executable with an
 * anonymous copy of the same bytes at the same address.  It is linked
 * statically, so those are all the mappings of the file there are.
 *
 * On failure it prints the errno name alone (EPERM, EBUSY, ...) and exits 1;
 * usage errors exit 2.
 *
 * Standalone: gcc -static -O2 -Wall -Wextra -o exe-link exe-link.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define MAX_EXE_MAPPINGS 32

struct mapping
{
  uintptr_t start, end;
  int prot;
};

static const char *
errno_name(int e)
{
  const char *name = strerrorname_np(e);
  return name ? name : "UNKNOWN_ERRNO";
}

static ssize_t
read_file(const char *path, char *buf, size_t size)
{
  size_t got = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);

  if (fd < 0)
    return -1;
  while (got < size)
    {
      ssize_t r = read(fd, buf + got, size - got);
      if (r < 0)
        {
          if (errno == EINTR)
            continue;
          close(fd);
          return -1;
        }
      if (r == 0)
        break;
      got += (size_t)r;
    }
  close(fd);
  return (ssize_t)got;
}

/* Fill the map from /proc/self/stat: fields 26-28 and 45-51 (proc(5)). */
static int
fill_from_stat(struct prctl_mm_map *map)
{
  char buf[4096];
  unsigned long long v[52];
  ssize_t n = read_file("/proc/self/stat", buf, sizeof(buf) - 1);
  char *p, *end;
  int field;

  if (n <= 0)
    return -1;
  buf[n] = '\0';
  /* The command name (field 2) may hold spaces and parentheses. */
  p = strrchr(buf, ')');
  if (!p)
    return -1;
  p++;
  memset(v, 0, sizeof(v));
  for (field = 3; field <= 51; field++)
    {
      while (*p == ' ')
        p++;
      if (field == 3)
        { /* state, a letter */
          p++;
          continue;
        }
      errno = 0;
      v[field] = strtoull(p, &end, 10);
      if (errno || end == p)
        return -1;
      p = end;
    }
  map->start_code = v[26];
  map->end_code = v[27];
  map->start_stack = v[28];
  map->start_data = v[45];
  map->end_data = v[46];
  map->start_brk = v[47];
  map->arg_start = v[48];
  map->arg_end = v[49];
  map->env_start = v[50];
  map->env_end = v[51];
  return 0;
}

/* The mappings of our own executable, found by device and inode. */
static int
exe_mappings(struct mapping *out, int max)
{
  static char buf[1 << 16];
  struct stat st;
  ssize_t n;
  int count = 0;

  if (stat("/proc/self/exe", &st) < 0)
    return -1;
  n = read_file("/proc/self/maps", buf, sizeof(buf) - 1);
  if (n <= 0)
    return -1;
  buf[n] = '\0';
  for (char *line = buf; line && *line;)
    {
      char *next = strchr(line, '\n');
      unsigned long start, end, off, ino;
      unsigned int maj, min;
      char perms[5];

      if (next)
        *next++ = '\0';
      if (sscanf(line, "%lx-%lx %4s %lx %x:%x %lu", &start, &end, perms, &off, &maj, &min, &ino)
              == 7
          && ino == st.st_ino && makedev(maj, min) == st.st_dev)
        {
          if (count == max)
            {
              errno = E2BIG;
              return -1;
            }
          out[count].start = start;
          out[count].end = end;
          out[count].prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0)
                            | (perms[2] == 'x' ? PROT_EXEC : 0);
          count++;
        }
      line = next;
    }
  return count;
}

/* Replace a file mapping with an anonymous one that holds the same bytes.
 * mremap() swaps it in atomically, so this works for the text we run from. */
static int
detach_mapping(const struct mapping *m)
{
  size_t len = m->end - m->start;
  void *copy = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

  if (copy == MAP_FAILED)
    return -1;
  if (m->prot & PROT_READ)
    memcpy(copy, (void *)m->start, len);
  if (mprotect(copy, len, m->prot) < 0)
    return -1;
  if (syscall(SYS_mremap, copy, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, m->start)
      == (long)MAP_FAILED)
    return -1;
  return 0;
}

int
main(int argc, char **argv)
{
  static char auxv[4096];
  struct mapping maps[MAX_EXE_MAPPINGS];
  struct prctl_mm_map map;
  unsigned int map_size = 0;
  char target[PATH_MAX];
  ssize_t auxv_len, len;
  int fd, count;

  if (argc != 2)
    {
      fprintf(stderr, "usage: %s FILE (an executable file to become /proc/self/exe)\n", argv[0]);
      return 2;
    }

  fd = open(argv[1], O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    {
      fprintf(stderr, "%s: open %s: %s\n", argv[0], argv[1], strerror(errno));
      return 2;
    }

  if (prctl(PR_SET_MM, PR_SET_MM_MAP_SIZE, (unsigned long)&map_size, 0L, 0L) < 0)
    {
      printf("%s\n", errno_name(errno));
      return 1;
    }
  if (map_size != sizeof(map))
    {
      fprintf(stderr, "%s: the kernel's prctl_mm_map is %u bytes, ours %zu\n", argv[0], map_size,
              sizeof(map));
      return 1;
    }

  memset(&map, 0, sizeof(map));
  if (fill_from_stat(&map) < 0)
    {
      fprintf(stderr, "%s: cannot parse /proc/self/stat\n", argv[0]);
      return 1;
    }
  map.brk = (uint64_t)syscall(SYS_brk, 0L);
  auxv_len = read_file("/proc/self/auxv", auxv, sizeof(auxv));
  if (auxv_len <= 0)
    {
      fprintf(stderr, "%s: cannot read /proc/self/auxv\n", argv[0]);
      return 1;
    }
  map.auxv = (__u64 *)auxv;
  map.auxv_size = (uint32_t)auxv_len;
  map.exe_fd = (uint32_t)fd;

  count = exe_mappings(maps, MAX_EXE_MAPPINGS);
  if (count < 0)
    {
      fprintf(stderr, "%s: cannot list the mappings of /proc/self/exe: %s\n", argv[0],
              strerror(errno));
      return 1;
    }
  for (int i = 0; i < count; i++)
    {
      if (detach_mapping(&maps[i]) < 0)
        {
          fprintf(stderr, "%s: cannot replace mapping %#lx-%#lx: %s\n", argv[0],
                  (unsigned long)maps[i].start, (unsigned long)maps[i].end, strerror(errno));
          return 1;
        }
    }

  if (prctl(PR_SET_MM, PR_SET_MM_MAP, (unsigned long)&map, (unsigned long)sizeof(map), 0L) < 0)
    {
      printf("%s\n", errno_name(errno));
      return 1;
    }

  len = readlink("/proc/self/exe", target, sizeof(target) - 1);
  if (len < 0)
    {
      fprintf(stderr, "%s: readlink /proc/self/exe: %s\n", argv[0], strerror(errno));
      return 1;
    }
  target[len] = '\0';
  printf("%s\n", target);
  return 0;
}
