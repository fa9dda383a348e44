/* Tests of the 8-bit floats float8_e4m3fn and float8_e5m2 (ir/fp8.h through ir/dltensor.c's
 * element loads and stores): every code decodes and round-trips; float -> fp8 agrees bit for
 * bit with a brute-force reference of torch's rules (nearest code, ties to the even code,
 * e4m3fn's overflow past 464 to NaN, e5m2's from 61440 to infinity, NaN to 0x7F with its
 * sign) on a sweep of every value, every tie and its neighbours, subnormals, overflow, and
 * random float bit patterns; pinned values torch gives; the double -> float -> fp8 rounding
 * torch does; DLPack codes, promotion and the op table's opmath type. */
#include <math.h>

#include "ops_test_util.h"

typedef struct Fmt {
  cf_dtype t;
  int mbits, ebits;
  uint8_t over;   /* the code past the largest number: NaN (e4m3fn) or infinity (e5m2) */
  uint8_t nan;    /* torch's NaN code (without sign) */
  double beyond;  /* the value the next code would have: 480 or 65536 */
} Fmt;

static const Fmt e4m3 = {CF_FLOAT8_E4M3FN, 3, 4, 0x7F, 0x7F, 480.0};
static const Fmt e5m2 = {CF_FLOAT8_E5M2, 2, 5, 0x7C, 0x7F, 65536.0};

/* The value of code c, decoded from the format's definition (NaN for NaN codes). */
static double ref_decode(const Fmt *f, unsigned c) {
  int bias = (1 << (f->ebits - 1)) - 1;
  unsigned e = (c >> f->mbits) & ((1u << f->ebits) - 1), m = c & ((1u << f->mbits) - 1);
  double v;
  if (f->t == CF_FLOAT8_E4M3FN && (c & 0x7F) == 0x7F) return NAN;
  if (f->t == CF_FLOAT8_E5M2 && e == 31) return m ? NAN : (c & 0x80 ? -INFINITY : INFINITY);
  v = e ? ldexp(1.0 + m / (double)(1 << f->mbits), (int)e - bias) : ldexp((double)m, 1 - bias - f->mbits);
  return c & 0x80 ? -v : v;
}

/* torch's code of float x: the nearest of the finite nonnegative codes and of `beyond`
 * (whose code is `over`), ties to the even code; the sign is kept. */
static uint8_t ref_encode(const Fmt *f, float x) {
  uint8_t sign = signbit(x) ? 0x80 : 0;
  if (isnan(x)) return sign | f->nan;
  double a = fabs((double)x), best_d = INFINITY;
  unsigned best = 0;
  for (unsigned c = 0; c <= f->over; c++) {
    double v = c == f->over ? f->beyond : ref_decode(f, c);
    if (isnan(v)) continue;
    double d = fabs(v - a);
    if (d < best_d || (d == best_d && !(c & 1))) best_d = d, best = c;
  }
  if (a >= f->beyond) best = f->over; /* infinities, and values whose distances round alike */
  return (uint8_t)(sign | best);
}

static uint8_t enc(const Fmt *f, double x) {
  uint8_t b;
  ir_elem_store(&b, f->t, (IrElem){.d = x}, CF_DOUBLE);
  return b;
}

static double dec(const Fmt *f, uint8_t b) { return ir_elem_load(&b, f->t).d; }

static void check_float(const Fmt *f, float x) {
  uint8_t got = enc(f, x), want = ref_encode(f, x);
  uint32_t u;
  memcpy(&u, &x, 4);
  cr_expect_eq(got, want, "%s of %.9g (bits 0x%08x): 0x%02x, torch's 0x%02x", cf_dtype_name(f->t), (double)x, u, got,
               want);
}

static void every_code_decodes_and_round_trips(const Fmt *f) {
  for (unsigned c = 0; c < 256; c++) {
    double want = ref_decode(f, c), got = dec(f, (uint8_t)c);
    if (isnan(want)) {
      cr_expect(isnan(got), "%s 0x%02x decodes to %g, not NaN", cf_dtype_name(f->t), c, got);
      cr_expect_eq(enc(f, got), (c & 0x80) | f->nan, "%s NaN 0x%02x re-encodes to 0x%02x", cf_dtype_name(f->t), c,
                   enc(f, got));
      continue;
    }
    cr_expect(got == want && signbit(got) == signbit(want), "%s 0x%02x decodes to %.9g, not %.9g",
              cf_dtype_name(f->t), c, got, want);
    cr_expect_eq(enc(f, got), c, "%s 0x%02x does not round-trip (0x%02x)", cf_dtype_name(f->t), c, enc(f, got));
  }
}

Test(fp8, every_e4m3fn_code_decodes_and_round_trips) { every_code_decodes_and_round_trips(&e4m3); }
Test(fp8, every_e5m2_code_decodes_and_round_trips) { every_code_decodes_and_round_trips(&e5m2); }

/* Each value, each midpoint of neighbouring values (the ties) and the floats either side
 * of it, on both signs, and the midpoint past the largest value (the overflow threshold). */
static void sweep_ties(const Fmt *f) {
  for (unsigned c = 0; c < f->over; c++) {
    double lo = ref_decode(f, c), hi = c + 1 == f->over ? f->beyond : ref_decode(f, c + 1);
    float pts[5] = {(float)lo, (float)((lo + hi) / 2), 0, 0, (float)hi};
    pts[2] = nextafterf(pts[1], 0.0f);
    pts[3] = nextafterf(pts[1], INFINITY);
    for (int i = 0; i < 5; i++) {
      check_float(f, pts[i]);
      check_float(f, -pts[i]);
    }
  }
}

Test(fp8, e4m3fn_ties_and_neighbours_match_the_reference) { sweep_ties(&e4m3); }
Test(fp8, e5m2_ties_and_neighbours_match_the_reference) { sweep_ties(&e5m2); }

/* Random float bit patterns over the whole range, and random ones near the formats'. */
static void sweep_random(const Fmt *f) {
  uint64_t s = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < 30000; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    uint32_t u = (uint32_t)(s >> 32);
    float x;
    if (i % 2) u = (u & 0x80FFFFFFu) | ((uint32_t)(100 + (s >> 20) % 48) << 23); /* exponents 2^-27 .. 2^20 */
    memcpy(&x, &u, 4);
    check_float(f, x);
  }
}

Test(fp8, e4m3fn_random_floats_match_the_reference) { sweep_random(&e4m3); }
Test(fp8, e5m2_random_floats_match_the_reference) { sweep_random(&e5m2); }

/* Values torch.tensor(x).to(dtype) gives, pinned. */
Test(fp8, pinned_values_of_torch) {
  const struct {
    const Fmt *f;
    double x;
    uint8_t bits;
  } cases[] = {
      {&e4m3, 448, 0x7E},      {&e4m3, 464, 0x7E},       {&e4m3, 464.5, 0x7F},    {&e4m3, 480, 0x7F},
      {&e4m3, 1e6, 0x7F},      {&e4m3, INFINITY, 0x7F},  {&e4m3, -INFINITY, 0xFF}, {&e4m3, NAN, 0x7F},
      {&e4m3, -NAN, 0xFF},     {&e4m3, 0.1, 0x1D},       {&e4m3, -0.0, 0x80},     {&e4m3, 0x1p-9, 0x01},
      {&e4m3, 0x1p-10, 0x00},  {&e4m3, 0x1.8p-10, 0x01}, {&e4m3, 0x1.8p-9, 0x02}, {&e4m3, 0x1.ep-7, 0x08},
      {&e4m3, 1.0625, 0x38},   {&e4m3, 1.1875, 0x3A},    {&e4m3, -2.5, 0xC2},
      {&e5m2, 57344, 0x7B},    {&e5m2, 61439, 0x7B},     {&e5m2, 61440, 0x7C},    {&e5m2, 1e5, 0x7C},
      {&e5m2, -INFINITY, 0xFC}, {&e5m2, NAN, 0x7F},      {&e5m2, 0x1p-16, 0x01},  {&e5m2, 0x1p-17, 0x00},
      {&e5m2, 0x1.8p-16, 0x02}, {&e5m2, 1.125, 0x3C},    {&e5m2, 1.375, 0x3E},    {&e5m2, 0.1, 0x2E},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    cr_expect_eq(enc(cases[i].f, cases[i].x), cases[i].bits, "%s of %a: 0x%02x, torch's 0x%02x",
                 cf_dtype_name(cases[i].f->t), cases[i].x, enc(cases[i].f, cases[i].x), cases[i].bits);
}

/* A double converts through float, as in torch: 464 + 1e-6 is 464.0f, a tie, rounding to
 * 448 (a direct rounding would give NaN); an int64 rounds to float once. */
Test(fp8, doubles_and_integers_round_through_float_as_torch) {
  cr_expect_eq(enc(&e4m3, 464.000001), 0x7E);
  cr_expect_eq(enc(&e5m2, 61439.999), 0x7C);
  uint8_t b;
  ir_elem_store(&b, CF_FLOAT8_E4M3FN, (IrElem){.i = 300}, CF_INT64);
  cr_expect_eq(b, 0x79); /* 288 and 320 are its neighbours; 300 is nearer 288 */
  ir_elem_store(&b, CF_FLOAT8_E5M2, (IrElem){.i = -9}, CF_INT32);
  cr_expect_eq(b, 0xC8); /* -9 is between -8 and -10, a tie: -8 is the even code */
  int32_t i32;
  ir_elem_store(&i32, CF_INT32, ir_elem_load(&(uint8_t){0xFE}, CF_FLOAT8_E4M3FN), CF_FLOAT8_E4M3FN);
  cr_expect_eq(i32, -448);
}

Test(fp8, dlpack_codes_names_promotion_and_opmath) {
  DLDataType a = ir_dtype_to_dl(CF_FLOAT8_E4M3FN), b = ir_dtype_to_dl(CF_FLOAT8_E5M2);
  cr_expect(a.code == 10 && a.bits == 8 && a.lanes == 1);
  cr_expect(b.code == 12 && b.bits == 8 && b.lanes == 1);
  cf_dtype t;
  cr_expect(ir_dtype_from_dl((DLDataType){10, 8, 1}, &t) && t == CF_FLOAT8_E4M3FN);
  cr_expect(ir_dtype_from_dl((DLDataType){12, 8, 1}, &t) && t == CF_FLOAT8_E5M2);
  cr_expect(!ir_dtype_from_dl((DLDataType){11, 8, 1}, &t)); /* e4m3fnuz: another format */
  cr_expect_str_eq(cf_dtype_name(CF_FLOAT8_E4M3FN), "__e4m3");
  cr_expect_str_eq(cf_dtype_name(CF_FLOAT8_E5M2), "__e5m2");
  cr_expect_eq(cf_dtype_size(CF_FLOAT8_E5M2), 1);
  cr_expect_eq(ir_dtype_promote(CF_FLOAT8_E4M3FN, CF_FLOAT8_E5M2), CF_FLOAT);
  cr_expect_eq(ir_dtype_promote(CF_FLOAT8_E4M3FN, CF_HALF), CF_HALF);
  cr_expect_eq(ir_dtype_promote(CF_BFLOAT16, CF_FLOAT8_E5M2), CF_BFLOAT16);
  cr_expect_eq(ir_dtype_promote(CF_FLOAT8_E5M2, CF_INT64), CF_FLOAT8_E5M2);
  cr_expect_eq(ir_dtype_opmath(CF_FLOAT8_E4M3FN), CF_FLOAT);
  cr_expect_eq(ir_dtype_accumulate(CF_FLOAT8_E5M2), CF_FLOAT);
}
