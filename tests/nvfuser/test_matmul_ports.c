/* Ports of nvFuser's matmul tests: test_matmul.cpp's Ampere ones on mma.sync (the last two
 * sections: layouts, bfloat16, broadcast batch, the 3- and 4-stage gmem pipeline, batched,
 * relu and cast epilogues, and the gaps: a pointwise prologue and multiple M/N axes leave
 * the tensor cores; its Hopper and Blackwell ones need wgmma/tcgen05, later slices),
 * test_gpu1/2.cpp's hand schedules
 * of C = sum(A[M, K, 1] * B[1, K, N], 1) with shared-memory operand tiles and rfactored K
 * loops (against the evaluator on the host backend, and CUDA when present, as nvFuser's
 * testValidate), and test_matmul_aten_evaluation.cpp's matmul and linear nodes over every
 * operand shape nvFuser lists (1-D, batched, broadcast, K = 1, with and without bias,
 * concrete and symbolic), run by define and run against the evaluator. */
#include "nvfuser/nvf_util.h"
#include "scheduler/registry.h"

TestSuite(matmul_ports, .init = nv_setup, .fini = nv_teardown);

/* Both smem gemms' thread and block binding: the output's tile on blockIdx.x/y and its
 * M x N tile on threadIdx.y/x, and nvFuser's manual binding of the operand broadcasts and
 * the product. */
static void smem_gemm_bind(cf_tv *tv2, cf_tv *tv3, cf_tv *tv4, cf_tv *tv5) {
  cf_parallelize(f, tv5, 0, CF_PT_BIDX);
  cf_parallelize(f, tv5, 1, CF_PT_BIDY);
  cf_parallelize(f, tv5, -2, CF_PT_TIDY);
  cf_parallelize(f, tv5, -1, CF_PT_TIDX);
  cf_parallelize(f, tv2, -3, CF_PT_TIDY);
  cf_parallelize(f, tv2, -1, CF_PT_TIDX);
  cf_parallelize(f, tv3, -1, CF_PT_TIDX);
  cf_parallelize(f, tv4, -3, CF_PT_TIDY);
  cf_parallelize(f, tv4, -1, CF_PT_TIDX);
}

/* FusionSmemBlockGemm: tiles of 17 x 15 (M x N) and 16 (K), the operand broadcasts, the
 * product and the rfactor tensor in shared memory, the inputs computed at the output's
 * K-tile loop; [blockIdx.x, blockIdx.y, K/16, threadIdx.y, threadIdx.x]. nvFuser's
 * [154, 45, 1524]; [37, 45, 40] here (host backend time). */
Test(matmul_ports, FusionSmemBlockGemm) {
  cf_tv *tv[6];
  nv_gemm(tv);
  cf_tv *tv0 = tv[0], *tv1 = tv[1], *tv2 = tv[2], *tv3 = tv[3], *tv4 = tv[4], *tv5 = tv[5];
  enum { BSX = 16 };
  cf_split(f, tv5, 2, BSX - 1);
  cf_split(f, tv5, 1, BSX);
  cf_split(f, tv5, 0, BSX + 1);
  cf_reorder_all(f, tv5, 6, (int[]){0, 3, 2, 5, 1, 4}); /* [M/17, N/15, K/16, 17, 15, 16] */
  cf_tv *tv6 = cf_rfactor(f, tv5, 1, (int[]){-1});
  for (int i = 0; i < 4; i++) cf_set_memory_type(f, (cf_tv *[]){tv2, tv3, tv4, tv6}[i], CF_MEM_SHARED);
  cf_compute_at(f, tv0, tv5, 3);
  cf_compute_at(f, tv1, tv5, 3);
  smem_gemm_bind(tv2, tv3, tv4, tv5);
  cf_parallelize(f, tv6, -3, CF_PT_TIDY);
  cf_parallelize(f, tv6, -2, CF_PT_TIDX);
  nv_check(2, (KcInput[]){F32(37, 45), F32(45, 40)});
}

/* FusionSmemBlockGemmCache: the output cached before (the sum in shared memory), 16 x 16
 * tiles, the K tile rfactored. */
Test(matmul_ports, FusionSmemBlockGemmCache) {
  cf_tv *tv[6];
  nv_gemm(tv);
  cf_tv *tv0 = tv[0], *tv1 = tv[1], *tv2 = tv[2], *tv3 = tv[3], *tv4 = tv[4], *tv5 = tv[5];
  enum { BSX = 16 };
  cf_tv *tv6 = cf_cache_before(f, tv5);
  cf_split(f, tv5, 1, BSX);
  cf_split(f, tv5, 0, BSX);
  cf_reorder_all(f, tv5, 4, (int[]){0, 2, 1, 3}); /* [M/16, N/16, 16, 16] */
  cf_compute_at(f, tv6, tv5, 2);
  cf_split(f, tv6, -1, BSX);
  cf_reorder_all(f, tv6, 6, (int[]){0, 1, 3, 4, 2, 5}); /* [M/16, N/16, K/16, 16, 16, 16] */
  cf_tv *tv7 = cf_rfactor(f, tv6, 1, (int[]){-1});
  cf_compute_at(f, tv0, tv6, 3);
  cf_compute_at(f, tv1, tv6, 3);
  cf_compute_at(f, tv0, tv7, 3);
  cf_compute_at(f, tv1, tv7, 3);
  for (int i = 0; i < 5; i++) cf_set_memory_type(f, (cf_tv *[]){tv2, tv3, tv4, tv6, tv7}[i], CF_MEM_SHARED);
  smem_gemm_bind(tv2, tv3, tv4, tv5);
  cf_parallelize(f, tv7, -3, CF_PT_TIDY);
  cf_parallelize(f, tv7, -2, CF_PT_TIDX);
  cf_parallelize(f, tv6, -2, CF_PT_TIDY);
  cf_parallelize(f, tv6, -1, CF_PT_TIDX);
  nv_check(2, (KcInput[]){F32(37, 45), F32(45, 40)});
}

/* FusionSimpleGemmTransposed: the operands stored [K, M] and [N, K], transposed in the
 * fusion; K split by 32 and rfactored over its outer part, M and N by 4. A gap (the one of
 * test_simple_bcast.c): loops are shared position by position, so computing the
 * transposed B at the output cannot skip the output's M axes, which B broadcasts. The same
 * product through cf_matmul runs by define and run (test_matmul_sched.c). */
Test(matmul_ports, FusionSimpleGemmTransposed) {
  cf_tv *tv0 = nv_symbolic(2), *tv1 = nv_symbolic(2);
  cf_tv *tv0t = cf_transpose(f, tv0, 0, 1), *tv1t = cf_transpose(f, tv1, 0, 1);
  cf_tv *tv2 = cf_broadcast(f, tv0t, 3, (bool[]){false, false, true});
  cf_tv *tv3 = cf_broadcast(f, tv1t, 3, (bool[]){true, false, false});
  cf_tv *tv5 = cf_sum(f, cf_mul(f, tv2, tv3), 1, (int[]){1});
  cf_fusion_add_output(f, tv5);
  cf_split(f, tv5, 1, 32);
  cf_tv *tv6 = cf_rfactor(f, tv5, 1, (int[]){1});
  cf_split(f, tv5, 0, 4);
  cf_split(f, tv5, -1, 4);
  cf_compute_at(f, tv0t, tv5, -1);
  cf_compute_at(f, tv1t, tv5, -1);
  (void)tv6;
  nv_expect_gap("compute_at: cannot inline T3_l_float[iS61{32}, iS62{( ceilDiv(i2, 4) )}, iS63{4}, "
                "iS60{( ceilDiv(i3, 32) )}] at position 3: axis 0 (iS61{32}) does not map to T5's axis 0 (bS54{1})");
}

/* ---- test_matmul_aten_evaluation.cpp: matmul and linear nodes through define and run --- */

/* nvFuser's sizes b = 128, m = 64, k = 32, n = 16, scaled down for the host backend. */
enum { PB = 3, PM = 5, PK = 7, PN = 4 };

static cf_dtype mp_dtype = CF_HALF; /* the operands' dtype (bfloat16 for the BFloat16 ports) */

/* A half input of the given shape: concrete (sizes of 1 are broadcast axes), or symbolic
 * with the size-1 axes broadcast (nvFuser's makeSymbolicTensor of that shape); *in gets
 * the run-time tensor (the kept axes). */
static cf_tv *mp_input(int rank, const int64_t *shape, bool symbolic, KcInput *in) {
  *in = (KcInput){mp_dtype, 0, {0}, NULL};
  bool bc[8];
  for (int d = 0; d < rank; d++)
    if (!(bc[d] = symbolic && shape[d] == 1)) in->sizes[in->rank++] = shape[d];
  if (!symbolic) return nv_input(cf_tensor_concrete(f, mp_dtype, rank, shape));
  cf_tv *t = nv_input(cf_tensor_symbolic(f, mp_dtype, in->rank));
  return in->rank == rank ? t : cf_broadcast(f, t, rank, bc);
}

static const char *mp_params; /* when set, the params define and run must report for segment 0 */
static int mp_segments;        /* when set, the number of segments it must use */
static const char *mp_scheduler; /* when set, the row that must schedule segment 0 */

/* Runs f through define and run on the host backend against the evaluator (half outputs:
 * a float sum rounded to half may differ from the evaluator's double by one half ulp). */
static void mp_execute(int nin, const KcInput *in) {
  nv_execute_expect(nin, in, &(NvRun){.tol = 1e-2, .segments = mp_segments, .schedulers = {mp_scheduler},
                                      .params = mp_params});
}

typedef struct MpShape { int rank; int64_t s[4]; } MpShape;

static void mp_matmul_node(bool symbolic, int na, const MpShape *as, int nb, const MpShape *bs) {
  for (int i = 0; i < na; i++)
    for (int j = 0; j < nb; j++) {
      cf_fusion_destroy(f);
      f = cf_fusion_create();
      KcInput in[2];
      cf_tv *a = mp_input(as[i].rank, as[i].s, symbolic, &in[0]);
      cf_tv *b = mp_input(bs[j].rank, bs[j].s, symbolic, &in[1]);
      cf_fusion_add_output(f, cf_matmul(f, a, b));
      mp_execute(2, in);
    }
}

static const MpShape MA[] = {{1, {PK}}, {2, {PM, PK}}, {2, {1, PK}}, {3, {PB, PM, PK}}, {4, {PB, 1, PM, PK}}};
static const MpShape MB[] = {{1, {PK}}, {2, {PK, PN}}, {2, {PK, 1}}, {3, {PB, PK, PN}}};
/* ReductionAxisIsOne: K = 1. */
static const MpShape MA1[] = {{1, {1}}, {2, {PM, 1}}, {2, {1, 1}}, {3, {PB, PM, 1}}, {4, {PB, 1, PM, 1}}};
static const MpShape MB1[] = {{1, {1}}, {2, {1, PN}}, {2, {1, 1}}, {3, {PB, 1, PN}}};

/* MatmulNodeConcrete: every pair of nvFuser's operand shapes, and with K = 1. */
Test(matmul_ports, MatmulNodeConcrete) {
  mp_matmul_node(false, 5, MA, 4, MB);
  mp_matmul_node(false, 5, MA1, 4, MB1);
}

/* MatmulNodeSymbolic: the same with symbolic sizes (size-1 axes broadcast). */
Test(matmul_ports, MatmulNodeSymbolic) {
  mp_matmul_node(true, 5, MA, 4, MB);
  mp_matmul_node(true, 5, MA1, 4, MB1);
}

static void mp_linear_node(bool symbolic, int nx, const MpShape *xs, int nw, const MpShape *ws, const MpShape *bias) {
  for (int i = 0; i < nx; i++)
    for (int j = 0; j < nw; j++) {
      cf_fusion_destroy(f);
      f = cf_fusion_create();
      KcInput in[3];
      cf_tv *x = mp_input(xs[i].rank, xs[i].s, symbolic, &in[0]);
      cf_tv *w = mp_input(ws[j].rank, ws[j].s, symbolic, &in[1]);
      cf_tv *b = bias ? mp_input(bias->rank, bias->s, symbolic, &in[2]) : NULL;
      cf_fusion_add_output(f, cf_linear(f, x, w, b));
      mp_execute(bias ? 3 : 2, in);
    }
}

static const MpShape LX[] = {{1, {PK}}, {2, {PM, PK}}, {3, {PB, PM, PK}}, {2, {1, PK}}, {3, {PB, 1, PK}}};
static const MpShape LX1[] = {{1, {1}}, {2, {PM, 1}}, {3, {PB, PM, 1}}, {2, {1, 1}}, {3, {PB, 1, 1}}};
static const MpShape LW[] = {{2, {PN, PK}}, {2, {1, PK}}};
static const MpShape LW1 = {2, {PN, 1}}, LBIAS = {1, {PN}};

/* LinearNodeConcrete: LinearWithoutBias, LinearWithBias and LinearReductionAxisIsOne. */
Test(matmul_ports, LinearNodeConcrete) {
  mp_linear_node(false, 5, LX, 2, LW, NULL);
  mp_linear_node(false, 5, LX, 1, LW, &LBIAS);
  mp_linear_node(false, 5, LX1, 1, &LW1, &LBIAS);
}

/* LinearNodeSymbolic: the same with symbolic sizes. */
Test(matmul_ports, LinearNodeSymbolic) {
  mp_linear_node(true, 5, LX, 2, LW, NULL);
  mp_linear_node(true, 5, LX, 1, LW, &LBIAS);
  mp_linear_node(true, 5, LX1, 1, &LW1, &LBIAS);
}

/* ---- test_matmul.cpp: tensor cores (mma.sync m16n8k16, scheduler/matmul_mma.c) -------- */

/* A half input stored `t ? [c, r] : [r, c]`, read as [r, c] (transposed in the fusion). */
static cf_tv *mp_layout_input(int64_t r, int64_t c, bool t, KcInput *in) {
  cf_tv *x = mp_input(2, t ? (int64_t[]){c, r} : (int64_t[]){r, c}, true, in);
  return t ? cf_transpose(f, x, 0, 1) : x;
}

/* AmpereMatmul over MmaLayout TT, TN, NT, NN (A stored [M, K] or [K, M], B [K, N] or
 * [N, K]): nvFuser's M = 504, N = 136, K = 248 (its result: equal to at::matmul), scaled to
 * 63 x 17 x 33 for the host backend; each layout equals the evaluator. */
Test(matmul_ports, AmpereMatmulLayouts) {
  for (int layout = 0; layout < 4; layout++) {
    cf_fusion_destroy(f);
    f = cf_fusion_create();
    KcInput in[2];
    cf_tv *a = mp_layout_input(63, 33, layout & 1, &in[0]), *b = mp_layout_input(33, 17, layout & 2, &in[1]);
    cf_fusion_add_output(f, cf_matmul(f, a, b));
    mp_execute(2, in);
  }
}

/* The bias epilogue of test_matmul.cpp's linear tests, half, M and K not multiples of the
 * 128 x 128 x 32 tile (two M tiles, K masked in its second 16): equal to the evaluator. */
Test(matmul_ports, AmpereLinearBiasNonDivisible) {
  KcInput in[3];
  cf_tv *x = mp_input(2, (int64_t[]){131, 33}, true, &in[0]), *w = mp_input(2, (int64_t[]){17, 33}, true, &in[1]);
  cf_tv *bias = mp_input(1, (int64_t[]){17}, true, &in[2]);
  cf_fusion_add_output(f, cf_linear(f, x, w, bias));
  mp_execute(3, in);
}

/* ---- test_matmul.cpp, issue 24's second slice: ldmatrix, swizzle, circular buffering --- */

static void mp_fresh(void) {
  cf_fusion_destroy(f);
  f = cf_fusion_create();
  mp_params = mp_scheduler = NULL, mp_segments = 0, mp_dtype = CF_HALF;
}

/* AmpereMatmulBFloat16 over the four layouts: nvFuser's result equal to at::matmul; here
 * 63 x 17 x 33 on tensor cores, equal to the evaluator. */
Test(matmul_ports, AmpereMatmulBFloat16) {
  for (int layout = 0; layout < 4; layout++) {
    mp_fresh();
    /* K = 33 and N = 17 are not multiples of 8, a transposed operand a permute: one element a thread */
    static const char *const fill_b[] = {"scalar(N=17)", "scalar(N=17)", "scalar(a permute of T1)",
                                         "scalar(a permute of T2)"};
    mp_dtype = CF_BFLOAT16, mp_params = tu_mma_params(layout & 1 ? "scalar(a permute of T0)" : "scalar(K=33)", fill_b[layout]);
    KcInput in[2];
    cf_tv *a = mp_layout_input(63, 33, layout & 1, &in[0]), *b = mp_layout_input(33, 17, layout & 2, &in[1]);
    cf_fusion_add_output(f, cf_matmul(f, a, b));
    mp_execute(2, in);
  }
  mp_fresh();
}

/* AmpereMatmulBroadcastBatch: A [1, M, K] and B [1, K, N], the batch axis a broadcast in
 * both; nvFuser: equal to at::matmul(..).unsqueeze(0). Here 70 x 20 x 40. */
Test(matmul_ports, AmpereMatmulBroadcastBatch) {
  mp_params = tu_mma_params("cp.async16", "scalar(N=20)");
  KcInput in[2];
  cf_tv *a = mp_input(2, (int64_t[]){70, 40}, true, &in[0]), *b = mp_input(2, (int64_t[]){40, 20}, true, &in[1]);
  cf_tv *a3 = cf_broadcast(f, a, 3, (bool[]){true, false, false}), *b3 = cf_broadcast(f, b, 3, (bool[]){true, false, false});
  cf_fusion_add_output(f, cf_matmul(f, a3, b3));
  mp_execute(2, in);
  mp_fresh();
}

/* AmpereMatmulPipelineGmem: the gmem -> smem pipeline in 3 and 4 stages (nvFuser: equal to
 * at::matmul for both). The row's schedule has 3; the 4-stage variant re-stages its two
 * operand tiles with cf_circular_buffer after the row (64 KB of shared memory). */
Test(matmul_ports, AmpereMatmulPipelineGmem) {
  for (int stages = 3; stages <= 4; stages++) {
    mp_fresh();
    KcInput in[2] = {{CF_HALF, 2, {70, 100}, NULL}, {CF_HALF, 2, {20, 100}, NULL}};
    cf_tv *a = nv_input(cf_tensor_concrete(f, CF_HALF, 2, in[0].sizes));
    cf_tv *b = nv_input(cf_tensor_concrete(f, CF_HALF, 2, in[1].sizes));
    cf_fusion_add_output(f, cf_linear(f, a, b, NULL));
    const SchedRow *r = sched_row_named("matmul");
    SchedCall call = {0, NULL, sched_device_default()};
    char why[SCHED_WHY_MAX] = "";
    SchedParams p, used;
    cr_assert(r->plan(f, &call, &p, why), "%s", why);
    cr_assert_eq(r->apply(&f, &call, &p, &used), CF_OK, "%s", cf_fusion_error(f));
    int staged = 0;
    for (int i = 0; i < cf_fusion_num_tvs(f); i++) {
      cf_tv *t = cf_fusion_tv(f, i);
      if (cf_tv_memory_type(t) == CF_MEM_SHARED) staged += cf_circular_buffer(f, t, stages) == CF_OK;
    }
    cr_expect_eq(staged, 2);
    nv_check_tol(2, in, 1e-2);
  }
  mp_fresh();
}

/* AmpereSplitKLikeStridedBatchedMatmul: [B, M, K] x [B, K, N] (nvFuser: equal to
 * at::matmul); here 3 x 33 x 20 x 40 on tensor cores. */
Test(matmul_ports, AmpereSplitKLikeStridedBatchedMatmul) {
  mp_params = tu_mma_params("cp.async16", "scalar(N=20)");
  KcInput in[2];
  cf_tv *a = mp_input(3, (int64_t[]){3, 33, 40}, true, &in[0]), *b = mp_input(3, (int64_t[]){3, 40, 20}, true, &in[1]);
  cf_fusion_add_output(f, cf_matmul(f, a, b));
  mp_execute(2, in);
  mp_fresh();
}

/* AmpereMatmulSmemEpilogueRelu and AmpereMatmulSmemEpilogueCast: relu of the float
 * product, and the product cast to half (nvFuser: equal to at::relu(at::matmul) and
 * at::matmul(..).to(half)); one kernel on tensor cores each. */
Test(matmul_ports, AmpereMatmulSmemEpilogueReluAndCast) {
  for (int cast = 0; cast < 2; cast++) {
    mp_fresh();
    mp_params = tu_mma_params("cp.async16", "cp.async16"), mp_segments = 1;
    KcInput in[2];
    cf_tv *a = mp_input(2, (int64_t[]){70, 40}, true, &in[0]), *b = mp_input(2, (int64_t[]){20, 40}, true, &in[1]);
    cf_tv *p = cf_linear(f, a, b, NULL); /* half: the float sum cast back */
    cf_fusion_add_output(f, cast ? p : cf_relu(f, cf_cast(f, p, CF_FLOAT)));
    mp_execute(2, in);
  }
  mp_fresh();
}

/* AmpereProloguePointwise: each operand cast(half, sin(x)) before the product; nvFuser
 * fuses the prologue into its matmul kernel (equal to at::matmul of the sines). Here the
 * matmul row takes only casts, permutes and broadcasts of inputs as prologue and refuses;
 * the reduction row takes the whole fusion as one plain reduction kernel (no tensor
 * cores): equal to the evaluator, a gap in speed only. */
Test(matmul_ports, AmpereProloguePointwise) {
  KcInput in[2];
  cf_tv *a = mp_input(2, (int64_t[]){33, 40}, true, &in[0]), *b = mp_input(2, (int64_t[]){20, 40}, true, &in[1]);
  cf_tv *sa = cf_cast(f, cf_sin(f, cf_cast(f, a, CF_FLOAT)), CF_HALF);
  cf_tv *sb = cf_cast(f, cf_sin(f, cf_cast(f, b, CF_FLOAT)), CF_HALF);
  cf_fusion_add_output(f, cf_linear(f, sa, sb, NULL));
  mp_segments = 1, mp_scheduler = "reduction";
  mp_execute(2, in);
  mp_fresh();
}

/* MultipleConsecutiveDims: A [M1, M2, K], B [N1, N2, K], the product [M1, M2, N1, N2]
 * (nvFuser: on tensor cores, equal to the reference). Here too: the two M axes merge into
 * one and the two N axes into another, and the tensor-core schedule's tiles cross from one
 * M1 (N1) into the next: equal to the evaluator. */
Test(matmul_ports, MultipleConsecutiveDims) {
  KcInput in[2];
  cf_tv *a = mp_input(3, (int64_t[]){9, 4, 40}, true, &in[0]), *b = mp_input(3, (int64_t[]){7, 2, 40}, true, &in[1]);
  cf_tv *a5 = cf_broadcast(f, a, 5, (bool[]){false, false, true, true, false});
  cf_tv *b5 = cf_broadcast(f, b, 5, (bool[]){true, true, false, false, false});
  cf_tv *prod = cf_mul(f, cf_cast(f, a5, CF_FLOAT), cf_cast(f, b5, CF_FLOAT));
  cf_fusion_add_output(f, cf_sum(f, prod, 1, (int[]){4}));
  mp_params = tu_mma_params("cp.async16", "cp.async16");
  mp_execute(2, in);
  mp_fresh();
}
