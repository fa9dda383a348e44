/* Matmul forms as users write them, drawn at random and run by define and run on Hopper
 * descriptions of several sizes (the host backend emulating wgmma, TMA and mbarriers),
 * each result equal to the evaluator's: cf_matmul or cf_linear, with or without a bias,
 * gelu, a residual added and a cast of the output to float; matmuls batched (A alone, B
 * alone or both: a batch of one operand alone is merged into its M or N, filled by TMA
 * where no tile crosses a batch) or of a transposed A; half or bfloat16; M, N and K from lists that reach each
 * branch of the matmul row's plan and of the rewrites before it: block tiles of N 64, 128
 * and 256, pair stores where N is a multiple of the tile, TMA fills and the producer
 * warpgroup, groups of M tiles where B outgrows a scaled-down L2, persistent windows where
 * the tiles outnumber the SMs, split-K where few tiles face a deep K. The branches combine:
 * the single-case tests (test_matmul_wgmma.c, test_split_k.c) fix one each. A split
 * linear's partials stored as pairs of columns, which analysis/ refuses, was found this
 * way (an internal error on every split linear whose N is a multiple of the tile on an
 * H200).
 * Seeds are fixed; CFUSER_FUZZ_FIRST and CFUSER_FUZZ_ITERS select others, as for the other
 * fuzzers (`./cfuser fuzz` runs random_forms_run_like_the_evaluator as one of its modes);
 * MATMUL_FORMS_PRINT=1 prints each case and its plan. The emulated work is capped (M and N
 * padded to the tile) so that the suite stays short. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor/fusion_cache.h"
#include "kernels/kernel_check.h"
#include "scheduler/registry.h"

enum { FORMS_MAX_PADDED_MACS = 1 << 25 }; /* ~1 s of emulated wgmma a case */

typedef struct Form {
  bool linear, bias, gelu;
  bool residual;     /* + r [.., M, N], an input of the operands' dtype */
  bool to_float;     /* the output cast to float */
  bool transposed;   /* matmul: A given as [K, M], permuted */
  int64_t batch;     /* matmul: A [batch, M, K] (1: 2-D); B too when batch_b; B alone when b_only */
  bool batch_b, b_only;
  cf_dtype dt;
  int64_t m, n, k;
  SchedDevice dev;
} Form;

static uint64_t next(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 33;
}

static int64_t pick(uint64_t *s, const int64_t *v, int n) { return v[next(s) % (uint64_t)n]; }

/* The form of seed `seed`: redrawn until its padded work is within the cap. */
static Form draw(uint64_t seed) {
  static const int64_t ms[] = {1, 5, 17, 128, 130, 300, 512}, ns[] = {1, 24, 64, 128, 200, 256, 512},
                       ks[] = {16, 64, 72, 1000, 2048, 4096}, sms[] = {2, 8, 16, 132};
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  Form fm;
  do {
    uint64_t r = next(&s);
    fm = (Form){.linear = r & 1, .gelu = (r >> 1) & 1, .dt = (r >> 2) & 1 ? CF_HALF : CF_BFLOAT16};
    fm.bias = fm.linear && ((r >> 3) & 1);
    uint64_t e = next(&s);
    fm.residual = e % 4 == 0, fm.to_float = (e >> 2) % 4 == 0;
    fm.transposed = !fm.linear && (e >> 4) % 4 == 0;
    fm.batch = fm.linear || fm.transposed || (e >> 6) % 3 ? 1 : 2 + (int64_t)((e >> 8) % 2);
    fm.batch_b = fm.batch > 1 && (e >> 9) % 2;
    fm.b_only = fm.batch > 1 && !fm.batch_b && (e >> 10) % 3 == 0; /* bits no earlier draw read: old seeds keep their forms */
    fm.m = pick(&s, ms, 7), fm.n = pick(&s, ns, 7);
    if (fm.batch > 1 && !fm.batch_b && (e >> 12) % 2) { /* the merged M (N) in whole tiles: TMA boxes per batch */
      if (fm.b_only) fm.n = 256 * (1 + (int64_t)((e >> 13) % 2));
      else fm.m = 128 * (1 + (int64_t)((e >> 13) % 2));
    }
    int64_t padded = ((fm.m + 127) / 128) * 128 * ((fm.n + 63) / 64) * 64, fit = 0;
    while (fit < 6 && padded * ks[fit] <= FORMS_MAX_PADDED_MACS) fit++; /* K within the cap */
    fm.k = fit ? pick(&s, ks, (int)fit) : ks[5];
    fm.dev = sched_device_h100;
    fm.dev.sm_count = (int)pick(&s, sms, 4);
    int64_t wide_tiles = ((fm.m + 127) / 128) * ((fm.n + 255) / 256);
    if ((r >> 5) % 3 == 0 && wide_tiles >= 4) /* tiles outnumber the SMs: persistent windows */
      fm.dev.sm_count = (int)(wide_tiles / 2);
    if ((r >> 4) & 1) fm.dev.l2_bytes = 64 * 1024; /* B larger than the L2: groups of M tiles */
  } while (fm.batch * ((fm.m + 127) / 128) * 128 * ((fm.n + 63) / 64) * 64 * fm.k > FORMS_MAX_PADDED_MACS);
  return fm;
}

/* Runs the form through define and run on the host backend planned for its device; its
 * output equal to the evaluator's. Returns the plan, a line per segment (caller frees). */
static char *run_form(const Form *fm, uint64_t seed) {
  cf_fusion *f = cf_fusion_create();
  KcInput in[4];
  int nin = 0;
  bool batched = fm->batch > 1;
  /* A: [batch?, M, K], or [K, M] transposed; B: [N, K] (linear), [batch?, K, N] */
  if (fm->transposed) in[nin++] = (KcInput){fm->dt, 2, {fm->k, fm->m}, NULL};
  else if (batched && !fm->b_only) in[nin++] = (KcInput){fm->dt, 3, {fm->batch, fm->m, fm->k}, NULL};
  else in[nin++] = (KcInput){fm->dt, 2, {fm->m, fm->k}, NULL};
  if (fm->linear) in[nin++] = (KcInput){fm->dt, 2, {fm->n, fm->k}, NULL};
  else if (fm->batch_b || fm->b_only) in[nin++] = (KcInput){fm->dt, 3, {fm->batch, fm->k, fm->n}, NULL};
  else in[nin++] = (KcInput){fm->dt, 2, {fm->k, fm->n}, NULL};
  if (fm->bias) in[nin++] = (KcInput){fm->dt, 1, {fm->n}, NULL};
  if (fm->residual && batched) in[nin++] = (KcInput){fm->dt, 3, {fm->batch, fm->m, fm->n}, NULL};
  else if (fm->residual) in[nin++] = (KcInput){fm->dt, 2, {fm->m, fm->n}, NULL};
  cf_tv *t[4];
  for (int i = 0; i < nin; i++) t[i] = cf_tensor_symbolic(f, fm->dt, in[i].rank), cf_fusion_add_input(f, t[i]);
  cf_tv *a = fm->transposed ? cf_transpose(f, t[0], 0, 1) : t[0];
  cf_tv *y = fm->linear ? cf_linear(f, a, t[1], fm->bias ? t[2] : NULL) : cf_matmul(f, a, t[1]);
  if (fm->gelu) y = cf_gelu(f, y);
  if (fm->residual) y = cf_add(f, y, t[nin - 1]);
  cf_fusion_add_output(f, fm->to_float ? cf_cast(f, y, CF_FLOAT) : y);
  char where[48];
  snprintf(where, sizeof where, "seed %llu", (unsigned long long)seed);
  cf_fusion_cache *fc = kc_define_and_run(f, &fm->dev, nin, in, seed * 4, 3e-2, where);
  char *plan = kc_plan_text(fc, "  ");
  cf_fusion_cache_destroy(fc);
  cf_fusion_destroy(f);
  return plan;
}

/* How many of the cases' plans took each branch (the test says which it reached). */
typedef struct Reached {
  int pairs, tma, persist, group, split, tiles[3];
} Reached;

static void count_branches(const char *plan, Reached *r) {
  r->pairs += strstr(plan, "store=pairs") != NULL;
  r->tma += strstr(plan, "fill=tma") != NULL;
  r->persist += strstr(plan, "persistent=") != NULL;
  r->group += strstr(plan, "group_m=") != NULL;
  r->split += strstr(plan, "view: no kernel") != NULL;
  r->tiles[0] += strstr(plan, "tile=128x64x64") != NULL;
  r->tiles[1] += strstr(plan, "tile=128x128x64") != NULL;
  r->tiles[2] += strstr(plan, "tile=128x256x64") != NULL;
}

Test(matmul_forms, random_forms_run_like_the_evaluator, .timeout = 600) {
  const char *first = getenv("CFUSER_FUZZ_FIRST"), *iters = getenv("CFUSER_FUZZ_ITERS");
  uint64_t start = first ? strtoull(first, NULL, 10) : 0, n = iters ? strtoull(iters, NULL, 10) : 10;
  Reached r = {0};
  for (uint64_t seed = start; seed < start + n; seed++) {
    Form fm = draw(seed);
    char *plan = run_form(&fm, seed);
    count_branches(plan, &r);
    if (getenv("MATMUL_FORMS_PRINT"))
      printf("seed %llu: %s %s batch=%lld%s m=%lld n=%lld k=%lld bias=%d gelu=%d residual=%d float=%d transposed=%d "
             "sms=%d l2=%lld\n%s", (unsigned long long)seed, fm.linear ? "linear" : "matmul", cf_dtype_name(fm.dt),
             (long long)fm.batch, fm.batch_b ? "(both)" : fm.b_only ? "(B)" : "", (long long)fm.m, (long long)fm.n, (long long)fm.k, fm.bias,
             fm.gelu, fm.residual, fm.to_float, fm.transposed, fm.dev.sm_count, (long long)fm.dev.l2_bytes, plan);
    free(plan);
  }
  cr_log_info("%llu of %llu random matmul forms compiled and ran: pairs %d, tma %d, persistent %d, groups %d, "
              "split %d, tiles N 64/128/256 %d/%d/%d", (unsigned long long)n, (unsigned long long)n, r.pairs, r.tma,
              r.persist, r.group, r.split, r.tiles[0], r.tiles[1], r.tiles[2]);
}

/* Every seed that once found a bug, run on every build whatever range the environment
 * selects: 5 (also in the default range), a split linear (17 x 4096 through a [64, 4096]
 * half weight with a bias on 132 SMs: 4 slices) whose partials were planned as pair
 * stores; 53 and 194 found the same. */
Test(matmul_forms, seeds_that_found_bugs, .timeout = 600) {
  static const uint64_t seeds[] = {5, 53, 194};
  for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
    Form fm = draw(seeds[i]);
    free(run_form(&fm, seeds[i]));
  }
}
