/* Tests of cf_rfactor (scheduler/rfactor.c): the two tensors it makes, printed in
 * nvFuser's notation ("rf" axes, the root -> logical split), its errors, and the kernels
 * of rfactored schedules (per-thread partials, then a block reduction) against the
 * reference evaluator on the host backend and NVRTC, through kernel_check.h. */
#include "../kernels/kernel_check.h"
#include "sched_test_util.h"

static cf_fusion *f;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(rfactor, .init = setup, .fini = teardown);

/* Tutorial.ReductionRFactor: tv1 = sum(tv0) over a symbolic 1-D tensor, split by 1024. */
static cf_tv *tutorial_1d(cf_tv **t1) {
  cf_tv *t0 = cf_tensor_symbolic(f, CF_FLOAT, 1);
  cf_fusion_add_input(f, t0);
  *t1 = cf_sum(f, t0, 1, (int[]){0});
  cf_fusion_add_output(f, *t1);
  EXPECT_OK(cf_split(f, *t1, 0, 1024));
  return t0;
}

Test(rfactor, splits_a_reduction_into_a_partial_and_a_final_one) {
  cf_tv *t1;
  tutorial_1d(&t1);
  cf_tv *t2 = cf_rfactor(f, t1, 1, (int[]){0});
  cr_assert_not_null(t2, "%s", cf_fusion_error(f));
  char *math = tu_capture_fusion(cf_fusion_print_math, f);
  cr_expect_str_eq(math, "Inputs:\n  T0_g_float[iS0{i0}]\nOutputs:\n  T1_g_float[rS7{1024}]\n\n%kernel_math {\n"
                         "T2_l_float[rS5{( ceilDiv(i0, 1024) )}rf, iS6{1024}rf]\n   = sum( T0_g_float[iS0{i0}] );\n"
                         "T1_g_float[rS7{1024}]\n   = sum( T2_l_float[rS5{( ceilDiv(i0, 1024) )}rf, iS6{1024}rf] );\n"
                         "} // %kernel_math\n");
  free(math);
  EXPECT_OK(cf_parallelize(f, t1, 0, CF_PT_TIDX));
  EXPECT_OK(cf_parallelize(f, t2, 1, CF_PT_TIDX));
  char *tr = tu_capture_fusion(cf_fusion_print_transforms, f);
  cr_expect(strstr(tr, "T2_l_float[rS5{( ceilDiv(i0, 1024) )}rf, ithreadIdx.x6{1024}rf]\n root domain : (rS4{i0})\n"
                       "  Split: rS4{i0} by factor 1024 -> rS5{( ceilDiv(i0, 1024) )}rf, ithreadIdx.x6{1024}rf\n"
                       " logical domain : (rS5{( ceilDiv(i0, 1024) )}rf, ithreadIdx.x6{1024}rf)\n") != NULL,
            "transforms:\n%s", tr);
  free(tr);
  cr_expect_eq(cf_fusion_verify(f), CF_OK, "%s", cf_fusion_error(f));
}

Test(rfactor, tutorial_schedule_runs_like_the_evaluator) {
  cf_tv *t1;
  tutorial_1d(&t1);
  cf_tv *t2 = cf_rfactor(f, t1, 1, (int[]){0});
  EXPECT_OK(cf_parallelize(f, t1, 0, CF_PT_TIDX));
  EXPECT_OK(cf_parallelize(f, t2, 1, CF_PT_TIDX));
  /* 10000 elements: 10 per thread, the last round partial; 300 < 1024: most threads
   * hold only the identity */
  KcInput big = {CF_FLOAT, 1, {10000}, NULL}, small = {CF_FLOAT, 1, {300}, NULL};
  char *src = kc_check(f, 1, &big, 1e-4);
  cr_expect(strstr(src, "  T2[0] = 0;\n") != NULL, "the partial is not initialized by every thread:\n%s", src);
  free(src);
  free(kc_check(f, 1, &small, 1e-4));
}

/* Rows on blockIdx.x; each row's 1000 columns split by 128 and rfactored. */
Test(rfactor, rows_on_blocks) {
  cf_tv *t0 = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){6, 1000});
  cf_fusion_add_input(f, t0);
  cf_tv *t1 = cf_sum(f, t0, 1, (int[]){1});
  cf_fusion_add_output(f, t1);
  EXPECT_OK(cf_split(f, t1, 1, 128));
  cf_tv *t2 = cf_rfactor(f, t1, 1, (int[]){1});
  cr_assert_not_null(t2, "%s", cf_fusion_error(f));
  EXPECT_TV(t2, "T2_l_float[iS6{6}, rS8{8}rf, iS9{128}rf]");
  EXPECT_TV(t1, "T1_g_float[iS10{6}, rS11{128}]");
  EXPECT_OK(cf_parallelize(f, t1, 0, CF_PT_BIDX));
  EXPECT_OK(cf_parallelize(f, t1, 1, CF_PT_TIDX));
  EXPECT_OK(cf_parallelize(f, t2, 0, CF_PT_BIDX));
  EXPECT_OK(cf_parallelize(f, t2, 2, CF_PT_TIDX));
  KcInput in = {CF_FLOAT, 2, {6, 1000}, NULL};
  free(kc_check(f, 1, &in, 1e-4));
}

Test(rfactor, errors_name_the_tensor) {
  cf_tv *t1;
  cf_tv *t0 = tutorial_1d(&t1);
  cr_expect_null(cf_rfactor(f, t1, 2, (int[]){0, 1}));
  cr_expect_str_eq(cf_fusion_error(f), "rfactor: every reduction axis is rfactored; leave at least one for T1 for "
                                       "T1_g_float[rS2{( ceilDiv(i0, 1024) )}, rS3{1024}]");
  cf_fusion_clear_error(f);
  cr_expect_null(cf_rfactor(f, t1, 1, (int[]){2}));
  cr_expect_str_eq(cf_fusion_error(f), "rfactor: axis 2 out of range for T1_g_float[rS2{( ceilDiv(i0, 1024) )}, "
                                       "rS3{1024}]");
  cf_fusion_clear_error(f);
  cr_expect_null(cf_rfactor(f, t0, 1, (int[]){0}));
  cr_expect_str_eq(cf_fusion_error(f), "rfactor: T0 is not the output of a reduction for T0_g_float[iS0{i0}]");
  cf_fusion_clear_error(f);
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_fusion_add_input(f, x);
  cf_tv *s = cf_sum(f, x, 1, (int[]){1});
  cf_fusion_add_output(f, s);
  EXPECT_OK(cf_split(f, s, 1, 4));
  cr_expect_null(cf_rfactor(f, s, 1, (int[]){0}));
  cr_expect_str_eq(cf_fusion_error(f), "rfactor: axis 0 is not a reduction axis for T3_g_float[iS6{4}, rS8{2}, "
                                       "rS9{4}]");
  cf_fusion_clear_error(f);
  cf_tv *p = cf_rfactor(f, s, 1, (int[]){1});
  cr_assert_not_null(p, "%s", cf_fusion_error(f));
  cr_expect_null(cf_rfactor(f, p, 1, (int[]){1}));
  cr_expect_str_eq(cf_fusion_error(f), "rfactor: T4 is the partial result of an rfactor already; rfactor the tensor "
                                       "it feeds instead for T4_l_float[iS10{4}, rS12{2}rf, iS13{4}rf]");
}

/* Iteration axes split and merged before the rfactor (nvFuser's FusionReduction2 and
 * FusionReductionTFT do this): T2's logical domain applies only the transforms the
 * rfactored axis derives from, both tensors keep the iteration axes' transforms. */
Test(rfactor, iteration_axes_split_before_the_rfactor) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 3, (int64_t[]){6, 5, 40});
  cf_fusion_add_input(f, x);
  cf_tv *s = cf_sum(f, x, 1, (int[]){2});
  cf_fusion_add_output(f, s);
  EXPECT_OK(cf_merge(f, s, 0));
  EXPECT_OK(cf_split(f, s, 0, 4));
  EXPECT_OK(cf_split(f, s, 2, 8));
  EXPECT_TV(s, "T1_g_float[iS7{8}, iS8{4}, rS9{5}, rS10{8}]");
  cf_tv *p = cf_rfactor(f, s, 1, (int[]){2});
  cr_assert_not_null(p, "%s", cf_fusion_error(f));
  EXPECT_TV(p, "T2_l_float[iS15{8}, iS16{4}, rS17{5}rf, iS18{8}rf]");
  EXPECT_TV(s, "T1_g_float[iS23{8}, iS24{4}, rS21{8}]");
  char *tr = tu_capture_fusion(cf_fusion_print_transforms, f);
  cr_expect(strstr(tr, "T2_l_float[iS15{8}, iS16{4}, rS17{5}rf, iS18{8}rf]\n root domain : (iS11{6}, iS12{5}, "
                       "rS13{40})\n  Split: rS13{40} by factor 8 -> rS17{5}rf, iS18{8}rf\n logical domain : (iS11{6}, "
                       "iS12{5}, rS17{5}rf, iS18{8}rf)\n") != NULL, "transforms:\n%s", tr);
  free(tr);
  cr_expect_eq(cf_fusion_verify(f), CF_OK, "%s", cf_fusion_error(f));
  EXPECT_OK(cf_parallelize(f, s, 0, CF_PT_BIDX));
  EXPECT_OK(cf_parallelize(f, p, 0, CF_PT_BIDX));
  EXPECT_OK(cf_parallelize(f, s, 2, CF_PT_TIDX));
  EXPECT_OK(cf_parallelize(f, p, 3, CF_PT_TIDX));
  KcInput in = {CF_FLOAT, 3, {6, 5, 40}, NULL};
  free(kc_check(f, 1, &in, 1e-4));
}

/* cache_before on a reduction: the cache takes the reduction with its reduction axes,
 * the output becomes a copy of it (what schedulers do to store results with vectors). */
Test(rfactor, cache_before_and_after_a_reduction) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 96});
  cf_fusion_add_input(f, x);
  cf_tv *s = cf_sum(f, x, 1, (int[]){1});
  cf_tv *out = cf_neg(f, s);
  cf_fusion_add_output(f, s);
  cf_fusion_add_output(f, out);
  cf_tv *c = cf_cache_before(f, s);
  cr_assert_not_null(c, "%s", cf_fusion_error(f));
  cf_tv *r = cf_cache_after(f, s);
  cr_assert_not_null(r, "%s", cf_fusion_error(f));
  char *math = tu_capture_fusion(cf_fusion_print_math, f);
  cr_expect_str_eq(math, "Inputs:\n  T0_g_float[iS0{4}, iS1{96}]\nOutputs:\n  T1_g_float[iS5{4}]\n  T2_g_float[iS4{4}]\n\n"
                         "%kernel_math {\n"
                         "T3_l_float[iS2{4}, rS3{96}]\n   = sum( T0_g_float[iS0{4}, iS1{96}] );\n"
                         "T1_g_float[iS5{4}]\n   = Set( T3_l_float[iS2{4}, rS3{96}] );\n"
                         "T4_l_float[iS6{4}]\n   = Set( T1_g_float[iS5{4}] );\n"
                         "T2_g_float[iS4{4}]\n   = neg( T4_l_float[iS6{4}] );\n"
                         "} // %kernel_math\n");
  free(math);
  cr_expect_eq(cf_fusion_verify(f), CF_OK, "%s", cf_fusion_error(f));
  EXPECT_OK(cf_split(f, c, 1, 32));
  EXPECT_OK(cf_parallelize(f, c, 0, CF_PT_BIDX));
  EXPECT_OK(cf_parallelize(f, c, 2, CF_PT_TIDX));
  for (int i = 0; i < 3; i++) EXPECT_OK(cf_parallelize(f, i == 0 ? s : i == 1 ? r : out, 0, CF_PT_BIDX));
  KcInput in = {CF_FLOAT, 2, {4, 96}, NULL};
  free(kc_check(f, 1, &in, 1e-4));
}

/* A broadcast axis merged into the axes the rfactored ones derive from would vanish from
 * both tensors' shapes (DAG fuzzer mode 5, seeds 505 and 1647): refused, naming it. */
Test(rfactor, a_broadcast_merged_into_the_rfactored_axes_is_refused) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){6, 1});
  cf_fusion_add_input(f, x);
  cf_tv *s = cf_sum(f, x, 1, (int[]){0});
  cf_fusion_add_output(f, s);
  EXPECT_OK(cf_merge(f, s, 0));
  EXPECT_OK(cf_split(f, s, 0, 4));
  cr_expect_null(cf_rfactor(f, s, 1, (int[]){1}));
  cr_expect_str_eq(cf_fusion_error(f), "rfactor: the broadcast axis bS3{1} of T1 is merged into the axes the "
                                       "rfactored ones derive from; merge it after the rfactor for "
                                       "T1_g_float[rS5{2}, rS6{4}]");
}

/* compute_at into an rfactor tensor replays the tensor's root -> logical split onto the
 * producer: the producer reaches the requested position (it stopped at 1 before issue 23,
 * the split's outputs having no counterpart), and runs like the evaluator. */
Test(rfactor, compute_at_into_an_rfactor_tensor_goes_past_its_split) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){5, 70});
  cf_fusion_add_input(f, x);
  cf_tv *e = cf_exp(f, x);
  cf_tv *s = cf_sum(f, e, 1, (int[]){1});
  cf_fusion_add_output(f, s);
  EXPECT_OK(cf_split(f, s, 1, 16));
  cf_tv *p = cf_rfactor(f, s, 1, (int[]){1});
  EXPECT_OK(cf_compute_at(f, e, p, 3));
  cr_expect_eq(cf_tv_compute_at_pos(e), 3);
  EXPECT_TV(e, "T1_l_float[iS2{5}, iS14{5}, iS15{16}] ca_pos( 3 )");
  EXPECT_OK(cf_compute_at(f, p, s, 1));
  EXPECT_OK(cf_parallelize(f, s, 1, CF_PT_TIDX));
  EXPECT_OK(cf_parallelize(f, p, 2, CF_PT_TIDX));
  KcInput in = {CF_FLOAT, 2, {5, 70}, NULL};
  free(kc_check(f, 1, &in, 1e-4));
}

/* A block reduction computed inside another reduction's thread loop (an rfactor partial
 * over threadIdx.y inlined at its final reduction's threadIdx.x axis): the inner one was
 * left a per-thread sum (the reduction pass skipped the outer reduction's loop body), and
 * rows came out a third of their sums (DAG fuzzer mode 5, seed 8962). */
Test(rfactor, a_block_reduction_inside_another_reductions_loop) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){3, 64});
  cf_fusion_add_input(f, x);
  cf_tv *s = cf_sum(f, x, 1, (int[]){1});
  cf_fusion_add_output(f, s);
  EXPECT_OK(cf_split(f, s, 1, 3));
  cf_tv *p = cf_rfactor(f, s, 1, (int[]){2});
  EXPECT_OK(cf_parallelize(f, p, 1, CF_PT_TIDX));
  EXPECT_OK(cf_parallelize(f, p, 2, CF_PT_TIDY));
  EXPECT_OK(cf_parallelize(f, s, 1, CF_PT_TIDX));
  EXPECT_OK(cf_inline_at(f, p, 2));
  KcInput in = {CF_FLOAT, 2, {3, 64}, NULL};
  free(kc_check(f, 1, &in, 1e-4));
}

/* The same without an rfactor: y = sum(x[3, 22, 3], 2) on threadIdx.y inlined into
 * z = sum(y, 1) on threadIdx.x. */
Test(rfactor, a_reduction_inlined_into_a_block_reduction_loop) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 3, (int64_t[]){3, 22, 3});
  cf_fusion_add_input(f, x);
  cf_tv *y = cf_sum(f, x, 1, (int[]){2}), *z = cf_sum(f, y, 1, (int[]){1});
  cf_fusion_add_output(f, z);
  EXPECT_OK(cf_parallelize(f, y, 1, CF_PT_TIDX));
  EXPECT_OK(cf_parallelize(f, y, 2, CF_PT_TIDY));
  EXPECT_OK(cf_parallelize(f, z, 1, CF_PT_TIDX));
  EXPECT_OK(cf_inline_at(f, y, 2));
  KcInput in = {CF_FLOAT, 3, {3, 22, 3}, NULL};
  free(kc_check(f, 1, &in, 1e-4));
}

/* A reduction axis of one element (a row of 8 split by 8) in a loop of one iteration on
 * blockIdx.x, shared with its rfactor partial, read back in a consumer whose columns run on
 * blockIdx.x{3}: only block 0 runs the loop, so the reduction is a grid reduction of one
 * element read in every block: a grid all-reduce. (It was a serial reduction every block
 * started from the empty value, block 0 alone folding the partial: the other blocks read
 * 0; DAG fuzzer mode 5, seed 6905.) */
Test(rfactor, a_one_element_reduction_in_a_one_block_loop) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){5, 8}), *v = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){5, 3});
  cf_fusion_add_input(f, x);
  cf_fusion_add_input(f, v);
  cf_tv *s = cf_sum(f, x, 1, (int[]){1});
  cf_tv *o = cf_add(f, cf_broadcast(f, s, 2, (bool[]){false, true}), v);
  cf_fusion_add_output(f, o);
  EXPECT_OK(cf_split(f, s, 1, 8));
  cf_tv *p = cf_rfactor(f, s, 1, (int[]){2});
  EXPECT_OK(cf_parallelize(f, p, 1, CF_PT_BIDX));
  EXPECT_OK(cf_parallelize(f, s, 1, CF_PT_BIDX));
  EXPECT_OK(cf_parallelize(f, o, 1, CF_PT_BIDX));
  EXPECT_OK(cf_compute_at(f, p, s, 2));
  KcInput in[] = {{CF_FLOAT, 2, {5, 8}, NULL}, {CF_FLOAT, 2, {5, 3}, NULL}};
  free(kc_check(f, 2, in, 1e-4));
}
