// labels: slow split optimized
/* Random schedules, run on the host backend against the reference evaluator (the fuzz
 * target of DESIGN.md section 10, bounded by CFUSER_FUZZ_ITERS, default 100; ./cfuser fuzz runs more). Each case:
 * (CFUSER_FUZZ_FIRST sets the first seed, to replay one case)
 * a random chain of ops over a random 2-D or 3-D input, random splits, merges and
 * reorders on the output, propagated to every tensor, random thread/block
 * parallelization, random memory types for intermediates (some Local ones partly in shared
 * memory: cf_spill_to_shared), random inlining. A schedule the
 * compiler refuses with a message is fine; an internal error or a wrong result is not.
 * With a CUDA device, every accepted schedule also runs there. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_check.h"

typedef struct Rng {
  uint64_t s;
} Rng;
static uint32_t rnd(Rng *r, uint32_t n) {
  r->s = r->s * 6364136223846793005ULL + 1442695040888963407ULL;
  return (uint32_t)(r->s >> 33) % n;
}

static cf_tv *random_op(cf_fusion *f, Rng *r, cf_tv *x, cf_tv *in, cf_tv *row) {
  switch (rnd(r, 6)) {
  case 0: return cf_set(f, x);
  case 1: return cf_neg(f, x);
  case 2: return cf_add(f, x, in);
  case 3: return cf_mul_scalar(f, x, 3.0);
  case 4: return row ? cf_sub(f, x, row) : cf_relu(f, x);
  default: return cf_relu(f, x);
  }
}

/* The last input axis as a separate 1-D input, broadcast over the others. */
static cf_tv *broadcast_row(cf_fusion *f, Rng *r, int rank, const int64_t *sizes, bool symbolic) {
  if (rnd(r, 2)) return NULL;
  cf_tv *v = symbolic ? cf_tensor_symbolic(f, CF_FLOAT, 1) : cf_tensor_concrete(f, CF_FLOAT, 1, &sizes[rank - 1]);
  cf_fusion_add_input(f, v);
  bool flags[3] = {true, true, true};
  flags[rank - 1] = false;
  return cf_broadcast(f, v, rank, flags);
}

static void random_transforms(cf_fusion *f, Rng *r, cf_tv *out) {
  int steps = 1 + (int)rnd(r, 4);
  for (int s = 0; s < steps; s++) {
    int n = cf_tv_naxes(out);
    switch (rnd(r, 4)) {
    case 0:
    case 1: cf_split(f, out, (int)rnd(r, (uint32_t)n), 1 + (int64_t)rnd(r, 8)); break;
    case 2:
      if (n > 1) cf_merge(f, out, (int)rnd(r, (uint32_t)n - 1));
      break;
    default:
      if (n > 1) cf_reorder(f, out, 1, (int[]){(int)rnd(r, (uint32_t)n), (int)rnd(r, (uint32_t)n)});
      break;
    }
  }
}

static void random_parallelization(cf_fusion *f, Rng *r, cf_tv *out) {
  int n = cf_tv_naxes(out);
  static const cf_parallel_type types[] = {CF_PT_BIDX, CF_PT_TIDX, CF_PT_TIDY, CF_PT_BIDY, CF_PT_UNROLL};
  bool used[5] = {false};
  for (int i = 0; i < n; i++) {
    int k = (int)rnd(r, 8);
    if (k >= 5 || used[k]) continue;
    int64_t e = cf_id_extent(cf_tv_axis(out, i));
    if (types[k] == CF_PT_TIDX || types[k] == CF_PT_TIDY) {
      if (e > 32 || e < 0) continue; /* keep blocks small: 32 x 32 at most; symbolic extents could be anything */
    }
    used[k] = true;
    cf_parallelize(f, out, i, types[k]);
  }
}

/* Builds and schedules one random case; fills the input descriptions. */
static int build(cf_fusion *f, Rng *r, KcInput *in) {
  int rank = 2 + (int)rnd(r, 2);
  int64_t sizes[3] = {0, 0, 0};
  for (int i = 0; i < rank; i++) sizes[i] = 1 + (int64_t)rnd(r, 12);
  bool symbolic = rnd(r, 4) == 0;
  cf_tv *x = symbolic ? cf_tensor_symbolic(f, CF_FLOAT, rank) : cf_tensor_concrete(f, CF_FLOAT, rank, sizes);
  cf_fusion_add_input(f, x);
  cf_tv *row = sizes[rank - 1] > 1 || symbolic ? broadcast_row(f, r, rank, sizes, symbolic) : NULL;
  cf_tv *chain[5];
  int nops = 2 + (int)rnd(r, 3);
  chain[0] = random_op(f, r, x, x, row);
  for (int i = 1; i < nops; i++) chain[i] = random_op(f, r, chain[i - 1], x, row);
  bool reduce = rnd(r, 4) == 0;
  if (reduce) {
    chain[nops] = cf_sum(f, chain[nops - 1], 1, (int[]){-1});
    nops++;
  }
  cf_tv *out = chain[nops - 1];
  cf_fusion_add_output(f, out);
  random_transforms(f, r, out);
  cf_propagate_transforms(f, out);
  random_parallelization(f, r, out);
  cf_parallelize_all_like(f, out, 0, NULL);
  bool shared[5] = {false};
  for (int i = 0; i < nops - 1; i++) {
    if (rnd(r, 3) == 0) cf_set_memory_type(f, chain[i], CF_MEM_SHARED), shared[i] = true;
    if (rnd(r, 4) == 0) random_parallelization(f, r, chain[i]); /* may differ from out: syncs */
  }
  if (rnd(r, 4)) cf_inline_most(f);
  /* a Local intermediate partly in shared memory: from a generator of its own, so earlier
   * seeds keep their schedules (a size that is no whole chunk is refused with a message) */
  Rng spill = {r->s ^ 0x5DEECE66DULL};
  for (int i = 0; i < nops - 1; i++)
    if (!shared[i] && rnd(&spill, 4) == 0) cf_spill_to_shared(f, chain[i], 4 * (int64_t)rnd(&spill, 4));
  in[0] = (KcInput){CF_FLOAT, rank, {sizes[0], sizes[1], sizes[2]}, NULL};
  in[1] = (KcInput){CF_FLOAT, 1, {sizes[rank - 1]}, NULL};
  return row ? 2 : 1;
}

/* Runs one case; returns false when the compiler refused the schedule with a message. */
static bool run_one(uint64_t seed) {
  Rng r = {seed * 0x9E3779B97F4A7C15ULL + 1};
  cf_fusion *f = cf_fusion_create();
  KcInput in[2];
  int nin = build(f, &r, in);
  bool ran = false;
  if (cf_fusion_status(f) == CF_OK) {
    cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
    cf_status s = cf_executor_compile(e, f);
    if (s == CF_ERR_INTERNAL) {
      char *math = tu_capture_fusion(cf_fusion_print_transforms, f);
      cr_assert_fail("seed %llu: internal error: %s\n%s", (unsigned long long)seed, cf_executor_error(e), math);
    }
    if (s == CF_OK) {
      DLManagedTensor *x[2] = {kc_make_input(&in[0], seed), kc_make_input(&in[1], seed + 1)}, *got = NULL, *want = NULL;
      const DLTensor *ins[2] = {&x[0]->dl_tensor, &x[1]->dl_tensor};
      cr_assert_eq(cf_fusion_evaluate(f, nin, ins, &want), CF_OK, "%s", cf_fusion_error(f));
      s = cf_executor_run(e, nin, ins, 1, &got);
      cr_assert_eq(s, CF_OK, "seed %llu: run failed: %s", (unsigned long long)seed, cf_executor_error(e));
      char msg[256] = "";
      if (!cf_tensor_allclose(&got->dl_tensor, &want->dl_tensor, 1e-5, 1e-5, msg, sizeof msg)) {
        char *math = tu_capture_fusion(cf_fusion_print_transforms, f), *kernel = tu_capture_fusion(cf_fusion_print_kernel, f);
        cr_assert_fail("seed %llu: wrong result %s\n%s\n%s", (unsigned long long)seed, msg, math, kernel);
      }
      ran = true;
      /* With a GPU, the same schedule through NVRTC and CUDA (kc_run_backend compares). */
      if (cf_cuda_available(NULL)) {
        snprintf(kc_label, sizeof kc_label, "seed %llu: ", (unsigned long long)seed);
        kc_run_backend(f, CF_BACKEND_CUDA, nin, x, &want, 1e-5);
      }
      cf_tensor_free(x[0]), cf_tensor_free(x[1]), cf_tensor_free(got), cf_tensor_free(want);
    }
    cf_executor_destroy(e);
  }
  cf_fusion_destroy(f);
  return ran;
}

Test(random_schedules, run_like_the_evaluator, .timeout = 600) {
  if (getenv("CFUSER_FUZZ_SHOW")) {
    Rng r = {strtoull(getenv("CFUSER_FUZZ_SHOW"), NULL, 10) * 0x9E3779B97F4A7C15ULL + 1};
    cf_fusion *g = cf_fusion_create();
    KcInput in[2];
    build(g, &r, in);
    cf_fusion_print_transforms(g, stdout);
    cf_fusion_print_kernel(g, stdout);
    cf_fusion_destroy(g);
    return;
  }
  const char *env = getenv("CFUSER_FUZZ_ITERS"), *first = getenv("CFUSER_FUZZ_FIRST");
  int iters = env ? atoi(env) : 100, ran = 0, start = first ? atoi(first) : 0;
  for (int i = start; i < start + iters; i++) ran += run_one((uint64_t)i);
  cr_log_info("%d of %d random schedules compiled and ran", ran, iters);
  cr_expect(ran >= iters / 3, "only %d of %d random schedules were accepted", ran, iters);
}

/* Every seed that once found a lowering bug (see the commit history), run on every build
 * whatever range CFUSER_FUZZ_FIRST/ITERS select. */
Test(random_schedules, seeds_that_found_bugs, .timeout = 600) {
  static const uint64_t seeds[] = {0,    7,    14,   18,    54,    96,    191,   207,   537,   683,   884,    916,   1042,
                                   1089, 1162, 1831, 1965, 2264,  2500,  2770,  3224,  5663,  20733, 22311, 22467, 23527, 1001317,
                                   46500349, 46600500};
  for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) run_one(seeds[i]);
}

