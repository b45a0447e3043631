/* crest: a container's OCI linux.seccomp compiled into one classic BPF
 * program with libseccomp, the way crun compiles it when it starts the
 * container, exported once (seccomp_export_bpf) and handed to the restorer,
 * whose blob installs it in every restored thread (docs/restore.md,
 * "Seccomp"). */
#include <config.h>

#include <ctype.h>
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "oci-config.h"
#include "seccomp-profile.h"
#include "util.h"

#define BPF_INSN 8 /* sizeof(struct sock_filter) */
#define BPF_MAX 4096

static bool
unsigned_of(yajl_val v, unsigned long long *out)
{
  char *end;
  if (!v || !YAJL_IS_NUMBER(v) || v->u.number.r[0] == '-')
    return false;
  errno = 0;
  *out = strtoull(v->u.number.r, &end, 10);
  return errno == 0 && *end == '\0';
}

/* The libseccomp action of the string A (errno ERRNO_RET where it takes
   one); false for one crest does not compile. */
static bool
action_of(yajl_val a, uint32_t errno_ret, uint32_t *out)
{
  static const struct
  {
    const char *name;
    uint32_t act;
  } plain[] = { { "SCMP_ACT_ALLOW", SCMP_ACT_ALLOW },
                { "SCMP_ACT_LOG", SCMP_ACT_LOG },
                { "SCMP_ACT_KILL", SCMP_ACT_KILL_THREAD },
                { "SCMP_ACT_KILL_THREAD", SCMP_ACT_KILL_THREAD },
                { "SCMP_ACT_KILL_PROCESS", SCMP_ACT_KILL_PROCESS },
                { "SCMP_ACT_TRAP", SCMP_ACT_TRAP } };
  if (!a || !YAJL_IS_STRING(a))
    return false;
  for (size_t i = 0; i < ARRAY_SIZE(plain); i++)
    if (strcmp(a->u.string, plain[i].name) == 0)
      {
        *out = plain[i].act;
        return true;
      }
  if (strcmp(a->u.string, "SCMP_ACT_ERRNO") == 0)
    *out = SCMP_ACT_ERRNO(errno_ret);
  else if (strcmp(a->u.string, "SCMP_ACT_TRACE") == 0)
    *out = SCMP_ACT_TRACE(errno_ret);
  else
    return false; /* SCMP_ACT_NOTIFY: an agent outside answers */
  return true;
}

static bool
op_of(yajl_val o, enum scmp_compare *out)
{
  static const char *const names[]
      = { "SCMP_CMP_NE", "SCMP_CMP_LT", "SCMP_CMP_LE",       "SCMP_CMP_EQ",
          "SCMP_CMP_GE", "SCMP_CMP_GT", "SCMP_CMP_MASKED_EQ" };
  static const enum scmp_compare ops[] = { SCMP_CMP_NE, SCMP_CMP_LT, SCMP_CMP_LE,       SCMP_CMP_EQ,
                                           SCMP_CMP_GE, SCMP_CMP_GT, SCMP_CMP_MASKED_EQ };
  for (size_t i = 0; o && YAJL_IS_STRING(o) && i < ARRAY_SIZE(names); i++)
    if (strcmp(o->u.string, names[i]) == 0)
      {
        *out = ops[i];
        return true;
      }
  return false;
}

/* The argument conditions ARGS of a rule into CMP (*N of them); *SPLIT when
   one argument is compared twice (crun then adds one rule per condition). */
static int
args_of(yajl_val args, struct scmp_arg_cmp *cmp, unsigned *n, bool *split, crest_error_t *err)
{
  unsigned seen = 0;
  *n = 0, *split = false;
  if (!args || YAJL_IS_NULL(args))
    return 0;
  if (!YAJL_IS_ARRAY(args) || args->u.array.len > 6)
    return crest_error_make(err, EINVAL, "args is not an array of at most 6 conditions");
  for (size_t i = 0; i < args->u.array.len; i++)
    {
      yajl_val a = args->u.array.values[i];
      unsigned long long idx, v1 = 0, v2 = 0;
      if (!unsigned_of(crest_config_member(a, "index"), &idx) || idx > 5
          || !unsigned_of(crest_config_member(a, "value"), &v1)
          || (crest_config_member(a, "valueTwo")
              && !unsigned_of(crest_config_member(a, "valueTwo"), &v2))
          || !op_of(crest_config_member(a, "op"), &cmp[i].op))
        return crest_error_make(err, EINVAL,
                                "argument condition %zu: not an index 0-5, value, "
                                "valueTwo and known op",
                                i);
      cmp[i].arg = (unsigned)idx, cmp[i].datum_a = v1, cmp[i].datum_b = v2;
      *split |= (seen & (1u << idx)) != 0;
      seen |= 1u << idx;
    }
  *n = (unsigned)args->u.array.len;
  return 0;
}

/* Every name of RULE with its action (the default errno DEF_ERRNO). */
static int
add_rule(scmp_filter_ctx ctx, yajl_val rule, uint32_t def_act, uint32_t def_errno,
         crest_error_t *err)
{
  yajl_val names = crest_config_member(rule, "names"), er = crest_config_member(rule, "errnoRet");
  unsigned long long e = def_errno;
  struct scmp_arg_cmp cmp[6];
  unsigned n;
  bool split;
  uint32_t act;

  if (er && (!unsigned_of(er, &e) || e > 4095))
    return crest_error_make(err, EINVAL, "errnoRet is not a number 0-4095");
  if (!action_of(crest_config_member(rule, "action"), (uint32_t)e, &act))
    return crest_error_make(err, ENOTSUP, "action %s is not one crest compiles",
                            crest_config_member(rule, "action")
                                    && YAJL_IS_STRING(crest_config_member(rule, "action"))
                                ? crest_config_member(rule, "action")->u.string
                                : "(none)");
  if (args_of(crest_config_member(rule, "args"), cmp, &n, &split, err) < 0)
    return -1;
  if (!names || !YAJL_IS_ARRAY(names))
    return crest_error_make(err, EINVAL, "no names");
  if (act == def_act)
    return 0; /* the default already (libseccomp refuses such a rule) */
  for (size_t i = 0; i < names->u.array.len; i++)
    {
      yajl_val nm = names->u.array.values[i];
      int nr, r = 0;
      if (!YAJL_IS_STRING(nm))
        return crest_error_make(err, EINVAL, "a name is not a string");
      nr = seccomp_syscall_resolve_name(nm->u.string);
      if (nr == __NR_SCMP_ERROR)
        continue; /* unknown to this libseccomp: crun skips it too */
      if (split)
        for (unsigned k = 0; k < n && r == 0; k++)
          r = seccomp_rule_add_array(ctx, act, nr, 1, &cmp[k]);
      else
        r = seccomp_rule_add_array(ctx, act, nr, n, cmp);
      if (r < 0)
        return crest_error_sys(err, -r, "%s: libseccomp refuses the rule", nm->u.string);
    }
  return 0;
}

/* The top-level keys, the flags and the architectures. */
static int
profile_head(scmp_filter_ctx ctx, yajl_val sc, unsigned *flags, crest_error_t *err)
{
  static const char *const known[]
      = { "defaultAction", "defaultErrnoRet", "architectures", "flags", "syscalls" };
  yajl_val archs = crest_config_member(sc, "architectures"), fl = crest_config_member(sc, "flags");
  for (size_t i = 0; i < sc->u.object.len; i++)
    {
      size_t k = 0;
      while (k < ARRAY_SIZE(known) && strcmp(known[k], sc->u.object.keys[i]) != 0)
        k++;
      if (k == ARRAY_SIZE(known))
        return crest_error_make(err, ENOTSUP, "%s is not compiled by crest%s", sc->u.object.keys[i],
                                strncmp(sc->u.object.keys[i], "listener", 8) == 0
                                    ? " (notifications answered outside the container)"
                                    : "");
    }
  *flags = 0;
  for (size_t i = 0; fl && YAJL_IS_ARRAY(fl) && i < fl->u.array.len; i++)
    {
      const char *f = YAJL_IS_STRING(fl->u.array.values[i]) ? fl->u.array.values[i]->u.string : "";
      if (strcmp(f, "SECCOMP_FILTER_FLAG_LOG") == 0)
        *flags |= 2;
      else if (strcmp(f, "SECCOMP_FILTER_FLAG_SPEC_ALLOW") == 0)
        *flags |= 4;
      else if (strcmp(f, "SECCOMP_FILTER_FLAG_TSYNC") != 0) /* one thread at crun's install */
        return crest_error_make(err, ENOTSUP, "flag %s is not one crest installs", f);
    }
  for (size_t i = 0; archs && YAJL_IS_ARRAY(archs) && i < archs->u.array.len; i++)
    {
      yajl_val a = archs->u.array.values[i];
      char name[32];
      uint32_t arch;
      int r;
      if (!YAJL_IS_STRING(a) || strncmp(a->u.string, "SCMP_ARCH_", 10) != 0
          || strlen(a->u.string + 10) >= sizeof name)
        return crest_error_make(err, EINVAL, "an architecture is not SCMP_ARCH_...");
      for (size_t k = 0; k <= strlen(a->u.string + 10); k++)
        name[k] = (char)tolower((unsigned char)a->u.string[10 + k]);
      arch = seccomp_arch_resolve_name(name);
      r = arch ? seccomp_arch_add(ctx, arch) : -EINVAL;
      if (r < 0 && r != -EEXIST)
        return crest_error_sys(err, -r, "architecture %s: libseccomp does not know it",
                               a->u.string);
    }
  return 0;
}

/* The filter of CTX as BPF into OUT. */
static int
export_bpf(scmp_filter_ctx ctx, struct crest_seccomp_bpf *out, crest_error_t *err)
{
  int fd = memfd_create("crest-seccomp", MFD_CLOEXEC), r;
  off_t size;
  if (fd < 0)
    return crest_error_errno(err, "memfd_create");
  r = seccomp_export_bpf(ctx, fd);
  size = lseek(fd, 0, SEEK_END);
  if (r < 0 || size <= 0 || size % BPF_INSN || size > BPF_MAX * BPF_INSN)
    {
      close(fd);
      return crest_error_sys(err, r < 0 ? -r : E2BIG, "export the filter: %s",
                             r < 0 ? strerror(-r) : "not 1 to 4096 instructions");
    }
  out->prog = xmalloc((size_t)size);
  out->len = (size_t)size;
  r = pread(fd, out->prog, out->len, 0) == size ? 0 : -1;
  close(fd);
  if (r < 0)
    {
      free(out->prog);
      out->prog = NULL;
      return crest_error_errno(err, "read the exported filter");
    }
  return 0;
}

int
crest_seccomp_compile(yajl_val sc, struct crest_seccomp_bpf *out, crest_error_t *err)
{
  yajl_val rules = crest_config_member(sc, "syscalls"),
           de = crest_config_member(sc, "defaultErrnoRet");
  unsigned long long def_errno = EPERM;
  uint32_t def_act;
  scmp_filter_ctx ctx;
  int rc = 0;

  memset(out, 0, sizeof *out);
  if (!sc || !YAJL_IS_OBJECT(sc))
    return crest_error_make(err, EINVAL, "linux.seccomp is not an object");
  if (de && (!unsigned_of(de, &def_errno) || def_errno > 4095))
    return crest_error_make(err, EINVAL, "defaultErrnoRet is not a number 0-4095");
  if (!action_of(crest_config_member(sc, "defaultAction"), (uint32_t)def_errno, &def_act))
    return crest_error_make(err, ENOTSUP, "its defaultAction is not one crest compiles");
  ctx = seccomp_init(def_act);
  if (!ctx)
    return crest_error_make(err, ENOMEM, "libseccomp: seccomp_init failed");
  rc = profile_head(ctx, sc, &out->flags, err);
  for (size_t i = 0; rc == 0 && rules && YAJL_IS_ARRAY(rules) && i < rules->u.array.len; i++)
    if (add_rule(ctx, rules->u.array.values[i], def_act, (uint32_t)def_errno, err) < 0)
      rc = crest_error_wrap(err, "syscalls[%zu]", i);
  if (rc == 0)
    rc = export_bpf(ctx, out, err);
  seccomp_release(ctx);
  return rc;
}

char *
crest_seccomp_arg(const struct crest_seccomp_bpf *b)
{
  char *s = xmalloc(32 + 2 * b->len);
  int n = sprintf(s, "seccomp=%u:", b->flags);
  for (size_t i = 0; i < b->len; i++)
    n += sprintf(s + n, "%02x", b->prog[i]);
  return s;
}

/* --- what a profile does to one call, read from the JSON (the checks a
   checkpoint makes before it injects calls into the container's tasks) --- */

static bool
action_allows(yajl_val a)
{
  return a && YAJL_IS_STRING(a)
         && (strcmp(a->u.string, "SCMP_ACT_ALLOW") == 0
             || strcmp(a->u.string, "SCMP_ACT_LOG") == 0);
}

/* An action that ends the task or stops it (kill, trap, an agent's
   answer), rather than failing the call. */
static bool
action_harms(yajl_val a)
{
  return !a || !YAJL_IS_STRING(a)
         || (strncmp(a->u.string, "SCMP_ACT_KILL", 13) == 0
             || strcmp(a->u.string, "SCMP_ACT_TRAP") == 0
             || strcmp(a->u.string, "SCMP_ACT_NOTIFY") == 0);
}

static bool
rule_names(yajl_val rule, const char *name)
{
  yajl_val names = crest_config_member(rule, "names"), one = crest_config_member(rule, "name");
  if (one && YAJL_IS_STRING(one) && strcmp(one->u.string, name) == 0)
    return true;
  for (size_t i = 0; names && YAJL_IS_ARRAY(names) && i < names->u.array.len; i++)
    if (YAJL_IS_STRING(names->u.array.values[i])
        && strcmp(names->u.array.values[i]->u.string, name) == 0)
      return true;
  return false;
}

static bool
rule_plain(yajl_val rule)
{
  yajl_val args = crest_config_member(rule, "args");
  return !args || YAJL_IS_NULL(args) || (YAJL_IS_ARRAY(args) && !args->u.array.len);
}

bool
crest_seccomp_allows(yajl_val seccomp, const char *name)
{
  yajl_val rules = crest_config_member(seccomp, "syscalls");
  bool denied = false;
  for (size_t i = 0; rules && YAJL_IS_ARRAY(rules) && i < rules->u.array.len; i++)
    {
      yajl_val r = rules->u.array.values[i];
      if (!rule_plain(r) || !rule_names(r, name))
        continue;
      if (action_allows(crest_config_member(r, "action")))
        return true;
      denied = true;
    }
  return !denied && action_allows(crest_config_member(seccomp, "defaultAction"));
}

const char *
crest_seccomp_harms(yajl_val seccomp, const char *name)
{
  yajl_val rules = crest_config_member(seccomp, "syscalls"), def;
  bool plain = false;
  for (size_t i = 0; rules && YAJL_IS_ARRAY(rules) && i < rules->u.array.len; i++)
    {
      yajl_val r = rules->u.array.values[i], a = crest_config_member(r, "action");
      if (!rule_names(r, name))
        continue;
      if (action_harms(a))
        return a && YAJL_IS_STRING(a) ? a->u.string : "an action crest does not know";
      plain = plain || rule_plain(r);
    }
  def = crest_config_member(seccomp, "defaultAction");
  if (!plain && action_harms(def))
    return def && YAJL_IS_STRING(def) ? def->u.string : "an action crest does not know";
  return NULL;
}

int
crest_seccomp_keyctl(yajl_val seccomp)
{
  yajl_val rules = crest_config_member(seccomp, "syscalls");
  for (size_t i = 0; rules && YAJL_IS_ARRAY(rules) && i < rules->u.array.len; i++)
    {
      yajl_val r = rules->u.array.values[i];
      if (!rule_plain(r) && rule_names(r, "keyctl"))
        return -1;
    }
  if (crest_seccomp_allows(seccomp, "keyctl"))
    return 1;
  return crest_seccomp_allows(seccomp, "add_key") || crest_seccomp_allows(seccomp, "request_key")
             ? -1
             : 0;
}
