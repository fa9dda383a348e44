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
 * names, computed with the textbook formulas (Smith's division, hypot for |z|, the
 * principal square root and logarithm; special values of infinite parts may differ from
 * Annex G's). cf_creal, cf_cimag, cf_conj and cf_cbool (nonzero when either part is) are
 * the part ops and conversions emit.c prints; cf_creal and cf_conj of a real type (torch's
 * real and conj of a real tensor: itself) are ops_math.h's templates on CUDA, which every
 * kernel has (this file only those with a complex dtype), and the _Generic selections'
 * default here on the host. Sums shuffle and read grid partials
 * of a complex accumulator through __shfl_xor_sync and cf_complex_volatile. */
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

#define CF_COMPLEX_DEFINE(S, T, M)                                                             \
  CF_CX_FN S operator+(S a, S b) { return S(a.re + b.re, a.im + b.im); }                      \
  CF_CX_FN S operator-(S a, S b) { return S(a.re - b.re, a.im - b.im); }                      \
  CF_CX_FN S operator-(S a) { return S(-a.re, -a.im); }                                       \
  CF_CX_FN S operator*(S a, S b) { return S(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re); } \
  CF_CX_FN S operator/(S a, S b) { /* Smith's algorithm: no overflow of |b|^2 */              \
    if (M(fabs)(b.re) >= M(fabs)(b.im)) {                                                     \
      T r = b.im / b.re, d = b.re + b.im * r;                                                 \
      return S((a.re + a.im * r) / d, (a.im - a.re * r) / d);                                 \
    }                                                                                         \
    T r = b.re / b.im, d = b.im + b.re * r;                                                   \
    return S((a.re * r + a.im) / d, (a.im * r - a.re) / d);                                   \
  }                                                                                           \
  CF_CX_FN bool operator==(S a, S b) { return a.re == b.re && a.im == b.im; }                 \
  CF_CX_FN bool operator!=(S a, S b) { return !(a == b); }                                    \
  CF_CX_FN T cf_creal(S z) { return z.re; }                                                   \
  CF_CX_FN T cf_cimag(S z) { return z.im; }                                                   \
  CF_CX_FN S cf_conj(S z) { return S(z.re, -z.im); }                                          \
  CF_CX_FN bool cf_cbool(S z) { return z.re != 0 || z.im != 0; }                              \
  CF_CX_FN T cf_abs(S z) { return M(hypot)(z.re, z.im); }                                     \
  CF_CX_FN S cf_div(S a, S b) { return a / b; }                                               \
  CF_CX_FN S exp(S z) {                                                                       \
    T m = M(exp)(z.re);                                                                       \
    return z.im == 0 ? S(m, z.im) : S(m * M(cos)(z.im), m * M(sin)(z.im));                    \
  }                                                                                           \
  CF_CX_FN S log(S z) { return S(M(log)(M(hypot)(z.re, z.im)), M(atan2)(z.im, z.re)); }      \
  CF_CX_FN S sqrt(S z) { /* the principal root; the sign of a zero imaginary part picks the side */ \
    if (z.re == 0 && z.im == 0) return S((T)0, z.im);                                         \
    T t = M(sqrt)((M(fabs)(z.re) + M(hypot)(z.re, z.im)) / (T)2);                             \
    if (z.re >= 0) return S(t, z.im / ((T)2 * t));                                            \
    return S(M(fabs)(z.im) / ((T)2 * t), M(copysign)(t, z.im));                               \
  }                                                                                           \
  CF_CX_FN S rsqrt(S z) { return S((T)1, (T)0) / sqrt(z); }                                   \
  CF_CX_FN S reciprocal(S z) { return S((T)1, (T)0) / z; }                                    \
  CF_CX_FN S cf_complex_volatile(const volatile S *p) { return S(p->re, p->im); }            \
  CF_CX_FN S __shfl_xor_sync(unsigned mask, S v, int lane_mask, int width = 32) {             \
    return S(__shfl_xor_sync(mask, v.re, lane_mask, width), __shfl_xor_sync(mask, v.im, lane_mask, width)); \
  }
#define CF_CX_MF(name) name##f
#define CF_CX_MD(name) name
CF_COMPLEX_DEFINE(CfComplexF, float, CF_CX_MF)
CF_COMPLEX_DEFINE(CfComplexD, double, CF_CX_MD)

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
