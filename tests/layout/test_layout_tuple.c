/* tests/layout/test_layout_tuple.c: IntTuples: static and dynamic integers, the notation
 * (printing and parsing, with its error messages), rank, depth, get, size, congruence,
 * compatibility (CuTe's list of examples) and colexicographic coordinates. */
#include "layout_test_util.h"

Test(layout_tuple, static_and_dynamic_integers_print_as_in_cute)
{
  cf_int_tuple s = cf_tuple_from_int(cf_tuple_static(4)), d = cf_tuple_from_int(cf_tuple_dynamic(4));
  cr_expect_str_eq(lt_tstr(&s), "_4");
  cr_expect_str_eq(lt_tstr(&d), "4");
  cf_int_tuple neg = cf_tuple_from_int(cf_tuple_static(-1));
  cr_expect_str_eq(lt_tstr(&neg), "_-1");
  cf_int_tuple u = cf_tuple_underscore();
  cr_expect_str_eq(lt_tstr(&u), "_");
}

Test(layout_tuple, parse_and_print_round_trip)
{
  const char *texts[] = {"_4", "4", "(2,_3)", "(42,(_1,3),_17)", "()", "(_,(1,_))", "-7", "(_-2,0)"};
  for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++) {
    cf_int_tuple t = lt_tuple(texts[k]);
    cr_expect_str_eq(lt_tstr(&t), texts[k]);
  }
  cf_int_tuple spaced = lt_tuple(" ( 2 , ( _3 , 4 ) ) ");
  cr_expect_str_eq(lt_tstr(&spaced), "(2,(_3,4))");
}

Test(layout_tuple, tuples_from_elements)
{
  cf_int_tuple parts[3] = {cf_tuple_from_int(cf_tuple_dynamic(2)), lt_tuple("(_1,3)"),
                           cf_tuple_from_int(cf_tuple_static(17))};
  cf_int_tuple t, empty;
  cf_layout_err e;
  cr_assert_eq(cf_tuple_make(parts, 3, &t, &e), CF_OK);
  cr_expect_str_eq(lt_tstr(&t), "(2,(_1,3),_17)");
  cr_assert_eq(cf_tuple_make(NULL, 0, &empty, &e), CF_OK);
  cr_expect_str_eq(lt_tstr(&empty), "()");
}

Test(layout_tuple, rank_depth_and_size)
{
  cf_int_tuple i = lt_tuple("6"), one = lt_tuple("(2)"), two = lt_tuple("(4,3)"),
               three = lt_tuple("(3,(6,2),8)");
  cr_expect_eq(cf_tuple_rank(&i), 1);
  cr_expect_eq(cf_tuple_rank(&one), 1);
  cr_expect_eq(cf_tuple_rank(&three), 3);
  cr_expect_eq(cf_tuple_depth(&i), 0);
  cr_expect_eq(cf_tuple_depth(&two), 1);
  cr_expect_eq(cf_tuple_depth(&three), 2);
  cf_tuple_int s;
  cf_layout_err e;
  cr_assert_eq(cf_tuple_size(&three, &s, &e), CF_OK);
  cr_expect_str_eq(lt_int_str(s), "288");
  cf_int_tuple st = lt_tuple("(_3,(_6,_2))");
  cr_assert_eq(cf_tuple_size(&st, &s, &e), CF_OK);
  cr_expect_str_eq(lt_int_str(s), "_36");
  cf_int_tuple empty = lt_tuple("()");
  cr_assert_eq(cf_tuple_size(&empty, &s, &e), CF_OK);
  cr_expect_str_eq(lt_int_str(s), "_1");
}

Test(layout_tuple, get_by_index_path)
{
  cf_int_tuple t = lt_tuple("(42,(_1,3),_17)"), r;
  cf_layout_err e;
  int p1[] = {1}, p11[] = {1, 1}, p0[] = {0, 0, 0};
  cr_assert_eq(cf_tuple_get(&t, p1, 1, &r, &e), CF_OK);
  cr_expect_str_eq(lt_tstr(&r), "(_1,3)");
  cr_assert_eq(cf_tuple_get(&t, p11, 2, &r, &e), CF_OK);
  cr_expect_str_eq(lt_tstr(&r), "3");
  cr_assert_eq(cf_tuple_get(&t, p0, 3, &r, &e), CF_OK, "get<0> of an integer is itself");
  cr_expect_str_eq(lt_tstr(&r), "42");
  cr_expect(cf_tuple_is_int(&r));
  cr_expect_eq(cf_tuple_value(&r).value, 42);
}

Test(layout_tuple, get_out_of_range_is_an_error)
{
  cf_int_tuple t = lt_tuple("(42,(_1,3),_17)"), r;
  cf_layout_err e;
  int p[] = {1, 2};
  cr_assert_eq(cf_tuple_get(&t, p, 2, &r, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "get: index 2 out of range for rank 2");
}

/* CuTe's documentation of compatibility, example by example. */
Test(layout_tuple, compatibility_as_in_cute)
{
  static const struct {
    const char *a, *b;
    bool yes;
  } rows[] = {
      {"24", "32", false},
      {"24", "(4,6)", true},
      {"(4,6)", "((2,2),6)", true},
      {"((2,2),6)", "((2,2),(3,2))", true},
      {"24", "((2,2),(3,2))", true},
      {"24", "((2,3),4)", true},
      {"((2,3),4)", "((2,2),(3,2))", false},
      {"((2,2),(3,2))", "((2,3),4)", false},
      {"24", "(24)", true},
      {"(24)", "24", false},
      {"(24)", "(4,6)", false},
  };
  for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
    cf_int_tuple a = lt_tuple(rows[k].a), b = lt_tuple(rows[k].b);
    cr_expect_eq(cf_tuple_compatible(&a, &b), rows[k].yes, "compatible(%s, %s)", rows[k].a,
                 rows[k].b);
  }
}

Test(layout_tuple, congruence)
{
  cf_int_tuple a = lt_tuple("(2,(3,4))"), b = lt_tuple("(_1,(_5,9))"), c = lt_tuple("(2,3,4)");
  cr_expect(cf_tuple_congruent(&a, &b));
  cr_expect_not(cf_tuple_congruent(&a, &c));
  cr_expect(cf_tuple_equal(&a, &a));
  cr_expect_not(cf_tuple_equal(&a, &b));
  cf_int_tuple s4 = lt_tuple("_4"), d4 = lt_tuple("4");
  cr_expect_not(cf_tuple_equal(&s4, &d4), "staticness is part of equality");
}

/* CuTe's table for the shape (3,(2,3)): 1-D, 2-D and natural coordinates. */
Test(layout_tuple, colexicographic_coordinates_of_3x2x3)
{
  static const char *natural[18] = {
      "(0,(0,0))", "(1,(0,0))", "(2,(0,0))", "(0,(1,0))", "(1,(1,0))", "(2,(1,0))",
      "(0,(0,1))", "(1,(0,1))", "(2,(0,1))", "(0,(1,1))", "(1,(1,1))", "(2,(1,1))",
      "(0,(0,2))", "(1,(0,2))", "(2,(0,2))", "(0,(1,2))", "(1,(1,2))", "(2,(1,2))"};
  cf_int_tuple shape = lt_tuple("(3,(2,3))");
  cf_layout_err e;
  for (int i = 0; i < 18; i++) {
    cf_int_tuple c;
    cr_assert_eq(cf_tuple_idx2crd(cf_tuple_dynamic(i), &shape, &c, &e), CF_OK);
    cr_expect_str_eq(lt_tstr(&c), natural[i]);
    cf_tuple_int back;
    char two_d[16];
    snprintf(two_d, sizeof two_d, "(%d,%d)", i % 3, i / 3);
    cf_int_tuple c2 = lt_tuple(two_d);
    cr_assert_eq(cf_tuple_crd2idx(&c2, &shape, &back, &e), CF_OK);
    cr_expect_eq(back.value, i, "2-D %s", two_d);
    cr_assert_eq(cf_tuple_crd2idx(&c, &shape, &back, &e), CF_OK);
    cr_expect_eq(back.value, i, "natural %s", natural[i]);
  }
}

Test(layout_tuple, crd2idx_rank_mismatch_is_an_error)
{
  cf_int_tuple shape = lt_tuple("(3,(2,3))"), c = lt_tuple("(1,2,3)");
  cf_tuple_int v;
  cf_layout_err e;
  cr_assert_eq(cf_tuple_crd2idx(&c, &shape, &v, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "crd2idx: coordinate of rank 3 for a shape of rank 2");
}

/* Parse errors name the offset and what was expected. */
Test(layout_tuple, parse_errors)
{
  static const struct {
    const char *text, *message;
  } rows[] = {
      {"(4,8", "expected ',' or ')' at offset 4 in \"(4,8\" (found end of text)"},
      {"(4,,8)", "expected an integer or '(' at offset 3 in \"(4,,8)\" (found ',')"},
      {"4)", "expected end of text at offset 1 in \"4)\" (found ')')"},
      {"_x", "expected end of text at offset 1 in \"_x\" (found 'x')"},
      {"", "expected an integer or '(' at offset 0 in \"\" (found end of text)"},
      {"99999999999999999999", "integer at offset 0 in \"99999999999999999999\" is too large"},
      {"-", "expected a digit at offset 1 in \"-\" (found end of text)"},
  };
  for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
    cf_int_tuple t;
    cf_layout_err e;
    cr_assert_eq(cf_tuple_parse(rows[k].text, &t, &e), CF_ERR_INVALID_ARGUMENT, "%s", rows[k].text);
    cr_expect_str_eq(e.message, rows[k].message);
  }
}

Test(layout_tuple, errors_without_an_error_struct_do_not_crash)
{
  cf_int_tuple t = lt_tuple("7");
  cr_expect_eq(cf_tuple_parse("(", &t, NULL), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(lt_tstr(&t), "7", "the output is left unchanged on failure");
  cr_expect_eq(cf_tuple_parse(NULL, &t, NULL), CF_ERR_INVALID_ARGUMENT);
}
