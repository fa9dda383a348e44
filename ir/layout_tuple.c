/* ir/layout_tuple.c: the foundation of the layout module: errors, integers with CuTe's
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

#include "ir/layout_internal.h"

/* ---- errors ------------------------------------------------------------------------ */

cf_layout_err *ir_layout_err_begin(cf_layout_err *err, cf_layout_err *local)
{
  cf_layout_err *e = err ? err : local;
  e->status = CF_OK;
  e->message[0] = '\0';
  return e;
}

void ir_layout_fail(cf_layout_err *e, cf_status s, const char *fmt, ...)
{
  if (e->status != CF_OK)
    return;
  e->status = s;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->message, sizeof e->message, fmt, ap);
  va_end(ap);
}

void ir_layout_err_context(cf_layout_err *e, const char *what)
{
  size_t n = strlen(what), cap = sizeof e->message;
  if (ir_layout_ok(e) || n + 3 > cap || (strncmp(e->message, what, n) == 0 && e->message[n] == ':'))
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
    if (ir_layout_is_leaf(t, i) && !(t->node[i].flags & CF_TUPLE_NODE_UNDERSCORE) &&
        t->node[i].v[0] < 1) {
      ir_layout_fail(e, CF_ERR_INVALID_ARGUMENT, "shape %lld is not positive",
                     (long long)t->node[i].v[0]);
      return;
    }
  ir_layout_product(t, 0, 0, e);
  ir_layout_cosize_at(t, 0, e);
}

cf_status ir_layout_finish_layout(cf_layout_err *e, const cf_tuple_tree *tree, cf_layout *out)
{
  if (ir_layout_ok(e))
    check_layout_result(tree, e);
  if (ir_layout_ok(e))
    out->tree = *tree;
  return e->status;
}

cf_status ir_layout_finish_tuple(cf_layout_err *e, const cf_tuple_tree *tree, cf_int_tuple *out)
{
  if (ir_layout_ok(e))
    out->tree = *tree;
  return e->status;
}

bool ir_layout_require_layout(const cf_tuple_tree *l, const char *what, cf_layout_err *e)
{
  if (!ir_layout_ok(e))
    return false;
  if (l->count == 0) {
    ir_layout_fail(e, CF_ERR_INVALID_ARGUMENT, "%s: empty layout", what);
    return false;
  }
  if (ir_layout_is_tiler_node(l, 0)) {
    char text[CF_LAYOUT_TEXT_MAX];
    IrText x = {text, sizeof text, 0};
    ir_layout_print_layout(&x, l, 0);
    ir_layout_fail(e, CF_ERR_INVALID_ARGUMENT, "%s: expected a layout, got the tiler %s", what,
                   text);
    return false;
  }
  return true;
}

/* ---- integers ---------------------------------------------------------------------- */

static IrInt overflow(cf_layout_err *e, const char *op, IrInt a, IrInt b)
{
  ir_layout_fail(e, CF_ERR_INVALID_ARGUMENT, "integer overflow in %lld %s %lld",
                 (long long)a.value, op, (long long)b.value);
  return ir_layout_d(1);
}

IrInt ir_layout_add(IrInt a, IrInt b, cf_layout_err *e)
{
  int64_t r;
  if (__builtin_add_overflow(a.value, b.value, &r))
    return overflow(e, "+", a, b);
  return (IrInt){r, a.is_static && b.is_static};
}

IrInt ir_layout_sub(IrInt a, IrInt b, cf_layout_err *e)
{
  int64_t r;
  if (__builtin_sub_overflow(a.value, b.value, &r))
    return overflow(e, "-", a, b);
  return (IrInt){r, a.is_static && b.is_static};
}

IrInt ir_layout_mul(IrInt a, IrInt b, cf_layout_err *e)
{
  if (ir_layout_is_const(a, 0) || ir_layout_is_const(b, 0))
    return ir_layout_s(0);
  int64_t r;
  if (__builtin_mul_overflow(a.value, b.value, &r))
    return overflow(e, "*", a, b);
  return (IrInt){r, a.is_static && b.is_static};
}

static bool bad_divisor(IrInt a, IrInt b, const char *op, cf_layout_err *e)
{
  if (b.value == 0) {
    ir_layout_fail(e, CF_ERR_INVALID_ARGUMENT, "division by zero in %lld %s 0",
                   (long long)a.value, op);
    return true;
  }
  if (b.value == -1 && a.value == INT64_MIN) {
    overflow(e, op, a, b);
    return true;
  }
  return false;
}

IrInt ir_layout_div(IrInt a, IrInt b, cf_layout_err *e)
{
  if (bad_divisor(a, b, "/", e))
    return ir_layout_d(1);
  if (ir_layout_is_const(a, 0))
    return ir_layout_s(0);
  return (IrInt){a.value / b.value, a.is_static && b.is_static};
}

IrInt ir_layout_mod(IrInt a, IrInt b, cf_layout_err *e)
{
  if (bad_divisor(a, b, "%", e))
    return ir_layout_d(0);
  if (ir_layout_is_const(a, 0) || ir_layout_is_const(b, 1) || ir_layout_is_const(b, -1))
    return ir_layout_s(0);
  return (IrInt){a.value % b.value, a.is_static && b.is_static};
}

IrInt ir_layout_min(IrInt a, IrInt b)
{
  return (IrInt){a.value < b.value ? a.value : b.value, a.is_static && b.is_static};
}

/* CuTe's ceil_div(a, b) = (a + b - _1) / b, staticness included. */
IrInt ir_layout_ceil_div(IrInt a, IrInt b, cf_layout_err *e)
{
  return ir_layout_div(ir_layout_sub(ir_layout_add(a, b, e), ir_layout_s(1), e), b, e);
}

IrInt ir_layout_abs(IrInt a, cf_layout_err *e)
{
  if (a.value == INT64_MIN)
    return overflow(e, "abs", a, a);
  return (IrInt){a.value < 0 ? -a.value : a.value, a.is_static};
}

IrInt ir_layout_signum(IrInt a)
{
  return (IrInt){(a.value > 0) - (a.value < 0), a.is_static};
}

/* ---- trees ------------------------------------------------------------------------- */

int ir_layout_rank_at(const cf_tuple_tree *t, int i)
{
  return ir_layout_is_leaf(t, i) ? 1 : t->node[i].arity;
}

int ir_layout_child(const cf_tuple_tree *t, int i, int k)
{
  if (ir_layout_is_leaf(t, i))
    return k == 0 ? i : -1;
  if (k < 0 || k >= t->node[i].arity)
    return -1;
  int c = i + 1;
  while (k-- > 0)
    c += t->node[c].span;
  return c;
}

int ir_layout_depth_at(const cf_tuple_tree *t, int i)
{
  if (ir_layout_is_leaf(t, i))
    return 0;
  int d = 0;
  for (int k = 0; k < t->node[i].arity; k++) {
    int dk = ir_layout_depth_at(t, ir_layout_child(t, i, k));
    d = dk > d ? dk : d;
  }
  return d + 1;
}

IrInt ir_layout_product(const cf_tuple_tree *t, int i, int which, cf_layout_err *e)
{
  IrInt p = ir_layout_s(1);
  for (int j = i; j < i + t->node[i].span; j++)
    if (ir_layout_is_leaf(t, j))
      p = ir_layout_mul(p, ir_layout_leaf(t, j, which), e);
  return p;
}

/* CuTe's cosize: size(coshape) with coshape = inner_product(shape - _1, |stride|) + _1. */
IrInt ir_layout_cosize_at(const cf_tuple_tree *t, int i, cf_layout_err *e)
{
  IrInt sum = ir_layout_s(0);
  for (int j = i; j < i + t->node[i].span; j++) {
    if (!ir_layout_is_leaf(t, j))
      continue;
    IrInt s1 = ir_layout_sub(ir_layout_leaf(t, j, 0), ir_layout_s(1), e);
    IrInt term = ir_layout_mul(s1, ir_layout_abs(ir_layout_leaf(t, j, 1), e), e);
    sum = ir_layout_add(sum, term, e);
  }
  return ir_layout_add(sum, ir_layout_s(1), e);
}

bool ir_layout_congruent(const cf_tuple_tree *a, int ia, const cf_tuple_tree *b, int ib)
{
  if (a->node[ia].span != b->node[ib].span)
    return false;
  for (int k = 0; k < a->node[ia].span; k++)
    if (a->node[ia + k].arity != b->node[ib + k].arity)
      return false;
  return true;
}

/* ---- building trees ---------------------------------------------------------------- */

void ir_layout_build_init(IrBuild *b, cf_tuple_tree *t, cf_layout_err *e)
{
  b->t = t;
  b->depth = 0;
  b->e = e;
  t->count = 0;
}

/* Claims the next node for a new element of the innermost open tuple. */
static cf_tuple_node *add_node(IrBuild *b)
{
  if (!ir_layout_ok(b->e))
    return NULL;
  if (b->t->count >= CF_LAYOUT_MAX_NODES) {
    ir_layout_fail(b->e, CF_ERR_UNSUPPORTED, "result too large: more than %d nodes",
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

void ir_layout_build_open(IrBuild *b, uint8_t flags)
{
  if (b->depth >= IR_LAYOUT_MAX_DEPTH) {
    ir_layout_fail(b->e, CF_ERR_UNSUPPORTED, "tuples nested deeper than %d levels",
                   IR_LAYOUT_MAX_DEPTH);
    return;
  }
  cf_tuple_node *n = add_node(b);
  if (!n)
    return;
  n->flags = flags;
  b->open[b->depth++] = b->t->count - 1;
}

void ir_layout_build_close(IrBuild *b)
{
  if (!ir_layout_ok(b->e) || b->depth == 0)
    return;
  int i = b->open[--b->depth];
  b->t->node[i].span = (uint16_t)(b->t->count - i);
}

void ir_layout_build_leaf(IrBuild *b, IrInt s, IrInt d, uint8_t flags)
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

void ir_layout_build_int(IrBuild *b, IrInt v, uint8_t flags)
{
  ir_layout_build_leaf(b, v, ir_layout_d(0), flags);
}

/* After an error the source may be a tree that was never built: copy nothing. */
void ir_layout_build_copy(IrBuild *b, const cf_tuple_tree *src, int i)
{
  if (!ir_layout_ok(b->e))
    return;
  if (ir_layout_is_leaf(src, i)) {
    cf_tuple_node *n = add_node(b);
    if (n)
      *n = src->node[i];
    return;
  }
  ir_layout_build_open(b, src->node[i].flags);
  for (int k = 0; k < src->node[i].arity; k++)
    ir_layout_build_copy(b, src, ir_layout_child(src, i, k));
  ir_layout_build_close(b);
}

void ir_layout_build_splice(IrBuild *b, const cf_tuple_tree *src, int i)
{
  for (int k = 0; k < ir_layout_rank_at(src, i); k++)
    ir_layout_build_copy(b, src, ir_layout_child(src, i, k));
}

/* ---- flat mode lists --------------------------------------------------------------- */

void ir_layout_flat_init(IrFlat *f)
{
  f->n = 0;
  f->tuple = true;
}

void ir_layout_flat_push(IrFlat *f, IrInt s, IrInt d, cf_layout_err *e)
{
  if (f->n >= CF_LAYOUT_MAX_NODES) {
    ir_layout_fail(e, CF_ERR_UNSUPPORTED, "result too large: more than %d modes",
                   CF_LAYOUT_MAX_NODES);
    return;
  }
  f->s[f->n] = s;
  f->d[f->n] = d;
  f->n++;
}

void ir_layout_flat_remove(IrFlat *f, int k)
{
  for (int j = k; j + 1 < f->n; j++) {
    f->s[j] = f->s[j + 1];
    f->d[j] = f->d[j + 1];
  }
  f->n--;
}

void ir_layout_flat_of(const cf_tuple_tree *t, int i, IrFlat *f, cf_layout_err *e)
{
  ir_layout_flat_init(f);
  f->tuple = !ir_layout_is_leaf(t, i);
  for (int j = i; j < i + t->node[i].span; j++)
    if (ir_layout_is_leaf(t, j))
      ir_layout_flat_push(f, ir_layout_leaf(t, j, 0), ir_layout_leaf(t, j, 1), e);
}

void ir_layout_build_flat(IrBuild *b, const IrFlat *f)
{
  if (!f->tuple && f->n == 1) {
    ir_layout_build_leaf(b, f->s[0], f->d[0], 0);
    return;
  }
  ir_layout_build_open(b, 0);
  for (int k = 0; k < f->n; k++)
    ir_layout_build_leaf(b, f->s[k], f->d[k], 0);
  ir_layout_build_close(b);
}

void ir_layout_flat_to_tree(const IrFlat *f, cf_tuple_tree *out, cf_layout_err *e)
{
  IrBuild b;
  ir_layout_build_init(&b, out, e);
  ir_layout_build_flat(&b, f);
}

/* ---- the public IntTuple API ------------------------------------------------------- */

CF_API cf_tuple_int cf_tuple_static(int64_t v) { return ir_layout_s(v); }
CF_API cf_tuple_int cf_tuple_dynamic(int64_t v) { return ir_layout_d(v); }

static cf_int_tuple leaf_tuple(IrInt v, uint8_t flags)
{
  cf_int_tuple t;
  cf_layout_err e = {CF_OK, ""};
  IrBuild b;
  ir_layout_build_init(&b, &t.tree, &e);
  ir_layout_build_int(&b, v, flags);
  return t;
}

CF_API cf_int_tuple cf_tuple_from_int(cf_tuple_int v) { return leaf_tuple(v, 0); }
CF_API cf_int_tuple cf_tuple_underscore(void)
{
  return leaf_tuple(ir_layout_s(0), CF_TUPLE_NODE_UNDERSCORE);
}

CF_API cf_status cf_tuple_make(const cf_int_tuple *elems, int n, cf_int_tuple *out,
                               cf_layout_err *err)
{
  cf_layout_err local, *e = ir_layout_err_begin(err, &local);
  cf_tuple_tree t;
  IrBuild b;
  ir_layout_build_init(&b, &t, e);
  if (n < 0 || (n > 0 && !elems))
    ir_layout_fail(e, CF_ERR_INVALID_ARGUMENT, "cf_tuple_make: bad element list");
  ir_layout_build_open(&b, 0);
  for (int k = 0; k < n && ir_layout_ok(e); k++)
    ir_layout_build_copy(&b, &elems[k].tree, 0);
  ir_layout_build_close(&b);
  return ir_layout_finish_tuple(e, &t, out);
}

CF_API cf_status cf_tuple_parse(const char *text, cf_int_tuple *out, cf_layout_err *err)
{
  cf_layout_err local, *e = ir_layout_err_begin(err, &local);
  cf_tuple_tree t;
  ir_layout_parse(text, IR_PARSE_TUPLE, &t, e);
  return ir_layout_finish_tuple(e, &t, out);
}

CF_API bool cf_tuple_is_int(const cf_int_tuple *t) { return ir_layout_is_leaf(&t->tree, 0); }

CF_API cf_tuple_int cf_tuple_value(const cf_int_tuple *t)
{
  return ir_layout_is_leaf(&t->tree, 0) ? ir_layout_leaf(&t->tree, 0, 0) : ir_layout_d(0);
}

CF_API int cf_tuple_rank(const cf_int_tuple *t) { return ir_layout_rank_at(&t->tree, 0); }
CF_API int cf_tuple_depth(const cf_int_tuple *t) { return ir_layout_depth_at(&t->tree, 0); }

CF_API cf_status cf_tuple_get(const cf_int_tuple *t, const int *path, int npath,
                              cf_int_tuple *out, cf_layout_err *err)
{
  cf_layout_err local, *e = ir_layout_err_begin(err, &local);
  int i = 0;
  for (int k = 0; k < npath && ir_layout_ok(e); k++) {
    int c = ir_layout_child(&t->tree, i, path[k]);
    if (c < 0)
      ir_layout_fail(e, CF_ERR_INVALID_ARGUMENT, "get: index %d out of range for rank %d",
                     path[k], ir_layout_rank_at(&t->tree, i));
    i = c;
  }
  cf_tuple_tree r;
  IrBuild b;
  ir_layout_build_init(&b, &r, e);
  if (ir_layout_ok(e))
    ir_layout_build_copy(&b, &t->tree, i);
  return ir_layout_finish_tuple(e, &r, out);
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
  cf_layout_err local, *e = ir_layout_err_begin(err, &local);
  if (has_underscore(&t->tree, 0))
    ir_layout_fail(e, CF_ERR_INVALID_ARGUMENT, "size: a coordinate with '_' has no size");
  IrInt p = ir_layout_product(&t->tree, 0, 0, e);
  if (ir_layout_ok(e))
    *out = p;
  return e->status;
}

CF_API bool cf_tuple_equal(const cf_int_tuple *a, const cf_int_tuple *b)
{
  if (!ir_layout_congruent(&a->tree, 0, &b->tree, 0))
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
  return ir_layout_congruent(&a->tree, 0, &b->tree, 0);
}

static bool compatible_at(const cf_tuple_tree *a, int ia, const cf_tuple_tree *b, int ib)
{
  cf_layout_err e = {CF_OK, ""};
  if (ir_layout_is_leaf(a, ia))
    return ir_layout_leaf(a, ia, 0).value == ir_layout_product(b, ib, 0, &e).value &&
           ir_layout_ok(&e);
  if (ir_layout_is_leaf(b, ib) || a->node[ia].arity != b->node[ib].arity)
    return false;
  for (int k = 0; k < a->node[ia].arity; k++)
    if (!compatible_at(a, ir_layout_child(a, ia, k), b, ir_layout_child(b, ib, k)))
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
  IrInt c[CF_LAYOUT_MAX_NODES], s[CF_LAYOUT_MAX_NODES];
} Horner;

static void horner_terms(const cf_tuple_tree *c, int ci, const cf_tuple_tree *s, int si,
                         Horner *h, cf_layout_err *e)
{
  if (!ir_layout_ok(e))
    return;
  if (ir_layout_is_leaf(c, ci)) {
    h->c[h->n] = (c->node[ci].flags & CF_TUPLE_NODE_UNDERSCORE) ? ir_layout_s(0)
                                                                 : ir_layout_leaf(c, ci, 0);
    h->s[h->n++] = ir_layout_product(s, si, 0, e);
    return;
  }
  if (ir_layout_is_leaf(s, si) || c->node[ci].arity != s->node[si].arity) {
    ir_layout_fail(e, CF_ERR_INVALID_ARGUMENT, "crd2idx: coordinate of rank %d for a shape "
                   "of rank %d", c->node[ci].arity, ir_layout_rank_at(s, si));
    return;
  }
  for (int k = 0; k < c->node[ci].arity; k++)
    horner_terms(c, ir_layout_child(c, ci, k), s, ir_layout_child(s, si, k), h, e);
}

CF_API cf_status cf_tuple_crd2idx(const cf_int_tuple *coord, const cf_int_tuple *shape,
                                  cf_tuple_int *out, cf_layout_err *err)
{
  cf_layout_err local, *e = ir_layout_err_begin(err, &local);
  Horner h = {0};
  horner_terms(&coord->tree, 0, &shape->tree, 0, &h, e);
  IrInt r = h.n > 0 ? h.c[h.n - 1] : ir_layout_s(0);
  for (int k = h.n - 2; k >= 0; k--)
    r = ir_layout_add(h.c[k], ir_layout_mul(h.s[k], r, e), e);
  if (ir_layout_ok(e))
    *out = r;
  return e->status;
}

/* CuTe splits an integer over a tuple mode by mode: every mode but the last takes
 * idx % size(mode) and passes idx / size(mode) on; the last takes what is left. */
static void idx2crd_at(IrInt idx, const cf_tuple_tree *s, int si, IrBuild *b)
{
  if (ir_layout_is_leaf(s, si)) {
    ir_layout_build_int(b, idx, 0);
    return;
  }
  ir_layout_build_open(b, 0);
  int r = s->node[si].arity;
  for (int k = 0; k < r; k++) {
    int ck = ir_layout_child(s, si, k);
    if (k == r - 1 || ir_layout_is_const(idx, 0)) {
      idx2crd_at(idx, s, ck, b);
      continue;
    }
    IrInt p = ir_layout_product(s, ck, 0, b->e);
    idx2crd_at(ir_layout_mod(idx, p, b->e), s, ck, b);
    idx = ir_layout_div(idx, p, b->e);
  }
  ir_layout_build_close(b);
}

CF_API cf_status cf_tuple_idx2crd(cf_tuple_int idx, const cf_int_tuple *shape,
                                  cf_int_tuple *out, cf_layout_err *err)
{
  cf_layout_err local, *e = ir_layout_err_begin(err, &local);
  cf_tuple_tree t;
  IrBuild b;
  ir_layout_build_init(&b, &t, e);
  idx2crd_at(idx, &shape->tree, 0, &b);
  return ir_layout_finish_tuple(e, &t, out);
}

CF_API int cf_tuple_snprint(char *buf, size_t n, const cf_int_tuple *t)
{
  IrText x = {buf, n, 0};
  if (n > 0)
    buf[0] = '\0';
  ir_layout_print_tuple(&x, &t->tree, 0, 0);
  return (int)x.len;
}
