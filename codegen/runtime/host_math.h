/* host_math.h: element types and math helpers of cfuser's host backend; the fourth part of
 * the host runtime, prepended after host_race.h.
 *
 * CUDA's __half and __nv_bfloat16 are 16-bit storage types here: a struct around a
 * uint16_t, so that arithmetic on an unconverted value is a compile error (generated code
 * converts to float to compute, as nvFuser's does). Conversions to them round to nearest
 * even, overflow to infinity, and turn NaN into CUDA's canonical 0x7FFF; float -> 16 bits
 * uses integer bit tricks, double -> 16 bits rounds once from the double (no double
 * rounding through float). The math helpers have CUDA's and nvFuser's names; C has no
 * overloading, so each dispatches on its argument's type with _Generic. */
#ifndef CFH_HOST_MATH_H
#define CFH_HOST_MATH_H
#ifndef CFH_HOST_RUNTIME_H
#error "host_math.h goes after host_runtime.h"
#endif

typedef struct __half {
  uint16_t x;
} __half;
typedef struct __nv_bfloat16 {
  uint16_t x;
} __nv_bfloat16;

/* A double from its bits: how generated code spells NaN, infinities and -0.0 exactly. */
CFH_INLINE double cf_f64_from_bits(uint64_t bits) {
  double d;
  memcpy(&d, &bits, sizeof d);
  return d;
}

CFH_INLINE float cfh__f32(uint32_t bits) {
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

CFH_INLINE float __half2float(__half h) {
  uint32_t sign = (uint32_t)(h.x & 0x8000u) << 16, e = (h.x >> 10) & 0x1Fu, m = h.x & 0x3FFu;
  if (e == 0x1F) return cfh__f32(sign | 0x7F800000u | m << 13);
  if (e) return cfh__f32(sign | (e + 112u) << 23 | m << 13);
  float v = (float)m * 5.9604644775390625e-8f; /* subnormal: m * 2^-24, exact */
  return sign ? -v : v;
}

CFH_INLINE __half __float2half(float f) {
  uint32_t x, a;
  memcpy(&x, &f, 4);
  a = x & 0x7FFFFFFFu;
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u), h;
  if (a > 0x7F800000u) return (__half){0x7FFF};
  if (a >= 0x477FF000u) { /* >= 65520 (inf included) rounds to infinity */
    h = 0x7C00;
  } else if (a >= 0x38800000u) { /* normal: rebias the exponent, round 13 bits away */
    uint32_t r = a & 0x1FFFu;
    h = (uint16_t)((a - 0x38000000u) >> 13);
    h = (uint16_t)(h + (r > 0x1000u || (r == 0x1000u && (h & 1u))));
  } else if (a > 0x33000000u) { /* subnormal: m * 2^(e-150) in units of 2^-24 */
    uint32_t e = a >> 23, m = (a & 0x7FFFFFu) | 0x800000u, s = 126u - e;
    uint32_t r = m & ((1u << s) - 1u), halfway = 1u << (s - 1u);
    h = (uint16_t)(m >> s);
    h = (uint16_t)(h + (r > halfway || (r == halfway && (h & 1u))));
  } else { /* at most 2^-25: rounds to zero */
    h = 0;
  }
  return (__half){(uint16_t)(sign | h)};
}

CFH_INLINE float __bfloat162float(__nv_bfloat16 b) { return cfh__f32((uint32_t)b.x << 16); }

CFH_INLINE __nv_bfloat16 __float2bfloat16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (__nv_bfloat16){0x7FFF};
  x += 0x7FFFu + ((x >> 16) & 1u);
  return (__nv_bfloat16){(uint16_t)(x >> 16)};
}

/* x rounded to nearest even in a binary format of `mbits` fraction and `ebits` exponent
 * bits; returns the bits. */
CFH_FN uint32_t cfh__round_to_format(double x, int mbits, int ebits) {
  int bias = (1 << (ebits - 1)) - 1, e;
  uint32_t sign = signbit(x) ? 1u << (mbits + ebits) : 0, inf = ((1u << ebits) - 1) << mbits;
  double a = fabs(x);
  if (isnan(x)) return 0x7FFF;
  if (isinf(a)) return sign | inf;
  if (a < ldexp(1.0, 1 - bias)) /* subnormal: a multiple of 2^(1-bias-mbits) */
    return sign | (uint32_t)nearbyint(ldexp(a, mbits - 1 + bias));
  frexp(a, &e);
  e -= 1; /* a in [2^e, 2^(e+1)) */
  double m = nearbyint(ldexp(a, mbits - e));
  if (m == ldexp(1.0, mbits + 1)) {
    m /= 2;
    e++;
  }
  if (e > bias) return sign | inf;
  return sign | ((uint32_t)(e + bias) << mbits) | ((uint32_t)m - (1u << mbits));
}
CFH_INLINE __half __double2half(double d) {
  return (__half){(uint16_t)cfh__round_to_format(d, 10, 5)};
}
CFH_INLINE __nv_bfloat16 __double2bfloat16(double d) {
  return (__nv_bfloat16){(uint16_t)cfh__round_to_format(d, 7, 8)};
}

/* ---- math with CUDA's names ------------------------------------------------------------ */

CFH_INLINE float cfh__rsqrtf(float x) { return 1.0f / sqrtf(x); }
CFH_INLINE double cfh__rsqrt(double x) { return 1.0 / sqrt(x); }
CFH_INLINE float cfh__recipf(float x) { return 1.0f / x; }
CFH_INLINE double cfh__recip(double x) { return 1.0 / x; }
/* relu keeps NaN (torch's and nvFuser's x <= 0 ? 0 : x) */
CFH_INLINE float cfh__reluf(float x) { return x <= 0 ? 0.0f : x; }
CFH_INLINE double cfh__relu(double x) { return x <= 0 ? 0.0 : x; }
CFH_INLINE int cfh__relui(int x) { return x <= 0 ? 0 : x; }
CFH_INLINE long cfh__relul(long x) { return x <= 0 ? 0 : x; }
CFH_INLINE long long cfh__relull(long long x) { return x <= 0 ? 0 : x; }
CFH_INLINE float cfh__sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }
CFH_INLINE double cfh__sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
CFH_INLINE float cfh__geluf(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }
CFH_INLINE double cfh__gelu(double x) { return 0.5 * x * (1.0 + erf(x * 0.70710678118654752440)); }

#define rsqrtf(x) cfh__rsqrtf(x)
#define rsqrt(x) _Generic((x), float: cfh__rsqrtf, default: cfh__rsqrt)(x)
#define reciprocal(x) _Generic((x), float: cfh__recipf, default: cfh__recip)(x)
#define relu(x)                                                                            \
  _Generic((x), float: cfh__reluf, int: cfh__relui, long: cfh__relul, long long: cfh__relull, \
           default: cfh__relu)(x)
#define sigmoid(x) _Generic((x), float: cfh__sigmoidf, default: cfh__sigmoid)(x)
#define gelu(x) _Generic((x), float: cfh__geluf, default: cfh__gelu)(x)

/* Integer helpers for each type a sum of two C integers can have. */
#define CFH_INT_HELPERS(s, T)                                                       \
  CFH_INLINE T cfh__cdiv_##s(T a, T b) { return (a + b - 1) / b; }                   \
  CFH_INLINE T cfh__max_##s(T a, T b) { return a > b ? a : b; }                      \
  CFH_INLINE T cfh__min_##s(T a, T b) { return a < b ? a : b; }
CFH_INT_HELPERS(i, int)
CFH_INT_HELPERS(u, unsigned int)
CFH_INT_HELPERS(l, long)
CFH_INT_HELPERS(ul, unsigned long)
CFH_INT_HELPERS(ll, long long)
CFH_INT_HELPERS(ull, unsigned long long)
#define CFH_BY_INT_TYPE(f, a, b)                                                          \
  _Generic((a) + (b), int: cfh__##f##_i, unsigned int: cfh__##f##_u, long: cfh__##f##_l, \
           unsigned long: cfh__##f##_ul, long long: cfh__##f##_ll,                        \
           unsigned long long: cfh__##f##_ull, float: cfh__##f##_f, double: cfh__##f##_d)
CFH_INLINE float cfh__max_f(float a, float b) { return fmaxf(a, b); }
CFH_INLINE double cfh__max_d(double a, double b) { return fmax(a, b); }
CFH_INLINE float cfh__min_f(float a, float b) { return fminf(a, b); }
CFH_INLINE double cfh__min_d(double a, double b) { return fmin(a, b); }
CFH_INLINE float cfh__cdiv_f(float a, float b) { return ceilf(a / b); }
CFH_INLINE double cfh__cdiv_d(double a, double b) { return ceil(a / b); }

/* ceilDiv(a, b) = (a + b - 1) / b, max and min: on the type of a + b, as in CUDA. */
#define ceilDiv(a, b) CFH_BY_INT_TYPE(cdiv, a, b)((a), (b))
#define max(a, b) CFH_BY_INT_TYPE(max, a, b)((a), (b))
#define min(a, b) CFH_BY_INT_TYPE(min, a, b)((a), (b))

#endif
