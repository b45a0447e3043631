/* Unit tests: create/run argument parsing, container IDs, crest's state. */
#include <config.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "crest.h"
#include "lifecycle.h"
#include "state.h"
#include "util.h"
#include "tap.h"

static char *
joined(struct create_args *a)
{
  char *out = xstrdup("");
  int i;
  for (i = 0; i < a->crun_argc; i++)
    {
      char *n = xasprintf("%s%s%s", out, i ? " " : "", a->crun_argv[i]);
      free(out);
      out = n;
    }
  return out;
}

static int
parse(struct create_args *a, crest_error_t *err, ...)
{
  char *argv[32];
  int argc = 0;
  va_list ap;
  va_start(ap, err);
  while ((argv[argc] = va_arg(ap, char *)) != NULL)
    argc++;
  va_end(ap);
  return crest_parse_create_args(argc, argv, a, err);
}

int
main(void)
{
  crest_error_t err = NULL;
  struct create_args a;
  char *s;

  tap_ok(parse(&a, &err, "run", "-b", "/b", "--cap-checkpoint-restore=add", "-d", "c1", NULL) == 0,
         "run -b DIR --grant -d ID parses");
  tap_is_str(a.id, "c1", "the ID");
  tap_is_str(a.bundle, "/b", "the bundle");
  tap_is_str(a.grant_flag, "add", "the grant flag");
  tap_ok(a.detach, "detach seen");
  s = joined(&a);
  tap_is_str(s, "--bundle /b -d", "crun gets the bundle and -d, not crest's own flag");
  free(s);
  crest_create_args_free(&a);

  tap_ok(parse(&a, &err, "create", "--bundle=/x", "--cap-checkpoint-restore", "only", "--pid-file",
               "/p", "--console-socket=/s", "-f", "other.json", "id2", NULL)
             == 0,
         "create with long options and a separate grant value parses");
  tap_is_str(a.grant_flag, "only", "separate grant value");
  tap_is_str(a.config, "other.json", "-f is taken as the config");
  s = joined(&a);
  tap_is_str(s, "--bundle=/x --pid-file /p --console-socket=/s",
             "crun arguments keep their spelling, -f removed");
  free(s);
  crest_create_args_free(&a);

  tap_ok(parse(&a, &err, "run", "-dbDIR", "x", NULL) == 0 && a.detach
             && strcmp(a.bundle, "DIR") == 0,
         "grouped -dbDIR");
  crest_create_args_free(&a);

  tap_ok(parse(&a, &err, "run", "--", "-weird", NULL) == 0 && strcmp(a.id, "-weird") == 0,
         "-- ends the options");
  crest_create_args_free(&a);

  tap_ok(parse(&a, &err, "run", "-b", NULL) < 0 && strstr(err->msg, "-b"),
         "missing value of -b is an error naming it");
  crest_error_release(&err);
  crest_create_args_free(&a);
  tap_ok(parse(&a, &err, "run", "--cap-checkpoint-restore", NULL) < 0
             && strstr(err->msg, "add or only"),
         "missing grant value says what is expected");
  crest_error_release(&err);
  crest_create_args_free(&a);
  tap_ok(parse(&a, &err, "run", "-d", NULL) < 0 && strstr(err->msg, "missing container ID"),
         "missing ID");
  crest_error_release(&err);
  crest_create_args_free(&a);
  tap_ok(parse(&a, &err, "run", "a", "b", NULL) < 0 && strstr(err->msg, "`b`"),
         "two IDs: the second is named");
  crest_error_release(&err);
  crest_create_args_free(&a);
  tap_ok(parse(&a, &err, "run", "-z", "a", NULL) < 0 && strstr(err->msg, "-z"),
         "unknown short option is named");
  crest_error_release(&err);
  crest_create_args_free(&a);

  tap_ok(crest_validate_id("web-1_a.b+c", &err) == 0, "a usual ID is valid");
  tap_ok(crest_validate_id("../etc", &err) < 0, "an ID with a slash is refused");
  crest_error_release(&err);
  tap_ok(crest_validate_id("..", &err) < 0, "`..` is refused");
  crest_error_release(&err);
  tap_ok(crest_validate_id("", &err) < 0, "an empty ID is refused");
  crest_error_release(&err);

  /* State: write, read back, and the stale case. */
  {
    char tmpl[] = "/tmp/crest-test-state-XXXXXX";
    char *root = mkdtemp(tmpl);
    struct crest_global g = { 0 };
    struct crest_state st = { .id = (char *)"c1",
                              .bundle = (char *)"/b",
                              .config = (char *)"/b/config.json",
                              .rootless = true,
                              .grant = (char *)"add" };
    struct crest_state got;
    char *crun_dir;
    tap_ok(root != NULL, "temporary root");
    g.root = root;
    g.crun_root = xasprintf("%s/crun", root);
    st.crun_root = (char *)g.crun_root;
    crun_dir = xasprintf("%s/c1", g.crun_root);
    tap_ok(mkdir_p(crun_dir, 0700, &err) == 0,
           "a crun container directory stands in for crun's state");
    tap_ok(crest_state_write(&g, &st, &err) == 0, "state written");
    tap_ok(crest_state_read(&g, "c1", &got, &err) == 1, "state read back");
    tap_is_str(got.bundle, "/b", "bundle survives");
    tap_is_str(got.config, "/b/config.json", "config path survives");
    tap_is_str(got.grant, "add", "grant survives");
    tap_ok(got.rootless, "rootless survives");
    crest_state_free(&got);
    tap_ok(crest_state_read(&g, "nope", &got, &err) == 0, "no state for an unknown ID");
    rmdir(crun_dir);
    tap_ok(crest_state_read(&g, "c1", &got, &err) == 0,
           "crun forgot the container: state is stale");
    {
      char *dir = crest_state_dir(&g, "c1");
      struct stat sb;
      tap_ok(stat(dir, &sb) < 0, "the stale state was removed");
      free(dir);
    }
    {
      char *dir = crest_state_dir(&g, "bad");
      char *f = xasprintf("%s/state.json", dir);
      tap_ok(mkdir_p(dir, 0700, &err) == 0 && write_file_atomic(f, "{not json", 9, 0600, &err) == 0,
             "corrupt state file");
      tap_ok(crest_state_read(&g, "bad", &got, &err) < 0 && strstr(err->msg, "corrupt"),
             "a corrupt state is reported");
      crest_error_release(&err);
      free(f);
      free(dir);
    }
    remove_tree(root, &err);
    free(crun_dir);
    free((char *)g.crun_root);
  }
  return tap_done();
}
