/* Tests of the semantics table (ir/op_table.c, ir/eval_math.c) on the reference
 * evaluator: torch's type promotion by categories (scalars and 0-d tensors), exact integer
 * constants, integer division, modulo, pow and shifts as cfuser defines them (no trap),
 * NaN through maximum/minimum and the max/min reductions, empty reductions and var_mean,
 * floating-to-integer casts, and the op table's own invariants. The same fusions run as
 * kernels in tests/kernels/test_semantics_kernels.c. */
#include "ops_test_util.h"

/* ---- the table ------------------------------------------------------------------------ */

Test(semantics, every_reduction_folds_with_its_combine_ops_forms) {
  for (int op = 0; op < OP_COUNT; op++) {
    if (!ir_op_is_reduction((IrOp)op)) continue;
    IrOp c = ir_reduction_combine((IrOp)op);
    cr_expect_eq(ir_op_eval((IrOp)op), ir_op_eval(c), "%s", ir_op_name((IrOp)op));
    cr_expect_str_eq(ir_op_form((IrOp)op, true), ir_op_form(c, true), "%s", ir_op_name((IrOp)op));
    cr_expect_str_eq(ir_op_form((IrOp)op, false), ir_op_form(c, false), "%s", ir_op_name((IrOp)op));
  }
}

/* The evaluator column of every op with elements is its own form, never a stand-in: only
 * data movement (and full, whose value the evaluator stores) uses ir_ev_move, only
 * transforms ir_ev_none. */
Test(semantics, evaluator_forms_are_no_stand_ins) {
  for (int op = 0; op < OP_COUNT; op++) {
    IrTypeRule r = ir_op_type_rule((IrOp)op);
    IrEvalFn ev = ir_op_eval((IrOp)op);
    if (ev == ir_ev_move) cr_expect(r == TR_MOVE || r == TR_CAST || op == OP_FULL, "%s", ir_op_name((IrOp)op));
    bool selects = op == OP_PAD || op == OP_CAT; /* the operand, or the pad value / the other operand */
    if (r == TR_MOVE || r == TR_CAST) cr_expect_eq(ev, selects ? ir_ev_select : ir_ev_move, "%s", ir_op_name((IrOp)op));
    cr_expect_eq(ev == ir_ev_none, r == TR_NONE, "%s", ir_op_name((IrOp)op));
  }
}

Test(semantics, the_public_table_lists_every_row) {
  cr_assert_eq(cf_op_count(), OP_COUNT);
  cf_op_info info;
  cr_expect_eq(cf_op_get(-1, &info), CF_ERR_INVALID_ARGUMENT);
  cr_expect_eq(cf_op_get(OP_COUNT, &info), CF_ERR_INVALID_ARGUMENT);
  cr_expect_eq(cf_op_get(0, NULL), CF_ERR_INVALID_ARGUMENT);
  cr_assert_eq(cf_op_get(OP_MAX, &info), CF_OK);
  cr_expect_str_eq(info.name, "max");
  cr_expect_str_eq(info.py_name, "maximum");
  cr_expect_str_eq(info.kind, "binary");
  cr_expect_str_eq(info.rule, "promote");
  cr_expect(info.api);
  cr_expect_eq(info.dtypes, ((1u << CF_WELFORD_FLOAT) - 1) | 1u << CF_FLOAT8_E4M3FN | 1u << CF_FLOAT8_E5M2); /* every element dtype, no Welford state */
  cr_assert_eq(cf_op_get(OP_SHL, &info), CF_OK);
  cr_expect_eq(info.dtypes, 1u << CF_INT8 | 1u << CF_INT32 | 1u << CF_INT64 | 1u << CF_UINT32);
  cr_expect_eq(cf_op_result_dtype(OP_EXP, CF_INT32), CF_FLOAT);
  cr_expect_eq(cf_op_result_dtype(OP_LT, CF_HALF), CF_BOOL);
  cr_expect_eq(cf_op_result_dtype(OP_BITWISE_AND, CF_FLOAT), CF_DTYPE_COUNT);
}

/* ---- type promotion -------------------------------------------------------------------- */

static cf_dtype result_of(cf_dtype a, IrTier ta, cf_dtype b, IrTier tb) {
  return ir_dtype_result_type(2, (cf_dtype[]){a, b}, (IrTier[]){ta, tb});
}

Test(semantics, result_type_follows_torchs_categories) {
  cr_expect_eq(result_of(CF_FLOAT, IR_TIER_DIM, CF_DOUBLE, IR_TIER_SCALAR), CF_FLOAT);
  cr_expect_eq(result_of(CF_HALF, IR_TIER_DIM, CF_DOUBLE, IR_TIER_ZERO_DIM), CF_HALF);
  cr_expect_eq(result_of(CF_INT32, IR_TIER_DIM, CF_DOUBLE, IR_TIER_SCALAR), CF_FLOAT);
  cr_expect_eq(result_of(CF_INT8, IR_TIER_DIM, CF_DOUBLE, IR_TIER_ZERO_DIM), CF_DOUBLE);
  cr_expect_eq(result_of(CF_INT8, IR_TIER_DIM, CF_INT64, IR_TIER_SCALAR), CF_INT8);
  cr_expect_eq(result_of(CF_INT8, IR_TIER_DIM, CF_INT64, IR_TIER_ZERO_DIM), CF_INT8);
  cr_expect_eq(result_of(CF_BOOL, IR_TIER_DIM, CF_INT64, IR_TIER_SCALAR), CF_INT64);
  cr_expect_eq(result_of(CF_BOOL, IR_TIER_DIM, CF_BOOL, IR_TIER_SCALAR), CF_BOOL);
  cr_expect_eq(result_of(CF_FLOAT, IR_TIER_DIM, CF_DOUBLE, IR_TIER_DIM), CF_DOUBLE);
  cr_expect_eq(result_of(CF_INT64, IR_TIER_ZERO_DIM, CF_DOUBLE, IR_TIER_SCALAR), CF_FLOAT);
  cr_expect_eq(result_of(CF_FLOAT, IR_TIER_ZERO_DIM, CF_DOUBLE, IR_TIER_ZERO_DIM), CF_DOUBLE);
}

/* float32 * a define_scalar() double stays float32 (the double is cast to float first, as
 * nvFuser's frontend casts); a literal constant likewise; int32 * double scalar gives
 * float32; int8 + an int64 constant stays int8. */
Test(semantics, scalars_do_not_promote_tensors_of_their_category) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *x = tu_input(f, CF_FLOAT, 1, (int64_t[]){3});
  cf_tv *s = cf_scalar_input(f, CF_DOUBLE);
  cf_tv *y = cf_mul(f, x, s);
  cr_assert_eq(cf_tv_dtype(y), CF_FLOAT, "%s", cf_fusion_error(f));
  cf_fusion_add_output(f, y);
  char *m = ot_math(f);
  cr_expect(strstr(m, "T2_l_float[]\n   = cast( T1_g_double[], float );") != NULL, "%s", m);
  free(m);
  cr_expect_eq(cf_tv_dtype(cf_mul(f, x, cf_const(f, CF_DOUBLE, 0.1))), CF_FLOAT);
  cf_tv *i = tu_input(f, CF_INT32, 1, (int64_t[]){3});
  cr_expect_eq(cf_tv_dtype(cf_mul(f, i, s)), CF_FLOAT);
  cf_tv *b = tu_input(f, CF_INT8, 1, (int64_t[]){3});
  cr_expect_eq(cf_tv_dtype(cf_add(f, b, cf_const_int(f, CF_INT64, 1000))), CF_INT8);
  cr_expect_eq(cf_tv_dtype(cf_add(f, tu_input(f, CF_BOOL, 1, (int64_t[]){3}), cf_const_int(f, CF_INT64, 1))),
               CF_INT64);
  cf_tv *zero_d = tu_input(f, CF_DOUBLE, 0, NULL); /* a 0-d tensor, not a scalar */
  cr_expect_eq(cf_tv_dtype(cf_add(f, b, zero_d)), CF_DOUBLE);
  cr_expect_eq(cf_tv_dtype(cf_add(f, x, zero_d)), CF_FLOAT);
  cr_expect_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  cf_fusion_destroy(f);
}

/* The values follow: float32 * double 0.1 multiplies by (float)0.1; half * double 0.1 by
 * (float)0.1 in float (torch's opmath), rounded once to half. */
Test(semantics, scalar_values_round_to_the_compute_type_once) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *x = tu_input(f, CF_FLOAT, 1, (int64_t[]){2});
  cf_tv *h = tu_input(f, CF_HALF, 1, (int64_t[]){2});
  cf_tv *s = cf_scalar_input(f, CF_DOUBLE);
  cf_fusion_add_output(f, cf_mul(f, x, s));
  cf_fusion_add_output(f, cf_mul(f, h, s));
  DLManagedTensor *in[3] = {ot_tensor(CF_FLOAT, 1, (int64_t[]){2}, (double[]){3, 7}),
                            ot_tensor(CF_HALF, 1, (int64_t[]){2}, (double[]){3, 7}), ot_tensor(CF_DOUBLE, 0, NULL,
                                                                                               (double[]){0.1})};
  DLManagedTensor *out[2] = {0};
  cr_assert_eq(ot_eval(f, 3, in, out), CF_OK, "%s", cf_fusion_error(f));
  float t = 0.1f;
  ot_expect_values(out[0], CF_FLOAT, 1, (int64_t[]){2}, (double[]){(float)(3 * t), (float)(7 * t)});
  double h3 = ir_half_to_double(ir_half_from_double((double)(3 * t)));
  double h7 = ir_half_to_double(ir_half_from_double((double)(7 * t)));
  ot_expect_values(out[1], CF_HALF, 1, (int64_t[]){2}, (double[]){h3, h7});
  ot_free_all(3, in);
  ot_free_all(2, out);
  cf_fusion_destroy(f);
}

/* ---- integer constants and integer math ----------------------------------------------- */

/* Evaluates out = op(a, b) for int64 (or int32) vectors; returns the outputs' values. */
static void eval_int(cf_tv *(*op)(cf_fusion *, cf_tv *, cf_tv *), cf_dtype dt, int n, const int64_t *a,
                     const int64_t *b, const int64_t *want) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *ta = tu_input(f, dt, 1, (int64_t[]){n}), *tb = tu_input(f, dt, 1, (int64_t[]){n});
  cf_fusion_add_output(f, op(f, ta, tb));
  DLManagedTensor *in[2] = {ot_tensor_i(dt, 1, (int64_t[]){n}, a), ot_tensor_i(dt, 1, (int64_t[]){n}, b)}, *out = NULL;
  cr_assert_eq(ot_eval(f, 2, in, &out), CF_OK, "%s", cf_fusion_error(f));
  for (int i = 0; i < n; i++) {
    int64_t got = ir_elem_load(ir_dl_elem_ptr(&out->dl_tensor, i), dt).i;
    cr_expect_eq(got, want[i], "element %d: %lld op %lld = %lld, expected %lld", i, (long long)a[i], (long long)b[i],
                 (long long)got, (long long)want[i]);
  }
  ot_free_all(2, in);
  cf_tensor_free(out);
  cf_fusion_destroy(f);
}

Test(semantics, int64_plus_an_exact_constant) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *x = tu_input(f, CF_INT64, 1, (int64_t[]){3});
  cf_fusion_add_output(f, cf_add(f, x, cf_const_int(f, CF_INT64, (INT64_C(1) << 62) + 1)));
  char *m = ot_math(f);
  cr_expect(strstr(m, "= full( {}, 4611686018427387905, int64_t );") != NULL, "%s", m);
  free(m);
  DLManagedTensor *in = ot_tensor_i(CF_INT64, 1, (int64_t[]){3}, (int64_t[]){0, 1, INT64_MAX}), *out = NULL;
  cr_assert_eq(ot_eval(f, 1, &in, &out), CF_OK, "%s", cf_fusion_error(f));
  const int64_t *v = out->dl_tensor.data;
  cr_expect_eq(v[0], (INT64_C(1) << 62) + 1);
  cr_expect_eq(v[1], (INT64_C(1) << 62) + 2);
  cr_expect_eq(v[2], INT64_MIN + (INT64_C(1) << 62)); /* wraps, as torch's int64 */
  cf_tensor_free(in);
  cf_tensor_free(out);
  cf_fusion_destroy(f);
}

Test(semantics, constants_refuse_values_their_dtype_lacks) {
  cf_fusion *f = cf_fusion_create();
  cr_expect_null(cf_const_int(f, CF_INT8, 200));
  cr_expect_str_eq(cf_fusion_error(f), "const_int: 200 is not a value of dtype int8_t");
  cf_fusion_clear_error(f);
  cr_expect_null(cf_const(f, CF_INT32, NAN));
  cr_expect_str_eq(cf_fusion_error(f), "const: NaN is not a value of dtype int");
  cf_fusion_clear_error(f);
  cr_expect_null(cf_full_int(f, 1, (int64_t[]){2}, 7, CF_FLOAT));
  cr_expect_str_eq(cf_fusion_error(f), "full_int: dtype float is not an integer dtype (use cf_full)");
  cf_fusion_destroy(f);
}

Test(semantics, integer_division_by_zero_and_int_min_by_minus_one) {
  const int64_t a[5] = {7, -7, 7, INT32_MIN, 0}, b[5] = {0, 0, -1, -1, 0};
  eval_int(cf_div, CF_INT32, 5, a, b, (int64_t[]){-1, -1, -7, INT32_MIN, -1});
  eval_int(cf_mod, CF_INT32, 5, a, b, (int64_t[]){7, -7, 0, 0, 0});
  eval_int(cf_remainder, CF_INT32, 5, a, b, (int64_t[]){7, -7, 0, 0, 0});
  eval_int(cf_floor_divide, CF_INT32, 5, a, b, (int64_t[]){-1, -1, -7, INT32_MIN, -1});
  const int64_t c[3] = {INT64_MIN, INT64_MIN, -7}, d[3] = {-1, 0, 2};
  eval_int(cf_div, CF_INT64, 3, c, d, (int64_t[]){INT64_MIN, -1, -3});
  eval_int(cf_mod, CF_INT64, 3, c, d, (int64_t[]){0, INT64_MIN, -1});
  eval_int(cf_remainder, CF_INT64, 3, c, d, (int64_t[]){0, INT64_MIN, 1});
  eval_int(cf_floor_divide, CF_INT64, 3, c, d, (int64_t[]){INT64_MIN, -1, -4});
}

Test(semantics, integer_pow_is_exact) {
  eval_int(cf_pow, CF_INT64, 4, (int64_t[]){7, 0, -1, 2}, (int64_t[]){20, -2, -3, 63},
           (int64_t[]){INT64_C(79792266297612001), 0, -1, INT64_MIN});
  /* int32 overflow wraps modulo 2^32, as torch's int32 pow: 3^21 = 10460353203 */
  eval_int(cf_pow, CF_INT32, 3, (int64_t[]){3, 1, 0}, (int64_t[]){21, -5, 0},
           (int64_t[]){(int32_t)(uint32_t)(UINT64_C(10460353203) & 0xFFFFFFFFu), 1, 1});
}

Test(semantics, shifts_past_the_width) {
  eval_int(cf_bitwise_left_shift, CF_INT32, 4, (int64_t[]){1, 1, 1, 3}, (int64_t[]){31, 32, -1, 1},
           (int64_t[]){INT32_MIN, 0, 0, 6});
  eval_int(cf_bitwise_right_shift, CF_INT32, 4, (int64_t[]){-8, -8, 8, INT32_MIN}, (int64_t[]){1, 40, 40, 31},
           (int64_t[]){-4, -1, 0, -1});
  eval_int(cf_bitwise_left_shift, CF_INT8, 2, (int64_t[]){100, 1}, (int64_t[]){5, 8}, (int64_t[]){-128, 0});
}

/* torch.gcd: never negative, gcd(0, 0) = 0, negative operands by absolute value; |INT_MIN|
 * wraps to INT_MIN of the dtype's width as in torch's two's complement. */
Test(semantics, gcd_of_absolute_values) {
  eval_int(cf_gcd, CF_INT64, 7, (int64_t[]){12, -12, 0, 0, 17, INT64_MIN, INT64_MIN},
           (int64_t[]){18, 18, 0, -5, 5, 0, 6}, (int64_t[]){6, 6, 0, 5, 1, INT64_MIN, 2});
  eval_int(cf_gcd, CF_INT32, 3, (int64_t[]){-48, INT32_MIN, 1000000007}, (int64_t[]){-36, 0, 999999937},
           (int64_t[]){12, INT32_MIN, 1});
  eval_int(cf_gcd, CF_INT8, 2, (int64_t[]){-128, -100}, (int64_t[]){0, 75}, (int64_t[]){-128, 25});
}

Test(semantics, gcd_refuses_floating_operands) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 1, (int64_t[]){2}), *b = tu_input(f, CF_INT32, 1, (int64_t[]){2});
  cr_expect_null(cf_gcd(f, a, b));
  cr_expect_str_eq(cf_fusion_error(f),
                   "gcd: T0 has dtype float, but gcd takes integer tensors; cast it first for T0_g_float[iS0{2}]");
  cf_fusion_destroy(f);
}

/* ---- NaN, empty reductions, var_mean, casts ------------------------------------------- */

Test(semantics, maximum_and_minimum_propagate_nan) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){2, 3}), *b = tu_input(f, CF_FLOAT, 2, (int64_t[]){2, 3});
  cf_fusion_add_output(f, cf_max(f, a, b));
  cf_fusion_add_output(f, cf_min(f, a, b));
  cf_fusion_add_output(f, cf_max_reduce(f, a, 1, (int[]){1}));
  cf_fusion_add_output(f, cf_min_reduce(f, a, 1, (int[]){1}));
  cf_fusion_add_output(f, cf_relu(f, a));
  DLManagedTensor *in[2] = {ot_tensor(CF_FLOAT, 2, (int64_t[]){2, 3}, (double[]){NAN, 1, 2, -1, 5, 0}),
                            ot_tensor(CF_FLOAT, 2, (int64_t[]){2, 3}, (double[]){0, NAN, 3, -2, 4, -0.0})};
  DLManagedTensor *out[5] = {0};
  cr_assert_eq(ot_eval(f, 2, in, out), CF_OK, "%s", cf_fusion_error(f));
  ot_expect_values(out[0], CF_FLOAT, 2, (int64_t[]){2, 3}, (double[]){NAN, NAN, 3, -1, 5, 0});
  ot_expect_values(out[1], CF_FLOAT, 2, (int64_t[]){2, 3}, (double[]){NAN, NAN, 2, -2, 4, 0});
  ot_expect_values(out[2], CF_FLOAT, 1, (int64_t[]){2}, (double[]){NAN, 5});
  ot_expect_values(out[3], CF_FLOAT, 1, (int64_t[]){2}, (double[]){NAN, -1});
  ot_expect_values(out[4], CF_FLOAT, 2, (int64_t[]){2, 3}, (double[]){NAN, 1, 2, 0, 5, 0});
  ot_free_all(2, in);
  ot_free_all(5, out);
  cf_fusion_destroy(f);
}

Test(semantics, max_and_min_of_an_empty_axis_are_errors) {
  for (int k = 0; k < 2; k++) {
    cf_fusion *f = cf_fusion_create();
    cf_tv *a = tu_input(f, CF_FLOAT, 2, NULL);
    cf_fusion_add_output(f, k ? cf_min_reduce(f, a, 1, (int[]){1}) : cf_max_reduce(f, a, 1, (int[]){1}));
    DLManagedTensor *in = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){4, 0}), *out = NULL;
    cr_expect_eq(ot_eval(f, 1, &in, &out), CF_ERR_INVALID_ARGUMENT);
    cr_expect_str_eq(cf_fusion_error(f), k ? "evaluate: min: axis 1 of T0 has extent 0; the min of an empty axis is "
                                             "undefined (torch refuses it too)"
                                           : "evaluate: max: axis 1 of T0 has extent 0; the max of an empty axis is "
                                             "undefined (torch refuses it too)");
    cf_tensor_free(in);
    cf_fusion_destroy(f);
  }
}

Test(semantics, sums_and_products_of_nothing_and_the_mean_of_nothing) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 2, NULL);
  cf_fusion_add_output(f, cf_sum(f, a, 1, (int[]){1}));
  cf_fusion_add_output(f, cf_prod(f, a, 1, (int[]){1}));
  cf_fusion_add_output(f, cf_mean(f, a, 1, (int[]){1}));
  cf_tv *var, *mean;
  cr_assert_eq(cf_var_mean(f, a, 1, (int[]){1}, 1, false, &var, &mean), CF_OK);
  cf_fusion_add_output(f, var);
  cf_fusion_add_output(f, mean);
  DLManagedTensor *in = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){2, 0}), *out[5] = {0};
  cr_assert_eq(ot_eval(f, 1, &in, out), CF_OK, "%s", cf_fusion_error(f));
  ot_expect_values(out[0], CF_FLOAT, 1, (int64_t[]){2}, (double[]){0, 0});
  ot_expect_values(out[1], CF_FLOAT, 1, (int64_t[]){2}, (double[]){1, 1});
  ot_expect_values(out[2], CF_FLOAT, 1, (int64_t[]){2}, (double[]){NAN, NAN});
  ot_expect_values(out[3], CF_FLOAT, 1, (int64_t[]){2}, (double[]){NAN, NAN});
  ot_expect_values(out[4], CF_FLOAT, 1, (int64_t[]){2}, (double[]){NAN, NAN});
  cf_tensor_free(in);
  ot_free_all(5, out);
  cf_fusion_destroy(f);
}

/* torch.var with a correction past the row's length: the divisor max(0, n - correction) is
 * 0, so a row of distinct values gives inf and a constant row nan; never negative. */
Test(semantics, var_mean_with_a_correction_past_the_length) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_DOUBLE, 2, (int64_t[]){2, 3});
  cf_tv *var, *mean;
  cr_assert_eq(cf_var_mean(f, a, 1, (int[]){1}, 5, false, &var, &mean), CF_OK);
  cf_fusion_add_output(f, var);
  DLManagedTensor *in = ot_tensor(CF_DOUBLE, 2, (int64_t[]){2, 3}, (double[]){1, 2, 3, 4, 4, 4}), *out = NULL;
  cr_assert_eq(ot_eval(f, 1, &in, &out), CF_OK, "%s", cf_fusion_error(f));
  ot_expect_values(out, CF_DOUBLE, 1, (int64_t[]){2}, (double[]){INFINITY, NAN});
  cf_tensor_free(in);
  cf_tensor_free(out);
  cf_fusion_destroy(f);
}

Test(semantics, float_to_integer_casts_saturate_and_send_nan_to_zero) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 1, (int64_t[]){6});
  cf_fusion_add_output(f, cf_cast(f, a, CF_INT32));
  cf_fusion_add_output(f, cf_cast(f, a, CF_INT8));
  cf_fusion_add_output(f, cf_cast(f, a, CF_UINT32));
  cf_fusion_add_output(f, cf_cast(f, a, CF_INT64));
  DLManagedTensor *in = ot_tensor(CF_FLOAT, 1, (int64_t[]){6}, (double[]){NAN, INFINITY, -INFINITY, 3e9, -2.7, 200.5});
  DLManagedTensor *out[4] = {0};
  cr_assert_eq(ot_eval(f, 1, &in, out), CF_OK, "%s", cf_fusion_error(f));
  ot_expect_values(out[0], CF_INT32, 1, (int64_t[]){6}, (double[]){0, INT32_MAX, INT32_MIN, INT32_MAX, -2, 200});
  ot_expect_values(out[1], CF_INT8, 1, (int64_t[]){6}, (double[]){0, 127, -128, 127, -2, 127});
  ot_expect_values(out[2], CF_UINT32, 1, (int64_t[]){6}, (double[]){0, UINT32_MAX, 0, 3e9, 0, 200});
  ot_expect_values(out[3], CF_INT64, 1, (int64_t[]){6}, (double[]){0, 0x1p63, -0x1p63, 3e9, -2, 200});
  cf_tensor_free(in);
  ot_free_all(4, out);
  cf_fusion_destroy(f);
}

/* ---- iota, triu, addcmul --------------------------------------------------------------- */

Test(semantics, iota_prints_and_refuses_bad_arguments) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *i = cf_iota(f, 4, 1, 2, CF_INT32);
  cf_fusion_add_output(f, i);
  ot_expect_def(i, "T0_g_int[iS0{4}]\n   = iota( {4}, 1, 2, int, axis=0 );\n");
  cr_expect_null(cf_iota(f, 3, 0.5, 1, CF_INT64));
  cr_expect_str_eq(cf_fusion_error(f), "iota: start 0.5 and step 1 of an integer iota must be integers");
  cf_fusion_clear_error(f);
  cr_expect_null(cf_iota(f, -1, 0, 1, CF_FLOAT));
  cr_expect_str_eq(cf_fusion_error(f), "iota: length -1 is negative");
  cf_fusion_clear_error(f);
  cr_expect_null(cf_iota(f, 2, 0, 1, CF_BOOL));
  cr_expect_str_eq(cf_fusion_error(f), "iota: dtype 8 is not a numeric dtype");
  cf_fusion_clear_error(f);
  cr_expect_null(cf_triu(f, tu_input(f, CF_FLOAT, 1, (int64_t[]){3}), 0));
  cr_expect_str_eq(cf_fusion_error(f), "triu: T1 has 1 axes; it needs a matrix (2 or more) for T1_g_float[iS1{3}]");
  cf_fusion_destroy(f);
}

Test(semantics, triu_of_an_integer_matrix_keeps_its_dtype) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *x = tu_input(f, CF_INT32, 2, (int64_t[]){3, 3});
  cf_tv *t = cf_triu(f, x, 1);
  cr_assert_eq(cf_tv_dtype(t), CF_INT32, "%s", cf_fusion_error(f));
  cf_fusion_add_output(f, t);
  DLManagedTensor *in = ot_tensor(CF_INT32, 2, (int64_t[]){3, 3}, (double[]){1, 2, 3, 4, 5, 6, 7, 8, 9}), *out = NULL;
  cr_assert_eq(ot_eval(f, 1, &in, &out), CF_OK, "%s", cf_fusion_error(f));
  ot_expect_values(out, CF_INT32, 2, (int64_t[]){3, 3}, (double[]){0, 2, 3, 0, 0, 6, 0, 0, 0});
  cf_tensor_free(in);
  cf_tensor_free(out);
  cf_fusion_destroy(f);
}

/* ---- slice, pad, cat ------------------------------------------------------------------ */

Test(semantics, resize_ops_print_and_refuse_bad_bounds) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *x = tu_input(f, CF_FLOAT, 2, (int64_t[]){3, 8}), *y = tu_input(f, CF_INT32, 2, NULL);
  cf_tv *s = cf_slice(f, x, 2, (int64_t[]){0, 1}, (int64_t[]){INT64_MAX, 7}, (int64_t[]){1, 2});
  ot_expect_def(s, "T2_l_float[iS4{3}, iS5{3}]\n   = slice( T0_g_float[iS0{3}, iS1{8}], starts {0, 1}, steps {1, 2} );\n");
  cf_tv *p = cf_pad(f, y, 2, (int64_t[]){2, 1}, 7);
  ot_expect_def(p, "T3_l_int[iS6{i0}, iS7{( i1 + 3 )}]\n   = pad( T1_g_int[iS2{i0}, iS3{i1}], widths {{0, 0}, {2, 1}}, 7 );\n");
  cf_tv *c = cf_cat(f, 2, (cf_tv *[]){x, y}, 1);
  cr_expect_eq(cf_tv_dtype(c), CF_FLOAT); /* torch.cat promotes; the int32 operand is cast */
  cr_expect_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  cr_expect_null(cf_slice(f, y, 2, (int64_t[]){0, 0}, (int64_t[]){INT64_MAX, 1}, (int64_t[]){1, 0}));
  cr_expect_str_eq(cf_fusion_error(f), "slice: step 0 of axis 1 is not positive for T1_g_int[iS2{i0}, iS3{i1}]");
  cf_fusion_clear_error(f);
  cr_expect_null(cf_pad(f, y, 2, (int64_t[]){1, 1}, 0.5));
  cr_expect_str_eq(cf_fusion_error(f), "pad: 0.5 is not a value of dtype int for T1_g_int[iS2{i0}, iS3{i1}]");
  cf_fusion_clear_error(f);
  cr_expect_null(cf_pad(f, x, 2, (int64_t[]){-1, 0}, 0));
  cr_expect_str_eq(cf_fusion_error(f), "pad: widths (-1, 0) of axis 1 are negative (slice to crop) for "
                                       "T0_g_float[iS0{3}, iS1{8}]");
  cf_fusion_clear_error(f);
  cr_expect_null(cf_cat(f, 2, (cf_tv *[]){x, tu_input(f, CF_FLOAT, 2, (int64_t[]){4, 2})}, 1));
  cr_expect_str_eq(cf_fusion_error(f), "cat: axis 0 has extent 3 in T0_g_float[iS0{3}, iS1{8}] but 4 in "
                                       "T6_g_float[iS13{4}, iS14{2}]");
  cf_fusion_destroy(f);
}
