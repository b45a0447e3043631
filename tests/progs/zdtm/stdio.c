/* zdtm-stdio: output on stdout that goes on across checkpoint and restore.
 *
 * Writes "tick N" (N = 1, 2, ...) to descriptor 1 every 50 ms until
 * SIGTERM. A harness that starts it with stdout on one file and restores it
 * with stdout on another (a file outside the container is inherited: the
 * restore's own stdout takes its place, docs/restore.md) finds the count
 * going on in the second file, one past the last line of the first; a file
 * inside the container is reopened by path and the count goes on there.
 * Every second tick goes through descriptor 10, a dup of stdout (as dash
 * saves stdout while a builtin's output is redirected): restored onto the
 * same file as descriptor 1 (until December 2026 refused, "shares its open
 * file with the stdio"). The program fails if a write failed or was
 * short. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
  unsigned long n = 0, bad = 0;
  int last_err = 0;
  char line[64];

  zdtm_init(argc, argv);
  if (dup2(1, 10) != 10)
    zdtm_error("dup2 stdout to 10: %s", strerror(errno));
  zdtm_ready();
  while (!zdtm_stopped())
    {
      int len = snprintf(line, sizeof line, "tick %lu\n", ++n);
      ssize_t w = write(n % 2 ? 1 : 10, line, (size_t)len);
      if (w != len)
        {
          bad++;
          last_err = w < 0 ? errno : 0;
        }
      struct timespec ts = { 0, 50 * 1000 * 1000 };
      nanosleep(&ts, NULL);
    }
  if (bad)
    zdtm_fail("%lu of %lu writes to stdout failed (the last: %s)", bad, n,
              last_err ? strerror(last_err) : "short write");
  zdtm_finish();
}
