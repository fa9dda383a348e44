/* analysis/loop_graph.c: the loop graph, which IterDomains share one for-loop.
 *
 * A producer inlined at compute-at position k shares its first k loops with each of its
 * consumers, position by position (inline.c's contract): producer loop axis j and the
 * consumer's loop axis j are one loop for j < k. The loop graph is the union-find closure
 * of those pairs over the whole fusion, plus the outputs of one expression among
 * themselves (siblings are computed together). Two tensors whose axes land in one group
 * run in the very same for-loop, whatever else sits between them in the graph: a producer
 * inlined into two consumers puts both consumers in its loops.
 *
 * Both the scheduler (inlining legality) and lowering (loop nests, promotion, indexing,
 * parallel types) read it, so the rule that decides loop sharing is written once, here.
 * Fusion inputs are computed before the kernel: their positions never share a loop, and
 * dead ops (nothing the outputs need) are never computed: they share none either.
 *
 * The one legality rule the graph decides on its own (an_loop_conflict): a loop that
 * is a reduction axis of some tensor s cannot also run a tensor that reads s's result,
 * since s is complete only after that loop ends (nvFuser's "unmappable" axes: the
 * normalization pattern, a value read inside a reduction and again after it). */
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"

struct LoopGraph {
  cf_fusion *f;
  int n;       /* Vals at build time */
  int *parent; /* by Val id */
};

static int find(const LoopGraph *g, int x) {
  while (g->parent[x] != x) x = g->parent[x];
  return x;
}

static void join(LoopGraph *g, const Val *a, const Val *b) {
  if (a->id >= g->n || b->id >= g->n) return;
  int x = find(g, a->id), y = find(g, b->id);
  if (x == y) return;
  if (x < y) g->parent[y] = x;
  else g->parent[x] = y;
}

static bool is_tensor_expr(const Expr *e) {
  return e && ir_op_kind(e->op) != OPK_TRANSFORM && e->nout > 0 && e->out[0]->kind == VAL_TV;
}

/* Joins the pairs of one tensor expression: inlined producers with the output, and the
 * outputs with each other. */
static void join_expr(LoopGraph *g, const Expr *e) {
  Val *c = e->out[0];
  for (int o = 1; o < e->nout; o++)
    for (int j = 0; j < TV(c)->nloop && j < TV(e->out[o])->nloop; j++) join(g, TV(c)->loop[j], TV(e->out[o])->loop[j]);
  for (int i = 0; i < e->nin; i++) {
    Val *p = e->in[i];
    if (p->kind != VAL_TV || ir_tv_is_input(g->f, p)) continue;
    for (int j = 0; j < TV(p)->ca_pos && j < TV(p)->nloop && j < TV(c)->nloop; j++) join(g, TV(p)->loop[j], TV(c)->loop[j]);
  }
}

LoopGraph *an_loop_graph_build(cf_fusion *f) {
  LoopGraph *g = calloc(1, sizeof *g);
  if (g) g->parent = malloc(sizeof(int) * (size_t)(f->vals.len + 1));
  if (!g || !g->parent) {
    free(g);
    ir_error(f, CF_ERR_OUT_OF_MEMORY, "scheduler: out of memory building the loop graph");
    return NULL;
  }
  g->f = f;
  g->n = f->vals.len;
  for (int i = 0; i < g->n; i++) g->parent[i] = i;
  /* Dead ops (no output depends on them) run in no loop: they join nothing. */
  char *live = an_live_exprs(f);
  if (!live) {
    an_loop_graph_free(g);
    ir_error(f, CF_ERR_OUT_OF_MEMORY, "scheduler: out of memory building the loop graph");
    return NULL;
  }
  for (int i = 0; i < f->exprs.len; i++)
    if (is_tensor_expr(f->exprs.items[i]) && live[i]) join_expr(g, f->exprs.items[i]);
  free(live);
  for (int i = 0; i < g->n; i++) g->parent[i] = find(g, i);
  return g;
}

int an_loop_group(const LoopGraph *g, const Val *id) { return id->id < g->n ? find(g, id->id) : id->id; }

void an_loop_graph_join(LoopGraph *g, const Val *a, const Val *b) { join(g, a, b); }

bool an_same_loop(const LoopGraph *g, const Val *a, const Val *b) {
  return a == b || an_loop_group(g, a) == an_loop_group(g, b);
}

void an_loop_graph_free(LoopGraph *g) {
  if (!g) return;
  free(g->parent);
  free(g);
}

/* ---- reductions and their readers --------------------------------------------------- */

/* Whether t is s or is computed from s: a walk up the definitions with an explicit stack
 * (stack: room for every Val; mark, by Val id, remembers visited tensors). */
static bool depends_on(const Val *t, const Val *s, char *mark, const Val **stack) {
  int n = 0;
  stack[n++] = t;
  mark[t->id] = 1;
  while (n) {
    const Val *v = stack[--n];
    if (v == s) return true;
    const Expr *d = v->def;
    if (!is_tensor_expr(d)) continue;
    for (int i = 0; i < d->nin; i++)
      if (d->in[i]->kind == VAL_TV && !mark[d->in[i]->id]) {
        mark[d->in[i]->id] = 1;
        stack[n++] = d->in[i];
      }
  }
  return false;
}

/* Whether loop axis `id` is in one of the groups. */
static bool in_groups(const LoopGraph *g, const Val *id, const int *groups, int ngroups) {
  int k = an_loop_group(g, id);
  for (int i = 0; i < ngroups; i++)
    if (groups[i] == k) return true;
  return false;
}

/* The loop groups (taken as one) hold a reduction axis of s and a loop axis of a
 * tensor computed from s: writes s into *s_out and that tensor into *reader. The members
 * are gathered first, so a group without a reduction axis costs one pass over the axes. */
static bool groups_conflict(const LoopGraph *g, Val **tvs, int ntvs, const int *groups, int ngroups, Val **s_out,
                            Val **reader) {
  cf_fusion *f = g->f;
  Val **members = malloc(sizeof(Val *) * (size_t)(ntvs + 1));
  bool *reduces = malloc(sizeof(bool) * (size_t)(ntvs + 1));
  char *mark = calloc((size_t)f->vals.len + 1, 1);
  const Val **stack = malloc(sizeof(Val *) * (size_t)(f->vals.len + 1));
  int n = 0;
  bool any_reduction = false, found = false;
  for (int a = 0; members && reduces && a < ntvs; a++) {
    bool in = false, red = false;
    for (int j = 0; j < TV(tvs[a])->nloop; j++)
      if (in_groups(g, TV(tvs[a])->loop[j], groups, ngroups)) {
        in = true;
        red |= ID(TV(tvs[a])->loop[j])->iter_type == CF_ITER_REDUCTION;
      }
    if (!in) continue;
    members[n] = tvs[a];
    reduces[n++] = red;
    any_reduction |= red;
  }
  for (int a = 0; mark && stack && any_reduction && a < n && !found; a++) {
    if (!reduces[a]) continue;
    for (int b = 0; b < n && !found; b++) {
      if (b == a) continue;
      memset(mark, 0, (size_t)f->vals.len + 1);
      if (depends_on(members[b], members[a], mark, stack)) {
        *s_out = members[a];
        *reader = members[b];
        found = true;
      }
    }
  }
  free(members);
  free(reduces);
  free(mark);
  free(stack);
  return found;
}

bool an_loop_conflict(const LoopGraph *g, Val **tvs, int ntvs, Val *const *ids, int nids, Val **s, Val **reader) {
  int *groups = malloc(sizeof(int) * (size_t)(nids + 1));
  if (!groups) return false;
  for (int i = 0; i < nids; i++) groups[i] = an_loop_group(g, ids[i]);
  bool r = groups_conflict(g, tvs, ntvs, groups, nids, s, reader);
  free(groups);
  return r;
}

/* ---- tensors that would have to run inside a loop they are not in ----------------- */

/* Marks in `reach` (by Val id) every tensor from which a member is reachable going down
 * the uses (up = true: tensors a member is computed from are marked by walking the other
 * way). Members themselves are the seeds. An explicit stack: chains may be long. */
static void mark_reaching(Val **tvs, int ntvs, const char *member, char *reach, Val **stack, bool up) {
  int n = 0;
  for (int a = 0; a < ntvs; a++)
    if (member[tvs[a]->id]) stack[n++] = tvs[a];
  while (n) {
    Val *v = stack[--n];
    if (up) {
      /* v is a member or reaches one: its producers reach it */
      const Expr *d = v->def;
      for (int i = 0; is_tensor_expr(d) && i < d->nin; i++) {
        Val *p = d->in[i];
        if (p->kind != VAL_TV || reach[p->id]) continue;
        reach[p->id] = 1;
        stack[n++] = p;
      }
    } else {
      for (int u = 0; u < v->uses.len; u++) {
        const Expr *e = v->uses.items[u];
        if (!is_tensor_expr(e)) continue;
        for (int o = 0; o < e->nout; o++) {
          Val *c = e->out[o];
          if (c->kind != VAL_TV || reach[c->id]) continue;
          reach[c->id] = 1;
          stack[n++] = c;
        }
      }
    }
  }
}

Val *an_loop_between(const LoopGraph *g, Val **tvs, int ntvs, Val *const *ids, int nids) {
  cf_fusion *f = g->f;
  size_t n = (size_t)f->vals.len + 1;
  char *member = calloc(n, 1), *up = calloc(n, 1), *down = calloc(n, 1);
  int *groups = malloc(sizeof(int) * (size_t)(nids + 1));
  Val **stack = malloc(sizeof(Val *) * n);
  Val *found = NULL;
  if (member && up && down && groups && stack) {
    for (int i = 0; i < nids; i++) groups[i] = an_loop_group(g, ids[i]);
    for (int a = 0; a < ntvs; a++)
      for (int j = 0; j < TV(tvs[a])->nloop; j++)
        if (in_groups(g, TV(tvs[a])->loop[j], groups, nids)) member[tvs[a]->id] = 1;
    mark_reaching(tvs, ntvs, member, up, stack, true);    /* computed before a member */
    mark_reaching(tvs, ntvs, member, down, stack, false); /* computed after a member */
    for (int a = 0; a < ntvs && !found; a++) {
      Val *t = tvs[a];
      if (!member[t->id] && !ir_tv_is_input(f, t) && up[t->id] && down[t->id]) found = t;
    }
  }
  free(member);
  free(up);
  free(down);
  free(groups);
  free(stack);
  return found;
}
