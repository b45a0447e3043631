/* bench cow-tree: a process with MIB MiB of touched private anonymous
 * memory (default 32) that forks N children (default 20) which only read
 * it, for the copy-on-write figures of the benchmark; zdtm protocol
 * (tests/README.md): READY holds the root's PID, READY.pids every PID of
 * the tree; on SIGTERM every child checks the memory and exits, and the
 * root reports PASS when all did.
 *
 *   cow-tree N MIB READY RESULT */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
  int n = argc > 1 ? atoi(argv[1]) : 20;
  size_t len = (size_t)(argc > 2 ? atoi(argv[2]) : 32) << 20;
  volatile uint64_t sum = 0;
  pid_t *kids;
  uint8_t *mem;
  char path[4096];
  FILE *f;

  if (argc < 5 || n < 0 || len == 0)
    {
      fprintf(stderr, "usage: cow-tree N MIB READY RESULT\n");
      return 2;
    }
  zdtm_init(argc - 2, argv + 2);
  kids = calloc(n + 1, sizeof(pid_t));
  mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (!kids || mem == MAP_FAILED)
    zdtm_error("mmap: %s", strerror(errno));
  zdtm_fill(mem, len, 13, 0);
  for (int i = 0; i < n; i++)
    {
      kids[i] = fork();
      if (kids[i] < 0)
        zdtm_error("fork: %s", strerror(errno));
      if (kids[i] == 0)
        {
          for (size_t o = 0; o < len; o += 4096)
            sum += mem[o];
          zdtm_wait();
          _exit(zdtm_check(mem, len, 13, 0) == (size_t)-1 ? 0 : 1);
        }
    }
  snprintf(path, sizeof(path), "%s.pids", argv[3]);
  f = fopen(path, "w");
  if (!f)
    zdtm_error("%s: %s", path, strerror(errno));
  fprintf(f, "%d\n", (int)getpid());
  for (int i = 0; i < n; i++)
    fprintf(f, "%d\n", (int)kids[i]);
  fclose(f);
  zdtm_ready();
  zdtm_wait();
  for (int i = 0; i < n; i++)
    kill(kids[i], SIGTERM);
  if (zdtm_check(mem, len, 13, 0) != (size_t)-1)
    zdtm_fail("the root's memory differs");
  for (int i = 0; i < n; i++)
    {
      int st;
      if (waitpid(kids[i], &st, 0) != kids[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        zdtm_fail("child %d: its memory differs or it ended with status %#x", (int)kids[i], st);
    }
  zdtm_finish();
}
