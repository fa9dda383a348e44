/* The pointwise scheduler and the caching rewrites it uses: what cache_after and
 * cache_before do to the graph, the schedule the heuristic picks (vector width, caches,
 * launch shape), its refusals, and scheduled fusions run against the evaluator (NVRTC for
 * sm_90a, the host backend, and the GPU when there is one). */
#include <criterion/criterion.h>
#include <string.h>

#include "kernels/kernel_check.h"

static cf_fusion *f;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(pointwise, .init = setup, .fini = teardown);

/* out = relu(a * broadcast(b) + a) for a [rows, cols] (T0) and b [cols] (T1). */
static void demo_fusion(int64_t rows, int64_t cols) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){rows, cols});
  cf_tv *b = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){cols});
  cf_fusion_add_input(f, a);
  cf_fusion_add_input(f, b);
  cf_tv *out = cf_relu(f, cf_add(f, cf_mul(f, a, cf_broadcast(f, b, 2, (bool[]){true, false})), a));
  cf_fusion_add_output(f, out);
}

Test(pointwise, cache_after_redirects_the_consumers) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){8});
  cf_fusion_add_input(f, a);
  cf_fusion_add_output(f, cf_add(f, cf_neg(f, a), a));
  cf_tv *c = cf_cache_after(f, a);
  cr_assert_not_null(c, "%s", cf_fusion_error(f));
  char *math = tu_capture_fusion(cf_fusion_print_math, f);
  cr_expect_str_eq(math, "Inputs:\n  T0_g_float[iS0{8}]\nOutputs:\n  T2_g_float[iS2{8}]\n\n%kernel_math {\n"
                         "T3_l_float[iS3{8}]\n   = Set( T0_g_float[iS0{8}] );\n"
                         "T1_l_float[iS1{8}]\n   = neg( T3_l_float[iS3{8}] );\n"
                         "T2_g_float[iS2{8}]\n   = add( T1_l_float[iS1{8}],\n        T3_l_float[iS3{8}] );\n"
                         "} // %kernel_math\n");
  free(math);
  cr_expect_eq(cf_fusion_verify(f), CF_OK, "%s", cf_fusion_error(f));
}

Test(pointwise, cache_before_gives_the_output_a_producer) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){8});
  cf_fusion_add_input(f, a);
  cf_tv *o = cf_neg(f, a);
  cf_fusion_add_output(f, o);
  cf_tv *c = cf_cache_before(f, o);
  cr_assert_not_null(c, "%s", cf_fusion_error(f));
  char *math = tu_capture_fusion(cf_fusion_print_math, f);
  cr_expect_str_eq(math, "Inputs:\n  T0_g_float[iS0{8}]\nOutputs:\n  T1_g_float[iS1{8}]\n\n%kernel_math {\n"
                         "T2_l_float[iS2{8}]\n   = neg( T0_g_float[iS0{8}] );\n"
                         "T1_g_float[iS1{8}]\n   = Set( T2_l_float[iS2{8}] );\n"
                         "} // %kernel_math\n");
  free(math);
  cr_expect_eq(cf_fusion_verify(f), CF_OK, "%s", cf_fusion_error(f));
}

Test(pointwise, caching_errors) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_fusion_add_input(f, a);
  cf_tv *s = cf_sum(f, a, 1, (int[]){1});
  cf_fusion_add_output(f, s);
  cf_tv *p = cf_transpose(f, a, 0, 1);
  cf_fusion_add_output(f, p);
  cr_expect_null(cf_cache_before(f, p));
  cr_expect_str_eq(cf_fusion_error(f), "cache_before: T2 is a permutation; only tensors computed by elementwise ops "
                                       "and reductions can be cached before for T2_g_float[iS5{8}, iS4{4}]");
  cf_fusion_clear_error(f);
  cr_expect_null(cf_cache_before(f, a));
  cr_expect_str_eq(cf_fusion_error(f), "cache_before: T0 is a fusion input; only tensors computed by elementwise "
                                       "ops and reductions can be cached before for T0_g_float[iS0{4}, iS1{8}]");
  cf_fusion_clear_error(f);
  cr_expect_null(cf_cache_after(f, s));
  cr_expect_str_eq(cf_fusion_error(f), "cache_after: T1 has no consumers to read a cache for T1_g_float[iS2{4}, rS3{8}]");
}

Test(pointwise, vectorizes_by_four_floats) {
  demo_fusion(64, 96);
  cr_assert_eq(cf_schedule_pointwise(f), CF_OK, "%s", cf_fusion_error(f));
  char *k = tu_capture_fusion(cf_fusion_print_kernel, f);
  cr_expect(strstr(k, "__launch_bounds__(128)") != NULL, "%s", k);
  cr_expect(strstr(k, "*reinterpret_cast<Array<float, 4>*>(&T6[0]) = *reinterpret_cast<const Array<float, 4>*>(&T0.data[") !=
                NULL, "vector load of the full-rank input:\n%s", k);
  cr_expect(strstr(k, "*reinterpret_cast<Array<float, 4>*>(&T5.data[") != NULL, "vector store:\n%s", k);
  free(k);
}

Test(pointwise, narrows_the_vector_to_divide_the_inner_extent) {
  demo_fusion(64, 6);
  cr_assert_eq(cf_schedule_pointwise(f), CF_OK, "%s", cf_fusion_error(f));
  char *k = tu_capture_fusion(cf_fusion_print_kernel, f);
  cr_expect(strstr(k, "Array<float, 2>") != NULL && strstr(k, "Array<float, 4>") == NULL, "%s", k);
  free(k);
}

Test(pointwise, no_vectors_for_odd_or_symbolic_or_strided_extents) {
  demo_fusion(8, 7);
  cr_assert_eq(cf_schedule_pointwise(f), CF_OK, "%s", cf_fusion_error(f));
  char *k = tu_capture_fusion(cf_fusion_print_kernel, f);
  cr_expect(strstr(k, "Array<") == NULL, "%s", k);
  free(k);
  cf_fusion *g = cf_fusion_create();
  cf_tv *s = cf_tensor_symbolic(g, CF_FLOAT, 2), *st = cf_tensor_strided(g, CF_FLOAT, 2);
  cf_fusion_add_input(g, s);
  cf_fusion_add_input(g, st);
  cf_fusion_add_output(g, cf_add(g, s, st));
  cr_assert_eq(cf_schedule_pointwise(g), CF_OK, "%s", cf_fusion_error(g));
  k = tu_capture_fusion(cf_fusion_print_kernel, g);
  cr_expect(strstr(k, "Array<") == NULL, "%s", k);
  free(k);
  cf_fusion_destroy(g);
}

Test(pointwise, refuses_reductions) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_fusion_add_input(f, a);
  cf_fusion_add_output(f, cf_sum(f, a, 1, (int[]){1}));
  cr_expect_eq(cf_schedule_pointwise(f), CF_ERR_UNSUPPORTED);
  cr_expect_str_eq(cf_fusion_error(f), "schedule_pointwise: T1 is computed by sum; the pointwise scheduler takes "
                                       "elementwise ops only for T1_g_float[iS2{4}, rS3{8}]");
}

Test(pointwise, refuses_scheduled_fusions) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){8});
  cf_fusion_add_input(f, a);
  cf_tv *o = cf_neg(f, a);
  cf_fusion_add_output(f, o);
  cf_split(f, o, 0, 2);
  cr_expect_eq(cf_schedule_pointwise(f), CF_ERR_INVALID_SCHEDULE);
  cr_expect_str_eq(cf_fusion_error(f), "schedule_pointwise: T1 is scheduled already for T1_g_float[iS2{4}, iS3{2}]");
}

Test(pointwise, refuses_outputs_of_different_shapes) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_tv *b = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){8});
  cf_fusion_add_input(f, a);
  cf_fusion_add_input(f, b);
  cf_fusion_add_output(f, cf_neg(f, a));
  cf_fusion_add_output(f, cf_neg(f, b));
  cr_expect_eq(cf_schedule_pointwise(f), CF_ERR_UNSUPPORTED);
  cr_expect_str_eq(cf_fusion_error(f), "schedule_pointwise: output T3 has another shape than T2 for T3_g_float[iS5{8}]");
}

/* Scheduled fusions against the evaluator on every backend at hand. */
static void check(int nin, const KcInput *in, double tol) {
  cr_assert_eq(cf_schedule_pointwise(f), CF_OK, "%s", cf_fusion_error(f));
  free(kc_check(f, nin, in, tol));
}

Test(pointwise, runs_a_broadcast_fusion) {
  demo_fusion(33, 100);
  check(2, (KcInput[]){F32(33, 100), F32(100)}, 1e-6);
}

Test(pointwise, runs_an_odd_shape_with_two_outputs) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 3, (int64_t[]){5, 7, 3});
  cf_tv *b = cf_tensor_concrete(f, CF_FLOAT, 3, (int64_t[]){5, 7, 3});
  cf_fusion_add_input(f, a);
  cf_fusion_add_input(f, b);
  cf_tv *s = cf_add(f, a, b);
  cf_fusion_add_output(f, cf_sigmoid(f, s));
  cf_fusion_add_output(f, cf_mul(f, s, b));
  check(2, (KcInput[]){F32(5, 7, 3), F32(5, 7, 3)}, 1e-6);
}

Test(pointwise, runs_symbolic_sizes) {
  cf_tv *a = cf_tensor_symbolic(f, CF_FLOAT, 2);
  cf_fusion_add_input(f, a);
  cf_fusion_add_output(f, cf_exp(f, cf_neg(f, a)));
  check(1, (KcInput[]){F32(300, 17)}, 1e-6);
}
