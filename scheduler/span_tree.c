/* scheduler/span_tree.c: the maximum-information spanning tree of the tensor graph
 * (nvFuser's MaxLogicalDomainInfoSpanningTree), the path along which transform
 * propagation, inline_all_at and compute_at visit tensors.
 *
 * Every tensor is reached once, from the neighbour (producer or consumer) through which
 * the most of the reference's axes survive: going through a reduction drops the reduced
 * axes, going through a broadcast replaces an axis by a size-1 stand-in. Taking the best
 * edge first (Prim's algorithm) means a tensor reachable both ways is scheduled from the
 * side that knows the most about the reference.
 *
 * Several roots may grow one forest (sched_span_forest): each stands for the reference
 * position by position (a tensor tiled as the reference is), so a tensor whose axes reach
 * it from the reference only apart (a second lookup of one weight: the looked-up axis
 * through its index, the others through the table or a broadcast) is reached whole from
 * the root above it instead; the tree says which tensors it reaches whole.
 *
 * The best edge is kept in a heap of candidates, each weighed once when its tensor is
 * reached, so the tree is O(edges log edges) in time and linear in memory.
 *
 * Key decision: information is tracked per reference logical axis as the single axis it
 * maps to in each tensor plus a "complete" flag, not as sets of axes; without rfactor or
 * reshape an axis never maps to more than one axis of a neighbour, so nothing is lost. */
#include <stdlib.h>
#include <string.h>

#include "scheduler/sched.h"

typedef struct Info {
  Val **ids;      /* per tracked reference axis: the tensor's axis, or NULL */
  bool *complete; /* the axis carries the full extent */
} Info;

typedef struct Tree {
  Arena *a;
  int nref;     /* tracked reference axes */
  PtrVec tvs;   /* reached, in order */
  PtrVec from;
  ValTab info;  /* tv -> Info* */
  SpanSelect sel;
  void *ctx;
} Tree;

static void weigh(const Tree *t, const Info *in, int *ncomplete, int *nmapped) {
  *ncomplete = *nmapped = 0;
  for (int k = 0; k < t->nref; k++) {
    *nmapped += in->ids[k] != NULL;
    *ncomplete += in->ids[k] && in->complete[k];
  }
}

/* The information `to` receives from `from` through their pairwise map. */
static bool carry(Tree *t, Val *from, Val *to, const Info *src, Info *dst) {
  dst->ids = ARENA_ARRAY(t->a, Val *, t->nref);
  dst->complete = ARENA_ARRAY(t->a, bool, t->nref);
  if (!dst->ids || !dst->complete) return false;
  for (int k = 0; k < t->nref; k++) {
    if (!src->ids[k]) continue;
    Val *id = an_pairwise_partner(from, to, src->ids[k]);
    if (!id) continue;
    dst->ids[k] = id;
    dst->complete[k] = src->complete[k] &&
                       (ID(id)->iter_type != CF_ITER_BROADCAST || ID(src->ids[k])->iter_type == CF_ITER_BROADCAST);
  }
  return true;
}

/* Calls fn for every neighbour of tv: producers (inputs of its definition), then
 * consumers (outputs of the tensor Exprs using it). */
typedef bool (*NeighbourFn)(Tree *t, Val *from, Val *to, bool to_is_producer, void *acc);

static bool for_neighbours(Tree *t, Val *tv, NeighbourFn fn, void *acc) {
  Expr *d = tv->def;
  if (d && ir_op_kind(d->op) != OPK_TRANSFORM)
    for (int i = 0; i < d->nin; i++)
      if (d->in[i]->kind == VAL_TV && d->in[i] != tv && !fn(t, tv, d->in[i], true, acc)) return false;
  for (int u = 0; u < tv->uses.len; u++) {
    Expr *e = tv->uses.items[u];
    if (ir_op_kind(e->op) == OPK_TRANSFORM) continue;
    for (int o = 0; o < e->nout; o++)
      if (e->out[o]->kind == VAL_TV && e->out[o] != tv && !fn(t, tv, e->out[o], false, acc)) return false;
  }
  return true;
}

/* A candidate edge from a reached tensor to an unreached one, with the information it
 * would carry. seq numbers candidates in the order they are found, which is the order
 * (earlier-reached tensor, producers before consumers) ties go by. */
typedef struct Cand {
  Val *from, *to;
  Info info;
  int ncomplete, nmapped;
  long seq;
} Cand;

/* A max-heap of candidates: the best edge on top. Each edge is weighed once, when its
 * tensor is reached, so the tree costs O(edges log edges) time and O(edges) memory
 * (rescanning every reached tensor each step was quadratic in both). */
typedef struct Heap {
  Cand *items;
  int len, cap;
  long seq;
} Heap;

static bool better(const Cand *a, const Cand *b) {
  if (a->ncomplete != b->ncomplete) return a->ncomplete > b->ncomplete;
  if (a->nmapped != b->nmapped) return a->nmapped > b->nmapped;
  return a->seq < b->seq;
}

static bool heap_push(Heap *h, Cand c) {
  if (h->len == h->cap) {
    int cap = h->cap ? h->cap * 2 : 64;
    Cand *items = realloc(h->items, sizeof *items * (size_t)cap);
    if (!items) return false;
    h->items = items;
    h->cap = cap;
  }
  int i = h->len++;
  for (; i > 0 && better(&c, &h->items[(i - 1) / 2]); i = (i - 1) / 2) h->items[i] = h->items[(i - 1) / 2];
  h->items[i] = c;
  return true;
}

static Cand heap_pop(Heap *h) {
  Cand top = h->items[0], last = h->items[--h->len];
  int i = 0;
  for (;;) {
    int c = 2 * i + 1;
    if (c >= h->len) break;
    if (c + 1 < h->len && better(&h->items[c + 1], &h->items[c])) c++;
    if (!better(&h->items[c], &last)) break;
    h->items[i] = h->items[c];
    i = c;
  }
  if (h->len) h->items[i] = last;
  return top;
}

static bool offer(Tree *t, Val *from, Val *to, bool to_is_producer, void *acc) {
  Heap *h = acc;
  if (an_tab_get(&t->info, to)) return true;
  if (t->sel && !t->sel(t->ctx, from, to, to_is_producer)) return true;
  Cand c = {.from = from, .to = to, .seq = h->seq++};
  if (!carry(t, from, to, an_tab_get(&t->info, from), &c.info)) return false;
  weigh(t, &c.info, &c.ncomplete, &c.nmapped);
  return heap_push(h, c);
}

/* The reference's logical axes that its first ref_pos loop axes derive from. */
static bool reference_info(Tree *t, Val *ref, int ref_pos, Info *out) {
  TensorView *r = TV(ref);
  int nh;
  Expr **hist = sched_history_to(t->a, ref, r->loop, ref_pos, &nh);
  ValTab used = {.arena = t->a};
  if (nh < 0) return false;
  for (int i = 0; i < ref_pos; i++)
    if (!an_tab_put(&used, r->loop[i], ref)) return false;
  for (int k = nh - 1; k >= 0; k--) {
    Expr *e = hist[k];
    bool any = false;
    for (int o = 0; o < e->nout; o++) any = any || an_tab_get(&used, e->out[o]);
    for (int i = 0; any && i < e->nin; i++)
      if (!an_tab_put(&used, e->in[i], ref)) return false;
  }
  t->nref = r->nlogical;
  out->ids = ARENA_ARRAY(t->a, Val *, t->nref);
  out->complete = ARENA_ARRAY(t->a, bool, t->nref);
  if (!out->ids || !out->complete) return false;
  for (int k = 0; k < t->nref; k++) {
    if (!an_tab_get(&used, r->logical[k])) continue;
    out->ids[k] = r->logical[k];
    out->complete[k] = true;
  }
  return true;
}

static bool reach(Tree *t, Val *tv, Val *from, Info *in) {
  Info *keep = ARENA_NEW(t->a, Info);
  if (!keep) return false;
  *keep = *in;
  ptrvec_push(t->a, &t->tvs, tv);
  ptrvec_push(t->a, &t->from, from);
  return an_tab_put(&t->info, tv, keep);
}

/* Info for another root of ref's rank: its own logical axes, position by position, for the
 * reference axes tracked. */
static bool root_info(Tree *t, const Info *ref_info, Val *root, Info *out) {
  out->ids = ARENA_ARRAY(t->a, Val *, t->nref);
  out->complete = ARENA_ARRAY(t->a, bool, t->nref);
  if (!out->ids || !out->complete) return false;
  for (int k = 0; k < t->nref && k < TV(root)->nlogical; k++)
    if (ref_info->ids[k]) out->ids[k] = TV(root)->logical[k], out->complete[k] = true;
  return true;
}

static bool grow_tree(Tree *t, Val *ref, Info *root, int nroots, Val *const *roots) {
  Heap h = {0};
  bool ok = reach(t, ref, NULL, root) && for_neighbours(t, ref, offer, &h);
  for (int r = 0; ok && r < nroots; r++) {
    Info in = {0};
    if (an_tab_get(&t->info, roots[r])) continue;
    ok = root_info(t, root, roots[r], &in) && reach(t, roots[r], NULL, &in) && for_neighbours(t, roots[r], offer, &h);
  }
  while (ok && h.len) {
    Cand c = heap_pop(&h);
    if (an_tab_get(&t->info, c.to)) continue;
    ok = reach(t, c.to, c.from, &c.info) && for_neighbours(t, c.to, offer, &h);
  }
  free(h.items);
  return ok;
}

/* Whether every reference axis tracked (in the reference's info) reached a tensor with
 * information `in` with its full extent (or as a broadcast axis of the tensor itself). */
static bool whole(const Tree *t, const Info *ref_info, const Info *in) {
  for (int k = 0; k < t->nref; k++) {
    if (!ref_info->ids[k]) continue;
    if (!in->ids[k]) return false;
    if (!in->complete[k] && ID(in->ids[k])->iter_type != CF_ITER_BROADCAST) return false;
  }
  return true;
}

bool sched_span_forest(Arena *scratch, Val *ref, int ref_pos, int nroots, Val *const *roots, SpanSelect sel,
                       void *ctx, SpanTree *out) {
  Tree t = {.a = scratch, .sel = sel, .ctx = ctx};
  t.info.arena = scratch;
  Info root = {0};
  if (!reference_info(&t, ref, ref_pos, &root) || !grow_tree(&t, ref, &root, nroots, roots)) return false;
  out->n = t.tvs.len;
  out->tvs = (Val **)t.tvs.items;
  out->from = (Val **)t.from.items;
  out->whole = ARENA_ARRAY(scratch, bool, out->n + 1);
  if (!out->whole) return false;
  for (int i = 0; i < out->n; i++) out->whole[i] = whole(&t, &root, an_tab_get(&t.info, out->tvs[i]));
  return true;
}

bool sched_span_tree(Arena *scratch, Val *ref, int ref_pos, SpanSelect sel, void *ctx, SpanTree *out) {
  return sched_span_forest(scratch, ref, ref_pos, 0, NULL, sel, ctx, out);
}
