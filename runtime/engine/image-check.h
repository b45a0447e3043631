/* crest: checks restore makes on what an image says, before it believes it
 * (docs/image-format.md, "Checks a reader makes"). The image is untrusted
 * input: every path it names is opened without blocking and without side
 * effects until its type is known, every ID is checked for uniqueness. */
#ifndef CREST_IMAGE_CHECK_H
#define CREST_IMAGE_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "error.h"

/* An absolute path shorter than PATH_MAX, as the format requires of every
   path restore opens. */
bool
img_path_ok(const char *path);

/* The devices a "dev" file may name, and their device numbers. */
bool
img_dev_ok(const char *path);

/* Open PATH, which the image says is of type TYPE (S_IFREG, S_IFDIR,
   S_IFIFO or S_IFCHR), with FLAGS. The path is first opened with O_PATH
   (no side effect, never blocks) and its type checked: a FIFO where the
   image names a regular file is refused instead of waiting for a writer.
   The real open adds O_NONBLOCK, must reach the same inode, and drops
   O_NONBLOCK again unless FLAGS asked for it. WHAT names the object in
   the message. Returns the descriptor, or < 0 with ERR set. */
int
img_open_typed(const char *path, int flags, mode_t type, const char *what, crest_error_t *err);

/* IDS[0..N) (the TIDs of a tree, PIDs of zombies): 0 when all differ;
   else -1 and *dup the first value seen twice. Sorts IDS. */
int
img_ids_unique(pid_t *ids, size_t n, pid_t *dup);

#endif
