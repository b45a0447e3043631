/* crest: SysV IPC objects (shared memory segments, semaphore sets, message
 * queues) and POSIX message queues (docs/engine.md, "SysV IPC and POSIX
 * message queues").
 *
 * Restored: the objects of an IPC namespace of the tree's own (a
 * container's), with the same IDs. The tree's root reads them itself
 * through injected calls (nothing else shows another namespace's objects:
 * /proc/sysvipc lists the reader's): *_INFO counts them, *_STAT_ANY gives
 * each one's ID and attributes, semctl(GETALL) the values,
 * msgrcv(MSG_COPY) each message without taking it off the queue, and a
 * segment's pages in memory are read through a read-only attachment of
 * the root's, made and removed again (shmat, mincore, shmdt). Each task's
 * attachments are "sysv" mappings (mem.c), attached again by its blob.
 * Restore, in the container's new IPC namespace before any task exists,
 * makes each object again with the ID it had: the kernel hands IDs out in
 * a cycle ((sequence << 15) + index, the index cycling through the free
 * slots below max(cycle, 1.5 * in use), the sequence counting the
 * cycles), so restore creates and removes throwaway objects until the
 * next ID handed out is the one wanted ("ipc" in tree.json, format 4).
 *
 * Refused in one line:
 *   - a mapping of a SysV segment in the IPC namespace crest shares with
 *     the rest of the system (process mode): not the tree's to take along;
 *   - what restore could not give back: a locked or removed segment, one
 *     attached in part, an ID beyond the cycle restore follows;
 *   - a POSIX message queue: a descriptor (mq_open), in either mode, and
 *     the queues the tree's own namespace's /dev/mqueue lists. */
#include <config.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/prctl.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/magic.h>
#include "dump-int.h"
#include "image.h"
#include "restore-int.h"
#include "log.h"
#include "util.h"

#ifndef MQUEUE_MAGIC
#define MQUEUE_MAGIC 0x19800202
#endif

/* An ID is (sequence << IPC_SEQ_SHIFT) + index. */
#define IPC_SEQ_SHIFT 15

/* Is task PID in another IPC namespace than crest (1), the same (0)? */
static int
own_ipc_ns(pid_t pid, crest_error_t *err)
{
  cleanup_free char *tp = xasprintf("/proc/%d/ns/ipc", pid);
  struct stat t, s;
  if (stat(tp, &t) < 0 || stat("/proc/self/ns/ipc", &s) < 0)
    return crest_error_errno(err, "task %d: stat its IPC namespace", pid);
  return t.st_dev != s.st_dev || t.st_ino != s.st_ino;
}

/* What SHM_STAT_ANY shows of segment SHMID of crest's IPC namespace (no
   permission asked: any process may, as /proc/sysvipc/shm shows them); 0
   when it is there with that ID, -1 when not. */
static int
shm_stat_id(int shmid, struct shmid_ds *ds)
{
  int got = shmctl(shmid & ((1 << IPC_SEQ_SHIFT) - 1), SHM_STAT_ANY, ds);
  return got == shmid ? 0 : -1;
}

int
ipc_sysv_map(pid_t pid, uint64_t start, uint64_t end, const char *name, uint64_t shmid,
             crest_error_t *err)
{
  struct shmid_ds ds;
  unsigned key = 0;
  int own = own_ipc_ns(pid, err);
  if (own != 0)
    return own < 0 ? -1 : 0; /* the tree's own namespace: restored */
  if (sscanf(name, "/SYSV%8x", &key) != 1)
    key = 0;
  /* Crest's namespace (process mode): the segment is not the tree's to
     take along, it is attached again where it is (ipc_put_vma), unless
     the kill that ends the checkpoint would remove it. */
  if (shmid <= INT32_MAX && shm_stat_id((int)shmid, &ds) == 0 && !(ds.shm_perm.mode & SHM_DEST))
    return 0;
  return crest_error_make(err, ENOTSUP,
                          "task %d: mapping %" PRIx64 "-%" PRIx64
                          " of SysV shared memory segment %" PRIu64 " (key %#x): %s: cannot "
                          "checkpoint it",
                          pid, start, end, shmid, key,
                          "the segment is marked for removal (IPC_RMID), in the IPC namespace "
                          "crest runs in, where a restore in process mode attaches it again in "
                          "place: it would be gone once the tree is (a container's own "
                          "namespace is made again: checkpoint the container)");
}

bool
ipc_is_mqueue(const char *fd_link_path)
{
  struct statfs sf;
  return statfs(fd_link_path, &sf) == 0 && sf.f_type == MQUEUE_MAGIC;
}

/* The POSIX message queues the tree's /dev/mqueue lists: *N of them, the
   first one's name in FIRST. No mqueue file system there: nothing seen. */
static int
mqueues_in(struct dctx *c, struct dproc *root, size_t *n, char first[256], crest_error_t *err)
{
  crest_error_t e2 = NULL;
  struct statfs sf;
  struct dirent *de;
  int fd = open_in_root(c, root, "/dev/mqueue", O_RDONLY | O_DIRECTORY, &e2);
  DIR *d;

  *n = 0;
  crest_error_release(&e2);
  if (fd < 0)
    return 0;
  if (fstatfs(fd, &sf) < 0 || sf.f_type != MQUEUE_MAGIC || !(d = fdopendir(fd)))
    {
      close(fd);
      return 0;
    }
  while ((errno = 0, de = readdir(d)))
    if (de->d_name[0] != '.' && (*n)++ == 0)
      {
        size_t l = strnlen(de->d_name, 254);
        first[0] = '/';
        memcpy(first + 1, de->d_name, l);
        first[l + 1] = 0;
      }
  if (errno)
    (void)crest_error_errno(err, "task %d: read /dev/mqueue", root->pid);
  closedir(d);
  return errno ? -1 : 0;
}

/* The kernel's ipc64_perm, semid64_ds and msqid64_ds on x86-64. */
struct kperm
{
  int32_t key;
  uint32_t uid, gid, cuid, cgid, mode;
  uint16_t seq, pad;
  uint64_t unused[2];
};
struct ksem_ds
{
  struct kperm perm;
  int64_t otime;
  uint64_t u1;
  int64_t ctime;
  uint64_t u2, nsems, u3, u4;
};
struct kmsq_ds
{
  struct kperm perm;
  int64_t stime, rtime, ctime;
  uint64_t cbytes, qnum, qbytes;
  int32_t lspid, lrpid;
  uint64_t u4, u5;
};

/* Restore reaches an ID by cycling through the indexes below 64 (the
   kernel's smallest cycle): one cycle per sequence number. */
#define IPC_IDX_MAX 64
#define IPC_SEQ_MAX 1024
#define IPC_SEMS_MAX 4096
#define IPC_MSGS_MAX 65536

struct ipc_msg
{
  int64_t type;
  uint8_t *data;
  size_t len;
};

struct kshm_ds
{
  struct kperm perm;
  uint64_t segsz;
  int64_t atime, dtime, ctime;
  int32_t cpid, lpid;
  uint64_t nattch, u4, u5;
};

#define IPC_SHM_MAX (1ULL << 30)
#define IPC_EXTENTS_MAX 65536

struct ipc_obj
{
  bool msg;           /* a message queue, else a semaphore set */
  bool shm;           /* a shared memory segment */
  uint64_t size;      /* segment: its size */
  char *data;         /* segment: the image file of its pages in memory */
  uint64_t (*ext)[2]; /* segment: those pages, [offset, length] each */
  size_t next;
  int32_t id, key;
  uint32_t uid, gid, cuid, cgid, mode;
  uint16_t *vals; /* semaphores */
  size_t nsems;
  uint64_t qbytes; /* message queue */
  struct ipc_msg *m;
  size_t nm;
  /* segment: its pages are still to be read by a task that may attach it
     (ipc_pending); SWAPPED: read all of them. */
  bool pending, swapped;
};

/* An object's ID and permissions in tree.json, in this order. */
static const char *const perm_keys[7] = { "id", "key", "uid", "gid", "cuid", "cgid", "mode" };

struct ipc_set
{
  struct ipc_obj *o;
  size_t n;
};

void
ipc_free(struct ipc_set *s)
{
  if (!s)
    return;
  for (size_t i = 0; i < s->n; i++)
    {
      for (size_t k = 0; k < s->o[i].nm; k++)
        free(s->o[i].m[k].data);
      free(s->o[i].m), free(s->o[i].vals), free(s->o[i].data), free(s->o[i].ext);
    }
  free(s->o);
  free(s);
}

struct inj
{
  pid_t pid;
  shm_inject_fn fn;
  void *ctx;
  uint64_t scratch;
};

/* Inject NR with A in the root: its result, or -1 with ERR when the
   injection itself failed. */
static int
inj_call(const struct inj *j, long nr, long a0, long a1, long a2, long a3, long a4, long *ret,
         crest_error_t *err)
{
  long a[6] = { a0, a1, a2, a3, a4, 0 };
  return j->fn(j->ctx, nr, a, ret, err);
}

static int
ipc_refuse(const struct inj *j, const struct ipc_obj *o, const char *why, long ret,
           crest_error_t *err)
{
  return crest_error_make(err, ret < 0 ? (int)-ret : ENOTSUP,
                          "task %d: SysV %s %d (key %#x, mode %#o): %s: cannot checkpoint it",
                          j->pid,
                          o->shm   ? "shared memory segment"
                          : o->msg ? "message queue"
                                   : "semaphore set",
                          o->id, (unsigned)o->key, o->mode, why);
}

/* ID, key, owner, creator, mode; an ID restore cannot reach is refused. */
static int
take_perm(const struct inj *j, struct ipc_obj *o, long id, const struct kperm *k,
          crest_error_t *err)
{
  o->id = (int32_t)id, o->key = k->key;
  o->uid = k->uid, o->gid = k->gid, o->cuid = k->cuid, o->cgid = k->cgid;
  o->mode = k->mode & 0777;
  if ((id & ((1 << IPC_SEQ_SHIFT) - 1)) >= IPC_IDX_MAX || (id >> IPC_SEQ_SHIFT) > IPC_SEQ_MAX)
    return ipc_refuse(j, o,
                      "restore gives an object the same ID only when its index (ID modulo 32768) "
                      "is below 64 and its sequence (ID / 32768) at most 1024",
                      0, err);
  return 0;
}

/* *_STAT_ANY of index IDX (NR the kind's ctl call) into DS, LEN bytes
   that begin with the permissions, and O's ID and permissions from it: 1,
   or 0 for a free index. */
static int
stat_any(const struct inj *j, long nr, long cmd, long idx, void *ds, size_t len, struct ipc_obj *o,
         crest_error_t *err)
{
  bool sem = nr == SYS_semctl;
  long id;
  if (inj_call(j, nr, idx, sem ? 0 : cmd, sem ? cmd : (long)j->scratch, (long)j->scratch, 0, &id,
               err)
      < 0)
    return -1;
  if (id < 0)
    return 0;
  if (vm_read(j->pid, j->scratch, ds, len, err) < 0
      || take_perm(j, o, id, (const struct kperm *)ds, err) < 0)
    return -1;
  return 1;
}

static int
dump_sem(const struct inj *j, long idx, struct ipc_set *s, crest_error_t *err)
{
  struct ksem_ds ds;
  struct ipc_obj o = { 0 };
  long ret;
  int r = stat_any(j, SYS_semctl, SEM_STAT_ANY, idx, &ds, sizeof ds, &o, err);
  if (r <= 0)
    return r;
  if (ds.nsems == 0 || ds.nsems > IPC_SEMS_MAX)
    return ipc_refuse(j, &o, "more than 4096 semaphores in one set", 0, err);
  o.nsems = ds.nsems;
  if (inj_call(j, SYS_semctl, o.id, 0, GETALL, (long)j->scratch, 0, &ret, err) < 0)
    return -1;
  if (ret < 0)
    return ipc_refuse(j, &o, "the tree's root may not read its values (semctl GETALL)", ret, err);
  o.vals = xmalloc(o.nsems * 2);
  if (vm_read(j->pid, j->scratch, o.vals, o.nsems * 2, err) < 0)
    {
      free(o.vals);
      return -1;
    }
  s->o = xrealloc(s->o, (s->n + 1) * sizeof *s->o);
  s->o[s->n++] = o;
  return 0;
}

/* Each message of queue O in order, copied off the queue without taking
   it (MSG_COPY, IPC_NOWAIT: the Nth message, or ENOMSG past the last). */
static int
read_msgs(const struct inj *j, struct ipc_obj *o, uint64_t qnum, size_t room, crest_error_t *err)
{
  for (uint64_t n = 0; n < qnum; n++)
    {
      long ret;
      int64_t type;
      if (inj_call(j, SYS_msgrcv, o->id, (long)j->scratch, (long)(room - 8), (long)n,
                   IPC_NOWAIT | 040000 /* MSG_COPY */, &ret, err)
          < 0)
        return -1;
      if (ret == -ENOSYS)
        return ipc_refuse(j, o,
                          "reading its messages needs msgrcv(MSG_COPY), which this kernel "
                          "lacks (CONFIG_CHECKPOINT_RESTORE)",
                          ret, err);
      if (ret == -E2BIG)
        return ipc_refuse(j, o, "a message over 8184 bytes, which crest does not read yet", ret,
                          err);
      if (ret < 0)
        return ipc_refuse(j, o, "the tree's root may not read its messages (msgrcv MSG_COPY)", ret,
                          err);
      o->m = xrealloc(o->m, (o->nm + 1) * sizeof *o->m);
      o->m[o->nm].len = ret;
      o->m[o->nm].data = xmalloc(ret + 1);
      o->nm++;
      if (vm_read(j->pid, j->scratch, &type, 8, err) < 0
          || (ret && vm_read(j->pid, j->scratch + 8, o->m[o->nm - 1].data, ret, err) < 0))
        return -1;
      o->m[o->nm - 1].type = type;
    }
  return 0;
}

static int
dump_msq(const struct inj *j, long idx, size_t room, struct ipc_set *s, crest_error_t *err)
{
  struct kmsq_ds ds;
  struct ipc_obj o = { .msg = true };
  int r = stat_any(j, SYS_msgctl, MSG_STAT_ANY, idx, &ds, sizeof ds, &o, err);
  if (r <= 0)
    return r;
  if (ds.qnum > IPC_MSGS_MAX)
    return ipc_refuse(j, &o, "more than 65536 messages queued", 0, err);
  o.qbytes = ds.qbytes;
  if (read_msgs(j, &o, ds.qnum, room, err) < 0)
    {
      for (size_t k = 0; k < o.nm; k++)
        free(o.m[k].data);
      free(o.m);
      return -1;
    }
  s->o = xrealloc(s->o, (s->n + 1) * sizeof *s->o);
  s->o[s->n++] = o;
  return 0;
}

/* The pages of segment O in memory, as the root attached read-only at
   ADDR sees them: mincore (or every page, ALL, when some of the namespace's
   shared memory is swapped out: reading brings it back), read through
   /proc/PID/mem and written to the image as extents. Reading a page not in
   memory would allocate it in the running tree. */
static int
save_pages(struct dctx *c, const struct inj *j, struct ipc_obj *o, uint64_t addr, size_t room,
           bool all, crest_error_t *err)
{
  uint64_t npages = (o->size + PAGE - 1) / PAGE;
  cleanup_free uint8_t *vec = xzalloc(npages + 1);
  cleanup_free char *mp = xasprintf("/proc/%d/mem", j->pid);
  cleanup_close int mem = open(mp, O_RDONLY | O_CLOEXEC);
  cleanup_free uint8_t *buf = xmalloc(PAGE);
  struct img_out out;

  if (mem < 0)
    return crest_error_errno(err, "task %d: open mem", j->pid);
  for (uint64_t off = 0; off < npages && !all; off += room)
    {
      uint64_t n = npages - off < room ? npages - off : room;
      long ret;
      if (inj_call(j, SYS_mincore, (long)(addr + off * PAGE), (long)(n * PAGE), (long)j->scratch, 0,
                   0, &ret, err)
          < 0)
        return -1;
      if (ret < 0)
        return crest_error_sys(err, (int)-ret, "task %d: injected mincore", j->pid);
      if (vm_read(j->pid, j->scratch, vec + off, n, err) < 0)
        return -1;
    }
  o->data = xasprintf("sysvshm-%d.img", o->id);
  if (img_out_open(c->w, o->data, &out, err) < 0)
    return -1;
  for (uint64_t k = 0; k < npages; k++)
    {
      if (!all && !(vec[k] & 1))
        continue;
      if (pread(mem, buf, PAGE, (off_t)(addr + k * PAGE)) != (ssize_t)PAGE)
        {
          crest_error_errno(err, "task %d: read SysV segment %d", j->pid, o->id);
          goto fail;
        }
      if (img_out_write(&out, buf, PAGE, err) < 0)
        goto fail;
      if (o->next && o->ext[o->next - 1][0] + o->ext[o->next - 1][1] == k * PAGE)
        o->ext[o->next - 1][1] += PAGE;
      else
        {
          o->ext = xrealloc(o->ext, (o->next + 1) * sizeof *o->ext);
          o->ext[o->next][0] = k * PAGE, o->ext[o->next][1] = PAGE;
          o->next++;
        }
    }
  return img_out_close(&out, err);
fail:
  close(out.fd);
  free(out.name);
  return -1;
}

static int
dump_shm(struct dctx *c, const struct inj *j, long idx, size_t room, bool swapped,
         struct ipc_set *s, crest_error_t *err)
{
  struct kshm_ds ds;
  struct ipc_obj o = { .shm = true };
  long id, addr, ret;
  int rc = stat_any(j, SYS_shmctl, SHM_STAT_ANY, idx, &ds, sizeof ds, &o, err);
  if (rc <= 0)
    return rc;
  id = o.id;
  o.size = ds.segsz;
  if (ds.perm.mode & SHM_LOCKED)
    return ipc_refuse(j, &o, "locked in memory (SHM_LOCK), which crest does not restore", 0, err);
  if (ds.perm.mode & SHM_DEST)
    return ipc_refuse(j, &o,
                      "removed (IPC_RMID) while still attached, which crest does not "
                      "restore yet",
                      0, err);
  if (o.size == 0 || o.size > IPC_SHM_MAX)
    return ipc_refuse(j, &o, "larger than 1 GiB", 0, err);
  /* Attached read-only by the root for the moment of the read. */
  if (inj_call(j, SYS_shmat, id, 0, SHM_RDONLY, 0, 0, &addr, err) < 0)
    return -1;
  if ((addr == -EACCES || addr == -EPERM) && o.uid != 0)
    {
      /* A segment of a container user, mode 0600 (PostgreSQL's): read by
         a task that may attach it, later (ipc_pending). */
      o.pending = true;
      o.swapped = swapped;
      s->o = xrealloc(s->o, (s->n + 1) * sizeof *s->o);
      s->o[s->n++] = o;
      return 0;
    }
  if (addr < 0 && addr > -4096)
    return ipc_refuse(j, &o, "the tree's root may not read it (shmat)", addr, err);
  rc = save_pages(c, j, &o, (uint64_t)addr, room, swapped, err);
  {
    /* Detached whatever happened; the first error is the one reported. */
    crest_error_t e2 = NULL;
    if (inj_call(j, SYS_shmdt, addr, 0, 0, 0, 0, &ret, &e2) < 0 || ret != 0)
      {
        if (!e2)
          crest_error_make(&e2, (int)-ret, "task %d: injected shmdt", j->pid);
        if (rc == 0)
          *err = e2, e2 = NULL;
        rc = -1;
      }
    crest_error_release(&e2);
  }
  if (rc < 0)
    {
      free(o.data), free(o.ext);
      return -1;
    }
  s->o = xrealloc(s->o, (s->n + 1) * sizeof *s->o);
  s->o[s->n++] = o;
  return 0;
}

int
ipc_check_ns(struct dctx *c, struct dproc *root, shm_inject_fn inject, void *ctx, uint64_t scratch,
             size_t room, crest_error_t *err)
{
  static const struct
  {
    const char *what;
    long nr, info, stat_any;
    int count_at; /* the int of the *_INFO answer that counts objects in use */
  } kinds[] = {
    { "shared memory segment", SYS_shmctl, SHM_INFO, SHM_STAT_ANY, 0 },
    { "semaphore set", SYS_semctl, SEM_INFO, SEM_STAT_ANY, 7 /* semusz */ },
    { "message queue", SYS_msgctl, MSG_INFO, MSG_STAT_ANY, 0 /* msgpool */ },
  };
  const struct inj j = { root->pid, inject, ctx, scratch };
  char held[512] = "", mq[256] = "";
  size_t len = 0, nmq = 0;
  int own = own_ipc_ns(root->pid, err);

  if (own <= 0)
    return own;
  c->ipc = xzalloc(sizeof *c->ipc);
  for (size_t k = 0; k < ARRAY_SIZE(kinds); k++)
    {
      bool sem = kinds[k].nr == SYS_semctl;
      long max;
      int32_t info[10];
      if (inj_call(&j, kinds[k].nr, 0, sem ? 0 : kinds[k].info, sem ? kinds[k].info : (long)scratch,
                   (long)scratch, 0, &max, err)
          < 0)
        return -1;
      if (max == -ENOSYS)
        return 0; /* a kernel without SysV IPC */
      if (max < 0)
        return crest_error_sys(err, (int)-max, "task %d: injected %s info", root->pid,
                               kinds[k].what);
      if (vm_read(root->pid, scratch, info, sizeof info, err) < 0)
        return -1;
      if (info[kinds[k].count_at] <= 0)
        continue;
      for (long i = 0; i <= max && i < 32768; i++)
        if ((k == 0 ? dump_shm(c, &j, i, room, ((uint64_t *)info)[3] != 0, c->ipc, err)
             : sem  ? dump_sem(&j, i, c->ipc, err)
                    : dump_msq(&j, i, room, c->ipc, err))
            < 0)
          return -1;
    }
  if (mqueues_in(c, root, &nmq, mq, err) < 0)
    return -1;
  if (nmq)
    snprintf(held + len, sizeof held - len, "%sPOSIX message queue %s (%zu in all)",
             len ? ", " : "", mq, nmq);
  if (!held[0])
    return 0;
  return crest_error_make(err, ENOTSUP,
                          "task %d: its IPC namespace holds %s, which crest does not restore yet: "
                          "cannot checkpoint it",
                          root->pid, held);
}

/* The segments the root may not attach (dump_shm), attached read-only by
   task P instead, if it may (its UID's, or its group's), and read. With P
   NULL: the first segment no task could read is refused. */
int
ipc_pending(struct dctx *c, struct dproc *p, shm_inject_fn inject, void *ctx, uint64_t scratch,
            size_t room, crest_error_t *err)
{
  const struct inj j = { p ? p->pid : c->root, inject, ctx, scratch };
  for (size_t i = 0; c->ipc && i < c->ipc->n; i++)
    {
      struct ipc_obj *o = &c->ipc->o[i];
      long addr, ret;
      int rc;
      if (!o->pending)
        continue;
      if (!p)
        return ipc_refuse(&j, o, "no task of the tree may read it (shmat)", -EACCES, err);
      if (inj_call(&j, SYS_shmat, o->id, 0, SHM_RDONLY, 0, 0, &addr, err) < 0)
        return -1;
      if (addr == -EACCES || addr == -EPERM)
        continue;
      if (addr < 0 && addr > -4096)
        return ipc_refuse(&j, o, "shmat", addr, err);
      rc = save_pages(c, &j, o, (uint64_t)addr, room, o->swapped, err);
      if (inj_call(&j, SYS_shmdt, addr, 0, 0, 0, 0, &ret, err) < 0)
        return -1;
      if (rc < 0)
        return -1;
      if (ret != 0)
        return crest_error_sys(err, (int)-ret, "task %d: injected shmdt", p->pid);
      o->pending = false;
      crest_debug("checkpoint: SysV segment %d read by task %d", o->id, p->pid);
    }
  return 0;
}

/* Does smaps show VM_MAYWRITE ("mw") for the mapping at START of PID? */
static bool
may_write(pid_t pid, uint64_t start)
{
  cleanup_free char *path = xasprintf("/proc/%d/smaps", pid);
  cleanup_free char *line = NULL;
  size_t cap = 0;
  bool in = false, mw = false;
  FILE *f = fopen(path, "re");
  if (!f)
    return false;
  while (getline(&line, &cap, f) > 0)
    {
      unsigned long s, e;
      if (sscanf(line, "%lx-%lx ", &s, &e) == 2 && strchr(line, '-') < strchr(line, ' '))
        in = s == start;
      else if (in && strncmp(line, "VmFlags:", 8) == 0)
        {
          mw = strstr(line, " mw") != NULL;
          break;
        }
    }
  fclose(f);
  return mw;
}

/* A mapping of segment DS of crest's own IPC namespace (process mode):
   attached again in place at restore, where the segment must still be the
   same one (format 21 "in_place": what identifies it). Its bytes are not
   saved: they stay in the segment, as a file's stay in the file. */
static int
put_in_place(const struct dctx *c, pid_t pid, const struct vma *v, const struct shmid_ds *ds,
             yajl_gen g, crest_error_t *err)
{
  if (v->pgoff != 0 || v->end - v->start != (ds->shm_segsz + PAGE - 1) / PAGE * PAGE)
    return crest_error_make(err, ENOTSUP,
                            "task %d: mapping %" PRIx64 "-%" PRIx64 " of SysV segment %" PRIu64
                            ": only part of the segment (munmap or mprotect of a part), which "
                            "crest does not restore yet: cannot checkpoint it",
                            pid, v->start, v->end, v->ino);
  jput_int(g, "shmid", (int)v->ino);
  jput_int(g, "shmflg",
           (may_write(pid, v->start) ? 0 : SHM_RDONLY) | (v->prot & PROT_EXEC ? SHM_EXEC : 0));
  jput_key(g, "in_place");
  yajl_gen_map_open(g);
  jput_int(g, "key", ds->shm_perm.__key);
  jput_u64(g, "size", ds->shm_segsz);
  jput_int(g, "cuid", ds->shm_perm.cuid);
  jput_int(g, "cgid", ds->shm_perm.cgid);
  jput_int(g, "ctime", ds->shm_ctime);
  jput_u64(g, "nattch", ds->shm_nattch);
  yajl_gen_map_close(g);
  if (c->w->format < CREST_IMAGE_FORMAT_SHM_IN_PLACE)
    c->w->format = CREST_IMAGE_FORMAT_SHM_IN_PLACE;
  return 0;
}

int
ipc_put_vma(const struct dctx *c, pid_t pid, const struct vma *v, yajl_gen g, crest_error_t *err)
{
  const struct ipc_obj *o = NULL;
  int flg;
  for (size_t i = 0; c->ipc && i < c->ipc->n; i++)
    if (c->ipc->o[i].shm && (uint64_t)c->ipc->o[i].id == v->ino)
      o = &c->ipc->o[i];
  struct shmid_ds ds;
  if (!o && own_ipc_ns(pid, err) == 0 && v->ino <= INT32_MAX && shm_stat_id((int)v->ino, &ds) == 0)
    return put_in_place(c, pid, v, &ds, g, err);
  if (!o)
    return crest_error_make(err, ENOTSUP,
                            "task %d: mapping %" PRIx64 "-%" PRIx64 " of SysV segment %" PRIu64
                            ", which its IPC namespace no longer holds: cannot checkpoint it",
                            pid, v->start, v->end, v->ino);
  if (v->pgoff != 0 || v->end - v->start != (o->size + PAGE - 1) / PAGE * PAGE)
    return crest_error_make(err, ENOTSUP,
                            "task %d: mapping %" PRIx64 "-%" PRIx64 " of SysV segment %d: only "
                            "part of the segment (munmap or mprotect of a part), which crest does "
                            "not restore yet: cannot checkpoint it",
                            pid, v->start, v->end, o->id);
  /* Attached read-only (SHM_RDONLY) or not: only smaps' may-write says,
     once mprotect changed the protections. */
  flg = (may_write(pid, v->start) ? 0 : SHM_RDONLY) | (v->prot & PROT_EXEC ? SHM_EXEC : 0);
  jput_int(g, "shmid", o->id);
  jput_int(g, "shmflg", flg);
  return 0;
}

/* A segment's size, and its pages in memory: "extents" of "data". */
static void
put_segment(yajl_gen g, const struct ipc_obj *o)
{
  jput_str(g, "data", o->data);
  jput_extents(g, (const uint64_t(*)[2])o->ext, o->next);
  jput_u64(g, "size", o->size);
}

/* tree.json "ipc": the objects, semaphore sets and message queues. */
bool
ipc_put(const struct dctx *c, yajl_gen g)
{
  if (!c->ipc || !c->ipc->n)
    return false;
  jput_key(g, "ipc");
  yajl_gen_array_open(g);
  for (size_t i = 0; i < c->ipc->n; i++)
    {
      const struct ipc_obj *o = &c->ipc->o[i];
      yajl_gen_map_open(g);
      jput_str(g, "kind", o->shm ? "shm" : o->msg ? "msg" : "sem");
      {
        const long long v[7] = { o->id, o->key, o->uid, o->gid, o->cuid, o->cgid, o->mode };
        for (int k = 0; k < 7; k++)
          jput_int(g, perm_keys[k], v[k]);
      }
      if (o->shm)
        put_segment(g, o);
      else if (!o->msg)
        jput_hex(g, "values", o->vals, o->nsems * 2);
      else
        {
          jput_u64(g, "qbytes", o->qbytes);
          jput_key(g, "messages");
          yajl_gen_array_open(g);
          for (size_t k = 0; k < o->nm; k++)
            {
              yajl_gen_map_open(g);
              jput_int(g, "type", o->m[k].type);
              jput_hex(g, "data", o->m[k].data, o->m[k].len);
              yajl_gen_map_close(g);
            }
          yajl_gen_array_close(g);
        }
      yajl_gen_map_close(g);
    }
  yajl_gen_array_close(g);
  return true;
}

/* ---------- restore ---------- */

/* A segment: its size, and the pages saved ("extents" of "data"). */
static int
parse_shm(struct rctx *c, yajl_val v, struct ipc_obj *o, crest_error_t *err)
{
  const char *data;
  const struct img_file *df;
  cleanup_free char *what = NULL;
  long n;
  if (jget_u64(v, "size", &o->size, err) < 0 || jget_str(v, "data", &data, err) < 0)
    return -1;
  df = img_reader_find(c->img, data);
  CHECK(o->size > 0 && o->size <= IPC_SHM_MAX && df,
        "ipc: segment %d: size %" PRIu64 " or data file %s", o->id, o->size, data);
  o->data = xstrdup(data);
  what = xasprintf("ipc: segment %d", o->id);
  n = jget_extents(v, (o->size + PAGE - 1) / PAGE * PAGE, PAGE, IPC_EXTENTS_MAX, df->size, what,
                   &o->ext, err);
  if (n < 0)
    return -1;
  o->next = n;
  return 0;
}

/* A segment of crest's IPC namespace attached in place (format 21): what
   identifies it. */
struct shm_place
{
  int64_t key, cuid, cgid, ctime;
  uint64_t size, nattch;
};

static int
parse_in_place(struct rctx *c, yajl_val v, pid_t pid, struct rvma *m, crest_error_t *err)
{
  static const char *const keys[4] = { "key", "cuid", "cgid", "ctime" };
  yajl_val p = yajl_tree_get(v, (const char *[]){ "in_place", NULL }, yajl_t_object);
  struct shm_place *sp;
  CHECK(p && c->img->format >= CREST_IMAGE_FORMAT_SHM_IN_PLACE,
        "process %d: SysV mapping %#" PRIx64 ": in_place in an image of format %d", pid, m->start,
        c->img->format);
  sp = m->place = plan_zalloc(c, sizeof *sp);
  for (int k = 0; k < 4; k++)
    if (jget_i64(p, keys[k], &(&sp->key)[k], err) < 0)
      return -1;
  if (jget_u64(p, "size", &sp->size, err) < 0 || jget_u64(p, "nattch", &sp->nattch, err) < 0)
    return -1;
  CHECK(sp->size > 0 && m->end - m->start == (sp->size + PAGE - 1) / PAGE * PAGE,
        "process %d: SysV mapping %#" PRIx64 ": its segment's size %" PRIu64 " is not the "
        "mapping's",
        pid, m->start, sp->size);
  return 0;
}

int
ipc_parse_vma(struct rctx *c, yajl_val v, pid_t pid, struct rvma *m, crest_error_t *err)
{
  int64_t id, flg;
  if (jget_i64(v, "shmid", &id, err) < 0 || jget_i64(v, "shmflg", &flg, err) < 0)
    return -1;
  CHECK(m->shared && id >= 0 && id <= INT32_MAX && (flg & ~(long)(SHM_RDONLY | SHM_EXEC)) == 0,
        "process %d: SysV mapping %#" PRIx64 ": bad segment or flags", pid, m->start);
  m->shmid = (int)id, m->shmflg = (int)flg;
  return has_key(v, "in_place") ? parse_in_place(c, v, pid, m, err) : 0;
}

/* Process mode: is each segment attached in place still there, the same
   one (its key, size, creator and change time), not marked for removal?
   Asked of the namespace the restore runs in, before anything is made. */
static int
in_place_check(struct rctx *c, crest_error_t *err)
{
  for (size_t i = 0; i < c->np; i++)
    for (size_t v = 0; v < c->p[i].nvmas; v++)
      {
        const struct rvma *m = &c->p[i].vmas[v];
        const struct shm_place *sp = m->place;
        struct shmid_ds ds;
        if (!sp)
          continue;
        if (c->o->as_ns_init)
          return crest_error_make(err, ENOTSUP,
                                  "image %s: process %d attached SysV segment %d of the IPC "
                                  "namespace its checkpoint ran in, which a container's restore "
                                  "does not join: restore it in process mode",
                                  c->o->image_dir, c->p[i].pid, m->shmid);
        if (shm_stat_id(m->shmid, &ds) < 0)
          return crest_error_make(err, ENOENT,
                                  "image %s: process %d: SysV segment %d (key %#x), attached in "
                                  "place, is gone from this IPC namespace: cannot restore it",
                                  c->o->image_dir, c->p[i].pid, m->shmid, (unsigned)sp->key);
        if (ds.shm_perm.__key != sp->key || ds.shm_segsz != sp->size || ds.shm_perm.cuid != sp->cuid
            || ds.shm_perm.cgid != sp->cgid || ds.shm_ctime != sp->ctime
            || (ds.shm_perm.mode & SHM_DEST))
          return crest_error_make(err, ESTALE,
                                  "image %s: process %d: SysV segment %d is not the one it "
                                  "attached (key %#x, %" PRIu64 " bytes, creator %" PRId64
                                  ":%" PRId64 ", changed at %" PRId64 "; now key %#x, %zu bytes, "
                                  "%u:%u, %lld%s): cannot restore it",
                                  c->o->image_dir, c->p[i].pid, m->shmid, (unsigned)sp->key,
                                  sp->size, sp->cuid, sp->cgid, sp->ctime,
                                  (unsigned)ds.shm_perm.__key, (size_t)ds.shm_segsz,
                                  ds.shm_perm.cuid, ds.shm_perm.cgid, (long long)ds.shm_ctime,
                                  ds.shm_perm.mode & SHM_DEST ? ", marked for removal" : "");
        {
          /* Its attachments at checkpoint were the tree's (one a mapping,
             as the kernel counts them) and others'; more now than the
             others' are a tree still attached: the checkpointed one, left
             running, or a restored copy. Two trees would share it. */
          uint64_t ours = 0;
          for (size_t j = 0; j < c->np; j++)
            for (size_t k = 0; k < c->p[j].nvmas; k++)
              ours += c->p[j].vmas[k].place && c->p[j].vmas[k].shmid == m->shmid;
          if (ours > sp->nattch || ds.shm_nattch > sp->nattch - ours)
            return crest_error_make(err, EBUSY,
                                    "image %s: SysV segment %d is attached %lu times now, where "
                                    "at checkpoint %" PRIu64 " of its %" PRIu64 " attachments "
                                    "were the tree's: the checkpointed tree (left running) or a "
                                    "restored copy still holds it, and two trees would share it: "
                                    "cannot restore it",
                                    c->o->image_dir, m->shmid, (unsigned long)ds.shm_nattch, ours,
                                    sp->nattch);
        }
      }
  return 0;
}

static int
parse_obj(struct rctx *c, yajl_val v, struct ipc_obj *o, crest_error_t *err)
{
  const char *kind;
  int64_t n[7];
  if (jget_str(v, "kind", &kind, err) < 0)
    return -1;
  CHECK(strcmp(kind, "sem") == 0 || strcmp(kind, "msg") == 0 || strcmp(kind, "shm") == 0,
        "ipc: unknown kind %s", kind);
  o->msg = strcmp(kind, "msg") == 0;
  o->shm = strcmp(kind, "shm") == 0;
  for (int k = 0; k < 7; k++)
    if (jget_i64(v, perm_keys[k], &n[k], err) < 0)
      return -1;
  CHECK(n[0] >= 0 && (n[0] & ((1 << IPC_SEQ_SHIFT) - 1)) < IPC_IDX_MAX
            && (n[0] >> IPC_SEQ_SHIFT) <= IPC_SEQ_MAX && n[1] >= INT32_MIN && n[1] <= INT32_MAX
            && n[2] >= 0 && n[2] < UINT32_MAX && n[3] >= 0 && n[3] < UINT32_MAX && n[4] >= 0
            && n[4] < UINT32_MAX && n[5] >= 0 && n[5] < UINT32_MAX && n[6] >= 0 && n[6] <= 0777,
        "ipc: %s %lld: an ID, key, owner or mode out of range", kind, (long long)n[0]);
  o->id = n[0], o->key = n[1], o->uid = n[2], o->gid = n[3], o->cuid = n[4], o->cgid = n[5];
  o->mode = n[6];
  if (o->shm)
    return parse_shm(c, v, o, err);
  if (!o->msg)
    {
      if (jget_hex_alloc(v, "values", IPC_SEMS_MAX * 2, (uint8_t **)&o->vals, &o->nsems, err) < 0)
        return -1;
      CHECK(o->nsems >= 2 && o->nsems % 2 == 0, "ipc: semaphore set %d: no values", o->id);
      o->nsems /= 2;
      for (size_t k = 0; k < o->nsems; k++)
        CHECK(o->vals[k] <= 32767, "ipc: semaphore set %d: value %u out of range", o->id,
              o->vals[k]);
      return 0;
    }
  {
    yajl_val *items;
    long nm;
    if (jget_u64(v, "qbytes", &o->qbytes, err) < 0)
      return -1;
    nm = jget_array(v, "messages", &items, err);
    CHECK(nm >= 0 && nm <= IPC_MSGS_MAX && o->qbytes <= INT32_MAX,
          "ipc: message queue %d: bad message list or size", o->id);
    o->m = xzalloc((nm + 1) * sizeof *o->m);
    for (long k = 0; k < nm; k++)
      {
        o->nm = k + 1;
        if (jget_i64(items[k], "type", &o->m[k].type, err) < 0
            || jget_hex_alloc(items[k], "data", 1 << 20, &o->m[k].data, &o->m[k].len, err) < 0)
          return -1;
        CHECK(o->m[k].type > 0, "ipc: message queue %d: message %ld of type %lld", o->id, k,
              (long long)o->m[k].type);
      }
  }
  return 0;
}

int
ipc_parse(struct rctx *c, crest_error_t *err)
{
  yajl_val *items;
  long n;
  if (!has_key(c->tree, "ipc"))
    {
      for (size_t i = 0; i < c->np; i++)
        for (size_t v = 0; v < c->p[i].nvmas; v++)
          CHECK(strcmp(c->p[i].vmas[v].kind, "sysv") != 0 || c->p[i].vmas[v].place,
                "image %s: process %d maps a SysV segment, but the image holds none",
                c->o->image_dir, c->p[i].pid);
      return in_place_check(c, err);
    }
  CHECK(c->img->format >= CREST_IMAGE_FORMAT_IPC, "image %s: ipc in an image of format %d",
        c->o->image_dir, c->img->format);
  n = jget_array(c->tree, "ipc", &items, err);
  CHECK(n >= 0 && n <= 32768, "image %s: bad ipc list", c->o->image_dir);
  c->ipc = xzalloc(sizeof *c->ipc);
  c->ipc->o = xzalloc((n + 1) * sizeof *c->ipc->o);
  for (long i = 0; i < n; i++)
    {
      c->ipc->n = i + 1; /* counted at once: ipc_free frees what parse_obj took */
      if (parse_obj(c, items[i], &c->ipc->o[i], err) < 0)
        return crest_error_wrap(err, "image %s: tree.json", c->o->image_dir);
      for (long k = 0; k < i; k++)
        CHECK(c->ipc->o[k].msg != c->ipc->o[i].msg || c->ipc->o[k].shm != c->ipc->o[i].shm
                  || c->ipc->o[k].id != c->ipc->o[i].id,
              "image %s: ipc: ID %d twice", c->o->image_dir, c->ipc->o[i].id);
    }
  /* Each SysV mapping attaches a segment of the image, all of it. */
  for (size_t i = 0; i < c->np; i++)
    for (size_t v = 0; v < c->p[i].nvmas; v++)
      {
        const struct rvma *m = &c->p[i].vmas[v];
        bool found = false;
        if (strcmp(m->kind, "sysv") != 0 || m->place)
          continue;
        for (size_t k = 0; k < c->ipc->n; k++)
          found |= c->ipc->o[k].shm && c->ipc->o[k].id == m->shmid
                   && m->end - m->start == (c->ipc->o[k].size + PAGE - 1) / PAGE * PAGE;
        CHECK(found,
              "image %s: process %d: mapping %#" PRIx64 " of SysV segment %d, which the "
              "image does not hold with that size",
              c->o->image_dir, c->p[i].pid, m->start, m->shmid);
      }
  return in_place_check(c, err);
}

enum
{
  K_SEM,
  K_MSG,
  K_SHM
};

static int
kind_of(const struct ipc_obj *o)
{
  return o->shm ? K_SHM : o->msg ? K_MSG : K_SEM;
}

static const char *
kind_name(int k)
{
  return k == K_SHM ? "shared memory segment" : k == K_MSG ? "message queue" : "semaphore set";
}

/* Make object O (of kind K, the ID handed out next) or a throwaway one (O
   NULL): its ID, or -errno. */
static long
ipc_make_as(int k, const struct ipc_obj *o);

/* The restorer as O's creator (ON), or back as itself: the kernel records
   the caller's effective IDs as an object's creator, and a 0600 object of
   a container user is closed to the restorer as itself. Needs CAP_SETUID
   and CAP_SETGID (which made the tree's own change of IDs). A change of
   effective IDs resets the dumpable flag and the parent-death signal, which
   the tasks forked later need: put back. */
static int
as_creator(const struct ipc_obj *o, bool on)
{
  static uid_t ru;
  static gid_t rg;
  int dumpable = prctl(PR_GET_DUMPABLE), pdeath = 0, rc;
  prctl(PR_GET_PDEATHSIG, &pdeath);
  if (on)
    {
      ru = geteuid(), rg = getegid();
      rc = setresgid(-1, o->cgid, -1) == 0 && setresuid(-1, o->cuid, -1) == 0 ? 0 : -1;
      if (rc < 0)
        {
          int e = errno;
          if (setresgid(-1, rg, -1) < 0)
            abort(); /* its own group a moment ago */
          errno = e;
        }
    }
  else
    rc = setresuid(-1, ru, -1) == 0 && setresgid(-1, rg, -1) == 0 ? 0 : -1;
  prctl(PR_SET_DUMPABLE, dumpable);
  if (pdeath)
    prctl(PR_SET_PDEATHSIG, pdeath);
  return rc;
}

static bool
other_creator(const struct ipc_obj *o)
{
  return o && (o->cuid != geteuid() || o->cgid != getegid());
}

static long
ipc_make(int k, const struct ipc_obj *o)
{
  bool sw = other_creator(o);
  long id;
  if (sw && as_creator(o, true) < 0)
    return -errno;
  id = ipc_make_as(k, o);
  if (sw && as_creator(o, false) < 0)
    abort(); /* back to what it was a moment ago: cannot fail */
  return id;
}

static long
ipc_make_as(int k, const struct ipc_obj *o)
{
  key_t key = o ? o->key : IPC_PRIVATE;
  int fl = IPC_CREAT | IPC_EXCL | 0600;
  long id = k == K_MSG   ? msgget(key, fl)
            : k == K_SHM ? shmget(key, o ? o->size : PAGE, fl)
                         : semget(key, o ? (int)o->nsems : 1, fl);
  return id < 0 ? -errno : id;
}

static void
ipc_remove(int k, int id)
{
  if (k == K_MSG)
    msgctl(id, IPC_RMID, NULL);
  else if (k == K_SHM)
    shmctl(id, IPC_RMID, NULL);
  else
    semctl(id, 0, IPC_RMID);
}

/* Where the kernel's cycle of IDs stands (ipc_idr_alloc): the sequence,
   the index handed out last, the next index it tries, which are in use,
   and its shortest cycle (ipc_min_cycle: 64, or 16 in a kernel built with
   CONFIG_BASE_SMALL), 0 until learned. */
struct idcycle
{
  int seq, last, next, inuse, cycle;
  bool used[IPC_IDX_MAX * 2];
};

#define IDX(id) ((int)((id) & ((1 << IPC_SEQ_SHIFT) - 1)))

/* The ID the kernel hands out next: the first free index from NEXT below
   max(cycle, 1.5 * in use), else from 0; a new sequence when it is not
   above the last one. */
static long
next_id(const struct idcycle *y, int *idx)
{
  int max = y->inuse * 3 / 2 > y->cycle ? y->inuse * 3 / 2 : y->cycle;
  int i;
  if (max > IPC_IDX_MAX * 2)
    max = IPC_IDX_MAX * 2;
  for (i = y->next; i < max && y->used[i]; i++)
    ;
  if (i >= max)
    for (i = 0; i < max && y->used[i]; i++)
      ;
  *idx = i;
  return ((long)(i <= y->last ? y->seq + 1 : y->seq) << IPC_SEQ_SHIFT) + i;
}

/* Make O, or a throwaway object (O NULL) of kind K, expecting ID WANT (-1:
   whatever comes); keep it (O, or HOLD) or remove it again. Its ID. */
static long
step(struct idcycle *y, int k, const struct ipc_obj *o, long want, bool hold, crest_error_t *err)
{
  long got = ipc_make(k, o);
  if (got < 0)
    return crest_error_sys(err, (int)-got, "restore: SysV %s: create", kind_name(k));
  if (want >= 0 && got != want)
    {
      ipc_remove(k, (int)got);
      return crest_error_make(err, EEXIST,
                              "restore: SysV %s%s: the IPC namespace handed out ID %ld where crest "
                              "expected %ld (is it not a new one?)",
                              kind_name(k), o ? "" : " (a throwaway one)", got, want);
    }
  if (IDX(got) >= IPC_IDX_MAX * 2)
    {
      ipc_remove(k, (int)got);
      return crest_error_make(err, EEXIST, "restore: SysV %s: ID %ld out of the expected range",
                              kind_name(k), got);
    }
  y->seq = (int)(got >> IPC_SEQ_SHIFT), y->last = IDX(got), y->next = IDX(got) + 1;
  if (o || hold)
    y->used[IDX(got)] = true, y->inuse++;
  else
    ipc_remove(k, (int)got);
  return got;
}

/* Object O with its ID, once the cycle is known: throwaway objects until
   the kernel's next ID is O's. */
static int
make_with_id(struct idcycle *y, const struct ipc_obj *o, crest_error_t *err)
{
  int k = kind_of(o);
  for (long tries = 0; tries < (long)(IPC_SEQ_MAX + 2) * IPC_IDX_MAX * 2; tries++)
    {
      int idx;
      long want = next_id(y, &idx);
      if (want > o->id)
        break;
      if (step(y, k, want == o->id ? o : NULL, want, false, err) < 0)
        return -1;
      if (want == o->id)
        return 0;
    }
  return crest_error_make(err, EEXIST, "restore: SysV %s %d: cannot be given its ID again",
                          kind_name(k), o->id);
}

/* The objects of the first sequence, in a new namespace: index by index
   from 0, the indexes between held by throwaway objects (so that the cycle
   cannot end before the index wanted, whatever its length), removed once
   every one is made. */
static int
make_first_cycle(struct idcycle y[3], struct ipc_set *set, crest_error_t *err)
{
  int held[3][IPC_IDX_MAX];
  size_t nheld[3] = { 0 };
  int rc = 0;
  for (size_t i = 0; i < set->n && rc == 0; i++)
    {
      const struct ipc_obj *o = &set->o[i];
      int k = kind_of(o);
      if (o->id >> IPC_SEQ_SHIFT)
        continue;
      while (rc == 0 && y[k].next < o->id)
        {
          long t = step(&y[k], k, NULL, y[k].next, true, err);
          if (t < 0)
            rc = -1;
          else
            held[k][nheld[k]++] = (int)t;
        }
      if (rc == 0 && step(&y[k], k, o, o->id, false, err) < 0)
        rc = -1;
    }
  for (int k = 0; k < 3; k++)
    for (size_t t = 0; t < nheld[k]; t++)
      {
        ipc_remove(k, held[k][t]);
        y[k].used[held[k][t]] = false, y[k].inuse--;
      }
  return rc;
}

/* The length of the kernel's cycle, learned by going round it once with
   throwaway objects of a kind whose next wrap costs no object of the
   image: one with no object left to make, or whose first one left is not
   where the wrap lands. */
static int
learn_cycle(struct idcycle y[3], const struct ipc_set *set, size_t first_left, crest_error_t *err)
{
  int k = -1;
  for (int kk = 0; kk < 3 && k < 0; kk++)
    {
      long land = ((long)(y[kk].seq + 1) << IPC_SEQ_SHIFT);
      const struct ipc_obj *left = NULL;
      while (y[kk].used[IDX(land)])
        land++;
      for (size_t i = first_left; i < set->n && !left; i++)
        if (kind_of(&set->o[i]) == kk && set->o[i].id >> IPC_SEQ_SHIFT)
          left = &set->o[i];
      if (!left || left->id != land)
        k = kk;
    }
  if (k < 0)
    return crest_error_make(err, EEXIST,
                            "restore: SysV objects: no kind of object can go round "
                            "the kernel's cycle of IDs without taking an ID of the image");
  for (long tries = 0; tries < IPC_IDX_MAX * 4; tries++)
    {
      int seq = y[k].seq, last = y[k].last;
      long got = step(&y[k], k, NULL, -1, false, err);
      if (got < 0)
        return -1;
      if (got >> IPC_SEQ_SHIFT != seq)
        {
          int w = last + 1;
          while (w < IPC_IDX_MAX * 2 && y[k].used[w])
            w++;
          for (int kk = 0; kk < 3; kk++)
            y[kk].cycle = w;
          crest_debug("restore: the kernel's cycle of IPC IDs is %d long", w);
          return 0;
        }
    }
  return crest_error_make(err, EEXIST,
                          "restore: SysV objects: the kernel's cycle of IDs did not "
                          "end within %d IDs",
                          IPC_IDX_MAX * 4);
}

/* Values or messages, then owner and mode (which may deny crest). */
/* A segment's pages, read from the image into an attachment of the
   restorer's own, then its owner and mode. */
static int
fill_shm(struct rctx *c, const struct ipc_obj *o, crest_error_t *err)
{
  struct shmid_ds ds = { .shm_perm = { .uid = o->uid, .gid = o->gid, .mode = o->mode } };
  uint64_t size, at = 0;
  cleanup_close int in = img_reader_open_file(c->img, o->data, &size, err);
  uint8_t *p;
  int rc = 0;
  if (in < 0)
    return -1;
  p = shmat(o->id, NULL, 0);
  if (p == (void *)-1)
    return crest_error_errno(err, "restore: SysV shared memory segment %d: shmat", o->id);
  for (size_t k = 0; k < o->next && rc == 0; k++)
    {
      for (uint64_t done = 0; done < o->ext[k][1];)
        {
          ssize_t r = pread(in, p + o->ext[k][0] + done, o->ext[k][1] - done, (off_t)(at + done));
          if (r <= 0)
            {
              rc = crest_error_sys(err, r < 0 ? errno : EIO, "restore: read %s", o->data);
              break;
            }
          done += r;
        }
      at += o->ext[k][1];
    }
  shmdt(p);
  if (rc == 0 && shmctl(o->id, IPC_SET, &ds) < 0)
    rc = crest_error_errno(err, "restore: SysV shared memory segment %d: set its owner and mode",
                           o->id);
  return rc;
}

static int
fill_obj(struct rctx *c, const struct ipc_obj *o, crest_error_t *err)
{
  const char *what = kind_name(kind_of(o));
  if (o->cuid != geteuid() || o->cgid != getegid())
    return crest_error_make(err, EPERM,
                            "restore: SysV %s %d: created by %u:%u, but this restore runs as "
                            "%u:%u, which the kernel records as its creator",
                            what, o->id, o->cuid, o->cgid, geteuid(), getegid());
  if (o->shm)
    return fill_shm(c, o, err);
  if (!o->msg)
    {
      struct semid_ds ds = { .sem_perm = { .uid = o->uid, .gid = o->gid, .mode = o->mode } };
      if (semctl(o->id, 0, SETALL, o->vals) < 0 || semctl(o->id, 0, IPC_SET, &ds) < 0)
        return crest_error_errno(err, "restore: SysV semaphore set %d: set its values and owner",
                                 o->id);
      return 0;
    }
  {
    struct msqid_ds ds;
    if (msgctl(o->id, IPC_STAT, &ds) < 0)
      return crest_error_errno(err, "restore: SysV message queue %d: IPC_STAT", o->id);
    if (o->qbytes > ds.msg_qbytes)
      {
        ds.msg_qbytes = o->qbytes;
        if (msgctl(o->id, IPC_SET, &ds) < 0)
          return crest_error_errno(
              err, "restore: SysV message queue %d: raise its size to %" PRIu64, o->id, o->qbytes);
      }
    for (size_t k = 0; k < o->nm; k++)
      {
        cleanup_free uint8_t *b = xmalloc(o->m[k].len + 8);
        memcpy(b, &o->m[k].type, 8);
        memcpy(b + 8, o->m[k].data, o->m[k].len);
        if (msgsnd(o->id, b, o->m[k].len, IPC_NOWAIT) < 0)
          return crest_error_errno(err, "restore: SysV message queue %d: message %zu", o->id, k);
      }
    ds.msg_perm.uid = o->uid, ds.msg_perm.gid = o->gid, ds.msg_perm.mode = o->mode;
    ds.msg_qbytes = o->qbytes;
    if (msgctl(o->id, IPC_SET, &ds) < 0)
      return crest_error_errno(err, "restore: SysV message queue %d: set its owner and mode",
                               o->id);
  }
  return 0;
}

static int
by_id(const void *a, const void *b)
{
  const struct ipc_obj *x = a, *y = b;
  return x->id < y->id ? -1 : x->id > y->id;
}

/* In the container's new IPC namespace, before any task exists. */
int
ipc_restore(struct rctx *c, crest_error_t *err)
{
  struct idcycle y[3] = { { .last = -1 }, { .last = -1 }, { .last = -1 } };
  size_t i;
  if (!c->ipc || !c->ipc->n)
    return 0;
  CHECK(c->o->as_ns_init,
        "image %s: it holds the SysV objects of a container's IPC namespace, which only the "
        "restore of a container brings back",
        c->o->image_dir);
  qsort(c->ipc->o, c->ipc->n, sizeof *c->ipc->o, by_id);
  if (make_first_cycle(y, c->ipc, err) < 0)
    return -1;
  for (i = 0; i < c->ipc->n && !(c->ipc->o[i].id >> IPC_SEQ_SHIFT); i++)
    ;
  if (i < c->ipc->n && learn_cycle(y, c->ipc, i, err) < 0)
    return -1;
  for (; i < c->ipc->n; i++)
    if (make_with_id(&y[kind_of(&c->ipc->o[i])], &c->ipc->o[i], err) < 0)
      return -1;
  for (i = 0; i < c->ipc->n; i++)
    {
      const struct ipc_obj *o = &c->ipc->o[i];
      /* As its creator: the kernel checks that (fill_obj), and its mode
         may close it to the restorer as itself. */
      bool sw = other_creator(o);
      int rc;
      if (sw && as_creator(o, true) < 0)
        return crest_error_errno(err,
                                 "restore: SysV object %d: created by %u:%u, which this restore "
                                 "(%u:%u) cannot act as (it needs CAP_SETUID and CAP_SETGID)",
                                 o->id, o->cuid, o->cgid, geteuid(), getegid());
      rc = fill_obj(c, o, err);
      if (sw && as_creator(o, false) < 0)
        abort();
      if (rc < 0)
        return -1;
    }
  crest_debug("restore: %zu SysV objects made again with their IDs", c->ipc->n);
  return 0;
}
