// hand-written batch norm whose block owns whole columns but keeps only KEEP of each
// thread's rows in registers: the statistics in one pass (sums shifted by the column's
// first value), the other rows read again, from L2, for the normalization
#include <cstdio>
#ifndef TX
#define TX 8
#endif
#ifndef TY
#define TY 32
#endif
#ifndef KEEP
#define KEEP 0
#endif
#ifndef MINB
#define MINB 2
#endif
#define R_ 512
#define C_ 65536
constexpr int RPT = R_ / TY, NT = TX * TY, NW = NT / 32;
__device__ __forceinline__ float4 ld(const float* p) {
#ifdef LDCS2
  return __ldcs((const float4*)p);
#else
  return *(const float4*)p;
#endif
}
__global__ void __launch_bounds__(NT, MINB) bn_rr(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b, float* __restrict__ y) {
  __shared__ float4 ps[NW * TX], pq[NW * TX];
  const int c = (blockIdx.x * TX + threadIdx.x) * 4;
  const float4 sh = *(const float4*)(x + c);
#if KEEP > 0
  float4 keep[KEEP];
#define KEPT(k) keep[k < KEEP ? k : 0]
#else
  float4 keep0 = make_float4(0, 0, 0, 0);
#define KEPT(k) keep0
#endif
  float4 s = make_float4(0, 0, 0, 0), q = s;
#pragma unroll
  for (int k = 0; k < RPT; k++) {
    float4 v = *(const float4*)(x + (size_t)(threadIdx.y + k * TY) * C_ + c);
    if (k < KEEP) KEPT(k) = v;
    v.x -= sh.x; v.y -= sh.y; v.z -= sh.z; v.w -= sh.w;
    s.x += v.x; s.y += v.y; s.z += v.z; s.w += v.w;
    q.x += v.x * v.x; q.y += v.y * v.y; q.z += v.z * v.z; q.w += v.w * v.w;
  }
#pragma unroll
  for (int o = 16; o >= TX; o >>= 1) {
    s.x += __shfl_xor_sync(~0u, s.x, o); s.y += __shfl_xor_sync(~0u, s.y, o); s.z += __shfl_xor_sync(~0u, s.z, o); s.w += __shfl_xor_sync(~0u, s.w, o);
    q.x += __shfl_xor_sync(~0u, q.x, o); q.y += __shfl_xor_sync(~0u, q.y, o); q.z += __shfl_xor_sync(~0u, q.z, o); q.w += __shfl_xor_sync(~0u, q.w, o);
  }
  const int tid = threadIdx.y * TX + threadIdx.x, warp = tid / 32, lane = tid % 32;
  if (lane < TX) { ps[warp * TX + lane] = s; pq[warp * TX + lane] = q; }
  __syncthreads();
  s = make_float4(0, 0, 0, 0); q = s;
#pragma unroll
  for (int k = 0; k < NW; k++) {
    float4 a = ps[k * TX + threadIdx.x], e = pq[k * TX + threadIdx.x];
    s.x += a.x; s.y += a.y; s.z += a.z; s.w += a.w; q.x += e.x; q.y += e.y; q.z += e.z; q.w += e.w;
  }
  const float inv = 1.f / R_;
  float4 m = make_float4(s.x * inv, s.y * inv, s.z * inv, s.w * inv);
  const float4 wv = *(const float4*)(w + c), bv = *(const float4*)(b + c);
  float4 a = make_float4(rsqrtf(q.x * inv - m.x * m.x + 1e-5f) * wv.x, rsqrtf(q.y * inv - m.y * m.y + 1e-5f) * wv.y,
                         rsqrtf(q.z * inv - m.z * m.z + 1e-5f) * wv.z, rsqrtf(q.w * inv - m.w * m.w + 1e-5f) * wv.w);
  m.x += sh.x; m.y += sh.y; m.z += sh.z; m.w += sh.w;
#pragma unroll
  for (int j = 0; j < RPT; j++) {
#ifdef FWD
    const int k = j;
#else
    const int k = j < KEEP ? j : RPT - 1 - (j - KEEP);  // the rows read last come back first
#endif
    const size_t off = (size_t)(threadIdx.y + k * TY) * C_ + c;
    float4 v = k < KEEP ? KEPT(k) : ld(x + off);
    *(float4*)(y + off) = make_float4((v.x - m.x) * a.x + bv.x, (v.y - m.y) * a.y + bv.y, (v.z - m.z) * a.z + bv.z, (v.w - m.w) * a.w + bv.w);
  }
}
void launch(float* x, float* w, float* b, float* y, cudaStream_t s) {
  bn_rr<<<C_ / (TX * 4), dim3(TX, TY), 0, s>>>(x, w, b, y);
}
#include "main.inc"
