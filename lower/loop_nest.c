/* lower/loop_nest.c: builds the kernel's loop nests from the loop model, one op node per
 * tensor expression.
 *
 * Requires: c->exprs in loop-nest order (expr_sort.c), the loop model (c->model.loops,
 * promotion) and effective parallel types (c->model, analysis/). Establishes: c->k->body,
 * a tree of KN_FOR loops (thread-parallel axes are kept as trivial loops whose index is
 * the thread index) with a KN_OP per expression, carrying its loops and loop indices (one
 * per loop axis of the expression's output), and a reduction-initialization op before the
 * first reduction loop of each reduction.
 * Key decisions: an expression reuses the open loops of its leading loop axes' groups and
 * opens the rest; a loop iterates its group's promoted IterDomain, with the group's
 * parallel type, from the moment it is opened; a group whose loop was already closed is
 * an internal error (the sort guarantees contiguity). A Vectorize axis innermost in a copy
 * becomes one vector access instead of a loop. */
#include <string.h>

#include "lower/lower.h"

typedef struct OpenLoop {
  int group;     /* its loop group */
  KNode *node;
} OpenLoop;

typedef struct Nest {
  OpenLoop *stack;
  int depth;
  char *opened; /* by loop group: its loop exists */
} Nest;

static KBlock *block_at(LowerCtx *c, Nest *n, int depth) {
  return depth == 0 ? &c->k->body : &n->stack[depth - 1].node->u.loop.body;
}

static bool is_launch_type(cf_parallel_type p) { return ir_ptype_is_thread(p) || ir_ptype_is_block(p); }

/* A loop over the promoted IterDomain of id's group, on the group's parallel type. A loop
 * whose group holds only broadcast axes has one element: serial, extent 1. */
static KNode *new_loop(LowerCtx *c, Val *id) {
  Val *p = lower_promoted(c, id);
  KNode *l = ARENA_NEW(c->a, KNode);
  l->kind = KN_FOR;
  l->u.loop.concrete = p;
  if (ID(p)->iter_type == CF_ITER_BROADCAST) {
    l->u.loop.pt = CF_PT_SERIAL;
    l->u.loop.extent = kx_const(c->a, 1);
  } else {
    l->u.loop.pt = lower_ptype(c, p);
    l->u.loop.extent = lower_extent(c, p);
  }
  if (is_launch_type(l->u.loop.pt)) {
    l->u.loop.index = kx_thread(c->a, l->u.loop.pt, false);
  } else {
    l->u.loop.var = arena_printf(c->a, "i%d", c->next_var++);
    l->u.loop.index = kx_var(c->a, l->u.loop.var);
  }
  return l;
}

/* How many of tv's leading loop axes run in the open loops. */
static int shared_depth(LowerCtx *c, Nest *n, Val *tv) {
  int d = 0;
  while (d < n->depth && d < TV(tv)->nloop && n->stack[d].group == an_loop_group(c->model.loops, TV(tv)->loop[d])) d++;
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

static bool block_reduced(LowerCtx *c, Val *tv) {
  for (int i = 0; i < TV(tv)->nloop; i++)
    if (ID(TV(tv)->loop[i])->iter_type == CF_ITER_REDUCTION &&
        (ir_ptype_is_thread(lower_ptype(c, TV(tv)->loop[i])) || ir_ptype_is_block(lower_ptype(c, TV(tv)->loop[i]))))
      return true;
  return false;
}

/* A serial iteration axis inside reduction loops gets its own initialization loop
 * (insert_init), but a block or grid reduction keeps one register accumulator per
 * thread, so there it must be parallel. */
static void check_reduction_order(LowerCtx *c, Val *tv, int r) {
  if (r < 0 || !block_reduced(c, tv)) return;
  for (int i = r; i < TV(tv)->nloop; i++)
    if (ID(TV(tv)->loop[i])->iter_type != CF_ITER_REDUCTION && ID(TV(tv)->loop[i])->iter_type != CF_ITER_BROADCAST &&
        !parallel_iteration(c, TV(tv)->loop[i]))
      lower_fail(c, CF_ERR_UNSUPPORTED,
                 "compile: %s has iteration axis %d inside its reduction loops and reduces across threads or blocks "
                 "(one accumulator per thread); reorder its reduction axes innermost", TV(tv)->display_name, i);
}

static bool vector_copy(const Expr *e, Val *tv, int j) {
  return j == TV(tv)->nloop - 1 && ID(TV(tv)->loop[j])->ptype == CF_PT_VECTORIZE && ir_op_is_vector_copy(e->op);
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

/* The initialization of a reduction's output goes right before its first reduction loop,
 * inside loops of its own over the serial iteration axes within the reduction loops
 * (a [rS, iS] order: every element of iS is initialized before the reduction runs). */
static void insert_init(LowerCtx *c, const Expr *e, Nest *n, int r) {
  Val *tv = e->out[0];
  KNode *init = new_op(c, e, n, TV(tv)->nloop);
  init->u.op.reduction_init = true;
  KNode *outer = NULL, *inner = NULL;
  for (int j = r; j < init->u.op.nloop; j++) {
    Val *id = TV(tv)->loop[j];
    if (parallel_iteration(c, id)) continue;
    if (ID(id)->iter_type != CF_ITER_ITERATION) {
      init->u.op.loop_index[j] = kx_const(c->a, 0);
      continue;
    }
    KNode *l = new_loop(c, id);
    init->u.op.loop_index[j] = l->u.loop.index;
    init->u.op.loops[j] = l;
    if (inner) kb_push(c->a, &inner->u.loop.body, l);
    else outer = l;
    inner = l;
  }
  if (inner) kb_push(c->a, &inner->u.loop.body, init);
  KBlock *parent = block_at(c, n, r);
  KNode *loop = n->stack[r].node;
  for (int i = 0; i < parent->len; i++)
    if (parent->items[i] == loop) {
      kb_insert(c->a, parent, i, outer ? outer : init);
      return;
    }
}

static void place_expr(LowerCtx *c, const Expr *e, Nest *n) {
  Val *tv = e->out[0];
  TensorView *t = TV(tv);
  int reuse = shared_depth(c, n, tv);
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
    int g = an_loop_group(c->model.loops, t->loop[j]);
    if (n->opened[g])
      lower_fail(c, CF_ERR_INTERNAL, "internal error: the loop of %s's axis %d was closed before %s ran in it; "
                 "please report this bug", t->display_name, j, t->display_name);
    n->opened[g] = 1;
    KNode *l = new_loop(c, t->loop[j]);
    kb_push(c->a, block_at(c, n, j), l);
    n->stack[j] = (OpenLoop){g, l};
    n->depth = j + 1;
  }
  int r = first_reduction(tv);
  check_reduction_order(c, tv, r);
  if (r >= 0) insert_init(c, e, n, r);
  KNode *op = new_op(c, e, n, t->nloop);
  op->u.op.vector = vec > 0 ? vec : 1;
  op->u.op.tail = vec > 0 && lower_info(c, tv)->vector_tail;
  if (vec > 0) op->u.op.loop_index[t->nloop - 1] = kx_const(c->a, 0);
  kb_push(c->a, block_at(c, n, nloops), op);
}

void lower_loop_nest(LowerCtx *c) {
  int maxdepth = 1;
  for (int i = 0; i < c->nexprs; i++)
    if (TV(c->exprs[i]->out[0])->nloop > maxdepth) maxdepth = TV(c->exprs[i]->out[0])->nloop;
  Nest n = {ARENA_ARRAY(c->a, OpenLoop, maxdepth), 0, arena_alloc(c->a, (size_t)c->f->vals.len + 1)};
  for (int i = 0; i < c->nexprs; i++) place_expr(c, c->exprs[i], &n);
}
