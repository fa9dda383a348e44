/* analysis/sharding.c: the layout of every tensor over its device mesh, its propagation
 * through the fusion, and the reshardings (analysis/sharding.h).
 *
 * A tensor placed on a mesh declares its layout with DID loop axes: each is either one of
 * its logical axes (then of the mesh axis's extent: one element per device) or the outer
 * output of a split of one whose extent is the mesh axis's size (block distribution).
 * A tensor without a mesh takes its producers' mesh, and each of its logical axes paired
 * (an_pairwise_map) with a sharded producer axis is sharded on the same mesh axis, the
 * first producer winning, as nvFuser's propagation from inputs to outputs does; the
 * fusion's inputs without a mesh are replicated on the fusion's mesh (the first placed).
 * Key decision: the user's word is final. A tensor the user placed keeps exactly the
 * layout given (none: replicated), so an explicit output layout is what the lowering
 * produces, and propagation never overrides it. A resharding is then any (expression,
 * producer) whose producer layout differs from the one the expression's output implies,
 * or a reduction over a sharded axis (partial results to combine). */
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/sharding.h"

int an_mesh_axis_size(const cf_device_mesh *m, int dim) { return m && dim >= 0 && dim < m->ndims ? m->shape[dim] : 1; }

static cf_parallel_type did_of(const cf_device_mesh *m, int dim) {
  return (cf_parallel_type)(CF_PT_DIDX + (m->ndims - 1 - dim));
}

static int logical_pos(const Val *tv, const Val *id) {
  for (int a = 0; a < TV((Val *)tv)->nlogical; a++)
    if (TV((Val *)tv)->logical[a] == id) return a;
  return -1;
}

/* The logical axis a DID loop axis shards, checking its extent against the mesh axis
 * size D: the logical axis itself (extent D), or the outer output of a split of one
 * (extent D). -1 after recording the error. */
static int sharded_logical_axis(cf_fusion *f, Val *tv, Val *id, int size) {
  int64_t ext;
  const char *pt = cf_parallel_type_name(ID(id)->ptype);
  bool is_const = ir_scalar_const_value(ID(id)->extent, &ext);
  int pos = logical_pos(tv, id);
  if (pos < 0 && id->def && id->def->op == OP_SPLIT && id->def->out[0] == id) pos = logical_pos(tv, id->def->in[0]);
  if (pos < 0) {
    ir_error_tv(f, CF_ERR_UNSUPPORTED, tv,
                "sharding: the axis parallelized on %s is neither a logical axis nor the outer split of one", pt);
    return -1;
  }
  if (is_const ? ext == size : pos == logical_pos(tv, id)) return pos; /* a symbolic logical axis: bound per call */
  ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, tv,
              "sharding: the axis parallelized on %s (logical axis %d) must have the mesh axis's extent %d", pt, pos,
              size);
  return -1;
}

/* The layout a tensor placed on a mesh declares with its DID loop axes. */
static cf_status declared(cf_fusion *f, Val *tv, AnSharding *l) {
  TensorView *t = TV(tv);
  l->mesh = t->mesh;
  memset(l->dim, -1, sizeof l->dim);
  for (int i = 0; i < t->nloop; i++) {
    cf_parallel_type p = ID(t->loop[i])->ptype;
    if (!ir_ptype_is_device(p)) continue;
    int dim = ir_mesh_axis_of(t->mesh, p);
    if (!t->mesh || dim < 0)
      return ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, tv, "sharding: axis %d is parallelized on %s but %s", i,
                         cf_parallel_type_name(p), t->mesh ? "its mesh has no such axis" : "the tensor has no device mesh");
    int pos = sharded_logical_axis(f, tv, t->loop[i], an_mesh_axis_size(t->mesh, dim));
    if (pos < 0) return f->status;
    /* a reduction axis and an iteration axis may share a type: the reduction's partials
     * are scattered over the iteration axis (nvFuser's reduce-scatter spelling) */
    bool red = ID(t->logical[pos])->iter_type == CF_ITER_REDUCTION;
    for (int a = 0; a < t->nlogical; a++)
      if (l->dim[a] == dim && (ID(t->logical[a])->iter_type == CF_ITER_REDUCTION) == red)
        return ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, tv, "sharding: two axes are parallelized on %s",
                           cf_parallel_type_name(p));
    if (l->dim[pos] >= 0)
      return ir_error_tv(f, CF_ERR_UNSUPPORTED, tv, "sharding: logical axis %d is sharded on two mesh axes", pos);
    l->dim[pos] = (int8_t)dim;
  }
  return CF_OK;
}

/* The i-th axis of tv without its reduction axes, or NULL. */
static Val *kept_axis(Val *tv, int i) {
  for (int a = 0; a < TV(tv)->nlogical; a++)
    if (ID(TV(tv)->logical[a])->iter_type != CF_ITER_REDUCTION && i-- == 0) return TV(tv)->logical[a];
  return NULL;
}

/* A slice or pad leaves an axis whole (start 0, step 1, no padding, the same constant
 * extent) yet makes a new IterDomain for it, which the pairwise map leaves unpaired. */
static bool resize_keeps_axis(const Expr *e, int k, Val *pid, Val *cid) {
  int64_t a, b;
  if (!pid || !cid || !ir_scalar_const_value(ID(pid)->extent, &a) || !ir_scalar_const_value(ID(cid)->extent, &b) || a != b)
    return false;
  int64_t s;
  if (e->op == OP_SLICE)
    return k < e->attr.slice.rank && ir_scalar_const_value(e->attr.slice.start[k], &s) && s == 0 &&
           e->attr.slice.step[k] == 1;
  if (e->op == OP_PAD) return k < e->attr.pad.rank && !e->attr.pad.left[k] && !e->attr.pad.right[k];
  return false;
}

int an_shard_pairs(Val *p, Val *c, Val **pids, Val **cids) {
  int n = an_pairwise_map(p, c, pids, cids, CF_MAX_RANK);
  const Expr *e = c->def;
  if (n < 0 || !e || (e->op != OP_SLICE && e->op != OP_PAD)) return n;
  for (int k = 0; k < CF_MAX_RANK && n < CF_MAX_RANK; k++) {
    Val *pid = kept_axis(p, k), *cid = kept_axis(c, k);
    bool paired = false;
    for (int i = 0; i < n; i++) paired |= pids[i] == pid;
    if (!paired && resize_keeps_axis(e, k, pid, cid)) pids[n] = pid, cids[n++] = cid;
  }
  return n;
}

/* A tensor without a mesh: its producers' mesh, and the sharding of paired axes. */
static cf_status propagated(AnShardings *s, Val *tv, AnSharding *l) {
  cf_fusion *f = s->f;
  memset(l->dim, -1, sizeof l->dim);
  l->mesh = NULL;
  Expr *e = tv->def;
  for (int i = 0; e && i < e->nin; i++) {
    Val *p = e->in[i];
    if (p->kind != VAL_TV) continue;
    const AnSharding *pl = an_sharding_of(s, p);
    if (!pl->mesh) continue;
    if (l->mesh && !cf_device_mesh_equal(l->mesh, pl->mesh))
      return ir_error_tv(f, CF_ERR_UNSUPPORTED, tv,
                         "sharding: the producers are on different meshes; place the tensor on a mesh");
    l->mesh = pl->mesh;
    Val *pids[CF_MAX_RANK], *cids[CF_MAX_RANK];
    int n = an_shard_pairs(p, tv, pids, cids);
    for (int k = 0; k < n; k++) {
      int pa = logical_pos(p, pids[k]), ca = logical_pos(tv, cids[k]);
      if (pa < 0 || ca < 0 || pl->dim[pa] < 0 || l->dim[ca] >= 0 || ID(cids[k])->iter_type == CF_ITER_BROADCAST)
        continue;
      bool used = false;
      for (int a = 0; a < TV(tv)->nlogical; a++) used |= l->dim[a] == pl->dim[pa];
      if (!used) l->dim[ca] = pl->dim[pa];
    }
  }
  if (!l->mesh) l->mesh = s->mesh;
  return CF_OK;
}

static bool has_did_axis(Val *tv) {
  for (int i = 0; i < TV(tv)->nloop; i++)
    if (ir_ptype_is_device(ID(TV(tv)->loop[i])->ptype)) return true;
  return false;
}

static const cf_device_mesh *first_mesh(Val **tvs, int n) {
  for (int i = 0; i < n; i++)
    if (TV(tvs[i])->mesh) return TV(tvs[i])->mesh;
  return NULL;
}

cf_status an_shardings_compute(cf_fusion *f, AnShardings *s) {
  memset(s, 0, sizeof *s);
  s->f = f;
  if (f->status) return f->status;
  Arena *scratch = arena_create();
  int n = 0;
  Val **tvs = scratch ? ir_fusion_all_tvs_in(scratch, f, &n) : NULL;
  s->by_id = calloc((size_t)f->vals.len + 1, sizeof(AnSharding));
  if (!tvs || !s->by_id) {
    arena_destroy(scratch);
    free(s->by_id);
    s->by_id = NULL;
    return ir_error(f, CF_ERR_OUT_OF_MEMORY, "sharding: out of memory");
  }
  s->mesh = first_mesh(tvs, n);
  for (int i = 0; i < n && !f->status; i++) {
    AnSharding *l = &s->by_id[tvs[i]->id];
    if (TV(tvs[i])->mesh || has_did_axis(tvs[i])) declared(f, tvs[i], l);
    else propagated(s, tvs[i], l);
  }
  arena_destroy(scratch);
  if (f->status) an_shardings_free(s);
  return f->status;
}

void an_shardings_free(AnShardings *s) {
  free(s->by_id);
  s->by_id = NULL;
}

bool an_sharding_any(const Val *tv, const AnSharding *l, bool iter_only) {
  for (int a = 0; a < TV((Val *)tv)->nlogical; a++)
    if (l->dim[a] >= 0 && !(iter_only && ID(TV((Val *)tv)->logical[a])->iter_type == CF_ITER_REDUCTION)) return true;
  return false;
}

bool an_reshard_moves_input(const AnReshard *r) {
  if (r->cross_mesh) return true;
  return memcmp(r->from, r->to, sizeof r->from) != 0;
}

void an_sharding_print(StrBuf *b, const Val *tv, const int8_t *dim, const cf_device_mesh *m) {
  TensorView *t = TV((Val *)tv);
  sb_puts(b, "[");
  for (int a = 0; a < t->nlogical; a++) {
    cf_iter_type it = ID(t->logical[a])->iter_type;
    sb_printf(b, "%s%c%s", a ? ", " : "", it == CF_ITER_REDUCTION ? 'r' : it == CF_ITER_BROADCAST ? 'b' : 'i',
              dim[a] >= 0 && m ? cf_parallel_type_name(did_of(m, dim[a])) : "S");
  }
  sb_puts(b, "]");
}
