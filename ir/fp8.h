/* ir/fp8.h: the floating types narrower than 16 bits, float8_e4m3fn (__e4m3),
 * float8_e5m2 (__e5m2) and float4_e2m1fn (__e2m1), their conversions and the packed
 * accesses of the 4-bit one, written once in the subset of C that CUDA C++ also compiles
 * (as ir/philox.h): the element loads and stores of ir/dltensor.c include it, and the
 * build embeds it into every host-backend kernel (after host_math.h) and into CUDA kernels
 * that touch one of these types (codegen/cuda.c).
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
 * compilations give the same bits.
 *
 * float4_e2m1fn (nvFuser's Float4_e2m1fn; torch has it only as the storage type
 * float4_e2m1fn_x2, without conversions) follows CUDA's cuda_fp4.h instead: a float
 * rounds to nearest even and saturates to +-6 (an infinity too), NaN becomes +6 (0x7:
 * __nv_cvt_double_to_fp4's "NaN converts to positive FP4_MAXNORM", and the hardware's
 * cvt.rn.satfinite.e2m1x2.f32), a magnitude up to 0.25 is a zero of its sign. A double is
 * rounded to float first, as for the 8-bit floats (one algorithm on every backend; CUDA's
 * own double path rounds once, so 0.25 + 2^-60 gives 0 here and 0.5 there). In a register
 * an __e2m1 holds one value in the low nibble of its byte; in a tensor two values share a
 * byte, element 2k in the low nibble (DLPack's and torch's order): cf_fp4_get reads one,
 * cf_fp4_pack and cf_fp4_unpack move an even number of them (a vector access), so every
 * byte written is written whole by one thread. No Blackwell instruction: this compiles
 * for sm_90a. */
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

/* ---- float4_e2m1fn --------------------------------------------------------------------- */

typedef struct __e2m1 {
  unsigned char x; /* the code in the low nibble: sign, 2 exponent bits, 1 mantissa bit */
} __e2m1;

CF_FP8_FN __e2m1 __float2e2m1(float f) {
  unsigned u = cf_fp8__bits(f), a = u & 0x7FFFFFFFu, sign = (u >> 28) & 0x8u;
  __e2m1 r; /* NaN: +6; a finite or infinite magnitude rounds, past 6 saturating to 6 */
  r.x = (unsigned char)(a > 0x7F800000u ? 0x7u : sign | cf_fp8__round(a, 1, 2, 0x8u, 0x7u));
  return r;
}

CF_FP8_FN float __e2m12float(__e2m1 h) {
  return cf_fp8__decode((h.x & 0x8u) << 4 | (h.x & 0x7u), 1, 2, false, false);
}

/* Element i of packed 4-bit data p. */
CF_FP8_FN __e2m1 cf_fp4_get(const void *p, long long i) {
  __e2m1 r;
  r.x = (unsigned char)((((const unsigned char *)p)[i >> 1] >> ((i & 1) * 4)) & 0xFu);
  return r;
}

/* Elements i .. i + n - 1 of packed data p from src (i and n even: whole bytes). */
CF_FP8_FN void cf_fp4_pack(void *p, long long i, const __e2m1 *src, int n) {
  unsigned char *b = (unsigned char *)p + (i >> 1);
  for (int k = 0; k < n; k += 2) b[k >> 1] = (unsigned char)((src[k].x & 0xFu) | (src[k + 1].x & 0xFu) << 4);
}

/* dst[0 .. n - 1] from elements i .. i + n - 1 of packed data p. */
CF_FP8_FN void cf_fp4_unpack(__e2m1 *dst, const void *p, long long i, int n) {
  for (int k = 0; k < n; k++) dst[k] = cf_fp4_get(p, i + k);
}

#endif
