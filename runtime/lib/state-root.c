/* crest: the default state roots (see state-root.h). */
#include <config.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "error.h"
#include "state-root.h"
#include "util.h"

static const char *
runtime_dir(void)
{
  const char *xdg = getenv("XDG_RUNTIME_DIR");
  return xdg && *xdg ? xdg : NULL;
}

long
crest_uid_map_outer_root(const char *map)
{
  const char *p = map;
  while (p && *p)
    {
      unsigned long inner, outer, count;
      if (sscanf(p, " %lu %lu %lu", &inner, &outer, &count) == 3 && inner == 0 && count > 0)
        /* The initial namespace's map, or a namespace whose root is the
           real root: not rootless. */
        return outer == 0 ? -1 : (long)outer;
      p = strchr(p, '\n');
      if (p)
        p++;
    }
  return -1;
}

/* UID 0 of this user namespace as the parent sees it, when it is not the
   real root (rootless podman runs the runtime as such a UID 0 and may not
   set XDG_RUNTIME_DIR); -1 otherwise. */
static long
outer_root(void)
{
  cleanup_free char *map = NULL;
  crest_error_t e = NULL;
  if (geteuid() != 0 || read_file("/proc/self/uid_map", &map, NULL, 1 << 16, &e) < 0)
    {
      crest_error_release(&e);
      return -1;
    }
  return crest_uid_map_outer_root(map);
}

bool
crest_rootless_detect(void)
{
  return geteuid() != 0 || runtime_dir() != NULL || outer_root() >= 0;
}

char *
crest_default_state_root(bool rootless)
{
  long outer;
  if (!rootless)
    return xstrdup("/run/crest");
  if (runtime_dir())
    return xasprintf("%s/crest", runtime_dir());
  /* /run/user/OUTER belongs to the user who owns the namespace, and shows
     as UID 0's inside it: the directory that user's own crest uses. */
  outer = outer_root();
  if (outer >= 0)
    return xasprintf("/run/user/%ld/crest", outer);
  return xasprintf("/run/user/%u/crest", (unsigned)geteuid());
}

char *
crest_default_crun_root(void)
{
  if (runtime_dir())
    return xasprintf("%s/crun", runtime_dir());
  return xstrdup("/run/crun");
}
