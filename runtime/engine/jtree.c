/* crest: a JSON tree for the restore's tree.json, the same yajl_val_s values
 * yajl_tree_parse builds, but laid out in two arenas instead of one malloc
 * per node: the nodes, keys and numbers in one, which goes as soon as the
 * image is parsed (jtree_drop_nodes), and the string values, which the
 * parsed image points into, in another, kept until the restore ends.
 *
 * Why: every restored task starts as a fork of crest. With yajl's tree a
 * 200-process image left 11 MB of small blocks in crest's heap when it
 * forked: each fork copied their page tables, each task took copy-on-write
 * faults in them and unmapped them again. Here the nodes are gone before
 * the first fork, and the strings are in shared memory, read-only once
 * parsed (arena.h): a fork copies none of their page table entries, and a
 * task maps only the pages of the strings it reads. */
#include <config.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>
#include "arena.h"
#include "image.h"
#include "util.h"

struct jtree
{
  struct arena nodes, strings;
};

/* One open container while parsing: its node, and where its entries start
   in the scratch list. */
struct jframe
{
  yajl_val v;
  size_t first;
};

struct jbuild
{
  struct jtree *t;
  yajl_val root;
  struct jframe *stack;
  size_t depth, stack_cap;
  /* Entries of the open containers, innermost last: a key (NULL in an
     array) and a value. */
  const char **keys;
  yajl_val *vals;
  size_t n, cap;
  const char *pending_key;
  bool oom;
};

static char *
ja_strndup(struct arena *a, const unsigned char *s, size_t len)
{
  char *d = len < SIZE_MAX ? arena_alloc(a, len + 1) : NULL;
  if (d)
    {
      memcpy(d, s, len);
      d[len] = 0;
    }
  return d;
}

/* Put V in the open container (or make it the root). */
static int
jb_add(struct jbuild *b, yajl_val v)
{
  if (!v)
    return b->oom = true, 0;
  if (b->depth == 0)
    {
      b->root = v;
      return 1;
    }
  if (b->n == b->cap)
    {
      size_t cap = b->cap ? 2 * b->cap : 1024;
      const char **k = realloc(b->keys, cap * sizeof *k);
      yajl_val *vv = k ? realloc(b->vals, cap * sizeof *vv) : NULL;
      if (k)
        b->keys = k;
      if (!vv)
        return b->oom = true, 0;
      b->vals = vv;
      b->cap = cap;
    }
  b->keys[b->n] = b->pending_key;
  b->vals[b->n++] = v;
  b->pending_key = NULL;
  return 1;
}

static yajl_val
jb_node(struct jbuild *b, yajl_type type)
{
  yajl_val v = arena_alloc(&b->t->nodes, sizeof *v);
  if (v)
    {
      memset(v, 0, sizeof *v);
      v->type = type;
    }
  return v;
}

static int
jb_null(void *ctx)
{
  struct jbuild *b = ctx;
  return jb_add(b, jb_node(b, yajl_t_null));
}

static int
jb_bool(void *ctx, int val)
{
  struct jbuild *b = ctx;
  return jb_add(b, jb_node(b, val ? yajl_t_true : yajl_t_false));
}

/* As yajl's tree: the text kept, the integer when it is one in range
   (digits only after an optional sign), the double when strtod takes all. */
static int
jb_number(void *ctx, const char *s, size_t len)
{
  struct jbuild *b = ctx;
  yajl_val v = jb_node(b, yajl_t_number);
  const char *p;
  unsigned long long mag = 0;
  bool neg = false, ok = true;
  char *end;
  if (!v || !(v->u.number.r = ja_strndup(&b->t->nodes, (const unsigned char *)s, len)))
    return b->oom = true, 0;
  p = v->u.number.r;
  if (*p == '-')
    neg = true, p++;
  else if (*p == '+')
    p++;
  for (; *p && ok; p++)
    {
      if (*p < '0' || *p > '9' || mag > (unsigned long long)LLONG_MAX / 10)
        ok = false;
      else if ((mag = mag * 10 + (unsigned)(*p - '0')) > (unsigned long long)LLONG_MAX)
        ok = false;
    }
  if (ok)
    {
      v->u.number.i = neg ? -(long long)mag : (long long)mag;
      v->u.number.flags |= YAJL_NUMBER_INT_VALID;
    }
  errno = 0;
  v->u.number.d = strtod(v->u.number.r, &end);
  if (errno == 0 && *end == 0)
    v->u.number.flags |= YAJL_NUMBER_DOUBLE_VALID;
  return jb_add(b, v);
}

/* String values only ever decoded while parsing (jget_hex of a thread's
   registers and extended state, nearly half of the strings' bytes) go with
   the nodes: nothing points into them afterwards. */
static bool
decoded_only(const char *key)
{
  return key
         && ((key[0] == 'x' && strcmp(key, "xstate") == 0)
             || (key[0] == 'r' && strcmp(key, "regs") == 0));
}

static int
jb_string(void *ctx, const unsigned char *s, size_t len)
{
  struct jbuild *b = ctx;
  yajl_val v = jb_node(b, yajl_t_string);
  struct arena *a = decoded_only(b->pending_key) ? &b->t->nodes : &b->t->strings;
  if (!v || !(v->u.string = ja_strndup(a, s, len)))
    return b->oom = true, 0;
  return jb_add(b, v);
}

static int
jb_key(void *ctx, const unsigned char *s, size_t len)
{
  struct jbuild *b = ctx;
  if (!(b->pending_key = ja_strndup(&b->t->nodes, s, len)))
    return b->oom = true, 0;
  return 1;
}

static int
jb_open(struct jbuild *b, yajl_type type)
{
  yajl_val v = jb_node(b, type);
  if (!v || !jb_add(b, v))
    return b->oom = true, 0;
  if (b->depth == b->stack_cap)
    {
      size_t cap = b->stack_cap ? 2 * b->stack_cap : 32;
      struct jframe *s = realloc(b->stack, cap * sizeof *s);
      if (!s)
        return b->oom = true, 0;
      b->stack = s;
      b->stack_cap = cap;
    }
  b->stack[b->depth].v = v;
  b->stack[b->depth++].first = b->n;
  return 1;
}

static int
jb_start_map(void *ctx)
{
  return jb_open(ctx, yajl_t_object);
}

static int
jb_start_array(void *ctx)
{
  return jb_open(ctx, yajl_t_array);
}

/* The open container's entries move from the scratch list to the arena.
 * An empty one copies nothing: the scratch list may not exist yet. */
static int
jb_close(void *ctx)
{
  struct jbuild *b = ctx;
  struct jframe *f = &b->stack[--b->depth];
  size_t n = b->n - f->first;
  yajl_val *vals = arena_alloc(&b->t->nodes, (n ? n : 1) * sizeof *vals);
  if (!vals)
    return b->oom = true, 0;
  if (n)
    memcpy(vals, b->vals + f->first, n * sizeof *vals);
  if (f->v->type == yajl_t_object)
    {
      const char **keys = arena_alloc(&b->t->nodes, (n ? n : 1) * sizeof *keys);
      if (!keys)
        return b->oom = true, 0;
      if (n)
        memcpy(keys, b->keys + f->first, n * sizeof *keys);
      f->v->u.object.keys = keys;
      f->v->u.object.values = vals;
      f->v->u.object.len = n;
    }
  else
    {
      f->v->u.array.values = vals;
      f->v->u.array.len = n;
    }
  b->n = f->first;
  return 1;
}

static const yajl_callbacks jb_callbacks = {
  jb_null,      jb_bool, NULL,     NULL,           jb_number, jb_string,
  jb_start_map, jb_key,  jb_close, jb_start_array, jb_close,
};

int
jtree_parse(const char *text, size_t len, struct jtree **out, yajl_val *root, char *ebuf,
            size_t esize)
{
  struct jbuild b;
  yajl_handle h;
  yajl_status st;
  memset(&b, 0, sizeof b);
  b.t = xzalloc(sizeof *b.t);
  b.t->nodes.kind = ARENA_PRIVATE;
  b.t->strings.kind = ARENA_SHARED;
  h = yajl_alloc(&jb_callbacks, NULL, &b);
  if (!h)
    {
      free(b.t);
      snprintf(ebuf, esize, "out of memory");
      return -1;
    }
  /* As yajl_tree_parse. */
  yajl_config(h, yajl_allow_comments, 1);
  st = yajl_parse(h, (const unsigned char *)text, len);
  if (st == yajl_status_ok)
    st = yajl_complete_parse(h);
  if (st != yajl_status_ok || b.oom || !b.root)
    {
      if (b.oom)
        snprintf(ebuf, esize, "out of memory");
      else
        {
          unsigned char *m = yajl_get_error(h, 1, (const unsigned char *)text, len);
          snprintf(ebuf, esize, "%s", m ? (const char *)m : "parse error");
          yajl_free_error(h, m);
        }
      yajl_free(h);
      free(b.stack), free(b.keys), free(b.vals);
      jtree_free(b.t);
      return -1;
    }
  yajl_free(h);
  free(b.stack), free(b.keys), free(b.vals);
  arena_seal(&b.t->strings);
  *out = b.t;
  *root = b.root;
  return 0;
}

void
jtree_drop_nodes(struct jtree *t)
{
  if (t)
    arena_free(&t->nodes);
}

void
jtree_free(struct jtree *t)
{
  if (!t)
    return;
  arena_free(&t->nodes);
  arena_free(&t->strings);
  free(t);
}
