/* lower/group_reductions.c: pass "group_reductions", right after the reduction pass.
 * Reduces the accumulators of a small serial loop's iterations in one block reduction (a
 * column reduction vectorized by v lanes: one all-reduce of v values instead of v in a
 * row, each with its barriers and, for a grid reduction, its round trip through global
 * memory and the semaphore).
 * Requires: block reductions as the reduction pass leaves them (an accumulator declared,
 * accumulated, all-reduced, then read). Matches a serial or unrolled loop of constant
 * extent n, 2 <= n <= LOWER_MAX_GROUP, whose body holds, in order: nodes that accumulate
 * into one accumulator var and write nothing else (ops, possibly in thread-parallel or
 * serial loops and under ifs), var's KN_ACC_DECL among them, one KN_BLOCK_REDUCE of var in
 * the tree or the warp form (with or without a grid part in the last-block form, or that
 * grid part alone; a grid all-reduce stays ungrouped), then nodes that read var (the
 * consumers); nothing collective but that reduction (no sync, no other reduction), no
 * other kind of node, and no tensor both written on one side of the reduction and accessed
 * on the other (the loop is split in two there, so iteration i of the consumers runs after
 * every iteration of the accumulation); the grouped workspace of constant size, within
 * LOWER_MAX_GROUP_WORKSPACE_BYTES.
 * Establishes, for each such loop: a Local array of n elements named like var (a new
 * allocation) in its place, every access of var becoming the array's element at the loop's
 * index; the loop itself holding the accumulation, var's declaration replaced by the
 * initialization of its element; then ONE grouped KN_BLOCK_REDUCE (kir.h's acc.group,
 * acc.array: its workspace n times as large, its grid group no longer counting the loop,
 * its tail, if any, wrapped in a copy of the loop); then a copy of the loop with the
 * consumers. Loops that do not match stay as they are.
 * Key decisions: the warp form is grouped too (its two barriers once for the n instead of
 * n times: the reference batch norm's 8 x 16 block ran 16 barriers for its two reductions
 * of four columns, grouped 4: 80.9-81.2 -> 79.4-79.7 us on an H200, queued runs of
 * bench_define_and_run); the warp-local lanes form is not (no barrier to share); each
 * element is combined with the same partners in the same order as the ungrouped reduction
 * would, so results are bit-identical; the copies of the loop keep its variable (a sibling
 * scope), and the ops moved into them point to them (their `loops`), so the indices stay
 * as they were.
 * Measured (H200s, 2026-11-28, bench/results/epilogue_h200_20261128/): the reference batch
 * norm 512 x 65536 float 86.8-87.4 -> 84.3-85.6 us; in the sweep's column kinds, against
 * torch eager in the same run (cases of 16 MiB and more): column maxima of half 0.84x ->
 * 0.95x, bfloat16 0.89x -> 0.99x, column sums of half 0.72x -> 0.77x, float 0.85x ->
 * 0.88x; batch norm's kinds within the runs' noise. compute-sanitizer memcheck and
 * racecheck report nothing on its tests on the GPU. */
#include <string.h>

#include "lower/lower.h"

/* The most accumulators one reduction groups: each is a register of every thread, and the
 * tree's workspace grows by the block's threads for each. */
#define LOWER_MAX_GROUP 16
/* The most shared memory a grouped tree's workspace takes: the schedulers plan shared
 * memory without it, so a larger one (a wide block of 8-byte values) could make a kernel
 * that launched before ask for more than the device has. 512 threads x 8 floats fit. */
#define LOWER_MAX_GROUP_WORKSPACE_BYTES (16 * 1024)

typedef struct Group {
  KNode *loop;
  int64_t n;
  int decl, reduce; /* positions in the loop's body */
  KNode *br;
  const char *var;
  KExpr *iter;      /* grid: the group's iteration without the loop */
} Group;

/* ---- what the loop's nodes are and touch --------------------------------------------------- */

typedef struct Scan {
  const char *var;
  bool foreign;      /* a node kind the pass does not move (or a collective) */
  bool writes_var;   /* an op accumulating into var */
  bool writes_other; /* an op writing something other than var */
  KTensor **written; /* tensors ops write */
  int nwritten, cap;
  Arena *a;
} Scan;

static bool is_var(const KAccess *x, const char *var) { return !x->t && x->var && !strcmp(x->var, var); }

static void note_written(Scan *s, KTensor *t) {
  if (s->nwritten == s->cap) {
    int cap = s->cap ? 2 * s->cap : 8;
    KTensor **w = ARENA_ARRAY(s->a, KTensor *, cap);
    for (int i = 0; i < s->nwritten; i++) w[i] = s->written[i];
    s->written = w;
    s->cap = cap;
  }
  s->written[s->nwritten++] = t;
}

static bool scan_node(KVisitor *v, KNode *n) {
  Scan *s = v->user;
  switch (n->kind) {
  case KN_FOR:
  case KN_IF:
  case KN_COMMENT: break;
  case KN_ACC_DECL: s->foreign |= strcmp(n->u.acc.var, s->var) != 0; break;
  case KN_OP:
    if (n->u.op.out.t) note_written(s, n->u.op.out.t);
    s->writes_var |= is_var(&n->u.op.out, s->var);
    s->writes_other |= !is_var(&n->u.op.out, s->var);
    break;
  default: s->foreign = true; break;
  }
  return true;
}

/* The facts of items [from, to) of b. */
static void scan(Arena *a, const char *var, KBlock *b, int from, int to, Scan *s) {
  *s = (Scan){.var = var, .a = a};
  KVisitor v = {.user = s, .arena = a};
  kir_visit_all(&v, scan_node, NULL);
  for (int i = from; i < to && !s->foreign; i++) {
    KBlock one = {&b->items[i], 1, 1};
    kir_visit(&v, &one);
  }
}

typedef struct Touch {
  KTensor *const *ts;
  int n;
  bool hit;
} Touch;

static void touch_one(KTensor *t, void *user) {
  Touch *x = user;
  for (int i = 0; i < x->n; i++) x->hit |= x->ts[i] == t;
}

static bool touch_node(KVisitor *v, KNode *n) {
  kn_data_tensors(NULL, n, touch_one, v->user);
  return true;
}

/* Whether a node of b's items [from, to) accesses one of the n tensors ts. */
static bool touches(Arena *a, KBlock *b, int from, int to, KTensor *const *ts, int n) {
  Touch x = {ts, n, false};
  KVisitor v = {.user = &x, .arena = a};
  for (int k = 0; k < KN_KIND_COUNT; k++) v.pre[k] = k == KN_OP ? touch_node : NULL;
  for (int i = from; i < to && !x.hit; i++) {
    KBlock one = {&b->items[i], 1, 1};
    kir_visit(&v, &one);
  }
  return x.hit;
}

/* ---- the pattern ------------------------------------------------------------------------ */

/* The reduction's group index without the loop (the innermost serial loop the reduction
 * pass counted, stride 1): iter = prev * n + index, or the index alone; NULL otherwise. */
static KExpr *iter_without(LowerCtx *c, KExpr *iter, const KNode *loop, int64_t n) {
  int64_t e;
  if (kx_equal(iter, loop->u.loop.index)) return kx_const(c->a, 0);
  if (iter->kind != KX_BINARY || iter->op != OP_ADD || !kx_equal(iter->b, loop->u.loop.index)) return NULL;
  KExpr *m = iter->a;
  if (m->kind != KX_BINARY || m->op != OP_MUL || !kx_is_const(m->b, &e) || e != n) return NULL;
  return m->a;
}

/* The reduction forms the pass groups: the tree and the warp form (or no block part), not
 * yet grouped, and no grid all-reduce (no schedule of the tests reaches one in the tree
 * form: left as it is until one does). The warp-local lanes form has no barrier to share. */
static bool groupable_form(const KNode *br) {
  return !br->u.acc.lanes && !br->u.acc.group && !br->u.acc.all_blocks &&
         (br->u.acc.ws || br->u.acc.work);
}

/* The positions of var's declaration and its reduction among the loop's items; false
 * unless there is exactly one of each, in that order. */
static bool find_decl_and_reduce(KBlock *b, Group *g) {
  g->decl = g->reduce = -1;
  for (int i = 0; i < b->len; i++) {
    KNode *n = b->items[i];
    if (n->kind == KN_ACC_DECL) {
      if (g->decl >= 0) return false;
      g->decl = i;
    } else if (n->kind == KN_BLOCK_REDUCE) {
      if (g->reduce >= 0) return false;
      g->reduce = i;
    }
  }
  if (g->decl < 0 || g->reduce < g->decl) return false;
  g->br = b->items[g->reduce];
  g->var = b->items[g->decl]->u.acc.var;
  return !strcmp(g->br->u.acc.var, g->var);
}

/* Whether the loop splits at the reduction: the accumulation writes var alone, and no
 * tensor written on one side is accessed on the other (the tail counts as the consumers'). */
static bool splits(LowerCtx *c, KNode *loop, Group *g) {
  KBlock *b = &loop->u.loop.body;
  Scan acc, use, tail;
  scan(c->a, g->var, b, 0, g->reduce, &acc);
  scan(c->a, g->var, b, g->reduce + 1, b->len, &use);
  scan(c->a, g->var, &g->br->u.acc.tail, 0, g->br->u.acc.tail.len, &tail);
  if (acc.foreign || use.foreign || tail.foreign || acc.writes_other || !acc.writes_var) return false;
  if (touches(c->a, b, 0, g->reduce, use.written, use.nwritten)) return false;
  return !touches(c->a, b, 0, g->reduce, tail.written, tail.nwritten);
}

/* Whether the tree's workspace, n times as large, stays within its budget (a workspace
 * of symbolic size never does). */
static bool workspace_fits(const KNode *br, int64_t n) {
  int64_t threads;
  const KTensor *ws = br->u.acc.ws;
  if (!ws) return true;
  if (!kx_is_const(ws->size, &threads)) return false;
  return threads * n * (int64_t)cf_dtype_size(ws->dtype) <= LOWER_MAX_GROUP_WORKSPACE_BYTES;
}

static bool match(LowerCtx *c, KNode *loop, Group *g) {
  *g = (Group){.loop = loop};
  cf_parallel_type pt = loop->u.loop.pt;
  if (!loop->u.loop.var || (pt != CF_PT_SERIAL && pt != CF_PT_UNROLL)) return false;
  if (!kx_is_const(loop->u.loop.extent, &g->n) || g->n < 2 || g->n > LOWER_MAX_GROUP) return false;
  if (!find_decl_and_reduce(&loop->u.loop.body, g) || !groupable_form(g->br) || !workspace_fits(g->br, g->n))
    return false;
  if (g->br->u.acc.work && !(g->iter = iter_without(c, g->br->u.acc.iter, loop, g->n))) return false;
  return splits(c, loop, g);
}

/* ---- the rewrite ------------------------------------------------------------------------- */

static KTensor *local_array(LowerCtx *c, const Group *g) {
  KKernel *k = c->k;
  KTensor *t = ARENA_NEW(c->a, KTensor);
  t->name = g->var;
  t->fusion_tv_name = -1;
  t->mem = CF_MEM_LOCAL;
  t->dtype = g->br->u.acc.dtype;
  t->param = -1;
  t->tmem_region = -1;
  t->size = kx_const(c->a, g->n);
  KTensor **all = ARENA_ARRAY(c->a, KTensor *, k->nallocs + 1);
  for (int i = 0; i < k->nallocs; i++) all[i] = k->allocs[i];
  all[k->nallocs++] = t;
  k->allocs = all;
  return t;
}

typedef struct Subst {
  const char *var;
  KAccess elem;            /* var's replacement */
  const KNode *from;       /* loops pointing here ... */
  KNode *to;               /* ... point here (NULL: unchanged) */
  Arena *a;
  KNode *first_acc;        /* the first op accumulating into var */
} Subst;

static void subst_access(Subst *s, KAccess *x) {
  if (is_var(x, s->var)) *x = s->elem;
}

static bool subst_op(KVisitor *v, KNode *n) {
  Subst *s = v->user;
  if (is_var(&n->u.op.out, s->var) && !s->first_acc) s->first_acc = n;
  subst_access(s, &n->u.op.out);
  for (int i = 0; i < n->u.op.nin; i++) subst_access(s, &n->u.op.in[i]);
  if (s->to && n->u.op.loops) {
    KNode **loops = ARENA_ARRAY(s->a, KNode *, n->u.op.nloop);
    for (int j = 0; j < n->u.op.nloop; j++) loops[j] = n->u.op.loops[j] == s->from ? s->to : n->u.op.loops[j];
    n->u.op.loops = loops;
  }
  return true;
}

/* var -> the array's element in b's ops; their loop `from` becomes `to` (when given). */
static KNode *substitute(LowerCtx *c, KBlock *b, Subst s) {
  s.a = c->a;
  KVisitor v = {.pre = {[KN_OP] = subst_op}, .user = &s, .arena = c->a};
  kir_visit(&v, b);
  return s.first_acc;
}

/* A copy of the loop (same variable, extent and type) holding the given items. */
static KNode *loop_copy(LowerCtx *c, const KNode *loop, KBlock items) {
  KNode *l = lower_node(c, KN_FOR);
  l->u.loop = loop->u.loop;
  l->u.loop.body = items;
  return l;
}

static KBlock slice(LowerCtx *c, const KBlock *b, int from, int to) {
  KBlock out = {0};
  for (int i = from; i < to; i++) kb_push(c->a, &out, b->items[i]);
  return out;
}

/* The initialization of the array's element: the first accumulation, as its init (its
 * own arrays of loops, as a copy has). */
static KNode *element_init(LowerCtx *c, const KNode *acc) {
  KNode *init = lower_node(c, KN_OP);
  init->u.op = acc->u.op;
  init->u.op.reduction_init = true;
  int n = acc->u.op.nloop;
  if (n > 0 && acc->u.op.loops) init->u.op.loops = arena_memdup(c->a, acc->u.op.loops, sizeof(KNode *) * (size_t)n);
  if (n > 0 && acc->u.op.loop_index)
    init->u.op.loop_index = arena_memdup(c->a, acc->u.op.loop_index, sizeof(KExpr *) * (size_t)n);
  return init;
}

static void group(LowerCtx *c, Group *g, KBlock *out) {
  KNode *loop = g->loop, *br = g->br;
  KBlock *body = &loop->u.loop.body;
  KTensor *array = local_array(c, g);
  Subst s = {.var = g->var, .elem = {.t = array, .index = loop->u.loop.index}};
  KBlock accumulate = slice(c, body, 0, g->reduce);
  KNode *first = substitute(c, &accumulate, s);
  accumulate.items[g->decl] = element_init(c, first);
  KNode *consume = loop_copy(c, loop, slice(c, body, g->reduce + 1, body->len));
  s.from = loop, s.to = consume;
  substitute(c, &consume->u.loop.body, s);
  if (br->u.acc.tail.len) {
    KNode *tail = loop_copy(c, loop, br->u.acc.tail);
    s.to = tail;
    substitute(c, &tail->u.loop.body, s);
    br->u.acc.tail = (KBlock){0};
    kb_push(c->a, &br->u.acc.tail, tail);
  }
  br->u.acc.group = (int)g->n;
  br->u.acc.array = array;
  if (br->u.acc.ws) br->u.acc.ws->size = kx_bin(c->a, OP_MUL, br->u.acc.ws->size, kx_const(c->a, g->n));
  if (br->u.acc.work) br->u.acc.iter = g->iter;
  loop->u.loop.body = accumulate;
  kb_push(c->a, out, loop);
  kb_push(c->a, out, br);
  if (consume->u.loop.body.len) kb_push(c->a, out, consume);
}

/* Inner loops first: a loop's body is grouped before the loop is matched. */
static void on_loop(KMutator *m, KNode *n, KBlock *out) {
  LowerCtx *c = m->user;
  Group g;
  kir_mutate_children(m, n);
  if (match(c, n, &g)) group(c, &g, out);
  else kb_push(c->a, out, n);
}

void lower_group_reductions(LowerCtx *c) {
  KMutator m = {.arena = c->a, .fn = {[KN_FOR] = on_loop}, .user = c};
  kir_mutate(&m, &c->k->body);
}
