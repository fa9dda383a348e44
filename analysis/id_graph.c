/* analysis/id_graph.c: which IterDomains of a fusion stand for the same axis.
 *
 * Two layers. The pairwise map relates, through one tensor Expr, a producer's logical
 * axes to the consumer's root axes: that is all an op says about axes. IdMap closes it
 * over the whole fusion: a union-find whose classes are first the pairwise-mapped axes,
 * then grown forward through the transform graph (equal splits of equal axes give equal
 * axes, and so on) until nothing changes. Inlining, propagation checks and
 * parallelize_all_like ask it whether two loop axes are the same loop; lowering reuses it
 * for loop groups and the parallel-dimension map.
 *
 * Key decision: classes are computed over every IterDomain in the fusion, dead ones
 * (replaced by later transforms) included. Dead axes only join classes of structurally
 * identical axes, so they never relate two live axes that would not be related anyway,
 * and not having to decide what is live keeps the map a pure function of the IR.
 *
 * Two rules keep the classes sound (issue 28). Only live ops join axes (an op some fusion
 * output depends on, an_live_exprs): a dead op never computes, so what it says about
 * axes is not a loop anyone runs. And a join through an op never puts two logical (or
 * root) axes of one tensor in one class (nvFuser's "self mapping"): in `x^T + x` the add
 * pairs x's axis 0 with the sum's axis 0, which the transpose pairs with x's axis 1, and
 * equal extents let both stand; closing that cycle would make x's two axes one loop
 * (cf_inline_most computed a^T + a in one loop, transposed). The join that would close
 * it is left out and recorded (an_idmap_self_mapping): no class relation can be right for
 * a tensor read in two orders in one kernel (its axis 0 is the sum's axis 0 and 1 at
 * once), so lowering refuses such a kernel, as nvFuser does, and define and run cuts the
 * fusion until no segment reads a tensor in two orders. */
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"

/* ---- ValTab ---------------------------------------------------------------------------- */

bool an_tab_put(ValTab *t, const Val *k, void *value) {
  if (k->id >= t->cap) {
    int cap = t->cap ? t->cap : 64;
    while (cap <= k->id) cap *= 2;
    void **v = ARENA_ARRAY(t->arena, void *, cap);
    if (!v) return false;
    if (t->cap) memcpy(v, t->v, sizeof(void *) * (size_t)t->cap);
    t->v = v;
    t->cap = cap;
  }
  t->v[k->id] = value;
  return true;
}

void *an_tab_get(const ValTab *t, const Val *k) { return k && k->id < t->cap ? t->v[k->id] : NULL; }

/* ---- the pairwise map ------------------------------------------------------------------ */

static bool is_tensor_expr(const Expr *e) {
  return e && ir_op_kind(e->op) != OPK_TRANSFORM && e->nout > 0 && e->out[0]->kind == VAL_TV;
}

bool an_is_producer_of(const Val *p, const Val *c) {
  const Expr *e = c->def;
  if (!is_tensor_expr(e)) return false;
  for (int i = 0; i < e->nin; i++)
    if (e->in[i] == p) return true;
  return false;
}

/* Which operand of e p is (the first, when it is several: the op builders give an operand
 * read elsewhere no second role). */
static int operand_of(const Expr *e, const Val *p) {
  for (int i = 0; i < e->nin; i++)
    if (e->in[i] == p) return i;
  return -1;
}

int an_pairwise_map(const Val *p, const Val *c, Val **p_ids, Val **c_ids, int cap) {
  if (!an_is_producer_of(p, c)) return -1;
  const Expr *e = c->def;
  const TensorView *pt = &p->u.tv, *ct = &c->u.tv;
  /* Broadcast flags are per output logical axis; for a broadcast, root == logical. */
  const bool *is_bcast = NULL;
  if (ir_op_kind(e->op) == OPK_BROADCAST && e->attr.broadcast.rank == ct->nroot) is_bcast = e->attr.broadcast.is_broadcast;
  /* Squeezed producer axes (per producer axis the op sees) have no partner either. */
  const bool *squeezed = e->op == OP_SQUEEZE ? e->attr.squeeze.is_squeezed : NULL;
  /* A reshape relates no axes: its output is a view of other sizes. */
  if (e->op == OP_RESHAPE) return 0;
  int n = 0, j = 0, seen = 0;
  for (int i = 0; i < pt->nlogical; i++) {
    Val *pid = pt->logical[i];
    /* Reduction axes of a producer are consumed by its own definition: no partner. */
    if (pid->u.id.iter_type == CF_ITER_REDUCTION) continue;
    if (squeezed && squeezed[seen++]) continue;
    while (j < ct->nroot && is_bcast && is_bcast[j]) j++;
    if (j >= ct->nroot) break;
    /* A resized axis (slice, pad, cat) or an indexed op's axis of an operand it reads along
     * that axis (gather's lookup, cumsum's input) reads its operand at other positions: no
     * partner. */
    if (ir_unpaired_axis(e, operand_of(e, p), j)) {
      j++;
      continue;
    }
    if (n < cap) {
      if (p_ids) p_ids[n] = pid;
      if (c_ids) c_ids[n] = ct->root[j];
    }
    n++;
    j++;
  }
  return n;
}

Val *an_pairwise_partner(const Val *from, const Val *to, const Val *id) {
  bool to_is_consumer = an_is_producer_of(from, to);
  const Val *p = to_is_consumer ? from : to, *c = to_is_consumer ? to : from;
  int n = an_pairwise_map(p, c, NULL, NULL, 0);
  if (n <= 0) return NULL;
  Val **pi = malloc(sizeof(Val *) * (size_t)n), **ci = malloc(sizeof(Val *) * (size_t)n);
  Val *r = NULL;
  if (pi && ci) {
    an_pairwise_map(p, c, pi, ci, n);
    for (int i = 0; i < n && !r; i++) {
      if (to_is_consumer && pi[i] == id) r = ci[i];
      if (!to_is_consumer && ci[i] == id) r = pi[i];
    }
  }
  free(pi);
  free(ci);
  return r;
}

/* ---- IdMap ----------------------------------------------------------------------------- */

struct IdMap {
  cf_fusion *f;
  bool permissive;
  int n;       /* number of Vals at build time; parent is indexed by Val id */
  int *parent;
  int *next;   /* while joining ops: the members of each class as a circular list */
  int *size;   /* while joining ops: class sizes, by representative */
  /* The first join left out: op would have put axes a and b of tensor tv in one class. */
  const Expr *self_op;
  const Val *self_tv, *self_a, *self_b;
};

static int uf_find(IdMap *m, int x) {
  while (m->parent[x] != x) {
    m->parent[x] = m->parent[m->parent[x]];
    x = m->parent[x];
  }
  return x;
}

/* Joins the classes of a and b; true when they were different. The smaller id becomes
 * the representative so that classes are numbered deterministically. */
static bool uf_union(IdMap *m, int a, int b) {
  a = uf_find(m, a);
  b = uf_find(m, b);
  if (a == b) return false;
  if (a < b)
    m->parent[b] = a;
  else
    m->parent[a] = b;
  return true;
}

static bool is_bcast(const Val *id) { return id->u.id.iter_type == CF_ITER_BROADCAST; }

char *an_live_exprs(cf_fusion *f) {
  char *live = calloc((size_t)f->exprs.len + 1, 1);
  Arena *a = arena_create();
  int n = 0;
  Expr **xs = live && a ? ir_fusion_tensor_exprs_in(a, f, &n) : NULL;
  for (int i = 0; xs && i < n; i++) live[xs[i]->id] = 1;
  arena_destroy(a);
  if (!xs) {
    free(live);
    return NULL;
  }
  return live;
}

/* Whether id is a logical or root axis of the tensor it belongs to. */
static bool is_tensor_axis(const Val *id, const TensorView *t) {
  for (int i = 0; i < t->nlogical; i++)
    if (t->logical[i] == id) return true;
  for (int i = 0; i < t->nroot; i++)
    if (t->root[i] == id) return true;
  return false;
}

/* Whether joining the classes of representatives a and b would put two logical or root
 * axes of one tensor in one class: walks the smaller class's members and asks, for each
 * tensor axis among them, whether another axis of its tensor is in the other class. */
static bool self_maps(IdMap *m, int a, int b, const Expr *op) {
  if (m->size[a] > m->size[b]) {
    int t = a;
    a = b;
    b = t;
  }
  int x = a;
  do {
    Val *id = m->f->vals.items[x];
    const Val *tv = id->kind == VAL_ID ? ID(id)->tv : NULL;
    if (tv && is_tensor_axis(id, TV((Val *)tv))) {
      const TensorView *t = TV((Val *)tv);
      for (int k = 0; k < t->nlogical + t->nroot; k++) {
        const Val *o = k < t->nlogical ? t->logical[k] : t->root[k - t->nlogical];
        if (o == id || o->id >= m->n || uf_find(m, o->id) != b) continue;
        if (!m->self_op) m->self_op = op, m->self_tv = tv, m->self_a = id, m->self_b = o;
        return true;
      }
    }
    x = m->next[x];
  } while (x != a);
  return false;
}

/* Joins two axes paired by an op unless that would map a tensor onto itself. */
static void join_op_pair(IdMap *m, const Val *p, const Val *c, const Expr *op) {
  int a = uf_find(m, p->id), b = uf_find(m, c->id);
  if (a == b || self_maps(m, a, b, op)) return;
  int na = m->next[a];
  m->next[a] = m->next[b];
  m->next[b] = na;
  uf_union(m, a, b);
  m->size[uf_find(m, a)] = m->size[a] + m->size[b];
}

static bool join_pairwise(IdMap *m) {
  cf_fusion *f = m->f;
  char *live = an_live_exprs(f);
  m->next = malloc(sizeof(int) * (size_t)(m->n + 1));
  m->size = malloc(sizeof(int) * (size_t)(m->n + 1));
  bool ok = live && m->next && m->size;
  for (int i = 0; ok && i < m->n; i++) m->next[i] = i, m->size[i] = 1;
  for (int i = 0; ok && i < f->exprs.len; i++) {
    Expr *e = f->exprs.items[i];
    if (!is_tensor_expr(e) || !live[e->id]) continue;
    Val *c = e->out[0];
    for (int k = 0; k < e->nin; k++) {
      Val *p = e->in[k];
      if (p->kind != VAL_TV) continue;
      int n = an_pairwise_map(p, c, NULL, NULL, 0);
      if (n <= 0) continue;
      Val **pa = malloc(sizeof(Val *) * (size_t)n), **ca = malloc(sizeof(Val *) * (size_t)n);
      ok = pa && ca;
      if (ok) an_pairwise_map(p, c, pa, ca, n);
      for (int j = 0; ok && j < n; j++)
        if (m->permissive || is_bcast(pa[j]) == is_bcast(ca[j])) join_op_pair(m, pa[j], ca[j], e);
      free(pa);
      free(ca);
    }
  }
  free(live);
  free(m->next);
  free(m->size);
  m->next = m->size = NULL;
  return ok;
}

/* The identity of a transform for forward propagation: op, classes of its inputs and its
 * parameters. Two transforms with equal keys produce equal outputs. */
typedef struct TKey {
  int op, in0, in1, inner, fkind;
  int64_t fval;
  const Expr *e;
} TKey;

static int key_cmp(const void *pa, const void *pb) {
  const TKey *a = pa, *b = pb;
#define CMP(x) \
  if (a->x != b->x) return a->x < b->x ? -1 : 1;
  CMP(op) CMP(in0) CMP(in1) CMP(inner) CMP(fkind) CMP(fval)
#undef CMP
  return a->e->id < b->e->id ? -1 : a->e->id > b->e->id;
}

static void make_key(IdMap *m, const Expr *e, TKey *k) {
  memset(k, 0, sizeof *k);
  k->e = e;
  k->op = (int)e->op;
  k->in0 = uf_find(m, e->in[0]->id);
  k->in1 = e->nin > 1 ? uf_find(m, e->in[1]->id) : -1;
  if (e->op == OP_SPLIT) {
    k->inner = e->attr.split.inner;
    int64_t v;
    /* Constant factors compare by value, symbolic ones by identity. */
    if (ir_scalar_const_value(e->attr.split.factor, &v)) {
      k->fval = v;
    } else {
      k->fkind = 1;
      k->fval = e->attr.split.factor->id;
    }
  } else if (e->op == OP_SWIZZLE) {
    k->inner = (int)e->attr.swizzle.type;
  }
}

/* Transform Exprs whose axes all existed at build time (every one, at build). */
static bool usable_transform(const IdMap *m, const Expr *e) {
  if (ir_op_kind(e->op) != OPK_TRANSFORM) return false;
  for (int i = 0; i < e->nin; i++)
    if (e->in[i]->id >= m->n) return false;
  for (int i = 0; i < e->nout; i++)
    if (e->out[i]->id >= m->n) return false;
  return true;
}

static void forward_broadcast_merges(IdMap *m) {
  for (int i = 0; i < m->f->exprs.len; i++) {
    Expr *e = m->f->exprs.items[i];
    if (e->op != OP_MERGE || !usable_transform(m, e)) continue;
    if (is_bcast(e->in[1])) uf_union(m, e->out[0]->id, e->in[0]->id);
    if (is_bcast(e->in[0])) uf_union(m, e->out[0]->id, e->in[1]->id);
  }
}

/* Sorts transforms by key and joins the outputs of equal neighbours until a pass
 * changes nothing. Each pass is O(E log E); the number of passes is bounded by the depth
 * of the transform graph. */
static bool propagate_forward(IdMap *m) {
  cf_fusion *f = m->f;
  TKey *keys = malloc(sizeof(TKey) * (size_t)(f->exprs.len + 1));
  if (!keys) return false;
  bool changed = true;
  while (changed) {
    changed = false;
    int nk = 0;
    for (int i = 0; i < f->exprs.len; i++) {
      Expr *e = f->exprs.items[i];
      if (usable_transform(m, e)) make_key(m, e, &keys[nk++]);
    }
    qsort(keys, (size_t)nk, sizeof(TKey), key_cmp);
    for (int i = 1; i < nk; i++) {
      const TKey *a = &keys[i - 1], *b = &keys[i];
      if (a->op != b->op || a->in0 != b->in0 || a->in1 != b->in1 || a->inner != b->inner || a->fkind != b->fkind ||
          a->fval != b->fval)
        continue;
      for (int o = 0; o < a->e->nout && o < b->e->nout; o++)
        changed |= uf_union(m, a->e->out[o]->id, b->e->out[o]->id);
    }
  }
  free(keys);
  return true;
}

IdMap *an_idmap_build(cf_fusion *f, bool permissive) {
  IdMap *m = calloc(1, sizeof *m);
  if (m) m->parent = malloc(sizeof(int) * (size_t)(f->vals.len + 1));
  if (!m || !m->parent) {
    free(m);
    ir_error(f, CF_ERR_OUT_OF_MEMORY, "scheduler: out of memory building the IterDomain map");
    return NULL;
  }
  m->f = f;
  m->permissive = permissive;
  m->n = f->vals.len;
  for (int i = 0; i < m->n; i++) m->parent[i] = i;
  bool ok = join_pairwise(m);
  if (ok && permissive) forward_broadcast_merges(m);
  if (!ok || !propagate_forward(m)) {
    an_idmap_free(m);
    ir_error(f, CF_ERR_OUT_OF_MEMORY, "scheduler: out of memory building the IterDomain map");
    return NULL;
  }
  /* Flatten so that queries never write: the map can then be shared read-only. */
  for (int i = 0; i < m->n; i++) m->parent[i] = uf_find(m, i);
  return m;
}

bool an_idmap_self_mapping(const IdMap *m, const Expr **op, const Val **tv, const Val **a, const Val **b) {
  if (!m->self_op) return false;
  *op = m->self_op, *tv = m->self_tv, *a = m->self_a, *b = m->self_b;
  return true;
}

int an_idmap_class(const IdMap *m, const Val *id) {
  if (id->id >= m->n) return id->id;
  return m->parent[id->id];
}

bool an_idmap_same(const IdMap *m, const Val *a, const Val *b) {
  if (a == b) return true;
  return an_idmap_class(m, a) == an_idmap_class(m, b);
}

void an_idmap_join(IdMap *m, const Val *a, const Val *b) {
  if (a->id >= m->n || b->id >= m->n) return;
  if (!uf_union(m, a->id, b->id)) return;
  if (!propagate_forward(m)) ir_error(m->f, CF_ERR_OUT_OF_MEMORY, "scheduler: out of memory joining IterDomains");
  for (int i = 0; i < m->n; i++) m->parent[i] = uf_find(m, i);
}

void an_idmap_free(IdMap *m) {
  if (!m) return;
  free(m->parent);
  free(m);
}
