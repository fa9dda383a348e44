/* scheduler/inline.c: inlining (compute-at positions) and compute_at.
 *
 * A tensor's compute-at position is the number of its leading loop axes whose loops it
 * shares with its consumers: it is computed inside those loops, right before it is used,
 * and lowering allocates it only over the axes right of the position (DESIGN.md 5).
 * Axis i of a producer can share a loop with axis i of a consumer only when the two map
 * in the permissive IdMap. A tensor cannot be inlined past its first reduction axis (the
 * reduction must finish before anyone reads it), past a vectorized axis of its own or of
 * a consumer (a vector access is one instruction, nothing fits inside it), nor, for the
 * best-effort variants, past an unrolled one.
 *
 * Key decision: loops are shared position by position, as the brief of this module
 * fixes: producer loop axis i is consumer loop axis i for i < ca_pos. nvFuser also lets a
 * producer skip a consumer's broadcast axes here; we do not, and transform propagation
 * puts those axes last instead, so propagated schedules inline as deeply as nvFuser's
 * while loop-nest generation stays a positional walk. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/sched.h"

typedef enum Why {
  WHY_NONE, WHY_REDUCTION, WHY_VECTORIZE, WHY_UNROLL, WHY_NOMAP, WHY_NOAXIS, WHY_CONSUMER_PT, WHY_READS_REDUCTION,
  WHY_SPLITS_LOOP
} Why;

/* The largest legal position and, when it is below nloop, why: axis `pos` is the first
 * one that cannot be shared. */
typedef struct Limit {
  int pos;
  Why why;
  Val *consumer;
  Val *reduction, *reader; /* WHY_READS_REDUCTION: the loop would run both */
} Limit;

static bool blocks_inlining(const Val *id, bool best_effort) {
  cf_parallel_type p = ID((Val *)id)->ptype;
  return p == CF_PT_VECTORIZE || (best_effort && p == CF_PT_UNROLL);
}

static void self_limit(Val *tv, bool best_effort, Limit *l) {
  TensorView *t = TV(tv);
  l->pos = t->nloop;
  l->why = WHY_NONE;
  l->consumer = l->reduction = l->reader = NULL;
  for (int i = 0; i < t->nloop; i++) {
    Val *id = t->loop[i];
    Why w = ID(id)->iter_type == CF_ITER_REDUCTION ? WHY_REDUCTION
            : ID(id)->ptype == CF_PT_VECTORIZE     ? WHY_VECTORIZE
            : best_effort && ID(id)->ptype == CF_PT_UNROLL ? WHY_UNROLL
                                                           : WHY_NONE;
    if (w != WHY_NONE) {
      l->pos = i;
      l->why = w;
      return;
    }
  }
}

static void consumer_limit(const IdMap *m, Val *tv, Val *c, bool best_effort, Limit *l) {
  TensorView *t = TV(tv), *ct = TV(c);
  for (int i = 0; i < l->pos; i++) {
    Why w = i >= ct->nloop                                ? WHY_NOAXIS
            : !an_idmap_same(m, t->loop[i], ct->loop[i]) ? WHY_NOMAP
            : blocks_inlining(ct->loop[i], best_effort)      ? WHY_CONSUMER_PT
                                                            : WHY_NONE;
    if (w != WHY_NONE) {
      l->pos = i;
      l->why = w;
      l->consumer = c;
      return;
    }
  }
}

/* Runs body with c bound to each consumer TensorView of tv (once per use). */
#define FOR_CONSUMERS(tv, c, body)                                                     \
  for (int u_ = 0; u_ < (tv)->uses.len; u_++) {                                        \
    Expr *e_ = (tv)->uses.items[u_];                                                   \
    if (ir_op_kind(e_->op) == OPK_TRANSFORM) continue;                                 \
    for (int o_ = 0; o_ < e_->nout; o_++) {                                            \
      Val *c = e_->out[o_];                                                            \
      if (c->kind == VAL_TV) body                                                      \
    }                                                                                  \
  }

/* What the loop-graph checks read, made once per public call and kept current as
 * positions change (the graph is joined as each tensor is inlined). */
typedef struct LoopCheck {
  LoopGraph *g;
  Arena *scratch;
  Val **tvs;
  int ntvs;
  bool any_reduction; /* no reduction axis anywhere: no reduction to protect */
  char *live;         /* by Expr id: ops an output depends on (an_live_exprs) */
} LoopCheck;

/* The consumers inlining is decided by: a dead op (nothing the outputs need) computes
 * nothing, so it neither limits nor shares a producer's loops (the loop graph and the
 * maps leave it out too). */
#define FOR_LIVE_CONSUMERS(lc, tv, c, body)                                            \
  FOR_CONSUMERS(tv, c, {                                                               \
    if ((lc)->live[c->def->id]) body                                                   \
  })

static void loop_check_free(LoopCheck *lc) {
  an_loop_graph_free(lc->g);
  arena_destroy(lc->scratch);
  free(lc->live);
}

static bool loop_check_init(cf_fusion *f, LoopCheck *lc) {
  *lc = (LoopCheck){an_loop_graph_build(f), arena_create(), NULL, 0, false, an_live_exprs(f)};
  if (lc->g && lc->scratch && lc->live) lc->tvs = ir_fusion_all_tvs_in(lc->scratch, f, &lc->ntvs);
  for (int a = 0; a < lc->ntvs; a++)
    for (int j = 0; j < TV(lc->tvs[a])->nloop; j++) lc->any_reduction |= ID(TV(lc->tvs[a])->loop[j])->iter_type == CF_ITER_REDUCTION;
  if (lc->tvs) return true;
  loop_check_free(lc);
  ir_error(f, CF_ERR_OUT_OF_MEMORY, "scheduler: out of memory checking loops");
  return false;
}

/* Sharing loop i with all consumers joins their loops into one: that loop must not hold a
 * reduction and a reader of its result (the normalization pattern), nor leave out a
 * tensor computed between two of its members (loop_graph.c). */
static void reduction_limit(const LoopCheck *lc, Val *tv, Limit *l) {
  const LoopGraph *g = lc->g;
  Val **tvs = lc->tvs;
  int ntvs = lc->ntvs;
  int nconsumers = 0;
  FOR_LIVE_CONSUMERS(lc, tv, c, { (void)c; nconsumers++; })
  Val **ids = malloc(sizeof(Val *) * (size_t)(nconsumers + 1));
  for (int i = 0; ids && i < l->pos; i++) {
    int n = 0;
    ids[n++] = TV(tv)->loop[i];
    FOR_LIVE_CONSUMERS(lc, tv, c, {
      if (i < TV(c)->nloop) ids[n++] = TV(c)->loop[i];
    })
    /* With one consumer the loops joined are a producer's and its consumer's: nothing can
     * sit between them (lowering's expression sort still refuses what cannot be nested). */
    Val *s = NULL, *reader = NULL, *between = n > 2 ? an_loop_between(g, tvs, ntvs, ids, n) : NULL;
    if (!between && !(lc->any_reduction && an_loop_conflict(g, tvs, ntvs, ids, n, &s, &reader))) continue;
    l->pos = i;
    l->why = between ? WHY_SPLITS_LOOP : WHY_READS_REDUCTION;
    l->reduction = s;
    l->reader = between ? between : reader;
    break;
  }
  free(ids);
}

static Limit max_pos(const IdMap *m, const LoopCheck *lc, Val *tv, bool best_effort) {
  Limit l;
  self_limit(tv, best_effort, &l);
  FOR_LIVE_CONSUMERS(lc, tv, c, { consumer_limit(m, tv, c, best_effort, &l); })
  if (l.pos > 0) reduction_limit(lc, tv, &l);
  return l;
}

int sched_max_inline_pos(const IdMap *m, Val *tv, bool best_effort) {
  LoopCheck lc;
  if (!loop_check_init(tv->fusion, &lc)) return 0;
  int pos = max_pos(m, &lc, tv, best_effort).pos;
  loop_check_free(&lc);
  return pos;
}

/* "axis 2 (iS7{4}) is a reduction axis", or the other reasons, into b. */
static void describe_limit(StrBuf *b, Val *tv, const Limit *l) {
  TensorView *t = TV(tv);
  sb_printf(b, "axis %d (", l->pos);
  ir_print_id(b, t->loop[l->pos]);
  sb_puts(b, ") ");
  const char *cn = l->consumer ? TV(l->consumer)->display_name : "";
  switch (l->why) {
  case WHY_REDUCTION: sb_puts(b, "is a reduction axis"); break;
  case WHY_VECTORIZE: sb_puts(b, "is vectorized"); break;
  case WHY_UNROLL: sb_puts(b, "is unrolled"); break;
  case WHY_NOAXIS: sb_printf(b, "has no counterpart in %s, which has %d loop axes", cn, TV(l->consumer)->nloop); break;
  case WHY_NOMAP:
  case WHY_CONSUMER_PT:
    sb_printf(b, "%s %s's axis %d (", l->why == WHY_NOMAP ? "does not map to" : "maps to", cn, l->pos);
    ir_print_id(b, TV(l->consumer)->loop[l->pos]);
    sb_puts(b, l->why == WHY_NOMAP ? ")" : "), which is vectorized");
    break;
  case WHY_READS_REDUCTION:
    sb_printf(b, "would share a loop with a reduction axis of %s, and %s, which reads %s's result, runs in that loop",
              TV(l->reduction)->display_name, TV(l->reader)->display_name, TV(l->reduction)->display_name);
    break;
  case WHY_SPLITS_LOOP:
    sb_printf(b, "would put %s's consumers in one loop, and %s, computed between them, has no axis in that loop",
              t->display_name, TV(l->reader)->display_name);
    break;
  case WHY_NONE: break;
  }
}

static cf_status refuse(cf_fusion *f, const char *what, Val *tv, int pos, const Limit *l) {
  StrBuf b = {0};
  sb_printf(&b, "%s: cannot inline ", what);
  ir_print_tv(&b, tv);
  sb_printf(&b, " at position %d: ", pos);
  describe_limit(&b, tv, l);
  cf_status s = ir_error(f, CF_ERR_INVALID_SCHEDULE, "%s", b.data);
  sb_free(&b);
  return s;
}

/* The innermost position of consumer c whose axis maps to one of producer p's first
 * p_pos loop axes: how far p's loops reach into c (nvFuser's
 * getConsumerPosAlignedToProducerCA). */
static int aligned_consumer_pos(const IdMap *m, Val *c, Val *p, int p_pos) {
  TensorView *ct = TV(c), *pt = TV(p);
  int pos = ct->nloop;
  for (; pos > 0; pos--)
    for (int k = 0; k < p_pos; k++)
      if (an_idmap_same(m, ct->loop[pos - 1], pt->loop[k])) return pos;
  return 0;
}

static void update_max_producer_pos(const IdMap *m, Val *c) {
  Expr *d = c->def;
  if (!d) return;
  TensorView *ct = TV(c);
  for (int i = 0; i < d->nin; i++) {
    Val *p = d->in[i];
    if (p->kind != VAL_TV || TV(p)->ca_pos == 0) continue;
    int pos = aligned_consumer_pos(m, c, p, TV(p)->ca_pos);
    if (pos > ct->max_producer_pos) ct->max_producer_pos = pos;
  }
}

static cf_status inline_at(cf_fusion *f, const IdMap *m, LoopCheck *lc, Val *tv, int pos, bool best_effort,
                           const char *what) {
  /* A fusion input is computed before the kernel: inlining it is a no-op (as in nvFuser). */
  if (ir_tv_is_input(f, tv)) return CF_OK;
  TensorView *t = TV(tv);
  Limit l = max_pos(m, lc, tv, best_effort);
  int p = best_effort && pos > l.pos ? l.pos : pos;
  /* A broadcast axis costs nothing to allocate, so inlining it gains nothing; keeping it
   * outside leaves its consumers free to schedule that axis as they like. */
  while (p > 0 && ID(t->loop[p - 1])->iter_type == CF_ITER_BROADCAST) p--;
  if (p > l.pos) return refuse(f, what, tv, pos, &l);
  if (p <= t->ca_pos) return CF_OK;
  t->ca_pos = p;
  FOR_LIVE_CONSUMERS(lc, tv, c, {
    update_max_producer_pos(m, c);
    for (int j = 0; j < p && j < TV(c)->nloop; j++) an_loop_graph_join(lc->g, t->loop[j], TV(c)->loop[j]);
  })
  return CF_OK;
}

int sched_wrap_pos(cf_fusion *f, const char *what, cf_tv *handle, int pos) {
  if (ir_check_tv(f, what, handle)) return -1;
  Val *tv = ir_tv(handle);
  int p = ir_wrap_axis(pos, TV(tv)->nloop + 1);
  if (p < 0) ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "%s: position %d out of range", what, pos);
  return p;
}

int sched_matched_pos(const IdMap *m, Val *from, int from_pos, Val *to) {
  TensorView *ft = TV(from), *tt = TV(to);
  int k = 0;
  for (; k < tt->nloop; k++) {
    bool found = false;
    for (int j = 0; j < from_pos && !found; j++) found = an_idmap_same(m, tt->loop[k], ft->loop[j]);
    if (!found) break;
  }
  return k;
}

static cf_status inline_at_api(cf_fusion *f, cf_tv *handle, int pos, bool best_effort, const char *what) {
  int p = sched_wrap_pos(f, what, handle, pos);
  if (p < 0) return f ? f->status : CF_ERR_INVALID_ARGUMENT;
  Val *tv = ir_tv(handle);
  cf_status s;
  IdMap *m = an_idmap_build(f, true);
  LoopCheck lc;
  if (!m || !loop_check_init(f, &lc)) {
    an_idmap_free(m);
    return f->status;
  }
  s = inline_at(f, m, &lc, tv, p, best_effort, what);
  loop_check_free(&lc);
  an_idmap_free(m);
  return s;
}

cf_status cf_inline_at(cf_fusion *f, cf_tv *tv, int pos) { return inline_at_api(f, tv, pos, false, "inline_at"); }

cf_status cf_inline_at_best_effort(cf_fusion *f, cf_tv *tv, int pos) {
  return inline_at_api(f, tv, pos, true, "inline_at_best_effort");
}

cf_status cf_inline_most(cf_fusion *f) {
  if (!f) return CF_ERR_INVALID_ARGUMENT;
  if (f->status) return f->status;
  IdMap *m = an_idmap_build(f, true);
  LoopCheck lc;
  if (!m || !loop_check_init(f, &lc)) {
    an_idmap_free(m);
    return f->status;
  }
  cf_status s = CF_OK;
  /* Consumers first: a producer's legality depends on the loops its consumers share. */
  for (int i = lc.ntvs - 1; i >= 0 && !s; i--)
    s = inline_at(f, m, &lc, lc.tvs[i], TV(lc.tvs[i])->nloop, true, "inline_most");
  loop_check_free(&lc);
  an_idmap_free(m);
  return s;
}

/* Inlines the tensors of tree (all, or those `only` marks) at the positions matching
 * ref's position pos along the tree. */
static cf_status inline_along(cf_fusion *f, Arena *a, const SpanTree *tree, int pos, const ValTab *only,
                              bool best_effort, const char *what) {
  IdMap *m = an_idmap_build(f, true);
  if (!m) return f->status;
  int *at = ARENA_ARRAY(a, int, tree->n);
  ValTab index = {.arena = a};
  cf_status s = at ? CF_OK : ir_error(f, CF_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
  for (int i = 0; !s && i < tree->n; i++) {
    Val *tv = tree->tvs[i];
    if (i == 0) {
      at[i] = pos;
    } else {
      int from = (int)(intptr_t)an_tab_get(&index, tree->from[i]) - 1;
      at[i] = sched_matched_pos(m, tree->from[i], at[from], tv);
    }
    if (!an_tab_put(&index, tv, (void *)(intptr_t)(i + 1))) s = ir_error(f, CF_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
  }
  /* Applied consumers first: a producer's legality depends on the loops its consumers share. */
  LoopCheck lc = {0};
  if (!s && !loop_check_init(f, &lc)) s = f->status;
  for (int k = s ? -1 : lc.ntvs - 1; !s && k >= 0; k--) {
    Val *tv = lc.tvs[k];
    int i = (int)(intptr_t)an_tab_get(&index, tv) - 1;
    if (i >= 0 && (!only || an_tab_get(only, tv))) s = inline_at(f, m, &lc, tv, at[i], best_effort, what);
  }
  if (lc.tvs) loop_check_free(&lc);
  an_idmap_free(m);
  return s;
}

cf_status cf_inline_all_at(cf_fusion *f, cf_tv *ref_handle, int pos) {
  const char *what = "inline_all_at";
  int p = sched_wrap_pos(f, what, ref_handle, pos);
  if (p < 0) return f ? f->status : CF_ERR_INVALID_ARGUMENT;
  Val *ref = ir_tv(ref_handle);
  cf_status s;
  Arena *a = arena_create();
  SpanTree tree;
  if (!a || !sched_span_tree(a, ref, TV(ref)->nloop, NULL, NULL, &tree))
    s = ir_error(f, CF_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
  else
    s = inline_along(f, a, &tree, p, NULL, true, what);
  arena_destroy(a);
  return s;
}

/* ---- compute_at ------------------------------------------------------------------------ */

/* Marks in `mark` the tensors from which `tv` is reachable through definitions. */
static bool mark_ancestors(ValTab *mark, Val *tv) {
  if (an_tab_get(mark, tv)) return true;
  if (!an_tab_put(mark, tv, tv)) return false;
  Expr *d = tv->def;
  if (d && ir_op_kind(d->op) != OPK_TRANSFORM)
    for (int i = 0; i < d->nin; i++)
      if (d->in[i]->kind == VAL_TV && !mark_ancestors(mark, d->in[i])) return false;
  return true;
}

/* Marks in `sel` the tensors on paths from tv down to the ancestors marked in `anc`. */
static bool mark_between(ValTab *sel, const ValTab *anc, Val *tv) {
  if (!an_tab_get(anc, tv) || an_tab_get(sel, tv)) return true;
  if (!an_tab_put(sel, tv, tv)) return false;
  bool ok = true;
  FOR_CONSUMERS(tv, c, { ok = ok && mark_between(sel, anc, c); })
  return ok;
}

/* nvFuser's ComputeAtSelector: go up only into selected tensors; go down out of or into
 * them, so other consumers of selected tensors follow along. */
static bool select_between(void *ctx, Val *from, Val *to, bool to_is_producer) {
  const ValTab *sel = ctx;
  if (to_is_producer) return an_tab_get(sel, to) != NULL;
  return an_tab_get(sel, from) || an_tab_get(sel, to);
}

/* Whether a tensor with no uses is reachable from `from` without passing through `avoid`
 * (memo by Val id). */
static bool reaches_leaf_avoiding(Val *from, const Val *avoid, char *memo) {
  if (from == avoid || memo[from->id]) return false;
  memo[from->id] = 1;
  bool any_use = false;
  for (int u = 0; u < from->uses.len; u++) {
    Expr *e = from->uses.items[u];
    if (ir_op_kind(e->op) == OPK_TRANSFORM) continue;
    for (int o = 0; o < e->nout; o++) {
      if (e->out[o]->kind != VAL_TV) continue;
      any_use = true;
      if (reaches_leaf_avoiding(e->out[o], avoid, memo)) return true;
    }
  }
  return !any_use;
}

/* nvFuser's common consumer: the first tensor, at or after the consumer (not between the
 * producer and it), that every chain of uses from the producer passes through. */
static Val *common_consumer(cf_fusion *f, Arena *a, Val *producer, Val *consumer, const ValTab *between) {
  int n;
  Val **tvs = ir_fusion_all_tvs_in(a, f, &n);
  char *memo = arena_alloc(a, (size_t)f->vals.len + 1);
  for (int i = 0; i < n && memo; i++) {
    Val *t = tvs[i];
    if (t == producer || (t != consumer && an_tab_get(between, t))) continue;
    memset(memo, 0, (size_t)f->vals.len + 1);
    if (!reaches_leaf_avoiding(producer, t, memo)) return t;
  }
  return NULL;
}

/* Marks in `mark` tv and the tensors computed from it that have uses themselves. */
static bool mark_dependents(ValTab *mark, Val *tv) {
  if (an_tab_get(mark, tv)) return true;
  int uses = 0;
  FOR_CONSUMERS(tv, c, { (void)c; uses++; })
  if (uses && !an_tab_put(mark, tv, tv)) return false;
  bool ok = true;
  FOR_CONSUMERS(tv, c, { ok = ok && mark_dependents(mark, c); })
  return ok;
}

/* nvFuser's propagation subgraph: the tensors between the producer and the common
 * consumer (without it), or with none, the producer and every dependent that has uses. */
static bool select_subgraph(cf_fusion *f, Arena *a, Val *producer, Val *consumer, const ValTab *between, ValTab *sel) {
  Val *cc = common_consumer(f, a, producer, consumer, between);
  if (!cc) return mark_dependents(sel, producer);
  ValTab anc = {.arena = a};
  if (!mark_ancestors(&anc, cc) || !mark_between(sel, &anc, producer)) return false;
  return an_tab_put(sel, cc, NULL);
}

static cf_status compute_at_impl(cf_fusion *f, Arena *a, Val *producer, Val *consumer, int pos, const char *what) {
  ValTab anc = {.arena = a}, between = {.arena = a}, sel = {.arena = a};
  if (!mark_ancestors(&anc, consumer) || !mark_between(&between, &anc, producer))
    return ir_error(f, CF_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
  if (producer == consumer || !an_tab_get(&anc, producer))
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, consumer, "%s: %s does not depend on %s", what,
                       TV(consumer)->display_name, TV(producer)->display_name);
  if (!select_subgraph(f, a, producer, consumer, &between, &sel))
    return ir_error(f, CF_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
  SpanTree tree;
  if (!sched_span_tree(a, consumer, pos, select_between, &sel, &tree))
    return ir_error(f, CF_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
  int *at = ARENA_ARRAY(a, int, tree.n);
  if (!at) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
  cf_status s = sched_replay_along(f, a, &tree, pos, what, at);
  return s ? s : inline_along(f, a, &tree, pos, &sel, false, what);
}

cf_status cf_compute_at(cf_fusion *f, cf_tv *producer, cf_tv *consumer, int pos) {
  const char *what = "compute_at";
  cf_status s = ir_check_tv(f, what, producer);
  if (!s) s = ir_check_tv(f, what, consumer);
  if (s) return s;
  int p = sched_wrap_pos(f, what, consumer, pos);
  if (p < 0) return f->status;
  Arena *a = arena_create();
  if (!a) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
  s = compute_at_impl(f, a, producer ? ir_tv(producer) : NULL, ir_tv(consumer), p, what);
  arena_destroy(a);
  return s;
}
