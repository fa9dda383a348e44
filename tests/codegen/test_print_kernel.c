/* The printed CUDA kernel as a specification: exact text for small schedules (what a
 * user reads with cf_fusion_print_kernel), and the CFUSER_DUMP dump of the kernel IR. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <string.h>

#include "test_util.h"

static char *kernel_of(cf_fusion *f) { return tu_capture_fusion(cf_fusion_print_kernel, f); }

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
