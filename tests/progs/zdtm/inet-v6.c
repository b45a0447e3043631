/* zdtm-inet-v6: IPv6 sockets: a TCP listener on [::1] with IPV6_V6ONLY,
 * IPV6_TCLASS and IPV6_UNICAST_HOPS, a dual-stack listener on [::]
 * (IPV6_V6ONLY 0) that an IPv4 client reaches, and a UDP socket on [::1]
 * with two datagrams queued from another one. After restore: addresses,
 * options, both listeners accept (the dual-stack one over 127.0.0.1), the
 * datagrams with their source, in order. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int
port6(int fd)
{
  struct sockaddr_in6 a;
  socklen_t len = sizeof a;
  memset(&a, 0, sizeof a);
  if (getsockname(fd, (struct sockaddr *)&a, &len) < 0)
    return -1;
  return ntohs(a.sin6_port);
}

static void
check_opt(const char *sk, int fd, int level, int name, const char *what, int want)
{
  int v = -1;
  socklen_t len = sizeof v;
  if (getsockopt(fd, level, name, &v, &len) < 0 || v != want)
    zdtm_fail("%s: %s (expected %d, got %d)", sk, what, want, v);
}

static void
try_accept(const char *sk, int l, const struct sockaddr *to, socklen_t tl)
{
  int c = socket(to->sa_family, SOCK_STREAM, 0), s;
  char buf[4];
  if (c < 0 || connect(c, to, tl) < 0)
    {
      zdtm_fail("%s: connect: %s", sk, strerror(errno));
      return;
    }
  if ((s = accept(l, NULL, NULL)) < 0 || write(c, "v6v6", 4) != 4 || read(s, buf, 4) != 4
      || memcmp(buf, "v6v6", 4))
    zdtm_fail("%s: accept and bytes: %s", sk, strerror(errno));
  close(c);
  if (s >= 0)
    close(s);
}

int
main(int argc, char **argv)
{
  struct sockaddr_in6 lo6, any6, ua, from;
  struct sockaddr_in lo4;
  int l, d, u, s, lp, dp, sp, one = 1, zero = 0, tc = 0x20, hops = 17;
  char buf[16];

  zdtm_init(argc, argv);
  memset(&lo6, 0, sizeof lo6);
  lo6.sin6_family = AF_INET6;
  lo6.sin6_addr = in6addr_loopback;
  any6 = lo6;
  any6.sin6_addr = in6addr_any;
  l = socket(AF_INET6, SOCK_STREAM, 0);
  d = socket(AF_INET6, SOCK_STREAM, 0);
  u = socket(AF_INET6, SOCK_DGRAM, 0);
  s = socket(AF_INET6, SOCK_DGRAM, 0);
  if (l < 0 || d < 0 || u < 0 || s < 0)
    zdtm_error("socket(AF_INET6): %s", strerror(errno));
  if (setsockopt(l, SOL_IPV6, IPV6_V6ONLY, &one, sizeof one) < 0
      || setsockopt(l, SOL_IPV6, IPV6_TCLASS, &tc, sizeof tc) < 0
      || setsockopt(l, SOL_IPV6, IPV6_UNICAST_HOPS, &hops, sizeof hops) < 0
      || setsockopt(d, SOL_IPV6, IPV6_V6ONLY, &zero, sizeof zero) < 0)
    zdtm_error("setsockopt: %s", strerror(errno));
  if (bind(l, (struct sockaddr *)&lo6, sizeof lo6) < 0 || listen(l, 3) < 0)
    zdtm_error("bind [::1] (no IPv6 loopback?): %s", strerror(errno));
  if (bind(d, (struct sockaddr *)&any6, sizeof any6) < 0 || listen(d, 3) < 0
      || bind(u, (struct sockaddr *)&lo6, sizeof lo6) < 0
      || bind(s, (struct sockaddr *)&lo6, sizeof lo6) < 0)
    zdtm_error("bind: %s", strerror(errno));
  lp = port6(l), dp = port6(d), sp = port6(s);
  ua = lo6;
  ua.sin6_port = htons(port6(u));
  if (sendto(s, "first", 5, 0, (struct sockaddr *)&ua, sizeof ua) != 5
      || sendto(s, "second", 6, 0, (struct sockaddr *)&ua, sizeof ua) != 6)
    zdtm_error("sendto: %s", strerror(errno));

  zdtm_ready();
  zdtm_wait();

  if (port6(l) != lp || port6(d) != dp || port6(s) != sp)
    zdtm_fail("ports (expected %d %d %d, got %d %d %d)", lp, dp, sp, port6(l), port6(d), port6(s));
  check_opt("[::1] listener", l, SOL_IPV6, IPV6_V6ONLY, "IPV6_V6ONLY", 1);
  check_opt("[::1] listener", l, SOL_IPV6, IPV6_TCLASS, "IPV6_TCLASS", tc);
  check_opt("[::1] listener", l, SOL_IPV6, IPV6_UNICAST_HOPS, "IPV6_UNICAST_HOPS", hops);
  check_opt("[::] listener", d, SOL_IPV6, IPV6_V6ONLY, "IPV6_V6ONLY", 0);
  lo6.sin6_port = htons(lp);
  try_accept("[::1] listener", l, (struct sockaddr *)&lo6, sizeof lo6);
  memset(&lo4, 0, sizeof lo4);
  lo4.sin_family = AF_INET;
  lo4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  lo4.sin_port = htons(dp);
  try_accept("[::] listener over IPv4", d, (struct sockaddr *)&lo4, sizeof lo4);
  for (int i = 0; i < 2; i++)
    {
      const char *want = i ? "second" : "first";
      socklen_t fl = sizeof from;
      ssize_t n = recvfrom(u, buf, sizeof buf, MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
      if (n != (ssize_t)strlen(want) || memcmp(buf, want, n))
        zdtm_fail("UDP: datagram %d (expected \"%s\", got %zd bytes)", i + 1, want, n);
      else if (ntohs(from.sin6_port) != sp || !IN6_IS_ADDR_LOOPBACK(&from.sin6_addr))
        zdtm_fail("UDP: source of \"%s\" (expected [::1]:%d, got port %d)", want, sp,
                  ntohs(from.sin6_port));
    }
  if (recv(u, buf, sizeof buf, MSG_DONTWAIT) >= 0)
    zdtm_fail("UDP: a datagram more than was queued");
  zdtm_finish();
}
