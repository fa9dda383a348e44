/* nvFuser's FusionComputeAtCommonConsumer1-3 and FusionComputeAtNoCommonConsumer
 * (tests/cpp/test_gpu1.cpp), ported: computeAt(tv1, tv3, 1) where tv1 has consumers off
 * the path to tv3. nvFuser transforms every dependent of tv1 like the target, computes
 * the tensors up to the common consumer at position 1 and leaves the common consumer
 * and what follows it (and tensors with no common consumer) at position 0; the
 * positions it checks are checked here, then the results.
 * Adaptations: mul(tv, c) / add(tv, c) are cf_mul_scalar / cf_add_scalar; nvFuser's
 * loops over fusion.vals() name the tensors explicitly. */
#include "nvfuser/nvf_util.h"

TestSuite(compute_at_common_consumer, .init = nv_setup, .fini = nv_teardown);

/* tv1 = tv0 * .5; tv2 = tv1 * -1; tv3 = tv1 * -2; tv4 = tv2 + tv3; tv5 = tv4 * 5;
 * outputs tv3, tv4, tv5. */
Test(compute_at_common_consumer, common_consumer1) {
  cf_tv *tv0 = nv_symbolic(1);
  cf_tv *tv1 = cf_mul_scalar(f, tv0, 0.5), *tv2 = cf_mul_scalar(f, tv1, -1.0), *tv3 = cf_mul_scalar(f, tv1, -2.0);
  cf_tv *tv4 = cf_add(f, tv2, tv3), *tv5 = cf_mul_scalar(f, tv4, 5.0);
  cf_fusion_add_output(f, tv3);
  cf_fusion_add_output(f, tv4);
  cf_fusion_add_output(f, tv5);
  cf_split(f, tv3, 0, 128);
  cf_compute_at(f, tv1, tv3, 1);
  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  cf_tv *affected[] = {tv1, tv2, tv3, tv4};
  for (int i = 0; i < 4; i++) cr_expect_eq(cf_tv_naxes(affected[i]), 2, "%s", cf_tv_name(affected[i]));
  NV_EXPECT_POS(tv1, 1, -1);
  NV_EXPECT_POS(tv2, 1, -1);
  NV_EXPECT_POS(tv3, 1, -1);
  NV_EXPECT_POS(tv4, 0, -1);
  NV_EXPECT_POS(tv5, 0, -1);
  cf_parallelize(f, tv3, 0, CF_PT_BIDX);
  nv_parallelize_each(4, affected, -1, CF_PT_TIDX);
  cf_split(f, tv5, 0, 128);
  cf_parallelize(f, tv5, 1, CF_PT_TIDX);
  cf_parallelize(f, tv5, 0, CF_PT_BIDX);
  nv_check(1, (KcInput[]){F32(1000)});
}

/* tv1 = tv0 * .5; tv2 = tv1 * -1; tv3 = tv2 * -1; tv4 = tv1 + 4; tv5 = tv3 + tv4;
 * output tv5; tv3 merged, split by 128 and 4. */
static void build2(cf_tv **tv) {
  tv[0] = nv_symbolic(2);
  tv[1] = cf_mul_scalar(f, tv[0], 0.5);
  tv[2] = cf_mul_scalar(f, tv[1], -1.0);
  tv[3] = cf_mul_scalar(f, tv[2], -1.0);
  tv[4] = cf_add_scalar(f, tv[1], 4.0);
  tv[5] = cf_add(f, tv[3], tv[4]);
  cf_fusion_add_output(f, tv[5]);
}

Test(compute_at_common_consumer, common_consumer2) {
  cf_tv *tv[6];
  build2(tv);
  cf_merge(f, tv[3], 0);
  cf_split(f, tv[3], 0, 128);
  cf_split(f, tv[3], 0, 4);
  cf_parallelize(f, tv[3], 0, CF_PT_BIDX);
  cf_compute_at(f, tv[1], tv[3], 1);
  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  for (int i = 1; i <= 5; i++) {
    cr_expect_eq(cf_tv_naxes(tv[i]), 3, "%s", cf_tv_name(tv[i]));
    NV_EXPECT_POS(tv[i], i == 5 ? 0 : 1, -1);
  }
  nv_parallelize_each(5, &tv[1], 1, CF_PT_UNROLL);
  nv_parallelize_each(5, &tv[1], -1, CF_PT_TIDX);
  nv_check(1, (KcInput[]){F32(129, 127)});
}

/* As 2 with tv5 = tv3 + tv4 and tv6 = tv1 + 6, which has no common consumer with tv3;
 * outputs tv5, tv6. */
Test(compute_at_common_consumer, common_consumer3) {
  cf_tv *tv0 = nv_symbolic(2);
  cf_tv *tv1 = cf_mul_scalar(f, tv0, 0.5), *tv2 = cf_mul_scalar(f, tv1, -1.0), *tv3 = cf_mul_scalar(f, tv2, -1.0);
  cf_tv *tv4 = cf_add_scalar(f, tv1, 4.0), *tv5 = cf_add(f, tv3, tv4), *tv6 = cf_add_scalar(f, tv1, 6.0);
  cf_fusion_add_output(f, tv5);
  cf_fusion_add_output(f, tv6);
  cf_merge(f, tv3, 0);
  cf_split(f, tv3, 0, 128);
  cf_split(f, tv3, 0, 4);
  cf_parallelize(f, tv3, 0, CF_PT_BIDX);
  cf_compute_at(f, tv1, tv3, 1);
  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  cf_tv *all[] = {tv1, tv2, tv3, tv4, tv5, tv6};
  for (int i = 0; i < 6; i++) {
    cr_expect_eq(cf_tv_naxes(all[i]), 3, "%s", cf_tv_name(all[i]));
    if (i >= 4) NV_EXPECT_POS(all[i], 0, 1);
    else NV_EXPECT_POS(all[i], 1, -1);
  }
  nv_parallelize_each(6, all, 1, CF_PT_UNROLL);
  nv_parallelize_each(6, all, -1, CF_PT_TIDX);
  nv_check(1, (KcInput[]){F32(129, 127)});
}

/* As 1 with tv6 = tv1 * 6, not a consumer of tv4; outputs tv3, tv4, tv5, tv6. */
Test(compute_at_common_consumer, no_common_consumer) {
  cf_tv *tv0 = nv_symbolic(1);
  cf_tv *tv1 = cf_mul_scalar(f, tv0, 0.5), *tv2 = cf_mul_scalar(f, tv1, -1.0), *tv3 = cf_mul_scalar(f, tv1, -2.0);
  cf_tv *tv4 = cf_add(f, tv2, tv3), *tv5 = cf_mul_scalar(f, tv4, 5.0), *tv6 = cf_mul_scalar(f, tv1, 6.0);
  cf_fusion_add_output(f, tv3);
  cf_fusion_add_output(f, tv4);
  cf_fusion_add_output(f, tv5);
  cf_fusion_add_output(f, tv6);
  cf_split(f, tv3, 0, 128);
  cf_compute_at(f, tv1, tv3, 1);
  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  cf_tv *affected[] = {tv1, tv2, tv3, tv4, tv5, tv6};
  for (int i = 0; i < 6; i++) {
    cr_expect_eq(cf_tv_naxes(affected[i]), 2, "%s", cf_tv_name(affected[i]));
    NV_EXPECT_POS(affected[i], i >= 4 ? 0 : 1, -1);
  }
  cf_parallelize(f, tv3, 0, CF_PT_BIDX);
  nv_parallelize_each(6, affected, -1, CF_PT_TIDX);
  nv_check(1, (KcInput[]){F32(1000)});
}
