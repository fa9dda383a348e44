/* lower/extent_checks.c: the extent_checks pass. Axes that an op maps to each other must have equal
 * extents. Ops compare constant extents when the fusion is built; symbolic ones (two
 * cf_tensor_symbolic inputs added together) can only be compared once sizes are bound,
 * so this pass turns every such pair into a run-time check (or a compile error when both
 * fold to different constants), with the message the reference evaluator gives.
 * Also: max and min of an axis of extent 0 are refused when sizes are bound (torch raises;
 * the fold's start value, -inf or +inf, is not a result). And a tensor that has elements
 * but whose loop axis is promoted to an axis of extent 0 (a broadcast inlined with an axis
 * that is empty at this call: x[1, n] computed in the loop of y[0, n]) is refused: the
 * loop runs no iteration, so the tensor would be left unwritten. This matters for fusion
 * outputs and for loops the tensor does not share with its consumers (past its compute-at
 * position); inside shared loops the consumers are empty too or checked themselves.
 * Requires: c->exprs, the loop model. Establishes: k->checks for mapped axes of unequal
 * extent expressions, for the reduced axes of max and min, and for promoted loops.
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
                   "run: " IR_EMPTY_REDUCTION_MSG, ir_op_name(e->op), d, TV(e->in[0])->display_name,
                   ir_op_name(e->op));
  }
}

static KExpr *numel(LowerCtx *c, Val *tv);

/* An indexed op's operands whose extents the op bounds (IR_INDEXED_TABLE: the unpaired
 * ones), and a lookup or scatter over an empty axis of a non-empty result; the messages
 * are the evaluator's sense (ir/eval_index.c) after "run: ". */
static void check_indexed(LowerCtx *c, const Expr *e) {
  if (ir_op_kind(e->op) != OPK_INDEXED || ir_op_is_scan(e->op)) return;
  Val *x = e->in[0], *idx = e->in[1], *cv = e->out[0];
  int d = e->attr.indexed.axis;
  KExpr *xd = lower_extent(c, TV(x)->logical[d]);
  KExpr *has = kx_bin(c->a, OP_NE, numel(c, e->op == OP_SCATTER ? idx : cv), kx_const(c->a, 0));
  lower_validate(c, kx_select(c->a, has, kx_bin(c->a, OP_NE, xd, kx_const(c->a, 0)), kx_const(c->a, 1)),
                 "run: %s: axis %d of %s has extent 0; there is nothing to look up", ir_op_name(e->op), d,
                 TV(x)->display_name);
  for (int k = 0; e->op != OP_TAKE_ALONG_AXIS && k < TV(idx)->nlogical; k++) {
    KExpr *ik = lower_extent(c, TV(idx)->logical[k]);
    if (k != d)
      lower_validate(c, kx_bin(c->a, OP_LE, ik, lower_extent(c, TV(x)->logical[k])), "run: %s: axis %d of %s is "
                     "larger than %s's; it must be at most as large", ir_op_name(e->op), k, TV(idx)->display_name,
                     TV(x)->display_name);
    if (e->op == OP_SCATTER)
      lower_validate(c, kx_bin(c->a, OP_LE, ik, lower_extent(c, TV(e->in[2])->logical[k])), "run: scatter: axis %d "
                     "of %s is larger than %s's; it must be at most as large", k, TV(idx)->display_name,
                     TV(e->in[2])->display_name);
  }
}

/* The element count of tv (its logical axes but reduced ones), a kernel expression. */
static KExpr *numel(LowerCtx *c, Val *tv) {
  KExpr *n = kx_const(c->a, 1);
  for (int d = 0; d < TV(tv)->nlogical; d++)
    if (ID(TV(tv)->logical[d])->iter_type != CF_ITER_REDUCTION) n = kx_bin(c->a, OP_MUL, n, lower_extent(c, TV(tv)->logical[d]));
  return n;
}

/* tv's loop axes whose loop iterates another axis (promotion) of another extent: when
 * that extent is 0 and tv has elements, no iteration computes them. Loops shared with
 * tv's consumers (before its compute-at position) matter only for fusion outputs. */
static void check_promoted(LowerCtx *c, Val *tv) {
  bool out = ir_tv_is_output(c->f, tv);
  for (int p = out ? 0 : TV(tv)->ca_pos; p < TV(tv)->nloop; p++) {
    Val *id = TV(tv)->loop[p], *loop = lower_promoted(c, id);
    KExpr *own = lower_extent(c, id), *ext = lower_extent(c, loop);
    if (loop == id || kx_equal(own, ext)) continue;
    KExpr *empty = kx_bin(c->a, OP_EQ, numel(c, tv), kx_const(c->a, 0));
    lower_validate(c, kx_select(c->a, empty, kx_const(c->a, 1), kx_bin(c->a, OP_NE, ext, kx_const(c->a, 0))),
                   "run: loop axis %d of %s iterates %s, which is empty at this call, so %s (not empty) would not "
                   "be computed; do not inline it with the empty axis (its broadcast grows to it)",
                   p, TV(tv)->display_name, lower_id_str(c, loop), TV(tv)->display_name);
  }
}

void lower_extent_checks(LowerCtx *c) {
  for (int i = 0; i < c->nexprs; i++) {
    check_expr(c, c->exprs[i]);
    check_reduced(c, c->exprs[i]);
    check_indexed(c, c->exprs[i]);
    for (int o = 0; o < c->exprs[i]->nout; o++)
      if (c->exprs[i]->out[o]->kind == VAL_TV) check_promoted(c, c->exprs[i]->out[o]);
  }
}
