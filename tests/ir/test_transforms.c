/* Tests of the scheduling primitives of ir/transform.c and ir/alloc_domain.c: what each
 * does to the loop domain, printed in nvFuser's notation, and every misuse's message. */
#include <criterion/criterion.h>
#include <string.h>

#include "test_util.h"

static cf_fusion *f;
static cf_tv *tv[5];

static void setup_2x4(void) {
  f = cf_fusion_create();
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){4, 8}, tv);
}
static void teardown(void) { cf_fusion_destroy(f); }

TestSuite(transforms, .init = setup_2x4, .fini = teardown);

Test(transforms, fresh_tensors_print_their_logical_domain) {
  EXPECT_TV(tv[0], "T0_g_float[iS0{4}, iS1{8}]");
  EXPECT_TV(tv[1], "T1_l_float[iS2{4}, iS3{8}]");
  EXPECT_TV(tv[4], "T4_g_float[iS8{4}, iS9{8}]");
}

Test(transforms, split_inner) {
  cr_assert_eq(cf_split(f, tv[2], 1, 4), CF_OK);
  EXPECT_TV(tv[2], "T2_l_float[iS4{4}, iS10{2}, iS11{4}]");
}

Test(transforms, split_outer) {
  cr_assert_eq(cf_split_outer(f, tv[2], 1, 4), CF_OK);
  EXPECT_TV(tv[2], "T2_l_float[iS4{4}, iS10{4}, iS11{2}]");
}

Test(transforms, non_divisible_split_rounds_up) {
  cr_assert_eq(cf_split(f, tv[2], 1, 3), CF_OK);
  EXPECT_TV(tv[2], "T2_l_float[iS4{4}, iS10{3}, iS11{3}]");
}

Test(transforms, negative_axis_counts_from_the_end) {
  cr_assert_eq(cf_split(f, tv[2], -2, 2), CF_OK);
  EXPECT_TV(tv[2], "T2_l_float[iS10{2}, iS11{2}, iS5{8}]");
}

Test(transforms, merge) {
  cr_assert_eq(cf_merge(f, tv[2], 0), CF_OK);
  EXPECT_TV(tv[2], "T2_l_float[iS10{32}]");
}

Test(transforms, reorder_pairs_keep_the_rest_in_order) {
  cf_split(f, tv[2], 1, 4);
  cr_assert_eq(cf_reorder(f, tv[2], 1, (int[]){2, 0}), CF_OK);
  EXPECT_TV(tv[2], "T2_l_float[iS11{4}, iS4{4}, iS10{2}]");
}

Test(transforms, reorder_all_is_a_permutation) {
  cf_split(f, tv[2], 1, 4);
  cr_assert_eq(cf_reorder_all(f, tv[2], 3, (int[]){2, 0, 1}), CF_OK);
  EXPECT_TV(tv[2], "T2_l_float[iS10{2}, iS11{4}, iS4{4}]");
}

Test(transforms, swizzle_makes_new_axes_of_equal_extent) {
  cr_assert_eq(cf_swizzle_xor(f, tv[2], 0, 1), CF_OK);
  EXPECT_TV(tv[2], "T2_l_float[iS10{4}, iS11{8}]");
}

Test(transforms, parallelize_prints_the_parallel_type) {
  cf_split(f, tv[2], 1, 4);
  cf_parallelize(f, tv[2], 0, CF_PT_BIDX);
  cf_parallelize(f, tv[2], 1, CF_PT_UNROLL);
  cf_parallelize(f, tv[2], 2, CF_PT_TIDX);
  EXPECT_TV(tv[2], "T2_l_float[iblockIdx.x4{4}, iUR10{2}, ithreadIdx.x11{4}]");
  cf_parallelize(f, tv[2], 2, CF_PT_VECTORIZE);
  EXPECT_TV(tv[2], "T2_l_float[iblockIdx.x4{4}, iUR10{2}, iV11{4}]");
}

Test(transforms, memory_type_letter) {
  cf_set_memory_type(f, tv[1], CF_MEM_SHARED);
  cf_set_memory_type(f, tv[2], CF_MEM_TENSOR);
  EXPECT_TV(tv[1], "T1_s_float[iS2{4}, iS3{8}]");
  EXPECT_TV(tv[2], "T2_t_float[iS4{4}, iS5{8}]");
}

Test(transforms, symbolic_extents_print_as_expressions) {
  cf_fusion *g = cf_fusion_create();
  cf_tv *t0 = cf_tensor_symbolic(g, CF_FLOAT, 2);
  cf_fusion_add_input(g, t0);
  cf_tv *t1 = cf_set(g, t0);
  cf_split(g, t1, 1, 4);
  cf_merge(g, t1, 0);
  char *s = tu_tv_str(g, t1);
  cr_expect_str_eq(s, "T1_l_float[iS6{( i0 * ( ceilDiv(i1, 4) ) )}, iS5{4}]");
  free(s);
  cf_fusion_destroy(g);
}

/* ---- errors ------------------------------------------------------------------------ */

Test(transforms, split_axis_out_of_range) {
  EXPECT_ERROR(cf_split(f, tv[2], 3, 2), CF_ERR_INVALID_ARGUMENT,
               "split: axis 3 out of range for T2_l_float[iS4{4}, iS5{8}]");
}

Test(transforms, split_factor_not_positive) {
  EXPECT_ERROR(cf_split(f, tv[2], 0, 0), CF_ERR_INVALID_ARGUMENT,
               "split: factor 0 is not positive for T2_l_float[iS4{4}, iS5{8}]");
  cf_fusion_clear_error(f);
  EXPECT_ERROR(cf_split(f, tv[2], 0, -3), CF_ERR_INVALID_ARGUMENT,
               "split: factor -3 is not positive for T2_l_float[iS4{4}, iS5{8}]");
}

Test(transforms, split_parallelized_axis) {
  cf_parallelize(f, tv[2], 1, CF_PT_TIDX);
  EXPECT_ERROR(cf_split(f, tv[2], 1, 2), CF_ERR_INVALID_SCHEDULE,
               "split: axis 1 (ithreadIdx.x5{8}) is parallelized; parallelize after split for "
               "T2_l_float[iS4{4}, ithreadIdx.x5{8}]");
}

Test(transforms, split_left_of_compute_at) {
  cr_assert_eq(cf_inline_at(f, tv[2], 1), CF_OK);
  EXPECT_ERROR(cf_split(f, tv[2], 0, 2), CF_ERR_INVALID_SCHEDULE,
               "split: axis 0 (iS4{4}) is left of the compute-at position 1 for T2_l_float[iS4{4}, iS5{8}]");
}

Test(transforms, merge_last_axis) {
  EXPECT_ERROR(cf_merge(f, tv[2], 1), CF_ERR_INVALID_ARGUMENT,
               "merge: axis 1 is the last axis; there is no axis 2 to merge it with for T2_l_float[iS4{4}, iS5{8}]");
}

Test(transforms, merge_out_of_range) {
  EXPECT_ERROR(cf_merge(f, tv[2], -3), CF_ERR_INVALID_ARGUMENT,
               "merge: axis -3 out of range for T2_l_float[iS4{4}, iS5{8}]");
}

Test(transforms, reorder_errors) {
  EXPECT_ERROR(cf_reorder(f, tv[2], 1, (int[]){0, 2}), CF_ERR_INVALID_ARGUMENT,
               "reorder: axis 2 out of range for T2_l_float[iS4{4}, iS5{8}]");
  cf_fusion_clear_error(f);
  EXPECT_ERROR(cf_reorder(f, tv[2], 2, (int[]){0, 1, 1, 1}), CF_ERR_INVALID_ARGUMENT,
               "reorder: axis 1 is named twice for T2_l_float[iS4{4}, iS5{8}]");
  cf_fusion_clear_error(f);
  EXPECT_ERROR(cf_reorder_all(f, tv[2], 1, (int[]){0}), CF_ERR_INVALID_ARGUMENT,
               "reorder_all: expected 2 positions, got 1 for T2_l_float[iS4{4}, iS5{8}]");
}

Test(transforms, swizzle_errors) {
  EXPECT_ERROR(cf_swizzle_xor(f, tv[2], 1, 1), CF_ERR_INVALID_ARGUMENT,
               "swizzle_xor: axes 1 and 1 are the same axis for T2_l_float[iS4{4}, iS5{8}]");
  cf_fusion_clear_error(f);
  EXPECT_ERROR(cf_swizzle_xor(f, tv[2], 1, 0), CF_ERR_INVALID_SCHEDULE,
               "swizzle_xor: axis 0 needs a constant power-of-two extent and axis 1 one no larger for "
               "T2_l_float[iS4{4}, iS5{8}]");
}

Test(transforms, dim_sep_on_non_tensor_memory) {
  EXPECT_ERROR(cf_set_tmem_dim_sep_pos(f, tv[2], 1), CF_ERR_INVALID_SCHEDULE,
               "set_tmem_dim_sep_pos: T2 is in Local memory; the dim-sep position applies to tensor memory only "
               "for T2_l_float[iS4{4}, iS5{8}]");
}

Test(transforms, dim_sep_range_and_negative_positions) {
  cf_set_memory_type(f, tv[2], CF_MEM_TENSOR);
  cr_expect_eq(cf_set_tmem_dim_sep_pos(f, tv[2], -2), CF_OK);
  EXPECT_ERROR(cf_set_tmem_dim_sep_pos(f, tv[2], 3), CF_ERR_INVALID_ARGUMENT,
               "set_tmem_dim_sep_pos: position 3 is outside -3..2 for T2_t_float[iS4{4}, iS5{8}]");
}

Test(transforms, inputs_and_outputs_stay_global) {
  EXPECT_ERROR(cf_set_memory_type(f, tv[0], CF_MEM_SHARED), CF_ERR_INVALID_SCHEDULE,
               "set_memory_type: T0 is a fusion input and must stay in global memory for T0_g_float[iS0{4}, iS1{8}]");
}

Test(transforms, allocation_domain_must_belong_to_the_tensor) {
  cf_id *other = cf_tv_axis(tv[1], 0);
  EXPECT_ERROR(cf_set_allocation_domain(f, tv[2], 1, &other, NULL), CF_ERR_INVALID_ARGUMENT,
               "set_allocation_domain: axis 0 is not an IterDomain of T2 for T2_l_float[iS4{4}, iS5{8}]");
}

Test(transforms, null_arguments) {
  EXPECT_ERROR(cf_split(f, NULL, 0, 2), CF_ERR_INVALID_ARGUMENT, "split: tensor is NULL");
  cr_expect_eq(cf_split(NULL, tv[2], 0, 2), CF_ERR_INVALID_ARGUMENT);
}

Test(transforms, tensors_of_another_fusion) {
  cf_fusion *g = cf_fusion_create();
  cf_tv *x = cf_tensor_concrete(g, CF_FLOAT, 1, (int64_t[]){4});
  EXPECT_ERROR(cf_merge(f, x, 0), CF_ERR_INVALID_ARGUMENT, "merge: T0 belongs to another fusion");
  cf_fusion_destroy(g);
}

Test(transforms, errors_are_sticky) {
  cf_split(f, tv[2], 7, 2);
  cr_expect_eq(cf_split(f, tv[2], 0, 2), CF_ERR_INVALID_ARGUMENT);
  cr_expect_eq(cf_set(f, tv[2]), NULL);
  cr_expect_str_eq(cf_fusion_error(f), "split: axis 7 out of range for T2_l_float[iS4{4}, iS5{8}]");
  EXPECT_TV(tv[2], "T2_l_float[iS4{4}, iS5{8}]");
}

/* ---- the seed tutorial's fancyTransformations + Complicated1 splits ------------------ */


Test(transforms, fancy_transformations_then_complicated1_splits) {
  cf_fusion *g = cf_fusion_create();
  cf_tv *t[5];
  tu_set_chain(g, CF_FLOAT, 2, (int64_t[]){4096, 4096}, t);
  tu_fancy_transformations(g, t[4]);
  cf_split(g, t[4], 1, 64);
  cf_split(g, t[4], 1, 8);
  cf_split(g, t[4], 1, 4);
  cf_split(g, t[4], 0, 1);
  cf_split(g, t[4], 0, 8);
  cf_split(g, t[4], 0, 2);
  cf_split(g, t[4], 0, 8);
  cf_split(g, t[4], 0, 16);
  cr_assert_eq(cf_fusion_status(g), CF_OK, "%s", cf_fusion_error(g));
  char *all = tu_capture_fusion(cf_fusion_print_transforms, g);
  const char *tv4 = strstr(all, "T4_g_float");
  cr_assert_not_null(tv4);
  cr_expect_str_eq(tv4,
                   "T4_g_float[iS38{2}, iS39{16}, iS37{8}, iS35{2}, iS33{8}, iS31{1}, iS28{2}, iS29{4}, iS27{8}, iS25{64}]\n"
                   " logical domain : (iS8{4096}, iS9{4096})\n"
                   " contiguity: t t\n"
                   "  Swizzle: iS8{4096}, iS9{4096} by XOR -> iS10{4096}, iS11{4096}\n"
                   "  Split: iS10{4096} by factor 64 -> iS14{64}, iS15{64}\n"
                   "  Split: iS11{4096} by factor 64 -> iS12{64}, iS13{64}\n"
                   "  Swizzle: iS15{64}, iS13{64} by XOR -> iS16{64}, iS17{64}\n"
                   "  Swizzle: iS12{64}, iS14{64} by XOR -> iS18{64}, iS19{64}\n"
                   "  Swizzle: iS17{64}, iS18{64} by XOR -> iS20{64}, iS21{64}\n"
                   "  Merge: iS20{64} and iS19{64} -> iS23{4096}\n"
                   "  Split: iS23{4096} by factor 1 -> iS30{4096}, iS31{1}\n"
                   "  Split: iS30{4096} by factor 8 -> iS32{512}, iS33{8}\n"
                   "  Split: iS32{512} by factor 2 -> iS34{256}, iS35{2}\n"
                   "  Split: iS34{256} by factor 8 -> iS36{32}, iS37{8}\n"
                   "  Split: iS36{32} by factor 16 -> iS38{2}, iS39{16}\n"
                   "  Merge: iS21{64} and iS16{64} -> iS22{4096}\n"
                   "  Split: iS22{4096} by factor 64 -> iS24{64}, iS25{64}\n"
                   "  Split: iS24{64} by factor 8 -> iS26{8}, iS27{8}\n"
                   "  Split: iS26{8} by factor 4 -> iS28{2}, iS29{4}\n"
                   " loop domain : (iS38{2}, iS39{16}, iS37{8}, iS35{2}, iS33{8}, iS31{1}, iS28{2}, iS29{4}, iS27{8}, iS25{64})\n");
  free(all);
  cf_fusion_destroy(g);
}
