/* ir/alloc_domain.c: the allocation domain of a TensorView (how it is laid out in
 * memory, with contiguity per axis) and the tensor-memory dim-sep position that cuts that
 * domain into lane axes and column axes.
 *
 * Key decision: the allocation domain is any set of IterDomains of the tensor's own
 * transform history (its logical axes, its loop axes, or anything between), so a user can
 * lay a tensor out differently from how its loops run; lowering relates the two through
 * the transform history. */
#include "ir/ir.h"

cf_status cf_set_allocation_domain(cf_fusion *f, cf_tv *t, int n, cf_id *const *ids, const int8_t *contiguity) {
  cf_status s = ir_check_tv(f, "set_allocation_domain", t);
  if (s) return s;
  Val *tv = ir_tv(t);
  if (n <= 0 || !ids)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "set_allocation_domain: no axes given");
  Val **dom = ARENA_ARRAY(f->arena, Val *, n);
  int8_t *contig = ARENA_ARRAY(f->arena, int8_t, n);
  for (int i = 0; i < n; i++) {
    Val *id = ir_idv(ids[i]);
    if (!id || id->kind != VAL_ID || ID(id)->tv != tv)
      return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv,
                         "set_allocation_domain: axis %d is not an IterDomain of %s", i, TV(tv)->display_name);
    for (int j = 0; j < i; j++)
      if (dom[j] == id)
        return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "set_allocation_domain: axis %d repeats axis %d", i, j);
    dom[i] = id;
    int8_t c = contiguity ? contiguity[i] : 1;
    if (c < -1 || c > 1)
      return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "set_allocation_domain: contiguity %d of axis %d is not -1, 0 or 1",
                         c, i);
    contig[i] = ID(id)->iter_type == CF_ITER_BROADCAST ? -1 : c;
  }
  TensorView *tw = TV(tv);
  tw->alloc = dom;
  tw->nalloc = n;
  tw->contiguity = contig;
  return CF_OK;
}

cf_status cf_set_allocation_to_loop(cf_fusion *f, cf_tv *t, bool contiguous) {
  cf_status s = ir_check_tv(f, "set_allocation_to_loop", t);
  if (s) return s;
  TensorView *tw = TV(ir_tv(t));
  int8_t *contig = ARENA_ARRAY(f->arena, int8_t, tw->nloop);
  for (int i = 0; i < tw->nloop; i++) contig[i] = contiguous ? 1 : 0;
  return cf_set_allocation_domain(f, t, tw->nloop, (cf_id *const *)tw->loop, contig);
}

cf_status cf_set_tmem_dim_sep_pos(cf_fusion *f, cf_tv *t, int pos) {
  cf_status s = ir_check_tv(f, "set_tmem_dim_sep_pos", t);
  if (s) return s;
  Val *tv = ir_tv(t);
  TensorView *tw = TV(tv);
  if (tw->mem != CF_MEM_TENSOR)
    return ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, tv,
                       "set_tmem_dim_sep_pos: %s is in %s memory; the dim-sep position applies to tensor memory only",
                       tw->display_name, cf_memory_type_name(tw->mem));
  int n;
  ir_tv_alloc_domain(tv, &n);
  int p = pos < 0 ? pos + n + 1 : pos;
  if (p < 0 || p > n)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "set_tmem_dim_sep_pos: position %d is outside %d..%d", pos,
                       -n - 1, n);
  tw->tmem_dim_sep = p;
  return CF_OK;
}
