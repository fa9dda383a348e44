/* Ports of nvFuser's tests/cpp/test_matmul_scheduler.cpp (its MatmulSchedulerTest,
 * PrecisionParametrizedTest, MatmulSchedulerTestWithLayout and MatmulFusionTest), by idea:
 * each builds nvFuser's fusion (its fusedMultiplySum as cfuser's mul-sum form, the
 * operands broadcast to [batch?, M, N, K] and cast to float, nvFuser's implicit casts of
 * half operands written out; its matmul and linear as cf_matmul and cf_linear), runs it
 * through define and run on the host backend against the evaluator, and asserts the
 * scheduling nvFuser asserts: one segment taken by the matmul row where nvFuser's
 * checkUnsegmentedVectorization wants one Matmul segment, and the segments nvFuser makes
 * elsewhere (where cfuser's differ, the test says so and why). nvFuser's sizes are scaled
 * down by 8 (M = 504, N = 136, K = 1024 or 248 become 63, 17, 128 or 31: odd M and N, one
 * partial 128 x 128 tile). Float outputs are held to nvFuser's tolerance or tighter (its
 * looser ones cover an ATen reference that rounds differently; the evaluator computes what
 * the fusion says), half and bfloat16 outputs to 1e-2 (a float sum rounded to 16 bits
 * against the evaluator's double sum). nvFuser's vector widths are not checked: the
 * matmul row does not vectorize yet. */
#include <string.h>

#include "cfuser/domain.h"
#include "nvfuser/nvf_util.h"

TestSuite(matmul_sched_ports, .init = nv_setup, .fini = nv_teardown);

/* The row's params for a TT product of DIMS: A [M, K] filled by 16-byte vectors (K = 128);
 * B stored [K, N], transposed in the fusion: a permute of its input, one element a thread. */
#define TT_PARAMS tu_mma_params("cp.async16", "scalar(a permute of T2)")

/* nvFuser's MmaLayout: A stored [M, K] (T) or [K, M] (N), B stored [K, N] (T) or [N, K] (N). */
typedef enum { TT, TN, NT, NN } MsLayout;

typedef struct MsDims { int64_t m, n, k, batch; } MsDims; /* batch 0: none */
static const MsDims DIMS = {63, 17, 128, 0}, DIMS_K248 = {63, 17, 31, 0};

static cf_tv *ms_input(cf_dtype dt, int rank, const int64_t *sizes, KcInput *in) {
  *in = (KcInput){dt, rank, {0}, NULL};
  memcpy(in->sizes, sizes, sizeof(int64_t) * (size_t)rank);
  return nv_input(cf_tensor_symbolic(f, dt, rank));
}

/* nvFuser's canonicalizeInputToBMNK of operand A (is_b false) or B stored as its
 * matmulAtInput2D makes it (batched: A [M, B, K] or [B, K, M], B [B, K, N] or [N, B, K]):
 * permuted to [batch?, M, K] / [batch?, N, K] and broadcast to [batch?, M, 1, K] /
 * [batch?, 1, N, K]. */
static cf_tv *ms_operand(MsLayout layout, bool is_b, MsDims d, cf_dtype dt, KcInput *in) {
  bool k_inner = is_b ? layout == TN || layout == NN : layout == TT || layout == TN;
  int64_t mn = is_b ? d.n : d.m;
  int r = d.batch ? 3 : 2;
  int64_t sizes[3], *s = sizes;
  if (k_inner) *s++ = mn;
  if (d.batch) *s++ = d.batch;
  *s++ = d.k;
  if (!k_inner) *s++ = mn;
  cf_tv *t = ms_input(dt, r, sizes, in);
  if (k_inner && d.batch) t = cf_permute(f, t, 3, (int[]){1, 0, 2});
  if (!k_inner) t = cf_transpose(f, t, r - 2, r - 1);
  bool bc[4] = {false, false, false, false};
  bc[is_b ? r - 2 : r - 1] = true;
  return cf_broadcast(f, t, r + 1, bc);
}

/* nvFuser's fusedMultiplySum(a, b, {-1}): the float sum over K of the operands' product. */
static cf_tv *ms_fms(cf_tv *a, cf_tv *b) {
  cf_tv *p = cf_mul(f, cf_cast(f, a, CF_FLOAT), cf_cast(f, b, CF_FLOAT));
  return cf_sum(f, p, 1, (int[]){cf_tv_domain_size(p, CF_DOMAIN_LOGICAL) - 1});
}

/* A and B of a TT matmul in dt (inputs 0 and 1) and their fusedMultiplySum. */
static cf_tv *ms_tt_product(MsDims d, cf_dtype dt, KcInput *in) {
  cf_tv *a = ms_operand(TT, false, d, dt, &in[0]);
  return ms_fms(a, ms_operand(TT, true, d, dt, &in[1]));
}

/* nvFuser's checkUnsegmentedVectorization (one segment, its Matmul scheduler: here the
 * matmul row on tensor cores; less the vector widths) and its allclose (within tol). */
static void ms_expect_matmul_kernel(int nin, const KcInput *in, const double *scalars, double tol,
                                    const char *params) {
  nv_execute_expect(nin, in, &(NvRun){.tol = tol, .scalars = scalars, .segments = 1, .schedulers = {"matmul"},
                                      .params = params});
}

/* A double scalar input (nvFuser's alpha or beta). */
static cf_tv *ms_scalar(KcInput *in) {
  *in = (KcInput){CF_DOUBLE, 0, {0}, NULL};
  return cf_scalar_input(f, CF_DOUBLE);
}

static void ms_fresh(void) {
  cf_fusion_destroy(f);
  f = cf_fusion_create();
}

/* ---- MatmulSchedulerTest: epilogues of a TT half matmul, one kernel each ---------------- */

/* EpilogueOutputCast: half(A x B); nvFuser: one Matmul segment, allclose(1e-3). */
Test(matmul_sched_ports, EpilogueOutputCast) {
  KcInput in[2];
  cf_fusion_add_output(f, cf_cast(f, ms_tt_product(DIMS, CF_HALF, in), CF_HALF));
  ms_expect_matmul_kernel(2, in, NULL, 1e-2, TT_PARAMS);
}

/* EpilogueAlpha: alpha * (A x B), alpha a double input (2.5); one Matmul segment,
 * allclose(1e-3). */
Test(matmul_sched_ports, EpilogueAlpha) {
  KcInput in[3];
  cf_tv *ab = ms_tt_product(DIMS, CF_HALF, in);
  cf_tv *alpha = ms_scalar(&in[2]);
  cf_fusion_add_output(f, cf_mul(f, alpha, ab));
  ms_expect_matmul_kernel(3, in, (double[]){2.5}, 1e-3, TT_PARAMS);
}

/* EpilogueAlphaOutputCast: half(alpha * (A x B)); one Matmul segment. */
Test(matmul_sched_ports, EpilogueAlphaOutputCast) {
  KcInput in[3];
  cf_tv *ab = ms_tt_product(DIMS, CF_HALF, in);
  cf_tv *alpha = ms_scalar(&in[2]);
  cf_fusion_add_output(f, cf_cast(f, cf_mul(f, alpha, ab), CF_HALF));
  ms_expect_matmul_kernel(3, in, (double[]){2.5}, 1e-2, TT_PARAMS);
}

/* EpilogueBeta: (A x B) + beta * C, beta 2.5 (inputs A, B, C, beta), nvFuser's mul of the
 * half C computing in float; one Matmul segment, allclose(0.01, 0.04) (its reference
 * rounds beta * C to half), 1e-3 here. */
Test(matmul_sched_ports, EpilogueBeta) {
  KcInput in[4];
  cf_tv *ab = ms_tt_product(DIMS, CF_HALF, in);
  cf_tv *c = ms_input(CF_HALF, 2, (int64_t[]){DIMS.m, DIMS.n}, &in[2]);
  cf_tv *beta = ms_scalar(&in[3]);
  cf_fusion_add_output(f, cf_add(f, ab, cf_mul(f, beta, cf_cast(f, c, CF_FLOAT))));
  ms_expect_matmul_kernel(4, in, (double[]){2.5}, 1e-3, TT_PARAMS);
}

/* alpha * (A x B) + beta * C (inputs A, B, C, alpha, beta), returned before the output. */
static cf_tv *ms_alpha_beta(KcInput *in, cf_tv *ab_epilogue(cf_tv *, KcInput *), KcInput *extra) {
  cf_tv *ab = ms_tt_product(DIMS, CF_HALF, in);
  cf_tv *c = ms_input(CF_HALF, 2, (int64_t[]){DIMS.m, DIMS.n}, &in[2]);
  if (ab_epilogue) ab = ab_epilogue(ab, extra);
  cf_tv *alpha = ms_scalar(&in[extra ? 4 : 3]), *beta = ms_scalar(&in[extra ? 5 : 4]);
  return cf_add(f, cf_mul(f, alpha, ab), cf_mul(f, beta, cf_cast(f, c, CF_FLOAT)));
}

/* EpilogueAlphaBeta: alpha 2.5, beta 1.5; one Matmul segment, allclose(0.001, 0.004). */
Test(matmul_sched_ports, EpilogueAlphaBeta) {
  KcInput in[5];
  cf_fusion_add_output(f, ms_alpha_beta(in, NULL, NULL));
  ms_expect_matmul_kernel(5, in, (double[]){2.5, 1.5}, 1e-3, TT_PARAMS);
}

/* EpilogueAlphaBetaGeluOutputCast: half(gelu(alpha * (A x B) + beta * C)); one Matmul
 * segment. */
Test(matmul_sched_ports, EpilogueAlphaBetaGeluOutputCast) {
  KcInput in[5];
  cf_fusion_add_output(f, cf_cast(f, cf_gelu(f, ms_alpha_beta(in, NULL, NULL)), CF_HALF));
  ms_expect_matmul_kernel(5, in, (double[]){2.5, 1.5}, 1e-2, TT_PARAMS);
}

/* nvFuser's biasEpilogue: a float bias [M] (input 3) broadcast along N and added. */
static cf_tv *ms_bias_m(cf_tv *ab, KcInput *in) {
  cf_tv *bias = ms_input(CF_FLOAT, 1, (int64_t[]){DIMS.m}, in);
  return cf_add(f, ab, cf_broadcast(f, bias, 2, (bool[]){false, true}));
}

/* EpilogueAlphaBetaBias: alpha * ((A x B) + bias) + beta * C (inputs A, B, C, bias, alpha,
 * beta); one Matmul segment, allclose(0.01, 0.01). */
Test(matmul_sched_ports, EpilogueAlphaBetaBias) {
  KcInput in[6];
  cf_fusion_add_output(f, ms_alpha_beta(in, ms_bias_m, &in[3]));
  ms_expect_matmul_kernel(6, in, (double[]){2.5, 1.5}, 1e-3, TT_PARAMS);
}

/* ---- PrecisionParametrizedTest -------------------------------------------------------- */

/* nvFuser's precisions: operands, accumulator (float) and outputs, HSH, HSS, TST, TSS. */
static const cf_dtype PRECISIONS[4][2] = {{CF_HALF, CF_HALF}, {CF_HALF, CF_FLOAT}, {CF_BFLOAT16, CF_BFLOAT16},
                                          {CF_BFLOAT16, CF_FLOAT}};

/* nvFuser's maybeCastOp: the cast only where the dtype changes. */
static cf_tv *ms_maybe_cast(cf_tv *t, cf_dtype dt) { return cf_tv_dtype(t) == dt ? t : cf_cast(f, t, dt); }

/* EpilogueReluAux: D = A x B and Aux = relu(D), both cast to the output dtype, two outputs
 * (for float outputs D is the sum itself); nvFuser: one Matmul segment, allclose(1e-3)
 * (1e-2 for TST). Half and bfloat16 outputs within 1e-2 here. */
Test(matmul_sched_ports, EpilogueReluAux) {
  for (int p = 0; p < 4; p++) {
    ms_fresh();
    KcInput in[2];
    cf_tv *d = ms_tt_product(DIMS_K248, PRECISIONS[p][0], in);
    cf_fusion_add_output(f, ms_maybe_cast(d, PRECISIONS[p][1]));
    cf_fusion_add_output(f, ms_maybe_cast(cf_relu(f, d), PRECISIONS[p][1]));
    ms_expect_matmul_kernel(2, in, NULL, PRECISIONS[p][1] == CF_FLOAT ? 1e-3 : 1e-2,
                            tu_mma_params("scalar(K=31)", "scalar(a permute of T2)"));
  }
}

/* ---- MatmulSchedulerTestWithLayout ----------------------------------------------------- */

/* StridedBatch over TT, TN, NT, NN: nvFuser's splitk-like batched operands (A [M, B, K] or
 * [B, K, M], B [B, K, N] or [N, B, K]), the float product [B, M, N]; one Matmul segment,
 * allclose(1e-4). nvFuser's B = 2, M = 504, N = 136, K = 248 here 2 x 63 x 17 x 31. */
Test(matmul_sched_ports, StridedBatch) {
  MsDims d = DIMS_K248;
  d.batch = 2;
  for (MsLayout l = TT; l <= NN; l++) {
    ms_fresh();
    KcInput in[2];
    cf_tv *a = ms_operand(l, false, d, CF_HALF, &in[0]);
    cf_fusion_add_output(f, ms_fms(a, ms_operand(l, true, d, CF_HALF, &in[1])));
    ms_expect_matmul_kernel(2, in, NULL, 1e-4, tu_mma_params("scalar(a permute of T0)", "scalar(a permute of T3)"));
  }
}

/* ---- MatmulSchedulerTest: operand forms ------------------------------------------------- */

/* FusedMultiplySumOnly: half inputs with their broadcast axes, x [M, 1, K] and y [1, N, K]
 * (concrete), fusedMultiplySum over K; nvFuser: one Matmul segment equal to the reference.
 * nvFuser's 128 x 256 x 512 here 16 x 32 x 64. */
Test(matmul_sched_ports, FusedMultiplySumOnly) {
  KcInput in[2] = {{CF_HALF, 3, {16, 1, 64}, NULL}, {CF_HALF, 3, {1, 32, 64}, NULL}};
  cf_tv *x = nv_input(cf_tensor_concrete(f, CF_HALF, 3, in[0].sizes));
  cf_tv *y = nv_input(cf_tensor_concrete(f, CF_HALF, 3, in[1].sizes));
  cf_fusion_add_output(f, ms_fms(x, y));
  ms_expect_matmul_kernel(2, in, NULL, 1e-4, tu_mma_params("cp.async16", "cp.async16"));
}

/* BasicMatmulInputShuffledTT: B is the fusion's first input and A its second; nvFuser: one
 * Matmul segment, allclose(1e-3). nvFuser's K = 2048 here 256. */
Test(matmul_sched_ports, BasicMatmulInputShuffledTT) {
  MsDims d = {63, 17, 256, 0};
  KcInput in[2];
  cf_tv *b = ms_operand(TT, true, d, CF_HALF, &in[0]);
  cf_tv *a = ms_operand(TT, false, d, CF_HALF, &in[1]);
  cf_fusion_add_output(f, ms_fms(a, b));
  ms_expect_matmul_kernel(2, in, NULL, 1e-3, tu_mma_params("cp.async16", "scalar(a permute of T0)"));
}

/* OperandOrderIssue2434: bfloat16 A [M, K] and B [N, K] (concrete; B made first, A the
 * first input), mul(broadcast(A), broadcast(B)) summed over K, nvFuser's mul computing
 * bfloat16 in float (the casts written out); nvFuser: equal to at::linear within 1e-4.
 * nvFuser's sizes M = 32, N = 64, K = 128. */
Test(matmul_sched_ports, OperandOrderIssue2434) {
  KcInput in[2] = {{CF_BFLOAT16, 2, {32, 128}, NULL}, {CF_BFLOAT16, 2, {64, 128}, NULL}};
  cf_tv *b = cf_tensor_concrete(f, CF_BFLOAT16, 2, in[1].sizes);
  cf_tv *a = cf_tensor_concrete(f, CF_BFLOAT16, 2, in[0].sizes);
  cf_tv *bb = cf_broadcast(f, b, 3, (bool[]){true, false, false});
  cf_tv *ab = cf_broadcast(f, a, 3, (bool[]){false, true, false});
  cf_tv *mm = cf_sum(f, cf_mul(f, cf_cast(f, ab, CF_FLOAT), cf_cast(f, bb, CF_FLOAT)), 1, (int[]){2});
  cf_fusion_add_input(f, a), cf_fusion_add_input(f, b);
  cf_fusion_add_output(f, mm);
  ms_expect_matmul_kernel(2, in, NULL, 1e-4, tu_mma_params("cp.async16", "cp.async16"));
}

/* ---- MatmulSchedulerTest and MatmulFusionTest: segmentation ---------------------------- */

/* matmul(A, dt(sin(B))) (linear: linear(A, dt(sin(B))), B [N, K]) of dt A [M, K] and B
 * [K, N], nvFuser's sin computing in float, run by define and run, which must make the
 * one reduction segment (below: nvFuser segments it). */
static void ms_sin_prologue_run(cf_dtype dt, bool linear, double tol) {
  KcInput in[2];
  cf_tv *a = ms_input(dt, 2, (int64_t[]){63, 31}, &in[0]);
  cf_tv *b = ms_input(dt, 2, linear ? (int64_t[]){17, 31} : (int64_t[]){31, 17}, &in[1]);
  cf_tv *sin_b = cf_cast(f, cf_sin(f, cf_cast(f, b, CF_FLOAT)), dt);
  cf_fusion_add_output(f, linear ? cf_linear(f, a, sin_b, NULL) : cf_matmul(f, a, sin_b));
  nv_execute_expect(2, in, &(NvRun){.tol = tol, .segments = 1, .schedulers = {"reduction"}});
}

/* SegmentMatmulOpPrologue: matmul(A, half(sin(B))), half A [M, K] and B [K, N]; nvFuser's
 * assertion is testValidate (the fusion runs, equal to the reference); its segmentation
 * (matmul fusion off, its default): a pointwise prologue and an ATen matmul (ExprEval), 2
 * segments. cfuser differs: the matmul row takes only casts, permutes and broadcasts as
 * a prologue and refuses, and the reduction row takes the whole fusion as one plain
 * reduction kernel (CUDA cores; cfuser has no ATen segment): equal to the evaluator, a
 * gap in speed only (as AmpereProloguePointwise in test_matmul_ports.c). */
Test(matmul_sched_ports, SegmentMatmulOpPrologue) { ms_sin_prologue_run(CF_HALF, false, 1e-2); }

/* SegmentLinearOpPrologue: the same through linear, B [N, K]; the same difference. */
Test(matmul_sched_ports, SegmentLinearOpPrologue) { ms_sin_prologue_run(CF_HALF, true, 1e-2); }

/* SegmentMatmulOpUnsupportedDtype: matmul(A, float(sin(B))) of float operands, matmul
 * fusion on; nvFuser's matmul scheduler refuses float operands and asserts the fusion
 * segmented (pointwise prologue, ATen matmul), equal to the reference. cfuser differs:
 * the matmul row takes float operands (CUDA-core tiles) but not the sin prologue, and the
 * reduction row takes the whole fusion, one kernel equal to the evaluator. */
Test(matmul_sched_ports, SegmentMatmulOpUnsupportedDtype) { ms_sin_prologue_run(CF_FLOAT, false, 1e-4); }

/* Llama2FFN: silu(A @ B1) * (A @ B2), half A [M, K], B1 and B2 [K, N], the matmuls half,
 * nvFuser's sigmoid and muls computing in float, allclose(1e-3); nvFuser's segments: 3
 * with matmul fusion off (two ATen matmuls and the pointwise), 2 with it on
 * (fuse_single: each matmul a Matmul segment, the pointwise in their epilogues), 1 with
 * horizontal fusion. cfuser makes fuse_single's 2, both on tensor cores (one sum per matmul row's
 * segment: no horizontal fusion). */
Test(matmul_sched_ports, Llama2FFN) {
  KcInput in[3];
  cf_tv *a = ms_input(CF_HALF, 2, (int64_t[]){63, 31}, &in[0]);
  cf_tv *b1 = ms_input(CF_HALF, 2, (int64_t[]){31, 17}, &in[1]), *b2 = ms_input(CF_HALF, 2, (int64_t[]){31, 17}, &in[2]);
  cf_tv *t3 = cf_cast(f, cf_matmul(f, a, b1), CF_FLOAT), *t4 = cf_cast(f, cf_matmul(f, a, b2), CF_FLOAT);
  cf_tv *silu = cf_mul(f, cf_sigmoid(f, t3), t3);
  cf_fusion_add_output(f, cf_mul(f, silu, t4));
  nv_execute_expect(3, in, &(NvRun){.tol = 1e-3, .segments = 2, .schedulers = {"matmul", "matmul"},
                                          .params = tu_mma_params("scalar(K=31)", "scalar(N=17)")});
}
