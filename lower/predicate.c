/* lower/predicate.c: the predicate pass. Guards each op with the predicate it needs, and only that:
 * the bounds of non-divisible splits and of threads beyond a tensor's extent on a
 * parallel dimension, and `threadIdx == 0` for shared or global writes that threads of
 * an unused parallel dimension would repeat.
 *
 * Requires: ops with their bound terms (index < extent) from the index pass. Establishes:
 * ops that need a predicate are wrapped in a KN_IF whose condition is the conjunction of
 * the write guard's terms (`threadIdx.p == 0`) and the bound terms (`index < extent`), in
 * that order: the unswitch pass reads those terms back from the condition. The fill of a
 * circular-buffered shared tile (a move or cast) instead keeps its bound terms as its
 * zfill, writing zeros where they fail (its write guard stays an if), and marks the tile
 * zero_filled: every element of every stage is written, so a reader of the tile (the mma
 * pass) needs no mask of its own. A vector op with a tail (lower/vectorize.c) whose guard,
 * its last lane's bounds, may fail becomes `if (guard) { vector } else { its lanes one by
 * one, each under its own bounds }`: the unswitch pass hoists both alike, so a tile inside
 * the tensor runs the vector alone.
 * Key decision: the range analysis (lower/kx_range.c) proves terms true and drops them:
 * every loop variable of constant extent lies in [0, extent), every thread index of a
 * constant launch dimension in [0, dimension). A divisible schedule of concrete sizes thus
 * gets no predicate at all. Tensor-memory accesses are
 * warp-collective and are never predicated (their indices stay in their allocation). */
#include <string.h>

#include "lower/lower.h"

/* A bound term the ranges prove true (lower/kx_range.c: each loop variable of constant
 * extent in [0, extent - 1] within its loop, each thread index of a constant launch
 * dimension in [0, dimension - 1]). */
static bool provably_true(KxScope *s, const KExpr *term) {
  int64_t lo, hi;
  kx_range(s, term, &lo, &hi);
  return lo > 0 || hi < 0;
}

/* threadIdx.p == 0 for each used thread dimension the output does not span, when the
 * output is shared by threads (shared or global memory). */
bool lower_write_guarded(const LowerCtx *c, const Val *tv, cf_parallel_type p) {
  cf_memory_type m = TV((Val *)tv)->mem;
  int64_t ext;
  /* tensor-memory accesses are warp-collective: never predicated */
  if (m == CF_MEM_TENSOR || !c->pdim[p] || !ir_mem_shared_across(m, p)) return false;
  return !(kx_is_const(c->pdim[p], &ext) && ext == 1);
}

bool lower_write_spans(const KNode *op, cf_parallel_type p) {
  const KAccess *o = &op->u.op.out;
  if (!o->t || o->var) return true; /* a register of each thread (a reduction's accumulator) */
  return kx_uses_thread(o->index, p) || kx_uses_thread(o->lane, p) || kx_uses_thread(o->col, p);
}

/* A block reduction over p (reduction.c splits it into a per-thread accumulation, the
 * all-reduce and the write): every index of p takes part, none may be guarded off, and
 * every one reads its inputs (only the result's store may be one thread's). */
bool lower_reduces_over(const KNode *op, cf_parallel_type p) {
  if (ir_op_kind(op->u.op.src->op) != OPK_REDUCTION || op->u.op.reduction_init) return false;
  Val *out = op->u.op.src->out[0];
  for (int j = 0; j < op->u.op.nloop && j < TV(out)->nloop; j++) {
    const KNode *l = op->u.op.loops[j];
    /* A loop on p over one of the output's iteration or broadcast axes (a loop shared
     * with a consumer) does not combine across p: only a reduction axis does. */
    if (l && l->u.loop.pt == p && ID(TV(out)->loop[j])->iter_type == CF_ITER_REDUCTION) return true;
  }
  return false;
}

/* The launch types (a bit each) op's read indices use; the rest of its value's dependences
 * is the uniformity analysis' (analysis/uniformity.c). */
static unsigned reads_on(const KNode *op) {
  unsigned m = 0;
  for (int i = 0; i < op->u.op.nin; i++)
    for (int p = CF_PT_TIDX; p <= CF_PT_BIDZ; p++) {
      const KAccess *a = &op->u.op.in[i];
      if (kx_uses_thread(a->index, p) || kx_uses_thread(a->lane, p) || kx_uses_thread(a->col, p)) m |= 1u << p;
    }
  return m;
}

static unsigned value_varies(const LowerCtx *c, const KNode *op) {
  return an_value_varies(&c->model, &c->uniform, op->u.op.src, reads_on(op));
}

/* A write done by index 0 of p alone must store what every index of p would: refused when
 * the value depends on p (a broadcast inlined into a loop promoted onto p, or computed
 * from one: each thread needs its own element, the buffer has one for all). */
static void check_value_uniform(LowerCtx *c, const KNode *op, cf_parallel_type p) {
  if (!(value_varies(c, op) & (1u << p))) return;
  Val *tv = op->u.op.src->out[0];
  lower_fail(c, CF_ERR_INVALID_SCHEDULE,
             "compile: %s is in %s memory and holds one element for all of %s, but each index of %s computes a "
             "different one; give %s an axis on %s or put it in local memory", TV(tv)->display_name,
             cf_memory_type_name(TV(tv)->mem), cf_parallel_type_name(p), cf_parallel_type_name(p), TV(tv)->display_name,
             cf_parallel_type_name(p));
}

static KExpr *redundancy_guard(LowerCtx *c, const KNode *op) {
  Val *tv = op->u.op.src->out[0];
  KExpr *g = kx_const(c->a, 1);
  for (int p = CF_PT_TIDX; p <= CF_PT_BIDZ; p++) {
    if (!lower_write_guarded(c, tv, (cf_parallel_type)p)) continue;
    /* The write spans p when where it writes depends on p; an op that runs in a loop on
     * p but writes one place for all its indices (a broadcast inlined into a parallel
     * loop) is done by index 0 alone. */
    bool spans = lower_write_spans(op, (cf_parallel_type)p) || lower_reduces_over(op, (cf_parallel_type)p);
    if (!spans) check_value_uniform(c, op, (cf_parallel_type)p);
    if (!spans) g = kx_bin(c->a, OP_AND, g, kx_bin(c->a, OP_EQ, kx_thread(c->a, (cf_parallel_type)p, false), kx_const(c->a, 0)));
  }
  return g;
}

/* Records the op in the uniformity analysis: its value's dependences and the launch types
 * its write place spells out. */
static void record_varies(LowerCtx *c, const KNode *op) {
  unsigned spans = 0;
  for (int p = CF_PT_TIDX; p <= CF_PT_BIDZ; p++)
    if (lower_write_spans(op, (cf_parallel_type)p)) spans |= 1u << p;
  an_uniformity_record(&c->uniform, op->u.op.src, value_varies(c, op), spans);
}

/* Whether bound term i of op is needed: not a repeat of an earlier one, not proven true,
 * not implied by another term still kept (kx_implies.c). A term is dropped only for one
 * kept when it is decided, so each dropped term follows from the terms finally kept. */
static bool term_needed(KxScope *r, const KNode *op, const bool *kept, int i) {
  KExpr *t = op->u.op.bounds[i];
  for (int j = 0; j < i; j++)
    if (kx_equal(t, op->u.op.bounds[j])) return false;
  if (provably_true(r, t)) return false;
  for (int j = 0; j < op->u.op.nbounds; j++)
    if (j != i && kept[j] && !kx_equal(t, op->u.op.bounds[j]) && kx_implies(r, op->u.op.bounds[j], t)) return false;
  return true;
}

/* The bound terms of op that term_needed keeps, conjoined onto p in their order. */
static KExpr *bounds_of(LowerCtx *c, KxScope *r, const KNode *op, KExpr *p) {
  int n = op->u.op.nbounds;
  bool *kept = ARENA_ARRAY(c->a, bool, n);
  if (!kept) lower_fail(c, CF_ERR_OUT_OF_MEMORY, "compile: out of memory");
  for (int i = 0; i < n; i++) kept[i] = true;
  for (int i = 0; i < n; i++) kept[i] = term_needed(r, op, kept, i);
  for (int i = 0; i < n; i++)
    if (kept[i]) p = kx_bin(c->a, OP_AND, p, op->u.op.bounds[i]);
  return p;
}

/* The fill of a circular-buffered shared tile: a copy (a move of one tensor operand). It
 * writes zeros where its bounds fail instead of skipping them, so every element of each
 * stage is written every time and a reader may take the tile as zero-padded (the mma pass
 * drops the fragments' masks; cp.async reads 0 bytes there). */
static bool zero_fills(const KNode *op) {
  const Val *out = op->u.op.src->out[0];
  return TV((Val *)out)->cb_stages > 0 && TV((Val *)out)->mem == CF_MEM_SHARED && !op->u.op.reduction_init &&
         op->u.op.nin == 1 && op->u.op.in[0].t && ir_op_passes_operand(op->u.op.op);
}

/* The guard an op is wrapped in; a zero-filling op keeps its bounds as its zfill. */
static KExpr *predicate_of(LowerCtx *c, KxScope *r, KNode *op) {
  KExpr *g = redundancy_guard(c, op);
  if (!zero_fills(op)) return bounds_of(c, r, op, g);
  KExpr *z = bounds_of(c, r, op, kx_const(c->a, 1));
  int64_t v;
  op->u.op.out.t->zero_filled = true;
  if (kx_is_const(z, &v) && v) return g;
  op->u.op.zfill = z;
  return g;
}

static bool is_tmem_access(const KNode *op) {
  const Expr *e = op->u.op.src;
  return TV(e->out[0])->mem == CF_MEM_TENSOR || (e->nin > 0 && e->in[0]->kind == VAL_TV && TV(e->in[0])->mem == CF_MEM_TENSOR);
}

typedef struct PredWalk {
  LowerCtx *c;
  KxScope *r;
} PredWalk;

/* A loop of constant extent bounds its variable for the ops inside it. */
static void on_loop(KMutator *m, KNode *n, KBlock *out) {
  PredWalk *w = m->user;
  int64_t ext;
  bool pushed = n->u.loop.var && kx_is_const(n->u.loop.extent, &ext) && ext >= 1;
  if (pushed) kx_scope_push(w->r, n->u.loop.index, 0, ext - 1, NULL);
  kir_mutate_children(m, n);
  if (pushed) kx_scope_pop(w->r);
  kb_push(m->arena, out, n);
}

/* op under guard p: op itself when p is always true. */
static KNode *guarded(LowerCtx *c, KNode *op, KExpr *p) {
  int64_t v;
  if (!p || (kx_is_const(p, &v) && v)) return op;
  KNode *guard = ARENA_NEW(c->a, KNode);
  guard->kind = KN_IF;
  guard->u.cond.cond = p;
  kb_push(c->a, &guard->u.cond.then, op);
  return guard;
}

/* A vector op with a tail (lower/vectorize.c) where its guard may fail: the vector where
 * the guard (its last lane's bounds) holds, else its lanes one by one, each under its own:
 *   if (whole) { vector } else { for (l = 0; l < v; ++l) if (lane l's guard) element l } */
static KNode *with_tail(PredWalk *w, KNode *vec, KExpr *whole) {
  LowerCtx *c = w->c;
  KNode *loop = ARENA_NEW(c->a, KNode), *ite = ARENA_NEW(c->a, KNode);
  loop->kind = KN_FOR;
  loop->u.loop.pt = CF_PT_SERIAL;
  loop->u.loop.extent = kx_const(c->a, vec->u.op.vector);
  loop->u.loop.var = arena_printf(c->a, "i%d", c->next_var++);
  loop->u.loop.index = kx_var(c->a, loop->u.loop.var);
  KNode *lane = lower_vector_lane(c, vec, loop->u.loop.index);
  kx_scope_push(w->r, loop->u.loop.index, 0, vec->u.op.vector - 1, NULL);
  kb_push(c->a, &loop->u.loop.body, guarded(c, lane, predicate_of(c, w->r, lane)));
  kx_scope_pop(w->r);
  ite->kind = KN_IF;
  ite->u.cond.cond = whole;
  kb_push(c->a, &ite->u.cond.then, vec);
  kb_push(c->a, &ite->u.cond.otherwise, loop);
  return ite;
}

/* An op is replaced by its guard holding it, unless its predicate is always true. */
static void on_op(KMutator *m, KNode *n, KBlock *out) {
  PredWalk *w = m->user;
  LowerCtx *c = w->c;
  record_varies(c, n);
  KExpr *p = NULL;
  int64_t v;
  /* A tcgen05 load or store is warp-collective, so it is never predicated; it needs no
   * predicate either: its indices stay inside the tensor-memory allocation and its
   * register side, whatever the sizes, and the global accesses around it are guarded. */
  if (!is_tmem_access(n)) p = predicate_of(c, w->r, n);
  if (n->u.op.tail && p && !(kx_is_const(p, &v) && v)) kb_push(m->arena, out, with_tail(w, n, p));
  else kb_push(m->arena, out, guarded(c, n, p));
}

void lower_predicate(LowerCtx *c) {
  if (!an_uniformity_init(&c->uniform, c->a, c->f->vals.len)) lower_fail(c, CF_ERR_OUT_OF_MEMORY, "compile: out of memory");
  PredWalk w = {c, kx_scope_new(c->a)};
  kx_scope_push_launch(w.r, c->pdim); /* each thread index below its launch dimension */
  KMutator m = {.arena = c->a, .fn = {[KN_FOR] = on_loop, [KN_OP] = on_op}, .user = &w};
  kir_mutate(&m, &c->k->body);
}
