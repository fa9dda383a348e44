/* Tests of ir/scalar.c: constant folding at construction, identities, evaluation with
 * bound symbols, and printing of derived extents. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "ir/ir.h"

static cf_fusion *f;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(scalar, .init = setup, .fini = teardown);

static char *str(const Val *v) {
  StrBuf b = {0};
  ir_print_scalar(&b, v);
  return sb_take(&b);
}

Test(scalar, constants_fold) {
  int64_t v;
  cr_assert(ir_scalar_const_value(ir_scalar_op(f, OP_CEILDIV, ir_const_int(f, 10), ir_const_int(f, 4)), &v));
  cr_expect_eq(v, 3);
  cr_assert(ir_scalar_const_value(ir_scalar_op(f, OP_MUL, ir_const_int(f, 6), ir_const_int(f, 7)), &v));
  cr_expect_eq(v, 42);
  cr_assert(ir_scalar_const_value(ir_scalar_op(f, OP_MOD, ir_const_int(f, 10), ir_const_int(f, 4)), &v));
  cr_expect_eq(v, 2);
}

Test(scalar, identities_fold_on_symbols) {
  Val *i0 = ir_scalar_symbol(f, NULL);
  cr_expect_eq(ir_scalar_op(f, OP_MUL, i0, ir_const_int(f, 1)), i0);
  cr_expect_eq(ir_scalar_op(f, OP_ADD, ir_const_int(f, 0), i0), i0);
  cr_expect_eq(ir_scalar_op(f, OP_CEILDIV, i0, ir_const_int(f, 1)), i0);
  int64_t v;
  cr_assert(ir_scalar_const_value(ir_scalar_op(f, OP_MUL, i0, ir_const_int(f, 0)), &v));
  cr_expect_eq(v, 0);
  cr_assert(ir_scalar_const_value(ir_scalar_op(f, OP_MOD, i0, ir_const_int(f, 1)), &v));
  cr_expect_eq(v, 0);
}

Test(scalar, symbols_are_named_in_order) {
  Val *a = ir_scalar_symbol(f, NULL), *b = ir_scalar_symbol(f, NULL);
  char *sa = str(a), *sb = str(b);
  cr_expect_str_eq(sa, "i0");
  cr_expect_str_eq(sb, "i1");
  free(sa);
  free(sb);
}

Test(scalar, derived_scalars_print_wrapped) {
  Val *a = ir_scalar_symbol(f, NULL), *b = ir_scalar_symbol(f, NULL);
  Val *e = ir_scalar_op(f, OP_MUL, ir_scalar_op(f, OP_CEILDIV, a, ir_const_int(f, 4)), b);
  char *s = str(e);
  cr_expect_str_eq(s, "( ( ceilDiv(i0, 4) ) * i1 )");
  free(s);
}

Test(scalar, evaluation_binds_symbols) {
  Val *a = ir_scalar_symbol(f, NULL), *b = ir_scalar_symbol(f, NULL);
  Val *e = ir_scalar_op(f, OP_ADD, ir_scalar_op(f, OP_CEILDIV, a, ir_const_int(f, 4)), b);
  int ids[2] = {a->id, b->id};
  int64_t vals[2] = {10, 5};
  ScalarBindings bind = {2, ids, vals};
  int64_t v;
  cr_assert(ir_scalar_eval(e, &bind, &v, NULL));
  cr_expect_eq(v, 8);
}

Test(scalar, evaluation_reports_the_unbound_symbol) {
  Val *a = ir_scalar_symbol(f, NULL), *b = ir_scalar_symbol(f, NULL);
  Val *e = ir_scalar_op(f, OP_MUL, a, b);
  int ids[1] = {a->id};
  int64_t vals[1] = {3};
  ScalarBindings bind = {1, ids, vals};
  int64_t v;
  const char *missing = NULL;
  cr_expect_not(ir_scalar_eval(e, &bind, &v, &missing));
  cr_expect_str_eq(missing, "i1");
}

Test(scalar, division_by_zero_does_not_fold_or_crash) {
  Val *e = ir_scalar_op(f, OP_DIV, ir_const_int(f, 1), ir_const_int(f, 0));
  int64_t v;
  const char *why = NULL;
  cr_expect_not(ir_scalar_const_value(e, &v));
  cr_expect_not(ir_scalar_eval(e, NULL, &v, &why));
  cr_expect_str_eq(why, "division by zero");
}
