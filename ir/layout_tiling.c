/* ir/layout_tiling.c: divides and products, the tiling operations built from the algebra
 * of ir/layout_algebra.c, and the table of binary operations that tools use by name.
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

#include "ir/layout_internal.h"

void ir_layout_tiler_leaf(const cf_tuple_tree *t, int i, bool for_composition,
                          cf_tuple_tree *out, cf_layout_err *e)
{
  IrBuild b;
  ir_layout_build_init(&b, out, e);
  if (!(t->node[i].flags & CF_TUPLE_NODE_SHAPE)) {
    ir_layout_build_copy(&b, t, i);
    return;
  }
  IrInt n = ir_layout_leaf(t, i, 0);
  bool one = !for_composition && ir_layout_is_const(n, 1); /* make_layout(_1) is _1:_0 */
  ir_layout_build_leaf(&b, n, ir_layout_s(one ? 0 : 1), 0);
}

static void subtree(const cf_tuple_tree *t, int i, cf_tuple_tree *out, cf_layout_err *e)
{
  IrBuild b;
  ir_layout_build_init(&b, out, e);
  ir_layout_build_copy(&b, t, i);
}

/* One mode of A (a layout) by one layout B of the tiler. */
typedef void (*ModeOp)(const cf_tuple_tree *a, const cf_tuple_tree *b, cf_tuple_tree *out,
                       cf_layout_err *e);

static void divide_mode(const cf_tuple_tree *a, const cf_tuple_tree *b, cf_tuple_tree *out,
                        cf_layout_err *e)
{
  cf_tuple_tree ca, cot, comp, both;
  ir_layout_coalesce_tree(a, &ca, e);
  cf_int_tuple shape;
  cf_layout cl = {ca};
  cf_layout_shape(&cl, &shape);
  cot = shape.tree;
  ir_layout_complement_tree(b, &cot, &comp, e);
  ir_layout_concat2(b, &comp, &both, e);
  if (ir_layout_ok(e))
    ir_layout_composition_tree(a, &both, out, e);
}

static void product_mode(const cf_tuple_tree *a, const cf_tuple_tree *b, cf_tuple_tree *out,
                         cf_layout_err *e)
{
  cf_tuple_tree cot, comp, rep;
  IrBuild bd;
  ir_layout_build_init(&bd, &cot, e);
  IrInt n = ir_layout_mul(ir_layout_product(a, 0, 0, e), ir_layout_cosize_at(b, 0, e), e);
  ir_layout_build_int(&bd, n, 0);
  ir_layout_complement_tree(a, &cot, &comp, e);
  if (ir_layout_ok(e))
    ir_layout_composition_tree(&comp, b, &rep, e);
  if (ir_layout_ok(e))
    ir_layout_concat2(a, &rep, out, e);
}

/* CuTe's transform_layout over (A, tiler): op on each pair of modes, A's extra modes
 * appended unchanged; op itself where the tiler is a layout. */
static void by_mode(ModeOp op, const char *what, const cf_tuple_tree *a, int ai,
                    const cf_tuple_tree *t, int ti, IrBuild *b)
{
  if (!ir_layout_ok(b->e))
    return;
  if (t->node[ti].flags & CF_TUPLE_NODE_TILER) {
    int rt = t->node[ti].arity, ra = ir_layout_rank_at(a, ai);
    if (rt > ra) {
      ir_layout_fail(b->e, CF_ERR_INVALID_ARGUMENT, "%s: tiler of rank %d for a layout of rank %d",
                     what, rt, ra);
      return;
    }
    ir_layout_build_open(b, 0);
    for (int k = 0; k < ra; k++) {
      int ak = ir_layout_child(a, ai, k);
      if (k < rt)
        by_mode(op, what, a, ak, t, ir_layout_child(t, ti, k), b);
      else
        ir_layout_build_copy(b, a, ak);
    }
    ir_layout_build_close(b);
    return;
  }
  cf_tuple_tree am, tm, r;
  subtree(a, ai, &am, b->e);
  ir_layout_tiler_leaf(t, ti, false, &tm, b->e);
  op(&am, &tm, &r, b->e);
  if (ir_layout_ok(b->e))
    ir_layout_build_copy(b, &r, 0);
}

/* CuTe's zip2_by: for a tiler, ((A,a),((B,b),(C,c)),d) becomes ((A,(B,C)),(a,(b,c),d)). */
static void zip2_by(const cf_tuple_tree *l, int li, const cf_tuple_tree *g, int gi,
                    cf_tuple_tree *out, cf_layout_err *e)
{
  if (!ir_layout_ok(e))
    return;
  int rl = ir_layout_rank_at(l, li);
  if (!(g->node[gi].flags & CF_TUPLE_NODE_TILER)) {
    if (rl != 2)
      ir_layout_fail(e, CF_ERR_INTERNAL, "zip2_by: mode of rank %d, expected 2", rl);
    subtree(l, li, out, e);
    return;
  }
  int rg = g->node[gi].arity;
  cf_tuple_tree first, second, split;
  IrBuild bf, bs;
  ir_layout_build_init(&bf, &first, e);
  ir_layout_build_init(&bs, &second, e);
  ir_layout_build_open(&bf, 0);
  ir_layout_build_open(&bs, 0);
  for (int k = 0; k < rl && ir_layout_ok(e); k++) {
    int lk = ir_layout_child(l, li, k);
    if (k >= rg) {
      ir_layout_build_copy(&bs, l, lk);
      continue;
    }
    zip2_by(l, lk, g, ir_layout_child(g, gi, k), &split, e);
    if (!ir_layout_ok(e))
      return;
    ir_layout_build_copy(&bf, &split, ir_layout_child(&split, 0, 0));
    ir_layout_build_copy(&bs, &split, ir_layout_child(&split, 0, 1));
  }
  ir_layout_build_close(&bf);
  ir_layout_build_close(&bs);
  ir_layout_concat2(&first, &second, out, e);
}

/* Adds mode i as CuTe's slice with repeat<rank>(_) keeps it: a rank-1 mode whole, the
 * modes of a wider one one by one. */
static void unpack(IrBuild *b, const cf_tuple_tree *t, int i, bool unpack_it)
{
  if (unpack_it && ir_layout_rank_at(t, i) > 1)
    ir_layout_build_splice(b, t, i);
  else
    ir_layout_build_copy(b, t, i);
}

typedef enum Arrange { ARR_LOGICAL, ARR_ZIPPED, ARR_TILED, ARR_FLAT } Arrange;

static cf_status tile_op(ModeOp op, Arrange arr, const char *what, const cf_layout *a,
                         const cf_layout *tiler, cf_layout *out, cf_layout_err *err)
{
  cf_layout_err local, *e = ir_layout_err_begin(err, &local);
  cf_tuple_tree r, z, t;
  IrBuild b;
  ir_layout_build_init(&b, &r, e);
  if (ir_layout_require_layout(&a->tree, what, e) && tiler->tree.count > 0)
    by_mode(op, what, &a->tree, 0, &tiler->tree, 0, &b);
  ir_layout_err_context(e, what);
  if (arr == ARR_LOGICAL || !ir_layout_ok(e))
    return ir_layout_finish_layout(e, &r, out);
  zip2_by(&r, 0, &tiler->tree, 0, &z, e);
  if (arr == ARR_ZIPPED || !ir_layout_ok(e))
    return ir_layout_finish_layout(e, &z, out);
  ir_layout_build_init(&b, &t, e);
  ir_layout_build_open(&b, 0);
  unpack(&b, &z, ir_layout_child(&z, 0, 0), arr == ARR_FLAT);
  unpack(&b, &z, ir_layout_child(&z, 0, 1), true);
  ir_layout_build_close(&b);
  return ir_layout_finish_layout(e, &t, out);
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
static void zip_pair(const cf_tuple_tree *prod, bool swap, const char *what, IrBuild *b)
{
  int x = ir_layout_child(prod, 0, swap ? 1 : 0), y = ir_layout_child(prod, 0, swap ? 0 : 1);
  int rx = ir_layout_rank_at(prod, x), ry = ir_layout_rank_at(prod, y);
  if (!ir_layout_is_leaf(prod, x) && rx != ry) {
    ir_layout_fail(b->e, CF_ERR_INVALID_ARGUMENT, "%s: mismatched ranks %d and %d", what,
                   rx, ry);
    return;
  }
  ir_layout_build_open(b, 0);
  for (int k = 0; k < rx; k++) {
    ir_layout_build_open(b, 0);
    ir_layout_build_copy(b, prod, ir_layout_child(prod, x, k));
    ir_layout_build_copy(b, prod, ir_layout_is_leaf(prod, x) ? y : ir_layout_child(prod, y, k));
    ir_layout_build_close(b);
  }
  ir_layout_build_close(b);
}

/* blocked and raked products: pad both layouts to the same rank, take their logical
 * product as layouts, and zip mode k of one part with mode k of the other. */
static cf_status rank_product(bool raked, const char *what, const cf_layout *a,
                              const cf_layout *b, cf_layout *out, cf_layout_err *err)
{
  cf_layout_err local, *e = ir_layout_err_begin(err, &local);
  cf_tuple_tree pa, pb, prod, t;
  IrBuild bd;
  ir_layout_build_init(&bd, &t, e);
  if (ir_layout_require_layout(&a->tree, what, e) && ir_layout_require_layout(&b->tree, what, e)) {
    int ra = ir_layout_rank_at(&a->tree, 0), rb = ir_layout_rank_at(&b->tree, 0);
    int r = ra > rb ? ra : rb;
    ir_layout_append_to_rank(&a->tree, r, &pa, e);
    ir_layout_append_to_rank(&b->tree, r, &pb, e);
    product_mode(&pa, &pb, &prod, e);
  }
  ir_layout_err_context(e, what);
  if (ir_layout_ok(e))
    zip_pair(&prod, raked, what, &bd);
  return ir_layout_finish_layout(e, &t, out);
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
    cf_layout_err local, *e = ir_layout_err_begin(err, &local);
    ir_layout_fail(e, CF_ERR_INVALID_ARGUMENT, "no layout operation %d", (int)op);
    return e->status;
  }
  return OPS[op].fn(a, b, out, err);
}
