/* CUDA's complex functions (codegen/runtime/complex.h, the C++ part generated kernels get)
 * against the reference evaluator's, C99 Annex G's as glibc and libgcc compute them
 * (ir/eval_complex.c), without a GPU: the very text NVRTC compiles, built for the host by
 * cx_shim.h, run cell by cell for complex64 and complex128 over the conformance matrix's
 * 25 complex specials (tests/conformance/values.py: every pair for products and
 * quotients), a grid of special and extreme parts (0, -0, subnormals, DBL_MIN, 1e+-300,
 * DBL_MAX, inf, NaN and ordinary values: every pair of them, every pair of those) and
 * random finite values of every magnitude. The GPU run of the conformance matrix found
 * exp(-inf-infi) = NaN+NaNi, sqrt(1+infi) = inf+NaNi, rsqrt(0) = NaN+NaNi and a wrong
 * rsqrt(5e-324-5e-324i) (intermediate underflow) there.
 *
 * What is asserted, per part: a NaN where the reference has one, infinities and zeros
 * exactly (the sign of zero included), finite values of exp, log, sqrt and |z| within a
 * few units in the last place; products, quotients and reciprocals bit for bit (libgcc's
 * __muldc3 ... __divsc3: C's formulas, Smith's method with GCC 12's scaling and Annex G's
 * recovery, even where that scaling overflows: (1e300-1e300i) / (5e-324-5e-324i) is
 * inf+NaNi); rsqrt bit for bit where an operand is not finite or zero, elsewhere within a
 * few ulps of the exact quotient of C's root, normwise (computed in long double with
 * Kahan's products). complex64 takes the evaluator's semantics: exp, log, sqrt, |z|,
 * reciprocal and rsqrt in double rounded to float, products and quotients C's float
 * complex ones. */
#include <complex.h>
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cx_shim.h"

#undef I

/* ---- values ---------------------------------------------------------------------------------- */

static const double parts_d[] = {0.0, -0.0, 5e-324, -5e-324, 1e-310, -2.2250738585072014e-308, 1e-300, -1e-150,
                                 1e-20, 0.1, -0.3, 0.5, -0.7071067811865476, 0.9, 1.0, -1.0, 1.5, 2.0, -2.5, 3.0,
                                 -7.0, 100.0, 709.9, -745.5, 1e20, 1e150, 1e300, -1e300, DBL_MAX / 3, DBL_MAX,
                                 -DBL_MAX, INFINITY, -INFINITY, NAN};
static const double parts_f[] = {0.0, -0.0, 1.4e-45, -1.4e-45, 1e-40, -1.1754944e-38, 1e-30, -1e-20,
                                 0.1, -0.3, 0.5, -0.70710677, 0.9, 1.0, -1.0, 1.5, 2.0, -2.5, 3.0, -7.0,
                                 100.0, 88.8, -103.5, 1e20, 1e30, -1e30, 1e38, FLT_MAX, -FLT_MAX,
                                 INFINITY, -INFINITY, NAN};
enum { NP_D = sizeof parts_d / sizeof *parts_d, NP_F = sizeof parts_f / sizeof *parts_f, NRAND = 20000, NCONF = 25 };

/* A finite value of any magnitude and sign (random significand and binary exponent in
 * [emin, emax]): deterministic, from a 64-bit LCG. */
static double random_part(uint64_t *s, int emin, int emax) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  double m = 1.0 + (double)(*s >> 12) / 4503599627370496.0;
  int e = emin + (int)((*s >> 3) % (uint64_t)(emax - emin + 1));
  return (*s & 4 ? -1 : 1) * ldexp(m, e);
}

/* tests/conformance/values.py's complex specials (big, tiny: 1e300 and 5e-324, complex64
 * 1e30 and 1e-40), the cells ctest conformance_matrix compares on the GPU. */
static void conformance_values(bool is_float, double *v) {
  double big = is_float ? 1e30 : 1e300, tiny = is_float ? 1e-40 : 5e-324, inf = INFINITY, nan = NAN;
  const double c[][2] = {{0, 0},       {-0.0, -0.0}, {0, -0.0},  {1, 0},      {-1, 0},     {0, 0.5},      {-0.0, -0.5},
                         {1, 1},       {-2.5, 0.5},  {3, -7},    {0.1, -0.3}, {inf, 0},    {-inf, 0},     {inf, 1},
                         {1, inf},     {0, -inf},    {-inf, -inf}, {nan, 0},  {0, nan},    {nan, nan},    {1, nan},
                         {big, -big},  {-big, 2},    {tiny, -tiny}, {tiny, 1}};
  for (int i = 0; i < NCONF; i++)
    for (int k = 0; k < 2; k++) v[2 * i + k] = is_float ? (double)(float)c[i][k] : c[i][k];
}

/* The operands of a check: {re, im} pairs of doubles (complex64's rounded to float). */
typedef struct Cells {
  bool is_float, conformance; /* conformance_values only, else the grid and random values */
  long n, nrand;              /* values; the last nrand of them random */
  double *v;
} Cells;

/* Every pair of the grid's parts, then NRAND random values; or the conformance values. */
static Cells cells(bool is_float, bool conformance) {
  const double *p = is_float ? parts_f : parts_d;
  long np = is_float ? NP_F : NP_D;
  Cells c = {is_float, conformance, conformance ? NCONF : np * np + NRAND, conformance ? 0 : NRAND, NULL};
  c.v = malloc(2 * (size_t)c.n * sizeof *c.v);
  cr_assert_not_null(c.v);
  if (conformance) {
    conformance_values(is_float, c.v);
    return c;
  }
  for (long i = 0; i < np * np; i++) c.v[2 * i] = p[i / np], c.v[2 * i + 1] = p[i % np];
  if (is_float)
    for (long i = 0; i < 2 * np * np; i++) c.v[i] = (float)c.v[i];
  uint64_t s = is_float ? 7 : 11;
  for (long i = np * np; i < c.n; i++)
    for (int k = 0; k < 2; k++)
      c.v[2 * i + k] = is_float ? (double)(float)random_part(&s, -149, 127) : random_part(&s, -1074, 1023);
  return c;
}

static const char *cells_name(const Cells *c) {
  return c->conformance ? (c->is_float ? "complex64 conformance values" : "complex128 conformance values")
                        : (c->is_float ? "complex64" : "complex128");
}

/* ---- references: the evaluator's functions ---------------------------------------------- */

static double complex cx(double re, double im) {
  union { double complex z; double p[2]; } u = {.p = {re, im}};
  return u.z;
}
static float complex cxf(double re, double im) {
  union { float complex z; float p[2]; } u = {.p = {(float)re, (float)im}};
  return u.z;
}

/* op of z in double (C99 <complex.h>, as ir/eval_complex.c computes it). */
static double complex ref_unary(int op, double complex z) {
  switch (op) {
  case CX_EXP: return cexp(z);
  case CX_LOG: return clog(z);
  case CX_SQRT: return csqrt(z);
  case CX_RSQRT: return 1.0 / csqrt(z);
  case CX_RECIPROCAL: return 1.0 / z;
  default: return cx(cabs(z), 0.0);
  }
}

/* ---- comparisons ------------------------------------------------------------------------------ */

/* The distance in units in the last place of two finite values of the part type (the
 * ordered integer images of their bits: -0 and +0 are 0 apart; subtracted as integers,
 * whose difference a double holds exactly when it is small). */
static double ulps(double a, double b, bool is_float) {
  int64_t ia, ib;
  if (is_float) {
    float fa = (float)a, fb = (float)b;
    int32_t ja, jb;
    memcpy(&ja, &fa, 4), memcpy(&jb, &fb, 4);
    ia = ja < 0 ? (int64_t)INT32_MIN - ja : ja, ib = jb < 0 ? (int64_t)INT32_MIN - jb : jb;
  } else {
    memcpy(&ia, &a, 8), memcpy(&ib, &b, 8);
    ia = ia < 0 ? INT64_MIN - ia : ia, ib = ib < 0 ? INT64_MIN - ib : ib;
  }
  if ((ia < 0) != (ib < 0)) return fabs((double)ia) + fabs((double)ib);
  return fabs((double)(ia - ib));
}

/* A part exactly as the reference has it: NaN for NaN (either sign), equal bits otherwise. */
static bool part_exact(double got, double want) {
  if (isnan(want)) return isnan(got);
  return got == want && signbit(got) == signbit(want);
}

/* A part of exp, log, sqrt or |z|: NaN, infinities and zeros exact, finite values within
 * max_ulps (a zero reference may come out as the smallest subnormal). *worst keeps the
 * largest distance seen. */
static bool part_close(double got, double want, bool is_float, double max_ulps, double *worst) {
  if (!isfinite(want) || !isfinite(got)) return part_exact(got, want);
  if (got == 0 && want == 0) return signbit(got) == signbit(want);
  double u = ulps(got, want, is_float);
  if (u > *worst) *worst = u;
  return u <= max_ulps;
}

/* Whether a part that overflowed in one and is within tol of the largest finite value
 * in the other rounded differently at the edge of overflow. */
static bool overflow_edge(double g, double w, bool is_float, double tol) {
  double big = (is_float ? FLT_MAX : DBL_MAX) * (1 - tol);
  return isinf(g) != isinf(w) && !isnan(g) && !isnan(w) && signbit(g) == signbit(w) && fabs(g) >= big &&
         fabs(w) >= big;
}

/* A quotient's finite parts within tol of the exact one, normwise (|got - want| <= tol
 * |want|, or tol times the smallest normal for results near underflow); non-finite parts
 * exact, but for a rounding at the edge of overflow. */
static bool quotient_close(double gr, double gi, double wr, double wi, bool is_float, double tol) {
  if (!isfinite(wr) || !isfinite(gr)) {
    if (!part_exact(gr, wr) && !overflow_edge(gr, wr, is_float, tol)) return false;
    gr = wr = 0;
  }
  if (!isfinite(wi) || !isfinite(gi)) {
    if (!part_exact(gi, wi) && !overflow_edge(gi, wi, is_float, tol)) return false;
    gi = wi = 0;
  }
  double err = hypot(gr - wr, gi - wi), size = hypot(wr, wi);
  return err <= tol * size || err <= tol * (is_float ? FLT_MIN : DBL_MIN);
}

/* Failures, the first few described. */
typedef struct Tally {
  long bad;
  char first[4][320];
} Tally;

static void tally(Tally *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tally(Tally *t, const char *fmt, ...) {
  if (t->bad < 4) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->first[t->bad], sizeof t->first[0], fmt, ap);
    va_end(ap);
  }
  t->bad++;
}

static void expect_none(const Tally *t, const char *what, long cells) {
  cr_expect_eq(t->bad, 0, "%s: %ld of %ld cells differ, e.g.\n%s\n%s\n%s\n%s", what, t->bad, cells, t->first[0],
               t->first[1], t->first[2], t->first[3]);
}

/* ---- running the shim ------------------------------------------------------------------------- */

/* op of the n values v ({re, im} pairs) through the shim, in the part type; results widened. */
static void run_unary(CxShim sh, bool is_float, int op, long n, const double *v, double *out) {
  if (!is_float) {
    sh.unary_d(op, n, v, out);
    return;
  }
  float *in = malloc(2 * (size_t)n * sizeof *in), *r = malloc(2 * (size_t)n * sizeof *r);
  cr_assert(in && r);
  for (long i = 0; i < 2 * n; i++) in[i] = (float)v[i];
  sh.unary_f(op, n, in, r);
  for (long i = 0; i < 2 * n; i++) out[i] = r[i];
  free(in);
  free(r);
}

/* a op b[i] for the n values b, a one value. */
static void run_binary(CxShim sh, bool is_float, int op, const double *a, long n, const double *b, double *out) {
  double *as = malloc(2 * (size_t)n * sizeof *as);
  cr_assert_not_null(as);
  for (long i = 0; i < n; i++) as[2 * i] = a[0], as[2 * i + 1] = a[1];
  if (!is_float) {
    sh.binary_d(op, n, as, b, out);
  } else {
    float *fa = malloc(2 * (size_t)n * sizeof *fa), *fb = malloc(2 * (size_t)n * sizeof *fb);
    float *r = malloc(2 * (size_t)n * sizeof *r);
    cr_assert(fa && fb && r);
    for (long i = 0; i < 2 * n; i++) fa[i] = (float)as[i], fb[i] = (float)b[i];
    sh.binary_f(op, n, fa, fb, r);
    for (long i = 0; i < 2 * n; i++) out[i] = r[i];
    free(fa), free(fb), free(r);
  }
  free(as);
}

/* The reference's parts in the part type (complex64: double rounded to float, as the
 * evaluator stores them). */
static void parts_of(double complex w, bool is_float, double *re, double *im) {
  *re = is_float ? (double)(float)creal(w) : creal(w);
  *im = is_float ? (double)(float)cimag(w) : cimag(w);
}

/* p q + r s in long double, with Kahan's fma correction: accurate even where it cancels. */
static long double dot2l(long double p, long double q, long double r, long double s) {
  long double w = r * s;
  return fmal(p, q, w) + fmal(r, s, -w);
}

/* The exact quotient (a + bi) / (c + di), rounded to the part type: long double has the
 * range where no product or square of doubles overflows or underflows, and each part's
 * numerator is formed by Kahan's sum ((1e20 + 1e300i) / (1e-300 + 1e-20i) has the
 * imaginary part 1.3241058063620361e+24, from a difference of products near 1). */
static void exact_quotient(double a, double b, double c, double d, bool is_float, double *re, double *im) {
  long double den = (long double)c * c + (long double)d * d;
  long double x = dot2l(a, c, b, d) / den, y = dot2l(b, c, -(long double)a, d) / den;
  *re = is_float ? (double)(float)x : (double)x;
  *im = is_float ? (double)(float)y : (double)y;
}

static bool is_special(double re, double im) { return !isfinite(re) || !isfinite(im); }

/* ---- exp, log, sqrt, |z| ----------------------------------------------------------------------- */

static const char *const unary_names[CX_NUNARY] = {"exp", "log", "sqrt", "rsqrt", "reciprocal", "abs"};

/* op over every operand against C99's function (complex64: in double, rounded). */
static void check_function(bool is_float, bool conformance, int op, double max_ulps) {
  Cells c = cells(is_float, conformance);
  double *got = malloc(2 * (size_t)c.n * sizeof *got), worst = 0;
  cr_assert_not_null(got);
  run_unary(cx_shim(), is_float, op, c.n, c.v, got);
  Tally t = {0};
  for (long i = 0; i < c.n; i++) {
    double wr, wi, gr = got[2 * i], gi = got[2 * i + 1];
    parts_of(ref_unary(op, cx(c.v[2 * i], c.v[2 * i + 1])), is_float, &wr, &wi);
    if (!part_close(gr, wr, is_float, max_ulps, &worst) || !part_close(gi, wi, is_float, max_ulps, &worst))
      tally(&t, "%s(%.9g%+.9gi) = %.17g%+.17gi, C99 %.17g%+.17gi", unary_names[op], c.v[2 * i], c.v[2 * i + 1], gr,
            gi, wr, wi);
  }
  cr_log_info("%s of %ld %s: finite parts within %.0f ulps", unary_names[op], c.n, cells_name(&c), worst);
  expect_none(&t, unary_names[op], c.n);
  free(c.v);
  free(got);
}

/* Each function over both part types, the conformance values, then the grid. */
static void check_functions(int op, double max_ulps) {
  for (int conformance = 1; conformance >= 0; conformance--)
    for (int is_float = 0; is_float < 2; is_float++) check_function(is_float, conformance, op, max_ulps);
}

Test(complex_cuda_math, exp_equals_c99) { check_functions(CX_EXP, 4); }
Test(complex_cuda_math, log_equals_c99) { check_functions(CX_LOG, 4); }
Test(complex_cuda_math, sqrt_equals_c99) { check_functions(CX_SQRT, 4); }
Test(complex_cuda_math, abs_equals_c99) { check_functions(CX_ABS, 2); }

/* ---- quotients: reciprocal, rsqrt, a / b; products -------------------------------------------- */

/* 1 / z and 1 / sqrt(z) against the evaluator's (1.0 / z, 1.0 / csqrt(z) in double, libgcc's
 * __divdc3): 1 / z bit for bit; 1 / sqrt(z) exact for a non-finite or zero z, within tol
 * of the exact quotient of csqrt's root otherwise (CUDA's root is a few ulps from glibc's). */
static void check_reciprocal(bool is_float, bool conformance, int op, double tol) {
  Cells c = cells(is_float, conformance);
  double *got = malloc(2 * (size_t)c.n * sizeof *got);
  cr_assert_not_null(got);
  run_unary(cx_shim(), is_float, op, c.n, c.v, got);
  Tally t = {0};
  for (long i = 0; i < c.n; i++) {
    double a = c.v[2 * i], b = c.v[2 * i + 1], wr, wi, gr = got[2 * i], gi = got[2 * i + 1];
    bool ok;
    if (op == CX_RECIPROCAL || is_special(a, b) || (a == 0 && b == 0)) {
      parts_of(ref_unary(op, cx(a, b)), is_float, &wr, &wi);
      ok = part_exact(gr, wr) && part_exact(gi, wi);
    } else {
      double complex d = csqrt(cx(a, b));
      exact_quotient(1, 0, creal(d), cimag(d), is_float, &wr, &wi);
      ok = quotient_close(gr, gi, wr, wi, is_float, tol);
    }
    if (!ok)
      tally(&t, "%s(%.17g%+.17gi) = %.17g%+.17gi, want %.17g%+.17gi", unary_names[op], a, b, gr, gi, wr, wi);
  }
  expect_none(&t, unary_names[op], c.n);
  free(c.v);
  free(got);
}

Test(complex_cuda_math, reciprocal_and_rsqrt_equal_the_evaluator) {
  for (int conformance = 1; conformance >= 0; conformance--) {
    check_reciprocal(false, conformance, CX_RECIPROCAL, 0);
    check_reciprocal(true, conformance, CX_RECIPROCAL, 0);
    check_reciprocal(false, conformance, CX_RSQRT, 8 * DBL_EPSILON);
    check_reciprocal(true, conformance, CX_RSQRT, 8 * FLT_EPSILON);
  }
}

/* C's a * b or a / b in the part type (the evaluator's: libgcc's __muldc3 ... __divsc3). */
static void c_binary(int op, bool is_float, const double *a, const double *b, double *re, double *im) {
  if (is_float) {
    float complex x = cxf(a[0], a[1]), y = cxf(b[0], b[1]), r = op == CX_MUL ? x * y : x / y;
    *re = crealf(r), *im = cimagf(r);
  } else {
    double complex x = cx(a[0], a[1]), y = cx(b[0], b[1]), r = op == CX_MUL ? x * y : x / y;
    *re = creal(r), *im = cimag(r);
  }
}

/* One cell of a product or a quotient: C's bit for bit (libgcc's __muldc3 ... __divsc3, the
 * evaluator's), zeros' signs included, NaN where C has one. */
static bool binary_cell_ok(int op, const Cells *c, const double *a, const double *b, const double *g) {
  double wr, wi;
  c_binary(op, c->is_float, a, b, &wr, &wi);
  return part_exact(g[0], wr) && part_exact(g[1], wi);
}

/* op over every pair of the non-random values and over consecutive random ones. */
static void check_binary(bool is_float, bool conformance, int op) {
  Cells c = cells(is_float, conformance);
  long ngrid = c.n - c.nrand, count_cells = 0;
  double *got = malloc(2 * (size_t)c.n * sizeof *got);
  cr_assert_not_null(got);
  Tally t = {0};
  for (long i = 0; i < c.n - (c.nrand ? 1 : 0); i++) {
    long first = i < ngrid ? 0 : i + 1, count = i < ngrid ? ngrid : 1; /* the grid: a = v[i], every b */
    const double *a = c.v + 2 * i, *b = c.v + 2 * first;
    run_binary(cx_shim(), is_float, op, a, count, b, got);
    for (long j = 0; j < count; j++, count_cells++)
      if (!binary_cell_ok(op, &c, a, b + 2 * j, got + 2 * j)) {
        double wr, wi;
        c_binary(op, is_float, a, b + 2 * j, &wr, &wi);
        tally(&t, "(%.17g%+.17gi) %s (%.17g%+.17gi) = %.17g%+.17gi, C %.17g%+.17gi", a[0], a[1],
              op == CX_MUL ? "*" : "/", b[2 * j], b[2 * j + 1], got[2 * j], got[2 * j + 1], wr, wi);
      }
  }
  cr_log_info("%s of %ld cells of %s", op == CX_MUL ? "products" : "quotients", count_cells, cells_name(&c));
  expect_none(&t, op == CX_MUL ? "products" : "quotients", count_cells);
  free(c.v);
  free(got);
}

Test(complex_cuda_math, products_equal_c_bit_for_bit) {
  for (int conformance = 1; conformance >= 0; conformance--) {
    check_binary(false, conformance, CX_MUL);
    check_binary(true, conformance, CX_MUL);
  }
}

Test(complex_cuda_math, quotients_equal_c_bit_for_bit) {
  for (int conformance = 1; conformance >= 0; conformance--) {
    check_binary(false, conformance, CX_DIV);
    check_binary(true, conformance, CX_DIV);
  }
}

/* ---- the cells the GPU run of the conformance matrix found wrong ------------------------------ */

static void one(int op, bool is_float, double re, double im, double *r) {
  double v[2] = {re, im};
  run_unary(cx_shim(), is_float, op, 1, v, r);
}

Test(complex_cuda_math, the_gpu_runs_wrong_cells_follow_annex_g) {
  double r[2];
  for (int f = 0; f < 2; f++) {
    one(CX_EXP, f, -INFINITY, -INFINITY, r);
    cr_expect(r[0] == 0 && !signbit(r[0]) && r[1] == 0 && signbit(r[1]), "exp(-inf-infi) = %g%+gi", r[0], r[1]);
    one(CX_SQRT, f, 1, INFINITY, r);
    cr_expect(r[0] == INFINITY && r[1] == INFINITY, "sqrt(1+infi) = %g%+gi", r[0], r[1]);
    one(CX_RSQRT, f, 1, INFINITY, r);
    cr_expect(r[0] == 0 && !signbit(r[0]) && r[1] == 0 && signbit(r[1]), "rsqrt(1+infi) = %g%+gi", r[0], r[1]);
    one(CX_RSQRT, f, -0.0, -0.0, r);
    cr_expect(r[0] == INFINITY && isnan(r[1]), "rsqrt(-0-0i) = %g%+gi", r[0], r[1]);
    one(CX_RECIPROCAL, f, -0.0, -0.0, r);
    cr_expect(r[0] == -INFINITY && isnan(r[1]), "reciprocal(-0-0i) = %g%+gi", r[0], r[1]);
  }
  one(CX_RSQRT, false, 5e-324, -5e-324, r);
  cr_expect(ulps(r[0], 3.495147582682968e+161, false) <= 2 && ulps(r[1], 1.447737531242824e+161, false) <= 2,
            "rsqrt(5e-324-5e-324i) = %.17g%+.17gi", r[0], r[1]);
  double one_0[2] = {1, 0}, minus_inf[2] = {-INFINITY, -INFINITY}, big[2] = {1e30, -1e30};
  run_binary(cx_shim(), false, CX_MUL, one_0, 1, minus_inf, r);
  cr_expect(r[0] == -INFINITY && r[1] == -INFINITY, "(1+0i)(-inf-infi) = %g%+gi", r[0], r[1]);
  run_binary(cx_shim(), true, CX_MUL, big, 1, big, r); /* an fma would give -inf-infi */
  cr_expect(isnan(r[0]) && r[1] == -INFINITY, "(1e30-1e30i)^2 in complex64 = %g%+gi", r[0], r[1]);
  double huge[2] = {1e300, -1e300}, tiny[2] = {5e-324, -5e-324}; /* libgcc scales 1e300 by 2^52: inf */
  run_binary(cx_shim(), false, CX_DIV, huge, 1, tiny, r);
  cr_expect(r[0] == INFINITY && isnan(r[1]), "(1e300-1e300i) / (5e-324-5e-324i) = %g%+gi", r[0], r[1]);
  one(CX_LOG, false, 5e-324, -5e-324, r);
  cr_expect(ulps(r[0], -744.0934983311014, false) <= 1 && r[1] == -0.7853981633974483,
            "log(5e-324-5e-324i) = %.17g%+.17gi", r[0], r[1]);
}
