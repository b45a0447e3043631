/* zdtm-amx: the permission to use AMX survives (x86 CPUs with AMX only).
 * The process asks the kernel for AMX's tile data (arch_prctl
 * ARCH_REQ_XCOMP_PERM, a process-wide permission a new process lacks),
 * uses the tiles once and lets them go (TILERELEASE), then waits. On
 * SIGTERM it checks the permission is still there (ARCH_GET_XCOMP_PERM)
 * and uses the tiles again: a tile filled with a pattern, stored and read
 * back. Without the permission the kernel ends the process at its first
 * AMX instruction (SIGILL), which a handler turns into a FAIL line.
 *
 * ZDTM_AMX_HOLD=1: the tiles stay loaded while it waits (their data in
 * use), which a checkpoint must refuse; on SIGTERM it checks the tile
 * still holds its pattern.
 *
 * Exits 2 (ERROR) where the CPU or the kernel has no AMX: the harness
 * checks the CPU first. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <cpuid.h>
#include <immintrin.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ARCH_GET_XCOMP_PERM 0x1022
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XTILEDATA 18

struct tilecfg
{
  uint8_t palette, start;
  uint8_t rsvd[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} __attribute__((aligned(64)));

static struct tilecfg cfg;
static uint8_t in[16][64] __attribute__((aligned(64)));
static uint8_t out[16][64] __attribute__((aligned(64)));

static void
on_sigill(int sig)
{
  (void)sig;
  static const char m[] = "FAIL: SIGILL at an AMX instruction: the permission was lost\n";
  if (write(2, m, sizeof m - 1) < 0)
    _exit(1);
  _exit(1);
}

__attribute__((target("amx-tile"))) static void
tiles_load(void)
{
  _tile_loadconfig(&cfg);
  _tile_loadd(0, in, 64);
}

__attribute__((target("amx-tile"))) static void
tiles_store_release(void)
{
  _tile_stored(0, out, 64);
  _tile_release();
}

static uint64_t
perm(void)
{
  uint64_t p = 0;
  if (syscall(SYS_arch_prctl, ARCH_GET_XCOMP_PERM, &p) != 0)
    zdtm_fail("ARCH_GET_XCOMP_PERM failed");
  return p;
}

static void
check_tile(const char *when)
{
  for (int r = 0; r < 16; r++)
    for (int b = 0; b < 64; b++)
      if (out[r][b] != in[r][b])
        {
          zdtm_fail("%s: tile row %d byte %d: expected 0x%02x, got 0x%02x", when, r, b, in[r][b],
                    out[r][b]);
          return;
        }
}

int
main(int argc, char **argv)
{
  unsigned a, b, c, d;
  bool hold = getenv("ZDTM_AMX_HOLD") && strcmp(getenv("ZDTM_AMX_HOLD"), "1") == 0;

  zdtm_init(argc, argv);
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 24)))
    zdtm_error("this CPU has no AMX (CPUID 7: AMX-TILE)");
  if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XTILEDATA) != 0)
    zdtm_error("the kernel refused AMX's tile data (ARCH_REQ_XCOMP_PERM)");
  signal(SIGILL, on_sigill);
  cfg.palette = 1;
  for (int i = 0; i < 8; i++)
    cfg.colsb[i] = 64, cfg.rows[i] = 16;
  for (int r = 0; r < 16; r++)
    for (int k = 0; k < 64; k++)
      in[r][k] = (uint8_t)zdtm_pattern(77, (uint64_t)r * 64 + k);
  tiles_load();
  if (!hold)
    {
      tiles_store_release();
      check_tile("before");
    }
  zdtm_ready();
  zdtm_wait();
  if (!(perm() >> XTILEDATA & 1))
    zdtm_fail("no permission for AMX's tile data after restore (ARCH_GET_XCOMP_PERM 0x%llx)",
              (unsigned long long)perm());
  memset(out, 0, sizeof out);
  if (!hold)
    tiles_load();
  tiles_store_release();
  check_tile(hold ? "held across" : "after");
  zdtm_finish();
}
