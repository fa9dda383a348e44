/* scheduler/view_sched.c: the view row of the registry (sched_view_row) and the rewrite
 * that makes every reshape of define and run's copy a view (sched_prepare_views).
 * A reshape moves no data in cfuser: define and run runs a segment that is one reshape as
 * a view (executor/fusion_plan.c points the output's buffer at its input's memory at each
 * run), and lowering refuses a reshape inside a kernel. A view needs contiguous memory
 * that the cache may alias: a call input passed contiguous, or an intermediate it
 * allocates; its output must be an intermediate. The rewrite puts a copy (set, a
 * pointwise kernel) where that does not hold, so every reshape runs, at the cost of one
 * copy only where the memory could not be aliased.
 * Key decision: the rewrite works on the concrete copy of one call's signature, so a
 * contiguous call pays no copy and a strided one does (the strides are in the signature). */
#include "scheduler/registry.h"

static bool view_can(cf_fusion *f, const SchedCall *call, char *why) {
  int n;
  Expr **exprs = ir_fusion_tensor_exprs(f, &n);
  if (n != 1 || exprs[0]->op != OP_RESHAPE) {
    snprintf(why, SCHED_WHY_MAX, "view: %s", n == 1 ? "the op is not a reshape" : "a view is one reshape alone");
    return false;
  }
  Expr *e = exprs[0];
  bool in_ok = f->inputs.len == 1 && f->inputs.items[0] == e->in[0];
  bool out_ok = f->outputs.len == 1 && f->outputs.items[0] == e->out[0];
  const DLTensor *t = call && call->ninputs == 1 ? call->inputs[0] : NULL;
  if (!in_ok || !out_ok || (t && t->data && !sched_dl_contiguous(t))) {
    snprintf(why, SCHED_WHY_MAX, "view: %s = reshape(%s) reads memory that is not contiguous",
             TV(e->out[0])->display_name, TV(e->in[0])->display_name);
    return false;
  }
  return true;
}

static bool view_plan(cf_fusion *f, const SchedCall *call, SchedParams *p, char *why) {
  if (!view_can(f, call, why)) return false;
  sched_params_text(p, "no kernel");
  return true;
}

static cf_status view_apply(cf_fusion **f, const SchedCall *call, const SchedParams *p, SchedParams *used) {
  (void)f, (void)call;
  *used = *p;
  return CF_OK;
}

const SchedRow sched_view_row = {"view", SCHED_ROW_VIEW, false, view_can, view_plan, view_apply};

/* ---- the rewrite ------------------------------------------------------------------------- */

static void drop_use(Val *v, Expr *e) {
  for (int i = 0; i < v->uses.len; i++)
    if (v->uses.items[i] == e) {
      v->uses.items[i] = v->uses.items[--v->uses.len];
      return;
    }
}

/* e reads a copy of its input instead. */
static void copy_before(cf_fusion *f, Expr *e) {
  Val *x = e->in[0];
  cf_tv *y = cf_set(f, ir_tv_handle(x));
  if (!y) return;
  drop_use(x, e);
  e->in[0] = ir_tv(y);
  ptrvec_push(f->arena, &ir_tv(y)->uses, e);
}

/* Every fusion output that is e's output becomes a copy of it. */
static void copy_after(cf_fusion *f, Expr *e) {
  cf_tv *z = cf_set(f, ir_tv_handle(e->out[0]));
  for (int o = 0; z && o < f->outputs.len; o++)
    if (f->outputs.items[o] == e->out[0]) f->outputs.items[o] = ir_tv(z);
}

static int input_index(const cf_fusion *f, const Val *v) {
  for (int i = 0; i < f->inputs.len; i++)
    if (f->inputs.items[i] == v) return i;
  return -1;
}

cf_status sched_prepare_views(cf_fusion *f, const DLTensor *const *in) {
  Arena *a = arena_create();
  int n = 0;
  Expr **exprs = a ? ir_fusion_tensor_exprs_in(a, f, &n) : NULL;
  if (!a || (n && !exprs)) {
    arena_destroy(a);
    return ir_error(f, CF_ERR_OUT_OF_MEMORY, "execute: out of memory");
  }
  for (int k = 0; k < n && !f->status; k++) {
    Expr *e = exprs[k];
    if (e->op != OP_RESHAPE) continue;
    int i = input_index(f, e->in[0]);
    if (ir_tv_is_output(f, e->in[0]) || (i >= 0 && in && !sched_dl_contiguous(in[i]))) copy_before(f, e);
    if (ir_tv_is_output(f, e->out[0])) copy_after(f, e);
  }
  arena_destroy(a);
  return f->status;
}
