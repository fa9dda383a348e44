/* lower/extent_checks.c: the extent_checks pass. Axes that an op maps to each other must have equal
 * extents. Ops compare constant extents when the fusion is built; symbolic ones (two
 * cf_tensor_symbolic inputs added together) can only be compared once sizes are bound,
 * so this pass turns every such pair into a run-time check (or a compile error when both
 * fold to different constants), with the message the reference evaluator gives.
 * Also: max and min of an axis of extent 0 are refused when sizes are bound (torch raises;
 * the fold's start value, -inf or +inf, is not a result).
 * Requires: c->exprs. Establishes: k->checks for mapped axes of unequal extent expressions
 * and for the reduced axes of max and min.
 * Key decision: checking here, before launch, keeps a kernel from indexing one input
 * with another's sizes. */
#include "lower/lower.h"

static void check_expr(LowerCtx *c, const Expr *e) {
  Val *cv = e->out[0];
  for (int i = 0; i < e->nin; i++) {
    Val *p = e->in[i];
    if (p->kind != VAL_TV) continue;
    Val **pids, **cids;
    int n = lower_pairwise(c, p, cv, &pids, &cids);
    for (int k = 0; k < n; k++) {
      if (ID(pids[k])->iter_type == CF_ITER_BROADCAST || ID(cids[k])->iter_type == CF_ITER_BROADCAST) continue;
      KExpr *pe = lower_extent(c, pids[k]), *ce = lower_extent(c, cids[k]);
      if (kx_equal(pe, ce)) continue;
      lower_validate(c, kx_bin(c->a, OP_EQ, pe, ce), "run: %s: axis %d has extent mismatched between %s and %s",
                     ir_op_name(e->op), k, TV(p)->display_name, TV(cv)->display_name);
    }
  }
}

/* The message is the evaluator's (ir/eval.c), after "run: ". */
static void check_reduced(LowerCtx *c, const Expr *e) {
  Val *cv = e->out[0];
  for (int d = 0; ir_reduction_needs_elements(e->op) && d < TV(cv)->nlogical; d++) {
    Val *id = TV(cv)->logical[d];
    if (ID(id)->iter_type != CF_ITER_REDUCTION) continue;
    lower_validate(c, kx_bin(c->a, OP_NE, lower_extent(c, id), kx_const(c->a, 0)),
                   "run: %s: axis %d of %s has extent 0; the %s of an empty axis is undefined (torch refuses it "
                   "too)", ir_op_name(e->op), d, TV(e->in[0])->display_name, ir_op_name(e->op));
  }
}

void lower_extent_checks(LowerCtx *c) {
  for (int i = 0; i < c->nexprs; i++) {
    check_expr(c, c->exprs[i]);
    check_reduced(c, c->exprs[i]);
  }
}
