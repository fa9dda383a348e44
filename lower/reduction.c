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
 * the dtype table's accumulation type (ir_dtype_accumulate: float for half and bfloat16),
 * and serial reductions of such dtypes get the same register accumulator (no combine),
 * so nothing adds in 16 bits.
 * Grid reductions (block indices on reduction axes): after the block step (if any), one
 * thread of the reduced thread dimensions per kept place writes the block's partial to a
 * global work buffer at (group, block in group, place), the blocks count themselves on
 * their group's semaphore, and the last one folds every block's partial and stores the
 * result (the store becomes the node's tail; codegen/reduction.c). The last
 * block resets the semaphore, so the executor's buffers are reused run after run without
 * clearing. When the kernel reads the grid-reduced value elsewhere (grid persistence: a
 * batch norm's statistics over blocks of rows, normalizing the rows each block keeps),
 * the reduction is a grid all-reduce: after the partials, a grid sync, then every block
 * folds them (each thread of a group its own column of partials) and holds the result,
 * like a block all-reduce; the kernel then needs a cooperative launch (kir.h's grid_sem). */
#include "ir/dtype.h"
#include "lower/lower.h"

/* The thread (red[0..2]) and block (red[3..5]) dimensions a reduction's axes run on
 * (effective types); false if none. */
static bool reduced_dims(LowerCtx *c, const Expr *e, bool red[6]) {
  Val *tv = e->out[0];
  bool any = false;
  for (int d = 0; d < 6; d++) red[d] = false;
  for (int j = 0; j < TV(tv)->nloop; j++) {
    Val *id = TV(tv)->loop[j];
    cf_parallel_type p = lower_ptype(c, id);
    if (ID(id)->iter_type != CF_ITER_REDUCTION || !(ir_ptype_is_thread(p) || ir_ptype_is_block(p))) continue;
    red[p - CF_PT_TIDX] = true; /* TIDX TIDY TIDZ BIDX BIDY BIDZ are consecutive */
    any = true;
  }
  return any;
}

/* The type a reduction accumulates in: the dtype table's accumulation column (float for
 * half and bfloat16, also when its operand is an rfactor partial already in float). */
static cf_dtype acc_dtype(const Expr *e) { return ir_dtype_accumulate(e->out[0]->dtype); }


/* The op node an item of a block stands for: itself, or the op its predicate wraps. */
static KNode *item_op(KNode *n) {
  if (n->kind == KN_IF && n->u.cond.then.len == 1) n = n->u.cond.then.items[0];
  return n->kind == KN_OP ? n : NULL;
}

typedef struct Find {
  const Expr *e;
  KNode *found;
} Find;

static bool find_pre(KVisitor *v, KNode *n) {
  Find *f = v->user;
  if (n->u.op.src == f->e && !n->u.op.reduction_init) {
    f->found = n;
    v->stop = true;
  }
  return true;
}

/* The op accumulating reduction e in b (its initialization excluded), or NULL. */
static KNode *find_reduction_op(KBlock *b, const Expr *e) {
  Find f = {e, NULL};
  KVisitor v = {.pre = {[KN_OP] = find_pre}, .user = &f};
  kir_visit(&v, b);
  return f.found;
}

/* A serial reduction (no reduced thread or block dimension) of a floating dtype that
 * accumulates in a wider type (half, bfloat16) and whose reduction loop directly follows
 * its initialization (its reduction axes innermost): it gets the register accumulator of
 * a block reduction, without the cross-thread step, instead of adding into its output in
 * 16 bits. loop_nest.c refuses the other order for such dtypes. (Integers lose nothing in
 * their own type: max and min are exact, sums and products are int64 by the op's rule.) */
bool lower_widened_reduction(const Val *tv) {
  return ir_dtype_is_float(tv->dtype) && ir_dtype_accumulate(tv->dtype) != tv->dtype;
}

static bool widened_serial(const KBlock *b, int i, const Expr *e) {
  if (!lower_widened_reduction(e->out[0]) || i + 1 >= b->len || b->items[i + 1]->kind != KN_FOR) return false;
  return find_reduction_op(&b->items[i + 1]->u.loop.body, e) != NULL;
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

/* The lanes between neighbours of the one reduced thread dimension within a warp, when
 * warp shuffles can reduce it: only threadIdx.x, a constant multiple of 32 (stride 1), or
 * only threadIdx.y under a constant power-of-two blockDim.x below 32 with x * y whole
 * warps (stride blockDim.x: a warp holds 32 / bx rows of y for each x, a column
 * reduction's block). 0: the tree form. */
static int warp_stride(const LowerCtx *c, const bool red[3]) {
  int64_t bx, by;
  bool x = kx_is_const(c->pdim[CF_PT_TIDX], &bx), y = kx_is_const(c->pdim[CF_PT_TIDY], &by);
  if (red[0] && !red[1] && !red[2]) return x && bx % 32 == 0 ? 1 : 0;
  if (red[0] || !red[1] || red[2] || !x || !y || bx < 1 || bx >= 32 || (bx & (bx - 1)) || (bx * by) % 32) return 0;
  return (int)bx;
}

/* The lanes of a warp-local all-reduce: only threadIdx.x reduced, blockDim.x a constant
 * power of two from 2 to 32 and the block's threads whole warps (every lane of a warp
 * takes part in its shuffles). 0: none. */
static int warp_lanes(const LowerCtx *c, const bool red[3]) {
  int64_t d[3] = {1, 1, 1};
  if (!red[0] || red[1] || red[2]) return 0;
  for (int i = 0; i < 3; i++) {
    const KExpr *x = c->pdim[CF_PT_TIDX + i];
    if (x && !kx_is_const(x, &d[i])) return 0;
  }
  if (d[0] < 2 || d[0] > 32 || (d[0] & (d[0] - 1)) || (d[0] * d[1] * d[2]) % 32) return 0;
  return (int)d[0];
}

/* The block-reduce node: warp-local where a row lies within a warp (no workspace), else
 * the warp-shuffle form where warp_stride allows it, else the tree. */
static KNode *block_reduce(LowerCtx *c, const Expr *e, const char *var, cf_dtype dt, const bool red[6]) {
  KNode *n = acc_node(c, KN_BLOCK_REDUCE, e, var, dt);
  for (int d = 0; d < 3; d++) n->u.acc.reduce[d] = red[d];
  n->u.acc.lanes = warp_lanes(c, red);
  n->u.acc.warp_stride = n->u.acc.lanes ? 0 : warp_stride(c, red);
  n->u.acc.warp = n->u.acc.warp_stride > 0;
  if ((red[0] || red[1] || red[2]) && !n->u.acc.lanes) n->u.acc.ws = workspace(c, e, dt);
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

/* A buffer of `size` elements the executor passes as an extra kernel parameter. */
static KTensor *workspace_param(LowerCtx *c, const char *name, cf_dtype dt, KExpr *size) {
  KKernel *k = c->k;
  KTensor *t = ARENA_NEW(c->a, KTensor);
  t->name = name;
  t->fusion_tv_name = -1;
  t->mem = CF_MEM_GLOBAL;
  t->dtype = dt;
  t->param = k->nparams;
  t->is_workspace = true;
  t->rank = t->alloc_rank = 1;
  t->extents = ARENA_ARRAY(c->a, KExpr *, 1);
  t->extents[0] = size;
  t->broadcast = ARENA_ARRAY(c->a, bool, 1);
  t->contiguous = true;
  t->tmem_region = -1;
  KTensor **all = ARENA_ARRAY(c->a, KTensor *, k->nparams + 1);
  const char **names = ARENA_ARRAY(c->a, const char *, k->nparams + 1);
  for (int i = 0; i < k->nparams; i++) all[i] = k->params[i], names[i] = k->param_names[i];
  names[k->nparams] = name;
  all[k->nparams++] = t;
  k->params = all;
  k->param_names = names;
  return t;
}

/* `x` with its terms `blockIdx.p == 0` for the reduced block dimensions dropped: the last
 * block of a group stores the result, whichever it is. */
static KExpr *drop_block_guards(LowerCtx *c, KExpr *x, const bool grid[3]) {
  int64_t v;
  if (x->kind == KX_BINARY && x->op == OP_AND)
    return kx_bin(c->a, OP_AND, drop_block_guards(c, x->a, grid), drop_block_guards(c, x->b, grid));
  if (x->kind == KX_BINARY && x->op == OP_EQ && x->a->kind == KX_THREAD && !x->a->is_dim &&
      ir_ptype_is_block(x->a->pt) && grid[x->a->pt - CF_PT_BIDX] && kx_is_const(x->b, &v) && v == 0)
    return kx_const(c->a, 1);
  return x;
}

/* The tensor an item of a block computes, or NULL when it is not a (predicated) op. */
static Val *item_tv(KNode *n) {
  KNode *op = item_op(n);
  return op && !op->u.op.reduction_init && op->u.op.src ? op->u.op.src->out[0] : NULL;
}

static bool in_list(Val *const *list, int n, const Val *v) {
  for (int i = 0; i < n; i++)
    if (list[i] == v) return true;
  return false;
}

/* A grid reduction's value is complete only in the last block of its group, unless every
 * block folds the partials after a grid sync. The ops that directly follow the reduction
 * in its block (b->items from `first`), in Local or Global memory, reading only the value
 * and each other (the fields of Welford states, var_mean's division), can move into the
 * last block's tail when nothing else reads any of them: returns how many, or -1 when
 * something else reads them (the reduction then becomes a grid all-reduce). */
static int grid_readers(LowerCtx *c, const KBlock *b, int first, Val *tv) {
  int n = 0;
  Val **moved = ARENA_ARRAY(c->a, Val *, b->len + 1);
  moved[0] = tv;
  for (int i = first; i < b->len; i++) {
    Val *out = item_tv(b->items[i]);
    if (!out || (TV(out)->mem != CF_MEM_LOCAL && TV(out)->mem != CF_MEM_GLOBAL)) break;
    const Expr *e = out->def;
    bool reads_moved = false;
    for (int j = 0; j < e->nin; j++) reads_moved |= in_list(moved, n + 1, e->in[j]);
    if (!reads_moved) break;
    moved[++n] = out;
  }
  for (int k = 0; k <= n; k++)
    for (int u = 0; u < moved[k]->uses.len; u++) {
      Val *reader = ((Expr *)moved[k]->uses.items[u])->out[0];
      if (!in_list(moved, n + 1, reader)) return -1;
    }
  return n;
}

KTensor *lower_grid_semaphore(LowerCtx *c) {
  if (!c->k->grid_sem) c->k->grid_sem = workspace_param(c, "GS", CF_INT64, kx_const(c->a, 1));
  return c->k->grid_sem;
}

static void grid_parts(LowerCtx *c, const KNode *init, KNode *br, const bool red[6], bool all_blocks) {
  const Expr *e = init->u.op.src;
  Val *tv = e->out[0];
  /* Each iteration of the serial loops around the reduction has its own partials and
   * semaphores: otherwise a block could overwrite its partial of one iteration before the
   * last block of the previous one read it. */
  KExpr *iters = kx_const(c->a, 1), *iter = kx_const(c->a, 0);
  for (int j = 0; j < init->u.op.nloop; j++) {
    const KNode *l = init->u.op.loops[j];
    if (!l || !l->u.loop.var || ID(TV(tv)->loop[j])->iter_type == CF_ITER_REDUCTION) continue;
    iter = kx_bin(c->a, OP_ADD, kx_bin(c->a, OP_MUL, iter, l->u.loop.extent), l->u.loop.index);
    iters = kx_bin(c->a, OP_MUL, iters, l->u.loop.extent);
  }
  br->u.acc.iter = iter;
  KKernel *k = c->k;
  for (int d = 0; d < 3; d++) br->u.acc.grid[d] = red[3 + d];
  KExpr *blocks = kx_bin(c->a, OP_MUL, kx_bin(c->a, OP_MUL, kx_bin(c->a, OP_MUL, k->grid[0], k->grid[1]), k->grid[2]), iters);
  KExpr *threads = kx_bin(c->a, OP_MUL, kx_bin(c->a, OP_MUL, k->block[0], k->block[1]), k->block[2]);
  br->u.acc.work = workspace_param(c, arena_printf(c->a, "G%d", tv->name), br->u.acc.dtype,
                                   kx_bin(c->a, OP_MUL, blocks, threads));
  br->u.acc.all_blocks = all_blocks;
  if (all_blocks) {
    lower_grid_semaphore(c);
    return;
  }
  br->u.acc.sem = workspace_param(c, arena_printf(c->a, "S%d", tv->name), CF_UINT32, blocks);
  KTensor *flag = workspace(c, e, CF_UINT32);
  flag->name = arena_printf(c->a, "F%d", tv->name);
  flag->size = kx_const(c->a, 1);
  br->u.acc.flag = flag;
}

/* items[i] of b is the (possibly predicated) initialization of e; items[i + 1] its first
 * reduction loop. */
static void lower_one(LowerCtx *c, KBlock *b, int i, KNode *init, const bool red[6]) {
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
  if (!red[0] && !red[1] && !red[2] && !red[3] && !red[4] && !red[5]) { /* serial: no combine across threads */
    kb_insert(c->a, b, i + 2, guarded);
    return;
  }
  KNode *br = block_reduce(c, e, var, dt, red);
  kb_insert(c->a, b, i + 2, br);
  if (!red[3] && !red[4] && !red[5]) {
    kb_insert(c->a, b, i + 3, guarded);
    return;
  }
  int nread = grid_readers(c, b, i + 3, e->out[0]);
  grid_parts(c, init, br, red, nread < 0);
  if (nread < 0) { /* a grid all-reduce: every block stores and reads the value */
    kb_insert(c->a, b, i + 3, guarded);
    return;
  }
  kb_push(c->a, &br->u.acc.tail, guarded);
  for (int k = 0; k < nread; k++) {
    kb_push(c->a, &br->u.acc.tail, b->items[i + 3]);
    kb_remove(b, i + 3);
  }
  for (int k = 0; k < br->u.acc.tail.len; k++) { /* the last block stores, whichever it is */
    KNode *t = br->u.acc.tail.items[k];
    if (t->kind == KN_IF) t->u.cond.cond = drop_block_guards(c, t->u.cond.cond, br->u.acc.grid);
  }
}

/* ---- a widened serial reduction with iteration loops inside its reduction loops --------- */

/* The initialization at the bottom of a chain of loops (each holding the next alone), as
 * insert_init (loop_nest.c) builds it for a [rS, iS] order; NULL when n is not one. */
static KNode *chain_init(KNode *n) {
  while (n->kind == KN_FOR && n->u.loop.body.len == 1) n = n->u.loop.body.items[0];
  KNode *op = item_op(n);
  return op && op->u.op.reduction_init ? op : NULL;
}

/* A copy of the chain of loops (and the predicate) around the initialization, with `op`
 * at its bottom instead: the same loop variables, declared again in a sibling scope. */
static KNode *copy_chain(LowerCtx *c, const KNode *n, KNode *op) {
  if (n->kind == KN_OP) return op;
  KNode *m = ARENA_NEW(c->a, KNode);
  *m = *n;
  KBlock *body = n->kind == KN_FOR ? &m->u.loop.body : &m->u.cond.then;
  const KBlock *from = n->kind == KN_FOR ? &n->u.loop.body : &n->u.cond.then;
  *body = (KBlock){0};
  kb_push(c->a, body, copy_chain(c, from->items[0], op));
  return m;
}

/* The accumulator element of an op whose loops at the initialization's own loop positions
 * (own[j]) run the iteration axes inside the reduction loops: row-major over them. */
static KExpr *acc_index(LowerCtx *c, const KNode *op, KNode *const *own, const KExpr *const *ext) {
  KExpr *x = kx_const(c->a, 0);
  for (int j = 0; j < op->u.op.nloop; j++)
    if (own[j]) x = kx_bin(c->a, OP_ADD, kx_bin(c->a, OP_MUL, x, (KExpr *)ext[j]), op->u.op.loop_index[j]);
  return x;
}

/* items[i] of b is the chain of the initialization `init` of a half or bfloat16 reduction
 * whose reduction loop (items[i + 1]) holds serial iteration loops: the partial sums of
 * those iterations live in a local array of the accumulation type (A<n>, one element per
 * iteration, so the loops' extents must be constant), and after the reduction loop the
 * chain runs again to store each rounded sum into the output. */
static void lower_inner_iterations(LowerCtx *c, KBlock *b, int i, KNode *init, KNode *op) {
  const Expr *e = init->u.op.src;
  cf_dtype dt = acc_dtype(e);
  KNode **own = ARENA_ARRAY(c->a, KNode *, init->u.op.nloop + 1);
  const KExpr **ext = ARENA_ARRAY(c->a, const KExpr *, init->u.op.nloop + 1);
  int64_t size = 1, n;
  for (KNode *l = b->items[i]; l->kind == KN_FOR; l = l->u.loop.body.items[0])
    for (int j = 0; j < init->u.op.nloop; j++) {
      if (init->u.op.loops[j] != l) continue;
      if (!kx_is_const(l->u.loop.extent, &n))
        lower_fail(c, CF_ERR_UNSUPPORTED, "compile: %s accumulates its %s elements in %s, one per iteration of its "
                   "axis %d inside its reduction loops, which has a symbolic extent; reorder its reduction axes "
                   "innermost", TV(e->out[0])->display_name, cf_dtype_name(e->out[0]->dtype), cf_dtype_name(dt), j);
      own[j] = l;
      ext[j] = l->u.loop.extent;
      size *= n;
    }
  KTensor *acc = workspace(c, e, dt);
  acc->name = arena_printf(c->a, "A%d", e->out[0]->name);
  acc->mem = CF_MEM_LOCAL;
  acc->size = kx_const(c->a, size);
  KNode *store = ARENA_NEW(c->a, KNode);
  *store = *init;
  store->u.op.reduction_init = false;
  store->u.op.op = OP_SET;
  store->u.op.nin = 1;
  store->u.op.in[0] = (KAccess){.t = acc, .index = acc_index(c, init, own, ext)};
  init->u.op.out = store->u.op.in[0];
  init->u.op.out_dtype = dt;
  op->u.op.out = (KAccess){.t = acc, .index = acc_index(c, op, own, ext)};
  op->u.op.out_dtype = dt;
  kb_insert(c->a, b, i + 2, copy_chain(c, b->items[i], store));
}

/* The initialization chain at items[i] of a widened serial reduction with iteration loops
 * inside its reduction loop (items[i + 1]), and that loop's reduction op; false if not. */
static bool inner_iterations(KBlock *b, int i, KNode **init, KNode **op) {
  if (b->items[i]->kind != KN_FOR || i + 1 >= b->len || b->items[i + 1]->kind != KN_FOR) return false;
  *init = chain_init(b->items[i]);
  if (!*init || !lower_widened_reduction((*init)->u.op.src->out[0])) return false;
  *op = find_reduction_op(&b->items[i + 1]->u.loop.body, (*init)->u.op.src);
  return *op != NULL;
}

/* Lowers the block reductions initialized in b (b's own items: each initialization sits
 * right before its reduction loop). */
static void lower_block(LowerCtx *c, KBlock *b) {
  for (int i = 0; i < b->len; i++) {
    KNode *op = item_op(b->items[i]), *init, *rop;
    bool red[6];
    if (inner_iterations(b, i, &init, &rop)) {
      lower_inner_iterations(c, b, i, init, rop);
      i += 2; /* past the reduction loop and the store */
      continue;
    }
    if (op && op->u.op.reduction_init && (reduced_dims(c, op->u.op.src, red) || widened_serial(b, i, op->u.op.src))) {
      /* a reduction inlined into this one's loops (a producer computed at a consumer's
       * reduction axis: an rfactor partial at its final reduction) is lowered when the
       * visitor enters the loop (on_loop), as every loop's body is */
      lower_one(c, b, i, op, red);
      i += 2; /* past the loop and the block reduce (and the store, after a block reduce) */
    }
  }
}

/* Each loop's body is lowered before the walk enters it (the walk then sees what was
 * inserted). */
static bool on_loop(KVisitor *v, KNode *n) {
  lower_block(v->user, &n->u.loop.body);
  return true;
}

void lower_reduction(LowerCtx *c) {
  lower_block(c, &c->k->body);
  KVisitor v = {.pre = {[KN_FOR] = on_loop}, .user = c, .arena = c->a};
  kir_visit(&v, &c->k->body);
}
