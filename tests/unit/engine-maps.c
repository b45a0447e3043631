/* crest: unit tests of the reading of a /proc/PID/maps line (maps_line,
 * mem.c, TAP): lines as the kernel prints them, lines it does not, and
 * every line of this process's own maps read alike by maps_line and by
 * sscanf, the way it was read before; and which of its own mappings
 * vmflags_check (vmflags.c) records as never charged (VMF_NOACCOUNT) or
 * as shared mappings of a file open for writing (VMF_SHAREDWRITE). */
#include <config.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "dump-int.h"
#include "elfid.h"
#include "restore-int.h"
#include "tap.h"

struct mcase
{
  const char *line;
  bool ok;
  uint64_t start, end, off, ino;
  const char *perms;
  unsigned maj, min;
  const char *name;
};

static const struct mcase cases[] = {
  { "7f3312b5e000-7f3312b6b000 rw-p 00000000 00:00 0", true, 0x7f3312b5e000, 0x7f3312b6b000, 0, 0,
    "rw-p", 0, 0, "" },
  { "55c5498c1000-55c549ab5000 rw-p 00000000 00:00 0                          [heap]", true,
    0x55c5498c1000, 0x55c549ab5000, 0, 0, "rw-p", 0, 0, "[heap]" },
  { "7f3312b58000-7f3312b5c000 r--p 001cf000 fe:00 332835                     "
    "/usr/lib/x86_64-linux-gnu/libc.so.6",
    true, 0x7f3312b58000, 0x7f3312b5c000, 0x1cf000, 332835, "r--p", 0xfe, 0,
    "/usr/lib/x86_64-linux-gnu/libc.so.6" },
  { "7f0000000000-7f0000001000 rw-s 00000000 00:01 1234 /memfd:a b (deleted)", true, 0x7f0000000000,
    0x7f0000001000, 0, 1234, "rw-s", 0, 1, "/memfd:a b (deleted)" },
  { "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]", true,
    0xffffffffff600000, 0xffffffffff601000, 0, 0, "--xp", 0, 0, "[vsyscall]" },
  { "1000-2000 rw-p 00000000 103:02 18446744073709551615 /x", true, 0x1000, 0x2000, 0, UINT64_MAX,
    "rw-p", 0x103, 2, "/x" },
  { "", false, 0, 0, 0, 0, NULL, 0, 0, NULL },
  { "Rss:                   4 kB", false, 0, 0, 0, 0, NULL, 0, 0, NULL },
  { "7f00-7f10", false, 0, 0, 0, 0, NULL, 0, 0, NULL },
  { "7f00-7f10 rw-p", false, 0, 0, 0, 0, NULL, 0, 0, NULL },
  { "7f00-7f10 rw-p 0 00:00", false, 0, 0, 0, 0, NULL, 0, 0, NULL },
  { "7f00-7f10 rw 00000000 00:00 0", false, 0, 0, 0, 0, NULL, 0, 0, NULL },
  { "7f00-7f10 rw-p 00000000 0000 0", false, 0, 0, 0, 0, NULL, 0, 0, NULL },
  { "7f00-7f10 rw-p 00000000 00:00 x", false, 0, 0, 0, 0, NULL, 0, 0, NULL },
  { "7f00-7f10 rw-p 00000000 00:00 12x /y", false, 0, 0, 0, 0, NULL, 0, 0, NULL },
  { " 7f00-7f10 rw-p 00000000 00:00 0", false, 0, 0, 0, 0, NULL, 0, 0, NULL },
};

static void
own_maps(void)
{
  FILE *f = fopen("/proc/self/maps", "re");
  char line[4096];
  int n = 0, same = 0;
  if (!f)
    {
      tap_ok(0, "open /proc/self/maps");
      return;
    }
  while (fgets(line, sizeof line, f))
    {
      struct maps_line m;
      unsigned long s, e, off, ino;
      unsigned maj, min;
      char perms[8];
      int pos = 0;
      line[strcspn(line, "\n")] = 0;
      n++;
      if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu %n", &s, &e, perms, &off, &maj, &min, &ino, &pos)
              < 7
          || !maps_line(line, &m))
        continue;
      same += m.start == s && m.end == e && strcmp(m.perms, perms) == 0 && m.off == off
              && m.maj == maj && m.min == min && m.ino == ino
              && strcmp(m.name, pos ? line + pos : "") == 0;
    }
  fclose(f);
  tap_ok(n > 5 && same == n, "every line of this process's maps (%d) read as sscanf reads it (%d)",
         n, same);
}

/* vmflags_check's VMF_NOACCOUNT on this process's own mappings: a private
   mapping never writable has it; one written (then made read-only), one
   with MAP_NORESERVE, a shared one and a shared mapping of a file open
   read-only ("ms" without "sh") have not. */
static void
own_accounting(void)
{
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  char path[] = "/tmp/crest-engine-maps.XXXXXX";
  int fd = mkstemp(path), rfd;
  struct
  {
    const char *what;
    void *at;
    bool want;
  } m[6] = {
    { "private, read-only from the start", NULL, true },
    { "private, written then read-only", NULL, false },
    { "private, writable, MAP_NORESERVE", NULL, false },
    { "shared anonymous, read-only", NULL, false },
    { "shared file open read-only, read-only", NULL, false },
    { "shared file open for writing, read-only", NULL, false },
  };
  struct vmflags_ent *v = NULL;
  size_t nv = 0;
  crest_error_t err = NULL;

  m[0].at = mmap(NULL, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  m[1].at = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m[1].at != MAP_FAILED)
    memset(m[1].at, 1, page), mprotect(m[1].at, page, PROT_READ);
  m[2].at = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  m[3].at = mmap(NULL, page, PROT_READ, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (fd >= 0 && ftruncate(fd, (off_t)page) == 0 && (rfd = open(path, O_RDONLY)) >= 0)
    {
      m[4].at = mmap(NULL, page, PROT_READ, MAP_SHARED, rfd, 0);
      close(rfd);
      m[5].at = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
    }
  if (vmflags_load(getpid(), &v, &nv, &err) < 0)
    {
      tap_ok(0, "vmflags_load of this process");
      crest_error_release(&err);
      return;
    }
  for (size_t i = 0; i < 6; i++)
    {
      uint32_t bits = 0;
      const char *kind = i == 3 ? "memfile" : i >= 4 ? "file" : "anon";
      int rc = m[i].at && m[i].at != MAP_FAILED
                   ? vmflags_check(v, nv, getpid(), (uint64_t)(uintptr_t)m[i].at,
                                   (uint64_t)(uintptr_t)m[i].at + page, kind, &bits, &err)
                   : -1;
      tap_ok(rc == 0 && ((bits & VMF_NOACCOUNT) != 0) == m[i].want, "VMF_NOACCOUNT %s: %s",
             m[i].want ? "set" : "not set", m[i].what);
      if (i >= 4)
        tap_ok(rc == 0 && ((bits & VMF_SHAREDWRITE) != 0) == (i == 5), "VMF_SHAREDWRITE %s: %s",
               i == 5 ? "set" : "not set", m[i].what);
      crest_error_release(&err);
    }
  free(v);
  if (fd >= 0)
    close(fd), unlink(path);
}

/* mem_heap_by_brk: which heaps the restore makes with brk(). */
static void
heap_by_brk(void)
{
  static const struct
  {
    const char *what;
    uint64_t start_brk, brk;
    struct rvma v[3];
    size_t nv;
    bool ok;
    size_t first, end;
  } heaps[] = {
    { "bss then the heap from start_brk to brk's page",
      0x512000,
      0x533123,
      { { .start = 0x4ca000, .end = 0x512000, .kind = "anon" },
        { .start = 0x512000, .end = 0x534000, .kind = "heap" } },
      2,
      true,
      1,
      2 },
    { "a bss the kernel calls [heap] too (6.1), then the heap",
      0x4b8000,
      0x4d9123,
      { { .start = 0x4ad000, .end = 0x4b8000, .kind = "heap" },
        { .start = 0x4b8000, .end = 0x4da000, .kind = "heap" } },
      2,
      true,
      1,
      2 },
    { "a heap split in two by mprotect",
      0x512000,
      0x534000,
      { { .start = 0x512000, .end = 0x520000, .kind = "heap", .prot = PROT_READ },
        { .start = 0x520000, .end = 0x534000, .kind = "heap" } },
      2,
      true,
      0,
      2 },
    { "a heap not at start_brk",
      0x510000,
      0x534000,
      { { .start = 0x512000, .end = 0x534000, .kind = "heap" } },
      1,
      false,
      0,
      0 },
    { "a heap past brk's page (brk() to its end, the break set after)",
      0x512000,
      0x520000,
      { { .start = 0x512000, .end = 0x534000, .kind = "heap" } },
      1,
      true,
      0,
      1 },
    { "a heap with a hole: brk() makes the part below it",
      0x512000,
      0x534000,
      { { .start = 0x512000, .end = 0x520000, .kind = "heap" },
        { .start = 0x521000, .end = 0x534000, .kind = "heap" } },
      2,
      true,
      0,
      1 },
    { "two heap mappings the kernel kept apart: brk() makes the first",
      0x512000,
      0x534000,
      { { .start = 0x512000, .end = 0x520000, .kind = "heap", .prot = 3 },
        { .start = 0x520000, .end = 0x534000, .kind = "heap", .prot = 3 } },
      2,
      true,
      0,
      1 },
    { "a MAP_NORESERVE heap",
      0x512000,
      0x534000,
      { { .start = 0x512000, .end = 0x534000, .kind = "heap", .madv = VMF_NORESERVE } },
      1,
      false,
      0,
      0 },
    { "an empty heap (brk at start_brk)",
      0x512000,
      0x512000,
      { { .start = 0x4ca000, .end = 0x512000, .kind = "anon" } },
      1,
      false,
      0,
      0 },
  };
  for (size_t k = 0; k < sizeof heaps / sizeof heaps[0]; k++)
    {
      struct rproc p;
      struct rvma v[3];
      size_t f = 99, e = 99;
      memset(&p, 0, sizeof p);
      memcpy(v, heaps[k].v, sizeof v);
      p.vmas = v, p.nvmas = heaps[k].nv;
      p.mm.start_brk = heaps[k].start_brk, p.mm.brk = heaps[k].brk;
      bool ok = mem_heap_by_brk(&p, &f, &e);
      tap_ok(ok == heaps[k].ok && (!ok || (f == heaps[k].first && e == heaps[k].end)),
             "heap by brk: %s: %s", heaps[k].what, ok ? "yes" : "no");
    }
}

/* mem_keep_apart: which mappings are made aside and moved into place. */
static void
keep_apart(void)
{
  struct rvma v[5] = {
    { .start = 0x10000, .end = 0x20000, .kind = "anon", .prot = 3 },
    { .start = 0x20000, .end = 0x30000, .kind = "anon", .prot = 3 },
    { .start = 0x30000, .end = 0x40000, .kind = "anon", .prot = 1 },
    { .start = 0x41000, .end = 0x50000, .kind = "anon", .prot = 1 },
    { .start = 0x50000, .end = 0x60000, .kind = "anon", .prot = 1, .madv = VMF_NORESERVE },
  };
  struct rproc p;
  memset(&p, 0, sizeof p);
  p.vmas = v, p.nvmas = 5;
  tap_ok(!mem_keep_apart(&p, 0), "keep apart: the first mapping has nothing below it");
  tap_ok(mem_keep_apart(&p, 1), "keep apart: side by side, same protections and flags");
  tap_ok(!mem_keep_apart(&p, 2), "keep apart: other protections (the kernel keeps them apart)");
  tap_ok(!mem_keep_apart(&p, 3), "keep apart: a gap below");
  tap_ok(!mem_keep_apart(&p, 4), "keep apart: other flags (MAP_NORESERVE)");
  v[1].shared = true;
  tap_ok(!mem_keep_apart(&p, 1), "keep apart: a shared mapping (a memory object of its own)");
}

/* vmflags_check on smaps text as a CPU with protection keys shows it
   (none of this project's hosts has one): a mapping with a key other than
   0 refused, naming the key; key 0 (every mapping's) passes. */
static void
pkeys(void)
{
  char text[] = "7f0000000000-7f0000001000 rw-p 00000000 00:00 0 \n"
                "Rss:                   4 kB\n"
                "ProtectionKey:         0\n"
                "VmFlags: rd wr mr mw me ac \n"
                "7f0000001000-7f0000002000 rw-p 00000000 00:00 0 \n"
                "Rss:                   4 kB\n"
                "ProtectionKey:         3\n"
                "VmFlags: rd wr mr mw me ac \n";
  struct vmflags_ent *v = NULL;
  size_t nv = 0;
  uint32_t bits = 0;
  crest_error_t err = NULL;
  int rc;
  vmflags_parse(text, &v, &nv);
  rc = vmflags_check(v, nv, 42, 0x7f0000000000, 0x7f0000001000, "anon", &bits, &err);
  tap_ok(nv == 2 && rc == 0, "protection key 0: passes (%s)", err ? err->msg : "");
  crest_error_release(&err);
  rc = vmflags_check(v, nv, 42, 0x7f0000001000, 0x7f0000002000, "anon", &bits, &err);
  tap_ok(rc < 0 && err && strstr(err->msg, "memory protection key 3"),
         "protection key 3: refused (%s)", err ? err->msg : "passed");
  crest_error_release(&err);
  free(v);
}

/* elf_build_id: this test program's own build ID, as readelf shows it
   (the linker gives one by default); a file that is not ELF has none. */
static void
build_ids(void)
{
  char id[129], want[129] = "", line[512];
  int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC), r;
  FILE *re;
  /* readelf's /proc/self/exe would be its own: it is given this
     program's path. */
  {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    char cmd[4200];
    self[n > 0 ? n : 0] = 0;
    snprintf(cmd, sizeof cmd, "readelf -n '%s' 2>/dev/null", self);
    re = popen(cmd, "r");
  }
  while (re && fgets(line, sizeof line, re))
    {
      char *b = strstr(line, "Build ID: ");
      if (b)
        snprintf(want, sizeof want, "%.128s", b + 10), want[strcspn(want, " \n")] = 0;
    }
  if (re)
    pclose(re);
  r = fd >= 0 ? elf_build_id(fd, id) : -1;
  if (!*want)
    tap_skip("elf_build_id of this program: readelf shows no build ID (binutils missing?)");
  else
    tap_ok(r == 1 && strcmp(id, want) == 0, "elf_build_id of this program: %s (readelf: %s)",
           r == 1 ? id : "none", want);
  if (fd >= 0)
    close(fd);
  fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  tap_ok(fd >= 0 && elf_build_id(fd, id) == 0 && id[0] == 0, "elf_build_id of a text file: none");
  if (fd >= 0)
    close(fd);
}

int
main(void)
{
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    {
      const struct mcase *c = &cases[i];
      struct maps_line m;
      bool ok = maps_line(c->line, &m);
      if (!c->ok)
        {
          tap_ok(!ok, "refused: \"%s\"", c->line);
          continue;
        }
      tap_ok(ok && m.start == c->start && m.end == c->end && m.off == c->off && m.ino == c->ino
                 && strcmp(m.perms, c->perms) == 0 && m.maj == c->maj && m.min == c->min
                 && strcmp(m.name, c->name) == 0,
             "read: \"%s\"", c->line);
    }
  own_maps();
  own_accounting();
  heap_by_brk();
  keep_apart();
  pkeys();
  build_ids();
  return tap_done();
}
