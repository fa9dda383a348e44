// codegen/runtime/cuda_helpers.cuh: device-side helpers every generated CUDA kernel
// starts with (embedded into libcfuser at build time): fixed-width integer types (NVRTC
// has no <cstdint>), infinity, the math functions the IR names that CUDA lacks, and a
// register array type for vector copies.
#ifndef CFUSER_RUNTIME_CUDA_HELPERS_CUH
#define CFUSER_RUNTIME_CUDA_HELPERS_CUH

typedef signed char int8_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned int uint32_t;
typedef unsigned short uint16_t;

// A kernel of 32-bit indices (CF_INDEX_TYPE int) reads the thread and block coordinates
// as int through these: the code generator shadows threadIdx, blockIdx, blockDim and
// gridDim with them at the kernel's start, so no index mixes unsigned and signed 32-bit
// arithmetic (unsigned int times a negative stride, or minus an offset, would wrap; with
// 64-bit indices they are promoted to long long and cannot).
struct cf_idim3 {
  int x, y, z;
};
__device__ __forceinline__ cf_idim3 cf_signed(const uint3 &v) { return {(int)v.x, (int)v.y, (int)v.z}; }
__device__ __forceinline__ cf_idim3 cf_signed(const dim3 &v) { return {(int)v.x, (int)v.y, (int)v.z}; }

#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fffffff)

// A double from its bits: how generated code spells NaN, infinities and -0.0 exactly.
__device__ __forceinline__ double cf_f64_from_bits(unsigned long long bits) {
  return __longlong_as_double((long long)bits);
}

// relu keeps NaN (torch's and nvFuser's x <= 0 ? 0 : x)
__device__ __forceinline__ float relu(float x) { return x <= 0.f ? 0.f : x; }
__device__ __forceinline__ double relu(double x) { return x <= 0. ? 0. : x; }
__device__ __forceinline__ int64_t relu(int64_t x) { return x <= 0 ? 0 : x; }
__device__ __forceinline__ float sigmoid(float x) { return 1.f / (1.f + expf(-x)); }
__device__ __forceinline__ double sigmoid(double x) { return 1. / (1. + exp(-x)); }
__device__ __forceinline__ float gelu(float x) { return 0.5f * x * (1.f + erff(x * 0.70710678118654752f)); }
__device__ __forceinline__ double gelu(double x) { return 0.5 * x * (1. + erf(x * 0.70710678118654752)); }
__device__ __forceinline__ float reciprocal(float x) { return 1.f / x; }
__device__ __forceinline__ double reciprocal(double x) { return 1. / x; }
__device__ __forceinline__ int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
// max and min of a 64-bit and a 32-bit index (a size against a literal in a workspace
// offset): CUDA's own overloads make these calls ambiguous.
__device__ __forceinline__ int64_t max(int64_t a, int b) { return a > b ? a : (int64_t)b; }
__device__ __forceinline__ int64_t max(int a, int64_t b) { return (int64_t)a > b ? (int64_t)a : b; }
__device__ __forceinline__ int64_t min(int64_t a, int b) { return a < b ? a : (int64_t)b; }
__device__ __forceinline__ int64_t min(int a, int64_t b) { return (int64_t)a < b ? (int64_t)a : b; }
__device__ __forceinline__ int64_t max(int64_t a, unsigned b) { return a > b ? a : (int64_t)b; }
__device__ __forceinline__ int64_t max(unsigned a, int64_t b) { return (int64_t)a > b ? (int64_t)a : b; }
__device__ __forceinline__ int64_t min(int64_t a, unsigned b) { return a < b ? a : (int64_t)b; }
__device__ __forceinline__ int64_t min(unsigned a, int64_t b) { return (int64_t)a < b ? (int64_t)a : b; }

// A register array of N elements aligned for one vector access.
template <typename T, int N>
struct alignas(sizeof(T) * N) Array {
  T v[N];
};

// The linear thread index within the block, and whether this thread is in warp 0.
__device__ __forceinline__ unsigned cf_linear_tid() {
  return threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y;
}

// An element of a Local tensor spilled to shared memory (cf_spill_to_shared,
// lower/shared_spill.c): elements [0, K) in the thread's register array, the others in
// 16-byte chunks of V elements, chunk j of thread t at (j * NT + t) * V of the shared part.
// Indices are compile-time constants once the loops around them are unrolled, so the
// choice costs nothing and the register array stays in registers.
template <int K, int V, int NT, typename T>
__device__ __forceinline__ T *cf_spill_at(T *regs, T *smem, int i) {
  return i < K ? &regs[i] : &smem[(((i - K) / V) * NT + (int)cf_linear_tid()) * V + (i - K) % V];
}

// Before the cp.async commit after a spilled tensor's fill: the first W 32-bit words of
// its register array (the part the fill loaded with ordinary loads) each pass through an
// identity byte permute, which needs the loaded value. ptxas then issues every one of
// those loads before the wait that follows; free to, it moved some past the wait, a
// second trip to memory for them (batch norm 512 x 65536: 74.0 -> 71.6 us on an H200).
// An empty asm would emit nothing for ptxas to see, and a mov of a register to itself
// is dropped.
template <int W, typename T>
__device__ __forceinline__ void cf_loads_issued(T *regs) {
#pragma unroll
  for (int w = 0; w < W; w++) asm volatile("prmt.b32 %0, %0, 0, 0x3210;" : "+r"(reinterpret_cast<unsigned *>(regs)[w]));
}

#endif
