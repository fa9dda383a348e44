/* tests/layout/test_layout_fuzz.c: the layout fuzz that runs on every build, for a bounded
 * number of inputs (and so under ASan and UBSan in `./cfuser sanitize`): random strings,
 * made of CuTe's tokens or mutated from valid layouts and tilers, go into the three
 * parsers (which must either fail with a message or print something that parses back to
 * the same value) and into the calculator `cfuser layout OP ARG...`, run in-process (the
 * build links tools/cmd_layout.c into this test), which must exit 0 or 2, never 1 (an
 * internal error) and never crash. The seeds are fixed, so a failure reproduces; the
 * libFuzzer harness (tests/fuzz/) explores further. */
#include <stdio.h>
#include <stdlib.h>

#include "layout_test_util.h"
#include "tools.h"

static const char *const OPS[] = {
    "print", "size", "cosize", "rank", "depth", "shape", "stride", "table", "crd2idx",
    "idx2crd", "slice", "get", "select", "take", "group", "flatten", "append", "prepend",
    "replace", "make_layout", "make_layout_right", "make_layout_like", "coalesce", "filter", "complement",
    "right_inverse", "left_inverse", "composition", "logical_divide", "zipped_divide",
    "tiled_divide", "flat_divide", "logical_product", "zipped_product", "tiled_product",
    "flat_product", "blocked_product", "raked_product", "svg", "svg-tv", "nonsense"};
enum { NOPS = sizeof OPS / sizeof OPS[0], TEXT = 96 };

static const char *const VALID[] = {
    "(12,(4,8)):(59,(13,1))", "<_3:_4,_8:_2>", "(_3:_1,_2)", "(_4,(_2,_1),_3):(_1,(_0,_7),_4)",
    "((_4,_8),(_2,_2)):((_32,_1),(_16,_8))", "(_,(_2:_1,_))", "(1,_)", "(_3,(_2,_3))",
    "((2,2),2):((4,1),2)", "2", "-3:_2", "(_16,_8)", "((_2,_2)):((_1,_4))",
};

/* A string of CuTe's tokens: brackets, separators, `_`, signs and small integers. */
static void token_soup(LtRng *r, char *out)
{
  static const char *const tokens[] = {"(", ")", "<", ">", ",", ":", "_", "-", " ", "_2",
                                       "4", "_1", "0", "3", "_8", "12", "_0", "99"};
  int n = lt_rand(r, 0, 24);
  out[0] = '\0';
  for (int k = 0; k < n; k++)
    strncat(out, tokens[lt_rand(r, 0, (int)(sizeof tokens / sizeof tokens[0]) - 1)],
            TEXT - strlen(out) - 1);
}

/* A valid text with one to three characters replaced, inserted or deleted. */
static void mutant(LtRng *r, char *out)
{
  static const char alphabet[] = "()<>,:_-0123456789 x";
  snprintf(out, TEXT, "%s", VALID[lt_rand(r, 0, (int)(sizeof VALID / sizeof VALID[0]) - 1)]);
  for (int m = lt_rand(r, 1, 3); m > 0; m--) {
    size_t len = strlen(out), at = len ? (size_t)lt_rand(r, 0, (int)len - 1) : 0;
    char c = alphabet[lt_rand(r, 0, (int)sizeof alphabet - 2)];
    int how = lt_rand(r, 0, 2);
    if (how == 0 && len)
      out[at] = c;
    else if (how == 1 && len + 1 < TEXT)
      memmove(out + at + 1, out + at, len - at + 1), out[at] = c;
    else if (len)
      memmove(out + at, out + at + 1, len - at);
  }
}

static void random_text(LtRng *r, char *out)
{
  if (lt_rand(r, 0, 1))
    token_soup(r, out);
  else
    mutant(r, out);
}

static void expect_round_trip(const char *text)
{
  cf_layout l, back;
  cf_int_tuple t, tback;
  char buf[CF_LAYOUT_TEXT_MAX];
  cf_layout_err e;
  if (cf_layout_parse(text, &l, &e) == CF_OK) {
    cf_layout_snprint(buf, sizeof buf, &l);
    cr_assert(cf_layout_parse(buf, &back, NULL) == CF_OK && cf_layout_equal(&l, &back),
              "layout \"%s\" prints as \"%s\", which does not parse back", text, buf);
  } else {
    cr_assert(e.message[0] != '\0', "no message for \"%s\"", text);
  }
  if (cf_layout_parse_tiler(text, &l, NULL) == CF_OK) {
    cf_layout_snprint(buf, sizeof buf, &l);
    cr_assert(cf_layout_parse_tiler(buf, &back, NULL) == CF_OK && cf_layout_equal(&l, &back),
              "tiler \"%s\" prints as \"%s\", which does not parse back", text, buf);
  }
  if (cf_tuple_parse(text, &t, NULL) == CF_OK) {
    cf_tuple_snprint(buf, sizeof buf, &t);
    cr_assert(cf_tuple_parse(buf, &tback, NULL) == CF_OK && cf_tuple_equal(&t, &tback),
              "tuple \"%s\" prints as \"%s\", which does not parse back", text, buf);
  }
}

Test(layout_fuzz, parsers_fail_cleanly_or_round_trip)
{
  LtRng r = {0xf022};
  char text[TEXT];
  for (int n = 0; n < 4000; n++) {
    random_text(&r, text);
    expect_round_trip(text);
  }
}

Test(layout_fuzz, the_calculator_exits_0_or_2)
{
  LtRng r = {0xca1c};
  char args[4][TEXT];
  cr_assert_not_null(freopen("/dev/null", "w", stdout));
  cr_assert_not_null(freopen("/dev/null", "w", stderr));
  for (int n = 0; n < 3000; n++) {
    char *argv[6] = {"layout", (char *)OPS[lt_rand(&r, 0, NOPS - 1)]};
    int argc = 2 + lt_rand(&r, 0, 3);
    for (int k = 2; k < argc; k++) {
      random_text(&r, args[k - 2]);
      if (lt_rand(&r, 0, 3) == 0) /* mode indices for get, take, replace, ... */
        snprintf(args[k - 2], TEXT, "%d", lt_rand(&r, -2, 4));
      argv[k] = args[k - 2];
    }
    int rc = cf_tool_layout(argc, argv);
    cr_assert(rc == 0 || rc == 2, "cfuser layout %s %s %s %s: exit %d", argv[1],
              argc > 2 ? argv[2] : "", argc > 3 ? argv[3] : "", argc > 4 ? argv[4] : "", rc);
  }
}
