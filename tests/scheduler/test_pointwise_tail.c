/* The pointwise scheduler's flat vectors (issue 22): contiguous tensors are one flat axis
 * vectorized by 16 bytes over the widest element whatever their extents, the last, partial
 * vector done lane by lane under each lane's bound (lower/predicate.c's tail); a broadcast
 * operand (a bias) is read element by element at its index. Exact parameters and kernel
 * text for odd shapes (a cast of [7, 13], [8191, 8191]; bias + gelu of [5, 1001]), and odd
 * sizes of every width class against the evaluator (NVRTC for sm_90a, the host backend,
 * the GPU when there is one). */
#include <criterion/criterion.h>
#include <string.h>

#include "kernels/kernel_check.h"
#include "scheduler/heuristic.h"

static cf_fusion *f;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(pointwise_tail, .init = setup, .fini = teardown);

static const SchedCall no_call = {0, NULL, &sched_device_h100};

/* Plans and applies the pointwise row's heuristic; expects its parameters. */
static void schedule(const char *want_params) {
  char why[SCHED_WHY_MAX] = "", params[SCHED_PARAMS_MAX] = "";
  cr_assert(sched_pointwise_heuristic.accepts(f, &no_call, why), "%s", why);
  cr_assert_eq(sched_pointwise_heuristic.schedule(f, &no_call, params), CF_OK, "%s", cf_fusion_error(f));
  cr_expect_str_eq(params, want_params, "%s", kc_label);
}

static void cast_of(cf_dtype from, cf_dtype to, int rank, const int64_t *sizes) {
  cf_tv *x = sizes ? cf_tensor_concrete(f, from, rank, sizes) : cf_tensor_symbolic(f, from, rank);
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_cast(f, x, to));
}

/* out = gelu(x + broadcast(bias)) for x [rows, cols] and bias [cols] of dtype dt. */
static void bias_gelu(cf_dtype dt, int64_t rows, int64_t cols) {
  cf_tv *x = cf_tensor_concrete(f, dt, 2, (int64_t[]){rows, cols}), *b = cf_tensor_concrete(f, dt, 1, &cols);
  cf_fusion_add_input(f, x);
  cf_fusion_add_input(f, b);
  cf_fusion_add_output(f, cf_gelu(f, cf_add(f, x, cf_broadcast(f, b, 2, (bool[]){true, false}))));
}

/* [7, 13] half -> float: 91 elements, 22 whole vectors of 4 and one of 3. The tile inside
 * the tensor (threadIdx.x < 22) moves whole vectors with no predicate; the other one
 * loads, computes and stores lane by lane, each lane under its bound. */
Test(pointwise_tail, cast_of_7_by_13_kernel) {
  cast_of(CF_HALF, CF_FLOAT, 2, (int64_t[]){7, 13});
  schedule("vector=4 tail threads=128");
  char *k = tu_capture_fusion(cf_fusion_print_kernel, f);
  cr_expect_str_eq(
      k,
      "extern \"C\" __global__ void __launch_bounds__(128) cfuser_kernel(Tensor<__half, 2, 2> T0, Tensor<float, 2, 2> T1) {\n"
      "  alignas(16) __half T2[4];\n"
      "  alignas(16) float T3[4];\n"
      "  if ((threadIdx.x < 22)) {\n"
      "    {\n"
      "      const cf_index_t i0 = 0;\n"
      "      *reinterpret_cast<Array<__half, 4>*>(&T2[0]) = *reinterpret_cast<const Array<__half, 4>*>(&T0.data[(threadIdx.x * 4)]);\n"
      "      for (cf_index_t i1 = 0; i1 < 4; ++i1) {\n"
      "        T3[i1] = (float)__half2float(T2[i1]);\n"
      "      }\n"
      "      *reinterpret_cast<Array<float, 4>*>(&T1.data[(threadIdx.x * 4)]) = *reinterpret_cast<const Array<float, 4>*>(&T3[0]);\n"
      "    }\n"
      "  } else {\n"
      "    {\n"
      "      const cf_index_t i0 = 0;\n"
      "      if ((threadIdx.x < 22)) {\n"
      "        *reinterpret_cast<Array<__half, 4>*>(&T2[0]) = *reinterpret_cast<const Array<__half, 4>*>(&T0.data[(threadIdx.x * 4)]);\n"
      "      } else {\n"
      "        for (cf_index_t i2 = 0; i2 < 4; ++i2) {\n"
      "          if ((((threadIdx.x * 4) + i2) < 91)) {\n"
      "            T2[i2] = T0.data[((threadIdx.x * 4) + i2)];\n"
      "          }\n"
      "        }\n"
      "      }\n"
      "      for (cf_index_t i1 = 0; i1 < 4; ++i1) {\n"
      "        if ((((threadIdx.x * 4) + i1) < 91)) {\n"
      "          T3[i1] = (float)__half2float(T2[i1]);\n"
      "        }\n"
      "      }\n"
      "      if ((threadIdx.x < 22)) {\n"
      "        *reinterpret_cast<Array<float, 4>*>(&T1.data[(threadIdx.x * 4)]) = *reinterpret_cast<const Array<float, 4>*>(&T3[0]);\n"
      "      } else {\n"
      "        for (cf_index_t i3 = 0; i3 < 4; ++i3) {\n"
      "          if ((((threadIdx.x * 4) + i3) < 91)) {\n"
      "            T1.data[((threadIdx.x * 4) + i3)] = T3[i3];\n"
      "          }\n"
      "        }\n"
      "      }\n"
      "    }\n"
      "  }\n"
      "}\n");
  free(k);
  free(kc_check(f, 1, (KcInput[]){{CF_HALF, 2, {7, 13}, NULL}}, 0));
}

/* The benchmark's [8191, 8191] half -> float (0.65x torch.compile when it ran scalar): one
 * flat axis of 67092481 elements in vectors of 4, the last vector of 1 done lane by lane.
 * Too large to run on the host: the kernel text and an NVRTC compile. */
Test(pointwise_tail, cast_of_8191_squared) {
  cast_of(CF_HALF, CF_FLOAT, 2, (int64_t[]){8191, 8191});
  schedule("vector=4 tail threads=128");
  char *k = tu_capture_fusion(cf_fusion_print_kernel, f);
  /* whole vectors where 4 x + 3 < 67092481, x = blockIdx.x * 128 + threadIdx.x: blocks below 131040 */
  cr_expect(strstr(k, "if ((blockIdx.x < 131040)) {") != NULL,
            "the whole tiles:\n%s", k);
  cr_expect(strstr(k, "*reinterpret_cast<Array<__half, 4>*>(&T2[0]) = *reinterpret_cast<const Array<__half, 4>*>"
                      "(&T0.data[(((blockIdx.x * 128) + threadIdx.x) * 4)]);") != NULL, "the vector load:\n%s", k);
  cr_expect(strstr(k, "T1.data[((((blockIdx.x * 128) + threadIdx.x) * 4) + i3)] = T3[i3];") != NULL,
            "the tail's stores:\n%s", k);
  free(k);
  free(kc_compile_sm90(f));
}

/* bias + gelu in bfloat16 over [5, 1001]: rows of 1001 take no vector, so the flat tensor
 * (5005 elements) takes vectors of 8 and a tail; x and the output keep their vectors, the
 * bias is read at its index, element by element. */
Test(pointwise_tail, bias_gelu_of_5_by_1001_kernel) {
  bias_gelu(CF_BFLOAT16, 5, 1001);
  schedule("break=none (vectors of 1 along rows, 8 along the flat tensor) vector=8 tail threads=128");
  char *k = tu_capture_fusion(cf_fusion_print_kernel, f);
  cr_expect(strstr(k, "*reinterpret_cast<Array<__nv_bfloat16, 8>*>(&T5[0]) = *reinterpret_cast<const "
                      "Array<__nv_bfloat16, 8>*>(&T0.data[(((blockIdx.x * 128) + threadIdx.x) * 8)]);") != NULL,
            "x's vector load:\n%s", k);
  /* (1024 blockIdx.x + 8 threadIdx.x + i1) % 1001, the block's 1024 reduced modulo 1001 */
  cr_expect(strstr(k, "T2[0] = T1.data[((((blockIdx.x * 23) + (threadIdx.x * 8)) + i1) % 1001)];") != NULL,
            "the bias at its index:\n%s", k);
  cr_expect(strstr(k, "T5[i2] = T0.data[((((blockIdx.x * 128) + threadIdx.x) * 8) + i2)];") != NULL,
            "x's tail:\n%s", k);
  cr_expect(strstr(k, "if ((((blockIdx.x * 128) + threadIdx.x) < 625)) {") != NULL, "625 whole vectors:\n%s", k);
  cr_expect(strstr(k, "*reinterpret_cast<Array<__nv_bfloat16, 8>*>(&T4.data[") != NULL, "the vector store:\n%s", k);
  free(k);
  free(kc_check(f, 2, (KcInput[]){{CF_BFLOAT16, 2, {5, 1001}, NULL}, {CF_BFLOAT16, 1, {1001}, NULL}}, 1e-2));
}

Test(pointwise_tail, bias_gelu_of_3_by_50257) {
  bias_gelu(CF_BFLOAT16, 3, 50257);
  schedule("break=none (vectors of 1 along rows, 8 along the flat tensor) vector=8 tail threads=128");
  free(kc_check(f, 2, (KcInput[]){{CF_BFLOAT16, 2, {3, 50257}, NULL}, {CF_BFLOAT16, 1, {50257}, NULL}}, 1e-2));
}

/* nvFuser's test_arithmetic_ops on symbolic sizes ([3, 4, 5] when it runs): three outputs
 * of one flat axis with a tail. Its tail guards once carried both x*4 + l < E and the
 * split's x < ceilDiv(E, 4), which the first implies, and NVRTC 13.0 crashed compiling
 * the kernel (a segmentation fault inside nvrtcCompileProgram, about four times in five):
 * the guards now keep only the terms no other implies (lower/kx_implies.c), and the
 * kernel compiles every time. */
Test(pointwise_tail, symbolic_three_outputs_keep_no_implied_bound) {
  cf_tv *x = cf_tensor_symbolic(f, CF_FLOAT, 3);
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_neg(f, x));
  cf_fusion_add_output(f, cf_abs(f, x));
  cf_fusion_add_output(f, cf_add_scalar(f, x, 1.0));
  schedule("vector=4 tail threads=128");
  char *k = tu_capture_fusion(cf_fusion_print_kernel, f);
  cr_expect(strstr(k, "ceilDiv") == NULL, "a split's bound another term implies:\n%s", k);
  cr_expect(strstr(k, "% T0.logical_size[1]) < T0.logical_size[1]") == NULL, "a modulo's bound:\n%s", k);
  cr_expect(strstr(k, "if ((((((blockIdx.x * 128) + threadIdx.x) * 4) + i5) < ((T0.logical_size[0] * "
                      "T0.logical_size[1]) * T0.logical_size[2]))) {") != NULL,
            "a lane's guard, the flat bound alone:\n%s", k);
  free(k);
  for (int i = 0; i < 4; i++) free(kc_compile_sm90(f));
  free(kc_check(f, 1, (KcInput[]){{CF_FLOAT, 3, {3, 4, 5}, NULL}}, 0));
}

/* Rows whose vector along them is as wide as the flat one keep the break point. */
Test(pointwise_tail, even_rows_keep_the_break_point) {
  bias_gelu(CF_BFLOAT16, 5, 1024);
  schedule("break=1 vector=8 threads=128");
  free(kc_check(f, 2, (KcInput[]){{CF_BFLOAT16, 2, {5, 1024}, NULL}, {CF_BFLOAT16, 1, {1024}, NULL}}, 1e-2));
}

/* ---- odd sizes of every width class against the evaluator ---------------------------------- */

static const int64_t odd_shapes[][3] = {{1, 0, 0},  {3, 0, 0},    {7, 0, 0},   {8191, 0, 0}, {1, 1, 0}, {1, 3, 0},
                                        {3, 1, 0},  {7, 13, 0},   {13, 7, 0},  {31, 127, 0}, {4, 6, 0}, {2, 3, 5},
                                        {1, 1, 1},  {5, 1001, 0}, {3, 2, 16}};
enum { NODD = sizeof odd_shapes / sizeof odd_shapes[0] };

static int rank_of(const int64_t *s) { return s[1] == 0 ? 1 : s[2] == 0 ? 2 : 3; }

static int64_t numel(const int64_t *s) {
  int64_t n = 1;
  for (int a = 0; a < rank_of(s); a++) n *= s[a];
  return n;
}

/* out = x + y of dtype dt (or cast(x) when `to` differs) over shape s: the parameters say
 * vector 16 / widest element (1 for 16-byte elements, and for one element: its axes of
 * extent 1 are all broadcast, nothing to vectorize), "tail" where it leaves a partial
 * vector; the results are the evaluator's. */
static void check_flat(cf_dtype dt, cf_dtype to, const int64_t *s) {
  int r = rank_of(s);
  cf_tv *x = cf_tensor_concrete(f, dt, r, s);
  cf_fusion_add_input(f, x);
  KcInput in[2] = {{dt, r, {s[0], s[1], s[2]}, NULL}, {dt, r, {s[0], s[1], s[2]}, NULL}};
  int nin = 1;
  if (to != dt) {
    cf_fusion_add_output(f, cf_cast(f, x, to));
  } else {
    cf_tv *y = cf_tensor_concrete(f, dt, r, s);
    cf_fusion_add_input(f, y);
    cf_fusion_add_output(f, cf_add(f, x, y));
    nin = 2;
  }
  size_t widest = cf_dtype_size(dt) > cf_dtype_size(to) ? cf_dtype_size(dt) : cf_dtype_size(to);
  int64_t v = numel(s) == 1 ? 1 : (int64_t)(16 / widest);
  char want[64];
  snprintf(want, sizeof want, "vector=%lld%s threads=128", (long long)v, v > 1 && numel(s) % v ? " tail" : "");
  schedule(want);
  free(kc_check(f, nin, in, 0));
}

static void check_all_shapes(cf_dtype dt, cf_dtype to) {
  for (int i = 0; i < NODD; i++) {
    cf_fusion_destroy(f);
    f = cf_fusion_create();
    snprintf(kc_label, sizeof kc_label, "%s -> %s [%lld, %lld, %lld]: ", cf_dtype_name(dt), cf_dtype_name(to),
             (long long)odd_shapes[i][0], (long long)odd_shapes[i][1], (long long)odd_shapes[i][2]);
    check_flat(dt, to, odd_shapes[i]);
  }
  kc_label[0] = '\0';
}

Test(pointwise_tail, half_to_float_of_odd_sizes) { check_all_shapes(CF_HALF, CF_FLOAT); }
Test(pointwise_tail, float_to_bfloat16_of_odd_sizes) { check_all_shapes(CF_FLOAT, CF_BFLOAT16); }
Test(pointwise_tail, bfloat16_add_of_odd_sizes) { check_all_shapes(CF_BFLOAT16, CF_BFLOAT16); }
Test(pointwise_tail, double_add_of_odd_sizes) { check_all_shapes(CF_DOUBLE, CF_DOUBLE); }
Test(pointwise_tail, int64_add_of_odd_sizes) { check_all_shapes(CF_INT64, CF_INT64); }
Test(pointwise_tail, complex_float_add_of_odd_sizes) { check_all_shapes(CF_COMPLEX_FLOAT, CF_COMPLEX_FLOAT); }
Test(pointwise_tail, complex_double_add_of_odd_sizes) { check_all_shapes(CF_COMPLEX_DOUBLE, CF_COMPLEX_DOUBLE); }

/* Symbolic sizes: one schedule, the element count known only at run time, so every last
 * vector may be partial; run at sizes of every remainder. */
Test(pointwise_tail, symbolic_sizes) {
  cast_of(CF_FLOAT, CF_HALF, 2, NULL);
  schedule("vector=4 tail threads=128");
  const int64_t shapes[][2] = {{1, 1}, {1, 3}, {3, 1}, {7, 13}, {4, 4}, {2, 5}, {129, 7}};
  for (int i = 0; i < 7; i++) free(kc_check(f, 1, (KcInput[]){F32(shapes[i][0], shapes[i][1])}, 0));
}
