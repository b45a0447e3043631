/* bench fill-ref: the reference of restore's memory speed. For each page
 * file given, maps fresh private anonymous memory of its size and fills it
 * from the file with large preads (each page faulted in and written once,
 * as a restore must), then checks one byte per page was written. Prints
 * the bytes filled and the seconds taken, "fill: BYTES bytes in SECONDS s".
 * With --populate, MADV_POPULATE_WRITE first (what the restore does). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static double
now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static int
fill(const char *path, int populate, unsigned long long *bytes)
{
  struct stat st;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  unsigned char *m;
  size_t done = 0, len;
  if (fd < 0 || fstat(fd, &st) < 0)
    {
      fprintf(stderr, "fill-ref: %s: %s\n", path, strerror(errno));
      return -1;
    }
  len = st.st_size;
  if (len == 0)
    return close(fd), 0;
  m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED)
    {
      fprintf(stderr, "fill-ref: mmap %zu bytes: %s\n", len, strerror(errno));
      return -1;
    }
  if (populate)
    madvise(m, len, MADV_POPULATE_WRITE);
  while (done < len)
    {
      size_t chunk = len - done > (1UL << 30) ? 1UL << 30 : len - done;
      ssize_t r = pread(fd, m + done, chunk, done);
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0)
        {
          fprintf(stderr, "fill-ref: read %s: %s\n", path, r < 0 ? strerror(errno) : "short");
          return -1;
        }
      done += r;
    }
  /* Keep the compiler and the kernel honest: the pages are there. */
  {
    volatile unsigned char sum = 0;
    for (size_t i = 0; i < len; i += 4096)
      sum ^= m[i];
    (void)sum;
  }
  munmap(m, len);
  close(fd);
  *bytes += len;
  return 0;
}

int
main(int argc, char **argv)
{
  int populate = 0, i = 1;
  unsigned long long bytes = 0;
  double t0;
  if (argc > 1 && strcmp(argv[1], "--populate") == 0)
    populate = 1, i++;
  if (i >= argc)
    {
      fprintf(stderr, "usage: fill-ref [--populate] PAGE-FILE...\n");
      return 2;
    }
  t0 = now();
  for (; i < argc; i++)
    if (fill(argv[i], populate, &bytes) < 0)
      return 1;
  printf("fill: %llu bytes in %.6f s\n", bytes, now() - t0);
  return 0;
}
