/* The indexing and scan ops in the IR and the reference evaluator (issue 26): take_along_axis,
 * gather, index_select, select, scatter and cumsum, built (printed math, shapes, dtypes),
 * evaluated against naive loops written here on odd shapes with int32 and int64 indices,
 * negative indices, duplicates in scatter, and every argument error with its exact message. */
#include <stdlib.h>

#include "ops_test_util.h"

static cf_fusion *f;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(index_ops, .init = setup, .fini = teardown);

static uint64_t rng = 12345;
static int64_t next_int(int64_t lo, int64_t hi) { /* [lo, hi) */
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return lo + (int64_t)((rng >> 33) % (uint64_t)(hi - lo));
}

static DLManagedTensor *random_ints(cf_dtype dt, int rank, const int64_t *sizes, int64_t lo, int64_t hi) {
  int64_t n = 1;
  for (int d = 0; d < rank; d++) n *= sizes[d];
  int64_t *v = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
  for (int64_t i = 0; i < n; i++) v[i] = next_int(lo, hi);
  DLManagedTensor *m = ot_tensor_i(dt, rank, sizes, v);
  free(v);
  return m;
}

static double at2(const DLManagedTensor *m, int64_t i, int64_t j) {
  return cf_tensor_get(&m->dl_tensor, i * m->dl_tensor.shape[1] + j);
}

/* ---- building ------------------------------------------------------------------------- */

Test(index_ops, printed_math_and_shapes) {
  cf_tv *x = tu_input(f, CF_FLOAT, 2, (int64_t[]){5, 7}), *i = tu_input(f, CF_INT64, 2, (int64_t[]){3, 4});
  cf_tv *v = tu_input(f, CF_INT32, 1, (int64_t[]){6}), *s = cf_scalar_input(f, CF_INT64);
  cf_fusion_add_input(f, s);
  ot_expect_def(cf_gather(f, x, 1, i), "T4_l_float[iS5{3}, iS6{4}]\n   = gather( T0_g_float[iS0{5}, iS1{7}],\n"
                                       "        T1_g_int64_t[iS2{3}, iS3{4}], dim 1 );\n");
  cf_tv *sel = cf_index_select(f, x, -1, v);
  ot_expect_tv(f, sel, "T6_l_float[iS9{5}, iS10{6}]");
  cf_tv *one = cf_select(f, x, 0, s);
  ot_expect_tv(f, one, "T9_l_float[iS15{7}]");
  cf_tv *cs = cf_cumsum(f, v, 0);
  cr_expect_eq(cf_tv_dtype(cs), CF_INT64); /* torch.cumsum of integers */
  cr_expect_eq(cf_tv_dtype(cf_cumsum(f, cf_cast(f, x, CF_HALF), 1)), CF_HALF);
  cr_expect_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
}

Test(index_ops, argument_errors_name_the_tensor) {
  cf_tv *x = tu_input(f, CF_FLOAT, 2, (int64_t[]){5, 7}), *fi = tu_input(f, CF_FLOAT, 2, (int64_t[]){5, 7});
  cr_expect_null(cf_gather(f, x, 1, fi));
  cr_expect_str_eq(cf_fusion_error(f), "gather: T1 has dtype float; an index must be int32 or int64 for "
                                       "T1_g_float[iS2{5}, iS3{7}]");
  cf_fusion *g = cf_fusion_create();
  x = tu_input(g, CF_FLOAT, 2, (int64_t[]){5, 7});
  cf_tv *i1 = tu_input(g, CF_INT32, 1, (int64_t[]){3}), *i2 = tu_input(g, CF_INT32, 2, (int64_t[]){6, 2});
  cr_expect_null(cf_take_along_axis(g, x, i1, 0));
  cr_expect_str_eq(cf_fusion_error(g), "take_along_axis: T1 has 1 axes but T0 has 2; they must have the same rank");
  cf_fusion_destroy(g);
  g = cf_fusion_create();
  x = tu_input(g, CF_FLOAT, 2, (int64_t[]){5, 7});
  i2 = tu_input(g, CF_INT32, 2, (int64_t[]){6, 2});
  cr_expect_null(cf_gather(g, x, 1, i2));
  cr_expect_str_eq(cf_fusion_error(g), "gather: axis 0 has extent 6 in T1 but 5 in T0; it must be at most as large");
  cf_fusion_destroy(g);
  g = cf_fusion_create();
  x = tu_input(g, CF_FLOAT, 2, (int64_t[]){5, 7});
  i2 = tu_input(g, CF_INT32, 2, (int64_t[]){4, 2});
  cr_expect_null(cf_take_along_axis(g, x, i2, 0));
  cr_expect_str_eq(cf_fusion_error(g), "take_along_axis: axis 1 has extent 2 in T1 but 7 in T0; it must be equal");
  cf_fusion_destroy(g);
  g = cf_fusion_create();
  x = tu_input(g, CF_FLOAT, 2, (int64_t[]){5, 7});
  i1 = tu_input(g, CF_INT64, 1, (int64_t[]){3});
  cr_expect_null(cf_index_select(g, x, 2, i1));
  cr_expect_str_eq(cf_fusion_error(g), "index_select: dim 2 out of range for 2 axes for T0_g_float[iS0{5}, iS1{7}]");
  cf_fusion_destroy(g);
  g = cf_fusion_create();
  x = tu_input(g, CF_FLOAT, 2, (int64_t[]){5, 7});
  i1 = tu_input(g, CF_INT64, 1, (int64_t[]){3});
  cr_expect_null(cf_select(g, x, 0, i1));
  cr_expect_str_eq(cf_fusion_error(g), "select: T1 has 1 axes; the index must be a 0-d tensor (a scalar) for "
                                       "T1_g_int64_t[iS2{3}]");
  cf_fusion_destroy(g);
  g = cf_fusion_create();
  x = tu_input(g, CF_FLOAT, 2, (int64_t[]){5, 7});
  i2 = tu_input(g, CF_INT64, 2, (int64_t[]){2, 3});
  cf_tv *src = tu_input(g, CF_DOUBLE, 2, (int64_t[]){2, 3});
  cr_expect_null(cf_scatter(g, x, 0, i2, src));
  cr_expect_str_eq(cf_fusion_error(g), "scatter: T2 has dtype double but T0 has float; cast src first for "
                                       "T2_g_double[iS4{2}, iS5{3}]");
  cf_fusion_destroy(g);
  g = cf_fusion_create();
  cf_tv *z = tu_input(g, CF_FLOAT, 0, (int64_t[]){0});
  cr_expect_null(cf_cumsum(g, z, 0));
  cr_expect_str_eq(cf_fusion_error(g), "cumsum: T0 is 0-d; it has no axis to index for T0_g_float[]");
  cf_fusion_destroy(g);
}

/* ---- the evaluator against naive loops -------------------------------------------------- */

/* gather and take_along_axis on [5, 7] with int32 and int64 indices, negative ones too. */
Test(index_ops, gather_and_take_along_axis_evaluate_like_loops) {
  for (int dim = 0; dim < 2; dim++)
    for (int k = 0; k < 2; k++) {
      cf_dtype it = k ? CF_INT64 : CF_INT32;
      cf_fusion *g = cf_fusion_create();
      cf_tv *x = tu_input(g, CF_FLOAT, 2, (int64_t[]){5, 7}), *ig = tu_input(g, it, 2, (int64_t[]){3, 4});
      cf_tv *it2 = tu_input(g, it, 2, dim ? (int64_t[]){5, 9} : (int64_t[]){6, 7});
      cf_fusion_add_output(g, cf_gather(g, x, dim, ig));
      cf_fusion_add_output(g, cf_take_along_axis(g, x, it2, dim));
      int64_t n = dim ? 7 : 5;
      DLManagedTensor *in[3] = {random_ints(CF_FLOAT, 2, (int64_t[]){5, 7}, -50, 50),
                                random_ints(it, 2, (int64_t[]){3, 4}, -n, n),
                                random_ints(it, 2, dim ? (int64_t[]){5, 9} : (int64_t[]){6, 7}, -n, n)};
      DLManagedTensor *out[2] = {NULL, NULL};
      cr_assert_eq(ot_eval(g, 3, in, out), CF_OK, "%s", cf_fusion_error(g));
      for (int o = 0; o < 2; o++)
        for (int64_t i = 0; i < out[o]->dl_tensor.shape[0]; i++)
          for (int64_t j = 0; j < out[o]->dl_tensor.shape[1]; j++) {
            int64_t p = (int64_t)at2(in[1 + o], i, j);
            p = p < 0 ? p + n : p;
            double want = dim ? at2(in[0], i, p) : at2(in[0], p, j);
            cr_expect_eq(at2(out[o], i, j), want, "output %d dim %d element (%lld, %lld)", o, dim, (long long)i,
                         (long long)j);
          }
      ot_free_all(3, in), ot_free_all(2, out);
      cf_fusion_destroy(g);
    }
}

Test(index_ops, index_select_and_select_evaluate_like_loops) {
  cf_tv *x = tu_input(f, CF_INT32, 2, (int64_t[]){4, 3}), *v = tu_input(f, CF_INT64, 1, (int64_t[]){5});
  cf_tv *s = cf_scalar_input(f, CF_INT32);
  cf_fusion_add_input(f, s);
  cf_fusion_add_output(f, cf_index_select(f, x, 0, v));
  cf_fusion_add_output(f, cf_select(f, x, 1, s));
  cf_fusion_add_output(f, cf_index_select(f, x, 1, s)); /* a 0-d index keeps the axis, of extent 1 */
  DLManagedTensor *in[3] = {ot_tensor_i(CF_INT32, 2, (int64_t[]){4, 3}, (int64_t[]){0, 1, 2, 10, 11, 12, 20, 21, 22,
                                                                                   30, 31, 32}),
                            ot_tensor_i(CF_INT64, 1, (int64_t[]){5}, (int64_t[]){3, 0, -1, 2, 3}),
                            ot_tensor_i(CF_INT32, 0, NULL, (int64_t[]){-2})};
  DLManagedTensor *out[3] = {NULL, NULL, NULL};
  cr_assert_eq(ot_eval(f, 3, in, out), CF_OK, "%s", cf_fusion_error(f));
  ot_expect_values(out[0], CF_INT32, 2, (int64_t[]){5, 3},
                   (double[]){30, 31, 32, 0, 1, 2, 30, 31, 32, 20, 21, 22, 30, 31, 32});
  ot_expect_values(out[1], CF_INT32, 1, (int64_t[]){4}, (double[]){1, 11, 21, 31});
  ot_expect_values(out[2], CF_INT32, 2, (int64_t[]){4, 1}, (double[]){1, 11, 21, 31});
  ot_free_all(3, in), ot_free_all(3, out);
}

/* scatter into a [4, 5] of a [2, 3] index and a [3, 4] source; a duplicate writes one of
 * its values (the last along the axis). */
Test(index_ops, scatter_evaluates_like_torch) {
  cf_tv *x = tu_input(f, CF_FLOAT, 2, (int64_t[]){4, 5}), *i = tu_input(f, CF_INT64, 2, (int64_t[]){2, 3});
  cf_tv *s = tu_input(f, CF_FLOAT, 2, (int64_t[]){3, 4});
  cf_fusion_add_output(f, cf_scatter(f, x, 0, i, s));
  double xv[20];
  for (int k = 0; k < 20; k++) xv[k] = -k;
  DLManagedTensor *in[3] = {ot_tensor(CF_FLOAT, 2, (int64_t[]){4, 5}, xv),
                            ot_tensor_i(CF_INT64, 2, (int64_t[]){2, 3}, (int64_t[]){3, 0, -1, 1, 0, 3}),
                            ot_tensor(CF_FLOAT, 2, (int64_t[]){3, 4},
                                      (double[]){100, 101, 102, 103, 110, 111, 112, 113, 120, 121, 122, 123})};
  DLManagedTensor *out = NULL;
  cr_assert_eq(ot_eval(f, 3, in, &out), CF_OK, "%s", cf_fusion_error(f));
  /* column 0: rows 3, 1 get 100, 110; column 1: rows 0, 0 get 101 then 111 (the last);
   * column 2: rows 3 (= -1), 3 get 102 then 112 */
  ot_expect_values(out, CF_FLOAT, 2, (int64_t[]){4, 5},
                   (double[]){0, 111, -2, -3, -4, 110, -6, -7, -8, -9, -10, -11, -12, -13, -14, 100, -16, 112, -18,
                              -19});
  ot_free_all(3, in);
  cf_tensor_free(out);
}

Test(index_ops, cumsum_evaluates_in_order) {
  cf_tv *x = tu_input(f, CF_INT32, 2, (int64_t[]){2, 3}), *b = tu_input(f, CF_BOOL, 1, (int64_t[]){4});
  cf_tv *h = tu_input(f, CF_HALF, 1, (int64_t[]){3});
  cf_fusion_add_output(f, cf_cumsum(f, x, 0));
  cf_fusion_add_output(f, cf_cumsum(f, x, -1));
  cf_fusion_add_output(f, cf_cumsum(f, b, 0));
  cf_fusion_add_output(f, cf_cumsum(f, h, 0));
  DLManagedTensor *in[3] = {ot_tensor_i(CF_INT32, 2, (int64_t[]){2, 3}, (int64_t[]){1, 2, INT32_MAX, 10, 20, 1}),
                            ot_tensor_i(CF_BOOL, 1, (int64_t[]){4}, (int64_t[]){1, 0, 1, 1}),
                            ot_tensor(CF_HALF, 1, (int64_t[]){3}, (double[]){2048, 1, 1})};
  DLManagedTensor *out[4] = {NULL};
  cr_assert_eq(ot_eval(f, 3, in, out), CF_OK, "%s", cf_fusion_error(f));
  /* int32 accumulates in int64: INT32_MAX + 1 does not wrap */
  ot_expect_values(out[0], CF_INT64, 2, (int64_t[]){2, 3}, (double[]){1, 2, INT32_MAX, 11, 22, 2147483648.0});
  ot_expect_values(out[1], CF_INT64, 2, (int64_t[]){2, 3}, (double[]){1, 3, 2147483650.0, 10, 30, 31});
  ot_expect_values(out[2], CF_INT64, 1, (int64_t[]){4}, (double[]){1, 1, 2, 3});
  /* half accumulates in float: 2048 + 1 + 1 = 2050 (in half each step would stay 2048) */
  ot_expect_values(out[3], CF_HALF, 1, (int64_t[]){3}, (double[]){2048, 2048, 2050});
  ot_free_all(3, in), ot_free_all(4, out);
}

Test(index_ops, out_of_range_indices_are_errors_naming_the_op) {
  cf_tv *x = tu_input(f, CF_FLOAT, 2, (int64_t[]){2, 3}), *i = tu_input(f, CF_INT32, 2, (int64_t[]){2, 2});
  cf_fusion_add_output(f, cf_gather(f, x, 1, i));
  DLManagedTensor *in[2] = {ot_tensor(CF_FLOAT, 2, (int64_t[]){2, 3}, (double[]){1, 2, 3, 4, 5, 6}),
                            ot_tensor_i(CF_INT32, 2, (int64_t[]){2, 2}, (int64_t[]){0, 2, -4, 1})};
  DLManagedTensor *out = NULL;
  cr_expect_eq(ot_eval(f, 2, in, &out), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_error(f), "evaluate: gather: index -4 is out of range for axis 1 of T0 (extent 3), at "
                                       "element 2 of T1");
  ot_free_all(2, in);
}

Test(index_ops, symbolic_extents_are_checked_when_bound) {
  cf_tv *x = tu_input(f, CF_FLOAT, 2, NULL), *i = tu_input(f, CF_INT64, 2, NULL);
  cf_fusion_add_output(f, cf_gather(f, x, 0, i));
  DLManagedTensor *in[2] = {ot_tensor(CF_FLOAT, 2, (int64_t[]){2, 2}, (double[]){1, 2, 3, 4}),
                            ot_tensor_i(CF_INT64, 2, (int64_t[]){1, 3}, (int64_t[]){0, 1, 0})};
  DLManagedTensor *out = NULL;
  cr_expect_eq(ot_eval(f, 2, in, &out), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_error(f), "evaluate: gather: axis 1 has extent 3 in T1 but 2 in T0; it must be at most "
                                       "as large");
  ot_free_all(2, in);
}

Test(index_ops, paired_symbolic_extents_must_agree) {
  cf_tv *x = tu_input(f, CF_FLOAT, 2, NULL), *i = tu_input(f, CF_INT64, 2, NULL);
  cf_fusion_add_output(f, cf_take_along_axis(f, x, i, 1));
  DLManagedTensor *in[2] = {ot_tensor(CF_FLOAT, 2, (int64_t[]){2, 2}, (double[]){1, 2, 3, 4}),
                            ot_tensor_i(CF_INT64, 2, (int64_t[]){3, 1}, (int64_t[]){0, 1, 0})};
  DLManagedTensor *out = NULL;
  cr_expect_eq(ot_eval(f, 2, in, &out), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_error(f), "evaluate: take_along_axis: axis 0 has extent 3 in T1 but 2 in T2");
  ot_free_all(2, in);
}
