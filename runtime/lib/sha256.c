/* crest: SHA-256, written from the FIPS 180-4 description, with a path for
 * the x86 SHA extensions (a 1 GiB page file is hashed twice per
 * checkpoint/restore cycle: the portable code runs at about 0.1-0.2 GB/s,
 * the SHA instructions at well over 1 GB/s). */
#include <config.h>
#include <stdlib.h>
#include <string.h>
#include "sha256.h"
#include "testhook.h"
#include "util.h"

/* In a test build, CREST_SHA256_PORTABLE=1 forces the portable code, so that
   one machine can compare both paths. */
static int
portable_forced(void)
{
  const char *e = crest_test_knob("CREST_SHA256_PORTABLE");
  return e && *e == '1';
}
#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

static const uint32_t K[64] = {
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void
block_c(struct sha256 *s, const uint8_t *p)
{
  uint32_t w[64], a, b, c, d, e, f, g, h;
  int i;

  for (i = 0; i < 16; i++)
    w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8
           | p[4 * i + 3];
  for (i = 16; i < 64; i++)
    {
      uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
      uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
  a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3];
  e = s->h[4], f = s->h[5], g = s->h[6], h = s->h[7];
  for (i = 0; i < 64; i++)
    {
      uint32_t t1 = h + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
      uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
  s->h[0] += a, s->h[1] += b, s->h[2] += c, s->h[3] += d;
  s->h[4] += e, s->h[5] += f, s->h[6] += g, s->h[7] += h;
}

#if defined(__x86_64__)
/* The message schedule four words at a time (sha256msg1/msg2), two rounds
   per sha256rnds2; the state lives as ABEF/CDGH as the instructions want. */
__attribute__((target("sha,sse4.1"))) static void
blocks_ni(uint32_t h[8], const uint8_t *p, size_t n)
{
  const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  __m128i t = _mm_loadu_si128((const __m128i *)&h[0]);
  __m128i s1 = _mm_loadu_si128((const __m128i *)&h[4]);
  __m128i s0;

  t = _mm_shuffle_epi32(t, 0xB1);
  s1 = _mm_shuffle_epi32(s1, 0x1B);
  s0 = _mm_alignr_epi8(t, s1, 8);
  s1 = _mm_blend_epi16(s1, t, 0xF0);
  for (; n; n--, p += 64)
    {
      __m128i m[16], save0 = s0, save1 = s1;
      for (int i = 0; i < 16; i++)
        {
          __m128i wk;
          if (i < 4)
            m[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), bswap);
          else
            m[i] = _mm_sha256msg2_epu32(_mm_add_epi32(_mm_sha256msg1_epu32(m[i - 4], m[i - 3]),
                                                      _mm_alignr_epi8(m[i - 1], m[i - 2], 4)),
                                        m[i - 1]);
          wk = _mm_add_epi32(m[i], _mm_loadu_si128((const __m128i *)&K[4 * i]));
          s1 = _mm_sha256rnds2_epu32(s1, s0, wk);
          s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(wk, 0x0E));
        }
      s0 = _mm_add_epi32(s0, save0);
      s1 = _mm_add_epi32(s1, save1);
    }
  t = _mm_shuffle_epi32(s0, 0x1B);
  s1 = _mm_shuffle_epi32(s1, 0xB1);
  s0 = _mm_blend_epi16(t, s1, 0xF0);
  s1 = _mm_alignr_epi8(s1, t, 8);
  _mm_storeu_si128((__m128i *)&h[0], s0);
  _mm_storeu_si128((__m128i *)&h[4], s1);
}

static int cached = -1;

static int
have_ni(void)
{
  unsigned a, b, c, d;
  if (cached < 0)
    cached = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 29))
             && __get_cpuid(1, &a, &b, &c, &d)
             && (c & (1u << 19)) /* SSE4.1 */ && !portable_forced();
  return cached;
}
#endif

static void
blocks(struct sha256 *s, const uint8_t *p, size_t n)
{
#if defined(__x86_64__)
  if (have_ni())
    {
      blocks_ni(s->h, p, n);
      return;
    }
#endif
  for (; n; n--, p += 64)
    block_c(s, p);
}

void
sha256_set_portable(int on)
{
#if defined(__x86_64__)
  cached = -1;
  if (on)
    cached = 0;
#else
  (void)on;
#endif
}

int
sha256_accelerated(void)
{
#if defined(__x86_64__)
  return have_ni();
#else
  return 0;
#endif
}

void
sha256_init(struct sha256 *s)
{
  static const uint32_t iv[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                  0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
  memcpy(s->h, iv, sizeof iv);
  s->len = 0;
  s->fill = 0;
}

void
sha256_update(struct sha256 *s, const void *data, size_t len)
{
  const uint8_t *p = data;

  s->len += len;
  if (s->fill)
    {
      size_t n = 64 - s->fill < len ? 64 - s->fill : len;
      memcpy(s->buf + s->fill, p, n);
      s->fill += n, p += n, len -= n;
      if (s->fill < 64)
        return;
      blocks(s, s->buf, 1);
      s->fill = 0;
    }
  blocks(s, p, len / 64);
  p += len / 64 * 64;
  len %= 64;
  memcpy(s->buf, p, len);
  s->fill = len;
}

void
sha256_final(struct sha256 *s, uint8_t out[32])
{
  uint64_t bits = s->len * 8;
  int i;

  s->buf[s->fill++] = 0x80;
  if (s->fill > 56)
    {
      memset(s->buf + s->fill, 0, 64 - s->fill);
      blocks(s, s->buf, 1);
      s->fill = 0;
    }
  memset(s->buf + s->fill, 0, 56 - s->fill);
  for (i = 0; i < 8; i++)
    s->buf[56 + i] = bits >> (56 - 8 * i);
  blocks(s, s->buf, 1);
  for (i = 0; i < 8; i++)
    {
      out[4 * i] = s->h[i] >> 24;
      out[4 * i + 1] = s->h[i] >> 16;
      out[4 * i + 2] = s->h[i] >> 8;
      out[4 * i + 3] = s->h[i];
    }
}

void
sha256_hex(const uint8_t d[32], char out[65])
{
  crest_hex(d, 32, out);
}

void
sha256_hex_of(const void *buf, size_t len, char out[65])
{
  struct sha256 s;
  uint8_t d[32];
  sha256_init(&s);
  sha256_update(&s, buf, len);
  sha256_final(&s, d);
  crest_hex(d, 32, out);
}
