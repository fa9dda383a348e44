/* layout/layout_tensor.c: CuTe tensors, a pointer and a layout: making them (non-owning, or
 * owning a zeroed array for a static layout), reaching elements, slicing with `_`, and the
 * partitioning patterns of CuTe (inner/local_tile, outer, local_partition and
 * thread-value partitioning), which are a tiling of the layout followed by a slice.
 *
 * Key decision: a tensor never computes anything itself. Every operation is the layout
 * operation of layout/layout_*.c plus "move the pointer by the offset the layout gives for
 * the fixed part of the coordinate", so tensors and layouts cannot disagree. Views made
 * from a tensor borrow its array; only the tensor that allocated it frees it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout/layout_internal.h"

static bool check_tensor(const cf_ctensor *t, const char *what, cf_layout_err *e)
{
  if (!t || t->elem_bytes == 0) {
    lay_fail(e, CF_ERR_INVALID_ARGUMENT, "%s: not a tensor (no element size)", what);
    return false;
  }
  return lay_require_layout(&t->layout.tree, what, e);
}

/* t's pointer moved by offset elements, or false (and an error naming `what`) when the
 * byte offset or the address overflows. Integer arithmetic, because a tensor may be a
 * pure layout over a NULL pointer, and C forbids offsetting NULL. */
static bool moved(const cf_ctensor *t, int64_t offset, const char *what, void **out,
                  cf_layout_err *e)
{
  int64_t bytes;
  uintptr_t base = (uintptr_t)t->data, addr;
  bool bad = t->elem_bytes > (size_t)INT64_MAX ||
             __builtin_mul_overflow(offset, (int64_t)t->elem_bytes, &bytes);
  if (!bad)
    bad = bytes >= 0 ? __builtin_add_overflow(base, (uintptr_t)bytes, &addr)
                     : __builtin_sub_overflow(base, (uintptr_t)0 - (uintptr_t)bytes, &addr);
  if (bad) {
    lay_fail(e, CF_ERR_INVALID_ARGUMENT, "%s: offset of %lld elements of %zu bytes from %p "
             "overflows the address space", what, (long long)offset, t->elem_bytes, t->data);
    return false;
  }
  *out = (void *)addr;
  return true;
}

/* A view of t: same array and element size, pointer moved by offset elements. */
static void view(const cf_ctensor *t, int64_t offset, const cf_layout *layout, const char *what,
                 cf_ctensor *out, cf_layout_err *e)
{
  cf_ctensor v = *t;
  v.owning = false;
  v.layout = *layout;
  if (moved(t, offset, what, &v.data, e))
    *out = v;
}

CF_API cf_status cf_ctensor_make(void *data, size_t elem_bytes, cf_ctensor_space space,
                                 const cf_layout *layout, cf_ctensor *out, cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_ctensor t = {data, elem_bytes, space, false, *layout};
  if (check_tensor(&t, "make_tensor", e))
    *out = t;
  return e->status;
}

CF_API cf_status cf_ctensor_make_owning(size_t elem_bytes, const cf_layout *layout,
                                        cf_ctensor *out, cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_ctensor t = {NULL, elem_bytes, CF_CTENSOR_PTR, true, *layout};
  if (!check_tensor(&t, "make_tensor", e))
    return e->status;
  char text[CF_LAYOUT_TEXT_MAX];
  cf_layout_snprint(text, sizeof text, layout);
  if (!cf_layout_is_static(layout))
    lay_fail(e, CF_ERR_INVALID_ARGUMENT,
                   "make_tensor: an owning tensor needs a static layout, got %s", text);
  for (int i = 0; i < layout->tree.count; i++)
    if (lay_is_leaf(&layout->tree, i) && layout->tree.node[i].v[1] < 0)
      lay_fail(e, CF_ERR_INVALID_ARGUMENT,
                     "make_tensor: an owning tensor needs non-negative strides, got %s", text);
  if (!lay_ok(e))
    return e->status;
  t.data = calloc((size_t)cf_layout_cosize(layout).value, elem_bytes);
  if (!t.data) {
    lay_fail(e, CF_ERR_OUT_OF_MEMORY, "make_tensor: cannot allocate %lld elements",
                   (long long)cf_layout_cosize(layout).value);
    return e->status;
  }
  *out = t;
  return CF_OK;
}

CF_API cf_status cf_ctensor_make_like(const cf_ctensor *t, cf_ctensor *out, cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_layout like;
  if (check_tensor(t, "make_tensor_like", e) && cf_layout_make_like(&t->layout, &like, e) == CF_OK)
    cf_ctensor_make_owning(t->elem_bytes, &like, out, e);
  return e->status;
}

CF_API void cf_ctensor_destroy(cf_ctensor *t)
{
  if (!t)
    return;
  if (t->owning)
    free(t->data);
  memset(t, 0, sizeof *t);
}

CF_API cf_status cf_ctensor_at(const cf_ctensor *t, const cf_int_tuple *coord, void **elem,
                               cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_tuple_int off;
  void *p;
  if (check_tensor(t, "tensor(coord)", e) && cf_layout_crd2idx(&t->layout, coord, &off, e) == CF_OK &&
      moved(t, off.value, "tensor(coord)", &p, e))
    *elem = p;
  return e->status;
}

CF_API cf_status cf_ctensor_at_index(const cf_ctensor *t, int64_t i, void **elem,
                                     cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  int64_t off;
  void *p;
  if (check_tensor(t, "tensor(i)", e) && cf_layout_eval(&t->layout, i, &off, e) == CF_OK &&
      moved(t, off, "tensor(i)", &p, e))
    *elem = p;
  return e->status;
}

CF_API cf_status cf_ctensor_slice(const cf_ctensor *t, const cf_int_tuple *coord,
                                  cf_ctensor *out, cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_layout l;
  int64_t off;
  if (check_tensor(t, "slice", e) && cf_layout_slice(&t->layout, coord, &l, &off, e) == CF_OK)
    view(t, off, &l, "slice", out, e);
  return e->status;
}

CF_API cf_status cf_ctensor_tile(const cf_ctensor *t, cf_layout_op op, const cf_layout *tiler,
                                 cf_ctensor *out, cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_layout l;
  if (op != CF_LAYOUT_OP_COMPOSITION && op != CF_LAYOUT_OP_LOGICAL_DIVIDE &&
      op != CF_LAYOUT_OP_ZIPPED_DIVIDE && op != CF_LAYOUT_OP_TILED_DIVIDE &&
      op != CF_LAYOUT_OP_FLAT_DIVIDE) {
    const char *name = cf_layout_op_name(op);
    lay_fail(e, CF_ERR_UNSUPPORTED, "tensors are tiled by composition and divides only, "
                   "not by %s (a product would reach outside the tensor)", name ? name : "?");
  } else if (check_tensor(t, cf_layout_op_name(op), e) &&
             cf_layout_apply(op, &t->layout, tiler, &l, e) == CF_OK) {
    view(t, 0, &l, cf_layout_op_name(op), out, e);
  }
  return e->status;
}

static void build_underscores(LayBuild *b, int n)
{
  if (n != 1)
    lay_build_open(b, 0);
  for (int k = 0; k < n; k++)
    lay_build_int(b, lay_s(0), CF_TUPLE_NODE_UNDERSCORE);
  if (n != 1)
    lay_build_close(b);
}

/* The coordinate (a, b) where the mode kept whole gets `repeat<rank>(_)` and the other
 * gets coord, padded with `_` to the mode's rank when coord is a tuple (CuTe's
 * append<R>(coord, _)). */
static void partition_coord(const cf_tuple_tree *z, const cf_int_tuple *coord, bool coord_first,
                            cf_int_tuple *out, cf_layout_err *e)
{
  const cf_tuple_tree *c = &coord->tree;
  int rk = lay_rank_at(z, lay_child(z, 0, coord_first ? 1 : 0));
  int rf = lay_rank_at(z, lay_child(z, 0, coord_first ? 0 : 1));
  int rc = lay_rank_at(c, 0);
  if (!lay_is_leaf(c, 0) && rc > rf) {
    lay_fail(e, CF_ERR_INVALID_ARGUMENT, "partition: coordinate of rank %d for a mode of rank %d",
                   rc, rf);
    return;
  }
  LayBuild b;
  lay_build_init(&b, &out->tree, e);
  lay_build_open(&b, 0);
  if (!coord_first)
    build_underscores(&b, rk);
  if (lay_is_leaf(c, 0)) {
    lay_build_copy(&b, c, 0);
  } else {
    lay_build_open(&b, 0);
    lay_build_splice(&b, c, 0);
    for (int k = rc; k < rf; k++)
      lay_build_int(&b, lay_s(0), CF_TUPLE_NODE_UNDERSCORE);
    lay_build_close(&b);
  }
  if (coord_first)
    build_underscores(&b, rk);
  lay_build_close(&b);
}

static cf_status partition(const cf_ctensor *t, const cf_layout *tiler, const cf_int_tuple *coord,
                           bool inner, cf_ctensor *out, cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_ctensor z;
  cf_int_tuple c;
  if (cf_ctensor_tile(t, CF_LAYOUT_OP_ZIPPED_DIVIDE, tiler, &z, e) == CF_OK) {
    partition_coord(&z.layout.tree, coord, !inner, &c, e);
    if (lay_ok(e))
      cf_ctensor_slice(&z, &c, out, e);
  }
  return e->status;
}

CF_API cf_status cf_ctensor_inner_partition(const cf_ctensor *t, const cf_layout *tiler,
                                            const cf_int_tuple *coord, cf_ctensor *out,
                                            cf_layout_err *err)
{
  return partition(t, tiler, coord, true, out, err);
}

CF_API cf_status cf_ctensor_local_tile(const cf_ctensor *t, const cf_layout *tiler,
                                       const cf_int_tuple *coord, cf_ctensor *out,
                                       cf_layout_err *err)
{
  return cf_ctensor_inner_partition(t, tiler, coord, out, err);
}

CF_API cf_status cf_ctensor_outer_partition(const cf_ctensor *t, const cf_layout *tiler,
                                            const cf_int_tuple *coord, cf_ctensor *out,
                                            cf_layout_err *err)
{
  return partition(t, tiler, coord, false, out, err);
}

/* The tiler is the size of each mode of tile; the coordinate is index's natural
 * coordinate in tile, made flat mode by mode (CuTe's get_flat_coord): an integer for a
 * rank-1 tile, else one integer per mode. */
CF_API cf_status cf_ctensor_local_partition(const cf_ctensor *t, const cf_layout *tile,
                                            int64_t index, cf_ctensor *out, cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_int_tuple hier, sizes, flat;
  cf_layout tiler;
  if (!check_tensor(t, "local_partition", e) ||
      !lay_require_layout(&tile->tree, "local_partition", e))
    return e->status;
  const cf_tuple_tree *l = &tile->tree;
  int r = lay_rank_at(l, 0);
  if (r == 0) {
    lay_fail(e, CF_ERR_INVALID_ARGUMENT, "local_partition: the tile has rank 0 (no mode to "
             "partition by)");
    return e->status;
  }
  if (cf_layout_idx2crd(tile, index, &hier, e) != CF_OK)
    return e->status;
  LayBuild bs, bf;
  lay_build_init(&bs, &sizes.tree, e);
  lay_build_init(&bf, &flat.tree, e);
  lay_build_open(&bs, 0);
  if (r > 1)
    lay_build_open(&bf, 0);
  for (int k = 0; k < r; k++) {
    int lk = lay_child(l, 0, k), hk = lay_child(&hier.tree, 0, k);
    cf_int_tuple sk;
    cf_layout mode;
    cf_tuple_int c;
    cf_layout_get(tile, &k, 1, &mode, e);
    cf_layout_shape(&mode, &sk);
    lay_build_int(&bs, lay_product(l, lk, 0, e), 0);
    cf_int_tuple ck;
    LayBuild bc;
    lay_build_init(&bc, &ck.tree, e);
    lay_build_copy(&bc, &hier.tree, hk);
    if (cf_tuple_crd2idx(&ck, &sk, &c, e) == CF_OK)
      lay_build_int(&bf, c, 0);
  }
  lay_build_close(&bs);
  if (r > 1)
    lay_build_close(&bf);
  if (cf_layout_tiler_from_shape(&sizes, &tiler, e) == CF_OK)
    cf_ctensor_outer_partition(t, &tiler, &flat, out, e);
  return e->status;
}

CF_API cf_status cf_ctensor_tv_partition(const cf_ctensor *t, const cf_layout *tv,
                                         int64_t thread, cf_ctensor *out, cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_ctensor c;
  cf_int_tuple coord, parts[2] = {cf_tuple_from_int(cf_tuple_dynamic(thread)), cf_tuple_underscore()};
  if (cf_ctensor_tile(t, CF_LAYOUT_OP_COMPOSITION, tv, &c, e) == CF_OK &&
      cf_tuple_make(parts, 2, &coord, e) == CF_OK)
    cf_ctensor_slice(&c, &coord, out, e);
  return e->status;
}

CF_API int cf_ctensor_snprint(char *buf, size_t n, const cf_ctensor *t)
{
  static const char *const prefix[] = {"", "gmem_", "smem_"};
  LayText x = {buf, n, 0};
  if (n > 0)
    buf[0] = '\0';
  unsigned space = (unsigned)t->space < 3 ? (unsigned)t->space : 0;
  lay_text_printf(&x, "%sptr[%zub](%p) o ", prefix[space], t->elem_bytes * 8, t->data);
  if (t->layout.tree.count > 0)
    lay_print_layout(&x, &t->layout.tree, 0);
  return (int)x.len;
}
