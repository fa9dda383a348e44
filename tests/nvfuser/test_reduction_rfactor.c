/* Ports of nvFuser's hand-scheduled reduction tests that go through rFactor (test_gpu1.cpp:
 * FusionReduction1-6, FusionReductionTFT, ...), and the minimal forms of the defects they
 * found. Each builds nvFuser's fusion and schedule through cfuser's public calls and checks
 * the outputs against the reference evaluator on the host backend (nv_check). */
#include "nvfuser/nvf_util.h"

TestSuite(reduction_rfactor, .init = nv_setup, .fini = nv_teardown);

/* The wrong result of issue 23, minimal: t1 = sum(t0, 1) split by 16, t2 = rFactor(t1, the
 * outer part), then t2 computed at t1, 1. The replay from t1 to t2 put t2's root reduction
 * axis back into t2's loops, so each row was summed again 16 times (the partial loop ran
 * over the whole row inside each outer iteration). */
Test(reduction_rfactor, compute_at_from_rfactor_into_its_consumer) {
  cf_tv *t0 = nv_symbolic(2);
  cf_tv *t1 = cf_sum(f, t0, 1, (int[]){1});
  cf_fusion_add_output(f, t1);
  cf_split(f, t1, 1, 16);
  cf_tv *t2 = cf_rfactor(f, t1, 1, (int[]){1});
  cf_compute_at(f, t2, t1, 1);
  cr_expect_eq(cf_tv_naxes(t2), 3, "%s", tu_tv_str(f, t2));
  nv_check(1, (KcInput[]){F32(7, 129)});
}

/* FusionReduction1: a row sum split by 128 and 4, rfactored twice (the outer part, then the
 * unrolled part), every tensor computed at the next at 1, then all at once again; rows on
 * blockIdx.x, the 128 on threadIdx.x. nvFuser's input is 65000 x 1025; 130 x 1025 here
 * (the schedule does not depend on the row count). */
Test(reduction_rfactor, FusionReduction1) {
  cf_tv *tv0 = nv_symbolic(2);
  cf_tv *tv1 = cf_sum(f, tv0, 1, (int[]){1});
  cf_fusion_add_output(f, tv1);
  cf_split(f, tv1, 1, 128);
  cf_split(f, tv1, 1, 4);
  cf_tv *tv2 = cf_rfactor(f, tv1, 1, (int[]){1});
  cf_tv *tv3 = cf_rfactor(f, tv1, 1, (int[]){1});
  cf_compute_at(f, tv0, tv2, 1);
  cf_compute_at(f, tv2, tv3, 1);
  cf_compute_at(f, tv3, tv1, 1);
  cf_compute_at(f, tv0, tv1, 1);
  cf_parallelize(f, tv2, 2, CF_PT_UNROLL);
  cf_parallelize(f, tv1, 0, CF_PT_BIDX);
  nv_parallelize_each(3, (cf_tv *[]){tv1, tv2, tv3}, -1, CF_PT_TIDX);
  NV_EXPECT_POS(tv2, 1, -1);
  NV_EXPECT_POS(tv3, 1, -1);
  nv_check(1, (KcInput[]){F32(130, 1025)});
}

/* FusionReduction2: rows split by tidy{8} too, before the two rfactors (rows on
 * [blockIdx.x, threadIdx.y], the row over unroll{4} x threadIdx.x{16}); tv0 computed at
 * tv1, -2. */
Test(reduction_rfactor, FusionReduction2) {
  cf_tv *tv0 = nv_symbolic(2);
  cf_tv *tv1 = cf_sum(f, tv0, 1, (int[]){1});
  cf_fusion_add_output(f, tv1);
  cf_split(f, tv1, 1, 16);
  cf_split(f, tv1, 1, 4);
  cf_split(f, tv1, 0, 8);
  cf_tv *tv2 = cf_rfactor(f, tv1, 1, (int[]){-3});
  cf_tv *tv3 = cf_rfactor(f, tv1, 1, (int[]){-2});
  cf_compute_at(f, tv0, tv1, -2);
  cf_parallelize(f, tv2, -2, CF_PT_UNROLL);
  cf_parallelize(f, tv1, 0, CF_PT_BIDX);
  cf_parallelize(f, tv1, 1, CF_PT_TIDY);
  nv_parallelize_each(3, (cf_tv *[]){tv2, tv3, tv1}, -1, CF_PT_TIDX);
  nv_check(1, (KcInput[]){F32(1025, 129)});
}

/* FusionReduction3: threadIdx.z takes part in the reduction with threadIdx.x. */
Test(reduction_rfactor, FusionReduction3) {
  cf_tv *tv0 = nv_symbolic(2);
  cf_tv *tv1 = cf_sum(f, tv0, 1, (int[]){1});
  cf_fusion_add_output(f, tv1);
  cf_split(f, tv1, 1, 8);
  cf_split(f, tv1, 1, 16);
  cf_tv *tv2 = cf_rfactor(f, tv1, 1, (int[]){-3});
  cf_compute_at(f, tv0, tv1, -3);
  cf_parallelize(f, tv1, 0, CF_PT_BIDX);
  cf_parallelize(f, tv1, -2, CF_PT_TIDX);
  cf_parallelize(f, tv1, -1, CF_PT_TIDZ);
  cf_parallelize(f, tv2, -2, CF_PT_TIDX);
  cf_parallelize(f, tv2, -1, CF_PT_TIDZ);
  nv_check(1, (KcInput[]){F32(1025, 129)});
}

/* FusionReduction4 (the wrong result of issue 23: -823.9 where the answer was -5.72):
 * tv5 = sum(tv0 + tv1, 1) * tv4, the sum's row split by 16 (inner, or outer for
 * FusionReductionOuterSplit) and rfactored over its serial part, tv2 computed at the
 * partial tv6, tv6 at tv3, tv3 at tv5, each at 1 or 2. */
static void reduction4(bool outer) {
  cf_tv *tv0 = nv_symbolic(2), *tv1 = nv_symbolic(2);
  cf_tv *tv2 = cf_add(f, tv0, tv1);
  cf_tv *tv3 = cf_sum(f, tv2, 1, (int[]){1});
  cf_tv *tv4 = nv_symbolic(1);
  cf_tv *tv5 = cf_mul(f, tv3, tv4);
  cf_fusion_add_output(f, tv5);
  if (outer) cf_split_outer(f, tv3, 1, 16);
  else cf_split(f, tv3, 1, 16);
  cf_tv *tv6 = cf_rfactor(f, tv3, 1, (int[]){-2});
  cf_compute_at(f, tv2, tv6, 2);
  cf_compute_at(f, tv6, tv3, 1);
  cf_compute_at(f, tv3, tv5, 1);
  cf_parallelize(f, tv5, 0, CF_PT_BIDX);
  nv_parallelize_each(3, (cf_tv *[]){tv2, tv3, tv6}, -1, CF_PT_TIDX);
  NV_EXPECT_POS(tv2, 2, -1);
  NV_EXPECT_POS(tv6, 1, -1);
  NV_EXPECT_POS(tv3, 1, -1);
  nv_check(3, (KcInput[]){F32(1025, 129), F32(1025, 129), F32(1025)});
}

Test(reduction_rfactor, FusionReduction4) { reduction4(false); }
Test(reduction_rfactor, FusionReductionOuterSplit) { reduction4(true); }

/* FusionReduction5: a middle-axis sum of [2, 11, 5] split by threadIdx.y{4}, rows on
 * blockIdx.y, the kept inner axis on threadIdx.x. */
Test(reduction_rfactor, FusionReduction5) {
  cf_tv *tv0 = nv_symbolic(3);
  cf_tv *tv1 = cf_sum(f, tv0, 1, (int[]){1});
  cf_fusion_add_output(f, tv1);
  cf_split(f, tv1, -2, 4);
  cf_tv *tv2 = cf_rfactor(f, tv1, 1, (int[]){-3});
  cf_compute_at(f, tv0, tv1, 1);
  cf_parallelize(f, tv1, 0, CF_PT_BIDY);
  nv_parallelize_each(2, (cf_tv *[]){tv1, tv2}, -1, CF_PT_TIDX);
  cf_parallelize(f, tv2, -2, CF_PT_TIDY);
  cf_parallelize(f, tv1, -2, CF_PT_TIDY);
  nv_check(1, (KcInput[]){F32(2, 11, 5)});
}

/* FusionReduction6: a sum over two axes, each split, rfactored twice; [650, 1000, 4] in
 * nvFuser, [65, 1000, 4] here. */
Test(reduction_rfactor, FusionReduction6) {
  cf_tv *tv0 = nv_symbolic(3);
  cf_tv *tv1 = cf_sum(f, tv0, 2, (int[]){1, 2});
  cf_fusion_add_output(f, tv1);
  cf_split(f, tv1, 2, 64);
  cf_split(f, tv1, 1, 8);
  cf_tv *tv2 = cf_rfactor(f, tv1, 1, (int[]){3});
  cf_tv *tv3 = cf_rfactor(f, tv1, 1, (int[]){1});
  cf_compute_at(f, tv3, tv1, 1);
  cf_compute_at(f, tv2, tv3, 2);
  nv_parallelize_each(3, (cf_tv *[]){tv1, tv2, tv3}, 0, CF_PT_BIDX);
  nv_parallelize_each(3, (cf_tv *[]){tv1, tv2, tv3}, -1, CF_PT_TIDX);
  cf_parallelize(f, tv1, -2, CF_PT_TIDY);
  cf_parallelize(f, tv3, -2, CF_PT_TIDY);
  cf_parallelize(f, tv2, -3, CF_PT_TIDY);
  nv_check(1, (KcInput[]){F32(65, 1000, 4)});
}

/* FusionReductionTFT: rows split by threadIdx.y{8}, the row by threadIdx.z{8} x
 * threadIdx.x{16}, rfactored over the serial part, tv2 computed at tv1, 2. */
Test(reduction_rfactor, FusionReductionTFT) {
  cf_tv *tv0 = nv_symbolic(2);
  cf_tv *tv1 = cf_sum(f, tv0, 1, (int[]){1});
  cf_fusion_add_output(f, tv1);
  cf_split(f, tv1, 1, 16);
  cf_split(f, tv1, 1, 8);
  cf_split(f, tv1, 0, 8);
  cf_tv *tv2 = cf_rfactor(f, tv1, 1, (int[]){2});
  cf_compute_at(f, tv2, tv1, 2);
  cf_parallelize(f, tv1, 1, CF_PT_TIDY);
  cf_parallelize(f, tv2, -1, CF_PT_TIDX);
  cf_parallelize(f, tv1, -1, CF_PT_TIDX);
  cf_parallelize(f, tv1, -2, CF_PT_TIDZ);
  cf_parallelize(f, tv2, -2, CF_PT_TIDZ);
  nv_check(1, (KcInput[]){F32(1025, 129)});
}

/* FusionMultiGridReduction: a max and a sum over axis 0 of the same input, both on
 * [blockIdx.x, threadIdx.x]. */
Test(reduction_rfactor, FusionMultiGridReduction) {
  cf_tv *tv0 = nv_symbolic(2);
  cf_tv *tv1 = cf_max_reduce(f, tv0, 1, (int[]){0});
  cf_tv *tv2 = cf_sum(f, tv0, 1, (int[]){0});
  cf_fusion_add_output(f, tv1);
  cf_fusion_add_output(f, tv2);
  nv_parallelize_each(2, (cf_tv *[]){tv1, tv2}, 0, CF_PT_BIDX);
  nv_parallelize_each(2, (cf_tv *[]){tv1, tv2}, 1, CF_PT_TIDX);
  nv_check(1, (KcInput[]){F32(4, 2)});
}

/* FusionMultiGridReduction2: two grid reductions in a row (the second over blockIdx.y):
 * the first is a grid all-reduce (its value read in every block), as nvFuser's. */
Test(reduction_rfactor, FusionMultiGridReduction2) {
  cf_tv *tv0 = nv_symbolic(2);
  cf_tv *tv1 = cf_sum(f, tv0, 1, (int[]){0});
  cf_tv *tv2 = cf_sum(f, tv1, 1, (int[]){0});
  cf_fusion_add_output(f, tv2);
  cf_parallelize(f, tv1, 0, CF_PT_BIDX);
  cf_parallelize(f, tv1, 1, CF_PT_BIDY);
  cf_parallelize(f, tv2, 0, CF_PT_BIDY);
  nv_check(1, (KcInput[]){F32(4, 8)});
}

/* The grid reductions of test_gpu1.cpp: a row sum split twice, the middle part on a block
 * index (a reduction across blocks), rfactored over the serial part. nvFuser's rows are
 * 10000 x 65000; 5 x 8200 here (each block still loops several times). */
static void grid_reduction_1_2(cf_parallel_type rows, cf_parallel_type across, int64_t gdim) {
  cf_tv *tv0 = nv_symbolic(2);
  cf_tv *tv1 = cf_sum(f, tv0, 1, (int[]){1});
  cf_fusion_add_output(f, tv1);
  cf_split(f, tv1, 1, 128);
  cf_split(f, tv1, 1, gdim);
  cf_tv *tv2 = cf_rfactor(f, tv1, 1, (int[]){1});
  cf_compute_at(f, tv0, tv2, 1);
  cf_compute_at(f, tv2, tv1, 1);
  cf_compute_at(f, tv0, tv1, 1);
  cf_parallelize(f, tv1, 0, rows);
  cf_parallelize(f, tv1, 1, across);
  cf_parallelize(f, tv2, 2, across);
  nv_parallelize_each(2, (cf_tv *[]){tv1, tv2}, -1, CF_PT_TIDX);
  nv_check(1, (KcInput[]){F32(5, 8200)});
}

Test(reduction_rfactor, FusionGridReduction1) { grid_reduction_1_2(CF_PT_BIDY, CF_PT_BIDX, 32); }
Test(reduction_rfactor, FusionGridReduction2) { grid_reduction_1_2(CF_PT_BIDX, CF_PT_BIDY, 32); }

/* FusionGridReduction3dim1: the row over blockIdx.z{15} x blockIdx.y{9}. [100, 6500] in
 * nvFuser, [10, 650] here. */
Test(reduction_rfactor, FusionGridReduction3dim1) {
  cf_tv *tv0 = nv_symbolic(2);
  cf_tv *tv1 = cf_sum(f, tv0, 1, (int[]){1});
  cf_fusion_add_output(f, tv1);
  cf_split(f, tv1, 1, 9);
  cf_split(f, tv1, 1, 15);
  cf_tv *tv2 = cf_rfactor(f, tv1, 1, (int[]){1});
  cf_compute_at(f, tv0, tv2, 1);
  cf_compute_at(f, tv2, tv1, 1);
  cf_compute_at(f, tv0, tv1, 1);
  cf_parallelize(f, tv1, 0, CF_PT_BIDX);
  cf_parallelize(f, tv1, 1, CF_PT_BIDZ);
  cf_parallelize(f, tv2, 2, CF_PT_BIDZ);
  nv_parallelize_each(2, (cf_tv *[]){tv1, tv2}, -1, CF_PT_BIDY);
  nv_check(1, (KcInput[]){F32(10, 650)});
}

/* FusionGridReduction3dim0: a column sum over three block indices, no compute_at. */
Test(reduction_rfactor, FusionGridReduction3dim0) {
  cf_tv *tv0 = nv_symbolic(2);
  cf_tv *tv1 = cf_sum(f, tv0, 1, (int[]){0});
  cf_fusion_add_output(f, tv1);
  cf_split(f, tv1, 0, 9);
  cf_split(f, tv1, 0, 15);
  cf_tv *tv2 = cf_rfactor(f, tv1, 1, (int[]){0});
  nv_parallelize_each(2, (cf_tv *[]){tv1, tv2}, -1, CF_PT_BIDX);
  nv_parallelize_each(2, (cf_tv *[]){tv1, tv2}, -2, CF_PT_BIDY);
  nv_parallelize_each(2, (cf_tv *[]){tv1, tv2}, -3, CF_PT_BIDZ);
  nv_check(1, (KcInput[]){F32(650, 10)});
}

/* FusionGridReduction4: rows on threadIdx.x, the row over blockIdx.x{1024} after two
 * rfactors (a serial part, then an unrolled one); [128, 65000] in nvFuser, [32, 9000]
 * over blockIdx.x{256} here. */
Test(reduction_rfactor, FusionGridReduction4) {
  cf_tv *tv0 = nv_symbolic(2);
  cf_tv *tv1 = cf_sum(f, tv0, 1, (int[]){1});
  cf_fusion_add_output(f, tv1);
  cf_split(f, tv1, 1, 256);
  cf_split(f, tv1, 1, 4);
  cf_tv *tv2 = cf_rfactor(f, tv1, 1, (int[]){1});
  cf_tv *tv3 = cf_rfactor(f, tv1, 1, (int[]){1});
  cf_compute_at(f, tv0, tv2, 1);
  cf_compute_at(f, tv2, tv3, 1);
  cf_compute_at(f, tv3, tv1, 1);
  cf_compute_at(f, tv0, tv1, 1);
  cf_parallelize(f, tv2, 2, CF_PT_UNROLL);
  cf_parallelize(f, tv1, 0, CF_PT_TIDX);
  nv_parallelize_each(3, (cf_tv *[]){tv1, tv2, tv3}, -1, CF_PT_BIDX);
  nv_check_tol(1, (KcInput[]){F32(32, 9000)}, 1e-4);
}

/* FusionGridReduction5: rows on threadIdx.y{16}, the row over blockIdx.x{4} x
 * threadIdx.x{64}; [16, 6500]. */
Test(reduction_rfactor, FusionGridReduction5) {
  cf_tv *tv0 = nv_symbolic(2);
  cf_tv *tv1 = cf_sum(f, tv0, 1, (int[]){1});
  cf_fusion_add_output(f, tv1);
  cf_split(f, tv1, 1, 64);
  cf_split(f, tv1, 1, 4);
  cf_tv *tv2 = cf_rfactor(f, tv1, 1, (int[]){1});
  cf_compute_at(f, tv0, tv1, 1);
  nv_parallelize_each(2, (cf_tv *[]){tv1, tv2}, -1, CF_PT_TIDX);
  nv_parallelize_each(2, (cf_tv *[]){tv1, tv2}, -2, CF_PT_BIDX);
  cf_parallelize(f, tv1, 0, CF_PT_TIDY);
  nv_check(1, (KcInput[]){F32(16, 6500)});
}

/* FusionGridReduction6: a sum over two axes split by 128 each, rfactored twice; rows on
 * blockIdx.y. [6500, 200, 200] in nvFuser, [13, 200, 200] here. */
Test(reduction_rfactor, FusionGridReduction6) {
  cf_tv *tv0 = nv_symbolic(3);
  cf_tv *tv1 = cf_sum(f, tv0, 2, (int[]){1, 2});
  cf_fusion_add_output(f, tv1);
  cf_split(f, tv1, 2, 128);
  cf_split(f, tv1, 1, 128);
  cf_tv *tv2 = cf_rfactor(f, tv1, 1, (int[]){3});
  cf_tv *tv3 = cf_rfactor(f, tv1, 1, (int[]){1});
  cf_compute_at(f, tv3, tv1, 1);
  cf_compute_at(f, tv2, tv3, 3);
  cf_parallelize(f, tv1, 0, CF_PT_BIDY);
  nv_parallelize_each(3, (cf_tv *[]){tv1, tv2, tv3}, -1, CF_PT_TIDX);
  cf_parallelize(f, tv1, -2, CF_PT_BIDX);
  cf_parallelize(f, tv2, -3, CF_PT_BIDX);
  cf_parallelize(f, tv3, -2, CF_PT_BIDX);
  nv_check(1, (KcInput[]){F32(13, 200, 200)});
}

/* FusionSimpleGemm: C = sum(A[M, K, 1] * B[1, K, N], 1), the K sum split by 32 and
 * rfactored over the outer part, M and N split by 4 after the rfactor; the inputs computed
 * at the output and at the rfactor tensor, -1; [blockIdx.z, threadIdx.z, threadIdx.x,
 * blockIdx.y, threadIdx.y]. */
Test(reduction_rfactor, FusionSimpleGemm) {
  cf_tv *tv[6];
  nv_gemm(tv);
  cf_tv *tv0 = tv[0], *tv1 = tv[1], *tv4 = tv[4], *tv5 = tv[5];
  cf_split(f, tv5, 1, 32);
  cf_tv *tv6 = cf_rfactor(f, tv5, 1, (int[]){1});
  cf_split(f, tv5, 0, 4);
  cf_split(f, tv5, -1, 4);
  cf_compute_at(f, tv0, tv5, -1);
  cf_compute_at(f, tv1, tv5, -1);
  cf_compute_at(f, tv0, tv6, -1);
  cf_compute_at(f, tv1, tv6, -1);
  cf_parallelize(f, tv5, 0, CF_PT_BIDZ);
  cf_parallelize(f, tv5, 1, CF_PT_TIDZ);
  cf_parallelize(f, tv5, -2, CF_PT_BIDY);
  cf_parallelize(f, tv5, -1, CF_PT_TIDY);
  cf_parallelize(f, tv5, 2, CF_PT_TIDX);
  cf_parallelize(f, tv6, 2, CF_PT_TIDX);
  NV_EXPECT_POS(tv6, 5, -1);
  NV_EXPECT_POS(tv4, 6, -1);
  nv_check(2, (KcInput[]){F32(65, 33), F32(33, 17)});
}

/* FusionSmemReduce: a middle-axis sum of [M, K, N] staged in shared memory (cache_after of
 * the input), N split by 32 and K by 128, M by 32, reordered, rfactored over the K serial
 * part; [154, 45, 1524] in nvFuser, [40, 45, 100] here. */
Test(reduction_rfactor, FusionSmemReduce) {
  cf_tv *tv0 = nv_symbolic(3);
  cf_tv *tv1 = cf_sum(f, tv0, 1, (int[]){1});
  cf_fusion_add_output(f, tv1);
  cf_tv *tv2 = cf_cache_after(f, tv0);
  cf_set_memory_type(f, tv2, CF_MEM_SHARED);
  cf_split(f, tv1, 2, 32);
  cf_split(f, tv1, 1, 128);
  cf_split(f, tv1, 0, 32);
  cf_reorder(f, tv1, 6, (int[]){0, 0, 1, 2, 2, 4, 3, 5, 4, 1, 5, 3});
  cf_tv *tv3 = cf_rfactor(f, tv1, 1, (int[]){-2});
  cf_compute_at(f, tv0, tv1, -2);
  cf_compute_at(f, tv0, tv3, -2);
  cf_parallelize(f, tv1, 0, CF_PT_BIDX);
  cf_parallelize(f, tv1, 1, CF_PT_BIDY);
  nv_parallelize_each(3, (cf_tv *[]){tv1, tv2, tv3}, -1, CF_PT_TIDX);
  nv_check(1, (KcInput[]){F32(40, 45, 100)});
}

/* FusionRfactorContigIDs: the rfactor tensor's kept axes merged, in shared memory. */
Test(reduction_rfactor, FusionRfactorContigIDs) {
  cf_tv *tv0 = nv_symbolic(2);
  cf_tv *tv1 = cf_sum(f, tv0, 1, (int[]){1});
  cf_fusion_add_output(f, tv1);
  cf_split(f, tv1, 1, 32);
  cf_tv *tv2 = cf_rfactor(f, tv1, 1, (int[]){1});
  cf_reorder(f, tv2, 1, (int[]){2, 1}); /* nvFuser's merge(0, 2): the axes made adjacent */
  cf_merge(f, tv2, 0);
  cf_set_memory_type(f, tv2, CF_MEM_SHARED);
  nv_check(1, (KcInput[]){F32(99, 101)});
}

/* FusionRfactorPredication1: a min over 9 elements split by 4 (non-divisible) and
 * rfactored, beside an unrelated pointwise output on the same threadIdx.x. */
Test(reduction_rfactor, FusionRfactorPredication1) {
  cf_tv *tv0 = nv_symbolic(1);
  cf_tv *tv1 = cf_add_scalar(f, tv0, 1.0);
  cf_tv *tv2 = cf_min_reduce(f, tv1, 1, (int[]){0});
  cf_fusion_add_output(f, tv2);
  cf_tv *tv3 = nv_symbolic(1);
  cf_tv *tv4 = cf_add_scalar(f, tv3, 1.0);
  cf_fusion_add_output(f, tv4);
  cf_split(f, tv2, 0, 4);
  cf_rfactor(f, tv2, 1, (int[]){1});
  cf_compute_at(f, tv0, tv2, 1);
  cf_parallelize(f, tv2, 0, CF_PT_TIDX);
  cf_parallelize(f, tv4, 0, CF_PT_TIDX);
  nv_check(2, (KcInput[]){F32(9), F32(128)});
}

/* FusionRfactorPredication2: the final min split again after the rfactor, the rfactor
 * tensor reordered and split, in shared memory, parallelized like the output. */
Test(reduction_rfactor, FusionRfactorPredication2) {
  cf_tv *tv0 = nv_symbolic(1);
  cf_tv *tv1 = cf_min_reduce(f, tv0, 1, (int[]){0});
  cf_fusion_add_output(f, tv1);
  cf_tv *tv2 = nv_symbolic(1);
  cf_tv *tv3 = cf_add_scalar(f, tv2, 1.0);
  cf_fusion_add_output(f, tv3);
  cf_split(f, tv1, 0, 4);
  cf_tv *tv4 = cf_rfactor(f, tv1, 1, (int[]){0});
  cf_split(f, tv1, 0, 3);
  cf_reorder(f, tv4, 1, (int[]){0, 1});
  cf_split(f, tv4, 0, 3);
  cf_set_memory_type(f, tv4, CF_MEM_SHARED);
  cf_parallelize(f, tv1, 0, CF_PT_TIDX);
  cf_parallelize_all_like(f, tv1, 0, NULL);
  cf_parallelize(f, tv3, 0, CF_PT_TIDX);
  nv_check(2, (KcInput[]){F32(9), F32(128)});
}

/* FusionRfactorIndirectRoot: a sum over two axes, split, merged across them, rfactored
 * over the last part; the output split by 256 onto [blockIdx.x, threadIdx.x]. */
Test(reduction_rfactor, FusionRfactorIndirectRoot) {
  cf_tv *tv0 = nv_symbolic(3);
  cf_tv *tv1 = cf_sum(f, tv0, 2, (int[]){1, 2});
  cf_fusion_add_output(f, tv1);
  cf_split(f, tv1, 2, 4);
  cf_split(f, tv1, 1, 3);
  cf_merge(f, tv1, 2);
  cf_tv *rf = cf_rfactor(f, tv1, 1, (int[]){-1});
  cf_split(f, tv1, 0, 256);
  cf_parallelize(f, tv1, 0, CF_PT_BIDX);
  cf_parallelize(f, tv1, 1, CF_PT_TIDX);
  cf_compute_at(f, rf, tv1, -1);
  nv_check(1, (KcInput[]){F32(6, 6, 6)});
}

/* ReplayRFactorMergeBcast: [256, 1, 1, 4] summed over the last axis; the two size-1 axes
 * merged (a broadcast merge stays a broadcast), merged into the rows, the row split by 2
 * and rfactored; then run. */
Test(reduction_rfactor, ReplayRFactorMergeBcast) {
  cf_tv *tv0 = nv_concrete(4, (int64_t[]){256, 1, 1, 4});
  cf_tv *tv1 = cf_sum(f, tv0, 1, (int[]){-1});
  cf_fusion_add_output(f, tv1);
  cf_merge(f, tv1, 1);
  cf_merge(f, tv1, 0);
  cf_split(f, tv1, -1, 2);
  cf_tv *tv2 = cf_rfactor(f, tv1, 1, (int[]){-2});
  char *tr = tu_capture_fusion(cf_fusion_print_transforms, f);
  cr_expect(strstr(tr, "  Merge: bS13{1} and bS14{1} -> bS16{1}\n") != NULL, "a broadcast merge is a broadcast:\n%s", tr);
  free(tr);
  cf_parallelize(f, tv1, 0, CF_PT_TIDX);
  cf_parallelize(f, tv2, 0, CF_PT_TIDX);
  cf_compute_at(f, tv2, tv1, 1);
  nv_check(1, (KcInput[]){F32(256, 1, 1, 4)});
}

/* RfactorIntermediateIDs: the two reduced axes merged and split by 4, the inner part
 * rfactored: in the partial, the merge's output stays a reduction (the rfactored axis
 * derives from it) and the split's outer output becomes an iteration axis. */
Test(reduction_rfactor, RfactorIntermediateIDs) {
  cf_tv *tv0 = nv_concrete(3, (int64_t[]){5, 6, 7}); /* symbolic in nvFuser, which does not run it */
  cf_tv *tv1 = cf_sum(f, tv0, 2, (int[]){1, 2});
  cf_fusion_add_output(f, tv1);
  cf_merge(f, tv1, 1);
  cf_split(f, tv1, 1, 4);
  cf_tv *tv2 = cf_rfactor(f, tv1, 1, (int[]){-1});
  cr_expect_eq(cf_id_iter_type(cf_tv_axis(tv2, -1)), CF_ITER_REDUCTION);
  cr_expect_eq(cf_id_iter_type(cf_tv_axis(tv2, -2)), CF_ITER_ITERATION);
  char *tr = tu_capture_fusion(cf_fusion_print_transforms, f);
  cr_expect(strstr(tr, "  Merge: rS10{6} and rS11{7} -> rS12{42}rf\n"
                       "  Split: rS12{42}rf by factor 4 -> iS13{11}rf, rS14{4}rf\n")
                != NULL, "transforms:\n%s", tr);
  free(tr);
  cf_compute_at(f, tv2, tv1, 1);
  nv_check(1, (KcInput[]){F32(5, 6, 7)});
}

/* The reduction scheduler's inner-reduction schedule written by hand (nvFuser's
 * FusionReductionScheduler and reduction heuristics): rows on blockIdx.x, the row split
 * [serial, unroll{4}, threadIdx.x{32}], the serial and unrolled parts rfactored, the input
 * cached after and computed at the partial, everything inlined as deep as legal. */
Test(reduction_rfactor, hand_schedule_inner_reduction_like_the_scheduler) {
  cf_tv *tv0 = nv_symbolic(2);
  cf_tv *tv1 = cf_sum(f, cf_mul_scalar(f, tv0, 2.0), 1, (int[]){1});
  cf_fusion_add_output(f, tv1);
  cf_tv *c = cf_cache_after(f, tv0);
  cf_split(f, tv1, 1, 32);
  cf_split(f, tv1, 1, 4);
  cf_tv *rf = cf_rfactor(f, tv1, 2, (int[]){1, 2});
  cf_parallelize(f, rf, 0, CF_PT_BIDX);
  cf_parallelize(f, rf, 2, CF_PT_UNROLL);
  cf_parallelize(f, rf, 3, CF_PT_TIDX);
  cf_propagate_transforms(f, rf);
  cf_parallelize_all_like(f, rf, 2, (cf_parallel_type[]){CF_PT_BIDX, CF_PT_TIDX});
  cf_compute_at(f, c, rf, -1);
  cf_inline_most(f);
  cr_expect_eq(cf_tv_compute_at_pos(rf), 1);
  nv_check(1, (KcInput[]){F32(33, 1000)});
}

/* The outer-reduction schedule (a column sum): columns on [blockIdx.x, threadIdx.x{32}],
 * rows split [serial, threadIdx.y{8}], the serial part rfactored, a block reduction over
 * threadIdx.y. */
Test(reduction_rfactor, hand_schedule_outer_reduction_like_the_scheduler) {
  cf_tv *tv0 = nv_symbolic(2);
  cf_tv *tv1 = cf_sum(f, tv0, 1, (int[]){0});
  cf_fusion_add_output(f, tv1);
  cf_split(f, tv1, 1, 32);
  cf_split(f, tv1, 0, 8);
  cf_reorder_all(f, tv1, 4, (int[]){2, 3, 0, 1}); /* [I1o, I1i{32}, R0o, R0i{8}] */
  cf_tv *rf = cf_rfactor(f, tv1, 1, (int[]){2});
  nv_parallelize_each(2, (cf_tv *[]){tv1, rf}, 0, CF_PT_BIDX);
  nv_parallelize_each(2, (cf_tv *[]){tv1, rf}, 1, CF_PT_TIDX);
  nv_parallelize_each(2, (cf_tv *[]){tv1, rf}, -1, CF_PT_TIDY);
  cf_compute_at(f, rf, tv1, 2);
  nv_check(1, (KcInput[]){F32(1000, 70)});
}

/* A cross-block (grid) split of a long row, as the scheduler splits rows longer than a
 * block: [blockIdx.x{4} x serial x threadIdx.x{64}] with the serial part rfactored, then a
 * block and grid reduction, the epilogue computed after it in the same kernel. */
Test(reduction_rfactor, hand_schedule_grid_split_reduction_with_epilogue) {
  cf_tv *tv0 = nv_symbolic(2), *tv2 = nv_symbolic(1);
  cf_tv *tv1 = cf_sum(f, tv0, 1, (int[]){1});
  cf_tv *tv3 = cf_add(f, tv1, tv2);
  cf_fusion_add_output(f, tv3);
  cf_split(f, tv1, 1, 64);
  cf_split_outer(f, tv1, 1, 4);
  cf_tv *rf = cf_rfactor(f, tv1, 1, (int[]){2});
  nv_parallelize_each(2, (cf_tv *[]){tv1, rf}, 0, CF_PT_BIDY);
  nv_parallelize_each(2, (cf_tv *[]){tv1, rf}, 1, CF_PT_BIDX);
  nv_parallelize_each(2, (cf_tv *[]){tv1, rf}, -1, CF_PT_TIDX);
  cf_parallelize(f, tv3, 0, CF_PT_BIDY);
  cf_compute_at(f, rf, tv1, 1);
  cf_compute_at(f, tv1, tv3, 1);
  nv_check_tol(3 - 1, (KcInput[]){F32(6, 3000), F32(6)}, 1e-4);
}
