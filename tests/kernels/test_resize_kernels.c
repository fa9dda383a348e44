/* Slices of symbolic extents with negative and out-of-range bounds in kernels (issue 26;
 * the IR side: tests/ir/test_resize.c): the normalization max(0, i0 - 4) and the extents
 * made of max and min of i0 are evaluated by the kernel, so ONE kernel compiled for the
 * symbolic fusion serves every size. Each fusion is compiled once for the host backend and
 * run on several sizes against the reference evaluator (exactly) and CPython's slice
 * lengths, its CUDA source compiled with NVRTC for sm_90a (run on the GPU when present),
 * and run through define and run (a kernel per size) on the host backend. */
#include <stdlib.h>
#include <string.h>

#include "kernel_check.h"

TU_CACHE_SUITE(resize_kernels);

#define END INT64_MAX

static const cf_executor_options host = {.backend = CF_BACKEND_HOST};

/* CPython's len(range(n)[a:b:s]) for s > 0. */
static int64_t py_len(int64_t a, int64_t b, int64_t s, int64_t n) {
  int64_t lo = a < 0 ? (a < -n ? 0 : a + n) : (a > n ? n : a);
  int64_t hi = b < 0 ? (b < -n ? 0 : b + n) : (b > n ? n : b);
  return hi > lo ? (hi - lo - 1) / s + 1 : 0;
}

static cf_tv *slice(cf_tv *x, int rank, const int64_t *a, const int64_t *b, const int64_t *s) {
  cf_tv *t = cf_slice(f, x, rank, a, b, s);
  cr_assert_not_null(t, "%s", cf_fusion_error(f));
  return t;
}

/* Runs the compiled e, the evaluator and define and run (cache c) on in; every output of
 * each equals the evaluator's exactly. got receives e's outputs (the caller frees them). */
static void run_all(cf_executor *e, int nin, DLManagedTensor **in, DLManagedTensor **got) {
  int nout = cf_fusion_num_outputs(f);
  const DLTensor *ins[TU_MAX_IO];
  for (int i = 0; i < nin; i++) ins[i] = &in[i]->dl_tensor;
  DLManagedTensor *want[TU_MAX_IO] = {0}, *dr[TU_MAX_IO] = {0};
  cr_assert_eq(cf_fusion_evaluate(f, nin, ins, want), CF_OK, "evaluator: %s", cf_fusion_error(f));
  cr_assert_eq(cf_executor_run(e, nin, ins, nout, got), CF_OK, "%s", cf_executor_error(e));
  kc_compare(got, want, nout, 0, "one kernel, host");
  if (!c) c = cf_fusion_cache_create(f, &host);
  cr_assert_eq(cf_fusion_execute(c, nin, ins, nout, dr), CF_OK, "define and run: %s", cf_fusion_cache_error(c));
  kc_compare(dr, want, nout, 0, "define and run");
  if (cf_cuda_available(NULL)) kc_run_backend(f, CF_BACKEND_CUDA, nin, in, want, 0);
  for (int i = 0; i < nout; i++) cf_tensor_free(want[i]), cf_tensor_free(dr[i]);
}

static const int64_t cases[5][3] = {{-4, -1, 1}, {-10, 6, 1}, {2, 100, 1}, {4, 2, 1}, {-5, -1, 2}};

/* x[-4:-1], x[-10:6], x[2:100], x[4:2], x[-5:-1:2] and y[-3:, 1:-1] * 2 of symbolic x and
 * y, inlined, one kernel for x of 6, 9 and 2 elements and y of 4 x 5, 7 x 3 and 1 x 2. */
Test(resize_kernels, negative_bounds_of_symbolic_extents_one_kernel_every_size) {
  cf_tv *x = tu_input(f, CF_FLOAT, 1, NULL), *y = tu_input(f, CF_FLOAT, 2, NULL);
  for (int k = 0; k < 5; k++) cf_fusion_add_output(f, slice(x, 1, &cases[k][0], &cases[k][1], &cases[k][2]));
  cf_tv *ys = slice(y, 2, (int64_t[]){-3, 1}, (int64_t[]){END, -1}, NULL);
  cf_fusion_add_output(f, cf_mul_scalar(f, ys, 2.0));
  cr_assert_eq(cf_inline_most(f), CF_OK, "%s", cf_fusion_error(f));
  char *src = kc_compile_sm90(f);
  cr_expect(strstr(src, "max(") && strstr(src, "min("), "the bounds are normalized in the kernel:\n%s", src);
  free(src);
  cf_executor *e = cf_executor_create(&host);
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  const int64_t xn[3] = {6, 9, 2}, yn[3][2] = {{4, 5}, {7, 3}, {1, 2}};
  for (int r = 0; r < 3; r++) {
    DLManagedTensor *in[2] = {cf_tensor_host(CF_FLOAT, 1, &xn[r]), cf_tensor_host(CF_FLOAT, 2, yn[r])};
    for (int i = 0; i < 2; i++) cf_tensor_fill_random(&in[i]->dl_tensor, 7 + (uint64_t)(r * 2 + i));
    DLManagedTensor *got[6] = {0};
    run_all(e, 2, in, got);
    for (int k = 0; k < 5; k++)
      cr_expect_eq(got[k]->dl_tensor.shape[0], py_len(cases[k][0], cases[k][1], cases[k][2], xn[r]),
                   "output %d of x[%lld]", k, (long long)xn[r]);
    cr_expect_eq(got[5]->dl_tensor.shape[0], py_len(-3, END, 1, yn[r][0]));
    cr_expect_eq(got[5]->dl_tensor.shape[1], py_len(1, -1, 1, yn[r][1]));
    for (int k = 0; k < 6; k++) cf_tensor_free(got[k]);
    for (int i = 0; i < 2; i++) cf_tensor_free(in[i]);
  }
  cf_executor_destroy(e);
}

/* The pointwise scheduler's tiling (split, parallel types, predicates on the symbolic
 * extents) of y[-3:-1, -6:] + 1: one kernel for 2 x 3, 5 x 8 and 9 x 70. */
Test(resize_kernels, pointwise_schedule_of_a_negative_slice_every_size) {
  cf_tv *y = tu_input(f, CF_FLOAT, 2, NULL);
  cf_fusion_add_output(f, cf_add_scalar(f, slice(y, 2, (int64_t[]){-3, -6}, (int64_t[]){-1, END}, NULL), 1.0));
  cr_assert_eq(cf_schedule_pointwise(f), CF_OK, "%s", cf_fusion_error(f));
  free(kc_compile_sm90(f));
  cf_executor *e = cf_executor_create(&host);
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  const int64_t yn[3][2] = {{2, 3}, {5, 8}, {9, 70}};
  for (int r = 0; r < 3; r++) {
    DLManagedTensor *in = cf_tensor_host(CF_FLOAT, 2, yn[r]), *got = NULL;
    cf_tensor_fill_random(&in->dl_tensor, 11 + (uint64_t)r);
    run_all(e, 1, &in, &got);
    cr_expect_eq(got->dl_tensor.shape[0], py_len(-3, -1, 1, yn[r][0]));
    cr_expect_eq(got->dl_tensor.shape[1], py_len(-6, END, 1, yn[r][1]));
    cf_tensor_free(got);
    cf_tensor_free(in);
  }
  cf_executor_destroy(e);
}
