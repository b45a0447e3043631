/* crest: unit tests of the way home of an injected call (inject-home.c,
 * TAP): which syscall instructions of a vDSO are followed only by what
 * the way home allows, and the rt_sigreturn code of this process's own C
 * library. */
#include <config.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "dump-int.h"
#include "tap.h"

struct gcase
{
  const char *what;
  uint8_t code[24];
  size_t len;
  int64_t at; /* expected gadget offset, -1: none */
  int pops;
};

static const struct gcase cases[] = {
  { "syscall; ret (the 6.1 vDSO)", { 0x0f, 0x05, 0xc3 }, 3, 0, 0 },
  { "syscall; pop %rbp; ret", { 0x0f, 0x05, 0x5d, 0xc3 }, 4, 0, 1 },
  { "syscall; clears with and without REX; ret (newer vDSOs)",
    { 0x0f, 0x05, 0x31, 0xd2, 0x31, 0xc9, 0x31, 0xf6, 0x31, 0xff, 0x45, 0x31, 0xdb, 0xc3 },
    14,
    0,
    0 },
  { "syscall; pop %r14 (REX); pop %rbx; ret", { 0x0f, 0x05, 0x41, 0x5e, 0x5b, 0xc3 }, 6, 0, 2 },
  { "syscall; leave (not allowed), then a later syscall; ret",
    { 0x0f, 0x05, 0xc9, 0xc3, 0x90, 0x0f, 0x05, 0xc3 },
    8,
    5,
    0 },
  { "syscall; a memory operand xor (not a register clear); ret",
    { 0x0f, 0x05, 0x31, 0x10, 0xc3 },
    5,
    -1,
    0 },
  { "syscall; lea -0x10(%rbp),%rsp (moves the stack); pops; ret",
    { 0x0f, 0x05, 0x48, 0x8d, 0x65, 0xf0, 0x5b, 0xc3 },
    8,
    -1,
    0 },
  { "a syscall at the very end, nothing after it", { 0x90, 0x0f, 0x05 }, 3, -1, 0 },
  { "REX then ret is not a plain ret", { 0x0f, 0x05, 0x48, 0xc3 }, 4, -1, 0 },
};

int
main(void)
{
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    {
      const struct gcase *g = &cases[i];
      uint64_t gadget = 0;
      int pops = -1;
      int r = home_find_gadget(g->code, g->len, 0x1000, &gadget, &pops);
      if (g->at < 0)
        tap_ok(r < 0, "%s: no gadget", g->what);
      else
        tap_ok(r == 0 && gadget == 0x1000 + (uint64_t)g->at && pops == g->pops,
               "%s: gadget at +%lld with %d pops (got %d: +%lld, %d pops)", g->what,
               (long long)g->at, g->pops, r, (long long)(gadget - 0x1000), pops);
    }

  {
    struct vma *vv = NULL;
    size_t nv = 0;
    crest_error_t err = NULL;
    uint64_t at = 0;
    const uint8_t *b;
    int ok = parse_maps(getpid(), &vv, &nv, &err) == 0;
    if (ok)
      at = home_find_sigreturn(getpid(), vv, nv);
    b = (const uint8_t *)(uintptr_t)at;
    /* mov $15, %rax; syscall (glibc and musl) or mov $15, %eax; syscall */
    tap_ok(at
               && ((b[0] == 0x48 && b[1] == 0xc7 && b[2] == 0xc0 && b[3] == SYS_rt_sigreturn
                    && b[7] == 0x0f && b[8] == 0x05)
                   || (b[0] == 0xb8 && b[1] == SYS_rt_sigreturn && b[5] == 0x0f && b[6] == 0x05)),
           "this process's C library has rt_sigreturn code, found at %#llx",
           (unsigned long long)at);
    for (size_t i = 0; i < nv; i++)
      free(vv[i].path);
    free(vv);
    crest_error_release(&err);
  }
  return tap_done();
}
