/* crest: shapes of the process tree restore cannot rebuild, refused at
 * checkpoint with one line (docs/engine.md, "Tasks"). */
#include <config.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine-int.h"
#include "util.h"

int
pstree_check_leader(pid_t pid, crest_error_t *err)
{
  cleanup_free char *path = xasprintf("/proc/%d/task/%d/status", pid, pid);
  cleanup_free char *st = NULL;
  cleanup_free char *dir = xasprintf("/proc/%d/task", pid);
  crest_error_t e2 = NULL;
  const char *s;
  size_t len;
  int n = 0;
  DIR *d;
  struct dirent *de;

  /* Unreadable: the process is gone, which the caller finds out itself. */
  if (read_file(path, &st, &len, 0, &e2) < 0)
    {
      crest_error_release(&e2);
      return 0;
    }
  s = strstr(st, "\nState:");
  if (!s || !strchr("ZX", s[strspn(s + 7, " \t") + 7]))
    return 0;
  if (!(d = opendir(dir)))
    return 0;
  while ((de = readdir(d)))
    n += atoi(de->d_name) > 0 && atoi(de->d_name) != pid;
  closedir(d);
  if (n == 0)
    return 0; /* a zombie process: its whole group is gone */
  return crest_error_make(err, ENOTSUP,
                          "task %d: its thread-group leader (thread %d) has exited before its "
                          "other %d thread(s), which restore cannot rebuild: cannot checkpoint it",
                          pid, pid, n);
}

/* A process group or session must be led by a process of the tree, or be
   the one the root is in (outside the tree: 0 in container mode). One
   whose leader has exited would need a stand-in process to exist while its
   members are created, which restore does not do. */
int
pstree_check_groups(size_t n, const pid_t *pid, const pid_t *pgid, const pid_t *sid,
                    crest_error_t *err)
{
  for (size_t i = 0; i < n; i++)
    for (int k = 1; k >= 0; k--)
      {
        pid_t id = k ? sid[i] : pgid[i];
        bool found = id == 0 || id == (k ? sid[0] : pgid[0]);
        for (size_t j = 0; j < n && !found; j++)
          found = pid[j] == id;
        if (!found)
          return crest_error_make(err, ENOTSUP,
                                  "task %d: its %s %d has a leader that has exited, which "
                                  "restore cannot rebuild: cannot checkpoint it",
                                  pid[i], k ? "session" : "process group", id);
      }
  return 0;
}
