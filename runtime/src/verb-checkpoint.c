/* crest checkpoint: crun's flags; process mode with --pid PID, otherwise the
   container glue. */
#include <config.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
  OPT_LEAVE_RUNNING,
  OPT_PID,
  OPT_NS_INIT,
  OPT_IGNORED,
};

static void
usage(FILE *f)
{
  fprintf(f, "Usage: crest checkpoint [OPTION...] (--pid PID | CONTAINER)\n"
             "Checkpoint a container, or with --pid a process tree the user owns.\n\n"
             "      --image-path=DIR   where to write the image (default ./checkpoint)\n"
             "      --work-path=DIR    where to write logs\n"
             "      --leave-running    let the tree run on after the checkpoint\n"
             "      --pid=PID          process mode: checkpoint PID and its descendants\n"
             "      --ns-init          with --pid: PID is the init of its own PID namespace;\n"
             "                         record the PIDs seen inside it\n"
             "  -h, --help             show this help\n");
}

int
crest_verb_checkpoint(struct crest_global *g, int argc, char **argv, crest_error_t *err)
{
  static const struct option opts[] = {
    { "image-path", required_argument, NULL, OPT_IMAGE_PATH },
    { "work-path", required_argument, NULL, OPT_WORK_PATH },
    { "leave-running", no_argument, NULL, OPT_LEAVE_RUNNING },
    { "pid", required_argument, NULL, OPT_PID },
    { "ns-init", no_argument, NULL, OPT_NS_INIT },
    CREST_CR_IGNORED_OPTIONS(OPT_IGNORED),
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  const char *image = "checkpoint", *work = NULL;
  bool leave = false, ns_init = false;
  long pid = 0;
  int c;

  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1)
    switch (c)
      {
      case OPT_IMAGE_PATH:
        image = optarg;
        break;
      case OPT_WORK_PATH:
        work = optarg;
        break;
      case OPT_LEAVE_RUNNING:
        leave = true;
        break;
      case OPT_PID:
        {
          char *end;
          pid = strtol(optarg, &end, 10);
          if (*end || pid <= 0 || pid > (1 << 22))
            {
              return crest_error_make(err, 0, "checkpoint: bad PID `%s`", optarg);
            }
        }
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
        return crest_error_make(err, 0, "checkpoint: unknown option `%s`", argv[optind - 1]);
      }
  if (pid && optind < argc)
    return crest_error_make(err, 0, "checkpoint: give either --pid or a container ID, not both");
  if (!pid)
    {
      struct crest_container_checkpoint_opts co;
      if (optind + 1 != argc)
        return crest_error_make(err, 0, "checkpoint: expected one container ID (or --pid PID)");
      memset(&co, 0, sizeof co);
      co.image_path = image;
      co.work_path = work;
      co.leave_running = leave;
      return crest_container_checkpoint(g, argv[optind], &co, err);
    }
  {
    struct crest_dump_opts o;
    memset(&o, 0, sizeof o);
    o.image_dir = image;
    o.work_dir = work;
    o.leave_running = leave;
    o.root_is_ns_init = ns_init;
    if (crest_engine_dump((pid_t)pid, &o, err) < 0)
      return -1;
  }
  return 0;
}
