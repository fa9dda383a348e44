/* Ports of nvFuser's hand-scheduled Welford tests (test_welford.cpp) and the Welford grid
 * all-reduces of test_reduction.cpp. nvFuser's Welford has three sibling outputs (avg,
 * var_sum, N) scheduled as one; cfuser's is one tensor of states w whose fields are read by
 * cf_welford_avg/m2/n, so w gets nvFuser's schedule of the siblings and each field follows
 * it (welford_fields: w's transforms propagated to the fields, its parallel types copied,
 * w inlined into them), which computes the fields in w's loops as nvFuser's siblings are. */
#include "nvfuser/nvf_util.h"

TestSuite(welford_ports, .init = nv_setup, .fini = nv_teardown);

/* The three outputs of nvFuser's Welford(tv, axes): states w and its fields. */
static cf_tv *welford_outputs(cf_tv *tv, int naxes, const int *axes, cf_tv **fields) {
  cf_tv *w = cf_welford(f, tv, naxes, axes);
  fields[0] = cf_welford_avg(f, w);
  fields[1] = cf_welford_m2(f, w);
  fields[2] = cf_welford_n(f, w);
  for (int i = 0; i < 3; i++) cf_fusion_add_output(f, fields[i]);
  return w;
}

/* The fields scheduled as siblings of w. */
static void welford_fields(cf_tv *w, cf_tv *const *fields, int nfields) {
  cr_assert_eq(cf_propagate_transforms_to(f, w, -1, nfields, fields), CF_OK, "%s", cf_fusion_error(f));
  cr_assert_eq(cf_parallelize_all_like(f, w, 0, NULL), CF_OK, "%s", cf_fusion_error(f));
  cr_assert_eq(cf_inline_at_best_effort(f, w, -1), CF_OK, "%s", cf_fusion_error(f));
}

/* The WelfordOp tests: w = Welford(tv1 = tv0 * 1, 1) over [64, 128] with the three fields
 * as outputs, w scheduled by `schedule`, tv1 computed at w, -1, the fields following w. */
static void welford_op(void (*schedule)(cf_tv *w)) {
  cf_tv *tv0 = nv_symbolic(2), *fields[3];
  cf_tv *tv1 = cf_mul_scalar(f, tv0, 1.0);
  cf_tv *w = welford_outputs(tv1, 1, (int[]){1}, fields);
  schedule(w);
  cf_compute_at(f, tv1, w, -1);
  welford_fields(w, fields, 3);
  nv_check(1, (KcInput[]){F32(64, 128)});
}

/* WelfordOp: rows split by 32 and 4, the row by 32, reordered. */
static void split_and_reorder(cf_tv *w) {
  cf_split(f, w, 1, 32);
  cf_split(f, w, 0, 32);
  cf_split(f, w, 0, 4);
  cf_reorder(f, w, 2, (int[]){-1, -3, -3, -1});
}
Test(welford_ports, WelfordOp) { welford_op(split_and_reorder); }

/* BlockWelfordOp: the row on threadIdx.x (a block Welford). */
static void row_on_threads(cf_tv *w) { cf_parallelize(f, w, -1, CF_PT_TIDX); }
Test(welford_ports, BlockWelfordOp) { welford_op(row_on_threads); }

/* GridWelfordOp: rows on threadIdx.x, the row on blockIdx.x (a grid Welford). */
static void row_on_blocks(cf_tv *w) {
  cf_parallelize(f, w, 0, CF_PT_TIDX);
  cf_parallelize(f, w, -1, CF_PT_BIDX);
}
Test(welford_ports, GridWelfordOp) { welford_op(row_on_blocks); }

/* RfactorWelfordOp: the row split by 4 and the inner part rfactored (partial states). */
static void rfactor_inner(cf_tv *w) {
  cf_split(f, w, 1, 4);
  cr_assert_not_null(cf_rfactor(f, w, 1, (int[]){2}), "%s", cf_fusion_error(f));
}
Test(welford_ports, RfactorWelfordOp) { welford_op(rfactor_inner); }

/* WelfordSchedule: the reduction scheduler (define and run). */
Test(welford_ports, WelfordSchedule) {
  cf_tv *tv0 = nv_symbolic(2), *fields[3];
  cf_tv *tv1 = cf_mul_scalar(f, tv0, 1.0);
  welford_outputs(tv1, 1, (int[]){1}, fields);
  nv_execute_check(1, (KcInput[]){F32(64, 128)});
}

/* WelfordPersistence: avg + M2 broadcast back and added to the input, every tensor split
 * by 2 onto [blockIdx.x, blockIdx.y] (a grid Welford read back in the same kernel): a
 * grid-persistent kernel, as nvFuser's (a grid all-reduce after a grid sync). */
Test(welford_ports, WelfordPersistence) {
  cf_tv *tv0 = nv_symbolic(1);
  cf_tv *w = cf_welford(f, tv0, 1, (int[]){0});
  cf_tv *avg = cf_welford_avg(f, w), *m2 = cf_welford_m2(f, w);
  cf_tv *tv4 = cf_add(f, avg, m2);
  cf_tv *tv5 = cf_broadcast(f, tv4, 1, (bool[]){true});
  cf_tv *tv6 = cf_add(f, tv0, tv5);
  cf_fusion_add_output(f, tv6);
  cf_tv *sched[] = {w, tv5, tv6}, *fields[] = {avg, m2};
  for (int i = 0; i < 3; i++) {
    cf_split(f, sched[i], 0, 2);
    cf_parallelize(f, sched[i], 0, CF_PT_BIDX);
    cf_parallelize(f, sched[i], 1, CF_PT_BIDY);
  }
  welford_fields(w, fields, 2);
  nv_check(1, (KcInput[]){F32(10)});
}

/* WelfordPersistence2: the same over axis 0 of [10, 3], [blockIdx.x, threadIdx.y,
 * threadIdx.x], tv4 on threadIdx.x. Grid-persistent too. */
Test(welford_ports, WelfordPersistence2) {
  cf_tv *tv0 = nv_symbolic(2);
  cf_tv *w = cf_welford(f, tv0, 1, (int[]){0});
  cf_tv *avg = cf_welford_avg(f, w), *m2 = cf_welford_m2(f, w);
  cf_tv *tv4 = cf_add(f, avg, m2);
  cf_tv *tv5 = cf_broadcast(f, tv4, 2, (bool[]){true, false});
  cf_tv *tv6 = cf_add(f, tv0, tv5);
  cf_fusion_add_output(f, tv6);
  cf_tv *sched[] = {w, tv5, tv6}, *fields[] = {avg, m2};
  for (int i = 0; i < 3; i++) {
    cf_split(f, sched[i], 0, 2);
    cf_parallelize(f, sched[i], 0, CF_PT_BIDX);
    cf_parallelize(f, sched[i], 1, CF_PT_TIDY);
    cf_parallelize(f, sched[i], 2, CF_PT_TIDX);
  }
  cf_parallelize(f, tv4, 0, CF_PT_TIDX);
  welford_fields(w, fields, 2);
  nv_check(1, (KcInput[]){F32(10, 3)});
}

/* BlockWelfordInSerialLoop: a Welford over [N, K] per row, K on threadIdx.x inside the
 * serial loop over N, rows on blockIdx.x. */
Test(welford_ports, BlockWelfordInSerialLoop) {
  cf_tv *tv0 = nv_symbolic(3);
  cf_tv *w = cf_welford(f, tv0, 2, (int[]){1, 2});
  cf_tv *fields[2] = {cf_welford_avg(f, w), cf_welford_m2(f, w)};
  cf_fusion_add_output(f, fields[0]);
  cf_fusion_add_output(f, fields[1]);
  cf_parallelize(f, w, -1, CF_PT_TIDX);
  cf_parallelize(f, w, 0, CF_PT_BIDX);
  welford_fields(w, fields, 2);
  nv_check(1, (KcInput[]){F32(10, 20, 20)});
}
