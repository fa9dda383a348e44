/* host_grid.h: what grid reductions need from cfuser's host backend; the fifth part of
 * the host runtime, prepended after host_math.h.
 *
 * The host runs a launch's blocks one after another and a block's threads as fibers that
 * switch only at barriers and warp collectives, so an atomic read-modify-write is a plain
 * one and a memory fence has nothing to order. The last-block pattern of grid reductions
 * (codegen/reduction.c) then behaves as on the GPU: each block counts itself on its
 * group's semaphore, and the group's last block folds every partial. */
#ifndef CFH_HOST_GRID_H
#define CFH_HOST_GRID_H
#ifndef CFH_HOST_RUNTIME_H
#error "host_grid.h goes after host_runtime.h"
#endif

CFH_INLINE unsigned int atomicAdd(unsigned int *p, unsigned int v) {
  unsigned int old = *p;
  *p = old + v;
  return old;
}
#define __threadfence() ((void)0)

#endif
