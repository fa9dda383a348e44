/* scheduler/matmul_simt.h: the matmul row's SIMT schedule (matmul_simt.c), called by
 * scheduler/matmul_sched.c for products that do not run on tensor cores (float and double
 * operands). */
#ifndef CFUSER_SCHED_MATMUL_SIMT_H
#define CFUSER_SCHED_MATMUL_SIMT_H

#include "scheduler/sched.h"

/* How an operand tile is stored and filled: kmajor, rows of BK (K innermost in shared
 * memory; else rows of BM or BN: [BK, BM|BN]); swizzle, the rows XOR-swizzled element by
 * element (B's K-major tile: without it the 16 threads of a warp reading 16 rows at one k
 * hit 2 banks); vec, 16-byte vectors (cp.async in the circular buffer) or 0 and why not. */
typedef struct SimtFill {
  bool kmajor, swizzle;
  int vec;
  char why[48];
} SimtFill;

/* The product r = sum(mul(A, B)), r's loop domain already [batch?, M, N, K] (one axis
 * each), A and B the mul's operands (their chains in load order): the shared-memory tiles. */
typedef struct SimtTiles {
  Val *r, *tile[2];
  bool batch;
  SimtFill fill[2];
} SimtTiles;

/* Decides the tiles' fills from the sizes and layouts (the plan and the schedule agree:
 * both call it on the same fusion); false when out of memory. */
bool sched_matmul_simt_plan(Val *r, bool batch, SimtTiles *t);
/* The row's parameter text (tile, threads, registers, stages, fills). */
void sched_matmul_simt_params(const SimtTiles *t, char *text);
/* Block tile 128 x 128 x 16 of 16 x 16 threads, each accumulating 8 x 8 registers (rows
 * ty + 16 i, columns tx + 16 j); A and B in shared memory, filled by all 256 threads at
 * each K tile and double-buffered; the epilogue on the registers. An output r gets a local
 * cache as its accumulator (t->r is updated to it). */
cf_status sched_matmul_simt(cf_fusion *f, SimtTiles *t);

#endif
