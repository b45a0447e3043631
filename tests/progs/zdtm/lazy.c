/* zdtm-lazy: private anonymous memory restored lazily (restore
 * --lazy-pages) is exact, whatever the program does while its pages are
 * still coming in. Right after restore, before reading anything:
 *
 * - it forks: the child (whose copy of the memory is not registered with
 *   crest's userfaultfd) checks every byte of every region;
 * - it moves one region with mremap and checks it at its new address;
 * - it moves another back and forth 32 times (each move racing crest's
 *   background copies of it) and checks it;
 * - it drops half of another with MADV_DONTNEED (must read zero) and checks
 *   the other half;
 * - the kernel reads and writes its lazy memory: write() from a region into
 *   a pipe and read() from the pipe into another region, both checked; a
 *   region grown by mremap, read() into its new part;
 * - it checks the large region (64 MiB, ZDTM_ANON_MIB to change) byte for
 *   byte, with a second thread checking its second half at the same time.
 */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB (1UL << 20)

static uint8_t *big, *mov, *half, *src, *dst, *grow, *pong, *slot;
static size_t big_len;

static void *
map(size_t len)
{
  void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    zdtm_error("mmap %zu bytes: %s", len, strerror(errno));
  return p;
}

static void
check(const char *what, const void *p, size_t len, uint32_t seed, uint64_t base)
{
  size_t off = zdtm_check(p, len, seed, base);
  if (off != (size_t)-1)
    zdtm_fail("%s at %p: byte %zu: expected 0x%02x, got 0x%02x", what, p, off,
              zdtm_pattern(seed, base + off), ((const uint8_t *)p)[off]);
}

static void *
check_second_half(void *arg)
{
  (void)arg;
  check("large region, second half (thread)", big + big_len / 2, big_len / 2, 2, big_len / 2);
  return NULL;
}

int
main(int argc, char **argv)
{
  const char *mib = getenv("ZDTM_ANON_MIB");
  uint8_t *moved, *target;
  pthread_t th;
  pid_t child;
  int st, pp[2];

  zdtm_init(argc, argv);
  big_len = (size_t)(mib ? atol(mib) : 64) * MIB;
  big = map(big_len);
  zdtm_fill(big, big_len, 2, 0);
  mov = map(4 * MIB);
  zdtm_fill(mov, 4 * MIB, 5, 0);
  half = map(4 * MIB);
  zdtm_fill(half, 4 * MIB, 6, 0);
  src = map(1 * MIB);
  zdtm_fill(src, MIB, 7, 0);
  dst = map(1 * MIB);
  zdtm_fill(dst, MIB, 8, 0);
  grow = map(1 * MIB);
  zdtm_fill(grow, MIB, 9, 0);
  pong = map(8 * MIB);
  zdtm_fill(pong, 8 * MIB, 10, 0);
  slot = mmap(NULL, 8 * MIB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (slot == MAP_FAILED)
    zdtm_error("mmap: %s", strerror(errno));
  target = map(8 * MIB); /* room for the move, kept reserved */
  munmap(target, 8 * MIB);
  if (pipe(pp) < 0)
    zdtm_error("pipe: %s", strerror(errno));

  zdtm_ready();
  zdtm_wait();

  child = fork();
  if (child < 0)
    zdtm_fail("fork: %s", strerror(errno));
  if (child == 0)
    {
      check("child: large region", big, big_len, 2, 0);
      check("child: region to move", mov, 4 * MIB, 5, 0);
      check("child: region half dropped", half, 4 * MIB, 6, 0);
      check("child: source region", src, MIB, 7, 0);
      check("child: destination region", dst, MIB, 8, 0);
      _exit(zdtm_status());
    }

  moved = mremap(mov, 4 * MIB, 4 * MIB, MREMAP_MAYMOVE | MREMAP_FIXED, target);
  if (moved == MAP_FAILED)
    zdtm_fail("mremap: %s", strerror(errno));
  else
    check("moved region", moved, 4 * MIB, 5, 0);

  for (int i = 0; i < 32; i++)
    {
      uint8_t *to = i % 2 ? pong : slot, *from = i % 2 ? slot : pong;
      if (mremap(from, 8 * MIB, 8 * MIB, MREMAP_MAYMOVE | MREMAP_FIXED, to) != to)
        {
          zdtm_fail("mremap %d (back and forth): %s", i, strerror(errno));
          break;
        }
      if (i % 2 == 0
          && mmap(from, 8 * MIB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
                  -1, 0)
                 != from)
        zdtm_error("mmap (keep the place): %s", strerror(errno));
    }
  check("region moved back and forth", pong, 8 * MIB, 10, 0);

  if (madvise(half, 2 * MIB, MADV_DONTNEED) < 0)
    zdtm_fail("madvise: %s", strerror(errno));
  for (size_t i = 0; i < 2 * MIB; i++)
    if (half[i])
      {
        zdtm_fail("dropped half at byte %zu: expected 0, got 0x%02x", i, half[i]);
        break;
      }
  check("half kept", half + 2 * MIB, 2 * MIB, 6, 2 * MIB);

  /* The kernel reads 64 KiB of lazy memory, and writes 64 KiB of it. */
  if (write(pp[1], src + 256 * 1024, 65536) != 65536)
    zdtm_fail("write from lazy memory: %s", strerror(errno));
  else if (read(pp[0], dst + 512 * 1024, 65536) != 65536)
    zdtm_fail("read into lazy memory: %s", strerror(errno));
  else
    {
      check("source region", src, MIB, 7, 0);
      check("destination region before", dst, 512 * 1024, 8, 0);
      check("destination region, read from the pipe", dst + 512 * 1024, 65536, 7, 256 * 1024);
      check("destination region after", dst + 576 * 1024, MIB - 576 * 1024, 8, 576 * 1024);
    }

  /* A region grown by mremap: the kernel writes into the new part. */
  {
    uint8_t *g = mremap(grow, MIB, 2 * MIB, MREMAP_MAYMOVE);
    if (g == MAP_FAILED)
      zdtm_fail("mremap (grow): %s", strerror(errno));
    else if (write(pp[1], src, 8192) != 8192 || read(pp[0], g + MIB + 4096, 8192) != 8192)
      zdtm_fail("read into the grown part of a region: %s", strerror(errno));
    else
      {
        check("grown region, old part", g, MIB, 9, 0);
        check("grown region, read from the pipe", g + MIB + 4096, 8192, 7, 0);
        for (size_t i = 0; i < 4096; i++)
          if (g[MIB + i])
            {
              zdtm_fail("grown region, new page: byte %zu: expected 0, got 0x%02x", i, g[MIB + i]);
              break;
            }
      }
  }

  if (pthread_create(&th, NULL, check_second_half, NULL) != 0)
    zdtm_fail("pthread_create failed");
  check("large region, first half", big, big_len / 2, 2, 0);
  pthread_join(th, NULL);

  if (waitpid(child, &st, 0) != child)
    zdtm_fail("waitpid: %s", strerror(errno));
  else if (!WIFEXITED(st) || WEXITSTATUS(st))
    zdtm_fail("the child forked after restore found its memory wrong (status %#x)", st);
  zdtm_finish();
}
