/* crest checkpoint: crun's flags (and podman's, CRI-O's); process mode with
   --pid PID, otherwise the container glue, and --export for one archive. */
#include <config.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cr-archive.h"
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
  OPT_EXPORT,
  OPT_COMPRESS,
  OPT_FILE_LOCKS,
  OPT_EXT_UNIX_SK,
  OPT_TCP_CLOSE,
  OPT_TCP_ESTABLISHED,
  OPT_SKIP_IN_FLIGHT,
  OPT_CGROUPS_MODE,
  OPT_PRE_DUMP,
  OPT_PARENT_PATH,
  OPT_SHELL_JOB,
  OPT_NOOP,
};

struct ckpt_args
{
  const char *image, *work, *export, *compress, *parent;
  bool leave, ns_init, image_given, file_locks, ext_unix_sk, pre_dump, shell_job, skip_in_flight;
  enum crest_tcp_mode tcp_mode;
  long pid;
};

static void
usage(FILE *f)
{
  fprintf(f, "Usage: crest checkpoint [OPTION...] (--pid PID | CONTAINER)\n"
             "Checkpoint a container, or with --pid a process tree the user owns.\n\n"
             "      --image-path=DIR   where to write the image (default ./checkpoint)\n"
             "      --work-path=DIR    where to write dump.log and a copy of stats-dump\n"
             "      --leave-running    let the tree run on after the checkpoint\n"
             "      --export=FILE      also write the checkpoint as one archive FILE\n"
             "      --compress=ALG     the archive's compression: none, gzip, zstd (default)\n"
             "      --file-locks       save and restore the file locks a container holds\n"
             "      --manage-cgroups-mode=soft|full|strict|ignore   accepted; crest never\n"
             "                         dumps cgroups\n"
             "      --ext-unix-sk      a unix socket whose peer is outside the tree is\n"
             "                         connected again to the peer's name at restore\n"
             "      --tcp-close        restore established TCP connections closed\n"
             "      --tcp-established  restore established TCP connections (TCP_REPAIR;\n"
             "                         see crest(1) for where the kernel allows it)\n"
             "      --skip-in-flight   leave out TCP connections a listener has not\n"
             "                         accepted yet (reset when the tree ends)\n"
             "      --shell-job        with --pid: the tree's controlling terminal is outside\n"
             "                         it (a job of a shell); a restore from a terminal\n"
             "                         gives it that one (a container's: always handled)\n"
             "      --pre-dump         copy only the memory, while the tree runs on\n"
             "      --parent-path=DIR  take the pages not written since the pre-dump DIR\n"
             "                         from it (relative to the image path, or absolute)\n"
             "      --pid=PID          process mode: checkpoint PID and its descendants\n"
             "      --ns-init          with --pid: PID is the init of its own PID namespace;\n"
             "                         record the PIDs seen inside it\n"
             "  -h, --help             show this help\n");
}

int
crest_check_cgroups_mode(const char *verb, const char *mode, crest_error_t *err)
{
  static const char *const ok[] = { "soft", "full", "strict", "ignore" };
  for (size_t i = 0; i < ARRAY_SIZE(ok); i++)
    if (strcmp(mode, ok[i]) == 0)
      return 0;
  return crest_error_make(err, EINVAL,
                          "%s: --manage-cgroups-mode `%s`: expected soft, full, strict or ignore",
                          verb, mode);
}

int
crest_open_work_log(const char *verb, const char *dir, const char *log, crest_error_t *err)
{
  cleanup_free char *path = xasprintf("%s/%s", dir, log);
  if (mkdir_p(dir, 0700, err) < 0 || crest_log_work_file(path, err) < 0)
    return crest_error_wrap(err, "%s: --work-path", verb);
  return 0;
}

static int
parse(int argc, char **argv, struct ckpt_args *a, crest_error_t *err)
{
  static const struct option opts[] = {
    { "image-path", required_argument, NULL, OPT_IMAGE_PATH },
    { "work-path", required_argument, NULL, OPT_WORK_PATH },
    { "leave-running", no_argument, NULL, OPT_LEAVE_RUNNING },
    { "pid", required_argument, NULL, OPT_PID },
    { "ns-init", no_argument, NULL, OPT_NS_INIT },
    { "export", required_argument, NULL, OPT_EXPORT },
    { "compress", required_argument, NULL, OPT_COMPRESS },
    { "file-locks", no_argument, NULL, OPT_FILE_LOCKS },
    /* before the no-op table, which also names it: getopt_long takes the first */
    { "ext-unix-sk", no_argument, NULL, OPT_EXT_UNIX_SK },
    /* Before CREST_CR_NOOP_OPTIONS, which restore keeps: the first exact
       match wins. */
    { "tcp-close", no_argument, NULL, OPT_TCP_CLOSE },
    { "tcp-established", no_argument, NULL, OPT_TCP_ESTABLISHED },
    { "skip-in-flight", no_argument, NULL, OPT_SKIP_IN_FLIGHT },
    { "manage-cgroups-mode", required_argument, NULL, OPT_CGROUPS_MODE },
    { "pre-dump", no_argument, NULL, OPT_PRE_DUMP },
    { "parent-path", required_argument, NULL, OPT_PARENT_PATH },
    /* before the no-op table (restore's): process mode uses it */
    { "shell-job", no_argument, NULL, OPT_SHELL_JOB },
    CREST_CR_NOOP_OPTIONS(OPT_NOOP),
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  int c;
  char *end;

  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1)
    switch (c)
      {
      case OPT_IMAGE_PATH:
        a->image = optarg;
        a->image_given = true;
        break;
      case OPT_WORK_PATH:
        a->work = optarg;
        break;
      case OPT_LEAVE_RUNNING:
        a->leave = true;
        break;
      case OPT_PID:
        a->pid = strtol(optarg, &end, 10);
        if (*end || a->pid <= 0 || a->pid > (1 << 22))
          return crest_error_make(err, 0, "checkpoint: bad PID `%s`", optarg);
        break;
      case OPT_NS_INIT:
        a->ns_init = true;
        break;
      case OPT_EXPORT:
        a->export = optarg;
        break;
      case OPT_COMPRESS:
        if (strcmp(optarg, "none") && strcmp(optarg, "gzip") && strcmp(optarg, "zstd"))
          return crest_error_make(
              err, EINVAL, "checkpoint: --compress `%s`: expected none, gzip or zstd", optarg);
        a->compress = optarg;
        break;
      case OPT_EXT_UNIX_SK:
        a->ext_unix_sk = true;
        break;
      case OPT_FILE_LOCKS:
        /* Without it a container holding a lock is refused, as CRIU does
           (container-cr.c); with it the engine saves and restores them. */
        a->file_locks = true;
        break;
      case OPT_TCP_CLOSE:
      case OPT_TCP_ESTABLISHED:
        if (a->tcp_mode != CREST_TCP_REFUSE)
          return crest_error_make(err, EINVAL,
                                  "checkpoint: give --tcp-close or --tcp-established, not both");
        a->tcp_mode = c == OPT_TCP_CLOSE ? CREST_TCP_CLOSE : CREST_TCP_ESTABLISHED;
        break;
      case OPT_SKIP_IN_FLIGHT:
        a->skip_in_flight = true;
        break;
      case OPT_CGROUPS_MODE:
        if (crest_check_cgroups_mode("checkpoint", optarg, err) < 0)
          return -1;
        break;
      case OPT_PRE_DUMP:
        a->pre_dump = true;
        break;
      case OPT_PARENT_PATH:
        if (!*optarg)
          return crest_error_make(err, EINVAL, "checkpoint: --parent-path: empty path");
        a->parent = optarg;
        break;
      case OPT_SHELL_JOB:
        a->shell_job = true;
        break;
      case OPT_NOOP:
        break;
      case 'h':
        usage(stdout);
        return 1;
      default:
        return crest_error_make(err, 0, "checkpoint: unknown option `%s`", argv[optind - 1]);
      }
  return 0;
}

/* --export: the image goes to --image-path when given (and stays), else to
   a directory beside the archive that is removed once the archive is
   written. */
static int
checkpoint_export(struct crest_global *g, const char *id, struct ckpt_args *a,
                  struct crest_container_checkpoint_opts *co, crest_error_t *err)
{
  cleanup_free char *tmp = a->image_given ? NULL : xasprintf("%s.img-%d", a->export, (int)getpid());
  struct crest_checkpoint_info info;
  crest_error_t e = NULL;
  int rc;

  if (access(a->export, F_OK) == 0)
    return crest_error_make(err, EEXIST, "container `%s`: checkpoint: --export `%s` exists", id,
                            a->export);
  co->image_path = tmp ? tmp : a->image;
  co->info = &info;
  if (crest_container_checkpoint(g, id, co, err) < 0)
    return -1;
  rc = crest_archive_export(a->export, a->compress ? a->compress : "zstd", id, co->image_path,
                            &info, err);
  crest_checkpoint_info_free(&info);
  if (rc < 0)
    {
      crest_error_wrap(err, "container `%s`: checkpoint", id);
      if (tmp && !a->leave)
        {
          /* The tree is gone: its image must not be. */
          crest_error_t why = *err;
          cleanup_free char *text = crest_error_text(why);
          *err = NULL;
          crest_error_release(&why);
          return crest_error_make(err, EIO, "%s (the image is kept in `%s`)", text, tmp);
        }
    }
  if (tmp && (rc == 0 || a->leave))
    {
      remove_tree(tmp, &e);
      crest_error_release(&e);
    }
  return rc;
}

int
crest_verb_checkpoint(struct crest_global *g, int argc, char **argv, crest_error_t *err)
{
  struct ckpt_args a = { .image = "checkpoint" };
  int r = parse(argc, argv, &a, err);

  if (r != 0)
    return r < 0 ? -1 : 0;
  if (a.pid && optind < argc)
    return crest_error_make(err, 0, "checkpoint: give either --pid or a container ID, not both");
  if (a.work && crest_open_work_log("checkpoint", a.work, "dump.log", err) < 0)
    return -1;
  if (!a.pid)
    {
      struct crest_container_checkpoint_opts co;
      if (optind + 1 != argc)
        return crest_error_make(err, 0, "checkpoint: expected one container ID (or --pid PID)");
      memset(&co, 0, sizeof co);
      co.image_path = a.image;
      co.work_path = a.work;
      co.leave_running = a.leave;
      co.file_locks = a.file_locks;
      co.ext_unix_sk = a.ext_unix_sk;
      co.tcp_mode = a.tcp_mode;
      co.skip_in_flight = a.skip_in_flight;
      co.pre_dump = a.pre_dump;
      co.parent_path = a.parent;
      if (a.export && (a.pre_dump || a.parent))
        return crest_error_make(err, ENOTSUP,
                                "checkpoint: --export with --%s: an archive of a chain of images "
                                "is not supported yet",
                                a.pre_dump ? "pre-dump" : "parent-path");
      crest_debug("checkpoint of container `%s` starts", argv[optind]);
      if (a.export)
        r = checkpoint_export(g, argv[optind], &a, &co, err);
      else
        r = crest_container_checkpoint(g, argv[optind], &co, err);
      if (r == 0)
        crest_debug("checkpoint of container `%s` done", argv[optind]);
      return r;
    }
  if (a.export)
    return crest_error_make(err, EINVAL, "checkpoint: --export needs a container, not --pid");
  {
    struct crest_dump_opts o;
    memset(&o, 0, sizeof o);
    o.image_dir = a.image;
    o.work_dir = a.work;
    o.leave_running = a.leave;
    o.root_is_ns_init = a.ns_init;
    o.ext_unix_sk = a.ext_unix_sk;
    o.tcp_mode = a.tcp_mode;
    o.skip_in_flight = a.skip_in_flight;
    o.pre_dump = a.pre_dump;
    o.parent_path = a.parent;
    o.shell_job = a.shell_job;
    if (crest_engine_dump((pid_t)a.pid, &o, err) < 0)
      return -1;
  }
  return 0;
}
