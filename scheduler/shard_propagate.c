/* scheduler/shard_propagate.c: cf_propagate_shardings and cf_tv_sharded_axis
 * (multidevice.h), the scheduling face of analysis/sharding.c.
 *
 * The analysis computes every tensor's layout without touching the fusion (the
 * executors read it that way); this file writes the propagated layouts back as a user
 * would have written them, so that printing shows them: the mesh, and per sharded
 * logical axis either the axis itself parallelized (its extent is the mesh axis's) or
 * its outer split by the mesh axis's size parallelized (nvFuser's loop-domain sharding).
 * Key decision: only tensors without a mesh are written, and only while unscheduled
 * (loop domain == logical domain), so a user's schedule is never rewritten. */
#include "analysis/sharding.h"
#include "ir/ir.h"

static bool unscheduled(Val *tv) {
  TensorView *t = TV(tv);
  if (t->nloop != t->nlogical) return false;
  for (int a = 0; a < t->nloop; a++)
    if (t->loop[a] != t->logical[a]) return false;
  return true;
}

/* Writes layout l onto tv (no mesh yet): axes from the last, so splits keep positions. */
static cf_status write_layout(cf_fusion *f, Val *tv, const AnSharding *l) {
  cf_tv *h = ir_tv_handle(tv);
  if (!l->mesh) return CF_OK;
  if (!unscheduled(tv))
    return ir_error_tv(f, CF_ERR_UNSUPPORTED, tv, "propagate_shardings: the tensor is scheduled; place it on a mesh");
  if (cf_tv_set_device_mesh(f, h, l->mesh)) return f->status;
  for (int a = TV(tv)->nlogical - 1; a >= 0; a--) {
    if (l->dim[a] < 0) continue;
    int size = an_mesh_axis_size(l->mesh, l->dim[a]);
    int64_t ext;
    cf_parallel_type p = (cf_parallel_type)(CF_PT_DIDX + (l->mesh->ndims - 1 - l->dim[a]));
    bool whole = ir_scalar_const_value(ID(TV(tv)->logical[a])->extent, &ext) && ext == size;
    if (!whole && cf_split_outer(f, h, a, size)) return f->status;
    if (cf_parallelize(f, h, a, p)) return f->status;
  }
  return CF_OK;
}

cf_status cf_propagate_shardings(cf_fusion *f) {
  if (!f) return CF_ERR_INVALID_ARGUMENT;
  AnShardings s;
  if (an_shardings_compute(f, &s)) return f->status;
  int n = 0;
  Val **tvs = ir_fusion_all_tvs(f, &n);
  for (int i = 0; i < n && !f->status; i++)
    if (!TV(tvs[i])->mesh) write_layout(f, tvs[i], an_sharding_of(&s, tvs[i]));
  an_shardings_free(&s);
  return f->status;
}

int cf_tv_sharded_axis(cf_fusion *f, cf_tv *tv, cf_parallel_type p) {
  if (ir_check_tv(f, "tv_sharded_axis", tv)) return -1;
  AnShardings s;
  if (an_shardings_compute(f, &s)) return -1;
  const AnSharding *l = an_sharding_of(&s, ir_tv(tv));
  int dim = ir_mesh_axis_of(l->mesh, p), found = -1;
  for (int a = 0; dim >= 0 && a < TV(ir_tv(tv))->nlogical; a++)
    if (l->dim[a] == dim) found = a;
  an_shardings_free(&s);
  return found;
}
