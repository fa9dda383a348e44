/* Hostile arguments to cf_executor_run (issue 16), on the host backend (the checks come
 * before any backend is involved): caller outputs smaller than the computed extents,
 * NULL data, negative and overflowing sizes, outputs aliasing inputs or each other,
 * launches beyond CUDA's limits, and zero-size tensors on a scheduled kernel (which work:
 * nothing is launched). Each is a clear error with its exact message. Fake data pointers
 * are only compared, never read: every such run stops before the launch. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "test_util.h"

static cf_fusion *f;
static cf_executor *e;

/* T0[i0, i1] float -> T1 = T0 * 2: one block per row, one thread per column. */
static void setup(void) {
  f = cf_fusion_create();
  cf_tv *a = cf_tensor_symbolic(f, CF_FLOAT, 2);
  cf_fusion_add_input(f, a);
  cf_tv *b = cf_mul_scalar(f, a, 2.0);
  cf_fusion_add_output(f, b);
  cf_parallelize(f, b, 0, CF_PT_BIDX);
  cf_parallelize(f, b, 1, CF_PT_TIDX);
  e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
}
static void teardown(void) {
  cf_executor_destroy(e);
  cf_fusion_destroy(f);
}
TestSuite(hostile_run, .init = setup, .fini = teardown);

#define EXPECT_RUN_ERROR(call, status, msg)        \
  do {                                             \
    cr_expect_eq((call), (status));                \
    cr_expect_str_eq(cf_executor_error(e), (msg)); \
  } while (0)

static cf_status run(const DLTensor *in, DLManagedTensor **out) { return cf_executor_run(e, 1, &in, 1, out); }

/* A host DLTensor header over `data` (not owned). */
static DLTensor view(void *data, int ndim, int64_t *shape) {
  return (DLTensor){.data = data, .device = {kDLCPU, 0}, .ndim = ndim, .dtype = {kDLFloat, 32, 1}, .shape = shape};
}

Test(hostile_run, a_caller_output_smaller_than_the_result_is_refused) {
  DLManagedTensor *in = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){64, 64});
  DLManagedTensor *small = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){2, 2});
  EXPECT_RUN_ERROR(run(&in->dl_tensor, &small), CF_ERR_INVALID_ARGUMENT,
                   "run: output 0 (T1) has size 2 in dimension 0, but the fusion computes 64 for these inputs");
  cf_tensor_free(in);
  cf_tensor_free(small);
}

Test(hostile_run, null_data_pointers_are_refused) {
  int64_t shape[2] = {2, 4};
  DLTensor in = view(NULL, 2, shape);
  DLManagedTensor *out = NULL;
  EXPECT_RUN_ERROR(run(&in, &out), CF_ERR_INVALID_ARGUMENT, "run: input 0 (T0) has a NULL data pointer");
  DLManagedTensor *good = cf_tensor_host(CF_FLOAT, 2, shape);
  DLManagedTensor *bad = cf_tensor_host(CF_FLOAT, 2, shape);
  void *keep = bad->dl_tensor.data;
  bad->dl_tensor.data = NULL;
  EXPECT_RUN_ERROR(run(&good->dl_tensor, &bad), CF_ERR_INVALID_ARGUMENT, "run: output 0 (T1) has a NULL data pointer");
  bad->dl_tensor.data = keep;
  cf_tensor_free(good);
  cf_tensor_free(bad);
}

Test(hostile_run, negative_and_overflowing_sizes_are_refused) {
  float x;
  int64_t neg[2] = {2, -3}, huge[2] = {INT64_C(1) << 62, 4};
  DLTensor in = view(&x, 2, neg);
  DLManagedTensor *out = NULL;
  EXPECT_RUN_ERROR(run(&in, &out), CF_ERR_INVALID_ARGUMENT, "run: input 0 (T0) has negative size -3 in dimension 1");
  in.shape = huge;
  EXPECT_RUN_ERROR(run(&in, &out), CF_ERR_INVALID_ARGUMENT,
                   "run: input 0 (T0) has sizes whose byte count overflows int64");
  cr_expect_null(out);
}

Test(hostile_run, an_output_aliasing_the_input_is_refused) {
  DLManagedTensor *t = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){2, 4});
  DLManagedTensor same = *t;
  DLManagedTensor *alias = &same;
  alias->deleter = NULL; /* t owns the storage */
  EXPECT_RUN_ERROR(run(&t->dl_tensor, &alias), CF_ERR_INVALID_ARGUMENT,
                   "run: output 0 (T1) overlaps input 0 (T0) in memory; outputs may not alias inputs or other outputs");
  /* A partial overlap: the output starts at the input's last row. */
  DLManagedTensor *big = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){3, 4});
  DLManagedTensor tail = *big;
  tail.deleter = NULL;
  tail.dl_tensor.byte_offset = 4 * sizeof(float);
  DLTensor head = big->dl_tensor;
  head.shape = (int64_t[]){2, 4};
  DLManagedTensor *o = &tail;
  tail.dl_tensor.shape = (int64_t[]){2, 4};
  tail.dl_tensor.strides = NULL;
  head.strides = NULL;
  EXPECT_RUN_ERROR(run(&head, &o), CF_ERR_INVALID_ARGUMENT,
                   "run: output 0 (T1) overlaps input 0 (T0) in memory; outputs may not alias inputs or other outputs");
  cf_tensor_free(big);
  cf_tensor_free(t);
}

Test(hostile_run, outputs_aliasing_each_other_are_refused) {
  cf_fusion *g = cf_fusion_create();
  cf_tv *a = cf_tensor_concrete(g, CF_FLOAT, 1, (int64_t[]){8});
  cf_fusion_add_input(g, a);
  cf_fusion_add_output(g, cf_neg(g, a));
  cf_fusion_add_output(g, cf_abs(g, a));
  cf_executor *x = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_assert_eq(cf_executor_compile(x, g), CF_OK, "%s", cf_executor_error(x));
  DLManagedTensor *in = cf_tensor_host(CF_FLOAT, 1, (int64_t[]){8});
  DLManagedTensor *o = cf_tensor_host(CF_FLOAT, 1, (int64_t[]){8});
  DLManagedTensor copy = *o;
  copy.deleter = NULL;
  DLManagedTensor *outs[2] = {o, &copy};
  const DLTensor *ins[1] = {&in->dl_tensor};
  cr_expect_eq(cf_executor_run(x, 1, ins, 2, outs), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_executor_error(x),
                   "run: output 1 (T2) overlaps output 0 (T1) in memory; outputs may not alias inputs or other outputs");
  cf_tensor_free(in);
  cf_tensor_free(o);
  cf_executor_destroy(x);
  cf_fusion_destroy(g);
}

Test(hostile_run, inputs_may_alias_each_other) {
  cf_fusion *g = cf_fusion_create();
  cf_tv *a = cf_tensor_concrete(g, CF_FLOAT, 1, (int64_t[]){4});
  cf_tv *b = cf_tensor_concrete(g, CF_FLOAT, 1, (int64_t[]){4});
  cf_fusion_add_input(g, a);
  cf_fusion_add_input(g, b);
  cf_fusion_add_output(g, cf_add(g, a, b));
  cf_executor *x = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_assert_eq(cf_executor_compile(x, g), CF_OK, "%s", cf_executor_error(x));
  DLManagedTensor *in = cf_tensor_host(CF_FLOAT, 1, (int64_t[]){4}), *o = NULL;
  cf_tensor_fill_iota(&in->dl_tensor);
  const DLTensor *ins[2] = {&in->dl_tensor, &in->dl_tensor};
  cr_assert_eq(cf_executor_run(x, 2, ins, 1, &o), CF_OK, "%s", cf_executor_error(x));
  cr_expect_eq(cf_tensor_get(&o->dl_tensor, 3), 6.0);
  cf_tensor_free(in);
  cf_tensor_free(o);
  cf_executor_destroy(x);
  cf_fusion_destroy(g);
}

Test(hostile_run, a_grid_beyond_the_limit_says_so) {
  int64_t shape[2] = {INT64_C(1) << 32, 1};
  DLTensor in = view((void *)(uintptr_t)0x10000, 2, shape);
  DLManagedTensor o = {.dl_tensor = view((void *)(uintptr_t)(INT64_C(1) << 40), 2, shape)};
  DLManagedTensor *out = &o;
  EXPECT_RUN_ERROR(run(&in, &out), CF_ERR_INVALID_ARGUMENT,
                   "run: launch grid (4294967296, 1, 1) block (1, 1, 1) for these input sizes is outside the limits: "
                   "grid x 1..2147483647, y and z 1..65535; block x and y 1..1024, z 1..64, at most 1024 threads");
}

Test(hostile_run, zero_size_tensors_run_on_a_scheduled_kernel) {
  DLManagedTensor *in = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){0, 4}), *out = NULL;
  cr_assert_eq(run(&in->dl_tensor, &out), CF_OK, "%s", cf_executor_error(e));
  cr_expect_eq(out->dl_tensor.shape[0], 0);
  cr_expect_eq(out->dl_tensor.shape[1], 4);
  cf_tensor_free(in);
  cf_tensor_free(out);
}

Test(hostile_run, zero_size_tensors_run_on_a_split_kernel) {
  cf_fusion *g = cf_fusion_create();
  cf_tv *a = cf_tensor_symbolic(g, CF_FLOAT, 1);
  cf_fusion_add_input(g, a);
  cf_tv *b = cf_relu(g, a);
  cf_fusion_add_output(g, b);
  cf_split(g, b, 0, 128);
  cf_parallelize(g, b, 0, CF_PT_BIDX);
  cf_parallelize(g, b, 1, CF_PT_TIDX);
  cf_executor *x = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_assert_eq(cf_executor_compile(x, g), CF_OK, "%s", cf_executor_error(x));
  DLManagedTensor *in = cf_tensor_host(CF_FLOAT, 1, (int64_t[]){0}), *o = NULL;
  const DLTensor *ins[1] = {&in->dl_tensor};
  cr_expect_eq(cf_executor_run(x, 1, ins, 1, &o), CF_OK, "%s", cf_executor_error(x));
  cr_expect_eq(cf_tensor_numel(&o->dl_tensor), 0);
  cf_tensor_free(in);
  cf_tensor_free(o);
  cf_executor_destroy(x);
  cf_fusion_destroy(g);
}

/* Found by fuzz_run_args: error messages read tensor names from the destroyed fusion. */
Test(hostile_run, errors_name_tensors_after_the_fusion_is_destroyed) {
  cf_fusion *g = cf_fusion_create();
  cf_tv *a = cf_tensor_concrete(g, CF_FLOAT, 1, (int64_t[]){4});
  cf_fusion_add_input(g, a);
  cf_fusion_add_output(g, cf_neg(g, a));
  cf_executor *x = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_assert_eq(cf_executor_compile(x, g), CF_OK, "%s", cf_executor_error(x));
  cf_fusion_destroy(g);
  DLManagedTensor *in = cf_tensor_host(CF_INT32, 1, (int64_t[]){4}), *o = NULL;
  const DLTensor *ins[1] = {&in->dl_tensor};
  cr_expect_eq(cf_executor_run(x, 1, ins, 1, &o), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_executor_error(x), "run: input 0 (T0) has dtype int, expected float");
  cf_tensor_free(in);
  cf_executor_destroy(x);
}
