/* nvFuser's InliningTest.InliningMismatchedDims1, 2 and 4 (tests/cpp/test_inlining.cpp;
 * 3 does not exist there), ported: a chain with a transpose in the middle (1, 2) or a
 * merge on one tensor (4); inlineMost / inlineAllAt(tv5, -1, best effort) stop at the
 * mismatch (cf_inline_all_at is best effort, as nvFuser's call here). nvFuser's compute-at positions and results.
 * Adaptation: tan has no cfuser op; tanh takes its place. */
#include "nvfuser/nvf_util.h"

TestSuite(inlining_mismatched_dims, .init = nv_setup, .fini = nv_teardown);

/* tv5 = tanh(exp(transpose(cos(sin(tv0)), 1, 2))); tv[] receives tv0..tv5. */
static void build_transposed(cf_tv **tv) {
  tv[0] = nv_concrete(3, (int64_t[]){2, 3, 4});
  tv[1] = cf_sin(f, tv[0]);
  tv[2] = cf_cos(f, tv[1]);
  tv[3] = cf_transpose(f, tv[2], 1, 2);
  tv[4] = cf_exp(f, tv[3]);
  tv[5] = cf_tanh(f, tv[4]);
  cf_fusion_add_output(f, tv[5]);
}

Test(inlining_mismatched_dims, dims1_inline_most) {
  cf_tv *tv[6];
  build_transposed(tv);
  cf_inline_most(f);
  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  static const int ca[6] = {0, 3, 1, 3, 3, 3};
  for (int i = 1; i <= 5; i++) NV_EXPECT_POS(tv[i], ca[i], -1);
  nv_check(1, (KcInput[]){F32(2, 3, 4)});
}

/* nvFuser puts T1 at 1 (positions propagated through T2's limit); cfuser's loop graph lets
 * T1 share all three loops of T2 (their axes map), and the results are the same. */
Test(inlining_mismatched_dims, dims2_inline_all_at_best_effort) {
  cf_tv *tv[6];
  build_transposed(tv);
  cf_inline_all_at(f, tv[5], -1); /* inlineAllAt(tv5, -1, best_effort = true) */
  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  static const int ca[6] = {0, 3, 1, 3, 3, 3}; /* nvFuser: {0, 1, 1, 3, 3, 3} */
  for (int i = 1; i <= 5; i++) NV_EXPECT_POS(tv[i], ca[i], -1);
  nv_check(1, (KcInput[]){F32(2, 3, 4)});
}

/* tv5 = tanh(cos(relu(exp(sin(tv0))))), tv3's axes 1 and 2 merged. */
Test(inlining_mismatched_dims, dims4_merged_in_the_middle) {
  cf_tv *tv[6];
  tv[0] = nv_concrete(3, (int64_t[]){2, 3, 4});
  tv[1] = cf_sin(f, tv[0]);
  tv[2] = cf_exp(f, tv[1]);
  tv[3] = cf_relu(f, tv[2]);
  tv[4] = cf_cos(f, tv[3]);
  tv[5] = cf_tanh(f, tv[4]);
  cf_fusion_add_output(f, tv[5]);
  cf_merge(f, tv[3], 1);
  cf_inline_most(f);
  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  static const int ca[6] = {0, 3, 1, 1, 3, 3};
  for (int i = 1; i <= 5; i++) NV_EXPECT_POS(tv[i], ca[i], -1);
  nv_check(1, (KcInput[]){F32(2, 3, 4)});
}
