/* Tests of ir/fusion.c and ir/tensor.c: inputs and outputs, tensor constructors, their
 * errors, sticky error handling and inspection. */
#include <criterion/criterion.h>
#include <string.h>

#include "test_util.h"

Test(fusion, constructors_make_the_expected_axes) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = cf_tensor_concrete(f, CF_HALF, 3, (int64_t[]){2, 1, 5});
  cf_tv *b = cf_tensor_symbolic(f, CF_INT32, 2);
  cf_tv *c = cf_tensor_strided(f, CF_DOUBLE, 1);
  char *sa = tu_tv_str(f, a), *sb = tu_tv_str(f, b), *sc = tu_tv_str(f, c);
  cr_expect_str_eq(sa, "T0_l___half[iS0{2}, bS1{1}, iS2{5}]");
  cr_expect_str_eq(sb, "T1_l_int[iS3{i0}, iS4{i1}]");
  cr_expect_str_eq(sc, "T2_l_double[iS5{i2}]");
  free(sa), free(sb), free(sc);
  cr_expect_eq(cf_id_extent(cf_tv_axis(a, -1)), 5);
  cr_expect_eq(cf_id_extent(cf_tv_axis(b, 0)), -1);
  cr_expect_eq(cf_id_iter_type(cf_tv_axis(a, 1)), CF_ITER_BROADCAST);
  cr_expect_null(cf_tv_axis(a, 3));
  cr_expect_str_eq(cf_tv_name(c), "T2");
  cf_fusion_destroy(f);
}

Test(fusion, inputs_and_outputs_become_global) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *t[5];
  tu_set_chain(f, CF_FLOAT, 1, (int64_t[]){8}, t);
  cr_expect_eq(cf_fusion_num_inputs(f), 1);
  cr_expect_eq(cf_fusion_num_outputs(f), 1);
  cr_expect_eq(cf_fusion_input(f, 0), t[0]);
  cr_expect_eq(cf_fusion_output(f, 0), t[4]);
  cr_expect_null(cf_fusion_output(f, 1));
  cr_expect_eq(cf_tv_memory_type(t[0]), CF_MEM_GLOBAL);
  cr_expect_eq(cf_tv_memory_type(t[4]), CF_MEM_GLOBAL);
  cr_expect_eq(cf_tv_memory_type(t[2]), CF_MEM_LOCAL);
  cf_fusion_destroy(f);
}

Test(fusion, constructor_errors) {
  cf_fusion *f = cf_fusion_create();
  cr_expect_null(cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 0}));
  cr_expect_str_eq(cf_fusion_error(f), "tensor_concrete: size 0 of axis 1 is not positive");
  cf_fusion_clear_error(f);
  cr_expect_null(cf_tensor_concrete(f, CF_FLOAT, 2, NULL));
  cr_expect_str_eq(cf_fusion_error(f), "tensor_concrete: sizes is NULL");
  cf_fusion_clear_error(f);
  cr_expect_null(cf_tensor_symbolic(f, (cf_dtype)99, 2));
  cr_expect_str_eq(cf_fusion_error(f), "tensor_symbolic: invalid dtype 99");
  cf_fusion_clear_error(f);
  cr_expect_null(cf_tensor_symbolic(f, CF_FLOAT, 17));
  cr_expect_str_eq(cf_fusion_error(f), "tensor_symbolic: rank 17 is outside 0..16");
  cf_fusion_destroy(f);
}

Test(fusion, computed_tensors_cannot_be_inputs) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){4});
  cf_fusion_add_input(f, a);
  cf_tv *b = cf_set(f, a);
  cr_expect_eq(cf_fusion_add_input(f, b), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_error(f),
                   "add_input: T1 is computed by an expression and cannot be an input for T1_l_float[iS1{4}]");
  cf_fusion_destroy(f);
}

Test(fusion, inputs_cannot_be_outputs) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){4});
  cf_fusion_add_input(f, a);
  cr_expect_eq(cf_fusion_add_output(f, a), CF_ERR_UNSUPPORTED);
  cr_expect_str_eq(cf_fusion_error(f),
                   "add_output: T0 is an input; outputs must be computed by the fusion for T0_g_float[iS0{4}]");
  cf_fusion_destroy(f);
}

Test(fusion, null_fusion_is_harmless) {
  cr_expect_null(cf_tensor_concrete(NULL, CF_FLOAT, 1, (int64_t[]){4}));
  cr_expect_eq(cf_fusion_add_input(NULL, NULL), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_error(NULL), "fusion is NULL");
  cr_expect_eq(cf_fusion_print_math(NULL, stdout), CF_ERR_INVALID_ARGUMENT);
  cf_fusion_destroy(NULL);
}

Test(fusion, null_tensor_argument) {
  cf_fusion *f = cf_fusion_create();
  cr_expect_eq(cf_fusion_add_output(f, NULL), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_error(f), "add_output: tensor is NULL");
  cf_fusion_destroy(f);
}

Test(fusion, print_math_of_a_set_chain) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *t[5];
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){2, 4}, t);
  char *s = tu_capture_fusion(cf_fusion_print_math, f);
  cr_expect_str_eq(s,
                   "Inputs:\n"
                   "  T0_g_float[iS0{2}, iS1{4}]\n"
                   "Outputs:\n"
                   "  T4_g_float[iS8{2}, iS9{4}]\n"
                   "\n"
                   "%kernel_math {\n"
                   "T1_l_float[iS2{2}, iS3{4}]\n   = Set( T0_g_float[iS0{2}, iS1{4}] );\n"
                   "T2_l_float[iS4{2}, iS5{4}]\n   = Set( T1_l_float[iS2{2}, iS3{4}] );\n"
                   "T3_l_float[iS6{2}, iS7{4}]\n   = Set( T2_l_float[iS4{2}, iS5{4}] );\n"
                   "T4_g_float[iS8{2}, iS9{4}]\n   = Set( T3_l_float[iS6{2}, iS7{4}] );\n"
                   "} // %kernel_math\n");
  free(s);
  cf_fusion_destroy(f);
}

Test(fusion, print_tv_shows_positions) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *t[5];
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){2, 4}, t);
  cf_set_memory_type(f, t[2], CF_MEM_SHARED);
  cf_parallelize(f, t[2], 1, CF_PT_BIDX);
  cf_parallelize(f, t[3], 1, CF_PT_BIDX);
  cr_assert_eq(cf_inline_at(f, t[2], 1), CF_OK, "%s", cf_fusion_error(f));
  char *s2 = tu_tv_str(f, t[2]), *s3 = tu_tv_str(f, t[3]);
  cr_expect_str_eq(s2, "T2_s_float[iS4{2}, iblockIdx.x5{4}] ca_pos( 1 )");
  cr_expect_str_eq(s3, "T3_l_float[iS6{2}, iblockIdx.x7{4}] produce_pos( 1 )");
  free(s2), free(s3);
  cf_fusion_destroy(f);
}
