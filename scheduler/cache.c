/* scheduler/cache.c: cache_after and cache_before, the two rewrites that put a local copy
 * next to a tensor (nvFuser's cacheAfter / cacheBefore): schedulers use them to give
 * global inputs and outputs a register stage whose accesses can be vectorized, hand
 * schedules to stage a tensor in shared memory.
 *
 * cache_after(tv): a new tensor c = Set(tv) that every consumer of tv reads instead; c's
 * loop domain is tv's replayed (replay.c), so a scheduled tv gets a cache scheduled alike.
 * cache_before(tv): tv's definition now writes a new local tensor c, and tv = Set(c). c
 * takes tv's whole domain (root, logical, loop: the IterDomains themselves, reduction
 * axes included), so a schedule made on tv before the call now schedules the computation;
 * tv gets fresh copies of its non-reduction logical axes with c's loop domain replayed on
 * them (its allocation domain, when it permutes the logical axes, carried over).
 *
 * Key decision: the rewrite edits the graph in place (expression operands and use lists),
 * so every existing transform history stays valid. Both refuse a tensor already inlined
 * into its consumers, and cache_before one whose producers are inlined into it (nvFuser
 * refuses both: the loops other tensors share would change). */
#include <string.h>

#include "scheduler/sched.h"

static void remove_use(Val *v, const Expr *e) {
  for (int i = 0; i < v->uses.len; i++)
    if (v->uses.items[i] == e) {
      v->uses.items[i] = v->uses.items[--v->uses.len];
      return;
    }
}

/* c's loop domain made like src's (c adjacent to src); false when recorded. */
static bool replay_like(cf_fusion *f, Val *src, Val *c, const char *what) {
  Arena *a = arena_create();
  cf_status s = a ? sched_replay(f, a, src, c, TV(src)->nloop, what, NULL)
                  : ir_error(f, CF_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
  arena_destroy(a);
  return s == CF_OK;
}

cf_tv *cf_cache_after(cf_fusion *f, cf_tv *t) {
  if (ir_check_tv(f, "cache_after", t)) return NULL;
  Val *tv = ir_tv(t);
  if (TV(tv)->ca_pos > 0) {
    ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, tv, "cache_after: %s is inlined already; cache it before inlining",
                TV(tv)->display_name);
    return NULL;
  }
  PtrVec uses = {0};
  for (int i = 0; i < tv->uses.len; i++) {
    Expr *u = tv->uses.items[i];
    if (ir_op_kind(u->op) != OPK_TRANSFORM) ptrvec_push(f->arena, &uses, u);
  }
  if (!uses.len) {
    ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "cache_after: %s has no consumers to read a cache",
                TV(tv)->display_name);
    return NULL;
  }
  Val *c = ir_tv_like(f, tv, tv->dtype);
  if (!c || !ir_expr_new(f, OP_SET, 1, &tv, 1, &c)) {
    ir_error(f, CF_ERR_OUT_OF_MEMORY, "cache_after: out of memory");
    return NULL;
  }
  for (int k = 0; k < uses.len; k++) {
    Expr *u = uses.items[k];
    for (int i = 0; i < u->nin; i++)
      if (u->in[i] == tv) u->in[i] = c;
    remove_use(tv, u);
    if (!ptrvec_contains(&c->uses, u)) ptrvec_push(f->arena, &c->uses, u);
  }
  return replay_like(f, tv, c, "cache_after") ? ir_tv_handle(c) : NULL;
}

/* tv's allocation domain over its fresh logical axes `fresh` (by logical position), when it
 * is a permutation of the old logical axes; false (recorded) when it is transformed. */
static bool carry_allocation(cf_fusion *f, Val *tv, const TensorView *old, Val **fresh) {
  if (!old->alloc) return true;
  TensorView *t = TV(tv);
  Val **alloc = ARENA_ARRAY(f->arena, Val *, old->nalloc);
  int8_t *contig = ARENA_ARRAY(f->arena, int8_t, old->nalloc);
  int n = 0;
  if (!alloc || !contig) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "cache_before: out of memory"), false;
  for (int i = 0; i < old->nalloc; i++) {
    int k = 0, m = 0;
    while (k < old->nlogical && old->logical[k] != old->alloc[i]) m += ID(old->logical[k++])->iter_type != CF_ITER_REDUCTION;
    if (k < old->nlogical && ID(old->logical[k])->iter_type == CF_ITER_REDUCTION) continue;
    if (k == old->nlogical)
      return ir_error_tv(f, CF_ERR_UNSUPPORTED, tv, "cache_before: allocation axis %d of %s is transformed; set the "
                         "allocation domain after cache_before", i, t->display_name), false;
    contig[n] = old->contiguity[i];
    alloc[n++] = fresh[m];
  }
  t->alloc = alloc;
  t->nalloc = n;
  t->contiguity = contig;
  return true;
}

/* c takes tv's domain; tv gets fresh copies of the non-reduction logical axes. */
static bool hand_over_domain(cf_fusion *f, Val *tv, Val *c) {
  TensorView *t = TV(tv), old = *t;
  Arena *a = arena_create();
  int nh;
  Expr **hist = a ? ir_tv_history_in(a, tv, &nh) : NULL;
  Val **fresh = ARENA_ARRAY(f->arena, Val *, t->nlogical);
  int8_t *contig = ARENA_ARRAY(f->arena, int8_t, t->nlogical);
  bool ok = a && fresh && contig;
  int n = 0;
  for (int i = 0; ok && i < t->nlogical; i++) {
    Val *l = t->logical[i];
    if (ID(l)->iter_type == CF_ITER_REDUCTION) continue;
    ok = (fresh[n] = ir_id_new(f, ID(l)->extent, ID(l)->iter_type)) != NULL;
    if (ok) ID(fresh[n])->tv = tv, contig[n] = ID(l)->iter_type == CF_ITER_BROADCAST ? -1 : 1, n++;
  }
  if (ok) {
    TensorView *ct = TV(c);
    ct->root = old.root, ct->nroot = old.nroot, ct->logical = old.logical, ct->nlogical = old.nlogical;
    ct->loop = old.loop, ct->nloop = old.nloop;
    for (int i = 0; i < old.nroot; i++) ID(old.root[i])->tv = c;
    for (int i = 0; i < old.nlogical; i++) ID(old.logical[i])->tv = c;
    for (int k = 0; k < nh; k++)
      for (int o = 0; o < hist[k]->nout; o++) ID(hist[k]->out[o])->tv = c;
    t->root = t->logical = fresh;
    t->loop = arena_memdup(f->arena, fresh, sizeof(Val *) * (size_t)(n > 0 ? n : 1));
    t->nroot = t->nlogical = t->nloop = n;
    t->contiguity = contig;
    t->alloc = NULL;
    t->nalloc = 0;
  } else {
    ir_error(f, CF_ERR_OUT_OF_MEMORY, "cache_before: out of memory");
  }
  arena_destroy(a);
  return ok && carry_allocation(f, tv, &old, fresh);
}

cf_tv *cf_cache_before(cf_fusion *f, cf_tv *t) {
  if (ir_check_tv(f, "cache_before", t)) return NULL;
  Val *tv = ir_tv(t);
  Expr *d = tv->def;
  if (!d || ir_op_kind(d->op) == OPK_RESHAPE) {
    ir_error_tv(f, CF_ERR_UNSUPPORTED, tv, "cache_before: %s is %s; only tensors computed in a kernel can be cached "
                "before", TV(tv)->display_name, d ? "a reshape" : ir_tv_is_input(f, tv) ? "a fusion input" : "computed by no op");
    return NULL;
  }
  if (TV(tv)->ca_pos > 0 || TV(tv)->max_producer_pos > 0) {
    ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, tv, "cache_before: %s %s; cache it before inlining", TV(tv)->display_name,
                TV(tv)->ca_pos > 0 ? "is inlined already" : "has producers inlined into it");
    return NULL;
  }
  /* c: a TensorView shell whose domain tv hands over (ir_tv_new needs some axes). */
  Val *c = ir_val_new(f, VAL_TV, tv->dtype);
  if (!c) {
    ir_error(f, CF_ERR_OUT_OF_MEMORY, "cache_before: out of memory");
    return NULL;
  }
  TV(c)->mem = CF_MEM_LOCAL;
  TV(c)->display_name = arena_printf(f->arena, "T%d", c->name);
  TV(c)->contiguity = ARENA_ARRAY(f->arena, int8_t, TV(tv)->nlogical);
  for (int i = 0; TV(c)->contiguity && i < TV(tv)->nlogical; i++)
    TV(c)->contiguity[i] = ID(TV(tv)->logical[i])->iter_type == CF_ITER_BROADCAST ? -1 : 1;
  if (!TV(c)->contiguity || !hand_over_domain(f, tv, c)) return NULL;
  d->out[0] = c;
  c->def = d;
  tv->def = NULL;
  if (!ir_expr_new(f, OP_SET, 1, &c, 1, &tv)) {
    ir_error(f, CF_ERR_OUT_OF_MEMORY, "cache_before: out of memory");
    return NULL;
  }
  return replay_like(f, c, tv, "cache_before") ? ir_tv_handle(c) : NULL;
}
