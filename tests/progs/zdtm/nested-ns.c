/* zdtm-nested-ns: a child in a UTS namespace of its own. The child
 * unshares its UTS namespace and sets its host name there. Restore puts
 * every task in the namespaces its restorer runs in, so a checkpoint must
 * refuse this tree (naming the child and the namespace) and leave it
 * running untouched. After SIGTERM the child checks that its host name is
 * still its own, and the root that its own is unchanged. Needs
 * CAP_SYS_ADMIN in its user namespace (process mode under unshare -Urpf). */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char child_name[] = "crest-nested-uts";

int
main(int argc, char **argv)
{
  char before[256], now[256];
  int pfd[2], st;
  pid_t child;
  char c;

  zdtm_init(argc, argv);
  if (gethostname(before, sizeof before) < 0)
    zdtm_error("gethostname: %s", strerror(errno));
  if (pipe(pfd) < 0)
    zdtm_error("pipe: %s", strerror(errno));
  child = fork();
  if (child < 0)
    zdtm_error("fork: %s", strerror(errno));
  if (child == 0)
    {
      close(pfd[0]);
      if (unshare(CLONE_NEWUTS) < 0 || sethostname(child_name, strlen(child_name)) < 0)
        {
          zdtm_fail("child: unshare(CLONE_NEWUTS)/sethostname: %s", strerror(errno));
          _exit(2);
        }
      if (write(pfd[1], "x", 1) != 1)
        _exit(2);
      close(pfd[1]);
      zdtm_wait();
      if (gethostname(now, sizeof now) < 0 || strcmp(now, child_name) != 0)
        zdtm_fail("child's host name (expected %s, got %s)", child_name, now);
      _exit(zdtm_status());
    }
  close(pfd[1]);
  if (read(pfd[0], &c, 1) != 1)
    zdtm_error("the child could not make its UTS namespace (see RESULT)");
  close(pfd[0]);

  zdtm_ready();
  zdtm_wait();

  kill(child, SIGTERM);
  if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
    zdtm_fail("child ended with status %#x", st);
  if (gethostname(now, sizeof now) < 0 || strcmp(now, before) != 0)
    zdtm_fail("root's host name (expected %s, got %s)", before, now);
  zdtm_finish();
}
