/* scheduler/segment.c: cutting a fusion that no row of the registry takes whole into
 * segments (sched_segment), each then planned, scheduled and compiled on its own and run
 * one after the other, the tensors between them in global memory.
 * The cut is nvFuser's greedy merge (its SegmentCandidateFinder): every tensor op starts
 * in a group of its own, except that the ops reading a Welford reduction's states join
 * its group (states are not a tensor a segment can output); then, round after round,
 * the candidate merges are the pairs of groups where one reads what the other computes,
 * or both read one tensor, ranked by the bytes the merge removes from global memory (a
 * tensor read across the pair: its read, and its write when nothing else needs it; a
 * tensor both read: one read), and the best one that keeps the groups' graph acyclic and
 * that some row accepts is made. It
 * stops when no candidate is accepted. A reshape stays a group of its own (a view). A
 * refused pair of groups is remembered, so each pair is asked at most once. A group that
 * is only a broadcast of a fusion input tensor is merged first (forwards_input).
 * Key decisions: the rows decide what fuses (a merge no row accepts is never made), so
 * a new scheduler fuses more without touching this file; ties go to the merge whose
 * producer comes first, so the result is deterministic; the groups run in a topological
 * order of their graph. */
#include <string.h>

#include "ir/dtype.h"
#include "scheduler/registry.h"

static bool is_tensor_expr(const Expr *e) { return e && ir_op_kind(e->op) != OPK_TRANSFORM && e->out[0]->kind == VAL_TV; }

SchedSegment sched_whole(Arena *a, cf_fusion *f) {
  SchedSegment s = {0};
  s.exprs = ir_fusion_tensor_exprs_in(a, f, &s.nexprs);
  s.nin = f->inputs.len;
  s.ins = (Val **)f->inputs.items;
  s.nout = f->outputs.len;
  s.outs = (Val **)f->outputs.items;
  return s;
}

/* The state of the merge: exprs in topological order, pos[e->id] their index, grp[i] the
 * group of exprs[i] (a group is named by its smallest index), gid[g] the group's
 * generation (a merged group gets a new one, so remembered refusals stay exact). */
typedef struct Seg {
  Arena *a;
  cf_fusion *f;
  Expr **exprs;
  int n;
  int *pos, *grp, *gid, next_gid;
  bool *fixed;              /* per group: a reshape, never merged */
  uint64_t *refused;        /* open-addressing set of refused (gid, gid) pairs, 0 empty */
  int *seen, stamp;         /* per Val id: the last saved() that counted it */
  int nrefused, caprefused;
  SchedGroupAccepts accepts;
  void *ctx;
} Seg;

static int producer(const Seg *s, const Val *v) {
  return v->kind == VAL_TV && v->def && is_tensor_expr(v->def) && s->pos[v->def->id] >= 0 ? s->pos[v->def->id] : -1;
}

static void push_once(Arena *a, PtrVec *v, Val *tv) {
  if (!ptrvec_contains(v, tv)) ptrvec_push(a, v, tv);
}

/* Whether the value is read by an expr outside group g, or is a fusion output. */
static bool needed_outside(const Seg *s, Val *tv, int g) {
  if (ir_tv_is_output(s->f, tv)) return true;
  for (int u = 0; u < tv->uses.len; u++) {
    Expr *e = tv->uses.items[u];
    if (is_tensor_expr(e) && s->pos[e->id] >= 0 && s->grp[s->pos[e->id]] != g) return true;
  }
  return false;
}

/* Group g as a segment: its exprs, inputs (fusion inputs in the fusion's order, then
 * tensors of other groups) and outputs (fusion outputs, then tensors other groups read). */
static SchedSegment group_segment(const Seg *s, int g) {
  PtrVec ins = {0}, outs = {0}, mine = {0};
  cf_fusion *f = s->f;
  for (int i = 0; i < f->inputs.len; i++) {
    Val *tv = f->inputs.items[i];
    for (int u = 0; u < tv->uses.len; u++) {
      Expr *e = tv->uses.items[u];
      if (is_tensor_expr(e) && s->pos[e->id] >= 0 && s->grp[s->pos[e->id]] == g) push_once(s->a, &ins, tv);
    }
  }
  for (int i = 0; i < s->n; i++) {
    if (s->grp[i] != g) continue;
    Expr *e = s->exprs[i];
    ptrvec_push(s->a, &mine, e);
    for (int j = 0; j < e->nin; j++) {
      int p = producer(s, e->in[j]);
      if (p >= 0 && s->grp[p] != g) push_once(s->a, &ins, e->in[j]);
    }
  }
  for (int o = 0; o < f->outputs.len; o++) {
    int p = producer(s, f->outputs.items[o]);
    if (p >= 0 && s->grp[p] == g) push_once(s->a, &outs, f->outputs.items[o]);
  }
  for (int i = 0; i < s->n; i++)
    if (s->grp[i] == g)
      for (int k = 0; k < s->exprs[i]->nout; k++)
        if (needed_outside(s, s->exprs[i]->out[k], g)) push_once(s->a, &outs, s->exprs[i]->out[k]);
  return (SchedSegment){mine.len, ins.len, outs.len, (Expr **)mine.items, (Val **)ins.items, (Val **)outs.items};
}

/* ---- initial groups ------------------------------------------------------------------------ */

static bool reads_states(const Expr *e) {
  for (int j = 0; j < e->nin; j++)
    if (e->in[j]->kind == VAL_TV && ir_dtype_is_welford(e->in[j]->dtype)) return true;
  return false;
}

static void initial_groups(Seg *s) {
  for (int i = 0; i < s->n; i++) {
    Expr *e = s->exprs[i];
    s->grp[i] = i;
    s->gid[i] = s->next_gid++;
    s->fixed[i] = e->op == OP_RESHAPE;
    for (int j = 0; j < e->nin && reads_states(e); j++) {
      int p = producer(s, e->in[j]);
      if (p >= 0 && ir_dtype_is_welford(e->in[j]->dtype)) s->grp[i] = s->grp[p];
    }
  }
}

/* ---- refusals remembered --------------------------------------------------------------------- */

static uint64_t pair_key(int a, int b) { return ((uint64_t)(uint32_t)(a < b ? a : b) << 32 | (uint32_t)(a < b ? b : a)) + 1; }

static bool was_refused(const Seg *s, uint64_t k) {
  for (int i = s->caprefused ? (int)(k * 0x9e3779b97f4a7c15ull >> 40) & (s->caprefused - 1) : 0; s->caprefused;
       i = (i + 1) & (s->caprefused - 1)) {
    if (!s->refused[i]) return false;
    if (s->refused[i] == k) return true;
  }
  return false;
}

static void remember(Seg *s, uint64_t k) {
  if (2 * (s->nrefused + 1) > s->caprefused) {
    int cap = s->caprefused ? 2 * s->caprefused : 64;
    uint64_t *old = s->refused, *t = ARENA_ARRAY(s->a, uint64_t, cap);
    if (!t) return; /* out of memory: the pair may be asked again */
    int oldcap = s->caprefused;
    s->refused = t, s->caprefused = cap, s->nrefused = 0;
    for (int i = 0; i < oldcap; i++)
      if (old[i]) remember(s, old[i]);
  }
  int i = (int)(k * 0x9e3779b97f4a7c15ull >> 40) & (s->caprefused - 1);
  while (s->refused[i]) i = (i + 1) & (s->caprefused - 1);
  s->refused[i] = k;
  s->nrefused++;
}

/* ---- candidates ------------------------------------------------------------------------------ */

static double tv_bytes(Val *tv) {
  double n = (double)cf_dtype_size(tv->dtype);
  for (int a = 0; a < TV(tv)->nlogical; a++) {
    int64_t e;
    if (ID(TV(tv)->logical[a])->iter_type == CF_ITER_REDUCTION) continue;
    n *= ir_scalar_const_value(ID(TV(tv)->logical[a])->extent, &e) ? (double)e : 1024.0;
  }
  return n;
}

typedef struct Cand {
  int a, b; /* the two groups (a < b) */
  double bytes;
} Cand;

/* Whether tv is read by an expr of group g. */
static bool read_by(const Seg *s, Val *tv, int g) {
  for (int u = 0; u < tv->uses.len; u++) {
    Expr *e = tv->uses.items[u];
    if (is_tensor_expr(e) && s->pos[e->id] >= 0 && s->grp[s->pos[e->id]] == g) return true;
  }
  return false;
}

/* Whether tv is a fusion output or read by a group other than a and b. */
static bool needed_beyond(const Seg *s, Val *tv, int a, int b) {
  if (ir_tv_is_output(s->f, tv)) return true;
  for (int u = 0; u < tv->uses.len; u++) {
    Expr *e = tv->uses.items[u];
    int q = is_tensor_expr(e) ? s->pos[e->id] : -1;
    if (q >= 0 && s->grp[q] != a && s->grp[q] != b) return true;
  }
  return false;
}

/* The bytes a merge of groups a and b saves: a tensor computed in one and read in the
 * other is read no more, and written no more when nothing else needs it; a tensor both
 * read is read once. */
static double saved(Seg *s, int a, int b) {
  double total = 0;
  s->stamp++;
  for (int i = 0; i < s->n; i++) {
    if (s->grp[i] != a && s->grp[i] != b) continue;
    Expr *e = s->exprs[i];
    for (int j = 0; j < e->nin; j++) {
      Val *tv = e->in[j];
      if (tv->kind != VAL_TV || s->seen[tv->id] == s->stamp) continue;
      s->seen[tv->id] = s->stamp;
      int p = producer(s, tv), other = s->grp[i] == a ? b : a;
      if (p >= 0 && s->grp[p] == other) total += tv_bytes(tv) * (needed_beyond(s, tv, a, b) ? 1 : 2);
      else if (read_by(s, tv, other)) total += tv_bytes(tv);
    }
  }
  return total;
}

typedef struct CandList {
  Cand *c;
  int n, cap;
} CandList;

/* Whether group g is one broadcast of a fusion input tensor (not a 0-D scalar), read by one
 * op: it merges into that reader before anything else (nvFuser forwards such ops into
 * their readers), so a matmul's bias, broadcast on its own, never makes the row of that
 * matmul refuse its epilogue and leave it to the next matmul's segment. Casts, copies and
 * scalars' broadcasts are not forwarded: forwarding them first cost nvFuser's
 * embedding_fwd a kernel (tests/kernels/test_scan_kernels.c). */
static bool forwards_input(const Seg *s, int g) {
  int n = 0;
  const Expr *e = NULL;
  for (int i = 0; i < s->n && n < 2; i++)
    if (s->grp[i] == g) e = s->exprs[i], n++;
  if (n != 1 || e->op != OP_BROADCAST || e->out[0]->uses.len != 1) return false;
  for (int j = 0; j < e->nin; j++) /* a tensor input, not a 0-D scalar's broadcast */
    if (e->in[j]->kind == VAL_TV && (!ir_tv_is_input(s->f, e->in[j]) || TV(e->in[j])->nlogical == 0)) return false;
  return true;
}

enum { SEG_FORWARD_FIRST = 1 }; /* added to a merge's bytes, in units of 2^60 bytes */

static void add_cand(Seg *s, CandList *l, int a, int b) {
  if (a == b || s->fixed[a] || s->fixed[b] || was_refused(s, pair_key(s->gid[a], s->gid[b]))) return;
  if (a > b) {
    int t = a;
    a = b, b = t;
  }
  for (int k = 0; k < l->n; k++)
    if (l->c[k].a == a && l->c[k].b == b) return;
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 64;
    Cand *g = ARENA_ARRAY(s->a, Cand, cap);
    if (!g) return; /* out of memory: fewer candidates */
    if (l->n) memcpy(g, l->c, sizeof *g * (size_t)l->n);
    l->c = g, l->cap = cap;
  }
  double first = forwards_input(s, a) || forwards_input(s, b) ? SEG_FORWARD_FIRST * 0x1p60 : 0;
  l->c[l->n++] = (Cand){a, b, saved(s, a, b) + first};
}

/* The groups reading tv, each once, into g (room for tv's uses); returns their number. */
static int reader_groups(const Seg *s, Val *tv, int *g) {
  int n = 0;
  for (int u = 0; u < tv->uses.len; u++) {
    Expr *e = tv->uses.items[u];
    int q = is_tensor_expr(e) ? s->pos[e->id] : -1;
    bool dup = q < 0;
    for (int k = 0; k < n && !dup; k++) dup = g[k] == s->grp[q];
    if (!dup) g[n++] = s->grp[q];
  }
  return n;
}

/* The candidate merges, best first (more bytes; ties: the order found, producers first):
 * a group with a group reading what it computes, and two groups reading one tensor. */
static CandList candidates(Seg *s) {
  CandList l = {0};
  for (int i = 0; i < s->n; i++) {
    Expr *e = s->exprs[i];
    for (int j = 0; j < e->nin; j++) {
      int p = producer(s, e->in[j]);
      if (p >= 0) add_cand(s, &l, s->grp[p], s->grp[i]);
    }
  }
  for (int i = 0; i < s->f->vals.len; i++) {
    Val *tv = s->f->vals.items[i];
    if (tv->kind != VAL_TV || tv->uses.len < 2) continue;
    int *g = ARENA_ARRAY(s->a, int, tv->uses.len), n = g ? reader_groups(s, tv, g) : 0;
    for (int x = 0; x < n; x++)
      for (int y = x + 1; y < n; y++) add_cand(s, &l, g[x], g[y]);
  }
  for (int i = 1; i < l.n; i++) /* insertion sort: stable */
    for (int k = i; k > 0 && l.c[k].bytes > l.c[k - 1].bytes; k--) {
      Cand t = l.c[k];
      l.c[k] = l.c[k - 1], l.c[k - 1] = t;
    }
  return l;
}

/* Whether b is reachable from a through some group other than a and b (merging them would
 * then make a cycle). reach[g]: group g is reached from a without passing b; settled by
 * sweeps over the exprs until nothing changes (a group's exprs need not be contiguous in
 * the topological order). */
static bool other_path(const Seg *s, int a, int b) {
  bool *reach = ARENA_ARRAY(s->a, bool, s->n), changed = true;
  if (!reach) return true;
  while (changed) {
    changed = false;
    for (int i = 0; i < s->n; i++) {
      int g = s->grp[i];
      if (g == a || g == b || reach[g]) continue;
      Expr *e = s->exprs[i];
      for (int j = 0; j < e->nin && !reach[g]; j++) {
        int p = producer(s, e->in[j]);
        if (p >= 0 && (s->grp[p] == a || (s->grp[p] != b && reach[s->grp[p]]))) reach[g] = changed = true;
      }
    }
  }
  for (int i = 0; i < s->n; i++) {
    if (s->grp[i] != b) continue;
    Expr *e = s->exprs[i];
    for (int j = 0; j < e->nin; j++) {
      int p = producer(s, e->in[j]);
      if (p >= 0 && s->grp[p] != a && s->grp[p] != b && reach[s->grp[p]]) return true;
    }
  }
  return false;
}

/* Tries to merge groups a and b (named after the smaller); true when some row accepted
 * the merged group, else the groups are as before and the pair is remembered. */
static bool try_merge(Seg *s, int a, int b, int *moved) {
  uint64_t key = pair_key(s->gid[a], s->gid[b]);
  int into = a < b ? a : b, from = a < b ? b : a, nmoved = 0;
  if (other_path(s, a, b) || other_path(s, b, a)) {
    remember(s, key);
    return false;
  }
  for (int i = 0; i < s->n; i++)
    if (s->grp[i] == from) s->grp[i] = into, moved[nmoved++] = i;
  SchedSegment g = group_segment(s, into);
  if (s->accepts(s->ctx, &g)) {
    s->gid[into] = s->next_gid++;
    return true;
  }
  for (int k = 0; k < nmoved; k++) s->grp[moved[k]] = from;
  remember(s, key);
  return false;
}

/* Merges until no candidate is accepted; false when out of memory. */
static bool merge_all(Seg *s) {
  int *moved = ARENA_ARRAY(s->a, int, s->n + 1);
  if (!moved) return false;
  for (;;) {
    CandList l = candidates(s);
    int k = 0;
    while (k < l.n && !try_merge(s, l.c[k].a, l.c[k].b, moved)) k++;
    if (k == l.n) return true;
  }
}

/* The groups in a topological order of their graph (Kahn; ties: the smaller name, which
 * is the group's first expr). */
static int order_groups(Seg *s, int *order) {
  int *indeg = ARENA_ARRAY(s->a, int, s->n), ng = 0;
  bool *done = ARENA_ARRAY(s->a, bool, s->n);
  if (!indeg || !done) return -1;
  for (int i = 0; i < s->n; i++) {
    Expr *e = s->exprs[i];
    for (int j = 0; j < e->nin; j++) {
      int p = producer(s, e->in[j]);
      if (p >= 0 && s->grp[p] != s->grp[i]) indeg[s->grp[i]]++;
    }
  }
  for (;;) {
    int g = -1;
    for (int i = 0; i < s->n && g < 0; i++)
      if (s->grp[i] == i && !done[i] && indeg[i] == 0) g = i;
    if (g < 0) return ng;
    done[g] = true;
    order[ng++] = g;
    for (int i = 0; i < s->n; i++) {
      if (s->grp[i] == g) continue;
      Expr *e = s->exprs[i];
      for (int j = 0; j < e->nin; j++) {
        int p = producer(s, e->in[j]);
        if (p >= 0 && s->grp[p] == g) indeg[s->grp[i]]--;
      }
    }
  }
}

int sched_segment(Arena *a, cf_fusion *f, SchedGroupAccepts accepts, void *ctx, SchedSegment **out) {
  Seg s = {.a = a, .f = f, .accepts = accepts, .ctx = ctx};
  s.exprs = ir_fusion_tensor_exprs_in(a, f, &s.n);
  s.pos = ARENA_ARRAY(a, int, f->exprs.len + 1);
  s.grp = ARENA_ARRAY(a, int, s.n + 1);
  s.gid = ARENA_ARRAY(a, int, s.n + 1);
  s.fixed = ARENA_ARRAY(a, bool, s.n + 1);
  s.seen = ARENA_ARRAY(a, int, f->vals.len + 1);
  int *order = ARENA_ARRAY(a, int, s.n + 1);
  if ((s.n && !s.exprs) || !s.pos || !s.grp || !s.gid || !s.fixed || !s.seen || !order) return -1;
  for (int i = 0; i <= f->exprs.len; i++) s.pos[i] = -1; /* not reachable from an output */
  for (int i = 0; i < s.n; i++) s.pos[s.exprs[i]->id] = i;
  initial_groups(&s);
  if (!merge_all(&s)) return -1;
  int ng = order_groups(&s, order);
  SchedSegment *segs = ng >= 0 ? ARENA_ARRAY(a, SchedSegment, ng + 1) : NULL;
  if (!segs) return -1;
  for (int k = 0; k < ng; k++) segs[k] = group_segment(&s, order[k]);
  *out = segs;
  return ng;
}
