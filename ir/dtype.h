/* ir/dtype.h: element types below the IR (internal header): the DLPack mapping, the
 * type rules of the ops, element conversion and element math.
 *
 * One place for every fact about an element type that more than one module needs: the
 * executor binds DLPack arguments with ir_dtype_from_dl, the evaluator and the tensor
 * helpers read and write elements with ir_elem_load/ir_elem_store, ops.c and eval.c agree
 * on result types through the op table's type rule (ir_dtype_result_type,
 * ir_op_result_dtype), and the evaluator computes every op with its evaluator form
 * (ir_op_eval). Implemented in dltensor.c (DLPack, conversion), op_table.c (type rules)
 * and eval_math.c (element math). */
#ifndef CFUSER_IR_DTYPE_H
#define CFUSER_IR_DTYPE_H

#include <dlpack/dlpack.h>
#include <stdbool.h>
#include <stdint.h>

#include "ir/ir.h"

/* DLPack 0.6 (Debian's libdlpack-dev) predates kDLBool; 0.8 gave it the value 6. The
 * dtype table of types.h names it, so define it here for older headers. */
#if DLPACK_VERSION < 80
#define kDLBool 6U
#endif

/* ---- DLPack (dltensor.c) ------------------------------------------------------------- */

/* The cfuser dtype of a DLPack type; false when there is none (lanes != 1 included). */
bool ir_dtype_from_dl(DLDataType dl, cf_dtype *out);
DLDataType ir_dtype_to_dl(cf_dtype t);
bool ir_dtype_valid(cf_dtype t);
bool ir_dtype_is_float(cf_dtype t); /* float, double and the narrow ones */
/* The storage-only floating types that compute in float (the opmath type): half,
 * bfloat16, float8_e4m3fn, float8_e5m2. */
bool ir_dtype_is_narrow_float(cf_dtype t);
/* complex_float and complex_double (ir_dtype_is_float is false for them: they are their
 * own category, above the floating one, in promotion). */
bool ir_dtype_is_complex(cf_dtype t);
/* Whether every value of dtype a is exactly a value of dtype b (a embeds in b): then a
 * conversion a -> b -> a is the identity (bfloat16 -> float -> bfloat16), and a -> b -> c
 * is a -> c. Floats by exponent and significand bits (half, bfloat16 and the 8-bit floats
 * in float, float in double; bfloat16 not in half), integers by their magnitude bits (int8
 * in float, int32 in double, not in float), bool in every numeric type, a real type in a
 * complex one whose parts it embeds in; never a Welford state. */
bool ir_dtype_embeds(cf_dtype a, cf_dtype b);
/* The types whose elements are carried in IrElem.d (and .c): floating and complex. */
bool ir_dtype_is_inexact(cf_dtype t);
/* The real type of the same precision: float for complex_float, double for
 * complex_double, t itself for every other type. */
cf_dtype ir_dtype_real_of(cf_dtype t);
/* The complex type holding t's values: complex_double for double, complex_float for the
 * other floating types, integers and bool (torch's), t itself for a complex t. */
cf_dtype ir_dtype_complex_of(cf_dtype t);
/* The accumulation column of the dtype table: the type a reduction of elements of dtype t
 * accumulates in, wherever its partial results live (registers, shared workspaces, grid
 * work buffers, rfactor partials, tensors between segments): float for float, half and
 * bfloat16 (torch's and nvFuser's rule: a bfloat16 row of 16,384 ones sums to 16,384,
 * not 256), double for double, int64 for integers and bool, a Welford state type for
 * itself. The one rule lowering, codegen and the schedulers read. */
cf_dtype ir_dtype_accumulate(cf_dtype t);
/* The type's name for messages: cfuser's ("float") or DLPack's fields ("code 5 bits 64"). */
void ir_dl_type_str(DLDataType dl, char *buf, size_t n);

/* Element strides of t (its own, or row-major when t->strides is NULL) into out[ndim]. */
void ir_dl_strides(const DLTensor *t, int64_t *out);
/* Address of the element at offset `off` elements from t's first element (not of a packed
 * dtype: ir_dl_load and ir_dl_store read and write any element). */
void *ir_dl_elem_ptr(const DLTensor *t, int64_t off);
/* Whether t's elements are packed below a byte (float4_e2m1fn: two to a byte, element 2k
 * in the low nibble). */
bool ir_dtype_is_packed(cf_dtype t);
/* Whether a tensor of dtype t and this shape starts each row at a byte: its innermost
 * extent is even (always, for an unpacked t or a 0-d tensor). Packed tensors must: a byte
 * is written whole by one thread, and torch's float4_e2m1fn_x2 counts bytes. */
bool ir_packed_rows_whole(cf_dtype t, int rank, const int64_t *shape);
/* True for memory the host can read (CPU, CUDA host-pinned). */
bool ir_dl_is_host(const DLTensor *t);
/* The axis whose stride breaks row-major contiguity (the innermost such), with the stride
 * it should have in *expect; -1 when t is contiguous: no strides, or each axis of a size
 * other than 1 at the row-major stride, or no element at all (an empty tensor is read
 * nowhere, so its strides promise nothing: torch gives empty tensors any strides). Size-1
 * axes may have any stride (torch keeps 1 or 0 for an expanded one). */
int ir_dl_noncontiguous_axis(const DLTensor *t, int64_t *expect);

/* ---- element values (dltensor.c) ------------------------------------------------------- */

/* An element widened for computing: d for floating dtypes, i for integers and bool, c for
 * complex ones. **Decision**: one union, c's real part sharing d's bytes, so that code
 * reading .d of any inexact value reads the real part and every real path is unchanged;
 * c.im is meaningful only where the dtype says complex. */
typedef union IrElem {
  double d;
  int64_t i;
  struct {
    double re, im;
  } c;
} IrElem;

IrElem ir_elem_load(const void *p, cf_dtype t);
/* Converts v (of class `from`'s: floating or integral) to t and stores it, rounding as
 * C does (half and bfloat16 round to nearest even; floating -> integer truncates and
 * saturates, NaN gives 0, as CUDA's conversions do; integers wrap). */
void ir_elem_store(void *p, cf_dtype t, IrElem v, cf_dtype from);
/* v of dtype `from` converted to dtype `to` and widened again (the value a kernel holds
 * after casting to `to`). */
IrElem ir_elem_convert(IrElem v, cf_dtype from, cf_dtype to);
double ir_elem_to_double(IrElem v, cf_dtype t);
/* The evaluator of an indexed op (ir/eval_index.c): e's operands as host tensors with
 * their element strides, its output dense and row-major; NULL, or a malloc'd message
 * (without "evaluate: ") naming the op, the tensor and the element at fault. */
char *ir_eval_indexed(const Expr *e, const DLTensor *const *in, const int64_t *const *st, DLTensor *out);
/* A reduction's accumulator start in the evaluator's wide types (its identity column:
 * IrElem.d for floating accumulators, .i for integers), for the reductions and the scans
 * (ir/eval.c). */
IrElem ir_reduction_start(IrOp op, bool fl);

uint16_t ir_half_from_double(double x);
double ir_half_to_double(uint16_t h);
uint16_t ir_bf16_from_double(double x);
double ir_bf16_to_double(uint16_t h);
/* float8_e4m3fn or float8_e5m2 (t) bits of x, rounded as torch does (to float first, then
 * to nearest even; e4m3fn overflows to NaN, e5m2 to infinity: ir/fp8.h), and back. */
uint8_t ir_fp8_from_double(double x, cf_dtype t);
/* Element `off` (in elements) of t, of dtype dt, widened; and stored from `from` (a packed
 * element's nibble rewritten, its byte's other nibble kept). */
IrElem ir_dl_load(const DLTensor *t, int64_t off, cf_dtype dt);
void ir_dl_store(const DLTensor *t, int64_t off, cf_dtype dt, IrElem v, cf_dtype from);
/* A complex element value {re, im}. */
static inline IrElem ir_complex(double re, double im) { return (IrElem){.c = {re, im}}; }
double ir_fp8_to_double(uint8_t b, cf_dtype t);

/* ---- the type rules of the ops (op_table.c) ----------------------------------------- */

/* The dtype torch calls the default float: what integers become under floating math and
 * what a floating scalar counts as in promotion. */
#define IR_DEFAULT_FLOAT CF_FLOAT

/* torch's promote_types: the wider of the two (double > float > bfloat16/half; half with
 * bfloat16 gives float; any float beats any integer; int64 > uint32 > int32 > int8 >
 * bool, uint32 with a signed type gives int64). */
cf_dtype ir_dtype_promote(cf_dtype a, cf_dtype b);
/* The tier of an operand in promotion: a tensor with axes, a 0-d tensor, or a scalar (a
 * cf_scalar_input or a constant: torch's wrapped numbers). */
typedef enum IrTier { IR_TIER_DIM, IR_TIER_ZERO_DIM, IR_TIER_SCALAR } IrTier;
/* torch.result_type of n operands: promote within each tier; a lower tier changes the
 * result only when its category (bool < integer < floating) is higher; a floating scalar
 * counts as IR_DEFAULT_FLOAT. float32 tensor * double scalar is float32; int32 tensor *
 * double scalar is float32; int8 tensor + int64 0-d tensor is int8. */
cf_dtype ir_dtype_result_type(int n, const cf_dtype *t, const IrTier *tier);
/* Whether op takes an operand of dtype t, and the kind it takes, for messages. */
bool ir_op_accepts(IrOp op, cf_dtype t);
const char *ir_op_accepts_str(IrOp op);
/* The result dtype of op from its operands' promoted dtype (bool for predicates and
 * comparisons, the default float for floating math on integers, ...). */
cf_dtype ir_op_result_dtype(IrOp op, cf_dtype promoted);
/* The dtype op computes in: its operands' promoted dtype for predicates, comparisons and
 * logical ops (and Welford fields), else its result's. */
cf_dtype ir_op_compute_dtype(IrOp op, cf_dtype promoted, cf_dtype out);
/* The dtype of the value op's forms give from operands of compute dtype ct: bool for
 * predicates, comparisons and logical ops, a Welford field's type, else ct. */
cf_dtype ir_op_value_dtype(IrOp op, cf_dtype ct);
/* The type operands are converted to before computing in ct (torch's opmath type): float
 * for half and bfloat16, ct otherwise. A double scalar times a half tensor is rounded to
 * float, not to half, before the product. */
cf_dtype ir_dtype_opmath(cf_dtype ct); /* float for every ir_dtype_is_narrow_float type */
/* ir_op_result_dtype of a unary op. */
cf_dtype ir_unary_dtype(IrOp op, cf_dtype in);
/* Result dtype of a tensor-scalar op whose constant is a double (cf_add_scalar, x + 2.5):
 * floats keep theirs; integers keep theirs for an integral value and become the default
 * float otherwise; bool becomes int64 or the default float. */
cf_dtype ir_scalar_rhs_dtype(cf_dtype a, double b);
/* Comparisons (type rule TR_COMPARE) produce bool. */
bool ir_op_is_comparison(IrOp op);

/* ---- Welford states (welford.c) --------------------------------------------------------- */

/* The state of a Welford reduction (one-pass mean and variance, Chan et al.'s parallel
 * merge): running mean, sum of squared deviations from it, and count. The kernels' CfWelfordF
 * and CfWelfordD (both runtimes) lay it out as {avg, m2, n} in the scalar type, n int64. */
typedef struct IrWelford {
  double avg, m2;
  int64_t n;
} IrWelford;

bool ir_dtype_is_welford(cf_dtype t);
/* The scalar type of a state's mean and M2: float or double. */
cf_dtype ir_welford_scalar(cf_dtype state);
/* The state dtype a Welford reduction of dtype t accumulates in (double inputs keep
 * double; the other floating types compute in float); CF_DTYPE_COUNT for non-floating t. */
cf_dtype ir_welford_state_of(cf_dtype t);
/* The state of nothing: the identity of ir_welford_merge. */
IrWelford ir_welford_empty(void);
/* The state of one element x. */
IrWelford ir_welford_of(double x);
/* The state of a and b together. */
IrWelford ir_welford_merge(IrWelford a, IrWelford b);
IrWelford ir_welford_load(const void *p, cf_dtype state);
/* Stores s rounded to the state's scalar type. */
void ir_welford_store(void *p, cf_dtype state, IrWelford s);

/* The online softmax (OP_ONLINE_SOFTMAX, made by the inner persistent scheduler's
 * multipass form): one pass giving a row's max m and the sum S of exp(x - m), each partial
 * state rescaled to the larger max as it merges. It keeps the Welford layout, so every
 * state path (rfactor, shuffles, grid folds) carries it unchanged: avg is m, m2 is S - 1
 * (so that the one-element state {x, 0, 1} of any Welford element is {x, S = 1, 1}, and
 * S >= 1 is rebuilt as m2 + 1 without cancellation), n the count (0: the empty state, the
 * identity). Read with welford_avg (m) and welford_m2 + 1 (S). Equal maxes, -inf ones
 * included, scale by exactly 1. */
IrWelford ir_softmax_merge(IrWelford a, IrWelford b);

/* ---- element math: the evaluator column of the op table (eval_math.c) ------------------ */

/* The evaluator's form of an op: its value from operands a[] already converted to the
 * compute dtype's opmath type (IrElem.d for floating ct, .i for integers and bool, .c for
 * complex ones: the forms of the ops ir_op_takes_complex lists have a complex branch). The
 * value has the dtype ir_op_value_dtype(op, ct) gives. Integer math wraps (two's
 * complement); integer division by zero gives -1 and its remainder the dividend, and
 * INT_MIN / -1 wraps to INT_MIN with remainder 0 (the rule of ops_math.h, identical on
 * every backend; see docs/architecture.md). */
typedef IrElem (*IrEvalFn)(const IrElem *a, cf_dtype ct);
/* Complex math for those forms (eval_complex.c: C99's complex functions, in double;
 * products and quotients of complex64 in float complex, as kernels compute them). */
IrElem ir_cx_mul(IrElem a, IrElem b, cf_dtype ct);
IrElem ir_cx_div(IrElem a, IrElem b, cf_dtype ct);
IrElem ir_cx_exp(IrElem a);
IrElem ir_cx_log(IrElem a);
IrElem ir_cx_sqrt(IrElem a);
IrElem ir_cx_rsqrt(IrElem a);
IrElem ir_cx_reciprocal(IrElem a);
double ir_cx_abs(IrElem a);
IrEvalFn ir_op_eval(IrOp op);
#define IR_X(e, name, kind, py, rule, ev, cuda, host) IrElem ev(const IrElem *a, cf_dtype ct);
IR_OP_TABLE(IR_X)
#undef IR_X

#endif
