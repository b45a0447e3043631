/* crest: unit tests of the engine's common socket layer (sockets.h, TAP):
 * sock_diag in crest's own network namespace and, through the setns
 * child, in a user and network namespace of a child; the SOL_SOCKET
 * options through get, the image record, parse and apply; the refusals;
 * a UDP socket's multicast groups (sk-mcast.h): joined, found, written,
 * parsed, joined again. */
#include <config.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <linux/unix_diag.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "sk-mcast.h"
#include "sockets.h"
#include "tap.h"
#include "util.h"

static uint32_t
ino_of(int fd)
{
  struct stat st;
  return fstat(fd, &st) == 0 ? (uint32_t)st.st_ino : 0;
}

static const struct unix_diag_req ureq = {
  .sdiag_family = AF_UNIX,
  .udiag_states = ~0u,
  .udiag_show = UDIAG_SHOW_PEER,
};
static const struct sk_diag_req q
    = { &ureq, sizeof ureq, offsetof(struct unix_diag_msg, udiag_ino) };

static void
diag_here(void)
{
  int sv[2];
  struct sk_diag_set s = { 0 };
  crest_error_t err = NULL;
  const struct sk_diag_rec *r;
  const uint32_t *peer;
  size_t len = 0;
  socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
  tap_ok(sk_diag_query(getpid(), &q, &s, &err) == 0, "sock_diag in crest's own namespace");
  r = sk_diag_find(&s, ino_of(sv[0]));
  tap_ok(r != NULL, "the record of a socketpair's end is found by its inode");
  peer = r ? sk_diag_attr(r, sizeof(struct unix_diag_msg), UNIX_DIAG_PEER, &len) : NULL;
  tap_ok(peer && len == 4 && *peer == ino_of(sv[1]), "its UNIX_DIAG_PEER is the other end");
  sk_diag_free(&s);
  close(sv[0]), close(sv[1]);
}

/* A child in a user and network namespace of its own holds a socketpair;
   crest's own dump does not see it, the query about the child does. */
static void
diag_there(void)
{
  int p[2], go[2], sv[2];
  uint32_t ino = 0;
  pid_t child;
  struct sk_diag_set s = { 0 }, mine = { 0 };
  crest_error_t err = NULL;
  if (pipe(p) < 0 || pipe(go) < 0)
    return;
  if ((child = fork()) == 0)
    {
      char c;
      close(go[1]);
      if (unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0 && socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0)
        ino = ino_of(sv[0]);
      if (write(p[1], &ino, 4) != 4 || read(go[0], &c, 1) < 0)
        _exit(1);
      _exit(0);
    }
  if (read(p[0], &ino, 4) != 4 || ino == 0)
    {
      printf("ok %d # SKIP no unprivileged user namespace here\n", ++tap_n);
      printf("ok %d # SKIP no unprivileged user namespace here\n", ++tap_n);
    }
  else
    {
      int r = sk_diag_query(child, &q, &s, &err);
      tap_ok(r == 0 && sk_diag_find(&s, ino),
             "the setns child finds a socket of another netns (%s)", r && err ? err->msg : "found");
      crest_error_release(&err);
      sk_diag_query(getpid(), &q, &mine, &err);
      tap_ok(!sk_diag_find(&mine, ino), "crest's own namespace does not show it");
      crest_error_release(&err);
    }
  close(go[1]);
  waitpid(child, NULL, 0);
  sk_diag_free(&s);
  sk_diag_free(&mine);
}

static void
opts_roundtrip(void)
{
  int a = socket(AF_UNIX, SOCK_STREAM, 0), b = socket(AF_UNIX, SOCK_STREAM, 0), one = 1;
  int buf = 20000, off = 3;
  struct linger l = { 1, 7 };
  struct timeval tv = { 2, 0 }; /* whole jiffies: the kernel rounds */
  struct sk_opts o, back, got, def;
  crest_error_t err = NULL;
  yajl_gen g = yajl_gen_alloc(NULL);
  const unsigned char *text;
  size_t len;
  char ebuf[128];
  yajl_val v;
  setsockopt(a, SOL_SOCKET, SO_PASSCRED, &one, sizeof one);
  setsockopt(a, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
  setsockopt(a, SOL_SOCKET, SO_PEEK_OFF, &off, sizeof off);
  setsockopt(a, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  setsockopt(a, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  tap_ok(sk_opts_get(a, &o, &err) == 0 && o.v[SKO_PASSCRED] == 1 && o.v[SKO_RCVBUF] == 40000
             && o.v[SKO_PEEK_OFF] == 3 && o.v[SKO_LINGER] == 7 && o.v[SKO_RCVTIMEO] == 2000000,
         "options read: passcred 1, rcvbuf 40000, peek_off 3, linger 7, rcvtimeo 2000000 us");
  yajl_gen_map_open(g);
  sk_opts_put(g, &o);
  yajl_gen_map_close(g);
  yajl_gen_get_buf(g, &text, &len);
  v = yajl_tree_parse((const char *)text, ebuf, sizeof ebuf);
  tap_ok(v && sk_opts_parse(v, &back, &err) == 0 && memcmp(&back, &o, sizeof o) == 0,
         "the image record parses back to the same options");
  tap_ok(sk_opts_apply(b, &back, SKO_ALL, &err) == 0 && sk_opts_get(b, &got, &err) == 0
             && memcmp(got.v, o.v, sizeof o.v) == 0,
         "applied on a new socket, every option reads back the same");
  sk_opts_default(AF_UNIX, SOCK_STREAM, 0, &def);
  back.v[SKO_RCVBUF] = ((int64_t)1 << 40);
  tap_ok(sk_opts_check(&back, &def, false, &err) < 0 && err && strstr(err->msg, "SO_RCVBUF"),
         "a buffer over net.core.rmem_max is refused, naming SO_RCVBUF");
  crest_error_release(&err);
  back.v[SKO_RCVBUF] = o.v[SKO_RCVBUF];
  back.have[SKO_MARK] = true, back.v[SKO_MARK] = 5;
  tap_ok(sk_opts_check(&back, &def, false, &err) < 0 && err && strstr(err->msg, "SO_MARK"),
         "SO_MARK in the host's network namespace is refused, naming it");
  crest_error_release(&err);
  tap_ok(sk_opts_check(&o, &def, false, &err) == 0, "the options of the first socket pass");
  yajl_tree_free(v);
  yajl_gen_free(g);
  close(a), close(b);
}

/* "mcast" of a record TEXT for a socket of FAMILY: the number of groups,
   or -1 when refused. */
static long
mcast_parse(const char *text, int family)
{
  char ebuf[128];
  yajl_val v = yajl_tree_parse(text, ebuf, sizeof ebuf);
  struct sk_mcast *m = NULL;
  size_t n = 0;
  crest_error_t err = NULL;
  long r = v && sk_mcast_parse(v, family, &m, &n, &err) == 0 ? (long)n : -1;
  crest_error_release(&err);
  free(m);
  yajl_tree_free(v);
  return r;
}

static void
mcast_roundtrip(void)
{
  int a = socket(AF_INET6, SOCK_DGRAM, 0), b = socket(AF_INET6, SOCK_DGRAM, 0);
  struct group_req gr = { .gr_interface = 1 };
  struct sk_mcast *m = NULL, *back = NULL;
  size_t n = 0, nb = 0;
  crest_error_t err = NULL;
  yajl_gen g = yajl_gen_alloc(NULL);
  const unsigned char *buf;
  size_t len;
  char ebuf[128];
  yajl_val v;
  gr.gr_group.ss_family = AF_INET;
  inet_pton(AF_INET, "239.7.7.7", &((struct sockaddr_in *)&gr.gr_group)->sin_addr);
  tap_ok(a >= 0 && b >= 0 && setsockopt(a, IPPROTO_IP, MCAST_JOIN_GROUP, &gr, sizeof gr) == 0,
         "an IPv6 socket joins 239.7.7.7 on interface 1 (lo)");
  tap_ok(sk_mcast_dump(getpid(), a, AF_INET6, &m, &n, &err) == 0 && n == 1 && m[0].family == AF_INET
             && strcmp(m[0].dev, "lo") == 0,
         "its membership is found, on lo (%zu found)", n);
  crest_error_release(&err);
  yajl_gen_map_open(g);
  sk_mcast_put(g, m, n);
  yajl_gen_map_close(g);
  yajl_gen_get_buf(g, &buf, &len);
  tap_ok(strstr((const char *)buf, "\"239.7.7.7%lo\"") != NULL, "written as 239.7.7.7%%lo: %s",
         buf);
  v = yajl_tree_parse((const char *)buf, ebuf, sizeof ebuf);
  tap_ok(v && sk_mcast_parse(v, AF_INET6, &back, &nb, &err) == 0 && nb == 1
             && sk_mcast_join(b, back, nb, &err) == 0,
         "parsed back and joined by another socket");
  crest_error_release(&err);
  free(m), free(back);
  tap_ok(sk_mcast_dump(getpid(), b, AF_INET6, &m, &n, &err) == 0 && n == 1,
         "the other socket shows the membership");
  crest_error_release(&err);
  free(m);
  yajl_tree_free(v);
  yajl_gen_free(g);
  close(a), close(b);
  tap_ok(mcast_parse("{\"mcast\": [\"ff15::1%lo\"]}", AF_INET6) == 1
             && mcast_parse("{}", AF_INET) == 0,
         "an IPv6 group on an IPv6 socket, and none, are taken");
  tap_ok(mcast_parse("{\"mcast\": [\"ff15::1%lo\"]}", AF_INET) == -1
             && mcast_parse("{\"mcast\": [\"239.1.1.1\"]}", AF_INET) == -1
             && mcast_parse("{\"mcast\": [\"%lo\"]}", AF_INET) == -1
             && mcast_parse("{\"mcast\": [\"239.1.1.1%\"]}", AF_INET) == -1
             && mcast_parse("{\"mcast\": [\"239.1.1.1%abcdefghijklmnopq\"]}", AF_INET) == -1
             && mcast_parse("{\"mcast\": [7]}", AF_INET) == -1,
         "refused: an IPv6 group on an IPv4 socket, no device, no group, an empty or "
         "too long device name, a number");
}

int
main(void)
{
  diag_here();
  diag_there();
  opts_roundtrip();
  mcast_roundtrip();
  return tap_done();
}
