/* crest: kernel structures that glibc does not declare (or not in the
 * version Debian 12 ships), written from the kernel's UAPI headers. One
 * definition, shared by the dump and the restore. */
#ifndef CREST_KERNEL_ABI_H
#define CREST_KERNEL_ABI_H

#include <stdint.h>

/* sched_getattr(2)/sched_setattr(2): struct sched_attr of
   include/uapi/linux/sched/types.h, up to the utilization clamps
   (SCHED_ATTR_SIZE_VER1). Named apart from the kernel's so that a libc
   that declares struct sched_attr itself does not clash with it. */
struct crest_sched_attr
{
  uint32_t size, policy;
  uint64_t flags;
  int32_t nice;
  uint32_t prio;
  uint64_t rt[3]; /* sched_runtime, sched_deadline, sched_period */
  uint32_t umin, umax;
};

/* Socket options newer than the headers crest may be built with (Linux
   6.3's IP_LOCAL_PORT_RANGE), or linux/in6.h's that glibc's netinet/in.h
   does not define. */
#ifndef IP_LOCAL_PORT_RANGE
#define IP_LOCAL_PORT_RANGE 51
#endif
/* Memory-deny-write-execute (Linux 6.3). */
#ifndef PR_SET_MDWE
#define PR_SET_MDWE 65
#define PR_GET_MDWE 66
#define PR_MDWE_REFUSE_EXEC_GAIN 1
#endif
/* A tracer's view of syscall user dispatch (Linux 6.4). */
#ifndef PTRACE_GET_SYSCALL_USER_DISPATCH_CONFIG
#define PTRACE_GET_SYSCALL_USER_DISPATCH_CONFIG 0x4211
#endif
/* memfd_secret's file system (linux/magic.h from Linux 5.14). */
#ifndef SECRETMEM_MAGIC
#define SECRETMEM_MAGIC 0x5345434d
#endif
/* KSM for every mapping of a process (Linux 6.4). */
#ifndef PR_SET_MEMORY_MERGE
#define PR_SET_MEMORY_MERGE 67
#define PR_GET_MEMORY_MERGE 68
#endif
#ifndef SO_PASSPIDFD
#define SO_PASSPIDFD 76
#endif
#ifndef SCM_PIDFD
#define SCM_PIDFD 0x04 /* the sender as a pidfd, with SO_PASSPIDFD (Linux 6.5) */
#endif
#ifndef SO_PASSRIGHTS
#define SO_PASSRIGHTS 83
#endif
#ifndef IPV6_FLOWINFO
#define IPV6_FLOWINFO 11
#endif
#ifndef IPV6_FLOWINFO_SEND
#define IPV6_FLOWINFO_SEND 33
#endif

#endif
