/* Grouped block and grid reductions (lower/group_reductions.c): a column reduction
 * vectorized by v lanes per thread all-reduces its v accumulators at once, one tree with
 * v adds a step, and for a grid part one round of partials and semaphore for the v.
 * Column sums of float, half and bfloat16 planned by the reduction scheduler on devices
 * scaled down (red_check.h), their kernel IR after lowering printed exact, results equal
 * to the evaluator's on the host backend (NVRTC compiles each for sm_90a); a grid
 * reduction run twice (the semaphores reset); var_mean's Welford states in a grouped grid
 * reduction; batch norm (the outer persistent scheduler's block form); and the
 * warp-shuffle form grouped. GROUP_PRINT=1 prints each kernel IR. */
#include "kernel_ir.h"
#include "lower/lower.h"
#include "scheduler/red_check.h"

TestSuite(group_reductions, .init = setup, .fini = teardown);

/* f lowered, its kernel IR printed (caller frees). */
static char *kernel_ir(void) {
  char *ir = test_kernel_ir(f);
  if (getenv("GROUP_PRINT")) printf("%s\n", ir);
  return ir;
}

/* f planned and scheduled by heuristic h on dev (its printed parameters). */
static void scheduled_by(const SchedHeuristic *h, int n, const KcInput *in, const SchedDevice *dev,
                         const char *want_params) {
  RcCall c;
  rc_call(&c, n, in, dev);
  char why[SCHED_WHY_MAX] = "", params[SCHED_PARAMS_MAX] = "";
  cr_assert(h->accepts(f, &c.call, why), "%s", why);
  cr_assert_eq(h->schedule(f, &c.call, params), CF_OK, "%s", cf_fusion_error(f));
  rc_call_free(&c);
  cr_expect_str_eq(params, want_params);
}

static void scheduled(int n, const KcInput *in, const SchedDevice *dev, const char *want_params) {
  scheduled_by(&sched_reduction_heuristic, n, in, dev, want_params);
}

/* The column sum of an input of in's sizes (accumulated in float). */
static void column_sum(const KcInput *in) {
  cf_tv *x = input_of(in, false);
  cf_fusion_add_output(f, cf_sum(f, widen(x), 1, (int[]){0}));
}

/* How often `what` occurs in s. */
static int count(const char *s, const char *what) {
  int n = 0;
  for (const char *p = strstr(s, what); p; p = strstr(p + 1, what)) n++;
  return n;
}

/* The tiny device with more SMs: the columns of [37, 300] leave SMs to the rows, so the
 * scheduler splits them over blockIdx.y (a grid reduction). */
static SchedDevice four_sms(void) {
  SchedDevice d = tiny; /* red_check.h's, with twice the SMs */
  d.sm_count = 4;
  return d;
}

/* Runs f twice with one executor on the host backend, each run's outputs compared with
 * the evaluator's: a grid reduction's semaphores are back at zero after a run. */
static void run_twice(int n, const KcInput *in, double tol) {
  cf_executor_options o = {.backend = CF_BACKEND_HOST};
  cf_executor *e = cf_executor_create(&o);
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  DLManagedTensor *t[TU_MAX_IO];
  const DLTensor *ins[TU_MAX_IO];
  for (int i = 0; i < n; i++) {
    t[i] = kc_make_input(&in[i], 7 + (uint64_t)i);
    ins[i] = &t[i]->dl_tensor;
  }
  int nout = cf_fusion_num_outputs(f);
  DLManagedTensor *want[TU_MAX_IO] = {0};
  cr_assert_eq(cf_fusion_evaluate(f, n, ins, want), CF_OK, "%s", cf_fusion_error(f));
  for (int run = 0; run < 2; run++) {
    DLManagedTensor *got[TU_MAX_IO] = {0};
    cr_assert_eq(cf_executor_run(e, n, ins, nout, got), CF_OK, "%s", cf_executor_error(e));
    kc_compare(got, want, nout, tol, run ? "second run" : "first run");
    for (int i = 0; i < nout; i++) cf_tensor_free(got[i]);
  }
  for (int i = 0; i < nout; i++) cf_tensor_free(want[i]);
  for (int i = 0; i < n; i++) cf_tensor_free(t[i]);
  cf_executor_destroy(e);
}

/* ---- column sums ------------------------------------------------------------------------ */

/* Four columns a thread (vectors of 4), two rows of threads: the four sums all-reduced over
 * threadIdx.y at once, stored by row 0 after. */
Test(group_reductions, four_lanes_in_one_block_reduction) {
  KcInput in = IN(CF_FLOAT, 37, 300);
  column_sum(&in);
  scheduled(1, &in, &tiny, "outer vector=4 unroll=2 block=32x2 grid=3x1");
  char *ir = kernel_ir();
  cr_expect_str_eq(ir, "alloc T2 Local[8]\n"
                        "alloc T3 Local[4]\n"
                        "alloc W1 Shared[256]\n"
                        "alloc a1 Local[4]\n"
                        "FOR - in 0..3 (blockIdx.x)\n"
                        "  FOR - in 0..32 (threadIdx.x)\n"
                        "    FOR i4 in 0..4 (S)\n"
                        "      IF (((blockIdx.x * 32) + threadIdx.x) < 75)\n"
                        "        T3[i4] = init:sum(T2[i4])\n"
                        "    FOR i0 in 0..10 (S)\n"
                        "      IF ((((blockIdx.x * 32) + threadIdx.x) < 75) && (((i0 * 4) + threadIdx.y) < 35))\n"
                        "        FOR i1 in 0..2 (UR)\n"
                        "          FOR - in 0..2 (threadIdx.y)\n"
                        "            T2[(i1 * 4)] = Set(T0[((((((i0 * 2) + i1) * 2) + threadIdx.y) * 300) + (((blockIdx.x * 32) + threadIdx.x) * 4))]) x4\n"
                        "      ELSE\n"
                        "        FOR i1 in 0..2 (UR)\n"
                        "          FOR - in 0..2 (threadIdx.y)\n"
                        "            IF ((((((i0 * 2) + i1) * 2) + threadIdx.y) < 37) && (((blockIdx.x * 32) + threadIdx.x) < 75))\n"
                        "              T2[(i1 * 4)] = Set(T0[((((((i0 * 2) + i1) * 2) + threadIdx.y) * 300) + (((blockIdx.x * 32) + threadIdx.x) * 4))]) x4\n"
                        "      IF ((((blockIdx.x * 32) + threadIdx.x) < 75) && (((i0 * 4) + threadIdx.y) < 35))\n"
                        "        FOR i2 in 0..2 (UR)\n"
                        "          FOR - in 0..2 (threadIdx.y)\n"
                        "            FOR i3 in 0..4 (S)\n"
                        "              T3[i3] = sum(T2[((i2 * 4) + i3)])\n"
                        "      ELSE\n"
                        "        FOR i2 in 0..2 (UR)\n"
                        "          FOR - in 0..2 (threadIdx.y)\n"
                        "            FOR i3 in 0..4 (S)\n"
                        "              IF ((((((i0 * 2) + i2) * 2) + threadIdx.y) < 37) && (((blockIdx.x * 32) + threadIdx.x) < 75))\n"
                        "                T3[i3] = sum(T2[((i2 * 4) + i3)])\n"
                        "    FOR i5 in 0..4 (S)\n"
                        "      a1[i5] = init:sum(T3[i5])\n"
                        "      FOR - in 0..2 (threadIdx.y)\n"
                        "        IF (((blockIdx.x * 32) + threadIdx.x) < 75)\n"
                        "          a1[i5] = sum(T3[i5])\n"
                        "    BLOCK_REDUCE sum a1[0..4] over y\n"
                        "    FOR i5 in 0..4 (S)\n"
                        "      IF ((threadIdx.y == 0) && (((blockIdx.x * 32) + threadIdx.x) < 75))\n"
                        "        T1[((((blockIdx.x * 32) + threadIdx.x) * 4) + i5)] = Set(a1[i5])\n");
  free(ir);
  free(kc_check(f, 1, &in, 1e-4));
}

/* Rows split over blockIdx.y too: the four partials of a block written together, one
 * count on the group's semaphore, the last block folding the four and storing them. */
Test(group_reductions, four_lanes_in_one_grid_reduction) {
  KcInput in = IN(CF_FLOAT, 37, 300);
  column_sum(&in);
  SchedDevice dev = four_sms();
  scheduled(1, &in, &dev, "outer vector=4 unroll=2 block=32x2 grid=3x2");
  char *ir = kernel_ir();
  cr_expect_str_eq(ir, "alloc T2 Local[8]\n"
                        "alloc T3 Local[4]\n"
                        "alloc W1 Shared[256]\n"
                        "alloc F1 Shared[1]\n"
                        "alloc a1 Local[4]\n"
                        "FOR - in 0..3 (blockIdx.x)\n"
                        "  FOR - in 0..32 (threadIdx.x)\n"
                        "    FOR i4 in 0..4 (S)\n"
                        "      IF (((blockIdx.x * 32) + threadIdx.x) < 75)\n"
                        "        T3[i4] = init:sum(T2[i4])\n"
                        "    FOR i0 in 0..5 (S)\n"
                        "      FOR - in 0..2 (blockIdx.y)\n"
                        "        IF ((((blockIdx.x * 32) + threadIdx.x) < 75) && ((((blockIdx.y * 20) + (i0 * 4)) + threadIdx.y) < 35))\n"
                        "          FOR i1 in 0..2 (UR)\n"
                        "            FOR - in 0..2 (threadIdx.y)\n"
                        "              T2[(i1 * 4)] = Set(T0[((((((((blockIdx.y * 5) + i0) * 2) + i1) * 2) + threadIdx.y) * 300) + (((blockIdx.x * 32) + threadIdx.x) * 4))]) x4\n"
                        "        ELSE\n"
                        "          FOR i1 in 0..2 (UR)\n"
                        "            FOR - in 0..2 (threadIdx.y)\n"
                        "              IF ((((((((blockIdx.y * 5) + i0) * 2) + i1) * 2) + threadIdx.y) < 37) && (((blockIdx.x * 32) + threadIdx.x) < 75))\n"
                        "                T2[(i1 * 4)] = Set(T0[((((((((blockIdx.y * 5) + i0) * 2) + i1) * 2) + threadIdx.y) * 300) + (((blockIdx.x * 32) + threadIdx.x) * 4))]) x4\n"
                        "        IF ((((blockIdx.x * 32) + threadIdx.x) < 75) && ((((blockIdx.y * 20) + (i0 * 4)) + threadIdx.y) < 35))\n"
                        "          FOR i2 in 0..2 (UR)\n"
                        "            FOR - in 0..2 (threadIdx.y)\n"
                        "              FOR i3 in 0..4 (S)\n"
                        "                T3[i3] = sum(T2[((i2 * 4) + i3)])\n"
                        "        ELSE\n"
                        "          FOR i2 in 0..2 (UR)\n"
                        "            FOR - in 0..2 (threadIdx.y)\n"
                        "              FOR i3 in 0..4 (S)\n"
                        "                IF ((((((((blockIdx.y * 5) + i0) * 2) + i2) * 2) + threadIdx.y) < 37) && (((blockIdx.x * 32) + threadIdx.x) < 75))\n"
                        "                  T3[i3] = sum(T2[((i2 * 4) + i3)])\n"
                        "    FOR i5 in 0..4 (S)\n"
                        "      a1[i5] = init:sum(T3[i5])\n"
                        "      FOR - in 0..2 (blockIdx.y)\n"
                        "        FOR - in 0..2 (threadIdx.y)\n"
                        "          IF (((blockIdx.x * 32) + threadIdx.x) < 75)\n"
                        "            a1[i5] = sum(T3[i5])\n"
                        "    BLOCK_REDUCE sum a1[0..4] over y\n"
                        "      FOR i5 in 0..4 (S)\n"
                        "        IF ((threadIdx.y == 0) && (((blockIdx.x * 32) + threadIdx.x) < 75))\n"
                        "          T1[((((blockIdx.x * 32) + threadIdx.x) * 4) + i5)] = Set(a1[i5])\n");
  free(ir);
  char *src = kc_check(f, 1, &in, 1e-4);
  /* one semaphore round, for the group of blocks alone (no loop index in it), with the
   * four partials of a place side by side */
  cr_expect_eq(count(src, "atomicAdd("), 1, "%s", src);
  cr_expect_eq(count(src, "const int cf_gg = (int)(0) * ((int)gridDim.x * (int)gridDim.z) + ((int)blockIdx.x + (int)blockIdx.z * (int)gridDim.x);"), 1, "%s", src);
  cr_expect_eq(count(src, "if (cf_gri == 0) for (int cf_j = 0; cf_j < 4; ++cf_j) G1.data[((cf_gb + ((int)blockIdx.y)) * cf_gnk + cf_gki) * 4 + cf_j] = a1[cf_j];"), 1, "%s", src);
  free(src);
  run_twice(1, &in, 1e-4);
}

/* Half and bfloat16 columns in vectors of 8, their rows split over blockIdx.y too,
 * accumulated in float: an array of 8 floats, one grouped grid reduction. */
Test(group_reductions, sixteen_bit_columns_accumulate_in_float) {
  cf_dtype dts[2] = {CF_HALF, CF_BFLOAT16};
  for (int d = 0; d < 2; d++) {
    fresh();
    KcInput in = {dts[d], 2, {37, 296}, NULL};
    column_sum(&in);
    scheduled(1, &in, &tiny, "outer vector=8 unroll=2 block=32x2 grid=2x2");
    char *ir = kernel_ir();
    cr_expect_eq(count(ir, "alloc a2 Local[8]"), 1, "%s", ir);
    cr_expect_eq(count(ir, "BLOCK_REDUCE sum a2[0..8] over y"), 1, "%s", ir);
    cr_expect_eq(count(ir, "ACC "), 0, "%s", ir);
    free(ir);
    char *src = kc_check(f, 1, &in, 2e-2);
    cr_expect_eq(count(src, "alignas(16) float a2[8];"), 1, "%s", src);
    free(src);
    run_twice(1, &in, 2e-2);
  }
}

/* ---- what the pass leaves --------------------------------------------------------------- */

/* Eight columns a block, eight rows: the warp-shuffle form, its four columns' shuffles,
 * leaders' writes and folds in one reduction (one barrier and the closing one, instead of
 * two for each; the workspace four times the block's threads). */
Test(group_reductions, warp_shuffles_in_one_grouped_reduction) {
  KcInput in = IN(CF_FLOAT, 50, 32);
  column_sum(&in);
  scheduled(1, &in, &tiny, "outer vector=4 unroll=2 block=8x8 grid=1x1");
  char *ir = kernel_ir();
  cr_expect_str_eq(ir, "alloc T2 Local[8]\n"
                        "alloc T3 Local[4]\n"
                        "alloc W1 Shared[256]\n"
                        "alloc a1 Local[4]\n"
                        "FOR - in 0..1 (blockIdx.x)\n"
                        "  FOR - in 0..8 (threadIdx.x)\n"
                        "    FOR i4 in 0..4 (S)\n"
                        "      T3[i4] = init:sum(T2[i4])\n"
                        "    FOR i0 in 0..4 (S)\n"
                        "      IF (((i0 * 16) + threadIdx.y) < 42)\n"
                        "        FOR i1 in 0..2 (UR)\n"
                        "          FOR - in 0..8 (threadIdx.y)\n"
                        "            T2[(i1 * 4)] = Set(T0[((((((i0 * 2) + i1) * 8) + threadIdx.y) * 32) + (threadIdx.x * 4))]) x4\n"
                        "      ELSE\n"
                        "        FOR i1 in 0..2 (UR)\n"
                        "          FOR - in 0..8 (threadIdx.y)\n"
                        "            IF (((((i0 * 2) + i1) * 8) + threadIdx.y) < 50)\n"
                        "              T2[(i1 * 4)] = Set(T0[((((((i0 * 2) + i1) * 8) + threadIdx.y) * 32) + (threadIdx.x * 4))]) x4\n"
                        "      IF (((i0 * 16) + threadIdx.y) < 42)\n"
                        "        FOR i2 in 0..2 (UR)\n"
                        "          FOR - in 0..8 (threadIdx.y)\n"
                        "            FOR i3 in 0..4 (S)\n"
                        "              T3[i3] = sum(T2[((i2 * 4) + i3)])\n"
                        "      ELSE\n"
                        "        FOR i2 in 0..2 (UR)\n"
                        "          FOR - in 0..8 (threadIdx.y)\n"
                        "            FOR i3 in 0..4 (S)\n"
                        "              IF (((((i0 * 2) + i2) * 8) + threadIdx.y) < 50)\n"
                        "                T3[i3] = sum(T2[((i2 * 4) + i3)])\n"
                        "    FOR i5 in 0..4 (S)\n"
                        "      a1[i5] = init:sum(T3[i5])\n"
                        "      FOR - in 0..8 (threadIdx.y)\n"
                        "        a1[i5] = sum(T3[i5])\n"
                        "    BLOCK_REDUCE sum a1[0..4] over y (warp shuffles)\n"
                        "    FOR i5 in 0..4 (S)\n"
                        "      IF (threadIdx.y == 0)\n"
                        "        T1[((threadIdx.x * 4) + i5)] = Set(a1[i5])\n");
  free(ir);
  char *src = kc_check(f, 1, &in, 1e-4);
  cr_expect_eq(count(src, "__syncthreads();"), 2, "%s", src);
  cr_expect(strstr(src, "if ((int)threadIdx.y % (32 / 8) == 0) for (int cf_j = 0; cf_j < 4; ++cf_j) "
                        "W1[cf_j * cf_rt + cf_rb + (int)threadIdx.y / (32 / 8)] = a1[cf_j];") != NULL,
            "%s", src);
  free(src);
}

/* ---- batch norm ------------------------------------------------------------------------- */

/* Batch norm forward (training) over the rows of [N, C], as bench/define_and_run.c's. */
static void batchnorm(const KcInput *in) {
  cf_tv *x = widen(input_of(&in[0], false)), *w = widen(input_of(&in[1], false)), *b = widen(input_of(&in[2], false));
  bool rows[2] = {true, false};
  cf_tv *d = cf_sub(f, x, cf_broadcast(f, cf_mean(f, x, 1, (int[]){0}), 2, rows));
  cf_tv *var = cf_mean(f, cf_mul(f, d, d), 1, (int[]){0});
  cf_tv *y = cf_mul(f, d, cf_broadcast(f, cf_rsqrt(f, cf_add_scalar(f, var, 1e-5)), 2, rows));
  cf_tv *o = cf_add(f, cf_mul(f, y, cf_broadcast(f, w, 2, rows)), cf_broadcast(f, b, 2, rows));
  cf_fusion_add_output(f, cf_tv_dtype(o) == in[0].dtype ? o : cf_cast(f, o, in[0].dtype));
}

/* The outer persistent scheduler's block form on the default device: the mean and the
 * variance each one grouped reduction of four columns. */
Test(group_reductions, batchnorm_statistics_in_two_grouped_reductions) {
  for (int d = 0; d < 2; d++) {
    cf_dtype dt = d ? CF_BFLOAT16 : CF_FLOAT;
    fresh();
    KcInput in[3] = {{dt, 2, {37, 300}, NULL}, {dt, 1, {300}, NULL}, {dt, 1, {300}, NULL}};
    batchnorm(in);
    scheduled_by(&sched_outer_persistent_heuristic, 3, in, sched_device_default(), d ? "block threads=8x13 persistent=3 vector=4 columns=blockIdx.x buffers=inputs"
                                                                                      : "block threads=8x13 persistent=3 vector=4 columns=blockIdx.x");
    char *ir = kernel_ir();
    cr_expect_eq(count(ir, "BLOCK_REDUCE sum "), 2, "%s", ir);
    cr_expect_eq(count(ir, "[0..4] over y\n"), 2, "%s", ir);
    cr_expect_eq(count(ir, "ACC "), 0, "%s", ir);
    free(ir);
    free(kc_check(f, 3, in, d ? 2e-2 : 1e-4));
  }
}

/* var_mean's Welford states of four columns, their rows split over blockIdx.y: one grouped
 * grid reduction of four states, whose tail (the last block's stores of the variance and
 * the mean) loops over the four. */
Test(group_reductions, welford_states_in_one_grid_reduction) {
  KcInput in = IN(CF_FLOAT, 997, 100);
  cf_tv *x = input_of(&in, false), *var = NULL, *mean = NULL;
  cr_assert_eq(cf_var_mean(f, x, 1, (int[]){0}, 1, false, &var, &mean), CF_OK, "%s", cf_fusion_error(f));
  cf_fusion_add_output(f, var);
  cf_fusion_add_output(f, mean);
  scheduled(1, &in, &tiny, "outer vector=4 unroll=2 block=32x2 grid=1x4");
  char *ir = kernel_ir();
  cr_expect_eq(count(ir, "BLOCK_REDUCE welford a1[0..4] over y\n      FOR i5 in 0..4 (S)\n"), 1, "%s", ir);
  cr_expect_eq(count(ir, "ACC "), 0, "%s", ir);
  free(ir);
  char *src = kc_check(f, 1, &in, 1e-3);
  cr_expect_eq(count(src, "alignas(16) CfWelfordF a1[4];"), 1, "%s", src);
  cr_expect_eq(count(src, "atomicAdd("), 1, "%s", src);
  free(src);
  run_twice(1, &in, 1e-3);
}

/* Eight columns a block over six blocks of rows (four SMs): the warp form grouped, with
 * its grid part (one semaphore round for the four columns); equal to the evaluator, run
 * twice (the semaphores reset). */
Test(group_reductions, warp_shuffles_and_a_grid_part_in_one_grouped_reduction) {
  KcInput in = IN(CF_FLOAT, 400, 32);
  column_sum(&in);
  SchedDevice dev = four_sms();
  scheduled(1, &in, &dev, "outer vector=4 unroll=2 block=8x8 grid=1x6");
  char *ir = kernel_ir();
  cr_expect_eq(count(ir, "BLOCK_REDUCE sum a1[0..4] over y (warp shuffles)"), 1, "%s", ir);
  cr_expect(strstr(ir, "alloc F1 Shared[1]\n") != NULL, "no last-block flag (grid part) in:\n%s", ir);
  free(ir);
  run_twice(1, &in, 1e-4);
}
