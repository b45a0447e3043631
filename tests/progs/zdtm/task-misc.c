/* zdtm-task-misc: the small per-task values: umask, cwd, comm (of the
 * process and of a second thread), personality flags, oom_score_adj,
 * and no_new_privs. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int
read_int(const char *path, int *v)
{
  FILE *f = fopen(path, "re");
  int r = f && fscanf(f, "%d", v) == 1 ? 0 : -1;
  if (f)
    fclose(f);
  return r;
}

static char thread_comm_got[32];
static pid_t thread_tid;
static volatile int thread_up;

static void *
named_thread(void *arg)
{
  (void)arg;
  prctl(PR_SET_NAME, "zdtm-thr-two", 0, 0, 0);
  thread_tid = gettid();
  thread_up = 1;
  while (!zdtm_stopped())
    {
      struct timespec t = { 0, 20 * 1000 * 1000 };
      nanosleep(&t, NULL);
    }
  prctl(PR_GET_NAME, thread_comm_got, 0, 0, 0);
  return NULL;
}

int
main(int argc, char **argv)
{
  char dir[] = "zdtm-task-misc.XXXXXX", cwd_want[4096], cwd_got[4096], comm[32];
  struct stat st_want, st_got;
  int pers, oom_want = 321, oom;
  pthread_t th;

  zdtm_init(argc, argv);
  if (!mkdtemp(dir) || chdir(dir) < 0)
    zdtm_error("mkdtemp/chdir: %s", strerror(errno));
  if (!getcwd(cwd_want, sizeof(cwd_want)) || stat(".", &st_want) < 0)
    zdtm_error("getcwd: %s", strerror(errno));
  umask(0027);
  prctl(PR_SET_NAME, "zdtm-misc-main", 0, 0, 0);
  pers = personality(0xffffffff);
  if (personality(pers | ADDR_NO_RANDOMIZE | UNAME26) < 0)
    zdtm_error("personality: %s", strerror(errno));
  pers = personality(0xffffffff);
  {
    int fd = open("/proc/self/oom_score_adj", O_WRONLY);
    if (fd < 0 || dprintf(fd, "%d", oom_want) < 0)
      zdtm_error("raise oom_score_adj: %s", strerror(errno));
    close(fd);
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
    zdtm_error("PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
  if (pthread_create(&th, NULL, named_thread, NULL))
    zdtm_error("pthread_create failed");
  while (!thread_up)
    usleep(1000);

  zdtm_ready();
  zdtm_wait();

  mode_t m = umask(0);
  if (m != 0027)
    zdtm_fail("umask: expected 0027, got 0%o", (unsigned)m);
  if (!getcwd(cwd_got, sizeof(cwd_got)) || strcmp(cwd_got, cwd_want))
    zdtm_fail("cwd: expected %s, got %s", cwd_want,
              getcwd(cwd_got, sizeof(cwd_got)) ? cwd_got : strerror(errno));
  if (stat(".", &st_got) < 0 || st_got.st_ino != st_want.st_ino || st_got.st_dev != st_want.st_dev)
    zdtm_fail("cwd: a different directory than before (inode %lu, got %lu)",
              (unsigned long)st_want.st_ino, (unsigned long)st_got.st_ino);
  prctl(PR_GET_NAME, comm, 0, 0, 0);
  if (strcmp(comm, "zdtm-misc-main"))
    zdtm_fail("comm: expected zdtm-misc-main, got %s", comm);
  pthread_join(th, NULL);
  if (strcmp(thread_comm_got, "zdtm-thr-two"))
    zdtm_fail("comm of thread %d: expected zdtm-thr-two, got %s", thread_tid, thread_comm_got);
  if (personality(0xffffffff) != pers)
    zdtm_fail("personality: expected 0x%x, got 0x%x", pers, personality(0xffffffff));
  if (read_int("/proc/self/oom_score_adj", &oom) < 0 || oom != oom_want)
    zdtm_fail("oom_score_adj: expected %d, got %d", oom_want, oom);
  if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
    zdtm_fail("no_new_privs: expected 1, got %d", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
  if (chdir("..") == 0)
    rmdir(dir);
  zdtm_finish();
}
