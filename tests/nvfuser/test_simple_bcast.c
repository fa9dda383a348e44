/* nvFuser's FusionSimpleBCast1-5 (tests/cpp/test_gpu1.cpp), ported: broadcasts of inputs
 * and of computed values joined with concrete tensors, the output merged or split, and
 * computeAt(-1) from the fusion inputs. nvFuser computes each; so must cfuser.
 * Adaptations: add(tv, 1.5) is cf_add_scalar; sub(tv, 0.1) is cf_add_scalar(-0.1);
 * makeConcreteTensor({-1, 1}) and ({1, -1}) (symbolic with a broadcast axis) have no
 * cfuser form and are concrete tensors of the test's sizes. */
#include "nvfuser/nvf_util.h"

TestSuite(simple_bcast, .init = nv_setup, .fini = nv_teardown);

/* tv7[x,y,z] = bcast(tv0 + 1.5)[x,y,b] + bcast(tv2 - tv3)[b,y,z], split twice. */
/* A gap: loops are shared position by position, so T4's axis 0 cannot skip T6's broadcast
 * axis 0 as nvFuser's inlining does; refused. */
Test(simple_bcast, bcast1) {
  cf_tv *tv0 = nv_symbolic(2);
  cf_tv *tv1 = cf_add_scalar(f, tv0, 1.5);
  cf_tv *tv2 = nv_symbolic(2), *tv3 = nv_symbolic(2);
  cf_tv *tv4 = cf_sub(f, tv2, tv3);
  cf_tv *tv5 = cf_broadcast(f, tv1, 3, (bool[]){false, false, true});
  cf_tv *tv6 = cf_broadcast(f, tv4, 3, (bool[]){true, false, false});
  cf_tv *tv7 = cf_add(f, tv5, tv6);
  cf_fusion_add_output(f, tv7);
  cf_split(f, tv7, -1, 4);
  cf_split(f, tv7, 0, 8);
  cf_compute_at(f, tv0, tv7, -1);
  cf_compute_at(f, tv2, tv7, -1);
  cf_parallelize(f, tv7, 0, CF_PT_BIDX);
  cf_parallelize(f, tv7, -1, CF_PT_TIDX);
  nv_expect_gap("compute_at: cannot inline T4_l_float[iS8{i2}, iS35{( ceilDiv(i3, 4) )}, iS36{4}] at position 3: "
                "axis 0 (iS8{i2}) does not map to T6's axis 0 (bS31{1})");
}

/* tv7 = bcast(tv0 + tv1)[x,y,b] + bcast(tv4 - 0.1)[b,y,z], the outer two axes merged. */
Test(simple_bcast, bcast2) {
  cf_tv *tv0 = nv_symbolic(2), *tv1 = nv_symbolic(2);
  cf_tv *tv2 = cf_add(f, tv0, tv1);
  cf_tv *tv3 = cf_broadcast(f, tv2, 3, (bool[]){false, false, true});
  cf_tv *tv4 = nv_symbolic(2);
  cf_tv *tv5 = cf_add_scalar(f, tv4, -0.1);
  cf_tv *tv6 = cf_broadcast(f, tv5, 3, (bool[]){true, false, false});
  cf_tv *tv7 = cf_add(f, tv3, tv6);
  cf_fusion_add_output(f, tv7);
  cf_merge(f, tv7, 0);
  cf_compute_at(f, tv0, tv7, -1);
  cf_compute_at(f, tv4, tv7, -1);
  cf_parallelize(f, tv7, 0, CF_PT_BIDX);
  cf_parallelize(f, tv7, -1, CF_PT_TIDX);
  nv_check(3, (KcInput[]){F32(63, 33), F32(63, 33), F32(33, 15)});
}

/* tv3[x,y,z] = tv0[y,1] + tv2[x,y,z] (implicit broadcast by a size-1 axis: cfuser's ops
 * need equal ranks, so tv0 is broadcast to [b,y,1] first), fully merged. */
Test(simple_bcast, bcast3) {
  cf_tv *tv0 = nv_concrete(2, (int64_t[]){3, 1});
  cf_tv *tv2 = nv_symbolic(3);
  cf_tv *b = cf_broadcast(f, tv0, 3, (bool[]){true, false, false});
  cf_tv *tv3 = cf_add(f, b, tv2);
  cf_fusion_add_output(f, tv3);
  cf_merge(f, tv3, 0);
  cf_merge(f, tv3, 0);
  cf_compute_at(f, tv0, tv3, -1);
  cf_compute_at(f, tv2, tv3, -1);
  cf_parallelize(f, tv3, 0, CF_PT_BIDX);
  nv_check(2, (KcInput[]){F32(3, 1), F32(2, 3, 4)});
}

/* tv3[x,y,z] = tv0[1,z] + tv1[x,y,z], merged, split by 128 and 4, BIDx/Unroll/TIDx. */
Test(simple_bcast, bcast4) {
  cf_tv *tv0 = nv_concrete(2, (int64_t[]){1, 15});
  cf_tv *tv1 = nv_symbolic(3);
  cf_tv *b = cf_broadcast(f, tv0, 3, (bool[]){true, false, false});
  cf_tv *tv3 = cf_add(f, b, tv1);
  cf_merge(f, tv3, 0);
  cf_merge(f, tv3, 0);
  cf_split(f, tv3, 0, 128);
  cf_split(f, tv3, 0, 4);
  cf_fusion_add_output(f, tv3);
  cf_compute_at(f, tv0, tv3, -1);
  cf_compute_at(f, tv1, tv3, -1);
  cf_parallelize(f, tv3, 0, CF_PT_BIDX);
  cf_parallelize(f, tv3, -1, CF_PT_TIDX);
  cf_parallelize(f, tv3, -2, CF_PT_UNROLL);
  nv_check(2, (KcInput[]){F32(1, 15), F32(63, 33, 15)});
}

/* tv4[m,k,n] = bcast(tv0)[m,k,b] + bcast(tv1)[b,k,n], concrete, fully merged. */
Test(simple_bcast, bcast5) {
  cf_tv *tv0 = nv_concrete(2, (int64_t[]){2, 3}), *tv1 = nv_concrete(2, (int64_t[]){3, 4});
  cf_tv *tv2 = cf_broadcast(f, tv0, 3, (bool[]){false, false, true});
  cf_tv *tv3 = cf_broadcast(f, tv1, 3, (bool[]){true, false, false});
  cf_tv *tv4 = cf_add(f, tv2, tv3);
  cf_fusion_add_output(f, tv4);
  cf_merge(f, tv4, 0);
  cf_merge(f, tv4, 0);
  cf_compute_at(f, tv0, tv4, -1);
  cf_compute_at(f, tv1, tv4, -1);
  nv_check(2, (KcInput[]){F32(2, 3), F32(3, 4)});
}
