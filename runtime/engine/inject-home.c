/* inject-home.c: the way home of a thread whose injected call is cut off.
 *
 * The dump asks a seized thread for state only it can give by running a
 * syscall in it: registers set to the call at a syscall instruction of the
 * vDSO, then put back (ptrace.c). If the worker dies while those
 * registers are the thread's, the kernel lets the thread go on from them.
 * So before its first call, each thread gets a way home on the dead part of
 * its stack, below its stack pointer and red zone:
 *
 *   S                 F                                   fpstate
 *   | pops filler ... | pretcode | ucontext | siginfo | .. | xsave area | magic2 |
 *
 * An injected call runs with its stack pointer at S and its instruction
 * pointer at a syscall instruction of the vDSO that is followed only by
 * register clearing, pops and a `ret` (the gadget). Cut off, the thread
 * makes the call, pops the filler, returns to the pretcode: the
 * `mov $15, %rax; syscall` of the tree's C library (rt_sigreturn), whose
 * frame is F with the thread's own registers (an interrupted syscall set
 * to restart, as signal delivery would), its own signal mask and its own
 * extended state. The kernel puts them all back, and the thread runs on as
 * if it had never been stopped. The alternate signal stack in the frame has
 * an invalid mode, which makes rt_sigreturn leave the thread's own as it is.
 *
 * Without such a gadget (no syscall instruction followed by a plain return
 * in the vDSO, no rt_sigreturn code in an executable mapping) or without
 * room on the stack, the thread has no way home, as before.
 */
#include <config.h>

#include "dump-int.h"
#include "image.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#define FP_XSTATE_MAGIC1 0x46505853U
#define FP_XSTATE_MAGIC2 0x46505845U
#define UC_FP_XSTATE 0x1
#define UC_SIGCONTEXT_SS 0x2
#define UC_STRICT_RESTORE_SS 0x4
#define RED_ZONE 128

/* The kernel's struct rt_sigframe of x86-64, up to the extended state. */
struct kframe
{
  uint64_t pretcode;
  uint64_t uc_flags, uc_link;
  uint64_t ss_sp;
  int32_t ss_flags, ss_pad;
  uint64_t ss_size;
  struct sigcontext mc;
  uint64_t uc_sigmask;
  uint8_t info[128];
};

_Static_assert(sizeof(struct sigcontext) == 256, "struct sigcontext of x86-64");

/* The software-reserved bytes of a signal frame's XSAVE area. */
struct fpx_sw
{
  uint32_t magic1, extended_size;
  uint64_t xfeatures;
  uint32_t xstate_size, padding[7];
};
_Static_assert(sizeof(struct fpx_sw) == 48, "struct _fpx_sw_bytes");

int
home_find_gadget(const uint8_t *v, size_t len, uint64_t base, uint64_t *gadget, int *pops)
{
  for (size_t i = 0; i + 2 < len; i++)
    {
      size_t k = i + 2;
      int n = 0;
      if (v[i] != 0x0f || v[i + 1] != 0x05)
        continue;
      while (k < len && k < i + 24)
        {
          size_t rex = (v[k] & 0xf0) == 0x40 ? 1 : 0;
          if (k + rex >= len)
            break;
          if (v[k + rex] == 0xc3 && !rex)
            {
              *gadget = base + i, *pops = n;
              return 0;
            }
          if (v[k + rex] >= 0x58 && v[k + rex] <= 0x5f)
            k += rex + 1, n++; /* pop */
          else if (v[k + rex] == 0x31 && k + rex + 1 < len && (v[k + rex + 1] & 0xc0) == 0xc0)
            k += rex + 2; /* xor reg, reg */
          else
            break;
        }
    }
  return -1;
}

int
home_vdso_gadget(pid_t pid, const struct vma *vv, size_t nv, uint64_t *gadget, int *pops,
                 crest_error_t *err)
{
  uint64_t vdso = 0, vdso_end = 0;
  cleanup_free uint8_t *buf = NULL;
  *gadget = 0, *pops = -1;
  for (size_t i = 0; i < nv; i++)
    if (strcmp(vv[i].kind, "vdso") == 0)
      vdso = vv[i].start, vdso_end = vv[i].end;
  if (!vdso || vdso_end - vdso > (1u << 20))
    return 0;
  buf = xmalloc(vdso_end - vdso);
  if (vm_read(pid, vdso, buf, vdso_end - vdso, err) < 0)
    return -1;
  if (home_find_gadget(buf, vdso_end - vdso, vdso, gadget, pops) < 0)
    for (uint64_t i = 0; i + 1 < vdso_end - vdso && !*gadget; i++)
      if (buf[i] == 0x0f && buf[i + 1] == 0x05)
        *gadget = vdso + i;
  return 0;
}

/* The offset in file (DEV, INO) of rt_sigreturn code, learnt once per file:
   -1 none, -2 not looked at yet. */
struct sr_cache
{
  unsigned dev_major, dev_minor;
  uint64_t ino;
  int64_t off;
};
static struct sr_cache *sr_seen;
static size_t sr_nseen;

static int64_t
scan_sigreturn(pid_t pid, const struct vma *v)
{
  static const uint8_t mov_rax[] = { 0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05 };
  static const uint8_t mov_eax[] = { 0xb8, 0x0f, 0, 0, 0, 0x0f, 0x05 };
  size_t len = v->end - v->start;
  uint8_t *buf;
  int64_t off = -1;
  crest_error_t e = NULL;

  if (len > (64u << 20))
    return -1;
  buf = xmalloc(len);
  if (vm_read(pid, v->start, buf, len, &e) == 0)
    for (size_t i = 0; i + sizeof mov_rax <= len && off < 0; i++)
      if (memcmp(buf + i, mov_rax, sizeof mov_rax) == 0
          || memcmp(buf + i, mov_eax, sizeof mov_eax) == 0)
        off = (int64_t)(v->pgoff + i);
  crest_error_release(&e);
  free(buf);
  return off;
}

uint64_t
home_find_sigreturn(pid_t pid, const struct vma *vv, size_t nv)
{
  /* The C library first: every glibc or musl program maps it there. */
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = 0; i < nv; i++)
      {
        const struct vma *v = &vv[i];
        struct sr_cache *c = NULL;
        if (!(v->prot & PROT_EXEC) || !v->path || v->path[0] != '/' || v->shared)
          continue;
        if ((strstr(v->path, "/libc") != NULL) != (pass == 0))
          continue;
        for (size_t k = 0; k < sr_nseen && !c; k++)
          if (sr_seen[k].ino == v->ino && sr_seen[k].dev_major == v->dev_major
              && sr_seen[k].dev_minor == v->dev_minor)
            c = &sr_seen[k];
        if (!c)
          {
            sr_seen = xrealloc(sr_seen, (sr_nseen + 1) * sizeof *sr_seen);
            c = &sr_seen[sr_nseen++];
            *c = (struct sr_cache){ v->dev_major, v->dev_minor, v->ino, -2 };
          }
        if (c->off == -2)
          c->off = scan_sigreturn(pid, v);
        /* The code found is in this mapping only if its offset is. */
        if (c->off >= 0 && (uint64_t)c->off >= v->pgoff
            && (uint64_t)c->off - v->pgoff + 9 <= v->end - v->start)
          {
            uint8_t b[9];
            crest_error_t e = NULL;
            uint64_t at = v->start + ((uint64_t)c->off - v->pgoff);
            int ok = vm_read(pid, at, b, sizeof b, &e) == 0;
            crest_error_release(&e);
            if (ok && ((b[0] == 0x48 && b[3] == 0x0f && b[8] == 0x05) || b[0] == 0xb8))
              return at;
          }
      }
  return 0;
}

/* The registers the thread must come back to: an interrupted syscall set
   to restart, as the kernel does when a handler-less signal interrupts it. */
static void
home_regs(const struct user_regs_struct *r, struct sigcontext *mc)
{
  long ax = (long)r->rax;
  uint64_t rip = r->rip;

  if ((long)r->orig_rax >= 0)
    {
      if (ax == -512 || ax == -513 || ax == -514)
        ax = (long)r->orig_rax, rip -= 2;
      else if (ax == -516)
        ax = SYS_restart_syscall, rip -= 2;
    }
  memset(mc, 0, sizeof *mc);
  mc->r8 = r->r8, mc->r9 = r->r9, mc->r10 = r->r10, mc->r11 = r->r11;
  mc->r12 = r->r12, mc->r13 = r->r13, mc->r14 = r->r14, mc->r15 = r->r15;
  mc->rdi = r->rdi, mc->rsi = r->rsi, mc->rbp = r->rbp, mc->rbx = r->rbx;
  mc->rdx = r->rdx, mc->rax = (uint64_t)ax, mc->rcx = r->rcx, mc->rsp = r->rsp;
  mc->rip = rip, mc->eflags = r->eflags;
  mc->cs = (unsigned short)r->cs, mc->__pad0 = (unsigned short)r->ss; /* ss */
}

/* The XSAVE area of TH's signal frames: the features (*FEAT) and the size
   the kernel gives the task's own frames, which its rt_sigreturn expects
   (newer kernels look for the second magic word there). ptrace
   gives every feature the CPU has, AMX's 8 KiB of tile data included; a
   task whose tiles are in their initial state is given the frame of a task
   without them (one that used them and let them go keeps the larger frame
   in the kernel: its frame here then brings back only FP and SSE on the
   way home, which only a killed worker takes). */
static uint32_t
home_xsize(const struct dthread *th, uint64_t *feat)
{
  const struct xsave_layout *l = xsave_layout_here();
  uint64_t xcr0, bv;
  uint32_t size = 512 + 64;
  memcpy(&xcr0, th->xstate + 464, 8);
  memcpy(&bv, th->xstate + 512, 8);
  *feat = xcr0;
  if (!l || (bv & l->xfd))
    return (uint32_t)th->xlen;
  *feat = xcr0 & ~l->xfd;
  for (unsigned i = 2; i < 64; i++)
    if ((*feat >> i & 1) && l->off[i] + l->len[i] > size)
      size = l->off[i] + l->len[i];
  return size <= th->xlen ? size : (uint32_t)th->xlen;
}

uint64_t
home_room(const struct dthread *th, int pops)
{
  uint64_t feat;
  if (th->xlen < 512 || th->xlen > XSTATE_MAX)
    return RED_ZONE;
  return RED_ZONE + home_xsize(th, &feat) + 4 + 64 + sizeof(struct kframe) + 16
         + 8 * (uint64_t)(pops > 0 ? pops : 0);
}

int
home_build(pid_t pid, const struct dthread *th, const struct vma *vv, size_t nv, int pops,
           uint64_t sigret, uint64_t avoid, uint64_t avoid_len, struct home *h, crest_error_t *err)
{
  uint64_t sp = th->regs.rsp, top, fp, f, s;
  uint32_t xsize, magic2 = FP_XSTATE_MAGIC2;
  uint64_t feat;
  struct fpx_sw sw;
  const struct vma *v = NULL;
  struct kframe k;
  uint8_t *img;
  struct iovec l, r;

  memset(h, 0, sizeof *h);
  if (pops < 0 || !sigret || th->xlen < 512 || th->xlen > XSTATE_MAX)
    return 0;
  for (size_t i = 0; i < nv && !v; i++)
    if (sp > vv[i].start && sp <= vv[i].end && (vv[i].prot & (PROT_READ | PROT_WRITE))
        && !vv[i].shared)
      v = &vv[i];
  /* ptrace gives the XSAVE area with the feature mask (XCR0) in its first
     software-reserved word; a signal frame has the sizes and magics there. */
  xsize = home_xsize(th, &feat);
  if (!v)
    return 0;
  top = (sp - RED_ZONE) & ~63ULL;
  fp = (top - xsize - sizeof magic2) & ~63ULL;
  f = (fp - sizeof k) & ~15ULL;
  s = f - 8 * (uint64_t)pops;
  if (s < v->start + 4096 || (s < avoid + avoid_len && avoid < top))
    return 0;

  memset(&k, 0, sizeof k);
  k.pretcode = sigret;
  k.uc_flags = UC_FP_XSTATE | UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS;
  k.ss_flags = SS_ONSTACK | SS_DISABLE; /* no valid mode: the altstack stays */
  home_regs(&th->regs, &k.mc);
  k.mc.fpstate = (struct _fpstate *)(uintptr_t)fp;
  k.uc_sigmask = th->sigmask;

  h->lo = s, h->len = top - s;
  h->saved = xmalloc(h->len);
  if (vm_read(pid, s, h->saved, h->len, err) < 0)
    {
      free(h->saved);
      memset(h, 0, sizeof *h);
      return -1;
    }
  img = xmalloc(h->len);
  memcpy(img, h->saved, h->len);
  memset(img, 0, f - s); /* the filler the gadget pops */
  memcpy(img + (f - s), &k, sizeof k);
  memcpy(img + (fp - s), th->xstate, xsize);
  memset(&sw, 0, sizeof sw);
  sw.magic1 = FP_XSTATE_MAGIC1, sw.extended_size = xsize + sizeof magic2;
  sw.xfeatures = feat, sw.xstate_size = xsize;
  memcpy(img + (fp - s) + 464, &sw, sizeof sw);
  memcpy(img + (fp - s) + xsize, &magic2, sizeof magic2);
  l = (struct iovec){ img, h->len }, r = (struct iovec){ (void *)(uintptr_t)s, h->len };
  if (process_vm_writev(pid, &l, 1, &r, 1, 0) != (ssize_t)h->len)
    {
      crest_error_errno(err, "task %d: write its way home at %#" PRIx64, th->tid, s);
      free(img);
      free(h->saved);
      memset(h, 0, sizeof *h);
      return -1;
    }
  free(img);
  h->sp = s;
  pt_set_home(th->tid, s);
  return 0;
}

int
home_put(pid_t pid, pid_t tid, struct home *h, crest_error_t *err)
{
  int rc = 0;
  pt_set_home(tid, 0);
  if (h->saved)
    {
      struct iovec l = { h->saved, h->len }, r = { (void *)(uintptr_t)h->lo, h->len };
      if (process_vm_writev(pid, &l, 1, &r, 1, 0) != (ssize_t)h->len && !*err)
        rc = crest_error_errno(err, "task %d: write back its stack at %#" PRIx64, tid, h->lo);
      free(h->saved);
    }
  memset(h, 0, sizeof *h);
  return rc;
}
