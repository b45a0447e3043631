/* zdtm-unix-sk: unix sockets of every kind crest restores.
 * - "st": a stream socketpair, "abc" queued one way and "xyz12" the other,
 *   the second end shut down for writing (SHUT_WR), SO_PASSCRED and
 *   SO_RCVBUF 32768 on the first, O_NONBLOCK on the first;
 * - "dg": a datagram socketpair, three datagrams of 1, 300 and 5000 bytes
 *   queued one way, SO_PEEK_OFF 0 set;
 * - "sp": a seqpacket socketpair, two messages queued;
 * - "lis": a stream listener bound to DIR/lis.sock (mode 0640), backlog 4,
 *   with one connection accepted (the accepted end "acc" and the client
 *   "cli", "hello" queued to acc) and a second client "wait" still waiting
 *   in the backlog, with nothing written (what is sent to a connection not
 *   accepted yet is refused: zdtm-lost unix-backlog-data);
 * - "abs": a datagram socket bound to an abstract name, a client connected
 *   to it with one datagram queued;
 * - "gone": a datagram socket bound to DIR/gone.sock, the path unlinked.
 * After restore: names (getsockname, getpeername), the queued data in
 * order with its boundaries, the shutdown (EOF and EPIPE), the options,
 * the listener accepts "wait" (the same connection: what wait writes, the
 * accepted end reads), the unlinked path is still absent. DIR is the
 * current directory, which must be absolute to the tree and writable. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static char dir[PATH_MAX];

static socklen_t
addr(struct sockaddr_un *a, const char *name, bool abstract)
{
  memset(a, 0, sizeof *a);
  a->sun_family = AF_UNIX;
  if (abstract)
    {
      strncpy(a->sun_path + 1, name, sizeof a->sun_path - 2);
      return offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name);
    }
  if (strlen(dir) + strlen(name) + 2 > sizeof a->sun_path)
    zdtm_error("%s/%s: too long for a unix socket path", dir, name);
  memcpy(a->sun_path, dir, strlen(dir));
  a->sun_path[strlen(dir)] = '/';
  memcpy(a->sun_path + strlen(dir) + 1, name, strlen(name) + 1);
  return offsetof(struct sockaddr_un, sun_path) + strlen(a->sun_path) + 1;
}

static void
expect(int fd, const char *name, const char *want, size_t len)
{
  char buf[8192];
  ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
  if (n != (ssize_t)len || memcmp(buf, want, len) != 0)
    zdtm_fail("%s: expected %zu bytes \"%.8s...\", got %zd (%s)", name, len, want, n,
              n < 0 ? strerror(errno) : "other bytes");
}

static void
expect_empty(int fd, const char *name)
{
  char c;
  ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);
  if (!(n < 0 && errno == EAGAIN))
    zdtm_fail("%s: expected an empty queue, got %zd", name, n);
}

static int
opt(int fd, int o)
{
  int v = -5;
  socklen_t l = sizeof v;
  getsockopt(fd, SOL_SOCKET, o, &v, &l);
  return v;
}

static void
same_name(int fd, bool peer, const struct sockaddr_un *want, socklen_t wlen, const char *what)
{
  struct sockaddr_un a;
  socklen_t l = sizeof a;
  memset(&a, 0, sizeof a);
  if ((peer ? getpeername(fd, (struct sockaddr *)&a, &l)
            : getsockname(fd, (struct sockaddr *)&a, &l))
          < 0
      || l != wlen || memcmp(&a, want, l) != 0)
    zdtm_fail("%s: %s is not \"%s\"", what, peer ? "peer name" : "name",
              want->sun_path[0] ? want->sun_path : want->sun_path + 1);
}

int
main(int argc, char **argv)
{
  int st[2], dg[2], sp[2], lis, acc, cli, wt, abs, absc, gone, one = 1, buf = 32768, zero = 0;
  static char big[5000];
  struct sockaddr_un la, aa, ga;
  socklen_t llen, alen, glen;
  struct stat s;

  zdtm_init(argc, argv);
  signal(SIGPIPE, SIG_IGN);
  if (!getcwd(dir, sizeof dir))
    zdtm_error("getcwd: %s", strerror(errno));
  memset(big, 'b', sizeof big);
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, st) < 0 || socketpair(AF_UNIX, SOCK_DGRAM, 0, dg) < 0
      || socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sp) < 0)
    zdtm_error("socketpair: %s", strerror(errno));
  setsockopt(st[0], SOL_SOCKET, SO_PASSCRED, &one, sizeof one);
  setsockopt(st[0], SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
  fcntl(st[0], F_SETFL, O_NONBLOCK);
  if (write(st[0], "abc", 3) != 3 || write(st[1], "xyz12", 5) != 5 || shutdown(st[1], SHUT_WR) < 0)
    zdtm_error("stream pair: %s", strerror(errno));
  setsockopt(dg[1], SOL_SOCKET, SO_PEEK_OFF, &zero, sizeof zero);
  if (send(dg[0], "1", 1, 0) != 1 || send(dg[0], big, 300, 0) != 300
      || send(dg[0], big, 5000, 0) != 5000)
    zdtm_error("dgram pair: %s", strerror(errno));
  if (send(sp[0], "first", 5, 0) != 5 || send(sp[0], "second!", 7, 0) != 7)
    zdtm_error("seqpacket pair: %s", strerror(errno));

  llen = addr(&la, "lis.sock", false);
  unlink(la.sun_path);
  lis = socket(AF_UNIX, SOCK_STREAM, 0);
  cli = socket(AF_UNIX, SOCK_STREAM, 0);
  wt = socket(AF_UNIX, SOCK_STREAM, 0);
  if (lis < 0 || bind(lis, (struct sockaddr *)&la, llen) < 0 || chmod(la.sun_path, 0640) < 0
      || listen(lis, 4) < 0 || connect(cli, (struct sockaddr *)&la, llen) < 0
      || (acc = accept(lis, NULL, NULL)) < 0 || connect(wt, (struct sockaddr *)&la, llen) < 0
      || write(cli, "hello", 5) != 5)
    zdtm_error("listener: %s", strerror(errno));

  alen = addr(&aa, "crest-zdtm-unix-sk", true);
  abs = socket(AF_UNIX, SOCK_DGRAM, 0);
  absc = socket(AF_UNIX, SOCK_DGRAM, 0);
  if (bind(abs, (struct sockaddr *)&aa, alen) < 0 || connect(absc, (struct sockaddr *)&aa, alen) < 0
      || send(absc, "to-abs", 6, 0) != 6)
    zdtm_error("abstract: %s", strerror(errno));

  glen = addr(&ga, "gone.sock", false);
  unlink(ga.sun_path);
  gone = socket(AF_UNIX, SOCK_DGRAM, 0);
  if (bind(gone, (struct sockaddr *)&ga, glen) < 0 || unlink(ga.sun_path) < 0)
    zdtm_error("unlinked: %s", strerror(errno));

  zdtm_ready();
  zdtm_wait();

  expect(st[1], "st[1]", "abc", 3);
  expect(st[0], "st[0]", "xyz12", 5);
  if (recv(st[0], big, 1, MSG_DONTWAIT) != 0)
    zdtm_fail("st[0]: expected EOF after the peer's SHUT_WR");
  if (send(st[1], "x", 1, MSG_DONTWAIT) != -1 || errno != EPIPE)
    zdtm_fail("st[1]: expected EPIPE after SHUT_WR");
  if (opt(st[0], SO_PASSCRED) != 1 || opt(st[0], SO_RCVBUF) != 65536)
    zdtm_fail("st[0]: SO_PASSCRED %d (1), SO_RCVBUF %d (65536)", opt(st[0], SO_PASSCRED),
              opt(st[0], SO_RCVBUF));
  if (!(fcntl(st[0], F_GETFL) & O_NONBLOCK) || (fcntl(st[1], F_GETFL) & O_NONBLOCK))
    zdtm_fail("st: O_NONBLOCK expected on st[0] only");
  if (opt(dg[1], SO_PEEK_OFF) != 0 || opt(dg[0], SO_PEEK_OFF) != -1)
    zdtm_fail("dg: SO_PEEK_OFF %d (0) and %d (-1)", opt(dg[1], SO_PEEK_OFF),
              opt(dg[0], SO_PEEK_OFF));
  memset(big, 'b', sizeof big);
  expect(dg[1], "dg[1] datagram 1", "1", 1);
  expect(dg[1], "dg[1] datagram 2", big, 300);
  expect(dg[1], "dg[1] datagram 3", big, 5000);
  expect_empty(dg[1], "dg[1]");
  expect(sp[1], "sp[1] message 1", "first", 5);
  expect(sp[1], "sp[1] message 2", "second!", 7);
  if (send(sp[1], "back", 4, 0) != 4)
    zdtm_fail("sp[1]: send: %s", strerror(errno));
  expect(sp[0], "sp[0]", "back", 4);

  same_name(lis, false, &la, llen, "lis");
  same_name(acc, false, &la, llen, "acc");
  same_name(cli, true, &la, llen, "cli");
  if (stat(la.sun_path, &s) < 0 || !S_ISSOCK(s.st_mode) || (s.st_mode & 07777) != 0640)
    zdtm_fail("lis: %s is not a socket of mode 0640", la.sun_path);
  expect(acc, "acc", "hello", 5);
  if (write(acc, "reply", 5) != 5)
    zdtm_fail("acc: write: %s", strerror(errno));
  expect(cli, "cli", "reply", 5);
  {
    int a2 = accept4(lis, NULL, NULL, SOCK_NONBLOCK);
    if (a2 < 0)
      zdtm_fail("lis: the connection waiting in the backlog is gone: %s", strerror(errno));
    else if (write(wt, "late", 4) != 4)
      zdtm_fail("wait: write: %s", strerror(errno));
    else
      expect(a2, "the connection accepted after restore", "late", 4);
  }
  same_name(abs, false, &aa, alen, "abs");
  same_name(absc, true, &aa, alen, "absc");
  expect(abs, "abs", "to-abs", 6);
  same_name(gone, false, &ga, glen, "gone");
  if (lstat(ga.sun_path, &s) == 0)
    zdtm_fail("gone: %s exists again", ga.sun_path);
  unlink(la.sun_path);
  zdtm_finish();
}
