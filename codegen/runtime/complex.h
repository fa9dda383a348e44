/* complex.h: the complex element types in generated kernels, CfComplexF and CfComplexD
 * (the CF_COMPLEX_FLOAT and CF_COMPLEX_DOUBLE dtypes: {real, imaginary} of float or
 * double, laid out as C's float _Complex and torch's complex64/complex128), for CUDA C++
 * and the host backend's C (embedded into libcfuser; codegen/cuda.c prepends it to kernels
 * that use a complex dtype, the host runtime always has it, after welford.h).
 *
 * Key decision: the host's types are C99's _Complex, so its arithmetic (+ - * / ==) and
 * its exp, log, sqrt and |z| are C's (Annex G), the very functions the reference
 * evaluator calls (ir/eval_complex.c); the math names the op table's forms print (exp,
 * log, sqrt, rsqrt, reciprocal, cf_abs, cf_div) become _Generic selections whose default
 * stays the real function. NVRTC has no <complex>, so CUDA gets a struct with
 * constructors (from any real type: imaginary 0), operators and overloads of the same
 * names, written here to give the evaluator's values: Annex G's special values (the
 * recovery of products' and quotients' infinities, exp(-inf-infi) = 0-0i, sqrt(x+infi) =
 * inf+infi ...) and the C library's accuracy from subnormal parts to DBL_MAX (operands
 * scaled by powers of two: no intermediate overflow or underflow); products and quotients
 * are libgcc's algorithms step for step (complex64's quotients in double, complex128's
 * Smith's method with GCC 12's scaling), so they give its bits; complex64 reciprocal and
 * rsqrt are computed in double as the evaluator computes them. tests/codegen/
 * test_complex_cuda_math.c compiles this C++ for the host and checks it cell by cell
 * against glibc and libgcc. cf_creal, cf_cimag, cf_conj and cf_cbool (nonzero when either
 * part is) are the part ops and conversions emit.c prints; cf_creal and cf_conj of a real
 * type (torch's real and conj of a real tensor: itself) are ops_math.h's templates on
 * CUDA, which every kernel has (this file only those with a complex dtype), and the
 * _Generic selections' default here on the host. Sums shuffle and read grid partials of a
 * complex accumulator through __shfl_xor_sync and cf_complex_volatile. */
#ifndef CF_COMPLEX_H
#define CF_COMPLEX_H

#ifdef __cplusplus
#define CF_CX_FN __device__ __forceinline__

struct CfComplexD;
struct CfComplexF {
  float re, im;
  CF_CX_FN CfComplexF() : re(0), im(0) {}
  CF_CX_FN CfComplexF(float r, float i) : re(r), im(i) {}
  CF_CX_FN CfComplexF(const CfComplexD &z);
  template <typename U> CF_CX_FN CfComplexF(U r) : re((float)r), im(0) {}
};
struct CfComplexD {
  double re, im;
  CF_CX_FN CfComplexD() : re(0), im(0) {}
  CF_CX_FN CfComplexD(double r, double i) : re(r), im(i) {}
  CF_CX_FN CfComplexD(const CfComplexF &z) : re(z.re), im(z.im) {}
  template <typename U> CF_CX_FN CfComplexD(U r) : re((double)r), im(0) {}
};
CF_CX_FN CfComplexF::CfComplexF(const CfComplexD &z) : re((float)z.re), im((float)z.im) {}

CF_CX_FN CfComplexD cf_complex_d(double re, double im) { return CfComplexD(re, im); }

/* The real math of the complex functions, one overloaded name per function for both part
 * types (expf or exp), so that each algorithm below is written once, as a template.
 * cf_cxm_mul is a product the compiler never fuses into an fma: NVRTC's --fmad=true would
 * turn ac - bd into fma(a, c, -bd), -inf where C's overflowing ac - bd is inf - inf, NaN. */
#define CF_CX_MATH(T, M, MUL)                                                                \
  CF_CX_FN T cf_cxm_mul(T a, T b) { return MUL(a, b); }                                      \
  CF_CX_FN T cf_cxm_fabs(T x) { return M(fabs)(x); }                                         \
  CF_CX_FN T cf_cxm_copysign(T x, T y) { return M(copysign)(x, y); }                         \
  CF_CX_FN T cf_cxm_fmax(T x, T y) { return M(fmax)(x, y); }                                 \
  CF_CX_FN T cf_cxm_fma(T x, T y, T z) { return M(fma)(x, y, z); }                           \
  CF_CX_FN int cf_cxm_ilogb(T x) { return M(ilogb)(x); }                                     \
  CF_CX_FN T cf_cxm_ldexp(T x, int e) { return M(ldexp)(x, e); }                             \
  CF_CX_FN T cf_cxm_frexp(T x, int *e) { return M(frexp)(x, e); }                            \
  CF_CX_FN T cf_cxm_sqrt(T x) { return M(sqrt)(x); }                                         \
  CF_CX_FN T cf_cxm_exp(T x) { return M(exp)(x); }                                           \
  CF_CX_FN T cf_cxm_log(T x) { return M(log)(x); }                                           \
  CF_CX_FN T cf_cxm_log1p(T x) { return M(log1p)(x); }                                       \
  CF_CX_FN T cf_cxm_cos(T x) { return M(cos)(x); }                                           \
  CF_CX_FN T cf_cxm_sin(T x) { return M(sin)(x); }                                           \
  CF_CX_FN T cf_cxm_atan2(T y, T x) { return M(atan2)(y, x); }
#define CF_CX_MF(name) name##f
#define CF_CX_MD(name) name
CF_CX_MATH(float, CF_CX_MF, __fmul_rn)
CF_CX_MATH(double, CF_CX_MD, __dmul_rn)

template <typename T> CF_CX_FN bool cf_cx_isnan(T v) { return v != v; }
template <typename T> CF_CX_FN bool cf_cx_isinf(T v) { return cf_cxm_fabs(v) == (T)INFINITY; }
template <typename T> CF_CX_FN bool cf_cx_isfinite(T v) { return cf_cxm_fabs(v) < (T)INFINITY; }
/* Annex G's "box" of a value with an infinite part: +-1 where a part is infinite, +-0 where
 * it is not (NaN included), each with its part's sign; and a NaN part taken as +-0. */
template <typename T> CF_CX_FN T cf_cx_box(T v) { return cf_cxm_copysign(cf_cx_isinf(v) ? (T)1 : (T)0, v); }
template <typename T> CF_CX_FN T cf_cx_unnan(T v) { return cf_cx_isnan(v) ? cf_cxm_copysign((T)0, v) : v; }
/* ac + bd and bc - ad, each product rounded on its own (C's, never an fma). */
template <typename T> CF_CX_FN T cf_cx_dot(T a, T b, T c, T d) { return cf_cxm_mul(a, c) + cf_cxm_mul(b, d); }
template <typename T> CF_CX_FN T cf_cx_cross(T a, T b, T c, T d) { return cf_cxm_mul(b, c) - cf_cxm_mul(a, d); }
/* The binary exponent of the larger part of a finite nonzero value: both parts times
 * 2^-e then have the larger magnitude in [1, 2), so their squares and sums neither overflow
 * nor lose bits to underflow, subnormal parts included (ilogb is exact, and so is ldexp
 * back into the normal range). */
template <typename T> CF_CX_FN int cf_cx_exponent(T x, T y) {
  return cf_cxm_ilogb(cf_cxm_fmax(cf_cxm_fabs(x), cf_cxm_fabs(y)));
}

/* (a + bi)(c + di) as C99 Annex G (G.5.1) defines it, as the evaluator and the host compute
 * it: the textbook parts; where both come out NaN because a factor is infinite or a
 * product overflowed, the infinity is recovered by recomputing with infinite parts boxed
 * and NaN parts taken as 0 ((1+0i)(-inf-infi) is -inf-infi, not NaN+NaNi). */
template <typename S, typename T> CF_CX_FN S cf_cx_mul(T a, T b, T c, T d) {
  T ac = cf_cxm_mul(a, c), bd = cf_cxm_mul(b, d), ad = cf_cxm_mul(a, d), bc = cf_cxm_mul(b, c);
  T x = ac - bd, y = ad + bc;
  if (!cf_cx_isnan(x) || !cf_cx_isnan(y)) return S(x, y);
  bool inf1 = cf_cx_isinf(a) || cf_cx_isinf(b), inf2 = cf_cx_isinf(c) || cf_cx_isinf(d);
  bool over = cf_cx_isinf(ac) || cf_cx_isinf(bd) || cf_cx_isinf(ad) || cf_cx_isinf(bc);
  if (!inf1 && !inf2 && !over) return S(x, y);
  if (inf1) a = cf_cx_box(a), b = cf_cx_box(b);
  if (inf2) c = cf_cx_box(c), d = cf_cx_box(d);
  a = cf_cx_unnan(a), b = cf_cx_unnan(b), c = cf_cx_unnan(c), d = cf_cx_unnan(d);
  return S((T)INFINITY * (cf_cxm_mul(a, c) - cf_cxm_mul(b, d)), (T)INFINITY * (cf_cxm_mul(a, d) + cf_cxm_mul(b, c)));
}

/* Annex G's recovery of the quotients that computed as NaN+NaNi although they are infinite
 * or zero: nonzero over zero, infinite over finite, finite over infinite (x, y: the
 * quotient as computed). */
template <typename S, typename T> CF_CX_FN S cf_cx_div_special(T a, T b, T c, T d, T x, T y) {
  const T inf = (T)INFINITY;
  if (!cf_cx_isnan(x) || !cf_cx_isnan(y)) return S(x, y);
  if (c == 0 && d == 0 && (!cf_cx_isnan(a) || !cf_cx_isnan(b)))
    return S(cf_cxm_copysign(inf, c) * a, cf_cxm_copysign(inf, c) * b);
  if ((cf_cx_isinf(a) || cf_cx_isinf(b)) && cf_cx_isfinite(c) && cf_cx_isfinite(d)) {
    a = cf_cx_box(a), b = cf_cx_box(b);
    return S(inf * cf_cx_dot(a, b, c, d), inf * cf_cx_cross(a, b, c, d));
  }
  if ((cf_cx_isinf(c) || cf_cx_isinf(d)) && cf_cx_isfinite(a) && cf_cx_isfinite(b)) {
    c = cf_cx_box(c), d = cf_cx_box(d);
    return S((T)0 * cf_cx_dot(a, b, c, d), (T)0 * cf_cx_cross(a, b, c, d));
  }
  return S(x, y);
}

/* libgcc's complex128 division (GCC 12 and later's __divdc3, the evaluator's and the host
 * backend's), step for step, so that CUDA gives its bits, zeros' signs and NaNs included.
 * The divisor's larger part (c here; the callers swap the parts when it is d) sets the
 * scaling: every operand halved where it is at least DBL_MAX / 2 (no overflow of the
 * denominator), multiplied by 2^52 where it is below DBL_EPSILON or where a dividend's part
 * is below DBL_MIN while the other parts are below DBL_MAX / 2 * DBL_EPSILON (fewer
 * underflows). The scaling is libgcc's even where it hurts: 5e-324 halves to 0, 1e300
 * grows to inf ((1e300-1e300i) / (5e-324-5e-324i) is inf+NaNi there, and so here). */
CF_CX_FN void cf_cx_div_scale(double *a, double *b, double *c, double *d) {
  const double rbig = 0x1.fffffffffffffp1022, rmin = 0x1p-1022, rmin2 = 0x1p-52, rmax2 = 0x1.fffffffffffffp970;
  if (cf_cxm_fabs(*c) >= rbig) *a *= 0.5, *b *= 0.5, *c *= 0.5, *d *= 0.5;
  bool small_a = cf_cxm_fabs(*a) < rmin && cf_cxm_fabs(*b) < rmax2 && cf_cxm_fabs(*c) < rmax2;
  bool small_b = cf_cxm_fabs(*b) < rmin && cf_cxm_fabs(*a) < rmax2 && cf_cxm_fabs(*c) < rmax2;
  if (cf_cxm_fabs(*c) < rmin2 || small_a || small_b) *a *= 0x1p52, *b *= 0x1p52, *c *= 0x1p52, *d *= 0x1p52;
}
/* Smith's quotient (a + bi) / (c + di) with |c| the divisor's larger part, up to the order of
 * the imaginary part's terms (sign: +1 as written, -1 for the swapped operands of
 * cf_cx_div, whose imaginary part is then -(b r - a) rather than a - b r, as libgcc has
 * it: the two differ in a zero's sign). Where the ratio d / c is subnormal or zero, the
 * products regrouped (c (a / d) rather than (c / d) a), as libgcc does. Every product
 * rounded on its own (no fma, as libgcc is built). */
CF_CX_FN void cf_cx_smith(double a, double b, double c, double d, bool swapped, double *x, double *y) {
  double r = d / c, den = cf_cxm_mul(d, r) + c;
  if (cf_cxm_fabs(r) > 0x1p-1022) {
    *x = (cf_cxm_mul(b, r) + a) / den;
    *y = swapped ? (cf_cxm_mul(a, r) - b) / den : (b - cf_cxm_mul(a, r)) / den;
  } else {
    *x = (a + cf_cxm_mul(d, b / c)) / den;
    *y = swapped ? (cf_cxm_mul(d, a / c) - b) / den : (b - cf_cxm_mul(d, a / c)) / den;
  }
}
/* complex128 quotients: libgcc's. Where |c| < |d| (false where either is NaN) libgcc
 * divides with the parts' roles swapped (ratio c / d, the real part (a r + b) / den, the
 * imaginary (b r - a) / den): cf_cx_smith of (b, a, d, c) gives the real part and the
 * imaginary part's terms in that order. Then Annex G's recovery of the quotients that
 * computed as NaN+NaNi (nonzero over zero, infinite over finite, finite over infinite) on
 * the scaled operands, as libgcc recovers them. */
CF_CX_FN CfComplexD cf_cx_div(double a, double b, double c, double d) {
  double x, y;
  if (cf_cxm_fabs(c) < cf_cxm_fabs(d)) {
    cf_cx_div_scale(&b, &a, &d, &c);
    cf_cx_smith(b, a, d, c, true, &x, &y);
  } else {
    cf_cx_div_scale(&a, &b, &c, &d);
    cf_cx_smith(a, b, c, d, false, &x, &y);
  }
  return cf_cx_div_special<CfComplexD>(a, b, c, d, x, y);
}
/* complex64 quotients, computed in double as GCC's libgcc computes them (__divsc3, and so
 * the evaluator and the host backend): float operands' products are exact there and
 * nothing overflows or underflows, so the textbook formula is accurate; its products never
 * fused (an fma would round the sums differently from libgcc's); then the recovery. */
CF_CX_FN CfComplexF cf_cx_div(float a, float b, float c, float d) {
  double a2 = a, b2 = b, c2 = c, d2 = d, den = cf_cx_dot(c2, d2, c2, d2);
  float x = (float)(cf_cx_dot(a2, b2, c2, d2) / den), y = (float)(cf_cx_cross(a2, b2, c2, d2) / den);
  return cf_cx_div_special<CfComplexF>(a, b, c, d, x, y);
}

/* |x + yi| (C's cabs, Annex G: infinite if a part is, even NaN): the scaled parts' norm. */
template <typename T> CF_CX_FN T cf_cx_abs(T x, T y) {
  if (cf_cx_isinf(x) || cf_cx_isinf(y)) return (T)INFINITY;
  if (cf_cx_isnan(x) || cf_cx_isnan(y)) return x + y;
  if (x == 0 && y == 0) return (T)0;
  int e = cf_cx_exponent(x, y);
  T xs = cf_cxm_ldexp(x, -e), ys = cf_cxm_ldexp(y, -e);
  return cf_cxm_ldexp(cf_cxm_sqrt(xs * xs + ys * ys), e);
}

/* The principal square root (Annex G, G.6.4.2: sqrt(x +- inf i) = inf +- inf i for every x,
 * sqrt(-inf + yi) = 0 + inf i, sqrt(+inf + yi) = inf + 0i, the sign of a zero imaginary part
 * picks the side of the cut). Finite: t = sqrt((|x| + |z|) / 2) on parts scaled by an even
 * power of two (no overflow near DBL_MAX, no lost bits for subnormals), the other part
 * y / 2t from the unscaled y. */
template <typename S, typename T> CF_CX_FN S cf_cx_sqrt(T x, T y) {
  const T inf = (T)INFINITY;
  if (cf_cx_isinf(y)) return S(inf, y);
  if (cf_cx_isinf(x)) {
    T other = cf_cx_isnan(y) ? y : (T)0;
    return x > 0 ? S(x, cf_cxm_copysign(other, y)) : S(other, cf_cxm_copysign(inf, y));
  }
  if (cf_cx_isnan(x) || cf_cx_isnan(y)) return S(x + y, x + y);
  if (x == 0 && y == 0) return S((T)0, y);
  int e = cf_cx_exponent(x, y) & ~1;
  T xs = cf_cxm_ldexp(x, -e), ys = cf_cxm_ldexp(y, -e);
  T t = cf_cxm_ldexp(cf_cxm_sqrt((cf_cxm_fabs(xs) + cf_cxm_sqrt(xs * xs + ys * ys)) * (T)0.5), e / 2);
  T u = y / (t + t);
  return x >= 0 ? S(t, u) : S(cf_cxm_fabs(u), cf_cxm_copysign(t, y));
}

/* x + y - s, the rounding error of s = x + y (Knuth's two-sum, any order of magnitudes). */
template <typename T> CF_CX_FN T cf_cx_sum_err(T x, T y, T s) {
  T yv = s - x;
  return (x - (s - yv)) + (y - yv);
}
/* x^2 + y^2 - 1 for |z| near 1, where it cancels: each square with its rounding error (an
 * fma), the sums with theirs. */
template <typename T> CF_CX_FN T cf_cx_norm_minus_1(T x, T y) {
  T xx = cf_cxm_mul(x, x), yy = cf_cxm_mul(y, y);
  T s1 = xx - (T)1, s2 = s1 + yy;
  T err = cf_cx_sum_err(xx, (T)-1, s1) + cf_cx_sum_err(s1, yy, s2);
  return s2 + (err + cf_cxm_fma(x, x, -xx) + cf_cxm_fma(y, y, -yy));
}
/* log|z| of a finite nonzero z: |z|^2 = m 2^k with m in [sqrt(1/2), sqrt(2)) from the scaled
 * parts (exact from subnormal to DBL_MAX), log|z| = (k/2) ln2 + log(m)/2, terms that cannot
 * cancel (ln2 split in two, its high part exact times k/2); near |z| = 1 (k = 0)
 * log1p(x^2 + y^2 - 1)/2 without the cancellation. */
template <typename T> CF_CX_FN T cf_cx_log_abs(T x, T y) {
  int e = cf_cx_exponent(x, y), k;
  T xs = cf_cxm_ldexp(x, -e), ys = cf_cxm_ldexp(y, -e);
  T m = cf_cxm_frexp(xs * xs + ys * ys, &k);
  if (m < (T)0.70710678118654752) m += m, k -= 1;
  k += 2 * e;
  if (k == 0) return (T)0.5 * cf_cxm_log1p(cf_cx_norm_minus_1(x, y));
  T h = (T)k * (T)0.5;
  return h * (T)0.693359375 + (h * (T)-2.1219444005469058277e-4 + (T)0.5 * cf_cxm_log(m));
}
/* The principal logarithm (Annex G, G.6.3.2): log|z| + i atan2(y, x); |z| infinite if a
 * part is (NaN included), log(+-0 +- 0i) = -inf + i atan2. */
template <typename S, typename T> CF_CX_FN S cf_cx_log(T x, T y) {
  T im = cf_cxm_atan2(y, x);
  if (cf_cx_isinf(x) || cf_cx_isinf(y)) return S((T)INFINITY, im);
  if (cf_cx_isnan(x) || cf_cx_isnan(y)) return S(x + y, im);
  if (x == 0 && y == 0) return S(-(T)INFINITY, im);
  return S(cf_cx_log_abs(x, y), im);
}

/* e^x (cos y + i sin y) (Annex G, G.6.3.1): a zero y is kept (exp(NaN + 0i) = NaN + 0i),
 * exp(-inf + yi) = 0 cis(y) (+-0 +- 0i for y infinite or NaN, the sign of y's), exp(+inf +
 * yi) = inf cis(y) (inf + NaNi for y infinite or NaN), a finite x with y infinite or NaN
 * gives NaN + NaNi. Where e^x overflows but the parts may not, e^(x/2) twice. */
template <typename S, typename T> CF_CX_FN S cf_cx_exp(T x, T y) {
  const T inf = (T)INFINITY;
  if (y == 0) return S(cf_cxm_exp(x), y);
  if (cf_cx_isnan(x)) return S(x, x);
  if (!cf_cx_isfinite(y)) return x == -inf ? S((T)0, cf_cxm_copysign((T)0, y)) : S(x == inf ? x : y - y, y - y);
  T c = cf_cxm_cos(y), s = cf_cxm_sin(y), m = cf_cxm_exp(x);
  if (m < inf || x == inf) return S(m * c, m * s);
  T h = cf_cxm_exp(x * (T)0.5);
  return S((h * c) * h, (h * s) * h);
}

#define CF_COMPLEX_DEFINE(S, T)                                                               \
  CF_CX_FN S operator+(S a, S b) { return S(a.re + b.re, a.im + b.im); }                      \
  CF_CX_FN S operator-(S a, S b) { return S(a.re - b.re, a.im - b.im); }                      \
  CF_CX_FN S operator-(S a) { return S(-a.re, -a.im); }                                       \
  CF_CX_FN S operator*(S a, S b) { return cf_cx_mul<S>(a.re, a.im, b.re, b.im); }             \
  CF_CX_FN S operator/(S a, S b) { return cf_cx_div(a.re, a.im, b.re, b.im); }                \
  CF_CX_FN bool operator==(S a, S b) { return a.re == b.re && a.im == b.im; }                 \
  CF_CX_FN bool operator!=(S a, S b) { return !(a == b); }                                    \
  CF_CX_FN T cf_creal(S z) { return z.re; }                                                   \
  CF_CX_FN T cf_cimag(S z) { return z.im; }                                                   \
  CF_CX_FN S cf_conj(S z) { return S(z.re, -z.im); }                                          \
  CF_CX_FN bool cf_cbool(S z) { return z.re != 0 || z.im != 0; }                              \
  CF_CX_FN T cf_abs(S z) { return cf_cx_abs(z.re, z.im); }                                    \
  CF_CX_FN S cf_div(S a, S b) { return a / b; }                                               \
  CF_CX_FN S exp(S z) { return cf_cx_exp<S>(z.re, z.im); }                                    \
  CF_CX_FN S log(S z) { return cf_cx_log<S>(z.re, z.im); }                                    \
  CF_CX_FN S sqrt(S z) { return cf_cx_sqrt<S>(z.re, z.im); }                                  \
  CF_CX_FN S reciprocal(S z) { return S(cf_cx_div(1.0, 0.0, (double)z.re, (double)z.im)); }  \
  CF_CX_FN S rsqrt(S z) { return reciprocal(sqrt(z)); }                                       \
  CF_CX_FN S cf_complex_volatile(const volatile S *p) { return S(p->re, p->im); }            \
  CF_CX_FN S __shfl_xor_sync(unsigned mask, S v, int lane_mask, int width = 32) {             \
    return S(__shfl_xor_sync(mask, v.re, lane_mask, width), __shfl_xor_sync(mask, v.im, lane_mask, width)); \
  }
CF_COMPLEX_DEFINE(CfComplexF, float)
CF_COMPLEX_DEFINE(CfComplexD, double)

#else /* the host backend: C99 complex */
#include <complex.h>
#undef I /* names generated code may use */
#undef complex
typedef float _Complex CfComplexF;
typedef double _Complex CfComplexD;

/* C11's CMPLX, which glibc's header gives GCC only: through the complex's layout, an array
 * of its two parts (re + I * im would turn an infinite part into NaNs). */
CFH_INLINE CfComplexD cf_complex_d(double re, double im) {
  union { CfComplexD z; double p[2]; } u = {.p = {re, im}};
  return u.z;
}
CFH_INLINE CfComplexF cfh__crsqrtf(CfComplexF z) { return 1.0f / csqrtf(z); }
CFH_INLINE CfComplexD cfh__crsqrt(CfComplexD z) { return 1.0 / csqrt(z); }
CFH_INLINE CfComplexF cfh__crecipf(CfComplexF z) { return 1.0f / z; }
CFH_INLINE CfComplexD cfh__crecip(CfComplexD z) { return 1.0 / z; }
CFH_INLINE CfComplexF cfh__cdivf(CfComplexF a, CfComplexF b) { return a / b; }
CFH_INLINE CfComplexD cfh__cdiv(CfComplexD a, CfComplexD b) { return a / b; }
CFH_SHFL_T(cf, CfComplexF) /* 8 bytes: one payload */
CFH_INLINE CfComplexD cfh__shfl_cd(int op, unsigned int mask, CfComplexD v, int arg, int width) {
  return cf_complex_d(cfh__shfl_d(op, mask, creal(v), arg, width), cfh__shfl_d(op, mask, cimag(v), arg, width));
}

#define cf_creal(x) _Generic((x), CfComplexF: crealf(x), CfComplexD: creal(x), default: (x))
#define cf_cimag(x) _Generic((x), CfComplexF: cimagf(x), default: cimag(x))
#define cf_conj(x) _Generic((x), CfComplexF: conjf(x), CfComplexD: conj(x), default: (x))
#define cf_cbool(x) ((x) != 0)
#define cf_complex_volatile(p) (*(p))
#define CF_CX_SELECT(x, fc, dc, real) _Generic((x), CfComplexF: fc, CfComplexD: dc, default: real)
#define exp(x) CF_CX_SELECT(x, cexpf, cexp, exp)(x)
#define log(x) CF_CX_SELECT(x, clogf, clog, log)(x)
#define sqrt(x) CF_CX_SELECT(x, csqrtf, csqrt, sqrt)(x)
#undef rsqrt
#define rsqrt(x) CF_CX_SELECT(x, cfh__crsqrtf, cfh__crsqrt, _Generic((x), float: cfh__rsqrtf, default: cfh__rsqrt))(x)
#undef reciprocal
#define reciprocal(x) CF_CX_SELECT(x, cfh__crecipf, cfh__crecip, _Generic((x), float: cfh__recipf, default: cfh__recip))(x)
#undef cf_abs
#define cf_abs(a) CF_CX_SELECT(a, cabsf, cabs, CF_OPS_SELECT(cf_abs, a))(a)
#undef cf_div
#define cf_div(a, b) CF_CX_SELECT(a, cfh__cdivf, cfh__cdiv, CF_OPS_SELECT(cf_div, a))((a), (b))
#endif
#endif
