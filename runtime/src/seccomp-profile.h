/* crest: a container's OCI linux.seccomp compiled into one classic BPF
   program (libseccomp), for the restorer to install in every restored task
   at the end of a restore (docs/restore.md, "Seccomp"). */
#ifndef CREST_SECCOMP_PROFILE_H
#define CREST_SECCOMP_PROFILE_H

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

#endif
