/* Ports of nvFuser's hand-scheduled reduction tests that go through rFactor (test_gpu1.cpp:
 * FusionReduction1-6, FusionReductionTFT, ...), and the minimal forms of the defects they
 * found. Each builds nvFuser's fusion and schedule through cfuser's public calls and checks
 * the outputs against the reference evaluator on the host backend (nv_check). */
#include "nvfuser/nvf_util.h"

TestSuite(reduction_rfactor, .init = nv_setup, .fini = nv_teardown);

/* The wrong result of issue 23, minimal: t1 = sum(t0, 1) split by 16, t2 = rFactor(t1, the
 * outer part), then t2 computed at t1, 1. The replay from t1 to t2 put t2's root reduction
 * axis back into t2's loops, so each row was summed again 16 times (the partial loop ran
 * over the whole row inside each outer iteration). */
Test(reduction_rfactor, compute_at_from_rfactor_into_its_consumer) {
  cf_tv *t0 = nv_symbolic(2);
  cf_tv *t1 = cf_sum(f, t0, 1, (int[]){1});
  cf_fusion_add_output(f, t1);
  cf_split(f, t1, 1, 16);
  cf_tv *t2 = cf_rfactor(f, t1, 1, (int[]){1});
  cf_compute_at(f, t2, t1, 1);
  cr_expect_eq(cf_tv_naxes(t2), 3, "%s", tu_tv_str(f, t2));
  nv_check(1, (KcInput[]){F32(7, 129)});
}
