/* crest: per-container state under ROOT/containers/ID/state.json. crun keeps
   the truth about the container; this file only remembers what crest needs to
   checkpoint it later, and it is never trusted once crun has forgotten the
   container. */
#include <config.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>
#include "state.h"
#include "util.h"
#include "log.h"

char *
crest_state_dir(struct crest_global *g, const char *id)
{
  return xasprintf("%s/containers/%s", g->root, id);
}

int
crest_validate_id(const char *id, crest_error_t *err)
{
  const char *p;
  if (id == NULL || *id == '\0')
    return crest_error_make(err, 0, "missing container ID");
  if (strlen(id) > 1024)
    return crest_error_make(err, 0, "container ID too long");
  if (strcmp(id, ".") == 0 || strcmp(id, "..") == 0)
    return crest_error_make(err, 0, "invalid container ID `%s`", id);
  for (p = id; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')
          || *p == '-' || *p == '_' || *p == '.' || *p == '+'))
      return crest_error_make(
          err, 0, "invalid container ID `%s`: only letters, digits and -_.+ are allowed", id);
  return 0;
}

static void
gen_kv(yajl_gen g, const char *k, const char *v)
{
  yajl_gen_string(g, (const unsigned char *)k, strlen(k));
  if (v)
    yajl_gen_string(g, (const unsigned char *)v, strlen(v));
  else
    yajl_gen_null(g);
}

int
crest_state_write(struct crest_global *g, const struct crest_state *s, crest_error_t *err)
{
  cleanup_free char *dir = crest_state_dir(g, s->id);
  cleanup_free char *path = xasprintf("%s/state.json", dir);
  const unsigned char *buf;
  size_t len;
  int r;
  yajl_gen gen;

  if (mkdir_p(dir, 0700, err) < 0)
    return crest_error_wrap(err, "container `%s`: create state directory", s->id);
  gen = yajl_gen_alloc(NULL);
  if (gen == NULL)
    return crest_error_make(err, ENOMEM, "allocate JSON generator");
  yajl_gen_config(gen, yajl_gen_beautify, 1);
  yajl_gen_map_open(gen);
  gen_kv(gen, "id", s->id);
  gen_kv(gen, "bundle", s->bundle);
  gen_kv(gen, "crun_root", s->crun_root);
  gen_kv(gen, "config", s->config);
  yajl_gen_string(gen, (const unsigned char *)"rootless", 8);
  yajl_gen_bool(gen, s->rootless);
  gen_kv(gen, "grant", s->grant ? s->grant : "none");
  yajl_gen_map_close(gen);
  yajl_gen_get_buf(gen, &buf, &len);
  r = write_file_atomic(path, buf, len, 0600, err);
  yajl_gen_free(gen);
  if (r < 0)
    return crest_error_wrap(err, "container `%s`: write state", s->id);
  return 0;
}

static char *
dup_field(yajl_val root, const char *key)
{
  const char *path[] = { key, NULL };
  yajl_val v = yajl_tree_get(root, path, yajl_t_string);
  return v ? xstrdup(YAJL_GET_STRING(v)) : NULL;
}

bool
crest_crun_has(struct crest_global *g, const char *crun_root, const char *id)
{
  struct stat st;
  cleanup_free char *p = xasprintf("%s/%s", crun_root ? crun_root : g->crun_root, id);
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int
crest_state_peek(struct crest_global *g, const char *id, struct crest_state *s, crest_error_t *err)
{
  cleanup_free char *dir = crest_state_dir(g, id);
  cleanup_free char *path = xasprintf("%s/state.json", dir);
  cleanup_free char *text = NULL;
  char errbuf[256] = "";
  const char *rl_path[] = { "rootless", NULL };
  yajl_val root, rl;

  memset(s, 0, sizeof *s);
  if (read_file(path, &text, NULL, 1 << 20, err) < 0)
    {
      if ((*err)->status == ENOENT)
        {
          crest_error_release(err);
          return 0;
        }
      return crest_error_wrap(err, "container `%s`: read state", id);
    }
  root = yajl_tree_parse(text, errbuf, sizeof errbuf);
  if (root == NULL || !YAJL_IS_OBJECT(root))
    {
      if (root)
        yajl_tree_free(root);
      return crest_error_make(err, 0, "container `%s`: state file `%s` is corrupt", id, path);
    }
  s->id = xstrdup(id);
  s->bundle = dup_field(root, "bundle");
  s->crun_root = dup_field(root, "crun_root");
  s->config = dup_field(root, "config");
  s->grant = dup_field(root, "grant");
  rl = yajl_tree_get(root, rl_path, yajl_t_any);
  s->rootless = rl && YAJL_IS_TRUE(rl);
  yajl_tree_free(root);
  return 1;
}

int
crest_state_read(struct crest_global *g, const char *id, struct crest_state *s, crest_error_t *err)
{
  int r = crest_state_peek(g, id, s, err);
  if (r <= 0)
    return r;
  if (s->crun_root == NULL || !crest_crun_has(g, s->crun_root, id))
    {
      crest_debug("container `%s`: crun no longer knows it, removing stale crest state", id);
      crest_state_free(s);
      if (crest_state_remove(g, id, err) < 0)
        return -1;
      return 0;
    }
  return 1;
}

int
crest_state_remove(struct crest_global *g, const char *id, crest_error_t *err)
{
  cleanup_free char *dir = crest_state_dir(g, id);
  if (remove_tree(dir, err) < 0)
    return crest_error_wrap(err, "container `%s`: remove state", id);
  return 0;
}

int
crest_state_gc(struct crest_global *g, crest_error_t *err)
{
  cleanup_free char *dir = xasprintf("%s/containers", g->root);
  struct dirent *de;
  int removed = 0;
  DIR *d = opendir(dir);
  if (d == NULL)
    return errno == ENOENT ? 0 : crest_error_errno(err, "open `%s`", dir);
  while ((de = readdir(d)))
    {
      struct crest_state s;
      int r;
      if (de->d_name[0] == '.')
        continue;
      r = crest_state_read(g, de->d_name, &s, err);
      if (r < 0)
        {
          closedir(d);
          return -1;
        }
      if (r == 0)
        removed++;
      else
        crest_state_free(&s);
    }
  closedir(d);
  return removed;
}

void
crest_state_free(struct crest_state *s)
{
  free(s->id);
  free(s->bundle);
  free(s->crun_root);
  free(s->config);
  free(s->grant);
  memset(s, 0, sizeof *s);
}
