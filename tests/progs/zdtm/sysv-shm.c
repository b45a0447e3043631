/* zdtm-sysv-shm: SysV shared memory segments of the container's IPC
 * namespace (run as a container's init; in process mode the namespace is
 * the host's and an attached segment is refused).
 * - A: a key, mode 0640, five pages and 100 bytes; pages 0, 1, 3 and the
 *   last written, 2 and 4 never touched; attached by the parent, and in
 *   the child twice: inherited through fork (same address), and again
 *   read-only (SHM_RDONLY) at an address of its own;
 * - B: private, two pages written, then detached: attached by no one.
 * After restore: the same IDs, key, mode, size, attach counts (3 and 0);
 * A's bytes, its untouched pages zero; each attachment at its address,
 * the read-only one still read-only, its inode the segment's ID; B's
 * bytes; a write by the child after restore is seen by the parent. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <unistd.h>

#define PG 4096UL
#define KEY_A 0x5eed0003
#define SIZE_A (5 * PG + 100)
#define TOKEN 0x7e

static bool
written(size_t pg)
{
  return pg == 0 || pg == 1 || pg == 3 || pg == 5;
}

static void
check_a(const char *who, const uint8_t *a)
{
  for (size_t off = 0; off < SIZE_A; off++)
    {
      uint8_t want = written(off / PG) ? zdtm_pattern(7, off) : 0;
      if (a[off] != want)
        {
          zdtm_fail("%s: segment A byte %zu: %#x, expected %#x", who, off, a[off], want);
          return;
        }
    }
}

/* The maps line of the mapping at ADDR: its permissions and inode. */
static bool
mapping(void *addr, char perms[8], unsigned long *ino)
{
  FILE *f = fopen("/proc/self/maps", "re");
  char line[512];
  bool found = false;
  while (f && !found && fgets(line, sizeof line, f))
    {
      unsigned long s;
      if (sscanf(line, "%lx-%*x %7s %*s %*s %lu", &s, perms, ino) == 3 && s == (unsigned long)addr)
        found = true;
    }
  if (f)
    fclose(f);
  return found;
}

static void
check_map(const char *who, void *addr, const char *want_perms, int id)
{
  char perms[8] = "";
  unsigned long ino = 0;
  if (!mapping(addr, perms, &ino) || strcmp(perms, want_perms) || ino != (unsigned long)id)
    zdtm_fail("%s: attachment at %p: %s inode %lu, expected %s inode %d", who, addr, perms, ino,
              want_perms, id);
}

int
main(int argc, char **argv)
{
  struct shmid_ds da0, da1, db0, db1;
  int a, b, st, sync[2];
  uint8_t *pa, *pb, *ro = NULL;
  pid_t kid;
  char c;

  zdtm_init(argc, argv);
  a = shmget(KEY_A, SIZE_A, IPC_CREAT | IPC_EXCL | 0640);
  b = shmget(IPC_PRIVATE, 2 * PG, IPC_CREAT | 0600);
  if (a < 0 || b < 0)
    zdtm_error("shmget: %s", strerror(errno));
  pa = shmat(a, NULL, 0);
  pb = shmat(b, NULL, 0);
  if (pa == (void *)-1 || pb == (void *)-1)
    zdtm_error("shmat: %s", strerror(errno));
  for (size_t off = 0; off < SIZE_A; off++)
    if (written(off / PG))
      pa[off] = zdtm_pattern(7, off);
  for (size_t off = 0; off < 2 * PG; off++)
    pb[off] = zdtm_pattern(8, off);
  if (shmdt(pb) < 0 || pipe(sync) < 0)
    zdtm_error("shmdt/pipe: %s", strerror(errno));
  kid = fork();
  if (kid < 0)
    zdtm_error("fork: %s", strerror(errno));
  if (kid == 0)
    {
      ro = shmat(a, NULL, SHM_RDONLY);
      if (ro == (void *)-1 || write(sync[1], "r", 1) != 1)
        exit(2);
      zdtm_wait();
      check_map("child", pa, "rw-s", a);
      check_map("child", ro, "r--s", a);
      check_a("child (read-only attachment)", ro);
      pa[2 * PG] = TOKEN;
      exit(zdtm_status());
    }
  if (read(sync[0], &c, 1) != 1)
    zdtm_error("the child could not attach");
  if (shmctl(a, IPC_STAT, &da0) < 0 || shmctl(b, IPC_STAT, &db0) < 0)
    zdtm_error("IPC_STAT: %s", strerror(errno));
  if (da0.shm_nattch != 3 || db0.shm_nattch != 0)
    zdtm_error("attach counts %lu and %lu, expected 3 and 0", (unsigned long)da0.shm_nattch,
               (unsigned long)db0.shm_nattch);
  zdtm_ready();
  zdtm_wait();

  if (shmget(KEY_A, 0, 0) != a)
    zdtm_fail("key %#x finds ID %d, expected %d", KEY_A, shmget(KEY_A, 0, 0), a);
  if (shmctl(a, IPC_STAT, &da1) < 0 || shmctl(b, IPC_STAT, &db1) < 0)
    zdtm_fail("IPC_STAT of %d, %d: %s", a, b, strerror(errno));
  else
    {
      if (da1.shm_segsz != SIZE_A || db1.shm_segsz != 2 * PG || (da1.shm_perm.mode & 0777) != 0640
          || (db1.shm_perm.mode & 0777) != 0600 || da1.shm_perm.uid != da0.shm_perm.uid
          || da1.shm_perm.cuid != da0.shm_perm.cuid || da1.shm_perm.gid != da0.shm_perm.gid)
        zdtm_fail("segments: sizes %zu %zu, modes %#o %#o, owner %u:%u (expected %lu %lu, 0640 "
                  "0600, %u:%u)",
                  da1.shm_segsz, db1.shm_segsz, da1.shm_perm.mode & 0777, db1.shm_perm.mode & 0777,
                  da1.shm_perm.uid, da1.shm_perm.gid, SIZE_A, 2 * PG, da0.shm_perm.uid,
                  da0.shm_perm.gid);
      if (da1.shm_nattch != 3 || db1.shm_nattch != 0)
        zdtm_fail("attach counts %lu and %lu, expected 3 and 0", (unsigned long)da1.shm_nattch,
                  (unsigned long)db1.shm_nattch);
    }
  check_map("parent", pa, "rw-s", a);
  check_a("parent", pa);
  pb = shmat(b, NULL, SHM_RDONLY);
  if (pb == (void *)-1)
    zdtm_fail("shmat of B: %s", strerror(errno));
  else
    for (size_t off = 0; off < 2 * PG; off++)
      if (pb[off] != zdtm_pattern(8, off))
        {
          zdtm_fail("segment B byte %zu differs", off);
          break;
        }
  kill(kid, SIGTERM);
  if (waitpid(kid, &st, 0) != kid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
    zdtm_fail("the child failed (status %#x)", st);
  if (pa[2 * PG] != TOKEN)
    zdtm_fail("the child's write after restore is not seen by the parent");
  shmctl(a, IPC_RMID, NULL), shmctl(b, IPC_RMID, NULL);
  zdtm_finish();
}
