// codegen/runtime/grid_sync.cuh: the grid-wide sync of a cooperative kernel (embedded into
// libcfuser at build time; prepended to kernels whose lowering placed a grid sync: a grid
// all-reduce, or a global tensor read across blocks, lower/sync.c).
// Every block's thread 0 adds to one 64-bit counter: block (0,0,0) adds 2^63 - (blocks - 1),
// the others 1, so once all have arrived the counter has gained exactly 2^63: its top bit
// flipped and its low bits are back where they were. Each waits for the flip (with a
// growing pause), so the counter needs no reset between syncs or launches (zeroed once by
// the executor) and the grid may change size between launches. The blocks must all be
// resident: the executor launches cooperatively after checking the occupancy.
#ifndef CFUSER_RUNTIME_GRID_SYNC_CUH
#define CFUSER_RUNTIME_GRID_SYNC_CUH

__device__ __forceinline__ void cf_grid_sync(int64_t *counter) {
  const unsigned long long top = 1ull << 63;
  __threadfence(); // this thread's writes are visible to the grid
  __syncthreads(); // every thread of the block has arrived
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
    unsigned long long blocks = (unsigned long long)gridDim.x * gridDim.y * gridDim.z;
    bool first = blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0;
    unsigned long long *c = reinterpret_cast<unsigned long long *>(counter);
    unsigned long long old = atomicAdd(c, first ? top - (blocks - 1) : 1ull);
    unsigned int pause = 8;
    while (((*(volatile unsigned long long *)c ^ old) & top) == 0) {
      __nanosleep(pause);
      if (pause < 256) pause *= 2;
    }
    __threadfence(); // what other blocks wrote before arriving is visible here
  }
  __syncthreads();
}

#endif
