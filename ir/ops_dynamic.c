/* ir/ops_dynamic.c: ops whose sizes are known only at run time (nvFuser's dynamic reshape,
 * expand, slice, full and iota): cf_tv_size, cf_reshape_dynamic, cf_expand_dynamic,
 * cf_slice_dynamic, cf_full_dynamic, cf_iota_dynamic.
 *
 * Each size or bound is a 0-d integer tensor of the fusion: a scalar input, a constant,
 * cf_tv_size (a tensor's size) or integer arithmetic on those. A dynamic op is the static
 * op's Expr with those tensors appended to its inputs (Expr.ndyn counts them) and its
 * output's new extents fresh symbols bound to nothing. Key decision: nothing after the
 * fusion sees it. Define and run and the evaluator concretize the fusion per call
 * (ir/concretize.c: the static op with constants, checked with the static op's errors),
 * so schedulers, lowering and code generation only ever meet static ops; a manual
 * schedule of a dynamic fusion (cf_executor_compile) is refused with a message. */
#include <stdint.h>

#include "ir/dtype.h"
#include "ir/ops_util.h"

/* Size operand k of `what`: a 0-d integer tensor of f. */
static Val *size_arg(cf_fusion *f, const char *what, const char *name, int k, cf_tv *t) {
  if (f->status) return NULL;
  if (!t) return ir_error(f, CF_ERR_INVALID_ARGUMENT, "%s: %s[%d] is NULL", what, name, k), NULL;
  if (ir_check_tv(f, what, t)) return NULL;
  Val *v = ir_tv(t);
  int n;
  Val **ax = ir_op_axes(f, v, &n);
  if (!ax) return ir_op_oom(f, what);
  if (n != 0 || ir_dtype_is_float(v->dtype) || v->dtype == CF_BOOL || ir_dtype_is_welford(v->dtype))
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, v, "%s: %s[%d] (%s) is not a 0-d integer tensor", what, name, k,
                       TV(v)->display_name), NULL;
  return v;
}

/* A 0-d int64 constant standing for an omitted bound. */
static Val *const_arg(cf_fusion *f, int64_t v) {
  cf_tv *t = cf_const_int(f, CF_INT64, v);
  return t ? ir_tv(t) : NULL;
}

/* Appends the size operands to e (e->ndyn of them) and records e as their use. */
static cf_tv *attach(cf_fusion *f, const char *what, Expr *e, int n, Val *const *sizes) {
  if (!e) return NULL;
  Val **in = ARENA_ARRAY(f->arena, Val *, e->nin + n);
  if (!in) return ir_op_oom(f, what);
  for (int i = 0; i < e->nin; i++) in[i] = e->in[i];
  for (int i = 0; i < n; i++) {
    in[e->nin + i] = sizes[i];
    if (!ptrvec_contains(&sizes[i]->uses, e)) ptrvec_push(f->arena, &sizes[i]->uses, e);
  }
  e->in = in;
  e->nin += n;
  e->ndyn = n;
  return ir_tv_handle(e->out[0]);
}

/* A fresh iteration axis whose extent is a symbol bound at concretization. */
static Val *dynamic_axis(cf_fusion *f) {
  Val *s = ir_scalar_symbol(f, NULL);
  return s ? ir_id_new(f, s, CF_ITER_ITERATION) : NULL;
}

cf_tv *cf_tv_size(cf_fusion *f, cf_tv *t, int axis) {
  if (!f || f->status) return NULL;
  Val *tv = ir_op_arg(f, "tv_size", 1, "t", t);
  if (!tv) return NULL;
  int n;
  Val **ax = ir_op_axes(f, tv, &n);
  if (!ax) return ir_op_oom(f, "tv_size");
  int a = ir_wrap_axis(axis, n);
  if (a < 0) return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "tv_size: axis %d out of range", axis), NULL;
  Val *ext = ID(ax[a])->extent;
  int64_t c;
  if (ir_scalar_const_value(ext, &c)) return cf_const_int(f, CF_INT64, c);
  cf_tv *out = cf_const_int(f, CF_INT64, 0);
  if (out) ir_tv(out)->def->attr.full.extent = ext;
  return out;
}

cf_tv *cf_reshape_dynamic(cf_fusion *f, cf_tv *x, int rank, cf_tv *const *sizes) {
  if (!f || f->status) return NULL;
  Val *tv = ir_op_arg(f, "reshape_dynamic", 1, "x", x);
  if (!tv) return NULL;
  if (rank < 0 || rank > CF_MAX_RANK)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "reshape_dynamic: rank %d is outside 0..%d", rank, CF_MAX_RANK),
           NULL;
  if (rank > 0 && !sizes) return ir_error(f, CF_ERR_INVALID_ARGUMENT, "reshape_dynamic: argument 4 (sizes) is NULL"), NULL;
  if (TV(tv)->has_strides)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "reshape_dynamic: %s has arbitrary strides "
                       "(cf_tensor_strided); a reshape needs a contiguous tensor", TV(tv)->display_name), NULL;
  Val *sz[CF_MAX_RANK], *ids[CF_MAX_RANK];
  for (int k = 0; k < rank; k++) {
    if (!(sz[k] = size_arg(f, "reshape_dynamic", "sizes", k, sizes[k]))) return NULL;
    if (!(ids[k] = dynamic_axis(f))) return ir_op_oom(f, "reshape_dynamic");
  }
  Expr *e = ir_op_wire(f, "reshape", OP_RESHAPE, 1, &tv, ir_tv_new(f, tv->dtype, rank, ids));
  return attach(f, "reshape_dynamic", e, rank, sz);
}

cf_tv *cf_expand_dynamic(cf_fusion *f, cf_tv *x, int rank, cf_tv *const *sizes) {
  if (!f || f->status) return NULL;
  Val *tv = ir_op_arg(f, "expand_dynamic", 1, "x", x);
  if (!tv) return NULL;
  int n;
  Val **ax = ir_op_axes(f, tv, &n);
  if (!ax) return ir_op_oom(f, "expand_dynamic");
  if (rank != n)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "expand_dynamic: sizes has %d axes, expected %d", rank, n), NULL;
  if (n > 0 && !sizes) return ir_error(f, CF_ERR_INVALID_ARGUMENT, "expand_dynamic: argument 4 (sizes) is NULL"), NULL;
  Val *sz[CF_MAX_RANK], *ext[CF_MAX_RANK];
  for (int k = 0; k < n; k++) {
    sz[k] = sizes[k] ? size_arg(f, "expand_dynamic", "sizes", k, sizes[k]) : const_arg(f, -1);
    if (!sz[k]) return NULL;
    /* a broadcast axis takes the run-time size; another keeps its extent (checked then) */
    ext[k] = sizes[k] && ID(ax[k])->iter_type == CF_ITER_BROADCAST ? ir_scalar_symbol(f, NULL) : NULL;
  }
  cf_tv *out = ir_op_expand(f, "expand", tv, ax, n, ext);
  return out ? attach(f, "expand_dynamic", ir_tv(out)->def, n, sz) : NULL;
}

cf_tv *cf_full_dynamic(cf_fusion *f, int rank, cf_tv *const *sizes, double value, cf_dtype dtype) {
  if (!f || f->status) return NULL;
  if (rank < 0 || rank > CF_MAX_RANK)
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "full_dynamic: rank %d is outside 0..%d", rank, CF_MAX_RANK), NULL;
  int64_t ones[CF_MAX_RANK];
  for (int k = 0; k < rank; k++) ones[k] = 1;
  cf_tv *b = cf_full(f, rank, ones, value, dtype); /* broadcast axes, expanded to the sizes */
  return b ? cf_expand_dynamic(f, b, rank, sizes) : NULL;
}

/* Bound k of one kind of cf_slice_dynamic: the given tensor, or the default constant. */
static Val *bound_arg(cf_fusion *f, const char *name, cf_tv *const *v, int k, int64_t dflt) {
  return v && v[k] ? size_arg(f, "slice_dynamic", name, k, v[k]) : const_arg(f, dflt);
}

cf_tv *cf_slice_dynamic(cf_fusion *f, cf_tv *x, int rank, cf_tv *const *starts, cf_tv *const *stops,
                        cf_tv *const *steps) {
  if (!f || f->status) return NULL;
  Val *tv = ir_op_arg(f, "slice_dynamic", 1, "x", x);
  if (!tv) return NULL;
  int n;
  Val **ax = ir_op_axes(f, tv, &n);
  if (!ax) return ir_op_oom(f, "slice_dynamic");
  if (rank != n)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "slice_dynamic: %d bounds given for %d axes", rank, n), NULL;
  Val *b[3 * CF_MAX_RANK], *ids[CF_MAX_RANK];
  Val **st = ARENA_ARRAY(f->arena, Val *, n > 0 ? n : 1);
  int64_t *sp = ARENA_ARRAY(f->arena, int64_t, n > 0 ? n : 1);
  bool *resized = ARENA_ARRAY(f->arena, bool, n > 0 ? n : 1);
  if (!st || !sp || !resized) return ir_op_oom(f, "slice_dynamic");
  for (int k = 0; k < n; k++) {
    if (!(b[k] = bound_arg(f, "starts", starts, k, 0)) || !(b[n + k] = bound_arg(f, "stops", stops, k, INT64_MAX)) ||
        !(b[2 * n + k] = bound_arg(f, "steps", steps, k, 1)))
      return NULL;
    if (!(ids[k] = dynamic_axis(f)) || !(st[k] = ir_const_int(f, 0))) return ir_op_oom(f, "slice_dynamic");
    sp[k] = 1, resized[k] = true; /* set per call by concretization */
  }
  Expr *e = ir_op_wire(f, "slice", OP_SLICE, 1, &tv, ir_tv_new(f, tv->dtype, n, ids));
  if (e) e->attr.slice.start = st, e->attr.slice.step = sp, e->attr.slice.resized = resized, e->attr.slice.rank = n;
  return attach(f, "slice_dynamic", e, 3 * n, b);
}

cf_tv *cf_iota_dynamic(cf_fusion *f, cf_tv *length, double start, double step, cf_dtype dtype) {
  if (!f || f->status) return NULL;
  Val *len = size_arg(f, "iota_dynamic", "length", 0, length);
  cf_tv *t = len ? cf_iota(f, 0, start, step, dtype) : NULL;
  Val *sym = t ? ir_scalar_symbol(f, NULL) : NULL;
  if (!sym) return t ? ir_op_oom(f, "iota_dynamic") : NULL;
  ID(TV(ir_tv(t))->logical[0])->extent = sym; /* the length given at run time */
  return attach(f, "iota_dynamic", ir_tv(t)->def, 1, &len);
}

bool ir_expr_is_dynamic(const Expr *e) { return e->ndyn > 0 || (e->op == OP_FULL && e->attr.full.extent); }

const Expr *ir_fusion_dynamic_expr(cf_fusion *f) {
  Arena *scratch = arena_create();
  int n = 0;
  Expr **exprs = scratch ? ir_fusion_tensor_exprs_in(scratch, f, &n) : NULL;
  const Expr *dyn = NULL;
  for (int i = 0; exprs && i < n && !dyn; i++)
    if (ir_expr_is_dynamic(exprs[i])) dyn = exprs[i];
  arena_destroy(scratch);
  return dyn;
}

bool ir_fusion_is_dynamic(cf_fusion *f) { return ir_fusion_dynamic_expr(f) != NULL; }
