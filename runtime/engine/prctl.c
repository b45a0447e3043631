/* crest: prctl state and membarrier registrations (docs/engine.md,
 * "Tasks"). Read by syscalls injected into the stopped task (nothing in
 * /proc shows them), recorded under "prctl" (process) and "pdeathsig",
 * "timerslack" (thread) in a format 3 image, and put back by the restorer
 * blob. */
#include <config.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include "engine.h"
#include "engine-int.h"
#include "image.h"
#include "kernel-abi.h"
#include "util.h"

#define DEFAULT_SLACK 50000
#define ARCH_GET_CPUID 0x1011
#define ARCH_SET_CPUID 0x1012
#define ARCH_GET_XCOMP_PERM 0x1022
#define ARCH_REQ_XCOMP_PERM 0x1023
/* membarrier commands: the probe, and the registration that enables it. */
static const struct
{
  int cmd, reg;
  const char *name;
} mb[] = {
  { 8, 16, "private_expedited" },
  { 32, 64, "private_expedited_sync_core" },
  { 128, 256, "private_expedited_rseq" },
};

static int
inj(pid_t tid, const struct user_regs_struct *regs, uint64_t mask, uint64_t gadget, long nr,
    long a0, long a1, long *ret, crest_error_t *err)
{
  long a[6] = { a0, a1, 0, 0, 0, 0 };
  /* No single-step: a crest killed now leaves the thread sound
     (docs/engine.md, "A checkpoint never harms the tree"). */
  return pt_inject_nostep(tid, regs, mask, gadget, nr, a, ret, err);
}

static int
peek_int(pid_t pid, uint64_t addr, int *v, crest_error_t *err)
{
  struct iovec l = { v, sizeof *v }, r = { (void *)addr, sizeof *v };
  if (process_vm_readv(pid, &l, 1, &r, 1, 0) != sizeof *v)
    return crest_error_errno(err, "task %d: read an injected prctl's answer", pid);
  return 0;
}

/* Does this kernel know PR_GET_MEMORY_MERGE (Linux 6.4)? Asked of crest's
   own process once. */
static bool
memory_merge_here(void)
{
  static int known = -1;
  if (known < 0)
    known = prctl(PR_GET_MEMORY_MERGE, 0L, 0L, 0L, 0L) >= 0;
  return known == 1;
}

int
prctl_dump_process(pid_t tid, const struct user_regs_struct *regs, uint64_t mask, uint64_t gadget,
                   uint64_t scratch, struct prctl_proc *out, crest_error_t *err)
{
  long ret;
  memset(out, 0, sizeof *out);
  if (inj(tid, regs, mask, gadget, SYS_prctl, PR_GET_CHILD_SUBREAPER, (long)scratch, &ret, err) < 0
      || peek_int(tid, scratch, &out->subreaper, err) < 0)
    return -1;
  if (inj(tid, regs, mask, gadget, SYS_prctl, PR_GET_THP_DISABLE, 0, &ret, err) < 0)
    return -1;
  out->thp_disable = ret > 0;
  if (inj(tid, regs, mask, gadget, SYS_prctl, PR_GET_DUMPABLE, 0, &ret, err) < 0)
    return -1;
  out->dumpable = (int)ret;
  if (ret != 0 && ret != 1)
    return crest_error_make(err, ENOTSUP,
                            "task %d: dumpable %ld (set by the kernel at an execve, no prctl "
                            "gives it back): cannot checkpoint it",
                            tid, ret);
  /* Memory-deny-write-execute (Linux 6.3): set by the process for good;
     made again, it would have to come after every mapping the restore
     makes, which it does not do. EINVAL: a kernel without it. */
  if (inj(tid, regs, mask, gadget, SYS_prctl, PR_GET_MDWE, 0, &ret, err) < 0)
    return -1;
  if (ret > 0)
    return crest_error_make(err, ENOTSUP,
                            "task %d: memory-deny-write-execute is on (PR_SET_MDWE, flags %#lx), "
                            "which crest does not restore: cannot checkpoint it",
                            tid, ret);
  /* KSM for the whole process (Linux 6.4), asked where crest's own kernel
     knows the call: an older one answers EINVAL for every task. */
  if (memory_merge_here())
    {
      if (inj(tid, regs, mask, gadget, SYS_prctl, PR_GET_MEMORY_MERGE, 0, &ret, err) < 0)
        return -1;
      out->ksm_any = ret > 0;
    }
  /* The dynamic XSAVE components the process may use (AMX's tile data):
     a permission asked for once (ARCH_REQ_XCOMP_PERM), without which the
     first AMX instruction after restore would end the process (SIGILL).
     Only a CPU with such components has it. */
  {
    const struct xsave_layout *xl = xsave_layout_here();
    if (xl && xl->xfd)
      {
        uint64_t perm = 0;
        struct iovec l = { &perm, sizeof perm }, r = { (void *)scratch, sizeof perm };
        if (inj(tid, regs, mask, gadget, SYS_arch_prctl, ARCH_GET_XCOMP_PERM, (long)scratch, &ret,
                err)
            < 0)
          return -1;
        if (ret == 0 && process_vm_readv(tid, &l, 1, &r, 1, 0) != sizeof perm)
          return crest_error_errno(err, "task %d: read its XSAVE permissions", tid);
        out->xcomp_perm = ret == 0 ? perm & xl->xfd : 0;
      }
  }
  /* A private expedited barrier fails with EPERM unless the process
     registered for it: issuing one is the only way to learn which. */
  for (size_t i = 0; i < sizeof mb / sizeof mb[0]; i++)
    {
      if (inj(tid, regs, mask, gadget, SYS_membarrier, mb[i].cmd, 0, &ret, err) < 0)
        return -1;
      if (ret == 0)
        out->membarrier |= mb[i].reg;
    }
  return 0;
}

/* Does FILE hold NEEDLE? Read once: the answer kept in *KNOWN (-1 until
   then). */
static bool
file_holds(const char *file, const char *needle, int *known)
{
  if (*known < 0)
    {
      cleanup_free char *text = NULL;
      crest_error_t e = NULL;
      *known = read_file(file, &text, NULL, 1 << 22, &e) == 0 && strstr(text, needle) != NULL;
      crest_error_release(&e);
    }
  return *known == 1;
}

/* Can this CPU make cpuid fault (/proc/cpuinfo's "cpuid_fault")? Only
   then can a thread have turned cpuid off (ARCH_SET_CPUID). */
static bool
cpuid_fault_here(void)
{
  static int known = -1;
  return file_holds("/proc/cpuinfo", " cpuid_fault", &known);
}

/* Was this kernel booted to let tasks ask for an L1D flush on context
   switch (l1d_flush=on)? Else PR_SPEC_L1D_FLUSH is not theirs to set. */
static bool
l1d_flush_offered(void)
{
  static int known = -1;
  return file_holds("/proc/cmdline", "l1d_flush=on", &known);
}

int
prctl_dump_thread(pid_t pid, pid_t tid, const struct user_regs_struct *regs, uint64_t mask,
                  uint64_t gadget, uint64_t scratch, bool parent_outside, struct prctl_thread *out,
                  crest_error_t *err)
{
  long ret;
  if (inj(tid, regs, mask, gadget, SYS_prctl, PR_GET_PDEATHSIG, (long)scratch, &ret, err) < 0
      || peek_int(pid, scratch, &out->pdeathsig, err) < 0)
    return -1;
  if (out->pdeathsig && parent_outside)
    return crest_error_make(err, ENOTSUP,
                            "task %d (thread %d): a parent-death signal (%d) tied to a parent "
                            "outside the tree, which restore cannot give back: cannot checkpoint "
                            "it",
                            pid, tid, out->pdeathsig);
  if (inj(tid, regs, mask, gadget, SYS_prctl, PR_GET_TIMERSLACK, 0, &ret, err) < 0)
    return -1;
  out->slack = ret;
  /* Speculation controls and the machine-check policy, asked only where
     the thread's /proc shows it chose one (each injected call costs a
     round trip): the status lines of store bypass and indirect branch
     speculation, the L1D flush only where the kernel was booted to offer
     it, the stat flags' PF_MCE_PROCESS (0x80). A kernel that shows none of
     the lines is asked for all. */
  cleanup_free char *stp = xasprintf("/proc/%d/task/%d/status", pid, tid);
  cleanup_free char *sfp = xasprintf("/proc/%d/task/%d/stat", pid, tid);
  cleanup_free char *st = NULL, *sf = NULL;
  bool ask[3] = { true, true, l1d_flush_offered() }, mce = true;
  if (read_file(stp, &st, NULL, 1 << 16, err) < 0 || read_file(sfp, &sf, NULL, 1 << 16, err) < 0)
    return -1;
  {
    const char *ssb = strstr(st, "\nSpeculation_Store_Bypass:\t");
    const char *ib = strstr(st, "\nSpeculationIndirectBranch:\t");
    const char *e = strrchr(sf, ')');
    unsigned long flags = 0;
    if (ssb)
      ask[0] = strncmp(ssb + 27, "thread ", 7) == 0 && strstr(ssb + 27, "mitigated") != NULL
               && strstr(ssb + 27, "mitigated") < strchr(ssb + 27, '\n');
    if (ib)
      ask[1] = strncmp(ib + 28, "conditional ", 12) == 0 && strstr(ib + 28, "disabled") != NULL
               && strstr(ib + 28, "disabled") < strchr(ib + 28, '\n');
    /* stat: "PID (COMM) STATE PPID PGRP SESSION TTY TPGID FLAGS ..." */
    if (e && sscanf(e + 2, "%*c %*d %*d %*d %*d %*d %lu", &flags) == 1)
      mce = (flags & 0x80) != 0;
  }
  for (int w = 0; w < 3; w++)
    {
      out->spec[w] = 0;
      if (!ask[w])
        continue;
      if (inj(tid, regs, mask, gadget, SYS_prctl, PR_GET_SPECULATION_CTRL, w, &ret, err) < 0)
        return -1;
      out->spec[w] = ret < 0 ? 0 : (int)ret;
    }
  out->cpuid = 1;
  if (cpuid_fault_here())
    {
      if (inj(tid, regs, mask, gadget, SYS_arch_prctl, ARCH_GET_CPUID, 0, &ret, err) < 0)
        return -1;
      out->cpuid = ret == 0 ? 0 : 1;
    }
  out->tsc = PR_TSC_ENABLE;
  if (inj(tid, regs, mask, gadget, SYS_prctl, PR_GET_TSC, (long)scratch, &ret, err) < 0
      || (ret == 0 && peek_int(pid, scratch, &out->tsc, err) < 0))
    return -1;
  out->mce = PR_MCE_KILL_DEFAULT;
  if (mce && inj(tid, regs, mask, gadget, SYS_prctl, PR_MCE_KILL_GET, 0, &ret, err) < 0)
    return -1;
  if (mce && ret >= 0)
    out->mce = (int)ret;
  return 0;
}

/* A state of PR_GET_SPECULATION_CTRL the thread chose: under per-task
   control (PR_SPEC_PRCTL), disabled in one of three ways. */
#define SPEC_CHOSEN(v)                                                                             \
  (((v)&PR_SPEC_PRCTL)                                                                             \
   && ((v) & (PR_SPEC_DISABLE | PR_SPEC_FORCE_DISABLE | PR_SPEC_DISABLE_NOEXEC)))

bool
prctl_spec_set(const struct prctl_thread *t)
{
  return SPEC_CHOSEN(t->spec[0]) || SPEC_CHOSEN(t->spec[1]) || SPEC_CHOSEN(t->spec[2])
         || t->tsc != PR_TSC_ENABLE || t->mce != PR_MCE_KILL_DEFAULT || !t->cpuid;
}

void
prctl_put_spec(yajl_gen g, const struct prctl_thread *t)
{
  jput_key(g, "spec");
  yajl_gen_array_open(g);
  for (int w = 0; w < 3; w++)
    yajl_gen_integer(g, t->spec[w]);
  yajl_gen_array_close(g);
  jput_int(g, "tsc", t->tsc);
  jput_int(g, "mce", t->mce);
  jput_int(g, "cpuid", t->cpuid);
}

size_t
prctl_ops_spec(const struct prctl_thread *t, long ops[][3])
{
  size_t n = 0;
  for (int w = 0; w < 3; w++)
    if (SPEC_CHOSEN(t->spec[w]))
      {
        ops[n][0] = PR_SET_SPECULATION_CTRL, ops[n][1] = w;
        ops[n++][2] = t->spec[w] & PR_SPEC_FORCE_DISABLE    ? PR_SPEC_FORCE_DISABLE
                      : t->spec[w] & PR_SPEC_DISABLE_NOEXEC ? PR_SPEC_DISABLE_NOEXEC
                                                            : PR_SPEC_DISABLE;
      }
  if (t->mce != PR_MCE_KILL_DEFAULT)
    ops[n][0] = PR_MCE_KILL, ops[n][1] = PR_MCE_KILL_SET, ops[n++][2] = t->mce;
  if (!t->cpuid)
    ops[n][0] = -1, ops[n][1] = ARCH_SET_CPUID, ops[n++][2] = 0;
  /* Last: from here on the thread's rdtsc faults. */
  if (t->tsc != PR_TSC_ENABLE)
    ops[n][0] = PR_SET_TSC, ops[n][1] = t->tsc, ops[n++][2] = 0;
  return n;
}

bool
prctl_put_process(yajl_gen g, const struct prctl_proc *p)
{
  if (!p->subreaper && !p->thp_disable && p->dumpable == 1 && !p->membarrier && !p->xcomp_perm
      && !p->ksm_any)
    return false;
  jput_key(g, "prctl");
  yajl_gen_map_open(g);
  jput_bool(g, "child_subreaper", p->subreaper != 0);
  jput_bool(g, "thp_disable", p->thp_disable != 0);
  jput_int(g, "dumpable", p->dumpable);
  jput_int(g, "membarrier", p->membarrier);
  if (p->xcomp_perm)
    jput_u64(g, "xcomp_perm", p->xcomp_perm);
  if (p->ksm_any)
    jput_bool(g, "ksm_merge_any", true);
  yajl_gen_map_close(g);
  return true;
}

bool
prctl_put_thread(yajl_gen g, const struct prctl_thread *t)
{
  if (!t->pdeathsig && t->slack == DEFAULT_SLACK)
    return false;
  jput_int(g, "pdeathsig", t->pdeathsig);
  jput_int(g, "timerslack", t->slack);
  return true;
}

int
prctl_parse_process(yajl_val v, int format, struct prctl_proc *p, crest_error_t *err)
{
  yajl_val o = yajl_tree_get(v, (const char *[]){ "prctl", NULL }, yajl_t_any);
  int64_t d, m;
  bool s, t;
  memset(p, 0, sizeof *p);
  p->dumpable = 1;
  if (!o)
    return 0;
  if (format < CREST_IMAGE_FORMAT_ATTRS || !YAJL_IS_OBJECT(o))
    return crest_error_make(err, EINVAL, "prctl: needs an object in a format 3 image");
  if (jget_bool(o, "child_subreaper", &s, err) < 0 || jget_bool(o, "thp_disable", &t, err) < 0
      || jget_i64(o, "dumpable", &d, err) < 0 || jget_i64(o, "membarrier", &m, err) < 0)
    return -1;
  if ((d != 0 && d != 1) || (m & ~(16 | 64 | 256)))
    return crest_error_make(err, EINVAL, "prctl: bad dumpable %lld or membarrier %lld",
                            (long long)d, (long long)m);
  p->subreaper = s, p->thp_disable = t, p->dumpable = (int)d, p->membarrier = (int)m;
  if (yajl_tree_get(o, (const char *[]){ "ksm_merge_any", NULL }, yajl_t_any))
    {
      bool k;
      if (format < CREST_IMAGE_FORMAT_KSM_ANY)
        return crest_error_make(err, EINVAL, "prctl: ksm_merge_any needs a format 21 image");
      if (jget_bool(o, "ksm_merge_any", &k, err) < 0)
        return -1;
      if (k && !memory_merge_here())
        return crest_error_make(
            err, ENOTSUP,
            "KSM merges every mapping of the process (PR_SET_MEMORY_MERGE), "
            "which this kernel (before Linux 6.4) cannot do: cannot restore it");
      p->ksm_any = k;
    }
  if (yajl_tree_get(o, (const char *[]){ "xcomp_perm", NULL }, yajl_t_any))
    {
      const struct xsave_layout *xl = xsave_layout_here();
      if (format < CREST_IMAGE_FORMAT_XCOMP)
        return crest_error_make(err, EINVAL, "prctl: xcomp_perm needs a format 12 image");
      if (jget_u64(o, "xcomp_perm", &p->xcomp_perm, err) < 0)
        return -1;
      if (p->xcomp_perm & ~(xl ? xl->xfd : 0))
        return crest_error_make(err, ENOTSUP,
                                "the process may use XSAVE components %#" PRIx64
                                " (AMX's tile data: arch_prctl ARCH_REQ_XCOMP_PERM), which this "
                                "CPU does not have",
                                p->xcomp_perm);
    }
  return 0;
}

int
prctl_parse_thread(yajl_val v, int format, struct prctl_thread *t, crest_error_t *err)
{
  int64_t sig, slack;
  yajl_val sp = yajl_tree_get(v, (const char *[]){ "spec", NULL }, yajl_t_any);
  t->pdeathsig = 0, t->slack = DEFAULT_SLACK;
  memset(t->spec, 0, sizeof t->spec);
  t->tsc = PR_TSC_ENABLE, t->mce = PR_MCE_KILL_DEFAULT, t->cpuid = 1;
  if (sp)
    {
      int64_t tsc, mce, cpuid;
      if (format < CREST_IMAGE_FORMAT_AFFINITY || jget_i64(v, "tsc", &tsc, err) < 0
          || jget_i64(v, "mce", &mce, err) < 0 || jget_i64(v, "cpuid", &cpuid, err) < 0)
        return *err ? -1 : crest_error_make(err, EINVAL, "spec: needs a format 15 image");
      if ((tsc != PR_TSC_ENABLE && tsc != PR_TSC_SIGSEGV)
          || (mce != PR_MCE_KILL_DEFAULT && mce != PR_MCE_KILL_EARLY && mce != PR_MCE_KILL_LATE))
        return crest_error_make(err, EINVAL, "bad tsc %lld or mce %lld", (long long)tsc,
                                (long long)mce);
      if (cpuid != 0 && cpuid != 1)
        return crest_error_make(err, EINVAL, "bad cpuid %lld", (long long)cpuid);
      t->tsc = (int)tsc, t->mce = (int)mce, t->cpuid = (int)cpuid;
      if (format < CREST_IMAGE_FORMAT_AFFINITY || !YAJL_IS_ARRAY(sp) || sp->u.array.len != 3)
        return crest_error_make(err, EINVAL, "spec: needs 3 numbers in a format 15 image");
      for (int w = 0; w < 3; w++)
        {
          yajl_val e = sp->u.array.values[w];
          if (!YAJL_IS_INTEGER(e) || YAJL_GET_INTEGER(e) < 0 || YAJL_GET_INTEGER(e) > 31)
            return crest_error_make(err, EINVAL, "spec: a number out of range");
          t->spec[w] = (int)YAJL_GET_INTEGER(e);
        }
    }
  if (!yajl_tree_get(v, (const char *[]){ "pdeathsig", NULL }, yajl_t_any))
    return 0;
  if (format < CREST_IMAGE_FORMAT_ATTRS || jget_i64(v, "pdeathsig", &sig, err) < 0
      || jget_i64(v, "timerslack", &slack, err) < 0)
    return *err ? -1 : crest_error_make(err, EINVAL, "pdeathsig: needs a format 3 image");
  if (sig < 0 || sig > 64 || slack < 0 || slack > (1LL << 40))
    return crest_error_make(err, EINVAL, "bad pdeathsig %lld or timerslack %lld", (long long)sig,
                            (long long)slack);
  t->pdeathsig = (int)sig, t->slack = slack;
  return 0;
}

size_t
prctl_ops_xcomp(const struct prctl_proc *p, long ops[][3])
{
  size_t n = 0;
  for (int b = 0; b < 64 && n < 8; b++)
    if (p->xcomp_perm >> b & 1)
      ops[n][0] = SYS_arch_prctl, ops[n][1] = ARCH_REQ_XCOMP_PERM, ops[n++][2] = b;
  return n;
}

size_t
prctl_ops_process(const struct prctl_proc *p, long ops[][3])
{
  size_t n = 0;
  if (p->subreaper)
    ops[n][0] = SYS_prctl, ops[n][1] = PR_SET_CHILD_SUBREAPER, ops[n++][2] = 1;
  if (p->thp_disable)
    ops[n][0] = SYS_prctl, ops[n][1] = PR_SET_THP_DISABLE, ops[n++][2] = 1;
  if (p->ksm_any)
    ops[n][0] = SYS_prctl, ops[n][1] = PR_SET_MEMORY_MERGE, ops[n++][2] = 1;
  for (size_t i = 0; i < sizeof mb / sizeof mb[0]; i++)
    if (p->membarrier & mb[i].reg)
      ops[n][0] = SYS_membarrier, ops[n][1] = mb[i].reg, ops[n++][2] = 0;
  return n;
}
