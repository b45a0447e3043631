/* procstate PID...: what /proc shows of each process (and each of its
 * threads) that a restore must give back, one normalised line per item, so
 * that a snapshot before checkpoint and one after restore can be compared
 * with diff. Used by the host tests (zdtm-process, zdtm-container,
 * real-programs) and the VM suites (cr_procstate). A program, not a
 * script: under the VM's TCG every process started costs tens of
 * milliseconds, and a shell version took about 2 s a process there.
 *
 * Left out, because a restore cannot or need not keep them: times and
 * counters (start time, CPU time, context switches, faults, resident sizes),
 * the file table's size (FDSize), the CPU a thread last ran on, the
 * scheduler's flags word (PF_*: a restored task was forked, not exec'd), the
 * queued-signal count of the user (SigQ: the user's, not the process's), a
 * running thread's R/S state (T, t and Z are kept), and the remaining time
 * of a timerfd. Normalised: inode numbers of pipes, sockets, anonymous inodes
 * and memfds become the order they are first seen in (so sharing is still
 * compared); the dirty bit of soft-dirty tracking (VmFlags sd); the names
 * docs/engine.md lists as a known loss (shared anonymous memory and deleted
 * files come back as memfds: "/memfd:NAME" with NAME a path is NAME); a
 * parent that is none of the PIDs given shows as "out" (the tree's root is
 * the restore's child); an epoll's targets are sorted. Every PID is the
 * tree's own (NSpid's last field), whatever PID namespace the caller sees
 * the tree through (a container's, from outside): processes and threads
 * are listed in that order. PROCSTATE_BND_IGNORE=HEX (16 digits): bits of
 * the bounding set not compared (a known gap the caller has probed). The
 * environment is compared by a 64-bit hash (FNV-1a). Besides /proc, each
 * thread's I/O priority (ioprio_get, which any process may ask); of
 * numa_maps, the mappings with a memory policy of their own. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdarg.h>
#include <dirent.h>
#include <sys/syscall.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Host PID (the caller's view) -> the tree's own, for the PIDs given and
   their threads. */
struct pidmap
{
  long host, inner;
};
static struct pidmap *map;
static size_t nmap;
static uint64_t bnd_ignore;
static FILE *out;

static void *
xrealloc(void *p, size_t n)
{
  p = realloc(p, n);
  if (!p)
    {
      perror("procstate");
      exit(2);
    }
  return p;
}

/* The whole of a /proc file (NUL-terminated; *len without it), or NULL. */
static char *
slurp(const char *path, size_t *len)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  size_t n = 0, cap = 4096;
  char *buf;
  if (fd < 0)
    return NULL;
  buf = xrealloc(NULL, cap);
  for (;;)
    {
      ssize_t r;
      if (n + 1 >= cap)
        buf = xrealloc(buf, cap *= 2);
      r = read(fd, buf + n, cap - n - 1);
      if (r < 0 && errno == EINTR)
        continue;
      if (r < 0)
        {
          close(fd);
          free(buf);
          return NULL;
        }
      if (r == 0)
        break;
      n += (size_t)r;
    }
  close(fd);
  buf[n] = 0;
  if (len)
    *len = n;
  return buf;
}

static char *
slurpf(size_t *len, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *
slurpf(size_t *len, const char *fmt, ...)
{
  char path[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(path, sizeof path, fmt, ap);
  va_end(ap);
  return slurp(path, len);
}

/* NSpid's last field in a status file; -1 without one. */
static long
inner_of(const char *path)
{
  char *s = slurp(path, NULL), *l;
  long v = -1;
  if (s && (l = strstr(s, "\nNSpid:")))
    {
      char *e = strchr(l + 1, '\n'), *p;
      if (e)
        *e = 0;
      p = strrchr(l, '\t');
      if (p)
        v = strtol(p + 1, NULL, 10);
    }
  free(s);
  return v;
}

static bool
mapped(long host, long *inner)
{
  for (size_t i = 0; i < nmap; i++)
    if (map[i].host == host)
      {
        *inner = map[i].inner;
        return true;
      }
  return false;
}

/* A PID of the caller's view as the tree sees it: 0 and below as they are
   (-1: none), "out" for one not of the tree. */
static const char *
tr_pid(const char *s, char *buf, size_t len)
{
  long v = strtol(s, NULL, 10), in;
  if (v <= 0)
    snprintf(buf, len, "%ld", v);
  else if (mapped(v, &in))
    snprintf(buf, len, "%ld", in);
  else
    snprintf(buf, len, "out");
  return buf;
}

/* Split S in place on runs of blanks (spaces and tabs): at most MAX words. */
static int
words(char *s, char **w, int max)
{
  int n = 0;
  while (*s && n < max)
    {
      while (*s == ' ' || *s == '\t')
        s++;
      if (!*s)
        break;
      w[n++] = s;
      while (*s && *s != ' ' && *s != '\t')
        s++;
      if (*s)
        *s++ = 0;
    }
  return n;
}

/* The fields of stat a restore keeps. */
static void
stat_line(const char *pre, const char *path)
{
  char *s = slurp(path, NULL), *rest, *f[64], b[5][24];
  int n;
  if (!s || !(rest = strrchr(s, ')')) || rest[1] != ' ')
    {
      free(s);
      return;
    }
  rest += 2;
  rest[strcspn(rest, "\n")] = 0;
  n = words(rest, f, 64);
  if (n < 49)
    {
      free(s);
      return;
    }
  /* f[k] is field k + 3 of proc(5): 0 state, 1 ppid, 2 pgrp, 3 session,
     4 tty_nr, 5 tpgid, 15 priority, 16 nice, 17 num_threads, 20 vsize,
     22 rsslim, 23-25 code and stack, 35 exit_signal, 37 rt_priority,
     38 policy, 42-48 data, start_brk, args, env. */
  const char *st = strchr("RSDI", f[0][0]) && f[0][1] == 0 ? "run" : f[0];
  fprintf(out,
          "%sstat: %s ppid=%s pgrp=%s sid=%s tty=%s tpgid=%s prio=%s nice=%s threads=%s vsize=%s "
          "rsslim=%s code=%s-%s stack=%s exitsig=%s rtprio=%s policy=%s data=%s-%s brk=%s "
          "args=%s-%s env=%s-%s\n",
          pre, st, tr_pid(f[1], b[0], 24), tr_pid(f[2], b[1], 24), tr_pid(f[3], b[2], 24), f[4],
          strcmp(f[5], "-1") == 0 ? "-1" : tr_pid(f[5], b[3], 24), f[15], f[16], f[17], f[20],
          f[22], f[23], f[24], f[25], f[35], f[37], f[38], f[42], f[43], f[44], f[45], f[46], f[47],
          f[48]);
  free(s);
}

static bool
key_is(const char *line, const char *const *keys)
{
  size_t k = strcspn(line, "\t");
  for (; *keys; keys++)
    if (strlen(*keys) == k && strncmp(line, *keys, k) == 0)
      return true;
  return false;
}

static void
status_lines(const char *pre, const char *path)
{
  static const char *const ids[] = { "Tgid:", "Pid:", "PPid:", "TracerPid:", NULL };
  static const char *const ns[] = { "NStgid:", "NSpid:", "NSpgid:", "NSsid:", NULL };
  static const char *const skip[] = { "FDSize:",
                                      "Ngid:",
                                      "voluntary_ctxt_switches:",
                                      "nonvoluntary_ctxt_switches:",
                                      "Mems_allowed:",
                                      "Cpus_allowed:",
                                      NULL };
  char *s = slurp(path, NULL), *save = NULL, b[24];
  if (!s)
    return;
  for (char *l = strtok_r(s, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
    {
      char *v = strchr(l, '\t');
      size_t klen = strcspn(l, "\t");
      if (key_is(l, ids) && v)
        fprintf(out, "%sstatus: %.*s %s\n", pre, (int)klen, l,
                strtol(v + 1, NULL, 10) == 0 ? "0" : tr_pid(v + 1, b, sizeof b));
      else if (key_is(l, ns))
        fprintf(out, "%sstatus: %.*s %s\n", pre, (int)klen, l,
                strrchr(l, '\t') ? strrchr(l, '\t') + 1 : l);
      else if (strncmp(l, "CapBnd:\t", 8) == 0 && bnd_ignore)
        fprintf(out, "%sstatus: CapBnd: %016" PRIx64 "\n", pre,
                (uint64_t)strtoull(l + 8, NULL, 16) & ~bnd_ignore);
      else if (strncmp(l, "Vm", 2) == 0 || strncmp(l, "Rss", 3) == 0
               || strncmp(l, "Hugetlb", 7) == 0 || key_is(l, skip))
        continue;
      else if (strncmp(l, "State:\t", 7) == 0)
        {
          char st[2] = { l[7], 0 };
          fprintf(out, "%sstatus: State %s\n", pre, strchr("RSDI", st[0]) && st[0] ? "run" : st);
        }
      else if (strncmp(l, "SigQ:\t", 6) == 0)
        fprintf(out, "%sstatus: SigQ limit %s\n", pre, strchr(l, '/') ? strchr(l, '/') + 1 : "");
      else
        fprintf(out, "%sstatus: %s\n", pre, l);
    }
  free(s);
}

static void
maps_lines(const char *pre, long pid)
{
  char *s = slurpf(NULL, "/proc/%ld/smaps", pid), *save = NULL, *r = NULL;
  if (!s)
    return;
  for (char *l = strtok_r(s, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
    {
      char *w[64];
      const char *p = l;
      while (isxdigit((unsigned char)*p))
        p++;
      if (*p == '-' && p > l)
        {
          int n = words(l, w, 64);
          char name[4096] = "";
          size_t k = 0;
          for (int i = 5; i < n; i++)
            k += (size_t)snprintf(name + k, k < sizeof name ? sizeof name - k : 0, "%s%s",
                                  i > 5 ? " " : "", w[i]);
          const char *nm = strncmp(name, "/memfd:/", 8) == 0 ? name + 7 : name;
          free(r);
          if (asprintf(&r, "%s %s %s %s", n > 0 ? w[0] : "", n > 1 ? w[1] : "",
                       nm[0] == '/' && n > 2 ? w[2] : "-", nm)
              < 0)
            r = NULL;
        }
      else if (strncmp(l, "VmFlags:", 8) == 0)
        {
          int n = words(l, w, 64);
          fprintf(out, "%smap: %s |", pre, r ? r : "");
          for (int i = 1; i < n; i++)
            if (strcmp(w[i], "sd") != 0)
              fprintf(out, " %s", w[i]);
          fputc('\n', out);
        }
    }
  free(r);
  free(s);
}

static int
by_num(const void *a, const void *b)
{
  long x = *(const long *)a, y = *(const long *)b;
  return (x > y) - (x < y);
}

static int
by_str(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One descriptor's fdinfo, as one line: the remaining time of a timerfd,
   the tick count of a periodic one (it grows while the program runs) and
   the serial number of a lock left out; the targets of an epoll sorted
   (the kernel lists them in the order of its tree, by file address). */
static void
fd_line(const char *pre, long pid, long fd)
{
  char link[4096], path[64], *s, *save = NULL, *line = NULL, *ticks = NULL, **tfd = NULL;
  size_t len = 0, ntfd = 0;
  struct stat st;
  bool periodic = false;
  ssize_t n;
  FILE *m = open_memstream(&line, &len);
  snprintf(path, sizeof path, "/proc/%ld/fd/%ld", pid, fd);
  n = readlink(path, link, sizeof link - 1);
  link[n > 0 ? n : 0] = 0;
  s = slurpf(NULL, "/proc/%ld/fdinfo/%ld", pid, fd);
  for (char *l = s ? strtok_r(s, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save))
    {
      char copy[4096], *w[64], b[24];
      int k;
      snprintf(copy, sizeof copy, "%s", l);
      k = words(copy, w, 64);
      if (k == 0 || strcmp(w[0], "mnt_id:") == 0 || strcmp(w[0], "it_value:") == 0)
        continue;
      if (strcmp(w[0], "ticks:") == 0)
        {
          free(ticks);
          ticks = strdup(l);
          continue;
        }
      if (strcmp(w[0], "it_interval:") == 0 && !strstr(l, "(0, 0)"))
        periodic = true;
      if (strcmp(w[0], "tfd:") == 0)
        {
          tfd = xrealloc(tfd, (ntfd + 1) * sizeof *tfd);
          tfd[ntfd++] = strdup(l);
          continue;
        }
      if (strcmp(w[0], "Pid:") == 0 && k > 1)
        fprintf(m, " Pid: %s", tr_pid(w[1], b, sizeof b));
      else if (strcmp(w[0], "NSpid:") == 0)
        fprintf(m, " NSpid: %s", w[k - 1]);
      else if (strcmp(w[0], "ino:") == 0 && k > 1 && stat(path, &st) == 0)
        /* with its device: inode numbers of two file systems (a memfd's
           and a file's of /tmp) may be equal, and are renumbered as one */
        fprintf(m, " ino: %lx.%s", (unsigned long)st.st_dev, w[1]);
      else if (strcmp(w[0], "lock:") == 0)
        {
          /* the lock's MAJ:MIN:INODE is this descriptor's file's, which
             its "ino:" shows (renumbered: an unlinked file comes back as
             another inode) */
          fputs(" lock:", m);
          for (int i = 2; i < k; i++)
            fprintf(m, " %s", i == 5 ? tr_pid(w[i], b, sizeof b) : i == 6 ? "-" : w[i]);
        }
      else
        fprintf(m, " %s", l);
    }
  qsort(tfd, ntfd, sizeof *tfd, by_str);
  for (size_t i = 0; i < ntfd; i++)
    fprintf(m, " %s", tfd[i]), free(tfd[i]);
  if (!periodic && ticks)
    fprintf(m, " %s", ticks);
  fclose(m);
  /* blanks squeezed to one space */
  fprintf(out, "%sfd %ld: %s |", pre, fd, link);
  for (char *p = line; p && *p; p++)
    if (*p == ' ' || *p == '\t')
      {
        fputc(' ', out);
        while (p[1] == ' ' || p[1] == '\t')
          p++;
      }
    else
      fputc(*p, out);
  fputc('\n', out);
  free(line);
  free(ticks);
  free(tfd);
  free(s);
}

static void
fd_lines(const char *pre, long pid)
{
  char path[64];
  DIR *d;
  struct dirent *e;
  long *fds = NULL;
  size_t n = 0;
  snprintf(path, sizeof path, "/proc/%ld/fd", pid);
  if (!(d = opendir(path)))
    return;
  while ((e = readdir(d)))
    if (isdigit((unsigned char)e->d_name[0]))
      {
        fds = xrealloc(fds, (n + 1) * sizeof *fds);
        fds[n++] = strtol(e->d_name, NULL, 10);
      }
  closedir(d);
  qsort(fds, n, sizeof *fds, by_num);
  for (size_t i = 0; i < n; i++)
    fd_line(pre, pid, fds[i]);
  free(fds);
}

/* Small files, a line of each as "NAME: LINE". */
static void
file_lines(const char *pre, long pid)
{
  static const char *const names[]
      = { "limits", "personality", "timerslack_ns", "oom_score_adj", "coredump_filter", "cgroup" };
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    {
      char *s = slurpf(NULL, "/proc/%ld/%s", pid, names[i]), *save = NULL;
      for (char *l = s ? strtok_r(s, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save))
        fprintf(out, "%s%s: %s\n", pre, names[i], l);
      free(s);
    }
  /* The autogroup's nice value (its name is a new one after restore). */
  char *ag = slurpf(NULL, "/proc/%ld/autogroup", pid), *n = ag ? strstr(ag, " nice ") : NULL;
  if (n)
    fprintf(out, "%sautogroup: nice %d\n", pre, atoi(n + 6));
  free(ag);
  /* KSM's settings of the process (Linux 6.4's PR_SET_MEMORY_MERGE shows
     as "ksm_merge_any: yes"), not its counts, which the merging moves. */
  char *ks = slurpf(NULL, "/proc/%ld/ksm_stat", pid), *ksave = NULL;
  for (char *l = ks ? strtok_r(ks, "\n", &ksave) : NULL; l; l = strtok_r(NULL, "\n", &ksave))
    if (strstr(l, ": "))
      fprintf(out, "%sksm_stat: %s\n", pre, l);
  free(ks);
}

/* POSIX timers: the PID or TID a timer signals, in the tree's PIDs. */
static void
timer_lines(const char *pre, long pid)
{
  char *s = slurpf(NULL, "/proc/%ld/timers", pid), *save = NULL;
  for (char *l = s ? strtok_r(s, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save))
    {
      char *v, *end, *slash, b[24];
      while (*l == ' ' || *l == '\t')
        l++;
      v = l + strcspn(l, " \t");
      if (*v)
        *v++ = 0;
      while (*v == ' ' || *v == '\t')
        v++;
      end = v + strlen(v);
      while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
        *--end = 0;
      slash = strrchr(v, '/');
      if (strcmp(l, "notify:") == 0 && slash
          && (strncmp(slash, "/pid.", 5) == 0 || strncmp(slash, "/tid.", 5) == 0) && slash[5]
          && strspn(slash + 5, "0123456789") == strlen(slash + 5))
        fprintf(out, "%stimers: %s %.*s%s\n", pre, l, (int)(slash + 5 - v), v,
                tr_pid(slash + 5, b, sizeof b));
      else
        fprintf(out, "%stimers: %s %s\n", pre, l, v);
    }
  free(s);
}

/* cwd, root, exe and the namespaces (a link that cannot be read shows
   empty). */
static void
link_lines(const char *pre, long pid)
{
  char path[128], link[4096], dir[64];
  const char *first[] = { "cwd", "root", "exe" };
  char **ns = NULL;
  size_t n = 0;
  DIR *d;
  struct dirent *e;
  for (size_t i = 0; i < 3; i++)
    {
      ssize_t r;
      snprintf(path, sizeof path, "/proc/%ld/%s", pid, first[i]);
      r = readlink(path, link, sizeof link - 1);
      link[r > 0 ? r : 0] = 0;
      fprintf(out, "%s%s: %s\n", pre, first[i], link);
    }
  snprintf(dir, sizeof dir, "/proc/%ld/ns", pid);
  if (!(d = opendir(dir)))
    return;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.')
      {
        ns = xrealloc(ns, (n + 1) * sizeof *ns);
        ns[n++] = strdup(e->d_name);
      }
  closedir(d);
  qsort(ns, n, sizeof *ns, by_str);
  for (size_t i = 0; i < n; i++)
    {
      ssize_t r;
      snprintf(path, sizeof path, "%s/%s", dir, ns[i]);
      r = readlink(path, link, sizeof link - 1);
      link[r > 0 ? r : 0] = 0;
      fprintf(out, "%sns/%s: %s\n", pre, ns[i], link);
      free(ns[i]);
    }
  free(ns);
}

static void
tail_lines(const char *pre, long pid)
{
  size_t n;
  char *s = slurpf(&n, "/proc/%ld/cmdline", pid);
  fprintf(out, "%scmdline: ", pre);
  for (size_t i = 0; s && i < n; i++)
    fputc(s[i] ? s[i] : ' ', out);
  fputc('\n', out);
  free(s);
  s = slurpf(&n, "/proc/%ld/environ", pid);
  fprintf(out, "%senviron: ", pre);
  if (s)
    {
      uint64_t h = 0xcbf29ce484222325ULL;
      for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
      fprintf(out, "%016" PRIx64, h);
    }
  fputc('\n', out);
  free(s);
  s = slurpf(&n, "/proc/%ld/auxv", pid);
  fprintf(out, "%sauxv: ", pre);
  for (size_t i = 0; s && i + 8 <= n; i += 8)
    {
      uint64_t v;
      memcpy(&v, s + i, 8);
      fprintf(out, " %016" PRIx64, v);
    }
  if (s && n)
    fputc(' ', out);
  fputc('\n', out);
  free(s);
}

struct ent
{
  long inner, host;
};

static int
by_inner(const void *a, const void *b)
{
  const struct ent *x = a, *y = b;
  return (x->inner > y->inner) - (x->inner < y->inner);
}

/* The threads of PID other than itself, in the tree's TIDs. */
static size_t
threads_of(long pid, struct ent **out_list)
{
  char dir[64];
  DIR *d;
  struct dirent *e;
  size_t n = 0;
  *out_list = NULL;
  snprintf(dir, sizeof dir, "/proc/%ld/task", pid);
  if (!(d = opendir(dir)))
    return 0;
  while ((e = readdir(d)))
    {
      long t;
      if (!isdigit((unsigned char)e->d_name[0]) || (t = strtol(e->d_name, NULL, 10)) == pid)
        continue;
      *out_list = xrealloc(*out_list, (n + 1) * sizeof **out_list);
      (*out_list)[n].host = t;
      if (!mapped(t, &(*out_list)[n].inner))
        (*out_list)[n].inner = 0;
      n++;
    }
  closedir(d);
  qsort(*out_list, n, sizeof **out_list, by_inner);
  return n;
}

/* The mappings with a NUMA memory policy of their own (numa_maps: its
   second field is not "default"). */
static void
numa_lines(const char *pre, long pid)
{
  char *s = slurpf(NULL, "/proc/%ld/numa_maps", pid), *save = NULL;
  if (!s)
    return;
  for (char *l = strtok_r(s, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
    {
      char start[32], pol[96];
      if (sscanf(l, "%31s %95s", start, pol) == 2 && strcmp(pol, "default") != 0)
        fprintf(out, "%snuma_maps: %s %s\n", pre, start, pol);
    }
  free(s);
}

static void
snap(long pid, long inner)
{
  char pre[64], path[128];
  struct ent *th;
  size_t nth;
  snprintf(path, sizeof path, "/proc/%ld", pid);
  if (access(path, F_OK) != 0)
    {
      fprintf(out, "%ld: gone\n", pid);
      return;
    }
  snprintf(pre, sizeof pre, "%ld ", inner);
  snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  stat_line(pre, path);
  snprintf(path, sizeof path, "/proc/%ld/status", pid);
  status_lines(pre, path);
  fprintf(out, "%sioprio: %ld\n", pre, syscall(SYS_ioprio_get, 1 /* IOPRIO_WHO_PROCESS */, pid));
  maps_lines(pre, pid);
  numa_lines(pre, pid);
  fd_lines(pre, pid);
  file_lines(pre, pid);
  timer_lines(pre, pid);
  link_lines(pre, pid);
  tail_lines(pre, pid);
  nth = threads_of(pid, &th);
  for (size_t i = 0; i < nth; i++)
    {
      char tpre[96], comm[64] = "";
      char *c = slurpf(NULL, "/proc/%ld/task/%ld/comm", pid, th[i].host);
      if (c)
        snprintf(comm, sizeof comm, "%.*s", (int)strcspn(c, "\n"), c);
      free(c);
      snprintf(tpre, sizeof tpre, "%ld thread %ld ", inner, th[i].inner);
      fprintf(out, "%ld thread %ld comm: %s\n", inner, th[i].inner, comm);
      snprintf(path, sizeof path, "/proc/%ld/task/%ld/stat", pid, th[i].host);
      stat_line(tpre, path);
      snprintf(path, sizeof path, "/proc/%ld/task/%ld/status", pid, th[i].host);
      status_lines(tpre, path);
      /* I/O priority: not in /proc, but any process may ask. */
      fprintf(out, "%sioprio: %ld\n", tpre,
              syscall(SYS_ioprio_get, 1 /* IOPRIO_WHO_PROCESS */, th[i].host));
    }
  free(th);
}

/* One pass over the whole snapshot: KIND:[N] (pipe, socket, anon_inode
   links, namespaces), fdinfo's ino (with its device), an eventfd's id and the inode
   number in the name of an O_TMPFILE file ("DIR/#INODE (deleted)") (the
   kernel numbers them anew) become #K in order of first appearance. */
static void
renumber(char *text)
{
  regex_t re;
  char **seen = NULL;
  size_t nseen = 0;
  if (regcomp(&re,
              "[a-z_]+:\\[[0-9]+\\]|ino: ?[0-9a-f.]+|eventfd-id: ?[0-9]+|/#[0-9]+ \\(deleted\\)",
              REG_EXTENDED)
      != 0)
    exit(2);
  for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
    {
      regmatch_t m;
      while (regexec(&re, l, 1, &m, 0) == 0)
        {
          size_t len = (size_t)(m.rm_eo - m.rm_so), k;
          char *tok = strndup(l + m.rm_so, len);
          for (k = 0; k < nseen && strcmp(seen[k], tok) != 0; k++)
            ;
          if (k == nseen)
            {
              seen = xrealloc(seen, (nseen + 1) * sizeof *seen);
              seen[nseen++] = tok;
            }
          else
            free(tok);
          fwrite(l, 1, (size_t)m.rm_so, stdout);
          if (l[m.rm_so] == '/')
            printf("/#tmpfile#%zu (deleted)", k + 1);
          else
            printf("%.*s:#%zu", (int)strcspn(l + m.rm_so, ":"), l + m.rm_so, k + 1);
          l += m.rm_eo;
        }
      puts(l);
    }
  for (size_t k = 0; k < nseen; k++)
    free(seen[k]);
  free(seen);
  regfree(&re);
}

int
main(int argc, char **argv)
{
  char *text = NULL;
  size_t len = 0;
  struct ent *procs = xrealloc(NULL, (size_t)argc * sizeof *procs);
  const char *ign = getenv("PROCSTATE_BND_IGNORE");
  size_t np = 0;

  if (ign && *ign)
    bnd_ignore = strtoull(ign, NULL, 16);
  for (int i = 1; i < argc; i++)
    {
      char path[64], dir[64];
      long pid = strtol(argv[i], NULL, 10);
      DIR *d;
      struct dirent *e;
      snprintf(path, sizeof path, "/proc/%ld/status", pid);
      map = xrealloc(map, (nmap + 1) * sizeof *map);
      map[nmap].host = pid;
      map[nmap++].inner = inner_of(path);
      procs[np].host = pid, procs[np++].inner = map[nmap - 1].inner < 0 ? 0 : map[nmap - 1].inner;
      snprintf(dir, sizeof dir, "/proc/%ld/task", pid);
      if (!(d = opendir(dir)))
        continue;
      while ((e = readdir(d)))
        {
          long t = strtol(e->d_name, NULL, 10);
          if (t <= 0 || t == pid)
            continue;
          snprintf(path, sizeof path, "/proc/%ld/task/%ld/status", pid, t);
          map = xrealloc(map, (nmap + 1) * sizeof *map);
          map[nmap].host = t;
          map[nmap++].inner = inner_of(path);
        }
      closedir(d);
    }
  qsort(procs, np, sizeof *procs, by_inner);
  out = open_memstream(&text, &len);
  for (size_t i = 0; i < np; i++)
    snap(procs[i].host, procs[i].inner);
  fclose(out);
  renumber(text);
  free(text);
  free(procs);
  free(map);
  return fflush(stdout) == 0 ? 0 : 1;
}
