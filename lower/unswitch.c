/* lower/unswitch.c: the unswitch pass (nvFuser's unswitch and unroll predicates). The
 * outermost loop of a nest parallelized Unswitch or Unroll (ir_ptype_shapes_loop) becomes
 *
 *   if (<every bound its nest's predicates check, at the nest's largest indices>) {
 *     <the nest, its ifs stripped of those bounds>
 *   } else {
 *     <the nest as it was>
 *   }
 *
 * so a tile inside the tensor runs its loads, math and stores with no predicate, and only
 * the tiles at the edge pay for them.
 *
 * Requires: predicates as values (predicate.c: each guard's condition is a conjunction of
 * write guards `threadIdx.p == 0` and bounds `index < extent`), block reductions, syncs
 * and tensor-memory instructions in place (this pass runs after them: the nest is copied
 * whole). Establishes: the if/else above; the fast copy's loops and ops are new nodes
 * (kir_clone), the slow one is the original nest.
 * Key decisions:
 *  - a term `x < y` is hoisted when y does not depend on the nest's loops and x has an
 *    upper bound over them: every loop variable of the nest is replaced by its extent - 1
 *    and bounds propagate through +, *, /, ceilDiv, % (min(x, m - 1)), ^ (x + y: xor adds
 *    without carries), max and min, for non-negative operands; other terms (the write
 *    guards, what this cannot bound) stay on their ops in both copies. Unlike nvFuser,
 *    which takes indices at the loops' ends, the bound holds through a merge's modulo
 *    (nvFuser special-cases it), so the fast path is never taken wrongly; a divisor that
 *    is not a positive constant becomes max(d, 1) in the condition, which runs even where
 *    the nest would not (an empty tensor);
 *  - a nest that holds a collective node (a barrier, a block reduction, a tcgen05
 *    instruction: kn_is_collective) must be entered by the whole block or by none: its
 *    hoisted terms that read a thread index are put to a block vote (`__syncthreads_and`,
 *    one barrier per entry) after those that read none, so every thread takes the same
 *    branch (nvFuser lets threads part and relies on barriers counting threads);
 *  - the else branch is always kept when something was hoisted (nvFuser omits it when
 *    every loop of the nest runs once; not proven here for nests writing several tensors);
 *    a nest with nothing to hoist, or whose hoisted condition is constant false, stays as
 *    it was. */
#include <string.h>

#include "lower/lower.h"

/* A loop variable of the nest and its largest value. */
typedef struct NestVar {
  const char *name;
  KExpr *max;
} NestVar;

typedef struct KTerms {
  KExpr **items;
  int n, cap;
} KTerms;

/* The nest being unswitched: its loop variables, whether it holds a collective node, and
 * the terms hoisted so far. */
typedef struct Nest {
  LowerCtx *c;
  NestVar *vars;
  int nvars, capvars;
  bool collective; /* the nest holds a collective node: thread bounds go to a block vote */
  bool never; /* a hoisted term is false for every tile */
  KTerms block, thread; /* hoisted terms that read no thread index, and the others */
} Nest;

static void grow(Arena *a, void **items, int n, int *cap, size_t size) {
  if (n < *cap) return;
  int c = *cap ? 2 * *cap : 8;
  void *p = arena_alloc(a, size * (size_t)c);
  if (n) memcpy(p, *items, size * (size_t)n);
  *items = p;
  *cap = c;
}

static bool scan(KVisitor *v, KNode *n) {
  Nest *nest = v->user;
  nest->collective |= kn_is_collective(n->kind);
  if (n->kind == KN_FOR && n->u.loop.var) {
    grow(nest->c->a, (void **)&nest->vars, nest->nvars, &nest->capvars, sizeof(NestVar));
    nest->vars[nest->nvars++] =
        (NestVar){n->u.loop.var, kx_bin(nest->c->a, OP_SUB, n->u.loop.extent, kx_const(nest->c->a, 1))};
  }
  return true;
}

static KExpr *nest_max(const Nest *n, const char *name) {
  for (int i = 0; i < n->nvars; i++)
    if (!strcmp(n->vars[i].name, name)) return n->vars[i].max;
  return NULL;
}

static bool varies(const Nest *n, const KExpr *e) {
  if (!e) return false;
  if (e->kind == KX_VAR && nest_max(n, e->name)) return true;
  return varies(n, e->a) || varies(n, e->b) || varies(n, e->c);
}

/* Whether e >= 0 wherever it is evaluated: loop variables, thread indices and sizes are;
 * strides may not be. */
static bool nonneg(const KExpr *e) {
  switch (e->kind) {
  case KX_CONST: return e->value >= 0;
  case KX_VAR:
  case KX_THREAD:
  case KX_PARAM_SIZE: return true;
  case KX_PARAM_STRIDE: return false;
  case KX_SELECT: return nonneg(e->b) && nonneg(e->c);
  case KX_BLOCK_ALL: return true;
  case KX_BINARY:
    switch (e->op) {
    case OP_ADD:
    case OP_MUL:
    case OP_DIV:
    case OP_CEILDIV:
    case OP_MOD:
    case OP_XOR:
    case OP_MAX:
    case OP_MIN: return nonneg(e->a) && nonneg(e->b);
    default: return false;
    }
  }
  return false;
}

static KExpr *upper(const Nest *n, const KExpr *e);

/* A divisor the condition may divide by: the nest does not change it, and it is not zero
 * (max(d, 1) unless a positive constant); NULL otherwise. */
static KExpr *divisor(const Nest *n, const KExpr *d) {
  int64_t v;
  if (varies(n, d)) return NULL;
  if (kx_is_const(d, &v)) return v > 0 ? (KExpr *)d : NULL;
  KExpr *x = upper(n, d);
  return x ? kx_bin(n->c->a, OP_MAX, x, kx_const(n->c->a, 1)) : NULL;
}

static KExpr *upper_binary(const Nest *n, const KExpr *e) {
  Arena *a = n->c->a;
  KExpr *x = upper(n, e->a), *y = e->op == OP_DIV || e->op == OP_CEILDIV || e->op == OP_MOD ? divisor(n, e->b) : upper(n, e->b);
  if (!x || !y) return NULL;
  switch (e->op) {
  case OP_ADD: return kx_bin(a, OP_ADD, x, y);
  case OP_MUL: return nonneg(e->a) && nonneg(e->b) ? kx_bin(a, OP_MUL, x, y) : NULL;
  case OP_XOR: return nonneg(e->a) && nonneg(e->b) ? kx_bin(a, OP_ADD, x, y) : NULL;
  case OP_MAX:
  case OP_MIN: return kx_bin(a, e->op, x, y);
  case OP_DIV:
  case OP_CEILDIV: return kx_bin(a, e->op, x, y); /* monotone in the dividend */
  case OP_MOD:
    if (!nonneg(e->a)) return NULL;
    if (!varies(n, e->a)) return kx_bin(a, OP_MOD, x, y); /* the same value, its divisor guarded */
    return kx_bin(a, OP_MIN, x, kx_bin(a, OP_SUB, y, kx_const(a, 1)));
  default: return NULL;
  }
}

/* An upper bound of e over every iteration of the nest (NULL when unknown), in terms of
 * what stays fixed while the nest runs. */
static KExpr *upper(const Nest *n, const KExpr *e) {
  switch (e->kind) {
  case KX_CONST:
  case KX_THREAD:
  case KX_PARAM_SIZE:
  case KX_PARAM_STRIDE: return (KExpr *)e;
  case KX_VAR: {
    KExpr *m = nest_max(n, e->name);
    return m ? m : (KExpr *)e;
  }
  case KX_SELECT: {
    KExpr *x = upper(n, e->b), *y = upper(n, e->c);
    return x && y && !varies(n, e->a) ? kx_bin(n->c->a, OP_MAX, x, y) : NULL;
  }
  case KX_BINARY: return upper_binary(n, e);
  case KX_BLOCK_ALL: return NULL;
  }
  return NULL;
}

static bool reads_thread_index(const KExpr *e) {
  for (int p = CF_PT_TIDX; p <= CF_PT_TIDZ; p++)
    if (kx_uses_thread(e, (cf_parallel_type)p)) return true;
  return false;
}

/* Whether a >= b wherever both are evaluated, seen from their shapes alone (both
 * non-negative): equal, a = b' + c with b' >= b and c >= 0, or the same operation over
 * larger operands (the same divisor). It lets a hoisted `x < n` drop for a `x + 3 < n`. */
static bool dominates(const KExpr *a, const KExpr *b) {
  int64_t u, v;
  if (kx_equal(a, b)) return true;
  if (kx_is_const(a, &u) && kx_is_const(b, &v)) return u >= v;
  if (a->kind != KX_BINARY) return false;
  if (a->op == OP_ADD && ((kx_is_const(a->b, &u) && u >= 0 && dominates(a->a, b)) ||
                          (kx_is_const(a->a, &u) && u >= 0 && dominates(a->b, b))))
    return true;
  if (b->kind != KX_BINARY || a->op != b->op) return false;
  switch (a->op) {
  case OP_ADD:
  case OP_MUL: return dominates(a->a, b->a) && dominates(a->b, b->b);
  case OP_DIV:
  case OP_CEILDIV: return dominates(a->a, b->a) && kx_equal(a->b, b->b);
  default: return false;
  }
}

/* Records the hoisted term `x < y` unless a recorded one implies it (same y, a larger x);
 * drops the recorded ones it implies. */
static void record(Arena *a, KTerms *ts, KExpr *t) {
  for (int i = 0; i < ts->n; i++)
    if (kx_equal(ts->items[i]->b, t->b) && dominates(ts->items[i]->a, t->a)) return;
  int kept = 0;
  for (int i = 0; i < ts->n; i++)
    if (!(kx_equal(ts->items[i]->b, t->b) && dominates(t->a, ts->items[i]->a))) ts->items[kept++] = ts->items[i];
  ts->n = kept;
  grow(a, (void **)&ts->items, ts->n, &ts->cap, sizeof(KExpr *));
  ts->items[ts->n++] = t;
}

static KExpr *conjunction(Arena *a, const KTerms *ts) {
  KExpr *c = kx_const(a, 1);
  for (int i = 0; i < ts->n; i++) c = i ? kx_bin(a, OP_AND, c, ts->items[i]) : ts->items[i];
  return c;
}

/* Hoists `term` when the header's rule allows: records its bound over the nest (unless
 * always true, or implied by one recorded) and returns true; false leaves it on its op. */
static bool hoist(Nest *n, KExpr *term) {
  Arena *a = n->c->a;
  if (term->kind != KX_BINARY || term->op != OP_LT || varies(n, term->b)) return false;
  /* a % b < b holds wherever it is evaluated (a merge's inner index; b is an extent, not
   * zero where the nest runs) */
  if (term->a->kind == KX_BINARY && term->a->op == OP_MOD && nonneg(term->a->a) && kx_equal(term->a->b, term->b)) return true;
  KExpr *x = upper(n, term->a);
  if (!x) return false;
  KExpr *t = kx_bin(a, OP_LT, x, term->b);
  int64_t v;
  if ((kx_is_const(t, &v) && v) || kx_equal(x, kx_bin(a, OP_SUB, term->b, kx_const(a, 1)))) return true;
  if (kx_is_const(t, NULL)) n->never = true; /* folded to false: the fast copy could never run */
  else record(a, n->collective && reads_thread_index(t) ? &n->thread : &n->block, t);
  return true;
}

/* cond with its hoisted terms left out (the conjunction of the others). */
static KExpr *strip(Nest *n, KExpr *cond) {
  if (cond->kind == KX_BINARY && cond->op == OP_AND)
    return kx_bin(n->c->a, OP_AND, strip(n, cond->a), strip(n, cond->b));
  return hoist(n, cond) ? kx_const(n->c->a, 1) : cond;
}

/* An if of the fast copy loses its hoisted terms; one left with none is replaced by its
 * then branch. */
static void strip_if(KMutator *m, KNode *n, KBlock *out) {
  kir_mutate_children(m, n);
  n->u.cond.cond = strip(m->user, n->u.cond.cond);
  int64_t v;
  if (!kx_is_const(n->u.cond.cond, &v) || !v || n->u.cond.otherwise.len) {
    kb_push(m->arena, out, n);
    return;
  }
  for (int i = 0; i < n->u.cond.then.len; i++) kb_push(m->arena, out, n->u.cond.then.items[i]);
}

/* The if/else of the header for the nest of `loop`, or loop itself. */
static KNode *unswitch(LowerCtx *c, KNode *loop) {
  Nest n = {.c = c};
  KBlock one = {&loop, 1, 1};
  KVisitor scanner = {.user = &n};
  kir_visit_all(&scanner, scan, NULL);
  kir_visit(&scanner, &one);
  KNode *fast = kir_clone(c->a, loop);
  KBlock copy = {&fast, 1, 1};
  KMutator m = {.arena = c->a, .fn = {[KN_IF] = strip_if}, .user = &n};
  kir_mutate(&m, &copy);
  if (n.block.n + n.thread.n == 0 || n.never) return loop;
  /* the vote last: a block-uniform term false skips it in every thread alike */
  KExpr *cond = kx_bin(c->a, OP_AND, conjunction(c->a, &n.block), kx_block_all(c->a, conjunction(c->a, &n.thread)));
  KNode *ite = ARENA_NEW(c->a, KNode);
  ite->kind = KN_IF;
  ite->u.cond.cond = cond;
  for (int i = 0; i < copy.len; i++) kb_push(c->a, &ite->u.cond.then, copy.items[i]);
  kb_push(c->a, &ite->u.cond.otherwise, loop);
  return ite;
}

/* The outermost Unroll or Unswitch loop takes its whole nest: the walk does not go on
 * inside it (an inner one is part of that nest, as in nvFuser). */
static void on_loop(KMutator *m, KNode *n, KBlock *out) {
  if (!ir_ptype_shapes_loop(n->u.loop.pt)) {
    kir_mutate_children(m, n);
    kb_push(m->arena, out, n);
    return;
  }
  kb_push(m->arena, out, unswitch(m->user, n));
}

void lower_unswitch(LowerCtx *c) {
  KMutator m = {.arena = c->a, .fn = {[KN_FOR] = on_loop}, .user = c};
  kir_mutate(&m, &c->k->body);
}
