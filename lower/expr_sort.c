/* lower/expr_sort.c: orders the fusion's tensor expressions so that every shared loop is
 * opened once and holds exactly the expressions the loop model puts in it.
 *
 * Requires: the loop model (c->model.loops). Establishes: c->exprs, producers before consumers,
 * and the expressions whose output has an axis in one loop group contiguous, level by
 * level (the loop-nest pass then reuses open loops and never reopens a closed one).
 * Key decision: the shared loops form a forest: an expression's shared depth is the number
 * of its leading loop axes whose group holds another tensor's axis, and its path is the
 * list of those groups. Each level orders its items, the groups one level down and the
 * expressions that open no further shared loop, topologically by the data dependencies
 * between them (ties keep the fusion's order). A group reached from two different
 * enclosing loops, or items that depend on each other both ways, cannot be one loop nest:
 * both are refused with the tensors named. */
#include <string.h>

#include "lower/lower.h"

typedef struct Sort {
  LowerCtx *c;
  int *members;     /* by loop group: tensors with an axis in it */
  int *level;       /* by Expr id: the stamp of the level it is being ordered in */
  int *item;        /* by Expr id: its item index in that level */
  char *group_seen; /* by loop group: already placed at some level */
  int stamp;
  PtrVec out;
} Sort;

static bool is_tensor_expr(const Expr *e) { return e && ir_op_kind(e->op) != OPK_TRANSFORM && e->out[0]->kind == VAL_TV; }

static int group_of(const Sort *s, Val *tv, int j) { return an_loop_group(s->c->model.loops, TV(tv)->loop[j]); }

/* How many leading loops of e's output it shares with another tensor. */
static int shared_depth(const Sort *s, const Expr *e) {
  Val *tv = e->out[0];
  int d = 0;
  while (d < TV(tv)->nloop && s->members[group_of(s, tv, d)] > 1) d++;
  return d;
}

static void count_members(Sort *s) {
  LowerCtx *c = s->c;
  int n = c->f->vals.len;
  s->members = ARENA_ARRAY(c->a, int, n + 1);
  int *last = ARENA_ARRAY(c->a, int, n + 1); /* by group: 1 + index of the last tensor counted */
  for (int t = 0; t < c->ntvs; t++) {
    Val *tv = c->tvs[t];
    if (ir_tv_is_input(c->f, tv)) continue;
    for (int j = 0; j < TV(tv)->nloop; j++) {
      int g = group_of(s, tv, j);
      if (last[g] == t + 1) continue;
      last[g] = t + 1;
      s->members[g]++;
    }
  }
}

typedef struct Level {
  Expr **xs;
  int n;
  int depth;
  int nitems;
  int *key;    /* per item: loop group, or -1 for a single expression */
  Expr **first; /* per item: its first expression */
  int *indeg;
  int **succ;
  int *nsucc;
} Level;

static void make_items(Sort *s, Level *L) {
  LowerCtx *c = s->c;
  L->key = ARENA_ARRAY(c->a, int, L->n);
  L->first = ARENA_ARRAY(c->a, Expr *, L->n);
  for (int i = 0; i < L->n; i++) {
    Expr *x = L->xs[i];
    int g = shared_depth(s, x) > L->depth ? group_of(s, x->out[0], L->depth) : -1;
    int it = -1;
    for (int k = 0; g >= 0 && k < L->nitems && it < 0; k++)
      if (L->key[k] == g) it = k;
    if (it < 0) {
      if (g >= 0 && s->group_seen[g])
        lower_fail(c, CF_ERR_INVALID_SCHEDULE,
                   "compile: %s's axis %d shares a loop with tensors that sit in a different enclosing loop; the "
                   "loops cannot form one nest", TV(x->out[0])->display_name, L->depth);
      if (g >= 0) s->group_seen[g] = 1;
      it = L->nitems++;
      L->key[it] = g;
      L->first[it] = x;
    }
    s->level[x->id] = s->stamp;
    s->item[x->id] = it;
  }
}

/* Edges item(producer) -> item(consumer) between different items of the level. */
static void make_edges(Sort *s, Level *L) {
  LowerCtx *c = s->c;
  L->indeg = ARENA_ARRAY(c->a, int, L->nitems);
  L->nsucc = ARENA_ARRAY(c->a, int, L->nitems);
  L->succ = ARENA_ARRAY(c->a, int *, L->nitems);
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; i < L->n; i++) {
      Expr *x = L->xs[i];
      for (int k = 0; k < x->nin; k++) {
        Expr *y = x->in[k]->kind == VAL_TV ? x->in[k]->def : NULL;
        if (!is_tensor_expr(y) || s->level[y->id] != s->stamp || s->item[y->id] == s->item[x->id]) continue;
        int from = s->item[y->id], to = s->item[x->id];
        if (pass == 0) {
          L->nsucc[from]++;
        } else {
          L->succ[from][L->nsucc[from]++] = to;
          L->indeg[to]++;
        }
      }
    }
    for (int it = 0; pass == 0 && it < L->nitems; it++) {
      L->succ[it] = ARENA_ARRAY(c->a, int, L->nsucc[it] + 1);
      L->nsucc[it] = 0;
    }
  }
}

/* A min-heap of ready items: ties keep the fusion's order (the smallest item first) in
 * O(log n) per item, where a scan for the first ready item made long chains quadratic. */
typedef struct Heap {
  int *v;
  int n;
} Heap;

static void heap_push(Heap *h, int x) {
  int i = h->n++;
  for (; i > 0 && h->v[(i - 1) / 2] > x; i = (i - 1) / 2) h->v[i] = h->v[(i - 1) / 2];
  h->v[i] = x;
}

static int heap_pop(Heap *h) {
  int top = h->v[0], x = h->v[--h->n], i = 0;
  for (;;) {
    int c = 2 * i + 1;
    if (c >= h->n) break;
    if (c + 1 < h->n && h->v[c + 1] < h->v[c]) c++;
    if (h->v[c] >= x) break;
    h->v[i] = h->v[c];
    i = c;
  }
  if (h->n) h->v[i] = x;
  return top;
}

/* The items of a level in dependency order, ties by index; fails when they depend on each
 * other both ways. */
static int *topological(Sort *s, Level *L) {
  int *order = ARENA_ARRAY(s->c->a, int, L->nitems + 1);
  Heap h = {ARENA_ARRAY(s->c->a, int, L->nitems + 1), 0};
  for (int it = 0; it < L->nitems; it++)
    if (L->indeg[it] == 0) heap_push(&h, it);
  for (int k = 0; k < L->nitems; k++) {
    if (!h.n)
      lower_fail(s->c, CF_ERR_INVALID_SCHEDULE,
                 "compile: the loops shared at depth %d depend on each other both ways (around %s); they cannot "
                 "form one loop nest", L->depth, TV(L->first[0]->out[0])->display_name);
    int it = order[k] = heap_pop(&h);
    for (int e = 0; e < L->nsucc[it]; e++)
      if (--L->indeg[L->succ[it][e]] == 0) heap_push(&h, L->succ[it][e]);
  }
  return order;
}

static void order_level(Sort *s, Expr **xs, int n, int depth) {
  Level L = {.xs = xs, .n = n, .depth = depth};
  s->stamp++;
  make_items(s, &L);
  make_edges(s, &L);
  int *order = topological(s, &L);
  /* Each item's expressions, in the fusion's order, bucketed before the levels below
   * overwrite the item stamps: linear, where a scan of the level per item was not. */
  Arena *a = s->c->a;
  int *start = ARENA_ARRAY(a, int, L.nitems + 1), *fill = ARENA_ARRAY(a, int, L.nitems + 1);
  Expr **by_item = ARENA_ARRAY(a, Expr *, n + 1);
  for (int i = 0; i < n; i++) start[s->item[xs[i]->id] + 1]++;
  for (int it = 0; it < L.nitems; it++) {
    start[it + 1] += start[it];
    fill[it] = start[it];
  }
  for (int i = 0; i < n; i++) by_item[fill[s->item[xs[i]->id]]++] = xs[i];
  for (int k = 0; k < L.nitems; k++) {
    int it = order[k];
    if (L.key[it] < 0) ptrvec_push(a, &s->out, L.first[it]);
    else order_level(s, by_item + start[it], start[it + 1] - start[it], depth + 1);
  }
}

void lower_sort_exprs(LowerCtx *c) {
  cf_fusion *f = c->f;
  if (f->outputs.len == 0) lower_fail(c, CF_ERR_INVALID_ARGUMENT, "compile: the fusion has no outputs");
  int n = f->vals.len, nx;
  Sort s = {.c = c};
  s.level = ARENA_ARRAY(c->a, int, f->exprs.len + 1);
  s.item = ARENA_ARRAY(c->a, int, f->exprs.len + 1);
  s.group_seen = arena_alloc(c->a, (size_t)n + 1);
  count_members(&s);
  Expr **xs = ir_fusion_tensor_exprs_in(c->a, f, &nx);
  order_level(&s, xs, nx, 0);
  c->exprs = (Expr **)s.out.items;
  c->nexprs = s.out.len;
}
