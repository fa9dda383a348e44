/* lower/expr_sort.c: pass 1. Orders the fusion's tensor expressions for loop-nest
 * building and builds the analyses later passes share (exact and loop IterDomain maps,
 * the list of TensorViews).
 *
 * Requires: a valid Fusion. Establishes: c->concretized (broadcast axes mapped to real
 * ones, which loop promotion needs); c->exprs in an order where every producer comes
 * before its consumers and a producer inlined into a consumer (ca_pos > 0) comes right
 * before it, so that the loops they share can be opened once; c->tvs with their transform histories; c->exact and
 * c->loop_map.
 * Key decision: a walk from the outputs in two phases per consumer: first every
 * dependency of its inlined tree that is not inlined (whole loop nests of their own), then
 * its inlined producers by increasing compute-at position, then the consumer. Inlined
 * chains stay adjacent without nvFuser's general expression-grouping algorithm. */
#include "lower/lower.h"

typedef struct Sort {
  char *seen;     /* emitted */
  char *prepared; /* its inlined tree's other dependencies emitted */
  PtrVec order;
} Sort;

static bool is_tensor_expr(const Expr *e) { return e && ir_op_kind(e->op) != OPK_TRANSFORM && e->out[0]->kind == VAL_TV; }
static void visit(LowerCtx *c, Expr *e, Sort *s);

/* Emits every dependency of e's inlined tree that is not itself inlined into it, so that
 * none of them lands between the inlined producers and their consumer. */
static void prepare(LowerCtx *c, Expr *e, Sort *s) {
  if (!is_tensor_expr(e) || s->prepared[e->id]) return;
  s->prepared[e->id] = 1;
  for (int i = 0; i < e->nin; i++) {
    Val *p = e->in[i];
    if (p->kind != VAL_TV) continue;
    if (TV(p)->ca_pos == 0) visit(c, p->def, s);
    else prepare(c, p->def, s);
  }
}

/* Emits e after its inlined producers, by increasing compute-at position, so the most
 * deeply inlined producer comes right before e and no sibling closes a loop it shares. */
static void place(LowerCtx *c, Expr *e, Sort *s) {
  int maxpos = 0;
  for (int i = 0; i < e->nin; i++)
    if (e->in[i]->kind == VAL_TV && TV(e->in[i])->ca_pos > maxpos) maxpos = TV(e->in[i])->ca_pos;
  for (int pos = 1; pos <= maxpos; pos++)
    for (int i = 0; i < e->nin; i++) {
      Val *p = e->in[i];
      if (p->kind != VAL_TV || TV(p)->ca_pos != pos || !is_tensor_expr(p->def) || s->seen[p->def->id]) continue;
      s->seen[p->def->id] = 1;
      place(c, p->def, s);
    }
  ptrvec_push(c->a, &s->order, e);
}

static void visit(LowerCtx *c, Expr *e, Sort *s) {
  if (!is_tensor_expr(e) || s->seen[e->id]) return;
  prepare(c, e, s);
  if (s->seen[e->id]) return;
  s->seen[e->id] = 1;
  place(c, e, s);
}

static int uf_find(int *parent, int x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

/* A broadcast axis is concretized when the op-level pairings (producer logical axis with
 * consumer root axis, transitively) connect it to a real axis: loops over it then run over
 * that axis' extent. Only direct pairings count: the permissive map's forwarding through
 * merges would also join a size-1 axis that stays size 1 everywhere. */
static void find_concretized(LowerCtx *c) {
  int n = c->f->vals.len;
  int *parent = ARENA_ARRAY(c->a, int, n + 1);
  char *concrete = arena_alloc(c->a, (size_t)n + 1);
  for (int i = 0; i < n; i++) parent[i] = i;
  for (int e = 0; e < c->nexprs; e++) {
    const Expr *x = c->exprs[e];
    for (int k = 0; k < x->nin; k++) {
      Val *pids[64], *cids[64];
      int m = x->in[k]->kind == VAL_TV ? sched_pairwise_map(x->in[k], x->out[0], pids, cids, 64) : 0;
      for (int j = 0; j < m; j++) parent[uf_find(parent, pids[j]->id)] = uf_find(parent, cids[j]->id);
    }
  }
  for (int i = 0; i < n; i++) {
    Val *v = c->f->vals.items[i];
    if (v->kind == VAL_ID && ID(v)->iter_type != CF_ITER_BROADCAST) concrete[uf_find(parent, i)] = 1;
  }
  c->concretized = ARENA_ARRAY(c->a, bool, n + 1);
  for (int i = 0; i < n; i++) c->concretized[i] = concrete[uf_find(parent, i)];
}

void lower_sort_exprs(LowerCtx *c) {
  cf_fusion *f = c->f;
  if (f->outputs.len == 0) lower_fail(c, CF_ERR_INVALID_ARGUMENT, "compile: the fusion has no outputs");
  Sort s = {arena_alloc(c->a, (size_t)f->exprs.len + 1), arena_alloc(c->a, (size_t)f->exprs.len + 1), {0}};
  for (int i = 0; i < f->outputs.len; i++) visit(c, ((Val *)f->outputs.items[i])->def, &s);
  c->exprs = (Expr **)s.order.items;
  c->nexprs = s.order.len;
  c->tvs = ir_fusion_all_tvs_in(c->a, f, &c->ntvs);
  for (int i = 0; i < c->ntvs; i++) {
    TvInfo *ti = lower_info(c, c->tvs[i]);
    ti->history = ir_tv_history_in(c->a, c->tvs[i], &ti->nhistory);
  }
  c->exact = sched_idmap_build(f, false);
  c->loop_map = sched_idmap_build(f, true);
  if (!c->exact || !c->loop_map) lower_fail(c, CF_ERR_OUT_OF_MEMORY, "compile: out of memory");
  find_concretized(c);
}
