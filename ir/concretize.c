/* ir/concretize.c: dynamic ops made static for one call (nvFuser's DynamicTransform).
 *
 * A dynamic op (ir/ops_dynamic.c) reads its sizes from 0-d integer tensors: scalar inputs
 * (read from the call's host memory), constants, cf_tv_size (a size of the call's
 * tensors) and integer arithmetic on those. ir_dynamic_params evaluates them for a call,
 * in topological order, each op checked as its static form checks constants (the same
 * messages, naming the tensor and axis) and normalized (reshape's -1 inferred, expand's
 * -1 kept, slice bounds by Python's rules): the words are the key define and run keeps a
 * concrete fusion under. ir_concretize copies the fusion and rewrites each dynamic op in
 * place: its output's run-time extents (symbols of its own) become those constants, a
 * slice gets its starts and steps, a cf_tv_size its value, and the size operands are
 * dropped. Key decision: the rewrite keeps every Val (only symbols turn constant), so the
 * ops after a dynamic one, built on its symbols, need no rebuilding, and the concrete
 * fusion is an ordinary static one for the schedulers, lowering and the evaluator. */
#include <dlpack/dlpack.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/dtype.h"
#include "ir/ops_util.h"

typedef struct Dyn {
  cf_fusion *f;
  const DLTensor *const *in;
  ScalarBindings bind; /* the inputs' sizes, then the dynamic symbols as they are bound */
  char *msg;
  size_t msglen;
  int64_t *out; /* the parameters (cap words; n counts every one) */
  int cap, n;
} Dyn;

static cf_status dyn_fail(Dyn *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static cf_status dyn_fail(Dyn *d, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (d->msg && d->msglen) vsnprintf(d->msg, d->msglen, fmt, ap);
  va_end(ap);
  return CF_ERR_INVALID_ARGUMENT;
}

/* The same, with tv's domain appended as ir_error_tv does. */
static cf_status dyn_fail_tv(Dyn *d, Val *tv, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static cf_status dyn_fail_tv(Dyn *d, Val *tv, const char *fmt, ...) {
  char head[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(head, sizeof head, fmt, ap);
  va_end(ap);
  char *dom = ir_tv_str(tv);
  dyn_fail(d, "%s for %s", head, dom ? dom : TV(tv)->display_name);
  free(dom);
  return CF_ERR_INVALID_ARGUMENT;
}

static void put(Dyn *d, int64_t w) {
  if (d->n < d->cap) d->out[d->n] = w;
  d->n++;
}

static void bind(Dyn *d, Val *sym, int64_t v) {
  d->bind.ids[d->bind.n] = sym->id;
  d->bind.values[d->bind.n++] = v;
}

static int input_index(const cf_fusion *f, Val *tv) {
  for (int i = 0; i < f->inputs.len; i++)
    if (f->inputs.items[i] == tv) return i;
  return -1;
}

static cf_status bind_inputs(Dyn *d) {
  cf_fusion *f = d->f;
  for (int v = 0; v < f->vals.len; v++) {
    Val *s = f->vals.items[v];
    if (s->kind != VAL_SCALAR || s->def || !SC(s)->input_tv || SC(s)->stride_of) continue;
    int i = input_index(f, SC(s)->input_tv), axis = SC(s)->input_axis;
    if (i < 0 || !d->in[i]) return dyn_fail(d, "input %d is NULL", i);
    if (axis >= 0 && axis < d->in[i]->ndim) bind(d, s, d->in[i]->shape[axis]);
  }
  return CF_OK;
}

/* ---- the values of size operands -------------------------------------------------------- */

/* A 0-d integer input read from host memory. */
static cf_status read_input(Dyn *d, Val *tv, int i, int64_t *out) {
  const DLTensor *t = d->in[i];
  int dev = t->device.device_type;
  if (dev != kDLCPU && dev != kDLCUDAHost && dev != kDLCUDAManaged)
    return dyn_fail(d, "input %d (%s) gives a size at run time but is in device memory (DLPack device type "
                    "%d); pass sizes as host tensors (kDLCPU)", i, TV(tv)->display_name, dev);
  if (t->ndim != 0 || !t->data || t->dtype.lanes != 1 || (t->dtype.code != kDLInt && t->dtype.code != kDLUInt))
    return dyn_fail(d, "input %d (%s) gives a size at run time; pass a 0-d integer tensor", i,
                    TV(tv)->display_name);
  const char *p = (const char *)t->data + t->byte_offset;
  bool u = t->dtype.code == kDLUInt;
  switch (t->dtype.bits) {
  case 8: *out = u ? *(const uint8_t *)p : *(const int8_t *)p; break;
  case 16: *out = u ? *(const uint16_t *)p : *(const int16_t *)p; break;
  case 32: *out = u ? (int64_t) * (const uint32_t *)p : *(const int32_t *)p; break;
  case 64: *out = *(const int64_t *)p; break;
  default: return dyn_fail(d, "input %d (%s) has %d-bit integers", i, TV(tv)->display_name, t->dtype.bits);
  }
  return CF_OK;
}

/* The value of a 0-d integer tensor: an input, a constant, a size, or arithmetic on those. */
static cf_status value_of(Dyn *d, Val *tv, Val *user, int64_t *out) {
  int i = input_index(d->f, tv);
  if (i >= 0) return read_input(d, tv, i, out);
  Expr *e = tv->def;
  const char *unbound = NULL;
  if (e && e->op == OP_FULL && e->attr.full.extent)
    return ir_scalar_eval(e->attr.full.extent, &d->bind, out, &unbound)
               ? CF_OK
               : dyn_fail(d, "the size %s of %s is unbound", unbound ? unbound : "?", TV(user)->display_name);
  if (e && e->op == OP_FULL && !ir_dtype_is_float(tv->dtype)) return *out = e->attr.full.ivalue, CF_OK;
  if (e && (e->op == OP_CAST || e->op == OP_SET) && !ir_dtype_is_float(tv->dtype))
    return value_of(d, e->in[0], user, out);
  if (e && ir_op_kind(e->op) == OPK_BINARY && !ir_dtype_is_float(tv->dtype)) {
    int64_t a, b = (int64_t)e->attr.scalar_rhs.value;
    cf_status s = value_of(d, e->in[0], user, &a);
    if (!s && e->nin == 2) s = value_of(d, e->in[1], user, &b);
    if (s) return s;
    if (ir_int_apply(e->op, a, b, out)) return CF_OK;
    return dyn_fail(d, "a size of %s: %s of %lld and %lld has no integer value", TV(user)->display_name,
                    ir_op_name(e->op), (long long)a, (long long)b);
  }
  return dyn_fail(d, "%s, a size of %s given at run time, is computed by %s; a size must be an integer "
                  "expression of scalar inputs, constants and tensor sizes (cf_tv_size)", TV(tv)->display_name,
                  TV(user)->display_name, e ? ir_op_name(e->op) : "nothing");
}

static cf_status extent_of(Dyn *d, Val *id, Val *tv, int64_t *out) {
  const char *unbound = NULL;
  if (ir_scalar_eval(ID(id)->extent, &d->bind, out, &unbound)) return CF_OK;
  return dyn_fail(d, "an extent of %s is unbound (%s)", TV(tv)->display_name, unbound ? unbound : "?");
}

/* x's axes as an op sees them (no reduction axes) and their extents. */
static cf_status operand_extents(Dyn *d, Val *x, int64_t *ext, int *n) {
  *n = 0;
  for (int a = 0; a < TV(x)->nlogical; a++) {
    Val *id = TV(x)->logical[a];
    if (ID(id)->iter_type == CF_ITER_REDUCTION) continue;
    cf_status s = extent_of(d, id, x, &ext[(*n)++]);
    if (s) return s;
  }
  return CF_OK;
}

/* ---- each dynamic op: its parameters, checked ------------------------------------------ */

/* Binds output axis k's symbol (when it is one) to v and records v. */
static void give_extent(Dyn *d, Expr *e, int k, int64_t v) {
  Val *ext = ID(TV(e->out[0])->logical[k])->extent;
  if (!ir_scalar_is_const(ext) && !ext->def && !SC(ext)->input_tv) bind(d, ext, v);
  put(d, v);
}

static cf_status reshape_params(Dyn *d, Expr *e, const int64_t *v) {
  Val *x = e->in[0];
  int64_t ext[CF_MAX_RANK], total = 1, known = 1;
  int n, rank = e->ndyn, infer = -1;
  cf_status s = operand_extents(d, x, ext, &n);
  for (int k = 0; !s && k < n; k++)
    if (__builtin_mul_overflow(total, ext[k], &total)) return dyn_fail_tv(d, x, "reshape: the sizes overflow int64");
  for (int k = 0; !s && k < rank; k++) {
    if (v[k] == -1 && infer < 0) {
      infer = k;
      continue;
    }
    if (v[k] < 0)
      return dyn_fail_tv(d, x, "reshape: size %lld of axis %d is %s", (long long)v[k], k,
                         v[k] == -1 ? "a second -1 (one size may be inferred)" : "negative");
    if (__builtin_mul_overflow(known, v[k], &known)) return dyn_fail_tv(d, x, "reshape: the sizes overflow int64");
  }
  if (s) return s;
  if (infer >= 0 && known == 0)
    return dyn_fail_tv(d, x, "reshape: cannot infer the size of axis %d next to a size 0", infer);
  if (infer >= 0 && total % known)
    return dyn_fail_tv(d, x, "reshape: %s has %lld elements, not a multiple of %lld", TV(x)->display_name,
                       (long long)total, (long long)known);
  if (infer < 0 && total != known)
    return dyn_fail_tv(d, x, "reshape: %s has %lld elements but the sizes give %lld", TV(x)->display_name,
                       (long long)total, (long long)known);
  for (int k = 0; k < rank; k++) give_extent(d, e, k, k == infer ? total / known : v[k]);
  return CF_OK;
}

static cf_status expand_params(Dyn *d, Expr *e, const int64_t *v) {
  Val *x = e->in[0];
  int64_t ext[CF_MAX_RANK];
  int n;
  cf_status s = operand_extents(d, x, ext, &n);
  for (int k = 0; !s && k < n; k++) {
    bool bcast = ID(TV(e->out[0])->logical[k])->extent != ID(TV(x)->logical[k])->extent &&
                 !ir_scalar_is_const(ID(TV(e->out[0])->logical[k])->extent);
    if (v[k] < -1)
      return dyn_fail_tv(d, x, "expand: size %lld of axis %d is negative (-1 keeps the axis)", (long long)v[k], k);
    if (!bcast && v[k] != -1 && v[k] != ext[k])
      return dyn_fail_tv(d, x, "expand: axis %d of %s is not a broadcast axis and cannot expand from %lld to %lld", k,
                         TV(x)->display_name, (long long)ext[k], (long long)v[k]);
    give_extent(d, e, k, v[k] == -1 ? ext[k] : v[k]);
  }
  return s;
}

static cf_status slice_params(Dyn *d, Expr *e, const int64_t *v) {
  Val *x = e->in[0];
  int64_t ext[CF_MAX_RANK];
  int n;
  cf_status s = operand_extents(d, x, ext, &n);
  for (int k = 0; !s && k < n; k++) {
    int64_t step = v[2 * n + k], a = ir_py_bound(v[k], ext[k]), b = ir_py_bound(v[n + k], ext[k]);
    if (step < 1) return dyn_fail_tv(d, x, "slice: step %lld of axis %d is not positive", (long long)step, k);
    put(d, a);
    put(d, step);
    give_extent(d, e, k, b > a ? (b - a - 1) / step + 1 : 0); /* no overflow for a huge step */
  }
  return s;
}

static cf_status op_params(Dyn *d, Expr *e) {
  int64_t v[3 * CF_MAX_RANK];
  int first = e->nin - e->ndyn;
  if (e->op == OP_FULL) { /* cf_tv_size */
    cf_status s = value_of(d, e->out[0], e->out[0], &v[0]);
    if (!s) put(d, v[0]);
    return s;
  }
  for (int i = 0; i < e->ndyn; i++) {
    cf_status s = value_of(d, e->in[first + i], e->out[0], &v[i]);
    if (s) return s;
  }
  if (e->op == OP_RESHAPE) return reshape_params(d, e, v);
  if (e->op == OP_EXPAND) return expand_params(d, e, v);
  if (e->op == OP_SLICE) return slice_params(d, e, v);
  if (e->op == OP_IOTA && v[0] < 0)
    return dyn_fail(d, "iota: length %lld of %s is negative", (long long)v[0], TV(e->out[0])->display_name);
  if (e->op == OP_IOTA) return give_extent(d, e, 0, v[0]), CF_OK;
  return dyn_fail(d, "internal error: %s has sizes given at run time; please report this bug", ir_op_name(e->op));
}

/* Walks f's dynamic ops for a call; exprs receives them when non-NULL. */
static cf_status walk(Dyn *d, Arena *scratch, Expr ***dyn_exprs, int *ndyn) {
  d->bind.ids = malloc(sizeof(int) * (size_t)(d->f->vals.len + 1));
  d->bind.values = malloc(sizeof(int64_t) * (size_t)(d->f->vals.len + 1));
  int n = 0;
  Expr **exprs = ir_fusion_tensor_exprs_in(scratch, d->f, &n);
  if (!d->bind.ids || !d->bind.values || !exprs) return dyn_fail(d, "out of memory");
  cf_status s = bind_inputs(d);
  *ndyn = 0;
  for (int i = 0; !s && i < n; i++)
    if (ir_expr_is_dynamic(exprs[i])) {
      s = op_params(d, exprs[i]);
      if (dyn_exprs) (*dyn_exprs)[(*ndyn)++] = exprs[i];
    }
  return s;
}

cf_status ir_dynamic_params(cf_fusion *f, const DLTensor *const *in, int64_t *out, int cap, int *n, char *msg,
                            size_t msglen) {
  Dyn d = {.f = f, .in = in, .msg = msg, .msglen = msglen, .out = out, .cap = cap};
  Arena *scratch = arena_create();
  int ndyn = 0;
  cf_status s = scratch ? walk(&d, scratch, NULL, &ndyn) : dyn_fail(&d, "out of memory");
  free(d.bind.ids);
  free(d.bind.values);
  arena_destroy(scratch);
  *n = d.n;
  return s;
}

/* ---- the concrete copy ------------------------------------------------------------------ */

static void make_const(Val *s, int64_t v) {
  SC(s)->is_const = true;
  SC(s)->i = v;
  SC(s)->sym_name = NULL;
}

/* e made static from its parameters p (as op_params put them). */
static void rewrite(cf_fusion *g, Expr *e, const int64_t *p) {
  if (e->op == OP_FULL) {
    e->attr.full.ivalue = p[0];
    e->attr.full.value = (double)p[0];
    e->attr.full.extent = NULL;
    return;
  }
  TensorView *o = TV(e->out[0]);
  for (int k = 0; k < o->nlogical; k++) {
    Val *ext = ID(o->logical[k])->extent;
    int64_t v = e->op == OP_SLICE ? p[3 * k + 2] : p[k];
    if (e->op == OP_SLICE) {
      make_const(e->attr.slice.start[k], p[3 * k]); /* the copy's own constant (cf_slice_dynamic made one per axis) */
      e->attr.slice.step[k] = p[3 * k + 1];
      e->attr.slice.resized[k] = true;
    }
    if (!ir_scalar_is_const(ext) && !ext->def && !SC(ext)->input_tv) make_const(ext, v);
  }
  for (int i = e->nin - e->ndyn; i < e->nin; i++) { /* the size operands: no longer read */
    Val *s = e->in[i];
    for (int u = 0; u < s->uses.len; u++)
      if (s->uses.items[u] == e) s->uses.items[u] = s->uses.items[--s->uses.len], u--;
  }
  e->nin -= e->ndyn;
  e->ndyn = 0;
  (void)g;
}

/* The number of parameter words e put (op_params). */
static int nparams(Expr *e) {
  if (e->op == OP_FULL) return 1;
  return e->op == OP_SLICE ? 3 * TV(e->out[0])->nlogical : TV(e->out[0])->nlogical;
}

cf_fusion *ir_concretize(cf_fusion *f, const DLTensor *const *in, const char *what) {
  cf_fusion *g = cf_fusion_copy(f);
  if (!g || g->status) return g;
  char msg[1024] = "";
  int cap = 64;
  int64_t *p = NULL;
  Dyn d = {.f = g, .in = in, .msg = msg, .msglen = sizeof msg};
  Arena *scratch = arena_create();
  Expr **dyn = scratch ? ARENA_ARRAY(scratch, Expr *, g->exprs.len + 1) : NULL;
  int ndyn = 0;
  cf_status s = CF_OK;
  for (;;) { /* twice at most: once more with room for every parameter */
    free(p);
    p = malloc(sizeof(int64_t) * (size_t)cap);
    d.out = p, d.cap = cap, d.n = 0, d.bind.n = 0;
    free(d.bind.ids);
    free(d.bind.values);
    s = p && dyn ? walk(&d, scratch, &dyn, &ndyn) : dyn_fail(&d, "out of memory");
    if (s || d.n <= cap) break;
    cap = d.n;
  }
  if (s) ir_error(g, s, "%s: %s", what, msg);
  for (int i = 0, at = 0; !s && i < ndyn; at += nparams(dyn[i]), i++) rewrite(g, dyn[i], p + at);
  free(p);
  free(d.bind.ids);
  free(d.bind.values);
  arena_destroy(scratch);
  return g;
}
