// codegen/runtime/tma.cuh: TMA tile loads and the mbarriers they complete on (embedded into
// libcfuser at build time; prepended to kernels whose lowering placed a TMA load,
// lower/tma.c). sm_90 and later.
// A tensor map is the 128-byte CUtensorMap the executor encodes for each run
// (cuTensorMapEncodeTiled) and passes as a __grid_constant__ parameter, so its address is
// a parameter-space address cp.async.bulk.tensor may name. An mbarrier is an int64 of
// shared memory: init once (one arrival a phase: the issuing thread's expect_tx), each
// phase completes when that arrival and the boxes' bytes are in; a waiter spins on
// try_wait.parity for the phase it needs (the parity of its fill's count).
#ifndef CFUSER_RUNTIME_TMA_CUH
#define CFUSER_RUNTIME_TMA_CUH

struct alignas(64) CfTensorMap {
  unsigned long long opaque[16];
};

// setmaxnreg (warp specialization's register reallocation): cf_setmaxnreg(inc, 232) or
// (dec, 40); the count is an immediate.
#define cf_setmaxnreg(dir, n) asm volatile("setmaxnreg." #dir ".sync.aligned.u32 " #n ";" ::: "memory")

__device__ __forceinline__ unsigned cf_smem_addr(const void *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void cf_mbar_init(int64_t *bar, unsigned arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(cf_smem_addr(bar)), "r"(arrivals) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ void cf_mbar_expect_tx(int64_t *bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(cf_smem_addr(bar)), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void cf_mbar_arrive(int64_t *bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(cf_smem_addr(bar)) : "memory");
}

__device__ __forceinline__ void cf_mbar_wait(int64_t *bar, unsigned parity) {
  unsigned done;
  do {
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"(cf_smem_addr(bar)), "r"(parity) : "memory");
  } while (!done);
}


__device__ __forceinline__ void cf_tma_load(void *dst, const CfTensorMap *map, int64_t *bar, int c0) {
  asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3}], [%2];"
               :: "r"(cf_smem_addr(dst)), "l"(map), "r"(cf_smem_addr(bar)), "r"(c0) : "memory");
}
__device__ __forceinline__ void cf_tma_load(void *dst, const CfTensorMap *map, int64_t *bar, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
               :: "r"(cf_smem_addr(dst)), "l"(map), "r"(cf_smem_addr(bar)), "r"(c0), "r"(c1) : "memory");
}
__device__ __forceinline__ void cf_tma_load(void *dst, const CfTensorMap *map, int64_t *bar, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];"
               :: "r"(cf_smem_addr(dst)), "l"(map), "r"(cf_smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2) : "memory");
}
__device__ __forceinline__ void cf_tma_load(void *dst, const CfTensorMap *map, int64_t *bar, int c0, int c1, int c2,
                                            int c3) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], [%2];"
               :: "r"(cf_smem_addr(dst)), "l"(map), "r"(cf_smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3) : "memory");
}
__device__ __forceinline__ void cf_tma_load(void *dst, const CfTensorMap *map, int64_t *bar, int c0, int c1, int c2,
                                            int c3, int c4) {
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6, %7}], [%2];"
               :: "r"(cf_smem_addr(dst)), "l"(map), "r"(cf_smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
               : "memory");
}

#endif
