/* crest: the namespaced sysctls a container changed itself (ns-sysctl.c). */
#ifndef CREST_NS_SYSCTL_H
#define CREST_NS_SYSCTL_H

#include <stdbool.h>
#include <sys/types.h>
#include <yajl/yajl_tree.h>
#include "error.h"

/* The sysctls of the container's own network and IPC namespaces (those
   crun makes new, as CFG says), read in its namespaces, against what a
   restore gives: a new namespace's values, or the config's linux.sysctl
   for the keys it sets. A difference (a value the container's root set,
   with the capabilities its user namespace gives it) is refused in one
   line naming the key. NET, IPC: check those namespaces. */
int
crest_check_ns_sysctls(const char *id, pid_t init, yajl_val cfg, bool net, bool ipc,
                       crest_error_t *err);

#endif
