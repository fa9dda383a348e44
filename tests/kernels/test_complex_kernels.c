/* Complex kernels (issue 26): fusions on complex_float and complex_double scheduled by
 * define and run (the pointwise and reduction schedulers: block and grid sums of a complex
 * accumulator, shuffles and workspaces of two words per value) and inlined by hand, run on
 * the host backend (C99 _Complex, codegen/runtime/complex.h) and compared with the
 * reference evaluator (within a few float ulps: a kernel computes complex64 in float, the
 * evaluator in double; complex128 within 1e-12), on odd shapes; the CUDA source (the
 * runtime's struct and overloads) compiled with NVRTC for sm_90a. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_check.h"

#include "ir/dtype.h"

static cf_fusion *f;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(complex_kernels, .init = setup, .fini = teardown);

/* Random inputs of the given dtypes and shape (complex ones get both parts random). */
static DLManagedTensor *input(cf_dtype dt, int rank, const int64_t *sizes, uint64_t seed) {
  DLManagedTensor *t = cf_tensor_host(dt, rank, sizes);
  cf_tensor_fill_random(&t->dl_tensor, seed);
  return t;
}

static char *run_all(int nin, DLManagedTensor **in, double tol) { return kc_run_everywhere(f, nin, in, tol, tol); }

Test(complex_kernels, pointwise_ops_agree_with_the_evaluator) {
  cf_tv *a = tu_input(f, CF_COMPLEX_FLOAT, 2, NULL), *b = tu_input(f, CF_COMPLEX_FLOAT, 2, NULL);
  cf_tv *x = tu_input(f, CF_FLOAT, 2, NULL);
  cf_tv *c = cf_const_complex(f, CF_COMPLEX_DOUBLE, 3, 0.5);
  cf_tv *outs[] = {cf_add(f, a, b),        cf_sub(f, a, x),          cf_mul(f, a, b),         cf_div(f, a, b),
                   cf_neg(f, a),           cf_abs(f, a),             cf_real(f, a),           cf_imag(f, a),
                   cf_conj(f, a),          cf_sqrt(f, a),            cf_rsqrt(f, a),          cf_exp(f, a),
                   cf_log(f, a),           cf_reciprocal(f, b),      cf_eq(f, a, a),          cf_ne(f, a, b),
                   cf_where(f, cf_gt(f, x, cf_const(f, CF_FLOAT, 0)), a, b),
                   cf_mul(f, x, c),        cf_cast(f, a, CF_FLOAT),  cf_cast(f, x, CF_COMPLEX_FLOAT),
                   cf_cast(f, a, CF_COMPLEX_DOUBLE), cf_cast(f, a, CF_BOOL), cf_cast(f, a, CF_INT32),
                   cf_truediv(f, a, cf_const(f, CF_DOUBLE, 2))};
  enum { N = sizeof outs / sizeof *outs };
  for (int i = 0; i < N; i++) cf_fusion_add_output(f, outs[i]);
  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  cr_expect_eq(cf_tv_dtype(outs[17]), CF_COMPLEX_FLOAT);
  int64_t sz[2] = {5, 37};
  DLManagedTensor *in[3] = {input(CF_COMPLEX_FLOAT, 2, sz, 1), input(CF_COMPLEX_FLOAT, 2, sz, 2), input(CF_FLOAT, 2, sz, 3)};
  char *src = run_all(3, in, 2e-6);
  /* the kernel's own text (without NVRTC the source is that alone, not the runtime's structs) */
  cr_expect(strstr(src, "Tensor<CfComplexF, 2, 2> T0") && strstr(src, "cf_complex_d(3, 0.5)") && strstr(src, "cf_creal("),
            "%s", src);
  free(src);
}

Test(complex_kernels, complex_double_math_agrees_with_the_evaluator) {
  cf_tv *a = tu_input(f, CF_COMPLEX_DOUBLE, 1, NULL), *d = tu_input(f, CF_DOUBLE, 1, NULL);
  cf_tv *outs[] = {cf_div(f, cf_mul(f, a, d), cf_add(f, a, cf_const(f, CF_DOUBLE, 2))), cf_sqrt(f, a), cf_log(f, a),
                   cf_exp(f, a), cf_abs(f, a), cf_rsqrt(f, a), cf_cast(f, a, CF_COMPLEX_FLOAT)};
  enum { N = sizeof outs / sizeof *outs };
  for (int i = 0; i < N; i++) cf_fusion_add_output(f, outs[i]);
  DLManagedTensor *in[2] = {input(CF_COMPLEX_DOUBLE, 1, (int64_t[]){131}, 4), input(CF_DOUBLE, 1, (int64_t[]){131}, 5)};
  char *src = run_all(2, in, 1e-12);
  /* the kernel's own text (without NVRTC the source is that alone, not the runtime's structs) */
  cr_expect(strstr(src, "Tensor<CfComplexD, 1, 1> T0"), "%s", src);
  free(src);
}

/* Sums of complex values accumulate in the complex type: an inner reduction (block
 * reduction across threadIdx.x: shuffles of two words), an outer one (the grid or serial
 * form), a mean, on odd extents; complex_double too. */
Test(complex_kernels, sums_accumulate_in_the_complex_type) {
  cf_tv *a = tu_input(f, CF_COMPLEX_FLOAT, 2, NULL), *w = tu_input(f, CF_COMPLEX_DOUBLE, 2, NULL);
  cf_fusion_add_output(f, cf_sum(f, a, 1, (int[]){1}));
  cf_fusion_add_output(f, cf_mean(f, w, 1, (int[]){1}));
  int64_t sz[2] = {7, 1029};
  DLManagedTensor *in[2] = {input(CF_COMPLEX_FLOAT, 2, sz, 6), input(CF_COMPLEX_DOUBLE, 2, sz, 7)};
  char *src = run_all(2, in, 2e-5);
  free(src);
}

Test(complex_kernels, outer_sums_accumulate_in_the_complex_type) {
  cf_tv *a = tu_input(f, CF_COMPLEX_FLOAT, 2, NULL);
  cf_fusion_add_output(f, cf_sum(f, cf_mul(f, a, a), 1, (int[]){0}));
  DLManagedTensor *in[1] = {input(CF_COMPLEX_FLOAT, 2, (int64_t[]){4099, 33}, 8)};
  char *src = run_all(1, in, 1e-4);
  free(src);
}

/* A block reduction by hand: rfactor partials of complex_float (the accumulation type), the
 * reduced axis on threadIdx.x (xor shuffles of a complex value, the shared workspace); then
 * a grid reduction of complex_double over 8 blocks of 64 threads (the work buffer read back
 * with cf_complex_volatile). */
Test(complex_kernels, hand_scheduled_block_and_grid_sums) {
  cf_tv *s = cf_sum(f, tu_input(f, CF_COMPLEX_FLOAT, 2, (int64_t[]){3, 1000}), 1, (int[]){1});
  cf_fusion_add_output(f, s);
  cf_split(f, s, 1, 128);
  cf_tv *rf = cf_rfactor(f, s, 1, (int[]){1});
  cr_assert(rf, "%s", cf_fusion_error(f));
  cr_expect_eq(cf_tv_dtype(rf), CF_COMPLEX_FLOAT);
  cf_parallelize(f, rf, 2, CF_PT_TIDX);
  cf_parallelize(f, s, 1, CF_PT_TIDX);
  cf_parallelize(f, s, 0, CF_PT_BIDX);
  cf_parallelize(f, rf, 0, CF_PT_BIDX);
  cr_assert_eq(cf_inline_most(f), CF_OK, "%s", cf_fusion_error(f));
  KcInput ins[1] = {{CF_COMPLEX_FLOAT, 2, {3, 1000}, NULL}};
  char *src = kc_check(f, 1, ins, 1e-5);
  cr_expect(strstr(src, "__shfl_xor_sync") || strstr(src, "cf_s >>= 1"), "no block reduction in:\n%s", src);
  free(src);
}

Test(complex_kernels, grid_sum_of_complex_double) {
  cf_tv *g = cf_sum(f, tu_input(f, CF_COMPLEX_DOUBLE, 2, (int64_t[]){1, 2000}), 1, (int[]){1});
  cf_fusion_add_output(f, g);
  cf_split(f, g, 1, 256);
  cf_split(f, g, 2, 64);
  cf_parallelize(f, g, 1, CF_PT_BIDX);
  cf_parallelize(f, g, 3, CF_PT_TIDX);
  KcInput ins[1] = {{CF_COMPLEX_DOUBLE, 2, {1, 2000}, NULL}};
  char *src = kc_check(f, 1, ins, 1e-12);
  cr_expect(strstr(src, "cf_complex_volatile("), "no grid reduction in:\n%s", src);
  free(src);
}

/* real and conj of real tensors (float, int32, half, bool: themselves) in a kernel with no
 * complex dtype: the CUDA source, which then has no complex.h, still compiles for sm_90a
 * (cf_creal and cf_conj of a real type are ops_math.h's; NVRTC said "identifier cf_creal
 * is undefined"), and the host backend equals the evaluator exactly. */
Test(complex_kernels, real_and_conj_of_real_tensors_compile_without_complex_types) {
  cf_dtype dts[] = {CF_FLOAT, CF_INT32, CF_HALF, CF_BOOL};
  enum { N = sizeof dts / sizeof *dts };
  DLManagedTensor *in[N];
  int64_t sz[2] = {3, 19};
  for (int i = 0; i < N; i++) {
    cf_tv *x = tu_input(f, dts[i], 2, NULL);
    cf_fusion_add_output(f, cf_real(f, x));
    cf_fusion_add_output(f, cf_conj(f, cf_add(f, x, x)));
    in[i] = input(dts[i], 2, sz, 20 + (uint64_t)i);
  }
  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  for (int i = 0; i < N; i++) cr_expect_eq(cf_tv_dtype(cf_fusion_output(f, 2 * i)), dts[i]);
  char *src = run_all(N, in, 0);
  cr_expect(strstr(src, "cf_creal(") && strstr(src, "cf_conj(") && !strstr(src, "CfComplex"), "%s", src);
  free(src);
}
