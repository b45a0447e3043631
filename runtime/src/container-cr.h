/* crest: checkpoint and restore of a container (as opposed to --pid process
 * mode). The verbs in verb-checkpoint.c and verb-restore.c parse crun's flags and call
 * these when they are given a container ID.
 *
 * Checkpoint: crest's state for ID and `crun state` give the init PID; the
 * engine dumps the tree; the config the container ran with (and its digest)
 * goes into the image; then, unless leave_running, the container is killed
 * and deleted with its crest state.
 *
 * Restore: a private restore config is written under crest's state dir (the
 * process becomes crest's static restorer, bind-mounted read-only with the
 * image; capabilities become the checkpointed ones plus
 * CAP_CHECKPOINT_RESTORE), and crun runs it. All or nothing: on failure no
 * task, no crun container and no crest state is left, the image untouched. */
#ifndef CREST_CONTAINER_CR_H
#define CREST_CONTAINER_CR_H

#include <stdbool.h>
#include "cr-archive.h"
#include "crest.h"
#include "engine.h"
#include "error.h"

struct crest_container_checkpoint_opts
{
  const char *image_path; /* default "./checkpoint" when NULL */
  const char *work_path;  /* logs and temporaries; NULL: beside the image */
  bool leave_running;
  bool file_locks;  /* --file-locks: a tree holding locks is checkpointed with them */
  bool ext_unix_sk; /* --ext-unix-sk: unix sockets with a peer outside reconnect by name */
  enum crest_tcp_mode tcp_mode; /* --tcp-close, --tcp-established */
  bool skip_in_flight;          /* --skip-in-flight */
  bool pre_dump;                /* --pre-dump: memory only, the container runs on */
  const char *parent_path;      /* --parent-path: a pre-dump, relative to the image */
  /* Out, may be NULL: the bundle, times and sizes (for --export); the
     caller frees it with crest_checkpoint_info_free after a success. */
  struct crest_checkpoint_info *info;
};

struct crest_container_restore_opts
{
  const char *image_path;     /* default "./checkpoint" when NULL */
  const char *work_path;      /* NULL: beside the image */
  const char *bundle;         /* -b/--bundle; NULL: the current directory */
  bool detach;                /* -d/--detach */
  const char *pid_file;       /* --pid-file, or NULL */
  const char *console_socket; /* --console-socket, or NULL */
  bool no_pivot;              /* --no-pivot, passed to crun run */
  bool no_new_keyring;        /* --no-new-keyring, passed to crun run */
  /* podman's --lsm-profile TYPE:VALUE and --lsm-mount-context: crun applies
     the checkpointed config's; restore refuses a different one. */
  const char *lsm_profile;
  const char *lsm_mount_context;
};

/* Both return the exit status the verb should exit with (>= 0; for an
   attached restore, the container's own), or a negative value with ERR filled
   with one line naming the container, the object, the operation and the
   reason. */
int
crest_container_checkpoint(struct crest_global *g, const char *id,
                           const struct crest_container_checkpoint_opts *opts, crest_error_t *err);
int
crest_container_restore(struct crest_global *g, const char *id,
                        const struct crest_container_restore_opts *opts, crest_error_t *err);

#endif
