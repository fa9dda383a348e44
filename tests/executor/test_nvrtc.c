/* tests/executor/test_nvrtc.c: NVRTC compiles for named architectures, no GPU needed.
 *
 * Handwritten kernels over the runtime's Tensor struct compile to cubins for sm_90a and
 * sm_100a; broken programs and bad architectures give CF_ERR_COMPILE or
 * CF_ERR_INVALID_ARGUMENT with NVRTC's log; the device struct's layout is checked against
 * the host packer's by static_asserts compiled with NVRTC. */
#include <criterion/criterion.h>
#include <string.h>

#include "executor/exec_cuda.h"
#include "cuda_test_kernels.h"

#define ERRLEN 4096

static void skip_without_nvrtc(void) {
  const char *reason = NULL;
  if (!exec_nvrtc_available(&reason)) cr_skip_test("NVRTC unavailable: %s", reason);
}

/* Compiles source for arch; returns the status, leaves the result in *out. */
static cf_status compile(const char *src, const char *arch, const char *kernel, ExecCubin *out,
                         char *err) {
  ExecNvrtcOptions o = {.arch = arch, .kernel_name = kernel};
  return exec_nvrtc_compile(src, "test_kernel.cu", &o, out, err, ERRLEN);
}

static void assert_cubin(const ExecCubin *c, const char *arch) {
  cr_assert_not_null(c->data);
  cr_assert_gt(c->size, 64);
  cr_assert(memcmp(c->data, "\177ELF", 4) == 0, "a cubin is an ELF file");
  cr_assert_str_eq(c->arch, arch);
}

static void compile_copy_kernel_for(const char *arch) {
  skip_without_nvrtc();
  char *src = test_kernel_source(k_copy_kernel);
  cr_assert_not_null(src, "tensor.cuh is embedded");
  char err[ERRLEN] = "";
  ExecCubin c;
  cf_status st = compile(src, arch, "CudaCodeGen::copy_kernel", &c, err);
  cr_assert_eq(st, CF_OK, "%s", err);
  assert_cubin(&c, arch);
  cr_assert_not_null(c.lowered_name);
  /* Itanium mangling of CudaCodeGen::copy_kernel(Tensor<float, 2, 2, long long>, ...). */
  cr_assert(strstr(c.lowered_name, "11CudaCodeGen11copy_kernel") != NULL, "%s", c.lowered_name);
  cr_assert(strstr(c.lowered_name, "6TensorIfLi2ELi2ExE") != NULL, "%s", c.lowered_name);
  exec_cubin_free(&c);
  free(src);
}

Test(nvrtc, copy_kernel_compiles_for_sm_90a) { compile_copy_kernel_for("sm_90a"); }
Test(nvrtc, copy_kernel_compiles_for_sm_100a) { compile_copy_kernel_for("sm_100a"); }

Test(nvrtc, copy_kernel_compiles_with_32_bit_indices) {
  skip_without_nvrtc();
  char *src = test_kernel_source(k_copy_kernel);
  const char *extra[] = {"-DCF_INDEX_TYPE=int"};
  ExecNvrtcOptions o = {.arch = "sm_90a", .kernel_name = "CudaCodeGen::copy_kernel",
                        .lineinfo = true, .nextra = 1, .extra = extra};
  char err[ERRLEN] = "";
  ExecCubin c;
  cr_assert_eq(exec_nvrtc_compile(src, "copy32.cu", &o, &c, err, sizeof err), CF_OK, "%s", err);
  assert_cubin(&c, "sm_90a");
  /* The index type is part of the signature: Tensor<float, 2, 2, int>. */
  cr_assert(strstr(c.lowered_name, "6TensorIfLi2ELi2EiE") != NULL, "%s", c.lowered_name);
  exec_cubin_free(&c);
  free(src);
}

Test(nvrtc, extern_c_kernel_keeps_its_name) {
  skip_without_nvrtc();
  const char *src = "extern \"C\" __global__ void plain_kernel(float *x) { x[threadIdx.x] = 1.0f; }\n";
  char err[ERRLEN] = "";
  ExecCubin c;
  cr_assert_eq(compile(src, "sm_90a", "plain_kernel", &c, err), CF_OK, "%s", err);
  cr_assert_str_eq(c.lowered_name, "plain_kernel");
  exec_cubin_free(&c);
}

Test(nvrtc, half_and_bfloat16_headers_resolve) {
  skip_without_nvrtc();
  const char *src =
      "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
      "extern \"C\" __global__ void k(__half *h, __nv_bfloat16 *b) {\n"
      "  h[threadIdx.x] = __float2half(1.5f);\n  b[threadIdx.x] = __float2bfloat16(2.5f);\n}\n";
  char err[ERRLEN] = "";
  ExecCubin c;
  cr_assert_eq(compile(src, "sm_90a", "k", &c, err), CF_OK, "%s", err);
  assert_cubin(&c, "sm_90a");
  exec_cubin_free(&c);
}

/* sm_90a's wgmma and sm_100a's tcgen05 assemble only for their "a" targets. */
Test(nvrtc, architecture_specific_instructions_need_their_target) {
  skip_without_nvrtc();
  const char *wgmma = "extern \"C\" __global__ void k() { asm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\"); }\n";
  const char *tcgen05 = "extern \"C\" __global__ void k() { asm volatile(\"tcgen05.fence::before_thread_sync;\" ::: \"memory\"); }\n";
  char err[ERRLEN] = "";
  ExecCubin c;
  cr_assert_eq(compile(wgmma, "sm_90a", "k", &c, err), CF_OK, "%s", err);
  exec_cubin_free(&c);
  cr_assert_eq(compile(tcgen05, "sm_100a", "k", &c, err), CF_OK, "%s", err);
  exec_cubin_free(&c);
  cr_assert_eq(compile(wgmma, "sm_90", "k", &c, err), CF_ERR_COMPILE, "%s", err);
  cr_assert_null(c.data);
  cr_assert(strstr(c.log, "wgmma") != NULL, "%s", c.log);
  exec_cubin_free(&c);
}

Test(nvrtc, broken_kernel_reports_the_error_line) {
  skip_without_nvrtc();
  const char *src =
      "extern \"C\" __global__ void broken(float *x) {\n"
      "  x[0] = 1.0f;\n"
      "  x[1] = undefined_thing;\n"
      "}\n";
  char err[ERRLEN] = "";
  ExecCubin c;
  ExecNvrtcOptions o = {.arch = "sm_90a", .kernel_name = "broken"};
  cf_status st = exec_nvrtc_compile(src, "broken.cu", &o, &c, err, sizeof err);
  cr_assert_eq(st, CF_ERR_COMPILE, "%s", err);
  cr_assert_null(c.data);
  cr_assert_eq(c.size, 0);
  cr_assert_not_null(c.log);
  cr_assert(strstr(c.log, "broken.cu(3): error") != NULL, "log: %s", c.log);
  cr_assert(strstr(c.log, "undefined_thing") != NULL, "log: %s", c.log);
  cr_assert(strstr(err, "could not compile broken.cu for sm_90a") != NULL, "%s", err);
  cr_assert(strstr(err, "broken.cu(3): error") != NULL, "%s", err);
  exec_cubin_free(&c);
  cr_assert_null(c.log);
}

Test(nvrtc, malformed_architecture_is_an_invalid_argument) {
  skip_without_nvrtc();
  const char *bad[] = {"sm_9", "compute_90a", "90a", "sm_90b", "sm_90aa", ""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char err[ERRLEN] = "";
    ExecCubin c;
    cr_assert_eq(compile("__global__ void k() {}", bad[i], NULL, &c, err),
                 CF_ERR_INVALID_ARGUMENT, "%s", bad[i]);
    cr_assert(strstr(err, "invalid architecture") != NULL, "%s", err);
    exec_cubin_free(&c);
  }
}

Test(nvrtc, architecture_nvrtc_does_not_know_is_an_invalid_argument) {
  skip_without_nvrtc();
  char err[ERRLEN] = "";
  ExecCubin c;
  cr_assert_eq(compile("__global__ void k() {}", "sm_11", NULL, &c, err),
               CF_ERR_INVALID_ARGUMENT, "%s", err);
  cr_assert(strstr(err, "sm_11") != NULL, "%s", err);
  exec_cubin_free(&c);
}

Test(nvrtc, architecture_of_a_compute_capability) {
  char buf[16];
  exec_arch_for_cc(9, 0, buf, sizeof buf);
  cr_assert_str_eq(buf, "sm_90a");
  exec_arch_for_cc(10, 0, buf, sizeof buf);
  cr_assert_str_eq(buf, "sm_100a");
  exec_arch_for_cc(12, 0, buf, sizeof buf);
  cr_assert_str_eq(buf, "sm_120a");
  exec_arch_for_cc(8, 6, buf, sizeof buf);
  cr_assert_str_eq(buf, "sm_86");
}

Test(nvrtc, version_is_reported) {
  skip_without_nvrtc();
  const char *v = exec_nvrtc_version();
  cr_assert_not_null(v);
  cr_assert(strchr(v, '.') != NULL, "%s", v);
}

/* The device struct's size and alignment, as NVRTC lays it out, equal the host packer's,
 * for both index widths, ranks 0 to 4. (NVRTC has no constant offsetof; the field offsets
 * are checked on the GPU, where a transposed copy reads every size and stride.) */
Test(nvrtc, tensor_struct_layout_matches_the_host_packer) {
  skip_without_nvrtc();
  static const int cases[][3] = {{0, 0, 8}, {0, 0, 4}, {1, 1, 8}, {1, 1, 4}, {2, 2, 8},
                                 {2, 2, 4}, {3, 2, 4}, {3, 3, 4}, {4, 4, 8}, {4, 1, 4}};
  char asserts[8192];
  size_t k = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int n = cases[i][0], a = cases[i][1], ib = cases[i][2];
    const char *it = ib == 8 ? "long long" : "int";
    k += (size_t)snprintf(asserts + k, sizeof asserts - k,
                          "typedef Tensor<float, %d, %d, %s> L%zu;\n"
                          "static_assert(sizeof(L%zu) == %zu, \"size %zu\");\n"
                          "static_assert(alignof(L%zu) == 8, \"align %zu\");\n",
                          n, a, it, i, i, exec_tensor_arg_size(n, a, ib), i, i, i);
  }
  cr_assert_lt(k, sizeof asserts);
  char *src = test_kernel_source(asserts);
  char err[ERRLEN] = "";
  ExecCubin c;
  cr_assert_eq(compile(src, "sm_90a", NULL, &c, err), CF_OK, "%s", err);
  exec_cubin_free(&c);
  free(src);
}

#include "nvrtc_main.h"
