/* crest: NUMA memory policies (set_mempolicy(2), mbind(2); docs/engine.md,
 * "Task" and "Memory mapping" tables). A thread's own policy is asked of
 * it (get_mempolicy, injected: nothing in /proc shows it); a mapping's is
 * shown by /proc/PID/numa_maps, and asked of the task (get_mempolicy with
 * MPOL_F_ADDR) for the mappings that have one, to get the node mask as it
 * was given (numa_maps shows it already remapped for relative nodes).
 * Recorded as [mode with its flags, node list] ("mempolicy" of a thread,
 * "mpol" of a mapping, format 15), and set again by the restorer's blob. */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dump-int.h"
#include "restore-int.h"
#include "image.h"
#include "util.h"

/* get_mempolicy's answer at SCRATCH: the mode (int), then the node mask at
   SCRATCH + 8, MPOL_MAXNODE bits. */
static int
ask(pid_t pid, pid_t tid, shm_inject_fn fn, void *ctx, uint64_t scratch, uint64_t addr, int *mode,
    cpu_set_t *nodes, crest_error_t *err)
{
  const long a[6] = { (long)scratch,
                      (long)scratch + 8,
                      MPOL_MAXNODE + 1,
                      (long)addr,
                      addr ? 2 /* MPOL_F_ADDR */ : 0,
                      0 };
  long ret;
  if (fn(ctx, SYS_get_mempolicy, a, &ret, err) < 0)
    return -1;
  if (ret == -ENOSYS) /* a kernel without NUMA */
    {
      *mode = 0;
      return 0;
    }
  if (ret < 0)
    return crest_error_sys(err, (int)-ret, "task %d: get_mempolicy%s", tid,
                           addr ? " of a mapping" : "");
  CPU_ZERO(nodes);
  if (vm_read(pid, scratch, mode, sizeof *mode, err) < 0
      || vm_read(pid, scratch + 8, nodes, sizeof *nodes, err) < 0)
    return -1;
  return 0;
}

int
mpol_dump_thread(struct dproc *p, struct dthread *th, shm_inject_fn fn, void *ctx, uint64_t scratch,
                 crest_error_t *err)
{
  /* numa_maps shows the main thread's policy for every mapping without
     one of its own: all "default", it has none, and need not be asked. */
  th->mpol_mode = 0;
  if (th == &p->th[0] && p->numa_default)
    return 0;
  return ask(p->pid, th->tid, fn, ctx, scratch, 0, &th->mpol_mode, &th->mpol_nodes, err);
}

int
mpol_dump_vmas(struct dproc *p, shm_inject_fn fn, void *ctx, uint64_t scratch, crest_error_t *err)
{
  cleanup_free char *text = NULL, *path = xasprintf("/proc/%d/numa_maps", p->pid);
  char *save = NULL;

  /* No numa_maps: a kernel without NUMA, where nothing has a policy. */
  p->numa_default = true;
  if (access(path, F_OK) < 0 && errno == ENOENT)
    return 0;
  if (read_proc(p->pid, "numa_maps", &text, err) < 0)
    return -1;
  for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
    {
      char *end;
      uint64_t start = strtoull(l, &end, 16);
      struct mpol_rec r = { start, 0, { { 0 } } };
      if (*end != ' ' || strncmp(end + 1, "default ", 8) == 0)
        continue;
      p->numa_default = false;
      if (ask(p->pid, p->th[0].tid, fn, ctx, scratch, start, &r.mode, &r.nodes, err) < 0)
        return -1;
      if (!r.mode)
        continue;
      p->mpols = xrealloc(p->mpols, (p->nmpols + 1) * sizeof *p->mpols);
      p->mpols[p->nmpols++] = r;
    }
  return 0;
}

const struct mpol_rec *
mpol_of_vma(const struct dproc *p, uint64_t start)
{
  for (size_t i = 0; i < p->nmpols; i++)
    if (p->mpols[i].start == start)
      return &p->mpols[i];
  return NULL;
}

void
mpol_put(yajl_gen g, const char *key, int mode, const cpu_set_t *nodes)
{
  char list[1024];
  cpulist_format(nodes, list, sizeof list);
  jput_key(g, key);
  yajl_gen_array_open(g);
  yajl_gen_integer(g, mode);
  yajl_gen_string(g, (const unsigned char *)list, strlen(list));
  yajl_gen_array_close(g);
}

/* MPOL_DEFAULT .. MPOL_PREFERRED_MANY, with MPOL_F_NUMA_BALANCING,
   MPOL_F_RELATIVE_NODES, MPOL_F_STATIC_NODES. */
#define MPOL_MODE_OK(m) (((m)&0xff) <= 5 && ((m) & ~0xe0ff) == 0)

int
mpol_parse(yajl_val v, const char *key, int format, int *mode, cpu_set_t *nodes, crest_error_t *err)
{
  yajl_val a = yajl_tree_get(v, (const char *[]){ key, NULL }, yajl_t_any);
  *mode = 0;
  CPU_ZERO(nodes);
  if (!a)
    return 0;
  if (format < CREST_IMAGE_FORMAT_AFFINITY || !YAJL_IS_ARRAY(a) || a->u.array.len != 2
      || !YAJL_IS_INTEGER(a->u.array.values[0]) || !YAJL_IS_STRING(a->u.array.values[1])
      || !MPOL_MODE_OK(YAJL_GET_INTEGER(a->u.array.values[0]))
      || YAJL_GET_INTEGER(a->u.array.values[0]) == 0
      || (*a->u.array.values[1]->u.string
          && cpulist_parse(a->u.array.values[1]->u.string, nodes) < 0))
    return crest_error_make(err, EINVAL, "%s: a mode and a node list in a format 15 image", key);
  *mode = (int)YAJL_GET_INTEGER(a->u.array.values[0]);
  return 1;
}
