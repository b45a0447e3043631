/* crest: unit tests of the engine's image layer (TAP): SHA-256, the writer's
 * temporary directory and rename, and the reader's refusal of every kind of
 * damaged or hostile image. */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "engine.h"
#include "arena.h"
#include "dump-int.h"
#include "image.h"
#include "digest.h"
#include "sha256.h"
#include "affinity.h"
#include "tap.h"
#include "util.h"

static char base[256];

static bool
exists(const char *p)
{
  struct stat st;
  return stat(p, &st) == 0;
}

static void
put(const char *dir, const char *name, const char *text)
{
  cleanup_free char *path = xasprintf("%s/%s", dir, name);
  FILE *f;
  f = fopen(path, "w");
  fputs(text, f);
  fclose(f);
}

/* A minimal but complete process record; %s slots: rlimits, itimers, vmas,
   pages, fds, regs. */
#define TREE_FMT                                                                                   \
  "{\"root\": 10, \"processes\": [{\"pid\": 10, \"ppid\": 0, \"pgid\": 10, \"sid\": 10, \"exe\": " \
  "\"/bin/true\","                                                                                 \
  "\"cwd\": \"/\", \"umask\": 18, \"personality\": \"0x0\", \"oom_score_adj\": 0,"                 \
  "\"creds\": {\"uids\": [0,0,0,0], \"gids\": [0,0,0,0], \"groups\": [], \"cap_inh\": \"0x0\", "   \
  "\"cap_prm\": \"0x0\","                                                                          \
  "\"cap_eff\": \"0x0\", \"cap_bnd\": \"0x0\", \"cap_amb\": \"0x0\", \"securebits\": 0, "          \
  "\"no_new_privs\": false},"                                                                      \
  "\"rlimits\": [%s],"                                                                             \
  "\"mm\": {\"start_code\": \"0x1000\", \"end_code\": \"0x2000\", \"start_stack\": \"0x0\", "      \
  "\"start_data\": \"0x0\","                                                                       \
  "\"end_data\": \"0x0\", \"start_brk\": \"0x0\", \"brk\": \"0x0\", \"arg_start\": \"0x0\", "      \
  "\"arg_end\": \"0x0\","                                                                          \
  "\"env_start\": \"0x0\", \"env_end\": \"0x0\", \"auxv\": \"\"},"                                 \
  "\"sigactions\": [], \"itimers\": [%s], \"shared_pending\": [],"                                 \
  "\"vmas\": [%s], \"pages_file\": \"pages-10.img\", \"pages\": [%s],"                             \
  "\"fds\": [%s], \"threads\": [{\"tid\": 10, \"regs\": \"%s\", \"xstate\": \"\", \"sigmask\": "   \
  "\"0x0\","                                                                                       \
  "\"rseq\": \"0x0\", \"rseq_size\": 0, \"rseq_sig\": \"0x0\", \"robust_list\": \"0x0\", "         \
  "\"robust_len\": 0,"                                                                             \
  "\"clear_child_tid\": \"0x0\", \"altstack_sp\": \"0x0\", \"altstack_size\": \"0x0\", "           \
  "\"altstack_flags\": 2,"                                                                         \
  "\"sched_policy\": 0, \"sched_flags\": \"0x0\", \"nice\": 0, \"sched_priority\": 0, "            \
  "\"uclamp_min\": 0,"                                                                             \
  "\"uclamp_max\": 1024, \"comm\": \"t\", \"pending\": []}]}],"                                    \
  "\"files\": [{\"id\": 0, \"type\": \"dev\", \"path\": \"/dev/null\", \"flags\": 0, \"pos\": "    \
  "0}], \"pipes\": []}"

#define VMA_OK                                                                                     \
  "{\"start\": \"0x10000\", \"end\": \"0x20000\", \"prot\": 3, \"shared\": false, \"kind\": "      \
  "\"anon\"}"
#define PAGES_OK "{\"vaddr\": \"0x10000\", \"len\": \"0x2000\", \"off\": \"0x0\"}"
#define FDS_OK "{\"fd\": 0, \"cloexec\": false, \"file\": 0}"

/* When set, check_tree gives the tree's one file this type, adds this
   "terminal" object to the tree, these keys (tree_process_extra) and this
   "root_dir" member (JSON text: a key and its value) to its process;
   tree_format is the manifest's format. */
static const char *tree_file_type, *tree_terminal, *tree_process_extra, *tree_root_dir;
/* When set, the first occurrence of tree_find in the tree is replaced by
   tree_repl; tree_dup_thread gives the process a second thread with the
   same record (and so the same TID). */
static const char *tree_find, *tree_repl;
static bool tree_dup_thread;
static int tree_format = 1;

/* Write an image whose tree.json is built from the slots, with a page file
   of PAGES bytes; return crest_engine_check_image's verdict and message. */
static int
check_tree(const char *name, const char *vmas, const char *pages, const char *fds,
           size_t page_bytes, char **msg)
{
  char dir[512], rl[2048] = "", it[512] = "", regs[2 * 27 * 8 + 1];
  cleanup_free char *tree = NULL;
  cleanup_free char *zeros = xzalloc(page_bytes + 1);
  struct img_writer *w = NULL;
  crest_error_t err = NULL;
  int rc;

  for (int i = 0; i < 16; i++)
    strcat(rl,
           i ? ",{\"cur\": \"0x0\", \"max\": \"0x0\"}" : "{\"cur\": \"0x0\", \"max\": \"0x0\"}");
  for (int i = 0; i < 3; i++)
    strcat(it,
           i ? ",{\"interval_sec\": 0, \"interval_usec\": 0, \"value_sec\": 0, \"value_usec\": 0}"
             : "{\"interval_sec\": 0, \"interval_usec\": 0, \"value_sec\": 0, \"value_usec\": 0}");
  memset(regs, '0', sizeof regs - 1);
  regs[sizeof regs - 1] = 0;
  tree = xasprintf(TREE_FMT, rl, it, vmas, pages, fds, regs);
  if (tree_file_type)
    {
      char *t = strstr(tree, "\"type\": \"dev\"");
      char *edited = xasprintf("%.*s\"type\": \"%s\"%s", (int)(t - tree), tree, tree_file_type,
                               t + strlen("\"type\": \"dev\""));
      free(tree);
      tree = edited;
    }
  if (tree_process_extra)
    {
      char *t = strstr(tree, "\"pid\": 10, ");
      char *edited = xasprintf("%.*s%s, %s", (int)(t - tree), tree, tree_process_extra, t);
      free(tree);
      tree = edited;
    }
  if (tree_root_dir)
    {
      char *t = strstr(tree, "\"cwd\": \"/\",") + strlen("\"cwd\": \"/\",");
      char *edited = xasprintf("%.*s %s,%s", (int)(t - tree), tree, tree_root_dir, t);
      free(tree);
      tree = edited;
    }
  if (tree_find && strstr(tree, tree_find))
    {
      char *t = strstr(tree, tree_find);
      char *edited = xasprintf("%.*s%s%s", (int)(t - tree), tree, tree_repl, t + strlen(tree_find));
      free(tree);
      tree = edited;
    }
  if (tree_dup_thread)
    {
      char *a = strstr(tree, "{\"tid\": 10"), *e = strstr(a, "\"pending\": []}") + 14;
      char *edited = xasprintf("%.*s, %.*s%s", (int)(e - tree), tree, (int)(e - a), a, e);
      free(tree);
      tree = edited;
    }
  if (tree_terminal)
    {
      char *edited
          = xasprintf("%.*s, \"terminal\": %s}", (int)strlen(tree) - 1, tree, tree_terminal);
      free(tree);
      tree = edited;
    }
  snprintf(dir, sizeof dir, "%s/%s", base, name);
  if (img_writer_open(dir, &w, &err) == 0)
    /* The format is the test's: a page file with XXH3-128 would raise it
       to 10 (CREST_IMAGE_FORMAT_XXH). */
    w->sha256_only = tree_format < CREST_IMAGE_FORMAT_XXH;
  if (!w || img_write_file(w, "tree.json", tree, strlen(tree), &err) < 0
      || img_write_file(w, "pages-10.img", zeros, page_bytes, &err) < 0
      || img_writer_commit(w, NULL, tree_format, &err) < 0)
    {
      *msg = crest_error_text(err);
      crest_error_release(&err);
      return -2;
    }
  img_writer_free(w);
  rc = crest_engine_check_image(dir, &err);
  *msg = rc < 0 ? crest_error_text(err) : xstrdup("");
  crest_error_release(&err);
  return rc;
}

/* check_tree NAME with the valid slots and the optional members set at
   the moment: the image passes (WANT NULL), or is refused with WANT in the
   message. WHAT names the case in the test line. */
static void
expect_tree(const char *name, const char *want, const char *what)
{
  char *msg = NULL;
  int rc = check_tree(name, VMA_OK, PAGES_OK, FDS_OK, 0x2000, &msg);
  if (want)
    tap_ok(rc < 0 && msg && strstr(msg, want), "%s is refused: %s", what, msg);
  else
    tap_ok(rc == 0, "%s passes%s%s", what, msg && *msg ? ": " : "", msg ? msg : "");
  free(msg);
}

/* A top-level key's cases: its value, in an image of FORMAT, passes
   (EXPECT NULL) or is refused with EXPECT in the message. */
struct top_case
{
  const char *what, *value, *expect;
  int format;
};

static void
expect_top_key(const char *key, const struct top_case *v, size_t n)
{
  for (size_t i = 0; i < n; i++)
    {
      char name[32];
      cleanup_free char *rec = xasprintf("\"%s\": %s, \"processes\"", key, v[i].value);
      snprintf(name, sizeof name, "t-%s%zu", key, i);
      tree_find = "\"processes\"";
      tree_repl = rec;
      tree_format = v[i].format;
      expect_tree(name, v[i].expect, v[i].what);
    }
  tree_find = tree_repl = NULL;
  tree_format = 1;
}

/* Numbers, IDs and paths the format constrains (docs/image-format.md),
   each edited into an otherwise valid tree. */
static void
hostile_trees(void)
{
  static const struct
  {
    const char *what, *find, *repl, *want;
  } cases[] = {
    { "a hexadecimal number \"0x-1\"", "\"personality\": \"0x0\"", "\"personality\": \"0x-1\"",
      "bad hexadecimal" },
    { "a hexadecimal number \"0x 1\"", "\"personality\": \"0x0\"", "\"personality\": \"0x 1\"",
      "bad hexadecimal" },
    { "a hexadecimal number of 17 digits", "\"personality\": \"0x0\"",
      "\"personality\": \"0x10000000000000000\"", "bad hexadecimal" },
    { "a relative exe", "\"exe\": \"/bin/true\"", "\"exe\": \"bin/true\"", "not an absolute path" },
    { "a relative cwd", "\"cwd\": \"/\"", "\"cwd\": \".\"", "not an absolute path" },
    { "a page run at an unaligned offset", "\"len\": \"0x2000\", \"off\": \"0x0\"",
      "\"len\": \"0x1000\", \"off\": \"0x10\"", "page run 0" },
    { "a device that is not a memory device", "\"path\": \"/dev/null\"", "\"path\": \"/dev/sda\"",
      "not a device crest restores" },
    { "a relative file path", "\"path\": \"/dev/null\"", "\"path\": \"dev/null\"", "not absolute" },
    { "a file index of 2^32 (0 once cast to int)", "\"file\": 0", "\"file\": 4294967296",
      "malformed" },
    { "a pipe of 2^32 + 4096 bytes (4096 once cast to int)", "\"pipes\": []",
      "\"pipes\": [{\"ino\": \"0x5\", \"size\": 4294971392}]", "size 4294971392 out of range" },
    { "a pipe of negative size", "\"pipes\": []", "\"pipes\": [{\"ino\": \"0x5\", \"size\": -1}]",
      "out of range" },
    { "a descriptor on a pipe that is not listed", "\"type\": \"dev\"",
      "\"type\": \"pipe\", \"pipe\": \"0x9\", \"read_end\": true", "not in the pipe list" },
    { "a process group of 2^32 + 10 (10 once cast to pid_t)", "\"pgid\": 10",
      "\"pgid\": 4294967306", "bad ids" },
    { "UID 2^32 - 1", "\"uids\": [0,0,0,0]", "\"uids\": [4294967295,0,0,0]", "UID or GID" },
    { "a nice value of 40", "\"nice\": 0", "\"nice\": 40", "out of range" },
    { "an oom_score_adj of 5000", "\"oom_score_adj\": 0", "\"oom_score_adj\": 5000",
      "out of range" },
    { "an itimer of 2 million microseconds", "\"interval_usec\": 0", "\"interval_usec\": 2000000",
      "itimer 0 out of range" },
    { "a valid eventfd record", "\"type\": \"dev\"",
      "\"type\": \"eventfd\", \"count\": \"0x123456789\", \"semaphore\": true", NULL },
    { "an eventfd count of 2^64 - 1", "\"type\": \"dev\"",
      "\"type\": \"eventfd\", \"count\": \"0xffffffffffffffff\", \"semaphore\": false",
      "eventfd count out of range" },
    { "a signalfd mask with SIGKILL", "\"type\": \"dev\"",
      "\"type\": \"signalfd\", \"sigmask\": \"0x100\"", "SIGKILL or SIGSTOP" },
    { "a timerfd of 10^9 nanoseconds", "\"type\": \"dev\"",
      "\"type\": \"timerfd\", \"clockid\": 1, \"settime_flags\": 0, \"ticks\": \"0x0\", "
      "\"value_sec\": 1, \"value_nsec\": 1000000000, \"interval_sec\": 0, \"interval_nsec\": 0",
      "times out of range" },
    { "a timerfd on clock 3 (CLOCK_THREAD_CPUTIME_ID)", "\"type\": \"dev\"",
      "\"type\": \"timerfd\", \"clockid\": 3, \"settime_flags\": 0, \"ticks\": \"0x0\", "
      "\"value_sec\": 1, \"value_nsec\": 0, \"interval_sec\": 0, \"interval_nsec\": 0",
      "out of range" },
    { "an inotify watch on a relative path", "\"type\": \"dev\"",
      "\"type\": \"inotify\", \"watches\": [{\"wd\": 1, \"mask\": 2, \"path\": \"etc\"}]",
      "out of range" },
    { "an epoll target naming file 5 of 1", "\"type\": \"dev\"",
      "\"type\": \"epoll\", \"targets\": [{\"tfd\": 3, \"events\": 1, \"data\": \"0x0\", "
      "\"file\": 5}]",
      "out of range" },
  };
  for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
    {
      char name[32];
      snprintf(name, sizeof name, "t-hostile%zu", i);
      tree_find = cases[i].find, tree_repl = cases[i].repl;
      expect_tree(name, cases[i].want, cases[i].what);
    }
  tree_find = tree_repl = NULL;
  tree_dup_thread = true;
  expect_tree("t-duptid", "TID 10 appears twice", "two threads of one process with one TID");
  tree_dup_thread = false;
}

/* Run img_reader_open on DIR in a child that SIGALRM kills after 10 s:
   0 refused with WANT in the message, 1 accepted, 2 refused otherwise,
   3 it did not return (a FIFO waited for a writer). */
static int
open_bounded(const char *dir, const char *want)
{
  int st;
  pid_t pid = fork();
  if (pid == 0)
    {
      struct img_reader *r = NULL;
      crest_error_t err = NULL;
      alarm(10);
      if (img_reader_open(dir, false, true, &r, &err) == 0)
        _exit(1);
      _exit(err && strstr(err->msg, want) ? 0 : 2);
    }
  if (pid < 0 || waitpid(pid, &st, 0) < 0)
    return 3;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 3;
}

/* The XXH3-128 digest, in HEX, of A's N bytes fed in pieces of PIECE
   bytes after a first one of FIRST bytes (0: none). */
static void
xxh_pieces(const void *a, size_t n, size_t first, size_t piece, char hex[65])
{
  struct digest d;
  digest_init(&d, DIGEST_XXH3_128);
  if (first)
    digest_update(&d, a, first);
  for (size_t off = first; off < n; off += piece)
    digest_update(&d, (const char *)a + off, n - off < piece ? n - off : piece);
  digest_final_hex(&d, hex);
}

/* XXH3-128 (the page files' checksum) against xxhsum -H2 of the same
   bytes, and the same digest whether fed at once or in odd pieces. */
static void
digest_kat(void)
{
  struct digest d;
  uint8_t raw[32];
  char hex[65];
  char *a = xmalloc(1000000);
  digest_init(&d, DIGEST_XXH3_128);
  digest_final_hex(&d, hex);
  tap_is_str(hex, "99aa06d3014798d86001c324468d497f", "xxh3-128 of the empty string");
  digest_init(&d, DIGEST_XXH3_128);
  digest_update(&d, "abc", 3);
  digest_final_hex(&d, hex);
  tap_is_str(hex, "06b05ab6733a618578af5f94892f3950", "xxh3-128 of abc");
  memset(a, 'a', 1000000);
  xxh_pieces(a, 1000000, 0, 997, hex);
  tap_is_str(hex, "a545df8e384a9579b1fd6fae5285c4eb",
             "xxh3-128 of a million 'a', fed in 997-byte pieces");
  digest_of(DIGEST_XXH3_128, a, 1000000, raw);
  crest_hex(raw, 16, hex);
  tap_is_str(hex, "a545df8e384a9579b1fd6fae5285c4eb", "xxh3-128 of a million 'a' at once");
  tap_ok(digest_size(DIGEST_XXH3_128) == 16 && digest_size(DIGEST_SHA256) == 32
             && strcmp(digest_key(DIGEST_XXH3_128), "xxh3_128") == 0
             && strcmp(digest_key(DIGEST_SHA256), "sha256") == 0,
         "digest sizes 16 and 32, manifest keys xxh3_128 and sha256");
  free(a);
}

/* XXH3's two code paths (digest.c picks the faster at the first large
   update): the scalar one against the known value, and both, and the
   picked one, on 3 MiB of pseudo-random bytes at once and in odd pieces
   (a first piece large enough to make the pick). */
static void
digest_code_paths(void)
{
  const size_t n = 3u << 20;
  unsigned char *a = xmalloc(n);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  struct digest d;
  char hex[65], ref[65];
  const char *name[3] = { "vector", "scalar", "picked" };

  memset(a, 'a', 1000000);
  digest_xxh3_force(1);
  xxh_pieces(a, 1000000, 0, 997, hex);
  tap_is_str(hex, "a545df8e384a9579b1fd6fae5285c4eb",
             "xxh3-128, scalar code: a million 'a' in 997-byte pieces");
  for (size_t i = 0; i < n; i++)
    {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      a[i] = (unsigned char)(x >> 24);
    }
  digest_xxh3_force(0);
  digest_init(&d, DIGEST_XXH3_128);
  digest_update(&d, a, n);
  digest_final_hex(&d, ref);
  for (int code = 0; code < 3; code++)
    {
      bool same = true;
      digest_xxh3_force(code == 2 ? -1 : code);
      digest_init(&d, DIGEST_XXH3_128);
      digest_update(&d, a, n);
      digest_final_hex(&d, hex);
      same = same && strcmp(hex, ref) == 0;
      digest_xxh3_force(code == 2 ? -1 : code);
      xxh_pieces(a, n, (3u << 19) + 5, 4093, hex); /* a first 1.5 MiB: picks */
      same = same && strcmp(hex, ref) == 0;
      tap_ok(same, "xxh3-128, %s code: 3 MiB at once and in pieces, the vector code's digest %s",
             name[code], ref);
    }
  digest_xxh3_force(-1);
  free(a);
}

/* KEY's value for file NAME in DIR's manifest (a static buffer), or NULL. */
static const char *
manifest_digest(const char *dir, const char *name, const char *key, int64_t *format)
{
  static char out[80];
  char path[700], ebuf[128];
  cleanup_free char *text = NULL;
  yajl_val root, *items;
  const char *v = NULL, *n;
  crest_error_t err = NULL;
  long count;
  snprintf(path, sizeof path, "%s/manifest.json", dir);
  if (read_file(path, &text, NULL, 1 << 20, &err) < 0)
    crest_error_release(&err);
  root = text ? yajl_tree_parse(text, ebuf, sizeof ebuf) : NULL;
  if (!root)
    return NULL;
  jget_i64(root, "format", format, &err);
  count = jget_array(root, "files", &items, &err);
  for (long i = 0; i < count; i++)
    if (jget_str(items[i], "name", &n, &err) == 0 && strcmp(n, name) == 0)
      {
        const char *keypath[] = { key, NULL };
        yajl_val k = yajl_tree_get(items[i], keypath, yajl_t_string);
        v = k ? k->u.string : NULL;
      }
  snprintf(out, sizeof out, "%s", v ? v : "");
  crest_error_release(&err);
  yajl_tree_free(root);
  return v ? out : NULL;
}

/* A new image's page files carry XXH3-128 (format 10), its other files
   SHA-256; a changed page byte is found; an XXH3-128 entry in an image of
   format 9 or with a second digest is refused; an image whose page file has
   SHA-256 (older crest) still reads. */
static void
page_digests(void)
{
  char dir[600], path[700];
  struct img_writer *w = NULL;
  struct img_reader *r = NULL;
  crest_error_t err = NULL;
  int64_t fmt = 0;
  const char *x, *t;
  char *page = xzalloc(3 * 4096);
  int fd;
  for (int i = 0; i < 3 * 4096; i++)
    page[i] = (char)(i * 7);
  snprintf(dir, sizeof dir, "%s/xxh-img", base);
  if (img_writer_open(dir, &w, &err) == 0 && img_write_file(w, "tree.json", "{}", 2, &err) == 0
      && img_write_file(w, "pages-7.img", page, 3 * 4096, &err) == 0
      && img_writer_commit(w, NULL, 1, &err) == 0)
    {
      char want[65];
      uint8_t raw[32];
      img_writer_free(w);
      digest_of(DIGEST_XXH3_128, page, 3 * 4096, raw);
      crest_hex(raw, 16, want);
      x = manifest_digest(dir, "pages-7.img", "xxh3_128", &fmt);
      tap_is_str(x, want, "a page file's manifest entry is its xxh3_128");
      tap_ok(fmt == CREST_IMAGE_FORMAT_XXH && !manifest_digest(dir, "pages-7.img", "sha256", &fmt),
             "... in a format %d manifest (got %lld), with no sha256 beside it",
             CREST_IMAGE_FORMAT_XXH, (long long)fmt);
      t = manifest_digest(dir, "tree.json", "sha256", &fmt);
      tap_ok(t && strlen(t) == 64, "tree.json keeps its sha256 (%s)", t ? t : "none");
      tap_ok(img_reader_open(dir, false, true, &r, &err) == 0,
             "the image reads back, page file checked: %s", err ? err->msg : "");
      img_reader_free(r);
      r = NULL;
      crest_error_release(&err);
      snprintf(path, sizeof path, "%s/pages-7.img", dir);
      fd = open(path, O_WRONLY);
      if (fd >= 0)
        {
          if (pwrite(fd, "\x01", 1, 5000) != 1)
            perror("pwrite");
          close(fd);
        }
      tap_ok(img_reader_open(dir, false, true, &r, &err) < 0 && err
                 && strstr(err->msg, "pages-7.img: checksum mismatch"),
             "a page file with one byte changed is refused: %s", err ? err->msg : "(opened)");
      img_reader_free(r);
      r = NULL;
      crest_error_release(&err);
    }
  else
    tap_ok(false, "write the xxh3 test image: %s", err ? err->msg : "");
  crest_error_release(&err);

  /* The same manifest said to be format 9: an older crest would not know
     the key, so such an image is refused rather than read. */
  {
    char mpath[700];
    cleanup_free char *text = NULL, *edited = NULL;
    char *at;
    snprintf(mpath, sizeof mpath, "%s/manifest.json", dir);
    if (read_file(mpath, &text, NULL, 1 << 20, &err) < 0)
      crest_error_release(&err);
    at = text ? strstr(text, "\"format\": 10") : NULL;
    if (at)
      {
        edited = xasprintf("%.*s\"format\": 9%s", (int)(at - text), text, at + 12);
        put(dir, "manifest.json", edited);
      }
    tap_ok(at && img_reader_open(dir, false, false, &r, &err) < 0,
           "an xxh3_128 entry in a format 9 manifest is refused: %s", err ? err->msg : "(opened)");
    img_reader_free(r);
    r = NULL;
    crest_error_release(&err);
  }

  snprintf(dir, sizeof dir, "%s/sha-pages-img", base);
  if (img_writer_open(dir, &w, &err) == 0)
    {
      w->sha256_only = true;
      if (img_write_file(w, "pages-7.img", page, 3 * 4096, &err) == 0
          && img_writer_commit(w, NULL, 1, &err) == 0)
        {
          img_writer_free(w);
          w = NULL;
          x = manifest_digest(dir, "pages-7.img", "sha256", &fmt);
          tap_ok(x && strlen(x) == 64 && fmt == 1
                     && img_reader_open(dir, false, true, &r, &err) == 0,
                 "an image of format 1 whose page file has a sha256 (older crest) reads: %s",
                 err ? err->msg : "");
          img_reader_free(r);
          r = NULL;
        }
      if (w)
        img_writer_free(w);
    }
  crest_error_release(&err);
  free(page);
}

/* Image files that are not what the manifest says, and a file replaced
   after the reader checked it. */
static void
hostile_files(void)
{
  char dir[600], path[700], other[700];
  struct img_writer *w;
  struct img_reader *r = NULL;
  crest_error_t err = NULL;
  int rc;

  snprintf(dir, sizeof dir, "%s/fifo-img", base);
  if (img_writer_open(dir, &w, &err) == 0 && img_write_file(w, "a.img", "hello", 5, &err) == 0
      && img_writer_commit(w, NULL, 1, &err) == 0)
    {
      img_writer_free(w);
      snprintf(path, sizeof path, "%s/a.img", dir);
      unlink(path);
      mkfifo(path, 0600);
      rc = open_bounded(dir, "not a regular file");
      tap_ok(rc == 0, "an image file that is a FIFO is refused at once (result %d, 3: it waited)",
             rc);
      unlink(path);
      snprintf(path, sizeof path, "%s/manifest.json", dir);
      unlink(path);
      mkfifo(path, 0600);
      rc = open_bounded(dir, "not a regular file");
      tap_ok(rc == 0, "a manifest that is a FIFO is refused at once (result %d, 3: it waited)", rc);
    }
  else
    tap_ok(false, "write the FIFO test image: %s", err ? err->msg : "");
  crest_error_release(&err);

  snprintf(dir, sizeof dir, "%s/swap-img", base);
  if (img_writer_open(dir, &w, &err) == 0 && img_write_file(w, "a.img", "hello", 5, &err) == 0
      && img_writer_commit(w, NULL, 1, &err) == 0 && (img_writer_free(w), 1)
      && img_reader_open(dir, false, true, &r, &err) == 0)
    {
      char got[6] = "";
      uint64_t size = 0;
      int fd;
      FILE *f;
      snprintf(path, sizeof path, "%s/a.img", dir);
      snprintf(other, sizeof other, "%s/b.tmp", dir);
      f = fopen(other, "w");
      fputs("EVIL!", f);
      fclose(f);
      rename(other, path);
      fd = img_reader_open_file(r, "a.img", &size, &err);
      if (fd >= 0)
        {
          if (read(fd, got, 5) != 5)
            got[0] = 0;
          close(fd);
        }
      tap_is_str(got, "hello",
                 "a file replaced after the reader hashed it: the reader still reads what it "
                 "hashed");
      img_reader_free(r);
    }
  else
    tap_ok(false, "write the swap test image: %s", err ? err->msg : "");
  crest_error_release(&err);
}

/* A pre-dump page file's block digests (chain.c): the name beside it. */
static void
test_sums_name(void)
{
  char *s = img_sums_name("pages-42.img");
  tap_is_str(s, "sums-42.bin", "the sums file of pages-42.img");
  free(s);
  tap_ok(!img_sums_name("pages-.img") && !img_sums_name("file-1.img")
             && !img_sums_name("pages-1.imgx"),
         "no sums file name for what is not a page file");
}

/* The arena parser of a restore's tree.json (jtree.c): empty containers,
   alone and nested, parse to empty values (the fuzzer once found the empty
   top-level object copying from a scratch list not yet allocated). */
static void
test_jtree_empty(void)
{
  static const struct
  {
    const char *text;
    yajl_type type;
    size_t len;
  } cases[] = {
    { "{}", yajl_t_object, 0 },
    { "[]", yajl_t_array, 0 },
    { "{\"a\": [], \"b\": {}}", yajl_t_object, 2 },
    { "[[], {}, [[]]]", yajl_t_array, 3 },
  };
  for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
    {
      struct jtree *t = NULL;
      yajl_val root = NULL;
      char ebuf[128] = "";
      int rc = jtree_parse(cases[i].text, strlen(cases[i].text), &t, &root, ebuf, sizeof ebuf);
      size_t len = !root                         ? (size_t)-1
                   : root->type == yajl_t_object ? root->u.object.len
                   : root->type == yajl_t_array  ? root->u.array.len
                                                 : (size_t)-1;
      tap_ok(rc == 0 && root && root->type == cases[i].type && len == cases[i].len,
             "jtree parses %s (%zu entries at the top, %s)", cases[i].text, len,
             rc == 0 ? "no error" : ebuf);
      if (t)
        jtree_free(t);
    }
}

/* What a forked child makes of BYTE: 0 it read C there, 1 it read something
   else, 2 its write of C there went through, -1 it faulted (killed, or an
   ASan build's report and exit status: anything but the three codes). */
static int
child_sees(volatile char *byte, char c, bool write)
{
  pid_t pid = fork();
  int st;
  if (pid == 0)
    {
      if (write)
        {
          *byte = c;
          _exit(42);
        }
      _exit(*byte == c ? 40 : 41);
    }
  if (pid < 0 || waitpid(pid, &st, 0) != pid)
    return -2;
  return WIFEXITED(st) && WEXITSTATUS(st) >= 40 && WEXITSTATUS(st) <= 42 ? WEXITSTATUS(st) - 40
                                                                         : -1;
}

/* arena.h: what a forked task inherits of each kind, and the seal. */
static void
test_arena(void)
{
  struct arena a[3] = { { NULL, ARENA_PRIVATE }, { NULL, ARENA_SHARED }, { NULL, ARENA_DONTFORK } };
  static const char *const name[] = { "private", "shared", "dontfork" };
  static const int want[] = { 0, 0, -1 };
  for (int k = 0; k < 3; k++)
    {
      char *small = arena_alloc(&a[k], 10), *big = arena_alloc(&a[k], 300 << 10);
      bool zero = small && big && big[0] == 0 && big[(300 << 10) - 1] == 0 && small[9] == 0;
      tap_ok(small && big && ((uintptr_t)small | (uintptr_t)big) % 16 == 0 && zero,
             "arena (%s): 10 bytes and 300 KiB (more than a chunk), 16-aligned and zeroed",
             name[k]);
      if (!small || !big)
        continue;
      small[3] = 'q', big[100000] = 'r';
      tap_ok(child_sees(small + 3, 'q', false) == want[k]
                 && child_sees(big + 100000, 'r', false) == want[k],
             "arena (%s): a forked child %s", name[k],
             want[k] == 0 ? "reads what was written before the fork" : "has none of it (faults)");
    }
  {
    char *s = arena_alloc(&a[1], 16);
    s[0] = 'x';
    arena_seal(&a[1]);
    tap_ok(child_sees(s, 'x', false) == 0 && child_sees(s, 'y', true) == -1 && s[0] == 'x',
           "arena (shared), sealed: a child reads it, its write faults, nothing changed");
  }
  for (int k = 0; k < 3; k++)
    arena_free(&a[k]);
  tap_ok(!a[0].head && !a[1].head && !a[2].head, "arena_free leaves each arena empty");
}

/* The perms and name of the mapping of this process that holds ADDR, from
   /proc/self/maps (read by the engine's maps_line), in PERMS (5 bytes) and
   NAME (CAP bytes); false if none. */
static bool
mapping_of(const void *addr, char *perms, char *name, size_t cap)
{
  char line[512];
  bool found = false;
  FILE *f = fopen("/proc/self/maps", "r");
  while (f && !found && fgets(line, sizeof line, f))
    {
      struct maps_line m;
      line[strcspn(line, "\n")] = 0;
      if (maps_line(line, &m) && (uintptr_t)addr >= m.start && (uintptr_t)addr < m.end)
        {
          memcpy(perms, m.perms, sizeof m.perms);
          snprintf(name, cap, "%s", m.name);
          found = true;
        }
    }
  if (f)
    fclose(f);
  return found;
}

/* ARENA_FILE (the restore's plan): written shared, sealed into a private
   read-only mapping of its memfd, private again once unsealed. */
static void
test_arena_file(void)
{
  struct arena f = { NULL, ARENA_FILE };
  char *s = arena_alloc(&f, 16), *big = arena_alloc(&f, 300 << 10), perms[8] = "", name[256] = "";
  char bperms[8] = "", bname[256] = "";
  int sync[2] = { -1, -1 }, st = -1;
  pid_t pid = -1;
  bool fresh = s && big && ((uintptr_t)s | (uintptr_t)big) % 16 == 0 && s[15] == 0
               && big[(300 << 10) - 1] == 0;
  tap_ok(fresh, "arena (file): 16 bytes and 300 KiB, 16-aligned and zeroed");
  if (!fresh)
    return;
  s[0] = 'x', big[200000] = 'b';
  tap_ok(arena_seal(&f) == 0 && mapping_of(s, perms, name, sizeof name)
             && mapping_of(big, bperms, bname, sizeof bname) && strcmp(perms, "r--p") == 0
             && strcmp(bperms, "r--p") == 0 && strstr(name, "memfd:crest-plan")
             && strstr(bname, "memfd:crest-plan") && s[0] == 'x' && big[200000] == 'b',
         "arena (file), sealed: each chunk mapped privately and read-only from its memfd, "
         "the bytes kept (%s %s, %s %s)",
         perms, name, bperms, bname);
  tap_ok(child_sees(s, 'x', false) == 0 && child_sees(big + 200000, 'b', false) == 0
             && child_sees(s, 'y', true) == -1 && s[0] == 'x',
         "arena (file), sealed: a forked child reads it, its write faults, nothing changed");
  /* A child forked before the parent's write, which reads after it. */
  if (pipe(sync) == 0 && (pid = fork()) == 0)
    {
      char go;
      _exit(read(sync[0], &go, 1) == 1 && s[0] == 'x' && big[200000] == 'b' ? 0 : 1);
    }
  else if (sync[0] >= 0 && pid > 0)
    {
      arena_unseal(&f);
      s[0] = 'w', big[200000] = 'c';
      if (write(sync[1], "g", 1) != 1 || waitpid(pid, &st, 0) != pid)
        st = -1;
    }
  tap_ok(st == 0 && s[0] == 'w' && big[200000] == 'c' && child_sees(s, 'w', false) == 0,
         "arena (file), unsealed: the writes are the writer's own (a child forked before them "
         "still reads the bytes of the seal, one forked after reads them)");
  if (sync[0] >= 0)
    close(sync[0]), close(sync[1]);
  arena_free(&f);
  tap_ok(!f.head, "arena_free leaves the file arena empty");
}

/* jtree: the string values are sealed once parsed (a task that wrote one
   would change it for every other); the nodes are not shared. */
static void
test_jtree_strings(void)
{
  struct jtree *t = NULL;
  yajl_val root = NULL;
  char ebuf[128] = "";
  const char *text = "{\"path\": \"/a/b\", \"n\": 5}";
  int rc = jtree_parse(text, strlen(text), &t, &root, ebuf, sizeof ebuf);
  yajl_val v = rc == 0 && root && root->u.object.len == 2 ? root->u.object.values[0] : NULL;
  tap_ok(v && YAJL_IS_STRING(v) && strcmp(v->u.string, "/a/b") == 0
             && child_sees(v->u.string, '/', false) == 0 && child_sees(v->u.string, 'z', true) == -1
             && v->u.string[0] == '/',
         "jtree: a string value reads in a forked child, a write to it faults (%s)",
         rc == 0 ? "parsed" : ebuf);
  if (t)
    jtree_free(t);
}

/* Format 11's hex with zero runs (xstate): written and read back, and what
   the reader refuses. */
static void
test_hex_runs(void)
{
  static uint8_t buf[70000], back[70000];
  const unsigned char *out;
  size_t olen, len = 0;
  yajl_gen g = yajl_gen_alloc(NULL);
  yajl_val v;
  char ebuf[128];
  /* Runs of 1, 2, 3 and 70,000 - 9 zeros (over one run's 0xffff), bytes
     between and at both ends. */
  memset(buf, 0, sizeof buf);
  buf[0] = 0x7f, buf[2] = 1, buf[5] = 2, buf[9] = 0xab, buf[sizeof buf - 1] = 0xcd;
  yajl_gen_map_open(g);
  bool runs = jput_hex_runs(g, "x", buf, sizeof buf);
  yajl_gen_map_close(g);
  yajl_gen_get_buf(g, &out, &olen);
  v = yajl_tree_parse((const char *)out, ebuf, sizeof ebuf);
  const char *text = v ? v->u.object.values[0]->u.string : "";
  tap_ok(runs && v && strncmp(text, "7f0001000002_0003ab_ffff_", 25) == 0 && olen < 100
             && hex_decode(text, true, back, sizeof back, &len) == 0 && len == sizeof buf
             && memcmp(buf, back, sizeof buf) == 0,
         "hex with zero runs: %zu bytes in %zu characters, read back the same (%.25s...)",
         sizeof buf, olen, text);
  tap_ok(hex_decode(text, false, back, sizeof back, &len) == -1,
         "hex with zero runs: refused where the format has none");
  tap_ok(hex_decode(text, true, back, sizeof buf - 1, &len) == -2,
         "hex with zero runs: refused when it holds more than the room given");
  {
    static const char *const bad[]
        = { "_", "_01", "_000", "_0000", "0_0002", "abc", "_00g1", "zz" };
    int refused = 0;
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
      refused += hex_decode(bad[i], true, back, sizeof back, &len) == -1;
    tap_ok(refused == (int)ARRAY_SIZE(bad),
           "hex with zero runs: %d of %zu malformed strings refused (a short run, a zero run, "
           "half a byte, a non-digit)",
           refused, ARRAY_SIZE(bad));
  }
  tap_ok(hex_decode("00ff", true, back, sizeof back, &len) == 0 && len == 2 && back[1] == 0xff,
         "hex with zero runs: plain hex reads as before");
  yajl_tree_free(v);
  yajl_gen_free(g);
}

/* Lock records: the taker's PID of a flock line is kept (an OFD lock's
   -1 is none), and an image gives it only in format 14, only to a flock. */
static void
test_lock_records(void)
{
  struct lock_set ls;
  crest_error_t err = NULL;
  const char *info = "pos:\t0\nflags:\t02\nlock:\t1: FLOCK  ADVISORY  WRITE 4242 00:1f:12 0 EOF\n"
                     "lock:\t2: OFDLCK ADVISORY  READ  -1 00:1f:12 10 19\n";
  int r = locks_read(1, 3, info, "/f", &ls, &err);
  tap_ok(r == 0 && ls.n == 2 && ls.l[0].kind == LOCK_KIND_FLOCK && ls.l[0].owner == 4242
             && ls.l[1].kind == LOCK_KIND_OFD && ls.l[1].owner == 0 && ls.l[1].start == 10
             && ls.l[1].len == 10,
         "fdinfo lock lines: a flock's taker kept, an OFD lock's -1 read as none");
  crest_error_release(&err);
  static const struct
  {
    const char *json;
    int format;
    int64_t owner; /* -1: refused */
  } cases[] = {
    { "{\"locks\": [[2, 1, 0, 0, 77]]}", 14, 77 }, { "{\"locks\": [[2, 1, 0, 0, 77]]}", 13, -1 },
    { "{\"locks\": [[3, 1, 0, 0, 77]]}", 14, -1 }, { "{\"locks\": [[2, 1, 0, 0, 0]]}", 14, -1 },
    { "{\"locks\": [[2, 1, 0, 0]]}", 14, 0 },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    {
      char ebuf[128];
      yajl_val v = yajl_tree_parse(cases[i].json, ebuf, sizeof ebuf);
      r = locks_parse(v, cases[i].format, (1u << LOCK_KIND_FLOCK) | (1u << LOCK_KIND_OFD), &ls,
                      &err);
      if (cases[i].owner < 0)
        tap_ok(r < 0 && err, "locks %s in format %d refused", cases[i].json, cases[i].format);
      else
        tap_ok(r == 0 && ls.n == 1 && ls.l[0].owner == cases[i].owner,
               "locks %s in format %d: taker %lld", cases[i].json, cases[i].format,
               (long long)cases[i].owner);
      crest_error_release(&err);
      yajl_tree_free(v);
    }
}

/* CPU lists (affinity.c), as an image's thread "affinity" holds them. */
static void
test_cpulist(void)
{
  cpu_set_t s;
  char b[64];
  CPU_ZERO(&s);
  CPU_SET(0, &s), CPU_SET(2, &s), CPU_SET(3, &s), CPU_SET(4, &s), CPU_SET(9, &s);
  cpulist_format(&s, b, sizeof b);
  tap_is_str(b, "0,2-4,9", "a CPU set as a list: single CPUs and ranges");
  tap_ok(cpulist_parse("0,2-4,9\n", &s) == 0 && CPU_COUNT(&s) == 5 && CPU_ISSET(3, &s)
             && !CPU_ISSET(1, &s) && CPU_ISSET(9, &s),
         "the list read back (a trailing newline, as /sys has it)");
  tap_ok(cpulist_parse("", &s) < 0 && cpulist_parse("3-1", &s) < 0 && cpulist_parse("1,,2", &s) < 0
             && cpulist_parse("x", &s) < 0 && cpulist_parse("1024", &s) < 0
             && cpulist_parse("-1", &s) < 0 && cpulist_parse("0-99999999999999999999", &s) < 0,
         "empty, reversed, doubled commas, not a number, beyond CPU_SETSIZE: refused");
}

int
main(void)
{
  char hex[65], dir[512], path[600];
  struct img_writer *w;
  struct img_reader *r;
  crest_error_t err = NULL;
  char *msg;

  test_sums_name();
  test_jtree_empty();
  test_arena();
  test_arena_file();
  test_jtree_strings();
  test_hex_runs();
  test_lock_records();
  test_cpulist();
  /* SHA-256 against the FIPS 180-4 examples. */
  sha256_hex_of("", 0, hex);
  tap_is_str(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
             "sha256 of the empty string");
  sha256_hex_of("abc", 3, hex);
  tap_is_str(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
             "sha256 of abc");
  sha256_hex_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, hex);
  tap_is_str(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
             "sha256 of the 448-bit example");
  {
    char *a = xmalloc(1000000);
    struct sha256 s;
    uint8_t d[32];
    memset(a, 'a', 1000000);
    sha256_init(&s);
    for (size_t off = 0; off < 1000000; off += 997) /* odd chunks cross block boundaries */
      sha256_update(&s, a + off, 1000000 - off < 997 ? 1000000 - off : 997);
    sha256_final(&s, d);
    sha256_hex(d, hex);
    tap_is_str(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
               "sha256 of a million 'a', fed in 997-byte pieces");
    free(a);
  }

  /* The SHA-instruction path and the portable one agree on every length
     around block boundaries. */
  if (!sha256_accelerated())
    printf("ok %d # SKIP this CPU has no SHA instructions: only the portable SHA-256 runs\n",
           ++tap_n);
  else
    {
      uint8_t *data = xmalloc(4096);
      int mismatch = -1;
      for (int i = 0; i < 4096; i++)
        data[i] = (uint8_t)(i * 131 + (i >> 5));
      for (int len = 0; len < 4096 && mismatch < 0; len += len < 300 ? 1 : 61)
        {
          char a[65], b[65];
          sha256_set_portable(1);
          sha256_hex_of(data, len, a);
          sha256_set_portable(0);
          sha256_hex_of(data, len, b);
          if (strcmp(a, b))
            mismatch = len;
        }
      tap_ok(
          mismatch < 0,
          "SHA-instruction and portable SHA-256 agree on 0..4095-byte inputs (first mismatch: %d)",
          mismatch);
      free(data);
    }

  digest_kat();
  digest_code_paths();

  snprintf(base, sizeof base, "/tmp/crest-engine-image.XXXXXX");
  if (!mkdtemp(base))
    {
      printf("Bail out! mkdtemp: %s\n", strerror(errno));
      return 1;
    }
  page_digests();

  /* Writer: temporary directory, rename at commit, removal on abort. */
  snprintf(dir, sizeof dir, "%s/img", base);
  tap_ok(img_writer_open(dir, &w, &err) == 0, "writer opens");
  tap_ok(exists(w->tmp_dir) && !exists(dir),
         "the image is written into a temporary directory beside the target");
  tap_ok(img_write_file(w, "a.img", "hello", 5, &err) == 0, "a file is written");
  tap_ok(img_write_file(w, "../evil", "x", 1, &err) < 0,
         "a file name leaving the image is refused");
  crest_error_release(&err);
  tap_ok(img_writer_commit(w, "abc123", 1, &err) == 0 && exists(dir),
         "commit renames it into place");
  img_writer_free(w);
  tap_ok(exists(dir), "freeing a committed writer keeps the image");
  snprintf(path, sizeof path, "%s/img2", base);
  img_writer_open(path, &w, &err);
  {
    cleanup_free char *tmp = xstrdup(w->tmp_dir);
    img_write_file(w, "a.img", "x", 1, &err);
    img_writer_free(w);
    tap_ok(!exists(tmp) && !exists(path),
           "an aborted image leaves neither the temporary nor the final directory");
  }

  /* Reader. */
  tap_ok(img_reader_open(dir, true, true, &r, &err) == 0,
         "the reader accepts the image (same kernel)");
  if (r)
    {
      const struct img_file *f = img_reader_find(r, "a.img");
      tap_ok(f && f->size == 5 && r->config_digest && strcmp(r->config_digest, "abc123") == 0,
             "manifest lists a.img with its size, and the config digest");
      tap_ok(r->format == 1, "an image without a stopped task is format 1 (got %d)", r->format);
      img_reader_free(r);
    }
  /* Format 2 (a stopped task in the tree): written when asked, read back. */
  snprintf(path, sizeof path, "%s/img-f2", base);
  {
    struct img_reader *r2 = NULL;
    int ok_ = img_writer_open(path, &w, &err) == 0;
    if (ok_)
      {
        w->format = 2;
        ok_ = img_write_file(w, "a.img", "x", 1, &err) == 0
              && img_writer_commit(w, NULL, 1, &err) == 0;
        img_writer_free(w);
      }
    tap_ok(ok_ && img_reader_open(path, true, true, &r2, &err) == 0 && r2->format == 2,
           "a format 2 image is written and read back as format 2%s%s", err ? ": " : "",
           err ? err->msg : "");
    crest_error_release(&err);
    if (r2)
      img_reader_free(r2);
  }
  snprintf(path, sizeof path, "%s/a.img", dir);
  {
    FILE *f = fopen(path, "r+");
    fputc('J', f);
    fclose(f);
  }
  tap_ok(img_reader_open(dir, true, true, &r, &err) < 0 && strstr(err->msg, "a.img")
             && strstr(err->msg, "checksum"),
         "a changed byte is refused, naming the file: %s", err ? err->msg : "");
  crest_error_release(&err);
  tap_ok(truncate(path, 3) == 0 && img_reader_open(dir, true, true, &r, &err) < 0
             && strstr(err->msg, "size"),
         "a truncated file is refused: %s", err ? err->msg : "");
  crest_error_release(&err);
  unlink(path);
  tap_ok(img_reader_open(dir, true, true, &r, &err) < 0 && strstr(err->msg, "a.img"),
         "a missing file is refused: %s", err ? err->msg : "");
  crest_error_release(&err);

  /* Hostile manifests. */
  {
    static const struct
    {
      const char *what, *manifest, *expect;
    } bad[] = {
      { "not JSON", "{\"format\": 1,", "JSON" },
      { "format 99", "{\"format\": 99, \"crest_version\": \"x\", \"kernel\": {}, \"files\": []}",
        "format version 99" },
      { "format 0", "{\"format\": 0, \"crest_version\": \"x\", \"kernel\": {}, \"files\": []}",
        "format version 0" },
      { "no kernel identity", "{\"format\": 1, \"crest_version\": \"x\", \"files\": []}",
        "kernel" },
      { "a path outside the image",
        "{\"format\": 1, \"crest_version\": \"x\", \"kernel\": {\"release\": \"%s\", \"machine\": "
        "\"%s\", "
        "\"vdso_sha256\": \"%s\"}, \"files\": [{\"name\": \"../../etc/passwd\", \"size\": 1, "
        "\"sha256\": "
        "\"0000000000000000000000000000000000000000000000000000000000000000\"}]}",
        "bad entry" },
      { "a negative size",
        "{\"format\": 1, \"crest_version\": \"x\", \"kernel\": {\"release\": \"%s\", \"machine\": "
        "\"%s\", "
        "\"vdso_sha256\": \"%s\"}, \"files\": [{\"name\": \"x\", \"size\": -5, \"sha256\": "
        "\"0000000000000000000000000000000000000000000000000000000000000000\"}]}",
        "bad entry" },
      { "another machine",
        "{\"format\": 1, \"crest_version\": \"x\", \"kernel\": {\"release\": \"%s\", \"machine\": "
        "\"aarch64-%s\", "
        "\"vdso_sha256\": \"%s\"}, \"files\": []}",
        "this machine is" },
      { "another vDSO",
        "{\"format\": 1, \"crest_version\": \"x\", \"kernel\": {\"release\": \"%s\", \"machine\": "
        "\"%s\", "
        "\"vdso_sha256\": \"0%.63s\"}, \"files\": []}",
        "same kernel build" },
    };
    struct img_kernel k;
    img_kernel_identity(&k, &err);
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
      {
        char d[512];
        cleanup_free char *m = NULL;
        snprintf(d, sizeof d, "%s/bad%zu", base, i);
        mkdir(d, 0700);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        m = xasprintf(bad[i].manifest, k.release, k.machine, k.vdso_sha);
#pragma GCC diagnostic pop
        put(d, "manifest.json", m);
        tap_ok(img_reader_open(d, true, true, &r, &err) < 0 && err
                   && strstr(err->msg, bad[i].expect),
               "manifest with %s is refused: %s", bad[i].what, err ? err->msg : "(accepted)");
        crest_error_release(&err);
      }
  }

  /* Tree bounds: every index checked against the file it points into. */
  tap_ok(check_tree("t-ok", VMA_OK, PAGES_OK, FDS_OK, 0x2000, &msg) == 0,
         "a consistent tree passes: %s", msg);
  free(msg);
  tap_ok(check_tree("t-past", VMA_OK, PAGES_OK, FDS_OK, 0x1000, &msg) < 0 && strstr(msg, "outside"),
         "a page run past the end of the page file is refused: %s", msg);
  free(msg);
  tap_ok(check_tree("t-unmapped", VMA_OK,
                    "{\"vaddr\": \"0x30000\", \"len\": \"0x1000\", \"off\": \"0x0\"}", FDS_OK,
                    0x2000, &msg)
                 < 0
             && strstr(msg, "no private mapping"),
         "a page run outside every mapping is refused: %s", msg);
  free(msg);
  tap_ok(check_tree("t-wrap", VMA_OK,
                    "{\"vaddr\": \"0x10000\", \"len\": \"0xfffffffffffff000\", \"off\": \"0x0\"}",
                    FDS_OK, 0x2000, &msg)
             < 0,
         "a page run whose length wraps around is refused: %s", msg);
  free(msg);
  tap_ok(
      check_tree("t-overlap",
                 VMA_OK
                 ",{\"start\": \"0x18000\", \"end\": \"0x28000\", \"prot\": 3, \"shared\": false, "
                 "\"kind\": \"anon\"}",
                 PAGES_OK, FDS_OK, 0x2000, &msg)
              < 0
          && strstr(msg, "malformed"),
      "overlapping mappings are refused: %s", msg);
  free(msg);
  tap_ok(check_tree(
             "t-kernel",
             "{\"start\": \"0xffff800000000000\", \"end\": \"0xffff800000001000\", \"prot\": 3, "
             "\"shared\": false, \"kind\": \"anon\"}",
             "", FDS_OK, 0, &msg)
             < 0,
         "a mapping in kernel space is refused: %s", msg);
  free(msg);
  tap_ok(check_tree("t-fd", VMA_OK, PAGES_OK, "{\"fd\": 0, \"cloexec\": false, \"file\": 7}",
                    0x2000, &msg)
                 < 0
             && strstr(msg, "names file 7"),
         "a descriptor naming a file that is not in the image is refused: %s", msg);
  free(msg);
  tap_ok(check_tree("t-kind",
                    "{\"start\": \"0x10000\", \"end\": \"0x20000\", \"prot\": 3, \"shared\": true, "
                    "\"kind\": \"anon\"}",
                    "", FDS_OK, 0, &msg)
             < 0,
         "a shared anonymous mapping is refused: %s", msg);
  free(msg);

  /* The container's terminal: a "tty" file and the "terminal" object. */
  {
    static const char cc[] = "\"0300000000000000000000000000000000000000000000000000000000000000\"";
#define TERM_FMT                                                                                   \
  "{\"iflag\": 1280, \"oflag\": 5, \"cflag\": 191, \"lflag\": %s, \"ispeed\": 15, "                \
  "\"ospeed\": 15, \"line\": 0, \"cc\": %s, \"rows\": %s, \"cols\": 101, \"xpixel\": 0, "          \
  "\"ypixel\": 0, \"fg_pgid\": 10}"
    cleanup_free char *good = xasprintf(TERM_FMT, "35378", cc, "33");
    cleanup_free char *big = xasprintf(TERM_FMT, "35378", cc, "70000");
    cleanup_free char *short_cc = xasprintf(TERM_FMT, "35378", "\"03\"", "33");
    cleanup_free char *no_lflag = xasprintf(TERM_FMT, "\"x\"", cc, "33");
#undef TERM_FMT
    tree_file_type = "tty";
    tree_terminal = good;
    expect_tree("t-tty", NULL, "a tty file with a terminal object");
    tree_terminal = big;
    expect_tree("t-tty-rows", "rows 70000 out of range", "a terminal with 70000 rows");
    tree_terminal = short_cc;
    expect_tree("t-tty-cc", "cc", "a terminal whose cc is 1 byte, not sizeof c_cc");
    tree_terminal = no_lflag;
    expect_tree("t-tty-lflag", "lflag", "a terminal whose lflag is not a number");
    tree_terminal = NULL;
    tree_file_type = "console";
    expect_tree("t-type", "unknown type console", "a file of an unknown type");
    tree_file_type = NULL;
  }

  /* A process in a group stop: its stop signal, and what its parent had
     collected. */
  {
    static const struct
    {
      const char *what, *extra, *expect; /* expect NULL: it passes */
    } stop[] = {
      { "stopped by SIGSTOP, its stop collected", "\"stop_signal\": 19, \"stop_reported\": true",
        NULL },
      { "stopped by SIGTTOU, without stop_reported", "\"stop_signal\": 22", NULL },
      { "stop_signal 9 (SIGKILL)", "\"stop_signal\": 9", "stop_signal 9 is not a stop signal" },
      { "stop_signal as a string", "\"stop_signal\": \"19\"", "stop_signal" },
      { "stop_reported without stop_signal", "\"stop_reported\": false",
        "stop_reported without stop_signal" },
      { "stop_reported not a boolean", "\"stop_signal\": 20, \"stop_reported\": 1",
        "stop_reported" },
    };
    for (size_t i = 0; i < ARRAY_SIZE(stop); i++)
      {
        char name[32];
        cleanup_free char *what
            = xasprintf("a process %s%s", stop[i].expect ? "with " : "", stop[i].what);
        snprintf(name, sizeof name, "t-stop%zu", i);
        tree_process_extra = stop[i].extra;
        expect_tree(name, stop[i].expect, what);
      }
    tree_process_extra = NULL;
  }

  /* A process's root directory (chroot): written by the dump's own JSON
     writer, checked by the restore's parser, read back byte for byte. */
  {
    static const char odd[] = "/srv/a dir/\"q\"\\b/\xc3\xbcn\xc3\xaf\tx";
    yajl_gen g = yajl_gen_alloc(NULL);
    const unsigned char *gb;
    size_t gl;
    cleanup_free char *member = NULL;
    yajl_gen_map_open(g);
    jput_str(g, "root_dir", odd);
    yajl_gen_map_close(g);
    yajl_gen_get_buf(g, &gb, &gl);
    member = xasprintf("%.*s", (int)gl - 2, (const char *)gb + 1); /* without the braces */
    yajl_gen_free(g);

    tree_root_dir = member;
    tree_format = CREST_IMAGE_FORMAT_CHROOT;
    expect_tree("t-root", NULL, "a process with root_dir in a format 2 image");
    {
      yajl_val tree = NULL, *procs = NULL;
      const char *got = NULL;
      snprintf(dir, sizeof dir, "%s/t-root", base);
      if (img_reader_open(dir, false, true, &r, &err) == 0)
        {
          if (img_reader_json(r, "tree.json", &tree, &err) == 0
              && jget_array(tree, "processes", &procs, &err) == 1)
            jget_str(procs[0], "root_dir", &got, &err);
          tap_ok(r->format == CREST_IMAGE_FORMAT_CHROOT, "the manifest says format %d, got %d",
                 CREST_IMAGE_FORMAT_CHROOT, r->format);
          img_reader_free(r);
        }
      tap_is_str(got, odd,
                 "root_dir reads back as written (spaces, quotes, backslash, UTF-8, tab)");
      crest_error_release(&err);
      if (tree)
        yajl_tree_free(tree);
    }
    tree_format = 1;
    expect_tree("t-root-fmt1", "root_dir in an image of format 1",
                "root_dir in a format 1 image (a reader of format 1 would drop it)");
    tree_format = CREST_IMAGE_FORMAT_CHROOT;
    tree_root_dir = "\"root_dir\": \"srv/x\"";
    expect_tree("t-root-rel", "not an absolute path", "a relative root_dir");
    tree_root_dir = "\"root_dir\": 42";
    expect_tree("t-root-num", "not an absolute path", "a root_dir that is not a string");
    tree_root_dir = NULL;
    expect_tree("t-fmt2", NULL, "a format 2 image without root_dir");
    tree_format = 1;
  }

  hostile_trees();
  hostile_files();

  /* Format 3 records of the attribute tables (docs/engine.md): accepted in a
     format 3 image only, every value in range. */
  {
    static const struct
    {
      const char *what, *extra, *expect; /* expect NULL: it passes */
      int format;
    } attrs[] = {
      { "prctl state",
        "\"prctl\": {\"child_subreaper\": true, \"thp_disable\": false, \"dumpable\": 0, "
        "\"membarrier\": 16}",
        NULL, 3 },
      { "prctl state in a format 2 image",
        "\"prctl\": {\"child_subreaper\": true, \"thp_disable\": false, \"dumpable\": 0, "
        "\"membarrier\": 16}",
        "format 3", 2 },
      { "dumpable 2",
        "\"prctl\": {\"child_subreaper\": false, \"thp_disable\": false, \"dumpable\": 2, "
        "\"membarrier\": 0}",
        "bad dumpable", 3 },
      { "a membarrier bit that is no registration",
        "\"prctl\": {\"child_subreaper\": false, \"thp_disable\": false, \"dumpable\": 1, "
        "\"membarrier\": 8}",
        "membarrier", 3 },
      { "prctl that is not an object", "\"prctl\": 1", "object", 3 },
      /* Format 5 (mem-cow.c): pages shared with the parent. */
      { "parent_pages in a format 3 image",
        "\"parent_pages\": [{\"vaddr\": \"0x12000\", \"len\": \"0x1000\"}]", "needs format 5", 3 },
      { "parent_pages but no parent in the image",
        "\"parent_pages\": [{\"vaddr\": \"0x12000\", \"len\": \"0x1000\"}]", "is not before it",
        5 },
    };
    for (size_t i = 0; i < ARRAY_SIZE(attrs); i++)
      {
        char name[32];
        cleanup_free char *what = xasprintf("a process with %s", attrs[i].what);
        snprintf(name, sizeof name, "t-attr%zu", i);
        tree_process_extra = attrs[i].extra;
        tree_format = attrs[i].format;
        expect_tree(name, attrs[i].expect, what);
      }
    tree_process_extra = NULL;
    tree_format = 1;
  }
  /* Format 6 (chain.c): a page run from a parent image. */
  {
    static const struct
    {
      const char *what;
      int format;
    } ch[] = {
      { "a page run from a parent image, in a format 5 image", 5 },
      { "a page run from a parent image, in an image without a parent", 6 },
    };
    for (size_t i = 0; i < ARRAY_SIZE(ch); i++)
      {
        char name[32];
        cleanup_free char *why = NULL;
        int rc;
        snprintf(name, sizeof name, "t-chain%zu", i);
        tree_format = ch[i].format;
        rc = check_tree(name, VMA_OK,
                        "{\"vaddr\": \"0x10000\", \"len\": \"0x2000\", \"off\": \"0x0\", "
                        "\"from\": 1}",
                        FDS_OK, 0x2000, &why);
        tap_ok(rc < 0 && why && strstr(why, "from parent image 1, the image has 0"),
               "%s is refused: %s", ch[i].what, why);
      }
    tree_format = 1;
  }
  {
    static const struct
    {
      const char *what, *madv, *expect;
      int format;
    } m[] = {
      { "MADV_DONTFORK recorded", "1", NULL, 3 },
      { "madv in a format 2 image", "1", "bad madv", 2 },
      { "madv bits past MAP_NORESERVE", "512", "bad madv", 3 },
      { "madv 0", "0", "bad madv", 3 },
    };
    for (size_t i = 0; i < ARRAY_SIZE(m); i++)
      {
        char name[32];
        cleanup_free char *vma = xasprintf(
            "{\"start\": \"0x10000\", \"end\": \"0x12000\", \"prot\": 3, \"shared\": false, "
            "\"kind\": \"anon\", \"madv\": %s}",
            m[i].madv);
        cleanup_free char *why = NULL;
        int rc;
        snprintf(name, sizeof name, "t-madv%zu", i);
        tree_format = m[i].format;
        rc = check_tree(name, vma, PAGES_OK, FDS_OK, 0x2000, &why);
        if (m[i].expect)
          tap_ok(rc < 0 && why && strstr(why, m[i].expect), "a mapping with %s is refused: %s",
                 m[i].what, why);
        else
          tap_ok(rc == 0, "a mapping with %s passes%s%s", m[i].what, why && *why ? ": " : "",
                 why ? why : "");
      }
    tree_format = 1;
  }

  /* An unlinked file's extents (format 3): parsed into memory the plan
     must give back, whether the image passes or one extent fails (the
     fuzzer found the leak; under the sanitizers, LeakSanitizer is the
     check). */
  {
    static const struct
    {
      const char *what, *extents, *expect;
    } u[] = {
      { "an unlinked file of two extents", "[[0, 4096], [4096, 4096]]", NULL },
      { "an unlinked file whose second extent runs past its end", "[[0, 4096], [4096, 8192]]",
        "past the end" },
    };
    for (size_t i = 0; i < ARRAY_SIZE(u); i++)
      {
        char name[32];
        cleanup_free char *rec = xasprintf(
            "{\"id\": 0, \"type\": \"reg\", \"path\": \"/tmp/gone\", \"flags\": 2, \"pos\": 0, "
            "\"data\": \"pages-10.img\", \"size\": \"0x2000\", \"mode\": 384, \"uid\": 0, "
            "\"gid\": 0, \"extents\": %s}",
            u[i].extents);
        snprintf(name, sizeof name, "t-unlinked%zu", i);
        tree_find = "{\"id\": 0, \"type\": \"dev\", \"path\": \"/dev/null\", \"flags\": 0, "
                    "\"pos\": 0}";
        tree_repl = rec;
        tree_format = 3;
        expect_tree(name, u[i].expect, u[i].what);
      }
    tree_find = tree_repl = NULL;
    tree_format = 1;
  }

  /* Memory objects saved without their holes ("memfiles", format 19):
     pages-10.img is 0x2000 bytes. */
  {
    static const struct top_case v[] = {
      { "a memory object of 64 KiB saved as two extents",
        "[{\"data\": \"pages-10.img\", \"size\": \"0x10000\", \"extents\": [[0, 4096], "
        "[32768, 4096]]}]",
        NULL, 19 },
      { "memfiles in a format 18 image", "[]", "format 18", 18 },
      { "memory object extents that are not its data file",
        "[{\"data\": \"pages-10.img\", \"size\": \"0x10000\", \"extents\": [[0, 4096]]}]",
        "extents hold", 19 },
      { "a memory object extent past its end",
        "[{\"data\": \"pages-10.img\", \"size\": \"0x2000\", \"extents\": [[4096, 8192]]}]",
        "past the end", 19 },
      { "memory object extents out of order",
        "[{\"data\": \"pages-10.img\", \"size\": \"0x10000\", \"extents\": [[8192, 4096], "
        "[0, 4096]]}]",
        "out of order", 19 },
      { "a memory object over 1 GiB",
        "[{\"data\": \"pages-10.img\", \"size\": \"0x40001000\", \"extents\": [[0, 8192]]}]",
        "over 1 GiB", 19 },
      { "one memory object listed twice",
        "[{\"data\": \"pages-10.img\", \"size\": \"0x2000\", \"extents\": [[0, 8192]]}, "
        "{\"data\": \"pages-10.img\", \"size\": \"0x2000\", \"extents\": [[0, 8192]]}]",
        "listed twice", 19 },
    };
    expect_top_key("memfiles", v, ARRAY_SIZE(v));
  }

  /* SysV objects of a container's IPC namespace ("ipc", format 4). */
  {
    static const struct top_case v[] = {
      { "a semaphore set and a message queue",
        "[{\"kind\": \"sem\", \"id\": 32774, \"key\": 1, \"uid\": 0, \"gid\": 0, "
        "\"cuid\": 0, \"cgid\": 0, \"mode\": 416, \"values\": \"0500ff7f\"}, {\"kind\": "
        "\"msg\", \"id\": 0, \"key\": 0, \"uid\": 0, \"gid\": 0, \"cuid\": 0, \"cgid\": 0, "
        "\"mode\": 384, \"qbytes\": \"0x4000\", \"messages\": [{\"type\": 2, \"data\": "
        "\"6869\"}]}]",
        NULL, 4 },
      { "a segment whose pages are the page file",
        "[{\"kind\": \"shm\", \"id\": 1, \"key\": 0, \"uid\": 0, \"gid\": 0, \"cuid\": 0, "
        "\"cgid\": 0, \"mode\": 384, \"size\": \"0x3000\", \"data\": \"pages-10.img\", "
        "\"extents\": [[4096, 8192]]}]",
        NULL, 4 },
      { "ipc in a format 3 image", "[]", "format 3", 3 },
      { "a semaphore value over 32767",
        "[{\"kind\": \"sem\", \"id\": 0, \"key\": 0, \"uid\": 0, \"gid\": 0, \"cuid\": 0, "
        "\"cgid\": 0, \"mode\": 384, \"values\": \"409c\"}]",
        "out of range", 4 },
      { "an ID of index 100",
        "[{\"kind\": \"sem\", \"id\": 100, \"key\": 0, \"uid\": 0, \"gid\": 0, \"cuid\": 0, "
        "\"cgid\": 0, \"mode\": 384, \"values\": \"0100\"}]",
        "out of range", 4 },
      { "a message of type 0",
        "[{\"kind\": \"msg\", \"id\": 0, \"key\": 0, \"uid\": 0, \"gid\": 0, \"cuid\": 0, "
        "\"cgid\": 0, \"mode\": 384, \"qbytes\": \"0x4000\", \"messages\": [{\"type\": 0, "
        "\"data\": \"\"}]}]",
        "of type 0", 4 },
      { "one ID twice",
        "[{\"kind\": \"msg\", \"id\": 0, \"key\": 0, \"uid\": 0, \"gid\": 0, \"cuid\": 0, "
        "\"cgid\": 0, \"mode\": 384, \"qbytes\": \"0x4000\", \"messages\": []}, {\"kind\": "
        "\"msg\", \"id\": 0, \"key\": 0, \"uid\": 0, \"gid\": 0, \"cuid\": 0, \"cgid\": 0, "
        "\"mode\": 384, \"qbytes\": \"0x4000\", \"messages\": []}]",
        "twice", 4 },
      { "a segment whose extents are not its data file",
        "[{\"kind\": \"shm\", \"id\": 1, \"key\": 0, \"uid\": 0, \"gid\": 0, \"cuid\": 0, "
        "\"cgid\": 0, \"mode\": 384, \"size\": \"0x3000\", \"data\": \"pages-10.img\", "
        "\"extents\": [[0, 4096]]}]",
        "extents hold", 4 },
      { "a segment extent past its end",
        "[{\"kind\": \"shm\", \"id\": 1, \"key\": 0, \"uid\": 0, \"gid\": 0, \"cuid\": 0, "
        "\"cgid\": 0, \"mode\": 384, \"size\": \"0x1000\", \"data\": \"pages-10.img\", "
        "\"extents\": [[0, 8192]]}]",
        "past the end", 4 },
    };
    expect_top_key("ipc", v, ARRAY_SIZE(v));
  }

  {
    crest_error_t e2 = NULL;
    remove_tree(base, &e2);
    crest_error_release(&e2);
  }
  return tap_done();
}
