/* scheduler/rfactor.c: cf_rfactor, nvFuser's rFactor. Splits a reduction T1 = op(T0)
 * whose loop domain was split into several reduction axes into a partial reduction
 * T2 = op(T0) over the chosen loop axes and the final T1 = op(T2) over the others.
 *
 * T2 is new: its root domain copies T1's logical domain, T1's transforms are replayed on
 * it, and its logical (and loop) domain is T1's loop domain as it was, the chosen axes
 * staying reduction axes and the other reduction axes becoming iteration axes (all marked
 * "rf", printed as nvFuser does). T1 keeps its handle, so it stays the fusion's output,
 * and gets a fresh domain: one axis per axis of T2's logical domain that T2 does not
 * reduce. Key decision: T1's iteration axes must be untransformed (each logical one is
 * itself a loop axis), so T1's shape, what the fusion computes, does not change; schedule
 * iteration axes after the rfactor (nvFuser's schedulers do likewise). */
#include "ir/dtype.h"
#include "scheduler/sched.h"

/* Marks the loop axes to rfactor; false after recording an error. */
static bool rfactor_axes(cf_fusion *f, Val *tv, int naxes, const int *axes, bool *rf) {
  TensorView *t = TV(tv);
  if (naxes <= 0 || !axes)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "rfactor: give at least one axis (naxes is %d%s)", naxes,
                       axes ? "" : ", axes is NULL"), false;
  for (int i = 0; i < naxes; i++) {
    int a = ir_wrap_axis(axes[i], t->nloop);
    if (a < 0 || rf[a])
      return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "rfactor: axis %d %s", axes[i],
                         a < 0 ? "out of range" : "given twice"), false;
    if (ID(t->loop[a])->iter_type != CF_ITER_REDUCTION)
      return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "rfactor: axis %d is not a reduction axis", axes[i]), false;
    rf[a] = true;
  }
  for (int a = 0; a < t->nloop; a++)
    if (ID(t->loop[a])->iter_type == CF_ITER_REDUCTION && !rf[a]) return true;
  return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "rfactor: every reduction axis is rfactored; leave at least one "
                     "for %s", t->display_name), false;
}

static bool in_list(Val *const *ids, int n, const Val *id) {
  for (int i = 0; i < n; i++)
    if (ids[i] == id) return true;
  return false;
}

static bool check_reduction(cf_fusion *f, Val *tv) {
  TensorView *t = TV(tv);
  if (!tv->def || !ir_op_is_reduction(tv->def->op))
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "rfactor: %s is not the output of a reduction",
                       t->display_name), false;
  if (t->ca_pos > 0 || t->max_producer_pos > 0)
    return ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, tv, "rfactor: %s is inlined already; rfactor it before inlining",
                       t->display_name), false;
  for (int i = 0; i < t->nlogical; i++)
    if (ID(t->logical[i])->iter_type != CF_ITER_REDUCTION && !in_list(t->loop, t->nloop, t->logical[i]))
      return ir_error_tv(f, CF_ERR_UNSUPPORTED, tv, "rfactor: iteration axis %d of %s is transformed; rfactor before "
                         "splitting or merging iteration axes", i, t->display_name), false;
  return true;
}

/* Replays one transform of T1's history on T2's axes (map: T1 axis id -> T2 axis). */
static bool replay(cf_fusion *f, const Expr *h, Val **map, Val *t2) {
  Val *o[2] = {NULL, NULL};
  bool ok = false;
  switch (h->op) {
  case OP_SPLIT: ok = ir_id_split(f, map[h->in[0]->id], h->attr.split.factor, h->attr.split.inner, &o[0], &o[1]); break;
  case OP_MERGE: ok = (o[0] = ir_id_merge(f, map[h->in[0]->id], map[h->in[1]->id])) != NULL; break;
  case OP_SWIZZLE:
    ok = ir_id_swizzle(f, h->attr.swizzle.type, map[h->in[0]->id], map[h->in[1]->id], &o[0], &o[1]);
    break;
  default: break;
  }
  for (int k = 0; ok && k < h->nout; k++) {
    map[h->out[k]->id] = o[k];
    ID(o[k])->tv = t2;
  }
  return ok;
}

/* T2's domain: root copies T1's logical domain, logical = loop = T1's loop replayed. */
static Val *make_partial(cf_fusion *f, Val *tv, const bool *rf, Val **map) {
  TensorView *t = TV(tv);
  Val **root = ARENA_ARRAY(f->arena, Val *, t->nlogical), **logical = ARENA_ARRAY(f->arena, Val *, t->nloop);
  for (int i = 0; root && i < t->nlogical; i++)
    if (!(root[i] = map[t->logical[i]->id] = ir_id_new(f, ID(t->logical[i])->extent, ID(t->logical[i])->iter_type)))
      return NULL;
  int nh;
  Expr **hist = ir_tv_history(f, tv, &nh);
  for (int i = 0; i < nh; i++)
    if (!replay(f, hist[i], map, NULL)) return NULL;
  for (int a = 0; logical && a < t->nloop; a++) {
    Val *id = logical[a] = map[t->loop[a]->id];
    ID(id)->ptype = ID(t->loop[a])->ptype;
    if (ID(t->loop[a])->iter_type == CF_ITER_REDUCTION) {
      ID(id)->iter_type = rf[a] ? CF_ITER_REDUCTION : CF_ITER_ITERATION;
      ID(id)->rfactor = true;
    }
  }
  /* The partials are sums in the accumulation type (float for half and bfloat16). */
  Val *t2 = logical ? ir_tv_new(f, ir_dtype_accumulate(tv->dtype), t->nloop, logical) : NULL;
  if (!t2) return NULL;
  TV(t2)->root = root;
  TV(t2)->nroot = t->nlogical;
  for (int i = 0; i < t->nlogical; i++) ID(root[i])->tv = t2;
  for (int i = 0; i < nh; i++)
    for (int k = 0; k < hist[i]->nout; k++) ID(map[hist[i]->out[k]->id])->tv = t2;
  return t2;
}

/* T1's new domain: an axis per non-reduction axis of T2's logical domain, a reduction
 * axis where T1's loop axis was one. */
static bool make_final(cf_fusion *f, Val *tv, Val *t2) {
  TensorView *t = TV(tv), *p = TV(t2);
  Val **ids = ARENA_ARRAY(f->arena, Val *, p->nlogical);
  int n = 0;
  for (int a = 0; ids && a < p->nlogical; a++) {
    if (ID(p->logical[a])->iter_type == CF_ITER_REDUCTION) continue;
    Val *id = ir_id_new(f, ID(p->logical[a])->extent, ID(t->loop[a])->iter_type);
    if (!id) return false;
    ID(id)->ptype = ID(t->loop[a])->ptype;
    ID(id)->tv = tv;
    ids[n++] = id;
  }
  int8_t *contig = ARENA_ARRAY(f->arena, int8_t, n > 0 ? n : 1);
  Val **loop = ids ? arena_memdup(f->arena, ids, sizeof(Val *) * (size_t)(n > 0 ? n : 1)) : NULL;
  if (!contig || !loop) return false;
  for (int i = 0; i < n; i++) contig[i] = 1;
  t->root = t->logical = ids;
  t->nroot = t->nlogical = t->nloop = n;
  t->loop = loop;
  t->contiguity = contig;
  t->alloc = NULL;
  t->nalloc = 0;
  return true;
}

cf_tv *cf_rfactor(cf_fusion *f, cf_tv *t, int naxes, const int *axes) {
  if (ir_check_tv(f, "rfactor", t)) return NULL;
  Val *tv = ir_tv(t);
  if (!check_reduction(f, tv)) return NULL;
  bool *rf = ARENA_ARRAY(f->arena, bool, TV(tv)->nloop > 0 ? TV(tv)->nloop : 1);
  Val **map = ARENA_ARRAY(f->arena, Val *, f->vals.len);
  if (!rf || !map) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "rfactor: out of memory"), NULL;
  if (!rfactor_axes(f, tv, naxes, axes, rf)) return NULL;
  Val *t2 = make_partial(f, tv, rf, map);
  if (!t2 || !make_final(f, tv, t2)) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "rfactor: out of memory"), NULL;
  Expr *e = tv->def;
  e->out[0] = t2; /* the partial reduction takes T1's definition */
  t2->def = e;
  tv->def = NULL;
  if (!ir_expr_new(f, e->op, 1, &t2, 1, &tv)) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "rfactor: out of memory"), NULL;
  return ir_tv_handle(t2);
}
