/* ir/eval_index.c: the reference evaluator of the indexed ops (OPK_INDEXED: gather,
 * take_along_axis, scatter, the scans), called by ir/eval.c with the operands' host tensors
 * and the dense row-major output it allocated.
 *
 * Key decisions, the semantics every backend follows: an index is read as int64, a
 * negative one counts from the end of the axis, and one still outside it is an error
 * naming the op, the tensor and the element (torch raises; kernels, which cannot, clamp);
 * scatter copies x, then writes src over it in index's row-major order, so where several
 * elements name one position the last along the axis wins (what the kernels compute);
 * a scan (cumsum, cumprod, cummax, cummin: IR_SCAN_TABLE) folds its reduction's combine in
 * index order in the accumulation dtype (float for floating dtypes but double, int64 for
 * integers, wrapping, the complex type itself for complex), from the reduction's identity, each partial result rounded to it, as
 * a kernel folding serially does: the evaluator and the kernels agree bit for bit. */
#include <stdio.h>
#include <stdlib.h>

#include "ir/dtype.h"

typedef struct IdxIo {
  const Expr *e;
  const DLTensor *const *in;
  const int64_t *const *st; /* element strides of each operand */
  DLTensor *out;
  int r, d;                 /* rank, the op's axis */
} IdxIo;

static char *msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *msg(const char *fmt, ...) {
  StrBuf b = {0};
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(&b, fmt, ap);
  va_end(ap);
  return sb_take(&b);
}

static const char *name_of(const Expr *e, int j) { return TV(e->in[j])->display_name; }

/* The offset in operand j of the element at coordinates c (a size-1 axis reads 0). */
static int64_t offset(const IdxIo *io, int j, const int64_t *c) {
  int64_t off = 0;
  for (int a = 0; a < io->r; a++) off += (io->in[j]->shape[a] == 1 ? 0 : c[a]) * io->st[j][a];
  return off;
}

static IrElem load(const IdxIo *io, int j, const int64_t *c) {
  return ir_dl_load(io->in[j], offset(io, j, c), io->e->in[j]->dtype);
}

/* The position index value v names along an axis of extent n, or an error. */
static char *position(const IdxIo *io, int64_t v, int64_t n, int64_t at, int64_t *p) {
  *p = v < 0 ? v + n : v;
  if (*p >= 0 && *p < n) return NULL;
  return msg("%s: index %lld is out of range for axis %d of %s (extent %lld), at element %lld of %s",
             ir_op_name(io->e->op), (long long)v, io->d, name_of(io->e, 0),
             (long long)n, (long long)at, name_of(io->e, 1));
}

/* Operand j's extents against operand `big`'s: at most as large (all axes, or all but the
 * op's). */
static char *fits(const IdxIo *io, int j, int big, bool skip_axis) {
  for (int a = 0; a < io->r; a++)
    if ((!skip_axis || a != io->d) && io->in[j]->shape[a] > io->in[big]->shape[a])
      return msg("%s: axis %d has extent %lld in %s but %lld in %s; it must be at most as large", ir_op_name(io->e->op),
                 a, (long long)io->in[j]->shape[a], name_of(io->e, j), (long long)io->in[big]->shape[a],
                 name_of(io->e, big));
  return NULL;
}

/* The axes an operand pairs with the output's (equal extents but where the operand
 * broadcasts): symbolic extents were assumed equal when the op was built. */
static char *paired(const IdxIo *io) {
  for (int j = 0; j < io->e->nin; j++) {
    const TensorView *t = TV(io->e->in[j]);
    for (int i = 0, a = 0; i < t->nlogical && a < io->r; i++) {
      if (ID(t->logical[i])->iter_type == CF_ITER_REDUCTION) continue;
      bool bcast = ID(t->logical[i])->iter_type == CF_ITER_BROADCAST;
      if (!bcast && !ir_unpaired_axis(io->e, j, a) && io->in[j]->shape[a] != io->out->shape[a])
        return msg("%s: axis %d has extent %lld in %s but %lld in %s", ir_op_name(io->e->op), a,
                   (long long)io->in[j]->shape[a], t->display_name, (long long)io->out->shape[a],
                   TV(io->e->out[0])->display_name);
      a++;
    }
  }
  return NULL;
}

static bool next(int64_t *c, const int64_t *shape, int r) {
  for (int a = r - 1; a >= 0; a--) {
    if (++c[a] < shape[a]) return true;
    c[a] = 0;
  }
  return false;
}

static int64_t numel(const int64_t *shape, int r) {
  int64_t n = 1;
  for (int a = 0; a < r; a++) n *= shape[a];
  return n;
}

/* gather and take_along_axis: out[c] = x[c with the axis at index[c]]. */
static char *run_lookup(const IdxIo *io) {
  cf_dtype dt = io->e->out[0]->dtype;
  char *err = io->e->op == OP_GATHER ? fits(io, 1, 0, true) : NULL;
  int64_t c[CF_MAX_RANK] = {0}, n = numel(io->out->shape, io->r), p;
  if (!err && n > 0 && io->in[0]->shape[io->d] == 0)
    err = msg("%s: axis %d of %s has extent 0; there is nothing to look up", ir_op_name(io->e->op), io->d,
              name_of(io->e, 0));
  for (int64_t i = 0; !err && i < n; i++, next(c, io->out->shape, io->r)) {
    if ((err = position(io, load(io, 1, c).i, io->in[0]->shape[io->d], i, &p))) break;
    int64_t keep = c[io->d];
    c[io->d] = p;
    IrElem v = load(io, 0, c);
    c[io->d] = keep;
    ir_dl_store(io->out, i, dt, v, dt);
  }
  return err;
}

/* scatter: out = x, then out[c with the axis at index[c]] = src[c] for every c of index. */
static char *run_scatter(const IdxIo *io) {
  cf_dtype dt = io->e->out[0]->dtype;
  char *err = fits(io, 1, 2, false);
  if (!err) err = fits(io, 1, 0, true);
  int64_t c[CF_MAX_RANK] = {0}, n = numel(io->out->shape, io->r), m = numel(io->in[1]->shape, io->r), p;
  for (int64_t i = 0; !err && i < n; i++, next(c, io->out->shape, io->r))
    ir_dl_store(io->out, i, dt, load(io, 0, c), dt);
  for (int a = 0; a < io->r; a++) c[a] = 0;
  for (int64_t i = 0; !err && i < m; i++, next(c, io->in[1]->shape, io->r)) {
    if ((err = position(io, load(io, 1, c).i, io->out->shape[io->d], i, &p))) break;
    IrElem v = load(io, 2, c);
    int64_t at = 0;
    for (int a = 0; a < io->r; a++) at = at * io->out->shape[a] + (a == io->d ? p : c[a]);
    ir_dl_store(io->out, at, dt, v, dt);
  }
  return err;
}

/* A scan (IR_SCAN_TABLE): each element its reduction's combine folded over x up to it along
 * the axis, from the reduction's identity, in index order: the row's previous result and
 * this element, computed wide and rounded to the compute dtype at every step. */
static char *run_scan(const IdxIo *io) {
  IrOp red = ir_scan_reduction(io->e->op);
  IrEvalFn fold = ir_op_eval(ir_reduction_combine(red));
  cf_dtype dt = io->e->out[0]->dtype, ct = ir_op_compute_dtype(io->e->op, dt, dt), xt = io->e->in[0]->dtype;
  bool fl = ir_dtype_is_inexact(ct);
  /* complex folds in its own type: complex64 products in float complex, as the kernels'
   * (a part's sum in double rounds to float's sum) */
  cf_dtype wide = ir_dtype_is_complex(ct) ? ct : fl ? CF_DOUBLE : CF_INT64;
  int64_t c[CF_MAX_RANK] = {0}, n = numel(io->out->shape, io->r), inner = 1;
  for (int a = io->d + 1; a < io->r; a++) inner *= io->out->shape[a];
  IrElem *acc = malloc(sizeof(IrElem) * (size_t)(n > 0 ? n : 1));
  if (!acc) return msg("%s: out of memory", ir_op_name(io->e->op));
  for (int64_t i = 0; i < n; i++, next(c, io->out->shape, io->r)) {
    IrElem args[2] = {c[io->d] > 0 ? acc[i - inner] : ir_reduction_start(red, fl),
                      ir_elem_convert(load(io, 0, c), xt, ct)};
    acc[i] = ir_elem_convert(fold(args, wide), wide, ct);
    ir_dl_store(io->out, i, dt, acc[i], ct);
  }
  free(acc);
  return NULL;
}

char *ir_eval_indexed(const Expr *e, const DLTensor *const *in, const int64_t *const *st, DLTensor *out) {
  IdxIo io = {.e = e, .in = in, .st = st, .out = out, .r = out->ndim, .d = e->attr.indexed.axis};
  char *err = paired(&io);
  if (err) return err;
  switch (e->op) {
  case OP_GATHER:
  case OP_TAKE_ALONG_AXIS: return run_lookup(&io);
  case OP_SCATTER: return run_scatter(&io);
  default:
    if (ir_op_is_scan(e->op)) return run_scan(&io);
    return msg("%s is not an indexed op", ir_op_name(e->op));
  }
}
