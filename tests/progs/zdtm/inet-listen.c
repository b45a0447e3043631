/* zdtm-inet-listen: IPv4 TCP sockets that are not connected: a listening
 * socket on 127.0.0.1 (backlog 7, options set), a socket bound to a port
 * that does not listen, and an unbound one with options. After restore:
 * each one's address, state and options; the listener accepts a new
 * connection and bytes pass both ways. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct opt
{
  int level, name, val;
  const char *what;
};

static const struct opt lopts[] = {
  { SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR" },
  { SOL_SOCKET, SO_KEEPALIVE, 1, "SO_KEEPALIVE" },
  { SOL_SOCKET, SO_RCVBUF, 131072, "SO_RCVBUF" }, /* the kernel doubles 65536 */
  { SOL_TCP, TCP_NODELAY, 1, "TCP_NODELAY" },
  { SOL_TCP, TCP_KEEPIDLE, 77, "TCP_KEEPIDLE" },
  { SOL_TCP, TCP_KEEPINTVL, 13, "TCP_KEEPINTVL" },
  { SOL_TCP, TCP_KEEPCNT, 4, "TCP_KEEPCNT" },
  { SOL_TCP, TCP_USER_TIMEOUT, 12345, "TCP_USER_TIMEOUT" },
  { SOL_IP, IP_TOS, 0x10, "IP_TOS" },
  { SOL_IP, IP_TTL, 33, "IP_TTL" },
};
static const struct opt uopts[] = {
  { SOL_SOCKET, SO_REUSEPORT, 1, "SO_REUSEPORT" },
  { SOL_TCP, TCP_NODELAY, 1, "TCP_NODELAY" },
  { SOL_TCP, TCP_MAXSEG, 1200, "TCP_MAXSEG" },
};

static void
set_opts(int fd, const struct opt *o, size_t n)
{
  for (size_t i = 0; i < n; i++)
    {
      int v = o[i].name == SO_RCVBUF ? o[i].val / 2 : o[i].val;
      if (setsockopt(fd, o[i].level, o[i].name, &v, sizeof v) < 0)
        zdtm_error("setsockopt %s: %s", o[i].what, strerror(errno));
    }
}

static void
check_opts(const char *sk, int fd, const struct opt *o, size_t n)
{
  for (size_t i = 0; i < n; i++)
    {
      int v = -1;
      socklen_t len = sizeof v;
      if (getsockopt(fd, o[i].level, o[i].name, &v, &len) < 0)
        zdtm_fail("%s: getsockopt %s: %s", sk, o[i].what, strerror(errno));
      else if (v != o[i].val)
        zdtm_fail("%s: %s (expected %d, got %d)", sk, o[i].what, o[i].val, v);
    }
}

static int
port_of(int fd)
{
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  memset(&a, 0, sizeof a);
  if (getsockname(fd, (struct sockaddr *)&a, &len) < 0)
    return -1;
  return ntohs(a.sin_port);
}

int
main(int argc, char **argv)
{
  struct sockaddr_in a;
  int l, b, u, lport, bport, on = 0, c, s;
  socklen_t len = sizeof on;
  struct tcp_info ti;
  char buf[8];

  zdtm_init(argc, argv);
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  l = socket(AF_INET, SOCK_STREAM, 0);
  b = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  u = socket(AF_INET, SOCK_STREAM, 0);
  if (l < 0 || b < 0 || u < 0)
    zdtm_error("socket: %s", strerror(errno));
  set_opts(l, lopts, sizeof lopts / sizeof lopts[0]);
  set_opts(u, uopts, sizeof uopts / sizeof uopts[0]);
  if (bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 7) < 0
      || bind(b, (struct sockaddr *)&a, sizeof a) < 0)
    zdtm_error("bind/listen: %s", strerror(errno));
  lport = port_of(l);
  bport = port_of(b);

  zdtm_ready();
  zdtm_wait();

  if (port_of(l) != lport || port_of(b) != bport || port_of(u) != 0)
    zdtm_fail("ports (expected %d %d 0, got %d %d %d)", lport, bport, port_of(l), port_of(b),
              port_of(u));
  if (getsockopt(l, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) < 0 || !on)
    zdtm_fail("listener: no longer listening");
  len = sizeof ti;
  memset(&ti, 0, sizeof ti);
  if (getsockopt(l, SOL_TCP, TCP_INFO, &ti, &len) < 0 || ti.tcpi_sacked != 7)
    zdtm_fail("listener: backlog (expected 7, got %u)", ti.tcpi_sacked);
  len = sizeof on;
  if (getsockopt(b, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) < 0 || on)
    zdtm_fail("bound socket: listens");
  if (!(fcntl(b, F_GETFL) & O_NONBLOCK))
    zdtm_fail("bound socket: O_NONBLOCK lost");
  check_opts("listener", l, lopts, sizeof lopts / sizeof lopts[0]);
  check_opts("unbound", u, uopts, sizeof uopts / sizeof uopts[0]);
  a.sin_port = htons(lport);
  c = socket(AF_INET, SOCK_STREAM, 0);
  if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a) < 0)
    zdtm_fail("connect to the listener: %s", strerror(errno));
  else if ((s = accept(l, NULL, NULL)) < 0)
    zdtm_fail("accept: %s", strerror(errno));
  else if (write(c, "ping", 4) != 4 || read(s, buf, 4) != 4 || memcmp(buf, "ping", 4)
           || write(s, "pong", 4) != 4 || read(c, buf, 4) != 4 || memcmp(buf, "pong", 4))
    zdtm_fail("bytes over an accepted connection");
  zdtm_finish();
}
