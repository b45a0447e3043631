/* crest restore: crun's flags; process mode without a container ID,
   otherwise the container glue. */
#include <config.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include "cr-archive.h"
#include "crest.h"
#include "container-cr.h"
#include "engine.h"
#include "log.h"
#include "state.h"
#include "util.h"
#include "verbs.h"

enum
{
  OPT_IMAGE_PATH = 1000,
  OPT_WORK_PATH,
  OPT_PID_FILE,
  OPT_CONSOLE_SOCKET,
  OPT_NS_INIT,
  OPT_IMPORT,
  OPT_IMPORT_LIMIT,
  OPT_NO_PIVOT,
  OPT_NO_NEW_KEYRING,
  OPT_LSM_PROFILE,
  OPT_LSM_MOUNT_CONTEXT,
  OPT_CGROUPS_MODE,
  OPT_NOOP,
  OPT_LAZY_PAGES,
};

static void
usage(FILE *f)
{
  fprintf(f, "Usage: crest restore [OPTION...] [CONTAINER]\n"
             "Restore a container, or without CONTAINER the process tree of the image\n"
             "(with the same PIDs, as children of crest).\n\n"
             "      --image-path=DIR      the image (default ./checkpoint)\n"
             "      --work-path=DIR       where to write restore.log (and with -d\n"
             "                            stats-restore)\n"
             "      --import=FILE         restore from an archive of checkpoint --export\n"
             "      --import-limit=SIZE   what the archive may expand to (default 16G, or\n"
             "                            $CREST_IMPORT_LIMIT; K, M, G, T suffixes)\n"
             "  -b, --bundle=DIR          container bundle\n"
             "  -d, --detach              return once the tree runs\n"
             "      --pid-file=FILE       write the root's PID there\n"
             "      --console-socket=S    container console socket\n"
             "      --no-pivot, --no-new-keyring   passed to crun run\n"
             "      --lsm-profile=TYPE:VALUE, --lsm-mount-context=LABEL   must be the\n"
             "                            checkpointed config's (crun applies that)\n"
             "      --file-locks, --tcp-established, --tcp-close, --ext-unix-sk, --shell-job,\n"
             "      --manage-cgroups-mode=MODE   accepted (see crest(1))\n"
             "      --lazy-pages          process mode: run the tree before its private\n"
             "                            anonymous memory is in; crest fills each page on\n"
             "                            first touch (userfaultfd) and the rest in the\n"
             "                            background, and stays the tree's tracer until\n"
             "                            then (with -d, a child of crest does); if crest\n"
             "                            dies meanwhile the tree is killed (Linux 5.11)\n"
             "      --ns-init             process mode, as PID 1 of a new PID namespace: become\n"
             "                            the image's init (an image made with --ns-init)\n"
             "  -h, --help                show this help\n"
             "Process mode waits for the restored root and exits with its status,\n"
             "unless --detach.\n");
}

/* A container restore; detached with a --work-path (conmon's line), it
   leaves stats-restore there, which podman's restore --print-stats reads.
   The restore stands even if that file cannot be written. */
static int
container_restore(struct crest_global *g, const char *id,
                  const struct crest_container_restore_opts *co, crest_error_t *err)
{
  struct timespec t0, t1;
  crest_error_t e = NULL;
  int rc;

  clock_gettime(CLOCK_MONOTONIC, &t0);
  rc = crest_container_restore(g, id, co, err);
  if (rc != 0 || !co->detach || !co->work_path)
    return rc;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (crest_write_stats_restore(co->work_path, co->image_path ? co->image_path : "checkpoint",
                                (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000
                                    + (uint64_t)(t1.tv_nsec - t0.tv_nsec) / 1000,
                                &e)
      < 0)
    {
      cleanup_free char *why = crest_error_text(e);
      crest_warn("container `%s`: restore: stats-restore not written in --work-path: %s", id, why);
      crest_error_release(&e);
    }
  return rc;
}

/* --import: unpack and check the archive, restore from its image, then
   remove the unpacked copy (the restored tree no longer reads it). */
static int
restore_import(struct crest_global *g, const char *id, const char *file, const char *limit_arg,
               struct crest_container_restore_opts *co, crest_error_t *err)
{
  cleanup_free char *dir = NULL, *image = NULL;
  const char *env = getenv("CREST_IMPORT_LIMIT");
  uint64_t limit = CREST_IMPORT_LIMIT_DEFAULT;
  crest_error_t e = NULL;
  int rc;

  /* The flag wins over the environment (podman and CRI-O pass no flag of
     this kind: the variable reaches crest through them). */
  if (limit_arg && crest_parse_size(limit_arg, &limit) < 0)
    return crest_error_make(err, EINVAL, "restore: --import-limit `%s`: expected a size (16G)",
                            limit_arg);
  if (!limit_arg && env && *env && crest_parse_size(env, &limit) < 0)
    return crest_error_make(err, EINVAL, "restore: CREST_IMPORT_LIMIT `%s`: expected a size (16G)",
                            env);

  if (crest_validate_id(id, err) < 0)
    return -1;
  if (crest_crun_has(g, NULL, id))
    return crest_error_make(err, EEXIST, "container `%s`: restore: a container with this ID exists",
                            id);
  if (crest_archive_import(g, file, id, co->bundle ? co->bundle : ".", limit, &dir, err) < 0)
    return crest_error_wrap(err, "container `%s`: restore", id);
  image = xasprintf("%s/checkpoint", dir);
  co->image_path = image;
  rc = container_restore(g, id, co, err);
  remove_tree(dir, &e);
  crest_error_release(&e);
  return rc;
}

int
crest_verb_restore(struct crest_global *g, int argc, char **argv, crest_error_t *err)
{
  static const struct option opts[] = {
    { "image-path", required_argument, NULL, OPT_IMAGE_PATH },
    { "work-path", required_argument, NULL, OPT_WORK_PATH },
    { "bundle", required_argument, NULL, 'b' },
    { "detach", no_argument, NULL, 'd' },
    { "pid-file", required_argument, NULL, OPT_PID_FILE },
    { "console-socket", required_argument, NULL, OPT_CONSOLE_SOCKET },
    { "ns-init", no_argument, NULL, OPT_NS_INIT },
    { "lazy-pages", no_argument, NULL, OPT_LAZY_PAGES },
    { "import", required_argument, NULL, OPT_IMPORT },
    { "import-limit", required_argument, NULL, OPT_IMPORT_LIMIT },
    { "no-pivot", no_argument, NULL, OPT_NO_PIVOT },
    { "no-new-keyring", no_argument, NULL, OPT_NO_NEW_KEYRING },
    { "lsm-profile", required_argument, NULL, OPT_LSM_PROFILE },
    { "lsm-mount-context", required_argument, NULL, OPT_LSM_MOUNT_CONTEXT },
    { "manage-cgroups-mode", required_argument, NULL, OPT_CGROUPS_MODE },
    /* Nothing to restore: the checkpoint refused any lock. */
    { "file-locks", no_argument, NULL, OPT_NOOP },
    CREST_CR_NOOP_OPTIONS(OPT_NOOP),
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  const char *image = "checkpoint", *work = NULL, *bundle = NULL, *pid_file = NULL, *console = NULL;
  const char *import = NULL, *import_limit = NULL, *lsm_profile = NULL, *lsm_mount = NULL;
  bool detach = false, ns_init = false, lazy = false, no_pivot = false, no_keyring = false,
       image_given = false;
  int c;

  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+b:dh", opts, NULL)) != -1)
    switch (c)
      {
      case OPT_IMAGE_PATH:
        image = optarg;
        image_given = true;
        break;
      case OPT_IMPORT:
        import = optarg;
        break;
      case OPT_IMPORT_LIMIT:
        import_limit = optarg;
        break;
      case OPT_NO_PIVOT:
        no_pivot = true;
        break;
      case OPT_NO_NEW_KEYRING:
        no_keyring = true;
        break;
      case OPT_LSM_PROFILE:
        lsm_profile = optarg;
        break;
      case OPT_LSM_MOUNT_CONTEXT:
        lsm_mount = optarg;
        break;
      case OPT_CGROUPS_MODE:
        if (crest_check_cgroups_mode("restore", optarg, err) < 0)
          return -1;
        break;
      case OPT_WORK_PATH:
        work = optarg;
        break;
      case 'b':
        bundle = optarg;
        break;
      case 'd':
        detach = true;
        break;
      case OPT_PID_FILE:
        pid_file = optarg;
        break;
      case OPT_CONSOLE_SOCKET:
        console = optarg;
        break;
      case OPT_NS_INIT:
        ns_init = true;
        break;
      case OPT_LAZY_PAGES:
        lazy = true;
        break;
      case OPT_NOOP:
        break;
      case 'h':
        usage(stdout);
        return 0;
      default:
        return crest_error_make(err, 0, "restore: unknown option `%s`", argv[optind - 1]);
      }
  if (work && crest_open_work_log("restore", work, "restore.log", err) < 0)
    return -1;
  if (optind < argc)
    {
      struct crest_container_restore_opts co;
      if (optind + 1 != argc)
        return crest_error_make(err, 0, "restore: expected at most one container ID");
      if (lazy)
        return crest_error_make(err, 0,
                                "restore --lazy-pages: only in process mode (not for a container "
                                "yet)");
      if (import && image_given)
        return crest_error_make(err, EINVAL, "restore: give --import or --image-path, not both");
      memset(&co, 0, sizeof co);
      co.image_path = image;
      co.work_path = work;
      co.bundle = bundle;
      co.detach = detach;
      co.pid_file = pid_file;
      co.console_socket = console;
      co.no_pivot = no_pivot;
      co.no_new_keyring = no_keyring;
      co.lsm_profile = lsm_profile;
      co.lsm_mount_context = lsm_mount;
      crest_debug("restore of container `%s` starts", argv[optind]);
      if (import_limit && !import)
        return crest_error_make(err, EINVAL, "restore: --import-limit needs --import");
      return import ? restore_import(g, argv[optind], import, import_limit, &co, err)
                    : container_restore(g, argv[optind], &co, err);
    }
  if (bundle || console || import)
    return crest_error_make(err, 0,
                            "restore: --bundle, --console-socket and --import need a container ID");
  {
    struct crest_restore_opts o;
    pid_t root = 0;
    int status = 0;
    memset(&o, 0, sizeof o);
    o.image_dir = image;
    o.work_dir = work;
    o.detach = detach;
    o.as_ns_init = ns_init;
    o.lazy_pages = lazy;
    o.pid_file = pid_file;
    o.stdio_fds[0] = o.stdio_fds[1] = o.stdio_fds[2] = -1;
    o.root_status = &status;
    if (crest_engine_restore(&o, &root, err) < 0)
      return -1;
    if (detach)
      return 0;
    if (WIFEXITED(status))
      return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
  }
  (void)g;
}
