/* zdtm.h: the protocol every crest zdtm-style test program follows (see
 * tests/README.md).
 *
 *   zdtm-NAME [READY [RESULT]]
 *
 * 1. The program sets up the state it is about to check.
 * 2. zdtm_ready() announces it: READY is created (write to READY.tmp, rename)
 *    holding the PID of the test's root process and a newline; without READY,
 *    "READY PID" is printed on stdout.
 * 3. zdtm_wait() returns once SIGTERM has arrived (checkpoint and restore
 *    happen in between). It polls a flag with short sleeps, so a restore that
 *    interrupts any sleep is harmless.
 * 4. The program checks the state and ends with zdtm_pass() or zdtm_fail():
 *    one line "PASS" or "FAIL: what differed (expected X, got Y)", appended to
 *    RESULT (opened only now) or printed on stdout, exit status 0 or 1.
 *    Several processes of one test may append lines; the test passes when
 *    there is a PASS line and no FAIL line.
 */
#ifndef ZDTM_H
#define ZDTM_H

#include <stdbool.h>
#include <stdint.h>
#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

/* Parse argv (READY, RESULT) and install the SIGTERM handler. */
void
zdtm_init(int argc, char **argv);
void
zdtm_ready(void);
/* For a test that changes its root directory (chroot): DIRFD is a
   descriptor of the root it started in, kept open; READY and RESULT are
   reached from it from now on (they are absolute paths in that root). */
void
zdtm_paths_from(int dirfd);
void
zdtm_wait(void);
/* Set by the SIGTERM handler (for waits written in assembly). */
extern volatile sig_atomic_t zdtm_stop_flag;
/* Has SIGTERM arrived? (for loops that do their own waiting) */
bool
zdtm_stopped(void);
/* Record a failure; zdtm_failed() tells whether any was recorded. */
void
zdtm_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
bool
zdtm_failed(void);
/* Setup could not be done (not a failure of checkpoint/restore): prints
   "ERROR: ..." and exits 2 before zdtm_ready(). */
void
zdtm_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* Write an informational "NOTE: ..." line (a part not checked, and why). */
void
zdtm_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Write a "KNOWN: ..." line: a difference that is a documented gap of crest
   (docs/engine.md), not a pass. Harnesses report it as a known failure
   (TAP TODO, or a bats skip that names it), never as a plain pass. */
void
zdtm_known(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print PASS when nothing failed; exit 0 or 1. */
void
zdtm_finish(void) __attribute__((noreturn));
/* Exit status only (for children, whose FAIL lines are already written). */
int
zdtm_status(void);

/* Wait (1 ms polls, at most 20 s) until *W, a word in memory shared
   between processes, holds WANT; false when it never did. */
bool
zdtm_await(volatile uint32_t *w, uint32_t want);

/* A TCP connection over IPv4 loopback: *L listens (backlog 2) on an
   ephemeral port whose address is *A, *C is the client end with
   TCP_NODELAY set before it connected, *S the end *L accepted. A setup
   failure ends the test with zdtm_error. */
struct sockaddr_in;
void
zdtm_tcp_pair(int *l, struct sockaddr_in *a, int *c, int *s);

/* A batch (zdtm-batch, zdtm-lost --batch), after zdtm_init: N children,
   one after the other, child J in the directory NAMES[J] (made in the
   current one), where RUN(J, READY, RESULT, ARG) makes it a zdtm program
   with those absolute paths (it does not return); each must make its
   READY within 120 s before the next starts. Then zdtm_ready, zdtm_wait,
   and each child in turn gets SIGTERM and is waited for. Ends the process
   (zdtm_finish): PASS when every child exited 0; a failure names the one
   that did not, or that ended or hung before it was ready (the others are
   killed then, and nothing is ready). */
void __attribute__((noreturn))
zdtm_batch(int n, const char *const *names,
           void (*run)(int j, const char *ready, const char *result, void *arg), void *arg);

/* Deterministic byte pattern: a function of seed and offset. */
static inline uint8_t
zdtm_pattern(uint32_t seed, uint64_t off)
{
  uint64_t x = off * 0x9e3779b97f4a7c15ULL + seed * 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 31;
  return (uint8_t)(x ^ (x >> 17));
}
void
zdtm_fill(void *p, size_t len, uint32_t seed, uint64_t base);
/* Returns the first offset that differs, or (size_t) -1. */
size_t
zdtm_check(const void *p, size_t len, uint32_t seed, uint64_t base);

/* The calling thread's inheritable, permitted and effective sets: 0, or -1
   with errno. */
int
zdtm_get_caps(uint64_t *inh, uint64_t *prm, uint64_t *eff);
int
zdtm_set_caps(uint64_t inh, uint64_t prm, uint64_t eff);
/* Become UID and GID ID (its only group) where this user namespace maps
   it and the caller is root with CAP_SETUID and CAP_SETGID (a
   container's init): 1 done, 0 not here, -1 failed (errno). */
int
zdtm_become(unsigned id);
/* Does this kernel let a task that holds CAP_CHECKPOINT_RESTORE in its own
   user namespace, but not CAP_SETPCAP, drop it from its bounding set? 1:
   allowed; 0: refused; -1: could not be asked (WHY). */
int
zdtm_probe_bnd_drop(char *why, size_t len);

#endif
