/* scheduler/outer_persistent_sched.c: the outer persistent normalization scheduler
 * (sched_outer_persistent_heuristic): its checks and its parameters
 * (sched_outer_persistent_plan); outer_apply.c schedules a copy with them. It takes batch
 * norm and its kin: fusions whose reductions all reduce the same OUTERMOST axes of one N-D
 * shape (x[N, C], or [N, H, W, C] reduced over N, H, W: per-column statistics) and whose
 * results are broadcast back over those axes and combined elementwise with the columns
 * they came from, e.g. y = (x - mean_N(x)) * rsqrt(mean_N((x - mean)^2) + eps) * w[C] + b[C].
 *
 * Accepted (outer_checks, run by scheduler/persistent.c): elementwise ops, broadcasts and
 * at least one reduction (sums, Welford); every reduction reduces the outermost k axes of
 * a rank-N tensor (k < N: some column is kept), all with the same extents (one exact-map
 * class per axis); every broadcast has rank N and puts back exactly the k outer axes
 * ([C] -> [1, C]: a reduced result or a column parameter such as a weight); every output
 * has the full shape or the reduced one, with or without the reduced axes kept as
 * broadcast axes (the batch statistics); one input has the full shape, without broadcast
 * axes; at most SCHED_MAX_PERSISTENT_REDUCTIONS reductions. Columns of any length: where
 * registers cannot hold them, each pass reads the rows again. Anything else is refused
 * with the reason. It comes after the reduction and inner persistent schedulers in the
 * table: a plain column sum stays the reduction scheduler's, softmax and layer norm the
 * inner one's (both refuse outer-reduced normalizations).
 *
 * Parameters (plan_*), for R = the product of the reduced extents (rows of a column), I =
 * the product of the kept ones (columns), the call's device and the bytes kept per
 * element (buffers.c: as computed, or projected to the inputs when smaller, recompute.c);
 * E(T, b) = elements of b bytes a thread of a block of T keeps in registers
 * (sched_reg_elems: the registers an SM gives each thread, less SCHED_REG_RESERVE):
 *   vector width v: 16 bytes over the widest element of the cached inputs and the outputs,
 *     halved until it divides a constant innermost extent and the call's pointers are
 *     aligned; 1 for a symbolic innermost extent or a non-contiguous input;
 *   columns on threadIdx.x: tx = the smallest power of two covering I/v, at most
 *     OUTER_BLOCK_COLUMNS/v (a block reads rows of 32 consecutive elements: coalesced);
 *     blockIdx.x takes Io = ceilDiv(I/v, tx) column groups; rows on threadIdx.y: ty0 =
 *     OUTER_TARGET_THREADS / tx;
 *   1. grid (Io < SMs, so column groups alone leave SMs idle, and a constant R):
 *      blocks of rows on blockIdx.y, gy of them, each thread keeping p rows:
 *      for k = the blocks per SM threads and shared memory allow, down to 1: gy =
 *      min(k x SMs / Io, sched_coop_block_cap (the resident threads: the host backend's
 *      65536, a GPU's all; at most SCHED_GRID_MAX_GROUP_BLOCKS a column group),
 *      R / (ty0 x OUTER_GRID_MIN_ROWS)) (at least 2),
 *      p = ceilDiv(ceilDiv(R, ty0), gy); taken when p x v <= E(tx x ty0, b) and registers let k
 *      such blocks share an SM (every block resident: a cooperative launch); the
 *      statistics are grid all-reduces (a grid sync each), the rows stay in registers;
 *      else grid multipass: the same grid at the blocks per SM of an unbuffered kernel,
 *      every tensor recomputed per pass from the inputs (one read per pass);
 *   2. block (otherwise): a block per column group; p = min(ceilDiv(R, ty0),
 *      OUTER_MAX_PER_THREAD / v), ty = ceilDiv(R, p) (at most max_threads / tx, then p
 *      grows), taken when p x v <= E(tx x ty, b); else block multipass: ty = ty0, p =
 *      ceilDiv(R, ty) passes' chunks, every tensor recomputed per pass.
 *   3. wide rows (plan_wide, on a block plan in registers whose blocks read rows of 128
 *      bytes or fewer with 16-byte vectors, the one cached input of the full shape the only
 *      buffer): blocks reading rows of OUTER_WIDE_ROW_BYTES (tx = 256 / 16), at most
 *      OUTER_WIDE_MAX_THREADS threads, the same p; taken when the columns give at least
 *      OUTER_WIDE_MIN_WAVES waves of OUTER_WIDE_BLOCKS_PER_SM blocks an SM, registers alone
 *      would not let that many blocks share an SM, and keeping p / 2 of each thread's rows
 *      in shared memory (cf_spill_to_shared: filled by cp.async, lower/shared_spill.c) does;
 *      the computed tensors are recomputed from that cache (buffers=inputs), and the kernel
 *      asks for the blocks an SM (cf_fusion.blocks_per_sm). Batch norm 512 x 65536 float on
 *      an H200 (queued): 76.9-77.1 -> 75.2-75.6 us, a copy of its bytes 67.8
 *      (bench/results/bn_wide_h200_20261129/); rows of 128 bytes lose 6-12% to the copy in
 *      any whole-column tiling (bench/results/bn_ceiling_h200_20261129/).
 *   A symbolic R (a fusion scheduled for the call's sizes but not made constant) takes the
 *   block forms only: registers split outer by p (constant register arrays, ty =
 *   ceilDiv(R, p) at run time), multipass split by ty.
 * Tuned on an H200 (bench/define_and_run.c's batch norm, 512 x 65536 float; torch.compile
 * 1758 GB/s, the device copy 4213), target threads / elements per thread / block columns:
 * 512/16/32 (8x128 threads of 4 rows) 1251 GB/s; 256/64/32 (8x32 of 16) 2901; 128/128/32
 * (8x16 of 32) 3321; 256/32/64 1602; 64/64/128 1418. Few rows of threads, each folding
 * many rows, make the threadIdx.y all-reduce short and keep loads in flight. The grid and
 * multipass forms are not measured yet (bench/sweep). */
#include "scheduler/outer.h"

enum {
  OUTER_WIDE_ROW_BYTES = 256,  /* rule 3: bytes of a row one block reads */
  OUTER_WIDE_MAX_THREADS = 256, /* rule 3: at most this many threads a block */
  OUTER_WIDE_MIN_WAVES = 2,     /* rule 3: waves of such blocks the columns give at least */
  OUTER_TARGET_THREADS = 128, /* preferred block size (tuned below) */
  OUTER_MAX_PER_THREAD = 128, /* preferred elements of a column per thread (tuned below) */
  OUTER_BLOCK_COLUMNS = 32,   /* elements of a row one block reads (threadIdx.x x vector) */
  OUTER_WORKSPACE_BYTES = 8,  /* shared memory per thread of a block all-reduce (double) */
  OUTER_GRID_MIN_ROWS = 8,    /* grid: rows each thread folds at least (amortizing the syncs) */
};

#define WHY(...) (snprintf(why, SCHED_WHY_MAX, "outer_persistent: " __VA_ARGS__), false)

/* The number of reduced axes of a reduction output, all outermost; -1 (why set) if not. */
static int outer_reduced_axes(Val *out, char *why) {
  int nr = 0, rank = TV(out)->nlogical;
  bool kept = false;
  for (int x = 0; x < rank; x++) {
    bool r = ID(TV(out)->logical[x])->iter_type == CF_ITER_REDUCTION;
    if (kept && r) {
      (void)WHY("%s reduces an axis after a kept one (only outermost axes)", TV(out)->display_name);
      return -1;
    }
    kept |= !r;
    nr += r;
  }
  if (nr == rank) {
    (void)WHY("%s reduces every axis (no column is kept)", TV(out)->display_name);
    return -1;
  }
  return nr;
}

/* A broadcast puts back exactly the reduced outer axes. */
static bool check_broadcast(const Expr *e, const void *plan, char *why) {
  const OuterPlan *p = plan;
  const bool *b = e->attr.broadcast.is_broadcast;
  bool ok = e->attr.broadcast.rank == p->r.rank;
  for (int x = 0; x < p->r.rank && ok; x++) ok = b[x] == (x < p->r.nred);
  return ok ? true
            : WHY("%s broadcasts other axes than the %d reduced outer ones", TV(e->out[0])->display_name, p->r.nred);
}

/* The full shape is the first reduction's (axis by axis in its exact classes), the
 * columns' shape its kept axes in order (a column parameter, or a reduced result without
 * its reduction axes). An input of the full shape without broadcast axes; outputs of the
 * full shape or the reduced one; inputs of either shape are cached after (read once,
 * with vectors). What persists, and what recomputing it costs (buffers.c, recompute.c). */
static bool check_shapes(cf_fusion *f, Arena *a, const IdMap *m, OuterPlan *p, char *why) {
  Val *ref = p->r.reds[0];
  if (p->r.nreds > SCHED_MAX_PERSISTENT_REDUCTIONS)
    return WHY("the fusion has %d reductions, more than the %d one kernel plans for", p->r.nreds,
               SCHED_MAX_PERSISTENT_REDUCTIONS);
  int ncols = p->r.rank - p->r.nred, bad;
  p->full_index = sched_input_like(f, m, ref);
  if (p->full_index < 0) return WHY("no input has the full shape");
  p->full_input = f->inputs.items[p->full_index];
  if (sched_has_broadcast(p->full_input))
    return WHY("%s has a broadcast axis (a constant extent of 1)", TV(p->full_input)->display_name);
  p->full_out = sched_full_outputs(f, a, m, ref, sched_axis_range(p->r.nred, ncols), &bad);
  if (!p->full_out && bad >= 0)
    return WHY("output %s has neither the full shape nor the reduced one", TV(f->outputs.items[bad])->display_name);
  p->cached = p->full_out ? sched_cached_inputs(f, a, m, ref, sched_axis_range(p->r.nred, ncols)) : NULL;
  p->full_in = ARENA_ARRAY(a, bool, f->inputs.len);
  bool *row = sched_row_tensors(f, a, m, ref, p->r.reduced);
  if (!p->cached || !p->full_in || !row) return WHY("out of memory");
  for (int i = 0; i < f->inputs.len; i++) p->full_in[i] = sched_same_shape(m, ref, f->inputs.items[i]);
  if (!sched_buffers(f, a, &p->r, row, p->full_in, p->cached, &p->buf)) return WHY("out of memory");
  p->clones = sched_recompute_count(f, a, row, SCHED_CLONE_CACHES, NULL);
  return p->clones >= 0 ? true : WHY("out of memory");
}

/* R and I: the call's sizes of the full input, else the fusion's constants. */
static bool read_sizes(const SchedCall *call, OuterPlan *p, char *why) {
  bool have_call = call && call->ninputs > p->full_index && call->inputs;
  p->rows = p->cols = 1;
  p->symbolic_rows = p->symbolic_inner = false;
  for (int x = 0; x < p->r.rank; x++) {
    int64_t e;
    bool c = ir_scalar_const_value(ID(TV(p->full_input)->logical[x])->extent, &e);
    if (have_call) e = call->inputs[p->full_index]->shape[x];
    else if (!c) return WHY("the sizes of %s are symbolic and the call gives none", TV(p->full_input)->display_name);
    if (x < p->r.nred) p->rows *= e, p->symbolic_rows |= !c;
    else p->cols *= e, p->inner = e, p->symbolic_inner = !c;
  }
  if (p->rows < 1 || p->cols < 1) return WHY("%s is empty", TV(p->full_input)->display_name);
  return true;
}

/* ---- parameters (the rules of the file's comment) ------------------------------------------ */

static int64_t workspace(const OuterPlan *p, int64_t threads) {
  return OUTER_WORKSPACE_BYTES * threads * p->r.nreds + 16 * (int64_t)p->r.nreds;
}

/* tx, the column groups and the rows' threads. */
static int64_t plan_columns(const SchedDevice *d, OuterPlan *p, int64_t *tymax) {
  SchedOuterParams *q = &p->q;
  int64_t vcols = ck_ceil_div(p->cols, q->vec), max_tx = OUTER_BLOCK_COLUMNS / q->vec;
  q->tx = 1;
  while (q->tx < vcols && q->tx < max_tx) q->tx *= 2;
  *tymax = d->max_threads_per_block / q->tx;
  q->ty = OUTER_TARGET_THREADS / q->tx > 1 ? OUTER_TARGET_THREADS / q->tx : 1;
  q->grid_y = 1;
  return ck_ceil_div(vcols, q->tx);
}

/* gy and p for k blocks per SM (rule 1); false when fewer than 2 blocks of rows. */
static bool grid_rows(const SchedDevice *d, OuterPlan *p, int64_t io, int64_t k) {
  SchedOuterParams *q = &p->q;
  int64_t gy = k * d->sm_count / io, cap = sched_coop_block_cap(d, io * q->tx * q->ty);
  int64_t most = ck_ceil_div(p->rows, q->ty * OUTER_GRID_MIN_ROWS);
  if (gy > cap) gy = cap;
  if (gy > most) gy = most;
  if (gy < 2) return false;
  q->persist = ck_ceil_div(ck_ceil_div(p->rows, q->ty), gy);
  q->grid_y = gy;
  return true;
}

/* Rule 1: blocks of rows over the grid, in registers or multipass. */
static bool plan_grid(const SchedDevice *d, OuterPlan *p, int64_t io, int64_t bytes) {
  SchedOuterParams *q = &p->q;
  int64_t threads = q->tx * q->ty, ws = workspace(p, threads);
  for (int64_t k = sched_blocks_per_sm(d, threads, SCHED_REG_RESERVE, ws); k >= 1; k--) {
    if (!grid_rows(d, p, io, k)) return false;
    /* every persisted element a whole 32-bit register (16-bit values are not packed: at two
     * per register, 100352 x 64 bfloat16 rows planned 4 blocks per SM where the kernel fit 3,
     * and the cooperative launch was refused) */
    int64_t regs = q->persist * q->vec * ((bytes + 3) / 4) + SCHED_REG_RESERVE;
    if (q->persist * q->vec <= sched_reg_elems(d, threads, bytes) && sched_blocks_per_sm(d, threads, regs, ws) >= k) {
      q->mode = SCHED_OUTER_GRID;
      return true;
    }
  }
  if (p->clones > SCHED_RECOMPUTE_MAX_OPS) return false;
  q->mode = SCHED_OUTER_GRID_MULTIPASS;
  q->project = false;
  return grid_rows(d, p, io, sched_blocks_per_sm(d, threads, SCHED_REG_RESERVE, ws));
}

/* Rule 2: a block per column group, in registers or multipass. */
static bool plan_block(const SchedDevice *d, OuterPlan *p, int64_t tymax, int64_t bytes, char *why) {
  SchedOuterParams *q = &p->q;
  int64_t cap = OUTER_MAX_PER_THREAD / q->vec > 1 ? OUTER_MAX_PER_THREAD / q->vec : 1, ty0 = q->ty;
  q->persist = ck_ceil_div(p->rows, ty0);
  if (q->persist > cap) q->persist = cap;
  q->ty = ck_ceil_div(p->rows, q->persist);
  if (q->ty > tymax) q->ty = tymax, q->persist = ck_ceil_div(p->rows, q->ty);
  if (!p->symbolic_rows) q->persist = ck_ceil_div(p->rows, q->ty);
  q->mode = SCHED_OUTER_BLOCK;
  q->symbolic_rows = p->symbolic_rows;
  if (bytes == 0 || q->persist * q->vec <= sched_reg_elems(d, q->tx * q->ty, bytes)) return true;
  if (p->clones > SCHED_RECOMPUTE_MAX_OPS)
    return WHY("columns of %s hold %lld elements over the reduced axes, more than registers keep, and reading them "
               "again for each pass would recompute more than %d ops",
               TV(p->full_input)->display_name, (long long)p->rows, SCHED_RECOMPUTE_MAX_OPS);
  q->mode = SCHED_OUTER_BLOCK_MULTIPASS;
  q->symbolic_rows = q->project = false;
  q->ty = ty0 < p->rows ? ty0 : p->rows;
  q->persist = ck_ceil_div(p->rows, q->ty);
  return true;
}

/* The one cached input of the full shape, or -1 (several, or none). */
static int lone_full_cache(const cf_fusion *f, const OuterPlan *p) {
  int found = -1;
  for (int i = 0; i < f->inputs.len; i++)
    if (p->cached[i] && p->full_in[i]) {
      if (found >= 0) return -1;
      found = i;
    }
  return found;
}

/* Rule 3 (wide rows), on a block plan in registers: the tile of a block reading rows of
 * OUTER_WIDE_ROW_BYTES, half of each thread's rows in shared memory (cp.async), when that
 * lets OUTER_WIDE_BLOCKS_PER_SM blocks share an SM and registers alone would not. */
static void plan_wide(const cf_fusion *f, const SchedDevice *d, OuterPlan *p) {
  SchedOuterParams *q = &p->q;
  int in = lone_full_cache(f, p);
  if (q->mode != SCHED_OUTER_BLOCK || p->symbolic_rows || in < 0 || q->persist < 2 || q->persist % 2) return;
  int64_t elem = (int64_t)cf_dtype_size(((Val *)f->inputs.items[in])->dtype), words = (elem + 3) / 4;
  if (q->vec * elem != 16 || q->tx != OUTER_BLOCK_COLUMNS / q->vec) return;
  int64_t tx = OUTER_WIDE_ROW_BYTES / 16, threads = tx * q->ty, kept = q->persist / 2, k = OUTER_WIDE_BLOCKS_PER_SM;
  int64_t blocks = ck_ceil_div(ck_ceil_div(p->cols, q->vec), tx);
  if (tx <= q->tx || threads > OUTER_WIDE_MAX_THREADS || blocks < OUTER_WIDE_MIN_WAVES * k * d->sm_count) return;
  int64_t whole = q->persist * q->vec * words + SCHED_REG_RESERVE, half = kept * q->vec * words + SCHED_REG_RESERVE;
  int64_t smem = (q->persist - kept) * q->vec * elem * threads + workspace(p, threads);
  if (sched_blocks_per_sm(d, threads, whole, workspace(p, threads)) >= k || sched_blocks_per_sm(d, threads, half, smem) < k)
    return;
  q->tx = tx;
  q->spill = q->persist - kept;
  q->project = true;
}

static bool plan_params(const cf_fusion *f, const SchedCall *call, OuterPlan *p, char *why) {
  const SchedDevice *d = call && call->dev ? call->dev : sched_device_default();
  SchedOuterParams *q = &p->q;
  int64_t tymax, io = plan_columns(d, p, &tymax);
  q->project = p->buf.projected < p->buf.live;
  int64_t bytes = q->project ? p->buf.projected : p->buf.live;
  if (!p->symbolic_rows && io < d->sm_count && plan_grid(d, p, io, bytes)) return true;
  q->project = p->buf.projected < p->buf.live;
  q->ty = OUTER_TARGET_THREADS / q->tx > 1 ? OUTER_TARGET_THREADS / q->tx : 1;
  q->grid_y = 1;
  if (!plan_block(d, p, tymax, bytes, why)) return false;
  plan_wide(f, d, p);
  return true;
}

/* The shapes and sizes, then the parameters. */
static bool outer_shapes(cf_fusion *f, Arena *a, const IdMap *m, const SchedCall *call, void *plan, char *why) {
  OuterPlan *p = plan;
  if (!check_shapes(f, a, m, p, why) || !read_sizes(call, p, why)) return false;
  p->q.vec = p->symbolic_inner ? 1 : sched_vector_width(f, call, p->cached, p->inner);
  return plan_params(f, call, p, why);
}

static const SchedPersistent outer_checks = {"outer_persistent", "columns", outer_reduced_axes, check_broadcast,
                                              outer_shapes};

Arena *sched_outer_begin(cf_fusion *f, const SchedCall *call, OuterPlan *p) {
  return sched_persistent_begin(&outer_checks, f, call, p);
}

bool sched_outer_persistent_plan(cf_fusion *f, const SchedCall *call, SchedOuterParams *q, char *why) {
  OuterPlan p = {0};
  if (!sched_persistent_accepts(&outer_checks, f, call, &p, why)) return false;
  *q = p.q;
  return true;
}

static bool outer_accepts(cf_fusion *f, const SchedCall *call, char *why) {
  SchedOuterParams q;
  return sched_outer_persistent_plan(f, call, &q, why);
}

static cf_status outer_schedule(cf_fusion *f, const SchedCall *call, char *params) {
  SchedOuterParams q;
  char why[SCHED_WHY_MAX];
  if (!sched_outer_persistent_plan(f, call, &q, why)) return ir_error(f, CF_ERR_UNSUPPORTED, "%s", why);
  return sched_outer_persistent_apply(f, call, &q, params);
}

const SchedHeuristic sched_outer_persistent_heuristic = {"outer_persistent", outer_accepts, outer_schedule};
