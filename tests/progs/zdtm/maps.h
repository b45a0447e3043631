/* maps.h: what /proc/self/maps says of the mapping that holds an address,
 * for the zdtm memory programs (shm-anon, shm-tree, memfd, memfd-closed,
 * deleted-map, shared-file). */
#ifndef ZDTM_MAPS_H
#define ZDTM_MAPS_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct zdtm_map
{
  unsigned long start, end, pgoff, ino;
  char perms[5];
  char dev[16];
  char name[256];
};

/* Fill M for the mapping holding P; -1 when none does. */
static inline int
zdtm_map_of(const void *p, struct zdtm_map *m)
{
  FILE *f = fopen("/proc/self/maps", "re");
  char line[512];
  int found = -1;
  if (!f)
    return -1;
  while (found < 0 && fgets(line, sizeof line, f))
    {
      int pos = 0;
      memset(m, 0, sizeof *m);
      if (sscanf(line, "%lx-%lx %4s %lx %15s %lu %n", &m->start, &m->end, m->perms, &m->pgoff,
                 m->dev, &m->ino, &pos)
          < 6)
        continue;
      if ((uintptr_t)p >= m->start && (uintptr_t)p < m->end)
        {
          snprintf(m->name, sizeof m->name, "%s", pos ? line + pos : "");
          m->name[strcspn(m->name, "\n")] = 0;
          found = 0;
        }
    }
  fclose(f);
  return found;
}

#endif
