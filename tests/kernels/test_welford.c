/* Welford reductions (issue 10): var_mean in one pass through states (ir/welford.c), in
 * every parallel form a sum has: serial, warp shuffles, tree block reductions over 1-D and
 * 2-D thread blocks, a serial part rfactored before the block, grid reductions (alone and
 * after a block), an all-reduce read back in the same kernel (layernorm's shape), double,
 * half and bfloat16 inputs, symbolic sizes. Each is compiled with NVRTC for sm_90a and run
 * on the host backend (and the GPU when present) against the reference evaluator, through
 * tests/kernels/kernel_check.h; the evaluator itself is checked against two-pass sums. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_check.h"

KC_FUSION_SUITE(welford);

static cf_tv *input(cf_dtype dt, int rank, const int64_t *sizes) { return kc_input(f, in, &nin, dt, rank, sizes); }

static char *check(double tol) { return kc_check(f, nin, in, tol); }

/* states = welford(x over the last axis); outputs the mean, M2 and count of each row. */
static cf_tv *row_states(cf_tv *x) {
  cf_tv *w = cf_welford(f, x, 1, (int[]){-1});
  cf_fusion_add_output(f, cf_welford_avg(f, w));
  cf_fusion_add_output(f, cf_welford_m2(f, w));
  cf_fusion_add_output(f, cf_welford_n(f, w));
  return w;
}

/* The schedule of w copied to its readers, everything inlined. */
static void finish(cf_tv *w) {
  cr_assert_eq(cf_parallelize_all_like(f, w, 0, NULL), CF_OK, "%s", cf_fusion_error(f));
  cr_assert_eq(cf_inline_most(f), CF_OK, "%s", cf_fusion_error(f));
}

/* The evaluator against a two-pass mean and variance computed here. */
Test(welford, evaluator_matches_two_passes) {
  cf_tv *x = input(CF_FLOAT, 2, (int64_t[]){3, 37});
  cf_tv *var, *mean;
  cr_assert_eq(cf_var_mean(f, x, 1, (int[]){1}, 1, false, &var, &mean), CF_OK, "%s", cf_fusion_error(f));
  cf_fusion_add_output(f, var);
  cf_fusion_add_output(f, mean);
  DLManagedTensor *t = kc_make_input(&in[0], 3), *out[2] = {0};
  const DLTensor *ins[1] = {&t->dl_tensor};
  cr_assert_eq(cf_fusion_evaluate(f, 1, ins, out), CF_OK, "%s", cf_fusion_error(f));
  const float *xv = t->dl_tensor.data, *vv = out[0]->dl_tensor.data, *mv = out[1]->dl_tensor.data;
  for (int r = 0; r < 3; r++) {
    double s = 0, ss = 0;
    for (int c = 0; c < 37; c++) s += xv[r * 37 + c];
    double m = s / 37;
    for (int c = 0; c < 37; c++) ss += (xv[r * 37 + c] - m) * (xv[r * 37 + c] - m);
    cr_expect(fabs(mv[r] - m) < 1e-6, "row %d: mean %g, two passes %g", r, mv[r], m);
    cr_expect(fabs(vv[r] - ss / 36) < 1e-6, "row %d: var %g, two passes %g", r, vv[r], ss / 36);
  }
  cf_tensor_free(t), cf_tensor_free(out[0]), cf_tensor_free(out[1]);
}

Test(welford, serial_var_mean_keepdim_and_corrections) {
  cf_tv *x = input(CF_FLOAT, 3, (int64_t[]){2, 5, 9});
  for (int c = 0; c < 2; c++) {
    cf_tv *var, *mean;
    cr_assert_eq(cf_var_mean(f, x, 2, (int[]){0, 2}, c, c == 1, &var, &mean), CF_OK, "%s", cf_fusion_error(f));
    cf_fusion_add_output(f, var);
    cf_fusion_add_output(f, mean);
  }
  cf_inline_most(f);
  free(check(1e-5));
}

/* Whole warps on threadIdx.x: the states go through xor shuffles, field by field. */
Test(welford, warp_shuffle) {
  cf_tv *w = row_states(input(CF_FLOAT, 2, (int64_t[]){10, 256}));
  cf_parallelize(f, w, 1, CF_PT_TIDX);
  finish(w);
  char *src = check(1e-4);
  cr_expect(strstr(src, "__shfl_xor_sync(0xffffffffu, cf_v, cf_o)") != NULL, "no warp shuffle in:\n%s", src);
  cr_expect(strstr(src, "CfWelfordF a") != NULL, "no state accumulator in:\n%s", src);
  free(src);
}

Test(welford, tree_block_of_50_threads) {
  cf_tv *w = row_states(input(CF_FLOAT, 2, (int64_t[]){3, 50}));
  cf_parallelize(f, w, 0, CF_PT_BIDX);
  cf_parallelize(f, w, 1, CF_PT_TIDX);
  finish(w);
  free(check(1e-4));
}

/* Elements that overflow to inf (exp(200 x) of x in [-1, 1]) among finite ones: the mean is
 * inf and M2 NaN in the evaluator's serial fold and in the kernel's tree of merges alike
 * (a fuzz seed found the fold's inf + (x - inf) / n = NaN against the tree's inf). */
Test(welford, infinite_elements_in_a_tree_block) {
  cf_tv *w = row_states(cf_exp(f, cf_mul_scalar(f, input(CF_FLOAT, 2, (int64_t[]){3, 50}), 200.0)));
  cf_parallelize(f, w, 0, CF_PT_BIDX);
  cf_parallelize(f, w, 1, CF_PT_TIDX);
  finish(w);
  free(check(1e-4));
  DLManagedTensor *t = kc_make_input(&in[0], 1234), *out[3] = {0};
  const DLTensor *ins[1] = {&t->dl_tensor};
  cr_assert_eq(cf_fusion_evaluate(f, 1, ins, out), CF_OK, "%s", cf_fusion_error(f));
  const float *xv = t->dl_tensor.data, *avg = out[0]->dl_tensor.data, *m2 = out[1]->dl_tensor.data;
  for (int r = 0; r < 3; r++) {
    bool big = false;
    for (int c = 0; c < 50; c++) big |= xv[r * 50 + c] > 0.5f; /* exp(100) > FLT_MAX */
    cr_assert(big, "row %d has no infinite element: the test tests nothing", r);
    cr_expect(isinf(avg[r]) && avg[r] > 0, "row %d: mean %g, want inf", r, avg[r]);
    cr_expect(isnan(m2[r]), "row %d: M2 %g, want NaN", r, m2[r]);
  }
  for (int i = 0; i < 3; i++) cf_tensor_free(out[i]);
  cf_tensor_free(t);
}

Test(welford, two_d_block_reducing_x_and_y_in_double) {
  cf_tv *x = input(CF_DOUBLE, 3, (int64_t[]){4, 6, 10});
  cf_tv *w = cf_welford(f, x, 2, (int[]){1, 2});
  cf_fusion_add_output(f, cf_welford_avg(f, w));
  cf_fusion_add_output(f, cf_welford_m2(f, w));
  cf_parallelize(f, w, 0, CF_PT_BIDX);
  cf_parallelize(f, w, 1, CF_PT_TIDY);
  cf_parallelize(f, w, 2, CF_PT_TIDX);
  finish(w);
  char *src = check(1e-12);
  cr_expect(strstr(src, "CfWelfordD") != NULL, "no double states in:\n%s", src);
  free(src);
}

/* A serial part per thread rfactored out (1000 by 128: not divisible), then the block
 * merges the partial states. */
Test(welford, rfactor_then_block_with_a_non_divisible_split) {
  cf_tv *w = row_states(input(CF_FLOAT, 2, (int64_t[]){16, 1000}));
  cf_split(f, w, 1, 128);
  cf_tv *partial = cf_rfactor(f, w, 1, (int[]){1});
  cr_assert_not_null(partial, "%s", cf_fusion_error(f));
  cf_parallelize(f, w, 0, CF_PT_BIDX);
  cf_parallelize(f, w, 1, CF_PT_TIDX); /* w is [i16, r128] now, the partial [i16, rf8, r128] */
  cr_assert_eq(cf_parallelize_all_like(f, w, 0, NULL), CF_OK, "%s", cf_fusion_error(f));
  cr_assert_eq(cf_inline_most(f), CF_OK, "%s", cf_fusion_error(f));
  free(check(1e-4));
}

/* Rows on blockIdx.y, each row's 1000 columns over 8 blocks of 128 threads: a block then
 * a grid reduction of states, on a symbolic input. */
Test(welford, block_then_grid_symbolic) {
  cf_tv *x = input(CF_FLOAT, 2, NULL);
  in[0].sizes[0] = 5;
  in[0].sizes[1] = 1000;
  cf_tv *w = row_states(x);
  cf_split(f, w, 1, 128);
  cf_parallelize(f, w, 0, CF_PT_BIDY);
  cf_parallelize(f, w, 1, CF_PT_BIDX);
  cf_parallelize(f, w, 2, CF_PT_TIDX);
  finish(w);
  free(check(1e-4));
}

/* One block per column, rows in a serial loop: each row's states are merged across the
 * blocks, and the fields are read in the last block (the grid reduction's tail). */
Test(welford, grid_reduction_in_a_serial_loop) {
  cf_tv *w = row_states(input(CF_FLOAT, 2, (int64_t[]){6, 100}));
  cf_parallelize(f, w, 1, CF_PT_BIDX);
  cf_inline_most(f);
  char *src = check(1e-4);
  cr_expect(strstr(src, "cf_welford_volatile(&") != NULL, "no volatile state loads in:\n%s", src);
  free(src);
}

/* Layernorm's core: (x - mean) * rsqrt(var + eps), the states all-reduced over the row's
 * threads and read back by every thread in the same kernel. */
Test(welford, allreduce_normalizes_rows) {
  cf_tv *x = input(CF_FLOAT, 2, (int64_t[]){6, 128});
  cf_tv *var, *mean;
  cr_assert_eq(cf_var_mean(f, x, 1, (int[]){1}, 0, true, &var, &mean), CF_OK, "%s", cf_fusion_error(f));
  cf_tv *y = cf_mul(f, cf_sub(f, x, mean), cf_rsqrt(f, cf_add_scalar(f, var, 1e-5)));
  cf_fusion_add_output(f, y);
  cf_parallelize(f, y, 0, CF_PT_BIDX);
  cf_parallelize(f, y, 1, CF_PT_TIDX);
  cr_assert_eq(cf_parallelize_all_like(f, y, 0, NULL), CF_OK, "%s", cf_fusion_error(f));
  cr_assert_eq(cf_inline_most(f), CF_OK, "%s", cf_fusion_error(f));
  free(check(1e-4));
}

/* Half and bfloat16 in, states in float. */
Test(welford, half_and_bfloat16_in_float_states) {
  cf_tv *h = input(CF_HALF, 2, (int64_t[]){4, 512}), *b = input(CF_BFLOAT16, 2, (int64_t[]){4, 512});
  cf_tv *ws[2] = {row_states(h), row_states(b)};
  for (int i = 0; i < 2; i++) {
    cf_split(f, ws[i], 1, 128);
    cf_parallelize(f, ws[i], 2, CF_PT_TIDX);
    cf_parallelize_all_like(f, ws[i], 0, NULL);
  }
  cf_inline_most(f);
  free(check(1e-3));
}

/* What states refuse, with the messages users see. */
Test(welford, refusals) {
  cf_tv *x = input(CF_FLOAT, 2, (int64_t[]){3, 4});
  cf_tv *w = cf_welford(f, x, 1, (int[]){1});
  cr_assert_null(cf_add(f, w, w));
  cr_expect_str_eq(cf_fusion_error(f), "add: T1 holds Welford states (mean, M2, count); read them with "
                   "cf_welford_avg, cf_welford_m2 or cf_welford_n first for T1_l_welford_float[iS2{3}, rS3{4}]");
  cf_fusion_clear_error(f);
  cr_assert_null(cf_welford_avg(f, x));
  cr_expect_str_eq(cf_fusion_error(f), "welford_avg: T0 has dtype float, not Welford states; make them with cf_welford "
                   "for T0_g_float[iS0{3}, iS1{4}]");
  cf_fusion_clear_error(f);
  cr_expect_eq(cf_fusion_add_output(f, w), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_error(f), "add_output: T1 holds Welford states; output cf_welford_avg, cf_welford_m2 or "
                   "cf_welford_n of it for T1_l_welford_float[iS2{3}, rS3{4}]");
  cf_fusion_clear_error(f);
  cr_assert_null(cf_welford(f, cf_cast(f, x, CF_INT32), 1, (int[]){0}));
  cr_expect_str_eq(cf_fusion_error(f), "welford: T3 has dtype int; a mean and variance need a floating-point input "
                   "(cast it first) for T3_l_int[iS5{3}, iS6{4}]");
  cf_fusion_clear_error(f);
  cr_assert_null(cf_tensor_concrete(f, CF_WELFORD_FLOAT, 1, (int64_t[]){4}));
  cr_expect_str_eq(cf_fusion_error(f), "tensor_concrete: welford_float is the state of a Welford reduction, not an "
                   "element type of inputs (make states with cf_welford)");
  cf_fusion_clear_error(f);
  cr_expect_eq(cf_var_mean(f, x, 1, (int[]){1}, -1, false, NULL, NULL), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_error(f), "var_mean: correction is -1; it must be 0 or more");
}

/* A grid-reduced state read outside the ops that follow it: a grid all-reduce of Welford
 * states (every block folds the partials after a grid sync), equal to the evaluator. */
Test(welford, grid_states_read_in_another_loop_nest) {
  cf_tv *w = row_states(input(CF_FLOAT, 2, (int64_t[]){6, 100}));
  cf_parallelize(f, w, 1, CF_PT_BIDX);
  char *src = check(1e-4);
  cr_expect(strstr(src, "grid all-reduce"), "%s", src);
  free(src);
}
