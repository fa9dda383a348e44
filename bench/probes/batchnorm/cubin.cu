// bench/probes/batchnorm/cubin.cu: times a batch norm kernel cfuser compiled (the cubin of
// cf_executor_binary, or one ptxas made from a PTX file) in the same harness as the
// hand-written forms, through the driver API: `CUBIN=k.cubin ./cubin 200`. It told NVRTC's
// code from nvcc's for the same generated source (bench/results/bn_nvrtc_h200_20261129/).
// The kernel is cfuser's `cfuser_kernel(Tensor x, Tensor w, Tensor b, Tensor y)` of the
// outer persistent plan with wide rows: 1024 blocks of 16 x 16 threads, 73,728 bytes of
// dynamic shared memory, 32-bit indices (codegen/runtime/tensor.cuh's layout).
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
template <int N> struct Tensor { float* data; int size[N]; int stride[N]; };
template <int N> static Tensor<N> tens(float* p, const int* s) {
  Tensor<N> t; t.data = p;
  int st = 1;
  for (int i = N - 1; i >= 0; i--) { t.size[i] = s[i]; t.stride[i] = st; st *= s[i]; }
  return t;
}
void launch(float* x, float* w, float* b, float* y, cudaStream_t s) {
  static CUfunction fn = 0;
  const int bytes = 73728;
  if (!fn) {
    CUmodule m;
    cudaFree(0);
    const char* path = getenv("CUBIN");
    if (!path || cuModuleLoad(&m, path) || cuModuleGetFunction(&fn, m, "cfuser_kernel")) {
      printf("CUBIN=%s: no cfuser_kernel loaded\n", path ? path : "(unset)");
      exit(1);
    }
    cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
  }
  int s2[2] = {512, 65536}, s1[1] = {65536};
  Tensor<2> X = tens<2>(x, s2), Y = tens<2>(y, s2);
  Tensor<1> W = tens<1>(w, s1), B = tens<1>(b, s1);
  void* args[4] = {&X, &W, &B, &Y};
  cuLaunchKernel(fn, 1024, 1, 1, 16, 16, 1, bytes, (CUstream)s, args, 0);
}
#include "main.inc"
