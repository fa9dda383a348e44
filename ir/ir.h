/* ir/ir.h: the Fusion IR shared by every layer of cfuser (internal header).
 *
 * A Fusion owns one arena; every Val, Expr and array of the IR lives there and dies with
 * cf_fusion_destroy: no reference counts, no per-node free. Nodes are tagged structs with
 * dense per-fusion ids. Three kinds of Val: scalars (constants, named symbolic extents,
 * and arithmetic on them), IterDomains (axes) and TensorViews. Exprs link Vals: tensor ops
 * (set, add, sum, ...) link TensorViews; transforms (split, merge, swizzle) link
 * IterDomains; scalar arithmetic links scalars. Transforms never mutate an IterDomain,
 * they create new ones, so a TensorView's history from its logical domain to its loop
 * domain is a DAG of Exprs that can always be walked again.
 *
 * The public handles cf_tv and cf_id are never defined: they are Vals, converted with
 * ir_tv()/ir_id() and back with ir_tv_handle()/ir_id_handle(). */
#ifndef CFUSER_IR_H
#define CFUSER_IR_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cfuser.h"

/* ---- arena -------------------------------------------------------------------------- */

typedef struct Arena Arena;
Arena *arena_create(void);
void arena_destroy(Arena *a);
/* Zeroed, 16-byte aligned memory that lives until arena_destroy; NULL only on OOM. */
void *arena_alloc(Arena *a, size_t size);
char *arena_strdup(Arena *a, const char *s);
char *arena_printf(Arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
char *arena_vprintf(Arena *a, const char *fmt, va_list ap);
void *arena_memdup(Arena *a, const void *p, size_t size);
#define ARENA_NEW(a, T) ((T *)arena_alloc((a), sizeof(T)))
#define ARENA_ARRAY(a, T, n) ((T *)arena_alloc((a), sizeof(T) * (size_t)((n) > 0 ? (n) : 1)))

/* A growable array of pointers whose storage lives in an arena. */
typedef struct PtrVec {
  void **items;
  int len, cap;
} PtrVec;
void ptrvec_push(Arena *a, PtrVec *v, void *p);
bool ptrvec_contains(const PtrVec *v, const void *p);

/* A growable text buffer (malloc'd; used by printers and code generators). */
typedef struct StrBuf {
  char *data;
  size_t len, cap;
} StrBuf;
void sb_printf(StrBuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_vprintf(StrBuf *b, const char *fmt, va_list ap);
void sb_puts(StrBuf *b, const char *s);
void sb_free(StrBuf *b);
/* Returns the text and leaves b empty; the caller frees it. */
char *sb_take(StrBuf *b);
/* Frees the malloc'd message *slot (an error slot) and puts the formatted text there. */
void sb_vset(char **slot, const char *fmt, va_list ap);

/* The last error message of an object whose errors are not sticky (an executor, a fusion
 * cache), kept so that `check(call(o), error(o))` never reads freed memory whichever
 * argument C evaluates first: a message stays valid until the end of the object's second
 * public call after the one that set it. Each public call begins with errmsg_begin; its
 * first errmsg_set moves the current message aside (freeing the one before), later sets
 * in the same call replace only the current one. */
typedef struct ErrMsg {
  char *cur, *prev; /* malloc'd, or NULL */
  bool fresh;       /* cur was set by the call in progress */
} ErrMsg;
void errmsg_begin(ErrMsg *m);
void errmsg_vset(ErrMsg *m, const char *fmt, va_list ap);
/* Forgets what the call in progress set (a refusal it recovered from): the message
 * before it is current again. */
void errmsg_retract(ErrMsg *m);
const char *errmsg_get(const ErrMsg *m); /* "" when there is none */
void errmsg_free(ErrMsg *m);

/* ---- operations ----------------------------------------------------------------------- */

typedef enum OpKind {
  OPK_SET,       /* copy */
  OPK_UNARY,     /* elementwise, one input */
  OPK_BINARY,    /* elementwise, two inputs; also scalar arithmetic */
  OPK_TERNARY,   /* where */
  OPK_CAST,      /* dtype conversion */
  OPK_BROADCAST, /* inserts broadcast axes */
  OPK_REDUCTION, /* sum / max / min over reduction axes of the output */
  OPK_PERMUTE,   /* transpose / permute: output root = input order, logical permuted */
  OPK_SQUEEZE,   /* removes broadcast or extent-1 axes of the input (attr.squeeze) */
  OPK_FULL,      /* no tensor input: every element is attr.full's value (full), or a
                    function of its index (iota) */
  OPK_RESHAPE,   /* the same elements in row-major order under other sizes: a view at
                    define-and-run's segment boundaries, never inside a kernel */
  OPK_RESIZE,    /* slice / pad / cat: output element i of a resized axis reads its operand
                    at another position (start + i * step; i - left; i or i - offset), so
                    those axes are not paired with the operand's (an_pairwise_map) */
  OPK_INDEXED,   /* gather / take_along_axis / scatter / the scans (cumsum, cumprod, cummax,
                    cummin): an output element reads
                    operands along attr.indexed.axis at positions computed from data or from
                    its own index (IR_INDEXED_TABLE says which operands; they are read from
                    memory, never computed in the kernel that reads them) */
  OPK_TRANSFORM  /* split / merge / swizzle of IterDomains */
} OpKind;

/* How an op's result dtype follows from its operands' (torch's type promotion and its
 * categories: bool < integer < floating). One column of the op table; ir/op_table.c
 * holds the one helper per question (accepted dtypes, result dtype, compute dtype, the
 * type of the value an op's form gives). */
typedef enum IrTypeRule {
  TR_MOVE,      /* moves elements: the operand's dtype (set, broadcast, permute, squeeze, ...) */
  TR_CAST,      /* the attribute's dtype */
  TR_MAKE,      /* no tensor operand: the attribute's dtype (full, iota) */
  TR_SAME,      /* any dtype, kept (abs, relu; floor, ceil, round, trunc are the identity on integers) */
  TR_SIGNED,    /* any dtype but bool, kept (neg, sign) */
  TR_FLOAT,     /* floating dtypes kept; integers and bool give the default float (exp, sin, ...) */
  TR_FLOAT_ONLY,/* floating dtypes only, kept (frac, erfcinv: torch refuses integers) */
  TR_PREDICATE, /* any dtype in, bool out (isnan, signbit, logical_not) */
  TR_INTEGRAL,  /* integers and bool, promoted and kept (bitwise and, or, xor, not) */
  TR_INTEGER,   /* integers only, promoted and kept (shifts) */
  TR_PROMOTE,   /* operands promoted together; the result has that dtype (add, pow, maximum) */
  TR_NUMERIC,   /* the same without bool (sub: torch refuses bool - bool) */
  TR_TRUE_DIV,  /* promoted, then integers and bool give the default float (truediv, atan2) */
  TR_FLOAT_PAIR,/* float and double only, promoted (nextafter steps in their formats) */
  TR_COMPARE,   /* promoted to compare, bool out (eq, lt, ...) */
  TR_LOGICAL,   /* operands read as truth values, bool out (logical_and, logical_or) */
  TR_SELECT,    /* where: a bool condition, then two operands promoted */
  TR_RANDOM,    /* random numbers: an integer seed and offset (computed in int64) in, a
                   float-precision value out (the 24-bit uniform: it stays below 1 in float) */
  TR_RANDOM64,  /* the same with a double value out (the 53-bit uniform, normal) */
  TR_WELFORD,   /* Welford states in, a field out (welford_avg, welford_m2, welford_n) */
  TR_COMPLEX_PART, /* a complex in, its real type out (real, imag; real of a real type is itself) */
  TR_REDUCE,    /* reductions: the reduction table's columns */
  TR_SCAN,      /* the scans: the scan table's columns (integers and bool give int64 where
                   the scan's reduction widens them: torch.cumsum, torch.cumprod; cummax and
                   cummin keep them); floats keep theirs and accumulate in their
                   accumulation dtype (float for 16-bit) */
  TR_NONE       /* transforms of IterDomains: no elements */
} IrTypeRule;

/* The op table: every fact about an op is a column here or in a table beside it (the
 * reductions' below), never a switch in a pass. X(enumerator, printed name, kind, Python
 * binding name, type rule, evaluator form, CUDA form, host C form).
 * - The evaluator form is a function IrElem f(const IrElem *operands, cf_dtype ct)
 *   (ir/eval_math.c) computing the op on operands already converted to the compute dtype
 *   ct; a row naming a function that does not exist fails to link.
 * - The two code forms are C expression templates (%0 %1 %2 the operands, converted to
 *   the kernel's arithmetic type: float, double or int64); helpers they name live in
 *   codegen/runtime/ops_math.h (shared by both dialects) or are CUDA's own.
 * - A missing column fails to compile (the macro's arity), and ir/op_table.c statically
 *   asserts that every op with elements has both code forms and a binding name.
 * Scalar arithmetic of extents reuses the binary rows (their integer meaning is
 * ir_int_apply's). */
#define IR_OP_TABLE(X)                                                                                         \
  X(OP_SET, "Set", OPK_SET, "set", TR_MOVE, ir_ev_move, "%0", "%0")                                             \
  X(OP_NEG, "neg", OPK_UNARY, "neg", TR_SIGNED, ir_ev_neg, "(-%0)", "(-%0)")                                    \
  X(OP_ABS, "abs", OPK_UNARY, "abs", TR_SAME, ir_ev_abs, "cf_abs(%0)", "cf_abs(%0)")                          \
  X(OP_EXP, "exp", OPK_UNARY, "exp", TR_FLOAT, ir_ev_exp, "exp(%0)", "exp(%0)")                                 \
  X(OP_LOG, "log", OPK_UNARY, "log", TR_FLOAT, ir_ev_log, "log(%0)", "log(%0)")                                 \
  X(OP_SQRT, "sqrt", OPK_UNARY, "sqrt", TR_FLOAT, ir_ev_sqrt, "sqrt(%0)", "sqrt(%0)")                           \
  X(OP_RSQRT, "rsqrt", OPK_UNARY, "rsqrt", TR_FLOAT, ir_ev_rsqrt, "rsqrt(%0)", "rsqrt(%0)")                     \
  X(OP_RECIPROCAL, "reciprocal", OPK_UNARY, "reciprocal", TR_FLOAT, ir_ev_reciprocal, "reciprocal(%0)",         \
    "reciprocal(%0)")                                                                                           \
  X(OP_RELU, "relu", OPK_UNARY, "relu", TR_SAME, ir_ev_relu, "relu(%0)", "relu(%0)")                            \
  X(OP_SIGMOID, "sigmoid", OPK_UNARY, "sigmoid", TR_FLOAT, ir_ev_sigmoid, "sigmoid(%0)", "sigmoid(%0)")         \
  X(OP_TANH, "tanh", OPK_UNARY, "tanh", TR_FLOAT, ir_ev_tanh, "tanh(%0)", "tanh(%0)")                           \
  X(OP_GELU, "gelu", OPK_UNARY, "gelu", TR_FLOAT, ir_ev_gelu, "gelu(%0)", "gelu(%0)")                           \
  X(OP_SIN, "sin", OPK_UNARY, "sin", TR_FLOAT, ir_ev_sin, "sin(%0)", "sin(%0)")                                 \
  X(OP_COS, "cos", OPK_UNARY, "cos", TR_FLOAT, ir_ev_cos, "cos(%0)", "cos(%0)")                                 \
  X(OP_TAN, "tan", OPK_UNARY, "tan", TR_FLOAT, ir_ev_tan, "tan(%0)", "tan(%0)")                                 \
  X(OP_ERF, "erf", OPK_UNARY, "erf", TR_FLOAT, ir_ev_erf, "erf(%0)", "erf(%0)")                                 \
  X(OP_REAL, "real", OPK_UNARY, "real", TR_COMPLEX_PART, ir_ev_real, "cf_creal(%0)", "cf_creal(%0)")           \
  X(OP_IMAG, "imag", OPK_UNARY, "imag", TR_COMPLEX_PART, ir_ev_imag, "cf_cimag(%0)", "cf_cimag(%0)")           \
  X(OP_CONJ, "conj", OPK_UNARY, "conj", TR_SAME, ir_ev_conj, "cf_conj(%0)", "cf_conj(%0)")                      \
  X(OP_FLOOR, "floor", OPK_UNARY, "floor", TR_SAME, ir_ev_floor, "cf_floor(%0)", "cf_floor(%0)")                \
  X(OP_CEIL, "ceil", OPK_UNARY, "ceil", TR_SAME, ir_ev_ceil, "cf_ceil(%0)", "cf_ceil(%0)")                      \
  X(OP_ACOS, "acos", OPK_UNARY, "acos", TR_FLOAT, ir_ev_acos, "acos(%0)", "acos(%0)") \
  X(OP_ACOSH, "acosh", OPK_UNARY, "acosh", TR_FLOAT, ir_ev_acosh, "acosh(%0)", "acosh(%0)") \
  X(OP_ASIN, "asin", OPK_UNARY, "asin", TR_FLOAT, ir_ev_asin, "asin(%0)", "asin(%0)") \
  X(OP_ASINH, "asinh", OPK_UNARY, "asinh", TR_FLOAT, ir_ev_asinh, "asinh(%0)", "asinh(%0)") \
  X(OP_ATAN, "atan", OPK_UNARY, "atan", TR_FLOAT, ir_ev_atan, "atan(%0)", "atan(%0)") \
  X(OP_ATANH, "atanh", OPK_UNARY, "atanh", TR_FLOAT, ir_ev_atanh, "atanh(%0)", "atanh(%0)") \
  X(OP_COSH, "cosh", OPK_UNARY, "cosh", TR_FLOAT, ir_ev_cosh, "cosh(%0)", "cosh(%0)") \
  X(OP_SINH, "sinh", OPK_UNARY, "sinh", TR_FLOAT, ir_ev_sinh, "sinh(%0)", "sinh(%0)") \
  X(OP_ERFC, "erfc", OPK_UNARY, "erfc", TR_FLOAT, ir_ev_erfc, "erfc(%0)", "erfc(%0)") \
  X(OP_EXPM1, "expm1", OPK_UNARY, "expm1", TR_FLOAT, ir_ev_expm1, "expm1(%0)", "expm1(%0)") \
  X(OP_EXP2, "exp2", OPK_UNARY, "exp2", TR_FLOAT, ir_ev_exp2, "exp2(%0)", "exp2(%0)") \
  X(OP_LOG1P, "log1p", OPK_UNARY, "log1p", TR_FLOAT, ir_ev_log1p, "log1p(%0)", "log1p(%0)") \
  X(OP_LOG2, "log2", OPK_UNARY, "log2", TR_FLOAT, ir_ev_log2, "log2(%0)", "log2(%0)") \
  X(OP_LOG10, "log10", OPK_UNARY, "log10", TR_FLOAT, ir_ev_log10, "log10(%0)", "log10(%0)") \
  X(OP_LGAMMA, "lgamma", OPK_UNARY, "lgamma", TR_FLOAT, ir_ev_lgamma, "lgamma(%0)", "lgamma(%0)") \
  X(OP_ERFINV, "erfinv", OPK_UNARY, "erfinv", TR_FLOAT, ir_ev_erfinv, "erfinv(%0)", "cf_erfinv(%0)") \
  X(OP_ERFCINV, "erfcinv", OPK_UNARY, "erfcinv", TR_FLOAT, ir_ev_erfcinv, "erfcinv(%0)", "cf_erfcinv(%0)") \
  X(OP_DIGAMMA, "digamma", OPK_UNARY, "digamma", TR_FLOAT, ir_ev_digamma, "cf_digamma(%0)", "cf_digamma(%0)") \
  X(OP_SILU, "silu", OPK_UNARY, "silu", TR_FLOAT, ir_ev_silu, "cf_silu(%0)", "cf_silu(%0)") \
  X(OP_ROUND, "round", OPK_UNARY, "round", TR_SAME, ir_ev_round, "cf_round(%0)", "cf_round(%0)") \
  X(OP_TRUNC, "trunc", OPK_UNARY, "trunc", TR_SAME, ir_ev_trunc, "cf_trunc(%0)", "cf_trunc(%0)") \
  X(OP_FRAC, "frac", OPK_UNARY, "frac", TR_FLOAT_ONLY, ir_ev_frac, "cf_frac(%0)", "cf_frac(%0)") \
  X(OP_SIGN, "sign", OPK_UNARY, "sign", TR_SAME, ir_ev_sign, "cf_sign(%0)", "cf_sign(%0)") \
  X(OP_ISFINITE, "isfinite", OPK_UNARY, "isfinite", TR_PREDICATE, ir_ev_isfinite, "cf_isfinite(%0)", "cf_isfinite(%0)") \
  X(OP_ISINF, "isinf", OPK_UNARY, "isinf", TR_PREDICATE, ir_ev_isinf, "cf_isinf(%0)", "cf_isinf(%0)") \
  X(OP_ISNAN, "isnan", OPK_UNARY, "isnan", TR_PREDICATE, ir_ev_isnan, "cf_isnan(%0)", "cf_isnan(%0)") \
  X(OP_ISNEGINF, "isneginf", OPK_UNARY, "isneginf", TR_PREDICATE, ir_ev_isneginf, "cf_isneginf(%0)", "cf_isneginf(%0)") \
  X(OP_ISPOSINF, "isposinf", OPK_UNARY, "isposinf", TR_PREDICATE, ir_ev_isposinf, "cf_isposinf(%0)", "cf_isposinf(%0)") \
  X(OP_ISREAL, "isreal", OPK_UNARY, "isreal", TR_PREDICATE, ir_ev_isreal, "cf_isreal(%0)", "cf_isreal(%0)") \
  X(OP_SIGNBIT, "signbit", OPK_UNARY, "signbit", TR_PREDICATE, ir_ev_signbit, "cf_signbit(%0)", "cf_signbit(%0)") \
  X(OP_LOGICAL_NOT, "logical_not", OPK_UNARY, "logical_not", TR_PREDICATE, ir_ev_logical_not, "(!%0)", "(!%0)") \
  X(OP_BITWISE_NOT, "bitwise_not", OPK_UNARY, "bitwise_not", TR_INTEGRAL, ir_ev_bitwise_not, "(~%0)", "(~%0)") \
  X(OP_TRUEDIV, "truediv", OPK_BINARY, "truediv", TR_TRUE_DIV, ir_ev_truediv, "(%0 / %1)", "(%0 / %1)") \
  X(OP_FMOD, "fmod", OPK_BINARY, "fmod", TR_PROMOTE, ir_ev_fmod, "cf_mod(%0, %1)", "cf_mod(%0, %1)") \
  X(OP_REMAINDER, "remainder", OPK_BINARY, "remainder", TR_PROMOTE, ir_ev_remainder, "cf_remainder(%0, %1)", "cf_remainder(%0, %1)") \
  X(OP_FLOOR_DIVIDE, "floor_divide", OPK_BINARY, "floor_divide", TR_PROMOTE, ir_ev_floor_divide, "cf_floor_divide(%0, %1)", "cf_floor_divide(%0, %1)") \
  X(OP_ATAN2, "atan2", OPK_BINARY, "atan2", TR_TRUE_DIV, ir_ev_atan2, "atan2(%0, %1)", "atan2(%0, %1)") \
  X(OP_NEXTAFTER, "nextafter", OPK_BINARY, "nextafter", TR_FLOAT_PAIR, ir_ev_nextafter, "cf_nextafter(%0, %1)", "cf_nextafter(%0, %1)") \
  X(OP_BITWISE_AND, "bitwise_and", OPK_BINARY, "bitwise_and", TR_INTEGRAL, ir_ev_bitwise_and, "(%0 & %1)", "(%0 & %1)") \
  X(OP_BITWISE_OR, "bitwise_or", OPK_BINARY, "bitwise_or", TR_INTEGRAL, ir_ev_bitwise_or, "(%0 | %1)", "(%0 | %1)") \
  X(OP_LOGICAL_OR, "logical_or", OPK_BINARY, "logical_or", TR_LOGICAL, ir_ev_logical_or, "(%0 || %1)", "(%0 || %1)") \
  X(OP_SHL, "bitwise_left_shift", OPK_BINARY, "bitwise_left_shift", TR_INTEGER, ir_ev_bitwise_left_shift, "cf_shl(%0, %1)", "cf_shl(%0, %1)") \
  X(OP_SHR, "bitwise_right_shift", OPK_BINARY, "bitwise_right_shift", TR_INTEGER, ir_ev_bitwise_right_shift, "cf_shr(%0, %1)", "cf_shr(%0, %1)") \
  X(OP_GCD, "gcd", OPK_BINARY, "gcd", TR_INTEGER, ir_ev_gcd, "cf_gcd(%0, %1)", "cf_gcd(%0, %1)") \
  X(OP_WELFORD_AVG, "welford_avg", OPK_UNARY, "welford_avg", TR_WELFORD, ir_ev_welford_field, "cf_welford_avg(%0)", \
    "cf_welford_avg(%0)")                                                                                       \
  X(OP_WELFORD_M2, "welford_m2", OPK_UNARY, "welford_m2", TR_WELFORD, ir_ev_welford_field, "cf_welford_m2(%0)",  \
    "cf_welford_m2(%0)")                                                                                        \
  X(OP_WELFORD_N, "welford_n", OPK_UNARY, "welford_n", TR_WELFORD, ir_ev_welford_field, "cf_welford_n(%0)",      \
    "cf_welford_n(%0)")                                                                                         \
  X(OP_CAST, "cast", OPK_CAST, "cast", TR_CAST, ir_ev_move, "%0", "%0")                                         \
  X(OP_ADD, "add", OPK_BINARY, "add", TR_PROMOTE, ir_ev_add, "(%0 + %1)", "(%0 + %1)")                          \
  X(OP_SUB, "sub", OPK_BINARY, "sub", TR_NUMERIC, ir_ev_sub, "(%0 - %1)", "(%0 - %1)")                          \
  X(OP_MUL, "mul", OPK_BINARY, "mul", TR_PROMOTE, ir_ev_mul, "(%0 * %1)", "(%0 * %1)")                          \
  X(OP_DIV, "div", OPK_BINARY, "div", TR_PROMOTE, ir_ev_div, "cf_div(%0, %1)", "cf_div(%0, %1)")                \
  X(OP_MAX, "max", OPK_BINARY, "maximum", TR_PROMOTE, ir_ev_max, "cf_max(%0, %1)", "cf_max(%0, %1)")            \
  X(OP_MIN, "min", OPK_BINARY, "minimum", TR_PROMOTE, ir_ev_min, "cf_min(%0, %1)", "cf_min(%0, %1)")            \
  X(OP_POW, "pow", OPK_BINARY, "pow", TR_PROMOTE, ir_ev_pow, "cf_pow(%0, %1)", "cf_pow(%0, %1)")                \
  X(OP_EQ, "eq", OPK_BINARY, "eq", TR_COMPARE, ir_ev_eq, "(%0 == %1)", "(%0 == %1)")                            \
  X(OP_NE, "ne", OPK_BINARY, "ne", TR_COMPARE, ir_ev_ne, "(%0 != %1)", "(%0 != %1)")                            \
  X(OP_LT, "lt", OPK_BINARY, "lt", TR_COMPARE, ir_ev_lt, "(%0 < %1)", "(%0 < %1)")                              \
  X(OP_LE, "le", OPK_BINARY, "le", TR_COMPARE, ir_ev_le, "(%0 <= %1)", "(%0 <= %1)")                            \
  X(OP_GT, "gt", OPK_BINARY, "gt", TR_COMPARE, ir_ev_gt, "(%0 > %1)", "(%0 > %1)")                              \
  X(OP_GE, "ge", OPK_BINARY, "ge", TR_COMPARE, ir_ev_ge, "(%0 >= %1)", "(%0 >= %1)")                            \
  X(OP_CEILDIV, "ceilDiv", OPK_BINARY, "ceil_div", TR_PROMOTE, ir_ev_ceildiv, "cf_ceildiv(%0, %1)",             \
    "cf_ceildiv(%0, %1)")                                                                                       \
  X(OP_MOD, "mod", OPK_BINARY, "mod", TR_PROMOTE, ir_ev_mod, "cf_mod(%0, %1)", "cf_mod(%0, %1)")                \
  X(OP_AND, "logical_and", OPK_BINARY, "logical_and", TR_LOGICAL, ir_ev_logical_and, "(%0 && %1)",              \
    "(%0 && %1)")                                                                                               \
  X(OP_XOR, "bitwise_xor", OPK_BINARY, "bitwise_xor", TR_INTEGRAL, ir_ev_bitwise_xor, "(%0 ^ %1)", "(%0 ^ %1)")  \
  X(OP_RAND, "rand", OPK_BINARY, "rand", TR_RANDOM, ir_ev_rand, "cf_philox_uniform24(%0, %1, %2)",              \
    "cf_philox_uniform24(%0, %1, %2)")                                                                          \
  X(OP_RAND64, "rand64", OPK_BINARY, "rand64", TR_RANDOM64, ir_ev_rand64, "cf_philox_uniform53(%0, %1, %2)",      \
    "cf_philox_uniform53(%0, %1, %2)")                                                                          \
  X(OP_RANDN, "randn", OPK_BINARY, "randn", TR_RANDOM64, ir_ev_randn, "cf_philox_normal(%0, %1, %2)",             \
    "cf_philox_normal(%0, %1, %2)")                                                                             \
  X(OP_WHERE, "where", OPK_TERNARY, "where", TR_SELECT, ir_ev_where, "(%0 ? %1 : %2)", "(%0 ? %1 : %2)")        \
  X(OP_BROADCAST, "broadcast", OPK_BROADCAST, "broadcast", TR_MOVE, ir_ev_move, "%0", "%0")                     \
  X(OP_SUM, "sum", OPK_REDUCTION, "sum", TR_REDUCE, ir_ev_add, "(%0 + %1)", "(%0 + %1)")                        \
  X(OP_MAX_REDUCE, "max", OPK_REDUCTION, "max", TR_REDUCE, ir_ev_max, "cf_max(%0, %1)", "cf_max(%0, %1)")       \
  X(OP_MIN_REDUCE, "min", OPK_REDUCTION, "min", TR_REDUCE, ir_ev_min, "cf_min(%0, %1)", "cf_min(%0, %1)")       \
  X(OP_PROD, "prod", OPK_REDUCTION, "prod", TR_REDUCE, ir_ev_mul, "(%0 * %1)", "(%0 * %1)")                     \
  X(OP_WELFORD, "welford", OPK_REDUCTION, "welford", TR_REDUCE, ir_ev_welford_merge, "cf_welford_merge(%0, %1)", \
    "cf_welford_merge(%0, %1)")                                                                                 \
  X(OP_ONLINE_SOFTMAX, "online_softmax", OPK_REDUCTION, "online_softmax", TR_REDUCE, ir_ev_softmax_merge,      \
    "cf_softmax_merge(%0, %1)", "cf_softmax_merge(%0, %1)")                                                     \
  X(OP_PERMUTE, "permute", OPK_PERMUTE, "permute", TR_MOVE, ir_ev_move, "%0", "%0")                             \
  X(OP_EXPAND, "expand", OPK_SET, "expand", TR_MOVE, ir_ev_move, "%0", "%0")                                    \
  X(OP_SQUEEZE, "squeeze", OPK_SQUEEZE, "squeeze", TR_MOVE, ir_ev_move, "%0", "%0")                             \
  X(OP_FULL, "full", OPK_FULL, "full", TR_MAKE, ir_ev_move, "%0", "%0")                                         \
  X(OP_IOTA, "iota", OPK_FULL, "iota", TR_MAKE, ir_ev_iota, "(%1 + %0 * %2)", "(%1 + %0 * %2)")                   \
  X(OP_SLICE, "slice", OPK_RESIZE, "slice", TR_MOVE, ir_ev_move, "%0", "%0")                                     \
  X(OP_PAD, "pad", OPK_RESIZE, "pad", TR_MOVE, ir_ev_select, "(%2 ? %0 : %1)", "(%2 ? %0 : %1)")                   \
  X(OP_CAT, "cat", OPK_RESIZE, "cat", TR_MOVE, ir_ev_select, "(%2 ? %0 : %1)", "(%2 ? %0 : %1)")                   \
  X(OP_RESHAPE, "reshape", OPK_RESHAPE, "reshape", TR_MOVE, ir_ev_move, "%0", "%0")                             \
  X(OP_GATHER, "gather", OPK_INDEXED, "gather", TR_MOVE, ir_ev_move, "%0", "%0")                                 \
  X(OP_TAKE_ALONG_AXIS, "take_along_axis", OPK_INDEXED, "take_along_axis", TR_MOVE, ir_ev_move, "%0", "%0")       \
  X(OP_SCATTER, "scatter", OPK_INDEXED, "scatter", TR_MOVE, ir_ev_move, "%0", "%0")                              \
  X(OP_CUMSUM, "cumsum", OPK_INDEXED, "cumsum", TR_SCAN, ir_ev_add, "(%0 + %1)", "(%0 + %1)")                     \
  X(OP_CUMPROD, "cumprod", OPK_INDEXED, "cumprod", TR_SCAN, ir_ev_mul, "(%0 * %1)", "(%0 * %1)")                 \
  X(OP_CUMMAX, "cummax", OPK_INDEXED, "cummax", TR_SCAN, ir_ev_max, "cf_max(%0, %1)", "cf_max(%0, %1)")         \
  X(OP_CUMMIN, "cummin", OPK_INDEXED, "cummin", TR_SCAN, ir_ev_min, "cf_min(%0, %1)", "cf_min(%0, %1)")         \
  X(OP_SPLIT, "Split", OPK_TRANSFORM, "split", TR_NONE, ir_ev_none, "", "")                                     \
  X(OP_MERGE, "Merge", OPK_TRANSFORM, "merge", TR_NONE, ir_ev_none, "", "")                                     \
  X(OP_SWIZZLE, "Swizzle", OPK_TRANSFORM, "swizzle", TR_NONE, ir_ev_none, "", "")

typedef enum IrOp {
#define IR_X(e, name, kind, py, rule, ev, cuda, host) e,
  IR_OP_TABLE(IR_X)
#undef IR_X
  OP_COUNT
} IrOp;

/* The value an accumulator starts at: the identity of the combine op. LOWEST and HIGHEST
 * are the dtype's (-inf and +inf for floating types); EMPTY is the Welford state of no
 * element (mean 0, M2 0, count 0). */
typedef enum ReduceIdentity { RID_ZERO, RID_ONE, RID_LOWEST, RID_HIGHEST, RID_EMPTY } ReduceIdentity;

/* The reductions' columns, beside the op table: X(enumerator, combine op folding one
 * element into the accumulator, identity, whether integer inputs widen to int64 as torch
 * does). Every OPK_REDUCTION op has exactly one row (a test checks). Welford is its own
 * combine: its accumulator is a state (ir/dtype.h), and an element is folded by merging
 * its one-element state (the code generators convert the element to it). So is the online
 * softmax (the schedulers' one-pass max and sum of exponentials, ir_softmax_merge), whose
 * state keeps the Welford layout: {max, sum - 1, count}. Max and min combine with the
 * binary maximum and minimum, which keep NaN (a row with a NaN reduces to NaN, as torch's
 * amax/amin do). */
#define IR_REDUCTION_TABLE(X)                         \
  X(OP_SUM, OP_ADD, RID_ZERO, true)                   \
  X(OP_PROD, OP_MUL, RID_ONE, true)                   \
  X(OP_MAX_REDUCE, OP_MAX, RID_LOWEST, false)         \
  X(OP_MIN_REDUCE, OP_MIN, RID_HIGHEST, false)        \
  X(OP_WELFORD, OP_WELFORD, RID_EMPTY, false)         \
  X(OP_ONLINE_SOFTMAX, OP_ONLINE_SOFTMAX, RID_EMPTY, false)

/* Columns of IR_REDUCTION_TABLE; an op without a row fails loudly (internal error
 * message in the returned op: OP_COUNT / RID_ZERO / false). */
bool ir_op_is_reduction(IrOp op);
IrOp ir_reduction_combine(IrOp op);
ReduceIdentity ir_reduction_identity(IrOp op);
bool ir_reduction_widens_int(IrOp op);
/* A reduction with no identity in torch's sense (max, min: their start values -inf and
 * +inf are a device of the fold): over an axis of extent 0 it is an error with a message
 * (the evaluator's, or the kernel's run-time check), as torch raises, never -inf. */
bool ir_reduction_needs_elements(IrOp op);
/* Its words, after each layer's prefix (the evaluator, define and run's concrete copy,
 * the kernel's check); arguments: the op's name, the axis, the operand's name, the op's
 * name. */
#define IR_EMPTY_REDUCTION_MSG "%s: axis %d of %s has extent 0; the %s of an empty axis is undefined (torch refuses it too)"

const char *ir_op_name(IrOp op);
OpKind ir_op_kind(IrOp op);
/* Elementwise ops (kinds set, unary, binary, ternary, cast): one output element from the
 * input elements at the same index. expand is a set whose output iterates axes that its
 * input broadcasts. */
/* Whether computing the op takes a math-library function (the float type rule: exp, log,
 * tanh, erf, ...): worth keeping in a register rather than computing again. */
bool ir_op_is_math_function(IrOp op);
bool ir_op_is_elementwise(IrOp op);
/* Ops the pointwise scheduler takes: the elementwise ones, broadcast, squeeze and full
 * (each output element from input elements at positionally mapped indices). */
bool ir_op_is_pointwise(IrOp op);
/* Resize ops (slice, pad, cat): which operand axes are resized (not paired with the output's
 * axis of the same position); `axis` counts the operand's op axes (no reduction axes). */
struct Expr;
bool ir_resize_axis(const struct Expr *e, int operand, int axis);

/* The indexed ops' columns, beside the op table: X(enumerator, operands read along the
 * op's axis at computed positions, operands none of whose axes pair with the output's),
 * each a bit per operand. gather and take_along_axis read operand 0 (the lookup) at the
 * position its index operand 1 holds; scatter writes its source (operand 2) where its index
 * (operand 1) says, over a copy of operand 0; a scan reads operand 0 at every position up
 * to the output's. gather's lookup, scatter's index and source may be larger than the
 * output's off-axis extents (torch's sizes <= rule): none of their axes pair with the
 * output's, and they are read at the output's index there. */
#define IR_INDEXED_TABLE(X)          \
  X(OP_GATHER, 0x1u, 0x1u)           \
  X(OP_TAKE_ALONG_AXIS, 0x1u, 0x0u)  \
  X(OP_SCATTER, 0x6u, 0x6u)          \
  X(OP_CUMSUM, 0x1u, 0x0u)           \
  X(OP_CUMPROD, 0x1u, 0x0u)          \
  X(OP_CUMMAX, 0x1u, 0x0u)           \
  X(OP_CUMMIN, 0x1u, 0x0u)
/* The scans' column, beside the indexed table: X(enumerator, the reduction whose running
 * value it is). A scan's output element is that reduction of operand 0 over positions 0..p
 * of its axis, folded in index order from the reduction's identity with the reduction's
 * combine, each partial result rounded to the compute dtype (the accumulation dtype); its
 * integer widening is the reduction's too (cumsum and cumprod of integers and bool give
 * int64, cummax and cummin keep the dtype). Max and min keep NaN, so once a NaN is seen the
 * running max/min stays NaN (torch.cummax's values). The evaluator, both code dialects and
 * the type rule read the combine, identity and widening from here; every scan row's own
 * forms are its combine's (a test checks). */
#define IR_SCAN_TABLE(X)           \
  X(OP_CUMSUM, OP_SUM)             \
  X(OP_CUMPROD, OP_PROD)           \
  X(OP_CUMMAX, OP_MAX_REDUCE)      \
  X(OP_CUMMIN, OP_MIN_REDUCE)
/* Whether op is a scan; the reduction it runs (OP_COUNT for an op without a row). */
bool ir_op_is_scan(IrOp op);
IrOp ir_scan_reduction(IrOp op);
/* Whether operand j of e is read at positions other than the output's: a resize's operand,
 * an indexed op's operand read along its axis. Such an operand must be in memory the
 * kernel reads whole (a fusion input or a segment input): the schedulers keep it out of
 * the kernel that reads it, lowering refuses it computed there. */
bool ir_operand_read_elsewhere(const struct Expr *e, int operand);
/* Whether operand axis `axis` (counted as ir_resize_axis counts) is paired with nothing of
 * the output (a resized axis, or an indexed op's axis of an operand read along it). */
bool ir_unpaired_axis(const struct Expr *e, int operand, int axis);
/* The ops that take complex operands (torch's complex semantics: arithmetic, exp, log,
 * sqrt, rsqrt, reciprocal, abs, real, imag, conj, eq, ne, where, sum, cumsum, cumprod, the
 * moves and casts): one helper beside the op table; every other op refuses a complex
 * operand with a message naming the op and the tensor, as torch refuses max, lt or floor of
 * complex tensors (and cummax, cummin: "not implemented for 'ComplexFloat'"). cumsum and
 * cumprod fold in the complex type itself, as kernels do (complex64 products in float). */
bool ir_op_takes_complex(IrOp op);
/* The ops that take a packed operand (float4_e2m1fn, a storage type as nvFuser's and
 * torch's float4_e2m1fn_x2 are): those that move elements and casts; every other op refuses
 * it naming the op and the tensor (cast it to float first). */
bool ir_op_takes_packed(IrOp op);
/* The ops whose result is the real type of a complex operand (abs, real, imag): they
 * compute in the complex type and give its real type. */
bool ir_op_complex_to_real(IrOp op);
/* The columns of IR_OP_TABLE (ir/op_table.c). */
const char *ir_op_py_name(IrOp op);
IrTypeRule ir_op_type_rule(IrOp op);
/* The code form of op in the CUDA dialect (cuda) or the host C one (!cuda). */
const char *ir_op_form(IrOp op, bool cuda);
/* Whether op's value is its one operand's, converted to the output dtype (its form is "%0"
 * in both dialects: the moves and casts, set, broadcast, permute, slice, cast, ...). */
bool ir_op_passes_operand(IrOp op);
/* The copies a vectorized access may move: set, broadcast (the operand's elements in
 * their order, axes of extent 1 added) and permute (the axes reordered: a vector along an
 * axis innermost in both, as analysis/'s access rules require of every vector), the ops
 * lowering makes vector copies of. */
bool ir_op_is_vector_copy(IrOp op);

/* ---- values ----------------------------------------------------------------------------- */

typedef enum ValKind { VAL_SCALAR, VAL_ID, VAL_TV } ValKind;

typedef struct Val Val;
typedef struct Expr Expr;

typedef struct Scalar {
  bool is_const;
  int64_t i;  /* value of an integer or bool constant */
  double d;   /* value of a floating-point constant */
  /* A named symbolic scalar ("i0") is bound from input tensor `input_tv`'s size along
   * logical axis `input_axis` (stride_of: its stride instead of its size). */
  const char *sym_name;
  Val *input_tv;
  int input_axis;
  bool stride_of;
} Scalar;

typedef struct IterDomain {
  Val *extent;       /* a scalar Val */
  cf_iter_type iter_type;
  cf_parallel_type ptype;
  Val *tv;           /* the TensorView whose domain this axis belongs to (may be NULL) */
  bool rfactor;      /* made by cf_rfactor (printed with nvFuser's "rf" suffix) */
} IterDomain;

typedef struct TensorView {
  /* Domains are arrays of IterDomain Vals. root: present when the definition permutes
   * (transpose) or reduces; otherwise root == logical. */
  Val **root;
  int nroot;
  Val **logical;
  int nlogical;
  Val **alloc;         /* NULL: the allocation domain is the logical domain */
  int nalloc;
  int8_t *contiguity;  /* one per allocation axis (or logical axis): 1, 0, -1 (none) */
  Val **loop;
  int nloop;
  cf_memory_type mem;
  int ca_pos;            /* compute-at position */
  int max_producer_pos;  /* how far producers are inlined into this tensor */
  int tmem_dim_sep;      /* tensor memory: allocation axes left of it are lanes */
  int cb_stages;         /* shared tiles: stages circular-buffered over the compute-at loop (0: none) */
  int cb_prefetch;       /* with cb_stages: iterations ahead of its readers a fill runs, 1 .. stages - 1 */
  bool tma_load;         /* with cb_stages: filled by TMA boxes (cf_tma_load, lower/tma.c) */
  int64_t reg_elems;     /* Local: elements of the thread's allocation kept in registers, the
                          * rest in shared memory (cf_spill_to_shared; 0: all in registers) */
  cf_parallel_type ws_pt; /* with tma_load: the fills run in a producer slice of this thread
                           * dimension (cf_warp_specialize; CF_PT_SERIAL: none) */
  bool has_strides;      /* a strided input: strides are named scalars bound at run time */
  bool is_scalar;        /* a 0-d scalar (cf_scalar_input, a constant): torch's wrapped
                          * number in type promotion (ir_dtype_result_type) */
  Val **strides;         /* per logical axis when has_strides */
  char *display_name;    /* "T2" */
  cf_device_mesh *mesh;  /* multidevice.h: the mesh it is placed on, or NULL (ir/mesh.c) */
} TensorView;

struct Val {
  ValKind kind;
  int id;      /* dense per fusion, over every Val */
  int name;    /* per-kind counter: T<name>, iS<name>, i<name> */
  cf_dtype dtype;
  Expr *def;   /* the Expr that produced this Val, or NULL */
  PtrVec uses; /* Exprs that consume it */
  cf_fusion *fusion;
  union {
    Scalar scalar;
    IterDomain id;
    TensorView tv;
  } u;
};

typedef enum SwizzleType { SWIZZLE_XOR } SwizzleType;

struct Expr {
  IrOp op;
  int id;
  Val **in;
  int nin;
  Val **out;
  int nout;
  /* A dynamic op (ir/ops_dynamic.c): its last ndyn inputs are 0-d integer tensors giving
   * sizes or bounds at run time; ir/concretize.c makes it static before scheduling. */
  int ndyn;
  union {
    struct { Val *factor; bool inner; } split;   /* OP_SPLIT: in[0] -> out[0] outer, out[1] inner */
    struct { SwizzleType type; } swizzle;        /* OP_SWIZZLE: (in x, in y) -> (out x, out y) */
    struct { cf_dtype to; } cast;
    struct { bool *is_broadcast; int rank; } broadcast; /* per output logical axis */
    struct { int *perm; int rank; } permute;     /* output logical i = input axis perm[i] */
    struct { bool *is_squeezed; int rank; } squeeze; /* per input axis (reduction axes left out) */
    /* OP_FULL: the value in the dtype, exactly: `value` for floating dtypes, `ivalue` for
     * integers and bool (`value` is then its double, for printing only). */
    /* extent: a 0-d full whose value is this integer scalar (cf_tv_size: a size read at
     * run time), made a constant by concretization; NULL for every other full. */
    /* imag: the imaginary part of a complex dtype's value (0 for every other dtype). */
    struct { double value; int64_t ivalue; Val *extent; double imag; } full;
    /* OP_IOTA: the element at index (i_0, ..., i_axis, ...) is start + i_axis * step, in
     * double for floating dtypes (then rounded once) and exactly in int64 for integers
     * (istart, istep); cf_iota makes the 1-D one (axis 0). */
    struct { double start, step; int64_t istart, istep; int axis; } iota;
    /* A binary op with a scalar b: the constant `value`, or, when `val` is set, that
     * integer scalar Val evaluated at run time (a mean's count over symbolic extents,
     * e.g. i0 * i2), converted to double. */
    struct { double value; bool is_scalar_rhs; Val *val; } scalar_rhs;
    /* OP_SLICE: per operand axis, output element i reads start + i * step (step >= 1);
     * start is an integer scalar: a constant, or on a symbolic extent the bound normalized
     * at run time (max(0, i0 - 4) for -4: ops_resize.c); resized: the axis is cut (not
     * start 0, step 1 and the whole extent). */
    struct { Val **start; int64_t *step; bool *resized; int rank; } slice;
    /* OP_PAD: per operand axis, left and right widths (>= 0); outside the operand the
     * value (a double for floating dtypes, ivalue for integers and bool). */
    struct { int64_t *left, *right; int rank; double value; int64_t ivalue; } pad;
    /* OP_CAT: in[0] then in[1] along `axis`; element i reads in[0] at i below in[0]'s
     * extent, in[1] at i - that extent above. */
    struct { int axis; } cat;
    /* OPK_INDEXED: the axis the op reads along (the output's and every operand's). */
    struct { int axis; } indexed;
  } attr;
};

/* ---- the fusion ------------------------------------------------------------------------ */

/* User grouping of tensor-memory TensorViews into regions (one tcgen05.alloc each). */
typedef struct TMemRegionSpec {
  Val **tvs;
  int ntvs;
} TMemRegionSpec;

struct cf_fusion {
  Arena *arena;
  PtrVec vals;   /* every Val by id */
  PtrVec exprs;  /* every Expr by id */
  PtrVec inputs; /* TensorView Vals */
  PtrVec outputs;
  int next_name[3]; /* per ValKind */
  cf_status status;
  char *error;      /* malloc'd message of the first error, or NULL */
  PtrVec tmem_regions; /* TMemRegionSpec*, optional user grouping */
  bool signed_coords;  /* a schedule's choice: a 32-bit kernel reads the thread and block
                        * coordinates as int even without a strided tensor (lower/tensors.c,
                        * KKernel.signed_coords); set by the outer persistent scheduler */
  int blocks_per_sm;   /* a schedule's occupancy: blocks an SM must hold (a CUDA kernel's
                        * __launch_bounds__ minimum; set by the outer persistent scheduler
                        * with a tensor spilled to shared memory), 0: none asked */
};

/* Handle conversions. ir_tv/ir_id return NULL for a NULL handle. */
static inline Val *ir_tv(const cf_tv *t) { return (Val *)(uintptr_t)t; }
static inline Val *ir_idv(const cf_id *i) { return (Val *)(uintptr_t)i; }
static inline cf_tv *ir_tv_handle(Val *v) { return (cf_tv *)(void *)v; }
static inline cf_id *ir_id_handle(Val *v) { return (cf_id *)(void *)v; }
static inline TensorView *TV(Val *v) { return &v->u.tv; }
static inline IterDomain *ID(Val *v) { return &v->u.id; }
static inline Scalar *SC(Val *v) { return &v->u.scalar; }

/* ---- errors ------------------------------------------------------------------------------ */

/* Records the first error on f (sticky) and returns its status. Later calls keep the first. */
cf_status ir_error(cf_fusion *f, cf_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The same with the domain of tv appended: "<msg> for T2_l_float[iS0{4}, iS1{8}]". */
cf_status ir_error_tv(cf_fusion *f, cf_status s, Val *tv, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The checks every public call taking (f, tv) starts with: f non-NULL and without an
 * earlier error, tv non-NULL, a TensorView of f. `what` names the call in the message
 * ("split: tensor is NULL", "add: T3 belongs to another fusion"). */
cf_status ir_check_tv(cf_fusion *f, const char *what, cf_tv *t);
#define IR_INTERNAL(f, cond)                                                                    \
  ir_error((f), CF_ERR_INTERNAL, "internal error at %s:%d: %s; please report this bug", __FILE__, \
           __LINE__, #cond)

/* ---- construction (fusion.c, scalar.c, tensor.c) ------------------------------------------- */

Val *ir_val_new(cf_fusion *f, ValKind kind, cf_dtype dtype);
Expr *ir_expr_new(cf_fusion *f, IrOp op, int nin, Val *const *in, int nout, Val *const *out);
/* Removes e from f: from its operands' uses and the list of expressions (the later ones
 * renumbered: an Expr's id is its index), its outputs left without a definition. */
void ir_expr_drop(cf_fusion *f, Expr *e);
/* Every reader of tensor `from` reads `to` instead (its use list moved), and an output of
 * f that is `from` becomes `to`; from's definition stays (the caller drops it). */
void ir_tv_replace_uses(cf_fusion *f, Val *from, Val *to);

Val *ir_const_int(cf_fusion *f, int64_t v);
Val *ir_const_double(cf_fusion *f, double v);
Val *ir_const_bool(cf_fusion *f, bool v);
/* A named symbolic index scalar; name NULL gives the next "i<name>". */
Val *ir_scalar_symbol(cf_fusion *f, const char *name);
/* Scalar arithmetic with constant folding and the identities x*1, x+0, ceilDiv(x,1). */
Val *ir_scalar_op(cf_fusion *f, IrOp op, Val *a, Val *b);
bool ir_scalar_is_const(const Val *v);
/* Integer semantics of a binary op (wrapping); false for division by zero or a non-integer op. */
bool ir_int_apply(IrOp op, int64_t a, int64_t b, int64_t *r);
/* The value of a constant integer scalar; false when not constant. */
bool ir_scalar_const_value(const Val *v, int64_t *out);

/* Binds symbolic scalars to values, by Val id. */
typedef struct ScalarBindings {
  int n;
  int *ids;
  int64_t *values;
} ScalarBindings;
/* Evaluates an integer scalar expression; false if something is unbound (unbound_name
 * then points at the missing symbol's name). */
bool ir_scalar_eval(const Val *v, const ScalarBindings *b, int64_t *out, const char **unbound_name);

Val *ir_id_new(cf_fusion *f, Val *extent, cf_iter_type type);
Val *ir_id_clone(cf_fusion *f, Val *id); /* same extent/type/ptype, fresh name */
/* Makes a TensorView over the given logical axes (adopted, their tv set to the new one);
 * root == logical, loop == logical, memory local. */
Val *ir_tv_new(cf_fusion *f, cf_dtype dtype, int n, Val *const *logical);
/* A TensorView whose logical axes are fresh copies of in's logical axes (reduction axes
 * dropped), for ops: the caller then wires the Expr. */
Val *ir_tv_like(cf_fusion *f, Val *in, cf_dtype dtype);

/* Whether an IterDomain has a single position: a broadcast, or a constant extent of 1
 * (loops over it run index 0 only; shape ops squeeze it). transform.c. */
bool ir_id_is_one_position(const Val *id);

/* ---- transforms on IterDomains (transform.c) ------------------------------------------ */

/* Creates the split of id; returns false on OOM. factor is a scalar Val. */
bool ir_id_split(cf_fusion *f, Val *id, Val *factor, bool inner, Val **outer_out, Val **inner_out);
Val *ir_id_merge(cf_fusion *f, Val *outer, Val *inner);
bool ir_id_swizzle(cf_fusion *f, SwizzleType t, Val *x, Val *y, Val **x_out, Val **y_out);
/* Replaces tv's loop domain (copying the array into the arena). */
void ir_tv_set_loop(cf_fusion *f, Val *tv, int n, Val *const *ids);

/* ---- traversal (fusion.c) ------------------------------------------------------------------ */

/* Tensor Exprs reachable from the outputs, in topological order (producers first). The
 * plain variants allocate the result in the fusion's arena; callers that run repeatedly
 * (lowering, evaluation, scheduling calls) use the _in variants with a scratch arena.
 * NULL only when out of memory: none is an empty list (n = 0). */
Expr **ir_fusion_tensor_exprs(cf_fusion *f, int *n);
Expr **ir_fusion_tensor_exprs_in(Arena *a, cf_fusion *f, int *n);
Val **ir_fusion_all_tvs_in(Arena *a, cf_fusion *f, int *n);
/* Every TensorView used by the fusion's tensor exprs plus inputs/outputs, in topo order. */
Val **ir_fusion_all_tvs(cf_fusion *f, int *n);
bool ir_tv_is_input(const cf_fusion *f, const Val *tv);
bool ir_tv_is_output(const cf_fusion *f, const Val *tv);
/* Consumer TensorViews of tv (outputs of tensor Exprs using it). */
Val **ir_tv_consumers(cf_fusion *f, Val *tv, int *n);
Val **ir_tv_producers(cf_fusion *f, Val *tv, int *n);
/* The transform Exprs between tv's root/logical domain and its loop and allocation
 * domains, in topological order. */
Expr **ir_tv_history(cf_fusion *f, Val *tv, int *n);
/* The transforms from tv's root to its logical domain (only an rfactor tensor has any),
 * inputs before outputs. */
Expr **ir_tv_root_to_logical(Arena *a, Val *tv, int *n);
/* The same with the result in arena `a` (lowering keeps the user's fusion untouched). */
Expr **ir_tv_history_in(Arena *a, Val *tv, int *n);
/* The root of a TensorView (root when set, else logical). */
static inline Val **ir_tv_root(Val *tv, int *n) {
  *n = TV(tv)->nroot;
  return TV(tv)->root;
}
/* Allocation domain (alloc when set, else logical) and its contiguity. */
Val **ir_tv_alloc_domain(Val *tv, int *n);
/* Wraps a possibly negative axis against n (for loop positions use n+1); -1 if invalid. */
int ir_wrap_axis(int axis, int n);
/* ---- copies (clone.c) ------------------------------------------------------------------ */

/* Copies a part of f into a new unscheduled fusion (see cf_fusion_copy): exprs, tensor
 * Exprs of f in topological order; ins, its inputs (inputs of f, or tensors of f computed
 * outside the part, which become inputs with their kept axes, contiguous); outs, its
 * outputs. sizes: NULL, or the tensors of a call (one per input of f), whose sizes replace
 * every symbolic size. map: NULL, or f->vals.len zeroed entries that receive each copied
 * Val. NULL only when out of memory; a failure is recorded on the returned fusion. */
cf_fusion *ir_fusion_copy_part(const cf_fusion *f, int nexprs, Expr *const *exprs, int nin, Val *const *ins, int nout,
                               Val *const *outs, const DLTensor *const *sizes, Val **map);

/* Checks that the constant extents of f agree at every tensor op: each operand's kept,
 * non-broadcast axes have the output's extent (extent_check.c); the first disagreement
 * is recorded, prefixed by `what`:
 *   execute: add: axis 0 has extent 6 in T1 but 5 in T2 */
cf_status ir_check_extents(cf_fusion *f, const char *what);
/* The same for one reshape: equal constant element counts of its input and output. */
cf_status ir_check_reshape(cf_fusion *f, const char *what, const Expr *e);

/* ---- dynamic ops (ops_dynamic.c, concretize.c) -------------------------------------------- */

/* e takes sizes at run time: a dynamic reshape, expand, slice or iota (ndyn > 0) or a
 * cf_tv_size (a full of a run-time extent). */
bool ir_expr_is_dynamic(const Expr *e);
/* Some expression of f reachable from its outputs is dynamic. */
bool ir_fusion_is_dynamic(cf_fusion *f);
/* The first such expression in topological order, or NULL. */
const Expr *ir_fusion_dynamic_expr(cf_fusion *f);
/* The concrete parameters of f's dynamic ops for a call (every output extent they give,
 * a slice's starts and steps), in topological order: the key of the call's concrete
 * fusion. Reads the integer 0-d inputs used as sizes (host memory: kDLCPU,
 * kDLCUDAHost or kDLCUDAManaged). out: room for cap words (*n receives the count, which
 * may exceed cap: call again with more room). An error (a bad value, a size on the
 * device) is written to msg (without a prefix) and returned; f is not touched. */
cf_status ir_dynamic_params(cf_fusion *f, const DLTensor *const *in, int64_t *out, int cap, int *n, char *msg,
                            size_t msglen);
/* A copy of f with every dynamic op made its static form for this call (constant sizes
 * and bounds): the size operands dropped, the extents they gave constants. NULL only when
 * out of memory; an error is recorded on the copy, prefixed by `what`. */
cf_fusion *ir_concretize(cf_fusion *f, const DLTensor *const *in, const char *what);

/* ---- rules of parallel and memory types (rules.c: one table each) ------------------- */

typedef enum PtLevel { PT_LEVEL_SERIAL, PT_LEVEL_THREAD, PT_LEVEL_BLOCK, PT_LEVEL_DEVICE, PT_LEVEL_INVALID } PtLevel;
/* serial (also Vectorize, Unroll, Unswitch) < thread < block < device; INVALID for an unknown value */
PtLevel ir_ptype_level(cf_parallel_type p);
/* The launch dimension (0 x, 1 y, 2 z) a thread/block/device type indexes, else -1. */
int ir_ptype_launch_dim(cf_parallel_type p);
/* Unroll and Unswitch: serial, but they say how the loop runs, so every axis sharing the
 * loop takes them (analysis/parallel_types.c) and the outermost such loop of a nest has its
 * predicates hoisted over a fallback copy (lower/unswitch.c). */
bool ir_ptype_shapes_loop(cf_parallel_type p);
bool ir_ptype_is_thread(cf_parallel_type p); /* TID* */
bool ir_ptype_is_block(cf_parallel_type p);  /* BID* */
bool ir_ptype_is_device(cf_parallel_type p); /* DID* */
/* Memory of type m has a copy per index of p (Local across TID/BID/DID, Shared and
 * Tensor across BID/DID, Global across DID): an axis on p is not allocated. */
bool ir_mem_distributed_across(cf_memory_type m, cf_parallel_type p);
/* All indices of launch type p see one copy (Shared and Tensor across TID, Global across
 * TID and BID): an axis on p is always allocated, and a write done once is read by all. */
bool ir_mem_shared_across(cf_memory_type m, cf_parallel_type p);

/* The part of cf_fusion_verify about the user's graph (verify.c): every output and every
 * operand reachable from one is computed or an input, and no tensor is both. */
cf_status ir_verify_sources(cf_fusion *f);

/* ---- printing (printer.c) ---------------------------------------------------------------- */

void ir_print_scalar(StrBuf *b, const Val *v);
void ir_print_id(StrBuf *b, const Val *id);
void ir_print_tv(StrBuf *b, const Val *tv);     /* T2_s_float[iS4{2}, iblockIdx.x5{4}] */
/* " (DeviceMesh{0 1})": a tensor's mesh as nvFuser prints it after its domain (mesh.c). */
void ir_print_mesh(StrBuf *b, const cf_device_mesh *m);
/* The mesh axis a DID type indexes (DIDx the innermost, DIDy the one before), or -1 when
 * p is not a DID type or m has no such axis (mesh.c). */
int ir_mesh_axis_of(const cf_device_mesh *m, cf_parallel_type p);
void ir_print_expr(StrBuf *b, const Expr *e);   /* one math line */
void ir_print_transform(StrBuf *b, const Expr *e);
/* The domain string of tv for error messages (malloc'd). */
char *ir_tv_str(const Val *tv);

#endif
