/* crest: keyrings (keyctl(2)), the dump side (docs/engine.md, "Keyrings").
 *
 * A restore makes no keyring: every restored thread has the session
 * keyring of the process that restores it (in a container, the new one
 * crun makes, or the caller's with --no-new-keyring), no thread or process
 * keyring, and a container's user namespace, made again, has new and empty
 * user keyrings. Keys are kernel objects whose serial numbers cannot be
 * chosen, so crest does not make them again either: the checkpoint asks
 * each thread for its keyrings, by keyctl calls injected into it, and
 * refuses, in one line, whatever the restore would not give back. */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/keyctl.h>

#include "dump-int.h"
#include "log.h"
#include "restore-int.h"
#include "util.h"

struct kinj
{
  pid_t pid, tid;
  shm_inject_fn fn;
  void *ctx;
  uint64_t scratch; /* 1 KiB the task may write */
};

static int
kcall(const struct kinj *j, long op, long a, long b, long n, long *ret, crest_error_t *err)
{
  const long aa[6] = { op, a, b, n, 0, 0 };
  return j->fn(j->ctx, SYS_keyctl, aa, ret, err);
}

/* The ID of keyring SPEC (a KEY_SPEC_*) of the thread: 0 when it has none
   (ENOKEY), or when this kernel has no keys at all (ENOSYS). */
static int
ring_id(const struct kinj *j, long spec, long *id, crest_error_t *err)
{
  long r;
  if (kcall(j, KEYCTL_GET_KEYRING_ID, spec, 0, 0, &r, err) < 0)
    return -1;
  if (r == -ENOKEY || r == -ENOSYS)
    r = 0;
  else if (r < 0)
    return crest_error_sys(err, -r, "task %d: keyctl(KEYCTL_GET_KEYRING_ID, %ld)", j->tid, spec);
  *id = r;
  return 0;
}

/* Keyring ID (the thread's WHAT, its SPEC) must hold no key but a link to
   the thread's user keyring UK (which a user session keyring holds, and a
   session keyring pam_keyinit makes), as the one the restore gives holds
   none (WHY says which that is); else the checkpoint is refused, naming
   the first other key. Read through SPEC, which makes the thread its
   possessor: by its number, a task whose real UID (whose user keyrings
   these are) is not its file system UID may not read it (Squid's master,
   real UID nobody, effective root: refused until December 2026). */
static int
ring_empty(const struct kinj *j, long spec, long id, long uk, const char *what, const char *why,
           crest_error_t *err)
{
  char d[256] = "";
  int32_t ids[16];
  long n, dl, other = 0, first = 0;
  if (kcall(j, KEYCTL_READ, spec, (long)j->scratch, sizeof ids, &n, err) < 0)
    return -1;
  if (n < 0)
    return crest_error_sys(err, -n,
                           "task %d: its %s (key %ld) cannot be read, so its keys "
                           "cannot be checked",
                           j->tid, what, id);
  if (n == 0)
    return 0;
  if (vm_read(j->pid, j->scratch, ids, sizeof ids, err) < 0)
    return -1;
  for (long k = 0; k < n / 4; k++)
    if (k >= (long)ARRAY_SIZE(ids) || ids[k] != uk)
      {
        other++;
        if (!first && k < (long)ARRAY_SIZE(ids))
          first = ids[k];
      }
  if (!other)
    return 0;
  if (kcall(j, KEYCTL_DESCRIBE, first, (long)j->scratch + 64, sizeof d - 1, &dl, err) < 0)
    return -1;
  if (dl > 0 && vm_read(j->pid, j->scratch + 64, d, sizeof d - 1, err) < 0)
    return -1;
  d[sizeof d - 1] = 0;
  /* "type;uid;gid;perm;description" */
  char *desc = d;
  for (int f = 0; f < 4 && desc; f++)
    {
      desc = strchr(desc, ';');
      desc = desc ? desc + 1 : NULL;
    }
  if (strchr(d, ';'))
    *strchr(d, ';') = 0;
  return crest_error_make(err, ENOTSUP,
                          "task %d: its %s (key %ld) holds %ld key%s (the first: %s \"%s\"), "
                          "which a restore would lose (%s): cannot checkpoint it",
                          j->tid, what, id, other, other == 1 ? "" : "s", dl > 0 ? d : "?",
                          desc ? desc : "?", why);
}

/* The session keyring of the tree's root, which every restored task gets
   from the restorer: the restorer's own (crest's caller's, or crun's new
   one for a container), so it must be that one or hold nothing. */
static int
root_session(struct dctx *c, const struct kinj *j, long s, crest_error_t *err)
{
  long us = 0, uk = 0;
  c->session_key = s;
  if (s == 0)
    return 0;
  /* Process mode: the user's own session keyring (the one a task without
     another uses) is still the user's after a restore. */
  if (!c->o->root_is_ns_init)
    {
      if (ring_id(j, KEY_SPEC_USER_SESSION_KEYRING, &us, err) < 0)
        return -1;
      c->session_is_users = s == us;
    }
  if (s == c->own_session_key || c->session_is_users)
    return 0;
  if (ring_id(j, KEY_SPEC_USER_KEYRING, &uk, err) < 0)
    return -1;
  if (c->o->root_is_ns_init)
    return ring_empty(j, KEY_SPEC_SESSION_KEYRING, s, uk, "session keyring",
                      "crun makes the restored container a new one", err);
  return ring_empty(j, KEY_SPEC_SESSION_KEYRING, s, uk, "session keyring",
                    "the restored tree gets the session keyring of whoever restores it", err);
}

/* A thread of another UID than the root's whose session keyring is its own
   user's session keyring (KEY_SPEC_USER_SESSION_KEYRING, of its UID), in a
   tree whose root's is the root's user's: none of the tree's tasks joined
   a session keyring, and each searches its own user's (a service that
   changed its UID: Apache's workers). A restore gives each task the same
   where the restorer has none either, as it does for the root; the
   keyring must hold nothing a restore could lose (ring_empty). False with
   *ERR unset: not that case. */
static bool
own_users(struct dctx *c, const struct kinj *j, long id, crest_error_t *err)
{
  long us = 0, uk = 0;
  if (!c->session_is_users || ring_id(j, KEY_SPEC_USER_SESSION_KEYRING, &us, err) < 0 || id != us)
    return false;
  if (ring_id(j, KEY_SPEC_USER_KEYRING, &uk, err) < 0
      || ring_empty(j, KEY_SPEC_USER_SESSION_KEYRING, id, uk, "user session keyring",
                    "a restore gives the task its user's session keyring, of the restorer's "
                    "user namespace",
                    err)
             < 0)
    return false;
  return true;
}

int
keys_dump_thread(struct dctx *c, struct dproc *p, size_t t, shm_inject_fn fn, void *ctx,
                 uint64_t scratch, crest_error_t *err)
{
  const struct kinj j = { p->pid, p->th[t].tid, fn, ctx, scratch };
  const char *userns = "the restored container's user namespace is a new one";
  long id = 0;

  if (c->o->no_keyctl)
    return 0;
  /* A thread keyring (each thread), a process keyring (the process). */
  for (int k = 0; k < (t == 0 ? 2 : 1); k++)
    {
      if (ring_id(&j, k ? KEY_SPEC_PROCESS_KEYRING : KEY_SPEC_THREAD_KEYRING, &id, err) < 0)
        return -1;
      if (id)
        return crest_error_make(err, ENOTSUP,
                                "task %d: %s %d has a %s keyring (key %ld), which a restore does "
                                "not make: cannot checkpoint it",
                                p->pid, k ? "process" : "thread", k ? p->pid : j.tid,
                                k ? "process" : "thread", id);
    }
  /* A thread without a session keyring gets its user's session keyring
     installed by this call (as by its own first use of one): the same
     keyring it searched before. */
  if (ring_id(&j, KEY_SPEC_SESSION_KEYRING, &id, err) < 0)
    return -1;
  if (p == &c->p[0] && t == 0)
    {
      if (root_session(c, &j, id, err) < 0)
        return -1;
    }
  else if (id != c->session_key && !own_users(c, &j, id, err))
    return *err ? -1
                : crest_error_make(
                    err, ENOTSUP,
                    "task %d: thread %d's session keyring (key %ld) is not the root's "
                    "(key %ld), and a restore gives every task the root's: cannot "
                    "checkpoint it",
                    p->pid, j.tid, id, c->session_key);
  /* A container's user keyrings (one of each per user ID): in the user
     namespace crun makes again. */
  if (t != 0 || !c->o->root_is_ns_init)
    return 0;
  long uk = 0;
  if (ring_id(&j, KEY_SPEC_USER_KEYRING, &uk, err) < 0
      || (uk && ring_empty(&j, KEY_SPEC_USER_KEYRING, uk, 0, "user keyring", userns, err) < 0)
      || ring_id(&j, KEY_SPEC_USER_SESSION_KEYRING, &id, err) < 0
      || (id
          && ring_empty(&j, KEY_SPEC_USER_SESSION_KEYRING, id, uk, "user session keyring", userns,
                        err)
                 < 0))
    return -1;
  return 0;
}

long
keys_own_session(void)
{
  long r = syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0);
  return r < 0 ? 0 : r;
}

/* The restore side, process mode. A tree whose root's session keyring was
   its user's session keyring (tree.json "session_users": none of its tasks
   had joined one) gets, restored by a process with a session keyring of
   its own, that one: a key the program added to its session keyring would
   be out of its reach. So the restorer takes its user's session keyring as
   its own first (KEYCTL_JOIN_SESSION_KEYRING by its name, "_uid_ses.UID",
   checked to be the very keyring), which the tree's tasks then inherit, as
   the root had it. A task of another UID searched its own user's, which an
   inherited session keyring would hide: refused. */

/* The restorer's session keyring when it has one other than its user's
   (0: none, or its user's). Asked in a thread of its own: asking installs
   the user's session keyring as the asking thread's (credentials are a
   thread's), which the tree forked from the main thread must not inherit
   where it had none. */
static void *
session_probe(void *arg)
{
  long *v = arg;
  v[0] = syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0);
  v[1] = syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_SESSION_KEYRING, 0);
  return NULL;
}

int
keys_restore_session(const struct rctx *c, crest_error_t *err)
{
  long v[2] = { 0, 0 }, us, j;
  pthread_t th;
  char name[32];
  int rc;
  if (!c->session_users)
    return 0;
  if ((rc = pthread_create(&th, NULL, session_probe, v)) != 0)
    return crest_error_sys(err, rc, "restore: a thread to ask for the session keyring");
  pthread_join(th, NULL);
  if (v[0] <= 0 || v[0] == v[1])
    return 0;
  for (size_t i = 1; i < c->np; i++)
    if (!c->p[i].zombie && c->p[i].uids[0] != c->p[0].uids[0])
      return crest_error_make(err, ENOTSUP,
                              "restore: process %d (UID %lld) had no session keyring but its "
                              "user's, which a task forked by this restore, whose session "
                              "keyring is key %ld, cannot get back: restore it from a process "
                              "without a session keyring of its own",
                              c->p[i].pid, (long long)c->p[i].uids[0], v[0]);
  us = syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_SESSION_KEYRING, 1);
  snprintf(name, sizeof name, "_uid_ses.%u", (unsigned)getuid());
  j = us > 0 ? syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, name) : -1;
  if (us <= 0 || j < 0)
    return crest_error_errno(err, "restore: join the user's session keyring %s", name);
  if (j != us)
    return crest_error_make(err, EEXIST,
                            "restore: joining the session keyring \"%s\" gave key %ld, not the "
                            "user's session keyring (key %ld)",
                            name, j, us);
  crest_debug("restore: the tree's session keyring is its user's (key %ld), not this process's "
              "(key %ld)",
              us, v[0]);
  return 0;
}
