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

/* crun's checkpoint and restore flags (CRIU's) that crest accepts and has
   nothing to do for: entries of a getopt_long table returning ID. */
/* clang-format off */
#define CREST_CR_IGNORED_OPTIONS(id)                       \
  { "tcp-established", no_argument, NULL, (id) },          \
  { "ext-unix-sk", no_argument, NULL, (id) },              \
  { "shell-job", no_argument, NULL, (id) },                \
  { "file-locks", no_argument, NULL, (id) },               \
  { "manage-cgroups-mode", required_argument, NULL, (id) }
/* clang-format on */

/* crest's own: checkpoint and restore (verb-checkpoint.c, verb-restore.c). */
int
crest_verb_checkpoint(struct crest_global *g, int argc, char **argv, crest_error_t *err);
int
crest_verb_restore(struct crest_global *g, int argc, char **argv, crest_error_t *err);

#endif
