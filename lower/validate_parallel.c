/* lower/validate_parallel.c: the validate_parallel pass (after the tensor-memory check, whose messages are
 * more specific for the schedules both refuse). Refuses schedules that would communicate through
 * memory that cannot carry it. A tensor's axis parallelized on a thread or block type is
 * held by different threads (or blocks); a consumer that reads it along an axis of
 * another parallel type reads what other threads wrote. That needs shared memory across
 * threads (plus a sync, which the sync pass inserts) and global memory across blocks
 * (plus a grid sync, which the sync pass inserts: lower_reads_across_blocks says where).
 * Requires: c->exprs, c->model.exact. Establishes: nothing; fails with a message naming the
 * producer, its axis and the consumer.
 * Key decision: nvFuser's rule, checked on loop axes: each launch-parallel axis of a
 * producer right of its compute-at position must map exactly to a consumer loop axis of
 * the same parallel type, or the producer's memory must be shared across that type. Axes that share a loop
 * (left of the producer's compute-at position) share its parallel type, and no tensor
 * may end up with one parallel type on two axes. */
#include "lower/lower.h"

/* Whether loops over domains a and b run the same elements position by position (a
 * broadcast and an axis of extent 1 both run index 0 only). */
static bool same_positions(LowerCtx *c, Val *a, Val *b) {
  return a == b || an_idmap_same(c->model.exact, a, b) || (ir_id_is_one_position(a) && ir_id_is_one_position(b));
}

static void check_axis(LowerCtx *c, Val *p, int j, Val *cv) {
  Val *id = TV(p)->loop[j];
  cf_parallel_type pt = lower_ptype(c, id);
  if (!ir_ptype_is_thread(pt) && !ir_ptype_is_block(pt)) return;
  if (ir_mem_shared_across(TV(p)->mem, pt)) return;
  /* A block reduction leaves its result in every thread it combined; a grid-reduced
   * tensor is read by nothing in the kernel (reduction.c). */
  if (ID(id)->iter_type == CF_ITER_REDUCTION) return;
  /* Left of the compute-at position the loop is shared: the producer is computed in the
   * consumer's loop, by the consumer's threads (check_shared_loop checks their types). */
  if (j < TV(p)->ca_pos) return;
  /* Otherwise the producer's values must already sit in the thread that reads them: the
   * axes must be exactly the same, not merely related through a broadcast. */
  for (int k = 0; k < TV(cv)->nloop; k++) {
    Val *ck = TV(cv)->loop[k];
    if (lower_ptype(c, ck) != pt || !an_idmap_same(c->model.exact, id, ck)) continue;
    /* The same axis, but the consumer's loop may iterate a larger domain it was inlined
     * into (a broadcast concretized), or stand for one positionally: then its threads
     * stand for elements the producer's threads never computed. */
    Val *pp = an_iterated_domain(&c->model, p, j), *cp = an_iterated_domain(&c->model, cv, k);
    if (same_positions(c, pp, cp)) return;
    lower_fail(c, CF_ERR_INVALID_SCHEDULE,
               "compile: %s is in %s memory, but %s reads its axis %d (%s) on %s in a loop over %s, which that axis "
               "does not iterate (the producer's %s hold other elements); inline %s into %s, or parallelize them apart",
               TV(p)->display_name, cf_memory_type_name(TV(p)->mem), TV(cv)->display_name, j, lower_id_str(c, id),
               cf_parallel_type_name(pt), lower_id_str(c, cp), ir_ptype_is_thread(pt) ? "threads" : "blocks",
               TV(p)->display_name, TV(cv)->display_name);
    return;
  }
  lower_fail(c, CF_ERR_INVALID_SCHEDULE,
             "compile: %s is in %s memory, but %s reads its axis %d (%s) on %s from other %s; %s", TV(p)->display_name,
             cf_memory_type_name(TV(p)->mem), TV(cv)->display_name, j, lower_id_str(c, id), cf_parallel_type_name(pt),
             ir_ptype_is_thread(pt) ? "threads" : "blocks",
             ir_ptype_is_thread(pt) ? "put it in shared memory or parallelize the consumer's matching axis alike"
                                    : "parallelize the consumer's matching axis alike (intermediates cannot be global)");
}

static bool launch(cf_parallel_type p) { return ir_ptype_is_thread(p) || ir_ptype_is_block(p); }

/* Axis j of an inlined producer and of its consumer share one loop, hence one parallel
 * type: two different launch types conflict. Judged on the effective types, so that
 * conflicts passed along through serial axes of the same loop group are caught too. (A
 * tensor that thereby uses a type twice is caught by check_unique_types.) */
static void check_shared_loop(LowerCtx *c, Val *p, Val *cv, int j) {
  cf_parallel_type pp = lower_ptype(c, TV(p)->loop[j]), cp = lower_ptype(c, TV(cv)->loop[j]);
  if (pp != cp && launch(pp) && launch(cp))
    lower_fail(c, CF_ERR_INVALID_SCHEDULE,
               "compile: axis %d of %s (on %s) and axis %d of %s (on %s) share a loop; axes that share a loop need "
               "the same parallel type", j, TV(p)->display_name, cf_parallel_type_name(pp), j, TV(cv)->display_name,
               cf_parallel_type_name(cp));
  /* One loop, read two ways: the consumer's axis stands for a promoting tensor's positions
   * and the producer's (read by another consumer elsewhere) does not, so the producer would
   * compute its own element where the consumer reads another. */
  if (an_promoting_tensor(&c->model, cv, j) || !an_positional_ref(&c->model, cv, j)) return;
  Val *pd = an_iterated_domain(&c->model, p, j), *cd = an_iterated_domain(&c->model, cv, j);
  if (!same_positions(c, pd, cd))
    lower_fail(c, CF_ERR_INVALID_SCHEDULE,
               "compile: %s is computed in the loop of %s's axis %d, which runs the positions of %s, but its own axis "
               "%d (%s) runs %s; inline %s into %s alone, or not at axis %d", TV(p)->display_name, TV(cv)->display_name,
               j, lower_id_str(c, cd), j, lower_id_str(c, TV(p)->loop[j]), lower_id_str(c, pd), TV(p)->display_name,
               TV(cv)->display_name, j);
}

/* A launch type indexes one axis of a tensor: threadIdx.y cannot stand for two. Judged on
 * the effective types, so a serial axis that runs in another axis' parallel loop counts. */
static void check_unique_types(LowerCtx *c, Val *tv) {
  for (int j = 0; j < TV(tv)->nloop; j++) {
    Val *id = TV(tv)->loop[j];
    cf_parallel_type p = lower_ptype(c, id);
    if (!launch(p)) continue; /* broadcast axes are serial in the effective types */
    for (int k = j + 1; k < TV(tv)->nloop; k++)
      if (lower_ptype(c, TV(tv)->loop[k]) == p)
        lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: axes %d and %d of %s both run on %s%s; a tensor uses a "
                   "parallel type once", j, k, TV(tv)->display_name, cf_parallel_type_name(p),
                   ID(id)->ptype == p && ID(TV(tv)->loop[k])->ptype == p ? "" : " (one through a loop it shares)");
  }
}

bool lower_reads_across_blocks(LowerCtx *c, Val *p, Val *cv) {
  if (TV(p)->mem != CF_MEM_GLOBAL) return false;
  for (int pt = CF_PT_BIDX; pt <= CF_PT_BIDZ; pt++) {
    int64_t ext;
    if (!c->pdim[pt] || (kx_is_const(c->pdim[pt], &ext) && ext == 1)) continue;
    Val *pa = NULL, *ca = NULL;
    for (int j = 0; j < TV(p)->nloop; j++)
      if (lower_ptype(c, TV(p)->loop[j]) == (cf_parallel_type)pt) pa = TV(p)->loop[j];
    for (int j = 0; j < TV(cv)->nloop; j++)
      if (lower_ptype(c, TV(cv)->loop[j]) == (cf_parallel_type)pt) ca = TV(cv)->loop[j];
    if (!(pa && ca && (an_idmap_same(c->model.exact, pa, ca) || lower_same_loop(c, pa, ca)))) return true;
  }
  return false;
}

void lower_validate_parallel(LowerCtx *c) {
  for (int i = 0; i < c->ntvs; i++)
    if (!ir_tv_is_input(c->f, c->tvs[i])) {
      check_unique_types(c, c->tvs[i]);
    }
  for (int i = 0; i < c->nexprs; i++) {
    const Expr *e = c->exprs[i];
    for (int k = 0; k < e->nin; k++) {
      Val *p = e->in[k];
      if (p->kind != VAL_TV || ir_tv_is_input(c->f, p)) continue;
      for (int j = 0; j < TV(p)->nloop; j++) check_axis(c, p, j, e->out[0]);
      for (int j = 0; j < TV(p)->ca_pos && j < TV(e->out[0])->nloop; j++) check_shared_loop(c, p, e->out[0], j);
    }
  }
}
