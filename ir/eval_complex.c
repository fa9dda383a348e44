/* ir/eval_complex.c: the evaluator's complex math, for the evaluator forms of the ops that
 * take complex operands (ir_op_takes_complex; eval_math.c calls these when the compute
 * dtype is complex).
 *
 * Values are IrElem's {re, im} widened to double, as real values are widened to double;
 * the store into complex_float rounds each part once. Key decision: C99's complex
 * functions (<complex.h>: Annex G's special values, principal branches with the branch
 * cuts on the negative real axis) are torch's semantics for exp, log, sqrt and |z|, and
 * the host backend's kernels call the same functions (codegen/runtime/complex.h), so the
 * evaluator and the host agree; rsqrt is 1 / sqrt(z) and reciprocal 1 / z, as torch
 * computes them. This file is kept apart from eval_math.c because <complex.h> defines a
 * macro I. */
#include <complex.h>

#include "ir/dtype.h"

/* The complex of two parts, as C11's CMPLX (which glibc's header gives GCC only, not
 * clang): through C11's layout of a complex, an array of its two parts, so an infinite or
 * NaN part stays where it is (re + I * im would mix them). */
static double complex cx(IrElem v) {
  union { double complex z; double p[2]; } u = {.p = {v.c.re, v.c.im}};
  return u.z;
}
static IrElem el(double complex z) { return ir_complex(creal(z), cimag(z)); }
static float complex cxf(IrElem v) {
  union { float complex z; float p[2]; } u = {.p = {(float)v.c.re, (float)v.c.im}};
  return u.z;
}
static IrElem elf(float complex z) { return ir_complex(crealf(z), cimagf(z)); }

/* Products and quotients of complex64 are computed in float complex, as the kernels
 * compute them: in double, (1e30-1e30j)^2 is 0-2e60j (then -inf imaginary in float), where
 * float's ac - bd is inf - inf (nan), and the parts round differently. */
IrElem ir_cx_mul(IrElem a, IrElem b, cf_dtype ct) {
  return ct == CF_COMPLEX_FLOAT ? elf(cxf(a) * cxf(b)) : el(cx(a) * cx(b));
}
IrElem ir_cx_div(IrElem a, IrElem b, cf_dtype ct) {
  return ct == CF_COMPLEX_FLOAT ? elf(cxf(a) / cxf(b)) : el(cx(a) / cx(b));
}
IrElem ir_cx_exp(IrElem a) { return el(cexp(cx(a))); }
IrElem ir_cx_log(IrElem a) { return el(clog(cx(a))); }
IrElem ir_cx_sqrt(IrElem a) { return el(csqrt(cx(a))); }
IrElem ir_cx_rsqrt(IrElem a) { return el(1.0 / csqrt(cx(a))); }
IrElem ir_cx_reciprocal(IrElem a) { return el(1.0 / cx(a)); }
double ir_cx_abs(IrElem a) { return cabs(cx(a)); }
