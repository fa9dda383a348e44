/* scheduler/reduction_plan.c: what the reduction scheduler accepts and the shape its
 * heuristic reads (sched_reduction_shape), the first of its three steps (see
 * reduction_heuristic.h).
 * Accepted: elementwise ops (set, unary, binary, ternary, cast), broadcasts before the
 * reduction (a bias, a scale, a scalar brought to its shape) and exactly one reduction
 * (sum, max, min, prod, Welford) of any axes; outputs the reduction or an
 * elementwise epilogue on the reduced shape computed from it alone (Welford's fields,
 * var_mean's division), which runs after the block (or grid) reduction. Anything else is
 * refused with the reason.
 * The layout: INNER when the innermost axis of extent other than 1 is reduced (the kept
 * axes move first), OUTER when it is kept (the reduced axes move first); the sizes come
 * from the fusion's constants and, for symbolic extents, from the call's inputs.
 * Key decision: axes of extent 1 do not decide the layout (a [rows, 1] sum is a full
 * reduction of each column, read as a row), since moving them changes no address;
 * broadcast axes (a constant 1) are kept axes like the others, merged with them. The
 * reorder keeps the kept axes in their order: rfactor makes the reduction's logical domain
 * its loop order, so the output's shape would change otherwise. */
#include <stdlib.h>

#include "scheduler/persistent.h"
#include "scheduler/reduction_heuristic.h"

#define WHY(...) (snprintf(why, SCHED_WHY_MAX, "reduction: " __VA_ARGS__), false)

/* The reduction output, or NULL with the reason in why. */
static Val *find_reduction(cf_fusion *f, char *why) {
  int n;
  Expr **exprs = ir_fusion_tensor_exprs(f, &n);
  Val *red = NULL;
  for (int i = 0; i < n; i++) {
    if (ir_op_kind(exprs[i]->op) == OPK_REDUCTION) {
      if (red) {
        (void)WHY("%s is a second reduction", TV(exprs[i]->out[0])->display_name);
        return NULL;
      }
      red = exprs[i]->out[0];
    } else if (!sched_elementwise(exprs[i]) && ir_op_kind(exprs[i]->op) != OPK_BROADCAST) {
      (void)WHY("%s is computed by %s, not an elementwise op or a broadcast", TV(exprs[i]->out[0])->display_name,
                ir_op_name(exprs[i]->op));
      return NULL;
    }
  }
  if (!red) (void)WHY("the fusion has no reduction");
  return red;
}

static int kept_rank(Val *tv) {
  int n = 0;
  for (int a = 0; a < TV(tv)->nlogical; a++) n += ID(TV(tv)->logical[a])->iter_type != CF_ITER_REDUCTION;
  return n;
}

/* The outputs: the reduction alone, or an epilogue of elementwise ops on the reduced
 * shape that reads only the reduction and tensors computed from it (Welford's fields and
 * var_mean's division: the states themselves cannot be outputs). */
static bool check_outputs(cf_fusion *f, Val *red, char *why) {
  int n;
  Expr **exprs = ir_fusion_tensor_exprs(f, &n);
  bool *after = calloc((size_t)f->vals.len + 1, 1);
  if (!after) return WHY("out of memory");
  after[red->id] = true;
  bool ok = true;
  for (int i = 0; i < n && ok; i++) {
    Expr *e = exprs[i];
    bool reads = false, other = false;
    for (int j = 0; j < e->nin; j++)
      if (e->in[j]->kind == VAL_TV) after[e->in[j]->id] ? (reads = true) : (other = true);
    if (!reads || e->out[0] == red) continue;
    if (ir_op_kind(e->op) == OPK_BROADCAST) {
      free(after);
      return WHY("%s broadcasts a result of the reduction %s (a normalization)", TV(e->out[0])->display_name,
                 TV(red)->display_name);
    }
    after[e->out[0]->id] = true;
    ok = !other && kept_rank(e->out[0]) == kept_rank(red);
  }
  for (int o = 0; o < f->outputs.len && ok; o++) ok = after[((Val *)f->outputs.items[o])->id];
  free(after);
  if (!ok) return WHY("the outputs must be the reduction %s or computed from it alone", TV(red)->display_name);
  return true;
}

/* ---- sizes ------------------------------------------------------------------------------ */

/* The call's sizes of the fusion inputs' symbolic extents, as scalar bindings (arrays
 * malloc'd; n = 0 without a call). */
static bool call_bindings(cf_fusion *f, const SchedCall *call, ScalarBindings *b) {
  *b = (ScalarBindings){0, NULL, NULL};
  if (!call || !call->inputs || call->ninputs != f->inputs.len) return true;
  int total = 0;
  for (int i = 0; i < f->inputs.len; i++) total += TV((Val *)f->inputs.items[i])->nlogical;
  b->ids = malloc(sizeof *b->ids * (size_t)(total + 1));
  b->values = malloc(sizeof *b->values * (size_t)(total + 1));
  if (!b->ids || !b->values) return free(b->ids), free(b->values), false;
  for (int i = 0; i < f->inputs.len; i++) {
    Val *in = f->inputs.items[i];
    const DLTensor *t = call->inputs[i];
    for (int a = 0; t && a < TV(in)->nlogical && a < t->ndim; a++) {
      b->ids[b->n] = ID(TV(in)->logical[a])->extent->id;
      b->values[b->n++] = t->shape[a];
    }
  }
  return true;
}

/* An axis' extent in this call; -1 when unknown (symbolic, no call). */
static int64_t extent_of(Val *id, const ScalarBindings *b) {
  int64_t v;
  return ir_scalar_eval(ID(id)->extent, b, &v, NULL) ? v : -1;
}

/* Product of known extents; -1 when one is unknown. */
static int64_t numel_mul(int64_t acc, int64_t e) { return acc < 0 || e < 0 ? -1 : acc * e; }

/* ---- layout ----------------------------------------------------------------------------- */

/* The innermost axis of extent other than 1 (unknown counts as other), or -1. */
static int innermost_axis(Val *red, const int64_t *ext) {
  for (int a = TV(red)->nlogical - 1; a >= 0; a--)
    if (ext[a] != 1) return a;
  return -1;
}

/* Fills the layout, order and numels. */
static void layout_of(Val *red, const int64_t *ext, RedShape *s) {
  int n = TV(red)->nlogical, inner = innermost_axis(red, ext);
  s->rank = n;
  s->layout = inner < 0 || ID(TV(red)->logical[inner])->iter_type == CF_ITER_REDUCTION ? RED_INNER : RED_OUTER;
  bool first_reduced = s->layout == RED_OUTER;
  s->nkept = kept_rank(red);
  s->iter = s->red = 1;
  int first = 0, second = first_reduced ? n - s->nkept : s->nkept;
  s->reordered = false;
  for (int a = 0; a < n; a++) {
    bool r = ID(TV(red)->logical[a])->iter_type == CF_ITER_REDUCTION;
    s->order[a] = (int8_t)(r == first_reduced ? first++ : second++);
    s->reordered |= s->order[a] != a;
    if (r) s->red = numel_mul(s->red, ext[a]);
    else s->iter = numel_mul(s->iter, ext[a]);
  }
  s->inner = inner < 0 ? 1 : ext[inner];
}

/* ---- the inputs --------------------------------------------------------------------------- */

static bool contiguous_inputs(cf_fusion *f, const SchedCall *call) {
  bool have_call = call && call->inputs && call->ninputs == f->inputs.len;
  for (int i = 0; i < f->inputs.len; i++) {
    Val *in = f->inputs.items[i];
    if (TV(in)->has_strides || (have_call && call->inputs[i] && !sched_dl_contiguous(call->inputs[i]))) return false;
  }
  return true;
}

static void read_inputs(cf_fusion *f, RedShape *s) {
  s->elem_bytes = 1;
  s->ninputs = 0;
  for (int i = 0; i < f->inputs.len; i++) {
    Val *in = f->inputs.items[i];
    if (in->uses.len == 0) continue;
    s->ninputs++;
    if ((int)cf_dtype_size(in->dtype) > s->elem_bytes) s->elem_bytes = (int)cf_dtype_size(in->dtype);
  }
  if (s->ninputs == 0) s->ninputs = 1;
}

bool sched_reduction_shape(cf_fusion *f, const SchedCall *call, RedShape *s, char *why) {
  *s = (RedShape){0};
  Val *red = find_reduction(f, why);
  if (!red || !check_outputs(f, red, why)) return false;
  int n = TV(red)->nlogical;
  if (n > CF_MAX_RANK) return WHY("%s has %d axes, more than %d", TV(red)->display_name, n, CF_MAX_RANK);
  ScalarBindings b;
  if (!call_bindings(f, call, &b)) return WHY("out of memory");
  int64_t ext[CF_MAX_RANK];
  for (int a = 0; a < n; a++) ext[a] = extent_of(TV(red)->logical[a], &b);
  free(b.ids), free(b.values);
  layout_of(red, ext, s);
  int inner = innermost_axis(red, ext);
  int64_t c;
  /* The vector axis is the last one (no contiguity across a trailing 1 is proven), and
   * stays the innermost part of its merged group after the reorder, so a vector that
   * divides its extent is contiguous. */
  s->can_vectorize = inner == n - 1 && ir_scalar_const_value(ID(TV(red)->logical[inner])->extent, &c) &&
                     contiguous_inputs(f, call);
  read_inputs(f, s);
  return true;
}
