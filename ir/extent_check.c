/* ir/extent_check.c: the check that a concrete fusion's sizes agree at every op
 * (ir_check_extents), run by the define-and-run executor on the copy it made concrete
 * with a call's sizes.
 * An op built on symbolic sizes assumed its operands' extents equal (i0 + i2 is legal
 * when built); once the call gives them values, each operand's kept axes must have the
 * output's extent, except broadcast axes. The evaluator makes the same check as it runs;
 * a kernel would read out of bounds instead, so a concrete copy is checked before any
 * scheduling. So are each tensor's size in bytes, its empty axes aside (extents_fit), and
 * the max or min of an empty axis (the evaluator's error). */
#include "ir/checked.h"
#include "ir/ir.h"

/* The elements of tv's kept axes; *known false when one is symbolic or their product
 * overflows int64 (ir_check_extents refuses such a tensor first). */
static int64_t const_numel(Val *tv, bool *known) {
  int64_t n = 1, x = 0;
  for (int i = 0; i < TV(tv)->nlogical; i++) {
    if (ID(TV(tv)->logical[i])->iter_type == CF_ITER_REDUCTION) continue;
    if (!ir_scalar_const_value(ID(TV(tv)->logical[i])->extent, &x) || !ck_mul(n, x, &n)) *known = false;
  }
  return n;
}

/* Whether the product of tv's nonzero constant extents, times its element size, fits
 * int64: the heuristics and lowering multiply extents (rows x columns, tiles x blocks) of
 * an empty tensor too, whose other sizes may be any (a [0, 2^63 - 1, 2] input). */
static bool extents_fit(Val *tv) {
  int64_t n = (int64_t)cf_dtype_size(tv->dtype), x;
  for (int i = 0; i < TV(tv)->nlogical; i++)
    if (ir_scalar_const_value(ID(TV(tv)->logical[i])->extent, &x) && x > 0 && !ck_mul(n, x, &n)) return false;
  return true;
}

static cf_status check_fits(cf_fusion *f, const char *what, Val *tv) {
  if (extents_fit(tv)) return CF_OK;
  return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "%s: %s's sizes (those of 0 aside) multiply to more bytes than "
                     "int64 counts; no kernel can index it", what, TV(tv)->display_name);
}

cf_status ir_check_reshape(cf_fusion *f, const char *what, const Expr *e) {
  bool known = true;
  int64_t a = const_numel(e->in[0], &known), b = const_numel(e->out[0], &known);
  if (!known || a == b) return CF_OK;
  return ir_error(f, CF_ERR_INVALID_ARGUMENT, "%s: reshape: %s has %lld elements but %s has %lld", what,
                  TV(e->in[0])->display_name, (long long)a, TV(e->out[0])->display_name, (long long)b);
}

/* A max or min over an axis of extent 0, refused in the evaluator's words: lowering's
 * check of it folds to a compile error on a concrete copy, which define and run took for
 * a schedule lowering refused (an internal error). */
static cf_status check_reduced(cf_fusion *f, const char *what, const Expr *e) {
  Val *out = e->out[0];
  int64_t x;
  for (int d = 0; ir_reduction_needs_elements(e->op) && d < TV(out)->nlogical; d++)
    if (ID(TV(out)->logical[d])->iter_type == CF_ITER_REDUCTION &&
        ir_scalar_const_value(ID(TV(out)->logical[d])->extent, &x) && x == 0)
      return ir_error(f, CF_ERR_INVALID_ARGUMENT, "%s: " IR_EMPTY_REDUCTION_MSG, what, ir_op_name(e->op), d,
                      TV(e->in[0])->display_name, ir_op_name(e->op));
  return CF_OK;
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
  for (int i = 0; !s && i < f->inputs.len; i++) s = check_fits(f, what, f->inputs.items[i]);
  for (int i = 0; !s && i < n; i++) {
    for (int j = 0; !s && j < exprs[i]->nin; j++)
      if (exprs[i]->in[j]->kind == VAL_TV) s = check_operand(f, what, exprs[i], exprs[i]->in[j]);
    for (int j = 0; !s && j < exprs[i]->nout; j++)
      if (exprs[i]->out[j]->kind == VAL_TV) s = check_fits(f, what, exprs[i]->out[j]);
    if (!s) s = check_reduced(f, what, exprs[i]);
  }
  arena_destroy(scratch);
  return s;
}
