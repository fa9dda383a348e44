/* The printed CUDA kernel as a specification: exact text for small schedules (what a
 * user reads with cf_fusion_print_kernel), and the CFUSER_DUMP dump of the kernel IR. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <string.h>

#include "codegen/codegen.h"
#include "lower/lower.h"
#include "test_util.h"

static char *kernel_of(cf_fusion *f) { return tu_capture_fusion(cf_fusion_print_kernel, f); }

/* Where needle first appears in text, or -1. */
static long offset_of(const char *text, const char *needle) {
  const char *p = strstr(text, needle);
  return p ? (long)(p - text) : -1;
}

Test(print_kernel, pointwise_with_broadcast) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_tv *b = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){8});
  cf_fusion_add_input(f, a);
  cf_fusion_add_input(f, b);
  cf_tv *out = cf_add(f, a, cf_broadcast(f, b, 2, (bool[]){true, false}));
  cf_fusion_add_output(f, out);
  cf_parallelize(f, out, 0, CF_PT_BIDX);
  cf_parallelize(f, out, 1, CF_PT_TIDX);
  cf_parallelize_all_like(f, out, 0, NULL);
  cf_inline_most(f);
  char *k = kernel_of(f);
  cr_expect_str_eq(k, "extern \"C\" __global__ void __launch_bounds__(8) cfuser_kernel(Tensor<float, 2, 2> T0, "
                      "Tensor<float, 1, 1> T1, Tensor<float, 2, 2> T3) {\n"
                      "  alignas(16) float T2[1];\n"
                      "  T2[0] = T1.data[threadIdx.x];\n"
                      "  T3.data[((blockIdx.x * 8) + threadIdx.x)] = (T0.data[((blockIdx.x * 8) + threadIdx.x)] + "
                      "T2[0]);\n"
                      "}\n");
  free(k);
  cf_fusion_destroy(f);
}

/* A kernel whose blocks must be resident together (the executor sets min_blocks_per_sm
 * for a cooperative grid: ceil(blocks / SMs)) promises it in its launch bounds, so the
 * compiler keeps to the registers that let that many blocks share an SM. */
Test(print_kernel, launch_bounds_promise_the_blocks_per_sm_of_a_cooperative_grid) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_fusion_add_input(f, a);
  cf_tv *out = cf_neg(f, a);
  cf_fusion_add_output(f, out);
  cf_parallelize(f, out, 0, CF_PT_BIDX);
  cf_parallelize(f, out, 1, CF_PT_TIDX);
  KKernel *k = NULL;
  char *msg = NULL;
  cr_assert_eq(lower_fusion(f, NULL, &k, &msg), CF_OK, "%s", msg ? msg : "");
  const char *head = "extern \"C\" __global__ void __launch_bounds__(8, 3) cfuser_kernel(";
  k->min_blocks_per_sm = 3;
  char *src = cg_cuda_source(k, NULL);
  cr_expect(strstr(src, head) != NULL, "no `%s` in:\n%s", head, src);
  free(src);
  k->min_blocks_per_sm = 0;
  src = cg_cuda_source(k, NULL);
  cr_expect(strstr(src, "__launch_bounds__(8) cfuser_kernel(") != NULL, "one bound only without it:\n%s", src);
  free(src);
  kkernel_free(k);
  cf_fusion_destroy(f);
}

Test(print_kernel, shared_memory_staging_with_a_sync_and_a_serial_loop) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *t[5];
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){4, 32}, t);
  cf_set_memory_type(f, t[2], CF_MEM_SHARED);
  cf_parallelize(f, t[1], 1, CF_PT_TIDX);
  cf_parallelize(f, t[2], 1, CF_PT_TIDX);
  cf_parallelize(f, t[3], 0, CF_PT_TIDX);
  cf_parallelize(f, t[4], 0, CF_PT_TIDX);
  char *k = kernel_of(f);
  cr_expect(strstr(k, "float* T2 = reinterpret_cast<float*>(cf_smem + 0);") != NULL, "%s", k);
  cr_expect(strstr(k, "__syncthreads();") != NULL, "a transposed read of shared memory needs a sync:\n%s", k);
  cr_expect(strstr(k, "for (cf_index_t i") != NULL, "%s", k);
  free(k);
  cf_fusion_destroy(f);
}

Test(print_kernel, dump_of_the_kernel_ir_after_a_pass, .init = cr_redirect_stderr) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *t[5];
  tu_set_chain(f, CF_FLOAT, 1, (int64_t[]){8}, t);
  cf_parallelize(f, t[4], 0, CF_PT_TIDX);
  cf_parallelize_all_like(f, t[4], 0, NULL);
  cf_inline_most(f);
  setenv("CFUSER_DUMP", "predicate", 1);
  char *k = kernel_of(f);
  unsetenv("CFUSER_DUMP");
  fflush(stderr);
  cr_expect_stderr_eq_str("=== kernel IR after predicate ===\n"
                          "alloc T1 Local[1]\n"
                          "alloc T2 Local[1]\n"
                          "alloc T3 Local[1]\n"
                          "FOR - in 0..8 (threadIdx.x)\n"
                          "  T1[0] = Set(T0[threadIdx.x])\n"
                          "  T2[0] = Set(T1[0])\n"
                          "  T3[0] = Set(T2[0])\n"
                          "  T4[threadIdx.x] = Set(T3[0])\n");
  free(k);
  cf_fusion_destroy(f);
}

/* In f's kernel the write (marked by `w`) comes before a __syncthreads that comes before
 * the read (`r`), and f (inputs of constant sizes, at most 4) runs on the host backend
 * with its race detector silent. */
static void expect_barrier_between(cf_fusion *f, const char *w, const char *r) {
  char *k = kernel_of(f);
  long wo = offset_of(k, w), sync = offset_of(k, "__syncthreads();"), ro = offset_of(k, r);
  cr_expect(wo >= 0 && wo < sync && sync < ro, "the read `%s` must follow a sync after the write `%s`:\n%s", r, w, k);
  free(k);
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  int n = cf_fusion_num_inputs(f), no = cf_fusion_num_outputs(f);
  cr_assert(n <= 4 && no <= 4);
  DLManagedTensor *x[4] = {NULL}, *outs[4] = {NULL};
  const DLTensor *ins[4];
  for (int i = 0; i < n; i++) {
    const cf_tv *t = cf_fusion_input(f, i);
    int64_t sizes[CF_MAX_RANK];
    for (int d = 0; d < cf_tv_logical_rank(t); d++) sizes[d] = cf_id_extent(cf_tv_domain_axis(t, CF_DOMAIN_LOGICAL, d));
    x[i] = cf_tensor_host(CF_FLOAT, cf_tv_logical_rank(t), sizes);
    ins[i] = &x[i]->dl_tensor;
  }
  cr_expect_eq(cf_executor_run(e, n, ins, no, outs), CF_OK, "no race: %s", cf_executor_error(e));
  for (int i = 0; i < 4; i++) cf_tensor_free(x[i]), cf_tensor_free(outs[i]);
  cf_executor_destroy(e);
}

/* Found by the fuzzer with the host backend's race detector: a shared tensor that spans
 * no thread dimension is written by thread 0 alone; a local consumer that spans none
 * either runs in every thread, so it must wait for that write. */
Test(print_kernel, a_write_by_thread_zero_alone_is_synchronized) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){8});
  cf_tv *b = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){32});
  cf_fusion_add_input(f, a);
  cf_fusion_add_input(f, b);
  cf_tv *t1 = cf_set(f, a);
  cf_tv *t2 = cf_neg(f, t1);
  cf_fusion_add_output(f, cf_set(f, t2));
  cf_tv *o2 = cf_set(f, b);
  cf_fusion_add_output(f, o2);
  cf_set_memory_type(f, t1, CF_MEM_SHARED);
  cf_parallelize(f, o2, 0, CF_PT_TIDX); /* launches 32 threads */
  expect_barrier_between(f, "T2[i", "(-T2[");
  cf_fusion_destroy(f);
}

/* Found by the random-schedule fuzzer (seed 46600500) with the race detector: a shared
 * tensor written by thread 0 alone (its axis serial, its write guarded) and read by a sum
 * over threadIdx.x: the sum's store is thread 0's too, but every thread reads and folds
 * its own element, so the read waits for the write. */
Test(print_kernel, a_block_reduction_reading_what_thread_zero_wrote_is_synchronized) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_fusion_add_input(f, a);
  cf_tv *t1 = cf_neg(f, a), *t2 = cf_sum(f, t1, 1, (int[]){1});
  cf_fusion_add_output(f, t2);
  cf_set_memory_type(f, t1, CF_MEM_SHARED);
  cf_parallelize(f, t2, 1, CF_PT_TIDX); /* t1 stays serial: thread 0 writes all of it */
  expect_barrier_between(f, "T1[(", " + T1[(");
  cf_fusion_destroy(f);
}

/* Shared buffers of symbolic size: each offset after the first is a named variable
 * defined from the one before (spelled out, the n-th would repeat all n - 1 before it:
 * DAG seed 28308 of the parallel-reduction fuzzer printed a kernel gcc took minutes and
 * gigabytes on). Three blocks of [i0] on threadIdx.x, staged through shared memory. */
Test(print_kernel, symbolic_shared_offsets_are_named_variables) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = cf_tensor_symbolic(f, CF_FLOAT, 1);
  cf_fusion_add_input(f, a);
  cf_tv *s1 = cf_neg(f, a), *s2 = cf_exp(f, s1), *s3 = cf_neg(f, s2), *out = cf_set(f, s3);
  cf_fusion_add_output(f, out);
  cf_tv *all[] = {s1, s2, s3};
  for (int i = 0; i < 3; i++) cf_set_memory_type(f, all[i], CF_MEM_SHARED);
  cf_split(f, out, 0, 32);
  cf_propagate_transforms(f, out);
  cf_parallelize(f, out, 1, CF_PT_TIDX);
  cf_parallelize_all_like(f, out, 0, NULL);
  char *k = kernel_of(f);
  cr_expect(strstr(k, "float* T1 = reinterpret_cast<float*>(cf_smem + 0);\n") != NULL, "%s", k);
  cr_expect(strstr(k, "  const cf_index_t cf_off_T2 = (ceilDiv(((32 * ceilDiv(T0.logical_size[0], 32)) * 4), 16) * "
                      "16);\n  float* T2 = reinterpret_cast<float*>(cf_smem + cf_off_T2);\n") != NULL, "%s", k);
  cr_expect(strstr(k, "  const cf_index_t cf_off_T3 = (ceilDiv((cf_off_T2 + ((32 * ceilDiv(T0.logical_size[0], 32)) "
                      "* 4)), 16) * 16);\n") != NULL, "%s", k);
  free(k);
  cf_fusion_destroy(f);
}
