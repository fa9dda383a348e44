/* scheduler/outer_persistent_sched.c: the outer persistent normalization scheduler
 * (sched_outer_persistent_heuristic, issue 11), a client of the public scheduling calls.
 * It schedules batch norm and its kin: fusions whose reductions all reduce the same
 * OUTERMOST axes of one N-D shape (x[N, C], or [N, H, W, C] reduced over N, H, W: per-column
 * statistics) and whose results are broadcast back over those axes and combined
 * elementwise with the columns they came from, e.g.
 *   y = (x - mean_N(x)) * rsqrt(mean_N((x - mean)^2) + eps) * w[C] + b[C].
 *
 * Accepted (outer_plan): elementwise ops, broadcasts and at least one reduction; every
 * reduction reduces the outermost k axes of a rank-N tensor (k < N: some column is kept),
 * all with the same extents (one exact-map class per axis); every broadcast has rank N and
 * puts back exactly the k outer axes ([C] -> [1, C]: a reduced result or a column
 * parameter such as a weight); every output has the full shape or the reduced one (the
 * batch statistics); one input has the full shape, without broadcast axes; the reduced
 * axes of a column hold at most what one block keeps in registers (below). Anything else
 * is refused with the reason. It comes after the reduction and inner persistent schedulers
 * in the table: a plain column sum stays the reduction scheduler's, softmax and layer norm
 * the inner one's (both refuse outer-reduced normalizations).
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
 *      OUTER_TARGET_THREADS/tx threads of threadIdx.y, or ty_max ones when p*v would pass
 *      OUTER_MAX_PER_THREAD; refused when even ty_max threads need more than
 *      OUTER_MAX_PER_THREAD registers each (R > ty_max * OUTER_MAX_PER_THREAD / v);
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
 * Not yet: a grid-persistent form (several blocks per column group, a grid all-reduce)
 * for columns longer than a block's registers: refused with the reason, and the
 * define-and-run executor then segments the fusion at its reductions. */
#include "scheduler/heuristic.h"
#include "scheduler/sched.h"

enum {
  OUTER_MAX_THREADS = 1024,   /* threads of one block */
  OUTER_TARGET_THREADS = 512, /* preferred block size */
  OUTER_MAX_PER_THREAD = 16,  /* elements of a column one thread keeps in registers */
  OUTER_BLOCK_COLUMNS = 32,   /* elements of a row one block reads (threadIdx.x x vector) */
  OUTER_VECTOR_BYTES = 16,
};

/* What accepts() found and the parameters for this call. */
typedef struct OuterPlan {
  Val **reds; /* the reductions' outputs, in topological order */
  int nreds;
  int rank;   /* N: logical rank of the full shape */
  int nred;   /* k: reduced outermost axes */
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

static bool outer_elementwise(const Expr *e) {
  OpKind k = ir_op_kind(e->op);
  return k == OPK_SET || k == OPK_UNARY || k == OPK_BINARY || k == OPK_TERNARY || k == OPK_CAST;
}

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

/* The reductions, each of the outermost k axes of a rank-N tensor; other ops elementwise
 * or broadcasts. */
static bool check_exprs(Arena *a, Expr **exprs, int n, OuterPlan *p, char *why) {
  p->reds = ARENA_ARRAY(a, Val *, n);
  if (!p->reds) return WHY("out of memory");
  for (int i = 0; i < n; i++) {
    Val *out = exprs[i]->out[0];
    OpKind k = ir_op_kind(exprs[i]->op);
    if (k != OPK_REDUCTION && k != OPK_BROADCAST && !outer_elementwise(exprs[i]))
      return WHY("%s is computed by %s, not an elementwise op, a broadcast or a reduction", TV(out)->display_name,
                 ir_op_name(exprs[i]->op));
    if (k != OPK_REDUCTION) continue;
    int nr = outer_reduced_axes(out, why), rank = TV(out)->nlogical;
    if (nr < 0) return false;
    if (p->nreds > 0 && (rank != p->rank || nr != p->nred))
      return WHY("%s reduces %d of %d axes, %s %d of %d (every reduction must reduce the same columns)",
                 TV(out)->display_name, nr, rank, TV(p->reds[0])->display_name, p->nred, p->rank);
    p->rank = rank, p->nred = nr;
    p->reds[p->nreds++] = out;
  }
  return p->nreds > 0 ? true : WHY("the fusion has no reduction");
}

/* Broadcasts put back exactly the reduced outer axes. */
static bool check_broadcasts(Expr **exprs, int n, const OuterPlan *p, char *why) {
  for (int i = 0; i < n; i++) {
    if (ir_op_kind(exprs[i]->op) != OPK_BROADCAST) continue;
    const bool *b = exprs[i]->attr.broadcast.is_broadcast;
    bool ok = exprs[i]->attr.broadcast.rank == p->rank;
    for (int x = 0; x < p->rank && ok; x++) ok = b[x] == (x < p->nred);
    if (!ok)
      return WHY("%s broadcasts other axes than the %d reduced outer ones", TV(exprs[i]->out[0])->display_name,
                 p->nred);
  }
  return true;
}

/* tv has the full shape: rank N, axis by axis in the first reduction's exact class. */
static bool full_shape(const IdMap *m, const OuterPlan *p, Val *tv) {
  if (TV(tv)->nlogical != p->rank) return false;
  for (int x = 0; x < p->rank; x++)
    if (!sched_idmap_same(m, TV(tv)->logical[x], TV(p->reds[0])->logical[x])) return false;
  return true;
}

/* tv has the columns' shape (a column parameter, or a reduced result without its
 * reduction axes): its non-reduction axes, in order, in the classes of the kept axes. */
static bool column_shape(const IdMap *m, const OuterPlan *p, Val *tv) {
  int kept = 0, ncols = p->rank - p->nred;
  for (int x = 0; x < TV(tv)->nlogical; x++) {
    Val *id = TV(tv)->logical[x];
    if (ID(id)->iter_type == CF_ITER_REDUCTION) continue;
    if (kept >= ncols || !sched_idmap_same(m, id, TV(p->reds[0])->logical[p->nred + kept])) return false;
    kept++;
  }
  return kept == ncols;
}

/* Inputs to cache after (read once, with vectors); false when out of memory. */
static bool classify_inputs(cf_fusion *f, Arena *a, const IdMap *m, OuterPlan *p) {
  p->cached = ARENA_ARRAY(a, bool, f->inputs.len);
  if (!p->cached) return false;
  for (int i = 0; i < f->inputs.len; i++) {
    Val *in = f->inputs.items[i];
    bool has_bcast = false;
    for (int x = 0; x < TV(in)->nlogical; x++) has_bcast |= ID(TV(in)->logical[x])->iter_type == CF_ITER_BROADCAST;
    p->cached[i] = !has_bcast && in->uses.len > 0 && (full_shape(m, p, in) || column_shape(m, p, in));
  }
  return true;
}

static bool check_shapes(cf_fusion *f, Arena *a, const IdMap *m, OuterPlan *p, char *why) {
  for (int r = 1; r < p->nreds; r++)
    if (!full_shape(m, p, p->reds[r]))
      return WHY("%s reduces columns of other extents than %s", TV(p->reds[r])->display_name,
                 TV(p->reds[0])->display_name);
  p->full_index = -1;
  for (int i = 0; i < f->inputs.len && p->full_index < 0; i++)
    if (full_shape(m, p, f->inputs.items[i])) p->full_index = i, p->full_input = f->inputs.items[i];
  if (p->full_index < 0) return WHY("no input has the full shape");
  for (int x = 0; x < p->rank; x++)
    if (ID(TV(p->full_input)->logical[x])->iter_type == CF_ITER_BROADCAST)
      return WHY("%s has a broadcast axis (a constant extent of 1)", TV(p->full_input)->display_name);
  p->full_out = ARENA_ARRAY(a, bool, f->outputs.len);
  if (!p->full_out) return WHY("out of memory");
  for (int o = 0; o < f->outputs.len; o++) {
    Val *out = f->outputs.items[o];
    bool reduction = out->def && ir_op_kind(out->def->op) == OPK_REDUCTION;
    p->full_out[o] = !reduction && full_shape(m, p, out);
    if (!p->full_out[o] && !column_shape(m, p, out))
      return WHY("output %s has neither the full shape nor the reduced one", TV(out)->display_name);
  }
  return classify_inputs(f, a, m, p) ? true : WHY("out of memory");
}

/* R and I: the call's sizes of the full input, else the fusion's constants. */
static bool read_sizes(const SchedCall *call, OuterPlan *p, char *why) {
  bool have_call = call && call->ninputs > p->full_index && call->inputs;
  p->rows = p->cols = 1;
  p->symbolic_rows = p->symbolic_inner = false;
  for (int x = 0; x < p->rank; x++) {
    int64_t e;
    bool c = ir_scalar_const_value(ID(TV(p->full_input)->logical[x])->extent, &e);
    if (have_call) e = call->inputs[p->full_index]->shape[x];
    else if (!c) return WHY("the sizes of %s are symbolic and the call gives none", TV(p->full_input)->display_name);
    if (x < p->nred) p->rows *= e, p->symbolic_rows |= !c;
    else p->cols *= e, p->inner = e, p->symbolic_inner = !c;
  }
  if (p->rows < 1 || p->cols < 1) return WHY("%s is empty", TV(p->full_input)->display_name);
  return true;
}

/* ---- parameters ---------------------------------------------------------------------- */

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* A DLTensor laid out row-major without gaps. */
static bool dl_contiguous(const DLTensor *t) {
  if (!t->strides) return true;
  int64_t want = 1;
  for (int x = t->ndim - 1; x >= 0; x--) {
    if (t->shape[x] != 1 && t->strides[x] != want) return false;
    want *= t->shape[x];
  }
  return true;
}

/* The vector width in elements (1 for a symbolic innermost extent or a strided input). */
static int64_t vector_width(cf_fusion *f, const SchedCall *call, const OuterPlan *p) {
  if (p->symbolic_inner) return 1;
  size_t widest = 1;
  for (int o = 0; o < f->outputs.len; o++) {
    Val *out = f->outputs.items[o];
    if (cf_dtype_size(out->dtype) > widest) widest = cf_dtype_size(out->dtype);
  }
  bool have_call = call && call->ninputs == f->inputs.len && call->inputs;
  for (int i = 0; i < f->inputs.len; i++) {
    Val *in = f->inputs.items[i];
    if (!p->cached[i]) continue;
    if (TV(in)->has_strides || (have_call && !dl_contiguous(call->inputs[i]))) return 1;
    if (cf_dtype_size(in->dtype) > widest) widest = cf_dtype_size(in->dtype);
  }
  int64_t v = OUTER_VECTOR_BYTES / (int64_t)widest;
  for (int i = 0; have_call && i < f->inputs.len; i++) {
    Val *in = f->inputs.items[i];
    if (!p->cached[i]) continue;
    uintptr_t addr = (uintptr_t)call->inputs[i]->data + (uintptr_t)call->inputs[i]->byte_offset;
    while (v > 1 && addr % (uintptr_t)(v * (int64_t)cf_dtype_size(in->dtype)) != 0) v /= 2;
  }
  while (v > 1 && p->inner % v != 0) v /= 2;
  return v < 1 ? 1 : v;
}

/* tx, ty and p (see the heuristic above); false with the reason when the column's
 * reduced axes do not fit one block's registers. */
static bool choose_block(OuterPlan *p, char *why) {
  int64_t vcols = ceil_div(p->cols, p->vec), max_tx = OUTER_BLOCK_COLUMNS / p->vec;
  p->tx = 1;
  while (p->tx < vcols && p->tx < max_tx) p->tx *= 2;
  int64_t ty_max = OUTER_MAX_THREADS / p->tx, per = OUTER_MAX_PER_THREAD / p->vec;
  if (p->rows > ty_max * per)
    return WHY("columns of %s hold %lld elements over the reduced axes, more than the %lld (%lld threads of "
               "threadIdx.y x %lld) kept in registers",
               TV(p->full_input)->display_name, (long long)p->rows, (long long)(ty_max * per), (long long)ty_max,
               (long long)per);
  p->persist = ceil_div(p->rows, OUTER_TARGET_THREADS / p->tx);
  if (p->persist > per) p->persist = ceil_div(p->rows, ty_max);
  p->ty = ceil_div(p->rows, p->persist);
  if (!p->symbolic_rows) p->persist = ceil_div(p->rows, p->ty);
  return true;
}

static bool outer_plan(cf_fusion *f, Arena *a, const SchedCall *call, OuterPlan *p, char *why) {
  *p = (OuterPlan){0};
  int n;
  Expr **exprs = ir_fusion_tensor_exprs_in(a, f, &n);
  if (!exprs) return WHY("out of memory");
  if (!check_exprs(a, exprs, n, p, why) || !check_broadcasts(exprs, n, p, why)) return false;
  IdMap *m = sched_idmap_build(f, false);
  if (!m) return WHY("out of memory");
  bool ok = check_shapes(f, a, m, p, why) && read_sizes(call, p, why);
  sched_idmap_free(m);
  if (!ok) return false;
  p->vec = vector_width(f, call, p);
  return choose_block(p, why);
}

static bool outer_accepts(cf_fusion *f, const SchedCall *call, char *why) {
  Arena *a = arena_create();
  if (!a) return WHY("out of memory");
  OuterPlan p;
  bool ok = outer_plan(f, a, call, &p, why);
  arena_destroy(a);
  return ok;
}

/* ---- the schedule -------------------------------------------------------------------- */

/* Caches the cached inputs and, for vector stores, the full-shape outputs. */
static void outer_caches(cf_fusion *f, const OuterPlan *p, Val **caches, int *ncaches) {
  *ncaches = 0;
  for (int i = 0; i < f->inputs.len; i++) {
    if (!p->cached[i]) continue;
    cf_tv *c = cf_cache_after(f, ir_tv_handle(f->inputs.items[i]));
    if (c) caches[(*ncaches)++] = ir_tv(c);
  }
  for (int o = 0; p->vec > 1 && o < f->outputs.len; o++)
    if (p->full_out[o] && cf_cache_before(f, ir_tv_handle(f->outputs.items[o])))
      caches[(*ncaches)++] = f->outputs.items[o];
}

/* The reference's reduced axes merged and split into [p, ty]. */
static void split_rows(cf_fusion *f, const OuterPlan *p, cf_tv *ref) {
  for (int k = 1; k < p->nred; k++) cf_merge(f, ref, 0);
  if (p->symbolic_rows) cf_split_outer(f, ref, 0, p->persist);
  else cf_split(f, ref, 0, p->ty);
}

/* The rfactor tensor's kept axes (from position 2) merged and split into [Io, tx, v],
 * then the loops ordered [Io, tx, p, ty, v]: the column's parallel axes outermost (every
 * tensor shares them), then the serial fold over p, which bounds how deep rf inlines into
 * the reduction it feeds (rf's ty is an iteration axis, the reduction's a reduced one:
 * they cannot share a loop), and the vector innermost. */
static void split_columns(cf_fusion *f, const OuterPlan *p, cf_tv *rf) {
  for (int k = 1; k < p->rank - p->nred; k++) cf_merge(f, rf, 2);
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
    if (t->root[x] == id) return x >= p->nred;
  for (int x = 0; x < t->nlogical; x++)
    if (t->logical[x] == id) return x >= p->nred;
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
  for (int r = 0; r < p->nreds && !f->status; r++) {
    Val *red = p->reds[r];
    int n = TV(red)->nloop;
    for (int x = 0; x < n - 1; x++)
      if (ID(TV(red)->loop[x])->iter_type == CF_ITER_REDUCTION) {
        cf_reorder(f, ir_tv_handle(red), 1, (int[]){x, n - 1});
        break;
      }
  }
}

static cf_status outer_schedule(cf_fusion *f, const SchedCall *call, char *params) {
  char why[SCHED_WHY_MAX];
  Arena *a = arena_create();
  OuterPlan p;
  if (!a) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "outer_persistent: out of memory");
  if (!outer_plan(f, a, call, &p, why)) return arena_destroy(a), ir_error(f, CF_ERR_UNSUPPORTED, "%s", why);
  Val **caches = ARENA_ARRAY(a, Val *, f->inputs.len + f->outputs.len);
  int ncaches = 0;
  if (caches) outer_caches(f, &p, caches, &ncaches);
  cf_tv *ref = ir_tv_handle(p.reds[0]);
  split_rows(f, &p, ref);
  cf_propagate_transforms(f, ref);
  cf_tv *rf = NULL;
  for (int r = 0; r < p.nreds && !f->status; r++) {
    cf_tv *t = cf_rfactor(f, ir_tv_handle(p.reds[r]), 1, (int[]){0});
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
