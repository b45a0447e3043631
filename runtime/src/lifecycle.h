/* crest: the parts of create/run that crest adds to crun's, exposed for the
   unit tests. */
#ifndef CREST_LIFECYCLE_H
#define CREST_LIFECYCLE_H

#include <stdbool.h>
#include "oci-config.h"
#include "error.h"

struct create_args
{
  const char *id;
  const char *bundle;     /* -b/--bundle, NULL: "." */
  const char *config;     /* -f/--config, NULL: config.json */
  const char *grant_flag; /* --cap-checkpoint-restore, NULL when absent */
  bool detach;
  /* What crun gets: the same arguments without crest's own, without
     -f/--config (crest passes the config it chose), NULL-terminated. */
  char **crun_argv;
  int crun_argc;
};

/* Parse create/run arguments (argv[0] is the verb). */
int
crest_parse_create_args(int argc, char **argv, struct create_args *out, crest_error_t *err);
void
crest_create_args_free(struct create_args *a);

/* Decide the grant: the flag wins over the annotation. */
int
crest_resolve_grant(const char *flag, yajl_val config, enum crest_grant *out, crest_error_t *err);

#endif
