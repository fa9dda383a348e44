/* Tensor cores, first slice (issue 24): cf_mma_tile's validation (exact messages), the
 * lowering's refusals, and the matmul row's mma.sync m16n8k16 kernels against the
 * evaluator on the host backend (whose warp emulation follows the PTX fragment layout, so
 * a wrong fragment mapping is a wrong result) for M, N, K in {1, 7, 16, 33, 127}, batched,
 * transposed operands and epilogues; NVRTC compiles them for sm_90a (and sm_80). */
#include <criterion/criterion.h>
#include <string.h>

#include "executor/fusion_cache.h"
#include "kernels/kernel_check.h"

static cf_fusion *f;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(mma, .init = setup, .fini = teardown);

static void fresh(void) {
  cf_fusion_destroy(f);
  f = cf_fusion_create();
}

/* Runs f (inputs in[0..n)) by define and run on the host backend against the evaluator,
 * with the matmul row's tensor-core schedule. */
static void run_checked(cf_fusion_cache *c, int n, const KcInput *in, uint64_t seed, const char *params) {
  DLManagedTensor *t[3] = {0}, *got = NULL, *want = NULL;
  const DLTensor *ins[3];
  for (int i = 0; i < n; i++) ins[i] = &(t[i] = kc_make_input(&in[i], seed + (uint64_t)i))->dl_tensor;
  cr_assert_eq(cf_fusion_evaluate(f, n, ins, &want), CF_OK, "%s", cf_fusion_error(f));
  cr_assert_eq(cf_fusion_execute(c, n, ins, 1, &got), CF_OK, "%s", cf_fusion_cache_error(c));
  kc_compare(&got, &want, 1, 2e-2, "mma");
  cr_expect_str_eq(cf_fusion_cache_last_params(c, 0), params);
  for (int i = 0; i < n; i++) cf_tensor_free(t[i]);
  cf_tensor_free(got), cf_tensor_free(want);
}

static cf_fusion_cache *host_cache(void) {
  return cf_fusion_cache_create(f, &(cf_executor_options){.backend = CF_BACKEND_HOST});
}

/* The fill of A (K-contiguous) and B (K- or N-contiguous) of a matmul of sizes k and n:
 * 16-byte vectors when the contiguous extent is a multiple of 8, else one element a
 * thread, the params naming the extent. */
static const char *fills(int64_t k, int64_t n, bool b_along_k) {
  static char a[32], b[32];
  int64_t bc = b_along_k ? k : n;
  snprintf(a, sizeof a, k % 8 ? "scalar(K=%lld)" : "cp.async16", (long long)k);
  snprintf(b, sizeof b, bc % 8 ? "scalar(%c=%lld)" : "cp.async16", b_along_k ? 'K' : 'N', (long long)bc);
  return tu_mma_params(a, b);
}

/* matmul of symbolic [M, K] @ [K, N]: one kernel, every size of the list (125 shapes). */
Test(mma, matmul_of_every_small_size_equals_the_evaluator) {
  static const int64_t sizes[] = {1, 7, 16, 33, 127};
  cf_tv *a = cf_tensor_symbolic(f, CF_HALF, 2), *b = cf_tensor_symbolic(f, CF_HALF, 2);
  cf_fusion_add_input(f, a), cf_fusion_add_input(f, b);
  cf_fusion_add_output(f, cf_matmul(f, a, b));
  cf_fusion_cache *c = host_cache();
  for (int i = 0; i < 5; i++)
    for (int j = 0; j < 5; j++)
      for (int k = 0; k < 5; k++) {
        KcInput in[2] = {{CF_HALF, 2, {sizes[i], sizes[k]}, NULL}, {CF_HALF, 2, {sizes[k], sizes[j]}, NULL}};
        run_checked(c, 2, in, 11, fills(sizes[k], sizes[j], false));
      }
  cf_fusion_cache_destroy(c);
}

/* Two M and N tiles of 128 and three K tiles: blocks and K steps accumulate. */
Test(mma, bfloat16_across_blocks_and_k_tiles) {
  cf_tv *a = cf_tensor_symbolic(f, CF_BFLOAT16, 2), *b = cf_tensor_symbolic(f, CF_BFLOAT16, 2);
  cf_fusion_add_input(f, a), cf_fusion_add_input(f, b);
  cf_fusion_add_output(f, cf_matmul(f, a, b));
  cf_fusion_cache *c = host_cache();
  run_checked(c, 2, (KcInput[]){{CF_BFLOAT16, 2, {200, 80}, NULL}, {CF_BFLOAT16, 2, {80, 130}, NULL}}, 3,
              fills(80, 130, false));
  cf_fusion_cache_destroy(c);
}

Test(mma, batched) {
  cf_tv *a = cf_tensor_symbolic(f, CF_HALF, 3), *b = cf_tensor_symbolic(f, CF_HALF, 3);
  cf_fusion_add_input(f, a), cf_fusion_add_input(f, b);
  cf_fusion_add_output(f, cf_matmul(f, a, b));
  cf_fusion_cache *c = host_cache();
  run_checked(c, 2, (KcInput[]){{CF_HALF, 3, {3, 33, 40}, NULL}, {CF_HALF, 3, {3, 40, 17}, NULL}}, 5,
              fills(40, 17, false));
  cf_fusion_cache_destroy(c);
}

/* A stored [K, M] and B stored [N, K], transposed in the fusion (the permutes go into the
 * tile writes). */
Test(mma, transposed_operands) {
  cf_tv *a = cf_tensor_symbolic(f, CF_HALF, 2), *b = cf_tensor_symbolic(f, CF_HALF, 2);
  cf_fusion_add_input(f, a), cf_fusion_add_input(f, b);
  cf_fusion_add_output(f, cf_matmul(f, cf_transpose(f, a, 0, 1), cf_transpose(f, b, 0, 1)));
  cf_fusion_cache *c = host_cache();
  run_checked(c, 2, (KcInput[]){{CF_HALF, 2, {33, 7}, NULL}, {CF_HALF, 2, {127, 33}, NULL}}, 7,
              tu_mma_params("scalar(a permute of T0)", "scalar(a permute of T1)"));
  cf_fusion_cache_destroy(c);
}

/* linear + bias + gelu: the epilogue runs on the accumulator's fragments. */
Test(mma, linear_bias_gelu) {
  cf_tv *x = cf_tensor_symbolic(f, CF_HALF, 2), *w = cf_tensor_symbolic(f, CF_HALF, 2);
  cf_tv *bias = cf_tensor_symbolic(f, CF_HALF, 1);
  cf_fusion_add_input(f, x), cf_fusion_add_input(f, w), cf_fusion_add_input(f, bias);
  cf_fusion_add_output(f, cf_gelu(f, cf_linear(f, x, w, bias)));
  cf_fusion_cache *c = host_cache();
  run_checked(c, 3, (KcInput[]){{CF_HALF, 2, {127, 33}, NULL}, {CF_HALF, 2, {7, 33}, NULL}, {CF_HALF, 1, {7}, NULL}}, 9,
              fills(33, 7, true));
  run_checked(c, 3, (KcInput[]){{CF_HALF, 2, {16, 16}, NULL}, {CF_HALF, 2, {16, 16}, NULL}, {CF_HALF, 1, {16}, NULL}}, 9,
              fills(16, 16, true));
  cf_fusion_cache_destroy(c);
}

/* ---- cf_mma_tile by hand ------------------------------------------------------------- */

/* R = sum(cast(A[16, 16, 1]) * cast(B[1, 16, 8]), 1) of dt, R [M, K, N] reordered to
 * [M, N, K]; returns R. */
static cf_tv *product(cf_dtype dt, int64_t m, int64_t n) {
  cf_tv *a = cf_tensor_concrete(f, dt, 2, (int64_t[]){m, 16}), *b = cf_tensor_concrete(f, dt, 2, (int64_t[]){16, n});
  cf_fusion_add_input(f, a), cf_fusion_add_input(f, b);
  cf_tv *r = cf_matmul(f, a, b);
  cf_tv *sum = ir_tv_handle(ir_tv(r)->def ? ir_tv(r)->def->in[0] : ir_tv(r));
  cf_fusion_add_output(f, r);
  if (dt != CF_FLOAT) cf_reorder_all(f, sum, 3, (int[]){0, 2, 1});
  else cf_reorder_all(f, r, 3, (int[]){0, 2, 1});
  return dt != CF_FLOAT ? sum : r;
}

static void expect_error(cf_status s, const char *want) {
  cr_expect_eq(s, CF_ERR_INVALID_SCHEDULE);
  cr_expect_str_eq(cf_fusion_error(f), want);
}

Test(mma, tile_refuses_float_operands) {
  cf_tv *r = product(CF_FLOAT, 16, 8);
  expect_error(cf_mma_tile(f, r, 0, CF_MMA_M16N8K16),
               "mma_tile: the operands of T4 are not casts of two half or two bfloat16 tensors (m16n8k16 takes half "
               "or bfloat16) for T5_g_float[iS13{16}, iS15{8}, rS14{16}]");
}

Test(mma, tile_refuses_an_extent_other_than_the_instructions) {
  cf_tv *r = product(CF_HALF, 32, 8);
  expect_error(cf_mma_tile(f, r, 0, CF_MMA_M16N8K16),
               "mma_tile: axis 0 (iS19{32}) of T7 is the M tile; m16n8k16 needs its extent to be exactly 16 (split it "
               "by 16 first) for T7_l_float[iS19{32}, iS21{8}, rS20{16}]");
}

Test(mma, tile_refuses_axes_that_are_not_the_last_three) {
  cf_tv *r = product(CF_HALF, 16, 8);
  cf_split(f, r, 2, 16);
  expect_error(cf_mma_tile(f, r, 0, CF_MMA_M16N8K16),
               "mma_tile: axis 0 of T7 must start the last three loop axes (1 of 4): the instruction's M, N and K "
               "tiles are innermost for T7_l_float[iS19{16}, iS21{8}, rS24{1}, rS25{16}]");
}

/* The sum of half A [sa] @ B [sb] (cf_matmul), its loop axes reordered by order. */
static cf_tv *batched_sum(int ra, const int64_t *sa, int rb, const int64_t *sb, const int *order) {
  cf_tv *a = cf_tensor_concrete(f, CF_HALF, ra, sa), *b = cf_tensor_concrete(f, CF_HALF, rb, sb);
  cf_fusion_add_input(f, a), cf_fusion_add_input(f, b);
  cf_tv *r = cf_matmul(f, a, b);
  cf_fusion_add_output(f, r);
  cf_tv *sum = ir_tv_handle(ir_tv(r)->def->in[0]);
  cf_reorder_all(f, sum, 4, order);
  return sum;
}

/* An M or N tile merged from axes of both roles: an N axis of B's batch merged into M, or
 * an M axis of A's batch merged into N (a batch of one operand merged with its own role's
 * axis is what the matmul row does, and runs). */
Test(mma, tile_refuses_m_or_n_axes_merged_across_roles) {
  /* [16, 16] @ [2, 16, 8]: R [N1 2, M 16, K 16, N 8] -> [M, N1, N, K], M and N1 merged, split by 16 */
  cf_tv *r = batched_sum(2, (int64_t[]){16, 16}, 3, (int64_t[]){2, 16, 8}, (int[]){1, 0, 3, 2});
  cf_merge(f, r, 0);
  cf_split(f, r, 0, 16);
  expect_error(cf_mma_tile(f, r, 1, CF_MMA_M16N8K16),
               "mma_tile: axis 1 of T7 is not an M axis: it must come from root axes through splits and merges, each "
               "iterated by T5 and broadcast by T3 for T7_l_float[iS33{2}, iS34{16}, iS28{8}, rS27{16}]");
  fresh();
  /* [2, 16, 16] @ [16, 4]: R [M1 2, M 16, K 16, N 4] -> [M, N, M1, K], N and M1 merged */
  r = batched_sum(3, (int64_t[]){2, 16, 16}, 2, (int64_t[]){16, 4}, (int[]){2, 0, 3, 1});
  cf_merge(f, r, 1);
  expect_error(cf_mma_tile(f, r, 0, CF_MMA_M16N8K16),
               "mma_tile: axis 1 of T7 is not an N axis: it must come from root axes through splits and merges, each "
               "broadcast by T3 and iterated by T5 for T7_l_float[iS26{16}, iS32{8}, rS27{16}]");
}

/* Tiled by hand, then the lane axis taken off threadIdx.x: the lowering refuses. */
Test(mma, lowering_refuses_the_lane_axis_off_threadIdx_x) {
  fresh();
  cf_tv *r = product(CF_HALF, 16, 8);
  cr_assert_eq(cf_mma_tile(f, r, 0, CF_MMA_M16N8K16), CF_OK, "%s", cf_fusion_error(f));
  cf_parallelize(f, r, 0, CF_PT_SERIAL);
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_expect_eq(cf_executor_compile(e, f), CF_ERR_INVALID_SCHEDULE);
  cr_expect_str_eq(cf_executor_error(e), "compile: the MMA axes of T7_l_float[iS28{32}, iMMA26{2}, iMMA25{2}, "
                   "rMMA20{16}] do not follow the lane axis of the accumulator's fragment layout on threadIdx.x "
                   "(schedule them with cf_mma_tile)");
  cf_executor_destroy(e);
}
