/* xsave.c: the layout of the XSAVE area on this CPU, as the image records
 * it, and a thread's extended state moved from the layout of the CPU it was
 * checkpointed on to this one's (docs/image-format.md, "manifest.json").
 *
 * ptrace gives a thread's extended state in the standard format, where
 * each component (AVX, AVX-512, PKRU, AMX...) lies at an offset CPUID
 * leaf 0xD gives, and the kernel takes back only an area of exactly this
 * CPU's size. The offsets are the CPU's own: Intel and AMD, or two
 * generations, may put one component at different places, and a component
 * one CPU has may be missing on another. So the checkpoint records the
 * layout, and the restore moves each component in use to where this CPU
 * has it, or refuses the image in one line before anything is created. */
#include <config.h>

#include <cpuid.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "engine-int.h"
#include "image.h"
#include "util.h"

static const char *
comp_name(unsigned i)
{
  switch (i)
    {
    case 2:
      return "AVX";
    case 3:
    case 4:
      return "MPX";
    case 5:
    case 6:
    case 7:
      return "AVX-512";
    case 9:
      return "PKRU";
    case 17:
    case 18:
      return "AMX";
    case 19:
      return "APX";
    default:
      return "unnamed";
    }
}

const struct xsave_layout *
xsave_layout_here(void)
{
  static struct xsave_layout here;
  static int state; /* 0 not read, 1 read, -1 none (no XSAVE) */
  unsigned a, b, c, d;

  if (state == 0)
    {
      state = -1;
      if (__get_cpuid(1, &a, &b, &c, &d) && (c & bit_OSXSAVE)
          && __get_cpuid_count(0xd, 0, &a, &b, &c, &d))
        {
          uint32_t lo, hi;
          __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
          memset(&here, 0, sizeof here);
          here.xcr0 = (uint64_t)hi << 32 | lo;
          here.size = b;
          for (unsigned i = 2; i < 64; i++)
            if ((here.xcr0 >> i & 1) && __get_cpuid_count(0xd, i, &a, &b, &c, &d))
              {
                here.off[i] = b, here.len[i] = a;
                if (c & 4)
                  here.xfd |= 1ULL << i;
              }
          state = 1;
        }
    }
  return state > 0 ? &here : NULL;
}

void
xsave_layout_put(yajl_gen g, const char *key, const struct xsave_layout *l)
{
  jput_key(g, key);
  yajl_gen_map_open(g);
  jput_u64(g, "xcr0", l->xcr0);
  jput_int(g, "size", l->size);
  jput_key(g, "components");
  yajl_gen_array_open(g);
  for (unsigned i = 2; i < 64; i++)
    if (l->xcr0 >> i & 1)
      {
        yajl_gen_array_open(g);
        yajl_gen_integer(g, i);
        yajl_gen_integer(g, l->off[i]);
        yajl_gen_integer(g, l->len[i]);
        yajl_gen_array_close(g);
      }
  yajl_gen_array_close(g);
  yajl_gen_map_close(g);
}

int
xsave_layout_get(yajl_val v, struct xsave_layout *l, crest_error_t *err)
{
  int64_t size;
  yajl_val *items;
  long n;

  memset(l, 0, sizeof *l);
  if (jget_u64(v, "xcr0", &l->xcr0, err) < 0 || jget_i64(v, "size", &size, err) < 0)
    return -1;
  if (size < 576 || size > XSTATE_MAX)
    return crest_error_make(err, EINVAL, "xsave layout: size %" PRId64 " out of range", size);
  l->size = (uint32_t)size;
  if ((n = jget_array(v, "components", &items, err)) < 0)
    return -1;
  for (long k = 0; k < n; k++)
    {
      yajl_val c = items[k];
      long long f[3];
      if (!YAJL_IS_ARRAY(c) || c->u.array.len != 3)
        return crest_error_make(err, EINVAL,
                                "xsave layout: component %ld is not [bit, offset, size]", k);
      for (int j = 0; j < 3; j++)
        {
          if (!YAJL_IS_INTEGER(c->u.array.values[j]))
            return crest_error_make(err, EINVAL, "xsave layout: component %ld: not a number", k);
          f[j] = YAJL_GET_INTEGER(c->u.array.values[j]);
        }
      if (f[0] < 2 || f[0] > 63 || !(l->xcr0 >> f[0] & 1) || l->len[f[0]] || f[1] < 576 || f[2] <= 0
          || f[1] + f[2] > l->size)
        return crest_error_make(err, EINVAL,
                                "xsave layout: component [%lld, %lld, %lld] does not fit the area",
                                f[0], f[1], f[2]);
      l->off[f[0]] = (uint32_t)f[1], l->len[f[0]] = (uint32_t)f[2];
    }
  return 0;
}

bool
xsave_layout_same(const struct xsave_layout *a, const struct xsave_layout *b)
{
  if (a->size != b->size || a->xcr0 != b->xcr0)
    return false;
  for (unsigned i = 2; i < 64; i++)
    if (a->off[i] != b->off[i] || a->len[i] != b->len[i])
      return false;
  return true;
}

int
xsave_convert(const struct xsave_layout *from, const uint8_t *in, size_t inlen,
              const struct xsave_layout *to, uint8_t *out, crest_error_t *err)
{
  uint64_t bv, comp;

  if (inlen != from->size)
    return crest_error_make(err, EINVAL,
                            "its extended state is %zu bytes, the XSAVE layout it was saved "
                            "with %" PRIu32,
                            inlen, from->size);
  memcpy(&bv, in + 512, 8);
  memcpy(&comp, in + 520, 8);
  if (comp)
    return crest_error_make(err, EINVAL, "its extended state is not in the standard format");
  for (unsigned i = 2; i < 64; i++)
    if (bv >> i & 1)
      {
        if (!(from->xcr0 >> i & 1) || !from->len[i])
          return crest_error_make(err, EINVAL,
                                  "its extended state uses XSAVE component %u, which the layout "
                                  "it was saved with lacks",
                                  i);
        if (!(to->xcr0 >> i & 1) || to->len[i] != from->len[i])
          return crest_error_make(err, ENOTSUP,
                                  "its extended state uses XSAVE component %u (%s, %" PRIu32
                                  " bytes), which this CPU %s",
                                  i, comp_name(i), from->len[i],
                                  to->xcr0 >> i & 1 ? "has in another size" : "lacks");
      }
  memset(out, 0, to->size);
  memcpy(out, in, 576); /* the legacy area and the header */
  memcpy(out + 464, &to->xcr0, 8);
  for (unsigned i = 2; i < 64; i++)
    if (bv >> i & 1)
      memcpy(out + to->off[i], in + from->off[i], from->len[i]);
  return 0;
}
