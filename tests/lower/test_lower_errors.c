/* Every compile-time error of lowering, with its exact message, as cf_executor_compile
 * reports it (host backend; the checks do not depend on the backend). */
#include <criterion/criterion.h>
#include <string.h>

#include "test_util.h"

static cf_fusion *f;
static cf_tv *t[5];
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(lower_errors, .init = setup, .fini = teardown);

static void expect_compile_error(cf_status status, const char *msg) {
  cr_assert_eq(cf_fusion_status(f), CF_OK, "scheduling failed: %s", cf_fusion_error(f));
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_expect_eq(cf_executor_compile(e, f), status, "%s", cf_executor_error(e));
  cr_expect_str_eq(cf_executor_error(e), msg);
  cf_executor_destroy(e);
}

static void chain(int rank, const int64_t *sizes) { tu_set_chain(f, CF_FLOAT, rank, sizes, t); }

Test(lower_errors, no_outputs) {
  cf_fusion_add_input(f, cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){4}));
  expect_compile_error(CF_ERR_INVALID_ARGUMENT, "compile: the fusion has no outputs");
}

Test(lower_errors, registers_read_from_other_threads) {
  chain(1, (int64_t[]){32});
  cf_parallelize(f, t[2], 0, CF_PT_TIDX);
  expect_compile_error(CF_ERR_INVALID_SCHEDULE,
                       "compile: T2 is in Local memory, but T3 reads its axis 0 (ithreadIdx.x2{32}) on threadIdx.x from "
                       "other threads; put it in shared memory or parallelize the consumer's matching axis alike");
}

Test(lower_errors, shared_memory_read_from_other_blocks) {
  chain(1, (int64_t[]){32});
  cf_set_memory_type(f, t[2], CF_MEM_SHARED);
  cf_parallelize(f, t[2], 0, CF_PT_BIDX);
  expect_compile_error(CF_ERR_INVALID_SCHEDULE,
                       "compile: T2 is in Shared memory, but T3 reads its axis 0 (iblockIdx.x2{32}) on blockIdx.x from "
                       "other blocks; parallelize the consumer's matching axis alike (intermediates cannot be global)");
}

Test(lower_errors, shared_loops_with_different_parallel_types) {
  chain(1, (int64_t[]){32});
  cf_parallelize(f, t[2], 0, CF_PT_TIDX);
  cf_parallelize(f, t[3], 0, CF_PT_BIDX);
  cr_assert_eq(cf_inline_at(f, t[2], 1), CF_OK, "%s", cf_fusion_error(f));
  expect_compile_error(CF_ERR_INVALID_SCHEDULE,
                       "compile: axis 0 of T2 (on threadIdx.x) and axis 0 of T3 (on blockIdx.x) share a loop; axes that "
                       "share a loop need the same parallel type");
}

Test(lower_errors, a_parallel_type_twice_in_one_tensor) {
  chain(2, (int64_t[]){4, 8});
  for (int i = 1; i < 5; i++) {
    cf_parallelize(f, t[i], 0, CF_PT_TIDX);
    cf_parallelize(f, t[i], 1, CF_PT_TIDX);
  }
  expect_compile_error(CF_ERR_INVALID_SCHEDULE,
                       "compile: axes 0 and 1 of T1 both run on threadIdx.x; a tensor uses a parallel type once");
}

Test(lower_errors, a_parallel_type_twice_through_a_shared_loop) {
  chain(2, (int64_t[]){4, 8});
  cf_parallelize(f, t[2], 1, CF_PT_TIDX);
  cf_parallelize(f, t[3], 0, CF_PT_TIDX);
  cf_parallelize(f, t[3], 1, CF_PT_TIDY);
  cf_set_memory_type(f, t[2], CF_MEM_SHARED);
  cr_assert_eq(cf_inline_at(f, t[2], 1), CF_OK, "%s", cf_fusion_error(f));
  expect_compile_error(CF_ERR_INVALID_SCHEDULE, "compile: axes 0 and 1 of T2 both run on threadIdx.x (one through a "
                                                "loop it shares); a tensor uses a parallel type once");
}

Test(lower_errors, vectorize_not_innermost) {
  chain(1, (int64_t[]){16});
  cf_split(f, t[2], 0, 4);
  cf_parallelize(f, t[2], 0, CF_PT_VECTORIZE);
  expect_compile_error(CF_ERR_INVALID_SCHEDULE,
                       "compile: cannot vectorize axis 0 (iV5{4}) of T2_l_float[iV5{4}, iS6{4}]: it is not the "
                       "innermost loop axis");
}

Test(lower_errors, vectorize_more_than_16_bytes) {
  chain(1, (int64_t[]){16});
  cf_split(f, t[2], 0, 8);
  cf_parallelize(f, t[2], 1, CF_PT_VECTORIZE);
  expect_compile_error(CF_ERR_INVALID_SCHEDULE,
                       "compile: cannot vectorize axis 1 (iV6{8}) of T2_l_float[iS5{2}, iV6{8}]: a vector access is "
                       "a power of two of at most 16 bytes");
}

Test(lower_errors, vectorize_a_computation) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){16});
  cf_fusion_add_input(f, a);
  cf_tv *b = cf_neg(f, a);
  cf_fusion_add_output(f, b);
  cf_split(f, b, 0, 4);
  cf_parallelize(f, b, 1, CF_PT_VECTORIZE);
  expect_compile_error(CF_ERR_INVALID_SCHEDULE, "compile: cannot vectorize axis 1 (iV3{4}) of T1_g_float[iS2{4}, "
                                                "iV3{4}]: only copies (set, broadcast, permute) are vectorized");
}

Test(lower_errors, vectorize_a_non_divisible_split) {
  chain(1, (int64_t[]){10});
  cf_split(f, t[2], 0, 4);
  cf_parallelize(f, t[2], 1, CF_PT_VECTORIZE);
  expect_compile_error(CF_ERR_INVALID_SCHEDULE,
                       "compile: cannot vectorize axis 1 of T2: the split it comes from is not divisible by 4");
}

/* A vector along the rows of [3, 10] alone would start at 10 and 20, misaligned: no tail
 * (lower/vectorize.c takes one only along a tensor's flat whole), the split must divide. */
Test(lower_errors, vectorize_odd_rows_split_alone) {
  chain(2, (int64_t[]){3, 10});
  cf_split(f, t[1], 1, 4);
  cf_parallelize(f, t[1], 2, CF_PT_VECTORIZE);
  expect_compile_error(CF_ERR_INVALID_SCHEDULE,
                       "compile: cannot vectorize axis 2 of T1: the split it comes from is not divisible by 4");
}

/* A fill of shared memory along a flat whole keeps whole vectors: the tail is for copies
 * between global memory and registers. */
Test(lower_errors, vectorize_a_shared_fill_of_a_non_divisible_split) {
  chain(1, (int64_t[]){10});
  cf_split(f, t[1], 0, 4);
  cf_set_memory_type(f, t[1], CF_MEM_SHARED);
  cf_parallelize(f, t[1], 1, CF_PT_VECTORIZE);
  expect_compile_error(CF_ERR_INVALID_SCHEDULE,
                       "compile: cannot vectorize axis 1 of T1: the split it comes from is not divisible by 4");
}

Test(lower_errors, vectorize_across_the_outer_axis_of_global_memory) {
  chain(2, (int64_t[]){4, 4});
  cf_reorder(f, t[1], 1, (int[]){0, 1});
  cf_parallelize(f, t[1], 1, CF_PT_VECTORIZE);
  expect_compile_error(CF_ERR_INVALID_SCHEDULE,
                       "compile: cannot vectorize axis 1 (iV2{4}) of T1_l_float[iS3{4}, iV2{4}]: the global tensor it "
                       "reads is not contiguous along it");
}

Test(lower_errors, registers_of_symbolic_size) {
  t[0] = cf_tensor_symbolic(f, CF_FLOAT, 1);
  cf_fusion_add_input(f, t[0]);
  t[1] = cf_set(f, t[0]);
  cf_fusion_add_output(f, cf_set(f, t[1]));
  expect_compile_error(CF_ERR_UNSUPPORTED, "compile: T1 in local memory has a symbolic size; registers need a "
                                           "constant size (inline it deeper or split by a constant)");
}

Test(lower_errors, iteration_axis_inside_reduction_loops) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_fusion_add_input(f, a);
  cf_tv *s = cf_sum(f, a, 1, (int[]){0});
  cf_fusion_add_output(f, s);
  cf_parallelize(f, s, 0, CF_PT_TIDX);
  expect_compile_error(CF_ERR_UNSUPPORTED, "compile: T1 has iteration axis 1 inside its reduction loops and reduces "
                                           "across threads or blocks (one accumulator per thread); reorder its "
                                           "reduction axes innermost");
}

Test(lower_errors, multi_device) {
  chain(1, (int64_t[]){8});
  cf_parallelize(f, t[4], 0, CF_PT_DIDX);
  expect_compile_error(CF_ERR_UNSUPPORTED, "compile: axis 0 of T4 is parallelized on deviceIdx.x; multi-device fusions "
                                           "are not supported");
}

/* The shape fuzz seed 2500 found: a broadcast row inlined at 1 into a loop promoted to the
 * output's extent, its own axis 1 merged from the broadcast. */
Test(lower_errors, promoted_loops_with_an_own_axis_merged_from_a_broadcast) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){2, 3});
  cf_tv *row = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){3});
  cf_fusion_add_input(f, x);
  cf_fusion_add_input(f, row);
  cf_tv *b = cf_broadcast(f, row, 2, (bool[]){true, false});
  cf_tv *out = cf_sub(f, x, b);
  cf_fusion_add_output(f, out);
  cf_merge(f, out, 0);
  cf_split(f, out, 0, 1);
  cf_reorder(f, out, 1, (int[]){1, 0});
  cf_propagate_transforms(f, out);
  cf_parallelize(f, out, 0, CF_PT_TIDY);
  cf_parallelize_all_like(f, out, 0, NULL);
  cr_assert_eq(cf_inline_at(f, b, 1), CF_OK, "%s", cf_fusion_error(f));
  expect_compile_error(CF_ERR_UNSUPPORTED,
                       "compile: T1's allocation axis 0 (iS2{3}) cannot be indexed in the loops of T2: they iterate a "
                       "broadcast's concrete domain, and T2's axes outside them do not map to that domain's; inline T2 "
                       "as deep as its consumer, or keep broadcast axes out of merges");
}

/* Found by the fuzzer (seed 1965): a conflict passed along through a serial axis of the
 * same loop group, where no single producer/consumer pair shows both types. */
Test(lower_errors, conflicting_parallel_types_through_a_serial_axis) {
  chain(1, (int64_t[]){32});
  cf_parallelize(f, t[1], 0, CF_PT_TIDX);
  cf_parallelize(f, t[3], 0, CF_PT_BIDX);
  cf_set_memory_type(f, t[1], CF_MEM_SHARED);
  cf_set_memory_type(f, t[2], CF_MEM_SHARED);
  cr_assert_eq(cf_inline_at(f, t[1], 1), CF_OK, "%s", cf_fusion_error(f));
  cr_assert_eq(cf_inline_at(f, t[2], 1), CF_OK, "%s", cf_fusion_error(f));
  expect_compile_error(CF_ERR_INVALID_SCHEDULE, "compile: axis 0 of T1 (on threadIdx.x) and axis 0 of T3 (on "
                                                "blockIdx.x) share a loop; axes that share a loop need the same "
                                                "parallel type");
}

