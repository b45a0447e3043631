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
    struct
    {
      uint64_t off;
      uint32_t flags;
      int32_t nr;
    } arg = { 0, PTRACE_PEEKSIGINFO_SHARED, 64 };
    uint8_t si[64 * 128];
    long n = ptrace(PTRACE_PEEKSIGINFO, p->pid, &arg, si);
    if (n < 0)
      return crest_error_errno(err, "task %d: read shared pending signals", p->pid);
    *cont |= sig_put_pending(g, "shared_pending", si, n);
  }
  return 0;
}
