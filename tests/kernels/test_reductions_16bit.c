/* Issue 28: reductions of half and bfloat16 accumulate in float (the dtype table's
 * accumulation column, ir_dtype_accumulate), wherever their partial sums live: a serial
 * reduction's register (and, with iteration loops inside its reduction loops, a local
 * array of floats), rfactor partials, block and grid reductions, define and run's
 * kernels. Before, a bfloat16 row sum of ones stopped growing at 256 and a half one at
 * 2048. Each case sums ones, so the exact answer is the row length: it is checked on the
 * evaluator and the host backend, the kernel compiled with NVRTC for sm_90a (and run on
 * a GPU when there is one, through kernel_check.h). */
#include <stdlib.h>
#include <string.h>

#include "cfuser/execute.h"
#include "kernel_check.h"

static cf_fusion *f;

static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(reductions_16bit, .init = setup, .fini = teardown);

/* A tensor of ones of a 16-bit dtype. */
static DLManagedTensor *ones(cf_dtype dt, int rank, const int64_t *sizes) {
  DLManagedTensor *t = cf_tensor_host(dt, rank, sizes);
  uint16_t one = dt == CF_BFLOAT16 ? 0x3f80 : 0x3c00, *p = t->dl_tensor.data;
  for (int64_t i = 0; i < cf_tensor_numel(&t->dl_tensor); i++) p[i] = one;
  return t;
}

static void expect_all(const DLManagedTensor *t, double want, const char *where) {
  for (int64_t i = 0; i < cf_tensor_numel(&t->dl_tensor); i++)
    cr_expect_eq(cf_tensor_get(&t->dl_tensor, i), want, "%s: element %lld is %g, expected %g", where, (long long)i,
                 cf_tensor_get(&t->dl_tensor, i), want);
}

/* The scheduled f on ones of x's dtype and sizes: the evaluator, the host backend and the
 * NVRTC compile (and CUDA when present) all give `want` everywhere. */
static void check_ones(cf_dtype dt, int rank, const int64_t *sizes, double want) {
  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  DLManagedTensor *x = ones(dt, rank, sizes), *ref[1] = {0}, *got[1] = {0};
  const DLTensor *ins[1] = {&x->dl_tensor};
  cr_assert_eq(cf_fusion_evaluate(f, 1, ins, ref), CF_OK, "%s", cf_fusion_error(f));
  expect_all(ref[0], want, "evaluator");
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  cr_assert_eq(cf_executor_run(e, 1, ins, 1, got), CF_OK, "%s", cf_executor_error(e));
  expect_all(got[0], want, "host");
  cf_executor_destroy(e);
  KcInput in = {dt, rank, {0}, NULL};
  memcpy(in.sizes, sizes, sizeof(int64_t) * (size_t)rank);
  free(kc_check(f, 1, &in, 1e-2)); /* NVRTC for sm_90a, and the GPU when present */
  cf_tensor_free(x), cf_tensor_free(ref[0]), cf_tensor_free(got[0]);
}

static cf_tv *input(cf_dtype dt, int rank, const int64_t *sizes) { return tu_input(f, dt, rank, sizes); }

/* The case: a serial row sum (no schedule but inlining) of 16,384 bfloat16 ones. */
Test(reductions_16bit, bfloat16_row_sum_of_16384_ones) {
  int64_t sz[2] = {2, 16384};
  cf_tv *s = cf_sum(f, input(CF_BFLOAT16, 2, sz), 1, (int[]){1});
  cf_fusion_add_output(f, s);
  cr_assert_eq(cf_inline_most(f), CF_OK);
  check_ones(CF_BFLOAT16, 2, sz, 16384);
}

Test(reductions_16bit, half_row_sum_split_and_inlined) {
  int64_t sz[2] = {3, 4096};
  cf_tv *s = cf_sum(f, cf_neg(f, input(CF_HALF, 2, sz)), 1, (int[]){1});
  cf_fusion_add_output(f, cf_neg(f, s));
  cf_split(f, s, 1, 128);
  cr_assert_eq(cf_inline_most(f), CF_OK);
  check_ones(CF_HALF, 2, sz, 4096);
}

/* A column sum's loops are [rS, iS]: the sums of the iterations inside the reduction loop
 * live in a local array of floats (A1), stored rounded after the loop. */
Test(reductions_16bit, bfloat16_column_sum_iterations_inside_the_reduction) {
  int64_t sz[2] = {4096, 3};
  cf_fusion_add_output(f, cf_sum(f, input(CF_BFLOAT16, 2, sz), 1, (int[]){0}));
  check_ones(CF_BFLOAT16, 2, sz, 4096);
  char *src = tu_cuda_kernel_text(f);
  cr_expect(strstr(src, "float A1[3];") != NULL, "no float accumulators in:\n%s", src);
  free(src);
}

/* rfactor partials are float (the accumulation type), so 128 per-thread sums of 512 ones
 * each are exact before the block reduction. */
Test(reductions_16bit, rfactor_partials_are_float) {
  int64_t sz[2] = {2, 65536};
  cf_tv *s = cf_sum(f, input(CF_BFLOAT16, 2, sz), 1, (int[]){1});
  cf_fusion_add_output(f, s);
  cf_split(f, s, 1, 128);
  cf_tv *rf = cf_rfactor(f, s, 1, (int[]){1});
  cr_assert(rf, "%s", cf_fusion_error(f));
  cr_expect_eq(cf_tv_dtype(rf), CF_FLOAT);
  cf_parallelize(f, rf, 2, CF_PT_TIDX);
  cf_parallelize(f, s, 1, CF_PT_TIDX);
  cf_parallelize(f, s, 0, CF_PT_BIDX);
  cf_parallelize(f, rf, 0, CF_PT_BIDX);
  cr_assert_eq(cf_inline_most(f), CF_OK, "%s", cf_fusion_error(f));
  check_ones(CF_BFLOAT16, 2, sz, 65536);
}

/* A grid reduction: the row split over 64 blocks of 128 threads, each thread folding 4. */
Test(reductions_16bit, grid_reduction_of_bfloat16) {
  int64_t sz[2] = {1, 32768};
  cf_tv *s = cf_sum(f, input(CF_BFLOAT16, 2, sz), 1, (int[]){1});
  cf_fusion_add_output(f, s);
  cf_split(f, s, 1, 512);
  cf_split(f, s, 2, 128);
  cf_parallelize(f, s, 1, CF_PT_BIDX);
  cf_parallelize(f, s, 3, CF_PT_TIDX);
  check_ones(CF_BFLOAT16, 2, sz, 32768);
}

/* Define and run: the reduction scheduler's per-thread partials (1024 ones each here) and
 * the block reduction, on rows of 131,072 ones; and a sum read back by a second segment. */
Test(reductions_16bit, define_and_run_sums_in_float) {
  int64_t sz[2] = {2, 131072};
  cf_tv *x = input(CF_BFLOAT16, 2, sz);
  cf_fusion_add_output(f, cf_sum(f, x, 1, (int[]){1}));
  cf_fusion_cache *c = cf_fusion_cache_create(f, NULL);
  DLManagedTensor *in = ones(CF_BFLOAT16, 2, sz), *out[1] = {0};
  const DLTensor *ins[1] = {&in->dl_tensor};
  cr_assert_eq(cf_fusion_execute(c, 1, ins, 1, out), CF_OK, "%s", cf_fusion_cache_error(c));
  cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "reduction");
  expect_all(out[0], 131072, "define and run");
  cf_tensor_free(out[0]), cf_tensor_free(in);
  cf_fusion_cache_destroy(c);
}
