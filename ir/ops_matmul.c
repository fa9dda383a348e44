/* ir/ops_matmul.c: torch.matmul and torch.nn.functional.linear as composites of ops the IR
 * already has: each operand broadcast to the rank of a product over (batch..., M, K, N)
 * (matmul) or (batch..., M, N, K) (linear) and then cast to the accumulation dtype, a mul,
 * a sum over K, the bias added to the accumulator, one cast back to the operands' dtype.
 *
 * Key decision (recorded in docs/architecture.md): no MMA op kind. nvFuser's MmaOp is made
 * by its scheduler from this very pattern (a sum of a mul of two broadcast operands), and
 * a composite is computed by the evaluator, lowered, segmented and scheduled by every
 * existing pass; the matmul scheduler (scheduler/matmul_sched.c) recognizes the pattern
 * (ir_matmul_match) and tiles it. Operand dtypes follow torch: both operands of one
 * floating dtype; half and bfloat16 accumulate in float, float in float, double in double;
 * the result has the operands' dtype. Shapes follow torch.matmul: a 1-D operand is a vector
 * (its missing M or N axis is simply absent from the product), batch axes broadcast
 * numpy-style. Extents that are constant are checked here, with errors naming both
 * tensors and the axes; symbolic ones are checked at run time by the mul's extent check. */
#include <stdlib.h>

#include "ir/dtype.h"
#include "ir/ops_util.h"

/* The dtype a matmul of operands of dtype dt accumulates in. */
static cf_dtype acc_dtype(cf_dtype dt) { return dt == CF_DOUBLE ? CF_DOUBLE : CF_FLOAT; }

/* Records "<what>: <msg> (<x's domain> and <y's domain>)"; returns NULL. */
static void *pair_error(cf_fusion *f, const char *what, Val *x, Val *y, const char *msg) {
  char *sx = ir_tv_str(x), *sy = ir_tv_str(y);
  ir_error(f, CF_ERR_INVALID_ARGUMENT, "%s: %s (%s and %s)", what, msg, sx ? sx : "?", sy ? sy : "?");
  free(sx);
  free(sy);
  return NULL;
}

/* Checks the operands' dtypes (one floating dtype) and ranks (at least one axis). */
static bool check_operands(cf_fusion *f, const char *what, Val *x, int nx, Val *y, int ny) {
  Val *t[2] = {x, y};
  int n[2] = {nx, ny};
  for (int i = 0; i < 2; i++) {
    if (!ir_dtype_is_float(t[i]->dtype) || cf_dtype_size(t[i]->dtype) < 2) /* no 8-bit float mma here */
      return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, t[i], "%s: %s has dtype %s, but %s takes floating-point "
                         "operands (half, bfloat16, float, double)", what, TV(t[i])->display_name,
                         cf_dtype_name(t[i]->dtype), what), false;
    if (n[i] == 0)
      return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, t[i], "%s: %s is 0-d; both operands need at least 1 axis", what,
                         TV(t[i])->display_name), false;
  }
  if (x->dtype != y->dtype) {
    char msg[200];
    snprintf(msg, sizeof msg, "%s has dtype %s but %s has dtype %s; cast one first (both operands must have one "
             "dtype, as torch requires)", TV(x)->display_name, cf_dtype_name(x->dtype), TV(y)->display_name,
             cf_dtype_name(y->dtype));
    return pair_error(f, what, x, y, msg), false;
  }
  return true;
}

/* Checks that axis ix of x and axis iy of y (both `role`, e.g. "K") may be equal. */
static bool check_extent(cf_fusion *f, const char *what, const char *role, Val *x, Val **ax, int ix, Val *y,
                         Val **ay, int iy) {
  Val *ex = ID(ax[ix])->extent, *ey = ID(ay[iy])->extent;
  if (ir_op_extents_compatible(ex, ey)) return true;
  char msg[200];
  snprintf(msg, sizeof msg, "%s's axis %d (%s) has extent %lld but %s's axis %d (%s) has extent %lld",
           TV(x)->display_name, ix, role, (long long)SC(ex)->i, TV(y)->display_name, iy, role, (long long)SC(ey)->i);
  return pair_error(f, what, x, y, msg), false;
}

/* Checks the batch axes: x's nbx leading axes against y's nby, aligned on the right;
 * extents equal or one of them a broadcast (size 1). */
static bool check_batch(cf_fusion *f, const char *what, Val *x, Val **ax, int nbx, Val *y, Val **ay, int nby) {
  for (int k = 1; k <= nbx && k <= nby; k++) {
    int ix = nbx - k, iy = nby - k;
    if (ID(ax[ix])->iter_type == CF_ITER_BROADCAST || ID(ay[iy])->iter_type == CF_ITER_BROADCAST) continue;
    if (!check_extent(f, what, "batch", x, ax, ix, y, ay, iy)) return false;
  }
  return true;
}

/* tv cast to dt (no op when it has that dtype already). */
static cf_tv *cast_to(cf_fusion *f, Val *tv, cf_dtype dt) {
  return tv->dtype == dt ? ir_tv_handle(tv) : cf_cast(f, ir_tv_handle(tv), dt);
}

/* tv (n op axes) broadcast to the product's rank (leading batch axes, and one axis at
 * position pos of its own axes when pos >= 0), then cast to dt. Broadcast first: every
 * tensor of the prologue then has all the product's axes, so a schedule can inline the
 * read of the input into the operand tile position by position. */
static cf_tv *operand(cf_fusion *f, Val *tv, int n, int pos, int rank, cf_dtype dt) {
  cf_tv *c = ir_tv_handle(tv);
  if (rank > CF_MAX_RANK)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "%s: the product of %s has %d axes, past cfuser's %d",
                       "matmul", TV(tv)->display_name, rank, CF_MAX_RANK), NULL;
  if (rank > n) {
    bool bc[CF_MAX_RANK] = {false};
    int lead = rank - n - (pos >= 0);
    for (int k = 0; k < rank; k++) bc[k] = k < lead || (pos >= 0 && k == lead + pos);
    c = cf_broadcast(f, c, rank, bc);
  }
  return c ? cast_to(f, ir_tv(c), dt) : NULL;
}

/* sum(p, axis) in acc, plus bias (NULL: none) in acc, cast once to out. */
static cf_tv *finish(cf_fusion *f, cf_tv *p, int axis, Val *bias, cf_dtype acc, cf_dtype out) {
  cf_tv *r = p ? cf_sum(f, p, 1, &axis) : NULL;
  if (r && bias) r = cf_add(f, r, cast_to(f, bias, acc));
  return r && acc != out ? cf_cast(f, r, out) : r;
}

/* The two tensor operands of `what` (named n0, n1), their op axes and their counts,
 * checked (check_operands); false after recording the error. */
typedef struct MmArgs {
  Val *t[2];
  Val **ax[2];
  int n[2];
} MmArgs;

static bool two_operands(cf_fusion *f, const char *what, const char *n0, cf_tv *a, const char *n1, cf_tv *b,
                         MmArgs *o) {
  o->t[0] = ir_op_arg(f, what, 1, n0, a);
  o->t[1] = o->t[0] ? ir_op_arg(f, what, 2, n1, b) : NULL;
  if (!o->t[1]) return false;
  for (int i = 0; i < 2; i++)
    if (!(o->ax[i] = ir_op_axes(f, o->t[i], &o->n[i]))) return ir_op_oom(f, what), false;
  return check_operands(f, what, o->t[0], o->n[0], o->t[1], o->n[1]);
}

cf_tv *cf_matmul(cf_fusion *f, cf_tv *a, cf_tv *b) {
  MmArgs o;
  if (!f || f->status || !two_operands(f, "matmul", "a", a, "b", b, &o)) return NULL;
  Val *x = o.t[0], *y = o.t[1], **ax = o.ax[0], **ay = o.ax[1];
  int na = o.n[0], nb = o.n[1];
  bool has_m = na >= 2, has_n = nb >= 2;
  int kb = has_n ? nb - 2 : 0; /* b's K axis */
  if (!check_extent(f, "matmul", "K", x, ax, na - 1, y, ay, kb)) return NULL;
  int bx = has_m ? na - 2 : 0, by = has_n ? nb - 2 : 0; /* batch axes */
  if (!check_batch(f, "matmul", x, ax, bx, y, ay, by)) return NULL;
  cf_dtype acc = acc_dtype(x->dtype);
  /* a: [batch, M?, K] -> [batch, M?, K, 1?]; b: [batch, K, N?] -> [batch, 1?, K, N?] */
  int rank = (bx > by ? bx : by) + has_m + 1 + has_n;
  cf_tv *pa = operand(f, x, na, has_n ? na : -1, rank, acc);
  cf_tv *pb = pa ? operand(f, y, nb, has_m ? by : -1, rank, acc) : NULL;
  int k = rank - 1 - has_n; /* K's position in the product */
  return finish(f, pb ? cf_mul(f, pa, pb) : NULL, k, NULL, acc, x->dtype);
}

/* The bias of linear: none, 0-d, or 1-D of w's N extent (n: w has an N axis). */
static bool check_bias(cf_fusion *f, Val *bias, Val *w, Val **aw, bool n) {
  int nbias;
  Val **ab = ir_op_axes(f, bias, &nbias);
  if (!ab) return ir_op_oom(f, "linear"), false;
  if (bias->dtype != w->dtype) {
    char msg[200];
    snprintf(msg, sizeof msg, "bias %s has dtype %s but weight %s has dtype %s; they must have one dtype",
             TV(bias)->display_name, cf_dtype_name(bias->dtype), TV(w)->display_name, cf_dtype_name(w->dtype));
    return pair_error(f, "linear", bias, w, msg), false;
  }
  if (nbias > 1 || (nbias == 1 && !n))
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, bias, "linear: bias %s is %d-D; it must be 0-d%s",
                       TV(bias)->display_name, nbias, n ? " or 1-D of the weight's N" : " (the weight is 1-D)"), false;
  return nbias == 0 || ID(ab[0])->iter_type == CF_ITER_BROADCAST ||
         check_extent(f, "linear", "N", bias, ab, 0, w, aw, 0);
}

cf_tv *cf_linear(cf_fusion *f, cf_tv *x, cf_tv *w, cf_tv *bias) {
  MmArgs o;
  if (!f || f->status || !two_operands(f, "linear", "x", x, "w", w, &o)) return NULL;
  Val *tx = o.t[0], *tw = o.t[1], **ax = o.ax[0], **aw = o.ax[1];
  int nx = o.n[0], nw = o.n[1];
  Val *tb = bias ? ir_op_arg(f, "linear", 3, "bias", bias) : NULL;
  if (bias && !tb) return NULL;
  if (nw > 2)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tw, "linear: weight %s has %d axes; it must be [N, K] or [K]",
                       TV(tw)->display_name, nw), NULL;
  bool has_n = nw == 2;
  if (!check_extent(f, "linear", "K", tx, ax, nx - 1, tw, aw, nw - 1)) return NULL;
  if (tb && !check_bias(f, tb, tw, aw, has_n)) return NULL;
  cf_dtype acc = acc_dtype(tx->dtype);
  /* x: [batch, M?, K] -> [batch, M?, 1?, K]; w: [N?, K] -> [1.., N?, K] */
  int rank = nx + has_n > nw ? nx + has_n : nw;
  cf_tv *px = operand(f, tx, nx, has_n ? nx - 1 : -1, rank, acc);
  cf_tv *pw = px ? operand(f, tw, nw, -1, rank, acc) : NULL;
  return finish(f, pw ? cf_mul(f, px, pw) : NULL, -1, tb, acc, tx->dtype);
}
