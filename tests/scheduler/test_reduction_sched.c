/* The reduction scheduler (sched_reduction_heuristic) on inner reductions (rows reduced
 * along their contiguous axis), each heuristic branch reached with small shapes on a
 * device scaled down to two SMs of 128 threads (red_check.h): several short rows per
 * block, a row split across blocks (grid reduction), vector and unrolled loads, a full
 * reduction to a scalar; sizes that divide nothing, of 1 and symbolic; float, bfloat16 and
 * half; sum, max (keeping NaN), min and prod. Each is checked against the evaluator on the
 * host backend, compiled with NVRTC for sm_90a, and run through define and run; the plans
 * of the shapes on the H100 description, and the refusals with their reasons. */
#include <math.h>

#include "scheduler/red_check.h"

TestSuite(reduction_sched, .init = setup, .fini = teardown);

/* out = op(exp(x) * 2) over the last axis (x widened to float for 16-bit dtypes). */
static void row_reduction(cf_reduce_op op, const KcInput *in, bool symbolic) {
  cf_tv *x = input_of(in, symbolic);
  cf_tv *y = cf_mul_scalar(f, cf_exp(f, widen(x)), 2.0);
  cf_fusion_add_output(f, cf_reduce(f, op, y, 1, (int[]){in->rank - 1}, false));
}

static void rows(cf_reduce_op op, KcInput in, bool symbolic, const char *want) {
  fresh();
  row_reduction(op, &in, symbolic);
  rc_run(1, &in, &tiny, want, tol_of(in.dtype) * (in.sizes[in.rank - 1] > 1000 ? 10 : 1));
}

/* Short rows: 8 threads on each row, 8 rows per block on threadIdx.y. */
Test(reduction_sched, several_short_rows_per_block) {
  rows(CF_REDUCE_SUM, IN(CF_FLOAT, 13, 7), false, "inner vector=1 unroll=1 block=8x8 grid=2x1");
  rows(CF_REDUCE_MAX, IN(CF_FLOAT, 5, 3), false, "inner vector=1 unroll=1 block=4x5 grid=1x1");
  rows(CF_REDUCE_SUM, IN(CF_FLOAT, 31, 20), false, "inner vector=4 unroll=1 block=8x8 grid=4x1");
}

/* A long row of a prime length with few rows: split across two blocks (a grid reduction
 * over blockIdx.x, the rows on blockIdx.y), 8 scalar loads unrolled per step. */
Test(reduction_sched, few_long_rows_split_across_blocks) {
  rows(CF_REDUCE_SUM, IN(CF_FLOAT, 2, 8191), false, "inner vector=1 unroll=8 block=64x1 grid=2x2");
  rows(CF_REDUCE_MIN, IN(CF_FLOAT, 1, 8191), true, "inner vector=1 unroll=8 block=64x1 grid=1x4");
}

/* Rows whose length takes 16-byte vectors, unrolled twice; enough rows for a full wave. */
Test(reduction_sched, vector_loads_unrolled) {
  rows(CF_REDUCE_SUM, IN(CF_FLOAT, 8, 4096), false, "inner vector=4 unroll=2 block=64x1 grid=8x1");
  rows(CF_REDUCE_SUM, IN(CF_FLOAT, 5, 1030), false, "inner vector=2 unroll=4 block=64x1 grid=5x1");
  rows(CF_REDUCE_MAX, IN(CF_BFLOAT16, 4, 2048), false, "inner vector=8 unroll=2 block=64x1 grid=4x1");
  rows(CF_REDUCE_SUM, IN(CF_HALF, 6, 999), false, "inner vector=1 unroll=8 block=64x1 grid=6x1");
  rows(CF_REDUCE_SUM, IN(CF_FLOAT, 70, 4), false, "inner vector=4 unroll=1 block=1x64 grid=2x1");
}

/* Constant sizes under 2^31 elements index in 32 bits (the preamble NVRTC compiles says so). */
Test(reduction_sched, indexes_in_32_bits) {
  KcInput in = IN(CF_FLOAT, 2, 8191);
  row_reduction(CF_REDUCE_SUM, &in, false);
  char *src = rc_check(1, &in, &tiny, "inner vector=1 unroll=8 block=64x1 grid=2x2", 1e-3);
  if (cf_nvrtc_available(NULL)) cr_expect(strstr(src, "#define CF_INDEX_TYPE int\n"), "%.300s", src);
  free(src);
}

/* A 1-D tensor reduced to a scalar: the row split over blocks, vectors of 4. */
Test(reduction_sched, full_reduction_to_a_scalar) {
  KcInput in = IN(CF_FLOAT, 5000);
  cf_tv *x = input_of(&in, false);
  cf_fusion_add_output(f, cf_sum(f, cf_exp(f, x), 1, (int[]){0}));
  rc_run(1, &in, &tiny, "inner vector=4 unroll=2 block=64x1 grid=1x2", 1e-3);
  fresh();
  in = IN(CF_FLOAT, 9, 31);
  x = input_of(&in, false);
  cf_fusion_add_output(f, cf_sum(f, x, 2, (int[]){0, 1}));
  rc_run(1, &in, &tiny, "inner vector=1 unroll=3 block=64x1 grid=1x1", 1e-4);
}

/* Sizes of 1 come symbolic (a constant 1 is a broadcast axis); symbolic sizes plan with
 * the call's (no vector: the extent is not a constant of the kernel). */
Test(reduction_sched, sizes_of_one_and_symbolic_sizes) {
  rows(CF_REDUCE_SUM, IN(CF_FLOAT, 1, 1), true, "inner vector=1 unroll=1 block=1x1 grid=1x1");
  rows(CF_REDUCE_SUM, IN(CF_FLOAT, 7, 1), true, "outer vector=1 unroll=1 block=8x1 grid=1x1 reduced-axes-first");
  rows(CF_REDUCE_MAX, IN(CF_FLOAT, 6, 300), true, "inner vector=1 unroll=3 block=64x1 grid=6x1");
  rows(CF_REDUCE_SUM, IN(CF_FLOAT, 4, 64), true, "inner vector=1 unroll=1 block=64x1 grid=4x1");
}

/* A symbolic fusion planned without the call's sizes (unknown: a million of each, no grid,
 * no vector) runs for any sizes. */
Test(reduction_sched, unknown_sizes_plan_for_any) {
  KcInput in = IN(CF_FLOAT, 5, 1001);
  row_reduction(CF_REDUCE_SUM, &in, true);
  SchedCall none = {0, NULL, &tiny};
  char why[SCHED_WHY_MAX] = "", params[SCHED_PARAMS_MAX] = "";
  cr_assert(sched_reduction_heuristic.accepts(f, &none, why), "%s", why);
  cr_assert_eq(sched_reduction_heuristic.schedule(f, &none, params), CF_OK, "%s", cf_fusion_error(f));
  cr_expect_str_eq(params, "inner vector=1 unroll=8 block=64x1 grid=1048576x1");
  free(kc_check(f, 1, &in, 1e-3));
}

/* Integer sums widen to int64 (as torch's) and match exactly, across blocks too. */
Test(reduction_sched, integer_sums_are_exact) {
  KcInput in = IN(CF_INT32, 2, 8191);
  cf_tv *x = input_of(&in, false);
  cf_fusion_add_output(f, cf_sum(f, x, 1, (int[]){1}));
  rc_run(1, &in, &tiny, "inner vector=1 unroll=8 block=64x1 grid=2x2", 0);
  fresh();
  in = IN(CF_INT32, 1030, 40);
  x = input_of(&in, false);
  cf_fusion_add_output(f, cf_reduce(f, CF_REDUCE_MAX, x, 1, (int[]){0}, false));
  rc_run(1, &in, &tiny, "outer vector=4 unroll=2 block=16x4 grid=1x4", 0);
}

/* Two kept axes (merged into the rows after the rfactor), prod, and kept axes after a
 * reduced one (moved first; vectors along the last axis when its extent takes them). */
Test(reduction_sched, rows_of_3d_tensors) {
  KcInput in = IN(CF_FLOAT, 3, 5, 130);
  cf_tv *x = input_of(&in, false);
  cf_fusion_add_output(f, cf_sum(f, cf_exp(f, x), 1, (int[]){2}));
  rc_run(1, &in, &tiny, "inner vector=2 unroll=1 block=64x1 grid=15x1", 1e-4);
  fresh();
  in = IN(CF_FLOAT, 4, 3, 6);
  x = input_of(&in, false);
  cf_fusion_add_output(f, cf_prod(f, cf_add_scalar(f, cf_mul_scalar(f, x, 0.1), 1.0), 1, (int[]){2}));
  rc_run(1, &in, &tiny, "inner vector=2 unroll=1 block=4x12 grid=1x1", 1e-4);
  fresh();
  in = IN(CF_FLOAT, 5, 6, 7);
  x = input_of(&in, false);
  cf_fusion_add_output(f, cf_reduce(f, CF_REDUCE_MAX, x, 2, (int[]){0, 2}, false));
  rc_run(1, &in, &tiny, "inner vector=1 unroll=1 block=64x1 grid=6x1 kept-axes-first", 1e-4);
  fresh();
  in = IN(CF_FLOAT, 4, 3, 8);
  x = input_of(&in, false);
  cf_fusion_add_output(f, cf_sum(f, x, 2, (int[]){0, 2}));
  rc_run(1, &in, &tiny, "inner vector=4 unroll=1 block=8x3 grid=1x1 kept-axes-first", 1e-4);
}

/* A column of extent 1 is not a layout: [rows, 1] summed over rows reads as a row. */
Test(reduction_sched, a_column_of_width_one_is_a_row) {
  KcInput in = IN(CF_FLOAT, 4100, 1);
  cf_tv *x = input_of(&in, true);
  cf_fusion_add_output(f, cf_sum(f, x, 1, (int[]){0}));
  rc_run(1, &in, &tiny, "inner vector=1 unroll=8 block=64x1 grid=1x2 kept-axes-first", 1e-3);
  fresh();
  in = IN(CF_FLOAT, 4);
  x = input_of(&in, false);
  cf_fusion_add_output(f, cf_sum(f, x, 1, (int[]){0}));
  rc_run(1, &in, &tiny, "inner vector=4 unroll=1 block=1x1 grid=1x1", 1e-4);
}

/* ---- accumulation and NaN ----------------------------------------------------------------- */

/* The partial reductions of the scheduled f (reduction outputs that are not fusion
 * outputs): each must hold float. */
static void expect_float_partials(void) {
  int n = 0;
  for (int i = 0; i < f->vals.len; i++) {
    Val *v = f->vals.items[i];
    if (v->kind != VAL_TV || !v->def || ir_op_kind(v->def->op) != OPK_REDUCTION || ir_tv_is_output(f, v)) continue;
    cr_expect_eq(v->dtype, CF_FLOAT, "%s", TV(v)->display_name);
    n++;
  }
  cr_expect_eq(n, 1);
}

/* A bfloat16 (half) sum accumulates in float: the per-thread partial is float, and a row
 * of 4096 values near 1 matches the evaluator (which accumulates in double and rounds
 * once) to the rounding of the result. */
Test(reduction_sched, bfloat16_and_half_partials_are_float) {
  cf_dtype dts[] = {CF_BFLOAT16, CF_HALF};
  for (int d = 0; d < 2; d++) {
    fresh();
    KcInput in = {dts[d], 2, {3, 4096}, NULL};
    cf_tv *x = input_of(&in, false);
    cf_fusion_add_output(f, cf_sum(f, cf_add_scalar(f, cf_mul_scalar(f, x, 0.01), 1.0), 1, (int[]){1}));
    rc_run(1, &in, &tiny, "inner vector=8 unroll=2 block=64x1 grid=3x1", 1e-2);
    expect_float_partials();
  }
}

/* max and min keep NaN (torch's amax, amin): a NaN anywhere in a row, also in a block
 * other than the one that finishes a grid reduction, makes the row's result NaN. */
static void nan_rows(cf_reduce_op op, int64_t rows_, int64_t cols, int64_t nan_at) {
  fresh();
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){rows_, cols});
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_reduce(f, op, x, 1, (int[]){1}, false));
  cf_executor_options host = {.backend = CF_BACKEND_HOST};
  cf_fusion_cache *c = cf_fusion_cache_create(f, &host);
  fc_set_device(c, &tiny);
  DLManagedTensor *t = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){rows_, cols}), *got[1] = {0}, *want[1] = {0};
  cf_tensor_fill_random(&t->dl_tensor, 5);
  ((float *)t->dl_tensor.data)[nan_at] = NAN;
  const DLTensor *ins[1] = {&t->dl_tensor};
  cr_assert_eq(cf_fusion_execute(c, 1, ins, 1, got), CF_OK, "%s", cf_fusion_cache_error(c));
  cr_assert_eq(cf_fusion_evaluate(f, 1, ins, want), CF_OK, "%s", cf_fusion_error(f));
  float *g = got[0]->dl_tensor.data;
  cr_expect(isnan(((float *)want[0]->dl_tensor.data)[nan_at / cols]), "the evaluator keeps NaN");
  for (int64_t r = 0; r < rows_; r++) cr_expect_eq(isnan(g[r]), r == nan_at / cols, "row %lld", (long long)r);
  kc_compare(got, want, 1, 0, "define and run");
  cf_tensor_free(t), cf_tensor_free(got[0]), cf_tensor_free(want[0]);
  cf_fusion_cache_destroy(c);
}

Test(reduction_sched, max_and_min_keep_nan) {
  nan_rows(CF_REDUCE_MAX, 2, 8191, 8191 + 17);   /* a grid reduction: the NaN in block 0 */
  nan_rows(CF_REDUCE_MIN, 2, 8191, 8000);        /* in the last block */
  nan_rows(CF_REDUCE_MAX, 13, 7, 7 * 5 + 6);     /* several rows per block */
  nan_rows(CF_REDUCE_MIN, 8, 4096, 4096 * 3 + 1); /* vector loads */
}

/* ---- the H100 description: the shapes and the reference ones (plans only) ---------- */

static void plan_rows(cf_dtype dt, int64_t r, int64_t c, const char *want) {
  fresh();
  KcInput in = {dt, 2, {r, c}, NULL};
  row_reduction(CF_REDUCE_SUM, &in, false);
  rc_expect_plan(1, &in, &sched_device_h100, want);
}

Test(reduction_sched, plans_on_an_h100) {
  /* a hundred rows of a million: the row split over 5 blocks, 500 blocks in all */
  plan_rows(CF_FLOAT, 100, 1000000, "inner vector=4 unroll=2 block=512x1 grid=100x5");
  plan_rows(CF_FLOAT, 16384, 16384, "inner vector=4 unroll=2 block=256x1 grid=16384x1");
  plan_rows(CF_BFLOAT16, 4096, 32000, "inner vector=8 unroll=2 block=256x1 grid=4096x1");
  plan_rows(CF_FLOAT, 65536, 64, "inner vector=4 unroll=1 block=16x16 grid=4096x1");
  plan_rows(CF_FLOAT, 2, 1 << 20, "inner vector=4 unroll=2 block=512x1 grid=2x64");
  plan_rows(CF_FLOAT, 1 << 20, 4, "inner vector=4 unroll=1 block=1x256 grid=4096x1");
}

/* ---- refusals ------------------------------------------------------------------------------ */

Test(reduction_sched, refusals) {
  KcInput in = IN(CF_FLOAT, 4, 8);
  cf_tv *x = input_of(&in, false);
  cf_fusion_add_output(f, cf_neg(f, x));
  rc_refused(1, &in, "reduction: the fusion has no reduction");
  fresh();
  x = input_of(&in, false);
  cf_fusion_add_output(f, cf_neg(f, cf_sum(f, x, 1, (int[]){1})));
  cf_fusion_add_output(f, cf_neg(f, x)); /* an output of the rows' shape */
  rc_refused(1, &in, "reduction: the outputs must be the reduction T1 or computed from it alone");
  fresh();
  x = input_of(&in, false);
  cf_tv *s = cf_sum(f, x, 1, (int[]){1});
  cf_fusion_add_output(f, cf_add(f, s, cf_sum(f, x, 1, (int[]){1})));
  rc_refused(1, &in, "reduction: T2 is a second reduction");
  fresh();
  x = input_of(&in, false);
  cf_tv *row = input_of(&IN(CF_FLOAT, 8), false);
  cf_fusion_add_output(f, cf_sum(f, x, 1, (int[]){1}));
  cf_fusion_add_output(f, cf_neg(f, row));
  rc_refused(2, (KcInput[]){in, IN(CF_FLOAT, 8)}, "reduction: the outputs must be the reduction T2 or computed from it alone");
  fresh();
  x = input_of(&in, false);
  cf_fusion_add_output(f, cf_div(f, x, cf_broadcast(f, cf_sum(f, x, 1, (int[]){1}), 2, (bool[]){false, true})));
  rc_refused(1, &in, "reduction: T2 broadcasts a result of the reduction T1 (a normalization)");
  fresh();
  x = input_of(&in, false);
  cf_fusion_add_output(f, cf_sum(f, cf_transpose(f, x, 0, 1), 1, (int[]){1}));
  rc_refused(1, &in, "reduction: T1 is computed by permute, not an elementwise op or a broadcast");
  fresh();
  x = input_of(&in, false);
  cf_fusion_add_output(f, cf_sum(f, cf_broadcast(f, cf_sum(f, x, 1, (int[]){1}), 2, (bool[]){false, true}), 1,
                                 (int[]){1})); /* a sum over a broadcast axis is a squeeze (nvFuser's trivial reduction) */
  rc_refused(1, &in, "reduction: T3 is computed by squeeze, not an elementwise op or a broadcast");
  fresh();
  x = input_of(&IN(CF_FLOAT, 1, 300), false);
  cf_fusion_add_output(f, cf_sum(f, cf_exp(f, x), 1, (int[]){0})); /* a squeeze alone: the pointwise scheduler's */
  rc_refused(1, &IN(CF_FLOAT, 1, 300), "reduction: T2 is computed by squeeze, not an elementwise op or a broadcast");
}

/* A prologue with operands that broadcast: of the rows' rank (a row bias [1, n], a column
 * scale [m, 1]), a scalar, and lower-rank ones broadcast in the fusion (a bias [n] over
 * the rows, a scale [m] over the columns), in row and column reductions. */
Test(reduction_sched, broadcast_operands_in_the_prologue) {
  KcInput in[2] = {IN(CF_FLOAT, 6, 1000), IN(CF_FLOAT, 1, 1000)};
  cf_tv *x = input_of(&in[0], false), *bias = input_of(&in[1], false);
  cf_fusion_add_output(f, cf_sum(f, cf_add(f, x, bias), 1, (int[]){1}));
  rc_run(2, in, &tiny, "inner vector=4 unroll=1 block=64x1 grid=6x1", 1e-3);
  fresh();
  in[1] = IN(CF_FLOAT, 6, 1);
  x = input_of(&in[0], false), bias = input_of(&in[1], false);
  cf_fusion_add_output(f, cf_sum(f, cf_mul(f, x, bias), 1, (int[]){0}));
  rc_run(2, in, &tiny, "outer vector=4 unroll=1 block=32x1 grid=8x1", 1e-3);
  fresh();
  in[1] = (KcInput){CF_FLOAT, 0, {0}, NULL};
  x = input_of(&in[0], false), bias = input_of(&in[1], false);
  cf_fusion_add_output(f, cf_reduce(f, CF_REDUCE_MAX, cf_mul(f, x, bias), 1, (int[]){1}, false));
  rc_run(2, in, &tiny, "inner vector=4 unroll=1 block=64x1 grid=6x1", 1e-3);
  for (int axis = 0; axis < 2; axis++) {
    fresh();
    in[1] = IN(CF_FLOAT, in[0].sizes[axis]);
    x = input_of(&in[0], false), bias = input_of(&in[1], false);
    cf_tv *b = cf_broadcast(f, bias, 2, axis ? (bool[]){true, false} : (bool[]){false, true});
    cf_fusion_add_output(f, cf_sum(f, cf_add(f, x, b), 1, (int[]){axis}));
    rc_run(2, in, &tiny, axis ? "inner vector=4 unroll=1 block=64x1 grid=6x1" : "outer vector=4 unroll=1 block=32x1 grid=8x1", 1e-3);
  }
}

/* Constant extents of 1 are broadcast axes, kept axes merged with the others in their
 * order: [1, n] a full reduction of one row, [n, 1] of one column, [1, n] over its
 * broadcast axis a copy, broadcasts between kept axes. */
static void constant_ones(KcInput in, int naxes, const int *axes, const char *want) {
  fresh();
  cf_tv *x = input_of(&in, false);
  cf_fusion_add_output(f, cf_sum(f, cf_exp(f, x), naxes, axes));
  rc_run(1, &in, &tiny, want, 1e-3);
}

Test(reduction_sched, broadcast_axes) {
  constant_ones(IN(CF_FLOAT, 1, 8), 1, (int[]){1}, "inner vector=4 unroll=1 block=2x1 grid=1x1");
  constant_ones(IN(CF_FLOAT, 1, 5000), 1, (int[]){1}, "inner vector=4 unroll=2 block=64x1 grid=1x2");
  constant_ones(IN(CF_FLOAT, 5000, 1), 1, (int[]){0}, "inner vector=1 unroll=8 block=64x1 grid=1x2 kept-axes-first");
  constant_ones(IN(CF_FLOAT, 6, 1, 7), 2, (int[]){0, 2}, "inner vector=1 unroll=1 block=64x1 grid=1x1 kept-axes-first");
  constant_ones(IN(CF_FLOAT, 300, 1, 8), 1, (int[]){0}, "outer vector=4 unroll=2 block=2x32 grid=1x1");
  constant_ones(IN(CF_FLOAT, 1, 2000, 3), 1, (int[]){1}, "outer vector=1 unroll=8 block=4x16 grid=1x4 reduced-axes-first");
  constant_ones(IN(CF_FLOAT, 4, 1, 60, 1), 1, (int[]){2}, "inner vector=1 unroll=1 block=64x1 grid=4x1 kept-axes-first");
  constant_ones(IN(CF_FLOAT, 1, 7, 1, 9), 2, (int[]){1, 3}, "inner vector=1 unroll=1 block=64x1 grid=1x1 kept-axes-first");
  constant_ones(IN(CF_FLOAT, 5, 1, 33), 1, (int[]){0}, "outer vector=1 unroll=3 block=32x2 grid=2x1");
}

/* An elementwise epilogue on the reduced shape (Welford's fields and var_mean's division
 * are one), after the block all-reduce; several outputs. */
Test(reduction_sched, epilogue_on_the_reduced_shape) {
  KcInput in = IN(CF_FLOAT, 5, 3000);
  cf_tv *x = input_of(&in, false), *var = NULL, *mean = NULL;
  cr_assert_eq(cf_var_mean(f, x, 1, (int[]){1}, 1, false, &var, &mean), CF_OK, "%s", cf_fusion_error(f));
  cf_fusion_add_output(f, var);
  cf_fusion_add_output(f, cf_neg(f, mean));
  rc_scheduler = "welford_translate"; /* the registry row that translates Welford, then schedules it inner persistent */
  rc_run(1, &in, &tiny, "inner vector=4 unroll=2 block=64x1 grid=5x1", 1e-4);
}

/* A plan is a value: printed, compared, and applied to a copy of the fusion it was made
 * for. */
Test(reduction_sched, plans_compare_and_apply_to_copies) {
  KcInput in = IN(CF_FLOAT, 2, 8191);
  row_reduction(CF_REDUCE_SUM, &in, false);
  RcCall c;
  rc_call(&c, 1, &in, &tiny);
  char why[SCHED_WHY_MAX];
  RedParams a, b;
  cr_assert(sched_reduction_plan(f, &c.call, &a, why), "%s", why);
  c.call.dev = &sched_device_h100;
  cr_assert(sched_reduction_plan(f, &c.call, &b, why), "%s", why);
  rc_call_free(&c);
  cr_expect(sched_reduction_params_equal(&a, &a));
  cr_expect_not(sched_reduction_params_equal(&a, &b));
  cf_fusion *g = cf_fusion_copy(f);
  cr_assert_eq(sched_reduction_apply(g, &a), CF_OK, "%s", cf_fusion_error(g));
  free(kc_check(g, 1, &in, 1e-3));
  cf_fusion_destroy(g);
}
