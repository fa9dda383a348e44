/* nvFuser's FusionValidateParallelize1-11 (tests/cpp/test_gpu2.cpp), ported: which
 * producer/consumer parallelizations are valid. Where nvFuser throws (1, 6, 9 and the
 * first half of 8 and 10) cfuser must refuse with a message naming the tensors and the
 * axis; where nvFuser compiles (2-5, 7, 11, the second half of 8 and 10) cfuser must
 * compute the evaluator's result (a stronger check than nvFuser's compile-only 2-5).
 * Adaptations: add(tv, 1) is cf_add_scalar; symbolic 1-D inputs run with 10 elements;
 * TransformPropagatorWithCheck is cf_propagate_transforms_checked; parallelizeAllLike is
 * cf_parallelize_all_like; 7's check for a grid sync at the top level is a check that the
 * kernel has one, and of the result. */
#include "nvfuser/nvf_util.h"

TestSuite(validate_parallelize, .init = nv_setup, .fini = nv_teardown);

/* tv2 = (tv0 + 1) + 1; returns tv1 in *t1. */
static cf_tv *chain(cf_tv **t1) {
  cf_tv *tv0 = nv_symbolic(1);
  *t1 = cf_add_scalar(f, tv0, 1.0);
  cf_tv *tv2 = cf_add_scalar(f, *t1, 1.0);
  cf_fusion_add_output(f, tv2);
  return tv2;
}

/* tv1 on TIDx in local memory, tv2 on TIDy: tv2's threads read what others computed. */
Test(validate_parallelize, parallelize1) {
  cf_tv *tv1, *tv2 = chain(&tv1);
  cf_parallelize(f, tv1, -1, CF_PT_TIDX);
  cf_parallelize(f, tv2, -1, CF_PT_TIDY);
  NV_EXPECT_REFUSED("T1", "axis 0");
}

/* The same with tv1 in shared memory: valid. */
Test(validate_parallelize, parallelize2) {
  cf_tv *tv1, *tv2 = chain(&tv1);
  cf_parallelize(f, tv1, -1, CF_PT_TIDX);
  cf_parallelize(f, tv2, -1, CF_PT_TIDY);
  cf_set_memory_type(f, tv1, CF_MEM_SHARED);
  nv_check(1, (KcInput[]){F32(10)});
}

/* Both split by 4, inner on TIDx, tv1 in global memory: valid. */
Test(validate_parallelize, parallelize3) {
  cf_tv *tv1, *tv2 = chain(&tv1);
  cf_split(f, tv1, -1, 4);
  cf_parallelize(f, tv1, -1, CF_PT_TIDX);
  cf_split(f, tv2, -1, 4);
  cf_parallelize(f, tv2, -1, CF_PT_TIDX);
  cf_set_memory_type(f, tv1, CF_MEM_GLOBAL);
  nv_check(1, (KcInput[]){F32(10)});
}

/* Split by 4 and by 8, tv1 in global memory: valid (communication through global). */
Test(validate_parallelize, parallelize4) {
  cf_tv *tv1, *tv2 = chain(&tv1);
  cf_split(f, tv1, -1, 4);
  cf_parallelize(f, tv1, -1, CF_PT_TIDX);
  cf_split(f, tv2, -1, 8);
  cf_parallelize(f, tv2, -1, CF_PT_TIDX);
  cf_set_memory_type(f, tv1, CF_MEM_GLOBAL);
  nv_check(1, (KcInput[]){F32(10)});
}

/* Split by 4 and by 8, tv1 in shared memory: valid. */
Test(validate_parallelize, parallelize5) {
  cf_tv *tv1, *tv2 = chain(&tv1);
  cf_split(f, tv1, -1, 4);
  cf_parallelize(f, tv1, -1, CF_PT_TIDX);
  cf_set_memory_type(f, tv1, CF_MEM_SHARED);
  cf_split(f, tv2, -1, 8);
  cf_parallelize(f, tv2, -1, CF_PT_TIDX);
  nv_check(1, (KcInput[]){F32(10)});
}

/* tv4[W,X,Y,Z] = bcast(tv0 + 1) + tv1, merged and split by 4, 3, 2; tv2's axis 0 on
 * BIDx while tv3's (sharing its loop) is serial: incompatible (nvFuser issue #995). */
Test(validate_parallelize, parallelize6) {
  cf_tv *tv0 = nv_concrete(3, (int64_t[]){6, 7, 8}), *tv1 = nv_concrete(4, (int64_t[]){5, 6, 7, 8});
  cf_tv *tv2 = cf_add_scalar(f, tv0, 1.0);
  cf_tv *tv3 = cf_broadcast(f, tv2, 4, (bool[]){true, false, false, false});
  cf_tv *tv4 = cf_add(f, tv3, tv1);
  cf_fusion_add_output(f, tv4);
  for (int i = 0; i < 3; i++) cf_merge(f, tv4, 0);
  cf_split(f, tv4, 0, 4);
  cf_split(f, tv4, 0, 3);
  cf_split(f, tv4, 0, 2);
  cf_propagate_transforms_checked(f, tv4);
  cf_compute_at(f, tv0, tv2, 2);
  cf_compute_at(f, tv3, tv4, 2);
  cf_parallelize(f, tv4, 0, CF_PT_BIDX);
  cf_parallelize(f, tv4, -1, CF_PT_TIDX);
  cf_parallelize(f, tv2, 0, CF_PT_BIDX);
  cf_parallelize(f, tv2, -1, CF_PT_TIDX);
  cf_parallelize(f, tv3, -1, CF_PT_TIDX);
  NV_EXPECT_REFUSED("T2", "T3", "axis 0");
}

/* tv1 = exp(tv0) in global memory on BIDx/TIDx, read by tv2 (TIDy) and tv3 (BIDx): a
 * grid sync makes it valid. tv2's blocks read what other blocks of tv1 wrote: lowering
 * puts a grid sync between the write and the read (the kernel is a cooperative launch;
 * on the host every block runs at once), as nvFuser's does. */
Test(validate_parallelize, parallelize7) {
  cf_tv *tv0 = nv_symbolic(2);
  cf_tv *tv1 = cf_exp(f, tv0), *tv2 = cf_set(f, tv1), *tv3 = cf_set(f, tv1);
  cf_fusion_add_output(f, tv2);
  cf_fusion_add_output(f, tv3);
  cf_set_memory_type(f, tv1, CF_MEM_GLOBAL);
  cf_parallelize(f, tv1, 0, CF_PT_BIDX);
  cf_parallelize(f, tv1, 1, CF_PT_TIDX);
  cf_parallelize(f, tv2, 1, CF_PT_TIDY);
  cf_parallelize(f, tv3, 0, CF_PT_BIDX);
  char *src = tu_cuda_kernel_text(f);
  cr_expect(strstr(src, "cf_grid_sync(&GS.data[0]);"), "%s", src);
  free(src);
  nv_check(1, (KcInput[]){F32(5, 7)});
}

/* tv4 = bcast(set(tv1))[i, b] + tv0, tv3 scheduled, propagated and parallelized alike;
 * tv2 inlined at 1 only while tv3 is fully inlined: tv2 and tv3 are indexed differently
 * on TIDx, which needs shared memory ("Inconsistent parallelization found between T2
 * ... T3"); inlining tv2 fully makes it valid (nvFuser issue #1880). */
/* A gap: loops are shared position by position, so T2's axis 1 cannot skip T3's broadcast
 * axis 1 as nvFuser's inlining does; the last compute_at is refused. */
Test(validate_parallelize, parallelize8) {
  cf_tv *tv0 = nv_symbolic(2), *tv1 = nv_symbolic(1);
  cf_tv *tv2 = cf_set(f, tv1);
  cf_tv *tv3 = cf_broadcast(f, tv2, 2, (bool[]){false, true});
  cf_tv *tv4 = cf_add(f, tv3, tv0);
  cf_fusion_add_output(f, tv4);
  cf_split(f, tv3, 0, 32);
  cf_reorder(f, tv3, 1, (int[]){1, -1});
  cf_split(f, tv3, 1, 32);
  cf_reorder(f, tv3, 1, (int[]){2, -1});
  cf_merge(f, tv3, 2);
  cf_split(f, tv3, 2, 16);
  cf_parallelize(f, tv3, -2, CF_PT_TIDX);
  cf_propagate_transforms(f, tv3);
  cf_parallelize_all_like(f, tv3, 0, NULL);
  cf_compute_at(f, tv2, tv4, 1);
  cf_compute_at(f, tv3, tv4, -1);
  NV_EXPECT_REFUSED("T2", "T3", "axis");
  cf_compute_at(f, tv2, tv4, -1);
  nv_expect_gap("compute_at: cannot inline T2_l_float[iS29{( ceilDiv(i2, 32) )}, ithreadIdx.x31{2}, iS32{16}] at "
                "position 3: axis 1 (ithreadIdx.x31{2}) does not map to T3's axis 1 (bS10{1})");
}

/* tv4[10, 5] = bcast(set(tv0)) + 1, merged and split by 4, propagated, the inner axes on
 * TIDx, no inlining: the broadcast merged into tv4's axes is never concretized, but
 * nvFuser's validation refuses it anyway (tv2 and tv3 indexed differently on TIDx). */
Test(validate_parallelize, parallelize9) {
  cf_tv *tv0 = nv_concrete(1, (int64_t[]){10});
  nv_concrete(2, (int64_t[]){10, 5}); /* tv1: an unused input, as in nvFuser */
  cf_tv *tv2 = cf_set(f, tv0);
  cf_tv *tv3 = cf_broadcast(f, tv2, 2, (bool[]){false, true});
  cf_tv *tv4 = cf_add_scalar(f, tv3, 1.0);
  cf_fusion_add_output(f, tv4);
  cf_merge(f, tv4, 0);
  cf_split(f, tv4, 0, 4);
  cf_propagate_transforms(f, tv4);
  cf_parallelize(f, tv2, -1, CF_PT_TIDX);
  cf_parallelize(f, tv3, -1, CF_PT_TIDX);
  cf_parallelize(f, tv4, -1, CF_PT_TIDX);
  NV_EXPECT_REFUSED("T2", "T3", "axis");
}

/* tv5 = bcast(set(set(tv0))) + tv1, merged, split by 4, propagated, tv3 at tv5, 1, all
 * on TIDx like tv5: tv2 (not inlined) is indexed differently from tv3 and refused; with
 * tv2 also at tv5, 1 all are indexed alike and it computes. */
static void build10(cf_tv **tv) {
  tv[0] = nv_concrete(1, (int64_t[]){10});
  tv[1] = nv_concrete(2, (int64_t[]){10, 5});
  tv[2] = cf_set(f, tv[0]);
  tv[3] = cf_set(f, tv[2]);
  tv[4] = cf_broadcast(f, tv[3], 2, (bool[]){false, true});
  tv[5] = cf_add(f, tv[4], tv[1]);
  cf_fusion_add_output(f, tv[5]);
}

/* Where nvFuser throws, cfuser refuses too, naming T3 (Local) and its reader T4 (nvFuser
 * names T2 and T3). A gap: with tv2 also at tv5, 1 nvFuser accepts, but T3 is still read
 * across threads through the merged broadcast axis and cfuser refuses. */
Test(validate_parallelize, parallelize10) {
  cf_tv *tv[6];
  build10(tv);
  cf_merge(f, tv[5], 0);
  cf_split(f, tv[5], 0, 4);
  cf_propagate_transforms_checked(f, tv[5]);
  cf_compute_at(f, tv[3], tv[5], 1);
  cf_parallelize(f, tv[5], -1, CF_PT_TIDX);
  cf_parallelize_all_like(f, tv[5], 0, NULL);
  NV_EXPECT_REFUSED("T3", "T4", "axis");
  cf_compute_at(f, tv[2], tv[5], 1);
  nv_expect_gap("compile: T3 is in Local memory, but T4 reads its axis 1 (ithreadIdx.x19{4}) on threadIdx.x from "
                "other threads; put it in shared memory or parallelize the consumer's matching axis alike");
}

/* As 10 with a further split by 2 and tv2 computed at tv5, 1: tv2 and tv3 share axis 0,
 * so they are indexed alike and no sync is needed. */
/* A gap: T3 (Local) is read across threads through the merged broadcast axis; cfuser
 * refuses what nvFuser accepts. */
Test(validate_parallelize, parallelize11) {
  cf_tv *tv[6];
  build10(tv);
  cf_merge(f, tv[5], 0);
  cf_split(f, tv[5], 0, 4);
  cf_split(f, tv[5], 0, 2);
  cf_propagate_transforms_checked(f, tv[5]);
  cf_compute_at(f, tv[2], tv[5], 1);
  cf_parallelize(f, tv[5], -1, CF_PT_TIDX);
  cf_parallelize_all_like(f, tv[5], 0, NULL);
  nv_expect_gap("compile: T3 is in Local memory, but T4 reads its axis 2 (ithreadIdx.x25{4}) on threadIdx.x from "
                "other threads; put it in shared memory or parallelize the consumer's matching axis alike");
}
