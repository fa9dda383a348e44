/* scheduler/online_softmax.c: the online softmax rewrite (sched_online_softmax) the inner
 * persistent scheduler applies to an unscheduled copy before its multipass schedule: a
 * softmax's max and its sum of exponentials become one reduction, so the row is read twice
 * (statistics, then the output) instead of three times. Below norm_apply.c, above the IR
 * (it edits operands and use lists, as scheduler/cache.c does).
 *
 * The pattern, over the same reduced axes of a float tensor X:
 *     m = max(X);  e = exp(X - broadcast(m));  s = sum(e)
 * becomes one OP_ONLINE_SOFTMAX reduction st of X (ir/dtype.h: each partial {max, sum - 1,
 * count} rescaled to the larger max as it merges) read as m = welford_avg(st) and
 * s = welford_m2(st) + 1; every reader of m and s (and the fusion's outputs) takes the new
 * tensors, and the max and the sum are removed from the fusion (their outputs left
 * without definitions and readers). e stays: what reads it (the division) is recomputed in the last pass anyway.
 * Key decision: only float X (the state's scalar is float; a double softmax keeps its two
 * reductions), and only where the row is read again per pass: kept in registers or
 * shared memory, the second pass over it costs no memory traffic. */
#include "scheduler/persistent.h"

/* Whether reductions a and b reduce the same positions of tensors of the same rank. */
static bool same_reduced_axes(Val *a, Val *b) {
  if (TV(a)->nlogical != TV(b)->nlogical) return false;
  for (int x = 0; x < TV(a)->nlogical; x++)
    if ((ID(TV(a)->logical[x])->iter_type == CF_ITER_REDUCTION) !=
        (ID(TV(b)->logical[x])->iter_type == CF_ITER_REDUCTION))
      return false;
  return true;
}

/* The use of v by op `op` (with `in0` as its first operand when not NULL), or NULL. */
static Expr *use_of(Val *v, IrOp op, const Val *in0, int k) {
  int seen = 0;
  for (int i = 0; i < v->uses.len; i++) {
    Expr *u = v->uses.items[i];
    if (u->op == op && (!in0 || (u->nin == 2 && u->in[0] == in0 && u->in[1] == v)) && seen++ == k) return u;
  }
  return NULL;
}

/* The sum completing the pattern from max reduction mx, or NULL. */
static Expr *match(Expr *mx) {
  if (mx->op != OP_MAX_REDUCE || mx->in[0]->dtype != CF_FLOAT) return NULL;
  Val *x = mx->in[0], *m = mx->out[0];
  Expr *b, *d, *e, *s;
  for (int i = 0; (b = use_of(m, OP_BROADCAST, NULL, i)) != NULL; i++)
    for (int j = 0; (d = use_of(b->out[0], OP_SUB, x, j)) != NULL; j++)
      for (int k = 0; (e = use_of(d->out[0], OP_EXP, NULL, k)) != NULL; k++)
        for (int l = 0; (s = use_of(e->out[0], OP_SUM, NULL, l)) != NULL; l++)
          if (same_reduced_axes(s->out[0], m)) return s;
  return NULL;
}

int sched_online_softmax_count(Expr *const *exprs, int n) {
  int count = 0;
  for (int i = 0; i < n; i++) count += match(exprs[i]) != NULL;
  return count;
}

/* Every reader of `from` (and the fusion's outputs) takes `to`; from's definition is
 * dropped. */
static void replace(cf_fusion *f, Val *from, Val *to) {
  ir_tv_replace_uses(f, from, to);
  ir_expr_drop(f, from->def);
}

static cf_status rewrite(cf_fusion *f, Expr *mx, Expr *sum) {
  Val *x = mx->in[0], *m = mx->out[0], *ids[CF_MAX_RANK];
  for (int a = 0; a < TV(m)->nlogical; a++) {
    Val *l = TV(m)->logical[a];
    if (!(ids[a] = ir_id_new(f, ID(l)->extent, ID(l)->iter_type)))
      return ir_error(f, CF_ERR_OUT_OF_MEMORY, "online softmax: out of memory");
  }
  Val *st = ir_tv_new(f, CF_WELFORD_FLOAT, TV(m)->nlogical, ids);
  if (!st || !ir_expr_new(f, OP_ONLINE_SOFTMAX, 1, &x, 1, &st))
    return ir_error(f, CF_ERR_OUT_OF_MEMORY, "online softmax: out of memory");
  cf_tv *max = cf_welford_avg(f, ir_tv_handle(st));
  cf_tv *s = cf_add_scalar(f, cf_welford_m2(f, ir_tv_handle(st)), 1.0);
  if (f->status) return f->status;
  replace(f, m, ir_tv(max));
  replace(f, sum->out[0], ir_tv(s));
  return CF_OK;
}

cf_status sched_online_softmax(cf_fusion *f, Arena *a) {
  int n;
  Expr **exprs = ir_fusion_tensor_exprs_in(a, f, &n);
  if (!exprs) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "online softmax: out of memory");
  for (int i = 0; i < n && !f->status; i++) {
    Expr *sum = match(exprs[i]);
    if (sum) rewrite(f, exprs[i], sum);
  }
  return f->status;
}
