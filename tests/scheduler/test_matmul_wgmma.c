/* The matmul row on Hopper (scheduler/matmul_mma.c with a device of compute capability
 * 9.0): wgmma.mma_async m64n128k16 from shared tiles in the canonical layouts of wgmma's
 * matrix descriptors (lower/mma_wgmma.c), emulated by the host backend from the
 * descriptors alone (codegen/runtime/host_wgmma.h). bfloat16 and half matmuls and linears
 * of odd and exact shapes, batched, with a bias + gelu epilogue, each equal to the
 * evaluator on the host backend (and on the GPU when there is one), compiled by NVRTC for
 * sm_90a; the CUDA text holds the instruction, its descriptors' constant fields, the
 * group's fence, commit and wait, and the proxy fence before the barrier. */
#include <criterion/criterion.h>
#include <string.h>

#include "executor/fusion_cache.h"
#include "kernels/kernel_check.h"
#include "scheduler/registry.h"

static cf_fusion *f;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(matmul_wgmma, .init = setup, .fini = teardown);

static void fresh(void) {
  cf_fusion_destroy(f);
  f = cf_fusion_create();
}

static const char *params(const char *fa, const char *fb) {
  static char buf[256];
  snprintf(buf, sizeof buf, "tile=128x128x64 warpgroups=2 mma=m64n128k16 smem=operands stages=4 fill=%s,%s", fa, fb);
  return buf;
}

/* The row plans and applies the wgmma schedule for a Hopper device with these fills. */
static void apply_row(const char *fa, const char *fb) {
  const SchedRow *r = sched_row_named("matmul");
  SchedCall call = {0, NULL, &sched_device_h100};
  char why[SCHED_WHY_MAX] = "";
  SchedParams p, used;
  cr_assert(r->can_schedule(f, &call, why), "%s", why);
  cr_assert(r->plan(f, &call, &p, why), "%s", why);
  cr_expect_str_eq(p.text, params(fa, fb));
  cr_assert_eq(r->apply(&f, &call, &p, &used), CF_OK, "%s", cf_fusion_error(f));
  cr_expect(sched_params_equal(&p, &used));
}

static char *row_check(int n, const KcInput *in, double tol, const char *fa, const char *fb) {
  apply_row(fa, fb);
  if (getenv("CFUSER_MATMUL_PRINT")) cf_fusion_print_kernel(f, stdout);
  return kc_check(f, n, in, tol);
}

/* matmul [m, k] @ [k, n] in dt: A K-major, B MN-major (the transpose bit). */
static char *plain(cf_dtype dt, int64_t m, int64_t k, int64_t n) {
  fresh();
  char fa[32], fb[32];
  snprintf(fa, sizeof fa, k % 8 ? "scalar(K=%lld)" : "cp.async16", (long long)k);
  snprintf(fb, sizeof fb, n % 8 ? "scalar(N=%lld)" : "cp.async16", (long long)n);
  KcInput in[2] = {{dt, 2, {m, k}, NULL}, {dt, 2, {k, n}, NULL}};
  cf_tv *a = tu_input(f, dt, 2, in[0].sizes), *b = tu_input(f, dt, 2, in[1].sizes);
  cf_fusion_add_output(f, cf_matmul(f, a, b));
  return row_check(2, in, 1e-2, fa, fb);
}

Test(matmul_wgmma, bfloat16_exact_tile) { free(plain(CF_BFLOAT16, 128, 64, 128)); }

/* Odd M, N, K: the tiles are zero-filled past the edges (cp.async's source size 0, or the
 * scalar fill's zeros), which wgmma reads whole. */
Test(matmul_wgmma, odd_shapes_equal_the_evaluator) {
  free(plain(CF_BFLOAT16, 130, 70, 20));
  free(plain(CF_HALF, 33, 40, 17));
  free(plain(CF_BFLOAT16, 7, 127, 136));
  free(plain(CF_HALF, 65, 200, 129));
}

/* linear: w [N, K] is K-contiguous, so B's tile is K-major (no transpose bit), as A's. */
Test(matmul_wgmma, linear_bias_gelu_epilogue) {
  KcInput in[3] = {{CF_BFLOAT16, 2, {70, 72}, NULL}, {CF_BFLOAT16, 2, {150, 72}, NULL}, {CF_BFLOAT16, 1, {150}, NULL}};
  cf_tv *x = tu_input(f, CF_BFLOAT16, 2, in[0].sizes), *w = tu_input(f, CF_BFLOAT16, 2, in[1].sizes);
  cf_tv *bias = tu_input(f, CF_BFLOAT16, 1, in[2].sizes);
  cf_fusion_add_output(f, cf_gelu(f, cf_linear(f, x, w, bias)));
  char *src = row_check(3, in, 2e-2, "cp.async16", "cp.async16");
  cr_expect(strstr(src, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2,"));
  cr_expect(strstr(src, "p, 1, 1, 0, 0; }"), "B of a linear is K-major: no transpose bit");
  free(src);
}

/* A batch axis on blockIdx.z. */
Test(matmul_wgmma, batched) {
  KcInput in[2] = {{CF_HALF, 3, {3, 19, 33}, NULL}, {CF_HALF, 3, {3, 33, 21}, NULL}};
  cf_tv *a = tu_input(f, CF_HALF, 3, in[0].sizes), *b = tu_input(f, CF_HALF, 3, in[1].sizes);
  cf_fusion_add_output(f, cf_matmul(f, a, b));
  free(row_check(2, in, 1e-2, "scalar(K=33)", "scalar(N=21)"));
}
