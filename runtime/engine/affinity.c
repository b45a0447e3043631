/* crest: a thread's CPU affinity, as sched_getaffinity(2) shows it and a
 * CPU list ("0,2-3", as /proc's Cpus_allowed_list) writes it; and which
 * CPUs a task's cpuset lets it use, against which a narrower affinity is
 * told apart from the default (docs/engine.md, "Task" table). */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "affinity.h"
#include "restore-int.h"
#include "util.h"

void
cpulist_format(const cpu_set_t *s, char *buf, size_t len)
{
  size_t n = 0;
  buf[0] = 0;
  for (int c = 0; c < CPU_SETSIZE && n < len; c++)
    {
      int e = c;
      if (!CPU_ISSET(c, s))
        continue;
      while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, s))
        e++;
      n += (size_t)snprintf(buf + n, len - n, e > c ? "%s%d-%d" : "%s%d", n ? "," : "", c, e);
      c = e;
    }
}

int
cpulist_parse(const char *s, cpu_set_t *out)
{
  CPU_ZERO(out);
  while (*s && *s != '\n')
    {
      char *end;
      long a = strtol(s, &end, 10), b = a;
      if (end == s || a < 0 || a >= CPU_SETSIZE)
        return -1;
      s = end;
      if (*s == '-')
        {
          b = strtol(s + 1, &end, 10);
          if (end == s + 1 || b < a || b >= CPU_SETSIZE)
            return -1;
          s = end;
        }
      for (long c = a; c <= b; c++)
        CPU_SET((int)c, out);
      if (*s == ',')
        s++;
      else if (*s && *s != '\n')
        return -1;
    }
  return CPU_COUNT(out) ? 0 : -1;
}

/* FILE of cgroup REL (a path from ROOT, the hierarchy's mount point) or of
   its nearest ancestor that shows one (a cgroup v2 without the cpuset
   controller has none), as a CPU list: 0, else -1. */
static int
cgroup_cpus(const char *root, char *rel, const char *file, cpu_set_t *out)
{
  for (;;)
    {
      cleanup_free char *f = xasprintf("%s%s/%s", root, strcmp(rel, "/") == 0 ? "" : rel, file);
      cleanup_free char *text = NULL;
      crest_error_t e = NULL;
      char *slash;
      int r = read_file(f, &text, NULL, 1 << 16, &e);
      crest_error_release(&e);
      if (r == 0 && cpulist_parse(text, out) == 0)
        return 0;
      if (strcmp(rel, "/") == 0 || !(slash = strrchr(rel, '/')))
        return -1;
      slash[slash == rel ? 1 : 0] = 0;
    }
}

/* What cpus_allowed says for the /proc/PID/cgroup text CG (taken apart). */
static int
cpus_of_cgroup(char *cg, cpu_set_t *out, crest_error_t *err)
{
  cleanup_free char *text = NULL;
  char *save = NULL;

  for (char *l = strtok_r(cg, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
    {
      char *c1 = strchr(l, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
      if (!c2 || c2[1] != '/')
        continue;
      *c2 = 0;
      if (strcmp(c1 + 1, "") == 0 && strncmp(l, "0:", 2) == 0
          && cgroup_cpus("/sys/fs/cgroup", c2 + 1, "cpuset.cpus.effective", out) == 0)
        return 0;
      if (strcmp(c1 + 1, "cpuset") == 0
          && cgroup_cpus("/sys/fs/cgroup/cpuset", c2 + 1, "cpuset.effective_cpus", out) == 0)
        return 0;
    }
  if (read_file("/sys/devices/system/cpu/online", &text, NULL, 1 << 16, err) < 0)
    return -1;
  if (cpulist_parse(text, out) < 0)
    return crest_error_make(err, EINVAL, "/sys/devices/system/cpu/online: %s", text);
  return 0;
}

/* The cpuset of PID's cgroup (v2: cpuset.cpus.effective; v1's cpuset
   hierarchy: cpuset.effective_cpus); else the online CPUs. The answer for
   the last cgroup asked is kept in CACHE: a tree's processes mostly share
   one. */
int
cpus_allowed(pid_t pid, struct cpus_cache *cache, cpu_set_t *out, crest_error_t *err)
{
  cleanup_free char *cg = NULL, *path = xasprintf("/proc/%d/cgroup", pid);

  if (read_file(path, &cg, NULL, 1 << 16, err) < 0)
    return -1;
  if (cache->cgroup && strcmp(cache->cgroup, cg) == 0)
    {
      *out = cache->cpus;
      return 0;
    }
  free(cache->cgroup);
  cache->cgroup = xstrdup(cg);
  if (cpus_of_cgroup(cg, out, err) < 0)
    {
      free(cache->cgroup);
      cache->cgroup = NULL;
      return -1;
    }
  cache->cpus = *out;
  return 0;
}

int
affinity_restore_check(const struct rctx *c, crest_error_t *err)
{
  cpu_set_t mine, both;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof mine, &mine) < 0)
    return crest_error_errno(err, "restore: sched_getaffinity");
  for (size_t i = 0; i < c->np; i++)
    for (size_t t = 0; t < c->p[i].nth; t++)
      {
        const struct rthread *th = &c->p[i].th[t];
        char want[512], have[512];
        if (!th->has_aff)
          continue;
        CPU_AND(&both, &th->aff, &mine);
        if (CPU_EQUAL(&both, &th->aff))
          continue;
        cpulist_format(&th->aff, want, sizeof want);
        cpulist_format(&mine, have, sizeof have);
        return crest_error_make(err, ENOTSUP,
                                "restore: thread %d's CPU affinity is %s, and this restore may "
                                "use CPUs %s only",
                                th->tid, want, have);
      }
  return 0;
}
