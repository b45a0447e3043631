/* zdtm-sysv-ipc: SysV semaphore sets and message queues of the container's
 * IPC namespace (run as a container's init; in process mode the namespace
 * is the host's and not the tree's).
 * - 70 sets made and removed first, so that the next IDs are in a later
 *   cycle of the kernel's IDs (sequence 1 where a cycle is 64 indexes, 4
 *   where it is 16: a kernel built with CONFIG_BASE_SMALL, as the VM's);
 * - a set with a key, mode 0640, four semaphores 0, 1, 300, 32767;
 * - a private set of one semaphore, 42, after a hole (a set removed);
 * - a queue with a key, mode 0620, its size lowered to 12000 bytes, four
 *   messages of types 3, 1, 3, 7 (an empty one, one of 4000 bytes);
 * - an empty private queue.
 * After restore: the same IDs, keys (semget/msgget of the key finds the
 * same ID), owner, creator and mode; the values; the queue's size and its
 * messages in order with their types and bytes; a semop still works. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>

#define KEY_SEM 0x5eed0001
#define KEY_MSG 0x5eed0002

struct m
{
  long type;
  char text[4000];
};

static const struct
{
  long type;
  size_t len;
} msgs[4] = { { 3, 5 }, { 1, 100 }, { 3, 0 }, { 7, 4000 } };

static void
fill(struct m *b, int i)
{
  b->type = msgs[i].type;
  for (size_t k = 0; k < msgs[i].len; k++)
    b->text[k] = (char)zdtm_pattern(i + 1, k);
}

static void
perm_same(const char *what, int id, const struct ipc_perm *a, const struct ipc_perm *b)
{
  if (a->__key != b->__key || a->uid != b->uid || a->gid != b->gid || a->cuid != b->cuid
      || a->cgid != b->cgid || (a->mode & 0777) != (b->mode & 0777))
    zdtm_fail("%s %d: key %#x uid %u gid %u cuid %u cgid %u mode %#o, expected key %#x uid %u gid "
              "%u cuid %u cgid %u mode %#o",
              what, id, b->__key, b->uid, b->gid, b->cuid, b->cgid, b->mode & 0777, a->__key,
              a->uid, a->gid, a->cuid, a->cgid, a->mode & 0777);
}

int
main(int argc, char **argv)
{
  unsigned short va[4] = { 0, 1, 300, 32767 }, got[4] = { 0 };
  struct semid_ds sa0, sa1, sb0, sb1;
  struct msqid_ds qa0, qa1, qb0, qb1;
  int sa, sb, qa, qb, hole;
  static struct m b, r;

  zdtm_init(argc, argv);
  for (int i = 0; i < 70; i++)
    {
      int t = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600);
      if (t < 0 || semctl(t, 0, IPC_RMID) < 0)
        zdtm_error("semget/IPC_RMID: %s", strerror(errno));
    }
  sa = semget(KEY_SEM, 4, IPC_CREAT | IPC_EXCL | 0640);
  hole = semget(IPC_PRIVATE, 2, IPC_CREAT | 0600);
  sb = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600);
  qa = msgget(KEY_MSG, IPC_CREAT | IPC_EXCL | 0620);
  qb = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
  if (sa < 0 || hole < 0 || sb < 0 || qa < 0 || qb < 0)
    zdtm_error("semget/msgget: %s", strerror(errno));
  if (semctl(hole, 0, IPC_RMID) < 0 || semctl(sa, 0, SETALL, va) < 0
      || semctl(sb, 0, SETVAL, 42) < 0)
    zdtm_error("semctl: %s", strerror(errno));
  if (msgctl(qa, IPC_STAT, &qa0) < 0)
    zdtm_error("msgctl IPC_STAT: %s", strerror(errno));
  qa0.msg_qbytes = 12000;
  if (msgctl(qa, IPC_SET, &qa0) < 0)
    zdtm_error("msgctl IPC_SET: %s", strerror(errno));
  for (int i = 0; i < 4; i++)
    {
      fill(&b, i);
      if (msgsnd(qa, &b, msgs[i].len, IPC_NOWAIT) < 0)
        zdtm_error("msgsnd %d: %s", i, strerror(errno));
    }
  if (semctl(sa, 0, IPC_STAT, &sa0) < 0 || semctl(sb, 0, IPC_STAT, &sb0) < 0
      || msgctl(qa, IPC_STAT, &qa0) < 0 || msgctl(qb, IPC_STAT, &qb0) < 0)
    zdtm_error("IPC_STAT: %s", strerror(errno));
  if (sa >> 15 == 0)
    zdtm_note("semaphore set ID %d is in the first cycle of IDs (a namespace not new?)", sa);
  zdtm_ready();
  zdtm_wait();

  if (semget(KEY_SEM, 0, 0) != sa || msgget(KEY_MSG, 0) != qa)
    zdtm_fail("the keys find IDs %d and %d, expected %d and %d", semget(KEY_SEM, 0, 0),
              msgget(KEY_MSG, 0), sa, qa);
  if (semctl(sa, 0, IPC_STAT, &sa1) < 0 || semctl(sb, 0, IPC_STAT, &sb1) < 0
      || msgctl(qa, IPC_STAT, &qa1) < 0 || msgctl(qb, IPC_STAT, &qb1) < 0)
    {
      zdtm_fail("IPC_STAT of IDs %d %d %d %d: %s", sa, sb, qa, qb, strerror(errno));
      zdtm_finish();
    }
  perm_same("semaphore set", sa, &sa0.sem_perm, &sa1.sem_perm);
  perm_same("semaphore set", sb, &sb0.sem_perm, &sb1.sem_perm);
  perm_same("message queue", qa, &qa0.msg_perm, &qa1.msg_perm);
  perm_same("message queue", qb, &qb0.msg_perm, &qb1.msg_perm);
  if (sa1.sem_nsems != 4 || sb1.sem_nsems != 1)
    zdtm_fail("sets of %lu and %lu semaphores, expected 4 and 1", sa1.sem_nsems, sb1.sem_nsems);
  if (semctl(sa, 0, GETALL, got) < 0 || memcmp(got, va, sizeof va))
    zdtm_fail("semaphore set %d: values %u %u %u %u, expected 0 1 300 32767", sa, got[0], got[1],
              got[2], got[3]);
  if (semctl(sb, 0, GETVAL) != 42)
    zdtm_fail("semaphore set %d: value %d, expected 42", sb, semctl(sb, 0, GETVAL));
  if (qa1.msg_qbytes != 12000 || qa1.msg_qnum != 4 || qa1.msg_cbytes != qa0.msg_cbytes
      || qb1.msg_qnum != 0)
    zdtm_fail("queues: size %lu, %lu messages, %lu bytes; %lu messages; expected 12000, 4, %lu; 0",
              qa1.msg_qbytes, qa1.msg_qnum, qa1.msg_cbytes, qb1.msg_qnum, qa0.msg_cbytes);
  for (int i = 0; i < 4; i++)
    {
      ssize_t n = msgrcv(qa, &r, sizeof r.text, 0, IPC_NOWAIT);
      fill(&b, i);
      if (n != (ssize_t)msgs[i].len || r.type != b.type || memcmp(r.text, b.text, msgs[i].len))
        zdtm_fail("message %d: type %ld, %zd bytes (%s), expected type %ld, %zu bytes", i, r.type,
                  n, n < 0 ? strerror(errno) : "compared", b.type, msgs[i].len);
    }
  {
    struct sembuf op = { 2, -100, IPC_NOWAIT };
    if (semop(sa, &op, 1) < 0 || semctl(sa, 2, GETVAL) != 200)
      zdtm_fail("semop on set %d after restore: %s", sa, strerror(errno));
  }
  semctl(sa, 0, IPC_RMID), semctl(sb, 0, IPC_RMID);
  msgctl(qa, IPC_RMID, NULL), msgctl(qb, IPC_RMID, NULL);
  zdtm_finish();
}
