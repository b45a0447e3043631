/* crest: which memory a system call may touch, for --lazy-pages (lazy.c).
 *
 * A userfaultfd made without privilege (UFFD_USER_MODE_ONLY) handles only
 * the faults of the program's own instructions: the kernel touching a page
 * still missing (a read() into it, a futex on it, a signal frame) fails
 * with EFAULT instead of waiting. So while pages come in, crest stops each
 * lazy task at every system call's entry and first copies in the pages that
 * call may touch: the ranges below, from its arguments. A call not listed
 * here takes every page of the process first (lazy.c, fill_all). A range that
 * is wrong (an argument that is no pointer) only copies some pages early. */
#include <config.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include "restore-int.h"

#define R(i, p, l) (r[i][0] = (p), r[i][1] = (l))

/* Calls that touch no memory of the caller. */
static bool
no_memory(long nr)
{
  switch (nr)
    {
    case SYS_close:
    case SYS_dup:
    case SYS_dup2:
    case SYS_dup3:
    case SYS_getpid:
    case SYS_gettid:
    case SYS_getppid:
    case SYS_getuid:
    case SYS_geteuid:
    case SYS_getgid:
    case SYS_getegid:
    case SYS_kill:
    case SYS_tgkill:
    case SYS_tkill:
    case SYS_sched_yield:
    case SYS_lseek:
    case SYS_shutdown:
    case SYS_listen:
    case SYS_fsync:
    case SYS_fdatasync:
    case SYS_ftruncate:
    case SYS_alarm:
    case SYS_pause:
    case SYS_mmap:
    case SYS_munmap:
    case SYS_mprotect:
    case SYS_madvise:
    case SYS_mremap:
    case SYS_brk:
    case SYS_exit:
    case SYS_exit_group:
    case SYS_fork:
    case SYS_vfork:
    case SYS_socket:
    case SYS_epoll_create:
    case SYS_epoll_create1:
    case SYS_eventfd:
    case SYS_eventfd2:
    case SYS_fchmod:
    case SYS_fchown:
    case SYS_flock:
    case SYS_setpgid:
    case SYS_getpgid:
    case SYS_setsid:
    case SYS_getsid:
    case SYS_umask:
    case SYS_munlockall:
    case SYS_sync:
    case SYS_syncfs:
    case SYS_timerfd_create:
    case SYS_inotify_init1:
    case SYS_inotify_rm_watch:
    case SYS_membarrier:
    case SYS_restart_syscall:
      return true;
    default:
      return false;
    }
}

/* The ranges [r][0], length [r][1] that call NR with arguments A may touch:
   their number, LAZY_SYS_NONE (0) for none, LAZY_SYS_IOV when A[1] is an
   iovec array of A[2] entries (the buffers too), LAZY_SYS_MSG when A[1] is a
   msghdr, LAZY_SYS_ALL when unknown (every page first). */
int
lazy_sys_ranges(long nr, const uint64_t *a, uint64_t r[4][2])
{
  if (no_memory(nr))
    return 0;
  switch (nr)
    {
    case SYS_read:
    case SYS_write:
    case SYS_pread64:
    case SYS_pwrite64:
    case SYS_getdents64:
      return R(0, a[1], a[2]), 1;
    case SYS_getrandom:
      return R(0, a[0], a[1]), 1;
    case SYS_mincore: /* looks at the page tables, writes one byte a page */
      return R(0, a[2], (a[1] + 4095) / 4096), 1;
    case SYS_readv:
    case SYS_writev:
    case SYS_preadv:
    case SYS_pwritev:
    case SYS_preadv2:
    case SYS_pwritev2:
      return LAZY_SYS_IOV;
    case SYS_sendmsg:
    case SYS_recvmsg:
      return LAZY_SYS_MSG;
    case SYS_recvfrom:
    case SYS_sendto:
      return R(0, a[1], a[2]), R(1, a[4], 128), R(2, a[5], 8), 3;
    case SYS_futex:
      return R(0, a[0], 4), R(1, a[3], 16), R(2, a[4], 4), 3;
    case SYS_nanosleep:
    case SYS_gettimeofday:
      return R(0, a[0], 16), R(1, a[1], 16), 2;
    case SYS_clock_nanosleep:
      return R(0, a[2], 16), R(1, a[3], 16), 2;
    case SYS_clock_gettime:
    case SYS_clock_getres:
      return R(0, a[1], 16), 1;
    case SYS_time:
    case SYS_pipe:
    case SYS_pipe2:
    case SYS_set_tid_address:
      return R(0, a[0], 8), 1;
    case SYS_poll:
      return R(0, a[0], a[1] * 8), 1;
    case SYS_ppoll:
      return R(0, a[0], a[1] * 8), R(1, a[2], 16), R(2, a[3], 8), 3;
    case SYS_select:
    case SYS_pselect6:
      return R(0, a[1], 128), R(1, a[2], 128), R(2, a[3], 128), R(3, a[4], 48), 4;
    case SYS_epoll_wait:
    case SYS_epoll_pwait:
      return R(0, a[1], a[2] * 12), R(1, a[4], 8), 2;
    case SYS_epoll_ctl:
      return R(0, a[3], 12), 1;
    case SYS_accept:
    case SYS_accept4:
    case SYS_getsockname:
    case SYS_getpeername:
      return R(0, a[1], 128), R(1, a[2], 4), 2;
    case SYS_connect:
    case SYS_bind:
      return R(0, a[1], a[2]), 1;
    case SYS_getsockopt:
      return R(0, a[3], 256), R(1, a[4], 4), 2;
    case SYS_setsockopt:
      return R(0, a[3], a[4]), 1;
    case SYS_socketpair:
      return R(0, a[3], 8), 1;
    case SYS_wait4:
      return R(0, a[1], 4), R(1, a[3], 144), 2;
    case SYS_waitid:
      return R(0, a[2], 128), R(1, a[4], 144), 2;
    case SYS_rt_sigaction:
      return R(0, a[1], 32), R(1, a[2], 32), 2;
    case SYS_rt_sigprocmask:
      return R(0, a[1], 8), R(1, a[2], 8), 2;
    case SYS_rt_sigtimedwait:
      return R(0, a[0], 8), R(1, a[1], 128), R(2, a[2], 16), 3;
    case SYS_rt_sigsuspend:
      return R(0, a[0], 8), 1;
    case SYS_setitimer:
      return R(0, a[1], 32), R(1, a[2], 32), 2;
    case SYS_getitimer:
    case SYS_fstat:
    case SYS_timerfd_gettime:
      return R(0, a[1], 144), 1;
    case SYS_timerfd_settime:
      return R(0, a[2], 32), R(1, a[3], 32), 2;
    case SYS_open:
    case SYS_unlink:
    case SYS_rmdir:
    case SYS_mkdir:
    case SYS_chdir:
      return R(0, a[0], 8192), 1;
    case SYS_openat:
    case SYS_unlinkat:
    case SYS_mkdirat:
      return R(0, a[1], 8192), 1;
    case SYS_stat:
    case SYS_lstat:
    case SYS_access:
      return R(0, a[0], 8192), R(1, a[1], 144), 2;
    case SYS_newfstatat:
    case SYS_faccessat:
    case SYS_faccessat2:
      return R(0, a[1], 8192), R(1, a[2], 144), 2;
    case SYS_statx:
      return R(0, a[1], 8192), R(1, a[4], 256), 2;
    case SYS_rename:
      return R(0, a[0], 8192), R(1, a[1], 8192), 2;
    case SYS_renameat:
    case SYS_renameat2:
      return R(0, a[1], 8192), R(1, a[3], 8192), 2;
    case SYS_uname:
      return R(0, a[0], 390), 1;
    case SYS_sysinfo:
      return R(0, a[0], 112), 1;
    case SYS_ioctl:
    case SYS_fcntl:
      return R(0, a[2], 8192), 1;
    case SYS_prctl:
      return R(0, a[1], 4096), R(1, a[2], 4096), 2;
    case SYS_arch_prctl:
      return R(0, a[1], 8), 1;
    case SYS_set_robust_list:
      return R(0, a[0], 24), 1;
    case SYS_rseq:
      return R(0, a[0], 32), 1;
    case SYS_getrlimit:
    case SYS_setrlimit:
      return R(0, a[1], 16), 1;
    case SYS_prlimit64:
      return R(0, a[2], 16), R(1, a[3], 16), 2;
    case SYS_getrusage:
      return R(0, a[1], 144), 1;
    case SYS_sched_getaffinity:
    case SYS_sched_setaffinity:
      return R(0, a[2], a[1]), 1;
    case SYS_clone:
      return R(0, a[2], 4), R(1, a[3], 4), 2;
    default:
      return LAZY_SYS_ALL;
    }
}
