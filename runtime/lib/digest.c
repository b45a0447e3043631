/* crest: the checksums of image files (see digest.h). */
#include <config.h>

#include <string.h>
#include <time.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "digest.h"
#include "util.h"

_Static_assert(sizeof(XXH3_state_t) <= sizeof(((struct digest *)0)->xxh),
               "struct digest: room for the XXH3 state");
_Static_assert(_Alignof(XXH3_state_t) <= 64, "struct digest: the XXH3 state's alignment");

static XXH3_state_t *
xxh(struct digest *d)
{
  return (XXH3_state_t *)(void *)d->xxh;
}

void
digest_init(struct digest *d, int alg)
{
  d->alg = alg;
  if (alg == DIGEST_XXH3_128)
    {
      XXH3_INITSTATE(xxh(d));
      XXH3_128bits_reset(xxh(d));
    }
  else
    sha256_init(&d->sha);
}

/* XXH3 has vector code (SSE2 here) and scalar code, one hash. On real
   CPUs the vector code is about twice as fast; under an emulator it can be
   the other way round (QEMU's TCG, which runs the test VMs: SSE2 365 MB/s,
   scalar 893 MB/s; this host: 16.6 and 7.2 GB/s). The first update of at
   least PICK_MIN bytes times both on its first PICK_LEN bytes, twice each
   in scratch states, and every later update uses the faster. No
   allocation, no lock: the checksum threads call this while the process
   forks. */
enum
{
  XXH_UNPICKED,
  XXH_VECTOR_CODE,
  XXH_SCALAR_CODE
};
#define PICK_MIN (1u << 20)
#define PICK_LEN (128u << 10)
static int xxh_code = XXH_UNPICKED;

static uint64_t
ns_now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int
xxh_pick(const void *data)
{
  _Alignas(64) XXH3_state_t s;
  uint64_t best[2] = { UINT64_MAX, UINT64_MAX };
  for (int round = 0; round < 2; round++)
    for (int code = 0; code < 2; code++)
      {
        uint64_t t0, t;
        XXH3_INITSTATE(&s);
        XXH3_128bits_reset(&s);
        t0 = ns_now();
        if (code == 0)
          XXH3_128bits_update(&s, data, PICK_LEN);
        else
          digest_xxh3_update_scalar(&s, data, PICK_LEN);
        t = ns_now() - t0;
        if (t < best[code])
          best[code] = t;
      }
  return best[1] < best[0] ? XXH_SCALAR_CODE : XXH_VECTOR_CODE;
}

void
digest_xxh3_force(int scalar)
{
  __atomic_store_n(&xxh_code,
                   scalar < 0 ? XXH_UNPICKED
                   : scalar   ? XXH_SCALAR_CODE
                              : XXH_VECTOR_CODE,
                   __ATOMIC_RELAXED);
}

void
digest_update(struct digest *d, const void *data, size_t len)
{
  if (d->alg == DIGEST_XXH3_128)
    {
      int code = __atomic_load_n(&xxh_code, __ATOMIC_RELAXED);
      if (code == XXH_UNPICKED && len >= PICK_MIN)
        {
          code = xxh_pick(data);
          __atomic_store_n(&xxh_code, code, __ATOMIC_RELAXED);
        }
      if (code == XXH_SCALAR_CODE)
        digest_xxh3_update_scalar(xxh(d), data, len);
      else
        XXH3_128bits_update(xxh(d), data, len);
    }
  else
    sha256_update(&d->sha, data, len);
}

void
digest_final(struct digest *d, uint8_t out[32])
{
  if (d->alg == DIGEST_XXH3_128)
    {
      XXH128_canonical_t c;
      XXH128_canonicalFromHash(&c, XXH3_128bits_digest(xxh(d)));
      memcpy(out, c.digest, sizeof c.digest);
    }
  else
    sha256_final(&d->sha, out);
}

void
digest_final_hex(struct digest *d, char out[65])
{
  uint8_t raw[32];
  digest_final(d, raw);
  crest_hex(raw, digest_size(d->alg), out);
}

size_t
digest_size(int alg)
{
  return alg == DIGEST_XXH3_128 ? 16 : 32;
}

const char *
digest_key(int alg)
{
  return alg == DIGEST_XXH3_128 ? "xxh3_128" : "sha256";
}

void
digest_of(int alg, const void *buf, size_t len, uint8_t out[32])
{
  struct digest d;
  digest_init(&d, alg);
  digest_update(&d, buf, len);
  digest_final(&d, out);
}

void
digest_hex_of(int alg, const void *buf, size_t len, char out[65])
{
  uint8_t raw[32];
  digest_of(alg, buf, len, raw);
  crest_hex(raw, digest_size(alg), out);
}
