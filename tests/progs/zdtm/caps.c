/* zdtm-caps: credentials and the five capability sets.
 *
 * The program changes what it may without privilege beyond its own sets:
 * drops the lowest effective capability from the effective set only, puts
 * one permitted capability in the inheritable set and raises it in the
 * ambient set, drops CAP_SYS_BOOT (or, failing that, the highest bounding
 * capability) from the bounding set when it holds CAP_SETPCAP, and sets
 * SECBIT_KEEP_CAPS when it can. After restore the five sets, the securebits,
 * the real/effective/saved/fs UIDs and GIDs and the supplementary groups are
 * compared; in particular CAP_CHECKPOINT_RESTORE must be held after restore
 * exactly when it was held before.
 *
 * Capability 40 left in the bounding set is a failure on any kernel: a
 * container's restorer holds CAP_SETPCAP to drop it (until December 2026 it
 * did not, and this was a known gap where the kernel refused the drop
 * without CAP_SETPCAP); the probe (probe_bnd_drop) still says which kernel
 * this is, in the message.
 *
 *   zdtm-caps --probe-bnd-drop
 *
 * runs only the probe: prints "allowed" (exit 0), "refused" (exit 1) or
 * "unknown: REASON" (exit 2), for harnesses that check the same. */
#define _GNU_SOURCE
#include "zdtm.h"

#include <errno.h>
#include <inttypes.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <stdio.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

struct creds
{
  uint64_t inh, prm, eff, bnd, amb;
  int secbits;
  uid_t ruid, euid, suid, fsuid;
  gid_t rgid, egid, sgid, fsgid;
  int ngroups;
  gid_t groups[64];
};

static int last_cap;

static void
get_creds(struct creds *c)
{
  memset(c, 0, sizeof(*c));
  zdtm_get_caps(&c->inh, &c->prm, &c->eff);
  for (int i = 0; i <= last_cap; i++)
    {
      if (prctl(PR_CAPBSET_READ, i, 0, 0, 0) == 1)
        c->bnd |= 1ULL << i;
      if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, i, 0, 0) == 1)
        c->amb |= 1ULL << i;
    }
  c->secbits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
  getresuid(&c->ruid, &c->euid, &c->suid);
  getresgid(&c->rgid, &c->egid, &c->sgid);
  c->fsuid = setfsuid(-1);
  c->fsgid = setfsgid(-1);
  c->ngroups = getgroups(64, c->groups);
}

#define CMP(field, fmt)                                                                            \
  if (want->field != got.field)                                                                    \
  zdtm_fail(#field ": expected " fmt ", got " fmt, want->field, got.field)

static void
compare(const struct creds *want)
{
  struct creds got;
  get_creds(&got);
  CMP(inh, "0x%016" PRIx64);
  CMP(prm, "0x%016" PRIx64);
  CMP(eff, "0x%016" PRIx64);
  if (want->bnd != got.bnd)
    {
      /* Capability 40 left in the bounding set: crest must have dropped it
         (with CAP_SETPCAP, or on a kernel that allows it without). */
      uint64_t cr = 1ULL << CAP_CHECKPOINT_RESTORE;
      char why[256];
      int allowed;
      if (!(want->bnd & cr) && got.bnd == (want->bnd | cr))
        {
          allowed = zdtm_probe_bnd_drop(why, sizeof why);
          if (allowed == 0)
            zdtm_fail("bnd keeps CAP_CHECKPOINT_RESTORE after restore (expected 0x%016" PRIx64
                      ", got 0x%016" PRIx64
                      "): this kernel drops a bounding capability only with CAP_SETPCAP, which "
                      "the restorer should have held",
                      want->bnd, got.bnd);
          else if (allowed > 0)
            zdtm_fail("bnd: expected 0x%016" PRIx64 ", got 0x%016" PRIx64
                      ": CAP_CHECKPOINT_RESTORE stayed, although this kernel lets a task "
                      "holding it drop it",
                      want->bnd, got.bnd);
          else
            zdtm_fail("bnd: expected 0x%016" PRIx64 ", got 0x%016" PRIx64
                      " (whether this kernel lets CAP_CHECKPOINT_RESTORE be dropped could not "
                      "be probed: %s)",
                      want->bnd, got.bnd, why);
        }
      else
        zdtm_fail("bnd: expected 0x%016" PRIx64 ", got 0x%016" PRIx64, want->bnd, got.bnd);
    }
  CMP(amb, "0x%016" PRIx64);
  CMP(secbits, "0x%x");
  CMP(ruid, "%u");
  CMP(euid, "%u");
  CMP(suid, "%u");
  CMP(fsuid, "%u");
  CMP(rgid, "%u");
  CMP(egid, "%u");
  CMP(sgid, "%u");
  CMP(fsgid, "%u");
  CMP(ngroups, "%d");
  for (int i = 0; i < want->ngroups && i < got.ngroups; i++)
    if (want->groups[i] != got.groups[i])
      zdtm_fail("supplementary group %d: expected %u, got %u", i, want->groups[i], got.groups[i]);
}

int
main(int argc, char **argv)
{
  uint64_t inh, prm, eff;
  struct creds want;
  int low = -1, pick = -1;

  if (argc == 2 && strcmp(argv[1], "--probe-bnd-drop") == 0)
    {
      char why[256];
      int allowed = zdtm_probe_bnd_drop(why, sizeof why);
      if (allowed < 0)
        printf("unknown: %s\n", why);
      else
        printf("%s\n", allowed ? "allowed" : "refused");
      return allowed > 0 ? 0 : allowed == 0 ? 1 : 2;
    }
  zdtm_init(argc, argv);
  for (last_cap = 0; last_cap < 64; last_cap++)
    if (prctl(PR_CAPBSET_READ, last_cap, 0, 0, 0) < 0)
      break;
  last_cap--;
  if (zdtm_get_caps(&inh, &prm, &eff) < 0)
    zdtm_error("capget: %s", strerror(errno));
  if (prm & (1ULL << CAP_SETPCAP))
    {
      int drop = CAP_SYS_BOOT;
      if (!prctl(PR_CAPBSET_READ, drop, 0, 0, 0))
        drop = last_cap;
      if (prctl(PR_CAPBSET_DROP, drop, 0, 0, 0) < 0)
        zdtm_error("PR_CAPBSET_DROP %d: %s", drop, strerror(errno));
      if (prctl(PR_SET_SECUREBITS, SECBIT_KEEP_CAPS, 0, 0, 0) < 0)
        zdtm_error("PR_SET_SECUREBITS: %s", strerror(errno));
    }
  for (int i = 0; i <= last_cap; i++)
    if (eff & (1ULL << i))
      {
        if (low < 0)
          low = i;
        else if (pick < 0 && i != CAP_SETPCAP && i != CAP_SYS_BOOT)
          pick = i;
      }
  if (pick >= 0)
    {
      eff &= ~(1ULL << low);
      inh |= 1ULL << pick;
      if (zdtm_set_caps(inh, prm, eff) < 0)
        zdtm_error("capset: %s", strerror(errno));
      if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, pick, 0, 0) < 0)
        zdtm_error("ambient raise %d: %s", pick, strerror(errno));
    }
  else
    zdtm_note("fewer than two effective capabilities: the sets are compared as they are");
  get_creds(&want);

  zdtm_ready();
  zdtm_wait();

  compare(&want);
  zdtm_finish();
}
