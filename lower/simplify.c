/* lower/simplify.c: the simplify pass. Rewrites every index, extent and condition of the
 * kernel with kx_simplify (kx_simplify.c) under the value ranges that hold where it is
 * evaluated, so that the generated arithmetic says what it computes and no more:
 * `((x / 8) / 4) / 2` is `x / 64`, a tile's `(blockIdx.y * 128 + r) % 128` is `r`, and a
 * bound the launch implies (`blockIdx.y < ceilDiv(n, 128)` where the grid's y extent is
 * that expression) is gone.
 *
 * Requires: the finished tree (indices, predicates, reductions, syncs, circular
 * buffering, MMA instructions, unswitched copies). Establishes: every KExpr a node holds
 * simplified; an if whose condition is decided replaced by the branch that runs.
 * The ranges: each thread and block index lies in [0, launch extent - 1] and below the
 * kernel's launch extent expression (k->block / k->grid, which the executor launches
 * exactly; an unused dimension is 1, so its index is 0), a launch extent is its value or
 * >= 1; a loop's variable lies in [0, extent - 1] and below its extent, within the loop
 * only; within an if's then branch, `leaf < bound` terms of its condition narrow the
 * leaf. Key decision: the pass runs last among the passes that build the tree, once, so
 * every rewrite the earlier ones made (circular buffering's stage offsets, ldmatrix row
 * addresses proven in mma) is simplified, and nothing downstream reads the shapes it
 * changes; launch dimensions and run-time checks are left as the executor evaluates them. */
#include "lower/lower.h"

typedef struct Simp {
  KxScope *s;
  KKernel *k;
} Simp;

static KExpr *S(Simp *p, KExpr *e) { return e ? kx_simplify(p->s, e) : NULL; }

static void access(Simp *p, KAccess *x) {
  x->index = S(p, x->index);
  x->lane = S(p, x->lane);
  x->col = S(p, x->col);
  x->scalar_expr = S(p, x->scalar_expr);
  x->along_stride = S(p, x->along_stride);
  x->along_extent = S(p, x->along_extent);
}

static void accesses(Simp *p, KAccess *x, int n) {
  for (int i = 0; i < n; i++) access(p, &x[i]);
}

/* ---- scopes -------------------------------------------------------------------------------- */

/* The launch's ranges, for the whole kernel (kx_scope_push_launch over its grid and block). */
static void push_launch(Simp *p) {
  KExpr *dims[CF_PT_COUNT] = {0};
  for (int pt = CF_PT_TIDX; pt <= CF_PT_BIDZ; pt++) {
    int d = ir_ptype_launch_dim((cf_parallel_type)pt);
    dims[pt] = ir_ptype_is_block((cf_parallel_type)pt) ? p->k->grid[d] : p->k->block[d];
  }
  kx_scope_push_launch(p->s, dims);
}

/* A serial loop's variable within its body: [0, extent - 1], below the extent. */
static int push_loop(Simp *p, KNode *n) {
  int64_t lo, hi;
  if (!n->u.loop.var) return 0;
  kx_range(p->s, n->u.loop.extent, &lo, &hi);
  if (hi < 1) return 0; /* the body never runs: nothing to assume */
  kx_scope_push(p->s, n->u.loop.index, 0, hi == INT64_MAX ? hi : hi - 1, n->u.loop.extent);
  return 1;
}

/* The then branch's ranges: each `leaf < bound` term of the condition's conjunction. */
static int push_condition(Simp *p, const KExpr *c) {
  if (c->kind == KX_BINARY && c->op == OP_AND) return push_condition(p, c->a) + push_condition(p, c->b);
  if (c->kind != KX_BINARY || c->op != OP_LT) return 0;
  const KExpr *x = c->a;
  if (x->kind != KX_VAR && !(x->kind == KX_THREAD && !x->is_dim)) return 0;
  int64_t lo, hi, blo, bhi;
  kx_range(p->s, x, &lo, &hi);
  kx_range(p->s, c->b, &blo, &bhi);
  if (bhi != INT64_MAX && bhi - 1 < hi) hi = bhi - 1;
  if (hi < lo) return 0; /* a branch that never runs */
  kx_scope_push(p->s, x, lo, hi, c->b);
  return 1;
}

static void pop(Simp *p, int n) {
  while (n-- > 0) kx_scope_pop(p->s);
}

/* ---- the nodes ------------------------------------------------------------------------------ */

static void on_loop(KMutator *m, KNode *n, KBlock *out) {
  Simp *p = m->user;
  n->u.loop.extent = S(p, n->u.loop.extent);
  int pushed = push_loop(p, n);
  kir_mutate_children(m, n);
  pop(p, pushed);
  kb_push(m->arena, out, n);
}

/* Whether a branch's nodes can stand in the enclosing block: none declares a name (an
 * accumulator), which the branch's braces scoped. */
static bool spliceable(const KBlock *b) {
  for (int i = 0; i < b->len; i++)
    if (b->items[i]->kind == KN_ACC_DECL) return false;
  return true;
}

static void on_if(KMutator *m, KNode *n, KBlock *out) {
  Simp *p = m->user;
  int64_t v;
  n->u.cond.cond = S(p, n->u.cond.cond);
  if (kx_is_const(n->u.cond.cond, &v)) {
    KBlock *taken = v ? &n->u.cond.then : &n->u.cond.otherwise;
    if (spliceable(taken)) {
      kir_mutate(m, taken);
      for (int i = 0; i < taken->len; i++) kb_push(m->arena, out, taken->items[i]);
      return;
    }
  }
  int pushed = push_condition(p, n->u.cond.cond);
  kir_mutate(m, &n->u.cond.then);
  pop(p, pushed);
  kir_mutate(m, &n->u.cond.otherwise);
  kb_push(m->arena, out, n);
}

static void on_op(KMutator *m, KNode *n, KBlock *out) {
  Simp *p = m->user;
  access(p, &n->u.op.out);
  accesses(p, n->u.op.in, n->u.op.nin);
  n->u.op.along_pos = S(p, n->u.op.along_pos);
  n->u.op.along_size = S(p, n->u.op.along_size);
  n->u.op.along_guard = S(p, n->u.op.along_guard);
  kb_push(m->arena, out, n);
}

static void on_tmem(KMutator *m, KNode *n, KBlock *out) {
  Simp *p = m->user;
  access(p, &n->u.tmem.reg);
  access(p, &n->u.tmem.tmem);
  kb_push(m->arena, out, n);
}

static void on_mma(KMutator *m, KNode *n, KBlock *out) {
  Simp *p = m->user;
  const IrMmaInstr *in = n->u.mma.instr;
  accesses(p, n->u.mma.acc, n->u.mma.nacc);
  accesses(p, n->u.mma.a, in->a.n);
  accesses(p, n->u.mma.b, in->b.n);
  for (int i = 0; i < in->a.n; i++) n->u.mma.a_mask[i] = S(p, n->u.mma.a_mask[i]);
  for (int i = 0; i < in->b.n; i++) n->u.mma.b_mask[i] = S(p, n->u.mma.b_mask[i]);
  for (int op = 0; op < 2; op++)
    if (n->u.mma.ldm[op]) access(p, &n->u.mma.ldm_row[op]);
  if (ir_mma_by_descriptor(in)) accesses(p, n->u.mma.desc_start, 2);
  n->u.mma.enable_d = S(p, n->u.mma.enable_d);
  kb_push(m->arena, out, n);
}

static void on_block_reduce(KMutator *m, KNode *n, KBlock *out) {
  Simp *p = m->user;
  n->u.acc.iter = S(p, n->u.acc.iter);
  kir_mutate_children(m, n);
  kb_push(m->arena, out, n);
}

void lower_simplify(LowerCtx *c) {
  Simp p = {kx_scope_new(c->a), c->k};
  push_launch(&p);
  KMutator m = {.arena = c->a, .user = &p};
  m.fn[KN_FOR] = on_loop;
  m.fn[KN_IF] = on_if;
  m.fn[KN_OP] = on_op;
  m.fn[KN_TMEM_LD] = m.fn[KN_TMEM_ST] = on_tmem;
  m.fn[KN_MMA] = on_mma;
  m.fn[KN_BLOCK_REDUCE] = on_block_reduce;
  kir_mutate(&m, &c->k->body);
}
