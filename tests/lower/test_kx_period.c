/* kx_period (lower/kx_period.c): the period and drift of index expressions in one
 * variable, exactly for the forms a circular-buffered, swizzled tile's index takes (a K
 * loop inside % stages and % tile), failures where a rule does not hold (a drift through
 * ^, % of a value that may be negative, a product of drifting values, a value beyond the
 * bound), the common drift of several expressions; and a brute-force check over random
 * expressions that every answer it gives holds at every point of the ranges. */
#include <criterion/criterion.h>

#include "lower/lower.h"
#include "test_util.h"

static Arena *A;
static void setup(void) { A = arena_create(); }
static void teardown(void) { arena_destroy(A); }
TestSuite(kx_period, .init = setup, .fini = teardown);

enum { EX = 48, EY = 6, ETID = 4 };

/* x in [0, EX), y in [0, EY), threadIdx.x in [0, ETID); nothing else is known. */
static bool range(void *user, const KExpr *e, int64_t *lo, int64_t *hi) {
  (void)user;
  if (e->kind == KX_VAR) return *lo = 0, *hi = (e->name[0] == 'x' ? EX : EY) - 1, true;
  if (e->kind == KX_THREAD && e->pt == CF_PT_TIDX && !e->is_dim) return *lo = 0, *hi = ETID - 1, true;
  return false;
}

static KExpr *X(void) { return kx_var(A, "x"); }
static KExpr *Y(void) { return kx_var(A, "y"); }
static KExpr *C(int64_t v) { return kx_const(A, v); }
static KExpr *B(IrOp op, KExpr *a, KExpr *b) { return kx_bin(A, op, a, b); }

/* kx_period of es in x: true with (period, drift), or false. */
static bool period_of(int n, KExpr **es, int64_t *p, int64_t *d) {
  return kx_period((const KExpr *const *)es, n, X(), range, NULL, p, d);
}

static const char *const names[] = {"T0"};

static void expect_period(KExpr *e, int64_t want_p, int64_t want_d) {
  int64_t p = -1, d = -1;
  StrBuf b = {0};
  kx_print(&b, e, names);
  cr_expect(period_of(1, &e, &p, &d), "%s: no period", b.data);
  cr_expect(p == want_p && d == want_d, "%s: period %lld drift %lld, not %lld %lld", b.data, (long long)p,
            (long long)d, (long long)want_p, (long long)want_d);
  sb_free(&b);
}

static void expect_none(KExpr *e) {
  int64_t p, d;
  StrBuf b = {0};
  kx_print(&b, e, names);
  cr_expect_not(period_of(1, &e, &p, &d), "%s: period %lld drift %lld claimed", b.data, (long long)p, (long long)d);
  sb_free(&b);
}

Test(kx_period, circular_buffer_and_tile_indices) {
  KExpr *tile = B(OP_MOD, B(OP_ADD, B(OP_MUL, X(), C(32)), Y()), C(32)); /* (x * 32 + y) % 32 */
  expect_period(tile, 1, 0);
  expect_period(B(OP_ADD, B(OP_MUL, B(OP_MOD, X(), C(3)), C(4096)), tile), 3, 0);
  expect_period(B(OP_ADD, B(OP_MUL, X(), C(8)), Y()), 1, 8);
  expect_period(B(OP_DIV, X(), C(4)), 4, 1);
  expect_period(B(OP_DIV, B(OP_ADD, B(OP_MUL, X(), C(6)), Y()), C(4)), 2, 3);
  expect_period(B(OP_MOD, B(OP_MOD, X(), C(4)), C(6)), 4, 0);
  expect_period(B(OP_XOR, B(OP_MOD, X(), C(4)), Y()), 4, 0);                  /* a swizzle's XOR */
  expect_period(B(OP_LT, B(OP_MUL, X(), C(4)), B(OP_ADD, B(OP_MUL, X(), C(4)), Y())), 1, 0);
  expect_period(kx_select(A, B(OP_LT, Y(), C(3)), X(), B(OP_ADD, X(), C(8))), 1, 1);
  expect_period(B(OP_MAX, B(OP_ADD, X(), Y()), B(OP_ADD, X(), C(2))), 1, 1);
  expect_period(B(OP_MUL, Y(), C(7)), 1, 0);                                   /* x not read */
}

Test(kx_period, refusals) {
  expect_none(B(OP_XOR, X(), C(1)));                        /* a drift through ^ */
  expect_none(B(OP_MOD, B(OP_SUB, X(), C(5)), C(3)));       /* % of a value that may be negative */
  expect_none(B(OP_MUL, X(), X()));
  expect_none(B(OP_MUL, X(), Y()));
  expect_none(B(OP_LT, X(), C(3)));                         /* x against a constant */
  expect_none(kx_select(A, B(OP_LT, X(), C(3)), C(0), C(1)));
  expect_none(kx_select(A, B(OP_LT, Y(), C(3)), X(), C(1))); /* branches that drift apart */
  expect_none(B(OP_MUL, B(OP_MUL, X(), C((int64_t)1 << 40)), C((int64_t)1 << 30))); /* beyond the bound */
  expect_none(B(OP_ADD, X(), kx_param_size(A, 0, 0)));       /* a leaf without a range */
  expect_none(B(OP_DIV, C(64), B(OP_MOD, X(), C(4))));       /* a divisor that may be zero */
}

Test(kx_period, common_drift_of_several_expressions) {
  int64_t p, d;
  KExpr *same[] = {B(OP_ADD, B(OP_MUL, X(), C(8)), Y()), B(OP_MUL, X(), C(8))};
  cr_expect(period_of(2, same, &p, &d) && p == 1 && d == 8);
  KExpr *apart[] = {B(OP_MUL, X(), C(8)), B(OP_MUL, X(), C(16))};
  cr_expect_not(period_of(2, apart, &p, &d));
  KExpr *lcm[] = {B(OP_MOD, X(), C(3)), B(OP_MOD, X(), C(4)), B(OP_MOD, B(OP_ADD, B(OP_MUL, X(), C(2)), Y()), C(4))};
  cr_expect(period_of(3, lcm, &p, &d) && p == 12 && d == 0, "period %lld drift %lld", (long long)p, (long long)d);
}

/* ---- brute force ------------------------------------------------------------------------ */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}

static KExpr *random_expr(int depth) {
  static const int64_t consts[] = {1, 2, 3, 4, 6, 8, 16, 32, 0, -1, -3};
  static const IrOp ops[] = {OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MOD, OP_MOD, OP_DIV, OP_CEILDIV,
                             OP_MAX, OP_MIN, OP_LT, OP_EQ, OP_XOR, OP_AND, OP_ADD, OP_MUL};
  unsigned r = (unsigned)(next() % 16);
  if (depth == 0 || r < 3) {
    unsigned leaf = (unsigned)(next() % 4);
    return leaf == 0 ? X() : leaf == 1 ? Y() : leaf == 2 ? kx_thread(A, CF_PT_TIDX, false)
                                                        : C(consts[next() % (sizeof consts / sizeof consts[0])]);
  }
  if (r == 3) return kx_select(A, random_expr(depth - 1), random_expr(depth - 1), random_expr(depth - 1));
  IrOp op = ops[next() % (sizeof ops / sizeof ops[0])];
  KExpr *b = (op == OP_DIV || op == OP_MOD || op == OP_MUL) && next() % 2 ? C(consts[next() % 8]) : random_expr(depth - 1);
  return kx_bin(A, op, random_expr(depth - 1), b);
}

/* e at (x, y, tid), strict as mma_ldmatrix.c's programs (both branches of a select). */
static bool eval(const KExpr *e, int64_t x, int64_t y, int64_t tid, int64_t *out) {
  int64_t a, b, c;
  switch (e->kind) {
  case KX_CONST: *out = e->value; return true;
  case KX_VAR: *out = e->name[0] == 'x' ? x : y; return true;
  case KX_THREAD: *out = tid; return true;
  case KX_BINARY: return eval(e->a, x, y, tid, &a) && eval(e->b, x, y, tid, &b) && ir_int_apply(e->op, a, b, out);
  case KX_SELECT:
    if (!eval(e->a, x, y, tid, &c) || !eval(e->b, x, y, tid, &a) || !eval(e->c, x, y, tid, &b)) return false;
    *out = c ? a : b;
    return true;
  default: cr_assert_fail("unexpected leaf"); return false;
  }
}

/* Whether (p, d) holds for e at every point: defined at x exactly where at x + p, and
 * shifted by d; false with a message naming the first point where it does not. */
static bool holds(const KExpr *e, int64_t p, int64_t d, char *msg, size_t len) {
  for (int64_t x = 0; x + p < EX; x++)
    for (int64_t y = 0; y < EY; y++)
      for (int64_t t = 0; t < ETID; t++) {
        int64_t v0 = 0, v1 = 0;
        bool ok0 = eval(e, x, y, t, &v0), ok1 = eval(e, x + p, y, t, &v1);
        if (ok0 != ok1 || v1 != v0 + d) {
          StrBuf b = {0};
          kx_print(&b, e, names);
          snprintf(msg, len, "%s: period %lld drift %lld fails at x=%lld y=%lld t=%lld: %lld then %lld", b.data,
                   (long long)p, (long long)d, (long long)x, (long long)y, (long long)t, (long long)v0,
                   (long long)v1);
          sb_free(&b);
          return false;
        }
      }
  return true;
}

/* Every claimed (period, drift) holds at every point; the claims must be many, and many
 * must have a period between 1 and the extent, or a drift (what the rules are for). */
Test(kx_period, every_claim_holds_by_brute_force) {
  int claims = 0, periods = 0, drifts = 0;
  for (int n = 0; n < 20000; n++) {
    KExpr *e = random_expr(4);
    int64_t p, d;
    char msg[1024];
    if (period_of(1, &e, &p, &d)) {
      claims++, periods += p > 1 && p < EX, drifts += d != 0;
      cr_assert(holds(e, p, d, msg, sizeof msg), "%s", msg);
    }
    arena_destroy(A), A = arena_create(); /* the trees stay few */
  }
  cr_log_info("%d claims, %d with a period in (1, %d), %d with a drift", claims, periods, EX, drifts);
  cr_expect_geq(claims, 5000, "%d claims", claims);
  cr_expect_geq(periods, 150, "%d claims with a period", periods);
  cr_expect_geq(drifts, 1000, "%d claims with a drift", drifts);
}
