/* tests/layout/test_layout_cli.c: `cfuser layout OP ARG...`, run as a program (the build
 * sets CFUSER_BIN): every operation prints CuTe's result on one line and exits 0; bad
 * input prints an error naming the argument on stderr and exits 2. */
#include <stdlib.h>
#include <sys/wait.h>

#include "layout_test_util.h"

typedef struct Run {
  int status;
  char out[4096], err[4096];
} Run;

/* Runs the program once for stdout and once for stderr (popen reads one stream). */
static Run run(const char *args)
{
  const char *bin = getenv("CFUSER_BIN");
  if (!bin)
    cr_skip_test("CFUSER_BIN is not set");
  Run r = {0, "", ""};
  for (int which = 0; which < 2; which++) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, which ? "'%s' layout %s 2>&1 >/dev/null" : "'%s' layout %s 2>/dev/null",
             bin, args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    char *dst = which ? r.err : r.out;
    size_t n = fread(dst, 1, sizeof r.out - 1, p);
    dst[n] = '\0';
    int st = pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
  return r;
}

static void expect_out(const char *args, const char *want)
{
  Run r = run(args);
  cr_expect_eq(r.status, 0, "cfuser layout %s: %s", args, r.err);
  cr_expect_str_eq(r.out, want, "cfuser layout %s", args);
  cr_expect_str_eq(r.err, "", "cfuser layout %s", args);
}

static void expect_err(const char *args, const char *want)
{
  Run r = run(args);
  cr_expect_eq(r.status, 2, "cfuser layout %s", args);
  cr_expect_str_eq(r.err, want, "cfuser layout %s", args);
  cr_expect_str_eq(r.out, "", "cfuser layout %s", args);
}

Test(layout_cli, print)
{
  expect_out("print '(_4,(_3,_6)):(_1,(_4,_12))'", "(_4,(_3,_6)):(_1,(_4,_12))\n");
  expect_out("print '(12, (4,8))'", "(12,(4,8)):(_1,(12,48))\n");
}

Test(layout_cli, size_and_cosize)
{
  expect_out("size '(_4,(_3,_6)):(_1,(_4,_12))'", "_72\n");
  expect_out("size '(8,_4):(_1,_16)'", "32\n");
  expect_out("cosize '(8,_4):(_1,_16)'", "56\n");
}

Test(layout_cli, table)
{
  expect_out("table '(2,(2,2)):(4,(2,1))'", "0 4 2 6 1 5 3 7\n");
  expect_out("table '_1:_0'", "0\n");
}

Test(layout_cli, coalesce)
{
  expect_out("coalesce '(_2,(_1,_6)):(_1,(_6,_2))'", "_12:_1\n");
  expect_out("coalesce '(_2,(_1,_6)):(_1,(_6,_2))' '(_1,_1)'", "(_2,_6):(_1,_2)\n");
}

Test(layout_cli, composition)
{
  expect_out("composition '(12,(4,8)):(59,(13,1))' '<_3:_4,_8:_2>'", "(_3,(2,4)):(236,(26,1))\n");
  expect_out("composition '(_10,_2):(_16,_4)' '(_5,_4):(_1,_5)'", "(_5,(_2,_2)):(_16,(_80,_4))\n");
  expect_out("composition '(12,(4,8)):(59,(13,1))' '(_3,_8)'", "(_3,(4,2)):(59,(13,1))\n");
}

Test(layout_cli, complement)
{
  expect_out("complement '_4:_2' _24", "(_2,_3):(_1,_8)\n");
  expect_out("complement '(_2,_2):(_1,_6)'", "_3:_2\n");
  expect_out("complement '(_2,_2):(_1,_6)' '(_4,6)'", "(_3,2):(_2,_12)\n");
}

Test(layout_cli, inverses)
{
  expect_out("right_inverse '(_4,8):(_8,_1)'", "8:_4\n");
  expect_out("left_inverse '(_2,_4):(_1,_6)'", "(_6,_4):(_1,_2)\n");
}

Test(layout_cli, divides)
{
  const char *a = "'(_9,(_4,_8)):(_59,(_13,_1))' '<_3:_3,(_2,_4):(_1,_8)>'";
  char args[256];
  snprintf(args, sizeof args, "logical_divide %s", a);
  expect_out(args, "((_3,_3),((_2,_4),(_2,_2))):((_177,_59),((_13,_2),(_26,_1)))\n");
  snprintf(args, sizeof args, "zipped_divide %s", a);
  expect_out(args, "((_3,(_2,_4)),(_3,(_2,_2))):((_177,(_13,_2)),(_59,(_26,_1)))\n");
  snprintf(args, sizeof args, "tiled_divide %s", a);
  expect_out(args, "((_3,(_2,_4)),_3,(_2,_2)):((_177,(_13,_2)),_59,(_26,_1))\n");
  snprintf(args, sizeof args, "flat_divide %s", a);
  expect_out(args, "(_3,(_2,_4),_3,(_2,_2)):(_177,(_13,_2),_59,(_26,_1))\n");
  expect_out("zipped_divide '(8,24)' '(_4,_8)'", "((_4,_8),(2,3)):((_1,8),(_4,64))\n");
}

Test(layout_cli, products)
{
  expect_out("logical_product '(_2,_2):(_4,_1)' '_6:_1'", "((_2,_2),(_2,_3)):((_4,_1),(_2,_8))\n");
  expect_out("blocked_product '(_2,_5):(_5,_1)' '(_3,_4)'", "((_2,_3),(_5,_4)):((_5,_10),(_1,_30))\n");
  expect_out("raked_product '(_2,_5):(_5,_1)' '(_3,_4)'", "((_3,_2),(_4,_5)):((_10,_5),(_30,_1))\n");
  expect_out("zipped_product '(_2,_5):(_5,_1)' '<_3:_5,_4:_6>'", "((_2,_5),(_3,_4)):((_5,_1),(_10,_30))\n");
}

Test(layout_cli, a_malformed_argument_is_named)
{
  expect_err("composition '(4,8' '1:1'",
             "cfuser layout: composition: argument 1: expected ',' or ')' at offset 4 in \"(4,8\" "
             "(found end of text)\n");
  expect_err("logical_divide '(8,24)' '<_4,>'",
             "cfuser layout: logical_divide: argument 2: expected an integer or '(' at offset 4 "
             "in \"<_4,>\" (found '>')\n");
  expect_err("complement '4:1' '(2,x)'",
             "cfuser layout: complement: argument 2: expected an integer or '(' at offset 3 in "
             "\"(2,x)\" (found 'x')\n");
  expect_err("print '<3:4,8:2>'",
             "cfuser layout: print: argument 1: expected a layout, found a tiler at offset 0 in "
             "\"<3:4,8:2>\"\n");
}

Test(layout_cli, an_operation_that_fails_reports_why)
{
  expect_err("composition '(_6,_2):(_1,_7)' '_4:_4'",
             "cfuser layout: composition: stride divisibility condition violated: stride 4 and "
             "shape 6 do not divide each other, and the elements do not fit in one mode\n");
  expect_err("blocked_product '(2,5):(5,1)' '(3,4)'",
             "cfuser layout: blocked_product: complement: dynamic stride 5 in a layout of rank > 1\n");
  expect_err("table '(2048,2048)'", "cfuser layout: table: size 4194304 is too large (at most 1048576)\n");
}

/* The operations added for issue 15, on the examples of CuTe's 01_layout.md. */
Test(layout_cli, inspecting_and_coordinates)
{
  expect_out("rank '(2,(2,2)):(4,(2,1))'", "2\n");
  expect_out("depth '(2,(2,2)):(4,(2,1))'", "2\n");
  expect_out("shape '(_3,(_2,_3)):(_3,(_12,_1))'", "(_3,(_2,_3))\n");
  expect_out("stride '(_3,(_2,_3)):(_3,(_12,_1))'", "(_3,(_12,_1))\n");
  expect_out("crd2idx '(_3,(_2,_3)):(_3,(_12,_1))' 16", "17\n");
  expect_out("crd2idx '(_3,(_2,_3)):(_3,(_12,_1))' _16", "_17\n");
  expect_out("crd2idx '(_3,(_2,_3)):(_3,(_12,_1))' '(_1,5)'", "17\n");
  expect_out("idx2crd '(_3,(_2,_3))' 16", "(1,(1,2))\n");
  expect_out("idx2crd '(_3,(_2,_3))' '(_1,5)'", "(_1,(1,2))\n");
  expect_out("idx2crd '(_3,(_2,_3)):(_1,(_3,_6))' '(1,15)'", "(1,(1,2))\n");
  expect_out("slice '(_4,(_3,_6)):(_1,(_4,_12))' '(_,(1,_))'", "(_4,_6):(_1,_12)\n");
}

Test(layout_cli, sublayouts_and_concatenation)
{
  expect_out("get '(_4,(_3,_6)):(_1,(_4,_12))' 1 0", "_3:_4\n");
  expect_out("select '(_2,_3,_5,_7)' 0 1 3", "(_2,_3,_7):(_1,_2,_30)\n");
  expect_out("take '(_2,_3,_5,_7)' 1 3", "(_3,_5):(_2,_6)\n");
  expect_out("group '(_2,_3,_5,_7)' 0 2", "((_2,_3),_5,_7):((_1,_2),_6,_30)\n");
  expect_out("flatten '((_2,_3),(_5,_7)):((_1,_2),(_6,_30))'", "(_2,_3,_5,_7):(_1,_2,_6,_30)\n");
  expect_out("append _3:_1 _4:_3", "(_3,_4):(_1,_3)\n");
  expect_out("prepend _3:_1 _4:_3", "(_4,_3):(_3,_1)\n");
  expect_out("append _3:_1", "(_3,_1):(_1,_0)\n");
  expect_out("replace '(_3,_4,(_3,_4)):(_1,_3,(_1,_3))' 2 _4:_3", "(_3,_4,_4):(_1,_3,_3)\n");
  expect_out("make_layout _3:_1 '(_3):(_1)' _3:_1", "(_3,(_3),_3):(_1,(_1),_1)\n");
  expect_out("make_layout_like '(2,3,4,5):(_0,42,_1,_0)'", "(2,3,4,5):(_0,4,_1,_0)\n");
  expect_out("make_layout_right '(_2,4)'", "(_2,4):(4,_1)\n");
  expect_err("make_layout_right '(2,_)'", "cfuser layout: make_layout_right: make_layout: '_' is "
                                          "not an integer\n");
  expect_err("replace 4:1 1 2:1", "cfuser layout: replace<1>: mode out of range for rank 1\n");
  expect_err("get 4:1 x", "cfuser layout: get: argument 2: expected a mode index (an integer), "
                          "got \"x\"\n");
}

Test(layout_cli, filter_and_tilers_with_underscore_or_in_tuple_form)
{
  expect_out("filter '(_4,(_2,_1),_3):(_1,(_0,_7),_4)'", "_12:_1\n");
  expect_out("filter '((_2,_1),(_3,_2)):((_1,_0),(_0,_2))' '(_1,_1)'", "(_2,_2):(_1,_2)\n");
  expect_out("logical_divide '(_4,_8):(_1,_4)' '(_,_4:_1)'", "(_4,(_4,_2)):(_1,(_4,_16))\n");
  expect_out("composition '(_4,_8):(_1,_4)' '<_2:_1,_>'", "(_2,_8):(_1,_4)\n");
  expect_out("composition '(12,(4,8)):(59,(13,1))' '(_3:_4,_8:_2)'", "(_3,(2,4)):(236,(26,1))\n");
  expect_err("zipped_divide '(_4,_8):(_1,_4)' '(_,_2)'",
             "cfuser layout: zipped_divide: '_' keeps a mode of rank 1 whole, but splitting it "
             "into tile and rest needs rank 2 (as in CuTe's zip2_by)\n");
}

/* The pictures: the grid of 01_layout.md's print_layout(s2xh4), and refusals. */
Test(layout_cli, pictures)
{
  Run r = run("svg '(2,(2,2)):(4,(2,1))'");
  cr_expect_eq(r.status, 0, "%s", r.err);
  const char *head = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"206\" height=\"108\"";
  cr_expect(strncmp(r.out, head, strlen(head)) == 0, "%s", r.out);
  /* row 0 reads 0 2 1 3 and row 1 reads 4 6 5 7, as CuTe's print_layout shows */
  static const char *const cells[] = {"x=\"50\" y=\"68\">0<", "x=\"94\" y=\"68\">2<",
                                      "x=\"138\" y=\"68\">1<", "x=\"182\" y=\"68\">3<",
                                      "x=\"50\" y=\"96\">4<", "x=\"94\" y=\"96\">6<",
                                      "x=\"138\" y=\"96\">5<", "x=\"182\" y=\"96\">7<"};
  for (int k = 0; k < 8; k++)
    cr_expect(strstr(r.out, cells[k]), "cell %d: %s", k, cells[k]);
  r = run("svg-tv '((_2,_2),_2):((_4,_1),_2)' '(_4,_2)'");
  cr_expect_eq(r.status, 0, "%s", r.err);
  cr_expect(strstr(r.out, ">T3</text>") && strstr(r.out, ">V1</text>"), "%s", r.out);
  expect_err("svg '(_2,_3,_4)'", "cfuser layout: svg: a layout of rank 3; only rank 1 and 2 can "
                                 "be drawn (group its modes first)\n");
  expect_err("svg '(100,100)'", "cfuser layout: svg: 100 x 100 cells are too many to draw (at "
                                "most 4096)\n");
  expect_err("svg-tv '(_4,_2):(_2,_1)' '(_2,_2)'",
             "cfuser layout: svg-tv: thread 2, value 0 is at index 4, outside the 2 x 2 tile\n");
  expect_err("svg-tv '(_4,_2):(_2,_1)' '(_2,_2,_2)'",
             "cfuser layout: svg-tv: the tile must be a shape of rank 2, (M,N)\n");
}

Test(layout_cli, bad_operation_or_argument_count)
{
  Run r = run("frobnicate 4:1");
  cr_expect_eq(r.status, 2);
  cr_expect(strncmp(r.err, "cfuser layout: unknown operation 'frobnicate'\n\nusage: cfuser layout OP ARG...", 76) == 0,
            "%s", r.err);
  expect_err("composition '4:1'", "cfuser layout: composition takes 2 arguments, got 1\n");
  expect_err("size", "cfuser layout: size takes 1 argument, got 0\n");
  expect_err("complement 4:1 8 9", "cfuser layout: complement takes 1 or 2 arguments, got 3\n");
  r = run("");
  cr_expect_eq(r.status, 2);
  cr_expect(strncmp(r.err, "usage: cfuser layout OP ARG...", 30) == 0, "%s", r.err);
  r = run("help");
  cr_expect_eq(r.status, 0);
  cr_expect(strncmp(r.out, "usage: cfuser layout OP ARG...", 30) == 0, "%s", r.out);
}
