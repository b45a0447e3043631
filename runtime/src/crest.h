/* crest: what every verb receives from the front end. */
#ifndef CREST_H
#define CREST_H

#include <stdbool.h>

struct crest_global
{
  const char *root;       /* crest's own state root (--root) */
  const char *crun_root;  /* the state root handed to crun: ROOT/crun */
  const char *runtime;    /* the crun binary (--runtime) */
  const char *log;        /* --log FILE, or NULL */
  const char *log_format; /* "text" or "json" */
  bool debug;
  int rootless;     /* --rootless: 1 true, 0 false, -1 auto */
  bool is_rootless; /* resolved: --rootless, else crest_rootless_detect() */
  /* crest's global options translated for crun, NULL-terminated, ready to be
     placed between "crun" and the verb. */
  char **crun_global_argv;
  int crun_global_argc;
};

/* A verb: argv[0] is the verb name; returns the process exit status. */
typedef int (*crest_verb_fn)(struct crest_global *g, int argc, char **argv);

/* Run crun with the global options, VERB and ARGV (NULL-terminated), wait for
   it and return its exit status (128+signal when it was killed). */
int
crest_crun_run(struct crest_global *g, const char *verb, char *const *argv);
/* Replace this process with crun (for verbs whose whole job is crun's). */
int
crest_crun_exec(struct crest_global *g, const char *verb, char *const *argv);

#endif
