/* scheduler/norm_sched.c: the inner persistent normalization scheduler
 * (sched_inner_persistent_heuristic, issue 11), a client of the public scheduling calls.
 * It schedules softmax, layer norm, RMS norm and their kin: fusions whose reductions all
 * reduce the same innermost axes of one N-D shape and whose results are broadcast back
 * and combined elementwise with the rows they came from.
 *
 * Accepted (norm_checks, run by scheduler/persistent.c): elementwise ops, broadcasts and
 * at least one reduction; every reduction reduces the innermost k axes of a tensor of rank
 * N, all of the same extents (one exact-map class per axis); every broadcast either puts
 * back the k reduced axes ([rows] -> [rows, 1]) or spreads a tensor of the row's shape
 * over the outer axes (a weight or bias [row] -> [1, row]); every output has the rows'
 * shape or the reduced one (a layer norm's mean and rstd for the backward pass); one input
 * has the rows' shape (its sizes in the call give the row length); no constant extent of 1
 * (a broadcast axis) in the rows' shape; rows of at most NORM_MAX_ROW elements
 * (NORM_MAX_THREADS threads of SCHED_FULL_BLOCK_PER_THREAD elements: kept in registers; a block
 * may give a thread up to NORM_MAX_PER_THREAD of a shorter row). Anything else is refused
 * with the reason.
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
#include "scheduler/persistent.h"

enum {
  NORM_MAX_THREADS = 1024,   /* threads of one block */
  NORM_TARGET_THREADS = 128, /* preferred block size (tuned below) */
  NORM_MAX_PER_THREAD = 32,  /* elements of a row one thread keeps in registers */
  NORM_MAX_ROW = NORM_MAX_THREADS * SCHED_FULL_BLOCK_PER_THREAD,
  NORM_WARP = 32,
};

/* What accepts() found and the parameters for this call. */
typedef struct NormPlan {
  SchedReductions r; /* first (persistent.h): the reductions, all of rank N, reducing k axes */
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

/* The number of reduced axes of a reduction output, all innermost; -1 (why set) if not. */
static int inner_reduced_axes(Val *out, char *why) {
  int nr = 0;
  for (int x = 0; x < TV(out)->nlogical; x++) {
    bool r = ID(TV(out)->logical[x])->iter_type == CF_ITER_REDUCTION;
    if (nr > 0 && !r) {
      (void)WHY("%s reduces an axis before a kept one (only innermost axes)", TV(out)->display_name);
      return -1;
    }
    nr += r;
  }
  return nr;
}

/* A broadcast puts back the reduced axes or spreads a row over the outer axes. */
static bool check_broadcast(const Expr *e, const void *plan, char *why) {
  const NormPlan *p = plan;
  const bool *b = e->attr.broadcast.is_broadcast;
  bool inner = e->attr.broadcast.rank == p->r.rank, outer = inner;
  for (int x = 0; x < p->r.rank && (inner || outer); x++) {
    bool reduced = x >= p->r.rank - p->r.nred;
    inner = inner && b[x] == reduced;
    outer = outer && b[x] == !reduced;
  }
  if (!inner && !outer)
    return WHY("%s broadcasts other axes than the %d reduced ones or the %d outer ones", TV(e->out[0])->display_name,
               p->r.nred, p->r.rank - p->r.nred);
  return true;
}

/* The tensors of the rows' shape (the first reduction's, axis by axis in its exact
 * classes); outputs of that shape or the reduced one (the outer axes kept, in order); an
 * input of the rows' shape without broadcast axes. The inputs cached with vector loads
 * are those of the rows' shape and the row parameters (rank k, in the classes of the
 * reduced axes). */
static bool check_shapes(cf_fusion *f, Arena *a, const IdMap *m, NormPlan *p, char *why) {
  Val *ref = p->r.reds[0];
  int bad;
  p->row_out = sched_full_outputs(f, a, m, ref, 0, p->r.rank - p->r.nred, &bad);
  if (!p->row_out)
    return bad < 0 ? WHY("out of memory")
                   : WHY("output %s has neither the rows' shape nor the reduced one",
                         TV(f->outputs.items[bad])->display_name);
  p->row_index = sched_input_like(f, m, ref);
  if (p->row_index < 0) return WHY("no input has the rows' shape");
  p->row_input = f->inputs.items[p->row_index];
  if (sched_has_broadcast(p->row_input))
    return WHY("%s has a broadcast axis (a constant extent of 1)", TV(p->row_input)->display_name);
  p->vec_in = sched_cached_inputs(f, a, m, ref, p->r.rank - p->r.nred, p->r.nred);
  return p->vec_in ? true : WHY("out of memory");
}

/* The row length: the call's sizes of the row input, else the fusion's constants. */
static bool read_row(const SchedCall *call, NormPlan *p, char *why) {
  bool have_call = call && call->ninputs > p->row_index && call->inputs;
  p->row = 1;
  p->symbolic = false;
  for (int x = p->r.rank - p->r.nred; x < p->r.rank; x++) {
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
               TV(p->row_input)->display_name, (long long)p->row, NORM_MAX_ROW, NORM_MAX_THREADS,
               SCHED_FULL_BLOCK_PER_THREAD);
  return true;
}

static bool norm_shapes(cf_fusion *f, Arena *a, const IdMap *m, const SchedCall *call, void *p, char *why) {
  return check_shapes(f, a, m, p, why) && read_row(call, p, why);
}

static const SchedPersistent norm_checks = {"inner_persistent", "rows", inner_reduced_axes, check_broadcast,
                                             norm_shapes};

static bool norm_accepts(cf_fusion *f, const SchedCall *call, char *why) {
  NormPlan p = {0};
  return sched_persistent_accepts(&norm_checks, f, call, &p, why);
}

/* ---- parameters ---------------------------------------------------------------------- */

/* Persistent vectors per thread and threads per row (see the heuristic above). */
static void choose_threads(NormPlan *p) {
  int64_t n = p->row / p->vec, cap = NORM_MAX_PER_THREAD / p->vec;
  p->persist = sched_ceil_div(n, NORM_TARGET_THREADS);
  if (p->persist > cap) p->persist = cap > 1 ? cap : 1;
  p->threads = sched_ceil_div(n, p->persist);
  if (p->symbolic) return;
  p->threads = sched_ceil_div(p->threads, NORM_WARP) * NORM_WARP;
  p->persist = sched_ceil_div(n, p->threads);
}

/* ---- the schedule -------------------------------------------------------------------- */

/* The reference's reduced axes merged and split into [p, t, v]; returns the position of
 * p (0, then the outer axes are merged after the rfactor). */
static int split_row(cf_fusion *f, const NormPlan *p, cf_tv *ref) {
  int ri = p->r.rank - p->r.nred;
  for (int k = 1; k < p->r.nred; k++) cf_merge(f, ref, ri);
  if (p->vec > 1) cf_split(f, ref, ri, p->vec);
  if (p->symbolic) cf_split_outer(f, ref, ri, p->persist);
  else cf_split(f, ref, ri, p->threads);
  return ri;
}

static cf_status norm_schedule(cf_fusion *f, const SchedCall *call, char *params) {
  NormPlan p = {0};
  Arena *a = sched_persistent_begin(&norm_checks, f, call, &p);
  if (!a) return f->status;
  p.vec = p.symbolic ? 1 : sched_vector_width(f, call, p.vec_in, p.inner);
  choose_threads(&p);
  Val **caches = ARENA_ARRAY(a, Val *, f->inputs.len + f->outputs.len);
  int ncaches = 0;
  if (caches) sched_persistent_caches(f, p.vec_in, p.row_out, p.vec > 1, caches, &ncaches);
  cf_tv *ref = ir_tv_handle(p.r.reds[0]);
  int ri = split_row(f, &p, ref);
  cf_propagate_transforms(f, ref);
  int rf_axes[2] = {ri, ri + 2};
  cf_tv *rf = NULL;
  for (int r = 0; r < p.r.nreds && !f->status; r++) {
    cf_tv *t = cf_rfactor(f, ir_tv_handle(p.r.reds[r]), p.vec > 1 ? 2 : 1, rf_axes);
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
