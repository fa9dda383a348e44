/*
> [!NOTE]
> This file is both C and Markdown: `tutorial/reduction.c` is a Criterion test suite, and
> `tutorial/reduction.md` is rendered from it by `tools/render_tutorial.py`. Every test
> shown here runs in cfuser's test suite (`ctest -R tutorial_reduction`).

# Reductions in cfuser

This tutorial ports nvFuser's `Tutorial.Reduction` and `Tutorial.ReductionRFactor`
(`tests/cpp/test_tutorial.cpp`) to cfuser's C API. `sum(tv0, {1})` is
`cf_sum(f, tv0, 1, (int[]){1})`, `tv1->axis(1)->parallelize(ParallelType::TIDx)` is
`cf_parallelize(f, tv1, 1, CF_PT_TIDX)` and `tv1->rFactor({0})` is
`cf_rfactor(f, tv1, 1, (int[]){0})`.

Every schedule is compiled by NVRTC for `sm_90a` (no GPU needed) where cfuser was built
with the CUDA toolkit; without it, that step is skipped and said so. It runs on the GPU
when there is one, and on cfuser's host backend, which runs the same kernel on the CPU,
when there is not. Either way the output is compared with cfuser's reference evaluator.
The printed math and kernels are asserted exactly.

Reduction axes on `threadIdx` are block reductions, those on `blockIdx` grid
reductions; both kinds appear below, with the code cfuser generates for them.
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cfuser.h>

/*
The helpers are the plumbing the C++ tests get from their fixtures. `printed` captures
what a printing call writes:
*/
static char *printed(cf_status (*print)(cf_fusion *, FILE *), cf_fusion *f) {
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  cr_assert_eq(print(f, m), CF_OK, "%s", cf_fusion_error(f));
  fclose(m);
  return buf;
}

static void expect_printed(cf_status (*print)(cf_fusion *, FILE *), cf_fusion *f, const char *want) {
  char *got = printed(print, f);
  cr_expect_str_eq(got, want);
  free(got);
}

/*
`run` is `KernelExecutor::compile` + `run` + `testValidate`: it compiles with NVRTC for
`sm_90a` (where cfuser has NVRTC: otherwise it says once that it skips that step), runs
on the GPU if there is one and on the host backend otherwise, and compares the output
with the reference evaluator. It returns the run's status, so that a launch the hardware
refuses can be checked (nvFuser's `ASSERT_ANY_THROW`).
*/
static bool have_nvrtc(void) {
  const char *why = NULL;
  bool ok = cf_nvrtc_available(&why);
  static bool said;
  if (!ok && !said) /* a note, not a warning: Criterion fails a run that logged a warning */
    printf("skipped: the NVRTC compiles for sm_90a (NVRTC unavailable: %s); the kernels run on the host backend\n", why);
  said = true;
  return ok;
}

static cf_status run(cf_fusion *f, int rank, const int64_t *sizes, char *error, size_t errlen) {
  cf_executor *e = NULL;
  bool gpu = false;
  if (have_nvrtc()) {
    e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_CUDA, .arch = "sm_90a"});
    cr_assert_eq(cf_executor_compile(e, f), CF_OK, "NVRTC: %s", cf_executor_error(e));
    gpu = !cf_executor_compile_only(e);
  }
  if (!gpu) {
    cf_executor_destroy(e);
    e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
    cr_assert_eq(cf_executor_compile(e, f), CF_OK, "host: %s", cf_executor_error(e));
  }
  DLManagedTensor *t0 = cf_tensor_host(CF_FLOAT, rank, sizes), *dev = NULL, *out = NULL, *ref = NULL;
  cf_tensor_fill_random(&t0->dl_tensor, 2024);
  const DLTensor *in = &t0->dl_tensor;
  if (gpu) {
    dev = cf_tensor_device(CF_FLOAT, rank, sizes);
    cf_tensor_copy(&dev->dl_tensor, in);
    in = &dev->dl_tensor;
  }
  cf_status s = cf_executor_run(e, 1, &in, 1, &out);
  if (error) snprintf(error, errlen, "%s", cf_executor_error(e));
  if (s == CF_OK) {
    const DLTensor *host_in = &t0->dl_tensor;
    cr_assert_eq(cf_fusion_evaluate(f, 1, &host_in, &ref), CF_OK, "%s", cf_fusion_error(f));
    DLManagedTensor *got = cf_tensor_host(CF_FLOAT, out->dl_tensor.ndim, out->dl_tensor.shape);
    cf_tensor_copy(&got->dl_tensor, &out->dl_tensor);
    char msg[256] = "";
    cr_expect(cf_tensor_allclose(&got->dl_tensor, &ref->dl_tensor, 1e-4, 1e-4, msg, sizeof msg),
              "the kernel disagrees with the evaluator: %s", msg);
    cf_tensor_free(got);
  }
  cf_tensor_free(t0), cf_tensor_free(dev), cf_tensor_free(out), cf_tensor_free(ref);
  cf_executor_destroy(e);
  return s;
}

static void expect_runs(cf_fusion *f, int rank, const int64_t *sizes) {
  char err[512];
  cr_expect_eq(run(f, rank, sizes, err, sizeof err), CF_OK, "%s", err);
}

/*
## Tutorial.Reduction

A 2-D symbolic tensor, reduced along its second axis. Nothing is parallelized yet, so a
single thread reduces everything, row after row:
*/
Test(Tutorial, Reduction) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *tv0 = cf_tensor_symbolic(f, CF_FLOAT, 2);
  cf_fusion_add_input(f, tv0);
  cf_tv *tv1 = cf_sum(f, tv0, 1, (int[]){1});
  cf_fusion_add_output(f, tv1);
  expect_printed(cf_fusion_print_math, f,
                 "Inputs:\n"
                 "  T0_g_float[iS0{i0}, iS1{i1}]\n"
                 "Outputs:\n"
                 "  T1_g_float[iS2{i0}, rS3{i1}]\n"
                 "\n"
                 "%kernel_math {\n"
                 "T1_g_float[iS2{i0}, rS3{i1}]\n"
                 "   = sum( T0_g_float[iS0{i0}, iS1{i1}] );\n"
                 "} // %kernel_math\n");
  expect_printed(cf_fusion_print_kernel, f,
                 "extern \"C\" __global__ void __launch_bounds__(1) cfuser_kernel(Tensor<float, 2, 2> T0, Tensor<float, 1, 1> T1) {\n"
                 "  for (cf_index_t i0 = 0; i0 < T0.logical_size[0]; ++i0) {\n"
                 "    T1.data[(i0 * T1.alloc_stride[0])] = 0;\n"
                 "    for (cf_index_t i1 = 0; i1 < T0.logical_size[1]; ++i1) {\n"
                 "      T1.data[(i0 * T1.alloc_stride[0])] = (T1.data[(i0 * T1.alloc_stride[0])] + T0.data[((i0 * T0.alloc_stride[0]) + (i1 * T0.alloc_stride[1]))]);\n"
                 "    }\n"
                 "  }\n"
                 "}\n");
  int64_t t0[2] = {10, 1024};
  expect_runs(f, 2, t0);

  /*
  Block-parallel reduction: the reduction axis on `threadIdx.x`. Each thread adds its
  element into a register accumulator, then the block combines the 1024 partial sums:
  whole warps with shuffles, then the warps' sums through shared memory. The combine is
  an all-reduce (every thread ends with the sum); thread 0 stores it.
  */
  cf_parallelize(f, tv1, 1, CF_PT_TIDX);
  expect_printed(cf_fusion_print_math, f,
                 "Inputs:\n"
                 "  T0_g_float[iS0{i0}, iS1{i1}]\n"
                 "Outputs:\n"
                 "  T1_g_float[iS2{i0}, rthreadIdx.x3{i1}]\n"
                 "\n"
                 "%kernel_math {\n"
                 "T1_g_float[iS2{i0}, rthreadIdx.x3{i1}]\n"
                 "   = sum( T0_g_float[iS0{i0}, iS1{i1}] );\n"
                 "} // %kernel_math\n");
  expect_printed(cf_fusion_print_kernel, f,
                 "extern \"C\" __global__ void cfuser_kernel(Tensor<float, 2, 2> T0, Tensor<float, 1, 1> T1) {\n"
                 "  alignas(16) extern __shared__ char cf_smem[];\n"
                 "  float* W1 = reinterpret_cast<float*>(cf_smem + 0);\n"
                 "  for (cf_index_t i0 = 0; i0 < T0.logical_size[0]; ++i0) {\n"
                 "    float a1 = 0;\n"
                 "    a1 = (a1 + T0.data[((i0 * T0.alloc_stride[0]) + (threadIdx.x * T0.alloc_stride[1]))]);\n"
                 "    { // block all-reduce of a1 (sum) over threadIdx.x\n"
                 "      const int cf_rn = (int)blockDim.x;\n"
                 "      const int cf_ri = (int)threadIdx.x;\n"
                 "      const int cf_rb = ((int)threadIdx.y + (int)threadIdx.z) * cf_rn;\n"
                 "      W1[cf_rb + cf_ri] = a1;\n"
                 "      __syncthreads();\n"
                 "      int cf_s = 1;\n"
                 "      while (2 * cf_s < cf_rn) cf_s *= 2;\n"
                 "      for (; cf_s > 0; cf_s >>= 1) {\n"
                 "        if (cf_ri < cf_s && cf_ri + cf_s < cf_rn) W1[cf_rb + cf_ri] = (W1[cf_rb + cf_ri] + W1[cf_rb + cf_ri + cf_s]);\n"
                 "        __syncthreads();\n"
                 "      }\n"
                 "      a1 = W1[cf_rb];\n"
                 "      __syncthreads();\n"
                 "    }\n"
                 "    if ((threadIdx.x == 0)) {\n"
                 "      T1.data[(i0 * T1.alloc_stride[0])] = a1;\n"
                 "    }\n"
                 "  }\n"
                 "}\n");
  expect_runs(f, 2, t0);

  /*
  Next, the reduction axis on thread blocks: a grid reduction. Each block writes its
  partial to a global work buffer (`G1`, which the executor allocates once and reuses)
  and counts itself on its group's semaphore (`S1`); the last block to arrive folds the
  partials, stores the sum and resets the semaphore. The rows run in a serial loop, so
  each row is its own group, with its own partials and semaphore.
  */
  cf_parallelize(f, tv1, 1, CF_PT_BIDX);
  expect_printed(cf_fusion_print_kernel, f,
                 "extern \"C\" __global__ void __launch_bounds__(1) cfuser_kernel(Tensor<float, 2, 2> T0, Tensor<float, 1, 1> T1, Tensor<float, 1, 1> G1, Tensor<uint32_t, 1, 1> S1) {\n"
                 "  alignas(16) extern __shared__ char cf_smem[];\n"
                 "  uint32_t* F1 = reinterpret_cast<uint32_t*>(cf_smem + 0);\n"
                 "  for (cf_index_t i0 = 0; i0 < T0.logical_size[0]; ++i0) {\n"
                 "    float a1 = 0;\n"
                 "    a1 = (a1 + T0.data[((i0 * T0.alloc_stride[0]) + (blockIdx.x * T0.alloc_stride[1]))]);\n"
                 "    { // grid reduction of a1 (sum) over blockIdx.x\n"
                 "      const int cf_gn = (int)gridDim.x;\n"
                 "      const int cf_gg = (int)(i0) * ((int)gridDim.y * (int)gridDim.z) + ((int)blockIdx.y + (int)blockIdx.z * (int)gridDim.y); // group of this iteration\n"
                 "      const int cf_gb = cf_gg * cf_gn;\n"
                 "      const int cf_t = (int)threadIdx.x + (int)threadIdx.y + (int)threadIdx.z;\n"
                 "      const int cf_grn = 1; // threads of the reduced dimensions\n"
                 "      const int cf_gri = 0; // this thread's place among them\n"
                 "      const int cf_gki = cf_t; // and among the kept ones\n"
                 "      const int cf_gnk = 1 / cf_grn;\n"
                 "      if (cf_gri == 0) G1.data[(cf_gb + ((int)blockIdx.x)) * cf_gnk + cf_gki] = a1;\n"
                 "      __threadfence();\n"
                 "      __syncthreads();\n"
                 "      if (cf_t == 0) F1[0] = atomicAdd(&S1.data[cf_gg], 1u) == (unsigned)(cf_gn - 1);\n"
                 "      __syncthreads();\n"
                 "      if (F1[0]) { // the group's last block\n"
                 "        __threadfence();\n"
                 "        a1 = 0;\n"
                 "        for (int cf_b = cf_gri; cf_b < cf_gn; cf_b += cf_grn) a1 = (a1 + *(volatile float *)&G1.data[(cf_gb + cf_b) * cf_gnk + cf_gki]);\n"
                 "        if (cf_t == 0) S1.data[cf_gg] = 0u; // ready for the next launch\n"
                 "        T1.data[(i0 * T1.alloc_stride[0])] = a1;\n"
                 "      }\n"
                 "      __syncthreads();\n"
                 "    }\n"
                 "  }\n"
                 "}\n");
  expect_runs(f, 2, t0);

  /*
  `threadIdx.x` for the reduction and `threadIdx.y` for the rows. With a [10, 1024] input
  this needs blocks of 1024 x 10 threads, more than CUDA allows, so the launch fails (on
  either backend); a [10, 32] input runs with 32 x 10 threads. With rows on
  `threadIdx.y`, each row is its own group of the block reduction.
  */
  cf_parallelize(f, tv1, 0, CF_PT_TIDY);
  cf_parallelize(f, tv1, 1, CF_PT_TIDX);
  char err[512];
  cr_expect_neq(run(f, 2, t0, err, sizeof err), CF_OK);
  cr_expect_str_eq(err, "run: launch grid (1, 1, 1) block (1024, 10, 1) for these input sizes is outside the limits: "
                        "grid x 1..2147483647, y and z 1..65535; block x and y 1..1024, z 1..64, at most 1024 "
                        "threads");
  expect_runs(f, 2, (int64_t[]){10, 32});

  /*
  And `blockIdx.x` for the rows with `threadIdx.x` for the reduction: the original
  [10, 1024] input runs with 10 blocks of 1024 threads.
  */
  cf_parallelize(f, tv1, 0, CF_PT_BIDX);
  expect_printed(cf_fusion_print_kernel, f,
                 "extern \"C\" __global__ void cfuser_kernel(Tensor<float, 2, 2> T0, Tensor<float, 1, 1> T1) {\n"
                 "  alignas(16) extern __shared__ char cf_smem[];\n"
                 "  float* W1 = reinterpret_cast<float*>(cf_smem + 0);\n"
                 "  float a1 = 0;\n"
                 "  a1 = (a1 + T0.data[((blockIdx.x * T0.alloc_stride[0]) + (threadIdx.x * T0.alloc_stride[1]))]);\n"
                 "  { // block all-reduce of a1 (sum) over threadIdx.x\n"
                 "    const int cf_rn = (int)blockDim.x;\n"
                 "    const int cf_ri = (int)threadIdx.x;\n"
                 "    const int cf_rb = ((int)threadIdx.y + (int)threadIdx.z) * cf_rn;\n"
                 "    W1[cf_rb + cf_ri] = a1;\n"
                 "    __syncthreads();\n"
                 "    int cf_s = 1;\n"
                 "    while (2 * cf_s < cf_rn) cf_s *= 2;\n"
                 "    for (; cf_s > 0; cf_s >>= 1) {\n"
                 "      if (cf_ri < cf_s && cf_ri + cf_s < cf_rn) W1[cf_rb + cf_ri] = (W1[cf_rb + cf_ri] + W1[cf_rb + cf_ri + cf_s]);\n"
                 "      __syncthreads();\n"
                 "    }\n"
                 "    a1 = W1[cf_rb];\n"
                 "    __syncthreads();\n"
                 "  }\n"
                 "  if ((threadIdx.x == 0)) {\n"
                 "    T1.data[(blockIdx.x * T1.alloc_stride[0])] = a1;\n"
                 "  }\n"
                 "}\n");
  expect_runs(f, 2, t0);
  cf_fusion_destroy(f);
}

/*
## Tutorial.ReductionRFactor

A 1-D reduction split by 1024. `cf_rfactor` makes the per-thread partial reduction a
tensor of its own, `T2`: its root domain is the input's axis, split into `rS5`, reduced
by each thread, and `iS6`, which `T2` keeps (the `rf` suffix marks axes made by the
rfactor). `T1` then reduces `T2`'s 1024 partial results.
*/
Test(Tutorial, ReductionRFactor) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *tv0 = cf_tensor_symbolic(f, CF_FLOAT, 1);
  cf_fusion_add_input(f, tv0);
  cf_tv *tv1 = cf_sum(f, tv0, 1, (int[]){0});
  cf_fusion_add_output(f, tv1);
  cf_split(f, tv1, 0, 1024);
  cf_tv *tv2 = cf_rfactor(f, tv1, 1, (int[]){0});
  cr_assert_not_null(tv2, "%s", cf_fusion_error(f));
  expect_printed(cf_fusion_print_math, f,
                 "Inputs:\n"
                 "  T0_g_float[iS0{i0}]\n"
                 "Outputs:\n"
                 "  T1_g_float[rS7{1024}]\n"
                 "\n"
                 "%kernel_math {\n"
                 "T2_l_float[rS5{( ceilDiv(i0, 1024) )}rf, iS6{1024}rf]\n"
                 "   = sum( T0_g_float[iS0{i0}] );\n"
                 "T1_g_float[rS7{1024}]\n"
                 "   = sum( T2_l_float[rS5{( ceilDiv(i0, 1024) )}rf, iS6{1024}rf] );\n"
                 "} // %kernel_math\n");

  /*
  `threadIdx.x` on both: 1024 threads each reduce `ceilDiv(i0, 1024)` elements into
  their own `T2`, then `T1` is a block reduction of the 1024 partials.
  */
  cf_parallelize(f, tv1, 0, CF_PT_TIDX);
  cf_parallelize(f, tv2, 1, CF_PT_TIDX);
  expect_printed(cf_fusion_print_kernel, f,
                 "extern \"C\" __global__ void __launch_bounds__(1024) cfuser_kernel(Tensor<float, 1, 1> T0, Tensor<float, 0, 0> T1) {\n"
                 "  alignas(16) extern __shared__ char cf_smem[];\n"
                 "  alignas(16) float T2[1];\n"
                 "  float* W1 = reinterpret_cast<float*>(cf_smem + 0);\n"
                 "  T2[0] = 0;\n"
                 "  for (cf_index_t i0 = 0; i0 < ceilDiv(T0.logical_size[0], 1024); ++i0) {\n"
                 "    if ((((i0 * 1024) + threadIdx.x) < T0.logical_size[0])) {\n"
                 "      T2[0] = (T2[0] + T0.data[(((i0 * 1024) + threadIdx.x) * T0.alloc_stride[0])]);\n"
                 "    }\n"
                 "  }\n"
                 "  float a1 = 0;\n"
                 "  a1 = (a1 + T2[0]);\n"
                 "  { // block all-reduce of a1 (sum) over threadIdx.x\n"
                 "    for (int cf_o = 16; cf_o > 0; cf_o >>= 1) {\n"
                 "      float cf_v = a1;\n"
                 "      a1 = (a1 + __shfl_xor_sync(0xffffffffu, cf_v, cf_o));\n"
                 "    }\n"
                 "    const int cf_nw = 1024 / 32;\n"
                 "    const int cf_rb = ((int)threadIdx.y + (int)threadIdx.z) * cf_nw;\n"
                 "    if ((int)threadIdx.x % 32 == 0) W1[cf_rb + (int)threadIdx.x / 32] = a1;\n"
                 "    __syncthreads();\n"
                 "    a1 = W1[cf_rb];\n"
                 "    for (int cf_w = 1; cf_w < cf_nw; ++cf_w) a1 = (a1 + W1[cf_rb + cf_w]);\n"
                 "    __syncthreads();\n"
                 "  }\n"
                 "  if ((threadIdx.x == 0)) {\n"
                 "    T1.data[0] = a1;\n"
                 "  }\n"
                 "}\n");
  expect_runs(f, 1, (int64_t[]){10000});
  cf_fusion_destroy(f);
}

/*
nvFuser's second example splits the reduction three ways and rfactors twice: a
per-thread partial (`T2`, 100 elements per thread), a per-block partial (`T3`, a block
reduction of 1024 threads) and the final reduction across the blocks (`T1`, a grid
reduction):
*/
Test(Tutorial, ReductionRFactorTwice) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *tv0 = cf_tensor_symbolic(f, CF_FLOAT, 1);
  cf_fusion_add_input(f, tv0);
  cf_tv *tv1 = cf_sum(f, tv0, 1, (int[]){0});
  cf_fusion_add_output(f, tv1);
  cf_split(f, tv1, 0, 1024);
  cf_split(f, tv1, 0, 100);
  cf_tv *tv2 = cf_rfactor(f, tv1, 1, (int[]){1});
  cf_tv *tv3 = cf_rfactor(f, tv1, 1, (int[]){1});
  cr_assert_not_null(tv3, "%s", cf_fusion_error(f));
  expect_printed(cf_fusion_print_math, f,
                 "Inputs:\n"
                 "  T0_g_float[iS0{i0}]\n"
                 "Outputs:\n"
                 "  T1_g_float[rS15{( ceilDiv(( ceilDiv(i0, 1024) ), 100) )}]\n"
                 "\n"
                 "%kernel_math {\n"
                 "T2_l_float[iS9{( ceilDiv(( ceilDiv(i0, 1024) ), 100) )}rf, rS10{100}rf, iS8{1024}rf]\n"
                 "   = sum( T0_g_float[iS0{i0}] );\n"
                 "T3_l_float[iS13{( ceilDiv(( ceilDiv(i0, 1024) ), 100) )}rf, rS14{1024}rf]\n"
                 "   = sum( T2_l_float[iS9{( ceilDiv(( ceilDiv(i0, 1024) ), 100) )}rf, rS10{100}rf, iS8{1024}rf] );\n"
                 "T1_g_float[rS15{( ceilDiv(( ceilDiv(i0, 1024) ), 100) )}]\n"
                 "   = sum( T3_l_float[iS13{( ceilDiv(( ceilDiv(i0, 1024) ), 100) )}rf, rS14{1024}rf] );\n"
                 "} // %kernel_math\n");
  cf_parallelize(f, tv2, 0, CF_PT_BIDX);
  cf_parallelize(f, tv3, 0, CF_PT_BIDX);
  cf_parallelize(f, tv1, 0, CF_PT_BIDX);
  cf_parallelize(f, tv2, 2, CF_PT_TIDX);
  cf_parallelize(f, tv3, 1, CF_PT_TIDX);
  expect_runs(f, 1, (int64_t[]){1000000}); /* 10 blocks */
  cf_fusion_destroy(f);
}
