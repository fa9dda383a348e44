/* ir/eval_math.c: the evaluator column of the op table: the value of each op on operands
 * widened to double (floating compute dtypes) or int64 (integers and bool).
 *
 * The reference evaluator (eval.c) calls these through ir_op_eval(op) and rounds the
 * value once into the result's dtype; the code generators print the table's CUDA and host
 * forms, whose helpers (codegen/runtime/ops_math.h) implement the same rules in the
 * kernels. Key decisions, each torch's or nvFuser's unless said: maximum and minimum (and
 * the max/min reductions, which fold with them) propagate NaN; integer math wraps in two's
 * complement (the kernels compute integers in int64 and narrow, which is the same modulo
 * 2^bits); integer pow is exact (0 ** -2 is 0, as torch's powi); integer division by zero
 * gives -1 and its remainder the dividend, INT_MIN / -1 gives INT_MIN and remainder 0 (no
 * trap on any backend: torch's CPU raises and its GPU gives what the hardware gives, so
 * cfuser defines one value, RISC-V's); relu keeps NaN (x <= 0 ? 0 : x). */
#include <math.h>

#include "ir/dtype.h"
#include "ir/philox.h"
#include "ir/special_math.h"

static IrElem F(double x) { return (IrElem){.d = x}; }
static IrElem I(int64_t x) { return (IrElem){.i = x}; }
static bool fl(cf_dtype ct) { return ir_dtype_is_float(ct); }
static bool cx(cf_dtype ct) { return ir_dtype_is_complex(ct); }
static IrElem C(double re, double im) { return ir_complex(re, im); }

static int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static int64_t wrap_sub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
static int64_t wrap_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }

/* Truncating division and its remainder, defined everywhere (see the file's header). */
static int64_t int_div(int64_t a, int64_t b) { return b == 0 ? -1 : b == -1 ? wrap_sub(0, a) : a / b; }
static int64_t int_mod(int64_t a, int64_t b) { return b == 0 ? a : b == -1 ? 0 : a % b; }

static int64_t int_pow(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? (b % 2 ? -1 : 1) : 0;
  int64_t r = 1;
  for (; b; b >>= 1, a = wrap_mul(a, a))
    if (b & 1) r = wrap_mul(r, a);
  return r;
}

/* NaN-propagating maximum and minimum (torch.maximum, nvFuser's max). */
static double nan_max(double a, double b) { return isnan(a) || isnan(b) ? a + b : fmax(a, b); }
static double nan_min(double a, double b) { return isnan(a) || isnan(b) ? a + b : fmin(a, b); }

static bool truth(IrElem x, cf_dtype ct) { return fl(ct) ? x.d != 0 : x.i != 0; }

/* ---- data movement and the rows without elements ------------------------------------------- */

/* Ops that move elements (set, cast, broadcast, permute, squeeze, expand, full, reshape):
 * the value is the operand's; the store into the result's dtype converts it. */
IrElem ir_ev_move(const IrElem *a, cf_dtype ct) {
  (void)ct;
  return a[0];
}

/* iota: a[0] the element's index, a[1] the start, a[2] the step (double for floating
 * dtypes, which compute in double: torch's CPU arange). */
IrElem ir_ev_iota(const IrElem *a, cf_dtype ct) {
  return fl(ct) ? F(a[1].d + a[0].d * a[2].d) : I(wrap_add(a[1].i, wrap_mul(a[0].i, a[2].i)));
}

/* Transforms of IterDomains have no elements, and Welford states (the online softmax's
 * too) do not fit an IrElem (the evaluator folds and reads them with ir/welford.c): these
 * forms are never called;
 * NaN makes any call that slips through visible. */
IrElem ir_ev_none(const IrElem *a, cf_dtype ct) {
  (void)a, (void)ct;
  return F(NAN);
}
IrElem ir_ev_welford_field(const IrElem *a, cf_dtype ct) { return ir_ev_none(a, ct); }
IrElem ir_ev_welford_merge(const IrElem *a, cf_dtype ct) { return ir_ev_none(a, ct); }
IrElem ir_ev_softmax_merge(const IrElem *a, cf_dtype ct) { return ir_ev_none(a, ct); }

/* ---- unary --------------------------------------------------------------------------------- */

IrElem ir_ev_neg(const IrElem *a, cf_dtype ct) {
  return cx(ct) ? C(-a[0].c.re, -a[0].c.im) : fl(ct) ? F(-a[0].d) : I(wrap_sub(0, a[0].i));
}
IrElem ir_ev_abs(const IrElem *a, cf_dtype ct) {
  if (cx(ct)) return F(ir_cx_abs(a[0])); /* |z|, of the real type (ir_op_complex_to_real) */
  return fl(ct) ? F(fabs(a[0].d)) : I(a[0].i < 0 ? wrap_sub(0, a[0].i) : a[0].i);
}
/* The parts of a complex value; of a real one, real is the value itself (torch's). */
IrElem ir_ev_real(const IrElem *a, cf_dtype ct) { return cx(ct) ? F(a[0].c.re) : a[0]; }
IrElem ir_ev_imag(const IrElem *a, cf_dtype ct) { return cx(ct) ? F(a[0].c.im) : F(0.0); }
IrElem ir_ev_conj(const IrElem *a, cf_dtype ct) { return cx(ct) ? C(a[0].c.re, -a[0].c.im) : a[0]; }
IrElem ir_ev_relu(const IrElem *a, cf_dtype ct) {
  return fl(ct) ? F(a[0].d <= 0 ? 0.0 : a[0].d) : I(a[0].i <= 0 ? 0 : a[0].i);
}
IrElem ir_ev_floor(const IrElem *a, cf_dtype ct) { return fl(ct) ? F(floor(a[0].d)) : a[0]; }
IrElem ir_ev_ceil(const IrElem *a, cf_dtype ct) { return fl(ct) ? F(ceil(a[0].d)) : a[0]; }

/* Floating math: the type rule makes ct floating (integers compute in the default float). */
#define EV_FLOAT1(name, expr)                                \
  IrElem ir_ev_##name(const IrElem *a, cf_dtype ct) {        \
    (void)ct;                                                \
    double x = a[0].d;                                       \
    return F(expr);                                          \
  }
/* The floating math that takes complex operands too (torch's principal branches). */
#define EV_FLOAT1_COMPLEX(name, expr)                        \
  IrElem ir_ev_##name(const IrElem *a, cf_dtype ct) {        \
    if (cx(ct)) return ir_cx_##name(a[0]);                   \
    double x = a[0].d;                                       \
    return F(expr);                                          \
  }
EV_FLOAT1_COMPLEX(exp, exp(x))
EV_FLOAT1_COMPLEX(log, log(x))
EV_FLOAT1_COMPLEX(sqrt, sqrt(x))
EV_FLOAT1_COMPLEX(rsqrt, 1.0 / sqrt(x))
EV_FLOAT1_COMPLEX(reciprocal, 1.0 / x)
EV_FLOAT1(sigmoid, 1.0 / (1.0 + exp(-x)))
EV_FLOAT1(tanh, tanh(x))
EV_FLOAT1(gelu, 0.5 * x * (1.0 + erf(x / sqrt(2.0))))
EV_FLOAT1(sin, sin(x))
EV_FLOAT1(cos, cos(x))
EV_FLOAT1(tan, tan(x))
EV_FLOAT1(erf, erf(x))
EV_FLOAT1(acos, acos(x))
EV_FLOAT1(acosh, acosh(x))
EV_FLOAT1(asin, asin(x))
EV_FLOAT1(asinh, asinh(x))
EV_FLOAT1(atan, atan(x))
EV_FLOAT1(atanh, atanh(x))
EV_FLOAT1(cosh, cosh(x))
EV_FLOAT1(sinh, sinh(x))
EV_FLOAT1(erfc, erfc(x))
EV_FLOAT1(expm1, expm1(x))
EV_FLOAT1(exp2, exp2(x))
EV_FLOAT1(log1p, log1p(x))
EV_FLOAT1(log2, log2(x))
EV_FLOAT1(log10, log10(x))
EV_FLOAT1(lgamma, lgamma(x))
EV_FLOAT1(erfinv, cf_special_erfinv(x))
EV_FLOAT1(erfcinv, cf_special_erfcinv(x))
EV_FLOAT1(digamma, cf_special_digamma(x))
EV_FLOAT1(silu, x * (1.0 / (1.0 + exp(-x))))
EV_FLOAT1(frac, x - trunc(x))

/* Rounding: the identity on integers (torch's); round is half to even (rint). */
IrElem ir_ev_round(const IrElem *a, cf_dtype ct) { return fl(ct) ? F(nearbyint(a[0].d)) : a[0]; }
IrElem ir_ev_trunc(const IrElem *a, cf_dtype ct) { return fl(ct) ? F(trunc(a[0].d)) : a[0]; }
/* torch's sign: (0 < x) - (x < 0), so NaN gives 0. */
IrElem ir_ev_sign(const IrElem *a, cf_dtype ct) {
  return fl(ct) ? F((0 < a[0].d) - (a[0].d < 0)) : I((0 < a[0].i) - (a[0].i < 0));
}

/* Predicates (bool values); integers and bool are finite, real, never NaN. */
#define EV_PREDICATE(name, float_expr, int_expr)             \
  IrElem ir_ev_##name(const IrElem *a, cf_dtype ct) {        \
    double x = a[0].d;                                       \
    int64_t i = a[0].i;                                      \
    (void)x, (void)i;                                        \
    return I(fl(ct) ? (float_expr) : (int_expr));            \
  }
EV_PREDICATE(isfinite, isfinite(x) != 0, 1)
EV_PREDICATE(isinf, isinf(x) != 0, 0)
EV_PREDICATE(isnan, isnan(x) != 0, 0)
EV_PREDICATE(isneginf, x == -INFINITY, 0)
EV_PREDICATE(isposinf, x == INFINITY, 0)
EV_PREDICATE(isreal, 1, 1)
EV_PREDICATE(signbit, signbit(x) != 0, i < 0)
EV_PREDICATE(logical_not, x == 0, i == 0)

IrElem ir_ev_bitwise_not(const IrElem *a, cf_dtype ct) {
  (void)ct; /* bool never gets here: ops.c makes bitwise_not of bool a logical_not */
  return I(~a[0].i);
}

/* ---- binary -------------------------------------------------------------------------------- */

IrElem ir_ev_add(const IrElem *a, cf_dtype ct) {
  if (cx(ct)) return C(a[0].c.re + a[1].c.re, a[0].c.im + a[1].c.im);
  return fl(ct) ? F(a[0].d + a[1].d) : I(wrap_add(a[0].i, a[1].i));
}
IrElem ir_ev_sub(const IrElem *a, cf_dtype ct) {
  if (cx(ct)) return C(a[0].c.re - a[1].c.re, a[0].c.im - a[1].c.im);
  return fl(ct) ? F(a[0].d - a[1].d) : I(wrap_sub(a[0].i, a[1].i));
}
IrElem ir_ev_mul(const IrElem *a, cf_dtype ct) {
  if (cx(ct)) return ir_cx_mul(a[0], a[1], ct);
  return fl(ct) ? F(a[0].d * a[1].d) : I(wrap_mul(a[0].i, a[1].i));
}
IrElem ir_ev_div(const IrElem *a, cf_dtype ct) {
  if (cx(ct)) return ir_cx_div(a[0], a[1], ct);
  return fl(ct) ? F(a[0].d / a[1].d) : I(int_div(a[0].i, a[1].i));
}
IrElem ir_ev_mod(const IrElem *a, cf_dtype ct) { return fl(ct) ? F(fmod(a[0].d, a[1].d)) : I(int_mod(a[0].i, a[1].i)); }
IrElem ir_ev_ceildiv(const IrElem *a, cf_dtype ct) {
  return fl(ct) ? F(ceil(a[0].d / a[1].d)) : I(int_div(wrap_sub(wrap_add(a[0].i, a[1].i), 1), a[1].i));
}
IrElem ir_ev_max(const IrElem *a, cf_dtype ct) {
  return fl(ct) ? F(nan_max(a[0].d, a[1].d)) : I(a[0].i > a[1].i ? a[0].i : a[1].i);
}
IrElem ir_ev_min(const IrElem *a, cf_dtype ct) {
  return fl(ct) ? F(nan_min(a[0].d, a[1].d)) : I(a[0].i < a[1].i ? a[0].i : a[1].i);
}
/* torch's floor division: integers round toward -inf (by zero: -1, as div); floating
 * point divides, then floors the exact quotient the way Python does (fmod first, so
 * 7.0 // 0.1 is 69, not 70). */
static double float_floor_divide(double a, double b) {
  if (b == 0) return a / b;
  double mod = fmod(a, b), div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
  if (div == 0) return copysign(0.0, a / b);
  double q = floor(div);
  return div - q > 0.5 ? q + 1 : q;
}
static int64_t int_floor_divide(int64_t a, int64_t b) {
  int64_t q = int_div(a, b);
  return b != 0 && b != -1 && a % b != 0 && (a < 0) != (b < 0) ? q - 1 : q;
}
/* torch's remainder: the sign of the divisor (Python's %). */
static double float_remainder(double a, double b) {
  double m = fmod(a, b);
  return m != 0 && (b < 0) != (m < 0) ? m + b : m;
}
static int64_t int_remainder(int64_t a, int64_t b) {
  int64_t m = int_mod(a, b);
  return m != 0 && (b < 0) != (m < 0) ? m + b : m;
}

IrElem ir_ev_truediv(const IrElem *a, cf_dtype ct) {
  if (cx(ct)) return ir_cx_div(a[0], a[1], ct); /* the type rule makes ct floating or complex */
  return F(a[0].d / a[1].d);
}
IrElem ir_ev_fmod(const IrElem *a, cf_dtype ct) { return ir_ev_mod(a, ct); }
IrElem ir_ev_remainder(const IrElem *a, cf_dtype ct) {
  return fl(ct) ? F(float_remainder(a[0].d, a[1].d)) : I(int_remainder(a[0].i, a[1].i));
}
IrElem ir_ev_floor_divide(const IrElem *a, cf_dtype ct) {
  return fl(ct) ? F(float_floor_divide(a[0].d, a[1].d)) : I(int_floor_divide(a[0].i, a[1].i));
}
IrElem ir_ev_atan2(const IrElem *a, cf_dtype ct) {
  (void)ct;
  return F(atan2(a[0].d, a[1].d));
}
/* nextafter steps in the compute dtype's own format (float or double). */
IrElem ir_ev_nextafter(const IrElem *a, cf_dtype ct) {
  return F(ct == CF_FLOAT ? (double)nextafterf((float)a[0].d, (float)a[1].d) : nextafter(a[0].d, a[1].d));
}
IrElem ir_ev_bitwise_and(const IrElem *a, cf_dtype ct) {
  (void)ct;
  return I(a[0].i & a[1].i);
}
IrElem ir_ev_bitwise_or(const IrElem *a, cf_dtype ct) {
  (void)ct;
  return I(a[0].i | a[1].i);
}
IrElem ir_ev_logical_or(const IrElem *a, cf_dtype ct) { return I(truth(a[0], ct) || truth(a[1], ct)); }
/* Shifts in int64, as the kernels compute: a shift by a negative amount or by 64 and more
 * gives 0 (left) or the sign (right), which narrowed to a smaller dtype is torch's rule
 * for that dtype's width too (a << 40 of an int32 keeps no bit, a >> 40 its sign). */
IrElem ir_ev_bitwise_left_shift(const IrElem *a, cf_dtype ct) {
  (void)ct;
  return I(a[1].i < 0 || a[1].i >= 64 ? 0 : (int64_t)((uint64_t)a[0].i << a[1].i));
}
IrElem ir_ev_bitwise_right_shift(const IrElem *a, cf_dtype ct) {
  (void)ct;
  int64_t s = a[1].i < 0 || a[1].i >= 64 ? 63 : a[1].i;
  return I(a[0].i < 0 ? ~(~a[0].i >> s) : a[0].i >> s);
}

IrElem ir_ev_gcd(const IrElem *a, cf_dtype ct) {
  (void)ct;
  return I(cf_special_gcd(a[0].i, a[1].i));
}

IrElem ir_ev_pow(const IrElem *a, cf_dtype ct) { return fl(ct) ? F(pow(a[0].d, a[1].d)) : I(int_pow(a[0].i, a[1].i)); }

#define EV_COMPARE(name, op)                                                 \
  IrElem ir_ev_##name(const IrElem *a, cf_dtype ct) {                        \
    return I(fl(ct) ? (a[0].d op a[1].d) : (a[0].i op a[1].i));              \
  }
/* eq and ne of complex values compare both parts. */
IrElem ir_ev_eq(const IrElem *a, cf_dtype ct) {
  if (cx(ct)) return I(a[0].c.re == a[1].c.re && a[0].c.im == a[1].c.im);
  return I(fl(ct) ? (a[0].d == a[1].d) : (a[0].i == a[1].i));
}
IrElem ir_ev_ne(const IrElem *a, cf_dtype ct) { return I(!ir_ev_eq(a, ct).i); }
EV_COMPARE(lt, <)
EV_COMPARE(le, <=)
EV_COMPARE(gt, >)
EV_COMPARE(ge, >=)

IrElem ir_ev_logical_and(const IrElem *a, cf_dtype ct) { return I(truth(a[0], ct) && truth(a[1], ct)); }
IrElem ir_ev_bitwise_xor(const IrElem *a, cf_dtype ct) {
  (void)ct;
  return I(a[0].i ^ a[1].i);
}

/* Random numbers: a[0] the seed, a[1] the offset, a[2] the element's row-major index in the
 * output (ir/philox.h: one function of the three, on every backend). */
IrElem ir_ev_rand(const IrElem *a, cf_dtype ct) {
  (void)ct;
  return F(cf_philox_uniform24(a[0].i, a[1].i, a[2].i));
}
IrElem ir_ev_rand64(const IrElem *a, cf_dtype ct) {
  (void)ct;
  return F(cf_philox_uniform53(a[0].i, a[1].i, a[2].i));
}
IrElem ir_ev_randn(const IrElem *a, cf_dtype ct) {
  (void)ct;
  return F(cf_philox_normal(a[0].i, a[1].i, a[2].i));
}

/* pad and cat: a[0] the operand read where a[2] (a bool condition) holds, a[1] otherwise
 * (the pad value, or cat's second operand). */
IrElem ir_ev_select(const IrElem *a, cf_dtype ct) {
  (void)ct;
  return a[2].i ? a[0] : a[1];
}

/* ---- ternary ------------------------------------------------------------------------------- */

/* where: a[0] is the bool condition (never converted), a[1] and a[2] the operands. */
IrElem ir_ev_where(const IrElem *a, cf_dtype ct) {
  (void)ct;
  return a[0].i ? a[1] : a[2];
}
