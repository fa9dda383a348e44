/* The outer persistent normalization scheduler (sched_outer_persistent_heuristic):
 * x - sum over the outer axis broadcast back, batch norm over [N, C] and [N, H, W, C]
 * (statistics over every axis but the last, weight and bias per column), with the batch
 * mean and rstd as outputs, float and bfloat16 (computed in float), constant and symbolic
 * sizes, N and C of 1 and not multiples of anything; scheduled for the call's sizes and
 * run against the evaluator (NVRTC for sm_90a, the host backend, the GPU when there is
 * one); its printed parameters; its refusals with their exact reasons; define and run
 * choosing it for batch norm (and the other schedulers keeping theirs), one kernel for
 * columns past registers; each form (block, grid, their multipass) on a device scaled
 * down, and the forms an H100 gets for channels-last activations. OUTER_PRINT=1 prints
 * every kernel. */
#include <criterion/criterion.h>
#include <string.h>

#define SC_HEURISTIC sched_outer_persistent_heuristic
#define SC_PRINT "OUTER_PRINT"
#define SC_PRINT_TRANSFORMS 1
#include "scheduler/sched_check.h"

TestSuite(outer_sched, .init = setup, .fini = teardown);

/* ---- the fusions --------------------------------------------------------------------- */

/* The k outermost axes of a rank-`rank` shape put back: [C] -> [1, C], [C] -> [1, 1, 1, C]. */
static cf_tv *back(cf_tv *r, int rank, int k) {
  bool b[8] = {false};
  for (int x = 0; x < k; x++) b[x] = true;
  return cf_broadcast(f, r, rank, b);
}

static const int outer_axes[] = {0, 1, 2, 3, 4, 5};

/* x - sum over the k outer axes, broadcast back. */
static void minus_column_sum(int rank, const int64_t *sizes, bool symbolic) {
  cf_tv *x = input(CF_FLOAT, rank, sizes, symbolic);
  cf_fusion_add_output(f, cf_sub(f, x, back(cf_sum(f, x, rank - 1, outer_axes), rank, rank - 1)));
}

/* Batch norm over every axis but the last (channels last): (x - mean) * rsqrt(var + eps) *
 * w + b, the statistics of each channel over N (and H, W); with_stats: the batch mean and
 * rstd ([C]) are outputs too. */
static void batchnorm(cf_dtype dt, int rank, const int64_t *sizes, bool symbolic, bool with_stats) {
  cf_tv *x = widen(input(dt, rank, sizes, symbolic));
  int k = rank - 1;
  int64_t c = sizes ? sizes[rank - 1] : 0;
  cf_tv *w = widen(input(dt, 1, &c, symbolic)), *b = widen(input(dt, 1, &c, symbolic));
  cf_tv *mean = cf_mean(f, x, k, outer_axes);
  cf_tv *d = cf_sub(f, x, back(mean, rank, k));
  cf_tv *rstd = cf_rsqrt(f, cf_add_scalar(f, cf_mean(f, cf_mul(f, d, d), k, outer_axes), EPS));
  cf_tv *y = cf_mul(f, cf_mul(f, d, back(rstd, rank, k)), back(w, rank, k));
  output(cf_add(f, y, back(b, rank, k)), dt);
  if (with_stats) cf_fusion_add_output(f, mean), cf_fusion_add_output(f, rstd);
}

/* {N, C}: ones, primes, a multiple of the vector, a column group and more, the most rows. */
static const int64_t shapes_2d[][2] = {{1, 1}, {1, 7}, {5, 1}, {3, 3},    {7, 13}, {64, 32},
                                       {33, 100}, {100, 33}, {129, 4}, {512, 33}, {513, 1}};
enum { NSHAPES = sizeof shapes_2d / sizeof shapes_2d[0] };

/* ---- results ------------------------------------------------------------------------- */

Test(outer_sched, minus_the_column_sum_of_many_shapes) {
  for (int i = 0; i < NSHAPES; i++) {
    int64_t n = shapes_2d[i][0], c = shapes_2d[i][1];
    fresh();
    minus_column_sum(2, NULL, true); /* symbolic: sizes of 1 are not broadcast axes */
    schedule_and_check(1, &IN(CF_FLOAT, n, c), NULL, 1e-4);
    if (n == 1 || c == 1) continue;
    fresh();
    minus_column_sum(2, (int64_t[]){n, c}, false);
    schedule_and_check(1, &IN(CF_FLOAT, n, c), NULL, 1e-4);
  }
}

Test(outer_sched, batchnorm_2d_float_and_bfloat16) {
  for (int d = 0; d < 2; d++)
    for (int i = 0; i < NSHAPES; i++) {
      cf_dtype dt = d ? CF_BFLOAT16 : CF_FLOAT;
      int64_t n = shapes_2d[i][0], c = shapes_2d[i][1];
      if (n == 1 || c == 1) continue; /* constant extents of 1 are broadcast axes */
      fresh();
      batchnorm(dt, 2, (int64_t[]){n, c}, false, false);
      schedule_and_check(3, (KcInput[]){IN(dt, n, c), IN(dt, c), IN(dt, c)}, NULL, tol(dt));
    }
}

Test(outer_sched, batchnorm_symbolic_with_mean_and_rstd_outputs) {
  for (int i = 0; i < NSHAPES; i++) {
    int64_t n = shapes_2d[i][0], c = shapes_2d[i][1];
    fresh();
    batchnorm(CF_FLOAT, 2, NULL, true, true);
    schedule_and_check(3, (KcInput[]){IN(CF_FLOAT, n, c), IN(CF_FLOAT, c), IN(CF_FLOAT, c)}, NULL, 1e-4);
  }
}

/* [N, H, W, C]: the statistics over N, H and W (merged into one reduced axis). */
Test(outer_sched, batchnorm_4d_channels_last) {
  int64_t shapes[][4] = {{2, 3, 5, 8}, {3, 4, 4, 7}, {4, 6, 5, 64}};
  for (int i = 0; i < 3; i++) {
    int64_t *s = shapes[i];
    fresh();
    batchnorm(CF_FLOAT, 4, s, false, i == 1);
    schedule_and_check(3, (KcInput[]){IN(CF_FLOAT, s[0], s[1], s[2], s[3]), IN(CF_FLOAT, s[3]), IN(CF_FLOAT, s[3])},
                       NULL, 1e-4);
  }
  fresh();
  batchnorm(CF_FLOAT, 4, NULL, true, false);
  schedule_and_check(3, (KcInput[]){IN(CF_FLOAT, 2, 3, 3, 5), IN(CF_FLOAT, 5), IN(CF_FLOAT, 5)}, NULL, 1e-4);
}

/* A mean over the outer axis alone (no broadcast back): a column sum and a division by
 * the run-time count, one block-reduced kernel. */
Test(outer_sched, column_means) {
  int64_t shapes[][2] = {{1, 4}, {3, 5}, {7, 129}, {300, 2}};
  for (int i = 0; i < 4; i++) {
    fresh();
    cf_tv *x = input(CF_FLOAT, 2, NULL, true);
    cf_fusion_add_output(f, cf_mean(f, x, 1, outer_axes));
    schedule_and_check(1, &IN(CF_FLOAT, shapes[i][0], shapes[i][1]), NULL, 1e-4);
  }
}

/* Two kept axes: [N, H, C] with statistics over N alone, columns H x C merged. */
Test(outer_sched, two_kept_axes) {
  cf_tv *x = input(CF_FLOAT, 3, (int64_t[]){9, 5, 12}, false);
  cf_tv *m = cf_mean(f, x, 1, outer_axes);
  cf_fusion_add_output(f, cf_div(f, x, cf_add_scalar(f, back(m, 3, 1), 100.0)));
  schedule_and_check(1, &IN(CF_FLOAT, 9, 5, 12), "block threads=8x9 persistent=1 vector=4 columns=blockIdx.x", 1e-4);
}

/* The parameters on an H100: columns on threadIdx.x (32 elements a block), the rows on
 * threadIdx.y; two column groups of 512 rows spread over blocks of rows (blockIdx.y). */
Test(outer_sched, parameters) {
  minus_column_sum(2, (int64_t[]){64, 32}, false);
  schedule_and_check(1, &IN(CF_FLOAT, 64, 32), "block threads=8x16 persistent=4 vector=4 columns=blockIdx.x", 1e-4);
  fresh();
  minus_column_sum(2, (int64_t[]){512, 33}, false);
  schedule_and_check(1, &IN(CF_FLOAT, 512, 33),
                     "grid threads=32x4 persistent=8 vector=1 columns=blockIdx.x rows=blockIdx.y{16}", 1e-4);
  fresh();
  minus_column_sum(2, (int64_t[]){100, 3}, false);
  schedule_and_check(1, &IN(CF_FLOAT, 100, 3), "block threads=4x25 persistent=4 vector=1 columns=blockIdx.x", 1e-4);
  fresh();
  minus_column_sum(2, NULL, true);
  schedule_and_check(1, &IN(CF_FLOAT, 1000, 2),
                     "block threads=2x63 (ceilDiv(rows, persistent) at run time) persistent=16 vector=1 "
                     "columns=blockIdx.x",
                     1e-4);
}

/* ---- refusals ------------------------------------------------------------------------ */

/* ---- each branch, on a device scaled down ----------------------------------------------- */

/* 8 SMs of 256 threads, 8192 registers each (64 per thread at 128 threads: 16 left for
 * buffers), 8 KiB of shared memory: block (registers, multipass), grid (registers,
 * multipass) with small shapes. */
static const SchedDevice tiny = {.sm_count = 8,
                                 .max_threads_per_block = 128,
                                 .max_threads_per_sm = 256,
                                 .regs_per_sm = 8192,
                                 .max_regs_per_thread = 255,
                                 .smem_per_block = 8192,
                                 .smem_per_sm = 8192,
                                 .l2_bytes = 1 << 20,
                                 .max_cluster = 1};

Test(outer_sched, batchnorm_each_branch) {
  sc_dev = &tiny;
  static const struct {
    cf_dtype dt;
    int64_t rows, cols;
    bool stats;
    const char *params;
  } cases[] = {
      {CF_FLOAT, 600, 4, false, "block threads=1x120 persistent=5 vector=4 columns=blockIdx.x"},
      {CF_FLOAT, 3001, 4, true, "grid multipass threads=1x128 chunks=8 vector=4 columns=blockIdx.x rows=blockIdx.y{3}"},
      {CF_FLOAT, 300, 512, false, "block multipass threads=8x16 chunks=19 vector=4 columns=blockIdx.x"},
      {CF_FLOAT, 2999, 520, false, "block multipass threads=8x16 chunks=188 vector=4 columns=blockIdx.x"},
      {CF_BFLOAT16, 2000, 8, true,
       "grid threads=2x64 persistent=8 vector=4 columns=blockIdx.x rows=blockIdx.y{4} buffers=inputs"},
      {CF_BFLOAT16, 7919, 8, false,
       "grid multipass threads=1x128 chunks=8 vector=8 columns=blockIdx.x rows=blockIdx.y{8}"},
      {CF_HALF, 1000, 24, false, "grid multipass threads=4x32 chunks=8 vector=8 columns=blockIdx.x rows=blockIdx.y{4}"},
      {CF_HALF, 4001, 3, true,
       "grid threads=4x32 persistent=16 vector=1 columns=blockIdx.x rows=blockIdx.y{8} buffers=inputs"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cf_dtype dt = cases[i].dt;
    int64_t n = cases[i].rows, c = cases[i].cols;
    fresh();
    batchnorm(dt, 2, (int64_t[]){n, c}, false, cases[i].stats);
    schedule_and_check(3, (KcInput[]){IN(dt, n, c), IN(dt, c), IN(dt, c)}, cases[i].params, tol(dt));
  }
}

/* The generated source of f (scheduled) with 32-bit indices on a backend (caller frees). */
static char *source_of(cf_backend backend) {
  cf_executor *e = cf_executor_create(&(cf_executor_options){
      .backend = backend, .arch = backend == CF_BACKEND_CUDA ? "sm_90a" : NULL, .index_type = CF_INDEX_32});
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  char *src = strdup(cf_executor_source(e));
  cf_executor_destroy(e);
  return src;
}

/* The block form (rows in registers) reads the thread and block coordinates as int: nvcc
 * then folds each row's offset into its address instead of keeping every row's 64-bit
 * address live from the loads to the stores (batch norm 512 x 65536 float on an H200:
 * 216 -> 168 registers, 77.9 -> 76.0 us); the other forms keep CUDA's unsigned ones. */
Test(outer_sched, the_block_form_reads_coordinates_as_int) {
  sc_dev = &tiny;
  static const struct {
    int64_t rows;
    bool stats, signed_coords;
    const char *params;
  } cases[] = {{600, false, true, "block threads=1x120 persistent=5 vector=4 columns=blockIdx.x"},
               {3001, true, false, "grid multipass threads=1x128 chunks=8 vector=4 columns=blockIdx.x rows=blockIdx.y{3}"}};
  bool cuda = tu_nvrtc_or_note();
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int64_t n = cases[i].rows;
    fresh();
    batchnorm(CF_FLOAT, 2, (int64_t[]){n, 4}, false, cases[i].stats);
    schedule_and_check(3, (KcInput[]){IN(CF_FLOAT, n, 4), IN(CF_FLOAT, 4), IN(CF_FLOAT, 4)}, cases[i].params, 1e-4);
    char *host = source_of(CF_BACKEND_HOST);
    cr_expect_eq(strstr(host, "#define cfh__coord3 cfh_idim3\n") != NULL, cases[i].signed_coords, "case %zu", i);
    free(host);
    if (!cuda) continue;
    char *src = source_of(CF_BACKEND_CUDA);
    cr_expect_eq(strstr(src, "  const cf_idim3 threadIdx = cf_signed(::threadIdx), blockIdx = cf_signed(::blockIdx)") != NULL,
                 cases[i].signed_coords, "case %zu", i);
    free(src);
  }
}

/* Rule 3, wide rows: where a block reading 256-byte rows holds too many rows for two
 * blocks an SM in registers, half of each thread's rows wait in shared memory, filled by
 * cp.async (an H100 of 2 SMs, so that 512 columns give two waves of two blocks an SM);
 * with fewer rows the whole tile fits and the plan stays the narrow one. Equal to the
 * evaluator; the CUDA source keeps half the registers, asks for two blocks an SM and
 * fills the shared half asynchronously (on an H200, 512 x 65536 float: 76.0 -> ~71 us). */
Test(outer_sched, wide_rows_keep_half_the_tile_in_shared_memory) {
  static SchedDevice two;
  two = sched_device_h100;
  two.sm_count = 2;
  sc_dev = &two;
  fresh();
  batchnorm(CF_FLOAT, 2, (int64_t[]){128, 512}, false, false);
  planned(3, (KcInput[]){IN(CF_FLOAT, 128, 512), IN(CF_FLOAT, 512), IN(CF_FLOAT, 512)},
          "block threads=8x16 persistent=8 vector=4 columns=blockIdx.x");
  fresh();
  batchnorm(CF_FLOAT, 2, (int64_t[]){512, 512}, false, false);
  schedule_and_check(3, (KcInput[]){IN(CF_FLOAT, 512, 512), IN(CF_FLOAT, 512), IN(CF_FLOAT, 512)},
                     "block threads=16x16 persistent=32 (16 in shared memory) vector=4 columns=blockIdx.x buffers=inputs",
                     1e-4);
  fresh(); /* 511 rows: the last row of each thread's shared half guarded off */
  batchnorm(CF_FLOAT, 2, (int64_t[]){511, 512}, false, true);
  schedule_and_check(3, (KcInput[]){IN(CF_FLOAT, 511, 512), IN(CF_FLOAT, 512), IN(CF_FLOAT, 512)},
                     "block threads=16x16 persistent=32 (16 in shared memory) vector=4 columns=blockIdx.x buffers=inputs",
                     1e-4);
  fresh();
  batchnorm(CF_FLOAT, 2, (int64_t[]){512, 512}, false, false);
  planned(3, (KcInput[]){IN(CF_FLOAT, 512, 512), IN(CF_FLOAT, 512), IN(CF_FLOAT, 512)}, NULL);
  if (!tu_nvrtc_or_note()) return;
  char *src = source_of(CF_BACKEND_CUDA);
  static const char *const want[] = {
      "__launch_bounds__(256, 2) cfuser_kernel(",
      "  alignas(16) float T18[64];\n",
      "  float* T18_s = reinterpret_cast<float*>(cf_smem + 8192);\n",
      "    if (((i0 * 4)) < 64) {\n",
      "      asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16;\" :: \"r\"((uint32_t)__cvta_generic_to_shared(&(*cf_spill_at<64, 4, 256>(T18, T18_s, (i0 * 4))))), ",
      "  cf_loads_issued<64>(T18);\n  asm volatile(\"cp.async.commit_group;\" ::: \"memory\");\n  asm volatile(\"cp.async.wait_group %0;\" :: \"n\"(0) : \"memory\");\n",
  };
  TU_EXPECT_CONTAINS(src, want);
  free(src);
}

/* A batch norm of [rows, cols] planned as each case says (channels last). */
typedef struct ClCase {
  cf_dtype dt;
  int64_t rows, cols;
  const char *params;
} ClCase;

static void plan_channels_last(const ClCase *cases, size_t n) {
  for (size_t i = 0; i < n; i++) {
    cf_dtype dt = cases[i].dt;
    int64_t r = cases[i].rows, c = cases[i].cols;
    fresh();
    batchnorm(dt, 2, (int64_t[]){r, c}, false, false);
    planned(3, (KcInput[]){IN(dt, r, c), IN(dt, c), IN(dt, c)}, cases[i].params);
  }
}

/* Channels-last activations of 64 channels on an H100: blocks of rows over the grid,
 * in registers while they hold the rows, else each pass reading them again (never a
 * refusal, never a serial kernel); a wide batch (65536 channels) a block per group. */
Test(outer_sched, channels_last_activations_on_an_h100) {
  static const ClCase cases[] = {
      {CF_BFLOAT16, 8192, 64,
       "grid threads=4x32 persistent=8 vector=8 columns=blockIdx.x rows=blockIdx.y{32} buffers=inputs"},
      {CF_BFLOAT16, 65536, 64,
       "grid threads=4x32 persistent=8 vector=8 columns=blockIdx.x rows=blockIdx.y{256} buffers=inputs"},
      {CF_BFLOAT16, 802816, 64,
       "grid multipass threads=4x32 chunks=98 vector=8 columns=blockIdx.x rows=blockIdx.y{256}"},
      {CF_FLOAT, 802816, 64, "grid multipass threads=8x16 chunks=196 vector=4 columns=blockIdx.x rows=blockIdx.y{256}"},
      {CF_FLOAT, 512, 65536,
       "block threads=16x16 persistent=32 (16 in shared memory) vector=4 columns=blockIdx.x buffers=inputs"},
      {CF_BFLOAT16, 100352, 256,
       "grid multipass threads=4x32 chunks=49 vector=8 columns=blockIdx.x rows=blockIdx.y{64}"},
  };
  plan_channels_last(cases, sizeof cases / sizeof cases[0]);
}

/* The same activations on a device without the host backend's cooperative limit
 * (max_coop_threads 0; the host keeps 65536 threads resident; define and run gives a GPU
 * every thread it holds): the SMs x the blocks per SM the kernel allows (660 blocks of
 * rows for each of two column groups) would bound it, but the groups' folds cap it at
 * SCHED_GRID_MAX_GROUP_BLOCKS = 512 (1024 blocks of 128 threads) where the host takes 256
 * per group: four times the loads in flight. */
Test(outer_sched, channels_last_activations_without_a_cooperative_limit) {
  static SchedDevice gpu;
  gpu = sched_device_h100;
  gpu.max_coop_threads = 0;
  sc_dev = &gpu;
  static const ClCase cases[] = {
      {CF_FLOAT, 802816, 64, "grid multipass threads=8x16 chunks=98 vector=4 columns=blockIdx.x rows=blockIdx.y{512}"},
      {CF_BFLOAT16, 802816, 64,
       "grid multipass threads=4x32 chunks=49 vector=8 columns=blockIdx.x rows=blockIdx.y{512}"},
  };
  plan_channels_last(cases, sizeof cases / sizeof cases[0]);
}

/* Batch norm through define and run on the scaled-down device, each form, against the
 * evaluator of the fusion as written. */
Test(outer_sched, define_and_run_batchnorm_each_branch) {
  sc_dev = &tiny;
  static const int64_t shapes[][2] = {{600, 4}, {3001, 4}, {300, 512}, {2000, 8}, {4001, 3}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    int64_t n = shapes[i][0], c = shapes[i][1];
    fresh();
    batchnorm(CF_FLOAT, 2, NULL, true, true);
    cf_fusion_cache *fc = execute_vs_eval(3, (KcInput[]){IN(CF_FLOAT, n, c), IN(CF_FLOAT, c), IN(CF_FLOAT, c)}, 1e-4);
    cr_expect_eq(cf_fusion_cache_last_segments(fc), 1);
    cr_expect_str_eq(cf_fusion_cache_last_scheduler(fc, 0), "outer_persistent");
    cf_fusion_cache_destroy(fc);
  }
}

/* Symbolic sizes take the block forms: registers split outer by p, or multipass. */
Test(outer_sched, symbolic_columns_each_branch) {
  sc_dev = &tiny;
  minus_column_sum(2, NULL, true);
  schedule_and_check(1, &IN(CF_FLOAT, 1000, 2),
                     "block threads=2x63 (ceilDiv(rows, persistent) at run time) persistent=16 vector=1 "
                     "columns=blockIdx.x",
                     1e-4);
  fresh();
  minus_column_sum(2, NULL, true);
  schedule_and_check(1, &IN(CF_FLOAT, 20000, 1), "block multipass threads=1x128 chunks=157 vector=1 columns=blockIdx.x",
                     1e-4);
  fresh();
  minus_column_sum(2, NULL, true);
  refused(0, NULL, "outer_persistent: the sizes of T0 are symbolic and the call gives none");
}

Test(outer_sched, refuses_other_fusions) {
  refused_without_reduction("outer_persistent: the fusion has no reduction");
  fresh();
  cf_tv *x = input(CF_FLOAT, 2, (int64_t[]){4, 8}, false);
  cf_fusion_add_output(f, cf_div(f, x, cf_broadcast(f, cf_sum(f, x, 1, (int[]){1}), 2, (bool[]){false, true})));
  refused(1, &IN(CF_FLOAT, 4, 8), "outer_persistent: T1 reduces an axis after a kept one (only outermost axes)");
  fresh();
  x = input(CF_FLOAT, 2, (int64_t[]){4, 8}, false);
  cf_fusion_add_output(f, cf_sum(f, x, 2, (int[]){0, 1}));
  refused(1, &IN(CF_FLOAT, 4, 8), "outer_persistent: T1 reduces every axis (no column is kept)");
  fresh();
  x = input(CF_FLOAT, 3, (int64_t[]){2, 4, 8}, false);
  cf_tv *s1 = cf_sum(f, x, 1, (int[]){0}), *s2 = cf_sum(f, x, 2, (int[]){0, 1});
  cf_tv *y = cf_div(f, x, back(s1, 3, 1));
  cf_fusion_add_output(f, cf_div(f, y, back(s2, 3, 2)));
  refused(1, &IN(CF_FLOAT, 2, 4, 8),
          "outer_persistent: T2 reduces 2 of 3 axes, T1 1 of 3 (every reduction must reduce the same columns)");
  fresh();
  x = input(CF_FLOAT, 2, (int64_t[]){4, 8}, false);
  cf_tv *sb = back(cf_sum(f, x, 1, (int[]){0}), 2, 1);
  cf_fusion_add_output(f, cf_div(f, cf_transpose(f, cf_transpose(f, x, 0, 1), 0, 1), sb));
  refused(1, &IN(CF_FLOAT, 4, 8),
          "outer_persistent: T3 is computed by permute, not an elementwise op, a broadcast or a reduction");
}

Test(outer_sched, refuses_other_broadcasts_outputs_and_columns) {
  cf_tv *x = input(CF_FLOAT, 3, (int64_t[]){4, 4, 4}, false);
  cf_tv *s = cf_sum(f, x, 1, (int[]){0});
  cf_fusion_add_output(f, cf_div(f, x, cf_broadcast(f, s, 3, (bool[]){false, true, false})));
  refused(1, &IN(CF_FLOAT, 4, 4, 4), "outer_persistent: T2 broadcasts other axes than the 1 reduced outer ones");
  fresh();
  x = input(CF_FLOAT, 2, (int64_t[]){4, 8}, false);
  cf_fusion_add_output(f, cf_sub(f, x, back(cf_sum(f, x, 1, (int[]){0}), 2, 1)));
  cf_tv *z = input(CF_FLOAT, 1, (int64_t[]){4}, false);
  cf_fusion_add_output(f, cf_neg(f, z));
  refused(2, (KcInput[]){IN(CF_FLOAT, 4, 8), IN(CF_FLOAT, 4)},
          "outer_persistent: output T5 has neither the full shape nor the reduced one");
  fresh();
  x = input(CF_FLOAT, 2, (int64_t[]){4, 8}, false);
  z = input(CF_FLOAT, 2, (int64_t[]){6, 8}, false);
  cf_fusion_add_output(f, cf_sub(f, x, back(cf_sum(f, x, 1, (int[]){0}), 2, 1)));
  cf_fusion_add_output(f, cf_sub(f, z, back(cf_sum(f, z, 1, (int[]){0}), 2, 1)));
  refused(2, (KcInput[]){IN(CF_FLOAT, 4, 8), IN(CF_FLOAT, 6, 8)},
          "outer_persistent: T5 reduces columns of other extents than T2");
  fresh();
  minus_column_sum(2, (int64_t[]){1, 8}, false);
  /* T0's 1 is a broadcast: its sum is a squeeze (a trivial reduction) */
  refused(1, &IN(CF_FLOAT, 1, 8), "outer_persistent: T1 is computed by squeeze, not an elementwise op, a broadcast or a "
                                  "reduction");
}

/* ---- define and run ------------------------------------------------------------------ */

Test(outer_sched, define_and_run_chooses_it_for_batchnorm) {
  batchnorm(CF_FLOAT, 2, NULL, true, true);
  cf_fusion_cache *c = execute_vs_eval(3, (KcInput[]){IN(CF_FLOAT, 37, 20), IN(CF_FLOAT, 20), IN(CF_FLOAT, 20)}, 1e-4);
  cr_expect_eq(cf_fusion_cache_last_segments(c), 1);
  cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "outer_persistent");
  cf_fusion_cache_destroy(c);
  fresh();
  batchnorm(CF_FLOAT, 4, (int64_t[]){2, 3, 4, 16}, false, false);
  c = execute_vs_eval(3, (KcInput[]){IN(CF_FLOAT, 2, 3, 4, 16), IN(CF_FLOAT, 16), IN(CF_FLOAT, 16)}, 1e-4);
  cr_expect_eq(cf_fusion_cache_last_segments(c), 1);
  cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "outer_persistent");
  cf_fusion_cache_destroy(c);
}

/* Define and run makes the sizes constant: a column of one row gives threadIdx.y one
 * thread (left serial, no cross-thread reduction), and columns of 1 are columns too. */
Test(outer_sched, define_and_run_column_means_of_one_row) {
  int64_t shapes[][2] = {{1, 4}, {5, 1}, {1, 1}, {6, 9}};
  for (int i = 0; i < 4; i++) {
    fresh();
    cf_tv *x = input(CF_FLOAT, 2, NULL, true);
    cf_fusion_add_output(f, cf_mean(f, x, 1, outer_axes));
    cf_fusion_cache *c = execute_vs_eval(1, &IN(CF_FLOAT, shapes[i][0], shapes[i][1]), 1e-4);
    cf_fusion_cache_destroy(c);
  }
}

/* The schedulers before it keep their fusions: a column sum alone is a reduction, x minus
 * its row sum (softmax's shape) is inner persistent. */
Test(outer_sched, define_and_run_leaves_the_others_theirs) {
  cf_tv *x = input(CF_FLOAT, 2, NULL, true);
  cf_fusion_add_output(f, cf_sum(f, x, 1, (int[]){0}));
  cf_fusion_cache *c = execute_vs_eval(1, &IN(CF_FLOAT, 40, 24), 1e-4);
  cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "reduction");
  cf_fusion_cache_destroy(c);
  fresh();
  x = input(CF_FLOAT, 2, NULL, true);
  cf_fusion_add_output(f, cf_sub(f, x, cf_broadcast(f, cf_sum(f, x, 1, (int[]){1}), 2, (bool[]){false, true})));
  c = execute_vs_eval(1, &IN(CF_FLOAT, 40, 24), 1e-4);
  cr_expect_eq(cf_fusion_cache_last_segments(c), 1);
  cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "inner_persistent");
  cf_fusion_cache_destroy(c);
}

/* Columns longer than a block's registers: one kernel still (blocks of rows over the grid,
 * a grid sync for each statistic; the host runs every block at once). */
Test(outer_sched, define_and_run_one_kernel_for_long_columns) {
  minus_column_sum(2, NULL, true);
  cf_fusion_cache *c = execute_vs_eval(1, &IN(CF_FLOAT, 2000, 40), 1e-4);
  cr_expect_eq(cf_fusion_cache_last_segments(c), 1);
  cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "outer_persistent");
  cf_fusion_cache_destroy(c);
}

/* On the GPU: batch norm through define and run on the CUDA backend, the statistics of
 * 300 rows per column (threadIdx.y all-reduce across warps), against the evaluator.
 * Skipped, with the reason, without a CUDA device. (The scheduled kernels of the tests
 * above also run there through kc_check when a device is present.) */
Test(outer_sched, gpu_batchnorm_through_define_and_run) {
  const char *reason = NULL;
  if (!cf_cuda_available(&reason)) cr_skip_test("no CUDA device: %s", reason);
  batchnorm(CF_FLOAT, 2, NULL, true, true);
  KcInput in[3] = {IN(CF_FLOAT, 300, 70), IN(CF_FLOAT, 70), IN(CF_FLOAT, 70)};
  cf_fusion_cache *c = cf_fusion_cache_create(f, &(cf_executor_options){.backend = CF_BACKEND_CUDA});
  cr_assert_not_null(c);
  DLManagedTensor *h[3], *d[3], *got[3] = {0}, *want[3] = {0};
  DLTensor views[3];
  const DLTensor *hins[3], *dins[3];
  for (int i = 0; i < 3; i++) {
    h[i] = kc_make_input(&in[i], 7 + (uint64_t)i);
    hins[i] = &h[i]->dl_tensor;
    d[i] = kc_to_device(hins[i], CF_FLOAT, &views[i]);
    dins[i] = &views[i];
  }
  cr_assert_eq(cf_fusion_execute(c, 3, dins, 3, got), CF_OK, "%s", cf_fusion_cache_error(c));
  cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "outer_persistent");
  cr_assert_eq(cf_fusion_evaluate(f, 3, hins, want), CF_OK, "%s", cf_fusion_error(f));
  for (int o = 0; o < 3; o++) {
    DLTensor *g = &got[o]->dl_tensor;
    DLManagedTensor *back = cf_tensor_host(CF_FLOAT, g->ndim, g->shape);
    cf_tensor_copy(&back->dl_tensor, g);
    char msg[256] = "";
    cr_expect(cf_tensor_allclose(&back->dl_tensor, &want[o]->dl_tensor, 1e-4, 1e-4, msg, sizeof msg), "output %d: %s",
              o, msg);
    cf_tensor_free(back);
  }
  for (int i = 0; i < 3; i++) cf_tensor_free(h[i]), cf_tensor_free(d[i]), cf_tensor_free(got[i]), cf_tensor_free(want[i]);
  cf_fusion_cache_destroy(c);
}
