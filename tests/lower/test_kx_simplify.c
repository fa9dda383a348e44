/* kx_simplify (lower/kx_simplify.c) and the ranges it reads (lower/kx_range.c): each rule
 * fires where its side conditions hold and not where one fails (a dividend that may be
 * negative, a remainder beyond the divisor), a comparison the launch implies is decided,
 * block votes are kept, scopes are honoured after a pop; and a property test: random
 * expressions over random ranges, evaluated by kx_eval before and after simplification at
 * random points of the ranges, are equal wherever the original is defined. */
#include <criterion/criterion.h>

#include "lower/lower.h"
#include "test_util.h"

static Arena *A;
static void setup(void) { A = arena_create(); }
static void teardown(void) { arena_destroy(A); }
TestSuite(kx_simplify, .init = setup, .fini = teardown);

static const char *const names[] = {"T0"};

static KExpr *V(const char *n) { return kx_var(A, n); }
static KExpr *C(int64_t v) { return kx_const(A, v); }
static KExpr *B(IrOp op, KExpr *a, KExpr *b) { return kx_bin(A, op, a, b); }
static KExpr *TID(void) { return kx_thread(A, CF_PT_TIDX, false); }
static KExpr *BIDY(void) { return kx_thread(A, CF_PT_BIDY, false); }
static KExpr *SIZE(int axis) { return kx_param_size(A, 0, axis); }

static char *str(const KExpr *e) {
  StrBuf b = {0};
  kx_print(&b, e, names);
  return sb_take(&b);
}

/* A scope where x in [xlo, xhi], y in [0, 9], threadIdx.x in [0, 31] below 32, blockIdx.y
 * below ceilDiv(T0.logical_size[0], 128). */
static KxScope *scope(int64_t xlo, int64_t xhi) {
  KxScope *s = kx_scope_new(A);
  kx_scope_push(s, V("x"), xlo, xhi, NULL);
  kx_scope_push(s, V("y"), 0, 9, C(10));
  kx_scope_push(s, TID(), 0, 31, C(32));
  kx_scope_push(s, BIDY(), 0, INT64_MAX, B(OP_CEILDIV, SIZE(0), C(128)));
  return s;
}

static void expect_simp(KxScope *s, KExpr *e, const char *want) {
  char *before = str(e), *after = str(kx_simplify(s, e));
  cr_expect_str_eq(after, want, "%s simplified to %s, not %s", before, after, want);
  free(before), free(after);
}

Test(kx_simplify, division_and_modulo_by_constants) {
  KxScope *s = scope(0, 127);
  KExpr *x = V("x"), *y = V("y");
  expect_simp(s, B(OP_MOD, B(OP_MOD, x, C(64)), C(128)), "(x % 64)");      /* 0 <= x % 64 < 128 */
  expect_simp(s, B(OP_DIV, x, C(128)), "0");
  expect_simp(s, B(OP_DIV, B(OP_DIV, B(OP_DIV, V("z"), C(8)), C(4)), C(2)), "(z / 64)"); /* any z */
  expect_simp(s, B(OP_DIV, B(OP_MOD, x, C(32)), C(8)), "((x / 8) % 4)");
  expect_simp(s, B(OP_MOD, B(OP_MOD, V("z"), C(32)), C(8)), "(z % 8)");
  KExpr *tile = B(OP_ADD, B(OP_MUL, y, C(128)), x);                       /* y * 128 + x */
  expect_simp(s, B(OP_DIV, tile, C(32)), "((y * 4) + (x / 32))");
  expect_simp(s, B(OP_MOD, tile, C(128)), "x");
  expect_simp(s, B(OP_DIV, B(OP_ADD, tile, C(300)), C(128)), "((y + 2) + ((x + 44) / 128))");
  expect_simp(s, B(OP_MOD, B(OP_ADD, B(OP_MUL, y, C(130)), x), C(128)), "(((y * 2) + x) % 128)");
  KExpr *tid = B(OP_ADD, B(OP_MUL, B(OP_ADD, B(OP_MUL, y, C(2)), V("w")), C(32)), TID()); /* (y*2 + w)*32 + tid */
  kx_scope_push(s, V("w"), 0, 1, NULL);
  expect_simp(s, B(OP_DIV, B(OP_DIV, tid, C(8)), C(4)), "((y * 2) + w)");
}

Test(kx_simplify, refused_where_a_side_condition_fails) {
  KxScope *s = scope(-1, 127); /* x may be negative */
  KExpr *x = V("x"), *y = V("y");
  expect_simp(s, B(OP_MOD, B(OP_ADD, B(OP_MUL, y, C(128)), x), C(128)), "(((y * 128) + x) % 128)");
  expect_simp(s, B(OP_DIV, B(OP_ADD, B(OP_MUL, y, C(128)), x), C(32)), "(((y * 128) + x) / 32)");
  expect_simp(s, B(OP_DIV, B(OP_MOD, x, C(32)), C(8)), "((x % 32) / 8)");
  expect_simp(s, B(OP_MOD, x, C(128)), "x"); /* |x| < 128: x % 128 is x, negative or not */
  s = scope(0, 128); /* x may reach the divisor */
  expect_simp(s, B(OP_MOD, x, C(128)), "(x % 128)");
  expect_simp(s, B(OP_DIV, x, C(128)), "(x / 128)");
  expect_simp(s, B(OP_MOD, B(OP_MOD, V("z"), C(12)), C(8)), "((z % 12) % 8)"); /* 8 does not divide 12 */
  expect_simp(s, B(OP_DIV, V("z"), V("y")), "(z / y)");                         /* y may be 0 */
}

Test(kx_simplify, digits_of_a_merge_join) {
  KxScope *s = scope(0, 100000);
  KExpr *x = V("x"), *m = B(OP_MOD, x, C(128));
  /* (x / 128) * 128 + ((x % 128) / 32) * 32 + (x % 128) % 32 */
  KExpr *sum = B(OP_ADD, B(OP_ADD, B(OP_MUL, B(OP_DIV, x, C(128)), C(128)), B(OP_MUL, B(OP_DIV, m, C(32)), C(32))),
                 B(OP_MOD, m, C(32)));
  expect_simp(s, sum, "x");
  /* ((x / 8) % 2) * 8 + x % 8: x % 16 for x >= 0 */
  expect_simp(s, B(OP_ADD, B(OP_MUL, B(OP_MOD, B(OP_DIV, x, C(8)), C(2)), C(8)), B(OP_MOD, x, C(8))), "(x % 16)");
  kx_scope_push(s, x, -5, 5, NULL); /* no digits of a negative x: x / 8 is 0, x % 8 is x */
  expect_simp(s, B(OP_ADD, B(OP_MUL, B(OP_MOD, B(OP_DIV, x, C(8)), C(2)), C(8)), B(OP_MOD, x, C(8))), "x");
  expect_simp(s, B(OP_ADD, B(OP_MUL, B(OP_MOD, B(OP_DIV, V("z"), C(8)), C(2)), C(8)), B(OP_MOD, V("z"), C(8))),
              "((((z / 8) % 2) * 8) + (z % 8))"); /* z may be negative */
  expect_simp(s, B(OP_SUB, B(OP_ADD, V("z"), C(8)), B(OP_ADD, V("z"), C(3))), "5");
}

Test(kx_simplify, comparisons_the_ranges_and_the_launch_decide) {
  KxScope *s = scope(0, 127);
  expect_simp(s, B(OP_LT, BIDY(), B(OP_CEILDIV, SIZE(0), C(128))), "1");
  expect_simp(s, B(OP_LT, BIDY(), B(OP_CEILDIV, SIZE(0), C(64))), "(blockIdx.y < ceilDiv(T0.logical_size[0], 64))");
  expect_simp(s, B(OP_LT, V("x"), C(128)), "1");
  expect_simp(s, B(OP_GE, V("x"), C(128)), "0");
  expect_simp(s, B(OP_LT, V("x"), C(100)), "(x < 100)");
  expect_simp(s, B(OP_LT, B(OP_ADD, V("y"), C(2)), C(3)), "(y < 1)");
  expect_simp(s, B(OP_LT, B(OP_ADD, V("y"), C(2)), C(30)), "1");
  expect_simp(s, B(OP_AND, B(OP_LT, V("x"), C(128)), B(OP_LT, V("x"), SIZE(1))), "(x < T0.logical_size[1])");
  expect_simp(s, B(OP_AND, B(OP_LT, V("x"), C(100)), B(OP_LT, V("y"), C(10))), "(x < 100)");
  expect_simp(s, B(OP_MIN, V("y"), B(OP_ADD, V("x"), C(10))), "y");
  expect_simp(s, B(OP_MAX, V("y"), B(OP_ADD, V("x"), C(10))), "(x + 10)");
  expect_simp(s, B(OP_EQ, B(OP_MOD, V("x"), C(2)), C(1)), "(x % 2)");
  expect_simp(s, B(OP_LT, B(OP_MUL, V("x"), C(4)), C(12)), "(x < 3)");
  expect_simp(s, B(OP_LE, B(OP_MUL, V("x"), C(4)), C(13)), "(x <= 3)");
  expect_simp(s, B(OP_EQ, B(OP_MUL, V("x"), C(4)), C(6)), "0");
  KExpr *row = B(OP_ADD, B(OP_MUL, B(OP_ADD, B(OP_MUL, V("z"), C(128)), V("x")), C(4)), C(3)); /* (z*128 + x)*4 + 3 */
  expect_simp(s, B(OP_LT, row, C(33000)), "(((z * 128) + x) < 8250)");
  KExpr *n4 = B(OP_ADD, B(OP_MUL, SIZE(1), C(4)), C(3));
  expect_simp(s, B(OP_LT, B(OP_DIV, n4, C(1000)), C(33)), "(T0.logical_size[1] < 8250)");
  expect_simp(s, B(OP_LT, B(OP_DIV, row, C(1000)), C(33)), "((((((z * 128) + x) * 4) + 3) / 1000) < 33)"); /* z < 0? */
  KExpr *rowi = B(OP_ADD, B(OP_MUL, B(OP_ADD, B(OP_MUL, V("z"), C(128)), V("x")), C(4)), TID()); /* ... * 4 + tid */
  kx_scope_push(s, TID(), 0, 3, NULL);
  expect_simp(s, B(OP_LT, rowi, C(33000)), "(((z * 128) + x) < 8250)");
  expect_simp(s, B(OP_LE, rowi, C(32999)), "(((z * 128) + x) < 8250)");
  expect_simp(s, B(OP_GT, rowi, C(32999)), "(((z * 128) + x) >= 8250)");
  expect_simp(s, B(OP_LT, rowi, C(33001)), "(((((z * 128) + x) * 4) + threadIdx.x) < 33001)"); /* 4 does not divide */
  kx_scope_pop(s);
  KExpr *zl = B(OP_LT, V("z"), C(5));
  expect_simp(s, B(OP_AND, zl, B(OP_AND, B(OP_LT, V("x"), C(100)), zl)), "((z < 5) && (x < 100))");
}

Test(kx_simplify, selects) {
  KxScope *s = scope(0, 127);
  KExpr *bit = B(OP_EQ, B(OP_MOD, B(OP_DIV, TID(), C(8)), C(2)), C(1));
  expect_simp(s, kx_select(A, bit, C(0), C(0)), "0");
  expect_simp(s, B(OP_DIV, kx_select(A, bit, C(8), C(0)), C(8)), "((threadIdx.x / 8) % 2)");
  expect_simp(s, B(OP_MOD, kx_select(A, bit, C(8), C(0)), C(8)), "0");
  /* a chain over threadIdx.x / 8 in [0, 3]: 0, 8, 0, 8 */
  KExpr *q = B(OP_DIV, TID(), C(8));
  KExpr *chain = kx_select(A, B(OP_EQ, q, C(3)), C(8),
                           kx_select(A, B(OP_EQ, q, C(2)), C(0), kx_select(A, B(OP_EQ, q, C(1)), C(8), C(0))));
  expect_simp(s, chain, "(((threadIdx.x / 8) % 2) * 8)");
  KExpr *up = kx_select(A, B(OP_EQ, q, C(3)), C(8), kx_select(A, B(OP_EQ, q, C(2)), C(8), C(0)));
  expect_simp(s, up, "((threadIdx.x / 16) * 8)"); /* 0, 0, 8, 8 */
}

Test(kx_simplify, votes_are_kept) {
  KxScope *s = scope(0, 127);
  KExpr *vote = kx_block_all(A, B(OP_LT, TID(), C(16)));
  expect_simp(s, kx_select(A, vote, V("y"), V("y")), "(__syncthreads_and((threadIdx.x < 16)) ? y : y)");
  expect_simp(s, B(OP_AND, B(OP_LT, V("x"), C(128)), vote), "__syncthreads_and((threadIdx.x < 16))");
  expect_simp(s, kx_block_all(A, B(OP_LT, TID(), C(32))), "__syncthreads_and((threadIdx.x < 32))");
  expect_simp(s, B(OP_AND, vote, B(OP_LT, V("x"), C(128))), "__syncthreads_and((threadIdx.x < 16))");
}

Test(kx_simplify, ranges_end_with_their_scope) {
  KxScope *s = kx_scope_new(A);
  KExpr *e = B(OP_MOD, V("i"), C(8));
  kx_scope_push(s, V("i"), 0, 7, C(8));
  expect_simp(s, e, "i");
  kx_scope_pop(s);
  expect_simp(s, e, "(i % 8)");
  kx_scope_push(s, V("i"), 0, 0, C(1));
  expect_simp(s, B(OP_ADD, B(OP_MUL, V("i"), C(4)), V("j")), "j");
  int64_t lo, hi;
  kx_range(s, B(OP_MUL, SIZE(0), C(4)), &lo, &hi);
  cr_expect(lo == 0 && hi == INT64_MAX, "size * 4 in [%lld, %lld]", (long long)lo, (long long)hi);
  kx_range(s, B(OP_MUL, kx_param_stride(A, 0, 0), C(4)), &lo, &hi);
  cr_expect(lo == INT64_MIN && hi == INT64_MAX, "stride * 4 in [%lld, %lld]", (long long)lo, (long long)hi);
  kx_scope_push(s, V("k"), 0, (int64_t)1 << 62, NULL);
  kx_range(s, B(OP_MUL, V("k"), C(4)), &lo, &hi); /* may wrap: unknown */
  cr_expect(lo == INT64_MIN && hi == INT64_MAX, "k * 4 in [%lld, %lld]", (long long)lo, (long long)hi);
}

/* ---- the property test ------------------------------------------------------------------ */

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t next(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}
static int64_t pick(int64_t lo, int64_t hi) { return lo + (int64_t)(next() % (uint64_t)(hi - lo + 1)); }

enum { NVARS = 4, CASES = 4000, POINTS = 24 };
static const char *const vars[NVARS] = {"x", "y", "z", "w"};

/* One case's ranges and one point within them. */
typedef struct Case {
  int64_t lo[NVARS], hi[NVARS];
  int64_t tid_dim;
  int64_t var[NVARS], tid, bid, size[2], stride[2];
} Case;

static bool leaf_value(void *user, const KExpr *e, int64_t *out) {
  const Case *c = user;
  if (e->kind == KX_THREAD) return *out = e->is_dim ? (e->pt == CF_PT_TIDX ? c->tid_dim : 1) : e->pt == CF_PT_TIDX ? c->tid : c->bid, true;
  for (int i = 0; i < NVARS; i++)
    if (!strcmp(e->name, vars[i])) return *out = c->var[i], true;
  return false;
}

/* A random expression, |value| <= *mag at every point (so nothing wraps: products stay
 * below 2^50), shaped like indices: sums of scaled terms, / and % by constants (mostly
 * positive), nested, selects and comparisons. */
static KExpr *gen(int depth, int64_t *mag) {
  static const int64_t divs[] = {2, 3, 4, 8, 16, 32, 128, 5, 1, -4, 64, 6};
  unsigned r = (unsigned)(next() % 21);
  if (depth == 0 || r < 4) {
    unsigned leaf = (unsigned)(next() % 9);
    *mag = 300;
    if (leaf < 4) return V(vars[leaf]);
    if (leaf == 4) return TID();
    if (leaf == 5) return kx_thread(A, CF_PT_BIDY, false);
    if (leaf == 6) return SIZE((int)(next() % 2));
    if (leaf == 7) return *mag = 20, kx_param_stride(A, 0, 0);
    int64_t v = pick(-4, 40);
    return *mag = v < 0 ? -v : v, C(v);
  }
  int64_t ma, mb;
  KExpr *a = gen(depth - 1, &ma);
  int64_t d = divs[next() % (sizeof divs / sizeof divs[0])];
  switch (r) {
  case 4: case 5: case 6: {
    KExpr *b = gen(depth - 1, &mb);
    *mag = ma + mb;
    return B(r == 6 ? OP_SUB : OP_ADD, a, b);
  }
  case 7: case 8:
    *mag = ma * (d < 0 ? -d : d);
    return *mag < ((int64_t)1 << 50) ? B(OP_MUL, a, C(d)) : (*mag = ma, a);
  case 9: *mag = ma; return B(OP_DIV, a, C(d));
  case 10: *mag = ma; return B(OP_MOD, a, C(d));
  case 11: { /* (a * d + b) / d or % d */
    KExpr *b = gen(depth - 1, &mb);
    *mag = ma * (d < 0 ? -d : d) + mb;
    if (*mag >= ((int64_t)1 << 50)) return *mag = ma, a;
    return B(next() % 2 ? OP_DIV : OP_MOD, B(OP_ADD, B(OP_MUL, a, C(d)), b), C(d));
  }
  case 12: { /* digits: (a / d) * d + a % d, or ((a / d) % 2) * d + a % d */
    *mag = 3 * ma + 3 * (d < 0 ? -d : d);
    KExpr *q = B(OP_DIV, a, C(d));
    return B(OP_ADD, B(OP_MUL, next() % 2 ? q : B(OP_MOD, q, C(2)), C(d)), B(OP_MOD, a, C(d)));
  }
  case 13: { /* a select, its condition a comparison */
    int64_t mc;
    KExpr *c = B(next() % 2 ? OP_EQ : OP_LT, gen(depth - 1, &mc), C(pick(0, 8)));
    KExpr *b = gen(depth - 1, &mb);
    *mag = ma > mb ? ma : mb;
    return kx_select(A, c, a, next() % 4 ? b : a);
  }
  case 14: {
    static const IrOp cmp[] = {OP_LT, OP_LE, OP_GT, OP_GE, OP_EQ, OP_NE, OP_AND};
    KExpr *b = next() % 2 ? C(pick(-2, 64)) : gen(depth - 1, &mb);
    *mag = 1;
    return B(cmp[next() % 7], a, b);
  }
  case 15: {
    KExpr *b = gen(depth - 1, &mb);
    *mag = ma > mb ? ma : mb;
    return B(next() % 2 ? OP_MIN : OP_MAX, a, b);
  }
  case 16: *mag = ma + 1; return B(OP_CEILDIV, a, C(d));
  case 17: { /* a product of two values: one leaf, so it stays small */
    KExpr *b = gen(0, &mb);
    *mag = ma * mb;
    return *mag < ((int64_t)1 << 50) ? B(OP_MUL, a, b) : (*mag = ma, a);
  }
  case 18: { /* / or % by a value that may be 0 */
    KExpr *b = gen(0, &mb);
    *mag = ma;
    return B(next() % 2 ? OP_DIV : OP_MOD, a, b);
  }
  case 19: { /* a repeated conjunct, or a quotient compared */
    KExpr *c = B(OP_LT, a, C(pick(-3, 40)));
    *mag = 1;
    static const IrOp cmp[] = {OP_LT, OP_LE, OP_GT, OP_GE, OP_EQ, OP_NE};
    if (next() % 3 == 0) return B(cmp[next() % 6], B(next() % 2 ? OP_DIV : OP_MUL, a, C(d)), C(pick(-3, 9)));
    if (next() % 2) { /* a * d + r, r in [0, d - 1] or [0, d], against a multiple of d or one less */
      KExpr *rest = B(OP_MIN, B(OP_MAX, gen(0, &mb), C(0)), C((d < 0 ? -d : d) - 1 + (int64_t)(next() % 2)));
      return B(cmp[next() % 6], B(OP_ADD, B(OP_MUL, a, C(d)), rest), C(d * pick(-2, 6) - (int64_t)(next() % 2)));
    }
    return B(OP_AND, c, B(OP_AND, gen(depth - 1, &mb), c));
  }
  default: {
    KExpr *b = gen(depth - 1, &mb);
    *mag = 2 * (ma > mb ? ma : mb) + 1;
    return B(OP_XOR, a, b);
  }
  }
}

/* Random ranges for one case, pushed into a fresh scope: some negative, some one value. */
static KxScope *random_scope(Case *c) {
  KxScope *s = kx_scope_new(A);
  for (int i = 0; i < NVARS; i++) {
    c->lo[i] = next() % 3 ? pick(0, 4) : pick(-12, 6);
    c->hi[i] = c->lo[i] + (next() % 5 ? pick(0, 140) : 0);
    kx_scope_push(s, V(vars[i]), c->lo[i], c->hi[i], next() % 2 ? C(c->hi[i] + 1) : NULL);
  }
  static const int64_t dims[] = {1, 2, 8, 32, 128};
  c->tid_dim = dims[next() % 5];
  kx_scope_push(s, kx_thread(A, CF_PT_TIDX, true), c->tid_dim, c->tid_dim, NULL);
  kx_scope_push(s, TID(), 0, c->tid_dim - 1, C(c->tid_dim));
  kx_scope_push(s, BIDY(), 0, INT64_MAX, B(OP_CEILDIV, SIZE(0), C(16)));
  return s;
}

static void random_point(Case *c) {
  for (int i = 0; i < NVARS; i++) c->var[i] = pick(c->lo[i], c->hi[i]);
  c->tid = pick(0, c->tid_dim - 1);
  c->size[0] = pick(1, 300), c->size[1] = pick(0, 300);
  c->bid = pick(0, (c->size[0] + 15) / 16 - 1); /* below the launch's extent */
  c->stride[0] = pick(-20, 20), c->stride[1] = pick(-20, 20);
}

/* The same value at every sampled point where e is defined; counts the changed cases. */
Test(kx_simplify, same_values_at_random_points_of_random_ranges) {
  int changed = 0, checked = 0;
  for (int n = 0; n < CASES; n++) {
    Case c = {0};
    KxScope *s = random_scope(&c);
    int64_t mag;
    KExpr *e = gen(5, &mag), *r = kx_simplify(s, e);
    changed += !kx_equal(e, r);
    const int64_t *sizes[1] = {c.size}, *strides[1] = {c.stride};
    KxEnv env = {.nparams = 1, .sizes = sizes, .strides = strides, .leaf = leaf_value, .user = &c};
    for (int p = 0; p < POINTS; p++) {
      random_point(&c);
      int64_t want, got;
      if (!kx_eval(e, &env, &want)) continue;
      checked++;
      bool ok = kx_eval(r, &env, &got);
      if (!ok || got != want) {
        char *es = str(e), *rs = str(r);
        cr_assert_fail("case %d: %s -> %s: at x=%lld y=%lld z=%lld w=%lld tid=%lld bid=%lld size=%lld,%lld "
                       "stride=%lld: %lld, then %s%lld",
                       n, es, rs, (long long)c.var[0], (long long)c.var[1], (long long)c.var[2],
                       (long long)c.var[3], (long long)c.tid, (long long)c.bid, (long long)c.size[0],
                       (long long)c.size[1], (long long)c.stride[0], (long long)want, ok ? "" : "undefined ",
                       (long long)got);
      }
    }
    arena_destroy(A), A = arena_create();
  }
  cr_log_info("%d of %d expressions simplified, %d points checked", changed, CASES, checked);
  cr_expect_geq(changed, CASES / 2, "only %d of %d expressions simplified", changed, CASES);
  cr_expect_geq(checked, CASES * POINTS / 2, "only %d points defined", checked);
}
