/* zdtm-ptree: a process tree with its own session and process groups.
 *
 *   root (keeps its session and group)
 *   +- a: setsid(): a new session, leader of it
 *   |  +- a1: in a's session, in a new group a1
 *   +- b: a new process group b
 *   |  +- b1: in b's group
 *   +- c: in b's group (a sibling of its leader, as a shell's pipeline)
 *      +- c1: in b's group (its leader's nephew)
 *
 * After restore every process checks its PID, parent, process group and
 * session against what it recorded; the root forwards SIGTERM to its
 * children, who forward it to theirs, and waits for them: a child's failure
 * is its own FAIL line and its exit status. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct ids
{
  pid_t pid, ppid, pgid, sid;
};

static void
get_ids(struct ids *i)
{
  i->pid = getpid();
  i->ppid = getppid();
  i->pgid = getpgid(0);
  i->sid = getsid(0);
}

static void
check_ids(const char *name, const struct ids *want)
{
  struct ids got;
  get_ids(&got);
  if (got.pid != want->pid)
    zdtm_fail("process %s: PID expected %d, got %d", name, want->pid, got.pid);
  if (got.ppid != want->ppid)
    zdtm_fail("process %s (PID %d): parent expected %d, got %d", name, want->pid, want->ppid,
              got.ppid);
  if (got.pgid != want->pgid)
    zdtm_fail("process %s (PID %d): process group expected %d, got %d", name, want->pid, want->pgid,
              got.pgid);
  if (got.sid != want->sid)
    zdtm_fail("process %s (PID %d): session expected %d, got %d", name, want->pid, want->sid,
              got.sid);
}

/* Wait for every child; a child that did not exit 0 is a failure. */
static void
reap(const char *name, pid_t *kids, int n)
{
  for (int i = 0; i < n; i++)
    {
      int st;
      kill(kids[i], SIGTERM);
      if (waitpid(kids[i], &st, 0) < 0)
        zdtm_fail("process %s: waitpid %d: %s", name, kids[i], strerror(errno));
      else if (!WIFEXITED(st) || WEXITSTATUS(st))
        zdtm_fail("process %s: child %d ended with status 0x%x", name, kids[i], st);
    }
}

/* Signal the parent once this process and its children are set up. */
static int ready_pipe[2];
/* The group c joins: b's. */
static pid_t join_pgid;

static void
leaf(const char *name, int pgid_mode)
{
  struct ids me;
  if (pgid_mode && setpgid(0, 0) < 0)
    zdtm_error("process %s: setpgid: %s", name, strerror(errno));
  get_ids(&me);
  close(ready_pipe[0]);
  if (write(ready_pipe[1], "x", 1) != 1)
    _exit(2);
  close(ready_pipe[1]);
  zdtm_wait();
  check_ids(name, &me);
  _exit(zdtm_status());
}

static pid_t
spawn(void (*fn)(const char *, int), const char *name, int mode)
{
  pid_t p = fork();
  if (p < 0)
    zdtm_error("fork: %s", strerror(errno));
  if (p == 0)
    {
      fn(name, mode);
      _exit(0);
    }
  return p;
}

static void
middle(const char *name, int mode)
{
  struct ids me;
  pid_t kid;

  if (mode == 1 && setsid() < 0)
    zdtm_error("process %s: setsid: %s", name, strerror(errno));
  if (mode == 2 && setpgid(0, 0) < 0)
    zdtm_error("process %s: setpgid: %s", name, strerror(errno));
  if (mode == 3 && setpgid(0, join_pgid) < 0)
    zdtm_error("process %s: setpgid to %d: %s", name, join_pgid, strerror(errno));
  get_ids(&me);
  /* a1 gets a group of its own; b1 and c1 stay in b's. */
  kid = spawn(leaf, mode == 1 ? "a1" : mode == 2 ? "b1" : "c1", mode == 1);
  close(ready_pipe[0]);
  if (write(ready_pipe[1], "x", 1) != 1)
    _exit(2);
  close(ready_pipe[1]);
  zdtm_wait();
  check_ids(name, &me);
  reap(name, &kid, 1);
  _exit(zdtm_status());
}

int
main(int argc, char **argv)
{
  struct ids me;
  pid_t kids[3];
  char c;
  int n = 0;

  zdtm_init(argc, argv);
  if (pipe(ready_pipe) < 0)
    zdtm_error("pipe: %s", strerror(errno));
  get_ids(&me);
  kids[0] = spawn(middle, "a", 1);
  kids[1] = spawn(middle, "b", 2);
  /* b's group exists before c joins it (as a shell does for a pipeline). */
  if (setpgid(kids[1], kids[1]) < 0 && errno != EACCES)
    zdtm_error("setpgid of b: %s", strerror(errno));
  join_pgid = kids[1];
  kids[2] = spawn(middle, "c", 3);
  close(ready_pipe[1]);
  while (read(ready_pipe[0], &c, 1) == 1)
    n++;
  close(ready_pipe[0]);
  if (n != 6)
    zdtm_error("only %d of 6 processes reported ready", n);

  zdtm_ready();
  zdtm_wait();

  check_ids("root", &me);
  reap("root", kids, 3);
  zdtm_finish();
}
