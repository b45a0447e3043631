/* crest: a checkpoint as one archive (checkpoint --export, restore --import).
 *
 * The layout is podman's and CRI-O's, so their tools can list it:
 *   checkpoint/    crest's image directory (docs/image-format.md)
 *   spec.dump      the OCI config the container ran with
 *   config.dump    id, name, runtime "crest", creation and checkpoint times
 *   stats-dump     the dump's timings and sizes (CRIU's binary layout)
 *   crest.json     what the target must match: kernel release and machine,
 *                  vDSO digest, the xsave features the threads' state uses,
 *                  the image format, and size, mode and SHA-256 of every
 *                  root file system file the tree has open or mapped; the
 *                  SHA-256 of the three .dump files
 * crest writes no rootfs-diff.tar: a crun bundle's root file system is a
 * plain directory with no lower layer to diff against, so crest cannot know
 * what changed; the files the tree uses are checked on the target instead
 * (README, "Migrating a container"). Only the crest command links libarchive. */
#ifndef CREST_CR_ARCHIVE_H
#define CREST_CR_ARCHIVE_H

#include <stdint.h>
#include <time.h>
#include "crest.h"
#include "error.h"

/* What the container glue measured and knows, for config.dump and
   stats-dump. */
struct crest_checkpoint_info
{
  char *bundle;  /* the bundle the container ran from (absolute) */
  char *created; /* crun's "created" time (RFC 3339), or NULL */
  struct timespec checkpointed;
  uint64_t freezing_us; /* asking the cgroup to freeze, until frozen */
  uint64_t frozen_us;   /* the tree stopped, by the freezer or by ptrace */
  uint64_t dump_us;     /* the engine's whole dump */
  uint64_t pages_written;
};

void
crest_checkpoint_info_free(struct crest_checkpoint_info *i);

/* stats-dump alone in DIR: podman's --print-stats reads it from the
   --work-path it gave (the container's bundle directory), as CRIU writes it
   in its work directory. */
int
crest_write_stats_dump(const char *dir, const struct crest_checkpoint_info *info,
                       crest_error_t *err);
/* The pages (of 4 KiB) IMAGE_DIR's pages-* files hold. */
uint64_t
crest_image_pages(const char *image_dir);
/* stats-restore in DIR (the restore's --work-path, where podman's restore
   --print-stats reads it): the restore's time in microseconds and the
   pages of IMAGE_DIR. */
int
crest_write_stats_restore(const char *dir, const char *image_dir, uint64_t restore_us,
                          crest_error_t *err);
/* stats-dump and inventory.img in IMAGE_DIR, the two files podman and CRI-O
   look for in a checkpoint directory. */
int
crest_image_write_engine_files(const char *image_dir, const struct crest_checkpoint_info *info,
                               crest_error_t *err);

/* Write IMAGE_DIR (a container image with its container-config.json) and
   the files above as one archive FILE. COMPRESS: "none", "gzip", "zstd".
   FILE appears complete or not at all. */
int
crest_archive_export(const char *file, const char *compress, const char *id, const char *image_dir,
                     const struct crest_checkpoint_info *info, crest_error_t *err);

/* Unpack FILE into a new directory beside it (under G's state root where
   that cannot be written), refusing any entry
   that is not part of the layout above (absolute, "..", links, devices) or
   that would make the unpacked files pass LIMIT bytes, and
   check that this machine and BUNDLE's root file system are what the image
   needs. On success *DIR is the unpacked directory (its image in
   DIR/checkpoint); the caller removes it. On failure nothing is left. The
   unpacked directories of a crest that died importing the same ID to the
   same place are removed first. */
int
crest_archive_import(struct crest_global *g, const char *file, const char *id, const char *bundle,
                     uint64_t limit, char **dir, crest_error_t *err);

/* What an archive may expand to unless --import-limit or
   CREST_IMPORT_LIMIT says otherwise. */
#define CREST_IMPORT_LIMIT_DEFAULT (16ull << 30)

/* "123", "64K", "16G", "2TiB" (binary units) into bytes: 0, or -1 when TEXT
   is not such a size. */
int
crest_parse_size(const char *text, uint64_t *out);

#endif
