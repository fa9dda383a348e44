/* ir/tmem_group.c: user grouping of tensor-memory TensorViews into regions.
 *
 * A region is one tcgen05.alloc: a power-of-two block of TMEM columns whose address lives
 * in a shared-memory slot. By default lowering gives every tensor-memory TensorView a
 * region of its own; cf_fusion_group_tmem puts several into one region, side by side in
 * its columns (nvFuser's "tmem_regions" managed data). The grouping is only recorded here,
 * as TMemRegionSpecs on the fusion; lower/tmem_info.c turns it into regions, and checks
 * again that each grouped tensor is still in tensor memory when the fusion is compiled.
 *
 * Key decision: the call checks what it can at once (an empty group, a tensor not in
 * tensor memory, a tensor already grouped) so that the error names the call that made
 * the mistake, as every scheduling call does. */
#include "ir/ir.h"

static bool already_grouped(const cf_fusion *f, const Val *tv) {
  for (int r = 0; r < f->tmem_regions.len; r++) {
    const TMemRegionSpec *s = f->tmem_regions.items[r];
    for (int i = 0; i < s->ntvs; i++)
      if (s->tvs[i] == tv) return true;
  }
  return false;
}

static cf_status check_member(cf_fusion *f, cf_tv *const *tvs, int i) {
  cf_status s = ir_check_tv(f, "group_tmem", tvs[i]);
  if (s) return s;
  Val *tv = ir_tv(tvs[i]);
  if (TV(tv)->mem != CF_MEM_TENSOR)
    return ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, tv,
                       "group_tmem: %s is in %s memory; only tensor-memory TensorViews share regions",
                       TV(tv)->display_name, cf_memory_type_name(TV(tv)->mem));
  for (int j = 0; j < i; j++)
    if (ir_tv(tvs[j]) == tv)
      return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "group_tmem: %s is listed twice in the group",
                         TV(tv)->display_name);
  if (already_grouped(f, tv))
    return ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, tv,
                       "group_tmem: %s is already in another region; a tensor cannot be in two regions",
                       TV(tv)->display_name);
  return CF_OK;
}

cf_status cf_fusion_group_tmem(cf_fusion *f, int n, cf_tv *const *tvs) {
  if (!f) return CF_ERR_INVALID_ARGUMENT;
  if (f->status) return f->status;
  if (n <= 0 || !tvs) return ir_error(f, CF_ERR_INVALID_ARGUMENT, "group_tmem: empty group; a region needs a tensor");
  for (int i = 0; i < n; i++) {
    cf_status s = check_member(f, tvs, i);
    if (s) return s;
  }
  TMemRegionSpec *spec = ARENA_NEW(f->arena, TMemRegionSpec);
  spec->tvs = ARENA_ARRAY(f->arena, Val *, n);
  for (int i = 0; i < n; i++) spec->tvs[i] = ir_tv(tvs[i]);
  spec->ntvs = n;
  ptrvec_push(f->arena, &f->tmem_regions, spec);
  return CF_OK;
}
