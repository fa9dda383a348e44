/* Tests of the errors of ir/ops.c: each misuse of an op, with its exact message, and the
 * sticky error model (nothing happens after the first error). */
#include "ops_test_util.h"


/* Expects the call to have returned NULL with `msg` recorded, then clears the error. */
#define EXPECT_OP_ERROR(f, call, msg)                                                                                     \
  do {                                                                                                                 \
    cr_expect_null(call);                                                                                              \
    cr_expect_eq(cf_fusion_status(f), CF_ERR_INVALID_ARGUMENT);                                                        \
    cr_expect_str_eq(cf_fusion_error(f), msg);                                                                         \
    cf_fusion_clear_error(f);                                                                                          \
  } while (0)

Test(ops_errors, null_fusion_returns_null) {
  cr_expect_null(cf_set(NULL, NULL));
  cr_expect_null(cf_exp(NULL, NULL));
  cr_expect_null(cf_add(NULL, NULL, NULL));
  cr_expect_null(cf_add_scalar(NULL, NULL, 1));
  cr_expect_null(cf_where(NULL, NULL, NULL, NULL));
  cr_expect_null(cf_cast(NULL, NULL, CF_FLOAT));
  cr_expect_null(cf_broadcast(NULL, NULL, 1, (bool[]){true}));
  cr_expect_null(cf_sum(NULL, NULL, 1, (int[]){0}));
  cr_expect_null(cf_permute(NULL, NULL, 1, (int[]){0}));
  cr_expect_null(cf_transpose(NULL, NULL, 0, 1));
}

Test(ops_errors, null_tensor_arguments_are_named) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 1, (int64_t[]){4});
  cf_tv *c = tu_input(f, CF_BOOL, 1, (int64_t[]){4});
  EXPECT_OP_ERROR(f, cf_set(f, NULL), "set: argument 1 (in) is NULL");
  EXPECT_OP_ERROR(f, cf_neg(f, NULL), "neg: argument 1 (in) is NULL");
  EXPECT_OP_ERROR(f, cf_gelu(f, NULL), "gelu: argument 1 (in) is NULL");
  EXPECT_OP_ERROR(f, cf_add(f, NULL, a), "add: argument 1 (a) is NULL");
  EXPECT_OP_ERROR(f, cf_add(f, a, NULL), "add: argument 2 (b) is NULL");
  EXPECT_OP_ERROR(f, cf_ge(f, a, NULL), "ge: argument 2 (b) is NULL");
  EXPECT_OP_ERROR(f, cf_mul_scalar(f, NULL, 2), "mul_scalar: argument 1 (a) is NULL");
  EXPECT_OP_ERROR(f, cf_where(f, NULL, a, a), "where: argument 1 (cond) is NULL");
  EXPECT_OP_ERROR(f, cf_where(f, c, NULL, a), "where: argument 2 (a) is NULL");
  EXPECT_OP_ERROR(f, cf_where(f, c, a, NULL), "where: argument 3 (b) is NULL");
  EXPECT_OP_ERROR(f, cf_cast(f, NULL, CF_HALF), "cast: argument 1 (in) is NULL");
  EXPECT_OP_ERROR(f, cf_broadcast(f, NULL, 2, (bool[]){true, false}), "broadcast: argument 1 (in) is NULL");
  EXPECT_OP_ERROR(f, cf_sum(f, NULL, 1, (int[]){0}), "sum: argument 1 (in) is NULL");
  EXPECT_OP_ERROR(f, cf_max_reduce(f, NULL, 1, (int[]){0}), "max_reduce: argument 1 (in) is NULL");
  EXPECT_OP_ERROR(f, cf_permute(f, NULL, 1, (int[]){0}), "permute: argument 1 (in) is NULL");
  EXPECT_OP_ERROR(f, cf_transpose(f, NULL, 0, 0), "transpose: argument 1 (in) is NULL");
  cf_fusion_destroy(f);
}

Test(ops_errors, null_array_arguments_are_named) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){4, 2});
  EXPECT_OP_ERROR(f, cf_broadcast(f, a, 3, NULL), "broadcast: argument 3 (is_broadcast) is NULL");
  EXPECT_OP_ERROR(f, cf_sum(f, a, 1, NULL), "sum: argument 3 (axes) is NULL");
  EXPECT_OP_ERROR(f, cf_min_reduce(f, a, 2, NULL), "min_reduce: argument 3 (axes) is NULL");
  EXPECT_OP_ERROR(f, cf_permute(f, a, 2, NULL), "permute: argument 3 (perm) is NULL");
  cf_fusion_destroy(f);
}

Test(ops_errors, tensors_of_another_fusion) {
  cf_fusion *f = cf_fusion_create(), *g = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 1, (int64_t[]){4});
  cf_tv *other0 = tu_input(g, CF_FLOAT, 1, (int64_t[]){4});
  cf_tv *other = cf_set(g, other0);
  cf_tv *cond = tu_input(g, CF_BOOL, 1, (int64_t[]){4});
  EXPECT_OP_ERROR(f, cf_add(f, a, other), "add: T1 belongs to another fusion");
  EXPECT_OP_ERROR(f, cf_add(f, other0, a), "add: T0 belongs to another fusion");
  EXPECT_OP_ERROR(f, cf_exp(f, other), "exp: T1 belongs to another fusion");
  EXPECT_OP_ERROR(f, cf_where(f, cond, a, a), "where: T2 belongs to another fusion");
  EXPECT_OP_ERROR(f, cf_sum(f, other, 1, (int[]){0}), "sum: T1 belongs to another fusion");
  EXPECT_OP_ERROR(f, cf_transpose(f, other, 0, 0), "transpose: T1 belongs to another fusion");
  cr_expect_eq(cf_fusion_status(g), CF_OK);
  cf_fusion_destroy(f);
  cf_fusion_destroy(g);
}

/* Operands of different ranks broadcast numpy-style (nvFuser's frontend): the lower rank
 * gets leading broadcast axes; the axes then pair from the right. */
Test(ops_errors, different_ranks_broadcast_from_the_right) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){2, 4});
  cf_tv *b = tu_input(f, CF_FLOAT, 1, (int64_t[]){4});
  cf_tv *r = cf_add(f, a, b);
  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  ot_expect_def(r, "T3_l_float[iS5{2}, iS6{4}]\n   = add( T0_g_float[iS0{2}, iS1{4}],\n        T2_l_float[bS3{1}, iS4{4}] );\n");
  EXPECT_OP_ERROR(f, cf_add(f, a, tu_input(f, CF_FLOAT, 1, (int64_t[]){3})),
               "add: axis 1 has extent 4 in T0_g_float[iS0{2}, iS1{4}] but 3 in T5_l_float[bS8{1}, iS9{3}]");
  cf_fusion_destroy(f);
}

Test(ops_errors, binary_extent_mismatch_names_both_tensors_and_the_axis) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){2, 4});
  cf_tv *b = tu_input(f, CF_FLOAT, 2, (int64_t[]){2, 8});
  EXPECT_OP_ERROR(f, cf_add(f, a, b),
               "add: axis 1 has extent 4 in T0_g_float[iS0{2}, iS1{4}] but 8 in T1_g_float[iS2{2}, iS3{8}]");
  EXPECT_OP_ERROR(f, cf_lt(f, b, a),
               "lt: axis 1 has extent 8 in T1_g_float[iS2{2}, iS3{8}] but 4 in T0_g_float[iS0{2}, iS1{4}]");
  cf_fusion_destroy(f);
}

Test(ops_errors, reduction_axes_do_not_count_for_shapes) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){2, 4});
  cf_tv *s = cf_sum(f, a, 1, (int[]){0});
  EXPECT_OP_ERROR(f, cf_add(f, s, cf_transpose(f, a, 0, 1)),
               "add: axis 1 has extent 4 in T3_l_float[bS6{1}, iS7{4}] but 2 in T2_l_float[iS5{4}, iS4{2}]");
  cf_fusion_destroy(f);
}

Test(ops_errors, symbolic_extents_are_checked_when_bound_not_when_built) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 2, NULL);
  cf_tv *b = tu_input(f, CF_FLOAT, 2, (int64_t[]){2, 8});
  cr_expect_not_null(cf_add(f, a, b));
  cr_expect_eq(cf_fusion_status(f), CF_OK);
  cf_fusion_destroy(f);
}

Test(ops_errors, where_shapes_and_condition_dtype) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *c = tu_input(f, CF_BOOL, 2, (int64_t[]){2, 1});
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){2, 3});
  cf_tv *b = tu_input(f, CF_FLOAT, 2, (int64_t[]){5, 3});
  EXPECT_OP_ERROR(f, cf_where(f, a, a, a), "where: condition T1_g_float[iS2{2}, iS3{3}] has dtype float, expected bool");
  EXPECT_OP_ERROR(f, cf_where(f, c, a, b),
               "where: axis 0 has extent 2 in T0_g_bool[iS0{2}, bS1{1}] but 5 in T2_g_float[iS4{5}, iS5{3}]");
  EXPECT_OP_ERROR(f, cf_where(f, c, a, tu_input(f, CF_FLOAT, 1, (int64_t[]){4})),
               "where: axis 1 has extent 3 in T1_g_float[iS2{2}, iS3{3}] but 4 in T4_l_float[bS7{1}, iS8{4}]");
  cf_fusion_destroy(f);
}

Test(ops_errors, cast_to_an_invalid_dtype) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 1, (int64_t[]){4});
  EXPECT_OP_ERROR(f, cf_cast(f, a, (cf_dtype)42), "cast: invalid dtype 42");
  EXPECT_OP_ERROR(f, cf_cast(f, a, (cf_dtype)-1), "cast: invalid dtype -1");
  EXPECT_OP_ERROR(f, cf_cast(f, a, CF_DTYPE_COUNT), "cast: invalid dtype 16");
  EXPECT_OP_ERROR(f, cf_cast(f, a, CF_WELFORD_FLOAT), "cast: invalid dtype 9 (Welford states are made by cf_welford)");
  cf_fusion_destroy(f);
}

Test(ops_errors, negating_a_bool_tensor) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_BOOL, 1, (int64_t[]){4});
  EXPECT_OP_ERROR(f, cf_neg(f, a),
                  "neg: T0 has dtype bool, but neg takes numeric (not bool) tensors; cast it first for T0_g_bool[iS0{4}]");
  cf_fusion_destroy(f);
}

Test(ops_errors, broadcast_must_keep_every_input_axis) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){2, 3});
  EXPECT_OP_ERROR(f, cf_broadcast(f, a, 3, (bool[]){true, true, false}),
               "broadcast: is_broadcast keeps 1 of 3 output axes, but the input has 2 for T0_g_float[iS0{2}, iS1{3}]");
  EXPECT_OP_ERROR(f, cf_broadcast(f, a, 1, (bool[]){false}),
               "broadcast: is_broadcast keeps 1 of 1 output axes, but the input has 2 for T0_g_float[iS0{2}, iS1{3}]");
  EXPECT_OP_ERROR(f, cf_broadcast(f, a, -1, (bool[]){false}),
                  "broadcast: out_rank -1 is outside 0..16 for T0_g_float[iS0{2}, iS1{3}]");
  cf_fusion_destroy(f);
}

Test(ops_errors, reduction_axes_out_of_range_or_repeated) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){2, 4});
  EXPECT_OP_ERROR(f, cf_sum(f, a, 1, (int[]){2}), "sum: axis 2 out of range for T0_g_float[iS0{2}, iS1{4}]");
  EXPECT_OP_ERROR(f, cf_sum(f, a, 1, (int[]){-3}), "sum: axis -3 out of range for T0_g_float[iS0{2}, iS1{4}]");
  EXPECT_OP_ERROR(f, cf_max_reduce(f, a, 2, (int[]){1, -1}),
               "max_reduce: axis -1 given twice for T0_g_float[iS0{2}, iS1{4}]");
  EXPECT_OP_ERROR(f, cf_min_reduce(f, a, 0, (int[]){0}),
               "min_reduce: naxes is 0; give at least one axis to reduce for T0_g_float[iS0{2}, iS1{4}]");
  cf_fusion_destroy(f);
}

Test(ops_errors, reduced_axes_cannot_be_reduced_again) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){2, 4});
  cf_tv *s = cf_sum(f, a, 1, (int[]){0});
  EXPECT_OP_ERROR(f, cf_sum(f, s, 1, (int[]){1}), "sum: axis 1 out of range for T1_l_float[rS2{2}, iS3{4}]");
  cf_fusion_destroy(f);
}

Test(ops_errors, permute_checks_its_permutation) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){2, 4});
  EXPECT_OP_ERROR(f, cf_permute(f, a, 3, (int[]){0, 1, 2}),
               "permute: perm has 3 axes, expected 2 for T0_g_float[iS0{2}, iS1{4}]");
  EXPECT_OP_ERROR(f, cf_permute(f, a, 2, (int[]){0, 2}), "permute: axis 2 out of range for T0_g_float[iS0{2}, iS1{4}]");
  EXPECT_OP_ERROR(f, cf_permute(f, a, 2, (int[]){1, -1}), "permute: axis -1 given twice for T0_g_float[iS0{2}, iS1{4}]");
  cf_fusion_destroy(f);
}

Test(ops_errors, transpose_axes_out_of_range) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){2, 4});
  EXPECT_OP_ERROR(f, cf_transpose(f, a, 0, 2), "transpose: axis 2 out of range for T0_g_float[iS0{2}, iS1{4}]");
  EXPECT_OP_ERROR(f, cf_transpose(f, a, -3, 1), "transpose: axis -3 out of range for T0_g_float[iS0{2}, iS1{4}]");
  cf_fusion_destroy(f);
}

Test(ops_errors, errors_are_sticky) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){2, 4});
  cf_tv *b = tu_input(f, CF_FLOAT, 2, (int64_t[]){2, 8});
  int nexprs = f->exprs.len, nvals = f->vals.len;
  cr_expect_null(cf_mul(f, a, b));
  const char *first = "mul: axis 1 has extent 4 in T0_g_float[iS0{2}, iS1{4}] but 8 in T1_g_float[iS2{2}, iS3{8}]";
  cr_expect_str_eq(cf_fusion_error(f), first);
  /* Every later op does nothing, even a valid one, and the first message stays. */
  cr_expect_null(cf_set(f, a));
  cr_expect_null(cf_exp(f, a));
  cr_expect_null(cf_add(f, a, a));
  cr_expect_null(cf_add_scalar(f, a, 1));
  cr_expect_null(cf_cast(f, a, CF_HALF));
  cr_expect_null(cf_sum(f, a, 1, (int[]){0}));
  cr_expect_null(cf_broadcast(f, a, 3, (bool[]){true, false, false}));
  cr_expect_null(cf_transpose(f, a, 0, 1));
  cr_expect_null(cf_add(f, NULL, NULL));
  cr_expect_str_eq(cf_fusion_error(f), first);
  cr_expect_eq(f->exprs.len, nexprs);
  cr_expect_eq(f->vals.len, nvals);
  cf_fusion_clear_error(f);
  cr_expect_not_null(cf_add(f, a, a));
  cf_fusion_destroy(f);
}
