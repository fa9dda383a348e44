/* ir/ops_embedding.c: embedding_fwd, the forward of torch.nn.functional.embedding as
 * nvFuser's frontend spells it (input, weight, padding_idx, max_norm, norm_type,
 * scale_grad_by_freq, sparse), composed of existing ops.
 *
 * The result is weight's rows at input's indices: index_select on axis 0 for a 1-D input;
 * an input of more axes is flattened (a reshape: a view of the fusion input), looked up,
 * and the rows reshaped to [*input, D] at the end. With max_norm, each looked-up row whose
 * norm_type-norm (2 when not given) exceeds max_norm is scaled by max_norm / (norm + 1e-7),
 * as torch's embedding_renorm_; the norm and the scaling are computed in the weight's
 * opmath dtype (float for 16- and 8-bit floats) and the row rounded once to its dtype, so
 * rows within max_norm come back bit-exact. Key decisions: cfuser never writes a fusion
 * input, so unlike torch (and nvFuser, which calls it) the weight is NOT renormalized in
 * place: only the forward result is; padding_idx, scale_grad_by_freq and sparse only
 * change the backward, so they are checked (0-d tensors: cf_scalar_input or a constant)
 * and otherwise have no effect. A constant norm_type picks its norm when the fusion is
 * built (1: sum |x|, 2: sqrt(sum x^2), inf: max |x|, -inf: min |x|, 0: the count of
 * non-zeros, else (sum |x|^p)^(1/p)); one given at run time selects among the last four
 * with where, all computed (p = 1 and 2 take the general form, within an ulp or two). */
#include <math.h>

#include "ir/dtype.h"
#include "ir/ops_util.h"

static const char *const WHAT = "embedding_fwd";

/* An optional scalar argument: NULL, or a 0-d tensor of f (integer when `integer`); false
 * after recording the error. */
static bool optional_scalar(cf_fusion *f, int pos, const char *name, cf_tv *s, bool integer, Val **out) {
  *out = NULL;
  if (!s) return true;
  Val *v = ir_op_arg(f, WHAT, pos, name, s);
  if (!v) return false;
  bool ok = TV(v)->nlogical == 0 && !ir_dtype_is_complex(v->dtype) && !ir_dtype_is_welford(v->dtype) &&
            (!integer || (!ir_dtype_is_float(v->dtype) && v->dtype != CF_BOOL));
  if (!ok)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, v, "%s: %s %s must be a 0-d %s tensor (cf_scalar_input or a "
                       "constant)", WHAT, name, TV(v)->display_name, integer ? "integer" : "real"), false;
  *out = v;
  return true;
}

/* The value of a constant 0-d tensor (cf_const: a full of rank 0), or false. */
static bool const_value(const Val *v, double *out) {
  if (!v || !v->def || v->def->op != OP_FULL) return false;
  *out = v->def->attr.full.value;
  return true;
}

/* t in dtype dt (t itself when it has it). */
static cf_tv *as_dtype(cf_fusion *f, cf_tv *t, cf_dtype dt) { return cf_tv_dtype(t) == dt ? t : cf_cast(f, t, dt); }

/* A reduction of x over its last axis, kept as a broadcast axis. */
static cf_tv *rowwise(cf_fusion *f, cf_reduce_op op, cf_tv *x) {
  int last = -1;
  return cf_reduce(f, op, x, 1, &last, true);
}

/* (sum |x|^p)^(1/p) over the last axis. */
static cf_tv *p_norm(cf_fusion *f, cf_tv *a, cf_tv *p) {
  return cf_pow(f, rowwise(f, CF_REDUCE_SUM, cf_pow(f, a, p)), cf_reciprocal(f, p));
}

/* The count of non-zero elements of the last axis, in a's dtype. */
static cf_tv *nonzeros(cf_fusion *f, cf_tv *a) {
  return rowwise(f, CF_REDUCE_SUM, cf_cast(f, cf_ne(f, a, cf_const(f, cf_tv_dtype(a), 0.0)), cf_tv_dtype(a)));
}

/* The norm_type-norm of each row of a = |rows| (opmath dtype). */
static cf_tv *row_norm(cf_fusion *f, cf_tv *a, Val *norm_type) {
  double p = 2.0;
  cf_dtype dt = cf_tv_dtype(a);
  if (!norm_type || const_value(norm_type, &p)) {
    if (p == 2.0) return cf_sqrt(f, rowwise(f, CF_REDUCE_SUM, cf_mul(f, a, a)));
    if (p == 1.0) return rowwise(f, CF_REDUCE_SUM, a);
    if (isinf(p)) return rowwise(f, p > 0 ? CF_REDUCE_MAX : CF_REDUCE_MIN, a);
    if (p == 0.0) return nonzeros(f, a);
    return p_norm(f, a, cf_const(f, dt, p));
  }
  cf_tv *pt = as_dtype(f, ir_tv_handle(norm_type), dt);
  cf_tv *r = p_norm(f, a, pt);
  r = cf_where(f, cf_eq(f, pt, cf_const(f, dt, 0.0)), nonzeros(f, a), r);
  r = cf_where(f, cf_eq(f, pt, cf_const(f, dt, -INFINITY)), rowwise(f, CF_REDUCE_MIN, a), r);
  return cf_where(f, cf_eq(f, pt, cf_const(f, dt, INFINITY)), rowwise(f, CF_REDUCE_MAX, a), r);
}

/* rows [N, D] with each row whose norm exceeds max_norm scaled by max_norm / (norm + 1e-7). */
static cf_tv *renorm(cf_fusion *f, cf_tv *rows, Val *weight, Val *max_norm, Val *norm_type) {
  if (!ir_dtype_is_float(weight->dtype))
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, weight, "%s: max_norm needs a floating-point weight; %s has dtype %s",
                       WHAT, TV(weight)->display_name, cf_dtype_name(weight->dtype)), NULL;
  cf_dtype op = ir_dtype_opmath(weight->dtype);
  cf_tv *x = as_dtype(f, rows, op), *mn = as_dtype(f, ir_tv_handle(max_norm), op);
  mn = cf_broadcast(f, mn, 2, (bool[]){true, true}); /* once, for the comparison and the scale */
  cf_tv *norm = row_norm(f, cf_abs(f, x), norm_type);
  cf_tv *scale = cf_div(f, mn, cf_add_scalar(f, norm, 1e-7)); /* 1e-7 in the expression: no 0-d tensor */
  cf_tv *r = cf_where(f, cf_gt(f, norm, mn), cf_mul(f, x, scale), x);
  return as_dtype(f, r, weight->dtype);
}

/* The looked-up rows [N, D] of a flattened input of n > 1 axes ia, as [*input, D]: a
 * reshape to constant sizes, or to the input's sizes at run time. */
static cf_tv *unflatten(cf_fusion *f, cf_tv *rows, Val *input, int n, Val *const *ia, Val *d_axis) {
  int64_t fixed[CF_MAX_RANK];
  bool all_const = true;
  for (int k = 0; k <= n; k++)
    all_const = all_const && ir_scalar_const_value(ID(k < n ? ia[k] : d_axis)->extent, &fixed[k]);
  if (all_const) return cf_reshape(f, rows, n + 1, fixed);
  cf_tv *sizes[CF_MAX_RANK];
  for (int k = 0; k <= n; k++) sizes[k] = k < n ? cf_tv_size(f, ir_tv_handle(input), k) : cf_tv_size(f, rows, 1);
  return cf_reshape_dynamic(f, rows, n + 1, sizes);
}

cf_tv *cf_embedding_fwd(cf_fusion *f, cf_tv *input, cf_tv *weight, cf_tv *padding_idx, cf_tv *max_norm,
                        cf_tv *norm_type, cf_tv *scale_grad_by_freq, cf_tv *sparse) {
  if (!f || f->status) return NULL;
  Val *in = ir_op_arg(f, WHAT, 1, "input", input), *w = in ? ir_op_arg(f, WHAT, 2, "weight", weight) : NULL;
  Val *pad, *mn, *nt, *sg, *sp;
  if (!w || !optional_scalar(f, 3, "padding_idx", padding_idx, true, &pad) ||
      !optional_scalar(f, 4, "max_norm", max_norm, false, &mn) ||
      !optional_scalar(f, 5, "norm_type", norm_type, false, &nt) ||
      !optional_scalar(f, 6, "scale_grad_by_freq", scale_grad_by_freq, false, &sg) ||
      !optional_scalar(f, 7, "sparse", sparse, false, &sp))
    return NULL;
  int n, m;
  Val **ia = ir_op_axes(f, in, &n), **wa = ir_op_axes(f, w, &m);
  if (!ia || !wa) return ir_op_oom(f, WHAT);
  if (n < 1 || n + 1 > CF_MAX_RANK)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, in, "%s: input %s has %d axes; it needs 1 to %d", WHAT,
                       TV(in)->display_name, n, CF_MAX_RANK - 1), NULL;
  if (in->dtype != CF_INT32 && in->dtype != CF_INT64)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, in, "%s: input %s has dtype %s; an index must be int32 or int64",
                       WHAT, TV(in)->display_name, cf_dtype_name(in->dtype)), NULL;
  if (m != 2)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, w, "%s: weight %s has %d axes; it must be 2-D [num_embeddings, "
                       "embedding_dim]", WHAT, TV(w)->display_name, m), NULL;
  cf_tv *flat = n == 1 ? input : cf_reshape(f, input, 1, (int64_t[]){-1});
  cf_tv *rows = cf_index_select(f, weight, 0, flat);
  if (rows && mn) rows = renorm(f, rows, w, mn, nt);
  return rows && n > 1 ? unflatten(f, rows, in, n, ia, wa[1]) : rows;
}
