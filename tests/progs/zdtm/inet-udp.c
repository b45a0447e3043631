/* zdtm-inet-udp: IPv4 UDP sockets with datagrams waiting: A bound to
 * 127.0.0.1, B bound and connected to A, and a third socket, closed before
 * the checkpoint, that sent to A too. Queued on A: three datagrams from B
 * (one of 1000 bytes) and one from the closed socket, in that order; on B
 * one from A. After restore: every datagram with its bytes, its source and
 * in order, then nothing more; B still connected to A (a datagram from
 * elsewhere does not reach it), A's and B's ports and options. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static struct sockaddr_in
bound(int fd)
{
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  memset(&a, 0, sizeof a);
  getsockname(fd, (struct sockaddr *)&a, &len);
  return a;
}

/* The next datagram on FD: WANT (LEN bytes) from port FROM. */
static void
expect(const char *sk, int fd, const void *want, size_t len, int from)
{
  char buf[2048];
  struct sockaddr_in src;
  socklen_t sl = sizeof src;
  ssize_t n;
  memset(&src, 0, sizeof src);
  n = recvfrom(fd, buf, sizeof buf, MSG_DONTWAIT, (struct sockaddr *)&src, &sl);
  if (n < 0)
    zdtm_fail("%s: a datagram of %zu bytes from port %d is missing: %s", sk, len, from,
              strerror(errno));
  else if ((size_t)n != len || memcmp(buf, want, len))
    zdtm_fail("%s: datagram (expected %zu bytes \"%.8s\", got %zd \"%.8s\")", sk, len,
              (const char *)want, n, buf);
  else if (ntohs(src.sin_port) != from || src.sin_addr.s_addr != htonl(INADDR_LOOPBACK))
    zdtm_fail("%s: source of \"%.8s\" (expected 127.0.0.1:%d, got %s:%d)", sk, (const char *)want,
              from, inet_ntoa(src.sin_addr), ntohs(src.sin_port));
}

int
main(int argc, char **argv)
{
  struct sockaddr_in lo, aa, ba;
  int a, b, t, tport, v = 0;
  socklen_t len = sizeof v;
  char big[1000], buf[8];

  zdtm_init(argc, argv);
  memset(&lo, 0, sizeof lo);
  lo.sin_family = AF_INET;
  lo.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a = socket(AF_INET, SOCK_DGRAM, 0);
  b = socket(AF_INET, SOCK_DGRAM, 0);
  t = socket(AF_INET, SOCK_DGRAM, 0);
  if (a < 0 || b < 0 || t < 0 || bind(a, (struct sockaddr *)&lo, sizeof lo) < 0
      || bind(b, (struct sockaddr *)&lo, sizeof lo) < 0
      || bind(t, (struct sockaddr *)&lo, sizeof lo) < 0)
    zdtm_error("socket/bind: %s", strerror(errno));
  v = 1;
  if (setsockopt(a, SOL_SOCKET, SO_BROADCAST, &v, sizeof v) < 0
      || setsockopt(a, SOL_IP, IP_TOS, &(int){ 0x08 }, sizeof(int)) < 0)
    zdtm_error("setsockopt: %s", strerror(errno));
  aa = bound(a), ba = bound(b), tport = ntohs(bound(t).sin_port);
  if (connect(b, (struct sockaddr *)&aa, sizeof aa) < 0)
    zdtm_error("connect: %s", strerror(errno));
  for (size_t i = 0; i < sizeof big; i++)
    big[i] = (char)zdtm_pattern(7, i);
  if (send(b, "one", 3, 0) != 3 || send(b, "two2", 4, 0) != 4
      || send(b, big, sizeof big, 0) != sizeof big
      || sendto(t, "gone", 4, 0, (struct sockaddr *)&aa, sizeof aa) != 4
      || sendto(a, "back", 4, 0, (struct sockaddr *)&ba, sizeof ba) != 4)
    zdtm_error("send: %s", strerror(errno));
  close(t);

  zdtm_ready();
  zdtm_wait();

  if (bound(a).sin_port != aa.sin_port || bound(b).sin_port != ba.sin_port)
    zdtm_fail("ports (expected %d %d, got %d %d)", ntohs(aa.sin_port), ntohs(ba.sin_port),
              ntohs(bound(a).sin_port), ntohs(bound(b).sin_port));
  if (getsockopt(a, SOL_SOCKET, SO_BROADCAST, &v, &len) < 0 || v != 1)
    zdtm_fail("A: SO_BROADCAST (expected 1, got %d)", v);
  len = sizeof v;
  if (getsockopt(a, SOL_IP, IP_TOS, &v, &len) < 0 || v != 0x08)
    zdtm_fail("A: IP_TOS (expected 8, got %d)", v);
  expect("A", a, "one", 3, ntohs(ba.sin_port));
  expect("A", a, "two2", 4, ntohs(ba.sin_port));
  expect("A", a, big, sizeof big, ntohs(ba.sin_port));
  expect("A", a, "gone", 4, tport);
  expect("B", b, "back", 4, ntohs(aa.sin_port));
  if (recv(a, buf, sizeof buf, MSG_DONTWAIT) >= 0 || recv(b, buf, sizeof buf, MSG_DONTWAIT) >= 0)
    zdtm_fail("a datagram more than was queued");
  {
    struct sockaddr_in peer;
    socklen_t pl = sizeof peer;
    int o = socket(AF_INET, SOCK_DGRAM, 0);
    if (getpeername(b, (struct sockaddr *)&peer, &pl) < 0 || peer.sin_port != aa.sin_port)
      zdtm_fail("B: no longer connected to A");
    sendto(o, "stray", 5, 0, (struct sockaddr *)&ba, sizeof ba);
    if (send(b, "after", 5, 0) != 5 || recv(a, buf, 5, 0) != 5 || memcmp(buf, "after", 5))
      zdtm_fail("B to A after restore");
    usleep(20000);
    if (recv(b, buf, sizeof buf, MSG_DONTWAIT) >= 0)
      zdtm_fail("B: a datagram from a port it is not connected to arrived");
  }
  zdtm_finish();
}
