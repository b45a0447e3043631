/* crest: small helpers used everywhere. */
#ifndef CREST_UTIL_H
#define CREST_UTIL_H

#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/types.h>
#include "error.h"

#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

void
cleanup_freep(void *p);
void
cleanup_closep(int *fd);
void
cleanup_fclosep(void *fp);
void
cleanup_errorp(crest_error_t *err);
#define cleanup_free __attribute__((cleanup(cleanup_freep)))
#define cleanup_close __attribute__((cleanup(cleanup_closep)))
#define cleanup_file __attribute__((cleanup(cleanup_fclosep)))
#define cleanup_error __attribute__((cleanup(cleanup_errorp)))

/* Allocation that aborts on out-of-memory: callers never check for NULL. */
void *
xmalloc(size_t n);
void *
xzalloc(size_t n);
void *
xrealloc(void *p, size_t n);
char *
xstrdup(const char *s);
char *
xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* What they do when there is none: says so and aborts. */
void
oom(void) __attribute__((noreturn));

/* LEN bytes as lower-case hex into OUT (2 * LEN + 1 bytes, NUL-terminated). */
void
crest_hex(const void *buf, size_t len, char *out);

/* Read a whole file (at most max bytes; 0 = 64 MiB) into a NUL-terminated
 * buffer. */
int
read_file(const char *path, char **out, size_t *len, size_t max, crest_error_t *err);
/* Write a file atomically: PATH.tmp, fsync, rename. */
int
write_file_atomic(const char *path, const void *buf, size_t len, mode_t mode, crest_error_t *err);
/* mkdir -p, mode for each created directory. */
int
mkdir_p(const char *path, mode_t mode, crest_error_t *err);
/* rm -rf that never crosses into other file systems' mount points. */
int
remove_tree(const char *path, crest_error_t *err);
/* Loop over short writes and EINTR. */
int
write_all(int fd, const void *buf, size_t len);
/* As write_all, at offset OFF (pwrite); OFF -1: write. */
int
pwrite_all(int fd, const void *buf, size_t len, off_t off);
int
read_all(int fd, void *buf, size_t len);
/* The number a file of /proc holds (a sysctl: vm.max_map_count,
   kernel.pid_max), or DFLT where it cannot be read. */
long
read_long_file(const char *path, long dflt);
/* One message of LEN bytes with descriptor FD (SCM_RIGHTS) on the unix
   socket SOCK; as sendmsg. */
ssize_t
send_with_fd(int sock, const void *buf, size_t len, int fd);
/* Descriptors LO to HI (inclusive) closed: one close_range, or each one
   where the kernel has none (before 5.9). */
void
close_fd_range(int lo, int hi);

/* Run BODY(FD, ARG) in a forked child, FD the write end of a pipe: what
   it wrote there, NUL-ended (malloc'ed), when BODY returned 0 (the child's
   exit status); else NULL (also when the pipe or the fork failed). */
char *
child_run(int (*body)(int fd, void *arg), void *arg);

/* Join, in order, the namespaces NS[0..N-1] ("user", "mnt", "net"...) of
   task PID (setns; a child of child_run's, single-threaded): 0, or -1. */
int
join_ns(pid_t pid, const char *const *ns, size_t n);

#endif
