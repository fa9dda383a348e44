/* Reductions over non-adjacent axes with a kept axis between them ([r, i, r]): a
 * channels-first training batch norm x[N, C, HW] (statistics over N and HW per channel,
 * var_mean keepdim, then (x - mean) * rsqrt(var + eps) * w + b) through the inner
 * persistent scheduler in one kernel: its loop axes reordered kept-first [C, N*HW], the
 * row split [p, t, v] in one block per channel or, with fewer channels than SMs,
 * [p, gy, t, v] over gy blocks per channel (grid all-reduces). Each branch is reached on a
 * device scaled down, run against the evaluator (host backend, NVRTC), with its printed
 * parameters; define and run takes the whole fusion as one segment, and the statistics
 * alone as one reduction kernel. Parameters are float32 without casts (the casts of 16-bit
 * parameters are the computed broadcasts' business). NORM_PRINT=1 prints every kernel. */
#include <criterion/criterion.h>
#include <string.h>

#define SC_HEURISTIC sched_inner_persistent_heuristic
#define SC_PRINT "NORM_PRINT"
#include "scheduler/sched_check.h"

TestSuite(norm_cf, .init = setup, .fini = teardown);

/* [C] -> [1, C, 1] */
static cf_tv *chan(cf_tv *t) { return cf_broadcast(f, t, 3, (bool[]){true, false, true}); }

/* Training batch norm of x[N, C, HW] in dtype dt (computed in float), float32 w and b [C]. */
static void batchnorm_cf(cf_dtype dt, const int64_t *s, bool symbolic) {
  cf_tv *x = widen(input(dt, 3, s, symbolic));
  cf_tv *w = input(CF_FLOAT, 1, &s[1], symbolic), *b = input(CF_FLOAT, 1, &s[1], symbolic);
  cf_tv *var, *mean;
  cf_var_mean(f, x, 2, (int[]){0, 2}, 0, true, &var, &mean);
  cf_tv *rstd = cf_rsqrt(f, cf_add_scalar(f, var, EPS));
  output(cf_add(f, cf_mul(f, cf_mul(f, cf_sub(f, x, mean), rstd), chan(w)), chan(b)), dt);
}

/* The batch norm's inputs for x of sizes s. */
#define BN_IN(dt, s) ((KcInput[]){IN(dt, (s)[0], (s)[1], (s)[2]), IN(CF_FLOAT, (s)[1]), IN(CF_FLOAT, (s)[1])})

typedef struct Case {
  cf_dtype dt;
  int64_t s[3];
  const char *params;
} Case;

static void run_cases(const Case *cases, size_t n) {
  for (size_t i = 0; i < n; i++) {
    fresh();
    batchnorm_cf(cases[i].dt, cases[i].s, false);
    schedule_and_check(3, BN_IN(cases[i].dt, cases[i].s), cases[i].params, tol(cases[i].dt));
  }
}

/* sc_tiny (sched_check.h), 2 SMs: three channels or more leave no SM idle, each
 * channel's block keeps its row in registers, shared memory or nowhere (multipass). */
#define tiny sc_tiny

/* 4 SMs of 16384 registers (207 floats per thread of 64, two blocks per SM): three
 * channels split each over two blocks. */
static const SchedDevice few_sms = {.sm_count = 4,
                                    .max_threads_per_block = 64,
                                    .max_threads_per_sm = 128,
                                    .regs_per_sm = 16384,
                                    .max_regs_per_thread = 255,
                                    .smem_per_block = 8192,
                                    .smem_per_sm = 8192,
                                    .l2_bytes = 1 << 20,
                                    .max_cluster = 1};

Test(norm_cf, block_per_channel_each_branch) {
  sc_dev = &tiny;
  static const Case cases[] = {
      {CF_FLOAT, {2, 3, 200}, "registers threads=32x2 persistent=4 vector=4 rows=blockIdx.x"},
      {CF_FLOAT, {3, 5, 7}, "registers threads=32x2 persistent=1 vector=1 rows=blockIdx.x"},
      {CF_FLOAT, {3, 3, 500}, "shared threads=64 persistent=6 vector=4 rows=blockIdx.x"},
      {CF_FLOAT, {4, 3, 1001}, "multipass threads=32 chunks=126 unroll=4 vector=1 rows=blockIdx.x"},
      {CF_BFLOAT16, {2, 3, 256}, "registers threads=32x2 persistent=2 vector=8 rows=blockIdx.x buffers=inputs"},
      {CF_BFLOAT16, {3, 4, 700}, "shared threads=64 persistent=9 vector=4 rows=blockIdx.x"},
      {CF_HALF, {5, 3, 1000}, "multipass threads=32 chunks=20 vector=8 rows=blockIdx.x"},
  };
  run_cases(cases, sizeof cases / sizeof cases[0]);
}

Test(norm_cf, grid_per_channel_each_branch) {
  sc_dev = &few_sms;
  static const Case cases[] = {
      {CF_FLOAT, {8, 3, 512}, "registers threads=64 persistent=8 vector=4 rows=blockIdx.x grid=blockIdx.y{2}"},
      {CF_FLOAT, {13, 3, 331}, "registers threads=64 persistent=34 vector=1 rows=blockIdx.x grid=blockIdx.y{2}"},
      {CF_BFLOAT16, {8, 3, 1024}, "registers threads=64 persistent=8 vector=8 rows=blockIdx.x grid=blockIdx.y{2} buffers=inputs"},
      {CF_FLOAT, {16, 3, 2048}, "multipass threads=64 chunks=64 vector=4 rows=blockIdx.x grid=blockIdx.y{2}"},
      {CF_HALF, {9, 2, 4096}, "registers threads=64 persistent=36 vector=8 rows=blockIdx.x grid=blockIdx.y{2} buffers=inputs"},
  };
  run_cases(cases, sizeof cases / sizeof cases[0]);
}

/* Symbolic sizes through define and run: one kernel, the inner persistent scheduler's (or
 * its Welford translation's), for many channels, few channels (grid) and HW = 1 (rows
 * read with a stride of C). */
Test(norm_cf, define_and_run_one_kernel) {
  static const int64_t shapes[][3] = {{3, 5, 7}, {4, 3, 64}, {64, 3, 1}, {2, 1, 300}, {6, 2, 1000}};
  for (int d = 0; d < 2; d++)
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
      sc_dev = d ? &few_sms : NULL;
      cf_dtype dt = i % 2 ? CF_BFLOAT16 : CF_FLOAT;
      fresh();
      batchnorm_cf(dt, shapes[i], true);
      cf_fusion_cache *c = execute_vs_eval(3, BN_IN(dt, shapes[i]), tol(dt));
      cr_expect_eq(cf_fusion_cache_last_segments(c), 1, "%lldx%lldx%lld", (long long)shapes[i][0],
                   (long long)shapes[i][1], (long long)shapes[i][2]);
      const char *s = cf_fusion_cache_last_scheduler(c, 0);
      cr_expect(!strcmp(s, "inner_persistent") || !strcmp(s, "welford_translate"), "%s", s);
      cf_fusion_cache_destroy(c);
    }
}

/* The statistics alone (var and mean over N and HW): one kernel, the reduction
 * scheduler's (the kept axis moved first) or, where the rows stay resident, the Welford
 * translation's two sums (as for rows). */
Test(norm_cf, statistics_alone_one_reduction_kernel) {
  static const int64_t shapes[][3] = {{3, 5, 7}, {4, 3, 64}, {64, 3, 1}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    fresh();
    cf_tv *x = input(CF_FLOAT, 3, NULL, true), *var, *mean;
    cf_var_mean(f, x, 2, (int[]){0, 2}, 0, false, &var, &mean);
    cf_fusion_add_output(f, var);
    cf_fusion_add_output(f, mean);
    cf_fusion_cache *c = execute_vs_eval(1, &IN(CF_FLOAT, shapes[i][0], shapes[i][1], shapes[i][2]), 1e-4);
    cr_expect_eq(cf_fusion_cache_last_segments(c), 1);
    const char *s = cf_fusion_cache_last_scheduler(c, 0);
    cr_expect(!strcmp(s, "reduction") || !strcmp(s, "welford_translate"), "%s", s);
    cf_fusion_cache_destroy(c);
  }
}

/* The sweep's shapes on an H100 (132 SMs), planned as define and run plans them (symbolic
 * sizes: no vectors, the registers' rows split outer by the persistent count): channels
 * fewer than the SMs split over blocks (at most the host backend's 65536 threads in all, its
 * max_coop_threads), in registers; 512 channels of 50176 elements a block each, multipass. */
Test(norm_cf, sweep_shapes_on_an_h100) {
  static const Case cases[] = {
      {CF_FLOAT, {16, 64, 3136}, "registers threads=128 (ceilDiv(row, persistent) at run time) persistent=49 vector=1 rows=blockIdx.x grid=blockIdx.y{8}"},
      {CF_FLOAT, {256, 3, 3136}, "registers threads=128 (ceilDiv(row, persistent) at run time) persistent=37 vector=1 rows=blockIdx.x grid=blockIdx.y{170}"},
      {CF_BFLOAT16, {16, 3, 50176}, "registers threads=128 (ceilDiv(row, persistent) at run time) persistent=37 vector=1 rows=blockIdx.x grid=blockIdx.y{170} buffers=inputs"},
      {CF_FLOAT, {1048576, 3, 1}, "registers threads=128 (ceilDiv(row, persistent) at run time) persistent=49 vector=1 rows=blockIdx.x grid=blockIdx.y{170}"},
      {CF_FLOAT, {16, 512, 3136}, "multipass threads=512 chunks=98 unroll=4 vector=1 rows=blockIdx.x"},
      {CF_FLOAT, {32, 100, 1000}, "registers threads=128 (ceilDiv(row, persistent) at run time) persistent=50 vector=1 rows=blockIdx.x grid=blockIdx.y{5}"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    fresh();
    batchnorm_cf(cases[i].dt, cases[i].s, true);
    planned(3, BN_IN(cases[i].dt, cases[i].s), cases[i].params);
  }
}

/* As the sweep writes it (bench/sweep_kinds.py batchnorm_fd): x, w and b cast to float,
 * var_mean keepdim, the result cast back; define and run: one kernel in float32 and in
 * bfloat16 (the parameters' casts are elementwise ops of the kept shape). */
static cf_fusion_cache *as_the_sweep(cf_dtype dt, const int64_t *s) {
  cf_tv *x = cf_cast(f, input(dt, 3, NULL, true), CF_FLOAT);
  cf_tv *w = cf_cast(f, input(dt, 1, NULL, true), CF_FLOAT), *b = cf_cast(f, input(dt, 1, NULL, true), CF_FLOAT);
  cf_tv *var, *mean;
  cf_var_mean(f, x, 2, (int[]){0, 2}, 0, true, &var, &mean);
  cf_tv *rstd = cf_rsqrt(f, cf_add_scalar(f, var, EPS));
  cf_fusion_add_output(f, cf_cast(f, cf_add(f, cf_mul(f, cf_mul(f, cf_sub(f, x, mean), rstd), chan(w)), chan(b)), dt));
  return execute_vs_eval(3, (KcInput[]){IN(dt, s[0], s[1], s[2]), IN(dt, s[1]), IN(dt, s[1])}, tol(dt));
}

Test(norm_cf, define_and_run_as_the_sweep_writes_it) {
  static const int64_t s[3] = {4, 3, 64};
  cf_fusion_cache *c = as_the_sweep(CF_FLOAT, s);
  cr_expect_eq(cf_fusion_cache_last_segments(c), 1);
  cf_fusion_cache_destroy(c);
  fresh();
  c = as_the_sweep(CF_BFLOAT16, s);
  cr_expect_eq(cf_fusion_cache_last_segments(c), 1);
  cf_fusion_cache_destroy(c);
}
