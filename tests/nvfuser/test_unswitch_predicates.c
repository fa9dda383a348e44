/* nvFuser's unswitch-predicate tests (PredicateIndexingTest.* in tests/cpp/test_indexing.cpp),
 * ported: SimpleUnswitch, NonDivisibleSplitWithUnswitch, UnswitchPredicateIssueRepro681,
 * NonDivisibleSplitWithUnswitchAndBroadcast, UnswitchConsolidationDifferentThreading and
 * ParallelDimensionPredicateWithUnswitch1. nvFuser compares each lowered predicate with an
 * expression it builds by hand, and runs the kernels of some; cfuser's predicates are its
 * own (lower/unswitch.c), so each port checks what those predicates are for: the kernel
 * computes the fusion (outputs equal to the evaluator) on sizes with full and partial
 * tiles, and its hoisted condition is where nvFuser's test puts one.
 * Adaptations: flatten() of a 1-D tensor is nothing; nvFuser's implicit broadcast is an
 * explicit cf_broadcast. */
#include "nvfuser/nvf_util.h"

TestSuite(unswitch_predicates, .init = nv_setup, .fini = nv_teardown);

/* The printed kernel holds an unswitched nest (an else branch: the predicated copy). */
static void expect_unswitched(void) {
  char *k = tu_capture_fusion(cf_fusion_print_kernel, f);
  cr_expect(strstr(k, "} else {") != NULL, "no unswitched nest in:\n%s", k);
  free(k);
}

/* SimpleUnswitch: tv2 = tv0 + tv1 through caches, split by 128, 8 and 4, propagated,
 * inlined most, tv2 alone parallelized [blockIdx.x, Unswitch, S{8}, threadIdx.x]: the
 * caches run in tv2's loops and take their types. */
Test(unswitch_predicates, simple_unswitch) {
  cf_tv *tv0 = nv_symbolic(1), *tv1 = nv_symbolic(1);
  cf_tv *tv2 = cf_add(f, tv0, tv1);
  cf_fusion_add_output(f, tv2);
  cf_cache_after(f, tv0);
  cf_cache_after(f, tv1);
  cf_split(f, tv2, 0, 128);
  cf_split(f, tv2, 0, 8);
  cf_split(f, tv2, 0, 4);
  cf_propagate_transforms(f, tv2);
  cf_inline_most(f);
  cf_parallelize(f, tv2, 0, CF_PT_BIDX);
  cf_parallelize(f, tv2, 1, CF_PT_UNSWITCH);
  cf_parallelize(f, tv2, 3, CF_PT_TIDX);
  expect_unswitched();
  nv_check(2, (KcInput[]){F32(10000), F32(10000)});
}

/* NonDivisibleSplitWithUnswitch: tv2 = set(set(tv0)) split by 5 then 3 (non-divisible),
 * propagated from tv1, tv1 inlined, tv2 [blockIdx.x, Unswitch{2}, threadIdx.x{3}]. */
Test(unswitch_predicates, non_divisible_split_with_unswitch) {
  cf_tv *tv0 = nv_symbolic(1);
  cf_tv *tv1 = cf_set(f, tv0), *tv2 = cf_set(f, tv1);
  cf_fusion_add_output(f, tv2);
  cf_split(f, tv1, 0, 5);
  cf_split(f, tv1, 1, 3);
  cf_propagate_transforms_checked(f, tv1);
  cf_inline_at(f, tv1, -1);
  cf_parallelize(f, tv2, 0, CF_PT_BIDX);
  cf_parallelize(f, tv2, 1, CF_PT_UNSWITCH);
  cf_parallelize(f, tv2, 2, CF_PT_TIDX);
  nv_check(1, (KcInput[]){F32(999)});
}

/* UnswitchPredicateIssueRepro681: sum over both axes of [4, 10]: the inner axis split by
 * 4, merged with the outer, split by 4 and 1, the 1 unswitched: the merged index reaches
 * the inner axis through a modulo. */
Test(unswitch_predicates, unswitch_predicate_issue_repro681) {
  cf_tv *tv0 = nv_symbolic(2);
  cf_tv *tv1 = cf_sum(f, tv0, 2, (int[]){0, 1});
  cf_fusion_add_output(f, tv1);
  cf_split(f, tv1, 1, 4);
  cf_merge(f, tv1, 0);
  cf_split(f, tv1, 0, 4);
  cf_split(f, tv1, 0, 1);
  cf_parallelize(f, tv1, 1, CF_PT_UNSWITCH);
  expect_unswitched();
  nv_check(1, (KcInput[]){F32(4, 10)});
}

/* NonDivisibleSplitWithUnswitchAndBroadcast: tv3 = bcast(tv0)[i0, 1] + tv1[i0, i1] merged,
 * split by 100, the 100 by 16 (non-divisible), the outer by 1; propagated, inlined most,
 * [S, Unswitch, threadIdx.y, threadIdx.x]. */
Test(unswitch_predicates, non_divisible_split_with_unswitch_and_broadcast) {
  cf_tv *tv0 = nv_symbolic(1), *tv1 = nv_symbolic(2);
  cf_tv *tv2 = cf_broadcast(f, tv0, 2, (bool[]){false, true});
  cf_tv *tv3 = cf_add(f, tv2, tv1);
  cf_fusion_add_output(f, tv3);
  cf_merge(f, tv3, 0);
  cf_split(f, tv3, 0, 100);
  cf_split(f, tv3, 1, 16);
  cf_split(f, tv3, 0, 1);
  cf_propagate_transforms_checked(f, tv3);
  cf_inline_most(f);
  cf_parallelize(f, tv3, 1, CF_PT_UNSWITCH);
  cf_parallelize(f, tv3, -2, CF_PT_TIDY);
  cf_parallelize(f, tv3, -1, CF_PT_TIDX);
  nv_check(2, (KcInput[]){F32(5), F32(5, 100)});
}

/* UnswitchConsolidationDifferentThreading: tv4 = set(tv0) + set(tv1), [blockIdx.x,
 * Unswitch{1}, 8, 16] inlined at 2, tv2 and tv3 in shared memory with threadIdx x and y on
 * their inner axes the other way round for tv3: the nest holds barriers, so only the
 * block-uniform bounds are hoisted. */
Test(unswitch_predicates, unswitch_consolidation_different_threading) {
  cf_tv *tv0 = nv_symbolic(1), *tv1 = nv_symbolic(1);
  cf_tv *tv2 = cf_set(f, tv0), *tv3 = cf_set(f, tv1), *tv4 = cf_add(f, tv2, tv3);
  cf_fusion_add_output(f, tv4);
  cf_split(f, tv4, 0, 16);
  cf_split(f, tv4, 0, 8);
  cf_split(f, tv4, 0, 1);
  cf_propagate_transforms_checked(f, tv4);
  cf_inline_all_at(f, tv4, 2);
  cf_set_memory_type(f, tv2, CF_MEM_SHARED);
  cf_set_memory_type(f, tv3, CF_MEM_SHARED);
  cf_parallelize(f, tv4, 0, CF_PT_BIDX);
  cf_parallelize(f, tv4, 1, CF_PT_UNSWITCH);
  cf_parallelize(f, tv4, 2, CF_PT_TIDY);
  cf_parallelize(f, tv4, 3, CF_PT_TIDX);
  cf_parallelize(f, tv2, 2, CF_PT_TIDY);
  cf_parallelize(f, tv2, 3, CF_PT_TIDX);
  cf_parallelize(f, tv3, 2, CF_PT_TIDX);
  cf_parallelize(f, tv3, 3, CF_PT_TIDY);
  nv_check(2, (KcInput[]){F32(1000), F32(1000)});
}

/* ParallelDimensionPredicateWithUnswitch1: three copies; tv3 on threadIdx.x over its whole
 * extent makes threadIdx.x wider than 128; tv4 [Unswitch{1}, ceilDiv(n, 128), 128] (the
 * thread axis fully unswitched), tv5 [ceilDiv(n, 128), Unswitch{1}, 128] (not). */
Test(unswitch_predicates, parallel_dimension_predicate_with_unswitch1) {
  cf_tv *tv0 = nv_symbolic(1), *tv1 = nv_symbolic(1), *tv2 = nv_symbolic(1);
  cf_tv *tv3 = cf_set(f, tv0), *tv4 = cf_set(f, tv1), *tv5 = cf_set(f, tv2);
  cf_fusion_add_output(f, tv3);
  cf_fusion_add_output(f, tv4);
  cf_fusion_add_output(f, tv5);
  cf_parallelize(f, tv3, 0, CF_PT_TIDX);
  cf_split(f, tv4, 0, 128);
  cf_split_outer(f, tv4, 0, 1);
  cf_parallelize(f, tv4, 0, CF_PT_UNSWITCH);
  cf_parallelize(f, tv4, -1, CF_PT_TIDX);
  cf_split(f, tv5, 0, 128);
  cf_split(f, tv5, 0, 1);
  cf_parallelize(f, tv5, -2, CF_PT_UNSWITCH);
  cf_parallelize(f, tv5, -1, CF_PT_TIDX);
  nv_check(3, (KcInput[]){F32(300), F32(333), F32(299)});
}
