/* crest restore: crun's flags; process mode without a container ID,
   otherwise the container glue. */
#include <config.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "crest.h"
#include "container-cr.h"
#include "engine.h"
#include "log.h"
#include "util.h"
#include "verbs.h"

enum
{
  OPT_IMAGE_PATH = 1000,
  OPT_WORK_PATH,
  OPT_PID_FILE,
  OPT_CONSOLE_SOCKET,
  OPT_NS_INIT,
  OPT_IGNORED,
};

static void
usage(FILE *f)
{
  fprintf(f, "Usage: crest restore [OPTION...] [CONTAINER]\n"
             "Restore a container, or without CONTAINER the process tree of the image\n"
             "(with the same PIDs, as children of crest).\n\n"
             "      --image-path=DIR      the image (default ./checkpoint)\n"
             "      --work-path=DIR       where to write logs\n"
             "  -b, --bundle=DIR          container bundle\n"
             "  -d, --detach              return once the tree runs\n"
             "      --pid-file=FILE       write the root's PID there\n"
             "      --console-socket=S    container console socket\n"
             "      --ns-init             process mode, as PID 1 of a new PID namespace: become\n"
             "                            the image's init (an image made with --ns-init)\n"
             "  -h, --help                show this help\n"
             "Process mode waits for the restored root and exits with its status,\n"
             "unless --detach.\n");
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
    CREST_CR_IGNORED_OPTIONS(OPT_IGNORED),
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  const char *image = "checkpoint", *work = NULL, *bundle = NULL, *pid_file = NULL, *console = NULL;
  bool detach = false, ns_init = false;
  int c;

  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+b:dh", opts, NULL)) != -1)
    switch (c)
      {
      case OPT_IMAGE_PATH:
        image = optarg;
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
      case OPT_IGNORED:
        break;
      case 'h':
        usage(stdout);
        return 0;
      default:
        return crest_error_make(err, 0, "restore: unknown option `%s`", argv[optind - 1]);
      }
  if (optind < argc)
    {
      struct crest_container_restore_opts co;
      if (optind + 1 != argc)
        return crest_error_make(err, 0, "restore: expected at most one container ID");
      memset(&co, 0, sizeof co);
      co.image_path = image;
      co.work_path = work;
      co.bundle = bundle;
      co.detach = detach;
      co.pid_file = pid_file;
      co.console_socket = console;
      return crest_container_restore(g, argv[optind], &co, err);
    }
  if (bundle || console)
    return crest_error_make(err, 0, "restore: --bundle and --console-socket need a container ID");
  {
    struct crest_restore_opts o;
    pid_t root = 0;
    int status = 0;
    memset(&o, 0, sizeof o);
    o.image_dir = image;
    o.work_dir = work;
    o.detach = detach;
    o.as_ns_init = ns_init;
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
