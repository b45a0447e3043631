/* crest: credentials of a process: user and group IDs as the tree sees
 * them, supplementary groups, capabilities, securebits, no_new_privs. */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
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
