/* lower/circular_buffer.c: the circular_buffer pass. A shared tile T given S stages and a
 * prefetch distance D (1 .. S - 1; cf_circular_buffer's is S - 1) by
 * cf_circular_buffer[_prefetch] (scheduler/circular_buffer.c), written once per iteration
 * of its compute-at loop L (`for i { W: fill T; sync; read T; sync }`, the syncs placed by
 * the sync pass), becomes
 *   for s in 0..D-1: if (s < n) W[i := s] into stage s; commit
 *   for i { wait(D - 1); if (i + D < n) W[i := i + D] into stage (i + D) % S;
 *           commit; sync; read T from stage i % S; sync }
 * T's allocation grows to S tiles, the stage the outermost dimension. 16-byte vector copies
 * from global memory in W become cp.async (the commit and wait nodes are emitted only
 * then; other copies complete as they run); a zero-filling one (predicate.c) reads 0 bytes
 * from element 0 of its source where its bounds fail.
 * Requires: syncs (the sync pass judged the loop as written), before mma (the fragment
 * reads are the cast ops' reads of T, which get the stage offset here). Establishes: no
 * KN_OP of T outside its stages; KTensor.cb_slack = S - D.
 * Why it is correct with the syncs already there: W now writes stage (i + D) % S, last
 * read in iteration i + D - S = i - (S - D), which ended with its write-after-read sync
 * (the latest, when D = S - 1, iteration i - 1; with D = S - 2 a reader may still be
 * reading its stage after iteration i - 2 ended, up to the end of iteration i - 1: an
 * asynchronous wgmma waited for one iteration late, lower/mma_wgmma.c); the stage read in
 * iteration i was filled D iterations (or the prologue) before, its copies complete at the
 * wait (all but the D - 1 newest groups: those of iterations i + 1 .. i + D - 1) and
 * visible to all threads after the read-after-write sync that follows W.
 * Tiles filled one after the other in L share a group per iteration (one wait, one
 * commit); their prologues commit a group per tile and stage, which keeps every stage's
 * group older than the D - 1 newest at the wait that needs it.
 * Key decision: the pass moves the fill, it does not re-judge synchronization; it refuses
 * (naming the tile) a fill that is not one top-level statement of L's body reaching a sync
 * before any use of the tile, the shape the matmul schedule and every tile computed at a
 * loop have. */
#include <string.h>

#include "lower/lower.h"

/* What a fill and its copies are rewritten with. */
typedef struct Fill {
  LowerCtx *c;
  KTensor *t;
  const char *var;
  KExpr *val;   /* what the loop variable becomes (NULL: unchanged) */
  KExpr *stage; /* element offset of the stage written or read */
  KExpr *stage_no; /* the stage written (its mbarrier's index: TMA fills) */
  bool async;   /* some copy became cp.async */
  KNode *out_of; /* a prologue fill's loop L, which its ops no longer run in (else NULL) */
} Fill;

static void offset(Fill *w, KAccess *x) {
  if (w->val) x->index = kx_subst(w->c->a, x->index, w->var, w->val);
  if (x->t == w->t) x->index = kx_bin(w->c->a, OP_ADD, x->index, w->stage);
}

bool lower_copies_16_bytes_from_global(const KNode *n) {
  const KAccess *in = &n->u.op.in[0];
  return n->u.op.vector > 1 && n->u.op.nin == 1 && in->t && in->t->param >= 0 && in->t->mem == CF_MEM_GLOBAL &&
         n->u.op.vector * (int)cf_dtype_size(n->u.op.out_dtype) == 16 && in->t->dtype == n->u.op.out_dtype;
}

/* Rewrites the nodes of b: the loop variable substituted, T's accesses staged. */
static void rewrite(Fill *w, KBlock *b, bool fill) {
  Arena *a = w->c->a;
  for (int i = 0; i < b->len; i++) {
    KNode *n = b->items[i];
    if (n->kind == KN_FOR && w->val) n->u.loop.extent = kx_subst(a, n->u.loop.extent, w->var, w->val);
    if (n->kind == KN_IF && w->val) n->u.cond.cond = kx_subst(a, n->u.cond.cond, w->var, w->val);
    if (fill && n->kind == KN_TMA_LOAD) {
      for (int d = 0; d < KN_TMA_MAX_RANK; d++)
        if (n->u.tma.coord[d]) n->u.tma.coord[d] = kx_subst(a, n->u.tma.coord[d], w->var, w->val);
      offset(w, &n->u.tma.dst);
    }
    if (fill && (n->kind == KN_TMA_LOAD || n->kind == KN_MBAR_EXPECT_TX)) { /* the stage's barrier */
      KAccess *bar = n->kind == KN_TMA_LOAD ? &n->u.tma.bar : &n->u.mbar.bar;
      bar->index = kx_bin(a, OP_ADD, bar->index, w->stage_no);
    }
    if (n->kind == KN_OP) {
      if (w->val && n->u.op.zfill) n->u.op.zfill = kx_subst(a, n->u.op.zfill, w->var, w->val);
      /* an inlined producer's value is then read outside L, as its write was made */
      for (int j = 0; w->out_of && j < n->u.op.nloop; j++)
        if (n->u.op.loops[j] == w->out_of) n->u.op.loops[j] = NULL;
      offset(w, &n->u.op.out);
      for (int k = 0; k < n->u.op.nin; k++) offset(w, &n->u.op.in[k]);
      if (fill && n->u.op.out.t == w->t && lower_copies_16_bytes_from_global(n)) n->u.op.async = w->async = true;
      /* a zero-filling copy reads no byte where its bounds fail, but its source address is
       * still formed: element 0 there, always inside the tensor */
      if (n->u.op.async && n->u.op.zfill)
        n->u.op.in[0].index = kx_select(a, n->u.op.zfill, n->u.op.in[0].index, kx_const(a, 0));
    }
    KBlock *inner[KN_MAX_BLOCKS];
    int nb = kn_blocks(n, inner);
    for (int k = 0; k < nb; k++) rewrite(w, inner[k], fill);
  }
}

/* Finds the loop the tile's fill runs in: the write op's loop at T's compute-at position. */
typedef struct Find {
  KTensor *t;
  int ca;
  KNode *loop, *fill;   /* L and the top-level statement of its body holding the write */
  KBlock *parent;       /* the block holding L */
  int writes;
  KExpr *outer;         /* L's enclosing serial loops' iteration, linearized (NULL: none) */
  KNode *chain[LOWER_WS_MAX_OUTER]; /* those loops, outermost first, when nothing else encloses L */
  int nchain;           /* -1: L is enclosed by something else too (an if) */
} Find;

/* L's (path->node[d]'s) enclosing serial loops: their iteration linearized (a persistent
 * kernel's tile loop around the K loop), and whether they alone enclose it. */
static void enclosing_loops(Find *fd, const KPath *path, int d, Arena *a) {
  fd->outer = NULL, fd->nchain = 0;
  for (int k = 0; k < d; k++) {
    const KNode *o = path->node[k];
    if (o->kind == KN_FOR && !o->u.loop.var) continue; /* a thread-parallel loop: no iterations */
    if (o->kind != KN_FOR) {
      fd->nchain = -1;
      continue;
    }
    fd->outer = fd->outer ? kx_bin(a, OP_ADD, kx_bin(a, OP_MUL, fd->outer, o->u.loop.extent), o->u.loop.index)
                          : o->u.loop.index;
    if (fd->nchain >= 0 && fd->nchain < LOWER_WS_MAX_OUTER) fd->chain[fd->nchain++] = (KNode *)o;
    else fd->nchain = -1;
  }
}

static bool find_write(KVisitor *v, KNode *n) {
  Find *fd = v->user;
  if (n->u.op.out.t != fd->t || n->u.op.reduction_init) return true;
  fd->writes++;
  KNode *l = fd->ca >= 1 && fd->ca <= n->u.op.nloop ? n->u.op.loops[fd->ca - 1] : NULL;
  for (int d = 0; l && d + 1 < v->path.depth; d++)
    if (v->path.node[d] == l) {
      fd->loop = l, fd->parent = v->path.block[d], fd->fill = v->path.node[d + 1];
      enclosing_loops(fd, &v->path, d, v->arena);
    }
  return true;
}

/* Whether n reads or writes t. */
static bool mentions(KNode *n, const KTensor *t) {
  if (n->kind == KN_OP) {
    for (int k = 0; k < n->u.op.nin; k++)
      if (n->u.op.in[k].t == t) return true;
    return n->u.op.out.t == t;
  }
  KBlock *inner[KN_MAX_BLOCKS];
  int nb = kn_blocks(n, inner);
  for (int k = 0; k < nb; k++)
    for (int i = 0; i < inner[k]->len; i++)
      if (mentions(inner[k]->items[i], t)) return true;
  return false;
}

/* The fill at `at` reaches a __syncthreads of the body before anything uses the tile. */
static bool synced_after(const KBlock *body, int at, const KTensor *t) {
  for (int i = at + 1; i < body->len; i++) {
    if (body->items[i]->kind == KN_SYNC) return true;
    if (mentions(body->items[i], t)) return false;
  }
  return false;
}

/* Every tensor the fill writes besides the tile (an inlined producer) is read only inside
 * the fill: moved to iteration i + S - 1, it must not feed anything of iteration i. */
static bool self_contained(KNode *fill, const KBlock *body, const KTensor *t) {
  if (fill->kind == KN_OP) {
    const KTensor *o = fill->u.op.out.t;
    for (int i = 0; o && o != t && i < body->len; i++)
      if (mentions(body->items[i], o)) return false;
    return true;
  }
  KBlock *inner[KN_MAX_BLOCKS];
  int nb = kn_blocks(fill, inner);
  for (int k = 0; k < nb; k++)
    for (int i = 0; i < inner[k]->len; i++)
      if (!self_contained(inner[k]->items[i], body, t)) return false;
  return true;
}

KNode *lower_async_node(LowerCtx *c, KnKind kind, int pending) {
  KNode *n = lower_node(c, kind);
  n->u.async.pending = pending;
  return n;
}

/* After a TMA fill at pos: the readers of iteration i wait for stage i % S's phase
 * (i / S) % 2 (its (i / S)-th fill) on its barrier. The __syncthreads the sync pass put
 * after the fills goes when every fill before it is TMA: the barrier's wait orders the
 * boxes' writes before the reads, and makes them visible (the async proxy wrote them, as
 * the wgmma reads them: no fence either). */
static void tma_wait(LowerCtx *c, KBlock *body, int pos, KNode *fill, KExpr *i, KExpr *S) {
  Arena *a = c->a;
  KNode *w = lower_node(c, KN_MBAR_WAIT);
  w->u.mbar.bar = (KAccess){.t = fill->u.cond.then.items[0]->u.mbar.bar.t, .index = kx_bin(a, OP_MOD, i, S)};
  w->u.mbar.parity = kx_bin(a, OP_MOD, kx_bin(a, OP_DIV, i, S), kx_const(a, 2));
  kb_insert(a, body, pos, w);
  for (int j = 0; j < body->len; j++) {
    if (body->items[j]->kind == KN_SYNC) {
      if (!body->items[j]->u.sync.grid) kb_remove(body, j);
      return;
    }
    if (!lower_tma_only(body->items[j], NULL)) return;
  }
}

static void buffer(LowerCtx *c, Val *tv) {
  int S = TV(tv)->cb_stages, D = TV(tv)->cb_prefetch; /* both set by cf_circular_buffer_prefetch */
  Find fd = {.t = c->info[tv->id].kt, .ca = TV(tv)->ca_pos};
  KVisitor v = {.pre = {[KN_OP] = find_write}, .user = &fd, .arena = c->a};
  kir_visit(&v, &c->k->body);
  KBlock *body = fd.loop ? &fd.loop->u.loop.body : NULL;
  int at = body ? kb_index_of(body, fd.fill) : -1;
  if (fd.writes != 1 || !fd.loop || !fd.loop->u.loop.var || at < 0 || !synced_after(body, at, fd.t))
    lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: %s cannot be circular-buffered: its fill must be one write in a "
               "serial loop at its compute-at position, followed by a __syncthreads", lower_tv_str(c, tv));
  kb_remove(body, at);
  bool alone = self_contained(fd.fill, body, fd.t);
  kb_insert(c->a, body, at, fd.fill);
  if (!alone)
    lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: %s cannot be circular-buffered: its fill writes a tensor that "
               "other statements of the loop read (inline that producer into the fill only)", lower_tv_str(c, tv));
  Arena *a = c->a;
  if (TV(tv)->tma_load) fd.fill = lower_tma_fill(c, tv, fd.fill, S); /* the elected thread's boxes */
  if (TV(tv)->ws_pt) { /* warp_specialize.c moves the fills to a producer later */
    if (c->ws.loop && (c->ws.loop != fd.loop || c->ws.stages != S || c->ws.prefetch != D || c->ws.pt != TV(tv)->ws_pt))
      lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: %s is warp-specialized unlike another tile of the kernel: "
                 "every tile of one producer circulates over one loop with the same stages, prefetch and thread "
                 "dimension", lower_tv_str(c, tv));
  }
  const char *var = fd.loop->u.loop.var;
  KExpr *n_iter = fd.loop->u.loop.extent, *tile = fd.t->size, *ahead = kx_const(a, D), *vs = kx_var(a, var);
  KExpr *Sx = kx_const(a, S);
  /* a TMA tile's barriers count the iterations of L's enclosing loops too: base + i */
  KExpr *base = TV(tv)->tma_load && fd.outer ? kx_bin(a, OP_MUL, fd.outer, n_iter) : NULL;
  if (TV(tv)->ws_pt) {
    c->ws.loop = fd.loop, c->ws.parent = fd.parent, c->ws.stages = S, c->ws.prefetch = D, c->ws.pt = TV(tv)->ws_pt;
    c->ws.base = base, c->ws.nchain = fd.nchain;
    for (int k = 0; k < fd.nchain; k++) c->ws.chain[k] = fd.chain[k];
  }
  KExpr *count = base ? kx_bin(a, OP_ADD, base, vs) : vs;
  /* reads in the loop: stage i % S */
  Fill r = {c, fd.t, var, NULL, kx_bin(a, OP_MUL, kx_bin(a, OP_MOD, count, Sx), tile), kx_bin(a, OP_MOD, count, Sx), false, NULL};
  KNode *fill = fd.fill;
  kb_remove(body, at);
  rewrite(&r, body, false);
  /* the fill of iteration i + D, in stage (i + D) % S */
  KExpr *next = kx_bin(a, OP_ADD, vs, ahead), *next_count = base ? kx_bin(a, OP_ADD, base, next) : next;
  Fill w = {c, fd.t, var, next, kx_bin(a, OP_MUL, kx_bin(a, OP_MOD, next_count, Sx), tile), kx_bin(a, OP_MOD, next_count, Sx), false, NULL};
  KNode *in_loop = kir_clone(a, fill);
  KBlock one = {0};
  kb_push(a, &one, in_loop);
  rewrite(&w, &one, true);
  int pos = at;
  /* a tile filled just before joins that fill's group (one wait, one commit per iteration) */
  if (w.async && pos > 0 && body->items[pos - 1]->kind == KN_ASYNC_COMMIT) kb_remove(body, --pos);
  else if (w.async) kb_insert(a, body, pos++, lower_async_node(c, KN_ASYNC_WAIT, D - 1));
  kb_insert(a, body, pos++, lower_if(c, kx_bin(a, OP_LT, next, n_iter), in_loop));
  if (w.async) kb_insert(a, body, pos, lower_async_node(c, KN_ASYNC_COMMIT, 0));
  if (TV(tv)->tma_load) tma_wait(c, body, pos, fill, count, Sx);
  /* the prologue: stages 0 .. D - 1 (base .. base + D - 1) */
  int lp = kb_index_of(fd.parent, fd.loop);
  for (int s = 0; s < D; s++) {
    KExpr *no = base ? kx_bin(a, OP_MOD, kx_bin(a, OP_ADD, base, kx_const(a, s)), Sx) : kx_const(a, s);
    Fill p = {c, fd.t, var, kx_const(a, s), kx_bin(a, OP_MUL, no, tile), no, false, fd.loop};
    KBlock pb = {0};
    kb_push(a, &pb, kir_clone(a, fill));
    rewrite(&p, &pb, true);
    kb_insert(a, fd.parent, lp++, lower_if(c, kx_bin(a, OP_LT, kx_const(a, s), n_iter), pb.items[0]));
    if (w.async) kb_insert(a, fd.parent, lp++, lower_async_node(c, KN_ASYNC_COMMIT, 0));
  }
  if (w.async) kb_insert(a, fd.parent, lp + 1, lower_async_node(c, KN_ASYNC_WAIT, 0)); /* nothing left in flight */
  fd.t->size = kx_bin(a, OP_MUL, tile, Sx);
  fd.t->cb_slack = S - D;
}

void lower_circular_buffer(LowerCtx *c) {
  for (int i = 0; i < c->ntvs; i++) {
    Val *tv = c->tvs[i];
    char why[512];
    if (!TV(tv)->cb_stages) continue;
    if (!sched_cb_check(c->f, tv, TV(tv)->cb_stages, TV(tv)->cb_prefetch, why, sizeof why))
      lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: %s", why);
    buffer(c, tv);
  }
}
