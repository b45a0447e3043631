/* crest: a checkpoint as one archive (see cr-archive.h). */
#include <config.h>

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "cr-archive.h"
#include "config-compat.h"
#include "engine.h"
#include "image.h"
#include "log.h"
#include "oci-config.h"
#include "sha256.h"
#include "util.h"

#define IMAGE_CONFIG "container-config.json"
#define TARGET_FILE "crest.json"
/* Bounds for what an archive may make crest unpack. */
#define MAX_ENTRIES 100000
#define MAX_META_BYTES (16u << 20)

/* libarchive is loaded when an archive is written or read, not when crest
   starts: with its dependencies (libxml2, ICU, libstdc++ and five
   compressors) it slowed the start of every crest command for two options
   most commands never use (under emulation, a VM under TCG, `crest
   --version` took 204 ms with it linked, 165 ms without). */
#define LA_FUNCS(X)                                                                                \
  X(archive_entry_filetype)                                                                        \
  X(archive_entry_free)                                                                            \
  X(archive_entry_hardlink)                                                                        \
  X(archive_entry_new)                                                                             \
  X(archive_entry_pathname)                                                                        \
  X(archive_entry_set_filetype)                                                                    \
  X(archive_entry_set_mtime)                                                                       \
  X(archive_entry_set_pathname)                                                                    \
  X(archive_entry_set_perm)                                                                        \
  X(archive_entry_set_size)                                                                        \
  X(archive_entry_size)                                                                            \
  X(archive_entry_size_is_set)                                                                     \
  X(archive_entry_symlink)                                                                         \
  X(archive_errno)                                                                                 \
  X(archive_error_string)                                                                          \
  X(archive_read_data_block)                                                                       \
  X(archive_read_free)                                                                             \
  X(archive_read_new)                                                                              \
  X(archive_read_next_header)                                                                      \
  X(archive_read_open_filename)                                                                    \
  X(archive_read_support_filter_gzip)                                                              \
  X(archive_read_support_filter_none)                                                              \
  X(archive_read_support_filter_zstd)                                                              \
  X(archive_read_support_format_tar)                                                               \
  X(archive_write_add_filter_gzip)                                                                 \
  X(archive_write_add_filter_zstd)                                                                 \
  X(archive_write_close)                                                                           \
  X(archive_write_data)                                                                            \
  X(archive_write_data_block)                                                                      \
  X(archive_write_disk_new)                                                                        \
  X(archive_write_disk_set_options)                                                                \
  X(archive_write_finish_entry)                                                                    \
  X(archive_write_free)                                                                            \
  X(archive_write_header)                                                                          \
  X(archive_write_new)                                                                             \
  X(archive_write_open_filename)                                                                   \
  X(archive_write_set_format_pax_restricted)

static struct
{
#define X(f) __typeof__(f) *f;
  LA_FUNCS(X)
#undef X
} la;

static int
la_load(crest_error_t *err)
{
  static void *h;
  void *lib;
  if (h)
    return 0;
  lib = dlopen(LIBARCHIVE_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return crest_error_make(
        err, ENOENT, "archives need libarchive (Debian package libarchive13): %s", dlerror());
#define X(f)                                                                                       \
  if (!(la.f = (__typeof__(la.f))dlsym(lib, #f)))                                                  \
    {                                                                                              \
      dlclose(lib);                                                                                \
      return crest_error_make(err, ENOSYS, "%s has no %s", LIBARCHIVE_SONAME, #f);                 \
    }
  LA_FUNCS(X)
#undef X
  h = lib;
  return 0;
}

int
crest_parse_size(const char *text, uint64_t *out)
{
  static const char units[] = "KMGT";
  char *end;
  unsigned long long v;
  const char *u;

  if (!text || text[0] < '0' || text[0] > '9')
    return -1;
  errno = 0;
  v = strtoull(text, &end, 10);
  if (errno)
    return -1;
  if (*end)
    {
      if (!(u = strchr(units, *end)) || (end[1] && strcmp(end + 1, "iB") != 0))
        return -1;
      for (long i = 0; i <= u - units; i++)
        {
          if (v > UINT64_MAX / 1024)
            return -1;
          v *= 1024;
        }
    }
  *out = v;
  return 0;
}

void
crest_checkpoint_info_free(struct crest_checkpoint_info *i)
{
  free(i->bundle);
  free(i->created);
  i->bundle = i->created = NULL;
}

/* ---- CRIU's stats-dump and inventory.img ---- */

/* Protocol buffers' varint and the two kinds of field CRIU's entries use. */
static size_t
pb_varint(uint8_t *p, uint64_t v)
{
  size_t n = 0;
  do
    {
      p[n] = (uint8_t)(v & 0x7f);
      v >>= 7;
      if (v)
        p[n] |= 0x80;
      n++;
    }
  while (v);
  return n;
}

static size_t
pb_uint(uint8_t *p, unsigned field, uint64_t v)
{
  size_t n = pb_varint(p, (uint64_t)field << 3);
  return n + pb_varint(p + n, v);
}

static void
put_le32(uint8_t *p, uint32_t v)
{
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

/* podman's --print-stats and CRI-O read stats-dump and stats-restore with
   go-criu: two magics (IMG_SERVICE, STATS), the entry's length, then a
   StatsEntry whose field FIELD (1: DumpStatsEntry, 2: RestoreStatsEntry)
   is BODY. */
static size_t
stats_bytes(unsigned field, const uint8_t *body, size_t len, uint8_t *out)
{
  size_t n = 12;
  put_le32(out, 0x55105940);
  put_le32(out + 4, 0x57093306);
  n += pb_varint(out + n, (field << 3) | 2);
  n += pb_varint(out + n, len);
  memcpy(out + n, body, len);
  n += len;
  put_le32(out + 8, (uint32_t)(n - 12));
  return n;
}

/* The dump's times in microseconds. */
static size_t
stats_dump_bytes(const struct crest_checkpoint_info *info, uint8_t *out)
{
  uint8_t dump[128];
  size_t dn = 0;

  dn += pb_uint(dump + dn, 1, info->freezing_us);
  dn += pb_uint(dump + dn, 2, info->frozen_us);
  dn += pb_uint(dump + dn, 3, info->dump_us);
  dn += pb_uint(dump + dn, 4, 0); /* memwrite: part of the dump here */
  dn += pb_uint(dump + dn, 5, info->pages_written);
  dn += pb_uint(dump + dn, 6, 0);
  dn += pb_uint(dump + dn, 7, info->pages_written);
  return stats_bytes(1, dump, dn, out);
}

/* Engines only test that inventory.img exists; it is CRIU's minimal one
   (INVENTORY magic, img_version 2, fdinfo_per_id) so that CRIU's tools
   recognise the directory rather than choke on it. */
static size_t
inventory_bytes(uint8_t *out)
{
  size_t n = 8;
  put_le32(out, 0x58313116);
  n += pb_uint(out + n, 1, 2);
  n += pb_uint(out + n, 2, 1);
  put_le32(out + 4, (uint32_t)(n - 8));
  return n;
}

int
crest_write_stats_dump(const char *dir, const struct crest_checkpoint_info *info,
                       crest_error_t *err)
{
  uint8_t buf[256];
  cleanup_free char *stats = xasprintf("%s/stats-dump", dir);
  return write_file_atomic(stats, buf, stats_dump_bytes(info, buf), 0600, err);
}

uint64_t
crest_image_pages(const char *image_dir)
{
  DIR *d = opendir(image_dir);
  struct dirent *de;
  uint64_t bytes = 0;
  struct stat st;
  while (d && (de = readdir(d)))
    if (strncmp(de->d_name, "pages-", 6) == 0 && fstatat(dirfd(d), de->d_name, &st, 0) == 0)
      bytes += (uint64_t)st.st_size;
  if (d)
    closedir(d);
  return bytes / 4096;
}

int
crest_write_stats_restore(const char *dir, const char *image_dir, uint64_t restore_us,
                          crest_error_t *err)
{
  uint8_t body[64], buf[128];
  cleanup_free char *path = xasprintf("%s/stats-restore", dir);
  size_t n = 0;

  /* crest compares no pages and keeps no copy-on-write skip count; the
     forks are part of the restore's time. The four first are required. */
  n += pb_uint(body + n, 1, 0);
  n += pb_uint(body + n, 2, 0);
  n += pb_uint(body + n, 3, 0);
  n += pb_uint(body + n, 4, restore_us > UINT32_MAX ? UINT32_MAX : restore_us);
  n += pb_uint(body + n, 5, crest_image_pages(image_dir));
  return write_file_atomic(path, buf, stats_bytes(2, body, n, buf), 0600, err);
}

int
crest_image_write_engine_files(const char *image_dir, const struct crest_checkpoint_info *info,
                               crest_error_t *err)
{
  uint8_t buf[256];
  cleanup_free char *inv = xasprintf("%s/inventory.img", image_dir);

  if (crest_write_stats_dump(image_dir, info, err) < 0)
    return -1;
  return write_file_atomic(inv, buf, inventory_bytes(buf), 0600, err);
}

/* ---- small helpers ---- */

static void
rfc3339(const struct timespec *t, char *buf, size_t len)
{
  struct tm tm;
  char s[32];
  gmtime_r(&t->tv_sec, &tm);
  strftime(s, sizeof s, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf, len, "%s.%09ldZ", s, t->tv_nsec);
}

static void
gstr(yajl_gen g, const char *k, const char *v)
{
  yajl_gen_string(g, (const unsigned char *)k, strlen(k));
  if (v)
    yajl_gen_string(g, (const unsigned char *)v, strlen(v));
  else
    yajl_gen_null(g);
}

static void
gint(yajl_gen g, const char *k, long long v)
{
  yajl_gen_string(g, (const unsigned char *)k, strlen(k));
  yajl_gen_integer(g, v);
}

static char *
gen_take(yajl_gen g, size_t *len)
{
  const unsigned char *buf;
  char *out;
  yajl_gen_get_buf(g, &buf, len);
  out = xmalloc(*len + 1);
  memcpy(out, buf, *len);
  out[*len] = '\0';
  yajl_gen_free(g);
  return out;
}

static const char *
jstr(yajl_val v, const char *key)
{
  yajl_val s = crest_config_member(v, key);
  return s && YAJL_IS_STRING(s) ? s->u.string : NULL;
}

static int
sha256_file(const char *path, char hex[65], crest_error_t *err)
{
  cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  struct sha256 s;
  uint8_t d[32];
  char buf[65536];
  ssize_t r;

  if (fd < 0)
    return crest_error_errno(err, "open `%s`", path);
  sha256_init(&s);
  while ((r = read(fd, buf, sizeof buf)) > 0)
    sha256_update(&s, buf, (size_t)r);
  if (r < 0)
    return crest_error_errno(err, "read `%s`", path);
  sha256_final(&s, d);
  sha256_hex(d, hex);
  return 0;
}

/* XCR0 of this CPU: the xsave state components the kernel enabled. */
static uint64_t
xcr0(void)
{
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((uint64_t)hi << 32) | lo;
}

/* ---- the files the tree uses, in the root file system ---- */

/* Where PATH (as the container saw it) lies on this machine for CONFIG's
   root file system ROOTFS: inside a bind mount, the mount's source; inside
   any other mount (proc, tmpfs, devpts...), nowhere (NULL): what a tmpfs
   held is not the root file system's, and the engine keeps what it needs. */
static char *
host_path(yajl_val config, const char *rootfs, const char *path)
{
  yajl_val mounts = crest_config_member(config, "mounts");
  const char *best_src = NULL;
  size_t best = 0;
  bool best_bind = false;

  for (size_t i = 0; mounts && YAJL_IS_ARRAY(mounts) && i < mounts->u.array.len; i++)
    {
      yajl_val m = mounts->u.array.values[i], o = crest_config_member(m, "options");
      const char *d = jstr(m, "destination"), *t = jstr(m, "type"), *src = jstr(m, "source");
      size_t n = d ? strlen(d) : 0;
      bool bind = t && strcmp(t, "bind") == 0;
      while (n > 1 && d[n - 1] == '/')
        n--;
      if (!d || n <= 1 || strncmp(path, d, n) != 0 || (path[n] != '/' && path[n] != '\0')
          || n < best)
        continue;
      for (size_t k = 0; o && YAJL_IS_ARRAY(o) && k < o->u.array.len; k++)
        if (YAJL_IS_STRING(o->u.array.values[k])
            && (strcmp(o->u.array.values[k]->u.string, "bind") == 0
                || strcmp(o->u.array.values[k]->u.string, "rbind") == 0))
          bind = true;
      best = n, best_src = src, best_bind = bind;
    }
  if (best)
    return best_bind && best_src ? xasprintf("%s%s", best_src, path + best) : NULL;
  return xasprintf("%s%s", rootfs, path);
}

static char *
rootfs_of(yajl_val config, const char *bundle)
{
  yajl_val root = crest_config_member(config, "root");
  const char *p = jstr(root, "path");
  if (!p)
    return NULL;
  return p[0] == '/' ? xstrdup(p) : xasprintf("%s/%s", bundle, p);
}

struct pathset
{
  char **v;
  size_t n;
};

static void
pathset_add(struct pathset *s, const char *p)
{
  if (!p || p[0] != '/')
    return;
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->v[i], p) == 0)
      return;
  s->v = xrealloc(s->v, (s->n + 1) * sizeof *s->v);
  s->v[s->n++] = xstrdup(p);
}

static void
pathset_free(struct pathset *s)
{
  for (size_t i = 0; i < s->n; i++)
    free(s->v[i]);
  free(s->v);
}

/* Every path the restore opens or maps from the container's file systems:
   executables, file mappings, and regular files not saved in the image. */
static void
tree_paths(yajl_val tree, struct pathset *s)
{
  yajl_val procs = crest_config_member(tree, "processes"),
           files = crest_config_member(tree, "files");

  for (size_t i = 0; procs && YAJL_IS_ARRAY(procs) && i < procs->u.array.len; i++)
    {
      yajl_val p = procs->u.array.values[i], vmas = crest_config_member(p, "vmas");
      pathset_add(s, jstr(p, "exe"));
      for (size_t k = 0; vmas && YAJL_IS_ARRAY(vmas) && k < vmas->u.array.len; k++)
        {
          const char *kind = jstr(vmas->u.array.values[k], "kind");
          if (kind && strcmp(kind, "file") == 0)
            pathset_add(s, jstr(vmas->u.array.values[k], "path"));
        }
    }
  for (size_t i = 0; files && YAJL_IS_ARRAY(files) && i < files->u.array.len; i++)
    {
      yajl_val f = files->u.array.values[i];
      const char *type = jstr(f, "type");
      if (type && strcmp(type, "reg") == 0 && !crest_config_member(f, "data"))
        pathset_add(s, jstr(f, "path"));
    }
}

/* One file's identity: size, permission bits and type, content digest. */
struct fileid
{
  uint64_t size;
  unsigned mode;
  char sha[65];
};

static int
file_identity(const char *host, struct fileid *id, crest_error_t *err)
{
  struct stat st;
  if (stat(host, &st) < 0)
    return crest_error_errno(err, "stat `%s`", host);
  if (!S_ISREG(st.st_mode))
    return crest_error_make(err, 0, "`%s` is not a regular file", host);
  id->size = (uint64_t)st.st_size;
  id->mode = (unsigned)st.st_mode & 0177777;
  return sha256_file(host, id->sha, err);
}

static int
gen_files(yajl_gen g, const char *image_dir, yajl_val config, const char *rootfs,
          crest_error_t *err)
{
  struct img_reader *rd = NULL;
  yajl_val tree = NULL;
  struct pathset s = { NULL, 0 };
  int rc = 0;

  if (img_reader_open(image_dir, false, false, &rd, err) < 0)
    return -1;
  if (img_reader_json(rd, "tree.json", &tree, err) < 0)
    {
      img_reader_free(rd);
      return -1;
    }
  tree_paths(tree, &s);
  yajl_gen_string(g, (const unsigned char *)"files", 5);
  yajl_gen_array_open(g);
  for (size_t i = 0; i < s.n && rc == 0; i++)
    {
      cleanup_free char *host = host_path(config, rootfs, s.v[i]);
      struct fileid id;
      char mode[16];
      if (!host)
        continue;
      if (file_identity(host, &id, err) < 0)
        {
          rc = crest_error_wrap(err, "digest the tree's file `%s`", s.v[i]);
          break;
        }
      snprintf(mode, sizeof mode, "0%o", id.mode);
      yajl_gen_map_open(g);
      gstr(g, "path", s.v[i]);
      gint(g, "size", (long long)id.size);
      gstr(g, "mode", mode);
      gstr(g, "sha256", id.sha);
      yajl_gen_map_close(g);
    }
  yajl_gen_array_close(g);
  pathset_free(&s);
  yajl_tree_free(tree);
  img_reader_free(rd);
  return rc;
}

/* The xsave components the threads' state has in use: the union of their
   XSTATE_BV (the 64-bit word at byte 512 of the xsave area). */
static int
xfeatures_used(const char *image_dir, uint64_t *out, crest_error_t *err)
{
  struct img_reader *rd = NULL;
  yajl_val tree = NULL, procs;

  *out = 0;
  if (img_reader_open(image_dir, false, false, &rd, err) < 0)
    return -1;
  if (img_reader_json(rd, "tree.json", &tree, err) < 0)
    {
      img_reader_free(rd);
      return -1;
    }
  procs = crest_config_member(tree, "processes");
  for (size_t i = 0; procs && YAJL_IS_ARRAY(procs) && i < procs->u.array.len; i++)
    {
      yajl_val th = crest_config_member(procs->u.array.values[i], "threads");
      for (size_t k = 0; th && YAJL_IS_ARRAY(th) && k < th->u.array.len; k++)
        {
          const char *x = jstr(th->u.array.values[k], "xstate");
          uint8_t xs[XSTATE_MAX];
          size_t len = 0;
          uint64_t bv = 0;
          if (!x || hex_decode(x, rd->format >= CREST_IMAGE_FORMAT_XRUNS, xs, sizeof xs, &len) < 0
              || len < 520)
            continue;
          memcpy(&bv, xs + 512, 8);
          *out |= bv;
        }
    }
  yajl_tree_free(tree);
  img_reader_free(rd);
  return 0;
}

/* ---- export ---- */

struct member
{
  const char *name;
  char *data;
  size_t len;
};

static char *
config_dump(const char *id, const struct crest_checkpoint_info *info, size_t *len)
{
  yajl_gen g = yajl_gen_alloc(NULL);
  char when[64];
  yajl_gen_config(g, yajl_gen_beautify, 1);
  yajl_gen_map_open(g);
  gstr(g, "id", id);
  gstr(g, "name", id);
  gstr(g, "runtime", "crest");
  gstr(g, "createdTime", info->created);
  rfc3339(&info->checkpointed, when, sizeof when);
  gstr(g, "checkpointedTime", when);
  yajl_gen_map_close(g);
  return gen_take(g, len);
}

static int
target_json(const char *image_dir, yajl_val config, const struct crest_checkpoint_info *info,
            struct member *m, size_t nm, char **out, size_t *len, crest_error_t *err)
{
  struct img_reader *rd = NULL;
  cleanup_free char *rootfs = rootfs_of(config, info->bundle);
  yajl_gen g;
  uint64_t used;
  char hex[65], xf[32];

  if (!rootfs)
    return crest_error_make(err, 0, "the container's config has no root.path");
  if (xfeatures_used(image_dir, &used, err) < 0
      || img_reader_open(image_dir, false, false, &rd, err) < 0)
    return -1;
  g = yajl_gen_alloc(NULL);
  yajl_gen_config(g, yajl_gen_beautify, 1);
  yajl_gen_map_open(g);
  gint(g, "image_format", rd->format);
  gstr(g, "crest_version", rd->crest_version);
  gstr(g, "kernel_release", rd->kernel.release);
  gstr(g, "machine", rd->kernel.machine);
  gstr(g, "vdso_sha256", rd->kernel.vdso_sha);
  snprintf(xf, sizeof xf, "0x%" PRIx64, used);
  gstr(g, "xfeatures", xf);
  img_reader_free(rd);
  yajl_gen_string(g, (const unsigned char *)"members", 7);
  yajl_gen_map_open(g);
  for (size_t i = 0; i < nm; i++)
    {
      sha256_hex_of(m[i].data, m[i].len, hex);
      gstr(g, m[i].name, hex);
    }
  yajl_gen_map_close(g);
  if (gen_files(g, image_dir, config, rootfs, err) < 0)
    {
      yajl_gen_free(g);
      return -1;
    }
  yajl_gen_map_close(g);
  *out = gen_take(g, len);
  return 0;
}

struct writer
{
  struct archive *a;
  const char *file;
  struct timespec t0, last;
  uint64_t bytes;
};

static int
aerr(crest_error_t *err, struct archive *a, const char *what)
{
  /* libarchive's message already names the cause (and often the errno). */
  (void)la.archive_errno(a);
  return crest_error_make(err, 0, "%s: %s", what,
                          la.archive_error_string(a) ? la.archive_error_string(a)
                                                     : "libarchive error");
}

static double
since(const struct timespec *a)
{
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - a->tv_sec) + (double)(now.tv_nsec - a->tv_nsec) / 1e9;
}

/* A line on stderr every second once the archive has taken more than one. */
static void
progress(struct writer *w)
{
  if (since(&w->t0) < 1.0 || since(&w->last) < 1.0)
    return;
  clock_gettime(CLOCK_MONOTONIC, &w->last);
  crest_progress("export `%s`: %" PRIu64 " MiB read", w->file, w->bytes >> 20);
}

static int
add_entry(struct writer *w, const char *name, mode_t type, int64_t size, crest_error_t *err)
{
  struct archive_entry *e = la.archive_entry_new();
  int r;
  la.archive_entry_set_pathname(e, name);
  la.archive_entry_set_filetype(e, type);
  la.archive_entry_set_perm(e, type == AE_IFDIR ? 0700 : 0600);
  la.archive_entry_set_size(e, type == AE_IFDIR ? 0 : size);
  la.archive_entry_set_mtime(e, time(NULL), 0);
  r = la.archive_write_header(w->a, e);
  la.archive_entry_free(e);
  if (r != ARCHIVE_OK)
    return aerr(err, w->a, name);
  return 0;
}

static int
add_buffer(struct writer *w, const char *name, const void *data, size_t len, crest_error_t *err)
{
  if (add_entry(w, name, AE_IFREG, (int64_t)len, err) < 0)
    return -1;
  if (len && la.archive_write_data(w->a, data, len) != (la_ssize_t)len)
    return aerr(err, w->a, name);
  return 0;
}

static int
add_file(struct writer *w, int dirfd, const char *name, crest_error_t *err)
{
  cleanup_free char *entry = xasprintf("checkpoint/%s", name);
  cleanup_close int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  static char buf[1 << 20];
  struct stat st;
  off_t left;

  if (fd < 0 || fstat(fd, &st) < 0)
    return crest_error_errno(err, "image file `%s`", name);
  if (!S_ISREG(st.st_mode))
    return crest_error_make(err, 0, "image file `%s` is not a regular file", name);
  if (add_entry(w, entry, AE_IFREG, st.st_size, err) < 0)
    return -1;
  for (left = st.st_size; left > 0;)
    {
      ssize_t r = read(fd, buf, left < (off_t)sizeof buf ? (size_t)left : sizeof buf);
      if (r <= 0)
        return crest_error_errno(err, "read image file `%s`", name);
      if (la.archive_write_data(w->a, buf, (size_t)r) != r)
        return aerr(err, w->a, entry);
      left -= r;
      w->bytes += (uint64_t)r;
      progress(w);
    }
  return 0;
}

static int
add_image(struct writer *w, const char *image_dir, crest_error_t *err)
{
  DIR *d = opendir(image_dir);
  struct dirent *de;
  int rc = 0;

  if (!d)
    return crest_error_errno(err, "open the image `%s`", image_dir);
  if (add_entry(w, "checkpoint", AE_IFDIR, 0, err) < 0)
    {
      closedir(d);
      return -1;
    }
  while (rc == 0 && (de = readdir(d)))
    if (de->d_name[0] != '.')
      rc = add_file(w, dirfd(d), de->d_name, err);
  closedir(d);
  return rc;
}

static int
open_writer(struct writer *w, const char *compress, const char *tmp, crest_error_t *err)
{
  int r = ARCHIVE_OK;
  if (la_load(err) < 0)
    return -1;
  w->a = la.archive_write_new();
  la.archive_write_set_format_pax_restricted(w->a);
  if (strcmp(compress, "zstd") == 0)
    r = la.archive_write_add_filter_zstd(w->a);
  else if (strcmp(compress, "gzip") == 0)
    r = la.archive_write_add_filter_gzip(w->a);
  else if (strcmp(compress, "none") != 0)
    return crest_error_make(err, 0, "--compress: `%s` is not none, gzip or zstd", compress);
  if (r != ARCHIVE_OK)
    return aerr(err, w->a, compress);
  if (la.archive_write_open_filename(w->a, tmp) != ARCHIVE_OK)
    return aerr(err, w->a, tmp);
  return 0;
}

static int
write_archive(struct writer *w, const char *image_dir, struct member *m, size_t nm,
              crest_error_t *err)
{
  if (add_image(w, image_dir, err) < 0)
    return -1;
  for (size_t i = 0; i < nm; i++)
    if (add_buffer(w, m[i].name, m[i].data, m[i].len, err) < 0)
      return -1;
  if (la.archive_write_close(w->a) != ARCHIVE_OK)
    return aerr(err, w->a, "finish");
  return 0;
}

static int
sync_and_rename(const char *tmp, const char *file, crest_error_t *err)
{
  cleanup_close int fd = open(tmp, O_RDONLY | O_CLOEXEC);
  if (fd < 0 || fsync(fd) < 0)
    return crest_error_errno(err, "sync `%s`", tmp);
  if (rename(tmp, file) < 0)
    return crest_error_errno(err, "rename to `%s`", file);
  return 0;
}

int
crest_archive_export(const char *file, const char *compress, const char *id, const char *image_dir,
                     const struct crest_checkpoint_info *info, crest_error_t *err)
{
  cleanup_free char *spec = NULL, *spec_path = xasprintf("%s/%s", image_dir, IMAGE_CONFIG);
  cleanup_free char *tmp = xasprintf("%s.tmp-%d", file, (int)getpid());
  struct member m[4] = { { "spec.dump", NULL, 0 },
                         { "config.dump", NULL, 0 },
                         { "stats-dump", NULL, 0 },
                         { TARGET_FILE, NULL, 0 } };
  struct writer w;
  yajl_val config = NULL;
  uint8_t stats[256];
  int rc = -1;

  memset(&w, 0, sizeof w);
  w.file = file;
  clock_gettime(CLOCK_MONOTONIC, &w.t0);
  if (read_file(spec_path, &spec, &m[0].len, MAX_META_BYTES, err) < 0
      || crest_config_parse(spec, &config, err) < 0)
    return crest_error_wrap(err, "export `%s`", file);
  m[0].data = spec;
  m[1].data = config_dump(id, info, &m[1].len);
  m[2].len = stats_dump_bytes(info, stats);
  m[2].data = (char *)stats;
  if (target_json(image_dir, config, info, m, 3, &m[3].data, &m[3].len, err) < 0
      || open_writer(&w, compress, tmp, err) < 0 || write_archive(&w, image_dir, m, 4, err) < 0
      || sync_and_rename(tmp, file, err) < 0)
    crest_error_wrap(err, "export `%s`", file);
  else
    rc = 0;
  if (w.a)
    la.archive_write_free(w.a);
  if (rc < 0)
    unlink(tmp);
  else if (since(&w.t0) >= 1.0)
    crest_progress("export `%s`: done, %" PRIu64 " MiB of image", file, w.bytes >> 20);
  free(m[1].data);
  free(m[3].data);
  yajl_tree_free(config);
  return rc;
}

/* ---- import ---- */

/* The names a crest archive holds; anything else is refused, which also
   keeps out absolute paths, "..", and names libarchive would normalise. */
static bool
member_ok(const char *name, mode_t type)
{
  static const char *const top[] = { "spec.dump", "config.dump", "stats-dump", TARGET_FILE };
  const char *sub;
  size_t n;

  if (strcmp(name, "checkpoint") == 0 || strcmp(name, "checkpoint/") == 0)
    return type == AE_IFDIR;
  if (type != AE_IFREG)
    return false;
  for (size_t i = 0; i < ARRAY_SIZE(top); i++)
    if (strcmp(name, top[i]) == 0)
      return true;
  if (strncmp(name, "checkpoint/", 11) != 0)
    return false;
  sub = name + 11;
  n = strlen(sub);
  if (n == 0 || n > 128 || sub[0] == '.')
    return false;
  for (size_t i = 0; i < n; i++)
    if (sub[i] == '/' || sub[i] < 0x21 || sub[i] > 0x7e)
      return false;
  return true;
}

/* What the unpacking may write: an archive of a few kilobytes can expand
   to terabytes (zstd of zeros), and the disk it fills is shared. */
struct budget
{
  uint64_t limit, used;
};

static int
over_budget(const struct budget *b, const char *name, crest_error_t *err)
{
  return crest_error_make(err, 0,
                          "the archive expands past the limit of %" PRIu64
                          " bytes at `%s`: raise it with --import-limit=SIZE or "
                          "CREST_IMPORT_LIMIT",
                          b->limit, name);
}

static int
copy_data(struct archive *in, struct archive *out, const char *name, struct budget *b,
          crest_error_t *err)
{
  for (;;)
    {
      const void *buf;
      size_t size;
      la_int64_t off;
      int r = la.archive_read_data_block(in, &buf, &size, &off);
      if (r == ARCHIVE_EOF)
        return 0;
      if (r != ARCHIVE_OK)
        return aerr(err, in, name);
      b->used += size;
      if (b->used > b->limit)
        return over_budget(b, name, err);
      if (la.archive_write_data_block(out, buf, size, off) != ARCHIVE_OK)
        return aerr(err, out, name);
    }
}

/* Unpack every entry into the current directory (the caller's fresh one). */
static int
unpack(struct archive *in, struct archive *out, struct budget *b, crest_error_t *err)
{
  struct archive_entry *e;
  size_t count = 0;
  int r;

  while ((r = la.archive_read_next_header(in, &e)) == ARCHIVE_OK)
    {
      const char *name = la.archive_entry_pathname(e);
      mode_t type = la.archive_entry_filetype(e);
      if (!name || ++count > MAX_ENTRIES || la.archive_entry_hardlink(e)
          || la.archive_entry_symlink(e) || !member_ok(name, type))
        return crest_error_make(err, 0,
                                "entry `%s` is not part of a crest archive (only checkpoint/, "
                                "spec.dump, config.dump, stats-dump, " TARGET_FILE ")",
                                name ? name : "(no name)");
      /* A size the header declares past the limit is refused before a
         byte is written. */
      if (la.archive_entry_size_is_set(e) && la.archive_entry_size(e) > 0
          && b->used + (uint64_t)la.archive_entry_size(e) > b->limit)
        return over_budget(b, name, err);
      /* The archive's modes and owners are not trusted: no set-ID bits, no
         foreign owner, nothing others could read. */
      la.archive_entry_set_perm(e, type == AE_IFDIR ? 0700 : 0600);
      if (la.archive_write_header(out, e) != ARCHIVE_OK)
        return aerr(err, out, name);
      if (type == AE_IFREG && copy_data(in, out, name, b, err) < 0)
        return -1;
      if (la.archive_write_finish_entry(out) != ARCHIVE_OK)
        return aerr(err, out, name);
    }
  if (r != ARCHIVE_EOF)
    return aerr(err, in, "read");
  return 0;
}

static int
extract(const char *file, const char *dest, uint64_t limit, crest_error_t *err)
{
  struct budget b = { limit, 0 };
  struct archive *in, *out;
  cleanup_close int here = -1;
  int rc = -1;

  if (la_load(err) < 0)
    return -1;
  in = la.archive_read_new();
  out = la.archive_write_disk_new();
  here = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

  la.archive_read_support_filter_none(in);
  la.archive_read_support_filter_gzip(in);
  la.archive_read_support_filter_zstd(in);
  la.archive_read_support_format_tar(in);
  la.archive_write_disk_set_options(
      out, ARCHIVE_EXTRACT_SECURE_NODOTDOT | ARCHIVE_EXTRACT_SECURE_SYMLINKS
               | ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS | ARCHIVE_EXTRACT_NO_OVERWRITE);
  if (here < 0)
    crest_error_errno(err, "open the working directory");
  else if (la.archive_read_open_filename(in, file, 1 << 16) != ARCHIVE_OK)
    aerr(err, in, "read");
  else if (chdir(dest) < 0)
    crest_error_errno(err, "enter `%s`", dest);
  else
    {
      rc = unpack(in, out, &b, err);
      if (fchdir(here) < 0 && rc == 0)
        rc = crest_error_errno(err, "return to the working directory");
    }
  la.archive_read_free(in);
  la.archive_write_free(out);
  return rc;
}

static int
read_json(const char *dir, const char *name, yajl_val *out, char **text, size_t *len,
          crest_error_t *err)
{
  cleanup_free char *path = xasprintf("%s/%s", dir, name);
  char ebuf[256];
  if (read_file(path, text, len, MAX_META_BYTES, err) < 0)
    return crest_error_wrap(err, "the archive's %s", name);
  *out = yajl_tree_parse(*text, ebuf, sizeof ebuf);
  if (!*out)
    return crest_error_make(err, 0, "the archive's %s is not JSON: %s", name, ebuf);
  return 0;
}

static int
check_members(const char *dir, yajl_val target, crest_error_t *err)
{
  static const char *const names[] = { "spec.dump", "config.dump", "stats-dump" };
  yajl_val m = crest_config_member(target, "members");
  for (size_t i = 0; i < ARRAY_SIZE(names); i++)
    {
      cleanup_free char *path = xasprintf("%s/%s", dir, names[i]), *text = NULL;
      const char *want = jstr(m, names[i]);
      size_t len = 0;
      char got[65];
      if (!want)
        return crest_error_make(err, 0, "the archive's " TARGET_FILE " has no digest of %s",
                                names[i]);
      if (read_file(path, &text, &len, MAX_META_BYTES, err) < 0)
        return crest_error_wrap(err, "the archive's %s", names[i]);
      sha256_hex_of(text, len, got);
      if (strcmp(got, want) != 0)
        return crest_error_make(err, 0, "the archive's %s is damaged (SHA-256 %s, expected %s)",
                                names[i], got, want);
    }
  return 0;
}

static int
check_machine(yajl_val t, crest_error_t *err)
{
  struct img_kernel me;
  const char *rel = jstr(t, "kernel_release"), *mach = jstr(t, "machine");
  const char *vdso = jstr(t, "vdso_sha256"), *xf = jstr(t, "xfeatures");
  yajl_val fmt = crest_config_member(t, "image_format");
  uint64_t need, have = xcr0();

  if (!fmt || !YAJL_IS_INTEGER(fmt) || !rel || !mach || !vdso || !xf)
    return crest_error_make(err, 0, "the archive's " TARGET_FILE " lacks a required field");
  if (YAJL_GET_INTEGER(fmt) < 1 || YAJL_GET_INTEGER(fmt) > CREST_IMAGE_FORMAT)
    return crest_error_make(err, 0,
                            "image format differs: the archive's is %lld, this crest reads 1 to %d",
                            YAJL_GET_INTEGER(fmt), CREST_IMAGE_FORMAT);
  if (img_kernel_identity(&me, err) < 0)
    return -1;
  if (strcmp(rel, me.release) != 0)
    return crest_error_make(
        err, 0, "kernel release differs: the archive needs `%s`, this machine runs `%s`", rel,
        me.release);
  if (strcmp(mach, me.machine) != 0)
    return crest_error_make(err, 0, "machine differs: the archive needs `%s`, this machine is `%s`",
                            mach, me.machine);
  if (strcmp(vdso, me.vdso_sha) != 0)
    return crest_error_make(err, 0,
                            "vDSO differs: the archive needs SHA-256 %s, this kernel's is %s", vdso,
                            me.vdso_sha);
  need = strtoull(xf, NULL, 16);
  if (need & ~have)
    return crest_error_make(
        err, 0,
        "CPU features differ: the image's xsave state uses components 0x%" PRIx64
        " that this CPU does not enable (XCR0 0x%" PRIx64 ")",
        need & ~have, have);
  return 0;
}

/* Every root file system file the tree uses must be the checkpointed one. */
static int
check_files(yajl_val target, yajl_val config, const char *bundle, crest_error_t *err)
{
  yajl_val files = crest_config_member(target, "files");
  cleanup_free char *rootfs = rootfs_of(config, bundle);

  if (!rootfs || !files || !YAJL_IS_ARRAY(files))
    return crest_error_make(err, 0, "the archive has no root.path or file list");
  for (size_t i = 0; i < files->u.array.len; i++)
    {
      yajl_val f = files->u.array.values[i], sz = crest_config_member(f, "size");
      const char *path = jstr(f, "path"), *mode = jstr(f, "mode"), *sha = jstr(f, "sha256");
      cleanup_free char *host = NULL;
      struct fileid id;
      crest_error_t e = NULL;
      if (!path || !mode || !sha || !sz || !YAJL_IS_INTEGER(sz))
        return crest_error_make(err, 0, "the archive's file list has a bad entry");
      host = host_path(config, rootfs, path);
      if (!host)
        continue;
      if (file_identity(host, &id, &e) < 0)
        {
          cleanup_free char *why = crest_error_text(e);
          crest_error_release(&e);
          return crest_error_make(err, 0, "file `%s` differs: %s", path, why);
        }
      if (id.size != (uint64_t)YAJL_GET_INTEGER(sz))
        return crest_error_make(err, 0, "file `%s` differs: size %" PRIu64 ", checkpointed %lld",
                                path, id.size, YAJL_GET_INTEGER(sz));
      if (id.mode != (unsigned)strtoul(mode, NULL, 8))
        return crest_error_make(err, 0, "file `%s` differs: mode 0%o, checkpointed %s", path,
                                id.mode, mode);
      if (strcmp(id.sha, sha) != 0)
        return crest_error_make(
            err, 0, "file `%s` differs: its content (SHA-256) is not the checkpointed one", path);
    }
  return 0;
}

static int
check_target(const char *dir, const char *bundle, crest_error_t *err)
{
  cleanup_free char *ttext = NULL, *stext = NULL;
  yajl_val target = NULL, config = NULL;
  size_t len;
  int rc = -1;

  /* The files are looked for where the bundle's config (when it fits the
     image) puts them: its root.path, its mounts' sources. */
  if (read_json(dir, TARGET_FILE, &target, &ttext, &len, err) == 0
      && check_members(dir, target, err) == 0 && check_machine(target, err) == 0
      && read_json(dir, "spec.dump", &config, &stext, &len, err) == 0
      && crest_restore_bundle_config(bundle, &config, &stext, &len, err) == 0
      && check_files(target, config, bundle, err) == 0)
    rc = 0;
  if (target)
    yajl_tree_free(target);
  if (config)
    yajl_tree_free(config);
  return rc;
}

/* Where to unpack: beside the archive (a user's runtime directory, where
   crest's state lives, is often a small tmpfs), else under the state root. */
static char *
unpack_dir(struct crest_global *g, const char *file, const char *id, crest_error_t *err)
{
  cleanup_free char *copy = xstrdup(file), *base = NULL;
  char *slash = strrchr(copy, '/');
  char *d;

  base = slash ? (slash == copy ? xstrdup("/") : (*slash = '\0', xstrdup(copy))) : xstrdup(".");
  if (access(base, W_OK) < 0)
    {
      free(base);
      base = xasprintf("%s/imports", g->root);
      if (mkdir_p(base, 0700, err) < 0)
        return NULL;
    }
  {
    /* Unpacked archives of a crest that died importing to the same place
       (the checkpoint's rule for its temporary images). */
    cleanup_free char *final = xasprintf("%s/.crest-import-%s", base, id);
    dump_remove_stale_tmp(final);
  }
  d = xasprintf("%s/.crest-import-%s.tmp-%d", base, id, (int)getpid());
  if (mkdir(d, 0700) < 0)
    {
      crest_error_errno(err, "create `%s`", d);
      free(d);
      return NULL;
    }
  return d;
}

int
crest_archive_import(struct crest_global *g, const char *file, const char *id, const char *bundle,
                     uint64_t limit, char **dir, crest_error_t *err)
{
  crest_error_t e = NULL;
  char *d;

  *dir = NULL;
  d = unpack_dir(g, file, id, err);
  if (!d)
    return crest_error_wrap(err, "import `%s`", file);
  if (extract(file, d, limit, err) < 0 || check_target(d, bundle, err) < 0)
    {
      crest_error_wrap(err, "import `%s`", file);
      remove_tree(d, &e);
      crest_error_release(&e);
      free(d);
      return -1;
    }
  *dir = d;
  return 0;
}
