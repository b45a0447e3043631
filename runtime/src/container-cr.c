/* crest: checkpoint and restore of a container (see container-cr.h and
 * docs/restore.md).
 *
 * Checkpoint runs outside the container as the user who owns it. Restore
 * asks crun to build a new container from a private copy of the
 * checkpointed config whose process is crest's static restorer; the
 * restorer, PID 1 of the new PID namespace, calls the engine, which turns it
 * into the checkpointed init. crest watches from outside through the sync
 * pipe the restorer inherits as descriptor 3: "R" once the restorer runs
 * (named RESTORER_COMM), then the init's comm changing means the restored
 * tree runs, the init vanishing means the restore failed, and a line on the
 * pipe is the reason. */
#include <config.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "container-cr.h"
#include "engine.h"
#include "image.h"
#include "log.h"
#include "oci-config.h"
#include "sha256.h"
#include "state.h"
#include "util.h"

/* The file the image carries beside the engine's: the exact config the
   container ran with. Its SHA-256 is the manifest's config_digest. */
#define IMAGE_CONFIG "container-config.json"
/* Where the restorer and the image appear inside the restoring container:
   under /dev, crun's tmpfs, so that nothing is created in the rootfs. */
#define IN_DEV_RESTORER "/dev/.crest-restorer"
#define IN_DEV_IMAGE "/dev/.crest-image"
#define IN_ROOT_RESTORER "/.crest-restorer"
#define IN_ROOT_IMAGE "/.crest-image"
/* The restorer's comm while it works (see runtime/restorer/restorer.c). */
#define RESTORER_COMM "crest-restoring"
#define CAP_CR_NAME "CAP_CHECKPOINT_RESTORE"
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

static void
sha256_buf_hex(const void *buf, size_t len, char out[65])
{
  struct sha256 s;
  uint8_t d[32];
  sha256_init(&s);
  sha256_update(&s, buf, len);
  sha256_final(&s, d);
  sha256_hex(d, out);
}

/* crun with crest's global options, VERB and ARGV. KEEP_FD (or -1) becomes
   descriptor 3 of crun; OUT_FD (or -1) its stdout, QUIET_FD (or -1) its
   stderr. Returns the PID. */
static pid_t
spawn_crun_fds(struct crest_global *g, const char *verb, char *const *argv, int keep_fd, int out_fd,
               int quiet_fd, crest_error_t *err)
{
  size_t n = 0, i;
  char **full;
  pid_t pid;

  while (argv[n])
    n++;
  full = xmalloc(sizeof(char *) * (n + (size_t)g->crun_global_argc + 3));
  full[0] = (char *)g->runtime;
  for (i = 0; i < (size_t)g->crun_global_argc; i++)
    full[1 + i] = g->crun_global_argv[i];
  full[1 + i] = (char *)verb;
  for (size_t k = 0; k < n; k++)
    full[2 + i + k] = argv[k];
  full[2 + i + n] = NULL;
  fflush(NULL);
  pid = fork();
  if (pid < 0)
    {
      free(full);
      return crest_error_errno(err, "fork crun");
    }
  if (pid == 0)
    {
      if (out_fd >= 0 && dup2(out_fd, 1) < 0)
        _exit(127);
      if (quiet_fd >= 0 && dup2(quiet_fd, 2) < 0)
        _exit(127);
      if (keep_fd >= 0 && (keep_fd == 3 ? fcntl(3, F_SETFD, 0) : dup2(keep_fd, 3)) < 0)
        _exit(127);
      execv(g->runtime, full);
      fprintf(stderr, "crest: cannot run crun `%s`: %s\n", g->runtime, strerror(errno));
      _exit(127);
    }
  free(full);
  return pid;
}

static pid_t
spawn_crun(struct crest_global *g, const char *verb, char *const *argv, int keep_fd, int out_fd,
           crest_error_t *err)
{
  return spawn_crun_fds(g, verb, argv, keep_fd, out_fd, -1, err);
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
wait_status(pid_t pid)
{
  int st, r;
  do
    r = waitpid(pid, &st, 0);
  while (r < 0 && errno == EINTR);
  if (r < 0)
    return 125;
  if (WIFEXITED(st))
    return WEXITSTATUS(st);
  return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 125;
}

static int
run_crun_quiet(struct crest_global *g, const char *verb, char *const *argv)
{
  crest_error_t e = NULL;
  int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
  pid_t pid = spawn_crun_fds(g, verb, argv, -1, devnull, devnull, &e);
  if (devnull >= 0)
    close(devnull);
  if (pid < 0)
    {
      crest_error_release(&e);
      return 125;
    }
  return wait_status(pid);
}

/* `crun state ID`: the init's PID (as the host sees it) and the status. */
static int
crun_state(struct crest_global *g, const char *id, pid_t *pid, char **status, crest_error_t *err)
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
  child = spawn_crun(g, "state", args, -1, p[1], err);
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
  st = wait_status(child);
  if (st != 0)
    return crest_error_make(err, 0, "container `%s`: `crun state` failed with status %d", id, st);
  root = yajl_tree_parse(out, ebuf, sizeof ebuf);
  if (!root)
    return crest_error_make(err, 0, "container `%s`: cannot parse `crun state`: %s", id, ebuf);
  {
    const char *pp[] = { "pid", NULL }, *sp[] = { "status", NULL };
    v = yajl_tree_get(root, pp, yajl_t_number);
    *pid = v && YAJL_IS_INTEGER(v) ? (pid_t)YAJL_GET_INTEGER(v) : 0;
    v = yajl_tree_get(root, sp, yajl_t_string);
    *status = xstrdup(v ? (v)->u.string : "unknown");
  }
  yajl_tree_free(root);
  if (*pid <= 0)
    {
      free(*status);
      *status = NULL;
      return crest_error_make(err, 0, "container `%s`: `crun state` shows no init PID", id);
    }
  return 0;
}

/* ---- freezing through cgroup v2, when the container's cgroup is ours ---- */

struct freezer
{
  char *dir; /* /sys/fs/cgroup/... of the container */
};

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
cg_freeze(void *data, pid_t root, bool freeze, crest_error_t *err)
{
  struct freezer *f = data;
  cleanup_free char *ctl = xasprintf("%s/cgroup.freeze", f->dir);
  cleanup_free char *events = xasprintf("%s/cgroup.events", f->dir);
  int i;

  (void)root;
  {
    cleanup_close int fd = open(ctl, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, freeze ? "1" : "0", 1) != 1)
      return crest_error_errno(err, "%s `%s`", freeze ? "freeze" : "thaw", ctl);
  }
  if (!freeze)
    return 0;
  /* The write only asks; cgroup.events says when every task is frozen. */
  for (i = 0; i < 5000; i++)
    {
      cleanup_free char *text = NULL;
      crest_error_t e = NULL;
      if (read_file(events, &text, NULL, 4096, &e) < 0)
        {
          crest_error_release(&e);
          break;
        }
      if (strstr(text, "frozen 1"))
        return 0;
      usleep(1000);
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
  return true;
}

/* ---- checkpoint ---- */

int
crest_container_checkpoint(struct crest_global *g, const char *id,
                           const struct crest_container_checkpoint_opts *opts, crest_error_t *err)
{
  cleanup_free char *image = NULL, *config_text = NULL, *status = NULL, *tmp_config = NULL,
                    *final_config = NULL;
  cleanup_free char *work = NULL;
  struct crest_state st;
  struct crest_dump_opts d;
  struct freezer fz = { NULL };
  char digest[65];
  size_t config_len = 0;
  pid_t init = 0;
  int r;

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
        "containers started with `crest create` or `crest run`)",
        id);
  if (crun_state(g, id, &init, &status, err) < 0)
    goto fail_state;
  if (strcmp(status, "running") != 0)
    {
      crest_error_make(err, 0, "container `%s`: checkpoint: the container is %s, not running", id,
                       status);
      goto fail_state;
    }
  if (read_file(st.config, &config_text, &config_len, 16u << 20, err) < 0)
    {
      crest_error_wrap(err, "container `%s`: checkpoint: read its config", id);
      goto fail_state;
    }
  sha256_buf_hex(config_text, config_len, digest);

  /* Written before the dump, renamed into the image after it: once the
     tree is dumped nothing can fail for lack of space. */
  tmp_config = xasprintf("%s.%s.%d", image, IMAGE_CONFIG, (int)getpid());
  if (write_file_atomic(tmp_config, config_text, config_len, 0600, err) < 0)
    {
      crest_error_wrap(err, "container `%s`: checkpoint: store its config beside the image", id);
      goto fail_state;
    }

  memset(&d, 0, sizeof d);
  d.image_dir = image;
  d.work_dir = work;
  d.leave_running = opts->leave_running;
  d.root_is_ns_init = true;
  d.config_digest = digest;
  {
    /* The restorer runs with the config's capabilities (restore-config.json
       only adds CAP_CHECKPOINT_RESTORE): a task's chroot can only come back
       if the config gives CAP_SYS_CHROOT. */
    yajl_val cfg = NULL;
    crest_error_t e = NULL;
    if (crest_config_parse(config_text, &cfg, &e) == 0
        && crest_config_process_holds_cap(cfg, "CAP_SYS_CHROOT") == 0)
      d.no_chroot_cap = "restoring it needs CAP_SYS_CHROOT, which the container's config does not "
                        "give its processes";
    crest_error_release(&e);
    if (cfg)
      yajl_tree_free(cfg);
  }
  if (freezer_setup(init, &fz))
    {
      d.freeze = cg_freeze;
      d.freeze_data = &fz;
      d.cgroup_path = fz.dir;
    }
  crest_debug("container `%s`: dumping init PID %d into `%s`%s", id, (int)init, image,
              fz.dir ? " (frozen through its cgroup)" : "");
  if (crest_engine_dump(init, &d, err) < 0)
    {
      unlink(tmp_config);
      crest_error_wrap(err, "container `%s`: checkpoint", id);
      goto fail_state;
    }
  final_config = xasprintf("%s/%s", image, IMAGE_CONFIG);
  if (rename(tmp_config, final_config) < 0)
    {
      crest_error_errno(err, "container `%s`: checkpoint: move its config into the image `%s`", id,
                        final_config);
      unlink(tmp_config);
      if (opts->leave_running)
        {
          crest_error_t e = NULL;
          remove_tree(image, &e);
          crest_error_release(&e);
        }
      goto fail_state;
    }

  if (!opts->leave_running)
    {
      /* The engine killed the tree; crun forgets the container, crest too. */
      char *args[] = { (char *)"--force", (char *)id, NULL };
      int s = run_crun_quiet(g, "delete", args);
      if (s != 0 && crest_crun_has(g, NULL, id))
        crest_warn("container `%s`: checkpointed, but `crun delete` failed with status %d", id, s);
      crest_state_remove(g, id, NULL);
    }
  free(fz.dir);
  crest_state_free(&st);
  return 0;

fail_state:
  free(fz.dir);
  crest_state_free(&st);
  return -1;
}

/* ---- the restore config ---- */

static void
gen_string(yajl_gen gen, const char *s)
{
  yajl_gen_string(gen, (const unsigned char *)s, strlen(s));
}

static void
gen_value(yajl_gen gen, yajl_val v)
{
  size_t i;

  if (!v || YAJL_IS_NULL(v))
    yajl_gen_null(gen);
  else if (YAJL_IS_STRING(v))
    gen_string(gen, (v)->u.string);
  else if (YAJL_IS_NUMBER(v))
    yajl_gen_number(gen, v->u.number.r, strlen(v->u.number.r));
  else if (YAJL_IS_TRUE(v))
    yajl_gen_bool(gen, 1);
  else if (YAJL_IS_FALSE(v))
    yajl_gen_bool(gen, 0);
  else if (YAJL_IS_ARRAY(v))
    {
      yajl_gen_array_open(gen);
      for (i = 0; i < v->u.array.len; i++)
        gen_value(gen, v->u.array.values[i]);
      yajl_gen_array_close(gen);
    }
  else if (YAJL_IS_OBJECT(v))
    {
      yajl_gen_map_open(gen);
      for (i = 0; i < v->u.object.len; i++)
        {
          gen_string(gen, v->u.object.keys[i]);
          gen_value(gen, v->u.object.values[i]);
        }
      yajl_gen_map_close(gen);
    }
}

static yajl_val
obj_get(yajl_val obj, const char *key)
{
  size_t i;
  if (!obj || !YAJL_IS_OBJECT(obj))
    return NULL;
  for (i = 0; i < obj->u.object.len; i++)
    if (strcmp(obj->u.object.keys[i], key) == 0)
      return obj->u.object.values[i];
  return NULL;
}

/* A capability list with CAP_CHECKPOINT_RESTORE added when absent. */
static void
gen_caps_plus_cr(yajl_gen gen, yajl_val list)
{
  bool has = false;
  size_t i;
  yajl_gen_array_open(gen);
  if (list && YAJL_IS_ARRAY(list))
    for (i = 0; i < list->u.array.len; i++)
      {
        yajl_val c = list->u.array.values[i];
        if (YAJL_IS_STRING(c) && strcmp((c)->u.string, CAP_CR_NAME) == 0)
          has = true;
        gen_value(gen, c);
      }
  if (!has)
    gen_string(gen, CAP_CR_NAME);
  yajl_gen_array_close(gen);
}

/* The checkpointed capabilities plus CAP_CHECKPOINT_RESTORE in bounding,
   permitted and effective: what the restorer needs and nothing else. The
   inheritable and ambient sets stay as they were. */
static void
gen_restore_caps(yajl_gen gen, yajl_val caps)
{
  static const char *const grant[] = { "bounding", "permitted", "effective" };
  size_t i, k;

  yajl_gen_map_open(gen);
  if (caps && YAJL_IS_OBJECT(caps))
    for (i = 0; i < caps->u.object.len; i++)
      {
        bool granted = false;
        for (k = 0; k < ARRAY_SIZE(grant); k++)
          granted |= strcmp(caps->u.object.keys[i], grant[k]) == 0;
        gen_string(gen, caps->u.object.keys[i]);
        if (granted)
          gen_caps_plus_cr(gen, caps->u.object.values[i]);
        else
          gen_value(gen, caps->u.object.values[i]);
      }
  for (k = 0; k < ARRAY_SIZE(grant); k++)
    if (!obj_get(caps, grant[k]))
      {
        gen_string(gen, grant[k]);
        gen_caps_plus_cr(gen, NULL);
      }
  yajl_gen_map_close(gen);
}

static void
gen_bind(yajl_gen gen, const char *src, const char *dst)
{
  static const char *const options[] = { "bind", "ro", "nosuid", "nodev" };
  size_t i;
  yajl_gen_map_open(gen);
  gen_string(gen, "destination");
  gen_string(gen, dst);
  gen_string(gen, "type");
  gen_string(gen, "bind");
  gen_string(gen, "source");
  gen_string(gen, src);
  gen_string(gen, "options");
  yajl_gen_array_open(gen);
  for (i = 0; i < ARRAY_SIZE(options); i++)
    gen_string(gen, options[i]);
  yajl_gen_array_close(gen);
  yajl_gen_map_close(gen);
}

/* Does the config mount a tmpfs on /dev (crun's default)? */
static bool
has_dev_tmpfs(yajl_val mounts)
{
  size_t i;
  if (!mounts || !YAJL_IS_ARRAY(mounts))
    return false;
  for (i = 0; i < mounts->u.array.len; i++)
    {
      yajl_val m = mounts->u.array.values[i], d = obj_get(m, "destination"), t = obj_get(m, "type");
      if (d && t && YAJL_IS_STRING(d) && YAJL_IS_STRING(t) && strcmp((d)->u.string, "/dev") == 0
          && strcmp((t)->u.string, "tmpfs") == 0)
        return true;
    }
  return false;
}

static int
make_restore_config(yajl_val config, const char *restorer, const char *image, char **out,
                    size_t *len, crest_error_t *err)
{
  yajl_gen gen = yajl_gen_alloc(NULL);
  yajl_val mounts = obj_get(config, "mounts"), process = obj_get(config, "process");
  bool in_dev = has_dev_tmpfs(mounts);
  const char *in_restorer = in_dev ? IN_DEV_RESTORER : IN_ROOT_RESTORER;
  const char *in_image = in_dev ? IN_DEV_IMAGE : IN_ROOT_IMAGE;
  const unsigned char *buf;
  size_t i, blen;
  bool seen_mounts = false;
  const char *pause_ms = getenv("CREST_RESTORER_PAUSE_MS");

  if (!process || !YAJL_IS_OBJECT(process))
    {
      yajl_gen_free(gen);
      return crest_error_make(err, EINVAL, "the checkpointed config has no process object");
    }
  yajl_gen_config(gen, yajl_gen_beautify, 1);
  yajl_gen_map_open(gen);
  for (i = 0; i < config->u.object.len; i++)
    {
      const char *key = config->u.object.keys[i];
      yajl_val v = config->u.object.values[i];
      gen_string(gen, key);
      if (strcmp(key, "process") == 0)
        {
          size_t k;
          bool seen_caps = false;
          yajl_gen_map_open(gen);
          for (k = 0; k < v->u.object.len; k++)
            {
              const char *pk = v->u.object.keys[k];
              gen_string(gen, pk);
              if (strcmp(pk, "args") == 0)
                {
                  yajl_gen_array_open(gen);
                  gen_string(gen, in_restorer);
                  gen_string(gen, in_image);
                  /* The restored tasks get CAP_CHECKPOINT_RESTORE only if
                     the configuration gives it (see gen_restore_caps). */
                  gen_string(gen,
                             crest_config_process_holds_cap(config, "CAP_CHECKPOINT_RESTORE") == 1
                                 ? "cr-granted=1"
                                 : "cr-granted=0");
                  yajl_gen_array_close(gen);
                }
              else if (strcmp(pk, "env") == 0 && YAJL_IS_ARRAY(v->u.object.values[k]) && pause_ms)
                {
                  /* Test hook: the restorer waits before it starts, so that
                     a test can read its capabilities while it works. */
                  yajl_val env = v->u.object.values[k];
                  char *e = xasprintf("CREST_RESTORER_PAUSE_MS=%s", pause_ms);
                  yajl_gen_array_open(gen);
                  for (size_t j = 0; j < env->u.array.len; j++)
                    gen_value(gen, env->u.array.values[j]);
                  gen_string(gen, e);
                  yajl_gen_array_close(gen);
                  free(e);
                }
              else if (strcmp(pk, "capabilities") == 0)
                {
                  seen_caps = true;
                  gen_restore_caps(gen, v->u.object.values[k]);
                }
              else
                gen_value(gen, v->u.object.values[k]);
            }
          if (!seen_caps)
            {
              gen_string(gen, "capabilities");
              gen_restore_caps(gen, NULL);
            }
          yajl_gen_map_close(gen);
        }
      else if (strcmp(key, "mounts") == 0 && YAJL_IS_ARRAY(v))
        {
          seen_mounts = true;
          yajl_gen_array_open(gen);
          for (size_t k = 0; k < v->u.array.len; k++)
            gen_value(gen, v->u.array.values[k]);
          gen_bind(gen, restorer, in_restorer);
          gen_bind(gen, image, in_image);
          yajl_gen_array_close(gen);
        }
      else
        gen_value(gen, v);
    }
  if (!seen_mounts)
    {
      gen_string(gen, "mounts");
      yajl_gen_array_open(gen);
      gen_bind(gen, restorer, in_restorer);
      gen_bind(gen, image, in_image);
      yajl_gen_array_close(gen);
    }
  yajl_gen_map_close(gen);
  if (yajl_gen_get_buf(gen, &buf, &blen) != yajl_gen_status_ok)
    {
      yajl_gen_free(gen);
      return crest_error_make(err, EINVAL, "cannot generate the restore config");
    }
  *out = xmalloc(blen + 1);
  memcpy(*out, buf, blen);
  (*out)[blen] = '\0';
  *len = blen;
  yajl_gen_free(gen);
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
read_comm(pid_t pid, char *buf, size_t len)
{
  char path[64];
  int fd;
  ssize_t n;
  snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  n = read(fd, buf, len - 1);
  close(fd);
  if (n <= 0)
    return false;
  buf[n] = '\0';
  buf[strcspn(buf, "\n")] = '\0';
  return true;
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

/* Append what the restorer wrote on the sync pipe to MSG. */
static void
drain(int fd, char *msg, size_t cap)
{
  size_t used = strlen(msg);
  for (;;)
    {
      ssize_t r;
      if (used + 1 >= cap)
        break;
      r = read(fd, msg + used, cap - used - 1);
      if (r <= 0)
        break;
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

int
crest_container_restore(struct crest_global *g, const char *id,
                        const struct crest_container_restore_opts *opts, crest_error_t *err)
{
  cleanup_free char *image = NULL, *config_path = NULL, *config_text = NULL, *bundle = NULL,
                    *restorer = NULL;
  cleanup_free char *state_dir = NULL, *saved_config = NULL, *restore_config = NULL,
                    *restore_text = NULL;
  cleanup_free char *pid_file = NULL, *config_arg = NULL, *pid_arg = NULL, *console_arg = NULL;
  char digest[65], msg[2048] = "", real[PATH_MAX];
  struct img_reader *rd = NULL;
  struct crest_state st;
  yajl_val config = NULL;
  size_t config_len = 0, restore_len = 0;
  int sync[2] = { -1, -1 }, status = 0;
  cleanup_close int crun_err = -1;
  pid_t crun = -1, init = 0;
  bool crun_done = false, restored = false, started = false;
  time_t deadline;

  if (crest_validate_id(id, err) < 0)
    return -1;
  image = abs_path(opts->image_path ? opts->image_path : "checkpoint");
  if (!image || !realpath(image, real))
    return crest_error_errno(err, "container `%s`: restore: image `%s`", id,
                             opts->image_path ? opts->image_path : "checkpoint");
  free(image);
  image = xstrdup(real);

  /* Everything that can be checked is checked before anything is created. */
  if (crest_engine_check_image(image, err) < 0)
    return crest_error_wrap(err, "container `%s`: restore", id);
  if (img_reader_open(image, false, false, &rd, err) < 0)
    return crest_error_wrap(err, "container `%s`: restore", id);
  config_path = xasprintf("%s/%s", image, IMAGE_CONFIG);
  if (read_file(config_path, &config_text, &config_len, 16u << 20, err) < 0)
    {
      img_reader_free(rd);
      return crest_error_wrap(
          err,
          "container `%s`: restore: the image holds no container config (was it "
          "made with `crest checkpoint --pid`?)",
          id);
    }
  sha256_buf_hex(config_text, config_len, digest);
  if (!rd->config_digest || strcmp(rd->config_digest, digest) != 0)
    {
      crest_error_make(
          err, EINVAL,
          "container `%s`: restore: `%s` does not match the image manifest's config_digest "
          "(expected %s, got %s)",
          id, config_path, rd->config_digest ? rd->config_digest : "none", digest);
      img_reader_free(rd);
      return -1;
    }
  img_reader_free(rd);
  if (crest_config_parse(config_text, &config, err) < 0)
    return crest_error_wrap(err, "container `%s`: restore: `%s`", id, config_path);
  {
    const char *sp[] = { "linux", "seccomp", NULL };
    if (yajl_tree_get(config, sp, yajl_t_any))
      {
        yajl_tree_free(config);
        return crest_error_make(
            err, ENOTSUP,
            "container `%s`: restore: the checkpointed config has linux.seccomp, which crest "
            "cannot restore yet (see docs/restore.md)",
            id);
      }
  }
  {
    /* crun would refuse it too, after crest has written its state. */
    const char *tp[] = { "process", "terminal", NULL };
    yajl_val t = yajl_tree_get(config, tp, yajl_t_any);
    if (t && YAJL_IS_TRUE(t) && opts->detach && !opts->console_socket)
      {
        yajl_tree_free(config);
        return crest_error_make(err, EINVAL,
                                "container `%s`: restore: the checkpointed config has "
                                "process.terminal: --detach needs --console-socket for the new "
                                "terminal",
                                id);
      }
  }
  restorer = find_restorer();
  if (!restorer)
    {
      yajl_tree_free(config);
      return crest_error_make(
          err, ENOENT, "container `%s`: restore: cannot find crest-restorer (set CREST_RESTORER)",
          id);
    }
  bundle = abs_path(opts->bundle ? opts->bundle : ".");
  if (!bundle || !realpath(bundle, real))
    {
      yajl_tree_free(config);
      return crest_error_errno(err, "container `%s`: restore: bundle `%s`", id,
                               opts->bundle ? opts->bundle : ".");
    }
  free(bundle);
  bundle = xstrdup(real);
  if (crest_crun_has(g, NULL, id))
    {
      yajl_tree_free(config);
      return crest_error_make(err, EEXIST,
                              "container `%s`: restore: a container with this ID exists", id);
    }
  if (make_restore_config(config, restorer, image, &restore_text, &restore_len, err) < 0)
    {
      yajl_tree_free(config);
      return crest_error_wrap(err, "container `%s`: restore", id);
    }
  yajl_tree_free(config);

  /* crest's state: the original config (for the next checkpoint) and the
     restore config crun gets. From here on, failure undoes everything. */
  state_dir = crest_state_dir(g, id);
  saved_config = xasprintf("%s/config.json", state_dir);
  restore_config = xasprintf("%s/restore-config.json", state_dir);
  pid_file = opts->pid_file ? abs_path(opts->pid_file) : xasprintf("%s/restore.pid", state_dir);
  {
    /* A pid file crun cannot write fails the restore: say so before
       anything exists. */
    cleanup_free char *pdir = xstrdup(pid_file);
    char *slash = strrchr(pdir, '/');
    if (slash && slash != pdir)
      *slash = '\0';
    if (opts->pid_file && slash && access(pdir, W_OK | X_OK) < 0)
      return crest_error_errno(err, "container `%s`: restore: pid file %s: directory %s", id,
                               pid_file, pdir);
  }
  memset(&st, 0, sizeof st);
  st.id = (char *)id;
  st.bundle = bundle;
  st.crun_root = (char *)g->crun_root;
  st.config = saved_config;
  st.rootless = g->is_rootless;
  st.grant = (char *)"none";
  if (mkdir_p(state_dir, 0700, err) < 0
      || write_file_atomic(saved_config, config_text, config_len, 0600, err) < 0
      || write_file_atomic(restore_config, restore_text, restore_len, 0600, err) < 0
      || crest_state_write(g, &st, err) < 0)
    {
      crest_state_remove(g, id, NULL);
      return crest_error_wrap(err, "container `%s`: restore: write crest's state", id);
    }
  if (pipe2(sync, O_CLOEXEC) < 0)
    {
      crest_error_errno(err, "container `%s`: restore: pipe", id);
      goto undo;
    }
  unlink(pid_file);
  {
    char *args[16];
    int n = 0;
    config_arg = xasprintf("--config=%s", restore_config);
    pid_arg = xasprintf("--pid-file=%s", pid_file);
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
    args[n++] = (char *)id;
    args[n] = NULL;
    /* Detached with a terminal, the container's stdio is the pty and crun
       exits once it runs, so crun's stderr is crun's alone: keep it, and
       say why crun failed in the one line (a console socket nobody
       listens on, say). */
    if (opts->console_socket && opts->detach)
      crun_err = memfd_create("crun-stderr", MFD_CLOEXEC);
    crun = spawn_crun_fds(g, "run", args, sync[1], -1, crun_err, err);
  }
  close(sync[1]);
  sync[1] = -1;
  if (crun < 0)
    goto undo;
  fcntl(sync[0], F_SETFL, O_NONBLOCK);

  /* Watch: the restorer's message, the init's comm, crun itself. */
  deadline = time(NULL) + RESTORE_TIMEOUT_S;
  for (;;)
    {
      struct pollfd pfd = { sync[0], POLLIN, 0 };
      char comm[64];
      int w;

      drain(sync[0], msg, sizeof msg);
      if (!started && strncmp(msg, "R\n", 2) == 0)
        {
          /* The restorer runs: before this, the init PID crun reported may
             still be one of crun's own processes, with crun's names. */
          started = true;
          memmove(msg, msg + 2, strlen(msg + 2) + 1);
        }
      if (msg[0])
        break;
      if (!crun_done)
        {
          w = waitpid(crun, &status, WNOHANG);
          if (w == crun)
            {
              crun_done = true;
              status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
              if (opts->detach && status != 0)
                {
                  snprintf(msg, sizeof msg, "crun run failed with status %d%s", status,
                           crun_says(crun_err));
                  break;
                }
            }
        }
      if (!init)
        init = read_pid_file(pid_file);
      if (init)
        {
          if (!pid_alive(init))
            {
              usleep(20000);
              drain(sync[0], msg, sizeof msg);
              if (strncmp(msg, "R\n", 2) == 0)
                memmove(msg, msg + 2, strlen(msg + 2) + 1);
              if (!msg[0])
                snprintf(msg, sizeof msg, "the restorer (PID %d) exited without a message",
                         (int)init);
              break;
            }
          if (started && read_comm(init, comm, sizeof comm) && strcmp(comm, RESTORER_COMM) != 0)
            {
              restored = true;
              break;
            }
        }
      else if (crun_done)
        {
          snprintf(msg, sizeof msg, "crun run ended (status %d) before the container started",
                   status);
          break;
        }
      if (time(NULL) > deadline)
        {
          snprintf(msg, sizeof msg, "no restored tree after %d s", RESTORE_TIMEOUT_S);
          break;
        }
      poll(&pfd, 1, 10);
    }
  close(sync[0]);
  sync[0] = -1;
  if (!restored)
    {
      msg[strcspn(msg, "\n")] = '\0';
      crest_error_make(err, 0, "container `%s`: restore: %s", id, msg);
      goto undo;
    }
  crest_debug("container `%s`: restored, init PID %d", id, (int)init);
  if (opts->detach)
    {
      if (!crun_done)
        status = wait_status(crun), crun_done = true;
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
          goto undo;
        }
      return 0;
    }
  /* Foreground: the container runs until its init exits. crun deletes it
     then; crest's state goes with it. */
  if (!crun_done)
    status = wait_status(crun);
  crest_state_remove(g, id, NULL);
  return status;

undo:
  if (sync[0] >= 0)
    close(sync[0]);
  if (sync[1] >= 0)
    close(sync[1]);
  undo_restore(g, id);
  if (crun > 0 && !crun_done)
    wait_status(crun);
  if (!opts->pid_file)
    unlink(pid_file);
  return -1;
}
