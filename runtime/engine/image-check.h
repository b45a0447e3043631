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

/* The file-system identities of the image's processes (file-system UID
   and GID, supplementary groups): an open of img_open_typed that the
   restorer's own is denied (EACCES: a file of mode 0600 of a container
   user, a directory of mode 0700 on its path) is tried again with each,
   as the processes that hold it opened it. Needs CAP_SETUID and
   CAP_SETGID, which a restorer that must give its tasks those IDs holds. */
struct img_fsid
{
  uid_t uid;
  gid_t gid;
  const gid_t *groups;
  size_t ngroups;
};
void
img_set_fsids(const struct img_fsid *ids, size_t n);

/* IDS[0..N) (the TIDs of a tree, PIDs of zombies): 0 when all differ;
   else -1 and *dup the first value seen twice. Sorts IDS. */
int
img_ids_unique(pid_t *ids, size_t n, pid_t *dup);

#endif
