/* bench tree: a process tree of N processes (default 200: the root and
 * N-1 children) for the restore benchmark, following the zdtm protocol
 * (tests/README.md): READY holds the root's PID; on SIGTERM every
 * child checks its PID and exits, and the root reports PASS when all did.
 *
 *   tree N GAP READY RESULT
 *
 * Between two children the root burns up to GAP PIDs (fork + exit), so the
 * PIDs are scattered as in a long-running namespace: the cost of reaching
 * a given PID by cycling through PIDs with fork() depends on that. The PIDs
 * of the tree are written, one per line, to READY.pids. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
  int n = argc > 1 ? atoi(argv[1]) : 200, gap = argc > 2 ? atoi(argv[2]) : 0;
  pid_t *kids;
  char path[4096];
  FILE *f;

  if (argc < 5)
    {
      fprintf(stderr, "usage: tree N GAP READY RESULT\n");
      return 2;
    }
  zdtm_init(argc - 2, argv + 2);
  kids = calloc(n, sizeof(pid_t));
  srand(42);
  for (int i = 1; i < n; i++)
    {
      int burn = gap ? rand() % (gap + 1) : 0;
      for (int b = 0; b < burn; b++)
        {
          pid_t p = fork();
          if (p == 0)
            _exit(0);
          waitpid(p, NULL, 0);
        }
      kids[i] = fork();
      if (kids[i] < 0)
        zdtm_error("fork: %s", strerror(errno));
      if (kids[i] == 0)
        {
          pid_t me = getpid();
          zdtm_wait();
          _exit(getpid() == me ? 0 : 1);
        }
    }
  snprintf(path, sizeof(path), "%s.pids", argv[3]);
  f = fopen(path, "w");
  if (!f)
    zdtm_error("%s: %s", path, strerror(errno));
  fprintf(f, "%d\n", (int)getpid());
  for (int i = 1; i < n; i++)
    fprintf(f, "%d\n", (int)kids[i]);
  fclose(f);

  zdtm_ready();
  zdtm_wait();

  for (int i = 1; i < n; i++)
    {
      int st;
      kill(kids[i], SIGTERM);
      if (waitpid(kids[i], &st, 0) != kids[i] || !WIFEXITED(st) || WEXITSTATUS(st))
        zdtm_fail("child %d: ended with status 0x%x", kids[i], st);
    }
  zdtm_finish();
}
