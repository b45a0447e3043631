/* caps: print the capability sets of this process, one per line, in the
 * format of /proc/PID/status ("CapInh:\t" and 16 hex digits).
 *
 * The values come from capget() (inheritable, permitted, effective) and
 * prctl() (bounding, ambient), never from /proc, so that a test can compare
 * the two views of the kernel.
 *
 * Standalone: gcc -static -O2 -Wall -Wextra -o caps caps.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The highest capability the kernel knows, found by asking for the bounding
 * bit of each number until the kernel answers EINVAL. */
static int
last_cap(void)
{
  int c;

  for (c = 0; c < 64; c++)
    if (prctl(PR_CAPBSET_READ, (unsigned long)c, 0L, 0L, 0L) < 0)
      break;
  return c - 1;
}

static int
read_bits(int option, int last, uint64_t *out)
{
  uint64_t v = 0;

  for (int c = 0; c <= last; c++)
    {
      int r = option == PR_CAP_AMBIENT
                  ? prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, (unsigned long)c, 0L, 0L)
                  : prctl(PR_CAPBSET_READ, (unsigned long)c, 0L, 0L, 0L);
      if (r < 0)
        return -1;
      if (r)
        v |= UINT64_C(1) << c;
    }
  *out = v;
  return 0;
}

int
main(void)
{
  struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
  struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
  uint64_t inh, prm, eff, bnd, amb;
  int last;

  memset(data, 0, sizeof(data));
  if (syscall(SYS_capget, &hdr, data) < 0)
    {
      fprintf(stderr, "caps: capget: %s\n", strerror(errno));
      return 1;
    }
  inh = (uint64_t)data[1].inheritable << 32 | data[0].inheritable;
  prm = (uint64_t)data[1].permitted << 32 | data[0].permitted;
  eff = (uint64_t)data[1].effective << 32 | data[0].effective;

  last = last_cap();
  if (last < 0)
    {
      fprintf(stderr, "caps: prctl(PR_CAPBSET_READ, 0): %s\n", strerror(errno));
      return 1;
    }
  if (read_bits(PR_CAPBSET_READ, last, &bnd) < 0)
    {
      fprintf(stderr, "caps: prctl(PR_CAPBSET_READ): %s\n", strerror(errno));
      return 1;
    }
  if (read_bits(PR_CAP_AMBIENT, last, &amb) < 0)
    {
      fprintf(stderr, "caps: prctl(PR_CAP_AMBIENT_IS_SET): %s\n", strerror(errno));
      return 1;
    }

  printf("CapInh:\t%016" PRIx64 "\n", inh);
  printf("CapPrm:\t%016" PRIx64 "\n", prm);
  printf("CapEff:\t%016" PRIx64 "\n", eff);
  printf("CapBnd:\t%016" PRIx64 "\n", bnd);
  printf("CapAmb:\t%016" PRIx64 "\n", amb);
  return 0;
}
