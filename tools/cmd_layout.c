/* tools/cmd_layout.c: `cfuser layout OP ARG...`, a calculator for CuTe's layout algebra.
 *
 * Each ARG is CuTe notation (`_4` static, `4` dynamic, `(_4,8):(_1,_4)` a layout, `<3:4,8:2>`
 * a tiler, a bare shape `(4,8)` its column-major layout, or the by-mode tiler <4,8> where a
 * tiler is expected). The result is printed as CuTe prints it, on one line. Key decision:
 * the calculator is a thin table over the public API (cf_layout_apply for every binary
 * operation), so what it prints is exactly what a C program calling cfuser gets; bad
 * input is reported with the argument it came from, and exits 2. */
#include <stdio.h>
#include <string.h>

#include "cfuser/layout.h"
#include "tools.h"

static const char USAGE[] =
    "usage: cfuser layout OP ARG...\n"
    "\n"
    "  print A                 A as CuTe prints it\n"
    "  size A, cosize A        its size, its cosize\n"
    "  table A                 A(i) for i = 0 .. size(A)-1\n"
    "  coalesce A [P]          coalesce A (by mode at the terminals of profile P)\n"
    "  composition A B         A o B (B a layout or a tiler)\n"
    "  complement A [M]        complement of A up to the cotarget shape M (default cosize)\n"
    "  right_inverse A, left_inverse A\n"
    "  logical_divide A T, zipped_divide A T, tiled_divide A T, flat_divide A T\n"
    "  logical_product A T, zipped_product A T, tiled_product A T, flat_product A T\n"
    "  blocked_product A B, raked_product A B\n"
    "\n"
    "ARGs are CuTe notation: _4 is static, 4 dynamic; a layout is Shape:Stride such as\n"
    "(_4,(3,_6)):(_1,(4,_12)); a bare shape (4,8) is its column-major layout, or, where a\n"
    "tiler T is expected, the tiler <4,8>; a tiler is <L0,L1,...> such as <3:4,8:2>.\n";

typedef enum ArgKind { ARG_LAYOUT, ARG_TILER, ARG_TUPLE } ArgKind;

typedef struct Unary {
  const char *name;
  int min_args, max_args; /* besides A */
  ArgKind extra;          /* the kind of the optional second argument */
} Unary;

static const Unary UNARY[] = {
    {"print", 0, 0, ARG_LAYOUT},         {"size", 0, 0, ARG_LAYOUT},
    {"cosize", 0, 0, ARG_LAYOUT},        {"table", 0, 0, ARG_LAYOUT},
    {"coalesce", 0, 1, ARG_TUPLE},       {"complement", 0, 1, ARG_TUPLE},
    {"right_inverse", 0, 0, ARG_LAYOUT}, {"left_inverse", 0, 0, ARG_LAYOUT},
};

/* Argument k (1-based after OP) of the command line, for error messages. */
static int bad_arg(const char *op, int k, const cf_layout_err *err)
{
  fprintf(stderr, "cfuser layout: %s: argument %d: %s\n", op, k, err->message);
  return 2;
}

static int failed(const char *op, const cf_layout_err *err)
{
  size_t n = strlen(op);
  if (strncmp(err->message, op, n) == 0 && err->message[n] == ':')
    fprintf(stderr, "cfuser layout: %s\n", err->message);
  else
    fprintf(stderr, "cfuser layout: %s: %s\n", op, err->message);
  return err->status == CF_ERR_INTERNAL ? 1 : 2;
}

static cf_status parse_arg(const char *text, ArgKind kind, cf_layout *l, cf_int_tuple *t,
                           cf_layout_err *err)
{
  if (kind == ARG_TUPLE)
    return cf_tuple_parse(text, t, err);
  return kind == ARG_TILER ? cf_layout_parse_tiler(text, l, err) : cf_layout_parse(text, l, err);
}

static void print_int(cf_tuple_int v)
{
  printf(v.is_static ? "_%lld\n" : "%lld\n", (long long)v.value);
}

static void print_layout(const cf_layout *l)
{
  char buf[CF_LAYOUT_TEXT_MAX];
  cf_layout_snprint(buf, sizeof buf, l);
  printf("%s\n", buf);
}

static int table(const cf_layout *a, cf_layout_err *err)
{
  int64_t n = cf_layout_size(a).value;
  if (n > (1 << 20)) {
    fprintf(stderr, "cfuser layout: table: size %lld is too large (at most %d)\n", (long long)n,
            1 << 20);
    return 2;
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t v;
    if (cf_layout_eval(a, i, &v, err) != CF_OK)
      return failed("table", err);
    printf(i ? " %lld" : "%lld", (long long)v);
  }
  printf("\n");
  return 0;
}

static int run_unary(const Unary *u, int nargs, char **args)
{
  cf_layout a, r;
  cf_int_tuple extra;
  cf_layout_err err;
  if (cf_layout_parse(args[0], &a, &err) != CF_OK)
    return bad_arg(u->name, 1, &err);
  if (nargs > 1 && parse_arg(args[1], u->extra, NULL, &extra, &err) != CF_OK)
    return bad_arg(u->name, 2, &err);
  const char *op = u->name;
  cf_status s = CF_OK;
  if (!strcmp(op, "print")) {
    r = a;
  } else if (!strcmp(op, "size") || !strcmp(op, "cosize")) {
    print_int(!strcmp(op, "size") ? cf_layout_size(&a) : cf_layout_cosize(&a));
    return 0;
  } else if (!strcmp(op, "table")) {
    return table(&a, &err);
  } else if (!strcmp(op, "coalesce")) {
    s = nargs > 1 ? cf_layout_coalesce_by(&a, &extra, &r, &err) : cf_layout_coalesce(&a, &r, &err);
  } else if (!strcmp(op, "complement")) {
    s = cf_layout_complement(&a, nargs > 1 ? &extra : NULL, &r, &err);
  } else if (!strcmp(op, "right_inverse")) {
    s = cf_layout_right_inverse(&a, &r, &err);
  } else {
    s = cf_layout_left_inverse(&a, &r, &err);
  }
  if (s != CF_OK)
    return failed(op, &err);
  print_layout(&r);
  return 0;
}

static int run_binary(cf_layout_op op, char **args)
{
  const char *name = cf_layout_op_name(op);
  cf_layout a, b, r;
  cf_layout_err err;
  if (cf_layout_parse(args[0], &a, &err) != CF_OK)
    return bad_arg(name, 1, &err);
  if (parse_arg(args[1], cf_layout_op_takes_tiler(op) ? ARG_TILER : ARG_LAYOUT, &b, NULL,
                &err) != CF_OK)
    return bad_arg(name, 2, &err);
  if (cf_layout_apply(op, &a, &b, &r, &err) != CF_OK)
    return failed(name, &err);
  print_layout(&r);
  return 0;
}

static int wrong_count(const char *op, int lo, int hi, int got)
{
  if (lo == hi)
    fprintf(stderr, "cfuser layout: %s takes %d argument%s, got %d\n", op, lo, lo == 1 ? "" : "s",
            got);
  else
    fprintf(stderr, "cfuser layout: %s takes %d or %d arguments, got %d\n", op, lo, hi, got);
  return 2;
}

int cf_tool_layout(int argc, char **argv)
{
  if (argc < 2) {
    fputs(USAGE, stderr);
    return 2;
  }
  const char *op = argv[1];
  int nargs = argc - 2;
  char **args = argv + 2;
  if (!strcmp(op, "help") || !strcmp(op, "--help") || !strcmp(op, "-h")) {
    fputs(USAGE, stdout);
    return 0;
  }
  for (size_t k = 0; k < sizeof UNARY / sizeof UNARY[0]; k++)
    if (!strcmp(op, UNARY[k].name)) {
      if (nargs < 1 + UNARY[k].min_args || nargs > 1 + UNARY[k].max_args)
        return wrong_count(op, 1 + UNARY[k].min_args, 1 + UNARY[k].max_args, nargs);
      return run_unary(&UNARY[k], nargs, args);
    }
  cf_layout_op bop;
  if (cf_layout_op_from_name(op, &bop)) {
    if (nargs != 2)
      return wrong_count(op, 2, 2, nargs);
    return run_binary(bop, args);
  }
  fprintf(stderr, "cfuser layout: unknown operation '%s'\n\n%s", op, USAGE);
  return 2;
}
