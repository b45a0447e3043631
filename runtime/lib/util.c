/* crest: small helpers. */
#include <config.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "util.h"

void
crest_hex(const void *buf, size_t len, char *out)
{
  static const char digits[] = "0123456789abcdef";
  const unsigned char *p = buf;
  for (size_t i = 0; i < len; i++)
    {
      out[2 * i] = digits[p[i] >> 4];
      out[2 * i + 1] = digits[p[i] & 15];
    }
  out[2 * len] = '\0';
}

void
cleanup_freep(void *p)
{
  free(*(void **)p);
}

void
cleanup_closep(int *fd)
{
  if (*fd >= 0)
    close(*fd);
}

void
cleanup_fclosep(void *fp)
{
  FILE **f = fp;
  if (*f)
    fclose(*f);
}

void
cleanup_errorp(crest_error_t *err)
{
  crest_error_release(err);
}

void
oom(void)
{
  static const char msg[] = "crest: out of memory\n";
  if (write(2, msg, sizeof msg - 1) < 0)
    _exit(125);
  abort();
}

void *
xmalloc(size_t n)
{
  void *p = malloc(n ? n : 1);
  if (UNLIKELY(p == NULL))
    oom();
  return p;
}

void *
xzalloc(size_t n)
{
  void *p = calloc(1, n ? n : 1);
  if (UNLIKELY(p == NULL))
    oom();
  return p;
}

void *
xrealloc(void *p, size_t n)
{
  void *q = realloc(p, n ? n : 1);
  if (UNLIKELY(q == NULL))
    oom();
  return q;
}

char *
xstrdup(const char *s)
{
  char *d;
  if (s == NULL)
    return NULL;
  d = strdup(s);
  if (UNLIKELY(d == NULL))
    oom();
  return d;
}

char *
xasprintf(const char *fmt, ...)
{
  va_list ap;
  char *s = NULL;
  va_start(ap, fmt);
  if (vasprintf(&s, fmt, ap) < 0)
    oom();
  va_end(ap);
  return s;
}

int
write_all(int fd, const void *buf, size_t len)
{
  return pwrite_all(fd, buf, len, -1);
}

int
pwrite_all(int fd, const void *buf, size_t len, off_t off)
{
  const char *p = buf;
  while (len > 0)
    {
      ssize_t r = off < 0 ? write(fd, p, len) : pwrite(fd, p, len, off);
      if (r < 0)
        {
          if (errno == EINTR)
            continue;
          return -1;
        }
      p += r;
      len -= (size_t)r;
      if (off >= 0)
        off += r;
    }
  return 0;
}

int
read_all(int fd, void *buf, size_t len)
{
  char *p = buf;
  while (len > 0)
    {
      ssize_t r = read(fd, p, len);
      if (r < 0)
        {
          if (errno == EINTR)
            continue;
          return -1;
        }
      if (r == 0)
        {
          errno = ENODATA;
          return -1;
        }
      p += r;
      len -= (size_t)r;
    }
  return 0;
}

long
read_long_file(const char *path, long dflt)
{
  long v = dflt;
  FILE *f = fopen(path, "re");
  if (!f)
    return dflt;
  if (fscanf(f, "%ld", &v) != 1)
    v = dflt;
  fclose(f);
  return v;
}

ssize_t
send_with_fd(int sock, const void *buf, size_t len, int fd)
{
  union
  {
    struct cmsghdr h;
    char b[CMSG_SPACE(sizeof(int))];
  } u;
  struct iovec iov = { (void *)buf, len };
  struct msghdr m
      = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof u.b };
  struct cmsghdr *c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET, c->cmsg_type = SCM_RIGHTS, c->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(c), &fd, sizeof fd);
  return sendmsg(sock, &m, MSG_NOSIGNAL);
}

int
read_file(const char *path, char **out, size_t *len, size_t max, crest_error_t *err)
{
  cleanup_close int fd = -1;
  size_t cap = 4096, used = 0;
  char *buf;

  if (max == 0)
    max = 64u << 20;
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return crest_error_errno(err, "open `%s`", path);
  buf = xmalloc(cap);
  for (;;)
    {
      ssize_t r;
      if (used + 1 >= cap)
        {
          if (cap > max)
            {
              free(buf);
              return crest_error_make(err, EFBIG, "read `%s`: larger than %zu bytes", path, max);
            }
          cap *= 2;
          buf = xrealloc(buf, cap);
        }
      r = read(fd, buf + used, cap - used - 1);
      if (r < 0)
        {
          if (errno == EINTR)
            continue;
          free(buf);
          return crest_error_errno(err, "read `%s`", path);
        }
      if (r == 0)
        break;
      used += (size_t)r;
    }
  if (used > max)
    {
      free(buf);
      return crest_error_make(err, EFBIG, "read `%s`: larger than %zu bytes", path, max);
    }
  buf[used] = '\0';
  *out = buf;
  if (len)
    *len = used;
  return 0;
}

int
write_file_atomic(const char *path, const void *buf, size_t len, mode_t mode, crest_error_t *err)
{
  cleanup_free char *tmp = xasprintf("%s.tmp.%d", path, (int)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0)
    return crest_error_errno(err, "create `%s`", tmp);
  if (write_all(fd, buf, len) < 0 || fsync(fd) < 0)
    {
      int e = errno;
      close(fd);
      unlink(tmp);
      return crest_error_sys(err, e, "write `%s`", tmp);
    }
  if (close(fd) < 0)
    {
      int e = errno;
      unlink(tmp);
      return crest_error_sys(err, e, "close `%s`", tmp);
    }
  if (rename(tmp, path) < 0)
    {
      int e = errno;
      unlink(tmp);
      return crest_error_sys(err, e, "rename `%s` to `%s`", tmp, path);
    }
  return 0;
}

int
mkdir_p(const char *path, mode_t mode, crest_error_t *err)
{
  cleanup_free char *p = xstrdup(path);
  char *s;
  for (s = p + 1; *s; s++)
    {
      if (*s != '/')
        continue;
      *s = '\0';
      if (mkdir(p, mode) < 0 && errno != EEXIST)
        return crest_error_errno(err, "mkdir `%s`", p);
      *s = '/';
    }
  if (mkdir(p, mode) < 0 && errno != EEXIST)
    return crest_error_errno(err, "mkdir `%s`", p);
  return 0;
}

static int
remove_at(int dirfd, const char *name, dev_t dev, crest_error_t *err)
{
  struct stat st;
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
    {
      if (errno == ENOENT)
        return 0;
      return crest_error_errno(err, "stat `%s`", name);
    }
  if (S_ISDIR(st.st_mode))
    {
      DIR *d;
      struct dirent *de;
      int fd;
      if (st.st_dev != dev)
        return crest_error_make(err, EXDEV, "refusing to remove `%s`: it is a mount point", name);
      fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0)
        return crest_error_errno(err, "open `%s`", name);
      d = fdopendir(fd);
      if (d == NULL)
        {
          close(fd);
          return crest_error_errno(err, "opendir `%s`", name);
        }
      while ((de = readdir(d)))
        {
          if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
          if (remove_at(fd, de->d_name, dev, err) < 0)
            {
              closedir(d);
              return -1;
            }
        }
      closedir(d);
      if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
        return crest_error_errno(err, "rmdir `%s`", name);
      return 0;
    }
  if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
    return crest_error_errno(err, "unlink `%s`", name);
  return 0;
}

int
remove_tree(const char *path, crest_error_t *err)
{
  struct stat st;
  if (lstat(path, &st) < 0)
    {
      if (errno == ENOENT)
        return 0;
      return crest_error_errno(err, "stat `%s`", path);
    }
  if (remove_at(AT_FDCWD, path, st.st_dev, err) < 0)
    return crest_error_wrap(err, "remove `%s`", path);
  return 0;
}

void
close_fd_range(int lo, int hi)
{
  if (lo > hi || syscall(SYS_close_range, lo, hi, 0) == 0)
    return;
  for (int fd = lo; fd <= hi; fd++)
    close(fd);
}

int
join_ns(pid_t pid, const char *const *ns, size_t n)
{
  for (size_t i = 0; i < n; i++)
    {
      char nsp[64];
      int nfd;
      snprintf(nsp, sizeof nsp, "/proc/%d/ns/%s", (int)pid, ns[i]);
      if ((nfd = open(nsp, O_RDONLY | O_CLOEXEC)) < 0)
        return -1;
      if (setns(nfd, 0) < 0)
        {
          close(nfd);
          return -1;
        }
      close(nfd);
    }
  return 0;
}

char *
child_run(int (*body)(int fd, void *arg), void *arg)
{
  char *out = NULL;
  size_t len = 0, cap = 0;
  int p[2], st = 0;
  pid_t pid;
  if (pipe2(p, O_CLOEXEC) < 0)
    return NULL;
  pid = fork();
  if (pid == 0)
    {
      close(p[0]);
      _exit(body(p[1], arg) == 0 ? 0 : 1);
    }
  close(p[1]);
  for (ssize_t r = 1; pid > 0 && r > 0;)
    {
      if (len + 4096 + 1 > cap)
        out = xrealloc(out, cap = cap * 2 + 4096 + 1);
      r = read(p[0], out + len, 4096);
      if (r > 0)
        len += (size_t)r;
    }
  close(p[0]);
  if (pid < 0)
    return NULL;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && out)
    {
      out[len] = '\0';
      return out;
    }
  free(out);
  return NULL;
}
