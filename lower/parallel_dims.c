/* lower/parallel_dims.c: the parallel_dims pass. The parallel-dimension map: the launch extent of each
 * thread and block parallel type, and the launch dimensions of the kernel.
 *
 * Requires: the loop model and effective parallel types. Establishes: c->pdim[pt] (NULL when unused), c->pdim_exact[pt] (every
 * axis on pt has the same extent, so no thread predicate is needed), c->k->grid/block.
 * Key decision: the extent of a parallel type is the maximum of the promoted extents of
 * all loop axes bound to it; axes with a smaller extent are predicated by the predicate pass. */
#include "lower/lower.h"

static void check_axis(LowerCtx *c, Val *tv, int i) {
  Val *id = TV(tv)->loop[i];
  cf_parallel_type pt = ID(id)->ptype;
  if (ir_ptype_is_device(pt))
    lower_fail(c, CF_ERR_UNSUPPORTED, "compile: axis %d of %s is parallelized on %s; multi-device fusions are not "
               "supported", i, TV(tv)->display_name, cf_parallel_type_name(pt));
  /* Reduction axes on thread and block indices are block and grid reductions (reduction.c). */
}

static void add_extent(LowerCtx *c, cf_parallel_type pt, KExpr *ext) {
  if (!c->pdim[pt]) {
    c->pdim[pt] = ext;
    c->pdim_exact[pt] = true;
  } else if (!kx_equal(c->pdim[pt], ext)) {
    c->pdim[pt] = kx_bin(c->a, OP_MAX, c->pdim[pt], ext);
    c->pdim_exact[pt] = false;
  }
}

void lower_parallel_dims(LowerCtx *c) {
  for (int t = 0; t < c->ntvs; t++) {
    Val *tv = c->tvs[t];
    if (ir_tv_is_input(c->f, tv)) continue;
    for (int i = 0; i < TV(tv)->nloop; i++) {
      check_axis(c, tv, i);
      /* A loop runs over its group's promoted IterDomain (loop_model.c): a broadcast
       * axis, or one merged from a broadcast, counts with the concrete extent it stands
       * for; a loop of broadcasts alone has one element and needs no thread. */
      Val *p = lower_promoted(c, TV(tv)->loop[i]);
      cf_parallel_type pt = lower_ptype(c, TV(tv)->loop[i]);
      if (!ir_ptype_is_thread(pt) && !ir_ptype_is_block(pt)) continue;
      if (ID(p)->iter_type == CF_ITER_BROADCAST) continue;
      add_extent(c, pt, lower_extent(c, p));
    }
  }
  static const cf_parallel_type grid[3] = {CF_PT_BIDX, CF_PT_BIDY, CF_PT_BIDZ};
  static const cf_parallel_type block[3] = {CF_PT_TIDX, CF_PT_TIDY, CF_PT_TIDZ};
  for (int d = 0; d < 3; d++) {
    c->k->grid[d] = c->pdim[grid[d]] ? c->pdim[grid[d]] : kx_const(c->a, 1);
    c->k->block[d] = c->pdim[block[d]] ? c->pdim[block[d]] : kx_const(c->a, 1);
  }
  /* Block and grid limits are the launchers' to check (both backends do, with the
   * numbers), as in nvFuser: a schedule is compiled whatever its launch size. */
}
