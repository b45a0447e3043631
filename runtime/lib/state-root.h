/* crest: where crest keeps its state when no --root is given, shared by the
 * command and the OCI hook so that both find the same containers. */
#ifndef CREST_STATE_ROOT_H
#define CREST_STATE_ROOT_H

#include <stdbool.h>

/* Whether this process counts as rootless when nobody said: an euid other
   than 0, or uid 0 with XDG_RUNTIME_DIR set, which is how a rootless podman
   runs runtimes and hooks inside its user namespace. */
bool
crest_rootless_detect(void);
/* A rootless user keeps crest's state in $XDG_RUNTIME_DIR/crest
   (/run/user/EUID/crest when the variable is unset), root in /run/crest.
   Newly allocated. */
char *
crest_default_state_root(bool rootless);
/* The state root crun itself picks without --root: $XDG_RUNTIME_DIR/crun
   when the variable is set, else /run/crun (the hook must find the
   containers that another front end's crun made). Newly allocated. */
char *
crest_default_crun_root(void);

#endif
