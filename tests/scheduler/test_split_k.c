/* Split-K (scheduler/split_k.c): define and run splits the K of a product of few output
 * tiles and a deep K into slices (views of the operands, a batched matmul of float
 * partials, a reduction of the slices with the epilogue), on a device scaled down so
 * small shapes reach the rule; each plan printed exact and every result equal to the
 * evaluator on the host backend (the GPU when there is one runs the same kernels in the
 * matmul benchmarks). Products the rule leaves alone: enough tiles, a shallow K, a K with
 * no slice of 16-byte rows, an operand read twice; CFUSER_SPLIT_K forces and forbids. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "executor/fusion_cache.h"
#include "kernels/kernel_check.h"
#include "scheduler/registry.h"

static cf_fusion *f;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) {
  cf_fusion_destroy(f);
  unsetenv("CFUSER_SPLIT_K");
}
TestSuite(split_k, .init = setup, .fini = teardown);

/* Eight SMs: a product of one block of the narrowest tile (M <= 128, N <= 64) leaves
 * seven idle, so K of 2048 and more is split (slices of at least 1024, up to two blocks
 * an SM). */
static SchedDevice eight_sms(void) {
  SchedDevice d = *sched_device_default();
  d.sm_count = 8;
  return d;
}

/* Runs f through define and run on the host backend planned for dev; every output equal
 * to the evaluator's; returns the plan, a line per segment "row: params" (caller frees). */
static char *plan_of(const SchedDevice *dev, int n, const KcInput *in, double tol) {
  if (getenv("SPLIT_K_PRINT")) cf_fusion_print_math(f, stdout);
  cf_fusion_cache *c = kc_define_and_run(f, dev, n, in, 40, tol, "split-K");
  char *plan = kc_plan_text(c, "");
  cf_fusion_cache_destroy(c);
  return plan;
}

/* gelu(x @ w^T + bias), x [m, k], w [n, k], bias [n], of dtype dt. */
static void linear_gelu(cf_dtype dt, int64_t m, int64_t n, int64_t k, KcInput in[3]) {
  in[0] = (KcInput){dt, 2, {m, k}, NULL};
  in[1] = (KcInput){dt, 2, {n, k}, NULL};
  in[2] = (KcInput){dt, 1, {n}, NULL};
  cf_tv *x = cf_tensor_symbolic(f, dt, 2), *w = cf_tensor_symbolic(f, dt, 2), *b = cf_tensor_symbolic(f, dt, 1);
  cf_fusion_add_input(f, x), cf_fusion_add_input(f, w), cf_fusion_add_input(f, b);
  cf_fusion_add_output(f, cf_gelu(f, cf_linear(f, x, w, b)));
}

/* a @ b, a [m, k], b [k, n], of dtype dt. */
static void matmul(cf_dtype dt, int64_t m, int64_t n, int64_t k, KcInput in[2]) {
  in[0] = (KcInput){dt, 2, {m, k}, NULL};
  in[1] = (KcInput){dt, 2, {k, n}, NULL};
  cf_tv *a = cf_tensor_symbolic(f, dt, 2), *b = cf_tensor_symbolic(f, dt, 2);
  cf_fusion_add_input(f, a), cf_fusion_add_input(f, b);
  cf_fusion_add_output(f, cf_matmul(f, a, b));
}

static int count(const char *s, const char *what) {
  int n = 0;
  for (const char *p = strstr(s, what); p; p = strstr(p + 1, what)) n++;
  return n;
}

/* The plan of the tensor-core matmul (mma.sync on the host's portable description). */
#define MMA_PLAN "matmul: tile=128x128x32 warps=2x2 mma=m16n8k16 smem=operands stages=3 fill=cp.async16,cp.async16\n"

/* A linear layer of 5 tokens through a [24, 4096] bfloat16 weight: K = 4096 in 4 slices of
 * 1024 (4 blocks of 8 SMs): x and w viewed [5, 4, 1024] and [24, 4, 1024] (K-major both),
 * the matmul of the slices as a batch (float partials [5, 24, 4]), then the slices summed
 * with the bias (cast and broadcast along the tokens in that kernel) and gelu by the inner
 * persistent scheduler (rows of 4). */
Test(split_k, a_few_tokens_through_a_deep_linear_are_split) {
  KcInput in[3];
  linear_gelu(CF_BFLOAT16, 5, 24, 4096, in);
  SchedDevice dev = eight_sms();
  char *plan = plan_of(&dev, 3, in, 2e-2);
  cr_expect_str_eq(plan, "view: no kernel\n"
                         "view: no kernel\n" MMA_PLAN
                         "inner_persistent: registers threads=2x64 persistent=1 vector=4 rows=blockIdx.x\n");
  free(plan);
}

/* The matmul form, [7, 2048] @ [2048, 33] in half: B's K is its outer axis, viewed [2, 1024,
 * 33] (its rows of 33 halves filled element by element, as unsplit); 2 slices (the largest
 * divisor keeping slices of 1024), summed by the reduction scheduler (float partials [7,
 * 2, 33], the middle axis reduced), the cast to half its epilogue. */
Test(split_k, a_few_rows_times_a_deep_matrix_are_split) {
  KcInput in[2];
  matmul(CF_HALF, 7, 33, 2048, in);
  SchedDevice dev = eight_sms();
  char *plan = plan_of(&dev, 2, in, 2e-2);
  cr_expect_str_eq(plan, "view: no kernel\n"
                         "view: no kernel\n"
                         "matmul: tile=128x128x32 warps=2x2 mma=m16n8k16 smem=operands stages=3 "
                         "fill=cp.async16,scalar(N=33)\n"
                         "reduction: outer vector=1 unroll=1 block=32x2 grid=8x1 reduced-axes-first\n");
  free(plan);
}

/* Left as one kernel: enough tiles for the SMs (N = 257: 5 tiles of 64 on 8 SMs), K too shallow
 * for two slices of 1024, K with no slice of 16-byte rows (2 x 1028 ... : 4100 = 4 x 1025,
 * 1025 not a multiple of 8, and 2 x 2050 neither), and forbidden by CFUSER_SPLIT_K=0. */
Test(split_k, products_the_rule_leaves_alone) {
  KcInput in[3];
  SchedDevice dev = eight_sms();
  const struct {
    const SchedDevice *dev;
    int64_t m, n, k;
    const char *env;
  } cases[] = {{&dev, 5, 257, 4096, NULL}, {&dev, 5, 24, 2040, NULL}, {&dev, 5, 24, 4100, NULL},
               {&dev, 5, 24, 4096, "0"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cf_fusion_destroy(f);
    f = cf_fusion_create();
    if (cases[i].env) setenv("CFUSER_SPLIT_K", cases[i].env, 1);
    linear_gelu(CF_BFLOAT16, cases[i].m, cases[i].n, cases[i].k, in);
    char *plan = plan_of(cases[i].dev ? cases[i].dev : sched_device_default(), 3, in, 2e-2);
    cr_expect_eq(count(plan, "\n"), 1, "case %zu: %s", i, plan);
    cr_expect_eq(count(plan, "matmul: "), 1, "case %zu: %s", i, plan);
    free(plan);
    unsetenv("CFUSER_SPLIT_K");
  }
}

/* CFUSER_SPLIT_K=<ks> forces ks slices where they divide K into rows of 16 bytes: 8 x 512
 * on the default device, where the rule splits 3 x 16 @ 4096 into 4. */
Test(split_k, the_environment_forces_a_split) {
  KcInput in[3];
  setenv("CFUSER_SPLIT_K", "8", 1);
  linear_gelu(CF_HALF, 3, 16, 4096, in);
  char *plan = plan_of(sched_device_default(), 3, in, 2e-2);
  cr_expect_str_eq(plan, "view: no kernel\n"
                         "view: no kernel\n" MMA_PLAN
                         "inner_persistent: registers threads=2x32 persistent=1 vector=4 rows=blockIdx.x\n");
  free(plan);
}

/* The rewrite alone on a concrete copy (what define and run hands it): the slices as the
 * reshapes of the operands show them. 16 tokens through Llama's down projection (w
 * [4096, 11008]) on an H100's 132 SMs: 64 blocks, so 4 slices of 2752 (256 blocks, two an
 * SM; 11008 = 2^8 x 43); the matmul form of 128 x 4096 @ 4096 x 4096: 4 slices of 1024. */
static char *rewritten_math(bool linear, int64_t m, int64_t n, int64_t k) {
  cf_fusion_destroy(f);
  f = cf_fusion_create();
  cf_tv *x = cf_tensor_concrete(f, CF_BFLOAT16, 2, (int64_t[]){m, k});
  cf_tv *w = cf_tensor_concrete(f, CF_BFLOAT16, 2, linear ? (int64_t[]){n, k} : (int64_t[]){k, n});
  cf_fusion_add_input(f, x), cf_fusion_add_input(f, w);
  cf_fusion_add_output(f, linear ? cf_linear(f, x, w, NULL) : cf_matmul(f, x, w));
  cr_assert_eq(sched_split_k(f, sched_device_default()), CF_OK, "%s", cf_fusion_error(f));
  char *text = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  cf_fusion_print_math(f, out);
  fclose(out);
  return text;
}

Test(split_k, the_slices_are_views_of_the_operands) {
  char *math = rewritten_math(true, 16, 4096, 11008);
  cr_expect(strstr(math, "= reshape( T0_g___bfloat[iS0{16}, iS1{11008}], {16, 4, 2752} );") != NULL, "%s", math);
  cr_expect(strstr(math, "= reshape( T1_g___bfloat[iS2{4096}, iS3{11008}], {4096, 4, 2752} );") != NULL, "%s", math);
  cr_expect_eq(count(math, "= sum("), 2, "%s", math);
  free(math);
  math = rewritten_math(false, 128, 4096, 4096);
  cr_expect(strstr(math, "= reshape( T0_g___bfloat[iS0{128}, iS1{4096}], {128, 4, 1024} );") != NULL, "%s", math);
  cr_expect(strstr(math, "= reshape( T1_g___bfloat[iS2{4096}, iS3{4096}], {4, 1024, 4096} );") != NULL, "%s", math);
  free(math);
  math = rewritten_math(false, 1024, 4096, 11008); /* 8 x 172 blocks: no split */
  cr_expect_eq(count(math, "reshape"), 0, "%s", math);
  free(math);
}

/* Split products of random forms, equal to the evaluator: matmul or linear, with or
 * without a bias and gelu, half or bfloat16, odd M and N (1 to 17 tokens, 1 to 65
 * columns), K of 2048 to 4096 in multiples of 8, the slices the rule's (8 SMs) or forced
 * (2, 3, 4, 8 where they divide K into rows of 16 bytes; a K no ks divides that way runs
 * unsplit, and so does an M or N of 1: a single matmul kernel then). Eight cases from a
 * fixed seed. */
Test(split_k, random_split_products_equal_the_evaluator) {
  uint64_t s = 0x5eed5;
  SchedDevice dev = eight_sms();
  const int64_t ms[] = {1, 3, 7, 17}, ns[] = {1, 8, 33, 65}, ks[] = {2048, 2056, 3072, 4096};
  const char *forced[] = {NULL, "2", "3", "4", "8"};
  for (int c = 0; c < 8; c++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t r = s >> 33;
    bool linear = r & 1, bias = (r >> 1) & 1, gelu = (r >> 2) & 1;
    cf_dtype dt = (r >> 3) & 1 ? CF_HALF : CF_BFLOAT16;
    int64_t m = ms[(r >> 4) % 4], n = ns[(r >> 6) % 4], k = ks[(r >> 8) % 4];
    const char *env = forced[(r >> 10) % 5];
    cf_fusion_destroy(f);
    f = cf_fusion_create();
    if (env) setenv("CFUSER_SPLIT_K", env, 1);
    KcInput in[3] = {{dt, 2, {m, k}, NULL}, {dt, 2, {linear ? n : k, linear ? k : n}, NULL}, {dt, 1, {n}, NULL}};
    cf_tv *a = cf_tensor_symbolic(f, dt, 2), *b = cf_tensor_symbolic(f, dt, 2), *c3 = NULL;
    cf_fusion_add_input(f, a), cf_fusion_add_input(f, b);
    if (linear && bias) c3 = cf_tensor_symbolic(f, dt, 1), cf_fusion_add_input(f, c3);
    cf_tv *y = linear ? cf_linear(f, a, b, c3) : cf_matmul(f, a, b);
    cf_fusion_add_output(f, gelu ? cf_gelu(f, y) : y);
    char *plan = plan_of(&dev, c3 ? 3 : 2, in, 3e-2);
    bool split = strstr(plan, "view: no kernel\n") != NULL;
    if (m == 1 || n == 1) cr_expect_not(split, "case %d: an M or N of 1 split:\n%s", c, plan);
    if (!split) cr_expect_eq(count(plan, "\n"), 1, "case %d: unsplit but not one kernel:\n%s", c, plan);
    cr_log_info("case %d: %s %s m=%lld n=%lld k=%lld bias=%d gelu=%d ks=%s:\n%s", c, linear ? "linear" : "matmul",
                cf_dtype_name(dt), (long long)m, (long long)n, (long long)k, c3 != NULL, gelu, env ? env : "rule", plan);
    free(plan);
    unsetenv("CFUSER_SPLIT_K");
  }
}

/* A product of half operands summed in half (no cast to float: built by hand, not by
 * cf_linear) is not split: its slices' partials would round to half, where the unsplit
 * sum rounds once. */
Test(split_k, a_product_summed_in_half_is_not_split) {
  cf_tv *x = cf_tensor_symbolic(f, CF_HALF, 2), *w = cf_tensor_symbolic(f, CF_HALF, 2);
  cf_fusion_add_input(f, x), cf_fusion_add_input(f, w);
  cf_tv *p = cf_mul(f, cf_broadcast(f, x, 3, (bool[]){false, true, false}),
                    cf_broadcast(f, w, 3, (bool[]){true, false, false}));
  cf_fusion_add_output(f, cf_sum(f, p, 1, (int[]){2}));
  KcInput in[2] = {{CF_HALF, 2, {5, 2048}, NULL}, {CF_HALF, 2, {24, 2048}, NULL}};
  SchedDevice dev = eight_sms();
  char *plan = plan_of(&dev, 2, in, 5e-2);
  cr_expect_null(strstr(plan, "view"), "%s", plan);
  free(plan);
}

/* On Hopper (wgmma, whose epilogue stores a thread's two adjacent columns as one vector
 * where N is a multiple of the block tile's N): a linear of 5 tokens through a [256, 4096]
 * bfloat16 weight on 16 SMs, split into 4 slices of 1024. Its float partials are [5, 256,
 * 4], the slices innermost, so adjacent columns are 4 floats apart and the epilogue stores
 * one element at a time (no " store=pairs"): the pairs were planned from N alone and
 * analysis/ refused them, an internal error on an H200 for every split linear whose N is
 * a multiple of the tile (16 x 11008 through a [4096, 11008] weight, from Python). */
Test(split_k, a_split_linear_on_hopper_stores_its_partials) {
  KcInput in[3];
  linear_gelu(CF_BFLOAT16, 5, 256, 4096, in);
  SchedDevice dev = sched_device_h100;
  dev.sm_count = 16;
  char *plan = plan_of(&dev, 3, in, 2e-2);
  cr_expect_str_eq(plan, "view: no kernel\n"
                         "view: no kernel\n"
                         "matmul: tile=128x128x64 warpgroups=2 mma=m64n128k16 smem=operands stages=4 "
                         "fill=cp.async16,cp.async16 wgmma_wait=1\n"
                         "inner_persistent: registers threads=2x64 persistent=1 vector=4 rows=blockIdx.x\n");
  free(plan);
}
