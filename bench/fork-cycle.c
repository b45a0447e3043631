/* bench fork-cycle: the seed's baseline for exact PIDs without set_tid.
 * Reads target PIDs (one per line, ascending after sorting) and creates a
 * process with each, the old way: fork() children that exit at once until
 * the kernel's next PID is the target, then fork the real one. Prints the
 * number of processes wanted, forks made and seconds taken. Run it in a
 * fresh PID namespace (unshare -Urpf), as a restore would. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int
cmp(const void *a, const void *b)
{
  return *(const int *)a - *(const int *)b;
}

int
main(int argc, char **argv)
{
  int cap = 1024, n = 0, *t = malloc(cap * sizeof(int)), v;
  long forks = 0, missed = 0;
  struct timespec t0, t1;
  FILE *f = argc > 1 ? fopen(argv[1], "r") : stdin;
  pid_t *made;

  if (!f)
    {
      fprintf(stderr, "fork-cycle: %s: %s\n", argv[1], strerror(errno));
      return 2;
    }
  while (fscanf(f, "%d", &v) == 1)
    {
      if (n == cap)
        t = realloc(t, (cap *= 2) * sizeof(int));
      t[n++] = v;
    }
  qsort(t, n, sizeof(int), cmp);
  made = calloc(n, sizeof(pid_t));
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < n; i++)
    {
      if (t[i] <= getpid())
        {
          missed++; /* our own PID, or one below it: unreachable */
          continue;
        }
      for (;;)
        {
          pid_t p = fork();
          forks++;
          if (p < 0)
            {
              perror("fork");
              return 1;
            }
          if (p == 0)
            {
              if (getpid() == t[i])
                pause();
              _exit(0);
            }
          if (p == t[i])
            {
              made[i] = p;
              break;
            }
          waitpid(p, NULL, 0);
          if (p > t[i])
            {
              missed++; /* passed it (taken by someone else) */
              break;
            }
        }
    }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("fork-cycle: %d PIDs wanted, %ld made, %ld forks, %.3f s\n", n, n - missed, forks,
         (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
  for (int i = 0; i < n; i++)
    if (made[i] > 0)
      {
        kill(made[i], SIGKILL);
        waitpid(made[i], NULL, 0);
      }
  return missed ? 1 : 0;
}
