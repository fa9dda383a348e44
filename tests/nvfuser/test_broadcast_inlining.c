/* nvFuser's ContigIndexingTest.BroadcastInlining (tests/cpp/test_indexing.cpp), ported:
 * tv4 = bcast(set(tv0))[b, j] + tv1[i, j], tv4 merged, propagated, inlined most. nvFuser
 * indexes tv0 through the merge (modulo j) and runs the producer chain over i*j; cfuser
 * must compute the same result. nvFuser checks index expressions; this port checks the
 * compute-at positions (everything inlined at 1) and the result. */
#include "nvfuser/nvf_util.h"

TestSuite(broadcast_inlining, .init = nv_setup, .fini = nv_teardown);

Test(broadcast_inlining, merged_broadcast_inlined_most) {
  cf_tv *tv0 = nv_symbolic(1), *tv1 = nv_symbolic(2);
  cf_tv *tv2 = cf_set(f, tv0);
  cf_tv *tv3 = cf_broadcast(f, tv2, 2, (bool[]){true, false});
  cf_tv *tv4 = cf_add(f, tv3, tv1);
  cf_fusion_add_output(f, tv4);
  cf_merge(f, tv4, 0);
  cf_propagate_transforms(f, tv4);
  cf_inline_most(f);
  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  NV_EXPECT_POS(tv2, 1, -1);
  NV_EXPECT_POS(tv3, 1, 1);
  nv_check(2, (KcInput[]){F32(7), F32(5, 7)});
}
