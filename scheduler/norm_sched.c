/* scheduler/norm_sched.c: the inner persistent normalization scheduler
 * (sched_inner_persistent_heuristic, issue 11), a client of the public scheduling calls.
 * It schedules softmax, layer norm, RMS norm and their kin: fusions whose reductions all
 * reduce the same innermost axes of one N-D shape and whose results are broadcast back
 * and combined elementwise with the rows they came from.
 *
 * Accepted (norm_plan): elementwise ops, broadcasts and at least one reduction; every
 * reduction reduces the innermost k axes of a tensor of rank N, all of the same extents
 * (one exact-map class per axis); every broadcast either puts back the k reduced axes
 * ([rows] -> [rows, 1]) or spreads a tensor of the row's shape over the outer axes (a
 * weight or bias [row] -> [1, row]); every output has the rows' shape or the reduced one
 * (a layer norm's mean and rstd for the backward pass); one input has the rows' shape
 * (its sizes in the call give the row length); no constant extent of 1 (a broadcast axis)
 * in the rows' shape; rows of at most NORM_MAX_ROW elements (NORM_MAX_THREADS threads of
 * NORM_ROW_PER_THREAD elements: kept in registers; a block may give a thread up to
 * NORM_MAX_PER_THREAD of a shorter row). Anything else is refused with the
 * reason.
 *
 * Heuristic (norm_schedule), for a row of length R (the inner axes merged) and the outer
 * axes merged into I:
 *   1. vector width v: 16 bytes over the widest element of the inputs of the rows' shape
 *      and the outputs, halved until it divides a constant R and the call's pointers are
 *      aligned; 1 for a symbolic R or a non-contiguous input;
 *   2. persistent count p (vectors per thread): the fewest that give at most
 *      NORM_TARGET_THREADS threads, capped so that p*v stays within NORM_MAX_PER_THREAD
 *      (more threads then); for a constant R the thread count t is rounded up to whole
 *      warps (warp-shuffle all-reduce) and p recomputed: the row is [p, t{32k}, v]
 *      (cf_split by t, predicated where t*v does not divide R); for a symbolic R the row
 *      is [p, ceilDiv(R/v, p), v] (cf_split_outer by p, so the register arrays keep the
 *      constant size p*v; the thread count follows R at run time, and the executor
 *      refuses a launch past 1024 threads);
 *   3. inputs of the rows' shape and row parameters are cached after (the persistent copy
 *      in registers, read from global memory once, with vector loads), outputs of the
 *      rows' shape cached before (vector stores) when v > 1;
 *   4. the first reduction's loop domain [I..., p, t, v] is propagated to every tensor,
 *      each reduction is rfactored over p and v (a serial fold per thread) leaving a
 *      threadIdx.x block all-reduce whose result every thread holds; then the outer axes
 *      are merged (after the rfactor: its iteration axes must be untransformed) and
 *      propagated; blockIdx.x takes I, threadIdx.x t, v is vectorized on the caches;
 *   5. everything is inlined as deep as legal: the loop graph stops every tensor that a
 *      reduction and the tensors computed from that reduction both read at the row
 *      (position 1), which makes it a per-thread register array of p*v elements: the
 *      persistent buffer. The epilogue is inlined into the output's loops.
 * Tuned on an H200 (bench/norm.c, 16384x4096, GB/s of softmax f32 / layer norm f32 /
 * softmax bf16; the device copies at 3938): 512 threads and 16 per thread 3595 / 3493 /
 * 1929; 256 and 16: 3820 / 3857 / 2723; 128 and 32: 3829 / 3835 / 3195; 64 and 64:
 * 3787 / 3820 / 2945. Fewer threads with more of the row each make the block all-reduce
 * cheaper and keep more loads in flight per thread.
 * bfloat16 and half inputs are widened by the fusion's own casts; the cached input keeps
 * its type, the cast result (float) is what persists in registers.
 * A reduced output (mean, rstd) is written by thread 0 of the row's block and, when the
 * kernel reads it too, read back by every thread after a __syncthreads (lowering's rule for
 * a global tensor written and read in one block); a cache fork (consumers reading a
 * register copy) would save the sync, but the public calls have none yet.
 * Not yet: several blocks per row, rows beyond registers (shared memory persistence or a
 * segmented fallback): refused with reasons. */
#include "scheduler/heuristic.h"
#include "scheduler/sched.h"

enum {
  NORM_MAX_THREADS = 1024,   /* threads of one block */
  NORM_TARGET_THREADS = 128, /* preferred block size (tuned below) */
  NORM_MAX_PER_THREAD = 32,  /* elements of a row one thread keeps in registers */
  NORM_ROW_PER_THREAD = 16,  /* what the row limit allows a thread: longer rows are not measured */
  NORM_MAX_ROW = NORM_MAX_THREADS * NORM_ROW_PER_THREAD,
  NORM_WARP = 32,
  NORM_VECTOR_BYTES = 16,
};

/* What accepts() found and the parameters for this call. */
typedef struct NormPlan {
  Val **reds; /* the reductions' outputs, in topological order */
  int nreds;
  int rank;   /* N: logical rank of the rows' shape */
  int nred;   /* k: reduced innermost axes */
  Val *row_input; /* an input of the rows' shape */
  int row_index;  /* its position among the fusion's inputs */
  bool *row_out;  /* per fusion output: of the rows' shape (else a reduced result) */
  bool *vec_in;   /* per fusion input: cached and read with vectors (inputs of the rows'
                   * shape and row parameters such as a layer norm's weight) */
  int64_t row;    /* R for this call */
  int64_t inner;  /* the innermost extent for this call (what a vector must divide) */
  bool symbolic;  /* R is not a constant of the fusion */
  int64_t vec, persist, threads;
} NormPlan;

#define WHY(...) (snprintf(why, SCHED_WHY_MAX, "inner_persistent: " __VA_ARGS__), false)

static bool norm_elementwise(const Expr *e) {
  OpKind k = ir_op_kind(e->op);
  return k == OPK_SET || k == OPK_UNARY || k == OPK_BINARY || k == OPK_TERNARY || k == OPK_CAST;
}

/* The reductions, each of the innermost k axes of a rank-N tensor; other ops elementwise
 * or broadcasts. */
static bool check_exprs(Arena *a, Expr **exprs, int n, NormPlan *p, char *why) {
  p->reds = ARENA_ARRAY(a, Val *, n);
  if (!p->reds) return WHY("out of memory");
  for (int i = 0; i < n; i++) {
    Val *out = exprs[i]->out[0];
    OpKind k = ir_op_kind(exprs[i]->op);
    if (k != OPK_REDUCTION && k != OPK_BROADCAST && !norm_elementwise(exprs[i]))
      return WHY("%s is computed by %s, not an elementwise op, a broadcast or a reduction", TV(out)->display_name,
                 ir_op_name(exprs[i]->op));
    if (k != OPK_REDUCTION) continue;
    int nr = 0, rank = TV(out)->nlogical;
    for (int x = 0; x < rank; x++) {
      bool r = ID(TV(out)->logical[x])->iter_type == CF_ITER_REDUCTION;
      if (nr > 0 && !r) return WHY("%s reduces an axis before a kept one (only innermost axes)", TV(out)->display_name);
      nr += r;
    }
    if (p->nreds > 0 && (rank != p->rank || nr != p->nred))
      return WHY("%s reduces %d of %d axes, %s %d of %d (every reduction must reduce the same rows)",
                 TV(out)->display_name, nr, rank, TV(p->reds[0])->display_name, p->nred, p->rank);
    p->rank = rank, p->nred = nr;
    p->reds[p->nreds++] = out;
  }
  return p->nreds > 0 ? true : WHY("the fusion has no reduction");
}

/* Broadcasts put back the reduced axes or spread a row over the outer axes. */
static bool check_broadcasts(Expr **exprs, int n, const NormPlan *p, char *why) {
  for (int i = 0; i < n; i++) {
    if (ir_op_kind(exprs[i]->op) != OPK_BROADCAST) continue;
    const bool *b = exprs[i]->attr.broadcast.is_broadcast;
    bool inner = exprs[i]->attr.broadcast.rank == p->rank, outer = inner;
    for (int x = 0; x < p->rank && (inner || outer); x++) {
      bool reduced = x >= p->rank - p->nred;
      inner = inner && b[x] == reduced;
      outer = outer && b[x] == !reduced;
    }
    if (!inner && !outer)
      return WHY("%s broadcasts other axes than the %d reduced ones or the %d outer ones",
                 TV(exprs[i]->out[0])->display_name, p->nred, p->rank - p->nred);
  }
  return true;
}

/* tv has the rows' shape: rank N, axis by axis in the reference's exact class. */
static bool rows_shape(const IdMap *m, const NormPlan *p, Val *tv) {
  if (TV(tv)->nlogical != p->rank) return false;
  for (int x = 0; x < p->rank; x++)
    if (!sched_idmap_same(m, TV(tv)->logical[x], TV(p->reds[0])->logical[x])) return false;
  return true;
}

/* tv is a row parameter: rank k, axis by axis in the class of a reduced axis. */
static bool row_param(const IdMap *m, const NormPlan *p, Val *tv) {
  if (TV(tv)->nlogical != p->nred || p->nred == p->rank) return false;
  for (int x = 0; x < p->nred; x++)
    if (!sched_idmap_same(m, TV(tv)->logical[x], TV(p->reds[0])->logical[p->rank - p->nred + x])) return false;
  return true;
}

/* Inputs to cache with vector loads; false when out of memory. */
static bool classify_inputs(cf_fusion *f, Arena *a, const IdMap *m, NormPlan *p) {
  p->vec_in = ARENA_ARRAY(a, bool, f->inputs.len);
  if (!p->vec_in) return false;
  for (int i = 0; i < f->inputs.len; i++) {
    Val *in = f->inputs.items[i];
    bool has_bcast = false;
    for (int x = 0; x < TV(in)->nlogical; x++) has_bcast |= ID(TV(in)->logical[x])->iter_type == CF_ITER_BROADCAST;
    p->vec_in[i] = !has_bcast && in->uses.len > 0 && (rows_shape(m, p, in) || row_param(m, p, in));
  }
  return true;
}

/* tv is a reduced result: its kept axes, in order, in the classes of the outer axes. */
static bool reduced_shape(const IdMap *m, const NormPlan *p, Val *tv) {
  int kept = 0;
  for (int x = 0; x < TV(tv)->nlogical; x++) {
    Val *id = TV(tv)->logical[x];
    if (ID(id)->iter_type == CF_ITER_REDUCTION) continue;
    if (kept >= p->rank - p->nred || !sched_idmap_same(m, id, TV(p->reds[0])->logical[kept])) return false;
    kept++;
  }
  return kept == p->rank - p->nred;
}

static bool check_shapes(cf_fusion *f, Arena *a, const IdMap *m, NormPlan *p, char *why) {
  for (int r = 1; r < p->nreds; r++)
    if (!rows_shape(m, p, p->reds[r]))
      return WHY("%s reduces rows of other extents than %s", TV(p->reds[r])->display_name,
                 TV(p->reds[0])->display_name);
  p->row_out = ARENA_ARRAY(a, bool, f->outputs.len);
  if (!p->row_out) return WHY("out of memory");
  for (int o = 0; o < f->outputs.len; o++) {
    Val *out = f->outputs.items[o];
    bool reduction = out->def && ir_op_kind(out->def->op) == OPK_REDUCTION;
    p->row_out[o] = !reduction && rows_shape(m, p, out);
    if (!p->row_out[o] && !reduced_shape(m, p, out))
      return WHY("output %s has neither the rows' shape nor the reduced one", TV(out)->display_name);
  }
  p->row_index = -1;
  for (int i = 0; i < f->inputs.len && p->row_index < 0; i++)
    if (rows_shape(m, p, f->inputs.items[i])) p->row_index = i, p->row_input = f->inputs.items[i];
  if (p->row_index < 0) return WHY("no input has the rows' shape");
  for (int x = 0; x < p->rank; x++)
    if (ID(TV(p->row_input)->logical[x])->iter_type == CF_ITER_BROADCAST)
      return WHY("%s has a broadcast axis (a constant extent of 1)", TV(p->row_input)->display_name);
  return classify_inputs(f, a, m, p) ? true : WHY("out of memory");
}

/* The row length: the call's sizes of the row input, else the fusion's constants. */
static bool read_row(const SchedCall *call, NormPlan *p, char *why) {
  bool have_call = call && call->ninputs > p->row_index && call->inputs;
  p->row = 1;
  p->symbolic = false;
  for (int x = p->rank - p->nred; x < p->rank; x++) {
    int64_t e;
    bool c = ir_scalar_const_value(ID(TV(p->row_input)->logical[x])->extent, &e);
    p->symbolic |= !c;
    if (have_call) e = call->inputs[p->row_index]->shape[x];
    else if (!c) return WHY("the rows of %s are symbolic and the call gives no sizes", TV(p->row_input)->display_name);
    p->row *= e;
    p->inner = e;
  }
  if (p->row < 1) return WHY("the rows of %s are empty", TV(p->row_input)->display_name);
  if (p->row > NORM_MAX_ROW)
    return WHY("rows of %s hold %lld elements, more than the %d (%d threads x %d) kept in registers",
               TV(p->row_input)->display_name, (long long)p->row, NORM_MAX_ROW, NORM_MAX_THREADS, NORM_ROW_PER_THREAD);
  return true;
}

static bool norm_plan(cf_fusion *f, Arena *a, const SchedCall *call, NormPlan *p, char *why) {
  *p = (NormPlan){0};
  int n;
  Expr **exprs = ir_fusion_tensor_exprs_in(a, f, &n);
  if (!exprs) return WHY("out of memory");
  if (!check_exprs(a, exprs, n, p, why) || !check_broadcasts(exprs, n, p, why)) return false;
  IdMap *m = sched_idmap_build(f, false);
  if (!m) return WHY("out of memory");
  bool ok = check_shapes(f, a, m, p, why) && read_row(call, p, why);
  sched_idmap_free(m);
  return ok;
}

static bool norm_accepts(cf_fusion *f, const SchedCall *call, char *why) {
  Arena *a = arena_create();
  if (!a) return WHY("out of memory");
  NormPlan p;
  bool ok = norm_plan(f, a, call, &p, why);
  arena_destroy(a);
  return ok;
}

/* ---- parameters ---------------------------------------------------------------------- */

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

/* The vector width in elements (1 for a symbolic row or a strided input). */
static int64_t vector_width(cf_fusion *f, const SchedCall *call, const NormPlan *p) {
  if (p->symbolic) return 1;
  size_t widest = 1;
  for (int o = 0; o < f->outputs.len; o++) {
    Val *out = f->outputs.items[o];
    if (cf_dtype_size(out->dtype) > widest) widest = cf_dtype_size(out->dtype);
  }
  bool have_call = call && call->ninputs == f->inputs.len && call->inputs;
  int64_t v = NORM_VECTOR_BYTES;
  for (int i = 0; i < f->inputs.len; i++) {
    Val *in = f->inputs.items[i];
    if (!p->vec_in[i]) continue;
    if (TV(in)->has_strides || (have_call && !dl_contiguous(call->inputs[i]))) return 1;
    if (cf_dtype_size(in->dtype) > widest) widest = cf_dtype_size(in->dtype);
  }
  v /= (int64_t)widest;
  for (int i = 0; have_call && i < f->inputs.len; i++) {
    Val *in = f->inputs.items[i];
    if (!p->vec_in[i]) continue;
    uintptr_t addr = (uintptr_t)call->inputs[i]->data + (uintptr_t)call->inputs[i]->byte_offset;
    while (v > 1 && addr % (uintptr_t)(v * (int64_t)cf_dtype_size(in->dtype)) != 0) v /= 2;
  }
  while (v > 1 && p->inner % v != 0) v /= 2;
  return v < 1 ? 1 : v;
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Persistent vectors per thread and threads per row (see the heuristic above). */
static void choose_threads(NormPlan *p) {
  int64_t n = p->row / p->vec, cap = NORM_MAX_PER_THREAD / p->vec;
  p->persist = ceil_div(n, NORM_TARGET_THREADS);
  if (p->persist > cap) p->persist = cap > 1 ? cap : 1;
  p->threads = ceil_div(n, p->persist);
  if (p->symbolic) return;
  p->threads = ceil_div(p->threads, NORM_WARP) * NORM_WARP;
  p->persist = ceil_div(n, p->threads);
}

/* ---- the schedule -------------------------------------------------------------------- */

/* Caches the inputs of the rows' shape (the persistent copies) and, for vector stores,
 * the outputs; vectorizes them once the loop domains are final (vectorize true). */
static void norm_caches(cf_fusion *f, const NormPlan *p, Val **caches, int *ncaches) {
  *ncaches = 0;
  for (int i = 0; i < f->inputs.len; i++) {
    if (!p->vec_in[i]) continue;
    cf_tv *c = cf_cache_after(f, ir_tv_handle(f->inputs.items[i]));
    if (c) caches[(*ncaches)++] = ir_tv(c);
  }
  for (int o = 0; p->vec > 1 && o < f->outputs.len; o++)
    if (p->row_out[o] && cf_cache_before(f, ir_tv_handle(f->outputs.items[o])))
      caches[(*ncaches)++] = f->outputs.items[o];
}

/* The reference's reduced axes merged and split into [p, t, v]; returns the position of
 * p (0, then the outer axes are merged after the rfactor). */
static int split_row(cf_fusion *f, const NormPlan *p, cf_tv *ref) {
  int ri = p->rank - p->nred;
  for (int k = 1; k < p->nred; k++) cf_merge(f, ref, ri);
  if (p->vec > 1) cf_split(f, ref, ri, p->vec);
  if (p->symbolic) cf_split_outer(f, ref, ri, p->persist);
  else cf_split(f, ref, ri, p->threads);
  return ri;
}

static cf_status norm_schedule(cf_fusion *f, const SchedCall *call, char *params) {
  char why[SCHED_WHY_MAX];
  Arena *a = arena_create();
  NormPlan p;
  if (!a) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "inner_persistent: out of memory");
  if (!norm_plan(f, a, call, &p, why)) return arena_destroy(a), ir_error(f, CF_ERR_UNSUPPORTED, "%s", why);
  p.vec = vector_width(f, call, &p);
  choose_threads(&p);
  Val **caches = ARENA_ARRAY(a, Val *, f->inputs.len + f->outputs.len);
  int ncaches = 0;
  if (caches) norm_caches(f, &p, caches, &ncaches);
  cf_tv *ref = ir_tv_handle(p.reds[0]);
  int ri = split_row(f, &p, ref);
  cf_propagate_transforms(f, ref);
  int rf_axes[2] = {ri, ri + 2};
  cf_tv *rf = NULL;
  for (int r = 0; r < p.nreds && !f->status; r++) {
    cf_tv *t = cf_rfactor(f, ir_tv_handle(p.reds[r]), p.vec > 1 ? 2 : 1, rf_axes);
    if (r == 0) rf = t;
  }
  if (f->status) return arena_destroy(a), f->status;
  for (int k = 1; k < ri; k++) cf_merge(f, rf, 0);
  if (ri > 1) cf_propagate_transforms(f, rf);
  int pi = ri > 0 ? 1 : 0; /* p's position once the outer axes are one */
  if (ri > 0) cf_parallelize(f, rf, 0, CF_PT_BIDX);
  cf_parallelize(f, rf, pi + 1, CF_PT_TIDX);
  cf_parallelize_all_like(f, rf, 2, (cf_parallel_type[]){CF_PT_BIDX, CF_PT_TIDX});
  for (int c = 0; c < ncaches && p.vec > 1; c++) cf_parallelize(f, ir_tv_handle(caches[c]), -1, CF_PT_VECTORIZE);
  arena_destroy(a);
  if (f->status) return f->status;
  snprintf(params, SCHED_PARAMS_MAX, "threads=%lld%s persistent=%lld vector=%lld rows=%s", (long long)p.threads,
           p.symbolic ? " (ceilDiv(row, persistent) at run time)" : "", (long long)p.persist, (long long)p.vec,
           ri > 0 ? "blockIdx.x" : "1");
  return cf_inline_most(f);
}

const SchedHeuristic sched_inner_persistent_heuristic = {"inner_persistent", norm_accepts, norm_schedule};
