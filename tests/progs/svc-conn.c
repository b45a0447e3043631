/* svc-conn: one client connection held open, driven through a FIFO.
 *
 *   svc-conn tcp ADDR PORT IN OUT     (ADDR: an IPv4 or IPv6 literal)
 *   svc-conn unix PATH IN OUT
 *
 * Connects, then copies every byte read from the FIFO IN to the connection
 * and every byte received to the end of OUT, until the connection closes.
 * IN is opened read-write, so that writers coming and going never give it an
 * end of file. OUT is created (empty) once the connection is up: its
 * existence says "connected". The services suites use it as the client
 * inside a container whose connection must survive a checkpoint: the same
 * connection, not a new one, answers after the restore.
 *
 * Exit: 0 never (it runs until killed or the connection ends); 1 when the
 * peer closes or an error occurs, with one line on stderr saying which.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static void
die(const char *what)
{
  fprintf(stderr, "svc-conn: %s: %s\n", what, strerror(errno));
  exit(1);
}

static int
connect_tcp(const char *addr, const char *port)
{
  struct sockaddr_in6 s6 = { .sin6_family = AF_INET6 };
  struct sockaddr_in s4 = { .sin_family = AF_INET };
  char *end;
  long p = strtol(port, &end, 10);
  int fd;

  if (*port == '\0' || *end != '\0' || p <= 0 || p > 65535)
    {
      fprintf(stderr, "svc-conn: bad port '%s'\n", port);
      exit(2);
    }
  if (inet_pton(AF_INET, addr, &s4.sin_addr) == 1)
    {
      s4.sin_port = htons((unsigned short)p);
      fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0 || connect(fd, (struct sockaddr *)&s4, sizeof(s4)) < 0)
        die("connect");
      return fd;
    }
  if (inet_pton(AF_INET6, addr, &s6.sin6_addr) == 1)
    {
      s6.sin6_port = htons((unsigned short)p);
      fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0 || connect(fd, (struct sockaddr *)&s6, sizeof(s6)) < 0)
        die("connect");
      return fd;
    }
  fprintf(stderr, "svc-conn: '%s' is not an IPv4 or IPv6 address\n", addr);
  exit(2);
}

static int
connect_unix(const char *path)
{
  struct sockaddr_un su = { .sun_family = AF_UNIX };
  int fd;

  if (strlen(path) >= sizeof(su.sun_path))
    {
      fprintf(stderr, "svc-conn: socket path too long: %s\n", path);
      exit(2);
    }
  strcpy(su.sun_path, path);
  fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&su, sizeof(su)) < 0)
    die("connect");
  return fd;
}

/* write_all: every byte of buf to fd, or exit. */
static void
write_all(int fd, const char *buf, size_t n, const char *what)
{
  while (n > 0)
    {
      ssize_t w = write(fd, buf, n);

      if (w < 0 && errno == EINTR)
        continue;
      if (w <= 0)
        die(what);
      buf += w;
      n -= (size_t)w;
    }
}

int
main(int argc, char **argv)
{
  const char *in, *out;
  struct pollfd pfd[2];
  char buf[65536];
  int sk, fin, fout;

  if (argc == 6 && strcmp(argv[1], "tcp") == 0)
    {
      sk = connect_tcp(argv[2], argv[3]);
      in = argv[4];
      out = argv[5];
    }
  else if (argc == 5 && strcmp(argv[1], "unix") == 0)
    {
      sk = connect_unix(argv[2]);
      in = argv[3];
      out = argv[4];
    }
  else
    {
      fprintf(stderr, "usage: svc-conn tcp ADDR PORT IN OUT | svc-conn unix PATH IN OUT\n");
      return 2;
    }
  fin = open(in, O_RDWR | O_CLOEXEC);
  if (fin < 0)
    die(in);
  fout = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fout < 0)
    die(out);
  pfd[0] = (struct pollfd){ .fd = fin, .events = POLLIN };
  pfd[1] = (struct pollfd){ .fd = sk, .events = POLLIN };
  for (;;)
    {
      ssize_t n;

      if (poll(pfd, 2, -1) < 0)
        {
          if (errno == EINTR)
            continue;
          die("poll");
        }
      if (pfd[0].revents & POLLIN)
        {
          n = read(fin, buf, sizeof(buf));
          if (n < 0 && errno != EINTR && errno != EAGAIN)
            die("read the FIFO");
          if (n > 0)
            write_all(sk, buf, (size_t)n, "send");
        }
      if (pfd[1].revents & (POLLIN | POLLHUP | POLLERR))
        {
          n = read(sk, buf, sizeof(buf));
          if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
          if (n < 0)
            die("receive");
          if (n == 0)
            {
              fprintf(stderr, "svc-conn: the peer closed the connection\n");
              return 1;
            }
          write_all(fout, buf, (size_t)n, "write OUT");
        }
    }
}
