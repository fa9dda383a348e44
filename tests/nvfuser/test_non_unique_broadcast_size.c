/* nvFuser's FusionNonUniqueBroadcastSize (tests/cpp/test_gpu2.cpp), ported: a broadcast
 * tv3 = bcast(tv0)[b, i] consumed by tv4 = tv3 + tv1 and tv5 = tv3 + tv2, whose axis 0
 * extents may differ; computeAt(tv3, tv4, -1) throws in nvFuser ("tv1->axis(0) and
 * tv2->axis(0) must have the same size, but we can't prove it"). cfuser must not give a
 * wrong result: it refuses (at scheduling, compile, or run time with sizes 3 and 4) with
 * a message naming T3 and an axis. */
#include "nvfuser/nvf_util.h"

TestSuite(non_unique_broadcast_size, .init = nv_setup, .fini = nv_teardown);

/* Refused at compile: the loop of T3's axis 0 would run over both concretizations. */
Test(non_unique_broadcast_size, compute_at_through_two_concretizations) {
  cf_tv *tv0 = nv_symbolic(1), *tv1 = nv_symbolic(2), *tv2 = nv_symbolic(2);
  cf_tv *tv3 = cf_broadcast(f, tv0, 2, (bool[]){true, false});
  cf_tv *tv4 = cf_add(f, tv3, tv1), *tv5 = cf_add(f, tv3, tv2);
  cf_fusion_add_output(f, tv4);
  cf_fusion_add_output(f, tv5);
  cr_assert_eq(cf_compute_at(f, tv3, tv4, -1), CF_OK, "%s", cf_fusion_error(f));
  char *msg = nv_compile_error();
  cr_expect_str_eq(msg, "compile: T3's axis 0 (bS5{1}) shares one loop with T4's axis 0 (iS7{i1}) and T5's axis 0 "
                        "(iS9{i3}), which iterate different domains (a broadcast concretized to two extents in one "
                        "loop); lower T3's compute-at position");
  free(msg);
}
