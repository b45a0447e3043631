/* Unit tests: may an image be restored into a bundle's config
   (runtime/src/config-compat.c)? */
#include <config.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "config-compat.h"
#include "oci-config.h"
#include "util.h"
#include "tap.h"
#include "config-tap.h"

static const char *base
    = "{\"ociVersion\":\"1.0.0\",\"process\":{\"terminal\":false,\"user\":{\"uid\":0,\"gid\":0},"
      "\"args\":[\"sh\",\"-c\",\"loop\"],\"cwd\":\"/"
      "\",\"capabilities\":{\"bounding\":[\"CAP_KILL\","
      "\"CAP_AUDIT_WRITE\"],\"effective\":[\"CAP_KILL\"]}},\"root\":{\"path\":\"rootfs\","
      "\"readonly\":false},\"mounts\":[{\"destination\":\"/proc\",\"type\":\"proc\",\"source\":"
      "\"proc\"},{\"destination\":\"/data\",\"type\":\"bind\",\"source\":\"/srv/a\",\"options\":["
      "\"rbind\"]}],\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"network\"},{"
      "\"type\":\"user\"}],\"uidMappings\":[{\"containerID\":0,\"hostID\":1000,\"size\":1}]}}";

/* BASE with FROM replaced by TO. */
static char *
edited(const char *from, const char *to)
{
  const char *at = strstr(base, from);
  if (!at)
    return xstrdup("(pattern not in the base config)");
  return xasprintf("%.*s%s%s", (int)(at - base), base, to, at + strlen(from));
}

/* The difference between checkpointed CK and the bundle's GV, or "". */
static char *
diff_between(const char *ck, const char *gv)
{
  yajl_val a = parse(ck), b = parse(gv);
  char *why = a && b ? crest_config_restore_difference(a, b) : xstrdup("(unparsable)");
  if (a)
    yajl_tree_free(a);
  if (b)
    yajl_tree_free(b);
  return why ? why : xstrdup("");
}

static char *
diff_after(const char *from, const char *to)
{
  char *text = edited(from, to), *why = diff_between(base, text);
  free(text);
  return why;
}

static void
same(const char *from, const char *to, const char *what)
{
  char *why = diff_after(from, to);
  tap_is_str(why, "", "%s may differ", what);
  free(why);
}

static void
differs(const char *from, const char *to, const char *want)
{
  char *why = diff_after(from, to);
  tap_is_str(why, want, "refused: %s", want);
  free(why);
}

/* crest_restore_bundle_config with a bundle holding BUNDLE_TEXT, the
   checkpointed config being CKPT_TEXT: the chosen config's text, or the
   error. */
static char *
pick(const char *ckpt_text, const char *bundle_text)
{
  char dir[] = "/tmp/crest-compat-XXXXXX", *path, *text = xstrdup(ckpt_text), *out;
  size_t len = strlen(text);
  crest_error_t err = NULL;
  yajl_val ck = parse(ckpt_text);

  if (!mkdtemp(dir) || !ck)
    return xstrdup("(setup failed)");
  path = xasprintf("%s/config.json", dir);
  if (bundle_text && write_file_atomic(path, bundle_text, strlen(bundle_text), 0600, &err) < 0)
    return xstrdup("(write failed)");
  if (crest_restore_bundle_config(dir, &ck, &text, &len, &err) < 0)
    {
      out = crest_error_text(err);
      crest_error_release(&err);
      free(text);
    }
  else
    out = text;
  yajl_tree_free(ck);
  unlink(path);
  rmdir(dir);
  free(path);
  return out;
}

int
main(void)
{
  /* What the tree does not carry, or what restore checks elsewhere. */
  same("\"path\":\"rootfs\"", "\"path\":\"/var/lib/new/merged\"", "root.path");
  same("\"source\":\"/srv/a\"", "\"source\":\"/mnt/b\"", "a bind mount's source");

  same("\"hostID\":1000", "\"hostID\":0", "a mapping's hostID");
  {
    /* A joined namespace may be another one (a new pod's). */
    char *a
        = diff_after("{\"type\":\"network\"}", "{\"type\":\"network\",\"path\":\"/run/netns/x\"}");
    char *x = edited("{\"type\":\"network\"}", "{\"type\":\"network\",\"path\":\"/run/netns/a\"}");
    char *y = edited("{\"type\":\"network\"}", "{\"type\":\"network\",\"path\":\"/run/netns/b\"}");
    char *b = diff_between(x, y);
    tap_is_str(a, "linux.namespaces[network].path is only in the bundle's config",
               "a namespace joined in the bundle's config only is refused");
    tap_is_str(b, "", "a joined namespace may be another one");
    free(a);
    free(b);
    free(x);
    free(y);
  }
  same("\"ociVersion\":\"1.0.0\",", "\"ociVersion\":\"1.0.2\",\"annotations\":{\"a\":\"b\"},",
       "ociVersion, annotations");
  same("\"linux\":{", "\"linux\":{\"cgroupsPath\":\"/x\",\"resources\":{},", "cgroupsPath");
  /* Order that means nothing. */
  same("{\"type\":\"pid\"},{\"type\":\"network\"}", "{\"type\":\"network\"},{\"type\":\"pid\"}",
       "the order of namespaces");
  same("\"CAP_KILL\",\"CAP_AUDIT_WRITE\"", "\"CAP_AUDIT_WRITE\",\"CAP_KILL\"",
       "the order of a capability set");
  same("\"uid\":0,\"gid\":0", "\"gid\":0,\"uid\":0", "the order of an object's keys");
  /* What the tree carries. */
  differs("\"loop\"", "\"other\"",
          "process.args[2] differs: `other` in the bundle's, `loop` checkpointed");
  differs("\"uid\":0", "\"uid\":5",
          "process.user.uid differs: `5` in the bundle's, `0` checkpointed");
  differs(",{\"type\":\"network\"}", "",
          "linux.namespaces differs: a network namespace only in the checkpointed config");
  differs("{\"type\":\"pid\"}", "{\"type\":\"pid\"},{\"type\":\"ipc\"}",
          "linux.namespaces differs: a ipc namespace only in the bundle's config");
  differs("{\"type\":\"pid\"}", "{\"type\":\"pid\",\"path\":\"/proc/1/ns/pid\"}",
          "linux.namespaces[pid].path is only in the bundle's config");
  differs("{\"type\":\"user\"}", "{\"type\":\"user\",\"path\":\"/proc/1/ns/user\"}",
          "linux.namespaces[user].path is only in the bundle's config");
  differs("\"effective\":[\"CAP_KILL\"]", "\"effective\":[\"CAP_KILL\",\"CAP_SYS_CHROOT\"]",
          "process.capabilities.effective differs: CAP_SYS_CHROOT is only in the bundle's config");
  differs("\"options\":[\"rbind\"]", "\"options\":[\"rbind\",\"ro\"]",
          "mounts[1].options differs: 2 entries in the bundle's, 1 checkpointed");
  differs("\"containerID\":0", "\"containerID\":1",
          "linux.uidMappings[0].containerID differs: `1` in the bundle's, `0` checkpointed");
  differs("\"readonly\":false", "\"readonly\":true",
          "root.readonly differs: `true` in the bundle's, `false` checkpointed");
  differs("\"cwd\":\"/\",", "", "process.cwd is only in the checkpointed config");

  {
    /* An archive's spec.dump is untrusted: a deep nest is a difference,
       not a stack overflow. */
    char *deep = xmalloc(20001), *a, *why;
    memset(deep, '[', 10000);
    memset(deep + 10000, ']', 10000);
    deep[20000] = '\0';
    a = xasprintf("{\"x\":%s}", deep);
    why = diff_between(a, a);
    tap_ok(strstr(why, "nested deeper than any OCI config") != NULL,
           "a config nested 10000 deep: refused (%s)", why);
    free(why);
    free(a);
    free(deep);
  }
  {
    /* The grant: a container run with --cap-checkpoint-restore=add ran
       with CAP_CHECKPOINT_RESTORE its bundle's config does not name. */
    yajl_val b = parse(base);
    char *granted = NULL, *got;
    size_t len;
    crest_error_t err = NULL;
    crest_config_generate(b, CREST_GRANT_ADD, &granted, &len, &err);
    got = pick(granted, base);
    tap_is_str(got, granted,
               "the checkpointed --cap-checkpoint-restore=add grant is applied to "
               "the bundle's config");
    free(got);
    got = pick(base, base);
    tap_is_str(got, base, "the same config: the bundle's text, unchanged");
    free(got);
    got = pick(granted, NULL);
    tap_is_str(got, granted, "no config.json in the bundle: the checkpointed config");
    free(got);
    got = pick(base, "{\"process\":{}}");
    tap_ok(got
               && strstr(got, "the bundle's config.json does not fit the image: process.terminal "
                              "is only in the checkpointed config"),
           "a config that does not fit: one line naming the first difference (%s)", got);
    free(got);
    free(granted);
    yajl_tree_free(b);
  }
  return tap_done();
}
