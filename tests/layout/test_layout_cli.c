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
