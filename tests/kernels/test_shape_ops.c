/* Shape ops (issue 11): squeeze, expand / expand_as, full / full_like, scalar inputs
 * broadcast into tensors of any rank, and reshape. Each scheduled fusion is compiled with
 * NVRTC for sm_90a and run on the host backend (and on the GPU when present) against the
 * reference evaluator, through tests/kernels/kernel_check.h; define-and-run
 * (cf_fusion_execute) runs them unscheduled on the host backend, reshape included, as a
 * view at segment boundaries. */
#include <stdlib.h>
#include <string.h>

#include "kernel_check.h"

TU_CACHE_SUITE(shape_ops);

static cf_tv *input(cf_dtype dt, int rank, const int64_t *sizes) { return tu_input(f, dt, rank, sizes); }

/* out = expand(broadcast(squeeze(x) + eps)) * full(2.5), x[4, 1, 8], eps a scalar input */
static void build_squeeze_expand_full(const int64_t *xs) {
  cf_tv *x = input(CF_FLOAT, 3, xs);
  cf_tv *eps = cf_scalar_input(f, CF_FLOAT);
  cf_tv *s = cf_squeeze(f, x, 1, (int[]){1});
  cf_tv *a = cf_add(f, s, eps);
  cf_tv *e = cf_expand(f, cf_broadcast(f, a, 3, (bool[]){false, true, false}), 3, (int64_t[]){-1, 3, -1});
  cf_fusion_add_output(f, cf_mul(f, e, cf_full(f, 3, (int64_t[]){4, 3, 8}, 2.5, CF_FLOAT)));
}

Test(shape_ops, squeeze_expand_full_scalar_pointwise) {
  build_squeeze_expand_full((int64_t[]){4, 1, 8});
  cr_assert_eq(cf_schedule_pointwise(f), CF_OK, "%s", cf_fusion_error(f));
  free(kc_check(f, 2, (KcInput[]){F32(4, 1, 8), {CF_FLOAT, 0, {0}, NULL}}, 1e-6));
}

Test(shape_ops, squeeze_expand_full_unscheduled) {
  build_squeeze_expand_full((int64_t[]){4, 1, 8});
  cf_inline_most(f);
  free(kc_check(f, 2, (KcInput[]){F32(4, 1, 8), {CF_FLOAT, 0, {0}, NULL}}, 1e-6));
}

/* ---- define and run ------------------------------------------------------------------------ */

static const cf_executor_options host = {.backend = CF_BACKEND_HOST};

/* Runs the fusion through cf_fusion_execute on the host backend and compares every output
 * with the evaluator's; returns the status of the execute (outputs compared when CF_OK). */
static cf_status execute_vs_eval(int nin, DLManagedTensor **in) {
  if (!c) c = cf_fusion_cache_create(f, &host);
  cr_assert(c);
  tu_assert_io_fits(f, nin);
  const DLTensor *ins[TU_MAX_IO];
  for (int i = 0; i < nin; i++) ins[i] = &in[i]->dl_tensor;
  int nout = cf_fusion_num_outputs(f);
  DLManagedTensor *got[TU_MAX_IO] = {0}, *want[TU_MAX_IO] = {0};
  cf_status s = cf_fusion_execute(c, nin, ins, nout, got);
  if (s == CF_OK) {
    cr_assert_eq(cf_fusion_evaluate(f, nin, ins, want), CF_OK, "%s", cf_fusion_error(f));
    for (int o = 0; o < nout; o++) {
      char msg[256] = "";
      cr_expect(cf_tensor_allclose(&got[o]->dl_tensor, &want[o]->dl_tensor, 1e-6, 1e-6, msg, sizeof msg),
                "output %d: %s", o, msg);
    }
  }
  for (int o = 0; o < nout; o++) cf_tensor_free(got[o]), cf_tensor_free(want[o]);
  return s;
}

static DLManagedTensor *rand_in(cf_dtype dt, int rank, const int64_t *sizes, uint64_t seed) {
  DLManagedTensor *t = cf_tensor_host(dt, rank, sizes);
  cf_tensor_fill_random(&t->dl_tensor, seed);
  return t;
}

Test(shape_ops, define_and_run_squeeze_expand_full_scalar) {
  build_squeeze_expand_full((int64_t[]){4, 1, 8}); /* squeeze needs extent 1 known at build */
  DLManagedTensor *in[2] = {rand_in(CF_FLOAT, 3, (int64_t[]){4, 1, 8}, 1), rand_in(CF_FLOAT, 0, NULL, 2)};
  cr_assert_eq(execute_vs_eval(2, in), CF_OK, "%s", cf_fusion_cache_error(c));
  cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "pointwise");
  cf_tensor_free(in[0]), cf_tensor_free(in[1]);
}

/* out = full_like(x, 3) * x + expand_as(bias, x), int32 full_like cast too */
Test(shape_ops, define_and_run_full_like_expand_as_symbolic) {
  cf_tv *x = input(CF_FLOAT, 2, NULL);
  cf_tv *b = input(CF_FLOAT, 2, (int64_t[]){1, 6});
  cf_tv *e = cf_expand_as(f, b, x);
  cf_fusion_add_output(f, cf_add(f, cf_mul(f, cf_full_like(f, x, 3), x), e));
  cf_fusion_add_output(f, cf_full_like(f, cf_cast(f, x, CF_INT32), -7));
  DLManagedTensor *in[2] = {rand_in(CF_FLOAT, 2, (int64_t[]){5, 6}, 1), rand_in(CF_FLOAT, 2, (int64_t[]){1, 6}, 2)};
  cr_assert_eq(execute_vs_eval(2, in), CF_OK, "%s", cf_fusion_cache_error(c));
  cf_tensor_free(in[0]), cf_tensor_free(in[1]);
}

/* y = relu(reshape(x, {-1, 8})) + 1: the reshape is a view of the input */
Test(shape_ops, define_and_run_reshape_of_an_input) {
  cf_tv *x = input(CF_FLOAT, 3, NULL);
  cf_fusion_add_output(f, cf_add_scalar(f, cf_relu(f, cf_reshape(f, x, 2, (int64_t[]){-1, 8})), 1));
  DLManagedTensor *in[1] = {rand_in(CF_FLOAT, 3, (int64_t[]){3, 4, 8}, 1)};
  cr_assert_eq(execute_vs_eval(1, in), CF_OK, "%s", cf_fusion_cache_error(c));
  cr_expect_eq(cf_fusion_cache_last_segments(c), 2);
  cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "view");
  cr_expect_eq(cf_fusion_cache_num_kernels(c), 1);
  cf_tensor_free(in[0]);
}

/* exp(x) in global memory, reshaped, then summed by rows */
Test(shape_ops, define_and_run_reshape_between_segments) {
  cf_tv *x = input(CF_FLOAT, 2, (int64_t[]){6, 8});
  cf_tv *r = cf_reshape(f, cf_exp(f, x), 2, (int64_t[]){12, 4});
  cf_fusion_add_output(f, cf_sum(f, r, 1, (int[]){1}));
  DLManagedTensor *in[1] = {rand_in(CF_FLOAT, 2, (int64_t[]){6, 8}, 1)};
  cr_assert_eq(execute_vs_eval(1, in), CF_OK, "%s", cf_fusion_cache_error(c));
  cr_expect_eq(cf_fusion_cache_last_segments(c), 3);
  cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 1), "view");
  cf_tensor_free(in[0]);
}

/* A reshaped output: the view's output is copied into the caller's output (it was
 * refused: "a reshape is a view between segments"). */
Test(shape_ops, define_and_run_copies_a_reshaped_output) {
  cf_tv *x = input(CF_FLOAT, 2, (int64_t[]){6, 8});
  cf_fusion_add_output(f, cf_reshape(f, cf_exp(f, x), 1, (int64_t[]){48}));
  DLManagedTensor *in[1] = {rand_in(CF_FLOAT, 2, (int64_t[]){6, 8}, 1)};
  cr_assert_eq(execute_vs_eval(1, in), CF_OK, "%s", cf_fusion_cache_error(c));
  cr_expect_eq(cf_fusion_cache_last_segments(c), 3);
  cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 1), "view");
  cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 2), "pointwise");
  cf_tensor_free(in[0]);
}

/* A reshaped input passed strided where the fusion promised it contiguous: copied first,
 * and the copy's kernel refuses the strides as every kernel does. */
Test(shape_ops, define_and_run_refuses_a_strided_reshaped_input) {
  cf_tv *x = input(CF_FLOAT, 2, NULL);
  cf_fusion_add_output(f, cf_neg(f, cf_reshape(f, x, 1, (int64_t[]){-1})));
  DLManagedTensor *in[1] = {cf_tensor_host_strided(CF_FLOAT, 2, (int64_t[]){4, 3}, (int64_t[]){1, 4})};
  cf_tensor_fill_random(&in[0]->dl_tensor, 1);
  cr_expect_eq(execute_vs_eval(1, in), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_cache_error(c), "execute: segment 1 of 3: run: input 0 (T0) has stride 4 in dimension 1 "
                   "where the fusion promised a contiguous tensor (stride 1); make it with cf_tensor_strided for "
                   "arbitrary strides");
  cf_tensor_free(in[0]);
}

Test(shape_ops, a_kernel_refuses_reshape) {
  cf_tv *x = input(CF_FLOAT, 2, (int64_t[]){6, 8});
  cf_fusion_add_output(f, cf_neg(f, cf_reshape(f, x, 1, (int64_t[]){48})));
  cf_executor *e = cf_executor_create(&host);
  cr_expect_eq(cf_executor_compile(e, f), CF_ERR_UNSUPPORTED);
  cr_expect_str_eq(cf_executor_error(e), "compile: T1 = reshape(T0) cannot run inside a kernel; a reshape is a view of "
                   "a fusion input or of a tensor between segments of cf_fusion_execute");
  cf_executor_destroy(e);
}
