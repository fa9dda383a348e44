/* Tests of the reduction ops of issue 10 (prod, mean, keepdim through cf_reduce) and of
 * the reduction table's columns (combine op, identity, integer widening): their printed
 * math, their evaluation, their errors, and the identities kernels start from; the online
 * softmax's state merge. */
#include <math.h>

#include "ir/dtype.h"
#include "ops_test_util.h"


/* Reduces `vals` of shape {2, 3} with op over the given axes and checks the result. */
static void check(cf_reduce_op op, bool keepdim, cf_dtype dt, const double *vals, int naxes, const int *axes,
                  cf_dtype want_dt, int rank, const int64_t *sizes, const double *want) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, dt, 2, (int64_t[]){2, 3});
  cf_fusion_add_output(f, cf_reduce(f, op, a, naxes, axes, keepdim));
  DLManagedTensor *in = ot_tensor(dt, 2, (int64_t[]){2, 3}, vals), *out = NULL;
  cr_assert_eq(ot_eval(f, 1, &in, &out), CF_OK, "%s", cf_fusion_error(f));
  ot_expect_values(out, want_dt, rank, sizes, want);
  cf_tensor_free(in);
  cf_tensor_free(out);
  cf_fusion_destroy(f);
}

static const double iota6[] = {0, 1, 2, 3, 4, 5};
static const double neg6[] = {-7, -3, -9, -100, -2, -50};

Test(reduce_ops, prod_multiplies_and_widens_integers) {
  check(CF_REDUCE_PROD, false, CF_FLOAT, iota6, 1, (int[]){1}, CF_FLOAT, 1, (int64_t[]){2}, (double[]){0, 60});
  check(CF_REDUCE_PROD, false, CF_INT32, iota6, 1, (int[]){0}, CF_INT64, 1, (int64_t[]){3}, (double[]){0, 4, 10});
  check(CF_REDUCE_PROD, false, CF_DOUBLE, neg6, 2, (int[]){0, 1}, CF_DOUBLE, 0, NULL, (double[]){1890000});
}

Test(reduce_ops, mean_divides_by_the_reduced_count) {
  check(CF_REDUCE_MEAN, false, CF_FLOAT, iota6, 1, (int[]){1}, CF_FLOAT, 1, (int64_t[]){2}, (double[]){1, 4});
  check(CF_REDUCE_MEAN, false, CF_DOUBLE, iota6, 2, (int[]){1, 0}, CF_DOUBLE, 0, NULL, (double[]){2.5});
  check(CF_REDUCE_MEAN, false, CF_HALF, iota6, 1, (int[]){0}, CF_HALF, 1, (int64_t[]){3}, (double[]){1.5, 2.5, 3.5});
}

Test(reduce_ops, max_and_min_of_negative_integers_start_at_the_dtype_limits) {
  check(CF_REDUCE_MAX, false, CF_INT32, neg6, 1, (int[]){1}, CF_INT32, 1, (int64_t[]){2}, (double[]){-3, -2});
  check(CF_REDUCE_MIN, false, CF_INT8, neg6, 1, (int[]){0}, CF_INT8, 1, (int64_t[]){3}, (double[]){-100, -3, -50});
}

Test(reduce_ops, keepdim_puts_reduced_axes_back_as_broadcasts) {
  check(CF_REDUCE_SUM, true, CF_FLOAT, iota6, 1, (int[]){1}, CF_FLOAT, 2, (int64_t[]){2, 1}, (double[]){3, 12});
  check(CF_REDUCE_MEAN, true, CF_FLOAT, iota6, 1, (int[]){0}, CF_FLOAT, 2, (int64_t[]){1, 3}, (double[]){1.5, 2.5, 3.5});
  check(CF_REDUCE_MAX, true, CF_FLOAT, iota6, 2, (int[]){0, 1}, CF_FLOAT, 2, (int64_t[]){1, 1}, (double[]){5});
}

Test(reduce_ops, printed_math_of_mean_with_keepdim) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_tv *m = cf_reduce(f, CF_REDUCE_MEAN, a, 1, (int[]){1}, true);
  cr_assert_not_null(m, "%s", cf_fusion_error(f));
  cf_fusion_add_output(f, m);
  char *s = ot_math(f);
  cr_expect_str_eq(s, "Inputs:\n  T0_g_float[iS0{4}, iS1{8}]\nOutputs:\n  T3_g_float[iS5{4}, bS6{1}]\n\n%kernel_math {\n"
                      "T1_l_float[iS2{4}, rS3{8}]\n   = sum( T0_g_float[iS0{4}, iS1{8}] );\n"
                      "T2_l_float[iS4{4}]\n   = mul( T1_l_float[iS2{4}, rS3{8}], 0.125 );\n"
                      "T3_g_float[iS5{4}, bS6{1}]\n   = broadcast( T2_l_float[iS4{4}], {false, true} );\n} // %kernel_math\n");
  free(s);
  cf_tv *p = cf_prod(f, a, 1, (int[]){0});
  ot_expect_def(p, "T4_l_float[rS7{4}, iS8{8}]\n   = prod( T0_g_float[iS0{4}, iS1{8}] );\n");
  cf_fusion_destroy(f);
}

/* Over symbolic extents the count is the product of the reduced sizes, a scalar of the
 * input's sizes divided by at run time; printed as that scalar. */
Test(reduce_ops, printed_math_of_mean_over_symbolic_extents) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 3, NULL);
  cf_tv *m = cf_reduce(f, CF_REDUCE_MEAN, a, 2, (int[]){0, 2}, true);
  cr_assert_not_null(m, "%s", cf_fusion_error(f));
  cf_fusion_add_output(f, m);
  char *s = ot_math(f);
  cr_expect_str_eq(s, "Inputs:\n  T0_g_float[iS0{i0}, iS1{i1}, iS2{i2}]\nOutputs:\n"
                      "  T3_g_float[bS7{1}, iS8{i1}, bS9{1}]\n\n%kernel_math {\n"
                      "T1_l_float[rS3{i0}, iS4{i1}, rS5{i2}]\n   = sum( T0_g_float[iS0{i0}, iS1{i1}, iS2{i2}] );\n"
                      "T2_l_float[iS6{i1}]\n   = div( T1_l_float[rS3{i0}, iS4{i1}, rS5{i2}], ( i0 * i2 ) );\n"
                      "T3_g_float[bS7{1}, iS8{i1}, bS9{1}]\n   = broadcast( T2_l_float[iS6{i1}], {true, false, true} );\n"
                      "} // %kernel_math\n");
  free(s);
  /* one symbolic axis: divided by that size alone */
  ot_expect_def(cf_mean(f, a, 1, (int[]){1}), "T5_l_float[iS13{i0}, iS14{i2}]\n   = div( T4_l_float[iS10{i0}, rS11{i1}, "
                                              "iS12{i2}], i1 );\n");
  cf_fusion_destroy(f);
}

/* The evaluator divides by the bound sizes: {2, 3} means over axis 1, 0 and both. */
Test(reduce_ops, mean_over_symbolic_extents_divides_by_the_bound_sizes) {
  cf_reduce_op op = CF_REDUCE_MEAN;
  int64_t sizes[2] = {2, 3};
  struct { int naxes; int axes[2]; int rank; int64_t out[1]; double want[3]; } cases[] = {
      {1, {1}, 1, {2}, {1, 4}}, {1, {0}, 1, {3}, {1.5, 2.5, 3.5}}, {2, {0, 1}, 0, {0}, {2.5}}};
  for (int c = 0; c < 3; c++) {
    cf_fusion *f = cf_fusion_create();
    cf_tv *a = tu_input(f, CF_DOUBLE, 2, NULL);
    cf_fusion_add_output(f, cf_reduce(f, op, a, cases[c].naxes, cases[c].axes, false));
    DLManagedTensor *in = ot_tensor(CF_DOUBLE, 2, sizes, iota6), *out = NULL;
    cr_assert_eq(ot_eval(f, 1, &in, &out), CF_OK, "%s", cf_fusion_error(f));
    ot_expect_values(out, CF_DOUBLE, cases[c].rank, cases[c].out, cases[c].want);
    cf_tensor_free(in);
    cf_tensor_free(out);
    cf_fusion_destroy(f);
  }
}

Test(reduce_ops, errors_name_the_tensor) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *i = tu_input(f, CF_INT32, 2, (int64_t[]){4, 8});
  cf_tv *s = tu_input(f, CF_FLOAT, 2, NULL);
  cr_expect_null(cf_mean(f, i, 1, (int[]){1}));
  cr_expect_eq(cf_fusion_status(f), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_error(f), "mean: T0 has dtype int; a mean needs a floating-point input (cast it first) "
                                       "for T0_g_int[iS0{4}, iS1{8}]");
  cf_fusion_clear_error(f);
  cr_expect_null(cf_reduce(f, (cf_reduce_op)9, s, 1, (int[]){1}, false));
  cr_expect_str_eq(cf_fusion_error(f), "reduce: unknown reduction 9");
  cf_fusion_clear_error(f);
  cr_expect_null(cf_prod(f, s, 1, (int[]){2}));
  cr_expect_str_eq(cf_fusion_error(f), "prod: axis 2 out of range for T1_g_float[iS2{i0}, iS3{i1}]");
  cf_fusion_destroy(f);
}

Test(reduce_ops, every_reduction_op_has_one_row_of_the_reduction_table) {
  for (int op = 0; op < OP_COUNT; op++) {
    bool red = ir_op_kind((IrOp)op) == OPK_REDUCTION;
    cr_expect_eq(ir_op_is_reduction((IrOp)op), red, "op %s", ir_op_name((IrOp)op));
    /* Welford and the online softmax are their own combines (states merge), max and min too
     * (they keep NaN) */
    if (red && op != OP_WELFORD && op != OP_ONLINE_SOFTMAX && op != OP_MAX_REDUCE && op != OP_MIN_REDUCE)
      cr_expect_eq(ir_op_kind(ir_reduction_combine((IrOp)op)), OPK_BINARY, "op %s", ir_op_name((IrOp)op));
  }
  cr_expect_eq(ir_reduction_combine(OP_PROD), OP_MUL);
  cr_expect_eq(ir_reduction_identity(OP_MAX_REDUCE), RID_LOWEST);
  cr_expect(ir_reduction_widens_int(OP_SUM));
  cr_expect(!ir_reduction_widens_int(OP_MIN_REDUCE));
  cr_expect_eq(ir_reduction_combine(OP_ONLINE_SOFTMAX), OP_ONLINE_SOFTMAX);
  cr_expect_eq(ir_reduction_identity(OP_ONLINE_SOFTMAX), RID_EMPTY);
}

/* The online softmax's merge ({max, sum - 1, count}): against the two-pass max and sum of
 * exponentials, merged in any grouping; -inf elements and the empty state. */
Test(reduce_ops, online_softmax_merge) {
  const double x[] = {0.5, -2.0, 3.0, 3.0, -INFINITY, 1.25};
  IrWelford all = ir_welford_empty(), left = ir_welford_empty(), right = ir_welford_empty();
  for (int i = 0; i < 6; i++) {
    all = ir_softmax_merge(all, ir_welford_of(x[i]));
    if (i < 3) left = ir_softmax_merge(ir_welford_of(x[i]), left);
    else right = ir_softmax_merge(right, ir_welford_of(x[i]));
  }
  double sum = 0;
  for (int i = 0; i < 6; i++) sum += exp(x[i] - 3.0);
  IrWelford tree = ir_softmax_merge(left, right);
  cr_expect_eq(all.avg, 3.0);
  cr_expect_float_eq(all.m2 + 1, sum, 1e-12);
  cr_expect_float_eq(tree.m2 + 1, sum, 1e-12);
  cr_expect_eq(all.n, 6);
  IrWelford ninf = ir_softmax_merge(ir_welford_of(-INFINITY), ir_welford_of(-INFINITY));
  cr_expect_eq(ninf.m2 + 1, 2.0); /* equal maxes scale by exactly 1, -inf ones too */
  cr_expect_float_eq(ir_softmax_merge(ninf, ir_welford_of(0.0)).m2 + 1, 1.0, 1e-12);
  cr_expect_eq(ir_softmax_merge(ir_welford_empty(), all).m2, all.m2);
}

/* Welford merges of infinite and NaN elements: the mean of a set with +inf is +inf, with
 * +inf and -inf (or NaN) NaN, and M2 NaN, in any order and grouping of the merges (the
 * update formula gave inf + (x - inf) / n = NaN in one order and inf in another). */
static IrWelford fold(const double *x, int lo, int hi) {
  IrWelford s = ir_welford_empty();
  for (int i = lo; i < hi; i++) s = ir_welford_merge(s, ir_welford_of(x[i]));
  return s;
}
Test(reduce_ops, welford_merge_of_infinite_elements) {
  const double x[] = {1.5, INFINITY, -2.0, 4.0, INFINITY, 0.25};
  double rev[6];
  for (int i = 0; i < 6; i++) rev[i] = x[5 - i];
  IrWelford all = fold(x, 0, 6), back = fold(rev, 0, 6), tree = ir_welford_merge(fold(x, 0, 3), fold(x, 3, 6));
  IrWelford states[] = {all, back, tree};
  for (int k = 0; k < 3; k++) {
    cr_expect(isinf(states[k].avg) && states[k].avg > 0, "order %d: mean %g, want inf", k, states[k].avg);
    cr_expect(isnan(states[k].m2), "order %d: M2 %g, want NaN", k, states[k].m2);
    cr_expect_eq(states[k].n, 6);
  }
  cr_expect(isnan(ir_welford_merge(all, ir_welford_of(-INFINITY)).avg)); /* inf and -inf */
  cr_expect(isnan(ir_welford_merge(ir_welford_of(NAN), ir_welford_of(INFINITY)).avg));
  IrWelford one = ir_welford_merge(ir_welford_empty(), ir_welford_of(INFINITY));
  cr_expect(isinf(one.avg) && one.m2 == 0 && one.n == 1); /* the identity: no inf * 0 */
  IrWelford fin = fold(x, 2, 4); /* finite elements keep Chan's update: mean 1, M2 18 */
  cr_expect_eq(fin.avg, 1.0);
  cr_expect_eq(fin.m2, 18.0);
}
