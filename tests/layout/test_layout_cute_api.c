/* tests/layout/test_layout_cute_api.c: the parts of CuTe's API added for issue 15, on the
 * examples of CuTe's documents (01_layout.md, 02_layout_algebra.md) and of CuTe's own
 * uses, then on random layouts through their laws: filter (same image, no stride-0 or
 * size-1 mode left), idx2crd and crd2idx (inverse of each other), `_` in a tiler (the
 * identity on its mode), and CuTe's printed tuple form of a tiler (the same tiler as the
 * angle-bracket form). */
#include "layout_test_util.h"

static cf_layout L(const char *text) { return lt_layout(text); }

static void expect_layout(cf_status s, const cf_layout *r, const cf_layout_err *e, const char *want)
{
  cr_assert_eq(s, CF_OK, "%s: %s", want, e->message);
  cr_expect_str_eq(lt_str(r), want);
}

static void expect_error(cf_status s, const cf_layout_err *e, const char *want)
{
  cr_assert_eq(s, CF_ERR_INVALID_ARGUMENT, "expected the error %s", want);
  cr_expect_str_eq(e->message, want);
}

/* ---- append, prepend, replace (01_layout.md, "Concatenation") ----------------------- */

Test(layout_api, append_prepend_replace_as_in_cute_docs)
{
  cf_layout a = L("_3:_1"), b = L("_4:_3"), ab, ba, c, d, r;
  cf_layout_err e;
  expect_layout(cf_layout_append(&a, &b, &ab, &e), &ab, &e, "(_3,_4):(_1,_3)");
  expect_layout(cf_layout_prepend(&a, &b, &ba, &e), &ba, &e, "(_4,_3):(_3,_1)");
  expect_layout(cf_layout_append(&ab, &ab, &c, &e), &c, &e, "(_3,_4,(_3,_4)):(_1,_3,(_1,_3))");
  expect_layout(cf_layout_replace(&c, 2, &b, &d, &e), &d, &e, "(_3,_4,_4):(_1,_3,_3)");
  /* CuTe's default x is _1:_0; replace<0> of an integral layout is x */
  expect_layout(cf_layout_append(&a, NULL, &r, &e), &r, &e, "(_3,_1):(_1,_0)");
  expect_layout(cf_layout_prepend(&ab, NULL, &r, &e), &r, &e, "(_1,_3,_4):(_0,_1,_3)");
  expect_layout(cf_layout_replace(&a, 0, &b, &r, &e), &r, &e, "_4:_3");
}

Test(layout_api, append_prepend_replace_errors)
{
  cf_layout c = L("(_3,_4,_4):(_1,_3,_3)"), t = lt_tiler("<_2,_2>"), r = L("1:0");
  cf_layout_err e;
  expect_error(cf_layout_replace(&c, 3, &c, &r, &e), &e, "replace<3>: mode out of range for rank 3");
  expect_error(cf_layout_replace(&c, -1, &c, &r, &e), &e, "replace<-1>: mode out of range for rank 3");
  expect_error(cf_layout_replace(&c, 0, NULL, &r, &e), &e, "replace<0>: no layout to put in");
  expect_error(cf_layout_append(&c, &t, &r, &e), &e, "append: expected a layout, got the tiler <_2,_2>");
  expect_error(cf_layout_prepend(&t, NULL, &r, &e), &e,
               "prepend: expected a layout, got the tiler <_2,_2>");
  cr_expect_str_eq(lt_str(&r), "1:0", "a failed call leaves its output alone");
}

/* ---- filter -------------------------------------------------------------------------- */

Test(layout_api, filter)
{
  static const char *const cases[][2] = {
      {"(_4,(_2,_1),_3):(_1,(_0,_7),_4)", "_12:_1"}, /* stride-0 and size-1 modes go */
      {"(_2,_3):(_0,_0)", "_1:_0"},                  /* nothing left: _1:_0, as in CuTe */
      {"(4,_2):(0,_1)", "(4,_2):(0,_1)"},            /* a dynamic 0 is not known to be 0 */
      {"((_2,_2),_4):((_1,_0),_2)", "_8:_1"},       /* 2:1 and 4:2 then merge */
      {"((_2,_2),_4):((_1,_0),_4)", "(_2,_4):(_1,_4)"},
      {"(_8,_1):(_1,_8)", "_8:_1"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    cf_layout a = L(cases[k][0]), r;
    cf_layout_err e;
    expect_layout(cf_layout_filter(&a, &r, &e), &r, &e, cases[k][1]);
  }
  cf_layout a = L("((_2,_1),(_3,_2)):((_1,_0),(_0,_2))"), r;
  cf_int_tuple p = lt_tuple("(_1,_1)");
  cf_layout_err e;
  expect_layout(cf_layout_filter_by(&a, &p, &r, &e), &r, &e, "(_2,_2):(_1,_2)");
  p = lt_tuple("(_1,_1,_1)");
  expect_error(cf_layout_filter_by(&a, &p, &r, &e), &e,
               "filter: profile of rank 3 for a mode of rank 2");
}

/* ---- idx2crd with a tuple index (01_layout.md, "Coordinate Mapping") ---------------- */

Test(layout_api, idx2crd_as_in_cute_docs)
{
  static const char *const cases[][2] = {
      {"16", "(1,(1,2))"},       {"_16", "(_1,(_1,_2))"},         {"(1,5)", "(1,(1,2))"},
      {"(_1,5)", "(_1,(1,2))"}, {"(1,(1,2))", "(1,(1,2))"}, {"(_1,(1,_2))", "(_1,(1,_2))"},
  };
  cf_int_tuple shape = lt_tuple("(_3,(_2,_3))"), r;
  cf_layout_err e;
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    cf_int_tuple idx = lt_tuple(cases[k][0]);
    cr_assert_eq(cf_tuple_idx2crd_tuple(&idx, &shape, &r, &e), CF_OK, "%s", e.message);
    cr_expect_str_eq(lt_tstr(&r), cases[k][1], "idx2crd(%s, (_3,(_2,_3)))", cases[k][0]);
  }
  /* through a layout's strides, mode by mode (CuTe's idx2crd(idx, shape, stride)) */
  cf_layout l = L("(_3,(_2,_3)):(_1,(_3,_6))");
  cf_int_tuple idx = lt_tuple("(1,15)");
  cr_assert_eq(cf_layout_idx2crd_tuple(&l, &idx, &r, &e), CF_OK, "%s", e.message);
  cr_expect_str_eq(lt_tstr(&r), "(1,(1,2))");
  idx = lt_tuple("(1,2,3)");
  cr_expect_eq(cf_tuple_idx2crd_tuple(&idx, &shape, &r, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "idx2crd: index of rank 3 for a shape of rank 2");
  idx = lt_tuple("(1,_)");
  cr_expect_eq(cf_layout_idx2crd_tuple(&l, &idx, &r, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "idx2crd: '_' is not an index");
}

/* ---- `_` in tilers, and tilers written as CuTe prints them -------------------------- */

static void expect_op(cf_layout_op op, const char *a, const char *tiler, const char *want)
{
  cf_layout la = L(a), t = lt_tiler(tiler), r;
  cf_layout_err e;
  cr_assert_eq(cf_layout_apply(op, &la, &t, &r, &e), CF_OK, "%s(%s, %s): %s",
               cf_layout_op_name(op), a, tiler, e.message);
  cr_expect_str_eq(lt_str(&r), want, "%s(%s, %s)", cf_layout_op_name(op), a, tiler);
}

Test(layout_api, underscore_in_tilers)
{
  /* logical_divide(A, make_tile(_, 4:1)): only mode 1 is divided */
  expect_op(CF_LAYOUT_OP_LOGICAL_DIVIDE, "(_4,_8):(_1,_4)", "<_,_4:_1>",
            "(_4,(_4,_2)):(_1,(_4,_16))");
  /* composition(A, make_tile(_2:_1, _)): mode 1 of A unchanged */
  expect_op(CF_LAYOUT_OP_COMPOSITION, "(_4,_8):(_1,_4)", "<_2:_1,_>", "(_2,_8):(_1,_4)");
  /* CuTe's c_tensor.compose(AtomLayoutC_TV{}, _) and the thread tile of its TiledMMA:
   * zipped_divide(((ThrV,FrgV),(RestM,RestN)), (_, (ThrM,ThrN))) */
  expect_op(CF_LAYOUT_OP_COMPOSITION, "((_16,_8),(_2,_4)):((_1,_16),(_16,_256))",
            "(((_4,_8),(_2,_2)):((_32,_1),(_16,_8)),_)",
            "(((_4,_8),(_2,_2)),(_2,_4)):(((_32,_1),(_16,_8)),(_16,_256))");
  expect_op(CF_LAYOUT_OP_ZIPPED_DIVIDE, "((_32,_4),(_2,_4)):((_1,_32),(_128,_256))",
            "(_,(_2:_1,_2:_1))", "((_32,(_2,_2)),(_4,(_1,_2))):((_1,(_128,_256)),(_32,(_0,_512)))");
  /* logical_divide(c_layout, make_tile(_, _, Int<2>{})) of a (MMA, MMA_M, MMA_N) layout */
  expect_op(CF_LAYOUT_OP_LOGICAL_DIVIDE, "(_4,_2,_8):(_1,_4,_8)", "(_,_,_2)",
            "(_4,_2,(_2,_4)):(_1,_4,(_8,_16))");
  expect_op(CF_LAYOUT_OP_LOGICAL_PRODUCT, "(_2,_3):(_1,_2)", "<_,_2:_1>",
            "(_2,(_3,_2)):(_1,(_2,_1))");
  /* `_` alone: the whole layout */
  expect_op(CF_LAYOUT_OP_LOGICAL_DIVIDE, "(_4,_8):(_1,_4)", "_", "(_4,_8):(_1,_4)");
  cf_layout parts[2] = {cf_layout_underscore(), L("_4:_1")}, t, r;
  cf_layout_err e;
  cr_assert_eq(cf_layout_make_tiler(parts, 2, &t, &e), CF_OK, "%s", e.message);
  cr_expect_str_eq(lt_str(&t), "<_,_4:_1>");
  cr_expect(cf_layout_is_tiler(&parts[0]));
  /* CuTe needs a mode under `_` to be (tile, rest) when zipping */
  cf_layout a = L("(_4,_8):(_1,_4)");
  cr_expect_eq(cf_layout_zipped_divide(&a, &t, &r, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "zipped_divide: '_' keeps a mode of rank 1 whole, but splitting "
                              "it into tile and rest needs rank 2 (as in CuTe's zip2_by)");
  /* a layout is never `_` */
  cr_expect_eq(cf_layout_coalesce(&parts[0], &r, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "coalesce: expected a layout, got the tiler _");
  cr_expect_eq(cf_layout_parse("_", &r, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "expected an integer ('_' alone is only allowed in coordinates) at "
                              "offset 0 in \"_\" (found '_')");
}

Test(layout_api, tilers_in_cutes_printed_form)
{
  static const char *const same[][2] = {
      {"(_3:_1,_2)", "<_3:_1,_2>"},
      {"(_3:_4,_8:_2)", "<_3:_4,_8:_2>"},
      {"((2,2):(1,2),(_2:_1,4))", "<(2,2):(1,2),<_2:_1,4>>"},
      {"(_, (_2:_1, _))", "<_,<_2:_1,_>>"},
      {"(4,8)", "<4,8>"}, /* a shape is the same by-mode tiler either way */
  };
  for (size_t k = 0; k < sizeof same / sizeof same[0]; k++) {
    cf_layout a = lt_tiler(same[k][0]), b = lt_tiler(same[k][1]);
    cr_expect(cf_layout_equal(&a, &b), "%s parses as %s, not as %s", same[k][0], lt_str(&a),
              same[k][1]);
    cr_expect_str_eq(lt_str(&a), same[k][1]);
  }
  /* composition((12,(4,8)):(59,(13,1)), (_3:_4,_8:_2)), pasted from CuTe's print */
  expect_op(CF_LAYOUT_OP_COMPOSITION, "(12,(4,8)):(59,(13,1))", "(_3:_4,_8:_2)",
            "(_3,(2,4)):(236,(26,1))");
  /* of two failed readings, the error of the one that got further */
  cf_layout r;
  cf_layout_err e;
  cr_expect_eq(cf_layout_parse_tiler("(_3:_1,(_2:_1,_2):(_4,_3", &r, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "expected ',' or ')' at offset 17 in \"(_3:_1,(_2:_1,_2):(_4,_3\" "
                              "(found ':')");
  cr_expect_eq(cf_layout_parse_tiler("(_3:_1,_2", &r, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "expected ',' or ')' at offset 9 in \"(_3:_1,_2\" (found end of text)");
}

/* ---- laws on random layouts ----------------------------------------------------------- */

/* Marks A(i), i < size(A), in seen[] (strides are non-negative and small here). */
static void image(const cf_layout *a, bool *seen, int64_t cap)
{
  memset(seen, 0, (size_t)cap);
  for (int64_t i = 0; i < lt_size(a); i++) {
    int64_t v = lt_eval(a, i);
    cr_assert(v >= 0 && v < cap, "%s(%lld) = %lld", lt_str(a), (long long)i, (long long)v);
    seen[v] = true;
  }
}

Test(layout_api_laws, filter_keeps_the_image_and_drops_stride0_and_size1_modes)
{
  LtRng r = {0x15f1e7};
  enum { CAP = 1024 };
  static bool want[CAP], got[CAP];
  for (int n = 0; n < 400; n++) {
    LtModes m = lt_any_modes(&r);
    cf_layout a = lt_layout_of(&r, &m, 70, 70), f;
    cf_layout_err e;
    cr_assert_eq(cf_layout_filter(&a, &f, &e), CF_OK, "filter(%s): %s", lt_str(&a), e.message);
    image(&a, want, CAP);
    image(&f, got, CAP);
    cr_assert(memcmp(want, got, CAP) == 0, "filter(%s) = %s has another image", lt_str(&a),
              lt_str(&f));
    cr_assert_leq(cf_layout_depth(&f), 1, "filter(%s) = %s", lt_str(&a), lt_str(&f));
    if (!strcmp(lt_str(&f), "_1:_0"))
      continue;
    for (int k = 0; k < cf_layout_rank(&f); k++) {
      cf_layout mode;
      cr_assert_eq(cf_layout_get(&f, &k, 1, &mode, &e), CF_OK);
      cf_tuple_int s = cf_layout_size(&mode);
      cf_int_tuple d;
      cf_layout_stride(&mode, &d);
      cr_expect(!(s.is_static && s.value == 1), "filter(%s) = %s keeps a size-1 mode",
                lt_str(&a), lt_str(&f));
      cr_expect(!(cf_tuple_value(&d).is_static && cf_tuple_value(&d).value == 0),
                "filter(%s) = %s keeps a stride-0 mode", lt_str(&a), lt_str(&f));
    }
  }
}

/* A random hierarchical shape of 1 to 3 modes, static or not. */
static cf_int_tuple random_shape(LtRng *r)
{
  LtModes m = lt_shape_modes(r);
  cf_layout l = lt_layout_of(r, &m, 50, 50);
  cf_int_tuple s;
  cf_layout_shape(&l, &s);
  return s;
}

Test(layout_api_laws, idx2crd_and_crd2idx_are_inverse)
{
  LtRng r = {0x1d2c4d};
  for (int n = 0; n < 150; n++) {
    cf_int_tuple shape = random_shape(&r), c;
    cf_layout compact;
    cf_tuple_int size, back;
    cf_layout_err e;
    cr_assert_eq(cf_tuple_size(&shape, &size, &e), CF_OK);
    cr_assert_eq(cf_layout_from_shape(&shape, CF_LAYOUT_LEFT, &compact, &e), CF_OK);
    for (int64_t i = 0; i < size.value; i += 1 + i / 16) {
      cr_assert_eq(cf_tuple_idx2crd(cf_tuple_dynamic(i), &shape, &c, &e), CF_OK, "%s", e.message);
      cr_assert(cf_tuple_congruent(&c, &shape), "idx2crd(%lld, %s) = %s", (long long)i,
                lt_tstr(&shape), lt_tstr(&c));
      cr_assert_eq(cf_tuple_crd2idx(&c, &shape, &back, &e), CF_OK, "%s", e.message);
      cr_assert_eq(back.value, i, "crd2idx(idx2crd(%lld, %s)) = %lld", (long long)i,
                   lt_tstr(&shape), (long long)back.value);
      cr_assert_eq(cf_layout_idx2crd(&compact, i, &c, &e), CF_OK, "%s", e.message);
      cr_assert_eq(cf_layout_crd2idx(&compact, &c, &back, &e), CF_OK, "%s", e.message);
      cr_assert_eq(back.value, i, "through %s", lt_str(&compact));
    }
    /* a tuple index: one index per top mode, the same position as that mixed coordinate */
    int rank = cf_tuple_rank(&shape);
    cf_int_tuple parts[8], idx;
    for (int k = 0; k < rank && !cf_tuple_is_int(&shape); k++) {
      cf_int_tuple mode;
      cf_tuple_int ms;
      cr_assert_eq(cf_tuple_get(&shape, &k, 1, &mode, &e), CF_OK);
      cr_assert_eq(cf_tuple_size(&mode, &ms, &e), CF_OK);
      parts[k] = cf_tuple_from_int(cf_tuple_dynamic(lt_rand(&r, 0, (int)ms.value - 1)));
    }
    if (cf_tuple_is_int(&shape))
      continue;
    cf_tuple_int want;
    cr_assert_eq(cf_tuple_make(parts, rank, &idx, &e), CF_OK);
    cr_assert_eq(cf_tuple_crd2idx(&idx, &shape, &want, &e), CF_OK, "%s", e.message);
    cr_assert_eq(cf_tuple_idx2crd_tuple(&idx, &shape, &c, &e), CF_OK, "%s", e.message);
    cr_assert(cf_tuple_congruent(&c, &shape));
    cr_assert_eq(cf_tuple_crd2idx(&c, &shape, &back, &e), CF_OK);
    cr_assert_eq(back.value, want.value, "idx2crd(%s, %s) = %s", lt_tstr(&idx), lt_tstr(&shape),
                 lt_tstr(&c));
  }
}

/* op(A, <_,B>) is (A0, op(A1, B)) and op(A, <B,_>) is (op(A0, B), A1), failures included. */
static void check_underscore_law(cf_layout_op op, const cf_layout *a, const cf_layout *b,
                                 int under)
{
  cf_layout parts[2], t, r1, r2, mode, keep, got;
  cf_layout_err e1, e2, e;
  int other = 1 - under;
  cr_assert_eq(cf_layout_get(a, &other, 1, &mode, &e), CF_OK);
  cr_assert_eq(cf_layout_get(a, &under, 1, &keep, &e), CF_OK);
  parts[under] = cf_layout_underscore();
  parts[other] = *b;
  cr_assert_eq(cf_layout_make_tiler(parts, 2, &t, &e), CF_OK);
  cf_status s1 = cf_layout_apply(op, a, &t, &r1, &e1);
  cf_status s2 = cf_layout_apply(op, &mode, b, &r2, &e2);
  cr_assert_eq(s1, s2, "%s(%s, %s): %s / %s", cf_layout_op_name(op), lt_str(a), lt_str(&t),
               e1.message, e2.message);
  if (s1 != CF_OK) {
    cr_expect_str_eq(e1.message, e2.message);
    return;
  }
  cr_assert_eq(cf_layout_get(&r1, &under, 1, &got, &e), CF_OK);
  cr_expect(cf_layout_equal(&got, &keep), "%s(%s, %s) = %s changes the mode under _",
            cf_layout_op_name(op), lt_str(a), lt_str(&t), lt_str(&r1));
  cr_assert_eq(cf_layout_get(&r1, &other, 1, &got, &e), CF_OK);
  cr_expect(cf_layout_equal(&got, &r2), "%s(%s, %s) = %s, but %s on the mode alone", 
            cf_layout_op_name(op), lt_str(a), lt_str(&t), lt_str(&r1), lt_str(&r2));
}

Test(layout_api_laws, underscore_in_a_tiler_is_the_identity_on_its_mode)
{
  static const cf_layout_op ops[] = {CF_LAYOUT_OP_COMPOSITION, CF_LAYOUT_OP_LOGICAL_DIVIDE,
                                     CF_LAYOUT_OP_LOGICAL_PRODUCT};
  LtRng r = {0x5f00d};
  for (int n = 0; n < 200; n++) {
    LtModes m0 = lt_shape_modes(&r), m1 = lt_shape_modes(&r), mb = lt_any_modes(&r);
    for (int k = 0; k < m0.n; k++)
      m0.d[k] = lt_rand(&r, 1, 24);
    for (int k = 0; k < m1.n; k++)
      m1.d[k] = lt_rand(&r, 1, 24);
    cf_layout modes[2] = {lt_layout_of(&r, &m0, 60, 60), lt_layout_of(&r, &m1, 60, 60)}, a;
    cf_layout b = lt_layout_of(&r, &mb, 60, 60);
    cr_assert_eq(cf_layout_concat(modes, 2, &a, NULL), CF_OK);
    check_underscore_law(ops[n % 3], &a, &b, n % 2);
  }
}

/* A random tiler element in angle-bracket notation: `_`, a bare size, a layout, or a
 * nested tiler of two elements. */
static void random_tiler_text(LtRng *r, int depth, char *out, size_t cap)
{
  size_t len = strlen(out);
  int kind = lt_rand(r, 0, depth < 2 ? 3 : 2);
  if (kind == 0) {
    snprintf(out + len, cap - len, "_");
  } else if (kind == 1) {
    snprintf(out + len, cap - len, "%s%d", lt_rand(r, 0, 1) ? "_" : "", lt_rand(r, 1, 8));
  } else if (kind == 2) {
    LtModes m = lt_any_modes(r);
    cf_layout l = lt_layout_of(r, &m, 50, 50);
    snprintf(out + len, cap - len, "%s", lt_str(&l));
  } else {
    strncat(out, "<", cap - len - 1);
    random_tiler_text(r, depth + 1, out, cap);
    strncat(out, ",", cap - strlen(out) - 1);
    random_tiler_text(r, depth + 1, out, cap);
    strncat(out, ">", cap - strlen(out) - 1);
  }
}

Test(layout_api_laws, a_tiler_in_tuple_form_is_the_same_tiler)
{
  LtRng r = {0x7e1e};
  for (int n = 0; n < 300; n++) {
    char angle[2048] = "<", tuple[2048];
    random_tiler_text(&r, 1, angle, sizeof angle);
    strncat(angle, ",", sizeof angle - strlen(angle) - 1);
    random_tiler_text(&r, 1, angle, sizeof angle);
    strncat(angle, ">", sizeof angle - strlen(angle) - 1);
    strcpy(tuple, angle);
    for (char *c = tuple; *c; c++)
      *c = *c == '<' ? '(' : *c == '>' ? ')' : *c;
    cf_layout a = lt_tiler(angle), b = lt_tiler(tuple);
    cr_assert(cf_layout_equal(&a, &b), "%s reads as %s, but %s as %s", angle, lt_str(&a), tuple,
              lt_str(&b));
    cr_assert_str_eq(lt_str(&a), angle);
  }
}
