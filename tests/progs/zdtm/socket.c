/* zdtm-socket: holds a connected UNIX socket pair and a bound netlink
 * (NETLINK_ROUTE) socket with the answer to a request left unread in its
 * queue. Such a socket is refused (the answer cannot be put back:
 * docs/engine.md), so a checkpoint must refuse this process and leave it
 * running untouched; after SIGTERM the program checks that its sockets
 * still work (bytes written to one end of the pair arrive at the other,
 * the netlink socket still has its port and the answer waiting, and
 * answers another request), which they would not if a failed checkpoint
 * had disturbed them. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
  int sp[2], nl;
  struct sockaddr_nl a = { .nl_family = AF_NETLINK }, b;
  socklen_t blen = sizeof(b);
  struct
  {
    struct nlmsghdr h;
    struct rtgenmsg g;
  } req
      = { { NLMSG_LENGTH(sizeof(struct rtgenmsg)), RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, 1, 0 },
          { AF_UNSPEC } };
  char buf[8192];

  zdtm_init(argc, argv);
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp) < 0)
    zdtm_error("socketpair: %s", strerror(errno));
  nl = socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
  if (nl < 0 || bind(nl, (struct sockaddr *)&a, sizeof(a)) < 0
      || getsockname(nl, (struct sockaddr *)&a, &(socklen_t){ sizeof(a) }) < 0)
    zdtm_error("netlink socket: %s", strerror(errno));
  if (write(sp[0], "before", 6) != 6)
    zdtm_error("write socketpair: %s", strerror(errno));
  if (send(nl, &req, req.h.nlmsg_len, 0) < 0)
    zdtm_error("netlink request: %s", strerror(errno));

  zdtm_ready();
  zdtm_wait();

  if (read(sp[1], buf, 6) != 6 || memcmp(buf, "before", 6))
    zdtm_fail("socket pair: the 6 bytes written before the checkpoint attempt are gone");
  if (write(sp[1], "after", 5) != 5 || read(sp[0], buf, 5) != 5 || memcmp(buf, "after", 5))
    zdtm_fail("socket pair: no longer connected");
  if (getsockname(nl, (struct sockaddr *)&b, &blen) < 0 || b.nl_pid != a.nl_pid)
    zdtm_fail("netlink socket: port %u, expected %u", b.nl_pid, a.nl_pid);
  if (recv(nl, buf, sizeof buf, MSG_DONTWAIT) <= 0)
    zdtm_fail("netlink socket: the answer left waiting is gone: %s", strerror(errno));
  while (recv(nl, buf, sizeof buf, MSG_DONTWAIT) > 0)
    ;
  if (send(nl, &req, req.h.nlmsg_len, 0) < 0 || recv(nl, buf, sizeof buf, 0) <= 0)
    zdtm_fail("netlink socket: no answer to RTM_GETLINK: %s", strerror(errno));
  zdtm_finish();
}
