/* layout/layout_tiling.c: divides and products, the tiling operations built from the algebra
 * of layout/layout_algebra.c, and the table of binary operations that tools use by name.
 *
 *   logical_divide(A, B)  = A o (B, complement(B, shape(coalesce(A))))
 *   logical_product(A, B) = (A, complement(A, size(A) * cosize(B)) o B)
 *
 * both applied mode by mode when B is a tiler (extra modes of A are kept), and then
 * rearranged: zipped_* gathers the tiles and the rests into two modes (CuTe's zip2_by,
 * guided by the tiler), tiled_* and flat_* unpack those modes the way CuTe's slicing with
 * `repeat<R>(_)` does. Key decision: every variant is one of those two definitions plus
 * a rearrangement, so there is exactly one place where each is computed. */
#include <string.h>

#include "layout/layout_internal.h"

void lay_tiler_leaf(const cf_tuple_tree *t, int i, bool for_composition,
                          cf_tuple_tree *out, cf_layout_err *e)
{
  LayBuild b;
  lay_build_init(&b, out, e);
  if (!(t->node[i].flags & CF_TUPLE_NODE_SHAPE)) {
    lay_build_copy(&b, t, i);
    return;
  }
  LayInt n = lay_leaf(t, i, 0);
  bool one = !for_composition && lay_is_const(n, 1); /* make_layout(_1) is _1:_0 */
  lay_build_leaf(&b, n, lay_s(one ? 0 : 1), 0);
}

static void subtree(const cf_tuple_tree *t, int i, cf_tuple_tree *out, cf_layout_err *e)
{
  LayBuild b;
  lay_build_init(&b, out, e);
  lay_build_copy(&b, t, i);
}

/* One mode of A (a layout) by one layout B of the tiler. */
typedef void (*ModeOp)(const cf_tuple_tree *a, const cf_tuple_tree *b, cf_tuple_tree *out,
                       cf_layout_err *e);

static void divide_mode(const cf_tuple_tree *a, const cf_tuple_tree *b, cf_tuple_tree *out,
                        cf_layout_err *e)
{
  cf_tuple_tree ca, cot, comp, both;
  lay_coalesce_tree(a, &ca, e);
  cf_int_tuple shape;
  cf_layout cl = {ca};
  cf_layout_shape(&cl, &shape);
  cot = shape.tree;
  lay_complement_tree(b, &cot, &comp, e);
  lay_concat2(b, &comp, &both, e);
  if (lay_ok(e))
    lay_composition_tree(a, &both, out, e);
}

static void product_mode(const cf_tuple_tree *a, const cf_tuple_tree *b, cf_tuple_tree *out,
                         cf_layout_err *e)
{
  cf_tuple_tree cot, comp, rep;
  LayBuild bd;
  lay_build_init(&bd, &cot, e);
  LayInt n = lay_mul(lay_product(a, 0, 0, e), lay_cosize_at(b, 0, e), e);
  lay_build_int(&bd, n, 0);
  lay_complement_tree(a, &cot, &comp, e);
  if (lay_ok(e))
    lay_composition_tree(&comp, b, &rep, e);
  if (lay_ok(e))
    lay_concat2(a, &rep, out, e);
}

/* CuTe's transform_layout over (A, tiler): op on each pair of modes, A's extra modes
 * appended unchanged; op itself where the tiler is a layout; A's mode itself at `_`. */
static void by_mode(ModeOp op, const char *what, const cf_tuple_tree *a, int ai,
                    const cf_tuple_tree *t, int ti, LayBuild *b)
{
  if (!lay_ok(b->e))
    return;
  if (t->node[ti].flags & CF_TUPLE_NODE_TILER) {
    int rt = t->node[ti].arity, ra = lay_rank_at(a, ai);
    if (rt > ra) {
      lay_fail(b->e, CF_ERR_INVALID_ARGUMENT, "%s: tiler of rank %d for a layout of rank %d",
                     what, rt, ra);
      return;
    }
    lay_build_open(b, 0);
    for (int k = 0; k < ra; k++) {
      int ak = lay_child(a, ai, k);
      if (k < rt)
        by_mode(op, what, a, ak, t, lay_child(t, ti, k), b);
      else
        lay_build_copy(b, a, ak);
    }
    lay_build_close(b);
    return;
  }
  if (lay_is_underscore(t, ti)) { /* CuTe: `_` keeps the mode as it is */
    lay_build_copy(b, a, ai);
    return;
  }
  cf_tuple_tree am, tm, r;
  subtree(a, ai, &am, b->e);
  lay_tiler_leaf(t, ti, false, &tm, b->e);
  op(&am, &tm, &r, b->e);
  if (lay_ok(b->e))
    lay_build_copy(b, &r, 0);
}

/* CuTe's zip2_by: for a tiler, ((A,a),((B,b),(C,c)),d) becomes ((A,(B,C)),(a,(b,c),d)). */
static void zip2_by(const cf_tuple_tree *l, int li, const cf_tuple_tree *g, int gi,
                    cf_tuple_tree *out, cf_layout_err *e)
{
  if (!lay_ok(e))
    return;
  int rl = lay_rank_at(l, li);
  if (!(g->node[gi].flags & CF_TUPLE_NODE_TILER)) {
    if (rl != 2 && lay_is_underscore(g, gi))
      lay_fail(e, CF_ERR_INVALID_ARGUMENT, "'_' keeps a mode of rank %d whole, but splitting "
               "it into tile and rest needs rank 2 (as in CuTe's zip2_by)", rl);
    else if (rl != 2)
      lay_fail(e, CF_ERR_INTERNAL, "zip2_by: mode of rank %d, expected 2", rl);
    subtree(l, li, out, e);
    return;
  }
  int rg = g->node[gi].arity;
  cf_tuple_tree first, second, split;
  LayBuild bf, bs;
  lay_build_init(&bf, &first, e);
  lay_build_init(&bs, &second, e);
  lay_build_open(&bf, 0);
  lay_build_open(&bs, 0);
  for (int k = 0; k < rl && lay_ok(e); k++) {
    int lk = lay_child(l, li, k);
    if (k >= rg) {
      lay_build_copy(&bs, l, lk);
      continue;
    }
    zip2_by(l, lk, g, lay_child(g, gi, k), &split, e);
    if (!lay_ok(e))
      return;
    lay_build_copy(&bf, &split, lay_child(&split, 0, 0));
    lay_build_copy(&bs, &split, lay_child(&split, 0, 1));
  }
  lay_build_close(&bf);
  lay_build_close(&bs);
  lay_concat2(&first, &second, out, e);
}

/* Adds mode i as CuTe's slice with repeat<rank>(_) keeps it: a rank-1 mode whole, the
 * modes of a wider one one by one. */
static void unpack(LayBuild *b, const cf_tuple_tree *t, int i, bool unpack_it)
{
  if (unpack_it && lay_rank_at(t, i) > 1)
    lay_build_splice(b, t, i);
  else
    lay_build_copy(b, t, i);
}

typedef enum Arrange { ARR_LOGICAL, ARR_ZIPPED, ARR_TILED, ARR_FLAT } Arrange;

static cf_status tile_op(ModeOp op, Arrange arr, const char *what, const cf_layout *a,
                         const cf_layout *tiler, cf_layout *out, cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_tuple_tree r, z, t;
  LayBuild b;
  lay_build_init(&b, &r, e);
  if (lay_require_layout(&a->tree, what, e) && tiler->tree.count > 0)
    by_mode(op, what, &a->tree, 0, &tiler->tree, 0, &b);
  lay_err_context(e, what);
  if (arr == ARR_LOGICAL || !lay_ok(e))
    return lay_finish_layout(e, &r, out);
  zip2_by(&r, 0, &tiler->tree, 0, &z, e);
  lay_err_context(e, what);
  if (arr == ARR_ZIPPED || !lay_ok(e))
    return lay_finish_layout(e, &z, out);
  lay_build_init(&b, &t, e);
  lay_build_open(&b, 0);
  unpack(&b, &z, lay_child(&z, 0, 0), arr == ARR_FLAT);
  unpack(&b, &z, lay_child(&z, 0, 1), true);
  lay_build_close(&b);
  return lay_finish_layout(e, &t, out);
}

#define TILE_FN(name, op, arr)                                                              \
  CF_API cf_status cf_layout_##name(const cf_layout *a, const cf_layout *tiler,             \
                                    cf_layout *out, cf_layout_err *err)                     \
  {                                                                                         \
    return tile_op(op, arr, #name, a, tiler, out, err);                                     \
  }
TILE_FN(logical_divide, divide_mode, ARR_LOGICAL)
TILE_FN(zipped_divide, divide_mode, ARR_ZIPPED)
TILE_FN(tiled_divide, divide_mode, ARR_TILED)
TILE_FN(flat_divide, divide_mode, ARR_FLAT)
TILE_FN(logical_product, product_mode, ARR_LOGICAL)
TILE_FN(zipped_product, product_mode, ARR_ZIPPED)
TILE_FN(tiled_product, product_mode, ARR_TILED)
TILE_FN(flat_product, product_mode, ARR_FLAT)
#undef TILE_FN

/* CuTe's zip of the two modes x, y of prod: ((x0,y0),(x1,y1),...), or ((x,y)) when x is
 * an integral mode. */
static void zip_pair(const cf_tuple_tree *prod, bool swap, const char *what, LayBuild *b)
{
  int x = lay_child(prod, 0, swap ? 1 : 0), y = lay_child(prod, 0, swap ? 0 : 1);
  int rx = lay_rank_at(prod, x), ry = lay_rank_at(prod, y);
  if (!lay_is_leaf(prod, x) && rx != ry) {
    lay_fail(b->e, CF_ERR_INVALID_ARGUMENT, "%s: mismatched ranks %d and %d", what,
                   rx, ry);
    return;
  }
  lay_build_open(b, 0);
  for (int k = 0; k < rx; k++) {
    lay_build_open(b, 0);
    lay_build_copy(b, prod, lay_child(prod, x, k));
    lay_build_copy(b, prod, lay_is_leaf(prod, x) ? y : lay_child(prod, y, k));
    lay_build_close(b);
  }
  lay_build_close(b);
}

/* blocked and raked products: pad both layouts to the same rank, take their logical
 * product as layouts, and zip mode k of one part with mode k of the other. */
static cf_status rank_product(bool raked, const char *what, const cf_layout *a,
                              const cf_layout *b, cf_layout *out, cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_tuple_tree pa, pb, prod, t;
  LayBuild bd;
  lay_build_init(&bd, &t, e);
  if (lay_require_layout(&a->tree, what, e) && lay_require_layout(&b->tree, what, e)) {
    int ra = lay_rank_at(&a->tree, 0), rb = lay_rank_at(&b->tree, 0);
    int r = ra > rb ? ra : rb;
    lay_append_to_rank(&a->tree, r, &pa, e);
    lay_append_to_rank(&b->tree, r, &pb, e);
    product_mode(&pa, &pb, &prod, e);
  }
  lay_err_context(e, what);
  if (lay_ok(e))
    zip_pair(&prod, raked, what, &bd);
  return lay_finish_layout(e, &t, out);
}

CF_API cf_status cf_layout_blocked_product(const cf_layout *a, const cf_layout *b,
                                           cf_layout *out, cf_layout_err *err)
{
  return rank_product(false, "blocked_product", a, b, out, err);
}

CF_API cf_status cf_layout_raked_product(const cf_layout *a, const cf_layout *b,
                                         cf_layout *out, cf_layout_err *err)
{
  return rank_product(true, "raked_product", a, b, out, err);
}

/* ---- operations by name ------------------------------------------------------------ */

typedef cf_status (*BinaryFn)(const cf_layout *, const cf_layout *, cf_layout *, cf_layout_err *);

static const struct {
  const char *name;
  BinaryFn fn;
  bool takes_tiler;
} OPS[CF_LAYOUT_OP_COUNT] = {
    [CF_LAYOUT_OP_COMPOSITION] = {"composition", cf_layout_composition, true},
    [CF_LAYOUT_OP_LOGICAL_DIVIDE] = {"logical_divide", cf_layout_logical_divide, true},
    [CF_LAYOUT_OP_ZIPPED_DIVIDE] = {"zipped_divide", cf_layout_zipped_divide, true},
    [CF_LAYOUT_OP_TILED_DIVIDE] = {"tiled_divide", cf_layout_tiled_divide, true},
    [CF_LAYOUT_OP_FLAT_DIVIDE] = {"flat_divide", cf_layout_flat_divide, true},
    [CF_LAYOUT_OP_LOGICAL_PRODUCT] = {"logical_product", cf_layout_logical_product, true},
    [CF_LAYOUT_OP_ZIPPED_PRODUCT] = {"zipped_product", cf_layout_zipped_product, true},
    [CF_LAYOUT_OP_TILED_PRODUCT] = {"tiled_product", cf_layout_tiled_product, true},
    [CF_LAYOUT_OP_FLAT_PRODUCT] = {"flat_product", cf_layout_flat_product, true},
    [CF_LAYOUT_OP_BLOCKED_PRODUCT] = {"blocked_product", cf_layout_blocked_product, false},
    [CF_LAYOUT_OP_RAKED_PRODUCT] = {"raked_product", cf_layout_raked_product, false},
};

CF_API const char *cf_layout_op_name(cf_layout_op op)
{
  return (unsigned)op < CF_LAYOUT_OP_COUNT ? OPS[op].name : NULL;
}

CF_API bool cf_layout_op_from_name(const char *name, cf_layout_op *op)
{
  for (int k = 0; name && k < CF_LAYOUT_OP_COUNT; k++)
    if (strcmp(OPS[k].name, name) == 0) {
      *op = (cf_layout_op)k;
      return true;
    }
  return false;
}

CF_API bool cf_layout_op_takes_tiler(cf_layout_op op)
{
  return (unsigned)op < CF_LAYOUT_OP_COUNT && OPS[op].takes_tiler;
}

CF_API cf_status cf_layout_apply(cf_layout_op op, const cf_layout *a, const cf_layout *b,
                                 cf_layout *out, cf_layout_err *err)
{
  if ((unsigned)op >= CF_LAYOUT_OP_COUNT) {
    cf_layout_err local, *e = lay_err_begin(err, &local);
    lay_fail(e, CF_ERR_INVALID_ARGUMENT, "no layout operation %d", (int)op);
    return e->status;
  }
  return OPS[op].fn(a, b, out, err);
}
