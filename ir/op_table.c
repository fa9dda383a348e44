/* ir/op_table.c: the columns of the op table (IR_OP_TABLE in ir/ir.h) and the one helper
 * per question its type-rule column answers: which dtypes an op accepts, the dtype of its
 * result, the dtype it computes in, and the type of the value its form gives.
 *
 * Every layer asks here: ops.c when it builds an op, the evaluator (eval.c) when it
 * converts operands and calls the op's evaluator form, both code generators (the CUDA and
 * the host C forms, and the same compute dtype) and, through cf_op_info, the Python
 * package. Key decisions: a row lacking a column does not compile (the X-macro's arity),
 * and the static assertions below refuse an op with elements but an empty code form or
 * binding name, so an op cannot be added to the table without its semantics. Promotion is
 * torch's (torch.result_type): operands are dimensioned tensors, 0-d tensors or scalars
 * (a cf_scalar_input or a constant); a lower tier changes the result only when its
 * category (bool < integer < floating) is higher, and a floating scalar then counts as
 * the default float (float32). */
#include <math.h>
#include <string.h>

#include "ir/dtype.h"

/* ---- the columns ------------------------------------------------------------------------ */

static const struct {
  const char *name, *py;
  OpKind kind;
  IrTypeRule rule;
  IrEvalFn eval;
  const char *cuda, *host;
} op_table[] = {
#define IR_X(e, name, kind, py, rule, ev, cuda, host) [e] = {name, py, kind, rule, ev, cuda, host},
    IR_OP_TABLE(IR_X)
#undef IR_X
};
_Static_assert(sizeof op_table / sizeof op_table[0] == OP_COUNT, "an op without its row");

/* Every op with elements has both code forms and a binding name; only the transforms of
 * IterDomains have none. */
#define IR_X(e, name, kind, py, rule, ev, cuda, host)                                                      \
  _Static_assert(kind == OPK_TRANSFORM || (sizeof(cuda) > 1 && sizeof(host) > 1), #e " has no code form"); \
  _Static_assert(sizeof(py) > 1 && sizeof(name) > 1, #e " has no name");                                   \
  _Static_assert((kind == OPK_TRANSFORM) == (rule == TR_NONE), #e ": only transforms have no type rule");  \
  _Static_assert((kind == OPK_REDUCTION) == (rule == TR_REDUCE), #e ": reductions follow the reduction table");
IR_OP_TABLE(IR_X)
#undef IR_X

static bool valid(IrOp op) { return (unsigned)op < OP_COUNT; }

const char *ir_op_name(IrOp op) { return valid(op) ? op_table[op].name : "?"; }
const char *ir_op_py_name(IrOp op) { return valid(op) ? op_table[op].py : "?"; }
OpKind ir_op_kind(IrOp op) { return valid(op) ? op_table[op].kind : OPK_TRANSFORM; }
IrTypeRule ir_op_type_rule(IrOp op) { return valid(op) ? op_table[op].rule : TR_NONE; }
IrEvalFn ir_op_eval(IrOp op) { return valid(op) ? op_table[op].eval : ir_ev_none; }
const char *ir_op_form(IrOp op, bool cuda) { return !valid(op) ? "" : cuda ? op_table[op].cuda : op_table[op].host; }
bool ir_op_is_vector_copy(IrOp op) { return op == OP_SET || op == OP_BROADCAST || op == OP_PERMUTE; }
bool ir_op_passes_operand(IrOp op) { return !strcmp(ir_op_form(op, true), "%0") && !strcmp(ir_op_form(op, false), "%0"); }

bool ir_op_is_math_function(IrOp op) { return ir_op_type_rule(op) == TR_FLOAT; }

bool ir_op_is_elementwise(IrOp op) {
  OpKind k = ir_op_kind(op);
  return k == OPK_SET || k == OPK_UNARY || k == OPK_BINARY || k == OPK_TERNARY || k == OPK_CAST;
}

bool ir_op_is_pointwise(IrOp op) {
  OpKind k = ir_op_kind(op);
  return ir_op_is_elementwise(op) || k == OPK_BROADCAST || k == OPK_SQUEEZE || k == OPK_FULL || k == OPK_RESIZE ||
         k == OPK_INDEXED;
}

bool ir_resize_axis(const Expr *e, int operand, int axis) {
  switch (e->op) {
  case OP_SLICE: return axis < e->attr.slice.rank && e->attr.slice.resized[axis]; /* a whole axis stays paired */
  case OP_PAD: return axis < e->attr.pad.rank && (e->attr.pad.left[axis] || e->attr.pad.right[axis]);
  case OP_CAT: return (void)operand, axis == e->attr.cat.axis;
  default: return false;
  }
}

static bool indexed_bit(IrOp op, int operand, bool along) {
  switch (op) {
#define IR_X(e, along_mask, whole_mask) \
  case e: return operand >= 0 && operand < 8 && (((along ? along_mask : whole_mask) >> operand) & 1u);
    IR_INDEXED_TABLE(IR_X)
#undef IR_X
  default: return false;
  }
}

bool ir_operand_read_elsewhere(const Expr *e, int operand) {
  if (ir_op_kind(e->op) == OPK_INDEXED) return indexed_bit(e->op, operand, true);
  if (ir_op_kind(e->op) != OPK_RESIZE || operand >= e->nin || e->in[operand]->kind != VAL_TV) return false;
  for (int a = 0; a < TV(e->in[operand])->nlogical; a++)
    if (ir_resize_axis(e, operand, a)) return true;
  return false;
}

bool ir_unpaired_axis(const Expr *e, int operand, int axis) {
  if (ir_op_kind(e->op) == OPK_RESIZE) return ir_resize_axis(e, operand, axis);
  if (ir_op_kind(e->op) != OPK_INDEXED) return false;
  return indexed_bit(e->op, operand, false) || (indexed_bit(e->op, operand, true) && axis == e->attr.indexed.axis);
}

bool ir_op_is_comparison(IrOp op) { return ir_op_type_rule(op) == TR_COMPARE; }

/* ---- the reductions' columns ---------------------------------------------------------------- */

bool ir_op_is_reduction(IrOp op) {
  switch (op) {
#define IR_X(e, combine, ident, widen) case e: return true;
    IR_REDUCTION_TABLE(IR_X)
#undef IR_X
  default: return false;
  }
}

IrOp ir_reduction_combine(IrOp op) {
  switch (op) {
#define IR_X(e, combine, ident, widen) case e: return combine;
    IR_REDUCTION_TABLE(IR_X)
#undef IR_X
  default: return OP_COUNT;
  }
}

ReduceIdentity ir_reduction_identity(IrOp op) {
  switch (op) {
#define IR_X(e, combine, ident, widen) case e: return ident;
    IR_REDUCTION_TABLE(IR_X)
#undef IR_X
  default: return RID_ZERO;
  }
}

bool ir_reduction_widens_int(IrOp op) {
  switch (op) {
#define IR_X(e, combine, ident, widen) case e: return widen;
    IR_REDUCTION_TABLE(IR_X)
#undef IR_X
  default: return false;
  }
}

/* ---- the scans' column ------------------------------------------------------------------------ */

bool ir_op_is_scan(IrOp op) { return ir_scan_reduction(op) != OP_COUNT; }

IrOp ir_scan_reduction(IrOp op) {
  switch (op) {
#define IR_X(e, reduction) case e: return reduction;
    IR_SCAN_TABLE(IR_X)
#undef IR_X
  default: return OP_COUNT;
  }
}

bool ir_reduction_needs_elements(IrOp op) {
  ReduceIdentity r = ir_reduction_identity(op);
  return ir_op_is_reduction(op) && (r == RID_LOWEST || r == RID_HIGHEST);
}

/* ---- promotion ---------------------------------------------------------------------------------- */

static bool is_int(cf_dtype t) { return t == CF_INT8 || t == CF_INT32 || t == CF_INT64 || t == CF_UINT32; }

/* torch's categories: bool < integer < floating < complex. */
static int category(cf_dtype t) {
  return ir_dtype_is_complex(t) ? 3 : ir_dtype_is_float(t) ? 2 : t == CF_BOOL ? 0 : 1;
}

/* 8-bit floats rank below the 16-bit ones, which hold each of their values exactly, and
 * float4_e2m1fn below them (both 8-bit floats hold its values). */
static int float_rank(cf_dtype t) {
  return t == CF_DOUBLE ? 4 : t == CF_FLOAT ? 3 : t == CF_HALF || t == CF_BFLOAT16 ? 2 : t == CF_FLOAT4_E2M1FN ? 0 : 1;
}

static int int_rank(cf_dtype t) {
  switch (t) {
  case CF_BOOL: return 0;
  case CF_INT8: return 1;
  case CF_INT32: return 2;
  case CF_UINT32: return 3;
  default: return 4;
  }
}

cf_dtype ir_dtype_promote(cf_dtype a, cf_dtype b) {
  if (a == b) return a;
  if (ir_dtype_is_complex(a) || ir_dtype_is_complex(b)) { /* complex128 if either side holds a double */
    bool wide = ir_dtype_real_of(a) == CF_DOUBLE || ir_dtype_real_of(b) == CF_DOUBLE;
    return wide ? CF_COMPLEX_DOUBLE : CF_COMPLEX_FLOAT;
  }
  bool fa = ir_dtype_is_float(a), fb = ir_dtype_is_float(b);
  if (fa && fb) {
    if (float_rank(a) == float_rank(b)) return CF_FLOAT; /* half with bfloat16, e4m3fn with e5m2 */
    return float_rank(a) >= float_rank(b) ? a : b;
  }
  if (fa || fb) return fa ? a : b;
  bool small_signed_a = a == CF_INT8 || a == CF_INT32, small_signed_b = b == CF_INT8 || b == CF_INT32;
  if ((a == CF_UINT32 && small_signed_b) || (b == CF_UINT32 && small_signed_a)) return CF_INT64;
  return int_rank(a) >= int_rank(b) ? a : b;
}

/* torch's combine_categories: a lower tier counts only when its category is higher. */
static cf_dtype combine_tiers(cf_dtype higher, cf_dtype lower) {
  if (higher == CF_DTYPE_COUNT) return lower;
  if (lower == CF_DTYPE_COUNT || category(lower) <= category(higher)) return higher;
  return ir_dtype_promote(higher, lower);
}

cf_dtype ir_dtype_result_type(int n, const cf_dtype *t, const IrTier *tier) {
  cf_dtype r[3] = {CF_DTYPE_COUNT, CF_DTYPE_COUNT, CF_DTYPE_COUNT};
  for (int i = 0; i < n; i++) {
    cf_dtype d = tier[i] != IR_TIER_SCALAR ? t[i]
                 : ir_dtype_is_float(t[i])   ? IR_DEFAULT_FLOAT
                 : ir_dtype_is_complex(t[i]) ? ir_dtype_complex_of(IR_DEFAULT_FLOAT)
                                             : t[i];
    r[tier[i]] = r[tier[i]] == CF_DTYPE_COUNT ? d : ir_dtype_promote(r[tier[i]], d);
  }
  return combine_tiers(r[IR_TIER_DIM], combine_tiers(r[IR_TIER_ZERO_DIM], r[IR_TIER_SCALAR]));
}

/* ---- the type rule's answers --------------------------------------------------------------------- */

bool ir_op_takes_complex(IrOp op) {
  switch (op) {
  case OP_NEG: case OP_ABS: case OP_EXP: case OP_LOG: case OP_SQRT: case OP_RSQRT: case OP_RECIPROCAL:
  case OP_REAL: case OP_IMAG: case OP_CONJ: case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV:
  case OP_TRUEDIV: case OP_EQ: case OP_NE: case OP_WHERE: case OP_SUM: case OP_CUMSUM: case OP_CUMPROD: return true;
  default: { /* every op that moves elements: set, cast, broadcast, permute, reshape, slice, pad, cat, full */
    IrTypeRule r = ir_op_type_rule(op);
    return r == TR_MOVE || r == TR_CAST || (r == TR_MAKE && op != OP_IOTA);
  }
  }
}

bool ir_op_takes_packed(IrOp op) {
  IrTypeRule r = ir_op_type_rule(op);
  return r == TR_MOVE || r == TR_CAST;
}

bool ir_op_complex_to_real(IrOp op) { return op == OP_ABS || ir_op_type_rule(op) == TR_COMPLEX_PART; }

bool ir_op_accepts(IrOp op, cf_dtype t) {
  if (!ir_dtype_valid(t)) return false;
  IrTypeRule r = ir_op_type_rule(op);
  if (ir_dtype_is_complex(t)) return ir_op_takes_complex(op);
  if (ir_dtype_is_packed(t)) return ir_op_takes_packed(op);
  if (op == OP_IMAG) return false; /* torch: imag is not implemented for real tensors */
  if (r == TR_COMPLEX_PART) return !ir_dtype_is_welford(t); /* real of a real tensor: itself */
  if (ir_dtype_is_welford(t)) return r == TR_WELFORD || r == TR_MOVE || (r == TR_REDUCE && op == OP_WELFORD);
  if (op == OP_WELFORD) return ir_dtype_is_float(t); /* a mean and a variance need floating elements */
  switch (r) {
  case TR_SIGNED:
  case TR_NUMERIC: return t != CF_BOOL;
  case TR_FLOAT_ONLY: return ir_dtype_is_float(t);
  case TR_FLOAT_PAIR: return t == CF_FLOAT || t == CF_DOUBLE;
  case TR_INTEGRAL: return !ir_dtype_is_float(t);
  case TR_INTEGER:
  case TR_RANDOM:
  case TR_RANDOM64: return is_int(t);
  case TR_WELFORD: return false;
  case TR_NONE: return false;
  default: return true;
  }
}

/* What an op accepts, for messages: "integer or bool", "floating-point". */
const char *ir_op_accepts_str(IrOp op) {
  switch (ir_op_type_rule(op)) {
  case TR_SIGNED:
  case TR_NUMERIC: return "numeric (not bool)";
  case TR_FLOAT_ONLY: return "floating-point";
  case TR_FLOAT_PAIR: return "float or double";
  case TR_INTEGRAL: return "integer or bool";
  case TR_INTEGER:
  case TR_RANDOM:
  case TR_RANDOM64: return "integer";
  case TR_WELFORD: return "Welford-state";
  case TR_COMPLEX_PART: return op == OP_IMAG ? "complex" : "any";
  default: return "any";
  }
}

cf_dtype ir_op_result_dtype(IrOp op, cf_dtype promoted) {
  if (ir_op_complex_to_real(op)) return ir_dtype_real_of(promoted);
  switch (ir_op_type_rule(op)) {
  case TR_FLOAT:
  case TR_TRUE_DIV: return ir_dtype_is_inexact(promoted) ? promoted : IR_DEFAULT_FLOAT;
  case TR_PREDICATE:
  case TR_COMPARE:
  case TR_LOGICAL: return CF_BOOL;
  case TR_WELFORD: return op == OP_WELFORD_N ? CF_INT64 : ir_welford_scalar(promoted);
  case TR_RANDOM: return CF_FLOAT;
  case TR_RANDOM64: return CF_DOUBLE;
  case TR_SCAN: /* cumsum and cumprod widen integers and bool to int64, as their reductions do */
    return ir_dtype_is_inexact(promoted) || !ir_reduction_widens_int(ir_scan_reduction(op)) ? promoted : CF_INT64;
  default: return promoted;
  }
}

cf_dtype ir_op_compute_dtype(IrOp op, cf_dtype promoted, cf_dtype out) {
  if (ir_op_complex_to_real(op)) return promoted; /* |z| and the parts are computed from the complex value */
  switch (ir_op_type_rule(op)) {
  case TR_MAKE: /* iota: start + i * step; a complex full's value */
    return ir_dtype_is_complex(out) ? CF_COMPLEX_DOUBLE : ir_dtype_is_float(out) ? CF_DOUBLE : CF_INT64;
  case TR_RANDOM:
  case TR_RANDOM64: return CF_INT64; /* seed, offset and the element's index */
  case TR_PREDICATE:
  case TR_COMPARE:
  case TR_LOGICAL:
  case TR_WELFORD: return promoted;
  case TR_SCAN: return ir_dtype_accumulate(out);
  default: return out;
  }
}

cf_dtype ir_op_value_dtype(IrOp op, cf_dtype ct) {
  IrTypeRule r = ir_op_type_rule(op);
  if (ir_op_complex_to_real(op)) return ir_dtype_real_of(ct);
  if (r == TR_PREDICATE || r == TR_COMPARE || r == TR_LOGICAL) return CF_BOOL;
  if (r == TR_WELFORD) return ir_op_result_dtype(op, ct);
  if (r == TR_RANDOM || r == TR_RANDOM64) return ir_op_result_dtype(op, ct);
  return ct;
}

cf_dtype ir_dtype_opmath(cf_dtype t) { return ir_dtype_is_narrow_float(t) ? CF_FLOAT : t; }

cf_dtype ir_unary_dtype(IrOp op, cf_dtype in) { return ir_op_result_dtype(op, in); }

/* A constant right-hand side given as a double (cf_add_scalar): floating tensors keep
 * their dtype; an integer tensor keeps its dtype for an integral value exact in a double
 * and becomes the default float otherwise; bool becomes int64 or the default float. */
cf_dtype ir_scalar_rhs_dtype(cf_dtype a, double b) {
  if (ir_dtype_is_inexact(a)) return a;
  if (!isfinite(b) || b != trunc(b)) return IR_DEFAULT_FLOAT;
  return a == CF_BOOL ? CF_INT64 : a;
}

/* ---- the public view (cfuser/optable.h) ----------------------------------------------------- */

static const char *const kind_names[] = {
    [OPK_SET] = "set",         [OPK_UNARY] = "unary",     [OPK_BINARY] = "binary",   [OPK_TERNARY] = "ternary",
    [OPK_CAST] = "cast",       [OPK_BROADCAST] = "broadcast", [OPK_REDUCTION] = "reduction",
    [OPK_PERMUTE] = "permute", [OPK_SQUEEZE] = "squeeze", [OPK_FULL] = "full",     [OPK_RESHAPE] = "reshape",
    [OPK_RESIZE] = "resize",   [OPK_INDEXED] = "indexed",
    [OPK_TRANSFORM] = "transform",
};
_Static_assert(sizeof kind_names / sizeof kind_names[0] == OPK_TRANSFORM + 1, "an op kind without its name");

static const char *const rule_names[] = {
    [TR_MOVE] = "move",         [TR_CAST] = "cast",           [TR_MAKE] = "make",         [TR_SAME] = "same",
    [TR_SIGNED] = "signed",     [TR_FLOAT] = "float",         [TR_FLOAT_ONLY] = "float_only",
    [TR_PREDICATE] = "predicate", [TR_INTEGRAL] = "integral", [TR_INTEGER] = "integer", [TR_PROMOTE] = "promote", [TR_NUMERIC] = "numeric",
    [TR_TRUE_DIV] = "true_div", [TR_FLOAT_PAIR] = "float_pair", [TR_COMPARE] = "compare", [TR_LOGICAL] = "logical",
    [TR_SELECT] = "select",     [TR_RANDOM] = "random",       [TR_RANDOM64] = "random64",     [TR_WELFORD] = "welford",     [TR_COMPLEX_PART] = "complex_part",     [TR_REDUCE] = "reduce",     [TR_SCAN] = "scan",     [TR_NONE] = "none",
};
_Static_assert(sizeof rule_names / sizeof rule_names[0] == TR_NONE + 1, "a type rule without its name");

/* The public unary and binary calls (cf_<name>), from fusion.h's tables. */
static bool is_api(IrOp op) {
  static const char *const unary[] = {
#define CF_X(name) #name,
      CF_UNARY_OP_TABLE(CF_X)
#undef CF_X
  };
  static const char *const binary[] = {
#define CF_X(name) #name,
      CF_BINARY_OP_TABLE(CF_X)
#undef CF_X
  };
  OpKind k = ir_op_kind(op);
  const char *const *names = k == OPK_UNARY ? unary : binary;
  size_t n = k == OPK_UNARY ? sizeof unary / sizeof *unary : sizeof binary / sizeof *binary;
  for (size_t i = 0; (k == OPK_UNARY || k == OPK_BINARY) && i < n; i++)
    if (strcmp(names[i], ir_op_name(op)) == 0) return true;
  return false;
}

int cf_op_count(void) { return OP_COUNT; }

cf_status cf_op_get(int i, cf_op_info *out) {
  if (!out || i < 0 || i >= OP_COUNT) return CF_ERR_INVALID_ARGUMENT;
  IrOp op = (IrOp)i;
  uint32_t mask = 0;
  for (int t = 0; t < CF_DTYPE_COUNT; t++)
    if (ir_op_accepts(op, (cf_dtype)t)) mask |= 1u << t;
  *out = (cf_op_info){ir_op_name(op), ir_op_py_name(op), kind_names[ir_op_kind(op)], rule_names[ir_op_type_rule(op)],
                      mask, is_api(op)};
  return CF_OK;
}

cf_dtype cf_op_result_dtype(int i, cf_dtype promoted) {
  if (i < 0 || i >= OP_COUNT || !ir_op_accepts((IrOp)i, promoted)) return CF_DTYPE_COUNT;
  return ir_op_result_dtype((IrOp)i, promoted);
}
