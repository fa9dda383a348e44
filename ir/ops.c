/* ir/ops.c: the tensor ops of the public API (set, unary and binary math, where, cast,
 * broadcast, reductions, transpose/permute) and the type rules they follow.
 *
 * This is where a Fusion's math is built, before any scheduling: each op checks its
 * arguments, records the first error on the fusion (sticky; nothing happens after it),
 * makes a new TensorView in local memory with fresh IterDomains and links it to its
 * operands with one Expr. Key decisions, all nvFuser's: an op sees the logical domain of
 * its operands without their reduction axes; binary ops need equal ranks (broadcasting
 * is explicit, through cf_broadcast) and per axis equal extents or a broadcast side;
 * extents that are both constant are compared here, symbolic ones are assumed equal and
 * checked when sizes are bound (the evaluator and the executor do), as DESIGN.md section
 * 5 asks of symbolic conditions. Reductions keep the reduced axes as reduction axes;
 * permute makes a root domain in input order and a logical domain holding the same
 * IterDomains permuted. The public op tables of fusion.h are mapped onto IrOps by name,
 * so an op added to one table without the other is caught by a test, not silently. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/dtype.h"
#include "ir/ops_util.h"

/* ---- type rules --------------------------------------------------------------------------- */

/* The IrOp of a public op name of a given kind ("add", OPK_BINARY); OP_COUNT if none. */
static IrOp op_by_name(const char *name, OpKind kind) {
  for (int op = 0; op < OP_COUNT; op++)
    if (ir_op_kind((IrOp)op) == kind && strcmp(ir_op_name((IrOp)op), name) == 0) return (IrOp)op;
  return OP_COUNT;
}

/* ---- argument checks ------------------------------------------------------------------------ */

/* Argument `pos` (counted after f, named `name`) of `what`: non-NULL and a TensorView of f.
 * NULL after recording the error. */
static Val *arg_tv(cf_fusion *f, const char *what, int pos, const char *name, cf_tv *t) {
  if (f->status) return NULL;
  if (!t) {
    ir_error(f, CF_ERR_INVALID_ARGUMENT, "%s: argument %d (%s) is NULL", what, pos, name);
    return NULL;
  }
  return ir_check_tv(f, what, t) ? NULL : ir_tv(t);
}

/* The axes an op sees: tv's logical domain without its reduction axes. */
static Val **op_axes(cf_fusion *f, Val *tv, int *n) {
  TensorView *t = TV(tv);
  Val **ax = ARENA_ARRAY(f->arena, Val *, t->nlogical);
  *n = 0;
  for (int i = 0; ax && i < t->nlogical; i++)
    if (ID(t->logical[i])->iter_type != CF_ITER_REDUCTION) ax[(*n)++] = t->logical[i];
  return ax;
}

static Val *axis_copy(cf_fusion *f, Val *id, cf_iter_type type) { return ir_op_axis_copy(f, id, type); }

static void *oom(cf_fusion *f, const char *what) {
  ir_error(f, CF_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
  return NULL;
}

/* Ops that take a tensor of Welford states: the ones that only move elements, and the
 * Welford reduction and its readers. */
static bool takes_welford_states(IrOp op) {
  switch (op) {
  case OP_SET:
  case OP_BROADCAST:
  case OP_PERMUTE:
  case OP_WELFORD:
  case OP_ONLINE_SOFTMAX:
  case OP_WELFORD_AVG:
  case OP_WELFORD_M2:
  case OP_WELFORD_N: return true;
  default: return false;
  }
}

/* Links out to its inputs with a new Expr; NULL (after recording OOM) when out is NULL.
 * Every op is built here, so this is where tensors of Welford states are kept to the ops
 * that understand them. */
static Expr *wire(cf_fusion *f, const char *what, IrOp op, int nin, Val *const *in, Val *out) {
  for (int i = 0; i < nin; i++)
    if (ir_dtype_is_welford(in[i]->dtype) && !takes_welford_states(op))
      return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, in[i], "%s: %s holds Welford states (mean, M2, count); read "
                         "them with cf_welford_avg, cf_welford_m2 or cf_welford_n first", what,
                         TV(in[i])->display_name), NULL;
  Expr *e = out ? ir_expr_new(f, op, nin, in, 1, &out) : NULL;
  return e ? e : oom(f, what);
}

static cf_tv *result(Expr *e) { return ir_op_result(e); }

/* The helpers the other op files share (ir/ops_util.h). */
Val *ir_op_arg(cf_fusion *f, const char *what, int pos, const char *name, cf_tv *t) {
  return arg_tv(f, what, pos, name, t);
}
Val **ir_op_axes(cf_fusion *f, Val *tv, int *n) { return op_axes(f, tv, n); }
void *ir_op_oom(cf_fusion *f, const char *what) { return oom(f, what); }
Expr *ir_op_wire(cf_fusion *f, const char *what, IrOp op, int nin, Val *const *in, Val *out) {
  return wire(f, what, op, nin, in, out);
}

/* ---- broadcasting elementwise operands ---------------------------------------------------------- */

bool ir_op_extents_compatible(Val *x, Val *y) {
  int64_t a, b;
  if (x == y || !ir_scalar_const_value(x, &a) || !ir_scalar_const_value(y, &b)) return true;
  return a == b;
}

void *ir_op_rank_error(cf_fusion *f, const char *what, Val *x, int nx, Val *y, int ny) {
  char *sx = ir_tv_str(x), *sy = ir_tv_str(y);
  ir_error(f, CF_ERR_INVALID_ARGUMENT,
           "%s: rank mismatch: %s has %d axes but %s has %d; insert broadcast axes with cf_broadcast", what, sx, nx, sy,
           ny);
  free(sx);
  free(sy);
  return NULL;
}

static void *extent_error(cf_fusion *f, const char *what, int axis, Val *x, Val *idx, Val *y, Val *idy) {
  char *sx = ir_tv_str(x), *sy = ir_tv_str(y);
  ir_error(f, CF_ERR_INVALID_ARGUMENT, "%s: axis %d has extent %lld in %s but %lld in %s", what, axis,
           (long long)SC(ID(idx)->extent)->i, sx, (long long)SC(ID(idy)->extent)->i, sy);
  free(sx);
  free(sy);
  return NULL;
}

/* Checks axis k of operands whose axes are ax[j][k]. *extent receives the extent of the
 * output axis when some operand iterates it (a constant one preferred), NULL when every
 * operand is broadcast there. */
static bool check_axis(cf_fusion *f, const char *what, int n, Val *const *tvs, Val **const *ax, int k, Val **extent) {
  int rep = -1;
  *extent = NULL;
  for (int j = 0; j < n; j++) {
    Val *id = ax[j][k];
    if (ID(id)->iter_type == CF_ITER_BROADCAST) continue;
    if (rep < 0) {
      rep = j;
      *extent = ID(id)->extent;
      continue;
    }
    if (!ir_op_extents_compatible(ID(ax[rep][k])->extent, ID(id)->extent)) {
      extent_error(f, what, k, tvs[rep], ax[rep][k], tvs[j], id);
      return false;
    }
    if (!ir_scalar_is_const(*extent) && ir_scalar_is_const(ID(id)->extent)) *extent = ID(id)->extent;
  }
  return true;
}

/* Checks that n operands (of equal ranks after lift_ranks) broadcast together, then makes the output's axes: Iteration
 * where any operand iterates, else Broadcast. Nothing is made when the check fails. */
static Val **broadcast_axes(cf_fusion *f, const char *what, int n, Val *const *tvs, int *rank) {
  Val **ax[3];
  int nax[3];
  for (int j = 0; j < n; j++) {
    ax[j] = op_axes(f, tvs[j], &nax[j]);
    if (!ax[j]) return oom(f, what);
    if (nax[j] != nax[0]) return ir_op_rank_error(f, what, tvs[0], nax[0], tvs[j], nax[j]);
  }
  *rank = nax[0];
  Val **out = ARENA_ARRAY(f->arena, Val *, nax[0]);
  if (!out) return oom(f, what);
  for (int k = 0; k < nax[0]; k++)
    if (!check_axis(f, what, n, tvs, ax, k, &out[k])) return NULL;
  for (int k = 0; k < nax[0]; k++) {
    out[k] = out[k] ? ir_id_new(f, out[k], CF_ITER_ITERATION) : axis_copy(f, ax[0][k], CF_ITER_BROADCAST);
    if (!out[k]) return oom(f, what);
  }
  return out;
}

/* Operands of lower rank (0-d scalars included) are broadcast numpy-style, as nvFuser's
 * frontend does: leading broadcast axes are inserted (a broadcast op, printed like one)
 * until every operand has the highest rank; the axes then pair from the right. */
static void lift_ranks(cf_fusion *f, int n, Val **tvs) {
  int rank = 0, r[3];
  for (int j = 0; j < n; j++) {
    Val **ax = op_axes(f, tvs[j], &r[j]);
    if (!ax) return;
    if (r[j] > rank) rank = r[j];
  }
  bool lead[CF_MAX_RANK];
  for (int j = 0; j < n && !f->status; j++) {
    if (r[j] == rank) continue;
    for (int k = 0; k < rank; k++) lead[k] = k < rank - r[j];
    cf_tv *b = cf_broadcast(f, ir_tv_handle(tvs[j]), rank, lead);
    if (b) tvs[j] = ir_tv(b);
  }
}

/* The tier of an operand in type promotion: a scalar, a 0-d tensor or a tensor. */
static IrTier tier_of(Val *tv) {
  if (TV(tv)->is_scalar) return IR_TIER_SCALAR;
  for (int i = 0; i < TV(tv)->nlogical; i++)
    if (ID(TV(tv)->logical[i])->iter_type != CF_ITER_REDUCTION) return IR_TIER_DIM;
  return IR_TIER_ZERO_DIM;
}

/* Refuses an operand whose dtype op does not take (a float in bitwise_and, bool in neg). */
bool ir_op_check_accepts(cf_fusion *f, const char *what, IrOp op, int n, Val *const *tvs) {
  for (int j = 0; j < n; j++) {
    if (ir_dtype_is_complex(tvs[j]->dtype) && !ir_op_takes_complex(op)) { /* torch refuses these too */
      ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tvs[j], "%s: %s has dtype %s, but %s does not take complex tensors",
                  what, TV(tvs[j])->display_name, cf_dtype_name(tvs[j]->dtype), what);
      return false;
    }
    if (ir_dtype_is_packed(tvs[j]->dtype) && !ir_op_takes_packed(op)) { /* a storage type, as torch's */
      ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tvs[j], "%s: %s has dtype %s, a storage type; %s does not take it (cast "
                  "it to float first)", what, TV(tvs[j])->display_name, cf_dtype_name(tvs[j]->dtype), what);
      return false;
    }
    if (!ir_dtype_is_welford(tvs[j]->dtype) && !ir_op_accepts(op, tvs[j]->dtype)) {
      ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tvs[j], "%s: %s has dtype %s, but %s takes %s tensors; cast it first",
                  what, TV(tvs[j])->display_name, cf_dtype_name(tvs[j]->dtype), what, ir_op_accepts_str(op));
      return false;
    }
  }
  return true;
}

/* The dtype n operands compute in, by torch's promotion (ir_dtype_result_type); an
 * operand of a wider dtype than that (a double scalar in a float op, an int64 scalar in
 * an int8 one) is cast to its opmath type first, as nvFuser's frontend casts, so every
 * later reader (evaluator, code generators) sees operands no wider than the op. */
static cf_dtype promote_operands(cf_fusion *f, int n, Val **tvs) {
  cf_dtype dt[3];
  IrTier tier[3];
  for (int j = 0; j < n; j++) dt[j] = tvs[j]->dtype, tier[j] = tier_of(tvs[j]);
  cf_dtype ct = ir_dtype_result_type(n, dt, tier), om = ir_dtype_opmath(ct);
  for (int j = 0; j < n && !f->status; j++)
    if (ir_dtype_promote(dt[j], om) != om) {
      cf_tv *c = cf_cast(f, ir_tv_handle(tvs[j]), om);
      if (c) tvs[j] = ir_tv(c);
    }
  return ct;
}

/* The shared body of elementwise ops of n tensor operands (where's condition excluded:
 * `first` is the first operand promoted): checks, promotion, broadcasting, the result. */
static cf_tv *elementwise_op(cf_fusion *f, const char *what, IrOp op, int n, Val **tvs, int first) {
  if (!ir_op_check_accepts(f, what, op, n - first, tvs + first)) return NULL;
  cf_dtype ct = promote_operands(f, n - first, tvs + first);
  lift_ranks(f, n, tvs);
  int rank;
  Val **axes = f->status ? NULL : broadcast_axes(f, what, n, tvs, &rank);
  if (!axes) return NULL;
  return result(wire(f, what, op, n, tvs, ir_tv_new(f, ir_op_result_dtype(op, ct), rank, axes)));
}

/* ---- elementwise ops ----------------------------------------------------------------------------- */

cf_tv *cf_set(cf_fusion *f, cf_tv *in) {
  if (!f || f->status) return NULL;
  Val *tv = arg_tv(f, "set", 1, "in", in);
  if (!tv) return NULL;
  return result(wire(f, "set", OP_SET, 1, &tv, ir_tv_like(f, tv, tv->dtype)));
}

static cf_tv *unary_op(cf_fusion *f, const char *what, cf_tv *in) {
  if (!f || f->status) return NULL;
  IrOp op = op_by_name(what, OPK_UNARY);
  if (op == OP_COUNT) return IR_INTERNAL(f, op != OP_COUNT), NULL;
  Val *tv = arg_tv(f, what, 1, "in", in);
  if (!tv || !ir_op_check_accepts(f, what, op, 1, &tv)) return NULL;
  if (op == OP_BITWISE_NOT && tv->dtype == CF_BOOL) op = OP_LOGICAL_NOT; /* torch's ~ of bool */
  return result(wire(f, what, op, 1, &tv, ir_tv_like(f, tv, ir_unary_dtype(op, tv->dtype))));
}

#define CF_X(name)                                                                                                     \
  cf_tv *cf_##name(cf_fusion *f, cf_tv *in) { return unary_op(f, #name, in); }
CF_UNARY_OP_TABLE(CF_X)
#undef CF_X

static cf_tv *binary_op(cf_fusion *f, const char *what, cf_tv *a, cf_tv *b) {
  if (!f || f->status) return NULL;
  IrOp op = op_by_name(what, OPK_BINARY);
  if (op == OP_COUNT) return IR_INTERNAL(f, op != OP_COUNT), NULL;
  Val *tvs[2] = {arg_tv(f, what, 1, "a", a), NULL};
  if (tvs[0]) tvs[1] = arg_tv(f, what, 2, "b", b);
  if (!tvs[1]) return NULL;
  return elementwise_op(f, what, op, 2, tvs, 0);
}

#define CF_X(name)                                                                                                     \
  cf_tv *cf_##name(cf_fusion *f, cf_tv *a, cf_tv *b) { return binary_op(f, #name, a, b); }
CF_BINARY_OP_TABLE(CF_X)
#undef CF_X

static cf_tv *scalar_rhs_op(cf_fusion *f, const char *what, IrOp op, cf_tv *a, double b) {
  if (!f || f->status) return NULL;
  Val *tv = arg_tv(f, what, 1, "a", a);
  if (!tv) return NULL;
  Expr *e = wire(f, what, op, 1, &tv, ir_tv_like(f, tv, ir_scalar_rhs_dtype(tv->dtype, b)));
  if (e) {
    e->attr.scalar_rhs.value = b;
    e->attr.scalar_rhs.is_scalar_rhs = true;
  }
  return result(e);
}

cf_tv *cf_add_scalar(cf_fusion *f, cf_tv *a, double b) { return scalar_rhs_op(f, "add_scalar", OP_ADD, a, b); }
cf_tv *cf_mul_scalar(cf_fusion *f, cf_tv *a, double b) { return scalar_rhs_op(f, "mul_scalar", OP_MUL, a, b); }

cf_tv *cf_clamp(cf_fusion *f, cf_tv *x, double lo, double hi) {
  if (!f || f->status) return NULL;
  if (isnan(lo) || isnan(hi) || lo > hi)
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "clamp: the bounds [%g, %g] are not an interval (lo <= hi, neither NaN)",
                    lo, hi), NULL;
  return scalar_rhs_op(f, "clamp", OP_MIN, scalar_rhs_op(f, "clamp", OP_MAX, x, lo), hi);
}

cf_tv *cf_where(cf_fusion *f, cf_tv *cond, cf_tv *a, cf_tv *b) {
  if (!f || f->status) return NULL;
  static const char *const names[3] = {"cond", "a", "b"};
  cf_tv *args[3] = {cond, a, b};
  Val *tvs[3];
  for (int j = 0; j < 3; j++)
    if (!(tvs[j] = arg_tv(f, "where", j + 1, names[j], args[j]))) return NULL;
  if (tvs[0]->dtype != CF_BOOL) {
    char *s = ir_tv_str(tvs[0]);
    ir_error(f, CF_ERR_INVALID_ARGUMENT, "where: condition %s has dtype %s, expected bool", s,
             cf_dtype_name(tvs[0]->dtype));
    free(s);
    return NULL;
  }
  return elementwise_op(f, "where", OP_WHERE, 3, tvs, 1);
}

cf_tv *cf_cast(cf_fusion *f, cf_tv *in, cf_dtype to) {
  if (!f || f->status) return NULL;
  Val *tv = arg_tv(f, "cast", 1, "in", in);
  if (!tv) return NULL;
  if (!ir_dtype_valid(to) || ir_dtype_is_welford(to)) {
    ir_error(f, CF_ERR_INVALID_ARGUMENT, "cast: invalid dtype %d%s", (int)to,
             ir_dtype_valid(to) ? " (Welford states are made by cf_welford)" : "");
    return NULL;
  }
  Expr *e = wire(f, "cast", OP_CAST, 1, &tv, ir_tv_like(f, tv, to));
  if (e) e->attr.cast.to = to;
  return result(e);
}

/* ---- broadcast ------------------------------------------------------------------------------------ */

static bool check_broadcast(cf_fusion *f, Val *tv, int n, int out_rank, const bool *is_broadcast) {
  if (!is_broadcast) {
    ir_error(f, CF_ERR_INVALID_ARGUMENT, "broadcast: argument 3 (is_broadcast) is NULL");
    return false;
  }
  if (out_rank < 0 || out_rank > CF_MAX_RANK) {
    ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "broadcast: out_rank %d is outside 0..%d", out_rank, CF_MAX_RANK);
    return false;
  }
  int kept = 0;
  for (int i = 0; i < out_rank; i++) kept += !is_broadcast[i];
  if (kept == n) return true;
  ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv,
              "broadcast: is_broadcast keeps %d of %d output axes, but the input has %d", kept, out_rank, n);
  return false;
}

cf_tv *cf_broadcast(cf_fusion *f, cf_tv *in, int out_rank, const bool *is_broadcast) {
  if (!f || f->status) return NULL;
  Val *tv = arg_tv(f, "broadcast", 1, "in", in);
  if (!tv) return NULL;
  int n;
  Val **ax = op_axes(f, tv, &n);
  if (!ax) return oom(f, "broadcast");
  if (!check_broadcast(f, tv, n, out_rank, is_broadcast)) return NULL;
  Val **ids = ARENA_ARRAY(f->arena, Val *, out_rank);
  if (!ids) return oom(f, "broadcast");
  for (int i = 0, k = 0; i < out_rank; i++) {
    ids[i] = is_broadcast[i] ? ir_id_new(f, ir_const_int(f, 1), CF_ITER_BROADCAST)
                             : axis_copy(f, ax[k], ID(ax[k])->iter_type);
    if (!is_broadcast[i]) k++;
    if (!ids[i]) return oom(f, "broadcast");
  }
  Expr *e = wire(f, "broadcast", OP_BROADCAST, 1, &tv, ir_tv_new(f, tv->dtype, out_rank, ids));
  if (e) {
    e->attr.broadcast.is_broadcast = arena_memdup(f->arena, is_broadcast, sizeof(bool) * (size_t)out_rank);
    e->attr.broadcast.rank = out_rank;
  }
  return result(e);
}

/* ---- reductions ----------------------------------------------------------------------------------- */

/* Marks the axes to reduce in red[n]; false after recording an error. */
static bool reduction_axes(cf_fusion *f, const char *what, Val *tv, int n, int naxes, const int *axes, bool *red) {
  if (naxes <= 0) {
    ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "%s: naxes is %d; give at least one axis to reduce", what, naxes);
    return false;
  }
  if (!axes) {
    ir_error(f, CF_ERR_INVALID_ARGUMENT, "%s: argument 3 (axes) is NULL", what);
    return false;
  }
  for (int i = 0; i < naxes; i++) {
    int a = ir_wrap_axis(axes[i], n);
    if (a < 0 || red[a]) {
      ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "%s: axis %d %s", what, axes[i],
                  a < 0 ? "out of range" : "given twice");
      return false;
    }
    red[a] = true;
  }
  return true;
}

static cf_tv *reduce(cf_fusion *f, const char *what, IrOp op, Val *tv, int n, Val **ax, const bool *red) {
  Val **ids = ARENA_ARRAY(f->arena, Val *, n);
  if (!ids) return oom(f, what);
  for (int k = 0; k < n; k++)
    if (!(ids[k] = axis_copy(f, ax[k], red[k] ? CF_ITER_REDUCTION : ID(ax[k])->iter_type))) return oom(f, what);
  /* Sums and products of integers and bool widen to int64, as torch and nvFuser do. */
  cf_dtype dt = ir_reduction_widens_int(op) && !ir_dtype_is_inexact(tv->dtype) ? CF_INT64 : tv->dtype;
  return result(wire(f, what, op, 1, &tv, ir_tv_new(f, dt, n, ids)));
}

/* A reduction over broadcast axes (size 1) is a squeeze of them (nvFuser's trivial
 * reductions): they are squeezed first and the other reduced axes reduced after; with none
 * left, the squeeze is the result (cast where the reduction widens integers). */
static cf_tv *reduce_or_squeeze(cf_fusion *f, const char *what, IrOp op, Val *tv, int n, Val **ax, const bool *red) {
  int *sq = ARENA_ARRAY(f->arena, int, n), nsq = 0, m = 0, nred = 0;
  bool *rest = ARENA_ARRAY(f->arena, bool, n);
  if (!sq || !rest) return oom(f, what);
  for (int k = 0; k < n; k++) {
    if (red[k] && ID(ax[k])->iter_type == CF_ITER_BROADCAST) {
      sq[nsq++] = k;
      continue;
    }
    nred += red[k];
    rest[m++] = red[k];
  }
  if (!nsq) return reduce(f, what, op, tv, n, ax, red);
  cf_tv *s = cf_squeeze(f, ir_tv_handle(tv), nsq, sq);
  if (!s) return NULL;
  if (nred) {
    Val **sax = op_axes(f, ir_tv(s), &m);
    return sax ? reduce(f, what, op, ir_tv(s), m, sax, rest) : oom(f, what);
  }
  bool widen = ir_reduction_widens_int(op) && !ir_dtype_is_inexact(tv->dtype) && tv->dtype != CF_INT64;
  return widen ? cf_cast(f, s, CF_INT64) : s;
}

/* The number of elements each output element of a mean averages: the product of the
 * reduced extents as a scalar Val (folded to a constant when they all are; otherwise an
 * expression of the input's symbolic sizes, e.g. i0 * i2, evaluated at run time). */
static Val *mean_count(cf_fusion *f, int n, Val **ax, const bool *red) {
  Val *count = ir_const_int(f, 1);
  for (int k = 0; count && k < n; k++)
    if (red[k]) count = ir_scalar_op(f, OP_MUL, count, ID(ax[k])->extent);
  return count;
}

/* sum / count for a count known only at run time: `div( T1, ( i0 * i2 ) )`. */
static cf_tv *divide_by_count(cf_fusion *f, cf_tv *sum, Val *count) {
  if (!sum) return NULL;
  cf_tv *r = scalar_rhs_op(f, "mean", OP_DIV, sum, 1.5); /* 1.5: a floating rhs for the dtype rule */
  if (r) {
    ir_tv(r)->def->attr.scalar_rhs.value = 0;
    ir_tv(r)->def->attr.scalar_rhs.val = count;
  }
  return r;
}

/* keepdim: the reduced axes come back as broadcast axes of size 1. */
static cf_tv *keep_dims(cf_fusion *f, cf_tv *r, int n, const bool *red) { return r ? cf_broadcast(f, r, n, red) : NULL; }

static const struct {
  IrOp op;
  const char *name;
} reduce_ops[] = {
    [CF_REDUCE_SUM] = {OP_SUM, "sum"},          [CF_REDUCE_PROD] = {OP_PROD, "prod"},
    [CF_REDUCE_MAX] = {OP_MAX_REDUCE, "max_reduce"}, [CF_REDUCE_MIN] = {OP_MIN_REDUCE, "min_reduce"},
    [CF_REDUCE_MEAN] = {OP_SUM, "mean"},
};

cf_tv *cf_reduce(cf_fusion *f, cf_reduce_op rop, cf_tv *in, int naxes, const int *axes, bool keepdim) {
  if (!f || f->status) return NULL;
  if ((unsigned)rop >= sizeof reduce_ops / sizeof reduce_ops[0])
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "reduce: unknown reduction %d", (int)rop), NULL;
  const char *what = reduce_ops[rop].name;
  Val *tv = arg_tv(f, what, 1, "in", in);
  if (!tv) return NULL;
  int n;
  Val **ax = op_axes(f, tv, &n);
  bool *red = ARENA_ARRAY(f->arena, bool, n);
  if (!ax || !red) return oom(f, what);
  if (!reduction_axes(f, what, tv, n, naxes, axes, red)) return NULL;
  if (!ir_op_check_accepts(f, what, reduce_ops[rop].op, 1, &tv)) return NULL;
  Val *count = NULL;
  if (rop == CF_REDUCE_MEAN) {
    if (!ir_dtype_is_inexact(tv->dtype))
      return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "mean: %s has dtype %s; a mean needs a floating-point "
                         "input (cast it first)", TV(tv)->display_name, cf_dtype_name(tv->dtype)), NULL;
    if (!(count = mean_count(f, n, ax, red))) return oom(f, what);
  }
  cf_tv *r = reduce_or_squeeze(f, what, reduce_ops[rop].op, tv, n, ax, red);
  int64_t c;
  if (count && ir_scalar_const_value(count, &c)) r = cf_mul_scalar(f, r, 1.0 / (double)c);
  else if (count) r = divide_by_count(f, r, count);
  return keepdim ? keep_dims(f, r, n, red) : r;
}

cf_tv *cf_sum(cf_fusion *f, cf_tv *in, int naxes, const int *axes) {
  return cf_reduce(f, CF_REDUCE_SUM, in, naxes, axes, false);
}
cf_tv *cf_prod(cf_fusion *f, cf_tv *in, int naxes, const int *axes) {
  return cf_reduce(f, CF_REDUCE_PROD, in, naxes, axes, false);
}
cf_tv *cf_max_reduce(cf_fusion *f, cf_tv *in, int naxes, const int *axes) {
  return cf_reduce(f, CF_REDUCE_MAX, in, naxes, axes, false);
}
cf_tv *cf_min_reduce(cf_fusion *f, cf_tv *in, int naxes, const int *axes) {
  return cf_reduce(f, CF_REDUCE_MIN, in, naxes, axes, false);
}
cf_tv *cf_mean(cf_fusion *f, cf_tv *in, int naxes, const int *axes) {
  return cf_reduce(f, CF_REDUCE_MEAN, in, naxes, axes, false);
}

/* ---- Welford ---------------------------------------------------------------------------------------- */

cf_tv *cf_welford(cf_fusion *f, cf_tv *in, int naxes, const int *axes) {
  if (!f || f->status) return NULL;
  Val *tv = arg_tv(f, "welford", 1, "in", in);
  if (!tv) return NULL;
  cf_dtype st = ir_welford_state_of(tv->dtype);
  if (st == CF_DTYPE_COUNT)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "welford: %s has dtype %s; a mean and variance need a "
                       "floating-point input (cast it first)", TV(tv)->display_name, cf_dtype_name(tv->dtype)), NULL;
  int n;
  Val **ax = op_axes(f, tv, &n);
  bool *red = ARENA_ARRAY(f->arena, bool, n);
  Val **ids = ARENA_ARRAY(f->arena, Val *, n);
  if (!ax || !red || !ids) return oom(f, "welford");
  if (!reduction_axes(f, "welford", tv, n, naxes, axes, red)) return NULL;
  for (int k = 0; k < n; k++)
    if (!(ids[k] = axis_copy(f, ax[k], red[k] ? CF_ITER_REDUCTION : ID(ax[k])->iter_type))) return oom(f, "welford");
  return result(wire(f, "welford", OP_WELFORD, 1, &tv, ir_tv_new(f, st, n, ids)));
}

static cf_tv *welford_field(cf_fusion *f, const char *what, IrOp op, cf_tv *states) {
  if (!f || f->status) return NULL;
  Val *tv = arg_tv(f, what, 1, "states", states);
  if (!tv) return NULL;
  if (!ir_dtype_is_welford(tv->dtype))
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "%s: %s has dtype %s, not Welford states; make them with "
                       "cf_welford", what, TV(tv)->display_name, cf_dtype_name(tv->dtype)), NULL;
  return result(wire(f, what, op, 1, &tv, ir_tv_like(f, tv, ir_unary_dtype(op, tv->dtype))));
}

cf_tv *cf_welford_avg(cf_fusion *f, cf_tv *states) { return welford_field(f, "welford_avg", OP_WELFORD_AVG, states); }
cf_tv *cf_welford_m2(cf_fusion *f, cf_tv *states) { return welford_field(f, "welford_m2", OP_WELFORD_M2, states); }
cf_tv *cf_welford_n(cf_fusion *f, cf_tv *states) { return welford_field(f, "welford_n", OP_WELFORD_N, states); }

cf_status cf_var_mean(cf_fusion *f, cf_tv *in, int naxes, const int *axes, int64_t correction, bool keepdim,
                      cf_tv **var, cf_tv **mean) {
  if (!f) return CF_ERR_INVALID_ARGUMENT;
  if (f->status) return f->status;
  if (correction < 0)
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "var_mean: correction is %lld; it must be 0 or more",
                    (long long)correction);
  cf_tv *w = cf_welford(f, in, naxes, axes);
  if (!w) return f->status;
  bool red[CF_MAX_RANK] = {false};
  int n = TV(ir_tv(w))->nlogical;
  for (int k = 0; k < n && k < CF_MAX_RANK; k++) red[k] = ID(TV(ir_tv(w))->logical[k])->iter_type == CF_ITER_REDUCTION;
  cf_tv *avg = cf_welford_avg(f, w);
  cf_tv *count = cf_cast(f, cf_welford_n(f, w), ir_welford_scalar(ir_tv(w)->dtype));
  /* torch's divisor, max(0, count - correction): a correction past the count gives inf
   * (or nan for M2 0), never a negative variance; nothing gives nan, nan */
  cf_tv *dof = scalar_rhs_op(f, "var_mean", OP_MAX, cf_add_scalar(f, count, -(double)correction), 0.0);
  cf_tv *v = cf_div(f, cf_welford_m2(f, w), dof);
  if (keepdim) avg = keep_dims(f, avg, n, red), v = keep_dims(f, v, n, red);
  if (f->status) return f->status;
  if (var) *var = v;
  if (mean) *mean = avg;
  return CF_OK;
}

/* ---- transpose and permute ------------------------------------------------------------------------- */

/* perm[i] (already wrapped and checked) is the input axis at output position i. */
static cf_tv *permute_tv(cf_fusion *f, const char *what, Val *tv, Val **ax, int n, const int *perm) {
  Val **root = ARENA_ARRAY(f->arena, Val *, n), **logical = ARENA_ARRAY(f->arena, Val *, n);
  int *p = arena_memdup(f->arena, perm, sizeof(int) * (size_t)(n > 0 ? n : 1));
  if (!root || !logical || !p) return oom(f, what);
  for (int k = 0; k < n; k++)
    if (!(root[k] = axis_copy(f, ax[k], ID(ax[k])->iter_type))) return oom(f, what);
  for (int i = 0; i < n; i++) logical[i] = root[perm[i]];
  Val *out = ir_tv_new(f, tv->dtype, n, logical);
  if (out) {
    TV(out)->root = root;
    TV(out)->nroot = n;
  }
  Expr *e = wire(f, what, OP_PERMUTE, 1, &tv, out);
  if (e) {
    e->attr.permute.perm = p;
    e->attr.permute.rank = n;
  }
  return result(e);
}

cf_tv *cf_permute(cf_fusion *f, cf_tv *in, int rank, const int *perm) {
  if (!f || f->status) return NULL;
  Val *tv = arg_tv(f, "permute", 1, "in", in);
  if (!tv) return NULL;
  if (!perm) return ir_error(f, CF_ERR_INVALID_ARGUMENT, "permute: argument 3 (perm) is NULL"), NULL;
  int n;
  Val **ax = op_axes(f, tv, &n);
  int *p = ARENA_ARRAY(f->arena, int, n);
  bool *seen = ARENA_ARRAY(f->arena, bool, n);
  if (!ax || !p || !seen) return oom(f, "permute");
  if (rank != n)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "permute: perm has %d axes, expected %d", rank, n), NULL;
  for (int i = 0; i < n; i++) {
    p[i] = ir_wrap_axis(perm[i], n);
    if (p[i] < 0 || seen[p[i]])
      return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "permute: axis %d %s", perm[i],
                         p[i] < 0 ? "out of range" : "given twice"),
             NULL;
    seen[p[i]] = true;
  }
  return permute_tv(f, "permute", tv, ax, n, p);
}

cf_tv *cf_transpose(cf_fusion *f, cf_tv *in, int axis0, int axis1) {
  if (!f || f->status) return NULL;
  Val *tv = arg_tv(f, "transpose", 1, "in", in);
  if (!tv) return NULL;
  int n;
  Val **ax = op_axes(f, tv, &n);
  int *p = ARENA_ARRAY(f->arena, int, n);
  if (!ax || !p) return oom(f, "transpose");
  int a0 = ir_wrap_axis(axis0, n), a1 = ir_wrap_axis(axis1, n);
  if (a0 < 0 || a1 < 0)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "transpose: axis %d out of range", a0 < 0 ? axis0 : axis1), NULL;
  for (int i = 0; i < n; i++) p[i] = i;
  p[a0] = a1;
  p[a1] = a0;
  return permute_tv(f, "transpose", tv, ax, n, p);
}
