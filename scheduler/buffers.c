/* scheduler/buffers.c: what a persistent normalization schedule keeps of a row (or a
 * column), the question both persistent schedulers ask before choosing where it lives
 * (registers, shared memory, or nowhere: read again). Below the persistent schedulers
 * (norm_sched.c, outer_persistent_sched.c, recompute.c), above the IR.
 *
 * A tensor persists when a reduction and something computed from that reduction both read
 * it: it must exist before the reduction completes and after (the loop graph then stops
 * it at the row, a buffer of the whole row per block). Over the fusion's tensor exprs in
 * topological order, per tensor: the reductions it depends on (dep), those it flows into
 * (into), and those whose results meet it at one of its readers (after: another operand
 * of a reader depends on a reduction the tensor does not). A tensor t is live across reduction r when
 * r is in into(t) and in after(t). Then per element of the row:
 *   live      the most bytes live across one reduction, the tensors kept as the fusion
 *             computes them (registers are reused once a buffer dies);
 *   projected the inputs a row tensor live across a reduction derives from, when every
 *             computed tensor is recomputed from them at each reader (recompute.c): an
 *             input reaches, through row tensors that do not depend on r, a tensor read
 *             after r (nvFuser's projection of persistent buffers to inputs);
 *   params    the cached row parameters (a weight of the row's shape), which every
 *             thread keeps too.
 * Key decision: a bitset of reductions per tensor (SCHED_MAX_PERSISTENT_REDUCTIONS, a
 * named limit refused with a reason) rather than a walk per pair: one forward and one
 * backward pass over the exprs. */
#include "scheduler/persistent.h"

typedef uint64_t RedSet;

bool *sched_row_tensors(cf_fusion *f, Arena *a, const IdMap *m, Val *ref, SchedAxes axes) {
  bool *row = ARENA_ARRAY(a, bool, f->vals.len);
  for (int i = 0; row && i < f->vals.len; i++) {
    Val *v = f->vals.items[i];
    if (v->kind != VAL_TV) continue;
    for (int x = 0; x < TV(v)->nlogical && !row[i]; x++) {
      Val *id = TV(v)->logical[x];
      if (ID(id)->iter_type != CF_ITER_ITERATION) continue;
      for (int k = 0; k < TV(ref)->nlogical && !row[i]; k++)
        row[i] = sched_axis_in(axes, k) && an_idmap_same(m, id, TV(ref)->logical[k]);
    }
  }
  return row;
}

/* The analysis' sets, by Val id. */
typedef struct Sets {
  RedSet *dep, *into, *after, *desc;
  bool *from_full; /* derives from an input of the full shape */
} Sets;

static int red_index(const SchedReductions *r, const Val *out) {
  for (int k = 0; k < r->nreds; k++)
    if (r->reds[k] == out) return k;
  return -1;
}

/* dep, after and from_full forward; into and desc backward. */
static void compute_sets(Expr **exprs, int n, const SchedReductions *r, const bool *row, Sets *s) {
  for (int i = 0; i < n; i++) {
    Expr *e = exprs[i];
    Val *out = e->out[0];
    RedSet d = 0;
    for (int k = 0; k < e->nin; k++)
      if (e->in[k]->kind == VAL_TV) d |= s->dep[e->in[k]->id], s->from_full[out->id] |= s->from_full[e->in[k]->id];
    for (int k = 0; k < e->nin; k++) /* what the reader's other operands wait for */
      if (e->in[k]->kind == VAL_TV) s->after[e->in[k]->id] |= d & ~s->dep[e->in[k]->id];
    int ri = red_index(r, out);
    s->dep[out->id] = d | (ri >= 0 ? (RedSet)1 << ri : 0);
  }
  for (int i = n - 1; i >= 0; i--) {
    Expr *e = exprs[i];
    Val *out = e->out[0];
    int ri = red_index(r, out);
    RedSet into = s->into[out->id] | (ri >= 0 ? (RedSet)1 << ri : 0);
    RedSet desc = s->desc[out->id] | s->after[out->id];
    for (int k = 0; k < e->nin; k++) {
      Val *v = e->in[k];
      if (v->kind != VAL_TV) continue;
      s->into[v->id] |= into;
      if (row[out->id]) s->desc[v->id] |= desc & ~s->dep[v->id];
    }
  }
}

static bool alloc_sets(Arena *a, int nvals, Sets *s) {
  s->dep = ARENA_ARRAY(a, RedSet, nvals);
  s->into = ARENA_ARRAY(a, RedSet, nvals);
  s->after = ARENA_ARRAY(a, RedSet, nvals);
  s->desc = ARENA_ARRAY(a, RedSet, nvals);
  s->from_full = ARENA_ARRAY(a, bool, nvals);
  return s->dep && s->into && s->after && s->desc && s->from_full;
}

/* The sets of f's tensors; false when out of memory. full_input: per fusion input, of the
 * full shape. */
static bool analyse(cf_fusion *f, Arena *a, const SchedReductions *r, const bool *row, const bool *full_input,
                    Sets *s) {
  int n;
  Expr **exprs = ir_fusion_tensor_exprs_in(a, f, &n);
  if (!exprs || !alloc_sets(a, f->vals.len, s)) return false;
  for (int i = 0; i < f->inputs.len; i++) s->from_full[((Val *)f->inputs.items[i])->id] = full_input[i];
  compute_sets(exprs, n, r, row, s);
  return true;
}

bool sched_buffers(cf_fusion *f, Arena *a, const SchedReductions *r, const bool *row, const bool *full_input,
                   const bool *cached, SchedBuffers *b) {
  Sets s;
  *b = (SchedBuffers){0, 0, 0};
  if (!analyse(f, a, r, row, full_input, &s)) return false;
  for (int k = 0; k < r->nreds; k++) {
    int64_t bytes = 0;
    for (int i = 0; i < f->vals.len; i++) {
      Val *v = f->vals.items[i];
      RedSet live = s.into[i] & s.after[i];
      if (v->kind == VAL_TV && row[i] && s.from_full[i] && ((live >> k) & 1)) bytes += (int64_t)cf_dtype_size(v->dtype);
    }
    if (bytes > b->live) b->live = bytes;
  }
  for (int i = 0; i < f->inputs.len; i++) {
    Val *in = f->inputs.items[i];
    int64_t size = (int64_t)cf_dtype_size(in->dtype);
    bool persists = (s.into[in->id] & (s.desc[in->id] | s.after[in->id])) != 0;
    if (row[in->id] && persists) b->projected += size;
    else if (row[in->id] && cached[i] && !full_input[i]) b->params += size;
  }
  return true;
}

bool *sched_live_tensors(cf_fusion *f, Arena *a, const SchedReductions *r, const bool *row, const bool *full_input) {
  Sets s;
  if (!analyse(f, a, r, row, full_input, &s)) return NULL;
  bool *live = ARENA_ARRAY(a, bool, f->vals.len);
  for (int i = 0; live && i < f->vals.len; i++) live[i] = row[i] && (s.into[i] & (s.after[i] | s.desc[i])) != 0;
  return live;
}
