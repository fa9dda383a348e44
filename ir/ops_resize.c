/* ir/ops_resize.c: the resize ops of the public API, as nvFuser's: slice, pad and cat.
 *
 * A resize op's output axis reads its operand at another position: slice at start + i *
 * step, pad at i - left (the pad value outside the operand), cat at i in its first operand
 * and at i - (the first's extent) in its second. Key decisions: those axes are not paired
 * with the operand's (ir_resize_axis; an_pairwise_map leaves them out), so the loop model,
 * inlining and the extent checks treat them as unrelated axes, and lowering indexes the
 * operand from the output's index (lower/index.c), which needs the operand in memory the
 * kernel reads whole: a fusion input or a segment input (define and run cuts there). cat
 * of more than two tensors is a chain of two-operand cats; its operands are promoted to
 * one dtype (torch.cat's rule) and cast first. A slice's bounds are constants with
 * Python's rules (negative counts from the end, out of range clamps, never an error):
 * normalized when built on a constant extent, and on a symbolic one kept as scalar
 * expressions of the extent (the start and the output extent: max and min of it, see
 * symbolic_bounds), so the evaluator, the host backend and CUDA normalize them alike when
 * the sizes are known, one kernel for every size. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/dtype.h"
#include "ir/ops_util.h"

/* ---- slice ---------------------------------------------------------------------------------- */

/* Python's bounds on an axis of constant extent n: negative counts from the end, clamped
 * (ir/ops_util.h; concretization applies it to run-time bounds). */
int64_t ir_py_bound(int64_t v, int64_t n) {
  if (v < 0) v += n;
  return v < 0 ? 0 : v > n ? n : v;
}

/* A slice's length on a symbolic extent n is the minimum of terms coef * n + c, coef in
 * {-1, 0, 1}; only the smallest c of each coef matters (has and c indexed by coef + 1). */
typedef struct SliceTerms {
  bool has[3];
  int64_t c[3];
} SliceTerms;

static void slice_term(SliceTerms *t, int coef, int64_t c) {
  if (!t->has[coef + 1] || c < t->c[coef + 1]) t->has[coef + 1] = true, t->c[coef + 1] = c;
}

/* a - b on the bounds' constants, saturated (a bound may be INT64_MIN or INT64_MAX). */
static int64_t sat_sub(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_sub_overflow(a, b, &r) ? (b < 0 ? INT64_MAX : INT64_MIN) : r;
}

/* n + c, printed i0 - 4 rather than i0 + -4 (n itself for c = 0). */
static Val *plus_const(cf_fusion *f, Val *n, int64_t c) {
  return c < 0 && c != INT64_MIN ? ir_scalar_op(f, OP_SUB, n, ir_const_int(f, -c))
                                 : ir_scalar_op(f, OP_ADD, n, ir_const_int(f, c));
}

/* Python's (torch's, nvFuser's) bounds on a symbolic extent n, normalized when the sizes
 * are known, as scalar expressions every backend evaluates: start' = max(0, A) and stop' =
 * max(start', min(n, B)), where A is start (start + n when negative) and B is stop (stop +
 * n when negative, n for INT64_MAX); nothing is refused, out-of-range bounds clamp. The
 * length stop' - start' = max(0, min(n, B) - max(0, A)) = max(0, min(n, n - A, B, B - A)),
 * so its constant terms fold: [-4:-1] is max(0, min(i0 - 1, 3)), [0:4] is min(i0, 4), [:]
 * is i0 itself (the axis whole), and a constant term <= 0 makes the axis empty at build
 * time. It gives ir_py_bound's lengths; a start past the end stays unclamped (its axis is
 * empty, as nvFuser leaves it). Exact for every extent up to INT64_MAX / 2 (beyond it, the
 * saturated constant of B - A when start < 0 <= stop could be the smallest term). */
static void symbolic_bounds(cf_fusion *f, Val *n, int64_t start, int64_t stop, Val **st, Val **len) {
  int ca = start < 0, cb = stop < 0 || stop == INT64_MAX; /* the coefficient of n in A and in B */
  int64_t kb = stop == INT64_MAX ? 0 : stop;
  SliceTerms t = {{false}, {0}};
  slice_term(&t, 1, 0);                          /* n */
  slice_term(&t, 1 - ca, sat_sub(0, start));     /* n - A */
  slice_term(&t, cb, kb);                        /* B */
  slice_term(&t, cb - ca, sat_sub(kb, start));   /* B - A */
  *st = start < 0 ? ir_scalar_op(f, OP_MAX, ir_const_int(f, 0), plus_const(f, n, start)) : ir_const_int(f, start);
  if (t.has[1] && t.c[1] <= 0) {
    *len = ir_const_int(f, 0);
    return;
  }
  Val *m = plus_const(f, n, t.c[2]); /* n's term: n, n - a or n + b (c <= 0) */
  if (t.has[1]) m = ir_scalar_op(f, OP_MIN, m, ir_const_int(f, t.c[1]));
  if (t.has[0]) m = ir_scalar_op(f, OP_MIN, m, ir_scalar_op(f, OP_SUB, ir_const_int(f, t.c[0]), n));
  *len = t.c[2] == 0 && !t.has[0] ? m : ir_scalar_op(f, OP_MAX, ir_const_int(f, 0), m); /* >= 0 already */
}

/* Axis k's start (a scalar) and step and its output extent; false after recording an error. */
static bool slice_axis(cf_fusion *f, Val *tv, int k, Val *ax, int64_t start, int64_t stop, int64_t step, Val **st,
                       Val **extent) {
  int64_t n;
  Val *len;
  if (step < 1)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "slice: step %lld of axis %d is not positive", (long long)step, k),
           false;
  if (ir_scalar_const_value(ID(ax)->extent, &n)) {
    int64_t a = ir_py_bound(start, n), b = ir_py_bound(stop, n);
    *st = ir_const_int(f, a);
    *extent = ir_const_int(f, b > a ? (b - a - 1) / step + 1 : 0); /* no overflow for a huge step */
  } else {
    symbolic_bounds(f, ID(ax)->extent, start, stop, st, &len);
    *extent = ir_scalar_op(f, OP_CEILDIV, len, ir_const_int(f, step));
  }
  return *st && *extent ? true : (ir_op_oom(f, "slice"), false);
}

cf_tv *cf_slice(cf_fusion *f, cf_tv *x, int rank, const int64_t *starts, const int64_t *stops, const int64_t *steps) {
  if (!f || f->status) return NULL;
  Val *tv = ir_op_arg(f, "slice", 1, "x", x);
  if (!tv) return NULL;
  int n;
  Val **ax = ir_op_axes(f, tv, &n);
  if (!ax) return ir_op_oom(f, "slice");
  if (rank != n)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "slice: %d bounds given for %d axes", rank, n), NULL;
  if (n > 0 && (!starts || !stops))
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "slice: argument %d (%s) is NULL", starts ? 4 : 3,
                    starts ? "stops" : "starts"), NULL;
  Val **st = ARENA_ARRAY(f->arena, Val *, n);
  int64_t *sp = ARENA_ARRAY(f->arena, int64_t, n);
  bool *resized = ARENA_ARRAY(f->arena, bool, n);
  Val **ids = ARENA_ARRAY(f->arena, Val *, n);
  if (!st || !sp || !resized || !ids) return ir_op_oom(f, "slice");
  for (int k = 0; k < n; k++) {
    Val *ext;
    sp[k] = steps ? steps[k] : 1;
    if (!slice_axis(f, tv, k, ax[k], starts[k], stops[k], sp[k], &st[k], &ext)) return NULL;
    int64_t c;
    resized[k] = !ir_scalar_const_value(st[k], &c) || c != 0 || sp[k] != 1 || ext != ID(ax[k])->extent;
    bool whole_one = !resized[k] || (ir_scalar_const_value(ext, &c) && c == 1);
    cf_iter_type type = ID(ax[k])->iter_type == CF_ITER_BROADCAST && whole_one ? CF_ITER_BROADCAST : CF_ITER_ITERATION;
    if (!(ids[k] = resized[k] ? ir_id_new(f, ext, type) : ir_op_axis_copy(f, ax[k], ID(ax[k])->iter_type)))
      return ir_op_oom(f, "slice");
  }
  Expr *e = ir_op_wire(f, "slice", OP_SLICE, 1, &tv, ir_tv_new(f, tv->dtype, n, ids));
  if (e) e->attr.slice.start = st, e->attr.slice.step = sp, e->attr.slice.resized = resized, e->attr.slice.rank = n;
  return ir_op_result(e);
}

/* ---- pad ------------------------------------------------------------------------------------ */

cf_tv *cf_pad(cf_fusion *f, cf_tv *x, int npad, const int64_t *widths, double value) {
  if (!f || f->status) return NULL;
  Val *tv = ir_op_arg(f, "pad", 1, "x", x);
  if (!tv) return NULL;
  int n;
  Val **ax = ir_op_axes(f, tv, &n);
  if (!ax) return ir_op_oom(f, "pad");
  if (npad < 0 || npad % 2 || npad / 2 > n || (npad && !widths))
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "pad: %d widths for %d axes; give a (left, right) pair per axis, "
                       "the last axis first (torch.nn.functional.pad)", npad, n), NULL;
  bool fl = ir_dtype_is_inexact(tv->dtype);
  if (!fl && (isnan(value) || value != trunc(value)))
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "pad: %g is not a value of dtype %s", value,
                       cf_dtype_name(tv->dtype)), NULL;
  int64_t *left = ARENA_ARRAY(f->arena, int64_t, n), *right = ARENA_ARRAY(f->arena, int64_t, n);
  Val **ids = ARENA_ARRAY(f->arena, Val *, n);
  if (!left || !right || !ids) return ir_op_oom(f, "pad");
  for (int p = 0; p < npad / 2; p++) {
    int k = n - 1 - p;
    left[k] = widths[2 * p], right[k] = widths[2 * p + 1];
    if (left[k] < 0 || right[k] < 0)
      return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "pad: widths (%lld, %lld) of axis %d are negative (slice to "
                         "crop)", (long long)left[k], (long long)right[k], k), NULL;
  }
  for (int k = 0; k < n; k++) {
    bool resized = left[k] || right[k];
    Val *ext = ir_scalar_op(f, OP_ADD, ID(ax[k])->extent, ir_const_int(f, left[k] + right[k]));
    if (!(ids[k] = resized ? ir_id_new(f, ext, CF_ITER_ITERATION) : ir_op_axis_copy(f, ax[k], ID(ax[k])->iter_type)))
      return ir_op_oom(f, "pad");
  }
  Expr *e = ir_op_wire(f, "pad", OP_PAD, 1, &tv, ir_tv_new(f, tv->dtype, n, ids));
  if (e) {
    e->attr.pad.left = left, e->attr.pad.right = right, e->attr.pad.rank = n;
    e->attr.pad.value = value;
    e->attr.pad.ivalue = fl ? 0 : ir_elem_convert((IrElem){.d = value}, CF_DOUBLE, CF_INT64).i;
  }
  return ir_op_result(e);
}

/* ---- cat ------------------------------------------------------------------------------------- */

/* a and b side by side along axis `dim` (the other axes' extents must agree). */
static cf_tv *cat2(cf_fusion *f, Val *a, Val *b, int dim) {
  int n, m;
  Val **ax = ir_op_axes(f, a, &n), **bx = ir_op_axes(f, b, &m);
  Val **ids = ARENA_ARRAY(f->arena, Val *, n);
  if (!ax || !bx || !ids) return ir_op_oom(f, "cat");
  if (n != m) return ir_op_rank_error(f, "cat", a, n, b, m);
  for (int k = 0; k < n; k++) {
    if (k != dim && !ir_op_extents_compatible(ID(ax[k])->extent, ID(bx[k])->extent)) {
      char *sa = ir_tv_str(a), *sb = ir_tv_str(b);
      ir_error(f, CF_ERR_INVALID_ARGUMENT, "cat: axis %d has extent %lld in %s but %lld in %s", k,
               (long long)SC(ID(ax[k])->extent)->i, sa, (long long)SC(ID(bx[k])->extent)->i, sb);
      free(sa), free(sb);
      return NULL;
    }
    Val *ext = k == dim ? ir_scalar_op(f, OP_ADD, ID(ax[k])->extent, ID(bx[k])->extent) : ID(ax[k])->extent;
    bool bcast = k != dim && ID(ax[k])->iter_type == CF_ITER_BROADCAST && ID(bx[k])->iter_type == CF_ITER_BROADCAST;
    if (!(ids[k] = ir_id_new(f, ext, bcast ? CF_ITER_BROADCAST : CF_ITER_ITERATION))) return ir_op_oom(f, "cat");
  }
  Val *in[2] = {a, b};
  Expr *e = ir_op_wire(f, "cat", OP_CAT, 2, in, ir_tv_new(f, a->dtype, n, ids));
  if (e) e->attr.cat.axis = dim;
  return ir_op_result(e);
}

cf_tv *cf_cat(cf_fusion *f, int n, cf_tv *const *xs, int dim) {
  if (!f || f->status) return NULL;
  if (n < 1 || !xs) return ir_error(f, CF_ERR_INVALID_ARGUMENT, "cat: %d tensors given; give one or more", n), NULL;
  Val **tvs = ARENA_ARRAY(f->arena, Val *, n);
  cf_dtype *dt = ARENA_ARRAY(f->arena, cf_dtype, n);
  IrTier *tier = ARENA_ARRAY(f->arena, IrTier, n);
  if (!tvs || !dt || !tier) return ir_op_oom(f, "cat");
  for (int i = 0; i < n; i++) {
    if (!(tvs[i] = ir_op_arg(f, "cat", 2, "xs", xs[i]))) return NULL;
    dt[i] = tvs[i]->dtype, tier[i] = IR_TIER_DIM;
  }
  int rank;
  if (!ir_op_axes(f, tvs[0], &rank)) return ir_op_oom(f, "cat");
  int d = ir_wrap_axis(dim, rank);
  if (d < 0) return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tvs[0], "cat: axis %d out of range", dim), NULL;
  cf_dtype to = ir_dtype_result_type(n, dt, tier);
  if (n == 1) return cf_set(f, dt[0] == to ? xs[0] : cf_cast(f, xs[0], to));
  cf_tv *r = NULL;
  for (int i = 0; i < n && !f->status; i++) {
    cf_tv *t = dt[i] == to ? xs[i] : cf_cast(f, xs[i], to);
    r = i == 0 ? t : cat2(f, ir_tv(r), ir_tv(t), d);
  }
  return f->status ? NULL : r;
}
