/* zdtm-batch: several zdtm programs in one tree, for one checkpoint and one
 * restore of them all (the VM suites' time: a container costs seconds under
 * TCG, most programs' own state a fraction of that).
 *
 *   zdtm-batch READY RESULT PROGRAM...
 *
 * Each PROGRAM (a path) runs in a child of its own, in a directory named
 * after it (its base name less "zdtm-", made in the current one), as
 * `PROGRAM DIR/ready DIR/result`; they start one after the other, each ready
 * before the next starts. READY once all are. On SIGTERM each child gets
 * SIGTERM in turn and is waited for; RESULT says PASS when every one exited
 * 0 (each one's own lines are in DIR/result). */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_PROGS 64

/* The directory of PROGRAM: its base name less "zdtm-". */
static const char *
dir_of(const char *prog)
{
  const char *b = strrchr(prog, '/');
  b = b ? b + 1 : prog;
  return strncmp(b, "zdtm-", 5) == 0 ? b + 5 : b;
}

/* zdtm_batch's child J: PROGRAM argv[3 + J] executed there. */
static void
batch_prog(int j, const char *ready, const char *result, void *arg)
{
  char **argv = arg;
  signal(SIGTERM, SIG_DFL);
  execl(argv[3 + j], argv[3 + j], ready, result, (char *)NULL);
  fprintf(stderr, "zdtm-batch: %s: %s\n", argv[3 + j], strerror(errno));
}

int
main(int argc, char **argv)
{
  const char *names[MAX_PROGS];
  int n = argc - 3;
  if (n < 1 || n > MAX_PROGS)
    {
      fprintf(stderr, "usage: zdtm-batch READY RESULT PROGRAM... (1 to %d programs)\n", MAX_PROGS);
      return 2;
    }
  zdtm_init(3, argv);
  for (int j = 0; j < n; j++)
    names[j] = dir_of(argv[3 + j]);
  zdtm_batch(n, names, batch_prog, argv);
}
