/* float4_e2m1fn (issue 26; nvFuser's Float4_e2m1fn, torch's float4_e2m1fn_x2 storage): all
 * 16 codes decode to e2m1's values and round-trip; float -> e2m1 at every rounding boundary
 * (each midpoint between neighbouring values and the floats either side, both signs) against
 * a brute-force reference written here (nearest value, ties to the even code, saturation to
 * +-6, NaN to +6 as cuda_fp4.h's __nv_cvt_double_to_fp4); packed host tensors (ceil(n/2)
 * bytes, element 2k in the low nibble, DLPack code 17 bits 4); promotion; the evaluator on
 * fp4 -> float -> mul -> fp4 against values written out; the refusals with their messages. */
#include <math.h>
#include <string.h>

#include "ops_test_util.h"

static cf_fusion *f;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(fp4, .init = setup, .fini = teardown);

static const double mags[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};

static uint8_t encode(double x) {
  DLManagedTensor *m = cf_tensor_host(CF_FLOAT4_E2M1FN, 1, (int64_t[]){2});
  ir_dl_store(&m->dl_tensor, 1, CF_FLOAT4_E2M1FN, (IrElem){.d = x}, CF_DOUBLE);
  uint8_t b = ((uint8_t *)m->dl_tensor.data)[0];
  cr_expect_eq(b & 0xF, 0, "element 0's nibble is untouched");
  cf_tensor_free(m);
  return b >> 4;
}

/* The reference: x rounded to float, then the nearest of the 8 magnitudes (ties to the even
 * code), 6 beyond, the sign kept (a zero too); NaN is +6. */
static uint8_t ref_encode(double x) {
  float fx = (float)x;
  if (isnan(fx)) return 0x7;
  double a = fabs((double)fx);
  int best = 0;
  for (int k = 1; k < 8; k++) {
    double d = fabs(a - mags[k]), db = fabs(a - mags[best]);
    if (d < db || (d == db && k % 2 == 0)) best = k;
  }
  return (uint8_t)((signbit(fx) ? 8 : 0) | best);
}

Test(fp4, every_code_decodes_and_round_trips) {
  DLManagedTensor *m = cf_tensor_host(CF_FLOAT4_E2M1FN, 1, (int64_t[]){16});
  for (int c = 0; c < 16; c += 2) ((uint8_t *)m->dl_tensor.data)[c / 2] = (uint8_t)(c | (c + 1) << 4);
  for (int c = 0; c < 16; c++) {
    double v = cf_tensor_get(&m->dl_tensor, c), want = (c & 8 ? -1 : 1) * mags[c & 7];
    cr_expect(v == want && signbit(v) == (c >= 8), "code %d is %g, expected %g", c, v, want);
    cr_expect_eq(encode(v), c, "code %d: %g encodes to %d", c, v, encode(v));
  }
  cf_tensor_free(m);
}

Test(fp4, casts_from_float_at_every_rounding_boundary) {
  int n = 0;
  for (int k = 0; k + 1 < 8; k++) {
    double mid = (mags[k] + mags[k + 1]) / 2;
    double xs[3] = {mid, nextafterf((float)mid, 0), nextafterf((float)mid, INFINITY)};
    for (int s = 0; s < 2; s++)
      for (int j = 0; j < 3; j++, n++) {
        double x = s ? -xs[j] : xs[j];
        cr_expect_eq(encode(x), ref_encode(x), "%.9g gives code %d, expected %d", x, encode(x), ref_encode(x));
      }
  }
  cr_expect_eq(n, 42);
  /* pinned: ties to even (0.25 -> 0, 0.75 -> 1, 1.25 -> 1, 1.75 -> 2, 2.5 -> 2, 3.5 -> 4, 5 -> 4),
   * saturation (6.5, 7 -> 6: no value beyond), infinities to +-6, NaN to +6 (cuda_fp4.h),
   * tiny values to a zero of their sign, and a double rounded to float first */
  static const struct {
    double x;
    uint8_t code;
  } pins[] = {{0.25, 0x0}, {0.75, 0x2}, {1.25, 0x2}, {1.75, 0x4}, {2.5, 0x4}, {3.5, 0x6}, {5, 0x6}, {-5, 0xE},
              {6.5, 0x7}, {7, 0x7}, {1e30, 0x7}, {INFINITY, 0x7}, {-INFINITY, 0xF}, {NAN, 0x7}, {-NAN, 0x7},
              {1e-30, 0x0}, {-1e-30, 0x8}, {-0.0, 0x8}, {0.25 + 0x1p-24, 0x1}, {0.25 + 0x1p-60, 0x0}};
  for (size_t i = 0; i < sizeof pins / sizeof *pins; i++)
    cr_expect_eq(encode(pins[i].x), pins[i].code, "%.17g gives code %d, expected %d", pins[i].x, encode(pins[i].x),
                 pins[i].code);
}

Test(fp4, host_tensors_are_packed_two_to_a_byte) {
  DLManagedTensor *m = cf_tensor_host(CF_FLOAT4_E2M1FN, 2, (int64_t[]){3, 4});
  DLTensor *t = &m->dl_tensor;
  cr_expect(t->dtype.code == 17 && t->dtype.bits == 4 && t->dtype.lanes == 1); /* DLPack 1.1 kDLFloat4_e2m1fn */
  cr_expect_eq(cf_dtype_storage_bytes(CF_FLOAT4_E2M1FN, 12), 6);
  cr_expect_eq(cf_dtype_storage_bytes(CF_FLOAT4_E2M1FN, 7), 4);
  cr_expect_eq(cf_dtype_size(CF_FLOAT4_E2M1FN), 1); /* a register holds one value per byte */
  for (int i = 0; i < 12; i++) ir_dl_store(t, i, CF_FLOAT4_E2M1FN, (IrElem){.d = i % 8 * 0.5}, CF_DOUBLE);
  /* 0, 0.5 | 1, 1.5 | 2, 2.5 (a tie: 2) | 3, 3.5 (a tie: 4) | 0, 0.5 | 1, 1.5: low nibble first */
  static const uint8_t want[6] = {0x10, 0x32, 0x44, 0x65, 0x10, 0x32};
  const uint8_t *have = t->data;
  for (int b = 0; b < 6; b++) cr_expect_eq(have[b], want[b], "byte %d is %#x, expected %#x", b, have[b], want[b]);
  cf_tensor_free(m);
}

Test(fp4, promotion_and_the_storage_rule) {
  cr_expect_eq(ir_dtype_promote(CF_FLOAT4_E2M1FN, CF_FLOAT8_E4M3FN), CF_FLOAT8_E4M3FN);
  cr_expect_eq(ir_dtype_promote(CF_FLOAT4_E2M1FN, CF_HALF), CF_HALF);
  cr_expect_eq(ir_dtype_accumulate(CF_FLOAT4_E2M1FN), CF_FLOAT);
  cr_expect_str_eq(cf_dtype_name(CF_FLOAT4_E2M1FN), "__e2m1");
  cr_expect(ir_op_accepts(OP_CAST, CF_FLOAT4_E2M1FN) && ir_op_accepts(OP_SET, CF_FLOAT4_E2M1FN));
  cr_expect_not(ir_op_accepts(OP_MUL, CF_FLOAT4_E2M1FN));
}

/* fp4 -> float -> mul 1.5 -> fp4, evaluated: each product rounded to e2m1 (written out). */
Test(fp4, evaluator_casts_through_float) {
  cf_tv *x = tu_input(f, CF_FLOAT4_E2M1FN, 2, (int64_t[]){2, 4});
  cf_tv *y = cf_cast(f, cf_mul_scalar(f, cf_cast(f, x, CF_FLOAT), 1.5), CF_FLOAT4_E2M1FN);
  cr_assert_eq(cf_fusion_add_output(f, y), CF_OK, "%s", cf_fusion_error(f));
  ot_expect_def(y, "T3_g___e2m1[iS6{2}, iS7{4}]\n   = cast( T2_l_float[iS4{2}, iS5{4}], __e2m1 );\n");
  DLManagedTensor *in[1] = {ot_tensor(CF_FLOAT4_E2M1FN, 2, (int64_t[]){2, 4}, (double[]){0.5, 1, 1.5, 2, -3, 4, 6, -0.0})};
  DLManagedTensor *out[1] = {NULL};
  cr_assert_eq(ot_eval(f, 1, in, out), CF_OK, "%s", cf_fusion_error(f));
  /* 0.75 -> 1 (tie, even), 1.5, 2.25 -> 2, 3, -4.5 -> -4, 6, 9 -> 6 (saturated), -0 */
  ot_expect_values(out[0], CF_FLOAT4_E2M1FN, 2, (int64_t[]){2, 4}, (double[]){1, 1.5, 2, 3, -4, 6, 6, -0.0});
  cr_expect(signbit(cf_tensor_get(&out[0]->dl_tensor, 7)));
  ot_free_all(1, in), ot_free_all(1, out);
}

Test(fp4, refusals_name_the_tensor) {
  cf_tv *x = tu_input(f, CF_FLOAT4_E2M1FN, 2, (int64_t[]){3, 4});
  cr_expect_null(cf_mul(f, x, x));
  cr_expect_str_eq(cf_fusion_error(f), "mul: T0 has dtype __e2m1, a storage type; mul does not take it (cast it to "
                                       "float first) for T0_g___e2m1[iS0{3}, iS1{4}]");
  cf_fusion *g = cf_fusion_create();
  cf_tv *odd = cf_tensor_concrete(g, CF_FLOAT4_E2M1FN, 2, (int64_t[]){4, 5});
  cr_expect_eq(cf_fusion_add_input(g, odd), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_error(g), "add_input: T0 has dtype __e2m1, two elements per byte, and innermost extent 5; "
                                       "it must be even for T0_l___e2m1[iS0{4}, iS1{5}]");
  cf_fusion_destroy(g);
  g = cf_fusion_create();
  cf_tv *s = cf_tensor_symbolic(g, CF_FLOAT4_E2M1FN, 1);
  cf_fusion_add_input(g, s);
  cf_fusion_add_output(g, cf_cast(g, s, CF_FLOAT));
  DLManagedTensor *in = cf_tensor_host(CF_FLOAT4_E2M1FN, 1, (int64_t[]){3}), *out = NULL;
  const DLTensor *ins[1] = {&in->dl_tensor};
  cr_expect_eq(cf_fusion_evaluate(g, 1, ins, &out), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_error(g), "evaluate: input 0 (T0) has dtype __e2m1, two elements per byte, and innermost "
                                       "extent 3; it must be even");
  cf_tensor_free(in);
  cf_fusion_destroy(g);
}
