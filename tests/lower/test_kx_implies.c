/* kx_implies (lower/kx_implies.c): which bound terms of a guard imply which. Each rule
 * where its side conditions hold, and refused where one fails: a remainder that may be
 * negative, another factor, a divisor that may be negative, an index that may be
 * negative, a modulus that is not a factor of the bound; and a property test: random
 * instances of each rule's shape over random ranges, sizes from 0, evaluated at random
 * points: wherever kx_implies says u implies t and u holds, t holds. */
#include <criterion/criterion.h>

#include "lower/kir.h"
#include "test_util.h"

static Arena *A;
static KxScope *S;
static void setup(void) {
  A = arena_create();
  S = kx_scope_new(A);
  kx_scope_push(S, kx_var(A, "l"), 0, 3, NULL);   /* a lane: [0, 3] */
  kx_scope_push(S, kx_var(A, "z"), -2, 3, NULL);  /* may be negative */
}
static void teardown(void) { arena_destroy(A); }
TestSuite(kx_implies, .init = setup, .fini = teardown);

static KExpr *V(const char *n) { return kx_var(A, n); }
static KExpr *C(int64_t v) { return kx_const(A, v); }
static KExpr *B(IrOp op, KExpr *a, KExpr *b) { return kx_bin(A, op, a, b); }
static KExpr *N(int axis) { return kx_param_size(A, 0, axis); }
static KExpr *X(void) { return B(OP_ADD, B(OP_MUL, kx_thread(A, CF_PT_BIDX, false), C(128)), kx_thread(A, CF_PT_TIDX, false)); }
static KExpr *LT(KExpr *a, KExpr *b) { return B(OP_LT, a, b); }

/* x*4 + l < E implies x < ceilDiv(E, 4), and for constants x < c with c >= ceilDiv(E, 4) */
Test(kx_implies, a_split_bound) {
  KExpr *e = B(OP_MUL, N(0), N(1));
  KExpr *u = LT(B(OP_ADD, B(OP_MUL, X(), C(4)), V("l")), e);
  cr_expect(kx_implies(S, u, LT(X(), B(OP_CEILDIV, e, C(4)))));
  cr_expect(kx_implies(S, LT(B(OP_MUL, X(), C(4)), e), LT(X(), B(OP_CEILDIV, e, C(4)))));
  cr_expect(!kx_implies(S, u, LT(X(), B(OP_CEILDIV, e, C(8)))), "another factor");
  cr_expect(!kx_implies(S, LT(B(OP_ADD, B(OP_MUL, X(), C(4)), V("z")), e), LT(X(), B(OP_CEILDIV, e, C(4)))),
            "a remainder that may be negative");
  cr_expect(!kx_implies(S, LT(X(), B(OP_CEILDIV, e, C(4))), u), "not the converse");
  KExpr *t = kx_thread(A, CF_PT_TIDX, false);
  KExpr *u91 = LT(B(OP_ADD, B(OP_MUL, t, C(4)), V("l")), C(91));
  cr_expect(kx_implies(S, u91, LT(t, C(23))));
  cr_expect(kx_implies(S, u91, LT(t, C(30))));
  cr_expect(!kx_implies(S, u91, LT(t, C(22))), "22 < ceilDiv(91, 4)");
}

/* x < n0*n1*5 implies x/5/n1 < n0, the factors in any order and grouping */
Test(kx_implies, a_merge_bound) {
  KExpr *x = B(OP_ADD, B(OP_MUL, X(), C(4)), V("l"));
  KExpr *u = LT(x, B(OP_MUL, B(OP_MUL, N(0), N(1)), C(5)));
  cr_expect(kx_implies(S, u, LT(B(OP_DIV, B(OP_DIV, x, C(5)), N(1)), N(0))));
  cr_expect(kx_implies(S, u, LT(B(OP_DIV, x, B(OP_MUL, N(1), C(5))), N(0))) == false,
            "a divisor that is itself a product is not unfolded");
  cr_expect(kx_implies(S, LT(x, B(OP_MUL, N(1), B(OP_MUL, C(5), N(0)))), LT(B(OP_DIV, B(OP_DIV, x, C(5)), N(1)), N(0))));
  cr_expect(!kx_implies(S, u, LT(B(OP_DIV, B(OP_DIV, x, C(5)), N(1)), N(2))), "another extent");
  cr_expect(!kx_implies(S, u, LT(B(OP_DIV, x, C(5)), N(0))), "a factor left over");
  KExpr *z = B(OP_ADD, X(), V("z"));
  cr_expect(!kx_implies(S, LT(z, B(OP_MUL, N(0), C(5))), LT(B(OP_DIV, z, C(5)), N(0))),
            "an index that may be negative");
  cr_expect(!kx_implies(S, LT(x, B(OP_MUL, N(0), V("z"))), LT(B(OP_DIV, x, V("z")), N(0))),
            "a divisor that may be negative");
}

/* x < n0*n1*5 implies y % n1 < n1 (n1 a factor: 0 makes x < 0 false) */
Test(kx_implies, a_modulo_bound) {
  KExpr *x = B(OP_ADD, B(OP_MUL, X(), C(4)), V("l"));
  KExpr *u = LT(x, B(OP_MUL, B(OP_MUL, N(0), N(1)), C(5)));
  KExpr *y = B(OP_DIV, x, C(5));
  cr_expect(kx_implies(S, u, LT(B(OP_MOD, y, N(1)), N(1))));
  cr_expect(!kx_implies(S, u, LT(B(OP_MOD, y, N(2)), N(2))), "not a factor of the bound");
  cr_expect(!kx_implies(S, u, LT(B(OP_MOD, y, N(1)), N(0))), "another bound");
  cr_expect(!kx_implies(S, LT(B(OP_ADD, X(), V("z")), B(OP_MUL, N(0), N(1))), LT(B(OP_MOD, y, N(1)), N(1))),
            "a bounded index that may be negative");
}

/* ---- the property test ------------------------------------------------------------------ */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static int64_t pick(int64_t lo, int64_t hi) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return lo + (int64_t)(rng % (uint64_t)(hi - lo + 1));
}

typedef struct Point {
  int64_t a, b, lo[2], hi[2];
} Point;

static bool leaf_value(void *user, const KExpr *e, int64_t *out) {
  const Point *p = user;
  if (e->kind != KX_VAR) return false;
  *out = e->name[0] == 'a' ? p->a : p->b;
  return true;
}

/* A random size expression: a size, a constant, or a product of two. */
static KExpr *size_expr(void) {
  switch (pick(0, 3)) {
  case 0: return N((int)pick(0, 2));
  case 1: return C(pick(1, 7));
  default: return B(OP_MUL, N((int)pick(0, 2)), pick(0, 1) ? N((int)pick(0, 2)) : C(pick(2, 5)));
  }
}

/* (u, t) of one rule's shape, its parts random: right or wrong factors, ranges that may
 * make a side condition fail. */
static void random_pair(KExpr **u, KExpr **t) {
  KExpr *a = V("a"), *b = V("b"), *e = size_expr();
  int64_t f = pick(1, 6);
  switch (pick(0, 2)) {
  case 0: /* split */
    *u = LT(B(OP_ADD, B(OP_MUL, a, C(f)), b), e);
    *t = LT(a, pick(0, 1) ? B(OP_CEILDIV, e, C(pick(0, 1) ? f : pick(1, 6))) : C(pick(0, 9)));
    if (pick(0, 1)) *u = LT(B(OP_ADD, B(OP_MUL, a, C(f)), b), C(pick(0, 30)));
    return;
  case 1: { /* merge */
    KExpr *d1 = size_expr(), *d2 = pick(0, 1) ? N((int)pick(0, 2)) : C(pick(1, 4)), *s0 = N((int)pick(0, 2));
    *u = LT(a, pick(0, 1) ? B(OP_MUL, B(OP_MUL, s0, d1), d2) : B(OP_MUL, d2, B(OP_MUL, d1, s0)));
    *t = LT(B(OP_DIV, B(OP_DIV, a, pick(0, 1) ? d2 : d1), pick(0, 1) ? d1 : d2), pick(0, 3) ? s0 : size_expr());
    return;
  }
  default: { /* modulo */
    KExpr *d = pick(0, 1) ? N((int)pick(0, 2)) : C(pick(1, 4));
    *u = LT(a, B(OP_MUL, size_expr(), pick(0, 3) ? d : size_expr()));
    *t = LT(B(OP_MOD, b, d), pick(0, 3) ? d : size_expr());
  }
  }
}

Test(kx_implies, implied_terms_hold_wherever_the_implying_one_does) {
  int fired = 0, checked = 0;
  for (int n = 0; n < 3000; n++) {
    Point p;
    for (int v = 0; v < 2; v++) {
      p.lo[v] = pick(-4, 2);
      p.hi[v] = p.lo[v] + pick(0, 40);
    }
    KxScope *s = kx_scope_new(A);
    kx_scope_push(s, V("a"), p.lo[0], p.hi[0], NULL);
    kx_scope_push(s, V("b"), p.lo[1], p.hi[1], NULL);
    KExpr *u, *t;
    random_pair(&u, &t);
    if (!kx_implies(s, u, t)) continue;
    fired++;
    for (int k = 0; k < 40; k++) {
      int64_t sz[3] = {pick(0, 6), pick(0, 6), pick(0, 6)}, st[3] = {1, 1, 1}, uv, tv;
      const int64_t *sizes[1] = {sz}, *strides[1] = {st};
      p.a = pick(p.lo[0], p.hi[0]), p.b = pick(p.lo[1], p.hi[1]);
      KxEnv env = {.nparams = 1, .sizes = sizes, .strides = strides, .leaf = leaf_value, .user = &p};
      if (!kx_eval(u, &env, &uv) || !uv || !kx_eval(t, &env, &tv)) continue;
      checked++;
      cr_assert(tv, "a=%lld b=%lld sizes %lld %lld %lld: u holds, t does not", (long long)p.a, (long long)p.b,
                (long long)sz[0], (long long)sz[1], (long long)sz[2]);
    }
  }
  cr_expect_gt(fired, 300, "the rules fired %d times", fired);
  cr_expect_gt(checked, 3000, "%d points checked", checked);
}
