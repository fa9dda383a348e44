/* lower/reduction.c: pass "reduction", after the predicate pass. Turns reductions whose
 * reduction axes run on thread indices into block reductions.
 *
 * Requires: ops indexed and predicated; each reduction's initialization op (possibly
 * wrapped in its predicate) right before its first reduction loop (loop_nest.c).
 * Establishes, for each such reduction: a register accumulator declared where the
 * initialization was (KN_ACC_DECL, never predicated, so every thread holds a defined
 * value), the reduction op accumulating into it, then after the reduction loops a
 * KN_BLOCK_REDUCE across the reduced thread dimensions and the store of the accumulator
 * into the output under the initialization's predicate; plus a shared workspace of
 * blockDim.x*y*z elements per block reduction, counted in the launch's shared memory by
 * the smem_layout pass.
 * Key decisions: each thread first reduces its serial reduction axes into its register
 * (the per-thread partial nvFuser gets from rFactor), then one combine runs across the
 * threads, so serial and thread-parallel reduction axes mix freely in one reduction.
 * The combine is an all-reduce: every thread of a group ends with the result, so a
 * consumer may read it on any thread (the basis of persistent normalization), and the
 * initialization's predicate (which holds `threadIdx.p == 0` for the reduced dimensions
 * of a shared or global output) picks the one thread that stores it. The accumulator has
 * the reduction's compute type (float for half and bfloat16). Grid reductions (block
 * indices on reduction axes) are refused by the parallel_dims pass. */
#include "ir/dtype.h"
#include "lower/lower.h"

/* The thread dimensions a reduction's axes run on (effective types); false if none. */
static bool reduced_dims(LowerCtx *c, const Expr *e, bool red[3]) {
  Val *tv = e->out[0];
  bool any = false;
  red[0] = red[1] = red[2] = false;
  for (int j = 0; j < TV(tv)->nloop; j++) {
    Val *id = TV(tv)->loop[j];
    cf_parallel_type p = lower_ptype(c, id);
    if (ID(id)->iter_type != CF_ITER_REDUCTION || !ir_ptype_is_thread(p)) continue;
    red[p - CF_PT_TIDX] = true;
    any = true;
  }
  return any;
}

/* The type a reduction computes in (what emit.c's compute type gives its op). */
static cf_dtype acc_dtype(const Expr *e) {
  cf_dtype i = e->in[0]->dtype, o = e->out[0]->dtype;
  if (i == CF_DOUBLE || o == CF_DOUBLE) return CF_DOUBLE;
  if (ir_dtype_is_float(i) || ir_dtype_is_float(o)) return CF_FLOAT;
  return CF_INT64;
}

/* The op node an item of a block stands for: itself, or the op its predicate wraps. */
static KNode *item_op(KNode *n) {
  if (n->kind == KN_IF && n->u.cond.then.len == 1) n = n->u.cond.then.items[0];
  return n->kind == KN_OP ? n : NULL;
}

static KNode *find_reduction_op(KBlock *b, const Expr *e) {
  for (int i = 0; i < b->len; i++) {
    KNode *n = b->items[i], *found = NULL;
    if (n->kind == KN_OP && n->u.op.src == e && !n->u.op.reduction_init) return n;
    if (n->kind == KN_FOR) found = find_reduction_op(&n->u.loop.body, e);
    if (n->kind == KN_IF) found = find_reduction_op(&n->u.cond.then, e);
    if (found) return found;
  }
  return NULL;
}

static KTensor *workspace(LowerCtx *c, const Expr *e, cf_dtype dt) {
  KKernel *k = c->k;
  KTensor *ws = ARENA_NEW(c->a, KTensor);
  ws->name = arena_printf(c->a, "W%d", e->out[0]->name);
  ws->fusion_tv_name = -1;
  ws->mem = CF_MEM_SHARED;
  ws->dtype = dt;
  ws->param = -1;
  ws->tmem_region = -1;
  ws->size = kx_bin(c->a, OP_MUL, kx_bin(c->a, OP_MUL, k->block[0], k->block[1]), k->block[2]);
  KTensor **all = ARENA_ARRAY(c->a, KTensor *, k->nallocs + 1);
  for (int i = 0; i < k->nallocs; i++) all[i] = k->allocs[i];
  all[k->nallocs++] = ws;
  k->allocs = all;
  return ws;
}

static KNode *acc_node(LowerCtx *c, KnKind kind, const Expr *e, const char *var, cf_dtype dt) {
  KNode *n = ARENA_NEW(c->a, KNode);
  n->kind = kind;
  n->u.acc.var = var;
  n->u.acc.dtype = dt;
  n->u.acc.op = e->op;
  return n;
}

/* The block-reduce node; the warp-shuffle form when only threadIdx.x is reduced and its
 * extent is a constant multiple of 32 (whole warps). */
static KNode *block_reduce(LowerCtx *c, const Expr *e, const char *var, cf_dtype dt, const bool red[3]) {
  KNode *n = acc_node(c, KN_BLOCK_REDUCE, e, var, dt);
  int64_t bx;
  for (int d = 0; d < 3; d++) n->u.acc.reduce[d] = red[d];
  n->u.acc.warp = red[0] && !red[1] && !red[2] && kx_is_const(c->pdim[CF_PT_TIDX], &bx) && bx % 32 == 0;
  n->u.acc.ws = workspace(c, e, dt);
  return n;
}

/* The conjunction `cond` without its terms on the reduced thread dimensions. */
static KExpr *without_reduced_dims(LowerCtx *c, KExpr *cond, const bool red[3]) {
  if (cond->kind == KX_BINARY && cond->op == OP_AND) {
    KExpr *x = without_reduced_dims(c, cond->a, red), *y = without_reduced_dims(c, cond->b, red);
    int64_t v;
    if (kx_is_const(x, &v) && v) return y;
    if (kx_is_const(y, &v) && v) return x;
    return kx_bin(c->a, OP_AND, x, y);
  }
  for (int d = 0; d < 3; d++)
    if (red[d] && kx_uses_thread(cond, (cf_parallel_type)(CF_PT_TIDX + d))) return kx_const(c->a, 1);
  return cond;
}

/* Which threads store the all-reduced value: the initialization's predicate picks them
 * for a shared or global output (index 0 of the reduced dimensions). A local output is
 * each thread's own copy, and every thread of the reduced dimensions holds the result,
 * also those beyond the reduction axis' extent (a block wider than the axis), which
 * consumers on other axes of that thread type read: its bounds on the reduced dimensions
 * are dropped. */
static KExpr *store_predicate(LowerCtx *c, const Expr *e, KExpr *init_cond, const bool red[3]) {
  if (TV(e->out[0])->mem != CF_MEM_LOCAL) return init_cond;
  return without_reduced_dims(c, init_cond, red);
}

/* items[i] of b is the (possibly predicated) initialization of e; items[i + 1] its first
 * reduction loop. */
static void lower_one(LowerCtx *c, KBlock *b, int i, KNode *init, const bool red[3]) {
  const Expr *e = init->u.op.src;
  if (i + 1 >= b->len || b->items[i + 1]->kind != KN_FOR)
    lower_fail(c, CF_ERR_INTERNAL, "internal error at %s:%d: the initialization of %s is not before its reduction "
               "loop; please report this bug", __FILE__, __LINE__, TV(e->out[0])->display_name);
  KNode *loop = b->items[i + 1], *op = find_reduction_op(&loop->u.loop.body, e);
  if (!op)
    lower_fail(c, CF_ERR_INTERNAL, "internal error at %s:%d: no reduction op of %s in its loop; please report this "
               "bug", __FILE__, __LINE__, TV(e->out[0])->display_name);
  cf_dtype dt = acc_dtype(e);
  const char *var = arena_printf(c->a, "a%d", e->out[0]->name);
  KNode *store = ARENA_NEW(c->a, KNode);
  *store = *init;
  store->u.op.reduction_init = false;
  store->u.op.op = OP_SET;
  store->u.op.nin = 1;
  store->u.op.in[0] = (KAccess){.var = var, .var_dtype = dt};
  KNode *guarded = store;
  KExpr *cond = b->items[i]->kind == KN_IF ? store_predicate(c, e, b->items[i]->u.cond.cond, red) : NULL;
  int64_t always;
  if (cond && !(kx_is_const(cond, &always) && always)) {
    guarded = ARENA_NEW(c->a, KNode);
    guarded->kind = KN_IF;
    guarded->u.cond.cond = cond;
    kb_push(c->a, &guarded->u.cond.then, store);
  }
  op->u.op.out = (KAccess){.var = var, .var_dtype = dt};
  op->u.op.out_dtype = dt;
  b->items[i] = acc_node(c, KN_ACC_DECL, e, var, dt);
  kb_insert(c->a, b, i + 2, block_reduce(c, e, var, dt, red));
  kb_insert(c->a, b, i + 3, guarded);
}

static void walk(LowerCtx *c, KBlock *b) {
  for (int i = 0; i < b->len; i++) {
    KNode *n = b->items[i], *op = item_op(n);
    bool red[3];
    if (op && op->u.op.reduction_init && reduced_dims(c, op->u.op.src, red)) {
      lower_one(c, b, i, op, red);
      i += 3; /* past the loop, the block reduce and the store */
      continue;
    }
    if (n->kind == KN_FOR) walk(c, &n->u.loop.body);
  }
}

void lower_reduction(LowerCtx *c) { walk(c, &c->k->body); }
