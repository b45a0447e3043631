/* console-recv [-s ROWSxCOLS] SOCKET OUT [INPUT]: the other end of an OCI
 * runtime's --console-socket, for tests.
 *
 * Listens on the unix socket SOCKET (created here, mode 0600, a stale
 * socket file removed first), accepts one connection, receives one
 * descriptor with SCM_RIGHTS and checks that it is a pty master. Then, until
 * the pty's last slave descriptor is closed:
 *   - everything read from the master is appended to OUT as it comes;
 *   - everything written into the FIFO INPUT (created here when missing) is
 *     written to the master, as if typed on the terminal.
 * With -s, the terminal's window size is set to ROWSxCOLS as soon as the
 * master arrives, as a terminal emulator would.
 *
 * On stdout, one line each: "listening SOCKET", "master pts N" (the pty's
 * index in its devpts), "size ROWS COLS" (the window size when the master
 * arrived, after -s), and at the end "closed" once the master reports that
 * no slave is left. Errors: one line on stderr, exit 1; usage errors exit 2.
 * Gives up after 300 s without a connection.
 *
 * Standalone: gcc -static -O2 -Wall -Wextra -o console-recv console-recv.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#define ACCEPT_TIMEOUT_MS (300 * 1000)

static void
die(const char *what, const char *obj)
{
  fprintf(stderr, "console-recv: %s `%s`: %s\n", what, obj, strerror(errno));
  exit(1);
}

static int
write_all(int fd, const char *buf, size_t len)
{
  while (len > 0)
    {
      ssize_t w = write(fd, buf, len);
      if (w < 0 && errno == EINTR)
        continue;
      if (w < 0)
        return -1;
      buf += w;
      len -= (size_t)w;
    }
  return 0;
}

/* The descriptor sent on CONN with SCM_RIGHTS, or -1. */
static int
recv_fd(int conn)
{
  char byte[64];
  union
  {
    struct cmsghdr h;
    char buf[CMSG_SPACE(sizeof(int))];
  } u;
  struct iovec iov = { byte, sizeof byte };
  struct msghdr m = { 0 };
  struct cmsghdr *c;
  ssize_t n;
  int fd = -1;

  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = u.buf;
  m.msg_controllen = sizeof u.buf;
  do
    n = recvmsg(conn, &m, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    return -1;
  for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS
        && c->cmsg_len == CMSG_LEN(sizeof(int)))
      memcpy(&fd, CMSG_DATA(c), sizeof fd);
  if (fd < 0)
    errno = EBADMSG;
  return fd;
}

int
main(int argc, char **argv)
{
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  struct winsize ws = { 0 };
  const char *sock, *out_path, *in_path = NULL;
  int lfd, conn, master, out, in = -1, opt, pty_index;
  unsigned rows = 0, cols = 0;
  struct pollfd pfd;
  struct stat st;
  char buf[4096];

  while ((opt = getopt(argc, argv, "s:")) != -1)
    {
      if (opt != 's' || sscanf(optarg, "%ux%u", &rows, &cols) != 2 || !rows || !cols || rows > 65535
          || cols > 65535)
        {
          fprintf(stderr, "usage: %s [-s ROWSxCOLS] SOCKET OUT [INPUT]\n", argv[0]);
          return 2;
        }
    }
  if (argc - optind < 2 || argc - optind > 3)
    {
      fprintf(stderr, "usage: %s [-s ROWSxCOLS] SOCKET OUT [INPUT]\n", argv[0]);
      return 2;
    }
  sock = argv[optind];
  out_path = argv[optind + 1];
  if (argc - optind == 3)
    in_path = argv[optind + 2];
  if (strlen(sock) >= sizeof sa.sun_path)
    {
      fprintf(stderr, "console-recv: socket path `%s` is too long\n", sock);
      return 2;
    }
  strcpy(sa.sun_path, sock);

  out = open(out_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out < 0)
    die("open", out_path);
  if (in_path)
    {
      if (mkfifo(in_path, 0600) < 0 && errno != EEXIST)
        die("mkfifo", in_path);
      /* Read and write: the FIFO never reports end of file when a writer
         closes, so a test can write one line at a time. */
      in = open(in_path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
      if (in < 0)
        die("open", in_path);
      if (fstat(in, &st) < 0 || !S_ISFIFO(st.st_mode))
        {
          fprintf(stderr, "console-recv: `%s` is not a FIFO\n", in_path);
          return 1;
        }
    }

  if (lstat(sock, &st) == 0)
    {
      if (!S_ISSOCK(st.st_mode))
        {
          fprintf(stderr, "console-recv: `%s` exists and is not a socket\n", sock);
          return 1;
        }
      unlink(sock);
    }
  lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (lfd < 0)
    die("socket for", sock);
  if (bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0)
    die("bind", sock);
  if (chmod(sock, 0600) < 0)
    die("chmod", sock);
  if (listen(lfd, 1) < 0)
    die("listen on", sock);
  printf("listening %s\n", sock);
  fflush(stdout);

  pfd = (struct pollfd){ lfd, POLLIN, 0 };
  if (poll(&pfd, 1, ACCEPT_TIMEOUT_MS) <= 0)
    {
      fprintf(stderr, "console-recv: no connection on `%s` within %d s\n", sock,
              ACCEPT_TIMEOUT_MS / 1000);
      return 1;
    }
  conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
  if (conn < 0)
    die("accept on", sock);
  master = recv_fd(conn);
  if (master < 0)
    die("receive a descriptor on", sock);
  close(conn);
  close(lfd);
  unlink(sock);
  if (ioctl(master, TIOCGPTN, &pty_index) < 0)
    die("TIOCGPTN (is it a pty master?) on the descriptor from", sock);
  if (rows && ioctl(master, TIOCSWINSZ, &(struct winsize){ .ws_row = rows, .ws_col = cols }) < 0)
    die("set the window size of the pty from", sock);
  if (ioctl(master, TIOCGWINSZ, &ws) < 0)
    die("get the window size of the pty from", sock);
  printf("master pts %d\nsize %u %u\n", pty_index, ws.ws_row, ws.ws_col);
  fflush(stdout);

  for (;;)
    {
      struct pollfd p[2] = { { master, POLLIN, 0 }, { in, POLLIN, 0 } };
      ssize_t n;
      if (poll(p, in >= 0 ? 2 : 1, -1) < 0)
        {
          if (errno == EINTR)
            continue;
          die("poll the pty from", sock);
        }
      if (p[0].revents & (POLLIN | POLLHUP | POLLERR))
        {
          n = read(master, buf, sizeof buf);
          if (n < 0 && errno == EINTR)
            continue;
          /* EIO: every slave descriptor is closed (the container is gone);
             what the slave wrote before was read first. */
          if (n < 0 && errno == EIO)
            break;
          if (n < 0)
            die("read the pty from", sock);
          if (n == 0)
            break;
          if (write_all(out, buf, (size_t)n) < 0)
            die("write", out_path);
        }
      if (in >= 0 && (p[1].revents & POLLIN))
        {
          n = read(in, buf, sizeof buf);
          if (n < 0 && errno != EAGAIN && errno != EINTR)
            die("read", in_path);
          if (n > 0 && write_all(master, buf, (size_t)n) < 0)
            die("write to the pty from", sock);
        }
    }
  printf("closed\n");
  return 0;
}
