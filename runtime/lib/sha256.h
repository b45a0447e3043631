/* crest: SHA-256 (FIPS 180-4), for the image checksums. Small and
 * self-contained so that the engine needs no crypto library. */
#ifndef CREST_SHA256_H
#define CREST_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct sha256
{
  uint32_t h[8];
  uint64_t len; /* bytes hashed so far */
  uint8_t buf[64];
  size_t fill;
};

void
sha256_init(struct sha256 *s);
void
sha256_update(struct sha256 *s, const void *data, size_t len);
void
sha256_final(struct sha256 *s, uint8_t out[32]);
/* 1: the SHA instructions are used. sha256_set_portable(1) forces the
   portable code, (0) goes back to detection (tests compare the two). */
int
sha256_accelerated(void);
void
sha256_set_portable(int on);
/* out: 65 bytes, lower-case hex, NUL-terminated. */
void
sha256_hex(const uint8_t digest[32], char out[65]);
/* The digest of BUF, in hex as above. */
void
sha256_hex_of(const void *buf, size_t len, char out[65]);

#endif
