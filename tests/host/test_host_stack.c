/* tests/host/test_host_stack.c: the host backend sizes each emulated thread's stack from
 * the kernel's own local arrays. An unscheduled 64x256 softmax holds its [64, 256]
 * intermediates as 64 KiB local arrays in its one thread:
 * it used to overflow the 128 KiB fiber stack and kill the process; it now runs and
 * matches the reference evaluator. A kernel whose local arrays cannot fit any thread
 * stack is refused with a message naming the sizes. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "tests/test_util.h"

/* softmax over the rows of a [rows, cols] input, unscheduled: one thread computes it
 * all, every intermediate ([rows, cols] exp, the row max and sum) a local array. */
static cf_fusion *softmax(int64_t rows, int64_t cols) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){rows, cols});
  cf_fusion_add_input(f, a);
  const bool row[2] = {false, true};
  cf_tv *m = cf_broadcast(f, cf_max_reduce(f, a, 1, (int[]){1}), 2, row);
  cf_tv *e = cf_exp(f, cf_sub(f, a, m));
  cf_tv *s = cf_broadcast(f, cf_sum(f, e, 1, (int[]){1}), 2, row);
  cf_fusion_add_output(f, cf_div(f, e, s));
  return f;
}

static cf_status run_host(cf_fusion *f, int64_t rows, int64_t cols, char *err, size_t n, bool *matches) {
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cf_status s = cf_executor_compile(e, f);
  DLManagedTensor *ta = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){rows, cols});
  cf_tensor_fill_random(&ta->dl_tensor, 1);
  const DLTensor *ins[1] = {&ta->dl_tensor};
  DLManagedTensor *out = NULL, *want = NULL;
  if (s == CF_OK) s = cf_executor_run(e, 1, ins, 1, &out);
  snprintf(err, n, "%s", cf_executor_error(e));
  if (s == CF_OK) {
    cr_assert_eq(cf_fusion_evaluate(f, 1, ins, &want), CF_OK, "%s", cf_fusion_error(f));
    *matches = cf_tensor_allclose(&out->dl_tensor, &want->dl_tensor, 1e-5, 1e-5, NULL, 0);
  }
  cf_tensor_free(ta), cf_tensor_free(out), cf_tensor_free(want);
  cf_executor_destroy(e);
  return s;
}

Test(host_stack, unscheduled_64x256_softmax_runs) {
  cf_fusion *f = softmax(64, 256);
  char err[1024];
  bool matches = false;
  cr_assert_eq(run_host(f, 64, 256, err, sizeof err, &matches), CF_OK, "%s", err);
  cr_expect(matches, "the host kernel differs from the reference evaluator");
  cf_fusion_destroy(f);
}

/* Lowering refuses local arrays beyond what a CUDA thread may have (issue 28), before
 * the host backend's own limit of 256 MiB per thread stack is reached: two 128 MiB local
 * arrays and two of 16 KiB, whose lifetimes do not overlap, sharing one buffer. */
Test(host_stack, local_arrays_larger_than_a_thread_may_have_are_refused) {
  cf_fusion *f = softmax(4096, 8192);
  char err[1024];
  bool matches = false;
  cr_assert_eq(run_host(f, 4096, 8192, err, sizeof err, &matches), CF_ERR_UNSUPPORTED, "%s", err);
  cr_expect_str_eq(err, "compile: the kernel's local arrays take 268451840 bytes per thread (after sharing the "
                        "buffers of arrays whose lifetimes do not overlap), over the 524288 bytes a CUDA thread may "
                        "have (LOWER_MAX_LOCAL_BYTES); inline the tensors deeper, or put the large ones in shared or "
                        "global memory");
  cf_fusion_destroy(f);
}

/* A local array of INT64_MAX one-byte elements: its bytes saturate (they overflowed
 * int64_t when rounded up to 16, found by fuzz_builder) and the kernel is refused with
 * the same message. */
Test(host_stack, a_local_array_past_int64_bytes_is_refused_not_overflowed) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *in = cf_tensor_concrete(f, CF_BOOL, 1, (int64_t[]){INT64_MAX});
  cf_fusion_add_input(f, in);
  cf_fusion_add_output(f, cf_set(f, cf_set(f, in)));
  FILE *sink = fopen("/dev/null", "w");
  cr_assert_not_null(sink);
  cr_expect_eq(cf_fusion_print_kernel(f, sink), CF_ERR_UNSUPPORTED, "%s", cf_fusion_error(f));
  fclose(sink);
  cr_expect_str_eq(cf_fusion_error(f),
                   "compile: the kernel's local arrays take 9223372036854775792 bytes per thread (after sharing the "
                   "buffers of arrays whose lifetimes do not overlap), over the 524288 bytes a CUDA thread may have "
                   "(LOWER_MAX_LOCAL_BYTES); inline the tensors deeper, or put the large ones in shared or global "
                   "memory");
  cf_fusion_destroy(f);
}
