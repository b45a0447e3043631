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
 * Capability 40 left in the bounding set is a known gap (KNOWN) only where
 * the running kernel refuses to let a task drop it without CAP_SETPCAP,
 * which is probed (probe_bnd_drop), never read from the kernel's version;
 * where the kernel allows it, it is a failure.
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

static int
get_caps(uint64_t *inh, uint64_t *prm, uint64_t *eff)
{
  struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
  struct __user_cap_data_struct d[2];
  memset(d, 0, sizeof(d));
  if (syscall(SYS_capget, &h, d) < 0)
    return -1;
  *inh = d[0].inheritable | (uint64_t)d[1].inheritable << 32;
  *prm = d[0].permitted | (uint64_t)d[1].permitted << 32;
  *eff = d[0].effective | (uint64_t)d[1].effective << 32;
  return 0;
}

static int
set_caps(uint64_t inh, uint64_t prm, uint64_t eff)
{
  struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
  struct __user_cap_data_struct d[2] = {
    { (uint32_t)eff, (uint32_t)prm, (uint32_t)inh },
    { (uint32_t)(eff >> 32), (uint32_t)(prm >> 32), (uint32_t)(inh >> 32) },
  };
  return syscall(SYS_capset, &h, d);
}

/* Does this kernel let a task that holds CAP_CHECKPOINT_RESTORE in its own
   user namespace, but not CAP_SETPCAP, drop CAP_CHECKPOINT_RESTORE from its
   bounding set (what the restore of a task that did not have it needs)?
   A child enters a new user namespace, where it holds every capability and
   a full bounding set, takes CAP_SETPCAP out of its effective set and
   tries. 1: allowed; 0: refused (EPERM); -1: could not be asked (WHY). */
static int
probe_bnd_drop(char *why, size_t len)
{
  int pfd[2], st;
  int res[2] = { 0, 0 }; /* step, errno */
  pid_t pid;

  if (pipe(pfd) < 0)
    {
      snprintf(why, len, "pipe: %s", strerror(errno));
      return -1;
    }
  pid = fork();
  if (pid < 0)
    {
      snprintf(why, len, "fork: %s", strerror(errno));
      close(pfd[0]);
      close(pfd[1]);
      return -1;
    }
  if (pid == 0)
    {
      uint64_t inh, prm, eff;
      close(pfd[0]);
      if (unshare(CLONE_NEWUSER) < 0)
        res[0] = 1, res[1] = errno;
      else if (get_caps(&inh, &prm, &eff) < 0)
        res[0] = 2, res[1] = errno;
      else if (set_caps(inh, prm, eff & ~(1ULL << CAP_SETPCAP)) < 0)
        res[0] = 3, res[1] = errno;
      else if (prctl(PR_CAPBSET_DROP, CAP_CHECKPOINT_RESTORE, 0, 0, 0) < 0)
        res[0] = 4, res[1] = errno;
      else if (prctl(PR_CAPBSET_READ, CAP_CHECKPOINT_RESTORE, 0, 0, 0) != 0)
        res[0] = 5, res[1] = 0;
      if (write(pfd[1], res, sizeof res) != sizeof res)
        _exit(3);
      _exit(0);
    }
  close(pfd[1]);
  if (read(pfd[0], res, sizeof res) != sizeof res)
    res[0] = -1;
  close(pfd[0]);
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  switch (res[0])
    {
    case 0:
      return 1;
    case 4:
      if (res[1] == EPERM)
        return 0;
      snprintf(why, len, "PR_CAPBSET_DROP: %s", strerror(res[1]));
      return -1;
    case 1:
      snprintf(why, len, "unshare(CLONE_NEWUSER): %s", strerror(res[1]));
      return -1;
    case 2:
    case 3:
      snprintf(why, len, "%s in a new user namespace: %s", res[0] == 2 ? "capget" : "capset",
               strerror(res[1]));
      return -1;
    case 5:
      snprintf(why, len, "PR_CAPBSET_DROP succeeded but the capability is still there");
      return -1;
    default:
      snprintf(why, len, "the probing child died");
      return -1;
    }
}

static void
get_creds(struct creds *c)
{
  memset(c, 0, sizeof(*c));
  get_caps(&c->inh, &c->prm, &c->eff);
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
      /* Capability 40 left in the bounding set is a known gap only where
         the kernel lets no task drop it without CAP_SETPCAP (docs/engine.md);
         where it does, crest must have dropped it. */
      uint64_t cr = 1ULL << CAP_CHECKPOINT_RESTORE;
      char why[256];
      int allowed;
      if (!(want->bnd & cr) && got.bnd == (want->bnd | cr))
        {
          allowed = probe_bnd_drop(why, sizeof why);
          if (allowed == 0)
            zdtm_known("bnd keeps CAP_CHECKPOINT_RESTORE after restore (expected 0x%016" PRIx64
                       ", got 0x%016" PRIx64
                       "): this kernel drops a bounding capability only with CAP_SETPCAP",
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
      int allowed = probe_bnd_drop(why, sizeof why);
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
  if (get_caps(&inh, &prm, &eff) < 0)
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
      if (set_caps(inh, prm, eff) < 0)
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
