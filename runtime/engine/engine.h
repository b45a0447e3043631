/* crest: the checkpoint/restore engine, as the front end and the container
 * glue call it. Everything behind these two functions lives in
 * runtime/engine/ (dump.c, restore.c, image.c, the restorer blob).
 *
 * Process model. The dump runs as an ordinary user outside the tree: it
 * seizes every thread with ptrace, reads what /proc and ptrace show, injects
 * a few syscalls for what only the task knows, copies memory in bulk and
 * writes an image directory (docs/image-format.md). The restore runs as the
 * parent (or ancestor) of the tree it recreates: it forks every task with
 * clone3() + set_tid, each task rebuilds its address space through the
 * position-independent restorer blob, and the engine puts the registers back
 * with ptrace before it lets the tree go (docs/engine.md). */
#ifndef CREST_ENGINE_H
#define CREST_ENGINE_H

#include <stdbool.h>
#include <sys/types.h>
#include "error.h"

/* Image format versions (the manifest's "format"). A reader refuses a version
   it does not know. The writer writes the oldest one that describes the
   image: 1, or 2 when a process is in a group stop ("stop_signal") or has a
   root directory of its own ("root_dir"): a reader of version 1 would ignore
   the key and restore the process running, or without its chroot, so such
   an image must not look like version 1 to it. */
#define CREST_IMAGE_FORMAT 24
#define CREST_IMAGE_FORMAT_STOP 2
#define CREST_IMAGE_FORMAT_CHROOT 2
/* Format 3: records of docs/engine.md's attribute tables (mapping advice
   "madv", "prctl", unlinked files' "extents"...); see docs/image-format.md. */
#define CREST_IMAGE_FORMAT_ATTRS 3
/* Format 4: "ipc", the SysV semaphore sets and message queues of a
   container's IPC namespace (ipc.c); see docs/image-format.md. */
#define CREST_IMAGE_FORMAT_IPC 4
/* Format 5: a child's "parent_pages", the pages it shares with its parent
   (copy-on-write kept, mem-cow.c); see docs/image-format.md. */
#define CREST_IMAGE_FORMAT_COW 5
/* Format 6: pre-dumps: a manifest's "pre_dump" and "parent", page runs'
   "from" (pages read from a parent image, chain.c); see
   docs/image-format.md. */
#define CREST_IMAGE_FORMAT_CHAIN 6
/* At most this many parent images in a chain. */
#define CREST_IMAGE_CHAIN_MAX 16
/* Format 8: a file's "fown", the owner and signal of its signal-driven I/O
   (O_ASYNC, fown.c); see docs/image-format.md. */
#define CREST_IMAGE_FORMAT_FOWN 8
/* Format 9: a process's "posix_timers" (timer_create, timers.c) and
   "mlockall", memory locks in a VMA's "madv", files of type "pidfd"
   (pidfd.c); see
   docs/image-format.md. */
#define CREST_IMAGE_FORMAT_TIMERS 9
/* Format 10: a file's digest may be "xxh3_128" instead of "sha256" (the
   page files, and the block digests of their sums files); see
   docs/image-format.md. */
#define CREST_IMAGE_FORMAT_XXH 10
/* Format 11: a thread's "xstate" may hold runs of zero bytes, each '_' and
   its length in 4 hex digits; see docs/image-format.md. */
#define CREST_IMAGE_FORMAT_XRUNS 11
/* Format 12: a process's "prctl" may hold "xcomp_perm", the dynamic XSAVE
   components (AMX's tile data) it has been permitted to use
   (arch_prctl ARCH_REQ_XCOMP_PERM); see docs/image-format.md. */
#define CREST_IMAGE_FORMAT_XCOMP 12
/* Format 13: a mapping's "madv" may hold VMF_NOACCOUNT (0x800), a private
   mapping without VmFlags "ac", or VMF_SHAREDWRITE (0x1000), a shared
   mapping of a file open for writing; see docs/image-format.md. */
#define CREST_IMAGE_FORMAT_NOACCT 13
/* Format 14: a flock entry of "locks" may have a fifth number, the PID of
   the tree's process that took it (restored by that process); a zombie
   has what /proc shows of it (signal dispositions and mask, limits,
   credentials, nice, personality). */
#define CREST_IMAGE_FORMAT_FLOCKPID 14
#define CREST_IMAGE_FORMAT_ZOMBIE 14
/* Format 15: a thread's "affinity" (a CPU list, when narrower than its
   cpuset) and "ioprio" (ioprio_get's raw value, when set). */
#define CREST_IMAGE_FORMAT_AFFINITY 15
/* Format 16: a UDP socket's "mcast", the multicast groups it joined
   (sk-mcast.c), and "IPV6_MULTICAST_IF"; an inet socket's
   "SO_BINDTODEVICE". */
#define CREST_IMAGE_FORMAT_MCAST 16
/* Format 17: a UDP socket's "shutdown" (1 reading, 2 writing, 3 both). */
#define CREST_IMAGE_FORMAT_UDP_SHUT 17
/* Format 18: a unix socket's "cred_pid", the PID its SO_PEERCRED names
   (sk-unix.c), made again by a process of that PID. */
#define CREST_IMAGE_FORMAT_UNIX_CRED 18
/* Format 19: "memfiles", the memory objects whose data file holds only
   some of their bytes (the rest zeros): their size and extents. */
#define CREST_IMAGE_FORMAT_MEMFILES 19
/* Format 20: a unix socket's "moved", the path its file was renamed to
   (sk-unix.c). */
#define CREST_IMAGE_FORMAT_UNIX_MOVED 20
/* Format 20 too: a unix socket's "base", the directory its relative name
   is bound from. */
#define CREST_IMAGE_FORMAT_UNIX_BASE 20
/* Format 21: a SysV mapping's "in_place", a segment of the IPC namespace
   crest runs in (process mode), attached again where it is (ipc.c). */
#define CREST_IMAGE_FORMAT_SHM_IN_PLACE 21
/* Format 21 too: an established TCP connection's "sndbuf" and "rcvbuf". */
#define CREST_IMAGE_FORMAT_TCP_BUFS 21
/* Format 21 too: tree.json's "shell_job", a tree whose controlling
   terminal is outside it (checkpoint --shell-job). */
#define CREST_IMAGE_FORMAT_SHELL_JOB 21
/* Format 21 too: a file's "fown" without O_ASYNC in its flags (an owner
   set with F_SETOWN, which SIGURG goes to, or a signal set with F_SETSIG,
   ready for an O_ASYNC set later). */
#define CREST_IMAGE_FORMAT_FOWN_ANY 21
/* Format 21 too: a process's "exit_signal", when not SIGCHLD (a clone
   with another signal, or none). */
#define CREST_IMAGE_FORMAT_EXIT_SIGNAL 21
/* Format 21 too: a file mapping's "file_build_id", the GNU build ID of an
   ELF file, checked at restore. */
#define CREST_IMAGE_FORMAT_BUILD_ID 21
/* Format 21 too: a regular file's "size" at checkpoint (one shorter at
   restore is refused). */
#define CREST_IMAGE_FORMAT_REG_SIZE 21
/* Format 21 too: a process's prctl "ksm_merge_any" (PR_SET_MEMORY_MERGE). */
#define CREST_IMAGE_FORMAT_KSM_ANY 21
/* Format 22: a unix socket's queued message's "cred_pid", "cred_uid" and
   "cred_gid", its sender's credentials where the socket reads them
   (SO_PASSCRED), given again at restore by a process of that PID. */
#define CREST_IMAGE_FORMAT_UNIX_MSG_CRED 22
/* Format 22 too: a UDP socket's queued datagram's "to", its destination
   address, where the socket reads it (IP_PKTINFO, IPV6_RECVPKTINFO). */
#define CREST_IMAGE_FORMAT_UDP_DEST 22
/* Format 22 too: a mapping's "madv" may hold VMF_SHAREDRO (0x2000). */
#define CREST_IMAGE_FORMAT_SHARED_RO 22
/* Format 23: a unix socket bound to a path has its socket file's owner,
   "uid" and "gid" (as the tree sees them), given to it again at restore. */
#define CREST_IMAGE_FORMAT_UNIX_OWNER 23
/* Format 22 too: a unix socket's "accept_gone", accepted from a listener
   gone since, made again through a listener of that name for the moment. */
#define CREST_IMAGE_FORMAT_UNIX_ACCEPT_GONE 22
/* Format 22 too: a unix datagram's "anon", queued with no sender address
   by no socket of the tree, sent again by an unbound one. */
#define CREST_IMAGE_FORMAT_UNIX_ANON_DGRAM 22
/* Format 24: a file mapping's "removed_name", the name the mapping showed
   ("NAME (deleted)" in maps) for a file still linked under its "path" in
   the same directory (glibc's sem_open); the restore maps it through a
   link of that name, removed again, so that maps shows the same. */
#define CREST_IMAGE_FORMAT_REMOVED_NAME 24
/* The largest "xstate" (a thread's XSAVE area) an image may hold. */
#define XSTATE_MAX 16384

/* Freeze callback, used by the container glue to set cgroup.freeze; NULL in
   process mode. Called with the tree's root PID and one of:
   - CREST_FREEZE_ON, before any task is seized: the tree stops where it is
     while every task is seized. Return < 0 (filling err) to abort the dump.
   - CREST_FREEZE_THAW, once every task is in a ptrace stop (which holds the
     tree still: a task the cgroup v2 freezer holds would never run the
     syscalls the dump injects), and when the tree is killed: thaw.
   - CREST_FREEZE_RESTORE, at the end, every task still held: back to how
     the tree was before crest came (frozen again if the user had paused
     it, thawed otherwise). */
enum crest_freeze_op
{
  CREST_FREEZE_ON,
  CREST_FREEZE_THAW,
  CREST_FREEZE_RESTORE,
};
typedef int (*crest_freeze_fn)(void *data, pid_t root, enum crest_freeze_op op, crest_error_t *err);

/* A file the caller adds to the image (the container's config): written
   through the image writer, listed in the manifest with its checksum. */
struct crest_image_file
{
  const char *name; /* a plain name (img_name_ok) */
  const void *data;
  size_t len;
};

/* What a checkpoint does with an established TCP connection
   (docs/engine.md, "Inet sockets"). */
enum crest_tcp_mode
{
  CREST_TCP_REFUSE,      /* refused, in one line (the default) */
  CREST_TCP_CLOSE,       /* --tcp-close: restored closed (not connected) */
  CREST_TCP_ESTABLISHED, /* --tcp-established: through TCP_REPAIR (sk-tcp.c) */
};

struct crest_dump_opts
{
  /* Final image directory. Must not exist yet, or be an empty directory. The
     image is written to "<image_dir>.tmp-<pid>" beside it and renamed into
     place when complete. */
  const char *image_dir;
  /* Scratch space for logs (may be NULL: nothing written). */
  const char *work_dir;
  /* true: detach and let the tree run on after the dump. false: SIGKILL
     every task once the image is complete and renamed into place. */
  bool leave_running;
  /* The root is the init (PID 1) of its own PID namespace (a container).
     PIDs are then recorded as seen inside that namespace. false in process
     mode, where PIDs are recorded as seen by crest (run crest inside the same
     PID namespace as the tree, e.g. within `unshare -Urpf`). */
  bool root_is_ns_init;
  /* Container mode: the restore's tasks run under the security label (LSM)
     crun gives the container's process, the one its init has; else under
     crest's own (pstree.c, check_lsm). */
  bool label_of_init;
  /* --ext-unix-sk (as runc and crun mean it): a unix socket connected to a
     peer outside the tree that has a name (a path or an abstract name) is
     recorded to be connected to that name again at restore, instead of
     refused; the peer's end of the old connection is not restored. */
  bool ext_unix_sk;
  /* Optional: freeze/thaw hook and its data (see crest_freeze_fn). */
  crest_freeze_fn freeze;
  void *freeze_data;
  /* Optional: cgroup v2 directory of the tree; recorded in the image. */
  const char *cgroup_path;
  /* Optional: SHA-256 hex digest of the container's config.json; recorded in
     the manifest ("config_digest"), NULL in process mode. */
  const char *config_digest;
  /* Optional: files the caller's image holds beside the engine's, written
     with them before the commit (a failure to write one fails the dump,
     and the tree runs on untouched). */
  const struct crest_image_file *extra_files;
  size_t n_extra_files;
  /* Optional (container mode): set when the restore will not hold
     CAP_SYS_CHROOT, which giving a task its root directory back (chroot)
     needs; the reason, e.g. that the container's config does not give it.
     A task with a root directory of its own is then refused at once, with
     this reason. NULL: not known here (process mode); the restore checks
     its own capabilities before it creates anything. */
  const char *no_chroot_cap;
  /* Optional (container mode), likewise: set when the restore will not
     hold CAP_SETUID and CAP_SETGID, which giving a task other user or group
     IDs than the container's root, or supplementary groups, needs. */
  const char *no_setid_cap;
  /* Likewise: set when the restore will not hold CAP_CHOWN, which giving a
     socket file another owner than the container's root needs. */
  const char *no_chown_cap;
  /* Established TCP connections (enum crest_tcp_mode). */
  enum crest_tcp_mode tcp_mode;
  /* --skip-in-flight (CRIU's flag): connections a listening TCP socket has
     not accepted yet are left out of the image (the tree never saw them;
     they are reset when a checkpointed tree ends, and stay with one left
     running), where without it the checkpoint is refused. */
  bool skip_in_flight;
  /* --shell-job (process mode): a task whose controlling terminal is not
     a pty of the tree (a job started from a shell) is checkpointed, and
     the image says so ("shell_job"): its restore, which must run on a
     terminal, gives the tree its own. Without it such a task is refused
     (pty.c); a session leader with one is refused either way. */
  bool shell_job;
  /* --pre-dump: only the memory is saved, copied while the tree runs on
     (it is stopped only to read which pages it has and to clear their
     soft-dirty bits); the image is a parent for a later checkpoint, never
     restored itself. The tree always runs on (leave_running ignored). */
  bool pre_dump;
  /* --parent-path: a pre-dump image; pages not written since it (clean in
     the soft-dirty sense) are taken from it instead of copied. As given:
     relative to image_dir (as CRIU means it), or absolute. */
  const char *parent_path;
  /* How many seccomp filters the tree's own configuration gives every
     thread (a container's linux.seccomp: 1, the filter crun installs); a
     thread with another count (a filter it installed itself) is refused,
     and the count is recorded for the restore to check (seccomp.c). */
  int seccomp_filters;
  /* The tree's own seccomp profile denies keyctl, add_key and request_key
     (a container's: crest's front end reads it), so its tasks can have
     no keys of their own, and keyctl is not injected to ask (keyrings.c). */
  bool no_keyctl;
  /* ...and does not let modify_ldt through (or kills on it): no task can
     have a local descriptor table (crun installs the profile before the
     container's program is executed, and execve drops the table), and
     modify_ldt is not injected to ask (dump-inject.c). */
  bool no_modify_ldt;
};

/* The system calls a checkpoint injects into the tree's tasks (what only a
   task can answer: dump-inject.c and the files it calls), NULL-ended;
   keyctl besides, unless crest_dump_opts.no_keyctl, and modify_ldt,
   unless crest_dump_opts.no_modify_ldt. A seccomp profile of
   the tree's that would kill or trap a task on one of them must be refused
   by the caller before the dump. */
extern const char *const crest_dump_injected[];

/* Checkpoint the tree rooted at ROOT (ROOT and all its descendants, every
   thread) into o->image_dir.

   Returns 0 on success: the image is complete, checksummed and in place; the
   tree is either running on (leave_running) or killed.

   Returns < 0 with *err set to one line naming the PID, the object (fd,
   mapping, file) and the reason, on any failure: an unsupported resource
   (socket, unknown fd type, shared anonymous memory, ptrace-stopped or zombie
   task...), a task that vanished, an I/O error. On failure every seized task
   is detached with its registers exactly as they were, the tree is thawed and
   keeps running untouched (also when leave_running is false), and neither
   the temporary nor the final image directory is left behind.

   The dump runs in a worker process forked here (the tracer, in a session
   of its own); the calling process waits for it. If the calling process
   dies, the worker fails the dump as above; if the worker dies, the caller
   thaws and removes the temporary image (docs/engine.md, "A checkpoint
   never harms the tree"). The freeze callback runs in the worker. */
int
crest_engine_dump(pid_t root, const struct crest_dump_opts *o, crest_error_t *err);

struct crest_restore_opts
{
  /* Image directory, read only: restore never writes into it. */
  const char *image_dir;
  /* Scratch space for logs (may be NULL). */
  const char *work_dir;
  /* The caller is PID 1 of a fresh PID namespace (the container case): the
     image's root task must have been the namespace init (dumped with
     root_is_ns_init). The caller then becomes that task itself once every
     descendant is recreated below it: crest_engine_restore does not return
     on success in this mode (the process image is replaced by the restored
     init); it returns only on failure. false: process mode, the tree is
     recreated as children of the caller with the PIDs of the image (they
     must be free in the caller's PID namespace). */
  bool as_ns_init;
  /* Descriptors to hand to the restored tree in place of what the dumped
     tree had on 0, 1, 2 when those were not regular files, pipes inside the
     tree or /dev/null etc. (a terminal, a pipe to the outside): -1 keeps the
     caller's own descriptor of the same number. */
  int stdio_fds[3];
  /* Process mode: true returns as soon as the tree runs (the root is then
     reparented to the subreaper above us when we exit); false waits for the
     root task and returns its exit status in *root_status. */
  bool detach;
  /* When not NULL, the root's PID (as seen by the caller) is written there
     once the tree runs. */
  const char *pid_file;
  /* Force the ns_last_pid fallback instead of clone3() + set_tid (tests).
     In a test build (testhook.h), CREST_FORCE_NS_LAST_PID=1 does the same. */
  bool force_ns_last_pid;
  /* --lazy-pages (process mode): the tree runs before its private
     anonymous memory is in; crest fills it on first touch (userfaultfd)
     and in the background (docs/engine.md, "Lazy restore"). With detach,
     crest_engine_restore returns once the tree runs, a child of the
     caller going on with the filling. */
  bool lazy_pages;
  /* Out, may be NULL: with detach false, the wait status of the root task. */
  int *root_status;
  /* Container mode (crest-restorer): the restorer holds the container
     configuration's capabilities plus CAP_CHECKPOINT_RESTORE, which crest
     added for the restore; cr_granted says the configuration grants that
     one too. The image's capability sets must lie within the
     configuration's (docs/engine.md, "Capabilities from the image").
     false: process mode, the bound is the restorer's own permitted set. */
  bool caps_from_config;
  bool cr_granted;
  /* Container mode: crest also added CAP_SETPCAP, which the configuration
     does not give (each task drops from its bounding set what it did not
     have with it, and holds it at the end only if it did). */
  bool setpcap_added;
  /* Container mode, when > 0: a descriptor on which the tracer that
     finishes the tree writes "D" and a newline once every task runs
     restored (crest-restorer's sync pipe): the init's own signs (its name,
     its descriptors) change earlier, while the tree may still fail. When
     it is a unix socket, crest outside also answers on it the requests for
     TCP repair mode that the restorer may not make itself (sk-tcp.c). */
  int done_fd;
  /* Optional: the directories of the image's parent images (pre-dumps),
     nearest first, where they are not where the image's manifest says
     (a container's restorer sees them bind-mounted elsewhere): each is
     checked against the digest its child names all the same. */
  const char *const *chain_dirs;
  int nchain_dirs;
  /* Container mode, optional: a seccomp filter (struct sock_filter[],
     SECCOMP_LEN bytes) each restored thread installs at the end of its
     restore, with seccomp(2) flags SECCOMP_FLAGS: the container's profile,
     which crun did not install in the restorer because the restore could
     not run under it (docs/restore.md, "Seccomp"). */
  const void *seccomp_prog;
  size_t seccomp_len;
  unsigned int seccomp_flags;
};

/* Recreate the tree stored in o->image_dir.

   Returns 0 once every task runs again with its PIDs, memory, registers,
   files and signal state restored; *root_out is the root's PID as seen by the
   caller. With detach false, it also waits for the root task and stores its
   wait status in *o->root_status (when not NULL).

   Returns < 0 with *err set (one line naming the image file or PID, the
   operation and the reason) on any failure: an image that fails its checks
   (version, kernel, architecture, vDSO, checksum, bounds), a PID already in
   use, a file that is gone, a syscall the restorer could not make. All or
   nothing: every task created so far is killed and reaped before returning,
   the image directory is left untouched. */
int
crest_engine_restore(const struct crest_restore_opts *o, pid_t *root_out, crest_error_t *err);

/* Everything crest_engine_restore does before its first change to the
   system: read and check the image (but not its kernel identity) and plan
   the restore O describes. 0 when the restore would go ahead. For the
   fuzzer. IMG: an image already open (img_reader_open_mem, the fuzzer's
   in-memory one), which the plan takes over and frees; NULL: open
   o->image_dir. */
struct img_reader;
int
crest_engine_plan(const struct crest_restore_opts *o, struct img_reader *img, crest_error_t *err);

/* Remove FINAL_DIR.tmp-PID directories whose PID no longer exists: a
   checkpoint's temporary image, and restore --import's unpacked archive
   (runtime/src/cr-archive.c), left by a crest that died. */
void
dump_remove_stale_tmp(const char *final_dir);

/* The directories of IMAGE_DIR's parent images (pre-dumps), nearest
   first, as its manifests name them (not checked here: the restore checks
   them); *N 0 when it has none. The caller frees each and the array. */
int
crest_engine_image_chain(const char *image_dir, char ***dirs, int *n, crest_error_t *err);

/* Check an image without restoring it: manifest, version, checksums of every
   file, bounds of every index. 0 when sound, < 0 with err naming the file and
   the problem. */
int
crest_engine_check_image(const char *image_dir, crest_error_t *err);

/* The same, and *OUT the reader it checked the image through (the caller
   frees it, img_reader_free): the caller's own files of the image
   (crest_dump_opts.extra_files) are read from it, through the descriptors
   whose bytes were checked (img_reader_read). */
struct img_reader;
int
crest_engine_check_image_open(const char *image_dir, struct img_reader **out, crest_error_t *err);

#endif
