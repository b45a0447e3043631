/* crest: XXH3-128's update without vector instructions (XXH_VECTOR 0,
 * xxhash's scalar code), for digest.c to pick where it is the faster one.
 * The same function of the same state as the vector code: xxhash computes
 * one hash whatever the code path; only the speed differs. */
#include <config.h>

#define XXH_INLINE_ALL
#define XXH_VECTOR 0 /* XXH_SCALAR */
#include <xxhash.h>

#include "digest.h"

void
digest_xxh3_update_scalar(void *state, const void *data, size_t len)
{
  XXH3_128bits_update((XXH3_state_t *)state, data, len);
}
