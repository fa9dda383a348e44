/* The strides cf_executor_run and define and run take for a tensor the fusion promised
 * contiguous (ir_dl_noncontiguous_axis): row-major ones, any stride on a size-1 axis (torch
 * keeps 1 or 0 for an expanded one), and any strides at all for an empty tensor, which has
 * nothing to read (torch gives [1, 32, 256, 0] the strides (131072, 4096, 16, 1); the
 * check refused it, naming a "stride 0" no tensor has). Results against the evaluator,
 * refusals with their exact messages, on the host backend. */
#include <criterion/criterion.h>

#include "test_util.h"

static cf_fusion *f;
static cf_executor *e;
static void setup(void) {
  f = cf_fusion_create();
  e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
}
static void teardown(void) {
  cf_executor_destroy(e);
  cf_fusion_destroy(f);
}
TestSuite(run_strides, .init = setup, .fini = teardown);

/* out = sum(x, {last axis}) + 1 of a symbolic contiguous x of the given rank, inlined and
 * compiled. */
static void compile_sum(int rank) {
  cf_tv *x = tu_input(f, CF_FLOAT, rank, NULL);
  cf_fusion_add_output(f, cf_add_scalar(f, cf_sum(f, x, 1, (int[]){rank - 1}), 1.0));
  cr_assert_eq(cf_inline_most(f), CF_OK, "%s", cf_fusion_error(f));
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
}

/* A host tensor of the given sizes and strides, its elements i + 1 in logical order. */
static DLManagedTensor *strided(int rank, const int64_t *sizes, const int64_t *strides) {
  DLManagedTensor *t = cf_tensor_host_strided(CF_FLOAT, rank, sizes, strides);
  cr_assert_not_null(t);
  cf_tensor_fill_iota(&t->dl_tensor);
  return t;
}

/* Runs the executor on x; on success compares with the evaluator and returns CF_OK. */
static cf_status run(const DLManagedTensor *x) {
  const DLTensor *in = &x->dl_tensor;
  DLManagedTensor *got = NULL, *want = NULL;
  cf_status s = cf_executor_run(e, 1, &in, 1, &got);
  if (s) return s;
  cr_assert_eq(cf_fusion_evaluate(f, 1, &in, &want), CF_OK, "%s", cf_fusion_error(f));
  char msg[256] = "";
  cr_expect(cf_tensor_allclose(&got->dl_tensor, &want->dl_tensor, 0, 0, msg, sizeof msg), "%s", msg);
  cf_tensor_free(got);
  cf_tensor_free(want);
  return CF_OK;
}

Test(run_strides, an_empty_tensor_takes_any_strides) {
  compile_sum(4);
  /* torch's empty [1, 32, 256, 0]: the sum over the empty axis is 1 + 0 everywhere */
  DLManagedTensor *x = strided(4, (int64_t[]){1, 32, 256, 0}, (int64_t[]){131072, 4096, 16, 1});
  cr_expect_eq(run(x), CF_OK, "%s", cf_executor_error(e));
  cf_tensor_free(x);
  x = strided(4, (int64_t[]){2, 0, 3, 5}, (int64_t[]){7, 1, 0, 9}); /* an empty output: nothing runs */
  cr_expect_eq(run(x), CF_OK, "%s", cf_executor_error(e));
  cf_tensor_free(x);
}

Test(run_strides, size_one_axes_take_any_stride) {
  compile_sum(3);
  static const int64_t strides[][3] = {{4, 0, 1}, {4, 1, 1}, {4, 7, 1}, {4, 100, 1}};
  for (int i = 0; i < 4; i++) {
    DLManagedTensor *x = strided(3, (int64_t[]){2, 1, 4}, strides[i]);
    cr_expect_eq(run(x), CF_OK, "strides %d: %s", i, cf_executor_error(e));
    cf_tensor_free(x);
  }
}

Test(run_strides, other_axes_need_the_row_major_stride) {
  compile_sum(3);
  DLManagedTensor *x = strided(3, (int64_t[]){2, 1, 4}, (int64_t[]){5, 1, 1});
  cr_expect_eq(run(x), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_executor_error(e), "run: input 0 (T0) has stride 5 in dimension 0 where the fusion promised a "
                   "contiguous tensor (stride 4); make it with cf_tensor_strided for arbitrary strides");
  cf_tensor_free(x);
  x = strided(3, (int64_t[]){3, 2, 1}, (int64_t[]){2, 1, 0}); /* column 1 of x: stride 1, not 1 * 1 */
  cr_expect_eq(run(x), CF_OK, "%s", cf_executor_error(e));
  cf_tensor_free(x);
  x = strided(3, (int64_t[]){3, 2, 1}, (int64_t[]){1, 3, 0});
  cr_expect_eq(run(x), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_executor_error(e), "run: input 0 (T0) has stride 3 in dimension 1 where the fusion promised a "
                   "contiguous tensor (stride 1); make it with cf_tensor_strided for arbitrary strides");
  cf_tensor_free(x);
}

Test(run_strides, define_and_run_takes_an_empty_tensor_of_any_strides) {
  cf_tv *x = tu_input(f, CF_FLOAT, 4, NULL), *y = tu_input(f, CF_FLOAT, 4, NULL);
  cf_fusion_add_output(f, cf_mul(f, x, y));                                        /* empty */
  cf_fusion_add_output(f, cf_sum(f, cf_add(f, x, y), 1, (int[]){3}));       /* [1, 32, 256] of 0 */
  cf_fusion_cache *c = cf_fusion_cache_create(f, &(cf_executor_options){.backend = CF_BACKEND_HOST});
  DLManagedTensor *a = strided(4, (int64_t[]){1, 32, 256, 0}, (int64_t[]){131072, 4096, 16, 1});
  DLManagedTensor *b = strided(4, (int64_t[]){1, 32, 256, 0}, (int64_t[]){0, 0, 0, 1}); /* an expand of [] */
  const DLTensor *ins[2] = {&a->dl_tensor, &b->dl_tensor};
  DLManagedTensor *got[2] = {0}, *want[2] = {0};
  cr_assert_eq(cf_fusion_execute(c, 2, ins, 2, got), CF_OK, "%s", cf_fusion_cache_error(c));
  cr_assert_eq(cf_fusion_evaluate(f, 2, ins, want), CF_OK, "%s", cf_fusion_error(f));
  cr_expect_eq(cf_tensor_numel(&got[0]->dl_tensor), 0);
  cr_expect_eq(cf_tensor_numel(&got[1]->dl_tensor), 32 * 256);
  for (int o = 0; o < 2; o++) {
    char msg[256] = "";
    cr_expect(cf_tensor_allclose(&got[o]->dl_tensor, &want[o]->dl_tensor, 0, 0, msg, sizeof msg), "%d: %s", o, msg);
    cf_tensor_free(got[o]), cf_tensor_free(want[o]);
  }
  cf_tensor_free(a), cf_tensor_free(b);
  cf_fusion_cache_destroy(c);
}
