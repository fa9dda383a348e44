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
  schedule_and_check(1, &IN(CF_FLOAT, 5, 300), "registers threads=32x4 persistent=3 vector=4 rows=blockIdx.x", 1e-4);
}

/* The parameters for the rows of the benchmark and for a row that needs predicates. */
Test(norm_sched, parameters) {
  softmax(CF_FLOAT, 2, (int64_t[]){2, 4096}, false);
  schedule_and_check(1, &IN(CF_FLOAT, 2, 4096), "registers threads=128 persistent=8 vector=4 rows=blockIdx.x", 1e-4);
  fresh();
  softmax(CF_FLOAT, 2, (int64_t[]){2, 16384}, false); /* 2 rows of 132 SMs: each split over 4 blocks */
  schedule_and_check(1, &IN(CF_FLOAT, 2, 16384),
                     "registers threads=128 persistent=8 vector=4 rows=blockIdx.x grid=blockIdx.y{4}", 1e-4);
  fresh();
  softmax(CF_BFLOAT16, 2, (int64_t[]){2, 4096}, false);
  schedule_and_check(1, &IN(CF_BFLOAT16, 2, 4096),
                     "registers threads=128 persistent=4 vector=8 rows=blockIdx.x", 5e-2);
  fresh();
  softmax(CF_FLOAT, 2, (int64_t[]){3, 1000}, false);
  schedule_and_check(1, &IN(CF_FLOAT, 3, 1000), "registers threads=32x2 persistent=8 vector=4 rows=blockIdx.x", 1e-4);
  fresh();
  softmax(CF_FLOAT, 2, (int64_t[]){3, 4097}, false);
  schedule_and_check(1, &IN(CF_FLOAT, 3, 4097),
                     "registers threads=128 persistent=9 vector=1 rows=blockIdx.x grid=blockIdx.y{4}", 1e-4);
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
                     "registers threads=125 (ceilDiv(row, persistent) at run time) persistent=8 vector=1 "
                     "rows=blockIdx.x",
                     1e-4);
}

/* 3-D: the outer axes are merged onto blockIdx.x; the last one or two axes are the row. */
Test(norm_sched, softmax_3d) {
  softmax(CF_FLOAT, 3, (int64_t[]){2, 3, 100}, false);
  schedule_and_check(1, &IN(CF_FLOAT, 2, 3, 100), "registers threads=32x4 persistent=1 vector=4 rows=blockIdx.x", 1e-4);
  fresh();
  cf_tv *x = input(CF_FLOAT, 3, (int64_t[]){3, 4, 50}, false);
  cf_tv *s = cf_sum(f, x, 2, (int[]){1, 2});
  cf_fusion_add_output(f, cf_div(f, x, cf_broadcast(f, s, 3, (bool[]){false, true, true})));
  schedule_and_check(1, &IN(CF_FLOAT, 3, 4, 50), "registers threads=32x2 persistent=4 vector=2 rows=blockIdx.x", 1e-4);
}

/* One row: no outer axis, no blockIdx.x. */
Test(norm_sched, softmax_of_a_vector) {
  softmax(CF_FLOAT, 1, (int64_t[]){300}, false);
  schedule_and_check(1, &IN(CF_FLOAT, 300), "registers threads=32 persistent=3 vector=4 rows=1", 1e-4);
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

/* ---- each branch, on a device scaled down ----------------------------------------------- */

/* sc_tiny (sched_check.h): 64 threads per block, 16 floats per thread in registers (rows
 * of 1024 floats), 8 KiB of shared memory per block (rows up to about 1700 floats), 2 SMs. */
#define tiny sc_tiny

/* A case of a table: a fusion of one input [rows, cols] and the parameters it gets. */
typedef struct Case {
  cf_dtype dt;
  int64_t rows, cols;
  const char *params;
} Case;

/* Builds each case with `build` (constant sizes) and checks it against the evaluator. */
static void run_cases(const Case *cases, size_t n, void (*build)(cf_dtype, int64_t, int64_t)) {
  for (size_t i = 0; i < n; i++) {
    fresh();
    build(cases[i].dt, cases[i].rows, cases[i].cols);
    schedule_and_check(1, &IN(cases[i].dt, cases[i].rows, cases[i].cols), cases[i].params, tol(cases[i].dt));
  }
}

static void softmax_2d(cf_dtype dt, int64_t rows, int64_t cols) { softmax(dt, 2, (int64_t[]){rows, cols}, false); }

/* One row on 2 SMs: split over 2 blocks (grid all-reduces), in registers while a
 * block's half fits them, else multipass (the online softmax's states combined across the
 * grid). */
Test(norm_sched, softmax_of_a_vector_over_the_grid) {
  sc_dev = &tiny;
  static const struct {
    int64_t n;
    const char *params;
  } cases[] = {
      {1031, "registers threads=64 persistent=9 vector=1 rows=1 grid=blockIdx.y{2}"},
      {4096, "multipass threads=64 chunks=8 vector=4 rows=1 grid=blockIdx.y{2} online_softmax"},
      {4099, "multipass threads=64 chunks=33 vector=1 rows=1 grid=blockIdx.y{2} online_softmax"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    fresh();
    softmax(CF_FLOAT, 1, &cases[i].n, false);
    schedule_and_check(1, &IN(CF_FLOAT, cases[i].n), cases[i].params, 1e-4);
  }
}

/* Softmax in float, bfloat16 and half through registers, shared memory and multipass:
 * primes (vector 1: shared memory only where two blocks fit an SM, never on sc_tiny;
 * multipass loads 4 chunks together), multiples of 4
 * and 8, 1 to 5 rows. */
Test(norm_sched, softmax_each_branch) {
  sc_dev = &tiny;
  static const Case cases[] = {
      {CF_FLOAT, 3, 1000, "registers threads=32 persistent=8 vector=4 rows=blockIdx.x"},
      {CF_FLOAT, 2, 1009, "registers threads=64 persistent=16 vector=1 rows=blockIdx.x"},
      {CF_FLOAT, 5, 1031, "multipass threads=32 chunks=33 unroll=4 vector=1 rows=blockIdx.x online_softmax"},
      {CF_FLOAT, 4, 1500, "shared threads=64 persistent=6 vector=4 rows=blockIdx.x"},
      {CF_FLOAT, 3, 1999, "multipass threads=32 chunks=63 unroll=4 vector=1 rows=blockIdx.x online_softmax"},
      {CF_FLOAT, 2, 4096, "multipass threads=32 chunks=32 vector=4 rows=blockIdx.x online_softmax"},
      {CF_BFLOAT16, 3, 2048, "registers threads=32 persistent=8 vector=8 rows=blockIdx.x"},
      {CF_BFLOAT16, 2, 2053, "multipass threads=32 chunks=65 unroll=4 vector=1 rows=blockIdx.x online_softmax"},
      {CF_BFLOAT16, 2, 2560, "shared threads=64 persistent=5 vector=8 rows=blockIdx.x"},
      {CF_BFLOAT16, 2, 5000, "multipass threads=32 chunks=20 vector=8 rows=blockIdx.x online_softmax"},
      {CF_HALF, 3, 1024, "registers threads=32 persistent=4 vector=8 rows=blockIdx.x"},
      {CF_HALF, 2, 3001, "multipass threads=32 chunks=94 unroll=4 vector=1 rows=blockIdx.x online_softmax"},
      {CF_HALF, 2, 8191, "multipass threads=32 chunks=256 unroll=4 vector=1 rows=blockIdx.x online_softmax"},
  };
  run_cases(cases, sizeof cases / sizeof cases[0], softmax_2d);
}

/* A bfloat16 row of scalars in shared memory (two blocks' worth fit an SM) is read through
 * its cast to float by both the max and the sum: the input's cache, not the recomputed
 * cast, is what the row keeps, and it lives in shared memory (not in registers, where it
 * would spill). */
Test(norm_sched, shared_row_read_through_a_cast_is_in_shared_memory) {
  static const SchedDevice two_blocks = {.sm_count = 2, .max_threads_per_block = 64, .max_threads_per_sm = 128,
                                         .regs_per_sm = 4096, .max_regs_per_thread = 255, .smem_per_block = 8192,
                                         .smem_per_sm = 16384, .l2_bytes = 1 << 20, .max_cluster = 1};
  sc_dev = &two_blocks; /* sc_tiny with room for two blocks' shared memory per SM */
  softmax(CF_BFLOAT16, 2, (int64_t[]){2, 2053}, false);
  schedule_and_check(1, &IN(CF_BFLOAT16, 2, 2053), "shared threads=64 persistent=33 vector=1 rows=blockIdx.x",
                     tol(CF_BFLOAT16));
  char *src = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&src, &len);
  cr_assert_eq(cf_fusion_print_kernel(f, m), CF_OK, "%s", cf_fusion_error(f));
  fclose(m);
  cr_expect(strstr(src, "reinterpret_cast<__nv_bfloat16*>(cf_smem + 0)") != NULL, "%s", src);
  free(src);
}

/* Symbolic rows: the call picks the branch; rows of one element. */
Test(norm_sched, softmax_each_branch_symbolic) {
  sc_dev = &tiny;
  static const struct {
    int64_t rows, cols;
    const char *params;
  } cases[] = {
      {4, 1, "registers threads=1 (ceilDiv(row, persistent) at run time) persistent=1 vector=1 rows=blockIdx.x"},
      {3, 997, "registers threads=63 (ceilDiv(row, persistent) at run time) persistent=16 vector=1 rows=blockIdx.x"},
      {2, 3001, "multipass threads=32 chunks=94 unroll=4 vector=1 rows=blockIdx.x online_softmax"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    fresh();
    softmax(CF_FLOAT, 2, NULL, true);
    schedule_and_check(1, &IN(CF_FLOAT, cases[i].rows, cases[i].cols), cases[i].params, 1e-4);
  }
}

/* Layer norm (weight and bias) and RMS norm through each branch; in shared memory and
 * multipass the weights are read by the last pass. */
Test(norm_sched, layernorm_and_rmsnorm_each_branch) {
  sc_dev = &tiny;
  static const struct {
    cf_dtype dt;
    int64_t rows, cols;
    const char *ln, *rms;
  } cases[] = {
      {CF_FLOAT, 3, 256, "registers threads=32 persistent=2 vector=4 rows=blockIdx.x",
       "registers threads=32x2 persistent=2 vector=4 rows=blockIdx.x"},
      {CF_FLOAT, 2, 1000, "shared threads=64 persistent=4 vector=4 rows=blockIdx.x",
       "registers threads=32 persistent=8 vector=4 rows=blockIdx.x"},
      {CF_FLOAT, 2, 2011, "multipass threads=32 chunks=63 unroll=4 vector=1 rows=blockIdx.x",
       "multipass threads=32 chunks=63 unroll=4 vector=1 rows=blockIdx.x"},
      {CF_BFLOAT16, 3, 512, "registers threads=32 persistent=2 vector=8 rows=blockIdx.x buffers=inputs",
       "registers threads=32x2 persistent=2 vector=8 rows=blockIdx.x buffers=inputs"},
      {CF_BFLOAT16, 2, 3000, "shared threads=64 persistent=6 vector=8 rows=blockIdx.x",
       "shared threads=64 persistent=6 vector=8 rows=blockIdx.x"},
      {CF_HALF, 2, 4099, "multipass threads=32 chunks=129 unroll=4 vector=1 rows=blockIdx.x",
       "multipass threads=32 chunks=129 unroll=4 vector=1 rows=blockIdx.x"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cf_dtype dt = cases[i].dt;
    int64_t r = cases[i].rows, c = cases[i].cols;
    fresh();
    layernorm(dt, r, c);
    schedule_and_check(3, (KcInput[]){IN(dt, r, c), IN(dt, c), IN(dt, c)}, cases[i].ln, tol(dt));
    fresh();
    rmsnorm(dt, r, c);
    schedule_and_check(2, (KcInput[]){IN(dt, r, c), IN(dt, c)}, cases[i].rms, tol(dt));
  }
}

/* RMS norm of short rows: a row shorter than a warp on the power of two of threads covering
 * it, several rows per block on threadIdx.y (each block reads the weight once). */
Test(norm_sched, rmsnorm_several_rows_per_block) {
  sc_dev = &tiny;
  rmsnorm(CF_BFLOAT16, 37, 64);
  schedule_and_check(2, (KcInput[]){IN(CF_BFLOAT16, 37, 64), IN(CF_BFLOAT16, 64)},
                     "registers threads=8x8 persistent=1 vector=8 rows=blockIdx.x buffers=inputs", 5e-2);
  fresh();
  rmsnorm(CF_FLOAT, 2, 64);
  schedule_and_check(2, (KcInput[]){IN(CF_FLOAT, 2, 64), IN(CF_FLOAT, 64)},
                     "registers threads=16x2 persistent=1 vector=4 rows=blockIdx.x", 1e-4);
  fresh();
  rmsnorm(CF_FLOAT, 7, 24);
  schedule_and_check(2, (KcInput[]){IN(CF_FLOAT, 7, 24), IN(CF_FLOAT, 24)},
                     "registers threads=8x4 persistent=1 vector=4 rows=blockIdx.x", 1e-4);
}

/* Whether the scheduled fusion reads input i through a register cache (a copy into local
 * memory: cf_cache_after), rather than where it is used. */
static bool input_cached(int i) {
  Val *in = f->inputs.items[i];
  for (int u = 0; u < in->uses.len; u++) {
    Expr *e = in->uses.items[u];
    if (ir_op_kind(e->op) == OPK_SET && TV(e->out[0])->mem == CF_MEM_LOCAL) return true;
  }
  return false;
}

/* A row parameter's cache is a rank-1 register array computed whole before the rows (it
 * cannot be inlined into the rows' loops): kept for its vector loads (rows of 64 halves:
 * vectors of 8), not made unvectorized (rows of 1001), where the epilogue reads the
 * weight where it multiplies by it (on an H200, RMS norm bfloat16 4096 x 8191: 82.5 ->
 * 65.1 us, its loads no longer issued ahead of the row's). */
Test(norm_sched, an_unvectorized_row_parameter_is_read_where_it_is_used) {
  sc_dev = &tiny;
  rmsnorm(CF_BFLOAT16, 5, 1001);
  schedule_and_check(2, (KcInput[]){IN(CF_BFLOAT16, 5, 1001), IN(CF_BFLOAT16, 1001)},
                     "registers threads=64 persistent=16 vector=1 rows=blockIdx.x buffers=inputs", 5e-2);
  cr_expect(input_cached(0), "the row is cached: it is read across the reduction");
  cr_expect_not(input_cached(1), "the weight is read where it is used");
  fresh();
  rmsnorm(CF_BFLOAT16, 37, 64);
  schedule_and_check(2, (KcInput[]){IN(CF_BFLOAT16, 37, 64), IN(CF_BFLOAT16, 64)},
                     "registers threads=8x8 persistent=1 vector=8 rows=blockIdx.x buffers=inputs", 5e-2);
  cr_expect(input_cached(0) && input_cached(1), "the row and the weight are read in vectors of 8");
}

/* Layer norm as nvFuser's users write it: var_mean (one Welford reduction) with keepdim,
 * casts, and the mean and invstd as outputs of shape [rows, 1]; in shared memory and
 * multipass too (multipass keeps the Welford reduction: two passes over the row). */
static void layernorm_var_mean(cf_dtype dt, int64_t rows, int64_t cols) {
  cf_tv *x = widen(input(dt, 2, (int64_t[]){rows, cols}, false));
  cf_tv *var, *mean;
  cf_var_mean(f, x, 1, (int[]){1}, 0, true, &var, &mean);
  cf_tv *invstd = cf_rsqrt(f, cf_add_scalar(f, var, EPS));
  output(cf_mul(f, cf_sub(f, x, mean), invstd), dt);
  cf_fusion_add_output(f, mean);
  cf_fusion_add_output(f, invstd);
}

Test(norm_sched, layernorm_with_keepdim_mean_and_invstd_outputs) {
  sc_dev = &tiny;
  static const Case cases[] = {
      {CF_FLOAT, 3, 100, "registers threads=32x2 persistent=1 vector=4 rows=blockIdx.x"},
      {CF_BFLOAT16, 2, 1024, "registers threads=32x2 persistent=8 vector=4 rows=blockIdx.x buffers=inputs"},
      {CF_FLOAT, 2, 1500, "shared threads=64 persistent=6 vector=4 rows=blockIdx.x"},
      {CF_HALF, 3, 3001, "multipass threads=32 chunks=94 unroll=4 vector=1 rows=blockIdx.x"},
      {CF_HALF, 3, 4099, "multipass threads=32 chunks=129 unroll=4 vector=1 rows=blockIdx.x"},
  };
  run_cases(cases, sizeof cases / sizeof cases[0], layernorm_var_mean);
}

/* Define and run on the scaled-down device, checked against the evaluator of the fusion
 * as written (the recomputation and the online softmax rewrite change the math the kernel
 * computes, not its result): softmax and log-softmax through every branch, the online
 * form for rows past shared memory, in float, bfloat16 and half. */
static void log_softmax(cf_dtype dt) {
  cf_tv *x = widen(input(dt, 2, NULL, true));
  cf_tv *d = cf_sub(f, x, back(cf_max_reduce(f, x, 1, (int[]){1}), 2));
  output(cf_sub(f, d, back(cf_log(f, cf_sum(f, cf_exp(f, d), 1, (int[]){1})), 2)), dt);
}

Test(norm_sched, define_and_run_softmax_and_log_softmax_each_branch) {
  sc_dev = &tiny;
  static const int64_t cols[] = {1, 1000, 1031, 1999, 8191};
  for (int d = 0; d < 3; d++)
    for (int k = 0; k < 2; k++)
      for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) {
        cf_dtype dt = d == 0 ? CF_FLOAT : d == 1 ? CF_BFLOAT16 : CF_HALF;
        fresh();
        if (k) log_softmax(dt);
        else softmax(dt, 2, NULL, true);
        cf_fusion_cache *c = execute_vs_eval(1, &IN(dt, 3, cols[i]), tol(dt));
        cr_expect_eq(cf_fusion_cache_last_segments(c), 1);
        cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "inner_persistent");
        cf_fusion_cache_destroy(c);
      }
}

/* ---- refusals ------------------------------------------------------------------------ */

/* Where the rows live on an H100 (132 SMs, 64K registers and 227 KiB of shared memory per
 * block): registers while a block's threads keep what their registers hold (544 threads of
 * 31 floats; 1024 threads hold 16 floats each, 32 of a bfloat16 row kept as its input),
 * then shared memory (for a row of scalars only where two blocks fit an SM: bfloat16 of
 * 50257, not float), then multipass; vocabulary
 * sizes. 132 rows: a block per SM, no grid
 * split (fewer rows split each across blocks: grid_rows_on_an_h100). */
Test(norm_sched, vocabulary_rows_on_an_h100) {
  softmax(CF_FLOAT, 2, (int64_t[]){132, 16384}, false);
  planned(1, &IN(CF_FLOAT, 132, 16384), "registers threads=512 persistent=8 vector=4 rows=blockIdx.x");
  fresh();
  softmax(CF_FLOAT, 2, (int64_t[]){132, 16385}, false);
  planned(1, &IN(CF_FLOAT, 132, 16385), "registers threads=544 persistent=31 vector=1 rows=blockIdx.x");
  fresh();
  softmax(CF_FLOAT, 2, (int64_t[]){132, 32000}, false);
  planned(1, &IN(CF_FLOAT, 132, 32000), "shared threads=1024 persistent=8 vector=4 rows=blockIdx.x");
  fresh();
  softmax(CF_BFLOAT16, 2, (int64_t[]){132, 32000}, false);
  planned(1, &IN(CF_BFLOAT16, 132, 32000), "registers threads=1024 persistent=4 vector=8 rows=blockIdx.x buffers=inputs");
  fresh();
  softmax(CF_FLOAT, 2, (int64_t[]){132, 50257}, false);
  planned(1, &IN(CF_FLOAT, 132, 50257), "multipass threads=512 chunks=99 unroll=4 vector=1 rows=blockIdx.x online_softmax");
  fresh();
  softmax(CF_BFLOAT16, 2, (int64_t[]){132, 50257}, false);
  planned(1, &IN(CF_BFLOAT16, 132, 50257), "shared threads=1024 persistent=50 vector=1 rows=blockIdx.x");
  fresh();
  softmax(CF_FLOAT, 2, (int64_t[]){132, 128256}, false);
  planned(1, &IN(CF_FLOAT, 132, 128256), "multipass threads=512 chunks=63 vector=4 rows=blockIdx.x online_softmax");
  fresh();
  softmax(CF_BFLOAT16, 2, (int64_t[]){132, 128256}, false);
  planned(1, &IN(CF_BFLOAT16, 132, 128256), "multipass threads=512 chunks=32 vector=8 rows=blockIdx.x online_softmax");
  fresh();
  softmax(CF_FLOAT, 2, NULL, true);
  planned(1, &IN(CF_FLOAT, 132, 20000),
          "registers threads=625 (ceilDiv(row, persistent) at run time) persistent=32 vector=1 rows=blockIdx.x");
  fresh();
  softmax(CF_FLOAT, 2, NULL, true);
  planned(1, &IN(CF_FLOAT, 132, 50000), "multipass threads=512 chunks=98 unroll=4 vector=1 rows=blockIdx.x online_softmax");
  fresh();
  softmax(CF_FLOAT, 2, NULL, true);
  refused(0, NULL, "inner_persistent: the rows of T0 are symbolic and the call gives no sizes");
}

/* Fewer rows than SMs: each row split over blocks on blockIdx.y (a cooperative launch, the
 * statistics grid all-reduces), in registers while they hold each block's part. */
Test(norm_sched, grid_rows_on_an_h100) {
  softmax(CF_FLOAT, 2, (int64_t[]){4, 128256}, false);
  planned(1, &IN(CF_FLOAT, 4, 128256), "registers threads=128 persistent=9 vector=4 rows=blockIdx.x grid=blockIdx.y{31}");
  fresh();
  softmax(CF_BFLOAT16, 2, (int64_t[]){2, 32000}, false);
  planned(1, &IN(CF_BFLOAT16, 2, 32000),
          "registers threads=128 persistent=11 vector=8 rows=blockIdx.x grid=blockIdx.y{3} buffers=inputs");
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
  refused(1, &IN(CF_FLOAT, 4, 8), "inner_persistent: T1 keeps its innermost axis (the reduced axes must include the innermost one)");
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
          "inner_persistent: T2 broadcasts other axes than the 1 reduced ones or the 2 kept ones");
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

/* Sums of the rows of [3, 5, cols] plus a bias [5] of the kept axes, broadcast to the
 * reduced shape [3, 5] in the kernel (split-K's sum of its slices with a linear's bias,
 * scheduler/split_k.c), then a cast and gelu: a warp or a block a row, vectors of 1 to 8,
 * on the scaled device (nothing persists but the sum: registers always), equal to the
 * evaluator. */
static void sum_plus_kept_bias(cf_dtype dt, int64_t cols) {
  cf_tv *x = widen(input(dt, 3, (int64_t[]){3, 5, cols}, false));
  cf_tv *b = input(dt, 1, (int64_t[]){5}, false);
  cf_tv *s = cf_sum(f, x, 1, (int[]){2});
  cf_tv *y = cf_add(f, s, widen(cf_broadcast(f, b, 2, (bool[]){true, false})));
  output(cf_gelu(f, y), dt);
}

Test(norm_sched, sums_plus_a_bias_of_the_kept_axes_each_branch) {
  sc_dev = &tiny;
  static const Case cases[] = {
      {CF_FLOAT, 0, 4, "registers threads=2x8 persistent=1 vector=4 rows=blockIdx.x"},
      {CF_BFLOAT16, 0, 1024, "registers threads=32x2 persistent=4 vector=8 rows=blockIdx.x"},
      {CF_FLOAT, 0, 1500, "registers threads=64 persistent=6 vector=4 rows=blockIdx.x"},
      {CF_HALF, 0, 4099, "registers threads=64 persistent=65 vector=1 rows=blockIdx.x"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    fresh();
    sum_plus_kept_bias(cases[i].dt, cases[i].cols);
    KcInput in[2] = {IN(cases[i].dt, 3, 5, cases[i].cols), IN(cases[i].dt, 5)};
    schedule_and_check(2, in, cases[i].params, tol(cases[i].dt));
  }
}
