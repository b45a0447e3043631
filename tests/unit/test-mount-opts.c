/* crest: a container's mount options against its config's
 * (runtime/src/mount-opts.c): what the kernel shows (mountinfo's
 * per-mount and super block options) is compared with what crun would
 * make from the config at restore. Only mounts whose flags need no host
 * lookup here (new mounts; a bind whose source crest cannot see is taken
 * as keeping its source's flags). */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "mount-opts.h"
#include "tap.h"

static const char config[]
    = "{\"root\": {\"path\": \"rootfs\", \"readonly\": true},"
      " \"mounts\": ["
      "  {\"destination\": \"/proc\", \"type\": \"proc\", \"source\": \"proc\"},"
      "  {\"destination\": \"/dev/shm\", \"type\": \"tmpfs\", \"source\": \"shm\","
      "   \"options\": [\"nosuid\", \"noexec\", \"nodev\", \"mode=1777\", \"size=65536k\"]},"
      "  {\"destination\": \"/dev\", \"type\": \"tmpfs\", \"source\": \"tmpfs\","
      "   \"options\": [\"nosuid\", \"strictatime\", \"mode=755\", \"size=64m\"]},"
      "  {\"destination\": \"/tmp\", \"type\": \"tmpfs\", \"source\": \"tmpfs\","
      "   \"options\": [\"noexec\", \"noexec\", \"exec\", \"nr_inodes=1k\"]},"
      "  {\"destination\": \"/data\", \"type\": \"bind\","
      "   \"source\": \"/nonexistent/crest-unit\", \"options\": [\"rbind\", \"nosuid\"]},"
      "  {\"destination\": \"/sys/fs/cgroup\", \"type\": \"cgroup\", \"source\": \"cgroup\","
      "   \"options\": [\"nosuid\", \"noexec\", \"nodev\", \"relatime\", \"ro\"]},"
      "  {\"destination\": \"/sys\", \"type\": \"sysfs\", \"source\": \"sysfs\","
      "   \"options\": [\"nosuid\", \"noexec\", \"nodev\", \"ro\"]}],"
      " \"linux\": {\"maskedPaths\": [\"/proc/kcore\"], \"readonlyPaths\": [\"/proc/sys\"]}}";
/* The same /sys, in a network namespace of the container's own. */
static const char config_netns[]
    = "{\"mounts\": ["
      "  {\"destination\": \"/sys\", \"type\": \"sysfs\", \"source\": \"sysfs\","
      "   \"options\": [\"nosuid\", \"noexec\", \"nodev\", \"ro\"]}],"
      " \"linux\": {\"namespaces\": [{\"type\": \"pid\"}, {\"type\": \"network\"}]}}";

/* The one-line refusal for a mount, or NULL when it passes. */
static char *
check(yajl_val cfg, const char *mp, const char *opts, const char *fstype, const char *super)
{
  crest_error_t err = NULL;
  char *msg = NULL;
  if (crest_check_mount_opts("c", cfg, "/nonexistent", mp, opts, fstype, super, &err) < 0)
    msg = crest_error_text(err);
  crest_error_release(&err);
  return msg;
}

static void
is_refused(yajl_val cfg, const char *mp, const char *opts, const char *fstype, const char *super,
           const char *want, const char *what)
{
  char *msg = check(cfg, mp, opts, fstype, super);
  tap_ok(msg && strstr(msg, want), "%s: refused with [%s]", what, want);
  if (msg && !strstr(msg, want))
    printf("#   got: %s\n", msg);
  free(msg);
}

static void
passes(yajl_val cfg, const char *mp, const char *opts, const char *fstype, const char *super,
       const char *what)
{
  char *msg = check(cfg, mp, opts, fstype, super);
  tap_ok(!msg, "%s: passes", what);
  if (msg)
    printf("#   got: %s\n", msg);
  free(msg);
}

int
main(void)
{
  char ebuf[256];
  yajl_val cfg = yajl_tree_parse(config, ebuf, sizeof ebuf);
  struct crest_mount_expect e;
  int atime;
  unsigned f;

  tap_ok(cfg != NULL, "the config parses");
  /* mountinfo's per-mount options */
  f = crest_mount_flags_parse("rw,nosuid,nodev,noexec,relatime", &atime);
  tap_ok(f == (CREST_MNT_NOSUID | CREST_MNT_NODEV | CREST_MNT_NOEXEC)
             && atime == CREST_ATIME_RELATIME,
         "rw,nosuid,nodev,noexec,relatime: three flags, relatime");
  f = crest_mount_flags_parse("ro,nodiratime,noatime", &atime);
  tap_ok(f == (CREST_MNT_RO | CREST_MNT_NODIRATIME) && atime == CREST_ATIME_NOATIME,
         "ro,nodiratime,noatime: read-only, nodiratime, noatime");
  f = crest_mount_flags_parse("rw,nosuid", &atime);
  tap_ok(f == CREST_MNT_NOSUID && atime == CREST_ATIME_STRICT,
         "rw,nosuid: no access time word is strictatime");
  /* amounts as tmpfs reads them */
  tap_ok(crest_tmpfs_amount("65536k", true, 1000000, 4096) == 16384, "size=65536k: 16384 pages");
  tap_ok(crest_tmpfs_amount("1m", true, 1000000, 4096) == 256, "size=1m: 256 pages");
  tap_ok(crest_tmpfs_amount("100000", true, 1000000, 4096) == 25,
         "size=100000: 25 pages (rounded up)");
  tap_ok(crest_tmpfs_amount("50%", true, 1000000, 4096) == 500000, "size=50%%: half the pages");
  tap_ok(crest_tmpfs_amount("1k", false, 1000000, 4096) == 1024, "nr_inodes=1k: 1024");
  tap_ok(crest_tmpfs_amount("12x", true, 1000000, 4096) == -1
             && crest_tmpfs_amount("-1", true, 1000000, 4096) == -1
             && crest_tmpfs_amount("5%", false, 1000000, 4096) == -1,
         "12x, -1, and a percentage of inodes: not understood");
  /* what the config makes */
  crest_mount_expect(cfg, "/dev/shm", &e);
  tap_ok(e.known && !e.bind && e.atime == CREST_ATIME_RELATIME
             && e.flags == (CREST_MNT_NOSUID | CREST_MNT_NODEV | CREST_MNT_NOEXEC),
         "/dev/shm: a new tmpfs, nosuid,nodev,noexec, relatime by default");
  crest_mount_expect(cfg, "/tmp", &e);
  tap_ok(e.known && e.flags == 0, "/tmp: noexec noexec exec is exec (the last word wins)");
  crest_mount_expect(cfg, "/data", &e);
  tap_ok(e.known && e.bind && e.atime == CREST_ATIME_ANY && e.source
             && strcmp(e.source, "/nonexistent/crest-unit") == 0,
         "/data: a bind, its source, its access times its source's");
  crest_mount_expect(cfg, "/proc/kcore", &e);
  tap_ok(!e.known, "a masked path: not compared");
  crest_mount_expect(cfg, "/dev/null", &e);
  tap_ok(!e.known, "a mount crun adds itself: not compared");
  crest_mount_expect(cfg, "/proc/sys", &e);
  tap_ok(e.known && e.compared == CREST_MNT_RO && e.flags == CREST_MNT_RO,
         "a read-only path: read-only, nothing else compared");
  crest_mount_expect(cfg, "/", &e);
  tap_ok(e.known && e.bind && e.flags == CREST_MNT_RO && strcmp(e.source, "rootfs") == 0,
         "the root: a bind of root.path, read-only");

  /* as crun makes them */
  passes(cfg, "/dev/shm", "rw,nosuid,nodev,noexec,relatime", "tmpfs", "rw,size=65536k,uid=999",
         "/dev/shm as crun makes it");
  passes(cfg, "/dev", "rw,nosuid", "tmpfs", "rw,size=65536k,mode=755,uid=999",
         "/dev as crun makes it (strictatime, size=64m shown as 65536k)");
  passes(cfg, "/proc", "rw,relatime", "proc", "rw", "/proc as crun makes it");
  passes(cfg, "/sys/fs/cgroup", "ro,nosuid,nodev,noexec,relatime", "cgroup2", "rw",
         "a cgroup mount made as cgroup2");
  passes(cfg, "/proc/sys", "ro,nosuid,relatime", "proc", "rw",
         "a read-only path whose parent is nosuid");
  passes(cfg, "/proc/kcore", "rw,noexec", "tmpfs", "rw,size=0k", "a masked path");
  passes(cfg, "/data", "rw,nosuid,nodev,noatime", "ext4", "rw",
         "a bind whose source cannot be looked up: its extra flags taken as the source's");
  passes(cfg, "/", "ro,nodev,relatime", "ext4", "rw",
         "the root, its source not looked up: nodev taken as the source's");
  passes(cfg, "/tmp", "rw,relatime", "tmpfs", "rw,nr_inodes=1024,uid=999",
         "/tmp with nr_inodes=1k shown as 1024");

  /* remounted by the container */
  is_refused(cfg, "/dev/shm", "ro,nosuid,nodev,noexec,relatime", "tmpfs", "rw,size=65536k",
             "its mount on /dev/shm is read-only, where its config makes it read-write",
             "/dev/shm remounted read-only");
  is_refused(cfg, "/dev/shm", "rw,nodev,noexec,relatime", "tmpfs", "rw,size=65536k",
             "its mount on /dev/shm is suid, where its config makes it nosuid",
             "/dev/shm remounted suid");
  is_refused(cfg, "/tmp", "rw,noexec,relatime", "tmpfs", "rw,nr_inodes=1024",
             "its mount on /tmp is noexec, where its config makes it exec",
             "/tmp remounted noexec");
  is_refused(cfg, "/dev/shm", "rw,nosuid,nodev,noexec,noatime", "tmpfs", "rw,size=65536k",
             "its mount on /dev/shm is noatime, where its config makes it relatime",
             "/dev/shm remounted noatime");
  is_refused(cfg, "/dev", "rw,nosuid,relatime", "tmpfs", "rw,size=65536k,mode=755",
             "its mount on /dev is relatime, where its config makes it strictatime",
             "/dev remounted relatime");
  is_refused(cfg, "/dev/shm", "rw,nosuid,nodev,noexec,relatime", "tmpfs",
             "rw,size=1048576k,uid=999",
             "its tmpfs on /dev/shm has size=1048576k, where its config gives size=65536k",
             "/dev/shm made larger");
  is_refused(cfg, "/dev/shm", "rw,nosuid,nodev,noexec,relatime", "tmpfs", "rw,size=65536k,mode=700",
             "its tmpfs on /dev/shm has mode=700, where its config gives mode=1777",
             "/dev/shm given mode 700");
  is_refused(cfg, "/tmp", "rw,relatime", "tmpfs", "rw,nr_inodes=5",
             "its tmpfs on /tmp has nr_inodes=5, where its config gives nr_inodes=1k",
             "/tmp given 5 inodes");
  is_refused(cfg, "/proc", "rw,relatime", "proc", "rw,hidepid=invisible",
             "its proc on /proc has hidepid=invisible, where its config gives no hidepid=",
             "/proc remounted hidepid=2");
  is_refused(cfg, "/proc", "rw,relatime", "proc", "rw,subset=pid",
             "its proc on /proc has subset=pid", "/proc remounted subset=pid");
  is_refused(cfg, "/data", "rw,relatime", "ext4", "rw",
             "its mount on /data is suid, where its config makes it nosuid",
             "a bind whose config flag is gone (not its source's doing)");
  is_refused(cfg, "/proc/sys", "rw,relatime", "proc", "rw",
             "its mount on /proc/sys is read-write, where its config makes it read-only",
             "a read-only path remounted read-write");
  /* sysfs without a network namespace of its own: crun binds the host's
     /sys, with the host's flags (a host whose /sys is not nosuid) */
  passes(cfg, "/sys", "ro,relatime", "sysfs", "rw",
         "/sys as crun binds the host's without a network namespace");
  {
    yajl_val cn = yajl_tree_parse(config_netns, ebuf, sizeof ebuf);
    is_refused(cn, "/sys", "ro,relatime", "sysfs", "rw",
               "its mount on /sys is suid, where its config makes it nosuid",
               "/sys made by crun in the container's network namespace, remounted suid");
    passes(cn, "/sys", "ro,nosuid,nodev,noexec,relatime", "sysfs", "rw",
           "/sys as crun makes it in the container's network namespace");
    yajl_tree_free(cn);
  }
  yajl_tree_free(cfg);
  return tap_done();
}
