/* lower/index.c: pass 8. Computes the index of every tensor access of every op.
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

/* The tensor whose axis a loop of the op was promoted to, when an axis of the op's
 * output merged from a broadcast runs in a loop over a concrete axis; else NULL. */
static Val *promoting_tensor(const LowerCtx *c, const KNode *op, Val *tv) {
  Val *ref = NULL;
  for (int j = 0; j < TV(tv)->nloop && j < op->u.op.nloop; j++) {
    const KNode *l = op->u.op.loops[j];
    Val *id = TV(tv)->loop[j];
    if (l && l->u.loop.concrete != id && lower_from_broadcast(c, id) && !lower_from_broadcast(c, l->u.loop.concrete))
      ref = ID(l->u.loop.concrete)->tv;
  }
  return ref;
}

/* Indices of tv's logical axes through the history of `ref`, the concrete tensor its
 * promoted loops run over: a history that merges a broadcast counts it as extent 1, so it
 * does not say which element a promoted loop index stands for; ref's history does. */
static void seed_through(LowerCtx *c, IndexMap *m, IndexMap *scratch, const KNode *op, Val *tv, Val *ref) {
  /* Loops are shared position by position: ref's axis k runs in the op's loop k (whoever
   * opened it), when the two map. */
  for (int k = 0; k < TV(ref)->nloop && k < op->u.op.nloop; k++) {
    const KNode *l = op->u.op.loops[k];
    if (l && (l->u.loop.concrete == TV(ref)->loop[k] || sched_idmap_same(c->loop_map, l->u.loop.concrete, TV(ref)->loop[k])))
      put(scratch, TV(ref)->loop[k], op->u.op.loop_index[k]);
  }
  propagate(c, scratch, ref);
  for (int i = 0; i < TV(tv)->nlogical; i++) {
    Val *l = TV(tv)->logical[i];
    if (ID(l)->iter_type == CF_ITER_BROADCAST) {
      put(m, l, kx_const(c->a, 0));
      continue;
    }
    for (int r = 0; r < TV(ref)->nroot; r++)
      if (get(scratch, TV(ref)->root[r]) && sched_idmap_same(c->exact, l, TV(ref)->root[r])) {
        put(m, l, get(scratch, TV(ref)->root[r]));
        break;
      }
  }
  reset(scratch);
}

/* A tensor computed in loops promoted to a concrete tensor's extents must have every axis
 * merged from a broadcast among those shared loops: an axis of its own merged from a
 * broadcast would pair a promoted index with a broadcast counted as 1, and no element
 * mapping serves both its writer and its readers. */
static void check_promotable(LowerCtx *c, Val *tv) {
  for (int j = TV(tv)->ca_pos; j < TV(tv)->nloop; j++) {
    Val *id = TV(tv)->loop[j];
    if (ID(id)->iter_type == CF_ITER_BROADCAST || !lower_from_broadcast(c, id)) continue;
    lower_fail(c, CF_ERR_UNSUPPORTED,
               "compile: %s runs in loops promoted to a concrete tensor's extents, but its axis %d (%s), right of its "
               "compute-at position, is merged from a broadcast; inline %s past that axis or keep its broadcast axes "
               "out of merges", TV(tv)->display_name, j, lower_id_str(c, id), TV(tv)->display_name);
  }
}

static void seed_consumer(LowerCtx *c, IndexMap *m, IndexMap *scratch, const KNode *op) {
  Val *tv = op->u.op.src->out[0];
  Val *ref = promoting_tensor(c, op, tv);
  if (ref) {
    check_promotable(c, tv);
    seed_through(c, m, scratch, op, tv, ref);
  }
  lower_info(c, tv)->promoted = ref != NULL;
  for (int j = 0; j < TV(tv)->nloop; j++) {
    Val *id = TV(tv)->loop[j];
    put(m, id, ID(id)->iter_type == CF_ITER_BROADCAST ? kx_const(c->a, 0) : op->u.op.loop_index[j]);
  }
}

/* Producer axes: logical from the consumer's root, and any axis exactly mapped to a
 * consumer loop axis. */
static void seed_producer(LowerCtx *c, IndexMap *cm, IndexMap *pm, const KNode *op, Val *p) {
  Val *cv = op->u.op.src->out[0];
  Val *pids[64], *cids[64];
  int n = sched_pairwise_map(p, cv, pids, cids, 64);
  for (int i = 0; i < n; i++)
    put(pm, pids[i], ID(pids[i])->iter_type == CF_ITER_BROADCAST ? kx_const(c->a, 0) : get(cm, cids[i]));
  TensorView *pt = TV(p);
  /* A producer written in promoted loops is read in the same loops: its shared axes take
   * their loop indices (its own history would index the merged broadcast as 1). */
  if (lower_info(c, p)->promoted)
    for (int j = 0; j < pt->ca_pos && j < TV(cv)->nloop; j++)
      if (ID(pt->loop[j])->iter_type != CF_ITER_BROADCAST && sched_idmap_same(c->loop_map, pt->loop[j], TV(cv)->loop[j]))
        put(pm, pt->loop[j], op->u.op.loop_index[j]);
  for (int i = 0; i < pt->nloop; i++) {
    Val *pid = pt->loop[i];
    if (get(pm, pid) || ID(pid)->iter_type == CF_ITER_BROADCAST) continue;
    for (int j = 0; j < TV(cv)->nloop; j++)
      if (sched_idmap_same(c->exact, pid, TV(cv)->loop[j]) && ID(TV(cv)->loop[j])->iter_type != CF_ITER_BROADCAST) {
        put(pm, pid, op->u.op.loop_index[j]);
        break;
      }
  }
}

static KExpr *linearize(LowerCtx *c, IndexMap *m, Val *tv, int lo, int hi) {
  TvInfo *ti = lower_info(c, tv);
  KExpr *sum = kx_const(c->a, 0);
  for (int i = lo; i < hi; i++) {
    if (!ti->allocated[i]) continue;
    KExpr *x = get(m, ti->alloc_ids[i]);
    if (!x)
      lower_fail(c, CF_ERR_INTERNAL, "internal error: no index for allocation axis %d of %s; please report this bug",
                 i, TV(tv)->display_name);
    sum = kx_bin(c->a, OP_ADD, sum, kx_bin(c->a, OP_MUL, x, ti->strides[i]));
  }
  return sum;
}

static KAccess access_of(LowerCtx *c, IndexMap *m, Val *tv) {
  TvInfo *ti = lower_info(c, tv);
  KAccess acc = {.t = ti->kt};
  if (ti->is_tmem) {
    acc.lane = linearize(c, m, tv, 0, ti->dim_sep);
    acc.col = linearize(c, m, tv, ti->dim_sep, ti->nalloc_ids);
  } else {
    acc.index = linearize(c, m, tv, 0, ti->nalloc_ids);
  }
  return acc;
}

/* The bounds every consumer index must respect: its root axes and the inputs of the
 * splits of its history (a non-divisible split over-iterates its input). An op whose loops
 * were promoted to a concrete tensor's extents keeps only its root bounds: its own
 * intermediate axes count a merged broadcast as 1 and do not bound the promoted loops. */
static void collect_bounds(LowerCtx *c, IndexMap *m, KNode *op, Val *cv, bool promoted) {
  TvInfo *ti = lower_info(c, cv);
  int cap = TV(cv)->nroot + (promoted ? 0 : ti->nhistory);
  op->u.op.bounds = ARENA_ARRAY(c->a, KExpr *, cap + op->u.op.nloop);
  op->u.op.nbounds = 0;
  /* A thread-parallel loop shorter than its launch dimension: the extra threads idle. */
  for (int j = 0; j < op->u.op.nloop; j++) {
    const KNode *l = op->u.op.loops[j];
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

static void index_op(LowerCtx *c, IndexMap *cm, IndexMap *pm, KNode *op) {
  const Expr *e = op->u.op.src;
  Val *cv = e->out[0];
  seed_consumer(c, cm, pm, op);
  propagate(c, cm, cv);
  op->u.op.out = access_of(c, cm, cv);
  collect_bounds(c, cm, op, cv, promoting_tensor(c, op, cv) != NULL);
  op->u.op.nin = 0;
  for (int i = 0; i < e->nin; i++) {
    Val *p = e->in[i];
    if (p->kind != VAL_TV) continue;
    seed_producer(c, cm, pm, op, p);
    propagate(c, pm, p);
    op->u.op.in[op->u.op.nin++] = access_of(c, pm, p);
    reset(pm);
  }
  if (ir_op_kind(e->op) == OPK_BINARY && e->attr.scalar_rhs.is_scalar_rhs)
    op->u.op.in[op->u.op.nin++] = (KAccess){.t = NULL, .scalar = e->attr.scalar_rhs.value};
  reset(cm);
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
    acc = access_of(c, &m->cm, cv);
  } else {
    seed_producer(c, &m->cm, &m->pm, op, tv);
    propagate(c, &m->pm, tv);
    acc = access_of(c, &m->pm, tv);
  }
  reset(&m->cm);
  reset(&m->pm);
  return acc;
}

static void walk(LowerCtx *c, IndexMap *cm, IndexMap *pm, KBlock *b) {
  for (int i = 0; i < b->len; i++) {
    KNode *n = b->items[i];
    if (n->kind == KN_FOR) walk(c, cm, pm, &n->u.loop.body);
    else if (n->kind == KN_IF) walk(c, cm, pm, &n->u.cond.then);
    else if (n->kind == KN_OP) index_op(c, cm, pm, n);
  }
}

void lower_index(LowerCtx *c) {
  IndexMaps *m = index_maps(c);
  walk(c, &m->cm, &m->pm, &c->k->body);
}
