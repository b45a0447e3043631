/* zdtm-socket: holds a connected UNIX socket pair and a netlink socket
 * (NETLINK_ROUTE, bound). crest does not checkpoint netlink sockets, so a
 * checkpoint must refuse this process and leave it running untouched;
 * after SIGTERM the program checks that its sockets still work (bytes
 * written to one end arrive at the other, the netlink socket keeps its
 * port ID), which they would not if a failed checkpoint had disturbed
 * them. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <linux/netlink.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
  int sp[2], l;
  struct sockaddr_nl a, b;
  socklen_t alen = sizeof(a), blen = sizeof(b);
  char buf[8];

  zdtm_init(argc, argv);
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp) < 0)
    zdtm_error("socketpair: %s", strerror(errno));
  l = socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
  memset(&a, 0, sizeof(a));
  a.nl_family = AF_NETLINK;
  if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0
      || getsockname(l, (struct sockaddr *)&a, &alen) < 0)
    zdtm_error("netlink socket: %s", strerror(errno));
  if (write(sp[0], "before", 6) != 6)
    zdtm_error("write socketpair: %s", strerror(errno));

  zdtm_ready();
  zdtm_wait();

  if (read(sp[1], buf, 6) != 6 || memcmp(buf, "before", 6))
    zdtm_fail("socket pair: the 6 bytes written before the checkpoint attempt are gone");
  if (write(sp[1], "after", 5) != 5 || read(sp[0], buf, 5) != 5 || memcmp(buf, "after", 5))
    zdtm_fail("socket pair: no longer connected");
  if (getsockname(l, (struct sockaddr *)&b, &blen) < 0 || b.nl_pid != a.nl_pid)
    zdtm_fail("netlink socket: port ID changed (expected %u, got %u)", a.nl_pid, b.nl_pid);
  zdtm_finish();
}
