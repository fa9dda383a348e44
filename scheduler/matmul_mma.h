/* scheduler/matmul_mma.h: the matmul row's tensor-core schedule (matmul_mma.c), called by
 * scheduler/matmul_sched.c when the product's operands are half or bfloat16, and the
 * rewrite of its operand chains into load order (matmul_operands.c), before either
 * schedule. */
#ifndef CFUSER_SCHED_MATMUL_MMA_H
#define CFUSER_SCHED_MATMUL_MMA_H

#include "scheduler/heuristic.h"
#include "scheduler/sched.h"

/* The tensors of the product the schedule places: r = sum(mul(cast(x), cast(y))) whose
 * loop domain is already [batch?, M, N, K] (one axis each), x broadcast along N and y
 * along M (the operand tiles), and the mul's two casts. */
/* What an operand's tile reads (sched_matmul_operand_fill): the chain's fusion input x;
 * the operand's axis that holds x's innermost (non-broadcast) axis, -1 when none (the
 * tile's rows are stored along it: its fill reads x along its contiguous axis); whether
 * the chain permutes x's axes, and whether it casts x before the tile (the tile is a copy
 * of x, which its fill moves 16 bytes at a time, only when neither); ncasts, the casts
 * the chain keeps (the SIMT schedule's tile is the operand itself: a copy when 0). */
typedef struct MmaOperandFill {
  Val *x;
  int contig;
  bool permuted, cast;
  int ncasts;
} MmaOperandFill;

/* An operand tile's fill: its chain, the role of its contiguous axis ('K', 'M' or 'N'),
 * and why its fill is not 16-byte vectors (cp.async), NULL when it is. */
typedef struct MmaFill {
  MmaOperandFill chain;
  char role;
  char why[48];
} MmaFill;

typedef struct MmaTiles {
  Val *r, *x, *y, *mul, *ca, *cb;
  bool batch;
  bool wgmma;      /* Hopper's warpgroup instruction (the device's cc is 90) */
  bool tcgen05;    /* Blackwell's tcgen05.mma, the accumulator in tensor memory (cc 100) */
  int64_t m_span, n_span; /* where M (N) is several axes merged (a batch of A alone): the extent of
                           * its innermost axis, -1 when symbolic; 0 where it is one axis. A
                           * tile whose M (N) does not divide the span crosses from one outer
                           * step into the next, which no TMA box describes */
  MmaFill fill[2]; /* x's and y's */
  int64_t size_m, size_n, size_k, size_b; /* the product's M, N, K and batch (1 without), 0 when symbolic */
  bool n_innermost; /* the product's innermost kept axis is an N axis: the epilogue's outputs
                     * (of its shape) hold adjacent columns side by side; a split linear's
                     * partials [M, N, slices] do not */
  int sm_count;                           /* the device's, which the block tile's N is chosen for */
  int64_t l2_bytes;                       /* the device's L2, which decides the blocks' order */
} MmaTiles;

/* Whether the product fits the tensor-core schedule: the mul's operands are casts of half
 * or bfloat16 tensors (broadcasts of the inputs, or inputs with their broadcast axes read
 * only by the cast), at least one M and one N axis (m_axes, n_axes: the row merges each
 * role's into one). Fills t (r, x, y, casts) when it does. */
bool sched_matmul_mma_fits(Val *r, int m_axes, int n_axes, const SchedDevice *dev, MmaTiles *t);
/* Block tile 128 x 128 x 32 of 2 x 2 warps (threadIdx.z, threadIdx.y) of 64 x 64 each:
 * 4 x 8 m16n8k16 instructions a K step; x and y in shared memory, loaded by all 128
 * threads at each K tile; the epilogue on the accumulator's fragments. An input x or y
 * gets a copy as its tile, and an output r a local cache (t is updated to them).
 * t->wgmma (a Hopper device): block tile 128 x 128 x 64 of 2 warpgroups (threadIdx.y) of
 * 128 threads (threadIdx.x), each one m64n128k16 wgmma per 16 of K from tiles stored in
 * the canonical layouts of wgmma's descriptors, 4 stages. */
/* The tiles' and the accumulator's copies (matmul_mma.c): an operand read straight from a
 * fusion input gets a copy to be its tile (cf_cache_after), a product that is an output a
 * cache it is summed into (cf_cache_before); t is updated to them. */
/* Whether v is x, y or a tensor of their prologue (an ancestor of theirs). */
bool sched_matmul_in_prologue(const MmaTiles *t, Val *v);
cf_status sched_matmul_stage_operands(cf_fusion *f, MmaTiles *t);
cf_status sched_matmul_mma(cf_fusion *f, MmaTiles *t);
/* The row's parameter text for it (the tile shape, the fills: cp.async16 or scalar(why)). */
void sched_matmul_mma_params(const MmaTiles *t, char *text);
/* matmul_tcgen05.c: whether the product r runs as tcgen05.mma on dev (a Blackwell, cc
 * 100, and a reduced extent that is not 0); the schedule (block tile 128 x 128 x 64 of
 * 128 threads, one m128n128k16 instruction per 16 of K issued by one thread into a tensor-
 * memory accumulator, the epilogue on 32 columns a thread at a time read by tcgen05.ld);
 * its parameter text. */
bool sched_matmul_tcgen05_takes(Val *r, const SchedDevice *dev);
cf_status sched_matmul_tcgen05(cf_fusion *f, MmaTiles *t);
void sched_matmul_tcgen05_params(const MmaTiles *t, char *text);
/* matmul_mma.c, shared with matmul_tcgen05.c: the tile x's axes p (rows) and p + 1 (a row
 * of `row` elements of esz bytes) stored through the swizzle layout/ gives such rows,
 * merged back into one axis (false: none, nothing done); the tile's producers in the
 * kernel given its transforms and threads (set: room for every tensor). */
bool sched_matmul_tile_swizzle(cf_fusion *f, cf_tv *x, int p, int64_t esz, int64_t row);
void sched_matmul_tile_producers(cf_fusion *f, Val *x, cf_tv **set);
/* The fusion's tensor exprs in order (*n of them) and *set, room for a handle of each, in a
 * new arena *a (the caller destroys it); NULL, the fusion's error set, when out of memory. */
Expr **sched_matmul_exprs(cf_fusion *f, Arena **a, int *n, cf_tv ***set);
/* Rebuilds operand i of the product's mul, a chain of sets, permutes, broadcasts and casts
 * of one fusion input (matmul_operands.c), as broadcast(x), a permute, the casts: every
 * tensor of the chain then has the tile's axes and is inlined into its writes. A chain in
 * that order already, or without broadcast and permute, is left as it is. The Expr mul is
 * dropped and made again (its output, the sum's input, stays the same tensor). */
cf_status sched_matmul_operand_order(cf_fusion *f, Expr *mul, int i);
/* What the tile of the mul's operand `operand` reads once its chain is in load order
 * (read only: the plan asks before the rewrite, the schedule after, with one answer);
 * false when out of memory. */
bool sched_matmul_operand_fill(cf_fusion *f, Val *operand, MmaOperandFill *out);

#endif
