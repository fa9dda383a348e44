/* Tests of the pairwise map and IdMap (analysis/id_graph.c), the IterDomain relations that
 * inlining, propagation checks, parallelize_all_like and lowering rely on. */
#include "ir/ir.h"
#include "scheduler/sched.h"
#include "scheduler/sched_test_util.h"

static cf_fusion *f;
static cf_tv *tv[5];

static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }

static Val *ax(cf_tv *t, int i) { return ir_idv(cf_tv_axis(t, i)); }
static Val *logical(cf_tv *t, int i) { return TV(ir_tv(t))->logical[i]; }

TestSuite(id_map, .init = setup, .fini = teardown);

Test(id_map, pairwise_through_a_broadcast_skips_new_axes) {
  tv[0] = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_fusion_add_input(f, tv[0]);
  tv[1] = cf_broadcast(f, tv[0], 3, (bool[]){true, false, false});
  Val *p[3], *c[3];
  cr_assert_eq(an_pairwise_map(ir_tv(tv[0]), ir_tv(tv[1]), p, c, 3), 2);
  cr_expect_eq(p[0], logical(tv[0], 0));
  cr_expect_eq(c[0], logical(tv[1], 1));
  cr_expect_eq(c[1], logical(tv[1], 2));
  cr_expect_eq(an_pairwise_partner(ir_tv(tv[1]), ir_tv(tv[0]), logical(tv[1], 0)), NULL);
  cr_expect_eq(an_pairwise_partner(ir_tv(tv[1]), ir_tv(tv[0]), logical(tv[1], 2)), logical(tv[0], 1));
  /* Not producer and consumer: no map. */
  cr_expect_eq(an_pairwise_map(ir_tv(tv[1]), ir_tv(tv[0]), NULL, NULL, 0), -1);
}

/* A permute pairs the producer's axes with the consumer's root, which is in input order. */
Test(id_map, pairwise_through_a_permute_uses_the_root) {
  tv[0] = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_fusion_add_input(f, tv[0]);
  tv[1] = cf_transpose(f, tv[0], 0, 1);
  cr_expect_eq(an_pairwise_partner(ir_tv(tv[0]), ir_tv(tv[1]), logical(tv[0], 0)), logical(tv[1], 1));
  cr_expect_eq(an_pairwise_partner(ir_tv(tv[1]), ir_tv(tv[0]), logical(tv[1], 0)), logical(tv[0], 1));
}

/* A reduction's consumer has no partner for the reduced axis. */
Test(id_map, pairwise_skips_producer_reduction_axes) {
  tv[0] = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_fusion_add_input(f, tv[0]);
  tv[1] = cf_sum(f, tv[0], 1, (int[]){0});
  tv[2] = cf_set(f, tv[1]);
  cr_expect_eq(an_pairwise_map(ir_tv(tv[1]), ir_tv(tv[2]), NULL, NULL, 0), 1);
  cr_expect_eq(an_pairwise_partner(ir_tv(tv[1]), ir_tv(tv[2]), logical(tv[1], 1)), logical(tv[2], 0));
  cr_expect_eq(an_pairwise_partner(ir_tv(tv[0]), ir_tv(tv[1]), logical(tv[0], 0)), logical(tv[1], 0));
}

Test(id_map, exact_relates_chains_and_equal_splits) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){4, 8}, tv);
  cf_split(f, tv[1], 1, 2);
  cf_split(f, tv[3], 1, 2);
  cf_split(f, tv[2], 1, 4);
  IdMap *m = an_idmap_build(f, false);
  cr_assert(m);
  cr_expect(an_idmap_same(m, ax(tv[0], 0), ax(tv[4], 0)));
  cr_expect(an_idmap_same(m, ax(tv[1], 1), ax(tv[3], 1)));
  cr_expect(an_idmap_same(m, ax(tv[1], 2), ax(tv[3], 2)));
  cr_expect(!an_idmap_same(m, ax(tv[1], 1), ax(tv[2], 1)));
  cr_expect(!an_idmap_same(m, ax(tv[1], 1), ax(tv[1], 2)));
  cr_expect_eq(an_idmap_class(m, ax(tv[1], 1)), an_idmap_class(m, ax(tv[3], 1)));
  an_idmap_free(m);
}

/* Inner and outer splits by the same factor are different axes. */
Test(id_map, split_direction_matters) {
  tu_set_chain(f, CF_FLOAT, 1, (int64_t[]){16}, tv);
  cf_split(f, tv[1], 0, 2);
  cf_split_outer(f, tv[2], 0, 2);
  IdMap *m = an_idmap_build(f, false);
  cr_expect(!an_idmap_same(m, ax(tv[1], 0), ax(tv[2], 0)));
  cr_expect(!an_idmap_same(m, ax(tv[1], 1), ax(tv[2], 1)));
  an_idmap_free(m);
}

Test(id_map, merges_and_swizzles_propagate) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){8, 8}, tv);
  for (int i = 1; i <= 2; i++) {
    cf_swizzle_xor(f, tv[i], 0, 1);
    cf_merge(f, tv[i], 0);
  }
  cf_merge(f, tv[3], 0);
  IdMap *m = an_idmap_build(f, false);
  cr_expect(an_idmap_same(m, ax(tv[1], 0), ax(tv[2], 0)));
  cr_expect(!an_idmap_same(m, ax(tv[2], 0), ax(tv[3], 0)));
  an_idmap_free(m);
}

/* A broadcast axis is related to the concrete axis it stands in for only permissively,
 * and a merge with it is forwarded to its other input. */
Test(id_map, broadcasts_are_permissive_only) {
  tv[0] = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){4});
  cf_fusion_add_input(f, tv[0]);
  tv[1] = cf_set(f, tv[0]);
  tv[2] = cf_broadcast(f, tv[1], 2, (bool[]){false, true});
  tv[3] = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_fusion_add_input(f, tv[3]);
  tv[4] = cf_add(f, tv[2], tv[3]);
  cf_fusion_add_output(f, tv[4]);
  cf_merge(f, tv[2], 0);
  cf_merge(f, tv[4], 0);
  IdMap *exact = an_idmap_build(f, false), *perm = an_idmap_build(f, true);
  Val *b = logical(tv[2], 1), *i = logical(tv[4], 1);
  cr_expect(!an_idmap_same(exact, b, i));
  cr_expect(an_idmap_same(perm, b, i));
  cr_expect(!an_idmap_same(exact, ax(tv[2], 0), ax(tv[1], 0)));
  cr_expect(an_idmap_same(perm, ax(tv[2], 0), ax(tv[1], 0)));
  cr_expect(!an_idmap_same(exact, ax(tv[2], 0), ax(tv[4], 0)));
  cr_expect(an_idmap_same(perm, ax(tv[2], 0), ax(tv[4], 0)));
  an_idmap_free(exact);
  an_idmap_free(perm);
}

/* The map is a snapshot; join adds a relation and closes it forward again. */
Test(id_map, join_closes_forward) {
  tu_set_chain(f, CF_FLOAT, 1, (int64_t[]){16}, tv);
  cf_split(f, tv[1], 0, 4);
  Val *t1_outer = ax(tv[1], 0);
  cf_tv *other = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){16});
  cf_split(f, other, 0, 4);
  IdMap *m = an_idmap_build(f, false);
  cr_expect(!an_idmap_same(m, t1_outer, ax(other, 0)));
  an_idmap_join(m, logical(tv[1], 0), logical(other, 0));
  cr_expect(an_idmap_same(m, t1_outer, ax(other, 0)));
  cf_split(f, tv[2], 0, 4);
  cr_expect(!an_idmap_same(m, ax(tv[2], 0), t1_outer));
  cr_expect(an_idmap_same(m, ax(tv[2], 0), ax(tv[2], 0)));
  an_idmap_free(m);
}

/* Issue 28: in a^T + a the add pairs a's axis 0 with the sum's axis 0, which the
 * transpose pairs with a's axis 1. Neither map may close that cycle (a's two axes would be
 * one loop, and cf_inline_most shared them): the transposing path, defined first, is kept,
 * the add's own pairing of a is left out. */
Test(id_map, a_tensor_never_maps_onto_itself) {
  tv[0] = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){8, 8});
  cf_fusion_add_input(f, tv[0]);
  tv[1] = cf_set(f, tv[0]);
  tv[2] = cf_transpose(f, tv[1], 0, 1);
  tv[3] = cf_add(f, tv[2], tv[1]);
  cf_fusion_add_output(f, tv[3]);
  for (int permissive = 0; permissive < 2; permissive++) {
    IdMap *m = an_idmap_build(f, permissive);
    cr_assert(m);
    cr_expect(!an_idmap_same(m, logical(tv[1], 0), logical(tv[1], 1)), "a's axes joined (permissive %d)", permissive);
    cr_expect(!an_idmap_same(m, logical(tv[3], 0), logical(tv[3], 1)));
    cr_expect(an_idmap_same(m, logical(tv[2], 0), logical(tv[3], 0)));
    cr_expect(an_idmap_same(m, logical(tv[1], 1), logical(tv[3], 0)));
    cr_expect(!an_idmap_same(m, logical(tv[1], 0), logical(tv[3], 0)));
    const Expr *op;
    const Val *t, *a, *b;
    cr_assert(an_idmap_self_mapping(m, &op, &t, &a, &b), "the join left out is recorded");
    cr_expect_eq(op, ir_tv(tv[3])->def);
    cr_expect_eq(t, ir_tv(tv[0]));
    an_idmap_free(m);
  }
}

/* A dead op (nothing the outputs need) joins no axes: t + x below would otherwise close
 * the same cycle through x. */
Test(id_map, dead_ops_join_nothing) {
  tv[0] = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){8, 8});
  cf_fusion_add_input(f, tv[0]);
  tv[1] = cf_transpose(f, tv[0], 0, 1);
  tv[2] = cf_transpose(f, tv[1], 0, 1);
  tv[3] = cf_neg(f, tv[1]); /* dead */
  cf_fusion_add_output(f, tv[2]);
  IdMap *m = an_idmap_build(f, true);
  cr_assert(m);
  cr_expect(!an_idmap_same(m, logical(tv[1], 0), logical(tv[3], 0)));
  cr_expect(an_idmap_same(m, logical(tv[0], 0), logical(tv[2], 0)));
  const Expr *op;
  const Val *t, *a, *b;
  cr_expect(!an_idmap_self_mapping(m, &op, &t, &a, &b), "the dead add does not count");
  an_idmap_free(m);
  char *live = an_live_exprs(f);
  cr_assert(live);
  cr_expect(live[ir_tv(tv[2])->def->id]);
  cr_expect(!live[ir_tv(tv[3])->def->id]);
  free(live);
}
