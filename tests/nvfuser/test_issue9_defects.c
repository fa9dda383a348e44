/* The six defects of issue 9 ("Why", items 1-6) as regression tests. Each compiles and
 * runs on the host backend (and CUDA with a device) and must give the evaluator's result,
 * or, where the issue allows it (4), be refused with a message naming the tensor and the
 * axis; none may give a wrong result.
 *   1. an op before a broadcast, the broadcast axis merged (the README tour plus neg)
 *   2. a value and a reduction of it both consumed (softmax), inline_most
 *   3. a producer whose consumers sit in two loop nests (the pointwise scheduler)
 *   4. a broadcast with two differently sized concrete partners, compute_at -1
 *   5. limits that drop work: a 100-deep loop nest around a shared-memory write (the
 *      sync after it), and a fusion of 70 inputs
 *   6. the kernel cache key: a * 1.0000002 must not run the kernel of a * 1.0000001
 * The part of 6 about the cost of a cache hit is a timing, not a test here. */
#include "nvfuser/nvf_util.h"

TestSuite(issue9, .init = nv_setup, .fini = nv_teardown);

Test(issue9, defect1_op_before_merged_broadcast) {
  cf_tv *a = nv_concrete(2, (int64_t[]){4, 8}), *b = nv_concrete(1, (int64_t[]){8});
  cf_tv *bb = cf_broadcast(f, cf_neg(f, b), 2, (bool[]){true, false});
  cf_tv *out = cf_relu(f, cf_add(f, cf_mul(f, a, bb), a));
  cf_fusion_add_output(f, out);
  cf_merge(f, out, 0);
  cf_split(f, out, 0, 8);
  cf_parallelize(f, out, 0, CF_PT_BIDX);
  cf_parallelize(f, out, 1, CF_PT_TIDX);
  cf_propagate_transforms(f, out);
  cf_parallelize_all_like(f, out, 0, NULL);
  cf_inline_most(f);
  nv_check(2, (KcInput[]){F32(4, 8), F32(8)});
}

Test(issue9, defect2_value_and_its_reduction_consumed) {
  cf_tv *x = nv_concrete(2, (int64_t[]){4, 8});
  cf_tv *e = cf_exp(f, x);
  cf_tv *s = cf_sum(f, e, 1, (int[]){1});
  cf_tv *y = cf_div(f, e, cf_broadcast(f, s, 2, (bool[]){false, true}));
  cf_fusion_add_output(f, y);
  cf_inline_most(f);
  nv_check(1, (KcInput[]){F32(4, 8)});
}

Test(issue9, defect3_consumers_in_two_loop_nests) {
  cf_tv *x = nv_concrete(2, (int64_t[]){8, 64}), *v = nv_concrete(1, (int64_t[]){64});
  cf_tv *row = cf_broadcast(f, v, 2, (bool[]){true, false});
  cf_tv *a = cf_mul(f, x, row);
  cf_tv *b = cf_sub(f, a, row);
  cf_fusion_add_output(f, b);
  cf_fusion_add_output(f, a);
  cr_assert_eq(cf_schedule_pointwise(f), CF_OK, "%s", cf_fusion_error(f));
  nv_check(2, (KcInput[]){F32(8, 64), F32(64)});
}

/* tv3 = bcast(tv0)[b, 5] feeds tv4 = tv3 + tv1[3, 5] and tv5 = tv3 + tv2[4, 5]; tv3 is
 * computed at tv4, -1 (nvFuser throws). Right results, or a refusal naming T3 and an
 * axis. */
Test(issue9, defect4_broadcast_with_two_partner_sizes) {
  cf_tv *tv0 = nv_concrete(1, (int64_t[]){5});
  cf_tv *tv1 = nv_concrete(2, (int64_t[]){3, 5}), *tv2 = nv_concrete(2, (int64_t[]){4, 5});
  cf_tv *tv3 = cf_broadcast(f, tv0, 2, (bool[]){true, false});
  cf_tv *tv4 = cf_add(f, tv3, tv1), *tv5 = cf_add(f, tv3, tv2);
  cf_fusion_add_output(f, tv4);
  cf_fusion_add_output(f, tv5);
  cf_compute_at(f, tv3, tv4, -1);
  char *msg = nv_compile_error();
  cr_expect_str_eq(msg, "compile: T3's axis 0 (bS5{1}) shares one loop with T4's axis 0 (iS7{3}) and T5's axis 0 "
                        "(iS9{4}), which iterate different domains (a broadcast concretized to two extents in one "
                        "loop); lower T3's compute-at position");
  free(msg);
}

/* A 32x32 transpose staged in shared memory (T1 written on [TIDy, TIDx], read
 * transposed), each tensor's loop nest 100 extent-1 loops deep around the write and the
 * read: the RAW __syncthreads between them must be there (the host race detector stops
 * the run without it). */
Test(issue9, defect5_sync_after_a_100_deep_loop_nest) {
  cf_tv *a = nv_concrete(2, (int64_t[]){32, 32});
  cf_tv *t1 = cf_set(f, a);
  cf_tv *out = cf_transpose(f, t1, 0, 1);
  cf_fusion_add_output(f, out);
  cf_set_memory_type(f, t1, CF_MEM_SHARED);
  cf_tv *both[] = {t1, out};
  for (int t = 0; t < 2; t++) {
    for (int k = 0; k < 100; k++) cf_split(f, both[t], 0, 1);
    cf_parallelize(f, both[t], 0, CF_PT_TIDY);
    cf_parallelize(f, both[t], -1, CF_PT_TIDX);
  }
  cr_assert_eq(cf_tv_naxes(out), 102);
  nv_check(1, (KcInput[]){F32(32, 32)});
}

#define MANY 70 /* inputs of the wide fusion: more than the 64 of today's fixed arrays */

/* out = in0 + in1 + ... + in69 over [4, 8], merged, on TIDx, inlined: compiles, runs
 * and matches the evaluator. */
Test(issue9, defect5_seventy_inputs) {
  cf_tv *in[MANY], *acc = NULL;
  for (int i = 0; i < MANY; i++) {
    in[i] = nv_concrete(2, (int64_t[]){4, 8});
    acc = i ? cf_add(f, acc, in[i]) : cf_set(f, in[i]);
  }
  cf_fusion_add_output(f, acc);
  cf_merge(f, acc, 0);
  cf_parallelize(f, acc, 0, CF_PT_TIDX);
  cf_propagate_transforms(f, acc);
  cf_parallelize_all_like(f, acc, 0, NULL);
  cf_inline_most(f);
  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  DLManagedTensor *x[MANY], *got = NULL, *want = NULL;
  const DLTensor *ins[MANY];
  for (int i = 0; i < MANY; i++) {
    x[i] = kc_make_input(&F32(4, 8), 300 + (uint64_t)i);
    ins[i] = &x[i]->dl_tensor;
  }
  cr_assert_eq(cf_fusion_evaluate(f, MANY, ins, &want), CF_OK, "%s", cf_fusion_error(f));
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  cr_assert_eq(cf_executor_run(e, MANY, ins, 1, &got), CF_OK, "%s", cf_executor_error(e));
  char msg[256] = "";
  cr_expect(cf_tensor_allclose(&got->dl_tensor, &want->dl_tensor, 1e-5, 1e-5, msg, sizeof msg), "%s", msg);
  for (int i = 0; i < MANY; i++) cf_tensor_free(x[i]);
  cf_tensor_free(got), cf_tensor_free(want);
  cf_executor_destroy(e);
}

/* out = a * c for a[4, 8], scheduled on TIDx; compiled with `cache` (NULL: none) and run
 * on `x`. Returns the output. */
static DLManagedTensor *scale(double c, cf_kernel_cache *cache, const DLTensor *x) {
  cf_fusion *g = cf_fusion_create();
  cf_tv *a = cf_tensor_concrete(g, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_fusion_add_input(g, a);
  cf_tv *out = cf_mul_scalar(g, a, c);
  cf_fusion_add_output(g, out);
  cf_parallelize(g, out, 1, CF_PT_TIDX);
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST, .cache = cache});
  cr_assert_eq(cf_executor_compile(e, g), CF_OK, "%s", cf_executor_error(e));
  DLManagedTensor *got = NULL;
  cr_assert_eq(cf_executor_run(e, 1, &x, 1, &got), CF_OK, "%s", cf_executor_error(e));
  cf_executor_destroy(e);
  cf_fusion_destroy(g);
  return got;
}

/* The fusion with 1.0000002 after the one with 1.0000001 (both print as 1 with %g): a
 * cache miss, and bit for bit the result of a fresh compile. */
Test(issue9, defect6_cache_key_keeps_constants) {
  DLManagedTensor *x = kc_make_input(&F32(4, 8), 9);
  DLManagedTensor *fresh1 = scale(1.0000001, NULL, &x->dl_tensor), *fresh2 = scale(1.0000002, NULL, &x->dl_tensor);
  cr_assert(!cf_tensor_equal(&fresh1->dl_tensor, &fresh2->dl_tensor), "the two constants must give different floats");
  cf_kernel_cache *cache = cf_kernel_cache_create();
  DLManagedTensor *got1 = scale(1.0000001, cache, &x->dl_tensor), *got2 = scale(1.0000002, cache, &x->dl_tensor);
  cr_expect_eq(cf_kernel_cache_hits(cache), 0);
  cr_expect_eq(cf_kernel_cache_misses(cache), 2);
  cr_expect(cf_tensor_equal(&got1->dl_tensor, &fresh1->dl_tensor));
  cr_expect(cf_tensor_equal(&got2->dl_tensor, &fresh2->dl_tensor), "a * 1.0000002 ran the kernel of a * 1.0000001");
  cf_kernel_cache_destroy(cache);
  cf_tensor_free(x), cf_tensor_free(fresh1), cf_tensor_free(fresh2), cf_tensor_free(got1), cf_tensor_free(got2);
}

/* Found by the DAG fuzzer (seed 61006): e = exp(bcast(v))[1, 8, 1] feeds s = sum(e, 2), an
 * output, and o = x + e with o's axis 0 on threadIdx.x. e is inlined into both, so s's
 * broadcast axis 0 shares o's threadIdx.x loop: s's update runs in a loop on threadIdx.x,
 * but s reduces no axis on it; every thread must not add into the one global element. */
Test(issue9, fuzz61006_reduction_in_a_parallel_loop_of_a_broadcast_axis) {
  cf_tv *x = nv_concrete(3, (int64_t[]){3, 8, 5}), *v = nv_concrete(1, (int64_t[]){8});
  cf_tv *e = cf_exp(f, cf_broadcast(f, v, 3, (bool[]){true, false, true}));
  cf_tv *s = cf_sum(f, e, 1, (int[]){2});
  cf_tv *o = cf_add(f, x, e);
  cf_fusion_add_output(f, s);
  cf_fusion_add_output(f, o);
  cf_parallelize(f, o, 0, CF_PT_TIDX);
  cf_inline_most(f);
  nv_check(2, (KcInput[]){F32(3, 8, 5), F32(8)});
}

/* Found by the DAG fuzzer (seed 63265): t3 = t2 + t2 (t2 = bcast(v)[8, 1]) stays in local
 * memory on blockIdx.x{8}; t6 = neg(t3) is inlined into t7 = t6 + x[8, 3], whose loop
 * (axes merged) is blockIdx.x{24}. t6's blocks 8..23 would read a t3 no block of theirs
 * computed: refused, naming t3, its axis and the loop. */
Test(issue9, fuzz63265_local_read_through_a_promoted_block_loop) {
  cf_tv *x = nv_concrete(2, (int64_t[]){8, 3}), *v = nv_concrete(1, (int64_t[]){8});
  cf_tv *t2 = cf_broadcast(f, v, 2, (bool[]){false, true});
  cf_tv *t3 = cf_add(f, t2, t2);
  cf_tv *t6 = cf_neg(f, t3);
  cf_tv *t7 = cf_add(f, t6, x);
  cf_fusion_add_output(f, t7);
  cf_tv *all[] = {t2, t3, t6, t7};
  for (int i = 0; i < 4; i++) {
    cf_merge(f, all[i], 0);
    cf_parallelize(f, all[i], 0, CF_PT_BIDX);
  }
  cr_assert_eq(cf_inline_at(f, t6, 1), CF_OK, "%s", cf_fusion_error(f));
  char *msg = nv_compile_error();
  cr_expect_str_eq(msg, "compile: T3 is in Local memory, but T4 reads its axis 0 (iblockIdx.x12{8}) on blockIdx.x in "
                        "a loop over iblockIdx.x14{24}, which that axis does not iterate (the producer's blocks hold "
                        "other elements); inline T3 into T4, or parallelize them apart");
  free(msg);
}

/* Found by the DAG fuzzer (mode 1, seeds 36222 and 39199): b = bcast(v)[1, 6] feeds
 * t = -b and u = b + x[4, 6]; every tensor merged and split by 4; b inlined at 2 (so t's
 * inner loop is u's, over rows and columns merged), t and u at 1 into o = t + u. t holds
 * 4 elements per outer iteration, placed by its own column, while the loop runs over
 * positions of the merged [4, 6] that wrap rows (columns 4, 5, 0, 1): two land on one
 * place, and o reads t after the loop. Refused; with o in the same loop, it computes. */
static cf_tv *wrapped_rows(bool o_in_the_loop) {
  cf_tv *x = nv_concrete(2, (int64_t[]){4, 6}), *v = nv_concrete(1, (int64_t[]){6});
  cf_tv *b = cf_broadcast(f, v, 2, (bool[]){true, false});
  cf_tv *t = cf_neg(f, b), *u = cf_add(f, b, x), *o = cf_add(f, t, u);
  cf_fusion_add_output(f, o);
  cf_tv *all[] = {b, t, u, o};
  for (int i = 0; i < 4; i++) cf_merge(f, all[i], 0), cf_split(f, all[i], 0, 4);
  cf_inline_at(f, b, 2);
  cf_inline_at(f, u, o_in_the_loop ? 2 : 1);
  cf_inline_at(f, t, 1);
  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  return o;
}

Test(issue9, fuzz36222_partial_buffer_in_a_loop_promoted_over_wrapped_rows) {
  wrapped_rows(false);
  char *msg = nv_compile_error();
  cr_expect_str_eq(msg, "compile: T3's axis 1 (iS16{4}) runs in a loop over T4's axis 1 (iS19{4}), a larger domain, "
                        "but T5 reads T3 outside that loop; inline T3 into T5 there, or lower the compute-at "
                        "position of T3's producers");
  free(msg);
}

Test(issue9, fuzz36222_the_same_read_inside_the_loop) {
  wrapped_rows(true);
  nv_check(2, (KcInput[]){F32(4, 6), F32(6)});
}
