/* crest: linux.seccomp compiled by crest (runtime/src/seccomp-profile.c) and
 * left out of the restore config (oci-config.c, drop_seccomp). The compiled
 * program is installed in a forked child, whose calls show what it does. */
#include <config.h>

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "oci-config.h"
#include "seccomp-profile.h"
#include "tap.h"

static int
compile(const char *json, struct crest_seccomp_bpf *b, char **msg)
{
  char ebuf[256];
  yajl_val v = yajl_tree_parse(json, ebuf, sizeof ebuf);
  crest_error_t err = NULL;
  int r;
  *msg = NULL;
  if (!v)
    return -2;
  r = crest_seccomp_compile(v, b, &err);
  if (r < 0)
    *msg = crest_error_text(err);
  crest_error_release(&err);
  yajl_tree_free(v);
  return r;
}

/* errno of syscall NR(A0, A1) in a child under B's program; 0 when it
   succeeded, -1 when the install failed. */
static int
errno_under(const struct crest_seccomp_bpf *b, long nr, long a0, long a1)
{
  int st;
  pid_t pid = fork();
  if (pid == 0)
    {
      struct sock_fprog fp = { (unsigned short)(b->len / 8), (struct sock_filter *)b->prog };
      if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0
          || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, b->flags, &fp) < 0)
        _exit(255);
      _exit(syscall(nr, a0, a1, 0, 0, 0) < 0 ? errno : 0);
    }
  if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
    return -1;
  return WEXITSTATUS(st) == 255 ? -1 : WEXITSTATUS(st);
}

static void
refused(const char *json, const char *want, const char *what)
{
  struct crest_seccomp_bpf b;
  char *msg;
  int r = compile(json, &b, &msg);
  tap_ok(r == -1 && msg && strstr(msg, want) && !strchr(msg, '\n'), "%s: refused, one line (%s)",
         what, msg ? msg : "none");
  free(msg);
}

static void
edit(bool drop)
{
  const char *cfg = "{\"process\":{\"args\":[\"x\"]},\"linux\":{\"namespaces\":[],"
                    "\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ALLOW\"}}}";
  char ebuf[256], *out = NULL;
  size_t len = 0;
  crest_error_t err = NULL;
  yajl_val v = yajl_tree_parse(cfg, ebuf, sizeof ebuf);
  struct crest_config_edit e = { .grant = CREST_GRANT_NONE, .drop_seccomp = drop };
  int r = crest_config_edit(v, &e, &out, &len, &err);
  tap_ok(r == 0 && out && strstr(out, "\"namespaces\"") && !strstr(out, "seccomp") == drop,
         "restore config %s linux.seccomp, the rest of linux kept", drop ? "without" : "with");
  free(out);
  crest_error_release(&err);
  yajl_tree_free(v);
}

/* What a profile does to one call, read from its JSON (the checks before
   the checkpoint injects calls into the tasks). */
static yajl_val
parsed(const char *text)
{
  char eb[256];
  yajl_val v = yajl_tree_parse(text, eb, sizeof eb);
  if (!v)
    {
      printf("Bail out! bad test JSON: %s\n", eb);
      exit(1);
    }
  return v;
}

static void
reading(void)
{
  yajl_val p = parsed(
      "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":["
      "{\"names\":[\"getitimer\"],\"action\":\"SCMP_ACT_KILL_PROCESS\"},"
      "{\"names\":[\"prctl\"],\"action\":\"SCMP_ACT_TRAP\",\"args\":[{\"index\":0,"
      "\"value\":4,\"op\":\"SCMP_CMP_EQ\"}]},"
      "{\"names\":[\"uname\"],\"action\":\"SCMP_ACT_ERRNO\"},"
      "{\"names\":[\"keyctl\",\"add_key\",\"request_key\"],\"action\":\"SCMP_ACT_ERRNO\"}]}");
  const char *a = crest_seccomp_harms(p, "getitimer"), *t = crest_seccomp_harms(p, "prctl");
  tap_ok(a && strcmp(a, "SCMP_ACT_KILL_PROCESS") == 0, "a call the profile kills on: named (%s)",
         a ? a : "none");
  tap_ok(t && strcmp(t, "SCMP_ACT_TRAP") == 0,
         "a call it traps for some arguments only: named all the same (%s)", t ? t : "none");
  tap_ok(!crest_seccomp_harms(p, "uname") && !crest_seccomp_harms(p, "brk"),
         "a call it fails with an errno, and one it lets through: harmless");
  tap_ok(crest_seccomp_keyctl(p) == 0,
         "keyctl, add_key and request_key denied: no keys to ask for");
  yajl_tree_free(p);

  p = parsed("{\"defaultAction\":\"SCMP_ACT_KILL\",\"syscalls\":[{\"names\":[\"brk\"],"
             "\"action\":\"SCMP_ACT_ALLOW\"},{\"names\":[\"mmap\"],\"action\":"
             "\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":2,\"value\":3,\"op\":\"SCMP_CMP_EQ\"}]}]}");
  a = crest_seccomp_harms(p, "waitid"), t = crest_seccomp_harms(p, "mmap");
  tap_ok(a && strcmp(a, "SCMP_ACT_KILL") == 0 && !crest_seccomp_harms(p, "brk") && t
             && strcmp(t, "SCMP_ACT_KILL") == 0,
         "a default that kills: a call no rule names, or one allowed for some arguments only, "
         "is named; one allowed plainly is not");
  tap_ok(crest_seccomp_keyctl(p) == 0, "keyctl killed by the default: never injected");
  yajl_tree_free(p);

  p = parsed("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"keyctl\"],"
             "\"action\":\"SCMP_ACT_ERRNO\"}]}");
  tap_ok(crest_seccomp_keyctl(p) == -1,
         "keyctl denied, add_key let through: keys cannot be asked for");
  yajl_tree_free(p);
  p = parsed("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":[\"keyctl\"],"
             "\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":0,\"value\":0,\"op\":"
             "\"SCMP_CMP_EQ\"}]}]}");
  tap_ok(crest_seccomp_keyctl(p) == -1, "keyctl allowed for some arguments only: cannot be asked");
  yajl_tree_free(p);
  p = parsed("{\"defaultAction\":\"SCMP_ACT_ALLOW\"}");
  tap_ok(crest_seccomp_keyctl(p) == 1 && !crest_seccomp_harms(p, "mmap"),
         "a profile allowing everything: keyctl asked, nothing harms");
  yajl_tree_free(p);
}

int
main(void)
{
  struct crest_seccomp_bpf b;
  char *msg, *arg;
  const char *prof
      = "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"architectures\":[\"SCMP_ARCH_X86_64\","
        "\"SCMP_ARCH_X86\"],\"flags\":[\"SECCOMP_FILTER_FLAG_SPEC_ALLOW\"],\"syscalls\":["
        "{\"names\":[\"keyctl\",\"no_such_call\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":95},"
        "{\"names\":[\"personality\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":22,"
        "\"args\":[{\"index\":0,\"value\":74565,\"op\":\"SCMP_CMP_EQ\"}]},"
        "{\"names\":[\"getppid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":7,\"args\":["
        "{\"index\":0,\"value\":1,\"op\":\"SCMP_CMP_EQ\"},"
        "{\"index\":0,\"value\":2,\"op\":\"SCMP_CMP_EQ\"}]},"
        "{\"names\":[\"getpid\"],\"action\":\"SCMP_ACT_ALLOW\"},"
        "{\"names\":[\"ptrace\"],\"action\":\"SCMP_ACT_ERRNO\"}]}";

  tap_ok(compile(prof, &b, &msg) == 0 && b.len > 0 && b.len % 8 == 0 && b.flags == 4,
         "a profile with two architectures, argument conditions, an unknown name, a flag and a "
         "rule with the default action (skipped: libseccomp refuses it) compiles (%zu "
         "instructions, flags %u) %s",
         b.len / 8, b.flags, msg ? msg : "");
  free(msg);
  tap_ok(errno_under(&b, SYS_keyctl, 0, -3) == 95, "keyctl denied with errnoRet 95");
  tap_ok(errno_under(&b, SYS_personality, 74565, 0) == 22,
         "personality(74565) denied by its argument condition (errno 22)");
  tap_ok(errno_under(&b, SYS_personality, 0xffffffff, 0) == 0,
         "personality(0xffffffff) allowed (the condition does not hold)");
  tap_ok(errno_under(&b, SYS_getppid, 1, 0) == 7 && errno_under(&b, SYS_getppid, 2, 0) == 7
             && errno_under(&b, SYS_getppid, 3, 0) == 0,
         "two conditions on one argument: either denies (one rule each, as crun adds them)");
  tap_ok(errno_under(&b, SYS_ptrace, 16 /* PTRACE_ATTACH */, 0) == EPERM,
         "ptrace denied with the default errno (EPERM) without errnoRet");
  arg = crest_seccomp_arg(&b);
  tap_ok(strncmp(arg, "seccomp=4:", 10) == 0 && strlen(arg) == 10 + 2 * b.len,
         "the restorer's argument: seccomp=FLAGS:HEX");
  free(arg);
  free(b.prog);

  refused("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"keyctl\"],"
          "\"action\":\"SCMP_ACT_NOTIFY\"}]}",
          "syscalls[0]: action SCMP_ACT_NOTIFY is not one crest compiles", "SCMP_ACT_NOTIFY");
  refused("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"listenerPath\":\"/run/agent.sock\"}",
          "listenerPath is not compiled by crest", "listenerPath");
  refused("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"flags\":[\"SECCOMP_FILTER_FLAG_NEW_LISTENER\"]}",
          "flag SECCOMP_FILTER_FLAG_NEW_LISTENER", "an unknown flag");
  refused("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"keyctl\"],"
          "\"action\":\"SCMP_ACT_ERRNO\",\"args\":[{\"index\":0,\"value\":1,\"op\":\"SCMP_CMP_XX\"}"
          "]}]}",
          "argument condition 0", "an unknown operator");
  refused("{\"defaultAction\":\"SCMP_ACT_SOMETHING\"}", "defaultAction", "an unknown default");
  refused("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"architectures\":[\"SCMP_ARCH_NOPE\"]}",
          "architecture SCMP_ARCH_NOPE", "an unknown architecture");
  edit(true);
  edit(false);
  reading();
  return tap_done();
}
