/* scheduler/replay.c: replaying one TensorView's transforms onto an adjacent one, the
 * step transform propagation and compute_at repeat along a spanning tree.
 *
 * The source's root/logical axes are mapped to the target's logical/root axes through
 * the pairwise map; then the source's transforms are walked in topological order and
 * each one whose inputs are mapped is made again on the mapped target axes. Merging with
 * a source broadcast axis the target lacks is forwarded (the merged axis maps to the
 * other input). The target keeps its own transforms of axes the replay does not reach.
 *
 * Key decision: before creating a split, merge or swizzle, the replay looks for the same
 * transform among the uses of the target axis and reuses it. Propagating twice therefore
 * creates nothing the second time, loop domains come out identical (same IterDomains),
 * and an allocation domain set from an earlier loop domain stays connected to the new
 * one. */
#include <string.h>

#include "scheduler/sched.h"
#include "scheduler/val_map.h"

bool sched_is_base_id(Val *tv, const Val *id) {
  TensorView *t = TV(tv);
  for (int i = 0; i < t->nroot; i++)
    if (t->root[i] == id) return true;
  for (int i = 0; i < t->nlogical; i++)
    if (t->logical[i] == id) return true;
  return false;
}

/* Post-order walk from id back to tv's base domain: inputs before the Expr. */
static bool visit(Arena *a, Val *tv, Val *id, ValMap *seen, PtrVec *order) {
  Expr *e = id->def;
  if (!e || ir_op_kind(e->op) != OPK_TRANSFORM || sched_is_base_id(tv, id)) return true;
  if (sched_map_get(seen, e->out[0])) return true;
  for (int i = 0; i < e->nout; i++)
    if (!sched_map_put(seen, e->out[i], e)) return false;
  for (int i = 0; i < e->nin; i++)
    if (!visit(a, tv, e->in[i], seen, order)) return false;
  ptrvec_push(a, order, e);
  return true;
}

Expr **sched_history_to(Arena *scratch, Val *tv, Val *const *ids, int nids, int *n) {
  ValMap seen = {.arena = scratch};
  PtrVec order = {0};
  *n = -1;
  for (int i = 0; i < nids; i++)
    if (!visit(scratch, tv, ids[i], &seen, &order)) return NULL;
  *n = order.len;
  return (Expr **)order.items;
}

bool sched_derives_from_broadcast(Val *tv, const Val *id) {
  if (ID((Val *)id)->iter_type == CF_ITER_BROADCAST) return true;
  Expr *e = id->def;
  if (!e || ir_op_kind(e->op) != OPK_TRANSFORM || sched_is_base_id(tv, id)) return false;
  for (int i = 0; i < e->nin; i++)
    if (sched_derives_from_broadcast(tv, e->in[i])) return true;
  return false;
}

/* ---- one replay ------------------------------------------------------------------------ */

typedef struct Replay {
  cf_fusion *f;
  Arena *a;
  Val *src, *dst;
  ValMap map;      /* src axis -> dst axis */
  ValMap consumed; /* dst axes some replayed or kept Expr has used up */
  PtrVec frontier; /* dst axes made or reached, in order; minus `consumed` = the loop set */
} Replay;

static bool same_factor(const Val *a, const Val *b) {
  int64_t x, y;
  if (a == b) return true;
  return ir_scalar_const_value(a, &x) && ir_scalar_const_value(b, &y) && x == y;
}

/* An existing transform of the target with the same kind, parameters and inputs. */
static Expr *find_existing(const Expr *e, Val *const *ins) {
  for (int u = 0; u < ins[0]->uses.len; u++) {
    Expr *c = ins[0]->uses.items[u];
    if (c->op != e->op || c->nin != e->nin) continue;
    bool same = true;
    for (int i = 0; i < e->nin; i++) same = same && c->in[i] == ins[i];
    if (!same) continue;
    if (e->op == OP_SPLIT &&
        (c->attr.split.inner != e->attr.split.inner || !same_factor(c->attr.split.factor, e->attr.split.factor)))
      continue;
    if (e->op == OP_SWIZZLE && c->attr.swizzle.type != e->attr.swizzle.type) continue;
    return c;
  }
  return NULL;
}

/* Makes on the target the transform e applied to ins, or takes c, the same one it has;
 * outs receive its outputs. */
static bool make_on_target(Replay *r, const Expr *e, Expr *c, Val *const *ins, Val **outs) {
  if (c) {
    for (int o = 0; o < c->nout; o++) outs[o] = c->out[o];
    return true;
  }
  switch (e->op) {
  case OP_SPLIT: return ir_id_split(r->f, ins[0], e->attr.split.factor, e->attr.split.inner, &outs[0], &outs[1]);
  case OP_MERGE: return (outs[0] = ir_id_merge(r->f, ins[0], ins[1])) != NULL;
  case OP_SWIZZLE: return ir_id_swizzle(r->f, e->attr.swizzle.type, ins[0], ins[1], &outs[0], &outs[1]);
  default: return false;
  }
}

/* Records that dst axes ins were used up by transform e producing outs. */
static bool advance(Replay *r, const Expr *e, Val *const *ins, int nin, Val *const *outs, int nout) {
  for (int i = 0; i < nin; i++)
    if (!sched_map_put(&r->consumed, ins[i], (void *)e)) return false;
  for (int o = 0; o < nout; o++) ptrvec_push(r->a, &r->frontier, outs[o]);
  return true;
}

static bool mixes_reduction(Val *x, Val *y) {
  cf_iter_type a = ID(x)->iter_type, b = ID(y)->iter_type;
  return a != b && a != CF_ITER_BROADCAST && b != CF_ITER_BROADCAST;
}

/* Replays one source transform; unmapped inputs skip it, except a merge with an unmapped
 * source broadcast axis, which is forwarded to its other input. */
static bool replay_expr(Replay *r, const Expr *e) {
  Val *ins[2] = {NULL, NULL}, *outs[2] = {NULL, NULL};
  int mapped = 0;
  for (int i = 0; i < e->nin; i++) mapped += (ins[i] = sched_map_get(&r->map, e->in[i])) != NULL;
  if (mapped < e->nin) {
    if (e->op != OP_MERGE || mapped != 1) return true;
    int other = ins[0] ? 1 : 0;
    if (ID(e->in[other])->iter_type != CF_ITER_BROADCAST) return true;
    return sched_map_put(&r->map, e->out[0], ins[1 - other]);
  }
  /* The target's own transform doing the same is reused, also when it is one of the
   * root -> logical transforms of an rfactor tensor (which consumed its inputs already);
   * an axis some other transform consumed cannot be transformed again. */
  Expr *same = find_existing(e, ins);
  bool fresh = true;
  for (int i = 0; i < e->nin; i++) {
    Expr *by = sched_map_get(&r->consumed, ins[i]);
    if (by && by != same) return true;
    fresh = fresh && !by;
  }
  /* A merge of a reduction axis with an iteration axis would reduce across the iteration
   * axis (cf_merge refuses it): the target keeps the two axes apart. */
  if (e->op == OP_MERGE && mixes_reduction(ins[0], ins[1])) return true;
  if (!make_on_target(r, e, same, ins, outs)) return false;
  for (int o = 0; o < e->nout; o++)
    if (!sched_map_put(&r->map, e->out[o], outs[o])) return false;
  return !fresh || advance(r, same ? same : outs[0]->def, ins, e->nin, outs, e->nout);
}

/* Maps src's base axes to dst's through the pairwise map, and seeds the frontier with
 * dst's base domain. */
static bool seed(Replay *r) {
  bool dst_is_consumer = an_is_producer_of(r->src, r->dst);
  Val *p = dst_is_consumer ? r->src : r->dst, *c = dst_is_consumer ? r->dst : r->src;
  int n = an_pairwise_map(p, c, NULL, NULL, 0);
  Val **pi = ARENA_ARRAY(r->a, Val *, n), **ci = ARENA_ARRAY(r->a, Val *, n);
  if (!pi || !ci) return false;
  an_pairwise_map(p, c, pi, ci, n);
  for (int i = 0; i < n; i++)
    if (!sched_map_put(&r->map, dst_is_consumer ? pi[i] : ci[i], dst_is_consumer ? ci[i] : pi[i])) return false;
  TensorView *t = TV(r->dst);
  for (int i = 0; i < t->nroot; i++) ptrvec_push(r->a, &r->frontier, t->root[i]);
  /* An rfactor tensor's logical domain derives from its root: those transforms are part of
   * what it computes, so its root axes are used up and never loop axes again. */
  int nrf;
  Expr **rf = ir_tv_root_to_logical(r->a, r->dst, &nrf);
  for (int k = 0; k < nrf; k++)
    if (!advance(r, rf[k], rf[k]->in, rf[k]->nin, rf[k]->out, rf[k]->nout)) return false;
  for (int i = 0; i < t->nlogical; i++)
    if (!ptrvec_contains(&r->frontier, t->logical[i])) ptrvec_push(r->a, &r->frontier, t->logical[i]);
  return true;
}

static bool in_frontier(const Replay *r, Val *id) {
  return !sched_map_get(&r->consumed, id) && ptrvec_contains(&r->frontier, id);
}

/* Re-applies dst's own live transforms whose inputs the replay left alone and which do not
 * touch an image of the source's first src_pos loop axes (those now follow the source). */
static bool keep_own_transforms(Replay *r, ValMap *protected) {
  TensorView *t = TV(r->dst);
  int n;
  Expr **hist = sched_history_to(r->a, r->dst, t->loop, t->nloop, &n);
  if (n < 0) return false;
  for (int k = 0; k < n; k++) {
    Expr *e = hist[k];
    bool ok = true;
    for (int i = 0; i < e->nin; i++) ok = ok && in_frontier(r, e->in[i]) && !sched_map_get(protected, e->in[i]);
    if (ok && !advance(r, e, e->in, e->nin, e->out, e->nout)) return false;
  }
  return true;
}

/* Orders the frontier into dst's new loop domain: images of src loop axes left of src_pos,
 * then images of the other src loop axes, then dst's previous loop axes in their order,
 * then anything else in the order it was reached. */
static Val **order_loop(Replay *r, int src_pos, int *nout, int *npos) {
  TensorView *s = TV(r->src), *t = TV(r->dst);
  Val **loop = ARENA_ARRAY(r->a, Val *, r->frontier.len);
  ValMap placed = {.arena = r->a};
  int n = 0;
  if (!loop) return NULL;
  for (int pass = 0; pass < 4; pass++) {
    int cnt = pass < 2 ? s->nloop : pass == 2 ? t->nloop : r->frontier.len;
    for (int i = 0; i < cnt; i++) {
      if (pass == 0 && i >= src_pos) break;
      if (pass == 1 && i < src_pos) continue;
      Val *id = pass < 2 ? sched_map_get(&r->map, s->loop[i]) : pass == 2 ? t->loop[i] : r->frontier.items[i];
      if (!id || sched_map_get(&placed, id) || !in_frontier(r, id)) continue;
      if (!sched_map_put(&placed, id, id)) return NULL;
      loop[n++] = id;
    }
    if (pass == 0) *npos = n;
  }
  *nout = n;
  return loop;
}

/* Refuses a new loop domain that differs from the old one left of the compute-at or
 * max-producer position: those loops are shared with other tensors. */
static cf_status check_kept(Replay *r, const char *what, Val **loop, int n) {
  TensorView *t = TV(r->dst);
  int keep = t->ca_pos > t->max_producer_pos ? t->ca_pos : t->max_producer_pos;
  for (int i = 0; i < keep; i++) {
    if (i < n && loop[i] == t->loop[i]) continue;
    StrBuf b = {0};
    ir_print_id(&b, t->loop[i]);
    const char *src_name = TV(r->src)->display_name;
    cf_status s =
        i < t->ca_pos
            ? ir_error_tv(r->f, CF_ERR_INVALID_SCHEDULE, r->dst,
                          "%s: replaying %s's transforms would change axis %d (%s), left of the compute-at position %d",
                          what, src_name, i, b.data, t->ca_pos)
            : ir_error_tv(r->f, CF_ERR_INVALID_SCHEDULE, r->dst,
                          "%s: replaying %s's transforms would change axis %d (%s), left of the position %d where "
                          "producers are inlined",
                          what, src_name, i, b.data, t->max_producer_pos);
    sb_free(&b);
    return s;
  }
  return CF_OK;
}

cf_status sched_replay(cf_fusion *f, Arena *scratch, Val *src, Val *dst, int src_pos, const char *what,
                       int *dst_pos) {
  Replay r = {.f = f, .a = scratch, .src = src, .dst = dst};
  r.map.arena = r.consumed.arena = scratch;
  TensorView *s = TV(src);
  if (src_pos > s->nloop) src_pos = s->nloop;
  int nh, nrf = 0;
  if (!an_is_producer_of(src, dst) && !an_is_producer_of(dst, src)) return IR_INTERNAL(f, adjacent(src, dst));
  Expr **hist = sched_history_to(scratch, src, s->loop, src_pos, &nh);
  /* Replayed onto a producer, a source's axes map through its root: an rfactor source's
   * root -> logical transforms come first (its logical axes are made by them). */
  Expr **rf = an_is_producer_of(dst, src) ? ir_tv_root_to_logical(scratch, src, &nrf) : NULL;
  if (nh < 0 || !seed(&r)) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
  for (int k = 0; k < nrf + nh; k++)
    if (!replay_expr(&r, k < nrf ? rf[k] : hist[k - nrf]))
      return ir_error(f, CF_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
  ValMap protected = {.arena = scratch};
  for (int i = 0; i < src_pos; i++) {
    Val *img = sched_map_get(&r.map, s->loop[i]);
    if (img && !sched_map_put(&protected, img, img))
      return ir_error(f, CF_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
  }
  int n, npos = 0;
  Val **loop = keep_own_transforms(&r, &protected) ? order_loop(&r, src_pos, &n, &npos) : NULL;
  if (!loop) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
  /* Already matching up to the position (its leading axes are the images of the
   * source's): dst keeps its loop domain, the order of the rest included (nvFuser's
   * TransformPropagator skips such tensors). */
  bool matched = npos <= TV(dst)->nloop;
  for (int i = 0; matched && i < npos; i++) matched = loop[i] == TV(dst)->loop[i];
  if (matched) {
    if (dst_pos) *dst_pos = npos;
    return CF_OK;
  }
  cf_status st = check_kept(&r, what, loop, n);
  if (st) return st;
  ir_tv_set_loop(f, dst, n, loop);
  if (dst_pos) *dst_pos = npos;
  return CF_OK;
}
