/* layout/layout_tuple.c: the foundation of the layout module: errors, integers with CuTe's
 * staticness rules, preorder trees and their builder, and the public IntTuple API.
 *
 * Key decision: staticness is decided here, once, operation by operation, exactly as
 * CuTe's integral_constant operators decide it (static op static is static; a static 0
 * factor or dividend, or a static +-1 divisor of a remainder, makes the result static;
 * anything else with a dynamic operand is dynamic). The algorithms elsewhere then mirror
 * CuTe's steps and get CuTe's printed results without any case analysis of their own.
 * All arithmetic is checked: an overflow is an error, never undefined behaviour. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "layout/layout_internal.h"

/* ---- errors ------------------------------------------------------------------------ */

cf_layout_err *lay_err_begin(cf_layout_err *err, cf_layout_err *local)
{
  cf_layout_err *e = err ? err : local;
  e->status = CF_OK;
  e->message[0] = '\0';
  return e;
}

void lay_fail(cf_layout_err *e, cf_status s, const char *fmt, ...)
{
  if (e->status != CF_OK)
    return;
  e->status = s;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->message, sizeof e->message, fmt, ap);
  va_end(ap);
}

void lay_err_context(cf_layout_err *e, const char *what)
{
  size_t n = strlen(what), cap = sizeof e->message;
  if (lay_ok(e) || n + 3 > cap || (strncmp(e->message, what, n) == 0 && e->message[n] == ':'))
    return;
  memmove(e->message + n + 2, e->message, cap - n - 2); /* truncates a long message */
  e->message[cap - 1] = '\0';
  memcpy(e->message, what, n);
  e->message[n] = ':';
  e->message[n + 1] = ' ';
}

/* A layout that leaves the module must have positive shapes and a size and cosize that
 * fit in int64_t: every later size or cosize computation is then overflow-free. */
static void check_layout_result(const cf_tuple_tree *t, cf_layout_err *e)
{
  for (int i = 0; i < t->count; i++)
    if (lay_is_leaf(t, i) && !(t->node[i].flags & CF_TUPLE_NODE_UNDERSCORE) &&
        t->node[i].v[0] < 1) {
      lay_fail(e, CF_ERR_INVALID_ARGUMENT, "shape %lld is not positive",
                     (long long)t->node[i].v[0]);
      return;
    }
  lay_product(t, 0, 0, e);
  lay_cosize_at(t, 0, e);
}

cf_status lay_finish_layout(cf_layout_err *e, const cf_tuple_tree *tree, cf_layout *out)
{
  if (lay_ok(e))
    check_layout_result(tree, e);
  if (lay_ok(e))
    out->tree = *tree;
  return e->status;
}

cf_status lay_finish_tuple(cf_layout_err *e, const cf_tuple_tree *tree, cf_int_tuple *out)
{
  if (lay_ok(e))
    out->tree = *tree;
  return e->status;
}

bool lay_require_layout(const cf_tuple_tree *l, const char *what, cf_layout_err *e)
{
  if (!lay_ok(e))
    return false;
  if (l->count == 0) {
    lay_fail(e, CF_ERR_INVALID_ARGUMENT, "%s: empty layout", what);
    return false;
  }
  if (lay_is_tiler_node(l, 0)) {
    char text[CF_LAYOUT_TEXT_MAX];
    LayText x = {text, sizeof text, 0};
    lay_print_layout(&x, l, 0);
    lay_fail(e, CF_ERR_INVALID_ARGUMENT, "%s: expected a layout, got the tiler %s", what,
                   text);
    return false;
  }
  return true;
}

/* ---- integers ---------------------------------------------------------------------- */

static LayInt overflow(cf_layout_err *e, const char *op, LayInt a, LayInt b)
{
  lay_fail(e, CF_ERR_INVALID_ARGUMENT, "integer overflow in %lld %s %lld",
                 (long long)a.value, op, (long long)b.value);
  return lay_d(1);
}

LayInt lay_add(LayInt a, LayInt b, cf_layout_err *e)
{
  int64_t r;
  if (__builtin_add_overflow(a.value, b.value, &r))
    return overflow(e, "+", a, b);
  return (LayInt){r, a.is_static && b.is_static};
}

LayInt lay_sub(LayInt a, LayInt b, cf_layout_err *e)
{
  int64_t r;
  if (__builtin_sub_overflow(a.value, b.value, &r))
    return overflow(e, "-", a, b);
  return (LayInt){r, a.is_static && b.is_static};
}

LayInt lay_mul(LayInt a, LayInt b, cf_layout_err *e)
{
  if (lay_is_const(a, 0) || lay_is_const(b, 0))
    return lay_s(0);
  int64_t r;
  if (__builtin_mul_overflow(a.value, b.value, &r))
    return overflow(e, "*", a, b);
  return (LayInt){r, a.is_static && b.is_static};
}

static bool bad_divisor(LayInt a, LayInt b, const char *op, cf_layout_err *e)
{
  if (b.value == 0) {
    lay_fail(e, CF_ERR_INVALID_ARGUMENT, "division by zero in %lld %s 0",
                   (long long)a.value, op);
    return true;
  }
  if (b.value == -1 && a.value == INT64_MIN) {
    overflow(e, op, a, b);
    return true;
  }
  return false;
}

LayInt lay_div(LayInt a, LayInt b, cf_layout_err *e)
{
  if (bad_divisor(a, b, "/", e))
    return lay_d(1);
  if (lay_is_const(a, 0))
    return lay_s(0);
  return (LayInt){a.value / b.value, a.is_static && b.is_static};
}

LayInt lay_mod(LayInt a, LayInt b, cf_layout_err *e)
{
  if (bad_divisor(a, b, "%", e))
    return lay_d(0);
  if (lay_is_const(a, 0) || lay_is_const(b, 1) || lay_is_const(b, -1))
    return lay_s(0);
  return (LayInt){a.value % b.value, a.is_static && b.is_static};
}

LayInt lay_min(LayInt a, LayInt b)
{
  return (LayInt){a.value < b.value ? a.value : b.value, a.is_static && b.is_static};
}

/* CuTe's ceil_div(a, b) = (a + b - _1) / b, staticness included. */
LayInt lay_ceil_div(LayInt a, LayInt b, cf_layout_err *e)
{
  return lay_div(lay_sub(lay_add(a, b, e), lay_s(1), e), b, e);
}

LayInt lay_abs(LayInt a, cf_layout_err *e)
{
  if (a.value == INT64_MIN)
    return overflow(e, "abs", a, a);
  return (LayInt){a.value < 0 ? -a.value : a.value, a.is_static};
}

LayInt lay_signum(LayInt a)
{
  return (LayInt){(a.value > 0) - (a.value < 0), a.is_static};
}

/* ---- trees ------------------------------------------------------------------------- */

int lay_rank_at(const cf_tuple_tree *t, int i)
{
  return lay_is_leaf(t, i) ? 1 : t->node[i].arity;
}

int lay_child(const cf_tuple_tree *t, int i, int k)
{
  if (lay_is_leaf(t, i))
    return k == 0 ? i : -1;
  if (k < 0 || k >= t->node[i].arity)
    return -1;
  int c = i + 1;
  while (k-- > 0)
    c += t->node[c].span;
  return c;
}

int lay_depth_at(const cf_tuple_tree *t, int i)
{
  if (lay_is_leaf(t, i))
    return 0;
  int d = 0;
  for (int k = 0; k < t->node[i].arity; k++) {
    int dk = lay_depth_at(t, lay_child(t, i, k));
    d = dk > d ? dk : d;
  }
  return d + 1;
}

LayInt lay_product(const cf_tuple_tree *t, int i, int which, cf_layout_err *e)
{
  LayInt p = lay_s(1);
  for (int j = i; j < i + t->node[i].span; j++)
    if (lay_is_leaf(t, j))
      p = lay_mul(p, lay_leaf(t, j, which), e);
  return p;
}

/* CuTe's cosize: size(coshape) with coshape = inner_product(shape - _1, |stride|) + _1. */
LayInt lay_cosize_at(const cf_tuple_tree *t, int i, cf_layout_err *e)
{
  LayInt sum = lay_s(0);
  for (int j = i; j < i + t->node[i].span; j++) {
    if (!lay_is_leaf(t, j))
      continue;
    LayInt s1 = lay_sub(lay_leaf(t, j, 0), lay_s(1), e);
    LayInt term = lay_mul(s1, lay_abs(lay_leaf(t, j, 1), e), e);
    sum = lay_add(sum, term, e);
  }
  return lay_add(sum, lay_s(1), e);
}

bool lay_congruent(const cf_tuple_tree *a, int ia, const cf_tuple_tree *b, int ib)
{
  if (a->node[ia].span != b->node[ib].span)
    return false;
  for (int k = 0; k < a->node[ia].span; k++)
    if (a->node[ia + k].arity != b->node[ib + k].arity)
      return false;
  return true;
}

/* ---- building trees ---------------------------------------------------------------- */

void lay_build_init(LayBuild *b, cf_tuple_tree *t, cf_layout_err *e)
{
  b->t = t;
  b->depth = 0;
  b->e = e;
  t->count = 0;
}

/* Claims the next node for a new element of the innermost open tuple. */
static cf_tuple_node *add_node(LayBuild *b)
{
  if (!lay_ok(b->e))
    return NULL;
  if (b->t->count >= CF_LAYOUT_MAX_NODES) {
    lay_fail(b->e, CF_ERR_UNSUPPORTED, "result too large: more than %d nodes",
                   CF_LAYOUT_MAX_NODES);
    return NULL;
  }
  if (b->depth > 0)
    b->t->node[b->open[b->depth - 1]].arity++;
  cf_tuple_node *n = &b->t->node[b->t->count++];
  memset(n, 0, sizeof *n);
  n->span = 1;
  return n;
}

void lay_build_open(LayBuild *b, uint8_t flags)
{
  if (b->depth >= LAY_MAX_DEPTH) {
    lay_fail(b->e, CF_ERR_UNSUPPORTED, "tuples nested deeper than %d levels",
                   LAY_MAX_DEPTH);
    return;
  }
  cf_tuple_node *n = add_node(b);
  if (!n)
    return;
  n->flags = flags;
  b->open[b->depth++] = b->t->count - 1;
}

void lay_build_close(LayBuild *b)
{
  if (!lay_ok(b->e) || b->depth == 0)
    return;
  int i = b->open[--b->depth];
  b->t->node[i].span = (uint16_t)(b->t->count - i);
}

void lay_build_leaf(LayBuild *b, LayInt s, LayInt d, uint8_t flags)
{
  cf_tuple_node *n = add_node(b);
  if (!n)
    return;
  n->arity = -1;
  n->v[0] = s.value;
  n->v[1] = d.value;
  n->flags = (uint8_t)(flags | (s.is_static ? CF_TUPLE_NODE_STATIC0 : 0) |
                       (d.is_static ? CF_TUPLE_NODE_STATIC1 : 0));
}

void lay_build_int(LayBuild *b, LayInt v, uint8_t flags)
{
  lay_build_leaf(b, v, lay_d(0), flags);
}

/* After an error the source may be a tree that was never built: copy nothing. */
void lay_build_copy(LayBuild *b, const cf_tuple_tree *src, int i)
{
  if (!lay_ok(b->e))
    return;
  if (lay_is_leaf(src, i)) {
    cf_tuple_node *n = add_node(b);
    if (n)
      *n = src->node[i];
    return;
  }
  lay_build_open(b, src->node[i].flags);
  for (int k = 0; k < src->node[i].arity; k++)
    lay_build_copy(b, src, lay_child(src, i, k));
  lay_build_close(b);
}

void lay_build_splice(LayBuild *b, const cf_tuple_tree *src, int i)
{
  for (int k = 0; k < lay_rank_at(src, i); k++)
    lay_build_copy(b, src, lay_child(src, i, k));
}

/* ---- flat mode lists --------------------------------------------------------------- */

void lay_flat_init(LayFlat *f)
{
  f->n = 0;
  f->tuple = true;
}

void lay_flat_push(LayFlat *f, LayInt s, LayInt d, cf_layout_err *e)
{
  if (f->n >= CF_LAYOUT_MAX_NODES) {
    lay_fail(e, CF_ERR_UNSUPPORTED, "result too large: more than %d modes",
                   CF_LAYOUT_MAX_NODES);
    return;
  }
  f->s[f->n] = s;
  f->d[f->n] = d;
  f->n++;
}

void lay_flat_remove(LayFlat *f, int k)
{
  for (int j = k; j + 1 < f->n; j++) {
    f->s[j] = f->s[j + 1];
    f->d[j] = f->d[j + 1];
  }
  f->n--;
}

void lay_flat_of(const cf_tuple_tree *t, int i, LayFlat *f, cf_layout_err *e)
{
  lay_flat_init(f);
  f->tuple = !lay_is_leaf(t, i);
  for (int j = i; j < i + t->node[i].span; j++)
    if (lay_is_leaf(t, j))
      lay_flat_push(f, lay_leaf(t, j, 0), lay_leaf(t, j, 1), e);
}

void lay_build_flat(LayBuild *b, const LayFlat *f)
{
  if (!f->tuple && f->n == 1) {
    lay_build_leaf(b, f->s[0], f->d[0], 0);
    return;
  }
  lay_build_open(b, 0);
  for (int k = 0; k < f->n; k++)
    lay_build_leaf(b, f->s[k], f->d[k], 0);
  lay_build_close(b);
}

void lay_flat_to_tree(const LayFlat *f, cf_tuple_tree *out, cf_layout_err *e)
{
  LayBuild b;
  lay_build_init(&b, out, e);
  lay_build_flat(&b, f);
}

/* ---- the public IntTuple API ------------------------------------------------------- */

CF_API cf_tuple_int cf_tuple_static(int64_t v) { return lay_s(v); }
CF_API cf_tuple_int cf_tuple_dynamic(int64_t v) { return lay_d(v); }

static cf_int_tuple leaf_tuple(LayInt v, uint8_t flags)
{
  cf_int_tuple t;
  cf_layout_err e = {CF_OK, ""};
  LayBuild b;
  lay_build_init(&b, &t.tree, &e);
  lay_build_int(&b, v, flags);
  return t;
}

CF_API cf_int_tuple cf_tuple_from_int(cf_tuple_int v) { return leaf_tuple(v, 0); }
CF_API cf_int_tuple cf_tuple_underscore(void)
{
  return leaf_tuple(lay_s(0), CF_TUPLE_NODE_UNDERSCORE);
}

CF_API cf_status cf_tuple_make(const cf_int_tuple *elems, int n, cf_int_tuple *out,
                               cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_tuple_tree t;
  LayBuild b;
  lay_build_init(&b, &t, e);
  if (n < 0 || (n > 0 && !elems))
    lay_fail(e, CF_ERR_INVALID_ARGUMENT, "cf_tuple_make: bad element list");
  lay_build_open(&b, 0);
  for (int k = 0; k < n && lay_ok(e); k++)
    lay_build_copy(&b, &elems[k].tree, 0);
  lay_build_close(&b);
  return lay_finish_tuple(e, &t, out);
}

CF_API cf_status cf_tuple_parse(const char *text, cf_int_tuple *out, cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_tuple_tree t;
  lay_parse(text, LAY_PARSE_TUPLE, &t, e);
  return lay_finish_tuple(e, &t, out);
}

CF_API bool cf_tuple_is_int(const cf_int_tuple *t) { return lay_is_leaf(&t->tree, 0); }

CF_API cf_tuple_int cf_tuple_value(const cf_int_tuple *t)
{
  return lay_is_leaf(&t->tree, 0) ? lay_leaf(&t->tree, 0, 0) : lay_d(0);
}

CF_API int cf_tuple_rank(const cf_int_tuple *t) { return lay_rank_at(&t->tree, 0); }
CF_API int cf_tuple_depth(const cf_int_tuple *t) { return lay_depth_at(&t->tree, 0); }

CF_API cf_status cf_tuple_get(const cf_int_tuple *t, const int *path, int npath,
                              cf_int_tuple *out, cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  int i = 0;
  for (int k = 0; k < npath && lay_ok(e); k++) {
    int c = lay_child(&t->tree, i, path[k]);
    if (c < 0)
      lay_fail(e, CF_ERR_INVALID_ARGUMENT, "get: index %d out of range for rank %d",
                     path[k], lay_rank_at(&t->tree, i));
    i = c;
  }
  cf_tuple_tree r;
  LayBuild b;
  lay_build_init(&b, &r, e);
  if (lay_ok(e))
    lay_build_copy(&b, &t->tree, i);
  return lay_finish_tuple(e, &r, out);
}

static bool has_underscore(const cf_tuple_tree *t, int i)
{
  for (int j = i; j < i + t->node[i].span; j++)
    if (t->node[j].flags & CF_TUPLE_NODE_UNDERSCORE)
      return true;
  return false;
}

CF_API cf_status cf_tuple_size(const cf_int_tuple *t, cf_tuple_int *out, cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  if (has_underscore(&t->tree, 0))
    lay_fail(e, CF_ERR_INVALID_ARGUMENT, "size: a coordinate with '_' has no size");
  LayInt p = lay_product(&t->tree, 0, 0, e);
  if (lay_ok(e))
    *out = p;
  return e->status;
}

CF_API bool cf_tuple_equal(const cf_int_tuple *a, const cf_int_tuple *b)
{
  if (!lay_congruent(&a->tree, 0, &b->tree, 0))
    return false;
  for (int i = 0; i < a->tree.count; i++) {
    const cf_tuple_node *x = &a->tree.node[i], *y = &b->tree.node[i];
    if (x->flags != y->flags || (x->arity < 0 && x->v[0] != y->v[0]))
      return false;
  }
  return true;
}

CF_API bool cf_tuple_congruent(const cf_int_tuple *a, const cf_int_tuple *b)
{
  return lay_congruent(&a->tree, 0, &b->tree, 0);
}

static bool compatible_at(const cf_tuple_tree *a, int ia, const cf_tuple_tree *b, int ib)
{
  cf_layout_err e = {CF_OK, ""};
  if (lay_is_leaf(a, ia))
    return lay_leaf(a, ia, 0).value == lay_product(b, ib, 0, &e).value &&
           lay_ok(&e);
  if (lay_is_leaf(b, ib) || a->node[ia].arity != b->node[ib].arity)
    return false;
  for (int k = 0; k < a->node[ia].arity; k++)
    if (!compatible_at(a, lay_child(a, ia, k), b, lay_child(b, ib, k)))
      return false;
  return true;
}

CF_API bool cf_tuple_compatible(const cf_int_tuple *a, const cf_int_tuple *b)
{
  return compatible_at(&a->tree, 0, &b->tree, 0);
}

/* Horner's rule over the leaves of the coordinate, each weighted by the size of the
 * part of the shape it indexes: c0 + s0 * (c1 + s1 * (...)). */
typedef struct Horner {
  int n;
  LayInt c[CF_LAYOUT_MAX_NODES], s[CF_LAYOUT_MAX_NODES];
} Horner;

static void horner_terms(const cf_tuple_tree *c, int ci, const cf_tuple_tree *s, int si,
                         Horner *h, cf_layout_err *e)
{
  if (!lay_ok(e))
    return;
  if (lay_is_leaf(c, ci)) {
    h->c[h->n] = (c->node[ci].flags & CF_TUPLE_NODE_UNDERSCORE) ? lay_s(0)
                                                                 : lay_leaf(c, ci, 0);
    h->s[h->n++] = lay_product(s, si, 0, e);
    return;
  }
  if (lay_is_leaf(s, si) || c->node[ci].arity != s->node[si].arity) {
    lay_fail(e, CF_ERR_INVALID_ARGUMENT, "crd2idx: coordinate of rank %d for a shape "
                   "of rank %d", c->node[ci].arity, lay_rank_at(s, si));
    return;
  }
  for (int k = 0; k < c->node[ci].arity; k++)
    horner_terms(c, lay_child(c, ci, k), s, lay_child(s, si, k), h, e);
}

CF_API cf_status cf_tuple_crd2idx(const cf_int_tuple *coord, const cf_int_tuple *shape,
                                  cf_tuple_int *out, cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  Horner h = {0};
  horner_terms(&coord->tree, 0, &shape->tree, 0, &h, e);
  LayInt r = h.n > 0 ? h.c[h.n - 1] : lay_s(0);
  for (int k = h.n - 2; k >= 0; k--)
    r = lay_add(h.c[k], lay_mul(h.s[k], r, e), e);
  if (lay_ok(e))
    *out = r;
  return e->status;
}

/* CuTe splits an integer over a tuple mode by mode: every mode but the last takes
 * idx % size(mode) and passes idx / size(mode) on; the last takes what is left. */
static void idx2crd_at(LayInt idx, const cf_tuple_tree *s, int si, LayBuild *b)
{
  if (lay_is_leaf(s, si)) {
    lay_build_int(b, idx, 0);
    return;
  }
  lay_build_open(b, 0);
  int r = s->node[si].arity;
  for (int k = 0; k < r; k++) {
    int ck = lay_child(s, si, k);
    if (k == r - 1 || lay_is_const(idx, 0)) {
      idx2crd_at(idx, s, ck, b);
      continue;
    }
    LayInt p = lay_product(s, ck, 0, b->e);
    idx2crd_at(lay_mod(idx, p, b->e), s, ck, b);
    idx = lay_div(idx, p, b->e);
  }
  lay_build_close(b);
}

/* A tuple index goes mode by mode (CuTe's idx2crd of a tuple index): its integers are
 * split as above over the matching modes of the shape. */
static void idx2crd_tuple_at(const cf_tuple_tree *c, int ci, const cf_tuple_tree *s, int si,
                             LayBuild *b)
{
  if (!lay_ok(b->e))
    return;
  if (lay_is_underscore(c, ci)) {
    lay_fail(b->e, CF_ERR_INVALID_ARGUMENT, "idx2crd: '_' is not an index");
    return;
  }
  if (lay_is_leaf(c, ci)) {
    idx2crd_at(lay_leaf(c, ci, 0), s, si, b);
    return;
  }
  if (lay_is_leaf(s, si) || s->node[si].arity != c->node[ci].arity) {
    lay_fail(b->e, CF_ERR_INVALID_ARGUMENT, "idx2crd: index of rank %d for a shape of rank %d",
             c->node[ci].arity, lay_rank_at(s, si));
    return;
  }
  lay_build_open(b, 0);
  for (int k = 0; k < c->node[ci].arity; k++)
    idx2crd_tuple_at(c, lay_child(c, ci, k), s, lay_child(s, si, k), b);
  lay_build_close(b);
}

CF_API cf_status cf_tuple_idx2crd(cf_tuple_int idx, const cf_int_tuple *shape,
                                  cf_int_tuple *out, cf_layout_err *err)
{
  cf_int_tuple i = cf_tuple_from_int(idx);
  return cf_tuple_idx2crd_tuple(&i, shape, out, err);
}

CF_API cf_status cf_tuple_idx2crd_tuple(const cf_int_tuple *idx, const cf_int_tuple *shape,
                                        cf_int_tuple *out, cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_tuple_tree t;
  LayBuild b;
  lay_build_init(&b, &t, e);
  idx2crd_tuple_at(&idx->tree, 0, &shape->tree, 0, &b);
  return lay_finish_tuple(e, &t, out);
}

CF_API int cf_tuple_snprint(char *buf, size_t n, const cf_int_tuple *t)
{
  LayText x = {buf, n, 0};
  if (n > 0)
    buf[0] = '\0';
  lay_print_tuple(&x, &t->tree, 0, 0);
  return (int)x.len;
}
