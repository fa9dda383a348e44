/* scheduler/pointwise.c: the automatic pointwise scheduler (cf_schedule_pointwise), a
 * client of the public scheduling calls like nvFuser's pointwise scheduler.
 * Heuristic, in order:
 *   1. the reference is the first output; every output must have its rank and extents;
 *   2. the vector width is 16 bytes over the widest element of the tensors it touches
 *      (inputs of the reference's rank and the outputs), halved until it divides the
 *      innermost extent, which must be a constant; 1 when a touched tensor is strided;
 *   3. those inputs are cached after (vector loads), the outputs cached before (vector
 *      stores);
 *   4. the reference's axes are merged into one and split into
 *      [blockIdx.x, threadIdx.x{128}, vector{v}], propagated to every tensor and
 *      parallelized alike (an output the propagation does not reach, of another
 *      connected component, gets the same from itself); the caches' innermost axes are
 *      vectorized; everything is inlined as deep as legal.
 * As sched_pointwise_heuristic (define and run), it accepts a fusion of elementwise ops
 * whose outputs share the first one's shape (alignment is the executor's: it devectorizes
 * the schedule of a call with a misaligned tensor).
 * Key decision: one 1-D schedule for every elementwise fusion (nvFuser's 2-D break-point
 * search is not implemented): it moves data at the device's copy bandwidth on contiguous
 * tensors (bench/pointwise.c), the case that matters most. */
#include "scheduler/heuristic.h"
#include "scheduler/sched.h"

enum { THREADS = 128 };

static bool elementwise(const Expr *e) { return ir_op_is_pointwise(e->op); }

/* Why the pointwise scheduler cannot take f: the reason (after "schedule_pointwise: ")
 * in why, the tensor it is about in *tv, and the status; CF_OK when it can. */
static cf_status refusal(cf_fusion *f, Val *ref, char *why, Val **tv) {
  int n;
  Expr **exprs = ir_fusion_tensor_exprs(f, &n);
  for (int i = 0; i < n; i++)
    if (!elementwise(exprs[i])) {
      *tv = exprs[i]->out[0];
      snprintf(why, SCHED_WHY_MAX, "%s is computed by %s; the pointwise scheduler takes elementwise ops only",
               TV(*tv)->display_name, ir_op_name(exprs[i]->op));
      return CF_ERR_UNSUPPORTED;
    }
  Val **tvs = ir_fusion_all_tvs(f, &n);
  for (int i = 0; i < n; i++)
    if (!ir_tv_is_input(f, tvs[i]) && (TV(tvs[i])->nloop != TV(tvs[i])->nlogical || TV(tvs[i])->ca_pos > 0)) {
      *tv = tvs[i];
      snprintf(why, SCHED_WHY_MAX, "%s is scheduled already", TV(*tv)->display_name);
      return CF_ERR_INVALID_SCHEDULE;
    }
  for (int o = 1; o < f->outputs.len; o++) {
    Val *out = f->outputs.items[o];
    bool same = TV(out)->nlogical == TV(ref)->nlogical;
    for (int a = 0; same && a < TV(ref)->nlogical; a++)
      same = ID(TV(out)->logical[a])->extent == ID(TV(ref)->logical[a])->extent ||
             (ir_scalar_is_const(ID(TV(out)->logical[a])->extent) &&
              SC(ID(TV(out)->logical[a])->extent)->i == SC(ID(TV(ref)->logical[a])->extent)->i);
    if (!same) {
      *tv = out;
      snprintf(why, SCHED_WHY_MAX, "output %s has another shape than %s", TV(out)->display_name, TV(ref)->display_name);
      return CF_ERR_UNSUPPORTED;
    }
  }
  return CF_OK;
}

/* Inputs whose accesses run along the reference's innermost axis: same rank, not
 * broadcast there. */
static bool full_rank_input(Val *in, Val *ref) {
  int r = TV(ref)->nlogical;
  return TV(in)->nlogical == r && r > 0 && ID(TV(in)->logical[r - 1])->iter_type == CF_ITER_ITERATION;
}

static int64_t vector_width(cf_fusion *f, Val *ref) {
  int r = TV(ref)->nlogical;
  int64_t inner;
  if (r == 0 || !ir_scalar_const_value(ID(TV(ref)->logical[r - 1])->extent, &inner)) return 1;
  size_t widest = 1;
  for (int i = 0; i < f->inputs.len + f->outputs.len; i++) {
    Val *t = i < f->inputs.len ? f->inputs.items[i] : f->outputs.items[i - f->inputs.len];
    if (i < f->inputs.len && !full_rank_input(t, ref)) continue;
    if (TV(t)->has_strides) return 1;
    if (cf_dtype_size(t->dtype) > widest) widest = cf_dtype_size(t->dtype);
  }
  int64_t v = (int64_t)(16 / widest);
  while (v > 1 && inner % v) v /= 2;
  return v;
}

/* Whether a squeeze reads tv or a tensor computed from it: tv's axes then do not line up
 * with the reference's position by position, so it is not cached for vector loads. */
static bool reaches_squeeze(cf_fusion *f, Val *tv) {
  bool *seen = ARENA_ARRAY(f->arena, bool, f->vals.len);
  Val **stack = ARENA_ARRAY(f->arena, Val *, f->vals.len);
  if (!seen || !stack) return true; /* out of memory: the safe answer */
  int top = 0;
  stack[top++] = tv;
  seen[tv->id] = true;
  while (top > 0) {
    Val *v = stack[--top];
    for (int k = 0; k < v->uses.len; k++) {
      const Expr *e = v->uses.items[k];
      if (ir_op_kind(e->op) == OPK_TRANSFORM) continue;
      if (e->op == OP_SQUEEZE) return true;
      if (!seen[e->out[0]->id]) seen[e->out[0]->id] = true, stack[top++] = e->out[0];
    }
  }
  return false;
}

/* Caches the full-rank inputs and the outputs; returns how many caches it listed. */
static int add_caches(cf_fusion *f, Val *ref, Val **caches) {
  int n = 0;
  int nin = f->inputs.len, nout = f->outputs.len;
  Val **ins = arena_memdup(f->arena, f->inputs.items, sizeof(Val *) * (size_t)nin);
  for (int i = 0; i < nin; i++) {
    bool used = false;
    for (int k = 0; k < ins[i]->uses.len; k++) used |= ir_op_kind(((Expr *)ins[i]->uses.items[k])->op) != OPK_TRANSFORM;
    if (used && full_rank_input(ins[i], ref) && !reaches_squeeze(f, ins[i])) caches[n++] = ir_tv(cf_cache_after(f, ir_tv_handle(ins[i])));
  }
  for (int o = 0; o < nout; o++) cf_cache_before(f, ir_tv_handle(f->outputs.items[o]));
  return f->status ? 0 : n;
}

/* Moves tv's broadcast axes (an output of extent 1 along them) to the front, left out of
 * the tile; returns how many. Merged in, they would index the rest through a modulo
 * (x % extent), and a row that is one vector would lose its thread index. All broadcast:
 * none move. */
static int broadcasts_first(cf_fusion *f, Val *tv) {
  int n = TV(tv)->nloop, nb = 0, order[CF_MAX_RANK];
  if (n > CF_MAX_RANK) return 0;
  for (int a = 0; a < n; a++)
    if (ID(TV(tv)->loop[a])->iter_type == CF_ITER_BROADCAST) order[a] = nb++;
  if (nb == 0 || nb == n) return 0;
  for (int a = 0, k = nb; a < n; a++)
    if (ID(TV(tv)->loop[a])->iter_type != CF_ITER_BROADCAST) order[a] = k++;
  cf_reorder_all(f, ir_tv_handle(tv), n, order);
  return nb;
}

/* [broadcasts.., blockIdx.x, threadIdx.x{128}, vector{v}] over tv's other axes merged,
 * propagated from tv and parallelized alike. */
static void tile(cf_fusion *f, Val *tv, int64_t v) {
  cf_tv *r = ir_tv_handle(tv);
  int nb = broadcasts_first(f, tv);
  for (int a = TV(tv)->nloop - 1; a > nb; a--) cf_merge(f, r, nb);
  if (v > 1) cf_split(f, r, nb, v);
  cf_split(f, r, nb, THREADS);
  cf_propagate_transforms(f, r);
  cf_parallelize(f, r, nb, CF_PT_BIDX);
  cf_parallelize(f, r, nb + 1, CF_PT_TIDX);
  cf_parallelize_all_like(f, r, 2, (cf_parallel_type[]){CF_PT_BIDX, CF_PT_TIDX});
}

/* Vectorizes tv's innermost axis where the split by v reached it. A tensor the propagation
 * reached only through a broadcast (an input of lower rank between it and the reference)
 * keeps axes the reference's merge never saw, its innermost of any extent: it stays
 * scalar. */
static void vectorize_split(cf_fusion *f, Val *tv, int64_t v) {
  int64_t e;
  int n = TV(tv)->nloop;
  if (n > 0 && ir_scalar_const_value(ID(TV(tv)->loop[n - 1])->extent, &e) && e == v)
    cf_parallelize(f, ir_tv_handle(tv), -1, CF_PT_VECTORIZE);
}

static bool untransformed(Val *tv) {
  if (TV(tv)->nlogical == 0 || TV(tv)->nloop != TV(tv)->nlogical) return false;
  for (int a = 0; a < TV(tv)->nloop; a++)
    if (TV(tv)->loop[a] != TV(tv)->logical[a]) return false;
  return true;
}

static cf_status schedule(cf_fusion *f, int64_t *vector) {
  Val *ref = f->outputs.items[0];
  int64_t v = vector_width(f, ref);
  *vector = v;
  Val **caches = ARENA_ARRAY(f->arena, Val *, f->inputs.len + 1);
  int ncaches = add_caches(f, ref, caches);
  if (f->status) return f->status;
  tile(f, ref, v);
  /* An output the reference's propagation does not reach (another connected component:
   * outputs of inputs that share no op, or of a full alone) is tiled the same way on its
   * own. */
  for (int o = 1; o < f->outputs.len; o++)
    if (untransformed(f->outputs.items[o])) tile(f, f->outputs.items[o], v);
  if (v > 1) {
    for (int i = 0; i < ncaches; i++) vectorize_split(f, caches[i], v);
    for (int o = 0; o < f->outputs.len; o++) vectorize_split(f, f->outputs.items[o], v);
  }
  return cf_inline_most(f);
}

cf_status cf_schedule_pointwise(cf_fusion *f) {
  if (!f) return CF_ERR_INVALID_ARGUMENT;
  if (f->status) return f->status;
  if (f->outputs.len == 0) return ir_error(f, CF_ERR_INVALID_ARGUMENT, "schedule_pointwise: the fusion has no outputs");
  char why[SCHED_WHY_MAX];
  Val *tv = NULL;
  cf_status s = refusal(f, f->outputs.items[0], why, &tv);
  if (s) return ir_error_tv(f, s, tv, "schedule_pointwise: %s", why);
  int64_t v;
  return schedule(f, &v);
}

/* ---- as a heuristic of the define-and-run executor ------------------------------------ */

static bool pw_accepts(cf_fusion *f, const SchedCall *call, char *why) {
  (void)call;
  if (f->outputs.len == 0) {
    snprintf(why, SCHED_WHY_MAX, "pointwise: the fusion has no outputs");
    return false;
  }
  Val *ref = f->outputs.items[0], *tv = NULL;
  if (TV(ref)->nlogical == 0) {
    snprintf(why, SCHED_WHY_MAX, "pointwise: output %s has no axes", TV(ref)->display_name);
    return false;
  }
  char reason[SCHED_WHY_MAX];
  if (!refusal(f, ref, reason, &tv)) return true;
  snprintf(why, SCHED_WHY_MAX, "pointwise: %.240s", reason);
  return false;
}

/* The number of elements of the reference, when constant (a concrete copy's is). */
static int64_t ref_numel(Val *ref) {
  int64_t n = 1, e;
  for (int a = 0; a < TV(ref)->nlogical; a++) {
    if (!ir_scalar_const_value(ID(TV(ref)->logical[a])->extent, &e)) return -1;
    n *= e;
  }
  return n;
}

static cf_status pw_schedule(cf_fusion *f, const SchedCall *call, char *params) {
  char why[SCHED_WHY_MAX];
  if (!pw_accepts(f, call, why)) return ir_error(f, CF_ERR_UNSUPPORTED, "%s", why);
  int64_t v, numel = ref_numel(f->outputs.items[0]);
  cf_status s = schedule(f, &v);
  if (numel >= 0)
    snprintf(params, SCHED_PARAMS_MAX, "vector=%lld threads=%d blocks=%lld", (long long)v, THREADS,
             (long long)((numel + THREADS * v - 1) / (THREADS * v)));
  else
    snprintf(params, SCHED_PARAMS_MAX, "vector=%lld threads=%d", (long long)v, THREADS);
  return s;
}

const SchedHeuristic sched_pointwise_heuristic = {"pointwise", pw_accepts, pw_schedule};
