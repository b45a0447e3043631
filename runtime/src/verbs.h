/* crest: the verbs. Each is `int fn (g, argc, argv)`, argv[0] the verb. */
#ifndef CREST_VERBS_H
#define CREST_VERBS_H

#include "crest.h"

/* Delegated to crun unchanged. */
int
crest_verb_delegate(struct crest_global *g, int argc, char **argv);
/* crun's create/run plus the grant and crest's state. */
int
crest_verb_create(struct crest_global *g, int argc, char **argv);
int
crest_verb_run(struct crest_global *g, int argc, char **argv);
/* crun's delete plus removal of crest's state. */
int
crest_verb_delete(struct crest_global *g, int argc, char **argv);
/* crun's list, after dropping stale crest state. */
int
crest_verb_list(struct crest_global *g, int argc, char **argv);

/* crest's own: checkpoint and restore (verb-checkpoint.c, verb-restore.c). */
int
crest_verb_checkpoint(struct crest_global *g, int argc, char **argv);
int
crest_verb_restore(struct crest_global *g, int argc, char **argv);

#endif
