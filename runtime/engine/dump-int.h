/* crest: the dump's context, shared by dump.c and the files that dump one
 * kind of object (files.c and the descriptor types, files.h). */
#ifndef CREST_DUMP_INT_H
#define CREST_DUMP_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <termios.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include "affinity.h"
#include "engine-int.h"
#include "files.h"
#include "shmem.h"

#ifndef PTRACE_PEEKSIGINFO
#define PTRACE_PEEKSIGINFO 0x4209
#endif
#ifndef PTRACE_PEEKSIGINFO_SHARED
#define PTRACE_PEEKSIGINFO_SHARED 1
#endif
/* PTRACE_PEEKSIGINFO's argument (struct ptrace_peeksiginfo_args). */
struct peeksiginfo
{
  uint64_t off;
  uint32_t flags;
  int32_t nr;
};
#define KCMP_FILE 0
#define PAGE 4096UL
/* Bytes per process_vm_readv batch: small enough that the bytes just
   read are still in the cache when they are written and hashed (64 MiB
   batches made each of the three passes go to memory). */
#define BATCH (4UL << 20)
/* The 64-bit user code segment selector of x86-64 Linux (__USER_CS). */
#define USER_CS_64 0x33

struct ipc_set;
void
ipc_free(struct ipc_set *s);

struct dthread
{
  pid_t tid;
  pid_t itid; /* as recorded: inside the tree's PID namespace for a container */
  struct user_regs_struct regs;
  uint8_t *xstate;
  size_t xlen;
  uint64_t clear_tid;
  uint64_t alt_sp, alt_size;
  int32_t alt_flags;
  uint64_t sigmask; /* the thread's own (blocked only within an injected call) */
  struct prctl_thread pr;
  /* The pages below its stack pointer that were neither present nor
     swapped before the injected calls (dump-inject.c) wrote there and put
     back what they read (zeros): bit K is the page at FRESH_LO + K pages.
     The image leaves them out (mem_plan), as the task never touched them. */
  uint64_t fresh_lo, fresh_mask;
  int mpol_mode; /* its NUMA memory policy (mempolicy.c), 0: the default */
  cpu_set_t mpol_nodes;
};

/* A mapping's NUMA memory policy (mempolicy.c). */
struct mpol_rec
{
  uint64_t start;
  int mode;
  cpu_set_t nodes;
};

struct dproc
{
  pid_t pid, ppid, pgid, sid;
  pid_t ipid, ipgid, isid; /* as recorded (see struct dthread) */
  struct dthread *th;
  size_t nth;
  uint64_t gadget;
  uint64_t mem_bytes; /* of memory copied into the image (mem.c) */
  struct ksigaction sa[65];
  uint64_t itimer[3][4]; /* interval sec, usec, value sec, usec */
  struct ptimer *timers; /* POSIX timers (timers.c) */
  size_t ntimers;
  int mcl; /* mlockall's MCL_FUTURE (and MCL_ONFAULT) in force, else 0 */
  uint64_t brk;
  long securebits;
  struct prctl_proc pr;
  cpu_set_t cpus;         /* the CPUs its cpuset allows (dump_process) */
  int seccomp_filters;    /* each thread's, checked before any injected call */
  struct mpol_rec *mpols; /* its mappings with a memory policy */
  size_t nmpols;
  bool numa_default; /* numa_maps shows no policy anywhere (mempolicy.c) */
  bool zombie;       /* exited, waiting for its parent's wait() */
  int exit_status;   /* then: the status wait() will report */
  /* and /proc hides it (a zombie that was not dumpable, on kernels that
     keep that flag): its parent is asked with waitid(WNOWAIT) */
  bool status_hidden;
  long znice;   /* a zombie's nice value (stat field 19) */
  int exit_sig; /* the signal its parent gets when it exits (stat field 38) */
  /* In a group stop (kill -STOP, ^Z): the stop signal, else 0. */
  int stop_sig;
  /* Its parent, seized with it, has already collected that stop with
     waitpid(WUNTRACED) (so another would report nothing). */
  bool stop_reported;
  char *root_dir; /* its root directory when it is not the tree's top (a
                     chroot), as a path from the top; NULL: the top */
  /* Dumpable, under a UID of the container that is not crest's: made not
     dumpable for the dump (its /proc files are then the container root's,
     crest's), dumpable again before it is let go (dump-inject.c). */
  bool dumpable_lowered;
  /* Its page file (mem.c): the name and the runs it holds, kept once
     written for its children's comparison (mem-cow.c), which maps the file
     (PF_MAP, PF_LEN; PF_FAILED: it could not). */
  char *pages_name;
  struct prun *runs;
  size_t nruns;
  const char *pf_map;
  size_t pf_len;
  bool pf_failed;
  /* Its mappings as its memory dump read them (mem_dump), kept for its
     children's comparison (mem-cow.c): the tree is still meanwhile. */
  struct vma *maps;
  size_t nmaps;
  struct inj_sess *inj; /* its injected calls' session (dump-inject.c), while open */
  /* A session leader whose controlling terminal is a pty of the tree
     (pty.c): the pty's index + 1 (0: none), and the terminal's foreground
     group as the tree sees it. */
  int ctty;
  pid_t itpgid;
};

struct dfile
{
  int id;
  const struct fd_ops *ops; /* its type (files.h) */
  char *path;
  int flags;
  int64_t pos;
  dev_t dev;
  ino_t ino;
  uint64_t size; /* a regular file's size at checkpoint */
  pid_t pid;     /* one user of it (for kcmp and pidfd_getfd) */
  int fd;
  bool unlinked;
  char *data; /* image file with the contents of an unlinked file */
  struct unlinked_info u;
  bool deleted_dir;      /* a directory removed while open: u holds its mode and owner */
  struct lock_set locks; /* flock and OFD locks (locks.c) */
  int seals;             /* memfd */
  struct fown fown;      /* O_ASYNC: its owner and signal (fown.c) */
  uint64_t ino_pipe;
  bool pipe_read;
  void *priv; /* a type's own record (files.h), freed with the context */
};

struct dpipe
{
  uint64_t ino;
  char *path; /* named FIFO */
  bool has_r, has_w;
  bool low_fds_only; /* every descriptor on it is 0, 1 or 2 */
  bool no_r, no_w;   /* that end is closed in every process (pipe_other_end_closed) */
  pid_t rpid;
  int rfd;
  pid_t opid; /* a named FIFO: any descriptor on it */
  int ofd;
  int size;
  char *data;
  size_t len;
};

struct dfd
{
  pid_t pid;
  int fd;
  bool cloexec;
  int file;
  struct lock_set locks; /* the process's POSIX locks through this descriptor */
};

/* One user namespace ID map, as /proc/PID/[ug]id_map shows it to crest:
   inside the task's namespace, outside in crest's. */
struct idmap
{
  uint32_t in[64], out[64], len[64];
  size_t n;
};

/* broker.c: opens denied to crest, made by a child in the user namespace
   of task TASK (the tree's), which crest owns. DIR -1: AT_FDCWD. */
struct open_how;
int
broker_openat2(pid_t task, int dir, const char *path, const struct open_how *how);
void
broker_stop(void);

/* A TCP socket crest holds in repair mode (dctx.tcp_held). */
struct tcp_held
{
  int fd;
  bool reuse; /* its SO_REUSEADDR, which leaving repair mode clears */
};

struct dctx
{
  const struct crest_dump_opts *o;
  /* A container's UTS names (its init's uname: nodename, domainname),
     for uts.json; has_uts once read. */
  char uts[2][65];
  bool has_uts;
  /* Keyrings (keyrings.c): crest's own session keyring and the tree's
     root's (0: none, or no keys in this kernel). */
  long own_session_key, session_key;
  bool session_is_users; /* the root's session keyring is its user's own (keyrings.c) */
  bool shell_job_used;   /* --shell-job: a task's terminal is outside the tree (pty.c) */
  pid_t shell_job_fg;    /* ...and the tree's group in its foreground, as recorded (0: none) */
  /* --tcp-established: crest's copies of the connections read, left in
     repair mode until the end (dump_tcp_release); each also handed to the
     caller's process (dump_guard_hold), which takes it out again if the
     worker dies. */
  struct tcp_held *tcp_held;
  size_t ntcp_held;
  /* Connections TCP listeners had queued, not accepted, left out of the
     image (--skip-in-flight, --tcp-close): said once the checkpoint is
     complete (their clients are reset as the tree ends). */
  unsigned inflight_left;
  struct cpus_cache cpus_cache; /* affinity.c: the cpuset last looked up */
  bool foreign_userns;          /* the tree lives in another user namespace than crest */
  struct idmap uidmap, gidmap;
  pid_t root;
  int topfd; /* the directory the paths /proc shows are relative to (open_top) */
  struct dproc *p;
  size_t np;
  struct dfile *f;
  size_t nf;
  struct dpipe *pp;
  size_t npp;
  struct dfd *fds;
  size_t nfds;
  struct img_writer *w;
  uint64_t pages_bytes, readv_calls;
  struct timespec t0;
  /* CREST_STATS: milliseconds since t0 at each phase's end, and those of
     the memory copy spent planning (pagemap), copying out of the tasks and
     handing buffers to the image (hash, and the wait for the writer), and
     closing the page files (the last write, fsync). */
  double ms_seized, ms_objects, ms_tree, ms_commit, ms_plan, ms_readv, ms_out, ms_close;
  bool progress;
  double progress_at;         /* seconds since t0 of the last progress line */
  uint64_t progress_mib;      /* and the MiB it said */
  char progress_what[48];     /* and what it said was under way */
  struct shm_table shm;       /* objects with no path, mapped in the tree */
  struct ipc_set *ipc;        /* SysV objects of the tree's own IPC namespace (ipc.c) */
  struct chain *chain;        /* --parent-path: the parent image and its ancestors (chain.c) */
  struct mapped_file *mfiles; /* files mapped in the tree, checked (mapped_file_stat) */
  size_t nmfiles;
  const struct dproc *mf_of; /* whose root the key below is (mapped_file_stat) */
  const char *mf_build_id;   /* the last file mapped_file_stat found: its build ID or "" */
  uint64_t mf_key[4];
  struct predump *pre; /* --pre-dump: what is copied once the tree runs on (chain.c) */
  /* Threads that waited in restart_syscall before the tree was stopped,
     and in what (restart-scan.c). */
  struct
  {
    pid_t tid;
    int kind;
  } * rs;
  size_t nrs;
  /* The pty masters the tree holds (pty.c): each one's slave, by the
     devpts it lives in and its device number; scanned once. */
  struct pty_known *ptys;
  size_t nptys;
  bool ptys_scanned;
  /* Container mode: the container's terminal, the pty slave that
     /dev/console names inside the container and that is its init's
     controlling terminal (what crun sets up for process.terminal). */
  struct
  {
    bool found;
    dev_t dev, rdev;
    ino_t ino;
    pid_t fg;   /* its foreground process group, as /proc shows it (0: none) */
    bool saved; /* termios and ws read through a descriptor of the tree */
    struct termios tio;
    struct winsize ws;
  } term;
};

/* A mapping, as /proc/PID/maps shows it (mem.c). */
struct vma
{
  uint64_t start, end, pgoff;
  int prot;
  bool shared;
  char kind[16];
  char *path;
  char *removed; /* a "file" mapped by a name removed since (maps_linked_name) */
  unsigned dev_major, dev_minor;
  uint64_t ino;
  bool no_pages; /* smaps, read while the tree is stopped: Rss and Swap 0 */
};

/* inject-home.c: the way home of a thread whose injected call is cut off
   (the dead stack it takes, saved to be written back). */
struct home
{
  uint64_t sp, lo, len;
  uint8_t *saved;
};
/* A syscall instruction of V (LEN bytes mapped at BASE) followed only by
   register clearing and POPS pops before a ret; -1: none. */
int
home_find_gadget(const uint8_t *v, size_t len, uint64_t base, uint64_t *gadget, int *pops);
/* A syscall instruction of PID's vDSO (in VV, NV): one with a way home
   after it (*POPS pops before its ret), or else any (*POPS -1); *GADGET 0
   without a vDSO or one. -1 with ERR where it could not be read. */
int
home_vdso_gadget(pid_t pid, const struct vma *vv, size_t nv, uint64_t *gadget, int *pops,
                 crest_error_t *err);
/* The address of rt_sigreturn code (mov $15, %rax; syscall) in an
   executable file mapping of PID, or 0. */
uint64_t
home_find_sigreturn(pid_t pid, const struct vma *vv, size_t nv);
struct dthread;
/* The bytes below TH's stack pointer its way home takes (red zone
   included), with POPS pops in the gadget. */
uint64_t
home_room(const struct dthread *th, int pops);
/* Write TH's way home below its stack pointer, outside [AVOID, AVOID +
   AVOID_LEN), and make its injected calls use it; without room or a
   gadget (POPS < 0, SIGRET 0), none (H->sp 0) and 0. */
int
home_build(pid_t pid, const struct dthread *th, const struct vma *vv, size_t nv, int pops,
           uint64_t sigret, uint64_t avoid, uint64_t avoid_len, struct home *h, crest_error_t *err);
/* Its stack bytes back, and its calls on its own stack pointer again. */
int
home_put(pid_t pid, pid_t tid, struct home *h, crest_error_t *err);

/* dump.c: helpers of the files that dump one kind of object. */
/* /proc/PID/WHAT, whole, in *OUT (malloc'd). */
int
read_proc(pid_t pid, const char *what, char **out, crest_error_t *err);
/* The value of "KEY:" in a /proc status-like text, or NULL. */
const char *
status_field(const char *status, const char *key);
/* seccomp.c: every thread of P has EXPECTED filters (*FILTERS: that). */
int
seccomp_dump_check(const struct dproc *p, int expected, int *filters, crest_error_t *err);
/* PATH opened as task P would resolve it, inside its root. */
int
open_in_root(const struct dctx *c, const struct dproc *p, const char *path, int flags,
             crest_error_t *err);
/* A directory's device, inode and mount (statx). */
int
dir_id(int fd, uint64_t id[3]);
/* The file of mapping V of task P, opened in its root (open_in_root) and
   checked (a regular file, not on a tmpfs the container mounted itself):
   its stat in *ST. Every mapping of one path seen from one root in one
   mount namespace is that file: it is opened and checked once a dump. */
int
mapped_file_stat(struct dctx *c, const struct dproc *p, const struct vma *v, struct stat *st,
                 crest_error_t *err);
void
mapped_files_free(struct dctx *c);
/* The regular file FD of task P on a tmpfs the container mounted itself
   (/dev/shm): refused, -1 with ERR. */
int
check_volatile_tmpfs(const struct dctx *c, const struct dproc *p, int fd, const char *path,
                     crest_error_t *err);
/* A user or group ID as the tree sees it. */
long
inner_id(const struct dctx *c, const struct idmap *m, long id);
/* A copy of descriptor FD of task PID (pidfd_getfd). */
int
getfd(pid_t pid, int fd, crest_error_t *err);
/* WROTE (> 0): a record of docs/engine.md's attribute tables went into
   the image, which makes it format 3 at least. Returns WROTE. */
int
put_attrs(struct dctx *c, int wrote);
/* A stopping signal is pending (held off during the dump): -1 with ERR. */
int
interrupted(crest_error_t *err);
/* Say what the dump does, once it has taken over a second. */
void
maybe_progress(struct dctx *c, const char *what);
/* Read LEN bytes of task PID's memory at ADDR (process_vm_readv). */
int
vm_read(pid_t pid, uint64_t addr, void *buf, size_t len, crest_error_t *err);

/* A run of pages of the image: LEN bytes at VADDR, at OFF in the page
   file of this image (FROM 0) or of its FROM-th ancestor (chain.c);
   NOREAD: in a mapping without PROT_READ (read through /proc/PID/mem). */
struct prun
{
  uint64_t vaddr, len, off;
  int from;
  bool noread;
  /* One page mapped but not the mapping's own (pagemap: present, neither
     exclusively mapped nor a file's): the kernel's zero page where it
     reads as zeros, which the dump leaves out (dump_memory). */
  bool zcand;
};
struct chain_proc;
struct cow_dump;

/* mem.c */
/* Is the page at B all zeros? */
bool
page_zero(const char *b);
/* The run of RUNS (N, sorted by address) that holds ADDR, or NULL. */
const struct prun *
prun_find(const struct prun *runs, size_t n, uint64_t addr);
void
put_runs(yajl_gen g, const char *name, const struct prun *runs, size_t nruns);
int
mem_plan(const struct dproc *p, const struct vma *v, size_t nv, struct cow_dump *cow,
         const struct chain_proc *cp, struct prun **out, size_t *nout, uint64_t *own,
         crest_error_t *err);
void
unfresh(const struct dproc *p, uint64_t start, uint64_t npages, uint64_t *ent);
struct maps_line
{
  uint64_t start, end, off, ino;
  char perms[5];
  unsigned maj, min;
  const char *name; /* in the line; "" for none */
};
bool
maps_line(const char *l, struct maps_line *m);
int
parse_maps(pid_t pid, struct vma **out, size_t *n, crest_error_t *err);
/* A mapping shown as SHOWN "... (deleted)" whose file (device MAJ:MIN,
   inode INO) is still linked under another name in the same directory
   (glibc's sem_open maps "sem.XXXXXX", links it to "sem.NAME" and
   removes the first name): that name, as task PID sees it (malloc'ed),
   or NULL. */
char *
maps_linked_name(pid_t pid, const char *shown, unsigned maj, unsigned min, uint64_t ino);
void
free_vmas(struct vma *v, size_t n);
void
mem_put_mm(const struct dproc *p, const unsigned long long f[64], const char *auxv, size_t auxlen,
           yajl_gen g);
int
mem_dump(struct dctx *c, struct dproc *p, yajl_gen g, crest_error_t *err);

/* mem-cow.c: the pages a child shares with its parent (NULL: none to
   look for), taken out of its page runs mapping by mapping and written as
   "parent_pages". */
struct cow_dump;
/* mem.c: the NPAGES pagemap entries of PID from START into ENT (FD its
   open pagemap), read on until all are in. */
int
pagemap_read(int fd, pid_t pid, uint64_t start, uint64_t npages, uint64_t *ent, crest_error_t *err);
/* Pages of a mapping whose pagemap entries are read at once: a mapping
   may reserve terabytes (MariaDB's 8 TiB PROT_NONE range). */
#define PAGEMAP_WINDOW ((uint64_t)1 << 16)
int
cow_dump_begin(struct dctx *c, struct dproc *p, struct cow_dump **out, crest_error_t *err);
int
cow_dump_filter(struct cow_dump *d, const struct vma *m, uint64_t start, uint64_t *ent,
                uint64_t npages, crest_error_t *err);
void
cow_dump_put(struct dctx *c, struct cow_dump *d, yajl_gen g);
void
cow_dump_free(struct cow_dump *d);

/* sig.c */
/* Write KEY: the N siginfos (128 bytes each, as PTRACE_PEEKSIGINFO gives
   them) in SI. Is a SIGCONT among them? */
bool
sig_put_pending(yajl_gen g, const char *key, const uint8_t *si, long n);
int
sig_put_process(const struct dproc *p, yajl_gen g, bool *cont, crest_error_t *err);

/* creds.c */
int
caps_restorable(const struct dproc *p, long euid, const uint64_t caps[5], crest_error_t *err);
int
creds_put(struct dctx *c, struct dproc *p, const char *status, yajl_gen g, crest_error_t *err);

/* files.c */
void
files_put_fds(struct dctx *c, const struct dproc *p, yajl_gen g);

/* pstree.c: the tree, seized (collect_tree), its IDs inside its PID
   namespace (ns_ids), its groups and sessions checked, a zombie's record. */
struct dproc *
find_proc(struct dctx *c, pid_t pid);
int
collect_tree(struct dctx *c, crest_error_t *err);
int
ns_ids(struct dctx *c, crest_error_t *err);
int
check_groups(struct dctx *c, crest_error_t *err);
/* Container mode: refuse a process of the container's PID namespace that
   is not in the tree (not a descendant of its init: one `crun exec`
   started, whose parent is outside), which a restore would not make. */
int
check_strangers(struct dctx *c, crest_error_t *err);
/* "exit_signal" of P when its parent is in the tree and it is not SIGCHLD. */
void
put_exit_signal(struct dctx *c, const struct dproc *p, yajl_gen g);
int
dump_zombie(struct dctx *c, struct dproc *p, yajl_gen g, crest_error_t *err);
int
put_rlimits(struct dproc *p, yajl_gen g, crest_error_t *err);

/* ipc.c: SysV IPC and POSIX message queues, refused in one line (not
   restored yet): a mapping of a SysV segment (its maps NAME "/SYSV<key>",
   SHMID the inode field), and, run by the tree's root through injected
   calls (INJECT, with ROOM bytes at SCRATCH in the root), a segment or
   POSIX queue of an IPC namespace of the tree's own; its semaphore sets and
   message queues are read into C->ipc. */
/* 0: a mapping of a segment of the tree's own IPC namespace (kind
   "sysv"); otherwise refused in one line. */
int
ipc_sysv_map(pid_t pid, uint64_t start, uint64_t end, const char *name, uint64_t shmid,
             crest_error_t *err);
int
ipc_check_ns(struct dctx *c, struct dproc *root, shm_inject_fn inject, void *ctx, uint64_t scratch,
             size_t room, crest_error_t *err);
int
ipc_pending(struct dctx *c, struct dproc *p, shm_inject_fn inject, void *ctx, uint64_t scratch,
            size_t room, crest_error_t *err);
/* A mapping of a SysV segment of the tree's own namespace: its "shmid"
   and "shmflg" (the whole segment only). */
struct vma;
int
ipc_put_vma(const struct dctx *c, pid_t pid, const struct vma *v, yajl_gen g, crest_error_t *err);
/* tree.json "ipc" (format 4); false: nothing to write. */
bool
ipc_put(const struct dctx *c, yajl_gen g);

/* creds.c: the tree's user namespace and ID maps (user_ns); a thread
   whose credentials differ from its process's is refused. */
int
user_ns(struct dctx *c, crest_error_t *err);
int
check_thread_creds(const struct dproc *p, pid_t tid, const char *main_st, const char *st,
                   crest_error_t *err);

/* chain.c: pre-dumps and parent images (docs/engine.md, "Pre-dumps"). */
/* --parent-path: open the parent image and its ancestors, check them
   (manifests, checksums, each a pre-dump) and read the parent's pages. */
int
chain_load(struct dctx *c, crest_error_t *err);
/* The parent image is of this tree: the same root, started at the same
   time. */
int
chain_check_root(struct dctx *c, crest_error_t *err);
/* The parent's record of process P (the same PID and start time), or NULL. */
const struct chain_proc *
chain_proc_of(struct dctx *c, const struct dproc *p);
/* Page ADDR of mapping M, pagemap entry E: when it was not written since
   the parent was made and the parent holds it, *FROM and *OFF say where. */
bool
chain_take(const struct chain_proc *cp, const struct vma *m, uint64_t addr, uint64_t e, int *from,
           uint64_t *off);
/* The image being written names its parent (manifest "parent"). */
void
chain_name_parent(struct dctx *c);
/* The checksums of the parent images, hashed meanwhile, matched. */
int
chain_verified(struct dctx *c, crest_error_t *err);
void
chain_free(struct dctx *c);
/* --pre-dump, with every task held: what each process has, and clear its
   soft-dirty bits. After the tree is let go: copy, write, commit. */
int
predump_scan(struct dctx *c, crest_error_t *err);
int
predump_finish(struct dctx *c, crest_error_t *err);
/* Soft-dirty tracking works here (CONFIG_MEM_SOFT_DIRTY): 0, or -1 with
   ERR. */
int
soft_dirty_probe(crest_error_t *err);

/* keyrings.c: thread T of P's keyrings, asked by keyctl calls injected
   through INJECT (SCRATCH: 1 KiB the task may write); refused when a
   restore would not give them back. The root's main thread first. */
int
keys_dump_thread(struct dctx *c, struct dproc *p, size_t t, shm_inject_fn inject, void *ctx,
                 uint64_t scratch, crest_error_t *err);
/* mempolicy.c: thread TH's memory policy, and the mappings' of P (with
   its main thread's injected calls); mpol_of_vma: the one of the mapping
   at START, or NULL. mpol_put writes [mode, node list] under KEY. */
int
mpol_dump_thread(struct dproc *p, struct dthread *th, shm_inject_fn fn, void *ctx, uint64_t scratch,
                 crest_error_t *err);
int
mpol_dump_vmas(struct dproc *p, shm_inject_fn fn, void *ctx, uint64_t scratch, crest_error_t *err);
const struct mpol_rec *
mpol_of_vma(const struct dproc *p, uint64_t start);
void
mpol_put(yajl_gen g, const char *key, int mode, const cpu_set_t *nodes);

/* dump-guard.c: in the checkpoint's worker, hand FD (a socket in TCP
   repair mode; REUSE: its SO_REUSEADDR) to the caller's process, which
   takes it out of repair mode if the worker dies, and closes it once the
   worker is gone. */
void
dump_guard_hold(int fd, bool reuse);
/* dump.c: crest's copies of the connections (dctx.tcp_held) taken out of
   repair mode (the tree runs on), or (KILLED, once the tree is gone)
   closed as they are. */
void
dump_tcp_release(struct dctx *c, bool killed);

/* crest's own session keyring (0: none). */
long
keys_own_session(void);

/* timers.c: the dump side (SCRATCH: 32 bytes the task may write). */
typedef int (*timers_inject_fn)(void *ctx, long nr, const long a[6], long *ret, crest_error_t *err);
int
timers_query(struct dproc *p, timers_inject_fn inject, void *ctx, uint64_t scratch,
             crest_error_t *err);
void
timers_put(const struct dproc *p, yajl_gen g);

/* dump-inject.c: what only task P can answer, asked through injected
   calls (its dumpable flag lowered when its /proc files are closed to
   crest); raise_dumpable puts that flag back before P is let go. */
int
inject_state(struct dctx *c, struct dproc *p, crest_error_t *err);
/* inject_state in its four steps: the session opened (P's way home and
   scratch area: P->inj), the calls about P alone, those that read or fill
   the tree's shared records (its shared memory, its IPC namespace), and
   the session closed again (whatever failed before: P as it was). */
int
inject_open(struct dctx *c, struct dproc *p, crest_error_t *err);
int
inject_own(struct dctx *c, struct dproc *p, crest_error_t *err);
int
inject_shared(struct dctx *c, struct dproc *p, crest_error_t *err);
int
inject_close(struct dproc *p, crest_error_t *err);
void
raise_dumpable(struct dproc *p);
/* dump-par.c: inject_state of every task of the tree, the root's first,
   then the others' own calls several at once (each in a coroutine of the
   tracing thread, which runs another while one waits for its task). */
int
inject_tree(struct dctx *c, crest_error_t *err);

/* dump-release.c: the tree let go (or killed with KILL_IT, and waited
   for), and a frozen tree's freezer put back as it was. */
int
release_tree(struct dctx *c, bool kill_it, bool *frozen, crest_error_t *thaw_err,
             crest_error_t *err);
void
put_back_freezer(struct dctx *c, bool *frozen, int *rc, crest_error_t *err);

/* dump-proc.c: each task's root directory (a chroot), checked and kept in
   its p->root_dir; a process's record in tree.json. */
int
dump_roots(struct dctx *c, crest_error_t *err);
int
dump_process(struct dctx *c, struct dproc *p, yajl_gen g, crest_error_t *err);

/* restart-scan.c: before the tree is stopped, the threads that wait in
   restart_syscall and in what; then, for the image, the registers of such
   a thread naming the call it restarts (where its arguments fit it). */
void
restart_scan(struct dctx *c);
void
restart_fix(const struct dctx *c, pid_t tid, struct user_regs_struct *r);

#endif
