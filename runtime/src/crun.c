/* crest: running crun, the one place that starts it. */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>
#include "crest.h"
#include "log.h"
#include "util.h"

static char **
build_argv(struct crest_global *g, const char *verb, char *const *argv)
{
  int n = 0, k = 0, i;
  char **out;
  while (argv && argv[n])
    n++;
  out = xmalloc(sizeof(char *) * (size_t)(n + g->crun_global_argc + 3));
  out[k++] = (char *)g->runtime;
  for (i = 0; i < g->crun_global_argc; i++)
    out[k++] = g->crun_global_argv[i];
  out[k++] = (char *)verb;
  for (i = 0; i < n; i++)
    out[k++] = argv[i];
  out[k] = NULL;
  return out;
}

static void
debug_argv(char **a)
{
  char buf[4096];
  size_t used = 0;
  for (; *a && used < sizeof buf - 1; a++)
    {
      int r = snprintf(buf + used, sizeof buf - used, "%s%s", used ? " " : "", *a);
      if (r < 0)
        return;
      used += (size_t)r;
    }
  crest_debug("running %s", buf);
}

/* crun writes the container's state to each hook's standard input; a hook
   that exits without reading it (a poststop `/bin/true`, which the OCI
   spec allows) made that write kill crun by SIGPIPE midway through a
   delete, about once in ten deletes, leaving the container behind with
   exit status 141 and no message. Ignored, the write fails with EPIPE
   instead (an ignored disposition survives exec). Not for the verbs that
   start a container's process, which would inherit it. */
static void
ignore_sigpipe(const char *verb)
{
  if (strcmp(verb, "run") != 0 && strcmp(verb, "create") != 0 && strcmp(verb, "exec") != 0)
    signal(SIGPIPE, SIG_IGN);
}

/* crun guards its binary against a container that would write to it
   through /proc/PID/exe (CVE-2019-5736): unless it already runs from a
   sealed memfd, every crun copies itself into one and executes itself
   again, loading its libraries twice. crest makes that sealed copy once
   (the same four seals crun checks for) and runs crun from it for all its
   calls: `crun state` 89 -> 26 ms in the VM under TCG, 11 -> 6 ms on the
   host. Not for a binary that is not ELF (a script needs its path), holds
   a file capability or is set-user-ID (a copy would not carry them):
   those run by path, and crun copies itself as it would. -1: by path. */
static int
runtime_memfd(const char *path)
{
  static int fd = -2;
  char magic[4];
  struct stat st;
  off_t off = 0;
  int in, out;

  if (fd != -2)
    return fd;
  fd = -1;
  in = open(path, O_RDONLY | O_CLOEXEC);
  if (in < 0)
    return -1;
  if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode) || (st.st_mode & (S_ISUID | S_ISGID))
      || pread(in, magic, 4, 0) != 4 || memcmp(magic, "\177ELF", 4) != 0
      || fgetxattr(in, "security.capability", NULL, 0) >= 0)
    {
      close(in);
      return -1;
    }
  out = memfd_create("crest:crun", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  while (out >= 0 && off < st.st_size)
    if (sendfile(out, in, &off, (size_t)(st.st_size - off)) <= 0)
      {
        close(out);
        out = -1;
      }
  close(in);
  if (out >= 0
      && fcntl(out, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) < 0)
    {
      close(out);
      out = -1;
    }
  /* Above the descriptors a spawn sets up (0 to 3) and the ones crest
     passes on. */
  if (out >= 0 && out < 64)
    {
      int high = fcntl(out, F_DUPFD_CLOEXEC, 64);
      close(out);
      out = high;
    }
  if (out < 0)
    crest_debug("crun runs by path (no sealed copy of `%s`: %s)", path, strerror(errno));
  fd = out;
  return fd;
}

/* Run crun (G's runtime) with FULL: from the sealed copy, else by path. */
static void
exec_runtime(struct crest_global *g, char **full, int memfd)
{
  if (memfd >= 0)
    fexecve(memfd, full, environ);
  execv(g->runtime, full);
}

int
crest_crun_exec(struct crest_global *g, const char *verb, char *const *argv, crest_error_t *err)
{
  cleanup_free char **full = build_argv(g, verb, argv);
  int memfd = runtime_memfd(g->runtime);
  debug_argv(full);
  fflush(NULL);
  ignore_sigpipe(verb);
  exec_runtime(g, full, memfd);
  return crest_error_errno(err, "cannot run crun `%s`", g->runtime);
}

pid_t
crest_crun_spawn(struct crest_global *g, const char *verb, char *const *argv,
                 const struct crest_crun_fds *fds, crest_error_t *err)
{
  cleanup_free char **full = build_argv(g, verb, argv);
  int memfd = runtime_memfd(g->runtime); /* once, before the fork */
  pid_t pid;

  debug_argv(full);
  fflush(NULL);
  pid = fork();
  if (pid < 0)
    return crest_error_errno(err, "fork to run crun `%s`", g->runtime);
  if (pid > 0)
    return pid;
  if (fds && fds->out >= 0 && dup2(fds->out, 1) < 0)
    _exit(127);
  if (fds && fds->err >= 0 && dup2(fds->err, 2) < 0)
    _exit(127);
  if (fds && fds->fd3 >= 0 && (fds->fd3 == 3 ? fcntl(3, F_SETFD, 0) : dup2(fds->fd3, 3)) < 0)
    _exit(127);
  ignore_sigpipe(verb);
  exec_runtime(g, full, memfd);
  /* The child can only say it here; its parent sees status 127. */
  crest_log(CREST_LOG_ERROR, "cannot run crun `%s`: %s", g->runtime, strerror(errno));
  _exit(127);
}

static volatile pid_t forward_to;

static void
forward_signal(int sig)
{
  if (forward_to > 0)
    kill(forward_to, sig);
}

int
crest_crun_wait(pid_t pid, bool forward)
{
  static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH };
  struct sigaction sa, old[ARRAY_SIZE(forwarded)];
  int status, r;
  size_t i;

  if (forward)
    {
      forward_to = pid;
      memset(&sa, 0, sizeof sa);
      sa.sa_handler = forward_signal;
      sa.sa_flags = SA_RESTART;
      sigemptyset(&sa.sa_mask);
      for (i = 0; i < ARRAY_SIZE(forwarded); i++)
        sigaction(forwarded[i], &sa, &old[i]);
    }
  do
    r = waitpid(pid, &status, 0);
  while (r < 0 && errno == EINTR);
  if (forward)
    {
      for (i = 0; i < ARRAY_SIZE(forwarded); i++)
        sigaction(forwarded[i], &old[i], NULL);
      forward_to = 0;
    }
  if (r < 0)
    {
      crest_debug("waitpid crun %d: %s", (int)pid, strerror(errno));
      return 125;
    }
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return 125;
}

int
crest_crun_run(struct crest_global *g, const char *verb, char *const *argv, crest_error_t *err)
{
  pid_t pid = crest_crun_spawn(g, verb, argv, NULL, err);
  if (pid < 0)
    return -1;
  return crest_crun_wait(pid, true);
}

/* crest's global options with crun's --root at ROOT: a container the OCI
   hook recorded lives under the root of the crun that started it (podman's,
   CRI-O's), not under crest's. G itself when ROOT is crest's; otherwise
   COPY, freed with crest_crun_root_release. */
struct crest_global *
crest_under_crun_root(struct crest_global *g, const char *root, struct crest_global *copy)
{
  if (!root || strcmp(root, g->crun_root) == 0)
    return g;
  *copy = *g;
  copy->crun_root = root;
  copy->crun_global_argv = xmalloc(sizeof(char *) * (size_t)(g->crun_global_argc + 1));
  for (int i = 0; i <= g->crun_global_argc; i++)
    copy->crun_global_argv[i]
        = g->crun_global_argv[i] && strncmp(g->crun_global_argv[i], "--root=", 7) == 0
              ? xasprintf("--root=%s", root)
              : g->crun_global_argv[i];
  return copy;
}

void
crest_crun_root_release(struct crest_global *g, struct crest_global *copy)
{
  if (g != copy)
    return;
  for (int i = 0; i < g->crun_global_argc; i++)
    if (strncmp(g->crun_global_argv[i], "--root=", 7) == 0)
      free(g->crun_global_argv[i]);
  free(g->crun_global_argv);
}
