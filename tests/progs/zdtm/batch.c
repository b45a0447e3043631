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

/* Start PROG in DIR under CWD; wait until it is ready. 0 if it never was
   (a line says why). */
static pid_t
start(const char *cwd, const char *prog)
{
  char ready[PATH_MAX + 300], result[PATH_MAX + 300];
  const char *dir = dir_of(prog);
  pid_t k;
  if (strlen(dir) > 200)
    zdtm_error("%s: a name too long", prog);
  snprintf(ready, sizeof ready, "%s/%.200s/ready", cwd, dir);
  snprintf(result, sizeof result, "%s/%.200s/result", cwd, dir);
  if (mkdir(dir, 0755) < 0 && errno != EEXIST)
    zdtm_error("mkdir %s: %s", dir, strerror(errno));
  k = fork();
  if (k < 0)
    zdtm_error("fork: %s", strerror(errno));
  if (k == 0)
    {
      signal(SIGTERM, SIG_DFL);
      if (chdir(dir) == 0)
        execl(prog, prog, ready, result, (char *)NULL);
      fprintf(stderr, "zdtm-batch: %s: %s\n", prog, strerror(errno));
      _exit(127);
    }
  for (int ms = 0; ms < 120000; ms++)
    {
      int st;
      if (access(ready, F_OK) == 0)
        return k;
      if (waitpid(k, &st, WNOHANG) == k)
        {
          zdtm_fail("%s ended before it was ready (status 0x%x; its lines: %s)", dir, st, result);
          return 0;
        }
      usleep(1000);
    }
  zdtm_fail("%s not ready within 120 s", dir);
  kill(k, SIGKILL);
  return 0;
}

int
main(int argc, char **argv)
{
  pid_t kids[MAX_PROGS];
  const char *names[MAX_PROGS];
  char cwd[PATH_MAX];
  int n = argc - 3;
  if (n < 1 || n > MAX_PROGS)
    {
      fprintf(stderr, "usage: zdtm-batch READY RESULT PROGRAM... (1 to %d programs)\n", MAX_PROGS);
      return 2;
    }
  zdtm_init(3, argv);
  if (!getcwd(cwd, sizeof cwd))
    zdtm_error("getcwd: %s", strerror(errno));
  for (int j = 0; j < n; j++)
    if (!(kids[j] = start(cwd, argv[3 + j])))
      {
        for (int k = 0; k < j; k++)
          kill(kids[k], SIGKILL);
        zdtm_finish();
      }
  zdtm_ready();
  zdtm_wait();
  for (int j = 0; j < n; j++)
    names[j] = dir_of(argv[3 + j]);
  zdtm_end_children(kids, names, n);
  zdtm_finish();
}
