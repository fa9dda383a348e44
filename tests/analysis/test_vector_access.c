/* Tests of the rule for vector accesses of global memory (analysis/vector_access.c), the
 * one the automatic schedulers ask before they vectorize and lowering's validate_vectorize
 * words its errors from: which global tensors a copy accesses, the walk up a vector axis's
 * history (splits, merges whose inner extent the vector divides, the flat whole of a
 * contiguous tensor), the pairing of the copy's innermost axes and unit strides. */
#include "ir/ir.h"
#include "scheduler/sched.h"
#include "scheduler/sched_test_util.h"

static cf_fusion *f;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(vector_access, .init = setup, .fini = teardown);

static const char *const reads = "the global tensor it reads is not contiguous along it";
static const char *const writes = "it is not the innermost contiguous axis of the global tensor";

static Val *axis(cf_tv *t, int i) { return ir_idv(cf_tv_axis(t, i)); }

/* c = set(x), x made an input, c read by a negation that is an output. */
static cf_tv *copy_of_input(cf_tv *x) {
  cf_fusion_add_input(f, x);
  cf_tv *c = cf_set(f, x);
  cf_fusion_add_output(f, cf_neg(f, c));
  return c;
}

Test(vector_access, the_global_tensors_of_a_copy) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){8});
  cf_fusion_add_input(f, x);
  cf_tv *l = cf_set(f, x), *o = cf_set(f, l), *g = cf_set(f, x);
  cf_fusion_add_output(f, o);
  cf_fusion_add_output(f, g);
  Val *globals[2];
  cr_expect_eq(an_vector_globals(ir_tv(l), globals), 1);
  cr_expect_eq(globals[0], ir_tv(x), "a cache of an input reads the input");
  cr_expect_eq(an_vector_globals(ir_tv(o), globals), 1);
  cr_expect_eq(globals[0], ir_tv(o), "an output of a local copy writes itself");
  cr_expect_eq(an_vector_globals(ir_tv(g), globals), 2);
  cr_expect(globals[0] == ir_tv(g) && globals[1] == ir_tv(x), "a global copy of an input: both");
}

Test(vector_access, the_inner_half_of_a_split_of_the_innermost_axis) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 32});
  cf_tv *c = copy_of_input(x);
  EXPECT_OK(cf_split(f, c, 1, 4));
  cr_expect_null(an_vector_refusal(ir_tv(c), axis(c, 2), 4, ir_tv(x)));
  cr_expect_null(an_vector_refusal_any(ir_tv(c), axis(c, 2), 4));
  cr_expect_str_eq(an_vector_refusal_any(ir_tv(c), axis(c, 1), 8), reads, "the outer half of the split");
}

/* The rows of a [4, 32] tensor innermost (what the pointwise tile left on a tensor it
 * reached through a broadcast, DAG seed 12000229): an extent equal to the vector, but not
 * adjacent in memory. */
Test(vector_access, the_outer_axis_moved_innermost_is_refused) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 32});
  cf_tv *c = copy_of_input(x);
  EXPECT_OK(cf_split(f, c, 1, 4));
  EXPECT_OK(cf_reorder(f, c, 1, (int[]){0, 2}));
  EXPECT_TV(c, "T1_l_float[iS6{8}, iS7{4}, iS2{4}]");
  cr_expect_str_eq(an_vector_refusal_any(ir_tv(c), axis(c, 2), 4), reads);
  cf_tv *o = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 32});
  cf_fusion_add_input(f, o);
  cf_tv *w = cf_set(f, cf_neg(f, o));
  cf_fusion_add_output(f, w);
  EXPECT_OK(cf_reorder(f, w, 1, (int[]){0, 1}));
  cr_expect_str_eq(an_vector_refusal_any(ir_tv(w), axis(w, 1), 4), writes, "an output written along its rows");
}

/* A vector of the merge of [4, 32] stays within a row when it divides 32; of [4, 6] a
 * vector of 4 straddles two rows, adjacent in memory only when the rows are (the flat
 * whole of a contiguous tensor, issue 22): a view whose rows are apart (contiguity false
 * on its outer axis) is refused. */
Test(vector_access, a_merge_whose_inner_extent_the_vector_divides) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 32});
  cf_tv *c = copy_of_input(x);
  EXPECT_OK(cf_merge(f, c, 0));
  EXPECT_OK(cf_split(f, c, 0, 4));
  cr_expect_null(an_vector_refusal_any(ir_tv(c), axis(c, 1), 4));
  cf_tv *y = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 6});
  cf_tv *d = copy_of_input(y);
  EXPECT_OK(cf_merge(f, d, 0));
  EXPECT_OK(cf_split(f, d, 0, 4));
  cr_expect_null(an_vector_refusal_any(ir_tv(d), axis(d, 1), 4), "the flat whole of a contiguous [4, 6]");
  cf_tv *z = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 6});
  EXPECT_OK(cf_set_allocation_domain(f, z, 2, (cf_id *[]){cf_tv_axis(z, 0), cf_tv_axis(z, 1)}, (int8_t[]){0, 1}));
  cf_tv *e = copy_of_input(z);
  EXPECT_OK(cf_merge(f, e, 0));
  EXPECT_OK(cf_split(f, e, 0, 4));
  cr_expect_str_eq(an_vector_refusal_any(ir_tv(e), axis(e, 1), 4), reads);
  cr_expect_null(an_vector_refusal_any(ir_tv(e), axis(e, 1), 2), "a vector of 2 divides 6");
}

/* an_vector_flat: a vector's split of the flat whole (all axes merged, or a tensor's one
 * axis) may end in a partial vector; a split of the innermost axis alone may not (the rows
 * of [3, 10] start 10 elements apart: a vector of 4 there would start misaligned). */
Test(vector_access, a_split_of_the_flat_whole) {
  cf_tv *x = cf_tensor_concrete(f, CF_HALF, 2, (int64_t[]){7, 13});
  cf_tv *c = copy_of_input(x);
  cr_expect(an_flat_contiguous(ir_tv(x)) && an_flat_contiguous(ir_tv(c)));
  EXPECT_OK(cf_merge(f, c, 0));
  EXPECT_OK(cf_split(f, c, 0, 8));
  cr_expect(an_vector_flat(ir_tv(c), axis(c, 1)));
  cr_expect(!an_vector_flat(ir_tv(c), axis(c, 0)), "the outer half of the split");
  cf_tv *y = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){3, 10});
  cf_tv *d = copy_of_input(y);
  EXPECT_OK(cf_split(f, d, 1, 4));
  cr_expect_null(an_vector_refusal_any(ir_tv(d), axis(d, 2), 4), "a vector within a row");
  cr_expect(!an_vector_flat(ir_tv(d), axis(d, 2)), "the rows of [3, 10] are not the flat whole");
  cf_tv *z = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){10});
  cf_tv *e = copy_of_input(z);
  EXPECT_OK(cf_split(f, e, 0, 4));
  cr_expect(an_vector_flat(ir_tv(e), axis(e, 1)), "a 1-D tensor is its flat whole");
  cf_tv *s = cf_tensor_strided(f, CF_FLOAT, 2);
  cf_tv *g = copy_of_input(s);
  cr_expect(!an_flat_contiguous(ir_tv(s)));
  EXPECT_OK(cf_merge(f, g, 0));
  EXPECT_OK(cf_split(f, g, 0, 4));
  cr_expect(!an_vector_flat(ir_tv(g), axis(g, 1)), "a strided input");
}

Test(vector_access, a_strided_input_has_no_unit_stride) {
  cf_tv *x = cf_tensor_strided(f, CF_FLOAT, 2), *y = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 32});
  cf_tv *c = copy_of_input(x);
  cf_fusion_add_input(f, y);
  cr_expect(!an_innermost_unit_stride(ir_tv(x)));
  cr_expect(an_innermost_unit_stride(ir_tv(y)));
  EXPECT_OK(cf_split(f, c, 1, 4));
  cr_expect_str_eq(an_vector_refusal_any(ir_tv(c), axis(c, 2), 4), reads);
}
