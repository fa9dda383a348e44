/* layout/layout_core.c: layouts as objects: making them (from shape and stride, from a shape
 * with compact strides, by concatenation, as tilers), inspecting them, taking them apart
 * (get, select, take, group, flatten, append, prepend, replace) and using them as functions (crd2idx, idx2crd,
 * evaluation, slicing with `_`).
 *
 * Key decision: a layout is one tree whose leaves hold a (shape, stride) pair, so shape
 * and stride are congruent by construction and every structural operation (sublayouts,
 * grouping, slicing) is a single walk that copies subtrees, the way CuTe applies each
 * tuple operation to the shape and the stride alike. CuTe's get<0> of an integer is the
 * integer itself, and so a leaf here is a rank-1 node whose only child is itself. */
#include <string.h>

#include "layout/layout_internal.h"

/* ---- making layouts ---------------------------------------------------------------- */

static void set_stride(cf_tuple_node *n, LayInt d)
{
  n->v[1] = d.value;
  n->flags = (uint8_t)((n->flags & ~CF_TUPLE_NODE_STATIC1) | (d.is_static ? CF_TUPLE_NODE_STATIC1 : 0));
}

LayInt lay_compact(cf_tuple_tree *t, cf_layout_major major, LayInt current,
                        cf_layout_err *e)
{
  for (int k = 0; k < t->count; k++) {
    int j = major == CF_LAYOUT_LEFT ? k : t->count - 1 - k;
    if (!lay_is_leaf(t, j))
      continue;
    LayInt s = lay_leaf(t, j, 0);
    LayInt d = lay_is_const(s, 1) ? lay_s(0) : current;
    if (!lay_is_const(s, 1))
      current = lay_mul(current, s, e);
    set_stride(&t->node[j], d);
  }
  return current;
}

void lay_zip(const cf_tuple_tree *shape, const cf_tuple_tree *stride, cf_tuple_tree *out)
{
  *out = *shape;
  for (int i = 0; i < out->count; i++)
    if (lay_is_leaf(out, i))
      set_stride(&out->node[i], lay_leaf(stride, i, 0));
}

static bool require_plain_tuple(const cf_tuple_tree *t, const char *what, cf_layout_err *e)
{
  for (int i = 0; i < t->count; i++)
    if (t->node[i].flags & CF_TUPLE_NODE_UNDERSCORE) {
      lay_fail(e, CF_ERR_INVALID_ARGUMENT, "%s: '_' is not an integer", what);
      return false;
    }
  return t->count > 0;
}

CF_API cf_status cf_layout_make(const cf_int_tuple *shape, const cf_int_tuple *stride,
                                cf_layout *out, cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_tuple_tree t = shape->tree;
  if (require_plain_tuple(&shape->tree, "make_layout", e) &&
      require_plain_tuple(&stride->tree, "make_layout", e) &&
      !lay_congruent(&shape->tree, 0, &stride->tree, 0)) {
    char s[CF_LAYOUT_TEXT_MAX], d[CF_LAYOUT_TEXT_MAX];
    cf_tuple_snprint(s, sizeof s, shape);
    cf_tuple_snprint(d, sizeof d, stride);
    lay_fail(e, CF_ERR_INVALID_ARGUMENT,
                   "make_layout: shape %s and stride %s are not congruent", s, d);
  }
  if (lay_ok(e))
    lay_zip(&shape->tree, &stride->tree, &t);
  return lay_finish_layout(e, &t, out);
}

CF_API cf_status cf_layout_from_shape(const cf_int_tuple *shape, cf_layout_major major,
                                      cf_layout *out, cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_tuple_tree t = shape->tree;
  if (require_plain_tuple(&t, "make_layout", e))
    lay_compact(&t, major, lay_s(1), e);
  return lay_finish_layout(e, &t, out);
}

/* Opens a tuple (a plain one, or a by-mode tiler) holding copies of n trees. */
static void build_list(const cf_layout *elems, int n, bool tiler, const char *what,
                       cf_tuple_tree *out, cf_layout_err *e)
{
  LayBuild b;
  lay_build_init(&b, out, e);
  if (n < 0 || (n > 0 && !elems) || (tiler && n == 0))
    lay_fail(e, CF_ERR_INVALID_ARGUMENT, "%s: bad element list", what);
  lay_build_open(&b, tiler ? CF_TUPLE_NODE_TILER : 0);
  for (int k = 0; k < n && lay_ok(e); k++)
    if (tiler || lay_require_layout(&elems[k].tree, what, e))
      lay_build_copy(&b, &elems[k].tree, 0);
  lay_build_close(&b);
}

CF_API cf_status cf_layout_concat(const cf_layout *elems, int n, cf_layout *out,
                                  cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_tuple_tree t;
  build_list(elems, n, false, "make_layout", &t, e);
  return lay_finish_layout(e, &t, out);
}

CF_API cf_status cf_layout_make_tiler(const cf_layout *elems, int n, cf_layout *out,
                                      cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_tuple_tree t;
  build_list(elems, n, true, "make_tile", &t, e);
  return lay_finish_layout(e, &t, out);
}

void lay_build_shape_tiler(LayBuild *b, const cf_tuple_tree *s, int i)
{
  if (lay_is_leaf(s, i)) {
    lay_build_leaf(b, lay_leaf(s, i, 0), lay_s(1), CF_TUPLE_NODE_SHAPE);
    return;
  }
  lay_build_open(b, CF_TUPLE_NODE_TILER);
  for (int k = 0; k < s->node[i].arity; k++)
    lay_build_shape_tiler(b, s, lay_child(s, i, k));
  lay_build_close(b);
}

CF_API cf_layout cf_layout_underscore(void)
{
  cf_layout l;
  cf_layout_err e = {CF_OK, ""};
  LayBuild b;
  lay_build_init(&b, &l.tree, &e);
  lay_build_leaf(&b, lay_s(0), lay_s(0), CF_TUPLE_NODE_UNDERSCORE);
  return l;
}

CF_API cf_status cf_layout_tiler_from_shape(const cf_int_tuple *shape, cf_layout *out,
                                            cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_tuple_tree t;
  LayBuild b;
  lay_build_init(&b, &t, e);
  if (require_plain_tuple(&shape->tree, "make_tile", e))
    lay_build_shape_tiler(&b, &shape->tree, 0);
  return lay_finish_layout(e, &t, out);
}

/* CuTe's compact_order(filter_zeros(stride, shape), stride): each mode's stride is the
 * product of the sizes of the modes whose stride is smaller; dynamic strides count as
 * larger than every static one, in order of appearance; static-0 strides stay _0. */
CF_API cf_status cf_layout_make_like(const cf_layout *l, cf_layout *out, cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_tuple_tree t = l->tree;
  LayFlat f;
  lay_flat_of(&l->tree, 0, &f, e);
  int64_t order[CF_LAYOUT_MAX_NODES], max_order = 0;
  for (int k = 0; k < f.n; k++) {
    if (lay_is_const(f.d[k], 0))
      f.s[k] = lay_s(1); /* filter_zeros */
    if (f.d[k].is_static && f.d[k].value > max_order)
      max_order = f.d[k].value;
  }
  for (int k = 0; k < f.n; k++)
    order[k] = f.d[k].is_static ? f.d[k].value : max_order + 1 + k;
  int leaf = 0;
  for (int i = 0; lay_require_layout(&l->tree, "make_layout_like", e) && i < t.count; i++) {
    if (!lay_is_leaf(&t, i))
      continue;
    LayInt start = lay_s(1);
    for (int k = 0; k < f.n; k++)
      if (order[k] < order[leaf])
        start = lay_mul(start, f.s[k], e);
    LayInt d = lay_is_const(f.s[leaf], 1) ? lay_s(0) : start;
    set_stride(&t.node[i], d);
    leaf++;
  }
  return lay_finish_layout(e, &t, out);
}

void lay_concat2(const cf_tuple_tree *a, const cf_tuple_tree *b, cf_tuple_tree *out,
                       cf_layout_err *e)
{
  LayBuild bd;
  lay_build_init(&bd, out, e);
  lay_build_open(&bd, 0);
  lay_build_copy(&bd, a, 0);
  lay_build_copy(&bd, b, 0);
  lay_build_close(&bd);
}

/* CuTe's append<r>(layout): pad with _1:_0 modes up to rank r. */
void lay_append_to_rank(const cf_tuple_tree *l, int r, cf_tuple_tree *out,
                              cf_layout_err *e)
{
  int rank = lay_rank_at(l, 0);
  if (r == 1 || (rank == r && !lay_is_leaf(l, 0))) {
    *out = *l;
    return;
  }
  LayBuild b;
  lay_build_init(&b, out, e);
  lay_build_open(&b, 0);
  lay_build_splice(&b, l, 0);
  for (int k = rank; k < r; k++)
    lay_build_leaf(&b, lay_s(1), lay_s(0), 0);
  lay_build_close(&b);
}

/* ---- inspecting layouts ------------------------------------------------------------ */

CF_API bool cf_layout_is_tiler(const cf_layout *l)
{
  return l->tree.count > 0 && lay_is_tiler_node(&l->tree, 0);
}

CF_API bool cf_layout_is_static(const cf_layout *l)
{
  const uint8_t both = CF_TUPLE_NODE_STATIC0 | CF_TUPLE_NODE_STATIC1;
  for (int i = 0; i < l->tree.count; i++)
    if (lay_is_leaf(&l->tree, i) && (l->tree.node[i].flags & both) != both)
      return false;
  return true;
}

CF_API int cf_layout_rank(const cf_layout *l) { return lay_rank_at(&l->tree, 0); }
CF_API int cf_layout_depth(const cf_layout *l) { return lay_depth_at(&l->tree, 0); }

/* Layouts leave this module with a size and cosize that fit, so these cannot fail. */
CF_API cf_tuple_int cf_layout_size(const cf_layout *l)
{
  cf_layout_err e = {CF_OK, ""};
  return lay_product(&l->tree, 0, 0, &e);
}

CF_API cf_tuple_int cf_layout_cosize(const cf_layout *l)
{
  cf_layout_err e = {CF_OK, ""};
  return lay_cosize_at(&l->tree, 0, &e);
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
    LayInt v = lay_leaf(&l->tree, i, which);
    n->v[0] = v.value;
    n->v[1] = 0;
    n->flags = v.is_static ? CF_TUPLE_NODE_STATIC0 : 0;
  }
}

CF_API void cf_layout_shape(const cf_layout *l, cf_int_tuple *out) { extract(l, 0, out); }
CF_API void cf_layout_stride(const cf_layout *l, cf_int_tuple *out) { extract(l, 1, out); }

CF_API bool cf_layout_equal(const cf_layout *a, const cf_layout *b)
{
  if (!lay_congruent(&a->tree, 0, &b->tree, 0))
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
  cf_layout_err local, *e = lay_err_begin(err, &local);
  int i = 0;
  for (int k = 0; k < npath && lay_require_layout(&l->tree, "layout<>", e); k++) {
    int c = lay_child(&l->tree, i, path[k]);
    if (c < 0)
      lay_fail(e, CF_ERR_INVALID_ARGUMENT, "layout<>: index %d out of range for rank %d",
                     path[k], lay_rank_at(&l->tree, i));
    i = c;
  }
  cf_tuple_tree t;
  LayBuild b;
  lay_build_init(&b, &t, e);
  if (lay_ok(e))
    lay_build_copy(&b, &l->tree, i);
  return lay_finish_layout(e, &t, out);
}

/* The tuple of the modes idx[0..n) of l. */
static void build_modes(const cf_tuple_tree *l, const int *idx, int n, const char *what,
                        cf_tuple_tree *out, cf_layout_err *e)
{
  LayBuild b;
  lay_build_init(&b, out, e);
  lay_build_open(&b, 0);
  for (int k = 0; k < n && lay_ok(e); k++) {
    int c = lay_child(l, 0, idx[k]);
    if (c < 0)
      lay_fail(e, CF_ERR_INVALID_ARGUMENT, "%s: mode %d out of range for rank %d", what,
                     idx[k], lay_rank_at(l, 0));
    else
      lay_build_copy(&b, l, c);
  }
  lay_build_close(&b);
}

CF_API cf_status cf_layout_select(const cf_layout *l, const int *idx, int n, cf_layout *out,
                                  cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_tuple_tree t;
  if (lay_require_layout(&l->tree, "select", e)) {
    if (n < 0 || (n > 0 && !idx))
      lay_fail(e, CF_ERR_INVALID_ARGUMENT, "select: bad index list");
    build_modes(&l->tree, idx, n, "select", &t, e);
  }
  return lay_finish_layout(e, &t, out);
}

/* Checks 0 <= b, b < e (or b <= e when `empty_ok`), e <= rank. */
static bool check_range(const cf_tuple_tree *l, int b, int e_, bool empty_ok, const char *what,
                        cf_layout_err *e)
{
  int r = lay_rank_at(l, 0);
  if (b < 0 || e_ > r || b > e_ || (b == e_ && !empty_ok)) {
    lay_fail(e, CF_ERR_INVALID_ARGUMENT, "%s<%d,%d>: bad range for a layout of rank %d%s",
                   what, b, e_, r, b == e_ ? " (empty layouts are not allowed)" : "");
    return false;
  }
  return true;
}

CF_API cf_status cf_layout_take(const cf_layout *l, int b, int e_, cf_layout *out,
                                cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_tuple_tree t;
  if (lay_require_layout(&l->tree, "take", e) && check_range(&l->tree, b, e_, false, "take", e)) {
    int idx[CF_LAYOUT_MAX_NODES];
    for (int k = b; k < e_; k++)
      idx[k - b] = k;
    build_modes(&l->tree, idx, e_ - b, "take", &t, e);
  }
  return lay_finish_layout(e, &t, out);
}

CF_API cf_status cf_layout_group(const cf_layout *l, int b, int e_, cf_layout *out,
                                 cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_tuple_tree t;
  LayBuild bd;
  lay_build_init(&bd, &t, e);
  if (lay_require_layout(&l->tree, "group", e) && check_range(&l->tree, b, e_, true, "group", e)) {
    const cf_tuple_tree *s = &l->tree;
    lay_build_open(&bd, 0);
    for (int k = 0; k < lay_rank_at(s, 0); k++) {
      if (k == b && b < e_)
        lay_build_open(&bd, 0);
      lay_build_copy(&bd, s, lay_child(s, 0, k));
      if (k == e_ - 1 && b < e_)
        lay_build_close(&bd);
    }
    lay_build_close(&bd);
  }
  return lay_finish_layout(e, &t, out);
}

CF_API cf_status cf_layout_flatten(const cf_layout *l, cf_layout *out, cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_tuple_tree t;
  LayFlat f;
  if (lay_require_layout(&l->tree, "flatten", e)) {
    lay_flat_of(&l->tree, 0, &f, e);
    lay_flat_to_tree(&f, &t, e);
  }
  return lay_finish_layout(e, &t, out);
}

/* CuTe's append, prepend and replace on layouts (and so on shape and stride alike): a
 * tuple layout gets x as a new last (first) mode or as its mode n; an integral layout
 * counts as the rank-1 tuple of itself, so append(4:1, x) is (4,x), and replace<0> of it
 * is x. x NULL means _1:_0, CuTe's default. */
typedef enum Edit { EDIT_APPEND, EDIT_PREPEND, EDIT_REPLACE } Edit;

static cf_status edit_modes(Edit what, const cf_layout *l, int n, const cf_layout *x,
                            cf_layout *out, cf_layout_err *err)
{
  static const char *const names[] = {"append", "prepend", "replace"};
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_layout unit;
  cf_tuple_tree t;
  LayBuild b;
  lay_build_init(&b, &t, e);
  lay_build_leaf(&b, lay_s(1), lay_s(0), 0);
  unit.tree = t;
  x = x ? x : &unit;
  if (!lay_require_layout(&l->tree, names[what], e) || !lay_require_layout(&x->tree, names[what], e))
    return e->status;
  int r = lay_rank_at(&l->tree, 0);
  if (what == EDIT_REPLACE && (n < 0 || n >= r))
    lay_fail(e, CF_ERR_INVALID_ARGUMENT, "replace<%d>: mode out of range for rank %d", n, r);
  lay_build_init(&b, &t, e);
  if (what == EDIT_REPLACE && lay_is_leaf(&l->tree, 0)) {
    lay_build_copy(&b, &x->tree, 0);
    return lay_finish_layout(e, &t, out);
  }
  lay_build_open(&b, 0);
  if (what == EDIT_PREPEND)
    lay_build_copy(&b, &x->tree, 0);
  for (int k = 0; k < r; k++)
    lay_build_copy(&b, what == EDIT_REPLACE && k == n ? &x->tree : &l->tree,
                   what == EDIT_REPLACE && k == n ? 0 : lay_child(&l->tree, 0, k));
  if (what == EDIT_APPEND)
    lay_build_copy(&b, &x->tree, 0);
  lay_build_close(&b);
  return lay_finish_layout(e, &t, out);
}

CF_API cf_status cf_layout_append(const cf_layout *l, const cf_layout *x, cf_layout *out,
                                  cf_layout_err *err)
{
  return edit_modes(EDIT_APPEND, l, 0, x, out, err);
}

CF_API cf_status cf_layout_prepend(const cf_layout *l, const cf_layout *x, cf_layout *out,
                                   cf_layout_err *err)
{
  return edit_modes(EDIT_PREPEND, l, 0, x, out, err);
}

CF_API cf_status cf_layout_replace(const cf_layout *l, int n, const cf_layout *x, cf_layout *out,
                                   cf_layout_err *err)
{
  if (!x) {
    cf_layout_err local, *e = lay_err_begin(err, &local);
    lay_fail(e, CF_ERR_INVALID_ARGUMENT, "replace<%d>: no layout to put in", n);
    return e->status;
  }
  return edit_modes(EDIT_REPLACE, l, n, x, out, err);
}

/* ---- coordinates ------------------------------------------------------------------- */

static LayInt coord_leaf(const cf_tuple_tree *c, int ci)
{
  return (c->node[ci].flags & CF_TUPLE_NODE_UNDERSCORE) ? lay_s(0) : lay_leaf(c, ci, 0);
}

/* An integer coordinate into a tuple mode: every mode but the last takes c % size and
 * passes c / size on; a static 0 stays a static 0 throughout. */
static LayInt crd2idx_int(LayInt c, const cf_tuple_tree *l, int li, cf_layout_err *e);

LayInt lay_crd2idx_at(const cf_tuple_tree *c, int ci, const cf_tuple_tree *l, int li,
                           cf_layout_err *e)
{
  if (lay_is_leaf(c, ci))
    return crd2idx_int(coord_leaf(c, ci), l, li, e);
  if (lay_is_leaf(l, li) || c->node[ci].arity != l->node[li].arity) {
    lay_fail(e, CF_ERR_INVALID_ARGUMENT, "crd2idx: coordinate of rank %d for a mode of rank %d",
                   c->node[ci].arity, lay_rank_at(l, li));
    return lay_s(0);
  }
  LayInt sum = lay_s(0);
  for (int k = 0; k < c->node[ci].arity; k++) {
    LayInt x = lay_crd2idx_at(c, lay_child(c, ci, k), l, lay_child(l, li, k), e);
    sum = k == 0 ? x : lay_add(sum, x, e);
  }
  return sum;
}

static LayInt crd2idx_int(LayInt c, const cf_tuple_tree *l, int li, cf_layout_err *e)
{
  if (lay_is_leaf(l, li))
    return lay_mul(c, lay_leaf(l, li, 1), e);
  LayInt sum = lay_s(0);
  int r = l->node[li].arity;
  for (int k = 0; k < r; k++) {
    int lk = lay_child(l, li, k);
    LayInt part = c;
    if (k < r - 1 && !lay_is_const(c, 0)) {
      LayInt p = lay_product(l, lk, 0, e);
      part = lay_mod(c, p, e);
      c = lay_div(c, p, e);
    }
    LayInt x = crd2idx_int(part, l, lk, e);
    sum = k == 0 ? x : lay_add(sum, x, e);
  }
  return sum;
}

CF_API cf_status cf_layout_crd2idx(const cf_layout *l, const cf_int_tuple *coord,
                                   cf_tuple_int *out, cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  LayInt r = lay_s(0);
  if (lay_require_layout(&l->tree, "crd2idx", e))
    r = lay_crd2idx_at(&coord->tree, 0, &l->tree, 0, e);
  if (lay_ok(e))
    *out = r;
  return e->status;
}

CF_API cf_status cf_layout_eval(const cf_layout *l, int64_t i, int64_t *out, cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  LayInt r = lay_s(0);
  if (lay_require_layout(&l->tree, "layout(i)", e))
    r = crd2idx_int(lay_d(i), &l->tree, 0, e);
  if (lay_ok(e))
    *out = r.value;
  return e->status;
}

/* CuTe's idx2crd(idx, shape, stride): an integer index goes leaf by leaf, (idx / d) % s
 * (_0 for a static 1); a tuple index goes mode by mode, each mode its own index. */
static void idx2crd_at(LayInt idx, const cf_tuple_tree *l, int i, LayBuild *b)
{
  if (!lay_is_leaf(l, i)) {
    lay_build_open(b, 0);
    for (int k = 0; k < l->node[i].arity; k++)
      idx2crd_at(idx, l, lay_child(l, i, k), b);
    lay_build_close(b);
    return;
  }
  LayInt s = lay_leaf(l, i, 0), d = lay_leaf(l, i, 1);
  if (lay_is_const(s, 1))
    lay_build_int(b, lay_s(0), 0);
  else if (d.value == 0)
    lay_fail(b->e, CF_ERR_INVALID_ARGUMENT, "idx2crd: stride 0 in a mode of size %lld",
             (long long)s.value);
  else
    lay_build_int(b, lay_mod(lay_div(idx, d, b->e), s, b->e), 0);
}

static void idx2crd_tuple_at(const cf_tuple_tree *c, int ci, const cf_tuple_tree *l, int li,
                             LayBuild *b)
{
  if (!lay_ok(b->e))
    return;
  if (lay_is_underscore(c, ci)) {
    lay_fail(b->e, CF_ERR_INVALID_ARGUMENT, "idx2crd: '_' is not an index");
    return;
  }
  if (lay_is_leaf(c, ci)) {
    idx2crd_at(lay_leaf(c, ci, 0), l, li, b);
    return;
  }
  if (lay_is_leaf(l, li) || l->node[li].arity != c->node[ci].arity) {
    lay_fail(b->e, CF_ERR_INVALID_ARGUMENT, "idx2crd: index of rank %d for a mode of rank %d",
             c->node[ci].arity, lay_rank_at(l, li));
    return;
  }
  lay_build_open(b, 0);
  for (int k = 0; k < c->node[ci].arity; k++)
    idx2crd_tuple_at(c, lay_child(c, ci, k), l, lay_child(l, li, k), b);
  lay_build_close(b);
}

CF_API cf_status cf_layout_idx2crd(const cf_layout *l, int64_t idx, cf_int_tuple *out,
                                   cf_layout_err *err)
{
  cf_int_tuple i = cf_tuple_from_int(lay_d(idx));
  return cf_layout_idx2crd_tuple(l, &i, out, err);
}

CF_API cf_status cf_layout_idx2crd_tuple(const cf_layout *l, const cf_int_tuple *idx,
                                         cf_int_tuple *out, cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_tuple_tree t;
  LayBuild b;
  lay_build_init(&b, &t, e);
  if (lay_require_layout(&l->tree, "idx2crd", e))
    idx2crd_tuple_at(&idx->tree, 0, &l->tree, 0, &b);
  return lay_finish_tuple(e, &t, out);
}

/* CuTe's slice: `_` keeps a mode; a tuple coordinate's kept modes are spliced into the
 * enclosing tuple (lift), except at the top, where slice(_, l) is l itself. */
static void slice_lift(const cf_tuple_tree *l, int li, const cf_tuple_tree *c, int ci,
                       LayBuild *b)
{
  if (!lay_ok(b->e))
    return;
  if (lay_is_leaf(c, ci)) {
    if (c->node[ci].flags & CF_TUPLE_NODE_UNDERSCORE)
      lay_build_copy(b, l, li);
    return;
  }
  if (lay_is_leaf(l, li) || l->node[li].arity != c->node[ci].arity) {
    lay_fail(b->e, CF_ERR_INVALID_ARGUMENT, "slice: coordinate of rank %d for a mode of rank %d",
                   c->node[ci].arity, lay_rank_at(l, li));
    return;
  }
  for (int k = 0; k < c->node[ci].arity; k++)
    slice_lift(l, lay_child(l, li, k), c, lay_child(c, ci, k), b);
}

void lay_slice_tree(const cf_tuple_tree *l, const cf_tuple_tree *c, cf_tuple_tree *out,
                          cf_layout_err *e)
{
  LayBuild b;
  lay_build_init(&b, out, e);
  if (lay_is_leaf(c, 0) && (c->node[0].flags & CF_TUPLE_NODE_UNDERSCORE)) {
    lay_build_copy(&b, l, 0);
    return;
  }
  lay_build_open(&b, 0);
  if (!lay_is_leaf(c, 0))
    slice_lift(l, 0, c, 0, &b);
  lay_build_close(&b);
}

CF_API cf_status cf_layout_slice(const cf_layout *l, const cf_int_tuple *coord, cf_layout *out,
                                 int64_t *offset, cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_tuple_tree t;
  LayInt off = lay_s(0);
  if (lay_require_layout(&l->tree, "slice", e)) {
    lay_slice_tree(&l->tree, &coord->tree, &t, e);
    off = lay_crd2idx_at(&coord->tree, 0, &l->tree, 0, e);
  }
  cf_status s = lay_finish_layout(e, &t, out);
  if (s == CF_OK && offset)
    *offset = off.value;
  return s;
}
