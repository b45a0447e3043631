/* crest: the checksums of image files. SHA-256 (sha256.c) for the small
 * files and the identities (manifest, vDSO), XXH3-128 (Debian's xxhash,
 * compiled in from its header) for the page files: memory is most of every
 * image, and where the CPU has no SHA instructions (a VM under TCG, older
 * machines) SHA-256 was most of a checkpoint's and a restore's time. The
 * checksums guard against a damaged or truncated image, not against
 * someone who can write it (who could rewrite the manifest as well). */
#ifndef CREST_DIGEST_H
#define CREST_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include "sha256.h"

enum digest_alg
{
  DIGEST_SHA256 = 0,
  DIGEST_XXH3_128 = 1,
};

/* Lives on the stack or in static storage (the XXH3 state must be aligned
   to 64 bytes, which malloc does not promise), and is not copied between
   digest_init and digest_final. */
struct digest
{
  int alg;
  struct sha256 sha;
  _Alignas(64) unsigned char xxh[576];
};

void
digest_init(struct digest *d, int alg);
void
digest_update(struct digest *d, const void *data, size_t len);
/* XXH3's scalar update (digest-scalar.c), on an XXH3_state_t. */
void
digest_xxh3_update_scalar(void *state, const void *data, size_t len);
/* Tests: XXH3's code path from now on: 1 scalar, 0 vector, -1 picked by
   speed at the next large update (the default). */
void
digest_xxh3_force(int scalar);
/* OUT: digest_size(alg) bytes (at most 32). */
void
digest_final(struct digest *d, uint8_t out[32]);
/* OUT: 2 * digest_size(alg) hex digits, NUL-terminated. */
void
digest_final_hex(struct digest *d, char out[65]);
size_t
digest_size(int alg);
/* The manifest's key of a file's digest: "sha256" or "xxh3_128". */
const char *
digest_key(int alg);
/* The digest of BUF in OUT (digest_size bytes), or in hex. */
void
digest_of(int alg, const void *buf, size_t len, uint8_t out[32]);
void
digest_hex_of(int alg, const void *buf, size_t len, char out[65]);

#endif
