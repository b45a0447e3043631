/* crest: POSIX timers (timer_create), as /proc/PID/timers lists them. Not
 * restored yet: a process holding one is refused at checkpoint, naming the
 * timer (docs/engine.md, "Tasks"). Restoring them needs the same timer IDs,
 * which a stock 6.1 kernel hands out only in creation order. */
#include <config.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine-int.h"
#include "util.h"

int
timers_check(pid_t pid, crest_error_t *err)
{
  cleanup_free char *path = xasprintf("/proc/%d/timers", pid);
  cleanup_free char *t = NULL;
  size_t len;
  const char *id, *clk, *sig;

  if (read_file(path, &t, &len, 0, err) < 0)
    return -1;
  if (strncmp(t, "ID:", 3) != 0)
    return 0;
  id = t + 3;
  clk = strstr(t, "ClockID:");
  sig = strstr(t, "signal:");
  return crest_error_make(err, ENOTSUP,
                          "task %d: POSIX timer ID %ld (clock %ld, signal %ld) is not restored "
                          "yet: cannot checkpoint it",
                          pid, strtol(id, NULL, 10), clk ? strtol(clk + 8, NULL, 10) : -1L,
                          sig ? strtol(sig + 7, NULL, 10) : -1L);
}
