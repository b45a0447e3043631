/* crest: an established TCP connection through TCP_REPAIR (sk-tcp.c), for
 * sk-inet.c. */
#ifndef CREST_SK_TCP_H
#define CREST_SK_TCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>
#include "error.h"

struct tcp_conn
{
  uint32_t snd_seq, rcv_seq; /* the first byte of each queue */
  uint32_t mss, tsval;
  int snd_wscale, rcv_wscale;
  bool ts, sack, wscale; /* what the handshake agreed on */
  struct tcp_repair_window win;
  uint8_t *sndq, *rcvq; /* the queues' bytes: not acknowledged yet, not read yet */
  size_t nsnd, nrcv;
  int sndbuf, rcvbuf; /* SO_SNDBUF, SO_RCVBUF as getsockopt reads them (format 21; 0: not known) */
};

/* Read the connection of D, crest's copy of an established socket, in
   repair mode, and leave it there (tcp_conn_unrepair; on failure it is
   taken out again, no window probe). -1 with one line
   when crest may not (no CAP_NET_ADMIN in its network namespace). */
int
tcp_conn_dump(int d, struct tcp_conn *t, crest_error_t *err);
/* Take D out of repair mode (no window probe), its SO_REUSEADDR set
   again when REUSE (leaving repair mode clears it): the tree runs on. A socket
   of a tree the checkpoint kills is closed in repair mode instead, which
   the kernel does without a packet (no FIN for its peer, no TIME_WAIT):
   the connection goes on after restore. */
int
tcp_conn_unrepair(int d, bool reuse);
void
tcp_conn_free(struct tcp_conn *t);
/* "tcp": { ... } */
void
tcp_conn_put(yajl_gen g, const struct tcp_conn *t);
int
tcp_conn_parse(yajl_val v, struct tcp_conn *t, crest_error_t *err);
/* Make FD (a new TCP socket, its options set) the connection T between
   LOCAL and PEER again, in repair mode; tcp_conn_release ends it (REUSE:
   the program's SO_REUSEADDR, set again). */
int
tcp_conn_restore(int fd, const struct sockaddr *local, const struct sockaddr *peer, socklen_t alen,
                 const struct tcp_conn *t, crest_error_t *err);
int
tcp_conn_release(int fd, bool reuse, crest_error_t *err);
/* FD: a unix socket to crest outside a rootless container (the restorer's
   sync channel), which sets TCP repair mode on a socket sent to it where
   the restorer may not (EPERM); -1: none. */
void
tcp_repair_helper(int fd);

#endif
