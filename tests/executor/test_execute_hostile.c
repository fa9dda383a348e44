/* Issue 28: hostile and unusual calls of define and run (cf_fusion_execute) and of
 * cf_executor_run that killed the process or were accepted wrongly: a negative stride (a
 * NumPy x[::-1] view: SIGSEGV, the 32-bit index multiplied an unsigned thread index by a
 * signed stride) and zero strides, accepted where the fusion declares arbitrary strides
 * and refused where it promised contiguity; a byte_offset of 2^63 (SIGSEGV); a float
 * output at a 2-byte offset; a NULL array of inputs ("expected 1 inputs, got 1"); sizes
 * whose signature stride overflows (UBSan); and the lifetime of error messages, which the
 * next failing call freed. Each is the right result or a clear error with its exact
 * message, on the host backend. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "test_util.h"

static cf_fusion *f;
static cf_fusion_cache *c;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) {
  cf_fusion_cache_destroy(c);
  cf_fusion_destroy(f);
}
TestSuite(execute_hostile, .init = setup, .fini = teardown);

static cf_fusion_cache *cache(void) {
  if (!c) c = cf_fusion_cache_create(f, &(cf_executor_options){.backend = CF_BACKEND_HOST});
  return c;
}

/* out = -x for a strided (any strides) or a contiguous input of rank 1. */
static void neg_of(bool strided) {
  cf_tv *x = strided ? cf_tensor_strided(f, CF_FLOAT, 1) : cf_tensor_symbolic(f, CF_FLOAT, 1);
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_neg(f, x));
}

#define EXPECT_EXEC_ERROR(call, msg)                      \
  do {                                                    \
    cr_expect_eq((call), CF_ERR_INVALID_ARGUMENT);        \
    cr_expect_str_eq(cf_fusion_cache_error(c), (msg));    \
  } while (0)

static cf_status exec1(const DLTensor *in, DLManagedTensor **out) { return cf_fusion_execute(cache(), 1, &in, 1, out); }

/* x[::-1]: data at the buffer, byte_offset at the last element, stride -1. */
Test(execute_hostile, a_reversed_view_is_read_backwards) {
  neg_of(true);
  DLManagedTensor *x = cf_tensor_host(CF_FLOAT, 1, (int64_t[]){1000}), *out = NULL;
  cf_tensor_fill_iota(&x->dl_tensor);
  int64_t stride;
  DLTensor rev = tu_reversed_view(x, &stride);
  for (int call = 0; call < 2; call++) {
    cr_assert_eq(exec1(&rev, &out), CF_OK, "%s", cf_fusion_cache_error(c));
    for (int i = 0; i < 1000; i += 111) cr_expect_eq(cf_tensor_get(&out->dl_tensor, i), -(double)(999 - i), "at %d", i);
    cf_tensor_free(out);
    out = NULL;
  }
  cf_tensor_free(x);
}

/* np.broadcast_to: stride 0, every element the first one. */
Test(execute_hostile, a_zero_stride_repeats_one_element) {
  neg_of(true);
  float one = 3.5f;
  int64_t shape = 300, stride = 0;
  DLTensor x = {.data = &one, .device = {kDLCPU, 0}, .ndim = 1, .dtype = {kDLFloat, 32, 1}, .shape = &shape,
                .strides = &stride};
  DLManagedTensor *out = NULL;
  cr_assert_eq(exec1(&x, &out), CF_OK, "%s", cf_fusion_cache_error(c));
  for (int i = 0; i < 300; i += 37) cr_expect_eq(cf_tensor_get(&out->dl_tensor, i), -3.5);
  cf_tensor_free(out);
}

Test(execute_hostile, negative_and_zero_strides_are_refused_where_contiguity_was_promised) {
  neg_of(false);
  DLManagedTensor *x = cf_tensor_host(CF_FLOAT, 1, (int64_t[]){10}), *out = NULL;
  DLTensor v = x->dl_tensor;
  int64_t stride = -1;
  v.strides = &stride;
  v.byte_offset = 9 * sizeof(float);
  EXPECT_EXEC_ERROR(exec1(&v, &out), "run: input 0 (T0) has stride -1 in dimension 0 where the fusion promised a "
                                     "contiguous tensor (stride 1); make it with cf_tensor_strided for arbitrary strides");
  stride = 0;
  EXPECT_EXEC_ERROR(exec1(&v, &out), "run: input 0 (T0) has stride 0 in dimension 0 where the fusion promised a "
                                     "contiguous tensor (stride 1); make it with cf_tensor_strided for arbitrary strides");
  cf_tensor_free(x);
}

/* Kernels of strided inputs index in 64 bits: in 32, blockIdx.x * 128 + threadIdx.x (an
 * unsigned int) times a negative stride is a huge unsigned offset. */
Test(execute_hostile, strided_inputs_index_in_64_bits) {
  neg_of(true);
  cf_schedule_pointwise(f);
  char *src = tu_cuda_kernel_text(f);
  cr_expect(strstr(src, "T0.alloc_stride[0]") != NULL, "%s", src);
  free(src);
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_CUDA, .arch = "sm_90a"});
  if (cf_nvrtc_available(NULL)) {
    cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
    cr_expect(strstr(cf_executor_source(e), "#define CF_INDEX_TYPE long long") != NULL);
  }
  cf_executor_destroy(e);
}

Test(execute_hostile, a_byte_offset_beyond_the_address_space_is_refused) {
  neg_of(false);
  DLManagedTensor *x = cf_tensor_host(CF_FLOAT, 1, (int64_t[]){10}), *out = NULL;
  DLTensor v = x->dl_tensor;
  v.byte_offset = (uint64_t)1 << 63;
  EXPECT_EXEC_ERROR(exec1(&v, &out), "run: input 0 (T0) has byte_offset 9223372036854775808, which with its sizes "
                                     "and strides puts its data outside the address space");
  v.byte_offset = (uint64_t)1 << 62; /* no wrap, but no memory there either (the libFuzzer harness's finding) */
  EXPECT_EXEC_ERROR(exec1(&v, &out), "run: input 0 (T0) has byte_offset 4611686018427387904, which with its sizes "
                                     "and strides puts its data outside the address space");
  cf_tensor_free(x);
}

/* Strides whose reach is the largest int64 (or its negative) are refused without an
 * intermediate overflow: the last byte's end, one past INT64_MAX, was computed in int64
 * (the libFuzzer harness's finding, under UBSan). */
Test(execute_hostile, strides_that_reach_the_end_of_int64_are_refused) {
  neg_of(true);
  float data[2] = {1, 2};
  int64_t shape = 2, strides[] = {INT64_MAX, INT64_MIN, INT64_MIN + 1};
  for (int i = 0; i < 3; i++) {
    DLTensor x = {.data = data, .device = {kDLCPU, 0}, .ndim = 1, .dtype = {kDLFloat, 32, 1}, .shape = &shape,
                  .strides = &strides[i]};
    DLManagedTensor *out = NULL;
    EXPECT_EXEC_ERROR(exec1(&x, &out), "run: input 0 (T0) has byte_offset 0, which with its sizes and strides puts "
                                       "its data outside the address space");
  }
}

/* A GPU faults on a float at a 2-byte boundary: the caller's output is refused. */
Test(execute_hostile, a_misaligned_output_is_refused) {
  neg_of(false);
  DLManagedTensor *x = cf_tensor_host(CF_FLOAT, 1, (int64_t[]){10}), *o = cf_tensor_host(CF_FLOAT, 1, (int64_t[]){11});
  o->dl_tensor.byte_offset = 2;
  o->dl_tensor.shape[0] = 10;
  EXPECT_EXEC_ERROR(exec1(&x->dl_tensor, &o), "run: output 0 (T1) starts 2 bytes past a multiple of 4 bytes; its "
                                              "float elements must be aligned to their size");
  o->dl_tensor.byte_offset = 0;
  cf_tensor_free(x);
  cf_tensor_free(o);
}

Test(execute_hostile, null_inputs_are_named) {
  neg_of(false);
  DLManagedTensor *out[1] = {NULL};
  const DLTensor *none[1] = {NULL};
  EXPECT_EXEC_ERROR(cf_fusion_execute(cache(), 1, NULL, 1, out), "execute: the array of 1 inputs is NULL");
  EXPECT_EXEC_ERROR(cf_fusion_execute(cache(), 1, none, 1, out), "execute: input 0 (T0) is NULL");
  DLManagedTensor *x = cf_tensor_host(CF_FLOAT, 1, (int64_t[]){4});
  const DLTensor *ins[1] = {&x->dl_tensor};
  EXPECT_EXEC_ERROR(cf_fusion_execute(cache(), 1, ins, 1, NULL), "execute: the array of 1 outputs is NULL (pass an "
                                                                 "array of NULL pointers for outputs the cache "
                                                                 "allocates)");
  cf_tensor_free(x);
}

/* Sizes whose row-major stride overflows int64 in the signature: refused, no undefined
 * behaviour (the sanitizer build checks). */
Test(execute_hostile, absurd_sizes_are_refused_without_overflow) {
  cf_tv *x = cf_tensor_symbolic(f, CF_FLOAT, 3);
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_neg(f, x));
  float one = 1;
  int64_t shape[3] = {(int64_t)1 << 40, (int64_t)1 << 40, (int64_t)1 << 40};
  DLTensor t = {.data = &one, .device = {kDLCPU, 0}, .ndim = 3, .dtype = {kDLFloat, 32, 1}, .shape = shape};
  DLManagedTensor *out = NULL;
  cr_expect_neq(exec1(&t, &out), CF_OK);
  cr_expect_str_eq(cf_fusion_cache_error(c), "execute: input 0 (T0) has sizes whose byte count overflows int64");
}

/* An empty input whose other size is huge: a row sum of [0, 2^60] floats is an empty
 * output; past what int64 counts in bytes ([0, 2^63 - 1], [0, 2^63 - 1, 2]) the call is
 * refused before any scheduler multiplies the sizes (the row sum's heuristic rounded
 * 2^63 - 1 up as (a + b - 1) / b, and the pointwise row and define and run's emptiness
 * test multiplied it by 2: the libFuzzer harness's UBSan findings). */
Test(execute_hostile, an_empty_input_of_a_huge_extent_sums_to_nothing_or_is_refused) {
  cf_tv *x = cf_tensor_symbolic(f, CF_FLOAT, 2);
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_sum(f, x, 1, (int[]){1}));
  int64_t shape[2] = {0, (int64_t)1 << 60};
  DLTensor t = {.device = {kDLCPU, 0}, .ndim = 2, .dtype = {kDLFloat, 32, 1}, .shape = shape};
  DLManagedTensor *out = NULL;
  cr_assert_eq(exec1(&t, &out), CF_OK, "%s", cf_fusion_cache_error(c));
  cr_expect_eq(out->dl_tensor.ndim, 1);
  cr_expect_eq(out->dl_tensor.shape[0], 0);
  cf_tensor_free(out);
  out = NULL;
  shape[1] = INT64_MAX;
  EXPECT_EXEC_ERROR(exec1(&t, &out), "execute: T0's sizes (those of 0 aside) multiply to more bytes than int64 "
                                     "counts; no kernel can index it for T0_g_float[iS0{0}, iS1{9223372036854775807}]");
  cr_expect_null(out);
}

/* check(call(c), error(c)) reads the message of the call before when C evaluates the
 * second argument first: that message must still be alive after the call fails. */
Test(execute_hostile, an_error_message_outlives_the_next_failing_call) {
  neg_of(false);
  DLManagedTensor *out[1] = {NULL};
  cf_fusion_execute(cache(), 2, NULL, 1, out);
  const char *first = cf_fusion_cache_error(c);
  cr_assert_str_eq(first, "execute: expected 1 inputs, got 2");
  cf_fusion_execute(cache(), 1, NULL, 1, out);
  cr_expect_str_eq(first, "execute: expected 1 inputs, got 2"); /* still readable (ASan: not freed) */
  cr_expect_str_eq(cf_fusion_cache_error(c), "execute: the array of 1 inputs is NULL");
  /* The same for an executor. */
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  cf_executor_run(e, 3, NULL, 1, out);
  const char *msg = cf_executor_error(e);
  cf_executor_run(e, 1, NULL, 1, out);
  cr_expect_str_eq(msg, "run: expected 1 inputs, got 3");
  cr_expect_str_eq(cf_executor_error(e), "run: the array of 1 inputs is NULL");
  cf_executor_destroy(e);
}

static DLManagedTensor *ones(int rank, const int64_t *sizes) {
  DLManagedTensor *t = cf_tensor_host(CF_FLOAT, rank, sizes);
  float *p = t->dl_tensor.data;
  for (int64_t i = 0; i < cf_tensor_numel(&t->dl_tensor); i++) p[i] = 1;
  return t;
}

/* A view of t's first *n elements as a 1-D tensor (not owned: no deleter). */
static DLManagedTensor first_floats(const DLManagedTensor *t, int64_t *n) {
  DLManagedTensor v = *t;
  v.dl_tensor.ndim = 1;
  v.dl_tensor.shape = n;
  v.dl_tensor.strides = NULL;
  v.deleter = NULL;
  return v;
}

/* s = sum(a, 1) and y = b * s: two segments, the reduction, then the product. */
static void sum_then_product(void) {
  cf_tv *a = cf_tensor_symbolic(f, CF_FLOAT, 2), *b = cf_tensor_symbolic(f, CF_FLOAT, 2);
  cf_fusion_add_input(f, a);
  cf_fusion_add_input(f, b);
  cf_tv *s = cf_sum(f, a, 1, (int[]){1});
  cf_fusion_add_output(f, s);
  cf_fusion_add_output(f, cf_mul(f, b, cf_broadcast(f, s, 2, (bool[]){false, true})));
}

/* s = sum(a, 1) and y = b * s (two segments: the reduction, then the product). A caller's
 * s over b's first row is written by segment 0, which reads only a, and b is read by
 * segment 1: each segment's own check passes, y's first row would be 200 * 200. */
Test(execute_hostile, an_output_over_an_input_a_later_segment_reads_is_refused) {
  sum_then_product();
  int64_t sz[2] = {100, 200};
  DLManagedTensor *x = ones(2, sz), *z = ones(2, sz), *out[2] = {NULL, NULL};
  const DLTensor *ins[2] = {&x->dl_tensor, &z->dl_tensor};
  cr_assert_eq(cf_fusion_execute(cache(), 2, ins, 2, out), CF_OK, "%s", cf_fusion_cache_error(c));
  cr_assert_eq(cf_fusion_cache_last_segments(c), 2);
  cr_expect_eq(cf_tensor_get(&out[1]->dl_tensor, 0), 200);
  cf_tensor_free(out[0]), cf_tensor_free(out[1]);
  int64_t n = 100;
  DLManagedTensor over_b = first_floats(z, &n); /* s given as a view of b's first 100 floats */
  DLManagedTensor *given[2] = {&over_b, NULL};
  EXPECT_EXEC_ERROR(cf_fusion_execute(c, 2, ins, 2, given), "execute: output 0 (T2) overlaps input 1 (T1) in memory; "
                                                            "outputs may not alias inputs or other outputs");
  cr_expect_eq(cf_tensor_get(&z->dl_tensor, 0), 1, "b was written");
  /* Two outputs of different segments over one buffer. */
  DLManagedTensor *big = ones(2, sz), s_view = first_floats(big, &n);
  DLManagedTensor *both[2] = {&s_view, big};
  EXPECT_EXEC_ERROR(cf_fusion_execute(c, 2, ins, 2, both), "execute: output 1 (T4) overlaps output 0 (T2) in memory; "
                                                           "outputs may not alias inputs or other outputs");
  cf_tensor_free(big), cf_tensor_free(x), cf_tensor_free(z);
}

/* sum_then_product's two segments: b with a NULL data pointer, which only segment 1 reads, is
 * refused before segment 0 writes the caller's s, and the message names the fusion's
 * input 1 (segment 1's run calls b its input 0). An error a segment's own run finds is
 * prefixed with the segment it came from. */
Test(execute_hostile, a_call_refused_for_a_null_input_runs_no_segment) {
  sum_then_product();
  int64_t sz[2] = {4, 3};
  DLManagedTensor *x = ones(2, sz), *z = ones(2, sz), *s_out = ones(1, sz), *y_out = ones(2, sz);
  DLTensor no_data = z->dl_tensor;
  no_data.data = NULL;
  const DLTensor *ins[2] = {&x->dl_tensor, &no_data};
  DLManagedTensor *given[2] = {s_out, y_out};
  EXPECT_EXEC_ERROR(cf_fusion_execute(cache(), 2, ins, 2, given), "execute: input 1 (T1) has a NULL data pointer");
  cr_expect_eq(cf_fusion_cache_last_segments(c), 2);
  cr_expect_eq(cf_tensor_get(&s_out->dl_tensor, 0), 1, "a refused call wrote s");
  /* y given 2 bytes off a float's alignment: found by segment 1's own run. */
  ins[1] = &z->dl_tensor;
  y_out->dl_tensor.byte_offset = 2;
  EXPECT_EXEC_ERROR(cf_fusion_execute(c, 2, ins, 2, given), "execute: segment 2 of 2: run: output 0 (T4) starts 2 "
                                                            "bytes past a multiple of 4 bytes; its float elements must "
                                                            "be aligned to their size");
  y_out->dl_tensor.byte_offset = 0;
  cf_tensor_free(x), cf_tensor_free(z), cf_tensor_free(s_out), cf_tensor_free(y_out);
}

/* An output that no op computes and no one gives: refused when the cache is made, with
 * the verifier's words (the fusion's copy could not map it: an internal error). */
Test(execute_hostile, an_output_nothing_computes_is_refused_at_creation) {
  cf_tv *x = cf_tensor_symbolic(f, CF_FLOAT, 1), *z = cf_tensor_symbolic(f, CF_FLOAT, 1);
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_neg(f, x));
  cf_fusion_add_output(f, z);
  DLManagedTensor *t = cf_tensor_host(CF_FLOAT, 1, (int64_t[]){4}), *out[2] = {NULL, NULL};
  const DLTensor *in = &t->dl_tensor;
  EXPECT_EXEC_ERROR(cf_fusion_execute(cache(), 1, &in, 2, out), "fusion_cache_create: verify: output T1 is not "
                                                                "computed by any expression and is not an input");
  cr_expect_null(out[0]);
  cf_tensor_free(t);
}

/* Every kind of segment a scheduler row takes (elementwise, inner and outer sums, a
 * softmax, a transpose, x - max, var_mean both ways) on empty inputs whose other sizes
 * multiply past int64: refused before planning, naming the input, never an overflow in a
 * heuristic (a sanitized probe over these found three) nor an internal error. */
static cf_tv *kind_of_segment(int kind, cf_tv *x) {
  int last = 2, first = 0;
  bool keep_last[3] = {false, false, true}, keep_first[3] = {true, false, false};
  cf_tv *var = NULL, *mean = NULL;
  switch (kind) {
  case 0: return cf_neg(f, x);
  case 1: return cf_sum(f, x, 1, &last);
  case 2: return cf_sum(f, x, 1, &first);
  case 3: return cf_div(f, cf_exp(f, x), cf_broadcast(f, cf_sum(f, cf_exp(f, x), 1, &last), 3, keep_last));
  case 4: return cf_transpose(f, x, 0, 2);
  case 5: return cf_sub(f, x, cf_broadcast(f, cf_max_reduce(f, x, 1, &last), 3, keep_last));
  case 6: cf_var_mean(f, x, 1, &last, 1, false, &var, &mean); return var;
  default: cf_var_mean(f, x, 1, &first, 1, true, &var, &mean); return cf_sub(f, x, cf_broadcast(f, cf_squeeze(f, mean, 1, &first), 3, keep_first));
  }
}

Test(execute_hostile, empty_inputs_of_huge_sizes_are_refused_by_every_kind) {
  int64_t shapes[2][3] = {{0, INT64_MAX, 2}, {INT64_MAX, 2, 0}};
  for (int kind = 0; kind < 8; kind++)
    for (int s = 0; s < 2; s++) {
      cf_fusion_cache_destroy(c), c = NULL;
      cf_fusion_destroy(f), f = cf_fusion_create();
      cf_tv *x = cf_tensor_symbolic(f, CF_FLOAT, 3);
      cf_fusion_add_input(f, x);
      cf_fusion_add_output(f, kind_of_segment(kind, x));
      DLTensor t = {.device = {kDLCPU, 0}, .ndim = 3, .dtype = {kDLFloat, 32, 1}, .shape = shapes[s]};
      DLManagedTensor *out = NULL;
      cr_expect_eq(exec1(&t, &out), CF_ERR_INVALID_ARGUMENT, "kind %d shape %d", kind, s);
      cr_expect(strstr(cf_fusion_cache_error(c), "execute: T0's sizes (those of 0 aside) multiply to more bytes than "
                                                 "int64 counts; no kernel can index it for T0_g_float[") != NULL,
                "kind %d shape %d: %s", kind, s, cf_fusion_cache_error(c));
      cr_expect_null(out);
    }
}
