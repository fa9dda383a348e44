/* Issue 28, wrong results under accepted schedules: transposes and dead ops under
 * cf_inline_most and the fallback schedule. Each case is scheduled, then compiled with
 * NVRTC for sm_90a, run on the host backend and compared with the reference evaluator
 * (kernel_check.h). Before the fix the permissive map joined a transposed axis with the
 * untransposed one through an add of equal extents (a tensor mapped onto itself), so
 * inlining shared one loop for both, and a dead op (a value nothing uses) closed the same
 * cycle; each gave a transposed or mixed result without a word. Now a kernel that reads a
 * tensor in two orders is refused with the tensor named (define and run cuts it into
 * kernels that do not), and dead ops take no part in the maps, loops or inlining. */
#include "cfuser/execute.h"
#include "kernel_check.h"

KC_FUSION_SUITE(transposes_inlined);

static cf_tv *square(int64_t n) { return kc_input(f, in, &nin, CF_FLOAT, 2, (int64_t[]){n, n}); }

/* The message lowering gives a kernel that reads a tensor in two orders. */
static void expect_refused(const char *msg) {
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_expect_eq(cf_executor_compile(e, f), CF_ERR_UNSUPPORTED);
  cr_expect_str_eq(cf_executor_error(e), msg);
  cf_executor_destroy(e);
}

/* Define and run on the same fusion (kernel_check.h): cut until no segment reads a tensor
 * in two orders, every output equal to the evaluator's. */
static void expect_define_and_run_right(void) {
  cf_fusion_cache_destroy(kc_define_and_run(f, NULL, nin, in, 11, 1e-6, "define and run"));
}

/* a^T + a of a computed square matrix: no loop nest computes a in both orders (before,
 * inline_most shared one loop for both and the result came out wrong); refused by
 * lowering with the tensor named, and right through define and run. */
Test(transposes_inlined, transpose_plus_itself) {
  cf_tv *a = cf_set(f, square(8));
  cf_tv *y = cf_add(f, cf_transpose(f, a, 0, 1), a);
  cf_fusion_add_output(f, y);
  cr_assert_eq(cf_inline_most(f), CF_OK, "%s", cf_fusion_error(f));
  expect_refused("compile: T0's axes iS0{8} and iS1{8} are one axis through T3 = add(...) and the ops before it: the "
                 "kernel reads T0 in two orders (as in x^T + x), which no loop nest computes; compute the transposed "
                 "value in a kernel of its own (define and run cuts the fusion there)");
  expect_define_and_run_right();
}

/* The same with the operands the other way round, and with the input itself. */
Test(transposes_inlined, itself_plus_transpose) {
  cf_tv *x = square(8), *a = cf_exp(f, x);
  cf_fusion_add_output(f, cf_add(f, a, cf_transpose(f, a, 0, 1)));
  cf_fusion_add_output(f, cf_add(f, cf_transpose(f, x, 0, 1), x));
  cr_assert_eq(cf_inline_most(f), CF_OK, "%s", cf_fusion_error(f));
  expect_refused("compile: T0's axes iS1{8} and iS0{8} are one axis through T3 = add(...) and the ops before it: the "
                 "kernel reads T0 in two orders (as in x^T + x), which no loop nest computes; compute the transposed "
                 "value in a kernel of its own (define and run cuts the fusion there)");
  expect_define_and_run_right();
}

/* (x^T)^T is x, also when a dead op reads the inner transpose together with x. */
Test(transposes_inlined, double_transpose_with_a_dead_op) {
  cf_tv *x = square(8), *t = cf_transpose(f, x, 0, 1);
  cf_tv *y = cf_transpose(f, t, 0, 1);
  cf_add(f, t, x); /* dead: nothing uses it */
  cf_neg(f, t);    /* dead too */
  cf_fusion_add_output(f, y);
  cr_assert_eq(cf_inline_most(f), CF_OK, "%s", cf_fusion_error(f));
  free(kc_check(f, nin, in, 0));
}

/* (a^T)^T of a computed a, inlined, with the dead op reading a and the inner transpose. */
Test(transposes_inlined, double_transpose_of_a_computed_value) {
  cf_tv *a = cf_neg(f, square(8)), *t = cf_transpose(f, a, 0, 1);
  cf_add(f, t, a); /* dead */
  cf_fusion_add_output(f, cf_transpose(f, t, 0, 1));
  cr_assert_eq(cf_inline_most(f), CF_OK, "%s", cf_fusion_error(f));
  free(kc_check(f, nin, in, 0));
}

/* The fallback schedule of define and run's Python fallback (cf_schedule_pointwise, else
 * cf_inline_most) on fusions holding dead ops: a reduction broadcast back with a dead
 * transpose of its operand, and an elementwise fusion with a dead op. */
Test(transposes_inlined, fallback_schedule_with_dead_ops) {
  cf_tv *x = square(16), *a = cf_neg(f, x);
  cf_tv *s = cf_sum(f, a, 1, (int[]){1});
  cf_tv *y = cf_sub(f, a, cf_broadcast(f, s, 2, (bool[]){false, true}));
  cf_add(f, cf_transpose(f, a, 0, 1), x); /* dead */
  cf_fusion_add_output(f, y);
  cr_expect_neq(cf_schedule_pointwise(f), CF_OK);
  cf_fusion_clear_error(f);
  cr_assert_eq(cf_inline_most(f), CF_OK, "%s", cf_fusion_error(f));
  free(kc_check(f, nin, in, 1e-5));
}

Test(transposes_inlined, pointwise_schedule_with_dead_ops) {
  cf_tv *x = square(16), *a = cf_neg(f, x);
  cf_add(f, cf_transpose(f, a, 0, 1), a); /* dead */
  cf_fusion_add_output(f, cf_exp(f, a));
  cr_assert_eq(cf_schedule_pointwise(f), CF_OK, "%s", cf_fusion_error(f));
  free(kc_check(f, nin, in, 1e-6));
}
