// hand-written batch norm whose block owns whole columns of 256-byte rows (TX = 16
// threads of 4 floats), half of each thread's rows in registers and half in shared
// memory (filled by cp.async, never staged in registers): two blocks an SM
#include <cstdio>
#ifndef TX
#define TX 16
#endif
#ifndef TY
#define TY 16
#endif
#ifndef KEEP
#define KEEP 16
#endif
#ifndef MINB
#define MINB 2
#endif
#define R_ 512
#define C_ 65536
constexpr int RPT = R_ / TY, NT = TX * TY, NW = NT / 32, SROWS = RPT - KEEP;
__device__ __forceinline__ void cp16(void* s, const void* g) {
  unsigned a = (unsigned)__cvta_generic_to_shared(s);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(a), "l"(g) : "memory");
}
__device__ __forceinline__ float4 block_sum(float4 v, float4* part) {
#pragma unroll
  for (int o = 16; o >= TX; o >>= 1) {
    v.x += __shfl_xor_sync(~0u, v.x, o); v.y += __shfl_xor_sync(~0u, v.y, o); v.z += __shfl_xor_sync(~0u, v.z, o); v.w += __shfl_xor_sync(~0u, v.w, o);
  }
  const int tid = threadIdx.y * TX + threadIdx.x, warp = tid / 32, lane = tid % 32;
  if (lane < TX) part[warp * TX + lane] = v;
  __syncthreads();
  float4 s = make_float4(0, 0, 0, 0);
#pragma unroll
  for (int k = 0; k < NW; k++) { float4 a = part[k * TX + threadIdx.x]; s.x += a.x; s.y += a.y; s.z += a.z; s.w += a.w; }
  return s;
}
#ifdef NORESTRICT
#define RESTRICT
#define XCONST
#else
#define RESTRICT __restrict__
#define XCONST const
#endif
__global__ void __launch_bounds__(NT, MINB) bn_hs(XCONST float* RESTRICT x, const float* __restrict__ w, const float* __restrict__ b, float* __restrict__ y) {
  extern __shared__ float4 tile[];  // [SROWS][TY][TX]
  __shared__ float4 p1[NW * TX], p2[NW * TX];
  const int c = (blockIdx.x * TX + threadIdx.x) * 4;
  float4* mine = tile + threadIdx.y * TX + threadIdx.x;
#pragma unroll
  for (int k = 0; k < SROWS; k++) cp16(mine + k * NT, x + (size_t)(threadIdx.y + (KEEP + k) * TY) * C_ + c);
  asm volatile("cp.async.commit_group;" ::: "memory");
  float4 v[KEEP];
#pragma unroll
  for (int k = 0; k < KEEP; k++) v[k] = *(const float4*)(x + (size_t)(threadIdx.y + k * TY) * C_ + c);
  float4 s = make_float4(0, 0, 0, 0);
#pragma unroll
  for (int k = 0; k < KEEP; k++) { s.x += v[k].x; s.y += v[k].y; s.z += v[k].z; s.w += v[k].w; }
  asm volatile("cp.async.wait_group 0;" ::: "memory");
#pragma unroll
  for (int k = 0; k < SROWS; k++) { float4 a = mine[k * NT]; s.x += a.x; s.y += a.y; s.z += a.z; s.w += a.w; }
  s = block_sum(s, p1);
  const float inv = 1.f / R_;
  const float4 m = make_float4(s.x * inv, s.y * inv, s.z * inv, s.w * inv);
  float4 q = make_float4(0, 0, 0, 0);
#pragma unroll
  for (int k = 0; k < RPT; k++) {
    float4 d = k < KEEP ? v[k < KEEP ? k : 0] : mine[(k - KEEP) * NT];
    d.x -= m.x; d.y -= m.y; d.z -= m.z; d.w -= m.w;
    q.x += d.x * d.x; q.y += d.y * d.y; q.z += d.z * d.z; q.w += d.w * d.w;
  }
  q = block_sum(q, p2);
  const float4 wv = *(const float4*)(w + c), bv = *(const float4*)(b + c);
  const float4 a = make_float4(rsqrtf(q.x * inv + 1e-5f) * wv.x, rsqrtf(q.y * inv + 1e-5f) * wv.y, rsqrtf(q.z * inv + 1e-5f) * wv.z, rsqrtf(q.w * inv + 1e-5f) * wv.w);
#pragma unroll
  for (int k = 0; k < RPT; k++) {
    float4 d = k < KEEP ? v[k < KEEP ? k : 0] : mine[(k - KEEP) * NT];
    *(float4*)(y + (size_t)(threadIdx.y + k * TY) * C_ + c) = make_float4((d.x - m.x) * a.x + bv.x, (d.y - m.y) * a.y + bv.y, (d.z - m.z) * a.z + bv.z, (d.w - m.w) * a.w + bv.w);
  }
}
void launch(float* x, float* w, float* b, float* y, cudaStream_t s) {
  static bool once = false;
  const int bytes = SROWS * NT * 16;
  if (!once) { cudaFuncSetAttribute(bn_hs, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes); once = true; }
  bn_hs<<<C_ / (TX * 4), dim3(TX, TY), bytes, s>>>(x, w, b, y);
}
#include "main.inc"
