/* lower/kx_implies.c: whether one bound term of a guard implies another (kir.h's
 * kx_implies), what the predicate pass drops the redundant terms of a conjunction with.
 *
 * A guard conjoins the bounds of every split and merge between the loop indices and the
 * tensor's axes: a merged index below the product of its extents, each axis it unmerges
 * into below its own extent, the outer part of a split below the ceiling of extent over
 * factor. Most of them follow from another one. Three rules, each proven for C's
 * truncating division, their side conditions checked with the scope's ranges (kx_range.c):
 *   split:  x*f + r < E   implies  x < ceilDiv(E, f)      (f > 0 a constant, r, E >= 0;
 *           for constant E, also x < c with c >= ceilDiv(E, f))
 *   merge:  x < s*d1*...*dk  implies  x/d1/.../dk < s     (x >= 0, each d >= 0; the same
 *           factors in any order and grouping)
 *   modulo: x < P  implies  y % d < d                     (x >= 0, d >= 0 a factor of P)
 * A factor d of 0 makes the product 0 and x < 0 false: the implication holds vacuously,
 * and dropping the implied term also drops its division by zero.
 * Key decision: fewer terms are not only shorter kernels. NVRTC 13.0 and 13.5 crash (a
 * segmentation fault inside nvrtcCompileProgram, at random with the address layout) on
 * kernels whose tail guards carry both `x < ceilDiv(E, 4)` and `x*4 + l < E`
 * (tests/lower/test_predicate_implied.c pins one); the same kernels without the
 * implied term compile every time. */
#include "ir/checked.h"
#include "lower/kir.h"

enum { MAX_FACTORS = 16 };

static bool nonneg(KxScope *s, const KExpr *e) {
  int64_t lo, hi;
  kx_range(s, e, &lo, &hi);
  return lo >= 0;
}

static bool is_binary(const KExpr *e, IrOp op) { return e && e->kind == KX_BINARY && e->op == op; }

/* The factors of a product tree (a*b)*c as a list; false when there are more than n. */
static bool factors(const KExpr *e, const KExpr **out, int *n, int cap) {
  if (is_binary(e, OP_MUL)) return factors(e->a, out, n, cap) && factors(e->b, out, n, cap);
  if (*n >= cap) return false;
  out[(*n)++] = e;
  return true;
}

/* Removes one factor equal to e from the list; false when none is. */
static bool take_factor(const KExpr **fs, int *n, const KExpr *e) {
  for (int i = 0; i < *n; i++)
    if (kx_equal(fs[i], e)) {
      fs[i] = fs[--*n];
      return true;
    }
  return false;
}

/* x of a left side x*f + r (or x*f, f*x) with f > 0 a constant and r >= 0, else NULL. */
static const KExpr *scaled_index(KxScope *s, const KExpr *lhs, int64_t *f) {
  const KExpr *r = NULL;
  if (is_binary(lhs, OP_ADD)) {
    r = is_binary(lhs->a, OP_MUL) ? lhs->b : lhs->a;
    lhs = is_binary(lhs->a, OP_MUL) ? lhs->a : lhs->b;
  }
  if (!is_binary(lhs, OP_MUL) || (r && !nonneg(s, r))) return NULL;
  const KExpr *x = kx_is_const(lhs->b, f) ? lhs->a : kx_is_const(lhs->a, f) ? lhs->b : NULL;
  return x && *f > 0 ? x : NULL;
}

/* split: u is x*f + r < E and t is x < ceilDiv(E, f), or x < c for constants E and
 * c >= ceilDiv(E, f). */
static bool split_rule(KxScope *s, const KExpr *u, const KExpr *t) {
  int64_t f, g, e, c;
  const KExpr *x = scaled_index(s, u->a, &f);
  if (!x || !kx_equal(x, t->a) || !nonneg(s, u->b)) return false;
  if (is_binary(t->b, OP_CEILDIV)) return kx_is_const(t->b->b, &g) && g == f && kx_equal(t->b->a, u->b);
  return kx_is_const(u->b, &e) && kx_is_const(t->b, &c) && ck_ceil_div(e, f) <= c;
}

/* merge: u is x < s*d1*...*dk and t is x/d1/.../dk < s. */
static bool merge_rule(KxScope *s, const KExpr *u, const KExpr *t) {
  const KExpr *fs[MAX_FACTORS];
  int n = 0;
  if (!is_binary(t->a, OP_DIV) || !is_binary(u->b, OP_MUL) || !factors(u->b, fs, &n, MAX_FACTORS)) return false;
  const KExpr *x = t->a;
  for (; is_binary(x, OP_DIV); x = x->a)
    if (!nonneg(s, x->b) || !take_factor(fs, &n, x->b)) return false;
  return kx_equal(x, u->a) && nonneg(s, x) && n == 1 && kx_equal(fs[0], t->b);
}

/* modulo: u is x < P and t is y % d < d, d a factor of P. */
static bool modulo_rule(KxScope *s, const KExpr *u, const KExpr *t) {
  const KExpr *fs[MAX_FACTORS];
  int n = 0;
  const KExpr *m = t->a;
  if (!is_binary(m, OP_MOD) || !kx_equal(m->b, t->b) || !nonneg(s, m->b) || !nonneg(s, u->a))
    return false;
  return factors(u->b, fs, &n, MAX_FACTORS) && take_factor(fs, &n, m->b);
}

bool kx_implies(KxScope *s, const KExpr *u, const KExpr *t) {
  if (!is_binary(u, OP_LT) || !is_binary(t, OP_LT)) return false;
  return split_rule(s, u, t) || merge_rule(s, u, t) || modulo_rule(s, u, t);
}
