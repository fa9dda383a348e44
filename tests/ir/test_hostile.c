/* Hostile input to the IR (issue 16): overflowing sizes and extents, absurd split
 * factors and ranks, graphs no builder call catches (outputs and operands nothing
 * computes, input-outputs, allocation domains that miss an axis), and host tensors whose
 * byte count overflows. Each is a clear error with its exact message, never a wrapped
 * value or a kernel reading garbage. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "test_util.h"

static cf_fusion *f;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(hostile, .init = setup, .fini = teardown);

Test(hostile, host_tensor_sizes_that_overflow_are_refused) {
  cr_expect_null(cf_tensor_host(CF_FLOAT, 1, (int64_t[]){INT64_C(1) << 62}));
  cr_expect_null(cf_tensor_host(CF_FLOAT, 2, (int64_t[]){INT64_C(1) << 32, INT64_C(1) << 32}));
  cr_expect_null(cf_tensor_host(CF_FLOAT, 1, (int64_t[]){-1}));
  cr_expect_null(cf_tensor_host(CF_FLOAT, CF_MAX_RANK + 1, (int64_t[CF_MAX_RANK + 1]){0}));
  cr_expect_null(cf_tensor_host_strided(CF_FLOAT, 2, (int64_t[]){2, 2}, (int64_t[]){INT64_MAX / 2, 1}));
  DLManagedTensor *ok = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){3, 0});
  cr_assert_not_null(ok);
  cr_expect_eq(cf_tensor_numel(&ok->dl_tensor), 0);
  cf_tensor_free(ok);
}

Test(hostile, numel_of_an_overflowing_shape_is_minus_one) {
  int64_t shape[2] = {INT64_C(1) << 32, INT64_C(1) << 32};
  DLTensor t = {.ndim = 2, .shape = shape};
  cr_expect_eq(cf_tensor_numel(&t), -1);
}

Test(hostile, concrete_sizes_whose_bytes_overflow_are_refused) {
  cr_expect_null(cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){INT64_C(1) << 32, INT64_C(1) << 32}));
  cr_expect_str_eq(cf_fusion_error(f), "tensor_concrete: the sizes' product overflows int64 bytes of float");
  cf_fusion_clear_error(f);
  cr_expect_null(cf_tensor_concrete(f, CF_DOUBLE, 1, (int64_t[]){INT64_C(1) << 61}));
  cr_expect_str_eq(cf_fusion_error(f), "tensor_concrete: the sizes' product overflows int64 bytes of double");
}

Test(hostile, merged_constant_extents_that_overflow_are_refused) {
  cf_tv *a = cf_tensor_concrete(f, CF_INT8, 1, (int64_t[]){INT64_C(1) << 40});
  cr_assert_not_null(a, "%s", cf_fusion_error(f));
  EXPECT_OK(cf_split(f, a, 0, 1 << 20)); /* [2^20, 2^20] */
  EXPECT_OK(cf_split(f, a, 1, 1 << 20)); /* [2^20, 1, 2^20] */
  EXPECT_OK(cf_split(f, a, 0, 1 << 20)); /* [1, 2^20, 1, 2^20] */
  EXPECT_OK(cf_merge(f, a, 1));          /* [1, 2^20, 2^20] */
  EXPECT_OK(cf_merge(f, a, 1));          /* [1, 2^40] */
  EXPECT_OK(cf_split(f, a, 0, 1 << 30));  /* [1, 2^30 (padded), 2^40] */
  EXPECT_ERROR(cf_merge(f, a, 1), CF_ERR_INVALID_ARGUMENT,
               "merge: extents 1073741824 and 1099511627776 of axes 1 and 2 overflow int64 for "
               "T0_l_int8_t[iS9{1}, iS10{1073741824}, iS8{1099511627776}]");
}

Test(hostile, an_absurd_split_factor_is_refused) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){64});
  EXPECT_ERROR(cf_split(f, a, 0, INT64_MAX), CF_ERR_INVALID_ARGUMENT,
               "split: factor 9223372036854775807 exceeds the largest split factor 2147483647 for "
               "T0_l_float[iS0{64}]");
  cf_fusion_clear_error(f);
  EXPECT_OK(cf_split(f, a, 0, INT32_MAX));
}

Test(hostile, broadcast_rank_above_the_limit_is_refused) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){4});
  bool bc[65];
  for (int i = 0; i < 65; i++) bc[i] = i != 0;
  cr_expect_null(cf_broadcast(f, a, 65, bc));
  cr_expect_str_eq(cf_fusion_error(f), "broadcast: out_rank 65 is outside 0..16 for T0_l_float[iS0{4}]");
  cf_fusion_clear_error(f);
  cr_expect_null(cf_broadcast(f, a, 17, bc));
  cr_expect_str_eq(cf_fusion_error(f), "broadcast: out_rank 17 is outside 0..16 for T0_l_float[iS0{4}]");
  cf_fusion_clear_error(f);
  cr_expect_not_null(cf_broadcast(f, a, 16, bc), "%s", cf_fusion_error(f));
}

Test(hostile, an_output_nothing_computes_is_refused) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){4});
  cf_fusion_add_output(f, a);
  EXPECT_ERROR(cf_fusion_verify(f), CF_ERR_INVALID_ARGUMENT,
               "verify: output T0 is not computed by any expression and is not an input");
}

Test(hostile, an_operand_never_added_as_input_is_refused) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){4});
  cf_tv *b = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){4});
  cf_fusion_add_input(f, a);
  cf_fusion_add_output(f, cf_add(f, a, b));
  EXPECT_ERROR(cf_fusion_verify(f), CF_ERR_INVALID_ARGUMENT,
               "verify: T1, operand 1 of the add defining T2, is not computed by any expression and is not an "
               "input; add it with cf_fusion_add_input");
}

Test(hostile, a_tensor_cannot_be_input_and_output) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){4});
  cf_fusion_add_output(f, a);
  EXPECT_ERROR(cf_fusion_add_input(f, a), CF_ERR_INVALID_ARGUMENT,
               "add_input: T0 is an output; a tensor cannot be both for T0_g_float[iS0{4}]");
}

Test(hostile, an_allocation_domain_missing_an_axis_is_refused) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_fusion_add_input(f, a);
  cf_tv *b = cf_set(f, a);
  cf_fusion_add_output(f, b);
  EXPECT_OK(cf_split(f, b, 1, 2));
  cf_id *half[2] = {cf_tv_axis(b, 0), cf_tv_axis(b, 1)}; /* iS2{4}, outer of the split */
  EXPECT_OK(cf_set_allocation_domain(f, b, 2, half, NULL));
  EXPECT_ERROR(cf_fusion_verify(f), CF_ERR_INVALID_SCHEDULE,
               "verify: T1: the allocation domain does not cover logical axis iS3{8}");
}

Test(hostile, an_allocation_domain_covering_every_axis_passes) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_fusion_add_input(f, a);
  cf_tv *b = cf_set(f, a);
  cf_fusion_add_output(f, b);
  EXPECT_OK(cf_split(f, b, 1, 2));
  cf_id *all[3] = {cf_tv_axis(b, 2), cf_tv_axis(b, 0), cf_tv_axis(b, 1)};
  EXPECT_OK(cf_set_allocation_domain(f, b, 3, all, NULL));
  EXPECT_OK(cf_fusion_verify(f));
}

Test(hostile, compile_runs_the_verifier_first) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){4});
  cf_fusion_add_output(f, cf_set(f, cf_set(f, a)));
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_expect_eq(cf_executor_compile(e, f), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_executor_error(e),
                   "verify: T0, operand 0 of the Set defining T1, is not computed by any expression and is not an "
                   "input; add it with cf_fusion_add_input");
  cf_executor_destroy(e);
}

Test(hostile, the_evaluator_refuses_an_output_nothing_computes) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){4});
  cf_fusion_add_output(f, a);
  DLManagedTensor *out = NULL;
  EXPECT_ERROR(cf_fusion_evaluate(f, 0, NULL, &out), CF_ERR_INVALID_ARGUMENT,
               "verify: output T0 is not computed by any expression and is not an input");
  cr_expect_null(out);
}

Test(hostile, the_evaluator_refuses_negative_sizes) {
  cf_tv *a = cf_tensor_symbolic(f, CF_FLOAT, 1);
  cf_fusion_add_input(f, a);
  cf_fusion_add_output(f, cf_neg(f, a));
  float x = 0;
  int64_t shape = -5;
  DLTensor t = {.data = &x, .device = {kDLCPU, 0}, .ndim = 1, .dtype = {kDLFloat, 32, 1}, .shape = &shape};
  const DLTensor *in = &t;
  DLManagedTensor *out = NULL;
  EXPECT_ERROR(cf_fusion_evaluate(f, 1, &in, &out), CF_ERR_INVALID_ARGUMENT,
               "evaluate: input 0 (T0) has a negative size or too many elements");
}

/* Found by fuzz_builder: the pointwise scheduler copied the (empty) input list from NULL. */
Test(hostile, pointwise_scheduling_a_fusion_without_inputs) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){8});
  cf_fusion_add_output(f, cf_neg(f, a));
  cf_schedule_pointwise(f);
  cr_expect_neq(cf_fusion_status(f), CF_ERR_INTERNAL, "%s", cf_fusion_error(f));
  cf_fusion_clear_error(f);
  EXPECT_ERROR(cf_fusion_verify(f), CF_ERR_INVALID_ARGUMENT,
               "verify: T0, operand 0 of the neg defining T2, is not computed by any expression and is not an input; "
               "add it with cf_fusion_add_input");
}
