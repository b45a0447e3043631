/* zdtm-netlink: netlink sockets as programs hold them: R, an rtnetlink
 * socket bound by the kernel (port 0 asked), listening to the link and
 * IPv4 address groups (RTMGRP_LINK with bind, RTNLGRP_IPV4_IFADDR with
 * NETLINK_ADD_MEMBERSHIP), with NETLINK_EXT_ACK and NETLINK_NO_ENOBUFS;
 * A, an audit socket never bound (dbus-daemon holds one); G, a datagram
 * generic netlink socket bound to a port of its own choosing. After
 * restore: each socket's protocol, type, port, groups and options as the
 * kernel shows them, and R and G answer a request. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct view
{
  int type, proto, ext_ack, no_enobufs;
  uint32_t port, groups[4];
};

static void
look(int fd, struct view *v)
{
  struct sockaddr_nl a;
  socklen_t len = sizeof a;
  memset(v, 0, sizeof *v);
  memset(&a, 0, sizeof a);
  getsockopt(fd, SOL_SOCKET, SO_TYPE, &v->type, &(socklen_t){ sizeof(int) });
  getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &v->proto, &(socklen_t){ sizeof(int) });
  getsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &v->ext_ack, &(socklen_t){ sizeof(int) });
  getsockopt(fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &v->no_enobufs, &(socklen_t){ sizeof(int) });
  getsockopt(fd, SOL_NETLINK, NETLINK_LIST_MEMBERSHIPS, v->groups,
             &(socklen_t){ sizeof v->groups });
  if (getsockname(fd, (struct sockaddr *)&a, &len) == 0)
    v->port = a.nl_pid;
}

static void
same(const char *name, int fd, const struct view *was)
{
  struct view now;
  look(fd, &now);
  if (now.type != was->type || now.proto != was->proto)
    zdtm_fail("%s: type %d protocol %d, expected %d %d", name, now.type, now.proto, was->type,
              was->proto);
  if (now.port != was->port)
    zdtm_fail("%s: port %u, expected %u", name, now.port, was->port);
  if (memcmp(now.groups, was->groups, sizeof now.groups) != 0)
    zdtm_fail("%s: groups %#x, expected %#x", name, now.groups[0], was->groups[0]);
  if (now.ext_ack != was->ext_ack || now.no_enobufs != was->no_enobufs)
    zdtm_fail("%s: NETLINK_EXT_ACK %d NETLINK_NO_ENOBUFS %d, expected %d %d", name, now.ext_ack,
              now.no_enobufs, was->ext_ack, was->no_enobufs);
}

/* A request of TYPE (family FAMILY for generic netlink) answered on FD. */
static void
answers(const char *name, int fd, int type, int family)
{
  struct
  {
    struct nlmsghdr h;
    union
    {
      struct rtgenmsg r;
      struct genlmsghdr g;
    } u;
  } req;
  char buf[16384];
  ssize_t n;
  memset(&req, 0, sizeof req);
  req.h.nlmsg_len = NLMSG_LENGTH(type == RTM_GETLINK ? sizeof req.u.r : sizeof req.u.g);
  req.h.nlmsg_type = (unsigned short)(type == RTM_GETLINK ? RTM_GETLINK : family);
  req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  req.h.nlmsg_seq = 7;
  if (type == RTM_GETLINK)
    req.u.r.rtgen_family = AF_UNSPEC;
  else
    req.u.g.cmd = CTRL_CMD_GETFAMILY, req.u.g.version = 1;
  if (send(fd, &req, req.h.nlmsg_len, 0) < 0)
    zdtm_fail("%s: send a request: %s", name, strerror(errno));
  else if ((n = recv(fd, buf, sizeof buf, 0)) <= 0)
    zdtm_fail("%s: no answer: %s", name, strerror(errno));
  else if (((struct nlmsghdr *)buf)->nlmsg_seq != 7)
    zdtm_fail("%s: an answer to another request", name);
  /* the rest of the dump */
  while (recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0)
    ;
}

int
main(int argc, char **argv)
{
  struct sockaddr_nl ra = { .nl_family = AF_NETLINK, .nl_groups = RTMGRP_LINK };
  struct sockaddr_nl ga = { .nl_family = AF_NETLINK, .nl_pid = 0 };
  struct view rv, av, gv;
  int r, a, g, one = 1, grp = RTNLGRP_IPV4_IFADDR, a_errno;

  zdtm_init(argc, argv);
  r = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  a = socket(AF_NETLINK, SOCK_RAW, NETLINK_AUDIT);
  a_errno = errno;
  g = socket(AF_NETLINK, SOCK_DGRAM, NETLINK_GENERIC);
  ga.nl_pid = (uint32_t)getpid() + 77000;
  /* a kernel without audit (the VM's tinyconfig builds) has no such
     protocol: the other two sockets are checked */
  if (a < 0 && a_errno == EPROTONOSUPPORT)
    zdtm_note("no audit netlink in this kernel: that socket is not checked");
  if (r < 0 || g < 0 || (a < 0 && a_errno != EPROTONOSUPPORT)
      || bind(r, (struct sockaddr *)&ra, sizeof ra) < 0
      || setsockopt(r, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &grp, sizeof grp) < 0
      || setsockopt(r, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof one) < 0
      || setsockopt(r, SOL_NETLINK, NETLINK_NO_ENOBUFS, &one, sizeof one) < 0
      || bind(g, (struct sockaddr *)&ga, sizeof ga) < 0)
    zdtm_error("netlink sockets: %s", strerror(errno));
  answers("rtnetlink", r, RTM_GETLINK, 0);
  look(r, &rv), look(g, &gv);
  if (a >= 0)
    look(a, &av);
  if (rv.port == 0 || rv.groups[0] != (1u << (RTNLGRP_LINK - 1) | 1u << (RTNLGRP_IPV4_IFADDR - 1))
      || (a >= 0 && av.port != 0) || gv.port != ga.nl_pid)
    zdtm_error("netlink sockets: not as set up (port %u groups %#x, audit port %u)", rv.port,
               rv.groups[0], av.port);

  zdtm_ready();
  zdtm_wait();

  same("rtnetlink", r, &rv);
  if (a >= 0)
    same("audit", a, &av);
  same("generic", g, &gv);
  answers("rtnetlink", r, RTM_GETLINK, 0);
  answers("generic", g, 0, GENL_ID_CTRL);
  zdtm_finish();
}
