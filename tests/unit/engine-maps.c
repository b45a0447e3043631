/* crest: unit tests of the reading of a /proc/PID/maps line (maps_line,
 * mem.c, TAP): lines as the kernel prints them, lines it does not, and
 * every line of this process's own maps read alike by maps_line and by
 * sscanf, the way it was read before. */
#include <config.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dump-int.h"
#include "tap.h"

struct mcase
{
  const char *line;
  bool ok;
  uint64_t start, end, off, ino;
  const char *perms;
  unsigned maj, min;
  const char *name;
};

static const struct mcase cases[] = {
  { "7f3312b5e000-7f3312b6b000 rw-p 00000000 00:00 0", true, 0x7f3312b5e000, 0x7f3312b6b000, 0, 0,
    "rw-p", 0, 0, "" },
  { "55c5498c1000-55c549ab5000 rw-p 00000000 00:00 0                          [heap]", true,
    0x55c5498c1000, 0x55c549ab5000, 0, 0, "rw-p", 0, 0, "[heap]" },
  { "7f3312b58000-7f3312b5c000 r--p 001cf000 fe:00 332835                     "
    "/usr/lib/x86_64-linux-gnu/libc.so.6",
    true, 0x7f3312b58000, 0x7f3312b5c000, 0x1cf000, 332835, "r--p", 0xfe, 0,
    "/usr/lib/x86_64-linux-gnu/libc.so.6" },
  { "7f0000000000-7f0000001000 rw-s 00000000 00:01 1234 /memfd:a b (deleted)", true, 0x7f0000000000,
    0x7f0000001000, 0, 1234, "rw-s", 0, 1, "/memfd:a b (deleted)" },
  { "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]", true,
    0xffffffffff600000, 0xffffffffff601000, 0, 0, "--xp", 0, 0, "[vsyscall]" },
  { "1000-2000 rw-p 00000000 103:02 18446744073709551615 /x", true, 0x1000, 0x2000, 0, UINT64_MAX,
    "rw-p", 0x103, 2, "/x" },
  { "", false, 0, 0, 0, 0, NULL, 0, 0, NULL },
  { "Rss:                   4 kB", false, 0, 0, 0, 0, NULL, 0, 0, NULL },
  { "7f00-7f10", false, 0, 0, 0, 0, NULL, 0, 0, NULL },
  { "7f00-7f10 rw-p", false, 0, 0, 0, 0, NULL, 0, 0, NULL },
  { "7f00-7f10 rw-p 0 00:00", false, 0, 0, 0, 0, NULL, 0, 0, NULL },
  { "7f00-7f10 rw 00000000 00:00 0", false, 0, 0, 0, 0, NULL, 0, 0, NULL },
  { "7f00-7f10 rw-p 00000000 0000 0", false, 0, 0, 0, 0, NULL, 0, 0, NULL },
  { "7f00-7f10 rw-p 00000000 00:00 x", false, 0, 0, 0, 0, NULL, 0, 0, NULL },
  { "7f00-7f10 rw-p 00000000 00:00 12x /y", false, 0, 0, 0, 0, NULL, 0, 0, NULL },
  { " 7f00-7f10 rw-p 00000000 00:00 0", false, 0, 0, 0, 0, NULL, 0, 0, NULL },
};

static void
own_maps(void)
{
  FILE *f = fopen("/proc/self/maps", "re");
  char line[4096];
  int n = 0, same = 0;
  if (!f)
    {
      tap_ok(0, "open /proc/self/maps");
      return;
    }
  while (fgets(line, sizeof line, f))
    {
      struct maps_line m;
      unsigned long s, e, off, ino;
      unsigned maj, min;
      char perms[8];
      int pos = 0;
      line[strcspn(line, "\n")] = 0;
      n++;
      if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu %n", &s, &e, perms, &off, &maj, &min, &ino, &pos)
              < 7
          || !maps_line(line, &m))
        continue;
      same += m.start == s && m.end == e && strcmp(m.perms, perms) == 0 && m.off == off
              && m.maj == maj && m.min == min && m.ino == ino
              && strcmp(m.name, pos ? line + pos : "") == 0;
    }
  fclose(f);
  tap_ok(n > 5 && same == n, "every line of this process's maps (%d) read as sscanf reads it (%d)",
         n, same);
}

int
main(void)
{
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    {
      const struct mcase *c = &cases[i];
      struct maps_line m;
      bool ok = maps_line(c->line, &m);
      if (!c->ok)
        {
          tap_ok(!ok, "refused: \"%s\"", c->line);
          continue;
        }
      tap_ok(ok && m.start == c->start && m.end == c->end && m.off == c->off && m.ino == c->ino
                 && strcmp(m.perms, c->perms) == 0 && m.maj == c->maj && m.min == c->min
                 && strcmp(m.name, c->name) == 0,
             "read: \"%s\"", c->line);
    }
  own_maps();
  return tap_done();
}
