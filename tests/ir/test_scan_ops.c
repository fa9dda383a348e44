/* The scans (cumsum, cumprod, cummax, cummin: IR_SCAN_TABLE) and embedding_fwd in the IR
 * and the reference evaluator (issue 26): the scan table's invariants (each scan runs a
 * reduction and folds with its combine's forms), printed math, torch's dtypes, every
 * refusal with its exact message, and evaluated values written out by hand: wrapping and
 * float accumulation in cumprod, NaN and infinities through cummax and cummin, integer
 * extremes and bool; embedding_fwd's lookup of a 1-D and a 2-D index and its renorm for
 * constant and run-time norm types against naive loops. */
#include <math.h>
#include <stdlib.h>

#include "ops_test_util.h"

static cf_fusion *f;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(scan_ops, .init = setup, .fini = teardown);

/* ---- the table -------------------------------------------------------------------------- */

Test(scan_ops, every_scan_runs_a_reduction_with_its_combines_forms) {
  int scans = 0;
  for (int op = 0; op < OP_COUNT; op++) {
    bool scan = ir_op_is_scan((IrOp)op);
    cr_expect_eq(scan, ir_op_type_rule((IrOp)op) == TR_SCAN, "%s", ir_op_name((IrOp)op));
    if (!scan) continue;
    scans++;
    IrOp red = ir_scan_reduction((IrOp)op), c = ir_reduction_combine(red);
    cr_expect(ir_op_is_reduction(red), "%s", ir_op_name((IrOp)op));
    cr_expect_eq(ir_op_kind((IrOp)op), OPK_INDEXED, "%s", ir_op_name((IrOp)op));
    cr_expect_eq(ir_op_eval((IrOp)op), ir_op_eval(c), "%s", ir_op_name((IrOp)op));
    cr_expect_str_eq(ir_op_form((IrOp)op, true), ir_op_form(c, true), "%s", ir_op_name((IrOp)op));
    cr_expect_str_eq(ir_op_form((IrOp)op, false), ir_op_form(c, false), "%s", ir_op_name((IrOp)op));
  }
  cr_expect_eq(scans, 4);
  cr_expect_eq(ir_scan_reduction(OP_CUMSUM), OP_SUM);
  cr_expect_eq(ir_scan_reduction(OP_CUMPROD), OP_PROD);
  cr_expect_eq(ir_scan_reduction(OP_CUMMAX), OP_MAX_REDUCE);
  cr_expect_eq(ir_scan_reduction(OP_CUMMIN), OP_MIN_REDUCE);
  cr_expect_eq(ir_scan_reduction(OP_GATHER), OP_COUNT);
  cr_expect_not(ir_op_is_scan(OP_SUM));
}

/* ---- building --------------------------------------------------------------------------- */

Test(scan_ops, printed_math_and_torchs_dtypes) {
  cf_tv *x = tu_input(f, CF_FLOAT, 2, (int64_t[]){5, 7}), *i = tu_input(f, CF_INT32, 1, (int64_t[]){6});
  cf_tv *b = tu_input(f, CF_BOOL, 1, (int64_t[]){4}), *c = tu_input(f, CF_INT8, 1, (int64_t[]){3});
  ot_expect_def(cf_cumprod(f, x, 1), "T4_l_float[iS5{5}, iS6{7}]\n   = cumprod( T0_g_float[iS0{5}, iS1{7}], dim 1 );\n");
  ot_expect_def(cf_cummax(f, x, -2), "T5_l_float[iS7{5}, iS8{7}]\n   = cummax( T0_g_float[iS0{5}, iS1{7}], dim 0 );\n");
  ot_expect_def(cf_cummin(f, i, 0), "T6_l_int[iS9{6}]\n   = cummin( T1_g_int[iS2{6}], dim 0 );\n");
  cr_expect_eq(cf_tv_dtype(cf_cumprod(f, i, 0)), CF_INT64); /* torch.cumprod of integers and bool */
  cr_expect_eq(cf_tv_dtype(cf_cumprod(f, b, 0)), CF_INT64);
  cr_expect_eq(cf_tv_dtype(cf_cumprod(f, cf_cast(f, x, CF_BFLOAT16), 0)), CF_BFLOAT16);
  cr_expect_eq(cf_tv_dtype(cf_cummax(f, c, 0)), CF_INT8); /* torch.cummax keeps the dtype */
  cr_expect_eq(cf_tv_dtype(cf_cummin(f, b, 0)), CF_BOOL);
  cr_expect_eq(cf_tv_dtype(cf_cummax(f, cf_cast(f, x, CF_HALF), 1)), CF_HALF);
  cr_expect_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
}

static void expect_refused(cf_dtype dt, int rank, int dim, cf_tv *(*op)(cf_fusion *, cf_tv *, int), const char *want) {
  cf_fusion *g = cf_fusion_create();
  cf_tv *x = tu_input(g, dt, rank, (int64_t[]){5, 6});
  cr_expect_null(op(g, x, dim));
  cr_expect_str_eq(cf_fusion_error(g), want);
  cf_fusion_destroy(g);
}

Test(scan_ops, refusals_name_the_op_and_the_tensor) {
  expect_refused(CF_COMPLEX_FLOAT, 2, 1, cf_cummax, "cummax: T0 has dtype complex_float, but cummax does not take "
                                                    "complex tensors for T0_g_complex_float[iS0{5}, iS1{6}]");
  expect_refused(CF_COMPLEX_DOUBLE, 2, 0, cf_cummax, "cummax: T0 has dtype complex_double, but cummax does not "
                                                     "take complex tensors for T0_g_complex_double[iS0{5}, iS1{6}]");
  expect_refused(CF_COMPLEX_FLOAT, 2, 0, cf_cummin, "cummin: T0 has dtype complex_float, but cummin does not take "
                                                    "complex tensors for T0_g_complex_float[iS0{5}, iS1{6}]");
  expect_refused(CF_FLOAT, 2, 2, cf_cummin, "cummin: dim 2 out of range for 2 axes for T0_g_float[iS0{5}, iS1{6}]");
  expect_refused(CF_FLOAT, 2, -3, cf_cumprod, "cumprod: dim -3 out of range for 2 axes for T0_g_float[iS0{5}, "
                                              "iS1{6}]");
  expect_refused(CF_INT32, 0, 0, cf_cummax, "cummax: T0 is 0-d; it has no axis to index for T0_g_int[]");
  cr_expect_null(cf_cumprod(f, NULL, 0));
  cr_expect_str_eq(cf_fusion_error(f), "cumprod: argument 1 (x) is NULL");
}

/* ---- the evaluator ----------------------------------------------------------------------- */

Test(scan_ops, cumprod_wraps_int64_and_accumulates_half_in_float) {
  cf_tv *x = tu_input(f, CF_INT64, 2, (int64_t[]){2, 3}), *b = tu_input(f, CF_BOOL, 1, (int64_t[]){4});
  cf_tv *h = tu_input(f, CF_HALF, 1, (int64_t[]){4}), *d = tu_input(f, CF_FLOAT, 1, (int64_t[]){5});
  cf_fusion_add_output(f, cf_cumprod(f, x, 1));
  cf_fusion_add_output(f, cf_cumprod(f, x, 0));
  cf_fusion_add_output(f, cf_cumprod(f, b, 0));
  cf_fusion_add_output(f, cf_cumprod(f, h, 0));
  cf_fusion_add_output(f, cf_cumprod(f, d, 0));
  int64_t big = (int64_t)1 << 62;
  DLManagedTensor *in[4] = {ot_tensor_i(CF_INT64, 2, (int64_t[]){2, 3}, (int64_t[]){big, 4, 3, -1, 2, -5}),
                            ot_tensor_i(CF_BOOL, 1, (int64_t[]){4}, (int64_t[]){1, 1, 0, 1}),
                            ot_tensor(CF_HALF, 1, (int64_t[]){4}, (double[]){256, 256, 0.00390625, -0.0}),
                            ot_tensor(CF_FLOAT, 1, (int64_t[]){5}, (double[]){-0.0, 2, INFINITY, NAN, 1})};
  DLManagedTensor *out[5] = {NULL};
  cr_assert_eq(ot_eval(f, 4, in, out), CF_OK, "%s", cf_fusion_error(f));
  /* 2^62 * 4 wraps to 0 in int64, as torch's */
  ot_expect_values(out[0], CF_INT64, 2, (int64_t[]){2, 3}, (double[]){4611686018427387904.0, 0, 0, -1, -2, 10});
  ot_expect_values(out[1], CF_INT64, 2, (int64_t[]){2, 3}, (double[]){4611686018427387904.0, 4, 3,
                                                                      -4611686018427387904.0, 8, -15});
  ot_expect_values(out[2], CF_INT64, 1, (int64_t[]){4}, (double[]){1, 1, 0, 0});
  /* float accumulates 65536 (half's inf) and comes back to 256; in half it would stay inf */
  ot_expect_values(out[3], CF_HALF, 1, (int64_t[]){4}, (double[]){256, INFINITY, 256, -0.0});
  cr_expect(signbit(cf_tensor_get(&out[3]->dl_tensor, 3)), "256 * -0.0 is -0.0");
  /* -0 * 2 = -0, -0 * inf = NaN, and NaN from there on */
  ot_expect_values(out[4], CF_FLOAT, 1, (int64_t[]){5}, (double[]){-0.0, -0.0, NAN, NAN, NAN});
  cr_expect(signbit(cf_tensor_get(&out[4]->dl_tensor, 1)));
  ot_free_all(4, in), ot_free_all(5, out);
}

Test(scan_ops, cummax_and_cummin_keep_nan_and_the_dtype) {
  cf_tv *x = tu_input(f, CF_FLOAT, 2, (int64_t[]){2, 4}), *c = tu_input(f, CF_INT8, 1, (int64_t[]){5});
  cf_tv *b = tu_input(f, CF_BOOL, 1, (int64_t[]){4}), *u = tu_input(f, CF_UINT32, 1, (int64_t[]){3});
  cf_fusion_add_output(f, cf_cummax(f, x, 1));
  cf_fusion_add_output(f, cf_cummin(f, x, 1));
  cf_fusion_add_output(f, cf_cummin(f, x, 0));
  cf_fusion_add_output(f, cf_cummax(f, c, 0));
  cf_fusion_add_output(f, cf_cummin(f, c, 0));
  cf_fusion_add_output(f, cf_cummax(f, b, 0));
  cf_fusion_add_output(f, cf_cummin(f, u, 0));
  DLManagedTensor *in[4] = {
      ot_tensor(CF_FLOAT, 2, (int64_t[]){2, 4}, (double[]){-INFINITY, 3, NAN, 5, 2, -1, INFINITY, -7}),
      ot_tensor_i(CF_INT8, 1, (int64_t[]){5}, (int64_t[]){-128, 5, 127, -3, 0}),
      ot_tensor_i(CF_BOOL, 1, (int64_t[]){4}, (int64_t[]){0, 0, 1, 0}),
      ot_tensor_i(CF_UINT32, 1, (int64_t[]){3}, (int64_t[]){4294967295LL, 7, 9})};
  DLManagedTensor *out[7] = {NULL};
  cr_assert_eq(ot_eval(f, 4, in, out), CF_OK, "%s", cf_fusion_error(f));
  ot_expect_values(out[0], CF_FLOAT, 2, (int64_t[]){2, 4}, (double[]){-INFINITY, 3, NAN, NAN, 2, 2, INFINITY, INFINITY});
  ot_expect_values(out[1], CF_FLOAT, 2, (int64_t[]){2, 4}, (double[]){-INFINITY, -INFINITY, NAN, NAN, 2, -1, -1, -7});
  ot_expect_values(out[2], CF_FLOAT, 2, (int64_t[]){2, 4}, (double[]){-INFINITY, 3, NAN, 5, -INFINITY, -1, NAN, -7});
  ot_expect_values(out[3], CF_INT8, 1, (int64_t[]){5}, (double[]){-128, 5, 127, 127, 127});
  ot_expect_values(out[4], CF_INT8, 1, (int64_t[]){5}, (double[]){-128, -128, -128, -128, -128});
  ot_expect_values(out[5], CF_BOOL, 1, (int64_t[]){4}, (double[]){0, 0, 1, 1});
  ot_expect_values(out[6], CF_UINT32, 1, (int64_t[]){3}, (double[]){4294967295.0, 7, 7});
  ot_free_all(4, in), ot_free_all(7, out);
}

/* A contiguous complex host tensor of n values {re, im}. */
static DLManagedTensor *complex_tensor(cf_dtype dt, int rank, const int64_t *sizes, const double (*v)[2]) {
  DLManagedTensor *m = cf_tensor_host(dt, rank, sizes);
  for (int64_t i = 0; i < cf_tensor_numel(&m->dl_tensor); i++)
    ir_elem_store(ir_dl_elem_ptr(&m->dl_tensor, i), dt, ir_complex(v[i][0], v[i][1]), CF_COMPLEX_DOUBLE);
  return m;
}

static void expect_complex(const DLManagedTensor *m, cf_dtype dt, int64_t n, const double (*want)[2]) {
  cf_dtype have;
  cr_assert(ir_dtype_from_dl(m->dl_tensor.dtype, &have) && have == dt, "dtype %s", cf_dtype_name(have));
  cr_assert_eq(cf_tensor_numel(&m->dl_tensor), n);
  for (int64_t i = 0; i < n; i++) {
    IrElem v = ir_elem_load(ir_dl_elem_ptr(&m->dl_tensor, i), dt);
    for (int part = 0; part < 2; part++) {
      double g = part ? v.c.im : v.c.re, w = want[i][part];
      cr_expect((g == w && signbit(g) == signbit(w)) || (isnan(g) && isnan(w)), "element %lld part %d is %.17g, expected %.17g",
                (long long)i, part, g, w);
    }
  }
}

/* cumsum and cumprod of complex tensors fold in the complex type, as torch's: each part's
 * sum, C's products (Annex G), complex64's in float complex (the evaluator's fold is the
 * kernels'), and the dtype kept. */
Test(scan_ops, cumsum_and_cumprod_of_complex_fold_in_the_complex_type) {
  cf_tv *x = tu_input(f, CF_COMPLEX_FLOAT, 2, (int64_t[]){2, 3}), *y = tu_input(f, CF_COMPLEX_DOUBLE, 1, (int64_t[]){5});
  cf_tv *s1 = cf_cumsum(f, x, 1), *s0 = cf_cumsum(f, x, 0), *p = cf_cumprod(f, y, 0), *q = cf_cumprod(f, x, 1);
  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  ot_expect_def(s1, "T2_l_complex_float[iS3{2}, iS4{3}]\n   = cumsum( T0_g_complex_float[iS0{2}, iS1{3}], dim 1 );\n");
  cr_expect_eq(cf_tv_dtype(p), CF_COMPLEX_DOUBLE);
  cf_fusion_add_output(f, s1), cf_fusion_add_output(f, s0), cf_fusion_add_output(f, p), cf_fusion_add_output(f, q);
  const double big = 1.0000000150474662e30; /* 1e30 in float */
  DLManagedTensor *in[2] = {
      complex_tensor(CF_COMPLEX_FLOAT, 2, (int64_t[]){2, 3},
                     (const double[][2]){{-0.0, -0.0}, {1, 2}, {INFINITY, 0.5}, {big, -big}, {big, -big}, {NAN, 1}}),
      complex_tensor(CF_COMPLEX_DOUBLE, 1, (int64_t[]){5},
                     (const double[][2]){{1, 1}, {1, -1}, {0, 2}, {1e300, 1e300}, {INFINITY, 0}})};
  DLManagedTensor *out[4] = {NULL};
  cr_assert_eq(ot_eval(f, 2, in, out), CF_OK, "%s", cf_fusion_error(f));
  /* the sum starts at 0+0j: -0-0j comes out +0+0j, as torch's */
  expect_complex(out[0], CF_COMPLEX_FLOAT, 6,
                 (const double[][2]){{0, 0}, {1, 2}, {INFINITY, 2.5}, {big, -big}, {2 * big, -2 * big}, {NAN, -2 * big}});
  expect_complex(out[1], CF_COMPLEX_FLOAT, 6,
                 (const double[][2]){{0, 0}, {1, 2}, {INFINITY, 0.5}, {big, -big}, {big, -big}, {NAN, 1.5}});  /* 1 + 1e30 is 1e30 in float */
  /* (0+4j)(1e300+1e300j) = -4e300+4e300j, times inf+0j: -inf+infj */
  expect_complex(out[2], CF_COMPLEX_DOUBLE, 5,
                 (const double[][2]){{1, 1}, {2, 0}, {0, 4}, {-4e300, 4e300}, {-INFINITY, INFINITY}});
  /* (1+0j)(-0-0j) = (-0 - -0) + (-0 + -0)j = 0-0j; 0 times inf+0.5j is NaN+NaNj (Annex G
   * recovers an infinity only from an infinite operand); (1e30-1e30j)^2 in float complex:
   * inf - inf is NaN, the imaginary part -inf (in double it would be 0 - 2e60j: 0-infj in
   * float); that times NaN+1j has both parts NaN, and Annex G's recovery boxes -inf to -1:
   * inf * (0 * 0 - (-1)(1)) = inf, inf * 0 = NaN */
  expect_complex(out[3], CF_COMPLEX_FLOAT, 6,
                 (const double[][2]){{0, -0.0}, {0, 0}, {NAN, NAN}, {big, -big}, {NAN, -INFINITY}, {INFINITY, NAN}});
  ot_free_all(2, in), ot_free_all(4, out);
}

/* ---- embedding_fwd -------------------------------------------------------------------------- */

Test(scan_ops, embedding_fwd_prints_as_a_lookup_and_refuses_bad_arguments) {
  cf_tv *i = tu_input(f, CF_INT64, 1, (int64_t[]){3}), *w = tu_input(f, CF_FLOAT, 2, (int64_t[]){10, 4});
  cf_tv *pad = cf_scalar_input(f, CF_INT64), *flag = cf_scalar_input(f, CF_BOOL);
  cf_tv *e = cf_embedding_fwd(f, i, w, pad, NULL, NULL, flag, flag);
  ot_expect_def(e, "T5_l_float[iS5{3}, iS6{4}]\n   = take_along_axis( T1_g_float[iS1{10}, iS2{4}],\n"
                   "        T4_l_int64_t[iS3{3}, bS4{1}], dim 0 );\n");
  cr_expect_null(cf_embedding_fwd(f, w, w, NULL, NULL, NULL, NULL, NULL));
  cr_expect_str_eq(cf_fusion_error(f), "embedding_fwd: input T1 has dtype float; an index must be int32 or int64 "
                                       "for T1_g_float[iS1{10}, iS2{4}]");
  struct {
    int wrank;
    cf_dtype wdt, mdt;
    const char *want;
  } cases[] = {
      {1, CF_FLOAT, CF_FLOAT, "embedding_fwd: weight T1 has 1 axes; it must be 2-D [num_embeddings, embedding_dim] for "
                              "T1_g_float[iS1{10}]"},
      {2, CF_INT32, CF_FLOAT, "embedding_fwd: max_norm needs a floating-point weight; T1 has dtype int for "
                              "T1_g_int[iS1{10}, iS2{4}]"},
      {2, CF_FLOAT, CF_COMPLEX_FLOAT, "embedding_fwd: max_norm T2 must be a 0-d real tensor (cf_scalar_input or a "
                                      "constant) for T2_g_complex_float[]"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    cf_fusion *g = cf_fusion_create();
    cf_tv *gi = tu_input(g, CF_INT64, 1, (int64_t[]){3}), *gw = tu_input(g, cases[k].wdt, cases[k].wrank, (int64_t[]){10, 4});
    cr_expect_null(cf_embedding_fwd(g, gi, gw, NULL, cf_scalar_input(g, cases[k].mdt), NULL, NULL, NULL));
    cr_expect_str_eq(cf_fusion_error(g), cases[k].want);
    cf_fusion_destroy(g);
  }
  cf_fusion *g = cf_fusion_create();
  cf_tv *gi = tu_input(g, CF_INT64, 1, (int64_t[]){3}), *gw = tu_input(g, CF_FLOAT, 2, (int64_t[]){10, 4});
  cr_expect_null(cf_embedding_fwd(g, gi, gw, cf_const(g, CF_FLOAT, 1.0), NULL, NULL, NULL, NULL));
  cr_expect_str_eq(cf_fusion_error(g), "embedding_fwd: padding_idx T2 must be a 0-d integer tensor (cf_scalar_input "
                                       "or a constant) for T2_l_float[]");
  cf_fusion_destroy(g);
  g = cf_fusion_create();
  gi = tu_input(g, CF_INT64, 0, (int64_t[]){0}), gw = tu_input(g, CF_FLOAT, 2, (int64_t[]){10, 4});
  cr_expect_null(cf_embedding_fwd(g, gi, gw, NULL, NULL, NULL, NULL, NULL));
  cr_expect_str_eq(cf_fusion_error(g), "embedding_fwd: input T0 has 0 axes; it needs 1 to 15 for T0_g_int64_t[]");
  cf_fusion_destroy(g);
}

/* The weight [7, 4] and the naive result of torch's renorm: each looked-up row whose
 * p-norm exceeds max_norm scaled by max_norm / (norm + 1e-7). */
static const double W[28] = {0.5, -1.0, 2.0, 0.25,  3.0, 0.0,  -4.0, 1.0,  0.0,  0.0,  0.0,  0.0,  -0.5, 0.5,
                             0.5, -0.5, 8.0, -2.0, 1.0, 0.75, 1.5,  1.5, -1.5, 1.5,  0.1,  0.2,  -0.3, 0.4};

static double pnorm(const double *row, double p) {
  double s = 0;
  if (isinf(p)) {
    s = p > 0 ? 0 : INFINITY;
    for (int k = 0; k < 4; k++) s = p > 0 ? fmax(s, fabs(row[k])) : fmin(s, fabs(row[k]));
    return s;
  }
  for (int k = 0; k < 4; k++) s += p == 0 ? (row[k] != 0) : pow(fabs(row[k]), p);
  return p == 0 ? s : pow(s, 1 / p);
}

static void expect_renormed(const DLManagedTensor *out, const int64_t *idx, int n, double max_norm, double p) {
  for (int r = 0; r < n; r++) {
    const double *row = &W[4 * idx[r]];
    double norm = pnorm(row, p), scale = norm > max_norm ? max_norm / (norm + 1e-7) : 1;
    for (int k = 0; k < 4; k++) {
      double got = cf_tensor_get(&out->dl_tensor, 4 * r + k), want = row[k] * scale;
      cr_expect(scale == 1 ? got == (float)want : fabs(got - want) <= 4e-7 * fabs(want),
                "p %g, row %d (index %lld), element %d: %.9g, expected %.9g", p, r, (long long)idx[r], k, got, want);
    }
  }
}

/* A [2, 3] index (flattened, looked up, reshaped back to [2, 3, 4]); max_norm 2 between the
 * rows' norms; norm_type constant (each of torch.norm's cases) or a scalar input. */
Test(scan_ops, embedding_fwd_renorms_rows_beyond_max_norm) {
  const double ps[] = {2, 1, 3, INFINITY, -INFINITY, 0};
  const int64_t idx[6] = {1, 0, 6, 2, -3, 5}; /* -3 counts from the end: row 4 */
  const int64_t pos[6] = {1, 0, 6, 2, 4, 5};
  for (int run = 0; run < 12; run++) {
    cf_fusion *g = cf_fusion_create();
    double p = ps[run % 6];
    bool input = run >= 6;
    cf_tv *i = tu_input(g, CF_INT64, 2, (int64_t[]){2, 3}), *w = tu_input(g, CF_FLOAT, 2, (int64_t[]){7, 4});
    cf_tv *pt = input ? cf_scalar_input(g, CF_DOUBLE) : cf_const(g, CF_DOUBLE, p);
    cf_tv *e = cf_embedding_fwd(g, i, w, NULL, cf_const(g, CF_DOUBLE, p == 0 ? 3.5 : 2.0), pt, NULL, NULL);
    cr_assert_not_null(e, "%s", cf_fusion_error(g));
    cf_fusion_add_output(g, e);
    DLManagedTensor *in[3] = {ot_tensor_i(CF_INT64, 2, (int64_t[]){2, 3}, idx), ot_tensor(CF_FLOAT, 2, (int64_t[]){7, 4}, W),
                              input ? ot_tensor(CF_DOUBLE, 0, NULL, &p) : NULL};
    DLManagedTensor *out = NULL;
    cr_assert_eq(ot_eval(g, input ? 3 : 2, in, &out), CF_OK, "%s", cf_fusion_error(g));
    cr_expect_eq(out->dl_tensor.ndim, 3);
    cr_expect(out->dl_tensor.shape[0] == 2 && out->dl_tensor.shape[1] == 3 && out->dl_tensor.shape[2] == 4);
    expect_renormed(out, pos, 6, p == 0 ? 3.5 : 2.0, p);
    ot_free_all(input ? 3 : 2, in);
    cf_tensor_free(out);
    cf_fusion_destroy(g);
  }
}
