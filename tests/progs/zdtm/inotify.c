/* zdtm-inotify: inotify watches, in the program's working directory.
 * "in" (O_NONBLOCK) watches:
 * - wd 1: the directory zdtm-inotify-dir, IN_CREATE | IN_DELETE;
 * - (wd 2: added and removed again, its IN_IGNORED read: a gap)
 * - wd 3: the file zdtm-inotify-file, IN_MODIFY | IN_ONESHOT;
 * - wd 4: the working directory itself, IN_ATTRIB | IN_EXCL_UNLINK (not
 *   IN_CREATE or IN_MOVED_TO: READY and RESULT appear there).
 * "none" (close-on-exec, blocking) watches nothing.
 * After restore: fdinfo lists exactly these watches (number and mask),
 * no event is queued, and each watch reports what happens under its own
 * number: a file created in the directory, a write to the file (then the
 * one-shot watch is gone: IN_IGNORED), a chmod of the working directory;
 * status flags and close-on-exec. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#define DIR_ "zdtm-inotify-dir"
#define FILE_ "zdtm-inotify-file"

struct w
{
  int wd;
  unsigned mask;
};

/* The watches fdinfo lists for FD, at most MAX. */
static int
listed(int fd, struct w *w, int max)
{
  char p[64], b[512];
  int n = 0;
  FILE *in;
  snprintf(p, sizeof p, "/proc/self/fdinfo/%d", fd);
  if (!(in = fopen(p, "r")))
    return -1;
  while (fgets(b, sizeof b, in) && n < max)
    if (sscanf(b, "inotify wd:%x ino:%*x sdev:%*x mask:%x", &w[n].wd, &w[n].mask) == 2)
      n++;
  fclose(in);
  return n;
}

/* The next event of FD: its wd, mask and name (waited for up to 10 s). */
static int
next_event(int fd, unsigned *mask, char *name, size_t len)
{
  static char buf[4096] __attribute__((aligned(8)));
  static ssize_t have, at;
  struct inotify_event *e;
  for (int i = 0; at >= have && i < 500; i++)
    {
      at = 0;
      if ((have = read(fd, buf, sizeof buf)) < 0)
        usleep(20000);
    }
  if (at >= have)
    return -1;
  e = (struct inotify_event *)(buf + at);
  at += sizeof *e + e->len;
  *mask = e->mask;
  snprintf(name, len, "%s", e->len ? e->name : "");
  return e->wd;
}

static void
expect(int fd, int wd, unsigned mask, const char *name)
{
  char got[256];
  unsigned m = 0;
  int w = next_event(fd, &m, got, sizeof got);
  if (w != wd || m != mask || strcmp(got, name) != 0)
    zdtm_fail("event wd %d mask %#x name '%s' (expected wd %d mask %#x name '%s')", w, m, got, wd,
              mask, name);
}

int
main(int argc, char **argv)
{
  const struct w want[] = {
    { 1, IN_CREATE | IN_DELETE },
    { 3, IN_MODIFY | IN_ONESHOT },
    { 4, IN_ATTRIB | IN_EXCL_UNLINK },
  };
  struct w got[8];
  struct stat st;
  char buf[4096];
  int in, none, f, n, q = -1;

  zdtm_init(argc, argv);
  unlink(DIR_ "/new");
  rmdir(DIR_);
  if (mkdir(DIR_, 0700) < 0 || (f = open(FILE_, O_CREAT | O_TRUNC | O_WRONLY, 0600)) < 0)
    zdtm_error("mkdir %s or create %s: %s", DIR_, FILE_, strerror(errno));
  in = inotify_init1(IN_NONBLOCK);
  none = inotify_init1(IN_CLOEXEC);
  if (in < 0 || none < 0)
    zdtm_error("inotify_init1: %s", strerror(errno));
  if (inotify_add_watch(in, DIR_, IN_CREATE | IN_DELETE) != 1
      || inotify_rm_watch(in, inotify_add_watch(in, ".", IN_ATTRIB)) < 0
      || inotify_add_watch(in, FILE_, IN_MODIFY | IN_ONESHOT) != 3
      || inotify_add_watch(in, ".", IN_ATTRIB | IN_EXCL_UNLINK) != 4)
    zdtm_error("add the watches as 1, 3, 4: %s", strerror(errno));
  while (read(in, buf, sizeof buf) > 0)
    ; /* the IN_IGNORED of wd 2 */

  zdtm_ready();
  zdtm_wait();

  n = listed(in, got, 8);
  if (n != 3)
    zdtm_fail("fdinfo lists %d watches (expected 3)", n);
  for (int i = 0; i < 3; i++)
    {
      bool found = false;
      for (int k = 0; k < n && !found; k++)
        found = got[k].wd == want[i].wd && got[k].mask == want[i].mask;
      if (!found)
        zdtm_fail("watch %d with mask %#x missing or changed", want[i].wd, want[i].mask);
    }
  if ((n = listed(none, got, 8)) != 0)
    zdtm_fail("none: fdinfo lists %d watches (expected 0)", n);
  if (ioctl(in, FIONREAD, &q) < 0 || q != 0)
    zdtm_fail("%d bytes of events queued after restore (expected none)", q);
  if (!(fcntl(in, F_GETFL) & O_NONBLOCK) || (fcntl(none, F_GETFL) & O_NONBLOCK)
      || (fcntl(in, F_GETFD) & FD_CLOEXEC) || !(fcntl(none, F_GETFD) & FD_CLOEXEC))
    zdtm_fail("status flags or close-on-exec changed");
  close(open(DIR_ "/new", O_CREAT | O_WRONLY, 0600));
  expect(in, 1, IN_CREATE, "new");
  if (write(f, "x", 1) != 1)
    zdtm_fail("write %s: %s", FILE_, strerror(errno));
  expect(in, 3, IN_MODIFY, "");
  expect(in, 3, IN_IGNORED, "");
  if (stat(".", &st) < 0 || chmod(".", st.st_mode & 07777) < 0)
    zdtm_fail("chmod the working directory: %s", strerror(errno));
  expect(in, 4, IN_ATTRIB | IN_ISDIR, "");
  unlink(DIR_ "/new");
  zdtm_finish();
}
