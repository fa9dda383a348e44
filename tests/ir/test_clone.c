/* cf_fusion_copy: the copy prints the same math, evaluates to the same results, keeps
 * strides, allocation order and attributes (broadcast flags, permutations, casts, scalar
 * operands), is independent of the source (scheduling it leaves the source unchanged),
 * and refuses what is not math with a message. */
#include <criterion/criterion.h>

#include "test_util.h"

static cf_fusion *f, *g;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) {
  cf_fusion_destroy(f);
  cf_fusion_destroy(g);
}
TestSuite(clone, .init = setup, .fini = teardown);

static void expect_same_math(void) {
  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  g = cf_fusion_copy(f);
  cr_assert(g);
  cr_assert_eq(cf_fusion_status(g), CF_OK, "%s", cf_fusion_error(g));
  char *a = tu_capture_fusion(cf_fusion_print_math, f), *b = tu_capture_fusion(cf_fusion_print_math, g);
  cr_expect_str_eq(b, a);
  free(a);
  free(b);
}

/* Both fusions evaluated on the same random inputs give equal outputs. */
static void expect_same_results(int nin, const DLTensor *const *ins) {
  tu_assert_io_fits(f, nin);
  DLManagedTensor *want[TU_MAX_IO] = {0}, *got[TU_MAX_IO] = {0};
  cr_assert_eq(cf_fusion_evaluate(f, nin, ins, want), CF_OK, "%s", cf_fusion_error(f));
  cr_assert_eq(cf_fusion_evaluate(g, nin, ins, got), CF_OK, "%s", cf_fusion_error(g));
  for (int i = 0; i < cf_fusion_num_outputs(f); i++) {
    cr_expect(cf_tensor_equal(&got[i]->dl_tensor, &want[i]->dl_tensor), "output %d differs", i);
    cf_tensor_free(want[i]);
    cf_tensor_free(got[i]);
  }
}

/* y = where(x > 0, exp(x) * 2.5, cast(x)) + broadcast(sum(x)), and a permuted copy. */
static void build_mixed(bool symbolic) {
  cf_tv *x = symbolic ? cf_tensor_symbolic(f, CF_FLOAT, 2) : cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){5, 7});
  cf_tv *z = cf_tensor_strided(f, CF_FLOAT, 2);
  cf_fusion_add_input(f, x);
  cf_fusion_add_input(f, z);
  cf_tv *pos = cf_gt(f, x, cf_mul_scalar(f, x, 0.0));
  cf_tv *w = cf_where(f, pos, cf_mul_scalar(f, cf_exp(f, x), 2.5), cf_cast(f, cf_cast(f, x, CF_HALF), CF_FLOAT));
  cf_tv *s = cf_broadcast(f, cf_sum(f, x, 1, (int[]){1}), 2, (bool[]){false, true});
  cf_tv *y = cf_add(f, cf_add(f, w, s), z);
  cf_fusion_add_output(f, y);
  cf_fusion_add_output(f, cf_transpose(f, cf_clamp(f, y, -1.0, 3.0), 0, 1));
}

static void run_mixed(void) {
  DLManagedTensor *x = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){5, 7});
  DLManagedTensor *z = cf_tensor_host_strided(CF_FLOAT, 2, (int64_t[]){5, 7}, (int64_t[]){1, 5});
  cf_tensor_fill_random(&x->dl_tensor, 1);
  cf_tensor_fill_random(&z->dl_tensor, 2);
  expect_same_results(2, (const DLTensor *[]){&x->dl_tensor, &z->dl_tensor});
  cf_tensor_free(x);
  cf_tensor_free(z);
}

Test(clone, constant_sizes_print_and_evaluate_the_same) {
  build_mixed(false);
  expect_same_math();
  run_mixed();
}

Test(clone, symbolic_sizes_print_and_evaluate_the_same) {
  build_mixed(true);
  expect_same_math();
  run_mixed();
}

Test(clone, keeps_strides_contiguity_and_allocation_order) {
  build_mixed(true);
  cf_tv *x = cf_fusion_input(f, 0);
  cf_set_allocation_domain(f, x, 2, (cf_id *[]){cf_tv_axis(x, 1), cf_tv_axis(x, 0)}, (int8_t[]){1, 0});
  expect_same_math();
  char *a = tu_capture_fusion(cf_fusion_print_transforms, f), *b = tu_capture_fusion(cf_fusion_print_transforms, g);
  cr_expect_str_eq(b, a);
  free(a);
  free(b);
}

Test(clone, is_independent_of_the_source) {
  build_mixed(false);
  char *before = tu_capture_fusion(cf_fusion_print_transforms, f);
  expect_same_math();
  cf_tv *out = cf_fusion_output(g, 0);
  cf_split(g, out, 1, 4);
  cf_parallelize(g, out, 0, CF_PT_BIDX);
  cf_inline_most(g);
  cr_assert_eq(cf_fusion_status(g), CF_OK, "%s", cf_fusion_error(g));
  char *after = tu_capture_fusion(cf_fusion_print_transforms, f);
  cr_expect_str_eq(after, before);
  free(before);
  free(after);
  /* New tensors of the copy do not reuse the source's names. */
  cf_tv *t = cf_set(g, out);
  cr_expect_str_eq(cf_tv_name(t), "T16");
  cr_expect_eq(cf_fusion_num_inputs(g), 2);
}

Test(clone, copies_the_math_of_a_scheduled_fusion) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){64});
  cf_fusion_add_input(f, x);
  cf_tv *y = cf_exp(f, x);
  cf_fusion_add_output(f, y);
  char *math = tu_capture_fusion(cf_fusion_print_math, f);
  cf_split(f, y, 0, 8);
  cf_parallelize(f, y, 1, CF_PT_TIDX);
  g = cf_fusion_copy(f);
  char *copied = tu_capture_fusion(cf_fusion_print_math, g);
  cr_expect_str_eq(copied, math);
  free(math);
  free(copied);
}

Test(clone, refuses_an_rfactor_domain) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 64});
  cf_fusion_add_input(f, x);
  cf_tv *y = cf_sum(f, x, 1, (int[]){1});
  cf_fusion_add_output(f, y);
  cf_split(f, y, 1, 8);
  cf_rfactor(f, y, 1, (int[]){1});
  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  g = cf_fusion_copy(f);
  cr_expect_eq(cf_fusion_status(g), CF_ERR_UNSUPPORTED);
  cr_expect_str_eq(cf_fusion_error(g),
                   "fusion_copy: T2 has an rfactor domain; only the math of an unscheduled fusion is copied");
}

Test(clone, carries_the_sources_error) {
  cf_split(f, NULL, 0, 2);
  g = cf_fusion_copy(f);
  cr_expect_eq(cf_fusion_status(g), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_error(g), "fusion_copy: the fusion has an error: split: tensor is NULL");
  cr_expect_null(cf_fusion_copy(NULL));
}
