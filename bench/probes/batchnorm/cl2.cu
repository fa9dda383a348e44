// hand-written batch norm over a cluster of CL blocks along the rows: each block folds
// R/CL rows of TXC*4 columns in registers, the partial statistics meet through
// distributed shared memory behind cluster barriers
#include <cstdio>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
#ifndef TXC
#define TXC 16
#endif
#ifndef TYC
#define TYC 8
#endif
#ifndef CL
#define CL 2
#endif
#ifndef MINB
#define MINB 1
#endif
#define R_ 512
#define C_ 65536
constexpr int RB = R_ / CL, RPT = RB / TYC, NT = TXC * TYC;
__device__ __forceinline__ float4 add4(float4 a, float4 b) { return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w); }
__device__ __forceinline__ float4 shfl4(float4 v, int o) {
  return make_float4(__shfl_xor_sync(~0u, v.x, o), __shfl_xor_sync(~0u, v.y, o), __shfl_xor_sync(~0u, v.z, o), __shfl_xor_sync(~0u, v.w, o));
}
__device__ __forceinline__ void cl_arrive() { asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory"); }
__device__ __forceinline__ void cl_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }
// the cluster's sum over rows: warp shuffles, each warp's partial into this block's part,
// one cluster barrier, every thread folds all CL x NW partials of its columns through DSMEM
__device__ __forceinline__ float4 cluster_sum(float4 v, float4* part, cg::cluster_group& cl) {
  for (int o = 16; o >= TXC; o >>= 1) v = add4(v, shfl4(v, o));
  const int tid = threadIdx.y * TXC + threadIdx.x, warp = tid / 32, lane = tid % 32;
  if (lane < TXC) part[warp * TXC + lane] = v;
  cl_arrive(); cl_wait();
  float4 s = make_float4(0, 0, 0, 0);
#pragma unroll
  for (int k = 0; k < CL; k++) {
    const float4* p = cl.map_shared_rank(part, k);
#pragma unroll
    for (int w = 0; w < NT / 32; w++) s = add4(s, p[w * TXC + threadIdx.x]);
  }
  return s;
}
__global__ void __cluster_dims__(1, CL, 1) __launch_bounds__(NT, MINB) bn_cl(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b, float* __restrict__ y) {
  __shared__ float4 part1[NT / 32 * TXC], part2[NT / 32 * TXC];
  cg::cluster_group cl = cg::this_cluster();
  const int c = (blockIdx.x * TXC + threadIdx.x) * 4;
  const int r0 = blockIdx.y * RB + threadIdx.y;
  float4 v[RPT];
#pragma unroll
  for (int k = 0; k < RPT; k++) v[k] = *(const float4*)(x + (size_t)(r0 + k * TYC) * C_ + c);
  float4 s = make_float4(0, 0, 0, 0);
#pragma unroll
  for (int k = 0; k < RPT; k++) s = add4(s, v[k]);
  s = cluster_sum(s, part1, cl);
  const float inv = 1.f / R_;
  float4 m = make_float4(s.x * inv, s.y * inv, s.z * inv, s.w * inv), q = make_float4(0, 0, 0, 0);
#pragma unroll
  for (int k = 0; k < RPT; k++) {
    float4 d = v[k];
    d.x -= m.x; d.y -= m.y; d.z -= m.z; d.w -= m.w;
    v[k] = d;
    q.x += d.x * d.x; q.y += d.y * d.y; q.z += d.z * d.z; q.w += d.w * d.w;
  }
  q = cluster_sum(q, part2, cl);
  cl_arrive();  // this block has read its peers' parts
  float4 wv = *(const float4*)(w + c), bv = *(const float4*)(b + c);
  float4 a = make_float4(rsqrtf(q.x * inv + 1e-5f) * wv.x, rsqrtf(q.y * inv + 1e-5f) * wv.y, rsqrtf(q.z * inv + 1e-5f) * wv.z, rsqrtf(q.w * inv + 1e-5f) * wv.w);
#pragma unroll
  for (int k = 0; k < RPT; k++) {
    float4 d = v[k];
    *(float4*)(y + (size_t)(r0 + k * TYC) * C_ + c) = make_float4(d.x * a.x + bv.x, d.y * a.y + bv.y, d.z * a.z + bv.z, d.w * a.w + bv.w);
  }
  cl_wait();  // no block leaves while a peer may still read its parts
}
void launch(float* x, float* w, float* b, float* y, cudaStream_t s) {
  bn_cl<<<dim3(C_ / (TXC * 4), CL), dim3(TXC, TYC), 0, s>>>(x, w, b, y);
}
#include "main.inc"
