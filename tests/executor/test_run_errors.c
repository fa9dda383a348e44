/* Every error cf_executor_run reports for bad arguments, with its exact message, on the
 * host backend (the checks are the same for CUDA), plus the run-time half of two-level
 * validation: a symbolic condition compiled into a check that fires at launch. */
#include <criterion/criterion.h>
#include <string.h>

#include "test_util.h"

static cf_fusion *f;
static cf_executor *e;
static DLManagedTensor *in2x4, *out;

/* T0[2, 4] -> T1 = T0 * 2 -> output, one thread per element. */
static void setup(void) {
  f = cf_fusion_create();
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){2, 4});
  cf_fusion_add_input(f, a);
  cf_tv *b = cf_mul_scalar(f, a, 2.0);
  cf_fusion_add_output(f, b);
  cf_parallelize(f, b, 1, CF_PT_TIDX);
  e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  in2x4 = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){2, 4});
  out = NULL;
}
static void teardown(void) {
  cf_tensor_free(in2x4);
  cf_tensor_free(out);
  cf_executor_destroy(e);
  cf_fusion_destroy(f);
}
TestSuite(run_errors, .init = setup, .fini = teardown);

static cf_status run1(const DLTensor *t) { return cf_executor_run(e, 1, &t, 1, &out); }

#define EXPECT_RUN_ERROR(call, status, msg)           \
  do {                                                \
    cr_expect_eq((call), (status));                   \
    cr_expect_str_eq(cf_executor_error(e), (msg));    \
  } while (0)

Test(run_errors, a_good_run_succeeds) {
  cr_expect_eq(run1(&in2x4->dl_tensor), CF_OK, "%s", cf_executor_error(e));
}

Test(run_errors, input_count) {
  const DLTensor *two[2] = {&in2x4->dl_tensor, &in2x4->dl_tensor};
  EXPECT_RUN_ERROR(cf_executor_run(e, 2, two, 1, &out), CF_ERR_INVALID_ARGUMENT, "run: expected 1 inputs, got 2");
}

Test(run_errors, output_count) {
  const DLTensor *one = &in2x4->dl_tensor;
  DLManagedTensor *outs[2] = {NULL, NULL};
  EXPECT_RUN_ERROR(cf_executor_run(e, 1, &one, 2, outs), CF_ERR_INVALID_ARGUMENT, "run: expected 1 outputs, got 2");
}

Test(run_errors, null_input) {
  EXPECT_RUN_ERROR(run1(NULL), CF_ERR_INVALID_ARGUMENT, "run: input 0 (T0) is NULL");
}

Test(run_errors, dtype) {
  DLManagedTensor *t = cf_tensor_host(CF_INT32, 2, (int64_t[]){2, 4});
  EXPECT_RUN_ERROR(run1(&t->dl_tensor), CF_ERR_INVALID_ARGUMENT, "run: input 0 (T0) has dtype int, expected float");
  cf_tensor_free(t);
}

Test(run_errors, messages_name_tensors_after_the_fusion_is_gone) {
  cf_fusion_destroy(f); /* the executor owns everything it needs, the names included */
  f = NULL;
  DLManagedTensor *t = cf_tensor_host(CF_INT32, 2, (int64_t[]){2, 4});
  EXPECT_RUN_ERROR(run1(&t->dl_tensor), CF_ERR_INVALID_ARGUMENT, "run: input 0 (T0) has dtype int, expected float");
  cf_tensor_free(t);
}

Test(run_errors, rank) {
  DLManagedTensor *t = cf_tensor_host(CF_FLOAT, 1, (int64_t[]){8});
  EXPECT_RUN_ERROR(run1(&t->dl_tensor), CF_ERR_INVALID_ARGUMENT, "run: input 0 (T0) has 1 dimensions, expected 2");
  cf_tensor_free(t);
}

Test(run_errors, size) {
  DLManagedTensor *t = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){2, 5});
  EXPECT_RUN_ERROR(run1(&t->dl_tensor), CF_ERR_INVALID_ARGUMENT,
                   "run: input 0 (T0) has size 5 in dimension 1, expected 4");
  cf_tensor_free(t);
}

Test(run_errors, device) {
  DLTensor t = in2x4->dl_tensor;
  t.device.device_type = kDLCUDA;
  EXPECT_RUN_ERROR(run1(&t), CF_ERR_INVALID_ARGUMENT,
                   "run: input 0 (T0) is in device memory (kDLCUDA), but the kernel accesses its elements and the "
                   "host backend needs host memory");
}

Test(run_errors, strides_against_promised_contiguity) {
  DLManagedTensor *t = cf_tensor_host_strided(CF_FLOAT, 2, (int64_t[]){2, 4}, (int64_t[]){1, 2});
  EXPECT_RUN_ERROR(run1(&t->dl_tensor), CF_ERR_INVALID_ARGUMENT,
                   "run: input 0 (T0) has stride 2 in dimension 1 where the fusion promised a contiguous tensor "
                   "(stride 1); make it with cf_tensor_strided for arbitrary strides");
  cf_tensor_free(t);
}

Test(run_errors, given_output_of_the_wrong_size) {
  DLManagedTensor *o = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){4, 2});
  const DLTensor *one = &in2x4->dl_tensor;
  EXPECT_RUN_ERROR(cf_executor_run(e, 1, &one, 1, &o), CF_ERR_INVALID_ARGUMENT,
                   "run: output 0 (T1) has size 4 in dimension 0, expected 2");
  cf_tensor_free(o);
}

Test(run_errors, a_given_output_is_written_in_place) {
  DLManagedTensor *o = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){2, 4});
  cf_tensor_fill_iota(&in2x4->dl_tensor);
  const DLTensor *one = &in2x4->dl_tensor;
  cr_assert_eq(cf_executor_run(e, 1, &one, 1, &o), CF_OK, "%s", cf_executor_error(e));
  cr_expect_eq(cf_tensor_get(&o->dl_tensor, 7), 14.0);
  cf_tensor_free(o);
}

Test(run_errors, run_without_compile) {
  cf_executor *fresh = cf_executor_create(NULL);
  const DLTensor *one = &in2x4->dl_tensor;
  cr_expect_eq(cf_executor_run(fresh, 1, &one, 1, &out), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_executor_error(fresh), "run: the executor has no compiled kernel");
  cf_executor_destroy(fresh);
}

Test(run_errors, compile_only_executors_do_not_run) {
  TU_SKIP_WITHOUT_NVRTC();
  cf_executor *c = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_CUDA, .arch = "sm_100a"});
  cr_assert_eq(cf_executor_compile(c, f), CF_OK, "%s", cf_executor_error(c));
  if (cf_executor_compile_only(c)) {
    const DLTensor *one = &in2x4->dl_tensor;
    cr_expect_eq(cf_executor_run(c, 1, &one, 1, &out), CF_ERR_NO_DEVICE);
    cr_expect_str_eq(cf_executor_error(c),
                     "run: the kernel was compiled for sm_100a without a matching device; it cannot run here");
  }
  cf_executor_destroy(c);
}

Test(run_errors, misaligned_vectorized_input) {
  cf_fusion *g = cf_fusion_create();
  cf_tv *a = cf_tensor_concrete(g, CF_FLOAT, 1, (int64_t[]){8});
  cf_fusion_add_input(g, a);
  cf_tv *b = cf_set(g, a);
  cf_tv *c = cf_set(g, b);
  cf_fusion_add_output(g, c);
  cf_split(g, c, 0, 4);
  cf_propagate_transforms(g, c);
  cf_parallelize(g, b, 1, CF_PT_VECTORIZE);
  cf_executor *x = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_assert_eq(cf_executor_compile(x, g), CF_OK, "%s", cf_executor_error(x));
  DLManagedTensor *big = cf_tensor_host(CF_FLOAT, 1, (int64_t[]){9});
  DLTensor view = big->dl_tensor;
  int64_t eight = 8;
  view.shape = &eight;
  view.byte_offset = 4; /* one float in: no longer 16-byte aligned */
  const DLTensor *one = &view;
  DLManagedTensor *o = NULL;
  cr_expect_eq(cf_executor_run(x, 1, &one, 1, &o), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_executor_error(x),
                   "run: input 0 (T0) is not aligned to 16 bytes, which its vectorized access needs");
  cf_tensor_free(big);
  cf_tensor_free(o);
  cf_executor_destroy(x);
  cf_fusion_destroy(g);
}

Test(run_errors, symbolic_extents_that_disagree_are_caught_at_launch) {
  cf_fusion *g = cf_fusion_create();
  cf_tv *a = cf_tensor_symbolic(g, CF_FLOAT, 1), *b = cf_tensor_symbolic(g, CF_FLOAT, 1);
  cf_fusion_add_input(g, a);
  cf_fusion_add_input(g, b);
  cf_fusion_add_output(g, cf_add(g, a, b));
  cf_executor *x = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_assert_eq(cf_executor_compile(x, g), CF_OK, "%s", cf_executor_error(x));
  DLManagedTensor *t3 = cf_tensor_host(CF_FLOAT, 1, (int64_t[]){3}), *t5 = cf_tensor_host(CF_FLOAT, 1, (int64_t[]){5});
  const DLTensor *ins[2] = {&t3->dl_tensor, &t5->dl_tensor};
  DLManagedTensor *o = NULL;
  cr_expect_eq(cf_executor_run(x, 2, ins, 1, &o), CF_ERR_INVALID_SCHEDULE);
  cr_expect_str_eq(cf_executor_error(x), "run: add: axis 0 has extent mismatched between T1 and T2");
  ins[1] = &t3->dl_tensor;
  cr_expect_eq(cf_executor_run(x, 2, ins, 1, &o), CF_OK, "%s", cf_executor_error(x));
  cf_tensor_free(t3);
  cf_tensor_free(t5);
  cf_tensor_free(o);
  cf_executor_destroy(x);
  cf_fusion_destroy(g);
}

Test(run_errors, invalid_backend_variable) {
  setenv("CFUSER_BACKEND", "gpu", 1);
  cf_executor *x = cf_executor_create(NULL);
  cr_expect_eq(cf_executor_compile(x, f), CF_ERR_INVALID_ARGUMENT);
  cr_expect(strstr(cf_executor_error(x), "CFUSER_BACKEND=gpu is not a backend") != NULL, "%s", cf_executor_error(x));
  unsetenv("CFUSER_BACKEND");
  cf_executor_destroy(x);
}

/* y[1, n] = 2 * broadcast(b) inlined with x[m, n] = a + broadcast(b), both axes merged:
 * y's loop iterates x's m * n. With m = 0 the loop runs no iteration and y (which has n
 * elements) was left unwritten (the DAG fuzzer's hostile seed 3001021): refused at launch
 * now; with m > 0 it runs and equals the evaluator; with only x an output, m = 0 runs. */
static cf_fusion *broadcast_inlined_with(cf_tv **x, cf_tv **y) {
  cf_fusion *g = cf_fusion_create();
  cf_tv *a = cf_tensor_symbolic(g, CF_FLOAT, 2), *b = cf_tensor_symbolic(g, CF_FLOAT, 1);
  cf_fusion_add_input(g, a);
  cf_fusion_add_input(g, b);
  cf_tv *bb = cf_broadcast(g, b, 2, (bool[]){true, false});
  *x = cf_add(g, a, bb);
  *y = cf_mul_scalar(g, bb, 2.0);
  cf_fusion_add_output(g, *x);
  cf_merge(g, *x, 0);
  cf_merge(g, bb, 0);
  cf_merge(g, *y, 0);
  return g;
}

static cf_status run_m_by_3(cf_fusion *g, int64_t m, cf_executor *x, int nout, bool compare) {
  DLManagedTensor *a = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){m, 3}), *b = cf_tensor_host(CF_FLOAT, 1, (int64_t[]){3});
  cf_tensor_fill_random(&a->dl_tensor, 1);
  cf_tensor_fill_random(&b->dl_tensor, 2);
  const DLTensor *ins[2] = {&a->dl_tensor, &b->dl_tensor};
  tu_assert_io_fits(g, 2);
  cr_assert(nout <= cf_fusion_num_outputs(g));
  DLManagedTensor *got[TU_MAX_IO] = {0}, *want[TU_MAX_IO] = {0};
  cr_assert_eq(cf_fusion_evaluate(g, 2, ins, want), CF_OK, "%s", cf_fusion_error(g));
  cf_status s = cf_executor_run(x, 2, ins, nout, got);
  for (int i = 0; compare && !s && i < nout; i++) cr_expect(cf_tensor_equal(&got[i]->dl_tensor, &want[i]->dl_tensor));
  for (int i = 0; i < nout; i++) cf_tensor_free(got[i]), cf_tensor_free(want[i]);
  cf_tensor_free(a);
  cf_tensor_free(b);
  return s;
}

Test(run_errors, a_broadcast_inlined_with_an_empty_axis_is_refused_at_launch) {
  cf_tv *x, *y;
  cf_fusion *g = broadcast_inlined_with(&x, &y);
  cf_fusion_add_output(g, y);
  cr_assert_eq(cf_inline_most(g), CF_OK, "%s", cf_fusion_error(g));
  cf_executor *ex = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_assert_eq(cf_executor_compile(ex, g), CF_OK, "%s", cf_executor_error(ex));
  cr_expect_eq(run_m_by_3(g, 0, ex, 2, false), CF_ERR_INVALID_SCHEDULE);
  cr_expect_str_eq(cf_executor_error(ex), "run: loop axis 0 of T4 iterates iS9{( i0 * i1 )}, which is empty at this "
                                          "call, so T4 (not empty) would not be computed; do not inline it with the "
                                          "empty axis (its broadcast grows to it)");
  cr_expect_eq(run_m_by_3(g, 2, ex, 2, true), CF_OK, "%s", cf_executor_error(ex));
  cf_executor_destroy(ex);
  cf_fusion_destroy(g);
}

Test(run_errors, an_empty_output_with_a_broadcast_inlined_runs) {
  cf_tv *x, *y;
  cf_fusion *g = broadcast_inlined_with(&x, &y);
  cr_assert_eq(cf_inline_most(g), CF_OK, "%s", cf_fusion_error(g));
  cf_executor *ex = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_assert_eq(cf_executor_compile(ex, g), CF_OK, "%s", cf_executor_error(ex));
  cr_expect_eq(run_m_by_3(g, 0, ex, 1, true), CF_OK, "%s", cf_executor_error(ex));
  cf_executor_destroy(ex);
  cf_fusion_destroy(g);
}
