/* cf_spill_to_shared (lower/shared_spill.c): a Local tensor keeps its first elements in
 * registers and the rest in shared memory, 16-byte chunks a thread, filled by cp.async
 * where its producer copies 16 bytes from global memory. The refusals with their
 * messages; a kernel equal to the evaluator on the host backend, and its CUDA source. */
#include <stdlib.h>
#include <string.h>

#include "kernels/kernel_check.h"

KC_FUSION_SUITE(shared_spill);

/* out = c + c, c = set(x) of [64, 2 x V] elements of dt, every tensor [64, 2, V] (V of
 * them a 16-byte chunk): the 64 rows on threadIdx.x (each thread's c 2 chunks) or,
 * `serial`, a loop that fills c again in each iteration; c computed inside the rows, its
 * fill a 16-byte vector. */
static cf_tv *c;
static void copy_doubled_of(cf_dtype dt, bool serial) {
  int64_t v = 16 / (int64_t)cf_dtype_size(dt);
  cf_tv *x = kc_input(f, in, &nin, dt, 2, (int64_t[]){64, 2 * v});
  c = cf_set(f, x);
  cf_tv *o = cf_add(f, c, c);
  cf_fusion_add_output(f, o);
  cf_tv *all[] = {c, o};
  for (int i = 0; i < 2; i++) {
    cf_split(f, all[i], 1, v);
    if (!serial) cf_parallelize(f, all[i], 0, CF_PT_TIDX);
  }
  cf_parallelize(f, c, 2, CF_PT_VECTORIZE);
  cf_inline_at(f, c, 1);
}
static void copy_doubled_rows(bool serial) { copy_doubled_of(CF_FLOAT, serial); }
static void copy_doubled(void) { copy_doubled_rows(false); }

static void expect_compile_error(const char *msg) {
  cr_assert_eq(cf_fusion_status(f), CF_OK, "scheduling failed: %s", cf_fusion_error(f));
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_expect_eq(cf_executor_compile(e, f), CF_ERR_INVALID_SCHEDULE, "%s", cf_executor_error(e));
  cr_expect_str_eq(cf_executor_error(e), msg);
  cf_executor_destroy(e);
}

Test(shared_spill, the_call_refuses_inputs_and_negative_counts) {
  copy_doubled();
  cr_expect_eq(cf_spill_to_shared(f, ir_tv_handle(f->inputs.items[0]), 4), CF_ERR_INVALID_SCHEDULE);
  cr_expect_str_eq(cf_fusion_error(f), "spill_to_shared: a fusion input stays in global memory for T0_g_float[iS0{64}, iS1{8}]");
  cf_fusion_destroy(f);
  kc_suite_setup_();
  copy_doubled();
  cr_expect_eq(cf_spill_to_shared(f, c, -1), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_error(f), "spill_to_shared: reg_elems -1 is negative for T1_l_float[ithreadIdx.x2{64}, iS6{2}, iV7{4}]");
}

Test(shared_spill, lowering_refuses_a_part_that_is_no_whole_chunk) {
  copy_doubled();
  cf_spill_to_shared(f, c, 6);
  expect_compile_error("compile: T1 keeps 6 of its 8 elements in registers (cf_spill_to_shared): it must be fewer "
                       "than all and a multiple of a 16-byte chunk (4 elements)");
}

Test(shared_spill, lowering_refuses_all_elements_kept) {
  copy_doubled();
  cf_spill_to_shared(f, c, 8);
  expect_compile_error("compile: T1 keeps 8 of its 8 elements in registers (cf_spill_to_shared): it must be fewer "
                       "than all and a multiple of a 16-byte chunk (4 elements)");
}

Test(shared_spill, lowering_refuses_a_tensor_in_shared_memory) {
  copy_doubled();
  cf_set_memory_type(f, c, CF_MEM_SHARED);
  cf_spill_to_shared(f, c, 4);
  expect_compile_error("compile: T1 is spilled to shared memory (cf_spill_to_shared) but is not a Local tensor");
}

/* The second chunk of each thread waits in T1_s at (chunk x 64 + thread) x 4, filled by
 * cp.async; the loops over the elements are unrolled (the register half stays in
 * registers); a commit and wait follow the fill, the register half's loads made to issue
 * before them (its 4 words). */
/* copy_doubled_of(dt) with k elements of c a thread in registers, checked against the
 * evaluator on the host backend; its CUDA kernel (caller frees). */
static char *spilled_kernel(cf_dtype dt, int64_t k) {
  copy_doubled_of(dt, false);
  cr_assert_eq(cf_spill_to_shared(f, c, k), CF_OK, "%s", cf_fusion_error(f));
  free(kc_check(f, nin, in, 0));
  return tu_cuda_kernel_text(f);
}

Test(shared_spill, half_of_each_thread_in_shared_memory_runs_like_the_evaluator) {
  char *src = spilled_kernel(CF_FLOAT, 4);
  static const char *const want[] = {
      "  alignas(16) float T1[4];\n",
      "  float* T1_s = reinterpret_cast<float*>(cf_smem + 0);\n",
      "  #pragma unroll\n  for (cf_index_t i0 = 0; i0 < 2; ++i0) {\n    if (((i0 * 4)) < 4) {\n",
      "      asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16;\" :: \"r\"((uint32_t)__cvta_generic_to_shared("
      "&(*cf_spill_at<4, 4, 64>(T1, T1_s, (i0 * 4))))), ",
      "  }\n  cf_loads_issued<4>(T1);\n"
      "  asm volatile(\"cp.async.commit_group;\" ::: \"memory\");\n"
      "  asm volatile(\"cp.async.wait_group %0;\" :: \"n\"(0) : \"memory\");\n",
      "(*cf_spill_at<4, 4, 64>(T1, T1_s, ((i1 * 4) + i2)))",
  };
  TU_EXPECT_CONTAINS(src, want);
  free(src);
}

/* Halves: a chunk is 8 of them, and the register part's 8 halves are 4 words to issue. */
Test(shared_spill, a_half_tensor_issues_its_register_part_by_words) {
  char *src = spilled_kernel(CF_HALF, 8);
  static const char *const want[] = {
      "  alignas(16) __half T1[8];\n",
      "  }\n  cf_loads_issued<4>(T1);\n  asm volatile(\"cp.async.commit_group;\" ::: \"memory\");\n",
      "(*cf_spill_at<8, 8, 64>(T1, T1_s, ",
  };
  TU_EXPECT_CONTAINS(src, want);
  free(src);
}

/* A tensor filled again in each iteration of a serial loop outside it keeps ordinary
 * copies (no cp.async: a later fill could land before this thread's last reads). */
Test(shared_spill, a_tensor_filled_in_a_serial_loop_is_not_filled_asynchronously) {
  copy_doubled_rows(true);
  cr_assert_eq(cf_spill_to_shared(f, c, 4), CF_OK);
  free(kc_check(f, nin, in, 0));
  char *src = tu_cuda_kernel_text(f);
  cr_expect(strstr(src, "cp.async") == NULL, "%s", src);
  cr_expect(strstr(src, "(*cf_spill_at<4, 4, 1>(T1, T1_s, ") != NULL, "%s", src);
  free(src);
}

/* A shared part that is no whole chunk (6 elements, 4 kept: 2 in shared memory) still
 * takes a whole chunk a thread, so the last thread's chunk lies inside the allocation:
 * 64 threads x 4 floats = 1024 bytes (2 x 64 elements overran it on the GPU). */
Test(shared_spill, a_partial_chunk_takes_a_whole_one) {
  cf_tv *x = kc_input(f, in, &nin, CF_FLOAT, 2, (int64_t[]){64, 6});
  c = cf_set(f, x);
  cf_tv *o = cf_add(f, c, c);
  cf_fusion_add_output(f, o);
  cf_parallelize(f, c, 0, CF_PT_TIDX);
  cf_parallelize(f, o, 0, CF_PT_TIDX);
  cf_inline_at(f, c, 1);
  cr_assert_eq(cf_spill_to_shared(f, c, 4), CF_OK);
  free(kc_check(f, nin, in, 0));
  char *src = tu_cuda_kernel_text(f);
  cr_expect(strstr(src, "float* T1_s = reinterpret_cast<float*>(cf_smem + 0);") != NULL, "%s", src);
  free(src);
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  DLManagedTensor *xs = kc_make_input(&in[0], 1), *out = NULL;
  const DLTensor *ins[1] = {&xs->dl_tensor};
  cr_assert_eq(cf_executor_run(e, 1, ins, 1, &out), CF_OK, "%s", cf_executor_error(e));
  cr_expect_eq(cf_executor_last_launch_params(e).smem, 1024);
  cf_tensor_free(xs), cf_tensor_free(out);
  cf_executor_destroy(e);
}

/* A block of symbolic size (rows on threadIdx.x over a symbolic extent; c's 8 elements a
 * thread inside the column loop): the shared part has chunks a thread, so its size is
 * unknown. */
Test(shared_spill, lowering_refuses_a_symbolic_block) {
  cf_tv *x = kc_input(f, in, &nin, CF_FLOAT, 2, NULL);
  c = cf_set(f, x);
  cf_tv *o = cf_add(f, c, c);
  cf_fusion_add_output(f, o);
  cf_split(f, c, 1, 8);
  cf_split(f, o, 1, 8);
  cf_parallelize(f, c, 0, CF_PT_TIDX);
  cf_parallelize(f, o, 0, CF_PT_TIDX);
  cf_inline_at(f, c, 2);
  cf_spill_to_shared(f, c, 4);
  expect_compile_error("compile: T1 is spilled to shared memory (cf_spill_to_shared), which needs a constant block "
                       "size; blockDim.x is symbolic");
}
