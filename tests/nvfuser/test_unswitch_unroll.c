/* nvFuser's tests of Unswitch and Unroll, ported (same fusion, same schedule, nvFuser's
 * result or its error): FusionLoopUnswitch, FusionSizeOneLoop1-2, FusionUnswitchPredicate,
 * FusionSmemPredicateUnswitch, FusionThreadPredicateUnswitch, FusionIssue1133,
 * FusionIssue1223, FusionReductionPredicate, FusionUnrollWithAlloc (tests/cpp/test_gpu2.cpp),
 * FusionLoopUnroll, FusionSimplePWise, FusionExecKernel (test_gpu1.cpp),
 * FusionNonDivisibleSplit3 (test_gpu3.cpp), FusionSimpleVectorizeUnroll
 * (test_vectorization.cpp) and GridAllreduce1 (test_reduction.cpp).
 * Adaptations: add(tv, c) is cf_add_scalar; nvFuser's implicit broadcast of a lower-rank
 * operand is an explicit cf_broadcast; computeAt(..., MostInlined) is cf_inline_most after
 * the propagation; nvFuser's checks of lowered structures (no else branch, allocation
 * sizes) are made on the printed kernel where cfuser's form answers the same question,
 * and cfuser's differences are said at each test. */
#include "nvfuser/nvf_util.h"

TestSuite(unswitch_unroll, .init = nv_setup, .fini = nv_teardown);

static char *kernel_text(void) {
  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  return tu_capture_fusion(cf_fusion_print_kernel, f);
}

/* The math of FusionLoopUnroll, FusionSimplePWise, FusionExecKernel and
 * FusionSimpleVectorizeUnroll: tv3 = tv0 + (tv1 + 2) over two symbolic inputs of the rank;
 * tv2 in *t2, the inputs in in[2]. */
static cf_tv *add_plus_two(int rank, cf_tv **t2, cf_tv **in) {
  in[0] = nv_symbolic(rank), in[1] = nv_symbolic(rank);
  *t2 = cf_add_scalar(f, in[1], 2.0);
  cf_tv *tv3 = cf_add(f, in[0], *t2);
  cf_fusion_add_output(f, tv3);
  return tv3;
}

/* FusionLoopUnswitch: tv2 = tv0 + 1 + 1, split by 32, tv1 at -1, the inner axis unswitched. */
Test(unswitch_unroll, loop_unswitch) {
  cf_tv *tv0 = nv_symbolic(1);
  cf_tv *tv1 = cf_add_scalar(f, tv0, 1.0), *tv2 = cf_add_scalar(f, tv1, 1.0);
  cf_fusion_add_output(f, tv2);
  cf_split(f, tv2, 0, 32);
  cf_compute_at(f, tv1, tv2, -1);
  cf_parallelize(f, tv2, 1, CF_PT_UNSWITCH);
  nv_check(1, (KcInput[]){F32(1000)});
}

/* FusionSizeOneLoop1: tv5[z,x,y] = bcast(bcast(tv0)[x,1] + tv1[x,y]) + tv2[z,x,y], with x
 * split by 8, merged into [z*x/8, 8*y], an outer split by 1 unswitched, blockIdx.x and
 * threadIdx.x. nvFuser also checks that the unswitch has no else branch (every loop of the
 * nest runs once); cfuser keeps the else branch (its header says why): the result is the
 * same. */
Test(unswitch_unroll, size_one_loop1) {
  cf_tv *tv0 = nv_symbolic(1), *tv1 = nv_symbolic(2), *tv2 = nv_symbolic(3);
  cf_tv *tv3 = cf_broadcast(f, tv0, 2, (bool[]){false, true});
  cf_tv *tv4 = cf_add(f, tv3, tv1);
  cf_tv *tv4b = cf_broadcast(f, tv4, 3, (bool[]){true, false, false});
  cf_tv *tv5 = cf_add(f, tv4b, tv2);
  cf_fusion_add_output(f, tv5);
  cf_split(f, tv5, 1, 8);
  cf_merge(f, tv5, 2);
  cf_merge(f, tv5, 0);
  cf_split_outer(f, tv5, 0, 1);
  cf_compute_at(f, tv0, tv5, -1);
  cf_parallelize(f, tv5, 0, CF_PT_UNSWITCH);
  cf_parallelize(f, tv5, 1, CF_PT_BIDX);
  cf_parallelize(f, tv5, 2, CF_PT_TIDX);
  nv_check(3, (KcInput[]){F32(11), F32(11, 12), F32(13, 11, 12)});
}

/* FusionSizeOneLoop2: [15] split by 4 then the outer by 1, that one unswitched: the
 * unswitched loop runs once but the loop inside it four times, so the else branch stays
 * (nvFuser checks it is there). */
Test(unswitch_unroll, size_one_loop2) {
  cf_tv *tv0 = nv_concrete(1, (int64_t[]){15}), *tv1 = cf_add_scalar(f, tv0, 1.0);
  cf_fusion_add_output(f, tv1);
  cf_split(f, tv1, -1, 4);
  cf_split(f, tv1, -2, 1);
  cf_parallelize(f, tv1, -2, CF_PT_UNSWITCH);
  char *k = kernel_text();
  cr_expect(strstr(k, "} else {") != NULL, "the unswitch keeps its else branch:\n%s", k);
  free(k);
  nv_check(1, (KcInput[]){F32(15)});
}

/* FusionNonDivisibleSplit3: sum(tv0 + 1) split by 5 then 3 (non-divisible), everything at
 * -1, the outer reduction axis unswitched. Its tile over-runs the split of 5 by 2 x 3, so
 * the hoisted bound is never true and only the predicated nest is printed. */
Test(unswitch_unroll, non_divisible_split3) {
  cf_tv *tv0 = nv_symbolic(1);
  cf_tv *tv1 = cf_add_scalar(f, tv0, 1.0), *tv2 = cf_sum(f, tv1, 1, (int[]){0});
  cf_fusion_add_output(f, tv2);
  cf_split(f, tv2, 0, 5);
  cf_split(f, tv2, 1, 3);
  cf_compute_at(f, tv0, tv2, -1);
  cf_parallelize(f, tv2, 0, CF_PT_UNSWITCH);
  nv_check(1, (KcInput[]){F32(24)});
}

/* FusionUnswitchPredicate: tv1 in shared memory with threadIdx x and y swapped between it
 * and tv2, under an unswitched loop of 4 rows. */
Test(unswitch_unroll, unswitch_predicate) {
  cf_tv *tv0 = nv_symbolic(2);
  cf_tv *tv1 = cf_add_scalar(f, tv0, 1.0), *tv2 = cf_add_scalar(f, tv1, 1.0);
  cf_fusion_add_output(f, tv2);
  cf_split(f, tv2, 0, 4);
  cf_compute_at(f, tv0, tv2, 2);
  cf_split(f, tv2, -1, 8);
  cf_split(f, tv1, -1, 8);
  cf_parallelize(f, tv2, 1, CF_PT_UNSWITCH);
  cf_parallelize(f, tv2, -1, CF_PT_TIDX);
  cf_parallelize(f, tv2, -2, CF_PT_TIDY);
  cf_parallelize(f, tv1, -1, CF_PT_TIDY);
  cf_parallelize(f, tv1, -2, CF_PT_TIDX);
  cf_set_memory_type(f, tv1, CF_MEM_SHARED);
  nv_check(1, (KcInput[]){F32(4, 10)});
}

/* FusionSmemPredicateUnswitch: a chain tv2..tv5 from tv0 with tv2..tv4 in shared memory,
 * each on another thread dimension, under an unswitched loop of 4; a second chain from tv1
 * makes every thread dimension wider than its uses (non-exact). */
Test(unswitch_unroll, smem_predicate_unswitch) {
  cf_tv *tv0 = nv_symbolic(1), *tv1 = nv_symbolic(1);
  cf_tv *tv2 = cf_add_scalar(f, tv0, 1.0), *tv3 = cf_add_scalar(f, tv2, 1.0);
  cf_tv *tv4 = cf_add_scalar(f, tv3, 1.0), *tv5 = cf_add_scalar(f, tv4, 1.0);
  cf_fusion_add_output(f, tv5);
  cf_tv *tvx = cf_add_scalar(f, tv1, 1.0), *tvy = cf_add_scalar(f, tvx, 1.0), *tvz = cf_add_scalar(f, tvy, 1.0);
  cf_fusion_add_output(f, tvz);
  cf_split(f, tv5, 0, 4);
  cf_compute_at(f, tv0, tv5, 1);
  cf_parallelize(f, tv2, -1, CF_PT_TIDY);
  cf_parallelize(f, tv3, -1, CF_PT_TIDZ);
  cf_parallelize(f, tv4, -1, CF_PT_TIDX);
  cf_parallelize(f, tv5, -1, CF_PT_TIDY);
  cf_parallelize(f, tv5, 0, CF_PT_UNSWITCH);
  cf_split(f, tvx, 0, 5);
  cf_parallelize(f, tvx, -1, CF_PT_TIDX);
  cf_split(f, tvy, 0, 6);
  cf_parallelize(f, tvy, -1, CF_PT_TIDY);
  cf_split(f, tvz, 0, 7);
  cf_parallelize(f, tvz, -1, CF_PT_TIDZ);
  cf_tv *shared[] = {tv2, tv3, tv4, tvx, tvy};
  for (int i = 0; i < 5; i++) cf_set_memory_type(f, shared[i], CF_MEM_SHARED);
  nv_check(2, (KcInput[]){F32(17), F32(19)});
}

/* FusionThreadPredicateUnswitch: a row sum over threadIdx.x of a [10, 1024], then two adds
 * inlined, the rows unswitched: the block reduction sits in the unswitched nest. */
Test(unswitch_unroll, thread_predicate_unswitch) {
  cf_tv *tv0 = nv_concrete(2, (int64_t[]){10, 1024});
  cf_tv *tv1 = cf_sum(f, tv0, 1, (int[]){1});
  cf_tv *tv2 = cf_add_scalar(f, tv1, 1.0), *tv3 = cf_add_scalar(f, tv2, 1.0);
  cf_fusion_add_output(f, tv3);
  cf_parallelize(f, tv1, -1, CF_PT_TIDX);
  cf_compute_at(f, tv2, tv3, -1);
  cf_parallelize(f, tv3, 0, CF_PT_UNSWITCH);
  nv_check(1, (KcInput[]){F32(10, 1024)});
}

/* FusionIssue1133: tv3 = sum(tv0 + 1, {1}) + 1, tv1 and tv2 in shared memory, the rows
 * unswitched; nvFuser checks that tv1 takes 32 elements and tv2 one (allocated outside the
 * unswitched loop; cfuser declares every buffer at the top of the kernel), and skips its
 * result check for a CUDA 12.2 failure; cfuser's result is checked. */
Test(unswitch_unroll, issue1133) {
  cf_tv *tv0 = nv_symbolic(2);
  cf_tv *tv1 = cf_add_scalar(f, tv0, 1.0), *tv2 = cf_sum(f, tv1, 1, (int[]){1}), *tv3 = cf_add_scalar(f, tv2, 1.0);
  cf_fusion_add_output(f, tv3);
  cf_compute_at(f, tv0, tv3, 1);
  cf_split(f, tv2, -1, 32);
  cf_compute_at(f, tv1, tv2, -2);
  cf_parallelize(f, tv1, -1, CF_PT_TIDX);
  cf_parallelize(f, tv2, -1, CF_PT_TIDX);
  cf_parallelize(f, tv3, 0, CF_PT_UNSWITCH);
  cf_set_memory_type(f, tv1, CF_MEM_SHARED);
  cf_set_memory_type(f, tv2, CF_MEM_SHARED);
  char *k = kernel_text();
  /* tv1 at offset 0 and tv2 16-byte aligned after its 32 floats: 32 and 1 elements */
  cr_expect(strstr(k, "float* T1 = reinterpret_cast<float*>(cf_smem + 0);\n") != NULL, "%s", k);
  cr_expect(strstr(k, "float* T2 = reinterpret_cast<float*>(cf_smem + 128);\n") != NULL, "%s", k);
  free(k);
  nv_check(1, (KcInput[]){F32(99, 101)});
}

/* FusionIssue1223: sum(tv0 + 1) over both axes split [4 | 1-outer, unswitched | 4] with
 * threadIdx.x and threadIdx.y, and a second output tv3 = tv0 + 0 that makes both thread
 * dimensions wider (non-exact). */
Test(unswitch_unroll, issue1223) {
  cf_tv *tv0 = nv_symbolic(2);
  cf_tv *tv1 = cf_add_scalar(f, tv0, 1.0), *tv2 = cf_sum(f, tv1, 2, (int[]){0, 1});
  cf_fusion_add_output(f, tv2);
  cf_tv *tv3 = cf_add_scalar(f, tv0, 0.0);
  cf_fusion_add_output(f, tv3);
  cf_split(f, tv2, 0, 4);
  cf_split_outer(f, tv2, 1, 1);
  cf_split(f, tv2, -1, 4);
  cf_parallelize(f, tv2, 1, CF_PT_UNSWITCH);
  cf_parallelize(f, tv2, -3, CF_PT_TIDX);
  cf_parallelize(f, tv2, -1, CF_PT_TIDY);
  cf_compute_at(f, tv1, tv2, -1);
  cf_split(f, tv3, 0, 32);
  cf_split(f, tv3, -1, 32);
  cf_parallelize(f, tv3, 1, CF_PT_TIDX);
  cf_parallelize(f, tv3, 3, CF_PT_TIDY);
  nv_check(1, (KcInput[]){F32(11, 10)});
}

/* FusionReductionPredicate: column sums of a [650, 102] read through a cache, the columns
 * split [/128 | /4 | 1 unrolled | 128 threadIdx.x] and the rows by 10, inlined at 4. */
Test(unswitch_unroll, reduction_predicate) {
  cf_tv *tv0 = nv_symbolic(2);
  cf_tv *tv1 = cf_sum(f, tv0, 1, (int[]){0});
  cf_fusion_add_output(f, tv1);
  cf_tv *tv2 = cf_cache_after(f, tv0);
  cf_split(f, tv1, 1, 128);
  cf_split(f, tv1, 1, 4);
  cf_split(f, tv1, 1, 1);
  cf_parallelize(f, tv1, -1, CF_PT_TIDX);
  cf_parallelize(f, tv1, 2, CF_PT_UNROLL);
  cf_split(f, tv1, 0, 10);
  cf_compute_at(f, tv0, tv1, 4);
  cf_parallelize(f, tv2, -1, CF_PT_TIDX);
  nv_check(1, (KcInput[]){F32(650, 102)});
}

/* FusionUnrollWithAlloc: sum(tv0 + 0, {1}) of a [128, 128], the row split by 32 then 4 and
 * rFactored over the serial and unrolled parts, blockIdx.x and threadIdx.x, tv1 at -1.
 * The computeAt into the rFactor tensor reaches past its root split (it stopped at
 * position 1 and left tv1 a symbolic row in registers before issue 23). */
Test(unswitch_unroll, unroll_with_alloc) {
  cf_tv *tv0 = nv_symbolic(2);
  cf_tv *tv1 = cf_add_scalar(f, tv0, 0.0), *tv2 = cf_sum(f, tv1, 1, (int[]){1});
  cf_fusion_add_output(f, tv2);
  cf_split(f, tv2, 1, 32);
  cf_split(f, tv2, 1, 4);
  cf_tv *rf = cf_rfactor(f, tv2, 2, (int[]){-3, -2});
  cf_parallelize(f, tv2, 0, CF_PT_BIDX);
  cf_parallelize(f, tv2, -1, CF_PT_TIDX);
  cf_parallelize(f, rf, 0, CF_PT_BIDX);
  cf_parallelize(f, rf, -1, CF_PT_TIDX);
  cf_parallelize(f, rf, -2, CF_PT_UNROLL);
  cf_compute_at(f, tv1, rf, -1);
  nv_check(1, (KcInput[]){F32(128, 128)});
}

/* FusionLoopUnroll: tv3 = tv0 + (tv1 + 2) over [129, 13, 3] merged, split by 16 then 4:
 * [blockIdx.x, Unroll{4}, threadIdx.x{16}], the inputs computed at 1. */
Test(unswitch_unroll, loop_unroll) {
  cf_tv *in[2], *tv2, *tv3 = add_plus_two(3, &tv2, in);
  cf_merge(f, tv3, 0);
  cf_merge(f, tv3, 0);
  cf_split(f, tv3, 0, 16);
  cf_split(f, tv3, 0, 4);
  cf_compute_at(f, in[0], tv3, 1);
  cf_compute_at(f, in[1], tv3, 1);
  cf_parallelize(f, tv2, 1, CF_PT_UNROLL);
  cf_parallelize(f, tv3, 1, CF_PT_UNROLL);
  cf_parallelize(f, tv2, -1, CF_PT_TIDX);
  cf_parallelize(f, tv3, -1, CF_PT_TIDX);
  cf_parallelize(f, tv3, 0, CF_PT_BIDX);
  nv_check(2, (KcInput[]){F32(129, 13, 3), F32(129, 13, 3)});
}

/* FusionSimplePWise: tv3 = in[0] + (in[1] + 2) over [64, 2, 128] merged whole, split by 128
 * then 4, propagated: [blockIdx.x, Unroll{4}, threadIdx.x{128}], inlined most. nvFuser
 * checks equality exactly. */
Test(unswitch_unroll, simple_pwise) {
  cf_tv *in[2], *tv2, *tv3 = add_plus_two(3, &tv2, in);
  cf_merge(f, tv3, 1);
  cf_merge(f, tv3, 0);
  cf_split(f, tv3, 0, 128);
  cf_split(f, tv3, 0, 4);
  cf_propagate_transforms_checked(f, tv3);
  cf_parallelize(f, tv3, 0, CF_PT_BIDX);
  cf_parallelize(f, tv3, -2, CF_PT_UNROLL);
  cf_parallelize(f, tv3, -1, CF_PT_TIDX);
  cf_parallelize_all_like(f, tv3, 0, NULL);
  cf_inline_most(f);
  nv_check(2, (KcInput[]){F32(64, 2, 128), F32(64, 2, 128)});
}

/* FusionExecKernel: tv3 = in[0] + (in[1] + 2) over [1, 128] merged, split by 128 then 4,
 * propagated, tv2 and tv3 each [blockIdx.x, Unroll, threadIdx.x], inlined most. */
Test(unswitch_unroll, exec_kernel) {
  cf_tv *in[2], *tv2, *tv3 = add_plus_two(2, &tv2, in);
  cf_merge(f, tv3, 0);
  cf_split(f, tv3, 0, 128);
  cf_split(f, tv3, 0, 4);
  cf_propagate_transforms_checked(f, tv3);
  cf_parallelize(f, tv3, 0, CF_PT_BIDX);
  cf_parallelize(f, tv2, 1, CF_PT_UNROLL);
  cf_parallelize(f, tv3, 1, CF_PT_UNROLL);
  cf_parallelize(f, tv2, -1, CF_PT_TIDX);
  cf_parallelize(f, tv3, -1, CF_PT_TIDX);
  cf_inline_most(f);
  nv_check(2, (KcInput[]){F32(1, 128), F32(1, 128)});
}

/* FusionSimpleVectorizeUnroll: tv3 = in[0] + (in[1] + 2) over contiguous [64, 2, 128], inputs
 * cached after, the output cached before; the inner two axes merged and split by 2, the
 * outer by 3 then 1: [blockIdx.x, Unswitch, Unroll{3}, threadIdx.x, vector{2}], the vector
 * axis then reordered to position 2, propagated and parallelized alike, the caches and
 * tv3 vectorized at axis 2, inlined most. A gap: cfuser vectorizes only the innermost loop
 * axis (nvFuser also takes a vector axis with loops inside it). */
Test(unswitch_unroll, simple_vectorize_unroll) {
  cf_tv *in[2], *tv2, *tv3 = add_plus_two(3, &tv2, in);
  cf_tv *c0 = cf_cache_after(f, in[0]), *c1 = cf_cache_after(f, in[1]);
  cf_cache_before(f, tv3);
  cf_merge(f, tv3, 1);
  cf_split(f, tv3, 1, 2);
  cf_split(f, tv3, 0, 3);
  cf_split(f, tv3, 0, 1);
  cf_parallelize(f, tv3, 0, CF_PT_BIDX);
  cf_parallelize(f, tv3, 1, CF_PT_UNSWITCH);
  cf_parallelize(f, tv3, 2, CF_PT_UNROLL);
  cf_parallelize(f, tv3, 3, CF_PT_TIDX);
  cf_reorder(f, tv3, 1, (int[]){4, 2});
  cf_propagate_transforms_checked(f, tv3);
  cf_parallelize_all_like(f, tv3, 0, NULL);
  cf_parallelize(f, c0, 2, CF_PT_VECTORIZE);
  cf_parallelize(f, c1, 2, CF_PT_VECTORIZE);
  cf_parallelize(f, tv3, 2, CF_PT_VECTORIZE);
  cf_inline_most(f);
  nv_expect_gap("compile: cannot vectorize axis 2 (iV41{2}) of T4_l_float[iblockIdx.x37{( ceilDiv(i0, 3) )}, iUS38{1}, "
                "iV41{2}, iUR36{3}, ithreadIdx.x40{( ceilDiv(( i1 * i2 ), 2) )}]: it is not the innermost loop axis");
}

/* GridAllreduce1: tv3 = in[0] + bcast(sum(in[0])) over [999], split by 128, 4 and 1:
 * [blockIdx.y, Unswitch{1}, blockIdx.x{4}, threadIdx.x{128}] propagated and parallelized
 * alike, the sum's unswitch axis as nvFuser marks it: a grid all-reduce read by every block
 * in the same kernel: a grid all-reduce (every block folds the partials after a grid
 * sync, a cooperative launch), as nvFuser's. */
Test(unswitch_unroll, grid_allreduce1) {
  cf_tv *tv0 = nv_symbolic(1);
  cf_tv *tv1 = cf_sum(f, tv0, 1, (int[]){0});
  cf_tv *tv2 = cf_broadcast(f, tv1, 1, (bool[]){true});
  cf_tv *tv3 = cf_add(f, tv0, tv2);
  cf_fusion_add_output(f, tv3);
  cf_split(f, tv3, 0, 128);
  cf_split(f, tv3, 0, 4);
  cf_split(f, tv3, 0, 1);
  cf_propagate_transforms(f, tv3);
  cf_parallelize(f, tv3, 0, CF_PT_BIDY);
  cf_parallelize(f, tv3, 2, CF_PT_BIDX);
  cf_parallelize(f, tv3, 3, CF_PT_TIDX);
  cf_parallelize_all_like(f, tv3, 0, NULL);
  cf_parallelize(f, tv1, 1, CF_PT_UNSWITCH);
  nv_check(1, (KcInput[]){F32(999)});
}

/* FusionWarpReduceUnrollOuterLoop: a persistent tv3 = bcast(sum(tv0, {1})) + tv0 over
 * [16, 128]; the sum's row split outer by 8 and its rows by 4, rFactored over the 8, rows
 * [blockIdx.x, Unroll{4}], the reduction on threadIdx.x, propagated from the rFactor
 * tensor, every tensor's axis 1 unrolled and last axis on threadIdx.x, inlined most.
 * Adaptation: nvFuser pads threadIdx.x to a multiple of a warp (padToMultipleOfWarp), a
 * launch-shape choice cfuser does not offer (the block would be 16 threads wide, the result
 * the same). rFactor after the rows were split (refused before issue 23). */
Test(unswitch_unroll, warp_reduce_unroll_outer_loop) {
  cf_tv *tv0 = nv_symbolic(2);
  cf_tv *tv1 = cf_sum(f, tv0, 1, (int[]){1});
  cf_tv *tv2 = cf_broadcast(f, tv1, 2, (bool[]){false, true});
  cf_tv *tv3 = cf_add(f, tv2, tv0);
  cf_fusion_add_output(f, tv3);
  cf_tv *c0 = cf_cache_after(f, tv0);
  cf_split_outer(f, tv1, 1, 8);
  cf_split(f, tv1, 0, 4);
  cf_tv *rf = cf_rfactor(f, tv1, 1, (int[]){2});
  cf_parallelize(f, rf, 0, CF_PT_BIDX);
  cf_parallelize(f, rf, 1, CF_PT_UNROLL);
  cf_parallelize(f, rf, -1, CF_PT_TIDX);
  cf_parallelize(f, tv1, -1, CF_PT_TIDX);
  cf_parallelize(f, tv1, 1, CF_PT_UNROLL);
  cf_propagate_transforms_checked(f, rf);
  cf_tv *rest[] = {c0, tv2, tv3};
  nv_parallelize_each(3, rest, -1, CF_PT_TIDX);
  nv_parallelize_each(3, rest, 1, CF_PT_UNROLL);
  cf_inline_most(f);
  nv_check(1, (KcInput[]){F32(16, 128)});
}
