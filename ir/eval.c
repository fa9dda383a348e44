/* ir/eval.c: the reference evaluator (cf_fusion_evaluate) and the element math of every
 * tensor op.
 *
 * The oracle of every numerical test: it computes a Fusion's outputs on the host from
 * DLPack inputs, ignoring every schedule, and a kernel is right when it agrees. It binds
 * the symbolic sizes from the inputs, checks them (count, dtype, rank, concrete extents,
 * and at each elementwise op the symbolic extents assumed equal when the op was built),
 * then walks the tensor expressions in topological order, materializing every
 * TensorView as a dense row-major host tensor of its own dtype. Key decision: each
 * element is widened (double for floating types, int64 for integers and bool), operands
 * are converted to the op's compute type and the result is rounded once into the
 * output's dtype through ir_elem_store, so the evaluator rounds exactly where a kernel
 * holding each tensor in its dtype does. Reductions accumulate in double or int64 and
 * round at the end. One N-dimensional iterator with per-operand strides (0 for
 * broadcast axes, permuted for permute, gapped for broadcast) serves every op. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/dtype.h"

/* ---- the evaluator's state ---------------------------------------------------------------- */

/* A TensorView's values: an input's DLTensor or an owned dense one, with its strides. */
typedef struct EvalBuf {
  const DLTensor *t;
  DLManagedTensor *owned;
  int64_t *strides;
} EvalBuf;

typedef struct Eval {
  cf_fusion *f;
  EvalBuf *bufs; /* by Val id */
  ScalarBindings bind;
} Eval;

enum { MAX_OPERANDS = 4 }; /* the output and up to three inputs */

static cf_status eval_error(Eval *ev, cf_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static cf_status eval_error(Eval *ev, cf_status s, const char *fmt, ...) {
  StrBuf b = {0};
  va_list ap;
  va_start(ap, fmt);
  sb_puts(&b, "evaluate: ");
  sb_vprintf(&b, fmt, ap);
  va_end(ap);
  cf_status r = ir_error(ev->f, s, "%s", b.data ? b.data : "");
  sb_free(&b);
  return r;
}

static cf_status set_buf(Eval *ev, Val *tv, const DLTensor *t, DLManagedTensor *owned) {
  EvalBuf *b = &ev->bufs[tv->id];
  b->t = t;
  b->owned = owned;
  b->strides = malloc(sizeof(int64_t) * (size_t)(t->ndim > 0 ? t->ndim : 1));
  if (!b->strides) return eval_error(ev, CF_ERR_OUT_OF_MEMORY, "out of memory");
  ir_dl_strides(t, b->strides);
  return CF_OK;
}

/* ---- inputs --------------------------------------------------------------------------------- */

static int input_index(cf_fusion *f, const Val *tv) {
  for (int i = 0; i < f->inputs.len; i++)
    if (f->inputs.items[i] == tv) return i;
  return -1;
}

/* Binds every symbol taken from an input's size or stride. */
static cf_status bind_symbols(Eval *ev, const DLTensor *const *inputs) {
  cf_fusion *f = ev->f;
  ev->bind.ids = malloc(sizeof(int) * (size_t)(f->vals.len + 1));
  ev->bind.values = malloc(sizeof(int64_t) * (size_t)(f->vals.len + 1));
  if (!ev->bind.ids || !ev->bind.values) return eval_error(ev, CF_ERR_OUT_OF_MEMORY, "out of memory");
  for (int v = 0; v < f->vals.len; v++) {
    Val *s = f->vals.items[v];
    if (s->kind != VAL_SCALAR || s->def || !SC(s)->input_tv) continue;
    int in = input_index(f, SC(s)->input_tv);
    int axis = SC(s)->input_axis;
    if (in < 0 || axis < 0 || axis >= inputs[in]->ndim) continue;
    int64_t st[inputs[in]->ndim];
    ir_dl_strides(inputs[in], st);
    ev->bind.ids[ev->bind.n] = s->id;
    ev->bind.values[ev->bind.n++] = SC(s)->stride_of ? st[axis] : inputs[in]->shape[axis];
  }
  return CF_OK;
}

/* The value of an extent, or an error naming the unbound symbol. */
static cf_status eval_extent(Eval *ev, Val *tv, int axis, int64_t *out) {
  const char *unbound = NULL;
  if (ir_scalar_eval(ID(TV(tv)->logical[axis])->extent, &ev->bind, out, &unbound)) return CF_OK;
  return eval_error(ev, CF_ERR_INVALID_ARGUMENT, "cannot size %s axis %d: %s is unbound (is every input added?)",
                    TV(tv)->display_name, axis, unbound ? unbound : "?");
}

static cf_status check_input_type(Eval *ev, int i, Val *tv, const DLTensor *t) {
  char have[64];
  const char *name = TV(tv)->display_name;
  cf_dtype dt;
  if (!t) return eval_error(ev, CF_ERR_INVALID_ARGUMENT, "input %d (%s) is NULL", i, name);
  if (!ir_dl_is_host(t)) return eval_error(ev, CF_ERR_INVALID_ARGUMENT, "input %d (%s) is not in host memory", i, name);
  if (!ir_dtype_from_dl(t->dtype, &dt) || dt != tv->dtype) {
    ir_dl_type_str(t->dtype, have, sizeof have);
    return eval_error(ev, CF_ERR_INVALID_ARGUMENT, "input %d (%s) has dtype %s, expected %s", i, name, have,
                      cf_dtype_name(tv->dtype));
  }
  if (t->ndim != TV(tv)->nlogical)
    return eval_error(ev, CF_ERR_INVALID_ARGUMENT, "input %d (%s) has %d dimensions, expected %d", i, name, t->ndim,
                      TV(tv)->nlogical);
  if (t->ndim > 0 && !t->shape) return eval_error(ev, CF_ERR_INVALID_ARGUMENT, "input %d (%s) has no shape", i, name);
  if (cf_tensor_numel(t) < 0)
    return eval_error(ev, CF_ERR_INVALID_ARGUMENT, "input %d (%s) has a negative size or too many elements", i, name);
  if (!t->data && cf_tensor_numel(t) > 0)
    return eval_error(ev, CF_ERR_INVALID_ARGUMENT, "input %d (%s) has no data", i, name);
  return CF_OK;
}

static cf_status check_inputs(Eval *ev, int ninputs, const DLTensor *const *inputs) {
  cf_fusion *f = ev->f;
  if (ninputs != f->inputs.len)
    return eval_error(ev, CF_ERR_INVALID_ARGUMENT, "got %d inputs, the fusion has %d", ninputs, f->inputs.len);
  for (int i = 0; i < ninputs; i++) {
    cf_status s = check_input_type(ev, i, f->inputs.items[i], inputs[i]);
    if (s) return s;
    Val *tv = f->inputs.items[i];
    if (!ir_packed_rows_whole(tv->dtype, inputs[i]->ndim, inputs[i]->shape))
      return eval_error(ev, CF_ERR_INVALID_ARGUMENT, "input %d (%s) has dtype %s, two elements per byte, and innermost "
                        "extent %lld; it must be even", i, TV(tv)->display_name, cf_dtype_name(tv->dtype),
                        (long long)inputs[i]->shape[inputs[i]->ndim - 1]);
  }
  cf_status s = bind_symbols(ev, inputs);
  for (int i = 0; !s && i < ninputs; i++) {
    Val *tv = f->inputs.items[i];
    for (int k = 0; !s && k < inputs[i]->ndim; k++) {
      int64_t want;
      if ((s = eval_extent(ev, tv, k, &want))) break;
      if (inputs[i]->shape[k] != want)
        s = eval_error(ev, CF_ERR_INVALID_ARGUMENT, "input %d (%s) has size %lld in dimension %d, expected %lld", i,
                       TV(tv)->display_name, (long long)inputs[i]->shape[k], k, (long long)want);
    }
    if (!s) s = set_buf(ev, tv, inputs[i], NULL);
  }
  return s;
}

/* ---- iteration ----------------------------------------------------------------------------- */

/* Walks a row-major index space keeping one element offset per operand. */
typedef struct NdIter {
  int rank, nops;
  const int64_t *sizes;
  int64_t *idx;
  int64_t (*st)[MAX_OPERANDS]; /* st[d][j]: operand j's stride along axis d */
  int64_t off[MAX_OPERANDS];
} NdIter;

static bool nd_next(NdIter *it) {
  for (int d = it->rank - 1; d >= 0; d--) {
    if (++it->idx[d] < it->sizes[d]) {
      for (int j = 0; j < it->nops; j++) it->off[j] += it->st[d][j];
      return true;
    }
    for (int j = 0; j < it->nops; j++) it->off[j] -= it->st[d][j] * (it->sizes[d] - 1);
    it->idx[d] = 0;
  }
  return false;
}

static bool nd_empty(const NdIter *it) {
  for (int d = 0; d < it->rank; d++)
    if (it->sizes[d] == 0) return true;
  return false;
}

/* ---- one expression ----------------------------------------------------------------------------- */

typedef struct ExprPlan {
  const Expr *e;
  int rank; /* of the iteration space: the output's logical domain */
  int64_t *sizes; /* per iteration axis */
  int64_t (*st)[MAX_OPERANDS];
  const Val **first; /* per axis: the first operand iterating it, and its size */
  int64_t *first_size;
  const DLTensor *t[MAX_OPERANDS];
  cf_dtype dt[MAX_OPERANDS];
  double rhs; /* a binary op's scalar right-hand side (attr.scalar_rhs, evaluated) */
} ExprPlan;

static cf_status extent_mismatch(Eval *ev, const Expr *e, int d, int64_t x, const Val *tx, int64_t y, const Val *ty) {
  return eval_error(ev, CF_ERR_INVALID_ARGUMENT, "%s: axis %d has extent %lld in %s but %lld in %s", ir_op_name(e->op),
                    d, (long long)x, tx->u.tv.display_name, (long long)y, ty->u.tv.display_name);
}

/* Operand j's strides over the output's logical axes. Where two operands iterate an axis
 * their sizes must agree (symbolic extents were assumed equal when the op was built). */
static cf_status plan_operand(Eval *ev, ExprPlan *p, int j, Val *in) {
  const Expr *e = p->e;
  EvalBuf *b = &ev->bufs[in->id];
  TensorView *t = TV(in);
  Val *ax[t->nlogical > 0 ? t->nlogical : 1]; /* the axes the op sees: no reduction axes */
  int n = 0;
  for (int i = 0; i < t->nlogical; i++)
    if (ID(t->logical[i])->iter_type != CF_ITER_REDUCTION) ax[n++] = t->logical[i];
  for (int d = 0, k = 0; d < p->rank; d++) {
    if (e->op == OP_BROADCAST && e->attr.broadcast.is_broadcast[d]) {
      p->st[d][j] = 0;
      continue;
    }
    while (e->op == OP_SQUEEZE && k < n && e->attr.squeeze.is_squeezed[k]) k++;
    int src = e->op == OP_PERMUTE ? e->attr.permute.perm[d] : k++;
    if (src >= n) return IR_INTERNAL(ev->f, src < n);
    bool bcast = ID(ax[src])->iter_type == CF_ITER_BROADCAST;
    int64_t size = b->t->shape[src];
    p->st[d][j] = bcast ? 0 : b->strides[src];
    if (bcast) continue;
    if (!p->first[d]) {
      p->first[d] = in;
      p->first_size[d] = size;
    } else if (p->first_size[d] != size) {
      return extent_mismatch(ev, e, d, p->first_size[d], p->first[d], size, in);
    }
    if (size != p->sizes[d]) return extent_mismatch(ev, e, d, size, in, p->sizes[d], e->out[0]);
  }
  p->t[j] = b->t;
  p->dt[j] = in->dtype;
  return CF_OK;
}

/* Makes the output buffer and the plan of the iteration over the output's logical axes. */
static cf_status plan_expr(Eval *ev, const Expr *e, ExprPlan *p) {
  Val *out = e->out[0];
  TensorView *t = TV(out);
  int64_t dense[t->nlogical > 0 ? t->nlogical : 1];
  int ndense = 0;
  cf_status s = CF_OK;
  p->e = e;
  p->rank = t->nlogical;
  for (int d = 0; !s && d < p->rank; d++) {
    s = eval_extent(ev, out, d, &p->sizes[d]);
    if (ID(t->logical[d])->iter_type != CF_ITER_REDUCTION) dense[ndense++] = p->sizes[d];
  }
  DLManagedTensor *m = s ? NULL : cf_tensor_host(out->dtype, ndense, dense);
  if (!s && !m) s = eval_error(ev, CF_ERR_OUT_OF_MEMORY, "out of memory for %s", t->display_name);
  if (!s) s = set_buf(ev, out, &m->dl_tensor, m);
  for (int d = 0, k = 0; !s && d < p->rank; d++) /* reduction axes do not move the output */
    p->st[d][0] = ID(t->logical[d])->iter_type == CF_ITER_REDUCTION ? 0 : ev->bufs[out->id].strides[k++];
  p->t[0] = s ? NULL : &m->dl_tensor;
  p->dt[0] = out->dtype;
  for (int j = 0; !s && j < e->nin; j++) {
    if (!ev->bufs[e->in[j]->id].t)
      return eval_error(ev, CF_ERR_INVALID_ARGUMENT, "%s is neither an input of the fusion nor computed by it",
                        TV(e->in[j])->display_name);
    s = plan_operand(ev, p, j + 1, e->in[j]);
  }
  return s;
}

/* The dtype an elementwise expression computes in (the op table's type rule over its
 * operands' promoted dtype; ops.c cast every operand no wider than it). */
static cf_dtype compute_dtype(const Expr *e) {
  cf_dtype out = e->out[0]->dtype;
  switch (ir_op_kind(e->op)) {
  case OPK_UNARY: return ir_op_compute_dtype(e->op, e->in[0]->dtype, out);
  case OPK_BINARY:
    if (e->nin == 1) return out; /* constant right-hand side */
    return ir_op_compute_dtype(e->op, ir_dtype_promote(e->in[0]->dtype, e->in[1]->dtype), out);
  case OPK_TERNARY: return out;
  default: return e->in[0]->dtype;
  }
}

/* Operand j, converted to the opmath type of ct (float for half and bfloat16). */
static IrElem load_as(const ExprPlan *p, const NdIter *it, int j, cf_dtype ct) {
  cf_dtype to = ir_dtype_opmath(ct);
  IrElem v = ir_dl_load(p->t[j], it->off[j], p->dt[j]);
  return p->dt[j] == to ? v : ir_elem_convert(v, p->dt[j], to);
}

/* The op's evaluator form on the element at it. where's condition (operand 0) is read as
 * a bool; every other operand is converted; a constant right-hand side is rhs. */
static IrElem apply_elementwise(const ExprPlan *p, const NdIter *it, cf_dtype ct, IrElem rhs) {
  const Expr *e = p->e;
  IrElem a[3];
  for (int j = 0; j < e->nin && j < 3; j++)
    a[j] = e->op == OP_WHERE && j == 0 ? ir_dl_load(p->t[1], it->off[1], CF_BOOL)
                                       : load_as(p, it, j + 1, ct);
  if (ir_op_kind(e->op) == OPK_BINARY && e->nin == 1) a[1] = rhs;
  IrTypeRule r = ir_op_type_rule(e->op);
  if (r == TR_RANDOM || r == TR_RANDOM64) { /* random numbers read the element's row-major index */
    a[2].i = 0;
    for (int d = 0; d < it->rank; d++) a[2].i = a[2].i * it->sizes[d] + it->idx[d];
  }
  return ir_op_eval(e->op)(a, ct);
}

/* Ops on Welford states: the fields read, or the state moved as it is (set, broadcast,
 * permute). */
static void run_welford_elementwise(const ExprPlan *p, NdIter *it) {
  cf_dtype st = p->dt[1];
  if (nd_empty(it)) return;
  do {
    const void *src = ir_dl_elem_ptr(p->t[1], it->off[1]);
    void *dst = ir_dl_elem_ptr(p->t[0], it->off[0]);
    if (ir_dtype_is_welford(p->dt[0])) {
      memcpy(dst, src, cf_dtype_size(st));
      continue;
    }
    IrWelford w = ir_welford_load(src, st);
    IrElem v;
    if (p->e->op == OP_WELFORD_N)
      v.i = w.n;
    else
      v.d = p->e->op == OP_WELFORD_AVG ? (w.n ? w.avg : NAN) : w.m2; /* the mean of nothing is nan */
    ir_elem_store(dst, p->dt[0], v, p->e->op == OP_WELFORD_N ? CF_INT64 : CF_DOUBLE);
  } while (nd_next(it));
}

/* full: every element is the value (exact: a double or an int64, by the dtype). */
static void run_full(const ExprPlan *p, NdIter *it) {
  bool fl = ir_dtype_is_inexact(p->dt[0]);
  IrElem v = fl ? ir_complex(p->e->attr.full.value, p->e->attr.full.imag) : (IrElem){.i = p->e->attr.full.ivalue};
  if (nd_empty(it)) return;
  do ir_dl_store(p->t[0], it->off[0], p->dt[0], v, fl ? CF_COMPLEX_DOUBLE : CF_INT64);
  while (nd_next(it));
}

/* iota: the op's evaluator form on (index along its axis, start, step) in its compute dtype. */
static void run_iota(const ExprPlan *p, NdIter *it) {
  const Expr *e = p->e;
  cf_dtype ct = ir_op_compute_dtype(e->op, p->dt[0], p->dt[0]);
  bool fl = ir_dtype_is_float(ct);
  if (nd_empty(it)) return;
  do {
    int64_t i = it->idx[e->attr.iota.axis];
    IrElem a[3] = {fl ? (IrElem){.d = (double)i} : (IrElem){.i = i},
                   fl ? (IrElem){.d = e->attr.iota.start} : (IrElem){.i = e->attr.iota.istart},
                   fl ? (IrElem){.d = e->attr.iota.step} : (IrElem){.i = e->attr.iota.istep}};
    ir_dl_store(p->t[0], it->off[0], p->dt[0], ir_op_eval(e->op)(a, ct), ct);
  } while (nd_next(it));
}

static void run_elementwise(const ExprPlan *p, NdIter *it) {
  if (p->e->op == OP_FULL) {
    run_full(p, it);
    return;
  }
  if (p->e->op == OP_IOTA) {
    run_iota(p, it);
    return;
  }
  if (ir_dtype_is_welford(p->dt[1])) {
    run_welford_elementwise(p, it);
    return;
  }
  cf_dtype ct = compute_dtype(p->e);
  IrElem rhs = {.i = 0};
  /* A constant right-hand side stays a double for floating types (C's x + 2.5) and is an
   * exact integer otherwise (ir_scalar_rhs_dtype made the result floating if it is not). */
  if (ir_op_kind(p->e->op) == OPK_BINARY && p->e->nin == 1) { /* attr is a union: check the kind first */
    IrElem v = ir_complex(p->rhs, 0.0);
    rhs = ir_dtype_is_inexact(ct) ? v : ir_elem_convert(v, CF_DOUBLE, CF_INT64);
  }
  if (nd_empty(it)) return;
  cf_dtype vt = ir_op_value_dtype(p->e->op, ct);
  do {
    IrElem r = apply_elementwise(p, it, ct, rhs);
    ir_dl_store(p->t[0], it->off[0], p->dt[0], r, vt);
  } while (nd_next(it));
}

IrElem ir_reduction_start(IrOp op, bool fl) {
  static const double fident[] = {[RID_ZERO] = 0.0, [RID_ONE] = 1.0, [RID_LOWEST] = -INFINITY, [RID_HIGHEST] = INFINITY};
  static const int64_t iident[] = {[RID_ZERO] = 0, [RID_ONE] = 1, [RID_LOWEST] = INT64_MIN, [RID_HIGHEST] = INT64_MAX};
  ReduceIdentity r = ir_reduction_identity(op);
  IrElem v;
  if (fl)
    v = ir_complex(fident[r], 0.0); /* a complex accumulator's imaginary part starts at 0 */
  else
    v.i = iident[r];
  return v;
}

/* A reduction's accumulator in the evaluator's wide types: a value, or a Welford state. */
typedef union EvalAcc {
  IrElem v;
  IrWelford w;
} EvalAcc;

static EvalAcc acc_init(IrOp op, bool fl) {
  EvalAcc a;
  if (op == OP_WELFORD || op == OP_ONLINE_SOFTMAX)
    a.w = ir_welford_empty();
  else
    a.v = ir_reduction_start(op, fl);
  return a;
}

/* Folds the element at src (of dtype in: a value, or a state for a Welford reduction of
 * states) into a. */
static void acc_fold(IrOp op, bool fl, EvalAcc *a, const void *src, cf_dtype in) {
  if (op == OP_WELFORD || op == OP_ONLINE_SOFTMAX) {
    IrWelford x = ir_dtype_is_welford(in) ? ir_welford_load(src, in) : ir_welford_of(ir_elem_load(src, in).d);
    a->w = op == OP_WELFORD ? ir_welford_merge(a->w, x) : ir_softmax_merge(a->w, x);
    return;
  }
  IrElem x[2] = {a->v, ir_elem_load(src, in)};
  cf_dtype wide = ir_dtype_is_complex(in) ? CF_COMPLEX_DOUBLE : fl ? CF_DOUBLE : CF_INT64;
  a->v = ir_op_eval(op)(x, wide); /* a reduction's form is its combine's */
}

static void acc_store(void *dst, cf_dtype out, const EvalAcc *a, cf_dtype in) {
  if (ir_dtype_is_welford(out))
    ir_welford_store(dst, out, a->w);
  else
    ir_elem_store(dst, out, a->v, in);
}

/* Accumulates in double or int64 (or Welford states) into a scratch array indexed like the
 * output, then rounds each result once into the output. */
static cf_status run_reduction(Eval *ev, const ExprPlan *p, NdIter *it) {
  const Expr *e = p->e;
  cf_dtype ct = p->dt[1];
  bool fl = ir_dtype_is_inexact(ct);
  int64_t n = cf_tensor_numel(p->t[0]);
  EvalAcc *acc = malloc(sizeof(EvalAcc) * (size_t)(n > 0 ? n : 1));
  if (!acc) return eval_error(ev, CF_ERR_OUT_OF_MEMORY, "out of memory");
  for (int64_t i = 0; i < n; i++) acc[i] = acc_init(e->op, fl);
  if (!nd_empty(it)) do /* the output is dense: offsets are indices */
      acc_fold(e->op, fl, &acc[it->off[0]], ir_dl_elem_ptr(p->t[1], it->off[1]), ct);
    while (nd_next(it));
  for (int64_t i = 0; i < n; i++) acc_store(ir_dl_elem_ptr(p->t[0], i), p->dt[0], &acc[i], ct);
  free(acc);
  return CF_OK;
}

/* ---- rfactor tensors ------------------------------------------------------------------------ */

/* The index of each axis an rfactor tensor's root -> logical transforms reach, from its
 * root indices in v (by Val id); ext holds every extent involved. */
static void rfactor_forward(Expr *const *hist, int nh, int64_t *v, const int64_t *ext) {
  for (int i = 0; i < nh; i++) {
    const Expr *h = hist[i];
    int64_t a = v[h->in[0]->id], b = h->nin > 1 ? v[h->in[1]->id] : 0;
    switch (h->op) {
    case OP_SPLIT:
      v[h->out[0]->id] = a / ext[h->out[1]->id];
      v[h->out[1]->id] = a % ext[h->out[1]->id];
      break;
    case OP_MERGE: v[h->out[0]->id] = a * ext[h->in[1]->id] + b; break;
    case OP_SWIZZLE:
      v[h->out[0]->id] = a;
      v[h->out[1]->id] = a ^ b;
      break;
    default: break;
    }
  }
}

typedef struct RfPlan {
  int64_t *ext, *val;    /* by Val id */
  int64_t *rext, *ridx;  /* per root axis: extent, current index */
  int64_t *istride;      /* per root axis: the input's stride (0 for broadcast) */
  Expr **hist;
  int nh;
} RfPlan;

/* Extents of every root, logical and intermediate axis, and the output buffer. */
static cf_status rfactor_plan(Eval *ev, const Expr *e, RfPlan *p) {
  Val *out = e->out[0], *in = e->in[0];
  TensorView *t = TV(out);
  const char *unbound = NULL;
  for (int i = 0; i < ev->f->vals.len; i++) {
    Val *v = ev->f->vals.items[i];
    if (v->kind == VAL_ID && ID(v)->tv == out && !ir_scalar_eval(ID(v)->extent, &ev->bind, &p->ext[v->id], &unbound))
      return eval_error(ev, CF_ERR_INVALID_ARGUMENT, "cannot size %s: %s is unbound", t->display_name,
                        unbound ? unbound : "?");
  }
  int64_t dense[t->nlogical > 0 ? t->nlogical : 1];
  int nd = 0;
  for (int l = 0; l < t->nlogical; l++)
    if (ID(t->logical[l])->iter_type != CF_ITER_REDUCTION) dense[nd++] = p->ext[t->logical[l]->id];
  DLManagedTensor *m = cf_tensor_host(out->dtype, nd, dense);
  if (!m) return eval_error(ev, CF_ERR_OUT_OF_MEMORY, "out of memory for %s", t->display_name);
  cf_status s = set_buf(ev, out, &m->dl_tensor, m);
  const EvalBuf *ib = &ev->bufs[in->id];
  for (int r = 0, k = 0; !s && r < t->nroot; r++) { /* root axis r reads the input's r-th op axis */
    while (k < TV(in)->nlogical && ID(TV(in)->logical[k])->iter_type == CF_ITER_REDUCTION) k++;
    if (k >= TV(in)->nlogical) return IR_INTERNAL(ev->f, k < TV(in)->nlogical);
    int dim = 0;
    for (int j = 0; j < k; j++) dim += ID(TV(in)->logical[j])->iter_type != CF_ITER_REDUCTION;
    p->rext[r] = p->ext[t->root[r]->id];
    p->istride[r] = ID(TV(in)->logical[k])->iter_type == CF_ITER_BROADCAST ? 0 : ib->strides[dim];
    k++;
  }
  return s;
}

static int64_t rfactor_out_offset(const Eval *ev, const TensorView *t, const Val *out, const int64_t *val) {
  const int64_t *st = ev->bufs[out->id].strides;
  int64_t off = 0;
  for (int l = 0, k = 0; l < t->nlogical; l++)
    if (ID(t->logical[l])->iter_type != CF_ITER_REDUCTION) off += val[t->logical[l]->id] * st[k++];
  return off;
}

/* An rfactor tensor reduces its input over the root domain while its output is indexed
 * by its logical axes: each root element is mapped forward to its logical coordinates
 * (positions no root element reaches, past a non-divisible split, keep the identity). */
static cf_status run_rfactor(Eval *ev, const Expr *e, Arena *scratch) {
  Val *out = e->out[0], *in = e->in[0];
  TensorView *t = TV(out);
  int nv = ev->f->vals.len, nr = t->nroot > 0 ? t->nroot : 1;
  RfPlan p = {ARENA_ARRAY(scratch, int64_t, nv), ARENA_ARRAY(scratch, int64_t, nv), ARENA_ARRAY(scratch, int64_t, nr),
              ARENA_ARRAY(scratch, int64_t, nr), ARENA_ARRAY(scratch, int64_t, nr), NULL, 0};
  if (!p.ext || !p.val || !p.rext || !p.ridx || !p.istride) return eval_error(ev, CF_ERR_OUT_OF_MEMORY, "out of memory");
  cf_status s = rfactor_plan(ev, e, &p);
  if (s) return s;
  p.hist = ir_tv_root_to_logical(scratch, out, &p.nh);
  const DLTensor *ot = ev->bufs[out->id].t, *it = ev->bufs[in->id].t;
  int64_t n = cf_tensor_numel(ot), total = 1;
  bool fl = ir_dtype_is_inexact(in->dtype);
  EvalAcc *acc = ARENA_ARRAY(scratch, EvalAcc, n > 0 ? n : 1);
  if (!acc) return eval_error(ev, CF_ERR_OUT_OF_MEMORY, "out of memory");
  for (int64_t i = 0; i < n; i++) acc[i] = acc_init(e->op, fl);
  for (int r = 0; r < t->nroot; r++) total *= p.rext[r], p.ridx[r] = 0;
  for (int64_t k = 0; k < total; k++) {
    int64_t ioff = 0;
    for (int r = 0; r < t->nroot; r++) {
      p.val[t->root[r]->id] = p.ridx[r];
      ioff += p.ridx[r] * p.istride[r];
    }
    rfactor_forward(p.hist, p.nh, p.val, p.ext);
    acc_fold(e->op, fl, &acc[rfactor_out_offset(ev, t, out, p.val)], ir_dl_elem_ptr(it, ioff), in->dtype);
    for (int r = t->nroot - 1; r >= 0 && ++p.ridx[r] == p.rext[r]; r--) p.ridx[r] = 0;
  }
  for (int64_t i = 0; i < n; i++) acc_store(ir_dl_elem_ptr(ot, i), out->dtype, &acc[i], in->dtype);
  return CF_OK;
}

static bool is_rfactor(const Val *tv) {
  for (int i = 0; i < TV((Val *)tv)->nlogical; i++)
    if (ID(TV((Val *)tv)->logical[i])->rfactor) return true;
  return false;
}

/* reshape: the input's elements in row-major order (through its strides) copied densely
 * under the output's sizes, whose element count must be the input's. */
static cf_status run_reshape(Eval *ev, const Expr *e) {
  Val *in = e->in[0], *out = e->out[0];
  const EvalBuf *b = &ev->bufs[in->id];
  int r = TV(out)->nlogical;
  int64_t sizes[r > 0 ? r : 1], n_out = 1, n_in = 1;
  for (int d = 0; d < r; d++) {
    cf_status s = eval_extent(ev, out, d, &sizes[d]);
    if (s) return s;
    n_out *= sizes[d];
  }
  if (!b->t)
    return eval_error(ev, CF_ERR_INVALID_ARGUMENT, "%s is neither an input of the fusion nor computed by it",
                      TV(in)->display_name);
  for (int d = 0; d < b->t->ndim; d++) n_in *= b->t->shape[d];
  if (n_in != n_out)
    return eval_error(ev, CF_ERR_INVALID_ARGUMENT, "reshape: %s has %lld elements but %s has %lld",
                      TV(in)->display_name, (long long)n_in, TV(out)->display_name, (long long)n_out);
  DLManagedTensor *m = cf_tensor_host(out->dtype, r, sizes);
  if (!m) return eval_error(ev, CF_ERR_OUT_OF_MEMORY, "out of memory for %s", TV(out)->display_name);
  cf_status s = set_buf(ev, out, &m->dl_tensor, m);
  if (s) return s;
  size_t bytes = cf_dtype_size(out->dtype);
  for (int64_t i = 0; i < n_out; i++) {
    int64_t rest = i, off = 0;
    for (int d = b->t->ndim - 1; d >= 0; d--) {
      off += (rest % b->t->shape[d]) * b->strides[d];
      rest /= b->t->shape[d];
    }
    if (ir_dtype_is_packed(out->dtype)) /* a nibble, not a byte */
      ir_dl_store(&m->dl_tensor, i, out->dtype, ir_dl_load(b->t, off, out->dtype), out->dtype);
    else
      memcpy(ir_dl_elem_ptr(&m->dl_tensor, i), ir_dl_elem_ptr(b->t, off), bytes);
  }
  return CF_OK;
}

/* Where output element idx reads operand j of a resize op (a slice from its evaluated
 * starts): *off receives the element's offset in that operand; false where it reads none
 * (pad's border, cat's other operand). */
static bool resize_source(const Eval *ev, const Expr *e, int j, const int64_t *idx, int r, const int64_t *start,
                          int64_t *off) {
  const EvalBuf *b = &ev->bufs[e->in[j]->id];
  *off = 0;
  for (int d = 0; d < r; d++) {
    int64_t n = b->t->shape[d], s = idx[d];
    if (e->op == OP_SLICE) s = start[d] + idx[d] * e->attr.slice.step[d];
    if (e->op == OP_PAD) s = idx[d] - e->attr.pad.left[d];
    if (e->op == OP_CAT && d == e->attr.cat.axis && j == 1) s = idx[d] - ev->bufs[e->in[0]->id].t->shape[d];
    if (n == 1 && !ir_resize_axis(e, j, d)) s = 0; /* a broadcast axis */
    if (s < 0 || s >= n) return false;
    *off += s * b->strides[d];
  }
  return true;
}

/* A slice's starts with the bound sizes (max(0, i0 - 4) for -4 on a symbolic extent:
 * ops_resize.c). Normalized, a slice reads within its operand; a read past it would be a
 * bug of that normalization, reported as one. */
static cf_status slice_starts(Eval *ev, const Expr *e, int r, const int64_t *sizes, int64_t *start) {
  const DLTensor *x = ev->bufs[e->in[0]->id].t;
  for (int d = 0; e->op == OP_SLICE && d < r; d++) {
    const char *unbound = NULL;
    if (!ir_scalar_eval(e->attr.slice.start[d], &ev->bind, &start[d], &unbound))
      return eval_error(ev, CF_ERR_INVALID_ARGUMENT, "slice: the start of axis %d of %s is not bound: %s", d,
                        TV(e->in[0])->display_name, unbound ? unbound : "?");
    int64_t last = start[d] + (sizes[d] - 1) * e->attr.slice.step[d];
    if (sizes[d] > 0 && (start[d] < 0 || last >= x->shape[d]))
      return eval_error(ev, CF_ERR_INTERNAL, "internal error: slice: axis %d of %s has extent %lld; the slice reads "
                        "elements %lld to %lld; please report this bug", d, TV(e->in[0])->display_name,
                        (long long)x->shape[d], (long long)start[d], (long long)last);
  }
  return CF_OK;
}

/* slice, pad and cat: each output element is the op's form (ir_ev_select for pad and cat)
 * on what it reads: the operand where it has the element, else the pad value or cat's
 * second operand. */
static cf_status run_resize(Eval *ev, const Expr *e) {
  Val *out = e->out[0];
  int r = TV(out)->nlogical;
  int64_t sizes[r > 0 ? r : 1], idx[r > 0 ? r : 1], start[r > 0 ? r : 1], n = 1, off0, off1;
  for (int d = 0; d < r; d++) {
    cf_status s = eval_extent(ev, out, d, &sizes[d]);
    if (s) return s;
    n *= sizes[d];
    idx[d] = 0;
  }
  for (int j = 0; j < e->nin; j++)
    if (!ev->bufs[e->in[j]->id].t)
      return eval_error(ev, CF_ERR_INVALID_ARGUMENT, "%s is neither an input of the fusion nor computed by it",
                        TV(e->in[j])->display_name);
  cf_status s0 = n > 0 ? slice_starts(ev, e, r, sizes, start) : CF_OK;
  if (s0) return s0;
  DLManagedTensor *m = cf_tensor_host(out->dtype, r, sizes);
  cf_status s = m ? set_buf(ev, out, &m->dl_tensor, m) : eval_error(ev, CF_ERR_OUT_OF_MEMORY, "out of memory");
  bool fl = ir_dtype_is_inexact(out->dtype);
  IrElem pad = fl ? ir_complex(e->attr.pad.value, 0.0) : (IrElem){.i = e->attr.pad.ivalue};
  for (int64_t i = 0; !s && i < n; i++) {
    IrElem a[3] = {{.i = 0}, e->op == OP_PAD ? pad : (IrElem){.i = 0}, {.i = 0}};
    a[2].i = resize_source(ev, e, 0, idx, r, start, &off0);
    if (a[2].i) a[0] = ir_dl_load(ev->bufs[e->in[0]->id].t, off0, out->dtype);
    if (e->op == OP_CAT && !a[2].i && resize_source(ev, e, 1, idx, r, start, &off1))
      a[1] = ir_dl_load(ev->bufs[e->in[1]->id].t, off1, out->dtype);
    ir_dl_store(&m->dl_tensor, i, out->dtype, ir_op_eval(e->op)(a, out->dtype), out->dtype);
    for (int d = r - 1; d >= 0 && ++idx[d] == sizes[d]; d--) idx[d] = 0;
  }
  return s;
}

/* gather, take_along_axis, scatter, cumsum (ir/eval_index.c): the output allocated dense,
 * the operands handed over with their strides. */
static cf_status run_indexed(Eval *ev, const Expr *e) {
  Val *out = e->out[0];
  int r = TV(out)->nlogical;
  int64_t sizes[CF_MAX_RANK];
  const DLTensor *in[3] = {NULL, NULL, NULL};
  const int64_t *st[3] = {NULL, NULL, NULL};
  for (int d = 0; d < r; d++) {
    cf_status s = eval_extent(ev, out, d, &sizes[d]);
    if (s) return s;
  }
  for (int j = 0; j < e->nin && j < 3; j++) {
    if (!(in[j] = ev->bufs[e->in[j]->id].t))
      return eval_error(ev, CF_ERR_INVALID_ARGUMENT, "%s is neither an input of the fusion nor computed by it",
                        TV(e->in[j])->display_name);
    st[j] = ev->bufs[e->in[j]->id].strides;
  }
  DLManagedTensor *m = cf_tensor_host(out->dtype, r, sizes);
  cf_status s = m ? set_buf(ev, out, &m->dl_tensor, m) : eval_error(ev, CF_ERR_OUT_OF_MEMORY, "out of memory");
  char *why = s ? NULL : ir_eval_indexed(e, in, st, &m->dl_tensor);
  if (why) s = eval_error(ev, CF_ERR_INVALID_ARGUMENT, "%s", why);
  free(why);
  return s;
}

/* A binary op's scalar right-hand side: its constant, or its scalar Val evaluated with the
 * bound sizes (a mean over symbolic extents divides by their product). */
static cf_status scalar_rhs(Eval *ev, const Expr *e, double *out) {
  const Val *v = e->attr.scalar_rhs.val;
  int64_t n;
  const char *unbound = NULL;
  *out = e->attr.scalar_rhs.value;
  if (!v) return CF_OK;
  if (!ir_scalar_eval(v, &ev->bind, &n, &unbound))
    return eval_error(ev, CF_ERR_INVALID_ARGUMENT, "%s: the scalar %s is not bound", ir_op_name(e->op),
                      unbound ? unbound : "?");
  *out = (double)n;
  return CF_OK;
}

/* max and min of an empty axis: an error naming the tensor and axis, as torch raises. */
static cf_status check_reduced_extents(Eval *ev, const Expr *e) {
  TensorView *t = TV(e->out[0]);
  for (int d = 0; ir_reduction_needs_elements(e->op) && d < t->nlogical; d++) {
    int64_t n;
    cf_status s = eval_extent(ev, e->out[0], d, &n);
    if (s) return s;
    if (ID(t->logical[d])->iter_type == CF_ITER_REDUCTION && n == 0)
      return eval_error(ev, CF_ERR_INVALID_ARGUMENT, IR_EMPTY_REDUCTION_MSG, ir_op_name(e->op), d,
                        TV(e->in[0])->display_name, ir_op_name(e->op));
  }
  return CF_OK;
}

static cf_status eval_expr(Eval *ev, const Expr *e, Arena *scratch) {
  if (e->op == OP_RESHAPE) return run_reshape(ev, e);
  if (ir_op_kind(e->op) == OPK_RESIZE) return run_resize(ev, e);
  if (ir_op_kind(e->op) == OPK_INDEXED) return run_indexed(ev, e);
  if (ir_op_kind(e->op) == OPK_REDUCTION) {
    cf_status s = check_reduced_extents(ev, e);
    if (s) return s;
  }
  if (ir_op_kind(e->op) == OPK_REDUCTION && is_rfactor(e->out[0])) return run_rfactor(ev, e, scratch);
  int r = TV(e->out[0])->nlogical > 0 ? TV(e->out[0])->nlogical : 1;
  int64_t sizes[r], idx[r], st[r][MAX_OPERANDS], first_size[r];
  const Val *first[r];
  memset(first, 0, sizeof first);
  ExprPlan p = {.sizes = sizes, .st = st, .first = first, .first_size = first_size};
  if (e->nin + 1 > MAX_OPERANDS) return IR_INTERNAL(ev->f, e->nin + 1 <= MAX_OPERANDS);
  cf_status s = plan_expr(ev, e, &p);
  if (s) return s;
  memset(idx, 0, sizeof idx);
  NdIter it = {.rank = p.rank, .nops = e->nin + 1, .sizes = sizes, .idx = idx, .st = st};
  if (ir_op_kind(e->op) == OPK_REDUCTION) return run_reduction(ev, &p, &it);
  if (ir_op_kind(e->op) == OPK_BINARY && e->nin == 1 && (s = scalar_rhs(ev, e, &p.rhs))) return s;
  run_elementwise(&p, &it);
  return CF_OK;
}

/* ---- the entry point ------------------------------------------------------------------------- */

static void eval_free(Eval *ev) {
  for (int i = 0; ev->bufs && i < ev->f->vals.len; i++) {
    cf_tensor_free(ev->bufs[i].owned);
    free(ev->bufs[i].strides);
  }
  free(ev->bufs);
  free(ev->bind.ids);
  free(ev->bind.values);
}

static cf_status check_call(cf_fusion *f, int ninputs, const DLTensor *const *inputs, DLManagedTensor **outputs) {
  if (!f) return CF_ERR_INVALID_ARGUMENT;
  if (f->status) return f->status;
  if (!outputs) return ir_error(f, CF_ERR_INVALID_ARGUMENT, "evaluate: argument 4 (outputs) is NULL");
  if (ninputs > 0 && !inputs) return ir_error(f, CF_ERR_INVALID_ARGUMENT, "evaluate: argument 3 (inputs) is NULL");
  if (f->outputs.len == 0) return ir_error(f, CF_ERR_INVALID_ARGUMENT, "evaluate: the fusion has no outputs");
  return CF_OK;
}

/* A fusion with dynamic ops: its concrete copy for these inputs (ir/concretize.c), evaluated. */
static cf_status evaluate_concrete(cf_fusion *f, int ninputs, const DLTensor *const *inputs, DLManagedTensor **outputs) {
  if (ninputs != f->inputs.len)
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "evaluate: expected %d inputs, got %d", f->inputs.len, ninputs);
  for (int i = 0; i < ninputs; i++)
    if (!inputs[i]) return ir_error(f, CF_ERR_INVALID_ARGUMENT, "evaluate: input %d is NULL", i);
  cf_fusion *g = ir_concretize(f, inputs, "evaluate");
  if (!g) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "evaluate: out of memory");
  cf_status s = g->status ? g->status : cf_fusion_evaluate(g, ninputs, inputs, outputs);
  if (s) ir_error(f, s, "%s", cf_fusion_error(g));
  cf_fusion_destroy(g);
  return s;
}

cf_status cf_fusion_evaluate(cf_fusion *f, int ninputs, const DLTensor *const *inputs, DLManagedTensor **outputs) {
  cf_status s = check_call(f, ninputs, inputs, outputs);
  if (s) return s;
  if (ir_fusion_is_dynamic(f)) return evaluate_concrete(f, ninputs, inputs, outputs);
  for (int i = 0; i < f->outputs.len; i++) outputs[i] = NULL;
  if ((s = ir_verify_sources(f))) return s;
  Eval ev = {.f = f, .bufs = calloc((size_t)f->vals.len + 1, sizeof(EvalBuf))};
  s = ev.bufs ? check_inputs(&ev, ninputs, inputs) : ir_error(f, CF_ERR_OUT_OF_MEMORY, "evaluate: out of memory");
  int n = 0;
  Arena *scratch = arena_create();
  Expr **exprs = s || !scratch ? NULL : ir_fusion_tensor_exprs_in(scratch, f, &n);
  for (int i = 0; !s && i < n; i++) s = eval_expr(&ev, exprs[i], scratch);
  for (int i = 0; !s && i < f->outputs.len; i++) {
    Val *tv = f->outputs.items[i];
    EvalBuf *b = &ev.bufs[tv->id];
    const DLTensor *t = b->owned ? &b->owned->dl_tensor : NULL;
    if (t && !ir_packed_rows_whole(tv->dtype, t->ndim, t->shape)) /* as the executor refuses it */
      s = eval_error(&ev, CF_ERR_INVALID_ARGUMENT, "output %d (%s) has dtype %s, two elements per byte, and "
                     "innermost extent %lld; it must be even", i, TV(tv)->display_name, cf_dtype_name(tv->dtype),
                     (long long)t->shape[t->ndim - 1]);
    outputs[i] = b->owned; /* outputs are computed, never inputs: add_output refuses those */
    b->owned = NULL;
  }
  if (s)
    for (int i = 0; i < f->outputs.len; i++) {
      cf_tensor_free(outputs[i]);
      outputs[i] = NULL;
    }
  eval_free(&ev);
  arena_destroy(scratch);
  return s;
}
