/* zdtm-regs: registers survive. Callee-saved general registers and
 * xmm8-xmm15 (and the upper halves of ymm8-ymm15 where AVX exists) hold
 * known values while the task waits in a loop written in assembly, so that
 * the compiler cannot move them to memory; the loop calls nanosleep with the
 * syscall instruction, which preserves them. Also checks fs base (TLS) and
 * the x87/SSE control words. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>

static struct timespec nap = { 0, 20 * 1000 * 1000 };
static uint64_t gp_out[4];
static uint8_t vec_out[8][32];
static uint8_t vec_in[8][32];
static __thread uint64_t tls_marker = 0x7e57ab1e;

int
main(int argc, char **argv)
{
  int avx = __builtin_cpu_supports("avx");
  uint16_t fcw_in = 0x027f, fcw_out = 0;
  uint32_t mxcsr_in = 0x1f80 | 0x6000, mxcsr_out = 0; /* round toward zero */

  zdtm_init(argc, argv);
  for (int r = 0; r < 8; r++)
    for (int b = 0; b < 32; b++)
      vec_in[r][b] = zdtm_pattern(60 + r, b);
  zdtm_ready();

  __asm__ volatile("fldcw %[fcw]\n\t"
                   "ldmxcsr %[mx]\n\t"
                   :
                   : [fcw] "m"(fcw_in), [mx] "m"(mxcsr_in));
  /* Load the vector registers, then wait in assembly for the flag the
     SIGTERM handler sets, then store everything. */
  if (avx)
    __asm__ volatile("vmovdqu 0(%[vin]), %%ymm8\n\t"
                     "vmovdqu 32(%[vin]), %%ymm9\n\t"
                     "vmovdqu 64(%[vin]), %%ymm10\n\t"
                     "vmovdqu 96(%[vin]), %%ymm11\n\t"
                     "vmovdqu 128(%[vin]), %%ymm12\n\t"
                     "vmovdqu 160(%[vin]), %%ymm13\n\t"
                     "vmovdqu 192(%[vin]), %%ymm14\n\t"
                     "vmovdqu 224(%[vin]), %%ymm15\n\t"
                     :
                     : [vin] "r"(vec_in)
                     : "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
  else
    __asm__ volatile("movdqu 0(%[vin]), %%xmm8\n\t"
                     "movdqu 32(%[vin]), %%xmm9\n\t"
                     "movdqu 64(%[vin]), %%xmm10\n\t"
                     "movdqu 96(%[vin]), %%xmm11\n\t"
                     "movdqu 128(%[vin]), %%xmm12\n\t"
                     "movdqu 160(%[vin]), %%xmm13\n\t"
                     "movdqu 192(%[vin]), %%xmm14\n\t"
                     "movdqu 224(%[vin]), %%xmm15\n\t"
                     :
                     : [vin] "r"(vec_in)
                     : "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
  __asm__ volatile(
      "movabs $0x1122334455667788, %%rbx\n\t"
      "movabs $0x99aabbccddeeff00, %%r12\n\t"
      "movabs $0x0123456789abcdef, %%r13\n\t"
      "movabs $0xfedcba9876543210, %%r14\n\t"
      "mov %[flag], %%r15\n\t"
      "1:\n\t"
      "mov $%c[nr], %%eax\n\t"
      "mov %[nap], %%rdi\n\t"
      "xor %%esi, %%esi\n\t"
      "syscall\n\t"
      "cmpl $0, (%%r15)\n\t"
      "je 1b\n\t"
      "mov %[out], %%r15\n\t"
      "mov %%rbx, 0(%%r15)\n\t"
      "mov %%r12, 8(%%r15)\n\t"
      "mov %%r13, 16(%%r15)\n\t"
      "mov %%r14, 24(%%r15)\n\t"
      :
      : [flag] "r"(&zdtm_stop_flag), [nap] "r"(&nap), [out] "r"(gp_out), [nr] "i"(SYS_nanosleep)
      : "rax", "rdi", "rsi", "rcx", "r11", "rdx", "rbx", "r12", "r13", "r14", "r15", "memory");
  if (avx)
    __asm__ volatile("vmovdqu %%ymm8, 0(%[vout])\n\t"
                     "vmovdqu %%ymm9, 32(%[vout])\n\t"
                     "vmovdqu %%ymm10, 64(%[vout])\n\t"
                     "vmovdqu %%ymm11, 96(%[vout])\n\t"
                     "vmovdqu %%ymm12, 128(%[vout])\n\t"
                     "vmovdqu %%ymm13, 160(%[vout])\n\t"
                     "vmovdqu %%ymm14, 192(%[vout])\n\t"
                     "vmovdqu %%ymm15, 224(%[vout])\n\t"
                     "vzeroupper\n\t"
                     :
                     : [vout] "r"(vec_out)
                     : "memory");
  else
    __asm__ volatile("movdqu %%xmm8, 0(%[vout])\n\t"
                     "movdqu %%xmm9, 32(%[vout])\n\t"
                     "movdqu %%xmm10, 64(%[vout])\n\t"
                     "movdqu %%xmm11, 96(%[vout])\n\t"
                     "movdqu %%xmm12, 128(%[vout])\n\t"
                     "movdqu %%xmm13, 160(%[vout])\n\t"
                     "movdqu %%xmm14, 192(%[vout])\n\t"
                     "movdqu %%xmm15, 224(%[vout])\n\t"
                     :
                     : [vout] "r"(vec_out)
                     : "memory");
  __asm__ volatile("fnstcw %[fcw]\n\t"
                   "stmxcsr %[mx]\n\t"
                   : [fcw] "=m"(fcw_out), [mx] "=m"(mxcsr_out));

  static const uint64_t gp_want[4] = { 0x1122334455667788ULL, 0x99aabbccddeeff00ULL,
                                       0x0123456789abcdefULL, 0xfedcba9876543210ULL };
  static const char *gp_names[4] = { "rbx", "r12", "r13", "r14" };
  for (int i = 0; i < 4; i++)
    if (gp_out[i] != gp_want[i])
      zdtm_fail("%s: expected 0x%016llx, got 0x%016llx", gp_names[i],
                (unsigned long long)gp_want[i], (unsigned long long)gp_out[i]);
  for (int r = 0; r < 8; r++)
    {
      int len = avx ? 32 : 16;
      for (int b = 0; b < len; b++)
        if (vec_out[r][b] != vec_in[r][b])
          {
            zdtm_fail("%smm%d byte %d: expected 0x%02x, got 0x%02x", avx ? "y" : "x", r + 8, b,
                      vec_in[r][b], vec_out[r][b]);
            break;
          }
    }
  if (fcw_out != fcw_in)
    zdtm_fail("x87 control word: expected 0x%04x, got 0x%04x", fcw_in, fcw_out);
  if ((mxcsr_out & ~0x3f) != mxcsr_in)
    zdtm_fail("MXCSR: expected 0x%04x, got 0x%04x", mxcsr_in, mxcsr_out & ~0x3fu);
  if (tls_marker != 0x7e57ab1e)
    zdtm_fail("TLS through fs base: expected 0x7e57ab1e, got 0x%llx",
              (unsigned long long)tls_marker);
  if (!avx)
    zdtm_note("no AVX on this CPU: only the xmm halves were checked");
  zdtm_finish();
}
