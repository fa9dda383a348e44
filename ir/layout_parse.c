/* ir/layout_parse.c: CuTe's notation into trees, with errors that point at the offset.
 *
 *   tiler  := '<' tiler (',' tiler)* '>' | item
 *   item   := tuple (':' tuple)?            a layout, or a bare shape
 *   tuple  := '(' (tuple (',' tuple)*)? ')' | int
 *   int    := '_'? '-'? digits | '_'        `_4` static, `4` dynamic, `_` a wildcard
 *
 * Key decision: one grammar for the three things users type (IntTuples, layouts,
 * tilers); the kind of the parse only decides what a bare shape means (make_layout(S) for
 * a layout, the by-mode tiler <S0,S1,...> for a tiler) and where `_` is allowed (only in
 * coordinates). Whitespace may separate any two tokens, so the documents' `<3:4, 8:2>`
 * parses as written. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "ir/layout_internal.h"

typedef struct Parser {
  const char *text;
  int pos;
  IrParseKind kind;
  cf_layout_err *e;
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
  ir_layout_fail(p->e, CF_ERR_INVALID_ARGUMENT, "expected %s at offset %d in \"%s\" (found %s)",
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
  int start = p->pos;
  int64_t v = 0;
  while (isdigit((unsigned char)p->text[p->pos])) {
    int digit = p->text[p->pos++] - '0';
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, digit, &v)) {
      ir_layout_fail(p->e, CF_ERR_INVALID_ARGUMENT,
                     "integer at offset %d in \"%s\" is too large", start, p->text);
      return false;
    }
  }
  *out = neg ? -v : v;
  return true;
}

/* An integer leaf; a shape (positive) when `positive`. */
static void parse_int(Parser *p, IrBuild *b, bool positive)
{
  skip_ws(p);
  int start = p->pos;
  bool is_static = p->text[p->pos] == '_';
  if (is_static)
    p->pos++;
  char c = p->text[p->pos];
  if (is_static && c != '-' && !isdigit((unsigned char)c)) {
    if (p->kind != IR_PARSE_TUPLE) {
      p->pos = start;
      fail_at(p, "an integer ('_' alone is only allowed in coordinates)");
      return;
    }
    ir_layout_build_int(b, ir_layout_s(0), CF_TUPLE_NODE_UNDERSCORE);
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
    ir_layout_fail(p->e, CF_ERR_INVALID_ARGUMENT,
                   "shape %lld at offset %d in \"%s\" is not positive", (long long)v, start,
                   p->text);
    return;
  }
  ir_layout_build_int(b, is_static ? ir_layout_s(v) : ir_layout_d(v), 0);
}

static void parse_tuple(Parser *p, IrBuild *b, bool positive)
{
  if (!ir_layout_ok(p->e))
    return;
  if (!accept(p, '(')) {
    parse_int(p, b, positive);
    return;
  }
  ir_layout_build_open(b, 0);
  if (!accept(p, ')')) {
    do
      parse_tuple(p, b, positive);
    while (ir_layout_ok(p->e) && accept(p, ','));
    if (ir_layout_ok(p->e) && !accept(p, ')'))
      fail_at(p, "',' or ')'");
  }
  ir_layout_build_close(b);
}

/* A layout `S:D`, or a bare shape S: make_layout(S), or the tiler <S...> in a tiler. */
static void parse_item(Parser *p, IrBuild *out)
{
  int start = p->pos;
  cf_tuple_tree s, d, l;
  IrBuild bs, bd;
  ir_layout_build_init(&bs, &s, p->e);
  parse_tuple(p, &bs, true);
  if (!ir_layout_ok(p->e))
    return;
  if (accept(p, ':')) {
    int stride_at = p->pos;
    ir_layout_build_init(&bd, &d, p->e);
    parse_tuple(p, &bd, false);
    if (!ir_layout_ok(p->e))
      return;
    if (!ir_layout_congruent(&s, 0, &d, 0)) {
      ir_layout_fail(p->e, CF_ERR_INVALID_ARGUMENT,
                     "shape and stride are not congruent at offsets %d and %d in \"%s\"", start,
                     stride_at, p->text);
      return;
    }
    ir_layout_zip(&s, &d, &l);
    ir_layout_build_copy(out, &l, 0);
  } else if (p->kind == IR_PARSE_TILER) {
    ir_layout_build_shape_tiler(out, &s, 0);
  } else {
    ir_layout_compact(&s, CF_LAYOUT_LEFT, ir_layout_s(1), p->e);
    ir_layout_build_copy(out, &s, 0);
  }
}

static void parse_tiler(Parser *p, IrBuild *b)
{
  if (!ir_layout_ok(p->e))
    return;
  if (!accept(p, '<')) {
    parse_item(p, b);
    return;
  }
  ir_layout_build_open(b, CF_TUPLE_NODE_TILER);
  do
    parse_tiler(p, b);
  while (ir_layout_ok(p->e) && accept(p, ','));
  if (ir_layout_ok(p->e) && !accept(p, '>'))
    fail_at(p, "',' or '>'");
  ir_layout_build_close(b);
}

void ir_layout_parse(const char *text, IrParseKind kind, cf_tuple_tree *out, cf_layout_err *e)
{
  if (!text) {
    ir_layout_fail(e, CF_ERR_INVALID_ARGUMENT, "no text to parse");
    return;
  }
  Parser p = {text, 0, kind, e};
  IrBuild b;
  ir_layout_build_init(&b, out, e);
  skip_ws(&p);
  if (kind == IR_PARSE_TUPLE)
    parse_tuple(&p, &b, false);
  else if (kind == IR_PARSE_TILER)
    parse_tiler(&p, &b);
  else if (text[p.pos] == '<')
    ir_layout_fail(e, CF_ERR_INVALID_ARGUMENT,
                   "expected a layout, found a tiler at offset %d in \"%s\"", p.pos, text);
  else
    parse_item(&p, &b);
  skip_ws(&p);
  if (ir_layout_ok(e) && text[p.pos] != '\0')
    fail_at(&p, "end of text");
}

CF_API cf_status cf_layout_parse(const char *text, cf_layout *out, cf_layout_err *err)
{
  cf_layout_err local, *e = ir_layout_err_begin(err, &local);
  cf_tuple_tree t;
  ir_layout_parse(text, IR_PARSE_LAYOUT, &t, e);
  return ir_layout_finish_layout(e, &t, out);
}

CF_API cf_status cf_layout_parse_tiler(const char *text, cf_layout *out, cf_layout_err *err)
{
  cf_layout_err local, *e = ir_layout_err_begin(err, &local);
  cf_tuple_tree t;
  ir_layout_parse(text, IR_PARSE_TILER, &t, e);
  return ir_layout_finish_layout(e, &t, out);
}
