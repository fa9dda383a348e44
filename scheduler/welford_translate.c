/* scheduler/welford_translate.c: the Welford translation (sched_translate_welford), a
 * rewrite of an unscheduled segment that define and run applies before it asks the inner
 * persistent scheduler (executor/fusion_plan.c).
 *
 * A Welford reduction carries a state (mean, M2, count) through every merge, three fields
 * per shuffle of the all-reduce. When the whole row stays in registers anyway (the inner
 * persistent scheduler), two plain sums over the row cost less and are at least as
 * accurate: each Welford reduction whose states are only read by its fields becomes
 *     avg = mean(x)                     (sum(x) * 1/n, or sum(x) / n at run time)
 *     m2  = sum((x - broadcast(avg))^2)
 *     n   = the count, a constant folded into the ops that read it
 * with x cast to the state's scalar type first (half and bfloat16 accumulate in float, as
 * Welford does). The readers of avg and m2 become copies (set) of the new tensors, so the
 * tensors the rest of the fusion reads keep their names and places (outputs included).
 * The count is not a tensor any op makes without reading one, so its readers are folded:
 * a cast or a binary op with a constant right-hand side of a tensor whose every element
 * is the count is again such a tensor; an elementwise binary op reading it beside another
 * tensor becomes that op with a constant right-hand side (var_mean's
 * m2 / max(cast(n) - correction, 0) becomes m2 / max(n - correction, 0)). A count read any other way
 * (a fusion output, a comparison, a symbolic count) keeps that Welford reduction as it is.
 *
 * As a row of the registry (sched_welford_row, "welford_translate", first in the table):
 * it takes a segment when the translation applies and the inner persistent scheduler
 * takes the translated copy; its plan is that scheduler's, its apply replaces the
 * segment's copy by the translated one and schedules it.
 * Key decision: the translation works on a copy and makes a fresh copy of the result
 * (cf_fusion_copy keeps what the outputs reach), so the replaced Welford reductions and
 * the folded count chains vanish rather than linger as dead expressions with uses. It is
 * offered to the inner persistent scheduler only: elsewhere (the reduction scheduler, rows
 * longer than registers) the two-pass form would read the input from memory twice. */
#include <math.h>

#include "ir/dtype.h"
#include "scheduler/persistent.h"
#include "scheduler/registry.h"

/* A tensor whose elements all equal v, read by e: the value e's output holds (*out), or
 * false when e is not foldable. */
static bool fold_step(Expr *e, double v, double *out) {
  cf_dtype to = e->out[0]->dtype;
  if (ir_op_kind(e->op) == OPK_CAST) {
    if (ir_dtype_is_float(to)) return *out = v, true;
    return (to == CF_INT64 || to == CF_INT32) && (*out = trunc(v), true);
  }
  if (ir_op_kind(e->op) != OPK_BINARY || !e->attr.scalar_rhs.is_scalar_rhs || e->attr.scalar_rhs.val) return false;
  double b = e->attr.scalar_rhs.value;
  if (!ir_dtype_is_float(to) && (e->op == OP_DIV || b != trunc(b))) return false; /* integer semantics: keep it simple */
  switch (e->op) {
  case OP_ADD: return *out = v + b, true;
  case OP_SUB: return *out = v - b, true;
  case OP_MUL: return *out = v * b, true;
  case OP_DIV: return *out = v / b, true;
  case OP_MAX: return *out = fmax(v, b), true; /* var_mean's max(n - correction, 0) */
  case OP_MIN: return *out = fmin(v, b), true;
  default: return false;
  }
}

/* e reads the constant tensor k (all v) beside one other tensor of its output's shape:
 * the other, when e can become `other op v` with the same output dtype. */
static Val *fold_partner(Expr *e, Val *k, double v) {
  if (ir_op_kind(e->op) != OPK_BINARY || e->nin != 2 || e->in[0] == e->in[1]) return NULL;
  if (e->in[0] == k && e->op != OP_ADD && e->op != OP_MUL) return NULL; /* k on the left: commutative ops only */
  Val *other = e->in[0] == k ? e->in[1] : e->in[0], *out = e->out[0];
  if (other->kind != VAL_TV || !ir_dtype_is_float(other->dtype) || out->dtype != ir_scalar_rhs_dtype(other->dtype, v))
    return NULL;
  int n = 0;
  for (int a = 0; a < TV(other)->nlogical; a++) {
    IterDomain *id = ID(TV(other)->logical[a]);
    if (id->iter_type == CF_ITER_REDUCTION) continue;
    if (n >= TV(out)->nlogical || (id->iter_type == CF_ITER_BROADCAST) != (ID(TV(out)->logical[n])->iter_type == CF_ITER_BROADCAST))
      return NULL;
    n++;
  }
  return n == TV(out)->nlogical ? other : NULL;
}

/* Folds the count tensor k (all v) into its readers; with apply false only checks that
 * every reader folds. */
static bool fold_count(cf_fusion *g, Val *k, double v, bool apply) {
  if (ir_tv_is_output(g, k)) return false;
  for (int i = 0; i < k->uses.len; i++) {
    Expr *e = k->uses.items[i];
    double w;
    Val *other;
    if (fold_step(e, v, &w)) {
      if (!fold_count(g, e->out[0], w, apply)) return false;
    } else if ((other = fold_partner(e, k, v))) {
      if (apply) {
        e->nin = 1;
        e->in[0] = other;
        e->attr.scalar_rhs.value = v;
        e->attr.scalar_rhs.is_scalar_rhs = true;
        e->attr.scalar_rhs.val = NULL;
      }
    } else {
      return false;
    }
  }
  return true;
}

/* The reduced axes of states w (positions among the input's kept axes) and their count,
 * when constant. */
static int reduced_axes(Val *w, int *axes, bool *red, int64_t *count, bool *constant) {
  int n = 0;
  *count = 1, *constant = true;
  for (int a = 0; a < TV(w)->nlogical; a++) {
    IterDomain *id = ID(TV(w)->logical[a]);
    int64_t e;
    red[a] = id->iter_type == CF_ITER_REDUCTION;
    if (!red[a]) continue;
    axes[n++] = a;
    if (ir_scalar_const_value(id->extent, &e)) *count *= e;
    else *constant = false;
  }
  return n;
}

/* Whether the Welford reduction e can be translated: states read only by their fields, a
 * count (if read) constant and foldable. */
static bool translatable(cf_fusion *g, Expr *e) {
  Val *w = e->out[0];
  int axes[CF_MAX_RANK];
  bool red[CF_MAX_RANK], constant;
  int64_t count;
  if (ir_tv_is_output(g, w) || TV(w)->nlogical > CF_MAX_RANK) return false;
  reduced_axes(w, axes, red, &count, &constant);
  for (int i = 0; i < w->uses.len; i++) {
    Expr *u = w->uses.items[i];
    if (u->op == OP_WELFORD_N && !(constant && fold_count(g, u->out[0], (double)count, false))) return false;
    if (u->op != OP_WELFORD_AVG && u->op != OP_WELFORD_M2 && u->op != OP_WELFORD_N) return false;
  }
  return true;
}

/* Rewrites the Welford reduction e of g into two sums (the file's comment). */
static bool translate(cf_fusion *g, Expr *e) {
  Val *x = e->in[0], *w = e->out[0];
  int axes[CF_MAX_RANK];
  bool red[CF_MAX_RANK], constant;
  int64_t count;
  int nax = reduced_axes(w, axes, red, &count, &constant), rank = TV(w)->nlogical;
  cf_dtype acc = ir_welford_scalar(w->dtype);
  cf_tv *xc = x->dtype == acc ? ir_tv_handle(x) : NULL;
  for (int i = 0; i < x->uses.len && !xc; i++) { /* the fusion's own widening, if any: one register copy */
    Expr *u = x->uses.items[i];
    if (u->op == OP_CAST && u->out[0]->dtype == acc) xc = ir_tv_handle(u->out[0]);
  }
  if (!xc) xc = cf_cast(g, ir_tv_handle(x), acc);
  cf_tv *avg = cf_reduce(g, CF_REDUCE_MEAN, xc, nax, axes, false);
  cf_tv *d = cf_sub(g, xc, cf_broadcast(g, avg, rank, red));
  cf_tv *m2 = cf_sum(g, cf_mul(g, d, d), nax, axes);
  if (g->status) return false;
  for (int i = 0; i < w->uses.len; i++) {
    Expr *u = w->uses.items[i];
    if (u->op == OP_WELFORD_N) {
      /* checked by translatable(); a count read twice by one op could still refuse here,
       * and the error makes the caller keep the Welford form */
      if (!fold_count(g, u->out[0], (double)count, true))
        return ir_error(g, CF_ERR_UNSUPPORTED, "welford translation: a count read in an unfoldable way"), false;
      continue;
    }
    Val *from = ir_tv(u->op == OP_WELFORD_AVG ? avg : m2);
    u->op = OP_SET;
    u->in[0] = from;
    ptrvec_push(g->arena, &from->uses, u);
  }
  return true;
}

cf_fusion *sched_translate_welford(const cf_fusion *g) {
  bool any = false;
  for (int i = 0; i < g->exprs.len && !any; i++) any = ((Expr *)g->exprs.items[i])->op == OP_WELFORD;
  if (!any || g->status) return NULL;
  cf_fusion *t = cf_fusion_copy(g);
  if (!t || t->status) return cf_fusion_destroy(t), NULL;
  Arena *scratch = arena_create();
  int n = 0, done = 0;
  Expr **exprs = scratch ? ir_fusion_tensor_exprs_in(scratch, t, &n) : NULL;
  for (int i = 0; exprs && i < n && !t->status; i++)
    if (exprs[i]->op == OP_WELFORD && translatable(t, exprs[i])) done += translate(t, exprs[i]);
  arena_destroy(scratch);
  cf_fusion *clean = done && !t->status ? cf_fusion_copy(t) : NULL;
  cf_fusion_destroy(t);
  if (clean && clean->status) cf_fusion_destroy(clean), clean = NULL;
  return clean;
}

/* ---- the row ------------------------------------------------------------------------------ */

/* The translated copy of f that the inner persistent scheduler takes, or NULL with why. */
static cf_fusion *translated(cf_fusion *f, const SchedCall *call, char *why) {
  cf_fusion *t = sched_translate_welford(f);
  char inner[SCHED_WHY_MAX] = "";
  if (!t) {
    snprintf(why, SCHED_WHY_MAX, "welford_translate: no Welford reduction whose states only its fields read");
    return NULL;
  }
  if (sched_inner_persistent_resident(t, call, inner)) return t; /* two sums only where the rows stay on chip */
  snprintf(why, SCHED_WHY_MAX, "welford_translate: translated to two sums, but %.200s", inner);
  cf_fusion_destroy(t);
  return NULL;
}

static bool wf_plan(cf_fusion *f, const SchedCall *call, SchedParams *p, char *why) {
  cf_fusion *t = translated(f, call, why);
  *p = (SchedParams){0};
  cf_status s = t ? sched_inner_persistent_heuristic.schedule(t, call, p->text) : CF_ERR_UNSUPPORTED;
  if (t && s) snprintf(why, SCHED_WHY_MAX, "welford_translate: accepted, but its schedule failed: %.180s", cf_fusion_error(t));
  cf_fusion_destroy(t);
  return s == CF_OK;
}

static bool wf_can(cf_fusion *f, const SchedCall *call, char *why) {
  cf_fusion *t = translated(f, call, why);
  cf_fusion_destroy(t);
  return t != NULL;
}

static cf_status wf_apply(cf_fusion **f, const SchedCall *call, const SchedParams *p, SchedParams *used) {
  (void)p;
  *used = (SchedParams){0};
  cf_fusion *t = sched_translate_welford(*f);
  if (!t) return ir_error(*f, CF_ERR_UNSUPPORTED, "welford_translate: nothing to translate");
  cf_fusion_destroy(*f);
  *f = t;
  return sched_inner_persistent_heuristic.schedule(t, call, used->text);
}

/* A trial row (registry.h), as the inner persistent row it hands its copy to. */
const SchedRow sched_welford_row = {"welford_translate", SCHED_ROW_KERNEL, true, wf_can, wf_plan, wf_apply};
