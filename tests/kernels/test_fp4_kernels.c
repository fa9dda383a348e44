/* float4_e2m1fn in kernels (issue 26): fp4 -> float -> mul -> fp4 (and fp4 -> bfloat16)
 * through define and run on the host backend and cf_schedule_pointwise by hand (the
 * pointwise row vectorizes: every byte of the output written whole by one thread,
 * cf_fp4_pack), a hand schedule of blocks, threads and a vector of 2 on both
 * sides, each equal to the reference evaluator bit for bit; their CUDA source compiles with
 * NVRTC for sm_90a (software conversions: no Blackwell instruction); a schedule writing the
 * packed output one element per thread is refused with its message. */
#include <string.h>

#include "kernel_check.h"

#include "ir/dtype.h"

static cf_fusion *f;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(fp4_kernels, .init = setup, .fini = teardown);

/* Every code, in order, then again (x[i] is code i % 16). */
static DLManagedTensor *codes(int rank, const int64_t *sizes) {
  DLManagedTensor *t = cf_tensor_host(CF_FLOAT4_E2M1FN, rank, sizes);
  uint8_t *b = t->dl_tensor.data;
  for (int64_t i = 0; i < cf_tensor_numel(&t->dl_tensor); i += 2) b[i / 2] = (uint8_t)((i % 16) | ((i + 1) % 16) << 4);
  return t;
}

static cf_tv *scale(cf_tv *x) { return cf_cast(f, cf_mul_scalar(f, cf_cast(f, x, CF_FLOAT), 1.5), CF_FLOAT4_E2M1FN); }

Test(fp4_kernels, cast_mul_cast_in_define_and_run_and_nvrtc) {
  cf_tv *x = tu_input(f, CF_FLOAT4_E2M1FN, 2, (int64_t[]){6, 40});
  cf_fusion_add_output(f, scale(x));
  cf_fusion_add_output(f, cf_cast(f, x, CF_BFLOAT16));
  DLManagedTensor *in = codes(2, (int64_t[]){6, 40}), *want[2] = {0}, *got[2] = {0};
  const DLTensor *ins[1] = {&in->dl_tensor};
  cr_assert_eq(cf_fusion_evaluate(f, 1, ins, want), CF_OK, "evaluator: %s", cf_fusion_error(f));
  const cf_executor_options host = {.backend = CF_BACKEND_HOST};
  cf_fusion_cache *c = cf_fusion_cache_create(f, &host);
  cr_assert_eq(cf_fusion_execute(c, 1, ins, 2, got), CF_OK, "define and run: %s", cf_fusion_cache_error(c));
  kc_compare(got, want, 2, 0, "define and run");
  cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "pointwise");
  cf_fusion_cache_destroy(c);
  for (int k = 0; k < 2; k++) cf_tensor_free(got[k]), got[k] = NULL;
  /* the same schedule by hand: its NVRTC source, and the host executor */
  cr_assert_eq(cf_schedule_pointwise(f), CF_OK, "%s", cf_fusion_error(f));
  char *src = kc_compile_sm90(f);
  cr_expect(strstr(src, "__float2e2m1(") && strstr(src, "__e2m12float(") && strstr(src, "cf_fp4_pack("), "%s", src);
  free(src);
  DLManagedTensor *inv[1] = {in};
  kc_run_backend(f, CF_BACKEND_HOST, 1, inv, want, 0);
  if (cf_cuda_available(NULL)) kc_run_backend(f, CF_BACKEND_CUDA, 1, inv, want, 0);
  for (int k = 0; k < 2; k++) cf_tensor_free(want[k]);
  cf_tensor_free(in);
}

/* out = cache_before(y), merged, split [blocks, 32 threads, 2 vector]; x cached after the
 * same way: the packed sides are cf_fp4_unpack / cf_fp4_pack of 2 elements. */
Test(fp4_kernels, hand_schedule_with_vectors_of_two) {
  cf_tv *x = tu_input(f, CF_FLOAT4_E2M1FN, 2, (int64_t[]){5, 26});
  cf_tv *y = scale(x);
  cf_fusion_add_output(f, y);
  cf_tv *xc = cf_cache_after(f, x);
  cf_cache_before(f, y);
  cf_merge(f, y, 0);
  cf_split(f, y, 0, 2);
  cf_split(f, y, 0, 32);
  cf_propagate_transforms(f, y);
  cf_parallelize(f, y, 0, CF_PT_BIDX);
  cf_parallelize(f, y, 1, CF_PT_TIDX);
  cf_parallelize_all_like(f, y, 2, (cf_parallel_type[]){CF_PT_BIDX, CF_PT_TIDX});
  cf_parallelize(f, y, 2, CF_PT_VECTORIZE);
  cf_parallelize(f, xc, 2, CF_PT_VECTORIZE);
  cf_inline_most(f);
  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  DLManagedTensor *in[1] = {codes(2, (int64_t[]){5, 26})};
  const DLTensor *ins[1] = {&in[0]->dl_tensor};
  DLManagedTensor *want = NULL;
  cr_assert_eq(cf_fusion_evaluate(f, 1, ins, &want), CF_OK, "%s", cf_fusion_error(f));
  char *src = kc_compile_sm90(f);
  cr_expect(strstr(src, "cf_fp4_pack(") && strstr(src, "cf_fp4_unpack("), "%s", src);
  free(src);
  kc_run_backend(f, CF_BACKEND_HOST, 1, in, &want, 0);
  if (cf_cuda_available(NULL)) kc_run_backend(f, CF_BACKEND_CUDA, 1, in, &want, 0);
  cf_tensor_free(want), cf_tensor_free(in[0]);
}

/* One element per thread: two threads would write one byte's halves. */
Test(fp4_kernels, a_write_of_single_elements_is_refused) {
  cf_tv *x = tu_input(f, CF_FLOAT4_E2M1FN, 1, (int64_t[]){64});
  cf_tv *y = scale(x);
  cf_fusion_add_output(f, y);
  cf_split(f, y, 0, 32);
  cf_parallelize(f, y, 1, CF_PT_TIDX);
  cf_inline_most(f);
  const cf_executor_options host = {.backend = CF_BACKEND_HOST};
  cf_executor *e = cf_executor_create(&host);
  cr_expect_eq(cf_executor_compile(e, f), CF_ERR_INVALID_SCHEDULE);
  cr_expect_str_eq(cf_executor_error(e), "compile: T3_g___e2m1[iS4{2}, ithreadIdx.x5{32}] has dtype __e2m1 in global "
                                         "memory, two elements per byte: one thread must write both elements of a "
                                         "byte, so its innermost loop axis (ithreadIdx.x5{32}) must be vectorized by an "
                                         "even width (cache it before and vectorize the copy)");
  cf_executor_destroy(e);
}

/* A call whose tensors are not 16-byte aligned is devectorized, but for its packed tensors:
 * they are moved byte by byte at any address, and the packed write needs its vector (the
 * call was an internal error, the write refused by lowering). x (fp4) starts 3 bytes into
 * its buffer, w (float) 4 bytes in: out = fp4(float(x) * w) equals the evaluator. */
Test(fp4_kernels, misaligned_calls_keep_the_packed_vectors) {
  cf_tv *x = tu_input(f, CF_FLOAT4_E2M1FN, 2, NULL), *w = tu_input(f, CF_FLOAT, 2, NULL);
  cf_fusion_add_output(f, cf_cast(f, cf_mul(f, cf_cast(f, x, CF_FLOAT), w), CF_FLOAT4_E2M1FN));
  const int64_t sz[2] = {5, 32};
  DLManagedTensor *xb = codes(2, (int64_t[]){6, 32}), *wb = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){6, 32});
  for (int i = 0; i < 6 * 32; i++) ((float *)wb->dl_tensor.data)[i] = (float)(i % 7) * 0.75f - 2.0f;
  DLTensor xv = xb->dl_tensor, wv = wb->dl_tensor;
  xv.shape = wv.shape = (int64_t *)sz;
  xv.byte_offset = 3, wv.byte_offset = 4; /* element 6 of x's buffer, element 1 of w's */
  const DLTensor *ins[2] = {&xv, &wv};
  DLManagedTensor *want = NULL, *got = NULL;
  cr_assert_eq(cf_fusion_evaluate(f, 2, ins, &want), CF_OK, "evaluator: %s", cf_fusion_error(f));
  const cf_executor_options host = {.backend = CF_BACKEND_HOST};
  cf_fusion_cache *c = cf_fusion_cache_create(f, &host);
  cr_assert_eq(cf_fusion_execute(c, 2, ins, 1, &got), CF_OK, "define and run: %s", cf_fusion_cache_error(c));
  kc_compare(&got, &want, 1, 0, "define and run, misaligned");
  cf_fusion_cache_destroy(c);
  cf_tensor_free(got), cf_tensor_free(want), cf_tensor_free(xb), cf_tensor_free(wb);
}

/* An odd innermost extent of a symbolic packed input: define and run names the input
 * before it plans (it was add_input's message, of the plan's concrete copy). */
/* define and run of f's one input `in` and one output is refused with msg. */
static void expect_define_and_run_refusal(DLManagedTensor *in, const char *msg) {
  const DLTensor *ins[1] = {&in->dl_tensor};
  DLManagedTensor *out = NULL;
  const cf_executor_options host = {.backend = CF_BACKEND_HOST};
  cf_fusion_cache *c = cf_fusion_cache_create(f, &host);
  cr_expect_eq(cf_fusion_execute(c, 1, ins, 1, &out), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_cache_error(c), msg);
  cf_fusion_cache_destroy(c);
  cf_tensor_free(in);
}

Test(fp4_kernels, define_and_run_refuses_an_odd_innermost_extent) {
  cf_tv *x = tu_input(f, CF_FLOAT4_E2M1FN, 2, NULL);
  cf_fusion_add_output(f, cf_cast(f, x, CF_FLOAT));
  expect_define_and_run_refusal(cf_tensor_host(CF_FLOAT4_E2M1FN, 2, (int64_t[]){4, 5}),
                                "execute: input 0 (T0) has dtype __e2m1, two elements per byte, and innermost extent "
                                "5; it must be even");
}

/* An output whose innermost extent a call makes odd (a float input cast to fp4): the
 * evaluator and define and run refuse it, naming the output, as a kernel's run does. */
Test(fp4_kernels, an_odd_innermost_extent_of_an_output_is_refused) {
  cf_tv *x = tu_input(f, CF_FLOAT, 2, NULL);
  cf_fusion_add_output(f, cf_cast(f, x, CF_FLOAT4_E2M1FN));
  DLManagedTensor *in = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){2, 5}), *out = NULL;
  memset(in->dl_tensor.data, 0, 10 * sizeof(float));
  const DLTensor *ins[1] = {&in->dl_tensor};
  cr_expect_eq(cf_fusion_evaluate(f, 1, ins, &out), CF_ERR_INVALID_ARGUMENT);
  cr_expect_null(out);
  cr_expect_str_eq(cf_fusion_error(f), "evaluate: output 0 (T1) has dtype __e2m1, two elements per byte, and "
                                       "innermost extent 5; it must be even");
  cf_fusion_clear_error(f);
  expect_define_and_run_refusal(in, "execute: output 0 (T1) has dtype __e2m1, two elements per byte, and innermost "
                                    "extent 5; it must be even");
}

/* Symbolic sizes (issue 26): cf_schedule_pointwise splits the symbolic innermost axis by 2
 * before merging ([blockIdx.x, unswitch, threadIdx.x{128}, vector{2}]), so each thread
 * writes a byte whole; lowering validates the split at run time. Equal to the evaluator on
 * the host backend at two sizes with one kernel, its NVRTC sm_90a source compiles, and an
 * odd innermost extent is refused when run, naming the tensor. */
Test(fp4_kernels, symbolic_extents_through_the_pointwise_schedule) {
  cf_tv *x = tu_input(f, CF_FLOAT4_E2M1FN, 2, NULL);
  cf_fusion_add_output(f, scale(x));
  cr_assert_eq(cf_schedule_pointwise(f), CF_OK, "%s", cf_fusion_error(f));
  char *src = kc_compile_sm90(f);
  cr_expect(strstr(src, "cf_fp4_pack(") != NULL, "%s", src);
  free(src);
  const cf_executor_options host = {.backend = CF_BACKEND_HOST};
  cf_executor *e = cf_executor_create(&host);
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  const int64_t shapes[2][2] = {{3, 10}, {7, 300}};
  for (int k = 0; k < 2; k++) {
    DLManagedTensor *in = codes(2, shapes[k]), *want = NULL, *got = NULL;
    const DLTensor *ins[1] = {&in->dl_tensor};
    cr_assert_eq(cf_fusion_evaluate(f, 1, ins, &want), CF_OK, "%s", cf_fusion_error(f));
    cr_assert_eq(cf_executor_run(e, 1, ins, 1, &got), CF_OK, "%s", cf_executor_error(e));
    kc_compare(&got, &want, 1, 0, "symbolic, pointwise schedule");
    cf_tensor_free(in), cf_tensor_free(want), cf_tensor_free(got);
  }
  DLManagedTensor *odd = cf_tensor_host(CF_FLOAT4_E2M1FN, 2, (int64_t[]){2, 5}), *out = NULL;
  const DLTensor *oins[1] = {&odd->dl_tensor};
  cr_expect_eq(cf_executor_run(e, 1, oins, 1, &out), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_executor_error(e), "run: input 0 (T0) has dtype __e2m1, two elements per byte, and innermost "
                                         "extent 5; it must be even");
  cf_tensor_free(odd);
  cf_executor_destroy(e);
}

/* The 2-D tile (a bias broadcast along rows), symbolic: fp4(float(x) * b) with b [K]. */
Test(fp4_kernels, symbolic_extents_with_a_broadcast_bias) {
  cf_tv *x = tu_input(f, CF_FLOAT4_E2M1FN, 2, NULL), *b = tu_input(f, CF_FLOAT, 1, NULL);
  cf_tv *bb = cf_broadcast(f, b, 2, (bool[]){true, false});
  cf_fusion_add_output(f, cf_cast(f, cf_mul(f, cf_cast(f, x, CF_FLOAT), bb), CF_FLOAT4_E2M1FN));
  cr_assert_eq(cf_schedule_pointwise(f), CF_OK, "%s", cf_fusion_error(f));
  free(kc_compile_sm90(f));
  DLManagedTensor *in[2] = {codes(2, (int64_t[]){5, 258}), cf_tensor_host(CF_FLOAT, 1, (int64_t[]){258})};
  for (int i = 0; i < 258; i++) ((float *)in[1]->dl_tensor.data)[i] = (float)(i % 5) * 0.5f - 1.0f;
  const DLTensor *ins[2] = {&in[0]->dl_tensor, &in[1]->dl_tensor};
  DLManagedTensor *want = NULL;
  cr_assert_eq(cf_fusion_evaluate(f, 2, ins, &want), CF_OK, "%s", cf_fusion_error(f));
  kc_run_backend(f, CF_BACKEND_HOST, 2, in, &want, 0);
  if (cf_cuda_available(NULL)) kc_run_backend(f, CF_BACKEND_CUDA, 2, in, &want, 0);
  cf_tensor_free(want), cf_tensor_free(in[0]), cf_tensor_free(in[1]);
}

/* A segment writing a packed tensor is a trial for every row: the transpose row's threads
 * write one element each (lowering refuses it, so the row declines: that was an internal
 * error), and the fallback computes pairs, copied out by vectors of 2. A permute of fp4 and
 * a cast of complex128 to fp4 (the pointwise row: the packed output's vector of 2, the
 * complex input scalar), both through define and run, equal the evaluator. */
Test(fp4_kernels, permutes_and_wide_operands_in_define_and_run) {
  cf_tv *x = tu_input(f, CF_FLOAT4_E2M1FN, 2, (int64_t[]){6, 64});
  cf_fusion_add_output(f, cf_permute(f, x, 2, (int[]){1, 0}));
  cf_fusion *g = cf_fusion_create();
  cf_tv *z = tu_input(g, CF_COMPLEX_DOUBLE, 2, (int64_t[]){4, 6});
  cf_fusion_add_output(g, cf_cast(g, z, CF_FLOAT4_E2M1FN));
  DLManagedTensor *zin = cf_tensor_host(CF_COMPLEX_DOUBLE, 2, (int64_t[]){4, 6});
  for (int i = 0; i < 24; i++) ((double *)zin->dl_tensor.data)[2 * i] = i * 0.375 - 4, ((double *)zin->dl_tensor.data)[2 * i + 1] = 1;
  DLManagedTensor *xin = codes(2, (int64_t[]){6, 64});
  cf_fusion *fs[2] = {f, g};
  DLManagedTensor *ins[2] = {xin, zin};
  const char *rows[2] = {"fallback", "pointwise"};
  const cf_executor_options host = {.backend = CF_BACKEND_HOST};
  for (int k = 0; k < 2; k++) {
    const DLTensor *in[1] = {&ins[k]->dl_tensor};
    DLManagedTensor *want = NULL, *got = NULL;
    cr_assert_eq(cf_fusion_evaluate(fs[k], 1, in, &want), CF_OK, "%s", cf_fusion_error(fs[k]));
    cf_fusion_cache *c = cf_fusion_cache_create(fs[k], &host);
    cr_assert_eq(cf_fusion_execute(c, 1, in, 1, &got), CF_OK, "%s: %s", rows[k], cf_fusion_cache_error(c));
    kc_compare(&got, &want, 1, 0, rows[k]);
    cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), rows[k]);
    cf_fusion_cache_destroy(c);
    cf_tensor_free(want), cf_tensor_free(got), cf_tensor_free(ins[k]);
  }
  cf_fusion_destroy(g);
}

/* Two elements a byte: a tensor of 2 x 8 occupies 8 bytes, so an output in the next 8
 * bytes of one buffer does not overlap its input and runs (its footprint once counted a
 * byte an element, and a fresh output allocated right after an input was refused, now
 * and then, as aliasing it); one starting in the input's last byte is refused. */
Test(fp4_kernels, adjacent_tensors_do_not_overlap) {
  cf_tv *x = tu_input(f, CF_FLOAT4_E2M1FN, 2, (int64_t[]){2, 8});
  cf_fusion_add_output(f, scale(x));
  cr_assert_eq(cf_schedule_pointwise(f), CF_OK, "%s", cf_fusion_error(f));
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  DLManagedTensor *buf = codes(2, (int64_t[]){2, 24}), *want = NULL; /* 24 bytes */
  DLTensor in = buf->dl_tensor;
  in.shape = (int64_t[]){2, 8};
  in.strides = NULL;
  DLManagedTensor out = *buf, *o = &out;
  out.deleter = NULL; /* buf owns the storage */
  out.dl_tensor.shape = (int64_t[]){2, 8};
  out.dl_tensor.strides = NULL;
  out.dl_tensor.byte_offset = 8;
  const DLTensor *ins[1] = {&in};
  cr_expect_eq(cf_executor_run(e, 1, ins, 1, &o), CF_OK, "%s", cf_executor_error(e));
  cr_assert_eq(cf_fusion_evaluate(f, 1, ins, &want), CF_OK, "%s", cf_fusion_error(f));
  cr_expect_eq(memcmp((uint8_t *)buf->dl_tensor.data + 8, want->dl_tensor.data, 8), 0);
  out.dl_tensor.byte_offset = 7;
  cr_expect_eq(cf_executor_run(e, 1, ins, 1, &o), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_executor_error(e), "run: output 0 (T3) overlaps input 0 (T0) in memory; outputs may not alias "
                                         "inputs or other outputs");
  cf_tensor_free(want), cf_tensor_free(buf);
  cf_executor_destroy(e);
}
