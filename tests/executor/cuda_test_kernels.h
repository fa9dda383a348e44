/* tests/executor/cuda_test_kernels.h: handwritten CUDA kernels for the executor's tests.
 *
 * Written as the code generator will write them: codegen/runtime/tensor.cuh first (taken
 * from the embedded runtime, as the executor does), then kernels in namespace CudaCodeGen
 * taking Tensor<T, N, A> parameters by value. */
#ifndef CFUSER_TESTS_CUDA_TEST_KERNELS_H
#define CFUSER_TESTS_CUDA_TEST_KERNELS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Generated at build time from codegen/runtime/ (build/generated/embedded_runtime.c). */
const char *cg_embedded_file(const char *name);

/* T1[i, j] = T0[i, j] for every logical (i, j), whatever the strides of either; one
 * thread per element. With -DCF_INDEX_TYPE=int it indexes in 32 bits. */
static const char k_copy_kernel[] =
    "namespace CudaCodeGen {\n"
    "__global__ void copy_kernel(Tensor<float, 2, 2> T0, Tensor<float, 2, 2> T1) {\n"
    "  cf_index_t i = (cf_index_t)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  cf_index_t cols = T0.logical_size[1];\n"
    "  if (i >= T0.logical_size[0] * cols) return;\n"
    "  cf_index_t r = i / cols, c = i % cols;\n"
    "  T1.data[r * T1.alloc_stride[0] + c * T1.alloc_stride[1]] =\n"
    "      T0.data[r * T0.alloc_stride[0] + c * T0.alloc_stride[1]];\n"
    "}\n"
    "}  // namespace CudaCodeGen\n";

/* out[i] = in[n - 1 - i] through dynamic shared memory of n floats, one block of 1024
 * threads striding over n: exercises the raised dynamic shared memory limit. */
static const char k_smem_reverse_kernel[] =
    "namespace CudaCodeGen {\n"
    "__global__ void smem_reverse(Tensor<float, 1, 1> in, Tensor<float, 1, 1> out) {\n"
    "  extern __shared__ float buf[];\n"
    "  cf_index_t n = in.logical_size[0];\n"
    "  for (cf_index_t i = threadIdx.x; i < n; i += blockDim.x)\n"
    "    buf[i] = in.data[i * in.alloc_stride[0]];\n"
    "  __syncthreads();\n"
    "  for (cf_index_t i = threadIdx.x; i < n; i += blockDim.x)\n"
    "    out.data[i * out.alloc_stride[0]] = buf[n - 1 - i];\n"
    "}\n"
    "}  // namespace CudaCodeGen\n";

/* The runtime's tensor.cuh followed by `kernel` (malloc'd; NULL if the runtime file is not
 * embedded). */
static inline char *test_kernel_source(const char *kernel) {
  const char *rt = cg_embedded_file("tensor.cuh");
  if (rt == NULL) return NULL;
  size_t n = strlen(rt) + strlen(kernel) + 2;
  char *s = malloc(n);
  if (s) snprintf(s, n, "%s\n%s", rt, kernel);
  return s;
}

#endif
