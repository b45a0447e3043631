/* crest: the default state roots (see state-root.h). */
#include <config.h>
#include <stdlib.h>
#include <unistd.h>
#include "state-root.h"
#include "util.h"

static const char *
runtime_dir(void)
{
  const char *xdg = getenv("XDG_RUNTIME_DIR");
  return xdg && *xdg ? xdg : NULL;
}

bool
crest_rootless_detect(void)
{
  return geteuid() != 0 || runtime_dir() != NULL;
}

char *
crest_default_state_root(bool rootless)
{
  if (!rootless)
    return xstrdup("/run/crest");
  if (runtime_dir())
    return xasprintf("%s/crest", runtime_dir());
  return xasprintf("/run/user/%u/crest", (unsigned)geteuid());
}

char *
crest_default_crun_root(void)
{
  if (runtime_dir())
    return xasprintf("%s/crun", runtime_dir());
  return xstrdup("/run/crun");
}
