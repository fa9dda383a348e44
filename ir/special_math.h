/* ir/special_math.h: special functions neither C's libm nor (for digamma) CUDA provides,
 * in double precision, written once in the subset of C that CUDA C++ also compiles: the
 * reference evaluator includes it (ir/eval_math.c), and the build embeds it into the
 * kernels' runtime (both dialects prepend it before ops_math.h), so the evaluator and the
 * kernels compute these with the same algorithm.
 *
 * erfinv and erfcinv: Giles' single-precision approximation ("Approximating the erfinv
 * function", GPU Computing Gems, 2011) as the first guess, then Newton steps on erf or
 * erfc, whichever keeps relative precision (erfc near 1, so 1 - 1e-16 inverts to 5.9 to
 * the last bit). digamma: the recurrence psi(x) = psi(x + 1) - 1/x up to x >= 10, then
 * the asymptotic series ln x - 1/2x - sum B2k / (2k x^2k) to x^-14 (error below 1e-16
 * there); the reflection psi(x) = psi(1 - x) - pi / tan(pi x) for x < 0; torch's values
 * at the poles: digamma(+0) = -inf, digamma(-0) = +inf, negative integers give NaN.
 * gcd: Euclid's algorithm on the absolute values in unsigned 64-bit arithmetic, so that
 * |INT64_MIN| = 2^63 is exact; narrowed to a dtype it is that width's INT_MIN, as torch's
 * two's complement gives (gcd(INT32_MIN, 0) of int32 is INT32_MIN). */
#ifndef CF_SPECIAL_MATH_H
#define CF_SPECIAL_MATH_H

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define CF_SPECIAL_FN __device__ __forceinline__
#elif defined(CFH_INLINE)
#define CF_SPECIAL_FN CFH_INLINE
#else
#define CF_SPECIAL_FN static inline
#endif

CF_SPECIAL_FN long long cf_special_gcd(long long a, long long b) {
  unsigned long long x = a < 0 ? 0ull - (unsigned long long)a : (unsigned long long)a;
  unsigned long long y = b < 0 ? 0ull - (unsigned long long)b : (unsigned long long)b;
  while (y != 0) {
    unsigned long long t = x % y;
    x = y;
    y = t;
  }
  return (long long)x;
}

#define CF_SPECIAL_PI 3.14159265358979323846
#define CF_SPECIAL_2_SQRTPI 1.12837916709551257390 /* 2 / sqrt(pi), erf's slope at 0 */

/* Giles' guess for erfinv(t), given q = (1 - t)(1 + t) computed without cancellation. */
CF_SPECIAL_FN double cf_special_erfinv_guess(double t, double q) {
  double w = -log(q), p;
  if (w < 5.0) {
    w = w - 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  return p * t;
}

/* y >= 0 with erfc(y) = x, for x in (0, 1]: Newton steps on erfc (relative precision kept
 * down to the smallest x). Below 1e-15 Giles' guess is out of its range: the guess there
 * solves erfc's asymptote exp(-y^2) / (y sqrt(pi)) = x by fixed-point steps. */
CF_SPECIAL_FN double cf_special_erfcinv_core(double x) {
  double y;
  if (x < 1e-15) {
    y = sqrt(-log(x));
    for (int i = 0; i < 4; i++) y = sqrt(-log(x) - log(y * 1.77245385090551602730)); /* sqrt(pi) */
  } else {
    y = cf_special_erfinv_guess(1.0 - x, x * (2.0 - x));
  }
  for (int i = 0; i < 4; i++) {
    double d = CF_SPECIAL_2_SQRTPI * exp(-y * y);
    if (d == 0) break; /* exp underflowed: y is as close as double holds */
    y += (erfc(y) - x) / d;
  }
  return y;
}

CF_SPECIAL_FN double cf_special_erfcinv(double x) {
  if (x != x || x < 0.0 || x > 2.0) return NAN;
  if (x == 0.0) return INFINITY;
  if (x == 2.0) return -INFINITY;
  return x > 1.0 ? -cf_special_erfcinv_core(2.0 - x) : cf_special_erfcinv_core(x);
}

CF_SPECIAL_FN double cf_special_erfinv(double x) {
  if (x != x || x < -1.0 || x > 1.0) return NAN;
  if (x < 0.0) return -cf_special_erfinv(-x);
  if (x == 1.0) return INFINITY;
  if (x > 0.5) return cf_special_erfcinv_core(1.0 - x); /* 1 - x is exact here */
  if (x == 0.0) return x; /* keeps the sign of zero */
  double y = cf_special_erfinv_guess(x, (1.0 - x) * (1.0 + x));
  for (int i = 0; i < 3; i++) y -= (erf(y) - x) / (CF_SPECIAL_2_SQRTPI * exp(-y * y));
  return y;
}

CF_SPECIAL_FN double cf_special_digamma(double x) {
  if (x != x || x == INFINITY) return x;
  if (x == 0.0) return 1.0 / x < 0 ? INFINITY : -INFINITY; /* -0 gives +inf, +0 gives -inf */
  double r = 0.0;
  if (x < 0.0) {
    if (x == floor(x)) return NAN; /* the poles, -inf included */
    /* tan(pi x) has period 1: reduced to the nearest integer's offset in [-1/2, 1/2], so
     * that x near an integer keeps its precision (x - floor(x) rounded -1e-40 to 1, and
     * digamma(-1e-40) came out 2.6e16, not 1e40) */
    r = -CF_SPECIAL_PI / tan(CF_SPECIAL_PI * (x - round(x)));
    x = 1.0 - x;
  }
  for (; x < 10.0; x += 1.0) r -= 1.0 / x;
  double z = 1.0 / (x * x);
  double s = z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760 -
                                                                                                    z / 12))))));
  return r + log(x) - 0.5 / x - s;
}

#endif
