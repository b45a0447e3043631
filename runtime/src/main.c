/* crest: an OCI runtime front end. The container lifecycle is crun's; crest
   adds the CAP_CHECKPOINT_RESTORE grant and (with its engine) checkpoint and
   restore of rootless containers. */
#include <config.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "crest.h"
#include "oci-config.h"
#include "log.h"
#include "state.h"
#include "state-root.h"
#include "testhook.h"
#include "util.h"
#include "verbs.h"

struct verb
{
  const char *name;
  crest_verb_fn fn;
  const char *help;
};

/* The whole CLI at a glance. */
static const struct verb verbs[] = {
  { "create", crest_verb_create,
    "create a container (crun), optionally granting CAP_CHECKPOINT_RESTORE" },
  { "run", crest_verb_run,
    "create and start a container (crun), optionally granting CAP_CHECKPOINT_RESTORE" },
  { "start", crest_verb_delegate, "start a created container (crun)" },
  { "exec", crest_verb_delegate, "run a process in a running container (crun)" },
  { "kill", crest_verb_delegate, "send a signal to the container's init process (crun)" },
  { "delete", crest_verb_delete, "remove a container and crest's state for it (crun)" },
  { "state", crest_verb_delegate, "print the state of a container (crun)" },
  { "list", crest_verb_list, "list known containers (crun)" },
  { "ps", crest_verb_delegate, "show the processes of a container (crun)" },
  { "pause", crest_verb_delegate, "pause every process of a container (crun)" },
  { "resume", crest_verb_delegate, "resume a paused container (crun)" },
  { "update", crest_verb_delegate, "update a container's resource limits (crun)" },
  { "spec", crest_verb_delegate, "write a template config.json (crun)" },
  { "features", crest_verb_delegate, "print the features crun supports (crun)" },
  /* crest's own verbs (checkpoint, restore) are listed below this line. */
  { "checkpoint", crest_verb_checkpoint,
    "checkpoint a container, or with --pid a process tree, into an image" },
  { "restore", crest_verb_restore, "restore a container, or a process tree, from an image" },
};

static void
usage(FILE *f)
{
  size_t i;
  fprintf(f, "Usage: crest [GLOBAL OPTION...] COMMAND [OPTION...] [ID]\n\n"
             "An OCI runtime front end over crun that checkpoints and restores rootless\n"
             "containers with CAP_CHECKPOINT_RESTORE, never with root.\n\nCommands:\n");
  for (i = 0; i < ARRAY_SIZE(verbs); i++)
    fprintf(f, "  %-11s %s\n", verbs[i].name, verbs[i].help);
  fprintf(f,
          "\nGlobal options:\n"
          "  --root=DIR              state directory (default $XDG_RUNTIME_DIR/crest rootless,\n"
          "                          /run/crest as root)\n"
          "  --runtime=PATH          the crun binary to delegate to (default %s)\n"
          "  --log=FILE              write log messages to FILE\n"
          "  --log-format=FORMAT     text (default) or json\n"
          "  --debug                 verbose output\n"
          "  --rootless=VALUE        true, false or auto (default)\n"
          "  --cgroup-manager=MGR    passed to crun (cgroupfs, systemd, disabled)\n"
          "  --systemd-cgroup        passed to crun\n"
          "  -v, --version           print crest's, crun's and the kernel's versions\n"
          "  -h, --help              print this help\n\n"
          "create and run also take --cap-checkpoint-restore=add|only (or the\n"
          "annotation " CREST_GRANT_ANNOTATION " in config.json). See crest(1).\n",
          CRUN_PATH);
}

static char *
crun_version(const char *runtime)
{
  char line[256] = "";
  cleanup_free char *cmd = xasprintf("'%s' --version 2>/dev/null", runtime);
  FILE *p;
  if (strchr(runtime, '\''))
    return xstrdup("unknown");
  p = popen(cmd, "r");
  if (p == NULL)
    return xstrdup("unknown");
  if (fgets(line, sizeof line, p) == NULL)
    line[0] = '\0';
  if (pclose(p) != 0 || line[0] == '\0')
    return xstrdup("not runnable");
  line[strcspn(line, "\n")] = '\0';
  return xstrdup(line);
}

static int
print_version(struct crest_global *g)
{
  cleanup_error crest_error_t err = NULL;
  cleanup_free char *cv = crun_version(g->runtime);
  cleanup_free char *last = NULL;
  int has = crest_kernel_has_cap_cr(NULL, &err);

  printf("crest version %s\n", PACKAGE_VERSION);
  printf("crun: %s (%s)\n", g->runtime, cv);
  if (has < 0)
    printf("kernel: cannot tell whether CAP_CHECKPOINT_RESTORE is known\n");
  else
    {
      if (read_file("/proc/sys/kernel/cap_last_cap", &last, NULL, 64, &err) < 0)
        last = xstrdup("?");
      last[strcspn(last, "\n")] = '\0';
      printf("kernel: CAP_CHECKPOINT_RESTORE %s (cap_last_cap %s)\n", has ? "known" : "NOT known",
             last);
    }
  /* Said only by a test build, which tests look for before using a knob. */
  if (crest_test_hooks_built())
    printf("test hooks: on (CREST_FAULT and the other knobs of testhook.h are honoured)\n");
  return 0;
}

static void
push_arg(struct crest_global *g, char *s)
{
  g->crun_global_argv = xrealloc(g->crun_global_argv, sizeof(char *) * (g->crun_global_argc + 2));
  g->crun_global_argv[g->crun_global_argc++] = s;
  g->crun_global_argv[g->crun_global_argc] = NULL;
}

static void
global_free(struct crest_global *g)
{
  int i;
  for (i = 0; i < g->crun_global_argc; i++)
    free(g->crun_global_argv[i]);
  free(g->crun_global_argv);
  free((char *)g->root);
  free((char *)g->crun_root);
}

enum
{
  OPT_ROOT = 256,
  OPT_RUNTIME,
  OPT_LOG,
  OPT_LOG_FORMAT,
  OPT_DEBUG,
  OPT_ROOTLESS,
  OPT_CGROUP_MANAGER,
  OPT_SYSTEMD_CGROUP,
};

int
main(int argc, char **argv)
{
  static const struct option opts[] = {
    { "root", required_argument, NULL, OPT_ROOT },
    { "runtime", required_argument, NULL, OPT_RUNTIME },
    { "log", required_argument, NULL, OPT_LOG },
    { "log-format", required_argument, NULL, OPT_LOG_FORMAT },
    { "debug", no_argument, NULL, OPT_DEBUG },
    { "rootless", required_argument, NULL, OPT_ROOTLESS },
    { "cgroup-manager", required_argument, NULL, OPT_CGROUP_MANAGER },
    { "systemd-cgroup", no_argument, NULL, OPT_SYSTEMD_CGROUP },
    { "version", no_argument, NULL, 'v' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  struct crest_global g = { .runtime = CRUN_PATH, .log_format = "text", .rootless = -1 };
  cleanup_error crest_error_t err = NULL;
  const char *rootless_arg = NULL, *cgroup_manager = NULL;
  bool want_version = false, systemd_cgroup = false;
  char *root_arg = NULL;
  const char *verb;
  size_t i;
  int c, status;

  opterr = 0;
  while ((c = getopt_long(argc, argv, "+vVh?", opts, NULL)) != -1)
    {
      switch (c)
        {
        case OPT_ROOT:
          root_arg = optarg;
          break;
        case OPT_RUNTIME:
          g.runtime = optarg;
          break;
        case OPT_LOG:
          g.log = optarg;
          break;
        case OPT_LOG_FORMAT:
          g.log_format = optarg;
          break;
        case OPT_DEBUG:
          g.debug = true;
          break;
        case OPT_ROOTLESS:
          rootless_arg = optarg;
          break;
        case OPT_CGROUP_MANAGER:
          cgroup_manager = optarg;
          break;
        case OPT_SYSTEMD_CGROUP:
          systemd_cgroup = true;
          break;
        case 'v':
        case 'V':
          want_version = true;
          break;
        case 'h':
          usage(stdout);
          return 0;
        default:
          if (optopt && optopt < 256)
            fprintf(stderr, "crest: unknown global option `-%c` (see crest --help)\n", optopt);
          else
            fprintf(stderr, "crest: unknown or incomplete global option `%s` (see crest --help)\n",
                    argv[optind - 1]);
          return 1;
        }
    }

  /* From here on every error reaches stderr and --log: through ERR, which
     the end of main() prints once. */
  if (crest_log_init(g.log, g.log_format, g.debug) < 0)
    return 1;

  if (rootless_arg == NULL || strcmp(rootless_arg, "auto") == 0)
    g.rootless = -1;
  else if (strcmp(rootless_arg, "true") == 0)
    g.rootless = 1;
  else if (strcmp(rootless_arg, "false") == 0)
    g.rootless = 0;
  else
    {
      crest_error_make(&err, 0, "invalid --rootless value `%s` (expected true, false or auto)",
                       rootless_arg);
      crest_error_report(&err);
      return 1;
    }
  g.is_rootless = g.rootless == 1 || (g.rootless == -1 && crest_rootless_detect());
  g.root = root_arg ? xstrdup(root_arg) : crest_default_state_root(g.is_rootless);
  if (g.root[0] != '/')
    {
      char cwd[PATH_MAX];
      if (getcwd(cwd, sizeof cwd) == NULL)
        {
          crest_error_errno(&err, "--root `%s`: getcwd", g.root);
          crest_error_report(&err);
          return 1;
        }
      char *abs = xasprintf("%s/%s", cwd, g.root);
      free((char *)g.root);
      g.root = abs;
    }
  /* crun gets a directory of its own under crest's root, so that crun's
     container directories and crest's state never collide. */
  g.crun_root = xasprintf("%s/crun", g.root);

  push_arg(&g, xasprintf("--root=%s", g.crun_root));
  if (g.log)
    push_arg(&g, xasprintf("--log=%s", g.log));
  if (strcmp(g.log_format, "text") != 0)
    push_arg(&g, xasprintf("--log-format=%s", g.log_format));
  if (g.debug)
    push_arg(&g, xstrdup("--debug"));
  if (rootless_arg)
    push_arg(&g, xasprintf("--rootless=%s", rootless_arg));
  if (cgroup_manager)
    push_arg(&g, xasprintf("--cgroup-manager=%s", cgroup_manager));
  if (systemd_cgroup)
    push_arg(&g, xstrdup("--systemd-cgroup"));

  if (want_version)
    status = print_version(&g);
  else if (optind >= argc)
    {
      usage(stderr);
      status = 1;
    }
  else
    {
      verb = argv[optind];
      for (i = 0; i < ARRAY_SIZE(verbs); i++)
        if (strcmp(verbs[i].name, verb) == 0)
          break;
      if (i < ARRAY_SIZE(verbs))
        status = verbs[i].fn(&g, argc - optind, argv + optind, &err);
      else
        status = crest_error_make(&err, 0, "unknown command `%s` (see crest --help)", verb);
    }
  if (status < 0)
    {
      /* The one place a verb's error is printed. */
      crest_error_report(&err);
      status = 1;
    }
  global_free(&g);
  return status;
}
