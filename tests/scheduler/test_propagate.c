/* Tests of transform propagation (scheduler/propagate.c, replay.c, span_tree.c): what
 * each tensor's loop domain becomes, printed in nvFuser's notation, for set chains,
 * broadcasts, reductions and permutes; reuse of existing transforms; refusals; and the
 * seed tutorial's Complicated1 and Complicated2 schedules. */
#include "ir/ir.h"
#include "scheduler/sched.h"
#include "scheduler/sched_test_util.h"

static cf_fusion *f;
static cf_tv *tv[5];

static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }

TestSuite(propagate, .init = setup, .fini = teardown);

Test(propagate, set_chain_from_the_output) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){4, 8}, tv);
  EXPECT_OK(cf_split(f, tv[4], 1, 4));
  EXPECT_OK(cf_propagate_transforms(f, tv[4]));
  EXPECT_TV(tv[4], "T4_g_float[iS8{4}, iS10{2}, iS11{4}]");
  EXPECT_TV(tv[3], "T3_l_float[iS6{4}, iS12{2}, iS13{4}]");
  EXPECT_TV(tv[2], "T2_l_float[iS4{4}, iS14{2}, iS15{4}]");
  EXPECT_TV(tv[1], "T1_l_float[iS2{4}, iS16{2}, iS17{4}]");
  EXPECT_TV(tv[0], "T0_g_float[iS0{4}, iS18{2}, iS19{4}]");
}

/* From a middle tensor the tree goes up and down, best edge first, ties to producers. */
Test(propagate, set_chain_from_the_middle) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){4, 8}, tv);
  EXPECT_OK(cf_merge(f, tv[2], 0));
  EXPECT_OK(cf_split(f, tv[2], 0, 8));
  EXPECT_OK(cf_propagate_transforms_checked(f, tv[2]));
  EXPECT_TV(tv[2], "T2_l_float[iS11{4}, iS12{8}]");
  EXPECT_TV(tv[1], "T1_l_float[iS14{4}, iS15{8}]");
  EXPECT_TV(tv[3], "T3_l_float[iS17{4}, iS18{8}]");
  EXPECT_TV(tv[0], "T0_g_float[iS20{4}, iS21{8}]");
  EXPECT_TV(tv[4], "T4_g_float[iS23{4}, iS24{8}]");
}

Test(propagate, reorders_are_replayed) {
  tu_set_chain(f, CF_FLOAT, 3, (int64_t[]){2, 3, 5}, tv);
  EXPECT_OK(cf_reorder_all(f, tv[4], 3, (int[]){2, 0, 1}));
  EXPECT_OK(cf_propagate_transforms_checked(f, tv[4]));
  EXPECT_TV(tv[4], "T4_g_float[iS13{3}, iS14{5}, iS12{2}]");
  EXPECT_TV(tv[1], "T1_l_float[iS4{3}, iS5{5}, iS3{2}]");
}

/* Propagating again finds every transform already made and reuses it: same IterDomains,
 * nothing new in the fusion. */
Test(propagate, twice_reuses_existing_transforms) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){16, 8}, tv);
  EXPECT_OK(cf_split(f, tv[4], 0, 4));
  EXPECT_OK(cf_merge(f, tv[4], 1));
  EXPECT_OK(cf_propagate_transforms(f, tv[4]));
  cf_id *before[5][2];
  for (int t = 0; t < 5; t++)
    for (int a = 0; a < 2; a++) before[t][a] = cf_tv_axis(tv[t], a);
  int nvals = f->vals.len, nexprs = f->exprs.len;
  EXPECT_OK(cf_propagate_transforms_checked(f, tv[4]));
  cr_expect_eq(f->vals.len, nvals);
  cr_expect_eq(f->exprs.len, nexprs);
  for (int t = 0; t < 5; t++)
    for (int a = 0; a < 2; a++) cr_expect_eq(cf_tv_axis(tv[t], a), before[t][a]);
  EXPECT_TV(tv[1], "T1_l_float[iS19{4}, iS21{32}]");
}

/* The broadcast axis of T2 is a stand-in for T4's axis 1: merged into T2 and forwarded
 * through the merge onto T1, which has no such axis. The input T3 keeps the most
 * information and is reached first. */
Test(propagate, binary_dag_with_broadcast) {
  tv[0] = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){4});
  cf_fusion_add_input(f, tv[0]);
  tv[1] = cf_set(f, tv[0]);
  tv[2] = cf_broadcast(f, tv[1], 2, (bool[]){false, true});
  tv[3] = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_fusion_add_input(f, tv[3]);
  tv[4] = cf_add(f, tv[2], tv[3]);
  cf_fusion_add_output(f, tv[4]);
  EXPECT_OK(cf_merge(f, tv[4], 0));
  EXPECT_OK(cf_split(f, tv[4], 0, 16));
  EXPECT_OK(cf_propagate_transforms_checked(f, tv[4]));
  EXPECT_TV(tv[4], "T4_g_float[iS9{2}, iS10{16}]");
  EXPECT_TV(tv[3], "T3_g_float[iS12{2}, iS13{16}]");
  EXPECT_TV(tv[2], "T2_l_float[iS15{1}, iS16{16}]");
  EXPECT_TV(tv[1], "T1_l_float[iS17{1}, iS18{16}]");
  EXPECT_TV(tv[0], "T0_g_float[iS19{1}, iS20{16}]");
}

/* A consumer's broadcast axes, which the reference lacks, go last. */
Test(propagate, consumer_broadcast_axes_go_last) {
  tv[0] = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){4});
  cf_fusion_add_input(f, tv[0]);
  tv[1] = cf_set(f, tv[0]);
  tv[2] = cf_broadcast(f, tv[1], 2, (bool[]){true, false});
  cf_fusion_add_output(f, tv[2]);
  EXPECT_OK(cf_split(f, tv[1], 0, 2));
  EXPECT_OK(cf_propagate_transforms_checked(f, tv[1]));
  EXPECT_TV(tv[0], "T0_g_float[iS6{2}, iS7{2}]");
  EXPECT_TV(tv[2], "T2_g_float[iS8{2}, iS9{2}, bS2{1}]");
}

static void reduction_fusion(void) {
  tv[0] = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){8, 16});
  cf_fusion_add_input(f, tv[0]);
  tv[1] = cf_set(f, tv[0]);
  tv[2] = cf_sum(f, tv[1], 1, (int[]){1});
  tv[3] = cf_set(f, tv[2]);
  cf_fusion_add_output(f, tv[3]);
}

/* From a consumer of a reduction: the producer's reduction axis has no image and goes
 * last; above the reduction every axis is known again. */
Test(propagate, reduction_from_its_consumer) {
  reduction_fusion();
  EXPECT_OK(cf_split(f, tv[3], 0, 2));
  EXPECT_OK(cf_propagate_transforms_checked(f, tv[3]));
  EXPECT_TV(tv[3], "T3_g_float[iS7{4}, iS8{2}]");
  EXPECT_TV(tv[2], "T2_l_float[iS9{4}, iS10{2}, rS5{16}]");
  EXPECT_TV(tv[1], "T1_l_float[iS11{4}, iS12{2}, iS3{16}]");
  EXPECT_TV(tv[0], "T0_g_float[iS13{4}, iS14{2}, iS1{16}]");
}

/* From the reduction itself: producers take the split of the reduced axis as iteration
 * axes; the consumer, which has no reduced axis, is left as it was. */
Test(propagate, reduction_as_reference) {
  reduction_fusion();
  EXPECT_OK(cf_split(f, tv[2], 1, 4));
  EXPECT_OK(cf_propagate_transforms_checked(f, tv[2]));
  EXPECT_TV(tv[2], "T2_l_float[iS4{8}, rS7{4}, rS8{4}]");
  EXPECT_TV(tv[1], "T1_l_float[iS2{8}, iS9{4}, iS10{4}]");
  EXPECT_TV(tv[0], "T0_g_float[iS0{8}, iS11{4}, iS12{4}]");
  EXPECT_TV(tv[3], "T3_g_float[iS6{8}]");
}

/* A tensor keeps its own transforms of axes the reference does not have: T2's split of
 * its reduction axis survives, after the replayed axes; T1, which has that axis, then
 * takes the split from T2 as an iteration split. */
Test(propagate, keeps_own_transforms_of_unmapped_axes) {
  reduction_fusion();
  EXPECT_OK(cf_split(f, tv[2], 1, 4));
  EXPECT_OK(cf_split(f, tv[3], 0, 2));
  EXPECT_OK(cf_propagate_transforms_checked(f, tv[3]));
  EXPECT_TV(tv[2], "T2_l_float[iS11{4}, iS12{2}, rS7{4}, rS8{4}]");
  EXPECT_TV(tv[1], "T1_l_float[iS13{4}, iS14{2}, iS15{4}, iS16{4}]");
}

/* A diamond: T1 is reached once, through the better of its two consumers. */
Test(propagate, diamond) {
  tv[0] = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_fusion_add_input(f, tv[0]);
  tv[1] = cf_set(f, tv[0]);
  tv[2] = cf_neg(f, tv[1]);
  tv[3] = cf_add(f, tv[1], tv[2]);
  cf_fusion_add_output(f, tv[3]);
  EXPECT_OK(cf_merge(f, tv[3], 0));
  EXPECT_OK(cf_split(f, tv[3], 0, 4));
  EXPECT_OK(cf_propagate_transforms_checked(f, tv[3]));
  EXPECT_TV(tv[1], "T1_l_float[iS12{8}, iS13{4}]");
  EXPECT_TV(tv[2], "T2_l_float[iS15{8}, iS16{4}]");
  EXPECT_TV(tv[0], "T0_g_float[iS18{8}, iS19{4}]");
  int nvals = f->vals.len;
  EXPECT_OK(cf_propagate_transforms_checked(f, tv[2]));
  cr_expect_eq(f->vals.len, nvals);
}

/* Through a transpose the merge is replayed on the producer's axes in the consumer's
 * (logical) order. */
Test(propagate, through_a_permute) {
  tv[0] = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_fusion_add_input(f, tv[0]);
  tv[1] = cf_set(f, tv[0]);
  tv[2] = cf_transpose(f, tv[1], 0, 1);
  tv[3] = cf_set(f, tv[2]);
  cf_fusion_add_output(f, tv[3]);
  EXPECT_TV(tv[2], "T2_l_float[iS5{8}, iS4{4}]");
  EXPECT_OK(cf_merge(f, tv[3], 0));
  EXPECT_OK(cf_split(f, tv[3], 0, 4));
  EXPECT_OK(cf_propagate_transforms_checked(f, tv[3]));
  EXPECT_TV(tv[2], "T2_l_float[iS12{8}, iS13{4}]");
  EXPECT_TV(tv[1], "T1_l_float[iS15{8}, iS16{4}]");
  char *t = tu_capture_fusion(cf_fusion_print_transforms, f);
  cr_expect(strstr(t, "Merge: iS3{8} and iS2{4} -> iS14{32}") != NULL, "%s", t);
  free(t);
}

Test(propagate, symbolic_extents) {
  tu_set_chain(f, CF_FLOAT, 1, NULL, tv);
  EXPECT_OK(cf_split(f, tv[4], 0, 128));
  EXPECT_OK(cf_propagate_transforms_checked(f, tv[4]));
  EXPECT_TV(tv[1], "T1_l_float[iS11{( ceilDiv(i0, 128) )}, iS12{128}]");
}

Test(propagate, parallel_types_are_not_copied) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){4, 8}, tv);
  EXPECT_OK(cf_parallelize(f, tv[4], 0, CF_PT_BIDX));
  EXPECT_OK(cf_parallelize(f, tv[4], 1, CF_PT_TIDX));
  EXPECT_OK(cf_propagate_transforms_checked(f, tv[4]));
  EXPECT_TV(tv[3], "T3_l_float[iS6{4}, iS7{8}]");
}

/* T1 is inlined into T2, so T2's first loop is shared and may not change. */
Test(propagate, refuses_to_change_axes_left_of_an_inline_position) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){4, 8}, tv);
  EXPECT_OK(cf_inline_at(f, tv[1], 1));
  EXPECT_OK(cf_split(f, tv[4], 0, 2));
  EXPECT_ERROR(cf_propagate_transforms(f, tv[4]), CF_ERR_INVALID_SCHEDULE,
               "propagate_transforms: replaying T3's transforms would change axis 0 (iS4{4}), left of the "
               "position 1 where producers are inlined for T2_l_float[iS4{4}, iS5{8}]");
}

Test(propagate, refuses_to_change_axes_left_of_the_compute_at_position) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){4, 8}, tv);
  EXPECT_OK(cf_inline_at(f, tv[3], 1));
  EXPECT_OK(cf_split(f, tv[2], 0, 2));
  EXPECT_ERROR(cf_propagate_transforms(f, tv[2]), CF_ERR_INVALID_SCHEDULE,
               "propagate_transforms: replaying T2's transforms would change axis 0 (iS6{4}), left of the "
               "compute-at position 1 for T3_l_float[iS6{4}, iS7{8}]");
}

/* A schedule matching up to the inline position is fine: only later axes change. */
Test(propagate, changes_right_of_an_inline_position_are_fine) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){4, 8}, tv);
  EXPECT_OK(cf_inline_at(f, tv[1], 1));
  EXPECT_OK(cf_split(f, tv[4], 1, 2));
  EXPECT_OK(cf_propagate_transforms_checked(f, tv[4]));
  EXPECT_TV(tv[2], "T2_l_float[iS4{4}, iS14{4}, iS15{2}] produce_pos( 1 )");
  EXPECT_TV(tv[1], "T1_l_float[iS2{4}, iS16{4}, iS17{2}] ca_pos( 1 )");
}

Test(propagate, check_reports_a_hand_made_mismatch) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){4, 8}, tv);
  EXPECT_OK(cf_split(f, tv[4], 1, 4));
  EXPECT_OK(cf_propagate_transforms_checked(f, tv[4]));
  EXPECT_OK(cf_reorder(f, tv[2], 1, (int[]){0, 2}));
  EXPECT_ERROR(sched_check_transforms(f, ir_tv(tv[4]), "check"), CF_ERR_INVALID_SCHEDULE,
               "check: loop axis 0 (iS14{2}) of T2 does not match loop axis 0 (iS6{4}) of T3 for "
               "T2_l_float[iS14{2}, iS15{4}, iS4{4}]");
}

Test(propagate, check_reports_a_missing_axis) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){4, 8}, tv);
  EXPECT_OK(cf_split(f, tv[4], 1, 4));
  EXPECT_OK(cf_propagate_transforms_checked(f, tv[4]));
  EXPECT_OK(cf_merge(f, tv[1], 1));
  EXPECT_ERROR(sched_check_transforms(f, ir_tv(tv[4]), "check"), CF_ERR_INVALID_SCHEDULE,
               "check: T1 has no loop axis matching loop axis 1 (iS14{2}) of T2 for T1_l_float[iS2{4}, iS20{8}]");
}

Test(propagate, null_and_foreign_tensors) {
  tu_set_chain(f, CF_FLOAT, 1, (int64_t[]){8}, tv);
  EXPECT_ERROR(cf_propagate_transforms(f, NULL), CF_ERR_INVALID_ARGUMENT, "propagate_transforms: tensor is NULL");
  cf_fusion_clear_error(f);
  cf_fusion *g = cf_fusion_create();
  cf_tv *other = cf_tensor_concrete(g, CF_FLOAT, 1, (int64_t[]){8});
  EXPECT_ERROR(cf_propagate_transforms_checked(f, other), CF_ERR_INVALID_ARGUMENT,
               "propagate_transforms_checked: T0 belongs to another fusion");
  cf_fusion_destroy(g);
}

Test(propagate, does_nothing_after_an_earlier_error) {
  tu_set_chain(f, CF_FLOAT, 1, (int64_t[]){8}, tv);
  cr_assert_eq(cf_split(f, tv[4], 3, 2), CF_ERR_INVALID_ARGUMENT);
  cr_expect_eq(cf_propagate_transforms(f, tv[4]), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_error(f), "split: axis 3 out of range for T4_g_float[iS4{8}]");
}

/* ---- the seed tutorial's Complicated1 and Complicated2 ------------------------------- */

static void tmem_chain_4096(void) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){4096, 4096}, tv);
  cf_set_memory_type(f, tv[2], CF_MEM_TENSOR);
  tu_fancy_transformations(f, tv[4]);
}

static void check_alloc_kept(const cf_id *const alloc[], int n) {
  Val *t2 = ir_tv(tv[2]);
  cr_assert_eq(TV(t2)->nalloc, n);
  for (int i = 0; i < n; i++) cr_expect_eq(TV(t2)->alloc[i], ir_idv(alloc[i]), "allocation axis %d changed", i);
}

Test(propagate, tutorial_complicated1) {
  tmem_chain_4096();
  cf_split(f, tv[4], 1, 64);
  cf_split(f, tv[4], 1, 8);
  cf_split(f, tv[4], 1, 4);
  cf_split(f, tv[4], 0, 1);
  cf_split(f, tv[4], 0, 8);
  cf_split(f, tv[4], 0, 2);
  cf_split(f, tv[4], 0, 8);
  cf_split(f, tv[4], 0, 16);
  cf_parallelize(f, tv[4], 0, CF_PT_TIDZ);
  cf_parallelize(f, tv[4], 2, CF_PT_TIDY);
  cf_parallelize(f, tv[4], 3, CF_PT_BIDX);
  cf_parallelize(f, tv[4], 4, CF_PT_TIDX);
  cf_parallelize(f, tv[4], 7, CF_PT_BIDY);
  cf_parallelize(f, tv[4], 8, CF_PT_BIDZ);
  EXPECT_OK(cf_propagate_transforms_checked(f, tv[4]));
  EXPECT_OK(cf_parallelize_all_like(f, tv[4], 0, NULL));
  EXPECT_TV(tv[2], "T2_t_float[ithreadIdx.z91{2}, iS92{16}, ithreadIdx.y90{8}, iblockIdx.x88{2}, ithreadIdx.x86{8}, "
                   "iS84{1}, iS98{2}, iblockIdx.y99{4}, iblockIdx.z97{8}, iS95{64}]");
  EXPECT_OK(cf_set_allocation_to_loop(f, tv[2], true));
  EXPECT_OK(cf_set_tmem_dim_sep_pos(f, tv[2], 6));
  const cf_id *alloc[10];
  for (int i = 0; i < 10; i++) alloc[i] = cf_tv_axis(tv[2], i);

  EXPECT_OK(cf_reorder(f, tv[4], 2, (int[]){6, 2, 7, 3}));
  EXPECT_OK(cf_propagate_transforms_checked(f, tv[4]));
  EXPECT_OK(cf_inline_all_at(f, tv[4], 4));
  EXPECT_TV(tv[0], "T0_g_float[iS151{2}, iS152{16}, iS158{2}, iS159{4}, iS150{8}, iS148{2}, iS146{8}, iS144{1}, "
                   "iS157{8}, iS155{64}]");
  EXPECT_TV(tv[1], "T1_l_float[ithreadIdx.z121{2}, iS122{16}, iS128{2}, iblockIdx.y129{4}, ithreadIdx.y120{8}, "
                   "iblockIdx.x118{2}, ithreadIdx.x116{8}, iS114{1}, iblockIdx.z127{8}, iS125{64}] ca_pos( 4 )");
  EXPECT_TV(tv[2], "T2_t_float[ithreadIdx.z91{2}, iS92{16}, iS98{2}, iblockIdx.y99{4}, ithreadIdx.y90{8}, "
                   "iblockIdx.x88{2}, ithreadIdx.x86{8}, iS84{1}, iblockIdx.z97{8}, iS95{64}] ca_pos( 4 ) "
                   "produce_pos( 4 )");
  EXPECT_TV(tv[3], "T3_l_float[ithreadIdx.z61{2}, iS62{16}, iS68{2}, iblockIdx.y69{4}, ithreadIdx.y60{8}, "
                   "iblockIdx.x58{2}, ithreadIdx.x56{8}, iS54{1}, iblockIdx.z67{8}, iS65{64}] ca_pos( 4 ) "
                   "produce_pos( 4 )");
  EXPECT_TV(tv[4], "T4_g_float[ithreadIdx.z38{2}, iS39{16}, iS28{2}, iblockIdx.y29{4}, ithreadIdx.y37{8}, "
                   "iblockIdx.x35{2}, ithreadIdx.x33{8}, iS31{1}, iblockIdx.z27{8}, iS25{64}] ca_pos( 4 ) "
                   "produce_pos( 4 )");
  check_alloc_kept(alloc, 10);
}

Test(propagate, tutorial_complicated2) {
  tmem_chain_4096();
  cf_split(f, tv[4], 1, 2);
  cf_split(f, tv[4], 1, 2);
  cf_split(f, tv[4], 1, 16);
  cf_split(f, tv[4], 1, 2);
  cf_split(f, tv[4], 1, 8);
  cf_split(f, tv[4], 0, 128);
  cf_parallelize(f, tv[4], 1, CF_PT_TIDX);
  cf_parallelize(f, tv[4], 3, CF_PT_BIDY);
  cf_parallelize(f, tv[4], 4, CF_PT_TIDY);
  cf_parallelize(f, tv[4], 6, CF_PT_BIDZ);
  cf_parallelize(f, tv[4], 7, CF_PT_TIDZ);
  EXPECT_OK(cf_propagate_transforms_checked(f, tv[4]));
  EXPECT_OK(cf_parallelize_all_like(f, tv[4], 0, NULL));
  EXPECT_OK(cf_set_allocation_to_loop(f, tv[2], true));
  EXPECT_OK(cf_set_tmem_dim_sep_pos(f, tv[2], 2));
  const cf_id *alloc[8];
  for (int i = 0; i < 8; i++) alloc[i] = cf_tv_axis(tv[2], i);

  EXPECT_OK(cf_reorder(f, tv[4], 1, (int[]){1, 4}));
  EXPECT_OK(cf_propagate_transforms_checked(f, tv[4]));
  EXPECT_OK(cf_inline_all_at(f, tv[4], 4));
  EXPECT_TV(tv[4], "T4_g_float[iS34{32}, iS32{4}, iblockIdx.y33{8}, ithreadIdx.y31{2}, ithreadIdx.x35{128}, "
                   "iS29{16}, iblockIdx.z27{2}, ithreadIdx.z25{2}] ca_pos( 4 ) produce_pos( 4 )");
  EXPECT_TV(tv[2], "T2_t_float[iS75{32}, iS86{4}, iblockIdx.y87{8}, ithreadIdx.y85{2}, ithreadIdx.x76{128}, "
                   "iS83{16}, iblockIdx.z81{2}, ithreadIdx.z79{2}] ca_pos( 4 ) produce_pos( 4 )");
  EXPECT_TV(tv[1], "T1_l_float[iS101{32}, iS112{4}, iblockIdx.y113{8}, ithreadIdx.y111{2}, ithreadIdx.x102{128}, "
                   "iS109{16}, iblockIdx.z107{2}, ithreadIdx.z105{2}] ca_pos( 4 )");
  check_alloc_kept(alloc, 8);
}
