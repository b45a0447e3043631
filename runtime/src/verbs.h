/* crest: the verbs. Each is a crest_verb_fn (crest.h): argv[0] the verb;
   errors go back to main() in ERR, which prints them once. */
#ifndef CREST_VERBS_H
#define CREST_VERBS_H

#include "crest.h"

/* Delegated to crun unchanged. */
int
crest_verb_delegate(struct crest_global *g, int argc, char **argv, crest_error_t *err);
/* crun's create/run plus the grant and crest's state. */
int
crest_verb_create(struct crest_global *g, int argc, char **argv, crest_error_t *err);
int
crest_verb_run(struct crest_global *g, int argc, char **argv, crest_error_t *err);
/* crun's delete plus removal of crest's state. */
int
crest_verb_delete(struct crest_global *g, int argc, char **argv, crest_error_t *err);
/* crun's list, after dropping stale crest state. */
int
crest_verb_list(struct crest_global *g, int argc, char **argv, crest_error_t *err);

/* CRIU's flags (as crun, podman, conmon and CRI-O pass them) that crest
   accepts with nothing to do, each for a reason the man page gives:
   --tcp-established, --tcp-close: a tree holding a TCP socket is refused at
   checkpoint, so no connection is ever in an image; --ext-unix-sk at
   restore: the image says which unix sockets to connect again (the flag
   matters at checkpoint, verb-checkpoint.c);
   --shell-job at restore, and at checkpoint of a container: a container's
   terminal is always handled (the image's `tty` descriptors take the new
   container's terminal); checkpoint --pid uses it (verb-checkpoint.c), and
   the image says so. Entries of a getopt_long
   table returning ID. */
/* clang-format off */
#define CREST_CR_NOOP_OPTIONS(id)                          \
  { "tcp-established", no_argument, NULL, (id) },          \
  { "tcp-close", no_argument, NULL, (id) },                \
  { "ext-unix-sk", no_argument, NULL, (id) },              \
  { "shell-job", no_argument, NULL, (id) },               \
  { "skip-in-flight", no_argument, NULL, (id) }
/* clang-format on */

/* --manage-cgroups-mode: CRIU's modes are accepted; crest never restores
   cgroups (a rootless container's cgroup is crun's to create), so each
   means the same. Returns < 0 with ERR for any other value. */
int
crest_check_cgroups_mode(const char *verb, const char *mode, crest_error_t *err);
/* --work-path DIR: created if need be; LOG (dump.log, restore.log) there
   receives every message of this run. */
int
crest_open_work_log(const char *verb, const char *dir, const char *log, crest_error_t *err);

/* crest's own: checkpoint and restore (verb-checkpoint.c, verb-restore.c). */
int
crest_verb_checkpoint(struct crest_global *g, int argc, char **argv, crest_error_t *err);
int
crest_verb_restore(struct crest_global *g, int argc, char **argv, crest_error_t *err);

#endif
