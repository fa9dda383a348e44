/* Reductions scheduled by hand (issue 10): serial ones of every reduction op, block
 * reductions over threadIdx.x (whole warps and not), over 2-D thread blocks and with
 * serial axes folded first, non-divisible splits of reduction axes, symbolic sizes, half
 * accumulated in float, and an all-reduce read back by every thread. Each is compiled
 * with NVRTC for sm_90a and run on the host backend (and the GPU when present) against
 * the reference evaluator, through tests/kernels/kernel_check.h. */
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "kernel_check.h"

KC_FUSION_SUITE(reductions);

static cf_tv *input(cf_dtype dt, int rank, const int64_t *sizes) { return kc_input(f, in, &nin, dt, rank, sizes); }

/* Checks and returns the CUDA source; the caller frees it. */
static char *check(double tol) { return kc_check(f, nin, in, tol); }

static cf_launch_params host_launch(void) {
  cf_executor_options o = {.backend = CF_BACKEND_HOST};
  cf_executor *e = cf_executor_create(&o);
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  tu_assert_io_fits(f, nin);
  DLManagedTensor *t[TU_MAX_IO] = {0}, *out[TU_MAX_IO] = {0};
  const DLTensor *ins[TU_MAX_IO];
  for (int i = 0; i < nin; i++) ins[i] = &(t[i] = kc_make_input(&in[i], 7))->dl_tensor;
  cr_assert_eq(cf_executor_run(e, nin, ins, cf_fusion_num_outputs(f), out), CF_OK, "%s", cf_executor_error(e));
  cf_launch_params p = cf_executor_last_launch_params(e);
  for (int i = 0; i < TU_MAX_IO; i++) cf_tensor_free(t[i]), cf_tensor_free(out[i]);
  cf_executor_destroy(e);
  return p;
}

Test(reductions, serial_reductions_of_every_op) {
  cf_tv *a = input(CF_FLOAT, 2, (int64_t[]){4, 6});
  cf_reduce_op ops[] = {CF_REDUCE_SUM, CF_REDUCE_PROD, CF_REDUCE_MAX, CF_REDUCE_MIN, CF_REDUCE_MEAN};
  for (int i = 0; i < 5; i++) {
    cf_tv *r = cf_reduce(f, ops[i], a, 1, (int[]){1}, i == 4);
    cf_fusion_add_output(f, r);
    cf_parallelize(f, r, 0, CF_PT_TIDX);
  }
  free(check(1e-5));
}

/* The identity of max over int32 is INT32_MIN, not a converted INT64_MIN (which is 0). */
Test(reductions, serial_max_of_negative_int32) {
  cf_tv *a = input(CF_INT32, 2, (int64_t[]){3, 5});
  cf_tv *r = cf_max_reduce(f, cf_neg(f, cf_abs(f, a)), 1, (int[]){1});
  cf_fusion_add_output(f, r);
  cf_inline_most(f);
  char *src = check(0);
  cr_expect(strstr(src, "(int)((-2147483647 - 1))") != NULL, "no int32 lowest in:\n%s", src);
  free(src);
}

/* Tutorial.Reduction's TIDx schedule: one block, a thread per column, whole warps: the
 * warp form, its ten rows (a serial loop) grouped into one reduction
 * (lower/group_reductions.c). */
Test(reductions, warp_shuffle_block_reduction) {
  cf_tv *a = input(CF_FLOAT, 2, (int64_t[]){10, 256});
  cf_tv *r = cf_sum(f, a, 1, (int[]){1});
  cf_fusion_add_output(f, r);
  cf_parallelize(f, r, 1, CF_PT_TIDX);
  char *src = check(1e-4);
  cr_expect(strstr(src, "__shfl_xor_sync(0xffffffffu, cf_v, cf_o)") != NULL, "no warp shuffle in:\n%s", src);
  cr_expect(strstr(src, "block all-reduce of a1[0..10] (sum) over threadIdx.x") != NULL,
            "the ten rows not grouped in:\n%s", src);
  free(src);
  cf_launch_params p = host_launch();
  cr_expect_eq(p.smem, 10 * 256 * 4, "the grouped workspace of 10 x 256 floats is in the launch's shared memory");
}

/* 50 threads on x: not whole warps, so the tree form; max with a ragged first step. */
Test(reductions, tree_block_reduction_of_50_threads) {
  cf_tv *a = input(CF_FLOAT, 2, (int64_t[]){3, 50});
  cf_tv *r = cf_max_reduce(f, a, 1, (int[]){1});
  cf_fusion_add_output(f, r);
  cf_parallelize(f, r, 0, CF_PT_BIDX);
  cf_parallelize(f, r, 1, CF_PT_TIDX);
  char *src = check(0);
  cr_expect(strstr(src, "__shfl_xor_sync") == NULL, "a warp shuffle with 50 threads in:\n%s", src);
  free(src);
}

/* Tutorial.Reduction's TIDy x TIDx schedule: rows on threadIdx.y, a 2-D thread block. A
 * row of 32 threads is one warp: its shuffles alone reduce it, with no workspace and no
 * barrier. */
Test(reductions, two_d_block_reducing_x) {
  cf_tv *a = input(CF_FLOAT, 2, (int64_t[]){10, 32});
  cf_tv *r = cf_sum(f, a, 1, (int[]){1});
  cf_fusion_add_output(f, r);
  cf_parallelize(f, r, 0, CF_PT_TIDY);
  cf_parallelize(f, r, 1, CF_PT_TIDX);
  char *src = check(1e-5);
  cr_expect(strstr(src, "for (int cf_o = 16; cf_o > 0; cf_o >>= 1) {") != NULL, "no warp-local shuffles in:\n%s", src);
  cr_expect(strstr(src, "__syncthreads") == NULL, "a barrier in:\n%s", src);
  free(src);
  cr_expect_eq(host_launch().smem, 0, "a warp-local all-reduce needs no workspace");
}

/* Rows of 8 threads, 16 rows on threadIdx.y (128 threads: whole warps): each row within a
 * group of 8 lanes, shuffled from lane distance 4 down; max of negative values (a wrong
 * group would mix rows). */
Test(reductions, rows_of_eight_lanes_reduce_within_their_group) {
  cf_tv *a = input(CF_FLOAT, 2, (int64_t[]){16, 8});
  cf_tv *r = cf_max_reduce(f, cf_neg(f, a), 1, (int[]){1});
  cf_fusion_add_output(f, r);
  cf_inline_most(f);
  cf_parallelize(f, r, 0, CF_PT_TIDY);
  cf_parallelize(f, r, 1, CF_PT_TIDX);
  char *src = check(0);
  cr_expect(strstr(src, "for (int cf_o = 4; cf_o > 0; cf_o >>= 1) {") != NULL, "no 8-lane shuffles in:\n%s", src);
  free(src);
}

/* Rows of 16 threads, 3 rows: 48 threads are not whole warps (the last warp's upper lanes
 * would take no part in its shuffles): the tree. */
Test(reductions, rows_within_a_partial_warp_use_the_tree) {
  cf_tv *a = input(CF_FLOAT, 2, (int64_t[]){3, 16});
  cf_tv *r = cf_sum(f, a, 1, (int[]){1});
  cf_fusion_add_output(f, r);
  cf_parallelize(f, r, 0, CF_PT_TIDY);
  cf_parallelize(f, r, 1, CF_PT_TIDX);
  char *src = check(1e-5);
  cr_expect(strstr(src, "__shfl_xor_sync") == NULL && strstr(src, "cf_s >>= 1") != NULL, "not the tree in:\n%s", src);
  free(src);
}

/* Two reduction axes on threadIdx.y and threadIdx.x (6 x 10 = 60 threads per group). */
Test(reductions, two_d_block_reducing_x_and_y) {
  cf_tv *a = input(CF_DOUBLE, 3, (int64_t[]){4, 6, 10});
  cf_tv *r = cf_sum(f, a, 2, (int[]){1, 2});
  cf_fusion_add_output(f, r);
  cf_parallelize(f, r, 0, CF_PT_BIDX);
  cf_parallelize(f, r, 1, CF_PT_TIDY);
  cf_parallelize(f, r, 2, CF_PT_TIDX);
  free(check(1e-12));
}

/* Reduces y with x iterating: the groups are the x threads. */
Test(reductions, two_d_block_reducing_y_only) {
  cf_tv *a = input(CF_FLOAT, 2, (int64_t[]){12, 8});
  cf_tv *r = cf_sum(f, a, 1, (int[]){0});
  cf_fusion_add_output(f, r);
  cf_reorder(f, r, 1, (int[]){0, 1});
  cf_parallelize(f, r, 0, CF_PT_TIDX);
  cf_parallelize(f, r, 1, CF_PT_TIDY);
  free(check(1e-5));
}

/* A column reduction's block: columns on threadIdx.x (a power of two below 32), rows on
 * threadIdx.y, x * y whole warps: shuffles fold each warp's rows of a column (xor 16 down
 * to blockDim.x), its first row writes them, one barrier, every thread folds its column's
 * warps. Sum of 8 columns over 64 rows; max of 2 columns over 16 rows (one warp); Welford
 * states of 4 columns over 8 rows beside 2 groups on threadIdx.z. */
static void expect_y_shuffles(char *src, int bx) {
  char loop[64], writer[64]; /* the block's width printed as the constant it is */
  snprintf(loop, sizeof loop, "for (int cf_o = 16; cf_o >= %d; cf_o >>= 1)", bx);
  snprintf(writer, sizeof writer, "if ((int)threadIdx.y %% (32 / %d) == 0)", bx);
  cr_expect(strstr(src, loop) != NULL, "no `%s` in:\n%s", loop, src);
  cr_expect(strstr(src, writer) != NULL, "no first-row writer `%s` in:\n%s", writer, src);
  cr_expect(strstr(src, "cf_s >>= 1") == NULL, "a tree step in:\n%s", src);
  free(src);
}

static cf_tv *columns_on_x_rows_on_y(cf_tv *r) {
  cf_fusion_add_output(f, r);
  cf_reorder(f, r, 1, (int[]){0, 1}); /* [rows, columns] -> [columns, rows] */
  cf_parallelize(f, r, 0, CF_PT_TIDX);
  cf_parallelize(f, r, 1, CF_PT_TIDY);
  return r;
}

Test(reductions, column_reduction_by_warp_shuffles_over_y) {
  columns_on_x_rows_on_y(cf_sum(f, input(CF_FLOAT, 2, (int64_t[]){64, 8}), 1, (int[]){0}));
  expect_y_shuffles(check(1e-5), 8);
  cf_fusion_destroy(f), kc_suite_setup_();
  columns_on_x_rows_on_y(cf_max_reduce(f, input(CF_FLOAT, 2, (int64_t[]){16, 2}), 1, (int[]){0}));
  expect_y_shuffles(check(0), 2);
  cf_fusion_destroy(f), kc_suite_setup_();
  cf_tv *x = input(CF_FLOAT, 3, (int64_t[]){2, 8, 4});
  cf_tv *w = cf_welford(f, x, 1, (int[]){1});
  cf_fusion_add_output(f, cf_welford_avg(f, w));
  cf_fusion_add_output(f, cf_welford_m2(f, w));
  cf_parallelize(f, w, 0, CF_PT_TIDZ);
  cf_parallelize(f, w, 1, CF_PT_TIDY);
  cf_parallelize(f, w, 2, CF_PT_TIDX);
  cr_assert_eq(cf_parallelize_all_like(f, w, 0, NULL), CF_OK, "%s", cf_fusion_error(f));
  expect_y_shuffles(check(1e-4), 4);
}

/* 8 columns on x and 3 rows on y: 24 threads, not whole warps: the tree. */
Test(reductions, column_reduction_of_partial_warps_by_the_tree) {
  columns_on_x_rows_on_y(cf_sum(f, input(CF_FLOAT, 2, (int64_t[]){3, 8}), 1, (int[]){0}));
  char *src = check(1e-5);
  cr_expect(strstr(src, "__shfl_xor_sync") == NULL && strstr(src, "cf_s >>= 1") != NULL, "not the tree in:\n%s", src);
  free(src);
}

/* A serial loop per thread, then the block: 1000 columns split by 128 (not divisible). */
Test(reductions, serial_then_block_with_a_non_divisible_split) {
  cf_tv *a = input(CF_FLOAT, 2, (int64_t[]){16, 1000});
  cf_tv *r = cf_sum(f, a, 1, (int[]){1});
  cf_fusion_add_output(f, r);
  cf_split(f, r, 1, 128);
  cf_parallelize(f, r, 0, CF_PT_BIDX);
  cf_parallelize(f, r, 2, CF_PT_TIDX);
  free(check(1e-4));
}

Test(reductions, symbolic_sizes) {
  cf_tv *a = input(CF_FLOAT, 2, NULL);
  in[0].sizes[0] = 7;
  in[0].sizes[1] = 300;
  cf_tv *r = cf_sum(f, a, 1, (int[]){1});
  cf_fusion_add_output(f, r);
  cf_split(f, r, 1, 64);
  cf_parallelize(f, r, 0, CF_PT_BIDX);
  cf_parallelize(f, r, 2, CF_PT_TIDX);
  free(check(1e-4));
}

/* Half and bfloat16 in, the same out, accumulated in float registers. */
Test(reductions, half_and_bfloat16_accumulate_in_float) {
  cf_tv *h = input(CF_HALF, 2, (int64_t[]){4, 512});
  cf_tv *b = input(CF_BFLOAT16, 2, (int64_t[]){4, 512});
  cf_tv *rs[2] = {cf_sum(f, h, 1, (int[]){1}), cf_sum(f, b, 1, (int[]){1})};
  for (int i = 0; i < 2; i++) {
    cf_fusion_add_output(f, rs[i]);
    cf_split(f, rs[i], 1, 128);
    cf_parallelize(f, rs[i], 2, CF_PT_TIDX);
  }
  char *src = check(2e-2);
  cr_expect(strstr(src, "float a2[4];") != NULL, "no float accumulators in:\n%s", src);
  free(src);
}

/* x - sum(x): every thread reads the all-reduced sum of its row in the same kernel. */
Test(reductions, allreduce_read_back_by_every_thread) {
  cf_tv *x = input(CF_FLOAT, 2, (int64_t[]){6, 64});
  cf_tv *s = cf_sum(f, x, 1, (int[]){1});
  cf_tv *d = cf_sub(f, x, cf_broadcast(f, s, 2, (bool[]){false, true}));
  cf_fusion_add_output(f, d);
  cf_parallelize(f, d, 0, CF_PT_BIDX);
  cf_parallelize(f, d, 1, CF_PT_TIDX);
  cf_parallelize_all_like(f, d, 0, NULL);
  cf_inline_most(f);
  free(check(1e-4));
}

/* The shape fuzz seed 1162 found: a producer on threadIdx.x inlined through the
 * reduction axis makes the reduction a block reduction. */
Test(reductions, a_reduction_made_parallel_by_inlining) {
  cf_tv *a = input(CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_tv *p = cf_neg(f, a);
  cf_tv *s = cf_sum(f, p, 1, (int[]){1});
  cf_fusion_add_output(f, s);
  cf_set_memory_type(f, p, CF_MEM_SHARED);
  cf_parallelize(f, p, 1, CF_PT_TIDX);
  cr_assert_eq(cf_inline_at(f, p, 2), CF_OK, "%s", cf_fusion_error(f));
  free(check(1e-5));
}

/* bench/reduction.c's schedules at a small size: a row cached with vector loads, then
 * serial + warp reduction; columns with an unrolled serial loop, then over threadIdx.y. */
Test(reductions, bench_schedules_small) {
  cf_tv *a = input(CF_FLOAT, 2, (int64_t[]){8, 2048});
  cf_tv *t1 = cf_set(f, a);
  cf_tv *row = cf_sum(f, t1, 1, (int[]){1});
  cf_fusion_add_output(f, row);
  cf_split(f, row, 1, 4);
  cf_split(f, row, 1, 128);
  cf_propagate_transforms(f, row);
  cf_parallelize(f, row, 0, CF_PT_BIDX);
  cf_parallelize(f, row, 2, CF_PT_TIDX);
  cf_parallelize_all_like(f, row, 0, NULL);
  cf_parallelize(f, t1, 3, CF_PT_VECTORIZE);
  cf_inline_most(f);
  char *src = check(1e-4);
  cr_expect(strstr(src, "Array<float, 4>") != NULL, "no vector load in:\n%s", src);
  free(src);
}

Test(reductions, column_sum_unrolled_then_threadIdx_y) {
  cf_tv *a = input(CF_FLOAT, 2, (int64_t[]){256, 64});
  cf_tv *out = cf_sum(f, a, 1, (int[]){0});
  cf_fusion_add_output(f, out);
  cf_reorder(f, out, 1, (int[]){0, 1});
  cf_split(f, out, 1, 16);
  cf_split(f, out, 1, 4);
  cf_split(f, out, 0, 32);
  cf_parallelize(f, out, 0, CF_PT_BIDX);
  cf_parallelize(f, out, 1, CF_PT_TIDX);
  cf_parallelize(f, out, 3, CF_PT_UNROLL);
  cf_parallelize(f, out, 4, CF_PT_TIDY);
  free(check(1e-4));
}

/* A column sum kept in nvFuser's outer-reduction order [rS, iS]: the iteration axis runs
 * inside the reduction loop (each element of a row is accumulated in its own register),
 * so the output gets an initialization loop of its own before the reduction loop. Serial,
 * with the columns split onto blockIdx.x and onto threadIdx.x, and with the rows split. */
Test(reductions, column_sum_with_iteration_axes_inside_the_reduction_loop) {
  for (int variant = 0; variant < 4; variant++) {
    cf_fusion_destroy(f);
    f = cf_fusion_create();
    nin = 0;
    cf_tv *x = input(CF_FLOAT, 2, (int64_t[]){37, 19});
    cf_tv *s = cf_sum(f, cf_exp(f, x), 1, (int[]){0});
    cf_fusion_add_output(f, cf_mul_scalar(f, s, 2.0));
    if (variant == 1) cf_split(f, s, 1, 4), cf_parallelize(f, s, 1, CF_PT_BIDX);
    if (variant == 2) cf_split(f, s, 1, 4), cf_parallelize(f, s, 2, CF_PT_TIDX), cf_split(f, s, 0, 8);
    if (variant == 3) cf_split(f, s, 0, 5);
    if (variant > 0) cf_propagate_transforms(f, s), cf_parallelize_all_like(f, s, 0, NULL);
    cf_inline_most(f);
    char *src = check(1e-4);
    cr_expect(strstr(src, "= 0;") != NULL, "variant %d: no initialization in\n%s", variant, src);
    free(src);
  }
}

/* A block reduction over threadIdx.y{4} in a block of blockDim.y = 8 (another tensor
 * runs on threadIdx.y{8}), its local result read back by every thread: threads 4..7
 * combined nothing but hold the all-reduced value too, and must store it (DAG seed 2795
 * of the parallel-reduction fuzzer). */
Test(reductions, allreduce_in_a_block_wider_than_the_reduction_axis) {
  cf_tv *x = input(CF_FLOAT, 2, (int64_t[]){3, 4}), *y = input(CF_FLOAT, 2, (int64_t[]){3, 8});
  cf_tv *s = cf_sum(f, x, 1, (int[]){1});
  cf_tv *o = cf_add(f, cf_broadcast(f, s, 2, (bool[]){false, true}), y);
  cf_fusion_add_output(f, o);
  cf_parallelize(f, s, 1, CF_PT_TIDY);
  cf_parallelize(f, o, 1, CF_PT_TIDY);
  cf_inline_most(f);
  free(check(1e-5));
}

/* Tutorial.Reduction's blockIdx.x schedule: one block per column, rows in a serial loop;
 * each row is its own grid reduction (its own partials and semaphore). */
Test(reductions, grid_reduction_in_a_serial_loop) {
  cf_tv *a = input(CF_FLOAT, 2, (int64_t[]){6, 100});
  cf_tv *r = cf_sum(f, a, 1, (int[]){1});
  cf_fusion_add_output(f, r);
  cf_parallelize(f, r, 1, CF_PT_BIDX);
  char *src = check(1e-4);
  cr_expect(strstr(src, "atomicAdd(&S1.data[cf_gg], 1u)") != NULL, "no semaphore in:\n%s", src);
  free(src);
}

/* Threads, then blocks: rows on blockIdx.y, each row's 1000 columns over 8 blocks of 128
 * threads (the last block partly idle), max of a symbolic input. */
Test(reductions, block_then_grid_reduction) {
  cf_tv *a = input(CF_FLOAT, 2, NULL);
  in[0].sizes[0] = 5;
  in[0].sizes[1] = 1000;
  cf_tv *r = cf_max_reduce(f, a, 1, (int[]){1});
  cf_fusion_add_output(f, r);
  cf_split(f, r, 1, 128);
  cf_parallelize(f, r, 0, CF_PT_BIDY);
  cf_parallelize(f, r, 1, CF_PT_BIDX);
  cf_parallelize(f, r, 2, CF_PT_TIDX);
  free(check(0));
}

/* Two reduction axes on blockIdx.x and blockIdx.y, a 2-D thread block reducing y too. */
Test(reductions, grid_reduction_over_two_block_dims) {
  cf_tv *a = input(CF_DOUBLE, 4, (int64_t[]){3, 4, 5, 6});
  cf_tv *r = cf_sum(f, a, 3, (int[]){0, 1, 3});
  cf_fusion_add_output(f, r);
  cf_reorder(f, r, 1, (int[]){2, 0}); /* [i5, r3, r4, r6] */
  cf_parallelize(f, r, 0, CF_PT_TIDX);
  cf_parallelize(f, r, 1, CF_PT_BIDX);
  cf_parallelize(f, r, 2, CF_PT_BIDY);
  cf_parallelize(f, r, 3, CF_PT_TIDY);
  free(check(1e-12));
}

/* The executor keeps the work buffers; the last blocks leave the semaphores at zero, so a
 * second run (and a third with other sizes) reduces correctly again. */
Test(reductions, grid_buffers_are_reused_across_runs) {
  cf_tv *a = input(CF_FLOAT, 2, NULL);
  cf_tv *r = cf_sum(f, a, 1, (int[]){1});
  cf_fusion_add_output(f, r);
  cf_split(f, r, 1, 32);
  cf_parallelize(f, r, 0, CF_PT_BIDY);
  cf_parallelize(f, r, 1, CF_PT_BIDX);
  cf_parallelize(f, r, 2, CF_PT_TIDX);
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  int64_t shapes[3][2] = {{3, 200}, {3, 200}, {7, 90}};
  for (int k = 0; k < 3; k++) {
    KcInput ki = {CF_FLOAT, 2, {shapes[k][0], shapes[k][1]}, NULL};
    DLManagedTensor *x = kc_make_input(&ki, 40 + (uint64_t)k), *got = NULL, *want = NULL;
    const DLTensor *ins[1] = {&x->dl_tensor};
    cr_assert_eq(cf_executor_run(e, 1, ins, 1, &got), CF_OK, "%s", cf_executor_error(e));
    cr_assert_eq(cf_fusion_evaluate(f, 1, ins, &want), CF_OK, "%s", cf_fusion_error(f));
    char msg[256] = "";
    cr_expect(cf_tensor_allclose(&got->dl_tensor, &want->dl_tensor, 1e-4, 1e-4, msg, sizeof msg), "run %d: %s", k, msg);
    cf_tensor_free(x), cf_tensor_free(got), cf_tensor_free(want);
  }
  cf_executor_destroy(e);
}

/* ---- means over symbolic extents --------------------------------------------------- */

/* The sum a mean made: mean <- div <- sum, or broadcast <- div <- sum with keepdim. */
static cf_tv *sum_of_mean(cf_tv *m, bool keepdim) {
  Val *div = keepdim ? ir_tv(m)->def->in[0] : ir_tv(m);
  return ir_tv_handle(div->def->in[0]);
}

/* Moves a reduction's reduced axes innermost (and its producers with it), so that every
 * local tensor inlines into registers of constant size. */
static void reduced_axes_last(cf_tv *sum) {
  int n = cf_tv_naxes(sum), pos[8], k = 0;
  for (int x = 0; x < n; x++)
    if (cf_id_iter_type(cf_tv_axis(sum, x)) != CF_ITER_REDUCTION) pos[x] = k++;
  for (int x = 0; x < n; x++)
    if (cf_id_iter_type(cf_tv_axis(sum, x)) == CF_ITER_REDUCTION) pos[x] = k++;
  cf_reorder_all(f, sum, n, pos);
  cf_propagate_transforms(f, sum);
}

/* A mean over symbolic extents divides by the product of the reduced sizes, read from the
 * kernel's tensor arguments at run time: 2-D and 3-D, every choice of axes, keepdim or
 * not; the source divides by the sizes, and the host kernel equals the evaluator. */
Test(reductions, symbolic_means_divide_by_the_run_time_sizes) {
  static const struct {
    int rank, naxes, axes[3];
    int64_t sizes[3];
  } cases[] = {
      {2, 1, {1}, {5, 7}},        {2, 1, {0}, {5, 7}},        {2, 2, {0, 1}, {3, 11}},
      {3, 1, {2}, {3, 4, 5}},     {3, 1, {1}, {3, 4, 5}},     {3, 1, {0}, {2, 3, 9}},
      {3, 2, {0, 2}, {4, 3, 6}},  {3, 2, {1, 2}, {2, 5, 3}},  {3, 3, {0, 1, 2}, {3, 2, 7}},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
    for (int keep = 0; keep < 2; keep++) {
      cf_fusion_destroy(f);
      f = cf_fusion_create();
      nin = 0;
      cf_tv *a = input(CF_FLOAT, cases[k].rank, NULL);
      for (int x = 0; x < cases[k].rank; x++) in[0].sizes[x] = cases[k].sizes[x];
      cf_tv *m = cf_reduce(f, CF_REDUCE_MEAN, cf_exp(f, a), cases[k].naxes, cases[k].axes, keep);
      cr_assert_not_null(m, "%s", cf_fusion_error(f));
      cf_fusion_add_output(f, m);
      reduced_axes_last(sum_of_mean(m, keep));
      cf_inline_most(f);
      snprintf(kc_label, sizeof kc_label, "case %zu keepdim %d: ", k, keep);
      char *src = check(1e-5);
      cr_expect(strstr(src, "cf_div(") && strstr(src, ", (float)((int64_t)(") != NULL, "%sno division by the sizes in:\n%s", kc_label, src);
      free(src);
    }
  kc_label[0] = 0;
}

/* The same division inside a block reduction (threadIdx.x over the reduced axis). */
Test(reductions, symbolic_mean_after_a_block_reduction) {
  cf_tv *a = input(CF_FLOAT, 2, NULL);
  in[0].sizes[0] = 6;
  in[0].sizes[1] = 77;
  cf_tv *r = cf_reduce(f, CF_REDUCE_MEAN, a, 1, (int[]){1}, true);
  cf_fusion_add_output(f, r);
  cf_tv *sum = sum_of_mean(r, true);
  cf_split(f, sum, 1, 32);
  cf_parallelize(f, sum, 0, CF_PT_BIDX);
  cf_parallelize(f, sum, 2, CF_PT_TIDX);
  cf_inline_most(f);
  free(check(1e-5));
}

/* Define and run: symbolic means through cf_fusion_execute on the host backend, with sizes
 * changing between calls (one cache, several signatures). */
Test(reductions, symbolic_means_through_define_and_run) {
  cf_tv *a = input(CF_FLOAT, 3, NULL);
  cf_fusion_add_output(f, cf_reduce(f, CF_REDUCE_MEAN, a, 2, (int[]){1, 2}, true));
  cf_fusion_cache *c = cf_fusion_cache_create(f, &(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_assert_not_null(c);
  int64_t shapes[3][3] = {{4, 5, 6}, {2, 9, 33}, {1, 3, 130}};
  for (int k = 0; k < 3; k++) {
    KcInput ki = {CF_FLOAT, 3, {shapes[k][0], shapes[k][1], shapes[k][2]}, NULL};
    DLManagedTensor *x = kc_make_input(&ki, 70 + (uint64_t)k), *got[1] = {0}, *want[1] = {0};
    const DLTensor *ins[1] = {&x->dl_tensor};
    cr_assert_eq(cf_fusion_execute(c, 1, ins, 1, got), CF_OK, "%s", cf_fusion_cache_error(c));
    cr_assert_eq(cf_fusion_evaluate(f, 1, ins, want), CF_OK, "%s", cf_fusion_error(f));
    for (int o = 0; o < 1; o++) {
      char msg[256] = "";
      cr_expect(cf_tensor_allclose(&got[o]->dl_tensor, &want[o]->dl_tensor, 1e-5, 1e-5, msg, sizeof msg),
                "shape %d output %d: %s", k, o, msg);
      cf_tensor_free(got[o]), cf_tensor_free(want[o]);
    }
    cf_tensor_free(x);
  }
  cf_fusion_cache_destroy(c);
}
