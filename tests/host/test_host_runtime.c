/* tests/host/test_host_runtime.c: the host backend's runtime and executor, on handwritten
 * kernels. Each kernel is C source behind the embedded runtime (host_runtime.h,
 * host_tmem.h, host_race.h, host_math.h), compiled and launched through executor/host.c
 * exactly as generated kernels are: copies over a 2-D grid, shared-memory staging with
 * barriers, warp shuffles, a tensor-memory round trip, and one deliberately wrong kernel
 * per emulated hardware rule, each asserting the run-time check's exact message. Also the
 * compile-error path, the disk cache, launch speed and the backend choice. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "executor/exec_host.h"
#include "ir/dtype.h"
#include "tests/host/host_test_util.h"

/* ---- the execution model ------------------------------------------------------------------ */

static const char *copy2d_kernel =
    "void copy2d(T2f in, T2f out);\n"
    "void copy2d(T2f in, T2f out) {\n"
    "  int64_t r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (r < in.logical_size[0] && c < in.logical_size[1])\n"
    "    out.data[r * out.alloc_stride[0] + c * out.alloc_stride[1]] =\n"
    "        in.data[r * in.alloc_stride[0] + c * in.alloc_stride[1]];\n"
    "}\n";

Test(host_runtime, copy_over_a_2d_grid) {
  enum { H = 37, W = 50, LD = 53 };
  ExecHostModule *m = compile_ok(copy2d_kernel, "copy2d");
  float *in = malloc(sizeof(float) * H * LD), *out = calloc(H * W, sizeof(float));
  for (int i = 0; i < H * LD; i++) in[i] = (float)i * 0.5f;
  ExecHostParam p = {true, CF_FLOAT, 2, 2, false};
  unsigned char a0[64], a1[64];
  int64_t sizes[2] = {H, W}, sin[2] = {LD, 1}, sout[2] = {1, H}; /* out column-major */
  cr_assert_eq(exec_host_pack_tensor(&p, in, sizes, sin, a0, NULL), CF_OK);
  cr_assert_eq(exec_host_pack_tensor(&p, out, sizes, sout, a1, NULL), CF_OK);
  ExecHostParam params[2] = {p, p};
  void *values[2] = {a0, a1};
  int64_t grid[3] = {(W + 15) / 16, (H + 7) / 8, 1}, block[3] = {16, 8, 1};
  ExecHostError err = {{0}, NULL, NULL};
  cr_assert_eq(exec_host_launch(m, grid, block, 0, 2, params, values, &err), CF_OK, "%s", err.msg);
  for (int r = 0; r < H; r++)
    for (int c = 0; c < W; c++)
      cr_assert_eq(out[c * H + r], in[r * LD + c], "element (%d, %d)", r, c);
  free(in);
  free(out);
  exec_host_module_free(m);
}

static const char *reverse_kernel =
    "void reverse(T1f in, T1f out);\n"
    "void reverse(T1f in, T1f out) {\n"
    "  float *s = (float *)cfh_smem();\n"
    "  unsigned t = threadIdx.x, n = blockDim.x;\n"
    "  int64_t base = (int64_t)blockIdx.x * n;\n"
    "  for (int round = 0; round < 4; round++) {\n"
    "    s[t] = in.data[base + t] + (float)round;\n"
    "    __syncthreads();\n"
    "    out.data[base + t] = s[n - 1 - t];\n"
    "    __syncthreads();\n"
    "  }\n"
    "}\n";

/* 64 blocks of 128 threads, 8 barriers per thread. Returns the launch's status (and the
 * seconds it took); *wrong counts wrong elements. No Criterion asserts: threads use it. */
typedef struct ReverseRun {
  const ExecHostModule *m;
  cf_status status;
  int wrong;
  double seconds;
  char msg[2048];
} ReverseRun;

static void *reverse_64x128(void *arg) {
  enum { B = 64, T = 128 };
  ReverseRun *r = arg;
  float *in = malloc(sizeof(float) * B * T), *out = calloc(B * T, sizeof(float));
  for (int i = 0; i < B * T; i++) in[i] = (float)i;
  int64_t n = B * T, one = 1, g[3] = {B, 1, 1}, b[3] = {T, 1, 1};
  ExecHostParam p[2] = {{true, CF_FLOAT, 1, 1, false}, {true, CF_FLOAT, 1, 1, false}};
  unsigned char a0[64], a1[64];
  exec_host_pack_tensor(&p[0], in, &n, &one, a0, NULL);
  exec_host_pack_tensor(&p[1], out, &n, &one, a1, NULL);
  ExecHostError err = {{0}, NULL, NULL};
  double t0 = now_s();
  r->status = exec_host_launch(r->m, g, b, T * sizeof(float), 2, p, (void *[]){a0, a1}, &err);
  r->seconds = now_s() - t0;
  snprintf(r->msg, sizeof r->msg, "%s", err.msg);
  r->wrong = 0;
  for (int i = 0; i < B * T; i++) r->wrong += out[i] != in[i / T * T + T - 1 - i % T] + 3.0f;
  free(in);
  free(out);
  return NULL;
}

static double reverse_checked(const ExecHostModule *m) {
  ReverseRun r = {.m = m};
  reverse_64x128(&r);
  cr_assert_eq(r.status, CF_OK, "%s", r.msg);
  cr_assert_eq(r.wrong, 0, "%d wrong elements", r.wrong);
  return r.seconds;
}

Test(host_runtime, shared_memory_reversal_with_syncthreads) {
  ExecHostModule *m = compile_ok(reverse_kernel, "reverse");
  reverse_checked(m);
  exec_host_module_free(m);
}

Test(host_runtime, launch_of_64_blocks_of_128_threads_with_barriers_is_fast) {
  ExecHostModule *m = compile_ok(reverse_kernel, "reverse");
  double best = 1e9;
  for (int i = 0; i < 3; i++) {
    double t = reverse_checked(m);
    best = t < best ? t : best;
  }
  cr_log_info("64 blocks x 128 threads x 8 barriers: %.2f ms", best * 1e3);
  cr_assert_lt(best, 1.0, "took %.3f s", best);
  exec_host_module_free(m);
}

Test(host_runtime, ucontext_fibers_give_the_same_results) {
  setenv("CFUSER_HOST_CFLAGS", "-DCFH_USE_UCONTEXT", 1);
  ExecHostModule *m = compile_ok(reverse_kernel, "reverse");
  double t = reverse_checked(m);
  cr_log_info("ucontext fibers: 64 blocks x 128 threads x 8 barriers: %.2f ms", t * 1e3);
  exec_host_module_free(m);
}

Test(host_runtime, concurrent_launches_from_two_threads) {
  ExecHostModule *m = compile_ok(reverse_kernel, "reverse");
  pthread_t th[2];
  ReverseRun r[2] = {{.m = m}, {.m = m}};
  for (int i = 0; i < 2; i++) cr_assert_eq(pthread_create(&th[i], NULL, reverse_64x128, &r[i]), 0);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 2; i++) {
    cr_assert_eq(r[i].status, CF_OK, "thread %d: %s", i, r[i].msg);
    cr_assert_eq(r[i].wrong, 0, "thread %d: %d wrong elements", i, r[i].wrong);
  }
  exec_host_module_free(m);
}

Test(host_runtime, warp_shuffles_and_a_3d_block) {
  ExecHostModule *m = compile_ok(
      "void shfl(T1f out);\n"
      "void shfl(T1f out) {\n"
      "  unsigned tid = threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y;\n"
      "  float v = (float)tid;\n"
      "  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);\n"
      "  int down = __shfl_down_sync(0xffffffffu, (int)tid, 1);\n"
      "  out.data[tid] = v + 1000.0f * (float)(down - (int)tid);\n"
      "}\n", "shfl");
  float out[128];
  Arg a;
  arg_1d(&a, out, 128);
  int64_t g[3] = {1, 1, 1}, b[3] = {8, 4, 4};
  ExecHostError err = {{0}, NULL, NULL};
  cr_assert_eq(exec_host_launch(m, g, b, 0, 1, &a.p, (void *[]){a.buf}, &err), CF_OK, "%s", err.msg);
  for (int t = 0; t < 128; t++) {
    int w = t / 32, sum = 32 * 31 / 2 + 32 * 32 * w; /* the warp's ids summed */
    cr_assert_eq(out[t], (float)sum + (t % 32 == 31 ? 0.0f : 1000.0f), "thread %d", t);
  }
  exec_host_module_free(m);
}

Test(host_runtime, kernel_run_time_check_names_the_thread) {
  ExecHostModule *m = compile_ok(
      "void chk(T1f out);\n"
      "void chk(T1f out) {\n"
      "  cfh_check(!(blockIdx.x == 1 && threadIdx.x == 3), \"extent %d is too large\", 429);\n"
      "  out.data[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;\n"
      "}\n", "chk");
  float out[64];
  Arg a;
  arg_1d(&a, out, 64);
  ExecHostError err = {{0}, NULL, NULL};
  cr_assert_eq(run1(m, 2, 32, 0, 1, &a, &err), CF_ERR_RUNTIME);
  cr_assert_str_eq(err.msg, "block (1,0,0) thread (3,0,0): extent 429 is too large");
  exec_host_module_free(m);
}

Test(host_runtime, invalid_launch_dimensions) {
  ExecHostModule *m = compile_ok(reverse_kernel, "reverse");
  float buf[4];
  Arg a[2];
  arg_1d(&a[0], buf, 4);
  arg_1d(&a[1], buf, 4);
  ExecHostError err = {{0}, NULL, NULL};
  cr_assert_eq(run1(m, 1, 2048, 0, 2, a, &err), CF_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(err.msg, "invalid launch: blockDim (2048,1,1) has 2048 threads: each "
                   "dimension must be at least 1, z at most 64, and the block at most 1024 threads");
  cr_assert_eq(run1(m, 1, 32, 300000, 2, a, &err), CF_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(err.msg, "invalid launch: 300000 bytes of dynamic shared memory requested, "
                   "but at most 232448 (227 KiB) are available");
  exec_host_module_free(m);
}

/* ---- dtypes ---------------------------------------------------------------------------------- */

Test(host_runtime, half_and_bfloat16_conversions_match_the_reference) {
  ExecHostModule *m = compile_ok(
      "void conv(T1f in, T1u out);\n"
      "void conv(T1f in, T1u out) {\n"
      "  for (int64_t i = threadIdx.x; i < in.logical_size[0]; i += blockDim.x) {\n"
      "    float x = in.data[i];\n"
      "    __half h = __float2half(x), hd = __double2half((double)x * 1.0000001);\n"
      "    __nv_bfloat16 b = __float2bfloat16(x);\n"
      "    out.data[4 * i] = h.x | (uint32_t)b.x << 16;\n"
      "    out.data[4 * i + 1] = hd.x;\n"
      "    float back = __half2float(h), bback = __bfloat162float(b);\n"
      "    memcpy(&out.data[4 * i + 2], &back, 4);\n"
      "    memcpy(&out.data[4 * i + 3], &bback, 4);\n"
      "  }\n"
      "}\n", "conv");
  enum { N = 20000 };
  float *in = malloc(sizeof(float) * N);
  uint32_t *out = malloc(sizeof(uint32_t) * 4 * N);
  for (int i = 0; i < N; i++) { /* every magnitude, ties and subnormals included */
    uint32_t bits = (uint32_t)i * 214013u + 2531011u;
    if (i % 4 == 0) bits = (bits & 0xFFFFE000u) | 0x1000u; /* an exact half tie */
    memcpy(&in[i], &bits, 4);
    if (isnan(in[i])) in[i] = 1.0f;
  }
  Arg a[2];
  arg_1d(&a[0], in, N);
  arg_1d(&a[1], out, 4 * N);
  ExecHostError err = {{0}, NULL, NULL};
  cr_assert_eq(run1(m, 1, 64, 0, 2, a, &err), CF_OK, "%s", err.msg);
  for (int i = 0; i < N; i++) {
    uint16_t h = (uint16_t)(out[4 * i] & 0xFFFF), b = (uint16_t)(out[4 * i] >> 16);
    float back, bback;
    memcpy(&back, &out[4 * i + 2], 4);
    memcpy(&bback, &out[4 * i + 3], 4);
    cr_assert_eq(h, ir_half_from_double(in[i]), "half of %a", (double)in[i]);
    cr_assert_eq(b, ir_bf16_from_double(in[i]), "bfloat16 of %a", (double)in[i]);
    cr_assert_eq(out[4 * i + 1], ir_half_from_double((double)in[i] * 1.0000001), "%a", (double)in[i]);
    cr_assert_eq((double)back, ir_half_to_double(h), "half %#x back", h);
    cr_assert_eq((double)bback, ir_bf16_to_double(b), "bfloat16 %#x back", b);
  }
  free(in);
  free(out);
  exec_host_module_free(m);
}

Test(host_runtime, math_helpers) {
  ExecHostModule *m = compile_ok(
      "void mathk(T1f in, T1f out);\n"
      "void mathk(T1f in, T1f out) {\n"
      "  float x = in.data[threadIdx.x];\n"
      "  float *o = out.data + 8 * threadIdx.x;\n"
      "  o[0] = rsqrt(fabsf(x) + 1.0f); o[1] = reciprocal(x + 8.0f); o[2] = relu(x);\n"
      "  o[3] = sigmoid(x); o[4] = gelu(x); o[5] = (float)ceilDiv((int64_t)threadIdx.x + 1, 3);\n"
      "  o[6] = max(x, 0.25f) + (float)min(3, (int)threadIdx.x); o[7] = (float)relu((int)x);\n"
      "}\n", "mathk");
  float in[32], out[256];
  for (int i = 0; i < 32; i++) in[i] = (float)(i - 16) * 0.37f;
  Arg a[2];
  arg_1d(&a[0], in, 32);
  arg_1d(&a[1], out, 256);
  ExecHostError err = {{0}, NULL, NULL};
  cr_assert_eq(run1(m, 1, 32, 0, 2, a, &err), CF_OK, "%s", err.msg);
  for (int i = 0; i < 32; i++) {
    double x = in[i], want[8] = {1 / sqrt(fabs(x) + 1), 1 / (x + 8), x > 0 ? x : 0,
                                 1 / (1 + exp(-x)), 0.5 * x * (1 + erf(x / sqrt(2.0))),
                                 (i + 3) / 3, (x > 0.25 ? x : 0.25) + (i < 3 ? i : 3),
                                 (int)x > 0 ? (int)x : 0};
    for (int k = 0; k < 8; k++)
      cr_assert_float_eq(out[8 * i + k], want[k], 1e-6, "helper %d at x = %g", k, x);
  }
  exec_host_module_free(m);
}
