/* kx_program (lower/kx_program.c): an index compiled for evaluating it many times gives
 * what kx_eval gives at every point (random expressions with selects, divisions that may
 * divide by zero, unknown leaves and parameters), evaluates equal subexpressions once, and
 * is known where kx_eval is: a division by zero or an unknown leaf in the branch a select
 * does not take leaves the value known. */
#include <criterion/criterion.h>

#include "lower/lower.h"
#include "test_util.h"

static Arena *A;
static void setup(void) { A = arena_create(); }
static void teardown(void) { arena_destroy(A); }
TestSuite(kx_program, .init = setup, .fini = teardown);

static KExpr *X(void) { return kx_var(A, "x"); }
static KExpr *Y(void) { return kx_var(A, "y"); }
static KExpr *C(int64_t v) { return kx_const(A, v); }
static KExpr *B(IrOp op, KExpr *a, KExpr *b) { return kx_bin(A, op, a, b); }

/* Slots: x 0, y 1, threadIdx.x 2; the variable z and anything else have none. */
static int slot_of(void *user, const KExpr *e) {
  (void)user;
  if (e->kind == KX_VAR) return e->name[0] == 'x' ? 0 : e->name[0] == 'y' ? 1 : -1;
  return e->kind == KX_THREAD && e->pt == CF_PT_TIDX && !e->is_dim ? 2 : -1;
}

/* kx_eval's leaves from the same slots. */
static bool leaf_of(void *user, const KExpr *e, int64_t *out) {
  int s = slot_of(NULL, e);
  if (s < 0) return false;
  *out = ((const int64_t *)user)[s];
  return true;
}

static bool eval_at(const KExpr *e, int64_t *slots, int64_t *out) {
  KxEnv env = {0, NULL, NULL, leaf_of, slots};
  return kx_eval(e, &env, out);
}

static uint64_t rng = 0x2545F4914F6CDD1DULL;
static uint64_t next(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}

/* Leaves x, y, threadIdx.x, the unknown z and a parameter's size, constants with 0 among
 * them (divisions by zero), every operator the index forms use, selects. */
static KExpr *random_expr(int depth) {
  static const int64_t consts[] = {0, 1, 2, 3, 8, 16, 128, -1, -5};
  static const IrOp ops[] = {OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MOD, OP_CEILDIV, OP_MAX, OP_MIN,
                             OP_LT,  OP_LE,  OP_EQ,  OP_NE,  OP_XOR, OP_AND,     OP_ADD, OP_MUL};
  unsigned r = (unsigned)(next() % 16);
  if (depth == 0 || r < 3) {
    switch (next() % 7) {
    case 0: return X();
    case 1: return Y();
    case 2: return kx_thread(A, CF_PT_TIDX, false);
    case 3: return next() % 4 ? C(consts[next() % 9]) : kx_var(A, "z");
    case 4: return next() % 4 ? C(consts[next() % 9]) : kx_param_size(A, 0, 0);
    default: return C(consts[next() % 9]);
    }
  }
  if (r == 3) return kx_select(A, random_expr(depth - 1), random_expr(depth - 1), random_expr(depth - 1));
  return B(ops[next() % 16], random_expr(depth - 1), random_expr(depth - 1));
}

static const char *const names[] = {"T0"};

Test(kx_program, gives_what_kx_eval_gives_at_every_point) {
  int known = 0, unknown = 0;
  for (int t = 0; t < 3000; t++) {
    KExpr *e = random_expr(1 + t % 6);
    KxProgram *p = kx_program(A, e, slot_of, NULL);
    for (int pt = 0; pt < 12; pt++) {
      int64_t slots[3] = {(int64_t)(next() % 7) - 2, (int64_t)(next() % 5), (int64_t)(next() % 4)};
      int64_t want = 0, got = 0;
      bool w = eval_at(e, slots, &want), g = kx_program_run(p, slots, &got);
      StrBuf b = {0};
      kx_print(&b, e, names);
      cr_assert_eq(g, w, "%s at x=%lld y=%lld tid=%lld: program %s, kx_eval %s", b.data, (long long)slots[0],
                   (long long)slots[1], (long long)slots[2], g ? "known" : "unknown", w ? "known" : "unknown");
      if (w) cr_assert_eq(got, want, "%s at x=%lld y=%lld tid=%lld: %lld, kx_eval %lld", b.data, (long long)slots[0],
                          (long long)slots[1], (long long)slots[2], (long long)got, (long long)want);
      free(b.data);
      w ? known++ : unknown++;
    }
  }
  cr_expect(known > 10000 && unknown > 1000, "%d known, %d unknown points: both kinds tried", known, unknown);
}

/* ((x * 8 + y) % 128) written twice (new nodes each time), then added: x, 8, x * 8, y, +,
 * 128, %, and the sum. */
Test(kx_program, equal_subexpressions_are_one_instruction) {
  KExpr *t1 = B(OP_MOD, B(OP_ADD, B(OP_MUL, X(), C(8)), Y()), C(128));
  KExpr *t2 = B(OP_MOD, B(OP_ADD, B(OP_MUL, X(), C(8)), Y()), C(128));
  KExpr *e = B(OP_ADD, t1, t2);
  KxProgram *p = kx_program(A, e, slot_of, NULL);
  cr_expect_eq(kx_program_length(p), 8);
  int64_t slots[3] = {20, 5, 0}, v = 0;
  cr_assert(kx_program_run(p, slots, &v));
  cr_expect_eq(v, 2 * ((20 * 8 + 5) % 128));
  cr_expect_eq(kx_program_length(kx_program(A, B(OP_MUL, e, e), slot_of, NULL)), 9); /* a DAG: e once */
}

/* C's ?: evaluates the branch it takes: the other may divide by zero or read an unknown. */
Test(kx_program, the_branch_not_taken_may_divide_by_zero) {
  KExpr *e = kx_select(A, B(OP_LT, X(), C(1)), C(5), B(OP_DIV, Y(), B(OP_SUB, X(), X())));
  KExpr *f = kx_select(A, B(OP_LT, X(), C(1)), kx_var(A, "z"), Y());
  KxProgram *p = kx_program(A, e, slot_of, NULL), *q = kx_program(A, f, slot_of, NULL);
  int64_t at0[3] = {0, 7, 0}, at1[3] = {1, 7, 0}, v = -1;
  cr_expect(kx_program_run(p, at0, &v) && v == 5);
  cr_expect(!kx_program_run(p, at1, &v), "y / (x - x) divides by zero where taken");
  cr_expect(!kx_program_run(q, at0, &v), "z is unknown where taken");
  cr_expect(kx_program_run(q, at1, &v) && v == 7);
}
