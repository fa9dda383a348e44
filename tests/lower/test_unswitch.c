/* The unswitch pass (lower/unswitch.c) as printed kernels, exact: an Unswitch or Unroll
 * nest printed twice under its hoisted bounds, a nest with barriers voting on its thread
 * bounds, nests left alone (nothing to hoist, a tile that never fits), the
 * pointwise scheduler's unswitched tile, the IR dump and the host dialect; a block vote
 * that sends a whole block to the predicated copy; and results
 * equal to the reference evaluator on the host backend (and compiled by NVRTC for sm_90a)
 * for divisible and non-divisible splits, symbolic sizes, merges, vector accesses, serial,
 * block and grid reductions under an unswitched loop. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <string.h>

#include "kernels/kernel_check.h"

static cf_fusion *f;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(unswitch, .init = setup, .fini = teardown);

static char *kernel(void) {
  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  return tu_capture_fusion(cf_fusion_print_kernel, f);
}

static void expect_kernel(const char *want) {
  char *k = kernel();
  cr_expect_str_eq(k, want);
  free(k);
}

static cf_tv *input(int rank, const int64_t *sizes) {
  cf_tv *t = sizes ? cf_tensor_concrete(f, CF_FLOAT, rank, sizes) : cf_tensor_symbolic(f, CF_FLOAT, rank);
  cf_fusion_add_input(f, t);
  return t;
}

static void check(int nin, const KcInput *in) { free(kc_check(f, nin, in, 1e-5)); }

/* tv2 = (tv0 + 1) + 1 over a symbolic [n], split by 32, tv1 inlined, the inner axis
 * unswitched (nvFuser's FusionLoopUnswitch). */
static void loop_unswitch(void) {
  cf_tv *t0 = input(1, NULL);
  cf_tv *t1 = cf_add_scalar(f, t0, 1.0), *t2 = cf_add_scalar(f, t1, 1.0);
  cf_fusion_add_output(f, t2);
  cf_split(f, t2, 0, 32);
  cf_compute_at(f, t1, t2, -1);
  cf_parallelize(f, t2, 1, CF_PT_UNSWITCH);
}

Test(unswitch, an_unswitched_nest_runs_unpredicated_when_its_last_index_is_in_bounds) {
  loop_unswitch();
  expect_kernel("extern \"C\" __global__ void __launch_bounds__(1) cfuser_kernel(Tensor<float, 1, 1> T0, Tensor<float, 1, 1> T2) {\n"
                "  alignas(16) float T1[1];\n"
                "  for (cf_index_t i0 = 0; i0 < ceilDiv(T0.logical_size[0], 32); ++i0) {\n"
                "    if ((((i0 * 32) + 31) < T0.logical_size[0])) {\n"
                "      for (cf_index_t i1 = 0; i1 < 32; ++i1) {\n"
                "        T1[0] = (T0.data[(((i0 * 32) + i1) * T0.alloc_stride[0])] + (float)(1));\n"
                "        T2.data[(((i0 * 32) + i1) * T2.alloc_stride[0])] = (T1[0] + (float)(1));\n"
                "      }\n"
                "    } else {\n"
                "      for (cf_index_t i1 = 0; i1 < 32; ++i1) {\n"
                "        if ((((i0 * 32) + i1) < T0.logical_size[0])) {\n"
                "          T1[0] = (T0.data[(((i0 * 32) + i1) * T0.alloc_stride[0])] + (float)(1));\n"
                "        }\n"
                "        if ((((i0 * 32) + i1) < T0.logical_size[0])) {\n"
                "          T2.data[(((i0 * 32) + i1) * T2.alloc_stride[0])] = (T1[0] + (float)(1));\n"
                "        }\n"
                "      }\n"
                "    }\n"
                "  }\n"
                "}\n");
}

Test(unswitch, an_unrolled_loop_is_unrolled_in_both_copies) {
  cf_tv *t0 = input(1, NULL), *t1 = cf_add_scalar(f, t0, 1.0);
  cf_fusion_add_output(f, t1);
  cf_split(f, t1, 0, 128);
  cf_split(f, t1, 0, 4);
  cf_parallelize(f, t1, 0, CF_PT_BIDX);
  cf_parallelize(f, t1, 1, CF_PT_UNROLL);
  cf_parallelize(f, t1, 2, CF_PT_TIDX);
  expect_kernel("extern \"C\" __global__ void __launch_bounds__(128) cfuser_kernel(Tensor<float, 1, 1> T0, Tensor<float, 1, 1> T1) {\n"
                "  if ((((((blockIdx.x * 4) + 3) * 128) + threadIdx.x) < T0.logical_size[0])) {\n"
                "    #pragma unroll\n"
                "    for (cf_index_t i0 = 0; i0 < 4; ++i0) {\n"
                "      T1.data[(((((blockIdx.x * 4) + i0) * 128) + threadIdx.x) * T1.alloc_stride[0])] = (T0.data[(((((blockIdx.x * 4) + i0) * 128) + threadIdx.x) * T0.alloc_stride[0])] + (float)(1));\n"
                "    }\n"
                "  } else {\n"
                "    #pragma unroll\n"
                "    for (cf_index_t i0 = 0; i0 < 4; ++i0) {\n"
                "      if ((((((blockIdx.x * 4) + i0) * 128) + threadIdx.x) < T0.logical_size[0])) {\n"
                "        T1.data[(((((blockIdx.x * 4) + i0) * 128) + threadIdx.x) * T1.alloc_stride[0])] = (T0.data[(((((blockIdx.x * 4) + i0) * 128) + threadIdx.x) * T0.alloc_stride[0])] + (float)(1));\n"
                "      }\n"
                "    }\n"
                "  }\n"
                "}\n");
  check(1, (KcInput[]){F32(1000)});
}

/* nvFuser's FusionUnswitchPredicate: tv1 in shared memory, written and read with threadIdx
 * x and y swapped, so the nest holds two barriers: the bound on the unswitched rows, which
 * no thread index enters, is hoisted as it is, the thread bounds through a block vote, so
 * every thread of the block takes the same branch. */
static void smem_transposed(void) {
  cf_tv *t0 = input(2, NULL);
  cf_tv *t1 = cf_add_scalar(f, t0, 1.0), *t2 = cf_add_scalar(f, t1, 1.0);
  cf_fusion_add_output(f, t2);
  cf_split(f, t2, 0, 4);
  cf_compute_at(f, t0, t2, 2);
  cf_split(f, t2, -1, 8);
  cf_split(f, t1, -1, 8);
  cf_parallelize(f, t2, 1, CF_PT_UNSWITCH);
  cf_parallelize(f, t2, -1, CF_PT_TIDX);
  cf_parallelize(f, t2, -2, CF_PT_TIDY);
  cf_parallelize(f, t1, -1, CF_PT_TIDY);
  cf_parallelize(f, t1, -2, CF_PT_TIDX);
  cf_set_memory_type(f, t1, CF_MEM_SHARED);
}

Test(unswitch, a_nest_with_barriers_puts_its_thread_bounds_to_a_block_vote) {
  smem_transposed();
  expect_kernel("extern \"C\" __global__ void cfuser_kernel(Tensor<float, 2, 2> T0, Tensor<float, 2, 2> T2) {\n"
                "  alignas(16) extern __shared__ char cf_smem[];\n"
                "  float* T1 = reinterpret_cast<float*>(cf_smem + 0);\n"
                "  for (cf_index_t i0 = 0; i0 < ceilDiv(T0.logical_size[0], 4); ++i0) {\n"
                "    if (((((i0 * 4) + 3) < T0.logical_size[0]) && __syncthreads_and(((((((threadIdx.x * 8) + threadIdx.y) < T0.logical_size[1]) && (threadIdx.y < 8)) && (((threadIdx.y * 8) + threadIdx.x) < T0.logical_size[1])) && (threadIdx.x < 8))))) {\n"
                "      for (cf_index_t i1 = 0; i1 < 4; ++i1) {\n"
                "        T1[((threadIdx.x * 8) + threadIdx.y)] = (T0.data[((((i0 * 4) + i1) * T0.alloc_stride[0]) + (((threadIdx.x * 8) + threadIdx.y) * T0.alloc_stride[1]))] + (float)(1));\n"
                "        __syncthreads();\n"
                "        T2.data[((((i0 * 4) + i1) * T2.alloc_stride[0]) + (((threadIdx.y * 8) + threadIdx.x) * T2.alloc_stride[1]))] = (T1[((threadIdx.y * 8) + threadIdx.x)] + (float)(1));\n"
                "        __syncthreads();\n"
                "      }\n"
                "    } else {\n"
                "      for (cf_index_t i1 = 0; i1 < 4; ++i1) {\n"
                "        if ((((threadIdx.y < 8) && (((i0 * 4) + i1) < T0.logical_size[0])) && (((threadIdx.x * 8) + threadIdx.y) < T0.logical_size[1]))) {\n"
                "          T1[((threadIdx.x * 8) + threadIdx.y)] = (T0.data[((((i0 * 4) + i1) * T0.alloc_stride[0]) + (((threadIdx.x * 8) + threadIdx.y) * T0.alloc_stride[1]))] + (float)(1));\n"
                "        }\n"
                "        __syncthreads();\n"
                "        if ((((threadIdx.x < 8) && (((i0 * 4) + i1) < T0.logical_size[0])) && (((threadIdx.y * 8) + threadIdx.x) < T0.logical_size[1]))) {\n"
                "          T2.data[((((i0 * 4) + i1) * T2.alloc_stride[0]) + (((threadIdx.y * 8) + threadIdx.x) * T2.alloc_stride[1]))] = (T1[((threadIdx.y * 8) + threadIdx.x)] + (float)(1));\n"
                "        }\n"
                "        __syncthreads();\n"
                "      }\n"
                "    }\n"
                "  }\n"
                "}\n");
  check(1, (KcInput[]){F32(10, 20)});
}

Test(unswitch, a_divisible_nest_has_nothing_to_hoist_and_stays_as_it_was) {
  cf_tv *t0 = input(1, (int64_t[]){64});
  cf_tv *t1 = cf_add_scalar(f, t0, 1.0), *t2 = cf_add_scalar(f, t1, 1.0);
  cf_fusion_add_output(f, t2);
  cf_split(f, t2, 0, 32);
  cf_compute_at(f, t1, t2, -1);
  cf_parallelize(f, t2, 0, CF_PT_UNSWITCH);
  char *k = kernel();
  cr_expect(strstr(k, "else") == NULL && strstr(k, "if (") == NULL, "%s", k);
  free(k);
  check(1, (KcInput[]){F32(64)});
}

/* [US{4}, 4] over 15 elements: the whole loop is one tile that never fits, so the hoisted
 * bound is constant false and only the predicated nest is printed. */
Test(unswitch, a_tile_that_never_fits_keeps_only_the_predicated_nest) {
  cf_tv *t0 = input(1, (int64_t[]){15}), *t1 = cf_add_scalar(f, t0, 1.0);
  cf_fusion_add_output(f, t1);
  cf_split(f, t1, 0, 4);
  cf_parallelize(f, t1, 0, CF_PT_UNSWITCH);
  expect_kernel("extern \"C\" __global__ void __launch_bounds__(1) cfuser_kernel(Tensor<float, 1, 1> T0, Tensor<float, 1, 1> T1) {\n"
                "  for (cf_index_t i0 = 0; i0 < 4; ++i0) {\n"
                "    for (cf_index_t i1 = 0; i1 < 4; ++i1) {\n"
                "      if ((((i0 * 4) + i1) < 15)) {\n"
                "        T1.data[((i0 * 4) + i1)] = (T0.data[((i0 * 4) + i1)] + (float)(1));\n"
                "      }\n"
                "    }\n"
                "  }\n"
                "}\n");
  check(1, (KcInput[]){F32(15)});
}

/* nvFuser's FusionSizeOneLoop2: an unswitched loop of one iteration around a serial loop
 * of four: the else branch stays (the inner loop runs more than once). */
Test(unswitch, a_size_one_unswitch_around_a_serial_loop_keeps_its_else_branch) {
  cf_tv *t0 = input(1, (int64_t[]){15}), *t1 = cf_add_scalar(f, t0, 1.0);
  cf_fusion_add_output(f, t1);
  cf_split(f, t1, -1, 4);
  cf_split(f, t1, -2, 1);
  cf_parallelize(f, t1, -2, CF_PT_UNSWITCH);
  expect_kernel("extern \"C\" __global__ void __launch_bounds__(1) cfuser_kernel(Tensor<float, 1, 1> T0, Tensor<float, 1, 1> T1) {\n"
                "  for (cf_index_t i0 = 0; i0 < 4; ++i0) {\n"
                "    if ((i0 < 3)) {\n"
                "      {\n"
                "        const cf_index_t i1 = 0;\n"
                "        for (cf_index_t i2 = 0; i2 < 4; ++i2) {\n"
                "          T1.data[((i0 * 4) + i2)] = (T0.data[((i0 * 4) + i2)] + (float)(1));\n"
                "        }\n"
                "      }\n"
                "    } else {\n"
                "      {\n"
                "        const cf_index_t i1 = 0;\n"
                "        for (cf_index_t i2 = 0; i2 < 4; ++i2) {\n"
                "          if ((((i0 * 4) + i2) < 15)) {\n"
                "            T1.data[((i0 * 4) + i2)] = (T0.data[((i0 * 4) + i2)] + (float)(1));\n"
                "          }\n"
                "        }\n"
                "      }\n"
                "    }\n"
                "  }\n"
                "}\n");
  check(1, (KcInput[]){F32(15)});
}

Test(unswitch, the_pointwise_scheduler_unswitches_its_tile) {
  cf_tv *a = input(2, (int64_t[]){33, 1000}), *b = input(2, (int64_t[]){33, 1000});
  cf_fusion_add_output(f, cf_relu(f, cf_add(f, cf_mul(f, a, b), a)));
  cr_assert_eq(cf_schedule_pointwise(f), CF_OK, "%s", cf_fusion_error(f));
  expect_kernel("extern \"C\" __global__ void __launch_bounds__(128) cfuser_kernel(Tensor<float, 2, 2> T0, Tensor<float, 2, 2> T1, Tensor<float, 2, 2> T4) {\n"
                "  alignas(16) float T5[4];\n"
                "  alignas(16) float T6[4];\n"
                "  alignas(16) float T2[1];\n"
                "  alignas(16) float T3[1];\n"
                "  alignas(16) float T7[4];\n"
                "  if ((((blockIdx.x * 128) + threadIdx.x) < 8250)) {\n"
                "    {\n"
                "      const cf_index_t i0 = 0;\n"
                "      *reinterpret_cast<Array<float, 4>*>(&T5[0]) = *reinterpret_cast<const Array<float, 4>*>(&T0.data[(((blockIdx.x * 128) + threadIdx.x) * 4)]);\n"
                "      *reinterpret_cast<Array<float, 4>*>(&T6[0]) = *reinterpret_cast<const Array<float, 4>*>(&T1.data[(((blockIdx.x * 128) + threadIdx.x) * 4)]);\n"
                "      for (cf_index_t i1 = 0; i1 < 4; ++i1) {\n"
                "        T2[0] = (T5[i1] * T6[i1]);\n"
                "        T3[0] = (T2[0] + T5[i1]);\n"
                "        T7[i1] = relu(T3[0]);\n"
                "      }\n"
                "      *reinterpret_cast<Array<float, 4>*>(&T4.data[(((blockIdx.x * 128) + threadIdx.x) * 4)]) = *reinterpret_cast<const Array<float, 4>*>(&T7[0]);\n"
                "    }\n"
                "  } else {\n"
                "    {\n"
                "      const cf_index_t i0 = 0;\n"
                "      if ((((blockIdx.x * 128) + threadIdx.x) < 8250)) {\n"
                "        *reinterpret_cast<Array<float, 4>*>(&T5[0]) = *reinterpret_cast<const Array<float, 4>*>(&T0.data[(((blockIdx.x * 128) + threadIdx.x) * 4)]);\n"
                "      }\n"
                "      if ((((blockIdx.x * 128) + threadIdx.x) < 8250)) {\n"
                "        *reinterpret_cast<Array<float, 4>*>(&T6[0]) = *reinterpret_cast<const Array<float, 4>*>(&T1.data[(((blockIdx.x * 128) + threadIdx.x) * 4)]);\n"
                "      }\n"
                "      for (cf_index_t i1 = 0; i1 < 4; ++i1) {\n"
                "        if ((((blockIdx.x * 128) + threadIdx.x) < 8250)) {\n"
                "          T2[0] = (T5[i1] * T6[i1]);\n"
                "        }\n"
                "        if ((((blockIdx.x * 128) + threadIdx.x) < 8250)) {\n"
                "          T3[0] = (T2[0] + T5[i1]);\n"
                "        }\n"
                "        if ((((blockIdx.x * 128) + threadIdx.x) < 8250)) {\n"
                "          T7[i1] = relu(T3[0]);\n"
                "        }\n"
                "      }\n"
                "      if ((((blockIdx.x * 128) + threadIdx.x) < 8250)) {\n"
                "        *reinterpret_cast<Array<float, 4>*>(&T4.data[(((blockIdx.x * 128) + threadIdx.x) * 4)]) = *reinterpret_cast<const Array<float, 4>*>(&T7[0]);\n"
                "      }\n"
                "    }\n"
                "  }\n"
                "}\n");
  check(2, (KcInput[]){F32(33, 1000), F32(33, 1000)});
}

Test(unswitch, the_ir_dump_shows_the_hoisted_if_and_its_else, .init = cr_redirect_stderr) {
  cf_tv *t0 = input(1, (int64_t[]){10}), *t1 = cf_add_scalar(f, t0, 1.0);
  cf_fusion_add_output(f, t1);
  cf_split(f, t1, 0, 4);
  cf_split(f, t1, 0, 1);
  cf_parallelize(f, t1, 1, CF_PT_UNSWITCH);
  setenv("CFUSER_DUMP", "unswitch", 1);
  char *k = kernel();
  unsetenv("CFUSER_DUMP");
  fflush(stderr);
  cr_expect_stderr_eq_str("=== kernel IR after unswitch ===\n"
                          "FOR i0 in 0..3 (S)\n"
                          "  IF (((i0 * 4) + 3) < 10)\n"
                          "    FOR i1 in 0..1 (US)\n"
                          "      FOR i2 in 0..4 (S)\n"
                          "        T1[(((i0 + i1) * 4) + i2)] = add(T0[(((i0 + i1) * 4) + i2)], 1)\n"
                          "  ELSE\n"
                          "    FOR i1 in 0..1 (US)\n"
                          "      FOR i2 in 0..4 (S)\n"
                          "        IF ((((i0 + i1) * 4) + i2) < 10)\n"
                          "          T1[(((i0 + i1) * 4) + i2)] = add(T0[(((i0 + i1) * 4) + i2)], 1)\n");
  free(k);
}

Test(unswitch, the_host_dialect_prints_the_same_two_copies) {
  loop_unswitch();
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  const char *src = cf_executor_source(e);
  const char *body = strstr(src, "void cfuser_kernel(");
  cr_assert(body != NULL);
  cr_expect(strstr(body, "    if ((((i0 * 32) + 31) < T0.logical_size[0])) {\n"
                         "      for (cf_index_t i1 = 0; i1 < 32; ++i1) {\n"
                         "        T1[0] = (T0.data[(((i0 * 32) + i1) * T0.alloc_stride[0])] + (float)(1));\n") != NULL,
            "%s", body);
  cr_expect(strstr(body, "    } else {\n      for (cf_index_t i1 = 0; i1 < 32; ++i1) {\n"
                         "        if ((((i0 * 32) + i1) < T0.logical_size[0])) {\n") != NULL, "%s", body);
  cf_executor_destroy(e);
}

/* ---- results: equal to the evaluator on every tile, full and partial ------------------ */

Test(unswitch, symbolic_sizes_with_full_and_partial_tiles) {
  loop_unswitch();
  check(1, (KcInput[]){F32(1000)}); /* 31 full tiles of 32 and one of 8 */
}

Test(unswitch, symbolic_sizes_smaller_than_one_tile) {
  loop_unswitch();
  check(1, (KcInput[]){F32(5)});
}

/* A merge of symbolic axes split by 96 on threadIdx.x inside an unswitched loop of 3: the
 * inner axis' index is a modulo of the merged one, bounded by its extent - 1. */
Test(unswitch, a_merge_of_symbolic_axes_split_non_divisibly) {
  cf_tv *t0 = input(2, NULL), *t1 = input(2, NULL);
  cf_tv *t2 = cf_mul(f, cf_add_scalar(f, t0, 1.0), t1);
  cf_fusion_add_output(f, t2);
  cf_merge(f, t2, 0);
  cf_split(f, t2, 0, 96);
  cf_split(f, t2, 0, 3);
  cf_propagate_transforms(f, t2);
  cf_parallelize(f, t2, 0, CF_PT_BIDX);
  cf_parallelize(f, t2, 1, CF_PT_UNSWITCH);
  cf_parallelize(f, t2, 2, CF_PT_TIDX);
  cf_parallelize_all_like(f, t2, 0, NULL);
  cf_inline_most(f);
  check(2, (KcInput[]){F32(7, 131), F32(7, 131)});
}

/* [blockIdx.x, US{2}, threadIdx.x{32}, V{4}]: vector loads and stores under the hoisted
 * bound; 1000 floats leave a partial tile. */
Test(unswitch, vector_accesses_under_an_unswitched_loop) {
  cf_tv *t0 = input(1, (int64_t[]){1000});
  cf_tv *t1 = cf_set(f, t0), *t2 = cf_neg(f, t1), *t3 = cf_set(f, t2);
  cf_fusion_add_output(f, t3);
  cf_split(f, t3, 0, 4);
  cf_split(f, t3, 0, 32);
  cf_split(f, t3, 0, 2);
  cf_propagate_transforms(f, t3);
  cf_parallelize(f, t3, 0, CF_PT_BIDX);
  cf_parallelize(f, t3, 1, CF_PT_UNSWITCH);
  cf_parallelize(f, t3, 2, CF_PT_TIDX);
  cf_parallelize_all_like(f, t3, 0, NULL);
  cf_parallelize(f, t1, -1, CF_PT_VECTORIZE);
  cf_parallelize(f, t3, -1, CF_PT_VECTORIZE);
  cf_inline_most(f);
  char *src = kc_check(f, 1, (KcInput[]){F32(1000)}, 0);
  cr_expect(strstr(src, "} else {") != NULL, "%s", src);
  free(src);
}

/* A serial sum whose unswitched outer loop has a partial last tile. */
Test(unswitch, a_serial_reduction_nest) {
  cf_tv *t0 = input(2, NULL), *t1 = cf_sum(f, cf_add_scalar(f, t0, 1.0), 1, (int[]){1});
  cf_fusion_add_output(f, t1);
  cf_split(f, t1, 1, 8);
  cf_split(f, t1, 0, 4);
  cf_parallelize(f, t1, 1, CF_PT_UNSWITCH);
  cf_compute_at(f, t0, t1, -1);
  char *k = kernel();
  cr_expect(strstr(k, "} else {") != NULL, "%s", k);
  free(k);
  check(1, (KcInput[]){F32(10, 21)});
}

/* Row sums with the row on threadIdx.x (a block all-reduce inside the unswitched loop of
 * two rows per block): the nest holds barriers. */
Test(unswitch, a_block_reduction_nest) {
  cf_tv *t0 = input(2, NULL), *t1 = cf_sum(f, t0, 1, (int[]){1});
  cf_fusion_add_output(f, t1);
  cf_split(f, t1, 0, 2);
  cf_parallelize(f, t1, 0, CF_PT_BIDX);
  cf_parallelize(f, t1, 1, CF_PT_UNSWITCH);
  cf_parallelize(f, t1, 2, CF_PT_TIDX);
  check(1, (KcInput[]){F32(7, 50)});
}

/* Column sums over blockIdx.x (a grid reduction) for columns in an unswitched loop. */
Test(unswitch, a_grid_reduction_nest) {
  cf_tv *t0 = input(2, NULL), *t1 = cf_sum(f, t0, 1, (int[]){0});
  cf_fusion_add_output(f, t1);
  cf_reorder(f, t1, 1, (int[]){0, 1}); /* [iC, rR] */
  cf_split(f, t1, 0, 3);                /* [iC/3, 3, rR] */
  cf_parallelize(f, t1, 1, CF_PT_UNSWITCH);
  cf_parallelize(f, t1, 2, CF_PT_BIDX);
  char *k = kernel();
  cr_expect(strstr(k, "the group's last block") != NULL && strstr(k, "} else {") != NULL, "%s", k);
  free(k);
  check(1, (KcInput[]){F32(6, 8)});
}

/* nvFuser's FusionUnswitchPredicate's schedule on sizes with a partial row tile. */
Test(unswitch, a_nest_with_barriers_on_a_partial_tile) {
  smem_transposed();
  check(1, (KcInput[]){F32(7, 13)});
}

/* Row sums of a [5, 24] on threadIdx.x while another output launches 32 threads: threads
 * 24..31 fail the row bound, so the block vote sends every block to the predicated copy
 * (were it to run the fast one, they would add elements of the next row). */
Test(unswitch, a_block_vote_sends_the_whole_block_to_the_predicated_copy) {
  cf_tv *t0 = input(2, (int64_t[]){5, 24}), *t1 = cf_sum(f, t0, 1, (int[]){1});
  cf_fusion_add_output(f, t1);
  cf_tv *w = input(1, (int64_t[]){32}), *w1 = cf_set(f, w);
  cf_fusion_add_output(f, w1);
  cf_split(f, t1, 0, 2);
  cf_parallelize(f, t1, 0, CF_PT_BIDX);
  cf_parallelize(f, t1, 1, CF_PT_UNSWITCH);
  cf_parallelize(f, t1, 2, CF_PT_TIDX);
  cf_parallelize(f, w1, 0, CF_PT_TIDX);
  char *k = kernel();
  cr_expect(strstr(k, "__syncthreads_and((threadIdx.x < 24))") != NULL, "%s", k);
  free(k);
  check(2, (KcInput[]){F32(5, 24), F32(32)});
}
