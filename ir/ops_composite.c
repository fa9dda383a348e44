/* ir/ops_composite.c: ops that are other ops in the IR, as nvFuser builds them: iota (its
 * own op, no input), triu (iota, sub, ge, where), addcmul (mul, add), and the random
 * numbers uniform and normal (a Philox draw, rand/rand64/randn, scaled and shifted).
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

/* ---- random numbers ---------------------------------------------------------------------- */

/* The seed or the offset (an integer 0-d tensor: cf_scalar_input or cf_const_int)
 * broadcast and expanded to n axes of the given extents. */
static Val *spread(cf_fusion *f, const char *what, const char *name, int pos, cf_tv *s, int n, Val *const *ext) {
  Val *tv = ir_op_arg(f, what, pos, name, s);
  if (!tv) return NULL;
  int r;
  Val **ax = ir_op_axes(f, tv, &r);
  if (!ax) return ir_op_oom(f, what);
  if (r != 0 || ir_dtype_is_float(tv->dtype) || tv->dtype == CF_BOOL || ir_dtype_is_welford(tv->dtype))
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "%s: the %s %s must be a 0-d integer tensor (cf_scalar_input or "
                       "cf_const_int)", what, name, TV(tv)->display_name), NULL;
  bool all[CF_MAX_RANK];
  for (int k = 0; k < n; k++) all[k] = true;
  Val *b = n ? ir_tv(cf_broadcast(f, s, n, all)) : tv;
  Val **bax = b ? ir_op_axes(f, b, &r) : NULL;
  return bax ? ir_tv(ir_op_expand(f, what, b, bax, n, ext)) : NULL;
}

/* A draw of op (rand, rand64, randn) over n axes of the given extents. */
static cf_tv *draw(cf_fusion *f, const char *what, IrOp op, int n, Val *const *ext, cf_tv *seed, cf_tv *offset) {
  Val *in[2] = {spread(f, what, "seed", 5, seed, n, ext), NULL};
  if (in[0]) in[1] = spread(f, what, "offset", 6, offset, n, ext);
  if (!in[1]) return NULL;
  Val **ids = ARENA_ARRAY(f->arena, Val *, n);
  for (int k = 0; ids && k < n; k++) {
    int64_t e;
    bool one = ir_scalar_const_value(ext[k], &e) && e == 1;
    if (!(ids[k] = ir_id_new(f, ext[k], one ? CF_ITER_BROADCAST : CF_ITER_ITERATION))) return ir_op_oom(f, what);
  }
  Val *out = ids ? ir_tv_new(f, ir_op_result_dtype(op, CF_INT64), n, ids) : NULL;
  return ir_op_result(out ? ir_op_wire(f, what, op, 2, in, out) : ir_op_oom(f, what));
}

/* The extents of `sizes` as scalar Vals; false after recording an error. */
static bool const_extents(cf_fusion *f, const char *what, int rank, const int64_t *sizes, Val **ext) {
  if (rank < 0 || rank > CF_MAX_RANK)
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "%s: rank %d is outside 0..%d", what, rank, CF_MAX_RANK), false;
  if (rank > 0 && !sizes) return ir_error(f, CF_ERR_INVALID_ARGUMENT, "%s: argument 3 (sizes) is NULL", what), false;
  for (int k = 0; k < rank; k++) {
    if (sizes[k] < 0)
      return ir_error(f, CF_ERR_INVALID_ARGUMENT, "%s: size %lld of axis %d is negative", what, (long long)sizes[k], k),
             false;
    if (!(ext[k] = ir_const_int(f, sizes[k]))) return ir_op_oom(f, what), false;
  }
  return true;
}

/* a + b * draw in the draw's precision, then cast to dtype; a 16-bit uniform that rounds up
 * to `high` is `low` (the interval stays half-open, as nvFuser's). */
static cf_tv *scaled(cf_fusion *f, const char *what, bool normal, int n, Val *const *ext, double a, double b,
                     cf_tv *seed, cf_tv *offset, cf_dtype dtype) {
  if (!ir_dtype_is_float(dtype))
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "%s: dtype %s is not a floating-point dtype", what,
                    ir_dtype_valid(dtype) ? cf_dtype_name(dtype) : "invalid"), NULL;
  IrOp op = normal ? OP_RANDN : dtype == CF_DOUBLE ? OP_RAND64 : OP_RAND;
  cf_tv *u = draw(f, what, op, n, ext, seed, offset);
  cf_dtype wide = ir_tv(u) ? ir_tv(u)->dtype : CF_DOUBLE;
  cf_tv *r = cf_add(f, cf_mul(f, u, cf_const(f, wide, b)), cf_const(f, wide, a));
  if (r && ir_tv(r)->dtype != dtype) r = cf_cast(f, r, dtype);
  if (!normal && ir_dtype_is_narrow_float(dtype)) {
    cf_tv *high = cf_const(f, dtype, a + b);
    r = cf_where(f, cf_ge(f, r, high), cf_const(f, dtype, a), r);
  }
  return r;
}

cf_tv *cf_uniform(cf_fusion *f, int rank, const int64_t *sizes, double low, double high, cf_tv *seed, cf_tv *offset,
                  cf_dtype dtype) {
  Val *ext[CF_MAX_RANK];
  if (!f || f->status || !const_extents(f, "uniform", rank, sizes, ext)) return NULL;
  if (!(low < high) || !isfinite(high - low))
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "uniform: [%g, %g) is not a finite interval", low, high), NULL;
  return scaled(f, "uniform", false, rank, ext, low, high - low, seed, offset, dtype);
}

cf_tv *cf_normal(cf_fusion *f, int rank, const int64_t *sizes, double mean, double std, cf_tv *seed, cf_tv *offset,
                 cf_dtype dtype) {
  Val *ext[CF_MAX_RANK];
  if (!f || f->status || !const_extents(f, "normal", rank, sizes, ext)) return NULL;
  if (!isfinite(mean) || !isfinite(std) || std < 0)
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "normal: mean %g and std %g must be finite, std >= 0", mean, std), NULL;
  return scaled(f, "normal", true, rank, ext, mean, std, seed, offset, dtype);
}

/* The extents of x's op axes, for the _like draws; NULL after recording an error. */
static Val **like_extents(cf_fusion *f, const char *what, cf_tv *x, int *n, cf_dtype *dt) {
  Val *tv = ir_op_arg(f, what, 1, "x", x);
  Val **ax = tv ? ir_op_axes(f, tv, n) : NULL;
  if (!ax) return tv ? ir_op_oom(f, what) : NULL;
  Val **ext = ARENA_ARRAY(f->arena, Val *, *n);
  for (int k = 0; ext && k < *n; k++) ext[k] = ID(ax[k])->extent;
  *dt = tv->dtype;
  return ext ? ext : ir_op_oom(f, what);
}

cf_tv *cf_uniform_like(cf_fusion *f, cf_tv *x, double low, double high, cf_tv *seed, cf_tv *offset) {
  int n;
  cf_dtype dt;
  Val **ext = f && !f->status ? like_extents(f, "uniform_like", x, &n, &dt) : NULL;
  if (!ext) return NULL;
  if (!(low < high) || !isfinite(high - low))
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "uniform_like: [%g, %g) is not a finite interval", low, high), NULL;
  return scaled(f, "uniform_like", false, n, ext, low, high - low, seed, offset, dt);
}

cf_tv *cf_normal_like(cf_fusion *f, cf_tv *x, double mean, double std, cf_tv *seed, cf_tv *offset) {
  int n;
  cf_dtype dt;
  Val **ext = f && !f->status ? like_extents(f, "normal_like", x, &n, &dt) : NULL;
  if (!ext) return NULL;
  if (!isfinite(mean) || !isfinite(std) || std < 0)
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "normal_like: mean %g and std %g must be finite, std >= 0", mean, std),
           NULL;
  return scaled(f, "normal_like", true, n, ext, mean, std, seed, offset, dt);
}
