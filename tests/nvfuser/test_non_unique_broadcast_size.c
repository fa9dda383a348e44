/* nvFuser's FusionNonUniqueBroadcastSize (tests/cpp/test_gpu2.cpp), ported: a broadcast
 * tv3 = bcast(tv0)[b, i] consumed by tv4 = tv3 + tv1 and tv5 = tv3 + tv2, whose axis 0
 * extents may differ; computeAt(tv3, tv4, -1) throws in nvFuser ("tv1->axis(0) and
 * tv2->axis(0) must have the same size, but we can't prove it"). cfuser must not give a
 * wrong result: it refuses (at scheduling, compile, or run time with sizes 3 and 4) with
 * a message naming T3 and an axis. */
#include "nvfuser/nvf_util.h"

TestSuite(non_unique_broadcast_size, .init = nv_setup, .fini = nv_teardown);

/* FAILS today: accepted and run, leaving a row of an output unwritten (issue 9, defect 4). */
Test(non_unique_broadcast_size, compute_at_through_two_concretizations, .disabled = true) {
  cf_tv *tv0 = nv_symbolic(1), *tv1 = nv_symbolic(2), *tv2 = nv_symbolic(2);
  cf_tv *tv3 = cf_broadcast(f, tv0, 2, (bool[]){true, false});
  cf_tv *tv4 = cf_add(f, tv3, tv1), *tv5 = cf_add(f, tv3, tv2);
  cf_fusion_add_output(f, tv4);
  cf_fusion_add_output(f, tv5);
  cf_compute_at(f, tv3, tv4, -1);
  char *msg = nv_compile_error();
  if (!msg[0]) { /* accepted so far: then the run with differing sizes must refuse */
    cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
    cr_assert_eq(cf_executor_compile(e, f), CF_OK);
    KcInput in[3] = {F32(5), F32(3, 5), F32(4, 5)};
    DLManagedTensor *x[3], *out[2] = {NULL, NULL};
    const DLTensor *ins[3];
    for (int i = 0; i < 3; i++) x[i] = kc_make_input(&in[i], 5 + (uint64_t)i), ins[i] = &x[i]->dl_tensor;
    cf_status s = cf_executor_run(e, 3, ins, 2, out);
    cr_expect_neq(s, CF_OK, "ran with axis 0 of T3 concretized to 3 and to 4");
    free(msg);
    msg = strdup(s == CF_OK ? "" : cf_executor_error(e));
    for (int i = 0; i < 3; i++) cf_tensor_free(x[i]);
    cf_tensor_free(out[0]), cf_tensor_free(out[1]);
    cf_executor_destroy(e);
  }
  cr_expect(strstr(msg, "T3") && strstr(msg, "axis"), "the refusal names T3 and an axis: %s", msg);
  free(msg);
}
