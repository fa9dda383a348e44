/* lower/loop_nest.c: pass 6. Builds the kernel's loop nests from the loop domains and
 * compute-at positions, one op node per tensor expression.
 *
 * Requires: c->exprs in loop-sharing order, c->loop_map. Establishes: c->k->body, a tree
 * of KN_FOR loops (thread-parallel axes are kept as trivial loops whose index is the
 * thread index) with a KN_OP per expression, carrying its loop indices (one per loop axis
 * of the expression's output), and a reduction-initialization op before the first
 * reduction loop of each reduction.
 * Key decisions: an expression reuses the innermost open loops that map (permissive map)
 * to its own leading loop axes, as far as it shares loops with a producer or consumer
 * (compute-at and max-producer positions); axes sharing a loop share its parallel type
 * (a serial axis adopts it, a parallel one makes a serial loop parallel, conflicting
 * types are refused later); a loop opened for a broadcast axis (or one merged from a
 * broadcast) is promoted to the extent of a concrete axis that later shares it; a Vectorize axis innermost in a copy becomes one
 * vector access instead of a loop. */
#include <string.h>

#include "lower/lower.h"

typedef struct OpenLoop {
  Val *id;       /* the axis that opened (or last promoted) the loop */
  KNode *node;
  bool shareable;
} OpenLoop;

typedef struct Nest {
  OpenLoop *stack;
  int depth;
} Nest;

static KBlock *block_at(LowerCtx *c, Nest *n, int depth) {
  return depth == 0 ? &c->k->body : &n->stack[depth - 1].node->u.loop.body;
}

static KExpr *loop_index_of(LowerCtx *c, Val *id, const char **var) {
  cf_parallel_type pt = ID(id)->ptype;
  *var = NULL;
  if (ir_ptype_is_thread(pt) || ir_ptype_is_block(pt)) return kx_thread(c->a, pt, false);
  *var = arena_printf(c->a, "i%d", c->next_var++);
  return kx_var(c->a, *var);
}

/* A broadcast axis has one element whatever its parallel type: its loop is a serial one of
 * extent 1 (index 0) until a concrete axis that shares it promotes it. */
static KNode *new_loop(LowerCtx *c, Val *id) {
  KNode *l = ARENA_NEW(c->a, KNode);
  l->kind = KN_FOR;
  if (ID(id)->iter_type == CF_ITER_BROADCAST) {
    l->u.loop.pt = CF_PT_SERIAL;
    l->u.loop.extent = kx_const(c->a, 1);
    l->u.loop.var = arena_printf(c->a, "i%d", c->next_var++);
    l->u.loop.index = kx_var(c->a, l->u.loop.var);
    l->u.loop.concrete = id;
    return l;
  }
  l->u.loop.pt = ID(id)->ptype;
  l->u.loop.extent = lower_extent(c, id);
  l->u.loop.index = loop_index_of(c, id, &l->u.loop.var);
  l->u.loop.concrete = id;
  return l;
}

static bool is_launch_type(cf_parallel_type p) { return ir_ptype_is_thread(p) || ir_ptype_is_block(p); }

bool lower_from_broadcast(const LowerCtx *c, const Val *id) {
  const Expr *d = id->def;
  if (d && ir_op_kind(d->op) == OPK_TRANSFORM) {
    for (int i = 0; i < d->nin; i++)
      if (lower_from_broadcast(c, d->in[i])) return true;
    return false;
  }
  return ID((Val *)id)->iter_type == CF_ITER_BROADCAST && c->concretized[id->id];
}

/* Makes a loop thread- or block-parallel. Its index expression changes in place, so ops
 * already placed in the loop, which hold that expression, follow. */
static void make_parallel(KNode *l, cf_parallel_type p) {
  l->u.loop.pt = p;
  l->u.loop.var = NULL;
  KExpr *x = l->u.loop.index;
  x->kind = KX_THREAD;
  x->pt = p;
  x->is_dim = false;
  x->name = NULL;
}

/* Axis j of tv joins an open loop. Axes sharing a loop take one parallel type: a serial
 * one adopts the loop's, a parallel one makes a serial loop parallel (two different
 * parallel types are refused by validate_parallel.c). A loop opened by a broadcast axis takes the extent of the
 * first concrete axis that shares it. */
static void join_loop(LowerCtx *c, OpenLoop *o, Val *tv, int j) {
  Val *id = TV(tv)->loop[j];
  KNode *l = o->node;
  cf_parallel_type lp = l->u.loop.pt, ip = ID(id)->ptype;
  /* Two different launch types are refused by the validate_parallel pass, with names. */
  /* a broadcast axis' parallel type means nothing: it has one element */
  if (!is_launch_type(lp) && is_launch_type(ip) && ID(id)->iter_type != CF_ITER_BROADCAST) make_parallel(l, ip);
  if (lower_from_broadcast(c, o->id) && !lower_from_broadcast(c, id)) {
    l->u.loop.extent = lower_extent(c, id);
    l->u.loop.concrete = id;
    o->id = id;
  }
}

static int shared_depth(LowerCtx *c, Nest *n, Val *tv) {
  TensorView *t = TV(tv);
  int limit = t->ca_pos > t->max_producer_pos ? t->ca_pos : t->max_producer_pos;
  int d = 0;
  while (d < n->depth && d < t->nloop && d < limit && n->stack[d].shareable &&
         sched_idmap_same(c->loop_map, n->stack[d].id, t->loop[d]))
    d++;
  return d;
}

static int first_reduction(Val *tv) {
  for (int i = 0; i < TV(tv)->nloop; i++)
    if (ID(TV(tv)->loop[i])->iter_type == CF_ITER_REDUCTION) return i;
  return -1;
}

/* An iteration axis inside reduction loops is fine on a thread or block index (each
 * thread owns its element, as an rfactor tensor's [rS, ithreadIdx.x] has it); a serial
 * one would need its whole extent initialized before the reduction loops. */
static bool parallel_iteration(LowerCtx *c, Val *id) {
  return ID(id)->iter_type == CF_ITER_ITERATION && is_launch_type(lower_ptype(c, id));
}

static void check_reduction_order(LowerCtx *c, Val *tv, int r) {
  for (int i = r; r >= 0 && i < TV(tv)->nloop; i++)
    if (ID(TV(tv)->loop[i])->iter_type != CF_ITER_REDUCTION && ID(TV(tv)->loop[i])->iter_type != CF_ITER_BROADCAST &&
        !parallel_iteration(c, TV(tv)->loop[i]))
      lower_fail(c, CF_ERR_UNSUPPORTED,
                 "compile: %s has iteration axis %d inside its reduction loops; reorder its reduction axes innermost",
                 TV(tv)->display_name, i);
}

static bool vector_copy(const Expr *e, Val *tv, int j) {
  return j == TV(tv)->nloop - 1 && ID(TV(tv)->loop[j])->ptype == CF_PT_VECTORIZE && e->op == OP_SET;
}

static KNode *new_op(LowerCtx *c, const Expr *e, Nest *n, int nloop) {
  KNode *op = ARENA_NEW(c->a, KNode);
  op->kind = KN_OP;
  op->u.op.op = e->op;
  op->u.op.src = e;
  op->u.op.out_dtype = e->out[0]->dtype;
  op->u.op.nloop = nloop;
  op->u.op.loop_index = ARENA_ARRAY(c->a, KExpr *, nloop);
  op->u.op.loops = ARENA_ARRAY(c->a, KNode *, nloop);
  for (int j = 0; j < nloop && j < n->depth; j++) {
    op->u.op.loop_index[j] = n->stack[j].node->u.loop.index;
    op->u.op.loops[j] = n->stack[j].node;
  }
  return op;
}

/* The initialization of a reduction's output goes right before its first reduction loop. */
static void insert_init(LowerCtx *c, const Expr *e, Nest *n, int r) {
  KNode *init = new_op(c, e, n, TV(e->out[0])->nloop);
  init->u.op.reduction_init = true;
  for (int j = r; j < init->u.op.nloop; j++)
    if (!parallel_iteration(c, TV(e->out[0])->loop[j])) init->u.op.loop_index[j] = kx_const(c->a, 0);
  KBlock *parent = block_at(c, n, r);
  KNode *loop = n->stack[r].node;
  for (int i = 0; i < parent->len; i++)
    if (parent->items[i] == loop) {
      kb_insert(c->a, parent, i, init);
      return;
    }
}

static void place_expr(LowerCtx *c, const Expr *e, Nest *n) {
  Val *tv = e->out[0];
  TensorView *t = TV(tv);
  int reuse = shared_depth(c, n, tv);
  for (int d = 0; d < reuse; d++) join_loop(c, &n->stack[d], tv, d);
  n->depth = reuse;
  int vec = 0, nloops = t->nloop; /* vec > 0: the innermost axis became one vector access */
  if (nloops > 0 && vector_copy(e, tv, nloops - 1) && nloops - 1 >= reuse) {
    int64_t v;
    if (!ir_scalar_const_value(ID(t->loop[nloops - 1])->extent, &v))
      lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: the vectorized axis %d of %s has a symbolic extent", nloops - 1,
                 t->display_name);
    vec = (int)v;
    nloops--;
  }
  for (int j = reuse; j < nloops; j++) {
    KNode *l = new_loop(c, t->loop[j]);
    kb_push(c->a, block_at(c, n, j), l);
    n->stack[j] = (OpenLoop){t->loop[j], l, j < t->ca_pos};
    n->depth = j + 1;
  }
  int r = first_reduction(tv);
  check_reduction_order(c, tv, r);
  if (r >= 0) insert_init(c, e, n, r);
  KNode *op = new_op(c, e, n, t->nloop);
  op->u.op.vector = vec > 0 ? vec : 1;
  if (vec > 0) op->u.op.loop_index[t->nloop - 1] = kx_const(c->a, 0);
  kb_push(c->a, block_at(c, n, nloops), op);
}

void lower_loop_nest(LowerCtx *c) {
  int maxdepth = 1;
  for (int i = 0; i < c->nexprs; i++)
    if (TV(c->exprs[i]->out[0])->nloop > maxdepth) maxdepth = TV(c->exprs[i]->out[0])->nloop;
  Nest n = {ARENA_ARRAY(c->a, OpenLoop, maxdepth), 0};
  for (int i = 0; i < c->nexprs; i++) place_expr(c, c->exprs[i], &n);
}
