/* nvFuser's FusionAdvancedComputeAtTransposed1-6 (tests/cpp/test_gpu2.cpp), ported: the
 * AdvancedComputeAt cases with transposed (permuted) inputs, so that the tensors
 * computed at the target are permutations; nvFuser computes each.
 * Adaptations: as in test_advanced_compute_at.c (scalar ops, 4-D sizes 9x7x6x5). The
 * computeAt producer is the transpose's output, as in nvFuser (tv0 = transpose(tv0)). */
#include "nvfuser/nvf_util.h"

TestSuite(advanced_compute_at_transposed, .init = nv_setup, .fini = nv_teardown);

static void flat_128_4(cf_tv *tv) {
  while (cf_tv_naxes(tv) > 1) cf_merge(f, tv, 0);
  cf_split(f, tv, 0, 128);
  cf_split(f, tv, 0, 4);
}
static cf_tv *transposed(int rank) {
  cf_tv *in = nv_symbolic(rank);
  return rank == 2 ? cf_transpose(f, in, 0, 1) : cf_permute(f, in, 4, (int[]){3, 0, 1, 2});
}

Test(advanced_compute_at_transposed, transposed1) {
  cf_tv *tv0 = transposed(2);
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
  for (int i = 0; i < 5; i++) NV_EXPECT_POS(mid[i], 1, -1);
  cf_tv *all[] = {tv0, tv1, tv2, tv3, tv4, tv5, tv6, tv7};
  nv_parallelize_each(8, all, 1, CF_PT_UNROLL);
  nv_parallelize_each(8, all, -1, CF_PT_TIDX);
  nv_check(1, (KcInput[]){F32(129, 127)});
}

Test(advanced_compute_at_transposed, transposed2) {
  cf_tv *tv0 = transposed(2);
  cf_tv *tv1 = cf_mul_scalar(f, tv0, -1.0), *tv2 = cf_add_scalar(f, tv0, 3.0), *tv3 = cf_mul_scalar(f, tv0, 2.0);
  cf_tv *tv4 = cf_add(f, tv2, tv1), *tv5 = cf_add(f, tv4, tv3), *tv6 = cf_add(f, tv5, tv3);
  cf_fusion_add_output(f, tv5);
  cf_fusion_add_output(f, tv6);
  flat_128_4(tv6);
  cf_parallelize(f, tv6, 0, CF_PT_BIDX);
  cf_compute_at(f, tv0, tv6, 1);
  cf_tv *all[] = {tv0, tv1, tv2, tv3, tv4, tv5, tv6};
  nv_parallelize_each(7, all, 1, CF_PT_UNROLL);
  nv_parallelize_each(7, all, -1, CF_PT_TIDX);
  nv_check(1, (KcInput[]){F32(129, 127)});
}

Test(advanced_compute_at_transposed, transposed3) {
  cf_tv *tv0 = transposed(4), *tv1 = transposed(4);
  cf_tv *tv2 = cf_mul_scalar(f, tv1, .979361), *tv3 = cf_mul(f, tv2, tv0);
  cf_fusion_add_output(f, tv3);
  flat_128_4(tv3);
  cf_compute_at(f, tv0, tv3, 1);
  cf_compute_at(f, tv1, tv3, 1);
  cf_parallelize(f, tv3, 0, CF_PT_BIDX);
  cf_tv *all[] = {tv0, tv1, tv2, tv3};
  nv_parallelize_each(4, all, 1, CF_PT_UNROLL);
  nv_parallelize_each(4, all, -1, CF_PT_TIDX);
  nv_check(2, (KcInput[]){F32(9, 7, 6, 5), F32(9, 7, 6, 5)});
}

Test(advanced_compute_at_transposed, transposed4) {
  cf_tv *tv0 = transposed(4), *tv1 = transposed(4), *tv2 = transposed(4), *tv3 = transposed(4);
  cf_tv *tv4 = cf_sub(f, tv2, tv3), *tv5 = cf_add(f, tv1, tv4), *tv6 = cf_sub(f, tv5, tv0);
  cf_fusion_add_output(f, tv6);
  flat_128_4(tv6);
  cf_compute_at(f, tv0, tv6, 1);
  cf_compute_at(f, tv1, tv6, 1);
  cf_compute_at(f, tv2, tv6, 1);
  cf_compute_at(f, tv3, tv6, 1);
  cf_parallelize(f, tv6, 0, CF_PT_BIDX);
  cf_tv *all[] = {tv0, tv1, tv2, tv3, tv4, tv5, tv6};
  nv_parallelize_each(7, all, 1, CF_PT_UNROLL);
  nv_parallelize_each(7, all, -1, CF_PT_TIDX);
  nv_check(4, (KcInput[]){F32(9, 7, 6, 5), F32(9, 7, 6, 5), F32(9, 7, 6, 5), F32(9, 7, 6, 5)});
}

Test(advanced_compute_at_transposed, transposed5) {
  cf_tv *tv0 = transposed(2), *tv1 = transposed(2);
  cf_tv *tv2 = cf_add_scalar(f, tv0, 2.0), *tv3 = cf_mul(f, tv1, tv2);
  cf_fusion_add_output(f, tv3);
  cf_merge(f, tv3, 0);
  cf_split(f, tv3, -1, 8);
  cf_split(f, tv3, -1, 4);
  cf_compute_at(f, tv0, tv3, 1);
  cf_compute_at(f, tv1, tv3, 1);
  cf_parallelize(f, tv3, 0, CF_PT_BIDX);
  nv_check(2, (KcInput[]){F32(63, 65), F32(63, 65)});
}

Test(advanced_compute_at_transposed, transposed6) {
  cf_tv *tv0 = transposed(2), *tv1 = transposed(2);
  cf_tv *tv2 = cf_add_scalar(f, tv0, 2.0), *tv3 = cf_mul(f, tv1, tv2);
  cf_fusion_add_output(f, tv3);
  cf_merge(f, tv2, 0);
  cf_split(f, tv2, -1, 8);
  cf_split(f, tv2, -1, 4);
  cf_merge(f, tv3, 0);
  cf_split(f, tv3, -1, 8);
  cf_compute_at(f, tv0, tv3, 1);
  cf_compute_at(f, tv1, tv3, 1);
  cf_parallelize(f, tv3, 0, CF_PT_BIDX);
  nv_check(2, (KcInput[]){F32(63, 65), F32(63, 65)});
}
