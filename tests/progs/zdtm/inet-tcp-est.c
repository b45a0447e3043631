/* zdtm-inet-tcp-est: an established TCP connection on 127.0.0.1, both ends
 * in the tree, with bytes unread in both directions, TCP_NODELAY on one
 * end. Checkpointed with --tcp-established (sequence numbers, queues,
 * options and window through TCP_REPAIR): after restore the same ports on
 * both ends, the unread bytes in order, then 100 KiB more each way, and a
 * close seen by the other end. Refused where TCP_REPAIR is not open to the
 * dump or the restore (process mode in the host's network namespace; a
 * container on a stock kernel). */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int
port(int fd, bool peer)
{
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  memset(&a, 0, sizeof a);
  if ((peer ? getpeername : getsockname)(fd, (struct sockaddr *)&a, &len) < 0)
    return -1;
  return ntohs(a.sin_port);
}

static void
expect(const char *what, int fd, const char *want, size_t len)
{
  char buf[64];
  ssize_t n = recv(fd, buf, len, MSG_WAITALL);
  if (n != (ssize_t)len || memcmp(buf, want, len))
    zdtm_fail("%s: expected \"%s\", got %zd bytes (%s)", what, want, n,
              n < 0 ? strerror(errno) : "");
}

/* N bytes of pattern SEED from A to B, written and read in turns. */
static void
stream(const char *what, int a, int b, size_t n, uint32_t seed)
{
  static char out[4096], in[4096];
  for (size_t off = 0; off < n; off += sizeof out)
    {
      for (size_t i = 0; i < sizeof out; i++)
        out[i] = (char)zdtm_pattern(seed, off + i);
      if (write(a, out, sizeof out) != sizeof out
          || recv(b, in, sizeof in, MSG_WAITALL) != sizeof in || memcmp(in, out, sizeof in))
        {
          zdtm_fail("%s: bytes at %zu lost or changed", what, off);
          return;
        }
    }
}

int
main(int argc, char **argv)
{
  struct sockaddr_in a;
  socklen_t len;
  int l, c, s, v = 0, cport, sport;
  char buf[4];

  zdtm_init(argc, argv);
  zdtm_tcp_pair(&l, &a, &c, &s);
  close(l);
  if (write(c, "to the server", 13) != 13 || write(s, "to the client", 13) != 13)
    zdtm_error("write: %s", strerror(errno));
  cport = port(c, false), sport = port(s, false);

  zdtm_ready();
  zdtm_wait();

  if (port(c, false) != cport || port(c, true) != sport || port(s, false) != sport
      || port(s, true) != cport)
    zdtm_fail("ports (expected %d<->%d, got %d->%d, %d->%d)", cport, sport, port(c, false),
              port(c, true), port(s, false), port(s, true));
  len = sizeof v;
  if (getsockopt(c, SOL_TCP, TCP_NODELAY, &v, &len) < 0 || v != 1)
    zdtm_fail("client: TCP_NODELAY (expected 1, got %d)", v);
  expect("server: the unread bytes", s, "to the server", 13);
  expect("client: the unread bytes", c, "to the client", 13);
  stream("client to server", c, s, 100 << 10, 1);
  stream("server to client", s, c, 100 << 10, 2);
  close(c);
  if (recv(s, buf, sizeof buf, 0) != 0)
    zdtm_fail("server: the client's close is not seen");
  zdtm_finish();
}
