/* crest: image directory writer and reader. */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>
#include "engine.h"
#include "engine-int.h"
#include "image.h"
#include "util.h"

bool
img_name_ok(const char *name)
{
  size_t n = strlen(name);
  if (n == 0 || n > 128 || name[0] == '.')
    return false;
  for (size_t i = 0; i < n; i++)
    if (name[i] == '/' || name[i] < 0x21 || name[i] > 0x7e)
      return false;
  return true;
}

int
img_kernel_identity(struct img_kernel *k, crest_error_t *err)
{
  struct utsname u;
  cleanup_free char *maps = NULL;
  unsigned long start = 0, end = 0;
  uint8_t d[32];
  struct sha256 s;

  memset(k, 0, sizeof *k);
  if (uname(&u) < 0)
    return crest_error_errno(err, "uname");
  snprintf(k->release, sizeof k->release, "%s", u.release);
  snprintf(k->machine, sizeof k->machine, "%s", u.machine);
  if (read_file("/proc/self/maps", &maps, NULL, 0, err) < 0)
    return -1;
  for (char *line = maps; line && *line;)
    {
      char *nl = strchr(line, '\n');
      if (nl)
        *nl = 0;
      if (strstr(line, "[vdso]"))
        sscanf(line, "%lx-%lx", &start, &end);
      line = nl ? nl + 1 : NULL;
    }
  if (start == 0 || start != getauxval(AT_SYSINFO_EHDR))
    return crest_error_make(err, 0, "kernel identity: cannot locate this process's vDSO");
  sha256_init(&s);
  sha256_update(&s, (const void *)start, end - start);
  sha256_final(&s, d);
  sha256_hex(d, k->vdso_sha);
  return 0;
}

/* Writer. */

int
img_writer_open(const char *final_dir, struct img_writer **out, crest_error_t *err)
{
  struct img_writer *w;
  struct stat st;

  if (stat(final_dir, &st) == 0)
    {
      if (!S_ISDIR(st.st_mode))
        return crest_error_make(err, EEXIST, "image %s: exists and is not a directory", final_dir);
      if (rmdir(final_dir) < 0)
        return crest_error_sys(err, errno == ENOTEMPTY ? EEXIST : errno,
                               "image %s: exists and is not empty", final_dir);
    }
  w = xzalloc(sizeof *w);
  w->final_dir = xstrdup(final_dir);
  w->tmp_dir = xasprintf("%s.tmp-%d", final_dir, (int)getpid());
  w->dirfd = -1;
  w->format = 1;
  if (mkdir(w->tmp_dir, 0700) < 0)
    {
      crest_error_errno(err, "image %s: create temporary directory %s", final_dir, w->tmp_dir);
      free(w->tmp_dir);
      w->tmp_dir = NULL;
      img_writer_free(w);
      return -1;
    }
  w->dirfd = open(w->tmp_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (w->dirfd < 0)
    {
      crest_error_errno(err, "image %s: open %s", final_dir, w->tmp_dir);
      img_writer_free(w);
      return -1;
    }
  *out = w;
  return 0;
}

int
img_out_open(struct img_writer *w, const char *name, struct img_out *o, crest_error_t *err)
{
  memset(o, 0, sizeof *o);
  o->fd = -1;
  if (!img_name_ok(name))
    return crest_error_make(err, EINVAL, "image: bad file name %s", name);
  o->fd = openat(w->dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (o->fd < 0)
    return crest_error_errno(err, "image %s: create %s", w->final_dir, name);
  o->w = w;
  o->name = xstrdup(name);
  digest_init(&o->dg, w->sha256_only ? DIGEST_SHA256 : img_digest_alg(name));
  return 0;
}

/* One buffer at a time is handed over: the caller hashes it and fills the
   next (the dump: process_vm_readv, then the checksum while the bytes are
   still in the cache) while the thread writes this one to the file, so
   that on two CPUs the copy out of the task and the copy into the file
   overlap. The write is the longer half (it allocates the file's pages):
   the thread does nothing else. */
struct img_wthread
{
  pthread_t tid;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  const void *buf;
  size_t len;
  bool stop;
  int fd;
  int werr;         /* the first write's error number, then nothing more is written */
  uint64_t off, wb; /* bytes written, and up to where their writeback was started */
};

/* Once WB_STEP bytes of a file were written since its writeback was last
   started (*WB), it is started for them (sync_file_range: the disk writes
   them while the next are copied, and the fsync that ends the file finds
   little left to write; 1 GiB to a virtio disk: the fsync alone was 330
   ms after the copy). Its errors are the fsync's to report. */
#define WB_STEP (8u << 20)
static void
writeback_start(int fd, uint64_t *wb, uint64_t off)
{
  if (off - *wb < WB_STEP)
    return;
  (void)sync_file_range(fd, (off_t)*wb, (off_t)(off - *wb), SYNC_FILE_RANGE_WRITE);
  *wb = off;
}

static void *
wthread_main(void *arg)
{
  struct img_wthread *h = arg;
  pthread_mutex_lock(&h->mu);
  for (;;)
    {
      int e = 0;
      while (!h->buf && !h->stop)
        pthread_cond_wait(&h->cv, &h->mu);
      if (!h->buf)
        break;
      pthread_mutex_unlock(&h->mu);
      /* After a failed write wthread_put hands no buffer over. */
      if (write_all(h->fd, h->buf, h->len) < 0)
        e = errno ? errno : EIO;
      else
        writeback_start(h->fd, &h->wb, h->off += h->len);
      pthread_mutex_lock(&h->mu);
      if (e)
        h->werr = e;
      h->buf = NULL;
      pthread_cond_broadcast(&h->cv);
    }
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

/* Wait until the buffer handed over last is written; then hand
   BUF over (NULL: none; STOP: end the thread). The error number of a write
   that failed, or 0. */
static int
wthread_put(struct img_wthread *h, const void *buf, size_t len, bool stop)
{
  int e;
  pthread_mutex_lock(&h->mu);
  while (h->buf)
    pthread_cond_wait(&h->cv, &h->mu);
  e = h->werr;
  if (!e || stop)
    {
      h->buf = buf;
      h->len = len;
      h->stop = stop;
      pthread_cond_broadcast(&h->cv);
    }
  pthread_mutex_unlock(&h->mu);
  return e;
}

/* A thread started with every signal blocked: signals stay with the
   thread that waits for them (a dump's dump_interrupted, a restore's
   signalfd of SIGCHLD, which a thread with SIGCHLD unblocked would take
   and discard, leaving the restore's poll to its 1 s timeout). 0 or an
   error number. */
static int
start_quiet_thread(pthread_t *tid, void *(*fn)(void *), void *arg)
{
  sigset_t all, old;
  int e;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  e = pthread_create(tid, NULL, fn, arg);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return e;
}

int
img_out_async(struct img_out *o, crest_error_t *err)
{
  struct img_wthread *h = xzalloc(sizeof *h);
  int e;
  pthread_mutex_init(&h->mu, NULL);
  pthread_cond_init(&h->cv, NULL);
  h->fd = o->fd;
  e = start_quiet_thread(&h->tid, wthread_main, h);
  if (e != 0)
    {
      free(h);
      errno = e;
      return crest_error_errno(err, "image: writing thread");
    }
  o->h = h;
  return 0;
}

/* The error number of a write the thread failed, or 0. */
static int
wthread_end(struct img_out *o)
{
  int e;
  if (!o->h)
    return 0;
  e = wthread_put(o->h, NULL, 0, true);
  pthread_join(o->h->tid, NULL);
  pthread_mutex_destroy(&o->h->mu);
  pthread_cond_destroy(&o->h->cv);
  free(o->h);
  o->h = NULL;
  return e;
}

void
img_out_abort(struct img_out *o)
{
  wthread_end(o);
  if (o->fd >= 0)
    close(o->fd);
  o->fd = -1;
  free(o->name);
  o->name = NULL;
}

int
img_out_write(struct img_out *o, const void *buf, size_t len, crest_error_t *err)
{
  /* Every byte of a checkpoint goes through here: a caller gone or a
     signal to stop fails the dump within one write, not at its end. */
  if (dump_interrupted(err) < 0)
    return -1;
  if (strncmp(o->name, "pages-", 6) == 0 && o->size < (1 << 20) && o->size + len >= (1 << 20)
      && dump_fault("memory", err) < 0)
    return -1;
  digest_update(&o->dg, buf, len);
  if (o->h)
    {
      /* BUF is the thread's until the next call returns (the caller
         alternates two buffers). */
      int e = wthread_put(o->h, buf, len, false);
      if (e)
        {
          errno = e;
          return crest_error_errno(err, "image %s: write %s", o->w->final_dir, o->name);
        }
    }
  else if (write_all(o->fd, buf, len) < 0)
    return crest_error_errno(err, "image %s: write %s", o->w->final_dir, o->name);
  else
    writeback_start(o->fd, &o->wb, o->size + len);
  o->size += len;
  return 0;
}

int
img_out_close(struct img_out *o, crest_error_t *err)
{
  struct img_writer *w = o->w;
  struct img_file *f;
  int ret = 0, e;

  if ((e = wthread_end(o)))
    {
      errno = e;
      ret = crest_error_errno(err, "image %s: write %s", w->final_dir, o->name);
    }
  /* A full disk or an I/O error may only show at writeback: each file is
     on disk, or the checkpoint fails, before the manifest names it. Its
     writeback is started here and its fsync left to the commit
     (img_sync_files): one journal commit there covers every file, where an
     fsync at each close made one a file (a tree of 200 processes: 200). */
  if (ret == 0 && o->fd >= 0)
    (void)sync_file_range(o->fd, 0, 0, SYNC_FILE_RANGE_WRITE);
  if (o->fd >= 0 && close(o->fd) < 0 && ret == 0)
    ret = crest_error_errno(err, "image %s: close %s", w->final_dir, o->name);
  o->fd = -1;
  if (ret == 0)
    {
      w->files = xrealloc(w->files, (w->nfiles + 1) * sizeof *w->files);
      f = &w->files[w->nfiles++];
      f->name = o->name;
      f->size = o->size;
      f->alg = o->dg.alg;
      digest_final_hex(&o->dg, f->sha);
      o->name = NULL;
    }
  free(o->name);
  o->name = NULL;
  return ret;
}

int
img_write_file(struct img_writer *w, const char *name, const void *buf, size_t len,
               crest_error_t *err)
{
  struct img_out o;
  if (img_out_open(w, name, &o, err) < 0)
    return -1;
  if (img_out_write(&o, buf, len, err) < 0)
    {
      close(o.fd);
      free(o.name);
      return -1;
    }
  return img_out_close(&o, err);
}

int
img_write_json(struct img_writer *w, const char *name, yajl_gen g, crest_error_t *err)
{
  const unsigned char *buf;
  size_t len;
  if (yajl_gen_get_buf(g, &buf, &len) != yajl_gen_status_ok)
    return crest_error_make(err, 0, "image: cannot serialise %s", name);
  return img_write_file(w, name, buf, len, err);
}

/* Every file written is on disk (its fsync, through a descriptor opened
   again: a writeback error not yet seen is reported to it), or the
   checkpoint fails, before the manifest names them. */
static int
img_sync_files(struct img_writer *w, crest_error_t *err)
{
  for (size_t i = 0; i < w->nfiles; i++)
    {
      int fd = openat(w->dirfd, w->files[i].name, O_RDONLY | O_CLOEXEC);
      if (fd < 0 || fsync(fd) < 0)
        {
          crest_error_errno(err, "image %s: write %s", w->final_dir, w->files[i].name);
          if (fd >= 0)
            close(fd);
          return -1;
        }
      close(fd);
    }
  return 0;
}

int
img_writer_commit(struct img_writer *w, const char *config_digest, int format, crest_error_t *err)
{
  struct img_kernel k;
  yajl_gen g;
  const unsigned char *buf;
  size_t len;
  int ret;
  cleanup_close int fd = -1;

  if (img_kernel_identity(&k, err) < 0 || img_sync_files(w, err) < 0)
    return -1;
  g = yajl_gen_alloc(NULL);
  yajl_gen_config(g, yajl_gen_beautify, 1);
  yajl_gen_map_open(g);
  /* The oldest version that describes the image: what the caller asks
     for, or more if the writer was told of a field that needs it. */
  if ((w->pre_dump || w->parent_path) && format < CREST_IMAGE_FORMAT_CHAIN)
    format = CREST_IMAGE_FORMAT_CHAIN;
  for (size_t i = 0; i < w->nfiles; i++)
    if (w->files[i].alg != DIGEST_SHA256 && format < CREST_IMAGE_FORMAT_XXH)
      format = CREST_IMAGE_FORMAT_XXH;
  jput_int(g, "format", w->format > format ? w->format : format);
  jput_str(g, "crest_version", PACKAGE_VERSION);
  jput_key(g, "kernel");
  yajl_gen_map_open(g);
  jput_str(g, "release", k.release);
  jput_str(g, "machine", k.machine);
  jput_str(g, "vdso_sha256", k.vdso_sha);
  if (xsave_layout_here())
    xsave_layout_put(g, "xsave", xsave_layout_here());
  yajl_gen_map_close(g);
  jput_key(g, "config_digest");
  if (config_digest)
    yajl_gen_string(g, (const unsigned char *)config_digest, strlen(config_digest));
  else
    yajl_gen_null(g);
  if (w->pre_dump)
    jput_bool(g, "pre_dump", true);
  if (w->parent_path)
    {
      jput_key(g, "parent");
      yajl_gen_map_open(g);
      jput_str(g, "path", w->parent_path);
      jput_str(g, "manifest_sha256", w->parent_sha);
      yajl_gen_map_close(g);
    }
  jput_key(g, "files");
  yajl_gen_array_open(g);
  for (size_t i = 0; i < w->nfiles; i++)
    {
      yajl_gen_map_open(g);
      jput_str(g, "name", w->files[i].name);
      jput_int(g, "size", (long long)w->files[i].size);
      jput_str(g, digest_key(w->files[i].alg), w->files[i].sha);
      yajl_gen_map_close(g);
    }
  yajl_gen_array_close(g);
  yajl_gen_map_close(g);
  yajl_gen_get_buf(g, &buf, &len);

  fd = openat(w->dirfd, IMG_MANIFEST, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 || write_all(fd, buf, len) < 0 || fsync(fd) < 0)
    {
      ret = crest_error_errno(err, "image %s: write %s", w->final_dir, IMG_MANIFEST);
      yajl_gen_free(g);
      return ret;
    }
  yajl_gen_free(g);
  if (fsync(w->dirfd) < 0)
    return crest_error_errno(err, "image %s: fsync", w->final_dir);
  if (dump_fault("commit", err) < 0 || dump_interrupted(err) < 0)
    return -1;
  if (rename(w->tmp_dir, w->final_dir) < 0)
    return crest_error_errno(err, "image %s: rename %s into place", w->final_dir, w->tmp_dir);
  free(w->tmp_dir);
  w->tmp_dir = NULL;
  return 0;
}

void
img_writer_free(struct img_writer *w)
{
  if (!w)
    return;
  if (w->dirfd >= 0)
    close(w->dirfd);
  if (w->tmp_dir)
    {
      crest_error_t e = NULL;
      if (remove_tree(w->tmp_dir, &e) < 0)
        crest_error_report(&e);
    }
  for (size_t i = 0; i < w->nfiles; i++)
    free(w->files[i].name);
  free(w->files);
  free(w->tmp_dir);
  free(w->final_dir);
  free(w);
}

/* Generator helpers. */

void
jput_key(yajl_gen g, const char *k)
{
  yajl_gen_string(g, (const unsigned char *)k, strlen(k));
}

void
jput_str(yajl_gen g, const char *k, const char *s)
{
  if (k)
    jput_key(g, k);
  yajl_gen_string(g, (const unsigned char *)s, strlen(s));
}

void
jput_u64(yajl_gen g, const char *k, uint64_t v)
{
  char b[24];
  snprintf(b, sizeof b, "0x%" PRIx64, v);
  jput_str(g, k, b);
}

void
jput_int(yajl_gen g, const char *k, long long v)
{
  jput_key(g, k);
  yajl_gen_integer(g, v);
}

void
jput_bool(yajl_gen g, const char *k, bool v)
{
  jput_key(g, k);
  yajl_gen_bool(g, v);
}

void
jput_hex(yajl_gen g, const char *k, const void *buf, size_t len)
{
  cleanup_free char *s = xmalloc(2 * len + 1);
  crest_hex(buf, len, s);
  jput_str(g, k, s);
}

void
jput_extents(yajl_gen g, const uint64_t (*ext)[2], size_t n)
{
  jput_key(g, "extents");
  yajl_gen_array_open(g);
  for (size_t i = 0; i < n; i++)
    {
      yajl_gen_array_open(g);
      yajl_gen_integer(g, (long long)ext[i][0]);
      yajl_gen_integer(g, (long long)ext[i][1]);
      yajl_gen_array_close(g);
    }
  yajl_gen_array_close(g);
}

/* Format 11: BUF in hex, with each run of 3 or more zero bytes written as
   '_' and its length in 4 hex digits (up to 0xffff zeros a run). Returns
   true when a run was written (the image needs format 11 to be read). */
bool
jput_hex_runs(yajl_gen g, const char *k, const void *buf, size_t len)
{
  static const char digits[] = "0123456789abcdef";
  const uint8_t *p = buf;
  cleanup_free char *s = xmalloc(2 * len + 1);
  size_t o = 0;
  bool runs = false;
  for (size_t i = 0; i < len;)
    {
      size_t n = 0;
      while (i + n < len && p[i + n] == 0 && n < 0xffff)
        n++;
      if (n >= 3)
        {
          o += (size_t)snprintf(s + o, 6, "_%04zx", n);
          i += n, runs = true;
          continue;
        }
      s[o++] = digits[p[i] >> 4];
      s[o++] = digits[p[i] & 15];
      i++;
    }
  s[o] = 0;
  jput_str(g, k, s);
  return runs;
}

/* JSON getters. */

static yajl_val
jfind(yajl_val v, const char *key)
{
  if (!YAJL_IS_OBJECT(v))
    return NULL;
  /* The first byte before the call: most keys differ there (the plan
     looks up some 300,000 keys in a 200-process tree). */
  for (size_t i = 0; i < v->u.object.len; i++)
    if (v->u.object.keys[i][0] == key[0] && strcmp(v->u.object.keys[i], key) == 0)
      return v->u.object.values[i];
  return NULL;
}

int
jget_u64(yajl_val v, const char *key, uint64_t *out, crest_error_t *err)
{
  yajl_val x = jfind(v, key);
  if (x && YAJL_IS_STRING(x))
    {
      const char *s = x->u.string;
      char *end;
      /* Only "0x" and 1 to 16 hex digits: strtoull alone would also take
         a sign ("0x-1" is 2^64-1), spaces and a second "0x". */
      size_t nd = strncmp(s, "0x", 2) == 0 ? strspn(s + 2, "0123456789abcdefABCDEF") : 0;
      if (nd >= 1 && nd <= 16 && s[2 + nd] == 0)
        {
          errno = 0;
          *out = strtoull(s + 2, &end, 16);
          if (errno == 0 && *end == 0)
            return 0;
        }
      return crest_error_make(err, EINVAL, "key \"%s\": bad hexadecimal value", key);
    }
  if (x && YAJL_IS_INTEGER(x) && YAJL_GET_INTEGER(x) >= 0)
    {
      *out = (uint64_t)YAJL_GET_INTEGER(x);
      return 0;
    }
  return crest_error_make(err, EINVAL, "key \"%s\": missing or not an unsigned number", key);
}

int
jget_i64(yajl_val v, const char *key, int64_t *out, crest_error_t *err)
{
  yajl_val x = jfind(v, key);
  if (x && YAJL_IS_INTEGER(x))
    {
      *out = YAJL_GET_INTEGER(x);
      return 0;
    }
  return crest_error_make(err, EINVAL, "key \"%s\": missing or not an integer", key);
}

int
jget_str(yajl_val v, const char *key, const char **out, crest_error_t *err)
{
  yajl_val x = jfind(v, key);
  if (x && YAJL_IS_STRING(x))
    {
      *out = x->u.string;
      return 0;
    }
  return crest_error_make(err, EINVAL, "key \"%s\": missing or not a string", key);
}

int
jget_bool(yajl_val v, const char *key, bool *out, crest_error_t *err)
{
  yajl_val x = jfind(v, key);
  if (x && (YAJL_IS_TRUE(x) || YAJL_IS_FALSE(x)))
    {
      *out = YAJL_IS_TRUE(x);
      return 0;
    }
  return crest_error_make(err, EINVAL, "key \"%s\": missing or not a boolean", key);
}

long
jget_array(yajl_val v, const char *key, yajl_val **items, crest_error_t *err)
{
  yajl_val x = jfind(v, key);
  if (x && YAJL_IS_ARRAY(x))
    {
      *items = x->u.array.values;
      return (long)x->u.array.len;
    }
  return crest_error_make(err, EINVAL, "key \"%s\": missing or not an array", key);
}

long
jget_extents(yajl_val v, uint64_t limit, uint64_t align, long max, uint64_t dsize, const char *what,
             uint64_t (**ext)[2], crest_error_t *err)
{
  yajl_val *items;
  uint64_t end = 0, total = 0;
  long n = jget_array(v, "extents", &items, err);
  const char *bad = NULL;
  long i;
  *ext = NULL;
  if (n < 0)
    return crest_error_wrap(err, "%s", what);
  if (n > max)
    return crest_error_make(err, EINVAL, "%s: more than %ld extents", what, max);
  *ext = xzalloc((n + 1) * sizeof **ext);
  for (i = 0; i < n; i++)
    {
      yajl_val a = items[i];
      long long off, len;
      if (!YAJL_IS_ARRAY(a) || a->u.array.len != 2 || !YAJL_IS_INTEGER(a->u.array.values[0])
          || !YAJL_IS_INTEGER(a->u.array.values[1]))
        bad = "is not [offset, length]";
      else if ((off = YAJL_GET_INTEGER(a->u.array.values[0])) < 0
               || (len = YAJL_GET_INTEGER(a->u.array.values[1])) <= 0 || (uint64_t)off % align
               || (uint64_t)len % align)
        bad = "malformed or not aligned";
      else if ((uint64_t)off < end || (uint64_t)len > limit
               || (uint64_t)off > limit - (uint64_t)len)
        bad = "out of order or past the end";
      if (bad)
        break;
      (*ext)[i][0] = off, (*ext)[i][1] = len;
      end = off + len, total += len;
    }
  if (!bad && total == dsize)
    return n;
  free(*ext);
  *ext = NULL;
  if (bad)
    return crest_error_make(err, EINVAL, "%s: extent %ld %s", what, i, bad);
  return crest_error_make(err, EINVAL, "%s: extents hold %" PRIu64 " bytes, its data %" PRIu64,
                          what, total, dsize);
}

static int
unhex(int c)
{
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

int
hex_decode(const char *s, bool zero_runs, uint8_t *out, size_t max, size_t *len)
{
  size_t o = 0;
  while (*s)
    {
      if (*s == '_' && zero_runs)
        {
          size_t n = 0;
          for (int d = 1; d <= 4; d++)
            {
              int x = unhex(s[d]);
              if (x < 0)
                return -1;
              n = n << 4 | (size_t)x;
            }
          if (n == 0 || n > max - o)
            return n ? -2 : -1;
          memset(out + o, 0, n);
          o += n, s += 5;
          continue;
        }
      int hi = unhex(s[0]), lo = hi < 0 ? -1 : unhex(s[1]);
      if (hi < 0 || lo < 0)
        return -1;
      if (o == max)
        return -2;
      out[o++] = (uint8_t)(hi << 4 | lo);
      s += 2;
    }
  *len = o;
  return 0;
}

int
jget_xhex_into(yajl_val v, const char *key, bool zero_runs, uint8_t *out, size_t max, size_t *len,
               crest_error_t *err)
{
  const char *s;
  int r;
  if (jget_str(v, key, &s, err) < 0)
    return -1;
  size_t n = strlen(s);
  if ((!zero_runs && (n % 2 || n / 2 > max)) || (r = hex_decode(s, zero_runs, out, max, len)) == -2)
    return crest_error_make(err, EINVAL, "key \"%s\": hex string of bad length %zu", key, n);
  if (r < 0)
    return crest_error_make(err, EINVAL, "key \"%s\": not a hex string", key);
  return 0;
}

int
jget_hex_into(yajl_val v, const char *key, uint8_t *out, size_t max, size_t *len,
              crest_error_t *err)
{
  return jget_xhex_into(v, key, false, out, max, len, err);
}

int
jget_hex_alloc(yajl_val v, const char *key, size_t max, uint8_t **out, size_t *len,
               crest_error_t *err)
{
  const char *s;
  size_t n;
  uint8_t *b;
  if (jget_str(v, key, &s, err) < 0)
    return -1;
  n = strlen(s) / 2;
  b = xmalloc((n < max ? n : max) + 1);
  if (jget_hex_into(v, key, b, max, len, err) < 0)
    {
      free(b);
      return -1;
    }
  *out = b;
  return 0;
}

int
jget_hex(yajl_val v, const char *key, void *out, size_t len, crest_error_t *err)
{
  size_t n;
  uint8_t *b = xmalloc(len + 1);
  /* Into a scratch copy: OUT is left as it was when the value is wrong. */
  if (jget_hex_into(v, key, b, len, &n, err) < 0)
    {
      free(b);
      return -1;
    }
  if (n != len)
    {
      free(b);
      return crest_error_make(err, EINVAL, "key \"%s\": %zu bytes, expected %zu", key, n, len);
    }
  memcpy(out, b, len);
  free(b);
  return 0;
}

/* Reader. */

void
img_reader_close_fds(struct img_reader *r)
{
  if (r->dirfd >= 0)
    close(r->dirfd), r->dirfd = -1;
  for (size_t i = 0; i < r->nfiles; i++)
    if (r->files[i].fd >= 0)
      close(r->files[i].fd), r->files[i].fd = -1;
}

void
img_reader_free(struct img_reader *r)
{
  if (!r)
    return;
  if (r->late_running)
    pthread_join(r->late_tid, NULL);
  if (r->late_buf)
    munmap(r->late_buf, 1 << 20);
  img_reader_close_fds(r);
  for (size_t i = 0; i < r->nfiles; i++)
    free(r->files[i].name);
  free(r->files);
  free(r->dir);
  free(r->crest_version);
  free(r->config_digest);
  free(r->parent_path);
  free(r);
}

const struct img_file *
img_reader_find(struct img_reader *r, const char *name)
{
  for (size_t i = 0; i < r->nfiles; i++)
    if (strcmp(r->files[i].name, name) == 0)
      return &r->files[i];
  return NULL;
}

/* The digest (ALG) of the SIZE bytes of FD, in HEX, read through BUF
   (1 MiB): 0, or an errno value (EIO: shorter than SIZE). Allocates nothing
   and reports nothing, so that a thread may run it while its process
   forks. */
static int
hash_fd(int fd, uint64_t size, int alg, uint8_t *buf, char hex[65])
{
  struct digest s;
  digest_init(&s, alg);
  for (uint64_t done = 0; done < size;)
    {
      uint64_t left = size - done;
      ssize_t n = pread(fd, buf, left < (1 << 20) ? left : (1 << 20), (off_t)done);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return n < 0 ? errno : EIO;
      digest_update(&s, buf, n);
      done += n;
    }
  digest_final_hex(&s, hex);
  return 0;
}

static int
hash_check(struct img_reader *r, const struct img_file *f, int e, const char *hex,
           crest_error_t *err)
{
  if (e)
    return crest_error_sys(err, e, "image %s: file %s: read", r->dir, f->name);
  if (strcmp(hex, f->sha) != 0)
    return crest_error_make(err, EINVAL, "image %s: file %s: checksum mismatch (corrupted image)",
                            r->dir, f->name);
  return 0;
}

/* Open F for good: the descriptor the reader hashes is the one every later
   read of F goes through (img_reader_open_file hands out copies of it), so
   the bytes checked are the bytes used even if the directory changes
   meanwhile. O_NONBLOCK: an image whose file is a FIFO must be refused, not
   wait for a writer. A page file with LATE is only opened here: the
   reader's thread hashes it (img_reader_verified). */
static int
verify_file(struct img_reader *r, struct img_file *f, bool verify, int late, uint8_t *buf,
            crest_error_t *err)
{
  struct stat st;
  char hex[65];

  f->fd = openat(r->dirfd, f->name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  if (f->fd < 0)
    return crest_error_errno(err, "image %s: file %s", r->dir, f->name);
  if (fstat(f->fd, &st) < 0 || !S_ISREG(st.st_mode))
    return crest_error_make(err, EINVAL, "image %s: file %s: not a regular file", r->dir, f->name);
  if ((uint64_t)st.st_size != f->size)
    return crest_error_make(err, EINVAL, "image %s: file %s: size %lld, manifest says %" PRIu64,
                            r->dir, f->name, (long long)st.st_size, f->size);
  if (!verify)
    return 0;
  if (late == IMG_LATE_BLOCKS)
    {
      cleanup_free char *sums = img_sums_name(f->name);
      f->blocks = sums && img_reader_find(r, sums);
      if (f->blocks)
        return 0;
    }
  else if (late && strncmp(f->name, "pages-", 6) == 0)
    {
      f->late = true;
      return 0;
    }
  else if (late && strcmp(f->name, "tree.json") == 0)
    {
      f->on_read = true;
      return 0;
    }
  return hash_check(r, f, hash_fd(f->fd, f->size, f->alg, buf, hex), hex, err);
}

/* The reader's thread: every page file left to hash, one after the other,
   until one differs (late_bad, late_err). */
static void *
late_thread(void *arg)
{
  struct img_reader *r = arg;
  char hex[65];
  for (size_t i = 0; i < r->nfiles; i++)
    if (r->files[i].late)
      {
        int e = hash_fd(r->files[i].fd, r->files[i].size, r->files[i].alg, r->late_buf, hex);
        if (e || strcmp(hex, r->files[i].sha) != 0)
          {
            r->late_bad = (ssize_t)i;
            r->late_err = e;
            break;
          }
      }
  return NULL;
}

int
img_reader_verified(struct img_reader *r, crest_error_t *err)
{
  char hex[65] = "";
  if (!r->late_running)
    return 0;
  pthread_join(r->late_tid, NULL);
  r->late_running = false;
  if (r->late_bad < 0)
    return 0;
  /* Reported as the same check made at once would (HEX empty: differs). */
  return hash_check(r, &r->files[r->late_bad], r->late_err, hex, err);
}

/* The reader holds one descriptor per listed file: make room for them
   (the restore raises the limit the same way for its own descriptors). */
static int
reserve_fds(struct img_reader *r, size_t n, crest_error_t *err)
{
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
    return crest_error_errno(err, "image %s: getrlimit", r->dir);
  if (n + 64 <= rl.rlim_cur)
    return 0;
  if (rl.rlim_cur < rl.rlim_max)
    {
      rl.rlim_cur = rl.rlim_max;
      setrlimit(RLIMIT_NOFILE, &rl);
    }
  if (n + 64 > rl.rlim_cur)
    return crest_error_make(err, EMFILE,
                            "image %s: %s lists %zu files, more than this process may open (%llu)",
                            r->dir, IMG_MANIFEST, n, (unsigned long long)rl.rlim_cur);
  return 0;
}

/* Format 6: "pre_dump" and "parent" {path, manifest_sha256}. */
static int
chain_keys(struct img_reader *r, yajl_val root, crest_error_t *err)
{
  yajl_val pd = jfind(root, "pre_dump"), par = jfind(root, "parent");
  const char *path, *sha;
  if (!pd && !par)
    return 0;
  if (r->format < CREST_IMAGE_FORMAT_CHAIN)
    return crest_error_make(err, EINVAL, "image %s: %s: pre_dump or parent in format %d", r->dir,
                            IMG_MANIFEST, r->format);
  if (pd && jget_bool(root, "pre_dump", &r->pre_dump, err) < 0)
    return -1;
  if (!par)
    return 0;
  if (jget_str(par, "path", &path, err) < 0 || jget_str(par, "manifest_sha256", &sha, err) < 0)
    return -1;
  if (!*path || strlen(path) >= PATH_MAX || strlen(sha) != 64
      || strspn(sha, "0123456789abcdef") != 64)
    return crest_error_make(err, EINVAL, "image %s: %s: bad parent", r->dir, IMG_MANIFEST);
  r->parent_path = xstrdup(path);
  memcpy(r->parent_sha, sha, 65);
  return 0;
}

/* Parse the manifest TEXT into R: format, identity, the list of files
   (name, size, digest). The files themselves are the caller's. */
static int
manifest_parse(struct img_reader *r, const char *text, bool check_kernel, crest_error_t *err)
{
  const char *dir = r->dir;
  char ebuf[256];
  yajl_val root = NULL, *items;
  const char *s;
  int64_t fmt;
  long n;
#define FAIL(...)                                                                                  \
  do                                                                                               \
    {                                                                                              \
      if (!*err)                                                                                   \
        crest_error_make(err, EINVAL, __VA_ARGS__);                                                \
      else                                                                                         \
        crest_error_wrap(err, "image %s: %s", dir, IMG_MANIFEST);                                  \
      goto fail;                                                                                   \
    }                                                                                              \
  while (0)

  root = yajl_tree_parse(text, ebuf, sizeof ebuf);
  if (!root || !YAJL_IS_OBJECT(root))
    FAIL("image %s: %s: not valid JSON", dir, IMG_MANIFEST);
  if (jget_i64(root, "format", &fmt, err) < 0)
    FAIL("%s", "");
  if (fmt < 1 || fmt > CREST_IMAGE_FORMAT)
    FAIL("image %s: %s: format version %lld, this crest reads versions 1 to %d", dir, IMG_MANIFEST,
         (long long)fmt, CREST_IMAGE_FORMAT);
  r->format = fmt;
  if (jget_str(root, "crest_version", &s, err) < 0)
    FAIL("%s", "");
  r->crest_version = xstrdup(s);
  {
    yajl_val k = jfind(root, "kernel"), cd = jfind(root, "config_digest");
    const char *rel, *mach, *vd;
    if (!k || jget_str(k, "release", &rel, err) < 0 || jget_str(k, "machine", &mach, err) < 0
        || jget_str(k, "vdso_sha256", &vd, err) < 0)
      FAIL("image %s: %s: missing kernel identity", dir, IMG_MANIFEST);
    snprintf(r->kernel.release, sizeof r->kernel.release, "%s", rel);
    snprintf(r->kernel.machine, sizeof r->kernel.machine, "%s", mach);
    snprintf(r->kernel.vdso_sha, sizeof r->kernel.vdso_sha, "%s", vd);
    if (cd && YAJL_IS_STRING(cd))
      r->config_digest = xstrdup(cd->u.string);
    if (jfind(k, "xsave"))
      {
        if (xsave_layout_get(jfind(k, "xsave"), &r->xsave, err) < 0)
          FAIL("%s", "");
        r->has_xsave = true;
      }
  }
  if (check_kernel)
    {
      struct img_kernel me;
      if (img_kernel_identity(&me, err) < 0)
        goto fail;
      if (strcmp(me.machine, r->kernel.machine) != 0)
        FAIL("image %s: made on %s, this machine is %s", dir, r->kernel.machine, me.machine);
      if (strcmp(me.release, r->kernel.release) != 0
          || strcmp(me.vdso_sha, r->kernel.vdso_sha) != 0)
        FAIL("image %s: made on kernel %s (vDSO %.12s), this kernel is %s (vDSO %.12s): v1 "
             "restores on the "
             "same kernel build only",
             dir, r->kernel.release, r->kernel.vdso_sha, me.release, me.vdso_sha);
    }
  if (chain_keys(r, root, err) < 0)
    FAIL("%s", "");
  n = jget_array(root, "files", &items, err);
  if (n < 0)
    FAIL("%s", "");
  if (n > 1000000)
    FAIL("image %s: %s: %ld files", dir, IMG_MANIFEST, n);
  r->files = xzalloc((n + 1) * sizeof *r->files);
  for (long i = 0; i < n; i++)
    {
      const char *name, *sha;
      int64_t size;
      /* Each file has one digest: "sha256", or from format 10 on
         "xxh3_128" (img_digest_alg: the page files). */
      int alg = fmt >= CREST_IMAGE_FORMAT_XXH && jfind(items[i], "xxh3_128") ? DIGEST_XXH3_128
                                                                             : DIGEST_SHA256;
      if (jget_str(items[i], "name", &name, err) < 0 || jget_i64(items[i], "size", &size, err) < 0
          || jget_str(items[i], digest_key(alg), &sha, err) < 0)
        FAIL("%s", "");
      if (!img_name_ok(name) || strcmp(name, IMG_MANIFEST) == 0 || size < 0
          || strlen(sha) != 2 * digest_size(alg)
          || strspn(sha, "0123456789abcdef") != 2 * digest_size(alg)
          || (alg == DIGEST_XXH3_128 && jfind(items[i], "sha256")))
        FAIL("image %s: %s: bad entry %ld", dir, IMG_MANIFEST, i);
      if (img_reader_find(r, name))
        FAIL("image %s: %s: file %s listed twice", dir, IMG_MANIFEST, name);
      r->files[r->nfiles].fd = -1;
      r->files[r->nfiles].name = xstrdup(name);
      r->files[r->nfiles].size = size;
      r->files[r->nfiles].alg = alg;
      snprintf(r->files[r->nfiles].sha, sizeof r->files[r->nfiles].sha, "%s", sha);
      r->nfiles++;
    }
  yajl_tree_free(root);
  return 0;
fail:
#undef FAIL
  if (root)
    yajl_tree_free(root);
  return -1;
}

char *
img_sums_name(const char *pages)
{
  size_t n = strlen(pages);
  if (strncmp(pages, "pages-", 6) != 0 || n < 11 || strcmp(pages + n - 4, ".img") != 0)
    return NULL;
  return xasprintf("sums-%.*s.bin", (int)(n - 10), pages + 6);
}

int
img_reader_open(const char *dir, bool check_kernel, bool verify, struct img_reader **out,
                crest_error_t *err)
{
  return img_reader_open_late(dir, check_kernel, verify, false, out, err);
}

int
img_reader_open_late(const char *dir, bool check_kernel, bool verify, int late,
                     struct img_reader **out, crest_error_t *err)
{
  struct img_reader *r = xzalloc(sizeof *r);
  cleanup_free char *text = NULL;
  cleanup_free uint8_t *buf = NULL;
  cleanup_close int fd = -1;
  struct stat st;

  r->dirfd = -1;
  r->dir = xstrdup(dir);
  r->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
  if (r->dirfd < 0)
    {
      crest_error_errno(err, "image %s: open", dir);
      goto fail;
    }
  fd = openat(r->dirfd, IMG_MANIFEST, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  if (fd < 0)
    {
      crest_error_errno(err, "image %s: open %s", dir, IMG_MANIFEST);
      goto fail;
    }
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > (1 << 20))
    {
      crest_error_make(err, EINVAL, "image %s: %s: not a regular file of at most 1 MiB", dir,
                       IMG_MANIFEST);
      goto fail;
    }
  text = xmalloc(st.st_size + 1);
  if (read_all(fd, text, st.st_size) < 0)
    {
      crest_error_make(err, EINVAL, "image %s: %s: short read", dir, IMG_MANIFEST);
      goto fail;
    }
  text[st.st_size] = 0;
  sha256_hex_of(text, st.st_size, r->manifest_sha);
  if (manifest_parse(r, text, check_kernel, err) < 0 || reserve_fds(r, r->nfiles, err) < 0)
    goto fail;
  /* One read buffer for every file. */
  buf = xmalloc(1 << 20);
  for (size_t i = 0; i < r->nfiles; i++)
    if (verify_file(r, &r->files[i], verify, late, buf, err) < 0)
      goto fail;
  for (size_t i = 0; i < r->nfiles; i++)
    if (r->files[i].late && !r->late_running)
      {
        int e;
        /* Only the thread uses it, and the restore forks every task
           while the thread fills it: kept out of the forks (a copy of
           its pages for each task, and copy-on-write faults for the
           thread). */
        r->late_buf
            = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (r->late_buf == MAP_FAILED)
          {
            r->late_buf = NULL;
            crest_error_errno(err, "image %s: checksum buffer", dir);
            goto fail;
          }
        madvise(r->late_buf, 1 << 20, MADV_DONTFORK);
        r->late_bad = -1;
        if ((e = start_quiet_thread(&r->late_tid, late_thread, r)) != 0)
          {
            crest_error_sys(err, e, "image %s: start the checksum thread", dir);
            goto fail;
          }
        r->late_running = true;
      }
  *out = r;
  return 0;
fail:
  img_reader_free(r);
  return -1;
}

/* The in-memory image (image.h): the manifest as img_reader_open parses
   it, each file it lists one of FILES, of the size it says. */
int
img_reader_open_mem(const char *label, const char *manifest, size_t mlen,
                    const struct img_mem_file *files, size_t nfiles, struct img_reader **out,
                    crest_error_t *err)
{
  struct img_reader *r = xzalloc(sizeof *r);
  cleanup_free char *text = NULL;

  r->dirfd = -1;
  r->dir = xstrdup(label);
  if (mlen > (1 << 20))
    {
      crest_error_make(err, EINVAL, "image %s: %s: not a regular file of at most 1 MiB", label,
                       IMG_MANIFEST);
      goto fail;
    }
  text = xmalloc(mlen + 1);
  memcpy(text, manifest, mlen);
  text[mlen] = 0;
  if (manifest_parse(r, text, false, err) < 0)
    goto fail;
  for (size_t i = 0; i < r->nfiles; i++)
    {
      struct img_file *f = &r->files[i];
      const struct img_mem_file *m = NULL;
      for (size_t k = 0; k < nfiles && !m; k++)
        if (strcmp(files[k].name, f->name) == 0)
          m = &files[k];
      if (!m)
        {
          crest_error_make(err, ENOENT, "image %s: file %s: No such file or directory", label,
                           f->name);
          goto fail;
        }
      if (m->size != f->size)
        {
          crest_error_make(err, EINVAL,
                           "image %s: file %s: size %" PRIu64 ", manifest says %" PRIu64, label,
                           f->name, m->size, f->size);
          goto fail;
        }
      f->mem = m->data;
      f->mem_len = m->len < m->size ? m->len : m->size;
      f->in_mem = true;
    }
  *out = r;
  return 0;
fail:
  img_reader_free(r);
  return -1;
}

int
img_reader_open_file(struct img_reader *r, const char *name, uint64_t *size, crest_error_t *err)
{
  const struct img_file *f = img_reader_find(r, name);
  struct stat st;
  int fd;
  if (!f)
    return crest_error_make(err, ENOENT, "image %s: file %s is not in the manifest", r->dir, name);
  if (f->in_mem)
    return crest_error_make(err, EOPNOTSUPP, "image %s: file %s is in memory, it has no descriptor",
                            r->dir, name);
  if (f->on_read)
    {
      /* Read some other way than img_reader_json_tree: checked whole now. */
      cleanup_free uint8_t *buf = xmalloc(1 << 20);
      char hex[65];
      if (hash_check(r, f, hash_fd(f->fd, f->size, f->alg, buf, hex), hex, err) < 0)
        return -1;
      ((struct img_file *)f)->on_read = false;
    }
  if (f->fd < 0)
    return crest_error_make(err, EBADF, "image %s: file %s was not opened", r->dir, name);
  /* A copy of the descriptor the reader checked (see verify_file); copies
     share the file offset, so rewind it for a caller that reads in turn. */
  fd = fcntl(f->fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0)
    return crest_error_errno(err, "image %s: %s", r->dir, name);
  if (fstat(fd, &st) < 0 || (uint64_t)st.st_size != f->size || lseek(fd, 0, SEEK_SET) != 0)
    {
      close(fd);
      return crest_error_make(err, EINVAL, "image %s: file %s changed size", r->dir, name);
    }
  *size = f->size;
  return fd;
}

int
img_reader_read(struct img_reader *r, const char *name, size_t max, char **out, size_t *len,
                crest_error_t *err)
{
  uint64_t size;
  char hex[65];
  const struct img_file *f = img_reader_find(r, name);
  cleanup_close int fd = img_reader_open_file(r, name, &size, err);
  cleanup_free char *buf = NULL;
  if (fd < 0)
    return -1;
  if (size > max)
    return crest_error_make(err, EFBIG, "image %s: file %s: %" PRIu64 " bytes, more than %zu",
                            r->dir, name, size, max);
  buf = xmalloc(size + 1);
  if (read_all(fd, buf, size) < 0)
    return crest_error_make(err, EIO, "image %s: file %s: short read", r->dir, name);
  digest_hex_of(f->alg, buf, size, hex);
  if (strcmp(hex, f->sha) != 0)
    return crest_error_make(err, EINVAL, "image %s: file %s: checksum mismatch (corrupted image)",
                            r->dir, name);
  buf[size] = 0;
  *len = size;
  *out = buf;
  buf = NULL;
  return 0;
}

static int
pread_all(int fd, void *buf, size_t len, off_t off)
{
  for (size_t done = 0; done < len;)
    {
      ssize_t n = pread(fd, (char *)buf + done, len - done, off + (off_t)done);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return n == 0 ? (errno = EIO, -1) : -1;
      done += n;
    }
  return 0;
}

/* TEXT (LEN bytes) against F's digest (on_read). */
static int
text_check(struct img_reader *r, const struct img_file *f, const char *text, size_t len,
           crest_error_t *err)
{
  char hex[65];
  digest_hex_of(f->alg, text, len, hex);
  return hash_check(r, f, 0, hex, err);
}

/* NAME's text, whole and NUL-free, into *TEXT (malloc'd). *CHECK: the
   file that still has to be hashed, in these bytes (on_read), or NULL. */
static int
json_text(struct img_reader *r, const char *name, char **out, size_t *len,
          const struct img_file **check, crest_error_t *err)
{
  const struct img_file *f = img_reader_find(r, name);
  uint64_t size;
  cleanup_close int fd = -1;
  cleanup_free char *text = NULL;
  *check = NULL;
  if (f && f->on_read)
    {
      /* Its own descriptor, from its start: the one checked bytes come
         through, opened once (verify_file). */
      size = f->size;
      if (size > (256u << 20))
        return crest_error_make(err, EFBIG, "image %s: %s larger than 256 MiB", r->dir, name);
      text = xmalloc(size + 1);
      if (pread_all(f->fd, text, size, 0) < 0)
        return crest_error_errno(err, "image %s: read %s", r->dir, name);
      *check = f;
    }
  else if (f && f->in_mem)
    {
      /* Zeros after its bytes, or one among them: refused as the file
         would be, without a copy of up to 1 MiB (the fuzzer's speed). */
      if (f->mem_len < f->size || memchr(f->mem, 0, f->mem_len))
        return crest_error_make(err, EINVAL, "image %s: %s: NUL byte in JSON", r->dir, name);
      size = f->size;
    }
  else if ((fd = img_reader_open_file(r, name, &size, err)) < 0)
    return -1;
  if (!*check)
    {
      if (size > (256u << 20))
        return crest_error_make(err, EFBIG, "image %s: %s larger than 256 MiB", r->dir, name);
      text = xmalloc(size + 1);
      if (fd < 0)
        memcpy(text, f->mem, size);
      else if (read_all(fd, text, size) < 0)
        return crest_error_errno(err, "image %s: read %s", r->dir, name);
    }
  text[size] = 0;
  if (strlen(text) != size)
    {
      /* A changed file is named as such, as when it was hashed first. */
      if (*check && text_check(r, *check, text, size, err) < 0)
        return -1;
      return crest_error_make(err, EINVAL, "image %s: %s: NUL byte in JSON", r->dir, name);
    }
  *out = text;
  *len = size;
  text = NULL;
  return 0;
}

struct text_hash
{
  const struct img_file *f;
  const char *text;
  size_t len;
  char hex[65];
};

static void *
text_hash_main(void *arg)
{
  struct text_hash *h = arg;
  digest_hex_of(h->f->alg, h->text, h->len, h->hex);
  return NULL;
}

int
img_reader_json(struct img_reader *r, const char *name, yajl_val *out, crest_error_t *err)
{
  cleanup_free char *text = NULL;
  const struct img_file *check;
  size_t len;
  char ebuf[256];
  if (json_text(r, name, &text, &len, &check, err) < 0
      || (check && text_check(r, check, text, len, err) < 0))
    return -1;
  *out = yajl_tree_parse(text, ebuf, sizeof ebuf);
  if (!*out)
    return crest_error_make(err, EINVAL, "image %s: %s: invalid JSON: %s", r->dir, name, ebuf);
  return 0;
}

int
img_reader_json_tree(struct img_reader *r, const char *name, struct jtree **tree, yajl_val *out,
                     crest_error_t *err)
{
  cleanup_free char *text = NULL;
  const struct img_file *check;
  struct text_hash h;
  pthread_t tid;
  bool hashing = false;
  size_t len;
  char ebuf[256];
  int rc;
  if (json_text(r, name, &text, &len, &check, err) < 0)
    return -1;
  /* The digest is taken by a thread while the text is parsed (tree.json
     of a 200-process tree: 2.5 MB, a fifth of the restore's plan); the
     parsed tree is handed out only once the digest matched, and parsing
     has no effect outside this process. */
  if (check)
    {
      h.f = check, h.text = text, h.len = len;
      hashing = start_quiet_thread(&tid, text_hash_main, &h) == 0;
      if (!hashing && text_check(r, check, text, len, err) < 0)
        return -1;
    }
  rc = jtree_parse(text, len, tree, out, ebuf, sizeof ebuf);
  if (hashing)
    {
      pthread_join(tid, NULL);
      if (hash_check(r, check, 0, h.hex, err) < 0)
        {
          if (rc == 0)
            jtree_free(*tree);
          *tree = NULL, *out = NULL;
          return -1;
        }
    }
  if (rc < 0)
    return crest_error_make(err, EINVAL, "image %s: %s: invalid JSON: %s", r->dir, name, ebuf);
  return 0;
}
