/* crest: the multicast groups a UDP socket joined (docs/engine.md, "Inet
 * sockets").
 *
 * No socket option lists a socket's memberships, but the kernel answers
 * for one group: getsockopt(MCAST_MSFILTER) with a group and an interface
 * gives the membership's source filter, or EADDRNOTAVAIL when the socket
 * is not a member. The groups joined on each interface of a network
 * namespace are listed in its /proc/net/igmp and igmp6 (by every socket,
 * and by the kernel itself: 224.0.0.1, ff02::1), so each listed group is
 * asked of the socket. A membership is restored with MCAST_JOIN_GROUP on
 * the interface of the same name; one with a source filter (include mode,
 * or excluded sources) is refused. */
#include <config.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "image.h"
#include "log.h"
#include "sk-mcast.h"
#include "util.h"

/* The membership of socket D in group M on interface IFINDEX: 1 (a
   member; *FILTERED: with a source filter), 0 not a member. */
static int
member(int d, const struct sk_mcast *m, unsigned ifindex, bool *filtered)
{
  struct group_filter gf;
  socklen_t len = sizeof gf;
  memset(&gf, 0, sizeof gf);
  gf.gf_interface = ifindex;
  gf.gf_group.ss_family = (sa_family_t)m->family;
  if (m->family == AF_INET)
    memcpy(&((struct sockaddr_in *)&gf.gf_group)->sin_addr, m->group, 4);
  else
    memcpy(&((struct sockaddr_in6 *)&gf.gf_group)->sin6_addr, m->group, 16);
  if (getsockopt(d, m->family == AF_INET ? IPPROTO_IP : IPPROTO_IPV6, MCAST_MSFILTER, &gf, &len)
      < 0)
    return 0;
  *filtered = gf.gf_fmode != MCAST_EXCLUDE || gf.gf_numsrc != 0;
  return 1;
}

static void
group_text(const struct sk_mcast *m, char *buf, size_t len)
{
  if (!inet_ntop(m->family, m->group, buf, (socklen_t)len))
    snprintf(buf, len, "?");
}

/* One listed group: asked of the socket, added to the list when a member. */
static int
candidate(int d, struct sk_mcast *g, unsigned ifindex, struct sk_mcast **out, size_t *n,
          crest_error_t *err)
{
  bool filtered = false;
  char text[INET6_ADDRSTRLEN];
  for (size_t i = 0; i < *n; i++)
    if ((*out)[i].family == g->family && memcmp((*out)[i].group, g->group, 16) == 0
        && strcmp((*out)[i].dev, g->dev) == 0)
      return 0;
  if (!member(d, g, ifindex, &filtered))
    return 0;
  group_text(g, text, sizeof text);
  if (filtered)
    return crest_error_make(err, ENOTSUP,
                            "its membership of multicast group %s on %s has a source filter "
                            "(MCAST_MSFILTER, IP_ADD_SOURCE_MEMBERSHIP...): crest does not "
                            "restore it",
                            text, g->dev);
  if (*n >= SK_MCAST_MAX)
    return crest_error_make(err, ENOTSUP, "more than %d multicast groups joined", SK_MCAST_MAX);
  *out = xrealloc(*out, (*n + 1) * sizeof **out);
  (*out)[(*n)++] = *g;
  return 0;
}

/* /proc/PID/net/igmp: "IDX\tDEV : ..." for an interface, then
   "\t\t\t\tGROUP ..." for each group (the address's 32 bits as one hex
   number, as they lie in memory). */
static int
scan_igmp(pid_t pid, int d, struct sk_mcast **out, size_t *n, crest_error_t *err)
{
  cleanup_free char *path = xasprintf("/proc/%d/net/igmp", (int)pid), *text = NULL;
  crest_error_t e = NULL;
  struct sk_mcast g = { .family = AF_INET };
  unsigned ifindex = 0;
  char *save = NULL;
  if (read_file(path, &text, NULL, 4u << 20, &e) < 0)
    {
      /* a kernel built without CONFIG_IP_MULTICAST joins groups but shows
         none: not seen (docs/engine.md, a known gap) */
      crest_error_release(&e);
      crest_debug("checkpoint: task %d: no %s: its IPv4 multicast memberships cannot be seen",
                  (int)pid, path);
      return 0;
    }
  for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
    {
      char dev[IFNAMSIZ];
      unsigned idx, raw;
      if (l[0] >= '0' && l[0] <= '9' && sscanf(l, "%u %15s", &idx, dev) == 2)
        {
          ifindex = idx;
          snprintf(g.dev, sizeof g.dev, "%s", dev);
        }
      else if (l[0] == '\t' && ifindex && sscanf(l, "%x", &raw) == 1)
        {
          memset(g.group, 0, sizeof g.group);
          memcpy(g.group, &raw, 4);
          if (candidate(d, &g, ifindex, out, n, err) < 0)
            return -1;
        }
    }
  return 0;
}

/* /proc/PID/net/igmp6: "IDX DEV GROUP USERS FLAGS TIMER", GROUP 32 hex
   digits in network order. */
static int
scan_igmp6(pid_t pid, int d, struct sk_mcast **out, size_t *n, crest_error_t *err)
{
  cleanup_free char *path = xasprintf("/proc/%d/net/igmp6", (int)pid), *text = NULL;
  crest_error_t e = NULL;
  char *save = NULL;
  if (read_file(path, &text, NULL, 4u << 20, &e) < 0)
    {
      crest_error_release(&e); /* a kernel without IPv6 */
      return 0;
    }
  for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
    {
      struct sk_mcast g = { .family = AF_INET6 };
      char dev[IFNAMSIZ], hex[33];
      unsigned idx, byte;
      bool ok = sscanf(l, "%u %15s %32s", &idx, dev, hex) == 3 && strlen(hex) == 32;
      for (int i = 0; ok && i < 16; i++)
        {
          ok = sscanf(hex + 2 * i, "%2x", &byte) == 1;
          g.group[i] = (unsigned char)byte;
        }
      if (!ok)
        continue;
      snprintf(g.dev, sizeof g.dev, "%s", dev);
      if (candidate(d, &g, idx, out, n, err) < 0)
        return -1;
    }
  return 0;
}

int
sk_mcast_dump(pid_t pid, int d, int sk_family, struct sk_mcast **out, size_t *n, crest_error_t *err)
{
  *out = NULL;
  *n = 0;
  /* An IPv6 socket may join IPv4 groups too (at the IPPROTO_IP level). */
  if (scan_igmp(pid, d, out, n, err) < 0
      || (sk_family == AF_INET6 && scan_igmp6(pid, d, out, n, err) < 0))
    {
      free(*out);
      *out = NULL;
      *n = 0;
      return -1;
    }
  return 0;
}

/* The name of interface IFINDEX in PID's network namespace (the devices
   /proc/PID/net/igmp6 and igmp list); 0, or -1 when not found. */
static int
ifname_of(pid_t pid, unsigned ifindex, char dev[IFNAMSIZ])
{
  static const char *const files[] = { "igmp6", "igmp" };
  for (size_t f = 0; f < 2; f++)
    {
      cleanup_free char *path = xasprintf("/proc/%d/net/%s", (int)pid, files[f]), *text = NULL;
      crest_error_t e = NULL;
      char *save = NULL;
      if (read_file(path, &text, NULL, 4u << 20, &e) < 0)
        {
          crest_error_release(&e);
          continue;
        }
      for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
        {
          char name[IFNAMSIZ];
          unsigned idx;
          if (l[0] >= '0' && l[0] <= '9' && sscanf(l, "%u %15s", &idx, name) == 2 && idx == ifindex)
            {
              snprintf(dev, IFNAMSIZ, "%s", name);
              return 0;
            }
        }
    }
  return -1;
}

int
sk_mcast_if6_dump(pid_t pid, int d, char dev[IFNAMSIZ], crest_error_t *err)
{
  int idx = 0;
  socklen_t len = sizeof idx;
  dev[0] = '\0';
  if (getsockopt(d, IPPROTO_IPV6, IPV6_MULTICAST_IF, &idx, &len) < 0 || idx == 0)
    return 0;
  if (ifname_of(pid, (unsigned)idx, dev) < 0)
    return crest_error_make(err, ENOTSUP,
                            "IPV6_MULTICAST_IF names interface %d, which its network namespace's "
                            "/proc does not list: crest cannot restore it",
                            idx);
  return 0;
}

int
sk_mcast_if6_set(int fd, const char *dev, crest_error_t *err)
{
  int idx = (int)if_nametoindex(dev);
  if (!idx)
    return crest_error_make(err, ENODEV,
                            "IPV6_MULTICAST_IF: no interface %s in this network "
                            "namespace",
                            dev);
  if (setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, &idx, sizeof idx) < 0)
    return crest_error_errno(err, "set IPV6_MULTICAST_IF to %s", dev);
  return 0;
}

void
sk_mcast_put(yajl_gen g, const struct sk_mcast *m, size_t n)
{
  if (!n)
    return;
  jput_key(g, "mcast");
  yajl_gen_array_open(g);
  for (size_t i = 0; i < n; i++)
    {
      char text[INET6_ADDRSTRLEN], item[INET6_ADDRSTRLEN + IFNAMSIZ + 2];
      group_text(&m[i], text, sizeof text);
      snprintf(item, sizeof item, "%s%%%s", text, m[i].dev);
      yajl_gen_string(g, (const unsigned char *)item, strlen(item));
    }
  yajl_gen_array_close(g);
}

int
sk_mcast_parse(yajl_val v, int sk_family, struct sk_mcast **out, size_t *n, crest_error_t *err)
{
  yajl_val *items;
  crest_error_t e = NULL;
  long k = jget_array(v, "mcast", &items, &e);
  *out = NULL;
  *n = 0;
  crest_error_release(&e);
  if (k <= 0)
    return 0;
  if (k > SK_MCAST_MAX)
    return crest_error_make(err, EINVAL, "more than %d multicast groups", SK_MCAST_MAX);
  *out = xzalloc((size_t)k * sizeof **out);
  for (long i = 0; i < k; i++)
    {
      struct sk_mcast *m = &(*out)[i];
      const char *s = YAJL_IS_STRING(items[i]) ? items[i]->u.string : "";
      const char *pct = strchr(s, '%');
      char addr[INET6_ADDRSTRLEN];
      size_t al = pct ? (size_t)(pct - s) : 0;
      if (!pct || al == 0 || al >= sizeof addr || !pct[1] || strlen(pct + 1) >= sizeof m->dev)
        goto bad;
      memcpy(addr, s, al);
      addr[al] = '\0';
      snprintf(m->dev, sizeof m->dev, "%s", pct + 1);
      if (inet_pton(AF_INET, addr, m->group) == 1)
        m->family = AF_INET;
      else if (sk_family == AF_INET6 && inet_pton(AF_INET6, addr, m->group) == 1)
        m->family = AF_INET6;
      else
        goto bad;
      (*n)++;
      continue;
    bad:
      free(*out);
      *out = NULL;
      *n = 0;
      return crest_error_make(err, EINVAL, "multicast group %ld is not GROUP%%DEVICE of its family",
                              i);
    }
  return 0;
}

int
sk_mcast_join(int fd, const struct sk_mcast *m, size_t n, crest_error_t *err)
{
  for (size_t i = 0; i < n; i++)
    {
      struct group_req gr;
      char text[INET6_ADDRSTRLEN];
      unsigned ifindex = if_nametoindex(m[i].dev);
      bool filtered = false;
      group_text(&m[i], text, sizeof text);
      if (!ifindex)
        return crest_error_make(err, ENODEV,
                                "multicast group %s: no interface %s in this network namespace",
                                text, m[i].dev);
      memset(&gr, 0, sizeof gr);
      gr.gr_interface = ifindex;
      gr.gr_group.ss_family = (sa_family_t)m[i].family;
      if (m[i].family == AF_INET)
        memcpy(&((struct sockaddr_in *)&gr.gr_group)->sin_addr, m[i].group, 4);
      else
        memcpy(&((struct sockaddr_in6 *)&gr.gr_group)->sin6_addr, m[i].group, 16);
      if (setsockopt(fd, m[i].family == AF_INET ? IPPROTO_IP : IPPROTO_IPV6, MCAST_JOIN_GROUP, &gr,
                     sizeof gr)
          < 0)
        return crest_error_errno(err, "join multicast group %s on %s", text, m[i].dev);
      if (member(fd, &m[i], ifindex, &filtered) != 1 || filtered)
        return crest_error_make(err, EIO, "multicast group %s on %s: joined, but not shown", text,
                                m[i].dev);
    }
  return 0;
}
