/* Special floating-point constants in generated code (issue 16): NaN, the infinities and
 * -0.0 used as scalar operands compile in both dialects (NVRTC for sm_90a, the host C
 * compiler) and keep their exact value, sign of zero included. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "executor/exec_cuda.h"
#include "test_util.h"

/* T0[4] -> T1 = T0 + c, scheduled on threads. */
static cf_fusion *add_constant(double c) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){4});
  cf_fusion_add_input(f, a);
  cf_tv *b = cf_add_scalar(f, a, c);
  cf_fusion_add_output(f, b);
  cf_parallelize(f, b, 0, CF_PT_TIDX);
  return f;
}

/* Runs T0 + c on the host backend with every input element x; returns element 0. */
static float run_host(double c, float x) {
  cf_fusion *f = add_constant(c);
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  DLManagedTensor *in = cf_tensor_host(CF_FLOAT, 1, (int64_t[]){4}), *out = NULL;
  for (int i = 0; i < 4; i++) ((float *)in->dl_tensor.data)[i] = x;
  const DLTensor *ins[1] = {&in->dl_tensor};
  cr_assert_eq(cf_executor_run(e, 1, ins, 1, &out), CF_OK, "%s", cf_executor_error(e));
  float r = ((float *)out->dl_tensor.data)[0];
  cf_tensor_free(in);
  cf_tensor_free(out);
  cf_executor_destroy(e);
  cf_fusion_destroy(f);
  return r;
}

Test(constants, nan_and_infinities_run_on_the_host) {
  cr_expect(isnan(run_host(NAN, 1.0f)));
  float p = run_host(INFINITY, 1.0f), n = run_host(-INFINITY, 1.0f);
  cr_expect(isinf(p) && p > 0, "got %g", (double)p);
  cr_expect(isinf(n) && n < 0, "got %g", (double)n);
}

Test(constants, negative_zero_keeps_its_sign) {
  float z = run_host(-0.0, -0.0f);
  cr_expect(z == 0 && signbit(z), "-0.0 + -0.0 gave %g with sign %d", (double)z, signbit(z) != 0);
  float p = run_host(0.0, -0.0f);
  cr_expect(p == 0 && !signbit(p), "-0.0 + 0.0 must be +0.0");
}

Test(constants, cuda_source_spells_them_by_their_bits_and_compiles) {
  const double values[3] = {NAN, -INFINITY, -0.0};
  const char *spelled[3] = {"cf_f64_from_bits(0x7ff8000000000000ULL)", "cf_f64_from_bits(0xfff0000000000000ULL)",
                            "cf_f64_from_bits(0x8000000000000000ULL)"};
  const char *reason = NULL;
  if (!exec_nvrtc_available(&reason)) cr_skip_test("NVRTC unavailable: %s", reason);
  for (int i = 0; i < 3; i++) {
    cf_fusion *f = add_constant(values[i]);
    cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_CUDA, .arch = "sm_90a"});
    cf_status s = cf_executor_compile(e, f);
    cr_expect_eq(s, CF_OK, "%s", cf_executor_error(e));
    cr_expect(strstr(cf_executor_source(e), spelled[i]) != NULL, "%s not in the source", spelled[i]);
    cf_executor_destroy(e);
    cf_fusion_destroy(f);
  }
}
