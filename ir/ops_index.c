/* ir/ops_index.c: the indexing and scan ops of the public API, as torch's and nvFuser's:
 * take_along_axis, gather, index_select, select, scatter and the scans cumsum, cumprod,
 * cummax and cummin.
 *
 * Op-table rows of kind OPK_INDEXED carry them (gather, take_along_axis, scatter and one
 * per scan, IR_SCAN_TABLE naming the reduction each runs: one builder for the four);
 * IR_INDEXED_TABLE says which operands each reads along its axis at computed
 * positions and which have no axis paired with the output's. index_select and select are
 * compositions, as nvFuser's frontend defines them: the 1-D (or 0-d) index is broadcast to
 * x's rank along every other axis and read by take_along_axis, and select squeezes the
 * resulting axis of extent 1. Key decisions: an operand read along the axis keeps no
 * partner there (ir_unpaired_axis; an_pairwise_map leaves it out), so the loop model and
 * the extent checks see unrelated axes, and lowering reads it from memory at the computed
 * position; a tensor given both as such an operand and in another role is copied first
 * (cf_set), so each operand of an Expr has one role. Constant extents are checked here;
 * symbolic ones where sizes are bound (the evaluator, lowering's run-time checks). */
#include <stdlib.h>

#include "ir/dtype.h"
#include "ir/ops_util.h"

/* ---- arguments -------------------------------------------------------------------------- */

static bool index_dtype(cf_fusion *f, const char *what, Val *index) {
  if (index->dtype == CF_INT32 || index->dtype == CF_INT64) return true;
  ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, index, "%s: %s has dtype %s; an index must be int32 or int64", what,
              TV(index)->display_name, cf_dtype_name(index->dtype));
  return false;
}

/* dim wrapped into [0, rank) of x, or -1 after recording the error. */
static int wrap_dim(cf_fusion *f, const char *what, Val *x, int rank, int dim) {
  int d = rank > 0 ? ir_wrap_axis(dim, rank) : -1;
  if (rank == 0)
    ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, x, "%s: %s is 0-d; it has no axis to index", what, TV(x)->display_name);
  else if (d < 0)
    ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, x, "%s: dim %d out of range for %d axes", what, dim, rank);
  return d;
}

static bool same_rank(cf_fusion *f, const char *what, Val *x, int nx, Val *y, int ny) {
  if (nx == ny) return true;
  ir_error(f, CF_ERR_INVALID_ARGUMENT, "%s: %s has %d axes but %s has %d; they must have the same rank", what,
           TV(y)->display_name, ny, TV(x)->display_name, nx);
  return false;
}

/* y's axis k against x's: equal constant extents (or a broadcast side when bcast_ok), or
 * y's at most x's when at_most; symbolic extents are checked when sizes are bound. */
static bool extent_fits(cf_fusion *f, const char *what, Val *x, Val *xa, Val *y, Val *ya, int k, bool at_most,
                        bool bcast_ok) {
  int64_t a, b;
  if (bcast_ok && (ID(xa)->iter_type == CF_ITER_BROADCAST || ID(ya)->iter_type == CF_ITER_BROADCAST)) return true;
  if (!ir_scalar_const_value(ID(xa)->extent, &a) || !ir_scalar_const_value(ID(ya)->extent, &b)) return true;
  if (at_most ? b <= a : b == a) return true;
  ir_error(f, CF_ERR_INVALID_ARGUMENT, "%s: axis %d has extent %lld in %s but %lld in %s; it must be %s", what, k,
           (long long)b, TV(y)->display_name, (long long)a, TV(x)->display_name, at_most ? "at most as large" : "equal");
  return false;
}

/* A copy of y when it is x (one tensor in two roles of one Expr). */
static Val *own_role(cf_fusion *f, Val *x, Val *y) { return y == x ? ir_tv(cf_set(f, ir_tv_handle(y))) : y; }

static Expr *wire(cf_fusion *f, const char *what, IrOp op, int nin, Val **in, cf_dtype dt, int n, Val **ids, int dim) {
  Expr *e = ir_op_wire(f, what, op, nin, in, ir_tv_new(f, dt, n, ids));
  if (e) e->attr.indexed.axis = dim;
  return e;
}

/* ---- gather, take_along_axis -------------------------------------------------------------- */

/* take_along_axis (exact: other axes paired, equal or broadcast) or gather (index's
 * extents at most x's, nothing of x paired). */
static cf_tv *lookup(cf_fusion *f, const char *what, bool exact, cf_tv *xh, cf_tv *ih, int dim) {
  if (!f || f->status) return NULL;
  Val *x = ir_op_arg(f, what, 1, "x", xh), *idx = x ? ir_op_arg(f, what, exact ? 2 : 3, "index", ih) : NULL;
  if (!idx || !index_dtype(f, what, idx)) return NULL;
  int n, m;
  Val **xa = ir_op_axes(f, x, &n), **ia = ir_op_axes(f, idx, &m);
  if (!xa || !ia) return ir_op_oom(f, what);
  int d = wrap_dim(f, what, x, n, dim);
  if (d < 0 || !same_rank(f, what, x, n, idx, m)) return NULL;
  Val **ids = ARENA_ARRAY(f->arena, Val *, n);
  if (!ids) return ir_op_oom(f, what);
  for (int k = 0; k < n; k++) {
    if (k != d && !extent_fits(f, what, x, xa[k], idx, ia[k], k, !exact, exact)) return NULL;
    Val *from = !exact || k == d || ID(xa[k])->iter_type == CF_ITER_BROADCAST ? ia[k] : xa[k];
    if (!(ids[k] = ir_op_axis_copy(f, from, ID(from)->iter_type))) return ir_op_oom(f, what);
  }
  Val *in[2] = {x, own_role(f, x, idx)};
  return ir_op_result(wire(f, what, exact ? OP_TAKE_ALONG_AXIS : OP_GATHER, 2, in, x->dtype, n, ids, d));
}

cf_tv *cf_take_along_axis(cf_fusion *f, cf_tv *x, cf_tv *index, int dim) {
  return lookup(f, "take_along_axis", true, x, index, dim);
}

cf_tv *cf_gather(cf_fusion *f, cf_tv *x, int dim, cf_tv *index) { return lookup(f, "gather", false, x, index, dim); }

/* index (1-D or 0-d) broadcast to x's rank, iterating axis d (1-D) or no axis (0-d). */
static cf_tv *index_along(cf_fusion *f, const char *what, Val *x, Val *idx, int *d, int dim, bool want_0d) {
  int n, m;
  if (!ir_op_axes(f, x, &n) || !ir_op_axes(f, idx, &m)) return ir_op_oom(f, what);
  if ((*d = wrap_dim(f, what, x, n, dim)) < 0 || !index_dtype(f, what, idx)) return NULL;
  if (want_0d ? m != 0 : m > 1)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, idx, "%s: %s has %d axes; the index must be %s", what,
                       TV(idx)->display_name, m, want_0d ? "a 0-d tensor (a scalar)" : "1-D or 0-d"), NULL;
  bool *bc = ARENA_ARRAY(f->arena, bool, n);
  if (!bc) return ir_op_oom(f, what);
  for (int k = 0; k < n; k++) bc[k] = m == 0 || k != *d;
  return cf_broadcast(f, ir_tv_handle(idx), n, bc);
}

cf_tv *cf_index_select(cf_fusion *f, cf_tv *x, int dim, cf_tv *index) {
  if (!f || f->status) return NULL;
  Val *xv = ir_op_arg(f, "index_select", 1, "x", x), *iv = xv ? ir_op_arg(f, "index_select", 3, "index", index) : NULL;
  int d;
  cf_tv *b = iv ? index_along(f, "index_select", xv, iv, &d, dim, false) : NULL;
  return b ? cf_take_along_axis(f, x, b, d) : NULL;
}

cf_tv *cf_select(cf_fusion *f, cf_tv *x, int dim, cf_tv *index) {
  if (!f || f->status) return NULL;
  Val *xv = ir_op_arg(f, "select", 1, "x", x), *iv = xv ? ir_op_arg(f, "select", 3, "index", index) : NULL;
  int d;
  cf_tv *b = iv ? index_along(f, "select", xv, iv, &d, dim, true) : NULL;
  cf_tv *t = b ? cf_take_along_axis(f, x, b, d) : NULL;
  return t ? cf_squeeze(f, t, 1, &d) : NULL;
}

/* ---- scatter ------------------------------------------------------------------------------- */

cf_tv *cf_scatter(cf_fusion *f, cf_tv *xh, int dim, cf_tv *ih, cf_tv *sh) {
  if (!f || f->status) return NULL;
  Val *x = ir_op_arg(f, "scatter", 1, "x", xh), *idx = x ? ir_op_arg(f, "scatter", 3, "index", ih) : NULL;
  Val *src = idx ? ir_op_arg(f, "scatter", 4, "src", sh) : NULL;
  if (!src || !index_dtype(f, "scatter", idx)) return NULL;
  int n, m, k;
  Val **xa = ir_op_axes(f, x, &n), **ia = ir_op_axes(f, idx, &m), **sa = ir_op_axes(f, src, &k);
  Val **ids = ARENA_ARRAY(f->arena, Val *, n);
  if (!xa || !ia || !sa || !ids) return ir_op_oom(f, "scatter");
  int d = wrap_dim(f, "scatter", x, n, dim);
  if (d < 0 || !same_rank(f, "scatter", x, n, idx, m) || !same_rank(f, "scatter", x, n, src, k)) return NULL;
  if (src->dtype != x->dtype)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, src, "scatter: %s has dtype %s but %s has %s; cast src first",
                       TV(src)->display_name, cf_dtype_name(src->dtype), TV(x)->display_name,
                       cf_dtype_name(x->dtype)), NULL;
  for (int a = 0; a < n; a++) {
    if (!extent_fits(f, "scatter", src, sa[a], idx, ia[a], a, true, false)) return NULL;
    if (a != d && !extent_fits(f, "scatter", x, xa[a], idx, ia[a], a, true, false)) return NULL;
    if (!(ids[a] = ir_op_axis_copy(f, xa[a], ID(xa[a])->iter_type))) return ir_op_oom(f, "scatter");
  }
  Val *in[3] = {x, own_role(f, x, idx), own_role(f, x, src)};
  return ir_op_result(wire(f, "scatter", OP_SCATTER, 3, in, x->dtype, n, ids, d));
}

/* ---- the scans ------------------------------------------------------------------------------ */

/* A scan of x along dim (IR_SCAN_TABLE): x's axes, the scan's dtype rule. */
static cf_tv *scan(cf_fusion *f, IrOp op, cf_tv *xh, int dim) {
  const char *what = ir_op_name(op);
  if (!f || f->status) return NULL;
  Val *x = ir_op_arg(f, what, 1, "x", xh);
  if (!x || !ir_op_check_accepts(f, what, op, 1, &x)) return NULL;
  int n;
  Val **xa = ir_op_axes(f, x, &n), **ids = ARENA_ARRAY(f->arena, Val *, n > 0 ? n : 1);
  if (!xa || !ids) return ir_op_oom(f, what);
  int d = wrap_dim(f, what, x, n, dim);
  if (d < 0) return NULL;
  for (int k = 0; k < n; k++)
    if (!(ids[k] = ir_op_axis_copy(f, xa[k], ID(xa[k])->iter_type))) return ir_op_oom(f, what);
  Val *in[1] = {x};
  return ir_op_result(wire(f, what, op, 1, in, ir_op_result_dtype(op, x->dtype), n, ids, d));
}

cf_tv *cf_cumsum(cf_fusion *f, cf_tv *x, int dim) { return scan(f, OP_CUMSUM, x, dim); }
cf_tv *cf_cumprod(cf_fusion *f, cf_tv *x, int dim) { return scan(f, OP_CUMPROD, x, dim); }
cf_tv *cf_cummax(cf_fusion *f, cf_tv *x, int dim) { return scan(f, OP_CUMMAX, x, dim); }
cf_tv *cf_cummin(cf_fusion *f, cf_tv *x, int dim) { return scan(f, OP_CUMMIN, x, dim); }
