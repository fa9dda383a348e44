/* tests/layout/test_layout_algebra.c: coalesce, composition, complement, the inverses,
 * divides and products on the examples of CuTe's documentation and of the seeds, with
 * CuTe's printed results (checked against CuTe itself), and every error they can report. */
#include "layout_test_util.h"

static void expect_unary(cf_status (*fn)(const cf_layout *, cf_layout *, cf_layout_err *),
                         const char *in, const char *want)
{
  cf_layout a = lt_layout(in), r;
  cf_layout_err e;
  cr_assert_eq(fn(&a, &r, &e), CF_OK, "%s: %s", in, e.message);
  cr_expect_str_eq(lt_str(&r), want, "of %s", in);
}

static void expect_complement(const char *a, const char *cotarget, const char *want)
{
  cf_layout l = lt_layout(a), r;
  cf_int_tuple m;
  cf_layout_err e;
  if (cotarget)
    m = lt_tuple(cotarget);
  cr_assert_eq(cf_layout_complement(&l, cotarget ? &m : NULL, &r, &e), CF_OK, "%s", e.message);
  cr_expect_str_eq(lt_str(&r), want, "complement(%s, %s)", a, cotarget ? cotarget : "");
}

static void expect_complement_error(const char *a, const char *cotarget, const char *want)
{
  cf_layout l = lt_layout(a), r;
  cf_int_tuple m;
  cf_layout_err e;
  if (cotarget)
    m = lt_tuple(cotarget);
  cr_assert_eq(cf_layout_complement(&l, cotarget ? &m : NULL, &r, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, want);
}

/* ---- coalesce ------------------------------------------------------------------------ */

Test(layout_algebra, coalesce_seed_example)
{
  expect_unary(cf_layout_coalesce, "(_2,(_1,_6)):(_1,(_6,_2))", "_12:_1");
}

/* The four cases of CuTe's documentation for two modes s0:d0 ++ s1:d1. */
Test(layout_algebra, coalesce_the_four_cases)
{
  expect_unary(cf_layout_coalesce, "(_2,_1):(_3,_5)", "_2:_3");
  expect_unary(cf_layout_coalesce, "(_1,_4):(_3,_5)", "_4:_5");
  expect_unary(cf_layout_coalesce, "(_2,_4):(_3,_6)", "_8:_3");
  expect_unary(cf_layout_coalesce, "(_2,_4):(_3,_7)", "(_2,_4):(_3,_7)");
  expect_unary(cf_layout_coalesce, "(_1,_1):(_3,_5)", "_1:_0");
}

/* A merge happens only when CuTe can prove it statically. */
Test(layout_algebra, coalesce_merges_only_static_modes)
{
  expect_unary(cf_layout_coalesce, "(2,4):(1,2)", "(2,4):(1,2)");
  expect_unary(cf_layout_coalesce, "(_2,4):(_1,_2)", "(_2,4):(_1,_2)");
  expect_unary(cf_layout_coalesce, "(2,_4):(_1,_2)", "(2,_4):(_1,_2)");
  expect_unary(cf_layout_coalesce, "(2,_4):(_0,_0)", "8:_0");
  expect_unary(cf_layout_coalesce, "((_4,_1)):((_1,_0))", "_4:_1");
}

Test(layout_algebra, coalesce_by_mode)
{
  cf_layout a = lt_layout("(_2,(_1,_6)):(_1,(_6,_2))"), r;
  cf_int_tuple p = lt_tuple("(_1,_1)"), p1 = lt_tuple("(_1)"), p3 = lt_tuple("(1,1,1)");
  cf_layout_err e;
  cr_assert_eq(cf_layout_coalesce_by(&a, &p, &r, &e), CF_OK);
  cr_expect_str_eq(lt_str(&r), "(_2,_6):(_1,_2)");
  cr_assert_eq(cf_layout_coalesce_by(&a, &p1, &r, &e), CF_OK, "modes past the profile are kept");
  cr_expect_str_eq(lt_str(&r), "(_2,(_1,_6)):(_1,(_6,_2))");
  cr_assert_eq(cf_layout_coalesce_by(&a, &p3, &r, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "coalesce: profile of rank 3 for a mode of rank 2");
}

/* ---- composition --------------------------------------------------------------------- */

/* 02_layout_algebra.md: A = (6,2):(8,2), B = (4,3):(3,1); then reshapes 20:2 and
 * (10,2):(16,4) into matrices, static and dynamic (CuTe cannot coalesce the dynamic 1s). */
Test(layout_algebra, composition_documented_examples)
{
  lt_expect_op(CF_LAYOUT_OP_COMPOSITION, "(_6,_2):(_8,_2)", "(_4,_3):(_3,_1)", "((_2,_2),_3):((_24,_2),_8)");
  lt_expect_op(CF_LAYOUT_OP_COMPOSITION, "(6,2):(8,2)", "(4,3):(3,1)", "((2,2),(3,1)):((24,2),(8,2))");
  lt_expect_op(CF_LAYOUT_OP_COMPOSITION, "_20:_2", "(_5,_4):(_4,_1)", "(_5,_4):(_8,_2)");
  lt_expect_op(CF_LAYOUT_OP_COMPOSITION, "20:2", "(5,4):(4,1)", "(5,4):(8,2)");
  lt_expect_op(CF_LAYOUT_OP_COMPOSITION, "(_10,_2):(_16,_4)", "(_5,_4):(_1,_5)", "(_5,(_2,_2)):(_16,(_80,_4))");
  lt_expect_op(CF_LAYOUT_OP_COMPOSITION, "(10,2):(16,4)", "(5,4):(1,5)", "((5,1),(2,2)):((16,4),(80,4))");
}

/* Seed 004: by-mode composition with the tiler <3:4, 8:2>, and a shape as a tiler. */
Test(layout_algebra, composition_by_mode_with_a_tiler)
{
  lt_expect_op(CF_LAYOUT_OP_COMPOSITION, "(12,(4,8)):(59,(13,1))", "<_3:_4,_8:_2>", "(_3,(2,4)):(236,(26,1))");
  cf_layout a = lt_layout("(12,(4,8)):(59,(13,1))"), m0, m1, same, r;
  cf_layout t0 = lt_layout("_3:_4"), t1 = lt_layout("_8:_2");
  cf_layout_err e;
  int zero = 0, one = 1;
  cf_layout_get(&a, &zero, 1, &m0, &e);
  cf_layout_get(&a, &one, 1, &m1, &e);
  cf_layout parts[2];
  cr_assert_eq(cf_layout_composition(&m0, &t0, &parts[0], &e), CF_OK);
  cr_assert_eq(cf_layout_composition(&m1, &t1, &parts[1], &e), CF_OK);
  cr_assert_eq(cf_layout_concat(parts, 2, &same, &e), CF_OK);
  cr_expect_str_eq(lt_str(&same), "(_3,(2,4)):(236,(26,1))", "identical to the mode-by-mode composition");
  lt_expect_op(CF_LAYOUT_OP_COMPOSITION, "(12,(4,8)):(59,(13,1))", "(_3,_8)", "(_3,(4,2)):(59,(13,1))");
  cf_layout t = lt_tiler("<_3:_4>");
  cr_assert_eq(cf_layout_composition(&a, &t, &r, &e), CF_OK);
  cr_expect_str_eq(lt_str(&r), "(_3):(236)", "modes past the tiler are dropped");
}

/* Seed 000/001, thread-value partitioning: the 4x8 row-major tensor seen through the TV
 * layout ((2,4),(2,2)):((8,1),(4,16)). The seed's `((2,4),(2,2):(2,8),(1,4))` is this. */
Test(layout_algebra, composition_with_a_tv_layout)
{
  lt_expect_op(CF_LAYOUT_OP_COMPOSITION, "(_4,_8):(_8,_1)", "((_2,_4),(_2,_2)):((_8,_1),(_4,_16))",
               "((_2,_4),(_2,_2)):((_2,_8),(_1,_4))");
}

Test(layout_algebra, composition_with_a_zero_stride_repeats_element_zero)
{
  lt_expect_op(CF_LAYOUT_OP_COMPOSITION, "(_4,_8):(_8,_1)", "_5:_0", "_5:_0");
  lt_expect_op(CF_LAYOUT_OP_COMPOSITION, "(4,8):(8,1)", "5:0", "5:0");
}

Test(layout_algebra, composition_divisibility_errors)
{
  lt_expect_op_error(CF_LAYOUT_OP_COMPOSITION, "(_4,_8):(_1,_5)", "_2:_6", CF_ERR_INVALID_ARGUMENT,
                     "composition: stride divisibility condition violated: stride 6 and shape 4 "
                     "do not divide each other");
  lt_expect_op_error(CF_LAYOUT_OP_COMPOSITION, "(_6,_2):(_1,_7)", "_4:_4", CF_ERR_INVALID_ARGUMENT,
                     "composition: stride divisibility condition violated: stride 4 and shape 6 "
                     "do not divide each other, and the elements do not fit in one mode");
  lt_expect_op_error(CF_LAYOUT_OP_COMPOSITION, "(_4,_8):(_1,_5)", "_6:_1", CF_ERR_INVALID_ARGUMENT,
                     "composition: shape divisibility condition violated: shape 6 is not a multiple of 4");
  lt_expect_op_error(CF_LAYOUT_OP_COMPOSITION, "(4,8):(1,4)", "_3:_2", CF_ERR_INVALID_ARGUMENT,
                     "composition: shape divisibility condition violated: shape 3 is not a multiple of 2");
  lt_expect_op_error(CF_LAYOUT_OP_COMPOSITION, "(4,8):(1,4)", "<2:1,3:1,4:1>", CF_ERR_INVALID_ARGUMENT,
                     "composition: tiler of rank 3 for a layout of rank 2");
}

/* A size-1 right-hand side needs no divisibility: it only ever reads element 0. (CuTe
 * rejects the static _1:_6 at compile time, and computes this for the dynamic one.) */
Test(layout_algebra, composition_of_one_element_is_always_admissible)
{
  lt_expect_op(CF_LAYOUT_OP_COMPOSITION, "(4,8):(1,4)", "1:6", "(1,1):(6,8)");
  lt_expect_op(CF_LAYOUT_OP_COMPOSITION, "(_4,_8):(_1,_5)", "_1:_6", "_1:_10");
}

/* ---- complement ---------------------------------------------------------------------- */

/* 02_layout_algebra.md's list (all static), and seed 004's two examples, where the seed's
 * `complement(6:4, 24) => 6:4` is a typo for what CuTe computes, 4:1 (its own explanation
 * (6,4):(4,1) says so). */
Test(layout_algebra, complement_documented_examples)
{
  expect_complement("_4:_1", "_24", "_6:_4");
  expect_complement("_6:_4", "_24", "_4:_1");
  expect_complement("(_4,_6):(_1,_4)", "_24", "_1:_0");
  expect_complement("_4:_2", "_24", "(_2,_3):(_1,_8)");
  expect_complement("(_2,_4):(_1,_6)", "_24", "_3:_2");
  expect_complement("(_2,_2):(_1,_6)", "_24", "(_3,_2):(_2,_12)");
}

Test(layout_algebra, complement_keeps_what_is_static)
{
  expect_complement("4:2", "24", "(2,3):(_1,8)");
  expect_complement("4:1", "24", "(1,6):(_1,4)");
  expect_complement("(_2,_2):(_1,_6)", "(_4,6)", "(_3,2):(_2,_12)");
}

Test(layout_algebra, complement_without_cotarget_uses_the_cosize)
{
  expect_complement("(_2,_2):(_1,_6)", NULL, "_3:_2");
  expect_complement("_4:_0", "_8", "_8:_1");
}

Test(layout_algebra, complement_errors)
{
  expect_complement_error("(_2,_2):(_1,_1)", "_8",
                          "complement: non-injective layout (stride 1 repeats an earlier index)");
  expect_complement_error("(2,4):(1,2)", "16", "complement: dynamic stride 1 in a layout of rank > 1");
  expect_complement_error("4:-1", "8", "complement: stride -1 is not positive");
  expect_complement_error("4:1", "0", "complement: cotarget 0 is not positive");
}

/* ---- inverses ------------------------------------------------------------------------ */

Test(layout_algebra, right_inverse_examples)
{
  expect_unary(cf_layout_right_inverse, "(_4,_8):(_8,_1)", "(_8,_4):(_4,_1)");
  expect_unary(cf_layout_right_inverse, "(_2,_4):(_1,_6)", "_2:_1");
  expect_unary(cf_layout_right_inverse, "(_4,8):(_8,_1)", "8:_4");
  expect_unary(cf_layout_right_inverse, "((_2,_2),_3):((_1,_6),_2)", "(_2,_3,_2):(_1,_4,_2)");
  expect_unary(cf_layout_right_inverse, "(4,8):(8,1)", "_1:_0");
}

Test(layout_algebra, left_inverse_examples)
{
  expect_unary(cf_layout_left_inverse, "(_4,_8):(_8,_1)", "(_8,_4):(_4,_1)");
  expect_unary(cf_layout_left_inverse, "(_2,_4):(_1,_6)", "(_6,_4):(_1,_2)");
  expect_unary(cf_layout_left_inverse, "((_2,_2),_3):((_1,_6),_2)", "(_2,_3,_2):(_1,_4,_2)");
}

Test(layout_algebra, left_inverse_errors)
{
  cf_layout a = lt_layout("(4,8):(8,1)"), b = lt_layout("(_2,_2):(_2,_3)"), r;
  cf_layout_err e;
  cr_assert_eq(cf_layout_left_inverse(&a, &r, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "left_inverse: needs static strides, got the dynamic stride 1");
  cr_assert_eq(cf_layout_left_inverse(&b, &r, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "left_inverse: divisibility condition violated: stride 3 is not a multiple of 2");
}

/* ---- divides ------------------------------------------------------------------------- */

/* 1-D: A = (4,2,3):(2,1,8) tiled by 4:2. */
Test(layout_algebra, logical_divide_1d)
{
  lt_expect_op(CF_LAYOUT_OP_LOGICAL_DIVIDE, "(_4,_2,_3):(_2,_1,_8)", "_4:_2", "((_2,_2),(_2,_3)):((_4,_1),(_2,_8))");
}

/* 2-D: A = (9,(4,8)):(59,(13,1)) tiled by <3:3, (2,4):(1,8)>; the tile modes are the
 * composition (3,(2,4)):(177,(13,2)). */
Test(layout_algebra, divides_2d)
{
  const char *a = "(_9,(_4,_8)):(_59,(_13,_1))", *t = "<_3:_3,(_2,_4):(_1,_8)>";
  lt_expect_op(CF_LAYOUT_OP_LOGICAL_DIVIDE, a, t, "((_3,_3),((_2,_4),(_2,_2))):((_177,_59),((_13,_2),(_26,_1)))");
  lt_expect_op(CF_LAYOUT_OP_ZIPPED_DIVIDE, a, t, "((_3,(_2,_4)),(_3,(_2,_2))):((_177,(_13,_2)),(_59,(_26,_1)))");
  lt_expect_op(CF_LAYOUT_OP_TILED_DIVIDE, a, t, "((_3,(_2,_4)),_3,(_2,_2)):((_177,(_13,_2)),_59,(_26,_1))");
  lt_expect_op(CF_LAYOUT_OP_FLAT_DIVIDE, a, t, "(_3,(_2,_4),_3,(_2,_2)):(_177,(_13,_2),_59,(_26,_1))");
  lt_expect_op(CF_LAYOUT_OP_COMPOSITION, a, t, "(_3,(_2,_4)):(_177,(_13,_2))");
  lt_expect_op(CF_LAYOUT_OP_ZIPPED_DIVIDE, "(9,(4,8)):(59,(13,1))", t,
               "((_3,((2,1),(1,4))),((_3,1),((2,2),(1,1)))):((177,((13,1),(104,2))),((59,531),((26,1),(416,8))))");
}

/* Seed 004's tensor partition: an 8x24 layout by a 4x8 shape tiler. */
Test(layout_algebra, divides_by_a_shape)
{
  lt_expect_op(CF_LAYOUT_OP_ZIPPED_DIVIDE, "(8,24)", "(_4,_8)", "((_4,_8),(2,3)):((_1,8),(_4,64))");
  lt_expect_op(CF_LAYOUT_OP_TILED_DIVIDE, "(8,24)", "(_4,_8)", "((_4,_8),2,3):((_1,8),_4,64)");
  lt_expect_op(CF_LAYOUT_OP_FLAT_DIVIDE, "(8,24)", "(_4,_8)", "(_4,_8,2,3):(_1,8,_4,64)");
  lt_expect_op(CF_LAYOUT_OP_LOGICAL_DIVIDE, "(8,24)", "(_4,_8)", "((_4,2),(_8,3)):((_1,_4),(8,64))");
}

Test(layout_algebra, divide_errors)
{
  lt_expect_op_error(CF_LAYOUT_OP_LOGICAL_DIVIDE, "(8,24)", "<_4,_8,_2>", CF_ERR_INVALID_ARGUMENT,
                     "logical_divide: tiler of rank 3 for a layout of rank 2");
  lt_expect_op_error(CF_LAYOUT_OP_ZIPPED_DIVIDE, "(_4,_6):(_1,_4)", "<(_2,_2):(_1,_1)>", CF_ERR_INVALID_ARGUMENT,
                     "zipped_divide: complement: non-injective layout (stride 1 repeats an earlier index)");
}

/* ---- products ------------------------------------------------------------------------ */

/* 1-D: A = (2,2):(4,1) reproduced by 6:1 and by (4,2):(2,1). */
Test(layout_algebra, logical_product_1d)
{
  lt_expect_op(CF_LAYOUT_OP_LOGICAL_PRODUCT, "(_2,_2):(_4,_1)", "_6:_1", "((_2,_2),(_2,_3)):((_4,_1),(_2,_8))");
  lt_expect_op(CF_LAYOUT_OP_LOGICAL_PRODUCT, "(_2,_2):(_4,_1)", "(_4,_2):(_2,_1)", "((_2,_2),(_4,_2)):((_4,_1),(_8,_2))");
}

/* 2-D: a 2x5 row-major tile over a 3x4 column-major arrangement, by mode with the
 * unintuitive tiler <3:5,4:6>, and with blocked_product and raked_product. */
Test(layout_algebra, products_2d)
{
  const char *a = "(_2,_5):(_5,_1)";
  lt_expect_op(CF_LAYOUT_OP_LOGICAL_PRODUCT, a, "<_3:_5,_4:_6>", "((_2,_3),(_5,_4)):((_5,_10),(_1,_30))");
  lt_expect_op(CF_LAYOUT_OP_BLOCKED_PRODUCT, a, "(_3,_4):(_1,_3)", "((_2,_3),(_5,_4)):((_5,_10),(_1,_30))");
  lt_expect_op(CF_LAYOUT_OP_RAKED_PRODUCT, a, "(_3,_4):(_1,_3)", "((_3,_2),(_4,_5)):((_10,_5),(_30,_1))");
  lt_expect_op(CF_LAYOUT_OP_ZIPPED_PRODUCT, a, "<_3:_5,_4:_6>", "((_2,_5),(_3,_4)):((_5,_1),(_10,_30))");
  lt_expect_op(CF_LAYOUT_OP_TILED_PRODUCT, a, "<_3:_5,_4:_6>", "((_2,_5),_3,_4):((_5,_1),_10,_30)");
  lt_expect_op(CF_LAYOUT_OP_FLAT_PRODUCT, a, "<_3:_5,_4:_6>", "(_2,_5,_3,_4):(_5,_1,_10,_30)");
}

Test(layout_algebra, product_errors)
{
  lt_expect_op_error(CF_LAYOUT_OP_BLOCKED_PRODUCT, "(2,5):(5,1)", "(3,4):(1,3)", CF_ERR_INVALID_ARGUMENT,
                     "blocked_product: complement: dynamic stride 5 in a layout of rank > 1");
  cf_layout a = lt_layout("(_2,_5):(_5,_1)"), t = lt_tiler("<_3,_4>"), r;
  cf_layout_err e;
  cr_assert_eq(cf_layout_blocked_product(&a, &t, &r, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "blocked_product: expected a layout, got the tiler <_3,_4>");
}

/* ---- operations by name -------------------------------------------------------------- */

Test(layout_algebra, operations_by_name)
{
  cf_layout_op op;
  for (int k = 0; k < CF_LAYOUT_OP_COUNT; k++) {
    const char *name = cf_layout_op_name((cf_layout_op)k);
    cr_assert_not_null(name);
    cr_assert(cf_layout_op_from_name(name, &op));
    cr_expect_eq(op, (cf_layout_op)k);
  }
  cr_expect_not(cf_layout_op_from_name("product", &op));
  cr_expect_null(cf_layout_op_name(CF_LAYOUT_OP_COUNT));
  cr_expect(cf_layout_op_takes_tiler(CF_LAYOUT_OP_ZIPPED_DIVIDE));
  cr_expect_not(cf_layout_op_takes_tiler(CF_LAYOUT_OP_RAKED_PRODUCT));
  cf_layout a = lt_layout("4:1"), r;
  cf_layout_err e;
  cr_assert_eq(cf_layout_apply(CF_LAYOUT_OP_COUNT, &a, &a, &r, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "no layout operation 11");
}
