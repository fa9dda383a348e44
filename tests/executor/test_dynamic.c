/* Dynamic ops (sizes given at run time: ir/ops_dynamic.c, ir/concretize.c,
 * executor/fusion_dynamic.c) on the host backend: reshape, expand, full, slice and iota
 * with sizes from scalar inputs, constants and tensors' sizes; define and run against the
 * evaluator and against values written out here; one cache through several values
 * (compiled once per distinct value, equal values hit); bad values refused with the
 * static ops' messages and the cache still usable; a size in device memory refused; a
 * manual schedule of a dynamic fusion refused. */
#include <criterion/criterion.h>
#include <string.h>

#include "test_util.h"

TU_CACHE_SUITE(dynamic);

static const cf_executor_options host = {.backend = CF_BACKEND_HOST};

static DLManagedTensor *int_scalar(int64_t v) {
  DLManagedTensor *t = cf_tensor_host(CF_INT64, 0, NULL);
  *(int64_t *)t->dl_tensor.data = v;
  return t;
}

static DLManagedTensor *iota_tensor(int rank, const int64_t *sizes) {
  DLManagedTensor *t = cf_tensor_host(CF_FLOAT, rank, sizes);
  for (int64_t i = 0; i < cf_tensor_numel(&t->dl_tensor); i++) ((float *)t->dl_tensor.data)[i] = (float)i;
  return t;
}

/* Runs the cache (made on first use) and the evaluator on the inputs; every output is
 * checked equal to the evaluator's and *got receives output 0; returns the cache's status. */
static cf_status run(int nin, DLManagedTensor **in, DLManagedTensor **got) {
  if (!c) c = cf_fusion_cache_create(f, &host);
  tu_assert_io_fits(f, nin);
  const DLTensor *ins[TU_MAX_IO];
  for (int i = 0; i < nin; i++) ins[i] = &in[i]->dl_tensor;
  DLManagedTensor *out[TU_MAX_IO] = {0}, *want[TU_MAX_IO] = {0};
  cf_status s = cf_fusion_execute(c, nin, ins, cf_fusion_num_outputs(f), out);
  if (s) return s;
  cr_assert_eq(cf_fusion_evaluate(f, nin, ins, want), CF_OK, "%s", cf_fusion_error(f));
  for (int o = 0; o < cf_fusion_num_outputs(f); o++) {
    char msg[256] = "";
    cr_expect(cf_tensor_allclose(&out[o]->dl_tensor, &want[o]->dl_tensor, 0, 0, msg, sizeof msg), "output %d: %s", o,
              msg);
    cf_tensor_free(want[o]);
    if (o) cf_tensor_free(out[o]);
  }
  *got = out[0];
  return CF_OK;
}

static void expect_shape(const DLManagedTensor *t, int rank, const int64_t *sizes) {
  cr_assert_eq(t->dl_tensor.ndim, rank);
  for (int d = 0; d < rank; d++) cr_expect_eq(t->dl_tensor.shape[d], sizes[d], "axis %d: %lld", d, (long long)t->dl_tensor.shape[d]);
}

static void free_all(int n, DLManagedTensor **t) {
  for (int i = 0; i < n; i++) cf_tensor_free(t[i]);
}

/* out = reshape(x, {n0, n1}) * 2, x symbolic [i0, i1], n0 and n1 scalar inputs */
static void build_reshape(void) {
  cf_tv *x = cf_tensor_symbolic(f, CF_FLOAT, 2);
  cf_fusion_add_input(f, x);
  cf_tv *n0 = cf_scalar_input(f, CF_INT64), *n1 = cf_scalar_input(f, CF_INT64); /* inputs 1 and 2 */
  cf_fusion_add_output(f, cf_mul_scalar(f, cf_reshape_dynamic(f, x, 2, (cf_tv *[]){n0, n1}), 2.0));
}

static cf_status call_reshape(int64_t a, int64_t b, const int64_t *want) {
  DLManagedTensor *in[3] = {iota_tensor(2, (int64_t[]){2, 6}), int_scalar(a), int_scalar(b)}, *out = NULL;
  cf_status s = run(3, in, &out);
  if (!s) {
    expect_shape(out, 2, want);
    for (int i = 0; i < 12; i++) cr_expect_eq(((float *)out->dl_tensor.data)[i], 2.0f * (float)i);
  }
  cf_tensor_free(out);
  free_all(3, in);
  return s;
}

Test(dynamic, reshape_compiles_once_per_value) {
  build_reshape();
  cr_assert_eq(call_reshape(3, 4, (int64_t[]){3, 4}), CF_OK, "%s", cf_fusion_cache_error(c));
  cr_assert_eq(call_reshape(4, 3, (int64_t[]){4, 3}), CF_OK, "%s", cf_fusion_cache_error(c));
  cr_assert_eq(call_reshape(3, 4, (int64_t[]){3, 4}), CF_OK, "%s", cf_fusion_cache_error(c));
  cr_assert_eq(call_reshape(-1, 2, (int64_t[]){6, 2}), CF_OK, "%s", cf_fusion_cache_error(c));
  cr_assert_eq(call_reshape(6, -1, (int64_t[]){6, 2}), CF_OK, "%s", cf_fusion_cache_error(c)); /* same concrete sizes */
  cr_expect_eq(cf_fusion_cache_num_kernels(c), 3);
  cr_expect_eq(cf_fusion_cache_misses(c), 3);
  cr_expect_eq(cf_fusion_cache_hits(c), 2);
  cr_expect_eq(cf_fusion_cache_num_entries(c), 3);
}

Test(dynamic, reshape_bad_values_are_refused_and_the_cache_goes_on) {
  build_reshape();
  cr_expect_eq(call_reshape(5, 2, NULL), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_cache_error(c),
                   "execute: reshape: T0 has 12 elements but the sizes give 10 for T0_g_float[iS0{i0}, iS1{i1}]");
  cr_expect_eq(call_reshape(-3, 4, NULL), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_cache_error(c), "execute: reshape: size -3 of axis 0 is negative for T0_g_float[iS0{i0}, iS1{i1}]");
  cr_expect_eq(call_reshape(-1, -1, NULL), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_cache_error(c), "execute: reshape: size -1 of axis 1 is a second -1 (one size may be "
                   "inferred) for T0_g_float[iS0{i0}, iS1{i1}]");
  cr_expect_eq(call_reshape(5, -1, NULL), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_cache_error(c), "execute: reshape: T0 has 12 elements, not a multiple of 5 for "
                   "T0_g_float[iS0{i0}, iS1{i1}]");
  cr_assert_eq(call_reshape(2, 6, (int64_t[]){2, 6}), CF_OK, "%s", cf_fusion_cache_error(c));
  cr_expect_eq(cf_fusion_cache_num_kernels(c), 1);
  /* the evaluator gives the same refusal, prefixed by its name */
  DLManagedTensor *in[3] = {iota_tensor(2, (int64_t[]){2, 6}), int_scalar(5), int_scalar(2)}, *out[1];
  const DLTensor *ins[3] = {&in[0]->dl_tensor, &in[1]->dl_tensor, &in[2]->dl_tensor};
  cr_expect_eq(cf_fusion_evaluate(f, 3, ins, out), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_error(f),
                   "evaluate: reshape: T0 has 12 elements but the sizes give 10 for T0_g_float[iS0{i0}, iS1{i1}]");
  free_all(3, in);
}

Test(dynamic, a_size_in_device_memory_is_refused) {
  build_reshape();
  DLManagedTensor *in[3] = {iota_tensor(2, (int64_t[]){2, 6}), int_scalar(3), int_scalar(4)}, *out = NULL;
  in[2]->dl_tensor.device.device_type = kDLCUDA; /* never read */
  cr_expect_eq(run(3, in, &out), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_cache_error(c), "execute: input 2 (T2) gives a size at run time but is in device memory "
                   "(DLPack device type 2); pass sizes as host tensors (kDLCPU)");
  in[2]->dl_tensor.device.device_type = kDLCPU;
  free_all(3, in);
}

Test(dynamic, sizes_of_tensors_and_arithmetic) {
  /* out = reshape(x, {size(x, 0) * size(x, 1)}) + size(x, 1) */
  cf_tv *x = cf_tensor_symbolic(f, CF_FLOAT, 2);
  cf_fusion_add_input(f, x);
  cf_tv *n = cf_mul(f, cf_tv_size(f, x, 0), cf_tv_size(f, x, -1));
  cf_fusion_add_output(f, cf_add(f, cf_reshape_dynamic(f, x, 1, &n), cf_cast(f, cf_tv_size(f, x, 1), CF_FLOAT)));
  for (int k = 0; k < 2; k++) {
    int64_t sizes[2] = {2 + k, 3};
    DLManagedTensor *in = iota_tensor(2, sizes), *out = NULL;
    cr_assert_eq(run(1, &in, &out), CF_OK, "%s", cf_fusion_cache_error(c));
    expect_shape(out, 1, (int64_t[]){sizes[0] * 3});
    for (int i = 0; i < sizes[0] * 3; i++) cr_expect_eq(((float *)out->dl_tensor.data)[i], (float)i + 3.0f);
    cf_tensor_free(out);
    cf_tensor_free(in);
  }
  cr_expect_eq(cf_fusion_cache_num_kernels(c), 2);
}

Test(dynamic, full_and_expand) {
  /* out = full({n0, n1}, 2.5) + y, and broadcast_in_dim(x [1, i0], {n0, -1}) + y */
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){1, 4});
  cf_fusion_add_input(f, x);
  cf_tv *n0 = cf_scalar_input(f, CF_INT64), *n1 = cf_scalar_input(f, CF_INT32), *y = cf_tensor_symbolic(f, CF_FLOAT, 2);
  cf_fusion_add_input(f, y);
  cf_fusion_add_output(f, cf_add(f, cf_full_dynamic(f, 2, (cf_tv *[]){n0, n1}, 2.5, CF_FLOAT), y));
  cf_fusion_add_output(f, cf_add(f, cf_expand_dynamic(f, x, 2, (cf_tv *[]){n0, NULL}), y));
  DLManagedTensor *n1v = cf_tensor_host(CF_INT32, 0, NULL);
  *(int32_t *)n1v->dl_tensor.data = 4;
  DLManagedTensor *in[4] = {iota_tensor(2, (int64_t[]){1, 4}), int_scalar(3), n1v, iota_tensor(2, (int64_t[]){3, 4})};
  DLManagedTensor *out = NULL;
  cr_assert_eq(run(4, in, &out), CF_OK, "%s", cf_fusion_cache_error(c));
  expect_shape(out, 2, (int64_t[]){3, 4});
  for (int i = 0; i < 12; i++) cr_expect_eq(((float *)out->dl_tensor.data)[i], (float)i + 2.5f);
  cf_tensor_free(out);
  /* a non-broadcast axis keeps its extent */
  *(int32_t *)n1v->dl_tensor.data = 5; /* the full is [3, 5], y [3, 4]: the static add's check */
  cr_expect_eq(run(4, in, &out), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_cache_error(c), "execute: add: axis 1 has extent 4 in T3 but 5 in T6");
  free_all(4, in);
}

Test(dynamic, expand_of_a_non_broadcast_axis_must_keep_it) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){1, 4});
  cf_fusion_add_input(f, x);
  cf_tv *n = cf_scalar_input(f, CF_INT64);
  cf_fusion_add_output(f, cf_add_scalar(f, cf_expand_dynamic(f, x, 2, (cf_tv *[]){NULL, n}), 1.0));
  DLManagedTensor *in[2] = {iota_tensor(2, (int64_t[]){1, 4}), int_scalar(5)}, *out = NULL;
  cr_expect_eq(run(2, in, &out), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_cache_error(c), "execute: expand: axis 1 of T0 is not a broadcast axis and cannot expand "
                   "from 4 to 5 for T0_g_float[bS0{1}, iS1{4}]");
  *(int64_t *)in[1]->dl_tensor.data = 4;
  cr_expect_eq(run(2, in, &out), CF_OK, "%s", cf_fusion_cache_error(c));
  cf_tensor_free(out);
  free_all(2, in);
}

/* out = slice(x, {s0, 0}, {end, e1}, {1, step1}) + 1 */
static void build_slice(void) {
  cf_tv *x = cf_tensor_symbolic(f, CF_FLOAT, 2);
  cf_fusion_add_input(f, x);
  cf_tv *s0 = cf_scalar_input(f, CF_INT64), *e1 = cf_scalar_input(f, CF_INT64), *st = cf_scalar_input(f, CF_INT64);
  cf_tv *sl = cf_slice_dynamic(f, x, 2, (cf_tv *[]){s0, NULL}, (cf_tv *[]){NULL, e1}, (cf_tv *[]){NULL, st});
  cf_fusion_add_output(f, cf_add_scalar(f, sl, 1.0));
}

Test(dynamic, slice_bounds_given_at_run_time) {
  build_slice();
  struct { int64_t s0, e1, step, rows, cols, first; } cases[] = {
      {1, 5, 1, 3, 5, 11}, {-2, 10, 2, 2, 5, 21}, {1, 5, 1, 3, 5, 11}, {0, -7, 3, 4, 1, 1}, {9, 4, 1, 0, 4, 0}};
  for (int k = 0; k < 5; k++) {
    DLManagedTensor *in[4] = {iota_tensor(2, (int64_t[]){4, 10}), int_scalar(cases[k].s0), int_scalar(cases[k].e1),
                              int_scalar(cases[k].step)}, *out = NULL;
    cr_assert_eq(run(4, in, &out), CF_OK, "case %d: %s", k, cf_fusion_cache_error(c));
    expect_shape(out, 2, (int64_t[]){cases[k].rows, cases[k].cols});
    if (cases[k].rows > 0 && cases[k].cols > 0) cr_expect_eq(((float *)out->dl_tensor.data)[0], (float)cases[k].first, "case %d", k);
    cf_tensor_free(out);
    free_all(4, in);
  }
  cr_expect_eq(cf_fusion_cache_misses(c), 4);
  DLManagedTensor *in[4] = {iota_tensor(2, (int64_t[]){4, 10}), int_scalar(0), int_scalar(3), int_scalar(0)}, *out;
  cr_expect_eq(run(4, in, &out), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_cache_error(c), "execute: slice: step 0 of axis 1 is not positive for "
                   "T0_g_float[iS0{i0}, iS1{i1}]");
  free_all(4, in);
}

Test(dynamic, iota_of_a_run_time_length) {
  cf_tv *n = cf_scalar_input(f, CF_INT64);
  cf_fusion_add_output(f, cf_add_scalar(f, cf_iota_dynamic(f, cf_add(f, n, cf_const_int(f, CF_INT64, 1)), 2, 3, CF_FLOAT), 0.5));
  DLManagedTensor *in = int_scalar(4), *out = NULL;
  cr_assert_eq(run(1, &in, &out), CF_OK, "%s", cf_fusion_cache_error(c));
  expect_shape(out, 1, (int64_t[]){5});
  for (int i = 0; i < 5; i++) cr_expect_eq(((float *)out->dl_tensor.data)[i], 2.5f + 3.0f * (float)i);
  cf_tensor_free(out);
  *(int64_t *)in->dl_tensor.data = -3;
  cr_expect_eq(run(1, &in, &out), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_cache_error(c), "execute: iota: length -2 of T3 is negative");
  cf_tensor_free(in);
}

Test(dynamic, a_manual_schedule_is_refused) {
  build_reshape();
  cf_executor *e = cf_executor_create(&host);
  cr_expect_eq(cf_executor_compile(e, f), CF_ERR_UNSUPPORTED);
  cr_expect_str_eq(cf_executor_error(e), "compile: T3 = reshape(T0) has sizes given at run time; a kernel needs them "
                   "constant: run the fusion with define and run (cf_fusion_cache), which makes it static per call, or "
                   "give constant sizes");
  cf_executor_destroy(e);
}

Test(dynamic, sizes_must_be_0d_integer_tensors) {
  cf_tv *x = cf_tensor_symbolic(f, CF_FLOAT, 2), *d = cf_scalar_input(f, CF_DOUBLE);
  cr_expect_null(cf_reshape_dynamic(f, x, 1, &d));
  cr_expect_str_eq(cf_fusion_error(f), "reshape_dynamic: sizes[0] (T1) is not a 0-d integer tensor for T1_g_double[]");
}

Test(dynamic, printed_math) {
  build_reshape();
  char *text = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&text, &len);
  cf_fusion_print_math(f, m);
  fclose(m);
  cr_expect_str_eq(text, "Inputs:\n  T0_g_float[iS0{i0}, iS1{i1}]\n  T1_g_int64_t[]\n  T2_g_int64_t[]\nOutputs:\n"
                         "  T4_g_float[iS4{i2}, iS5{i3}]\n\n%kernel_math {\nT3_l_float[iS2{i2}, iS3{i3}]\n"
                         "   = reshape( T0_g_float[iS0{i0}, iS1{i1}],\n        T1_g_int64_t[],\n        T2_g_int64_t[], "
                         "{i2, i3} );\nT4_g_float[iS4{i2}, iS5{i3}]\n   = mul( T3_l_float[iS2{i2}, iS3{i3}], 2 );\n"
                         "} // %kernel_math\n");
  free(text);
}
