/* crest-restorer: the process crun starts in a restoring container.
 *
 *   crest-restorer IMAGE_DIR cr-granted=0|1
 *
 * crest's restore config makes this static program the container's process,
 * bind-mounted read-only with the image. It runs as PID 1 of the container's
 * new PID namespace, holding the checkpointed container's capabilities plus
 * CAP_CHECKPOINT_RESTORE, and hands over to the engine, which rebuilds the
 * tree below it and then turns this very process into the checkpointed init
 * (each restored task drops CAP_CHECKPOINT_RESTORE unless it held it).
 *
 * How crest, outside, follows it: it writes "R" and a newline to descriptor
 * 3 (the sync pipe crest passed through crun's --preserve-fds) as soon as it
 * runs; while it works this process is named "crest-restoring" (its comm).
 * Once every task of the tree runs restored, the engine's tracer writes "D"
 * and a newline there (the init's name changes earlier, while the tree is
 * still being finished and may yet fail). On failure it writes one line to
 * the sync pipe (to stderr when there is none), and exits 1: crun then
 * tears the container down. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine.h"
#include "error.h"
#include "testhook.h"

#define SYNC_FD 3
/* crest's sync channel: a unix socket (a pipe from older crests). */
#define SYNC_OK(m) (S_ISSOCK(m) || S_ISFIFO(m))

/* To crest through the sync pipe, which prints it as its one line; to
   stderr only without it (started by hand): the container's stderr is the
   workload's, and the line would otherwise be printed twice. */
static void
report(const char *text)
{
  struct stat st;
  if (fstat(SYNC_FD, &st) == 0 && SYNC_OK(st.st_mode))
    dprintf(SYNC_FD, "%s\n", text);
  else
    fprintf(stderr, "crest-restorer: %s\n", text);
}

/* "FLAGS:HEX" (crest's seccomp-profile.c) into O's seccomp program. */
static int
seccomp_arg(const char *s, struct crest_restore_opts *o)
{
  char *end;
  unsigned long flags = strtoul(s, &end, 10);
  size_t n;
  unsigned char *prog;
  if (*end != ':')
    return -1;
  s = end + 1;
  n = strlen(s) / 2;
  if (strlen(s) % 2 || n == 0 || n % 8 || n > 4096 * 8)
    return -1;
  prog = malloc(n);
  if (!prog)
    return -1;
  for (size_t i = 0; i < n; i++)
    {
      char h[3] = { s[2 * i], s[2 * i + 1], 0 };
      prog[i] = (unsigned char)strtoul(h, &end, 16);
      if (*end)
        {
          free(prog);
          return -1;
        }
    }
  o->seccomp_prog = prog;
  o->seccomp_len = n;
  o->seccomp_flags = (unsigned int)flags;
  return 0;
}

int
main(int argc, char **argv)
{
  struct crest_restore_opts o;
  crest_error_t err = NULL;
  pid_t root = 0;
  char *text;

  prctl(PR_SET_NAME, "crest-restoring", 0, 0, 0);
  /* The sync pipe must not outlive this process's own use of it. */
  fcntl(SYNC_FD, F_SETFD, FD_CLOEXEC);
  {
    /* "R": crest now knows the container's init is this program (crun's
       own processes before it have other names), named as above. */
    struct stat st;
    if (fstat(SYNC_FD, &st) == 0 && SYNC_OK(st.st_mode) && write(SYNC_FD, "R\n", 2) != 2)
      return 2;
  }
  if (argc < 3 || argc > 4 + 16 || strncmp(argv[2], "cr-granted=", 11) != 0)
    {
      report("usage: crest-restorer IMAGE_DIR cr-granted=0|1[,setpcap-added] [seccomp=FLAGS:HEX] "
             "[PARENT_DIR...] "
             "(started by `crest restore`, not by hand)");
      return 2;
    }
  if (getpid() != 1)
    {
      char line[256];
      snprintf(line, sizeof line,
               "restore of image `%s`: must run as PID 1 of a new PID namespace (running as %d)",
               argv[1], (int)getpid());
      report(line);
      return 2;
    }
  {
    /* Test knob (testhook.h, docs/restore.md): `crest restore` passes it
       on when it has it, so that a suite can read this process's
       capabilities while it works. Bounded to ten seconds. */
    const char *p = crest_test_knob("CREST_RESTORER_PAUSE_MS");
    long ms = p ? strtol(p, NULL, 10) : 0;
    if (ms > 0)
      usleep((useconds_t)(ms > 10000 ? 10000 : ms) * 1000);
  }
  memset(&o, 0, sizeof o);
  o.image_dir = argv[1];
  o.as_ns_init = true;
  /* This process holds the configuration's capabilities plus
     CAP_CHECKPOINT_RESTORE; crest says whether the configuration grants
     that one itself. */
  o.caps_from_config = true;
  o.cr_granted = strncmp(argv[2], "cr-granted=1", 12) == 0;
  /* ",setpcap-added": crest added CAP_SETPCAP too, which the configuration
     does not give. */
  o.setpcap_added = strstr(argv[2], ",setpcap-added") != NULL;
  /* The container's seccomp profile, compiled by crest, when crun did not
     install it here: every restored thread installs it at its end. */
  if (argc > 3 && strncmp(argv[3], "seccomp=", 8) == 0)
    {
      if (seccomp_arg(argv[3] + 8, &o) < 0)
        {
          report("restore: the seccomp program crest passed is malformed");
          return 2;
        }
      argv++, argc--;
    }
  /* The image's parent images (pre-dumps), bind-mounted beside it. */
  o.chain_dirs = (const char *const *)argv + 3;
  o.nchain_dirs = argc - 3;
  o.stdio_fds[0] = o.stdio_fds[1] = o.stdio_fds[2] = -1;
  {
    struct stat st;
    if (fstat(SYNC_FD, &st) == 0 && SYNC_OK(st.st_mode))
      o.done_fd = SYNC_FD;
  }
  /* Returns only on failure: on success this process is the restored init. */
  if (crest_engine_restore(&o, &root, &err) == 0)
    {
      report("the engine returned from a container restore instead of becoming the restored init");
      return 1;
    }
  text = crest_error_text(err);
  report(text ? text : "restore failed");
  free(text);
  crest_error_release(&err);
  return 1;
}
