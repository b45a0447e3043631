/* crest: the checksums of image files (see digest.h). */
#include <config.h>

#include <string.h>

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

void
digest_update(struct digest *d, const void *data, size_t len)
{
  if (d->alg == DIGEST_XXH3_128)
    XXH3_128bits_update(xxh(d), data, len);
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
