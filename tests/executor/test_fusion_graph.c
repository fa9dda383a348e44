/* CUDA graphs of define and run's multi-kernel entries (executor/fusion_graph.c): the rule
 * that decides, on the host (each reason asserted), the host backend never capturing, the
 * setting's errors, and on a GPU (skipped with the reason without one) an entry of two
 * kernels captured at the second call with the same tensors, replayed after, dropped when
 * the tensors move, every result equal to the evaluator's. On the GPU machine:
 *   cd build && ./executor_test_fusion_graph */
#include <criterion/criterion.h>
#include <string.h>

#include "executor/exec_cuda.h"
#include "executor/fusion_cache.h"

/* ---- the rule ---------------------------------------------------------------------------- */

static void expect_step(FcGraphFacts f, FcGraphStep want, const char *want_why) {
  const char *why = NULL;
  FcGraphStep got = fc_graph_step(&f, &why);
  cr_expect_eq(got, want, "got %s, want %s (%s)", fc_graph_step_name(got), fc_graph_step_name(want), why);
  cr_expect_str_eq(why, want_why);
}

Test(fusion_graph, the_rule) {
  const FcGraphFacts ok = {.mode = 0, .cuda = true, .stream = true, .kernels = 2, .outputs_given = true};
  FcGraphFacts f = ok;
  expect_step(f, FC_GRAPH_REMEMBER, "the tensors moved: remembered for the next call");
  f.same_pointers = true;
  expect_step(f, FC_GRAPH_CAPTURE, "the tensors are where the previous call had them");
  f.captured = true;
  expect_step(f, FC_GRAPH_REPLAY, "the tensors are where the capture had them");
  f.same_pointers = false;
  expect_step(f, FC_GRAPH_REMEMBER, "the tensors moved: remembered for the next call");
  f = ok, f.mode = 1;
  expect_step(f, FC_GRAPH_CAPTURE, "capture at the first eligible call");
  f = ok, f.mode = -1, f.same_pointers = true;
  expect_step(f, FC_GRAPH_NO, "turned off");
  f = ok, f.cuda = false;
  expect_step(f, FC_GRAPH_NO, "not on the CUDA backend");
  f = ok, f.stream = false;
  expect_step(f, FC_GRAPH_NO, "the legacy default stream cannot be captured");
  f = ok, f.kernels = 1;
  expect_step(f, FC_GRAPH_NO, "fewer than two kernels");
  f = ok, f.outputs_given = false;
  expect_step(f, FC_GRAPH_NO, "an output the cache allocates would move");
  f = ok, f.workspaces = true;
  expect_step(f, FC_GRAPH_NO, "a kernel has workspaces its executor may resize");
  f = ok, f.failed = true, f.same_pointers = true;
  expect_step(f, FC_GRAPH_NO, "a capture of this entry failed");
}

/* x + transpose(x): a transpose kernel and a pointwise one, no workspaces. */
static cf_fusion *two_kernels(void) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *x = cf_tensor_symbolic(f, CF_FLOAT, 2);
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_add(f, x, cf_transpose(f, x, 0, 1)));
  return f;
}

Test(fusion_graph, settings_and_the_host_backend) {
  cf_fusion *f = two_kernels();
  cf_fusion_cache *c = cf_fusion_cache_create(f, &(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_expect_eq(cf_fusion_cache_set_cuda_graphs(c, 2), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_cache_error(c), "set_cuda_graphs: mode 2; use -1 (off), 0 (the default rule) or 1");
  cr_expect_eq(cf_fusion_cache_set_cuda_graphs(NULL, 0), CF_ERR_INVALID_ARGUMENT);
  cr_assert_eq(cf_fusion_cache_set_cuda_graphs(c, 1), CF_OK);
  DLManagedTensor *x = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){33, 33}), *y = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){33, 33});
  cf_tensor_fill_random(&x->dl_tensor, 1);
  const DLTensor *in[1] = {&x->dl_tensor};
  for (int k = 0; k < 3; k++) {
    DLManagedTensor *out[1] = {y};
    cr_assert_eq(cf_fusion_execute_async(c, NULL, 1, in, 1, out), CF_OK, "%s", cf_fusion_cache_error(c));
  }
  cr_expect_eq(cf_fusion_cache_last_segments(c), 2);
  cr_expect_eq(cf_fusion_cache_graph_captures(c), 0);
  cr_expect_eq(cf_fusion_cache_graph_replays(c), 0);
  cf_tensor_free(x);
  cf_tensor_free(y);
  cf_fusion_cache_destroy(c);
  cf_fusion_destroy(f);
}

/* ---- on a GPU ------------------------------------------------------------------------------ */

static void need_gpu(void) {
  const char *reason = NULL;
  if (!cf_cuda_available(&reason)) cr_skip_test("no CUDA device: %s", reason);
}

static DLManagedTensor *on_device(const DLManagedTensor *h) {
  DLManagedTensor *d = cf_tensor_device(CF_FLOAT, h->dl_tensor.ndim, h->dl_tensor.shape);
  cr_assert(d);
  cr_assert_eq(cf_tensor_copy(&d->dl_tensor, &h->dl_tensor), CF_OK);
  return d;
}

static void expect_equal(cf_fusion *f, const DLManagedTensor *hx, const DLManagedTensor *dy) {
  DLManagedTensor *want[1] = {0}, *got = cf_tensor_host(CF_FLOAT, 2, dy->dl_tensor.shape);
  const DLTensor *in[1] = {&hx->dl_tensor};
  cr_assert_eq(cf_fusion_evaluate(f, 1, in, want), CF_OK, "%s", cf_fusion_error(f));
  cr_assert_eq(cf_tensor_copy(&got->dl_tensor, &dy->dl_tensor), CF_OK);
  char msg[256] = "";
  cr_expect(cf_tensor_allclose(&got->dl_tensor, &want[0]->dl_tensor, 0, 0, msg, sizeof msg), "%s", msg);
  cf_tensor_free(want[0]);
  cf_tensor_free(got);
}

Test(fusion_graph, a_two_kernel_entry_is_captured_then_replayed) {
  need_gpu();
  void *stream = NULL;
  char err[256];
  cr_assert_eq(exec_stream_create(0, &stream, err, sizeof err), CF_OK, "%s", err);
  cf_fusion *f = two_kernels();
  cf_fusion_cache *c = cf_fusion_cache_create(f, &(cf_executor_options){.backend = CF_BACKEND_CUDA});
  DLManagedTensor *hx = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){300, 300});
  cf_tensor_fill_random(&hx->dl_tensor, 3);
  DLManagedTensor *x = on_device(hx), *y = on_device(hx), *y2 = on_device(hx);
  const DLTensor *in[1] = {&x->dl_tensor};
  for (int k = 0; k < 5; k++) {
    DLManagedTensor *out[1] = {k == 3 ? y2 : y};
    cr_assert_eq(cf_fusion_execute_async(c, stream, 1, in, 1, out), CF_OK, "call %d: %s", k, cf_fusion_cache_error(c));
    cr_assert_eq(cf_fusion_cache_synchronize(c), CF_OK, "%s", cf_fusion_cache_error(c));
    expect_equal(f, hx, out[0]);
  }
  cr_expect_eq(cf_fusion_cache_last_segments(c), 2);
  /* call 0 remembers, 1 captures, 2 replays, 3 (another output) runs kernel by kernel,
   * 4 (the output moved back, not where call 3's was) remembers again */
  cr_expect_eq(cf_fusion_cache_graph_captures(c), 1);
  cr_expect_eq(cf_fusion_cache_graph_replays(c), 1);
  cf_tensor_free(x), cf_tensor_free(y), cf_tensor_free(y2), cf_tensor_free(hx);
  cf_fusion_cache_destroy(c);
  cf_fusion_destroy(f);
  exec_stream_destroy(0, stream);
}
