/* nvFuser's FusionAdvancedComputeAt1-8 (tests/cpp/test_gpu1.cpp), ported: computeAt
 * from an input into DAGs with several consumers and outputs, transforms on the target
 * only (1-5) or on both sides (6), broadcasts and a second output (7, 8); with nvFuser's
 * compute-at position checks where it makes them, and its results.
 * Adaptations: mul(tv, -1.0) etc. are cf_mul_scalar / cf_add_scalar; the 4-D inputs of
 * 129x127x63x65 are 9x7x6x5 (the host backend emulates every thread); nvFuser's loops
 * over fusion.vals() name the tensors explicitly. */
#include "nvfuser/nvf_util.h"

TestSuite(advanced_compute_at, .init = nv_setup, .fini = nv_teardown);

/* The common schedule of 1-4: the target merged flat, split by 128 then 4. */
static void flat_128_4(cf_tv *tv) {
  while (cf_tv_naxes(tv) > 1) cf_merge(f, tv, 0);
  cf_split(f, tv, 0, 128);
  cf_split(f, tv, 0, 4);
}

/* tv1 = tv0 * .5; tv2 = tv1 * -1; tv3 = tv1 + 3; tv4 = tv1 * 2; tv5 = tv3 + tv2;
 * tv6 = tv5 + tv4; tv7 = tv1 + tv4; outputs tv6, tv7; tv0 computed at tv7, 1. */
Test(advanced_compute_at, compute_at1) {
  cf_tv *tv0 = nv_symbolic(2);
  cf_tv *tv1 = cf_mul_scalar(f, tv0, 0.5), *tv2 = cf_mul_scalar(f, tv1, -1.0);
  cf_tv *tv3 = cf_add_scalar(f, tv1, 3.0), *tv4 = cf_mul_scalar(f, tv1, 2.0);
  cf_tv *tv5 = cf_add(f, tv3, tv2), *tv6 = cf_add(f, tv5, tv4), *tv7 = cf_add(f, tv1, tv4);
  cf_fusion_add_output(f, tv6);
  cf_fusion_add_output(f, tv7);
  flat_128_4(tv7);
  cf_parallelize(f, tv7, 0, CF_PT_BIDX);
  cf_compute_at(f, tv0, tv7, 1);
  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  cr_expect_eq(cf_tv_naxes(tv7), 3);
  NV_EXPECT_POS(tv7, 0, 1);
  NV_EXPECT_POS(tv6, 0, 1);
  cf_tv *mid[] = {tv1, tv2, tv3, tv4, tv5};
  for (int i = 0; i < 5; i++) {
    cr_expect_eq(cf_tv_naxes(mid[i]), 3);
    NV_EXPECT_POS(mid[i], 1, -1);
  }
  cf_tv *all[] = {tv1, tv2, tv3, tv4, tv5, tv6, tv7};
  nv_parallelize_each(7, all, 1, CF_PT_UNROLL);
  nv_parallelize_each(7, all, -1, CF_PT_TIDX);
  nv_check(1, (KcInput[]){F32(129, 127)});
}

/* tv1 = tv0 * -1; tv2 = tv0 + 3; tv3 = tv0 * 2; tv4 = tv2 + tv1; tv5 = tv4 + tv3;
 * tv6 = tv5 + tv3; outputs tv5, tv6; tv0 computed at tv6, 1. */
Test(advanced_compute_at, compute_at2) {
  cf_tv *tv0 = nv_symbolic(2);
  cf_tv *tv1 = cf_mul_scalar(f, tv0, -1.0), *tv2 = cf_add_scalar(f, tv0, 3.0), *tv3 = cf_mul_scalar(f, tv0, 2.0);
  cf_tv *tv4 = cf_add(f, tv2, tv1), *tv5 = cf_add(f, tv4, tv3), *tv6 = cf_add(f, tv5, tv3);
  cf_fusion_add_output(f, tv5);
  cf_fusion_add_output(f, tv6);
  flat_128_4(tv6);
  cf_parallelize(f, tv6, 0, CF_PT_BIDX);
  cf_compute_at(f, tv0, tv6, 1);
  cf_tv *all[] = {tv1, tv2, tv3, tv4, tv5, tv6};
  nv_parallelize_each(6, all, 1, CF_PT_UNROLL);
  nv_parallelize_each(6, all, -1, CF_PT_TIDX);
  nv_check(1, (KcInput[]){F32(129, 127)});
}

/* tv3 = (tv1 * .979361) * tv0, 4-D, both inputs computed at tv3, 1. */
Test(advanced_compute_at, compute_at3) {
  cf_tv *tv0 = nv_symbolic(4), *tv1 = nv_symbolic(4);
  cf_tv *tv2 = cf_mul_scalar(f, tv1, .979361), *tv3 = cf_mul(f, tv2, tv0);
  cf_fusion_add_output(f, tv3);
  flat_128_4(tv3);
  cf_compute_at(f, tv0, tv3, 1);
  cf_compute_at(f, tv1, tv3, 1);
  cf_parallelize(f, tv3, 0, CF_PT_BIDX);
  cf_tv *all[] = {tv2, tv3};
  nv_parallelize_each(2, all, 1, CF_PT_UNROLL);
  nv_parallelize_each(2, all, -1, CF_PT_TIDX);
  nv_check(2, (KcInput[]){F32(9, 7, 6, 5), F32(9, 7, 6, 5)});
}

/* tv6 = (tv1 + (tv2 - tv3)) - tv0, 4-D, the four inputs computed at tv6, 1. */
Test(advanced_compute_at, compute_at4) {
  cf_tv *tv0 = nv_symbolic(4), *tv1 = nv_symbolic(4), *tv2 = nv_symbolic(4), *tv3 = nv_symbolic(4);
  cf_tv *tv4 = cf_sub(f, tv2, tv3), *tv5 = cf_add(f, tv1, tv4), *tv6 = cf_sub(f, tv5, tv0);
  cf_fusion_add_output(f, tv6);
  flat_128_4(tv6);
  cf_compute_at(f, tv0, tv6, 1);
  cf_compute_at(f, tv1, tv6, 1);
  cf_compute_at(f, tv2, tv6, 1);
  cf_compute_at(f, tv3, tv6, 1);
  cf_parallelize(f, tv6, 0, CF_PT_BIDX);
  cf_tv *all[] = {tv4, tv5, tv6};
  nv_parallelize_each(3, all, 1, CF_PT_UNROLL);
  nv_parallelize_each(3, all, -1, CF_PT_TIDX);
  nv_check(4, (KcInput[]){F32(9, 7, 6, 5), F32(9, 7, 6, 5), F32(9, 7, 6, 5), F32(9, 7, 6, 5)});
}

/* tv3 = tv1 * (tv0 + 2), the target merged and split by 8 then 4; tv2 computed at tv3, 1. */
Test(advanced_compute_at, compute_at5) {
  cf_tv *tv0 = nv_symbolic(2), *tv1 = nv_symbolic(2);
  cf_tv *tv2 = cf_add_scalar(f, tv0, 2.0), *tv3 = cf_mul(f, tv1, tv2);
  cf_fusion_add_output(f, tv3);
  cf_merge(f, tv3, 0);
  cf_split(f, tv3, -1, 8);
  cf_split(f, tv3, -1, 4);
  cf_compute_at(f, tv2, tv3, 1);
  cf_parallelize(f, tv3, 0, CF_PT_BIDX);
  nv_check(2, (KcInput[]){F32(63, 65), F32(63, 65)});
}

/* As 5, but tv2 is scheduled too (merge, split 8, split 4) and tv3 only split by 8. */
Test(advanced_compute_at, compute_at6) {
  cf_tv *tv0 = nv_symbolic(2), *tv1 = nv_symbolic(2);
  cf_tv *tv2 = cf_add_scalar(f, tv0, 2.0), *tv3 = cf_mul(f, tv1, tv2);
  cf_fusion_add_output(f, tv3);
  cf_merge(f, tv2, 0);
  cf_split(f, tv2, -1, 8);
  cf_split(f, tv2, -1, 4);
  cf_merge(f, tv3, 0);
  cf_split(f, tv3, -1, 8);
  cf_compute_at(f, tv2, tv3, 1);
  cf_parallelize(f, tv3, 0, CF_PT_BIDX);
  nv_check(2, (KcInput[]){F32(63, 65), F32(63, 65)});
}

/* tv1 = tv0 + 1; tv3 = tv2 + 3; tv4 = tv1 + tv3 (output); tv7 = bcast(tv1) * tv6
 * (output). Returns tv7 after building; tv[] receives tv0..tv7. */
static void build78(cf_tv **tv) {
  tv[0] = nv_symbolic(1);
  tv[1] = cf_add_scalar(f, tv[0], 1.0);
  tv[2] = nv_symbolic(1);
  tv[3] = cf_add_scalar(f, tv[2], 3.0);
  tv[4] = cf_add(f, tv[1], tv[3]);
  cf_fusion_add_output(f, tv[4]);
  tv[5] = cf_broadcast(f, tv[1], 2, (bool[]){false, true});
  tv[6] = nv_symbolic(2);
  tv[7] = cf_mul(f, tv[5], tv[6]);
  cf_fusion_add_output(f, tv[7]);
}

/* tv7 split, merged, split by 4 and 128, BIDx/TIDx; tv0 at tv7, 1; then tv0 and tv2 at
 * tv4, -1, which must leave tv5's loop domain as it was. */
/* A gap: the second compute_at(tv0, tv4, -1) would replay T1's transforms onto T5 and
 * change T5's axis left of its compute-at position (nvFuser's replay leaves T5 as it is);
 * cfuser refuses, and T5 keeps its domain. */
Test(advanced_compute_at, compute_at7) {
  cf_tv *tv[8];
  build78(tv);
  cf_split(f, tv[7], 1, 2);
  cf_merge(f, tv[7], 0);
  cf_split(f, tv[7], 0, 4);
  cf_split(f, tv[7], 0, 128);
  cf_parallelize(f, tv[7], 0, CF_PT_BIDX);
  cf_parallelize(f, tv[7], 1, CF_PT_TIDX);
  cf_compute_at(f, tv[0], tv[7], 1);
  char *before = tu_tv_str(f, tv[5]);
  cf_compute_at(f, tv[0], tv[4], -1);
  cf_compute_at(f, tv[2], tv[4], -1);
  char *after = tu_tv_str(f, tv[5]);
  cr_expect_str_eq(after, before, "Invalid TV5 domain");
  free(before), free(after);
  nv_expect_gap("compute_at: replaying T1's transforms would change axis 0 (iS23{( ceilDiv(( ceilDiv(i0, 4) ), "
                "128) )}), left of the compute-at position 1 for T5_l_float[iS23{( ceilDiv(( ceilDiv(i0, 4) ), "
                "128) )}, iS24{128}, iS22{4}, bS19{1}]");
}

/* As 7 with outer splits (split(0, 128, false)) and the computeAts in the other order. */
Test(advanced_compute_at, compute_at8) {
  cf_tv *tv[8];
  build78(tv);
  cf_split(f, tv[7], 1, 2);
  cf_merge(f, tv[7], 0);
  cf_split_outer(f, tv[7], 0, 128);
  cf_split_outer(f, tv[7], 0, 4);
  cf_parallelize(f, tv[7], 0, CF_PT_BIDX);
  cf_parallelize(f, tv[7], 1, CF_PT_TIDX);
  cf_compute_at(f, tv[0], tv[4], -1);
  cf_compute_at(f, tv[2], tv[4], -1);
  cf_compute_at(f, tv[0], tv[7], -1);
  nv_check(3, (KcInput[]){F32(100), F32(100), F32(100, 200)});
}
