/* crest: the image directory (docs/image-format.md): a manifest with a
 * checksum of every file, JSON metadata, binary page files. The writer works
 * in a temporary directory beside the target and renames it into place; the
 * reader refuses anything it cannot check. */
#ifndef CREST_IMAGE_H
#define CREST_IMAGE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>
#include "error.h"
#include "digest.h"
#include "sha256.h"

#define IMG_MANIFEST "manifest.json"

/* The digest a new image gives file NAME: XXH3-128 for the page files
   (pages-*.img, most of the bytes), SHA-256 for the rest. */
static inline int
img_digest_alg(const char *name)
{
  return strncmp(name, "pages-", 6) == 0 ? DIGEST_XXH3_128 : DIGEST_SHA256;
}

struct img_file
{
  char *name;
  uint64_t size;
  int alg;      /* its digest's algorithm (digest.h: img_digest_alg) */
  char sha[65]; /* its digest, in hex */
  int fd;       /* reader: the descriptor it was checked through; -1 */
  bool late;    /* reader: hashed by the reader's thread (img_reader_open_late) */
  /* reader: tree.json of img_reader_open_late, hashed where it is read, in
     the very bytes parsed (img_reader_json_tree: while they are parsed) */
  bool on_read;
  /* reader, IMG_LATE_BLOCKS: a page file whose block digests (its sums file)
     are checked where it is read (chain.c: chain_check_reads), not whole */
  bool blocks;
  /* An in-memory image's file (img_reader_open_mem): MEM_LEN bytes at MEM,
     zeros after them up to SIZE. */
  bool in_mem;
  const uint8_t *mem;
  size_t mem_len;
};

struct img_writer
{
  char *final_dir;
  char *tmp_dir;
  int dirfd;
  struct img_file *files;
  size_t nfiles;
  /* The manifest's format: 1, or 2 when tree.json uses a field an older
     crest would ignore and restore wrongly (docs/image-format.md). */
  int format;
  /* Pre-dumps (docs/engine.md, "Pre-dumps"): this image holds memory only
     ("pre_dump"), and/or takes pages from PARENT_PATH, whose manifest has
     the SHA-256 PARENT_SHA ("parent"). Format 6 when either is set. */
  bool pre_dump;
  const char *parent_path;
  char parent_sha[65];
  /* Every file's digest SHA-256, as crest wrote them before format 10
     (the unit tests write such images: older crest's, and images of a
     given older format). */
  bool sha256_only;
};

struct img_out
{
  struct img_writer *w;
  char *name;
  int fd;
  uint64_t size;
  uint64_t wb; /* up to where the file's writeback was started (image.c) */
  struct digest dg;
  struct img_wthread *h; /* img_out_async: the writes in a thread */
};

/* Identity of the running kernel, as recorded in and checked against the
   manifest. */
struct img_kernel
{
  char release[65];
  char machine[65];
  char vdso_sha[65];
};
int
img_kernel_identity(struct img_kernel *k, crest_error_t *err);

/* xsave.c: the XSAVE area's layout (standard format): XCR0, the size,
   and the offset and size of each component from 2 on (CPUID leaf 0xD). */
struct xsave_layout
{
  uint64_t xcr0;
  uint32_t size;
  uint32_t off[64], len[64];
  /* The components the kernel gives a task room for only once it uses
     them (extended feature disable, ECX bit 2: AMX's tile data); this
     CPU's only, not recorded. */
  uint64_t xfd;
};
/* This CPU's (read once); NULL without XSAVE. */
const struct xsave_layout *
xsave_layout_here(void);
void
xsave_layout_put(yajl_gen g, const char *key, const struct xsave_layout *l);
int
xsave_layout_get(yajl_val v, struct xsave_layout *l, crest_error_t *err);
bool
xsave_layout_same(const struct xsave_layout *a, const struct xsave_layout *b);
/* IN (INLEN bytes, laid out as FROM) into OUT (TO->size bytes, laid out as
   TO): every component in use moved to TO's offset; refused when TO lacks
   one or has it in another size. */
int
xsave_convert(const struct xsave_layout *from, const uint8_t *in, size_t inlen,
              const struct xsave_layout *to, uint8_t *out, crest_error_t *err);

int
img_writer_open(const char *final_dir, struct img_writer **out, crest_error_t *err);
int
img_out_open(struct img_writer *w, const char *name, struct img_out *o, crest_error_t *err);
int
img_out_write(struct img_out *o, const void *buf, size_t len, crest_error_t *err);
int
img_out_close(struct img_out *o, crest_error_t *err);
/* O's bytes written to the file by a thread while the caller hashes
   them and reads the next ones: after img_out_async, a buffer given to
   img_out_write must stay as it is until the next img_out_write, or
   img_out_close or img_out_abort, returns (two buffers in turn); a failed
   write is reported by the next of them. Fails only when the thread
   cannot start (then O writes and hashes in place). */
int
img_out_async(struct img_out *o, crest_error_t *err);
/* A failed O: its thread stopped, its descriptor closed, nothing recorded. */
void
img_out_abort(struct img_out *o);
int
img_write_file(struct img_writer *w, const char *name, const void *buf, size_t len,
               crest_error_t *err);
int
img_write_json(struct img_writer *w, const char *name, yajl_gen g, crest_error_t *err);
/* Write the manifest with format version FORMAT (see CREST_IMAGE_FORMAT),
   fsync, rename the temporary directory into place. */
int
img_writer_commit(struct img_writer *w, const char *config_digest, int format, crest_error_t *err);
/* Remove the temporary directory and free. Safe after commit (frees only). */
void
img_writer_free(struct img_writer *w);

struct img_reader
{
  char *dir;
  int dirfd;
  struct img_file *files;
  size_t nfiles;
  int format;
  char *crest_version;
  char *config_digest;
  struct img_kernel kernel;
  /* The XSAVE layout of the CPU the image was made on ("kernel"."xsave",
     written by crest since December 2026; absent before). */
  bool has_xsave;
  struct xsave_layout xsave;
  /* Format 6: "pre_dump", and "parent" (its path as written, and the
     SHA-256 its manifest must have); MANIFEST_SHA: this manifest's. */
  bool pre_dump;
  char *parent_path;
  char parent_sha[65];
  char manifest_sha[65];
  /* img_reader_open_late: the thread hashing the page files. */
  bool late_running;
  pthread_t late_tid;
  uint8_t *late_buf;
  ssize_t late_bad; /* the file that differs, or -1 */
  int late_err;
};

/* Open an image: parse the manifest, check format, kernel, architecture and
   vDSO against the running system (check_kernel), every file's size and
   (verify) its SHA-256. */
int
img_reader_open(const char *dir, bool check_kernel, bool verify, struct img_reader **out,
                crest_error_t *err);
/* The same, but with VERIFY and LATE the page files (pages-*) are only
   opened and sized: a thread of this process hashes them
   while the restore reads them into the tasks' memory, and
   img_reader_verified waits for its verdict, which must come before any
   restored task runs (restore-finish.c: finish_tree). The thread allocates
   nothing, so the process may fork meanwhile. LATE IMG_LATE_BLOCKS: a
   page file with a sums file (a pre-dump's, img_sums_name) is left to
   chain_check_reads, which checks the blocks a restore reads; one without
   is hashed at once. */
#define IMG_LATE_BLOCKS 2
int
img_reader_open_late(const char *dir, bool check_kernel, bool verify, int late,
                     struct img_reader **out, crest_error_t *err);
/* The name of page file PAGES's block digests ("pages-N.img": "sums-N.bin"),
   or NULL when PAGES is not a page file's name. */
char *
img_sums_name(const char *pages);
/* The verdict of the late checksums: 0 when every one matched (or none was
   late), else the error a check at open would have given. */
int
img_reader_verified(struct img_reader *r, crest_error_t *err);
/* An image held in memory, for the image fuzzer (tests/fuzz/): the text
   of its manifest, and FILES, of which each file the manifest lists must
   be one, of the size the manifest says. Checks as img_reader_open with
   check_kernel and verify false, without a system call: no descriptor,
   no checksum (the bytes cannot change under the reader). Only
   img_reader_find and img_reader_json work on such a reader, which is
   what planning a restore reads (crest_engine_plan); img_reader_open_file
   refuses. LABEL stands for the directory in messages. The bytes are the
   caller's and must outlive the reader. */
struct img_mem_file
{
  const char *name;
  const void *data;
  size_t len;    /* the bytes at DATA, */
  uint64_t size; /* and the file's size: zeros after them */
};
int
img_reader_open_mem(const char *label, const char *manifest, size_t mlen,
                    const struct img_mem_file *files, size_t nfiles, struct img_reader **out,
                    crest_error_t *err);
/* Every descriptor the reader holds closed (its files, its directory);
   the reader's other state stays, for img_reader_free. */
void
img_reader_close_fds(struct img_reader *r);
void
img_reader_free(struct img_reader *r);
/* The manifest entry for NAME, or NULL. */
const struct img_file *
img_reader_find(struct img_reader *r, const char *name);
/* Open NAME (which must be listed) read-only; *size is the checked size. */
int
img_reader_open_file(struct img_reader *r, const char *name, uint64_t *size, crest_error_t *err);
/* Parse NAME (listed, at most 256 MiB) as JSON. */
/* The whole of file NAME (at most MAX bytes), NUL-terminated in *OUT,
   read through the descriptor the reader checked and checked again against
   the manifest's checksum (it may have been rewritten since). */
int
img_reader_read(struct img_reader *r, const char *name, size_t max, char **out, size_t *len,
                crest_error_t *err);
int
img_reader_json(struct img_reader *r, const char *name, yajl_val *out, crest_error_t *err);
/* tree.json of a restore: the same values, in arenas (jtree.c) whose nodes
   can go before the tasks are forked while the strings stay. */
struct jtree;
int
img_reader_json_tree(struct img_reader *r, const char *name, struct jtree **tree, yajl_val *out,
                     crest_error_t *err);
int
jtree_parse(const char *text, size_t len, struct jtree **out, yajl_val *root, char *ebuf,
            size_t esize);
void
jtree_drop_nodes(struct jtree *t);
void
jtree_free(struct jtree *t);

/* JSON helpers: every getter checks type and range and names the key. */
int
jget_u64(yajl_val v, const char *key, uint64_t *out, crest_error_t *err);
int
jget_i64(yajl_val v, const char *key, int64_t *out, crest_error_t *err);
int
jget_str(yajl_val v, const char *key, const char **out, crest_error_t *err);
int
jget_bool(yajl_val v, const char *key, bool *out, crest_error_t *err);
/* Array under key (may be empty); returns its length or -1. */
long
jget_array(yajl_val v, const char *key, yajl_val **items, crest_error_t *err);
/* Hex string of exactly len bytes under key, decoded into out. */
int
jget_hex(yajl_val v, const char *key, void *out, size_t len, crest_error_t *err);
/* Hex S into OUT (at most MAX bytes, *LEN of them), with ZERO_RUNS the runs
   of format 11 ("_" and 4 hex digits: that many zero bytes). 0, -1 when S
   is not that, -2 when it holds more than MAX bytes. */
int
hex_decode(const char *s, bool zero_runs, uint8_t *out, size_t max, size_t *len);
/* As jget_hex_into, with ZERO_RUNS as hex_decode. */
int
jget_xhex_into(yajl_val v, const char *key, bool zero_runs, uint8_t *out, size_t max, size_t *len,
               crest_error_t *err);
/* BUF as hex with its zero runs (format 11); true when it wrote one. */
bool
jput_hex_runs(yajl_gen g, const char *k, const void *buf, size_t len);
/* The hex string KEY decoded into OUT, at most MAX bytes; *LEN bytes. */
int
jget_hex_into(yajl_val v, const char *key, uint8_t *out, size_t max, size_t *len,
              crest_error_t *err);
/* Hex string of any length (at most max bytes): newly allocated. */
int
jget_hex_alloc(yajl_val v, const char *key, size_t max, uint8_t **out, size_t *len,
               crest_error_t *err);

/* Where a data file's bytes go in the object it holds part of: the array
   "extents" of V, [offset, length] pairs, ascending and disjoint, each
   length above 0, each number a multiple of ALIGN (1: any), every extent
   inside [0, LIMIT), at most MAX of them, their lengths together DSIZE
   (the data file's size). *EXT: a new array of the pairs (one more entry
   than their number, which is returned). -1 with ERR naming WHAT. */
long
jget_extents(yajl_val v, uint64_t limit, uint64_t align, long max, uint64_t dsize, const char *what,
             uint64_t (**ext)[2], crest_error_t *err);

/* Generator helpers. */
void
jput_key(yajl_gen g, const char *k);
void
jput_str(yajl_gen g, const char *k, const char *s);
void
jput_u64(yajl_gen g, const char *k, uint64_t v); /* as "0x..." string */
void
jput_int(yajl_gen g, const char *k, long long v);
void
jput_bool(yajl_gen g, const char *k, bool v);
void
jput_hex(yajl_gen g, const char *k, const void *buf, size_t len);
/* "extents": N [offset, length] pairs. */
void
jput_extents(yajl_gen g, const uint64_t (*ext)[2], size_t n);

/* A file name inside an image: no '/', no leading '.', printable, short. */
bool
img_name_ok(const char *name);

#endif
