/* engine-tracer: another tracer, for tests/host/engine-stopped.test. It
 * seizes a task the way strace -p or a debugger does and keeps it until it
 * is told to stop.
 *
 *   engine-tracer TID run|hold READY
 *
 * run:  PTRACE_SEIZE only: the task runs on, traced (TracerPid is ours);
 *       a signal it gets is passed on, as strace does.
 * hold: PTRACE_SEIZE and PTRACE_INTERRUPT: the task sits in a tracing
 *       stop (state t) for as long as we live.
 * READY is created once the task is seized (with hold: stopped). SIGTERM
 * ends the tracer, and the kernel detaches the task. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void
on_term(int sig)
{
  (void)sig;
  stop = 1;
}

int
main(int argc, char **argv)
{
  pid_t tid;
  int hold, fd, st;
  struct sigaction sa;

  if (argc != 4 || (strcmp(argv[2], "run") != 0 && strcmp(argv[2], "hold") != 0))
    {
      fprintf(stderr, "usage: engine-tracer TID run|hold READY\n");
      return 2;
    }
  tid = atoi(argv[1]);
  hold = strcmp(argv[2], "hold") == 0;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_term;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);

  if (ptrace(PTRACE_SEIZE, tid, 0, 0) < 0)
    {
      fprintf(stderr, "engine-tracer: seize %d: %s\n", tid, strerror(errno));
      return 1;
    }
  if (hold)
    {
      if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0)
        {
          fprintf(stderr, "engine-tracer: interrupt %d: %s\n", tid, strerror(errno));
          return 1;
        }
      while (waitpid(tid, &st, __WALL) < 0)
        if (errno != EINTR)
          {
            fprintf(stderr, "engine-tracer: wait %d: %s\n", tid, strerror(errno));
            return 1;
          }
    }
  fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || close(fd) < 0)
    {
      fprintf(stderr, "engine-tracer: create %s: %s\n", argv[3], strerror(errno));
      return 1;
    }
  while (!stop)
    {
      struct timespec ts = { 0, 10 * 1000 * 1000 };
      pid_t w = waitpid(tid, &st, __WALL | WNOHANG);
      if (w == tid && (WIFEXITED(st) || WIFSIGNALED(st)))
        return 0;
      if (w == tid && WIFSTOPPED(st) && !hold)
        {
          /* A signal on its way goes on; any other stop is let go. */
          int sig = (st >> 16) == 0 ? WSTOPSIG(st) : 0;
          ptrace(PTRACE_CONT, tid, 0, sig);
        }
      nanosleep(&ts, NULL);
    }
  return 0;
}
