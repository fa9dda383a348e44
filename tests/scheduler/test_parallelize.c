/* Tests of parallelize_all_like (scheduler/parallelize.c): which axes take the
 * reference's parallel types, with and without a type list, through splits, broadcasts,
 * reductions and permutes; inputs are skipped; errors. */
#include "scheduler/sched_test_util.h"

static cf_fusion *f;
static cf_tv *tv[5];

static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }

TestSuite(parallelize_all_like, .init = setup, .fini = teardown);

Test(parallelize_all_like, set_chain_skips_the_input) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){4, 8}, tv);
  EXPECT_OK(cf_parallelize(f, tv[4], 0, CF_PT_BIDX));
  EXPECT_OK(cf_parallelize(f, tv[4], 1, CF_PT_TIDX));
  EXPECT_OK(cf_parallelize_all_like(f, tv[4], 0, NULL));
  EXPECT_TV(tv[0], "T0_g_float[iS0{4}, iS1{8}]");
  EXPECT_TV(tv[1], "T1_l_float[iblockIdx.x2{4}, ithreadIdx.x3{8}]");
  EXPECT_TV(tv[3], "T3_l_float[iblockIdx.x6{4}, ithreadIdx.x7{8}]");
}

Test(parallelize_all_like, only_listed_types) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){4, 8}, tv);
  EXPECT_OK(cf_parallelize(f, tv[4], 0, CF_PT_BIDX));
  EXPECT_OK(cf_parallelize(f, tv[4], 1, CF_PT_TIDX));
  EXPECT_OK(cf_parallelize_all_like(f, tv[4], 1, (cf_parallel_type[]){CF_PT_TIDX}));
  EXPECT_TV(tv[2], "T2_l_float[iS4{4}, ithreadIdx.x5{8}]");
}

/* Without a list the reference's Serial wins too; with one, other axes keep theirs. */
Test(parallelize_all_like, serial_is_copied_only_without_a_list) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){4, 8}, tv);
  EXPECT_OK(cf_parallelize(f, tv[2], 0, CF_PT_UNROLL));
  EXPECT_OK(cf_parallelize(f, tv[4], 1, CF_PT_TIDX));
  EXPECT_OK(cf_parallelize_all_like(f, tv[4], 1, (cf_parallel_type[]){CF_PT_TIDX}));
  EXPECT_TV(tv[2], "T2_l_float[iUR4{4}, ithreadIdx.x5{8}]");
  EXPECT_OK(cf_parallelize_all_like(f, tv[4], 0, NULL));
  EXPECT_TV(tv[2], "T2_l_float[iS4{4}, ithreadIdx.x5{8}]");
}

/* After propagation the tensors' axes are new IterDomains, mapped through equal splits. */
Test(parallelize_all_like, after_propagation) {
  tu_set_chain(f, CF_FLOAT, 1, NULL, tv);
  EXPECT_OK(cf_split(f, tv[4], 0, 128));
  EXPECT_OK(cf_split(f, tv[4], 0, 4));
  EXPECT_OK(cf_propagate_transforms_checked(f, tv[4]));
  EXPECT_OK(cf_parallelize(f, tv[4], 0, CF_PT_BIDX));
  EXPECT_OK(cf_parallelize(f, tv[4], 1, CF_PT_UNROLL));
  EXPECT_OK(cf_parallelize(f, tv[4], 2, CF_PT_TIDX));
  EXPECT_OK(cf_parallelize_all_like(f, tv[4], 0, NULL));
  EXPECT_TV(tv[1], "T1_l_float[iblockIdx.x19{( ceilDiv(( ceilDiv(i0, 128) ), 4) )}, iUR20{4}, ithreadIdx.x18{128}]");
}

/* A producer's broadcast axis takes the type of the consumer axis it stands in for. */
Test(parallelize_all_like, broadcast_axes) {
  tv[0] = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){4});
  cf_fusion_add_input(f, tv[0]);
  tv[1] = cf_broadcast(f, tv[0], 2, (bool[]){false, true});
  tv[2] = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_fusion_add_input(f, tv[2]);
  tv[3] = cf_add(f, tv[1], tv[2]);
  cf_fusion_add_output(f, tv[3]);
  EXPECT_OK(cf_parallelize(f, tv[3], 0, CF_PT_BIDX));
  EXPECT_OK(cf_parallelize(f, tv[3], 1, CF_PT_TIDX));
  EXPECT_OK(cf_parallelize_all_like(f, tv[3], 0, NULL));
  EXPECT_TV(tv[1], "T1_l_float[iblockIdx.x1{4}, bthreadIdx.x2{1}]");
  EXPECT_TV(tv[2], "T2_g_float[iS3{4}, iS4{8}]");
}

Test(parallelize_all_like, reductions_and_permutes) {
  tv[0] = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_fusion_add_input(f, tv[0]);
  tv[1] = cf_transpose(f, tv[0], 0, 1);
  tv[2] = cf_sum(f, tv[1], 1, (int[]){0});
  cf_fusion_add_output(f, tv[2]);
  EXPECT_TV(tv[2], "T2_g_float[rS4{8}, iS5{4}]");
  EXPECT_OK(cf_parallelize(f, tv[2], 0, CF_PT_TIDX));
  EXPECT_OK(cf_parallelize(f, tv[2], 1, CF_PT_BIDX));
  EXPECT_OK(cf_parallelize_all_like(f, tv[2], 0, NULL));
  EXPECT_TV(tv[1], "T1_l_float[ithreadIdx.x3{8}, iblockIdx.x2{4}]");
}

/* Axes that do not map keep their parallel type. */
Test(parallelize_all_like, unmapped_axes_are_left_alone) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){4, 8}, tv);
  EXPECT_OK(cf_split(f, tv[4], 1, 2));
  EXPECT_OK(cf_parallelize(f, tv[4], 0, CF_PT_BIDX));
  EXPECT_OK(cf_parallelize(f, tv[4], 2, CF_PT_TIDX));
  EXPECT_OK(cf_parallelize(f, tv[3], 1, CF_PT_TIDY));
  EXPECT_OK(cf_parallelize_all_like(f, tv[4], 0, NULL));
  EXPECT_TV(tv[3], "T3_l_float[iblockIdx.x6{4}, ithreadIdx.y7{8}]");
}

Test(parallelize_all_like, errors) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){4, 8}, tv);
  EXPECT_ERROR(cf_parallelize_all_like(f, NULL, 0, NULL), CF_ERR_INVALID_ARGUMENT,
               "parallelize_all_like: tensor is NULL");
  cf_fusion_clear_error(f);
  EXPECT_ERROR(cf_parallelize_all_like(f, tv[4], 1, (cf_parallel_type[]){(cf_parallel_type)99}),
               CF_ERR_INVALID_ARGUMENT, "parallelize_all_like: invalid parallel type 99");
  cf_fusion_clear_error(f);
  EXPECT_ERROR(cf_parallelize_all_like(f, tv[4], 2, NULL), CF_ERR_INVALID_ARGUMENT,
               "parallelize_all_like: types is NULL or ntypes is negative");
}
