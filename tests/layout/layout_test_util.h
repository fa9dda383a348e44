/* tests/layout/layout_test_util.h: helpers of the layout tests: parsing that must succeed,
 * printing to strings, evaluating, and a small deterministic generator of random layouts
 * (including the "admissible" ones the algebra's laws are stated for). Header-only. */
#ifndef CFUSER_LAYOUT_TEST_UTIL_H
#define CFUSER_LAYOUT_TEST_UTIL_H

#include <cfuser/layout.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

/* ---- parsing and printing ------------------------------------------------------------ */

static inline cf_layout lt_layout(const char *text)
{
  cf_layout l;
  cf_layout_err e;
  cr_assert_eq(cf_layout_parse(text, &l, &e), CF_OK, "parse %s: %s", text, e.message);
  return l;
}

static inline cf_layout lt_tiler(const char *text)
{
  cf_layout l;
  cf_layout_err e;
  cr_assert_eq(cf_layout_parse_tiler(text, &l, &e), CF_OK, "parse %s: %s", text, e.message);
  return l;
}

static inline cf_int_tuple lt_tuple(const char *text)
{
  cf_int_tuple t;
  cf_layout_err e;
  cr_assert_eq(cf_tuple_parse(text, &t, &e), CF_OK, "parse %s: %s", text, e.message);
  return t;
}

/* Printed text in one of a few rotating buffers, so that several fit in one assertion. */
static inline char *lt_buf(void)
{
  static char bufs[8][CF_LAYOUT_TEXT_MAX];
  static int next;
  return bufs[next++ % 8];
}

static inline const char *lt_str(const cf_layout *l)
{
  char *b = lt_buf();
  cf_layout_snprint(b, CF_LAYOUT_TEXT_MAX, l);
  return b;
}

static inline const char *lt_tstr(const cf_int_tuple *t)
{
  char *b = lt_buf();
  cf_tuple_snprint(b, CF_LAYOUT_TEXT_MAX, t);
  return b;
}

static inline const char *lt_int_str(cf_tuple_int v)
{
  char *b = lt_buf();
  snprintf(b, CF_LAYOUT_TEXT_MAX, v.is_static ? "_%lld" : "%lld", (long long)v.value);
  return b;
}

static inline int64_t lt_eval(const cf_layout *l, int64_t i)
{
  int64_t v = 0;
  cf_layout_err e;
  cr_assert_eq(cf_layout_eval(l, i, &v, &e), CF_OK, "%s(%lld): %s", lt_str(l), (long long)i,
               e.message);
  return v;
}

static inline int64_t lt_size(const cf_layout *l) { return cf_layout_size(l).value; }

/* Checks `op(a, b)` succeeds and prints `want`. */
static inline void lt_expect_op(cf_layout_op op, const char *a, const char *b, const char *want)
{
  cf_layout la = lt_layout(a), lb = cf_layout_op_takes_tiler(op) ? lt_tiler(b) : lt_layout(b), r;
  cf_layout_err e;
  cr_assert_eq(cf_layout_apply(op, &la, &lb, &r, &e), CF_OK, "%s(%s, %s): %s",
               cf_layout_op_name(op), a, b, e.message);
  cr_expect_str_eq(lt_str(&r), want, "%s(%s, %s)", cf_layout_op_name(op), a, b);
}

/* Checks `op(a, b)` fails with status s and exactly the message want. */
static inline void lt_expect_op_error(cf_layout_op op, const char *a, const char *b, cf_status s,
                                      const char *want)
{
  cf_layout la = lt_layout(a), lb = cf_layout_op_takes_tiler(op) ? lt_tiler(b) : lt_layout(b), r;
  cf_layout_err e;
  cr_assert_eq(cf_layout_apply(op, &la, &lb, &r, &e), s, "%s(%s, %s)", cf_layout_op_name(op), a, b);
  cr_expect_eq(e.status, s);
  cr_expect_str_eq(e.message, want);
}

/* ---- random layouts ------------------------------------------------------------------ */

typedef struct LtRng {
  uint64_t s;
} LtRng;

static inline uint64_t lt_next(LtRng *r)
{
  r->s ^= r->s << 13;
  r->s ^= r->s >> 7;
  r->s ^= r->s << 17;
  return r->s;
}

/* Uniform in [lo, hi]. */
static inline int lt_rand(LtRng *r, int lo, int hi)
{
  return lo + (int)(lt_next(r) % (uint64_t)(hi - lo + 1));
}

/* A flat list of modes, and the text of a layout made of them with random nesting and
 * random static (`_`) marks. */
typedef struct LtModes {
  int n;
  int64_t s[16], d[16];
} LtModes;

static inline void lt_group_text(LtRng *r, const LtModes *m, int lo, int hi, int which, int depth,
                                 char *out, size_t cap, const char *marks)
{
  size_t len = strlen(out);
  if (hi - lo == 1 && (depth > 0 || lt_rand(r, 0, 2) > 0)) {
    snprintf(out + len, cap - len, "%s%lld", marks[lo * 2 + which] ? "_" : "",
             (long long)(which ? m->d[lo] : m->s[lo]));
    return;
  }
  snprintf(out + len, cap - len, "(");
  for (int k = lo; k < hi;) {
    int step = depth < 2 && hi - k > 1 ? lt_rand(r, 1, hi - k) : 1;
    if (k > lo)
      strncat(out, ",", cap - strlen(out) - 1);
    lt_group_text(r, m, k, k + step, which, depth + 1, out, cap, marks);
    k += step;
  }
  strncat(out, ")", cap - strlen(out) - 1);
}

/* The layout of modes m with a random hierarchy; shapes and strides are static with the
 * probabilities p_shape and p_stride (in %). */
static inline cf_layout lt_layout_of(LtRng *r, const LtModes *m, int p_shape, int p_stride)
{
  char marks[32], shape[512] = "", stride[512] = "", text[1100];
  for (int k = 0; k < 2 * m->n; k++)
    marks[k] = lt_rand(r, 0, 99) < (k % 2 ? p_stride : p_shape);
  uint64_t saved = r->s;
  lt_group_text(r, m, 0, m->n, 0, 0, shape, sizeof shape, marks);
  r->s = saved; /* the same grouping for the stride */
  lt_group_text(r, m, 0, m->n, 1, 0, stride, sizeof stride, marks);
  snprintf(text, sizeof text, "%s:%s", shape, stride);
  return lt_layout(text);
}

/* The flat layout (s0,s1,...):(d0,d1,...), static marks at random as above. */
static inline cf_layout lt_flat_layout(LtRng *r, const LtModes *m, int p_shape, int p_stride)
{
  char text[512] = "(";
  for (int which = 0; which < 2; which++) {
    for (int k = 0; k < m->n; k++) {
      size_t len = strlen(text);
      snprintf(text + len, sizeof text - len, "%s%s%lld", k ? "," : "",
               lt_rand(r, 0, 99) < (which ? p_stride : p_shape) ? "_" : "", (long long)(which ? m->d[k] : m->s[k]));
    }
    strncat(text, which ? ")" : "):(", sizeof text - strlen(text) - 1);
  }
  return lt_layout(text);
}

/* Any layout: 1 to 4 modes, small shapes, strides anything from 0 to 24. */
static inline LtModes lt_any_modes(LtRng *r)
{
  static const int shapes[] = {1, 2, 2, 3, 4, 4, 6, 8};
  LtModes m = {lt_rand(r, 1, 4), {0}, {0}};
  for (int k = 0; k < m.n; k++) {
    m.s[k] = shapes[lt_rand(r, 0, 7)];
    m.d[k] = lt_rand(r, 0, 24);
  }
  return m;
}

/* Splits each mode of `base` (a flat shape) into random factors, in order: the modes of a
 * refinement, with the compact column-major strides of the refined shape. */
static inline LtModes lt_refine(LtRng *r, const LtModes *base)
{
  LtModes m = {0, {0}, {0}};
  int64_t stride = 1;
  for (int k = 0; k < base->n; k++) {
    int64_t left = base->s[k];
    while (left > 1 && m.n < 15) {
      int64_t f = left;
      for (int64_t c = 2; c < left; c++)
        if (left % c == 0 && lt_rand(r, 0, 1)) {
          f = c;
          break;
        }
      m.s[m.n] = f;
      m.d[m.n++] = stride;
      stride *= f;
      left /= f;
    }
  }
  if (m.n == 0) {
    m.s[0] = 1;
    m.d[0] = 1;
    m.n = 1;
  }
  return m;
}

/* A random non-empty subset of the modes (all of them when `all`), in random order. */
static inline LtModes lt_subset(LtRng *r, const LtModes *m, bool all)
{
  LtModes s = {0, {0}, {0}};
  int idx[16];
  for (int k = 0; k < m->n; k++)
    idx[k] = k;
  for (int k = m->n - 1; k > 0; k--) {
    int j = lt_rand(r, 0, k), t = idx[k];
    idx[k] = idx[j];
    idx[j] = t;
  }
  int take = all ? m->n : lt_rand(r, 1, m->n);
  for (int k = 0; k < take; k++) {
    s.s[s.n] = m->s[idx[k]];
    s.d[s.n++] = m->d[idx[k]];
  }
  return s;
}

/* A flat shape of 1 to 3 modes from {2,3,4,6,8} (size at most 512). */
static inline LtModes lt_shape_modes(LtRng *r)
{
  static const int shapes[] = {2, 3, 4, 6, 8};
  LtModes m = {lt_rand(r, 1, 3), {0}, {0}};
  for (int k = 0; k < m.n; k++)
    m.s[k] = shapes[lt_rand(r, 0, 4)];
  return m;
}

#endif
