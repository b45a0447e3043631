/* crest: what every verb receives from the front end. */
#ifndef CREST_H
#define CREST_H

#include <stdbool.h>
#include <sys/types.h>
#include "error.h"

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

/* A verb: argv[0] is the verb name. Returns the process exit status (>= 0),
   or a negative value with ERR filled: main() then prints ERR once, to
   stderr and to --log in the --log-format asked for, and exits 1. */
typedef int (*crest_verb_fn)(struct crest_global *g, int argc, char **argv, crest_error_t *err);

/* crun (runtime/src/crun.c), the one way crest starts it: the global
   options, then VERB and ARGV (NULL-terminated). */

/* Descriptors crun gets in place of crest's own; -1 leaves crest's. */
struct crest_crun_fds
{
  int fd3; /* becomes crun's descriptor 3 (passed on with --preserve-fds) */
  int out; /* crun's stdout */
  int err; /* crun's stderr */
};
/* Start crun (FDS may be NULL) and return its PID. */
pid_t
crest_crun_spawn(struct crest_global *g, const char *verb, char *const *argv,
                 const struct crest_crun_fds *fds, crest_error_t *err);
/* Wait for crun: its exit status, 128+signal when it was killed, 125 when it
   cannot be waited for. FORWARD: signals crest receives meanwhile go to crun
   (a foreground container's terminal signals are meant for it). */
int
crest_crun_wait(pid_t pid, bool forward);
/* Spawn and wait, forwarding signals: crun's exit status, or negative with
   ERR when it could not be started. */
int
crest_crun_run(struct crest_global *g, const char *verb, char *const *argv, crest_error_t *err);
/* Replace this process with crun (for verbs whose whole job is crun's);
   returns (negative, with ERR) only when crun cannot be run. */
int
crest_crun_exec(struct crest_global *g, const char *verb, char *const *argv, crest_error_t *err);
/* G with crun's --root at ROOT (a container the OCI hook recorded lives
   under the crun root of the front end that started it): G itself when ROOT
   is NULL or crest's own, else COPY, to be freed by
   crest_crun_root_release(returned, COPY). */
struct crest_global *
crest_under_crun_root(struct crest_global *g, const char *root, struct crest_global *copy);
void
crest_crun_root_release(struct crest_global *g, struct crest_global *copy);

#endif
