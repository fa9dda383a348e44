/* Shape ops in the IR (issue 11): the printed math of squeeze, expand, full, reshape and a
 * broadcast 0-d scalar input, exactly; every refusal with its exact message; reshape in
 * the evaluator (row-major, through strides). */
#include "ops_test_util.h"

static cf_fusion *f;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(shape_ops_ir, .init = setup, .fini = teardown);

static cf_tv *x3(void) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 3, (int64_t[]){4, 1, 8});
  cf_fusion_add_input(f, x);
  return x;
}

#define EXPECT_ERR(call, msg)                                                                                          \
  do {                                                                                                                 \
    cr_expect_null(call);                                                                                              \
    cr_expect_str_eq(cf_fusion_error(f), msg);                                                                         \
    cf_fusion_clear_error(f);                                                                                          \
  } while (0)

Test(shape_ops_ir, printed_math) {
  cf_tv *x = x3();
  cf_tv *eps = cf_scalar_input(f, CF_FLOAT);
  cf_tv *s = cf_squeeze(f, x, 1, (int[]){1});
  ot_expect_def(s, "T2_l_float[iS3{4}, iS4{8}]\n   = squeeze( T0_g_float[iS0{4}, bS1{1}, iS2{8}], {false, true, false} );\n");
  cf_tv *a = cf_add(f, s, eps);
  cr_assert_not_null(a);
  cf_tv *e = cf_expand(f, cf_broadcast(f, a, 3, (bool[]){false, true, false}), 3, (int64_t[]){-1, 3, -1});
  ot_expect_def(e, "T6_l_float[iS12{4}, iS13{3}, iS14{8}]\n   = expand( T5_l_float[iS9{4}, bS10{1}, iS11{8}], {4, 3, 8} );\n");
  ot_expect_def(cf_full(f, 3, (int64_t[]){4, 3, 8}, 2.5, CF_FLOAT),
                "T7_l_float[iS15{4}, iS16{3}, iS17{8}]\n   = full( {4, 3, 8}, 2.5, float );\n");
  ot_expect_def(cf_reshape(f, x, 2, (int64_t[]){-1, 2}),
                "T8_l_float[iS18{16}, iS19{2}]\n   = reshape( T0_g_float[iS0{4}, bS1{1}, iS2{8}], {16, 2} );\n");
}

Test(shape_ops_ir, errors_name_tensor_and_axis) {
  cf_tv *x = x3();
  EXPECT_ERR(cf_squeeze(f, x, 1, (int[]){0}), "squeeze: axis 0 (iS0{4}) of T0 is neither a broadcast axis nor of "
             "extent 1 for T0_g_float[iS0{4}, bS1{1}, iS2{8}]");
  EXPECT_ERR(cf_squeeze(f, x, 1, (int[]){3}), "squeeze: axis 3 out of range for T0_g_float[iS0{4}, bS1{1}, iS2{8}]");
  EXPECT_ERR(cf_expand(f, x, 3, (int64_t[]){5, 2, 8}), "expand: axis 0 of T0 is not a broadcast axis and cannot "
             "expand from iS0{4} to 5 for T0_g_float[iS0{4}, bS1{1}, iS2{8}]");
  EXPECT_ERR(cf_expand(f, x, 2, (int64_t[]){5, 2}), "expand: sizes has 2 axes, expected 3 for T0_g_float[iS0{4}, "
             "bS1{1}, iS2{8}]");
  EXPECT_ERR(cf_reshape(f, x, 2, (int64_t[]){5, 7}), "reshape: T0 has 32 elements but the sizes give 35 for "
             "T0_g_float[iS0{4}, bS1{1}, iS2{8}]");
  EXPECT_ERR(cf_reshape(f, x, 2, (int64_t[]){-1, -1}), "reshape: size -1 of axis 1 is a second -1 (one size may be "
             "inferred) for T0_g_float[iS0{4}, bS1{1}, iS2{8}]");
  EXPECT_ERR(cf_reshape(f, x, 2, (int64_t[]){-1, 5}), "reshape: T0 has 32 elements, not a multiple of 5 for "
             "T0_g_float[iS0{4}, bS1{1}, iS2{8}]");
  EXPECT_ERR(cf_full(f, 1, (int64_t[]){-3}, 1, CF_FLOAT), "full: size -3 of axis 0 is negative");
}

Test(shape_ops_ir, evaluator_reshape_is_row_major_through_strides) {
  cf_tv *x = cf_tensor_strided(f, CF_FLOAT, 2);
  cf_fusion_add_input(f, x);
  cf_tv *t = cf_transpose(f, x, 0, 1);
  cf_fusion_add_output(f, cf_reshape(f, t, 1, (int64_t[]){-1}));
  DLManagedTensor *in = ot_tensor(CF_FLOAT, 2, (int64_t[]){2, 3}, (double[]){0, 1, 2, 3, 4, 5}), *out[1] = {0};
  cr_assert_eq(ot_eval(f, 1, &in, out), CF_OK, "%s", cf_fusion_error(f));
  ot_expect_values(out[0], CF_FLOAT, 1, (int64_t[]){6}, (double[]){0, 3, 1, 4, 2, 5});
  cf_tensor_free(in);
  cf_tensor_free(out[0]);
}
