/* layout/layout_parse.c: CuTe's notation into trees, with errors that point at the offset.
 *
 *   tiler  := '<' tilers? '>' | item | '(' tilers ')' | '_'    tilers := tiler (',' tiler)*
 *   item   := tuple (':' tuple)?            a layout, or a bare shape
 *   tuple  := '(' (tuple (',' tuple)*)? ')' | int
 *   int    := '_'? '-'? digits | '_'        `_4` static, `4` dynamic, `_` a wildcard
 *
 * Key decision: one grammar for the three things users type (IntTuples, layouts,
 * tilers); the kind of the parse only decides what a bare shape means (make_layout(S) for
 * a layout, the by-mode tiler <S0,S1,...> for a tiler) and where `_` is allowed (in
 * coordinates, and as a whole tiler element: CuTe's "keep this mode"). A tiler may also
 * be written as CuTe prints one, a tuple of tilers `(_3:_1,_2)`: where a tiler is
 * expected, a '(' is read as an item first and, when that fails, as such a tuple; the
 * error reported is the one of the attempt that got further. Each level tries at most
 * twice and nesting is bounded, so parsing stays linear in practice. Offsets are size_t:
 * any length of text is safe. Whitespace may separate any two tokens, so the documents'
 * `<3:4, 8:2>` parses as written. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "layout/layout_internal.h"

typedef struct Parser {
  const char *text;
  size_t pos;
  LayParseKind kind;
  cf_layout_err *e;
  int depth; /* of tiler tuples, which parse_paren_tiler does not build in one tree */
} Parser;

static void skip_ws(Parser *p)
{
  while (p->text[p->pos] && isspace((unsigned char)p->text[p->pos]))
    p->pos++;
}

static void fail_at(Parser *p, const char *what)
{
  char found[32];
  char c = p->text[p->pos];
  if (c == '\0')
    snprintf(found, sizeof found, "end of text");
  else
    snprintf(found, sizeof found, "'%c'", c);
  lay_fail(p->e, CF_ERR_INVALID_ARGUMENT, "expected %s at offset %zu in \"%s\" (found %s)",
                 what, p->pos, p->text, found);
}

static bool accept(Parser *p, char c)
{
  skip_ws(p);
  if (p->text[p->pos] != c)
    return false;
  p->pos++;
  return true;
}

static bool parse_digits(Parser *p, int64_t *out)
{
  bool neg = p->text[p->pos] == '-';
  if (neg)
    p->pos++;
  if (!isdigit((unsigned char)p->text[p->pos])) {
    fail_at(p, "a digit");
    return false;
  }
  size_t start = p->pos;
  int64_t v = 0;
  while (isdigit((unsigned char)p->text[p->pos])) {
    int digit = p->text[p->pos++] - '0';
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, digit, &v)) {
      lay_fail(p->e, CF_ERR_INVALID_ARGUMENT,
                     "integer at offset %zu in \"%s\" is too large", start, p->text);
      return false;
    }
  }
  *out = neg ? -v : v;
  return true;
}

/* An integer leaf; a shape (positive) when `positive`. */
static void parse_int(Parser *p, LayBuild *b, bool positive)
{
  skip_ws(p);
  size_t start = p->pos;
  bool is_static = p->text[p->pos] == '_';
  if (is_static)
    p->pos++;
  char c = p->text[p->pos];
  if (is_static && c != '-' && !isdigit((unsigned char)c)) {
    if (p->kind != LAY_PARSE_TUPLE) {
      p->pos = start;
      fail_at(p, "an integer ('_' alone is only allowed in coordinates)");
      return;
    }
    lay_build_int(b, lay_s(0), CF_TUPLE_NODE_UNDERSCORE);
    return;
  }
  if (!is_static && c != '-' && !isdigit((unsigned char)c)) {
    fail_at(p, "an integer or '('");
    return;
  }
  int64_t v;
  if (!parse_digits(p, &v))
    return;
  if (positive && v < 1) {
    lay_fail(p->e, CF_ERR_INVALID_ARGUMENT,
                   "shape %lld at offset %zu in \"%s\" is not positive", (long long)v, start,
                   p->text);
    return;
  }
  lay_build_int(b, is_static ? lay_s(v) : lay_d(v), 0);
}

static void parse_tuple(Parser *p, LayBuild *b, bool positive)
{
  if (!lay_ok(p->e))
    return;
  if (!accept(p, '(')) {
    parse_int(p, b, positive);
    return;
  }
  lay_build_open(b, 0);
  if (!accept(p, ')')) {
    do
      parse_tuple(p, b, positive);
    while (lay_ok(p->e) && accept(p, ','));
    if (lay_ok(p->e) && !accept(p, ')'))
      fail_at(p, "',' or ')'");
  }
  lay_build_close(b);
}

/* A layout `S:D`, or a bare shape S: make_layout(S), or the tiler <S...> in a tiler. */
static void parse_item(Parser *p, LayBuild *out)
{
  size_t start = p->pos;
  cf_tuple_tree s, d, l;
  LayBuild bs, bd;
  lay_build_init(&bs, &s, p->e);
  parse_tuple(p, &bs, true);
  if (!lay_ok(p->e))
    return;
  if (accept(p, ':')) {
    size_t stride_at = p->pos;
    lay_build_init(&bd, &d, p->e);
    parse_tuple(p, &bd, false);
    if (!lay_ok(p->e))
      return;
    if (!lay_congruent(&s, 0, &d, 0)) {
      lay_fail(p->e, CF_ERR_INVALID_ARGUMENT,
                     "shape and stride are not congruent at offsets %zu and %zu in \"%s\"", start,
                     stride_at, p->text);
      return;
    }
    lay_zip(&s, &d, &l);
    lay_build_copy(out, &l, 0);
  } else if (p->kind == LAY_PARSE_TILER) {
    lay_build_shape_tiler(out, &s, 0);
  } else {
    lay_compact(&s, CF_LAYOUT_LEFT, lay_s(1), p->e);
    lay_build_copy(out, &s, 0);
  }
}

static void parse_tiler(Parser *p, LayBuild *b);

/* The elements of a by-mode tiler up to the closing bracket. */
static void parse_tiler_list(Parser *p, LayBuild *b, char close)
{
  if (p->depth++ >= LAY_MAX_DEPTH) {
    lay_fail(p->e, CF_ERR_UNSUPPORTED, "tilers nested deeper than %d levels at offset %zu in "
             "\"%s\"", LAY_MAX_DEPTH, p->pos, p->text);
    return;
  }
  lay_build_open(b, CF_TUPLE_NODE_TILER);
  if (!accept(p, close)) { /* `<>` is the empty tiler, as `()` is the empty shape */
    do
      parse_tiler(p, b);
    while (lay_ok(p->e) && accept(p, ','));
    if (lay_ok(p->e) && !accept(p, close))
      fail_at(p, close == '>' ? "',' or '>'" : "',' or ')'");
  }
  lay_build_close(b);
  p->depth--;
}

/* Whether the next token is a `_` standing alone (not the `_` of a static integer). */
static bool at_underscore(Parser *p)
{
  skip_ws(p);
  char c = p->text[p->pos], next = c ? p->text[p->pos + 1] : '\0';
  return c == '_' && next != '-' && !isdigit((unsigned char)next);
}

/* At a '(': an item, else a tuple of tilers; on failure of both, the error of the attempt
 * that got further. */
static void parse_paren_tiler(Parser *p, LayBuild *b)
{
  size_t start = p->pos;
  cf_layout_err item_err = {CF_OK, ""}, list_err = {CF_OK, ""};
  cf_tuple_tree item_tree;
  LayBuild ib;
  lay_build_init(&ib, &item_tree, &item_err);
  Parser q = {p->text, start, p->kind, &item_err, p->depth};
  parse_item(&q, &ib);
  if (lay_ok(&item_err)) {
    p->pos = q.pos;
    lay_build_copy(b, &item_tree, 0);
    return;
  }
  size_t item_end = q.pos;
  cf_tuple_tree list_tree;
  LayBuild lb;
  lay_build_init(&lb, &list_tree, &list_err);
  Parser r = {p->text, start, p->kind, &list_err, p->depth};
  accept(&r, '(');
  parse_tiler_list(&r, &lb, ')');
  if (lay_ok(&list_err)) {
    p->pos = r.pos;
    lay_build_copy(b, &list_tree, 0);
    return;
  }
  const cf_layout_err *worse = r.pos > item_end ? &list_err : &item_err;
  p->pos = r.pos > item_end ? r.pos : item_end;
  lay_fail(p->e, worse->status, "%s", worse->message);
}

static void parse_tiler(Parser *p, LayBuild *b)
{
  if (!lay_ok(p->e))
    return;
  if (accept(p, '<')) {
    parse_tiler_list(p, b, '>');
  } else if (at_underscore(p)) {
    p->pos++;
    lay_build_leaf(b, lay_s(0), lay_s(0), CF_TUPLE_NODE_UNDERSCORE);
  } else if (p->text[p->pos] == '(') {
    parse_paren_tiler(p, b);
  } else {
    parse_item(p, b);
  }
}

void lay_parse(const char *text, LayParseKind kind, cf_tuple_tree *out, cf_layout_err *e)
{
  if (!text) {
    lay_fail(e, CF_ERR_INVALID_ARGUMENT, "no text to parse");
    return;
  }
  Parser p = {text, 0, kind, e, 0};
  LayBuild b;
  lay_build_init(&b, out, e);
  skip_ws(&p);
  if (kind == LAY_PARSE_TUPLE)
    parse_tuple(&p, &b, false);
  else if (kind == LAY_PARSE_TILER)
    parse_tiler(&p, &b);
  else if (text[p.pos] == '<')
    lay_fail(e, CF_ERR_INVALID_ARGUMENT,
                   "expected a layout, found a tiler at offset %zu in \"%s\"", p.pos, text);
  else
    parse_item(&p, &b);
  skip_ws(&p);
  if (lay_ok(e) && text[p.pos] != '\0')
    fail_at(&p, "end of text");
}

CF_API cf_status cf_layout_parse(const char *text, cf_layout *out, cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_tuple_tree t;
  lay_parse(text, LAY_PARSE_LAYOUT, &t, e);
  return lay_finish_layout(e, &t, out);
}

CF_API cf_status cf_layout_parse_tiler(const char *text, cf_layout *out, cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_tuple_tree t;
  lay_parse(text, LAY_PARSE_TILER, &t, e);
  return lay_finish_layout(e, &t, out);
}
