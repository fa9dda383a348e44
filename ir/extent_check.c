/* ir/extent_check.c: the check that a concrete fusion's sizes agree at every op
 * (ir_check_extents), run by the define-and-run executor on the copy it made concrete
 * with a call's sizes.
 * An op built on symbolic sizes assumed its operands' extents equal (i0 + i2 is legal
 * when built); once the call gives them values, each operand's kept axes must have the
 * output's extent, except broadcast axes. The evaluator makes the same check as it runs;
 * a kernel would read out of bounds instead, so a concrete copy is checked before any
 * scheduling. */
#include "ir/ir.h"

static int64_t const_numel(Val *tv, bool *known) {
  int64_t n = 1, x;
  for (int i = 0; i < TV(tv)->nlogical; i++) {
    if (ID(TV(tv)->logical[i])->iter_type == CF_ITER_REDUCTION) continue;
    if (!ir_scalar_const_value(ID(TV(tv)->logical[i])->extent, &x)) *known = false;
    n *= x;
  }
  return n;
}

cf_status ir_check_reshape(cf_fusion *f, const char *what, const Expr *e) {
  bool known = true;
  int64_t a = const_numel(e->in[0], &known), b = const_numel(e->out[0], &known);
  if (!known || a == b) return CF_OK;
  return ir_error(f, CF_ERR_INVALID_ARGUMENT, "%s: reshape: %s has %lld elements but %s has %lld", what,
                  TV(e->in[0])->display_name, (long long)a, TV(e->out[0])->display_name, (long long)b);
}

/* Operand `in` of e against e's output, axis by axis (as the evaluator pairs them). */
static cf_status check_operand(cf_fusion *f, const char *what, const Expr *e, Val *in) {
  Val *out = e->out[0], *ax[CF_MAX_RANK];
  if (e->op == OP_RESHAPE) return ir_check_reshape(f, what, e);
  int n = 0;
  for (int i = 0; i < TV(in)->nlogical && n < CF_MAX_RANK; i++)
    if (ID(TV(in)->logical[i])->iter_type != CF_ITER_REDUCTION) ax[n++] = TV(in)->logical[i];
  for (int d = 0, k = 0; d < TV(out)->nlogical; d++) {
    if (e->op == OP_BROADCAST && e->attr.broadcast.is_broadcast[d]) continue;
    while (e->op == OP_SQUEEZE && k < n && e->attr.squeeze.is_squeezed[k]) k++;
    int src = e->op == OP_PERMUTE ? e->attr.permute.perm[d] : k++;
    if (src >= n) return IR_INTERNAL(f, src < n);
    int64_t x, y;
    int j = 0;
    while (j < e->nin && e->in[j] != in) j++;
    if (ir_unpaired_axis(e, j, src)) continue; /* resized: read at other positions (a slice's bounds are
                                                     normalized to the axis: ops_resize.c) */
    if (ID(ax[src])->iter_type == CF_ITER_BROADCAST || !ir_scalar_const_value(ID(ax[src])->extent, &x) ||
        !ir_scalar_const_value(ID(TV(out)->logical[d])->extent, &y) || x == y)
      continue;
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "%s: %s: axis %d has extent %lld in %s but %lld in %s", what,
                    ir_op_name(e->op), d, (long long)x, TV(in)->display_name, (long long)y, TV(out)->display_name);
  }
  return CF_OK;
}

cf_status ir_check_extents(cf_fusion *f, const char *what) {
  if (f->status) return f->status;
  Arena *scratch = arena_create();
  if (!scratch) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
  int n;
  Expr **exprs = ir_fusion_tensor_exprs_in(scratch, f, &n);
  cf_status s = CF_OK;
  for (int i = 0; !s && i < n; i++)
    for (int j = 0; !s && j < exprs[i]->nin; j++)
      if (exprs[i]->in[j]->kind == VAL_TV) s = check_operand(f, what, exprs[i], exprs[i]->in[j]);
  arena_destroy(scratch);
  return s;
}
