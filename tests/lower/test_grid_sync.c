/* tests/lower/test_grid_sync.c: grid synchronization (lower/sync.c, lower/reduction.c,
 * the runtimes' cf_grid_sync): schedules that read in one kernel what other blocks wrote,
 * which lowering makes valid with a grid-wide sync and a cooperative launch: a global
 * intermediate and an output read back across blocks, and grid reductions whose result
 * the kernel reads (grid all-reduces: every block folds the partials after a grid sync),
 * over blockIdx.x and blockIdx.y, with the value read by an epilogue and broadcast back to
 * the rows each block holds (grid persistence). Each compiles with NVRTC for sm_90a, runs
 * on the host backend (every block resident at once) and equals the evaluator. */
#include <criterion/criterion.h>
#include <string.h>

#include "kernels/kernel_check.h"

static cf_fusion *f;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(grid_sync, .init = setup, .fini = teardown);

static cf_tv *input(int rank, const int64_t *sizes) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, rank, sizes);
  cf_fusion_add_input(f, x);
  return x;
}

/* Checks against the evaluator; the CUDA kernel contains `want` (the sync's form). */
static void check_with(const char *want, int nin, const KcInput *in) {
  char *src = kc_check(f, nin, in, 1e-4);
  cr_expect(strstr(src, want), "no `%s` in:\n%s", want, src);
  free(src);
}

#define IN2(r, c) ((KcInput){CF_FLOAT, 2, {r, c}, NULL})

/* An intermediate in global memory written on blockIdx.x, read by every block (its
 * consumer's axis on blockIdx.x is the other one). */
Test(grid_sync, a_global_intermediate_read_across_blocks) {
  cf_tv *a = input(2, (int64_t[]){6, 9});
  cf_tv *t1 = cf_exp(f, a), *t2 = cf_neg(f, t1);
  cf_fusion_add_output(f, t2);
  cf_set_memory_type(f, t1, CF_MEM_GLOBAL);
  cf_parallelize(f, t1, 0, CF_PT_BIDX);
  cf_parallelize(f, t2, 1, CF_PT_BIDX);
  check_with("cf_grid_sync(&GS.data[0]);", 1, (KcInput[]){IN2(6, 9)});
}

/* An output read back in the same kernel by blocks that did not write it. */
Test(grid_sync, an_output_read_back_across_blocks) {
  cf_tv *a = input(2, (int64_t[]){4, 8});
  cf_tv *t1 = cf_neg(f, a), *t2 = cf_neg(f, t1);
  cf_fusion_add_output(f, t1);
  cf_fusion_add_output(f, t2);
  cf_parallelize(f, t1, 0, CF_PT_BIDX);
  cf_parallelize(f, t2, 1, CF_PT_BIDX);
  check_with("cf_grid_sync(&GS.data[0]);", 1, (KcInput[]){IN2(4, 8)});
}

/* A row sum over blockIdx.x read by an op that is not inlined after it: a grid all-reduce. */
Test(grid_sync, a_grid_reduction_read_in_the_same_kernel) {
  cf_tv *a = input(2, (int64_t[]){4, 8});
  cf_tv *s = cf_sum(f, a, 1, (int[]){1});
  cf_fusion_add_output(f, cf_neg(f, s));
  cf_parallelize(f, s, 1, CF_PT_BIDX);
  check_with("grid all-reduce of a1 (sum) over blockIdx.x", 1, (KcInput[]){IN2(4, 8)});
}

/* Grid persistence by hand: column statistics of x[R, C] over blocks of rows (blockIdx.y,
 * threadIdx.y, a serial fold of `per` rows), each block keeping its rows in registers,
 * then y = (x - mean) * rsqrt(var + eps) from those registers. Two grid all-reduces. */
static void batch_norm_by_hand(int64_t rows, int64_t cols, int64_t ty, int64_t per) {
  cf_tv *x = input(2, (int64_t[]){rows, cols});
  bool outer[2] = {true, false};
  cf_tv *sum = cf_sum(f, x, 1, (int[]){0});
  cf_tv *d = cf_sub(f, x, cf_broadcast(f, cf_mul_scalar(f, sum, 1.0 / (double)rows), 2, outer));
  cf_tv *m2 = cf_sum(f, cf_mul(f, d, d), 1, (int[]){0});
  cf_tv *rstd = cf_rsqrt(f, cf_add_scalar(f, cf_mul_scalar(f, m2, 1.0 / (double)rows), 1e-5));
  cf_fusion_add_output(f, cf_mul(f, d, cf_broadcast(f, rstd, 2, outer)));
  cf_cache_after(f, x);
  /* rows [blocks, ty, per], ordered [columns, per, blocks, ty]: the serial fold right after
   * the columns bounds how deep the rfactor inlines into its reduction, whose reduced
   * axes cannot share its loops (outer_persistent_sched.c's order) */
  cf_split(f, sum, 0, per);
  cf_split(f, sum, 0, ty);
  cf_reorder_all(f, sum, 4, (int[]){2, 3, 1, 0});
  cf_propagate_transforms(f, sum);
  cf_tv *rf = cf_rfactor(f, sum, 1, (int[]){1});
  cf_rfactor(f, m2, 1, (int[]){1});
  cf_parallelize(f, rf, 0, CF_PT_TIDX);
  cf_parallelize(f, rf, 2, CF_PT_BIDY);
  cf_parallelize(f, rf, 3, CF_PT_TIDY);
  cf_parallelize_all_like(f, rf, 3, (cf_parallel_type[]){CF_PT_BIDY, CF_PT_TIDY, CF_PT_TIDX});
  cr_assert_eq(cf_inline_most(f), CF_OK, "%s", cf_fusion_error(f));
}

Test(grid_sync, batch_norm_statistics_over_blocks_of_rows) {
  batch_norm_by_hand(40, 8, 4, 3);
  check_with("grid all-reduce of a", 1, (KcInput[]){IN2(40, 8)});
  cf_fusion_destroy(f), f = cf_fusion_create();
  batch_norm_by_hand(97, 5, 2, 7); /* predicated: 97 rows over 7 blocks of 2 x 7 */
  check_with("grid all-reduce of a", 1, (KcInput[]){IN2(97, 5)});
}
