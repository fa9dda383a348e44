/* Tests of the complex dtypes complex_float and complex_double (issue 26) below the
 * kernels: the dtype rows and DLPack codes, torch's promotion (complex above floating; a
 * complex scalar with a float32 tensor gives complex64), casts to and from real types
 * (the real part; imaginary 0), the evaluator's complex math against hand values (torch's
 * and NumPy's principal branches, the branch cut of sqrt on the negative real axis with
 * the sign of a zero imaginary part), sums and means, constants, and the exact refusals of
 * the ops that do not take complex operands. */
#include <complex.h>

#include "ops_test_util.h"

static cf_fusion *f;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(complex_dtypes, .init = setup, .fini = teardown);

/* A 1-D complex host tensor {re[i] + im[i] i}. */
static DLManagedTensor *cx_tensor(cf_dtype dt, int n, const double *re, const double *im) {
  DLManagedTensor *m = cf_tensor_host(dt, 1, (int64_t[]){n});
  cr_assert_not_null(m);
  for (int i = 0; i < n; i++) ir_elem_store(ir_dl_elem_ptr(&m->dl_tensor, i), dt, ir_complex(re[i], im[i]), CF_COMPLEX_DOUBLE);
  return m;
}

/* Expects element i of t to be re + im i exactly (NaN equals NaN; the signs of zeros count). */
static void expect_cx(const DLManagedTensor *m, int64_t i, double re, double im) {
  double r = cf_tensor_get(&m->dl_tensor, i), j = cf_tensor_get_imag(&m->dl_tensor, i);
  bool ok_r = (r == re && signbit(r) == signbit(re)) || (isnan(r) && isnan(re));
  bool ok_i = (j == im && signbit(j) == signbit(im)) || (isnan(j) && isnan(im));
  cr_expect(ok_r && ok_i, "element %lld is %.17g%+.17gi, expected %.17g%+.17gi", (long long)i, r, j, re, im);
}

Test(complex_dtypes, dtype_rows_dlpack_and_promotion) {
  cr_expect_eq(cf_dtype_size(CF_COMPLEX_FLOAT), 8);
  cr_expect_eq(cf_dtype_size(CF_COMPLEX_DOUBLE), 16);
  cr_expect_str_eq(cf_dtype_name(CF_COMPLEX_FLOAT), "complex_float");
  cf_dtype t;
  cr_expect(ir_dtype_from_dl((DLDataType){5, 64, 1}, &t) && t == CF_COMPLEX_FLOAT);
  cr_expect(ir_dtype_from_dl((DLDataType){5, 128, 1}, &t) && t == CF_COMPLEX_DOUBLE);
  cr_expect(!ir_dtype_from_dl((DLDataType){5, 32, 1}, &t)); /* complex32: none here */
  DLDataType dl = ir_dtype_to_dl(CF_COMPLEX_DOUBLE);
  cr_expect(dl.code == 5 && dl.bits == 128 && dl.lanes == 1);
  cr_expect_eq(ir_dtype_promote(CF_COMPLEX_FLOAT, CF_FLOAT), CF_COMPLEX_FLOAT);
  cr_expect_eq(ir_dtype_promote(CF_COMPLEX_FLOAT, CF_DOUBLE), CF_COMPLEX_DOUBLE); /* torch's promote_types */
  cr_expect_eq(ir_dtype_promote(CF_HALF, CF_COMPLEX_FLOAT), CF_COMPLEX_FLOAT);
  cr_expect_eq(ir_dtype_promote(CF_INT64, CF_COMPLEX_FLOAT), CF_COMPLEX_FLOAT);
  cr_expect_eq(ir_dtype_promote(CF_COMPLEX_DOUBLE, CF_COMPLEX_FLOAT), CF_COMPLEX_DOUBLE);
  cr_expect_eq(ir_dtype_accumulate(CF_COMPLEX_FLOAT), CF_COMPLEX_FLOAT);
  /* torch.result_type: a complex scalar with a float32 tensor is complex64, with a float64
   * tensor complex128; a float scalar leaves a complex tensor alone */
  cr_expect_eq(ir_dtype_result_type(2, (cf_dtype[]){CF_FLOAT, CF_COMPLEX_DOUBLE}, (IrTier[]){IR_TIER_DIM, IR_TIER_SCALAR}),
               CF_COMPLEX_FLOAT);
  cr_expect_eq(ir_dtype_result_type(2, (cf_dtype[]){CF_DOUBLE, CF_COMPLEX_FLOAT}, (IrTier[]){IR_TIER_DIM, IR_TIER_SCALAR}),
               CF_COMPLEX_DOUBLE);
  cr_expect_eq(ir_dtype_result_type(2, (cf_dtype[]){CF_COMPLEX_FLOAT, CF_DOUBLE}, (IrTier[]){IR_TIER_DIM, IR_TIER_SCALAR}),
               CF_COMPLEX_FLOAT);
  cr_expect_eq(ir_dtype_result_type(2, (cf_dtype[]){CF_INT32, CF_COMPLEX_DOUBLE}, (IrTier[]){IR_TIER_DIM, IR_TIER_SCALAR}),
               CF_COMPLEX_FLOAT);
}

Test(complex_dtypes, result_dtypes_of_the_ops) {
  cf_tv *x = tu_input(f, CF_COMPLEX_FLOAT, 1, NULL), *d = tu_input(f, CF_DOUBLE, 1, NULL);
  cr_expect_eq(cf_tv_dtype(cf_abs(f, x)), CF_FLOAT);
  cr_expect_eq(cf_tv_dtype(cf_real(f, x)), CF_FLOAT);
  cr_expect_eq(cf_tv_dtype(cf_imag(f, x)), CF_FLOAT);
  cr_expect_eq(cf_tv_dtype(cf_real(f, d)), CF_DOUBLE);
  cr_expect_eq(cf_tv_dtype(cf_conj(f, x)), CF_COMPLEX_FLOAT);
  cr_expect_eq(cf_tv_dtype(cf_rsqrt(f, x)), CF_COMPLEX_FLOAT);
  cr_expect_eq(cf_tv_dtype(cf_eq(f, x, x)), CF_BOOL);
  cr_expect_eq(cf_tv_dtype(cf_mul(f, x, d)), CF_COMPLEX_DOUBLE);
  cr_expect_eq(cf_tv_dtype(cf_truediv(f, x, x)), CF_COMPLEX_FLOAT);
  cr_expect_eq(cf_tv_dtype(cf_sum(f, x, 1, (int[]){0})), CF_COMPLEX_FLOAT);
  cr_expect_eq(cf_tv_dtype(cf_mean(f, x, 1, (int[]){0})), CF_COMPLEX_FLOAT);
  cr_expect_eq(cf_tv_dtype(cf_mul(f, tu_input(f, CF_FLOAT, 1, NULL), cf_const_complex(f, CF_COMPLEX_DOUBLE, 3, 0.5))),
               CF_COMPLEX_FLOAT);
  cr_expect_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
}

/* Each refusal names the op and the tensor, as torch refuses them. */
Test(complex_dtypes, ops_that_do_not_take_complex_refuse_it) {
  cf_tv *x = tu_input(f, CF_COMPLEX_FLOAT, 1, (int64_t[]){4});
  cr_expect_null(cf_max(f, x, x));
  cr_expect_str_eq(cf_fusion_error(f), "max: T0 has dtype complex_float, but max does not take complex tensors for "
                                       "T0_g_complex_float[iS0{4}]");
  cf_fusion_clear_error(f);
  cr_expect_null(cf_floor(f, x));
  cr_expect_str_eq(cf_fusion_error(f), "floor: T0 has dtype complex_float, but floor does not take complex tensors "
                                       "for T0_g_complex_float[iS0{4}]");
  cf_fusion_clear_error(f);
  cr_expect_null(cf_lt(f, x, tu_input(f, CF_FLOAT, 1, (int64_t[]){4})));
  cr_expect(strstr(cf_fusion_error(f), "lt: T0 has dtype complex_float, but lt does not take complex tensors"));
  cf_fusion_clear_error(f);
  cr_expect_null(cf_reduce(f, CF_REDUCE_MAX, x, 1, (int[]){0}, false));
  cr_expect(strstr(cf_fusion_error(f), "max_reduce: T0 has dtype complex_float, but max_reduce does not take complex"));
  cf_fusion_clear_error(f);
  cr_expect_null(cf_imag(f, tu_input(f, CF_FLOAT, 1, (int64_t[]){4})));
  cr_expect(strstr(cf_fusion_error(f), "imag: T2 has dtype float, but imag takes complex tensors; cast it first"),
            "%s", cf_fusion_error(f));
  cf_fusion_clear_error(f);
  cr_expect_null(cf_const_complex(f, CF_FLOAT, 1, 2));
  cr_expect_str_eq(cf_fusion_error(f), "const_complex: dtype float is not a complex dtype (complex_float or "
                                       "complex_double)");
}

/* The evaluator against hand values: exact ones where the math is exact. */
Test(complex_dtypes, evaluator_math_against_hand_values) {
  cf_tv *a = tu_input(f, CF_COMPLEX_DOUBLE, 1, NULL), *b = tu_input(f, CF_COMPLEX_DOUBLE, 1, NULL);
  cf_tv *outs[] = {cf_mul(f, a, b),  cf_div(f, a, b),  cf_add(f, a, b),  cf_sub(f, a, b), cf_neg(f, a),
                   cf_abs(f, a),     cf_sqrt(f, a),    cf_real(f, a),    cf_imag(f, a),   cf_conj(f, a),
                   cf_eq(f, a, b),   cf_ne(f, a, b),   cf_reciprocal(f, b)};
  enum { N = sizeof outs / sizeof *outs };
  for (int i = 0; i < N; i++) cf_fusion_add_output(f, outs[i]);
  /* (3+4i, 1+2i); (-4+0i, -4+0i); (-4-0i, 2i) */
  DLManagedTensor *in[2] = {cx_tensor(CF_COMPLEX_DOUBLE, 3, (double[]){3, -4, -4}, (double[]){4, 0, -0.0}),
                            cx_tensor(CF_COMPLEX_DOUBLE, 3, (double[]){1, -4, 0}, (double[]){2, 0, 2})};
  DLManagedTensor *o[N] = {0};
  cr_assert_eq(ot_eval(f, 2, in, o), CF_OK, "%s", cf_fusion_error(f));
  expect_cx(o[0], 0, -5, 10);
  expect_cx(o[1], 0, 2.2, -0.4);
  expect_cx(o[2], 0, 4, 6);
  expect_cx(o[3], 0, 2, 2);
  expect_cx(o[4], 0, -3, -4);
  cr_expect_eq(cf_tensor_get(&o[5]->dl_tensor, 0), 5.0);
  expect_cx(o[6], 0, 2, 1);
  expect_cx(o[6], 1, 0, 2);    /* the principal root of -4 */
  expect_cx(o[6], 2, 0, -2);   /* -4 - 0i is below the branch cut: NumPy's sqrt(complex(-4, -0.0)) */
  cr_expect_eq(cf_tensor_get(&o[7]->dl_tensor, 0), 3.0);
  cr_expect_eq(cf_tensor_get(&o[8]->dl_tensor, 2), -0.0);
  expect_cx(o[9], 0, 3, -4);
  double want_eq[] = {0, 1, 0}, want_ne[] = {1, 0, 1};
  ot_expect_values(o[10], CF_BOOL, 1, (int64_t[]){3}, want_eq);
  ot_expect_values(o[11], CF_BOOL, 1, (int64_t[]){3}, want_ne);
  expect_cx(o[12], 2, 0, -0.5);
  ot_free_all(N, o), ot_free_all(2, in);
}

/* exp, log and rsqrt: torch's values (NumPy's) within a few ulps; rsqrt is 1 / sqrt(z). */
Test(complex_dtypes, evaluator_exp_log_rsqrt) {
  cf_tv *a = tu_input(f, CF_COMPLEX_FLOAT, 1, NULL);
  cf_fusion_add_output(f, cf_exp(f, a)), cf_fusion_add_output(f, cf_log(f, a)), cf_fusion_add_output(f, cf_rsqrt(f, a));
  DLManagedTensor *in[1] = {cx_tensor(CF_COMPLEX_FLOAT, 2, (double[]){0, 3}, (double[]){M_PI, 4})};
  DLManagedTensor *o[3] = {0};
  cr_assert_eq(ot_eval(f, 1, in, o), CF_OK, "%s", cf_fusion_error(f));
  double complex z[2] = {(float)M_PI * I, 3 + 4 * I}; /* finite parts: a + b * I is exact */
  for (int i = 0; i < 2; i++) {
    double complex w[3] = {cexp(z[i]), clog(z[i]), 1.0 / csqrt(z[i])};
    for (int k = 0; k < 3; k++) {
      float re = (float)creal(w[k]), im = (float)cimag(w[k]);
      cr_expect_eq((float)cf_tensor_get(&o[k]->dl_tensor, i), re, "output %d element %d", k, i);
      cr_expect_eq((float)cf_tensor_get_imag(&o[k]->dl_tensor, i), im, "output %d element %d", k, i);
    }
  }
  expect_cx(o[2], 1, 0.4000000059604645, -0.20000000298023224); /* (2 - i) / 5 in complex64 */
  ot_free_all(3, o), ot_free_all(1, in);
}

/* Casts: complex -> real keeps the real part (bool: either part nonzero), real -> complex
 * has imaginary part 0; complex_double -> complex_float rounds each part. Sums accumulate
 * in the complex type; a constant keeps its imaginary part. */
Test(complex_dtypes, casts_sums_and_constants) {
  cf_tv *a = tu_input(f, CF_COMPLEX_DOUBLE, 2, NULL), *r = tu_input(f, CF_INT32, 2, NULL);
  cf_tv *outs[] = {cf_cast(f, a, CF_FLOAT),  cf_cast(f, a, CF_INT64),          cf_cast(f, a, CF_BOOL),
                   cf_cast(f, r, CF_COMPLEX_FLOAT), cf_cast(f, a, CF_COMPLEX_FLOAT), cf_sum(f, a, 1, (int[]){1}),
                   cf_mean(f, a, 1, (int[]){0}),
                   cf_add(f, r, cf_const_complex(f, CF_COMPLEX_DOUBLE, 3, 0.5))};
  enum { N = sizeof outs / sizeof *outs };
  for (int i = 0; i < N; i++) cf_fusion_add_output(f, outs[i]);
  cr_expect_eq(cf_tv_dtype(outs[7]), CF_COMPLEX_FLOAT);
  DLManagedTensor *in[2] = {cf_tensor_host(CF_COMPLEX_DOUBLE, 2, (int64_t[]){2, 2}),
                            ot_tensor_i(CF_INT32, 2, (int64_t[]){2, 2}, (int64_t[]){1, 2, 3, 4})};
  double re[] = {2.5, 0, 0.1, -7}, im[] = {-1, 3, 0, 1};
  for (int i = 0; i < 4; i++) ir_elem_store(ir_dl_elem_ptr(&in[0]->dl_tensor, i), CF_COMPLEX_DOUBLE, ir_complex(re[i], im[i]), CF_COMPLEX_DOUBLE);
  DLManagedTensor *o[N] = {0};
  cr_assert_eq(ot_eval(f, 2, in, o), CF_OK, "%s", cf_fusion_error(f));
  ot_expect_values(o[0], CF_FLOAT, 2, (int64_t[]){2, 2}, (double[]){2.5, 0, (float)0.1, -7});
  ot_expect_values(o[1], CF_INT64, 2, (int64_t[]){2, 2}, (double[]){2, 0, 0, -7});
  ot_expect_values(o[2], CF_BOOL, 2, (int64_t[]){2, 2}, (double[]){1, 1, 1, 1});
  expect_cx(o[3], 3, 4, 0);
  expect_cx(o[4], 2, (float)0.1, 0);
  expect_cx(o[5], 0, 2.5, 2);
  expect_cx(o[5], 1, -6.9, 1);
  expect_cx(o[6], 0, 1.3, -0.5);
  expect_cx(o[6], 1, -3.5, 2);
  expect_cx(o[7], 0, 4, 0.5);
  char *math = ot_math(f);
  cr_expect(strstr(math, "full( {}, complex(3, 0.5), complex_double )"), "%s", math);
  free(math);
  ot_free_all(N, o), ot_free_all(2, in);
}
