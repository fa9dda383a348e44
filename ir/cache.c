/* ir/cache.c: cache_after and cache_before, the two rewrites that put a local copy next
 * to a tensor (nvFuser's cacheAfter / cacheBefore): schedulers use them to give global
 * inputs and outputs a register stage whose accesses can be vectorized.
 * Key decision: the rewrite edits the graph in place (expression operands and use lists)
 * but creates fresh IterDomains for the new tensor, so every existing transform history
 * stays valid; both refuse tensors already inlined, where the rewrite would change the
 * loops other tensors share. */
#include "ir/ir.h"

static void remove_use(Val *v, const Expr *e) {
  for (int i = 0; i < v->uses.len; i++)
    if (v->uses.items[i] == e) {
      v->uses.items[i] = v->uses.items[--v->uses.len];
      return;
    }
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
  return ir_tv_handle(c);
}

/* cache_before keeps the tensor's logical axes one to one, so the defining op must not
 * permute them; a reduction's cache keeps its reduction axes (below). */
static bool cacheable_definition(const Expr *d) {
  OpKind k = ir_op_kind(d->op);
  return k == OPK_SET || k == OPK_UNARY || k == OPK_BINARY || k == OPK_TERNARY || k == OPK_CAST ||
         k == OPK_BROADCAST || k == OPK_REDUCTION || k == OPK_SQUEEZE || k == OPK_FULL || k == OPK_RESIZE;
}

/* The cache of a reduction takes over the reduction with all its axes; tv, now a copy of
 * it, keeps only the iteration and broadcast axes (fresh ones, as an op's output has). */
static Val *reduction_cache(cf_fusion *f, Val *tv) {
  TensorView *t = TV(tv);
  int n = t->nlogical > 0 ? t->nlogical : 1, m = 0;
  Val **all = ARENA_ARRAY(f->arena, Val *, n), **kept = ARENA_ARRAY(f->arena, Val *, n);
  Val **loop = ARENA_ARRAY(f->arena, Val *, n);
  int8_t *contig = ARENA_ARRAY(f->arena, int8_t, n);
  if (!all || !kept || !loop || !contig) return NULL;
  for (int i = 0; i < t->nlogical; i++) {
    Val *l = t->logical[i];
    if (!(all[i] = ir_id_new(f, ID(l)->extent, ID(l)->iter_type))) return NULL;
    if (ID(l)->iter_type == CF_ITER_REDUCTION) continue;
    if (!(kept[m] = ir_id_new(f, ID(l)->extent, ID(l)->iter_type))) return NULL;
    ID(kept[m])->tv = tv;
    loop[m] = kept[m];
    contig[m] = ID(l)->iter_type == CF_ITER_BROADCAST ? -1 : 1;
    m++;
  }
  Val *c = ir_tv_new(f, tv->dtype, t->nlogical, all);
  if (!c) return NULL;
  t->root = t->logical = kept;
  t->loop = loop;
  t->contiguity = contig;
  t->nroot = t->nlogical = t->nloop = m;
  t->alloc = NULL;
  t->nalloc = 0;
  return c;
}

cf_tv *cf_cache_before(cf_fusion *f, cf_tv *t) {
  if (ir_check_tv(f, "cache_before", t)) return NULL;
  Val *tv = ir_tv(t);
  Expr *d = tv->def;
  if (!d || !cacheable_definition(d)) {
    ir_error_tv(f, CF_ERR_UNSUPPORTED, tv, "cache_before: %s is %s; only tensors computed by elementwise ops and "
                "reductions can be cached before", TV(tv)->display_name, d ? "a permutation" : "a fusion input");
    return NULL;
  }
  if (TV(tv)->ca_pos > 0 || TV(tv)->max_producer_pos > 0 || TV(tv)->nloop != TV(tv)->nlogical) {
    ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, tv, "cache_before: %s is scheduled already; cache it first",
                TV(tv)->display_name);
    return NULL;
  }
  Val *c = ir_op_kind(d->op) == OPK_REDUCTION ? reduction_cache(f, tv) : ir_tv_like(f, tv, tv->dtype);
  if (!c) {
    ir_error(f, CF_ERR_OUT_OF_MEMORY, "cache_before: out of memory");
    return NULL;
  }
  d->out[0] = c;
  c->def = d;
  tv->def = NULL;
  if (!ir_expr_new(f, OP_SET, 1, &c, 1, &tv)) {
    ir_error(f, CF_ERR_OUT_OF_MEMORY, "cache_before: out of memory");
    return NULL;
  }
  return ir_tv_handle(c);
}
