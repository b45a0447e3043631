/* crest-oci-hook: an OCI hook that tells crest about a container some other
 * front end (podman, CRI-O, plain crun) started, so that `crest checkpoint ID`
 * knows it. The runtime hands the hook the container's state on stdin
 * ({"id", "pid", "bundle", "annotations", ...}).
 *
 *   crest-oci-hook [--root DIR] [--crun-root DIR] createRuntime|poststart|poststop
 *
 * createRuntime/poststart record the container in crest's state under --root
 * (default: crest's, state-root.h), with the crun root --crun-root names
 * (default: the --root of the crun that runs the hook, else crun's default);
 * poststop forgets it. The hook changes nothing in the
 * container and never needs a capability. */
#include <config.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>
#include "crest.h"
#include "oci-config.h"
#include "state.h"
#include "state-root.h"
#include "util.h"

/* The crun root of the runtime that runs this hook: crun runs a hook as its
   own child, so its --root (podman's runtime flags, CRI-O's runtime_root)
   is on the parent's command line, among the options before the verb.
   NULL when the parent gives none (crun then uses its default). */
static char *
parent_crun_root(void)
{
  cleanup_free char *path = xasprintf("/proc/%d/cmdline", (int)getppid());
  cleanup_free char *cmd = NULL;
  crest_error_t e = NULL;
  size_t len = 0;
  char *p, *end, *root = NULL;

  if (read_file(path, &cmd, &len, 1 << 20, &e) < 0)
    {
      crest_error_release(&e);
      return NULL;
    }
  end = cmd + len;
  /* argv[0], then the global options; the first word that is not an option
     (nor an option's value) is the verb. */
  for (p = cmd + strlen(cmd) + 1; p < end && *p == '-'; p += strlen(p) + 1)
    {
      if (strncmp(p, "--root=", 7) == 0)
        root = p + 7;
      else if (strcmp(p, "--root") == 0 && p + strlen(p) + 1 < end)
        root = p += strlen(p) + 1;
      else if (strcmp(p, "--log") == 0 || strcmp(p, "--log-format") == 0
               || strcmp(p, "--cgroup-manager") == 0 || strcmp(p, "--rootless") == 0)
        p += strlen(p) + 1; /* a value given as the next word */
    }
  return root && *root == '/' ? xstrdup(root) : NULL;
}

static int
fail(crest_error_t *err, const char *stage)
{
  char *text = crest_error_text(*err);
  fprintf(stderr, "crest-oci-hook: %s: %s\n", stage, text);
  free(text);
  crest_error_release(err);
  return 1;
}

int
main(int argc, char **argv)
{
  static const struct option opts[] = {
    { "root", required_argument, NULL, 'r' },
    { "crun-root", required_argument, NULL, 'c' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  crest_error_t err = NULL;
  struct crest_global g = { 0 };
  char *root = NULL, *crun_root = NULL, *input = NULL, *bundle_config = NULL;
  const char *stage, *id, *bundle;
  const char *id_path[] = { "id", NULL }, *bundle_path[] = { "bundle", NULL };
  yajl_val state = NULL, config = NULL;
  int c, ret = 1;

  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1)
    switch (c)
      {
      case 'r':
        root = xstrdup(optarg);
        break;
      case 'c':
        crun_root = xstrdup(optarg);
        break;
      case 'h':
        printf("Usage: crest-oci-hook [--root DIR] [--crun-root DIR] "
               "createRuntime|poststart|poststop\n");
        return 0;
      default:
        fprintf(stderr, "crest-oci-hook: unknown option (see --help)\n");
        return 2;
      }
  if (optind + 1 != argc)
    {
      fprintf(
          stderr,
          "crest-oci-hook: expected one stage argument: createRuntime, poststart or poststop\n");
      return 2;
    }
  stage = argv[optind];
  if (strcmp(stage, "createRuntime") != 0 && strcmp(stage, "poststart") != 0
      && strcmp(stage, "poststop") != 0)
    {
      fprintf(
          stderr,
          "crest-oci-hook: unknown stage `%s` (expected createRuntime, poststart or poststop)\n",
          stage);
      return 2;
    }
  g.root = root ? root : crest_default_state_root(crest_rootless_detect());
  if (crun_root == NULL)
    crun_root = parent_crun_root();
  g.crun_root = crun_root ? crun_root : crest_default_crun_root();

  if (read_file("/dev/stdin", &input, NULL, 4u << 20, &err) < 0)
    return fail(&err, stage);
  if (crest_config_parse(input, &state, &err) < 0)
    {
      crest_error_wrap(&err, "container state on stdin");
      return fail(&err, stage);
    }
  id = crest_config_get_string(state, id_path);
  bundle = crest_config_get_string(state, bundle_path);
  if (crest_validate_id(id, &err) < 0)
    {
      crest_error_wrap(&err, "container state on stdin");
      goto out;
    }

  if (strcmp(stage, "poststop") == 0)
    {
      if (crest_state_remove(&g, id, &err) < 0)
        goto out;
      ret = 0;
      goto out;
    }

  if (bundle == NULL || bundle[0] != '/')
    {
      crest_error_make(&err, 0, "container `%s`: the state on stdin has no absolute bundle path",
                       id);
      goto out;
    }
  {
    struct crest_state st = { 0 }, live;
    enum crest_grant grant = CREST_GRANT_NONE;
    /* crest's own create, run and restore record the container themselves,
       under crest's crun root, before crun runs this hook: that record is
       the true one (the config's hook names podman's crun root). */
    if (crest_state_read(&g, id, &live, &err) == 1)
      {
        crest_state_free(&live);
        ret = 0;
        goto out;
      }
    crest_error_release(&err);
    char *text = NULL;
    bundle_config = xasprintf("%s/config.json", bundle);
    /* The grant is recorded for what it is: crest did not apply it here. */
    if (read_file(bundle_config, &text, NULL, 16u << 20, &err) == 0
        && crest_config_parse(text, &config, &err) == 0)
      crest_config_annotation_grant(config, &grant, &err);
    crest_error_release(&err);
    free(text);
    st.id = (char *)id;
    st.bundle = (char *)bundle;
    st.crun_root = (char *)g.crun_root;
    st.config = bundle_config;
    st.rootless = crest_rootless_detect();
    st.grant = (char *)crest_grant_name(grant);
    if (crest_state_write(&g, &st, &err) < 0)
      goto out;
  }
  ret = 0;

out:
  if (err)
    ret = fail(&err, stage);
  if (state)
    yajl_tree_free(state);
  if (config)
    yajl_tree_free(config);
  free(input);
  free(bundle_config);
  free((char *)g.root);
  free((char *)g.crun_root);
  return ret;
}
