/* Unit tests: config.json rewriting and the CAP_CHECKPOINT_RESTORE grant. */
#include <config.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "oci-config.h"
#include "util.h"
#include "tap.h"
#include "config-tap.h"

static const char *base_config
    = "{\"ociVersion\":\"1.0.0\",\"process\":{\"terminal\":false,\"user\":{\"uid\":0,\"gid\":0},"
      "\"args\":[\"sh\"],\"capabilities\":{\"bounding\":[\"CAP_KILL\",\"CAP_AUDIT_WRITE\"],"
      "\"effective\":[\"CAP_KILL\",\"CAP_AUDIT_WRITE\"],\"inheritable\":[],"
      "\"permitted\":[\"CAP_KILL\",\"CAP_AUDIT_WRITE\"],\"ambient\":[\"CAP_KILL\"]}},"
      "\"root\":{\"path\":\"rootfs\",\"readonly\":true},\"linux\":{\"uidMappings\":[{"
      "\"containerID\":0,"
      "\"hostID\":1000,\"size\":1}],\"memoryLimit\":12345678901234567890,\"ratio\":1.50}}";

/* The capability set SET of the generated config, as "A,B,C". */
static char *
set_of(yajl_val root, const char *set)
{
  const char *path[] = { "process", "capabilities", set, NULL };
  yajl_val a = yajl_tree_get(root, path, yajl_t_array);
  char *out = xstrdup("");
  size_t i;
  if (a == NULL)
    {
      free(out);
      return xstrdup("(absent)");
    }
  for (i = 0; i < a->u.array.len; i++)
    {
      char *n = xasprintf("%s%s%s", out, i ? "," : "", YAJL_GET_STRING(a->u.array.values[i]));
      free(out);
      out = n;
    }
  return out;
}

static yajl_val
generate(const char *text, enum crest_grant grant)
{
  crest_error_t err = NULL;
  yajl_val in = parse(text), out;
  char *json = NULL;
  if (in == NULL)
    return NULL;
  if (crest_config_generate(in, grant, &json, NULL, &err) < 0)
    {
      printf("# generate failed: %s\n", err->msg);
      crest_error_release(&err);
      yajl_tree_free(in);
      return NULL;
    }
  yajl_tree_free(in);
  out = parse(json);
  free(json);
  return out;
}

static void
check_sets(yajl_val v, const char *label, const char *bnd, const char *eff, const char *inh,
           const char *prm, const char *amb)
{
  const char *names[] = { "bounding", "effective", "inheritable", "permitted", "ambient" };
  const char *want[] = { bnd, eff, inh, prm, amb };
  size_t i;
  for (i = 0; i < 5; i++)
    {
      char *got = v ? set_of(v, names[i]) : xstrdup("(no config)");
      tap_is_str(got, want[i], "%s: %s set", label, names[i]);
      free(got);
    }
}

int
main(void)
{
  crest_error_t err = NULL;
  yajl_val v;
  enum crest_grant g;
  char *json = NULL, *json2 = NULL;

  /* Round trip without a grant: every value, numbers in their own spelling. */
  v = parse(base_config);
  tap_ok(v && crest_config_generate(v, CREST_GRANT_NONE, &json, NULL, &err) == 0,
         "generate without grant");
  if (json)
    {
      yajl_val again = parse(json);
      tap_ok(again != NULL, "generated config parses again");
      tap_ok(strstr(json, "12345678901234567890") != NULL,
             "a number beyond 64 bits keeps its digits");
      tap_ok(strstr(json, "1.50") != NULL, "a decimal keeps its spelling");
      if (again && crest_config_generate(again, CREST_GRANT_NONE, &json2, NULL, &err) == 0)
        tap_is_str(json2, json, "generation is stable over a second round trip");
      else
        tap_ok(0, "second round trip");
      check_sets(again, "no grant", "CAP_KILL,CAP_AUDIT_WRITE", "CAP_KILL,CAP_AUDIT_WRITE", "",
                 "CAP_KILL,CAP_AUDIT_WRITE", "CAP_KILL");
      if (again)
        yajl_tree_free(again);
    }
  free(json);
  free(json2);
  if (v)
    yajl_tree_free(v);

  /* add, process UID 0: bounding, effective, permitted; nothing else. */
  v = generate(base_config, CREST_GRANT_ADD);
  check_sets(v, "add uid 0", "CAP_KILL,CAP_AUDIT_WRITE,CAP_CHECKPOINT_RESTORE",
             "CAP_KILL,CAP_AUDIT_WRITE,CAP_CHECKPOINT_RESTORE", "",
             "CAP_KILL,CAP_AUDIT_WRITE,CAP_CHECKPOINT_RESTORE", "CAP_KILL");
  if (v)
    {
      const char *p[] = { "root", "path", NULL };
      tap_is_str(crest_config_get_string(v, p), "rootfs", "add leaves root.path alone");
      yajl_tree_free(v);
    }

  /* add, process UID 1000: ambient (and so inheritable) too. */
  {
    char *cfg = xstrdup(base_config);
    char *u = strstr(cfg, "\"uid\":0");
    memcpy(u, "\"uid\":7", 7);
    v = generate(cfg, CREST_GRANT_ADD);
    check_sets(v, "add uid 7", "CAP_KILL,CAP_AUDIT_WRITE,CAP_CHECKPOINT_RESTORE",
               "CAP_KILL,CAP_AUDIT_WRITE,CAP_CHECKPOINT_RESTORE", "CAP_CHECKPOINT_RESTORE",
               "CAP_KILL,CAP_AUDIT_WRITE,CAP_CHECKPOINT_RESTORE",
               "CAP_KILL,CAP_CHECKPOINT_RESTORE");
    if (v)
      yajl_tree_free(v);
    free(cfg);
  }

  /* only: the sole capability, in every set. */
  v = generate(base_config, CREST_GRANT_ONLY);
  check_sets(v, "only", "CAP_CHECKPOINT_RESTORE", "CAP_CHECKPOINT_RESTORE",
             "CAP_CHECKPOINT_RESTORE", "CAP_CHECKPOINT_RESTORE", "CAP_CHECKPOINT_RESTORE");
  if (v)
    yajl_tree_free(v);

  /* A config with no capabilities at all gets the sets it needs. */
  v = generate("{\"process\":{\"args\":[\"sh\"]}}", CREST_GRANT_ADD);
  check_sets(v, "add without capabilities", "CAP_CHECKPOINT_RESTORE", "CAP_CHECKPOINT_RESTORE",
             "(absent)", "CAP_CHECKPOINT_RESTORE", "(absent)");
  if (v)
    yajl_tree_free(v);

  /* Already granted: not twice. */
  v = generate(
      "{\"process\":{\"capabilities\":{\"bounding\":[\"CAP_CHECKPOINT_RESTORE\"],\"effective\":[],"
      "\"permitted\":[\"CAP_CHECKPOINT_RESTORE\"]}}}",
      CREST_GRANT_ADD);
  check_sets(v, "add twice", "CAP_CHECKPOINT_RESTORE", "CAP_CHECKPOINT_RESTORE", "(absent)",
             "CAP_CHECKPOINT_RESTORE", "(absent)");
  if (v)
    yajl_tree_free(v);

  /* Errors. */
  v = parse("{\"root\":{}}");
  tap_ok(v && crest_config_generate(v, CREST_GRANT_ADD, &json, NULL, &err) < 0 && err
             && strstr(err->msg, "process") != NULL,
         "grant without a process object is refused and says why");
  crest_error_release(&err);
  if (v)
    yajl_tree_free(v);
  v = parse("{\"process\":{\"capabilities\":[]}}");
  tap_ok(v && crest_config_generate(v, CREST_GRANT_ONLY, &json, NULL, &err) < 0,
         "capabilities that are not an object are refused");
  crest_error_release(&err);
  if (v)
    yajl_tree_free(v);
  tap_ok(crest_config_parse("{\"a\":", &v, &err) < 0 && strstr(err->msg, "invalid JSON"),
         "truncated JSON is refused");
  crest_error_release(&err);
  tap_ok(crest_config_parse("[1,2]", &v, &err) < 0 && strstr(err->msg, "not an object"),
         "a top-level array is refused");
  crest_error_release(&err);

  /* Grant names and the annotation. */
  tap_ok(crest_grant_parse("add", &g, &err) == 0 && g == CREST_GRANT_ADD, "grant `add` parses");
  tap_ok(crest_grant_parse("only", &g, &err) == 0 && g == CREST_GRANT_ONLY, "grant `only` parses");
  tap_ok(crest_grant_parse("none", &g, &err) == 0 && g == CREST_GRANT_NONE, "grant `none` parses");
  tap_ok(crest_grant_parse("ADD", &g, &err) < 0 && strstr(err->msg, "`ADD`"),
         "unknown grant value is refused, naming it");
  crest_error_release(&err);
  v = parse("{\"annotations\":{\"" CREST_GRANT_ANNOTATION "\":\"only\"}}");
  tap_ok(v && crest_config_annotation_grant(v, &g, &err) == 0 && g == CREST_GRANT_ONLY,
         "annotation asks for `only`");
  if (v)
    yajl_tree_free(v);
  v = parse("{\"annotations\":{\"" CREST_GRANT_ANNOTATION "\":\"everything\"}}");
  tap_ok(v && crest_config_annotation_grant(v, &g, &err) < 0
             && strstr(err->msg, CREST_GRANT_ANNOTATION),
         "bad annotation value is refused, naming the annotation");
  crest_error_release(&err);
  if (v)
    yajl_tree_free(v);
  v = parse("{\"annotations\":{\"other\":\"x\"}}");
  tap_ok(v && crest_config_annotation_grant(v, &g, &err) == 0 && g == CREST_GRANT_NONE,
         "no annotation: no grant");
  if (v)
    yajl_tree_free(v);

  /* Which capabilities the process crun starts holds once its program runs
     (what the restorer of a checkpointed container will hold). The cases
     of uid 0 are the ones measured with crun 1.8 (oci-config.c). */
  {
    static const struct
    {
      const char *process, *what;
      int want;
    } holds[] = {
      { "\"noNewPrivileges\": true, \"capabilities\": {\"bounding\": [\"CAP_KILL\"], "
        "\"permitted\": [\"CAP_KILL\"], \"effective\": [\"CAP_KILL\"]}",
        "uid 0, in no set", 0 },
      { "\"noNewPrivileges\": true, \"capabilities\": {\"bounding\": [\"CAP_SYS_CHROOT\"], "
        "\"permitted\": [\"CAP_SYS_CHROOT\"], \"effective\": []}",
        "uid 0, no_new_privs, in bounding and permitted but not effective", 1 },
      { "\"noNewPrivileges\": true, \"capabilities\": {\"bounding\": [\"CAP_SYS_CHROOT\"], "
        "\"permitted\": [], \"effective\": []}",
        "uid 0, no_new_privs, in bounding only", 0 },
      { "\"noNewPrivileges\": false, \"capabilities\": {\"bounding\": [\"CAP_SYS_CHROOT\"], "
        "\"permitted\": [], \"effective\": []}",
        "uid 0, without no_new_privs, in bounding only", 1 },
      { "\"user\": {\"uid\": 1000, \"gid\": 1000}, \"capabilities\": {\"bounding\": "
        "[\"CAP_SYS_CHROOT\"], \"permitted\": [\"CAP_SYS_CHROOT\"], \"effective\": "
        "[\"CAP_SYS_CHROOT\"]}",
        "uid 1000, not ambient", 0 },
      { "\"user\": {\"uid\": 1000, \"gid\": 1000}, \"capabilities\": {\"bounding\": "
        "[\"CAP_SYS_CHROOT\"], \"permitted\": [\"CAP_SYS_CHROOT\"], \"inheritable\": "
        "[\"CAP_SYS_CHROOT\"], \"ambient\": [\"CAP_SYS_CHROOT\"]}",
        "uid 1000, ambient", 1 },
      { "\"args\": [\"sh\"]", "no capabilities object: cannot tell", -1 },
      { "\"noNewPrivileges\": true, \"capabilities\": {\"effective\": [\"CAP_SYS_CHROOT\"]}",
        "no bounding list: cannot tell", -1 },
    };
    for (size_t i = 0; i < sizeof holds / sizeof holds[0]; i++)
      {
        cleanup_free char *text = xasprintf("{\"process\": {%s}}", holds[i].process);
        int got = -2;
        v = parse(text);
        if (v)
          got = crest_config_process_holds_cap(v, "CAP_SYS_CHROOT");
        tap_ok(got == holds[i].want, "CAP_SYS_CHROOT held, %s: expected %d, got %d", holds[i].what,
               holds[i].want, got);
        if (v)
          yajl_tree_free(v);
      }
  }

  /* The kernel check, against files standing in for cap_last_cap. */
  {
    char path[] = "/tmp/crest-test-cap-XXXXXX";
    int fd = mkstemp(path);
    tap_ok(fd >= 0, "temporary file");
    if (fd >= 0)
      {
        tap_ok(write(fd, "39\n", 3) == 3 && crest_kernel_has_cap_cr(path, &err) == 0,
               "cap_last_cap 39: not known");
        tap_ok(ftruncate(fd, 0) == 0 && pwrite(fd, "40\n", 3, 0) == 3
                   && crest_kernel_has_cap_cr(path, &err) == 1,
               "cap_last_cap 40: known");
        tap_ok(ftruncate(fd, 0) == 0 && pwrite(fd, "x\n", 2, 0) == 2
                   && crest_kernel_has_cap_cr(path, &err) < 0,
               "garbage in cap_last_cap is an error");
        crest_error_release(&err);
        close(fd);
        unlink(path);
      }
    tap_ok(crest_kernel_has_cap_cr("/nonexistent/cap_last_cap", &err) < 0 && err->status != 0,
           "a missing cap_last_cap is an error with its errno");
    crest_error_release(&err);
  }
  /* hostname and domainname: replaced where the config has them, added
     where it has not, every other value kept. */
  for (int withname = 0; withname < 2; withname++)
    {
      const char *text = withname ? "{\"ociVersion\":\"1.0.0\",\"hostname\":\"cfg\",\"root\":{}}"
                                  : "{\"ociVersion\":\"1.0.0\",\"root\":{}}";
      struct crest_config_edit e = { .grant = CREST_GRANT_NONE };
      yajl_val in = parse(text), out = NULL;
      char *o = NULL;
      const char *hp[] = { "hostname", NULL }, *dp[] = { "domainname", NULL },
                 *vp[] = { "ociVersion", NULL };
      e.hostname = "set-by-it", e.domainname = "its.domain";
      if (in && crest_config_edit(in, &e, &o, NULL, &err) == 0)
        out = parse(o);
      tap_is_str(out ? crest_config_get_string(out, hp) : NULL, "set-by-it", "edit: hostname %s",
                 withname ? "replaced" : "added");
      tap_is_str(out ? crest_config_get_string(out, dp) : NULL, "its.domain",
                 "edit: domainname added (hostname %s)", withname ? "in the config" : "absent");
      tap_is_str(out ? crest_config_get_string(out, vp) : NULL, "1.0.0",
                 "edit: the other values kept (hostname %s)",
                 withname ? "in the config" : "absent");
      tap_ok(o && !strstr(o, "\"cfg\"") && strstr(o, "\"hostname\"")
                 && !strstr(strstr(o, "\"hostname\"") + 1, "\"hostname\""),
             "edit: one hostname key, the old value gone (hostname %s)",
             withname ? "in the config" : "absent");
      if (out)
        yajl_tree_free(out);
      if (in)
        yajl_tree_free(in);
      free(o);
    }
  /* as_root: the process user becomes the container's root (umask kept),
     CAP_SETUID and CAP_SETGID join permitted and effective where the
     bounding set has them, and only there. */
  for (int bnd = 0; bnd < 2; bnd++)
    {
      const char *text
          = bnd ? "{\"process\":{\"user\":{\"uid\":1000,\"gid\":1001,\"umask\":18,"
                  "\"additionalGids\":[5]},\"capabilities\":{\"bounding\":[\"CAP_KILL\","
                  "\"CAP_SETUID\",\"CAP_SETGID\"],\"permitted\":[\"CAP_KILL\"],"
                  "\"effective\":[]}}}"
                : "{\"process\":{\"user\":{\"uid\":1000,\"gid\":1001},\"capabilities\":{"
                  "\"bounding\":[\"CAP_KILL\"],\"permitted\":[],\"effective\":[]}}}";
      struct crest_config_edit e = { .grant = CREST_GRANT_NONE, .as_root = true };
      yajl_val in = parse(text), out = NULL;
      char *o = NULL;
      long uid = -1, gid = -1;
      const char *um[] = { "process", "user", "umask", NULL };
      const char *ag[] = { "process", "user", "additionalGids", NULL };
      if (in && crest_config_edit(in, &e, &o, NULL, &err) == 0)
        out = parse(o);
      if (out)
        crest_config_process_user(out, &uid, &gid);
      tap_ok(uid == 0 && gid == 0, "edit as_root: process.user is uid 0, gid 0 (was 1000, 1001)");
      if (bnd)
        {
          yajl_val m = out ? yajl_tree_get(out, um, yajl_t_number) : NULL;
          tap_ok(m && YAJL_GET_INTEGER(m) == 18 && out && !yajl_tree_get(out, ag, yajl_t_any),
                 "edit as_root: its umask kept, its supplementary groups dropped");
        }
      tap_ok(out && crest_config_process_holds_cap(out, "CAP_SETUID") == bnd
                 && crest_config_process_holds_cap(out, "CAP_SETGID") == bnd
                 && (!bnd || crest_config_process_holds_cap(out, "CAP_KILL") == 1),
             "edit as_root: CAP_SETUID and CAP_SETGID held %s",
             bnd ? "(in the bounding set: added to permitted and effective)"
                 : "nowhere (not in the bounding set: not added)");
      if (in)
        tap_ok(crest_config_root_holds_cap(in, "CAP_SETUID") == bnd,
               "the checkpoint's forecast of the same: %s", bnd ? "held" : "not held");
      if (out)
        yajl_tree_free(out);
      if (in)
        yajl_tree_free(in);
      free(o);
    }
  /* add_setpcap (the restorer's config): CAP_SETPCAP in bounding,
     permitted and effective, once, whether the config had it in some of
     them or none; inheritable and ambient untouched. */
  for (int had = 0; had < 2; had++)
    {
      const char *text
          = had ? "{\"process\":{\"capabilities\":{\"bounding\":[\"CAP_KILL\",\"CAP_SETPCAP\"],"
                  "\"permitted\":[\"CAP_SETPCAP\"],\"effective\":[],\"inheritable\":[]}}}"
                : "{\"process\":{\"capabilities\":{\"bounding\":[\"CAP_KILL\"],"
                  "\"permitted\":[\"CAP_KILL\"],\"effective\":[\"CAP_KILL\"],"
                  "\"inheritable\":[]}}}";
      struct crest_config_edit e = { .grant = CREST_GRANT_ADD, .add_setpcap = true };
      yajl_val in = parse(text), out = NULL;
      char *o = NULL;
      int n = 0;
      if (in && crest_config_edit(in, &e, &o, NULL, &err) == 0)
        out = parse(o);
      for (const char *q = o; q && (q = strstr(q, "\"CAP_SETPCAP\"")); q++)
        n++;
      tap_ok(out && crest_config_process_holds_cap(out, "CAP_SETPCAP") == 1 && n == 3
                 && crest_config_process_holds_cap(out, "CAP_KILL") == 1,
             "edit add_setpcap: CAP_SETPCAP once in each of bounding, permitted, effective (%d "
             "in all; the config had it in %s)",
             n, had ? "bounding and permitted" : "none");
      tap_ok(in && crest_config_root_holds_cap(in, "CAP_SETPCAP") == had,
             "the restore's test of whether the config gives CAP_SETPCAP: %s",
             had ? "it does" : "it does not (the restorer is told: setpcap-added)");
      if (out)
        yajl_tree_free(out);
      if (in)
        yajl_tree_free(in);
      free(o);
    }
  return tap_done();
}
