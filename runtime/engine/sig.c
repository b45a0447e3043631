/* crest: signals of a process: handlers, interval timers, pending
 * signals (docs/engine.md, "Signals"). */
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
#include "image-check.h"
#include "restore-int.h"
#include "image.h"
#include "log.h"
#include "util.h"

/* Write KEY: the N siginfos (128 bytes each, as PTRACE_PEEKSIGINFO gives
   them) in SI. Is a SIGCONT among them? */
bool
sig_put_pending(yajl_gen g, const char *key, const uint8_t *si, long n)
{
  bool cont = false;
  jput_key(g, key);
  yajl_gen_array_open(g);
  for (long i = 0; i < n; i++)
    {
      int32_t sig;
      memcpy(&sig, si + 128 * i, sizeof sig);
      cont |= sig == SIGCONT;
      jput_hex(g, NULL, si + 128 * i, 128);
    }
  yajl_gen_array_close(g);
  return cont;
}

/* Process P's signal handlers, interval timers and process-wide pending
   signals (*CONT: a SIGCONT among them). */
int
sig_put_process(const struct dproc *p, yajl_gen g, bool *cont, crest_error_t *err)
{
  jput_key(g, "sigactions");
  yajl_gen_array_open(g);
  for (int sg = 1; sg <= 64; sg++)
    {
      const struct ksigaction *a = &p->sa[sg];
      if (sg == SIGKILL || sg == SIGSTOP || (a->handler == 0 && a->flags == 0 && a->mask == 0))
        continue;
      yajl_gen_map_open(g);
      jput_int(g, "sig", sg);
      jput_u64(g, "handler", a->handler);
      jput_u64(g, "flags", a->flags);
      jput_u64(g, "restorer", a->restorer);
      jput_u64(g, "mask", a->mask);
      yajl_gen_map_close(g);
    }
  yajl_gen_array_close(g);
  jput_key(g, "itimers");
  yajl_gen_array_open(g);
  for (int w = 0; w < 3; w++)
    {
      yajl_gen_map_open(g);
      jput_u64(g, "interval_sec", p->itimer[w][0]);
      jput_u64(g, "interval_usec", p->itimer[w][1]);
      jput_u64(g, "value_sec", p->itimer[w][2]);
      jput_u64(g, "value_usec", p->itimer[w][3]);
      yajl_gen_map_close(g);
    }
  yajl_gen_array_close(g);
  {
    /* Process-wide pending signals. */
    struct peeksiginfo arg = { 0, PTRACE_PEEKSIGINFO_SHARED, 64 };
    uint8_t si[64 * 128];
    long n = ptrace(PTRACE_PEEKSIGINFO, p->pid, &arg, si);
    if (n < 0)
      return crest_error_errno(err, "task %d: read shared pending signals", p->pid);
    *cont |= sig_put_pending(g, "shared_pending", si, n);
  }
  return 0;
}

int
parse_siginfos(yajl_val v, const char *key, uint8_t (**out)[128], size_t *nout, crest_error_t *err)
{
  yajl_val *items;
  long n = jget_array(v, key, &items, err);
  if (n < 0)
    return -1;
  CHECK(n <= 64, "%s: %ld entries", key, n);
  *out = xzalloc((n + 1) * 128);
  for (long i = 0; i < n; i++)
    {
      const char *k = "s";
      struct yajl_val_s obj;
      uint8_t *b;
      size_t len;
      obj.type = yajl_t_object;
      obj.u.object.keys = &k;
      obj.u.object.values = &items[i];
      obj.u.object.len = 1;
      if (jget_hex_alloc(&obj, "s", 128, &b, &len, err) < 0)
        return -1;
      if (len != 128)
        {
          free(b);
          return crest_error_make(err, EINVAL, "%s: siginfo of %zu bytes", key, len);
        }
      memcpy((*out)[i], b, 128);
      free(b);
    }
  *nout = n;
  return 0;
}

/* Process P's signal handlers, interval timers and process-wide pending
   signals, from its record V. */
int
sig_parse_process(yajl_val v, struct rproc *p, crest_error_t *err)
{
  yajl_val *items;
  long n;
  n = jget_array(v, "sigactions", &items, err);
  CHECK(n >= 0 && n <= 64, "process %d: sigactions", p->pid);
  for (long i = 0; i < n; i++)
    {
      int64_t sg;
      struct ksigaction a;
      if (jget_i64(items[i], "sig", &sg, err) < 0
          || jget_u64(items[i], "handler", &a.handler, err) < 0
          || jget_u64(items[i], "flags", &a.flags, err) < 0
          || jget_u64(items[i], "restorer", &a.restorer, err) < 0
          || jget_u64(items[i], "mask", &a.mask, err) < 0)
        return -1;
      CHECK(sg >= 1 && sg <= 64 && sg != SIGKILL && sg != SIGSTOP,
            "process %d: sigaction for signal %lld", p->pid, (long long)sg);
      p->sa[sg] = a;
    }
  n = jget_array(v, "itimers", &items, err);
  CHECK(n == 3, "process %d: itimers", p->pid);
  for (long i = 0; i < 3; i++)
    {
      if (jget_u64(items[i], "interval_sec", &p->itimer[i][0], err) < 0
          || jget_u64(items[i], "interval_usec", &p->itimer[i][1], err) < 0
          || jget_u64(items[i], "value_sec", &p->itimer[i][2], err) < 0
          || jget_u64(items[i], "value_usec", &p->itimer[i][3], err) < 0)
        return -1;
      CHECK(p->itimer[i][0] <= INT64_MAX && p->itimer[i][2] <= INT64_MAX
                && p->itimer[i][1] < 1000000 && p->itimer[i][3] < 1000000,
            "process %d: itimer %ld out of range", p->pid, i);
    }
  if (parse_siginfos(v, "shared_pending", &p->shared_pending, &p->nshared_pending, err) < 0)
    return -1;
  return 0;
}

/* Is signal SIG among the N siginfos in SI (128 bytes each, as the image
   holds them)? */
bool
sig_in(const uint8_t (*si)[128], size_t n, int sig)
{
  for (size_t i = 0; i < n; i++)
    {
      int32_t s;
      memcpy(&s, si[i], 4);
      if (s == sig)
        return true;
    }
  return false;
}
