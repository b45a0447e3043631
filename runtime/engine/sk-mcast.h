/* crest: the multicast groups a UDP socket joined (sk-mcast.c). */
#ifndef CREST_SK_MCAST_H
#define CREST_SK_MCAST_H

#include <net/if.h>
#include <stddef.h>
#include <sys/types.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>
#include "error.h"

/* At most this many groups one socket may hold (the kernel's default
   igmp_max_memberships is 20). */
#define SK_MCAST_MAX 256

struct sk_mcast
{
  int family;              /* of the group: AF_INET or AF_INET6 */
  unsigned char group[16]; /* its address, network order */
  char dev[IFNAMSIZ];      /* the interface it was joined on */
};

/* The groups socket D (crest's copy of it; SK_FAMILY its family) of
   process PID joined: the groups /proc/PID/net/igmp and igmp6 list on
   each interface, asked of the socket one by one (MCAST_MSFILTER answers
   for a group the socket is a member of, EADDRNOTAVAIL otherwise). A
   membership with a source filter is refused. *OUT is NULL when none. */
int
sk_mcast_dump(pid_t pid, int d, int sk_family, struct sk_mcast **out, size_t *n,
              crest_error_t *err);

/* The interface IPV6_MULTICAST_IF names on IPv6 socket D of PID (an
   index of its network namespace), by name in DEV ("" when none). */
int
sk_mcast_if6_dump(pid_t pid, int d, char dev[IFNAMSIZ], crest_error_t *err);

/* IPV6_MULTICAST_IF of FD: the interface named DEV here. */
int
sk_mcast_if6_set(int fd, const char *dev, crest_error_t *err);

/* "mcast": ["GROUP%DEV", ...], when N > 0. */
void
sk_mcast_put(yajl_gen g, const struct sk_mcast *m, size_t n);

/* The "mcast" list of V (absent: none), for a socket of SK_FAMILY. */
int
sk_mcast_parse(yajl_val v, int sk_family, struct sk_mcast **out, size_t *n, crest_error_t *err);

/* Joins socket FD to each group on its interface (by name, in the
   restoring process's network namespace), then checks the kernel shows
   each membership. */
int
sk_mcast_join(int fd, const struct sk_mcast *m, size_t n, crest_error_t *err);

#endif
