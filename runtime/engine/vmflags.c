/* crest: a mapping's flags as smaps VmFlags shows them (docs/engine.md,
 * "Memory mappings"). What madvise() set is recorded as a bit mask and put
 * back by the restorer blob after the mapping exists; what crest cannot put
 * back is refused at checkpoint, naming the mapping and the flag. */
#include <config.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "engine-int.h"
#include "image.h"
#include "util.h"

struct vmflags_ent
{
  uint64_t start;
  char flags[128]; /* the VmFlags line, each entry followed by a space */
  bool anon_name;  /* maps shows [anon:NAME] (PR_SET_VMA_ANON_NAME) */
  int zeros;       /* of its Rss and Swap lines, how many say 0 kB */
  long swap_kb;    /* its Swap line (-1: none) */
  int pkey;        /* its ProtectionKey line (0: none, or the default key) */
};

/* Flags restored, with the advice that sets each (0: a mapping flag). */
static const struct
{
  char tok[3];
  uint32_t bit;
  int advice;
} restored[] = {
  { "dc", VMF_DONTFORK, MADV_DONTFORK },
  { "wf", VMF_WIPEONFORK, MADV_WIPEONFORK },
  { "dd", VMF_DONTDUMP, MADV_DONTDUMP },
  { "hg", VMF_HUGEPAGE, MADV_HUGEPAGE },
  { "nh", VMF_NOHUGEPAGE, MADV_NOHUGEPAGE },
  { "sr", VMF_SEQUENTIAL, MADV_SEQUENTIAL },
  { "rr", VMF_RANDOM, MADV_RANDOM },
  { "mg", VMF_MERGEABLE, MADV_MERGEABLE },
  { "nr", VMF_NORESERVE, 0 },
  { "lo", VMF_LOCKED, 0 },
  { "lf", VMF_LOCKONFAULT, 0 },
};

/* Flags that follow from what the image already records (protections,
   sharing, the stack, the kind of mapping) or that only track state
   (soft-dirty), or belong to other architectures. "ac" (charged to the
   commit accounting) follows from the protections of every mapping but a
   private one that was never writable, which lacks it: that one records
   VMF_NOACCOUNT (vmflags_check). */
static const char *derived[]
    = { "rd", "wr", "ex", "sh", "mr", "mw", "me", "ms", "dw", "ac", "sd", "bt", "mt", "ar" };

/* Flags refused, with the reason. */
static const struct
{
  char tok[3];
  const char *what;
} refused[] = {
  { "gu", "a guard region (MADV_GUARD_INSTALL)" },
  { "ht", "hugetlb memory" },
  { "sf", "a DAX synchronous-fault mapping" },
  { "um", "registered with userfaultfd" },
  { "uw", "registered with userfaultfd" },
  { "ui", "registered with userfaultfd" },
  { "ss", "a shadow stack" },
  { "sl", "sealed (mseal)" },
  { "pf", "a PFN mapping of a device" },
  { "io", "a mapping of device I/O memory" },
  { "mm", "a mixed device mapping" },
  { "de", "a mapping that may not be expanded (a special mapping)" },
  { "gd", "a growsdown mapping other than the stack" },
};

/* A mapping's first line in smaps ("START-END ..."): its start in *START.
   False for the other lines ("Rss:  4 kB", "VmFlags: rd wr"): read by hand,
   as smaps has about 25 lines a mapping (sscanf on each was the most of
   the checkpoint's own time parsing /proc). */
static bool
smaps_head(const char *line, uint64_t *start)
{
  char *end;
  uint64_t s;
  if (!isxdigit((unsigned char)line[0]))
    return false;
  s = strtoull(line, &end, 16);
  if (*end != '-' || !isxdigit((unsigned char)end[1]))
    return false;
  (void)strtoull(end + 1, &end, 16);
  if (*end != ' ')
    return false;
  *start = s;
  return true;
}

int
vmflags_load(pid_t pid, struct vmflags_ent **out, size_t *n, crest_error_t *err)
{
  cleanup_free char *path = xasprintf("/proc/%d/smaps", pid);
  cleanup_free char *t = NULL;
  size_t len;
  *out = NULL, *n = 0;
  if (read_file(path, &t, &len, 0, err) < 0)
    return -1;
  vmflags_parse(t, out, n);
  return 0;
}

void
vmflags_parse(char *t, struct vmflags_ent **out, size_t *n)
{
  char *line, *save = NULL;
  *out = NULL, *n = 0;
  for (line = strtok_r(t, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
    {
      uint64_t s;
      if (smaps_head(line, &s))
        {
          *out = xrealloc(*out, (*n + 1) * sizeof **out);
          (*out)[*n].start = s;
          (*out)[*n].flags[0] = 0;
          (*out)[*n].anon_name = strstr(line, " [anon:") != NULL;
          (*out)[*n].zeros = 0;
          (*out)[*n].swap_kb = -1;
          (*out)[*n].pkey = 0;
          (*n)++;
        }
      else if (*n && (strncmp(line, "Rss:", 4) == 0 || strncmp(line, "Swap:", 5) == 0))
        {
          const char *kb = line + strcspn(line, "0123456789");
          if (kb[0] == '0' && kb[1] == ' ')
            (*out)[*n - 1].zeros++;
          if (line[0] == 'S')
            (*out)[*n - 1].swap_kb = strtol(kb, NULL, 10);
        }
      else if (*n && strncmp(line, "ProtectionKey:", 14) == 0)
        (*out)[*n - 1].pkey = atoi(line + 14);
      else if (*n && strncmp(line, "VmFlags:", 8) == 0)
        snprintf((*out)[*n - 1].flags, sizeof(*out)[*n - 1].flags, "%s ", line + 8);
    }
}

/* The first entry of V (N, in address order as smaps lists mappings)
   that starts above ADDR, by binary search: a process may have tens of
   thousands of mappings, each looked up (a linear search made a checkpoint
   of 20,000 quadratic). */
static size_t
above(const struct vmflags_ent *v, size_t n, uint64_t addr)
{
  size_t lo = 0, hi = n;
  while (lo < hi)
    {
      size_t mid = lo + (hi - lo) / 2;
      if (v[mid].start <= addr)
        lo = mid + 1;
      else
        hi = mid;
    }
  return lo;
}

/* The entry of the mapping at START, or NULL. */
static const struct vmflags_ent *
vf_at(const struct vmflags_ent *v, size_t n, uint64_t start)
{
  size_t i = above(v, n, start);
  return i && v[i - 1].start == start ? &v[i - 1] : NULL;
}

static bool
in_list(const char *tok, const char *const *list, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (strcmp(tok, list[i]) == 0)
      return true;
  return false;
}

/* The flags of the mapping at START (of kind KIND: vdso, vvar..., stack,
   anon, file...) to record, or a refusal. */
int
vmflags_check(const struct vmflags_ent *v, size_t n, pid_t pid, uint64_t start, uint64_t end,
              const char *kind, uint32_t *bits, crest_error_t *err)
{
  const struct vmflags_ent *e = vf_at(v, n, start);
  const char *f = e ? e->flags : NULL;
  char tok[8];
  /* "ac", or not a private mapping the kernel could charge: shared ("sh";
     "ms" alone for a shared mapping of a file open read-only) or
     MAP_NORESERVE ("nr"). */
  bool charged = false, sh = false, ms = false;
  *bits = 0;
  if (e && e->anon_name)
    return crest_error_make(err, ENOTSUP,
                            "task %d: mapping %" PRIx64 "-%" PRIx64 ": an anonymous mapping "
                            "with a name (PR_SET_VMA_ANON_NAME) is not restored yet: cannot "
                            "checkpoint it",
                            pid, start, end);
  /* A key of pkey_mprotect() (a CPU with PKU): VmFlags does not show it,
     and neither the key nor its allocation (pkey_alloc) is put back. */
  if (e && e->pkey != 0)
    return crest_error_make(err, ENOTSUP,
                            "task %d: mapping %" PRIx64 "-%" PRIx64 ": memory protection key %d "
                            "(pkey_mprotect) is not restored: cannot checkpoint it",
                            pid, start, end, e->pkey);
  /* The vDSO and vvar are the kernel's own: mapped again by the kernel. */
  if (!f || strcmp(kind, "vdso") == 0 || strncmp(kind, "vvar", 4) == 0)
    return 0;
  for (size_t len; *(f += strspn(f, " \t")); f += len)
    {
      len = strcspn(f, " \t");
      memcpy(tok, f, len < sizeof tok ? len : sizeof tok - 1);
      tok[len < sizeof tok ? len : sizeof tok - 1] = 0;
      bool known = in_list(tok, derived, sizeof derived / sizeof derived[0]);
      sh |= strcmp(tok, "sh") == 0;
      ms |= strcmp(tok, "ms") == 0;
      charged |= strcmp(tok, "ac") == 0 || strcmp(tok, "sh") == 0 || strcmp(tok, "ms") == 0
                 || strcmp(tok, "nr") == 0;
      for (size_t k = 0; !known && k < sizeof restored / sizeof restored[0]; k++)
        if (strcmp(tok, restored[k].tok) == 0)
          *bits |= restored[k].bit, known = true;
      if (known || (strcmp(tok, "gd") == 0 && strcmp(kind, "stack") == 0))
        continue;
      for (size_t k = 0; k < sizeof refused / sizeof refused[0]; k++)
        if (strcmp(tok, refused[k].tok) == 0)
          return crest_error_make(err, ENOTSUP,
                                  "task %d: mapping %" PRIx64 "-%" PRIx64 ": %s (VmFlags %s) is "
                                  "not restored: cannot checkpoint it",
                                  pid, start, end, refused[k].what, tok);
      return crest_error_make(err, ENOTSUP,
                              "task %d: mapping %" PRIx64 "-%" PRIx64 ": VmFlags '%s' is unknown "
                              "to crest: cannot checkpoint it",
                              pid, start, end, tok);
    }
  if (!charged)
    *bits |= VMF_NOACCOUNT;
  /* A shared mapping of a file shows "sh" only if the file was open for
     writing (else the kernel clears it and "mw"): an mprotect may make it
     writable, whatever its protections now. */
  if (sh && strcmp(kind, "file") == 0)
    *bits |= VMF_SHAREDWRITE;
  /* One of a memory object without "sh" was made through a descriptor
     not open for writing, and may never be made writable. */
  if (ms && !sh && strcmp(kind, "memfile") == 0)
    *bits |= VMF_SHAREDRO;
  return 0;
}

/* Does the mapping of V (N entries, by start) that holds ADDR have LOCK
   ("lo" or "lf") among its flags? */
bool
vmflags_at_has(const struct vmflags_ent *v, size_t n, uint64_t addr, const char *lock)
{
  size_t i = above(v, n, addr);
  const struct vmflags_ent *at = i ? &v[i - 1] : NULL;
  char tok[8];
  snprintf(tok, sizeof tok, " %s ", lock); /* the line keeps its leading space */
  return at && strstr(at->flags, tok) != NULL;
}

/* Does the mapping of V (N entries) at START hold no page, present or
   swapped? */
bool
vmflags_no_pages(const struct vmflags_ent *v, size_t n, uint64_t start)
{
  const struct vmflags_ent *e = vf_at(v, n, start);
  /* hugetlb pages are not in Rss */
  return e && e->zeros == 2 && !strstr(e->flags, " ht ");
}

long
vmflags_swap_kb(const struct vmflags_ent *v, size_t n, uint64_t start)
{
  const struct vmflags_ent *e = vf_at(v, n, start);
  return e ? e->swap_kb : -1;
}

int
vmflags_advice(uint32_t bit)
{
  for (size_t k = 0; k < sizeof restored / sizeof restored[0]; k++)
    if (restored[k].bit == bit)
      return restored[k].advice;
  return 0;
}

/* Check the mapping (vmflags_check) and write its "madv" when it has
   advice: -1 refused, 1 written, 2 written with a lock (format 9), 3
   written with VMF_NOACCOUNT or VMF_SHAREDWRITE (format 13), 4 written with
   VMF_SHAREDRO (format 22), 0 nothing to write. */
int
vmflags_put(yajl_gen g, const struct vmflags_ent *v, size_t n, pid_t pid, uint64_t start,
            uint64_t end, const char *kind, crest_error_t *err)
{
  uint32_t bits;
  if (vmflags_check(v, n, pid, start, end, kind, &bits, err) < 0)
    return -1;
  if (!bits)
    return 0;
  jput_int(g, "madv", bits);
  return bits & VMF_SHAREDRO                        ? 4
         : bits & (VMF_NOACCOUNT | VMF_SHAREDWRITE) ? 3
         : bits & VMF_LOCKS                         ? 2
                                                    : 1;
}
