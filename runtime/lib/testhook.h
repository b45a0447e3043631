/* crest: test-only switches and fault injection.
 *
 * Tests reach corners of the product that a user cannot (a task dying in the
 * middle of a dump, a restorer failing after every task exists, the
 * ns_last_pid fallback on a kernel that has clone3). The switches that get
 * them there are environment variables, read only through this header, and
 * only in a build configured with --enable-test-hooks (CREST_TEST_HOOKS in
 * config.h). In any other build crest_test_knob() is a constant NULL, so a
 * production binary has no such switch at all: the compiler drops the code
 * behind it. The knobs and their meaning are listed in testhook.c and in
 * docs/hacking.md. */
#ifndef CREST_TESTHOOK_H
#define CREST_TESTHOOK_H

#include <config.h>
#include <stdbool.h>
#include <stddef.h>

#ifdef CREST_TEST_HOOKS
/* The value of the test knob NAME (an environment variable listed in
   testhook.c; any other name aborts, so a typo cannot go unnoticed), or NULL
   when it is not set. */
const char *
crest_test_knob(const char *name);
/* True when the test asks for the fault at POINT (CREST_FAULT=POINT). */
bool
crest_fault_at(const char *point);
#else
static inline const char *
crest_test_knob(const char *name)
{
  (void)name;
  return NULL;
}
static inline bool
crest_fault_at(const char *point)
{
  (void)point;
  return false;
}
#endif

/* Whether this build honours test knobs (`crest --version` says so, and a
   test that needs a knob skips, saying why, when it does not). */
static inline bool
crest_test_hooks_built(void)
{
#ifdef CREST_TEST_HOOKS
  return true;
#else
  return false;
#endif
}

#endif
