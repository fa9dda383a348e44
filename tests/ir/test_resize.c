/* Slice bounds on symbolic extents (ir/ops_resize.c, issue 26): negative and out-of-range
 * constant bounds of an axis whose size is known only at run time are normalized by
 * Python's rules (torch's and nvFuser's: x[-4:-1]) as scalar expressions of the extent,
 * never refused. Pinned here: the printed normalization, its agreement with CPython's
 * slice.indices for every small size and bound (including INT64_MIN and INT64_MAX) and
 * with the constant-extent path, the evaluator's values for two sizes of one fusion, and
 * a concrete copy folding the expressions to the call's constants. The kernels (host
 * backend and CUDA source) of the same fusions: tests/kernels/test_resize_kernels.c. */
#include "ops_test_util.h"

static cf_fusion *f;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(resize, .init = setup, .fini = teardown);

#define END INT64_MAX /* cf_slice's stop at the end of the axis */

static cf_tv *slice1(cf_tv *x, int64_t start, int64_t stop, int64_t step) {
  cf_tv *s = cf_slice(f, x, 1, (int64_t[]){start}, (int64_t[]){stop}, (int64_t[]){step});
  cr_assert_not_null(s, "[%lld:%lld:%lld]: %s", (long long)start, (long long)stop, (long long)step, cf_fusion_error(f));
  return s;
}

Test(resize, negative_bounds_of_a_symbolic_extent_print_their_normalization) {
  cf_tv *x = tu_input(f, CF_FLOAT, 1, NULL);
  ot_expect_def(slice1(x, -4, -1, 1), "T1_l_float[iS1{( max(0, ( min(( i0 - 1 ), 3) )) )}]\n"
                                      "   = slice( T0_g_float[iS0{i0}], starts {( max(0, ( i0 - 4 )) )}, steps {1} );\n");
  ot_expect_def(slice1(x, -10, 6, 1), "T2_l_float[iS2{( max(0, ( min(( min(i0, 6) ), ( 16 - i0 )) )) )}]\n"
                                      "   = slice( T0_g_float[iS0{i0}], starts {( max(0, ( i0 - 10 )) )}, steps {1} );\n");
  ot_expect_def(slice1(x, 2, 100, 1), "T3_l_float[iS3{( max(0, ( min(( i0 - 2 ), 98) )) )}]\n"
                                      "   = slice( T0_g_float[iS0{i0}], starts {2}, steps {1} );\n");
  ot_expect_def(slice1(x, 0, 4, 1), "T4_l_float[iS4{( min(i0, 4) )}]\n"
                                    "   = slice( T0_g_float[iS0{i0}], starts {0}, steps {1} );\n");
  ot_expect_def(slice1(x, -3, END, 1), "T5_l_float[iS5{( min(i0, 3) )}]\n"
                                       "   = slice( T0_g_float[iS0{i0}], starts {( max(0, ( i0 - 3 )) )}, steps {1} );\n");
  ot_expect_def(slice1(x, -5, -1, 2), "T6_l_float[iS6{( ceilDiv(( max(0, ( min(( i0 - 1 ), 4) )) ), 2) )}]\n"
                                      "   = slice( T0_g_float[iS0{i0}], starts {( max(0, ( i0 - 5 )) )}, steps {2} );\n");
  /* empty whatever the size: the start is past the stop */
  ot_expect_def(slice1(x, 4, 2, 1), "T7_l_float[iS7{0}]\n   = slice( T0_g_float[iS0{i0}], starts {4}, steps {1} );\n");
  ot_expect_def(slice1(x, -2, -3, 1), "T8_l_float[iS8{0}]\n"
                                      "   = slice( T0_g_float[iS0{i0}], starts {( max(0, ( i0 - 2 )) )}, steps {1} );\n");
  /* the whole axis keeps its extent */
  ot_expect_def(slice1(x, 0, END, 1), "T9_l_float[iS9{i0}]\n   = slice( T0_g_float[iS0{i0}], starts {0}, steps {1} );\n");
  cr_expect_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
}

/* CPython's slice(a, b, s).indices(n) for s > 0, and the length of the range. */
static void py_slice(int64_t a, int64_t b, int64_t s, int64_t n, int64_t *start, int64_t *len) {
  int64_t lo = a < 0 ? (a < -n ? 0 : a + n) : (a > n ? n : a);
  int64_t hi = b < 0 ? (b < -n ? 0 : b + n) : (b > n ? n : b);
  *start = lo;
  *len = hi > lo ? (hi - lo - 1) / s + 1 : 0;
}

static const int64_t bounds[] = {INT64_MIN, INT64_MIN + 1, -10, -9, -8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3,
                                 4, 5, 6, 7, 8, 9, 10, INT64_MAX - 1, INT64_MAX};
#define NBOUNDS ((int)(sizeof bounds / sizeof bounds[0]))

/* The scalar v with i0 bound to n. */
static int64_t value_at(const Val *v, Val *sym, int64_t n) {
  int id = sym->id;
  ScalarBindings b = {1, &id, &n};
  int64_t r;
  const char *unbound = NULL;
  cr_assert(ir_scalar_eval(v, &b, &r, &unbound), "unbound: %s", unbound ? unbound : "?");
  return r;
}

/* Every start, stop and step 1..3 on sizes 0..9: the symbolic slice's length is CPython's
 * for every size, its start too where it reads anything, and a constant extent of that
 * size (1..9: a concrete tensor has no size 0) gives the same constants. */
Test(resize, symbolic_bounds_follow_python_for_every_size) {
  cf_tv *x = tu_input(f, CF_FLOAT, 1, NULL);
  Val *sym = ID(TV(ir_tv(x))->logical[0])->extent;
  cf_tv *xs[10] = {NULL};
  for (int n = 1; n < 10; n++) xs[n] = tu_input(f, CF_FLOAT, 1, (int64_t[]){n});
  int checked = 0;
  for (int i = 0; i < NBOUNDS; i++)
    for (int j = 0; j < NBOUNDS; j++)
      for (int64_t s = 1; s <= 3; s++) {
        int64_t a = bounds[i], b = bounds[j];
        Expr *e = ir_tv(slice1(x, a, b, s))->def;
        Val *ext = ID(TV(e->out[0])->logical[0])->extent;
        for (int64_t n = 0; n < 10; n++) {
          int64_t want_start, want_len, c;
          py_slice(a, b, s, n, &want_start, &want_len);
          cr_expect_eq(value_at(ext, sym, n), want_len, "[%lld:%lld:%lld] of %lld", (long long)a, (long long)b,
                       (long long)s, (long long)n);
          if (want_len > 0)
            cr_expect_eq(value_at(e->attr.slice.start[0], sym, n), want_start, "start of [%lld:%lld:%lld] of %lld",
                         (long long)a, (long long)b, (long long)s, (long long)n);
          checked++;
          if (n == 0) continue;
          Expr *k = ir_tv(slice1(xs[n], a, b, s))->def;
          cr_assert(ir_scalar_const_value(ID(TV(k->out[0])->logical[0])->extent, &c));
          cr_expect_eq(c, want_len, "[%lld:%lld:%lld] of constant %lld", (long long)a, (long long)b, (long long)s,
                       (long long)n);
          cr_assert(ir_scalar_const_value(k->attr.slice.start[0], &c));
          cr_expect_eq(c, want_start);
        }
      }
  cr_expect_eq(checked, NBOUNDS * NBOUNDS * 3 * 10);
}

static DLManagedTensor *iota_input(int64_t n) {
  double v[16];
  for (int64_t i = 0; i < n; i++) v[i] = (double)i;
  return ot_tensor(CF_FLOAT, 1, (int64_t[]){n}, v);
}

/* x[-4:-1], x[-10:6], x[2:100], x[4:2] and x[-5:-1:2] of one fusion on sizes 6 and 9:
 * NumPy's values. */
Test(resize, the_evaluator_normalizes_each_size_of_one_fusion) {
  cf_tv *x = tu_input(f, CF_FLOAT, 1, NULL);
  const int64_t b[5][3] = {{-4, -1, 1}, {-10, 6, 1}, {2, 100, 1}, {4, 2, 1}, {-5, -1, 2}};
  for (int k = 0; k < 5; k++) cf_fusion_add_output(f, slice1(x, b[k][0], b[k][1], b[k][2]));
  DLManagedTensor *in = iota_input(6), *out[5] = {0};
  cr_assert_eq(ot_eval(f, 1, &in, out), CF_OK, "%s", cf_fusion_error(f));
  ot_expect_values(out[0], CF_FLOAT, 1, (int64_t[]){3}, (double[]){2, 3, 4});
  ot_expect_values(out[1], CF_FLOAT, 1, (int64_t[]){6}, (double[]){0, 1, 2, 3, 4, 5});
  ot_expect_values(out[2], CF_FLOAT, 1, (int64_t[]){4}, (double[]){2, 3, 4, 5});
  ot_expect_values(out[3], CF_FLOAT, 1, (int64_t[]){0}, NULL);
  ot_expect_values(out[4], CF_FLOAT, 1, (int64_t[]){2}, (double[]){1, 3});
  ot_free_all(5, out);
  cf_tensor_free(in);
  in = iota_input(9);
  cr_assert_eq(ot_eval(f, 1, &in, out), CF_OK, "%s", cf_fusion_error(f));
  ot_expect_values(out[0], CF_FLOAT, 1, (int64_t[]){3}, (double[]){5, 6, 7});
  ot_expect_values(out[1], CF_FLOAT, 1, (int64_t[]){6}, (double[]){0, 1, 2, 3, 4, 5});
  ot_expect_values(out[2], CF_FLOAT, 1, (int64_t[]){7}, (double[]){2, 3, 4, 5, 6, 7, 8});
  ot_expect_values(out[3], CF_FLOAT, 1, (int64_t[]){0}, NULL);
  ot_expect_values(out[4], CF_FLOAT, 1, (int64_t[]){2}, (double[]){4, 6});
  ot_free_all(5, out);
  cf_tensor_free(in);
}

/* A copy keeps the expressions; a copy made concrete with a call's sizes (what define and
 * run schedules) folds them to that call's constants. */
Test(resize, copies_keep_the_normalization_and_concrete_ones_fold_it) {
  cf_tv *x = tu_input(f, CF_FLOAT, 1, NULL);
  cf_tv *s = slice1(x, -4, -1, 1);
  cf_fusion_add_output(f, s);
  cf_fusion *g = cf_fusion_copy(f);
  char *a = ot_math(f), *b = ot_math(g);
  cr_expect_str_eq(b, a);
  free(a), free(b);
  cf_fusion_destroy(g);
  DLManagedTensor *in = iota_input(9);
  const DLTensor *sizes[1] = {&in->dl_tensor};
  Val *io[2] = {ir_tv(x), ir_tv(s)};
  Expr *e = ir_tv(s)->def;
  g = ir_fusion_copy_part(f, 1, &e, 1, &io[0], 1, &io[1], sizes, NULL);
  cr_assert_eq(cf_fusion_status(g), CF_OK, "%s", cf_fusion_error(g));
  a = ot_math(g);
  cr_expect_str_eq(a, "Inputs:\n  T0_g_float[iS0{9}]\nOutputs:\n  T1_g_float[iS1{3}]\n\n%kernel_math {\n"
                      "T1_g_float[iS1{3}]\n   = slice( T0_g_float[iS0{9}], starts {5}, steps {1} );\n} // %kernel_math\n");
  free(a);
  cf_fusion_destroy(g);
  cf_tensor_free(in);
}
