/* Tests of ir/eval.c, the reference evaluator: every op against hand-computed results
 * for every dtype, rounding at each tensor, broadcasting, reductions, transposes, strided
 * and symbolic inputs, and the evaluator's errors. Transcendental results are written as
 * the float (hex literal) nearest the exact value. */
#include "ops_test_util.h"

typedef cf_tv *(*unary_fn)(cf_fusion *, cf_tv *);
typedef cf_tv *(*binary_fn)(cf_fusion *, cf_tv *, cf_tv *);


/* Builds out = op(in) on one input of dtype dt holding vals, evaluates it and checks the
 * output's dtype and values. */
static void check_unary(unary_fn op, cf_dtype dt, int n, const double *vals, cf_dtype want_dt, const double *want) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, dt, 1, (int64_t[]){n});
  cf_fusion_add_output(f, op(f, a));
  DLManagedTensor *in = ot_tensor(dt, 1, (int64_t[]){n}, vals), *out = NULL;
  cr_assert_eq(ot_eval(f, 1, &in, &out), CF_OK, "%s", cf_fusion_error(f));
  ot_expect_values(out, want_dt, 1, (int64_t[]){n}, want);
  cf_tensor_free(in);
  cf_tensor_free(out);
  cf_fusion_destroy(f);
}

static void check_binary(binary_fn op, cf_dtype da, cf_dtype db, int n, const double *a, const double *b,
                         cf_dtype want_dt, const double *want) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *ta = tu_input(f, da, 1, (int64_t[]){n});
  cf_tv *tb = tu_input(f, db, 1, (int64_t[]){n});
  cf_fusion_add_output(f, op(f, ta, tb));
  DLManagedTensor *in[2] = {ot_tensor(da, 1, (int64_t[]){n}, a), ot_tensor(db, 1, (int64_t[]){n}, b)}, *out = NULL;
  cr_assert_eq(ot_eval(f, 2, in, &out), CF_OK, "%s", cf_fusion_error(f));
  ot_expect_values(out, want_dt, 1, (int64_t[]){n}, want);
  ot_free_all(2, in);
  cf_tensor_free(out);
  cf_fusion_destroy(f);
}

/* ---- copies ------------------------------------------------------------------------------ */

Test(eval, set_copies_every_dtype_exactly) {
  static const cf_dtype dts[] = {CF_FLOAT, CF_DOUBLE, CF_HALF,   CF_BFLOAT16, CF_INT8,
                                 CF_INT32, CF_INT64,  CF_UINT32, CF_BOOL};
  for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
    cf_fusion *f = cf_fusion_create();
    cf_tv *a = tu_input(f, dts[i], 2, (int64_t[]){3, 5});
    cf_fusion_add_output(f, cf_set(f, a));
    DLManagedTensor *in = cf_tensor_host(dts[i], 2, (int64_t[]){3, 5}), *out = NULL;
    cf_tensor_fill_random(&in->dl_tensor, 7 + i);
    cr_assert_eq(ot_eval(f, 1, &in, &out), CF_OK, "%s", cf_fusion_error(f));
    cr_expect(cf_tensor_equal(&out->dl_tensor, &in->dl_tensor), "dtype %s", cf_dtype_name(dts[i]));
    cf_tensor_free(in);
    cf_tensor_free(out);
    cf_fusion_destroy(f);
  }
}

/* ---- unary ops ------------------------------------------------------------------------------ */

static const double ux[5] = {-2, -0.5, 0, 1, 4};

Test(eval, unary_exact_ops_on_float) {
  check_unary(cf_neg, CF_FLOAT, 5, ux, CF_FLOAT, (double[]){2, 0.5, 0, -1, -4});
  check_unary(cf_abs, CF_FLOAT, 5, ux, CF_FLOAT, (double[]){2, 0.5, 0, 1, 4});
  check_unary(cf_relu, CF_FLOAT, 5, ux, CF_FLOAT, (double[]){0, 0, 0, 1, 4});
  check_unary(cf_sqrt, CF_FLOAT, 5, ux, CF_FLOAT, (double[]){NAN, NAN, 0, 1, 2});
  check_unary(cf_rsqrt, CF_FLOAT, 5, ux, CF_FLOAT, (double[]){NAN, NAN, INFINITY, 1, 0.5});
  check_unary(cf_reciprocal, CF_FLOAT, 5, ux, CF_FLOAT, (double[]){-0.5, -2, INFINITY, 1, 0.25});
  check_unary(cf_log, CF_FLOAT, 5, ux, CF_FLOAT, (double[]){NAN, NAN, -INFINITY, 0, 0x1.62e43p+0});
}

Test(eval, unary_transcendental_ops_on_float) {
  check_unary(cf_exp, CF_FLOAT, 5, ux, CF_FLOAT,
              (double[]){0x1.152aaap-3, 0x1.368b3p-1, 1, 0x1.5bf0a8p+1, 0x1.b4c902p+5});
  check_unary(cf_sigmoid, CF_FLOAT, 5, ux, CF_FLOAT,
              (double[]){0x1.e84152p-4, 0x1.829a06p-2, 0.5, 0x1.764d5p-1, 0x1.f6ca82p-1});
  check_unary(cf_tanh, CF_FLOAT, 5, ux, CF_FLOAT,
              (double[]){-0x1.ed9506p-1, -0x1.d9353ep-2, 0, 0x1.85efacp-1, 0x1.ffa818p-1});
  /* gelu(x) = 0.5 x (1 + erf(x / sqrt 2)), the exact (tanh-free) form. */
  check_unary(cf_gelu, CF_FLOAT, 5, ux, CF_FLOAT,
              (double[]){-0x1.74bcf8p-5, -0x1.3bf144p-3, 0, 0x1.aec4bep-1, 0x1.fffbdap+1});
  check_unary(cf_sin, CF_FLOAT, 5, ux, CF_FLOAT,
              (double[]){-0x1.d18f6ep-1, -0x1.eaee88p-2, 0, 0x1.aed548p-1, -0x1.837b9ep-1});
  check_unary(cf_cos, CF_FLOAT, 5, ux, CF_FLOAT,
              (double[]){-0x1.aa2266p-2, 0x1.c1528p-1, 1, 0x1.14a28p-1, -0x1.4eaa6p-1});
  check_unary(cf_tan, CF_FLOAT, 5, ux, CF_FLOAT, (double[]){(float)tan(-2.0), (float)tan(-0.5), 0, (float)tan(1.0),
                                                            (float)tan(4.0)});
  check_unary(cf_erf, CF_FLOAT, 5, ux, CF_FLOAT, (double[]){(float)erf(-2.0), (float)erf(-0.5), 0, (float)erf(1.0),
                                                            (float)erf(4.0)});
}

Test(eval, clamp) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){5});
  cf_fusion_add_input(f, x);
  cf_tv *c = cf_clamp(f, x, -1, 2);
  cf_fusion_add_output(f, c);
  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  DLManagedTensor *in = cf_tensor_host(CF_FLOAT, 1, (int64_t[]){5}), *out = NULL;
  float *d = in->dl_tensor.data;
  const float v[5] = {-3, -1, 0.5f, 2, 7}, want[5] = {-1, -1, 0.5f, 2, 2};
  memcpy(d, v, sizeof v);
  const DLTensor *ins[1] = {&in->dl_tensor};
  cr_assert_eq(cf_fusion_evaluate(f, 1, ins, &out), CF_OK, "%s", cf_fusion_error(f));
  for (int i = 0; i < 5; i++) cr_expect_eq(((float *)out->dl_tensor.data)[i], want[i], "element %d", i);
  cr_expect_null(cf_clamp(f, x, 3, 2));
  cr_expect_str_eq(cf_fusion_error(f), "clamp: the bounds [3, 2] are not an interval (lo <= hi, neither NaN)");
  cf_tensor_free(in), cf_tensor_free(out);
  cf_fusion_destroy(f);
}

Test(eval, floor_and_ceil) {
  check_unary(cf_floor, CF_FLOAT, 5, (double[]){-2.5, -0.5, 0, 1, 4.75}, CF_FLOAT, (double[]){-3, -1, 0, 1, 4});
  check_unary(cf_ceil, CF_FLOAT, 5, (double[]){-2.5, -0.5, 0, 1, 4.75}, CF_FLOAT, (double[]){-2, -0.0, 0, 1, 5});
  /* of an integer: the integer itself, in its dtype (as torch) */
  check_unary(cf_floor, CF_INT32, 3, (double[]){-7, 0, 9}, CF_INT32, (double[]){-7, 0, 9});
  check_unary(cf_ceil, CF_INT32, 3, (double[]){-7, 0, 9}, CF_INT32, (double[]){-7, 0, 9});
}

Test(eval, unary_ops_on_double_keep_double_precision) {
  check_unary(cf_gelu, CF_DOUBLE, 1, (double[]){-1}, CF_DOUBLE, (double[]){-0x1.44ed0bb7cb20cp-3});
  check_unary(cf_sigmoid, CF_DOUBLE, 1, (double[]){2}, CF_DOUBLE, (double[]){0x1.c2f7d5a8a79c9p-1});
  check_unary(cf_reciprocal, CF_DOUBLE, 1, (double[]){3}, CF_DOUBLE, (double[]){1.0 / 3.0});
}

Test(eval, unary_ops_on_half_and_bfloat16_round_to_nearest) {
  /* e = 2.71828...: the nearest half (spacing 2^-9 in [2, 4)) and bfloat16 (2^-6) are both 2.71875. */
  check_unary(cf_exp, CF_HALF, 2, (double[]){0, 1}, CF_HALF, (double[]){1, 2.71875});
  check_unary(cf_exp, CF_BFLOAT16, 2, (double[]){0, 1}, CF_BFLOAT16, (double[]){1, 2.71875});
  /* sqrt 2 = 1.41421...: 1448 * 2^-10 in half, 181 * 2^-7 in bfloat16. */
  check_unary(cf_sqrt, CF_HALF, 1, (double[]){2}, CF_HALF, (double[]){1.4140625});
  check_unary(cf_sqrt, CF_BFLOAT16, 1, (double[]){2}, CF_BFLOAT16, (double[]){1.4140625});
  check_unary(cf_neg, CF_HALF, 2, (double[]){65504, -0.5}, CF_HALF, (double[]){-65504, 0.5});
}

Test(eval, unary_math_on_integers_computes_in_float) {
  check_unary(cf_exp, CF_INT32, 2, (double[]){0, 1}, CF_FLOAT, (double[]){1, 0x1.5bf0a8p+1});
  check_unary(cf_sqrt, CF_INT64, 2, (double[]){4, 9}, CF_FLOAT, (double[]){2, 3});
  check_unary(cf_reciprocal, CF_INT8, 2, (double[]){4, -2}, CF_FLOAT, (double[]){0.25, -0.5});
  check_unary(cf_cos, CF_BOOL, 2, (double[]){0, 1}, CF_FLOAT, (double[]){1, 0x1.14a28p-1});
}

Test(eval, unary_integer_ops_wrap_like_c) {
  check_unary(cf_neg, CF_INT8, 3, (double[]){-128, 5, 0}, CF_INT8, (double[]){-128, -5, 0});
  check_unary(cf_abs, CF_INT8, 2, (double[]){-128, -3}, CF_INT8, (double[]){-128, 3});
  check_unary(cf_relu, CF_INT32, 2, (double[]){-3, 3}, CF_INT32, (double[]){0, 3});
  check_unary(cf_neg, CF_INT64, 2, (double[]){-0x1p63, 7}, CF_INT64, (double[]){-0x1p63, -7});
  check_unary(cf_abs, CF_BOOL, 2, (double[]){0, 1}, CF_BOOL, (double[]){0, 1});
}

/* ---- binary ops ---------------------------------------------------------------------------- */

static const double ba[4] = {1, -2, 3.5, 0}, bb[4] = {2, 4, -0.5, 0};

Test(eval, binary_arithmetic_on_float) {
  check_binary(cf_add, CF_FLOAT, CF_FLOAT, 4, ba, bb, CF_FLOAT, (double[]){3, 2, 3, 0});
  check_binary(cf_sub, CF_FLOAT, CF_FLOAT, 4, ba, bb, CF_FLOAT, (double[]){-1, -6, 4, 0});
  check_binary(cf_mul, CF_FLOAT, CF_FLOAT, 4, ba, bb, CF_FLOAT, (double[]){2, -8, -1.75, 0});
  check_binary(cf_div, CF_FLOAT, CF_FLOAT, 4, ba, bb, CF_FLOAT, (double[]){0.5, -0.5, -7, NAN});
  check_binary(cf_max, CF_FLOAT, CF_FLOAT, 4, ba, bb, CF_FLOAT, (double[]){2, 4, 3.5, 0});
  check_binary(cf_min, CF_FLOAT, CF_FLOAT, 4, ba, bb, CF_FLOAT, (double[]){1, -2, -0.5, 0});
  check_binary(cf_pow, CF_FLOAT, CF_FLOAT, 4, ba, bb, CF_FLOAT, (double[]){1, 16, 0x1.11aceep-1, 1});
}

Test(eval, binary_comparisons_give_bool) {
  check_binary(cf_eq, CF_FLOAT, CF_FLOAT, 4, ba, bb, CF_BOOL, (double[]){0, 0, 0, 1});
  check_binary(cf_ne, CF_FLOAT, CF_FLOAT, 4, ba, bb, CF_BOOL, (double[]){1, 1, 1, 0});
  check_binary(cf_lt, CF_FLOAT, CF_FLOAT, 4, ba, bb, CF_BOOL, (double[]){1, 1, 0, 0});
  check_binary(cf_le, CF_FLOAT, CF_FLOAT, 4, ba, bb, CF_BOOL, (double[]){1, 1, 0, 1});
  check_binary(cf_gt, CF_FLOAT, CF_FLOAT, 4, ba, bb, CF_BOOL, (double[]){0, 0, 1, 0});
  check_binary(cf_ge, CF_FLOAT, CF_FLOAT, 4, ba, bb, CF_BOOL, (double[]){0, 0, 1, 1});
  check_binary(cf_lt, CF_INT64, CF_INT8, 2, (double[]){-5, 200}, (double[]){-4, 100}, CF_BOOL, (double[]){1, 0});
}

Test(eval, binary_on_double) {
  check_binary(cf_div, CF_DOUBLE, CF_DOUBLE, 1, (double[]){1}, (double[]){3}, CF_DOUBLE, (double[]){1.0 / 3.0});
  check_binary(cf_add, CF_DOUBLE, CF_FLOAT, 1, (double[]){0x1p-40}, (double[]){1}, CF_DOUBLE, (double[]){1 + 0x1p-40});
}

Test(eval, binary_integer_ops_truncate_and_wrap) {
  const double a[4] = {7, -7, 5, 2}, b[4] = {2, 2, 0, 10};
  /* 5 / 0 is -1: cfuser's rule for integer division by zero (no trap, every backend) */
  check_binary(cf_div, CF_INT32, CF_INT32, 4, a, b, CF_INT32, (double[]){3, -3, -1, 0});
  check_binary(cf_pow, CF_INT32, CF_INT32, 4, a, b, CF_INT32, (double[]){49, 49, 1, 1024});
  check_binary(cf_max, CF_INT32, CF_INT32, 4, a, b, CF_INT32, (double[]){7, 2, 5, 10});
  check_binary(cf_add, CF_INT8, CF_INT8, 2, (double[]){100, -100}, (double[]){100, -100}, CF_INT8, (double[]){-56, 56});
  check_binary(cf_pow, CF_INT64, CF_INT64, 3, (double[]){2, 1, -1}, (double[]){-1, -3, -3}, CF_INT64,
               (double[]){0, 1, -1});
  check_binary(cf_mul, CF_INT64, CF_INT64, 1, (double[]){0x1p62}, (double[]){4}, CF_INT64, (double[]){0});
  check_binary(cf_sub, CF_UINT32, CF_UINT32, 1, (double[]){0}, (double[]){1}, CF_UINT32, (double[]){4294967295.0});
}

Test(eval, mixed_operands_are_converted_to_the_promoted_type) {
  /* 16777217 is not a float: converted to float it equals 16777216, as in C. */
  check_binary(cf_eq, CF_INT32, CF_FLOAT, 1, (double[]){16777217}, (double[]){16777216}, CF_BOOL, (double[]){1});
  check_binary(cf_add, CF_INT32, CF_FLOAT, 1, (double[]){1}, (double[]){0.5}, CF_FLOAT, (double[]){1.5});
  check_binary(cf_add, CF_INT8, CF_INT64, 1, (double[]){100}, (double[]){100}, CF_INT64, (double[]){200});
  check_binary(cf_mul, CF_HALF, CF_BFLOAT16, 1, (double[]){3}, (double[]){0.5}, CF_FLOAT, (double[]){1.5});
}

Test(eval, half_arithmetic_rounds_ties_to_even) {
  /* 1 + 2^-11 is halfway between 1 and 1 + 2^-10: even is 1. 1 + 3*2^-11 is halfway between
   * 1 + 2^-10 and 1 + 2^-9: even is 1 + 2^-9. */
  check_binary(cf_add, CF_HALF, CF_HALF, 2, (double[]){1, 1}, (double[]){0x1p-11, 0x3p-11}, CF_HALF,
               (double[]){1, 1 + 0x1p-9});
  /* 65504 + 16 = 65520 is halfway to 65536, which does not exist: infinity. */
  check_binary(cf_add, CF_HALF, CF_HALF, 2, (double[]){65504, 65504}, (double[]){15, 16}, CF_HALF,
               (double[]){65504, INFINITY});
}

Test(eval, bfloat16_arithmetic_rounds_ties_to_even) {
  /* 3 * (1 + 2^-7) = 3.0234375 = 193.5 * 2^-6: even is 194 * 2^-6. */
  check_binary(cf_mul, CF_BFLOAT16, CF_BFLOAT16, 2, (double[]){1.5, 3}, (double[]){1.5, 1 + 0x1p-7}, CF_BFLOAT16,
               (double[]){2.25, 3.03125});
}

Test(eval, bool_arithmetic_converts_like_c) {
  const double a[4] = {0, 0, 1, 1}, b[4] = {0, 1, 0, 1};
  check_binary(cf_add, CF_BOOL, CF_BOOL, 4, a, b, CF_BOOL, (double[]){0, 1, 1, 1});
  check_binary(cf_mul, CF_BOOL, CF_BOOL, 4, a, b, CF_BOOL, (double[]){0, 0, 0, 1});
  check_binary(cf_eq, CF_BOOL, CF_BOOL, 4, a, b, CF_BOOL, (double[]){1, 0, 0, 1});
  check_binary(cf_max, CF_BOOL, CF_BOOL, 4, a, b, CF_BOOL, (double[]){0, 1, 1, 1});
  check_binary(cf_add, CF_BOOL, CF_INT32, 2, (double[]){1, 1}, (double[]){41, -1}, CF_INT32, (double[]){42, 0});
}

static void check_scalar(cf_tv *(*op)(cf_fusion *, cf_tv *, double), cf_dtype dt, double x, double s, cf_dtype want_dt,
                         double want) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, dt, 1, (int64_t[]){1});
  cf_fusion_add_output(f, op(f, a, s));
  DLManagedTensor *in = ot_tensor(dt, 1, (int64_t[]){1}, &x), *out = NULL;
  cr_assert_eq(ot_eval(f, 1, &in, &out), CF_OK, "%s", cf_fusion_error(f));
  ot_expect_values(out, want_dt, 1, (int64_t[]){1}, &want);
  cf_tensor_free(in);
  cf_tensor_free(out);
  cf_fusion_destroy(f);
}

Test(eval, scalar_rhs_ops) {
  check_scalar(cf_add_scalar, CF_FLOAT, 1.5, 2.5, CF_FLOAT, 4);
  /* The constant is a double, as in C: (float)(3.0f * 0.1) is the float nearest 0.3. */
  check_scalar(cf_mul_scalar, CF_FLOAT, 3, 0.1, CF_FLOAT, 0x1.333334p-2);
  check_scalar(cf_add_scalar, CF_INT32, 3, 2, CF_INT32, 5);
  check_scalar(cf_mul_scalar, CF_INT32, 3, 0.5, CF_FLOAT, 1.5);
  check_scalar(cf_add_scalar, CF_BOOL, 1, 1, CF_INT64, 2);
  check_scalar(cf_add_scalar, CF_INT8, 127, 1, CF_INT8, -128);
  check_scalar(cf_mul_scalar, CF_HALF, 1000, 100, CF_HALF, INFINITY);
}

/* ---- where and cast ------------------------------------------------------------------------------ */

Test(eval, where_selects_with_broadcast_operands) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *c = tu_input(f, CF_BOOL, 2, (int64_t[]){2, 1});
  cf_tv *a = tu_input(f, CF_INT32, 2, (int64_t[]){2, 3});
  cf_tv *b = tu_input(f, CF_FLOAT, 2, (int64_t[]){1, 1});
  cf_fusion_add_output(f, cf_where(f, c, a, b));
  DLManagedTensor *in[3] = {ot_tensor(CF_BOOL, 2, (int64_t[]){2, 1}, (double[]){1, 0}),
                            ot_tensor(CF_INT32, 2, (int64_t[]){2, 3}, (double[]){0, 1, 2, 3, 4, 5}),
                            ot_tensor(CF_FLOAT, 2, (int64_t[]){1, 1}, (double[]){-1.5})};
  DLManagedTensor *out = NULL;
  cr_assert_eq(ot_eval(f, 3, in, &out), CF_OK, "%s", cf_fusion_error(f));
  ot_expect_values(out, CF_FLOAT, 2, (int64_t[]){2, 3}, (double[]){0, 1, 2, -1.5, -1.5, -1.5});
  ot_free_all(3, in);
  cf_tensor_free(out);
  cf_fusion_destroy(f);
}

Test(eval, cast_float_to_integers_truncates_and_saturates) {
  cf_dtype dts[] = {CF_INT32, CF_INT8, CF_UINT32};
  const double x[5] = {3.7, -3.7, 1e10, NAN, -1e10};
  const double want[3][5] = {{3, -3, 2147483647, 0, -2147483648.0}, {3, -3, 127, 0, -128}, {3, 0, 4294967295.0, 0, 0}};
  for (int i = 0; i < 3; i++) {
    cf_fusion *f = cf_fusion_create();
    cf_tv *a = tu_input(f, CF_FLOAT, 1, (int64_t[]){5});
    cf_fusion_add_output(f, cf_cast(f, a, dts[i]));
    DLManagedTensor *in = ot_tensor(CF_FLOAT, 1, (int64_t[]){5}, x), *out = NULL;
    cr_assert_eq(ot_eval(f, 1, &in, &out), CF_OK, "%s", cf_fusion_error(f));
    ot_expect_values(out, dts[i], 1, (int64_t[]){5}, want[i]);
    cf_tensor_free(in);
    cf_tensor_free(out);
    cf_fusion_destroy(f);
  }
}

static void check_cast(cf_dtype from, cf_dtype to, int n, const double *x, const double *want) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, from, 1, (int64_t[]){n});
  cf_fusion_add_output(f, cf_cast(f, a, to));
  DLManagedTensor *in = ot_tensor(from, 1, (int64_t[]){n}, x), *out = NULL;
  cr_assert_eq(ot_eval(f, 1, &in, &out), CF_OK, "%s", cf_fusion_error(f));
  ot_expect_values(out, to, 1, (int64_t[]){n}, want);
  cf_tensor_free(in);
  cf_tensor_free(out);
  cf_fusion_destroy(f);
}

Test(eval, cast_between_floating_types_rounds) {
  /* 0.1f = 0x1.99999ap-4; to half (10 fraction bits): 0x1.998p-4 = 0.0999755859375. */
  check_cast(CF_FLOAT, CF_HALF, 2, (double[]){0.1, 70000}, (double[]){0.0999755859375, INFINITY});
  check_cast(CF_FLOAT, CF_BFLOAT16, 1, (double[]){0.1}, (double[]){0x1.9ap-4});
  check_cast(CF_DOUBLE, CF_FLOAT, 3, (double[]){1e-50, 1e39, 1 + 0x1p-30}, (double[]){0, INFINITY, 1});
  check_cast(CF_HALF, CF_DOUBLE, 1, (double[]){0x1p-24}, (double[]){0x1p-24});
  check_cast(CF_BFLOAT16, CF_HALF, 1, (double[]){0x1p-20}, (double[]){0x1p-20});
}

Test(eval, cast_to_and_from_bool_and_integers) {
  check_cast(CF_FLOAT, CF_BOOL, 4, (double[]){0.5, 0, -2, NAN}, (double[]){1, 0, 1, 1});
  check_cast(CF_BOOL, CF_FLOAT, 2, (double[]){1, 0}, (double[]){1, 0});
  check_cast(CF_INT64, CF_INT8, 2, (double[]){300, -129}, (double[]){44, 127});
  check_cast(CF_INT64, CF_FLOAT, 1, (double[]){16777217}, (double[]){16777216});
  check_cast(CF_INT32, CF_UINT32, 1, (double[]){-1}, (double[]){4294967295.0});
  check_cast(CF_INT32, CF_BOOL, 3, (double[]){0, 2, -1}, (double[]){0, 1, 1});
}

/* ---- broadcast, reductions, permutes --------------------------------------------------------------- */

Test(eval, broadcast_axes_read_index_zero) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 1, (int64_t[]){3});
  cf_tv *b = tu_input(f, CF_FLOAT, 2, (int64_t[]){1, 4});
  cf_tv *ab = cf_broadcast(f, a, 2, (bool[]){false, true});
  cf_fusion_add_output(f, ab);
  cf_fusion_add_output(f, cf_add(f, ab, b));
  DLManagedTensor *in[2] = {ot_tensor(CF_FLOAT, 1, (int64_t[]){3}, (double[]){1, 2, 3}),
                            ot_tensor(CF_FLOAT, 2, (int64_t[]){1, 4}, (double[]){10, 20, 30, 40})};
  DLManagedTensor *out[2] = {NULL, NULL};
  cr_assert_eq(ot_eval(f, 2, in, out), CF_OK, "%s", cf_fusion_error(f));
  ot_expect_values(out[0], CF_FLOAT, 2, (int64_t[]){3, 1}, (double[]){1, 2, 3});
  ot_expect_values(out[1], CF_FLOAT, 2, (int64_t[]){3, 4}, (double[]){11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43});
  ot_free_all(2, in);
  ot_free_all(2, out);
  cf_fusion_destroy(f);
}

/* Reduces iota of shape {2, 3} (0 1 2 / 3 4 5) of dtype dt over the given axes. */
static void check_reduce(cf_tv *(*op)(cf_fusion *, cf_tv *, int, const int *), cf_dtype dt, int naxes, const int *axes,
                         cf_dtype want_dt, int rank, const int64_t *sizes, const double *want) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, dt, 2, (int64_t[]){2, 3});
  cf_fusion_add_output(f, op(f, a, naxes, axes));
  DLManagedTensor *in = cf_tensor_host(dt, 2, (int64_t[]){2, 3}), *out = NULL;
  cf_tensor_fill_iota(&in->dl_tensor);
  cr_assert_eq(ot_eval(f, 1, &in, &out), CF_OK, "%s", cf_fusion_error(f));
  ot_expect_values(out, want_dt, rank, sizes, want);
  cf_tensor_free(in);
  cf_tensor_free(out);
  cf_fusion_destroy(f);
}

Test(eval, sum_over_each_axis_and_all) {
  check_reduce(cf_sum, CF_FLOAT, 1, (int[]){1}, CF_FLOAT, 1, (int64_t[]){2}, (double[]){3, 12});
  check_reduce(cf_sum, CF_DOUBLE, 1, (int[]){-2}, CF_DOUBLE, 1, (int64_t[]){3}, (double[]){3, 5, 7});
  check_reduce(cf_sum, CF_INT32, 2, (int[]){0, 1}, CF_INT64, 0, NULL, (double[]){15});
  check_reduce(cf_sum, CF_BOOL, 1, (int[]){1}, CF_INT64, 1, (int64_t[]){2}, (double[]){2, 3});
}

Test(eval, max_and_min_reductions) {
  check_reduce(cf_max_reduce, CF_FLOAT, 1, (int[]){1}, CF_FLOAT, 1, (int64_t[]){2}, (double[]){2, 5});
  check_reduce(cf_min_reduce, CF_INT64, 1, (int[]){0}, CF_INT64, 1, (int64_t[]){3}, (double[]){0, 1, 2});
  check_reduce(cf_max_reduce, CF_HALF, 2, (int[]){1, 0}, CF_HALF, 0, NULL, (double[]){5});
  check_reduce(cf_min_reduce, CF_BFLOAT16, 1, (int[]){1}, CF_BFLOAT16, 1, (int64_t[]){2}, (double[]){0, 3});
  check_reduce(cf_max_reduce, CF_BOOL, 1, (int[]){1}, CF_BOOL, 1, (int64_t[]){2}, (double[]){1, 1});
  check_reduce(cf_min_reduce, CF_INT8, 1, (int[]){1}, CF_INT8, 1, (int64_t[]){2}, (double[]){0, 3});
}

Test(eval, reductions_accumulate_wide_and_round_once) {
  /* 2048 + 1 + 1 in half: one add at a time gives 2048 (2049 rounds to even), but the
   * evaluator accumulates in double and rounds 2050 once. int8 sums widen to int64. */
  cf_fusion *f = cf_fusion_create();
  cf_tv *h = tu_input(f, CF_HALF, 1, (int64_t[]){3});
  cf_tv *i = tu_input(f, CF_INT8, 1, (int64_t[]){3});
  cf_fusion_add_output(f, cf_sum(f, h, 1, (int[]){0}));
  cf_fusion_add_output(f, cf_sum(f, i, 1, (int[]){0}));
  DLManagedTensor *in[2] = {ot_tensor(CF_HALF, 1, (int64_t[]){3}, (double[]){2048, 1, 1}),
                            ot_tensor(CF_INT8, 1, (int64_t[]){3}, (double[]){100, 100, 100})};
  DLManagedTensor *out[2] = {NULL, NULL};
  cr_assert_eq(ot_eval(f, 2, in, out), CF_OK, "%s", cf_fusion_error(f));
  ot_expect_values(out[0], CF_HALF, 0, NULL, (double[]){2050});
  ot_expect_values(out[1], CF_INT64, 0, NULL, (double[]){300});
  ot_free_all(2, in);
  ot_free_all(2, out);
  cf_fusion_destroy(f);
}

Test(eval, reduction_outputs_feed_elementwise_ops) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){2, 3});
  cf_tv *b = tu_input(f, CF_FLOAT, 1, (int64_t[]){2});
  cf_tv *s = cf_sum(f, a, 1, (int[]){1});
  cf_fusion_add_output(f, cf_sub(f, s, b));
  cf_fusion_add_output(f, cf_broadcast(f, s, 2, (bool[]){false, true}));
  DLManagedTensor *in[2] = {cf_tensor_host(CF_FLOAT, 2, (int64_t[]){2, 3}),
                            ot_tensor(CF_FLOAT, 1, (int64_t[]){2}, (double[]){1, 2})};
  cf_tensor_fill_iota(&in[0]->dl_tensor);
  DLManagedTensor *out[2] = {NULL, NULL};
  cr_assert_eq(ot_eval(f, 2, in, out), CF_OK, "%s", cf_fusion_error(f));
  ot_expect_values(out[0], CF_FLOAT, 1, (int64_t[]){2}, (double[]){2, 10});
  ot_expect_values(out[1], CF_FLOAT, 2, (int64_t[]){2, 1}, (double[]){3, 12});
  ot_free_all(2, in);
  ot_free_all(2, out);
  cf_fusion_destroy(f);
}

Test(eval, reducing_a_broadcast_axis) {
  check_reduce(cf_sum, CF_FLOAT, 1, (int[]){0}, CF_FLOAT, 1, (int64_t[]){3}, (double[]){3, 5, 7});
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_INT32, 2, (int64_t[]){1, 3});
  cf_fusion_add_output(f, cf_sum(f, a, 1, (int[]){0}));
  DLManagedTensor *in = ot_tensor(CF_INT32, 2, (int64_t[]){1, 3}, (double[]){4, 5, 6}), *out = NULL;
  cr_assert_eq(ot_eval(f, 1, &in, &out), CF_OK, "%s", cf_fusion_error(f));
  ot_expect_values(out, CF_INT64, 1, (int64_t[]){3}, (double[]){4, 5, 6});
  cf_tensor_free(in);
  cf_tensor_free(out);
  cf_fusion_destroy(f);
}

Test(eval, transpose_of_a_matrix) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_INT64, 2, (int64_t[]){2, 3});
  cf_fusion_add_output(f, cf_transpose(f, a, 0, 1));
  DLManagedTensor *in = cf_tensor_host(CF_INT64, 2, (int64_t[]){2, 3}), *out = NULL;
  cf_tensor_fill_iota(&in->dl_tensor);
  cr_assert_eq(ot_eval(f, 1, &in, &out), CF_OK, "%s", cf_fusion_error(f));
  ot_expect_values(out, CF_INT64, 2, (int64_t[]){3, 2}, (double[]){0, 3, 1, 4, 2, 5});
  cf_tensor_free(in);
  cf_tensor_free(out);
  cf_fusion_destroy(f);
}

Test(eval, permute_of_three_axes) {
  /* out[i][j][k] = in[j][k][i] for perm {2, 0, 1} of a {2, 3, 4} iota: in[j][k][i] = 12j + 4k + i. */
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_INT32, 3, (int64_t[]){2, 3, 4});
  cf_tv *p = cf_permute(f, a, 3, (int[]){2, 0, 1});
  cf_fusion_add_output(f, cf_add(f, p, p));
  DLManagedTensor *in = cf_tensor_host(CF_INT32, 3, (int64_t[]){2, 3, 4}), *out = NULL;
  cf_tensor_fill_iota(&in->dl_tensor);
  cr_assert_eq(ot_eval(f, 1, &in, &out), CF_OK, "%s", cf_fusion_error(f));
  double want[24];
  for (int i = 0, n = 0; i < 4; i++)
    for (int j = 0; j < 2; j++)
      for (int k = 0; k < 3; k++) want[n++] = 2 * (12 * j + 4 * k + i);
  ot_expect_values(out, CF_INT32, 3, (int64_t[]){4, 2, 3}, want);
  cf_tensor_free(in);
  cf_tensor_free(out);
  cf_fusion_destroy(f);
}

Test(eval, permute_of_a_reduction_output) {
  /* sum over axis 1 of a {2, 3, 4} iota: s[i][k] = sum_j 12i + 4j + k = 36i + 12 + 3k; then transposed. */
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_INT64, 3, (int64_t[]){2, 3, 4});
  cf_fusion_add_output(f, cf_transpose(f, cf_sum(f, a, 1, (int[]){1}), 0, 1));
  DLManagedTensor *in = cf_tensor_host(CF_INT64, 3, (int64_t[]){2, 3, 4}), *out = NULL;
  cf_tensor_fill_iota(&in->dl_tensor);
  cr_assert_eq(ot_eval(f, 1, &in, &out), CF_OK, "%s", cf_fusion_error(f));
  ot_expect_values(out, CF_INT64, 2, (int64_t[]){4, 2}, (double[]){12, 48, 15, 51, 18, 54, 21, 57});
  cf_tensor_free(in);
  cf_tensor_free(out);
  cf_fusion_destroy(f);
}

Test(eval, schedules_do_not_change_results) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){3, 5});
  cf_tv *b = cf_exp(f, a);
  cf_tv *c = cf_mul_scalar(f, b, 2);
  cf_fusion_add_output(f, c);
  DLManagedTensor *in = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){3, 5}), *before = NULL, *after = NULL;
  cf_tensor_fill_random(&in->dl_tensor, 3);
  cr_assert_eq(ot_eval(f, 1, &in, &before), CF_OK, "%s", cf_fusion_error(f));
  cf_merge(f, c, 0);
  cf_split(f, c, 0, 4);
  cf_parallelize(f, c, 1, CF_PT_TIDX);
  cf_split_outer(f, b, 1, 2);
  cf_set_memory_type(f, b, CF_MEM_SHARED);
  cr_assert_eq(ot_eval(f, 1, &in, &after), CF_OK, "%s", cf_fusion_error(f));
  cr_expect(cf_tensor_equal(&before->dl_tensor, &after->dl_tensor));
  ot_free_all(3, (DLManagedTensor *[]){in, before, after});
  cf_fusion_destroy(f);
}

/* ---- inputs ------------------------------------------------------------------------------------- */

/* A {2, 3} float input with the given strides whose storage holds 0, 1, 2, ... */
static DLManagedTensor *strided_iota(const int64_t *strides, int64_t storage) {
  DLManagedTensor *m = cf_tensor_host_strided(CF_FLOAT, 2, (int64_t[]){2, 3}, strides);
  for (int64_t i = 0; i < storage; i++) ((float *)m->dl_tensor.data)[i] = (float)i;
  return m;
}

Test(eval, strided_inputs_are_read_in_logical_order) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){2, 3});
  cf_fusion_add_output(f, cf_set(f, a));
  DLManagedTensor *cm = strided_iota((int64_t[]){1, 2}, 6), *padded = strided_iota((int64_t[]){4, 1}, 7), *out = NULL;
  cr_assert_eq(ot_eval(f, 1, &cm, &out), CF_OK, "%s", cf_fusion_error(f));
  ot_expect_values(out, CF_FLOAT, 2, (int64_t[]){2, 3}, (double[]){0, 2, 4, 1, 3, 5});
  cf_tensor_free(out);
  cr_assert_eq(ot_eval(f, 1, &padded, &out), CF_OK, "%s", cf_fusion_error(f));
  ot_expect_values(out, CF_FLOAT, 2, (int64_t[]){2, 3}, (double[]){0, 1, 2, 4, 5, 6});
  cf_tensor_free(out);
  /* A byte offset moves the first element; NULL strides mean row-major. */
  padded->dl_tensor.byte_offset = sizeof(float);
  padded->dl_tensor.strides = NULL;
  cr_assert_eq(ot_eval(f, 1, &padded, &out), CF_OK, "%s", cf_fusion_error(f));
  ot_expect_values(out, CF_FLOAT, 2, (int64_t[]){2, 3}, (double[]){1, 2, 3, 4, 5, 6});
  cf_tensor_free(out);
  cf_tensor_free(cm);
  cf_tensor_free(padded);
  cf_fusion_destroy(f);
}

Test(eval, strided_fusion_inputs_bind_their_strides) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = cf_tensor_strided(f, CF_FLOAT, 2);
  cf_fusion_add_input(f, a);
  cf_fusion_add_output(f, cf_mul_scalar(f, a, 2));
  DLManagedTensor *cm = strided_iota((int64_t[]){1, 2}, 6), *out = NULL;
  cr_assert_eq(ot_eval(f, 1, &cm, &out), CF_OK, "%s", cf_fusion_error(f));
  ot_expect_values(out, CF_FLOAT, 2, (int64_t[]){2, 3}, (double[]){0, 4, 8, 2, 6, 10});
  cf_tensor_free(out);
  cf_tensor_free(cm);
  cf_fusion_destroy(f);
}

Test(eval, symbolic_sizes_are_bound_per_call) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_INT32, 2, NULL);
  cf_tv *b = tu_input(f, CF_INT32, 2, NULL);
  cf_fusion_add_output(f, cf_sum(f, cf_mul(f, a, b), 1, (int[]){1}));
  static const int64_t shapes[3][2] = {{2, 3}, {4, 1}, {0, 5}};
  for (int s = 0; s < 3; s++) {
    DLManagedTensor *in[2] = {cf_tensor_host(CF_INT32, 2, shapes[s]), cf_tensor_host(CF_INT32, 2, shapes[s])};
    cf_tensor_fill_iota(&in[0]->dl_tensor);
    cf_tensor_fill_iota(&in[1]->dl_tensor);
    DLManagedTensor *out = NULL;
    cr_assert_eq(ot_eval(f, 2, in, &out), CF_OK, "%s", cf_fusion_error(f));
    static const double want[3][4] = {{5, 50}, {0, 1, 4, 9}, {0}};
    ot_expect_values(out, CF_INT64, 1, (int64_t[]){shapes[s][0]}, want[s]);
    ot_free_all(2, in);
    cf_tensor_free(out);
  }
  cf_fusion_destroy(f);
}

Test(eval, rank_zero_tensors) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_DOUBLE, 0, (int64_t[]){0});
  cf_fusion_add_output(f, cf_neg(f, a));
  DLManagedTensor *in = ot_tensor(CF_DOUBLE, 0, NULL, (double[]){2.5}), *out = NULL;
  cr_assert_eq(ot_eval(f, 1, &in, &out), CF_OK, "%s", cf_fusion_error(f));
  ot_expect_values(out, CF_DOUBLE, 0, NULL, (double[]){-2.5});
  cf_tensor_free(in);
  cf_tensor_free(out);
  cf_fusion_destroy(f);
}

Test(eval, every_intermediate_is_rounded_to_its_dtype) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 1, (int64_t[]){1});
  cf_tv *h = cf_cast(f, a, CF_HALF);
  cf_fusion_add_output(f, cf_cast(f, h, CF_FLOAT));
  cf_fusion_add_output(f, cf_set(f, a));
  DLManagedTensor *in = ot_tensor(CF_FLOAT, 1, (int64_t[]){1}, (double[]){0.1}), *out[2] = {NULL, NULL};
  cr_assert_eq(ot_eval(f, 1, &in, out), CF_OK, "%s", cf_fusion_error(f));
  ot_expect_values(out[0], CF_FLOAT, 1, (int64_t[]){1}, (double[]){0.0999755859375});
  ot_expect_values(out[1], CF_FLOAT, 1, (int64_t[]){1}, (double[]){0x1.99999ap-4});
  cf_tensor_free(in);
  ot_free_all(2, out);
  cf_fusion_destroy(f);
}

/* ---- errors ------------------------------------------------------------------------------------------ */

/* A fusion out = a + b of two {2, 4} float inputs (symbolic when sym). */
static cf_fusion *add_fusion(bool sym) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 2, sym ? NULL : (int64_t[]){2, 4});
  cf_tv *b = tu_input(f, CF_FLOAT, 2, sym ? NULL : (int64_t[]){2, 4});
  cf_fusion_add_output(f, cf_add(f, a, b));
  return f;
}

static void expect_eval_error(cf_fusion *f, int n, DLManagedTensor **in, const char *msg) {
  DLManagedTensor *out = (DLManagedTensor *)(uintptr_t)1; /* must be reset to NULL */
  cr_expect_eq(ot_eval(f, n, in, &out), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_error(f), msg);
  cr_expect_null(out);
  cf_fusion_clear_error(f);
}

Test(eval, wrong_number_of_inputs) {
  cf_fusion *f = add_fusion(false);
  DLManagedTensor *in[2] = {cf_tensor_host(CF_FLOAT, 2, (int64_t[]){2, 4}), NULL};
  expect_eval_error(f, 1, in, "evaluate: got 1 inputs, the fusion has 2");
  expect_eval_error(f, 2, in, "evaluate: input 1 (T1) is NULL");
  cf_tensor_free(in[0]);
  cf_fusion_destroy(f);
}

Test(eval, wrong_dtype_rank_or_size) {
  cf_fusion *f = add_fusion(false);
  DLManagedTensor *ok = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){2, 4});
  DLManagedTensor *dbl = cf_tensor_host(CF_DOUBLE, 2, (int64_t[]){2, 4});
  DLManagedTensor *r3 = cf_tensor_host(CF_FLOAT, 3, (int64_t[]){2, 4, 1});
  DLManagedTensor *big = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){2, 5});
  expect_eval_error(f, 2, (DLManagedTensor *[]){ok, dbl}, "evaluate: input 1 (T1) has dtype double, expected float");
  expect_eval_error(f, 2, (DLManagedTensor *[]){r3, ok}, "evaluate: input 0 (T0) has 3 dimensions, expected 2");
  expect_eval_error(f, 2, (DLManagedTensor *[]){big, ok},
                    "evaluate: input 0 (T0) has size 5 in dimension 1, expected 4");
  ok->dl_tensor.dtype = (DLDataType){kDLUInt, 8, 1};
  expect_eval_error(f, 2, (DLManagedTensor *[]){ok, ok},
                    "evaluate: input 0 (T0) has dtype DLPack code 1 bits 8 lanes 1, expected float");
  ok->dl_tensor.dtype = (DLDataType){kDLFloat, 32, 1};
  ok->dl_tensor.device.device_type = kDLCUDA;
  expect_eval_error(f, 2, (DLManagedTensor *[]){ok, ok}, "evaluate: input 0 (T0) is not in host memory");
  ok->dl_tensor.device.device_type = kDLCPU;
  ot_free_all(4, (DLManagedTensor *[]){ok, dbl, r3, big});
  cf_fusion_destroy(f);
}

Test(eval, symbolic_extents_assumed_equal_are_checked) {
  cf_fusion *f = add_fusion(true);
  DLManagedTensor *a = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){3, 4}),
                  *b = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){5, 4});
  expect_eval_error(f, 2, (DLManagedTensor *[]){a, b}, "evaluate: add: axis 0 has extent 3 in T0 but 5 in T1");
  cf_tensor_free(a);
  cf_tensor_free(b);
  cf_fusion_destroy(f);
}

Test(eval, tensors_that_are_not_inputs) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){4});
  cf_fusion_add_output(f, cf_set(f, a));
  expect_eval_error(f, 0, NULL,
                    "verify: T0, operand 0 of the Set defining T1, is not computed by any expression and is not "
                    "an input; add it with cf_fusion_add_input");
  cf_fusion_destroy(f);
  f = cf_fusion_create();
  a = cf_tensor_symbolic(f, CF_FLOAT, 1);
  cf_fusion_add_output(f, cf_set(f, a));
  expect_eval_error(f, 0, NULL,
                    "verify: T0, operand 0 of the Set defining T1, is not computed by any expression and is not "
                    "an input; add it with cf_fusion_add_input");
  cf_fusion_destroy(f);
}

Test(eval, bad_calls) {
  cf_fusion *f = add_fusion(false);
  DLManagedTensor *in[2] = {cf_tensor_host(CF_FLOAT, 2, (int64_t[]){2, 4}),
                            cf_tensor_host(CF_FLOAT, 2, (int64_t[]){2, 4})};
  cr_expect_eq(ot_eval(f, 2, in, NULL), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_error(f), "evaluate: argument 4 (outputs) is NULL");
  cf_fusion_clear_error(f);
  DLManagedTensor *out = NULL;
  cr_expect_eq(cf_fusion_evaluate(f, 2, NULL, &out), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_error(f), "evaluate: argument 3 (inputs) is NULL");
  cf_fusion_clear_error(f);
  cr_expect_eq(cf_fusion_evaluate(NULL, 0, NULL, &out), CF_ERR_INVALID_ARGUMENT);
  cf_fusion *empty = cf_fusion_create();
  cr_expect_eq(cf_fusion_evaluate(empty, 0, NULL, &out), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_error(empty), "evaluate: the fusion has no outputs");
  cf_fusion_destroy(empty);
  /* A fusion with an earlier error evaluates nothing and reports that error. */
  cr_expect_null(cf_transpose(f, cf_fusion_input(f, 0), 0, 5));
  cr_expect_eq(ot_eval(f, 2, in, &out), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_error(f), "transpose: axis 5 out of range for T0_g_float[iS0{2}, iS1{4}]");
  cf_fusion_clear_error(f);
  cr_expect_eq(ot_eval(f, 2, in, &out), CF_OK, "%s", cf_fusion_error(f));
  cf_tensor_free(out);
  ot_free_all(2, in);
  cf_fusion_destroy(f);
}
