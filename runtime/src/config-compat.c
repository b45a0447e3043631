/* crest: the checkpointed config against the one a restore is given (see
   config-compat.h for what may differ and why). */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config-compat.h"
#include "oci-config.h"
#include "util.h"

/* Where the comparison is: PATH names it for the user ("mounts[3].source"),
   SHAPE for the rules ("mounts[*].source"). */
struct walk
{
  char path[512], shape[512];
  char *why;
  int depth; /* an archive's spec.dump is untrusted: no unbounded recursion */
};

static const char *const may_differ[] = {
  "ociVersion",
  "annotations",
  "hooks",
  "root.path",
  "mounts[*].source",
  "linux.namespaces[*].path",
  "linux.uidMappings[*].hostID",
  "linux.gidMappings[*].hostID",
  "linux.cgroupsPath",
  "linux.resources",
  "process.consoleSize",
};

static int
compare(struct walk *w, yajl_val ck, yajl_val gv);

static bool
shape_may_differ(const char *shape)
{
  for (size_t i = 0; i < ARRAY_SIZE(may_differ); i++)
    if (strcmp(shape, may_differ[i]) == 0)
      return true;
  return false;
}

/* A value as a user reads it in one line. */
static void
show(yajl_val v, char *buf, size_t len)
{
  if (!v || YAJL_IS_NULL(v))
    snprintf(buf, len, "null");
  else if (YAJL_IS_STRING(v))
    snprintf(buf, len, "%.60s%s", v->u.string, strlen(v->u.string) > 60 ? "..." : "");
  else if (YAJL_IS_NUMBER(v))
    snprintf(buf, len, "%.40s", v->u.number.r);
  else if (YAJL_IS_TRUE(v) || YAJL_IS_FALSE(v))
    snprintf(buf, len, "%s", YAJL_IS_TRUE(v) ? "true" : "false");
  else
    snprintf(buf, len, "%s", YAJL_IS_OBJECT(v) ? "{...}" : "[...]");
}

static int
differs(struct walk *w, yajl_val ck, yajl_val gv)
{
  char a[80], b[80];
  show(gv, a, sizeof a);
  show(ck, b, sizeof b);
  w->why = xasprintf("%s differs: `%s` in the bundle's, `%s` checkpointed", w->path, a, b);
  return 1;
}

/* Descend into KEY (an object key, or "[N]" with its shape "[*]"). */
static int
compare_at(struct walk *w, const char *key, const char *shape_key, yajl_val ck, yajl_val gv)
{
  size_t pl = strlen(w->path), sl = strlen(w->shape);
  bool index = key[0] == '[';
  int r;

  snprintf(w->path + pl, sizeof w->path - pl, "%s%s", pl && !index ? "." : "", key);
  snprintf(w->shape + sl, sizeof w->shape - sl, "%s%s", sl && !index ? "." : "", shape_key);
  if (++w->depth > 32)
    {
      w->why = xasprintf("%s: nested deeper than any OCI config", w->path);
      r = 1;
    }
  else
    r = shape_may_differ(w->shape) ? 0 : compare(w, ck, gv);
  w->depth--;
  w->path[pl] = '\0';
  w->shape[sl] = '\0';
  return r;
}

/* May the member KEY of the current object be absent on one side? Not a
   namespace's path: with one the container joins a namespace that exists,
   without it gets a new one (a PID namespace of its own is where the
   tree's init is 1); only which one it joins may change. */
static bool
member_may_differ(const struct walk *w, const char *key)
{
  char shape[600];
  snprintf(shape, sizeof shape, "%s%s%s", w->shape, w->shape[0] ? "." : "", key);
  return shape_may_differ(shape) && strcmp(shape, "linux.namespaces[*].path") != 0;
}

static int
only_in(struct walk *w, const char *key, const char *where)
{
  w->why = xasprintf("%s%s%s is only in the %s", w->path, w->path[0] ? "." : "", key, where);
  return 1;
}

static int
compare_objects(struct walk *w, yajl_val ck, yajl_val gv)
{
  for (size_t i = 0; i < ck->u.object.len; i++)
    {
      const char *k = ck->u.object.keys[i];
      yajl_val g = crest_config_member(gv, k);
      if (!g && !member_may_differ(w, k))
        return only_in(w, k, "checkpointed config");
      if (g && compare_at(w, k, k, ck->u.object.values[i], g))
        return 1;
    }
  for (size_t i = 0; i < gv->u.object.len; i++)
    if (!crest_config_member(ck, gv->u.object.keys[i])
        && !member_may_differ(w, gv->u.object.keys[i]))
      return only_in(w, gv->u.object.keys[i], "bundle's config");
  return 0;
}

static bool
array_has_string(yajl_val a, const char *s)
{
  for (size_t i = 0; i < a->u.array.len; i++)
    if (YAJL_IS_STRING(a->u.array.values[i]) && strcmp(a->u.array.values[i]->u.string, s) == 0)
      return true;
  return false;
}

/* A capability set: the same names, in any order. */
static int
compare_string_sets(struct walk *w, yajl_val ck, yajl_val gv)
{
  for (int side = 0; side < 2; side++)
    {
      yajl_val from = side ? gv : ck, to = side ? ck : gv;
      for (size_t i = 0; i < from->u.array.len; i++)
        {
          yajl_val v = from->u.array.values[i];
          if (!YAJL_IS_STRING(v))
            return differs(w, ck, gv);
          if (!array_has_string(to, v->u.string))
            {
              w->why = xasprintf("%s differs: %s is only in the %s", w->path, v->u.string,
                                 side ? "bundle's config" : "checkpointed config");
              return 1;
            }
        }
    }
  return 0;
}

static yajl_val
namespace_of(yajl_val a, const char *type)
{
  for (size_t i = 0; i < a->u.array.len; i++)
    {
      yajl_val ns = a->u.array.values[i], t;
      if (YAJL_IS_OBJECT(ns) && (t = crest_config_member(ns, "type")) && YAJL_IS_STRING(t)
          && strcmp(t->u.string, type) == 0)
        return ns;
    }
  return NULL;
}

/* Namespaces by type, in any order; each one's members compared (a path
   may differ). */
static int
compare_namespaces(struct walk *w, yajl_val ck, yajl_val gv)
{
  for (int side = 0; side < 2; side++)
    {
      yajl_val from = side ? gv : ck, to = side ? ck : gv;
      for (size_t i = 0; i < from->u.array.len; i++)
        {
          yajl_val ns = from->u.array.values[i],
                   t = YAJL_IS_OBJECT(ns) ? crest_config_member(ns, "type") : NULL;
          char key[80];
          if (!t || !YAJL_IS_STRING(t))
            return differs(w, ck, gv);
          if (!namespace_of(to, t->u.string))
            {
              w->why = xasprintf("%s differs: a %s namespace only in the %s", w->path, t->u.string,
                                 side ? "bundle's config" : "checkpointed config");
              return 1;
            }
          snprintf(key, sizeof key, "[%s]", t->u.string);
          if (!side && compare_at(w, key, "[*]", ns, namespace_of(gv, t->u.string)))
            return 1;
        }
    }
  return 0;
}

static int
compare_arrays(struct walk *w, yajl_val ck, yajl_val gv)
{
  if (strcmp(w->shape, "linux.namespaces") == 0)
    return compare_namespaces(w, ck, gv);
  if (strncmp(w->shape, "process.capabilities.", 21) == 0)
    return compare_string_sets(w, ck, gv);
  if (ck->u.array.len != gv->u.array.len)
    {
      w->why = xasprintf("%s differs: %zu entries in the bundle's, %zu checkpointed", w->path,
                         gv->u.array.len, ck->u.array.len);
      return 1;
    }
  for (size_t i = 0; i < ck->u.array.len; i++)
    {
      char key[32];
      snprintf(key, sizeof key, "[%zu]", i);
      if (compare_at(w, key, "[*]", ck->u.array.values[i], gv->u.array.values[i]))
        return 1;
    }
  return 0;
}

static int
compare(struct walk *w, yajl_val ck, yajl_val gv)
{
  if (YAJL_IS_OBJECT(ck) && YAJL_IS_OBJECT(gv))
    return compare_objects(w, ck, gv);
  if (YAJL_IS_ARRAY(ck) && YAJL_IS_ARRAY(gv))
    return compare_arrays(w, ck, gv);
  if (ck->type != gv->type)
    return differs(w, ck, gv);
  if (YAJL_IS_STRING(ck) && strcmp(ck->u.string, gv->u.string) != 0)
    return differs(w, ck, gv);
  if (YAJL_IS_NUMBER(ck) && strcmp(ck->u.number.r, gv->u.number.r) != 0)
    return differs(w, ck, gv);
  return 0;
}

char *
crest_config_restore_difference(yajl_val checkpointed, yajl_val given)
{
  struct walk w;
  memset(&w, 0, sizeof w);
  if (compare(&w, checkpointed, given) == 0)
    return NULL;
  return w.why;
}

/* BUNDLE_CFG with GRANT applied, parsed (TEXT is its text). */
static int
with_grant(const char *bundle_text, yajl_val bundle_cfg, enum crest_grant grant, char **text,
           size_t *len, yajl_val *out, crest_error_t *err)
{
  if (grant == CREST_GRANT_NONE)
    {
      *text = xstrdup(bundle_text);
      *len = strlen(bundle_text);
    }
  else if (crest_config_generate(bundle_cfg, grant, text, len, err) < 0)
    return -1;
  if (crest_config_parse(*text, out, err) < 0)
    {
      free(*text);
      *text = NULL;
      return -1;
    }
  return 0;
}

int
crest_restore_bundle_config(const char *bundle, yajl_val *config, char **text, size_t *len,
                            crest_error_t *err)
{
  cleanup_free char *path = xasprintf("%s/config.json", bundle), *btext = NULL;
  cleanup_free char *first_why = NULL;
  /* crest run applies the annotation's grant, or the one its flag asks
     for, which only the checkpointed config shows: each is tried, the
     annotation's first. */
  enum crest_grant order[]
      = { CREST_GRANT_NONE, CREST_GRANT_NONE, CREST_GRANT_ADD, CREST_GRANT_ONLY };
  yajl_val bcfg = NULL;

  if (access(path, F_OK) < 0 && errno == ENOENT)
    return 0;
  if (read_file(path, &btext, NULL, 16u << 20, err) < 0 || crest_config_parse(btext, &bcfg, err) < 0
      || crest_config_annotation_grant(bcfg, &order[0], err) < 0)
    {
      if (bcfg)
        yajl_tree_free(bcfg);
      return crest_error_wrap(err, "the bundle's `%s`", path);
    }
  for (size_t i = 0; i < ARRAY_SIZE(order); i++)
    {
      char *t = NULL;
      size_t l = 0;
      yajl_val cand = NULL;
      char *why;
      if (i > 0 && order[i] == order[0])
        continue;
      if (with_grant(btext, bcfg, order[i], &t, &l, &cand, err) < 0)
        {
          yajl_tree_free(bcfg);
          return crest_error_wrap(err, "the bundle's `%s`", path);
        }
      why = crest_config_restore_difference(*config, cand);
      if (!why)
        {
          yajl_tree_free(bcfg);
          yajl_tree_free(*config);
          free(*text);
          *config = cand;
          *text = t;
          *len = l;
          return 0;
        }
      if (!first_why)
        first_why = why;
      else
        free(why);
      yajl_tree_free(cand);
      free(t);
    }
  yajl_tree_free(bcfg);
  return crest_error_make(err, 0, "the bundle's config.json does not fit the image: %s", first_why);
}
