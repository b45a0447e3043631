/* zdtm-socket: holds a connected UNIX socket pair and a listening TCP
 * socket. Sockets are outside v1, so a checkpoint must refuse this process
 * and leave it running untouched; after SIGTERM the program checks that its
 * sockets still work (bytes written to one end arrive at the other, the
 * listener still listens), which they would not if a failed checkpoint had
 * disturbed them. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
  int sp[2], l, on = 0;
  struct sockaddr_in a;
  socklen_t alen = sizeof(a), olen = sizeof(on);
  char buf[8];

  zdtm_init(argc, argv);
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp) < 0)
    zdtm_error("socketpair: %s", strerror(errno));
  l = socket(AF_INET, SOCK_STREAM, 0);
  memset(&a, 0, sizeof(a));
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 1) < 0)
    zdtm_error("listening socket: %s", strerror(errno));
  if (write(sp[0], "before", 6) != 6)
    zdtm_error("write socketpair: %s", strerror(errno));

  zdtm_ready();
  zdtm_wait();

  if (read(sp[1], buf, 6) != 6 || memcmp(buf, "before", 6))
    zdtm_fail("socket pair: the 6 bytes written before the checkpoint attempt are gone");
  if (write(sp[1], "after", 5) != 5 || read(sp[0], buf, 5) != 5 || memcmp(buf, "after", 5))
    zdtm_fail("socket pair: no longer connected");
  if (getsockname(l, (struct sockaddr *)&a, &alen) < 0
      || getsockopt(l, SOL_SOCKET, SO_ACCEPTCONN, &on, &olen) < 0 || !on)
    zdtm_fail("TCP socket: no longer listening");
  zdtm_finish();
}
