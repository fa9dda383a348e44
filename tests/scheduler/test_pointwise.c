/* The pointwise scheduler and the caching rewrites it uses: what cache_after and
 * cache_before do to the graph, the schedule the heuristic picks (vector width, caches,
 * launch shape), its refusals, and scheduled fusions run against the evaluator (NVRTC for
 * sm_90a, the host backend, and the GPU when there is one). */
#include <criterion/criterion.h>
#include <string.h>

#include "kernels/kernel_check.h"
#include "scheduler/heuristic.h"
#include "scheduler/registry.h"

static cf_fusion *f;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(pointwise, .init = setup, .fini = teardown);

/* out = relu(a * broadcast(b) + a) for a [rows, cols] (T0) and b [cols] (T1). */
static void demo_fusion(int64_t rows, int64_t cols) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){rows, cols});
  cf_tv *b = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){cols});
  cf_fusion_add_input(f, a);
  cf_fusion_add_input(f, b);
  cf_tv *out = cf_relu(f, cf_add(f, cf_mul(f, a, cf_broadcast(f, b, 2, (bool[]){true, false})), a));
  cf_fusion_add_output(f, out);
}

Test(pointwise, cache_after_redirects_the_consumers) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){8});
  cf_fusion_add_input(f, a);
  cf_fusion_add_output(f, cf_add(f, cf_neg(f, a), a));
  cf_tv *c = cf_cache_after(f, a);
  cr_assert_not_null(c, "%s", cf_fusion_error(f));
  char *math = tu_capture_fusion(cf_fusion_print_math, f);
  cr_expect_str_eq(math, "Inputs:\n  T0_g_float[iS0{8}]\nOutputs:\n  T2_g_float[iS2{8}]\n\n%kernel_math {\n"
                         "T3_l_float[iS3{8}]\n   = Set( T0_g_float[iS0{8}] );\n"
                         "T1_l_float[iS1{8}]\n   = neg( T3_l_float[iS3{8}] );\n"
                         "T2_g_float[iS2{8}]\n   = add( T1_l_float[iS1{8}],\n        T3_l_float[iS3{8}] );\n"
                         "} // %kernel_math\n");
  free(math);
  cr_expect_eq(cf_fusion_verify(f), CF_OK, "%s", cf_fusion_error(f));
}

Test(pointwise, cache_before_gives_the_output_a_producer) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){8});
  cf_fusion_add_input(f, a);
  cf_tv *o = cf_neg(f, a);
  cf_fusion_add_output(f, o);
  cf_tv *c = cf_cache_before(f, o);
  cr_assert_not_null(c, "%s", cf_fusion_error(f));
  char *math = tu_capture_fusion(cf_fusion_print_math, f);
  cr_expect_str_eq(math, "Inputs:\n  T0_g_float[iS0{8}]\nOutputs:\n  T1_g_float[iS2{8}]\n\n%kernel_math {\n"
                         "T2_l_float[iS1{8}]\n   = neg( T0_g_float[iS0{8}] );\n"
                         "T1_g_float[iS2{8}]\n   = Set( T2_l_float[iS1{8}] );\n"
                         "} // %kernel_math\n");
  free(math);
  cr_expect_eq(cf_fusion_verify(f), CF_OK, "%s", cf_fusion_error(f));
}

Test(pointwise, caching_errors) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_fusion_add_input(f, a);
  cf_tv *s = cf_sum(f, a, 1, (int[]){1});
  cf_fusion_add_output(f, s);
  cf_tv *p = cf_transpose(f, a, 0, 1);
  cf_fusion_add_output(f, p);
  cf_tv *pc = cf_cache_before(f, p); /* the cache takes the permutation (nvFuser's cacheBefore) */
  cr_expect_not_null(pc, "%s", cf_fusion_error(f));
  EXPECT_TV(pc, "T3_l_float[iS5{8}, iS4{4}]");
  EXPECT_TV(p, "T2_g_float[iS6{8}, iS7{4}]");
  cr_expect_null(cf_cache_before(f, a));
  cr_expect_str_eq(cf_fusion_error(f), "cache_before: T0 is a fusion input; only tensors computed in a kernel can be "
                                       "cached before for T0_g_float[iS0{4}, iS1{8}]");
  cf_fusion_clear_error(f);
  cf_tv *leaf = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){8}); /* neither an input nor computed */
  cr_expect_null(cf_cache_before(f, leaf));
  cr_expect_str_eq(cf_fusion_error(f), "cache_before: T4 is computed by no op; only tensors computed in a kernel can "
                                       "be cached before for T4_l_float[iS8{8}]");
  cf_fusion_clear_error(f);
  cr_expect_null(cf_cache_after(f, s));
  cr_expect_str_eq(cf_fusion_error(f), "cache_after: T1 has no consumers to read a cache for T1_g_float[iS2{4}, rS3{8}]");
}

Test(pointwise, vectorizes_by_four_floats) {
  demo_fusion(64, 96);
  cr_assert_eq(cf_schedule_pointwise(f), CF_OK, "%s", cf_fusion_error(f));
  char *k = tu_capture_fusion(cf_fusion_print_kernel, f);
  cr_expect(strstr(k, "__launch_bounds__(128)") != NULL, "%s", k);
  cr_expect(strstr(k, "*reinterpret_cast<Array<float, 4>*>(&T6[0]) = *reinterpret_cast<const Array<float, 4>*>(&T0.data[") !=
                NULL, "vector load of the full-rank input:\n%s", k);
  cr_expect(strstr(k, "*reinterpret_cast<Array<float, 4>*>(&T5.data[") != NULL, "vector store:\n%s", k);
  free(k);
}

/* Contiguous tensors are one flat axis (issue 22): rows of 6 take vectors of 4 that
 * straddle them, the bias read element by element at its index. */
Test(pointwise, vectors_cross_the_rows_of_a_flat_tensor) {
  demo_fusion(64, 6);
  cr_assert_eq(cf_schedule_pointwise(f), CF_OK, "%s", cf_fusion_error(f));
  char *k = tu_capture_fusion(cf_fusion_print_kernel, f);
  cr_expect(strstr(k, "Array<float, 4>*>(&T0.data[(threadIdx.x * 4)])") != NULL, "%s", k);
  cr_expect(strstr(k, "T2[0] = T1.data[(((threadIdx.x * 4) + i1) % 6)];") != NULL, "%s", k);
  free(k);
}

/* An input whose rows are not adjacent in memory (contiguity false on its outer axis: a
 * view of the first 6 columns of 8) keeps the vector along rows: halved to divide 6. */
Test(pointwise, narrows_the_vector_to_divide_the_inner_extent) {
  demo_fusion(64, 6);
  cf_tv *a = cf_fusion_input(f, 0);
  cr_assert_eq(cf_set_allocation_domain(f, a, 2, (cf_id *[]){cf_tv_axis(a, 0), cf_tv_axis(a, 1)}, (int8_t[]){0, 1}),
               CF_OK, "%s", cf_fusion_error(f));
  cr_assert_eq(cf_schedule_pointwise(f), CF_OK, "%s", cf_fusion_error(f));
  char *k = tu_capture_fusion(cf_fusion_print_kernel, f);
  cr_expect(strstr(k, "Array<float, 2>") != NULL && strstr(k, "Array<float, 4>") == NULL, "%s", k);
  free(k);
  free(kc_check(f, 2, (KcInput[]){{CF_FLOAT, 2, {64, 6}, (int64_t[]){8, 1}}, F32(6)}, 1e-6));
}

Test(pointwise, no_vectors_for_symbolic_or_strided_extents) {
  cf_fusion *g = cf_fusion_create();
  cf_tv *s = cf_tensor_symbolic(g, CF_FLOAT, 2), *st = cf_tensor_strided(g, CF_FLOAT, 2);
  cf_fusion_add_input(g, s);
  cf_fusion_add_input(g, st);
  cf_fusion_add_output(g, cf_add(g, s, st));
  cr_assert_eq(cf_schedule_pointwise(g), CF_OK, "%s", cf_fusion_error(g));
  char *k = tu_capture_fusion(cf_fusion_print_kernel, g);
  cr_expect(strstr(k, "Array<") == NULL, "%s", k);
  free(k);
  cf_fusion_destroy(g);
}

Test(pointwise, refuses_reductions) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_fusion_add_input(f, a);
  cf_fusion_add_output(f, cf_sum(f, a, 1, (int[]){1}));
  cr_expect_eq(cf_schedule_pointwise(f), CF_ERR_UNSUPPORTED);
  cr_expect_str_eq(cf_fusion_error(f), "schedule_pointwise: T1 is computed by sum; the pointwise scheduler takes "
                                       "elementwise ops only for T1_g_float[iS2{4}, rS3{8}]");
}

Test(pointwise, refuses_scheduled_fusions) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){8});
  cf_fusion_add_input(f, a);
  cf_tv *o = cf_neg(f, a);
  cf_fusion_add_output(f, o);
  cf_split(f, o, 0, 2);
  cr_expect_eq(cf_schedule_pointwise(f), CF_ERR_INVALID_SCHEDULE);
  cr_expect_str_eq(cf_fusion_error(f), "schedule_pointwise: T1 is scheduled already for T1_g_float[iS2{4}, iS3{2}]");
}

Test(pointwise, refuses_outputs_of_different_shapes) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_tv *b = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){8});
  cf_fusion_add_input(f, a);
  cf_fusion_add_input(f, b);
  cf_fusion_add_output(f, cf_neg(f, a));
  cf_fusion_add_output(f, cf_neg(f, b));
  cr_expect_eq(cf_schedule_pointwise(f), CF_ERR_UNSUPPORTED);
  cr_expect_str_eq(cf_fusion_error(f), "schedule_pointwise: output T3 has another shape than T2 for T3_g_float[iS5{8}]");
}

/* Scheduled fusions against the evaluator on every backend at hand. */
static void check(int nin, const KcInput *in, double tol) {
  cr_assert_eq(cf_schedule_pointwise(f), CF_OK, "%s", cf_fusion_error(f));
  free(kc_check(f, nin, in, tol));
}

/* b = broadcast(v) [1, 8] read by x - relu(b) and y * b, where x and y are [4, 8] inputs
 * with no op relating their rows: through relu(b), which keeps the broadcast, b's axis 0
 * would share one loop with x's rows and y's (analysis/broadcast_readers.c), so the row
 * refuses, naming the broadcast and the two readers that concretize it. */
static void relu_of_broadcast_read_twice(bool same_rows) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_tv *y = same_rows ? x : cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_tv *v = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){8});
  cf_fusion_add_input(f, x);
  if (!same_rows) cf_fusion_add_input(f, y);
  cf_fusion_add_input(f, v);
  cf_tv *b = cf_broadcast(f, v, 2, (bool[]){true, false});
  cf_fusion_add_output(f, cf_sub(f, x, cf_relu(f, b)));
  cf_fusion_add_output(f, cf_mul(f, y, b));
}

Test(pointwise, refuses_a_broadcast_concretized_against_unrelated_rows) {
  relu_of_broadcast_read_twice(false);
  cr_expect_eq(cf_schedule_pointwise(f), CF_ERR_UNSUPPORTED);
  cr_expect_str_eq(cf_fusion_error(f), "schedule_pointwise: T3 is broadcast along axis 0, which T5 and T6 read against "
                                       "unrelated axes (one loop cannot iterate both) for T3_l_float[bS5{1}, iS6{8}]");
}

Test(pointwise, runs_a_broadcast_fusion) {
  demo_fusion(33, 100);
  check(2, (KcInput[]){F32(33, 100), F32(100)}, 1e-6);
}

Test(pointwise, runs_an_odd_shape_with_two_outputs) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 3, (int64_t[]){5, 7, 3});
  cf_tv *b = cf_tensor_concrete(f, CF_FLOAT, 3, (int64_t[]){5, 7, 3});
  cf_fusion_add_input(f, a);
  cf_fusion_add_input(f, b);
  cf_tv *s = cf_add(f, a, b);
  cf_fusion_add_output(f, cf_sigmoid(f, s));
  cf_fusion_add_output(f, cf_mul(f, s, b));
  check(2, (KcInput[]){F32(5, 7, 3), F32(5, 7, 3)}, 1e-6);
}

/* The same with y = x: both readers concretize b's axis 0 against x's rows, one loop.
 * (The row's first walk looked one reader deep, compared relu(b)'s broadcast axis with x's
 * rows and refused it.) */
Test(pointwise, runs_a_broadcast_concretized_against_one_tensor_through_a_relu) {
  relu_of_broadcast_read_twice(true);
  check(2, (KcInput[]){F32(4, 8), F32(8)}, 1e-6);
}

/* b = broadcast(v) read by the output x - b and by readers no output needs: y * b (y's
 * rows unrelated to x's) and a rank-3 broadcast of b times z. A dead reader is in no
 * loop: the row takes the fusion (the walk once counted y * b as a second concretization,
 * and indexed its table of rank-2 tensors with the rank-3 reader's axis 2: the libFuzzer
 * builder harness's UBSan finding). */
Test(pointwise, a_dead_reader_of_a_broadcast_is_no_loop) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8}), *y = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_tv *z = cf_tensor_concrete(f, CF_FLOAT, 3, (int64_t[]){2, 4, 8}), *v = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){8});
  cf_fusion_add_input(f, x), cf_fusion_add_input(f, y), cf_fusion_add_input(f, z), cf_fusion_add_input(f, v);
  cf_tv *b = cf_broadcast(f, v, 2, (bool[]){true, false});
  cf_mul(f, y, b);
  cf_mul(f, z, cf_broadcast(f, b, 3, (bool[]){true, false, false}));
  cf_fusion_add_output(f, cf_sub(f, x, b));
  check(4, (KcInput[]){F32(4, 8), F32(4, 8), F32(2, 4, 8), F32(8)}, 1e-6);
}

Test(pointwise, runs_symbolic_sizes) {
  cf_tv *a = cf_tensor_symbolic(f, CF_FLOAT, 2);
  cf_fusion_add_input(f, a);
  cf_fusion_add_output(f, cf_exp(f, cf_neg(f, a)));
  check(1, (KcInput[]){F32(300, 17)}, 1e-6);
}

/* ---- the 2-D break point ---------------------------------------------------------------- */

static const SchedCall no_call = {0, NULL, &sched_device_h100};

/* Schedules f with the define-and-run heuristic, expects its parameters, then checks the
 * kernel against the evaluator (NVRTC for sm_90a, host backend, GPU when present). */
static void check_2d(const char *want_params, int nin, const KcInput *in, double tol) {
  char why[SCHED_WHY_MAX] = "", params[SCHED_PARAMS_MAX] = "";
  cr_assert(sched_pointwise_heuristic.accepts(f, &no_call, why), "%s", why);
  cr_assert_eq(sched_pointwise_heuristic.schedule(f, &no_call, params), CF_OK, "%s", cf_fusion_error(f));
  cr_expect_str_eq(params, want_params);
  free(kc_check(f, nin, in, tol));
}

/* out = gelu(x + broadcast(bias, {true, false})) for x [rows, cols], bias [cols]. */
static void bias_row(int64_t rows, int64_t cols) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){rows, cols});
  cf_tv *b = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){cols});
  cf_fusion_add_input(f, x);
  cf_fusion_add_input(f, b);
  cf_fusion_add_output(f, cf_gelu(f, cf_add(f, x, cf_broadcast(f, b, 2, (bool[]){true, false}))));
}

Test(pointwise, break_point_bias_row) {
  bias_row(37, 1000);
  check_2d("break=1 vector=4 threads=128", 2, (KcInput[]){F32(37, 1000), F32(1000)}, 1e-5);
}

Test(pointwise, break_point_bias_row_kernel_indexes_each_half) {
  bias_row(37, 1000);
  char why[SCHED_WHY_MAX] = "", params[SCHED_PARAMS_MAX] = "";
  cr_assert(sched_pointwise_heuristic.accepts(f, &no_call, why), "%s", why);
  cr_assert_eq(sched_pointwise_heuristic.schedule(f, &no_call, params), CF_OK, "%s", cf_fusion_error(f));
  char *k = tu_capture_fusion(cf_fusion_print_kernel, f);
  cr_expect(strstr(k, "blockIdx.y") != NULL, "%s", k);
  cr_expect(strstr(k, "% 1000") == NULL && strstr(k, "/ 1000") == NULL, "no div/mod by the row:\n%s", k);
  free(k);
}

/* A constant extent of 1 is a broadcast axis of the output too: nothing broadcasts along
 * the one concrete axis, so the schedule is 1-D. */
Test(pointwise, one_row_is_no_break_point) {
  bias_row(1, 1000);
  check_2d("vector=4 threads=128", 2, (KcInput[]){F32(1, 1000), F32(1000)}, 1e-5);
}

Test(pointwise, break_point_bias_column) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){301, 129});
  cf_tv *c = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){301});
  cf_fusion_add_input(f, x);
  cf_fusion_add_input(f, c);
  cf_fusion_add_output(f, cf_mul(f, x, cf_broadcast(f, c, 2, (bool[]){false, true})));
  /* rows of 129 take no vector; the flat tensor vectors of 4, the column read at its index */
  check_2d("break=none (vectors of 1 along rows, 4 along the flat tensor) vector=4 tail threads=128", 2,
           (KcInput[]){F32(301, 129), F32(301)}, 1e-6);
}

Test(pointwise, break_point_column_given_as_size_one_axis) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){7, 260});
  cf_tv *c = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){7, 1});
  cf_fusion_add_input(f, x);
  cf_fusion_add_input(f, c);
  cf_fusion_add_output(f, cf_sub(f, x, c));
  check_2d("break=1 vector=4 threads=128", 2, (KcInput[]){F32(7, 260), F32(7, 1)}, 1e-6);
}

/* x [6, 50, 130] with y [6, 130] broadcast along the middle axis and z [50] along the
 * outer and inner ones: the break point would put the outer half [6, 50] on blockIdx.y
 * and the inner [130] on x with vectors of 2; the flat tensor (39000 elements) takes
 * vectors of 4 with no tail, y and z read at their indices. */
Test(pointwise, break_point_3d_middle_broadcast) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 3, (int64_t[]){6, 50, 130});
  cf_tv *y = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){6, 130});
  cf_tv *z = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){50});
  cf_fusion_add_input(f, x);
  cf_fusion_add_input(f, y);
  cf_fusion_add_input(f, z);
  cf_tv *s = cf_add(f, x, cf_broadcast(f, y, 3, (bool[]){false, true, false}));
  cf_fusion_add_output(f, cf_mul(f, s, cf_broadcast(f, z, 3, (bool[]){true, false, true})));
  check_2d("break=none (vectors of 2 along rows, 4 along the flat tensor) vector=4 threads=128", 3,
           (KcInput[]){F32(6, 50, 130), F32(6, 130), F32(50)}, 1e-6);
}

/* A bias along the innermost axis of [5, 3, 700]: the smaller outer half is [5, 3]. */
Test(pointwise, break_point_3d_bias_picks_the_cheaper_break) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 3, (int64_t[]){5, 3, 700});
  cf_tv *b = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){700});
  cf_fusion_add_input(f, x);
  cf_fusion_add_input(f, b);
  cf_fusion_add_output(f, cf_add(f, x, cf_broadcast(f, b, 3, (bool[]){true, true, false})));
  check_2d("break=2 vector=4 threads=128", 2, (KcInput[]){F32(5, 3, 700), F32(700)}, 1e-6);
}

Test(pointwise, break_point_symbolic_sizes) {
  cf_tv *x = cf_tensor_symbolic(f, CF_FLOAT, 2);
  cf_tv *b = cf_tensor_symbolic(f, CF_FLOAT, 1);
  cf_fusion_add_input(f, x);
  cf_fusion_add_input(f, b);
  cf_fusion_add_output(f, cf_gelu(f, cf_add(f, x, cf_broadcast(f, b, 2, (bool[]){true, false}))));
  check_2d("break=1 vector=1 threads=128", 2, (KcInput[]){F32(33, 301), F32(301)}, 1e-5);
}

Test(pointwise, break_point_symbolic_sizes_of_one) {
  cf_tv *x = cf_tensor_symbolic(f, CF_FLOAT, 2);
  cf_tv *b = cf_tensor_symbolic(f, CF_FLOAT, 1);
  cf_fusion_add_input(f, x);
  cf_fusion_add_input(f, b);
  cf_fusion_add_output(f, cf_add(f, x, cf_broadcast(f, b, 2, (bool[]){false, true})));
  check_2d("break=1 vector=1 threads=128", 2, (KcInput[]){F32(1, 1), F32(1)}, 1e-6);
}

/* Inner halves under a block of threads keep the 1-D schedule, saying why. */
Test(pointwise, break_point_none_for_short_rows) {
  demo_fusion(33, 100);
  check_2d("break=none (every inner half has fewer than 128 elements) vector=4 threads=128", 2,
           (KcInput[]){F32(33, 100), F32(100)}, 1e-6);
}

/* No broadcasting input: the 1-D parameters as before (a 0-d input does not count). */
Test(pointwise, no_break_point_without_broadcasts) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){64, 1000});
  cf_tv *s = cf_tensor_concrete(f, CF_FLOAT, 0, NULL);
  cf_fusion_add_input(f, a);
  cf_fusion_add_input(f, s);
  cf_fusion_add_output(f, cf_mul(f, a, cf_broadcast(f, s, 2, (bool[]){true, true})));
  check_2d("vector=4 threads=128", 2, (KcInput[]){F32(64, 1000), {CF_FLOAT, 0, {0}, NULL}}, 1e-6);
}

/* More than 65535 rows: blockIdx.y runs 2 rows each, the last one predicated (gridDim.y's limit). */
Test(pointwise, break_point_splits_outer_half_over_grid_y_limit) {
  bias_row(70001, 128);
  check_2d("break=1 vector=4 threads=128 rows=2", 2, (KcInput[]){F32(70001, 128), F32(128)}, 1e-5);
}

/* x + broadcast(b) and y * broadcast(b) for x, y [4, 32], b [32]: the propagation from the
 * first output reaches y and the second output only through b, so their rows of 4 (an
 * extent equal to the vector) stayed innermost and a vector ran along a row, which is not
 * contiguous in memory (lowering refused the schedule: DAG seed 12000229 of define and
 * run). The second output, reached in part, is now tiled as the first and roots the
 * propagation too, so every tensor gets the vectors of 4; the rule for vector accesses
 * (analysis/vector_access.c) still guards the tensors a propagation leaves untiled. */
Test(pointwise, rows_reached_through_a_broadcast_are_tiled_as_the_reference) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 32});
  cf_tv *y = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 32});
  cf_tv *b = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){32});
  cf_fusion_add_input(f, x);
  cf_fusion_add_input(f, y);
  cf_fusion_add_input(f, b);
  cf_tv *o1 = cf_add(f, x, cf_broadcast(f, b, 2, (bool[]){true, false}));
  cf_tv *o2 = cf_mul(f, y, cf_broadcast(f, b, 2, (bool[]){true, false}));
  cf_fusion_add_output(f, o1);
  cf_fusion_add_output(f, o2);
  char why[SCHED_WHY_MAX] = "", params[SCHED_PARAMS_MAX] = "";
  cr_assert(sched_pointwise_heuristic.accepts(f, &no_call, why), "%s", why);
  cr_assert_eq(sched_pointwise_heuristic.schedule(f, &no_call, params), CF_OK, "%s", cf_fusion_error(f));
  cr_expect_str_eq(params, "vector=4 threads=128");
  EXPECT_TV(o1, "T4_g_float[iblockIdx.x26{1}, iUS27{1}, ithreadIdx.x25{128}, iV23{4}] ca_pos( 3 ) produce_pos( 3 )");
  EXPECT_TV(o2, "T6_g_float[iblockIdx.x33{1}, iUS34{1}, ithreadIdx.x32{128}, iV30{4}] ca_pos( 3 ) produce_pos( 3 )");
  char *k = tu_capture_fusion(cf_fusion_print_kernel, f);
  cr_expect(strstr(k, "*reinterpret_cast<Array<float, 4>*>(&T7[0]) = *reinterpret_cast<const Array<float, 4>*>(&T0.data[") &&
                strstr(k, "*reinterpret_cast<Array<float, 4>*>(&T4.data["),
            "x and the first output keep their vectors:\n%s", k);
  cr_expect(strstr(k, "Array<float, 4>*>(&T1.data[") && strstr(k, "Array<float, 4>*>(&T6.data["),
            "y and the second output have vectors too:\n%s", k);
  free(k);
  free(kc_check(f, 3, (KcInput[]){F32(4, 32), F32(4, 32), F32(32)}, 1e-6));
}

/* out0 = a x b and out1 = a x b again through broadcasts of their own (a [300], b [64]):
 * the reference's axes reach out1 only apart (axis 0 through a's second broadcast, axis 1
 * through b's), so a propagation from out0 alone gave out1's mul one part of the tile and
 * a broadcast of its operands the other, and lowering refused the loop they share (issue
 * 28, as two lookups of one weight by one index). out1 is tiled as out0 and roots the
 * propagation too: the same tile, one kernel, the evaluator's values. 64 columns keep the
 * 1-D tile; 256 the break point. */
static void outer_products(int64_t rows, int64_t cols) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){rows}), *b = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){cols});
  cf_fusion_add_input(f, a);
  cf_fusion_add_input(f, b);
  for (int o = 0; o < 2; o++) {
    cf_tv *x = cf_broadcast(f, a, 2, (bool[]){false, true}), *y = cf_broadcast(f, b, 2, (bool[]){true, false});
    cf_fusion_add_output(f, o ? cf_mul(f, x, y) : cf_add(f, x, y));
  }
}

Test(pointwise, outputs_reached_in_part_root_the_propagation) {
  outer_products(300, 64);
  check_2d("break=none (every inner half has fewer than 128 elements) vector=4 threads=128", 2,
           (KcInput[]){F32(300), F32(64)}, 0);
  EXPECT_TV(cf_fusion_output(f, 1), "T7_g_float[iblockIdx.x30{38}, iUS31{1}, ithreadIdx.x29{128}, iV27{4}] ca_pos( 3 ) "
                                    "produce_pos( 3 )");
}

Test(pointwise, outputs_reached_in_part_root_the_propagation_at_a_break_point) {
  outer_products(300, 256);
  check_2d("break=1 vector=4 threads=128", 2, (KcInput[]){F32(300), F32(256)}, 0);
}

/* ---- a computed tensor broadcast along the whole outer half ------------------------------ */

/* Define and run's DAG seed 38601349, its pointwise segment reduced: s [8, 31] (a sum in
 * the segment before), a [1, 8, 31], c [6, 8], x [6, 8, 31]; out = ((a + a) + broadcast(c)
 * + x) + (a - broadcast(chain(s))) at break point 1. The broadcast of the computed chain
 * inserts the whole outer half ([1, 8, 31]): its first loop (blockIdx.y) is one the chain
 * lacks, so positional inlining left set(s) a Local tensor in a loop nest of its own, and
 * the blockIdx.y loop, promoted to broadcast(c) [6, 8, 1] (whose inner tile merges a
 * broadcast), made the broadcast's thread axis stand for that tile: lowering refused the
 * read across threads (an internal error of define and run). That reading was vacuous
 * (the chain of consumers ends at the output, which nothing reads: analysis/positional.c,
 * seed 41400113 below), so the chain now stays in its own loop nest on the broadcast's
 * threads and is read there, with no rewrite (the row once computed it again on the
 * broadcast shape). nops: the chain's length (set, then relus). */
static cf_tv *outer_half_of_a_chain(int nops) {
  cf_tv *s = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){8, 31});
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 3, (int64_t[]){1, 8, 31});
  cf_tv *c = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){6, 8});
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 3, (int64_t[]){6, 8, 31});
  cf_fusion_add_input(f, s), cf_fusion_add_input(f, a), cf_fusion_add_input(f, c), cf_fusion_add_input(f, x);
  cf_tv *u = cf_add(f, cf_add(f, cf_add(f, a, a), cf_broadcast(f, c, 3, (bool[]){false, false, true})), x);
  cf_tv *p = cf_set(f, s);
  for (int i = 1; i < nops; i++) p = cf_relu(f, p);
  cf_tv *b = cf_broadcast(f, p, 3, (bool[]){true, false, false});
  cf_fusion_add_output(f, cf_add(f, u, cf_sub(f, a, b)));
  return b;
}

Test(pointwise, chain_broadcast_along_the_outer_half_is_read_on_its_thread) {
  cf_tv *b = outer_half_of_a_chain(2);
  check_2d("break=1 vector=1 threads=128", 4, (KcInput[]){F32(8, 31), F32(1, 8, 31), F32(6, 8), F32(6, 8, 31)}, 0);
  EXPECT_TV(b, "T10_l_float[bblockIdx.y26{1}, iblockIdx.x97{2}, iUS98{1}, ithreadIdx.x96{128}] ca_pos( 4 )");
  char *math = tu_capture_fusion(cf_fusion_print_math, f);
  cr_expect(strstr(math, "T9_l_float[iblockIdx.x111{2}, iUS112{1}, ithreadIdx.x110{128}]\n"
                         "   = relu( T8_l_float[iblockIdx.x116{2}, iUS117{1}, ithreadIdx.x115{128}] );\n"
                         "T10_l_float[bblockIdx.y26{1}, iblockIdx.x97{2}, iUS98{1}, ithreadIdx.x96{128}]\n"
                         "   = broadcast( T9_l_float[") != NULL, "%s", math);
  free(math);
  char *k = tu_capture_fusion(cf_fusion_print_kernel, f);
  cr_expect(strstr(k, "T10[0] = T9[0];") != NULL, "%s", k);
  free(k);
}

/* A chain past SCHED_HOIST_MAX_OPS is scheduled the same way (nothing is recomputed). */
Test(pointwise, long_chain_broadcast_along_the_outer_half_is_read_on_its_thread) {
  outer_half_of_a_chain(SCHED_HOIST_MAX_OPS + 1);
  check_2d("break=1 vector=1 threads=128", 4, (KcInput[]){F32(8, 31), F32(1, 8, 31), F32(6, 8), F32(6, 8, 31)}, 0);
}

/* ---- a tensor broadcast along the outer half, inlined towards the output ----------------- */

/* Define and run's DAG seed 41400113, its pointwise segment reduced: out = (broadcast(m) +
 * broadcast(v)) + broadcast(c) for m [2, 64], v [64], c [9, 2] at break point 1. u =
 * broadcast(m) + broadcast(v) [1, 2, 64] is broadcast along the whole outer half; its
 * blockIdx.y loop is promoted to broadcast(c) [9, 2, 1], whose inner tile merges [2, 1].
 * Lowering's positional reading (analysis/positional.c) said u and the tensors after it
 * stood for broadcast(c)'s inner tile, because the chain of consumers ended at the output,
 * which nothing reads (vacuously true), while broadcast(v) [1, 1, 64], inlined into u, ran
 * the loop's own [2, 64]: the shared thread loop was refused as two domains, an internal
 * error of define and run. Nothing reads the output, so nothing stands for that tile. */
static void outer_half_sum_of_broadcasts(void) {
  cf_tv *m = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){2, 64});
  cf_tv *v = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){64});
  cf_tv *c = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){9, 2});
  cf_fusion_add_input(f, m), cf_fusion_add_input(f, v), cf_fusion_add_input(f, c);
  cf_tv *u = cf_add(f, cf_broadcast(f, m, 3, (bool[]){true, false, false}),
                    cf_broadcast(f, v, 3, (bool[]){true, true, false}));
  cf_fusion_add_output(f, cf_add(f, u, cf_broadcast(f, c, 3, (bool[]){false, false, true})));
}

Test(pointwise, broadcast_inlined_into_an_outer_half_broadcast_runs_its_loop) {
  outer_half_sum_of_broadcasts();
  check_2d("break=1 vector=4 threads=128", 3, (KcInput[]){F32(2, 64), F32(64), F32(9, 2)}, 1e-6);
}
