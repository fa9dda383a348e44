/* Tests of inlining (scheduler/inline.c): inline_at at legal and illegal positions with
 * their messages, broadcast hoisting, best effort, inline_most, inline_all_at on the seed
 * tutorial's TooManyLanes / TooManyCols schedules, and compute_at. */
#include "ir/ir.h"
#include "scheduler/sched.h"
#include "scheduler/sched_test_util.h"

static cf_fusion *f;
static cf_tv *tv[5];

static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }

TestSuite(inline_at, .init = setup, .fini = teardown);

Test(inline_at, legal_position_sets_ca_and_produce_pos) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){2, 4}, tv);
  EXPECT_OK(cf_inline_at(f, tv[1], 1));
  EXPECT_TV(tv[1], "T1_l_float[iS2{2}, iS3{4}] ca_pos( 1 )");
  EXPECT_TV(tv[2], "T2_l_float[iS4{2}, iS5{4}] produce_pos( 1 )");
  cr_expect_eq(cf_tv_compute_at_pos(tv[1]), 1);
}

Test(inline_at, negative_position_counts_from_nloop_plus_one) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){2, 4}, tv);
  EXPECT_OK(cf_inline_at(f, tv[2], -1));
  EXPECT_TV(tv[2], "T2_l_float[iS4{2}, iS5{4}] ca_pos( 2 )");
  EXPECT_OK(cf_inline_at(f, tv[1], -2));
  EXPECT_TV(tv[1], "T1_l_float[iS2{2}, iS3{4}] ca_pos( 1 )");
}

Test(inline_at, position_only_increases) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){2, 4}, tv);
  EXPECT_OK(cf_inline_at(f, tv[1], 2));
  EXPECT_OK(cf_inline_at(f, tv[1], 1));
  EXPECT_OK(cf_inline_at(f, tv[1], 0));
  EXPECT_TV(tv[1], "T1_l_float[iS2{2}, iS3{4}] ca_pos( 2 )");
}

Test(inline_at, position_out_of_range) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){2, 4}, tv);
  EXPECT_ERROR(cf_inline_at(f, tv[1], 3), CF_ERR_INVALID_ARGUMENT,
               "inline_at: position 3 out of range for T1_l_float[iS2{2}, iS3{4}]");
  cf_fusion_clear_error(f);
  EXPECT_ERROR(cf_inline_at(f, tv[1], -4), CF_ERR_INVALID_ARGUMENT,
               "inline_at: position -4 out of range for T1_l_float[iS2{2}, iS3{4}]");
}

/* A fusion input is computed before the kernel: inlining it is a no-op, as in nvFuser. */
Test(inline_at, fusion_input_is_a_no_op) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){2, 4}, tv);
  EXPECT_OK(cf_inline_at(f, tv[0], 1));
  EXPECT_TV(tv[0], "T0_g_float[iS0{2}, iS1{4}]");
}

Test(inline_at, null_tensor) {
  EXPECT_ERROR(cf_inline_at(f, NULL, 1), CF_ERR_INVALID_ARGUMENT, "inline_at: tensor is NULL");
}

static void reduction_fusion(void) {
  tv[0] = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_fusion_add_input(f, tv[0]);
  tv[1] = cf_set(f, tv[0]);
  tv[2] = cf_sum(f, tv[1], 1, (int[]){1});
  tv[3] = cf_set(f, tv[2]);
  cf_fusion_add_output(f, tv[3]);
}

Test(inline_at, not_past_a_reduction_axis) {
  reduction_fusion();
  EXPECT_ERROR(cf_inline_at(f, tv[2], 2), CF_ERR_INVALID_SCHEDULE,
               "inline_at: cannot inline T2_l_float[iS4{4}, rS5{8}] at position 2: axis 1 (rS5{8}) is a reduction "
               "axis");
}

/* A producer may be computed inside its reduction consumer's loops, reduction loop
 * included: the reduction reads it there. */
Test(inline_at, into_a_reduction_consumer) {
  reduction_fusion();
  EXPECT_OK(cf_inline_at(f, tv[1], 2));
  EXPECT_TV(tv[1], "T1_l_float[iS2{4}, iS3{8}] ca_pos( 2 )");
  EXPECT_TV(tv[2], "T2_l_float[iS4{4}, rS5{8}] produce_pos( 2 )");
}

Test(inline_at, best_effort_clamps) {
  reduction_fusion();
  EXPECT_OK(cf_inline_at_best_effort(f, tv[2], 2));
  EXPECT_TV(tv[2], "T2_l_float[iS4{4}, rS5{8}] ca_pos( 1 )");
  EXPECT_TV(tv[3], "T3_g_float[iS6{4}] produce_pos( 1 )");
}

Test(inline_at, not_past_a_vectorized_axis) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){4, 8}, tv);
  EXPECT_OK(cf_split(f, tv[1], 1, 4));
  EXPECT_OK(cf_split(f, tv[2], 1, 4));
  EXPECT_OK(cf_parallelize(f, tv[1], 2, CF_PT_VECTORIZE));
  EXPECT_ERROR(cf_inline_at(f, tv[1], 3), CF_ERR_INVALID_SCHEDULE,
               "inline_at: cannot inline T1_l_float[iS2{4}, iS10{2}, iV11{4}] at position 3: axis 2 (iV11{4}) is "
               "vectorized");
  cf_fusion_clear_error(f);
  EXPECT_OK(cf_inline_at(f, tv[1], 2));
  EXPECT_TV(tv[1], "T1_l_float[iS2{4}, iS10{2}, iV11{4}] ca_pos( 2 )");
}

Test(inline_at, not_into_a_consumer_vectorized_axis) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){4, 8}, tv);
  EXPECT_OK(cf_split(f, tv[1], 1, 4));
  EXPECT_OK(cf_split(f, tv[2], 1, 4));
  EXPECT_OK(cf_parallelize(f, tv[2], 2, CF_PT_VECTORIZE));
  EXPECT_ERROR(cf_inline_at(f, tv[1], 3), CF_ERR_INVALID_SCHEDULE,
               "inline_at: cannot inline T1_l_float[iS2{4}, iS10{2}, iS11{4}] at position 3: axis 2 (iS11{4}) maps "
               "to T2's axis 2 (iV13{4}), which is vectorized");
}

Test(inline_at, not_where_the_consumer_loop_differs) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){4, 8}, tv);
  EXPECT_OK(cf_split(f, tv[2], 1, 2));
  EXPECT_ERROR(cf_inline_at(f, tv[1], 2), CF_ERR_INVALID_SCHEDULE,
               "inline_at: cannot inline T1_l_float[iS2{4}, iS3{8}] at position 2: axis 1 (iS3{8}) does not map to "
               "T2's axis 1 (iS10{4})");
  cf_fusion_clear_error(f);
  /* Splitting by a different factor does not make the same loops either. */
  EXPECT_OK(cf_split(f, tv[1], 1, 4));
  EXPECT_ERROR(cf_inline_at(f, tv[1], 2), CF_ERR_INVALID_SCHEDULE,
               "inline_at: cannot inline T1_l_float[iS2{4}, iS12{2}, iS13{4}] at position 2: axis 1 (iS12{2}) does "
               "not map to T2's axis 1 (iS10{4})");
}

/* The same split of mapped axes maps: T1 and T2 share both outer loops. */
Test(inline_at, equal_splits_map) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){4, 8}, tv);
  EXPECT_OK(cf_split(f, tv[1], 1, 2));
  EXPECT_OK(cf_split(f, tv[2], 1, 2));
  EXPECT_OK(cf_inline_at(f, tv[1], 3));
  EXPECT_TV(tv[1], "T1_l_float[iS2{4}, iS10{4}, iS11{2}] ca_pos( 3 )");
}

Test(inline_at, unroll_stops_only_best_effort) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){4, 8}, tv);
  EXPECT_OK(cf_parallelize(f, tv[2], 1, CF_PT_UNROLL));
  EXPECT_OK(cf_inline_at_best_effort(f, tv[1], 2));
  EXPECT_TV(tv[1], "T1_l_float[iS2{4}, iS3{8}] ca_pos( 1 )");
  EXPECT_OK(cf_inline_at(f, tv[1], 2));
  EXPECT_TV(tv[1], "T1_l_float[iS2{4}, iS3{8}] ca_pos( 2 )");
}

/* An innermost broadcast axis is not inlined: nothing is gained by it. */
Test(inline_at, innermost_broadcast_is_hoisted) {
  tu_set_chain(f, CF_FLOAT, 3, (int64_t[]){4, 8, 1}, tv);
  EXPECT_OK(cf_inline_at(f, tv[1], 3));
  EXPECT_TV(tv[1], "T1_l_float[iS3{4}, iS4{8}, bS5{1}] ca_pos( 2 )");
  EXPECT_TV(tv[2], "T2_l_float[iS6{4}, iS7{8}, bS8{1}] produce_pos( 2 )");
}

/* T2's broadcast axis maps to T4's concrete axis in the permissive map, so T2 can be
 * inlined fully but for the hoisted broadcast. */
static void broadcast_fusion(void) {
  tv[0] = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){4});
  cf_fusion_add_input(f, tv[0]);
  tv[1] = cf_set(f, tv[0]);
  tv[2] = cf_broadcast(f, tv[1], 2, (bool[]){false, true});
  tv[3] = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_fusion_add_input(f, tv[3]);
  tv[4] = cf_add(f, tv[2], tv[3]);
  cf_fusion_add_output(f, tv[4]);
}

Test(inline_at, inline_most_with_broadcast) {
  broadcast_fusion();
  EXPECT_OK(cf_inline_most(f));
  EXPECT_TV(tv[0], "T0_g_float[iS0{4}]");
  EXPECT_TV(tv[1], "T1_l_float[iS1{4}] ca_pos( 1 )");
  EXPECT_TV(tv[2], "T2_l_float[iS2{4}, bS3{1}] ca_pos( 1 ) produce_pos( 1 )");
  EXPECT_TV(tv[3], "T3_g_float[iS4{4}, iS5{8}]");
  EXPECT_TV(tv[4], "T4_g_float[iS6{4}, iS7{8}] ca_pos( 2 ) produce_pos( 1 )");
}

/* After merging everything, T1 (which has no broadcast axis) and T2 (merged with one)
 * still share T4's single loop: the permissive map forwards through the merge. */
Test(inline_at, inline_most_after_propagating_a_merge) {
  broadcast_fusion();
  EXPECT_OK(cf_merge(f, tv[4], 0));
  EXPECT_OK(cf_propagate_transforms_checked(f, tv[4]));
  EXPECT_OK(cf_inline_most(f));
  EXPECT_TV(tv[1], "T1_l_float[iS1{4}] ca_pos( 1 )");
  EXPECT_TV(tv[2], "T2_l_float[iS10{4}] ca_pos( 1 ) produce_pos( 1 )");
  EXPECT_TV(tv[4], "T4_g_float[iS8{32}] ca_pos( 1 ) produce_pos( 1 )");
}

/* The seed tutorial's PerformantVectorizedCopy schedule. */
Test(inline_at, inline_most_performant_vectorized_copy) {
  tu_set_chain(f, CF_FLOAT, 1, NULL, tv);
  cf_set_memory_type(f, tv[2], CF_MEM_TENSOR);
  cf_split(f, tv[4], 0, 4);
  cf_parallelize(f, tv[4], 1, CF_PT_VECTORIZE);
  cf_split(f, tv[4], 0, 128);
  cf_parallelize(f, tv[4], 1, CF_PT_TIDX);
  cf_split(f, tv[4], 0, 2);
  cf_parallelize(f, tv[4], 1, CF_PT_TIDY);
  cf_split(f, tv[4], 0, 2);
  cf_parallelize(f, tv[4], 1, CF_PT_SERIAL);
  cf_parallelize(f, tv[4], 0, CF_PT_BIDX);
  EXPECT_OK(cf_propagate_transforms_checked(f, tv[4]));
  EXPECT_OK(cf_parallelize_all_like(f, tv[4], 3, (cf_parallel_type[]){CF_PT_TIDX, CF_PT_TIDY, CF_PT_BIDX}));
  EXPECT_OK(cf_parallelize(f, tv[1], -1, CF_PT_VECTORIZE));
  for (int i = 2; i <= 3; i++) {
    EXPECT_OK(cf_reorder(f, tv[i], 2, (int[]){1, 3, 3, 1}));
    EXPECT_OK(cf_merge(f, tv[i], -2));
    EXPECT_OK(cf_parallelize(f, tv[i], -1, CF_PT_VECTORIZE));
  }
  EXPECT_OK(cf_set_allocation_to_loop(f, tv[2], true));
  EXPECT_OK(cf_set_tmem_dim_sep_pos(f, tv[2], 2));
  EXPECT_OK(cf_inline_most(f));
  cr_expect_eq(cf_tv_compute_at_pos(tv[0]), 0);
  cr_expect_eq(cf_tv_compute_at_pos(tv[1]), 1);
  cr_expect_eq(cf_tv_compute_at_pos(tv[2]), 3);
  cr_expect_eq(cf_tv_compute_at_pos(tv[3]), 1);
  cr_expect_eq(cf_tv_compute_at_pos(tv[4]), 4);
  /* [BIDx, TIDx, |, TIDy, Vec{Serial * Vec'}], as the tutorial draws it. */
  EXPECT_TV(tv[2], "T2_t_float[iblockIdx.x27{( ceilDiv(( ceilDiv(( ceilDiv(( ceilDiv(i0, 4) ), 128) ), 2) ), 2) )}, "
                   "ithreadIdx.x24{128}, ithreadIdx.y26{2}, iV45{8}] ca_pos( 3 ) produce_pos( 1 )");
}

/* The seed tutorial's TooManyLanes: [BIDx{2}, TIDx{3}, 5, (CA), BIDy{7}, TIDy{11}, 13, 17]. */
Test(inline_at, inline_all_at_too_many_lanes) {
  tu_set_chain(f, CF_FLOAT, 7, (int64_t[]){2, 3, 5, 7, 11, 13, 17}, tv);
  cf_set_memory_type(f, tv[2], CF_MEM_TENSOR);
  cf_parallelize(f, tv[4], 0, CF_PT_BIDX);
  cf_parallelize(f, tv[4], 1, CF_PT_TIDX);
  cf_parallelize(f, tv[4], 3, CF_PT_BIDY);
  cf_parallelize(f, tv[4], 4, CF_PT_TIDY);
  EXPECT_OK(cf_parallelize_all_like(f, tv[4], 0, NULL));
  EXPECT_OK(cf_inline_all_at(f, tv[4], 3));
  EXPECT_TV(tv[0], "T0_g_float[iS0{2}, iS1{3}, iS2{5}, iS3{7}, iS4{11}, iS5{13}, iS6{17}]");
  EXPECT_TV(tv[1], "T1_l_float[iblockIdx.x7{2}, ithreadIdx.x8{3}, iS9{5}, iblockIdx.y10{7}, ithreadIdx.y11{11}, "
                   "iS12{13}, iS13{17}] ca_pos( 3 )");
  EXPECT_TV(tv[2], "T2_t_float[iblockIdx.x14{2}, ithreadIdx.x15{3}, iS16{5}, iblockIdx.y17{7}, ithreadIdx.y18{11}, "
                   "iS19{13}, iS20{17}] ca_pos( 3 ) produce_pos( 3 )");
  EXPECT_TV(tv[4], "T4_g_float[iblockIdx.x28{2}, ithreadIdx.x29{3}, iS30{5}, iblockIdx.y31{7}, ithreadIdx.y32{11}, "
                   "iS33{13}, iS34{17}] ca_pos( 3 ) produce_pos( 3 )");
}

/* The seed tutorial's TooManyCols: [TIDx{32}, BIDx{3}, TIDy{5}, 7, (CA), BIDy{11}, TIDz{13}, 17]. */
Test(inline_at, inline_all_at_too_many_cols) {
  tu_set_chain(f, CF_FLOAT, 7, (int64_t[]){32, 3, 5, 7, 11, 13, 17}, tv);
  cf_set_memory_type(f, tv[2], CF_MEM_TENSOR);
  cf_parallelize(f, tv[4], 0, CF_PT_TIDX);
  cf_parallelize(f, tv[4], 1, CF_PT_BIDX);
  cf_parallelize(f, tv[4], 2, CF_PT_TIDY);
  cf_parallelize(f, tv[4], 4, CF_PT_BIDY);
  cf_parallelize(f, tv[4], 5, CF_PT_TIDZ);
  EXPECT_OK(cf_parallelize_all_like(f, tv[4], 0, NULL));
  EXPECT_OK(cf_inline_all_at(f, tv[4], 4));
  EXPECT_TV(tv[2], "T2_t_float[ithreadIdx.x14{32}, iblockIdx.x15{3}, ithreadIdx.y16{5}, iS17{7}, iblockIdx.y18{11}, "
                   "ithreadIdx.z19{13}, iS20{17}] ca_pos( 4 ) produce_pos( 4 )");
  EXPECT_TV(tv[3], "T3_l_float[ithreadIdx.x21{32}, iblockIdx.x22{3}, ithreadIdx.y23{5}, iS24{7}, iblockIdx.y25{11}, "
                   "ithreadIdx.z26{13}, iS27{17}] ca_pos( 4 ) produce_pos( 4 )");
}

/* Each tensor is inlined at the position matching the reference's, which for the
 * reduction stops at its reduction axis (best effort). */
Test(inline_at, inline_all_at_through_a_reduction) {
  reduction_fusion();
  EXPECT_OK(cf_inline_all_at(f, tv[1], 2));
  EXPECT_TV(tv[1], "T1_l_float[iS2{4}, iS3{8}] ca_pos( 2 )");
  EXPECT_TV(tv[2], "T2_l_float[iS4{4}, rS5{8}] ca_pos( 1 ) produce_pos( 2 )");
  EXPECT_TV(tv[3], "T3_g_float[iS6{4}] ca_pos( 1 ) produce_pos( 1 )");
}

Test(inline_at, inline_all_at_position_out_of_range) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){4, 8}, tv);
  EXPECT_ERROR(cf_inline_all_at(f, tv[4], 3), CF_ERR_INVALID_ARGUMENT,
               "inline_all_at: position 3 out of range for T4_g_float[iS8{4}, iS9{8}]");
}

/* ---- compute_at -------------------------------------------------------------------- */

TestSuite(compute_at, .init = setup, .fini = teardown);

Test(compute_at, propagates_then_inlines) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){16, 8}, tv);
  EXPECT_OK(cf_split(f, tv[3], 0, 4));
  EXPECT_OK(cf_compute_at(f, tv[1], tv[3], 2));
  EXPECT_TV(tv[1], "T1_l_float[iS14{4}, iS15{4}, iS3{8}] ca_pos( 2 )");
  EXPECT_TV(tv[2], "T2_l_float[iS12{4}, iS13{4}, iS5{8}] ca_pos( 2 ) produce_pos( 2 )");
  EXPECT_TV(tv[3], "T3_l_float[iS10{4}, iS11{4}, iS7{8}] produce_pos( 2 )");
  /* Neither the consumer's own consumer nor the input is part of the computation moved. */
  EXPECT_TV(tv[4], "T4_g_float[iS8{16}, iS9{8}]");
  EXPECT_TV(tv[0], "T0_g_float[iS0{16}, iS1{8}]");
}

/* Only the transforms the first pos axes need are replayed; the producer keeps its own
 * schedule of the other axes. */
Test(compute_at, replays_only_up_to_the_position) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){16, 8}, tv);
  EXPECT_OK(cf_split(f, tv[2], 1, 2));
  EXPECT_OK(cf_split(f, tv[3], 0, 4));
  EXPECT_OK(cf_split(f, tv[3], 2, 4));
  EXPECT_OK(cf_compute_at(f, tv[2], tv[3], 1));
  EXPECT_TV(tv[3], "T3_l_float[iS12{4}, iS13{4}, iS14{2}, iS15{4}] produce_pos( 1 )");
  EXPECT_TV(tv[2], "T2_l_float[iS16{4}, iS17{4}, iS10{4}, iS11{2}] ca_pos( 1 )");
}

Test(compute_at, negative_position) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){16, 8}, tv);
  EXPECT_OK(cf_compute_at(f, tv[2], tv[3], -1));
  EXPECT_TV(tv[2], "T2_l_float[iS4{16}, iS5{8}] ca_pos( 2 )");
}

Test(compute_at, producer_must_feed_the_consumer) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){16, 8}, tv);
  EXPECT_ERROR(cf_compute_at(f, tv[3], tv[1], 1), CF_ERR_INVALID_ARGUMENT,
               "compute_at: T1 does not depend on T3 for T1_l_float[iS2{16}, iS3{8}]");
  cf_fusion_clear_error(f);
  EXPECT_ERROR(cf_compute_at(f, tv[2], tv[2], 1), CF_ERR_INVALID_ARGUMENT,
               "compute_at: T2 does not depend on T2 for T2_l_float[iS4{16}, iS5{8}]");
}

/* From a fusion input (nvFuser's computeAt(input, consumer, pos)): the input stays where
 * it is, the tensors between it and the consumer are inlined. */
Test(compute_at, from_an_input) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){16, 8}, tv);
  EXPECT_OK(cf_compute_at(f, tv[0], tv[2], 1));
  EXPECT_TV(tv[0], "T0_g_float[iS0{16}, iS1{8}]");
  EXPECT_TV(tv[1], "T1_l_float[iS2{16}, iS3{8}] ca_pos( 1 )");
}

/* Through a reduction: the tensors between producer and consumer are inlined at the
 * positions matching the consumer's. */
Test(compute_at, through_a_reduction) {
  reduction_fusion();
  EXPECT_OK(cf_compute_at(f, tv[1], tv[3], 1));
  EXPECT_TV(tv[1], "T1_l_float[iS2{4}, iS3{8}] ca_pos( 1 )");
  EXPECT_TV(tv[2], "T2_l_float[iS4{4}, rS5{8}] ca_pos( 1 ) produce_pos( 1 )");
  EXPECT_TV(tv[3], "T3_g_float[iS6{4}] produce_pos( 1 )");
}

/* T1 has no common consumer (T3 and T4 end separate chains): like nvFuser, compute_at
 * inlines T1 and every dependent with uses (T2) at the matching positions, and the first
 * illegal one is named with its axis. */
Test(compute_at, illegal_position_names_the_axis) {
  reduction_fusion();
  tv[4] = cf_set(f, tv[1]);
  cf_fusion_add_output(f, tv[4]);
  EXPECT_OK(cf_parallelize(f, tv[4], 1, CF_PT_VECTORIZE));
  EXPECT_ERROR(cf_compute_at(f, tv[1], tv[4], 2), CF_ERR_INVALID_SCHEDULE,
               "compute_at: cannot inline T2_l_float[iS4{4}, rS5{8}] at position 2: axis 1 (rS5{8}) is a reduction "
               "axis");
}

Test(compute_at, position_out_of_range) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){16, 8}, tv);
  EXPECT_ERROR(cf_compute_at(f, tv[1], tv[2], 3), CF_ERR_INVALID_ARGUMENT,
               "compute_at: position 3 out of range for T2_l_float[iS4{16}, iS5{8}]");
}

/* The normalization pattern over columns: e is read by the sum and, after it, by the
 * division; sharing e's axis 0 (the reduced one) with both would run the division inside
 * the sum's reduction loop. inline_most stops before it. */
Test(inline_at, not_into_a_reduction_and_its_reader) {
  tv[0] = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_fusion_add_input(f, tv[0]);
  tv[1] = cf_exp(f, tv[0]);
  tv[2] = cf_sum(f, tv[1], 1, (int[]){0});
  tv[3] = cf_div(f, tv[1], cf_broadcast(f, tv[2], 2, (bool[]){true, false}));
  cf_fusion_add_output(f, tv[3]);
  EXPECT_OK(cf_inline_most(f));
  EXPECT_TV(tv[1], "T1_l_float[iS2{4}, iS3{8}]");
  EXPECT_ERROR(cf_inline_at(f, tv[1], 1), CF_ERR_INVALID_SCHEDULE,
               "inline_at: cannot inline T1_l_float[iS2{4}, iS3{8}] at position 1: axis 0 (iS2{4}) would share a "
               "loop with a reduction axis of T2, and T3, which reads T2's result, runs in that loop");
}

/* row feeds a and b, and a is stored (T3) before b reads it: sharing row's innermost axis
 * with a and b would put the store, which does not run in that loop, between them. */
Test(inline_at, not_where_a_tensor_between_consumers_is_left_out) {
  tv[0] = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  tv[1] = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){8});
  cf_fusion_add_input(f, tv[0]);
  cf_fusion_add_input(f, tv[1]);
  cf_tv *row = cf_broadcast(f, tv[1], 2, (bool[]){true, false});
  cf_tv *a = cf_mul(f, tv[0], row), *stored = cf_set(f, a), *b = cf_sub(f, stored, row);
  cf_fusion_add_output(f, b);
  cf_fusion_add_output(f, stored);
  EXPECT_OK(cf_inline_at(f, a, 1));
  EXPECT_OK(cf_inline_at(f, stored, 1));
  EXPECT_ERROR(cf_inline_at(f, row, 2), CF_ERR_INVALID_SCHEDULE,
               "inline_at: cannot inline T2_l_float[bS3{1}, iS4{8}] at position 2: axis 1 (iS4{8}) would put T2's "
               "consumers in one loop, and T4, computed between them, has no axis in that loop");
}
