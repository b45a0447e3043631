/* crest: engine internals shared by dump.c, restore.c and ptrace.c. */
#ifndef CREST_ENGINE_INT_H
#define CREST_ENGINE_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>
#include "engine.h"
#include "error.h"

#define XSTATE_MAX 16384

#ifndef PTRACE_GET_RSEQ_CONFIGURATION
#define PTRACE_GET_RSEQ_CONFIGURATION 0x420f
#endif
struct rseq_conf
{
  uint64_t rseq_abi_pointer;
  uint32_t rseq_abi_size;
  uint32_t signature;
  uint32_t flags;
  uint32_t pad;
};

/* The sigaction layout the kernel uses (not glibc's). */
struct ksigaction
{
  uint64_t handler;
  uint64_t flags;
  uint64_t restorer;
  uint64_t mask;
};

/* ptrace.c */
/* A signal that arrived while the engine held the thread: delivered on
   detach. */
void
pt_defer_signal(pid_t tid, int sig);
/* While on, a stop signal a thread takes during an injected syscall is
   dropped instead of failing it: set while the engine works on a process
   that is in a group stop (docs/engine.md). */
void
pt_drop_stop_signals(bool on);
/* Detach, handing back a deferred signal if any. */
int
pt_detach(pid_t tid);
/* Seize a thread and wait for it to stop; *STOPSIG is the signal of that
   stop: SIGTRAP, or the stop signal when its process is in a group stop. */
int
pt_seize_interrupt(pid_t tid, int *stopsig, crest_error_t *err);
int
pt_wait_stop(pid_t tid, int *status, crest_error_t *err);
int
pt_getregs(pid_t tid, struct user_regs_struct *r, crest_error_t *err);
int
pt_setregs(pid_t tid, const struct user_regs_struct *r, crest_error_t *err);
int
pt_getxstate(pid_t tid, uint8_t *buf, size_t *len, crest_error_t *err);
int
pt_setxstate(pid_t tid, const uint8_t *buf, size_t len, crest_error_t *err);
/* Make a stopped thread issue one syscall at GADGET (a "syscall" instruction
   in its address space) and come back to a stop; SAVED are the registers
   put back afterwards. *ret is the syscall's result; one interrupted
   (-EINTR, -ERESTART*) is issued again. */
int
pt_inject(pid_t tid, const struct user_regs_struct *saved, uint64_t gadget, long nr,
          const long args[6], long *ret, crest_error_t *err);
/* The same as pt_inject without single-stepping (docs/engine.md, "A
   checkpoint never harms the tree"): the call runs between PTRACE_SYSCALL's
   entry and exit stops with every signal blocked (a signal that arrives,
   a child's exit, a timer, stays pending: taken off the queue it could
   only be suppressed or delivered on top of the injected registers), and
   the thread is brought back to an interrupt stop (PTRACE_EVENT_STOP) with
   SAVED and its own MASK, where the kernel restarts a syscall the thread
   was in as it would have. The thread must be in such a stop. */
int
pt_inject_nostep(pid_t tid, const struct user_regs_struct *saved, uint64_t mask, uint64_t gadget,
                 long nr, const long args[6], long *ret, crest_error_t *err);
/* The thread's signal mask (the one the image records: PTRACE_GETSIGMASK
   also sees the real mask of a thread in sigsuspend or ppoll). */
int
pt_get_sigmask(pid_t tid, uint64_t *mask, crest_error_t *err);
/* Set the mask back (keeps an error already in ERR). */
int
pt_restore_signals(pid_t tid, uint64_t saved, crest_error_t *err);
/* Registers a restored thread resumes with: an interrupted restartable
   syscall is rewound so that it restarts, as the kernel would have done. */
void
pt_normalize_restart(struct user_regs_struct *r);

/* dump.c: the dump, run by crest_engine_dump in its worker process. */
int
dump_tree_here(pid_t root, const struct crest_dump_opts *o, crest_error_t *err);

/* dump-guard.c */
/* Test hook CREST_FAULT=ACTION@POINT at POINT (seize, inject, memory,
   files, commit): ACTION kill-crest kills the caller's process, kill-worker
   the tracer, eio fails here with EIO. */
int
dump_fault(const char *point, crest_error_t *err);
/* A signal that stops a checkpoint (SIGINT, SIGTERM, SIGHUP, SIGQUIT, held
   blocked during the dump) is pending: -1 with ERR saying which. */
int
dump_interrupted(crest_error_t *err);
/* Remove FINAL_DIR.tmp-PID directories whose PID no longer exists. */
void
dump_remove_stale_tmp(const char *final_dir);

extern const unsigned char crest_restorer_blob[];
extern const size_t crest_restorer_blob_size;

#endif
