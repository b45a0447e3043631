/* zdtm-heap: the brk heap (its bounds and contents) and malloc'ed blocks. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
  size_t grow = 3 * 1024 * 1024 + 123;
  uint8_t *start, *end_after, *blocks[16];
  size_t sizes[16];

  zdtm_init(argc, argv);
  start = sbrk(0);
  if (sbrk(grow) == (void *)-1)
    zdtm_error("sbrk %zu: %s", grow, strerror(errno));
  zdtm_fill(start, grow, 10, 0);
  for (int i = 0; i < 16; i++)
    {
      sizes[i] = 100 + i * 7919;
      blocks[i] = malloc(sizes[i]);
      if (!blocks[i])
        zdtm_error("malloc: out of memory");
      zdtm_fill(blocks[i], sizes[i], 11 + i, 0);
    }
  /* After the mallocs, which may have moved the break themselves. */
  end_after = sbrk(0);

  zdtm_ready();
  zdtm_wait();

  if (sbrk(0) != end_after)
    zdtm_fail("program break: expected %p, got %p", (void *)end_after, sbrk(0));
  size_t off = zdtm_check(start, grow, 10, 0);
  if (off != (size_t)-1)
    zdtm_fail("brk heap at %p: byte %zu differs", (void *)start, off);
  for (int i = 0; i < 16; i++)
    if ((off = zdtm_check(blocks[i], sizes[i], 11 + i, 0)) != (size_t)-1)
      zdtm_fail("malloc block %d at %p: byte %zu differs", i, (void *)blocks[i], off);
  /* The heap must still work: grow and shrink it again. */
  if (sbrk(4096) != end_after || sbrk(-4096) == (void *)-1 || sbrk(0) != end_after)
    zdtm_fail("sbrk after restore does not continue from %p", (void *)end_after);
  zdtm_finish();
}
