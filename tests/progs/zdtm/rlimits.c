/* zdtm-rlimits: every resource limit, after lowering several of them to
 * values no default would have. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

static void
lower(int res, rlim_t soft, rlim_t hard)
{
  struct rlimit r;
  getrlimit(res, &r);
  if (hard < r.rlim_max || r.rlim_max == RLIM_INFINITY)
    r.rlim_max = hard;
  r.rlim_cur = soft < r.rlim_max ? soft : r.rlim_max;
  if (setrlimit(res, &r) < 0)
    zdtm_error("setrlimit %d: %s", res, strerror(errno));
}

int
main(int argc, char **argv)
{
  struct rlimit want[RLIM_NLIMITS];

  zdtm_init(argc, argv);
  lower(RLIMIT_NOFILE, 777, 901);
  lower(RLIMIT_CORE, 0, 12345 * 4096);
  lower(RLIMIT_MSGQUEUE, 4321, 654321);
  lower(RLIMIT_SIGPENDING, 999, 1999);
  lower(RLIMIT_FSIZE, 1ULL << 40, (1ULL << 40) + 4096);
  lower(RLIMIT_CPU, 86400, 86401);
  for (int i = 0; i < RLIM_NLIMITS; i++)
    getrlimit(i, &want[i]);

  zdtm_ready();
  zdtm_wait();

  for (int i = 0; i < RLIM_NLIMITS; i++)
    {
      struct rlimit got;
      if (getrlimit(i, &got) < 0)
        zdtm_fail("getrlimit %d: %s", i, strerror(errno));
      else if (got.rlim_cur != want[i].rlim_cur || got.rlim_max != want[i].rlim_max)
        zdtm_fail("rlimit %d: expected %llu/%llu, got %llu/%llu", i,
                  (unsigned long long)want[i].rlim_cur, (unsigned long long)want[i].rlim_max,
                  (unsigned long long)got.rlim_cur, (unsigned long long)got.rlim_max);
    }
  zdtm_finish();
}
