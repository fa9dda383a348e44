/* tools/cmd_layout.c: `cfuser layout OP ARG...`, a calculator for CuTe's layout algebra.
 *
 * Each ARG is CuTe notation (`_4` static, `4` dynamic, `(_4,8):(_1,_4)` a layout, `<3:4,8:2>`
 * or `(_3:_4,_8:_2)` a tiler, `_` a tiler element keeping its mode, a bare shape `(4,8)` its
 * column-major layout, or the by-mode tiler <4,8> where a tiler is expected). The result
 * is printed as CuTe prints it, on one line; `svg` and `svg-tv` print an SVG picture.
 * Key decision: the calculator is one table over the public API (cf_layout_apply for
 * every binary operation, one entry per other operation of include/cfuser/layout.h), so
 * what it prints is exactly what a C program calling cfuser gets, and the usage text is
 * made from the same table; bad input is reported with the argument it came from, and
 * exits 2. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfuser/layout.h"
#include "tools.h"

/* Most integer arguments (mode indices) one operation takes. */
#define LAYOUT_MAX_INDEX_ARGS 16

typedef struct Op Op;
typedef int (*Handler)(const Op *op, int nargs, char **args);
struct Op {
  const char *name;
  int min_args, max_args;
  Handler run;
  const char *args, *what; /* for the usage text; what NULL: listed with the op before */
};

static void usage(FILE *f);

/* ---- arguments and results ---------------------------------------------------------- */

/* Argument k (1-based after OP) of the command line, for error messages. */
static int bad_arg(const char *op, int k, const char *message)
{
  fprintf(stderr, "cfuser layout: %s: argument %d: %s\n", op, k, message);
  return 2;
}

static int failed(const char *op, const cf_layout_err *err)
{
  size_t n = strlen(op);
  if (strncmp(err->message, op, n) == 0 && (err->message[n] == ':' || err->message[n] == '<'))
    fprintf(stderr, "cfuser layout: %s\n", err->message);
  else
    fprintf(stderr, "cfuser layout: %s: %s\n", op, err->message);
  return err->status == CF_ERR_INTERNAL ? 1 : 2;
}

static bool arg_layout(const Op *op, char **args, int k, cf_layout *l)
{
  cf_layout_err err;
  if (cf_layout_parse(args[k], l, &err) == CF_OK)
    return true;
  bad_arg(op->name, k + 1, err.message);
  return false;
}

static bool arg_tiler(const Op *op, char **args, int k, cf_layout *l)
{
  cf_layout_err err;
  if (cf_layout_parse_tiler(args[k], l, &err) == CF_OK)
    return true;
  bad_arg(op->name, k + 1, err.message);
  return false;
}

static bool arg_tuple(const Op *op, char **args, int k, cf_int_tuple *t)
{
  cf_layout_err err;
  if (cf_tuple_parse(args[k], t, &err) == CF_OK)
    return true;
  bad_arg(op->name, k + 1, err.message);
  return false;
}

/* A mode index: a decimal int, possibly negative (the library says what is out of range). */
static bool arg_int(const Op *op, char **args, int k, int *v)
{
  char *end;
  errno = 0;
  long x = strtol(args[k], &end, 10);
  if (errno == 0 && end != args[k] && *end == '\0' && x >= -1000000 && x <= 1000000) {
    *v = (int)x;
    return true;
  }
  char msg[160];
  snprintf(msg, sizeof msg, "expected a mode index (an integer), got \"%.100s\"", args[k]);
  bad_arg(op->name, k + 1, msg);
  return false;
}

static int print_int(cf_tuple_int v)
{
  printf(v.is_static ? "_%lld\n" : "%lld\n", (long long)v.value);
  return 0;
}

static int print_layout(const cf_layout *l)
{
  char buf[CF_LAYOUT_TEXT_MAX];
  cf_layout_snprint(buf, sizeof buf, l);
  printf("%s\n", buf);
  return 0;
}

static int print_tuple(const cf_int_tuple *t)
{
  char buf[CF_LAYOUT_TEXT_MAX];
  cf_tuple_snprint(buf, sizeof buf, t);
  printf("%s\n", buf);
  return 0;
}

/* The result of a call that makes a layout. */
static int layout_result(const Op *op, cf_status s, const cf_layout *r, const cf_layout_err *err)
{
  return s == CF_OK ? print_layout(r) : failed(op->name, err);
}

/* ---- handlers ------------------------------------------------------------------------ */

static int run_inspect(const Op *op, int nargs, char **args)
{
  (void)nargs;
  cf_layout a;
  if (!arg_layout(op, args, 0, &a))
    return 2;
  const char *n = op->name;
  cf_int_tuple t;
  if (!strcmp(n, "print"))
    return print_layout(&a);
  if (!strcmp(n, "size") || !strcmp(n, "cosize"))
    return print_int(!strcmp(n, "size") ? cf_layout_size(&a) : cf_layout_cosize(&a));
  if (!strcmp(n, "rank") || !strcmp(n, "depth")) {
    printf("%d\n", !strcmp(n, "rank") ? cf_layout_rank(&a) : cf_layout_depth(&a));
    return 0;
  }
  if (!strcmp(n, "shape"))
    cf_layout_shape(&a, &t);
  else
    cf_layout_stride(&a, &t);
  return print_tuple(&t);
}

static int run_table(const Op *op, int nargs, char **args)
{
  (void)nargs;
  cf_layout a;
  cf_layout_err err;
  if (!arg_layout(op, args, 0, &a))
    return 2;
  int64_t n = cf_layout_size(&a).value;
  if (n > (1 << 20)) {
    fprintf(stderr, "cfuser layout: table: size %lld is too large (at most %d)\n", (long long)n,
            1 << 20);
    return 2;
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t v;
    if (cf_layout_eval(&a, i, &v, &err) != CF_OK)
      return failed("table", &err);
    printf(i ? " %lld" : "%lld", (long long)v);
  }
  printf("\n");
  return 0;
}

typedef cf_status (*UnaryFn)(const cf_layout *, cf_layout *, cf_layout_err *);
typedef cf_status (*ProfileFn)(const cf_layout *, const cf_int_tuple *, cf_layout *,
                               cf_layout_err *);

/* Operations of one layout and an optional IntTuple (a profile, a cotarget). */
static const struct {
  const char *name;
  UnaryFn plain;
  ProfileFn with_tuple;
} UNARY[] = {
    {"coalesce", cf_layout_coalesce, cf_layout_coalesce_by},
    {"filter", cf_layout_filter, cf_layout_filter_by},
    {"complement", NULL, cf_layout_complement},
    {"right_inverse", cf_layout_right_inverse, NULL},
    {"left_inverse", cf_layout_left_inverse, NULL},
    {"flatten", cf_layout_flatten, NULL},
    {"make_layout_like", cf_layout_make_like, NULL},
};

static int run_unary(const Op *op, int nargs, char **args)
{
  cf_layout a, r;
  cf_int_tuple t;
  cf_layout_err err;
  if (!arg_layout(op, args, 0, &a) || (nargs > 1 && !arg_tuple(op, args, 1, &t)))
    return 2;
  for (size_t k = 0; k < sizeof UNARY / sizeof UNARY[0]; k++) {
    if (strcmp(UNARY[k].name, op->name))
      continue;
    cf_status s;
    if (nargs > 1 || !UNARY[k].plain)
      s = UNARY[k].with_tuple(&a, nargs > 1 ? &t : NULL, &r, &err);
    else
      s = UNARY[k].plain(&a, &r, &err);
    return layout_result(op, s, &r, &err);
  }
  return 1;
}

/* idx2crd S I: with a shape S (no ':'), CuTe's idx2crd(I, S), colexicographic; with a
 * layout, CuTe's idx2crd(I, shape, stride). */
static int run_idx2crd(const Op *op, char **args)
{
  cf_layout a;
  cf_int_tuple shape, idx, out;
  cf_layout_err err;
  bool is_shape = !strchr(args[0], ':') && cf_tuple_parse(args[0], &shape, &err) == CF_OK;
  if ((!is_shape && !arg_layout(op, args, 0, &a)) || !arg_tuple(op, args, 1, &idx))
    return 2;
  cf_status s = is_shape ? cf_tuple_idx2crd_tuple(&idx, &shape, &out, &err)
                         : cf_layout_idx2crd_tuple(&a, &idx, &out, &err);
  return s == CF_OK ? print_tuple(&out) : failed(op->name, &err);
}

static int run_coords(const Op *op, int nargs, char **args)
{
  (void)nargs;
  cf_layout a, r;
  cf_int_tuple c;
  cf_tuple_int v;
  cf_layout_err err;
  if (!strcmp(op->name, "idx2crd"))
    return run_idx2crd(op, args);
  if (!arg_layout(op, args, 0, &a) || !arg_tuple(op, args, 1, &c))
    return 2;
  if (!strcmp(op->name, "crd2idx"))
    return cf_layout_crd2idx(&a, &c, &v, &err) == CF_OK ? print_int(v) : failed(op->name, &err);
  return layout_result(op, cf_layout_slice(&a, &c, &r, NULL, &err), &r, &err);
}

/* get, select, take, group: a layout and mode indices. */
static int run_modes(const Op *op, int nargs, char **args)
{
  cf_layout a, r;
  cf_layout_err err;
  int idx[LAYOUT_MAX_INDEX_ARGS];
  if (!arg_layout(op, args, 0, &a))
    return 2;
  for (int k = 1; k < nargs; k++)
    if (!arg_int(op, args, k, &idx[k - 1]))
      return 2;
  cf_status s;
  if (!strcmp(op->name, "get"))
    s = cf_layout_get(&a, idx, nargs - 1, &r, &err);
  else if (!strcmp(op->name, "select"))
    s = cf_layout_select(&a, idx, nargs - 1, &r, &err);
  else if (!strcmp(op->name, "take"))
    s = cf_layout_take(&a, idx[0], idx[1], &r, &err);
  else
    s = cf_layout_group(&a, idx[0], idx[1], &r, &err);
  return layout_result(op, s, &r, &err);
}

/* append A [X], prepend A [X], replace A N X. */
static int run_edit(const Op *op, int nargs, char **args)
{
  cf_layout a, x, r;
  cf_layout_err err;
  int n = 0;
  bool replace = !strcmp(op->name, "replace");
  if (!arg_layout(op, args, 0, &a) || (replace && !arg_int(op, args, 1, &n)) ||
      (nargs > 1 + replace && !arg_layout(op, args, 1 + replace, &x)))
    return 2;
  const cf_layout *px = nargs > 1 + replace ? &x : NULL;
  cf_status s = replace ? cf_layout_replace(&a, n, px, &r, &err)
                : !strcmp(op->name, "append") ? cf_layout_append(&a, px, &r, &err)
                                              : cf_layout_prepend(&a, px, &r, &err);
  return layout_result(op, s, &r, &err);
}

/* make_layout_right S: CuTe's make_layout(S, LayoutRight{}). */
static int run_layout_right(const Op *op, int nargs, char **args)
{
  (void)nargs;
  cf_int_tuple shape;
  cf_layout r;
  cf_layout_err err;
  if (!arg_tuple(op, args, 0, &shape))
    return 2;
  return layout_result(op, cf_layout_from_shape(&shape, CF_LAYOUT_RIGHT, &r, &err), &r, &err);
}

static int run_make_layout(const Op *op, int nargs, char **args)
{
  cf_layout parts[LAYOUT_MAX_INDEX_ARGS], r;
  cf_layout_err err;
  for (int k = 0; k < nargs; k++)
    if (!arg_layout(op, args, k, &parts[k]))
      return 2;
  return layout_result(op, cf_layout_concat(parts, nargs, &r, &err), &r, &err);
}

/* svg A, svg-tv TV TILE: sized by a first call, then printed. */
static int run_svg(const Op *op, int nargs, char **args)
{
  (void)nargs;
  cf_layout a;
  cf_int_tuple tile;
  cf_layout_err err;
  bool tv = !strcmp(op->name, "svg-tv");
  if (!arg_layout(op, args, 0, &a) || (tv && !arg_tuple(op, args, 1, &tile)))
    return 2;
  size_t len = 0;
  cf_status s = tv ? cf_layout_svg_tv(&a, &tile, NULL, 0, &len, &err)
                   : cf_layout_svg(&a, NULL, 0, &len, &err);
  if (s != CF_OK)
    return failed(op->name, &err);
  char *buf = malloc(len + 1);
  if (!buf) {
    fprintf(stderr, "cfuser layout: %s: out of memory\n", op->name);
    return 1;
  }
  if (tv)
    cf_layout_svg_tv(&a, &tile, buf, len + 1, NULL, &err);
  else
    cf_layout_svg(&a, buf, len + 1, NULL, &err);
  fputs(buf, stdout);
  free(buf);
  return 0;
}

static int run_binary(const Op *op, int nargs, char **args)
{
  (void)nargs;
  cf_layout_op bop;
  cf_layout a, b, r;
  cf_layout_err err;
  if (!cf_layout_op_from_name(op->name, &bop) || !arg_layout(op, args, 0, &a))
    return 2;
  bool ok = cf_layout_op_takes_tiler(bop) ? arg_tiler(op, args, 1, &b) : arg_layout(op, args, 1, &b);
  if (!ok)
    return 2;
  return layout_result(op, cf_layout_apply(bop, &a, &b, &r, &err), &r, &err);
}

static int run_help(const Op *op, int nargs, char **args)
{
  (void)op, (void)nargs, (void)args;
  usage(stdout);
  return 0;
}

/* ---- the table ----------------------------------------------------------------------- */

#define BINARY(name, what) {name, 2, 2, run_binary, "A T", what}
static const Op OPS[] = {
    {"print", 1, 1, run_inspect, "A", "A as CuTe prints it"},
    {"size", 1, 1, run_inspect, "A", "its size (the number of coordinates)"},
    {"cosize", 1, 1, run_inspect, "A", "its cosize (1 + the largest index)"},
    {"rank", 1, 1, run_inspect, "A", "its rank"},
    {"depth", 1, 1, run_inspect, "A", "its depth"},
    {"shape", 1, 1, run_inspect, "A", "its shape"},
    {"stride", 1, 1, run_inspect, "A", "its stride"},
    {"table", 1, 1, run_table, "A", "A(i) for i = 0 .. size(A)-1"},
    {"crd2idx", 2, 2, run_coords, "A C", "the index of the coordinate C"},
    {"idx2crd", 2, 2, run_coords, "S I", "the coordinate of index I in S (a shape: colex)"},
    {"slice", 2, 2, run_coords, "A C", "the modes of A under the `_` of C"},
    {"get", 1, 1 + LAYOUT_MAX_INDEX_ARGS, run_modes, "A I...", "layout<I...>(A)"},
    {"select", 2, 1 + LAYOUT_MAX_INDEX_ARGS, run_modes, "A I...", "select<I...>(A)"},
    {"take", 3, 3, run_modes, "A B E", "take<B,E>(A)"},
    {"group", 3, 3, run_modes, "A B E", "group<B,E>(A)"},
    {"flatten", 1, 1, run_unary, "A", "flatten(A)"},
    {"append", 1, 2, run_edit, "A [X]", "X (default _1:_0) as a new last mode"},
    {"prepend", 1, 2, run_edit, "A [X]", "X (default _1:_0) as a new first mode"},
    {"replace", 3, 3, run_edit, "A N X", "X as mode N"},
    {"make_layout", 1, LAYOUT_MAX_INDEX_ARGS, run_make_layout, "A...", "the layout (A,...)"},
    {"make_layout_right", 1, 1, run_layout_right, "S", "make_layout(S, LayoutRight{})"},
    {"make_layout_like", 1, 1, run_unary, "A", "compact, strides ordered like A's"},
    {"coalesce", 1, 2, run_unary, "A [P]", "coalesce (by mode at the terminals of P)"},
    {"filter", 1, 2, run_unary, "A [P]", "coalesce without stride-0 and size-1 modes"},
    {"complement", 1, 2, run_unary, "A [M]", "complement up to the cotarget M (default cosize)"},
    {"right_inverse", 1, 1, run_unary, "A", "right inverse"},
    {"left_inverse", 1, 1, run_unary, "A", "left inverse"},
    {"composition", 2, 2, run_binary, "A T", "A o T (T a layout or a tiler)"},
    BINARY("logical_divide", "divides by the tiler T"),
    BINARY("zipped_divide", NULL),
    BINARY("tiled_divide", NULL),
    BINARY("flat_divide", NULL),
    BINARY("logical_product", "products by the tiler T"),
    BINARY("zipped_product", NULL),
    BINARY("tiled_product", NULL),
    BINARY("flat_product", NULL),
    {"blocked_product", 2, 2, run_binary, "A B", "rank-wise products of two layouts"},
    {"raked_product", 2, 2, run_binary, "A B", NULL},
    {"svg", 1, 1, run_svg, "A", "an SVG picture of A (rank 1 or 2)"},
    {"svg-tv", 2, 2, run_svg, "TV M", "an SVG picture of a TV layout over the tile shape M"},
    {"help", 0, 0, run_help, "", "this text"},
};
#undef BINARY

static void print_usage_line(FILE *f, const char *line, const char *what)
{
  if (strlen(line) > 30)
    fprintf(f, "  %s\n  %-30s %s\n", line, "", what);
  else
    fprintf(f, "  %-30s %s\n", line, what);
}

static void usage(FILE *f)
{
  fputs("usage: cfuser layout OP ARG...\n\n", f);
  char line[96] = "";
  const char *what = "";
  for (size_t k = 0; k < sizeof OPS / sizeof OPS[0]; k++) {
    char one[48];
    snprintf(one, sizeof one, "%s%s%s", OPS[k].name, OPS[k].args[0] ? " " : "", OPS[k].args);
    if (OPS[k].what) { /* a new line; the ops after it without a text join it */
      if (line[0])
        print_usage_line(f, line, what);
      snprintf(line, sizeof line, "%s", one);
      what = OPS[k].what;
    } else {
      size_t n = strlen(line);
      snprintf(line + n, sizeof line - n, ", %s", OPS[k].name);
    }
  }
  print_usage_line(f, line, what);
  fputs("\n"
        "ARGs are CuTe notation: _4 is static, 4 dynamic; a layout is Shape:Stride such as\n"
        "(_4,(3,_6)):(_1,(4,_12)); a bare shape (4,8) is its column-major layout, or, where a\n"
        "tiler T is expected, the tiler <4,8>; a tiler is <L0,L1,...> such as <3:4,8:2>, or\n"
        "CuTe's printed form (_3:_4,_8:_2), and `_` in a tiler keeps that mode whole.\n"
        "A coordinate C may contain `_`; I, N, B, E are integers.\n",
        f);
}

int cf_tool_layout(int argc, char **argv)
{
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const char *name = argv[1];
  int nargs = argc - 2;
  if (!strcmp(name, "--help") || !strcmp(name, "-h"))
    name = "help";
  for (size_t k = 0; k < sizeof OPS / sizeof OPS[0]; k++) {
    const Op *op = &OPS[k];
    if (strcmp(op->name, name))
      continue;
    if (nargs < op->min_args || nargs > op->max_args) {
      if (op->min_args == op->max_args)
        fprintf(stderr, "cfuser layout: %s takes %d argument%s, got %d\n", name, op->min_args,
                op->min_args == 1 ? "" : "s", nargs);
      else
        fprintf(stderr, "cfuser layout: %s takes %d %s %d arguments, got %d\n", name,
                op->min_args, op->max_args == op->min_args + 1 ? "or" : "to", op->max_args,
                nargs);
      return 2;
    }
    return op->run(op, nargs, argv + 2);
  }
  fprintf(stderr, "cfuser layout: unknown operation '%s'\n\n", name);
  usage(stderr);
  return 2;
}
