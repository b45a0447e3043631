/* crest: libFuzzer target over the image reader and the restore plan built
 * from it (crest_engine_plan: everything restore does before its first
 * change to the system). `make fuzz FUZZ_SECONDS=N` builds it with
 * -fsanitize=fuzzer,address,undefined and runs it on the seed corpus.
 *
 * An input is a small archive of image files:
 *
 *   byte 0       options: bit 0 format 2, bit 4 format 3, bit 5 format 10
 *                with the page files' digests xxh3_128, bit 6 format 11
 *                (the same, and zero runs in xstate), bit 7 format 12
 *                (the same, and a process's xcomp_perm) (else 1), bit 1
 *                container mode (the configuration's bound), bit 2 the
 *                configuration grants CAP_CHECKPOINT_RESTORE, bit 3 restore
 *                as a namespace init
 *   then records name_len (1 byte), name, size (4 bytes, little endian),
 *                content_len (4 bytes), content: a file of SIZE bytes
 *                that starts with CONTENT, zeros after (never made: the
 *                reader only parses JSON files, and refuses zeros in
 *                them before any copy).
 *
 * A record named manifest.json is the image's manifest as it is: its
 * format is then the one it names (13 and later have no bit of byte 0),
 * its files those it lists.
 *
 * The image stays in memory (img_reader_open_mem): no file, no descriptor,
 * no checksum, so that one input costs what its parsing costs. The
 * harness writes the manifest itself, listing every record with its size,
 * unless a record is named manifest.json. A record whose name is not a
 * plain file name is listed in the manifest but not given to the reader
 * (the reader must refuse the name, or find the file missing).
 * tools/fuzz-seeds packs real images into this form. */
#include <config.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine.h"
#include "engine-int.h"
#include "error.h"
#include "image.h"

#define MAX_FILES 64

int
LLVMFuzzerInitialize(int *argc, char ***argv);
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* AddressSanitizer keeps freed memory aside 16 MiB deep, not 256: one
   input allocates far less, so a use after free within it is still
   caught, and the fuzzer stays at about 80 MiB instead of 450 (and
   faults fewer fresh pages in). ASAN_OPTIONS overrides it. */
const char *
__asan_default_options(void);
const char *
__asan_default_options(void)
{
  return "quarantine_size_mb=16";
}

/* FUZZ_VERBOSE=1: each input's verdict on stderr (the plan's error, or
   "plan: ok"), to see how far a seed gets: a seed the plan refuses only
   exercises the checks before its refusal. */
static bool verbose;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
  (void)argc, (void)argv;
  verbose = getenv("FUZZ_VERBOSE") && strcmp(getenv("FUZZ_VERBOSE"), "1") == 0;
  return 0;
}

/* The image writer's, ptrace.c's and sk-inet.c's hooks into the
   checkpoint's worker (dump-guard.c): the fuzzer only reads images, so
   they never fire here. */
int
dump_fault(const char *point, crest_error_t *err)
{
  (void)point;
  (void)err;
  return 0;
}
int
dump_interrupted(crest_error_t *err)
{
  (void)err;
  return 0;
}
void
dump_fault_target(pid_t tid)
{
  (void)tid;
}
void
dump_guard_hold(int fd, bool reuse)
{
  (void)fd, (void)reuse;
}

static bool
plain_name(const char *n)
{
  if (!*n || *n == '.' || strlen(n) > 64)
    return false;
  for (; *n; n++)
    if (!((*n >= 'a' && *n <= 'z') || (*n >= 'A' && *n <= 'Z') || (*n >= '0' && *n <= '9')
          || *n == '.' || *n == '-' || *n == '_'))
      return false;
  return true;
}

static uint32_t
le32(const uint8_t *p)
{
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Room for the manifest the harness writes: MAX_FILES entries of a name of
   at most 255 bytes and 120 more. */
static char manifest[MAX_FILES * 400 + 512];

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static char names[MAX_FILES][256];
  static struct img_mem_file files[MAX_FILES];
  struct crest_restore_opts o;
  struct img_reader *r = NULL;
  crest_error_t err = NULL;
  const char *mtext = manifest;
  size_t mlen, at = 1, nfiles = 0, nmem = 0;
  int fmt;

  if (size < 1)
    return 0;
  fmt = data[0] & 128  ? 12
        : data[0] & 64 ? 11
        : data[0] & 32 ? 10
        : data[0] & 16 ? 3
        : data[0] & 1  ? 2
                       : 1;
  mlen = (size_t)snprintf(manifest, sizeof manifest,
                          "{\"format\": %d, \"crest_version\": \"fuzz\", \"kernel\": "
                          "{\"release\": \"x\", \"machine\": \"x\", \"vdso_sha256\": \"x\"}, "
                          "\"config_digest\": null, \"files\": [",
                          fmt);
  while (at < size && nfiles < MAX_FILES && nmem < MAX_FILES)
    {
      char *name = names[nmem];
      size_t nlen = data[at++], clen;
      uint32_t fsize;
      if (at + nlen + 8 > size)
        break;
      memcpy(name, data + at, nlen);
      name[nlen] = 0;
      at += nlen;
      fsize = le32(data + at);
      clen = le32(data + at + 4);
      at += 8;
      if (clen > size - at)
        clen = size - at;
      if (strlen(name) != nlen || strchr(name, '"') || strchr(name, '\\'))
        {
          at += clen;
          continue;
        }
      if (plain_name(name) && strcmp(name, "manifest.json") != 0)
        files[nmem++] = (struct img_mem_file){ name, data + at, clen, fsize };
      if (strcmp(name, "manifest.json") == 0)
        {
          /* The input's own manifest: only what it says, as it says it. */
          mtext = (const char *)data + at;
          mlen = clen < fsize ? clen : fsize;
          at += clen;
          continue;
        }
      at += clen;
      /* Format 10: a page file's digest is an xxh3_128 (32 digits). */
      if (mtext == manifest && fmt >= 10 && strncmp(name, "pages-", 6) == 0)
        mlen += (size_t)snprintf(manifest + mlen, sizeof manifest - mlen,
                                 "%s{\"name\": \"%s\", \"size\": %u, \"xxh3_128\": "
                                 "\"%032d\"}",
                                 nfiles ? ", " : "", name, fsize, 0);
      else if (mtext == manifest)
        mlen += (size_t)snprintf(manifest + mlen, sizeof manifest - mlen,
                                 "%s{\"name\": \"%s\", \"size\": %u, \"sha256\": "
                                 "\"%064d\"}",
                                 nfiles ? ", " : "", name, fsize, 0);
      nfiles++;
    }
  if (mtext == manifest)
    mlen += (size_t)snprintf(manifest + mlen, sizeof manifest - mlen, "]}");

  memset(&o, 0, sizeof o);
  o.image_dir = "fuzz";
  o.caps_from_config = data[0] & 2;
  o.cr_granted = data[0] & 4;
  o.as_ns_init = data[0] & 8;
  o.stdio_fds[0] = o.stdio_fds[1] = o.stdio_fds[2] = -1;
  if (img_reader_open_mem("fuzz", mtext, mlen, files, nmem, &r, &err) == 0
      && crest_engine_plan(&o, r, &err) == 0 && verbose)
    fprintf(stderr, "plan: ok\n");
  if (err && verbose)
    crest_error_report(&err);
  crest_error_release(&err);
  return 0;
}
