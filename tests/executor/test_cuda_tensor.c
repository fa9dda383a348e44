// labels: gpu
/* tests/executor/test_cuda_tensor.c: device tensors, copies and launches on a real GPU.
 *
 * Each test skips itself, with the reason, when cf_cuda_available() is false. On the GPU:
 * allocation and round trips host -> device -> device -> host; the handwritten copy kernel
 * over Tensor structs, with 64- and 32-bit indices and a transposed (strided) output; a
 * kernel using more than 48 KiB of dynamic shared memory; and the errors of bad launches. */
#include <criterion/criterion.h>
#include <string.h>

#include "executor/exec_cuda.h"
#include "cuda_test_kernels.h"

#define ERRLEN 4096

static void need_gpu(void) {
  const char *reason = NULL;
  if (!cf_cuda_available(&reason)) cr_skip_test("no CUDA device: %s", reason);
}

static DLTensor host_f32(float *data, int ndim, int64_t *shape, int64_t *strides) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = kDLCPU;
  t.ndim = ndim;
  t.dtype = (DLDataType){kDLFloat, 32, 1};
  t.shape = shape;
  t.strides = strides;
  return t;
}

static DLManagedTensor *device_f32(int rank, const int64_t *sizes) {
  char err[ERRLEN] = "";
  DLManagedTensor *t = NULL;
  cr_assert_eq(exec_tensor_device(CF_FLOAT, rank, sizes, &t, err, sizeof err), CF_OK, "%s", err);
  return t;
}

/* Compiles `kernel` (after tensor.cuh) for the device and loads it. */
static void load_kernel(const char *kernel, const char *name, const char *define, ExecKernel *k) {
  char *src = test_kernel_source(kernel);
  cr_assert_not_null(src);
  const char *extra[1] = {define};
  ExecNvrtcOptions o = {.arch = NULL, .kernel_name = name, .nextra = define ? 1 : 0, .extra = extra};
  ExecCubin c;
  char err[ERRLEN] = "";
  cr_assert_eq(exec_nvrtc_compile(src, "gpu_test.cu", &o, &c, err, sizeof err), CF_OK, "%s", err);
  cr_assert_str_eq(c.arch, exec_device_arch());
  cr_assert_eq(exec_kernel_load(c.data, c.lowered_name, k, err, sizeof err), CF_OK, "%s", err);
  exec_cubin_free(&c);
  free(src);
}

Test(cuda_device, reports_its_architecture) {
  need_gpu();
  const ExecDeviceInfo *d = exec_device_info();
  cr_assert_not_null(d);
  char arch[16];
  exec_arch_for_cc(d->cc_major, d->cc_minor, arch, sizeof arch);
  cr_assert_str_eq(exec_device_arch(), arch);
  cr_assert_gt(d->num_sms, 0);
  cr_assert_geq(d->max_smem_optin, d->max_smem_per_block);
  printf("device: %s, compute capability %d.%d (%s), %d SMs, %d bytes of opt-in shared "
         "memory, driver %d, NVRTC %s\n", d->name, d->cc_major, d->cc_minor, arch, d->num_sms,
         d->max_smem_optin, d->driver_version, exec_nvrtc_version());
}

Test(cuda_tensor, device_tensor_is_a_managed_dlpack_tensor) {
  need_gpu();
  int64_t sizes[3] = {2, 3, 4};
  DLManagedTensor *t = device_f32(3, sizes);
  cr_assert_eq(t->dl_tensor.device.device_type, kDLCUDA);
  cr_assert_eq(t->dl_tensor.device.device_id, exec_device_info()->ordinal);
  cr_assert_not_null(t->dl_tensor.data);
  cr_assert_eq(t->dl_tensor.ndim, 3);
  cr_assert_eq(t->dl_tensor.strides[0], 12);
  cr_assert_eq(t->dl_tensor.strides[2], 1);
  cr_assert_eq(t->dl_tensor.dtype.bits, 32);
  t->deleter(t);
}

Test(cuda_tensor, round_trip_through_two_device_tensors) {
  need_gpu();
  enum { R = 37, C = 53 };
  int64_t shape[2] = {R, C};
  float *in = malloc(sizeof(float) * R * C), *out = calloc(R * C, sizeof(float));
  for (int i = 0; i < R * C; i++) in[i] = (float)i * 0.5f - 7.0f;
  DLManagedTensor *d1 = device_f32(2, shape), *d2 = device_f32(2, shape);
  DLTensor hin = host_f32(in, 2, shape, NULL), hout = host_f32(out, 2, shape, NULL);
  char err[ERRLEN] = "";
  cr_assert_eq(exec_tensor_copy(&d1->dl_tensor, &hin, err, sizeof err), CF_OK, "%s", err);
  cr_assert_eq(exec_tensor_copy(&d2->dl_tensor, &d1->dl_tensor, err, sizeof err), CF_OK, "%s", err);
  cr_assert_eq(exec_tensor_copy(&hout, &d2->dl_tensor, err, sizeof err), CF_OK, "%s", err);
  cr_assert_arr_eq(in, out, sizeof(float) * R * C);
  d1->deleter(d1);
  d2->deleter(d2);
  free(in);
  free(out);
}

/* float4_e2m1fn keeps two elements per byte: host -> device -> host moves 4 bytes for 7
 * elements and no more (a copy of one byte per element overran both buffers, and the fp4
 * kernels read garbage on CUDA); the host-to-host half is test_tensor_arg.c's. */
Test(cuda_tensor, packed_fp4_round_trip_moves_its_bytes_only) {
  need_gpu();
  unsigned char src[6] = {0x21, 0x43, 0x65, 0x07, 0xEE, 0xEE}, back[6] = {0, 0, 0, 0, 0x55, 0x55};
  int64_t shape[1] = {7};
  DLTensor hs = host_f32(NULL, 1, shape, NULL), hb = hs;
  hs.data = src, hb.data = back;
  hs.dtype = hb.dtype = (DLDataType){17, 4, 1};
  char err[ERRLEN] = "";
  DLManagedTensor *d = NULL;
  cr_assert_eq(exec_tensor_device(CF_FLOAT4_E2M1FN, 1, shape, &d, err, sizeof err), CF_OK, "%s", err);
  cr_assert_eq(exec_tensor_copy(&d->dl_tensor, &hs, err, sizeof err), CF_OK, "%s", err);
  cr_assert_eq(exec_tensor_copy(&hb, &d->dl_tensor, err, sizeof err), CF_OK, "%s", err);
  cr_expect_arr_eq(back, ((unsigned char[]){0x21, 0x43, 0x65, 0x07, 0x55, 0x55}), 6);
  d->deleter(d);
}

Test(cuda_tensor, copy_to_a_device_the_process_lacks_is_refused) {
  need_gpu();
  int64_t shape[1] = {4};
  float h[4] = {0};
  DLManagedTensor *d = device_f32(1, shape);
  DLTensor other = d->dl_tensor, hin = host_f32(h, 1, shape, NULL);
  other.device.device_id = 63;
  char err[ERRLEN] = "", want[ERRLEN];
  cr_assert_eq(exec_tensor_copy(&other, &hin, err, sizeof err), CF_ERR_INVALID_ARGUMENT);
  const ExecDeviceInfo *info = NULL;
  int count = 0;
  while (count < 63 && exec_device_open(count, &info, NULL, 0) == CF_OK) count++;
  snprintf(want, sizeof want, "cf_tensor_copy: dst is on cuda:63: cuda:63 does not exist: this process sees %d CUDA "
           "device%s", count, count == 1 ? "" : "s");
  cr_assert_str_eq(err, want);
  d->deleter(d);
}

/* Runs the copy kernel from a contiguous [R, C] input into `out_strides`' layout of a
 * fresh device buffer of R*C floats and returns the buffer's contents on the host. */
static float *run_copy(const char *define, int index_bytes, const int64_t *out_strides,
                       const float *in, int64_t R, int64_t C) {
  ExecKernel k;
  load_kernel(k_copy_kernel, "CudaCodeGen::copy_kernel", define, &k);
  int64_t shape[2] = {R, C}, flat[1] = {R * C};
  DLManagedTensor *din = device_f32(2, shape), *dout = device_f32(1, flat);
  DLTensor hin = host_f32((float *)in, 2, shape, NULL);
  char err[ERRLEN] = "";
  cr_assert_eq(exec_tensor_copy(&din->dl_tensor, &hin, err, sizeof err), CF_OK, "%s", err);
  DLTensor out_view = dout->dl_tensor; /* the same memory seen as [R, C] with out_strides */
  out_view.ndim = 2;
  out_view.shape = shape;
  out_view.strides = (int64_t *)out_strides;
  unsigned char a0[40], a1[40];
  cr_assert_eq(exec_pack_tensor_arg(&din->dl_tensor, 2, index_bytes, a0, sizeof a0, err, sizeof err), CF_OK, "%s", err);
  cr_assert_eq(exec_pack_tensor_arg(&out_view, 2, index_bytes, a1, sizeof a1, err, sizeof err), CF_OK, "%s", err);
  void *args[2] = {a0, a1};
  int64_t grid[3] = {(R * C + 127) / 128, 1, 1}, block[3] = {128, 1, 1};
  cr_assert_eq(exec_launch(&k, grid, block, 0, args, err, sizeof err), CF_OK, "%s", err);
  cr_assert_eq(exec_synchronize(err, sizeof err), CF_OK, "%s", err);
  float *out = calloc((size_t)(R * C), sizeof(float));
  DLTensor hout = host_f32(out, 1, flat, NULL);
  cr_assert_eq(exec_tensor_copy(&hout, &dout->dl_tensor, err, sizeof err), CF_OK, "%s", err);
  din->deleter(din);
  dout->deleter(dout);
  cr_assert_eq(exec_kernel_unload(&k, err, sizeof err), CF_OK, "%s", err);
  return out;
}

static float *iota(int64_t n) {
  float *v = malloc(sizeof(float) * (size_t)n);
  for (int64_t i = 0; i < n; i++) v[i] = (float)i;
  return v;
}

Test(cuda_launch, copy_kernel_with_64_bit_indices) {
  need_gpu();
  const int64_t R = 129, C = 77, strides[2] = {C, 1};
  float *in = iota(R * C);
  float *out = run_copy(NULL, 8, strides, in, R, C);
  cr_assert_arr_eq(in, out, sizeof(float) * (size_t)(R * C));
  free(in);
  free(out);
}

Test(cuda_launch, copy_kernel_with_32_bit_indices_into_a_transposed_output) {
  need_gpu();
  const int64_t R = 65, C = 31, strides[2] = {1, R}; /* column-major output */
  float *in = iota(R * C);
  float *out = run_copy("-DCF_INDEX_TYPE=int", 4, strides, in, R, C);
  for (int64_t r = 0; r < R; r++)
    for (int64_t c = 0; c < C; c++)
      cr_assert_eq(out[c * R + r], in[r * C + c], "element (%lld, %lld)", (long long)r, (long long)c);
  free(in);
  free(out);
}

Test(cuda_launch, dynamic_shared_memory_above_48_kib) {
  need_gpu();
  ExecKernel k;
  load_kernel(k_smem_reverse_kernel, "CudaCodeGen::smem_reverse", NULL, &k);
  const int64_t n = 24 * 1024; /* 96 KiB of floats */
  int64_t shape[1] = {n};
  float *in = iota(n), *out = calloc((size_t)n, sizeof(float));
  DLManagedTensor *din = device_f32(1, shape), *dout = device_f32(1, shape);
  DLTensor hin = host_f32(in, 1, shape, NULL), hout = host_f32(out, 1, shape, NULL);
  char err[ERRLEN] = "";
  cr_assert_eq(exec_tensor_copy(&din->dl_tensor, &hin, err, sizeof err), CF_OK, "%s", err);
  unsigned char a0[24], a1[24];
  cr_assert_eq(exec_pack_tensor_arg(&din->dl_tensor, 1, 8, a0, sizeof a0, err, sizeof err), CF_OK, "%s", err);
  cr_assert_eq(exec_pack_tensor_arg(&dout->dl_tensor, 1, 8, a1, sizeof a1, err, sizeof err), CF_OK, "%s", err);
  void *args[2] = {a0, a1};
  int64_t grid[3] = {1, 1, 1}, block[3] = {1024, 1, 1};
  cr_assert_eq(exec_launch(&k, grid, block, n * 4, args, err, sizeof err), CF_OK, "%s", err);
  cr_assert_eq(exec_synchronize(err, sizeof err), CF_OK, "%s", err);
  cr_assert_eq(exec_tensor_copy(&hout, &dout->dl_tensor, err, sizeof err), CF_OK, "%s", err);
  for (int64_t i = 0; i < n; i++) cr_assert_eq(out[i], in[n - 1 - i], "element %lld", (long long)i);
  din->deleter(din);
  dout->deleter(dout);
  exec_kernel_unload(&k, NULL, 0);
  free(in);
  free(out);
}

Test(cuda_launch, bad_launches_are_refused_with_the_limit) {
  need_gpu();
  ExecKernel k;
  load_kernel(k_copy_kernel, "CudaCodeGen::copy_kernel", NULL, &k);
  char err[ERRLEN] = "";
  void *args[2] = {NULL, NULL};
  int64_t grid[3] = {1, 1, 1}, big_block[3] = {32, 32, 2}, block[3] = {32, 1, 1};
  cr_assert_eq(exec_launch(&k, grid, big_block, 0, args, err, sizeof err), CF_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(err, "launch: 32x32x2 = 2048 threads per block exceed 1024");
  int64_t big_grid[3] = {1, 70000, 1};
  cr_assert_eq(exec_launch(&k, big_grid, block, 0, args, err, sizeof err), CF_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(err, "launch: gridDim.y = 70000 is outside [1, 65535]");
  cr_assert_eq(exec_launch(&k, grid, block, 1 << 30, args, err, sizeof err), CF_ERR_INVALID_ARGUMENT);
  cr_assert(strstr(err, "bytes of dynamic shared memory exceed the limit") != NULL, "%s", err);
  exec_kernel_unload(&k, NULL, 0);
}

/* Asks for a kernel name the module does not have, on purpose: compute-sanitizer's
 * memcheck reports that call ("Program hit CUDA_ERROR_NOT_FOUND ... on cuModuleGetFunction"),
 * its one report on the GPU tests (checked on an H100, 2026-11-23); nothing is wrong. */
Test(cuda_launch, unknown_kernel_name_names_the_cuda_error) {
  need_gpu();
  char *src = test_kernel_source(k_copy_kernel);
  ExecNvrtcOptions o = {.kernel_name = "CudaCodeGen::copy_kernel"};
  ExecCubin c;
  char err[ERRLEN] = "";
  cr_assert_eq(exec_nvrtc_compile(src, "gpu_test.cu", &o, &c, err, sizeof err), CF_OK, "%s", err);
  ExecKernel k;
  cr_assert_eq(exec_kernel_load(c.data, "no_such_kernel", &k, err, sizeof err), CF_ERR_CUDA);
  cr_assert_str_eq(err, "cuModuleGetFunction(\"no_such_kernel\") failed: CUDA_ERROR_NOT_FOUND "
                        "(named symbol not found)");
  cr_assert_null(k.module);
  exec_cubin_free(&c);
  free(src);
}
#include "gpu_main.h"
