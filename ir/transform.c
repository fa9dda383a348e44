/* ir/transform.c: the scheduling primitives that reshape a TensorView's loop domain
 * (split, merge, reorder, XOR swizzle), set parallel types, memory types, the allocation
 * domain and the tensor-memory dim-sep position.
 *
 * Key decision: a transform never mutates an IterDomain. It makes new IterDomains and an
 * Expr linking them to the old ones, then replaces entries of the loop domain, so the
 * history from the logical domain to the loop domain can always be walked again (by
 * propagation, indexing and printing). Every check happens before anything is created,
 * so a refused call leaves the tensor as it was. */
#include <string.h>

#include "ir/checked.h"
#include "ir/ir.h"

/* A broadcast axis holds one element however it is split: both halves are broadcast axes
 * of extent 1 (else merging one with an iteration axis would repeat every element). */
bool ir_id_is_one_position(const Val *id) {
  int64_t e;
  return id->u.id.iter_type == CF_ITER_BROADCAST || (ir_scalar_const_value(id->u.id.extent, &e) && e == 1);
}

bool ir_id_split(cf_fusion *f, Val *id, Val *factor, bool inner, Val **outer_out, Val **inner_out) {
  bool bcast = ID(id)->iter_type == CF_ITER_BROADCAST;
  Val *rest = bcast ? ir_const_int(f, 1) : ir_scalar_op(f, OP_CEILDIV, ID(id)->extent, factor);
  Val *part = bcast ? ir_const_int(f, 1) : factor;
  Val *outer = ir_id_new(f, inner ? rest : part, ID(id)->iter_type);
  Val *in = ir_id_new(f, inner ? part : rest, ID(id)->iter_type);
  if (!outer || !in) return false;
  ID(outer)->tv = ID(in)->tv = ID(id)->tv;
  Val *outs[2] = {outer, in};
  Expr *e = ir_expr_new(f, OP_SPLIT, 1, &id, 2, outs);
  if (!e) return false;
  e->attr.split.factor = factor;
  e->attr.split.inner = inner;
  *outer_out = outer;
  *inner_out = in;
  return true;
}

static cf_iter_type merged_type(Val *a, Val *b) {
  cf_iter_type ta = ID(a)->iter_type, tb = ID(b)->iter_type;
  if (ta == CF_ITER_BROADCAST) return tb;
  if (tb == CF_ITER_BROADCAST) return ta;
  return ta;
}

Val *ir_id_merge(cf_fusion *f, Val *outer, Val *inner) {
  Val *out = ir_id_new(f, ir_scalar_op(f, OP_MUL, ID(outer)->extent, ID(inner)->extent),
                       merged_type(outer, inner));
  if (!out) return NULL;
  ID(out)->tv = ID(outer)->tv;
  Val *ins[2] = {outer, inner};
  return ir_expr_new(f, OP_MERGE, 2, ins, 1, &out) ? out : NULL;
}

bool ir_id_swizzle(cf_fusion *f, SwizzleType t, Val *x, Val *y, Val **x_out, Val **y_out) {
  Val *ox = ir_id_clone(f, x), *oy = ir_id_clone(f, y);
  if (!ox || !oy) return false;
  ID(ox)->ptype = ID(oy)->ptype = CF_PT_SERIAL;
  ID(ox)->tv = ID(oy)->tv = ID(x)->tv;
  Val *ins[2] = {x, y}, *outs[2] = {ox, oy};
  Expr *e = ir_expr_new(f, OP_SWIZZLE, 2, ins, 2, outs);
  if (!e) return false;
  e->attr.swizzle.type = t;
  *x_out = ox;
  *y_out = oy;
  return true;
}

void ir_tv_set_loop(cf_fusion *f, Val *tv, int n, Val *const *ids) {
  TV(tv)->loop = arena_memdup(f->arena, ids, sizeof(Val *) * (size_t)n);
  TV(tv)->nloop = n;
}

/* Resolves `axis` of tv's loop domain for `what`, or records the error. */
static int loop_axis(cf_fusion *f, const char *what, Val *tv, int axis) {
  int a = ir_wrap_axis(axis, TV(tv)->nloop);
  if (a < 0) ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "%s: axis %d out of range", what, axis);
  return a;
}

/* Axes that transforms may not touch: those left of the compute-at or max-producer
 * position (their loops are shared with other tensors) and parallelized ones. */
static cf_status check_transformable(cf_fusion *f, const char *what, Val *tv, int a) {
  TensorView *t = TV(tv);
  StrBuf b = {0};
  ir_print_id(&b, t->loop[a]);
  cf_status s = CF_OK;
  if (a < t->ca_pos)
    s = ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, tv, "%s: axis %d (%s) is left of the compute-at position %d",
                    what, a, b.data, t->ca_pos);
  else if (a < t->max_producer_pos)
    s = ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, tv,
                    "%s: axis %d (%s) is left of the position %d where producers are inlined", what, a,
                    b.data, t->max_producer_pos);
  else if (ID(t->loop[a])->ptype != CF_PT_SERIAL)
    s = ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, tv, "%s: axis %d (%s) is parallelized; parallelize after %s",
                    what, a, b.data, what);
  sb_free(&b);
  return s;
}

static cf_status split_impl(cf_fusion *f, cf_tv *t, int axis, int64_t factor, bool inner, const char *what) {
  cf_status s = ir_check_tv(f, what, t);
  if (s) return s;
  Val *tv = ir_tv(t);
  int a = loop_axis(f, what, tv, axis);
  if (a < 0) return f->status;
  if (factor <= 0)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "%s: factor %lld is not positive", what, (long long)factor);
  if (factor > IR_MAX_SPLIT_FACTOR)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "%s: factor %lld exceeds the largest split factor %lld", what,
                       (long long)factor, (long long)IR_MAX_SPLIT_FACTOR);
  if ((s = check_transformable(f, what, tv, a))) return s;
  Val *outer, *in;
  if (!ir_id_split(f, TV(tv)->loop[a], ir_const_int(f, factor), inner, &outer, &in))
    return ir_error(f, CF_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
  TensorView *tvw = TV(tv);
  Val **ids = ARENA_ARRAY(f->arena, Val *, tvw->nloop + 1);
  memcpy(ids, tvw->loop, sizeof(Val *) * (size_t)a);
  ids[a] = outer;
  ids[a + 1] = in;
  memcpy(ids + a + 2, tvw->loop + a + 1, sizeof(Val *) * (size_t)(tvw->nloop - a - 1));
  ir_tv_set_loop(f, tv, tvw->nloop + 1, ids);
  return CF_OK;
}

cf_status cf_split(cf_fusion *f, cf_tv *tv, int axis, int64_t factor) {
  return split_impl(f, tv, axis, factor, true, "split");
}
cf_status cf_split_outer(cf_fusion *f, cf_tv *tv, int axis, int64_t factor) {
  return split_impl(f, tv, axis, factor, false, "split_outer");
}

cf_status cf_merge(cf_fusion *f, cf_tv *t, int axis) {
  cf_status s = ir_check_tv(f, "merge", t);
  if (s) return s;
  Val *tv = ir_tv(t);
  TensorView *tvw = TV(tv);
  int a = loop_axis(f, "merge", tv, axis);
  if (a < 0) return f->status;
  if (a == tvw->nloop - 1)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "merge: axis %d is the last axis; there is no axis %d to merge it with",
                       axis, a + 1);
  if ((s = check_transformable(f, "merge", tv, a)) || (s = check_transformable(f, "merge", tv, a + 1))) return s;
  Val *x = tvw->loop[a], *y = tvw->loop[a + 1];
  bool rx = ID(x)->iter_type == CF_ITER_REDUCTION, ry = ID(y)->iter_type == CF_ITER_REDUCTION;
  if (rx != ry && ID(x)->iter_type != CF_ITER_BROADCAST && ID(y)->iter_type != CF_ITER_BROADCAST)
    return ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, tv,
                       "merge: axes %d and %d mix a reduction axis with an iteration axis", a, a + 1);
  int64_t ex, ey, prod;
  if (ir_scalar_const_value(ID(x)->extent, &ex) && ir_scalar_const_value(ID(y)->extent, &ey) && !ck_mul(ex, ey, &prod))
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "merge: extents %lld and %lld of axes %d and %d overflow int64",
                       (long long)ex, (long long)ey, a, a + 1);
  Val *m = ir_id_merge(f, x, y);
  if (!m) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "merge: out of memory");
  Val **ids = ARENA_ARRAY(f->arena, Val *, tvw->nloop);
  memcpy(ids, tvw->loop, sizeof(Val *) * (size_t)a);
  ids[a] = m;
  memcpy(ids + a + 1, tvw->loop + a + 2, sizeof(Val *) * (size_t)(tvw->nloop - a - 2));
  ir_tv_set_loop(f, tv, tvw->nloop - 1, ids);
  return CF_OK;
}

/* Applies a reorder given as (old, new) pairs: moved axes go to their new positions,
 * the others fill the remaining positions in their relative order. */
static cf_status apply_reorder(cf_fusion *f, const char *what, Val *tv, int npairs, const int *pairs) {
  TensorView *t = TV(tv);
  int n = t->nloop;
  Val **ids = ARENA_ARRAY(f->arena, Val *, n);
  bool *moved = ARENA_ARRAY(f->arena, bool, n);
  for (int i = 0; i < npairs; i++) {
    int from = ir_wrap_axis(pairs[2 * i], n), to = ir_wrap_axis(pairs[2 * i + 1], n);
    if (from < 0 || to < 0)
      return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "%s: axis %d out of range", what,
                         from < 0 ? pairs[2 * i] : pairs[2 * i + 1]);
    if (moved[from] || ids[to])
      return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "%s: axis %d is named twice", what,
                         moved[from] ? pairs[2 * i] : pairs[2 * i + 1]);
    if (from != to && (from < t->ca_pos || to < t->ca_pos))
      return ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, tv, "%s: cannot move axis %d across the compute-at position %d",
                         what, from, t->ca_pos);
    moved[from] = true;
    ids[to] = t->loop[from];
  }
  for (int i = 0, j = 0; i < n; i++) {
    if (moved[i]) continue;
    while (ids[j]) j++;
    ids[j] = t->loop[i];
  }
  ir_tv_set_loop(f, tv, n, ids);
  return CF_OK;
}

cf_status cf_reorder(cf_fusion *f, cf_tv *t, int npairs, const int *pairs) {
  cf_status s = ir_check_tv(f, "reorder", t);
  if (s) return s;
  if (npairs < 0 || (npairs > 0 && !pairs))
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "reorder: pairs is NULL or npairs is negative");
  return apply_reorder(f, "reorder", ir_tv(t), npairs, pairs);
}

cf_status cf_reorder_all(cf_fusion *f, cf_tv *t, int n, const int *new_pos) {
  cf_status s = ir_check_tv(f, "reorder_all", t);
  if (s) return s;
  Val *tv = ir_tv(t);
  if (!new_pos || n != TV(tv)->nloop)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "reorder_all: expected %d positions, got %d", TV(tv)->nloop,
                       new_pos ? n : 0);
  int *pairs = ARENA_ARRAY(f->arena, int, 2 * n);
  for (int i = 0; i < n; i++) {
    pairs[2 * i] = i;
    pairs[2 * i + 1] = new_pos[i];
  }
  return apply_reorder(f, "reorder_all", tv, n, pairs);
}

static bool is_pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

cf_status cf_swizzle_xor(cf_fusion *f, cf_tv *t, int x, int y) {
  cf_status s = ir_check_tv(f, "swizzle_xor", t);
  if (s) return s;
  Val *tv = ir_tv(t);
  TensorView *tvw = TV(tv);
  int ax = loop_axis(f, "swizzle_xor", tv, x), ay = ax < 0 ? -1 : loop_axis(f, "swizzle_xor", tv, y);
  if (ax < 0 || ay < 0) return f->status;
  if (ax == ay) return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "swizzle_xor: axes %d and %d are the same axis", x, y);
  if ((s = check_transformable(f, "swizzle_xor", tv, ax)) || (s = check_transformable(f, "swizzle_xor", tv, ay)))
    return s;
  Val *idx = tvw->loop[ax], *idy = tvw->loop[ay];
  int64_t ex, ey;
  if (ID(idx)->iter_type != CF_ITER_ITERATION || ID(idy)->iter_type != CF_ITER_ITERATION)
    return ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, tv, "swizzle_xor: axes %d and %d must both be iteration axes", ax, ay);
  if (!ir_scalar_const_value(ID(idx)->extent, &ex) || !ir_scalar_const_value(ID(idy)->extent, &ey) ||
      !is_pow2(ey) || ex > ey)
    return ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, tv,
                       "swizzle_xor: axis %d needs a constant power-of-two extent and axis %d one no larger", ay, ax);
  Val *ox, *oy;
  if (!ir_id_swizzle(f, SWIZZLE_XOR, idx, idy, &ox, &oy))
    return ir_error(f, CF_ERR_OUT_OF_MEMORY, "swizzle_xor: out of memory");
  Val **ids = arena_memdup(f->arena, tvw->loop, sizeof(Val *) * (size_t)tvw->nloop);
  ids[ax] = ox;
  ids[ay] = oy;
  ir_tv_set_loop(f, tv, tvw->nloop, ids);
  return CF_OK;
}

cf_status cf_parallelize(cf_fusion *f, cf_tv *t, int axis, cf_parallel_type p) {
  cf_status s = ir_check_tv(f, "parallelize", t);
  if (s) return s;
  Val *tv = ir_tv(t);
  int a = loop_axis(f, "parallelize", tv, axis);
  if (a < 0) return f->status;
  if ((unsigned)p >= CF_PT_COUNT)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "parallelize: invalid parallel type %d for axis %d", (int)p, a);
  ID(TV(tv)->loop[a])->ptype = p;
  return CF_OK;
}

cf_status cf_spill_to_shared(cf_fusion *f, cf_tv *t, int64_t reg_elems) {
  cf_status s = ir_check_tv(f, "spill_to_shared", t);
  if (s) return s;
  Val *tv = ir_tv(t);
  if (reg_elems < 0)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "spill_to_shared: reg_elems %lld is negative", (long long)reg_elems);
  if (ir_tv_is_input(f, tv) || ir_tv_is_output(f, tv))
    return ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, tv, "spill_to_shared: a fusion %s stays in global memory",
                       ir_tv_is_input(f, tv) ? "input" : "output");
  TV(tv)->reg_elems = reg_elems;
  return CF_OK;
}

cf_status cf_set_memory_type(cf_fusion *f, cf_tv *t, cf_memory_type m) {
  cf_status s = ir_check_tv(f, "set_memory_type", t);
  if (s) return s;
  Val *tv = ir_tv(t);
  if ((unsigned)m >= CF_MEM_COUNT)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "set_memory_type: invalid memory type %d", (int)m);
  if ((ir_tv_is_input(f, tv) || ir_tv_is_output(f, tv)) && m != CF_MEM_GLOBAL)
    return ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, tv, "set_memory_type: %s is a fusion %s and must stay in global memory",
                       TV(tv)->display_name, ir_tv_is_input(f, tv) ? "input" : "output");
  TV(tv)->mem = m;
  if (m != CF_MEM_TENSOR) TV(tv)->tmem_dim_sep = 0; /* the position means nothing elsewhere */
  return CF_OK;
}
