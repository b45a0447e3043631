/* bench write-ref: the stricter reference of the checkpoint's write speed.
 * Writes BYTES bytes (a pattern, 4 MiB a write) to a fresh FILE as fast as
 * a writer can that knows what crest's image writer knows: it starts the
 * writeback of every 8 MiB written (sync_file_range), so that the disk
 * works while the next bytes are written, and ends with an fsync. dd
 * conv=fsync (the goal's reference) writes everything to the page cache
 * first and only then waits for the disk. Prints
 * "write-ref: BYTES bytes in SECONDS s".
 *
 *   write-ref FILE BYTES */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (4u << 20)
#define STEP (8u << 20)

static double
now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
  unsigned long long total, done = 0, wb = 0;
  char *buf;
  double t0;
  int fd;

  if (argc != 3)
    {
      fprintf(stderr, "usage: write-ref FILE BYTES\n");
      return 2;
    }
  total = strtoull(argv[2], NULL, 10);
  buf = malloc(CHUNK);
  if (!buf)
    return 1;
  for (size_t i = 0; i < CHUNK; i++)
    buf[i] = (char)(i * 131 + 7);
  t0 = now();
  fd = open(argv[1], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    {
      fprintf(stderr, "write-ref: %s: %s\n", argv[1], strerror(errno));
      return 1;
    }
  while (done < total)
    {
      size_t n = total - done < CHUNK ? total - done : CHUNK;
      ssize_t w = write(fd, buf, n);
      if (w <= 0)
        {
          fprintf(stderr, "write-ref: write: %s\n", w < 0 ? strerror(errno) : "short");
          return 1;
        }
      done += (unsigned long long)w;
      if (done - wb >= STEP)
        {
          sync_file_range(fd, (off_t)wb, (off_t)(done - wb), SYNC_FILE_RANGE_WRITE);
          wb = done;
        }
    }
  if (fsync(fd) < 0 || close(fd) < 0)
    {
      fprintf(stderr, "write-ref: fsync: %s\n", strerror(errno));
      return 1;
    }
  printf("write-ref: %llu bytes in %.6f s\n", done, now() - t0);
  free(buf);
  return 0;
}
