/* tests/layout/test_layout_basic.c: making layouts, their properties, sublayouts,
 * concatenation, grouping and flattening, coordinates (crd2idx, idx2crd, evaluation) and
 * slicing with `_`, with CuTe's documented outputs as the expected strings. */
#include "layout_test_util.h"

static cf_layout from_shape(const char *shape, cf_layout_major major)
{
  cf_int_tuple s = lt_tuple(shape);
  cf_layout l;
  cf_layout_err e;
  cr_assert_eq(cf_layout_from_shape(&s, major, &l, &e), CF_OK, "%s", e.message);
  return l;
}

static cf_layout make(const char *shape, const char *stride)
{
  cf_int_tuple s = lt_tuple(shape), d = lt_tuple(stride);
  cf_layout l;
  cf_layout_err e;
  cr_assert_eq(cf_layout_make(&s, &d, &l, &e), CF_OK, "%s", e.message);
  return l;
}

/* CuTe's 01_layout.md, "Constructing a Layout": the printed layouts. */
Test(layout_basic, make_layout_prints_as_cute)
{
  cf_layout s8 = from_shape("_8", CF_LAYOUT_LEFT), d8 = from_shape("8", CF_LAYOUT_LEFT);
  cr_expect_str_eq(lt_str(&s8), "_8:_1");
  cr_expect_str_eq(lt_str(&d8), "8:_1");
  cf_layout s2xs4 = from_shape("(_2,_4)", CF_LAYOUT_LEFT), s2xd4 = from_shape("(_2,4)", CF_LAYOUT_LEFT);
  cr_expect_str_eq(lt_str(&s2xs4), "(_2,_4):(_1,_2)");
  cr_expect_str_eq(lt_str(&s2xd4), "(_2,4):(_1,_2)");
  cf_layout s2xd4_a = make("(_2,4)", "(_12,_1)");
  cr_expect_str_eq(lt_str(&s2xd4_a), "(_2,4):(_12,_1)");
  cf_layout row = from_shape("(_2,4)", CF_LAYOUT_RIGHT);
  cr_expect_str_eq(lt_str(&row), "(_2,4):(4,_1)");
  cf_layout s2xh4 = make("(2,(2,2))", "(4,(2,1))");
  cr_expect_str_eq(lt_str(&s2xh4), "(2,(2,2)):(4,(2,1))");
  cf_layout s2xh4_col = from_shape("(2,(2,2))", CF_LAYOUT_LEFT);
  cr_expect_str_eq(lt_str(&s2xh4_col), "(2,(2,2)):(_1,(2,4))");
}

Test(layout_basic, a_static_one_gets_a_static_zero_stride)
{
  cf_layout l = from_shape("(_1,_4,1)", CF_LAYOUT_LEFT);
  cr_expect_str_eq(lt_str(&l), "(_1,_4,1):(_0,_1,_4)");
}

Test(layout_basic, parse_of_a_bare_shape_is_column_major)
{
  cf_layout l = lt_layout("(12,(4,8))");
  cr_expect_str_eq(lt_str(&l), "(12,(4,8)):(_1,(12,48))");
}

Test(layout_basic, make_layout_needs_congruent_shape_and_stride)
{
  cf_int_tuple s = lt_tuple("(4,8)"), d = lt_tuple("(1,(4,2))");
  cf_layout l;
  cf_layout_err e;
  cr_assert_eq(cf_layout_make(&s, &d, &l, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "make_layout: shape (4,8) and stride (1,(4,2)) are not congruent");
  cr_assert_eq(cf_layout_parse("(4,8):(1)", &l, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "shape and stride are not congruent at offsets 0 and 6 in \"(4,8):(1)\"");
}

Test(layout_basic, shapes_must_be_positive)
{
  cf_layout l;
  cf_layout_err e;
  cr_assert_eq(cf_layout_parse("(4,0):(1,4)", &l, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "shape 0 at offset 3 in \"(4,0):(1,4)\" is not positive");
  cf_int_tuple s = lt_tuple("(4,-2)"), d = lt_tuple("(1,4)");
  cr_assert_eq(cf_layout_make(&s, &d, &l, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "shape -2 is not positive");
}

Test(layout_basic, underscore_is_not_a_shape)
{
  cf_layout l;
  cf_layout_err e;
  cr_assert_eq(cf_layout_parse("(_,4):(1,2)", &l, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "expected an integer ('_' alone is only allowed in coordinates) at "
                              "offset 1 in \"(_,4):(1,2)\" (found '_')");
}

Test(layout_basic, a_tiler_is_not_a_layout)
{
  cf_layout l, t = lt_tiler("<3:4,8:2>"), r;
  cf_layout_err e;
  cr_assert_eq(cf_layout_parse("<3:4,8:2>", &l, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "expected a layout, found a tiler at offset 0 in \"<3:4,8:2>\"");
  cr_assert_eq(cf_layout_coalesce(&t, &r, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "coalesce: expected a layout, got the tiler <3:4,8:2>");
}

Test(layout_basic, tilers_print_with_angle_brackets)
{
  cf_layout t = lt_tiler("<3:4, 8:2>");
  cr_expect_str_eq(lt_str(&t), "<3:4,8:2>");
  cr_expect(cf_layout_is_tiler(&t));
  cf_layout s = lt_tiler("(_4,_8)");
  cr_expect_str_eq(lt_str(&s), "<_4,_8>", "a shape used as a tiler is by-mode");
  cf_layout nested = lt_tiler("<_3:_3,<_2,(_2,_4):(_1,_8)>>");
  cr_expect_str_eq(lt_str(&nested), "<_3:_3,<_2,(_2,_4):(_1,_8)>>");
  cf_layout plain = lt_tiler("(2,4):(1,8)");
  cr_expect_not(cf_layout_is_tiler(&plain), "a layout is a tiler of one mode");
  cf_layout elems[2] = {lt_layout("_3:_4"), lt_layout("_8:_2")}, made;
  cf_layout_err e;
  cr_assert_eq(cf_layout_make_tiler(elems, 2, &made, &e), CF_OK);
  cr_expect_str_eq(lt_str(&made), "<_3:_4,_8:_2>");
  cf_int_tuple shape = lt_tuple("(_4,(2,_3))");
  cr_assert_eq(cf_layout_tiler_from_shape(&shape, &made, &e), CF_OK);
  cr_expect_str_eq(lt_str(&made), "<_4,<2,_3>>");
}

Test(layout_basic, size_cosize_rank_depth)
{
  cf_layout a = lt_layout("(_4,(_3,_6)):(_1,(_4,_12))");
  cr_expect_str_eq(lt_int_str(cf_layout_size(&a)), "_72");
  cr_expect_str_eq(lt_int_str(cf_layout_cosize(&a)), "_72");
  cr_expect_eq(cf_layout_rank(&a), 2);
  cr_expect_eq(cf_layout_depth(&a), 2);
  cf_layout d = lt_layout("(8,_4):(_1,_16)");
  cr_expect_str_eq(lt_int_str(cf_layout_size(&d)), "32");
  cr_expect_str_eq(lt_int_str(cf_layout_cosize(&d)), "56");
  cf_layout i = lt_layout("8:2");
  cr_expect_eq(cf_layout_rank(&i), 1);
  cr_expect_eq(cf_layout_depth(&i), 0);
  cf_layout neg = lt_layout("(4,2):(-1,4)");
  cr_expect_str_eq(lt_int_str(cf_layout_cosize(&neg)), "8", "cosize counts |stride|");
}

Test(layout_basic, shape_and_stride_access)
{
  cf_layout a = lt_layout("(_4,(3,_6)):(_1,(4,_12))");
  cf_int_tuple s, d;
  cf_layout_shape(&a, &s);
  cf_layout_stride(&a, &d);
  cr_expect_str_eq(lt_tstr(&s), "(_4,(3,_6))");
  cr_expect_str_eq(lt_tstr(&d), "(_1,(4,_12))");
  cr_expect(cf_tuple_equal(&s, &(cf_int_tuple){lt_tuple("(_4,(3,_6))").tree}));
  cr_expect_not(cf_layout_is_static(&a));
  cf_layout st = lt_layout("(_4,_8):(_1,_4)");
  cr_expect(cf_layout_is_static(&st));
}

/* Seed 004, "Sublayouts": layout<I...>(a). */
Test(layout_basic, sublayouts_by_index_path)
{
  cf_layout a = from_shape("(_4,(_3,_6))", CF_LAYOUT_LEFT), r;
  cf_layout_err e;
  cr_expect_str_eq(lt_str(&a), "(_4,(_3,_6)):(_1,(_4,_12))");
  static const struct {
    int path[2], n;
    const char *want;
  } rows[] = {{{0}, 1, "_4:_1"}, {{1}, 1, "(_3,_6):(_4,_12)"}, {{1, 0}, 2, "_3:_4"}, {{1, 1}, 2, "_6:_12"}};
  for (size_t k = 0; k < 4; k++) {
    cr_assert_eq(cf_layout_get(&a, rows[k].path, rows[k].n, &r, &e), CF_OK);
    cr_expect_str_eq(lt_str(&r), rows[k].want);
  }
  int bad[] = {2};
  cr_assert_eq(cf_layout_get(&a, bad, 1, &r, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "layout<>: index 2 out of range for rank 2");
}

/* Seed 004: select<1,3>, select<0,1,3>, select<2>, take<1,3>, take<1,4>; take<1,1> is an
 * error (empty layouts are not allowed). */
Test(layout_basic, select_and_take)
{
  cf_layout a = from_shape("(_2,_3,_5,_7)", CF_LAYOUT_LEFT), r;
  cf_layout_err e;
  cr_expect_str_eq(lt_str(&a), "(_2,_3,_5,_7):(_1,_2,_6,_30)");
  int i13[] = {1, 3}, i013[] = {0, 1, 3}, i2[] = {2};
  cr_assert_eq(cf_layout_select(&a, i13, 2, &r, &e), CF_OK);
  cr_expect_str_eq(lt_str(&r), "(_3,_7):(_2,_30)");
  cr_assert_eq(cf_layout_select(&a, i013, 3, &r, &e), CF_OK);
  cr_expect_str_eq(lt_str(&r), "(_2,_3,_7):(_1,_2,_30)");
  cr_assert_eq(cf_layout_select(&a, i2, 1, &r, &e), CF_OK);
  cr_expect_str_eq(lt_str(&r), "(_5):(_6)");
  cr_assert_eq(cf_layout_take(&a, 1, 3, &r, &e), CF_OK);
  cr_expect_str_eq(lt_str(&r), "(_3,_5):(_2,_6)");
  cr_assert_eq(cf_layout_take(&a, 1, 4, &r, &e), CF_OK);
  cr_expect_str_eq(lt_str(&r), "(_3,_5,_7):(_2,_6,_30)");
  cr_assert_eq(cf_layout_take(&a, 1, 1, &r, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "take<1,1>: bad range for a layout of rank 4 (empty layouts are not allowed)");
  cr_assert_eq(cf_layout_take(&a, 2, 5, &r, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "take<2,5>: bad range for a layout of rank 4");
  int i4[] = {4};
  cr_assert_eq(cf_layout_select(&a, i4, 1, &r, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "select: mode 4 out of range for rank 4");
}

/* Seed 004, "Concatenation". */
Test(layout_basic, concatenation_makes_a_layout_of_layouts)
{
  cf_layout a = lt_layout("_3:_1"), b = lt_layout("_4:_3"), r;
  cf_layout_err e;
  cf_layout ab[2] = {a, b}, ba[2] = {b, a};
  cf_layout row, col, q, aa, aaa, d;
  cr_assert_eq(cf_layout_concat(ab, 2, &row, &e), CF_OK);
  cr_expect_str_eq(lt_str(&row), "(_3,_4):(_1,_3)");
  cr_assert_eq(cf_layout_concat(ba, 2, &col, &e), CF_OK);
  cr_expect_str_eq(lt_str(&col), "(_4,_3):(_3,_1)");
  cf_layout rc[2] = {row, col};
  cr_assert_eq(cf_layout_concat(rc, 2, &q, &e), CF_OK);
  cr_expect_str_eq(lt_str(&q), "((_3,_4),(_4,_3)):((_1,_3),(_3,_1))");
  cr_assert_eq(cf_layout_concat(&a, 1, &aa, &e), CF_OK);
  cr_expect_str_eq(lt_str(&aa), "(_3):(_1)");
  cr_assert_eq(cf_layout_concat(&aa, 1, &aaa, &e), CF_OK);
  cr_expect_str_eq(lt_str(&aaa), "((_3)):((_1))");
  cf_layout three[3] = {a, aa, a};
  cr_assert_eq(cf_layout_concat(three, 3, &d, &e), CF_OK);
  cr_expect_str_eq(lt_str(&d), "(_3,(_3),_3):(_1,(_1),_1)");
  (void)r;
}

/* Seed 004, "Grouping and Flattening". */
Test(layout_basic, group_and_flatten)
{
  cf_layout a = from_shape("(_2,_3,_5,_7)", CF_LAYOUT_LEFT), b, c, f, g;
  cf_layout_err e;
  cr_assert_eq(cf_layout_group(&a, 0, 2, &b, &e), CF_OK);
  cr_expect_str_eq(lt_str(&b), "((_2,_3),_5,_7):((_1,_2),_6,_30)");
  cr_assert_eq(cf_layout_group(&b, 1, 3, &c, &e), CF_OK);
  cr_expect_str_eq(lt_str(&c), "((_2,_3),(_5,_7)):((_1,_2),(_6,_30))");
  cr_assert_eq(cf_layout_flatten(&b, &f, &e), CF_OK);
  cr_expect_str_eq(lt_str(&f), "(_2,_3,_5,_7):(_1,_2,_6,_30)");
  cr_assert_eq(cf_layout_flatten(&c, &f, &e), CF_OK);
  cr_expect_str_eq(lt_str(&f), "(_2,_3,_5,_7):(_1,_2,_6,_30)");
  cr_assert_eq(cf_layout_group(&a, 2, 2, &g, &e), CF_OK, "an empty group changes nothing");
  cr_expect_str_eq(lt_str(&g), "(_2,_3,_5,_7):(_1,_2,_6,_30)");
  cr_assert_eq(cf_layout_group(&a, 3, 1, &g, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "group<3,1>: bad range for a layout of rank 4");
  cf_layout i = lt_layout("_3:_1");
  cr_assert_eq(cf_layout_flatten(&i, &f, &e), CF_OK);
  cr_expect_str_eq(lt_str(&f), "_3:_1", "flatten keeps an integral layout integral");
}

/* CuTe's print2D and print1D of 01_layout.md. */
Test(layout_basic, evaluation_with_1d_and_2d_coordinates)
{
  static const struct {
    const char *layout, *table2d, *table1d;
  } rows[] = {
      {"(_2,_4):(_1,_2)", "0 2 4 6 1 3 5 7 ", "0 1 2 3 4 5 6 7 "},
      {"(_2,4):(_12,_1)", "0 1 2 3 12 13 14 15 ", "0 12 1 13 2 14 3 15 "},
      {"(2,(2,2)):(_1,(2,4))", "0 2 4 6 1 3 5 7 ", "0 1 2 3 4 5 6 7 "},
      {"(2,(2,2)):(4,(2,1))", "0 2 1 3 4 6 5 7 ", "0 4 2 6 1 5 3 7 "},
  };
  for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
    cf_layout l = lt_layout(rows[k].layout);
    char t2[128] = "", t1[128] = "";
    for (int m = 0; m < 2; m++)
      for (int n = 0; n < 4; n++) {
        char c[16];
        snprintf(c, sizeof c, "(%d,%d)", m, n);
        cf_int_tuple crd = lt_tuple(c);
        cf_tuple_int v;
        cf_layout_err e;
        cr_assert_eq(cf_layout_crd2idx(&l, &crd, &v, &e), CF_OK, "%s", e.message);
        snprintf(t2 + strlen(t2), sizeof t2 - strlen(t2), "%lld ", (long long)v.value);
      }
    for (int i = 0; i < 8; i++)
      snprintf(t1 + strlen(t1), sizeof t1 - strlen(t1), "%lld ", (long long)lt_eval(&l, i));
    cr_expect_str_eq(t2, rows[k].table2d, "print2D %s", rows[k].layout);
    cr_expect_str_eq(t1, rows[k].table1d, "print1D %s", rows[k].layout);
  }
}

Test(layout_basic, crd2idx_with_natural_and_mixed_coordinates)
{
  cf_layout l = lt_layout("(3,(2,3)):(3,(12,1))");
  cf_layout_err e;
  static const struct {
    const char *coord;
    int64_t want;
  } rows[] = {{"16", 17}, {"(1,5)", 17}, {"(1,(1,2))", 17}, {"(2,(0,1))", 7}, {"(_,4)", 2}};
  for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
    cf_int_tuple c = lt_tuple(rows[k].coord);
    cf_tuple_int v;
    cr_assert_eq(cf_layout_crd2idx(&l, &c, &v, &e), CF_OK, "%s", e.message);
    cr_expect_eq(v.value, rows[k].want, "crd2idx(%s)", rows[k].coord);
  }
  cf_int_tuple bad = lt_tuple("((1,2),1)");
  cf_tuple_int v;
  cr_assert_eq(cf_layout_crd2idx(&l, &bad, &v, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "crd2idx: coordinate of rank 2 for a mode of rank 1");
}

Test(layout_basic, crd2idx_keeps_cute_staticness)
{
  cf_layout l = lt_layout("(_4,(_2,_3)):(_1,(_4,_8))");
  cf_int_tuple c = lt_tuple("(_1,(_1,_2))"), z = lt_tuple("_0"), d = lt_tuple("(1,(_1,_2))");
  cf_tuple_int v;
  cf_layout_err e;
  cr_assert_eq(cf_layout_crd2idx(&l, &c, &v, &e), CF_OK);
  cr_expect_str_eq(lt_int_str(v), "_21");
  cr_assert_eq(cf_layout_crd2idx(&l, &z, &v, &e), CF_OK);
  cr_expect_str_eq(lt_int_str(v), "_0");
  cr_assert_eq(cf_layout_crd2idx(&l, &d, &v, &e), CF_OK);
  cr_expect_str_eq(lt_int_str(v), "21");
}

Test(layout_basic, idx2crd_gives_the_natural_coordinate_of_a_compact_layout)
{
  cf_layout l = lt_layout("(2,(2,2)):(4,(2,1))");
  cf_layout_err e;
  static const char *want[8] = {"(0,(0,0))", "(0,(0,1))", "(0,(1,0))", "(0,(1,1))",
                                "(1,(0,0))", "(1,(0,1))", "(1,(1,0))", "(1,(1,1))"};
  for (int i = 0; i < 8; i++) {
    cf_int_tuple c;
    cr_assert_eq(cf_layout_idx2crd(&l, i, &c, &e), CF_OK);
    cr_expect_str_eq(lt_tstr(&c), want[i]);
    cf_tuple_int back;
    cr_assert_eq(cf_layout_crd2idx(&l, &c, &back, &e), CF_OK);
    cr_expect_eq(back.value, i);
  }
  cf_layout z = lt_layout("(4,2):(1,0)");
  cf_int_tuple c;
  cr_assert_eq(cf_layout_idx2crd(&z, 3, &c, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "idx2crd: stride 0 in a mode of size 2");
}

/* Seed 000 and 001, "Slicing a Tensor": the layouts of the slices and the offsets. */
Test(layout_basic, slicing_with_underscore)
{
  cf_layout a = lt_layout("((_3,2),(2,_5,_2)):((4,1),(_2,13,100))");
  static const struct {
    const char *coord, *want;
    int64_t offset;
  } rows[] = {
      {"(2,_)", "((2,_5,_2)):((_2,13,100))", 8},
      {"(_,5)", "((_3,2)):((4,1))", 2 + 13 * 2},
      {"((_,_),5)", "(_3,2):(4,1)", 2 + 13 * 2},
      {"((_,1),(0,_,1))", "(_3,_5):(4,13)", 1 + 100},
      {"((2,_),(_,3,_))", "(2,2,_2):(1,_2,100)", 8 + 39},
      {"_", "((_3,2),(2,_5,_2)):((4,1),(_2,13,100))", 0},
      {"(1,2)", "():()", 4 + 13},
  };
  for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
    cf_int_tuple c = lt_tuple(rows[k].coord);
    cf_layout r;
    int64_t off = -1;
    cf_layout_err e;
    cr_assert_eq(cf_layout_slice(&a, &c, &r, &off, &e), CF_OK, "%s: %s", rows[k].coord, e.message);
    cr_expect_str_eq(lt_str(&r), rows[k].want, "A%s", rows[k].coord);
    cr_expect_eq(off, rows[k].offset, "offset of A%s", rows[k].coord);
  }
}

Test(layout_basic, slicing_with_a_mismatched_coordinate_is_an_error)
{
  cf_layout a = lt_layout("((_3,2),(2,_5,_2)):((4,1),(_2,13,100))"), r;
  cf_int_tuple c = lt_tuple("((_,1,1),_)");
  cf_layout_err e;
  cr_assert_eq(cf_layout_slice(&a, &c, &r, NULL, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "slice: coordinate of rank 3 for a mode of rank 2");
}

Test(layout_basic, make_layout_like_orders_strides_like_the_original)
{
  static const struct {
    const char *in, *want;
  } rows[] = {
      {"(_4,_8):(_32,_2)", "(_4,_8):(_8,_1)"},
      {"(_2,_2,_2,_2):(_0,_2,_4,_1)", "(_2,_2,_2,_2):(_0,_2,_4,_1)"},
      {"(2,3,4,5):(_0,42,_1,_0)", "(2,3,4,5):(_0,4,_1,_0)"},
  };
  for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
    cf_layout in = lt_layout(rows[k].in), r;
    cf_layout_err e;
    cr_assert_eq(cf_layout_make_like(&in, &r, &e), CF_OK);
    cr_expect_str_eq(lt_str(&r), rows[k].want, "make_layout_like(%s)", rows[k].in);
  }
}

Test(layout_basic, results_too_large_fail_cleanly)
{
  cf_layout a = lt_layout("_2:_1"), r = a;
  cf_layout_err e = {CF_OK, ""};
  cf_status s = CF_OK;
  for (int k = 0; k < 200 && s == CF_OK; k++)
    s = cf_layout_concat(&r, 1, &r, &e);
  cr_assert_eq(s, CF_ERR_UNSUPPORTED);
  cr_expect_str_eq(e.message, "tuples nested deeper than 32 levels");
  cf_layout many = lt_layout("_1:_0"); /* size 1, so that only the node count grows */
  cf_layout pair[2];
  s = CF_OK;
  for (int k = 0; k < 8 && s == CF_OK; k++) {
    pair[0] = pair[1] = many;
    s = cf_layout_concat(pair, 2, &many, &e);
  }
  cr_assert_eq(s, CF_ERR_UNSUPPORTED);
  cr_expect_str_eq(e.message, "result too large: more than 128 nodes");
  cf_layout huge;
  cr_assert_eq(cf_layout_parse("(4294967296,4294967296):(1,4294967296)", &huge, &e),
               CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "integer overflow in 4294967296 * 4294967296");
}
