/* ir/layout_core.c: layouts as objects: making them (from shape and stride, from a shape
 * with compact strides, by concatenation, as tilers), inspecting them, taking them apart
 * (get, select, take, group, flatten) and using them as functions (crd2idx, idx2crd,
 * evaluation, slicing with `_`).
 *
 * Key decision: a layout is one tree whose leaves hold a (shape, stride) pair, so shape
 * and stride are congruent by construction and every structural operation (sublayouts,
 * grouping, slicing) is a single walk that copies subtrees, the way CuTe applies each
 * tuple operation to the shape and the stride alike. CuTe's get<0> of an integer is the
 * integer itself, and so a leaf here is a rank-1 node whose only child is itself. */
#include <string.h>

#include "ir/layout_internal.h"

/* ---- making layouts ---------------------------------------------------------------- */

static void set_stride(cf_tuple_node *n, IrInt d)
{
  n->v[1] = d.value;
  n->flags = (uint8_t)((n->flags & ~CF_TUPLE_NODE_STATIC1) | (d.is_static ? CF_TUPLE_NODE_STATIC1 : 0));
}

IrInt ir_layout_compact(cf_tuple_tree *t, cf_layout_major major, IrInt current,
                        cf_layout_err *e)
{
  for (int k = 0; k < t->count; k++) {
    int j = major == CF_LAYOUT_LEFT ? k : t->count - 1 - k;
    if (!ir_layout_is_leaf(t, j))
      continue;
    IrInt s = ir_layout_leaf(t, j, 0);
    IrInt d = ir_layout_is_const(s, 1) ? ir_layout_s(0) : current;
    if (!ir_layout_is_const(s, 1))
      current = ir_layout_mul(current, s, e);
    set_stride(&t->node[j], d);
  }
  return current;
}

void ir_layout_zip(const cf_tuple_tree *shape, const cf_tuple_tree *stride, cf_tuple_tree *out)
{
  *out = *shape;
  for (int i = 0; i < out->count; i++)
    if (ir_layout_is_leaf(out, i))
      set_stride(&out->node[i], ir_layout_leaf(stride, i, 0));
}

static bool require_plain_tuple(const cf_tuple_tree *t, const char *what, cf_layout_err *e)
{
  for (int i = 0; i < t->count; i++)
    if (t->node[i].flags & CF_TUPLE_NODE_UNDERSCORE) {
      ir_layout_fail(e, CF_ERR_INVALID_ARGUMENT, "%s: '_' is not an integer", what);
      return false;
    }
  return t->count > 0;
}

CF_API cf_status cf_layout_make(const cf_int_tuple *shape, const cf_int_tuple *stride,
                                cf_layout *out, cf_layout_err *err)
{
  cf_layout_err local, *e = ir_layout_err_begin(err, &local);
  cf_tuple_tree t = shape->tree;
  if (require_plain_tuple(&shape->tree, "make_layout", e) &&
      require_plain_tuple(&stride->tree, "make_layout", e) &&
      !ir_layout_congruent(&shape->tree, 0, &stride->tree, 0)) {
    char s[CF_LAYOUT_TEXT_MAX], d[CF_LAYOUT_TEXT_MAX];
    cf_tuple_snprint(s, sizeof s, shape);
    cf_tuple_snprint(d, sizeof d, stride);
    ir_layout_fail(e, CF_ERR_INVALID_ARGUMENT,
                   "make_layout: shape %s and stride %s are not congruent", s, d);
  }
  if (ir_layout_ok(e))
    ir_layout_zip(&shape->tree, &stride->tree, &t);
  return ir_layout_finish_layout(e, &t, out);
}

CF_API cf_status cf_layout_from_shape(const cf_int_tuple *shape, cf_layout_major major,
                                      cf_layout *out, cf_layout_err *err)
{
  cf_layout_err local, *e = ir_layout_err_begin(err, &local);
  cf_tuple_tree t = shape->tree;
  if (require_plain_tuple(&t, "make_layout", e))
    ir_layout_compact(&t, major, ir_layout_s(1), e);
  return ir_layout_finish_layout(e, &t, out);
}

/* Opens a tuple (a plain one, or a by-mode tiler) holding copies of n trees. */
static void build_list(const cf_layout *elems, int n, bool tiler, const char *what,
                       cf_tuple_tree *out, cf_layout_err *e)
{
  IrBuild b;
  ir_layout_build_init(&b, out, e);
  if (n < 0 || (n > 0 && !elems) || (tiler && n == 0))
    ir_layout_fail(e, CF_ERR_INVALID_ARGUMENT, "%s: bad element list", what);
  ir_layout_build_open(&b, tiler ? CF_TUPLE_NODE_TILER : 0);
  for (int k = 0; k < n && ir_layout_ok(e); k++)
    if (tiler || ir_layout_require_layout(&elems[k].tree, what, e))
      ir_layout_build_copy(&b, &elems[k].tree, 0);
  ir_layout_build_close(&b);
}

CF_API cf_status cf_layout_concat(const cf_layout *elems, int n, cf_layout *out,
                                  cf_layout_err *err)
{
  cf_layout_err local, *e = ir_layout_err_begin(err, &local);
  cf_tuple_tree t;
  build_list(elems, n, false, "make_layout", &t, e);
  return ir_layout_finish_layout(e, &t, out);
}

CF_API cf_status cf_layout_make_tiler(const cf_layout *elems, int n, cf_layout *out,
                                      cf_layout_err *err)
{
  cf_layout_err local, *e = ir_layout_err_begin(err, &local);
  cf_tuple_tree t;
  build_list(elems, n, true, "make_tile", &t, e);
  return ir_layout_finish_layout(e, &t, out);
}

void ir_layout_build_shape_tiler(IrBuild *b, const cf_tuple_tree *s, int i)
{
  if (ir_layout_is_leaf(s, i)) {
    ir_layout_build_leaf(b, ir_layout_leaf(s, i, 0), ir_layout_s(1), CF_TUPLE_NODE_SHAPE);
    return;
  }
  ir_layout_build_open(b, CF_TUPLE_NODE_TILER);
  for (int k = 0; k < s->node[i].arity; k++)
    ir_layout_build_shape_tiler(b, s, ir_layout_child(s, i, k));
  ir_layout_build_close(b);
}

CF_API cf_status cf_layout_tiler_from_shape(const cf_int_tuple *shape, cf_layout *out,
                                            cf_layout_err *err)
{
  cf_layout_err local, *e = ir_layout_err_begin(err, &local);
  cf_tuple_tree t;
  IrBuild b;
  ir_layout_build_init(&b, &t, e);
  if (require_plain_tuple(&shape->tree, "make_tile", e))
    ir_layout_build_shape_tiler(&b, &shape->tree, 0);
  return ir_layout_finish_layout(e, &t, out);
}

/* CuTe's compact_order(filter_zeros(stride, shape), stride): each mode's stride is the
 * product of the sizes of the modes whose stride is smaller; dynamic strides count as
 * larger than every static one, in order of appearance; static-0 strides stay _0. */
CF_API cf_status cf_layout_make_like(const cf_layout *l, cf_layout *out, cf_layout_err *err)
{
  cf_layout_err local, *e = ir_layout_err_begin(err, &local);
  cf_tuple_tree t = l->tree;
  IrFlat f;
  ir_layout_flat_of(&l->tree, 0, &f, e);
  int64_t order[CF_LAYOUT_MAX_NODES], max_order = 0;
  for (int k = 0; k < f.n; k++) {
    if (ir_layout_is_const(f.d[k], 0))
      f.s[k] = ir_layout_s(1); /* filter_zeros */
    if (f.d[k].is_static && f.d[k].value > max_order)
      max_order = f.d[k].value;
  }
  for (int k = 0; k < f.n; k++)
    order[k] = f.d[k].is_static ? f.d[k].value : max_order + 1 + k;
  int leaf = 0;
  for (int i = 0; ir_layout_require_layout(&l->tree, "make_layout_like", e) && i < t.count; i++) {
    if (!ir_layout_is_leaf(&t, i))
      continue;
    IrInt start = ir_layout_s(1);
    for (int k = 0; k < f.n; k++)
      if (order[k] < order[leaf])
        start = ir_layout_mul(start, f.s[k], e);
    IrInt d = ir_layout_is_const(f.s[leaf], 1) ? ir_layout_s(0) : start;
    set_stride(&t.node[i], d);
    leaf++;
  }
  return ir_layout_finish_layout(e, &t, out);
}

void ir_layout_concat2(const cf_tuple_tree *a, const cf_tuple_tree *b, cf_tuple_tree *out,
                       cf_layout_err *e)
{
  IrBuild bd;
  ir_layout_build_init(&bd, out, e);
  ir_layout_build_open(&bd, 0);
  ir_layout_build_copy(&bd, a, 0);
  ir_layout_build_copy(&bd, b, 0);
  ir_layout_build_close(&bd);
}

/* CuTe's append<r>(layout): pad with _1:_0 modes up to rank r. */
void ir_layout_append_to_rank(const cf_tuple_tree *l, int r, cf_tuple_tree *out,
                              cf_layout_err *e)
{
  int rank = ir_layout_rank_at(l, 0);
  if (r == 1 || (rank == r && !ir_layout_is_leaf(l, 0))) {
    *out = *l;
    return;
  }
  IrBuild b;
  ir_layout_build_init(&b, out, e);
  ir_layout_build_open(&b, 0);
  ir_layout_build_splice(&b, l, 0);
  for (int k = rank; k < r; k++)
    ir_layout_build_leaf(&b, ir_layout_s(1), ir_layout_s(0), 0);
  ir_layout_build_close(&b);
}

/* ---- inspecting layouts ------------------------------------------------------------ */

CF_API bool cf_layout_is_tiler(const cf_layout *l)
{
  return l->tree.count > 0 && ir_layout_is_tiler_node(&l->tree, 0);
}

CF_API bool cf_layout_is_static(const cf_layout *l)
{
  const uint8_t both = CF_TUPLE_NODE_STATIC0 | CF_TUPLE_NODE_STATIC1;
  for (int i = 0; i < l->tree.count; i++)
    if (ir_layout_is_leaf(&l->tree, i) && (l->tree.node[i].flags & both) != both)
      return false;
  return true;
}

CF_API int cf_layout_rank(const cf_layout *l) { return ir_layout_rank_at(&l->tree, 0); }
CF_API int cf_layout_depth(const cf_layout *l) { return ir_layout_depth_at(&l->tree, 0); }

/* Layouts leave this module with a size and cosize that fit, so these cannot fail. */
CF_API cf_tuple_int cf_layout_size(const cf_layout *l)
{
  cf_layout_err e = {CF_OK, ""};
  return ir_layout_product(&l->tree, 0, 0, &e);
}

CF_API cf_tuple_int cf_layout_cosize(const cf_layout *l)
{
  cf_layout_err e = {CF_OK, ""};
  return ir_layout_cosize_at(&l->tree, 0, &e);
}

static void extract(const cf_layout *l, int which, cf_int_tuple *out)
{
  out->tree = l->tree;
  for (int i = 0; i < out->tree.count; i++) {
    cf_tuple_node *n = &out->tree.node[i];
    if (n->arity >= 0) {
      n->flags = 0;
      continue;
    }
    IrInt v = ir_layout_leaf(&l->tree, i, which);
    n->v[0] = v.value;
    n->v[1] = 0;
    n->flags = v.is_static ? CF_TUPLE_NODE_STATIC0 : 0;
  }
}

CF_API void cf_layout_shape(const cf_layout *l, cf_int_tuple *out) { extract(l, 0, out); }
CF_API void cf_layout_stride(const cf_layout *l, cf_int_tuple *out) { extract(l, 1, out); }

CF_API bool cf_layout_equal(const cf_layout *a, const cf_layout *b)
{
  if (!ir_layout_congruent(&a->tree, 0, &b->tree, 0))
    return false;
  for (int i = 0; i < a->tree.count; i++) {
    const cf_tuple_node *x = &a->tree.node[i], *y = &b->tree.node[i];
    if (x->flags != y->flags || (x->arity < 0 && (x->v[0] != y->v[0] || x->v[1] != y->v[1])))
      return false;
  }
  return true;
}

/* ---- sublayouts -------------------------------------------------------------------- */

CF_API cf_status cf_layout_get(const cf_layout *l, const int *path, int npath, cf_layout *out,
                               cf_layout_err *err)
{
  cf_layout_err local, *e = ir_layout_err_begin(err, &local);
  int i = 0;
  for (int k = 0; k < npath && ir_layout_require_layout(&l->tree, "layout<>", e); k++) {
    int c = ir_layout_child(&l->tree, i, path[k]);
    if (c < 0)
      ir_layout_fail(e, CF_ERR_INVALID_ARGUMENT, "layout<>: index %d out of range for rank %d",
                     path[k], ir_layout_rank_at(&l->tree, i));
    i = c;
  }
  cf_tuple_tree t;
  IrBuild b;
  ir_layout_build_init(&b, &t, e);
  if (ir_layout_ok(e))
    ir_layout_build_copy(&b, &l->tree, i);
  return ir_layout_finish_layout(e, &t, out);
}

/* The tuple of the modes idx[0..n) of l. */
static void build_modes(const cf_tuple_tree *l, const int *idx, int n, const char *what,
                        cf_tuple_tree *out, cf_layout_err *e)
{
  IrBuild b;
  ir_layout_build_init(&b, out, e);
  ir_layout_build_open(&b, 0);
  for (int k = 0; k < n && ir_layout_ok(e); k++) {
    int c = ir_layout_child(l, 0, idx[k]);
    if (c < 0)
      ir_layout_fail(e, CF_ERR_INVALID_ARGUMENT, "%s: mode %d out of range for rank %d", what,
                     idx[k], ir_layout_rank_at(l, 0));
    else
      ir_layout_build_copy(&b, l, c);
  }
  ir_layout_build_close(&b);
}

CF_API cf_status cf_layout_select(const cf_layout *l, const int *idx, int n, cf_layout *out,
                                  cf_layout_err *err)
{
  cf_layout_err local, *e = ir_layout_err_begin(err, &local);
  cf_tuple_tree t;
  if (ir_layout_require_layout(&l->tree, "select", e)) {
    if (n < 0 || (n > 0 && !idx))
      ir_layout_fail(e, CF_ERR_INVALID_ARGUMENT, "select: bad index list");
    build_modes(&l->tree, idx, n, "select", &t, e);
  }
  return ir_layout_finish_layout(e, &t, out);
}

/* Checks 0 <= b, b < e (or b <= e when `empty_ok`), e <= rank. */
static bool check_range(const cf_tuple_tree *l, int b, int e_, bool empty_ok, const char *what,
                        cf_layout_err *e)
{
  int r = ir_layout_rank_at(l, 0);
  if (b < 0 || e_ > r || b > e_ || (b == e_ && !empty_ok)) {
    ir_layout_fail(e, CF_ERR_INVALID_ARGUMENT, "%s<%d,%d>: bad range for a layout of rank %d%s",
                   what, b, e_, r, b == e_ ? " (empty layouts are not allowed)" : "");
    return false;
  }
  return true;
}

CF_API cf_status cf_layout_take(const cf_layout *l, int b, int e_, cf_layout *out,
                                cf_layout_err *err)
{
  cf_layout_err local, *e = ir_layout_err_begin(err, &local);
  cf_tuple_tree t;
  if (ir_layout_require_layout(&l->tree, "take", e) && check_range(&l->tree, b, e_, false, "take", e)) {
    int idx[CF_LAYOUT_MAX_NODES];
    for (int k = b; k < e_; k++)
      idx[k - b] = k;
    build_modes(&l->tree, idx, e_ - b, "take", &t, e);
  }
  return ir_layout_finish_layout(e, &t, out);
}

CF_API cf_status cf_layout_group(const cf_layout *l, int b, int e_, cf_layout *out,
                                 cf_layout_err *err)
{
  cf_layout_err local, *e = ir_layout_err_begin(err, &local);
  cf_tuple_tree t;
  IrBuild bd;
  ir_layout_build_init(&bd, &t, e);
  if (ir_layout_require_layout(&l->tree, "group", e) && check_range(&l->tree, b, e_, true, "group", e)) {
    const cf_tuple_tree *s = &l->tree;
    ir_layout_build_open(&bd, 0);
    for (int k = 0; k < ir_layout_rank_at(s, 0); k++) {
      if (k == b && b < e_)
        ir_layout_build_open(&bd, 0);
      ir_layout_build_copy(&bd, s, ir_layout_child(s, 0, k));
      if (k == e_ - 1 && b < e_)
        ir_layout_build_close(&bd);
    }
    ir_layout_build_close(&bd);
  }
  return ir_layout_finish_layout(e, &t, out);
}

CF_API cf_status cf_layout_flatten(const cf_layout *l, cf_layout *out, cf_layout_err *err)
{
  cf_layout_err local, *e = ir_layout_err_begin(err, &local);
  cf_tuple_tree t;
  IrFlat f;
  if (ir_layout_require_layout(&l->tree, "flatten", e)) {
    ir_layout_flat_of(&l->tree, 0, &f, e);
    ir_layout_flat_to_tree(&f, &t, e);
  }
  return ir_layout_finish_layout(e, &t, out);
}

/* ---- coordinates ------------------------------------------------------------------- */

static IrInt coord_leaf(const cf_tuple_tree *c, int ci)
{
  return (c->node[ci].flags & CF_TUPLE_NODE_UNDERSCORE) ? ir_layout_s(0) : ir_layout_leaf(c, ci, 0);
}

/* An integer coordinate into a tuple mode: every mode but the last takes c % size and
 * passes c / size on; a static 0 stays a static 0 throughout. */
static IrInt crd2idx_int(IrInt c, const cf_tuple_tree *l, int li, cf_layout_err *e);

IrInt ir_layout_crd2idx_at(const cf_tuple_tree *c, int ci, const cf_tuple_tree *l, int li,
                           cf_layout_err *e)
{
  if (ir_layout_is_leaf(c, ci))
    return crd2idx_int(coord_leaf(c, ci), l, li, e);
  if (ir_layout_is_leaf(l, li) || c->node[ci].arity != l->node[li].arity) {
    ir_layout_fail(e, CF_ERR_INVALID_ARGUMENT, "crd2idx: coordinate of rank %d for a mode of rank %d",
                   c->node[ci].arity, ir_layout_rank_at(l, li));
    return ir_layout_s(0);
  }
  IrInt sum = ir_layout_s(0);
  for (int k = 0; k < c->node[ci].arity; k++) {
    IrInt x = ir_layout_crd2idx_at(c, ir_layout_child(c, ci, k), l, ir_layout_child(l, li, k), e);
    sum = k == 0 ? x : ir_layout_add(sum, x, e);
  }
  return sum;
}

static IrInt crd2idx_int(IrInt c, const cf_tuple_tree *l, int li, cf_layout_err *e)
{
  if (ir_layout_is_leaf(l, li))
    return ir_layout_mul(c, ir_layout_leaf(l, li, 1), e);
  IrInt sum = ir_layout_s(0);
  int r = l->node[li].arity;
  for (int k = 0; k < r; k++) {
    int lk = ir_layout_child(l, li, k);
    IrInt part = c;
    if (k < r - 1 && !ir_layout_is_const(c, 0)) {
      IrInt p = ir_layout_product(l, lk, 0, e);
      part = ir_layout_mod(c, p, e);
      c = ir_layout_div(c, p, e);
    }
    IrInt x = crd2idx_int(part, l, lk, e);
    sum = k == 0 ? x : ir_layout_add(sum, x, e);
  }
  return sum;
}

CF_API cf_status cf_layout_crd2idx(const cf_layout *l, const cf_int_tuple *coord,
                                   cf_tuple_int *out, cf_layout_err *err)
{
  cf_layout_err local, *e = ir_layout_err_begin(err, &local);
  IrInt r = ir_layout_s(0);
  if (ir_layout_require_layout(&l->tree, "crd2idx", e))
    r = ir_layout_crd2idx_at(&coord->tree, 0, &l->tree, 0, e);
  if (ir_layout_ok(e))
    *out = r;
  return e->status;
}

CF_API cf_status cf_layout_eval(const cf_layout *l, int64_t i, int64_t *out, cf_layout_err *err)
{
  cf_layout_err local, *e = ir_layout_err_begin(err, &local);
  IrInt r = ir_layout_s(0);
  if (ir_layout_require_layout(&l->tree, "layout(i)", e))
    r = crd2idx_int(ir_layout_d(i), &l->tree, 0, e);
  if (ir_layout_ok(e))
    *out = r.value;
  return e->status;
}

/* CuTe's idx2crd(idx, shape, stride): leaf by leaf (idx / d) % s, _0 for a static 1. */
static void idx2crd_at(int64_t idx, const cf_tuple_tree *l, int i, IrBuild *b)
{
  if (!ir_layout_is_leaf(l, i)) {
    ir_layout_build_open(b, 0);
    for (int k = 0; k < l->node[i].arity; k++)
      idx2crd_at(idx, l, ir_layout_child(l, i, k), b);
    ir_layout_build_close(b);
    return;
  }
  IrInt s = ir_layout_leaf(l, i, 0), d = ir_layout_leaf(l, i, 1);
  if (ir_layout_is_const(s, 1))
    ir_layout_build_int(b, ir_layout_s(0), 0);
  else if (d.value == 0)
    ir_layout_fail(b->e, CF_ERR_INVALID_ARGUMENT, "idx2crd: stride 0 in a mode of size %lld",
                   (long long)s.value);
  else
    ir_layout_build_int(b, ir_layout_mod(ir_layout_div(ir_layout_d(idx), d, b->e), s, b->e), 0);
}

CF_API cf_status cf_layout_idx2crd(const cf_layout *l, int64_t idx, cf_int_tuple *out,
                                   cf_layout_err *err)
{
  cf_layout_err local, *e = ir_layout_err_begin(err, &local);
  cf_tuple_tree t;
  IrBuild b;
  ir_layout_build_init(&b, &t, e);
  if (ir_layout_require_layout(&l->tree, "idx2crd", e))
    idx2crd_at(idx, &l->tree, 0, &b);
  return ir_layout_finish_tuple(e, &t, out);
}

/* CuTe's slice: `_` keeps a mode; a tuple coordinate's kept modes are spliced into the
 * enclosing tuple (lift), except at the top, where slice(_, l) is l itself. */
static void slice_lift(const cf_tuple_tree *l, int li, const cf_tuple_tree *c, int ci,
                       IrBuild *b)
{
  if (!ir_layout_ok(b->e))
    return;
  if (ir_layout_is_leaf(c, ci)) {
    if (c->node[ci].flags & CF_TUPLE_NODE_UNDERSCORE)
      ir_layout_build_copy(b, l, li);
    return;
  }
  if (ir_layout_is_leaf(l, li) || l->node[li].arity != c->node[ci].arity) {
    ir_layout_fail(b->e, CF_ERR_INVALID_ARGUMENT, "slice: coordinate of rank %d for a mode of rank %d",
                   c->node[ci].arity, ir_layout_rank_at(l, li));
    return;
  }
  for (int k = 0; k < c->node[ci].arity; k++)
    slice_lift(l, ir_layout_child(l, li, k), c, ir_layout_child(c, ci, k), b);
}

void ir_layout_slice_tree(const cf_tuple_tree *l, const cf_tuple_tree *c, cf_tuple_tree *out,
                          cf_layout_err *e)
{
  IrBuild b;
  ir_layout_build_init(&b, out, e);
  if (ir_layout_is_leaf(c, 0) && (c->node[0].flags & CF_TUPLE_NODE_UNDERSCORE)) {
    ir_layout_build_copy(&b, l, 0);
    return;
  }
  ir_layout_build_open(&b, 0);
  if (!ir_layout_is_leaf(c, 0))
    slice_lift(l, 0, c, 0, &b);
  ir_layout_build_close(&b);
}

CF_API cf_status cf_layout_slice(const cf_layout *l, const cf_int_tuple *coord, cf_layout *out,
                                 int64_t *offset, cf_layout_err *err)
{
  cf_layout_err local, *e = ir_layout_err_begin(err, &local);
  cf_tuple_tree t;
  IrInt off = ir_layout_s(0);
  if (ir_layout_require_layout(&l->tree, "slice", e)) {
    ir_layout_slice_tree(&l->tree, &coord->tree, &t, e);
    off = ir_layout_crd2idx_at(&coord->tree, 0, &l->tree, 0, e);
  }
  cf_status s = ir_layout_finish_layout(e, &t, out);
  if (s == CF_OK && offset)
    *offset = off.value;
  return s;
}
