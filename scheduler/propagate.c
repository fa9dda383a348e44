/* scheduler/propagate.c: transform propagation from a reference TensorView to the whole
 * fusion (nvFuser's TransformPropagator over a MaxLogicalDomainInfoSpanningTree), and the
 * check of TransformPropagatorWithCheck.
 *
 * Propagation walks the maximum-information spanning tree from the reference and replays
 * each tensor's whole loop domain onto the next (replay.c). Every tensor, fusion inputs
 * included, ends up with the reference's transforms on the axes it shares with it; axes
 * the reference does not have (a producer's reduction axes, a consumer's broadcast axes)
 * go last. Parallel types are left alone: parallelize_all_like copies them.
 *
 * cf_propagate_transforms_to is nvFuser's TransformPropagator with a position over a
 * selection: only the reference's first pos loop axes are replayed, each tensor matching
 * the position its tree parent reached (as compute_at does), and the tree enters only the
 * given tensors.
 *
 * Key decision: the check is independent of the replay. It rebuilds the permissive
 * IdMap after propagation and compares each tensor with its tree parent, so it catches a
 * replay that went wrong as well as schedules changed by hand afterwards. */
#include <stdint.h>

#include "scheduler/sched.h"

static cf_status propagate(cf_fusion *f, Val *ref, int nroots, Val *const *roots, const char *what) {
  Arena *a = arena_create();
  SpanTree tree;
  if (!a || !sched_span_forest(a, ref, TV(ref)->nloop, nroots, roots, NULL, NULL, &tree)) {
    arena_destroy(a);
    return ir_error(f, CF_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
  }
  cf_status s = CF_OK;
  /* Each tensor replays its parent's full loop domain, already propagated, so what the
   * reference did reaches every tensor even through tensors that lack some of its axes;
   * the roots keep their own. */
  for (int i = 1; i < tree.n && !s; i++) {
    int pos;
    if (tree.from[i]) s = sched_replay(f, a, tree.from[i], tree.tvs[i], TV(tree.from[i])->nloop, what, &pos);
  }
  arena_destroy(a);
  return s;
}

cf_status sched_propagate_from_roots(cf_fusion *f, Val *ref, int nroots, Val *const *roots) {
  return propagate(f, ref, nroots, roots, "propagate_transforms");
}

cf_status sched_replay_along(cf_fusion *f, Arena *a, const SpanTree *tree, int pos, const char *what, int *at) {
  ValTab index = {.arena = a};
  at[0] = pos;
  for (int i = 0; i < tree->n; i++) {
    if (!an_tab_put(&index, tree->tvs[i], (void *)(intptr_t)(i + 1)))
      return ir_error(f, CF_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
    if (i == 0) continue;
    int from = (int)(intptr_t)an_tab_get(&index, tree->from[i]) - 1;
    cf_status s = sched_replay(f, a, tree->from[i], tree->tvs[i], at[from], what, &at[i]);
    if (s) return s;
  }
  return CF_OK;
}

/* nvFuser's SetSelector: the tree enters only the selected tensors. */
static bool select_set(void *ctx, Val *from, Val *to, bool to_is_producer) {
  (void)from;
  (void)to_is_producer;
  return an_tab_get(ctx, to) != NULL;
}

cf_status cf_propagate_transforms_to(cf_fusion *f, cf_tv *ref_handle, int pos, int ntvs, cf_tv *const *tvs) {
  const char *what = "propagate_transforms_to";
  int p = sched_wrap_pos(f, what, ref_handle, pos);
  if (p < 0) return f ? f->status : CF_ERR_INVALID_ARGUMENT;
  Val *ref = ir_tv(ref_handle);
  cf_status s;
  if (ntvs < 0 || (ntvs > 0 && !tvs))
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "%s: %d tensors given%s", what, ntvs, tvs ? "" : " and tvs is NULL");
  for (int i = 0; i < ntvs; i++)
    if ((s = ir_check_tv(f, what, tvs[i]))) return s;
  Arena *a = arena_create();
  ValTab sel = {.arena = a};
  SpanTree tree;
  int *at = NULL;
  bool ok = a != NULL;
  for (int i = 0; ok && i < ntvs; i++) ok = an_tab_put(&sel, ir_tv(tvs[i]), ir_tv(tvs[i]));
  ok = ok && sched_span_tree(a, ref, p, ntvs ? select_set : NULL, &sel, &tree);
  if (ok) ok = (at = ARENA_ARRAY(a, int, tree.n)) != NULL;
  s = ok ? sched_replay_along(f, a, &tree, p, what, at) : ir_error(f, CF_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
  arena_destroy(a);
  return s;
}

cf_status cf_propagate_transforms(cf_fusion *f, cf_tv *ref) {
  cf_status s = ir_check_tv(f, "propagate_transforms", ref);
  if (s) return s;
  return propagate(f, ir_tv(ref), 0, NULL, "propagate_transforms");
}

cf_status cf_propagate_transforms_checked(cf_fusion *f, cf_tv *ref) {
  const char *what = "propagate_transforms_checked";
  cf_status s = ir_check_tv(f, what, ref);
  if (s) return s;
  if ((s = propagate(f, ir_tv(ref), 0, NULL, what))) return s;
  return sched_check_transforms(f, ir_tv(ref), what);
}

/* ---- the check ------------------------------------------------------------------------- */

static int find_mapped(const IdMap *m, Val *const *ids, int n, const Val *id) {
  for (int i = 0; i < n; i++)
    if (an_idmap_same(m, ids[i], id)) return i;
  return -1;
}

/* Whether the parent axis pid should have reached tv: every base axis it derives from maps
 * to tv or is a broadcast axis (forwarded), and at least one maps. */
static bool should_reach(Arena *a, Val *parent, Val *tv, Val *pid) {
  int nh;
  Expr **hist = sched_history_to(a, parent, &pid, 1, &nh);
  PtrVec bases = {0};
  if (nh < 0) return false;
  if (!nh) ptrvec_push(a, &bases, pid);
  for (int k = 0; k < nh; k++)
    for (int i = 0; i < hist[k]->nin; i++)
      if (sched_is_base_id(parent, hist[k]->in[i])) ptrvec_push(a, &bases, hist[k]->in[i]);
  int mapped = 0;
  for (int i = 0; i < bases.len; i++) {
    Val *b = bases.items[i];
    if (an_pairwise_partner(parent, tv, b))
      mapped++;
    else if (ID(b)->iter_type != CF_ITER_BROADCAST)
      return false;
  }
  return mapped > 0;
}

static bool extents_differ(Val *parent, Val *pid, Val *tv, Val *tid) {
  int64_t x, y;
  if (sched_derives_from_broadcast(parent, pid) || sched_derives_from_broadcast(tv, tid)) return false;
  return ir_scalar_const_value(ID(pid)->extent, &x) && ir_scalar_const_value(ID(tid)->extent, &y) && x != y;
}

typedef enum Mismatch { MM_MISSING, MM_ORDER, MM_EXTENT } Mismatch;

/* Records the first mismatch between tv's loop axis k and its parent's loop axis j. */
static cf_status mismatch(cf_fusion *f, const char *what, Val *tv, int k, Val *parent, int j, Mismatch how) {
  StrBuf b = {0}, c = {0};
  ir_print_id(&c, TV(parent)->loop[j]);
  const char *tn = TV(tv)->display_name, *pn = TV(parent)->display_name;
  cf_status s;
  if (how == MM_MISSING) {
    s = ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, tv, "%s: %s has no loop axis matching loop axis %d (%s) of %s", what,
                    tn, j, c.data, pn);
  } else {
    ir_print_id(&b, TV(tv)->loop[k]);
    s = ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, tv, "%s: loop axis %d (%s) of %s %s loop axis %d (%s) of %s", what, k,
                    b.data, tn, how == MM_ORDER ? "does not match" : "has a different extent than", j, c.data, pn);
  }
  sb_free(&b);
  sb_free(&c);
  return s;
}

/* Compares tv with its tree parent; see sched_check_transforms. */
static cf_status check_pair(cf_fusion *f, Arena *a, const IdMap *m, Val *parent, Val *tv, const char *what) {
  TensorView *p = TV(parent), *t = TV(tv);
  int k = 0;
  for (int j = 0; j < p->nloop; j++) {
    Val *pid = p->loop[j];
    if (find_mapped(m, t->loop, t->nloop, pid) < 0) {
      if (should_reach(a, parent, tv, pid)) return mismatch(f, what, tv, 0, parent, j, MM_MISSING);
      continue;
    }
    /* pid maps to some axis of tv, so tv has at least k+1 axes unless an earlier axis of
     * tv matched two parent axes; report that as an order mismatch at its last axis. */
    if (k >= t->nloop) return mismatch(f, what, tv, t->nloop - 1, parent, j, MM_ORDER);
    if (!an_idmap_same(m, t->loop[k], pid)) return mismatch(f, what, tv, k, parent, j, MM_ORDER);
    if (extents_differ(parent, pid, tv, t->loop[k])) return mismatch(f, what, tv, k, parent, j, MM_EXTENT);
    k++;
  }
  return CF_OK;
}

cf_status sched_check_transforms(cf_fusion *f, Val *ref, const char *what) {
  if (f->status) return f->status;
  Arena *a = arena_create();
  IdMap *m = an_idmap_build(f, true);
  SpanTree tree;
  cf_status s = CF_OK;
  if (!a || !m || !sched_span_tree(a, ref, TV(ref)->nloop, NULL, NULL, &tree))
    s = ir_error(f, CF_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
  for (int i = 1; !s && i < tree.n; i++) s = check_pair(f, a, m, tree.from[i], tree.tvs[i], what);
  an_idmap_free(m);
  arena_destroy(a);
  return s;
}
