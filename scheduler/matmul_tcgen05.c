/* scheduler/matmul_tcgen05.c: the matmul row's tensor-core schedule on Blackwell (a device
 * of compute capability 10.0): tcgen05.mma m128nNk16 with its accumulator in tensor memory
 * (scheduler/matmul_mma.c hands the product over when MmaTiles.tcgen05 is set).
 *   1. operands: an input operand gets a copy, its shared tile (cacheAfter); a product that
 *      is an output is summed into a cache (cacheBefore); then the sum r (the accumulator,
 *      in tensor memory) gets a register copy rl = set(r) (cacheAfter: tcgen05.ld) that
 *      every reader of r reads instead;
 *   2. r, [b?, M, N, K], is tiled [b, M/128, N/128, K/64, 128, 128, 64] and that propagated
 *      (blockIdx.z, .y, .x over batch, M tiles, N tiles);
 *   3. the operand tiles in shared memory at the K-tile loop, in the canonical layouts of
 *      the descriptors wgmma and tcgen05.mma share (a K-contiguous tile as rows of 64
 *      elements through the 128-byte swizzle, an M- or N-contiguous one as [BN / 64, BK,
 *      64]), filled by the 128 threads ([iters, threadIdx.x{128}, V?]: cp.async16 where
 *      the tile is a copy of its input, else one element a thread), 4 stages;
 *   4. r's inner tile [K/16, 128, 128, 16] in tensor memory (dim-sep between the M and N
 *      tiles: row m in lane m, column n in column n), its last three handed to
 *      cf_mma_tile's tcgen05 row, and the same transforms to the product's casts and mul;
 *   5. the epilogue (rl and everything after it: bias, gelu, casts, the store) tiled [b,
 *      M/128, N/128, 128 (threadIdx.x), 128 / 32, 32], rl's 32 vectorized: thread l of
 *      warp w reads lane 32 w + l, 32 columns at a time (tcgen05.ld.32x32b.x32), and
 *      computes and stores them;
 *   6. the tiles inlined at the K-tile loop, the rest as deep as legal (r at the block
 *      tile, rl into the epilogue's 32-column loop: 32 registers, not 128).
 * The lowering (lower/mma_tcgen05.c) turns each 16 of K into one instruction issued by
 * thread 0 and each K tile's instructions into a group committed to an mbarrier all
 * threads wait on before the stage is refilled or the accumulator read.
 * Key decision: correctness and the simplest structure first (one tile shape, one K tile
 * in flight, no TMA, no warp specialization: those are the Hopper schedule's next steps
 * here too); nothing here could be measured (no Blackwell at hand): the kernels are
 * compiled for sm_100a by NVRTC and run on the host backend's emulation. */
#include <stdio.h>

#include "ir/mma.h"
#include "scheduler/matmul_mma.h"

enum { TC_BM = 128, TC_BN = 128, TC_BK = 64, TC_IK = 16, TC_STAGES = 4, TC_THREADS = 128, TC_ATOM = 64,
       TC_EPI = 32 /* columns the epilogue reads at a time */, TC_FILL_BYTES = 16 };

bool sched_matmul_tcgen05_takes(Val *r, const SchedDevice *dev) {
  if (!dev || dev->cc != 100) return false;
  for (int i = 0; i < TV(r)->nlogical; i++) { /* an empty K is D = 0, which no instruction writes */
    int64_t e;
    Val *id = TV(r)->logical[i];
    if (ID(id)->iter_type == CF_ITER_REDUCTION && ir_scalar_const_value(ID(id)->extent, &e) && e == 0) return false;
  }
  return true;
}

void sched_matmul_tcgen05_params(const MmaTiles *t, char *text) {
  char fill[2][64];
  for (int i = 0; i < 2; i++)
    snprintf(fill[i], sizeof fill[i], t->fill[i].why[0] ? "scalar(%s)" : "cp.async16", t->fill[i].why);
  snprintf(text, SCHED_PARAMS_MAX, "tile=%dx%dx%d threads=%d mma=tcgen05.m128n%dk16 acc=tmem smem=operands stages=%d "
           "fill=%s,%s epilogue=tcgen05.ld.x%d", TC_BM, TC_BN, TC_BK, TC_THREADS, TC_BN, TC_STAGES, fill[0], fill[1],
           TC_EPI);
}

/* Step 1 (above); t is updated to the copies, *rl set to the accumulator's register copy. */
static cf_status stage_operands(cf_fusion *f, MmaTiles *t, cf_tv **rl) {
  *rl = sched_matmul_stage_operands(f, t) ? NULL : cf_cache_after(f, ir_tv_handle(t->r));
  return f->status;
}

/* [b?, M, N, K] -> [b?, M/BM, N/BN, K/BK, BM, BN, BK]. */
static void block_tile(cf_fusion *f, cf_tv *r, int b) {
  cf_split(f, r, b + 2, TC_BK);
  cf_split(f, r, b + 1, TC_BN);
  cf_split(f, r, b, TC_BM); /* [b, Mo, BM, No, BN, Ko, BK] */
  cf_reorder(f, r, 2, (int[]){b + 1, b + 3, b + 3, b + 4});
}

/* Step 3 for tile x ([.., BM or BN, BK], one of its first two a broadcast): [rows, cols]
 * along its input's contiguous axis, in the descriptors' canonical layout, over the 128
 * threads. */
static void tile_threads(cf_fusion *f, cf_tv *x, int b, int64_t esz, int mn, const MmaFill *fill) {
  int p = b + 3;
  int64_t cols = TC_BK, vec = TC_FILL_BYTES / esz;
  if (fill->role == 'M' || fill->role == 'N') { /* the M or N tile (at p + mn) last */
    cols = mn ? TC_BN : TC_BM;
    cf_reorder(f, x, mn ? 2 : 3, mn ? (int[]){p + 1, p + 2, p + 2, p + 1} : (int[]){p, p + 2, p + 1, p, p + 2, p + 1});
  }
  if (cols > TC_ATOM) { /* [.., bcast, BK, cols] -> [.., bcast * cols / 64, BK, 64] */
    cf_split(f, x, p + 2, TC_ATOM);
    cf_reorder(f, x, 1, (int[]){p + 2, p + 1});
    cf_merge(f, x, p);
    cols = TC_ATOM;
  }
  cf_merge(f, x, p); /* [.., rows, cols] */
  if (!sched_matmul_tile_swizzle(f, x, p, esz, cols)) cf_merge(f, x, p);
  bool v = !fill->why[0];
  if (v) cf_split(f, x, p, vec);
  cf_split(f, x, p, TC_THREADS); /* [.., iters, x{128}, V?] */
  cf_parallelize(f, x, p + 1, CF_PT_TIDX);
  if (v && !f->status && !sched_vectorize_innermost(f, ir_tv(x)))
    ir_error(f, CF_ERR_INTERNAL, "matmul: the fill of %s was planned as 16-byte vectors, which analysis/ refuses",
             TV(ir_tv(x))->display_name);
}

/* Step 4: r's [BM, BN, BK] -> [K/16, BM, BN, 16] in tensor memory, the last three tiled by
 * cf_mma_tile (one m128n128k16 per 16 of K). */
static void instr_tile(cf_fusion *f, cf_tv *r, int b) {
  int p = b + 3;
  cf_split(f, r, p + 2, TC_IK);              /* [BM, BN, KW, 16] */
  cf_reorder(f, r, 1, (int[]){p + 2, p});    /* [KW, BM, BN, 16] */
  cf_set_memory_type(f, r, CF_MEM_TENSOR);
  cf_set_allocation_to_loop(f, r, true);
  cf_set_tmem_dim_sep_pos(f, r, -3);         /* lanes: [.., BM); columns: [BN, 16) */
  cf_mma_tile(f, r, p + 1, CF_MMA_TCGEN05_M128NK16);
}

/* Step 5: rl's [b?, Mo, No, BM, BN] -> [.., BM (threadIdx.x), BN/32, 32 (vectorized)] and
 * the epilogue (every computed tensor after the product: eset) alike. */
static void epilogue(cf_fusion *f, cf_tv *rl, cf_tv **eset, int ne, int b) {
  int p = b + 2;
  cf_split(f, rl, p + 1, TC_EPI);
  if (!f->status && ne) cf_propagate_transforms_to(f, rl, -1, ne, eset);
  static const cf_parallel_type blocks[] = {CF_PT_BIDZ, CF_PT_BIDY, CF_PT_BIDX};
  for (int i = 0; i <= ne && !f->status; i++) {
    cf_tv *t = i < ne ? eset[i] : rl;
    for (int k = 1 - b; k < 3; k++) cf_parallelize(f, t, k - (1 - b), blocks[k]);
    cf_parallelize(f, t, p, CF_PT_TIDX);
  }
  if (!f->status) cf_parallelize(f, rl, p + 2, CF_PT_VECTORIZE);
}

/* The tensors after the product: every computed tensor but r, the tiles, their prologue,
 * the casts and the mul (those take r's transforms: set[0..2]). */
static int epilogue_set(Expr **ex, int n, const MmaTiles *t, cf_tv *rl, cf_tv **out) {
  int k = 0;
  for (int i = 0; i < n; i++) {
    Val *v = ex[i]->out[0];
    if (v != t->r && v != ir_tv(rl) && v != t->ca && v != t->cb && v != t->mul && !sched_matmul_in_prologue(t, v))
      out[k++] = ir_tv_handle(v);
  }
  return k;
}

/* Step 6: the tiles at the K-tile loop, the rest as deep as legal. */
static void inline_all(cf_fusion *f, Expr **ex, int n, const MmaTiles *t, int tile_pos) {
  for (int i = n - 1; i >= 0 && !f->status; i--) {
    Val *v = ex[i]->out[0];
    if (v == t->x || v == t->y) cf_inline_at(f, ir_tv_handle(v), tile_pos);
    else cf_inline_at_best_effort(f, ir_tv_handle(v), TV(v)->nloop);
  }
}

/* Steps 2 to 4: block tile, tiles, instruction tile and the product's transforms. */
static void tile_product(cf_fusion *f, MmaTiles *t, cf_tv **set) {
  cf_tv *r = ir_tv_handle(t->r);
  int b = t->batch;
  block_tile(f, r, b);
  cf_propagate_transforms(f, r);
  static const cf_parallel_type blocks[] = {CF_PT_BIDZ, CF_PT_BIDY, CF_PT_BIDX};
  for (int k = 1 - b; k < 3; k++) cf_parallelize(f, r, k - (1 - b), blocks[k]);
  cf_parallelize_all_like(f, r, 3, blocks);
  for (int i = 0; i < 2 && !f->status; i++) {
    cf_tv *x = ir_tv_handle(i ? t->y : t->x);
    tile_threads(f, x, b, (int64_t)cf_dtype_size(t->x->dtype), i, &t->fill[i]);
    cf_set_memory_type(f, x, CF_MEM_SHARED);
    sched_matmul_tile_producers(f, ir_tv(x), set);
  }
  if (!f->status) instr_tile(f, r, b);
  cf_tv *product[3] = {ir_tv_handle(t->ca), ir_tv_handle(t->cb), ir_tv_handle(t->mul)};
  if (!f->status) cf_propagate_transforms_to(f, r, -1, 3, product);
}

cf_status sched_matmul_tcgen05(cf_fusion *f, MmaTiles *t) {
  cf_tv *rl = NULL;
  if (stage_operands(f, t, &rl)) return f->status;
  Arena *a;
  int n;
  cf_tv **set;
  Expr **ex = sched_matmul_exprs(f, &a, &n, &set);
  if (!ex) return f->status;
  tile_product(f, t, set);
  int ne = epilogue_set(ex, n, t, rl, set);
  if (!f->status) epilogue(f, rl, set, ne, t->batch);
  if (!f->status) inline_all(f, ex, n, t, t->batch + 3);
  for (int i = 0; i < 2 && !f->status; i++)
    cf_circular_buffer_prefetch(f, ir_tv_handle(i ? t->y : t->x), TC_STAGES, TC_STAGES - 1);
  arena_destroy(a);
  return f->status;
}
