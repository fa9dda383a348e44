/* lower/index.c: the index pass. Computes the index of every tensor access of every op.
 *
 * Requires: the loop nest with each op's loop indices; TvInfo allocation domains and
 * strides. Establishes: KAccess (tensor, linear index; lane and column for tensor
 * memory) for the output and each input of every op.
 * Key decision (DESIGN.md section 5): indices flow through the transform graph. The
 * consumer's loop indices go backward through its history (split: in = outer * N_inner +
 * inner; merge: a = out / N_b, b = out % N_b; XOR swizzle: self-inverse) to its root
 * domain, cross to the producer's logical domain through the pairwise map (broadcast
 * axes read index 0), and go forward through the producer's history (split: outer =
 * in / N_inner, inner = in % N_inner; merge: out = a * N_b + b) to its allocation domain,
 * where they are linearized with the strides of the tensors pass. Producer axes exactly
 * mapped to a consumer loop axis take that loop's index directly, which keeps the
 * printed index arithmetic short. */
#include <string.h>

#include "ir/dtype.h"
#include "lower/lower.h"

typedef struct IndexMap {
  KExpr **idx;  /* by Val id */
  int *touched;
  int ntouched;
} IndexMap;

static KExpr *get(IndexMap *m, const Val *v) { return m->idx[v->id]; }
static void put(IndexMap *m, const Val *v, KExpr *e) {
  if (!m->idx[v->id]) m->touched[m->ntouched++] = v->id;
  m->idx[v->id] = e;
}
static void reset(IndexMap *m) {
  for (int i = 0; i < m->ntouched; i++) m->idx[m->touched[i]] = NULL;
  m->ntouched = 0;
}

static KExpr *ext(LowerCtx *c, const Val *id) { return lower_extent(c, id); }

/* Fills the inputs of e that have no index yet from its outputs (inputs already known,
 * e.g. broadcast axes fixed at 0 or axes indexed through a promoting tensor, stay). */
static void backward(LowerCtx *c, IndexMap *m, const Expr *e) {
  Arena *a = c->a;
  for (int i = 0; i < e->nout; i++)
    if (!get(m, e->out[i])) return;
  switch (e->op) {
  case OP_SPLIT:
    if (!get(m, e->in[0]))
      put(m, e->in[0], kx_bin(a, OP_ADD, kx_bin(a, OP_MUL, get(m, e->out[0]), ext(c, e->out[1])), get(m, e->out[1])));
    break;
  case OP_MERGE:
    if (!get(m, e->in[0])) put(m, e->in[0], kx_bin(a, OP_DIV, get(m, e->out[0]), ext(c, e->in[1])));
    if (!get(m, e->in[1])) put(m, e->in[1], kx_bin(a, OP_MOD, get(m, e->out[0]), ext(c, e->in[1])));
    break;
  case OP_SWIZZLE:
    if (!get(m, e->in[0])) put(m, e->in[0], get(m, e->out[0]));
    if (!get(m, e->in[1])) put(m, e->in[1], kx_bin(a, OP_XOR, get(m, e->out[0]), get(m, e->out[1])));
    break;
  default: break;
  }
}

static void forward(LowerCtx *c, IndexMap *m, const Expr *e) {
  Arena *a = c->a;
  for (int i = 0; i < e->nin; i++)
    if (!get(m, e->in[i])) return;
  switch (e->op) {
  case OP_SPLIT:
    if (!get(m, e->out[0])) put(m, e->out[0], kx_bin(a, OP_DIV, get(m, e->in[0]), ext(c, e->out[1])));
    if (!get(m, e->out[1])) put(m, e->out[1], kx_bin(a, OP_MOD, get(m, e->in[0]), ext(c, e->out[1])));
    break;
  case OP_MERGE:
    if (!get(m, e->out[0]))
      put(m, e->out[0], kx_bin(a, OP_ADD, kx_bin(a, OP_MUL, get(m, e->in[0]), ext(c, e->in[1])), get(m, e->in[1])));
    break;
  case OP_SWIZZLE:
    if (!get(m, e->out[0])) put(m, e->out[0], get(m, e->in[0]));
    if (!get(m, e->out[1])) put(m, e->out[1], kx_bin(a, OP_XOR, get(m, e->in[0]), get(m, e->in[1])));
    break;
  default: break;
  }
}

/* Indices of every axis of tv's history reachable from what is already in m. */
static void propagate(LowerCtx *c, IndexMap *m, Val *tv) {
  TvInfo *ti = lower_info(c, tv);
  int n = ti->nhistory;
  Expr **hist = ti->history;
  for (int i = n - 1; i >= 0; i--) backward(c, m, hist[i]);
  for (int i = 0; i < n; i++) forward(c, m, hist[i]);
}

/* The loops of the op and the IterDomains they iterate: loop j runs over its group's
 * promoted IterDomain (loop_model.c) with index loop_index[j]. */
static Val *loop_iterates(const KNode *op, Val *tv, int j) {
  const KNode *l = j < op->u.op.nloop ? op->u.op.loops[j] : NULL;
  return l ? l->u.loop.concrete : TV(tv)->loop[j];
}

static bool runs_own_axis(LowerCtx *c, const KNode *op, Val *tv, int j) {
  Val *p = loop_iterates(op, tv, j), *id = TV(tv)->loop[j];
  return p == id || an_idmap_same(c->model.exact, p, id);
}

/* The positional reading of promoted loops is the loop model's (analysis/positional.c). */
static bool stands_for(LowerCtx *c, Val *tv, Val *ref, int j) { return an_stands_for(&c->model, tv, ref, j); }
static Val *positional_ref(LowerCtx *c, Val *tv, int j) { return an_positional_ref(&c->model, tv, j); }

/* Indices of tv's root axes through the history of `ref`, the tensor whose IterDomain a
 * promoted loop of the op iterates: ref's loop axes take the indices of the loops over
 * them (or exactly mapped to them), go back through ref's history to its root, and cross
 * to tv's root through the exact map. tv's own history counts a merged broadcast as one
 * element and cannot say which element a promoted index stands for; ref's can. */
static void seed_through(LowerCtx *c, IndexMap *m, IndexMap *scratch, const KNode *op, Val *tv, Val *ref) {
  for (int k = 0; k < TV(ref)->nloop; k++)
    for (int j = 0; j < op->u.op.nloop && j < TV(tv)->nloop; j++) {
      Val *p = loop_iterates(op, tv, j);
      if (p == TV(ref)->loop[k] || an_idmap_same(c->model.exact, p, TV(ref)->loop[k])) {
        put(scratch, TV(ref)->loop[k], op->u.op.loop_index[j]);
        break;
      }
    }
  for (int j = 0; j < op->u.op.nloop && j < TV(tv)->nloop; j++)
    if (j < TV(ref)->nloop && !get(scratch, TV(ref)->loop[j]) && stands_for(c, tv, ref, j))
      put(scratch, TV(ref)->loop[j], op->u.op.loop_index[j]);
  propagate(c, scratch, ref);
  for (int i = 0; i < TV(tv)->nroot; i++) {
    Val *r = TV(tv)->root[i];
    if (get(m, r)) continue;
    if (ID(r)->iter_type == CF_ITER_BROADCAST) {
      put(m, r, kx_const(c->a, 0));
      continue;
    }
    for (int k = 0; k < TV(ref)->nroot; k++)
      if (get(scratch, TV(ref)->root[k]) && an_idmap_same(c->model.exact, r, TV(ref)->root[k])) {
        put(m, r, get(scratch, TV(ref)->root[k]));
        break;
      }
  }
  reset(scratch);
}

/* The consumer's axes: those its loops iterate exactly take the loop indices; the roots
 * behind promoted loops come through the promoting tensors' histories (seed_through). */
static void seed_consumer(LowerCtx *c, IndexMap *m, IndexMap *scratch, const KNode *op) {
  Val *tv = op->u.op.src->out[0];
  int n = TV(tv)->nloop < op->u.op.nloop ? TV(tv)->nloop : op->u.op.nloop;
  Val **refs = ARENA_ARRAY(c->a, Val *, n);
  int nrefs = 0;
  for (int j = 0; j < n; j++) {
    if (runs_own_axis(c, op, tv, j)) continue;
    Val *ref = ID(loop_iterates(op, tv, j))->tv;
    bool known = false;
    for (int k = 0; k < nrefs; k++) known |= refs[k] == ref;
    if (!known) refs[nrefs++] = ref;
  }
  for (int k = 0; k < nrefs; k++) seed_through(c, m, scratch, op, tv, refs[k]);
  for (int j = 0; j < n; j++) {
    Val *id = TV(tv)->loop[j];
    if (ID(id)->iter_type == CF_ITER_BROADCAST) {
      put(m, id, kx_const(c->a, 0));
      continue;
    }
    if (runs_own_axis(c, op, tv, j)) put(m, id, op->u.op.loop_index[j]);
  }
}

/* Producer axes: those written positionally (stands_for) at the loop index; logical from
 * the consumer's root; and any axis exactly mapped to an IterDomain a loop of the op
 * iterates. */
static void seed_producer(LowerCtx *c, IndexMap *cm, IndexMap *pm, const KNode *op, Val *p) {
  Val *cv = op->u.op.src->out[0];
  for (int j = 0; j < TV(p)->nloop && j < op->u.op.nloop; j++)
    if (positional_ref(c, p, j)) put(pm, TV(p)->loop[j], op->u.op.loop_index[j]);
  Val **pids, **cids;
  int n = lower_pairwise(c, p, cv, &pids, &cids);
  for (int i = 0; i < n; i++) {
    KExpr *x = ID(pids[i])->iter_type == CF_ITER_BROADCAST ? kx_const(c->a, 0) : get(cm, cids[i]);
    if (x) put(pm, pids[i], x);
  }
  TensorView *pt = TV(p);
  for (int i = 0; i < pt->nloop; i++) {
    Val *pid = pt->loop[i];
    if (get(pm, pid) || ID(pid)->iter_type == CF_ITER_BROADCAST) continue;
    for (int j = 0; j < TV(cv)->nloop && j < op->u.op.nloop; j++) {
      Val *it = loop_iterates(op, cv, j);
      if (ID(it)->iter_type == CF_ITER_BROADCAST || !an_idmap_same(c->model.exact, pid, it)) continue;
      /* A positional axis's loop index stands for the promoting tensor's axis, not for the
       * consumer's own axis (its element comes through that tensor's history). */
      if (positional_ref(c, cv, j)) continue;
      put(pm, pid, op->u.op.loop_index[j]);
      break;
    }
  }
}

/* The index of an allocation axis that is a promoted loop's IterDomain (lower/tensors.c:
 * a slot per thread of the loop): the index of the op's loop over it, NULL if none. */
static KExpr *promoted_slot(LowerCtx *c, const KNode *op, Val *tv, Val *id) {
  if (ID(id)->tv == tv) return NULL;
  for (int j = 0; j < op->u.op.nloop; j++) {
    const KNode *l = op->u.op.loops[j];
    if (l && (l->u.loop.concrete == id || an_idmap_same(c->model.exact, l->u.loop.concrete, id)))
      return op->u.op.loop_index[j];
  }
  return NULL;
}

static KExpr *linearize(LowerCtx *c, IndexMap *m, const KNode *op, Val *tv, int lo, int hi) {
  TvInfo *ti = lower_info(c, tv);
  Val *op_out = op->u.op.src->out[0];
  KExpr *sum = kx_const(c->a, 0);
  for (int i = lo; i < hi; i++) {
    if (!ti->allocated[i]) continue;
    KExpr *x = get(m, ti->alloc_ids[i]);
    if (!x) x = promoted_slot(c, op, tv, ti->alloc_ids[i]);
    if (!x)
      lower_fail(c, CF_ERR_UNSUPPORTED,
                 "compile: %s's allocation axis %d (%s) cannot be indexed in the loops of %s: they iterate a "
                 "broadcast's concrete domain, and %s's axes outside them do not map to that domain's; inline %s "
                 "as deep as its consumer, or keep broadcast axes out of merges", TV(tv)->display_name, i,
                 lower_id_str(c, ti->alloc_ids[i]), TV(op_out)->display_name, TV(op_out)->display_name,
                 TV(op_out)->display_name);
    sum = kx_bin(c->a, OP_ADD, sum, kx_bin(c->a, OP_MUL, x, ti->strides[i]));
  }
  return sum;
}

static KAccess access_of(LowerCtx *c, IndexMap *m, const KNode *op, Val *tv) {
  TvInfo *ti = lower_info(c, tv);
  KAccess acc = {.t = ti->kt};
  if (ti->is_tmem) {
    acc.lane = linearize(c, m, op, tv, 0, ti->dim_sep);
    acc.col = linearize(c, m, op, tv, ti->dim_sep, ti->nalloc_ids);
  } else {
    acc.index = linearize(c, m, op, tv, 0, ti->nalloc_ids);
  }
  return acc;
}

/* The bounds every consumer index must respect: its root axes and the inputs of the
 * splits of its history (a non-divisible split over-iterates its input). */
static void collect_bounds(LowerCtx *c, IndexMap *m, KNode *op, Val *cv) {
  TvInfo *ti = lower_info(c, cv);
  int cap = TV(cv)->nroot + ti->nhistory;
  op->u.op.bounds = ARENA_ARRAY(c->a, KExpr *, cap + op->u.op.nloop);
  op->u.op.nbounds = 0;
  /* A thread-parallel loop shorter than its launch dimension: the extra threads idle. */
  for (int j = 0; j < op->u.op.nloop; j++) {
    const KNode *l = op->u.op.loops[j];
    /* an initialization's thread runs at index 0 of the reduction axes, whatever its own */
    if (op->u.op.reduction_init && j < TV(cv)->nloop && ID(TV(cv)->loop[j])->iter_type == CF_ITER_REDUCTION) continue;
    if (l && !l->u.loop.var)
      op->u.op.bounds[op->u.op.nbounds++] = kx_bin(c->a, OP_LT, l->u.loop.index, l->u.loop.extent);
  }
  for (int i = 0; i < cap; i++) {
    Val *id = i < TV(cv)->nroot ? TV(cv)->root[i] : NULL;
    if (!id) {
      const Expr *h = ti->history[i - TV(cv)->nroot];
      if (h->op != OP_SPLIT) continue;
      id = h->in[0];
    }
    if (!get(m, id) || ID(id)->iter_type == CF_ITER_BROADCAST) continue;
    /* An initialization sits at index 0 of the reduction axes: their bounds say nothing
     * about it, and a thread must not skip initializing what it accumulates into. */
    if (op->u.op.reduction_init && ID(id)->iter_type == CF_ITER_REDUCTION) continue;
    op->u.op.bounds[op->u.op.nbounds++] = kx_bin(c->a, OP_LT, get(m, id), ext(c, id));
  }
}

/* cat's first operand's op axis k (its extent offsets the second operand). */
static Val *cat_first_axis(const Expr *e, int k) {
  Val *p = e->in[0];
  for (int i = 0, n = 0; i < TV(p)->nlogical; i++)
    if (ID(TV(p)->logical[i])->iter_type != CF_ITER_REDUCTION && n++ == k) return TV(p)->logical[i];
  return NULL;
}

/* A resize op's operand j: its resized axes take their index from the consumer's (slice:
 * start + i * step; pad: i - left; cat: i, or i less the first operand's extent for the
 * second). Read at other positions, the operand must be a kernel parameter. */
static void seed_resized(LowerCtx *c, IndexMap *cm, IndexMap *pm, const Expr *e, int j) {
  Val *p = e->in[j], *cv = e->out[0];
  if (lower_info(c, p)->kt->param < 0)
    lower_fail(c, CF_ERR_UNSUPPORTED, "compile: %s = %s(%s...) reads %s at other positions; a resize's operand must be "
               "a fusion input or a segment input (define and run cuts the fusion before it), not computed in the same "
               "kernel", TV(cv)->display_name, ir_op_name(e->op), TV(p)->display_name, TV(p)->display_name);
  Arena *a = c->a;
  for (int i = 0, k = 0; i < TV(p)->nlogical; i++) {
    Val *pid = TV(p)->logical[i];
    if (ID(pid)->iter_type == CF_ITER_REDUCTION) continue;
    if (ir_resize_axis(e, j, k)) {
      KExpr *x = get(cm, TV(cv)->root[k]);
      if (e->op == OP_SLICE)
        x = kx_bin(a, OP_ADD, lower_scalar(c, e->attr.slice.start[k]), kx_bin(a, OP_MUL, x, kx_const(a, e->attr.slice.step[k])));
      if (e->op == OP_PAD) x = kx_bin(a, OP_SUB, x, kx_const(a, e->attr.pad.left[k]));
      if (e->op == OP_CAT && j == 1) x = kx_bin(a, OP_SUB, x, ext(c, cat_first_axis(e, k)));
      put(pm, pid, ID(pid)->iter_type == CF_ITER_BROADCAST ? kx_const(a, 0) : x);
    }
    k++;
  }
}

/* Where a pad or a cat reads its (first) operand: every resized index within it (pad: left
 * <= i < left + N; cat: i < N of the first operand). */
static KExpr *resize_condition(LowerCtx *c, IndexMap *cm, const Expr *e) {
  Arena *a = c->a;
  Val *p = e->in[0], *cv = e->out[0];
  KExpr *cond = kx_const(a, 1);
  for (int i = 0, k = 0; i < TV(p)->nlogical; i++) {
    Val *pid = TV(p)->logical[i];
    if (ID(pid)->iter_type == CF_ITER_REDUCTION) continue;
    if (ir_resize_axis(e, 0, k)) {
      KExpr *x = get(cm, TV(cv)->root[k]), *lo = kx_const(a, e->op == OP_PAD ? e->attr.pad.left[k] : 0);
      KExpr *in = kx_bin(a, OP_LT, x, kx_bin(a, OP_ADD, lo, ext(c, pid)));
      cond = kx_bin(a, OP_AND, cond, e->op == OP_PAD ? kx_bin(a, OP_AND, kx_bin(a, OP_GE, x, lo), in) : in);
    }
    k++;
  }
  return cond;
}

/* The output's index along its root axis k (0 for a broadcast axis). */
static KExpr *out_index(LowerCtx *c, IndexMap *cm, Val *cv, int k) {
  Val *id = TV(cv)->root[k];
  KExpr *x = ID(id)->iter_type == CF_ITER_BROADCAST ? kx_const(c->a, 0) : get(cm, id);
  if (!x) lower_fail(c, CF_ERR_UNSUPPORTED, "compile: %s cannot be indexed along axis %d in its loops",
                     TV(cv)->display_name, k);
  return x;
}

/* An indexed op's operand j read along the op's axis (IR_INDEXED_TABLE) must be a kernel
 * parameter; its axes paired with nothing take the output's index (the op's axis: 0, the
 * position is added when the element is read). */
static void seed_indexed(LowerCtx *c, IndexMap *cm, IndexMap *pm, const Expr *e, int j) {
  Val *p = e->in[j], *cv = e->out[0];
  if (!ir_operand_read_elsewhere(e, j)) return;
  if (lower_info(c, p)->kt->param < 0)
    lower_fail(c, CF_ERR_UNSUPPORTED, "compile: %s = %s(%s...) reads %s at computed positions; it must be a fusion "
               "input or a segment input (define and run cuts the fusion before it), not computed in the same kernel",
               TV(cv)->display_name, ir_op_name(e->op), TV(e->in[0])->display_name, TV(p)->display_name);
  for (int i = 0, k = 0; i < TV(p)->nlogical; i++) {
    Val *pid = TV(p)->logical[i];
    if (ID(pid)->iter_type == CF_ITER_REDUCTION) continue;
    if (ir_unpaired_axis(e, j, k))
      put(pm, pid, k == e->attr.indexed.axis || ID(pid)->iter_type == CF_ITER_BROADCAST ? kx_const(c->a, 0)
                                                                                         : out_index(c, cm, cv, k));
    k++;
  }
}

/* The op axis `axis` of tv (reduction axes not counted). */
static Val *op_axis(Val *tv, int axis) {
  for (int i = 0, k = 0; i < TV(tv)->nlogical; i++)
    if (ID(TV(tv)->logical[i])->iter_type != CF_ITER_REDUCTION && k++ == axis) return TV(tv)->logical[i];
  return NULL;
}

/* The stride and extent of operand p's axis along which the op reads it. */
static void along(LowerCtx *c, const Expr *e, Val *p, KAccess *acc) {
  TvInfo *ti = lower_info(c, p);
  Val *id = op_axis(p, e->attr.indexed.axis);
  acc->along_extent = ext(c, id);
  acc->along_stride = ID(id)->iter_type == CF_ITER_BROADCAST ? kx_const(c->a, 0) : NULL;
  for (int i = 0; !acc->along_stride && i < ti->nalloc_ids; i++)
    if (ti->allocated[i] && ti->alloc_ids[i] == id) acc->along_stride = ti->strides[i];
  if (!acc->along_stride)
    lower_fail(c, CF_ERR_UNSUPPORTED, "compile: %s reads %s along its axis %d, which is not an allocation axis of %s",
               ir_op_name(e->op), TV(p)->display_name, e->attr.indexed.axis, TV(p)->display_name);
}

/* The output's position along an indexed op's axis, its extent there, and scatter's guard:
 * the output element lies within the index's other extents. */
static void indexed_op(LowerCtx *c, IndexMap *cm, KNode *op) {
  const Expr *e = op->u.op.src;
  Val *cv = e->out[0];
  int d = e->attr.indexed.axis;
  op->u.op.along_pos = out_index(c, cm, cv, d);
  op->u.op.along_size = ext(c, TV(cv)->root[d]);
  op->u.op.along_guard = kx_const(c->a, 1);
  if (op->u.op.vector > 1)
    lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: %s (%s) reads at computed positions; it cannot be vectorized",
               TV(cv)->display_name, ir_op_name(e->op));
  for (int k = 0; e->op == OP_SCATTER && k < TV(cv)->nroot; k++)
    if (k != d && ID(TV(cv)->root[k])->iter_type != CF_ITER_BROADCAST)
      op->u.op.along_guard = kx_bin(c->a, OP_AND, op->u.op.along_guard,
                                    kx_bin(c->a, OP_LT, out_index(c, cm, cv, k), ext(c, op_axis(e->in[1], k))));
}

/* The row-major index of the consumer's element among its logical axes (random numbers
 * depend on it alone, not on the schedule). */
static KExpr *row_major_index(LowerCtx *c, IndexMap *cm, Val *cv) {
  KExpr *sum = kx_const(c->a, 0);
  for (int d = 0; d < TV(cv)->nlogical; d++) {
    Val *id = TV(cv)->logical[d];
    if (ID(id)->iter_type == CF_ITER_REDUCTION) continue;
    KExpr *i = ID(id)->iter_type == CF_ITER_BROADCAST ? kx_const(c->a, 0) : get(cm, id);
    if (!i) lower_fail(c, CF_ERR_UNSUPPORTED, "compile: %s (random numbers) cannot be indexed along axis %d in its "
                       "loops", TV(cv)->display_name, d);
    sum = kx_bin(c->a, OP_ADD, kx_bin(c->a, OP_MUL, sum, ext(c, id)), i);
  }
  return sum;
}

/* A vector op with a tail (lower/vectorize.c) is in bounds when its last lane is: the
 * vector walks the split of a flat whole (analysis/'s an_vector_flat), whose index grows
 * with the lane and bounds every logical axis but through a modulo that stays in range. */
static void last_lane_bounds(LowerCtx *c, IndexMap *cm, IndexMap *pm, KNode *op) {
  int j = op->u.op.nloop - 1;
  KExpr *first = op->u.op.loop_index[j];
  op->u.op.loop_index[j] = kx_const(c->a, op->u.op.vector - 1);
  seed_consumer(c, cm, pm, op);
  propagate(c, cm, op->u.op.src->out[0]);
  collect_bounds(c, cm, op, op->u.op.src->out[0]);
  reset(cm);
  op->u.op.loop_index[j] = first;
}

static void index_op(LowerCtx *c, IndexMap *cm, IndexMap *pm, KNode *op) {
  const Expr *e = op->u.op.src;
  Val *cv = e->out[0];
  seed_consumer(c, cm, pm, op);
  propagate(c, cm, cv);
  op->u.op.out = access_of(c, cm, op, cv);
  if (!op->u.op.tail) collect_bounds(c, cm, op, cv);
  op->u.op.nin = 0;
  for (int i = 0; i < e->nin; i++) {
    Val *p = e->in[i];
    if (p->kind != VAL_TV) continue;
    seed_producer(c, cm, pm, op, p);
    if (ir_op_kind(e->op) == OPK_RESIZE) seed_resized(c, cm, pm, e, i);
    if (ir_op_kind(e->op) == OPK_INDEXED) seed_indexed(c, cm, pm, e, i);
    propagate(c, pm, p);
    op->u.op.in[op->u.op.nin++] = access_of(c, pm, op, p);
    if (ir_op_kind(e->op) == OPK_INDEXED && ir_operand_read_elsewhere(e, i)) along(c, e, p, &op->u.op.in[op->u.op.nin - 1]);
    reset(pm);
  }
  if (ir_op_kind(e->op) == OPK_INDEXED) indexed_op(c, cm, op);
  if (e->op == OP_PAD) /* the value where the operand has no element, then the condition */
    op->u.op.in[op->u.op.nin++] = ir_dtype_is_inexact(cv->dtype)
                                      ? (KAccess){.t = NULL, .scalar = e->attr.pad.value}
                                      : (KAccess){.t = NULL, .scalar_expr = kx_const(c->a, e->attr.pad.ivalue)};
  if (e->op == OP_PAD || e->op == OP_CAT)
    op->u.op.in[op->u.op.nin++] = (KAccess){.t = NULL, .scalar_expr = resize_condition(c, cm, e)};
  if (ir_op_kind(e->op) == OPK_BINARY && e->attr.scalar_rhs.is_scalar_rhs)
    op->u.op.in[op->u.op.nin++] =
        (KAccess){.t = NULL, .scalar = e->attr.scalar_rhs.value,
                  .scalar_expr = e->attr.scalar_rhs.val ? lower_scalar(c, e->attr.scalar_rhs.val) : NULL};
  if (ir_op_type_rule(e->op) == TR_RANDOM || ir_op_type_rule(e->op) == TR_RANDOM64) /* (seed, offset, index) */
    op->u.op.in[op->u.op.nin++] = (KAccess){.t = NULL, .scalar_expr = row_major_index(c, cm, cv)};
  if (e->op == OP_IOTA) { /* (index, start, step): the element's index along the axis, then constants */
    bool fl = ir_dtype_is_float(cv->dtype);
    Val *id = TV(cv)->logical[e->attr.iota.axis];
    KExpr *i = ID(id)->iter_type == CF_ITER_BROADCAST ? kx_const(c->a, 0) : get(cm, id);
    if (!i) lower_fail(c, CF_ERR_UNSUPPORTED, "compile: %s (iota) cannot be indexed along axis %d in its loops",
                       TV(cv)->display_name, e->attr.iota.axis);
    op->u.op.in[op->u.op.nin++] = (KAccess){.t = NULL, .scalar_expr = i};
    op->u.op.in[op->u.op.nin++] = fl ? (KAccess){.t = NULL, .scalar = e->attr.iota.start}
                                     : (KAccess){.t = NULL, .scalar_expr = kx_const(c->a, e->attr.iota.istart)};
    op->u.op.in[op->u.op.nin++] = fl ? (KAccess){.t = NULL, .scalar = e->attr.iota.step}
                                     : (KAccess){.t = NULL, .scalar_expr = kx_const(c->a, e->attr.iota.istep)};
  }
  if (e->op == OP_FULL) /* integers exactly, as an integer scalar (never through a double); complex with both parts */
    op->u.op.in[op->u.op.nin++] = ir_dtype_is_inexact(cv->dtype)
                                      ? (KAccess){.t = NULL, .scalar = e->attr.full.value, .scalar_im = e->attr.full.imag,
                                                  .scalar_complex = ir_dtype_is_complex(cv->dtype)}
                                      : (KAccess){.t = NULL, .scalar_expr = kx_const(c->a, e->attr.full.ivalue)};
  reset(cm);
  if (op->u.op.tail) last_lane_bounds(c, cm, pm, op);
}

/* The consumer's and the producer's index maps, by Val id: made once per lowering and
 * left empty (reset) after every use, so callers share them. */
typedef struct IndexMaps {
  IndexMap cm, pm;
} IndexMaps;

static IndexMaps *index_maps(LowerCtx *c) {
  if (!c->index_maps) {
    int nvals = c->f->vals.len;
    IndexMaps *m = ARENA_NEW(c->a, IndexMaps);
    m->cm = (IndexMap){ARENA_ARRAY(c->a, KExpr *, nvals), ARENA_ARRAY(c->a, int, nvals), 0};
    m->pm = (IndexMap){ARENA_ARRAY(c->a, KExpr *, nvals), ARENA_ARRAY(c->a, int, nvals), 0};
    c->index_maps = m;
  }
  return c->index_maps;
}

KAccess lower_index_access(LowerCtx *c, const KNode *op, Val *tv) {
  IndexMaps *m = index_maps(c);
  Val *cv = op->u.op.src->out[0];
  seed_consumer(c, &m->cm, &m->pm, op);
  propagate(c, &m->cm, cv);
  KAccess acc;
  if (tv == cv) {
    acc = access_of(c, &m->cm, op, cv);
  } else {
    seed_producer(c, &m->cm, &m->pm, op, tv);
    propagate(c, &m->pm, tv);
    acc = access_of(c, &m->pm, op, tv);
  }
  reset(&m->cm);
  reset(&m->pm);
  return acc;
}

int lower_index_axes(LowerCtx *c, const KNode *op, Val *tv, KExpr **out, int max) {
  IndexMaps *m = index_maps(c);
  TvInfo *ti = lower_info(c, tv);
  Val *cv = op->u.op.src->out[0];
  int n = 0;
  seed_consumer(c, &m->cm, &m->pm, op);
  propagate(c, &m->cm, cv);
  IndexMap *im = &m->cm;
  if (tv != cv) {
    seed_producer(c, &m->cm, &m->pm, op, tv);
    propagate(c, &m->pm, tv);
    im = &m->pm;
  }
  for (int i = 0; i < ti->nalloc_ids && n >= 0; i++) {
    if (!ti->allocated[i]) continue;
    KExpr *x = get(im, ti->alloc_ids[i]);
    if (!x) x = promoted_slot(c, op, tv, ti->alloc_ids[i]);
    if (!x || n == max) n = -1;
    else out[n++] = x;
  }
  reset(&m->cm);
  reset(&m->pm);
  return n;
}

KNode *lower_vector_lane(LowerCtx *c, const KNode *vec, KExpr *lane) {
  KNode *op = ARENA_NEW(c->a, KNode);
  *op = *vec;
  int n = op->u.op.nloop;
  op->u.op.vector = 1;
  op->u.op.tail = false;
  op->u.op.loop_index = ARENA_ARRAY(c->a, KExpr *, n);
  memcpy(op->u.op.loop_index, vec->u.op.loop_index, sizeof(KExpr *) * (size_t)n);
  op->u.op.loop_index[n - 1] = lane;
  IndexMaps *m = index_maps(c);
  index_op(c, &m->cm, &m->pm, op);
  return op;
}

static bool on_op(KVisitor *v, KNode *n) {
  LowerCtx *c = v->user;
  index_op(c, &c->index_maps->cm, &c->index_maps->pm, n);
  return true;
}

void lower_index(LowerCtx *c) {
  index_maps(c);
  KVisitor v = {.pre = {[KN_OP] = on_op}, .user = c, .arena = c->a};
  kir_visit(&v, &c->k->body);
}
