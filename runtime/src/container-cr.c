/* crest: checkpoint and restore of a container (see container-cr.h and
 * docs/restore.md).
 *
 * Checkpoint runs outside the container as the user who owns it. Restore
 * asks crun to build a new container from a private copy of the
 * container's config (the bundle's when the image fits it, else the
 * checkpointed one) whose process is crest's static restorer; the
 * restorer, PID 1 of the new PID namespace, calls the engine, which turns it
 * into the checkpointed init. crest watches from outside through the sync
 * pipe the restorer inherits as descriptor 3: "R" once the restorer runs,
 * "D" once the engine's tracer saw every task run restored, any other line
 * the reason the restore failed; the init vanishing without a line means it
 * was killed. */
#include <config.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <poll.h>
#include <sys/socket.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "cr-archive.h"
#include "config-compat.h"
#include "container-cr.h"
#include "engine.h"
#include "image.h"
#include "log.h"
#include "mount-opts.h"
#include "ns-sysctl.h"
#include "oci-config.h"
#include "seccomp-profile.h"
#include "sha256.h"
#include "state.h"
#include "testhook.h"
#include "util.h"

/* The file the image carries besides the engine's: the exact config the
   container ran with, written by the engine's image writer (listed in the
   manifest with its checksum; its SHA-256 is also the manifest's
   config_digest). */
#define IMAGE_CONFIG "container-config.json"
/* Where the restorer and the image appear inside the restoring container:
   under /dev, crun's tmpfs, so that nothing is created in the rootfs. */
#define IN_DEV_RESTORER "/dev/.crest-restorer"
#define IN_DEV_IMAGE "/dev/.crest-image"
#define IN_ROOT_RESTORER "/.crest-restorer"
#define IN_ROOT_IMAGE "/.crest-image"
/* How long a restore may take before crest gives up and undoes it. */
#define RESTORE_TIMEOUT_S 300

static char *
abs_path(const char *p)
{
  char cwd[PATH_MAX];
  if (p[0] == '/')
    return xstrdup(p);
  if (!getcwd(cwd, sizeof cwd))
    return NULL;
  return xasprintf("%s/%s", cwd, p);
}

/* ": LINE", the last line crun wrote to FD (a memfd), or "". */
static const char *
crun_says(int fd)
{
  static char buf[512], out[520];
  ssize_t n;
  char *line;
  if (fd < 0 || (n = pread(fd, buf, sizeof buf - 1, 0)) <= 0)
    return "";
  buf[n] = '\0';
  while (n > 0 && buf[n - 1] == '\n')
    buf[--n] = '\0';
  line = strrchr(buf, '\n');
  snprintf(out, sizeof out, ": %s", line ? line + 1 : buf);
  return out;
}

static int
run_crun_quiet(struct crest_global *g, const char *verb, char *const *argv)
{
  crest_error_t e = NULL;
  int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
  struct crest_crun_fds fds = { -1, devnull, devnull };
  pid_t pid = crest_crun_spawn(g, verb, argv, &fds, &e);
  if (devnull >= 0)
    close(devnull);
  if (pid < 0)
    {
      crest_error_release(&e);
      return 125;
    }
  return crest_crun_wait(pid, false);
}

/* `crun state ID`: the init's PID (as the host sees it) and the status. */
static int
crun_state(struct crest_global *g, const char *id, pid_t *pid, char **status, char **created,
           crest_error_t *err)
{
  char *args[] = { (char *)id, NULL };
  cleanup_free char *out = NULL;
  size_t cap = 4096, used = 0;
  int p[2], st;
  pid_t child;
  yajl_val root, v;
  char ebuf[256];

  if (pipe2(p, O_CLOEXEC) < 0)
    return crest_error_errno(err, "pipe");
  {
    struct crest_crun_fds fds = { -1, p[1], -1 };
    child = crest_crun_spawn(g, "state", args, &fds, err);
  }
  close(p[1]);
  if (child < 0)
    {
      close(p[0]);
      return -1;
    }
  out = xmalloc(cap);
  for (;;)
    {
      ssize_t r = read(p[0], out + used, cap - used - 1);
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0)
        break;
      used += (size_t)r;
      if (used + 1 == cap)
        {
          if (cap > (1u << 20))
            break;
          cap *= 2;
          out = xrealloc(out, cap);
        }
    }
  close(p[0]);
  out[used] = '\0';
  st = crest_crun_wait(child, false);
  if (st != 0)
    return crest_error_make(err, 0, "container `%s`: `crun state` failed with status %d", id, st);
  root = yajl_tree_parse(out, ebuf, sizeof ebuf);
  if (!root)
    return crest_error_make(err, 0, "container `%s`: cannot parse `crun state`: %s", id, ebuf);
  {
    const char *pp[] = { "pid", NULL }, *sp[] = { "status", NULL }, *cp[] = { "created", NULL };
    v = yajl_tree_get(root, pp, yajl_t_number);
    *pid = v && YAJL_IS_INTEGER(v) ? (pid_t)YAJL_GET_INTEGER(v) : 0;
    v = yajl_tree_get(root, sp, yajl_t_string);
    *status = xstrdup(v ? (v)->u.string : "unknown");
    v = yajl_tree_get(root, cp, yajl_t_string);
    *created = v ? xstrdup(v->u.string) : NULL;
  }
  yajl_tree_free(root);
  if (*pid <= 0)
    {
      free(*status);
      free(*created);
      *status = *created = NULL;
      return crest_error_make(err, 0, "container `%s`: `crun state` shows no init PID", id);
    }
  return 0;
}

/* ---- freezing through cgroup v2, when the container's cgroup is ours ---- */

struct freezer
{
  char *dir;            /* /sys/fs/cgroup/... of the container */
  bool was_frozen;      /* frozen before crest came (`crun pause`, CRI-O): stays so */
  uint64_t freezing_us; /* from asking to freeze until the cgroup reports frozen */
  int guard;            /* write end of the thaw guard's pipe; -1: none */
};

/* A freeze crest made is undone even if every crest process dies before its
   thaw (a SIGKILL of them all, an OOM kill): a small process of its own, in
   a session of its own and holding nothing else open, waits on a pipe whose
   write end only crest holds. Crest's word "t" after its thaw lets it go;
   an end of file without it (crest is dead) makes it write 0 to CTL itself.
   Forked twice, so that it is nobody's child in crest. Returns the write
   end, or -1 (no guard: crest's own thaw is all there is). */
static int
thaw_guard_start(const char *ctl)
{
  int p[2], st;
  pid_t mid;

  if (pipe2(p, O_CLOEXEC) < 0)
    return -1;
  mid = fork();
  if (mid == 0)
    {
      if (fork() != 0)
        _exit(0);
      char c = 0;
      ssize_t n;
      int fd;
      setsid();
      signal(SIGHUP, SIG_IGN), signal(SIGINT, SIG_IGN), signal(SIGTERM, SIG_IGN);
      if (p[0] > 0)
        close_range(0, (unsigned)p[0] - 1, 0);
      close_range((unsigned)p[0] + 1, ~0U, 0);
      prctl(PR_SET_NAME, "crest-thaw");
      do
        n = read(p[0], &c, 1);
      while (n < 0 && errno == EINTR);
      if (n != 1 || c != 't')
        {
          fd = open(ctl, O_WRONLY | O_CLOEXEC);
          if (fd >= 0 && write(fd, "0", 1) != 1)
            _exit(1);
        }
      _exit(0);
    }
  close(p[0]);
  if (mid < 0)
    {
      close(p[1]);
      return -1;
    }
  while (waitpid(mid, &st, 0) < 0 && errno == EINTR)
    ;
  return p[1];
}

/* The thaw guard let go (crest thawed, or left a paused container frozen
   as it found it). */
static void
thaw_guard_stop(struct freezer *f)
{
  if (f->guard < 0)
    return;
  if (write(f->guard, "t", 1) != 1)
    crest_debug("thaw guard: %s", strerror(errno));
  close(f->guard);
  f->guard = -1;
}

static uint64_t
now_us(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

static char *
cgroup_dir_of(pid_t pid)
{
  cleanup_free char *path = xasprintf("/proc/%d/cgroup", (int)pid);
  cleanup_free char *text = NULL;
  crest_error_t e = NULL;
  char *line, *save = NULL;

  if (read_file(path, &text, NULL, 1 << 16, &e) < 0)
    {
      crest_error_release(&e);
      return NULL;
    }
  for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
    if (strncmp(line, "0::", 3) == 0)
      {
        if (strstr(line + 3, "/.."))
          return NULL;
        return xasprintf("/sys/fs/cgroup%s", line + 3);
      }
  return NULL;
}

static int
cg_freeze(void *data, pid_t root, enum crest_freeze_op op, crest_error_t *err)
{
  struct freezer *f = data;
  cleanup_free char *ctl = xasprintf("%s/cgroup.freeze", f->dir);
  cleanup_free char *events = xasprintf("%s/cgroup.events", f->dir);
  /* Only a freeze crest made is undone: a paused container is frozen again
     at the end (its tasks still held by ptrace, so none runs meanwhile). */
  bool freeze = op == CREST_FREEZE_ON || (op == CREST_FREEZE_RESTORE && f->was_frozen);
  uint64_t t0 = now_us();

  (void)root;
  {
    cleanup_close int fd = open(ctl, O_WRONLY | O_CLOEXEC);
    /* The guard first: from the write on, the cgroup may be frozen. */
    if (freeze && !f->was_frozen && f->guard < 0)
      f->guard = thaw_guard_start(ctl);
    if (fd < 0 || write(fd, freeze ? "1" : "0", 1) != 1)
      return crest_error_errno(err, "%s `%s`", freeze ? "freeze" : "thaw", ctl);
  }
  if (!freeze)
    {
      thaw_guard_stop(f);
      return 0;
    }
  /* The write only asks; cgroup.events says when every task is frozen (a
     task in a ptrace stop counts as frozen), and polls POLLPRI when it
     changes. */
  {
    cleanup_close int fd = open(events, O_RDONLY | O_CLOEXEC);
    while (fd >= 0)
      {
        char text[512];
        ssize_t n = pread(fd, text, sizeof text - 1, 0);
        struct pollfd pfd = { fd, POLLPRI, 0 };
        long left_ms = 5000 - (long)((now_us() - t0) / 1000);
        if (n < 0)
          break;
        text[n] = 0;
        if (strstr(text, "frozen 1"))
          {
            if (op == CREST_FREEZE_ON)
              f->freezing_us = now_us() - t0;
            return 0;
          }
        if (left_ms <= 0)
          break;
        if (poll(&pfd, 1, left_ms) < 0 && errno != EINTR)
          break;
      }
  }
  return crest_error_make(err, ETIMEDOUT,
                          "freeze `%s`: the cgroup did not report frozen within 5 s", f->dir);
}

/* Is every task of cgroup DIR and of its descendants in the PID namespace
   NS (a /proc/PID/ns/pid link text)? Freezing a cgroup freezes all of them,
   so a cgroup shared with anything else (the user's session, crest itself)
   must not be frozen. */
static bool
cgroup_only_ns(const char *dir, const char *ns, int depth)
{
  cleanup_free char *procs = xasprintf("%s/cgroup.procs", dir);
  cleanup_free char *text = NULL;
  crest_error_t e = NULL;
  char *line, *save = NULL;
  DIR *d;
  struct dirent *de;
  bool ok = true;

  if (depth > 16 || read_file(procs, &text, NULL, 1 << 20, &e) < 0)
    {
      crest_error_release(&e);
      return false;
    }
  for (line = strtok_r(text, "\n", &save); line && ok; line = strtok_r(NULL, "\n", &save))
    {
      char link[64], target[128];
      ssize_t n;
      snprintf(link, sizeof link, "/proc/%s/ns/pid", line);
      n = readlink(link, target, sizeof target - 1);
      if (n < 0)
        continue; /* gone meanwhile */
      target[n] = '\0';
      ok = strcmp(target, ns) == 0;
    }
  d = ok ? opendir(dir) : NULL;
  while (d && ok && (de = readdir(d)))
    if (de->d_type == DT_DIR && de->d_name[0] != '.')
      {
        cleanup_free char *sub = xasprintf("%s/%s", dir, de->d_name);
        ok = cgroup_only_ns(sub, ns, depth + 1);
      }
  if (d)
    closedir(d);
  return ok;
}

/* The cgroup freezer is used only when the container has a cgroup of its
   own that we may freeze (a delegated subtree): writable cgroup.freeze, no
   task outside the container's PID namespace in it or below it (crest's
   own cgroup in particular). Otherwise the engine's ptrace seize alone
   stops the tree. */
static bool
freezer_setup(pid_t pid, struct freezer *f)
{
  cleanup_free char *ctl = NULL, *own = NULL;
  char link[64], ns[128];
  ssize_t n;

  f->dir = cgroup_dir_of(pid);
  if (!f->dir)
    return false;
  own = cgroup_dir_of(getpid());
  ctl = xasprintf("%s/cgroup.freeze", f->dir);
  snprintf(link, sizeof link, "/proc/%d/ns/pid", (int)pid);
  n = readlink(link, ns, sizeof ns - 1);
  if (n > 0)
    ns[n] = '\0';
  if (n <= 0 || strcmp(f->dir, "/sys/fs/cgroup/") == 0 || access(ctl, W_OK) < 0
      || (own && strncmp(own, f->dir, strlen(f->dir)) == 0
          && (own[strlen(f->dir)] == '\0' || own[strlen(f->dir)] == '/'))
      || !cgroup_only_ns(f->dir, ns, 0))
    {
      crest_debug("not freezing through cgroup `%s`: not the container's own", f->dir);
      free(f->dir);
      f->dir = NULL;
      return false;
    }
  {
    cleanup_free char *text = NULL;
    crest_error_t e = NULL;
    if (read_file(ctl, &text, NULL, 64, &e) == 0 && text[0] == '1')
      f->was_frozen = true;
    crest_error_release(&e);
  }
  return true;
}

/* ---- checkpoint ---- */

/* The restorer runs with the config's capabilities (restore-config.json only
   adds CAP_CHECKPOINT_RESTORE): a task's chroot can only come back if the
   config gives CAP_SYS_CHROOT. */
/* Will the restorer of CFG's container hold CAP? It runs as the
   config's process user, or as the container's root when that user is
   another (restore_config: as_root). */
static int
restorer_holds_cap(yajl_val cfg, const char *cap)
{
  long uid, gid;
  crest_config_process_user(cfg, &uid, &gid);
  return uid || gid ? crest_config_root_holds_cap(cfg, cap)
                    : crest_config_process_holds_cap(cfg, cap);
}

static const char *
no_chroot_cap(const char *config_text)
{
  yajl_val cfg = NULL;
  crest_error_t e = NULL;
  const char *why = NULL;
  if (crest_config_parse(config_text, &cfg, &e) == 0
      && restorer_holds_cap(cfg, "CAP_SYS_CHROOT") == 0)
    why = "restoring it needs CAP_SYS_CHROOT, which the container's config does not give its "
          "processes";
  crest_error_release(&e);
  if (cfg)
    yajl_tree_free(cfg);
  return why;
}

/* A socket file owned by another than the container's root is given its
   owner by the restorer (lchown): the config must give CAP_CHOWN. */
static const char *
no_chown_cap(const char *config_text)
{
  yajl_val cfg = NULL;
  crest_error_t e = NULL;
  const char *why = NULL;
  if (crest_config_parse(config_text, &cfg, &e) == 0 && restorer_holds_cap(cfg, "CAP_CHOWN") == 0)
    why = "restoring it needs CAP_CHOWN, which the container's config does not give its processes";
  crest_error_release(&e);
  if (cfg)
    yajl_tree_free(cfg);
  return why;
}

/* The restorer gives a task of other IDs than the container's root its
   own in the blob (setresuid, setresgid, setgroups): the config must give
   CAP_SETUID and CAP_SETGID. */
static const char *
no_setid_cap(const char *config_text)
{
  yajl_val cfg = NULL;
  crest_error_t e = NULL;
  const char *why = NULL;
  long uid = 0, gid = 0;
  if (crest_config_parse(config_text, &cfg, &e) == 0)
    {
      /* A container whose process user is not its root is restored by a
         restorer run as its root (restore_config: as_root), which takes
         the two where the bounding set has them. */
      crest_config_process_user(cfg, &uid, &gid);
      if (restorer_holds_cap(cfg, "CAP_SETUID") == 0 || restorer_holds_cap(cfg, "CAP_SETGID") == 0)
        why = uid || gid ? "restoring it needs CAP_SETUID and CAP_SETGID in the bounding set of "
                           "the container's config, for the restorer its root runs"
                         : "restoring it needs CAP_SETUID and CAP_SETGID, which the container's "
                           "config does not give its processes";
    }
  crest_error_release(&e);
  if (cfg)
    yajl_tree_free(cfg);
  return why;
}

/* A profile denying what the restore needs (its tracer ptraces the tasks
   and reads them with process_vm_*) cannot be the restorer's: crun then
   starts the restorer without it, and the restorer installs it in every
   restored task at the end of the restore (docs/restore.md, "Seccomp").
   0: crun installs it in the restorer (it allows them all); 1: the
   restorer does, *BPF (when not NULL) the compiled program; -1: refused,
   ERR saying why (the caller names the container and the verb). */
static int
late_seccomp(yajl_val cfg, struct crest_seccomp_bpf *bpf, crest_error_t *err)
{
  const char *sp[] = { "linux", "seccomp", NULL };
  const char *np[] = { "process", "noNewPrivileges", NULL };
  static const char *const needed[] = { "ptrace", "process_vm_readv", "process_vm_writev" };
  yajl_val sc = yajl_tree_get(cfg, sp, yajl_t_object), nnp = yajl_tree_get(cfg, np, yajl_t_any);
  struct crest_seccomp_bpf b;
  const char *denied = NULL;

  for (size_t i = 0; sc && i < ARRAY_SIZE(needed) && !denied; i++)
    if (!crest_seccomp_allows(sc, needed[i]))
      denied = needed[i];
  if (!denied)
    return 0;
  if (crest_seccomp_compile(sc, &b, err) < 0)
    return crest_error_wrap(err,
                            "its linux.seccomp denies %s, so the restorer must install it "
                            "itself, and crest cannot compile it",
                            denied);
  if (!(nnp && YAJL_IS_TRUE(nnp)) && crest_config_process_holds_cap(cfg, "CAP_SYS_ADMIN") != 1)
    {
      free(b.prog);
      return crest_error_make(err, ENOTSUP,
                              "its linux.seccomp denies %s, so the restorer must install it in "
                              "each task, which needs process.noNewPrivileges or CAP_SYS_ADMIN",
                              denied);
    }
  if (bpf)
    *bpf = b;
  else
    free(b.prog);
  return 1;
}

/* The seccomp filters the container's config installs in every task: crun
   compiles linux.seccomp into one filter, and a restore installs the same
   one again, through crun in the restorer, whose tasks inherit it, or, for
   a profile denying what the restore needs, in each task at its end
   (late_seccomp). A profile with a listener (SCMP_ACT_NOTIFY answered by an
   agent outside) is refused: the agent's side is not crest's to carry
   over. */
static int
seccomp_filters_of(const char *id, const char *config_text, int *n, bool *no_keyctl,
                   bool *no_modify_ldt, crest_error_t *err)
{
  const char *sp[] = { "linux", "seccomp", NULL };
  const char *lp[] = { "linux", "seccomp", "listenerPath", NULL };
  yajl_val cfg = NULL;
  int rc = 0;
  *n = 0;
  if (crest_config_parse(config_text, &cfg, err) < 0)
    return crest_error_wrap(err, "container `%s`: checkpoint: its config", id);
  yajl_val sc = yajl_tree_get(cfg, sp, yajl_t_object);
  int keys = sc ? crest_seccomp_keyctl(sc) : 1;
  *n = sc ? 1 : 0;
  *no_keyctl = keys == 0;
  *no_modify_ldt
      = sc && (!crest_seccomp_allows(sc, "modify_ldt") || crest_seccomp_harms(sc, "modify_ldt"));
  if (crest_config_get_string(cfg, lp))
    rc = crest_error_make(
        err, ENOTSUP,
        "container `%s`: checkpoint: its linux.seccomp has a listenerPath (seccomp "
        "notifications answered outside the container): not restorable",
        id);
  else if (late_seccomp(cfg, NULL, err) < 0)
    rc = crest_error_wrap(err, "container `%s`: checkpoint", id);
  else if (keys < 0)
    rc = crest_error_make(err, ENOTSUP,
                          "container `%s`: checkpoint: its linux.seccomp lets add_key or "
                          "request_key (or some keyctl calls) through but not every keyctl "
                          "call, so crest cannot ask its tasks for their keys",
                          id);
  /* The calls the checkpoint injects into every task must not kill one. */
  for (size_t i = 0; sc && rc == 0 && crest_dump_injected[i]; i++)
    {
      const char *act = crest_seccomp_harms(sc, crest_dump_injected[i]);
      if (act)
        rc = crest_error_make(err, ENOTSUP,
                              "container `%s`: checkpoint: its linux.seccomp answers %s with %s, "
                              "and the checkpoint calls it in every task: cannot checkpoint it",
                              id, crest_dump_injected[i], act);
    }
  yajl_tree_free(cfg);
  return rc;
}

/* The PID as the task's own PID namespace shows it (NSpid's last field). */
static long
ns_pid_of(int pid)
{
  cleanup_free char *path = xasprintf("/proc/%d/status", pid), *text = NULL;
  crest_error_t e = NULL;
  char *l, *end;
  long v = pid;
  if (read_file(path, &text, NULL, 1 << 16, &e) < 0)
    {
      crest_error_release(&e);
      return pid;
    }
  l = strstr(text, "\nNSpid:");
  if (l)
    {
      end = strchr(l + 1, '\n');
      if (end)
        *end = '\0';
      l = strrchr(l, '\t');
      if (l)
        v = strtol(l + 1, NULL, 10);
    }
  return v;
}

/* Does a task in INIT's PID namespace hold a file lock? /proc/locks names
   the owner's PID for POSIX and flock locks (OFD locks show -1 and are not
   attributed here). Without --file-locks such a tree is refused, as CRIU
   and the engines that drive it expect: one line naming the first. With
   it the engine saves and restores the locks (locks.c). */
static int
check_file_locks(const char *id, pid_t init, crest_error_t *err)
{
  cleanup_free char *text = NULL, *nslink = xasprintf("/proc/%d/ns/pid", (int)init);
  char ns[128], *line, *save = NULL;
  crest_error_t e = NULL;
  ssize_t n = readlink(nslink, ns, sizeof ns - 1);

  if (n <= 0 || read_file("/proc/locks", &text, NULL, 16u << 20, &e) < 0)
    {
      crest_error_release(&e);
      return 0;
    }
  ns[n] = '\0';
  for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
    {
      char kind[16], mode[16], rw[16], dev[64], link[64], other[128];
      int pid;
      ssize_t m;
      if (strstr(line, "->")
          || sscanf(line, "%*d: %15s %15s %15s %d %63s", kind, mode, rw, &pid, dev) != 5
          || pid <= 0)
        continue;
      snprintf(link, sizeof link, "/proc/%d/ns/pid", pid);
      m = readlink(link, other, sizeof other - 1);
      if (m <= 0 || (other[m] = '\0', strcmp(other, ns) != 0))
        continue;
      return crest_error_make(err, 0,
                              "container `%s`: checkpoint: task %ld holds a file lock (%s %s on "
                              "inode %s): checkpoint it with --file-locks to save its locks",
                              id, ns_pid_of(pid), kind, rw, dev);
    }
  return 0;
}

/* Does CONFIG give the container a namespace of TYPE of its own? */
static bool
has_namespace(yajl_val config, const char *type)
{
  yajl_val lx = crest_config_member(config, "linux");
  yajl_val ns = lx ? crest_config_member(lx, "namespaces") : NULL;
  for (size_t i = 0; ns && YAJL_IS_ARRAY(ns) && i < ns->u.array.len; i++)
    {
      yajl_val t = crest_config_member(ns->u.array.values[i], "type"),
               path = crest_config_member(ns->u.array.values[i], "path");
      if (t && YAJL_IS_STRING(t) && strcmp(t->u.string, type) == 0 && !path)
        return true;
    }
  return false;
}

/* ---- mounts the container made itself ---- */

/* How many mounts crun makes at MP for CFG (0: none), and whether a mount
   below MP is crun's too (*below: a recursive bind, or /sys, which crun
   binds recursively from the host where it cannot mount sysfs). The root,
   the config's mounts, its masked and read-only paths and devices, the
   devices crun always binds (rootless: from the host), the console, and
   the restorer's and image's binds of a restored container. */
static int
mounts_made_at(yajl_val cfg, const char *mp, bool *below)
{
  static const char *const always[] = { "/",
                                        "/dev/null",
                                        "/dev/zero",
                                        "/dev/full",
                                        "/dev/tty",
                                        "/dev/random",
                                        "/dev/urandom",
                                        "/dev/console",
                                        IN_DEV_RESTORER,
                                        IN_DEV_IMAGE,
                                        IN_ROOT_RESTORER,
                                        IN_ROOT_IMAGE };
  static const char *const lists[][2]
      = { { "linux", "maskedPaths" }, { "linux", "readonlyPaths" } };
  yajl_val mounts = crest_config_member(cfg, "mounts"), lx = crest_config_member(cfg, "linux");
  yajl_val devices = lx ? crest_config_member(lx, "devices") : NULL;
  size_t mpl = strlen(mp);
  int n = 0;
  *below = false;
  for (size_t i = 0; i < ARRAY_SIZE(always); i++)
    n += strcmp(always[i], mp) == 0;
  for (size_t i = 0; mounts && YAJL_IS_ARRAY(mounts) && i < mounts->u.array.len; i++)
    {
      yajl_val m = mounts->u.array.values[i], d = crest_config_member(m, "destination"),
               o = crest_config_member(m, "options");
      const char *dest = d && YAJL_IS_STRING(d) ? d->u.string : NULL;
      size_t dl = dest ? strlen(dest) : 0;
      bool rbind = strcmp(dest ? dest : "", "/sys") == 0;
      while (dl > 1 && dest[dl - 1] == '/')
        dl--;
      for (size_t k = 0; o && YAJL_IS_ARRAY(o) && k < o->u.array.len; k++)
        rbind |= YAJL_IS_STRING(o->u.array.values[k])
                 && strcmp(o->u.array.values[k]->u.string, "rbind") == 0;
      if (!dest)
        continue;
      if (dl == mpl && strncmp(dest, mp, dl) == 0)
        n++;
      else if (rbind && mpl > dl && strncmp(dest, mp, dl) == 0 && mp[dl] == '/')
        *below = true;
    }
  for (size_t l = 0; lx && l < ARRAY_SIZE(lists); l++)
    {
      yajl_val a = crest_config_member(lx, lists[l][1]);
      for (size_t i = 0; a && YAJL_IS_ARRAY(a) && i < a->u.array.len; i++)
        n += YAJL_IS_STRING(a->u.array.values[i])
             && strcmp(a->u.array.values[i]->u.string, mp) == 0;
    }
  for (size_t i = 0; devices && YAJL_IS_ARRAY(devices) && i < devices->u.array.len; i++)
    {
      yajl_val d = crest_config_member(devices->u.array.values[i], "path");
      n += d && YAJL_IS_STRING(d) && strcmp(d->u.string, mp) == 0;
    }
  return n;
}

/* The container's mount namespace seen from its root, as a child of
   crest's that joined INIT's user and mount namespaces sees it (setns puts
   it at the namespace's root: a chroot of the init's hides nothing, where
   /proc/INIT/root and /proc/INIT/mountinfo show only what lies under its
   root). DIRS NULL: the mount table (mountinfo); else the entries of each
   of DIRS (NULL-ended), one "DIR/NAME" a line. NULL when it cannot be
   done here (then the init's own view is used). */
struct ns_view_req
{
  pid_t init;
  const char *const *dirs;
};

static int
ns_view_body(int fd, void *arg)
{
  static const char *const ns[] = { "user", "mnt" };
  const struct ns_view_req *r = arg;
  int proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC), out;
  FILE *f;
  if (proc < 0 || join_ns(r->init, ns, ARRAY_SIZE(ns)) < 0 || !(f = fdopen(fd, "w")))
    return -1;
  if (!r->dirs)
    {
      /* crest's /proc, where this child is "self" (the container's shows
         its own PID namespace) */
      char buf[65536];
      ssize_t n;
      if ((out = openat(proc, "self/mountinfo", O_RDONLY | O_CLOEXEC)) < 0)
        return -1;
      while ((n = read(out, buf, sizeof buf)) > 0)
        fwrite(buf, 1, (size_t)n, f);
      close(out);
      return n < 0 || fclose(f) != 0 ? -1 : 0;
    }
  for (size_t i = 0; r->dirs[i]; i++)
    {
      DIR *dp = opendir(r->dirs[i]);
      struct dirent *de;
      while (dp && (de = readdir(dp)))
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
          fprintf(f, "%s\t%s\n", r->dirs[i], de->d_name);
      if (dp)
        closedir(dp);
    }
  return fclose(f) == 0 ? 0 : -1;
}

static char *
ns_view(pid_t init, const char *const *dirs)
{
  struct ns_view_req r = { init, dirs };
  return child_run(ns_view_body, &r);
}

/* A mount the container's tasks made themselves (mount(2) with
   CAP_SYS_ADMIN in the container's user namespace) is not in the config,
   and a restore, which has crun make the container again from the config,
   would not make it: its files (a tmpfs's) and what it hides would be
   lost, silently. Refused in one line: a mount point of INIT's mount
   table that the config does not make, or more mounts at one than it
   makes (one mounted over another). The top mount the config makes at a
   point is compared with its config's options (mount-opts.c). */
static int
check_mounts(const char *id, pid_t init, yajl_val cfg, const char *bundle, crest_error_t *err)
{
  cleanup_free char *path = xasprintf("/proc/%d/mountinfo", (int)init), *text = ns_view(init, NULL);
  char *save = NULL;
  int rc = 0;
  if (!text && read_file(path, &text, NULL, 16u << 20, err) < 0)
    return crest_error_wrap(err, "container `%s`: checkpoint: its mount table", id);
  for (char *line = strtok_r(text, "\n", &save); line && rc == 0;
       line = strtok_r(NULL, "\n", &save))
    {
      char mp[4096], opts[256], type[64] = "?", super[1024] = "", *dash = strstr(line, " - ");
      bool below;
      int made, seen = 0;
      if (sscanf(line, "%*u %*u %*u:%*u %*s %4095s %255s", mp, opts) != 2)
        continue;
      if (dash)
        sscanf(dash + 3, "%63s %*s %1023s", type, super);
      crest_mount_unescape(mp);
      made = mounts_made_at(cfg, mp, &below);
      if (below)
        continue;
      /* the mounts at MP so far, this one included */
      for (char *l = text; l <= line; l += strlen(l) + 1)
        {
          char other[4096];
          if (sscanf(l, "%*u %*u %*u:%*u %*s %4095s", other) == 1
              && strcmp(crest_mount_unescape(other), mp) == 0)
            seen++;
        }
      if (made == 0)
        rc = crest_error_make(err, ENOTSUP,
                              "container `%s`: checkpoint: a %s mount on %s that the container "
                              "made itself (its config has none there): a restore would not "
                              "make it again, and what it holds would be lost",
                              id, type, mp);
      else if (seen > made)
        rc = crest_error_make(err, ENOTSUP,
                              "container `%s`: checkpoint: a %s mount on %s over the one its "
                              "config makes there, made by the container itself: a restore "
                              "would not make it again, and what it holds would be lost",
                              id, type, mp);
      else if (seen == made) /* the top one the config makes at MP */
        rc = crest_check_mount_opts(id, cfg, bundle, mp, opts, type, super, err);
    }
  return rc;
}

/* What crun makes in the tmpfs it mounts on /dev, besides the config's
   devices and mount points, and crest's binds of a restored container. */
static const char *const crun_dev_names[] = { "core",
                                              "fd",
                                              "full",
                                              "mqueue",
                                              "null",
                                              "ptmx",
                                              "pts",
                                              "random",
                                              "shm",
                                              "stderr",
                                              "stdin",
                                              "stdout",
                                              "tty",
                                              "urandom",
                                              "zero",
                                              "console",
                                              ".crest-restorer",
                                              ".crest-image" };

/* Is DIR/NAME (DIR a tmpfs mount of CFG) something crun makes there: a
   config mount's destination or a directory on the way to one, a device
   of the config, or under /dev one of crun_dev_names? */
static bool
made_by_crun(yajl_val cfg, const char *dir, const char *name)
{
  yajl_val mounts = crest_config_member(cfg, "mounts"), lx = crest_config_member(cfg, "linux");
  yajl_val devices = lx ? crest_config_member(lx, "devices") : NULL;
  cleanup_free char *path = xasprintf("%s/%s", strcmp(dir, "/") == 0 ? "" : dir, name);
  size_t pl = strlen(path);
  if (strcmp(dir, "/dev") == 0)
    for (size_t i = 0; i < ARRAY_SIZE(crun_dev_names); i++)
      if (strcmp(name, crun_dev_names[i]) == 0)
        return true;
  for (int pass = 0; pass < 2; pass++)
    {
      yajl_val a = pass == 0 ? mounts : devices;
      for (size_t i = 0; a && YAJL_IS_ARRAY(a) && i < a->u.array.len; i++)
        {
          yajl_val d
              = crest_config_member(a->u.array.values[i], pass == 0 ? "destination" : "path");
          const char *v = d && YAJL_IS_STRING(d) ? d->u.string : "";
          if (strncmp(v, path, pl) == 0 && (v[pl] == '\0' || v[pl] == '/'))
            return true;
        }
    }
  return false;
}

/* Is PATH, in INIT's root, the socket file of a unix socket bound there
   now (its network namespace's /proc/net/unix names it)? The engine binds
   that socket again at restore, in the new tmpfs (syslog's /dev/log). */
static bool
bound_socket_file(pid_t init, const char *path)
{
  cleanup_free char *at = xasprintf("/proc/%d/root%s", (int)init, path);
  cleanup_free char *net = xasprintf("/proc/%d/net/unix", (int)init);
  cleanup_free char *line = NULL;
  size_t cap = 0, pl = strlen(path);
  struct stat st;
  bool found = false;
  FILE *f;
  if (lstat(at, &st) < 0 || !S_ISSOCK(st.st_mode) || !(f = fopen(net, "re")))
    return false;
  while (!found && getline(&line, &cap, f) > 0)
    {
      size_t ll = strcspn(line, "\n");
      found = ll > pl && line[ll - pl - 1] == ' ' && strncmp(line + ll - pl, path, pl) == 0;
    }
  fclose(f);
  return found;
}

/* A tmpfs the config mounts (crun's /dev and /dev/shm, a --tmpfs) is
   mounted new and empty by the restore: a file left in it that no task
   holds open (those the engine refuses: check_volatile_tmpfs) would be
   lost, silently. Refused in one line, the first such entry named; a
   socket file bound now is the engine's to bind again. Read
   through INIT's root (a chroot'd init's is not the container's: then
   not seen). */
static int
check_tmpfs_files(const char *id, pid_t init, yajl_val cfg, crest_error_t *err)
{
  yajl_val mounts = crest_config_member(cfg, "mounts");
  size_t n = 0, cap = mounts && YAJL_IS_ARRAY(mounts) ? mounts->u.array.len : 0;
  cleanup_free const char **dirs = xzalloc((cap + 1) * sizeof *dirs);
  cleanup_free char *list = NULL;
  char *save = NULL;
  int rc = 0;
  for (size_t i = 0; i < cap; i++)
    {
      yajl_val m = mounts->u.array.values[i], d = crest_config_member(m, "destination"),
               t = crest_config_member(m, "type");
      if (d && YAJL_IS_STRING(d) && t && YAJL_IS_STRING(t) && strcmp(t->u.string, "tmpfs") == 0)
        dirs[n++] = d->u.string;
    }
  if (n == 0)
    return 0;
  list = ns_view(init, dirs);
  if (!list)
    {
      /* the init's view (its root: a chroot of its own would hide them) */
      FILE *f = open_memstream(&list, &(size_t){ 0 });
      for (size_t i = 0; f && i < n; i++)
        {
          cleanup_free char *dir = xasprintf("/proc/%d/root%s", (int)init, dirs[i]);
          DIR *dp = opendir(dir);
          struct dirent *de;
          while (dp && (de = readdir(dp)))
            if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
              fprintf(f, "%s\t%s\n", dirs[i], de->d_name);
          if (dp)
            closedir(dp);
        }
      if (!f || fclose(f) != 0)
        return crest_error_errno(err, "container `%s`: checkpoint: list its tmpfs mounts", id);
    }
  for (char *l = strtok_r(list, "\n", &save); l && rc == 0; l = strtok_r(NULL, "\n", &save))
    {
      char *tab = strchr(l, '\t');
      if (!tab)
        continue;
      *tab = '\0';
      cleanup_free char *path = xasprintf("%s/%s", strcmp(l, "/") == 0 ? "" : l, tab + 1);
      if (!made_by_crun(cfg, l, tab + 1) && !bound_socket_file(init, path))
        rc = crest_error_make(err, ENOTSUP,
                              "container `%s`: checkpoint: %s%s%s is in the tmpfs its config "
                              "mounts on %s, which a restore mounts new and empty: it would be "
                              "lost",
                              id, l, strcmp(l, "/") == 0 ? "" : "/", tab + 1, l);
    }
  return rc;
}

/* ---- the container's own network namespace ---- */

/* What /proc/<task>/net shows of a network namespace's interfaces,
   addresses and routes, one line each, counters left out: interface
   names (dev), IPv6 addresses (if_inet6), IPv4 and IPv6 routes without
   their reference and use counts, the IPv4 addresses and routes of the
   FIB (fib_trie: each leaf as "TABLE address ADDR/LEN SCOPE TYPE"). DIR is /proc/<pid>/net or
   /proc/self/net. */
static char *
net_view(const char *dir)
{
  static const char *const files[] = { "dev", "if_inet6", "route", "ipv6_route", "fib_trie" };
  char *out = NULL, table[32] = "", leaf[64] = "";
  size_t len = 0;
  FILE *m = open_memstream(&out, &len);
  for (size_t f = 0; f < ARRAY_SIZE(files); f++)
    {
      cleanup_free char *path = xasprintf("%s/%s", dir, files[f]), *text = NULL;
      crest_error_t e = NULL;
      char *save = NULL;
      int n = 0;
      if (read_file(path, &text, NULL, 1u << 20, &e) < 0)
        {
          crest_error_release(&e);
          continue;
        }
      for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save), n++)
        {
          char *w[16];
          int k = 0;
          if (f == 0) /* dev: two header lines, then "NAME: counters" */
            {
              if (n >= 2)
                fprintf(m, "dev %.*s\n", (int)strcspn(l + strspn(l, " "), ":"), l + strspn(l, " "));
              continue;
            }
          if (f == 4) /* fib_trie: "TABLE:", "|-- ADDR", "/LEN SCOPE TYPE" */
            {
              char *t = l + strspn(l, " |-+");
              if (l[0] != ' ')
                snprintf(table, sizeof table, "%.*s", (int)strcspn(l, ":"), l);
              else if (strncmp(l + strspn(l, " "), "|-- ", 4) == 0)
                snprintf(leaf, sizeof leaf, "%s", t);
              else if (*t == '/')
                fprintf(m, "%s address %s%s\n", table, leaf, t);
              continue;
            }
          char *wsave = NULL;
          for (char *t = strtok_r(l, " \t", &wsave); t && k < 16; t = strtok_r(NULL, " \t", &wsave))
            w[k++] = t;
          fprintf(m, "%s", files[f]);
          for (int i = 0; i < k; i++)
            /* route: RefCnt, Use (4, 5); ipv6_route: refcnt, use (6, 7) */
            if (!(f == 2 && (i == 4 || i == 5)) && !(f == 3 && (i == 6 || i == 7)))
              fprintf(m, " %s", w[i]);
          fputc('\n', m);
        }
    }
  fclose(m);
  return out;
}

/* net_view of a network namespace as crun makes it (new, lo up), made in
   a child in user and network namespaces of its own; NULL when that
   cannot be done here. */
static int
fresh_net_body(int fd, void *arg)
{
  struct ifreq ifr;
  int s;
  char *v;
  (void)arg;
  memset(&ifr, 0, sizeof ifr);
  snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
  if (unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0 || (s = socket(AF_INET, SOCK_DGRAM, 0)) < 0
      || ioctl(s, SIOCGIFFLAGS, &ifr) < 0
      || (ifr.ifr_flags |= IFF_UP, ioctl(s, SIOCSIFFLAGS, &ifr)) < 0
      || !(v = net_view("/proc/self/net")))
    return -1;
  return write(fd, v, strlen(v)) < 0 ? -1 : 0;
}

static char *
fresh_net_view(void)
{
  return child_run(fresh_net_body, NULL);
}

/* The first line of A that B lacks, or NULL. */
static char *
first_missing(const char *a, const char *b)
{
  for (const char *l = a; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] == '\n'))
    {
      size_t n = strcspn(l, "\n");
      bool found = false;
      for (const char *q = b; *q && !found; q += strcspn(q, "\n") + (q[strcspn(q, "\n")] == '\n'))
        found = strcspn(q, "\n") == n && strncmp(q, l, n) == 0;
      if (!found)
        return xasprintf("%.*s", (int)n, l);
    }
  return NULL;
}

/* A network namespace crun makes new for the container (no path in the
   config) is made again new at restore, with lo up and nothing else: an
   interface, address or route the container's tasks added (with
   CAP_NET_ADMIN in its user namespace), or lo taken down, would be lost.
   Refused in one line, the first difference named. Not checked where the
   config sets net.* sysctls (a new namespace with them is not made here
   to compare). */
static int
check_netns(const char *id, pid_t init, yajl_val cfg, crest_error_t *err)
{
  yajl_val lx = crest_config_member(cfg, "linux");
  yajl_val sys = lx ? crest_config_member(lx, "sysctl") : NULL;
  bool fresh = has_namespace(cfg, "network");
  for (size_t i = 0; sys && YAJL_IS_OBJECT(sys) && i < sys->u.object.len; i++)
    fresh &= strncmp(sys->u.object.keys[i], "net.", 4) != 0;
  if (!fresh)
    return 0;
  cleanup_free char *dir = xasprintf("/proc/%d/net", (int)init);
  cleanup_free char *now = net_view(dir), *ref = fresh_net_view();
  cleanup_free char *extra = now && ref ? first_missing(now, ref) : NULL;
  cleanup_free char *gone = now && ref && !extra ? first_missing(ref, now) : NULL;
  if (extra || gone)
    return crest_error_make(
        err, ENOTSUP,
        "container `%s`: checkpoint: its network namespace %s [%s] (/proc/net), "
        "where a new one with lo up, which a restore has crun make, %s: it "
        "would be lost",
        id, extra ? "shows" : "lacks", extra ? extra : gone, extra ? "does not" : "does");
  return 0;
}

/* What the container changed of what its config has crun make (mounts,
   tmpfs files, its network namespace, its namespaces' sysctls): refused
   before the dump. */
static int
check_own_state(const char *id, pid_t init, const char *config_text, const char *bundle,
                crest_error_t *err)
{
  yajl_val cfg = NULL;
  int rc;
  if (crest_config_parse(config_text, &cfg, err) < 0)
    return crest_error_wrap(err, "container `%s`: checkpoint: its config", id);
  rc = check_mounts(id, init, cfg, bundle, err) < 0 || check_tmpfs_files(id, init, cfg, err) < 0
               || check_netns(id, init, cfg, err) < 0
               || crest_check_ns_sysctls(id, init, cfg, has_namespace(cfg, "network"),
                                         has_namespace(cfg, "ipc"), err)
                      < 0
           ? -1
           : 0;
  yajl_tree_free(cfg);
  return rc;
}

/* What engines look for in a checkpoint directory (stats-dump,
   inventory.img), and what --export needs. The image itself is complete
   already: a failure here is a warning. */
static void
finish_info(const char *id, const char *image, const char *work, struct crest_checkpoint_info *info,
            const struct freezer *fz, uint64_t t0)
{
  crest_error_t e = NULL;
  info->dump_us = now_us() - t0;
  info->freezing_us = fz->freezing_us;
  info->frozen_us = info->dump_us;
  info->pages_written = crest_image_pages(image);
  clock_gettime(CLOCK_REALTIME, &info->checkpointed);
  if (crest_image_write_engine_files(image, info, &e) < 0)
    {
      cleanup_free char *why = crest_error_text(e);
      crest_warn("container `%s`: checkpoint: stats-dump/inventory.img not written: %s", id, why);
      crest_error_release(&e);
    }
  /* podman reads it from the work path (its --print-stats). */
  if (work && strcmp(work, image) != 0 && crest_write_stats_dump(work, info, &e) < 0)
    {
      cleanup_free char *why = crest_error_text(e);
      crest_warn("container `%s`: checkpoint: stats-dump not written in --work-path: %s", id, why);
      crest_error_release(&e);
    }
}

int
crest_container_checkpoint(struct crest_global *g, const char *id,
                           const struct crest_container_checkpoint_opts *opts, crest_error_t *err)
{
  cleanup_free char *image = NULL, *config_text = NULL, *status = NULL;
  cleanup_free char *work = NULL;
  struct crest_checkpoint_info own, *info = opts->info ? opts->info : &own;
  struct crest_state st;
  struct crest_dump_opts d;
  struct freezer fz = { NULL, false, 0, -1 };
  struct crest_global hooked;
  char digest[65];
  size_t config_len = 0;
  pid_t init = 0;
  uint64_t t0;
  bool paused;
  int r;

  memset(info, 0, sizeof *info);
  if (crest_validate_id(id, err) < 0)
    return -1;
  image = abs_path(opts->image_path ? opts->image_path : "checkpoint");
  if (!image)
    return crest_error_errno(err, "container `%s`: getcwd", id);
  if (opts->work_path && !(work = abs_path(opts->work_path)))
    return crest_error_errno(err, "container `%s`: getcwd", id);
  r = crest_state_read(g, id, &st, err);
  if (r < 0)
    return -1;
  if (r == 0)
    return crest_error_make(
        err, ENOENT,
        "container `%s`: checkpoint: crest knows no such container (it checkpoints "
        "containers started with `crest create` or `crest run`, or recorded by "
        "crest-oci-hook)",
        id);
  g = crest_under_crun_root(g, st.crun_root, &hooked);
  if (crun_state(g, id, &init, &status, &info->created, err) < 0)
    goto fail_state;
  info->bundle = xstrdup(st.bundle);
  /* A paused container (CRI-O pauses before it checkpoints) is
     checkpointed through its cgroup's freezer, and stays paused. */
  paused = strcmp(status, "paused") == 0;
  if (!paused && strcmp(status, "running") != 0)
    {
      crest_error_make(err, 0, "container `%s`: checkpoint: the container is %s, not running", id,
                       status);
      goto fail_state;
    }
  if (!opts->file_locks && !opts->pre_dump && check_file_locks(id, init, err) < 0)
    goto fail_state;
  if (read_file(st.config, &config_text, &config_len, 16u << 20, err) < 0)
    {
      crest_error_wrap(err, "container `%s`: checkpoint: read its config", id);
      goto fail_state;
    }
  sha256_hex_of(config_text, config_len, digest);

  if (check_own_state(id, init, config_text, st.bundle, err) < 0)
    goto fail_state;
  memset(&d, 0, sizeof d);
  if (seccomp_filters_of(id, config_text, &d.seccomp_filters, &d.no_keyctl, &d.no_modify_ldt, err)
      < 0)
    goto fail_state;
  /* Part of the image like the engine's files, written before the commit:
     a failure to write it fails the dump, with the tree untouched. */
  struct crest_image_file cfg_file = { IMAGE_CONFIG, config_text, config_len };
  d.extra_files = &cfg_file;
  d.n_extra_files = 1;
  d.image_dir = image;
  d.work_dir = work;
  d.leave_running = opts->leave_running;
  d.ext_unix_sk = opts->ext_unix_sk;
  d.tcp_mode = opts->tcp_mode;
  d.skip_in_flight = opts->skip_in_flight;
  d.pre_dump = opts->pre_dump;
  d.parent_path = opts->parent_path;
  d.root_is_ns_init = true;
  d.label_of_init = true;
  d.config_digest = digest;
  d.no_chroot_cap = no_chroot_cap(config_text);
  d.no_setid_cap = no_setid_cap(config_text);
  d.no_chown_cap = no_chown_cap(config_text);
  if (freezer_setup(init, &fz))
    {
      d.freeze = cg_freeze;
      d.freeze_data = &fz;
      d.cgroup_path = fz.dir;
    }
  /* Paused, but not through a cgroup crest may thaw and freeze again: its
     tasks would never run what the dump injects. */
  if (paused && !fz.was_frozen)
    {
      crest_error_make(err, 0,
                       "container `%s`: checkpoint: the container is paused, but not through a "
                       "cgroup of its own that crest may thaw (`crest resume` it first)",
                       id);
      goto fail_state;
    }
  crest_debug("container `%s`: dumping init PID %d into `%s`%s", id, (int)init, image,
              fz.dir ? " (frozen through its cgroup)" : "");
  t0 = now_us();
  if (crest_engine_dump(init, &d, err) < 0)
    {
      crest_error_wrap(err, "container `%s`: checkpoint", id);
      goto fail_state;
    }
  finish_info(id, image, work, info, &fz, t0);

  if (!opts->leave_running && !opts->pre_dump)
    {
      /* The engine killed the tree; crun forgets the container, crest too. */
      char *args[] = { (char *)"--force", (char *)id, NULL };
      int s = run_crun_quiet(g, "delete", args);
      if (s != 0 && crest_crun_has(g, NULL, id))
        crest_warn("container `%s`: checkpointed, but `crun delete` failed with status %d", id, s);
      crest_state_remove(g, id, NULL);
    }
  free(fz.dir);
  crest_crun_root_release(g, &hooked);
  crest_state_free(&st);
  if (info == &own)
    crest_checkpoint_info_free(&own);
  return 0;

fail_state:
  free(fz.dir);
  crest_crun_root_release(g, &hooked);
  crest_state_free(&st);
  crest_checkpoint_info_free(info);
  return -1;
}

/* ---- the restore config ---- */

/* Does the config mount a tmpfs on /dev (crun's default)? */
static bool
has_dev_tmpfs(yajl_val mounts)
{
  size_t i;
  if (!mounts || !YAJL_IS_ARRAY(mounts))
    return false;
  for (i = 0; i < mounts->u.array.len; i++)
    {
      yajl_val m = mounts->u.array.values[i], d = crest_config_member(m, "destination"),
               t = crest_config_member(m, "type");
      if (d && t && YAJL_IS_STRING(d) && YAJL_IS_STRING(t) && strcmp((d)->u.string, "/dev") == 0
          && strcmp((t)->u.string, "tmpfs") == 0)
        return true;
    }
  return false;
}

/* The checkpointed config with the restorer as its process (its args: the
   restorer and the image, both bind-mounted read-only) and
   CAP_CHECKPOINT_RESTORE granted as `--cap-checkpoint-restore=add` grants it
   (oci-config.c): the checkpointed capabilities plus that one, which each
   restored task drops again unless it held it. */
/* A container's host and domain names at checkpoint (the engine's
   uts.json), when the image has them. */
struct image_uts
{
  bool has;
  char node[65], dom[65];
};

static int
restore_config_with(yajl_val config, const char *restorer, const char *image,
                    const struct image_uts *uts, char *const *chain, int nchain,
                    struct crest_seccomp_bpf *late, char **out, size_t *len, crest_error_t *err);
/* *LATE: the program of a profile the restorer installs itself
   (late_seccomp; prog NULL for none), which crun's state gets once the
   restorer runs (settle_crun_state). */
static int
make_restore_config(yajl_val config, const char *restorer, const char *image,
                    const struct image_uts *uts, struct crest_seccomp_bpf *late, char **out,
                    size_t *len, crest_error_t *err)
{
  char **chain = NULL;
  int nchain = 0, rc;
  if (crest_engine_image_chain(image, &chain, &nchain, err) < 0)
    return -1;
  rc = restore_config_with(config, restorer, image, uts, chain, nchain, late, out, len, err);
  for (int k = 0; k < nchain; k++)
    free(chain[k]);
  free(chain);
  return rc;
}

static int
restore_config_with(yajl_val config, const char *restorer, const char *image,
                    const struct image_uts *uts, char *const *chain, int nchain,
                    struct crest_seccomp_bpf *late, char **out, size_t *len, crest_error_t *err)
{
  bool in_dev = has_dev_tmpfs(crest_config_member(config, "mounts"));
  const char *in_restorer = in_dev ? IN_DEV_RESTORER : IN_ROOT_RESTORER;
  const char *in_image = in_dev ? IN_DEV_IMAGE : IN_ROOT_IMAGE;
  /* The restored tasks get CAP_CHECKPOINT_RESTORE only if the
     configuration gives it (docs/engine.md, "Capabilities from the image"). */
  bool cr = crest_config_process_holds_cap(config, "CAP_CHECKPOINT_RESTORE") == 1;
  /* CAP_SETPCAP too (each task drops CAP_CHECKPOINT_RESTORE from its
     bounding set with it): the restorer is told when the configuration
     does not give it, so that no task keeps it. */
  bool setpcap = crest_config_root_holds_cap(config, "CAP_SETPCAP") == 1;
  const char *granted = cr ? (setpcap ? "cr-granted=1" : "cr-granted=1,setpcap-added")
                           : (setpcap ? "cr-granted=0" : "cr-granted=0,setpcap-added");
  /* The image's parent images (pre-dumps) are bind-mounted beside it, and
     named to the restorer after its other arguments. */
  const char *args[4 + CREST_IMAGE_CHAIN_MAX + 1] = { in_restorer, in_image, granted, NULL };
  struct crest_config_bind binds[2 + CREST_IMAGE_CHAIN_MAX]
      = { { restorer, in_restorer }, { image, in_image } };
  char in_chain[CREST_IMAGE_CHAIN_MAX][64];
  /* A profile the restore cannot run under: crun starts the restorer
     without it, and the restorer installs the program given here in every
     task (late_seccomp). */
  int is_late = late_seccomp(config, late, err);
  cleanup_free char *seccomp_arg = is_late > 0 ? crest_seccomp_arg(late) : NULL;
  int a0 = is_late > 0 ? 4 : 3;
  if (is_late < 0)
    return -1;
  if (seccomp_arg)
    args[3] = seccomp_arg;
  for (int k = 0; k < nchain && k < CREST_IMAGE_CHAIN_MAX; k++)
    {
      snprintf(in_chain[k], sizeof in_chain[k], "%s-parent-%d", in_image, k + 1);
      args[a0 + k] = in_chain[k];
      binds[2 + k] = (struct crest_config_bind){ chain[k], in_chain[k] };
    }
  /* Test knobs for the restorer, passed on (one: the config edit adds one
     variable): the pause, else a restore fault (CREST_FAULT=restore-...). */
  const char *pause_ms = crest_test_knob("CREST_RESTORER_PAUSE_MS");
  const char *fault = crest_test_knob("CREST_FAULT");
  cleanup_free char *knob = pause_ms ? xasprintf("CREST_RESTORER_PAUSE_MS=%s", pause_ms)
                            : fault && strncmp(fault, "restore-", 8) == 0
                                ? xasprintf("CREST_FAULT=%s", fault)
                                : NULL;
  struct crest_config_edit e = { .grant = CREST_GRANT_ADD,
                                 .args = args,
                                 .env_add = knob,
                                 .binds = binds,
                                 .nbinds = 2 + (size_t)nchain,
                                 .drop_seccomp = is_late > 0,
                                 .add_setpcap = true };
  /* The names the container had (uts.json), where it has a UTS namespace
     of its own: crun gives them to the new one. */
  if (uts && uts->has && has_namespace(config, "uts"))
    e.hostname = uts->node, e.domainname = uts->dom;
  /* A process user other than the container's root: the restorer runs as
     its root (it reads the image, crest's user's), and gives every task
     its own IDs at the end (docs/restore.md). */
  {
    long uid, gid;
    crest_config_process_user(config, &uid, &gid);
    e.as_root = uid != 0 || gid != 0;
  }
  yajl_val process = crest_config_member(config, "process");

  if (!process || !YAJL_IS_OBJECT(process))
    return crest_error_make(err, EINVAL, "the checkpointed config has no process object");
  if (crest_config_edit(config, &e, out, len, err) < 0)
    return crest_error_wrap(err, "write the restore config");
  return 0;
}

/* The static restorer: $CREST_RESTORER, else beside crest as installed
   (BINDIR/../libexec/crest/), else in the build tree (runtime/restorer/). */
static char *
find_restorer(void)
{
  const char *env = getenv("CREST_RESTORER");
  char exe[PATH_MAX], *slash;
  ssize_t n;
  static const char *const rel[]
      = { "../libexec/crest/crest-restorer", "../restorer/crest-restorer" };

  if (env && *env)
    return xstrdup(env);
  n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0)
    return NULL;
  exe[n] = '\0';
  slash = strrchr(exe, '/');
  if (!slash)
    return NULL;
  *slash = '\0';
  for (size_t i = 0; i < ARRAY_SIZE(rel); i++)
    {
      char *p = xasprintf("%s/%s", exe, rel[i]), real[PATH_MAX];
      if (access(p, X_OK) == 0 && realpath(p, real))
        {
          free(p);
          return xstrdup(real);
        }
      free(p);
    }
  return NULL;
}

static bool
pid_alive(pid_t pid)
{
  char path[64], *text = NULL, *s;
  crest_error_t e = NULL;
  bool alive;
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  if (read_file(path, &text, NULL, 4096, &e) < 0)
    {
      crest_error_release(&e);
      return false;
    }
  s = strrchr(text, ')');
  alive = s && s[1] == ' ' && s[2] != 'Z' && s[2] != 'X';
  free(text);
  return alive;
}

static pid_t
read_pid_file(const char *path)
{
  char *text = NULL;
  crest_error_t e = NULL;
  long v;
  if (read_file(path, &text, NULL, 64, &e) < 0)
    {
      crest_error_release(&e);
      return 0;
    }
  v = strtol(text, NULL, 10);
  free(text);
  return v > 0 && v < INT_MAX ? (pid_t)v : 0;
}

/* A request of the restorer's engine (sk-tcp.c): "T" and TCP_REPAIR's
   value as a digit ('2': off without a window probe), with the socket
   (RFD). crest, the owner of the container's user namespace, holds
   CAP_NET_ADMIN over its network namespace, which a stock kernel wants
   for repair mode; the restorer, inside, does not. Answered with "t" and
   the errno (0: done). */
static void
repair_for_restorer(int fd, const char *req, ssize_t len, int rfd)
{
  int on = req[1] == '1' ? TCP_REPAIR_ON : req[1] == '2' ? TCP_REPAIR_OFF_NO_WP : TCP_REPAIR_OFF;
  char ans[16];
  int e = 0;
  if (len >= 3 && len < 16 && (req[1] == 'S' || req[1] == 'R') && rfd >= 0)
    {
      /* "TS<N>", "TR<N>": the socket's send or receive buffer forced to
         N (doubled by the kernel) to hold its queue, past the sysctl
         maximum, which CAP_NET_ADMIN allows (sk-tcp.c, set_buf). */
      char num[16];
      int v;
      memcpy(num, req + 2, (size_t)len - 2);
      num[len - 2] = 0;
      v = atoi(num);
      if (v <= 0
          || setsockopt(rfd, SOL_SOCKET, req[1] == 'S' ? SO_SNDBUFFORCE : SO_RCVBUFFORCE, &v,
                        sizeof v)
                 < 0)
        e = v <= 0 ? EINVAL : errno;
      crest_debug("restore: %s of the restorer's socket forced to %d: %s",
                  req[1] == 'S' ? "SO_SNDBUF" : "SO_RCVBUF", v, e ? strerror(e) : "done");
    }
  else if (len != 2 || rfd < 0)
    e = EPROTO;
  else if (setsockopt(rfd, SOL_TCP, TCP_REPAIR, &on, sizeof on) < 0)
    e = errno;
  if (req[1] != 'S' && req[1] != 'R')
    crest_debug("restore: TCP repair mode %d on the restorer's socket: %s", on,
                e ? strerror(e) : "done");
  snprintf(ans, sizeof ans, "t%d", e);
  if (send(fd, ans, strlen(ans), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
    crest_debug("restore: answer the restorer: %s", strerror(errno));
}

/* Append what the restorer wrote on the sync channel to MSG, serving its
   requests for repair mode on the way. */
static void
drain(int fd, char *msg, size_t cap)
{
  size_t used = strlen(msg);
  for (;;)
    {
      union
      {
        struct cmsghdr h;
        char buf[CMSG_SPACE(4 * sizeof(int))];
      } u;
      struct iovec iov;
      struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
      struct cmsghdr *c;
      int rfd = -1;
      ssize_t r;
      if (used + 1 >= cap)
        break;
      iov = (struct iovec){ msg + used, cap - used - 1 };
      m.msg_control = u.buf, m.msg_controllen = sizeof u.buf;
      r = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
      if (r <= 0)
        break;
      for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
          for (size_t k = 0; k < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); k++)
            {
              int x;
              memcpy(&x, CMSG_DATA(c) + k * sizeof(int), sizeof x);
              if (rfd < 0)
                rfd = x;
              else
                close(x);
            }
      if (msg[used] == 'T' && rfd >= 0)
        {
          repair_for_restorer(fd, msg + used, r, rfd);
          close(rfd);
          msg[used] = '\0';
          continue;
        }
      if (rfd >= 0)
        close(rfd);
      used += (size_t)r;
      msg[used] = '\0';
    }
}

/* Undo a restore: no task, no crun container, no crest state. */
static void
undo_restore(struct crest_global *g, const char *id)
{
  char *kargs[] = { (char *)id, (char *)"KILL", NULL };
  char *dargs[] = { (char *)"--force", (char *)id, NULL };
  run_crun_quiet(g, "kill", kargs);
  run_crun_quiet(g, "delete", dargs);
  crest_state_remove(g, id, NULL);
}

/* Is the LSM of an --lsm-profile TYPE:VALUE active here? */
static bool
lsm_active(const char *type)
{
  cleanup_free char *text = NULL;
  crest_error_t e = NULL;
  bool on = false;
  if (strcmp(type, "selinux") == 0)
    return access("/sys/fs/selinux/enforce", F_OK) == 0;
  if (strcmp(type, "apparmor") == 0
      && read_file("/sys/module/apparmor/parameters/enabled", &text, NULL, 64, &e) == 0)
    on = text[0] == 'Y';
  crest_error_release(&e);
  return on;
}

/* podman passes the profile and mount label the container had, which the
   checkpointed config carries and crun applies to the restoring container:
   the same value is that; any other is refused, as is one for an LSM that
   is not active here. */
static int
check_lsm(const char *id, yajl_val config, const struct crest_container_restore_opts *opts,
          crest_error_t *err)
{
  const char *prof = opts->lsm_profile, *colon;
  const char *ap[] = { "process", "apparmorProfile", NULL },
             *sp[] = { "process", "selinuxLabel", NULL };
  const char *mp[] = { "linux", "mountLabel", NULL };
  const char *have;

  if (prof && *prof)
    {
      char type[16];
      colon = strchr(prof, ':');
      if (!colon || colon - prof >= (ptrdiff_t)sizeof type)
        return crest_error_make(err, EINVAL,
                                "container `%s`: restore: --lsm-profile `%s`: expected "
                                "apparmor:PROFILE or selinux:LABEL",
                                id, prof);
      snprintf(type, sizeof type, "%.*s", (int)(colon - prof), prof);
      if (strcmp(type, "apparmor") != 0 && strcmp(type, "selinux") != 0)
        return crest_error_make(err, EINVAL,
                                "container `%s`: restore: --lsm-profile `%s`: unknown LSM `%s`", id,
                                prof, type);
      if (!lsm_active(type))
        return crest_error_make(err, ENOTSUP,
                                "container `%s`: restore: --lsm-profile `%s`: %s is not active on "
                                "this machine",
                                id, prof, type);
      have = crest_config_get_string(config, strcmp(type, "apparmor") == 0 ? ap : sp);
      if (!have || strcmp(have, colon + 1) != 0)
        return crest_error_make(err, ENOTSUP,
                                "container `%s`: restore: --lsm-profile `%s` differs from the "
                                "checkpointed config's (`%s`), the only one crest applies",
                                id, prof, have ? have : "none");
    }
  if (opts->lsm_mount_context && *opts->lsm_mount_context)
    {
      have = crest_config_get_string(config, mp);
      if (!have || strcmp(have, opts->lsm_mount_context) != 0)
        return crest_error_make(err, ENOTSUP,
                                "container `%s`: restore: --lsm-mount-context `%s` differs from "
                                "the checkpointed config's linux.mountLabel (`%s`), the only one "
                                "crest applies",
                                id, opts->lsm_mount_context, have ? have : "none");
    }
  return 0;
}

/* What crest or crun would refuse later, refused before anything exists. */
static int
check_restore_config(const char *id, yajl_val config,
                     const struct crest_container_restore_opts *opts, crest_error_t *err)
{
  const char *lp[] = { "linux", "seccomp", "listenerPath", NULL };
  const char *tp[] = { "process", "terminal", NULL };
  yajl_val t = yajl_tree_get(config, tp, yajl_t_any);

  if (crest_config_get_string(config, lp))
    return crest_error_make(err, ENOTSUP,
                            "container `%s`: restore: the config's linux.seccomp has a "
                            "listenerPath (seccomp notifications answered outside the "
                            "container): not restorable",
                            id);
  if (t && YAJL_IS_TRUE(t) && opts->detach && !opts->console_socket)
    return crest_error_make(err, EINVAL,
                            "container `%s`: restore: the checkpointed config has "
                            "process.terminal: --detach needs --console-socket for the new "
                            "terminal",
                            id);
  return check_lsm(id, config, opts, err);
}

/* The image is whole (opened and checked once, here), and its container
   config, read through the image reader, fit for this restore: *CONFIG
   (parsed from *CONFIG_TEXT; *CONFIG_PATH names it in messages). */
static int
load_image_config(const char *id, const char *image,
                  const struct crest_container_restore_opts *opts, char **config_path,
                  char **config_text, size_t *config_len, yajl_val *config, struct image_uts *uts,
                  crest_error_t *err)
{
  struct img_reader *rd = NULL;
  int r;

  if (crest_engine_check_image_open(image, &rd, err) < 0)
    return crest_error_wrap(err, "container `%s`: restore", id);
  *config_path = xasprintf("%s/%s", image, IMAGE_CONFIG);
  if (!img_reader_find(rd, IMAGE_CONFIG))
    {
      img_reader_free(rd);
      return crest_error_make(err, ENOENT,
                              "container `%s`: restore: the image holds no container config "
                              "in its manifest (was it made with `crest checkpoint --pid`, or "
                              "by an older crest?)",
                              id);
    }
  r = img_reader_read(rd, IMAGE_CONFIG, 16u << 20, config_text, config_len, err);
  memset(uts, 0, sizeof *uts);
  if (r == 0 && img_reader_find(rd, "uts.json"))
    {
      cleanup_free char *text = NULL;
      size_t tl = 0;
      yajl_val u = NULL, node, dom;
      r = img_reader_read(rd, "uts.json", 4096, &text, &tl, err);
      if (r == 0 && (r = crest_config_parse(text, &u, err)) == 0)
        {
          node = crest_config_member(u, "nodename"), dom = crest_config_member(u, "domainname");
          uts->has = node && YAJL_IS_STRING(node) && dom && YAJL_IS_STRING(dom)
                     && strlen(node->u.string) < sizeof uts->node
                     && strlen(dom->u.string) < sizeof uts->dom;
          if (uts->has)
            strcpy(uts->node, node->u.string), strcpy(uts->dom, dom->u.string);
        }
      if (u)
        yajl_tree_free(u);
    }
  img_reader_free(rd);
  if (r < 0)
    return crest_error_wrap(err, "container `%s`: restore", id);
  if (crest_config_parse(*config_text, config, err) < 0)
    return crest_error_wrap(err, "container `%s`: restore: `%s`", id, *config_path);
  if (check_restore_config(id, *config, opts, err) < 0)
    {
      yajl_tree_free(*config);
      *config = NULL;
      return -1;
    }
  return 0;
}

/* `crun run` of the restore config; SYNC_W its end of the restorer's pipe,
 *CRUN_ERR (made here when detached with a terminal) its stderr. */
static pid_t
spawn_crun(struct crest_global *g, const char *id, const struct crest_container_restore_opts *opts,
           char *bundle, const char *restore_config, const char *pid_file, int sync_w,
           int *crun_err, crest_error_t *err)
{
  cleanup_free char *console_arg = NULL;
  char *args[16];
  int n = 0;
  cleanup_free char *config_arg = xasprintf("--config=%s", restore_config);
  cleanup_free char *pid_arg = xasprintf("--pid-file=%s", pid_file);
  args[n++] = config_arg;
  args[n++] = (char *)"--bundle";
  args[n++] = bundle;
  args[n++] = pid_arg;
  args[n++] = (char *)"--preserve-fds=1";
  if (opts->console_socket)
    {
      console_arg = xasprintf("--console-socket=%s", opts->console_socket);
      args[n++] = console_arg;
    }
  if (opts->detach)
    args[n++] = (char *)"--detach";
  if (opts->no_pivot)
    args[n++] = (char *)"--no-pivot";
  if (opts->no_new_keyring)
    args[n++] = (char *)"--no-new-keyring";
  args[n++] = (char *)id;
  args[n] = NULL;
  /* Detached with a terminal, the container's stdio is the pty and crun
     exits once it runs, so crun's stderr is crun's alone: keep it, and
     say why crun failed in the one line (a console socket nobody
     listens on, say). */
  if (opts->console_socket && opts->detach)
    *crun_err = memfd_create("crun-stderr", MFD_CLOEXEC);
  struct crest_crun_fds fds = { sync_w, -1, *crun_err };
  return crest_crun_spawn(g, "run", args, &fds, err);
}

/* crun keeps in its state directory (CRUN_ROOT/ID) what `crun exec`
   starts a process with: config.json, a copy of the config crun ran the
   container with (capabilities, user, env, linux.seccomp's flags of the
   exec'd process), and seccomp.bpf, the program crun compiled from its
   linux.seccomp, which crun exec installs as it is (no filter without the
   file: it never compiles the profile again). A restore leaves the restore
   config's there: CAP_CHECKPOINT_RESTORE in every set, the restorer as
   process.args, and no seccomp.bpf where the restorer installs the profile
   itself (late_seccomp). So as soon as the restorer runs (crun wrote both
   before it started it) they become the container's own: CONFIG, the
   config a fresh `crest run` would have given crun (the bundle's or the
   checkpointed one, with its grant), and LATE's program (crest compiled
   it as crun does) as seccomp.bpf; crun made the file itself from the
   config's linux.seccomp otherwise. An exec'd process then gets what it
   gets in a fresh container (docs/restore.md, step 5). */
struct crun_settle
{
  const char *dir;                      /* crun's state directory of the container */
  const char *config;                   /* the container's config text */
  size_t config_len;                    /* its length */
  const struct crest_seccomp_bpf *late; /* the late profile's program, or prog NULL */
};

/* Each file whole or not at all (a temporary file renamed over crun's,
   with crun's mode), the filter first: crest killed between the two
   leaves the restore config's capabilities with the container's filter,
   never its own capabilities without the filter. */
static int
settle_crun_state(const struct crun_settle *s, crest_error_t *err)
{
  cleanup_free char *config = xasprintf("%s/config.json", s->dir);
  cleanup_free char *bpf = xasprintf("%s/seccomp.bpf", s->dir);
  struct stat sb;
  if (stat(config, &sb) < 0)
    return crest_error_errno(err, "stat `%s`", config);
  if (s->late && s->late->prog
      && write_file_atomic(bpf, s->late->prog, s->late->len, sb.st_mode & 07777, err) < 0)
    return -1;
  /* Test build: the config's rename fails, after the filter's. */
  if (crest_fault_at("restore-crun-state"))
    return crest_error_make(err, EIO, "rename over `%s`: test fault restore-crun-state", config);
  return write_file_atomic(config, s->config, s->config_len, sb.st_mode & 07777, err);
}

/* What restore_watch follows and finds. */
struct restore_watch
{
  int sync_r;           /* the restorer's pipe */
  pid_t crun;           /* crun run */
  int crun_err;         /* crun's stderr, or -1 */
  const char *pid_file; /* where crun writes the init's PID */
  bool detach;
  const struct crun_settle *settle; /* crun's state, once the restorer runs */
  char msg[2048];                   /* out: why it failed */
  int status;                       /* out: crun's status, once crun_done */
  bool crun_done;                   /* out */
  pid_t init;                       /* out: the container's init, once known */
  bool restored;                    /* out: the init runs the restored tree */
};

/* What restore_watch waits on, all in one poll: the restorer's pipe,
   crun's exit and the init's (pidfds), and the pid file crun writes (an
   inotify watch of its directory, until the init is known). Where a pidfd
   or the watch cannot be had, the wait looks every 10 ms. */
struct watch_fds
{
  int crun, init, ino;
};

static void
watch_open(struct watch_fds *f, const struct restore_watch *w)
{
  cleanup_free char *dir = xstrdup(w->pid_file);
  char *slash = strrchr(dir, '/');
  f->crun = syscall(SYS_pidfd_open, w->crun, 0);
  f->init = -1;
  if (slash)
    *slash = 0;
  f->ino = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (f->ino >= 0
      && inotify_add_watch(f->ino, slash ? (*dir ? dir : "/") : ".",
                           IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE)
             < 0)
    {
      close(f->ino);
      f->ino = -1;
    }
}

static void
watch_wait(struct watch_fds *f, const struct restore_watch *w)
{
  struct pollfd set[4];
  nfds_t n = 0;
  bool blind = false;
  char buf[4096];

  set[n++] = (struct pollfd){ w->sync_r, POLLIN, 0 };
  if (!w->crun_done)
    {
      if (f->crun >= 0)
        set[n++] = (struct pollfd){ f->crun, POLLIN, 0 };
      else
        blind = true;
    }
  if (w->init && f->init < 0 && f->ino != -2)
    f->init = syscall(SYS_pidfd_open, w->init, 0);
  if (w->init && f->ino >= 0)
    close(f->ino), f->ino = -2;
  if (w->init)
    {
      if (f->init >= 0)
        set[n++] = (struct pollfd){ f->init, POLLIN, 0 };
      else
        blind = true;
    }
  else if (f->ino >= 0)
    set[n++] = (struct pollfd){ f->ino, POLLIN, 0 };
  else
    blind = true;
  poll(set, n, blind ? 10 : 1000);
  while (f->ino >= 0 && read(f->ino, buf, sizeof buf) > 0)
    ;
}

static void
watch_close(struct watch_fds *f)
{
  if (f->crun >= 0)
    close(f->crun);
  if (f->init >= 0)
    close(f->init);
  if (f->ino >= 0)
    close(f->ino);
}

/* crun's state made the container's (settle_crun_state) as the restorer
   starts, before any `crun exec` can find the restored tree; a failure
   fails the restore, with its reason in W's msg. */
static bool
settle_failed(struct restore_watch *w)
{
  crest_error_t e = NULL;
  if (settle_crun_state(w->settle, &e) == 0)
    return false;
  cleanup_free char *why = crest_error_text(e);
  snprintf(w->msg, sizeof w->msg, "give crun's state the container's config: %s", why);
  crest_error_release(&e);
  return true;
}

/* Watch the restorer's messages and crun itself, until the restored tree
   runs or the restore failed. */
static void
restore_watch(struct restore_watch *w)
{
  bool started = false;
  time_t deadline = time(NULL) + RESTORE_TIMEOUT_S;
  struct watch_fds f;
  watch_open(&f, w);
  for (;;)
    {
      int r;

      drain(w->sync_r, w->msg, sizeof w->msg);
      if (!started && strncmp(w->msg, "R\n", 2) == 0)
        {
          /* The restorer runs: before this, the init PID crun reported may
             still be one of crun's own processes, with crun's names. */
          started = true;
          memmove(w->msg, w->msg + 2, strlen(w->msg + 2) + 1);
          if (settle_failed(w))
            break;
        }
      /* "D": the engine's tracer saw every task run restored. Nothing
         earlier says so: the init takes its own name and descriptors
         while the tree is still being finished, and may yet fail. */
      if (started && strncmp(w->msg, "D\n", 2) == 0)
        {
          w->restored = true;
          break;
        }
      if (w->msg[0])
        break;
      if (!w->crun_done)
        {
          r = waitpid(w->crun, &w->status, WNOHANG);
          if (r == w->crun)
            {
              w->crun_done = true;
              w->status = WIFEXITED(w->status) ? WEXITSTATUS(w->status) : 128 + WTERMSIG(w->status);
              if (w->detach && w->status != 0)
                {
                  snprintf(w->msg, sizeof w->msg, "crun run failed with status %d%s", w->status,
                           crun_says(w->crun_err));
                  break;
                }
            }
        }
      if (!w->init)
        w->init = read_pid_file(w->pid_file);
      if (w->init)
        {
          if (!pid_alive(w->init))
            {
              /* Its last words may still be on their way: what is left
                 of them, or the pipe's end, within 20 ms. */
              struct pollfd last = { w->sync_r, POLLIN, 0 };
              poll(&last, 1, 20);
              drain(w->sync_r, w->msg, sizeof w->msg);
              if (strncmp(w->msg, "R\n", 2) == 0)
                memmove(w->msg, w->msg + 2, strlen(w->msg + 2) + 1);
              /* Restored, and the init already ended (a short-lived
                 container): crun reports how. */
              if (strncmp(w->msg, "D\n", 2) == 0)
                {
                  w->restored = true;
                  break;
                }
              if (!w->msg[0])
                snprintf(w->msg, sizeof w->msg, "the restorer (PID %d) exited without a message",
                         (int)w->init);
              break;
            }
        }
      else if (w->crun_done)
        {
          snprintf(w->msg, sizeof w->msg, "crun run ended (status %d) before the container started",
                   w->status);
          break;
        }
      if (time(NULL) > deadline)
        {
          snprintf(w->msg, sizeof w->msg, "no restored tree after %d s", RESTORE_TIMEOUT_S);
          break;
        }
      watch_wait(&f, w);
    }
  /* Restored before crun wrote the init's PID (the restorer's "D" can come
     first): wait for the file, as above (the binds are taken out through
     the init's namespaces, and a PID of 0 named none). */
  while (w->restored && !w->init && time(NULL) <= deadline)
    {
      struct pollfd p = { f.ino, POLLIN, 0 };
      char buf[4096];
      w->init = read_pid_file(w->pid_file);
      if (w->init)
        break;
      poll(&p, f.ino >= 0, f.ino >= 0 ? 1000 : 10);
      while (f.ino >= 0 && read(f.ino, buf, sizeof buf) > 0)
        ;
    }
  watch_close(&f);
}

/* The restorer's and the image's binds (and their mount points, which
   crun made), taken out of a restored container once its tree runs: the
   restored programs never saw them. A child joined to the container's user
   and mount namespaces unmounts each (lazily: the restorer's helper may
   still be on its way out) and removes its mount point; one it cannot
   remove (a read-only root) stays, empty. Only warned about: the tree
   runs. */
static bool
is_restore_bind(const char *mp)
{
  static const char *const names[]
      = { IN_DEV_RESTORER, IN_DEV_IMAGE, IN_ROOT_RESTORER, IN_ROOT_IMAGE };
  for (size_t i = 0; i < ARRAY_SIZE(names); i++)
    {
      size_t n = strlen(names[i]);
      if (strncmp(mp, names[i], n) == 0
          && (!mp[n] || (i % 2 == 1 && strncmp(mp + n, "-parent-", 8) == 0)))
        return true;
    }
  return false;
}

struct drop_req
{
  pid_t init;
  char *table; /* its mount table */
};

/* In a child: INIT's user and mount namespaces entered, each restore
   bind of TABLE unmounted and its mount point removed. Writes nothing when
   every one went, else why not, for the warning: how many stayed, or the
   namespace it could not enter. */
static int
drop_binds_body(int fd, void *arg)
{
  static const char *const ns[] = { "user", "mnt" };
  struct drop_req *r = arg;
  char *save = NULL;
  int left = 0;
  for (size_t i = 0; i < ARRAY_SIZE(ns); i++)
    if (join_ns(r->init, &ns[i], 1) < 0)
      return dprintf(fd, "enter its %s namespace: %s", ns[i], strerror(errno)) < 0 ? -1 : 0;
  for (char *l = strtok_r(r->table, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
    {
      char mp[4096];
      if (sscanf(l, "%*u %*u %*u:%*u %*s %4095s", mp) != 1
          || !is_restore_bind(crest_mount_unescape(mp)))
        continue;
      if (umount2(mp, MNT_DETACH) < 0 || (unlink(mp) < 0 && rmdir(mp) < 0 && errno != ENOENT))
        left++;
    }
  if (left)
    dprintf(fd, "%d left", left);
  return 0;
}

/* The mount table as the container sees it (ns_view), else as crest reads
   it in /proc (the same mount points, relative to INIT's root). */
static void
drop_restore_binds(const char *id, pid_t init)
{
  cleanup_free char *table = init ? ns_view(init, NULL) : NULL, *out = NULL,
                    *path = xasprintf("/proc/%d/mountinfo", (int)init);
  crest_error_t e = NULL;
  struct drop_req r = { init, NULL };
  if (!init)
    crest_error_make(&e, ESRCH, "crun never wrote the init's PID");
  if (!table && (!init || read_file(path, &table, NULL, 16u << 20, &e) < 0))
    {
      cleanup_free char *why = crest_error_text(e);
      crest_warn("container `%s`: restore: the restorer's and image's binds in the container "
                 "were not removed (its mount table: %s); the tree runs",
                 id, why);
      crest_error_release(&e);
      return;
    }
  r.table = table;
  out = child_run(drop_binds_body, &r);
  if (!out || out[0])
    crest_warn("container `%s`: restore: the restorer's and image's binds in the container "
               "could not all be removed (%s); the tree runs",
               id, out ? out : "its helper failed");
}

/* Detached: crun has exited or exits now that the tree runs; its status
   decides (CRUN_STATUS, when CRUN_DONE). */
static int
detached_done(const char *id, pid_t crun, bool crun_done, int crun_status, int crun_err,
              crest_error_t *err)
{
  int status = crun_done ? crun_status : crest_crun_wait(crun, false);
  if (status == 0)
    {
      /* What crun said while it worked (warnings) still reaches the
         user. */
      char b[4096];
      ssize_t r;
      for (off_t at = 0; crun_err >= 0 && (r = pread(crun_err, b, sizeof b, at)) > 0; at += r)
        if (write(2, b, r) != r)
          break;
    }
  /* All or nothing: crun failing after the tree exists (its pid file,
     the console socket) must not leave the container behind. */
  if (status != 0)
    {
      crest_error_make(err, 0,
                       "container `%s`: restore: crun run failed with status %d after the "
                       "tree was restored%s",
                       id, status, crun_says(crun_err));
      return -1;
    }
  return 0;
}

/* A pid file crun cannot write fails the restore: say so before anything
   exists. */
static int
pid_file_dir_ok(const char *id, const char *pid_file, crest_error_t *err)
{
  cleanup_free char *pdir = xstrdup(pid_file);
  char *slash = strrchr(pdir, '/');
  if (slash && slash != pdir)
    *slash = '\0';
  if (slash && access(pdir, W_OK | X_OK) < 0)
    return crest_error_errno(err, "container `%s`: restore: pid file %s: directory %s", id,
                             pid_file, pdir);
  return 0;
}

/* WHAT (the image, the bundle) at PATH, absolute and resolved; NULL with
   ERR when it cannot be. */
static char *
resolved_path(const char *id, const char *what, const char *path, crest_error_t *err)
{
  char real[PATH_MAX];
  cleanup_free char *abs = abs_path(path);
  if (!abs || !realpath(abs, real))
    {
      crest_error_errno(err, "container `%s`: restore: %s `%s`", id, what, path);
      return NULL;
    }
  return xstrdup(real);
}

/* The restorer's failure line MSG, its first line without the "restore: "
   it says already. */
static const char *
restorer_line(char *msg)
{
  msg[strcspn(msg, "\n")] = '\0';
  return strncmp(msg, "restore: ", 9) == 0 ? msg + 9 : msg;
}

/* crest's state of a restore, in STATE_DIR: the container's config (for
   the next checkpoint) and the restore config crun gets (its path in
   *RESTORE_CONFIG). Nothing is left when it fails. */
static int
write_restore_state(struct crest_global *g, const char *id, const char *state_dir, char *bundle,
                    const char *config_text, size_t config_len, const char *restore_text,
                    size_t restore_len, char **restore_config, crest_error_t *err)
{
  cleanup_free char *saved_config = xasprintf("%s/config.json", state_dir);
  struct crest_state st;
  *restore_config = xasprintf("%s/restore-config.json", state_dir);
  memset(&st, 0, sizeof st);
  st.id = (char *)id;
  st.bundle = bundle;
  st.crun_root = (char *)g->crun_root;
  st.config = saved_config;
  st.rootless = g->is_rootless;
  st.grant = (char *)"none";
  if (mkdir_p(state_dir, 0700, err) < 0
      || write_file_atomic(saved_config, config_text, config_len, 0600, err) < 0
      || write_file_atomic(*restore_config, restore_text, restore_len, 0600, err) < 0
      || crest_state_write(g, &st, err) < 0)
    {
      crest_state_remove(g, id, NULL);
      return crest_error_wrap(err, "container `%s`: restore: write crest's state", id);
    }
  return 0;
}

int
crest_container_restore(struct crest_global *g, const char *id,
                        const struct crest_container_restore_opts *opts, crest_error_t *err)
{
  cleanup_free char *image = NULL, *config_path = NULL, *config_text = NULL, *bundle = NULL,
                    *restorer = NULL;
  cleanup_free char *state_dir = NULL, *restore_config = NULL, *restore_text = NULL;
  cleanup_free char *pid_file = NULL, *crun_dir = xasprintf("%s/%s", g->crun_root, id);
  char msg[2048] = "";
  struct crest_seccomp_bpf late = { 0, NULL, 0 };
  cleanup_free unsigned char *late_prog = NULL; /* late's, freed with it */
  yajl_val config = NULL;
  struct image_uts uts;
  size_t config_len = 0, restore_len = 0;
  int sync[2] = { -1, -1 }, status = 0;
  cleanup_close int crun_err = -1;
  pid_t crun = -1, init = 0;
  bool crun_done = false, restored = false;

  if (crest_validate_id(id, err) < 0)
    return -1;
  image = resolved_path(id, "image", opts->image_path ? opts->image_path : "checkpoint", err);
  if (!image)
    return -1;

  /* Everything that can be checked is checked before anything is created. */
  if (load_image_config(id, image, opts, &config_path, &config_text, &config_len, &config, &uts,
                        err)
      < 0)
    return -1;
  restorer = find_restorer();
  if (!restorer)
    {
      yajl_tree_free(config);
      return crest_error_make(
          err, ENOENT, "container `%s`: restore: cannot find crest-restorer (set CREST_RESTORER)",
          id);
    }
  bundle = resolved_path(id, "bundle", opts->bundle ? opts->bundle : ".", err);
  if (!bundle)
    {
      yajl_tree_free(config);
      return -1;
    }
  /* podman and CRI-O restore from a new bundle: it runs with that
     bundle's config when the image fits it (config-compat.h). */
  if (crest_restore_bundle_config(bundle, &config, &config_text, &config_len, err) < 0)
    {
      yajl_tree_free(config);
      return crest_error_wrap(err, "container `%s`: restore", id);
    }
  if (crest_crun_has(g, NULL, id))
    {
      yajl_tree_free(config);
      return crest_error_make(err, EEXIST,
                              "container `%s`: restore: a container with this ID exists", id);
    }
  int made
      = make_restore_config(config, restorer, image, &uts, &late, &restore_text, &restore_len, err);
  late_prog = late.prog;
  yajl_tree_free(config);
  if (made < 0)
    return crest_error_wrap(err, "container `%s`: restore", id);

  state_dir = crest_state_dir(g, id);
  pid_file = opts->pid_file ? abs_path(opts->pid_file) : xasprintf("%s/restore.pid", state_dir);
  if (opts->pid_file && pid_file_dir_ok(id, pid_file, err) < 0)
    return -1;
  /* crest's state; from here on, failure undoes everything. */
  if (write_restore_state(g, id, state_dir, bundle, config_text, config_len, restore_text,
                          restore_len, &restore_config, err)
      < 0)
    return -1;
  /* A unix socket rather than a pipe: the restorer also sends on it the
     TCP sockets it may not put in repair mode itself (drain). */
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sync) < 0)
    {
      crest_error_errno(err, "container `%s`: restore: socketpair", id);
      goto undo;
    }
  unlink(pid_file);
  crun = spawn_crun(g, id, opts, bundle, restore_config, pid_file, sync[1], &crun_err, err);
  close(sync[1]);
  sync[1] = -1;
  if (crun < 0)
    goto undo;
  fcntl(sync[0], F_SETFL, O_NONBLOCK);

  /* Watch: the restorer's messages, crun itself. */
  {
    struct restore_watch w;
    struct crun_settle settle = { crun_dir, config_text, config_len, &late };
    memset(&w, 0, sizeof w);
    w.sync_r = sync[0], w.crun = crun, w.crun_err = crun_err, w.pid_file = pid_file;
    w.detach = opts->detach, w.settle = &settle;
    restore_watch(&w);
    memcpy(msg, w.msg, sizeof msg);
    status = w.status, crun_done = w.crun_done, init = w.init, restored = w.restored;
  }
  close(sync[0]);
  sync[0] = -1;
  if (!restored)
    {
      crest_error_make(err, 0, "container `%s`: restore: %s", id, restorer_line(msg));
      goto undo;
    }
  crest_debug("container `%s`: restored, init PID %d", id, (int)init);
  drop_restore_binds(id, init);
  if (opts->detach)
    {
      /* crun is waited for there: nothing to wait for at undo. */
      if (detached_done(id, crun, crun_done, status, crun_err, err) < 0)
        {
          crun_done = true;
          goto undo;
        }
      return 0;
    }
  /* Foreground: the container runs until its init exits. crun deletes it
     then; crest's state goes with it. */
  if (!crun_done)
    status = crest_crun_wait(crun, false);
  crest_state_remove(g, id, NULL);
  return status;

undo:
  if (sync[0] >= 0)
    close(sync[0]);
  if (sync[1] >= 0)
    close(sync[1]);
  undo_restore(g, id);
  if (crun > 0 && !crun_done)
    crest_crun_wait(crun, false);
  if (!opts->pid_file)
    unlink(pid_file);
  return -1;
}
