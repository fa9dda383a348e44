/* nvFuser's FusionComplexBCast1-2 (tests/cpp/test_gpu1.cpp), ported: a computed value
 * broadcast, combined, broadcast again (1), or a sum broadcast back (2), the output
 * merged and everything computed at it from the input. nvFuser computes each.
 * Adaptation: div(tv, 2.0) is cf_mul_scalar(tv, 0.5) (the same value in binary floats). */
#include "nvfuser/nvf_util.h"

TestSuite(complex_bcast, .init = nv_setup, .fini = nv_teardown);

/* tv7[x,y,z] = bcast(bcast(tv0 / 2)[y,b] * tv3[y,z])[b,y,z] + tv6[x,y,z]. */
Test(complex_bcast, bcast1) {
  cf_tv *tv0 = nv_concrete(1, (int64_t[]){3});
  cf_tv *tv1 = cf_mul_scalar(f, tv0, 0.5);
  cf_tv *tv2 = cf_broadcast(f, tv1, 2, (bool[]){false, true});
  cf_tv *tv3 = nv_concrete(2, (int64_t[]){3, 4});
  cf_tv *tv4 = cf_mul(f, tv2, tv3);
  cf_tv *tv5 = cf_broadcast(f, tv4, 3, (bool[]){true, false, false});
  cf_tv *tv6 = nv_concrete(3, (int64_t[]){2, 3, 4});
  cf_tv *tv7 = cf_add(f, tv5, tv6);
  cf_fusion_add_output(f, tv7);
  cf_merge(f, tv7, 0);
  cf_merge(f, tv7, 0);
  cf_compute_at(f, tv0, tv7, -1);
  nv_check(3, (KcInput[]){F32(3), F32(3, 4), F32(2, 3, 4)});
}

/* tv5[x,y] = bcast(sum(tv0 / 2, {1}))[b,y] + tv4[x,y]; tv1 also computed at the sum. */
Test(complex_bcast, bcast2) {
  cf_tv *tv0 = nv_concrete(2, (int64_t[]){3, 4});
  cf_tv *tv1 = cf_mul_scalar(f, tv0, 0.5);
  cf_tv *tv2 = cf_sum(f, tv1, 1, (int[]){1});
  cf_tv *tv3 = cf_broadcast(f, tv2, 2, (bool[]){true, false});
  cf_tv *tv4 = nv_concrete(2, (int64_t[]){2, 3});
  cf_tv *tv5 = cf_add(f, tv3, tv4);
  cf_fusion_add_output(f, tv5);
  cf_merge(f, tv5, 0);
  cf_compute_at(f, tv0, tv5, -1);
  cf_compute_at(f, tv1, tv2, -1);
  nv_check(2, (KcInput[]){F32(3, 4), F32(2, 3)});
}
