/* crest: credentials of a process: user and group IDs as the tree sees
 * them, supplementary groups, capabilities, securebits, no_new_privs. */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <grp.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>
#include "dump-int.h"
#include "image-check.h"
#include "restore-int.h"
#include "image.h"
#include "log.h"
#include "util.h"

static int
parse_ids(const char *s, long out[4])
{
  return s && sscanf(s, "%ld %ld %ld %ld", &out[0], &out[1], &out[2], &out[3]) == 4 ? 0 : -1;
}

/* The "creds" record of process P: IDs as the tree sees them, groups,
   capabilities, securebits, no_new_privs; STATUS is its /proc status. */
int
creds_put(struct dctx *c, struct dproc *p, const char *status, yajl_gen g, crest_error_t *err)
{
  const char *s;
  long ids[4];
  jput_key(g, "creds");
  yajl_gen_map_open(g);
  if (parse_ids(status_field(status, "Uid"), ids) < 0)
    return crest_error_make(err, EINVAL, "task %d: cannot parse /proc status", p->pid);
  jput_key(g, "uids");
  yajl_gen_array_open(g);
  for (int i = 0; i < 4; i++)
    yajl_gen_integer(g, inner_id(c, &c->uidmap, ids[i]));
  yajl_gen_array_close(g);
  if (parse_ids(status_field(status, "Gid"), ids) < 0)
    return crest_error_make(err, EINVAL, "task %d: cannot parse /proc status", p->pid);
  jput_key(g, "gids");
  yajl_gen_array_open(g);
  for (int i = 0; i < 4; i++)
    yajl_gen_integer(g, inner_id(c, &c->gidmap, ids[i]));
  yajl_gen_array_close(g);
  jput_key(g, "groups");
  yajl_gen_array_open(g);
  s = status_field(status, "Groups");
  while (s && *s && *s != '\n')
    {
      char *e;
      long gid = strtol(s, &e, 10);
      if (e == s)
        break;
      yajl_gen_integer(g, inner_id(c, &c->gidmap, gid));
      s = e;
      while (*s == ' ')
        s++;
    }
  yajl_gen_array_close(g);
  {
    static const char *caps[] = { "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb" };
    static const char *keys[] = { "cap_inh", "cap_prm", "cap_eff", "cap_bnd", "cap_amb" };
    for (int i = 0; i < 5; i++)
      {
        s = status_field(status, caps[i]);
        if (!s)
          return crest_error_make(err, EINVAL, "task %d: cannot parse /proc status", p->pid);
        jput_u64(g, keys[i], strtoull(s, NULL, 16));
      }
  }
  jput_int(g, "securebits", p->securebits);
  s = status_field(status, "NoNewPrivs");
  jput_bool(g, "no_new_privs", s && atoi(s));
  yajl_gen_map_close(g);
  return 0;
}

/* The "creds" record CR of process P. */
int
creds_parse(yajl_val cr, struct rproc *p, crest_error_t *err)
{
  long n;
  static const char *ck[] = { "cap_inh", "cap_prm", "cap_eff", "cap_bnd", "cap_amb" };
  yajl_val *u;
  if (jget_array(cr, "uids", &u, err) != 4)
    return crest_error_make(err, EINVAL, "process %d: uids", p->pid);
  for (int i = 0; i < 4; i++)
    {
      CHECK(YAJL_IS_INTEGER(u[i]), "process %d: uids", p->pid);
      p->uids[i] = YAJL_GET_INTEGER(u[i]);
    }
  if (jget_array(cr, "gids", &u, err) != 4)
    return crest_error_make(err, EINVAL, "process %d: gids", p->pid);
  for (int i = 0; i < 4; i++)
    {
      CHECK(YAJL_IS_INTEGER(u[i]), "process %d: gids", p->pid);
      p->gids[i] = YAJL_GET_INTEGER(u[i]);
    }
  n = jget_array(cr, "groups", &u, err);
  CHECK(n >= 0 && n <= 65536, "process %d: groups", p->pid);
  p->groups = xzalloc((n + 1) * sizeof *p->groups);
  for (long i = 0; i < n; i++)
    {
      CHECK(YAJL_IS_INTEGER(u[i]) && YAJL_GET_INTEGER(u[i]) >= 0
                && YAJL_GET_INTEGER(u[i]) < UINT32_MAX,
            "process %d: groups", p->pid);
      p->groups[i] = YAJL_GET_INTEGER(u[i]);
    }
  p->ngroups = n;
  for (int i = 0; i < 5; i++)
    if (jget_u64(cr, ck[i], &p->caps[i], err) < 0)
      return -1;
  if (jget_i64(cr, "securebits", &p->securebits, err) < 0
      || jget_bool(cr, "no_new_privs", &p->nnp, err) < 0)
    return -1;
  for (int i = 0; i < 4; i++)
    CHECK(p->uids[i] >= 0 && p->uids[i] < UINT32_MAX && p->gids[i] >= 0 && p->gids[i] < UINT32_MAX,
          "process %d: a UID or GID out of range", p->pid);
  CHECK(p->securebits >= 0 && p->securebits <= 0xff, "process %d: securebits out of range", p->pid);
  return 0;
}
/* In the new task: credentials that are the same for the whole process
   (the blob sets each thread's own). The tree may not hold more
   capabilities than the restorer does. */
void
creds_restore(struct rctx *c, int idx, const struct rproc *p)
{
  {
    uid_t ru, eu, su;
    gid_t rg, eg, sg;
    getresuid(&ru, &eu, &su);
    getresgid(&rg, &eg, &sg);
    if ((rg != (gid_t)p->gids[0] || eg != (gid_t)p->gids[1] || sg != (gid_t)p->gids[2])
        && setresgid(p->gids[0], p->gids[1], p->gids[2]) < 0)
      task_fail(c, idx, "process %d: setresgid: %s", p->pid, strerror(errno));
    {
      gid_t cur[256];
      int n = getgroups(256, cur);
      bool same = n >= 0 && (size_t)n == p->ngroups;
      for (int i = 0; same && i < n; i++)
        same = cur[i] == p->groups[i];
      if (!same && setgroups(p->ngroups, p->groups) < 0)
        task_fail(c, idx, "process %d: set %zu supplementary groups: %s", p->pid, p->ngroups,
                  strerror(errno));
    }
    if ((ru != (uid_t)p->uids[0] || eu != (uid_t)p->uids[1] || su != (uid_t)p->uids[2])
        && setresuid(p->uids[0], p->uids[1], p->uids[2]) < 0)
      task_fail(c, idx, "process %d: setresuid: %s", p->pid, strerror(errno));
  }
  {
    /* The tree may not hold more than the restorer does. */
    struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct d[2];
    uint64_t prm, want = p->caps[1] | p->caps[0];
    if (syscall(SYS_capget, &h, d) < 0)
      task_fail(c, idx, "process %d: capget: %s", p->pid, strerror(errno));
    prm = d[0].permitted | (uint64_t)d[1].permitted << 32;
    if ((p->caps[1] & ~prm) != 0)
      task_fail(c, idx,
                "process %d: held capabilities %#" PRIx64
                " at checkpoint, the restorer holds only %#" PRIx64,
                p->pid, p->caps[1], prm);
    (void)want;
    if (p->securebits != prctl(PR_GET_SECUREBITS) && prctl(PR_SET_SECUREBITS, p->securebits) < 0)
      task_fail(c, idx, "process %d: set securebits %#llx: %s", p->pid, (long long)p->securebits,
                strerror(errno));
  }
}
