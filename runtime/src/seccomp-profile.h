/* crest: a container's OCI linux.seccomp compiled into one classic BPF
   program (libseccomp), for the restorer to install in every restored task
   at the end of a restore (docs/restore.md, "Seccomp"). */
#ifndef CREST_SECCOMP_PROFILE_H
#define CREST_SECCOMP_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <yajl/yajl_tree.h>
#include "error.h"

struct crest_seccomp_bpf
{
  unsigned int flags;  /* seccomp(2) SECCOMP_FILTER_FLAG_* from linux.seccomp.flags */
  unsigned char *prog; /* struct sock_filter[], malloc'ed */
  size_t len;          /* bytes */
};

/* Compile SECCOMP (the object linux.seccomp) as crun does: the default
   action, the architectures, each rule's names, action, errnoRet and
   argument conditions; a name this libseccomp does not know is skipped, as
   crun skips it. What crest cannot compile (listenerPath, a notify action,
   an unknown key, action, operator or flag) fails with one line. */
int
crest_seccomp_compile(yajl_val seccomp, struct crest_seccomp_bpf *out, crest_error_t *err);

/* "seccomp=FLAGS:HEX", the restorer's argument (malloc'ed). */
char *
crest_seccomp_arg(const struct crest_seccomp_bpf *b);

/* Does profile SECCOMP let any call of NAME through? A rule without
   argument conditions decides; else the default action. */
bool
crest_seccomp_allows(yajl_val seccomp, const char *name);

/* Could a call of NAME, whatever its arguments, end or stop the task under
   profile SECCOMP (a kill, trap or notify action of a rule naming it, or of
   the default where no rule without conditions names it)? That action's
   name, else NULL. */
const char *
crest_seccomp_harms(yajl_val seccomp, const char *name);

/* Can a checkpoint ask the tasks for their keyrings by injected keyctl
   calls (the engine's keyrings.c)? 1 when every keyctl call goes through
   (no rule with argument conditions names it); 0 when keyctl, add_key and
   request_key are all denied, so no task can have a key of its own (and
   an injected keyctl could meet a kill action); -1 otherwise: its tasks'
   keys cannot be asked for. */
int
crest_seccomp_keyctl(yajl_val seccomp);

#endif
