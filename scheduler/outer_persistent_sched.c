/* scheduler/outer_persistent_sched.c: the outer persistent normalization scheduler
 * (sched_outer_persistent_heuristic, issue 11), a client of the public scheduling calls.
 * It schedules batch norm and its kin: fusions whose reductions all reduce the same
 * OUTERMOST axes of one N-D shape (x[N, C], or [N, H, W, C] reduced over N, H, W: per-column
 * statistics) and whose results are broadcast back over those axes and combined
 * elementwise with the columns they came from, e.g.
 *   y = (x - mean_N(x)) * rsqrt(mean_N((x - mean)^2) + eps) * w[C] + b[C].
 *
 * Accepted (outer_checks, run by scheduler/persistent.c): elementwise ops, broadcasts and
 * at least one reduction; every reduction reduces the outermost k axes of a rank-N tensor
 * (k < N: some column is kept), all with the same extents (one exact-map class per axis);
 * every broadcast has rank N and puts back exactly the k outer axes ([C] -> [1, C]: a
 * reduced result or a column parameter such as a weight); every output has the full shape
 * or the reduced one (the batch statistics); one input has the full shape, without
 * broadcast axes; the reduced axes of a column hold at most what one block keeps in
 * registers (below). Anything else is refused with the reason. It comes after the
 * reduction and inner persistent schedulers in the table: a plain column sum stays the
 * reduction scheduler's, softmax and layer norm the inner one's (both refuse outer-reduced
 * normalizations).
 *
 * Heuristic (outer_schedule), for R = the product of the reduced extents (rows of a
 * column) and I = the product of the kept ones (columns), read from the call's sizes:
 *   1. vector width v: 16 bytes over the widest element of the cached inputs and the
 *      outputs, halved until it divides a constant innermost extent and the call's
 *      pointers are aligned; 1 for a symbolic innermost extent or a non-contiguous input;
 *   2. columns on threadIdx.x: tx = the smallest power of two covering I/v, at most
 *      OUTER_BLOCK_COLUMNS/v (a block reads rows of 32 consecutive elements: coalesced);
 *      blockIdx.x takes ceilDiv(I/v, tx) column groups;
 *   3. the reduced axis on threadIdx.y, kept in registers: with ty_max = 1024/tx, the
 *      persistent count p (rows per thread) is the fewest giving at most
 *      OUTER_TARGET_THREADS/tx threads of threadIdx.y, capped so that p*v stays within
 *      OUTER_MAX_PER_THREAD (more threads then); refused when the column is longer than
 *      ty_max threads of SCHED_FULL_BLOCK_PER_THREAD elements (R > ty_max * SCHED_FULL_BLOCK_PER_THREAD
 *      / v: a block of 1024 threads could not hold more registers each);
 *      constant R: ty = ceilDiv(R, p), split by ty (predicated where it does not divide),
 *      p recomputed; symbolic R: cf_split_outer by p (constant-size register arrays,
 *      ty = ceilDiv(R, p) at run time);
 *   4. inputs of the full shape and column parameters are cached after (read once, vector
 *      loads), outputs of the full shape cached before (vector stores) when v > 1;
 *   5. the first reduction's reduced axes are merged and split into [p, ty], propagated,
 *      every reduction rfactored over p (a serial fold per thread), leaving a threadIdx.y
 *      block all-reduce that every thread of the column receives; then (rfactor takes the
 *      kept axes untransformed) the kept axes are merged and split into [Io, tx, v] on the
 *      rfactor tensor and propagated: loops [p, threadIdx.y, blockIdx.x, threadIdx.x, v];
 *   6. everything is inlined as deep as legal: a tensor read by a reduction and by what
 *      is computed from that reduction stays whole per thread (the loop graph's rule), a
 *      register array of p*v elements: the persistent slab of the column.
 * Reduced outputs (mean, rstd of the batch) are written by the threads of threadIdx.y 0.
 * Tuned on an H200 (bench/define_and_run.c's batch norm, 512 x 65536 float; torch.compile
 * 1758 GB/s, the device copy 4213), target threads / elements per thread / block columns:
 * 512/16/32 (8x128 threads of 4 rows) 1251 GB/s; 256/64/32 (8x32 of 16) 2901; 128/128/32
 * (8x16 of 32) 3321; 256/32/64 1602; 64/64/128 1418. Few rows of threads, each folding
 * many rows, make the threadIdx.y all-reduce short and keep loads in flight.
 * Not yet: a grid-persistent form (several blocks per column group, a grid all-reduce)
 * for columns longer than a block's registers: refused with the reason, and the
 * define-and-run executor then segments the fusion at its reductions. */
#include "scheduler/persistent.h"

enum {
  OUTER_MAX_THREADS = 1024,   /* threads of one block */
  OUTER_TARGET_THREADS = 128, /* preferred block size (tuned below) */
  OUTER_MAX_PER_THREAD = 128, /* elements of a column one thread may keep in registers */
  OUTER_BLOCK_COLUMNS = 32,   /* elements of a row one block reads (threadIdx.x x vector) */
};

/* What accepts() found and the parameters for this call. */
typedef struct OuterPlan {
  SchedReductions r; /* first (persistent.h): the reductions, all of rank N, reducing k axes */
  Val *full_input; /* an input of the full shape */
  int full_index;  /* its position among the fusion's inputs */
  bool *full_out;  /* per fusion output: of the full shape (else a reduced result) */
  bool *cached;    /* per fusion input: cached after (full shape or a column parameter) */
  int64_t rows, cols; /* R and I for this call */
  int64_t inner;      /* the innermost extent (what a vector must divide) */
  bool symbolic_rows; /* R is not a constant of the fusion */
  bool symbolic_inner;
  int64_t vec, tx, ty, persist;
} OuterPlan;

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
 * with vectors). */
static bool check_shapes(cf_fusion *f, Arena *a, const IdMap *m, OuterPlan *p, char *why) {
  Val *ref = p->r.reds[0];
  int ncols = p->r.rank - p->r.nred, bad;
  p->full_index = sched_input_like(f, m, ref);
  if (p->full_index < 0) return WHY("no input has the full shape");
  p->full_input = f->inputs.items[p->full_index];
  if (sched_has_broadcast(p->full_input))
    return WHY("%s has a broadcast axis (a constant extent of 1)", TV(p->full_input)->display_name);
  p->full_out = sched_full_outputs(f, a, m, ref, p->r.nred, ncols, &bad);
  if (!p->full_out && bad >= 0)
    return WHY("output %s has neither the full shape nor the reduced one", TV(f->outputs.items[bad])->display_name);
  p->cached = p->full_out ? sched_cached_inputs(f, a, m, ref, p->r.nred, ncols) : NULL;
  return p->cached ? true : WHY("out of memory");
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

/* ---- parameters ---------------------------------------------------------------------- */

/* tx, ty and p (see the heuristic above); false with the reason when the column's
 * reduced axes do not fit one block's registers. */
static bool choose_block(OuterPlan *p, char *why) {
  int64_t vcols = sched_ceil_div(p->cols, p->vec), max_tx = OUTER_BLOCK_COLUMNS / p->vec;
  p->tx = 1;
  while (p->tx < vcols && p->tx < max_tx) p->tx *= 2;
  int64_t ty_max = OUTER_MAX_THREADS / p->tx, per = SCHED_FULL_BLOCK_PER_THREAD / p->vec;
  if (p->rows > ty_max * per)
    return WHY("columns of %s hold %lld elements over the reduced axes, more than the %lld (%lld threads of "
               "threadIdx.y x %lld) kept in registers",
               TV(p->full_input)->display_name, (long long)p->rows, (long long)(ty_max * per), (long long)ty_max,
               (long long)per);
  int64_t cap = OUTER_MAX_PER_THREAD / p->vec;
  p->persist = sched_ceil_div(p->rows, OUTER_TARGET_THREADS / p->tx);
  if (p->persist > cap) p->persist = cap;
  p->ty = sched_ceil_div(p->rows, p->persist);
  if (!p->symbolic_rows) p->persist = sched_ceil_div(p->rows, p->ty);
  return true;
}

/* The shapes and sizes, then the parameters (refused when a column does not fit). */
static bool outer_shapes(cf_fusion *f, Arena *a, const IdMap *m, const SchedCall *call, void *plan, char *why) {
  OuterPlan *p = plan;
  if (!check_shapes(f, a, m, p, why) || !read_sizes(call, p, why)) return false;
  p->vec = p->symbolic_inner ? 1 : sched_vector_width(f, call, p->cached, p->inner);
  return choose_block(p, why);
}

static const SchedPersistent outer_checks = {"outer_persistent", "columns", outer_reduced_axes, check_broadcast,
                                              outer_shapes};

static bool outer_accepts(cf_fusion *f, const SchedCall *call, char *why) {
  OuterPlan p = {0};
  return sched_persistent_accepts(&outer_checks, f, call, &p, why);
}

/* ---- the schedule -------------------------------------------------------------------- */

/* The reference's reduced axes merged and split into [p, ty]. */
static void split_rows(cf_fusion *f, const OuterPlan *p, cf_tv *ref) {
  for (int k = 1; k < p->r.nred; k++) cf_merge(f, ref, 0);
  if (p->symbolic_rows) cf_split_outer(f, ref, 0, p->persist);
  else cf_split(f, ref, 0, p->ty);
}

/* The rfactor tensor's kept axes (from position 2) merged and split into [Io, tx, v],
 * then the loops ordered [Io, tx, p, ty, v]: the column's parallel axes outermost (every
 * tensor shares them), then the serial fold over p, which bounds how deep rf inlines into
 * the reduction it feeds (rf's ty is an iteration axis, the reduction's a reduced one:
 * they cannot share a loop), and the vector innermost. */
static void split_columns(cf_fusion *f, const OuterPlan *p, cf_tv *rf) {
  for (int k = 1; k < p->r.rank - p->r.nred; k++) cf_merge(f, rf, 2);
  if (p->vec > 1) cf_split(f, rf, 2, p->vec);
  cf_split(f, rf, 2, p->tx);
  cf_reorder_all(f, rf, p->vec > 1 ? 5 : 4, (int[]){2, 3, 0, 1, 4});
}

/* Whether loop axis id of tv comes from a kept (column) axis: up its splits and merges
 * (the rfactor's split of the reduced axis included) to a root or logical axis. */
static bool from_columns(const OuterPlan *p, Val *tv, Val *id) {
  while (id->def && (id->def->op == OP_SPLIT || id->def->op == OP_MERGE)) id = id->def->in[0];
  TensorView *t = TV(tv);
  for (int x = 0; x < t->nroot; x++)
    if (t->root[x] == id) return x >= p->r.nred;
  for (int x = 0; x < t->nlogical; x++)
    if (t->logical[x] == id) return x >= p->r.nred;
  return false;
}

/* Propagation orders each tensor's axes by the neighbour it was replayed from, so after it
 * a tensor of the full shape is [Io, tx, v, p, ty] or [Io, tx, p, ty, v], a reduction
 * [Io, tx, ty, v] or [Io, tx, v, ty]. Each is put in rf's order [Io, tx, p, ty, v] (loops
 * shared position by position, the vector innermost) and each reduction's threadIdx.y axis
 * goes innermost (a reduction across threads keeps one accumulator per thread: no
 * iteration axis inside it). Column tensors ([Io, tx, v]) are in order already. */
static void order_rows_inner(cf_fusion *f, const OuterPlan *p, cf_tv *rf) {
  for (int i = 0; i < f->vals.len && !f->status && p->vec > 1; i++) {
    Val *v = f->vals.items[i];
    if (v->kind != VAL_TV || v == ir_tv(rf) || TV(v)->nloop != 5) continue;
    for (int x = 2; x < 4; x++)
      if (from_columns(p, v, TV(v)->loop[x])) {
        cf_reorder(f, ir_tv_handle(v), 1, (int[]){x, 4});
        break;
      }
  }
  for (int r = 0; r < p->r.nreds && !f->status; r++) {
    Val *red = p->r.reds[r];
    int n = TV(red)->nloop;
    for (int x = 0; x < n - 1; x++)
      if (ID(TV(red)->loop[x])->iter_type == CF_ITER_REDUCTION) {
        cf_reorder(f, ir_tv_handle(red), 1, (int[]){x, n - 1});
        break;
      }
  }
}

static cf_status outer_schedule(cf_fusion *f, const SchedCall *call, char *params) {
  OuterPlan p = {0};
  Arena *a = sched_persistent_begin(&outer_checks, f, call, &p);
  if (!a) return f->status;
  Val **caches = ARENA_ARRAY(a, Val *, f->inputs.len + f->outputs.len);
  int ncaches = 0;
  if (caches) sched_persistent_caches(f, p.cached, p.full_out, p.vec > 1, caches, &ncaches);
  cf_tv *ref = ir_tv_handle(p.r.reds[0]);
  split_rows(f, &p, ref);
  cf_propagate_transforms(f, ref);
  cf_tv *rf = NULL;
  for (int r = 0; r < p.r.nreds && !f->status; r++) {
    cf_tv *t = cf_rfactor(f, ir_tv_handle(p.r.reds[r]), 1, (int[]){0});
    if (r == 0) rf = t;
  }
  if (f->status) return arena_destroy(a), f->status;
  split_columns(f, &p, rf);
  cf_propagate_transforms(f, rf);
  order_rows_inner(f, &p, rf);
  cf_parallelize(f, rf, 0, CF_PT_BIDX);
  cf_parallelize(f, rf, 1, CF_PT_TIDX);
  /* A column of one row (sizes made constant by define and run) leaves ty serial: an
   * extent-1 threadIdx.y axis is not one the reduction reads across threads. */
  if (p.symbolic_rows || p.ty > 1) cf_parallelize(f, rf, 3, CF_PT_TIDY);
  cf_parallelize_all_like(f, rf, 3, (cf_parallel_type[]){CF_PT_BIDX, CF_PT_TIDX, CF_PT_TIDY});
  for (int c = 0; c < ncaches && p.vec > 1; c++) cf_parallelize(f, ir_tv_handle(caches[c]), -1, CF_PT_VECTORIZE);
  arena_destroy(a);
  if (f->status) return f->status;
  snprintf(params, SCHED_PARAMS_MAX, "threads=%lldx%lld%s persistent=%lld vector=%lld columns=blockIdx.x",
           (long long)p.tx, (long long)p.ty, p.symbolic_rows ? " (ceilDiv(rows, persistent) at run time)" : "",
           (long long)p.persist, (long long)p.vec);
  return cf_inline_most(f);
}

const SchedHeuristic sched_outer_persistent_heuristic = {"outer_persistent", outer_accepts, outer_schedule};
