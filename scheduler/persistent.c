/* scheduler/persistent.c: what the inner and the outer persistent normalization
 * schedulers (norm_sched.c, outer_persistent_sched.c) share. The frame of their planning:
 * every op elementwise, a broadcast or a reduction, the reductions all reducing the same
 * axes of one shape (which axes: the scheduler's reduced_axes), then the scheduler's
 * check of each broadcast and of the shapes and the call, with the fusion's exact IdMap,
 * in a scratch arena. Then the shape questions both ask of a tensor against the first
 * reduction's domain, the vector width read from the call, and the caches of what
 * persists. It sits below the define-and-run table (heuristics.c) and above the public
 * scheduling calls.
 * Key decision: each scheduler keeps its own plan struct (its first member the
 * SchedReductions filled here) and its header comment says everything it accepts; the
 * refusals given here carry the scheduler's name and words ("rows", "columns"), so every
 * reason reads word for word as it did when each scheduler had its own copy. */
#include <stdarg.h>

#include "scheduler/persistent.h"

/* Refuses: the reason, prefixed with the scheduler's name, into why. */
static bool refuse(const SchedPersistent *s, char *why, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool refuse(const SchedPersistent *s, char *why, const char *fmt, ...) {
  int n = snprintf(why, SCHED_WHY_MAX, "%s: ", s->who);
  va_list ap;
  va_start(ap, fmt);
  if (n >= 0 && n < SCHED_WHY_MAX) vsnprintf(why + n, (size_t)(SCHED_WHY_MAX - n), fmt, ap);
  va_end(ap);
  return false;
}

static bool out_of_memory(const SchedPersistent *s, char *why) { return refuse(s, why, "out of memory"); }

/* Every op elementwise, a broadcast or a reduction; the reductions, of the same axes. */
static bool find_reductions(const SchedPersistent *s, Arena *a, Expr **exprs, int n, SchedReductions *p,
                            char *why) {
  p->reds = ARENA_ARRAY(a, Val *, n);
  if (!p->reds) return out_of_memory(s, why);
  for (int i = 0; i < n; i++) {
    Val *out = exprs[i]->out[0];
    OpKind k = ir_op_kind(exprs[i]->op);
    if (k != OPK_REDUCTION && k != OPK_BROADCAST && !sched_elementwise(exprs[i]))
      return refuse(s, why, "%s is computed by %s, not an elementwise op, a broadcast or a reduction",
                    TV(out)->display_name, ir_op_name(exprs[i]->op));
    if (k != OPK_REDUCTION) continue;
    int nr = s->reduced_axes(out, why), rank = TV(out)->nlogical;
    if (nr < 0) return false;
    SchedAxes axes = 0;
    for (int x = 0; x < rank; x++)
      if (ID(TV(out)->logical[x])->iter_type == CF_ITER_REDUCTION) axes |= (SchedAxes)1 << x;
    if (p->nreds > 0 && (rank != p->rank || nr != p->nred))
      return refuse(s, why, "%s reduces %d of %d axes, %s %d of %d (every reduction must reduce the same %s)",
                    TV(out)->display_name, nr, rank, TV(p->reds[0])->display_name, p->nred, p->rank, s->unit);
    if (p->nreds > 0 && axes != p->reduced)
      return refuse(s, why, "%s reduces other axes than %s (every reduction must reduce the same %s)",
                    TV(out)->display_name, TV(p->reds[0])->display_name, s->unit);
    p->rank = rank, p->nred = nr, p->reduced = axes;
    p->reds[p->nreds++] = out;
  }
  return p->nreds > 0 ? true : refuse(s, why, "the fusion has no reduction");
}

/* Every reduction of the first one's shape. */
static bool same_reductions(const SchedPersistent *s, const IdMap *m, const SchedReductions *p, char *why) {
  for (int r = 1; r < p->nreds; r++)
    if (!sched_same_shape(m, p->reds[0], p->reds[r]))
      return refuse(s, why, "%s reduces %s of other extents than %s", TV(p->reds[r])->display_name, s->unit,
                    TV(p->reds[0])->display_name);
  return true;
}

/* The broadcast axes a scheduler puts back are its reduced ones; a broadcast axis of the
 * broadcast's input would stand where it expects a kept axis, and lowering cannot index
 * it (the registry's invariant test, DAG seed 159). */
static bool no_broadcast_of_broadcast(const SchedPersistent *s, Expr **exprs, int n, char *why) {
  for (int i = 0; i < n; i++)
    if (ir_op_kind(exprs[i]->op) == OPK_BROADCAST && sched_has_broadcast(exprs[i]->in[0]))
      return refuse(s, why, "%s broadcasts %s, which has a broadcast axis already", TV(exprs[i]->out[0])->display_name,
                    TV(exprs[i]->in[0])->display_name);
  return true;
}

static bool persistent_plan(const SchedPersistent *s, cf_fusion *f, Arena *a, const SchedCall *call, void *plan,
                            char *why) {
  int n;
  Expr **exprs = ir_fusion_tensor_exprs_in(a, f, &n);
  if (!exprs) return out_of_memory(s, why);
  if (!find_reductions(s, a, exprs, n, plan, why)) return false;
  for (int i = 0; i < n; i++)
    if (ir_op_kind(exprs[i]->op) == OPK_BROADCAST && !s->broadcast(exprs[i], plan, why)) return false;
  IdMap *m = an_idmap_build(f, false);
  if (!m) return out_of_memory(s, why);
  bool ok = same_reductions(s, m, plan, why) && s->shapes(f, a, m, call, plan, why);
  an_idmap_free(m);
  return ok && no_broadcast_of_broadcast(s, exprs, n, why);
}

bool sched_persistent_accepts(const SchedPersistent *s, cf_fusion *f, const SchedCall *call, void *plan, char *why) {
  Arena *a = arena_create();
  if (!a) return out_of_memory(s, why);
  bool ok = persistent_plan(s, f, a, call, plan, why);
  arena_destroy(a);
  return ok;
}

Arena *sched_persistent_begin(const SchedPersistent *s, cf_fusion *f, const SchedCall *call, void *plan) {
  char why[SCHED_WHY_MAX];
  Arena *a = arena_create();
  if (!a) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "%s: out of memory", s->who), NULL;
  if (persistent_plan(s, f, a, call, plan, why)) return a;
  arena_destroy(a);
  ir_error(f, CF_ERR_UNSUPPORTED, "%s", why);
  return NULL;
}

/* ---- shapes ---------------------------------------------------------------------------- */

bool sched_elementwise(const Expr *e) {
  OpKind k = ir_op_kind(e->op);
  return k == OPK_SET || k == OPK_UNARY || k == OPK_BINARY || k == OPK_TERNARY || k == OPK_CAST;
}

bool sched_has_broadcast(Val *tv) {
  for (int x = 0; x < TV(tv)->nlogical; x++)
    if (ID(TV(tv)->logical[x])->iter_type == CF_ITER_BROADCAST) return true;
  return false;
}

bool sched_same_shape(const IdMap *m, Val *ref, Val *tv) {
  if (TV(tv)->nlogical != TV(ref)->nlogical) return false;
  for (int x = 0; x < TV(ref)->nlogical; x++)
    if (!an_idmap_same(m, TV(tv)->logical[x], TV(ref)->logical[x])) return false;
  return true;
}

/* The next axis of `axes` from x on (ref's rank when none). */
static int next_axis(Val *ref, SchedAxes axes, int x) {
  while (x < TV(ref)->nlogical && !sched_axis_in(axes, x)) x++;
  return x;
}

/* sched_kept_shape, with broadcast axes that match no kept axis skipped when `keepdim`
 * (a reduced result with its reduced axes kept as broadcast axes). */
static bool kept_shape(const IdMap *m, Val *ref, SchedAxes axes, Val *tv, bool keepdim) {
  int k = next_axis(ref, axes, 0), rank = TV(ref)->nlogical;
  for (int x = 0; x < TV(tv)->nlogical; x++) {
    Val *id = TV(tv)->logical[x];
    if (ID(id)->iter_type == CF_ITER_REDUCTION) continue;
    bool same = k < rank && an_idmap_same(m, id, TV(ref)->logical[k]);
    if (!same && keepdim && ID(id)->iter_type == CF_ITER_BROADCAST) continue;
    if (!same) return false;
    k = next_axis(ref, axes, k + 1);
  }
  return k == rank;
}

bool sched_kept_shape(const IdMap *m, Val *ref, SchedAxes axes, Val *tv) { return kept_shape(m, ref, axes, tv, false); }

int sched_input_like(cf_fusion *f, const IdMap *m, Val *ref) {
  for (int i = 0; i < f->inputs.len; i++)
    if (sched_same_shape(m, ref, f->inputs.items[i])) return i;
  return -1;
}

bool *sched_cached_inputs(cf_fusion *f, Arena *a, const IdMap *m, Val *ref, SchedAxes axes) {
  bool *cached = ARENA_ARRAY(a, bool, f->inputs.len);
  for (int i = 0; cached && i < f->inputs.len; i++) {
    Val *in = f->inputs.items[i];
    cached[i] = !sched_has_broadcast(in) && in->uses.len > 0 &&
                (sched_same_shape(m, ref, in) || sched_kept_shape(m, ref, axes, in));
  }
  return cached;
}

bool *sched_full_outputs(cf_fusion *f, Arena *a, const IdMap *m, Val *ref, SchedAxes kept, int *bad) {
  bool *full = ARENA_ARRAY(a, bool, f->outputs.len);
  *bad = -1;
  for (int o = 0; full && o < f->outputs.len; o++) {
    Val *out = f->outputs.items[o];
    bool reduction = out->def && ir_op_kind(out->def->op) == OPK_REDUCTION;
    full[o] = !reduction && sched_same_shape(m, ref, out);
    if (!full[o] && !kept_shape(m, ref, kept, out, true)) return *bad = o, NULL;
  }
  return full;
}

/* ---- the call and the caches ----------------------------------------------------------- */

int64_t sched_vector_width(cf_fusion *f, const SchedCall *call, const bool *cached, int64_t inner) {
  size_t widest = 1;
  for (int o = 0; o < f->outputs.len; o++) {
    Val *out = f->outputs.items[o];
    if (cf_dtype_size(out->dtype) > widest) widest = cf_dtype_size(out->dtype);
  }
  bool have_call = call && call->ninputs == f->inputs.len && call->inputs;
  for (int i = 0; i < f->inputs.len; i++) {
    Val *in = f->inputs.items[i];
    if (!cached[i]) continue;
    if (TV(in)->has_strides || (have_call && !sched_dl_contiguous(call->inputs[i]))) return 1;
    if (cf_dtype_size(in->dtype) > widest) widest = cf_dtype_size(in->dtype);
  }
  int64_t v = SCHED_VECTOR_BYTES / (int64_t)widest;
  for (int i = 0; have_call && i < f->inputs.len; i++) {
    Val *in = f->inputs.items[i];
    if (!cached[i]) continue;
    uintptr_t addr = (uintptr_t)call->inputs[i]->data + (uintptr_t)call->inputs[i]->byte_offset;
    while (v > 1 && addr % (uintptr_t)(v * (int64_t)cf_dtype_size(in->dtype)) != 0) v /= 2;
  }
  while (v > 1 && inner % v != 0) v /= 2;
  return v < 1 ? 1 : v;
}

void sched_persistent_caches(cf_fusion *f, const bool *cached, const bool *full_out, bool cache_outputs,
                             Val **caches, int *n) {
  *n = 0;
  for (int i = 0; i < f->inputs.len; i++) {
    if (!cached[i]) continue;
    cf_tv *c = cf_cache_after(f, ir_tv_handle(f->inputs.items[i]));
    if (c) caches[(*n)++] = ir_tv(c);
  }
  for (int o = 0; cache_outputs && o < f->outputs.len; o++)
    if (full_out[o] && cf_cache_before(f, ir_tv_handle(f->outputs.items[o]))) caches[(*n)++] = f->outputs.items[o];
}

/* ---- register budgets ------------------------------------------------------------------ */

int64_t sched_reg_elems(const SchedDevice *d, int64_t threads, int64_t bytes) {
  if (bytes <= 0) return INT64_MAX; /* nothing persists: registers bound nothing */
  int64_t r = d->regs_per_sm / threads;
  if (r > d->max_regs_per_thread) r = d->max_regs_per_thread;
  r -= SCHED_REG_RESERVE;
  return r > 0 ? r * 4 / bytes : 0;
}

int64_t sched_coop_block_cap(const SchedDevice *d, int64_t threads) {
  int64_t cap = d->max_coop_threads > 0 && threads > 0 ? d->max_coop_threads / threads : INT64_MAX;
  return cap < SCHED_GRID_MAX_GROUP_BLOCKS ? cap : SCHED_GRID_MAX_GROUP_BLOCKS;
}

int64_t sched_blocks_per_sm(const SchedDevice *d, int64_t threads, int64_t regs_each, int64_t smem) {
  int64_t n = d->max_threads_per_sm / threads, by_regs = d->regs_per_sm / (threads * regs_each);
  if (by_regs < n) n = by_regs;
  if (smem > 0 && d->smem_per_sm / smem < n) n = d->smem_per_sm / smem;
  return n > 0 ? n : 1;
}
