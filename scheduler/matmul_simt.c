/* scheduler/matmul_simt.c: the matmul row's SIMT schedule, for products the tensor cores
 * do not take (float and double operands: torch's float matmul is cuBLAS's SIMT path, no
 * TF32), a client of the public scheduling calls below scheduler/matmul_sched.c.
 *   1. an output r gets a local cache (cf_cache_before) that the sum accumulates into: the
 *      accumulator must be the thread's registers, not the global output read and written
 *      at every K step;
 *   2. r, [b?, M, N, K], is tiled [b, M/128, N/128, K/16, 128, 128, 16] and that
 *      propagated to every tensor (blockIdx.z, .y, .x over batch, M tiles, N tiles);
 *   3. the operand tiles A (128 x 16) and B (16 x 128) live in shared memory, computed at
 *      the K-tile loop and filled by all 256 threads (before: the 16 threads of the axis a
 *      tile does not broadcast wrote it, 64 elements each). Stored along the input's
 *      contiguous axis where the reads allow it: A [128, 16] when K-contiguous (A [M, K],
 *      linear's x) else [16, 128]; B [16, 128] when N-contiguous (matmul's [K, N]) else
 *      [128, 16] with its rows XOR-swizzled element by element (linear's w [N, K]); a tile
 *      that is a contiguous copy of its input, along its contiguous extent a constant
 *      multiple of 4 floats, is filled by 16-byte vectors (cp.async); both are
 *      double-buffered (cf_circular_buffer, 2 stages: 32 KB for float);
 *   4. r's inner tile becomes [16 (k), threadIdx.y{16}, threadIdx.x{16}, 8, 8]: thread
 *      (ty, tx) accumulates rows ty + 16 i and columns tx + 16 j, the register loops
 *      unrolled so that NVCC keeps the 64 accumulators in registers and loads each A and B
 *      element of a k step once (the k loop stays a loop: unrolled too, NVRTC took ~10 s
 *      a kernel); the mul and the epilogue take the same transforms, so the
 *      epilogue runs on the registers and a warp's stores are 16 consecutive columns;
 *   5. the tiles inlined at the K-tile loop, their producers into them, the rest as deep
 *      as legal.
 * Key decision: strided register tiles (ty + 16 i, not 8 ty + i) rather than vector
 * loads from shared memory: a warp (16 tx by 2 ty) then reads 2 consecutive rows of A and
 * 16 consecutive columns of B at each k, conflict-free in [.., BK] and [BK, ..] tiles
 * alike once B's K-major rows are swizzled; each thread loads 16 words for 64 FMAs. */
#include "scheduler/matmul_simt.h"

#include "scheduler/matmul_mma.h"
#include "scheduler/registry.h"

enum { ST_TY = 16, ST_TX = 16, ST_TM = 8, ST_TN = 8, ST_BK = 16, ST_STAGES = 2 };
enum { ST_BM = ST_TY * ST_TM, ST_BN = ST_TX * ST_TN, ST_THREADS = ST_TY * ST_TX };
enum { ST_FILL_BYTES = 16, ST_BANK_BYTES = 128, ST_READ_ROWS = 16 };

/* Whether operand `op` (is_b: the second, along N) is filled by 16-byte vectors, and how
 * its tile is stored. */
static bool fill_of(Val *r, Val *op, bool is_b, SimtFill *o) {
  MmaOperandFill c;
  *o = (SimtFill){0};
  if (!sched_matmul_operand_fill(r->fusion, op, &c)) return false;
  Val *x = c.x;
  int in = an_innermost_axis(x);
  char role = c.contig < 0 ? '?' : ID(TV(r)->logical[c.contig])->iter_type == CF_ITER_REDUCTION ? 'K' : is_b ? 'N' : 'M';
  int64_t e, vec = ST_FILL_BYTES / (int64_t)cf_dtype_size(x->dtype);
  o->kmajor = is_b ? role == 'K' : role != 'M';
  o->swizzle = is_b && o->kmajor;
  if (o->swizzle)
    snprintf(o->why, sizeof o->why, "swizzled");
  else if (c.permuted || c.ncasts) /* the tile is the operand: a copy without casts */
    snprintf(o->why, sizeof o->why, "a %s of %s", c.permuted ? "permute" : "cast", TV(x)->display_name);
  else if (c.contig < 0 || TV(x)->has_strides || TV(x)->contiguity[in] != 1)
    snprintf(o->why, sizeof o->why, "%s strided", TV(x)->display_name);
  else if (!ir_scalar_const_value(ID(TV(x)->logical[in])->extent, &e))
    snprintf(o->why, sizeof o->why, "%c symbolic", role);
  else if (e % vec)
    snprintf(o->why, sizeof o->why, "%c=%lld", role, (long long)e);
  else
    o->vec = (int)vec;
  return true;
}

bool sched_matmul_simt_plan(Val *r, bool batch, SimtTiles *t) {
  Expr *mul = r->def->in[0]->def;
  *t = (SimtTiles){.r = r, .tile = {mul->in[0], mul->in[1]}, .batch = batch};
  return fill_of(r, mul->in[0], false, &t->fill[0]) && fill_of(r, mul->in[1], true, &t->fill[1]);
}

void sched_matmul_simt_params(const SimtTiles *t, char *text) {
  char fill[2][64];
  for (int i = 0; i < 2; i++) {
    const SimtFill *o = &t->fill[i];
    snprintf(fill[i], sizeof fill[i], o->vec ? "cp.async16" : o->swizzle ? "%s" : "scalar(%s)", o->why);
  }
  snprintf(text, SCHED_PARAMS_MAX, "tile=%dx%dx%d threads=%dx%d regs=%dx%d smem=operands stages=%d fill=%s,%s", ST_BM,
           ST_BN, ST_BK, ST_TY, ST_TX, ST_TM, ST_TN, ST_STAGES, fill[0], fill[1]);
}

/* [b?, M, N, K] -> [b?, M/BM, N/BN, K/BK, BM, BN, BK]. */
static void block_tile(cf_fusion *f, cf_tv *r, int b) {
  cf_split(f, r, b + 2, ST_BK);
  cf_split(f, r, b + 1, ST_BN);
  cf_split(f, r, b, ST_BM);
  cf_reorder(f, r, 2, (int[]){b + 1, b + 3, b + 3, b + 4});
}

/* r's [BM, BN, BK] at p -> [BK, threadIdx.y{16}, threadIdx.x{16}, BM/16,
 * BN/16 (unrolled)]: row ty + 16 i, column tx + 16 j. */
static void thread_tile(cf_fusion *f, cf_tv *r, int p) {
  cf_split(f, r, p + 1, ST_TX); /* [BM, tn, tx, BK] */
  cf_split(f, r, p, ST_TY);     /* [tm, ty, tn, tx, BK] */
  cf_reorder(f, r, 4, (int[]){p, p + 3, p + 2, p + 4, p + 3, p + 2, p + 4, p}); /* [BK, ty, tx, tm, tn] */
  static const cf_parallel_type pts[5] = {CF_PT_SERIAL, CF_PT_TIDY, CF_PT_TIDX, CF_PT_UNROLL, CF_PT_UNROLL};
  for (int i = 0; i < 5; i++) cf_parallelize(f, r, p + i, pts[i]);
}

/* The K-major tile's [rows, BK] at p -> one axis, its storage, with k's low bits XORed by
 * the row's bits above those that share a 128-byte bank line: the ST_READ_ROWS
 * consecutive rows a warp reads at one k then fall on distinct banks. Element by element,
 * so the fill is scalar (16-byte chunks XORed would leave 2 rows on a bank). */
static void swizzle_rows(cf_fusion *f, cf_tv *x, int p, int64_t esz) {
  int64_t line = ST_BANK_BYTES / esz, per_line = line > ST_BK ? line / ST_BK : 1, d = ST_READ_ROWS / per_line;
  if (d > ST_BK) d = ST_BK;
  cf_split(f, x, p + 1, d);                          /* [rows, BK/d, d] */
  if (per_line > 1) cf_split(f, x, p, per_line);     /* [rows/l, l, BK/d, d] */
  cf_split(f, x, p, d);                              /* [rows/(l d), d, l?, BK/d, d] */
  int n = per_line > 1 ? 5 : 4;
  cf_swizzle_xor(f, x, p + 1, p + n - 1);
  for (int i = 1; i < n; i++) cf_merge(f, x, p);
}

/* Axes p.. of x serial again: the product's unrolled k (parallelize_all_like maps the
 * tiles' K onto it) is merged into a tile's storage. */
static void serial_from(cf_fusion *f, cf_tv *x, int p) {
  for (int i = p; i < TV(ir_tv(x))->nloop; i++) cf_parallelize(f, x, i, CF_PT_SERIAL);
}

/* A tile's [BM, BN, BK] at p (one of the first two a broadcast) -> its storage, [rows,
 * BK] or [BK, rows], as one axis, then over the block's threads: [iters, threadIdx.y,
 * threadIdx.x] or [iters, y, x, V] with 16-byte vectors. */
static void tile_fill(cf_fusion *f, cf_tv *x, int p, const SimtFill *o, int64_t esz) {
  serial_from(f, x, p);
  cf_merge(f, x, p); /* [rows, BK] */
  if (!o->kmajor) cf_reorder(f, x, 2, (int[]){p, p + 1, p + 1, p});
  if (o->swizzle) swizzle_rows(f, x, p, esz);
  else cf_merge(f, x, p);
  if (o->vec) cf_split(f, x, p, o->vec);
  cf_split(f, x, p, ST_THREADS);
  cf_split(f, x, p + 1, ST_TX);
  cf_parallelize(f, x, p + 1, CF_PT_TIDY);
  cf_parallelize(f, x, p + 2, CF_PT_TIDX);
  cf_set_memory_type(f, x, CF_MEM_SHARED);
  if (o->vec && !f->status && !sched_vectorize_innermost(f, ir_tv(x)))
    ir_error(f, CF_ERR_INTERNAL, "matmul: the fill of %s was planned as 16-byte vectors, which analysis/ refuses",
             TV(ir_tv(x))->display_name);
}

/* The tile's producers computed in the kernel (the rest of its chain: a broadcast before a
 * cast, a permute) take its transforms and threads, so they are inlined into its writes. */
static void tile_producers(cf_fusion *f, Val *x, cf_tv **set) {
  int n = 0;
  for (Val *w = x->def->in[0]; w->def && !ir_tv_is_input(f, w); w = w->def->in[0]) {
    set[n++] = ir_tv_handle(w);
    serial_from(f, ir_tv_handle(w), 0);
  }
  static const cf_parallel_type threads[] = {CF_PT_TIDY, CF_PT_TIDX};
  if (n && !cf_propagate_transforms_to(f, ir_tv_handle(x), -1, n, set)) cf_parallelize_all_like(f, ir_tv_handle(x), 2, threads);
}

/* The tiles at the K-tile loop, the rest as deep as legal, unrolled loops included (the
 * best-effort inlining stops at them: the product would be a 64-element array of its own
 * beside the sum, and each epilogue op too). */
static void inline_all(cf_fusion *f, Expr **ex, int n, const SimtTiles *t) {
  IdMap *m = an_idmap_build(f, true);
  if (!m) {
    ir_error(f, CF_ERR_OUT_OF_MEMORY, "matmul: out of memory");
    return;
  }
  for (int i = n - 1; i >= 0 && !f->status; i--) {
    Val *v = ex[i]->out[0];
    bool tile = v == t->tile[0] || v == t->tile[1];
    cf_inline_at(f, ir_tv_handle(v), tile ? t->batch + 3 : sched_max_inline_pos(m, v, false));
  }
  an_idmap_free(m);
}

/* r's inner schedule goes to the mul and the epilogue: every computed tensor but r and
 * the tiles' chains (set holds room for every tensor). Before the tiles are laid out: their
 * merges of M and N with broadcasts would map r's thread axes onto each other. */
static void inner_schedule(cf_fusion *f, Expr **ex, int n, const SimtTiles *t, cf_tv **set) {
  int k = 0;
  for (int i = 0; i < n; i++) {
    Val *v = ex[i]->out[0];
    bool tile = false;
    for (int j = 0; j < 2; j++)
      for (Val *w = t->tile[j]; w && !tile; w = w->def && w->def->nin == 1 ? w->def->in[0] : NULL) tile = w == v;
    if (v != t->r && !tile) set[k++] = ir_tv_handle(v);
  }
  static const cf_parallel_type inner[] = {CF_PT_TIDY, CF_PT_TIDX, CF_PT_UNROLL};
  if (k && !cf_propagate_transforms_to(f, ir_tv_handle(t->r), -1, k, set))
    cf_parallelize_all_like(f, ir_tv_handle(t->r), 3, inner);
}

cf_status sched_matmul_simt(cf_fusion *f, SimtTiles *t) {
  cf_tv *c = ir_tv_is_output(f, t->r) ? cf_cache_before(f, ir_tv_handle(t->r)) : NULL;
  if (c) t->r = ir_tv(c);
  Arena *a = f->status ? NULL : arena_create();
  int n, b = t->batch;
  Expr **ex = a ? ir_fusion_tensor_exprs_in(a, f, &n) : NULL;
  cf_tv **set = ex ? ARENA_ARRAY(a, cf_tv *, n + 1) : NULL;
  if (!set) {
    arena_destroy(a);
    return f->status ? f->status : ir_error(f, CF_ERR_OUT_OF_MEMORY, "matmul: out of memory");
  }
  cf_tv *r = ir_tv_handle(t->r);
  block_tile(f, r, b);
  cf_propagate_transforms(f, r);
  static const cf_parallel_type blocks[] = {CF_PT_BIDZ, CF_PT_BIDY, CF_PT_BIDX};
  for (int k = 1 - b; k < 3; k++) cf_parallelize(f, r, k - (1 - b), blocks[k]);
  cf_parallelize_all_like(f, r, 3, blocks);
  thread_tile(f, r, b + 3);
  if (!f->status) inner_schedule(f, ex, n, t, set);
  for (int i = 0; i < 2 && !f->status; i++) {
    tile_fill(f, ir_tv_handle(t->tile[i]), b + 3, &t->fill[i], (int64_t)cf_dtype_size(t->tile[i]->dtype));
    tile_producers(f, t->tile[i], set);
  }
  inline_all(f, ex, n, t);
  for (int i = 0; i < 2 && !f->status; i++) cf_circular_buffer(f, ir_tv_handle(t->tile[i]), ST_STAGES);
  arena_destroy(a);
  return f->status;
}
