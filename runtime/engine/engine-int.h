/* crest: engine internals shared by dump.c, restore.c and ptrace.c. */
#ifndef CREST_ENGINE_INT_H
#define CREST_ENGINE_INT_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>
#include "engine.h"
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>
#include "error.h"

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
bool
pt_drop_stop_signals(bool on); /* returns what it was */
/* Detach, handing back a deferred signal if any. */
int
pt_detach(pid_t tid);
int
pt_release(pid_t tid, int req);
/* Seize a thread and wait for it to stop; *STOPSIG is the signal of that
   stop: SIGTRAP, or the stop signal when its process is in a group stop. */
int
pt_seize_interrupt(pid_t tid, int *stopsig, crest_error_t *err);
int
pt_wait_stop(pid_t tid, int *status, crest_error_t *err);
/* A wait woken by SIGCHLD, which a tracer is sent for every stop and exit of
   a thread it traces: chld_wait_begin blocks it and opens a signalfd for it
   (fd -1 where none could be opened: the caller then looks every 10 ms);
   chld_wait_drain reads what came; chld_wait_end closes it, raises SIGCHLD
   again if one was taken (pending until the caller's mask lets it through,
   or for a later signalfd of the caller's) and puts the mask back. */
struct chld_wait
{
  sigset_t old;
  int fd;
  bool took;
};
void
chld_wait_begin(struct chld_wait *w);
void
chld_wait_drain(struct chld_wait *w);
void
chld_wait_end(struct chld_wait *w);
/* From pt_wait_scope(true) to pt_wait_scope(false) (nested: the outermost
   pair counts), SIGCHLD stays blocked for every pt_wait_stop; the end
   raises SIGCHLD again if one was taken. */
void
pt_wait_scope(bool on);
/* From pt_wait_lone(true) to pt_wait_lone(false), every thread waited for
   is the only thread of its process, which no other thread can keep from
   reporting its exit: pt_wait_stop blocks in waitpid (one call). */
void
pt_wait_lone(bool on);
/* In the scope (pt_wait_scope): until a SIGCHLD comes, or 1 s. */
void
pt_wait_event(void);
/* dump-par.c: inside a coroutine of the dump's injected calls, run another
   until thread TID may have stopped (true); outside of one, false. */
bool
par_yield(pid_t tid);
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
/* The stack pointer TID's injected calls run with from now on: the start
   of its way home (inject-home.c); 0: its own. */
void
pt_set_home(pid_t tid, uint64_t sp);
/* Chained injected calls: from pt_chain_begin (nothing changes where TID
   has no way home) to pt_chain_end, TID's injected calls leave it
   at their syscall-exit stop, every signal blocked, and the next call is
   run from there: two stops a call instead of three. pt_chain_end takes it
   back to its interrupt stop with SAVED and its own MASK. */
void
pt_chain_begin(pid_t tid);
int
pt_chain_end(pid_t tid, const struct user_regs_struct *saved, uint64_t mask, crest_error_t *err);
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
/* The calls the kernel restarts through its restart block, which crest
   makes again with their own arguments (pt_normalize_restart; a thread in
   restart_syscall: restart-scan.c), in the order of restart-scan.c's
   candidate bits. */
extern const long restart_block_calls[4];

/* dump.c: the dump, run by crest_engine_dump in its worker process. */
int
dump_tree_here(pid_t root, const struct crest_dump_opts *o, crest_error_t *err);

/* dump-guard.c */
/* Test hook CREST_FAULT=ACTION@POINT at POINT (seize, inject, memory,
   files, commit, in-call, wait): ACTION kill-crest kills the caller's
   process, kill-worker the tracer, eio fails here with EIO, kill-tree (at
   wait) the process of dump_fault_target. */
int
dump_fault(const char *point, crest_error_t *err);
/* The task a kill-tree fault kills (CREST_FAULT=kill-tree@wait, ptrace.c). */
void
dump_fault_target(pid_t tid);
/* A signal that stops a checkpoint (SIGINT, SIGTERM, SIGHUP, SIGQUIT, held
   blocked during the dump) is pending: -1 with ERR saying which. */
int
dump_interrupted(crest_error_t *err);

/* files-check.c: refuse a descriptor of task PID whose state crest does
   not restore (locks, O_ASYNC, packet pipes, pidfds and other anonymous
   inodes, O_PATH on special files, /proc files of tasks, deleted
   directories and FIFOs), in one line naming the task, fd and reason. */
struct stat;
struct lock_set;
int
files_check_fd(pid_t pid, int fd, const char *link, const struct stat *st, struct lock_set *locks,
               crest_error_t *err);

/* ipc.c: is the file /proc/PID/fd/N leads to a POSIX message queue? */
bool
ipc_is_mqueue(const char *fd_link_path);

/* pstree-check.c: a process whose thread-group leader exited before its
   other threads; a process group or session whose leader exited (IDs as
   recorded, index 0 the root). Refused in one line naming the task. */
int
pstree_check_leader(pid_t pid, crest_error_t *err);
int
pstree_check_groups(size_t n, const pid_t *pid, const pid_t *pgid, const pid_t *sid,
                    crest_error_t *err);

/* timers.c: POSIX timers (timer_create), both directions. */
#define TIMERS_MAX 4096 /* timer IDs (and timers) per process */
struct ptimer
{
  int32_t id, notify, signo;
  int32_t thread; /* SIGEV_THREAD_ID: the thread's index in its process, else -1 */
  int64_t clock;
  uint64_t value; /* sigev_value */
  int64_t it[4];  /* interval sec, nsec, time left sec, nsec (timer_gettime) */
};

/* vmflags.c: smaps VmFlags of a process. The bits a mapping records in
   the image ("madv", format 3); each but VMF_NORESERVE (an mmap flag) is
   put back with madvise(vmflags_advice(bit)). */
#define VMF_DONTFORK 0x1u
#define VMF_WIPEONFORK 0x2u
#define VMF_DONTDUMP 0x4u
#define VMF_HUGEPAGE 0x8u
#define VMF_NOHUGEPAGE 0x10u
#define VMF_SEQUENTIAL 0x20u
#define VMF_RANDOM 0x40u
#define VMF_MERGEABLE 0x80u
#define VMF_NORESERVE 0x100u
/* Format 9: locked in memory (mlock, "lo"), on fault (MLOCK_ONFAULT, "lf"):
   mlock2 by the blob once the rlimits are back. */
#define VMF_LOCKED 0x200u
#define VMF_LOCKONFAULT 0x400u
#define VMF_LOCKS (VMF_LOCKED | VMF_LOCKONFAULT)
/* Format 13: a private mapping the kernel does not charge to the commit
   accounting (VmFlags without "ac" nor "nr": never made writable): mapped
   by the blob at its own protections, never writable, its pages written
   through /proc/self/mem (mem.c: fill_ops). */
#define VMF_NOACCOUNT 0x800u
/* Format 13: a shared mapping of a file that was open for writing
   (VmFlags "sh": it may be made writable), whatever its protections now:
   the file is opened for reading and writing to map it again. */
#define VMF_SHAREDWRITE 0x1000u
/* Format 22: a shared mapping of a memory object (a memfd) made through a
   descriptor not open for writing (VmFlags "ms" without "sh": it may
   never be made writable; the only kind a memfd sealed against writes
   has): mapped again through a read-only descriptor of it. */
#define VMF_SHAREDRO 0x2000u
#define VMF_ALL 0x3fffu
struct vmflags_ent;
int
vmflags_load(pid_t pid, struct vmflags_ent **out, size_t *n, crest_error_t *err);
/* The same from smaps text T (cut into lines in place). */
void
vmflags_parse(char *t, struct vmflags_ent **out, size_t *n);
int
vmflags_check(const struct vmflags_ent *v, size_t n, pid_t pid, uint64_t start, uint64_t end,
              const char *kind, uint32_t *bits, crest_error_t *err);
bool
vmflags_no_pages(const struct vmflags_ent *v, size_t n, uint64_t start);
/* mem.c: refused (-1, one line) when a process of N mappings could not be
   restored under this machine's vm.max_map_count (WHEN: "checkpoint" or
   "restore"). */
int
map_count_check(pid_t pid, size_t n, const char *when, crest_error_t *err);
/* Kilobytes smaps shows swapped out of the mapping at START (-1: no such
   mapping, or no Swap line). */
long
vmflags_swap_kb(const struct vmflags_ent *v, size_t n, uint64_t start);
int
vmflags_advice(uint32_t bit);
bool
vmflags_at_has(const struct vmflags_ent *v, size_t n, uint64_t addr, const char *lock);
int
vmflags_put(yajl_gen g, const struct vmflags_ent *v, size_t n, pid_t pid, uint64_t start,
            uint64_t end, const char *kind, crest_error_t *err);

/* pipes.c */
int
pipe_other_end_closed(int fd, bool read_end);
int
pipe_reopen(int svc, bool read_end, int flags, crest_error_t *err);

/* prctl.c: prctl state and membarrier registrations. dumpable is set last
   of all (restore-finish.c, finish_process): a task that is not dumpable can no
   longer be read with process_vm_readv by a tracer without CAP_SYS_PTRACE. */
struct prctl_proc
{
  int subreaper, thp_disable, dumpable;
  int membarrier; /* MEMBARRIER_CMD_REGISTER_* bits */
  /* The dynamic XSAVE components (AMX's tile data, bit 18) the process
     has been permitted to use (arch_prctl ARCH_GET_XCOMP_PERM; format 12). */
  uint64_t xcomp_perm;
  /* KSM merges every mapping of the process (PR_SET_MEMORY_MERGE, Linux
     6.4: what systemd's MemoryKSM= sets; format 21). */
  int ksm_any;
};
struct prctl_thread
{
  int pdeathsig;
  long slack;
  /* PR_GET_SPECULATION_CTRL of store bypass, indirect branch, L1D flush
     (0 where the kernel has none); format 15 "spec" when one is disabled
     by the thread (prctl_spec_set). */
  int spec[3];
  /* PR_GET_TSC (PR_TSC_ENABLE unless set) and PR_MCE_KILL_GET
     (PR_MCE_KILL_DEFAULT unless set): format 15 "tsc", "mce" when set. */
  int tsc, mce;
  /* ARCH_GET_CPUID (1: cpuid runs; 0: it faults, ARCH_SET_CPUID 0), asked
     only on a CPU with CPUID faulting: format 15 "cpuid" when 0. */
  int cpuid;
};
int
prctl_dump_process(pid_t tid, const struct user_regs_struct *regs, uint64_t mask, uint64_t gadget,
                   uint64_t scratch, struct prctl_proc *out, crest_error_t *err);
int
prctl_dump_thread(pid_t pid, pid_t tid, const struct user_regs_struct *regs, uint64_t mask,
                  uint64_t gadget, uint64_t scratch, bool parent_outside, struct prctl_thread *out,
                  crest_error_t *err);
bool
prctl_put_process(yajl_gen g, const struct prctl_proc *p);
bool
prctl_put_thread(yajl_gen g, const struct prctl_thread *t);
int
prctl_parse_process(yajl_val v, int format, struct prctl_proc *p, crest_error_t *err);
int
prctl_parse_thread(yajl_val v, int format, struct prctl_thread *t, crest_error_t *err);
/* Has the thread a speculation misfeature disabled by prctl, the time
   stamp counter or cpuid denied or a machine-check policy of its own?
   "spec", "tsc", "mce", "cpuid" are then put (format 15). */
bool
prctl_spec_set(const struct prctl_thread *t);
void
prctl_put_spec(yajl_gen g, const struct prctl_thread *t);
/* The thread's prctl calls for them: OPS[i] = { option, arg2, arg3 }, or
   for cpuid { -1, ARCH_SET_CPUID, 0 } (arch_prctl) (at most 6). */
size_t
prctl_ops_spec(const struct prctl_thread *t, long ops[][3]);
/* The blob's process-wide operations: OPS[i] = { syscall, arg0, arg1 }
   (at most 8). */
size_t
prctl_ops_process(const struct prctl_proc *p, long ops[][3]);
/* The same for the XSAVE permissions (ARCH_REQ_XCOMP_PERM), which go
   before the process's threads are made. */
size_t
prctl_ops_xcomp(const struct prctl_proc *p, long ops[][3]);

/* files-unlinked.c: an open, unlinked regular file. Format 3 records its
   size, mode, owner and data extents ("extents", the data file holds their
   bytes in order), or, for a second open file description of the same
   inode, only "unlinked_of" (the id of the first). */
struct unlinked_info
{
  bool present; /* a format 3 record (else: the data file is the whole file) */
  uint64_t size;
  int mode;
  long uid, gid; /* as the tree sees them */
  uint64_t (*ext)[2];
  size_t next;
  int same_as; /* -1, or the file whose inode this one opens again */
};
struct img_writer;
struct img_reader;
int
unlinked_dump(struct img_writer *w, pid_t pid, int fd, int flags, const struct stat *st, int id,
              struct unlinked_info *u, char **data, crest_error_t *err);
void
unlinked_put(yajl_gen g, const struct unlinked_info *u);
int
unlinked_parse(yajl_val v, int format, long id, uint64_t dsize, struct unlinked_info *u,
               crest_error_t *err);
int
unlinked_open(struct img_reader *img, const char *data, const char *path, struct unlinked_info *u,
              int flags, crest_error_t *err);
/* A deleted directory held open: "deleted_dir" with its mode and owner. */
void
deleted_dir_put(yajl_gen g, const struct unlinked_info *u);
int
deleted_dir_parse(yajl_val v, int format, long id, struct unlinked_info *u, crest_error_t *err);
int
deleted_dir_open(const char *path, const struct unlinked_info *u, int flags, crest_error_t *err);

/* locks.c: file locks from fdinfo "lock:" lines (kind 1 POSIX, 2 flock,
   3 OFD; len 0: to the end of the file). Image: "locks", a list of
   [kind, write, start, len], on a file (flock, OFD) or on a process's
   descriptor (POSIX), format 3. */
#define LOCK_MAX 16
#define LOCK_KIND_POSIX 1
#define LOCK_KIND_FLOCK 2
#define LOCK_KIND_OFD 3
struct lock_rec
{
  int kind, write;
  int64_t start, len;
  /* flock: the process that took it, as /proc shows it ("lock:" lines,
     /proc/locks): at checkpoint as crest sees it, in the image and at
     restore the tree's own PID; 0 for none of the tree's. */
  int64_t owner;
};
struct lock_set
{
  size_t n;
  struct lock_rec l[LOCK_MAX];
};
struct flock;
int
locks_read(pid_t pid, int fd, const char *info, const char *link, struct lock_set *out,
           crest_error_t *err);
bool
locks_put(yajl_gen g, const struct lock_set *s, unsigned kinds_mask);
int
locks_parse(yajl_val v, int format, unsigned kinds_mask, struct lock_set *out, crest_error_t *err);
void
locks_flock(const struct lock_rec *l, struct flock *fl);
int
locks_apply_ofd(int fd, const char *path, const struct lock_set *s, crest_error_t *err);

extern const unsigned char crest_restorer_blob[];
extern const size_t crest_restorer_blob_size;

/* Event descriptors (docs/engine.md, "Event descriptors"): eventfd.c,
   timerfd.c, signalfd.c, eventpoll.c, inotify.c, each one descriptor type
   of files.h. The first four keep their state in one record (dfile->priv,
   rfile->priv): what fdinfo shows of the open file description. */
struct epoll_target
{
  int tfd;         /* the descriptor number it was added with */
  uint32_t events; /* as fdinfo shows them (EPOLLONESHOT fired: no poll bits) */
  uint64_t data;
  int toff;     /* dump: its rank among the epoll's targets of this tfd */
  uint64_t ino; /* dump: the target's inode, to narrow the search */
  int file;     /* the target's open file description (image id) */
};
struct evfd
{
  /* eventfd */
  uint64_t count;
  bool semaphore;
  /* timerfd: the value to arm it with, relative, or absolute on its
     clock when TFD_TIMER_ABSTIME is set (0, 0: disarmed) */
  int clockid, settime_flags;
  uint64_t ticks;
  int64_t value[2], interval[2];
  /* signalfd */
  uint64_t sigmask;
  /* epoll: its targets, in the same allocation (one free() frees all) */
  size_t nt;
  struct epoll_target t[];
};
/* Is LINK (an fd link) one of the event descriptors crest restores? */
bool
evfd_kind(const char *link);
/* Task PID's /proc/PID/fdinfo/FD. */
int
evfd_fdinfo(pid_t pid, int fd, char **info, crest_error_t *err);

/* restore.c: milliseconds since T0 (CLOCK_MONOTONIC). */
struct timespec;
double
ms_since(const struct timespec *t0);

/* chain.c: parent images of pre-dumps (docs/engine.md, "Pre-dumps"). */
#define CHAIN_MAX CREST_IMAGE_CHAIN_MAX /* images in a chain: the parent, its ancestors */
struct img_reader;
/* DIR/PARENT, "." and ".." resolved in the text (DIR need not exist);
   PARENT when absolute. */
char *
chain_path(const char *dir, const char *parent);
/* Open the images from DIR on, following each one's parent (at most
   CHAIN_MAX): each a pre-dump, checked as a restore checks an image (page
   files by a thread when LATE; IMG_LATE_BLOCKS: where read, by
   chain_check_reads), the first with the manifest digest SHA
   (NULL: any), each next one with the digest its child names. R[0..*N)
   are the caller's to free, also after a failure. */
int
chain_open(const char *dir, const char *sha, int late, struct img_reader **r, int *n,
           crest_error_t *err);
/* The same, DIRS[0..NDIRS) the images' directories instead of the paths
   their children's manifests give (NDIRS 0: those paths). */
int
chain_open_at(const char *dir, const char *sha, int late, const char *const *dirs, int ndirs,
              struct img_reader **r, int *n, crest_error_t *err);

/* Does NAME (a descriptor's link, a mapping's name) end in " (deleted)"? */
bool
shows_deleted(const char *name);

#endif
