/* zdtm-inet-tcp-close: an established TCP connection on 127.0.0.1, both
 * ends in the tree, with bytes unread, and its listener. Checkpointed with
 * --tcp-close: after restore both ends are closed sockets (not connected:
 * getpeername fails with ENOTCONN, a read gives no byte of the old
 * connection), with their options (TCP_NODELAY, SO_KEEPALIVE); the
 * listener still accepts a new connection. Without --tcp-close the
 * checkpoint is refused (zdtm-lost tcp-established). The harness says it
 * checkpoints with --tcp-close by ZDTM_TCP_CLOSE=1; without it (a run with
 * no checkpoint) the connection must still carry its bytes. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <stdlib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
  struct sockaddr_in a, p;
  socklen_t len;
  int l, c, s, one = 1, v;
  char buf[8];

  zdtm_init(argc, argv);
  zdtm_tcp_pair(&l, &a, &c, &s);
  if (setsockopt(c, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one) < 0)
    zdtm_error("SO_KEEPALIVE: %s", strerror(errno));
  if (write(c, "unread", 6) != 6)
    zdtm_error("write: %s", strerror(errno));

  zdtm_ready();
  zdtm_wait();

  if (!getenv("ZDTM_TCP_CLOSE"))
    {
      if (read(s, buf, 6) != 6 || memcmp(buf, "unread", 6))
        zdtm_fail("without a checkpoint: the connection lost its bytes");
      zdtm_finish();
    }

  len = sizeof p;
  if (getpeername(c, (struct sockaddr *)&p, &len) == 0 || errno != ENOTCONN)
    zdtm_fail("client end: still connected (getpeername: %s)", strerror(errno));
  len = sizeof p;
  if (getpeername(s, (struct sockaddr *)&p, &len) == 0 || errno != ENOTCONN)
    zdtm_fail("server end: still connected (getpeername: %s)", strerror(errno));
  if (recv(s, buf, sizeof buf, MSG_DONTWAIT) > 0)
    zdtm_fail("server end: bytes of the closed connection can still be read");
  len = sizeof v;
  if (getsockopt(c, SOL_TCP, TCP_NODELAY, &v, &len) < 0 || v != 1)
    zdtm_fail("client end: TCP_NODELAY (expected 1, got %d)", v);
  len = sizeof v;
  if (getsockopt(c, SOL_SOCKET, SO_KEEPALIVE, &v, &len) < 0 || v != 1)
    zdtm_fail("client end: SO_KEEPALIVE (expected 1, got %d)", v);
  {
    int n = socket(AF_INET, SOCK_STREAM, 0), t;
    if (connect(n, (struct sockaddr *)&a, sizeof a) < 0 || (t = accept(l, NULL, NULL)) < 0
        || write(n, "new", 3) != 3 || read(t, buf, 3) != 3 || memcmp(buf, "new", 3))
      zdtm_fail("listener: a new connection after restore: %s", strerror(errno));
  }
  zdtm_finish();
}
