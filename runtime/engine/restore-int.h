/* crest: the restore's context, shared by restore.c and the files that
 * restore one kind of object (files.c and the descriptor types, files.h). */
#ifndef CREST_RESTORE_INT_H
#define CREST_RESTORE_INT_H

#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <termios.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/types.h>
#include "affinity.h"
#include "engine-int.h"
#include "arena.h"
#include "files.h"
#include "image.h"

#define PAGE 4096UL
#define TASK_TOP 0x7ffffffff000UL
#define SVC_MIN 100
#define THREAD_STACK (32 * 1024)
#define MAIN_STACK (64 * 1024)

#ifndef PR_SET_MM_MAP
#define PR_SET_MM 35
#define PR_SET_MM_MAP 14
#endif
struct mm_map
{
  uint64_t start_code, end_code, start_data, end_data, start_brk, brk, start_stack, arg_start,
      arg_end, env_start, env_end;
  uint64_t auxv;
  uint32_t auxv_size;
  uint32_t exe_fd;
};

struct rthread
{
  pid_t tid;
  struct user_regs_struct regs;
  uint8_t *xstate; /* crest's own memory (c->tracer): not in a forked task */
  size_t xlen;
  uint64_t tiles; /* the dynamic XSAVE components (AMX's tile data) it holds */
  uint64_t sigmask, rseq, rseq_sig, robust, robust_len, clear_tid, alt_sp, alt_size;
  int64_t rseq_size, alt_flags, policy, nice, prio, umin, umax;
  uint64_t sched_flags;
  /* Format 15: a CPU affinity narrower than its cpuset's, an I/O priority
     (affinity.c). */
  bool has_aff, has_ioprio;
  cpu_set_t aff;
  int64_t ioprio;
  int mpol_mode; /* format 15: its NUMA memory policy, 0: the default */
  cpu_set_t mpol_nodes;
  char comm[16];
  uint8_t (*pending)[128];
  size_t npending;
  bool parked;
  struct prctl_thread pr;
};

struct rvma
{
  uint64_t start, end, pgoff;
  int prot;
  bool shared;
  char kind[16];
  const char *path;
  uint64_t file_size;
  const char *build_id;    /* file, format 21: the ELF file's GNU build ID at checkpoint */
  const char *removed;     /* file, format 24: the removed name it was mapped by */
  const char *data;        /* memfile: the image file with the object's bytes */
  int svc;                 /* file mappings: the descriptor the blob maps */
  uint32_t madv;           /* VMF_* bits (vmflags.c) */
  int shmid, shmflg;       /* sysv: the segment and how shmat attaches it */
  struct shm_place *place; /* sysv, format 21: a segment of crest's namespace, in place */
  bool lazy;               /* --lazy-pages: its pages come on first touch (lazy.c) */
  int mpol_mode;           /* format 15: its NUMA memory policy (0: none)... */
  cpu_set_t *mpol_nodes;   /* ...and nodes (plan memory) */
};

struct rrun
{
  uint64_t vaddr, len, off;
  int from; /* 0: the image's page file; k: its k-th parent's (chain.c) */
};

struct rfd
{
  int fd;
  bool cloexec;
  int file;
  struct lock_set locks; /* POSIX locks, taken by the blob (locks.c) */
};

struct rproc
{
  pid_t pid, ppid, pgid, sid;
  const char *exe, *cwd;
  const char *root_dir; /* its chroot, a path in the tree's root; NULL: none */
  int64_t umask, oom;
  /* Format 15: its /proc coredump_filter (has_coredump: recorded). */
  uint64_t coredump;
  bool has_coredump;
  int64_t autogroup_nice; /* format 15: a session leader's, 0: none */
  struct prctl_proc pr;
  uint64_t personality;
  int64_t uids[4], gids[4];
  gid_t *groups;
  size_t ngroups;
  uint64_t caps[5]; /* inh prm eff bnd amb */
  int64_t securebits;
  bool nnp;
  int seccomp_filters; /* at checkpoint (seccomp.c) */
  uint64_t rl[RLIM_NLIMITS][2];
  struct mm_map mm;
  uint8_t *auxv;
  size_t auxv_len;
  struct ksigaction sa[65];
  uint64_t itimer[3][4];
  struct ptimer *timers; /* POSIX timers (timers.c) */
  size_t ntimers;
  int mcl; /* mlockall flags to put back (MCL_FUTURE, MCL_ONFAULT), else 0 */
  uint8_t (*shared_pending)[128];
  size_t nshared_pending;
  struct rvma *vmas;
  size_t nvmas;
  struct rrun *runs;
  size_t nruns;
  const char *pages_file;
  struct cow_proc *cow; /* mem-cow.c: pages shared with its parent or children */
  int pages_svc, exe_svc;
  int chain_svc[CHAIN_MAX + 1];       /* [k]: its page file in the k-th parent image, or -1 */
  uint64_t chain_size[CHAIN_MAX + 1]; /* and its size (0: none used) */
  struct rfd *fds;
  size_t nfds;
  struct rthread *th;
  size_t nth;
  bool zombie;      /* exited before the checkpoint, not yet waited for */
  int exit_status;  /* then: the status its parent's wait() gets */
  const char *comm; /* and its name */
  /* a zombie of format 14: what /proc shows of it (else left as crest's) */
  bool zstate, zpers;
  bool takes_flock; /* it took a flock of the image (files_install takes it again) */
  uint64_t zsig[3]; /* blocked, ignored, caught */
  int znice;
  int exit_sig; /* the signal its parent gets when it exits (SIGCHLD, or the image's) */
  /* In a group stop at checkpoint: its stop signal (else 0), and whether
     its parent had already collected that stop with waitpid(WUNTRACED). */
  int stop_sig;
  bool stop_reported;
  /* A session leader whose controlling terminal is the tree's pty of
     index CTTY - 1 (0: none), given back at finish with the foreground
     group TPGID (pty.c). */
  int ctty;
  pid_t tpgid;
  /* Its children: c->kids[kid0 .. kid0 + nkids), in image order (set by
     the parse once: a task creating its children reads only those). */
  size_t kid0, nkids;
  /* at restore time */
  pid_t real;
  uint64_t base, size;
  bool seized;
};

struct rfile
{
  int id;
  const struct fd_ops *ops; /* its type (files.h) */
  const char *path, *data;
  int flags;
  int64_t pos;
  uint64_t pipe;
  bool read_end;
  int seals;     /* memfd: F_ADD_SEALS once every descriptor and mapping exists */
  bool as_file;  /* memfd record of an unlinked file the tree maps: made again as a file */
  int file_mode; /* its mode */
  int64_t size;  /* reg, format 21: its size at checkpoint (-1: not recorded) */
  int svc;
  int stdio; /* tty: the lowest descriptor 0-2 on it in the image, or -1 */
  struct unlinked_info u;
  struct unlinked_info deleted_dir; /* present: a directory removed while open */
  struct lock_set locks;            /* flock and OFD locks, taken by crest (locks.c) */
  struct fown fown;                 /* O_ASYNC: its owner and signal, set by files_fown */
  void *priv;                       /* a type's own record (files.h), freed with the context */
};

struct rpipe
{
  uint64_t ino;
  int64_t size;
  const char *data, *path;
  int r, w;
  bool no_r, no_w;       /* that end was closed everywhere: closed again */
  bool r_taken, w_taken; /* an open file description of the tree has it */
};

struct rctx
{
  const struct crest_restore_opts *o;
  struct img_reader *img;
  struct img_reader *chain[CHAIN_MAX]; /* its parent images (pre-dumps), nearest first */
  int nchain;
  yajl_val tree;       /* while parsing only: jtree_drop_nodes frees it */
  struct jtree *jt;    /* tree.json's arenas; its strings live to the end */
  struct arena tracer; /* what only the tracer reads: kept out of the tasks */
  struct arena plan;   /* what the tasks read and never write (plan_zalloc) */
  struct rproc *p;
  size_t np;
  size_t *kids; /* indices into p, grouped by parent (rproc.kid0) */
  struct rfile *f;
  size_t nf;
  struct rpipe *pp;
  size_t npp;
  int svc_base, svc_next;
  int stdio_svc[3];
  /* The container's terminal (tree.json "terminal"): its settings, and the
     restore's own terminal (/dev/tty) to give them to. */
  bool has_term;
  struct termios tio;
  struct winsize ws;
  pid_t term_fg; /* foreground process group to set, 0: none */
  int *pty_fill; /* pty masters opened only to reach a wanted index (pty.c) */
  size_t npty_fill;
  int term_svc;
  int nslp_fd;
  pid_t helper; /* a container's init: the finishing helper it forked */
  bool use_nslp;
  bool session_users;   /* tree.json: the root's session keyring was its user's (keyrings.c) */
  bool shell_job;       /* tree.json: its controlling terminal was outside it (--shell-job) */
  int64_t shell_job_fg; /* ...and this group of the tree was in its foreground (0: none) */
  /* Process mode: the root's session (1) or only its process group (2)
     was led outside the tree: it joins crest's, said once it runs. */
  int joins_crest;
  int report[2];
  /* A copy of done_fd among the service descriptors: the init's own
     descriptors may take done_fd's number before it fails (task_fail),
     and its message must still reach crest (restore.c). -1: none. */
  int done_svc;
  int32_t *go;
  /* Shared by the tree's tasks: [i] is 1 once process i has made the
     process group it leads, which others of the tree join (task_session). */
  int32_t *grp;
  struct
  {
    const char *data;
    int svc;
    int svc_ro; /* a read-only descriptor of it (memfile_svc_ro), or -1 */
  } * mf;       /* memory files made so far, shared by every mapping of one */
  size_t nmf;
  struct rmemfile
  {
    const char *data;
    uint64_t size;
    uint64_t (*ext)[2];
    size_t next;
  } * memfiles; /* "memfiles": the objects saved with holes (plan arena) */
  size_t nmemfiles;
  bool progress;
  struct timespec t0;
  /* CREST_STATS (test builds): milliseconds since T0 at each phase's end. */
  double ms_planned, ms_files, ms_parked, ms_verified, ms_finished;
  /* Container mode: the restorer itself, as the image's init, fails back
     into crest_engine_restore so that its caller can report the reason
     (when init exits, the PID namespace and every line it would print go). */
  sigjmp_buf *init_fail;
  char init_msg[240];
  struct ipc_set *ipc; /* SysV objects to make again (ipc.c) */
  struct lazy *lazy;   /* --lazy-pages (lazy.c), NULL without */
};

struct report
{
  char kind; /* 'R' ready, 'E' error */
  int32_t idx;
  int32_t pid;
  uint64_t base, size;
  char msg[240];
};

/* Image checks: refuse with one line unless COND. */
#define CHECK(cond, ...)                                                                           \
  do                                                                                               \
    {                                                                                              \
      if (!(cond))                                                                                 \
        return crest_error_make(err, EINVAL, __VA_ARGS__);                                         \
    }                                                                                              \
  while (0)

/* ipc.c: tree.json "ipc" read and checked; the objects made again, with
   their IDs, in the container's new IPC namespace before any task. */
struct ipc_set;
int
ipc_parse(struct rctx *c, crest_error_t *err);
int
ipc_restore(struct rctx *c, crest_error_t *err);
/* A "sysv" mapping of process PID: its segment (checked by ipc_parse). */
int
ipc_parse_vma(struct rctx *c, yajl_val v, pid_t pid, struct rvma *m, crest_error_t *err);
void
ipc_free(struct ipc_set *s);

/* chain.c: the blocks of the parent images' page files that the tree's
   page runs read, each against its digest in the image's sums file. */
int
chain_check_reads(const struct rctx *c, crest_error_t *err);

/* seccomp.c: every process had as many seccomp filters as the restore
   runs under (each task inherits them). */
int
seccomp_restore_check(const struct rctx *c, crest_error_t *err);
/* affinity.c: every thread's CPU affinity among the CPUs the restorer may
   use (which its tasks inherit); else refused before anything exists. */
int
affinity_restore_check(const struct rctx *c, crest_error_t *err);
/* mempolicy.c: [mode, node list] under KEY of V: 1 read, 0 absent (mode
   0), -1 malformed. */
int
mpol_parse(yajl_val v, const char *key, int format, int *mode, cpu_set_t *nodes,
           crest_error_t *err);
/* seccomp.c: the thread's install of the container's profile
   (c->o->seccomp_prog), when crest gave one: after its last step that the
   profile could deny, before its IDs and capabilities change. */
struct oplist;
struct bld;
void
seccomp_install_op(const struct rctx *c, struct oplist *l, struct bld *b);

/* restore-parse.c: tree.json read and checked into C's processes, files,
   pipes, terminal and IPC objects; has_key serves the object files. */
int
parse_tree(struct rctx *c, crest_error_t *err);
bool
has_key(yajl_val v, const char *key);
/* restore-svc.c: the service descriptors, opened before any task exists;
   svc_place serves the object files. */
int
open_files(struct rctx *c, crest_error_t *err);
/* Move FD to the service range, above every descriptor of the tree. */
int
svc_place(struct rctx *c, int fd, crest_error_t *err);
/* restore.c: the test hook CREST_FAULT=restore-kill:PHASE. */
void
fault_kill(const char *phase);

/* The restore's readers of one kind of object's records. */
/* N zeroed bytes of the plan's arena (c->plan: what the tasks read from
   their inherited copy of crest and never write); aborts when out of memory. */
void *
plan_zalloc(struct rctx *c, size_t n);
int
creds_parse(yajl_val cr, struct rproc *p, crest_error_t *err);
bool
mem_keep_apart(const struct rproc *p, size_t i);
bool
mem_heap_by_brk(const struct rproc *p, size_t *first, size_t *end);
int
mem_parse_mm(yajl_val mm, struct rproc *p, crest_error_t *err);
int
mem_parse_vmas(struct rctx *c, yajl_val v, struct rproc *p, crest_error_t *err);
int
mem_parse_pages(struct rctx *c, yajl_val v, struct rproc *p, crest_error_t *err);
/* KEY of V: a list of siginfos (128 bytes each), in *OUT. */
int
parse_siginfos(yajl_val v, const char *key, uint8_t (**out)[128], size_t *nout, crest_error_t *err);
/* Is signal SIG among the N siginfos in SI (128 bytes each)? */
bool
sig_in(const uint8_t (*si)[128], size_t n, int sig);
int
sig_parse_process(yajl_val v, struct rproc *p, crest_error_t *err);
int
files_parse_fds(struct rctx *c, yajl_val v, struct rproc *p, crest_error_t *err);
/* In a new task: fail the restore with a message (restore.c). */
void __attribute__((noreturn)) task_fail(struct rctx *c, int idx, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void
creds_restore(struct rctx *c, int idx, const struct rproc *p);
void
creds_fs(struct rctx *c, int idx, const struct rproc *p);
void
creds_zombie(struct rctx *c, int idx, const struct rproc *p);
struct __user_cap_data_struct;
void
creds_cap_data(const struct rproc *p, struct __user_cap_data_struct *d);
bool
creds_change(const struct rproc *p);
void
creds_open_as_tasks(struct rctx *c, bool on);
void
files_install(struct rctx *c, int idx, const struct rproc *p);
/* creds.c: the bounding set dropped in the new task; the capabilities a
   restore may give (caps_bound) and the image's checked against them. */
void
restore_bounding(struct rctx *c, int idx, const struct rproc *p);
/* crest's bounding set read before the first fork, for every task. */
void
restore_bounding_prime(void);
int
caps_bound(const struct crest_restore_opts *o, uint64_t *bound, const char **whose,
           crest_error_t *err);
int
check_caps(struct rctx *c, uint64_t bound, const char *whose, crest_error_t *err);
/* restore-task.c: the blob's operation lists. */
/* The blob region being filled in a new task: data the operations point
   to is put there (bld_alloc: SIZE bytes aligned to ALIGN, copied from
   INIT unless NULL; returns its address in the task). */
struct bld
{
  uint8_t *buf;
  uint64_t base, cap, used;
  uint64_t seccomp_fprog; /* seccomp.c: the profile's sock_fprog there, 0 before */
};
uint64_t
bld_alloc(struct bld *b, uint64_t size, uint64_t align, const void *init);

struct oplist
{
  struct blob_op *ops;
  size_t n, cap;
};
void
op(struct oplist *l, long nr, int check, int64_t expect, uint64_t a0, uint64_t a1, uint64_t a2,
   uint64_t a3, uint64_t a4, uint64_t a5);
#define OP(l, nr, ...) op((l), (nr), BLOB_CHECK_NONNEG, 0, __VA_ARGS__)
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif
/* Pages [VADDR, VADDR + LEN) read from page file SVC at OFF: made present in
   one call first (the read would otherwise fault them in one at a time; a
   kernel without MADV_POPULATE_WRITE, before 5.14, says EINVAL, unchecked,
   and the read faults them in as before). Two operations. */
#define RUN_SVC(p, r) ((r)->from ? (p)->chain_svc[(r)->from] : (p)->pages_svc)
#define PAGES_OPS(l, svc, vaddr, len, off)                                                         \
  do                                                                                               \
    {                                                                                              \
      op((l), SYS_madvise, BLOB_CHECK_NONE, 0, (vaddr), (len), MADV_POPULATE_WRITE, 0, 0, 0);      \
      OP((l), BLOB_OP_PREAD_FULL, (svc), (vaddr), (len), (off), 0, 0);                             \
    }                                                                                              \
  while (0)
#define OPEQ(l, nr, ex, ...) op((l), (nr), BLOB_CHECK_EQ, (ex), __VA_ARGS__)
/* creds.c: the user and group IDs, in the blob (restore-task.c). */
void
creds_setid_ops(const struct rproc *p, struct oplist *l);
void
creds_keepcaps_op(const struct rproc *p, struct oplist *l);
bool
creds_euid_ops(const struct rproc *p, struct oplist *l, bool on);

/* mem-cow.c: pages a child shares with its parent ("parent_pages"). */
int
cow_parse(struct rctx *c, yajl_val v, struct rproc *p, crest_error_t *err);
void
cow_free(struct rproc *p);
/* In task IDX, before it forks its children. */
void
cow_premap(struct rctx *c, int idx);
bool
cow_kept(const struct rproc *p, size_t vma);
size_t
cow_ops_bound(const struct rproc *p);
void
cow_unmap_ops(const struct rproc *p, uint64_t base, uint64_t size, struct oplist *l);
void
cow_page_ops(const struct rproc *p, struct oplist *l);
/* Pages [VADDR, VADDR + LEN) of P read from page file SVC at OFF: into
   place (PAGES_OPS), or, in a mapping never writable (VMF_NOACCOUNT),
   through /proc/self/mem (fill_force_set). */
void
fill_ops(const struct rproc *p, struct oplist *l, int svc, uint64_t vaddr, uint64_t len,
         uint64_t off);
/* Does P have pages to write into a mapping never writable? */
bool
fill_needs_force(const struct rproc *p);
/* In the task: its /proc/self/mem and the blob's buffer of BLOB_FORCE_BUF
   bytes, for fill_ops. */
void
fill_force_set(int mem, uint64_t buf);

/* restore-finish.c: every thread parked, checked and set going again
   (its registers, masks, stops), the blobs unmapped, the tree detached. */
int
finish_tree(struct rctx *c, crest_error_t *err);

/* restore-seize.c: every task seized as it reports, until every thread
   is parked in its blob; the thread TID of the image (and its process in
   *PP unless NULL), or NULL. */
int
wait_parked(struct rctx *c, crest_error_t *err);
struct rthread *
find_thread(struct rctx *c, pid_t tid, struct rproc **pp);

/* restore-task.c: fork task IDX of the image with its PID (its own
   children are forked by it), and what it runs. */
pid_t
create_task(struct rctx *c, int idx);
/* FN(ARG) in a short-lived child whose PID in the restore's namespace is
   PID and which shares crest's descriptor table (CLONE_FILES): what it
   opens, crest holds, made by that PID (a unix socket's SO_PEERCRED).
   FN returns 0 or an errno, the child's exit status (FN runs in a copy of
   crest's memory: only system calls, no allocation). 0, or -1 with errno
   (EEXIST: the PID is taken). */
int
run_as_pid(struct rctx *c, pid_t pid, int (*fn)(const void *), const void *arg);
/* crest's memory layout, read once for every task it forks (restore-task.c). */
void
task_layout_prime(void);
void *
task_map_aside(struct rctx *c, uint64_t size, int flags);
void __attribute__((noreturn)) task_main(struct rctx *c, int idx);

/* pidfd.c: the blob's operations that open P's pidfds. */
void
pidfd_ops(const struct rctx *c, const struct rproc *p, struct oplist *l);
/* timers.c: the restore side. */
int
timers_parse(yajl_val v, int format, struct rproc *p, crest_error_t *err);
size_t
timers_ops_bound(const struct rproc *p);
void
timers_ops(const struct rproc *p, struct oplist *l, struct bld *b);
/* lazy.c: --lazy-pages (docs/engine.md, "Lazy restore"). lazy_plan picks
   the lazy mappings and opens the socket the blobs send their
   userfaultfds on; lazy_task_ops adds the blob's operation; lazy_pages_ops
   the reads of a run's pages that are not lazy; lazy_run fills the rest
   while the tree runs, then lets it go. */
int
lazy_plan(struct rctx *c, crest_error_t *err);
size_t
lazy_ops_bound(const struct rproc *p);
void
lazy_task_ops(struct rctx *c, const struct rproc *p, struct oplist *l, struct bld *b);
void
lazy_pages_ops(const struct rproc *p, const struct rrun *r, struct oplist *l);
bool
lazy_proc(const struct rctx *c, const struct rproc *p);
int
lazy_run(struct rctx *c, crest_error_t *err);
void
lazy_free(struct rctx *c);
/* The root's wait status when it exited while the pages came in. */
bool
lazy_root_status(struct rctx *c, int *st);
/* --detach: fork, return once the tree runs; in that child, true. */
int
lazy_detached(const struct crest_restore_opts *o, pid_t *root_out, crest_error_t *err);
bool
lazy_is_child(void);
/* keyrings.c: process mode, a tree whose root's session keyring was its
   user's: the restorer joins its user's, or refuses (a task of another
   UID); nothing where it has no session keyring of its own. */
int
keys_restore_session(const struct rctx *c, crest_error_t *err);
/* lazy-sys.c: the memory a system call may touch. */
#define LAZY_SYS_ALL (-1)
#define LAZY_SYS_IOV (-2)
#define LAZY_SYS_MSG (-3)
int
lazy_sys_ranges(long nr, const uint64_t *a, uint64_t r[4][2]);

#endif
