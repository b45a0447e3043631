/* crest: seccomp filters (docs/engine.md, "Seccomp filters").
 *
 * A task's filters cannot be read without CAP_SYS_ADMIN of the initial user
 * namespace (PTRACE_SECCOMP_GET_FILTER), which crest never holds; /proc
 * shows only the mode and how many filters a task has. So the engine never
 * saves a filter: the caller says how many filters the tree's own
 * configuration installs (a container's linux.seccomp: crun installs one),
 * every thread must have exactly those, and the count goes into the image.
 * At restore the filters come from the same place (crun installs the same
 * profile in the restorer, and every task it forks inherits it): each
 * process must have had as many filters as the restore runs under. */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dump-int.h"
#include "restore-int.h"
#include "util.h"

/* The seccomp mode and filter count STATUS (a /proc status) shows; -1 for
   a count the kernel does not show (before 5.9). */
static void
seccomp_of(const char *status, int *mode, int *filters)
{
  const char *s = status_field(status, "Seccomp");
  *mode = s ? atoi(s) : 0;
  s = status_field(status, "Seccomp_filters");
  *filters = s ? atoi(s) : *mode == 2 ? -1 : 0;
}

int
seccomp_dump_check(const struct dproc *p, int expected, int *filters, crest_error_t *err)
{
  *filters = 0;
  for (size_t t = 0; t < p->nth; t++)
    {
      cleanup_free char *what = xasprintf("task/%d/status", p->th[t].tid);
      cleanup_free char *status = NULL;
      int mode, n;
      if (read_proc(p->pid, what, &status, err) < 0)
        return -1;
      seccomp_of(status, &mode, &n);
      if (mode == 1)
        return crest_error_make(err, ENOTSUP, "task %d: seccomp strict mode cannot be checkpointed",
                                p->th[t].tid);
      if (n < 0)
        return crest_error_make(err, ENOTSUP,
                                "task %d: seccomp filters, and this kernel does not show how many "
                                "(no Seccomp_filters in /proc status)",
                                p->th[t].tid);
      if (n != expected)
        return crest_error_make(
            err, ENOTSUP,
            "task %d: %d seccomp filter%s, and %s: crest restores only the filter crun installs "
            "from the container's linux.seccomp, never one a task installed itself",
            p->th[t].tid, n, n == 1 ? "" : "s",
            expected ? "the container's linux.seccomp installs 1"
                     : "there is no container profile");
      *filters = n;
    }
  return 0;
}

int
seccomp_restore_check(const struct rctx *c, crest_error_t *err)
{
  cleanup_free char *status = NULL;
  int mode, own;
  if (read_file("/proc/self/status", &status, NULL, 0, err) < 0)
    return crest_error_wrap(err, "restore: its own seccomp filters");
  seccomp_of(status, &mode, &own);
  for (size_t i = 0; i < c->np; i++)
    if (!c->p[i].zombie && c->p[i].seccomp_filters != own)
      return crest_error_make(
          err, EINVAL,
          "process %d: it had %d seccomp filters at checkpoint, the restore runs under %d%s",
          c->p[i].pid, c->p[i].seccomp_filters, own,
          own < 0 ? " (this kernel does not show how many)"
                  : " (the container's linux.seccomp must be the checkpointed one)");
  return 0;
}
