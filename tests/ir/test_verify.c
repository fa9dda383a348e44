/* Tests of ir/verify.c: valid fusions (built, scheduled, laid out) verify, and each
 * broken invariant, made by editing the IR directly, is reported with its message. */
#include "ops_test_util.h"

/* in T0 {4, 8} -> T1 = set -> T2 = exp (output) */
static cf_fusion *chain(cf_tv **t) {
  cf_fusion *f = cf_fusion_create();
  t[0] = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_fusion_add_input(f, t[0]);
  t[1] = cf_set(f, t[0]);
  t[2] = cf_exp(f, t[1]);
  cf_fusion_add_output(f, t[2]);
  return f;
}

static void expect_broken(cf_fusion *f, const char *msg) {
  cr_expect_eq(cf_fusion_verify(f), CF_ERR_INTERNAL);
  cr_expect_str_eq(cf_fusion_error(f), msg);
}

Test(verify, built_and_scheduled_fusions_verify) {
  cf_tv *t[3];
  cf_fusion *f = chain(t);
  cr_expect_eq(cf_fusion_verify(f), CF_OK, "%s", cf_fusion_error(f));
  cf_split(f, t[2], 1, 4);
  cf_merge(f, t[2], 0);
  cf_reorder(f, t[2], 1, (int[]){0, 1});
  cf_parallelize(f, t[2], 0, CF_PT_TIDX);
  cf_split_outer(f, t[1], 0, 2);
  cf_set_memory_type(f, t[1], CF_MEM_SHARED);
  cf_set_allocation_to_loop(f, t[1], true);
  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  cr_expect_eq(cf_fusion_verify(f), CF_OK, "%s", cf_fusion_error(f));
  cf_fusion_destroy(f);
}

Test(verify, tensor_memory_with_a_dim_sep_verifies) {
  cf_tv *t[3];
  cf_fusion *f = chain(t);
  cf_set_memory_type(f, t[1], CF_MEM_TENSOR);
  cf_set_tmem_dim_sep_pos(f, t[1], 1);
  cr_expect_eq(cf_fusion_verify(f), CF_OK, "%s", cf_fusion_error(f));
  cf_fusion_destroy(f);
}

Test(verify, null_and_failed_fusions) {
  cr_expect_eq(cf_fusion_verify(NULL), CF_ERR_INVALID_ARGUMENT);
  cf_tv *t[3];
  cf_fusion *f = chain(t);
  cf_split(f, t[1], 5, 2);
  cr_expect_eq(cf_fusion_verify(f), CF_ERR_INVALID_ARGUMENT);
  cf_fusion_destroy(f);
}

Test(verify, compute_at_and_producer_positions_in_range) {
  cf_tv *t[3];
  cf_fusion *f = chain(t);
  TV(ir_tv(t[1]))->ca_pos = 3;
  expect_broken(f, "verify: T1: compute-at position 3 is outside 0..2");
  cf_fusion_clear_error(f);
  TV(ir_tv(t[1]))->ca_pos = 0;
  TV(ir_tv(t[2]))->max_producer_pos = -1;
  expect_broken(f, "verify: T2: max producer position -1 is outside 0..2");
  cf_fusion_destroy(f);
}

Test(verify, use_lists_match_definitions) {
  cf_tv *t[3];
  cf_fusion *f = chain(t);
  ir_tv(t[0])->uses.len = 0;
  expect_broken(f, "verify: input 0 of Set expression 0 does not list it among its uses");
  cf_fusion_destroy(f);
}

Test(verify, definitions_match_outputs) {
  cf_tv *t[3];
  cf_fusion *f = chain(t);
  ir_tv(t[2])->def = ir_tv(t[1])->def;
  expect_broken(f, "verify: output 0 of exp expression 1 does not name it as its definition");
  cf_fusion_destroy(f);
}

Test(verify, dense_ids) {
  cf_tv *t[3];
  cf_fusion *f = chain(t);
  ir_tv(t[1])->id = 99;
  int idx = -1;
  for (int i = 0; i < f->vals.len; i++)
    if (f->vals.items[i] == ir_tv(t[1])) idx = i;
  char want[128];
  snprintf(want, sizeof want, "verify: value at index %d has id 99", idx);
  expect_broken(f, want);
  cf_fusion_destroy(f);
}

Test(verify, tensor_expressions_take_tensors_of_this_fusion) {
  cf_tv *t[3], *u[3];
  cf_fusion *f = chain(t), *g = chain(u);
  Expr *e = ir_tv(t[2])->def;
  e->in[0] = ir_tv(u[1]);
  ptrvec_push(g->arena, &ir_tv(u[1])->uses, e);
  ir_tv(t[1])->uses.len = 0;
  expect_broken(f, "verify: input 0 of exp expression 1 (defining T2) is not a TensorView of this fusion");
  cf_fusion_destroy(f);
  cf_fusion_destroy(g);
}

Test(verify, loop_axes_derive_from_the_logical_domain) {
  cf_tv *t[3];
  cf_fusion *f = chain(t);
  TV(ir_tv(t[2]))->loop[1] = TV(ir_tv(t[1]))->loop[1];
  expect_broken(f, "verify: T2: loop axis iS3{8} is not derived from the logical domain");
  cf_fusion_destroy(f);
}

Test(verify, split_history_from_another_tensor_is_caught) {
  cf_tv *t[3];
  cf_fusion *f = chain(t);
  cf_split(f, t[1], 1, 4);
  /* T2's loop takes T1's split outputs: the history walks into T1's axes. */
  TV(ir_tv(t[2]))->loop[1] = TV(ir_tv(t[1]))->loop[1];
  expect_broken(f, "verify: T2: Split iS3{8} consumes an axis not derived from the logical domain");
  cf_fusion_destroy(f);
}

Test(verify, every_logical_axis_reaches_the_loop_domain) {
  cf_tv *t[3];
  cf_fusion *f = chain(t);
  TV(ir_tv(t[1]))->nloop = 1;
  expect_broken(f, "verify: T1: logical axis iS3{8} does not reach the loop domain");
  cf_fusion_destroy(f);
}

Test(verify, allocation_axes_derive_from_the_logical_domain) {
  cf_tv *t[3];
  cf_fusion *f = chain(t);
  cf_set_allocation_to_loop(f, t[1], true);
  TV(ir_tv(t[1]))->alloc[0] = TV(ir_tv(t[0]))->logical[0];
  expect_broken(f, "verify: T1: allocation axis iS0{4} is not derived from the logical domain");
  cf_fusion_destroy(f);
}

Test(verify, repeated_axes) {
  cf_tv *t[3];
  cf_fusion *f = chain(t);
  TensorView *tv = TV(ir_tv(t[1]));
  tv->loop[1] = tv->loop[0];
  expect_broken(f, "verify: T1: loop iS2{4} appears twice");
  cf_fusion_destroy(f);
}

Test(verify, logical_axes_belong_to_their_tensor) {
  cf_tv *t[3];
  cf_fusion *f = chain(t);
  ID(TV(ir_tv(t[1]))->logical[0])->tv = ir_tv(t[2]);
  expect_broken(f, "verify: T1: logical axis iS2{4} belongs to another tensor");
  cf_fusion_destroy(f);
}

Test(verify, dim_sep_only_on_tensor_memory_and_in_range) {
  cf_tv *t[3];
  cf_fusion *f = chain(t);
  TV(ir_tv(t[1]))->tmem_dim_sep = 1;
  expect_broken(f, "verify: T1: dim-sep position 1 set on Local memory");
  cf_fusion_clear_error(f);
  cf_set_memory_type(f, t[1], CF_MEM_TENSOR);
  TV(ir_tv(t[1]))->tmem_dim_sep = 3;
  expect_broken(f, "verify: T1: dim-sep position 3 is outside 0..2");
  cf_fusion_destroy(f);
}

Test(verify, contiguity_per_allocation_axis) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){1, 8});
  cf_fusion_add_input(f, a);
  cf_fusion_add_output(f, cf_set(f, a));
  cr_expect_eq(cf_fusion_verify(f), CF_OK, "%s", cf_fusion_error(f));
  TV(ir_tv(a))->contiguity[0] = 1;
  expect_broken(f, "verify: T0: allocation axis bS0{1} is broadcast but has a contiguity");
  cf_fusion_clear_error(f);
  TV(ir_tv(a))->contiguity[0] = -1;
  TV(ir_tv(a))->contiguity[1] = 2;
  expect_broken(f, "verify: T0: allocation axis iS1{8} has no valid contiguity (0 or 1)");
  cf_fusion_clear_error(f);
  TV(ir_tv(a))->contiguity = NULL;
  expect_broken(f, "verify: T0: allocation domain has no contiguity");
  cf_fusion_destroy(f);
}

Test(verify, inputs_have_no_definition) {
  cf_tv *t[3];
  cf_fusion *f = chain(t);
  ptrvec_push(f->arena, &f->inputs, ir_tv(t[1]));
  expect_broken(f, "verify: input T1 has a definition");
  cf_fusion_destroy(f);
}
