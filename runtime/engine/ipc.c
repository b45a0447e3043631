/* crest: SysV IPC objects (shared memory segments, semaphore sets, message
 * queues) and POSIX message queues (docs/engine.md, "SysV IPC and POSIX
 * message queues").
 *
 * Restored: the semaphore sets and message queues of an IPC namespace of
 * the tree's own (a container's), with the same IDs. The tree's root reads
 * them itself through injected calls (nothing else shows another
 * namespace's objects: /proc/sysvipc lists the reader's): *_INFO counts
 * them, *_STAT_ANY gives each one's ID and attributes, semctl(GETALL) the
 * values, msgrcv(MSG_COPY) each message without taking it off the queue.
 * Restore, in the container's new IPC namespace before any task exists,
 * makes each object again with the ID it had: the kernel hands IDs out in
 * a cycle ((sequence << 15) + index, the index cycling through the free
 * slots below max(64, 1.5 * in use), the sequence counting the cycles), so
 * restore creates and removes throwaway objects until the next ID handed
 * out is the one wanted ("ipc" in tree.json, format 4).
 *
 * Refused in one line:
 *   - a mapping of a SysV segment (maps: "/SYSV<key>", the shmid in the
 *     inode field). In the IPC namespace crest shares with the rest of the
 *     system (process mode) the segment is not the tree's to take along;
 *   - a segment of the tree's own IPC namespace, and the POSIX message
 *     queues its /dev/mqueue lists;
 *   - a POSIX message queue descriptor (mq_open), in either mode. */
#include <config.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
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

int
ipc_refuse_sysv_map(pid_t pid, uint64_t start, uint64_t end, const char *name, uint64_t shmid,
                    crest_error_t *err)
{
  unsigned key = 0;
  int own = own_ipc_ns(pid, err);
  if (own < 0)
    return -1;
  if (sscanf(name, "/SYSV%8x", &key) != 1)
    key = 0;
  return crest_error_make(err, ENOTSUP,
                          "task %d: mapping %" PRIx64 "-%" PRIx64
                          " of SysV shared memory segment %" PRIu64 " (key %#x): %s: cannot "
                          "checkpoint it",
                          pid, start, end, shmid, key,
                          own ? "SysV IPC of the tree's own IPC namespace is not restored yet"
                              : "the segment belongs to the IPC namespace crest shares with the "
                                "rest of the system, not to the checkpointed tree");
}

bool
ipc_is_mqueue(const char *fd_link_path)
{
  struct statfs sf;
  return statfs(fd_link_path, &sf) == 0 && sf.f_type == MQUEUE_MAGIC;
}

/* The first ID of a SysV kind in use up to index MAX (*_STAT_ANY answers
   the ID of a used index, EINVAL for a free one), or -1. */
static long
first_id(shm_inject_fn inject, void *ctx, long nr, long cmd, long max, uint64_t scratch,
         crest_error_t *err)
{
  for (long i = 0; i <= max && i < 32768; i++)
    {
      long a[6] = { i, nr == SYS_semctl ? 0 : cmd, nr == SYS_semctl ? cmd : (long)scratch,
                    (long)scratch };
      long ret;
      if (inject(ctx, nr, a, &ret, err) < 0)
        return -2;
      if (ret >= 0)
        return ret;
    }
  return -1;
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

#define IPC_SEQ_SHIFT 15
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

struct ipc_obj
{
  bool msg; /* a message queue, else a semaphore set */
  int32_t id, key;
  uint32_t uid, gid, cuid, cgid, mode;
  uint16_t *vals; /* semaphores */
  size_t nsems;
  uint64_t qbytes; /* message queue */
  struct ipc_msg *m;
  size_t nm;
};

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
      free(s->o[i].m), free(s->o[i].vals);
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
                          j->pid, o->msg ? "message queue" : "semaphore set", o->id,
                          (unsigned)o->key, o->mode, why);
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

static int
dump_sem(const struct inj *j, long idx, struct ipc_set *s, crest_error_t *err)
{
  struct ksem_ds ds;
  struct ipc_obj o = { 0 };
  long id, ret;
  if (inj_call(j, SYS_semctl, idx, 0, SEM_STAT_ANY, (long)j->scratch, 0, &id, err) < 0)
    return -1;
  if (id < 0)
    return 0; /* a free index */
  if (vm_read(j->pid, j->scratch, &ds, sizeof ds, err) < 0
      || take_perm(j, &o, id, &ds.perm, err) < 0)
    return -1;
  if (ds.nsems == 0 || ds.nsems > IPC_SEMS_MAX)
    return ipc_refuse(j, &o, "more than 4096 semaphores in one set", 0, err);
  o.nsems = ds.nsems;
  if (inj_call(j, SYS_semctl, id, 0, GETALL, (long)j->scratch, 0, &ret, err) < 0)
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
  long id;
  if (inj_call(j, SYS_msgctl, idx, MSG_STAT_ANY, (long)j->scratch, 0, 0, &id, err) < 0)
    return -1;
  if (id < 0)
    return 0;
  if (vm_read(j->pid, j->scratch, &ds, sizeof ds, err) < 0
      || take_perm(j, &o, id, &ds.perm, err) < 0)
    return -1;
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
      long max, id;
      int32_t info[10];
      if (inj_call(&j, kinds[k].nr, 0, sem ? 0 : kinds[k].info, sem ? kinds[k].info : (long)scratch,
                   (long)scratch, 0, &max, err)
          < 0)
        return -1;
      if (max == -ENOSYS)
        return 0; /* a kernel without SysV IPC */
      if (max < 0)
        return crest_error_make(err, (int)-max, "task %d: injected %s info", root->pid,
                                kinds[k].what);
      if (vm_read(root->pid, scratch, info, sizeof info, err) < 0)
        return -1;
      if (info[kinds[k].count_at] <= 0)
        continue;
      if (k > 0)
        {
          for (long i = 0; i <= max && i < 32768; i++)
            if ((sem ? dump_sem(&j, i, c->ipc, err) : dump_msq(&j, i, room, c->ipc, err)) < 0)
              return -1;
          continue;
        }
      id = first_id(inject, ctx, kinds[k].nr, kinds[k].stat_any, max, scratch, err);
      if (id < -1)
        return -1;
      len += snprintf(held + len, sizeof held - len, "%sSysV %s %ld (%d in all)", len ? ", " : "",
                      kinds[k].what, id, info[kinds[k].count_at]);
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
      jput_str(g, "kind", o->msg ? "msg" : "sem");
      jput_int(g, "id", o->id);
      jput_int(g, "key", o->key);
      jput_int(g, "uid", o->uid);
      jput_int(g, "gid", o->gid);
      jput_int(g, "cuid", o->cuid);
      jput_int(g, "cgid", o->cgid);
      jput_int(g, "mode", o->mode);
      if (!o->msg)
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

static int
parse_obj(struct rctx *c, yajl_val v, struct ipc_obj *o, crest_error_t *err)
{
  const char *kind;
  int64_t n[7];
  static const char *const keys[7] = { "id", "key", "uid", "gid", "cuid", "cgid", "mode" };
  if (jget_str(v, "kind", &kind, err) < 0)
    return -1;
  CHECK(strcmp(kind, "sem") == 0 || strcmp(kind, "msg") == 0, "ipc: unknown kind %s", kind);
  o->msg = kind[0] == 'm';
  for (int k = 0; k < 7; k++)
    if (jget_i64(v, keys[k], &n[k], err) < 0)
      return -1;
  CHECK(n[0] >= 0 && (n[0] & ((1 << IPC_SEQ_SHIFT) - 1)) < IPC_IDX_MAX
            && (n[0] >> IPC_SEQ_SHIFT) <= IPC_SEQ_MAX && n[1] >= INT32_MIN && n[1] <= INT32_MAX
            && n[2] >= 0 && n[2] < UINT32_MAX && n[3] >= 0 && n[3] < UINT32_MAX && n[4] >= 0
            && n[4] < UINT32_MAX && n[5] >= 0 && n[5] < UINT32_MAX && n[6] >= 0 && n[6] <= 0777,
        "ipc: %s %lld: an ID, key, owner or mode out of range", kind, (long long)n[0]);
  o->id = n[0], o->key = n[1], o->uid = n[2], o->gid = n[3], o->cuid = n[4], o->cgid = n[5];
  o->mode = n[6];
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
    for (long k = 0; k < nm; k++, o->nm++)
      {
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
    return 0;
  CHECK(c->img->format >= CREST_IMAGE_FORMAT_IPC, "image %s: ipc in an image of format %d",
        c->o->image_dir, c->img->format);
  n = jget_array(c->tree, "ipc", &items, err);
  CHECK(n >= 0 && n <= 32768, "image %s: bad ipc list", c->o->image_dir);
  c->ipc = xzalloc(sizeof *c->ipc);
  c->ipc->o = xzalloc((n + 1) * sizeof *c->ipc->o);
  for (long i = 0; i < n; i++, c->ipc->n++)
    {
      if (parse_obj(c, items[i], &c->ipc->o[i], err) < 0)
        return crest_error_wrap(err, "image %s: tree.json", c->o->image_dir);
      for (long k = 0; k < i; k++)
        CHECK(c->ipc->o[k].msg != c->ipc->o[i].msg || c->ipc->o[k].id != c->ipc->o[i].id,
              "image %s: ipc: ID %d twice", c->o->image_dir, c->ipc->o[i].id);
    }
  return 0;
}

/* Make object O (kind MSG, the ID handed out next) or a throwaway one (O
   NULL): its ID, or -errno. */
static long
ipc_make(bool msg, const struct ipc_obj *o)
{
  key_t key = o ? o->key : IPC_PRIVATE;
  int fl = IPC_CREAT | IPC_EXCL | 0600;
  long id = msg ? msgget(key, fl) : semget(key, o ? (int)o->nsems : 1, fl);
  return id < 0 ? -errno : id;
}

static void
ipc_remove(bool msg, int id)
{
  if (msg)
    msgctl(id, IPC_RMID, NULL);
  else
    semctl(id, 0, IPC_RMID);
}

/* Where the kernel's cycle of IDs stands (ipc_idr_alloc): the sequence,
   the index handed out last, the next index it tries, which are held. */
struct idcycle
{
  int seq, last, next, held;
  bool used[IPC_IDX_MAX * 2];
};

/* The ID the kernel hands out next: the first free index from NEXT below
   max(64, 1.5 * held), else from 0; a new sequence when it is not above
   the last one. */
static long
next_id(const struct idcycle *y, int *idx)
{
  int max = y->held * 3 / 2 > IPC_IDX_MAX ? y->held * 3 / 2 : IPC_IDX_MAX;
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

static void
took(struct idcycle *y, long id, int idx, bool keep)
{
  y->seq = (int)(id >> IPC_SEQ_SHIFT), y->last = idx, y->next = idx + 1;
  if (keep)
    y->used[idx] = true, y->held++;
}

/* Object O with its ID: throwaway objects until the kernel's next ID is
   O's. */
static int
make_with_id(struct idcycle *y, const struct ipc_obj *o, crest_error_t *err)
{
  const char *what = o->msg ? "message queue" : "semaphore set";
  for (long tries = 0; tries < (long)(IPC_SEQ_MAX + 2) * IPC_IDX_MAX * 2; tries++)
    {
      int idx;
      long want = next_id(y, &idx), got;
      if (want > o->id)
        break;
      got = ipc_make(o->msg, want == o->id ? o : NULL);
      if (got < 0)
        return crest_error_make(err, (int)-got, "restore: SysV %s %d (key %#x): create", what,
                                o->id, (unsigned)o->key);
      if (got != want)
        {
          ipc_remove(o->msg, (int)got);
          return crest_error_make(err, EEXIST,
                                  "restore: SysV %s %d: the IPC namespace handed out ID %ld where "
                                  "crest expected %ld (is it not a new one?)",
                                  what, o->id, got, want);
        }
      took(y, got, idx, want == o->id);
      if (want == o->id)
        return 0;
      ipc_remove(o->msg, (int)got);
    }
  return crest_error_make(err, EEXIST, "restore: SysV %s %d: cannot be given its ID again", what,
                          o->id);
}

/* Values or messages, then owner and mode (which may deny crest). */
static int
fill_obj(const struct ipc_obj *o, crest_error_t *err)
{
  const char *what = o->msg ? "message queue" : "semaphore set";
  if (o->cuid != geteuid() || o->cgid != getegid())
    return crest_error_make(err, EPERM,
                            "restore: SysV %s %d: created by %u:%u, but this restore runs as "
                            "%u:%u, which the kernel records as its creator",
                            what, o->id, o->cuid, o->cgid, geteuid(), getegid());
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
  struct idcycle sem = { .last = -1 }, msq = { .last = -1 };
  if (!c->ipc || !c->ipc->n)
    return 0;
  CHECK(c->o->as_ns_init,
        "image %s: it holds the SysV objects of a container's IPC namespace, which only the "
        "restore of a container brings back",
        c->o->image_dir);
  qsort(c->ipc->o, c->ipc->n, sizeof *c->ipc->o, by_id);
  for (size_t i = 0; i < c->ipc->n; i++)
    {
      const struct ipc_obj *o = &c->ipc->o[i];
      if (make_with_id(o->msg ? &msq : &sem, o, err) < 0 || fill_obj(o, err) < 0)
        return -1;
    }
  crest_debug("restore: %zu SysV objects made again with their IDs", c->ipc->n);
  return 0;
}
