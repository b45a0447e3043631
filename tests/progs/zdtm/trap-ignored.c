/* zdtm-trap-ignored: a process that ignores SIGTRAP. The checkpoint stops
 * threads at int3 breakpoints, and a SIGTRAP the kernel forces on a task
 * that ignores it resets the disposition to the default, so a checkpoint
 * must refuse this process before it touches it. After SIGTERM the program
 * checks that SIGTRAP is still ignored. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

int
main(int argc, char **argv)
{
  struct sigaction sa;

  zdtm_init(argc, argv);
  if (signal(SIGTRAP, SIG_IGN) == SIG_ERR)
    zdtm_error("signal(SIGTRAP, SIG_IGN): %s", strerror(errno));
  zdtm_ready();
  zdtm_wait();
  if (sigaction(SIGTRAP, NULL, &sa) < 0)
    zdtm_fail("sigaction(SIGTRAP): %s", strerror(errno));
  else if (sa.sa_handler != SIG_IGN)
    zdtm_fail("SIGTRAP disposition (expected SIG_IGN, got %p)", (void *)sa.sa_handler);
  zdtm_finish();
}
