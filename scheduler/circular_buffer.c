/* scheduler/circular_buffer.c: cf_circular_buffer, the scheduling primitive of pipelined
 * shared-memory tiles (nvFuser's TensorView::circularBuffer(stages)), and the rule it and
 * the lowering (lower/circular_buffer.c) check.
 *
 * A tile tv in shared memory, computed at a serial loop L (its compute-at position) by a
 * fill (its op and the producers inlined into it), is filled once per iteration of L and read in the same
 * iteration. With S stages it has S buffers; the lowering issues the copies of iterations
 * 0..D-1 before L, and iteration i copies the tile of iteration i + D into buffer
 * (i + D) % S while the others are read from buffer i % S; D, the prefetch distance, is
 * S - 1 (cf_circular_buffer) or less (cf_circular_buffer_prefetch): S - D - 1 stages are
 * then left to readers that finish late (an asynchronous wgmma still reading its tile
 * while the next iteration runs).
 * Key decision: the stage count is a field of the TensorView (cb_stages) read by the
 * lowering, not a transform: the tile's loop domain (its storage, swizzle included) stays
 * what the schedule made, and the lowering adds the stage as the outermost dimension of
 * its allocation. The rule is checked here and again when lowering (inlining may move the
 * compute-at position afterwards), by the one function below, including that whatever
 * the fill reads is computed inside the fill or before the loop: the fill moves ahead, a
 * producer beside it at the same loop would not. cf_tma_load marks such a tile as filled
 * by TMA boxes (lower/tma.c finds the boxes); it checks here only what the tile is. */
#include "scheduler/sched.h"

/* A tensor computed in the kernel that tv's fill reads, directly or through producers
 * inlined into the fill, computed at tv's own loop L as a statement of its own (its
 * compute-at position is tv's, ca: loops are shared position by position, so one past ca
 * is inside the fill and one below it before L); NULL when none. */
static Val *producer_beside_fill(cf_fusion *f, const Expr *d, int ca) {
  for (int i = 0; i < d->nin; i++) {
    Val *p = d->in[i];
    if (p->kind != VAL_TV || !p->def || ir_tv_is_input(f, p) || TV(p)->ca_pos < ca) continue;
    if (TV(p)->ca_pos == ca) return p;
    Val *q = producer_beside_fill(f, p->def, ca);
    if (q) return q;
  }
  return NULL;
}

bool sched_cb_check(cf_fusion *f, Val *tv, int stages, int prefetch, char *why, size_t nwhy) {
  TensorView *t = TV(tv);
  Expr *d = tv->def;
  if (stages < 2 || stages > CF_MAX_CB_STAGES) {
    snprintf(why, nwhy, "circular_buffer: %s asks for %d stages; 2 to %d are supported", t->display_name, stages,
             CF_MAX_CB_STAGES);
    return false;
  }
  if (prefetch < 1 || prefetch > stages - 1) {
    snprintf(why, nwhy, "circular_buffer: %s asks to fill %d iterations ahead with %d stages; 1 to %d (stages - 1) "
             "are possible", t->display_name, prefetch, stages, stages - 1);
    return false;
  }
  if (t->mem != CF_MEM_SHARED) {
    snprintf(why, nwhy, "circular_buffer: %s is in %s memory; only shared-memory tiles are circular-buffered",
             t->display_name, cf_memory_type_name(t->mem));
    return false;
  }
  if (!d || ir_tv_is_input(f, tv) || ir_op_kind(d->op) == OPK_REDUCTION) {
    snprintf(why, nwhy, "circular_buffer: %s is not computed elementwise in the kernel (a fusion input or a "
             "reduction has no fill to prefetch)", t->display_name);
    return false;
  }
  if (t->ca_pos < 1 || ID(t->loop[t->ca_pos - 1])->ptype != CF_PT_SERIAL) {
    StrBuf b = {0};
    if (t->ca_pos >= 1) ir_print_id(&b, t->loop[t->ca_pos - 1]);
    snprintf(why, nwhy, "circular_buffer: %s must be computed at a serial loop, the one its stages circulate over; "
             "its compute-at position is %d%s%s%s (inline it at that loop first)", t->display_name, t->ca_pos,
             b.data ? " (" : "", b.data ? b.data : "", b.data ? ", not serial)" : "");
    sb_free(&b);
    return false;
  }
  Val *p = producer_beside_fill(f, d, t->ca_pos);
  if (p) {
    snprintf(why, nwhy, "circular_buffer: %s reads %s, computed at the same loop as a statement of its own (both "
             "at compute-at position %d): the fill, run %d iterations ahead, would read it before it is written "
             "(inline %s into %s's fill, or compute it before that loop)", t->display_name, TV(p)->display_name,
             t->ca_pos, prefetch, TV(p)->display_name, t->display_name);
    return false;
  }
  return true;
}

cf_status cf_circular_buffer_prefetch(cf_fusion *f, cf_tv *handle, int stages, int prefetch) {
  cf_status s = ir_check_tv(f, "circular_buffer", handle);
  if (s) return s;
  Val *tv = ir_tv(handle);
  char why[512];
  if (!sched_cb_check(f, tv, stages, prefetch, why, sizeof why))
    return ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, tv, "%s", why);
  TV(tv)->cb_stages = stages;
  TV(tv)->cb_prefetch = prefetch;
  return CF_OK;
}

cf_status cf_circular_buffer(cf_fusion *f, cf_tv *handle, int stages) {
  return cf_circular_buffer_prefetch(f, handle, stages, stages - 1);
}

cf_status cf_tma_load(cf_fusion *f, cf_tv *handle) {
  cf_status s = ir_check_tv(f, "tma_load", handle);
  if (s) return s;
  Val *tv = ir_tv(handle);
  TensorView *t = TV(tv);
  Expr *d = tv->def;
  if (t->mem != CF_MEM_SHARED)
    return ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, tv, "tma_load: %s is in %s memory; TMA fills shared-memory tiles",
                       t->display_name, cf_memory_type_name(t->mem));
  if (!d || !ir_op_is_vector_copy(d->op) || d->in[0]->kind != VAL_TV || !ir_tv_is_input(f, d->in[0]) || d->in[0]->dtype != tv->dtype)
    return ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, tv, "tma_load: %s is not a copy of a fusion input of its dtype "
                       "(a set, broadcast or permute; cf_cache_after of the input makes one); TMA copies global memory as it is",
                       t->display_name);
  t->tma_load = true;
  return CF_OK;
}

cf_status cf_warp_specialize(cf_fusion *f, cf_tv *handle, cf_parallel_type pt) {
  cf_status s = ir_check_tv(f, "warp_specialize", handle);
  if (s) return s;
  Val *tv = ir_tv(handle);
  if (!TV(tv)->tma_load)
    return ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, tv, "warp_specialize: %s is not filled by TMA (cf_tma_load first): "
                       "a producer slice issues TMA boxes", TV(tv)->display_name);
  if (pt != CF_PT_TIDY)
    return ir_error_tv(f, CF_ERR_UNSUPPORTED, tv, "warp_specialize: %s asks for a producer along %s; only threadIdx.y "
                       "(CF_PT_TIDY) is supported", TV(tv)->display_name, cf_parallel_type_name(pt));
  TV(tv)->ws_pt = pt;
  return CF_OK;
}
