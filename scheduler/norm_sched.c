/* scheduler/norm_sched.c: the inner persistent normalization scheduler
 * (sched_inner_persistent_heuristic): its checks and its parameters
 * (sched_inner_persistent_plan); norm_apply.c schedules a copy with them. It takes
 * softmax, layer norm, RMS norm and their kin: fusions whose reductions all reduce the
 * same axes of one N-D shape, the innermost among them, and whose results are broadcast
 * back and combined elementwise with the rows they came from; also a channels-first batch
 * norm (x[N, C, HW] reduced over N and HW: the kept axis between reduced ones, its loop
 * axes reordered kept-first so the row N*HW runs along the contiguous HW).
 *
 * Accepted (norm_checks, run by scheduler/persistent.c): elementwise ops, broadcasts and
 * at least one reduction (sum, max, Welford, ...); every reduction reduces the same k axes
 * of a tensor of rank N, the innermost one among them, all of the same extents (one
 * exact-map class per axis); every broadcast either puts back the k reduced axes ([rows] ->
 * [rows, 1], a channel's statistic or weight [C] -> [1, C, 1]) or spreads a tensor of the
 * row's shape over the kept axes (a weight [row] -> [1, row]) or brings a parameter to the
 * reduced shape (a bias [N] -> [1, N] added to sums of [M, N, ks]); every output has the
 * rows' shape or the reduced one, with or without the reduced axes kept as broadcast axes (a layer norm's mean and invstd, keepdim or not); one input has the
 * rows' shape (its sizes in the call give the row length); no constant extent of 1 (a
 * broadcast axis) in the rows' shape; at most SCHED_MAX_PERSISTENT_REDUCTIONS reductions.
 * Rows of any length: where registers and shared memory cannot hold one, the row is read
 * again for each pass (multipass). Anything else is refused with the reason.
 *
 * Parameters (plan_*), for a row of R elements (the inner axes merged), I rows, the call's
 * device (SchedDevice) and the bytes kept per row element (scheduler/buffers.c: `live`,
 * the tensors as computed, or `projected`, the inputs they derive from, recomputing the
 * rest: scheduler/recompute.c). Every limit below is a function of the device:
 *   vector width v: 16 bytes over the widest element of the cached inputs and the
 *     outputs, halved until it divides a constant innermost extent and the call's
 *     pointers are aligned; 1 for a symbolic extent or a non-contiguous input;
 *     n = ceil(R / v) vectors per row; t_max = the device's threads per block (whole warps);
 *   registers per thread at block size T: min(max_regs_per_thread, regs_per_sm / T) -
 *     SCHED_REG_RESERVE (persistent.h: what the kernel needs besides the buffers: indices,
 *     pointers, the reduction's values); a thread keeps E(T, b) = that x 4 / b elements of b bytes;
 *   0. grid, when the rows are fewer than the SMs (I < SMs: a channels-first batch
 *      norm's 3 to 64 channels, a softmax of a few vocabulary rows): t = min(
 *      NORM_TARGET_THREADS, t_max, n in whole warps), each row split over gy blocks on
 *      blockIdx.y: for k = the blocks per SM threads allow, down to 1, gy = min(k x SMs /
 *      I, sched_coop_block_cap (the resident threads: the host backend's 65536, a GPU's all;
 *      at most SCHED_GRID_MAX_GROUP_BLOCKS a row), n / (t x NORM_GRID_MIN_VECS)) (at least
 *      2), p = ceil(n / (gy x t)); taken in registers when p * v <= E(t, b) and registers
 *      let k such blocks share an SM (all resident: one cooperative launch, the statistics
 *      grid all-reduces); else multipass over the same grid at the unbuffered blocks per
 *      SM (a symbolic row: registers split outer by p and gy, threads at run time);
 *   1. registers, bytes b = min(live, projected) + params (projected when smaller: a
 *      bfloat16 row kept as its input, the float casts recomputed; but live when the
 *      projection would compute a math function again and the live row fits: a bfloat16
 *      softmax's exp kept, 2448 -> 3011 GB/s on the H200, where layer norm's recomputed
 *      casts are cheaper than live's registers, 3041 against 2878); persistent count
 *      p = min(ceil(n / NORM_TARGET_THREADS), NORM_PREFERRED_ELEMS / v), threads
 *      t = ceil(n / p) in whole warps (p recomputed), or t = t_max and p = ceil(n / t)
 *      when more are needed; a short row (NORM_WARP < n <= NORM_WARP x NORM_WARP_ROW_VECS
 *      vectors, constant) runs on one warp instead, p = ceil(n / 32) (falling back to the
 *      rule above when that does not fit), so its all-reduces are the warp's shuffles
 *      alone, with no shared memory and no barrier. Measured on the H200 (gpu_rows, GB/s,
 *      rows x length of 2^26 elements; before -> after): softmax f32 x127 1074 -> 2483, bf16
 *      545 -> 1290; log-softmax f32 x127 1001 -> 2471; layer norm f32 x127 1259 -> 3016, bf16
 *      x1024 2553 -> 3124; RMS norm bf16 x127 752 -> 2456; softmax bf16 x1024 1996 -> 2547;
 *      within 10% either way (run-to-run noise) from 768 f32 and 2048 bf16 elements up;
 *      rows on threadIdx.y ty = the largest power of two with
 *      t * ty <= NORM_TARGET_THREADS and ty <= I (short rows fill a block); taken when
 *      p * v <= E(t * ty, b). A block runs its ty rows once: row parameters (a weight)
 *      are read again by every block, from L2. Blocks that each ran s rows one after
 *      another, so one wave read the weight once per thread, were slower on the H200
 *      (16384 x 4096, bench/define_and_run.c, GB/s against a copy of the same bytes):
 *      layer norm bf16 3112 -> 3368 (copy 3838), f32 3569 -> 3963 (4009), RMS norm f32
 *      3565 -> 3933 (4084) with a block per row: a block that loads a row while others of
 *      its SM reduce theirs keeps more loads in flight than a few blocks alternating;
 *   2. shared memory, the projected inputs' rows: t = min(t_max, n in whole warps),
 *      p = ceil(n / t); taken when p * t * v * projected bytes plus the reductions'
 *      workspaces (NORM_WORKSPACE_BYTES per thread each) fit smem_per_block. A row of
 *      scalars (v = 1: an odd length) takes it only where two blocks (row and one
 *      workspace each) fit an SM's shared memory, so one block loads while another
 *      reduces; measured on the H200 (bench/norm_rows.py, 512-1024 rows, GB/s shared
 *      against multipass unrolled, best of two runs): at most half an SM (f32 of 20011,
 *      bf16 of 32003 and 50257) shared wins 7 of 7 (layer norm f32 20011 1727 / 1195,
 *      RMS norm bf16 50257 1399 / 1178, softmax bf16 50257 911 / 826); past it (f32 of
 *      32003 and 50257, bf16 of 65537 and 100003: 139 to 213 KiB, one block per SM) it
 *      wins 4 of 12 by at most 16% and loses the rest by up to 30% (RMS norm bf16 100003
 *      729 / 1040, softmax f32 50257 1584 / 1366 the largest win). Each thread writes
 *      its vectors of the row into shared memory and reads back only those (no barrier),
 *      through a register copy per reader (vector loads, no bank conflicts);
 *      parameters are read from global memory by the pass that needs them. Such a row
 *      of scalars is bound by instructions, not memory: ncu on the H200, softmax bf16
 *      1335 x 50257 (1024 threads, 52 registers: one block per SM), 104 instructions
 *      per element issued, issue slots 79% busy, DRAM 15%; 512 threads (two blocks per
 *      SM, 32 registers) changed nothing (381 us against 356), 256 halved the bandwidth,
 *      and unrolling the loads by 4 lost up to 22% (bench/norm_rows.py on those shapes).
 *      What would help is fewer instructions per element: vectors over rows of odd
 *      length (alignment peeling), not more threads;
 *   3. multipass: t = min(t_max, n in whole warps, max_threads_per_sm /
 *      NORM_MULTIPASS_BLOCKS_PER_SM), p = ceil(n / t) chunks per thread; every tensor is
 *      recomputed from the inputs at each reader (refused past SCHED_RECOMPUTE_MAX_OPS
 *      added ops): one kernel, each pass over the row (one per reduction, then the
 *      epilogue) reading the inputs again, from L2 when the rows in flight fit it.
 *      A Welford reduction (var_mean) makes layer norm two passes; a softmax's max and
 *      sum of exponentials of a float row become one online softmax reduction
 *      (online_softmax.c): softmax and log-softmax in two passes. Rows of scalars split
 *      the chunks [p / u, u] (u = NORM_MULTIPASS_UNROLL, unrolled) and load a thread's u
 *      chunks into registers before using them, so u loads are in flight as a vector of
 *      u would be: H200 (bench/norm_rows.py, GB/s without / with): softmax f32 512 x
 *      131071 876 / 1410, bf16 489 / 871; RMS norm f32 1251 / 1670; layer norm f32
 *      256 x 262147 898 / 1255; 30 of 38 such cases gain, the rest lose up to 20%
 *      (layer norm and RMS norm bf16 of 100003 and 131071: 846 / 706, 1345 / 1079);
 *      u = 8 was no better.
 * A symbolic R (a fusion scheduled for the call's sizes but not made constant) keeps v = 1
 * and, in registers, splits the row outer by p, so register arrays keep the constant size
 * p (threads = ceilDiv(R, p) at run time, refused by the executor past 1024).
 * Tuned on an H200 (bench/norm.c, 16384x4096, GB/s of softmax f32 / layer norm f32 /
 * softmax bf16; the device copies at 3938): 512 threads and 16 per thread 3595 / 3493 /
 * 1929; 256 and 16: 3820 / 3857 / 2723; 128 and 32: 3829 / 3835 / 3195; 64 and 64:
 * 3787 / 3820 / 2945 (NORM_TARGET_THREADS and NORM_PREFERRED_ELEMS). Fewer threads with
 * more of the row each make the block all-reduce cheaper and keep more loads in flight.
 * Not measured yet: the shared-memory, multipass and multi-row forms (bench/sweep). A
 * cluster of blocks sharing a row through distributed shared memory is not used: it needs
 * cluster launches, cluster barriers and DSMEM addressing in lowering and both backends,
 * and the multipass form already covers rows past shared memory.
 * A reduced output (mean, invstd) is written by thread 0 of the row's threads and, when the
 * kernel reads it too, read back after a __syncthreads (lowering's rule for a global tensor
 * written and read in one block). */
#include "scheduler/norm.h"

enum {
  NORM_TARGET_THREADS = 128,   /* preferred threads of a block (tuned above) */
  NORM_PREFERRED_ELEMS = 32,   /* preferred elements of a row per thread (tuned above) */
  NORM_WORKSPACE_BYTES = 8,    /* shared memory per thread of a block all-reduce (double) */
  NORM_MULTIPASS_BLOCKS_PER_SM = 4, /* multipass: blocks per SM the block size leaves room for */
  NORM_MULTIPASS_UNROLL = 4,        /* multipass, v = 1: chunks a thread loads together (measured above) */
  NORM_WARP = 32,
  NORM_GRID_MIN_VECS = 8, /* grid: vectors of the row each thread keeps at least (amortizing the syncs) */
};

/* Rows of at most NORM_WARP x NORM_WARP_ROW_VECS vectors run a warp each (rule 1): the
 * all-reduce is the warp's shuffles alone (lower/reduction.c's warp-local form). */
#ifndef NORM_WARP_ROW_VECS
#define NORM_WARP_ROW_VECS 8
#endif

#define WHY(...) (snprintf(why, SCHED_WHY_MAX, "inner_persistent: " __VA_ARGS__), false)

/* The number of reduced axes of a reduction output, the innermost one among them (the
 * kept axes before, between or after the others: [r, i, r] is a channels-first batch
 * norm's); -1 (why set) if the innermost axis is kept (the outer scheduler's form). */
static int inner_reduced_axes(Val *out, char *why) {
  int nr = 0, rank = TV(out)->nlogical;
  for (int x = 0; x < rank; x++) nr += ID(TV(out)->logical[x])->iter_type == CF_ITER_REDUCTION;
  if (nr > 0 && ID(TV(out)->logical[rank - 1])->iter_type != CF_ITER_REDUCTION) {
    (void)WHY("%s keeps its innermost axis (the reduced axes must include the innermost one)", TV(out)->display_name);
    return -1;
  }
  return nr;
}

/* A broadcast puts back the reduced axes, spreads a row over the outer axes, or brings an
 * epilogue's parameter to the reduced shape (a bias of the kept axes added to a sum of
 * split-K's slices, scheduler/split_k.c: its cast then runs in this kernel). */
static bool check_broadcast(const Expr *e, const void *plan, char *why) {
  const NormPlan *p = plan;
  const bool *b = e->attr.broadcast.is_broadcast;
  bool inner = e->attr.broadcast.rank == p->r.rank, outer = inner;
  for (int x = 0; x < p->r.rank && (inner || outer); x++) {
    bool reduced = sched_axis_in(p->r.reduced, x);
    inner = inner && b[x] == reduced;
    outer = outer && b[x] == !reduced;
  }
  bool epilogue = e->attr.broadcast.rank == p->r.rank - p->r.nred;
  if (!inner && !outer && !epilogue)
    return WHY("%s broadcasts other axes than the %d reduced ones or the %d kept ones", TV(e->out[0])->display_name,
               p->r.nred, p->r.rank - p->r.nred);
  return true;
}

/* Per fusion input: of the rows' shape. */
static bool *full_inputs(cf_fusion *f, Arena *a, const IdMap *m, Val *ref) {
  bool *full = ARENA_ARRAY(a, bool, f->inputs.len);
  for (int i = 0; full && i < f->inputs.len; i++) full[i] = sched_same_shape(m, ref, f->inputs.items[i]);
  return full;
}

/* What is kept of a row and what recomputing would cost (buffers.c, recompute.c). */
static bool measure_buffers(cf_fusion *f, Arena *a, const IdMap *m, NormPlan *p, char *why) {
  Val *ref = p->r.reds[0];
  bool *row = sched_row_tensors(f, a, m, ref, p->r.reduced);
  p->full_in = full_inputs(f, a, m, ref);
  if (!row || !p->full_in || !sched_buffers(f, a, &p->r, row, p->full_in, p->vec_in, &p->buf))
    return WHY("out of memory");
  p->clones[0] = sched_recompute_count(f, a, row, SCHED_KEEP_CACHES, &p->recompute_math);
  p->clones[1] = sched_recompute_count(f, a, row, SCHED_CLONE_CACHES, NULL);
  int n;
  Expr **exprs = ir_fusion_tensor_exprs_in(a, f, &n);
  if (!exprs) return WHY("out of memory");
  p->online = sched_online_softmax_count(exprs, n);
  return p->clones[0] >= 0 && p->clones[1] >= 0 ? true : WHY("out of memory");
}

/* The tensors of the rows' shape (the first reduction's, axis by axis in its exact
 * classes); outputs of that shape or the reduced one (the outer axes kept, in order); an
 * input of the rows' shape without broadcast axes. The cacheable inputs are those of the
 * rows' shape and the row parameters (rank k, in the classes of the reduced axes). */
static bool check_shapes(cf_fusion *f, Arena *a, const IdMap *m, NormPlan *p, char *why) {
  Val *ref = p->r.reds[0];
  int bad;
  if (p->r.nreds > SCHED_MAX_PERSISTENT_REDUCTIONS)
    return WHY("the fusion has %d reductions, more than the %d one kernel plans for", p->r.nreds,
               SCHED_MAX_PERSISTENT_REDUCTIONS);
  p->row_out = sched_full_outputs(f, a, m, ref, sched_norm_kept(p), &bad);
  if (!p->row_out)
    return bad < 0 ? WHY("out of memory")
                   : WHY("output %s has neither the rows' shape nor the reduced one",
                         TV(f->outputs.items[bad])->display_name);
  p->row_index = sched_input_like(f, m, ref);
  if (p->row_index < 0) return WHY("no input has the rows' shape");
  p->row_input = f->inputs.items[p->row_index];
  if (sched_has_broadcast(p->row_input))
    return WHY("%s has a broadcast axis (a constant extent of 1)", TV(p->row_input)->display_name);
  p->vec_in = sched_cached_inputs(f, a, m, ref, p->r.reduced);
  return p->vec_in ? measure_buffers(f, a, m, p, why) : WHY("out of memory");
}

/* R, the innermost extent and I: the call's sizes of the row input, else the fusion's
 * constants (I unknown, 0, when symbolic without a call). */
static bool read_sizes(const SchedCall *call, NormPlan *p, char *why) {
  bool have_call = call && call->ninputs > p->row_index && call->inputs;
  p->row = p->outer = 1;
  p->symbolic = false;
  for (int x = 0; x < p->r.rank; x++) {
    int64_t e;
    bool c = ir_scalar_const_value(ID(TV(p->row_input)->logical[x])->extent, &e), inner = sched_axis_in(p->r.reduced, x);
    if (have_call) e = call->inputs[p->row_index]->shape[x];
    else if (!c && inner)
      return WHY("the rows of %s are symbolic and the call gives no sizes", TV(p->row_input)->display_name);
    if (!inner) {
      p->outer = c || have_call ? p->outer * e : 0;
      continue;
    }
    p->symbolic |= !c;
    p->row *= e;
    p->inner = e;
  }
  return p->row < 1 ? WHY("the rows of %s are empty", TV(p->row_input)->display_name) : true;
}

/* ---- parameters (the rules of the file's comment) ------------------------------------------ */

static int64_t round_warps(int64_t t) { return ck_ceil_div(t, NORM_WARP) * NORM_WARP; }

/* The threads of a constant row of t vectors: whole warps (a warp-shuffle all-reduce), or
 * for a row shorter than a warp the power of two covering it (at least 2), the block's other threads
 * taking more rows (threadIdx.y): a row of 16 floats (4 vectors) on 32 threads left 28 of
 * them idle (softmax over 2^20 rows of 16: 0.47x torch.compile on an H200). */
static int64_t row_threads(int64_t t) {
  if (t >= NORM_WARP) return round_warps(t);
  int64_t p = 2; /* a threadIdx.x of one thread made the reduction's axis a single element, which
                  * lowering keeps serial, and then refused its cross-thread readers */
  while (p < t) p *= 2;
  return p;
}

static int64_t max_threads(const SchedDevice *d) {
  int64_t t = d->max_threads_per_block / NORM_WARP * NORM_WARP;
  return t > 0 ? t : d->max_threads_per_block;
}

/* Whether p * v elements of b bytes per thread fit a block of `threads` (b = 0: nothing
 * is kept). */
static bool fits(const SchedDevice *d, const SchedInnerParams *q, int64_t threads, int64_t bytes) {
  return bytes == 0 || q->persist * q->vec <= sched_reg_elems(d, threads, bytes);
}

/* Rows on threadIdx.y (rule 1). */
static void plan_rows(const SchedDevice *d, NormPlan *p, int64_t bytes) {
  SchedInnerParams *q = &p->q;
  q->rows_y = 1;
  if (p->symbolic || p->outer < 2) return;
  int64_t most = NORM_TARGET_THREADS < max_threads(d) ? NORM_TARGET_THREADS : max_threads(d);
  while (q->threads * q->rows_y * 2 <= most && q->rows_y * 2 <= p->outer &&
         fits(d, q, q->threads * q->rows_y * 2, bytes))
    q->rows_y *= 2;
}

/* Rule 1's threads and persistent count for a row of n vectors: a warp per short row
 * (warp_row), else about NORM_TARGET_THREADS threads. */
static void plan_register_threads(const SchedDevice *d, NormPlan *p, int64_t n, bool warp_row) {
  SchedInnerParams *q = &p->q;
  int64_t cap = NORM_PREFERRED_ELEMS / q->vec, tmax = max_threads(d);
  q->persist = ck_ceil_div(n, warp_row ? NORM_WARP : NORM_TARGET_THREADS);
  if (q->persist > cap && !warp_row) q->persist = cap > 1 ? cap : 1;
  q->threads = ck_ceil_div(n, q->persist);
  if (p->symbolic && q->threads > tmax) { /* threads = ceilDiv(n, persist) at run time */
    q->persist = ck_ceil_div(n, tmax);
    q->threads = ck_ceil_div(n, q->persist);
  } else if (!p->symbolic) {
    q->threads = row_threads(q->threads);
    if (q->threads > tmax) q->threads = tmax;
    q->persist = ck_ceil_div(n, q->threads);
  }
}

/* Rule 1: the row in registers; false when it does not fit. */
static bool plan_registers(const SchedDevice *d, NormPlan *p) {
  SchedInnerParams *q = &p->q;
  int64_t n = ck_ceil_div(p->row, q->vec);
  int64_t live = p->buf.live + p->buf.params, projected = p->buf.projected + p->buf.params;
  bool warp_row = !p->symbolic && n > NORM_WARP && n <= NORM_WARP * NORM_WARP_ROW_VECS;
  for (;; warp_row = false) {
    plan_register_threads(d, p, n, warp_row);
    /* projected when smaller, unless that computes a math function again (a softmax's exp)
     * and the row fits as computed */
    q->project = projected < live && !(p->recompute_math && fits(d, q, q->threads, live));
    int64_t bytes = q->project ? projected : live;
    if (fits(d, q, q->threads, bytes)) {
      plan_rows(d, p, bytes);
      return true;
    }
    if (!warp_row) return false;
  }
}

/* Rule 2: the inputs' rows in shared memory. */
static bool plan_shared(const SchedDevice *d, NormPlan *p) {
  SchedInnerParams *q = &p->q;
  int64_t n = ck_ceil_div(p->row, q->vec), tmax = max_threads(d);
  q->threads = round_warps(n) < tmax ? round_warps(n) : tmax;
  q->persist = ck_ceil_div(n, q->threads);
  q->rows_y = 1;
  q->project = true;
  int64_t row = q->persist * q->threads * q->vec * p->buf.projected, workspace = NORM_WORKSPACE_BYTES * q->threads;
  int64_t bytes = row + 16 * (int64_t)p->r.nreds + workspace * p->r.nreds;
  if (p->buf.projected <= 0 || bytes > d->smem_per_block) return false;
  /* a row of scalars: shared memory only where two blocks (their rows and one all-reduce's
   * workspace each) fit an SM: one loads while the other reduces; else multipass
   * (measured above) */
  return q->vec > 1 || 2 * (row + workspace) <= d->smem_per_sm;
}

/* Rule 3: one pass over the row per reduction, then the epilogue. */
static bool plan_multipass(const SchedDevice *d, NormPlan *p, char *why) {
  SchedInnerParams *q = &p->q;
  if (p->clones[1] > SCHED_RECOMPUTE_MAX_OPS)
    return WHY("rows of %s hold %lld elements, more than registers and shared memory keep, and reading them "
               "again for each pass would recompute more than %d ops",
               TV(p->row_input)->display_name, (long long)p->row, SCHED_RECOMPUTE_MAX_OPS);
  int64_t n = ck_ceil_div(p->row, q->vec), t = max_threads(d);
  int64_t per_sm = round_warps(d->max_threads_per_sm / NORM_MULTIPASS_BLOCKS_PER_SM);
  if (t > per_sm) t = per_sm;
  if (t > round_warps(n)) t = round_warps(n);
  q->threads = t;
  q->persist = ck_ceil_div(n, t);
  q->rows_y = 1;
  q->project = true;
  q->online = p->online > 0;
  q->unroll = q->vec == 1 && q->persist >= 2 * NORM_MULTIPASS_UNROLL ? NORM_MULTIPASS_UNROLL : 1;
  return true;
}

/* Rule 0: blocks of a row for gy = k x SMs / I (the blocks per SM that threads and
 * registers allow, down to 1); false when fewer than 2. */
static bool grid_blocks(const SchedDevice *d, NormPlan *p, int64_t k) {
  SchedInnerParams *q = &p->q;
  int64_t n = ck_ceil_div(p->row, q->vec);
  int64_t gy = k * d->sm_count / p->outer, cap = sched_coop_block_cap(d, p->outer * q->threads);
  int64_t most = n / (q->threads * NORM_GRID_MIN_VECS);
  if (gy > cap) gy = cap;
  if (gy > most) gy = most;
  if (gy < 2) return false;
  q->grid = gy;
  q->persist = ck_ceil_div(n, gy * q->threads);
  return true;
}

/* Rule 0: rows fewer than the SMs (a channels-first batch norm's few channels) split
 * across gy blocks each, all resident (a cooperative launch), the statistics grid
 * all-reduces: in registers, else multipass. */
static bool plan_grid(const SchedDevice *d, NormPlan *p) {
  SchedInnerParams *q = &p->q;
  if (p->outer < 1 || p->outer >= d->sm_count) return false;
  int64_t n = ck_ceil_div(p->row, q->vec), t = NORM_TARGET_THREADS;
  if (t > max_threads(d)) t = max_threads(d);
  q->threads = round_warps(n) < t ? round_warps(n) : t;
  int64_t ws = NORM_WORKSPACE_BYTES * q->threads * p->r.nreds;
  q->rows_y = 1;
  q->project = p->buf.projected < p->buf.live;
  int64_t bytes = (q->project ? p->buf.projected : p->buf.live) + p->buf.params;
  for (int64_t k = sched_blocks_per_sm(d, q->threads, SCHED_REG_RESERVE, ws); k >= 1; k--) {
    if (!grid_blocks(d, p, k)) break;
    int64_t regs = q->persist * q->vec * ((bytes + 3) / 4) + SCHED_REG_RESERVE; /* a register per element */
    if (fits(d, q, q->threads, bytes) && sched_blocks_per_sm(d, q->threads, regs, ws) >= k) return true;
  }
  if (p->clones[1] > SCHED_RECOMPUTE_MAX_OPS) return false;
  q->mode = SCHED_NORM_MULTIPASS;
  q->symbolic = false; /* split by threads and blocks: a symbolic count of chunks */
  q->project = true;
  q->online = p->online > 0;
  return grid_blocks(d, p, sched_blocks_per_sm(d, q->threads, SCHED_REG_RESERVE, ws));
}

static bool plan_params(const SchedCall *call, NormPlan *p, cf_fusion *f, char *why) {
  const SchedDevice *d = call && call->dev ? call->dev : sched_device_default();
  SchedInnerParams *q = &p->q;
  q->symbolic = p->symbolic;
  q->vec = p->symbolic ? 1 : sched_vector_width(f, call, p->vec_in, p->inner);
  q->mode = SCHED_NORM_REGISTERS;
  if (plan_grid(d, p)) return true;
  q->mode = SCHED_NORM_REGISTERS;
  q->grid = 1;
  q->symbolic = p->symbolic;
  q->online = false;
  if (plan_registers(d, p)) return true;
  q->symbolic = false; /* shared memory and multipass split by threads: a symbolic count of chunks */
  q->mode = SCHED_NORM_SHARED;
  if (!p->symbolic && plan_shared(d, p)) return true;
  q->mode = SCHED_NORM_MULTIPASS;
  q->vec = p->symbolic ? 1 : q->vec;
  return plan_multipass(d, p, why);
}

static bool norm_shapes(cf_fusion *f, Arena *a, const IdMap *m, const SchedCall *call, void *plan, char *why) {
  return check_shapes(f, a, m, plan, why) && read_sizes(call, plan, why) && plan_params(call, plan, f, why);
}

static const SchedPersistent norm_checks = {"inner_persistent", "rows", inner_reduced_axes, check_broadcast,
                                             norm_shapes};

Arena *sched_norm_begin(cf_fusion *f, const SchedCall *call, NormPlan *p) {
  return sched_persistent_begin(&norm_checks, f, call, p);
}

bool sched_inner_persistent_plan(cf_fusion *f, const SchedCall *call, SchedInnerParams *q, char *why) {
  NormPlan p = {0};
  if (!sched_persistent_accepts(&norm_checks, f, call, &p, why)) return false;
  *q = p.q;
  return true;
}

bool sched_inner_persistent_resident(cf_fusion *f, const SchedCall *call, char *why) {
  SchedInnerParams q;
  if (!sched_inner_persistent_plan(f, call, &q, why)) return false;
  if (q.grid > 1) /* two sums: two grid all-reduces where Welford's states need one */
    return WHY("rows split across %lld blocks each (one Welford grid all-reduce, not two)", (long long)q.grid);
  return q.mode != SCHED_NORM_MULTIPASS ? true : WHY("rows past registers and shared memory (multipass)");
}

static bool norm_accepts(cf_fusion *f, const SchedCall *call, char *why) {
  SchedInnerParams q;
  return sched_inner_persistent_plan(f, call, &q, why);
}

static cf_status norm_schedule(cf_fusion *f, const SchedCall *call, char *params) {
  SchedInnerParams q;
  char why[SCHED_WHY_MAX];
  if (!sched_inner_persistent_plan(f, call, &q, why)) return ir_error(f, CF_ERR_UNSUPPORTED, "%s", why);
  return sched_inner_persistent_apply(f, call, &q, params);
}

const SchedHeuristic sched_inner_persistent_heuristic = {"inner_persistent", norm_accepts, norm_schedule};
