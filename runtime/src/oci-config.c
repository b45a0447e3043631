/* crest: config.json rewriting. The tree is copied value by value through the
   yajl generator, so that everything crest does not mean to change (numbers
   included, in their original spelling) comes out as it went in. */
#include <config.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>
#include "oci-config.h"
#include "util.h"

#define CAP_CR_NAME "CAP_CHECKPOINT_RESTORE"

static const char *const cap_sets[]
    = { "bounding", "effective", "inheritable", "permitted", "ambient" };

int
crest_grant_parse(const char *s, enum crest_grant *out, crest_error_t *err)
{
  if (s == NULL || strcmp(s, "none") == 0 || strcmp(s, "") == 0)
    *out = CREST_GRANT_NONE;
  else if (strcmp(s, "add") == 0)
    *out = CREST_GRANT_ADD;
  else if (strcmp(s, "only") == 0)
    *out = CREST_GRANT_ONLY;
  else
    return crest_error_make(
        err, 0, "unknown checkpoint-restore grant `%s` (expected add, only or none)", s);
  return 0;
}

const char *
crest_grant_name(enum crest_grant g)
{
  switch (g)
    {
    case CREST_GRANT_ADD:
      return "add";
    case CREST_GRANT_ONLY:
      return "only";
    default:
      return "none";
    }
}

int
crest_config_parse(const char *text, yajl_val *out, crest_error_t *err)
{
  char errbuf[512] = "";
  yajl_val v = yajl_tree_parse(text, errbuf, sizeof errbuf);
  if (v == NULL)
    {
      char *nl = strchr(errbuf, '\n');
      if (nl)
        *nl = '\0';
      return crest_error_make(err, 0, "invalid JSON: %s", errbuf[0] ? errbuf : "parse error");
    }
  if (!YAJL_IS_OBJECT(v))
    {
      yajl_tree_free(v);
      return crest_error_make(err, 0, "invalid config: the top level is not an object");
    }
  *out = v;
  return 0;
}

yajl_val
crest_config_member(yajl_val obj, const char *key)
{
  if (!obj || !YAJL_IS_OBJECT(obj))
    return NULL;
  for (size_t i = 0; i < obj->u.object.len; i++)
    if (strcmp(obj->u.object.keys[i], key) == 0)
      return obj->u.object.values[i];
  return NULL;
}

const char *
crest_config_get_string(yajl_val root, const char *const *path)
{
  yajl_val v = yajl_tree_get(root, (const char **)path, yajl_t_string);
  return v ? YAJL_GET_STRING(v) : NULL;
}

int
crest_config_annotation_grant(yajl_val root, enum crest_grant *out, crest_error_t *err)
{
  const char *path[] = { "annotations", CREST_GRANT_ANNOTATION, NULL };
  yajl_val v = yajl_tree_get(root, path, yajl_t_any);
  *out = CREST_GRANT_NONE;
  if (v == NULL)
    return 0;
  if (!YAJL_IS_STRING(v))
    return crest_error_make(err, 0, "annotation `%s` must be a string", CREST_GRANT_ANNOTATION);
  if (crest_grant_parse(YAJL_GET_STRING(v), out, err) < 0)
    return crest_error_wrap(err, "annotation `%s`", CREST_GRANT_ANNOTATION);
  return 0;
}

/* 1: the capability list at process.capabilities.SET has CAP, 0: it has
   not, -1: there is no such list. */
static int
caps_list_has(yajl_val root, const char *set, const char *cap)
{
  const char *path[] = { "process", "capabilities", set, NULL };
  yajl_val v = yajl_tree_get(root, path, yajl_t_array);
  if (!v)
    return -1;
  for (size_t i = 0; i < v->u.array.len; i++)
    if (YAJL_IS_STRING(v->u.array.values[i]) && strcmp(v->u.array.values[i]->u.string, cap) == 0)
      return 1;
  return 0;
}

/* crun sets the config's sets and then executes the program, and that
   execve decides what the program holds: the kernel treats a program run by
   uid 0 as if it carried every file capability, so its permitted and
   effective sets become the bounding and inheritable sets, cut down to the
   permitted set it had when no_new_privs is set; a program run by another
   user keeps only its ambient set. The config's effective list itself
   counts for nothing (seen with crun 1.8: a rootless root process with
   CAP_SYS_CHROOT in bounding and permitted but not in effective holds it,
   with noNewPrivileges). */
int
crest_config_process_holds_cap(yajl_val root, const char *cap)
{
  const char *uid_path[] = { "process", "user", "uid", NULL };
  const char *nnp_path[] = { "process", "noNewPrivileges", NULL };
  yajl_val uid = yajl_tree_get(root, uid_path, yajl_t_number);
  yajl_val nnp = yajl_tree_get(root, nnp_path, yajl_t_any);
  int bnd, inh, prm, amb;

  if (uid && YAJL_IS_INTEGER(uid) && YAJL_GET_INTEGER(uid) != 0)
    return caps_list_has(root, "ambient", cap) == 1 ? 1 : 0;
  bnd = caps_list_has(root, "bounding", cap);
  inh = caps_list_has(root, "inheritable", cap);
  if (bnd < 0)
    return -1;
  if (bnd == 0 && inh != 1)
    return 0;
  if (nnp && YAJL_IS_TRUE(nnp))
    {
      prm = caps_list_has(root, "permitted", cap);
      amb = caps_list_has(root, "ambient", cap);
      return prm < 0 ? -1 : prm == 1 || amb == 1;
    }
  return 1;
}

void
crest_config_process_user(yajl_val root, long *uid, long *gid)
{
  const char *up[] = { "process", "user", "uid", NULL }, *gp[] = { "process", "user", "gid", NULL };
  yajl_val u = yajl_tree_get(root, up, yajl_t_number), g = yajl_tree_get(root, gp, yajl_t_number);
  *uid = u && YAJL_IS_INTEGER(u) ? YAJL_GET_INTEGER(u) : 0;
  *gid = g && YAJL_IS_INTEGER(g) ? YAJL_GET_INTEGER(g) : 0;
}

int
crest_config_root_holds_cap(yajl_val root, const char *cap)
{
  /* as_root adds CAP_SETUID and CAP_SETGID to permitted where bounding
     has them; as uid 0 the rest follows crest_config_process_holds_cap. */
  int bnd = caps_list_has(root, "bounding", cap);
  const char *nnp_path[] = { "process", "noNewPrivileges", NULL };
  yajl_val nnp = yajl_tree_get(root, nnp_path, yajl_t_any);
  if (bnd < 0)
    return -1;
  if (bnd == 0 && caps_list_has(root, "inheritable", cap) != 1)
    return 0;
  if ((strcmp(cap, "CAP_SETUID") == 0 || strcmp(cap, "CAP_SETGID") == 0) && bnd == 1)
    return 1;
  if (nnp && YAJL_IS_TRUE(nnp))
    return caps_list_has(root, "permitted", cap) == 1 || caps_list_has(root, "ambient", cap) == 1;
  return 1;
}

/* Where the copy currently is, so that the capability sets can be found. */
enum ctx
{
  CTX_OTHER,
  CTX_ROOT,
  CTX_PROCESS,
  CTX_CAPS,
  CTX_LINUX,
};

struct gen_state
{
  yajl_gen g;
  enum crest_grant grant;
  bool process_uid_zero;
  const struct crest_config_edit *edit;
  /* as_root: these are in the bounding set, to go into permitted and
     effective. */
  bool bnd_setuid, bnd_setgid;
};

static int
gen_value(struct gen_state *st, yajl_val v, enum ctx ctx);

static void
gen_str(yajl_gen g, const char *s)
{
  yajl_gen_string(g, (const unsigned char *)s, strlen(s));
}

/* Should SET (a capability set name) receive CAP_CHECKPOINT_RESTORE? */
static bool
grant_touches(struct gen_state *st, const char *set)
{
  if (st->grant == CREST_GRANT_ONLY)
    return true;
  if (st->grant != CREST_GRANT_ADD)
    return false;
  if (strcmp(set, "bounding") == 0 || strcmp(set, "permitted") == 0
      || strcmp(set, "effective") == 0)
    return true;
  /* A process that is not UID 0 in the container loses its permitted set at
     execve unless the capability is ambient, and the kernel only lets a
     capability be ambient when it is also inheritable. */
  if (!st->process_uid_zero && (strcmp(set, "ambient") == 0 || strcmp(set, "inheritable") == 0))
    return true;
  return false;
}

static void
gen_cap_set(struct gen_state *st, const char *set, yajl_val arr)
{
  size_t i;
  bool have = false;
  yajl_gen_array_open(st->g);
  if (st->grant == CREST_GRANT_ONLY)
    {
      gen_str(st->g, CAP_CR_NAME);
      yajl_gen_array_close(st->g);
      return;
    }
  if (arr && YAJL_IS_ARRAY(arr))
    for (i = 0; i < arr->u.array.len; i++)
      {
        yajl_val e = arr->u.array.values[i];
        if (YAJL_IS_STRING(e) && strcmp(e->u.string, CAP_CR_NAME) == 0)
          have = true;
        gen_value(st, e, CTX_OTHER);
      }
  if (!have && grant_touches(st, set))
    gen_str(st->g, CAP_CR_NAME);
  if (st->edit->as_root && (strcmp(set, "permitted") == 0 || strcmp(set, "effective") == 0))
    {
      static const char *const ids[] = { "CAP_SETUID", "CAP_SETGID" };
      for (size_t k = 0; k < ARRAY_SIZE(ids); k++)
        {
          bool there = false;
          for (size_t j = 0; arr && YAJL_IS_ARRAY(arr) && j < arr->u.array.len; j++)
            there |= YAJL_IS_STRING(arr->u.array.values[j])
                     && strcmp(arr->u.array.values[j]->u.string, ids[k]) == 0;
          if (!there && (k == 0 ? st->bnd_setuid : st->bnd_setgid))
            gen_str(st->g, ids[k]);
        }
    }
  if (st->edit->add_setpcap
      && (strcmp(set, "bounding") == 0 || strcmp(set, "permitted") == 0
          || strcmp(set, "effective") == 0))
    {
      bool there = false;
      for (size_t j = 0; arr && YAJL_IS_ARRAY(arr) && j < arr->u.array.len; j++)
        there |= YAJL_IS_STRING(arr->u.array.values[j])
                 && strcmp(arr->u.array.values[j]->u.string, "CAP_SETPCAP") == 0;
      if (!there)
        gen_str(st->g, "CAP_SETPCAP");
    }
  yajl_gen_array_close(st->g);
}

static void
gen_caps_object(struct gen_state *st, yajl_val caps)
{
  size_t i, k;
  yajl_gen_map_open(st->g);
  if (caps)
    for (i = 0; i < caps->u.object.len; i++)
      {
        const char *key = caps->u.object.keys[i];
        bool is_set = false;
        for (k = 0; k < ARRAY_SIZE(cap_sets); k++)
          if (strcmp(key, cap_sets[k]) == 0)
            is_set = true;
        gen_str(st->g, key);
        if (is_set && (st->grant != CREST_GRANT_NONE || st->edit->as_root || st->edit->add_setpcap))
          gen_cap_set(st, key, caps->u.object.values[i]);
        else
          gen_value(st, caps->u.object.values[i], CTX_OTHER);
      }
  /* Sets the config did not mention at all. */
  for (k = 0; k < ARRAY_SIZE(cap_sets); k++)
    {
      const char *path[] = { cap_sets[k], NULL };
      if (caps && yajl_tree_get(caps, path, yajl_t_any))
        continue;
      if (!grant_touches(st, cap_sets[k]))
        continue;
      gen_str(st->g, cap_sets[k]);
      gen_cap_set(st, cap_sets[k], NULL);
    }
  yajl_gen_map_close(st->g);
}

static void
gen_binds(struct gen_state *st)
{
  static const char *const options[] = { "bind", "ro", "nosuid", "nodev" };
  for (size_t i = 0; i < st->edit->nbinds; i++)
    {
      yajl_gen_map_open(st->g);
      gen_str(st->g, "destination");
      gen_str(st->g, st->edit->binds[i].destination);
      gen_str(st->g, "type");
      gen_str(st->g, "bind");
      gen_str(st->g, "source");
      gen_str(st->g, st->edit->binds[i].source);
      gen_str(st->g, "options");
      yajl_gen_array_open(st->g);
      for (size_t k = 0; k < ARRAY_SIZE(options); k++)
        gen_str(st->g, options[k]);
      yajl_gen_array_close(st->g);
      yajl_gen_map_close(st->g);
    }
}

/* An array (or nothing) with EXTRA strings or binds appended; 1 when KEY of
   CTX is one the edit extends or replaces and it has been written. */
static int
gen_edited(struct gen_state *st, const char *key, yajl_val v, enum ctx ctx)
{
  const struct crest_config_edit *e = st->edit;
  bool mounts = ctx == CTX_ROOT && strcmp(key, "mounts") == 0 && e->nbinds;
  bool env = ctx == CTX_PROCESS && strcmp(key, "env") == 0 && e->env_add;
  bool args = ctx == CTX_PROCESS && strcmp(key, "args") == 0 && e->args;

  if (!mounts && !env && !args)
    return 0;
  if (v && !YAJL_IS_ARRAY(v) && !args)
    return -1;
  yajl_gen_array_open(st->g);
  if (args)
    for (size_t i = 0; e->args[i]; i++)
      gen_str(st->g, e->args[i]);
  else
    for (size_t i = 0; v && i < v->u.array.len; i++)
      if (gen_value(st, v->u.array.values[i], CTX_OTHER) < 0)
        return -1;
  if (env)
    gen_str(st->g, e->env_add);
  if (mounts)
    gen_binds(st);
  yajl_gen_array_close(st->g);
  return 1;
}

static int
gen_object(struct gen_state *st, yajl_val v, enum ctx ctx)
{
  size_t i;
  bool saw_caps = false, saw_mounts = false, saw_env = false;
  yajl_gen_map_open(st->g);
  for (i = 0; i < v->u.object.len; i++)
    {
      const char *key = v->u.object.keys[i];
      yajl_val child = v->u.object.values[i];
      enum ctx next = CTX_OTHER;
      int r;
      if (ctx == CTX_LINUX && st->edit->drop_seccomp && strcmp(key, "seccomp") == 0)
        continue;
      if (ctx == CTX_ROOT
          && ((st->edit->hostname && strcmp(key, "hostname") == 0)
              || (st->edit->domainname && strcmp(key, "domainname") == 0)))
        continue;
      gen_str(st->g, key);
      if (ctx == CTX_PROCESS && st->edit->as_root && strcmp(key, "user") == 0)
        {
          /* The container's root, its umask kept. */
          yajl_val um = YAJL_IS_OBJECT(child)
                            ? yajl_tree_get(child, (const char *[]){ "umask", NULL }, yajl_t_number)
                            : NULL;
          yajl_gen_map_open(st->g);
          gen_str(st->g, "uid");
          yajl_gen_integer(st->g, 0);
          gen_str(st->g, "gid");
          yajl_gen_integer(st->g, 0);
          if (um && YAJL_IS_INTEGER(um))
            {
              gen_str(st->g, "umask");
              yajl_gen_integer(st->g, YAJL_GET_INTEGER(um));
            }
          yajl_gen_map_close(st->g);
          continue;
        }
      saw_mounts |= ctx == CTX_ROOT && strcmp(key, "mounts") == 0;
      saw_env |= ctx == CTX_PROCESS && strcmp(key, "env") == 0;
      r = gen_edited(st, key, child, ctx);
      if (r < 0)
        return -1;
      if (r > 0)
        continue;
      if (ctx == CTX_ROOT && strcmp(key, "process") == 0)
        next = CTX_PROCESS;
      else if (ctx == CTX_ROOT && strcmp(key, "linux") == 0)
        next = CTX_LINUX;
      else if (ctx == CTX_PROCESS && strcmp(key, "capabilities") == 0)
        {
          saw_caps = true;
          if (st->grant != CREST_GRANT_NONE)
            {
              if (!YAJL_IS_OBJECT(child))
                return -1;
              gen_caps_object(st, child);
              continue;
            }
        }
      if (gen_value(st, child, next) < 0)
        return -1;
    }
  if (ctx == CTX_PROCESS && !saw_caps && st->grant != CREST_GRANT_NONE)
    {
      gen_str(st->g, "capabilities");
      gen_caps_object(st, NULL);
    }
  if (ctx == CTX_PROCESS && !saw_env && st->edit->env_add)
    {
      gen_str(st->g, "env");
      gen_edited(st, "env", NULL, ctx);
    }
  if (ctx == CTX_ROOT && !saw_mounts && st->edit->nbinds)
    {
      gen_str(st->g, "mounts");
      gen_edited(st, "mounts", NULL, ctx);
    }
  for (int k = 0; ctx == CTX_ROOT && k < 2; k++)
    {
      const char *name = k == 0 ? st->edit->hostname : st->edit->domainname;
      if (name)
        {
          gen_str(st->g, k == 0 ? "hostname" : "domainname");
          gen_str(st->g, name);
        }
    }
  yajl_gen_map_close(st->g);
  return 0;
}

static int
gen_value(struct gen_state *st, yajl_val v, enum ctx ctx)
{
  size_t i;
  if (v == NULL || YAJL_IS_NULL(v))
    return yajl_gen_null(st->g) == yajl_gen_status_ok ? 0 : -1;
  if (YAJL_IS_OBJECT(v))
    return gen_object(st, v, ctx);
  if (YAJL_IS_ARRAY(v))
    {
      yajl_gen_array_open(st->g);
      for (i = 0; i < v->u.array.len; i++)
        if (gen_value(st, v->u.array.values[i], CTX_OTHER) < 0)
          return -1;
      yajl_gen_array_close(st->g);
      return 0;
    }
  if (YAJL_IS_STRING(v))
    {
      gen_str(st->g, v->u.string);
      return 0;
    }
  if (YAJL_IS_NUMBER(v))
    {
      const char *r = v->u.number.r;
      yajl_gen_number(st->g, r, strlen(r));
      return 0;
    }
  if (YAJL_IS_TRUE(v))
    return yajl_gen_bool(st->g, 1) == yajl_gen_status_ok ? 0 : -1;
  if (YAJL_IS_FALSE(v))
    return yajl_gen_bool(st->g, 0) == yajl_gen_status_ok ? 0 : -1;
  return -1;
}

int
crest_config_generate(yajl_val root, enum crest_grant grant, char **out, size_t *len,
                      crest_error_t *err)
{
  struct crest_config_edit e = { .grant = grant };
  return crest_config_edit(root, &e, out, len, err);
}

int
crest_config_edit(yajl_val root, const struct crest_config_edit *edit, char **out, size_t *len,
                  crest_error_t *err)
{
  enum crest_grant grant = edit->grant;
  struct gen_state st = { .grant = grant, .process_uid_zero = true, .edit = edit };
  const char *proc_path[] = { "process", NULL };
  const char *uid_path[] = { "process", "user", "uid", NULL };
  const char *caps_path[] = { "process", "capabilities", NULL };
  const unsigned char *buf;
  size_t buflen;
  yajl_val uid;

  if (!YAJL_IS_OBJECT(root))
    return crest_error_make(err, 0, "invalid config: the top level is not an object");
  if (grant != CREST_GRANT_NONE)
    {
      yajl_val caps = yajl_tree_get(root, caps_path, yajl_t_any);
      if (yajl_tree_get(root, proc_path, yajl_t_object) == NULL)
        return crest_error_make(
            err, 0, "invalid config: no `process` object to grant CAP_CHECKPOINT_RESTORE to");
      if (caps && !YAJL_IS_OBJECT(caps))
        return crest_error_make(err, 0, "invalid config: `process.capabilities` is not an object");
    }
  uid = yajl_tree_get(root, uid_path, yajl_t_number);
  if (uid && YAJL_IS_INTEGER(uid) && YAJL_GET_INTEGER(uid) != 0 && !edit->as_root)
    st.process_uid_zero = false;
  st.bnd_setuid = caps_list_has(root, "bounding", "CAP_SETUID") == 1;
  st.bnd_setgid = caps_list_has(root, "bounding", "CAP_SETGID") == 1;

  st.g = yajl_gen_alloc(NULL);
  if (st.g == NULL)
    return crest_error_make(err, ENOMEM, "allocate JSON generator");
  yajl_gen_config(st.g, yajl_gen_beautify, 1);
  yajl_gen_config(st.g, yajl_gen_indent_string, "\t");
  if (gen_value(&st, root, CTX_ROOT) < 0
      || yajl_gen_get_buf(st.g, &buf, &buflen) != yajl_gen_status_ok)
    {
      yajl_gen_free(st.g);
      return crest_error_make(err, 0, "cannot serialise the config");
    }
  *out = xmalloc(buflen + 1);
  memcpy(*out, buf, buflen);
  (*out)[buflen] = '\0';
  if (len)
    *len = buflen;
  yajl_gen_free(st.g);
  return 0;
}

int
crest_kernel_has_cap_cr(const char *proc_path, crest_error_t *err)
{
  cleanup_free char *text = NULL;
  char *end;
  long last;
  const char *p = proc_path ? proc_path : "/proc/sys/kernel/cap_last_cap";
  if (read_file(p, &text, NULL, 64, err) < 0)
    return -1;
  errno = 0;
  last = strtol(text, &end, 10);
  if (errno || end == text)
    return crest_error_make(err, 0, "`%s` does not hold a number", p);
  return last >= 40 ? 1 : 0;
}
