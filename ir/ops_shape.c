/* ir/ops_shape.c: the shape ops of the public API: squeeze, expand and expand_as, full
 * and full_like, scalar inputs and constants, and reshape.
 *
 * Each checks its arguments, records the first error on the fusion and makes one Expr,
 * as the ops of ops.c do, with the helpers ops.c shares (ir/ops_util.h). Key decisions:
 * squeeze needs a broadcast or constant-1 axis at build time; expand turns broadcast axes
 * into iteration axes of the given extents without copying; full holds its value exactly
 * (a double for floating dtypes, an int64 for integers and bool), so constants made by
 * cf_const_int are never rounded through a double; a constant or a scalar input is a
 * scalar in type promotion (TensorView.is_scalar: torch's wrapped numbers); reshape keeps
 * the row-major order, with at most one inferred size. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/dtype.h"
#include "ir/ops_util.h"

/* ---- shape ops: squeeze, expand, full, reshape; scalar inputs ------------------------------------ */

cf_tv *cf_squeeze(cf_fusion *f, cf_tv *x, int naxes, const int *axes) {
  if (!f || f->status) return NULL;
  Val *tv = ir_op_arg(f, "squeeze", 1, "x", x);
  if (!tv) return NULL;
  if (naxes > 0 && !axes) return ir_error(f, CF_ERR_INVALID_ARGUMENT, "squeeze: argument 3 (axes) is NULL"), NULL;
  if (naxes < 0) return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "squeeze: naxes is %d", naxes), NULL;
  int n;
  Val **ax = ir_op_axes(f, tv, &n);
  bool *sq = ARENA_ARRAY(f->arena, bool, n);
  Val **ids = ARENA_ARRAY(f->arena, Val *, n);
  if (!ax || !sq || !ids) return ir_op_oom(f, "squeeze");
  for (int i = 0; i < naxes; i++) {
    int a = ir_wrap_axis(axes[i], n);
    if (a < 0 || sq[a])
      return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "squeeze: axis %d %s", axes[i],
                         a < 0 ? "out of range" : "given twice"), NULL;
    if (!ir_id_is_one_position(ax[a])) {
      StrBuf b = {0};
      ir_print_id(&b, ax[a]);
      ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "squeeze: axis %d (%s) of %s is neither a broadcast axis nor of "
                  "extent 1", axes[i], b.data ? b.data : "", TV(tv)->display_name);
      sb_free(&b);
      return NULL;
    }
    sq[a] = true;
  }
  int m = 0;
  for (int k = 0; k < n; k++)
    if (!sq[k] && !(ids[m++] = ir_op_axis_copy(f, ax[k], ID(ax[k])->iter_type))) return ir_op_oom(f, "squeeze");
  Expr *e = ir_op_wire(f, "squeeze", OP_SQUEEZE, 1, &tv, ir_tv_new(f, tv->dtype, m, ids));
  if (e) {
    e->attr.squeeze.is_squeezed = sq;
    e->attr.squeeze.rank = n;
  }
  return ir_op_result(e);
}

/* expand's output axes (ir/ops_util.h): extent[k] (a scalar Val) for each broadcast axis of x that
 * becomes concrete, NULL to keep axis k as it is. */
cf_tv *ir_op_expand(cf_fusion *f, const char *what, Val *tv, Val **ax, int n, Val *const *extent) {
  Val **ids = ARENA_ARRAY(f->arena, Val *, n);
  if (!ids) return ir_op_oom(f, what);
  for (int k = 0; k < n; k++) {
    bool bcast = ID(ax[k])->iter_type == CF_ITER_BROADCAST;
    if (extent[k] && !bcast && !ir_op_extents_compatible(ID(ax[k])->extent, extent[k])) {
      StrBuf b = {0};
      ir_print_id(&b, ax[k]);
      sb_puts(&b, " to ");
      ir_print_scalar(&b, extent[k]);
      ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "%s: axis %d of %s is not a broadcast axis and cannot expand from %s",
                  what, k, TV(tv)->display_name, b.data ? b.data : "");
      sb_free(&b);
      return NULL;
    }
    int64_t one;
    bool to_one = extent[k] && ir_scalar_const_value(extent[k], &one) && one == 1;
    if (!extent[k] || !bcast || to_one)
      ids[k] = ir_op_axis_copy(f, ax[k], ID(ax[k])->iter_type);
    else
      ids[k] = ir_id_new(f, extent[k], CF_ITER_ITERATION);
    if (!ids[k]) return ir_op_oom(f, what);
  }
  return ir_op_result(ir_op_wire(f, what, OP_EXPAND, 1, &tv, ir_tv_new(f, tv->dtype, n, ids)));
}

cf_tv *cf_expand(cf_fusion *f, cf_tv *x, int rank, const int64_t *sizes) {
  if (!f || f->status) return NULL;
  Val *tv = ir_op_arg(f, "expand", 1, "x", x);
  if (!tv) return NULL;
  if (rank > 0 && !sizes) return ir_error(f, CF_ERR_INVALID_ARGUMENT, "expand: argument 3 (sizes) is NULL"), NULL;
  int n;
  Val **ax = ir_op_axes(f, tv, &n);
  Val **ext = ARENA_ARRAY(f->arena, Val *, n);
  if (!ax || !ext) return ir_op_oom(f, "expand");
  if (rank != n)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "expand: sizes has %d axes, expected %d", rank, n), NULL;
  for (int k = 0; k < n; k++) {
    if (sizes[k] < -1)
      return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "expand: size %lld of axis %d is negative (-1 keeps the "
                         "axis)", (long long)sizes[k], k), NULL;
    if (sizes[k] >= 0 && !(ext[k] = ir_const_int(f, sizes[k]))) return ir_op_oom(f, "expand");
  }
  return ir_op_expand(f, "expand", tv, ax, n, ext);
}

cf_tv *cf_expand_as(cf_fusion *f, cf_tv *x, cf_tv *other) {
  if (!f || f->status) return NULL;
  Val *tv = ir_op_arg(f, "expand_as", 1, "x", x), *ot = tv ? ir_op_arg(f, "expand_as", 2, "other", other) : NULL;
  if (!ot) return NULL;
  int n, no;
  Val **ax = ir_op_axes(f, tv, &n), **oax = ir_op_axes(f, ot, &no);
  Val **ext = ARENA_ARRAY(f->arena, Val *, n);
  if (!ax || !oax || !ext) return ir_op_oom(f, "expand_as");
  if (n != no) return ir_op_rank_error(f, "expand_as", tv, n, ot, no);
  for (int k = 0; k < n; k++)
    if (ID(oax[k])->iter_type != CF_ITER_BROADCAST) ext[k] = ID(oax[k])->extent;
  return ir_op_expand(f, "expand_as", tv, ax, n, ext);
}

cf_tv *cf_expand_to(cf_fusion *f, cf_tv *x, int rank, const int64_t *sizes, cf_id *const *ids) {
  if (!f || f->status) return NULL;
  Val *tv = ir_op_arg(f, "expand_to", 1, "x", x);
  if (!tv) return NULL;
  if (rank > 0 && !sizes && !ids)
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "expand_to: sizes and ids are both NULL"), NULL;
  int n;
  Val **ax = ir_op_axes(f, tv, &n);
  Val **ext = ARENA_ARRAY(f->arena, Val *, n);
  if (!ax || !ext) return ir_op_oom(f, "expand_to");
  if (rank != n)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "expand_to: %d axes given, expected %d", rank, n), NULL;
  for (int k = 0; k < n; k++) {
    Val *id = ids && ids[k] ? ir_idv(ids[k]) : NULL;
    if (id && (id->kind != VAL_ID || id->fusion != f))
      return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "expand_to: ids[%d] is not an axis of this fusion", k), NULL;
    int64_t size = sizes ? sizes[k] : -1;
    if (!id && size < -1)
      return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "expand_to: size %lld of axis %d is negative (-1 keeps "
                         "the axis)", (long long)size, k), NULL;
    ext[k] = id ? ID(id)->extent : size >= 0 ? ir_const_int(f, size) : NULL;
    if (!id && size >= 0 && !ext[k]) return ir_op_oom(f, "expand_to");
  }
  return ir_op_expand(f, "expand_to", tv, ax, n, ext);
}

/* A full tensor over the given axes (fresh ones, made by the caller), of value v in the
 * class of dtype (IrElem.d for floating dtypes, .i for integers and bool, .c for complex). */
static cf_tv *full_exact(cf_fusion *f, const char *what, int n, Val **ids, IrElem v, cf_dtype dtype) {
  if (!ir_dtype_valid(dtype) || ir_dtype_is_welford(dtype))
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "%s: invalid dtype %d", what, (int)dtype), NULL;
  Val *out = ir_tv_new(f, dtype, n, ids);
  Expr *e = out ? ir_expr_new(f, OP_FULL, 0, NULL, 1, &out) : NULL;
  if (!e) return ir_op_oom(f, what);
  bool fl = ir_dtype_is_inexact(dtype);
  e->attr.full.ivalue = fl ? 0 : dtype == CF_BOOL ? v.i != 0 : v.i;
  e->attr.full.value = fl ? v.d : (double)e->attr.full.ivalue;
  e->attr.full.imag = ir_dtype_is_complex(dtype) ? v.c.im : 0.0;
  return ir_op_result(e);
}

/* value converted to dtype as C converts a double (integers: truncated, saturated). */
static cf_tv *full_over(cf_fusion *f, const char *what, int n, Val **ids, double value, cf_dtype dtype) {
  if (isnan(value) && ir_dtype_valid(dtype) && !ir_dtype_is_inexact(dtype))
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "%s: NaN is not a value of dtype %s", what, cf_dtype_name(dtype)), NULL;
  IrElem v = ir_complex(value, 0.0);
  if (ir_dtype_valid(dtype) && !ir_dtype_is_inexact(dtype) && !ir_dtype_is_welford(dtype))
    v = ir_elem_convert(v, CF_DOUBLE, CF_INT64);
  return full_exact(f, what, n, ids, v, dtype);
}

cf_tv *cf_full(cf_fusion *f, int rank, const int64_t *sizes, double value, cf_dtype dtype) {
  if (!f || f->status) return NULL;
  if (rank < 0 || rank > CF_MAX_RANK)
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "full: rank %d is outside 0..%d", rank, CF_MAX_RANK), NULL;
  if (rank > 0 && !sizes) return ir_error(f, CF_ERR_INVALID_ARGUMENT, "full: argument 2 (sizes) is NULL"), NULL;
  Val **ids = ARENA_ARRAY(f->arena, Val *, rank);
  if (!ids) return ir_op_oom(f, "full");
  for (int k = 0; k < rank; k++) {
    if (sizes[k] < 0)
      return ir_error(f, CF_ERR_INVALID_ARGUMENT, "full: size %lld of axis %d is negative", (long long)sizes[k], k),
             NULL;
    /* size-1 axes broadcast, as in cf_tensor_concrete */
    ids[k] = ir_id_new(f, ir_const_int(f, sizes[k]), sizes[k] == 1 ? CF_ITER_BROADCAST : CF_ITER_ITERATION);
    if (!ids[k]) return ir_op_oom(f, "full");
  }
  return full_over(f, "full", rank, ids, value, dtype);
}

cf_tv *cf_full_like(cf_fusion *f, cf_tv *x, double value) {
  if (!f || f->status) return NULL;
  Val *tv = ir_op_arg(f, "full_like", 1, "x", x);
  if (!tv) return NULL;
  if (ir_dtype_is_welford(tv->dtype))
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "full_like: %s holds Welford states", TV(tv)->display_name),
           NULL;
  int n;
  Val **ax = ir_op_axes(f, tv, &n);
  Val **ids = ARENA_ARRAY(f->arena, Val *, n);
  if (!ax || !ids) return ir_op_oom(f, "full_like");
  for (int k = 0; k < n; k++)
    if (!(ids[k] = ir_op_axis_copy(f, ax[k], ID(ax[k])->iter_type))) return ir_op_oom(f, "full_like");
  return full_over(f, "full_like", n, ids, value, tv->dtype);
}

/* A 0-d constant marked as a scalar for promotion. */
static cf_tv *constant(cf_fusion *f, const char *what, IrElem v, cf_dtype dtype) {
  if (!f || f->status) return NULL;
  cf_tv *c = full_exact(f, what, 0, NULL, v, dtype);
  if (c) TV(ir_tv(c))->is_scalar = true;
  return c;
}

cf_tv *cf_const(cf_fusion *f, cf_dtype dtype, double value) {
  if (!f || f->status) return NULL;
  if (!ir_dtype_valid(dtype) || ir_dtype_is_welford(dtype))
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "const: invalid dtype %d", (int)dtype), NULL;
  if (!ir_dtype_is_inexact(dtype)) {
    if (isnan(value)) return ir_error(f, CF_ERR_INVALID_ARGUMENT, "const: NaN is not a value of dtype %s",
                                      cf_dtype_name(dtype)), NULL;
    return constant(f, "const", ir_elem_convert((IrElem){.d = value}, CF_DOUBLE, CF_INT64), dtype);
  }
  return constant(f, "const", ir_complex(value, 0.0), dtype);
}

cf_tv *cf_const_complex(cf_fusion *f, cf_dtype dtype, double re, double im) {
  if (!f || f->status) return NULL;
  if (!ir_dtype_is_complex(dtype))
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "const_complex: dtype %s is not a complex dtype (complex_float or "
                    "complex_double)", ir_dtype_valid(dtype) ? cf_dtype_name(dtype) : "invalid"), NULL;
  return constant(f, "const_complex", ir_complex(re, im), dtype);
}

cf_tv *cf_const_int(cf_fusion *f, cf_dtype dtype, int64_t value) {
  if (!f || f->status) return NULL;
  if (!ir_dtype_valid(dtype) || ir_dtype_is_welford(dtype))
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "const_int: invalid dtype %d", (int)dtype), NULL;
  if (ir_dtype_is_inexact(dtype)) return constant(f, "const_int", ir_complex((double)value, 0.0), dtype);
  IrElem v = ir_elem_convert((IrElem){.i = value}, CF_INT64, dtype);
  if (v.i != value && dtype != CF_BOOL)
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "const_int: %lld is not a value of dtype %s", (long long)value,
                    cf_dtype_name(dtype)), NULL;
  return constant(f, "const_int", v, dtype);
}

cf_tv *cf_full_int(cf_fusion *f, int rank, const int64_t *sizes, int64_t value, cf_dtype dtype) {
  cf_tv *t = cf_full(f, rank, sizes, 0, CF_INT64);
  if (!t) return NULL;
  Expr *e = ir_tv(t)->def;
  if (!ir_dtype_valid(dtype) || ir_dtype_is_welford(dtype) || ir_dtype_is_inexact(dtype))
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "full_int: dtype %s is not an integer dtype (use cf_full)",
                    ir_dtype_valid(dtype) ? cf_dtype_name(dtype) : "invalid"), NULL;
  IrElem v = ir_elem_convert((IrElem){.i = value}, CF_INT64, dtype);
  if (v.i != value && dtype != CF_BOOL)
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "full_int: %lld is not a value of dtype %s", (long long)value,
                    cf_dtype_name(dtype)), NULL;
  ir_tv(t)->dtype = dtype;
  e->attr.full.ivalue = v.i;
  e->attr.full.value = (double)v.i;
  return t;
}

cf_tv *cf_scalar_input(cf_fusion *f, cf_dtype dtype) {
  if (!f || f->status) return NULL;
  if (!ir_dtype_valid(dtype) || ir_dtype_is_welford(dtype))
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "scalar_input: invalid dtype %d", (int)dtype), NULL;
  cf_tv *s = cf_tensor_concrete(f, dtype, 0, NULL);
  if (s) TV(ir_tv(s))->is_scalar = true;
  return s && cf_fusion_add_input(f, s) == CF_OK ? s : NULL;
}

/* The element count of axes ax[0..n) as a scalar Val (folded when constant). */
static Val *numel_of(cf_fusion *f, Val **ax, int n) {
  Val *p = ir_const_int(f, 1);
  for (int k = 0; p && k < n; k++) p = ir_scalar_op(f, OP_MUL, p, ID(ax[k])->extent);
  return p;
}

static bool reshape_sizes(cf_fusion *f, Val *tv, Val *numel, int rank, const int64_t *sizes, Val **ext) {
  int infer = -1;
  int64_t known = 1, total;
  for (int k = 0; k < rank; k++) {
    if (sizes[k] == -1 && infer < 0) {
      infer = k;
      continue;
    }
    if (sizes[k] < 0)
      return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "reshape: size %lld of axis %d is %s", (long long)sizes[k], k,
                         sizes[k] == -1 ? "a second -1 (one size may be inferred)" : "negative"), false;
    if (__builtin_mul_overflow(known, sizes[k], &known))
      return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "reshape: the sizes overflow int64"), false;
    ext[k] = ir_const_int(f, sizes[k]);
  }
  bool is_const = ir_scalar_const_value(numel, &total);
  if (infer >= 0) {
    if (known == 0)
      return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "reshape: cannot infer the size of axis %d next to a size "
                         "0", infer), false;
    if (is_const && total % known)
      return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "reshape: %s has %lld elements, not a multiple of %lld",
                         TV(tv)->display_name, (long long)total, (long long)known), false;
    ext[infer] = ir_scalar_op(f, OP_DIV, numel, ir_const_int(f, known));
  } else if (is_const && total != known) {
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "reshape: %s has %lld elements but the sizes give %lld",
                       TV(tv)->display_name, (long long)total, (long long)known), false;
  }
  return true;
}

cf_tv *cf_reshape(cf_fusion *f, cf_tv *x, int rank, const int64_t *sizes) {
  if (!f || f->status) return NULL;
  Val *tv = ir_op_arg(f, "reshape", 1, "x", x);
  if (!tv) return NULL;
  if (rank < 0 || rank > CF_MAX_RANK)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "reshape: rank %d is outside 0..%d", rank, CF_MAX_RANK), NULL;
  if (rank > 0 && !sizes) return ir_error(f, CF_ERR_INVALID_ARGUMENT, "reshape: argument 3 (sizes) is NULL"), NULL;
  if (TV(tv)->has_strides)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "reshape: %s has arbitrary strides (cf_tensor_strided); a "
                       "reshape needs a contiguous tensor", TV(tv)->display_name), NULL;
  int n;
  Val **ax = ir_op_axes(f, tv, &n);
  Val **ext = ARENA_ARRAY(f->arena, Val *, rank), **ids = ARENA_ARRAY(f->arena, Val *, rank);
  Val *numel = ax ? numel_of(f, ax, n) : NULL;
  if (!ax || !ext || !ids || !numel) return ir_op_oom(f, "reshape");
  if (!reshape_sizes(f, tv, numel, rank, sizes, ext)) return NULL;
  for (int k = 0; k < rank; k++) {
    int64_t e;
    bool one = ir_scalar_const_value(ext[k], &e) && e == 1;
    if (!(ids[k] = ir_id_new(f, ext[k], one ? CF_ITER_BROADCAST : CF_ITER_ITERATION))) return ir_op_oom(f, "reshape");
  }
  return ir_op_result(ir_op_wire(f, "reshape", OP_RESHAPE, 1, &tv, ir_tv_new(f, tv->dtype, rank, ids)));
}
