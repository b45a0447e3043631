/* crest: CPU lists and the CPUs a task's cpuset allows (affinity.c). */
#ifndef CREST_AFFINITY_H
#define CREST_AFFINITY_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <stddef.h>
#include <sys/types.h>
#include "error.h"

/* The largest NUMA node mask crest records (a cpu_set_t's bits, also
   used for node lists). */
#define MPOL_MAXNODE 1024

/* S as a CPU list ("0,2-3") in BUF (LEN bytes; cut short if too small). */
void
cpulist_format(const cpu_set_t *s, char *buf, size_t len);

/* A CPU list into OUT: 0, or -1 when malformed, empty or beyond
   CPU_SETSIZE. */
int
cpulist_parse(const char *s, cpu_set_t *out);

/* The last cgroup cpus_allowed looked up (its /proc/PID/cgroup text,
   malloc'ed; NULL: none yet) and its CPUs. */
struct cpus_cache
{
  char *cgroup;
  cpu_set_t cpus;
};

/* The CPUs task PID's cpuset lets it run on: 0, or -1 with ERR. */
int
cpus_allowed(pid_t pid, struct cpus_cache *cache, cpu_set_t *out, crest_error_t *err);

#endif
