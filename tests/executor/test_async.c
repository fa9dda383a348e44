// labels: gpu
/* tests/executor/test_async.c: asynchronous runs on a real GPU (each test skips itself,
 * with the reason, without one): a loop of runs on the default stream without
 * synchronizing in between, outputs allocated by the executor in stream order, gives the
 * right results after one cf_executor_synchronize; tensors on two devices, and on a device
 * the process does not have, are refused with messages naming the tensors; a kernel with
 * a workspace (a grid reduction's buffers and semaphores) runs on a second device, its
 * workspace made there, and so does a kernel with TMA loads, its tensor maps encoded there
 * (where the machine has two; two Hopper devices for TMA). */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "executor/exec_cuda.h"
#include "test_util.h"

static void need_gpu(void) {
  const char *reason = NULL;
  if (!cf_cuda_available(&reason)) cr_skip_test("no CUDA device: %s", reason);
}

enum { N = 1 << 16 };

/* out = a * b + c over [N], 128 threads per block. */
static cf_executor *compile_fma(void) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *in[3];
  for (int i = 0; i < 3; i++) {
    in[i] = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){N});
    cf_fusion_add_input(f, in[i]);
  }
  cf_tv *out = cf_add(f, cf_mul(f, in[0], in[1]), in[2]);
  cf_fusion_add_output(f, out);
  cf_split(f, out, 0, 128);
  cf_propagate_transforms(f, out);
  cf_parallelize(f, out, 0, CF_PT_BIDX);
  cf_parallelize(f, out, 1, CF_PT_TIDX);
  cf_parallelize_all_like(f, out, 0, NULL);
  cf_inline_most(f);
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_CUDA});
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  cf_fusion_destroy(f);
  return e;
}

/* Device copies of host tensors filled with i * (k + 1) mod 7. */
static DLManagedTensor *device_input(int k) {
  DLManagedTensor *h = cf_tensor_host(CF_FLOAT, 1, (int64_t[]){N}), *d = cf_tensor_device(CF_FLOAT, 1, (int64_t[]){N});
  for (int i = 0; i < N; i++) ((float *)h->dl_tensor.data)[i] = (float)((i * (k + 1)) % 7);
  cr_assert_eq(cf_tensor_copy(&d->dl_tensor, &h->dl_tensor), CF_OK);
  cf_tensor_free(h);
  return d;
}

Test(async, a_loop_of_async_runs_is_right_after_one_synchronize) {
  need_gpu();
  cf_executor *e = compile_fma();
  DLManagedTensor *in[3] = {device_input(0), device_input(1), device_input(2)}, *outs[50] = {0};
  const DLTensor *ins[3] = {&in[0]->dl_tensor, &in[1]->dl_tensor, &in[2]->dl_tensor};
  for (int r = 0; r < 50; r++) cr_assert_eq(cf_executor_run_async(e, NULL, 3, ins, 1, &outs[r]), CF_OK, "%s", cf_executor_error(e));
  cr_assert_eq(cf_executor_synchronize(e), CF_OK, "%s", cf_executor_error(e));
  DLManagedTensor *h = cf_tensor_host(CF_FLOAT, 1, (int64_t[]){N});
  for (int r = 0; r < 50; r += 7) {
    cr_assert_eq(cf_tensor_copy(&h->dl_tensor, &outs[r]->dl_tensor), CF_OK);
    for (int i = 0; i < N; i += 97)
      cr_assert_eq(cf_tensor_get(&h->dl_tensor, i), (double)((i % 7) * ((2 * i) % 7) + (3 * i) % 7), "run %d, element %d", r, i);
  }
  for (int r = 0; r < 50; r++) cf_tensor_free(outs[r]);
  for (int i = 0; i < 3; i++) cf_tensor_free(in[i]);
  cf_tensor_free(h);
  cf_executor_destroy(e);
}

Test(async, tensors_on_two_devices_are_refused) {
  need_gpu();
  cf_executor *e = compile_fma();
  DLManagedTensor *in[3] = {device_input(0), device_input(1), device_input(2)}, *out = NULL;
  DLTensor moved = in[2]->dl_tensor;
  moved.device.device_id = 1;
  const DLTensor *ins[3] = {&in[0]->dl_tensor, &in[1]->dl_tensor, &moved};
  cr_expect_eq(cf_executor_run_async(e, NULL, 3, ins, 1, &out), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_executor_error(e), "run: input 2 (T2) is on cuda:1, but input 0 (T0) is on cuda:0; the tensors "
                                         "of a run must all be on one device");
  cr_expect_null(out);
  for (int i = 0; i < 3; i++) cf_tensor_free(in[i]);
  cf_executor_destroy(e);
}

Test(async, a_device_the_process_lacks_is_refused) {
  need_gpu();
  cf_executor *e = compile_fma();
  DLManagedTensor *in[3] = {device_input(0), device_input(1), device_input(2)}, *out = NULL;
  DLTensor t[3];
  const DLTensor *ins[3];
  for (int i = 0; i < 3; i++) {
    t[i] = in[i]->dl_tensor;
    t[i].device.device_id = 63;
    ins[i] = &t[i];
  }
  cr_expect_eq(cf_executor_run_async(e, NULL, 3, ins, 1, &out), CF_ERR_INVALID_ARGUMENT);
  char want[256];
  const ExecDeviceInfo *info = NULL;
  int count = 0;
  while (count < 64 && exec_device_open(count, &info, NULL, 0) == CF_OK) count++;
  snprintf(want, sizeof want, "run: the tensors are on cuda:63: cuda:63 does not exist: this process sees %d CUDA "
           "device%s", count, count == 1 ? "" : "s");
  cr_expect_str_eq(cf_executor_error(e), want);
  for (int i = 0; i < 3; i++) cf_tensor_free(in[i]);
  cf_executor_destroy(e);
}

enum { GR_ROWS = 64, GR_COLS = 4096 };

/* -sum(a, 1) of a[GR_ROWS, GR_COLS], the sum over blockIdx.x read in the same kernel: a
 * grid all-reduce, a cooperative launch with workspace buffers and semaphores. */
static cf_executor *compile_grid_reduction(void) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){GR_ROWS, GR_COLS});
  cf_fusion_add_input(f, a);
  cf_tv *s = cf_sum(f, a, 1, (int[]){1});
  cf_fusion_add_output(f, cf_neg(f, s));
  cf_split(f, s, 1, 128);
  cf_parallelize(f, s, 1, CF_PT_BIDX);
  cf_parallelize(f, s, 2, CF_PT_TIDX);
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_CUDA});
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  cf_fusion_destroy(f);
  return e;
}

/* Runs e on a[r][c] = (r + c) % 5 - 2 on cuda:dev and checks -sum over each row (the
 * copies to and from cuda:dev through cf_tensor_copy). */
static void run_grid_reduction_on(cf_executor *e, int dev) {
  char err[512] = "";
  int64_t sizes[2] = {GR_ROWS, GR_COLS};
  DLManagedTensor *h = cf_tensor_host(CF_FLOAT, 2, sizes), *got = cf_tensor_host(CF_FLOAT, 1, sizes), *a = NULL,
                  *out = NULL;
  float *x = h->dl_tensor.data;
  for (int i = 0; i < GR_ROWS * GR_COLS; i++) x[i] = (float)((i / GR_COLS + i % GR_COLS) % 5 - 2);
  cr_assert_eq(exec_tensor_device_on(dev, CF_FLOAT, 2, sizes, &a, err, sizeof err), CF_OK, "%s", err);
  cr_assert_eq(cf_tensor_copy(&a->dl_tensor, &h->dl_tensor), CF_OK);
  const DLTensor *ins[1] = {&a->dl_tensor};
  cr_assert_eq(cf_executor_run_async(e, NULL, 1, ins, 1, &out), CF_OK, "%s", cf_executor_error(e));
  cr_assert_eq(cf_executor_synchronize(e), CF_OK, "%s", cf_executor_error(e));
  cr_assert_eq(out->dl_tensor.device.device_id, dev);
  cr_assert_eq(cf_tensor_copy(&got->dl_tensor, &out->dl_tensor), CF_OK);
  for (int r = 0; r < GR_ROWS; r++) {
    double want = 0;
    for (int c = 0; c < GR_COLS; c++) want += x[r * GR_COLS + c];
    cr_assert_eq(cf_tensor_get(&got->dl_tensor, r), -want, "cuda:%d, row %d: %g, not %g", dev, r,
                 cf_tensor_get(&got->dl_tensor, r), -want);
  }
  cf_tensor_free(out);
  cf_tensor_free(a);
  cf_tensor_free(got);
  cf_tensor_free(h);
}

/* The workspace follows the run's device: cuda:1 twice (made there, then reused), then
 * cuda:0 (made anew there). It was made on the process's device and the launch failed
 * (CUDA_ERROR_INVALID_HANDLE: the kernel of cuda:1 launched in cuda:0's context). */
Test(async, a_kernel_with_a_workspace_runs_on_a_second_device) {
  need_gpu();
  const ExecDeviceInfo *info = NULL;
  if (exec_device_open(1, &info, NULL, 0) != CF_OK) cr_skip_test("one CUDA device: a second device is needed");
  cf_executor *e = compile_grid_reduction();
  run_grid_reduction_on(e, 1);
  run_grid_reduction_on(e, 1);
  run_grid_reduction_on(e, 0);
  cf_executor_destroy(e);
}

enum { TM_M = 2048, TM_N = 2048, TM_K = 128 };

/* Element j of operand i (a small integer: every product and sum is exact), and its
 * bfloat16 bits (the top half of the float's). */
static float tm_value(int i, int64_t j) { return (float)((j * (i + 3)) % 7 - 3); }
static uint16_t bf16_of(float v) {
  uint32_t bits;
  memcpy(&bits, &v, 4);
  return (uint16_t)(bits >> 16);
}

/* a[TM_M, TM_K] @ b[TM_K, TM_N] in bfloat16 (small integers: exact) on cuda:dev through
 * define and run, copied back to the host (the caller frees it). */
static DLManagedTensor *tma_matmul_on(cf_fusion_cache *c, int dev) {
  char err[512] = "";
  int64_t sizes[2][2] = {{TM_M, TM_K}, {TM_K, TM_N}};
  DLManagedTensor *d[2], *out = NULL;
  const DLTensor *ins[2];
  for (int i = 0; i < 2; i++) {
    DLManagedTensor *h = cf_tensor_host(CF_BFLOAT16, 2, sizes[i]);
    uint16_t *x = h->dl_tensor.data;
    for (int64_t j = 0; j < sizes[i][0] * sizes[i][1]; j++) x[j] = bf16_of(tm_value(i, j));
    cr_assert_eq(exec_tensor_device_on(dev, CF_BFLOAT16, 2, sizes[i], &d[i], err, sizeof err), CF_OK, "%s", err);
    cr_assert_eq(cf_tensor_copy(&d[i]->dl_tensor, &h->dl_tensor), CF_OK);
    cf_tensor_free(h);
    ins[i] = &d[i]->dl_tensor;
  }
  cr_assert_eq(cf_fusion_execute(c, 2, ins, 1, &out), CF_OK, "cuda:%d: %s", dev, cf_fusion_cache_error(c));
  cr_assert_eq(out->dl_tensor.device.device_id, dev);
  cr_assert(strstr(cf_fusion_cache_last_params(c, 0), "fill=tma,tma"), "cuda:%d: %s", dev, cf_fusion_cache_last_params(c, 0));
  DLManagedTensor *got = cf_tensor_host(CF_BFLOAT16, 2, (int64_t[]){TM_M, TM_N});
  cr_assert_eq(cf_tensor_copy(&got->dl_tensor, &out->dl_tensor), CF_OK);
  cf_tensor_free(out), cf_tensor_free(d[0]), cf_tensor_free(d[1]);
  return got;
}

/* The run's tensor maps are encoded in its device's context, which stays current until the
 * launch (run_cuda.c does not make it current again): a TMA kernel on cuda:1, then on
 * cuda:0, gives the same product on both. */
Test(async, a_kernel_with_tma_loads_runs_on_a_second_device) {
  need_gpu();
  const ExecDeviceInfo *info = NULL, *first = exec_device_info();
  if (exec_device_open(1, &info, NULL, 0) != CF_OK) cr_skip_test("one CUDA device: a second device is needed");
  if (first->cc_major != 9 || first->cc_minor != 0 || info->cc_major != 9 || info->cc_minor != 0)
    cr_skip_test("TMA loads need two devices of compute capability 9.0");
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = cf_tensor_concrete(f, CF_BFLOAT16, 2, (int64_t[]){TM_M, TM_K});
  cf_tv *b = cf_tensor_concrete(f, CF_BFLOAT16, 2, (int64_t[]){TM_K, TM_N});
  cf_fusion_add_input(f, a), cf_fusion_add_input(f, b);
  cf_fusion_add_output(f, cf_matmul(f, a, b));
  cf_fusion_cache *c = cf_fusion_cache_create(f, &(cf_executor_options){.backend = CF_BACKEND_CUDA});
  DLManagedTensor *on1 = tma_matmul_on(c, 1), *on0 = tma_matmul_on(c, 0);
  cr_expect(cf_tensor_equal(&on1->dl_tensor, &on0->dl_tensor), "the product on cuda:1 differs from cuda:0's");
  for (int64_t r = 0; r < TM_M; r += 331)
    for (int64_t q = 0; q < TM_N; q += 257) {
      double want = 0, got = cf_tensor_get(&on1->dl_tensor, r * TM_N + q);
      for (int64_t k = 0; k < TM_K; k++) want += tm_value(0, r * TM_K + k) * tm_value(1, k * TM_N + q);
      cr_expect(fabs(got - want) <= fabs(want) / 128, "cuda:1 [%lld, %lld]: %g, not %g", (long long)r, (long long)q, got,
                want);
    }
  cf_tensor_free(on1), cf_tensor_free(on0);
  cf_fusion_cache_destroy(c);
  cf_fusion_destroy(f);
}

/* cf_tensor_copy between two devices is refused, naming both (where the machine has two). */
Test(async, a_copy_between_two_devices_is_refused) {
  need_gpu();
  const ExecDeviceInfo *info = NULL;
  if (exec_device_open(1, &info, NULL, 0) != CF_OK) cr_skip_test("one CUDA device: a second device is needed");
  char err[512] = "";
  DLManagedTensor *a = NULL, *b = NULL;
  cr_assert_eq(exec_tensor_device_on(0, CF_FLOAT, 1, (int64_t[]){4}, &a, err, sizeof err), CF_OK, "%s", err);
  cr_assert_eq(exec_tensor_device_on(1, CF_FLOAT, 1, (int64_t[]){4}, &b, err, sizeof err), CF_OK, "%s", err);
  cr_expect_eq(exec_tensor_copy(&b->dl_tensor, &a->dl_tensor, err, sizeof err), CF_ERR_UNSUPPORTED);
  cr_expect_str_eq(err, "cf_tensor_copy: dst is on cuda:1 and src on cuda:0; a copy between two devices goes through "
                        "a host tensor");
  cf_tensor_free(a);
  cf_tensor_free(b);
}

/* A kernel that faults (its output points at an address nothing owns) is reported by the
 * next synchronize, naming it, and the executor's next run says the error may come from
 * that launch. compute-sanitizer memcheck reports this test's invalid global writes: they
 * are the point of it (run it with --filter excluding "*fault*"). */
Test(async, a_fault_is_reported_later_naming_the_kernel) {
  need_gpu();
  cf_executor *e = compile_fma();
  DLManagedTensor *in[3] = {device_input(0), device_input(1), device_input(2)};
  const DLTensor *ins[3] = {&in[0]->dl_tensor, &in[1]->dl_tensor, &in[2]->dl_tensor};
  DLManagedTensor bad = {in[0]->dl_tensor, NULL, NULL}, *outs[1] = {&bad};
  bad.dl_tensor.data = (void *)(uintptr_t)0x10000; /* device memory of nobody */
  cr_assert_eq(cf_executor_run_async(e, NULL, 3, ins, 1, outs), CF_OK, "%s", cf_executor_error(e));
  cr_expect_eq(cf_executor_synchronize(e), CF_ERR_CUDA);
  const char *want = "synchronize: kernel cfuser_kernel failed on cuda:0: cuStreamSynchronize failed: "
                     "CUDA_ERROR_ILLEGAL_ADDRESS";
  cr_expect(!strncmp(cf_executor_error(e), want, strlen(want)), "got: %s", cf_executor_error(e));
  cr_expect_neq(cf_executor_run_async(e, NULL, 3, ins, 1, outs), CF_OK);
  cr_expect(strstr(cf_executor_error(e), "(the error may come from this executor's earlier asynchronous launch of "
                                         "kernel cfuser_kernel on cuda:0)"), "got: %s", cf_executor_error(e));
  for (int i = 0; i < 3; i++) cf_tensor_free(in[i]);
  cf_executor_destroy(e);
}
