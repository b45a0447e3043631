/* crest: the namespaced sysctls a container changed itself.
 *
 * A restore has crun make the container's network and IPC namespaces
 * again, new, with the config's linux.sysctl written into them: a value the
 * container's root set itself (net.core.somaxconn, kernel.shmmax, with the
 * capabilities its user namespace gives it over namespaces it owns) would
 * come back as a new namespace's default. The checkpoint reads every such
 * sysctl in the container's namespaces and in new ones made in its user
 * namespace, each in a child (joining the container's user namespace,
 * which crest's user owns, gives it what setns and unshare need), and
 * refuses the first difference in one line (docs/engine.md, "Container"
 * table). */
#include <config.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ns-sysctl.h"
#include "log.h"
#include "oci-config.h"
#include "util.h"

/* Values that differ between any two namespaces, or change by
   themselves: not state of the container's. */
static bool
varies(const char *key)
{
  static const char *const keys[]
      = { "net.ipv4.tcp_fastopen_key", "net.netfilter.nf_conntrack_count",
          "net.ipv6.conf.all.stable_secret", "net.ipv6.conf.default.stable_secret",
          "net.ipv6.conf.lo.stable_secret" };
  for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
    if (strcmp(key, keys[i]) == 0)
      return true;
  return false;
}

/* PATH (a file of /proc/sys) as a "key value" line on F, the key dotted,
   whitespace in the value made one space; nothing for a file that cannot
   be read (write-only, or unset: EIO) or whose value varies. */
static void
emit(FILE *f, const char *path)
{
  char v[4096], key[512];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read(fd, v, sizeof v - 1) : -1;
  if (fd >= 0)
    close(fd);
  if (n < 0)
    return;
  v[n] = 0;
  snprintf(key, sizeof key, "%s", path + strlen("/proc/sys/"));
  for (char *k = key; *k; k++)
    if (*k == '/')
      *k = '.';
  if (varies(key))
    return;
  fprintf(f, "%s", key);
  for (char *t = strtok(v, " \t\n"); t; t = strtok(NULL, " \t\n"))
    fprintf(f, " %s", t);
  fputc('\n', f);
}

/* Every file below PATH (LEN bytes used of CAP), or PATH itself. */
static void
walk(FILE *f, char *path, size_t len, size_t cap)
{
  struct stat st;
  DIR *d;
  struct dirent *e;
  if (lstat(path, &st) < 0)
    return;
  if (!S_ISDIR(st.st_mode))
    {
      if (S_ISREG(st.st_mode) && (st.st_mode & 0444))
        emit(f, path);
      return;
    }
  if (!(d = opendir(path)))
    return;
  while ((e = readdir(d)))
    {
      size_t nl = strlen(e->d_name);
      if (e->d_name[0] == '.' || len + nl + 2 >= cap)
        continue;
      snprintf(path + len, cap - len, "/%s", e->d_name);
      walk(f, path, len + 1 + nl, cap);
      path[len] = 0;
    }
  closedir(d);
}

/* The view of ROOTS (NULL-ended, below /proc/sys) from a child in INIT's
   user namespace (its IDs mapped as the container's: a value that holds
   one, as net.ipv4.ping_group_range, reads the same) and in INIT's network
   and IPC namespaces, or (FRESH) in new ones, as crun makes them at
   restore. NULL when that cannot be done here. */
struct view_req
{
  pid_t init;
  bool fresh;
  const char *const *roots;
};

static int
view_body(int fd, void *arg)
{
  static const char *const ns[] = { "user", "net", "ipc" };
  const struct view_req *r = arg;
  FILE *f;
  char path[4096];
  if (join_ns(r->init, ns, r->fresh ? 1 : ARRAY_SIZE(ns)) < 0)
    return -1;
  if ((r->fresh && unshare(CLONE_NEWNET | CLONE_NEWIPC) < 0) || !(f = fdopen(fd, "w")))
    return -1;
  for (size_t i = 0; r->roots[i]; i++)
    {
      snprintf(path, sizeof path, "/proc/sys/%s", r->roots[i]);
      walk(f, path, strlen(path), sizeof path);
    }
  return fclose(f) == 0 ? 0 : -1;
}

static char *
view(pid_t init, bool fresh, const char *const *roots)
{
  struct view_req r = { init, fresh, roots };
  return child_run(view_body, &r);
}

/* The value of KEY in VIEW (a pointer into it, to the end of its line),
   or NULL. */
static const char *
value_of(const char *view, const char *key, size_t *vlen)
{
  size_t kl = strlen(key);
  for (const char *l = view; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] == '\n'))
    if (strncmp(l, key, kl) == 0 && (l[kl] == ' ' || l[kl] == '\n' || !l[kl]))
      {
        const char *v = l[kl] == ' ' ? l + kl + 1 : l + kl;
        *vlen = strcspn(v, "\n");
        return v;
      }
  return NULL;
}

/* What a restore writes for KEY: the config's linux.sysctl value, its
   whitespace made one space (in BUF), or NULL when the config sets none. */
static const char *
config_value(yajl_val cfg, const char *key, char *buf, size_t cap)
{
  yajl_val lx = crest_config_member(cfg, "linux");
  yajl_val sys = lx ? crest_config_member(lx, "sysctl") : NULL;
  for (size_t i = 0; sys && YAJL_IS_OBJECT(sys) && i < sys->u.object.len; i++)
    {
      char k[512], *o = buf, tmp[4096];
      yajl_val v = sys->u.object.values[i];
      snprintf(k, sizeof k, "%s", sys->u.object.keys[i]);
      for (char *c = k; *c; c++)
        if (*c == '/')
          *c = '.';
      if (strcmp(k, key) != 0 || !YAJL_IS_STRING(v))
        continue;
      snprintf(tmp, sizeof tmp, "%s", v->u.string);
      buf[0] = 0;
      for (char *t = strtok(tmp, " \t\n"); t && (size_t)(o - buf) + strlen(t) + 2 < cap;
           t = strtok(NULL, " \t\n"))
        o += sprintf(o, "%s%s", o == buf ? "" : " ", t);
      return buf;
    }
  return NULL;
}

int
crest_check_ns_sysctls(const char *id, pid_t init, yajl_val cfg, bool net, bool ipc,
                       crest_error_t *err)
{
  static const char *const ipc_keys[] = { "kernel/shmmax", "kernel/shmall",
                                          "kernel/shmmni", "kernel/shm_rmid_forced",
                                          "kernel/msgmax", "kernel/msgmnb",
                                          "kernel/msgmni", "kernel/sem",
                                          "fs/mqueue",     NULL };
  const char *roots[16];
  size_t n = 0;
  if (net)
    roots[n++] = "net";
  for (size_t i = 0; ipc && ipc_keys[i]; i++)
    roots[n++] = ipc_keys[i];
  roots[n] = NULL;
  if (!n)
    return 0;
  cleanup_free char *now = view(init, false, roots), *ref = view(init, true, roots);
  if (!now || !ref)
    {
      crest_debug("container `%s`: its namespaces' sysctls cannot be read here: not compared", id);
      return 0;
    }
  for (const char *l = now; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] == '\n'))
    {
      char key[512], cbuf[4096];
      size_t kl = strcspn(l, " \n"), vl = strcspn(l, "\n") - kl - (l[kl] == ' '), rl = 0;
      const char *v = l + kl + (l[kl] == ' '), *want;
      bool from_cfg;
      snprintf(key, sizeof key, "%.*s", (int)kl, l);
      want = config_value(cfg, key, cbuf, sizeof cbuf);
      if ((from_cfg = want != NULL))
        rl = strlen(want);
      else if (!(want = value_of(ref, key, &rl)))
        continue; /* not in a new namespace: an interface's, checked with them */
      if (rl == vl && strncmp(want, v, vl) == 0)
        continue;
      return crest_error_make(err, ENOTSUP,
                              "container `%s`: checkpoint: its %s is %.*s, and a restore (crun "
                              "making its namespace again%s) would give it %.*s: it would be lost",
                              id, key, (int)vl, v,
                              from_cfg ? ", with the config's linux.sysctl" : "", (int)rl, want);
    }
  return 0;
}
