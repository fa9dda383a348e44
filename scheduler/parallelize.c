/* scheduler/parallelize.c: parallelize_all_like, copying a reference tensor's parallel
 * types onto the loop axes of every other tensor that share its loops
 * (nvFuser's scheduler_utils::parallelizeAllLike).
 *
 * A loop axis takes the parallel type of the reference loop axis it maps to in the
 * permissive IdMap, so a producer's broadcast axis takes the type of the consumer's
 * concrete axis it stands in for. With no type list every mapped axis is set, Serial
 * included (the reference's choice wins); with a list only the listed types are copied.
 *
 * Key decision: fusion inputs are skipped. They live in global memory and are never
 * computed by the kernel, so their loop axes carry nothing to parallelize. */
#include "scheduler/sched.h"

static bool type_selected(cf_parallel_type p, int ntypes, const cf_parallel_type *types) {
  if (ntypes == 0) return true;
  for (int i = 0; i < ntypes; i++)
    if (types[i] == p) return true;
  return false;
}

cf_status cf_parallelize_all_like(cf_fusion *f, cf_tv *ref_handle, int ntypes, const cf_parallel_type *types) {
  const char *what = "parallelize_all_like";
  cf_status s = ir_check_tv(f, what, ref_handle);
  if (s) return s;
  if (ntypes < 0 || (ntypes > 0 && !types))
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "%s: types is NULL or ntypes is negative", what);
  for (int i = 0; i < ntypes; i++)
    if ((unsigned)types[i] >= CF_PT_COUNT)
      return ir_error(f, CF_ERR_INVALID_ARGUMENT, "%s: invalid parallel type %d", what, (int)types[i]);
  Val *ref = ir_tv(ref_handle);
  IdMap *m = an_idmap_build(f, true);
  if (!m) return f->status;
  int n;
  Arena *scratch = arena_create();
  Val **tvs = scratch ? ir_fusion_all_tvs_in(scratch, f, &n) : NULL;
  if (!tvs) n = 0;
  TensorView *r = TV(ref);
  for (int i = 0; i < n; i++) {
    Val *tv = tvs[i];
    if (tv == ref || ir_tv_is_input(f, tv)) continue;
    TensorView *t = TV(tv);
    for (int k = 0; k < t->nloop; k++) {
      for (int j = 0; j < r->nloop; j++) {
        if (!an_idmap_same(m, t->loop[k], r->loop[j])) continue;
        cf_parallel_type p = ID(r->loop[j])->ptype;
        if (type_selected(p, ntypes, types)) ID(t->loop[k])->ptype = p;
        break;
      }
    }
  }
  arena_destroy(scratch);
  an_idmap_free(m);
  return CF_OK;
}
