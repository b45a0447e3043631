/* crest: libFuzzer target over the image reader and the restore plan built
 * from it (crest_engine_plan: everything restore does before its first
 * change to the system). `make fuzz FUZZ_SECONDS=N` builds it with
 * -fsanitize=fuzzer,address,undefined and runs it on the seed corpus.
 *
 * An input is a small archive of image files, so that mutations reach the
 * parsers instead of dying at the checksums:
 *
 *   byte 0       options: bit 0 format 2, bit 1 container mode (the
 *                configuration's bound), bit 2 the configuration grants
 *                CAP_CHECKPOINT_RESTORE, bit 3 restore as a namespace init
 *   then records name_len (1 byte), name, size (4 bytes, little endian),
 *                content_len (4 bytes), content: a file of SIZE bytes
 *                (at most 1 MiB) that starts with CONTENT, zeros after.
 *
 * The harness writes the manifest itself, with the right size and SHA-256
 * of every file, unless a record is named manifest.json. A record whose
 * name is not a plain file name is listed in the manifest but not written
 * (the reader must refuse the name). tools/fuzz-seeds packs real images
 * into this form. */
#include <config.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "engine.h"
#include "engine-int.h"
#include "error.h"
#include "sha256.h"

#define MAX_FILES 64
#define MAX_SIZE (1u << 20)

static char dir[256];

int
LLVMFuzzerInitialize(int *argc, char ***argv);
/* The image writer's hooks into the checkpoint's worker (dump-guard.c):
   the fuzzer only reads images, so they never fire here. */
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

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
  const char *tmp = getenv("TMPDIR");
  (void)argc, (void)argv;
  snprintf(dir, sizeof dir, "%s/crest-fuzz.XXXXXX",
           access("/dev/shm", W_OK) == 0 ? "/dev/shm"
           : tmp                         ? tmp
                                         : "/tmp");
  if (!mkdtemp(dir))
    {
      perror("mkdtemp");
      exit(1);
    }
  return 0;
}

static void
clear_dir(void)
{
  DIR *d = opendir(dir);
  struct dirent *e;
  if (!d)
    return;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.')
      unlinkat(dirfd(d), e->d_name, 0);
  closedir(d);
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

/* Digests of all-zero files by size: page files are packed by size alone,
   and hashing them anew for every input would halve the speed. */
static struct
{
  uint32_t size;
  char hex[65];
} zero_sha[64];

/* Write NAME: SIZE bytes, CONTENT first; its SHA-256 into HEX. */
static void
put_file(const char *name, uint32_t size, const uint8_t *content, size_t clen, char hex[65])
{
  static uint8_t zeros[4096];
  struct sha256 s;
  uint8_t d[32];
  char path[512];
  int fd = -1;
  size_t done;

  sha256_init(&s);
  if (plain_name(name))
    {
      snprintf(path, sizeof path, "%s/%s", dir, name);
      fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    }
  if (clen > size)
    clen = size;
  if (fd >= 0 && (write(fd, content, clen) != (ssize_t)clen || ftruncate(fd, size) < 0))
    size = 0;
  if (fd >= 0)
    close(fd);
  if (clen == 0)
    for (size_t i = 0; i < sizeof zero_sha / sizeof zero_sha[0] && zero_sha[i].hex[0]; i++)
      if (zero_sha[i].size == size)
        {
          memcpy(hex, zero_sha[i].hex, 65);
          return;
        }
  sha256_update(&s, content, clen);
  for (done = clen; done < size;)
    {
      size_t n = size - done < sizeof zeros ? size - done : sizeof zeros;
      sha256_update(&s, zeros, n);
      done += n;
    }
  sha256_final(&s, d);
  sha256_hex(d, hex);
  for (size_t i = 0; clen == 0 && i < sizeof zero_sha / sizeof zero_sha[0]; i++)
    if (!zero_sha[i].hex[0])
      {
        zero_sha[i].size = size;
        memcpy(zero_sha[i].hex, hex, 65);
        break;
      }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct crest_restore_opts o;
  crest_error_t err = NULL;
  char *manifest = NULL;
  size_t mlen = 0, at = 1;
  FILE *m;
  bool own_manifest = false;
  int nfiles = 0;

  if (size < 1)
    return 0;
  clear_dir();
  m = open_memstream(&manifest, &mlen);
  fprintf(m,
          "{\"format\": %d, \"crest_version\": \"fuzz\", \"kernel\": {\"release\": \"x\", "
          "\"machine\": \"x\", \"vdso_sha256\": \"x\"}, \"config_digest\": null, \"files\": [",
          data[0] & 1 ? 2 : 1);
  while (at < size && nfiles < MAX_FILES)
    {
      char name[256], hex[65];
      size_t nlen = data[at++];
      uint32_t fsize;
      size_t clen;
      if (at + nlen + 8 > size)
        break;
      memcpy(name, data + at, nlen);
      name[nlen] = 0;
      at += nlen;
      fsize = (uint32_t)data[at] | (uint32_t)data[at + 1] << 8 | (uint32_t)data[at + 2] << 16
              | (uint32_t)data[at + 3] << 24;
      clen = (size_t)data[at + 4] | (size_t)data[at + 5] << 8 | (size_t)data[at + 6] << 16
             | (size_t)data[at + 7] << 24;
      at += 8;
      if (clen > size - at)
        clen = size - at;
      if (fsize > MAX_SIZE)
        fsize = MAX_SIZE;
      if (strlen(name) != nlen || strchr(name, '"') || strchr(name, '\\'))
        {
          at += clen;
          continue;
        }
      put_file(name, fsize, data + at, clen, hex);
      at += clen;
      if (strcmp(name, "manifest.json") == 0)
        {
          own_manifest = true;
          continue;
        }
      fprintf(m, "%s{\"name\": \"%s\", \"size\": %u, \"sha256\": \"%s\"}", nfiles ? ", " : "", name,
              fsize, hex);
      nfiles++;
    }
  fprintf(m, "]}");
  fclose(m);
  if (!own_manifest)
    {
      char path[512];
      int fd;
      snprintf(path, sizeof path, "%s/manifest.json", dir);
      fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (fd >= 0)
        {
          if (write(fd, manifest, mlen) != (ssize_t)mlen)
            unlink(path);
          close(fd);
        }
    }
  free(manifest);

  memset(&o, 0, sizeof o);
  o.image_dir = dir;
  o.caps_from_config = data[0] & 2;
  o.cr_granted = data[0] & 4;
  o.as_ns_init = data[0] & 8;
  o.stdio_fds[0] = o.stdio_fds[1] = o.stdio_fds[2] = -1;
  crest_engine_plan(&o, &err);
  crest_error_release(&err);
  return 0;
}
