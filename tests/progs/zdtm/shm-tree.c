/* zdtm-shm-tree: one shared anonymous object (MAP_SHARED|MAP_ANONYMOUS, 64
 * pages) shared by three processes: the parent mapped it, two children
 * inherited it. After restore:
 * - each process checks the pattern and the marks the others left before
 *   the checkpoint;
 * - a write by one is seen by the others: the parent writes a token, the
 *   first child waits for it and writes its own, the second child waits for
 *   that and writes its own, which the parent waits for. A wait that sees
 *   nothing in 20 s is a failure (the processes no longer share memory);
 * - each records the inode maps shows for its mapping, and the parent
 *   checks all three are the same object.
 * The root forwards SIGTERM to the children and reports their status. */
#define _GNU_SOURCE
#include "zdtm.h"
#include "maps.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PG 4096
#define NPG 64

struct hdr
{
  volatile uint32_t mark[3];  /* written before the checkpoint */
  volatile uint32_t token[3]; /* written after restore, in turn */
  volatile unsigned long ino[3];
};

static uint8_t *shm;

static void
check_all(int me)
{
  struct hdr *h = (struct hdr *)shm;
  struct zdtm_map m;
  size_t off;
  if ((off = zdtm_check(shm + PG, (NPG - 1) * PG, 71, PG)) != (size_t)-1)
    zdtm_fail("process %d: byte %zu of the object differs", me, PG + off);
  for (int i = 0; i < 3; i++)
    if (h->mark[i] != 0x100u + i)
      zdtm_fail("process %d: mark of process %d expected %#x, got %#x", me, i, 0x100 + i,
                h->mark[i]);
  if (zdtm_map_of(shm, &m) < 0 || strcmp(m.perms, "rw-s") != 0)
    zdtm_fail("process %d: the mapping is gone or not rw-s any more", me);
  else
    h->ino[me] = m.ino;
}

static void
child(int me)
{
  struct hdr *h = (struct hdr *)shm;
  h->mark[me] = 0x100 + me;
  zdtm_wait();
  check_all(me);
  /* the token chain: 0 -> 1 -> 2 -> 0 */
  if (!zdtm_await(&h->token[me - 1], 0xA0 + me - 1))
    zdtm_fail("process %d: the write of process %d never arrived: not shared any more", me, me - 1);
  else
    h->token[me] = 0xA0 + me;
  _exit(zdtm_status());
}

int
main(int argc, char **argv)
{
  struct hdr *h;
  pid_t kids[2];

  zdtm_init(argc, argv);
  shm = mmap(NULL, NPG * PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shm == MAP_FAILED)
    zdtm_error("mmap: %s", strerror(errno));
  h = (struct hdr *)shm;
  zdtm_fill(shm + PG, (NPG - 1) * PG, 71, PG);
  h->mark[0] = 0x100;
  for (int i = 0; i < 2; i++)
    {
      kids[i] = fork();
      if (kids[i] < 0)
        zdtm_error("fork: %s", strerror(errno));
      if (kids[i] == 0)
        child(i + 1);
    }
  if (!zdtm_await(&h->mark[1], 0x101) || !zdtm_await(&h->mark[2], 0x102))
    zdtm_error("the children did not write their marks");

  zdtm_ready();
  zdtm_wait();
  for (int i = 0; i < 2; i++)
    kill(kids[i], SIGTERM);
  check_all(0);
  h->token[0] = 0xA0;
  if (!zdtm_await(&h->token[2], 0xA2))
    zdtm_fail("process 0: the write of process 2 never arrived: not shared any more");
  for (int i = 0; i < 2; i++)
    {
      int st;
      if (waitpid(kids[i], &st, 0) != kids[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        zdtm_fail("child %d ended with status %#x", (int)kids[i], st);
    }
  if (h->ino[0] != h->ino[1] || h->ino[0] != h->ino[2])
    zdtm_fail("the three mappings are not one object: inodes %lu, %lu, %lu", h->ino[0], h->ino[1],
              h->ino[2]);
  zdtm_finish();
}
