/* The matmul row on Blackwell (scheduler/matmul_tcgen05.c with a device of compute
 * capability 10.0): tcgen05.mma m128n128k16 issued by one thread from shared tiles in the
 * descriptors' canonical layouts (lower/mma_tcgen05.c), its accumulator in tensor memory,
 * committed to an mbarrier every thread waits on, read by tcgen05.ld in the epilogue; run
 * by the host backend's emulation from the descriptors alone (codegen/runtime/
 * host_tcgen05.h). bfloat16 and half matmuls and linears of odd and exact shapes, with a
 * bias + gelu epilogue, equal to the evaluator on the host backend (exactly where the
 * inputs are small integers, whose products and sums float holds exactly), compiled by
 * NVRTC for sm_100a; the CUDA text holds the instruction, its descriptors and instruction
 * descriptor, the commit and the wait; a descriptor's bits, exactly. */
#include <criterion/criterion.h>
#include <string.h>

#include "kernels/kernel_check.h"
#include "kernel_ir.h"
#include "lower/lower.h"
#include "scheduler/registry.h"

static cf_fusion *f;

/* A Blackwell of two SMs (the schedule has one tile shape whatever the SM count). */
static SchedDevice blackwell;
static void setup(void) {
  f = cf_fusion_create();
  blackwell = sched_device_b200;
  blackwell.sm_count = 2;
}
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(matmul_tcgen05, .init = setup, .fini = teardown);

static void fresh(void) {
  cf_fusion_destroy(f);
  f = cf_fusion_create();
}

static const char *params(const char *fa, const char *fb) {
  static char buf[256];
  snprintf(buf, sizeof buf, "tile=128x128x64 threads=128 mma=tcgen05.m128n128k16 acc=tmem smem=operands stages=4 "
           "fill=%s,%s epilogue=tcgen05.ld.x32", fa, fb);
  return buf;
}

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

/* The sm_100a source (compiled by NVRTC when present) and the host backend's outputs
 * against the evaluator's (tol 0: exactly). */
static char *check(int nin, const KcInput *in, double tol) {
  cr_assert_eq(cf_fusion_status(f), CF_OK, "scheduling failed: %s", cf_fusion_error(f));
  DLManagedTensor *host_in[TU_MAX_IO] = {0}, *want[TU_MAX_IO] = {0};
  const DLTensor *ins[TU_MAX_IO];
  for (int i = 0; i < nin; i++) {
    host_in[i] = kc_make_input(&in[i], 77 + (uint64_t)i);
    ins[i] = &host_in[i]->dl_tensor;
  }
  cr_assert_eq(cf_fusion_evaluate(f, nin, ins, want), CF_OK, "evaluator: %s", cf_fusion_error(f));
  if (getenv("CFUSER_MATMUL_PRINT")) cf_fusion_print_transforms(f, stdout), cf_fusion_print_kernel(f, stdout);
  char *src = kc_compile_for(f, "sm_100a");
  kc_run_backend(f, CF_BACKEND_HOST, nin, host_in, want, tol);
  for (int i = 0; i < TU_MAX_IO; i++) {
    cf_tensor_free(host_in[i]);
    cf_tensor_free(want[i]);
  }
  return src;
}

/* The fill a tile of an operand of contiguous extent e gets: 16-byte vectors when e is a
 * multiple of 8 (cp.async), else one element a thread. */
static void fill_name(char *buf, size_t n, char role, int64_t e) {
  if (e % 8) snprintf(buf, n, "scalar(%c=%lld)", role, (long long)e);
  else snprintf(buf, n, "cp.async16");
}

/* matmul [m, k] @ [k, n] in dt: A K-major, B MN-major (its transpose bit). */
static char *plain(cf_dtype dt, int64_t m, int64_t k, int64_t n, double tol) {
  fresh();
  char fa[32], fb[32];
  fill_name(fa, sizeof fa, 'K', k);
  fill_name(fb, sizeof fb, 'N', n);
  KcInput in[2] = {{dt, 2, {m, k}, NULL}, {dt, 2, {k, n}, NULL}};
  cf_tv *a = tu_input(f, dt, 2, in[0].sizes), *b = tu_input(f, dt, 2, in[1].sizes);
  cf_fusion_add_output(f, cf_matmul(f, a, b));
  apply_on(&blackwell, params(fa, fb));
  return check(2, in, tol);
}

/* Odd M, N, K (two blocks of M, a partial N tile, K of one and a half K tiles, the scalar
 * fill of N = 72's neighbours): the tiles are zero-filled past the edges, which the
 * instruction reads whole. */
Test(matmul_tcgen05, odd_shapes_equal_the_evaluator) {
  free(plain(CF_BFLOAT16, 130, 100, 72, 1e-2));
  free(plain(CF_HALF, 130, 100, 72, 1e-2));
  free(plain(CF_HALF, 33, 40, 17, 1e-2));
}

/* More K tiles than the stages fill ahead (K 320: five K tiles of 64, three filled before
 * the loop): iteration i refills the stage iteration i - 1 read, after the wait on the
 * commit of its instructions; A's rows of K 321 are not 16-byte vectors (one element a
 * thread, written as the loop runs). */
Test(matmul_tcgen05, stages_refilled_after_their_instructions_complete) {
  free(plain(CF_BFLOAT16, 130, 320, 136, 2e-2));
  free(plain(CF_HALF, 70, 321, 136, 2e-2));
}

Test(matmul_tcgen05, exact_tiles_equal_the_evaluator) {
  free(plain(CF_BFLOAT16, 256, 128, 256, 1e-2));
  free(plain(CF_HALF, 256, 128, 256, 1e-2));
}

/* ---- exactly: small integers ------------------------------------------------------------- */

/* The half bits of a small integer v (|v| <= 2048: exact). */
static uint16_t half_of(int v) {
  if (!v) return 0;
  unsigned a = (unsigned)(v < 0 ? -v : v), e = 0;
  while (a >> (e + 1)) e++;
  return (uint16_t)((v < 0) << 15 | (e + 15) << 10 | ((a << (10 - e)) & 0x3FFu));
}

/* The bfloat16 bits of a small integer (the upper half of its float: exact). */
static uint16_t bf16_of(int v) {
  float x = (float)v;
  uint32_t u;
  memcpy(&u, &x, 4);
  return (uint16_t)(u >> 16);
}

/* Inputs of integers in [-3, 3]: their products and sums over K (at most 9 K, far below
 * 2^24) are exact in float, so the kernel's float accumulation in any order is the
 * evaluator's. */
static DLManagedTensor *integers(const KcInput *in, unsigned seed) {
  DLManagedTensor *t = cf_tensor_host(in->dtype, in->rank, in->sizes);
  uint16_t *d = t->dl_tensor.data;
  int64_t n = cf_tensor_numel(&t->dl_tensor);
  for (int64_t i = 0; i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    int v = (int)(seed >> 16) % 7 - 3;
    d[i] = in->dtype == CF_HALF ? half_of(v) : bf16_of(v);
  }
  return t;
}

/* The host backend's outputs equal the evaluator's, bit for bit. */
static void check_exactly(int nin, const KcInput *in) {
  DLManagedTensor *t[TU_MAX_IO] = {0}, *want = NULL, *got = NULL;
  const DLTensor *ins[TU_MAX_IO];
  for (int i = 0; i < nin; i++) ins[i] = &(t[i] = integers(&in[i], 11u + (unsigned)i))->dl_tensor;
  cr_assert_eq(cf_fusion_evaluate(f, nin, ins, &want), CF_OK, "evaluator: %s", cf_fusion_error(f));
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  cr_assert_eq(cf_executor_run(e, nin, ins, 1, &got), CF_OK, "%s", cf_executor_error(e));
  cr_expect(cf_tensor_equal(&got->dl_tensor, &want->dl_tensor), "the kernel differs from the evaluator");
  cf_executor_destroy(e);
  for (int i = 0; i < nin; i++) cf_tensor_free(t[i]);
  cf_tensor_free(want), cf_tensor_free(got);
}

Test(matmul_tcgen05, small_integers_equal_the_evaluator_exactly) {
  static const int64_t shapes[][3] = {{130, 100, 72}, {256, 128, 256}, {64, 448, 40}};
  static const cf_dtype dts[] = {CF_BFLOAT16, CF_HALF};
  for (int s = 0; s < 3; s++)
    for (int d = 0; d < 2; d++) {
      fresh();
      const int64_t *z = shapes[s];
      KcInput in[2] = {{dts[d], 2, {z[0], z[1]}, NULL}, {dts[d], 2, {z[1], z[2]}, NULL}};
      cf_tv *a = tu_input(f, dts[d], 2, in[0].sizes), *b = tu_input(f, dts[d], 2, in[1].sizes);
      cf_fusion_add_output(f, cf_matmul(f, a, b));
      char fa[32], fb[32];
      fill_name(fa, sizeof fa, 'K', z[1]);
      fill_name(fb, sizeof fb, 'N', z[2]);
      apply_on(&blackwell, params(fa, fb));
      check_exactly(2, in);
    }
}

/* ---- linears: B K-major, a bias + gelu epilogue ------------------------------------------- */

/* x [m, k] @ w[n, k]^T + bias[n], then gelu when `gelu`: w is K-contiguous, so B's tile is
 * K-major as A's (no transpose bit). */
static void linear(cf_dtype dt, int64_t m, int64_t k, int64_t n, bool gelu, KcInput in[3]) {
  fresh();
  in[0] = (KcInput){dt, 2, {m, k}, NULL}, in[1] = (KcInput){dt, 2, {n, k}, NULL}, in[2] = (KcInput){dt, 1, {n}, NULL};
  cf_tv *x = tu_input(f, dt, 2, in[0].sizes), *w = tu_input(f, dt, 2, in[1].sizes), *bias = tu_input(f, dt, 1, in[2].sizes);
  cf_tv *y = cf_linear(f, x, w, bias);
  cf_fusion_add_output(f, gelu ? cf_gelu(f, y) : y);
  char fk[32];
  fill_name(fk, sizeof fk, 'K', k);
  apply_on(&blackwell, params(fk, fk));
}

Test(matmul_tcgen05, linear_bias_gelu_epilogue) {
  static const cf_dtype dts[] = {CF_BFLOAT16, CF_HALF};
  for (int d = 0; d < 2; d++) {
    KcInput in[3];
    linear(dts[d], 130, 100, 72, true, in);
    char *src = check(3, in, 2e-2);
    cr_expect(strstr(src, "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;"), "%s", src);
    free(src);
  }
  KcInput in[3];
  linear(CF_BFLOAT16, 256, 128, 256, true, in);
  free(check(3, in, 2e-2));
}

Test(matmul_tcgen05, linear_bias_of_small_integers_equals_the_evaluator_exactly) {
  KcInput in[3];
  linear(CF_BFLOAT16, 130, 104, 72, false, in);
  check_exactly(3, in);
  linear(CF_HALF, 256, 128, 256, false, in);
  check_exactly(3, in);
}

/* A batch axis on blockIdx.z. */
Test(matmul_tcgen05, batched) {
  KcInput in[2] = {{CF_HALF, 3, {3, 19, 40}, NULL}, {CF_HALF, 3, {3, 40, 24}, NULL}};
  cf_tv *a = tu_input(f, CF_HALF, 3, in[0].sizes), *b = tu_input(f, CF_HALF, 3, in[1].sizes);
  cf_fusion_add_output(f, cf_matmul(f, a, b));
  apply_on(&blackwell, params("cp.async16", "cp.async16"));
  free(check(2, in, 1e-2));
}

/* ---- the kernel's text ------------------------------------------------------------------- */

/* The exact tile's CUDA text and kernel IR: per K tile of 64, the barrier with
 * fence.proxy.async before it, tcgen05.fence::after_thread_sync, four tcgen05.mmas issued
 * by thread 0 (one per 16 of K; A K-major: SBO 1024, 128-byte swizzle, 0x4000404000010000;
 * B of matmul's [K, N] MN-major, LBO 8192 between its 64-column blocks:
 * 0x4000404002000000; the instruction descriptor 0x08210490: f32 D, bf16 A and B, B
 * MN-major, N 128, M 128), accumulating from the second K step on, the commit to the
 * mbarrier and every thread's wait on its phase; the epilogue's tcgen05.ld.32x32b.x32. */
Test(matmul_tcgen05, kernel_text_has_the_instruction_its_commit_and_wait) {
  KcInput in[2] = {{CF_BFLOAT16, 2, {128, 128}, NULL}, {CF_BFLOAT16, 2, {128, 128}, NULL}};
  cf_tv *a = tu_input(f, CF_BFLOAT16, 2, in[0].sizes), *b = tu_input(f, CF_BFLOAT16, 2, in[1].sizes);
  cf_fusion_add_output(f, cf_matmul(f, a, b));
  apply_on(&blackwell, params("cp.async16", "cp.async16"));
  char *src = check(2, in, 1e-2);
  cr_expect(strstr(src, "alignas(1024) extern __shared__ char cf_smem[];"), "%s", src);
  cr_expect(strstr(src, "cf_mbar_init(&T7_mma_bar0[0], 1u);"), "%s", src);
  cr_expect(strstr(src, "asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");\n    __syncthreads();\n"
                        "    asm volatile(\"tcgen05.fence::after_thread_sync;\" ::: \"memory\");\n"
                        "    for (cf_index_t i3 = 0; i3 < 4; ++i3) {\n      if (cf_linear_tid() == 0) {\n"), "%s", src);
  cr_expect(strstr(src, "const unsigned long long cft_da = 0x4000404000010000ull | (unsigned long long)(((unsigned)"
                        "__cvta_generic_to_shared(&T2["), "%s", src);
  cr_expect(strstr(src, "const unsigned long long cft_db = 0x4000404002000000ull |"), "%s", src);
  cr_expect(strstr(src, "const uint32_t cft_tmem = (tmem_slot0[0] + ((uint32_t)((0) + 0) << 16) + (uint32_t)((0) * 4 / 4 "
                        "+ 0));"), "%s", src);
  cr_expect(strstr(src, "asm volatile(\"{ .reg .pred p; setp.ne.b32 p, %4, 0; tcgen05.mma.cta_group::1.kind::f16 [%0], "
                        "%1, %2, %3, p; }\" :: \"r\"(cft_tmem), \"l\"(cft_da), \"l\"(cft_db), \"r\"(0x08210490u), "
                        "\"r\"((unsigned)((i0 + (i3 != 0)))) : \"memory\");"), "%s", src);
  cr_expect(strstr(src, "    if (cf_linear_tid() == 0) asm volatile(\"tcgen05.commit.cta_group::1.mbarrier::arrive::one."
                        "shared::cluster.b64 [%0];\" :: \"r\"((uint32_t)__cvta_generic_to_shared(&T7_mma_bar0[0])) : "
                        "\"memory\");\n    cf_mbar_wait(&T7_mma_bar0[0], (unsigned)((i0 % 2)));\n"
                        "    asm volatile(\"tcgen05.fence::after_thread_sync;\" ::: \"memory\");\n"), "%s", src);
  cr_expect(strstr(src, "tcgen05.ld.sync.aligned.32x32b.x32.b32"), "%s", src);
  free(src);
  char *ir = test_kernel_ir(f);
  cr_expect(strstr(ir, "FENCE_PROXY_ASYNC SYNC\n"), "%s", ir);
  cr_expect(strstr(ir, "TCGEN05_FENCE after_thread_sync\n"), "%s", ir);
  cr_expect(strstr(ir, "TCGEN05_MMA m128n128k16.__bfloat idesc 0x08210490 T7[lane=0, col=0] += desc T2["), "%s", ir);
  cr_expect(strstr(ir, "|0x4000404000010000 x desc T4["), "%s", ir);
  cr_expect(strstr(ir, "|0x4000404002000000 (MN-major)\n"), "%s", ir);
  cr_expect(strstr(ir, "TCGEN05_COMMIT T7_mma_bar0[0]\n"), "%s", ir);
  cr_expect(strstr(ir, "MBAR_WAIT T7_mma_bar0[0] parity (i0 % 2)\n"), "%s", ir);
  free(ir);
}

/* ---- the descriptors, bit by bit ------------------------------------------------------------ */

/* Shared-memory descriptors (start 0): LBO >> 4 at bit 16, SBO >> 4 at 32, 0b001 at 46,
 * the layout type at 61 (2: 128-byte swizzle, 4: 64-byte, 6: 32-byte); the instruction
 * descriptor: f32 D (bit 4), bf16 A and B (bits 7, 10), A and B MN-major (15, 16), N >> 3
 * at 17, M >> 4 at 24. */
Test(matmul_tcgen05, descriptor_bits) {
  cr_expect_eq(lower_tcgen05_desc_bits(16, 1024, 3), 0x4000404000010000ull); /* A [128, 64] K-major */
  cr_expect_eq(lower_tcgen05_desc_bits(8192, 1024, 3), 0x4000404002000000ull); /* B [2, 64, 64] MN-major */
  cr_expect_eq(lower_tcgen05_desc_bits(16, 512, 2), 0x8000402000010000ull);
  cr_expect_eq(lower_tcgen05_desc_bits(16, 256, 1), 0xC000401000010000ull);
  cr_expect_eq(lower_tcgen05_idesc(CF_BFLOAT16, 128, 128, false, true), 0x08210490u);
  cr_expect_eq(lower_tcgen05_idesc(CF_HALF, 128, 256, false, false), 0x08400010u);
  cr_expect_eq(lower_tcgen05_idesc(CF_HALF, 128, 16, true, true), 0x08058010u);
}

/* ---- the emulation shows a wrong descriptor and a missing wait ------------------------------ */

/* A lowering hook that changes every tcgen05.mma's B descriptor's SBO by 16 bytes, or that
 * removes every mbarrier wait. */
static void sabotage(KBlock *b, bool sbo) {
  for (int i = 0; i < b->len; i++) {
    KNode *n = b->items[i];
    if (sbo && n->kind == KN_MMA && ir_mma_is_tcgen05(n->u.mma.instr)) n->u.mma.desc[1] += (uint64_t)1 << 32;
    if (!sbo && n->kind == KN_MBAR_WAIT) {
      kb_remove(b, i--);
      continue;
    }
    KBlock *inner[KN_MAX_BLOCKS];
    int nb = kn_blocks(n, inner);
    for (int k = 0; k < nb; k++) sabotage(inner[k], sbo);
  }
}

static void wrong_sbo(const cf_kernel_info *k, void *user) {
  (void)user;
  sabotage(&((KKernel *)(void *)k)->body, true);
}

static void no_waits(const cf_kernel_info *k, void *user) {
  (void)user;
  sabotage(&((KKernel *)(void *)k)->body, false);
}

/* The host run of f (integer inputs) with the hook: its status and error, and whether the
 * output equals the evaluator's. */
static cf_status run_hooked(cf_lowering_hook hook, const KcInput *in, bool *equal, char *err, size_t nerr) {
  DLManagedTensor *t[2], *want = NULL, *got = NULL;
  const DLTensor *ins[2];
  for (int i = 0; i < 2; i++) ins[i] = &(t[i] = integers(&in[i], 5u + (unsigned)i))->dl_tensor;
  cr_assert_eq(cf_fusion_evaluate(f, 2, ins, &want), CF_OK, "%s", cf_fusion_error(f));
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cf_executor_set_lowering_hook(e, hook, NULL);
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  cf_status s = cf_executor_run(e, 2, ins, 1, &got);
  snprintf(err, nerr, "%s", s ? cf_executor_error(e) : "");
  *equal = !s && cf_tensor_equal(&got->dl_tensor, &want->dl_tensor);
  cf_executor_destroy(e);
  for (int i = 0; i < 2; i++) cf_tensor_free(t[i]);
  cf_tensor_free(want), cf_tensor_free(got);
  return s;
}

/* The emulation reads the operands through the descriptors as the hardware would: B's SBO
 * 16 bytes off reads other elements (a wrong result, not a silently right one); without
 * the waits on the commits' mbarrier no instruction is ever performed, which the block's
 * end reports (two K tiles of four instructions and two commits). */
Test(matmul_tcgen05, the_emulation_shows_a_wrong_descriptor_and_a_missing_wait) {
  KcInput in[2] = {{CF_BFLOAT16, 2, {128, 128}, NULL}, {CF_BFLOAT16, 2, {128, 128}, NULL}};
  cf_tv *a = tu_input(f, CF_BFLOAT16, 2, in[0].sizes), *b = tu_input(f, CF_BFLOAT16, 2, in[1].sizes);
  cf_fusion_add_output(f, cf_matmul(f, a, b));
  apply_on(&blackwell, params("cp.async16", "cp.async16"));
  bool equal;
  char err[512];
  cr_expect_eq(run_hooked(wrong_sbo, in, &equal, err, sizeof err), CF_OK, "%s", err);
  cr_expect(!equal, "a wrong SBO must read other elements");
  cr_expect_eq(run_hooked(no_waits, in, &equal, err, sizeof err), CF_ERR_RUNTIME);
  cr_expect(strstr(err, "tcgen05.mma: block (0,0,0): 10 tcgen05 operations issued and never completed (no thread waited "
                        "on the mbarrier of a tcgen05.commit after them): the accumulator is undefined"), "%s", err);
}

/* ---- the row's choices ------------------------------------------------------------------------ */

/* Hopper keeps wgmma and a device of unknown architecture mma.sync; an empty K (D = 0,
 * which no instruction writes) keeps mma.sync on Blackwell too. */
Test(matmul_tcgen05, only_blackwell_runs_tcgen05) {
  cf_tv *a = tu_input(f, CF_BFLOAT16, 2, (int64_t[]){128, 64}), *b = tu_input(f, CF_BFLOAT16, 2, (int64_t[]){64, 128});
  cf_fusion_add_output(f, cf_matmul(f, a, b));
  const SchedRow *r = sched_row_named("matmul");
  char why[SCHED_WHY_MAX] = "";
  SchedParams p;
  SchedCall call = {0, NULL, sched_device_default()};
  cr_assert(r->plan(f, &call, &p, why), "%s", why);
  cr_expect_str_eq(p.text, tu_mma_params("cp.async16", "cp.async16"));
  call.dev = &sched_device_h100;
  cr_assert(r->plan(f, &call, &p, why), "%s", why);
  cr_expect(strstr(p.text, "mma=m64n"), "%s", p.text);
  fresh();
  a = tu_input(f, CF_BFLOAT16, 2, (int64_t[]){128, 0}), b = tu_input(f, CF_BFLOAT16, 2, (int64_t[]){0, 128});
  cf_fusion_add_output(f, cf_matmul(f, a, b));
  call.dev = &blackwell;
  if (r->plan(f, &call, &p, why)) cr_expect(!strstr(p.text, "tcgen05"), "%s", p.text);
}

/* ---- cf_mma_tile by hand ------------------------------------------------------------------- */

/* tcgen05's accumulator is tensor memory: a sum elsewhere is refused, naming the call. */
Test(matmul_tcgen05, mma_tile_wants_the_accumulator_in_tensor_memory) {
  cf_tv *a = tu_input(f, CF_HALF, 2, (int64_t[]){128, 16}), *b = tu_input(f, CF_HALF, 2, (int64_t[]){16, 32});
  cf_tv *r = cf_matmul(f, a, b);
  cf_tv *sum = ir_tv_handle(ir_tv(r)->def->in[0]);
  cf_fusion_add_output(f, r);
  cf_reorder_all(f, sum, 3, (int[]){0, 2, 1});
  cr_expect_eq(cf_mma_tile(f, sum, 0, CF_MMA_TCGEN05_M128NK16), CF_ERR_INVALID_SCHEDULE);
  cr_expect_str_eq(cf_fusion_error(f), "mma_tile: m128nNk16 accumulates in tensor memory for T7; T7 is in Local memory "
                                       "(cf_set_memory_type(f, T7, CF_MEM_TENSOR) first) for T7_l_float[iS19{128}, "
                                       "iS21{32}, rS20{16}]");
}

/* The accumulator's layout is the hardware's (row m in lane m, column n in column n): the
 * scheduled accumulator given the allocation domain [.., N tile | M tile, ..] instead (128
 * lanes of the tile's columns: it fits tensor memory) is refused by the lowering rather
 * than written elsewhere than the schedule says (the epilogue's tcgen05.ld, which now
 * breaks the 32x32b rule, is otherwise refused first). */
Test(matmul_tcgen05, the_lowering_refuses_an_accumulator_of_another_layout) {
  cf_tv *a = tu_input(f, CF_BFLOAT16, 2, (int64_t[]){128, 64}), *b = tu_input(f, CF_BFLOAT16, 2, (int64_t[]){64, 128});
  cf_fusion_add_output(f, cf_matmul(f, a, b));
  apply_on(&blackwell, params("cp.async16", "cp.async16"));
  cf_tv *acc = NULL;
  for (int i = 0; i < cf_fusion_num_tvs(f); i++)
    if (cf_tv_memory_type(cf_fusion_tv(f, i)) == CF_MEM_TENSOR) acc = cf_fusion_tv(f, i);
  cr_assert_not_null(acc);
  int n = cf_tv_naxes(acc); /* [Mo, No, Ko, KW, M{128}, N{128}, K{16}] */
  cf_id *ids[CF_MAX_RANK + 8];
  for (int i = 0; i < n; i++) ids[i] = cf_tv_axis(acc, i);
  ids[n - 3] = cf_tv_axis(acc, n - 2), ids[n - 2] = cf_tv_axis(acc, n - 3);
  cr_assert_eq(cf_set_allocation_domain(f, acc, n, ids, NULL), CF_OK, "%s", cf_fusion_error(f));
  cr_assert_eq(cf_set_tmem_dim_sep_pos(f, acc, n - 2), CF_OK, "%s", cf_fusion_error(f));
  /* the epilogue's tcgen05.ld then breaks the 32x32b rule too: that check is skipped here */
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST, .skip_tmem_validation = true});
  cr_expect_eq(cf_executor_compile(e, f), CF_ERR_INVALID_SCHEDULE);
  cr_expect(strstr(cf_executor_error(e), "its accumulator must hold row m of the tile in lane m and column n in column n "
                                         "(its dim-sep position between the M and N tiles"), "%s", cf_executor_error(e));
  cf_executor_destroy(e);
}

/* Symbolic sizes (one kernel for every size): equal to the evaluator at 70 x 40 x 24; at K
 * 0 the accumulator would stay unwritten (no instruction writes D = 0), which a run-time
 * check refuses by name. */
Test(matmul_tcgen05, symbolic_sizes_and_an_empty_k) {
  cf_tv *a = tu_input(f, CF_HALF, 2, NULL), *b = tu_input(f, CF_HALF, 2, NULL);
  cf_fusion_add_output(f, cf_matmul(f, a, b));
  apply_on(&blackwell, params("scalar(K symbolic)", "scalar(N symbolic)"));
  KcInput in[2] = {{CF_HALF, 2, {70, 40}, NULL}, {CF_HALF, 2, {40, 24}, NULL}};
  free(check(2, in, 1e-2));
  KcInput empty[2] = {{CF_HALF, 2, {70, 0}, NULL}, {CF_HALF, 2, {0, 24}, NULL}};
  DLManagedTensor *t[2], *got = NULL;
  const DLTensor *ins[2];
  for (int i = 0; i < 2; i++) ins[i] = &(t[i] = cf_tensor_host(CF_HALF, 2, empty[i].sizes))->dl_tensor;
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  cr_expect_neq(cf_executor_run(e, 2, ins, 1, &got), CF_OK);
  cr_expect(strstr(cf_executor_error(e), "its K is empty, and D = 0 is no instruction's"), "%s", cf_executor_error(e));
  cf_executor_destroy(e);
  for (int i = 0; i < 2; i++) cf_tensor_free(t[i]);
  cf_tensor_free(got);
}
