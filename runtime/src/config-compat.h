/* crest: may an image be restored into a bundle whose config.json is not
 * the one the container was checkpointed with?
 *
 * podman and CRI-O restore from a new bundle (another directory, often
 * another machine): the restore runs with that bundle's config, and the
 * checkpointed config only says what the tree needs. What may differ is
 * what the tree does not carry, or what the restore checks by other means:
 *   ociVersion, annotations, hooks          not seen by the tree
 *   root.path, mounts[].source              where the files are; the tree's
 *                                           files are checked there (sizes of
 *                                           mapped files by the engine; with
 *                                           --import, size, mode and digest
 *                                           of every file it uses)
 *   linux.namespaces[].path                 which namespace to join (podman
 *                                           gives a new network namespace, a
 *                                           new pod has new ones); the set of
 *                                           types must match, and a joined
 *                                           one stays joined, a new one new
 *   linux.uidMappings[].hostID, gidMappings the IDs outside: the tree sees the
 *                                           container IDs and sizes only
 *   linux.cgroupsPath, linux.resources      crest dumps no cgroup
 *   process.consoleSize                     the new terminal's size
 * Everything else must be equal (capability sets as sets, namespaces by
 * type, objects whatever the order of their keys): process args, user,
 * capabilities, env, cwd, rlimits, LSM labels; the mounts one by one
 * (destination, type, options); root.readonly, masked and read-only
 * paths, devices, sysctls, hostname. */
#ifndef CREST_CONFIG_COMPAT_H
#define CREST_CONFIG_COMPAT_H

#include <stddef.h>
#include <yajl/yajl_tree.h>
#include "error.h"

/* NULL when an image checkpointed with CHECKPOINTED can be restored into a
   container configured with GIVEN; else a malloc'ed phrase naming the first
   difference ("process.args[2] differs: `x` in the bundle's, `y`
   checkpointed"). */
char *
crest_config_restore_difference(yajl_val checkpointed, yajl_val given);

/* The config a restore into BUNDLE runs with. When BUNDLE/config.json
   exists it replaces *CONFIG and *TEXT and *LEN (the checkpointed config, on
   entry) if the image can be restored into it, with crest's
   CAP_CHECKPOINT_RESTORE grant applied as `crest run` applies it (the
   annotation, else the grant the checkpointed config shows); otherwise -1
   with one line naming the first difference. Without a config.json the
   checkpointed config stays. */
int
crest_restore_bundle_config(const char *bundle, yajl_val *config, char **text, size_t *len,
                            crest_error_t *err);

#endif
