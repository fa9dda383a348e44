/* lower/kx_period.c: how an index expression changes when one of its variables grows by a
 * fixed step (kir.h's kx_period), for the passes that prove a property of an index by
 * evaluating it over every value of the loops around it (lower/mma_ldmatrix.c): where
 * every index involved shifts by one common drift when a variable grows by its period,
 * and the property survives such a shift, one period of the variable stands for its whole
 * extent. A K loop of a matmul (K / 32 iterations) enters a circular-buffered tile's
 * index only as (k % stages) and (k * 32 + ...) % 32, so three values stand for 2048.
 *
 * The analysis is a bottom-up walk computing, for each subexpression, an interval of its
 * values over the leaves' ranges (the caller's) and a pair (period P, drift D) with
 * e(x + P) = e(x) + D. Key decision: exact integer algebra holds only without wrapping,
 * so every interval must stay within +-KXP_LIMIT (else the analysis gives up); the rules
 * for / and % of a drifting operand need it non-negative, as C truncates toward zero. Any
 * operation of operands without drift has no drift (a function of periodic values is
 * periodic); anything the rules do not cover fails, and the caller then enumerates. */
#include <math.h> /* ir/special_math.h needs it; cf_special_gcd is what this file uses */

#include "ir/special_math.h"
#include "lower/kir.h"

#define KXP_LIMIT ((int64_t)1 << 61)      /* |value| of every subexpression; sums stay in int64 */
#define KXP_MAX_PERIOD ((int64_t)1 << 31) /* beyond any loop's extent worth reducing */

/* A subexpression's values over the ranges, and its period and drift in the variable. */
typedef struct Per {
  int64_t lo, hi, p, d;
} Per;

typedef struct Walk {
  const KExpr *var;
  KxRangeFn range;
  void *user;
} Walk;

static bool in_limit(int64_t lo, int64_t hi) { return lo <= hi && lo >= -KXP_LIMIT && hi <= KXP_LIMIT; }

static int64_t abs64(int64_t x) { return x < 0 ? -x : x; }

/* x * y where |x * y| <= KXP_LIMIT (both operands within it). */
static bool mul_ok(int64_t x, int64_t y, int64_t *r) {
  if (x && abs64(y) > KXP_LIMIT / abs64(x)) return false;
  *r = x * y;
  return true;
}

/* The product's interval: the extremes of the corners. */
static bool mul_interval(const Per *a, const Per *b, Per *r) {
  int64_t c[4];
  if (!mul_ok(a->lo, b->lo, &c[0]) || !mul_ok(a->lo, b->hi, &c[1]) || !mul_ok(a->hi, b->lo, &c[2]) ||
      !mul_ok(a->hi, b->hi, &c[3]))
    return false;
  r->lo = r->hi = c[0];
  for (int i = 1; i < 4; i++) r->lo = c[i] < r->lo ? c[i] : r->lo, r->hi = c[i] > r->hi ? c[i] : r->hi;
  return true;
}

/* The interval of a op b, from its operands' (false: not bounded by these rules). */
static bool interval(IrOp op, const Per *a, const Per *b, Per *r) {
  int64_t am = abs64(a->lo) > abs64(a->hi) ? abs64(a->lo) : abs64(a->hi);
  int64_t bm = abs64(b->lo) > abs64(b->hi) ? abs64(b->lo) : abs64(b->hi);
  bool bconst = b->lo == b->hi, nonzero = b->lo > 0 || b->hi < 0;
  switch (op) {
  case OP_ADD: r->lo = a->lo + b->lo, r->hi = a->hi + b->hi; break;
  case OP_SUB: r->lo = a->lo - b->hi, r->hi = a->hi - b->lo; break;
  case OP_MUL: if (!mul_interval(a, b, r)) return false; break;
  case OP_DIV:
  case OP_CEILDIV: /* monotone in a for a positive constant divisor; else |a / b| <= |a| + 1 */
    if (bconst && b->lo > 0) ir_int_apply(op, a->lo, b->lo, &r->lo), ir_int_apply(op, a->hi, b->lo, &r->hi);
    else if (nonzero) r->lo = -am - 1, r->hi = am + 1;
    else return false;
    break;
  case OP_MOD:
    if (!nonzero) return false;
    r->hi = am < bm - 1 ? am : bm - 1, r->lo = a->lo >= 0 ? 0 : -r->hi;
    break;
  case OP_MAX: r->lo = a->lo > b->lo ? a->lo : b->lo, r->hi = a->hi > b->hi ? a->hi : b->hi; break;
  case OP_MIN: r->lo = a->lo < b->lo ? a->lo : b->lo, r->hi = a->hi < b->hi ? a->hi : b->hi; break;
  case OP_XOR:
    if (a->lo < 0 || b->lo < 0) return false;
    r->lo = 0, r->hi = 1;
    while (r->hi < am || r->hi < bm) r->hi = 2 * r->hi + 1;
    break;
  case OP_EQ: case OP_NE: case OP_LT: case OP_LE: case OP_GT: case OP_GE: case OP_AND: r->lo = 0, r->hi = 1; break;
  default: return false;
  }
  return in_limit(r->lo, r->hi);
}

/* Brings (p1, d1) and (p2, d2) to their common period p, scaling the drifts. */
static bool unify(int64_t p1, int64_t d1, int64_t p2, int64_t d2, int64_t *p, int64_t *e1, int64_t *e2) {
  int64_t g = cf_special_gcd(p1, p2), s1 = p2 / g, s2 = p1 / g;
  if (s1 > KXP_MAX_PERIOD / p1) return false;
  *p = p1 * s1;
  return mul_ok(d1, s1, e1) && mul_ok(d2, s2, e2);
}

/* Period and drift of a / k or a % k, k a positive constant, where a (at least lo) has
 * period p and drift d: a shift of a by a multiple m of k moves a / k by m and leaves
 * a % k, where a stays non-negative. */
static bool div_mod_period(IrOp op, int64_t lo, int64_t p, int64_t d, int64_t k, Per *r) {
  if (!d) return r->p = p, r->d = 0, true;
  if (lo < 0) return false;
  int64_t g = cf_special_gcd(d, k), step = k / g;
  if (step > KXP_MAX_PERIOD / p) return false;
  r->p = p * step, r->d = op == OP_DIV ? d / g : 0;
  return true;
}

/* Period and drift of a op b (r's interval already set). */
static bool binary_period(IrOp op, const Per *a, const Per *b, Per *r) {
  int64_t da, db;
  if (!unify(a->p, a->d, b->p, b->d, &r->p, &da, &db)) return false;
  bool bconst = b->lo == b->hi && !db, aconst = a->lo == a->hi && !da;
  switch (op) {
  case OP_ADD: r->d = da + db; return in_limit(r->d, r->d);
  case OP_SUB: r->d = da - db; return in_limit(r->d, r->d);
  case OP_MUL:
    if (bconst) return mul_ok(da, b->lo, &r->d);
    if (aconst) return mul_ok(db, a->lo, &r->d);
    break;
  case OP_DIV:
  case OP_MOD:
    if (bconst && b->lo > 0) return div_mod_period(op, a->lo, r->p, da, b->lo, r);
    break;
  case OP_MAX: case OP_MIN: /* both operands shifted alike: so is the extreme */
    if (da == db) return r->d = da, true;
    return false;
  case OP_EQ: case OP_NE: case OP_LT: case OP_LE: case OP_GT: case OP_GE: /* a - b has no drift */
    if (da == db) return r->d = 0, true;
    return false;
  default: break;
  }
  r->d = 0;
  return !da && !db;
}

static bool walk(const Walk *w, const KExpr *e, Per *r);

/* c ? x : y: the condition without drift, both branches with the same one. */
static bool walk_select(const Walk *w, const KExpr *e, Per *r) {
  Per c, x, y;
  int64_t p, dx, dy, dc;
  if (!walk(w, e->a, &c) || !walk(w, e->b, &x) || !walk(w, e->c, &y) || c.d) return false;
  if (!unify(x.p, x.d, y.p, y.d, &p, &dx, &dy) || dx != dy || !unify(p, dx, c.p, 0, &r->p, &r->d, &dc)) return false;
  r->lo = x.lo < y.lo ? x.lo : y.lo, r->hi = x.hi > y.hi ? x.hi : y.hi;
  return true;
}

static bool walk(const Walk *w, const KExpr *e, Per *r) {
  Per a, b;
  r->p = 1, r->d = 0;
  switch (e->kind) {
  case KX_CONST: r->lo = r->hi = e->value; return in_limit(r->lo, r->hi);
  case KX_BINARY:
    return walk(w, e->a, &a) && walk(w, e->b, &b) && interval(e->op, &a, &b, r) && binary_period(e->op, &a, &b, r);
  case KX_SELECT: return walk_select(w, e, r);
  case KX_BLOCK_ALL: return false;
  default:
    if (!w->range(w->user, e, &r->lo, &r->hi) || !in_limit(r->lo, r->hi)) return false;
    r->d = kx_equal(e, w->var);
    return true;
  }
}

bool kx_period(const KExpr *const *es, int n, const KExpr *var, KxRangeFn range, void *user, int64_t *period,
               int64_t *drift) {
  Walk w = {var, range, user};
  int64_t p = 1, d = 0;
  for (int i = 0; i < n; i++) {
    Per r;
    int64_t d0, d1;
    if (!walk(&w, es[i], &r) || !unify(p, d, r.p, r.d, &p, &d0, &d1) || (i && d0 != d1)) return false;
    d = d1;
  }
  *period = p, *drift = d;
  return true;
}
