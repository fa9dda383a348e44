/* ops_math.h: the helpers the op table's code forms name (ir/ir.h, IR_OP_TABLE), the same
 * text for CUDA C++ and the host backend's C (embedded into libcfuser; codegen/cuda.c
 * prepends it after cuda_helpers.cuh, the host runtime after host_math.h).
 *
 * Each helper is written once per arithmetic type a kernel computes in (float, double,
 * int64_t: emit.c converts every operand to one of them) and implements the rule the
 * evaluator's form of the same op implements (ir/eval_math.c): NaN-propagating maximum
 * and minimum; integer division by zero gives -1 and its remainder the dividend, INT_MIN /
 * -1 gives INT_MIN (no trap, on every backend); exact integer pow; floating-to-integer
 * conversions that truncate, saturate and send NaN to 0 (CUDA's cvt.rzi.sat, never C's
 * undefined behaviour). The generic names are overloads in C++ and _Generic selections
 * in C; the typed bodies are cf_<name>_f, _d and _i. */
#ifndef CF_OPS_MATH_H
#define CF_OPS_MATH_H

#ifdef __cplusplus
#define CF_OPS_FN __device__ __forceinline__
#else
#define CF_OPS_FN CFH_INLINE
#endif

#define CF_OPS_MF(name) name##f
#define CF_OPS_MD(name) name

/* ---- floating bodies: T float with M = CF_OPS_MF (expf...), double with CF_OPS_MD ---------- */

#define CF_OPS_FLOATING(s, T, M)                                                            \
  CF_OPS_FN T cf_max_##s(T a, T b) { return (a != a || b != b) ? a + b : M(fmax)(a, b); }   \
  CF_OPS_FN T cf_min_##s(T a, T b) { return (a != a || b != b) ? a + b : M(fmin)(a, b); }   \
  CF_OPS_FN T cf_div_##s(T a, T b) { return a / b; }                                        \
  CF_OPS_FN T cf_mod_##s(T a, T b) { return M(fmod)(a, b); }                                \
  CF_OPS_FN T cf_ceildiv_##s(T a, T b) { return M(ceil)(a / b); }                           \
  CF_OPS_FN T cf_pow_##s(T a, T b) { return M(pow)(a, b); }                                 \
  CF_OPS_FN T cf_abs_##s(T a) { return M(fabs)(a); }                                        \
  CF_OPS_FN T cf_floor_##s(T a) { return M(floor)(a); }                                     \
  CF_OPS_FN T cf_ceil_##s(T a) { return M(ceil)(a); }                                      \
  CF_OPS_FN T cf_round_##s(T a) { return M(rint)(a); }                                      \
  CF_OPS_FN T cf_trunc_##s(T a) { return M(trunc)(a); }                                     \
  CF_OPS_FN T cf_frac_##s(T a) { return a - M(trunc)(a); }                                  \
  CF_OPS_FN T cf_sign_##s(T a) { return (T)((0 < a) - (a < 0)); }                           \
  CF_OPS_FN T cf_silu_##s(T a) { return a * ((T)1 / ((T)1 + M(exp)(-a))); }                 \
  CF_OPS_FN T cf_nextafter_##s(T a, T b) { return M(nextafter)(a, b); }                     \
  CF_OPS_FN bool cf_isnan_##s(T a) { return a != a; }                                       \
  CF_OPS_FN bool cf_isinf_##s(T a) { return a == (T)INFINITY || a == -(T)INFINITY; }        \
  CF_OPS_FN bool cf_isfinite_##s(T a) { return a == a && !cf_isinf_##s(a); }                \
  CF_OPS_FN bool cf_isneginf_##s(T a) { return a == -(T)INFINITY; }                         \
  CF_OPS_FN bool cf_isposinf_##s(T a) { return a == (T)INFINITY; }                          \
  CF_OPS_FN bool cf_isreal_##s(T a) { return (void)a, true; }                               \
  CF_OPS_FN bool cf_signbit_##s(T a) { return signbit(a) != 0; }                            \
  /* torch's remainder (the divisor's sign) and floor division (Python's //) */            \
  CF_OPS_FN T cf_remainder_##s(T a, T b) {                                                  \
    T m = M(fmod)(a, b);                                                                    \
    return m != 0 && (b < 0) != (m < 0) ? m + b : m;                                        \
  }                                                                                         \
  CF_OPS_FN T cf_floor_divide_##s(T a, T b) {                                               \
    if (b == 0) return a / b;                                                               \
    T mod = M(fmod)(a, b), div = (a - mod) / b;                                             \
    if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;                                         \
    if (div == 0) return M(copysign)((T)0, a / b);                                          \
    T q = M(floor)(div);                                                                    \
    return div - q > (T)0.5 ? q + 1 : q;                                                    \
  }                                                                                         \
  CF_OPS_FN T cf_erfinv_##s(T a) { return (T)cf_special_erfinv(a); }                        \
  CF_OPS_FN T cf_erfcinv_##s(T a) { return (T)cf_special_erfcinv(a); }                      \
  CF_OPS_FN T cf_digamma_##s(T a) { return (T)cf_special_digamma(a); }
CF_OPS_FLOATING(f, float, CF_OPS_MF)
CF_OPS_FLOATING(d, double, CF_OPS_MD)

/* ---- int64 bodies: two's complement, wrapping through unsigned ------------------------------ */

CF_OPS_FN int64_t cf_ops_neg_i(int64_t a) { return (int64_t)(0ull - (unsigned long long)a); }
CF_OPS_FN int64_t cf_max_i(int64_t a, int64_t b) { return a > b ? a : b; }
CF_OPS_FN int64_t cf_min_i(int64_t a, int64_t b) { return a < b ? a : b; }
CF_OPS_FN int64_t cf_div_i(int64_t a, int64_t b) { return b == 0 ? -1 : b == -1 ? cf_ops_neg_i(a) : a / b; }
CF_OPS_FN int64_t cf_mod_i(int64_t a, int64_t b) { return b == 0 ? a : b == -1 ? 0 : a % b; }
CF_OPS_FN int64_t cf_ceildiv_i(int64_t a, int64_t b) {
  return cf_div_i((int64_t)((unsigned long long)a + (unsigned long long)b - 1ull), b);
}
CF_OPS_FN int64_t cf_pow_i(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? (b % 2 ? -1 : 1) : 0;
  unsigned long long r = 1, x = (unsigned long long)a;
  for (; b; b >>= 1, x *= x)
    if (b & 1) r *= x;
  return (int64_t)r;
}
CF_OPS_FN int64_t cf_abs_i(int64_t a) { return a < 0 ? cf_ops_neg_i(a) : a; }
CF_OPS_FN int64_t cf_floor_i(int64_t a) { return a; }
CF_OPS_FN int64_t cf_ceil_i(int64_t a) { return a; }
CF_OPS_FN int64_t cf_round_i(int64_t a) { return a; }
CF_OPS_FN int64_t cf_trunc_i(int64_t a) { return a; }
CF_OPS_FN int64_t cf_sign_i(int64_t a) { return (0 < a) - (a < 0); }
CF_OPS_FN bool cf_isnan_i(int64_t a) { return (void)a, false; }
CF_OPS_FN bool cf_isinf_i(int64_t a) { return (void)a, false; }
CF_OPS_FN bool cf_isfinite_i(int64_t a) { return (void)a, true; }
CF_OPS_FN bool cf_isneginf_i(int64_t a) { return (void)a, false; }
CF_OPS_FN bool cf_isposinf_i(int64_t a) { return (void)a, false; }
CF_OPS_FN bool cf_isreal_i(int64_t a) { return (void)a, true; }
CF_OPS_FN bool cf_signbit_i(int64_t a) { return a < 0; }
CF_OPS_FN int64_t cf_remainder_i(int64_t a, int64_t b) {
  int64_t m = cf_mod_i(a, b);
  return m != 0 && (b < 0) != (m < 0) ? m + b : m;
}
CF_OPS_FN int64_t cf_floor_divide_i(int64_t a, int64_t b) {
  int64_t q = cf_div_i(a, b);
  return b != 0 && b != -1 && a % b != 0 && (a < 0) != (b < 0) ? q - 1 : q;
}
/* Shifts by a negative amount or by 64 and more: 0 (left) or the sign (right); narrowed
 * to a smaller dtype this is torch's rule for that width too. */
CF_OPS_FN int64_t cf_shl_i(int64_t a, int64_t b) {
  return b < 0 || b >= 64 ? 0 : (int64_t)((unsigned long long)a << b);
}
CF_OPS_FN int64_t cf_shr_i(int64_t a, int64_t b) {
  int64_t s = b < 0 || b >= 64 ? 63 : b;
  return a < 0 ? ~(~a >> s) : a >> s;
}
/* The position an index names along an axis of extent n (gather, take_along_axis,
 * scatter): a negative index counts from the end; one still outside is clamped into the
 * axis (a kernel cannot raise as the evaluator does; it never reads or writes outside). */
CF_OPS_FN int64_t cf_index_clamp(int64_t i, int64_t n) {
  if (i < 0) i += n;
  return i < 0 || n <= 0 ? 0 : i >= n ? n - 1 : i;
}

/* ---- the generic names ------------------------------------------------------------------------ */

#ifdef __cplusplus
#define CF_OPS_GENERIC1(name)                                                  \
  CF_OPS_FN float name(float a) { return name##_f(a); }                        \
  CF_OPS_FN double name(double a) { return name##_d(a); }                      \
  CF_OPS_FN int64_t name(int64_t a) { return name##_i(a); }
#define CF_OPS_GENERIC2(name)                                                  \
  CF_OPS_FN float name(float a, float b) { return name##_f(a, b); }            \
  CF_OPS_FN double name(double a, double b) { return name##_d(a, b); }         \
  CF_OPS_FN int64_t name(int64_t a, int64_t b) { return name##_i(a, b); }
CF_OPS_GENERIC2(cf_max)
CF_OPS_GENERIC2(cf_min)
CF_OPS_GENERIC2(cf_div)
CF_OPS_GENERIC2(cf_mod)
CF_OPS_GENERIC2(cf_ceildiv)
CF_OPS_GENERIC2(cf_pow)
CF_OPS_GENERIC1(cf_abs)
CF_OPS_GENERIC1(cf_floor)
CF_OPS_GENERIC1(cf_ceil)
CF_OPS_GENERIC1(cf_round)
CF_OPS_GENERIC1(cf_trunc)
CF_OPS_GENERIC1(cf_sign)
CF_OPS_GENERIC2(cf_remainder)
CF_OPS_GENERIC2(cf_floor_divide)
#define CF_OPS_PREDICATE(name)                                   \
  CF_OPS_FN bool name(float a) { return name##_f(a); }          \
  CF_OPS_FN bool name(double a) { return name##_d(a); }         \
  CF_OPS_FN bool name(int64_t a) { return name##_i(a); }
CF_OPS_PREDICATE(cf_isnan)
CF_OPS_PREDICATE(cf_isinf)
CF_OPS_PREDICATE(cf_isfinite)
CF_OPS_PREDICATE(cf_isneginf)
CF_OPS_PREDICATE(cf_isposinf)
CF_OPS_PREDICATE(cf_isreal)
CF_OPS_PREDICATE(cf_signbit)
#define CF_OPS_FLOAT1(name)                                      \
  CF_OPS_FN float name(float a) { return name##_f(a); }         \
  CF_OPS_FN double name(double a) { return name##_d(a); }
CF_OPS_FLOAT1(cf_frac)
CF_OPS_FLOAT1(cf_silu)
CF_OPS_FLOAT1(cf_digamma)
CF_OPS_FN float cf_nextafter(float a, float b) { return cf_nextafter_f(a, b); }
CF_OPS_FN double cf_nextafter(double a, double b) { return cf_nextafter_d(a, b); }
CF_OPS_FN int64_t cf_shl(int64_t a, int64_t b) { return cf_shl_i(a, b); }
CF_OPS_FN int64_t cf_shr(int64_t a, int64_t b) { return cf_shr_i(a, b); }
CF_OPS_FN int64_t cf_gcd(int64_t a, int64_t b) { return cf_special_gcd(a, b); }
/* real and conj of a real element (any type, half and bool included): itself, as torch's
 * are. Every CUDA kernel has these, a kernel without a complex dtype included; complex.h
 * adds the complex overloads, which overload resolution prefers to a template. (The host
 * spells them as complex.h's _Generic selections, whose default is the same identity.) */
template <typename T> CF_OPS_FN T cf_creal(T x) { return x; }
template <typename T> CF_OPS_FN T cf_conj(T x) { return x; }
#else
#define CF_OPS_SELECT(name, a) _Generic((a), float: name##_f, double: name##_d, default: name##_i)
#define cf_max(a, b) CF_OPS_SELECT(cf_max, a)((a), (b))
#define cf_min(a, b) CF_OPS_SELECT(cf_min, a)((a), (b))
#define cf_div(a, b) CF_OPS_SELECT(cf_div, a)((a), (b))
#define cf_mod(a, b) CF_OPS_SELECT(cf_mod, a)((a), (b))
#define cf_ceildiv(a, b) CF_OPS_SELECT(cf_ceildiv, a)((a), (b))
#define cf_pow(a, b) CF_OPS_SELECT(cf_pow, a)((a), (b))
#define cf_abs(a) CF_OPS_SELECT(cf_abs, a)(a)
#define cf_floor(a) CF_OPS_SELECT(cf_floor, a)(a)
#define cf_ceil(a) CF_OPS_SELECT(cf_ceil, a)(a)
#define cf_round(a) CF_OPS_SELECT(cf_round, a)(a)
#define cf_trunc(a) CF_OPS_SELECT(cf_trunc, a)(a)
#define cf_sign(a) CF_OPS_SELECT(cf_sign, a)(a)
#define cf_remainder(a, b) CF_OPS_SELECT(cf_remainder, a)((a), (b))
#define cf_floor_divide(a, b) CF_OPS_SELECT(cf_floor_divide, a)((a), (b))
#define cf_isnan(a) CF_OPS_SELECT(cf_isnan, a)(a)
#define cf_isinf(a) CF_OPS_SELECT(cf_isinf, a)(a)
#define cf_isfinite(a) CF_OPS_SELECT(cf_isfinite, a)(a)
#define cf_isneginf(a) CF_OPS_SELECT(cf_isneginf, a)(a)
#define cf_isposinf(a) CF_OPS_SELECT(cf_isposinf, a)(a)
#define cf_isreal(a) CF_OPS_SELECT(cf_isreal, a)(a)
#define cf_signbit(a) CF_OPS_SELECT(cf_signbit, a)(a)
/* floating only (the type rule makes the compute type float or double) */
#define CF_OPS_SELECT_FLOAT(name, a) _Generic((a), float: name##_f, default: name##_d)
#define cf_frac(a) CF_OPS_SELECT_FLOAT(cf_frac, a)(a)
#define cf_silu(a) CF_OPS_SELECT_FLOAT(cf_silu, a)(a)
#define cf_digamma(a) CF_OPS_SELECT_FLOAT(cf_digamma, a)(a)
#define cf_erfinv(a) CF_OPS_SELECT_FLOAT(cf_erfinv, a)(a)
#define cf_erfcinv(a) CF_OPS_SELECT_FLOAT(cf_erfcinv, a)(a)
#define cf_nextafter(a, b) CF_OPS_SELECT_FLOAT(cf_nextafter, a)((a), (b))
#define cf_shl(a, b) cf_shl_i((a), (b))
#define cf_shr(a, b) cf_shr_i((a), (b))
#define cf_gcd(a, b) cf_special_gcd((a), (b))
#endif

/* ---- floating -> integer conversions ------------------------------------------------------------ */

/* Truncation toward zero, saturated to the type's range, NaN to 0: x <= lo gives LO, x >=
 * hi1 (2^(bits-1), or 2^32 for uint32: exact in float and double) gives HI. */
#define CF_OPS_TO_INT(s, I, LO, HI, lo, hi1)                                                    \
  CF_OPS_FN I cf_f2##s##_f(float x) { return x != x ? (I)0 : x <= (float)(lo) ? (I)(LO) : x >= (float)(hi1) ? (I)(HI) : (I)x; } \
  CF_OPS_FN I cf_f2##s##_d(double x) { return x != x ? (I)0 : x <= (lo) ? (I)(LO) : x >= (hi1) ? (I)(HI) : (I)x; }
CF_OPS_TO_INT(s8, int8_t, -128, 127, -128.0, 128.0)
CF_OPS_TO_INT(s32, int32_t, -2147483647 - 1, 2147483647, -2147483648.0, 2147483648.0)
CF_OPS_TO_INT(s64, int64_t, -9223372036854775807LL - 1, 9223372036854775807LL, -9223372036854775808.0,
              9223372036854775808.0)
CF_OPS_TO_INT(u32, uint32_t, 0u, 4294967295u, 0.0, 4294967296.0)

#ifdef __cplusplus
#define CF_OPS_CONVERT(s, I)                                    \
  CF_OPS_FN I cf_f2##s(float x) { return cf_f2##s##_f(x); }    \
  CF_OPS_FN I cf_f2##s(double x) { return cf_f2##s##_d(x); }
CF_OPS_CONVERT(s8, int8_t)
CF_OPS_CONVERT(s32, int32_t)
CF_OPS_CONVERT(s64, int64_t)
CF_OPS_CONVERT(u32, uint32_t)
#else
#define cf_f2s8(x) _Generic((x), float: cf_f2s8_f, default: cf_f2s8_d)(x)
#define cf_f2s32(x) _Generic((x), float: cf_f2s32_f, default: cf_f2s32_d)(x)
#define cf_f2s64(x) _Generic((x), float: cf_f2s64_f, default: cf_f2s64_d)(x)
#define cf_f2u32(x) _Generic((x), float: cf_f2u32_f, default: cf_f2u32_d)(x)
#endif

#endif
