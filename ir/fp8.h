/* ir/fp8.h: the two 8-bit floating types, float8_e4m3fn (__e4m3) and float8_e5m2
 * (__e5m2), and their conversions, written once in the subset of C that CUDA C++ also
 * compiles (as ir/philox.h): the element loads and stores of ir/dltensor.c include it,
 * and the build embeds it into every host-backend kernel (after host_math.h) and into
 * CUDA kernels that touch an 8-bit float (codegen/cuda.c).
 *
 * Both types are storage only, a struct around one byte, as __half is: kernels convert to
 * float to compute (the op table's opmath type) and back to store. Key decision: the
 * conversions are torch's (c10's Float8_e4m3fn and Float8_e5m2), not CUDA's: a float
 * rounds to nearest even; e4m3fn has no infinity, so a magnitude that rounds past 448
 * (above 464), an infinity or a NaN becomes NaN (0x7F, with the sign); e5m2 is IEEE-like:
 * past 57344 (from 61440 up) it overflows to infinity, NaN is 0x7F with the sign. A double
 * is rounded to float first, as torch's conversions do (so a double just above a tie of
 * two fp8 values rounds as torch's does). cuda_fp8.h's __nv_fp8_e4m3 saturates on sm_89+
 * (the hardware's cvt is .satfinite only), and so do nvFuser's casts; cfuser follows
 * torch, the reference users compare against. Integer bit arithmetic only, so the three
 * compilations give the same bits. */
#ifndef CF_FP8_H
#define CF_FP8_H

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define CF_FP8_FN __device__ __forceinline__
#define CF_FP8_CUDA 1
#elif defined(CFH_INLINE)
#define CF_FP8_FN CFH_INLINE
#else
#define CF_FP8_FN static inline
#endif

typedef struct __e4m3 {
  unsigned char x;
} __e4m3;
typedef struct __e5m2 {
  unsigned char x;
} __e5m2;

#ifdef CF_FP8_CUDA
CF_FP8_FN unsigned cf_fp8__bits(float f) { return __float_as_uint(f); }
CF_FP8_FN float cf_fp8__float(unsigned u) { return __uint_as_float(u); }
#else
CF_FP8_FN unsigned cf_fp8__bits(float f) {
  unsigned u;
  memcpy(&u, &f, sizeof u);
  return u;
}
CF_FP8_FN float cf_fp8__float(unsigned u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
#endif

/* The bits of f rounded to nearest even in a format of `mbits` fraction and `ebits`
 * exponent bits, without its sign; `top` is the largest magnitude code that is a number
 * plus one (e4m3fn: 0x7F, its NaN; e5m2: 0x7C, its infinity) and `over` what a larger
 * result becomes (NaN or infinity). */
CF_FP8_FN unsigned cf_fp8__round(unsigned a, int mbits, int ebits, unsigned top, unsigned over) {
  int bias = (1 << (ebits - 1)) - 1;
  unsigned ef = a >> 23;
  if (ef >= (unsigned)(128 - bias)) { /* normal in the format: rebias, round 23 - mbits bits away */
    int shift = 23 - mbits;
    unsigned r = a - ((unsigned)(127 - bias) << 23);
    r += (1u << (shift - 1)) - 1u + ((r >> shift) & 1u);
    r >>= shift;
    return r >= top ? over : r;
  }
  /* subnormal in the format: the float's significand in units of 2^(1 - bias - mbits) */
  unsigned m = ef ? (a & 0x7FFFFFu) | 0x800000u : a & 0x7FFFFFu;
  int s = 151 - bias - mbits - (int)(ef ? ef : 1u);
  if (s >= 25) return 0; /* below half the smallest subnormal */
  unsigned rem = m & ((1u << s) - 1u), half = 1u << (s - 1), q = m >> s;
  return q + (rem > half || (rem == half && (q & 1u)));
}

CF_FP8_FN __e4m3 __float2e4m3(float f) {
  unsigned u = cf_fp8__bits(f), a = u & 0x7FFFFFFFu, sign = (u >> 24) & 0x80u;
  __e4m3 r;
  r.x = (unsigned char)(sign | (a >= 0x7F800000u ? 0x7Fu : cf_fp8__round(a, 3, 4, 0x7Fu, 0x7Fu)));
  return r;
}

CF_FP8_FN __e5m2 __float2e5m2(float f) {
  unsigned u = cf_fp8__bits(f), a = u & 0x7FFFFFFFu, sign = (u >> 24) & 0x80u;
  __e5m2 r;
  r.x = (unsigned char)(sign | (a > 0x7F800000u ? 0x7Fu : cf_fp8__round(a, 2, 5, 0x7Cu, 0x7Cu)));
  return r;
}

/* The float of fp8 bits b (exact: every fp8 value is a float). */
CF_FP8_FN float cf_fp8__decode(unsigned b, int mbits, int ebits, bool is_nan, bool is_inf) {
  int bias = (1 << (ebits - 1)) - 1;
  unsigned sign = (b & 0x80u) << 24, e = (b >> mbits) & ((1u << ebits) - 1u), m = b & ((1u << mbits) - 1u);
  if (is_nan) return cf_fp8__float(sign | 0x7FC00000u);
  if (is_inf) return cf_fp8__float(sign | 0x7F800000u);
  if (e) return cf_fp8__float(sign | (e + (unsigned)(127 - bias)) << 23 | m << (23 - mbits));
  float v = (float)m * cf_fp8__float((unsigned)(128 - bias - mbits) << 23); /* m * 2^(1 - bias - mbits) */
  return sign ? -v : v;
}

CF_FP8_FN float __e4m32float(__e4m3 h) { return cf_fp8__decode(h.x, 3, 4, (h.x & 0x7Fu) == 0x7Fu, false); }
CF_FP8_FN float __e5m22float(__e5m2 h) {
  return cf_fp8__decode(h.x, 2, 5, (h.x & 0x7Fu) > 0x7Cu, (h.x & 0x7Fu) == 0x7Cu);
}

#endif
