/* lower/expr_sort.c: pass 1. Orders the fusion's tensor expressions for loop-nest
 * building and builds the analyses later passes share (exact and loop IterDomain maps,
 * the list of TensorViews).
 *
 * Requires: a valid Fusion. Establishes: c->exprs in an order where every producer comes
 * before its consumers and a producer inlined into a consumer (ca_pos > 0) comes right
 * before it, so that the loops they share can be opened once; c->tvs with their transform histories; c->exact and
 * c->loop_map.
 * Key decision: a post-order walk from the outputs that visits a consumer's non-inlined
 * producers before its inlined ones, which keeps inlined chains adjacent without
 * nvFuser's general expression-grouping algorithm. */
#include "lower/lower.h"

static void visit(LowerCtx *c, Expr *e, char *seen, PtrVec *order) {
  if (!e || ir_op_kind(e->op) == OPK_TRANSFORM || e->out[0]->kind != VAL_TV || seen[e->id]) return;
  seen[e->id] = 1;
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < e->nin; i++) {
      Val *p = e->in[i];
      if (p->kind != VAL_TV) continue;
      bool inlined = TV(p)->ca_pos > 0;
      if (inlined == (pass == 1)) visit(c, p->def, seen, order);
    }
  ptrvec_push(c->a, order, e);
}

void lower_sort_exprs(LowerCtx *c) {
  cf_fusion *f = c->f;
  if (f->outputs.len == 0) lower_fail(c, CF_ERR_INVALID_ARGUMENT, "compile: the fusion has no outputs");
  char *seen = arena_alloc(c->a, (size_t)f->exprs.len + 1);
  PtrVec order = {0};
  for (int i = 0; i < f->outputs.len; i++) visit(c, ((Val *)f->outputs.items[i])->def, seen, &order);
  c->exprs = (Expr **)order.items;
  c->nexprs = order.len;
  c->tvs = ir_fusion_all_tvs_in(c->a, f, &c->ntvs);
  for (int i = 0; i < c->ntvs; i++) {
    TvInfo *ti = lower_info(c, c->tvs[i]);
    ti->history = ir_tv_history_in(c->a, c->tvs[i], &ti->nhistory);
  }
  c->exact = sched_idmap_build(f, false);
  c->loop_map = sched_idmap_build(f, true);
  if (!c->exact || !c->loop_map) lower_fail(c, CF_ERR_OUT_OF_MEMORY, "compile: out of memory");
}
