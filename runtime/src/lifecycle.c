/* crest: create, run, delete and list. crun does the work; crest applies the
   CAP_CHECKPOINT_RESTORE grant on a private copy of the config and keeps a
   small state so that a later checkpoint knows the container. */
#include <config.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "crest.h"
#include "oci-config.h"
#include "lifecycle.h"
#include "log.h"
#include "state.h"
#include "util.h"
#include "verbs.h"

#define GRANT_OPT "--cap-checkpoint-restore"

/* crun's create/run options that take a value. */
static const char *const with_value[]
    = { "--bundle", "--console-socket", "--config", "--pid-file", "--preserve-fds", NULL };

static bool
takes_value(const char *opt)
{
  size_t i;
  for (i = 0; with_value[i]; i++)
    if (strcmp(opt, with_value[i]) == 0)
      return true;
  return false;
}

static void
push(struct create_args *a, char *s)
{
  a->crun_argv = xrealloc(a->crun_argv, sizeof(char *) * (size_t)(a->crun_argc + 2));
  a->crun_argv[a->crun_argc++] = s;
  a->crun_argv[a->crun_argc] = NULL;
}

int
crest_parse_create_args(int argc, char **argv, struct create_args *out, crest_error_t *err)
{
  int i;
  bool options_done = false;
  memset(out, 0, sizeof *out);
  push(out, NULL); /* keep crun_argv non-NULL and NULL-terminated */
  out->crun_argc = 0;

  for (i = 1; i < argc; i++)
    {
      char *a = argv[i];
      if (!options_done && strcmp(a, "--") == 0)
        {
          options_done = true;
          continue;
        }
      if (!options_done && strncmp(a, "--", 2) == 0)
        {
          char *eq = strchr(a, '=');
          cleanup_free char *name = eq ? strndup(a, (size_t)(eq - a)) : xstrdup(a);
          const char *value = eq ? eq + 1 : NULL;
          if (strcmp(name, GRANT_OPT) == 0)
            {
              if (value == NULL)
                {
                  if (i + 1 >= argc)
                    return crest_error_make(err, 0, "option `%s` needs a value (add or only)",
                                            name);
                  value = argv[++i];
                }
              out->grant_flag = value;
              continue;
            }
          if (takes_value(name) && value == NULL)
            {
              if (i + 1 >= argc)
                return crest_error_make(err, 0, "option `%s` needs a value", name);
              value = argv[++i];
            }
          if (strcmp(name, "--bundle") == 0)
            out->bundle = value;
          else if (strcmp(name, "--config") == 0)
            {
              out->config = value;
              continue;
            }
          else if (strcmp(name, "--detach") == 0)
            out->detach = true;
          if (value && !eq)
            {
              push(out, a);
              push(out, (char *)value);
            }
          else
            push(out, a);
          continue;
        }
      if (!options_done && a[0] == '-' && a[1] != '\0')
        {
          /* Short options, possibly grouped: -d, -b DIR, -bDIR, -f FILE. */
          const char *p;
          for (p = a + 1; *p; p++)
            {
              if (*p == 'd')
                {
                  out->detach = true;
                  push(out, (char *)"-d");
                  continue;
                }
              if (*p == 'b' || *p == 'f')
                {
                  const char *value = p[1] ? p + 1 : NULL;
                  char opt = *p;
                  if (value == NULL)
                    {
                      if (i + 1 >= argc)
                        return crest_error_make(err, 0, "option `-%c` needs a value", opt);
                      value = argv[++i];
                    }
                  if (opt == 'b')
                    {
                      out->bundle = value;
                      push(out, (char *)"--bundle");
                      push(out, (char *)value);
                    }
                  else
                    out->config = value;
                  break;
                }
              return crest_error_make(err, 0, "unknown option `-%c`", *p);
            }
          continue;
        }
      if (out->id)
        return crest_error_make(err, 0, "unexpected argument `%s` after container ID `%s`", a,
                                out->id);
      out->id = a;
    }
  if (out->id == NULL)
    return crest_error_make(err, 0, "missing container ID");
  return 0;
}

void
crest_create_args_free(struct create_args *a)
{
  free(a->crun_argv);
  memset(a, 0, sizeof *a);
}

int
crest_resolve_grant(const char *flag, yajl_val config, enum crest_grant *out, crest_error_t *err)
{
  if (flag)
    {
      if (crest_grant_parse(flag, out, err) < 0)
        return crest_error_wrap(err, "option `%s`", GRANT_OPT);
      return 0;
    }
  return crest_config_annotation_grant(config, out, err);
}

static char *
absolute(const char *base, const char *p)
{
  char cwd[PATH_MAX];
  if (p[0] == '/')
    return xstrdup(p);
  if (base)
    return xasprintf("%s/%s", base, p);
  if (getcwd(cwd, sizeof cwd) == NULL)
    return NULL;
  return xasprintf("%s/%s", cwd, p);
}

static int
create_or_run(struct crest_global *g, int argc, char **argv, bool is_run, crest_error_t *errp)
{
  cleanup_error crest_error_t err = NULL;
  cleanup_free char *bundle = NULL, *user_config = NULL, *text = NULL, *private_config = NULL;
  cleanup_free char *config_arg = NULL, *generated = NULL, *state_dir = NULL;
  struct create_args a;
  struct crest_state st = { 0 };
  enum crest_grant grant = CREST_GRANT_NONE;
  yajl_val config = NULL;
  size_t glen = 0;
  bool keep_state;
  int status;

  if (crest_parse_create_args(argc, argv, &a, errp) < 0)
    return crest_error_wrap(errp, "%s", argv[0]);
  if (crest_validate_id(a.id, &err) < 0)
    goto fail;

  bundle = absolute(NULL, a.bundle ? a.bundle : ".");
  if (bundle == NULL)
    {
      crest_error_errno(&err, "getcwd");
      goto fail;
    }
  {
    char real[PATH_MAX];
    if (realpath(bundle, real) == NULL)
      {
        crest_error_errno(&err, "container `%s`: bundle `%s`", a.id, bundle);
        goto fail;
      }
    free(bundle);
    bundle = xstrdup(real);
  }
  user_config = absolute(bundle, a.config ? a.config : "config.json");

  if (read_file(user_config, &text, NULL, 16u << 20, &err) < 0
      || crest_config_parse(text, &config, &err) < 0)
    {
      crest_error_wrap(&err, "container `%s`: config `%s`", a.id, user_config);
      goto fail;
    }
  if (crest_resolve_grant(a.grant_flag, config, &grant, &err) < 0)
    {
      crest_error_wrap(&err, "container `%s`", a.id);
      goto fail;
    }
  if (grant != CREST_GRANT_NONE)
    {
      int has = crest_kernel_has_cap_cr(NULL, &err);
      if (has < 0)
        goto fail;
      if (!has)
        {
          crest_error_make(&err, ENOTSUP,
                           "container `%s`: cannot grant CAP_CHECKPOINT_RESTORE: the running "
                           "kernel does not know "
                           "capability 40 (Linux 5.9 or later is needed)",
                           a.id);
          goto fail;
        }
    }
  if (crest_crun_has(g, NULL, a.id))
    {
      crest_error_make(&err, EEXIST, "container `%s` already exists", a.id);
      goto fail;
    }

  state_dir = crest_state_dir(g, a.id);
  if (mkdir_p(state_dir, 0700, &err) < 0)
    goto fail;

  if (grant != CREST_GRANT_NONE)
    {
      /* Never touch the user's bundle: the changed config is crest's own copy. */
      private_config = xasprintf("%s/config.json", state_dir);
      if (crest_config_generate(config, grant, &generated, &glen, &err) < 0
          || write_file_atomic(private_config, generated, glen, 0600, &err) < 0)
        {
          crest_error_wrap(&err, "container `%s`: write the config with the grant", a.id);
          crest_state_remove(g, a.id, NULL);
          goto fail;
        }
      config_arg = xasprintf("--config=%s", private_config);
    }
  else if (a.config)
    config_arg = xasprintf("--config=%s", user_config);

  st.id = (char *)a.id;
  st.bundle = bundle;
  st.crun_root = (char *)g->crun_root;
  st.config = private_config ? private_config : user_config;
  st.rootless = g->is_rootless;
  st.grant = (char *)crest_grant_name(grant);
  if (crest_state_write(g, &st, &err) < 0)
    {
      crest_state_remove(g, a.id, NULL);
      goto fail;
    }

  {
    /* crun's arguments: what the user gave, the config crest chose, the ID. */
    char **args = xmalloc(sizeof(char *) * (size_t)(a.crun_argc + 3));
    int n = 0, i;
    if (config_arg)
      args[n++] = config_arg;
    for (i = 0; i < a.crun_argc; i++)
      args[n++] = a.crun_argv[i];
    args[n++] = (char *)a.id;
    args[n] = NULL;
    status = crest_crun_run(g, is_run ? "run" : "create", args, &err);
    free(args);
  }
  if (status < 0)
    {
      crest_state_remove(g, a.id, NULL);
      goto fail;
    }

  /* A foreground run is over, and crun has deleted the container; a failed
     create or run leaves nothing for crest to remember either. */
  keep_state = status == 0 && (!is_run || a.detach) && crest_crun_has(g, NULL, a.id);
  if (!keep_state)
    crest_state_remove(g, a.id, NULL);
  yajl_tree_free(config);
  crest_create_args_free(&a);
  return status;

fail:
  /* main() reports it. */
  *errp = err;
  err = NULL;
  if (config)
    yajl_tree_free(config);
  crest_create_args_free(&a);
  return -1;
}

int
crest_verb_create(struct crest_global *g, int argc, char **argv, crest_error_t *err)
{
  return create_or_run(g, argc, argv, false, err);
}

int
crest_verb_run(struct crest_global *g, int argc, char **argv, crest_error_t *err)
{
  return create_or_run(g, argc, argv, true, err);
}

/* A container the OCI hook recorded (podman's, CRI-O's) is answered for by
   crun under the root of the front end that started it: G with that root
   (COPY, see crest_under_crun_root) when ID has such a record, else G. */
static struct crest_global *
recorded_root(struct crest_global *g, const char *id, struct crest_global *copy)
{
  crest_error_t e = NULL;
  struct crest_state st;
  if (id && crest_validate_id(id, NULL) == 0 && crest_state_peek(g, id, &st, &e) == 1)
    {
      g = crest_under_crun_root(g, st.crun_root, copy);
      if (g == copy)
        copy->crun_root = xstrdup(st.crun_root);
      crest_state_free(&st);
    }
  crest_error_release(&e);
  return g;
}

/* The container a verb names: its first argument that is not an option. */
static const char *
first_operand(int argc, char **argv)
{
  for (int a = 1; a < argc; a++)
    if (argv[a][0] != '-')
      return argv[a];
  return NULL;
}

int
crest_verb_delegate(struct crest_global *g, int argc, char **argv, crest_error_t *err)
{
  static const char *const by_id[] = { "state", "kill", "ps", "pause", "resume", NULL };
  struct crest_global hooked;
  int i;

  for (i = 0; by_id[i] && strcmp(by_id[i], argv[0]) != 0; i++)
    ;
  if (by_id[i])
    g = recorded_root(g, first_operand(argc, argv), &hooked);
  return crest_crun_exec(g, argv[0], argv + 1, err);
}

int
crest_verb_delete(struct crest_global *g, int argc, char **argv, crest_error_t *err)
{
  const char *id = first_operand(argc, argv);
  struct crest_global hooked, *h;
  int status;

  h = recorded_root(g, id, &hooked);
  status = crest_crun_run(h, "delete", argv + 1, err);
  /* Whatever crun answered, crest's state must not outlive crun's. */
  if (status >= 0 && id && crest_validate_id(id, NULL) == 0 && !crest_crun_has(h, NULL, id)
      && crest_state_remove(g, id, err) < 0)
    status = -1;
  if (h == &hooked)
    {
      free((char *)hooked.crun_root);
      crest_crun_root_release(h, &hooked);
    }
  return status;
}

int
crest_verb_list(struct crest_global *g, int argc, char **argv, crest_error_t *err)
{
  cleanup_error crest_error_t gc_err = NULL;
  int removed = crest_state_gc(g, &gc_err);
  /* Stale state that cannot be removed does not stop the listing. */
  if (removed < 0)
    {
      cleanup_free char *text = crest_error_text(gc_err);
      crest_warn("%s", text);
    }
  else if (removed > 0)
    crest_debug("removed %d stale container state%s", removed, removed == 1 ? "" : "s");
  return crest_crun_exec(g, "list", argv + 1, err);
}
