/* Ports of nvFuser's caching and trivial-reduction tests (test_gpu1.cpp, test_gpu2.cpp):
 * cache_before / cache_after on scheduled tensors, shared-memory staging and indexing, and
 * sums over size-1 broadcast axes, which become squeezes as in nvFuser. Each builds
 * nvFuser's fusion and schedule through cfuser's public calls and checks the outputs
 * against the reference evaluator on the host backend (nv_check, nv_execute_check). */
#include "nvfuser/nvf_util.h"

TestSuite(cache_ports, .init = nv_setup, .fini = nv_teardown);


/* FusionCacheBefore: tv2 = (tv0 + 1) * 3 cached before, then split by 32 and computed. */
Test(cache_ports, FusionCacheBefore) {
  cf_tv *tv0 = nv_symbolic(2);
  cf_tv *tv1 = cf_add_scalar(f, tv0, 1.0);
  cf_tv *tv2 = cf_mul_scalar(f, tv1, 3.0);
  cf_fusion_add_output(f, tv2);
  cf_cache_before(f, tv2);
  cf_split(f, tv2, -1, 32);
  cf_compute_at(f, tv0, tv2, -1);
  cf_parallelize(f, tv2, 0, CF_PT_BIDX);
  cf_parallelize(f, tv2, -1, CF_PT_TIDX);
  nv_check(1, (KcInput[]){F32(32, 750)});
}

/* FusionCacheAfter: the input cached after. */
Test(cache_ports, FusionCacheAfter) {
  cf_tv *tv0 = nv_symbolic(2);
  cf_tv *tv1 = cf_add_scalar(f, tv0, 1.0);
  cf_tv *tv2 = cf_mul_scalar(f, tv1, 3.0);
  cf_fusion_add_output(f, tv2);
  cf_cache_after(f, tv0);
  cf_split(f, tv2, -1, 32);
  cf_compute_at(f, tv0, tv2, -1);
  cf_parallelize(f, tv2, 0, CF_PT_BIDX);
  cf_parallelize(f, tv2, -1, CF_PT_TIDX);
  nv_check(1, (KcInput[]){F32(32, 457)});
}

/* FusionCacheIndirect: an intermediate cached after and before. */
Test(cache_ports, FusionCacheIndirect) {
  cf_tv *tv0 = nv_symbolic(2), *tv1 = nv_symbolic(2), *tv2 = nv_symbolic(2), *tv3 = nv_symbolic(2);
  cf_tv *tv4 = cf_sub(f, tv2, tv3);
  cf_tv *tv5 = cf_add(f, tv1, tv4);
  cf_tv *tv6 = cf_sub(f, tv5, tv0);
  cf_fusion_add_output(f, tv6);
  cf_cache_after(f, tv5);
  cf_cache_before(f, tv5);
  cf_split(f, tv6, -1, 32);
  cf_compute_at(f, tv2, tv6, -1);
  cf_parallelize(f, tv6, 0, CF_PT_BIDX);
  cf_parallelize(f, tv6, -1, CF_PT_TIDX);
  nv_check(4, (KcInput[]){F32(32, 810), F32(32, 810), F32(32, 810), F32(32, 810)});
}

/* FusionCacheBcast: caches around broadcasts, a 2-D tile of 128 x 128 on blocks; [92] x
 * [500] in nvFuser. */
Test(cache_ports, FusionCacheBcast) {
  cf_tv *tv0 = nv_symbolic(1);
  cf_tv *tv1 = cf_broadcast(f, tv0, 2, (bool[]){false, true});
  cf_tv *tv2 = nv_symbolic(1);
  cf_tv *tv3 = cf_broadcast(f, tv2, 2, (bool[]){true, false});
  cf_tv *tv4 = cf_mul(f, tv1, tv3);
  cf_fusion_add_output(f, tv4);
  cf_cache_after(f, tv0);
  cf_cache_before(f, tv1);
  cf_cache_after(f, tv1);
  cf_tv *tv8 = cf_cache_before(f, tv4);
  cf_split(f, tv4, 0, 128);
  cf_split(f, tv4, -1, 128);
  cf_reorder_all(f, tv4, 4, (int[]){0, 2, 1, 3});
  cf_compute_at(f, tv0, tv4, 2);
  cf_compute_at(f, tv2, tv4, 2);
  cf_parallelize(f, tv4, 0, CF_PT_BIDX);
  cf_parallelize(f, tv4, 1, CF_PT_BIDY);
  nv_parallelize_each(3, (cf_tv *[]){tv4, tv3, tv8}, -1, CF_PT_TIDX);
  nv_check(2, (KcInput[]){F32(92), F32(500)});
}

/* FusionCacheMultiConsumer: two caches in shared memory, each computed at its consumer. */
Test(cache_ports, FusionCacheMultiConsumer) {
  cf_tv *tv0 = nv_symbolic(1);
  cf_tv *tv1 = cf_add_scalar(f, tv0, 1.0);
  cf_tv *tv2 = cf_add_scalar(f, tv1, 2.0);
  cf_tv *tv3 = cf_add_scalar(f, tv0, 1.0);
  cf_tv *tv4 = cf_add_scalar(f, tv3, 2.0);
  cf_fusion_add_output(f, tv2);
  cf_fusion_add_output(f, tv4);
  cf_tv *tv5 = cf_cache_before(f, tv1), *tv6 = cf_cache_before(f, tv3);
  cf_set_memory_type(f, tv5, CF_MEM_SHARED);
  cf_set_memory_type(f, tv6, CF_MEM_SHARED);
  cf_compute_at(f, tv1, tv2, -1);
  cf_compute_at(f, tv3, tv4, -1);
  nv_check(1, (KcInput[]){F32(800)});
}

/* FusionSmem: both inputs cached after in shared memory, a 32 x 128 tile on blocks;
 * [128, 10240] in nvFuser, [64, 1024] here. */
Test(cache_ports, FusionSmem) {
  cf_tv *tv0 = nv_symbolic(2), *tv1 = nv_symbolic(2);
  cf_tv *tv2 = cf_mul(f, tv0, tv1);
  cf_fusion_add_output(f, tv2);
  cf_tv *tv3 = cf_cache_after(f, tv0), *tv4 = cf_cache_after(f, tv1);
  cf_set_memory_type(f, tv3, CF_MEM_SHARED);
  cf_set_memory_type(f, tv4, CF_MEM_SHARED);
  cf_split(f, tv2, 0, 32);
  cf_split(f, tv2, 2, 128);
  cf_reorder_all(f, tv2, 4, (int[]){0, 2, 1, 3});
  cf_compute_at(f, tv0, tv2, 2);
  cf_compute_at(f, tv1, tv2, 2);
  cf_parallelize(f, tv2, 0, CF_PT_BIDX);
  cf_parallelize(f, tv2, 1, CF_PT_BIDY);
  nv_parallelize_each(3, (cf_tv *[]){tv2, tv3, tv4}, -1, CF_PT_TIDX);
  nv_check(2, (KcInput[]){F32(64, 1024), F32(64, 1024)});
}

/* FusionCacheBeforeReduction: the sum split by 4, then cached before (the cache takes the
 * split domain), the input computed at the cache and the cache at the output. */
Test(cache_ports, FusionCacheBeforeReduction) {
  cf_tv *tv0 = nv_symbolic(2);
  cf_tv *tv1 = cf_add_scalar(f, tv0, 1.0);
  cf_tv *tv2 = cf_sum(f, tv1, 1, (int[]){1});
  cf_fusion_add_output(f, tv2);
  cf_split(f, tv2, 0, 4);
  cf_tv *tv3 = cf_cache_before(f, tv2);
  cf_compute_at(f, tv0, tv3, -1);
  cf_compute_at(f, tv3, tv2, -1);
  cf_parallelize(f, tv3, -1, CF_PT_TIDX);
  nv_check(1, (KcInput[]){F32(100, 200)});
}

/* FusionCacheBeforeReduction2: a cached reduction that is an output and read again. */
Test(cache_ports, FusionCacheBeforeReduction2) {
  cf_tv *tv0 = nv_symbolic(3);
  cf_tv *tv1 = cf_add_scalar(f, tv0, 1.0);
  cf_tv *tv2 = cf_sum(f, tv1, 1, (int[]){1});
  cf_tv *tv3 = cf_add_scalar(f, tv2, 1.0);
  cf_fusion_add_output(f, tv2);
  cf_fusion_add_output(f, tv3);
  cf_tv *tv4 = cf_cache_before(f, tv2);
  cf_compute_at(f, tv4, tv3, 1);
  cf_compute_at(f, tv0, tv4, -1);
  cf_parallelize(f, tv3, 0, CF_PT_BIDX);
  nv_parallelize_each(4, (cf_tv *[]){tv1, tv2, tv3, tv4}, -1, CF_PT_TIDX);
  nv_check(1, (KcInput[]){F32(10, 20, 30)});
}

/* FusionSmemIndexingSimple: a chain with one tensor in shared and one in global memory. */
Test(cache_ports, FusionSmemIndexingSimple) {
  cf_tv *tv0 = nv_symbolic(2);
  cf_tv *tv1 = cf_add_scalar(f, tv0, 1.0);
  cf_tv *tv2 = cf_add_scalar(f, tv1, 1.0);
  cf_tv *tv3 = cf_add_scalar(f, tv2, 1.0);
  cf_fusion_add_output(f, tv3);
  cf_parallelize(f, tv3, 0, CF_PT_BIDX);
  cf_parallelize(f, tv3, 1, CF_PT_TIDX);
  cf_compute_at(f, tv0, tv3, -1);
  cf_set_memory_type(f, tv1, CF_MEM_SHARED);
  cf_set_memory_type(f, tv2, CF_MEM_GLOBAL);
  nv_check(1, (KcInput[]){F32(12, 34)});
}

/* FusionSmemIndexing: a gemm rfactored over a split K, tiles in shared memory, the rfactor
 * tensor reordered after a compute_at. nvFuser's split factors are run-time scalars
 * (3, 4, 5 at the run); cfuser's splits take constants, so the run's values are given. */
Test(cache_ports, FusionSmemIndexing) {
  cf_tv *tv[6];
  nv_gemm(tv);
  cf_tv *tv0 = tv[0], *tv1 = tv[1], *tv2 = tv[2], *tv3 = tv[3], *tv4 = tv[4], *tv5 = tv[5];
  cf_split(f, tv5, 2, 32);
  cf_split(f, tv5, 1, 5);
  cf_split(f, tv5, 1, 4);
  cf_split(f, tv5, 0, 3);
  cf_reorder(f, tv5, 2, (int[]){1, 5, 5, 1});
  cf_tv *tv6 = cf_rfactor(f, tv5, 1, (int[]){2});
  cf_compute_at(f, tv6, tv5, 2);
  cf_reorder(f, tv6, 5, (int[]){5, -2, 6, -1, 2, 2, 3, 3, 4, 4});
  cf_compute_at(f, tv0, tv6, 3);
  cf_compute_at(f, tv1, tv6, 3);
  cf_compute_at(f, tv4, tv6, -1);
  cf_tv *smem[] = {tv2, tv3, tv4, tv6};
  for (int i = 0; i < 4; i++) cf_set_memory_type(f, smem[i], CF_MEM_SHARED);
  cf_parallelize(f, tv5, 0, CF_PT_BIDZ);
  cf_parallelize(f, tv5, 1, CF_PT_BIDY);
  cf_tv *all[] = {tv2, tv3, tv4, tv5, tv6};
  nv_parallelize_each(5, all, -2, CF_PT_TIDZ);
  nv_parallelize_each(5, all, -1, CF_PT_TIDY);
  nv_check(2, (KcInput[]){F32(31, 65), F32(65, 32)});
}

/* FusionTrivialReduction: a sum over a size-1 axis is a squeeze (no reduction left). */
Test(cache_ports, FusionTrivialReduction) {
  cf_tv *tv0 = nv_concrete(3, (int64_t[]){10, 20, 1});
  cf_tv *tv1 = cf_sum(f, tv0, 1, (int[]){2});
  cf_fusion_add_output(f, tv1);
  char *math = tu_capture_fusion(cf_fusion_print_math, f);
  cr_expect(strstr(math, "sum") == NULL && strstr(math, "squeeze") != NULL, "not a squeeze:\n%s", math);
  free(math);
  nv_check(1, (KcInput[]){F32(10, 20, 1)});
}

/* FusionTrivialReduction2: two trivial sums in a row added to a symbolic input, through the
 * pointwise scheduler. */
Test(cache_ports, FusionTrivialReduction2) {
  cf_tv *tv0 = nv_symbolic(2), *tv1 = nv_concrete(4, (int64_t[]){1, 1, 7, 8});
  cf_tv *tv2 = cf_sum(f, tv1, 1, (int[]){0});
  cf_tv *tv3 = cf_sum(f, tv2, 1, (int[]){0});
  cf_tv *tv4 = cf_add(f, tv3, tv0);
  cf_fusion_add_output(f, tv4);
  cr_assert_eq(cf_schedule_pointwise(f), CF_OK, "%s", cf_fusion_error(f));
  nv_check(2, (KcInput[]){F32(7, 8), F32(1, 1, 7, 8)});
}

/* FusionTrivialReduction3: one sum over three size-1 axes, through the pointwise scheduler. */
Test(cache_ports, FusionTrivialReduction3) {
  cf_tv *tv0 = nv_symbolic(2), *tv1 = nv_concrete(5, (int64_t[]){1, 1, 1, 7, 8});
  cf_tv *tv2 = cf_sum(f, tv1, 3, (int[]){0, 1, 2});
  cf_tv *tv3 = cf_add(f, tv2, tv0);
  cf_fusion_add_output(f, tv3);
  cr_assert_eq(cf_schedule_pointwise(f), CF_OK, "%s", cf_fusion_error(f));
  nv_check(2, (KcInput[]){F32(7, 8), F32(1, 1, 1, 7, 8)});
}

/* FusionReduceSingle: a sum of [100, 1] over its size-1 axis, unscheduled. */
Test(cache_ports, FusionReduceSingle) {
  cf_tv *tv0 = nv_concrete(2, (int64_t[]){100, 1});
  cf_fusion_add_output(f, cf_sum(f, tv0, 1, (int[]){1}));
  nv_check(1, (KcInput[]){F32(100, 1)});
}

/* FusionReduceImplicitBroadcast 1-3: sums of [80, 4096, 1] over axis 1 and the size-1
 * axis, at once, in two steps, and with a squeeze after, through define and run (nvFuser's
 * reduction scheduler); [80, 512, 1] here. */
Test(cache_ports, FusionReduceImplicitBroadcast) {
  cf_tv *tv0 = nv_concrete(3, (int64_t[]){80, 512, 1});
  cf_fusion_add_output(f, cf_sum(f, tv0, 2, (int[]){1, 2}));
  nv_execute_check(1, (KcInput[]){F32(80, 512, 1)});
}

Test(cache_ports, FusionReduceImplicitBroadcast2) {
  cf_tv *tv0 = nv_concrete(3, (int64_t[]){80, 512, 1});
  cf_tv *tv1 = cf_sum(f, tv0, 1, (int[]){2});
  cf_fusion_add_output(f, cf_sum(f, tv1, 1, (int[]){1}));
  nv_execute_check(1, (KcInput[]){F32(80, 512, 1)});
}

Test(cache_ports, FusionReduceImplicitBroadcast3) {
  cf_tv *tv0 = nv_concrete(3, (int64_t[]){80, 512, 1});
  cf_tv *tv1 = cf_sum(f, tv0, 1, (int[]){1});
  cf_fusion_add_output(f, cf_squeeze(f, tv1, 1, (int[]){1}));
  nv_execute_check(1, (KcInput[]){F32(80, 512, 1)});
}

/* FusionReductionWithTrivialReduction: every combination of reduced axes of [80, 512, 1],
 * [80, 1, 512] and [1, 80, 512] (nvFuser's 4096 is 512 here), seven outputs each, through
 * define and run (sums keeping the size-1 axis too: sum over axis 0 of [80, 512, 1] is
 * [512, 1]). */
Test(cache_ports, FusionReductionWithTrivialReduction) {
  static const int64_t shapes[3][3] = {{80, 512, 1}, {80, 1, 512}, {1, 80, 512}};
  static const int dims[7][3] = {{0}, {1}, {2}, {0, 1}, {0, 2}, {1, 2}, {0, 1, 2}};
  static const int ndims[7] = {1, 1, 1, 2, 2, 2, 3};
  for (int s = 0; s < 3; s++) {
    if (s) nv_teardown(), nv_setup();
    cf_tv *tv0 = nv_concrete(3, shapes[s]);
    for (int r = 0; r < 7; r++) cf_fusion_add_output(f, cf_sum(f, tv0, ndims[r], dims[r]));
    KcInput in = {CF_FLOAT, 3, {shapes[s][0], shapes[s][1], shapes[s][2]}, NULL};
    nv_execute_check(1, &in);
  }
}
