/* layout/layout_print.c: CuTe's notation out of trees: `_4` for a static integer, `4` for a
 * dynamic one, `(a,b)` for tuples, `Shape:Stride` for layouts, and `<L0,L1>` for tilers.
 *
 * Key decision: printing writes into a bounded buffer with snprintf's contract (the full
 * length is always returned, the text is truncated to fit), so callers can size a
 * buffer, and CF_LAYOUT_TEXT_MAX is enough for anything a tree of CF_LAYOUT_MAX_NODES can
 * hold. A tiler's elements print as layouts (`_` as itself); an element written as a bare integer n
 * (meaning n:_1) prints as n, so a printed tiler parses back to the same tiler. */
#include <stdarg.h>
#include <stdio.h>

#include "layout/layout_internal.h"

void lay_text_printf(LayText *x, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  size_t room = x->len < x->cap ? x->cap - x->len : 0;
  int n = vsnprintf(room ? x->buf + x->len : NULL, room, fmt, ap);
  va_end(ap);
  if (n > 0)
    x->len += (size_t)n;
}

static void print_int(LayText *x, LayInt v, uint8_t flags)
{
  if (flags & CF_TUPLE_NODE_UNDERSCORE)
    lay_text_printf(x, "_");
  else
    lay_text_printf(x, v.is_static ? "_%lld" : "%lld", (long long)v.value);
}

void lay_print_tuple(LayText *x, const cf_tuple_tree *t, int i, int which)
{
  if (lay_is_leaf(t, i)) {
    print_int(x, lay_leaf(t, i, which), t->node[i].flags);
    return;
  }
  lay_text_printf(x, "(");
  for (int k = 0; k < t->node[i].arity; k++) {
    if (k > 0)
      lay_text_printf(x, ",");
    lay_print_tuple(x, t, lay_child(t, i, k), which);
  }
  lay_text_printf(x, ")");
}

void lay_print_layout(LayText *x, const cf_tuple_tree *t, int i)
{
  if (lay_is_underscore(t, i)) {
    lay_text_printf(x, "_");
    return;
  }
  if (t->node[i].flags & CF_TUPLE_NODE_SHAPE) {
    print_int(x, lay_leaf(t, i, 0), 0);
    return;
  }
  if (!(t->node[i].flags & CF_TUPLE_NODE_TILER)) {
    lay_print_tuple(x, t, i, 0);
    lay_text_printf(x, ":");
    lay_print_tuple(x, t, i, 1);
    return;
  }
  lay_text_printf(x, "<");
  for (int k = 0; k < t->node[i].arity; k++) {
    if (k > 0)
      lay_text_printf(x, ",");
    lay_print_layout(x, t, lay_child(t, i, k));
  }
  lay_text_printf(x, ">");
}

CF_API int cf_layout_snprint(char *buf, size_t n, const cf_layout *l)
{
  LayText x = {buf, n, 0};
  if (n > 0)
    buf[0] = '\0';
  if (l->tree.count > 0)
    lay_print_layout(&x, &l->tree, 0);
  return (int)x.len;
}
