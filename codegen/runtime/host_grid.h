/* host_grid.h: what grid reductions and grid syncs need from cfuser's host backend; the
 * sixth part of the host runtime, prepended after welford.h.
 *
 * The host runs a launch's blocks one after another and a block's threads as fibers that
 * switch only at barriers and warp collectives, so an atomic read-modify-write is a plain
 * one and a memory fence has nothing to order. The last-block pattern of grid reductions
 * (codegen/reduction.c) then behaves as on the GPU: each block counts itself on its
 * group's semaphore, and the group's last block folds every partial.
 *
 * A kernel with grid syncs (cfh__kernel_cooperative: a grid all-reduce, or a global tensor
 * read across blocks) is a cooperative launch: every block resident at once. Here every
 * block of the grid gets its own fibers, stacks and shared memory, and the launcher runs
 * each block's threads until none can run, block after block; a thread at cf_grid_sync
 * waits (CFH_AT_GRID) until every thread of every block is there, then all are released
 * (a barrier of the whole grid, which orders shared memory like __syncthreads). A thread
 * that exits or waits at __syncthreads while others wait at the grid sync is a deadlock,
 * reported with the block and threads. Key decision: the co-resident grid is bounded by
 * CFH_MAX_RESIDENT_THREADS (each thread is a fiber with its own stack, about a page of it
 * touched; no guard page, which would pass the kernel's count of memory maps): a larger
 * grid is refused before anything runs, as the GPU refuses a cooperative launch whose
 * blocks do not all fit. */
#ifndef CFH_HOST_GRID_H
#define CFH_HOST_GRID_H
#ifndef CFH_HOST_RUNTIME_H
#error "host_grid.h goes after host_runtime.h"
#endif

#define CFH_MAX_RESIDENT_THREADS 65536u /* fibers of a cooperative launch, every block at once */

CFH_INLINE unsigned int atomicAdd(unsigned int *p, unsigned int v) {
  unsigned int old = *p;
  *p = old + v;
  return old;
}
#define __threadfence() ((void)0)

/* Waits at the grid sync: the launcher releases every thread once all have arrived. */
CFH_FN void cf_grid_sync(int64_t *counter) {
  (void)counter; /* the GPU's arrival counter: the host counts fibers instead */
  cfh_launch_state *L = cfh__L;
  L->cur->state = CFH_AT_GRID;
  L->grid_waiting++;
  cfh__to_scheduler(L);
}

/* The blocks of a cooperative launch, and their counts of threads exited and waiting. */
typedef struct cfh_grid {
  cfh_launch_state **blocks;
  unsigned int n, waiting, exited, threads;
} cfh_grid;

/* Runs every block's threads until none can run; false on an error (copied to L). */
CFH_FN bool cfh__grid_round(cfh_grid *g, cfh_launch_state *L) {
  g->waiting = g->exited = 0;
  for (unsigned int b = 0; b < g->n; b++) {
    cfh_launch_state *B = g->blocks[b];
    cfh__L = B;
    cfh__block_drain(B);
    if (B->code != CFH_OK) {
      L->code = B->code;
      return false;
    }
    g->waiting += B->grid_waiting;
    g->exited += B->exited;
  }
  return true;
}

/* Every thread of the grid is at the grid sync: all go on, in thread order. */
CFH_FN void cfh__grid_release(cfh_grid *g) {
  for (unsigned int b = 0; b < g->n; b++) {
    cfh_launch_state *B = g->blocks[b];
    cfh__race_next_epoch(B);
    B->grid_waiting = 0;
    for (unsigned int i = 0; i < B->nthreads; i++)
      if (B->fibers[i].state == CFH_AT_GRID) {
        B->fibers[i].state = CFH_RUNNABLE;
        cfh__push(B, i);
      }
  }
}

/* No thread can run and not all wait at the grid sync: name a block that cannot get
 * there. */
CFH_FN void cfh__grid_deadlock(cfh_grid *g, cfh_launch_state *L) {
  char b[48], m1[160], m2[160];
  for (unsigned int k = 0; k < g->n; k++) {
    cfh_launch_state *B = g->blocks[k];
    if (B->exited + B->grid_waiting == B->nthreads && !(B->exited && B->grid_waiting)) continue;
    cfh__L = B;
    if (B->exited + B->grid_waiting == B->nthreads)
      cfh__error(B, CFH_ERR_RUNTIME, "block %s: deadlock at the grid sync: threads %s wait there, but threads %s "
                 "exited without reaching it", cfh__dim(b, B->bid), cfh__threads(m1, sizeof m1, B, CFH_AT_GRID),
                 cfh__threads(m2, sizeof m2, B, CFH_EXITED));
    else if (B->grid_waiting && B->bar_count)
      cfh__error(B, CFH_ERR_RUNTIME, "block %s: deadlock: threads %s wait at __syncthreads while threads %s wait "
                 "at the grid sync", cfh__dim(b, B->bid), cfh__threads(m1, sizeof m1, B, CFH_AT_BARRIER),
                 cfh__threads(m2, sizeof m2, B, CFH_AT_GRID));
    else
      cfh__diagnose_deadlock(B);
    L->code = B->code;
    return;
  }
  cfh__error(L, CFH_ERR_RUNTIME, "deadlock at the grid sync: %u of %u threads wait there, but the others exited "
             "without reaching it", g->waiting, g->threads);
}

/* Allocates and starts every block; false on an error (in L). */
CFH_FN bool cfh__grid_start(cfh_grid *g, cfh_launch_state *L, size_t smem_bytes) {
  for (unsigned int z = 0, b = 0; z < L->grid.z; z++)
    for (unsigned int y = 0; y < L->grid.y; y++)
      for (unsigned int x = 0; x < L->grid.x; x++, b++) {
        cfh_launch_state *B = (cfh_launch_state *)calloc(1, sizeof *B);
        if (!B) return cfh__error(L, CFH_ERR_NOMEM, "out of memory"), false;
        g->blocks[b] = B;
        B->grid = L->grid, B->block = L->block, B->body = L->body, B->arg = L->arg;
        B->err = L->err, B->errlen = L->errlen;
        B->bid = (cfh_dim3){x, y, z};
        if (!cfh__allocate(B, smem_bytes, false)) return L->code = B->code, false;
        cfh__L = B;
        cfh__block_start(B);
      }
  return true;
}

CFH_FN void cfh__run_cooperative(cfh_launch_state *L, size_t smem_bytes) {
  char d[48], t[48];
  uint64_t n = (uint64_t)L->grid.x * L->grid.y * L->grid.z, threads = (uint64_t)L->block.x * L->block.y * L->block.z;
  if (n * threads > CFH_MAX_RESIDENT_THREADS) {
    cfh__error(L, CFH_ERR_CONFIG, "cooperative launch: grid %s of blocks %s has %llu threads, but the host backend "
               "keeps at most %u resident at once (a grid sync needs every block resident)",
               cfh__dim(d, L->grid), cfh__dim(t, L->block), (unsigned long long)(n * threads),
               CFH_MAX_RESIDENT_THREADS);
    return;
  }
  cfh_grid g = {(cfh_launch_state **)calloc((size_t)n, sizeof(cfh_launch_state *)), (unsigned int)n, 0, 0,
                (unsigned int)(n * threads)};
  cfh_launch_state *outer = cfh__L;
  if (!g.blocks) cfh__error(L, CFH_ERR_NOMEM, "out of memory");
  else if (cfh__grid_start(&g, L, smem_bytes))
    while (cfh__grid_round(&g, L)) {
      if (g.exited == g.threads) {
        for (unsigned int b = 0; b < g.n && L->code == CFH_OK; b++) {
          cfh__L = g.blocks[b];
          cfh__block_finish(g.blocks[b]);
          L->code = g.blocks[b]->code;
        }
        break;
      }
      if (g.waiting + g.exited != g.threads || g.exited) {
        cfh__grid_deadlock(&g, L);
        break;
      }
      cfh__grid_release(&g);
    }
  cfh__L = outer;
  for (unsigned int b = 0; g.blocks && b < g.n; b++)
    if (g.blocks[b]) cfh__release(g.blocks[b]);
  free(g.blocks);
}

#endif
