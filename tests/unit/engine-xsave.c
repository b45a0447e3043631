/* crest: unit tests of a thread's extended state moved between XSAVE
 * layouts (xsave.c, TAP). Two made-up CPUs: one with AVX, AVX-512 and PKRU
 * after them (the offsets of an Intel CPU with AVX-512), one with AVX and
 * PKRU right after AVX (no AVX-512, PKRU moved down); every component's
 * bytes must land at the other's offset, a component in use that the
 * other lacks or has in another size must be refused, and the layout must
 * survive its JSON record. */
#include <config.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>
#include "image.h"
#include "tap.h"

static void
comp(struct xsave_layout *l, unsigned bit, uint32_t off, uint32_t len)
{
  l->xcr0 |= 1ULL << bit;
  l->off[bit] = off, l->len[bit] = len;
}

/* A standard-format area of layout L with features BV in use: each
   component filled with its own byte (0x10 + bit), the legacy area 0x01. */
static uint8_t *
area(const struct xsave_layout *l, uint64_t bv)
{
  uint8_t *a = calloc(1, l->size);
  memset(a, 0x01, 512);
  memcpy(a + 512, &bv, 8);
  for (unsigned i = 2; i < 64; i++)
    if (bv >> i & 1)
      memset(a + l->off[i], 0x10 + (int)i, l->len[i]);
  return a;
}

static int
all(const uint8_t *p, size_t n, uint8_t v)
{
  for (size_t i = 0; i < n; i++)
    if (p[i] != v)
      return 0;
  return 1;
}

int
main(void)
{
  struct xsave_layout big, small, odd, back;
  crest_error_t err = NULL;
  uint8_t *in, *out;
  uint64_t bv;

  memset(&big, 0, sizeof big), memset(&small, 0, sizeof small);
  big.xcr0 = small.xcr0 = 3;
  comp(&big, 2, 576, 256), comp(&big, 5, 1088, 64), comp(&big, 6, 1152, 512);
  comp(&big, 7, 1664, 1024), comp(&big, 9, 2688, 8);
  big.size = 2696;
  comp(&small, 2, 576, 256), comp(&small, 9, 832, 8);
  small.size = 840;

  /* 1-3. AVX and PKRU in use: moved, the rest zero. */
  in = area(&big, 3 | 1 << 2 | 1 << 9);
  out = malloc(small.size);
  tap_ok(xsave_convert(&big, in, big.size, &small, out, &err) == 0,
         "AVX and PKRU in use, from the AVX-512 layout into the smaller one");
  crest_error_release(&err);
  memcpy(&bv, out + 464, 8);
  tap_ok(all(out, 464, 0x01) && all(out + 472, 40, 0x01) && bv == small.xcr0
             && all(out + 576, 256, 0x12) && all(out + 832, 8, 0x19),
         "the legacy area (XCR0's word the target's), AVX at 576 and PKRU moved from 2688 to 832");
  memcpy(&bv, out + 512, 8);
  tap_ok(bv == (3 | 1 << 2 | 1 << 9), "XSTATE_BV kept (%#llx)", (unsigned long long)bv);
  free(in);

  /* 4-5. And back: the same bytes at the larger layout's offsets. */
  in = out;
  out = malloc(big.size);
  tap_ok(xsave_convert(&small, in, small.size, &big, out, &err) == 0 && all(out + 2688, 8, 0x19)
             && all(out + 576, 256, 0x12),
         "back into the AVX-512 layout: PKRU at 2688 again");
  crest_error_release(&err);
  tap_ok(all(out + 1088, 2688 - 1088, 0), "the AVX-512 components nobody used are zero");
  free(in), free(out);

  /* 6. AVX-512 in use, which the smaller layout lacks: refused. */
  in = area(&big, 3 | 1 << 2 | 1 << 5 | 1 << 9);
  out = malloc(small.size);
  tap_ok(xsave_convert(&big, in, big.size, &small, out, &err) < 0 && err
             && strstr(err->msg, "component 5 (AVX-512") && strstr(err->msg, "lacks"),
         "AVX-512 in use, on a CPU without it: refused (\"%s\")", err ? err->msg : "");
  crest_error_release(&err);
  free(out);

  free(in);

  /* 7. A component of another size: refused. */
  in = area(&big, 3 | 1 << 2 | 1 << 9);
  odd = small;
  odd.len[9] = 16, odd.size = 848;
  out = malloc(odd.size);
  tap_ok(xsave_convert(&big, in, big.size, &odd, out, &err) < 0 && err
             && strstr(err->msg, "another size"),
         "PKRU of another size: refused (\"%s\")", err ? err->msg : "");
  crest_error_release(&err);
  free(out);

  /* 8. An area whose length is not its layout's: refused. */
  out = malloc(small.size);
  tap_ok(xsave_convert(&big, in, big.size - 64, &small, out, &err) < 0 && err,
         "an area shorter than its layout says: refused");
  crest_error_release(&err);
  free(in), free(out);

  /* 9-10. The JSON record and back; a component past the area refused. */
  {
    yajl_gen g = yajl_gen_alloc(NULL);
    const unsigned char *buf;
    size_t len;
    char ebuf[128];
    yajl_val root, v;
    yajl_gen_map_open(g);
    xsave_layout_put(g, "xsave", &big);
    yajl_gen_map_close(g);
    yajl_gen_get_buf(g, &buf, &len);
    root = yajl_tree_parse((const char *)buf, ebuf, sizeof ebuf);
    v = root ? yajl_tree_get(root, (const char *[]){ "xsave", NULL }, yajl_t_object) : NULL;
    tap_ok(v && xsave_layout_get(v, &back, &err) == 0 && xsave_layout_same(&big, &back),
           "the layout through its JSON record: the same");
    crest_error_release(&err);
    yajl_tree_free(root);
    yajl_gen_free(g);
    root = yajl_tree_parse("{\"xcr0\": \"0x7\", \"size\": 832, \"components\": [[2, 576, 512]]}",
                           ebuf, sizeof ebuf);
    tap_ok(root && xsave_layout_get(root, &back, &err) < 0 && err,
           "a component that ends past the area: refused (\"%s\")", err ? err->msg : "");
    crest_error_release(&err);
    yajl_tree_free(root);
  }
  return tap_done();
}
