/* crest: the test knobs of a build configured with --enable-test-hooks (see
 * testhook.h). This table is the complete list: a knob read anywhere else
 * must be added here, with what it does. */
#include <config.h>
#include "testhook.h"

#ifdef CREST_TEST_HOOKS
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const knobs[] = {
  /* A fault at a named point: dump-task-exit (the engine kills the tree's
     last task in the middle of a dump), dump-signal (it sends itself SIGTERM
     there), restore-blob (the last process's restorer fails after every task
     exists); ACTION@PHASE for a checkpoint (dump-guard.c), ACTION one of
     kill-crest (the crest the caller started is killed), kill-worker (the
     engine's tracing worker is killed), kill-both (both), sigterm-crest
     (the crest the caller started is sent SIGTERM), eio (the phase
     fails with EIO), kill-tree (wait only: the process crest waits for is
     SIGKILLed), eagain (the phase fails as a passing state of the tree
     would, and the checkpoint is tried again), eagain-once (only on the
     first try), PHASE one of seize, inject, memory, files, commit,
     committed (the image is complete),
     in-call (an injected call in flight, ptrace.c), parked (a thread
     waits at an injected call's exit stop for the next call of its chain,
     ptrace.c), wait (crest waits for
     the leader of a process of several threads, every one of them traced
     by crest, ptrace.c); restore-kill:PHASE
     (a process-mode restore SIGKILLs itself at PHASE: checked, files,
     created, finishing, running; `crest restore` passes restore-* on to a
     container's restorer, see docs/engine.md); restore-crun-state (a
     container restore fails to give crun's state the container's config,
     once its seccomp.bpf is written: container-cr.c); restore-init-fail
     (a container's init fails once its own descriptors are in place,
     restore-task.c); group-late (a restored process group's leader makes
     its group 300 ms late, restore-task.c). */
  "CREST_FAULT",
  /* N: a CREST_FAULT of a checkpoint fires only once its point has been
     passed N times (in-call: the Nth injected call, in a later process). */
  "CREST_FAULT_AFTER",
  /* Set: a checkpoint prints its counters (processes, bytes, readv calls),
     a process-mode restore the time of each phase. */
  "CREST_STATS",
  /* 1: restore takes the ns_last_pid path instead of clone3() + set_tid. */
  "CREST_FORCE_NS_LAST_PID",
  /* N: the container restorer sleeps N ms (at most 10 s) before it works,
     so that a suite can look at it; `crest restore` passes it on. */
  "CREST_RESTORER_PAUSE_MS",
  /* 1: SHA-256 uses the portable code even where the CPU has SHA-NI. */
  "CREST_SHA256_PORTABLE",
  /* off: a checkpoint saves every child's pages in full, none as its
     parent's (the bench's reference); no-premap: restore maps no parent's
     memory before forking its children, who copy the pages they share in
     full (the fallback of mem-cow.c); aside: restore premaps every such
     mapping aside, as when crest's own memory holds its place, and the
     blob moves it. */
  "CREST_COW",
  /* N: restore --lazy-pages waits up to N ms between two background
     copies (faults are answered meanwhile), so that a test sees pages
     come in by fault. */
  "CREST_LAZY_PACE_MS",
  /* 1: checkpoint --pre-dump acts as on a kernel without soft-dirty
     tracking (CONFIG_MEM_SOFT_DIRTY), and refuses. */
  "CREST_NO_SOFT_DIRTY",
};

const char *
crest_test_knob(const char *name)
{
  for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++)
    if (strcmp(knobs[i], name) == 0)
      return getenv(name);
  fprintf(stderr, "crest: internal error: `%s` is not a test knob listed in testhook.c\n", name);
  abort();
}

bool
crest_fault_at(const char *point)
{
  const char *f = crest_test_knob("CREST_FAULT");
  return f && strcmp(f, point) == 0;
}
#else
/* ISO C wants at least one declaration in a translation unit. */
typedef int crest_no_test_hooks;
#endif
