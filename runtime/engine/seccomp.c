/* crest: seccomp filters (docs/engine.md, "Seccomp filters").
 *
 * A task's filters cannot be read without CAP_SYS_ADMIN of the initial user
 * namespace (PTRACE_SECCOMP_GET_FILTER), which crest never holds; /proc
 * shows only the mode and how many filters a task has. So the engine never
 * saves a filter: the caller says how many filters the tree's own
 * configuration installs (a container's linux.seccomp: crun installs one),
 * every thread must have exactly those, and the count goes into the image.
 * At restore the filters come from the same place: crun installs the same
 * profile in the restorer, and every task it forks inherits it; or, for a
 * profile the restore could not run under (one denying ptrace or
 * process_vm_*), crest compiles it and each restored thread installs it
 * at the end of its blob operations (seccomp_install_op). Each process must
 * have had as many filters as the restore gives it. */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <linux/seccomp.h>

#include "dump-int.h"
#include "restore-int.h"
#include "testhook.h"
#include "blob/blob-abi.h"
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
  if (own >= 0 && c->o->seccomp_len)
    own++; /* installed by each thread at its end */
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

/* The install goes in every thread's own list, just before its IDs and
   capabilities change: its earlier steps (mappings, PR_SET_MM, clone3 of
   the threads, timers, pidfds) are the restore's, not the task's, and must
   not meet the profile; the tracer's ptrace and process_vm_* calls are its
   own, under no filter. The thread still holds the restorer's capabilities
   there (CAP_SYS_ADMIN of the container's user namespace, when the config
   gives it) or no_new_privs (inherited from the restorer, where crun set it
   as process.noNewPrivileges says), one of which seccomp(2) requires; crest
   refused the profile otherwise. Each thread installs its own copy, as
   crun's install before the fork gave each thread one filter; what runs
   after it (setresuid, capset, prctl, the int3, the main thread's munmap of
   the blob) is under the profile, as the task's own code is. The program
   lies once in the task's blob region, which is gone with the blob: the
   kernel keeps its own copy. A failure is
   the blob's: the restore fails in one line and every task is killed. */
void
seccomp_install_op(const struct rctx *c, struct oplist *l, struct bld *b)
{
  struct
  {
    uint16_t len;
    uint16_t pad[3];
    uint64_t filter;
  } fp;
  const char *fault = crest_test_knob("CREST_FAULT");
  if (!c->o->seccomp_len)
    return;
  /* One copy of the program and of its sock_fprog in the task's blob
     region, for all its threads (each task fills its own region, once). */
  if (!b->seccomp_fprog)
    {
      memset(&fp, 0, sizeof fp);
      fp.len = (uint16_t)(c->o->seccomp_len / 8);
      fp.filter = bld_alloc(b, c->o->seccomp_len, 8, c->o->seccomp_prog);
      b->seccomp_fprog = bld_alloc(b, sizeof fp, 8, &fp);
    }
  /* Test hook: a flag no kernel knows makes every install fail (EINVAL),
     to prove that a failed install fails the restore, nothing left. */
  OP(l, SYS_seccomp, SECCOMP_SET_MODE_FILTER,
     c->o->seccomp_flags | (fault && strcmp(fault, "restore-seccomp") == 0 ? 1U << 30 : 0),
     b->seccomp_fprog, 0, 0, 0);
}
