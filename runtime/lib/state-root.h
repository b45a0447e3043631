/* crest: where crest keeps its state when no --root is given, shared by the
 * command and the OCI hook so that both find the same containers. */
#ifndef CREST_STATE_ROOT_H
#define CREST_STATE_ROOT_H

#include <stdbool.h>

/* Whether this process counts as rootless when nobody said: an euid other
   than 0, or uid 0 with XDG_RUNTIME_DIR set, or uid 0 of a user namespace
   whose root is not the real root, which is how a rootless podman runs
   runtimes and hooks. */
bool
crest_rootless_detect(void);
/* From the text of a /proc/PID/uid_map: the outer UID that UID 0 maps to,
   or -1 when UID 0 is unmapped or is the real root (outer 0). */
long
crest_uid_map_outer_root(const char *map);
/* A rootless user keeps crest's state in $XDG_RUNTIME_DIR/crest; when the
   variable is unset, /run/user/EUID/crest, or for UID 0 of a user
   namespace owned by another user, that user's /run/user/OUTER/crest. Root
   keeps it in /run/crest. Newly allocated. */
char *
crest_default_state_root(bool rootless);
/* The state root crun itself picks without --root: $XDG_RUNTIME_DIR/crun
   when the variable is set, else /run/crun (the hook must find the
   containers that another front end's crun made). Newly allocated. */
char *
crest_default_crun_root(void);

#endif
