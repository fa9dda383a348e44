/* lower/warp_specialize.c: the warp_specialize pass. The loop L whose TMA tiles
 * cf_warp_specialize marked (recorded by circular_buffer.c in c->ws), in block P:
 *   P: [.., prologue fills (stages 0..D-1), L: for i { fill(i + D); wait full; read; (wgmma
 *       wait p;) sync }, ..]
 * becomes, with one more value Y of the producer's thread dimension (threadIdx.y):
 *   if (threadIdx.y >= Y) {            // the producer, concurrently with the else branch
 *     setmaxnreg 40;
 *     if (threadIdx.x == 0) for j { if (j >= S) wait empty[j % S] parity (j / S + 1) % 2;
 *                                   fill(j) }
 *   } else {                           // the readers: P without the fills and the sync
 *     setmaxnreg 232;
 *     .. for i { wait full; read; (wgmma wait p;) if (i >= p) arrive empty[(i - p) % S]; } ..
 *   }
 * Each stage has an empty barrier (`cf_empty`, one arrival a reader thread a phase): a
 * reader arrives once its reads of the stage are done (after the wgmma wait that retires
 * the group of iteration i - p, or after its reads; one arrival a warpgroup after the wait
 * would do for wgmma, and was measured slower on an H200: 4096^3 243 -> 255-262 us,
 * 8192^3 1690 -> 1786-1792; one a warp, lane 0 after its wait, too: 4096^3 213 -> 222,
 * 8192^3 1545 -> 1612, scheduler/matmul_mma.c), and the producer refills stage j % S only after
 * the readers released iteration j - S. The producer runs up to S stages ahead; the readers
 * wait only for full stages; no __syncthreads remains in the loop. setmaxnreg (CUTLASS's
 * and nvFuser's register reallocation) only with three warpgroups of 128 threads: the
 * producer keeps 40 registers a thread, each reader gets 232.
 * Requires: circular_buffer (the TMA fills and waits), mma (the wgmma groups' waits).
 * Establishes: c->pdim and k->block of the producer's dimension one larger.
 * Key decision: the readers keep every statement of P in order (the epilogue included),
 * so the pass moves fills and places releases; it refuses (naming the rule) readers that
 * synchronize the block otherwise: a __syncthreads or block reduction would wait for the
 * producer's threads, which never come. */
#include <string.h>

#include "lower/lower.h"

/* Whether n is a fill the circular buffer made: ifs around TMA loads and their expect_tx. */
static bool is_fill(const KNode *n) {
  bool loads = false;
  return n->kind == KN_IF && lower_tma_only(n, &loads) && loads;
}

/* The innermost block of a fill's ifs: its expect_tx and loads. */
static const KBlock *fill_body(const KNode *n) {
  while (n->u.cond.then.len == 1 && n->u.cond.then.items[0]->kind == KN_IF) n = n->u.cond.then.items[0];
  return &n->u.cond.then;
}

/* A block synchronization among the readers' statements. */
static const char *reader_sync(const KBlock *b) {
  for (int i = 0; i < b->len; i++) {
    const KNode *n = b->items[i];
    if (n->kind == KN_SYNC) return n->u.sync.grid ? "a grid sync" : "a __syncthreads";
    if (n->kind == KN_BLOCK_REDUCE) return "a block reduction";
    KBlock *inner[KN_MAX_BLOCKS];
    int nb = kn_blocks((KNode *)n, inner);
    for (int k = 0; k < nb; k++) {
      const char *why = reader_sync(inner[k]);
      if (why) return why;
    }
  }
  return NULL;
}

/* The last wgmma wait of L's body (its pending count: the iterations a release lags). */
static int release_lag(const KBlock *body, int *at) {
  *at = -1;
  for (int i = 0; i < body->len; i++)
    if (body->items[i]->kind == KN_WGMMA_WAIT) *at = i;
  return *at >= 0 ? body->items[*at]->u.async.pending : 0;
}

static KTensor *empty_barriers(LowerCtx *c, int stages, int64_t readers) {
  KKernel *k = c->k;
  KTensor *b = ARENA_NEW(c->a, KTensor);
  *b = (KTensor){.name = "cf_empty", .fusion_tv_name = -1, .mem = CF_MEM_SHARED, .dtype = CF_INT64, .param = -1,
                 .size = kx_const(c->a, stages), .tmem_region = -1};
  KTensor **all = ARENA_ARRAY(c->a, KTensor *, k->nallocs + 1);
  if (k->nallocs) memcpy(all, k->allocs, sizeof(KTensor *) * (size_t)k->nallocs);
  all[k->nallocs++] = b;
  k->allocs = all;
  KNode *init = k->body.len ? k->body.items[0] : NULL; /* tma.c's block of inits, at the kernel's start */
  if (!init || init->kind != KN_IF || !init->u.cond.then.len || init->u.cond.then.items[0]->kind != KN_MBAR_INIT)
    lower_fail(c, CF_ERR_INTERNAL, "internal error: warp_specialize found no mbarrier inits at the kernel's start; "
               "please report this bug");
  for (int s = 0; s < stages; s++) {
    KNode *i = lower_node(c, KN_MBAR_INIT);
    i->u.mbar.bar = (KAccess){.t = b, .index = kx_const(c->a, s)};
    i->u.mbar.value = readers;
    kb_push(c->a, &init->u.cond.then, i);
  }
  return b;
}

/* e with (x - c) + c folded to x: the fills, written for iteration i + D, at i = j - D. */
static KExpr *cancel(Arena *a, KExpr *e) {
  if (!e) return NULL;
  if (e->kind == KX_SELECT) return kx_select(a, cancel(a, e->a), cancel(a, e->b), cancel(a, e->c));
  if (e->kind != KX_BINARY) return e;
  int64_t u, v;
  if (e->op == OP_ADD && e->a->kind == KX_BINARY && e->a->op == OP_SUB && kx_is_const(e->b, &u) &&
      kx_is_const(e->a->b, &v) && u == v)
    return cancel(a, e->a->a);
  return kx_bin(a, e->op, cancel(a, e->a), cancel(a, e->b));
}

static KExpr *at_iteration(Arena *a, KExpr *e, const char *var, KExpr *at) { return cancel(a, kx_subst(a, e, var, at)); }

/* The producer's loop: for j { if (j >= S) wait empty; the fills of iteration j }. */
static KNode *producer_loop(LowerCtx *c, const KNode *L, KNode **fills, int nfills, KTensor *empty) {
  Arena *a = c->a;
  int S = c->ws.stages, D = c->ws.prefetch;
  KNode *loop = lower_node(c, KN_FOR);
  loop->u.loop = L->u.loop;
  loop->u.loop.body = (KBlock){0};
  loop->u.loop.var = arena_printf(a, "i%d", c->next_var++);
  loop->u.loop.index = kx_var(a, loop->u.loop.var);
  KExpr *j = loop->u.loop.index, *Sx = kx_const(a, S);
  KExpr *g = c->ws.base ? kx_bin(a, OP_ADD, c->ws.base, j) : j; /* the barriers' iteration */
  KNode *w = lower_node(c, KN_MBAR_WAIT);
  w->u.mbar.bar = (KAccess){.t = empty, .index = kx_bin(a, OP_MOD, g, Sx)};
  w->u.mbar.parity = kx_bin(a, OP_MOD, kx_bin(a, OP_ADD, kx_bin(a, OP_DIV, g, Sx), kx_const(a, 1)), kx_const(a, 2));
  kb_push(a, &loop->u.loop.body, lower_if(c, kx_bin(a, OP_GE, g, Sx), w));
  KExpr *at = kx_bin(a, OP_SUB, j, kx_const(a, D)); /* the loop's fills are of iteration i + D */
  for (int f = 0; f < nfills; f++) {
    const KBlock *b = fill_body(fills[f]);
    for (int i = 0; i < b->len; i++) {
      KNode *n = kir_clone(a, b->items[i]);
      KAccess *bar = n->kind == KN_TMA_LOAD ? &n->u.tma.bar : &n->u.mbar.bar;
      bar->index = at_iteration(a, bar->index, L->u.loop.var, at);
      if (n->kind == KN_TMA_LOAD) {
        n->u.tma.dst.index = at_iteration(a, n->u.tma.dst.index, L->u.loop.var, at);
        for (int d = 0; d < KN_TMA_MAX_RANK; d++) n->u.tma.coord[d] = at_iteration(a, n->u.tma.coord[d], L->u.loop.var, at);
      }
      kb_push(a, &loop->u.loop.body, n);
    }
  }
  return loop;
}

/* The producer's loop inside copies of L's enclosing loops from `outer` (c->ws.chain[0])
 * on, their variables kept (the fills' coordinates read them); `outer` L itself: alone. */
static KNode *around_chain(LowerCtx *c, const KNode *outer, KNode *producer) {
  if (outer == c->ws.loop) return producer;
  for (int k = c->ws.nchain - 1; k >= 0; k--) {
    KNode *o = lower_node(c, KN_FOR);
    o->u.loop = c->ws.chain[k]->u.loop;
    o->u.loop.body = (KBlock){0};
    kb_push(c->a, &o->u.loop.body, producer);
    producer = o;
  }
  return producer;
}

static KNode *setmaxnreg(LowerCtx *c, int64_t regs) {
  KNode *n = lower_node(c, KN_SETMAXNREG);
  n->u.mbar.value = regs;
  return n;
}

void lower_warp_specialize(LowerCtx *c) {
  KNode *L = c->ws.loop;
  if (!L) return;
  Arena *a = c->a;
  KBlock *P = c->ws.parent, *body = &L->u.loop.body;
  int S = c->ws.stages, lp = -1;
  KNode *fills[8];
  int nfills = 0;
  /* the readers' statements: P without the prologue's fills, L without its own */
  for (int i = 0; i < P->len; i++) {
    if (P->items[i] == L) lp = i;
    else if (lp < 0 && is_fill(P->items[i])) kb_remove(P, i--);
  }
  if (lp < 0) lower_fail(c, CF_ERR_INTERNAL, "internal error: warp_specialize lost its loop; please report this bug");
  for (int i = 0; i < body->len; i++)
    if (is_fill(body->items[i])) {
      if (nfills == 8) lower_fail(c, CF_ERR_UNSUPPORTED, "compile: more than 8 TMA fills in one warp-specialized loop");
      fills[nfills++] = body->items[i];
      kb_remove(body, i--);
    }
  if (!nfills)
    lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: the warp-specialized loop fills no tile by TMA");
  if (body->len && body->items[body->len - 1]->kind == KN_SYNC && !body->items[body->len - 1]->u.sync.grid)
    kb_remove(body, body->len - 1); /* the readers' release orders the refill instead (none: a loop of one) */
  /* where L's enclosing loops are serial loops alone (a persistent kernel's tile loop), the
   * split goes around them at the kernel's start: the producer runs its own copy of them */
  KNode *L0 = L;
  if (c->ws.nchain > 0 && kb_index_of(&c->k->body, c->ws.chain[0]) >= 2) P = &c->k->body, L0 = c->ws.chain[0];
  /* the readers: P's statements, but the barriers' init and its sync when P is the kernel's body */
  int keep = P == &c->k->body ? 2 : 0;
  KBlock readers = {0};
  for (int k = keep; k < P->len; k++) kb_push(a, &readers, P->items[k]);
  const char *why = reader_sync(&readers);
  if (why)
    lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: the loop cannot be warp-specialized: its readers have %s, which "
               "would wait for the producer's threads (they run the fills alone)", why);
  /* the producer: one more value of the thread dimension */
  cf_parallel_type pt = c->ws.pt;
  int64_t Y = 1, bx, bz; /* an unused dimension: the readers are its value 0 */
  if ((c->pdim[pt] && !kx_is_const(c->pdim[pt], &Y)) || !kx_is_const(c->pdim[CF_PT_TIDX] ? c->pdim[CF_PT_TIDX] : kx_const(a, 1), &bx) ||
      !kx_is_const(c->pdim[CF_PT_TIDZ] ? c->pdim[CF_PT_TIDZ] : kx_const(a, 1), &bz))
    lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: the loop cannot be warp-specialized: the block's size is not a "
               "constant");
  /* the readers release each stage once their reads of it are done */
  int at, lag = release_lag(body, &at);
  KTensor *empty = empty_barriers(c, S, bx * Y * bz);
  KExpr *i = c->ws.base ? kx_bin(a, OP_ADD, c->ws.base, L->u.loop.index) : L->u.loop.index;
  KNode *arrive = lower_node(c, KN_MBAR_ARRIVE);
  arrive->u.mbar.bar = (KAccess){.t = empty, .index = kx_bin(a, OP_MOD, kx_bin(a, OP_SUB, i, kx_const(a, lag)), kx_const(a, S))};
  kb_insert(a, body, at >= 0 ? at + 1 : body->len, lag ? lower_if(c, kx_bin(a, OP_GE, i, kx_const(a, lag)), arrive) : arrive);
  KNode *split = lower_node(c, KN_IF), *prod = lower_node(c, KN_IF);
  split->u.cond.cond = kx_bin(a, OP_GE, kx_thread(a, pt, false), kx_const(a, Y));
  split->u.cond.concurrent = true;
  bool regs = bx == 128 && Y == 2 && bz == 1; /* three warpgroups */
  if (regs) kb_push(a, &split->u.cond.then, setmaxnreg(c, -40));
  prod->u.cond.cond = kx_bin(a, OP_EQ, kx_thread(a, CF_PT_TIDX, false), kx_const(a, 0));
  kb_push(a, &prod->u.cond.then, around_chain(c, L0, producer_loop(c, L, fills, nfills, empty)));
  kb_push(a, &split->u.cond.then, prod);
  if (regs) kb_push(a, &split->u.cond.otherwise, setmaxnreg(c, 232));
  for (int k = 0; k < readers.len; k++) kb_push(a, &split->u.cond.otherwise, readers.items[k]);
  P->len = keep;
  kb_push(a, P, split);
  c->pdim[pt] = kx_const(a, Y + 1);
  c->k->block[pt == CF_PT_TIDX ? 0 : pt == CF_PT_TIDY ? 1 : 2] = c->pdim[pt];
}
