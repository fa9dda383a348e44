/* Tests of the loop-model queries lowering asks of analysis/: the positional reading of
 * promoted loops (positional.c: extents compared as scalars, which tensor promotes a loop)
 * and per-thread uniformity (uniformity.c: dependences through operands, cleared by block
 * reductions and by write places that spell the launch type out). */
#include "ir/ir.h"
#include "scheduler/sched.h"
#include "scheduler/sched_test_util.h"

static cf_fusion *f;
static Arena *a;
static LoopModel m;

static void setup(void) {
  f = cf_fusion_create();
  a = arena_create();
}
static void teardown(void) {
  an_loop_model_free(&m);
  arena_destroy(a);
  cf_fusion_destroy(f);
}
TestSuite(loop_queries, .init = setup, .fini = teardown);

static void build_model(void) {
  char *err = NULL;
  cr_assert_eq(an_loop_model_build(f, a, &m, &err), CF_OK, "%s", err ? err : "");
}

static Val *extent(cf_tv *t, int i) { return ID(ir_idv(cf_tv_axis(t, i)))->extent; }

Test(loop_queries, extents_compare_as_scalars) {
  cf_tv *x = cf_tensor_symbolic(f, CF_FLOAT, 2), *c = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){12});
  cf_fusion_add_input(f, x);
  cf_fusion_add_input(f, c);
  cf_tv *y = cf_neg(f, x), *z = cf_relu(f, x);
  EXPECT_OK(cf_split(f, y, 1, 4));
  EXPECT_OK(cf_split(f, z, 1, 4));
  cr_expect(an_same_extent(extent(y, 1), extent(z, 1)), "ceilDiv(i1, 4) twice is one extent");
  cr_expect(!an_same_extent(extent(y, 1), extent(y, 2)));
  cr_expect(an_same_extent(extent(y, 2), ir_const_int(f, 4)), "equal constants");
  cr_expect(!an_same_extent(extent(y, 0), extent(y, 1)));
  cr_expect(an_same_extent(extent(c, 0), ir_const_int(f, 12)));
}

/* b = bcast(v)[1, 8] inlined into o = x[4, 8] + b, both merged: b's loop is promoted to
 * o's axis (o promotes it), and b's axis does not stand for it positionally (b's merged
 * axis is not of o's extent). */
Test(loop_queries, the_promoting_tensor_of_a_broadcast_loop) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8}), *v = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){8});
  cf_fusion_add_input(f, x);
  cf_fusion_add_input(f, v);
  cf_tv *b = cf_broadcast(f, cf_neg(f, v), 2, (bool[]){true, false});
  cf_tv *o = cf_add(f, x, b);
  cf_fusion_add_output(f, o);
  EXPECT_OK(cf_merge(f, o, 0));
  EXPECT_OK(cf_propagate_transforms(f, o));
  EXPECT_OK(cf_inline_most(f));
  build_model();
  cr_expect_eq(an_promoting_tensor(&m, ir_tv(b), 0), ir_tv(o));
  cr_expect_null(an_promoting_tensor(&m, ir_tv(o), 0), "o iterates its own axis");
  cr_expect(!an_stands_for(&m, ir_tv(b), ir_tv(o), 0));
  cr_expect_null(an_positional_ref(&m, ir_tv(b), 0));
}

/* The pointwise row's tile at break point 1 of out = u + b for u = broadcast(m) +
 * broadcast(v) [1, 2, 64] and b = broadcast(c) [9, 2, 1] (define and run's DAG seed
 * 41400113, reduced): u's blockIdx.y loop is promoted to a tensor of [9, 2, ...], and its
 * thread axis is one of b's up to broadcasts, of b's extent (128). But u's consumers run
 * their own [2, 64] tile, not b's [2, 1], and the output at the end of the chain is read by
 * nothing: no axis stands for b (it did, vacuously, through the output; lowering then
 * refused broadcast(v) inlined into u as running another domain in u's loop). */
Test(loop_queries, a_tensor_read_by_nothing_stands_for_no_tensor) {
  cf_tv *mm = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){2, 64});
  cf_tv *v = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){64});
  cf_tv *c = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){9, 2});
  cf_fusion_add_input(f, mm), cf_fusion_add_input(f, v), cf_fusion_add_input(f, c);
  cf_tv *u = cf_add(f, cf_broadcast(f, mm, 3, (bool[]){true, false, false}),
                    cf_broadcast(f, v, 3, (bool[]){true, true, false}));
  cf_tv *b = cf_broadcast(f, c, 3, (bool[]){false, false, true}), *o = cf_add(f, u, b);
  cf_fusion_add_output(f, o);
  EXPECT_OK(cf_schedule_pointwise(f));
  build_model();
  cr_assert_not_null(an_promoting_tensor(&m, ir_tv(u), 0), "u's blockIdx.y loop runs a concrete axis");
  for (int j = 1; j < TV(ir_tv(u))->nloop; j++) {
    cr_expect_null(an_positional_ref(&m, ir_tv(u), j), "u's axis %d", j);
    cr_expect(!an_stands_for(&m, ir_tv(u), ir_tv(b), j), "u's axis %d", j);
    cr_expect(!an_stands_for(&m, ir_tv(o), ir_tv(b), j), "the output's axis %d", j);
  }
}

/* s = sum(e, 1) with its reduction axis on threadIdx.x (a block reduction) and e = exp(x)
 * computed per element: e's value depends on threadIdx.x through the read index, s's does
 * not (the block reduction combines every thread); a write whose place uses blockIdx.x
 * spells blockIdx.x out for its readers. */
Test(loop_queries, uniformity_through_operands_and_block_reductions) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 32});
  cf_fusion_add_input(f, x);
  cf_tv *e = cf_exp(f, x), *s = cf_sum(f, e, 1, (int[]){1});
  cf_fusion_add_output(f, s);
  EXPECT_OK(cf_parallelize(f, s, 1, CF_PT_TIDX));
  EXPECT_OK(cf_parallelize(f, s, 0, CF_PT_BIDX));
  EXPECT_OK(cf_parallelize(f, e, 1, CF_PT_TIDX));
  build_model();
  Uniformity u;
  cr_assert(an_uniformity_init(&u, a, f->vals.len));
  unsigned tid = 1u << CF_PT_TIDX, bid = 1u << CF_PT_BIDX;
  Expr *de = ir_tv(e)->def, *ds = ir_tv(s)->def;
  unsigned ve = an_value_varies(&m, &u, de, tid | bid);
  cr_expect_eq(ve, tid | bid);
  an_uniformity_record(&u, de, ve, 0); /* a local copy per thread and block: keeps both */
  cr_expect_eq(u.varies[ir_tv(e)->id], tid | bid);
  unsigned vs = an_value_varies(&m, &u, ds, 0);
  cr_expect_eq(vs, bid, "the block reduction clears threadIdx.x, the operand brings blockIdx.x");
  an_uniformity_record(&u, ds, vs, bid);
  cr_expect_eq(u.varies[ir_tv(s)->id], 0u, "written at a place that uses blockIdx.x");
  cr_expect(an_write_spans(&u, ir_tv(s), CF_PT_BIDX));
  cr_expect(!an_write_spans(&u, ir_tv(s), CF_PT_TIDX));
}
