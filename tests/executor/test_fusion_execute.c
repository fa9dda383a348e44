/* Define and run (cf_fusion_cache, cf_fusion_execute) on the host backend, against the
 * reference evaluator: pointwise and reduction fusions of several shapes (sizes that are
 * multiples of nothing, 1, long rows), constant and symbolic sizes, strided and
 * misaligned inputs, given outputs; the cache (hits, a new signature compiling anew); the
 * user's fusion unchanged; errors with their exact messages; segmentation (a reduction
 * read by a later op) and its CFUSER_DUMP=segments report. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>

#include "test_util.h"

TU_CACHE_SUITE(fusion_execute);

static const cf_executor_options host = {.backend = CF_BACKEND_HOST};

static cf_fusion_cache *cache(void) {
  if (!c) c = cf_fusion_cache_create(f, &host);
  cr_assert(c);
  return c;
}

/* Runs the cache on the inputs and compares every output with the evaluator's. */
static void check_call(int nin, DLManagedTensor **in, double tol) {
  tu_assert_io_fits(f, nin);
  const DLTensor *ins[TU_MAX_IO];
  for (int i = 0; i < nin; i++) ins[i] = &in[i]->dl_tensor;
  int nout = cf_fusion_num_outputs(f);
  DLManagedTensor *got[TU_MAX_IO] = {0}, *want[TU_MAX_IO] = {0};
  cr_assert_eq(cf_fusion_execute(cache(), nin, ins, nout, got), CF_OK, "%s", cf_fusion_cache_error(c));
  cr_assert_eq(cf_fusion_evaluate(f, nin, ins, want), CF_OK, "%s", cf_fusion_error(f));
  for (int o = 0; o < nout; o++) {
    char msg[256] = "";
    cr_expect(cf_tensor_allclose(&got[o]->dl_tensor, &want[o]->dl_tensor, tol, tol, msg, sizeof msg), "output %d: %s",
              o, msg);
    cf_tensor_free(got[o]);
    cf_tensor_free(want[o]);
  }
}

static DLManagedTensor *rand_tensor(int rank, const int64_t *sizes, uint64_t seed) {
  DLManagedTensor *t = cf_tensor_host(CF_FLOAT, rank, sizes);
  cf_tensor_fill_random(&t->dl_tensor, seed);
  return t;
}

/* Calls with random float inputs of the given sizes (all of one shape). */
static void check_shape(int nin, int rank, const int64_t *sizes, double tol) {
  cr_assert(nin <= TU_MAX_IO);
  DLManagedTensor *in[TU_MAX_IO];
  for (int i = 0; i < nin; i++) in[i] = rand_tensor(rank, sizes, (uint64_t)i + 1);
  check_call(nin, in, tol);
  for (int i = 0; i < nin; i++) cf_tensor_free(in[i]);
}

/* out = a * b + c */
static void build_fma(int rank, const int64_t *sizes) {
  cf_tv *in[3];
  for (int i = 0; i < 3; i++) {
    in[i] = sizes ? cf_tensor_concrete(f, CF_FLOAT, rank, sizes) : cf_tensor_symbolic(f, CF_FLOAT, rank);
    cf_fusion_add_input(f, in[i]);
  }
  cf_fusion_add_output(f, cf_add(f, cf_mul(f, in[0], in[1]), in[2]));
}

/* out[r] = sum(exp(x[r, :]) * 2) */
static void build_row_sum(const int64_t *sizes) {
  cf_tv *x = sizes ? cf_tensor_concrete(f, CF_FLOAT, 2, sizes) : cf_tensor_symbolic(f, CF_FLOAT, 2);
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_sum(f, cf_mul_scalar(f, cf_exp(f, x), 2.0), 1, (int[]){1}));
}

static void expect_counts(int entries, int kernels, int64_t hits, int64_t misses) {
  cr_expect_eq(cf_fusion_cache_num_entries(c), entries, "entries %d", cf_fusion_cache_num_entries(c));
  cr_expect_eq(cf_fusion_cache_num_kernels(c), kernels, "kernels %d", cf_fusion_cache_num_kernels(c));
  cr_expect_eq(cf_fusion_cache_hits(c), hits, "hits %lld", (long long)cf_fusion_cache_hits(c));
  cr_expect_eq(cf_fusion_cache_misses(c), misses, "misses %lld", (long long)cf_fusion_cache_misses(c));
}

/* ---- pointwise -------------------------------------------------------------------------- */

Test(fusion_execute, pointwise_constant_shapes) {
  int64_t shapes[][2] = {{5, 129}, {3, 4}, {1000, 3}};
  for (int i = 0; i < 3; i++) {
    cf_fusion_cache_destroy(c);
    c = NULL;
    cf_fusion_destroy(f);
    f = cf_fusion_create();
    build_fma(2, shapes[i]);
    check_shape(3, 2, shapes[i], 1e-6);
    cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "pointwise");
    cr_expect_eq(cf_fusion_cache_last_segments(c), 1);
  }
}

Test(fusion_execute, pointwise_symbolic_sizes_of_one_and_odd) {
  build_fma(3, NULL);
  int64_t shapes[][3] = {{1, 1, 1}, {3, 1, 17}, {2, 7, 1001}};
  for (int i = 0; i < 3; i++) check_shape(3, 3, shapes[i], 1e-6);
  expect_counts(3, 3, 0, 3);
}

Test(fusion_execute, second_call_hits_and_new_signature_compiles) {
  build_fma(1, NULL);
  check_shape(3, 1, (int64_t[]){100}, 1e-6);
  expect_counts(1, 1, 0, 1);
  check_shape(3, 1, (int64_t[]){100}, 1e-6);
  expect_counts(1, 1, 1, 1);
  check_shape(3, 1, (int64_t[]){101}, 1e-6);
  expect_counts(2, 2, 1, 2);
  check_shape(3, 1, (int64_t[]){100}, 1e-6);
  expect_counts(2, 2, 2, 2);
}

/* Two outputs of inputs that share no op: the pointwise scheduler's propagation from the
 * first output does not reach the second, which once kept its whole axis and had it
 * vectorized ("cannot vectorize axis 0 (iV5{64}) ..."); each component is now scheduled
 * from its own output. */
Test(fusion_execute, pointwise_of_two_unconnected_components) {
  cf_tv *a = cf_tensor_symbolic(f, CF_FLOAT, 1), *b = cf_tensor_symbolic(f, CF_FLOAT, 1);
  cf_fusion_add_input(f, a);
  cf_fusion_add_input(f, b);
  cf_fusion_add_output(f, cf_add(f, a, a));
  cf_fusion_add_output(f, cf_mul(f, b, b));
  int64_t shapes[][1] = {{64}, {1000}, {7}};
  for (int i = 0; i < 3; i++) check_shape(2, 1, shapes[i], 1e-6);
  cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "pointwise");
}

/* bias + gelu (a [rows, cols] input, a [cols] bias): the pointwise scheduler takes the 2-D
 * break point, rows on blockIdx.y and each row's columns on blockIdx.x; with short rows
 * (under a block of threads) it stays 1-D; rows of an odd length, which take no vector,
 * run as the flat tensor with vectors of 4 and a tail (issue 22: 3003 elements, 751
 * vectors, 6 blocks). */
Test(fusion_execute, bias_gelu_takes_the_break_point) {
  cf_tv *x = cf_tensor_symbolic(f, CF_FLOAT, 2), *b = cf_tensor_symbolic(f, CF_FLOAT, 1);
  cf_fusion_add_input(f, x);
  cf_fusion_add_input(f, b);
  cf_fusion_add_output(f, cf_gelu(f, cf_add(f, x, cf_broadcast(f, b, 2, (bool[]){true, false}))));
  int64_t shapes[][2] = {{64, 1024}, {3, 1001}, {5, 17}};
  int64_t want_grid[][2] = {{2, 64}, {6, 1}, {1, 1}};
  const char *want_params[] = {"break=1 vector=4 threads=128",
                               "break=none (vectors of 1 along rows, 4 along the flat tensor) vector=4 tail threads=128",
                               "break=none (every inner half has fewer than 128 elements) vector=4 tail threads=128"};
  for (int i = 0; i < 3; i++) {
    DLManagedTensor *in[2] = {rand_tensor(2, shapes[i], 1), rand_tensor(1, &shapes[i][1], 2)};
    check_call(2, in, 1e-5);
    cf_tensor_free(in[0]);
    cf_tensor_free(in[1]);
    cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "pointwise");
    cr_expect_str_eq(cf_fusion_cache_last_params(c, 0), want_params[i]);
    cf_launch_params lp = cf_executor_last_launch_params(cf_fusion_cache_last_executor(c, 0));
    cr_expect(lp.grid[0] == want_grid[i][0] && lp.grid[1] == want_grid[i][1] && lp.block[0] == 128,
              "shape %d: grid %lldx%lld, block %lld", i, (long long)lp.grid[0], (long long)lp.grid[1],
              (long long)lp.block[0]);
  }
}

/* Zero elements: compiled, nothing launched. */
Test(fusion_execute, empty_tensors) {
  build_fma(2, NULL);
  check_shape(3, 2, (int64_t[]){0, 5}, 0);
  check_shape(3, 2, (int64_t[]){3, 0}, 0);
}

/* Many signatures: the table grows, nothing is dropped. */
Test(fusion_execute, many_signatures_are_all_kept) {
  cf_tv *x = cf_tensor_symbolic(f, CF_FLOAT, 1);
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_neg(f, x));
  for (int round = 0; round < 2; round++)
    for (int64_t n = 1; n <= 40; n++) check_shape(1, 1, &n, 0);
  expect_counts(40, 40, 40, 40);
}

Test(fusion_execute, given_outputs_and_a_misaligned_input) {
  build_fma(1, (int64_t[]){64});
  const int64_t n = 64, n1 = 65;
  DLManagedTensor *in[3], *big = rand_tensor(1, &n1, 9), *out = cf_tensor_host(CF_FLOAT, 1, &n);
  for (int i = 0; i < 3; i++) in[i] = rand_tensor(1, &n, (uint64_t)i + 1);
  const DLTensor *ins[3] = {&in[0]->dl_tensor, &in[1]->dl_tensor, &in[2]->dl_tensor};
  DLManagedTensor *outs[1] = {out}, *want[1] = {0};
  cr_assert_eq(cf_fusion_execute(cache(), 3, ins, 1, outs), CF_OK, "%s", cf_fusion_cache_error(c));
  cr_expect_eq(outs[0], out);
  cr_assert_eq(cf_fusion_evaluate(f, 3, ins, want), CF_OK);
  cr_expect(cf_tensor_allclose(&out->dl_tensor, &want[0]->dl_tensor, 1e-6, 1e-6, NULL, 0));
  cf_tensor_free(want[0]);
  /* Input 1 four bytes into a buffer: not 16-byte aligned, a devectorized kernel of its own. */
  DLTensor shifted = big->dl_tensor;
  shifted.shape = (int64_t *)&n;
  shifted.byte_offset = 4;
  ins[1] = &shifted;
  cr_assert_eq(cf_fusion_execute(c, 3, ins, 1, outs), CF_OK, "%s", cf_fusion_cache_error(c));
  cr_assert_eq(cf_fusion_evaluate(f, 3, ins, want), CF_OK, "%s", cf_fusion_error(f));
  cr_expect(cf_tensor_allclose(&out->dl_tensor, &want[0]->dl_tensor, 1e-6, 1e-6, NULL, 0));
  expect_counts(2, 2, 0, 2);
  cf_tensor_free(want[0]);
  for (int i = 0; i < 3; i++) cf_tensor_free(in[i]);
  cf_tensor_free(big);
  cf_tensor_free(out);
}

Test(fusion_execute, strided_input) {
  cf_tv *x = cf_tensor_strided(f, CF_FLOAT, 2), *y = cf_tensor_symbolic(f, CF_FLOAT, 2);
  cf_fusion_add_input(f, x);
  cf_fusion_add_input(f, y);
  cf_fusion_add_output(f, cf_sub(f, x, y));
  DLManagedTensor *in[2] = {cf_tensor_host_strided(CF_FLOAT, 2, (int64_t[]){6, 5}, (int64_t[]){1, 6}),
                            rand_tensor(2, (int64_t[]){6, 5}, 3)};
  cf_tensor_fill_random(&in[0]->dl_tensor, 4);
  check_call(2, in, 0);
  cf_tensor_free(in[0]);
  cf_tensor_free(in[1]);
}

Test(fusion_execute, users_fusion_is_unchanged) {
  build_fma(2, NULL);
  char *math = tu_capture_fusion(cf_fusion_print_math, f), *tr = tu_capture_fusion(cf_fusion_print_transforms, f);
  check_shape(3, 2, (int64_t[]){4, 33}, 1e-6);
  char *math2 = tu_capture_fusion(cf_fusion_print_math, f), *tr2 = tu_capture_fusion(cf_fusion_print_transforms, f);
  cr_expect_str_eq(math2, math);
  cr_expect_str_eq(tr2, tr);
  free(math);
  free(tr);
  free(math2);
  free(tr2);
}

/* The cache keeps its own copy: the user may destroy the fusion after creating it. */
Test(fusion_execute, fusion_destroyed_after_create) {
  build_fma(1, NULL);
  cache();
  cf_fusion *keep = f;
  f = cf_fusion_create();
  build_fma(1, NULL); /* the evaluator's copy of the same math */
  cf_fusion_destroy(keep);
  check_shape(3, 1, (int64_t[]){10}, 1e-6);
}

/* The asynchronous call completes before returning on the host backend. */
Test(fusion_execute, async_and_synchronize) {
  build_fma(1, NULL);
  cr_expect_eq(cf_fusion_cache_synchronize(cache()), CF_OK);
  DLManagedTensor *a = rand_tensor(1, (int64_t[]){9}, 1), *out[1] = {0}, *want[1] = {0};
  const DLTensor *ins[3] = {&a->dl_tensor, &a->dl_tensor, &a->dl_tensor};
  cr_assert_eq(cf_fusion_execute_async(c, NULL, 3, ins, 1, out), CF_OK, "%s", cf_fusion_cache_error(c));
  cr_expect_eq(cf_fusion_cache_synchronize(c), CF_OK);
  cr_assert_eq(cf_fusion_evaluate(f, 3, ins, want), CF_OK);
  cr_expect(cf_tensor_allclose(&out[0]->dl_tensor, &want[0]->dl_tensor, 1e-6, 1e-6, NULL, 0));
  cf_tensor_free(out[0]);
  cf_tensor_free(want[0]);
  cf_tensor_free(a);
}

/* ---- reductions --------------------------------------------------------------------------- */

Test(fusion_execute, row_sums_of_several_shapes) {
  build_row_sum(NULL);
  int64_t shapes[][2] = {{3, 5}, {1, 1}, {2, 1000}, {4, 4099}, {129, 3}, {3, 0}};
  for (int i = 0; i < 6; i++) check_shape(1, 2, shapes[i], 1e-4);
  cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "reduction");
  expect_counts(6, 6, 0, 6);
}

/* Two kept axes: merged into one row axis after the rfactor. */
Test(fusion_execute, row_sums_of_3d_tensors) {
  cf_tv *x = cf_tensor_symbolic(f, CF_FLOAT, 3);
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_sum(f, cf_exp(f, x), 1, (int[]){2}));
  int64_t shapes[][3] = {{2, 3, 4}, {3, 5, 300}, {1, 1, 1}};
  for (int i = 0; i < 3; i++) check_shape(1, 3, shapes[i], 1e-4);
  cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "reduction");
}

Test(fusion_execute, constant_row_sum_hits) {
  build_row_sum((int64_t[]){7, 130});
  check_shape(1, 2, (int64_t[]){7, 130}, 1e-4);
  check_shape(1, 2, (int64_t[]){7, 130}, 1e-4);
  expect_counts(1, 1, 1, 1);
}

/* ---- segmentation --------------------------------------------------------------------------- */

/* y = x / broadcast(sum(x)): the inner persistent scheduler takes it whole for rows of any
 * length (registers, shared memory, then multipass). Transposed (the output y^T), no
 * scheduler takes it whole: it runs as a reduction segment and a transpose one, the sum in
 * an intermediate the cache allocates. */
static void build_normalize(bool also_output_sum, bool transposed) {
  cf_tv *x = cf_tensor_symbolic(f, CF_FLOAT, 2);
  cf_fusion_add_input(f, x);
  cf_tv *s = cf_sum(f, x, 1, (int[]){1});
  if (also_output_sum) cf_fusion_add_output(f, s);
  cf_tv *y = cf_div(f, x, cf_broadcast(f, s, 2, (bool[]){false, true}));
  cf_fusion_add_output(f, transposed ? cf_transpose(f, y, 0, 1) : y);
}

Test(fusion_execute, reduction_then_pointwise_segments) {
  build_normalize(false, false);
  int64_t shapes[][2] = {{3, 5}, {1, 1}, {2, 17000}, {2, 70000}};
  for (int i = 0; i < 4; i++) {
    check_shape(1, 2, shapes[i], 1e-4);
    cr_expect_eq(cf_fusion_cache_last_segments(c), 1);
    cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "inner_persistent");
  }
  cf_fusion_cache_destroy(c), c = NULL;
  cf_fusion_destroy(f), f = cf_fusion_create();
  build_normalize(false, true);
  check_shape(1, 2, shapes[2], 1e-4);
  cr_expect_eq(cf_fusion_cache_last_segments(c), 2); /* the normalization whole, then the transpose */
  cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "inner_persistent");
  cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 1), "transpose");
  cr_expect_null(cf_fusion_cache_last_scheduler(c, 2));
  check_shape(1, 2, shapes[2], 1e-4);
  expect_counts(1, 2, 1, 1);
}

/* Each segment of the last call: its executor (launch parameters, source) and its CUDA
 * kernel printed from the scheduled copy it kept; out of range is NULL or an error. */
Test(fusion_execute, last_executor_and_print_kernel_per_segment) {
  build_normalize(false, true);
  cr_expect_null(cf_fusion_cache_last_executor(cache(), 0));
  cr_expect_eq(cf_fusion_cache_print_kernel(c, 0, NULL), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_cache_error(c), "print_kernel: segment 0 out of range: the last call ran 0");
  check_shape(1, 2, (int64_t[]){2, 17000}, 1e-4);
  for (int i = 0; i < 2; i++) {
    cf_executor *e = cf_fusion_cache_last_executor(c, i);
    cr_assert(e);
    cr_expect_eq(cf_executor_backend(e), CF_BACKEND_HOST);
    cr_expect(cf_executor_last_launch_params(e).block[0] > 1, "segment %d: %lld threads", i,
              (long long)cf_executor_last_launch_params(e).block[0]);
    cr_expect(strstr(cf_executor_source(e), "cfuser_kernel"), "segment %d", i);
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    cr_assert_eq(cf_fusion_cache_print_kernel(c, i, m), CF_OK, "%s", cf_fusion_cache_error(c));
    fclose(m);
    cr_expect(strncmp(text, "extern \"C\" __global__", 21) == 0, "segment %d: %s", i, text);
    /* 2 rows of 132 SMs: each split over blocks, a grid all-reduce */
    cr_expect(strstr(text, i == 0 ? "grid all-reduce" : "threadIdx.x") != NULL, "segment %d: %s", i, text);
    free(text);
  }
  cr_expect_null(cf_fusion_cache_last_executor(c, 2));
  cr_expect_null(cf_fusion_cache_last_executor(c, -1));
  cr_expect_null(cf_fusion_cache_last_executor(NULL, 0));
  cr_expect_eq(cf_fusion_cache_print_kernel(c, 2, NULL), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_cache_error(c), "print_kernel: segment 2 out of range: the last call ran 2");
  cr_expect_eq(cf_fusion_cache_print_kernel(NULL, 0, NULL), CF_ERR_INVALID_ARGUMENT);
}

/* The sum is an output too: the second segment reads it from the caller's output. */
Test(fusion_execute, segment_reads_an_output) {
  build_normalize(true, true);
  check_shape(1, 2, (int64_t[]){2, 17000}, 1e-4);
  check_shape(1, 2, (int64_t[]){2, 17000}, 1e-4);
  expect_counts(1, 2, 1, 1);
}

Test(fusion_execute, dump_segments) {
  cr_redirect_stderr();
  setenv("CFUSER_DUMP", "segments", 1);
  build_normalize(false, true);
  check_shape(1, 2, (int64_t[]){2, 170}, 1e-4);
  unsetenv("CFUSER_DUMP");
  fflush(stderr);
  FILE *err = cr_get_redirected_stderr();
  char text[8192] = "";
  size_t n = fread(text, 1, sizeof text - 1, err);
  text[n] = 0;
  cr_expect(strstr(text, "=== define and run: no scheduler accepts the whole fusion (welford_translate: no Welford "
                         "reduction whose states only its fields read; matmul: the sum's input T0 is not a mul read only "
                         "by it; reduction: T4 is computed by permute, not an elementwise op or a broadcast; inner_persistent: T4 is computed by permute, not an elementwise op, a "
                         "broadcast or a reduction; outer_persistent: T1 reduces an axis after a kept one (only "
                         "outermost axes); transpose: T1 is computed by sum, not an elementwise op, a permute or a "
                         "broadcast; pointwise: T1 is computed by sum; the pointwise scheduler takes elementwise ops "
                         "only; view: a view is one reshape alone; fallback: 4 ops (it takes one op, a Welford "
                         "reduction with its fields)); 2 segments ===\n"),
            "%s", text);
  cr_expect(strstr(text, "=== define and run: segment 0 of 2: scheduler inner_persistent (registers threads=32x2 "
                         "persistent=3 vector=2 rows=blockIdx.x) ===\n"
                         "refused by: welford_translate: no Welford reduction whose states only its fields read; "
                         "matmul: the sum's input T0 is not a mul read only by it; reduction: T2 broadcasts a result of the reduction T1 (a normalization)\n"
                         "Inputs:\n  T0_g_float[iS0{2}, iS1{170}]\nOutputs:\n  T3_g_float[iS6{2}, iS7{170}]\n"),
            "%s", text);
  cr_expect(strstr(text, "=== define and run: segment 1 of 2: scheduler transpose (tile=64x64 threads=64x8 swizzle=xor "
                         "staged=T3) ===\n"
                         "refused by: welford_translate: no Welford reduction whose states only its fields read; "
                         "matmul: no sum of a product; reduction: T4 is computed by permute, not an elementwise op or a "
                         "broadcast; inner_persistent: "
                         "T4 is computed by permute, not an elementwise op, a broadcast or a reduction; outer_persistent: T4 is "
                         "computed by permute, not an elementwise op, a broadcast or a reduction\nInputs:\n"
                         "  T3_g_float[iS6{2}, iS7{170}]\nOutputs:\n  T4_g_float[iS9{170}, iS8{2}]\n"),
            "%s", text);
  cr_expect(strstr(text, "} // %kernel_math\nkernel: new\n=== define and run: segment 1 of 2") != NULL, "%s", text);
}

/* ---- errors --------------------------------------------------------------------------------- */

static cf_status call_with(int nin, const DLTensor *const *ins) {
  DLManagedTensor *out[1] = {0};
  cf_status s = cf_fusion_execute(cache(), nin, ins, 1, out);
  cf_tensor_free(out[0]);
  return s;
}

Test(fusion_execute, wrong_number_of_inputs_and_outputs) {
  build_fma(1, NULL);
  DLManagedTensor *a = rand_tensor(1, (int64_t[]){4}, 1);
  const DLTensor *ins[3] = {&a->dl_tensor, &a->dl_tensor, &a->dl_tensor};
  cr_expect_eq(call_with(2, ins), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_cache_error(c), "execute: expected 3 inputs, got 2");
  DLManagedTensor *out[2] = {0};
  cr_expect_eq(cf_fusion_execute(c, 3, ins, 2, out), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_cache_error(c), "execute: expected 1 outputs, got 2");
  ins[2] = NULL;
  cr_expect_eq(call_with(3, ins), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_cache_error(c), "execute: input 2 (T2) is NULL");
  expect_counts(0, 0, 0, 0);
  cf_tensor_free(a);
}

Test(fusion_execute, wrong_dtype_rank_and_size) {
  build_fma(1, (int64_t[]){4});
  DLManagedTensor *a = rand_tensor(1, (int64_t[]){4}, 1), *d = cf_tensor_host(CF_DOUBLE, 1, (int64_t[]){4});
  DLManagedTensor *m = rand_tensor(2, (int64_t[]){4, 1}, 2), *five = rand_tensor(1, (int64_t[]){5}, 3);
  cr_expect_eq(call_with(3, (const DLTensor *[]){&a->dl_tensor, &d->dl_tensor, &a->dl_tensor}), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_cache_error(c), "execute: input 1 (T1) has dtype double, expected float");
  cr_expect_eq(call_with(3, (const DLTensor *[]){&a->dl_tensor, &a->dl_tensor, &m->dl_tensor}), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_cache_error(c), "execute: input 2 (T2) has 2 dimensions, expected 1");
  cr_expect_eq(call_with(3, (const DLTensor *[]){&five->dl_tensor, &a->dl_tensor, &a->dl_tensor}), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_cache_error(c), "execute: input 0 (T0) has size 5 in dimension 0, expected 4");
  expect_counts(0, 0, 0, 0);
  /* The cache still works after errors. */
  cr_expect_eq(call_with(3, (const DLTensor *[]){&a->dl_tensor, &a->dl_tensor, &a->dl_tensor}), CF_OK);
  cf_tensor_free(a);
  cf_tensor_free(d);
  cf_tensor_free(m);
  cf_tensor_free(five);
}

/* Symbolic sizes an op assumed equal, given different values. */
Test(fusion_execute, symbolic_sizes_that_disagree) {
  build_fma(1, NULL);
  DLManagedTensor *a = rand_tensor(1, (int64_t[]){4}, 1), *b = rand_tensor(1, (int64_t[]){5}, 2);
  cr_expect_eq(call_with(3, (const DLTensor *[]){&a->dl_tensor, &b->dl_tensor, &a->dl_tensor}), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_cache_error(c), "execute: mul: axis 0 has extent 5 in T1 but 4 in T3");
  cf_tensor_free(a);
  cf_tensor_free(b);
}

/* max and sum of one prologue, both outputs: one inner persistent kernel for rows of any
 * length (the exp recomputed by each pass past shared memory). */
Test(fusion_execute, two_reductions_of_one_prologue) {
  cf_tv *x = cf_tensor_symbolic(f, CF_FLOAT, 2);
  cf_fusion_add_input(f, x);
  cf_tv *e = cf_exp(f, x);
  cf_fusion_add_output(f, cf_sum(f, e, 1, (int[]){1}));
  cf_fusion_add_output(f, cf_max_reduce(f, e, 1, (int[]){1}));
  const int64_t shapes[][2] = {{3, 200}, {2, 17000}, {2, 70000}};
  for (int k = 0; k < 3; k++) {
    check_shape(1, 2, shapes[k], 1e-4);
    cr_expect_eq(cf_fusion_cache_last_segments(c), 1);
    cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "inner_persistent");
  }
}

/* softmax: one inner persistent kernel for rows of any length: registers, shared memory
 * (17000 floats), multipass (70000: each pass reads the row again), never a cascade of
 * kernels. */
Test(fusion_execute, softmax_in_one_kernel) {
  cf_tv *x = cf_tensor_symbolic(f, CF_FLOAT, 2);
  cf_fusion_add_input(f, x);
  bool keep[2] = {false, true};
  cf_tv *m = cf_broadcast(f, cf_max_reduce(f, x, 1, (int[]){1}), 2, keep);
  cf_tv *e = cf_exp(f, cf_sub(f, x, m));
  cf_tv *s = cf_broadcast(f, cf_sum(f, e, 1, (int[]){1}), 2, keep);
  cf_fusion_add_output(f, cf_div(f, e, s));
  const int64_t shapes[][2] = {{5, 333}, {2, 17000}, {2, 70000}};
  for (int k = 0; k < 3; k++) {
    check_shape(1, 2, shapes[k], 1e-5);
    cr_expect_eq(cf_fusion_cache_last_segments(c), 1);
    cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "inner_persistent");
  }
  expect_counts(3, 3, 0, 3);
}

/* x + transpose(x): x read in two axis orders, which no scheduler takes whole and neither
 * cut at a reduction splits: every op alone, the permute under the transpose scheduler. */
Test(fusion_execute, two_axis_orders_run_op_by_op) {
  cf_tv *x = cf_tensor_symbolic(f, CF_FLOAT, 2);
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_add(f, x, cf_transpose(f, x, 0, 1)));
  const int64_t shapes[][2] = {{3, 3}, {1, 1}, {33, 33}};
  for (int k = 0; k < 3; k++) check_shape(1, 2, shapes[k], 0);
  cr_expect_eq(cf_fusion_cache_last_segments(c), 2);
  cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "transpose");
  cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 1), "pointwise");
}

/* A sum, then a permute of it added to it: the second level has no scheduler until each op
 * runs alone. */
Test(fusion_execute, a_level_of_two_axis_orders_runs_op_by_op) {
  cf_tv *x = cf_tensor_symbolic(f, CF_FLOAT, 3);
  cf_fusion_add_input(f, x);
  cf_tv *s = cf_sum(f, x, 1, (int[]){2});
  cf_fusion_add_output(f, cf_add(f, s, cf_transpose(f, s, 0, 1)));
  check_shape(1, 3, (int64_t[]){3, 3, 4}, 1e-5);
  cr_expect_eq(cf_fusion_cache_last_segments(c), 3);
}

/* A sum of a tensor with a broadcast axis ([3, 1, 5], the 1 a broadcast), refused by
 * every scheduler once: the reduction scheduler moves broadcast axes outermost. */
Test(fusion_execute, sum_of_a_broadcast_axis_input) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 3, (int64_t[]){3, 1, 5});
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_sum(f, x, 1, (int[]){2}));
  check_shape(1, 3, (int64_t[]){3, 1, 5}, 1e-5);
  cr_expect_eq(cf_fusion_cache_last_segments(c), 1);
  cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "reduction");
}

/* The same sum of a broadcast computed in the fusion, once refused in every cut: the
 * broadcast is the reduction's prologue. */
Test(fusion_execute, sum_of_a_broadcast_in_the_fusion) {
  cf_tv *x = cf_tensor_symbolic(f, CF_FLOAT, 2);
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_sum(f, cf_broadcast(f, x, 3, (bool[]){false, true, false}), 1, (int[]){2}));
  check_shape(1, 2, (int64_t[]){3, 5}, 1e-5);
  cr_expect_eq(cf_fusion_cache_last_segments(c), 1);
  cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "reduction");
}

/* var_mean over axes around a kept one: the cut after the Welford reduction once made its
 * states a segment's output ("add_output: T1 holds Welford states"); it runs whole, also
 * for the issue's [8, 1, 6] (its extent of 1 decides no layout): translated to two sums
 * under the inner persistent scheduler (kept axes first) as var_mean over rows is, while
 * a block keeps each channel's row; 3 long channels split over the grid: the reduction
 * scheduler's Welford (the fields and the division its epilogue). */
Test(fusion_execute, middle_axes_var_mean_runs_whole) {
  cf_tv *x = cf_tensor_symbolic(f, CF_FLOAT, 3), *var = NULL, *mean = NULL;
  cf_fusion_add_input(f, x);
  cr_assert_eq(cf_var_mean(f, x, 2, (int[]){0, 2}, 1, false, &var, &mean), CF_OK, "%s", cf_fusion_error(f));
  cf_fusion_add_output(f, var);
  cf_fusion_add_output(f, mean);
  const int64_t shapes[][3] = {{4, 7, 33}, {8, 1, 6}, {64, 3, 1000}};
  for (int k = 0; k < 3; k++) {
    check_shape(1, 3, shapes[k], 1e-4);
    cr_expect_eq(cf_fusion_cache_last_segments(c), 1);
    cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), k < 2 ? "welford_translate" : "reduction");
  }
}

/* var_mean over long rows: while registers or shared memory hold a row (132 rows, a block
 * each on an H100), translated to two sums under the inner persistent scheduler (the row
 * read once); past them, or with fewer rows than SMs (each split over the grid), the
 * reduction scheduler takes the Welford reduction, its fields and the variance's division
 * as its epilogue. */
Test(fusion_execute, var_mean_of_long_rows_runs_under_the_reduction_scheduler) {
  cf_tv *x = cf_tensor_symbolic(f, CF_FLOAT, 2), *var = NULL, *mean = NULL;
  cf_fusion_add_input(f, x);
  cr_assert_eq(cf_var_mean(f, x, 1, (int[]){1}, 1, false, &var, &mean), CF_OK, "%s", cf_fusion_error(f));
  cf_fusion_add_output(f, var);
  cf_fusion_add_output(f, mean);
  const int64_t shapes[][2] = {{132, 17000}, {132, 9001}, {2, 17000}, {1, 16384}, {132, 70000}};
  for (int k = 0; k < 5; k++) {
    check_shape(1, 2, shapes[k], 1e-4);
    cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), k < 2 ? "welford_translate" : "reduction", "%lld rows of %lld",
                     (long long)shapes[k][0], (long long)shapes[k][1]);
  }
}

/* ---- the Welford translation ----------------------------------------------------------------- */

/* The kernel of segment i of the last call, printed from the copy it scheduled. */
static char *kernel_text(int i) {
  char *text = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&text, &len);
  cr_assert_eq(cf_fusion_cache_print_kernel(c, i, m), CF_OK, "%s", cf_fusion_cache_error(c));
  fclose(m);
  return text;
}

/* Whether segment i of the last call still merges Welford states. */
static bool runs_welford(int i) {
  char *text = kernel_text(i);
  bool w = strstr(text, "welford") != NULL;
  free(text);
  return w;
}

/* layer norm as users write it: var, mean = var_mean(x, -1, correction=0, keepdim=True);
 * y = (x - mean) * rsqrt(var + eps) * w + b, over symbolic [rows, cols] of dtype dt
 * (computed in float: Welford folds half and bfloat16 into float states). */
static void build_var_mean_layer_norm(cf_dtype dt) {
  cf_tv *x = cf_tensor_symbolic(f, dt, 2), *w = cf_tensor_symbolic(f, dt, 1), *b = cf_tensor_symbolic(f, dt, 1);
  cf_fusion_add_input(f, x);
  cf_fusion_add_input(f, w);
  cf_fusion_add_input(f, b);
  cf_tv *var = NULL, *mean = NULL;
  cr_assert_eq(cf_var_mean(f, x, 1, (int[]){-1}, 0, true, &var, &mean), CF_OK, "%s", cf_fusion_error(f));
  cf_tv *xf = dt == CF_FLOAT ? x : cf_cast(f, x, CF_FLOAT);
  bool outer[2] = {true, false};
  cf_tv *wf = cf_broadcast(f, dt == CF_FLOAT ? w : cf_cast(f, w, CF_FLOAT), 2, outer);
  cf_tv *bf = cf_broadcast(f, dt == CF_FLOAT ? b : cf_cast(f, b, CF_FLOAT), 2, outer);
  cf_tv *y = cf_add(f, cf_mul(f, cf_mul(f, cf_sub(f, xf, mean), cf_rsqrt(f, cf_add_scalar(f, var, 1e-5))), wf), bf);
  cf_fusion_add_output(f, dt == CF_FLOAT ? y : cf_cast(f, y, dt));
}

static DLManagedTensor *rand_of(cf_dtype dt, int rank, const int64_t *sizes, uint64_t seed) {
  DLManagedTensor *t = cf_tensor_host(dt, rank, sizes);
  cf_tensor_fill_random(&t->dl_tensor, seed);
  return t;
}

static void check_layer_norm(cf_dtype dt, int64_t rows, int64_t cols, double tol) {
  DLManagedTensor *in[3] = {rand_of(dt, 2, (int64_t[]){rows, cols}, 1), rand_of(dt, 1, &cols, 2),
                            rand_of(dt, 1, &cols, 3)};
  check_call(3, in, tol);
  for (int i = 0; i < 3; i++) cf_tensor_free(in[i]);
}

/* Rows kept in registers: one inner persistent kernel of two sums, no Welford merge (132
 * rows of 16384: a block each on an H100, not split over the grid). */
Test(fusion_execute, var_mean_layer_norm_is_translated_to_two_sums) {
  build_var_mean_layer_norm(CF_FLOAT);
  int64_t shapes[][2] = {{5, 4096}, {7, 1000}, {1, 4096}, {3, 1}, {132, 16384}};
  for (int i = 0; i < 5; i++) {
    check_layer_norm(CF_FLOAT, shapes[i][0], shapes[i][1], 1e-4);
    cr_expect_eq(cf_fusion_cache_last_segments(c), 1, "%lld x %lld", (long long)shapes[i][0], (long long)shapes[i][1]);
    cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "welford_translate", "%lld x %lld",
                     (long long)shapes[i][0], (long long)shapes[i][1]);
    cr_expect_not(runs_welford(0), "%lld x %lld", (long long)shapes[i][0], (long long)shapes[i][1]);
  }
}

/* Rows longer than registers: in shared memory, translated (two sums, the row read from
 * memory once); past shared memory, multipass keeps the Welford reduction (two passes over
 * the row, not three), and so does a row split over the grid (one grid all-reduce, not
 * two); one kernel either way, equal to the evaluator. */
Test(fusion_execute, var_mean_layer_norm_of_long_rows_stays_welford) {
  build_var_mean_layer_norm(CF_FLOAT);
  check_layer_norm(CF_FLOAT, 132, 17000, 1e-4);
  cr_expect_eq(cf_fusion_cache_last_segments(c), 1);
  cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "welford_translate");
  cr_expect_not(runs_welford(0));
  check_layer_norm(CF_FLOAT, 2, 70000, 1e-4);
  cr_expect_eq(cf_fusion_cache_last_segments(c), 1);
  cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "inner_persistent");
  cr_expect(runs_welford(0));
}

Test(fusion_execute, var_mean_layer_norm_of_half_and_bfloat16) {
  for (int d = 0; d < 2; d++) {
    cf_dtype dt = d ? CF_BFLOAT16 : CF_HALF;
    cf_fusion_cache_destroy(c), c = NULL;
    cf_fusion_destroy(f), f = cf_fusion_create();
    build_var_mean_layer_norm(dt);
    check_layer_norm(dt, 6, 2048, 5e-2);
    check_layer_norm(dt, 3, 1000, 5e-2);
    cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "welford_translate", "%s", cf_dtype_name(dt));
    cr_expect_not(runs_welford(0), "%s", cf_dtype_name(dt));
  }
}

/* var and mean as the outputs (unbiased and population variance; half input, float
 * statistics): the count folds into var's division; the user's fusion keeps its Welford. */
Test(fusion_execute, var_mean_outputs_are_translated) {
  for (int k = 0; k < 3; k++) {
    cf_dtype dt = k == 2 ? CF_HALF : CF_FLOAT;
    cf_fusion_cache_destroy(c), c = NULL;
    cf_fusion_destroy(f), f = cf_fusion_create();
    cf_tv *x = cf_tensor_symbolic(f, dt, 2), *var = NULL, *mean = NULL;
    cf_fusion_add_input(f, x);
    cr_assert_eq(cf_var_mean(f, x, 1, (int[]){1}, k == 1 ? 0 : 1, false, &var, &mean), CF_OK, "%s", cf_fusion_error(f));
    cf_fusion_add_output(f, var);
    cf_fusion_add_output(f, mean);
    int64_t shapes[][2] = {{4, 1000}, {3, 4096}, {2, 7}};
    for (int i = 0; i < 3; i++) {
      DLManagedTensor *in = rand_of(dt, 2, shapes[i], 7);
      check_call(1, &in, dt == CF_FLOAT ? 1e-4 : 1e-3);
      cf_tensor_free(in);
      cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "welford_translate");
      cr_expect_not(runs_welford(0), "case %d shape %d", k, i);
    }
    char *math = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&math, &len);
    cf_fusion_print_math(f, m);
    fclose(m);
    cr_expect(strstr(math, "welford(") != NULL, "%s", math);
    free(math);
  }
}

/* The count read other than by casts and arithmetic (here a fusion output): that Welford
 * stays, and the result is still right. */
Test(fusion_execute, welford_count_as_an_output_keeps_welford) {
  cf_tv *x = cf_tensor_symbolic(f, CF_FLOAT, 2);
  cf_fusion_add_input(f, x);
  cf_tv *w = cf_welford(f, x, 1, (int[]){1});
  cf_fusion_add_output(f, cf_welford_avg(f, w));
  cf_fusion_add_output(f, cf_cast(f, cf_welford_n(f, w), CF_FLOAT));
  cf_fusion_add_output(f, cf_welford_m2(f, w));
  check_shape(1, 2, (int64_t[]){3, 500}, 1e-4);
  cr_expect(runs_welford(0));
}

Test(fusion_execute, dump_segments_says_welford_translated) {
  cr_redirect_stderr();
  setenv("CFUSER_DUMP", "segments", 1);
  build_var_mean_layer_norm(CF_FLOAT);
  check_layer_norm(CF_FLOAT, 2, 512, 1e-4);
  unsetenv("CFUSER_DUMP");
  fflush(stderr);
  FILE *err = cr_get_redirected_stderr();
  char text[16384] = "";
  size_t n = fread(text, 1, sizeof text - 1, err);
  text[n] = 0;
  cr_expect(strstr(text, "=== define and run: segment 0 of 1: scheduler welford_translate (") != NULL, "%s", text);
  cr_expect(strstr(text, "refused by: (none)\n") != NULL, "%s", text);
}


/* An output that broadcasts an input ([2] -> [1, 1, 2]): the pointwise tile leaves the
 * broadcast axes out (merged in, a row of one vector lost its thread index and was
 * refused). */
Test(fusion_execute, output_broadcast_of_an_input) {
  cf_tv *x = cf_tensor_symbolic(f, CF_FLOAT, 1);
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_broadcast(f, x, 3, (bool[]){true, true, false}));
  for (int64_t n = 1; n <= 9; n++) check_shape(1, 1, (int64_t[]){n}, 0);
  cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "pointwise");
}

/* A broadcast read by two outputs computed from different inputs (DAG fuzzer mode 4, seed
 * 438): the pointwise schedule would inline it into both outputs' loops, whose domains
 * lowering cannot prove equal, so the pointwise scheduler refuses the whole (it once
 * accepted it, and define and run retried a finer cut after lowering refused). */
Test(fusion_execute, a_broadcast_concretized_twice_is_refused_by_pointwise) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 3, (int64_t[]){2, 9, 33});
  cf_tv *y = cf_tensor_concrete(f, CF_FLOAT, 3, (int64_t[]){2, 9, 33});
  cf_tv *v = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){2, 9});
  cf_fusion_add_input(f, x);
  cf_fusion_add_input(f, y);
  cf_fusion_add_input(f, v);
  cf_tv *b = cf_broadcast(f, v, 3, (bool[]){false, false, true});
  cf_fusion_add_output(f, cf_sub(f, x, b));
  cf_fusion_add_output(f, cf_mul(f, b, cf_set(f, y)));
  DLManagedTensor *in[3] = {rand_tensor(3, (int64_t[]){2, 9, 33}, 1), rand_tensor(3, (int64_t[]){2, 9, 33}, 2),
                            rand_tensor(2, (int64_t[]){2, 9}, 3)};
  check_call(3, in, 0);
  cr_expect_gt(cf_fusion_cache_last_segments(c), 1);
  cr_expect_str_eq(cf_fusion_cache_error(c), "");
  for (int i = 0; i < 3; i++) cf_tensor_free(in[i]);
}

Test(fusion_execute, a_fusion_with_an_error) {
  cf_split(f, NULL, 0, 2);
  cr_expect_eq(call_with(0, NULL), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_cache_error(c), "fusion_copy: the fusion has an error: split: tensor is NULL");
  cr_expect_eq(cf_fusion_execute(NULL, 0, NULL, 0, NULL), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_cache_error(NULL), "fusion cache is NULL");
}
