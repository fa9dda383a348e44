/* The inner persistent normalization scheduler (sched_inner_persistent_heuristic):
 * softmax, layer norm (weight and bias broadcast over the rows) and RMS norm on rows of
 * 1 to 16384 elements and several row counts, float and bfloat16 (computed in float),
 * constant and symbolic, 2-D and 3-D, scheduled for the call's sizes and run against the
 * evaluator (NVRTC for sm_90a, the host backend, the GPU when there is one); layer norm
 * with its mean and rstd as outputs; its printed parameters; the hand schedule showing why
 * symbolic rows are split outer; its refusals with their exact reasons.
 * NORM_PRINT=1 prints every kernel scheduled. */
#include <criterion/criterion.h>
#include <string.h>

#define SC_HEURISTIC sched_inner_persistent_heuristic
#define SC_PRINT "NORM_PRINT"
#include "scheduler/sched_check.h"

TestSuite(norm_sched, .init = setup, .fini = teardown);

/* ---- the fusions --------------------------------------------------------------------- */

/* [rows] -> [rows, 1] (the reduced last axis put back) for a rank-`rank` row shape. */
static cf_tv *back(cf_tv *r, int rank) {
  bool b[8] = {false};
  b[rank - 1] = true;
  return cf_broadcast(f, r, rank, b);
}

/* softmax over the last axis */
static void softmax(cf_dtype dt, int rank, const int64_t *sizes, bool symbolic) {
  cf_tv *x = widen(input(dt, rank, sizes, symbolic));
  int ax = rank - 1;
  cf_tv *e = cf_exp(f, cf_sub(f, x, back(cf_max_reduce(f, x, 1, &ax), rank)));
  output(cf_div(f, e, back(cf_sum(f, e, 1, &ax), rank)), dt);
}

/* weight [cols] broadcast over the rows of [rows, cols] */
static cf_tv *row_param(cf_dtype dt, int64_t cols) {
  cf_tv *w = widen(input(dt, 1, &cols, false));
  return cf_broadcast(f, w, 2, (bool[]){true, false});
}

/* (x - mean) * rsqrt(var + eps) * w + b over [rows, cols] */
static void layernorm(cf_dtype dt, int64_t rows, int64_t cols) {
  cf_tv *x = widen(input(dt, 2, (int64_t[]){rows, cols}, false));
  cf_tv *w = row_param(dt, cols), *b = row_param(dt, cols);
  cf_tv *d = cf_sub(f, x, back(cf_mean(f, x, 1, (int[]){1}), 2));
  cf_tv *var = cf_mean(f, cf_mul(f, d, d), 1, (int[]){1});
  cf_tv *rstd = back(cf_rsqrt(f, cf_add_scalar(f, var, EPS)), 2);
  output(cf_add(f, cf_mul(f, cf_mul(f, d, rstd), w), b), dt);
}

/* layer norm that also returns the mean and the reciprocal standard deviation ([rows],
 * what the backward pass needs): reduced results written by the row's block */
static void layernorm_with_stats(int64_t rows, int64_t cols) {
  cf_tv *x = input(CF_FLOAT, 2, (int64_t[]){rows, cols}, false);
  cf_tv *mean = cf_mean(f, x, 1, (int[]){1});
  cf_tv *d = cf_sub(f, x, back(mean, 2));
  cf_tv *rstd = cf_rsqrt(f, cf_add_scalar(f, cf_mean(f, cf_mul(f, d, d), 1, (int[]){1}), EPS));
  cf_fusion_add_output(f, cf_mul(f, d, back(rstd, 2)));
  cf_fusion_add_output(f, mean);
  cf_fusion_add_output(f, rstd);
}

/* x * rsqrt(mean(x^2) + eps) * w over [rows, cols] */
static void rmsnorm(cf_dtype dt, int64_t rows, int64_t cols) {
  cf_tv *x = widen(input(dt, 2, (int64_t[]){rows, cols}, false));
  cf_tv *w = row_param(dt, cols);
  cf_tv *ms = cf_mean(f, cf_mul(f, x, x), 1, (int[]){1});
  output(cf_mul(f, cf_mul(f, x, back(cf_rsqrt(f, cf_add_scalar(f, ms, EPS)), 2)), w), dt);
}

static const int64_t row_lengths[] = {7, 100, 1000, 1024, 4097, 16384};
enum { NLENGTHS = sizeof row_lengths / sizeof row_lengths[0] };

/* ---- results ------------------------------------------------------------------------- */

Test(norm_sched, softmax_float_rows_of_many_lengths) {
  for (int i = 0; i < NLENGTHS; i++) {
    int64_t rows = 5 - i % 3, cols = row_lengths[i];
    fresh();
    softmax(CF_FLOAT, 2, (int64_t[]){rows, cols}, false);
    schedule_and_check(1, &IN(CF_FLOAT, rows, cols), NULL, tol(CF_FLOAT));
  }
}

Test(norm_sched, softmax_bfloat16_rows_of_many_lengths) {
  for (int i = 0; i < NLENGTHS; i++) {
    int64_t rows = 2 + i % 3, cols = row_lengths[i];
    fresh();
    softmax(CF_BFLOAT16, 2, (int64_t[]){rows, cols}, false);
    schedule_and_check(1, &IN(CF_BFLOAT16, rows, cols), NULL, tol(CF_BFLOAT16));
  }
}

Test(norm_sched, layernorm_float_and_bfloat16) {
  for (int d = 0; d < 2; d++)
    for (int i = 0; i < NLENGTHS; i++) {
      cf_dtype dt = d ? CF_BFLOAT16 : CF_FLOAT;
      int64_t rows = 3 + i % 2, cols = row_lengths[i];
      fresh();
      layernorm(dt, rows, cols);
      schedule_and_check(3, (KcInput[]){IN(dt, rows, cols), IN(dt, cols), IN(dt, cols)}, NULL, tol(dt));
    }
}

Test(norm_sched, rmsnorm_float_and_bfloat16) {
  for (int d = 0; d < 2; d++)
    for (int i = 0; i < NLENGTHS; i++) {
      cf_dtype dt = d ? CF_BFLOAT16 : CF_FLOAT;
      int64_t rows = 2 + i % 3, cols = row_lengths[i];
      fresh();
      rmsnorm(dt, rows, cols);
      schedule_and_check(2, (KcInput[]){IN(dt, rows, cols), IN(dt, cols)}, NULL, tol(dt));
    }
}

Test(norm_sched, layernorm_with_mean_and_rstd_outputs) {
  for (int i = 0; i < NLENGTHS; i++) {
    fresh();
    layernorm_with_stats(3, row_lengths[i]);
    schedule_and_check(1, &IN(CF_FLOAT, 3, row_lengths[i]), NULL, 1e-4);
  }
  fresh();
  cf_tv *x = input(CF_FLOAT, 2, (int64_t[]){5, 300}, false);
  cf_tv *s = cf_sum(f, x, 1, (int[]){1});
  cf_fusion_add_output(f, cf_div(f, x, back(s, 2)));
  cf_fusion_add_output(f, s); /* a reduction itself as an output */
  schedule_and_check(1, &IN(CF_FLOAT, 5, 300), "threads=96 persistent=1 vector=4 rows=blockIdx.x", 1e-4);
}

/* The parameters for the rows of the benchmark and for a row that needs predicates. */
Test(norm_sched, parameters) {
  softmax(CF_FLOAT, 2, (int64_t[]){2, 4096}, false);
  schedule_and_check(1, &IN(CF_FLOAT, 2, 4096), "threads=128 persistent=8 vector=4 rows=blockIdx.x", 1e-4);
  fresh();
  softmax(CF_FLOAT, 2, (int64_t[]){2, 16384}, false);
  schedule_and_check(1, &IN(CF_FLOAT, 2, 16384), "threads=512 persistent=8 vector=4 rows=blockIdx.x", 1e-4);
  fresh();
  softmax(CF_BFLOAT16, 2, (int64_t[]){2, 4096}, false);
  schedule_and_check(1, &IN(CF_BFLOAT16, 2, 4096), "threads=128 persistent=4 vector=8 rows=blockIdx.x", 5e-2);
  fresh();
  softmax(CF_FLOAT, 2, (int64_t[]){3, 1000}, false);
  schedule_and_check(1, &IN(CF_FLOAT, 3, 1000), "threads=128 persistent=2 vector=4 rows=blockIdx.x", 1e-4);
  fresh();
  softmax(CF_FLOAT, 2, (int64_t[]){3, 4097}, false);
  schedule_and_check(1, &IN(CF_FLOAT, 3, 4097), "threads=160 persistent=26 vector=1 rows=blockIdx.x", 1e-4);
}

/* Symbolic sizes: the call gives the row length; rows of one element come this way (a
 * constant extent of 1 is a broadcast axis). */
Test(norm_sched, softmax_symbolic_rows) {
  int64_t shapes[][2] = {{1, 1}, {4, 1}, {3, 7}, {2, 1000}, {2, 16384}};
  for (int i = 0; i < 5; i++) {
    fresh();
    softmax(CF_FLOAT, 2, NULL, true);
    schedule_and_check(1, &IN(CF_FLOAT, shapes[i][0], shapes[i][1]), NULL, 1e-4);
  }
  fresh();
  softmax(CF_FLOAT, 2, NULL, true);
  schedule_and_check(1, &IN(CF_FLOAT, 2, 1000),
                     "threads=125 (ceilDiv(row, persistent) at run time) persistent=8 vector=1 rows=blockIdx.x", 1e-4);
}

/* 3-D: the outer axes are merged onto blockIdx.x; the last one or two axes are the row. */
Test(norm_sched, softmax_3d) {
  softmax(CF_FLOAT, 3, (int64_t[]){2, 3, 100}, false);
  schedule_and_check(1, &IN(CF_FLOAT, 2, 3, 100), "threads=32 persistent=1 vector=4 rows=blockIdx.x", 1e-4);
  fresh();
  cf_tv *x = input(CF_FLOAT, 3, (int64_t[]){3, 4, 50}, false);
  cf_tv *s = cf_sum(f, x, 2, (int[]){1, 2});
  cf_fusion_add_output(f, cf_div(f, x, cf_broadcast(f, s, 3, (bool[]){false, true, true})));
  schedule_and_check(1, &IN(CF_FLOAT, 3, 4, 50), "threads=128 persistent=1 vector=2 rows=blockIdx.x", 1e-4);
}

/* One row: no outer axis, no blockIdx.x. */
Test(norm_sched, softmax_of_a_vector) {
  softmax(CF_FLOAT, 1, (int64_t[]){300}, false);
  schedule_and_check(1, &IN(CF_FLOAT, 300), "threads=96 persistent=1 vector=4 rows=1", 1e-4);
}

/* Why a symbolic row is split outer by the persistent count: the same schedule by hand
 * with the row split inner by 128 threads leaves the per-thread part symbolic, and a
 * register array needs a constant size. */
Test(norm_sched, by_hand_a_symbolic_inner_split_is_refused_by_lowering) {
  cf_tv *x = input(CF_FLOAT, 2, NULL, true);
  cf_tv *m = cf_max_reduce(f, x, 1, (int[]){1});
  cf_tv *e = cf_exp(f, cf_sub(f, x, back(m, 2)));
  cf_tv *s = cf_sum(f, e, 1, (int[]){1});
  cf_fusion_add_output(f, cf_div(f, e, back(s, 2)));
  cf_cache_after(f, x);
  cf_split(f, m, 1, 128);
  cf_propagate_transforms(f, m);
  cf_tv *mrf = cf_rfactor(f, m, 1, (int[]){1});
  cf_rfactor(f, s, 1, (int[]){1});
  cf_parallelize(f, mrf, 0, CF_PT_BIDX);
  cf_parallelize(f, mrf, 2, CF_PT_TIDX);
  cf_parallelize_all_like(f, mrf, 0, NULL);
  cf_inline_most(f);
  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  FILE *sink = fopen("/dev/null", "w");
  cr_expect_neq(cf_fusion_print_kernel(f, sink), CF_OK);
  fclose(sink);
  cr_expect_str_eq(cf_fusion_error(f), "compile: T8 in local memory has a symbolic size; registers need a constant "
                                       "size (inline it deeper or split by a constant)");
}

/* ---- refusals ------------------------------------------------------------------------ */

Test(norm_sched, refuses_rows_longer_than_registers) {
  softmax(CF_FLOAT, 2, (int64_t[]){2, 16385}, false);
  refused(1, &IN(CF_FLOAT, 2, 16385),
          "inner_persistent: rows of T0 hold 16385 elements, more than the 16384 (1024 threads x 16) "
          "kept in registers");
  fresh();
  softmax(CF_FLOAT, 2, NULL, true);
  refused(1, &IN(CF_FLOAT, 2, 20000),
          "inner_persistent: rows of T0 hold 20000 elements, more than the 16384 (1024 threads x 16) "
          "kept in registers");
  refused(0, NULL, "inner_persistent: the rows of T0 are symbolic and the call gives no sizes");
}

Test(norm_sched, refuses_other_fusions) {
  refused_without_reduction("inner_persistent: the fusion has no reduction");
  fresh();
  cf_tv *x = input(CF_FLOAT, 2, (int64_t[]){4, 8}, false);
  cf_fusion_add_output(f, cf_div(f, x, back(cf_sum(f, x, 1, (int[]){1}), 2)));
  cf_tv *w = input(CF_FLOAT, 1, (int64_t[]){8}, false);
  cf_fusion_add_output(f, cf_neg(f, w));
  refused(2, (KcInput[]){IN(CF_FLOAT, 4, 8), IN(CF_FLOAT, 8)},
          "inner_persistent: output T5 has neither the rows' shape nor the reduced one");
  fresh();
  x = input(CF_FLOAT, 2, (int64_t[]){4, 8}, false);
  cf_tv *s = cf_sum(f, x, 1, (int[]){0});
  cf_fusion_add_output(f, cf_div(f, x, cf_broadcast(f, s, 2, (bool[]){true, false})));
  refused(1, &IN(CF_FLOAT, 4, 8), "inner_persistent: T1 reduces an axis before a kept one (only innermost axes)");
  fresh();
  x = input(CF_FLOAT, 3, (int64_t[]){2, 4, 8}, false);
  cf_tv *s1 = cf_sum(f, x, 1, (int[]){2}), *s2 = cf_sum(f, x, 2, (int[]){1, 2});
  cf_tv *y = cf_div(f, x, cf_broadcast(f, s1, 3, (bool[]){false, false, true}));
  cf_fusion_add_output(f, cf_div(f, y, cf_broadcast(f, s2, 3, (bool[]){false, true, true})));
  refused(1, &IN(CF_FLOAT, 2, 4, 8),
          "inner_persistent: T2 reduces 2 of 3 axes, T1 1 of 3 (every reduction must reduce the same rows)");
  fresh();
  x = input(CF_FLOAT, 2, (int64_t[]){4, 8}, false);
  cf_tv *sb = cf_broadcast(f, cf_sum(f, x, 1, (int[]){1}), 2, (bool[]){true, false});
  cf_fusion_add_output(f, cf_div(f, cf_transpose(f, x, 0, 1), sb));
  refused(1, &IN(CF_FLOAT, 4, 8),
          "inner_persistent: T3 is computed by permute, not an elementwise op, a broadcast or a reduction");
}

Test(norm_sched, refuses_other_broadcasts_and_other_rows) {
  cf_tv *x = input(CF_FLOAT, 3, (int64_t[]){2, 4, 4}, false);
  cf_tv *s = cf_sum(f, x, 1, (int[]){2});
  cf_fusion_add_output(f, cf_div(f, x, cf_broadcast(f, s, 3, (bool[]){false, true, false})));
  refused(1, &IN(CF_FLOAT, 2, 4, 4),
          "inner_persistent: T2 broadcasts other axes than the 1 reduced ones or the 2 outer ones");
  fresh();
  x = input(CF_FLOAT, 2, (int64_t[]){4, 8}, false);
  cf_tv *z = input(CF_FLOAT, 2, (int64_t[]){4, 16}, false);
  cf_fusion_add_output(f, cf_div(f, x, back(cf_sum(f, x, 1, (int[]){1}), 2)));
  cf_fusion_add_output(f, cf_div(f, z, back(cf_sum(f, z, 1, (int[]){1}), 2)));
  refused(2, (KcInput[]){IN(CF_FLOAT, 4, 8), IN(CF_FLOAT, 4, 16)},
          "inner_persistent: T5 reduces rows of other extents than T2");
}

Test(norm_sched, refuses_broadcast_rows) {
  softmax(CF_FLOAT, 2, (int64_t[]){1, 8}, false);
  refused(1, &IN(CF_FLOAT, 1, 8), "inner_persistent: T0 has a broadcast axis (a constant extent of 1)");
}
