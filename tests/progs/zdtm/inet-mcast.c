/* zdtm-inet-mcast: UDP sockets that joined multicast groups on lo: A
 * (IPv4) joined 239.1.2.3 with MCAST_JOIN_GROUP and 239.1.2.4 with
 * IP_ADD_MEMBERSHIP; B (IPv6) joined ff15::1:2 and, at the IPv4 level,
 * 239.1.2.5; C joined nothing. A sends multicast from 127.0.0.1
 * (IP_MULTICAST_IF), B on lo (IPV6_MULTICAST_IF). After restore the
 * kernel shows each membership on its socket (MCAST_MSFILTER answers for
 * a group only to a member) and none on C, and both interfaces; where a datagram sent to 239.1.2.3
 * on lo reached A before the checkpoint, one does after it too. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static unsigned lo;

/* Is socket FD a member of group ADDR (FAMILY) on lo, with no source
   filter? */
static int
member(int fd, int family, const char *addr)
{
  struct group_filter gf;
  socklen_t len = sizeof gf;
  memset(&gf, 0, sizeof gf);
  gf.gf_interface = lo;
  gf.gf_group.ss_family = (sa_family_t)family;
  if (family == AF_INET)
    inet_pton(AF_INET, addr, &((struct sockaddr_in *)&gf.gf_group)->sin_addr);
  else
    inet_pton(AF_INET6, addr, &((struct sockaddr_in6 *)&gf.gf_group)->sin6_addr);
  if (getsockopt(fd, family == AF_INET ? IPPROTO_IP : IPPROTO_IPV6, MCAST_MSFILTER, &gf, &len) < 0)
    return 0;
  return gf.gf_fmode == MCAST_EXCLUDE && gf.gf_numsrc == 0;
}

static void
join(int fd, int family, const char *addr)
{
  struct group_req gr;
  memset(&gr, 0, sizeof gr);
  gr.gr_interface = lo;
  gr.gr_group.ss_family = (sa_family_t)family;
  if (family == AF_INET)
    inet_pton(AF_INET, addr, &((struct sockaddr_in *)&gr.gr_group)->sin_addr);
  else
    inet_pton(AF_INET6, addr, &((struct sockaddr_in6 *)&gr.gr_group)->sin6_addr);
  if (setsockopt(fd, family == AF_INET ? IPPROTO_IP : IPPROTO_IPV6, MCAST_JOIN_GROUP, &gr,
                 sizeof gr)
      < 0)
    zdtm_error("join %s on lo: %s", addr, strerror(errno));
}

/* Does a datagram sent to 239.1.2.3 on lo, to A's port, reach A? */
static int
reaches(int a, int port)
{
  struct ip_mreqn m = { .imr_ifindex = (int)lo };
  struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = (in_port_t)port };
  struct pollfd p = { .fd = a, .events = POLLIN };
  char buf[8];
  int s = socket(AF_INET, SOCK_DGRAM, 0), got = 0;
  inet_pton(AF_INET, "239.1.2.3", &to.sin_addr);
  if (s >= 0 && setsockopt(s, IPPROTO_IP, IP_MULTICAST_IF, &m, sizeof m) == 0
      && sendto(s, "mcast", 5, 0, (struct sockaddr *)&to, sizeof to) == 5 && poll(&p, 1, 500) == 1
      && recv(a, buf, sizeof buf, MSG_DONTWAIT) == 5 && memcmp(buf, "mcast", 5) == 0)
    got = 1;
  if (s >= 0)
    close(s);
  return got;
}

int
main(int argc, char **argv)
{
  struct sockaddr_in any = { .sin_family = AF_INET };
  struct sockaddr_in6 any6 = { .sin6_family = AF_INET6 };
  struct ip_mreqn m = { .imr_ifindex = 0 };
  socklen_t len = sizeof any;
  int a, b, c, port, loop_before;
  bool v4_shown = access("/proc/self/net/igmp", R_OK) == 0, v4_lost = false;

  zdtm_init(argc, argv);
  lo = if_nametoindex("lo");
  a = socket(AF_INET, SOCK_DGRAM, 0);
  b = socket(AF_INET6, SOCK_DGRAM, 0);
  c = socket(AF_INET, SOCK_DGRAM, 0);
  if (!lo || a < 0 || b < 0 || c < 0 || bind(a, (struct sockaddr *)&any, sizeof any) < 0
      || bind(b, (struct sockaddr *)&any6, sizeof any6) < 0
      || getsockname(a, (struct sockaddr *)&any, &len) < 0)
    zdtm_error("socket/bind: %s", strerror(errno));
  port = any.sin_port;
  join(a, AF_INET, "239.1.2.3");
  m.imr_ifindex = (int)lo;
  inet_pton(AF_INET, "239.1.2.4", &m.imr_multiaddr);
  if (setsockopt(a, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof m) < 0)
    zdtm_error("IP_ADD_MEMBERSHIP: %s", strerror(errno));
  {
    struct in_addr lo4;
    int idx = (int)lo;
    inet_pton(AF_INET, "127.0.0.1", &lo4);
    if (setsockopt(a, IPPROTO_IP, IP_MULTICAST_IF, &lo4, sizeof lo4) < 0
        || setsockopt(b, IPPROTO_IPV6, IPV6_MULTICAST_IF, &idx, sizeof idx) < 0)
      zdtm_error("IP_MULTICAST_IF/IPV6_MULTICAST_IF: %s", strerror(errno));
  }
  join(b, AF_INET6, "ff15::1:2");
  join(b, AF_INET, "239.1.2.5");
  if (!member(a, AF_INET, "239.1.2.3") || !member(a, AF_INET, "239.1.2.4")
      || !member(b, AF_INET6, "ff15::1:2") || !member(b, AF_INET, "239.1.2.5")
      || member(c, AF_INET, "239.1.2.3"))
    zdtm_error("the memberships do not show as joined before the checkpoint");
  loop_before = reaches(a, port);

  zdtm_ready();
  zdtm_wait();

  /* A kernel without /proc/net/igmp (CONFIG_IP_MULTICAST off) shows no
     IPv4 membership: crest cannot see them there, a known gap
     (docs/engine.md), reported as such, never as a pass. */
  if (!v4_shown && !member(a, AF_INET, "239.1.2.3"))
    {
      zdtm_known("IPv4 multicast memberships are not kept on a kernel that does not show them "
                 "(no /proc/net/igmp)");
      v4_lost = true;
    }
  if (!v4_lost && !member(a, AF_INET, "239.1.2.3"))
    zdtm_fail("A: not a member of 239.1.2.3 on lo after restore");
  if (!v4_lost && !member(a, AF_INET, "239.1.2.4"))
    zdtm_fail("A: not a member of 239.1.2.4 on lo after restore");
  if (!member(b, AF_INET6, "ff15::1:2"))
    zdtm_fail("B: not a member of ff15::1:2 on lo after restore");
  if (!v4_lost && !member(b, AF_INET, "239.1.2.5"))
    zdtm_fail("B: not a member of 239.1.2.5 (IPv4 level) on lo after restore");
  {
    struct in_addr got = { 0 };
    int idx = 0;
    socklen_t l4 = sizeof got, l6 = sizeof idx;
    if (getsockopt(a, IPPROTO_IP, IP_MULTICAST_IF, &got, &l4) < 0
        || got.s_addr != htonl(INADDR_LOOPBACK))
      zdtm_fail("A: IP_MULTICAST_IF is %s after restore, expected 127.0.0.1", inet_ntoa(got));
    if (getsockopt(b, IPPROTO_IPV6, IPV6_MULTICAST_IF, &idx, &l6) < 0 || idx != (int)lo)
      zdtm_fail("B: IPV6_MULTICAST_IF is %d after restore, expected lo's %u", idx, lo);
  }
  if (member(c, AF_INET, "239.1.2.3") || member(a, AF_INET, "239.1.2.5"))
    zdtm_fail("a membership no socket had before the checkpoint");
  if (loop_before && !v4_lost && !reaches(a, port))
    zdtm_fail("A: a datagram sent to 239.1.2.3 on lo reached it before the checkpoint, not after");
  if (!v4_lost)
    zdtm_note("memberships kept; a datagram to the group %s",
              loop_before ? "reached A before and after"
                          : "did not reach A on this kernel's lo, before or after (not compared)");
  zdtm_finish();
}
