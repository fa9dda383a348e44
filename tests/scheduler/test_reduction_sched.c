/* The inner-reduction scheduler (sched_reduction_heuristic): its refusals with their exact
 * reasons, its printed parameters, and fusions it scheduled run against the evaluator
 * (NVRTC for sm_90a, the host backend, the GPU when there is one) for rows shorter than,
 * not a multiple of, and longer than its 128 threads, symbolic sizes, bfloat16 and a full
 * reduction to a scalar; column sums [r, i] of several shapes. */
#include <criterion/criterion.h>
#include <string.h>

#include "kernels/kernel_check.h"
#include "scheduler/heuristic.h"

static cf_fusion *f;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(reduction_sched, .init = setup, .fini = teardown);

static const SchedCall no_call = {0, NULL, &sched_device_h100};

static void schedule_ok(const char *want_params) {
  char why[SCHED_WHY_MAX] = "", params[SCHED_PARAMS_MAX] = "";
  cr_assert(sched_reduction_heuristic.accepts(f, &no_call, why), "%s", why);
  cr_assert_eq(sched_reduction_heuristic.schedule(f, &no_call, params), CF_OK, "%s", cf_fusion_error(f));
  cr_expect_str_eq(params, want_params);
}

static void refused(const char *want_why) {
  char why[SCHED_WHY_MAX] = "";
  cr_assert_not(sched_reduction_heuristic.accepts(f, &no_call, why));
  cr_expect_str_eq(why, want_why);
}

/* out[r] = op(exp(x[r, :]) * 2) for a [rows, cols] input (constant or symbolic). */
static void row_reduction(cf_reduce_op op, int64_t rows, int64_t cols, bool symbolic) {
  cf_tv *x = symbolic ? cf_tensor_symbolic(f, CF_FLOAT, 2) : cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){rows, cols});
  cf_fusion_add_input(f, x);
  cf_tv *y = cf_mul_scalar(f, cf_exp(f, x), 2.0);
  cf_fusion_add_output(f, cf_reduce(f, op, y, 1, (int[]){1}, false));
}

static void run_rows(cf_reduce_op op, int64_t rows, int64_t cols, bool symbolic) {
  row_reduction(op, rows, cols, symbolic);
  schedule_ok("threads=128 rows=blockIdx.x");
  free(kc_check(f, 1, (KcInput[]){F32(rows, cols)}, 1e-4));
}

Test(reduction_sched, sums_rows_of_many_lengths) {
  int64_t shapes[][2] = {{3, 5}, {7, 128}, {5, 129}, {2, 1000}};
  for (int i = 0; i < 4; i++) {
    cf_fusion_destroy(f);
    f = cf_fusion_create();
    run_rows(CF_REDUCE_SUM, shapes[i][0], shapes[i][1], false);
  }
}

Test(reduction_sched, max_of_symbolic_rows) { run_rows(CF_REDUCE_MAX, 6, 300, true); }

/* Sizes of 1 come symbolic: a constant extent of 1 is a broadcast axis. */
Test(reduction_sched, one_row_of_one_element) { run_rows(CF_REDUCE_SUM, 1, 1, true); }

/* Two kept axes, merged into one row axis after the rfactor (which takes them untouched). */
Test(reduction_sched, sums_rows_of_a_3d_tensor) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 3, (int64_t[]){3, 5, 130});
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_sum(f, cf_exp(f, x), 1, (int[]){2}));
  schedule_ok("threads=128 rows=blockIdx.x");
  free(kc_check(f, 1, (KcInput[]){F32(3, 5, 130)}, 1e-4));
}

Test(reduction_sched, reduces_everything_to_a_scalar) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){9, 31});
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_sum(f, x, 2, (int[]){0, 1}));
  schedule_ok("threads=128 rows=1");
  free(kc_check(f, 1, (KcInput[]){F32(9, 31)}, 1e-4));
}

/* Sums of the columns of exp(x) for each [rows, cols] shape, scheduled with these params. */
static void sum_columns(int n, int64_t (*shapes)[2], const char *want_params, double tol) {
  for (int i = 0; i < n; i++) {
    cf_fusion_destroy(f);
    f = cf_fusion_create();
    cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 2, shapes[i]);
    cf_fusion_add_input(f, x);
    cf_fusion_add_output(f, cf_sum(f, cf_exp(f, x), 1, (int[]){0}));
    schedule_ok(want_params);
    free(kc_check(f, 1, (KcInput[]){F32(shapes[i][0], shapes[i][1])}, tol));
  }
}

Test(reduction_sched, sums_columns) {
  sum_columns(3, (int64_t[][2]){{5, 7}, {33, 70}, {130, 3}}, "outer columns=32 serial=rows", 1e-4);
}

/* Rows of at least 2048 elements whose innermost extent takes a vector: the inputs are
 * read with 16-byte loads; the rows need not be a multiple of threads x vector. */
Test(reduction_sched, sums_long_rows_with_vector_loads) {
  int64_t shapes[][2] = {{3, 2048}, {2, 2052}, {2, 4100}};
  for (int i = 0; i < 3; i++) {
    cf_fusion_destroy(f);
    f = cf_fusion_create();
    row_reduction(CF_REDUCE_SUM, shapes[i][0], shapes[i][1], false);
    schedule_ok("threads=128 vector=4 rows=blockIdx.x");
    free(kc_check(f, 1, (KcInput[]){F32(shapes[i][0], shapes[i][1])}, 1e-3));
  }
}

/* An innermost extent of 2 (merged with the rows before it) takes vectors of 2; bfloat16
 * vectors of 8. */
Test(reduction_sched, vector_width_follows_the_innermost_extent_and_dtype) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 3, (int64_t[]){2, 1100, 2});
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_sum(f, x, 2, (int[]){1, 2}));
  schedule_ok("threads=128 vector=2 rows=blockIdx.x");
  free(kc_check(f, 1, (KcInput[]){F32(2, 1100, 2)}, 1e-3));
  cf_fusion_destroy(f);
  f = cf_fusion_create();
  x = cf_tensor_concrete(f, CF_BFLOAT16, 2, (int64_t[]){2, 4096});
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_sum(f, cf_neg(f, x), 1, (int[]){1}));
  schedule_ok("threads=128 vector=8 rows=blockIdx.x");
  free(kc_check(f, 1, (KcInput[]){{CF_BFLOAT16, 2, {2, 4096}, NULL}}, 5e-1));
}

/* Tall columns: 16 rows at a time on threadIdx.y, unrolled by 4, a block reduction. */
Test(reduction_sched, sums_tall_columns_over_threadidx_y) {
  sum_columns(2, (int64_t[][2]){{1024, 33}, {1030, 70}}, "outer columns=32 rows=threadIdx.y{16} unroll=4", 1e-3);
}

/* A middle axis ([a, r, b] over r), and two reduced axes around a kept one: the kept axes
 * go first, an inner reduction without vectors. */
Test(reduction_sched, sums_middle_axes_kept_axes_first) {
  int64_t shapes[][3] = {{4, 8, 3}, {2, 300, 7}, {3, 129, 2}};
  for (int i = 0; i < 3; i++) {
    cf_fusion_destroy(f);
    f = cf_fusion_create();
    cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 3, shapes[i]);
    cf_fusion_add_input(f, x);
    cf_fusion_add_output(f, cf_sum(f, cf_exp(f, x), 1, (int[]){1}));
    schedule_ok("threads=128 rows=blockIdx.x kept-axes-first");
    free(kc_check(f, 1, (KcInput[]){F32(shapes[i][0], shapes[i][1], shapes[i][2])}, 1e-4));
  }
  cf_fusion_destroy(f);
  f = cf_fusion_create();
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 3, (int64_t[]){5, 6, 7});
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_reduce(f, CF_REDUCE_MAX, x, 2, (int[]){0, 2}, false));
  schedule_ok("threads=128 rows=blockIdx.x kept-axes-first");
  free(kc_check(f, 1, (KcInput[]){F32(5, 6, 7)}, 1e-4));
}

Test(reduction_sched, refuses_middle_reductions_with_an_epilogue) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 3, (int64_t[]){4, 8, 3});
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_neg(f, cf_sum(f, x, 1, (int[]){1})));
  refused("reduction: T1 reduces an axis before a kept one and has an epilogue (a middle reduction is scheduled "
          "alone)");
}

Test(reduction_sched, refuses_epilogues_and_pointwise_fusions) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_neg(f, x));
  refused("reduction: the fusion has no reduction");
  cf_fusion_destroy(f);
  f = cf_fusion_create();
  x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_fusion_add_input(f, x);
  cf_tv *s = cf_sum(f, x, 1, (int[]){1});
  cf_fusion_add_output(f, cf_neg(f, s));
  cf_fusion_add_output(f, cf_neg(f, x)); /* an output of the rows' shape */
  refused("reduction: the outputs must be the reduction T1 or computed from it alone");
  cf_fusion_destroy(f);
  f = cf_fusion_create();
  x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_fusion_add_input(f, x);
  s = cf_sum(f, x, 1, (int[]){1});
  cf_fusion_add_output(f, cf_add(f, s, cf_sum(f, x, 1, (int[]){1})));
  refused("reduction: T2 is a second reduction");
  cf_fusion_destroy(f);
  f = cf_fusion_create();
  x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){8, 4});
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_neg(f, cf_sum(f, x, 1, (int[]){0})));
  refused("reduction: a column reduction must be the only output");
}

/* An elementwise epilogue on the reduced shape (Welford's fields and var_mean's division
 * are one): computed after the block's all-reduce, several outputs. */
Test(reduction_sched, schedules_an_epilogue_on_the_reduced_shape) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){5, 3000}), *var = NULL, *mean = NULL;
  cf_fusion_add_input(f, x);
  cr_assert_eq(cf_var_mean(f, x, 1, (int[]){1}, 1, false, &var, &mean), CF_OK, "%s", cf_fusion_error(f));
  cf_fusion_add_output(f, var);
  cf_fusion_add_output(f, cf_neg(f, mean));
  schedule_ok("threads=128 vector=4 rows=blockIdx.x");
  free(kc_check(f, 1, (KcInput[]){{CF_FLOAT, 2, {5, 3000}, NULL}}, 1e-4));
}

Test(reduction_sched, refuses_broadcast_rows) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){1, 8});
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_sum(f, x, 1, (int[]){1}));
  refused("reduction: T1 has a broadcast axis (a constant extent of 1)");
}

/* bfloat16 in and out (accumulated in float); the rows outlast the block. */
Test(reduction_sched, sums_bfloat16_rows) {
  cf_tv *x = cf_tensor_concrete(f, CF_BFLOAT16, 2, (int64_t[]){3, 300});
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_sum(f, cf_neg(f, x), 1, (int[]){1}));
  schedule_ok("threads=128 rows=blockIdx.x");
  free(kc_check(f, 1, (KcInput[]){{CF_BFLOAT16, 2, {3, 300}, NULL}}, 5e-2));
}
