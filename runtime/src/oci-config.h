/* crest: reading and rewriting an OCI config.json (yajl tree API in, yajl
   generator out). */
#ifndef CREST_OCI_CONFIG_H
#define CREST_OCI_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <yajl/yajl_tree.h>
#include "error.h"

/* The CAP_CHECKPOINT_RESTORE grant. */
enum crest_grant
{
  CREST_GRANT_NONE,
  CREST_GRANT_ADD,  /* add CAP_CHECKPOINT_RESTORE to the process's sets */
  CREST_GRANT_ONLY, /* CAP_CHECKPOINT_RESTORE becomes its only capability */
};

/* The annotation that asks for the grant in config.json. */
#define CREST_GRANT_ANNOTATION "org.crest.checkpoint-restore"

int
crest_grant_parse(const char *s, enum crest_grant *out, crest_error_t *err);
const char *
crest_grant_name(enum crest_grant g);

/* Parse a config.json text into a tree (freed with yajl_tree_free). */
int
crest_config_parse(const char *text, yajl_val *out, crest_error_t *err);
/* The member KEY of OBJ, or NULL (OBJ NULL or not an object, or no KEY). */
yajl_val
crest_config_member(yajl_val obj, const char *key);
/* The string value at a path of object keys (NULL-terminated), or NULL. */
const char *
crest_config_get_string(yajl_val root, const char *const *path);
/* The grant asked for by the annotation, CREST_GRANT_NONE when absent. */
int
crest_config_annotation_grant(yajl_val root, enum crest_grant *out, crest_error_t *err);

/* Does the process crun starts from ROOT hold capability CAP (e.g.
   "CAP_SYS_CHROOT") in its effective set once its program runs? 1 yes, 0 no,
   -1 when the config does not say (no process.capabilities, or a set that
   decides is missing). */
int
crest_config_process_holds_cap(yajl_val root, const char *cap);
/* The process user of ROOT (process.user.uid and gid), 0 when it names none. */
void
crest_config_process_user(yajl_val root, long *uid, long *gid);
/* Would the process hold CAP once crest_config_edit's as_root has made it
   the container's root (see crest_config_process_holds_cap)? */
int
crest_config_root_holds_cap(yajl_val root, const char *cap);

/* A read-only bind mount added to the config's mounts. */
struct crest_config_bind
{
  const char *source, *destination;
};

/* What crest changes in a config on its way to crun (create and run apply a
   grant; restore also replaces the process with the restorer). */
struct crest_config_edit
{
  /* Applied to process.capabilities: with ADD, CAP_CHECKPOINT_RESTORE goes
     into the bounding, permitted and effective sets, and, for a process
     whose process.user.uid is not 0, into inheritable and ambient too
     (execve keeps only ambient capabilities of such a process). */
  enum crest_grant grant;
  /* When not NULL, replaces process.args (NULL-terminated). */
  const char *const *args;
  /* When not NULL, one more process.env entry ("NAME=VALUE"). */
  const char *env_add;
  /* Appended to mounts. */
  const struct crest_config_bind *binds;
  size_t nbinds;
  /* Leaves linux.seccomp out (the restorer installs the profile itself at
     the end of the restore: docs/restore.md, "Seccomp"). */
  bool drop_seccomp;
  /* When not NULL, the config's hostname and domainname become these (a
     container's own at checkpoint: its tasks may have set them). */
  const char *hostname, *domainname;
  /* The process runs as the container's root (process.user becomes uid
     and gid 0), with CAP_SETUID and CAP_SETGID added to its permitted and
     effective sets where the bounding set has them: the restorer of a
     container whose process user is another, which reads the image as the
     container's root and gives each task its own IDs at the end. */
  bool as_root;
  /* CAP_SETPCAP added to the bounding, permitted and effective sets (the
     restorer's): each restored task drops from its bounding set what it
     did not have, CAP_CHECKPOINT_RESTORE included, which a stock kernel
     allows only with CAP_SETPCAP; its own sets come back as they were at
     the end. */
  bool add_setpcap;
};

/* Serialise ROOT to JSON with EDIT applied on the way (every other value is
   copied unchanged). *out is malloc'ed. */
int
crest_config_edit(yajl_val root, const struct crest_config_edit *edit, char **out, size_t *len,
                  crest_error_t *err);
/* crest_config_edit with GRANT only. */
int
crest_config_generate(yajl_val root, enum crest_grant grant, char **out, size_t *len,
                      crest_error_t *err);

/* Does the running kernel know CAP_CHECKPOINT_RESTORE (cap_last_cap >= 40)?
   PROC_PATH overrides /proc/sys/kernel/cap_last_cap for tests. Returns 1, 0,
   or negative with ERR when it cannot tell. */
int
crest_kernel_has_cap_cr(const char *proc_path, crest_error_t *err);

#endif
