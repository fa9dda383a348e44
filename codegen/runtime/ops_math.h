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
  CF_OPS_FN T cf_ceil_##s(T a) { return M(ceil)(a); }
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
