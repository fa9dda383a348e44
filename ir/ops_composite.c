/* ir/ops_composite.c: ops that are other ops in the IR, as nvFuser builds them: iota (its
 * own op, no input), triu (iota, broadcast, sub, ge, where) and addcmul (mul, add).
 *
 * Key decisions: a composite prints as the ops it is made of, so schedulers and lowering
 * see nothing new; triu compares two iotas over all of x's axes (its extents, constant or
 * symbolic; one counts along the rows, one along the columns), so its mask has x's shape
 * and inlines position by position; constants enter as scalars (cf_const_int, cf_const),
 * so they never promote the tensor they meet. */
#include <math.h>

#include "ir/dtype.h"
#include "ir/ops_util.h"

/* An iota over axes of the given extents (scalar Vals; n of them), counting along `axis`:
 * start + i_axis * step of dtype. */
static cf_tv *iota_over(cf_fusion *f, const char *what, int n, Val *const *extents, int axis, IrElem start,
                        IrElem step, cf_dtype dtype) {
  if (!ir_dtype_valid(dtype) || ir_dtype_is_welford(dtype) || dtype == CF_BOOL)
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "%s: dtype %d is not a numeric dtype", what, (int)dtype), NULL;
  Val **ids = ARENA_ARRAY(f->arena, Val *, n);
  for (int k = 0; ids && k < n; k++) {
    int64_t e;
    bool one = ir_scalar_const_value(extents[k], &e) && e == 1;
    if (!(ids[k] = ir_id_new(f, extents[k], one ? CF_ITER_BROADCAST : CF_ITER_ITERATION))) return ir_op_oom(f, what);
  }
  Val *out = ids ? ir_tv_new(f, dtype, n, ids) : NULL;
  Expr *e = out ? ir_expr_new(f, OP_IOTA, 0, NULL, 1, &out) : NULL;
  if (!e) return ir_op_oom(f, what);
  e->attr.iota.start = start.d, e->attr.iota.step = step.d;
  e->attr.iota.istart = start.i, e->attr.iota.istep = step.i;
  e->attr.iota.axis = axis;
  return ir_op_result(e);
}

cf_tv *cf_iota(cf_fusion *f, int64_t length, double start, double step, cf_dtype dtype) {
  if (!f || f->status) return NULL;
  if (length < 0) return ir_error(f, CF_ERR_INVALID_ARGUMENT, "iota: length %lld is negative", (long long)length), NULL;
  if (!isfinite(start) || !isfinite(step))
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "iota: start %g and step %g must be finite", start, step), NULL;
  bool fl = ir_dtype_is_float(dtype);
  if (!fl && (start != trunc(start) || step != trunc(step)))
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "iota: start %g and step %g of an integer iota must be integers", start,
                    step), NULL;
  IrElem s = {.d = start}, d = {.d = step};
  if (!fl) s = ir_elem_convert(s, CF_DOUBLE, CF_INT64), d = ir_elem_convert(d, CF_DOUBLE, CF_INT64);
  Val *extent = ir_const_int(f, length);
  return extent ? iota_over(f, "iota", 1, &extent, 0, s, d, dtype) : ir_op_oom(f, "iota");
}

/* The 0 of x's dtype, as a scalar (it does not promote x). */
static cf_tv *zero_like(cf_fusion *f, cf_dtype dt) {
  return ir_dtype_is_float(dt) ? cf_const(f, dt, 0.0) : cf_const_int(f, dt, 0);
}

/* where(col - row >= diagonal, x, 0) over x's last two axes (torch.triu). */
cf_tv *cf_triu(cf_fusion *f, cf_tv *x, int64_t diagonal) {
  if (!f || f->status) return NULL;
  Val *tv = ir_op_arg(f, "triu", 1, "x", x);
  if (!tv) return NULL;
  int n;
  Val **ax = ir_op_axes(f, tv, &n);
  if (!ax) return ir_op_oom(f, "triu");
  if (n < 2)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "triu: %s has %d axes; it needs a matrix (2 or more)",
                       TV(tv)->display_name, n), NULL;
  if (ir_dtype_is_welford(tv->dtype))
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "triu: %s holds Welford states", TV(tv)->display_name), NULL;
  /* the row and column indices over x's own axes: no broadcast, so every schedule that
   * inlines x's consumers inlines them too */
  Val *ext[CF_MAX_RANK];
  for (int k = 0; k < n; k++) ext[k] = ID(ax[k])->extent;
  IrElem zero = {.i = 0}, one = {.i = 1};
  cf_tv *rows = iota_over(f, "triu", n, ext, n - 2, zero, one, CF_INT64);
  cf_tv *cols = iota_over(f, "triu", n, ext, n - 1, zero, one, CF_INT64);
  cf_tv *mask = cf_ge(f, cf_sub(f, cols, rows), cf_const_int(f, CF_INT64, diagonal));
  return cf_where(f, mask, x, zero_like(f, tv->dtype));
}

/* input + value * t1 * t2 (torch.addcmul; value a scalar). */
cf_tv *cf_addcmul(cf_fusion *f, cf_tv *input, cf_tv *t1, cf_tv *t2, double value) {
  if (!f || f->status) return NULL;
  return cf_add(f, input, cf_mul(f, cf_mul(f, cf_const(f, CF_DOUBLE, value), t1), t2));
}
