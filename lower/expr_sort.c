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

static void order_level(Sort *s, Expr **xs, int n, int depth);

/* Emits item `it`: one expression, or the level below for a group. */
static void emit_item(Sort *s, Level *L, int it) {
  if (L->key[it] < 0) {
    ptrvec_push(s->c->a, &s->out, L->first[it]);
    return;
  }
  Expr **sub = ARENA_ARRAY(s->c->a, Expr *, L->n);
  int m = 0;
  for (int i = 0; i < L->n; i++)
    if (s->item[L->xs[i]->id] == it) sub[m++] = L->xs[i];
  order_level(s, sub, m, L->depth + 1);
}

static void order_level(Sort *s, Expr **xs, int n, int depth) {
  Level L = {.xs = xs, .n = n, .depth = depth};
  s->stamp++;
  make_items(s, &L);
  make_edges(s, &L);
  char *done = arena_alloc(s->c->a, (size_t)L.nitems + 1);
  int *order = ARENA_ARRAY(s->c->a, int, L.nitems + 1);
  for (int k = 0; k < L.nitems; k++) {
    int it = 0;
    while (it < L.nitems && (done[it] || L.indeg[it] > 0)) it++;
    if (it == L.nitems)
      lower_fail(s->c, CF_ERR_INVALID_SCHEDULE,
                 "compile: the loops shared at depth %d depend on each other both ways (around %s); they cannot "
                 "form one loop nest", depth, TV(L.first[0]->out[0])->display_name);
    done[it] = 1;
    order[k] = it;
    for (int e = 0; e < L.nsucc[it]; e++) L.indeg[L.succ[it][e]]--;
  }
  /* The item stamps are overwritten by the levels below: emit from a saved order. */
  int *saved_item = ARENA_ARRAY(s->c->a, int, n + 1);
  for (int i = 0; i < n; i++) saved_item[i] = s->item[xs[i]->id];
  for (int k = 0; k < L.nitems; k++) {
    for (int i = 0; i < n; i++) s->item[xs[i]->id] = saved_item[i];
    emit_item(s, &L, order[k]);
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
