/* crest: the small per-container state crest keeps beside crun's. */
#ifndef CREST_STATE_H
#define CREST_STATE_H

#include <stdbool.h>
#include "crest.h"
#include "error.h"

struct crest_state
{
  char *id;
  char *bundle;    /* absolute path of the user's bundle */
  char *crun_root; /* crun's --root for this container */
  char *config;    /* absolute path of the config.json crun was given */
  bool rootless;
  char *grant; /* "none", "add" or "only" */
};

/* ROOT/containers/ID (newly allocated). */
char *
crest_state_dir(struct crest_global *g, const char *id);
/* Reject IDs that could escape the state root or confuse crun. */
int
crest_validate_id(const char *id, crest_error_t *err);
/* Write STATE atomically under crest_state_dir(). */
int
crest_state_write(struct crest_global *g, const struct crest_state *s, crest_error_t *err);
/* Read the state of ID. Returns 1 when found, 0 when crest has no state for
   it, negative on error. A state whose crun container is gone is stale: it is
   removed and 0 is returned. */
int
crest_state_read(struct crest_global *g, const char *id, struct crest_state *s, crest_error_t *err);
/* The same without the staleness check, which would take a record crest
   is writing (a restore records the container before crun knows it). */
int
crest_state_peek(struct crest_global *g, const char *id, struct crest_state *s, crest_error_t *err);
/* Remove the state of ID (no error when there is none). */
int
crest_state_remove(struct crest_global *g, const char *id, crest_error_t *err);
/* Remove every stale state under the root; returns how many were removed. */
int
crest_state_gc(struct crest_global *g, crest_error_t *err);
/* Does crun know container ID under G's crun root? */
bool
crest_crun_has(struct crest_global *g, const char *crun_root, const char *id);
void
crest_state_free(struct crest_state *s);

#endif
