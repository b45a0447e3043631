/* crest: the options of a container's mounts against its config's.
 *
 * A restore has crun make the container's mounts again from its config.
 * The container's root, with CAP_SYS_ADMIN in its user namespace, may have
 * remounted one of them with other options since (mount -o remount,noexec;
 * a tmpfs made larger, a proc with hidepid=): the restore would give the
 * config's back, silently. So the checkpoint compares each mount the
 * config makes (the root, its mounts, its read-only paths) with what the
 * kernel shows of it, and refuses a difference in one line. What crun
 * cannot change is taken as the source's doing: a bind keeps the flags
 * its source's mount has locked in a user namespace (nosuid, nodev,
 * noexec, read-only, access times), so those are looked up on the host.
 * docs/engine.md, the "Container" table. */
#include <config.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "mount-opts.h"
#include "oci-config.h"
#include "util.h"

static const struct
{
  const char *on, *off;
  unsigned flag;
} flag_names[] = {
  { "ro", "rw", CREST_MNT_RO },
  { "nosuid", "suid", CREST_MNT_NOSUID },
  { "nodev", "dev", CREST_MNT_NODEV },
  { "noexec", "exec", CREST_MNT_NOEXEC },
  { "nodiratime", "diratime", CREST_MNT_NODIRATIME },
};
static const char *const atime_names[] = { "relatime", "noatime", "strictatime" };

char *
crest_mount_unescape(char *s)
{
  char *o = s;
  for (char *i = s; *i; i++, o++)
    if (i[0] == '\\' && i[1] >= '0' && i[1] <= '3' && i[2] >= '0' && i[2] <= '7' && i[3] >= '0'
        && i[3] <= '7')
      *o = (char)((i[1] - '0') * 64 + (i[2] - '0') * 8 + (i[3] - '0')), i += 3;
    else
      *o = *i;
  *o = '\0';
  return s;
}

unsigned
crest_mount_flags_parse(const char *opts, int *atime)
{
  unsigned f = 0;
  *atime = CREST_ATIME_STRICT;
  for (const char *p = opts; *p;)
    {
      size_t n = strcspn(p, ",");
      for (size_t i = 0; i < ARRAY_SIZE(flag_names); i++)
        if (strlen(flag_names[i].on) == n && strncmp(p, flag_names[i].on, n) == 0)
          f |= flag_names[i].flag;
      if (n == 8 && strncmp(p, "relatime", 8) == 0)
        *atime = CREST_ATIME_RELATIME;
      else if (n == 7 && strncmp(p, "noatime", 7) == 0)
        *atime = CREST_ATIME_NOATIME;
      p += n + (p[n] == ',');
    }
  return f;
}

/* The flags and access time mode a config option list O gives (the last
   word of each pair wins, as crun reads them); *BIND: it holds bind or
   rbind. */
static unsigned
config_flags(yajl_val o, int *atime, bool *bind)
{
  unsigned f = 0;
  for (size_t k = 0; o && YAJL_IS_ARRAY(o) && k < o->u.array.len; k++)
    {
      const char *w = YAJL_IS_STRING(o->u.array.values[k]) ? o->u.array.values[k]->u.string : "";
      for (size_t i = 0; i < ARRAY_SIZE(flag_names); i++)
        if (strcmp(w, flag_names[i].on) == 0)
          f |= flag_names[i].flag;
        else if (strcmp(w, flag_names[i].off) == 0)
          f &= ~flag_names[i].flag;
      if (strcmp(w, "relatime") == 0)
        *atime = CREST_ATIME_RELATIME;
      else if (strcmp(w, "noatime") == 0)
        *atime = CREST_ATIME_NOATIME;
      else if (strcmp(w, "strictatime") == 0)
        *atime = CREST_ATIME_STRICT;
      else if (strcmp(w, "bind") == 0 || strcmp(w, "rbind") == 0)
        *bind = true;
    }
  return f;
}

static bool
str_in(yajl_val a, const char *s)
{
  for (size_t i = 0; a && YAJL_IS_ARRAY(a) && i < a->u.array.len; i++)
    if (YAJL_IS_STRING(a->u.array.values[i]) && strcmp(a->u.array.values[i]->u.string, s) == 0)
      return true;
  return false;
}

void
crest_mount_expect(yajl_val cfg, const char *mp, struct crest_mount_expect *e)
{
  yajl_val lx = crest_config_member(cfg, "linux"), mounts = crest_config_member(cfg, "mounts");
  memset(e, 0, sizeof *e);
  e->atime = CREST_ATIME_ANY;
  if (lx && str_in(crest_config_member(lx, "maskedPaths"), mp))
    return;
  if (strcmp(mp, "/") == 0)
    {
      yajl_val root = crest_config_member(cfg, "root");
      yajl_val rdo = root ? crest_config_member(root, "readonly") : NULL,
               path = root ? crest_config_member(root, "path") : NULL;
      e->known = e->bind = true;
      e->flags = rdo && YAJL_IS_TRUE(rdo) ? CREST_MNT_RO : 0;
      e->compared = ~0u;
      if (path && YAJL_IS_STRING(path))
        e->source = path->u.string;
      return;
    }
  for (size_t i = 0; mounts && YAJL_IS_ARRAY(mounts) && i < mounts->u.array.len; i++)
    {
      yajl_val m = mounts->u.array.values[i], d = crest_config_member(m, "destination"),
               o = crest_config_member(m, "options"), t = crest_config_member(m, "type"),
               src = crest_config_member(m, "source");
      int atime = CREST_ATIME_ANY;
      bool bind = false;
      if (!d || !YAJL_IS_STRING(d) || strcmp(d->u.string, mp) != 0)
        continue;
      e->known = true;
      e->compared = ~0u;
      e->options = o;
      e->type = t && YAJL_IS_STRING(t) ? t->u.string : NULL;
      e->flags = config_flags(o, &atime, &bind);
      e->bind = bind || (e->type && strcmp(e->type, "bind") == 0);
      /* a new mount without an access time option gets relatime */
      e->atime = atime == CREST_ATIME_ANY && !e->bind ? CREST_ATIME_RELATIME : atime;
      e->source = e->bind && src && YAJL_IS_STRING(src) ? src->u.string : NULL;
    }
  if (!e->known && lx && str_in(crest_config_member(lx, "readonlyPaths"), mp))
    {
      /* crun binds it on itself read-only: the rest is its parent's */
      e->known = true;
      e->flags = e->compared = CREST_MNT_RO;
    }
}

int
crest_host_path_flags(const char *path, int *atime)
{
  char real[PATH_MAX], best_mp[4096] = "", best_opts[256] = "";
  cleanup_free char *text = NULL;
  crest_error_t e = NULL;
  char *save = NULL;
  if (!realpath(path, real) || read_file("/proc/self/mountinfo", &text, NULL, 16u << 20, &e) < 0)
    {
      crest_error_release(&e);
      return -1;
    }
  for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
    {
      char mp[4096], opts[256];
      size_t n;
      if (sscanf(l, "%*u %*u %*u:%*u %*s %4095s %255s", mp, opts) != 2)
        continue;
      crest_mount_unescape(mp);
      n = strlen(mp);
      if ((strcmp(mp, "/") == 0 || (strncmp(real, mp, n) == 0 && (real[n] == '/' || !real[n])))
          && n >= strlen(best_mp))
        snprintf(best_mp, sizeof best_mp, "%s", mp),
            snprintf(best_opts, sizeof best_opts, "%s", opts);
    }
  if (!best_mp[0])
    return -1;
  return (int)crest_mount_flags_parse(best_opts, atime);
}

long long
crest_tmpfs_amount(const char *v, bool pages, long long total_pages, long page_size)
{
  char *end;
  unsigned long long n;
  errno = 0;
  n = strtoull(v, &end, 0);
  if (errno || end == v || v[0] == '-')
    return -1;
  if (*end == '%' && !end[1] && pages)
    return (long long)((n * (unsigned long long)total_pages + 99) / 100);
  if (*end)
    {
      const char *units = "kmgtpe";
      const char *u = strchr(units, *end | 0x20);
      if (!u || end[1])
        return -1;
      for (const char *x = units; x <= u; x++)
        n <<= 10;
    }
  return pages
             ? (long long)((n + (unsigned long long)page_size - 1) / (unsigned long long)page_size)
             : (long long)n;
}

/* The value of KEY= in a comma list (mountinfo's super block options), or
   of the config option list O (KEY=VALUE words); NULL when absent. */
static char *
super_value(const char *list, const char *key)
{
  size_t kl = strlen(key);
  for (const char *p = list; p && *p;)
    {
      size_t n = strcspn(p, ",");
      if (n > kl && strncmp(p, key, kl) == 0 && p[kl] == '=')
        return xasprintf("%.*s", (int)(n - kl - 1), p + kl + 1);
      p += n + (p[n] == ',');
    }
  return NULL;
}

static const char *
config_value(yajl_val o, const char *key)
{
  size_t kl = strlen(key);
  const char *v = NULL;
  for (size_t k = 0; o && YAJL_IS_ARRAY(o) && k < o->u.array.len; k++)
    if (YAJL_IS_STRING(o->u.array.values[k])
        && strncmp(o->u.array.values[k]->u.string, key, kl) == 0
        && o->u.array.values[k]->u.string[kl] == '=')
      v = o->u.array.values[k]->u.string + kl + 1;
  return v;
}

static int
refuse_super(const char *id, const char *type, const char *mp, const char *key, const char *seen,
             const char *want, crest_error_t *err)
{
  cleanup_free char *s = seen ? xasprintf("%s=%s", key, seen) : xasprintf("no %s=", key);
  cleanup_free char *w = want ? xasprintf("%s=%s", key, want) : xasprintf("no %s=", key);
  return crest_error_make(err, ENOTSUP,
                          "container `%s`: checkpoint: its %s on %s has %s, where its config "
                          "gives %s: the container remounted it, and a restore (crun making it "
                          "again) would give %s",
                          id, type, mp, s, w, w);
}

/* A tmpfs's size, inode count and mode; a proc's hidepid, gid, subset. */
static int
check_super(const char *id, const char *mp, const char *fstype, const char *super, yajl_val o,
            crest_error_t *err)
{
  if (strcmp(fstype, "tmpfs") == 0)
    {
      static const char *const keys[] = { "size", "nr_inodes", "mode" };
      struct sysinfo si;
      long page = sysconf(_SC_PAGESIZE);
      long long total = sysinfo(&si) == 0 ? (long long)si.totalram * si.mem_unit / page : -1;
      for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
        {
          cleanup_free char *seen = super_value(super, keys[i]);
          const char *want = config_value(o, keys[i]);
          long long s, w;
          if (i == 2) /* mode: octal, 1777 when not shown */
            s = seen ? strtoll(seen, NULL, 8) : 01777, w = want ? strtoll(want, NULL, 8) : 01777;
          else if (i == 0) /* size: in pages (shown in KiB); half the memory when not shown */
            s = seen ? crest_tmpfs_amount(seen, true, total, page) : total / 2,
            w = want ? crest_tmpfs_amount(want, true, total, page) : total / 2;
          else
            s = seen ? crest_tmpfs_amount(seen, false, total, page) : total / 2,
            w = want ? crest_tmpfs_amount(want, false, total, page) : total / 2;
          if (s >= 0 && w >= 0 && total > 0 && s != w)
            return refuse_super(id, fstype, mp, keys[i], seen, want, err);
        }
    }
  else if (strcmp(fstype, "proc") == 0)
    {
      static const char *const keys[] = { "hidepid", "gid", "subset" };
      for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
        {
          cleanup_free char *seen = super_value(super, keys[i]);
          if (seen && !config_value(o, keys[i]))
            return refuse_super(id, fstype, mp, keys[i], seen, NULL, err);
        }
    }
  return 0;
}

/* Does CFG give the container a network namespace of its own? A
   sysfs can be mounted only in one (crun binds the host's /sys
   otherwise). */
static bool
own_netns(yajl_val cfg)
{
  yajl_val lx = crest_config_member(cfg, "linux");
  yajl_val ns = lx ? crest_config_member(lx, "namespaces") : NULL;
  for (size_t i = 0; ns && YAJL_IS_ARRAY(ns) && i < ns->u.array.len; i++)
    {
      yajl_val t = crest_config_member(ns->u.array.values[i], "type");
      if (t && YAJL_IS_STRING(t) && strcmp(t->u.string, "network") == 0)
        return true;
    }
  return false;
}

int
crest_check_mount_opts(const char *id, yajl_val cfg, const char *bundle, const char *mp,
                       const char *opts, const char *fstype, const char *super, crest_error_t *err)
{
  struct crest_mount_expect e;
  int atime, src_atime = CREST_ATIME_ANY, src = 0;
  unsigned have, diff;
  bool same_type;
  crest_mount_expect(cfg, mp, &e);
  if (!e.known)
    return 0;
  /* crun's fallback for a sysfs without a network namespace of the
     container's own (rootless `--network=host`): a bind of the host's
     /sys, with its flags, whatever the config asks; a restore makes the
     same (until December 2026 refused: "its mount on /sys is suid, where
     its config makes it nosuid", on a host whose /sys has no nosuid). */
  if (strcmp(fstype, "sysfs") == 0 && e.type && strcmp(e.type, "sysfs") == 0 && !e.bind
      && !own_netns(cfg))
    return 0;
  have = crest_mount_flags_parse(opts, &atime);
  /* crun's own fallback (a bind of the host's mqueue, a cgroup2 for
     "cgroup"): not the config's type, so flags may be its source's */
  same_type = e.bind || !e.type || strcmp(e.type, fstype) == 0
              || (strcmp(e.type, "cgroup") == 0 && strcmp(fstype, "cgroup2") == 0);
  if (e.bind && e.source)
    {
      cleanup_free char *path = e.source[0] == '/' || !bundle
                                    ? xstrdup(e.source)
                                    : xasprintf("%s/%s", bundle, e.source);
      src = crest_host_path_flags(path, &src_atime);
    }
  else if (e.bind || !same_type)
    src = -1;
  diff = (have ^ e.flags) & e.compared;
  /* a flag the config does not give, kept from the source's mount (or
     not known: taken as the source's doing) */
  diff &= ~(have & ~e.flags & (src < 0 ? ~0u : (unsigned)src));
  if (diff & CREST_MNT_RO)
    {
      bool ro = have & CREST_MNT_RO;
      return crest_error_make(err, ENOTSUP,
                              "container `%s`: checkpoint: its mount on %s is %s, where its "
                              "config makes it %s: the container remounted it, and a restore "
                              "(crun making it again) would make it %s",
                              id, mp, ro ? "read-only" : "read-write",
                              ro ? "read-write" : "read-only", ro ? "read-write" : "read-only");
    }
  for (size_t i = 1; i < ARRAY_SIZE(flag_names); i++)
    if (diff & flag_names[i].flag)
      {
        bool on = have & flag_names[i].flag;
        const char *is = on ? flag_names[i].on : flag_names[i].off,
                   *want = on ? flag_names[i].off : flag_names[i].on;
        return crest_error_make(err, ENOTSUP,
                                "container `%s`: checkpoint: its mount on %s is %s, where its "
                                "config makes it %s: the container remounted it, and a restore "
                                "(crun making it again) would make it %s",
                                id, mp, is, want, want);
      }
  if (e.atime != CREST_ATIME_ANY && same_type && atime != e.atime
      && !(e.bind && (src < 0 || atime == src_atime)))
    return crest_error_make(err, ENOTSUP,
                            "container `%s`: checkpoint: its mount on %s is %s, where its config "
                            "makes it %s: the container remounted it, and a restore (crun making "
                            "it again) would make it %s",
                            id, mp, atime_names[atime], atime_names[e.atime], atime_names[e.atime]);
  if (!e.bind && same_type && super)
    return check_super(id, mp, fstype, super, e.options, err);
  return 0;
}
