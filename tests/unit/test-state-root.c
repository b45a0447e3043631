/* crest: the default state root's reading of uid_map (runtime/lib/state-root.c):
   UID 0 of a rootless podman's user namespace is recognised, and its state goes
   to the owning user's /run/user/OUTER. */
#include <config.h>
#include "state-root.h"
#include "tap.h"

int
main(void)
{
  tap_ok(crest_uid_map_outer_root("         0          0 4294967295\n") == -1,
         "the initial namespace's map: not rootless");
  tap_ok(crest_uid_map_outer_root(
             "         0       1000          1\n         1     100000      65536\n")
             == 1000,
         "rootless podman's map: UID 0 is outer UID 1000");
  tap_ok(crest_uid_map_outer_root(
             "         1     100000      65536\n         0       1234          1\n")
             == 1234,
         "UID 0's line found wherever it is");
  tap_ok(crest_uid_map_outer_root("      1000       1000          1\n") == -1,
         "UID 0 unmapped: no outer root");
  tap_ok(crest_uid_map_outer_root("") == -1, "an empty map (a namespace before setup)");
  tap_ok(crest_uid_map_outer_root("         0          0          1\n") == -1,
         "a namespace whose root is the real root is not rootless");
  return tap_done();
}
