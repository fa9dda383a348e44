/* Tests of cf_matmul and cf_linear (ir/ops_matmul.c): the composite they build (printed
 * exactly), the evaluator against a naive reference written here (torch.matmul's shape
 * rules, the evaluator's documented rounding: each product rounded to the accumulation
 * dtype, K summed in increasing order in double, rounded once to it, then to the operands'
 * dtype) for 1-D, 2-D, batched, broadcast-batch and transposed operands in every
 * floating dtype, and every error, word for word. */
#include "matmul_ref.h"
#include "ops_test_util.h"

/* Evaluates matmul (linear when lin) on random inputs of the given shapes and expects the
 * reference's values exactly. */
static void check_eval(bool lin, cf_dtype dt, int na, const int64_t *sa, int nb, const int64_t *sb, int nbias,
                       const int64_t *sbias) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, dt, na, sa), *b = tu_input(f, dt, nb, sb);
  cf_tv *bias = nbias >= 0 ? tu_input(f, dt, nbias, sbias) : NULL;
  cf_tv *out = lin ? cf_linear(f, a, b, bias) : cf_matmul(f, a, b);
  cr_assert_not_null(out, "%s", cf_fusion_error(f));
  cf_fusion_add_output(f, out);
  DLManagedTensor *in[3] = {cf_tensor_host(dt, na, sa), cf_tensor_host(dt, nb, sb),
                            bias ? cf_tensor_host(dt, nbias, sbias) : NULL};
  for (int i = 0; i < 3; i++)
    if (in[i]) cf_tensor_fill_random(&in[i]->dl_tensor, 11 + (uint64_t)i);
  DLManagedTensor *got = NULL;
  cr_assert_eq(ot_eval(f, bias ? 3 : 2, in, &got), CF_OK, "%s", cf_fusion_error(f));
  DLManagedTensor *want = mr_reference(lin, &in[0]->dl_tensor, &in[1]->dl_tensor, in[2] ? &in[2]->dl_tensor : NULL);
  cr_assert_not_null(want);
  cr_expect(cf_tensor_equal(&got->dl_tensor, &want->dl_tensor), "%s %s: the evaluator differs from the reference",
            lin ? "linear" : "matmul", cf_dtype_name(dt));
  ot_free_all(3, in);
  cf_tensor_free(got);
  cf_tensor_free(want);
  cf_fusion_destroy(f);
}

static const cf_dtype floats[] = {CF_HALF, CF_BFLOAT16, CF_FLOAT, CF_DOUBLE};

Test(matmul_ir, prints_as_casts_broadcasts_mul_and_sum) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_BFLOAT16, 2, (int64_t[]){3, 5}), *b = tu_input(f, CF_BFLOAT16, 2, (int64_t[]){5, 4});
  cf_tv *c = cf_matmul(f, a, b);
  cf_fusion_add_output(f, c);
  char *m = ot_math(f);
  cr_expect_str_eq(m, "Inputs:\n"
                   "  T0_g___bfloat[iS0{3}, iS1{5}]\n"
                   "  T1_g___bfloat[iS2{5}, iS3{4}]\n"
                   "Outputs:\n"
                   "  T8_g___bfloat[iS22{3}, iS23{4}]\n"
                   "\n"
                   "%kernel_math {\n"
                   "T2_l___bfloat[iS4{3}, iS5{5}, bS6{1}]\n"
                   "   = broadcast( T0_g___bfloat[iS0{3}, iS1{5}], {false, false, true} );\n"
                   "T3_l_float[iS7{3}, iS8{5}, bS9{1}]\n"
                   "   = cast( T2_l___bfloat[iS4{3}, iS5{5}, bS6{1}], float );\n"
                   "T4_l___bfloat[bS10{1}, iS11{5}, iS12{4}]\n"
                   "   = broadcast( T1_g___bfloat[iS2{5}, iS3{4}], {true, false, false} );\n"
                   "T5_l_float[bS13{1}, iS14{5}, iS15{4}]\n"
                   "   = cast( T4_l___bfloat[bS10{1}, iS11{5}, iS12{4}], float );\n"
                   "T6_l_float[iS16{3}, iS17{5}, iS18{4}]\n"
                   "   = mul( T3_l_float[iS7{3}, iS8{5}, bS9{1}],\n"
                   "        T5_l_float[bS13{1}, iS14{5}, iS15{4}] );\n"
                   "T7_l_float[iS19{3}, rS20{5}, iS21{4}]\n"
                   "   = sum( T6_l_float[iS16{3}, iS17{5}, iS18{4}] );\n"
                   "T8_g___bfloat[iS22{3}, iS23{4}]\n"
                   "   = cast( T7_l_float[iS19{3}, rS20{5}, iS21{4}], __bfloat );\n"
                   "} // %kernel_math\n");
  free(m);
  ot_expect_tv(f, c, "T8_g___bfloat[iS22{3}, iS23{4}]");
  cf_fusion_destroy(f);
}

Test(matmul_ir, linear_prints_the_bias_added_before_the_cast) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *x = tu_input(f, CF_HALF, 2, (int64_t[]){3, 5}), *w = tu_input(f, CF_HALF, 2, (int64_t[]){4, 5});
  cf_tv *bias = tu_input(f, CF_HALF, 1, (int64_t[]){4});
  cf_fusion_add_output(f, cf_linear(f, x, w, bias));
  char *m = ot_math(f);
  cr_expect_str_eq(m, "Inputs:\n"
                   "  T0_g___half[iS0{3}, iS1{5}]\n"
                   "  T1_g___half[iS2{4}, iS3{5}]\n"
                   "  T2_g___half[iS4{4}]\n"
                   "Outputs:\n"
                   "  T12_g___half[iS28{3}, iS29{4}]\n"
                   "\n"
                   "%kernel_math {\n"
                   "T3_l___half[iS5{3}, bS6{1}, iS7{5}]\n"
                   "   = broadcast( T0_g___half[iS0{3}, iS1{5}], {false, true, false} );\n"
                   "T4_l_float[iS8{3}, bS9{1}, iS10{5}]\n"
                   "   = cast( T3_l___half[iS5{3}, bS6{1}, iS7{5}], float );\n"
                   "T5_l___half[bS11{1}, iS12{4}, iS13{5}]\n"
                   "   = broadcast( T1_g___half[iS2{4}, iS3{5}], {true, false, false} );\n"
                   "T6_l_float[bS14{1}, iS15{4}, iS16{5}]\n"
                   "   = cast( T5_l___half[bS11{1}, iS12{4}, iS13{5}], float );\n"
                   "T7_l_float[iS17{3}, iS18{4}, iS19{5}]\n"
                   "   = mul( T4_l_float[iS8{3}, bS9{1}, iS10{5}],\n"
                   "        T6_l_float[bS14{1}, iS15{4}, iS16{5}] );\n"
                   "T8_l_float[iS20{3}, iS21{4}, rS22{5}]\n"
                   "   = sum( T7_l_float[iS17{3}, iS18{4}, iS19{5}] );\n"
                   "T9_l_float[iS23{4}]\n"
                   "   = cast( T2_g___half[iS4{4}], float );\n"
                   "T10_l_float[bS24{1}, iS25{4}]\n"
                   "   = broadcast( T9_l_float[iS23{4}], {true, false} );\n"
                   "T11_l_float[iS26{3}, iS27{4}]\n"
                   "   = add( T8_l_float[iS20{3}, iS21{4}, rS22{5}],\n"
                   "        T10_l_float[bS24{1}, iS25{4}] );\n"
                   "T12_g___half[iS28{3}, iS29{4}]\n"
                   "   = cast( T11_l_float[iS26{3}, iS27{4}], __half );\n"
                   "} // %kernel_math\n");
  free(m);
  cf_fusion_destroy(f);
}

Test(matmul_ir, evaluator_equals_the_reference_for_every_shape_rule) {
  static const struct { int na, nb; int64_t sa[4], sb[4]; } cases[] = {
      {1, 1, {7}, {7}},                      /* dot: 0-d */
      {1, 2, {7}, {7, 3}},                   /* vector @ matrix */
      {2, 1, {5, 7}, {7}},                   /* matrix @ vector */
      {2, 2, {5, 7}, {7, 3}},                /* matrix @ matrix */
      {2, 2, {1, 33}, {33, 1}},              /* 1 x 1 result */
      {3, 2, {2, 5, 7}, {7, 3}},             /* batched @ matrix */
      {2, 3, {5, 7}, {2, 7, 3}},             /* matrix @ batched */
      {3, 3, {2, 5, 7}, {2, 7, 3}},          /* batched @ batched */
      {4, 3, {2, 1, 5, 7}, {3, 7, 3}},       /* batch axes broadcast numpy-style */
      {1, 3, {7}, {2, 7, 3}},                /* vector @ batched */
      {3, 1, {2, 5, 7}, {7}},                /* batched @ vector */
  };
  for (size_t d = 0; d < sizeof floats / sizeof floats[0]; d++)
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
      check_eval(false, floats[d], cases[i].na, cases[i].sa, cases[i].nb, cases[i].sb, -1, NULL);
}

Test(matmul_ir, linear_equals_the_reference_with_and_without_bias) {
  for (size_t d = 0; d < sizeof floats / sizeof floats[0]; d++) {
    cf_dtype dt = floats[d];
    check_eval(true, dt, 2, (int64_t[]){5, 7}, 2, (int64_t[]){3, 7}, -1, NULL);
    check_eval(true, dt, 2, (int64_t[]){5, 7}, 2, (int64_t[]){3, 7}, 1, (int64_t[]){3});
    check_eval(true, dt, 3, (int64_t[]){2, 5, 7}, 2, (int64_t[]){3, 7}, 1, (int64_t[]){3});
    check_eval(true, dt, 1, (int64_t[]){7}, 2, (int64_t[]){3, 7}, 0, NULL);
    check_eval(true, dt, 2, (int64_t[]){5, 7}, 1, (int64_t[]){7}, 0, NULL);
    check_eval(true, dt, 1, (int64_t[]){7}, 1, (int64_t[]){7}, -1, NULL);
  }
}

/* a^T @ b^T through cf_transpose of inputs stored [K, M] and [N, K]. */
Test(matmul_ir, transposed_operands_equal_the_reference) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *at = tu_input(f, CF_FLOAT, 2, (int64_t[]){7, 5}), *bt = tu_input(f, CF_FLOAT, 2, (int64_t[]){3, 7});
  cf_fusion_add_output(f, cf_matmul(f, cf_transpose(f, at, 0, 1), cf_transpose(f, bt, 0, 1)));
  DLManagedTensor *in[2] = {cf_tensor_host(CF_FLOAT, 2, (int64_t[]){7, 5}), cf_tensor_host(CF_FLOAT, 2, (int64_t[]){3, 7})};
  cf_tensor_fill_random(&in[0]->dl_tensor, 3);
  cf_tensor_fill_random(&in[1]->dl_tensor, 4);
  DLManagedTensor *got = NULL;
  cr_assert_eq(ot_eval(f, 2, in, &got), CF_OK, "%s", cf_fusion_error(f));
  DLManagedTensor *a = mr_transpose(&in[0]->dl_tensor), *b = mr_transpose(&in[1]->dl_tensor);
  DLManagedTensor *want = mr_reference(false, &a->dl_tensor, &b->dl_tensor, NULL);
  cr_expect(cf_tensor_equal(&got->dl_tensor, &want->dl_tensor));
  ot_free_all(2, in);
  DLManagedTensor *rest[4] = {got, want, a, b};
  ot_free_all(4, rest);
  cf_fusion_destroy(f);
}

/* ---- errors ---------------------------------------------------------------------------- */

/* Builds matmul (linear when lin) of inputs of the given dtypes and shapes and expects
 * exactly the error want. */
static void expect_error(bool lin, cf_dtype da, int na, const int64_t *sa, cf_dtype db, int nb, const int64_t *sb,
                         int nbias, const int64_t *sbias, const char *want) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, da, na, sa), *b = tu_input(f, db, nb, sb);
  cf_tv *bias = nbias >= 0 ? tu_input(f, db, nbias, sbias) : NULL;
  cr_expect_null(lin ? cf_linear(f, a, b, bias) : cf_matmul(f, a, b));
  cr_expect_eq(cf_fusion_status(f), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_error(f), want);
  cf_fusion_destroy(f);
}

Test(matmul_ir, errors_name_the_tensors_and_axes) {
  expect_error(false, CF_FLOAT, 2, (int64_t[]){5, 3}, CF_FLOAT, 2, (int64_t[]){4, 2}, -1, NULL,
               "matmul: T0's axis 1 (K) has extent 3 but T1's axis 0 (K) has extent 4 (T0_g_float[iS0{5}, iS1{3}] and T1_g_float[iS2{4}, iS3{2}])");
  expect_error(false, CF_FLOAT, 3, (int64_t[]){2, 5, 3}, CF_FLOAT, 3, (int64_t[]){4, 3, 2}, -1, NULL,
               "matmul: T0's axis 0 (batch) has extent 2 but T1's axis 0 (batch) has extent 4 (T0_g_float[iS0{2}, iS1{5}, iS2{3}] and T1_g_float[iS3{4}, iS4{3}, iS5{2}])");
  expect_error(false, CF_HALF, 2, (int64_t[]){5, 3}, CF_FLOAT, 2, (int64_t[]){3, 2}, -1, NULL,
               "matmul: T0 has dtype __half but T1 has dtype float; cast one first (both operands must have one dtype, as torch requires) (T0_g___half[iS0{5}, iS1{3}] and T1_g_float[iS2{3}, iS3{2}])");
  expect_error(false, CF_INT32, 2, (int64_t[]){5, 3}, CF_INT32, 2, (int64_t[]){3, 2}, -1, NULL,
               "matmul: T0 has dtype int, but matmul takes floating-point operands (half, bfloat16, float, double) for T0_g_int[iS0{5}, iS1{3}]");
  expect_error(false, CF_FLOAT, 0, NULL, CF_FLOAT, 1, (int64_t[]){3}, -1, NULL,
               "matmul: T0 is 0-d; both operands need at least 1 axis for T0_g_float[]");
  expect_error(true, CF_FLOAT, 2, (int64_t[]){5, 3}, CF_FLOAT, 2, (int64_t[]){4, 2}, -1, NULL,
               "linear: T0's axis 1 (K) has extent 3 but T1's axis 1 (K) has extent 2 (T0_g_float[iS0{5}, iS1{3}] and T1_g_float[iS2{4}, iS3{2}])");
  expect_error(true, CF_FLOAT, 2, (int64_t[]){5, 3}, CF_FLOAT, 3, (int64_t[]){1, 4, 3}, -1, NULL,
               "linear: weight T1 has 3 axes; it must be [N, K] or [K] for T1_g_float[bS2{1}, iS3{4}, iS4{3}]");
  expect_error(true, CF_FLOAT, 2, (int64_t[]){5, 3}, CF_FLOAT, 2, (int64_t[]){4, 3}, 2, (int64_t[]){5, 4},
               "linear: bias T2 is 2-D; it must be 0-d or 1-D of the weight's N for T2_g_float[iS4{5}, iS5{4}]");
  expect_error(true, CF_FLOAT, 2, (int64_t[]){5, 3}, CF_FLOAT, 2, (int64_t[]){4, 3}, 1, (int64_t[]){5},
               "linear: T2's axis 0 (N) has extent 5 but T1's axis 0 (N) has extent 4 (T2_g_float[iS4{5}] and T1_g_float[iS2{4}, iS3{3}])");
  expect_error(true, CF_FLOAT, 2, (int64_t[]){5, 3}, CF_FLOAT, 1, (int64_t[]){3}, 1, (int64_t[]){5},
               "linear: bias T2 is 1-D; it must be 0-d (the weight is 1-D) for T2_g_float[iS3{5}]");
}

Test(matmul_ir, a_null_operand_is_refused) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){5, 3});
  cr_expect_null(cf_matmul(f, a, NULL));
  cr_expect_str_eq(cf_fusion_error(f), "matmul: argument 2 (b) is NULL");
  cf_fusion_destroy(f);
}
