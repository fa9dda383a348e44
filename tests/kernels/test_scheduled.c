/* Scheduled fusions compiled with NVRTC for sm_90a and run on the host backend (and on
 * the GPU when there is one), each checked against the reference evaluator; plus facts
 * about the generated code of some of them. */
#include <stdlib.h>
#include <string.h>

#include "cases.h"

static char *run_case(int i) {
  cf_fusion *f = cf_fusion_create();
  KcInput in[TU_MAX_IO];
  int nin = 0;
  kc_cases[i].build(f, in, &nin);
  char *src = kc_check(f, nin, in, kc_cases[i].tol);
  cf_fusion_destroy(f);
  return src;
}

#define CASE(idx, nm)                  \
  Test(scheduled, nm) {                \
    cr_assert_str_eq(kc_cases[idx].name, #nm); \
    free(run_case(idx));               \
  }

CASE(0, pointwise_broadcast)
CASE(1, non_divisible_split)
CASE(2, outer_split)
CASE(3, merges)
CASE(4, reorder)
CASE(5, swizzle)
CASE(6, smem_staging)
CASE(8, symbolic)
CASE(9, strided)
CASE(11, serial_sum)
CASE(12, rounding_and_special_functions)

Test(scheduled, gsg_copy_all_six_strategies) {
  for (int i = 12; i < KC_NCASES; i++) free(run_case(i));
}

Test(scheduled, vectorize_unroll_uses_vector_accesses) {
  char *src = run_case(7);
  cr_expect(strstr(src, "Array<float, 4>") != NULL, "no vector access in:\n%s", src);
  cr_expect(strstr(src, "#pragma unroll") != NULL, "no unrolled loop in:\n%s", src);
  free(src);
}

Test(scheduled, transpose_through_shared_memory_syncs_once) {
  char *src = run_case(10);
  const char *first = strstr(src, "__syncthreads();");
  cr_expect(first != NULL, "no sync in:\n%s", src);
  cr_expect(first && strstr(first + 1, "__syncthreads();") == NULL, "more than one sync in:\n%s", src);
  free(src);
}

Test(scheduled, divisible_pointwise_needs_no_predicate) {
  char *src = run_case(0);
  const char *body = strstr(src, "cfuser_kernel(");
  cr_expect(body && strstr(body, "if (") == NULL, "unexpected predicate in:\n%s", body);
  free(src);
}

Test(scheduled, non_divisible_split_is_predicated) {
  char *src = run_case(1);
  cr_expect(strstr(src, "< 10)") != NULL, "no bound check in:\n%s", src);
  free(src);
}

/* Intermediates in global memory are workspaces the executor allocates per run: a chain
 * [i0, i1] -> global T2 (split by 4 on threadIdx.x) -> T3 (split by 8 on threadIdx.x: a
 * __syncthreads between), run at two sizes with one executor (the buffer reallocated). */
Test(scheduled, global_intermediate_workspace_at_two_sizes) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = cf_tensor_symbolic(f, CF_FLOAT, 1);
  cf_fusion_add_input(f, a);
  cf_tv *t1 = cf_exp(f, a), *t2 = cf_neg(f, t1), *t3 = cf_set(f, t2);
  cf_fusion_add_output(f, t3);
  cf_set_memory_type(f, t2, CF_MEM_GLOBAL);
  cf_split(f, t2, 0, 4);
  cf_parallelize(f, t2, 1, CF_PT_TIDX);
  cf_split(f, t1, 0, 4);
  cf_parallelize(f, t1, 1, CF_PT_TIDX);
  cf_inline_at(f, t1, 2);
  cf_split(f, t3, 0, 8);
  cf_parallelize(f, t3, 1, CF_PT_TIDX);
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  cr_expect(strstr(cf_executor_source(e), "__syncthreads()") || strstr(cf_executor_source(e), "cfh_syncthreads"),
            "no sync between the global write and the read:\n%s", cf_executor_source(e));
  for (int k = 0; k < 2; k++) {
    KcInput ki = {CF_FLOAT, 1, {k ? 29 : 64}, NULL};
    DLManagedTensor *x = kc_make_input(&ki, 5 + (uint64_t)k), *got = NULL, *want = NULL;
    const DLTensor *ins[1] = {&x->dl_tensor};
    cr_assert_eq(cf_executor_run(e, 1, ins, 1, &got), CF_OK, "%s", cf_executor_error(e));
    cr_assert_eq(cf_fusion_evaluate(f, 1, ins, &want), CF_OK, "%s", cf_fusion_error(f));
    char msg[256] = "";
    cr_expect(cf_tensor_allclose(&got->dl_tensor, &want->dl_tensor, 1e-5, 1e-5, msg, sizeof msg), "run %d: %s", k, msg);
    cf_tensor_free(x), cf_tensor_free(got), cf_tensor_free(want);
  }
  cf_executor_destroy(e);
  cf_fusion_destroy(f);
}

/* An op inlined into a positional cache (fuzz seed 11008639): s = broadcast(b) + broadcast(b)
 * is computed in the loops of its shared copy c, whose threadIdx.y axis stands for the
 * consumer's merged one (c's row is (i * 5 + threadIdx.y) / 64 there, not threadIdx.y).
 * The op must read its operands at the cache's row; before, it read them at
 * threadIdx.y (uninitialized rows 3 and 4 of a 3-row tensor, and the wrong row elsewhere).
 * With the second operand in local memory the threads that hold its rows are not the
 * threads that read them: refused. */
static cf_tv *positional_cache_fusion(cf_fusion *f, KcInput *in, int *nin, cf_memory_type second) {
  cf_tv *x = kc_input(f, in, nin, CF_FLOAT, 2, (int64_t[]){3, 64});
  cf_tv *b = kc_input(f, in, nin, CF_FLOAT, 1, (int64_t[]){3});
  cf_tv *b1 = cf_broadcast(f, b, 2, (bool[]){false, true}), *b2 = cf_broadcast(f, b, 2, (bool[]){false, true});
  cf_tv *s = cf_add(f, b1, b2), *c = cf_set(f, s), *xx = cf_add(f, x, x), *y = cf_add(f, c, xx);
  cf_fusion_add_output(f, y);
  cf_set_memory_type(f, b1, CF_MEM_SHARED);
  cf_set_memory_type(f, b2, second);
  cf_set_memory_type(f, c, CF_MEM_SHARED);
  cf_tv *all[] = {b1, b2, s, c, xx, y};
  for (int i = 0; i < 6; i++) {
    cf_merge(f, all[i], 0);
    cf_split(f, all[i], 0, 5);
    cf_parallelize(f, all[i], 1, CF_PT_TIDY);
  }
  cf_compute_at(f, s, c, 2);
  cf_compute_at(f, c, y, 1);
  cf_compute_at(f, xx, y, 2);
  return y;
}

Test(scheduled, op_inlined_into_a_positional_cache_reads_its_rows) {
  cf_fusion *f = cf_fusion_create();
  KcInput in[TU_MAX_IO];
  int nin = 0;
  positional_cache_fusion(f, in, &nin, CF_MEM_SHARED);
  free(kc_check(f, nin, in, 0));
  cf_fusion_destroy(f);
}

Test(scheduled, local_operand_of_a_positional_cache_is_refused) {
  cf_fusion *f = cf_fusion_create();
  KcInput in[TU_MAX_IO];
  int nin = 0;
  positional_cache_fusion(f, in, &nin, CF_MEM_LOCAL);
  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_expect_eq(cf_executor_compile(e, f), CF_ERR_INVALID_SCHEDULE);
  cr_expect_str_eq(cf_executor_error(e),
                   "compile: T3 is in Local memory, but T4 reads its axis 1 (ithreadIdx.y20{5}) on threadIdx.y in a loop "
                   "over ithreadIdx.y29{5}, which that axis does not iterate (the producer's threads hold other "
                   "elements); inline T3 into T4, or parallelize them apart");
  cf_executor_destroy(e);
  cf_fusion_destroy(f);
}

/* A shared broadcast inlined into a loop on threadIdx.x that is promoted to the consumer's
 * larger axis (out's merged [2, 5] split by 8, threadIdx.x over its 2 outer positions; the
 * broadcast's own outer axis counts 1): one slot per thread of the loop, indexed by the
 * thread, so each thread keeps the row element it computed (once refused: "holds one
 * element for all of threadIdx.x"; random_dags seed 34003607 was the same mechanism with
 * the slots indexed through the broadcast's own axis, every thread on slot 0). */
Test(scheduled, shared_broadcast_in_a_promoted_thread_loop_has_a_slot_per_thread) {
  cf_fusion *f = cf_fusion_create();
  KcInput in[TU_MAX_IO];
  int nin = 0;
  cf_tv *x = kc_input(f, in, &nin, CF_FLOAT, 2, (int64_t[]){2, 5});
  cf_tv *row = kc_input(f, in, &nin, CF_FLOAT, 1, (int64_t[]){5});
  cf_tv *b = cf_broadcast(f, row, 2, (bool[]){true, false});
  cf_tv *out = cf_add(f, x, b);
  cf_fusion_add_output(f, out);
  cf_set_memory_type(f, b, CF_MEM_SHARED);
  cf_merge(f, out, 0);
  cf_split(f, out, 0, 8);
  cf_propagate_transforms(f, out);
  cf_parallelize(f, out, 0, CF_PT_TIDX);
  cf_inline_most(f);
  char *src = kc_check(f, nin, in, 0);
  cr_expect(strstr(src, "T2[threadIdx.x] = T1.data[") != NULL, "T2 not written at the thread's slot in:\n%s", src);
  cr_expect(strstr(src, " + T2[threadIdx.x]);") != NULL, "T2 not read at the thread's slot in:\n%s", src);
  free(src);
  cf_fusion_destroy(f);
}

/* A permute that keeps the innermost axis innermost ([2, 3, 8] -> [3, 2, 8]) moves vectors
 * like a set (ir_op_is_vector_copy): each thread's 4 floats contiguous on both sides, one
 * vector access each, equal to the evaluator (split-K's permuted weight view fills its
 * tiles so). */
/* f's output y = permute(x, perm) of a float input x of the given sizes (in[0]). */
static cf_tv *permute_output(cf_fusion *f, KcInput *in, int rank, const int64_t *sizes, const int *perm) {
  int nin = 0;
  cf_tv *y = cf_permute(f, kc_input(f, in, &nin, CF_FLOAT, rank, sizes), rank, perm);
  cf_fusion_add_output(f, y);
  return y;
}

Test(scheduled, a_permute_keeping_the_innermost_axis_moves_vectors) {
  cf_fusion *f = cf_fusion_create();
  KcInput in[1];
  cf_tv *y = permute_output(f, in, 3, (int64_t[]){2, 3, 8}, (int[]){1, 0, 2});
  cf_split(f, y, 2, 4);
  cf_parallelize(f, y, 0, CF_PT_BIDX);
  cf_parallelize(f, y, 1, CF_PT_TIDY);
  cf_parallelize(f, y, 2, CF_PT_TIDX);
  cf_parallelize(f, y, 3, CF_PT_VECTORIZE);
  char *src = kc_check(f, 1, in, 0);
  cr_expect(strstr(src, "*reinterpret_cast<Array<float, 4>*>(&T1.data[(((blockIdx.x * 16) + (threadIdx.y * 8)) + (threadIdx.x * 4))]) = "
                        "*reinterpret_cast<const Array<float, 4>*>(&T0.data[(((threadIdx.y * 24) + (blockIdx.x * 8)) + (threadIdx.x * 4))]);"),
            "%s", src);
  free(src);
  cf_fusion_destroy(f);
}

/* A permute that moves the innermost axis ([8, 4] -> [4, 8]) has no vector along its
 * output's innermost axis: refused, the tensor and axis named. */
Test(scheduled, a_transposing_permute_is_not_vectorized) {
  cf_fusion *f = cf_fusion_create();
  KcInput in[1];
  cf_tv *y = permute_output(f, in, 2, (int64_t[]){8, 4}, (int[]){1, 0});
  cf_split(f, y, 1, 4);
  cf_parallelize(f, y, 0, CF_PT_TIDY);
  cf_parallelize(f, y, 2, CF_PT_VECTORIZE);
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_expect_eq(cf_executor_compile(e, f), CF_ERR_INVALID_SCHEDULE, "%s", cf_executor_error(e));
  cr_expect_str_eq(cf_executor_error(e), "compile: cannot vectorize axis 2 (iV5{4}) of T1_g_float[ithreadIdx.y3{4}, iS4{2}, "
                                         "iV5{4}]: the global tensor it reads is not contiguous along it");
  cf_executor_destroy(e);
  cf_fusion_destroy(f);
}
