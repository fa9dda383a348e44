/* Define and run with symbolic sizes over odd shapes (issue 22), on the host backend against
 * the evaluator: the pointwise plan vectorizes contiguous tensors as one flat axis with a
 * tail ("vector=4 tail"), a bias broadcast over odd rows is read at its index while x and
 * the output keep their vectors, calls of other row counts share the kernel (its free row
 * count symbolic, so each last vector may be partial), and a call whose input is a view at
 * a misaligned offset runs scalar, its plan saying why. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "executor/exec_cuda.h"
#include "test_util.h"

TU_CACHE_SUITE(vector_tail);

static const cf_executor_options host = {.backend = CF_BACKEND_HOST};

/* Runs the cache on the inputs, compares every output with the evaluator's (exactly when
 * tol is 0) and expects the one segment's parameters. */
static void check_call(int nin, const DLTensor *const *ins, double tol, const char *want_params) {
  if (!c) c = cf_fusion_cache_create(f, &host);
  DLManagedTensor *got[1] = {0}, *want[1] = {0};
  cr_assert_eq(cf_fusion_execute(c, nin, ins, 1, got), CF_OK, "%s", cf_fusion_cache_error(c));
  cr_assert_eq(cf_fusion_evaluate(f, nin, ins, want), CF_OK, "%s", cf_fusion_error(f));
  char msg[256] = "";
  bool same = tol == 0 ? cf_tensor_equal(&got[0]->dl_tensor, &want[0]->dl_tensor)
                       : cf_tensor_allclose(&got[0]->dl_tensor, &want[0]->dl_tensor, tol, tol, msg, sizeof msg);
  cr_expect(same, "[%lld, %lld]: %s", (long long)ins[0]->shape[0], (long long)ins[0]->shape[1], msg);
  cr_expect_eq(cf_fusion_cache_last_segments(c), 1);
  cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "pointwise");
  cr_expect_str_eq(cf_fusion_cache_last_params(c, 0), want_params);
  cf_tensor_free(got[0]);
  cf_tensor_free(want[0]);
}

static DLManagedTensor *rand_tensor(cf_dtype dt, int rank, const int64_t *sizes, uint64_t seed) {
  DLManagedTensor *t = cf_tensor_host(dt, rank, sizes);
  cf_tensor_fill_random(&t->dl_tensor, seed);
  return t;
}

/* cast(x) float16 -> float32: rows of 13 and 7 run flat with vectors of 4; the rows of 13
 * share one kernel over their row counts (91, 39, 13 and 52 elements: every remainder);
 * [1, 1] is one element of a symbolic fusion's iteration axes, a partial vector too. */
Test(vector_tail, cast_up_of_odd_rows) {
  cf_tv *x = cf_tensor_symbolic(f, CF_HALF, 2);
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_cast(f, x, CF_FLOAT));
  const int64_t shapes[][2] = {{7, 13}, {3, 13}, {1, 13}, {4, 13}, {13, 7}, {1, 1}, {8191, 3}};
  const char *want[] = {"vector=4 tail threads=128", "vector=4 tail threads=128", "vector=4 tail threads=128",
                        "vector=4 threads=128",      "vector=4 tail threads=128", "vector=4 tail threads=128",
                        "vector=4 tail threads=128"};
  for (int i = 0; i < 7; i++) {
    DLManagedTensor *t = rand_tensor(CF_HALF, 2, shapes[i], (uint64_t)i + 1);
    check_call(1, (const DLTensor *[]){&t->dl_tensor}, 0, want[i]);
    cf_tensor_free(t);
  }
  /* rows of 13: 4 signatures, one kernel; rows of 7, of 1 and of 3: one each */
  cr_expect_eq(cf_fusion_cache_num_kernels(c), 4, "%d kernels", cf_fusion_cache_num_kernels(c));
}

/* gelu(x + broadcast(bias)) in bfloat16 over rows of 1001: x and the output flat in vectors
 * of 8, the bias read at its index. */
Test(vector_tail, bias_gelu_of_odd_rows) {
  cf_tv *x = cf_tensor_symbolic(f, CF_BFLOAT16, 2), *b = cf_tensor_symbolic(f, CF_BFLOAT16, 1);
  cf_fusion_add_input(f, x);
  cf_fusion_add_input(f, b);
  cf_fusion_add_output(f, cf_gelu(f, cf_add(f, x, cf_broadcast(f, b, 2, (bool[]){true, false}))));
  const int64_t shapes[][2] = {{5, 1001}, {3, 1001}, {1, 1001}};
  for (int i = 0; i < 3; i++) {
    DLManagedTensor *t = rand_tensor(CF_BFLOAT16, 2, shapes[i], 1), *bias = rand_tensor(CF_BFLOAT16, 1, &shapes[i][1], 2);
    check_call(2, (const DLTensor *[]){&t->dl_tensor, &bias->dl_tensor}, 1e-2,
               "break=none (vectors of 1 along rows, 8 along the flat tensor) vector=8 tail threads=128");
    cf_tensor_free(t);
    cf_tensor_free(bias);
  }
}

/* A view one element into its buffer (x[1:] flattened, 2 bytes in) is not 16-byte aligned:
 * the plan says so and runs scalar; the aligned call keeps its vectors and its kernel. */
Test(vector_tail, a_misaligned_view_runs_scalar) {
  cf_tv *x = cf_tensor_symbolic(f, CF_HALF, 2);
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_cast(f, x, CF_FLOAT));
  const int64_t big = 92, sizes[2] = {7, 13};
  DLManagedTensor *buf = rand_tensor(CF_HALF, 1, &big, 3);
  DLTensor view = buf->dl_tensor;
  view.ndim = 2;
  view.shape = (int64_t *)sizes;
  view.strides = NULL;
  view.byte_offset = 2;
  check_call(1, (const DLTensor *[]){&view}, 0, "vector=1 (T0 is not 16-byte aligned) threads=128");
  view.byte_offset = 0;
  check_call(1, (const DLTensor *[]){&view}, 0, "vector=4 tail threads=128");
  cf_tensor_free(buf);
}

/* nvFuser's test_arithmetic_ops (-x, |x| and x + 1 of one [3, 4, 5] input) compiled for
 * sm_90a by define and run, without a GPU: one flat axis in vectors of 4 with a tail, the
 * innermost extent 5 constant. Its tail guards once carried x*4 + l < E beside the split's
 * x < ceilDiv(E, 4) and the unmerged axes' (x*4 + l)/5/n1 < n0 and ((x*4 + l)/5) % n1 < n1,
 * all implied by the first, and NVRTC 13.0 crashed compiling them (a segmentation fault
 * inside nvrtcCompileProgram, most times): the guards keep the flat bound alone now
 * (lower/kx_implies.c). Three fresh compiles (the disk cache off), each one NVRTC's. */
Test(vector_tail, arithmetic_ops_kernel_compiles_for_sm_90a) {
  if (!tu_nvrtc_or_note()) return;
  setenv("CFUSER_CACHE", "0", 1);
  cf_tv *x = cf_tensor_symbolic(f, CF_FLOAT, 3);
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_neg(f, x));
  cf_fusion_add_output(f, cf_abs(f, x));
  cf_fusion_add_output(f, cf_add_scalar(f, x, 1.0));
  DLManagedTensor *in = rand_tensor(CF_FLOAT, 3, (int64_t[]){3, 4, 5}, 7);
  const DLTensor *ins[1] = {&in->dl_tensor};
  const cf_executor_options sm90 = {.backend = CF_BACKEND_CUDA, .arch = "sm_90a"};
  for (int i = 0; i < 3; i++) {
    cf_fusion_cache *cc = cf_fusion_cache_create(f, &sm90);
    DLManagedTensor *outs[3] = {0};
    int64_t before = exec_nvrtc_compile_count();
    cf_status s = cf_fusion_execute(cc, 1, ins, 3, outs);
    cr_expect_eq(exec_nvrtc_compile_count() - before, 1, "one NVRTC compile");
    /* compiled; the run then refuses (no device, or this host memory on one) */
    cr_expect(s == CF_OK || strncmp(cf_fusion_cache_error(cc), "run: ", 5) == 0, "%s", cf_fusion_cache_error(cc));
    cr_expect_str_eq(cf_fusion_cache_last_params(cc, 0), "vector=4 threads=128");
    for (int o = 0; o < 3; o++) cf_tensor_free(outs[o]);
    cf_fusion_cache_destroy(cc);
  }
  cf_tensor_free(in);
  unsetenv("CFUSER_CACHE");
}
