/* ir/fusion.c: the Fusion container: node creation with dense ids (and removal, renumbering
 * the later expressions), inputs and outputs, the sticky error record, and the generic walks
 * every layer uses (topological order of tensor expressions, producers and consumers, a
 * TensorView's transform history).
 *
 * Key decision: errors are recorded on the fusion the first time and never overwritten,
 * as in cairo; every public entry point checks f->status first and does nothing after an
 * error, so a user can chain calls and check once. */
#include <stdlib.h>
#include <string.h>

#include "ir/dtype.h"
#include "ir/ir.h"

cf_fusion *cf_fusion_create(void) {
  cf_fusion *f = calloc(1, sizeof *f);
  if (!f) return NULL;
  f->arena = arena_create();
  if (!f->arena) {
    free(f);
    return NULL;
  }
  return f;
}

void cf_fusion_destroy(cf_fusion *f) {
  if (!f) return;
  arena_destroy(f->arena);
  free(f->error);
  free(f);
}

cf_status cf_fusion_status(const cf_fusion *f) { return f ? f->status : CF_ERR_INVALID_ARGUMENT; }
const char *cf_fusion_error(const cf_fusion *f) {
  if (!f) return "fusion is NULL";
  return f->error ? f->error : "";
}
void cf_fusion_clear_error(cf_fusion *f) {
  if (!f) return;
  free(f->error);
  f->error = NULL;
  f->status = CF_OK;
}

static cf_status record(cf_fusion *f, cf_status s, char *msg) {
  if (f->status == CF_OK) {
    f->status = s;
    f->error = msg;
  } else {
    free(msg);
  }
  return f->status;
}

static char *vformat(const char *fmt, va_list ap) {
  StrBuf b = {0};
  sb_vprintf(&b, fmt, ap);
  return sb_take(&b);
}

cf_status ir_error(cf_fusion *f, cf_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *msg = vformat(fmt, ap);
  va_end(ap);
  return record(f, s, msg);
}

cf_status ir_error_tv(cf_fusion *f, cf_status s, Val *tv, const char *fmt, ...) {
  StrBuf b = {0};
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(&b, fmt, ap);
  va_end(ap);
  sb_puts(&b, " for ");
  ir_print_tv(&b, tv);
  return record(f, s, sb_take(&b));
}

Val *ir_val_new(cf_fusion *f, ValKind kind, cf_dtype dtype) {
  Val *v = ARENA_NEW(f->arena, Val);
  if (!v) return NULL;
  v->kind = kind;
  v->dtype = dtype;
  v->fusion = f;
  v->id = f->vals.len;
  if (kind != VAL_SCALAR) v->name = f->next_name[kind]++;
  ptrvec_push(f->arena, &f->vals, v);
  return v;
}

Expr *ir_expr_new(cf_fusion *f, IrOp op, int nin, Val *const *in, int nout, Val *const *out) {
  Expr *e = ARENA_NEW(f->arena, Expr);
  if (!e) return NULL;
  e->op = op;
  e->id = f->exprs.len;
  e->nin = nin;
  e->nout = nout;
  e->in = arena_memdup(f->arena, in, sizeof(Val *) * (size_t)nin);
  e->out = arena_memdup(f->arena, out, sizeof(Val *) * (size_t)nout);
  for (int i = 0; i < nin; i++)
    if (!ptrvec_contains(&in[i]->uses, e)) ptrvec_push(f->arena, &in[i]->uses, e);
  for (int i = 0; i < nout; i++) out[i]->def = e;
  ptrvec_push(f->arena, &f->exprs, e);
  return e;
}

void ir_expr_drop(cf_fusion *f, Expr *e) {
  for (int k = 0; k < e->nin; k++) {
    Val *in = e->in[k];
    for (int i = 0; i < in->uses.len; i++)
      if (in->uses.items[i] == e) in->uses.items[i] = in->uses.items[--in->uses.len], i--;
  }
  for (int k = 0; k < e->nout; k++) e->out[k]->def = NULL;
  for (int i = e->id; i + 1 < f->exprs.len; i++) {
    f->exprs.items[i] = f->exprs.items[i + 1];
    ((Expr *)f->exprs.items[i])->id = i;
  }
  f->exprs.len--;
}

void ir_tv_replace_uses(cf_fusion *f, Val *from, Val *to) {
  for (int i = 0; i < from->uses.len; i++) {
    Expr *u = from->uses.items[i];
    for (int k = 0; k < u->nin; k++)
      if (u->in[k] == from) u->in[k] = to;
    if (!ptrvec_contains(&to->uses, u)) ptrvec_push(f->arena, &to->uses, u);
  }
  from->uses.len = 0;
  for (int o = 0; o < f->outputs.len; o++)
    if (f->outputs.items[o] == from) f->outputs.items[o] = to;
}

/* Checks shared by every public call taking (f, tv): f usable, tv non-NULL and ours. */
cf_status ir_check_tv(cf_fusion *f, const char *what, cf_tv *t) {
  if (!f) return CF_ERR_INVALID_ARGUMENT;
  if (f->status) return f->status;
  Val *v = ir_tv(t);
  if (!v) return ir_error(f, CF_ERR_INVALID_ARGUMENT, "%s: tensor is NULL", what);
  if (v->fusion != f || v->kind != VAL_TV)
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "%s: T%d belongs to another fusion", what, v->name);
  return CF_OK;
}

/* A packed tensor in global memory (an input or an output) of a constant odd innermost
 * extent: refused (a row would end inside a byte). A symbolic one is checked when run. */
static cf_status check_packed_rows(cf_fusion *f, const char *what, Val *v) {
  TensorView *t = TV(v);
  int64_t n;
  if (!ir_dtype_is_packed(v->dtype) || t->nlogical == 0 ||
      !ir_scalar_const_value(ID(t->logical[t->nlogical - 1])->extent, &n) || n % 2 == 0)
    return CF_OK;
  return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, v, "%s: T%d has dtype %s, two elements per byte, and innermost extent "
                     "%lld; it must be even", what, v->name, cf_dtype_name(v->dtype), (long long)n);
}

cf_status cf_fusion_add_input(cf_fusion *f, cf_tv *t) {
  cf_status s = ir_check_tv(f, "add_input", t);
  if (s) return s;
  Val *v = ir_tv(t);
  if (v->def)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, v,
                       "add_input: T%d is computed by an expression and cannot be an input", v->name);
  if (ir_tv_is_output(f, v))
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, v, "add_input: T%d is an output; a tensor cannot be both", v->name);
  if ((s = check_packed_rows(f, "add_input", v))) return s;
  if (!ptrvec_contains(&f->inputs, v)) ptrvec_push(f->arena, &f->inputs, v);
  TV(v)->mem = CF_MEM_GLOBAL;
  return CF_OK;
}

cf_status cf_fusion_add_output(cf_fusion *f, cf_tv *t) {
  cf_status s = ir_check_tv(f, "add_output", t);
  if (s) return s;
  Val *v = ir_tv(t);
  if (ir_tv_is_input(f, v))
    return ir_error_tv(f, CF_ERR_UNSUPPORTED, v,
                       "add_output: T%d is an input; outputs must be computed by the fusion", v->name);
  if (ir_dtype_is_welford(v->dtype))
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, v, "add_output: T%d holds Welford states; output cf_welford_avg, "
                       "cf_welford_m2 or cf_welford_n of it", v->name);
  if ((s = check_packed_rows(f, "add_output", v))) return s;
  if (!ptrvec_contains(&f->outputs, v)) ptrvec_push(f->arena, &f->outputs, v);
  TV(v)->mem = CF_MEM_GLOBAL;
  return CF_OK;
}

int cf_fusion_num_inputs(const cf_fusion *f) { return f ? f->inputs.len : 0; }
int cf_fusion_num_outputs(const cf_fusion *f) { return f ? f->outputs.len : 0; }
cf_tv *cf_fusion_input(const cf_fusion *f, int i) {
  return f && i >= 0 && i < f->inputs.len ? ir_tv_handle(f->inputs.items[i]) : NULL;
}
cf_tv *cf_fusion_output(const cf_fusion *f, int i) {
  return f && i >= 0 && i < f->outputs.len ? ir_tv_handle(f->outputs.items[i]) : NULL;
}

int cf_fusion_num_tvs(const cf_fusion *f) {
  int n = 0;
  for (int i = 0; f && i < f->vals.len; i++) n += ((Val *)f->vals.items[i])->kind == VAL_TV;
  return n;
}

cf_tv *cf_fusion_tv(const cf_fusion *f, int i) {
  for (int k = 0; f && i >= 0 && k < f->vals.len; k++) {
    Val *v = f->vals.items[k];
    if (v->kind == VAL_TV && i-- == 0) return ir_tv_handle(v);
  }
  return NULL;
}

bool ir_tv_is_input(const cf_fusion *f, const Val *tv) { return ptrvec_contains(&f->inputs, tv); }
bool ir_tv_is_output(const cf_fusion *f, const Val *tv) { return ptrvec_contains(&f->outputs, tv); }

static bool is_tensor_expr(const Expr *e) { return e && ir_op_kind(e->op) != OPK_TRANSFORM && e->nout > 0 && e->out[0]->kind == VAL_TV; }

/* Post-order DFS from the outputs: producers before consumers, in first-use order. The
 * walk is iterative, with an explicit stack of (expression, next operand) frames, so a
 * chain of a million ops does not overflow the C stack. seen: 1 entered, 2 emitted. */
typedef struct Frame {
  Expr *e;
  int next;
} Frame;

static void walk_from(Arena *a, const cf_fusion *f, Expr *root, char *seen, Frame *stack, PtrVec *order) {
  int top = 0;
  if (!is_tensor_expr(root) || root->out[0]->fusion != f || seen[root->id]) return;
  seen[root->id] = 1;
  stack[top++] = (Frame){root, 0};
  while (top > 0) {
    Frame *fr = &stack[top - 1];
    if (fr->next < fr->e->nin) {
      Val *in = fr->e->in[fr->next++];
      Expr *d = in->kind == VAL_TV ? in->def : NULL;
      if (is_tensor_expr(d) && d->out[0]->fusion == f && !seen[d->id]) {
        seen[d->id] = 1;
        stack[top++] = (Frame){d, 0};
      }
      continue;
    }
    seen[fr->e->id] = 2;
    ptrvec_push(a, order, fr->e);
    top--;
  }
}

Expr **ir_fusion_tensor_exprs_in(Arena *a, cf_fusion *f, int *n) {
  char *seen = arena_alloc(a, (size_t)f->exprs.len + 1);
  Frame *stack = ARENA_ARRAY(a, Frame, f->exprs.len + 1);
  PtrVec order = {0};
  for (int i = 0; seen && stack && i < f->outputs.len; i++)
    walk_from(a, f, ((Val *)f->outputs.items[i])->def, seen, stack, &order);
  *n = order.len;
  if (!seen || !stack) return NULL;
  return order.items ? (Expr **)order.items : ARENA_ARRAY(a, Expr *, 1); /* none: an empty list */
}

Expr **ir_fusion_tensor_exprs(cf_fusion *f, int *n) { return ir_fusion_tensor_exprs_in(f->arena, f, n); }

/* Linear: membership is a byte per Val id, not a search of the list so far. */
static void push_tv_once(Arena *a, PtrVec *tvs, char *in_list, Val *tv) {
  if (in_list[tv->id]) return;
  in_list[tv->id] = 1;
  ptrvec_push(a, tvs, tv);
}

Val **ir_fusion_all_tvs_in(Arena *a, cf_fusion *f, int *n) {
  int ne;
  Expr **exprs = ir_fusion_tensor_exprs_in(a, f, &ne);
  PtrVec tvs = {0};
  char *in_list = arena_alloc(a, (size_t)f->vals.len + 1);
  *n = 0;
  if (!in_list) return NULL;
  for (int i = 0; i < f->inputs.len; i++) push_tv_once(a, &tvs, in_list, f->inputs.items[i]);
  for (int i = 0; i < ne; i++) {
    for (int j = 0; j < exprs[i]->nin; j++)
      if (exprs[i]->in[j]->kind == VAL_TV) push_tv_once(a, &tvs, in_list, exprs[i]->in[j]);
    for (int j = 0; j < exprs[i]->nout; j++) push_tv_once(a, &tvs, in_list, exprs[i]->out[j]);
  }
  for (int i = 0; i < f->outputs.len; i++) push_tv_once(a, &tvs, in_list, f->outputs.items[i]);
  *n = tvs.len;
  if (!exprs) return NULL;
  return tvs.items ? (Val **)tvs.items : ARENA_ARRAY(a, Val *, 1); /* none: an empty list */
}

Val **ir_fusion_all_tvs(cf_fusion *f, int *n) { return ir_fusion_all_tvs_in(f->arena, f, n); }

Val **ir_tv_consumers(cf_fusion *f, Val *tv, int *n) {
  PtrVec out = {0};
  for (int i = 0; i < tv->uses.len; i++) {
    Expr *e = tv->uses.items[i];
    if (!is_tensor_expr(e)) continue;
    for (int j = 0; j < e->nout; j++)
      if (!ptrvec_contains(&out, e->out[j])) ptrvec_push(f->arena, &out, e->out[j]);
  }
  *n = out.len;
  return (Val **)out.items;
}

Val **ir_tv_producers(cf_fusion *f, Val *tv, int *n) {
  PtrVec out = {0};
  Expr *e = tv->def;
  if (e)
    for (int j = 0; j < e->nin; j++)
      if (e->in[j]->kind == VAL_TV && !ptrvec_contains(&out, e->in[j])) ptrvec_push(f->arena, &out, e->in[j]);
  *n = out.len;
  return (Val **)out.items;
}

static bool in_domain(Val *const *dom, int n, const Val *id) {
  for (int i = 0; i < n; i++)
    if (dom[i] == id) return true;
  return false;
}

static void visit_history(Arena *a, Val *tv, Val *id, PtrVec *seen, PtrVec *order) {
  TensorView *t = TV(tv);
  Expr *e = id->def;
  if (!e || ir_op_kind(e->op) != OPK_TRANSFORM) return;
  /* Histories start at the root: an rfactor tensor's logical domain derives from it. */
  if (in_domain(t->root, t->nroot, id)) return;
  if (ptrvec_contains(seen, e)) return;
  ptrvec_push(a, seen, e);
  for (int i = 0; i < e->nin; i++) visit_history(a, tv, e->in[i], seen, order);
  ptrvec_push(a, order, e);
}

Expr **ir_tv_history_in(Arena *a, Val *tv, int *n) {
  PtrVec seen = {0}, order = {0};
  TensorView *t = TV(tv);
  for (int i = 0; i < t->nloop; i++) visit_history(a, tv, t->loop[i], &seen, &order);
  for (int i = 0; t->alloc && i < t->nalloc; i++) visit_history(a, tv, t->alloc[i], &seen, &order);
  *n = order.len;
  return (Expr **)order.items;
}

Expr **ir_tv_history(cf_fusion *f, Val *tv, int *n) { return ir_tv_history_in(f->arena, tv, n); }

Expr **ir_tv_root_to_logical(Arena *a, Val *tv, int *n) {
  PtrVec seen = {0}, order = {0};
  TensorView *t = TV(tv);
  for (int i = 0; t->root != t->logical && i < t->nlogical; i++) visit_history(a, tv, t->logical[i], &seen, &order);
  *n = order.len;
  return (Expr **)order.items;
}

Val **ir_tv_alloc_domain(Val *tv, int *n) {
  TensorView *t = TV(tv);
  if (t->alloc) {
    *n = t->nalloc;
    return t->alloc;
  }
  *n = t->nlogical;
  return t->logical;
}

int ir_wrap_axis(int axis, int n) {
  if (axis < 0) axis += n;
  return axis >= 0 && axis < n ? axis : -1;
}

