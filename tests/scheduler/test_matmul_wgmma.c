/* The matmul row on Hopper (scheduler/matmul_mma.c with a device of compute capability
 * 9.0): wgmma.mma_async m64n256k16 from shared tiles in the canonical layouts of wgmma's
 * matrix descriptors (lower/mma_wgmma.c), emulated by the host backend from the
 * descriptors alone (codegen/runtime/host_wgmma.h). bfloat16 and half matmuls and linears
 * of odd and exact shapes, batched, with a bias + gelu epilogue, each equal to the
 * evaluator on the host backend (and on the GPU when there is one), compiled by NVRTC for
 * sm_90a; the CUDA text holds the instruction, its descriptors' constant fields, the
 * group's fence, commit and wait, and the proxy fence before the barrier. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <string.h>

#include "executor/fusion_cache.h"
#include "kernels/kernel_check.h"
#include "kernel_ir.h"
#include "lower/lower.h"
#include "scheduler/registry.h"

static cf_fusion *f;

/* A Hopper of two SMs: the small shapes here give one block, half of them, so the block
 * tile keeps its N of 256 (on 132 SMs a few rows take a narrower one: the last tests). */
static SchedDevice hopper;
static void setup(void) {
  f = cf_fusion_create();
  hopper = sched_device_h100;
  hopper.sm_count = 2;
}
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(matmul_wgmma, .init = setup, .fini = teardown);

static void fresh(void) {
  cf_fusion_destroy(f);
  f = cf_fusion_create();
}

/* Whether f's product stores pairs of columns: its N (the output's last axis) a constant
 * multiple of the block tile's 256 (scheduler/matmul_mma.c; lower/vectorize.c vectorizes
 * only where every split above the pair divides). */
static bool stores_pairs(void) {
  Val *o = f->outputs.len ? f->outputs.items[0] : NULL;
  int64_t n;
  return o && ir_scalar_const_value(ID(TV(o)->logical[TV(o)->nlogical - 1])->extent, &n) && n % 256 == 0;
}

static const char *params(const char *fa, const char *fb) {
  static char buf[256];
  snprintf(buf, sizeof buf, "tile=128x256x64 warpgroups=2 mma=m64n256k16 smem=operands stages=4 fill=%s,%s%s wgmma_wait=1%s",
           fa, fb, strcmp(fa, "tma") ? "" : " producer=tidy", /* TMA fills: a producer warpgroup */
           stores_pairs() ? " store=pairs" : "");
  return buf;
}

/* f's kernel IR, printed (caller frees). */
static char *lowered_ir(void) { return test_kernel_ir(f); }

/* The row plans f for dev with exactly these params and applies them. */
static void apply_on(const SchedDevice *dev, const char *want) {
  const SchedRow *r = sched_row_named("matmul");
  SchedCall call = {0, NULL, dev};
  char why[SCHED_WHY_MAX] = "";
  SchedParams p, used;
  cr_assert(r->can_schedule(f, &call, why), "%s", why);
  cr_assert(r->plan(f, &call, &p, why), "%s", why);
  cr_expect_str_eq(p.text, want);
  cr_assert_eq(r->apply(&f, &call, &p, &used), CF_OK, "%s", cf_fusion_error(f));
  cr_expect(sched_params_equal(&p, &used));
}

/* The row plans and applies the wgmma schedule for a Hopper device with these fills. */
static void apply_row(const char *fa, const char *fb) { apply_on(&hopper, params(fa, fb)); }

static char *row_check(int n, const KcInput *in, double tol, const char *fa, const char *fb) {
  apply_row(fa, fb);
  if (getenv("CFUSER_MATMUL_PRINT")) cf_fusion_print_kernel(f, stdout);
  return kc_check(f, n, in, tol);
}

/* matmul [m, k] @ [k, n] in dt: A K-major, B MN-major (the transpose bit). */
static char *plain(cf_dtype dt, int64_t m, int64_t k, int64_t n) {
  fresh();
  char fa[32], fb[32];
  const char *vec = k % 8 || n % 8 ? "cp.async16" : "tma"; /* TMA when both tiles are copies */
  snprintf(fa, sizeof fa, "scalar(K=%lld)", (long long)k);
  snprintf(fb, sizeof fb, "scalar(N=%lld)", (long long)n);
  if (!(k % 8)) snprintf(fa, sizeof fa, "%s", vec);
  if (!(n % 8)) snprintf(fb, sizeof fb, "%s", vec);
  KcInput in[2] = {{dt, 2, {m, k}, NULL}, {dt, 2, {k, n}, NULL}};
  cf_tv *a = tu_input(f, dt, 2, in[0].sizes), *b = tu_input(f, dt, 2, in[1].sizes);
  cf_fusion_add_output(f, cf_matmul(f, a, b));
  return row_check(2, in, 1e-2, fa, fb);
}

Test(matmul_wgmma, bfloat16_exact_tile) { free(plain(CF_BFLOAT16, 128, 64, 256)); }

/* Odd M, N, K: the tiles are zero-filled past the edges (cp.async's source size 0, or the
 * scalar fill's zeros), which wgmma reads whole. */
Test(matmul_wgmma, odd_shapes_equal_the_evaluator) {
  free(plain(CF_BFLOAT16, 130, 70, 20));
  free(plain(CF_HALF, 33, 40, 17));
  free(plain(CF_BFLOAT16, 7, 127, 136));
  free(plain(CF_HALF, 65, 200, 129));
}

/* linear: w [N, K] is K-contiguous, so B's tile is K-major (no transpose bit), as A's. */
Test(matmul_wgmma, linear_bias_gelu_epilogue) {
  KcInput in[3] = {{CF_BFLOAT16, 2, {70, 72}, NULL}, {CF_BFLOAT16, 2, {150, 72}, NULL}, {CF_BFLOAT16, 1, {150}, NULL}};
  cf_tv *x = tu_input(f, CF_BFLOAT16, 2, in[0].sizes), *w = tu_input(f, CF_BFLOAT16, 2, in[1].sizes);
  cf_tv *bias = tu_input(f, CF_BFLOAT16, 1, in[2].sizes);
  cf_fusion_add_output(f, cf_gelu(f, cf_linear(f, x, w, bias)));
  char *src = row_check(3, in, 2e-2, "tma", "tma");
  cr_expect(strstr(src, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2,"));
  cr_expect(strstr(src, "p, 1, 1, 0, 0; }"), "B of a linear is K-major: no transpose bit");
  free(src);
}

/* A batch axis on blockIdx.z. */
Test(matmul_wgmma, batched) {
  KcInput in[2] = {{CF_HALF, 3, {3, 19, 33}, NULL}, {CF_HALF, 3, {3, 33, 21}, NULL}};
  cf_tv *a = tu_input(f, CF_HALF, 3, in[0].sizes), *b = tu_input(f, CF_HALF, 3, in[1].sizes);
  cf_fusion_add_output(f, cf_matmul(f, a, b));
  free(row_check(2, in, 1e-2, "scalar(K=33)", "scalar(N=21)"));
}

/* A batch axis of A alone (B a matrix shared by the batch, torch's matmul of [b, m, k] and
 * [k, n]) is a second M axis: merged with M into one axis of b x m rows, the tiles cross
 * from one batch into the next (19 rows each) and still equal the evaluator; odd sizes
 * (scalar fills) and two batch axes of A alike. */
Test(matmul_wgmma, batch_of_a_alone_merges_into_m) {
  KcInput in[2] = {{CF_BFLOAT16, 3, {3, 19, 64}, NULL}, {CF_BFLOAT16, 2, {64, 40}, NULL}};
  cf_tv *a = tu_input(f, CF_BFLOAT16, 3, in[0].sizes), *b = tu_input(f, CF_BFLOAT16, 2, in[1].sizes);
  cf_fusion_add_output(f, cf_matmul(f, a, b));
  free(row_check(2, in, 1e-2, "cp.async16", "cp.async16"));
  fresh();
  KcInput in2[2] = {{CF_HALF, 2, {33, 64}, NULL}, {CF_HALF, 3, {2, 64, 24}, NULL}}; /* B's batch: a second N axis */
  a = tu_input(f, CF_HALF, 2, in2[0].sizes), b = tu_input(f, CF_HALF, 3, in2[1].sizes);
  cf_fusion_add_output(f, cf_matmul(f, a, b));
  free(row_check(2, in2, 1e-2, "cp.async16", "cp.async16"));
  /* odd everything: 5 batches of 13 rows (65 rows, one tile), K 37 and N 21 (scalar fills),
   * and two batch axes of A ([2, 3, 13, k]: three M axes merged) */
  static const int64_t sizes[][5] = {{5, 13, 37, 21, 0}, {2, 3, 13, 40, 24}};
  for (int i = 0; i < 2; i++) {
    fresh();
    const int64_t *z = sizes[i];
    int ra = z[4] ? 4 : 3;
    KcInput in3[2] = {{CF_BFLOAT16, ra, {z[0], z[1], z[2], z[3]}, NULL}, {CF_BFLOAT16, 2, {0, 0}, NULL}};
    if (ra == 3) in3[1].sizes[0] = z[2], in3[1].sizes[1] = z[3];
    else in3[0].sizes[3] = z[3], in3[1].sizes[0] = z[3], in3[1].sizes[1] = z[4];
    a = tu_input(f, CF_BFLOAT16, ra, in3[0].sizes), b = tu_input(f, CF_BFLOAT16, 2, in3[1].sizes);
    cf_fusion_add_output(f, cf_matmul(f, a, b));
    char fa[32], fb[32];
    int64_t k = in3[1].sizes[0], n = in3[1].sizes[1];
    snprintf(fa, sizeof fa, k % 8 ? "scalar(K=%lld)" : "cp.async16", (long long)k);
    snprintf(fb, sizeof fb, n % 8 ? "scalar(N=%lld)" : "cp.async16", (long long)n);
    free(row_check(2, in3, 2e-2, fa, fb));
  }
}

/* A merged M or N whose innermost axis is a multiple of the block tile (a batch of A
 * alone of 128-row matrices; B's batch of 256-column ones) keeps every tile inside one
 * batch, so TMA boxes of the input's axes fill it (scheduler/matmul_mma.c's within_spans)
 * and the producer warpgroup and persistence follow, as for one matrix (torch's [b, m, k]
 * @ [k, n] is cuBLAS's (b m) x k @ k x n); equal to the evaluator, each box's batch
 * coordinate the merged tile index over the rows of a batch. */
Test(matmul_wgmma, a_batch_of_whole_tiles_is_filled_by_tma) {
  KcInput in[2] = {{CF_BFLOAT16, 3, {3, 128, 64}, NULL}, {CF_BFLOAT16, 2, {64, 256}, NULL}};
  cf_tv *a = tu_input(f, CF_BFLOAT16, 3, in[0].sizes), *b = tu_input(f, CF_BFLOAT16, 2, in[1].sizes);
  cf_fusion_add_output(f, cf_matmul(f, a, b));
  char want[256];
  snprintf(want, sizeof want, "%s persistent=2x1", params("tma", "tma"));
  apply_on(&hopper, want);
  char *src = kc_check(f, 2, in, 2e-2); /* A's box: K, the row in the batch, the batch */
  cr_expect(strstr(src, "&cf_tmap0, &T2_mbar[(((i0 + i1) + i14) % 4)], (int)((i14 * 64)), (int)(0), (int)(((i0 * 2) + blockIdx.y)));"),
            "%s", src);
  free(src);
  fresh();
  KcInput in2[2] = {{CF_HALF, 2, {100, 64}, NULL}, {CF_HALF, 3, {2, 64, 256}, NULL}};
  a = tu_input(f, CF_HALF, 2, in2[0].sizes), b = tu_input(f, CF_HALF, 3, in2[1].sizes);
  cf_fusion_add_output(f, cf_matmul(f, a, b));
  apply_on(&hopper, params("tma", "tma"));
  free(kc_check(f, 2, in2, 2e-2));
}

/* The kernel IR and the CUDA text of the exact tile: per K tile of 64, a barrier with
 * fence.proxy.async before it, then the 128 accumulator registers pinned and wgmma.fence,
 * four wgmmas (one per 16 of K) from descriptors (A K-major: SBO 1024, 128-byte swizzle,
 * 0x4000004000010000; B of matmul's [K, N] MN-major, LBO 8192 between its 64-column
 * blocks: 0x4000004002000000 and the transpose bit), commit and wait 0; the tiles' shared
 * memory 1024-byte aligned. */
Test(matmul_wgmma, kernel_text_has_the_instruction_and_its_fences) {
  setenv("CFUSER_WGMMA_TMA", "0", 1); /* the threads' cp.async fills (the TMA fills' text: below) */
  fresh();
  KcInput in[2] = {{CF_BFLOAT16, 2, {128, 64}, NULL}, {CF_BFLOAT16, 2, {64, 256}, NULL}};
  cf_tv *a = tu_input(f, CF_BFLOAT16, 2, in[0].sizes), *b = tu_input(f, CF_BFLOAT16, 2, in[1].sizes);
  cf_fusion_add_output(f, cf_matmul(f, a, b));
  char *src = row_check(2, in, 1e-2, "cp.async16", "cp.async16");
  unsetenv("CFUSER_WGMMA_TMA");
  cr_expect(strstr(src, "alignas(1024) extern __shared__ char cf_smem[];"));
  cr_expect(strstr(src, "asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");\n    __syncthreads();\n"
                        "    asm volatile(\"\" : \"+f\"(T7[0]) :: \"memory\");"), "the barrier, then the registers pinned");
  cr_expect(strstr(src, "asm volatile(\"\" : \"+f\"(T7[127]) :: \"memory\");\n"
                        "    asm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\");"));
  cr_expect(strstr(src, "const unsigned long long cfw_da = 0x4000004000010000ull | (unsigned long long)(((unsigned)"
                        "__cvta_generic_to_shared(&T2["));
  cr_expect(strstr(src, "const unsigned long long cfw_db = 0x4000004002000000ull |"));
  cr_expect(strstr(src, "{ .reg .pred p; setp.ne.b32 p, %130, 0; wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
                        "{%0, %1, %2, %3,"));
  cr_expect(strstr(src, "%127}, %128, %129, p, 1, 1, 0, 1; }\" : \"+f\"(T7[0]), \"+f\"(T7[1]), \"+f\"(T7[64]), "
                        "\"+f\"(T7[65]), \"+f\"(T7[2]),"), "the accumulator's registers in the PTX order d[4j + 2mr + p]");
  cr_expect(strstr(src, "asm volatile(\"wgmma.commit_group.sync.aligned;\" ::: \"memory\");\n"
                        "    asm volatile(\"wgmma.wait_group.sync.aligned %0;\" :: \"n\"(1) : \"memory\");"));
  cr_expect(strstr(src, "  }\n  asm volatile(\"wgmma.wait_group.sync.aligned %0;\" :: \"n\"(0) : \"memory\");"),
            "a wait for all after the K loop");
  free(src);
  char *ir = lowered_ir();
  cr_expect(strstr(ir, "FENCE_PROXY_ASYNC SYNC\n"), "%s", ir);
  cr_expect(strstr(ir, "WGMMA_FENCE\n"));
  cr_expect(strstr(ir, "WGMMA m64n256k16.__bfloat T7[0] += desc T2["));
  cr_expect(strstr(ir, "|0x4000004000010000 x desc T4["));
  cr_expect(strstr(ir, "|0x4000004002000000 (MN-major)\n"));
  cr_expect(strstr(ir, "WGMMA_COMMIT\n"));
  cr_expect(strstr(ir, "WGMMA_WAIT 0\n"));
  free(ir);
}

/* The default fills of copies: TMA boxes (lower/tma.c found them from the tiles' layouts)
 * issued by a producer warpgroup (lower/warp_specialize.c: threadIdx.y 2, 384 threads):
 * A [128, 64] K-major one 64 x 128 box with the 128-byte swizzle, B of [K, N] MN-major four
 * 64 x 64 boxes side by side along N, each tile's bytes completing on its stage's barrier;
 * the readers (threadIdx.y 0 and 1) wait for both barriers, no __syncthreads in the loop
 * and no proxy fence (the async proxy wrote the tiles); the producer gives registers to
 * the readers. */
Test(matmul_wgmma, tma_boxes_fill_the_tiles) {
  char *src = plain(CF_BFLOAT16, 128, 64, 256);
  cr_expect(strstr(src, "__launch_bounds__(384)"), "%s", src);
  cr_expect(strstr(src, ", const __grid_constant__ CfTensorMap cf_tmap0 /* T0 */, const __grid_constant__ CfTensorMap "
                        "cf_tmap1 /* T1 */) {"), "%s", src);
  free(src);
  char *ir = lowered_ir();
  cr_expect(strstr(ir, "  MBAR_INIT cf_empty[3] arrivals 256\nSYNC\n"), "%s", ir); /* every reader thread */
  cr_expect(strstr(ir, "    IF (threadIdx.y >= 2) (concurrently with the else branch)\n"
                       "      SETMAXNREG -40\n"
                       "      IF (threadIdx.x == 0)\n"
                       "        FOR i12 in 0..1 (S)\n"
                       "          MBAR_EXPECT_TX T2_mbar[(i12 % 4)] bytes 16384\n"
                       "          TMA_LOAD cf_tmap0(T0 box 64x128 swizzle 128) at {(i12 * 64), (blockIdx.y * 128)} -> "
                       "T2[((i12 % 4) * 8192)] on T2_mbar[(i12 % 4)]\n"
                       "          MBAR_EXPECT_TX T4_mbar[(i12 % 4)] bytes 32768\n"
                       "          TMA_LOAD cf_tmap1(T1 box 64x64 swizzle 128) at {(blockIdx.x * 256), (i12 * 64)} -> "
                       "T4[((i12 % 4) * 16384)] on T4_mbar[(i12 % 4)]\n"
                       "          TMA_LOAD cf_tmap1(T1 box 64x64 swizzle 128) at {((blockIdx.x * 256) + 64), (i12 * 64)} -> "
                       "T4[(4096 + ((i12 % 4) * 16384))] on T4_mbar[(i12 % 4)]\n"), "%s", ir);
  cr_expect(strstr(ir, "    ELSE\n"
                       "      SETMAXNREG 232\n"), "%s", ir);
  cr_expect(strstr(ir, "        MBAR_WAIT T2_mbar[(i0 % 4)] parity ((i0 / 4) % 2)\n"
                       "        MBAR_WAIT T4_mbar[(i0 % 4)] parity ((i0 / 4) % 2)\n"
                       "        WGMMA_FENCE\n"), "%s", ir);
  cr_expect(!strstr(ir, "FENCE_PROXY_ASYNC"), "%s", ir);
  /* N = 256: the epilogue stores a thread's two adjacent columns as one vector */
  cr_expect(strstr(ir, "                T9[i11] = cast(T7[((i9 * 64) + ((i10 * 2) + i11))])\n"
                       "              T8[((((threadIdx.y * 64) + (((((threadIdx.x / 32) * 2) + i9) * 8) + ((threadIdx.x / 4) % "
                       "8))) * 256) + (((i10 * 4) + (threadIdx.x % 4)) * 2))] = Set(T9[0]) x2\n"), "%s", ir);
  free(ir);
}

/* Operands transposed in the fusion (matmul of permuted [K, M] and [N, K]): the tiles
 * read the permutes one element a thread and are stored A MN-major, B K-major. */
Test(matmul_wgmma, transposed_operands) {
  KcInput in[2] = {{CF_HALF, 2, {40, 33}, NULL}, {CF_HALF, 2, {17, 40}, NULL}};
  cf_tv *at = tu_input(f, CF_HALF, 2, in[0].sizes), *bt = tu_input(f, CF_HALF, 2, in[1].sizes);
  cf_fusion_add_output(f, cf_matmul(f, cf_transpose(f, at, 0, 1), cf_transpose(f, bt, 0, 1)));
  char *src = row_check(2, in, 1e-2, "scalar(a permute of T0)", "scalar(a permute of T1)");
  cr_expect(strstr(src, "p, 1, 1, 1, 0; }"), "A stored M-contiguous: the transpose bit of A");
  free(src);
}

/* Define and run with a Hopper device (the GPU's compute capability; fc_set_device here)
 * picks the row's wgmma schedule: one kernel equal to the evaluator. */
Test(matmul_wgmma, define_and_run_on_a_hopper_device) {
  cf_tv *x = cf_tensor_symbolic(f, CF_BFLOAT16, 2), *w = cf_tensor_symbolic(f, CF_BFLOAT16, 2);
  cf_tv *bias = cf_tensor_symbolic(f, CF_BFLOAT16, 1);
  cf_fusion_add_input(f, x), cf_fusion_add_input(f, w), cf_fusion_add_input(f, bias);
  cf_fusion_add_output(f, cf_gelu(f, cf_linear(f, x, w, bias)));
  KcInput in[3] = {{CF_BFLOAT16, 2, {37, 48}, NULL}, {CF_BFLOAT16, 2, {29, 48}, NULL}, {CF_BFLOAT16, 1, {29}, NULL}};
  cf_fusion_cache *c = cf_fusion_cache_create(f, &(cf_executor_options){.backend = CF_BACKEND_HOST});
  fc_set_device(c, &hopper);
  DLManagedTensor *t[3], *got = NULL, *want = NULL;
  const DLTensor *ins[3];
  for (int i = 0; i < 3; i++) ins[i] = &(t[i] = kc_make_input(&in[i], 5 + (uint64_t)i))->dl_tensor;
  cr_assert_eq(cf_fusion_execute(c, 3, ins, 1, &got), CF_OK, "%s", cf_fusion_cache_error(c));
  cr_assert_eq(cf_fusion_evaluate(f, 3, ins, &want), CF_OK, "%s", cf_fusion_error(f));
  char msg[256] = "";
  cr_expect(cf_tensor_allclose(&got->dl_tensor, &want->dl_tensor, 2e-2, 2e-2, msg, sizeof msg), "%s", msg);
  cr_expect_eq(cf_fusion_cache_last_segments(c), 1);
  cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "matmul");
  cr_expect_str_eq(cf_fusion_cache_last_params(c, 0), params("tma", "tma"));
  for (int i = 0; i < 3; i++) cf_tensor_free(t[i]);
  cf_tensor_free(got), cf_tensor_free(want);
  cf_fusion_cache_destroy(c);
}

/* cf_mma_tile's rules for wgmma: N a multiple of 8 up to 256, M exactly 64. */
Test(matmul_wgmma, mma_tile_refusals) {
  cf_tv *a = tu_input(f, CF_BFLOAT16, 2, (int64_t[]){64, 16}), *b = tu_input(f, CF_BFLOAT16, 2, (int64_t[]){16, 260});
  cf_tv *r = cf_sum(f, cf_mul(f, cf_cast(f, cf_broadcast(f, a, 3, (bool[]){false, true, false}), CF_FLOAT),
                              cf_cast(f, cf_broadcast(f, cf_transpose(f, b, 0, 1), 3, (bool[]){true, false, false}),
                                      CF_FLOAT)), 1, (int[]){2});
  cf_fusion_add_output(f, r);
  cr_expect_neq(cf_mma_tile(f, r, 0, CF_MMA_WGMMA_M64NK16), CF_OK);
  cr_expect(strstr(cf_fusion_error(f), "mma_tile: axis 1 (iS"), "%s", cf_fusion_error(f));
  cr_expect(strstr(cf_fusion_error(f), "is the N tile; m64nNk16 needs its extent to be a constant multiple of 8 up to 256"),
            "%s", cf_fusion_error(f));
}

/* CFUSER_WGMMA_TILE chooses the block's N and the stages (for measuring on the GPU): each
 * equals the evaluator, and the params name it. */
Test(matmul_wgmma, other_tiles_by_the_environment) {
  static const char *const tiles[][2] = {{"128x3", "tile=128x128x64 warpgroups=2 mma=m64n128k16 smem=operands stages=3"},
                                         {"64x2", "tile=128x64x64 warpgroups=2 mma=m64n64k16 smem=operands stages=2"}};
  for (int i = 0; i < 2; i++) {
    setenv("CFUSER_WGMMA_TILE", tiles[i][0], 1);
    fresh();
    KcInput in[2] = {{CF_BFLOAT16, 2, {70, 136}, NULL}, {CF_BFLOAT16, 2, {136, 150}, NULL}};
    cf_tv *a = tu_input(f, CF_BFLOAT16, 2, in[0].sizes), *b = tu_input(f, CF_BFLOAT16, 2, in[1].sizes);
    cf_fusion_add_output(f, cf_matmul(f, a, b));
    const SchedRow *r = sched_row_named("matmul");
    SchedCall call = {0, NULL, &hopper};
    char why[SCHED_WHY_MAX] = "";
    SchedParams p, used;
    cr_assert(r->plan(f, &call, &p, why), "%s", why);
    cr_expect(!strncmp(p.text, tiles[i][1], strlen(tiles[i][1])), "%s", p.text);
    cr_assert_eq(r->apply(&f, &call, &p, &used), CF_OK, "%s", cf_fusion_error(f));
    free(kc_check(f, 2, in, 2e-2));
  }
  unsetenv("CFUSER_WGMMA_TILE");
}

/* A malformed CFUSER_WGMMA_TILE keeps the default tile and says so on stderr, once a
 * process (a heuristic has no error channel); "128x3x" and "96x2" are malformed too. */
Test(matmul_wgmma, a_malformed_tile_is_ignored_with_one_warning) {
  cr_redirect_stderr();
  static const char *const bad[] = {"wide", "128x3x", "96x2"};
  for (int i = 0; i < 3; i++) {
    setenv("CFUSER_WGMMA_TILE", bad[i], 1);
    fresh();
    cf_tv *a = tu_input(f, CF_BFLOAT16, 2, (int64_t[]){128, 64}), *b = tu_input(f, CF_BFLOAT16, 2, (int64_t[]){64, 256});
    cf_fusion_add_output(f, cf_matmul(f, a, b));
    SchedCall call = {0, NULL, &hopper};
    char why[SCHED_WHY_MAX] = "";
    SchedParams p;
    cr_assert(sched_row_named("matmul")->plan(f, &call, &p, why), "%s", why);
    cr_expect_str_eq(p.text, params("tma", "tma"));
  }
  unsetenv("CFUSER_WGMMA_TILE");
  fflush(stderr);
  cr_expect_stderr_eq_str("cfuser: CFUSER_WGMMA_TILE=\"wide\" ignored: expected <N>x<stages>, N a multiple of 64 up "
                          "to 256 and 2 to 4 stages (e.g. 128x3); using 256x4\n");
}

/* Symbolic sizes (the row applied directly, no size to decide the fills from): the
 * descriptors are found all the same (the tiles' indices read no size). */
Test(matmul_wgmma, symbolic_sizes) {
  KcInput in[3] = {{CF_HALF, 2, {130, 70}, NULL}, {CF_HALF, 2, {150, 70}, NULL}, {CF_HALF, 1, {150}, NULL}};
  cf_tv *x = tu_input(f, CF_HALF, 2, NULL), *w = tu_input(f, CF_HALF, 2, NULL), *bias = tu_input(f, CF_HALF, 1, NULL);
  cf_fusion_add_output(f, cf_gelu(f, cf_linear(f, x, w, bias)));
  free(row_check(3, in, 2e-2, "scalar(K symbolic)", "scalar(K symbolic)"));
}

/* The block tile's N on 132 SMs (scheduler/matmul_mma.c's wgmma_bn): 256 while the blocks
 * reach half the SMs, else the widest of 128 and 64 that does, else 64: a few tokens
 * against a model's weight get more blocks. Planned only (the sizes are a model's). */
Test(matmul_wgmma, a_few_rows_take_a_narrower_block_tile) {
  static const struct { int64_t m, k, n; int bn; } cases[] = {
      {16, 4096, 4096, 64}, {128, 4096, 4096, 64}, {128, 4096, 11008, 128}, {1024, 4096, 4096, 256}, {8192, 4096, 4096, 256}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    fresh();
    cf_tv *a = tu_input(f, CF_BFLOAT16, 2, (int64_t[]){cases[i].m, cases[i].k});
    cf_tv *b = tu_input(f, CF_BFLOAT16, 2, (int64_t[]){cases[i].k, cases[i].n});
    cf_fusion_add_output(f, cf_matmul(f, a, b));
    SchedCall call = {0, NULL, &sched_device_h100};
    char why[SCHED_WHY_MAX] = "", want[128];
    SchedParams p;
    cr_assert(sched_row_named("matmul")->plan(f, &call, &p, why), "%s", why);
    snprintf(want, sizeof want, "tile=128x%dx64 warpgroups=2 mma=m64n%dk16 smem=operands stages=4 ", cases[i].bn,
             cases[i].bn);
    cr_expect(!strncmp(p.text, want, strlen(want)), "%lld x %lld @ %lld: %s", (long long)cases[i].m,
              (long long)cases[i].k, (long long)cases[i].n, p.text);
  }
}

/* The narrower tile a few rows take runs equal to the evaluator (odd sizes, on 132 SMs). */
Test(matmul_wgmma, a_narrow_block_tile_equals_the_evaluator) {
  KcInput in[2] = {{CF_BFLOAT16, 2, {19, 72}, NULL}, {CF_BFLOAT16, 2, {72, 200}, NULL}};
  cf_tv *a = tu_input(f, CF_BFLOAT16, 2, in[0].sizes), *b = tu_input(f, CF_BFLOAT16, 2, in[1].sizes);
  cf_fusion_add_output(f, cf_matmul(f, a, b));
  apply_on(&sched_device_h100, "tile=128x64x64 warpgroups=2 mma=m64n64k16 smem=operands stages=4 "
                               "fill=cp.async16,cp.async16 wgmma_wait=1"); /* narrow tiles: cp.async, measured faster */
  free(kc_check(f, 2, in, 2e-2));
}

/* The row's plan of f for an H100 (132 SMs, 50 MiB of L2) from its " wgmma_wait=1" on: the
 * pair stores, persistent windows and groups (static storage). */
static const char *h100_plan_tail(void) {
  static SchedParams p;
  SchedCall call = {0, NULL, &sched_device_h100};
  char why[SCHED_WHY_MAX] = "";
  cr_assert(sched_row_named("matmul")->plan(f, &call, &p, why), "%s", why);
  const char *tail = strstr(p.text, "wgmma_wait=1");
  return tail ? tail : p.text;
}

/* The plan's tail on 132 SMs with 50 MiB of L2 (scheduler/matmul_mma.c): the outputs store
 * pairs where N is a multiple of 256; where the tiles outnumber the SMs, a persistent
 * kernel (persist_of) of gm x gn blocks looping over windows of as many M and N tiles (gm
 * and gn dividing them, at most one block an SM and at least half of them, no more waves
 * than one block a tile, gn nearest 2 gm); else, where B is larger than the L2, groups of
 * M tiles (group_of): the largest of 16, 8, 4, 2 dividing them; neither for a batch.
 * Planned only (the sizes are a model's). */
Test(matmul_wgmma, the_plan_persists_or_groups_the_blocks) {
  static const struct { int64_t b, m, k, n; const char *tail; } cases[] = {
      {0, 4096, 4096, 4096, "wgmma_wait=1 store=pairs persistent=8x16"}, /* 32 x 16 tiles: 8 x 16 blocks */
      {0, 8192, 8192, 8192, "wgmma_wait=1 store=pairs persistent=8x16"}, /* 64 x 32: 8 x 16 */
      {0, 8192, 11008, 4096, "wgmma_wait=1 store=pairs persistent=8x16"},
      {0, 1024, 8192, 8192, "wgmma_wait=1 store=pairs persistent=8x16"}, /* 8 x 32: 2 tiles a block */
      {0, 1000, 8192, 8192, "wgmma_wait=1 store=pairs persistent=8x16"}, /* the last M tile partial */
      {0, 640, 8192, 8192, "wgmma_wait=1 store=pairs persistent=5x16"}, /* 5 x 32: 5 x 16 blocks */
      {0, 8192, 4096, 11008, "wgmma_wait=1 store=pairs persistent=32x4"}, /* 64 x 43: 2 x 11 steps, 64 idle */
      {0, 1024, 4096, 4096, "wgmma_wait=1 store=pairs"},                /* 8 x 16 tiles: one wave */
      {4, 2048, 8192, 8192, "wgmma_wait=1 store=pairs"}};               /* a batch: neither */
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    fresh();
    int r = cases[i].b ? 3 : 2;
    int64_t sa[3] = {cases[i].b, cases[i].m, cases[i].k}, sb[3] = {cases[i].b, cases[i].k, cases[i].n};
    cf_tv *a = tu_input(f, CF_BFLOAT16, r, sa + 3 - r), *b = tu_input(f, CF_BFLOAT16, r, sb + 3 - r);
    cf_fusion_add_output(f, cf_matmul(f, a, b));
    const char *tail = h100_plan_tail();
    cr_expect(!strcmp(tail, cases[i].tail), "%lld x %lld x %lld @ %lld: %s", (long long)cases[i].b,
              (long long)cases[i].m, (long long)cases[i].k, (long long)cases[i].n, tail);
  }
}

/* A linear's weight [N, K] is a K-major B: it persists only in a window that divides the
 * tiles (persist_of: past the tiles it was measured slower), else its blocks take one tile
 * each, grouped where the weight is larger than the L2. Planned only (a model's sizes on
 * 132 SMs). */
Test(matmul_wgmma, a_linear_persists_only_in_a_window_dividing_its_tiles) {
  static const struct { int64_t m, k, n; const char *tail; } cases[] = {
      {4096, 4096, 4096, "wgmma_wait=1 store=pairs persistent=8x16"}, /* 32 x 16 tiles */
      {8192, 4096, 4096, "wgmma_wait=1 store=pairs persistent=8x16"}, /* 64 x 16 */
      {8192, 4096, 11008, "wgmma_wait=1 store=pairs group_m=16"},     /* 64 x 43: only 32x4 past N */
      {1024, 4096, 11008, "wgmma_wait=1 store=pairs group_m=8"}};     /* 8 x 43: 8x15 past N */
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    fresh();
    int64_t sx[2] = {cases[i].m, cases[i].k}, sw[2] = {cases[i].n, cases[i].k}, sb[1] = {cases[i].n};
    cf_tv *x = tu_input(f, CF_BFLOAT16, 2, sx), *w = tu_input(f, CF_BFLOAT16, 2, sw), *b = tu_input(f, CF_BFLOAT16, 1, sb);
    cf_fusion_add_output(f, cf_gelu(f, cf_linear(f, x, w, b)));
    const char *tail = h100_plan_tail();
    cr_expect(!strcmp(tail, cases[i].tail), "%lld x %lld -> %lld: %s", (long long)cases[i].m, (long long)cases[i].k,
              (long long)cases[i].n, tail);
  }
}

/* Groups of blocks run equal to the evaluator (an L2 of 1 KiB: B is larger; 16 SMs; 3 x 2 M tiles
 * of an odd M, 2 N tiles, a bias + gelu epilogue stored in pairs): block (x, y, z) takes M
 * tile z * 2 + x and N tile y, the TMA boxes and the stores read it so. */
Test(matmul_wgmma, grouped_blocks_equal_the_evaluator) {
  SchedDevice small_l2 = hopper;
  small_l2.l2_bytes = 1024;
  small_l2.sm_count = 16; /* as many SMs as tiles: no persistent window */
  KcInput in[3] = {{CF_BFLOAT16, 2, {700, 64}, NULL}, {CF_BFLOAT16, 2, {512, 64}, NULL}, {CF_BFLOAT16, 1, {512}, NULL}};
  cf_tv *x = tu_input(f, CF_BFLOAT16, 2, in[0].sizes), *w = tu_input(f, CF_BFLOAT16, 2, in[1].sizes);
  cf_tv *bias = tu_input(f, CF_BFLOAT16, 1, in[2].sizes);
  cf_fusion_add_output(f, cf_gelu(f, cf_linear(f, x, w, bias)));
  char want[256];
  snprintf(want, sizeof want, "%s group_m=2", params("tma", "tma"));
  apply_on(&small_l2, want);
  char *src = kc_check(f, 3, in, 3e-2);
  cr_expect(strstr(src, "(int)((((blockIdx.z * 2) + blockIdx.x) * 128))"), "%s", src);
  cr_expect(strstr(src, "(int)((blockIdx.y * 256))"), "%s", src);
  cr_expect(strstr(src, "*reinterpret_cast<Array<__nv_bfloat16, 2>*>(&T"), "%s", src);
  free(src);
}

/* bfloat16 [m, 320] @ [320, n] planned on dev as the TMA schedule with this tail (its
 * persistent window) and applied; equal to the evaluator, its source holding `holds`. */
static void persistent_case(const SchedDevice *dev, int64_t m, int64_t n, const char *tail, const char *holds) {
  fresh();
  KcInput in[2] = {{CF_BFLOAT16, 2, {m, 320}, NULL}, {CF_BFLOAT16, 2, {320, n}, NULL}};
  cf_tv *a = tu_input(f, CF_BFLOAT16, 2, in[0].sizes), *b = tu_input(f, CF_BFLOAT16, 2, in[1].sizes);
  cf_fusion_add_output(f, cf_matmul(f, a, b));
  char want[256];
  snprintf(want, sizeof want, "%s%s", params("tma", "tma"), tail);
  apply_on(dev, want);
  char *src = kc_check(f, 2, in, 3e-2);
  cr_expect(strstr(src, holds), "%s", src);
  free(src);
}

/* A persistent kernel runs equal to the evaluator (two SMs; scheduler/matmul_mma.c's
 * persist_of): 6 M tiles of an odd M (the last partial) and 2 N tiles are 1 x 2 blocks,
 * each looping over the 6 M tiles of its N tile; 2 M tiles and 3 N tiles are 2 x 1 blocks
 * looping over the 3 N tiles (the M and N windows are two serial loops, one of a single
 * step). K of 5 tiles against 4 stages: the barriers' stages and phases run on across the
 * tiles (lower/warp_specialize.c), which a count restarting at each tile would get wrong
 * (the next tile's first wait returning at once, or never). */
Test(matmul_wgmma, persistent_blocks_equal_the_evaluator) {
  static const struct { int64_t m, n; const char *tail; const char *tile; } cases[] = {
      {700, 512, " persistent=1x2", "(int)(((i0 + blockIdx.y) * 128))"},
      {200, 768, " persistent=2x1", "(int)(((i1 + blockIdx.x) * 256))"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    persistent_case(&hopper, cases[i].m, cases[i].n, cases[i].tail, cases[i].tile);
    if (i) continue;
    /* the split at the kernel's start, each side its own copy of the tile loops; the
     * producer's first S fills of the block wait for nothing, the readers' first release
     * of a tile frees the previous tile's last stage */
    char *ir = lowered_ir();
    cr_expect(strstr(ir, "SYNC\nIF (threadIdx.y >= 2) (concurrently with the else branch)\n"
                         "  SETMAXNREG -40\n"
                         "  IF (threadIdx.x == 0)\n"
                         "    FOR i0 in 0..6 (S)\n"
                         "      FOR i1 in 0..1 (S)\n"
                         "        FOR i14 in 0..5 (S)\n"
                         "          IF (((i0 * 5) + i14) >= 4)\n"
                         "            MBAR_WAIT cf_empty[((((i0 + i1) * 5) + i14) % 4)] parity ((((((i0 + i1) * 5) + i14) / 4) "
                         "+ 1) % 2)\n"), "%s", ir);
    cr_expect(strstr(ir, "ELSE\n  SETMAXNREG 232\n  FOR i0 in 0..6 (S)\n    FOR i1 in 0..1 (S)\n"), "%s", ir);
    cr_expect(strstr(ir, "            MBAR_WAIT T2_mbar[((((i0 + i1) * 5) + i2) % 4)] parity (((((i0 + i1) * 5) + i2) / 4) % 2)\n"),
              "%s", ir);
    cr_expect(strstr(ir, "            IF (((i0 * 5) + i2) >= 1)\n"
                         "              MBAR_ARRIVE cf_empty[(((((i0 + i1) * 5) + i2) - 1) % 4)]\n"), "%s", ir);
    free(ir);
  }
}

/* A persistent window that does not divide the tiles runs equal to the evaluator
 * (persist_of: the fewest steps, then the fewest idle tiles): 5 M tiles (the last partial)
 * x 2 N tiles on 4 SMs are 2 x 2 blocks in 3 M steps, the third step's second M tile past
 * M; 3 N tiles on 2 SMs are 1 x 2 blocks in 2 N steps, the second step's second N tile
 * past N. An idle block's TMA boxes lie wholly outside its operand (zeros, the full box
 * counted on the barrier, so the producer and the readers keep their phases) and its
 * stores are predicated off (the guard of rows, in eighths: 600 / 8 = 75; of N tiles). */
Test(matmul_wgmma, persistent_windows_past_the_tiles_equal_the_evaluator) {
  static const struct { int sms; int64_t m, n; const char *tail, *guard; } cases[] = {
      {4, 600, 512, " persistent=2x2", "(((((((i0 * 32) + (blockIdx.y * 16)) + (threadIdx.y * 8)) + ((threadIdx.x / 32) * 2)) + i11) < 75)"},
      {2, 100, 768, " persistent=1x2", "(((i1 * 2) + blockIdx.x) < 3)"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    SchedDevice dev = hopper;
    dev.sm_count = cases[i].sms;
    persistent_case(&dev, cases[i].m, cases[i].n, cases[i].tail, cases[i].guard);
  }
}

/* ---- the emulation shows a missing wait ---------------------------------------------------- */

/* The host emulation performs a wgmma at the wgmma.wait_group that retires it
 * (host_wgmma.h); the lowering hook removes every wait from the scheduled kernel. */
static void remove_wgmma_waits(KBlock *b) {
  for (int i = 0; i < b->len; i++) {
    KNode *n = b->items[i];
    if (n->kind == KN_WGMMA_WAIT) {
      kb_remove(b, i--);
      continue;
    }
    KBlock *inner[KN_MAX_BLOCKS];
    int nb = kn_blocks(n, inner);
    for (int k = 0; k < nb; k++) remove_wgmma_waits(inner[k]);
  }
}

static void no_wgmma_waits(const cf_kernel_info *k, void *user) {
  (void)user;
  remove_wgmma_waits(&((KKernel *)(void *)k)->body);
}

/* Without its waits, the kernel's wgmmas are never performed: the run is an error naming
 * the first warp and the eight wgmmas it left (two K tiles of four); with them, the
 * evaluator's values (plain() above). */
Test(matmul_wgmma, a_kernel_that_never_waits_for_its_wgmmas_is_an_error) {
  KcInput in[2] = {{CF_BFLOAT16, 2, {64, 128}, NULL}, {CF_BFLOAT16, 2, {128, 64}, NULL}};
  cf_tv *a = tu_input(f, CF_BFLOAT16, 2, in[0].sizes), *b = tu_input(f, CF_BFLOAT16, 2, in[1].sizes);
  cf_fusion_add_output(f, cf_matmul(f, a, b));
  apply_row("tma", "tma");
  DLManagedTensor *t[2], *got = NULL;
  const DLTensor *ins[2];
  for (int i = 0; i < 2; i++) ins[i] = &(t[i] = kc_make_input(&in[i], 7 + (uint64_t)i))->dl_tensor;
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cf_executor_set_lowering_hook(e, no_wgmma_waits, NULL);
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  cr_expect_eq(cf_executor_run(e, 2, ins, 1, &got), CF_ERR_RUNTIME);
  cr_expect(strstr(cf_executor_error(e), "wgmma: block (0,0,0) warp 0: 8 wgmma.mma_async issued and never waited for "
                                         "(wgmma.wait_group): the accumulator is undefined"),
            "%s", cf_executor_error(e));
  cf_executor_destroy(e);
  for (int i = 0; i < 2; i++) cf_tensor_free(t[i]);
  cf_tensor_free(got);
}

/* ---- one K tile's wgmmas in flight while the next issue ------------------------------------- */

/* By default the tiles are filled two K tiles ahead of four stages (a stage to spare), so
 * the main loop waits with wgmma.wait_group 1 and waits for all after the loop;
 * equal to the evaluator with cp.async fills (K 320: five K tiles) and with a scalar fill
 * (K 321: A's rows are not 16-byte vectors, written by st.shared as the loop runs). */
static void pipelined_matmul(int64_t m, int64_t k, int64_t n, const char *fa, const char *fb) {
  fresh();
  KcInput in[2] = {{CF_BFLOAT16, 2, {m, k}, NULL}, {CF_BFLOAT16, 2, {k, n}, NULL}};
  cf_tv *a = tu_input(f, CF_BFLOAT16, 2, in[0].sizes), *b = tu_input(f, CF_BFLOAT16, 2, in[1].sizes);
  cf_fusion_add_output(f, cf_matmul(f, a, b));
  apply_row(fa, fb);
  char *src = kc_check(f, 2, in, 2e-2);
  if (!strcmp(fa, "tma") && k > 64) { /* the readers release each stage after the wait that retires its wgmmas */
    const char *wait1 = strstr(src, "asm volatile(\"wgmma.wait_group.sync.aligned %0;\" :: \"n\"(1) : \"memory\");");
    const char *release = strstr(src, "if ((i0 >= 1)) {");
    cr_expect(wait1 && release && release > wait1 && strstr(release, "cf_mbar_arrive(&cf_empty[((i0 - 1) % 4)]);"), "%s", src);
    cr_expect(strstr(src, "if ((i11 >= 4)) {"), "%s", src);
    cr_expect(strstr(src, "cf_mbar_wait(&cf_empty[(i11 % 4)], (unsigned)((((i11 / 4) + 1) % 2)));"), "%s", src);
  }
  cr_expect(strstr(src, "asm volatile(\"wgmma.wait_group.sync.aligned %0;\" :: \"n\"(1) : \"memory\");"), "%s", src);
  cr_expect(strstr(src, "asm volatile(\"wgmma.wait_group.sync.aligned %0;\" :: \"n\"(0) : \"memory\");"), "%s", src);
  free(src);
}

Test(matmul_wgmma, a_pipelined_main_loop_equals_the_evaluator) {
  pipelined_matmul(130, 320, 136, "tma", "tma");
  pipelined_matmul(70, 321, 136, "scalar(K=321)", "cp.async16");
  pipelined_matmul(64, 64, 64, "tma", "tma"); /* one K tile: the prologue's alone */
  setenv("CFUSER_WGMMA_TMA", "0", 1); /* the threads' cp.async fills */
  pipelined_matmul(130, 320, 136, "cp.async16", "cp.async16");
  unsetenv("CFUSER_WGMMA_TMA");
}

/* Keeping a group in flight needs the stage to spare: the schedule of
 * CFUSER_WGMMA_PIPELINE=0 (tiles filled three K tiles ahead of four stages, a wait for all
 * in the loop; its params without " wgmma_wait=1") with its in-loop wait loosened to 1
 * (and a wait for all after the loop, through the lowering hook) refills the stage the pending wgmmas
 * still read, which the emulation shows: wrong elements; untouched, it is right. A scalar
 * fill (K 321) writes its stage as the loop runs, as the GPU's would. */
static Arena *g_kernel_arena;

/* The wait inside a loop becomes wait_group 1, and a wait for all follows that loop. */
static void loosen_wgmma_wait(KBlock *b) {
  for (int i = 0; i < b->len; i++) {
    KNode *n = b->items[i];
    if (n->kind != KN_FOR) continue;
    KBlock *body = &n->u.loop.body;
    for (int j = 0; j < body->len; j++)
      if (body->items[j]->kind == KN_WGMMA_WAIT && body->items[j]->u.async.pending == 0) {
        KNode *all = kir_clone(g_kernel_arena, body->items[j]);
        body->items[j]->u.async.pending = 1;
        kb_insert(g_kernel_arena, b, i + 1, all);
        return;
      }
    loosen_wgmma_wait(body);
  }
}

static void wgmma_wait_one(const cf_kernel_info *k, void *user) {
  (void)user;
  KKernel *kk = (KKernel *)(void *)k;
  g_kernel_arena = kk->arena;
  loosen_wgmma_wait(&kk->body);
}

/* Elements of the default schedule's result that differ from the evaluator, run on the
 * host with the hook (or without). */
static int wrong_with(cf_lowering_hook hook) {
  fresh();
  KcInput in[2] = {{CF_BFLOAT16, 2, {70, 321}, NULL}, {CF_BFLOAT16, 2, {321, 136}, NULL}};
  cf_tv *a = tu_input(f, CF_BFLOAT16, 2, in[0].sizes), *b = tu_input(f, CF_BFLOAT16, 2, in[1].sizes);
  cf_fusion_add_output(f, cf_matmul(f, a, b));
  setenv("CFUSER_WGMMA_PIPELINE", "0", 1);
  apply_on(&hopper, "tile=128x256x64 warpgroups=2 mma=m64n256k16 smem=operands stages=4 fill=scalar(K=321),cp.async16");
  unsetenv("CFUSER_WGMMA_PIPELINE");
  DLManagedTensor *t[2], *got = NULL, *want = NULL;
  const DLTensor *ins[2];
  for (int i = 0; i < 2; i++) ins[i] = &(t[i] = kc_make_input(&in[i], 11 + (uint64_t)i))->dl_tensor;
  cr_assert_eq(cf_fusion_evaluate(f, 2, ins, &want), CF_OK, "%s", cf_fusion_error(f));
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  if (hook) cf_executor_set_lowering_hook(e, hook, NULL);
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  cr_assert_eq(cf_executor_run(e, 2, ins, 1, &got), CF_OK, "%s", cf_executor_error(e));
  int bad = 0;
  for (int64_t i = 0; i < 70 * 136; i++) {
    double g = cf_tensor_get(&got->dl_tensor, i), w = cf_tensor_get(&want->dl_tensor, i);
    bad += !(g - w <= 2e-2 * (1 + (w < 0 ? -w : w)) && w - g <= 2e-2 * (1 + (w < 0 ? -w : w)));
  }
  cf_executor_destroy(e);
  for (int i = 0; i < 2; i++) cf_tensor_free(t[i]);
  cf_tensor_free(got), cf_tensor_free(want);
  return bad;
}

Test(matmul_wgmma, a_wgmma_in_flight_needs_a_stage_to_spare) {
  cr_expect_eq(wrong_with(NULL), 0);
  cr_expect_gt(wrong_with(wgmma_wait_one), 0);
}

