/* ir/scalar.c: scalar values of the IR: constants, named symbols (the symbolic extents of
 * inputs, i0, i1, ...) and the integer arithmetic that split and merge build for extents.
 *
 * Key decision: folding happens at construction. ir_scalar_op folds constants and the
 * identities x*1, x+0, x*0, ceilDiv(x, 1), x/1, x%1, so a fusion of concrete sizes never
 * holds an unevaluated expression and printed extents stay readable. Everything else is
 * evaluated by ir_scalar_eval against bindings of the symbols. */
#include <string.h>

#include "ir/ir.h"

Val *ir_const_int(cf_fusion *f, int64_t v) {
  Val *s = ir_val_new(f, VAL_SCALAR, CF_INT64);
  if (!s) return NULL;
  SC(s)->is_const = true;
  SC(s)->i = v;
  SC(s)->d = (double)v;
  return s;
}

Val *ir_const_double(cf_fusion *f, double v) {
  Val *s = ir_val_new(f, VAL_SCALAR, CF_DOUBLE);
  if (!s) return NULL;
  SC(s)->is_const = true;
  SC(s)->d = v;
  SC(s)->i = v > -9.2e18 && v < 9.2e18 ? (int64_t)v : 0; /* the cast is undefined outside */
  return s;
}

Val *ir_const_bool(cf_fusion *f, bool v) {
  Val *s = ir_val_new(f, VAL_SCALAR, CF_BOOL);
  if (!s) return NULL;
  SC(s)->is_const = true;
  SC(s)->i = v;
  SC(s)->d = v;
  return s;
}

Val *ir_scalar_symbol(cf_fusion *f, const char *name) {
  Val *s = ir_val_new(f, VAL_SCALAR, CF_INT64);
  if (!s) return NULL;
  s->name = f->next_name[VAL_SCALAR]++;
  SC(s)->sym_name = name ? arena_strdup(f->arena, name) : arena_printf(f->arena, "i%d", s->name);
  return s;
}

bool ir_scalar_is_const(const Val *v) { return v && v->kind == VAL_SCALAR && v->u.scalar.is_const; }

bool ir_scalar_const_value(const Val *v, int64_t *out) {
  if (!ir_scalar_is_const(v)) return false;
  *out = v->u.scalar.i;
  return true;
}

/* Rounds toward +infinity for every sign; extents are positive, indices may not be. */
static int64_t ceil_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return q + ((a % b != 0) && ((a < 0) == (b < 0)));
}

/* Two's-complement wrapping arithmetic: no undefined behaviour on overflow. */
static int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static int64_t wrap_sub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
static int64_t wrap_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }

/* Integer semantics of the binary ops usable on index scalars (wrapping on overflow);
 * false for division by 0 or an op without integer meaning. Shared by every layer that
 * folds or evaluates index arithmetic. */
bool ir_int_apply(IrOp op, int64_t a, int64_t b, int64_t *r) {
  switch (op) {
  case OP_ADD: *r = wrap_add(a, b); return true;
  case OP_SUB: *r = wrap_sub(a, b); return true;
  case OP_MUL: *r = wrap_mul(a, b); return true;
  case OP_DIV: if (!b || (a == INT64_MIN && b == -1)) return false; *r = a / b; return true;
  case OP_MOD: if (!b || (a == INT64_MIN && b == -1)) return false; *r = a % b; return true;
  case OP_CEILDIV: if (!b) return false; *r = ceil_div(a, b); return true;
  case OP_MAX: *r = a > b ? a : b; return true;
  case OP_MIN: *r = a < b ? a : b; return true;
  case OP_EQ: *r = a == b; return true;
  case OP_NE: *r = a != b; return true;
  case OP_LT: *r = a < b; return true;
  case OP_LE: *r = a <= b; return true;
  case OP_GT: *r = a > b; return true;
  case OP_GE: *r = a >= b; return true;
  case OP_AND: *r = a && b; return true;
  case OP_XOR: *r = a ^ b; return true;
  default: return false;
  }
}

static bool is_const_eq(const Val *v, int64_t c) {
  int64_t x;
  return ir_scalar_const_value(v, &x) && x == c;
}

/* The identity folds; NULL when none applies. */
static Val *fold_identity(cf_fusion *f, IrOp op, Val *a, Val *b) {
  switch (op) {
  case OP_ADD:
    if (is_const_eq(a, 0)) return b;
    if (is_const_eq(b, 0)) return a;
    return NULL;
  case OP_SUB: return is_const_eq(b, 0) ? a : NULL;
  case OP_MUL:
    if (is_const_eq(a, 1)) return b;
    if (is_const_eq(b, 1)) return a;
    if (is_const_eq(a, 0) || is_const_eq(b, 0)) return ir_const_int(f, 0);
    return NULL;
  case OP_DIV:
  case OP_CEILDIV: return is_const_eq(b, 1) ? a : NULL;
  case OP_MOD: return is_const_eq(b, 1) ? ir_const_int(f, 0) : NULL;
  default: return NULL;
  }
}

Val *ir_scalar_op(cf_fusion *f, IrOp op, Val *a, Val *b) {
  if (!a || !b) return NULL;
  int64_t x, y, r;
  if (ir_scalar_const_value(a, &x) && ir_scalar_const_value(b, &y) && ir_int_apply(op, x, y, &r))
    return ir_const_int(f, r);
  Val *folded = fold_identity(f, op, a, b);
  if (folded) return folded;
  Val *out = ir_val_new(f, VAL_SCALAR, CF_INT64);
  if (!out) return NULL;
  Val *ins[2] = {a, b};
  if (!ir_expr_new(f, op, 2, ins, 1, &out)) return NULL;
  return out;
}

bool ir_scalar_eval(const Val *v, const ScalarBindings *b, int64_t *out, const char **unbound_name) {
  const Scalar *s = &v->u.scalar;
  if (s->is_const) {
    *out = s->i;
    return true;
  }
  if (!v->def) {
    for (int i = 0; b && i < b->n; i++)
      if (b->ids[i] == v->id) {
        *out = b->values[i];
        return true;
      }
    if (unbound_name) *unbound_name = s->sym_name ? s->sym_name : "?";
    return false;
  }
  const Expr *e = v->def;
  int64_t x, y;
  if (!ir_scalar_eval(e->in[0], b, &x, unbound_name)) return false;
  if (e->nin < 2) {
    *out = x;
    return true;
  }
  if (!ir_scalar_eval(e->in[1], b, &y, unbound_name)) return false;
  if (!ir_int_apply(e->op, x, y, out)) {
    if (unbound_name) *unbound_name = "division by zero";
    return false;
  }
  return true;
}
