/* The in-memory kernel cache's fingerprint is exact and cheap: constants that print alike
 * with %g are different kernels (and so are a schedule's signed coordinates), a fusion of 100 inputs compiles and runs on the host
 * backend (no 64-entry arrays), and a hit on a 1000-op fusion costs a small fraction of
 * lowering it. */
#include <criterion/criterion.h>
#include <time.h>

#include "executor/executor_internal.h"
#include "test_util.h"

static cf_fusion *scaled(double factor) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){4});
  cf_fusion_add_input(f, a);
  cf_fusion_add_output(f, cf_mul_scalar(f, a, factor));
  return f;
}

/* Compiles f with the cache on the host backend and returns output element 0 for a = 1. */
static double run_scaled(cf_kernel_cache *cache, cf_fusion *f) {
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST, .cache = cache});
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  DLManagedTensor *in = cf_tensor_host(CF_FLOAT, 1, (int64_t[]){4}), *out = NULL;
  for (int i = 0; i < 4; i++) ((float *)in->dl_tensor.data)[i] = 1.0f;
  const DLTensor *ins[1] = {&in->dl_tensor};
  cr_assert_eq(cf_executor_run(e, 1, ins, 1, &out), CF_OK, "%s", cf_executor_error(e));
  double v = cf_tensor_get(&out->dl_tensor, 0);
  cf_tensor_free(in);
  cf_tensor_free(out);
  cf_executor_destroy(e);
  return v;
}

Test(fingerprint, constants_that_print_alike_are_different_kernels) {
  cf_kernel_cache *cache = cf_kernel_cache_create();
  cf_fusion *f1 = scaled(1.0000001), *f2 = scaled(1.0000002);
  double v1 = run_scaled(cache, f1), v2 = run_scaled(cache, f2);
  cr_expect_eq(cf_kernel_cache_misses(cache), 2);
  cr_expect_eq(cf_kernel_cache_hits(cache), 0);
  cr_expect_eq(v1, (double)(float)(1.0f * 1.0000001));
  cr_expect_eq(v2, (double)(float)(1.0f * 1.0000002));
  cr_expect_neq(v1, v2);
  cr_expect_eq(run_scaled(cache, f2), v2); /* the same constant again: a hit */
  cr_expect_eq(cf_kernel_cache_hits(cache), 1);
  cf_fusion_destroy(f1);
  cf_fusion_destroy(f2);
  cf_kernel_cache_destroy(cache);
}

/* Whether f1 and f2 have keys of one length that differ (both destroyed). */
static bool keys_differ(cf_fusion *f1, cf_fusion *f2) {
  ExecFingerprint k1, k2;
  cr_assert_eq(exec_fingerprint(f1, CF_BACKEND_HOST, NULL, &k1), CF_OK);
  cr_assert_eq(exec_fingerprint(f2, CF_BACKEND_HOST, NULL, &k2), CF_OK);
  bool differ = k1.len == k2.len && memcmp(k1.bytes, k2.bytes, k1.len) != 0;
  free(k1.bytes);
  free(k2.bytes);
  cf_fusion_destroy(f1);
  cf_fusion_destroy(f2);
  return differ;
}

Test(fingerprint, the_sign_of_zero_is_part_of_the_key) { cr_expect(keys_differ(scaled(0.0), scaled(-0.0))); }

/* A schedule's signed-coordinates choice changes the kernel's source: part of the key. */
Test(fingerprint, the_schedule_s_signed_coordinates_are_part_of_the_key) {
  cf_fusion *f2 = scaled(2.0);
  f2->signed_coords = true;
  cr_expect(keys_differ(scaled(2.0), f2));
}

enum { NWIDE = 100 };

Test(fingerprint, a_fusion_of_100_inputs_compiles_and_runs) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *in[NWIDE], *acc = NULL;
  for (int i = 0; i < NWIDE; i++) {
    in[i] = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){32});
    cf_fusion_add_input(f, in[i]);
    acc = acc ? cf_add(f, acc, in[i]) : in[i];
  }
  cf_fusion_add_output(f, acc);
  cf_parallelize(f, acc, 0, CF_PT_TIDX);
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  DLManagedTensor *t[NWIDE], *out = NULL;
  const DLTensor *ins[NWIDE];
  for (int i = 0; i < NWIDE; i++) {
    t[i] = cf_tensor_host(CF_FLOAT, 1, (int64_t[]){32});
    for (int j = 0; j < 32; j++) ((float *)t[i]->dl_tensor.data)[j] = (float)(i + j);
    ins[i] = &t[i]->dl_tensor;
  }
  cr_assert_eq(cf_executor_run(e, NWIDE, ins, 1, &out), CF_OK, "%s", cf_executor_error(e));
  for (int j = 0; j < 32; j++) /* sum over i of (i + j) = 4950 + 100 j, exact in float */
    cr_expect_eq(cf_tensor_get(&out->dl_tensor, j), 4950.0 + 100.0 * j, "element %d", j);
  for (int i = 0; i < NWIDE; i++) cf_tensor_free(t[i]);
  cf_tensor_free(out);
  cf_executor_destroy(e);
  cf_fusion_destroy(f);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* 1000 ops: a chain of adds of a constant, inlined and parallelized like a user would. */
static cf_fusion *long_chain(void) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){128});
  cf_fusion_add_input(f, x);
  for (int i = 0; i < 1000; i++) x = cf_add_scalar(f, x, (double)i);
  cf_fusion_add_output(f, x);
  cf_parallelize(f, x, 0, CF_PT_TIDX);
  return f;
}

Test(fingerprint, a_hit_on_a_1000_op_fusion_costs_a_small_fraction_of_lowering) {
  cf_fusion *f = long_chain();
  double lower_t[5], fp_t[5];
  for (int r = 0; r < 5; r++) {
    KKernel *k = NULL;
    char *msg = NULL;
    double t0 = now();
    cr_assert_eq(lower_fusion(f, NULL, &k, &msg), CF_OK, "%s", msg ? msg : "");
    lower_t[r] = now() - t0;
    kkernel_free(k);
    ExecFingerprint fp;
    t0 = now();
    cr_assert_eq(exec_fingerprint(f, CF_BACKEND_HOST, NULL, &fp), CF_OK);
    fp_t[r] = now() - t0;
    free(fp.bytes);
  }
  qsort(lower_t, 5, sizeof *lower_t, cmp_double);
  qsort(fp_t, 5, sizeof *fp_t, cmp_double);
  cr_log_info("1000 ops: lowering %.3f ms, fingerprint %.3f ms (medians of 5)", lower_t[2] * 1e3, fp_t[2] * 1e3);
  /* Optimized builds: a small fraction. Unoptimized or sanitized ones (every byte written
   * through an instrumented call) keep only the weaker bound. */
#if defined(__OPTIMIZE__) && !defined(__SANITIZE_ADDRESS__)
  const double fraction = 4;
#else
  const double fraction = 1;
#endif
  cr_expect_lt(fp_t[2] * fraction, lower_t[2], "fingerprint %.3f ms is not under 1/%g of lowering %.3f ms",
               fp_t[2] * 1e3, fraction, lower_t[2] * 1e3);
  cf_fusion_destroy(f);
}
