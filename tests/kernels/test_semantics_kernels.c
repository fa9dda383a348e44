/* The semantics table in kernels (issues 26 and 28): the fusions of tests/ir/test_semantics.c
 * on given values, scheduled by define and run (cf_fusion_execute) and inlined by hand
 * (cf_inline_most + an executor), each run on the host backend (and on CUDA when a device
 * is present) and compared with the reference evaluator exactly (NaN equals NaN), and the
 * CUDA source compiled with NVRTC for sm_90a. What these pin: integer division by zero and
 * INT_MIN / -1 run without a trap (the host backend died of SIGFPE), float-to-integer casts
 * give the evaluator's saturated values on the host and print ops_math.h's conversions for
 * CUDA (no C undefined behaviour), an int64 constant reaches the kernel exactly, NaN goes
 * through maximum and the max reduction, max of an empty axis is a run-time error with its
 * message, and var_mean of an empty axis is nan, nan. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_check.h"

#include "ir/dtype.h"

static cf_fusion *f;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(semantics_kernels, .init = setup, .fini = teardown);

static const cf_executor_options host = {.backend = CF_BACKEND_HOST};

static DLManagedTensor *ints(cf_dtype dt, int n, const int64_t *v) {
  DLManagedTensor *t = cf_tensor_host(dt, 1, (int64_t[]){n});
  for (int i = 0; i < n; i++) ir_elem_store(ir_dl_elem_ptr(&t->dl_tensor, i), dt, (IrElem){.i = v[i]}, CF_INT64);
  return t;
}

static DLManagedTensor *floats(cf_dtype dt, int rank, const int64_t *sizes, const double *v) {
  DLManagedTensor *t = cf_tensor_host(dt, rank, sizes);
  for (int64_t i = 0; i < cf_tensor_numel(&t->dl_tensor); i++)
    ir_elem_store(ir_dl_elem_ptr(&t->dl_tensor, i), dt, (IrElem){.d = v[i]}, CF_DOUBLE);
  return t;
}

/* define and run and the inlined fusion on the host equal the evaluator exactly; CUDA
 * within cuda_tol (kernel_check.h). */
static char *run_everywhere_tol(int nin, DLManagedTensor **in, double cuda_tol) {
  return kc_run_everywhere(f, nin, in, 0, cuda_tol);
}

static char *run_everywhere(int nin, DLManagedTensor **in) { return run_everywhere_tol(nin, in, 0); }

Test(semantics_kernels, integer_division_by_zero_and_int_min_by_minus_one_do_not_trap) {
  cf_tv *a = tu_input(f, CF_INT32, 1, NULL), *b = tu_input(f, CF_INT32, 1, NULL);
  cf_tv *c = tu_input(f, CF_INT64, 1, NULL), *d = tu_input(f, CF_INT64, 1, NULL);
  cf_tv *outs[] = {cf_div(f, a, b),           cf_mod(f, a, b), cf_remainder(f, a, b), cf_floor_divide(f, a, b),
                   cf_div(f, c, d),           cf_mod(f, c, d), cf_fmod(f, c, d),      cf_floor_divide(f, c, d),
                   cf_pow(f, c, d),           cf_pow(f, a, b)};
  for (size_t i = 0; i < sizeof outs / sizeof *outs; i++) cf_fusion_add_output(f, outs[i]);
  const int64_t x[6] = {7, -7, INT32_MIN, 0, 9, INT32_MAX}, y[6] = {0, 0, -1, 0, -2, 2};
  const int64_t z[6] = {INT64_MIN, INT64_MIN, 7, 0, -9, 7}, w[6] = {-1, 0, 20, -2, 4, -1};
  DLManagedTensor *in[4] = {ints(CF_INT32, 6, x), ints(CF_INT32, 6, y), ints(CF_INT64, 6, z), ints(CF_INT64, 6, w)};
  /* the evaluator's values are pinned in tests/ir/test_semantics.c; here every backend
   * agrees with them, and the CUDA forms guard the division */
  char *src = run_everywhere(4, in);
  cr_expect(strstr(src, "cf_div(") && strstr(src, "cf_mod(") && strstr(src, "cf_pow("), "%s", src);
  free(src);
}

Test(semantics_kernels, gcd_agrees_with_the_evaluator) {
  cf_tv *a = tu_input(f, CF_INT32, 1, NULL), *b = tu_input(f, CF_INT32, 1, NULL);
  cf_tv *c = tu_input(f, CF_INT64, 1, NULL), *d = tu_input(f, CF_INT64, 1, NULL);
  cf_fusion_add_output(f, cf_gcd(f, a, b));
  cf_fusion_add_output(f, cf_gcd(f, cf_add(f, c, d), d)); /* inside a larger fusion */
  const int64_t x[6] = {12, -12, 0, INT32_MIN, 7, 0}, y[6] = {18, 18, 0, 0, -21, -9};
  const int64_t z[6] = {INT64_MIN, 100, 0, -3, 35, 5}, w[6] = {0, -75, 0, 9, 14, -5};
  DLManagedTensor *in[4] = {ints(CF_INT32, 6, x), ints(CF_INT32, 6, y), ints(CF_INT64, 6, z), ints(CF_INT64, 6, w)};
  char *src = run_everywhere(4, in);
  cr_expect(strstr(src, "cf_gcd("), "%s", src);
  free(src);
}

Test(semantics_kernels, float_to_integer_casts_agree_with_the_evaluator) {
  cf_tv *a = tu_input(f, CF_FLOAT, 1, NULL), *h = tu_input(f, CF_HALF, 1, NULL);
  const cf_dtype to[4] = {CF_INT8, CF_INT32, CF_INT64, CF_UINT32};
  for (int i = 0; i < 4; i++) {
    cf_fusion_add_output(f, cf_cast(f, a, to[i]));
    cf_fusion_add_output(f, cf_cast(f, h, to[i]));
  }
  const double v[8] = {NAN, INFINITY, -INFINITY, 3e9, -2.7, 200.5, -1e20, 65504};
  DLManagedTensor *in[2] = {floats(CF_FLOAT, 1, (int64_t[]){8}, v), floats(CF_HALF, 1, (int64_t[]){8}, v)};
  char *src = run_everywhere(2, in);
  cr_expect(strstr(src, "cf_f2s8(") && strstr(src, "cf_f2s32(") && strstr(src, "cf_f2s64(") && strstr(src, "cf_f2u32("),
            "no saturating conversions in:\n%s", src);
  free(src);
}

Test(semantics_kernels, an_int64_constant_is_exact_in_kernels) {
  cf_tv *x = tu_input(f, CF_INT64, 1, NULL);
  cf_fusion_add_output(f, cf_add(f, x, cf_const_int(f, CF_INT64, (INT64_C(1) << 62) + 1)));
  cf_fusion_add_output(f, cf_sub(f, x, cf_const_int(f, CF_INT64, INT64_MIN)));
  DLManagedTensor *in[1] = {ints(CF_INT64, 3, (int64_t[]){0, 1, INT64_MAX})};
  char *src = run_everywhere(1, in);
  cr_expect(strstr(src, "4611686018427387905LL") != NULL, "%s", src);
  cr_expect(strstr(src, "(-9223372036854775807LL - 1)") != NULL, "%s", src);
  free(src);
}

Test(semantics_kernels, nan_through_maximum_and_the_max_reduction) {
  cf_tv *a = tu_input(f, CF_FLOAT, 2, NULL), *b = tu_input(f, CF_FLOAT, 2, NULL);
  cf_fusion_add_output(f, cf_max_reduce(f, cf_max(f, a, b), 1, (int[]){1}));
  cf_fusion_add_output(f, cf_min_reduce(f, a, 1, (int[]){1}));
  double va[8] = {NAN, 1, 2, 3, 4, 5, 6, 7}, vb[8] = {0, 0, 0, 0, 0, NAN, 0, 0};
  DLManagedTensor *in[2] = {floats(CF_FLOAT, 2, (int64_t[]){2, 4}, va), floats(CF_FLOAT, 2, (int64_t[]){2, 4}, vb)};
  free(run_everywhere(2, in));
}

Test(semantics_kernels, var_mean_of_an_empty_axis_is_nan) {
  cf_tv *a = tu_input(f, CF_FLOAT, 2, NULL), *var, *mean;
  cr_assert_eq(cf_var_mean(f, a, 1, (int[]){1}, 1, false, &var, &mean), CF_OK);
  cf_fusion_add_output(f, var);
  cf_fusion_add_output(f, mean);
  DLManagedTensor *in[1] = {cf_tensor_host(CF_FLOAT, 2, (int64_t[]){3, 0})};
  free(run_everywhere(1, in));
}

Test(semantics_kernels, max_of_an_empty_axis_is_a_run_time_error) {
  cf_tv *a = tu_input(f, CF_FLOAT, 2, NULL);
  cf_fusion_add_output(f, cf_max_reduce(f, a, 1, (int[]){1}));
  cf_inline_most(f);
  cf_executor *e = cf_executor_create(&host);
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  DLManagedTensor *in = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){3, 0}), *out = NULL;
  const DLTensor *ins[1] = {&in->dl_tensor};
  cr_expect_neq(cf_executor_run(e, 1, ins, 1, &out), CF_OK);
  cr_expect(strstr(cf_executor_error(e), "max: axis 1 of T0 has extent 0; the max of an empty axis is undefined "
                                         "(torch refuses it too)") != NULL, "%s", cf_executor_error(e));
  cf_tensor_free(in);
  cf_executor_destroy(e);
}

/* Through define and run, the max of an empty axis (alone, and read by x - max as a
 * softmax does) is the evaluator's error for the call: lowering's check of it folded to a
 * compile error on the call's concrete copy, which define and run reported as an internal
 * error ("the fallback row's schedule ... is refused by lowering; please report this bug"). */
Test(semantics_kernels, define_and_run_refuses_the_max_of_an_empty_axis) {
  for (int sub = 0; sub < 2; sub++) {
    cf_fusion *g = cf_fusion_create();
    cf_tv *a = tu_input(g, CF_FLOAT, 2, NULL), *m = cf_max_reduce(g, a, 1, (int[]){1});
    cf_fusion_add_output(g, sub ? cf_sub(g, a, cf_broadcast(g, m, 2, (bool[]){false, true})) : m);
    cf_fusion_cache *c = cf_fusion_cache_create(g, &host);
    DLManagedTensor *in = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){3, 0}), *out = NULL;
    const DLTensor *ins[1] = {&in->dl_tensor};
    cr_expect_eq(cf_fusion_execute(c, 1, ins, 1, &out), CF_ERR_INVALID_ARGUMENT);
    cr_expect_str_eq(cf_fusion_cache_error(c), "execute: max: axis 1 of T0 has extent 0; the max of an empty axis is "
                                               "undefined (torch refuses it too)");
    cr_expect_null(out);
    cf_tensor_free(in);
    cf_fusion_cache_destroy(c);
    cf_fusion_destroy(g);
  }
}

/* Philox draws depend on (seed, offset, element) alone: every backend and schedule gives
 * the evaluator's numbers (uniform exactly; normal through CUDA's own log and cos). */
Test(semantics_kernels, random_numbers_are_the_evaluators_everywhere) {
  cf_tv *x = tu_input(f, CF_HALF, 2, NULL), *seed = cf_scalar_input(f, CF_INT64);
  cf_tv *off = cf_const_int(f, CF_INT64, 3);
  cf_fusion_add_output(f, cf_uniform(f, 2, (int64_t[]){5, 7}, -1, 1, seed, off, CF_FLOAT));
  cf_fusion_add_output(f, cf_uniform(f, 2, (int64_t[]){5, 7}, 0, 1, seed, off, CF_DOUBLE));
  cf_fusion_add_output(f, cf_uniform_like(f, x, 0, 1, seed, off));
  cf_fusion_add_output(f, cf_normal_like(f, x, 0, 1, seed, off));
  cf_fusion_add_output(f, cf_normal(f, 2, (int64_t[]){5, 7}, 2, 0.5, seed, off, CF_DOUBLE));
  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  DLManagedTensor *in[2] = {cf_tensor_host(CF_HALF, 2, (int64_t[]){5, 7}), cf_tensor_host(CF_INT64, 0, NULL)};
  cf_tensor_fill_random(&in[0]->dl_tensor, 1);
  *(int64_t *)in[1]->dl_tensor.data = 1234;
  char *src = run_everywhere_tol(2, in, 1e-6);
  cr_expect(strstr(src, "cf_philox_uniform24(") && strstr(src, "cf_philox_normal("), "%s", src);
  free(src);
}

/* ---- 8-bit floats (ir/fp8.h): every backend converts as the evaluator, bit for bit ---------- */

/* Every float8_e4m3fn value, the ties between neighbours and a float either side of each,
 * overflow (448, 464, 465, 480, 57344, 61440, 1e6, inf), NaN, -0.0 and subnormals. */
static int fp8_sweep(double *v) {
  int n = 0;
  for (unsigned c = 0; c < 0x7E; c++) {
    uint8_t lo = (uint8_t)c, hi = (uint8_t)(c + 1);
    double a = ir_elem_load(&lo, CF_FLOAT8_E4M3FN).d, b = ir_elem_load(&hi, CF_FLOAT8_E4M3FN).d, m = (a + b) / 2;
    double pts[4] = {a, m, nextafterf((float)m, 0.0f), nextafterf((float)m, INFINITY)};
    for (int i = 0; i < 4; i++) v[n++] = pts[i], v[n++] = -pts[i];
  }
  const double special[] = {448, 464, 465, 480, 57344, 61439, 61440, 1e6, INFINITY, -INFINITY, NAN, -0.0,
                            0x1p-10, 0x1.8p-10, 0x1p-17, 0x1.8p-16, 1e-30, 464.000001};
  for (size_t i = 0; i < sizeof special / sizeof *special; i++) v[n++] = special[i];
  return n;
}

/* The bytes of two 8-bit tensors are equal (NaN's sign and payload included). */
static void expect_same_bytes(DLManagedTensor *a, DLManagedTensor *b, const char *what) {
  int64_t n = cf_tensor_numel(&a->dl_tensor);
  cr_assert_eq(n, cf_tensor_numel(&b->dl_tensor));
  const uint8_t *x = a->dl_tensor.data, *y = b->dl_tensor.data;
  for (int64_t i = 0; i < n; i++) cr_expect_eq(x[i], y[i], "%s: element %lld is 0x%02x, not 0x%02x", what, (long long)i, x[i], y[i]);
}

Test(semantics_kernels, fp8_casts_are_the_evaluators_bit_for_bit) {
  cf_tv *x = tu_input(f, CF_FLOAT, 1, NULL), *d = tu_input(f, CF_DOUBLE, 1, NULL);
  cf_tv *e4 = cf_cast(f, x, CF_FLOAT8_E4M3FN), *e5 = cf_cast(f, x, CF_FLOAT8_E5M2);
  cf_tv *outs[] = {e4,
                   e5,
                   cf_cast(f, d, CF_FLOAT8_E4M3FN),                         /* double -> float -> fp8 */
                   cf_cast(f, cf_cast(f, x, CF_HALF), CF_FLOAT8_E5M2),       /* half -> fp8 */
                   cf_cast(f, cf_cast(f, x, CF_BFLOAT16), CF_FLOAT8_E4M3FN), /* bfloat16 -> fp8 */
                   cf_cast(f, e4, CF_FLOAT8_E5M2),                          /* fp8 -> fp8 */
                   cf_cast(f, e4, CF_FLOAT),
                   cf_cast(f, e5, CF_DOUBLE),
                   cf_cast(f, e4, CF_HALF),
                   cf_cast(f, e5, CF_BFLOAT16),
                   cf_cast(f, e4, CF_INT32)};
  enum { NOUT = sizeof outs / sizeof *outs };
  for (int i = 0; i < NOUT; i++) cf_fusion_add_output(f, outs[i]);
  double v[1100];
  int n = fp8_sweep(v);
  DLManagedTensor *in[2] = {floats(CF_FLOAT, 1, (int64_t[]){n}, v), floats(CF_DOUBLE, 1, (int64_t[]){n}, v)};
  const DLTensor *ins[2] = {&in[0]->dl_tensor, &in[1]->dl_tensor};
  DLManagedTensor *want[NOUT] = {0}, *got[NOUT] = {0};
  cr_assert_eq(cf_fusion_evaluate(f, 2, ins, want), CF_OK, "%s", cf_fusion_error(f));
  for (int i = 0; i < n; i++) { /* the evaluator is torch's rounding (tests/ir/test_fp8.c) */
    uint8_t b = ((uint8_t *)want[0]->dl_tensor.data)[i];
    cr_expect_eq(b, ir_fp8_from_double((float)v[i], CF_FLOAT8_E4M3FN));
  }
  cf_inline_most(f);
  cf_executor *e = cf_executor_create(&host);
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  cr_assert_eq(cf_executor_run(e, 2, ins, NOUT, got), CF_OK, "%s", cf_executor_error(e));
  for (int i = 0; i < NOUT; i++) {
    if (cf_dtype_size(cf_tv_dtype(outs[i])) == 1) expect_same_bytes(got[i], want[i], cf_dtype_name(cf_tv_dtype(outs[i])));
    cr_expect(cf_tensor_equal(&got[i]->dl_tensor, &want[i]->dl_tensor), "output %d differs from the evaluator", i);
    cf_tensor_free(got[i]), cf_tensor_free(want[i]);
  }
  cf_executor_destroy(e);
  char *src = kc_compile_sm90(f);
  cr_expect(strstr(src, "__float2e4m3(") && strstr(src, "__e5m22float(") && strstr(src, "__float2e5m2((float)((float)__half2float("),
            "no fp8 conversions in:\n%s", src);
  free(src);
  cf_tensor_free(in[0]), cf_tensor_free(in[1]);
}

/* Arithmetic on 8-bit floats computes in float (their opmath type) and rounds once to the
 * result's dtype; a sum accumulates in float (a row of 64 ones in e4m3fn is 64, not 16);
 * e4m3fn with e5m2 promotes to float, e4m3fn with half to half. */
Test(semantics_kernels, fp8_arithmetic_computes_in_float) {
  cf_tv *a = tu_input(f, CF_FLOAT8_E4M3FN, 2, NULL), *b = tu_input(f, CF_FLOAT8_E5M2, 2, NULL);
  cf_tv *h = tu_input(f, CF_HALF, 2, NULL);
  cf_tv *s = cf_add(f, a, cf_mul(f, a, cf_const(f, CF_DOUBLE, 0.3)));
  cf_tv *ab = cf_mul(f, a, b), *ah = cf_sub(f, a, h), *sum = cf_sum(f, a, 1, (int[]){1});
  cr_expect_eq(cf_tv_dtype(s), CF_FLOAT8_E4M3FN);
  cr_expect_eq(cf_tv_dtype(ab), CF_FLOAT);
  cr_expect_eq(cf_tv_dtype(ah), CF_HALF);
  cr_expect_eq(cf_tv_dtype(sum), CF_FLOAT8_E4M3FN);
  cf_fusion_add_output(f, s), cf_fusion_add_output(f, ab), cf_fusion_add_output(f, ah), cf_fusion_add_output(f, sum);
  double v[3 * 64];
  for (int i = 0; i < 3 * 64; i++) v[i] = i < 64 ? 1.0 : (i % 17) * 0.375 - 2;
  int64_t sz[2] = {3, 64};
  DLManagedTensor *in[3] = {floats(CF_FLOAT8_E4M3FN, 2, sz, v), floats(CF_FLOAT8_E5M2, 2, sz, v),
                            floats(CF_HALF, 2, sz, v)};
  const DLTensor *ins[1] = {&in[0]->dl_tensor};
  DLManagedTensor *want[4] = {0};
  cr_assert_eq(cf_fusion_evaluate(f, 3, (const DLTensor *[]){ins[0], &in[1]->dl_tensor, &in[2]->dl_tensor}, want),
               CF_OK, "%s", cf_fusion_error(f));
  cr_expect_eq(cf_tensor_get(&want[3]->dl_tensor, 0), 64.0);
  cr_expect_eq(cf_tensor_get(&want[0]->dl_tensor, 0), 1.25); /* 1 + 0.3 = 1.3 in float, 1.25 in e4m3fn */
  for (int i = 0; i < 4; i++) cf_tensor_free(want[i]);
  char *src = run_everywhere(3, in);
  free(src);
}
