/* The reduction scheduler (sched_reduction_heuristic) on outer reductions (the innermost
 * axis kept: column sums [r, i]) and middle-axis ones ([a, r, b] over r, the batched
 * column form), each heuristic branch reached with small shapes on a device scaled down to
 * two SMs of 128 threads (red_check.h): threads along the columns with a block reduction
 * over rows (threadIdx.y), a grid reduction over rows (blockIdx.y) for tall narrow
 * matrices, vectors of adjacent columns, unrolled rows, Welford states split across blocks
 * (grid Welford, rows and columns); sizes that divide nothing, of 1 and symbolic; float,
 * bfloat16 and half. Each is checked against the evaluator on the host backend, compiled
 * with NVRTC for sm_90a and run through define and run; plans of the shapes on the
 * H100 description. */
#include <math.h>

#include "scheduler/red_check.h"

TestSuite(reduction_outer, .init = setup, .fini = teardown);

/* out = op(exp(x)) over the given axis (x widened to float for 16-bit dtypes). */
static void reduce_axis(cf_reduce_op op, KcInput in, int axis, bool symbolic, const char *want) {
  fresh();
  cf_tv *x = input_of(&in, symbolic);
  cf_fusion_add_output(f, cf_reduce(f, op, cf_exp(f, widen(x)), 1, (int[]){axis}, false));
  rc_run(1, &in, &tiny, want, tol_of(in.dtype) * 10);
}

/* Enough column blocks for a full wave: a block reduction over threadIdx.y only. */
Test(reduction_outer, columns_with_a_block_reduction) {
  reduce_axis(CF_REDUCE_SUM, IN(CF_FLOAT, 40, 1030), 0, false, "outer vector=2 unroll=4 block=32x2 grid=17x1");
  reduce_axis(CF_REDUCE_MAX, IN(CF_FLOAT, 90, 512), 0, false, "outer vector=4 unroll=2 block=32x2 grid=4x1");
  /* the column blocks fill the (tiny) device: nine rows each thread's own, no y reduction */
  reduce_axis(CF_REDUCE_MAX, IN(CF_FLOAT, 9, 512), 0, false, "outer vector=4 unroll=2 block=32x1 grid=4x1");
}

/* Tall narrow matrices: the rows split across blocks too (a grid reduction over
 * blockIdx.y), prime row counts, columns that take vectors of 4 or none. */
Test(reduction_outer, tall_narrow_columns_with_a_grid_reduction) {
  reduce_axis(CF_REDUCE_SUM, IN(CF_FLOAT, 997, 100), 0, false, "outer vector=4 unroll=2 block=32x2 grid=1x4");
  reduce_axis(CF_REDUCE_SUM, IN(CF_FLOAT, 1024, 33), 0, false, "outer vector=1 unroll=8 block=32x2 grid=2x2");
  reduce_axis(CF_REDUCE_MIN, IN(CF_FLOAT, 2003, 3), 0, false, "outer vector=1 unroll=8 block=4x16 grid=1x4");
}

Test(reduction_outer, sixteen_bit_columns) {
  reduce_axis(CF_REDUCE_SUM, IN(CF_BFLOAT16, 300, 64), 0, false, "outer vector=8 unroll=2 block=8x8 grid=1x4");
  reduce_axis(CF_REDUCE_MAX, IN(CF_HALF, 77, 40), 0, false, "outer vector=8 unroll=2 block=8x8 grid=1x1");
}

/* Symbolic sizes plan with the call's (no vector); a column of one row is each thread's
 * own (no block reduction). */
Test(reduction_outer, symbolic_sizes_and_one_row) {
  reduce_axis(CF_REDUCE_SUM, IN(CF_FLOAT, 130, 70), 0, true, "outer vector=1 unroll=8 block=32x2 grid=3x1");
  reduce_axis(CF_REDUCE_SUM, IN(CF_FLOAT, 1, 70), 0, true, "outer vector=1 unroll=1 block=32x1 grid=3x1");
  reduce_axis(CF_REDUCE_SUM, IN(CF_FLOAT, 1, 8), 0, true, "outer vector=1 unroll=1 block=8x1 grid=1x1");
}

/* Middle axes: [a, r, b] over r with b innermost and contiguous (vectors when b allows),
 * the kept axes merged into the columns; two reduced axes around kept ones. */
Test(reduction_outer, middle_axes_in_the_column_form) {
  reduce_axis(CF_REDUCE_SUM, IN(CF_FLOAT, 3, 50, 8), 1, false, "outer vector=4 unroll=2 block=8x8 grid=1x1 reduced-axes-first");
  reduce_axis(CF_REDUCE_SUM, IN(CF_FLOAT, 2, 300, 7), 1, false, "outer vector=1 unroll=8 block=16x4 grid=1x2 reduced-axes-first");
  reduce_axis(CF_REDUCE_MAX, IN(CF_FLOAT, 4, 8, 3), 1, false, "outer vector=1 unroll=2 block=16x4 grid=1x1 reduced-axes-first");
  fresh();
  KcInput in = IN(CF_FLOAT, 5, 6, 7, 3);
  cf_tv *x = input_of(&in, false);
  cf_fusion_add_output(f, cf_sum(f, x, 2, (int[]){0, 2}));
  rc_run(1, &in, &tiny, "outer vector=1 unroll=8 block=32x2 grid=1x1 reduced-axes-first", 1e-4);
}

/* An epilogue after a column (or middle) reduction: computed from the reduction alone,
 * also in the last block of a grid reduction. */
Test(reduction_outer, epilogues_of_columns) {
  KcInput in = IN(CF_FLOAT, 997, 100);
  cf_tv *x = input_of(&in, false);
  cf_tv *s = cf_sum(f, x, 1, (int[]){0});
  cf_fusion_add_output(f, cf_mul_scalar(f, s, 0.5));
  cf_fusion_add_output(f, cf_neg(f, s));
  rc_run(1, &in, &tiny, "outer vector=4 unroll=2 block=32x2 grid=1x4", 1e-3);
  fresh();
  in = IN(CF_FLOAT, 4, 8, 3);
  x = input_of(&in, false);
  cf_fusion_add_output(f, cf_neg(f, cf_sum(f, x, 1, (int[]){1})));
  rc_run(1, &in, &tiny, "outer vector=1 unroll=2 block=16x4 grid=1x1 reduced-axes-first", 1e-4);
}

/* ---- Welford split across blocks (grid Welford) --------------------------------------------- */

/* var_mean's two outputs (the division by count - 1 and the mean) from Welford states
 * merged within blocks and then across blocks by the last one. */
static void var_mean_of(KcInput in, int axis, const char *want) {
  fresh();
  cf_tv *x = input_of(&in, false), *var = NULL, *mean = NULL;
  cr_assert_eq(cf_var_mean(f, widen(x), 1, (int[]){axis}, 1, false, &var, &mean), CF_OK, "%s", cf_fusion_error(f));
  cf_fusion_add_output(f, var);
  cf_fusion_add_output(f, mean);
  rc_run(1, &in, &tiny, want, tol_of(in.dtype) * 10);
}

Test(reduction_outer, welford_split_across_blocks) {
  var_mean_of(IN(CF_FLOAT, 1024, 33), 0, "outer vector=1 unroll=8 block=32x2 grid=2x2");
  var_mean_of(IN(CF_FLOAT, 997, 100), 0, "outer vector=4 unroll=2 block=32x2 grid=1x4");
  var_mean_of(IN(CF_BFLOAT16, 500, 16), 0, "outer vector=8 unroll=2 block=2x32 grid=1x2");
  /* rows longer than the inner persistent scheduler keeps: Welford stays for this one */
  var_mean_of(IN(CF_FLOAT, 2, 20011), 1, "inner vector=1 unroll=8 block=64x1 grid=2x2");
}

/* ---- the H100 description: the shapes (plans only) ---------------------------------- */

static void plan_columns(cf_dtype dt, int64_t r, int64_t c, const char *want) {
  fresh();
  KcInput in = {dt, 2, {r, c}, NULL};
  cf_tv *x = input_of(&in, false);
  cf_fusion_add_output(f, cf_sum(f, widen(x), 1, (int[]){0}));
  rc_expect_plan(1, &in, &sched_device_h100, want);
}

Test(reduction_outer, plans_on_an_h100) {
  /* tens of thousands of rows, a hundred columns: 390 blocks share each column */
  plan_columns(CF_FLOAT, 50000, 100, "outer vector=4 unroll=2 block=32x16 grid=1x390");
  plan_columns(CF_FLOAT, 16384, 16384, "outer vector=4 unroll=2 block=32x16 grid=128x4");
  plan_columns(CF_BFLOAT16, 262144, 64, "outer vector=8 unroll=2 block=8x64 grid=1x512");
  /* few rows, columns enough for the device: each thread folds its column's rows alone */
  plan_columns(CF_FLOAT, 8, 1 << 20, "outer vector=4 unroll=2 block=32x1 grid=8192x1");
  plan_columns(CF_FLOAT, 100, 1000000, "outer vector=4 unroll=2 block=32x8 grid=7813x1");
}
