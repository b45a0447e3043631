/* crest: the options of a container's mounts against its config's
   (mount-opts.c). */
#ifndef CREST_MOUNT_OPTS_H
#define CREST_MOUNT_OPTS_H

#include <stdbool.h>
#include <yajl/yajl_tree.h>
#include "error.h"

/* Per-mount flags, as mountinfo's sixth field and a config's options name
   them. */
enum
{
  CREST_MNT_RO = 1u << 0,
  CREST_MNT_NOSUID = 1u << 1,
  CREST_MNT_NODEV = 1u << 2,
  CREST_MNT_NOEXEC = 1u << 3,
  CREST_MNT_NODIRATIME = 1u << 4,
};
/* Access time updates: what a mount does (mountinfo shows relatime,
   noatime, or neither: strictatime). */
enum crest_atime
{
  CREST_ATIME_ANY = -1, /* not compared */
  CREST_ATIME_RELATIME,
  CREST_ATIME_NOATIME,
  CREST_ATIME_STRICT,
};

/* What the config makes at a mount point, as far as a restore's crun
   would make it again. */
struct crest_mount_expect
{
  bool known;         /* false: a mount the options of which are not compared */
  bool bind;          /* a bind: flags of its source's mount may be kept */
  const char *source; /* a bind's source (the root's: its bundle path), or NULL */
  const char *type;   /* the config's type ("tmpfs", "proc"...), or NULL */
  unsigned flags;     /* the flags it gives */
  unsigned compared;  /* the flags compared (the others: either way) */
  int atime;          /* enum crest_atime */
  yajl_val options;   /* the config's option list, or NULL */
};

/* The expectation for mount point MP of CFG. The root, the config's mounts (the last one at MP),
   its read-only paths (read-only, nothing else compared); masked paths and what crun adds itself
   are not known. */
void
crest_mount_expect(yajl_val cfg, const char *mp, struct crest_mount_expect *e);

/* mountinfo's per-mount options ("rw,nosuid,relatime") as flags and an
   access time mode. */
unsigned
crest_mount_flags_parse(const char *opts, int *atime);

/* A mount point of mountinfo, its octal escapes (\040 for a space...)
   decoded, in place. */
char *
crest_mount_unescape(char *s);

/* The flags (and *ATIME) of the host mount PATH (crest's own view) lies
   on; -1 when not known. */
int
crest_host_path_flags(const char *path, int *atime);

/* A mount of the config (point MP, mountinfo's per-mount options OPTS,
   file system type FSTYPE, super block options SUPER) that the container
   remounted with other options than its config gives (read-only, nosuid,
   nodev, noexec, access times; a tmpfs's size, inode count and mode; a
   proc's hidepid, gid and subset): a restore, crun making it again from
   the config, would give the config's. Refused in one line naming the
   option; flags a bind keeps from its source's mount (locked in a user
   namespace) are taken as the source's doing. */
int
crest_check_mount_opts(const char *id, yajl_val cfg, const char *bundle, const char *mp,
                       const char *opts, const char *fstype, const char *super, crest_error_t *err);

/* For the tests: a tmpfs's size or inode count in the config's terms
   ("65536k", "1m", "50%", "1000"), in pages (size) or inodes; -1 when not
   understood. TOTAL_PAGES: the machine's (for %). */
long long
crest_tmpfs_amount(const char *v, bool pages, long long total_pages, long page_size);

#endif
