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
 *      parallelized alike; the caches' innermost axes are vectorized; everything is
 *      inlined as deep as legal.
 * Key decision: one 1-D schedule for every elementwise fusion (nvFuser's 2-D break-point
 * search is not implemented): it moves data at the device's copy bandwidth on contiguous
 * tensors (bench/pointwise.c), the case that matters most. */
#include "scheduler/sched.h"

enum { THREADS = 128 };

static bool elementwise(const Expr *e) {
  OpKind k = ir_op_kind(e->op);
  return k == OPK_SET || k == OPK_UNARY || k == OPK_BINARY || k == OPK_TERNARY || k == OPK_CAST || k == OPK_BROADCAST;
}

static cf_status check_fusion(cf_fusion *f, Val *ref) {
  int n;
  Expr **exprs = ir_fusion_tensor_exprs(f, &n);
  for (int i = 0; i < n; i++)
    if (!elementwise(exprs[i]))
      return ir_error_tv(f, CF_ERR_UNSUPPORTED, exprs[i]->out[0],
                         "schedule_pointwise: %s is computed by %s; the pointwise scheduler takes elementwise ops only",
                         TV(exprs[i]->out[0])->display_name, ir_op_name(exprs[i]->op));
  Val **tvs = ir_fusion_all_tvs(f, &n);
  for (int i = 0; i < n; i++)
    if (!ir_tv_is_input(f, tvs[i]) && (TV(tvs[i])->nloop != TV(tvs[i])->nlogical || TV(tvs[i])->ca_pos > 0))
      return ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, tvs[i], "schedule_pointwise: %s is scheduled already",
                         TV(tvs[i])->display_name);
  for (int o = 1; o < f->outputs.len; o++) {
    Val *out = f->outputs.items[o];
    bool same = TV(out)->nlogical == TV(ref)->nlogical;
    for (int a = 0; same && a < TV(ref)->nlogical; a++)
      same = ID(TV(out)->logical[a])->extent == ID(TV(ref)->logical[a])->extent ||
             (ir_scalar_is_const(ID(TV(out)->logical[a])->extent) &&
              SC(ID(TV(out)->logical[a])->extent)->i == SC(ID(TV(ref)->logical[a])->extent)->i);
    if (!same)
      return ir_error_tv(f, CF_ERR_UNSUPPORTED, out, "schedule_pointwise: output %s has another shape than %s",
                         TV(out)->display_name, TV(ref)->display_name);
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

/* Caches the full-rank inputs and the outputs; returns how many caches it listed. */
static int add_caches(cf_fusion *f, Val *ref, Val **caches) {
  int n = 0;
  int nin = f->inputs.len, nout = f->outputs.len;
  Val **ins = arena_memdup(f->arena, f->inputs.items, sizeof(Val *) * (size_t)nin);
  for (int i = 0; i < nin; i++) {
    bool used = false;
    for (int k = 0; k < ins[i]->uses.len; k++) used |= ir_op_kind(((Expr *)ins[i]->uses.items[k])->op) != OPK_TRANSFORM;
    if (used && full_rank_input(ins[i], ref)) caches[n++] = ir_tv(cf_cache_after(f, ir_tv_handle(ins[i])));
  }
  for (int o = 0; o < nout; o++) cf_cache_before(f, ir_tv_handle(f->outputs.items[o]));
  return f->status ? 0 : n;
}

cf_status cf_schedule_pointwise(cf_fusion *f) {
  if (!f) return CF_ERR_INVALID_ARGUMENT;
  if (f->status) return f->status;
  if (f->outputs.len == 0) return ir_error(f, CF_ERR_INVALID_ARGUMENT, "schedule_pointwise: the fusion has no outputs");
  Val *ref = f->outputs.items[0];
  cf_status s = check_fusion(f, ref);
  if (s) return s;
  int64_t v = vector_width(f, ref);
  Val **caches = ARENA_ARRAY(f->arena, Val *, f->inputs.len + 1);
  int ncaches = add_caches(f, ref, caches);
  if (f->status) return f->status;
  cf_tv *r = ir_tv_handle(ref);
  for (int a = TV(ref)->nloop - 1; a > 0; a--) cf_merge(f, r, 0);
  if (v > 1) cf_split(f, r, 0, v);
  cf_split(f, r, 0, THREADS);
  cf_propagate_transforms(f, r);
  cf_parallelize(f, r, 0, CF_PT_BIDX);
  cf_parallelize(f, r, 1, CF_PT_TIDX);
  cf_parallelize_all_like(f, r, 2, (cf_parallel_type[]){CF_PT_BIDX, CF_PT_TIDX});
  if (v > 1) {
    for (int i = 0; i < ncaches; i++) cf_parallelize(f, ir_tv_handle(caches[i]), -1, CF_PT_VECTORIZE);
    for (int o = 0; o < f->outputs.len; o++) cf_parallelize(f, ir_tv_handle(f->outputs.items[o]), -1, CF_PT_VECTORIZE);
  }
  return cf_inline_most(f);
}
