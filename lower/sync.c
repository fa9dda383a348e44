/* lower/sync.c: the sync pass. Inserts the block synchronizations the data flow needs:
 * a read-after-write __syncthreads before an op reads a shared- or tensor-memory tensor
 * that other threads wrote, and a write-after-read __syncthreads at the end of a serial
 * loop whose next iteration overwrites a buffer other threads are still reading.
 *
 * Global tensors written and read in the kernel (an output another op consumes) are
 * synchronized the same way within a block; where the read takes what other blocks wrote
 * (lower_reads_across_blocks) the sync is a grid sync (nvFuser's grid-wide sync, for
 * ValidateParallelize7's kind of schedule): every thread of every block waits there, so
 * the kernel needs a cooperative launch whose blocks are all resident at once (the
 * executor checks it), and the sync may not sit under a condition (refused: not every
 * thread would reach it).
 * Requires: predicated ops in their loop nest. Establishes: KN_SYNC nodes.
 * Key decision: a read needs a sync only if some thread dimension maps differently on
 * the two sides (the writer's axis on threadIdx.p is not exactly mapped to the reader's,
 * only one side uses p, the reader's index does not follow threadIdx.p although both run
 * in its loop, or the writer is thread 0 of p alone and the reader is not); then the sync goes into the innermost block enclosing both
 * the write and the read, right before the branch holding the read. Predicates wrap single
 * ops, so a sync never lands under a thread-dependent condition. Tensor memory is treated
 * like shared memory. */
#include <string.h>

#include "lower/lower.h"

/* The nodes from the kernel body down to an op (the visitor's path, kept for writers). */
typedef struct Path {
  KBlock **block; /* block[d] holds the node at depth d */
  KNode **node;   /* the ancestor (or the op itself) at depth d */
  int depth;
  const KNode *op; /* writers: the op that wrote */
} Path;

typedef struct Request {
  KBlock *block;
  KNode *before; /* insert before this node; NULL: append at the end */
  bool grid;     /* a grid sync: the write was made by other blocks */
} Request;

typedef struct SyncCtx {
  LowerCtx *c;
  Path **writer; /* by Val id: the path of the op that last writes the tensor */
  PtrVec requests;
} SyncCtx;

/* Whether the write of op's output spans pt, as the uniformity analysis recorded it
 * (predicate.c records every op in program order). */
static bool write_spans(LowerCtx *c, const KNode *op, int pt) {
  return an_write_spans(&c->uniform, op->u.op.src->out[0], (cf_parallel_type)pt);
}

/* Whether op runs on index 0 of pt alone (predicate.c's guard of a write that does not
 * span pt). A block reduction over pt is not: its result's store is thread 0's, but every
 * thread of pt reads and folds its own inputs (a sum over threadIdx.x of a shared tensor
 * that thread 0 wrote read it with no barrier before: a race on the GPU, random schedule
 * seed 46600500). */
static bool only_thread0(LowerCtx *c, const KNode *op, int pt) {
  if (lower_reduces_over(op, (cf_parallel_type)pt)) return false;
  return lower_write_guarded(c, op->u.op.src->out[0], (cf_parallel_type)pt) && !write_spans(c, op, pt);
}

/* The loop of op on thread type pt, or NULL when the op runs on no pt loop; *axis: the
 * axis of op's output that loop runs. */
static const KNode *thread_loop(const KNode *op, int pt, int *axis) {
  for (int j = 0; j < op->u.op.nloop; j++) {
    const KNode *l = op->u.op.loops[j];
    if (l && l->u.loop.pt == (cf_parallel_type)pt) return *axis = j, l;
  }
  return NULL;
}

/* Whether the writer's and the reader's pt loops run the positions of one domain: the
 * same loop, or loops over exactly mapped domains, each as the loop model reads it (a
 * loop that stands for a promoting tensor's axis runs that axis' positions). */
static bool same_thread_domain(LowerCtx *c, const KNode *wop, const KNode *wl, int wj, const KNode *rop,
                               const KNode *rl, int rj) {
  if (wl == rl) return true;
  Val *wv = wop->u.op.src->out[0], *rv = rop->u.op.src->out[0];
  Val *wd = wj < TV(wv)->nloop ? an_iterated_domain(&c->model, wv, wj) : wl->u.loop.concrete;
  Val *rd = rj < TV(rv)->nloop ? an_iterated_domain(&c->model, rv, rj) : rl->u.loop.concrete;
  return an_idmap_same(c->model.exact, wd, rd);
}

/* Whether every access of op to tensor p indexes it by threadIdx.pt (tensor-memory
 * accesses, which have no linear index, are left to the loop rule). */
static bool reads_follow_thread(const KNode *op, const Val *p, cf_parallel_type pt) {
  for (size_t i = 0; i < sizeof op->u.op.in / sizeof op->u.op.in[0]; i++) {
    const KAccess *a = &op->u.op.in[i];
    if (a->t && a->t->fusion_tv_name == p->name && a->index && !kx_uses_thread(a->index, pt)) return false;
  }
  return true;
}

/* Whether each thread reads only what it wrote itself, for every launched thread type:
 * the write's place depends on pt and both ops run in one loop on pt (or loops over
 * exactly the same axis), or it does not and both ops run on thread 0 of pt alone. A
 * write whose place does not depend on pt is done by thread 0 (guarded) or, unguarded, by
 * every thread at once: readers on other threads need the sync either way. */
static bool thread_dims_match(LowerCtx *c, const KNode *wop, const KNode *rop, const Val *p) {
  for (int pt = CF_PT_TIDX; pt <= CF_PT_TIDZ; pt++) {
    int64_t ext;
    if (!c->pdim[pt] || (kx_is_const(c->pdim[pt], &ext) && ext == 1)) continue;
    bool wd = write_spans(c, wop, pt);
    int wj = 0, rj = 0;
    const KNode *wl = thread_loop(wop, pt, &wj), *rl = thread_loop(rop, pt, &rj);
    if (!wd) {
      bool w0 = only_thread0(c, wop, pt), r0 = only_thread0(c, rop, pt);
      if (!w0 || !r0) return false;
      continue;
    }
    if (!wl || !rl || !same_thread_domain(c, wop, wl, wj, rop, rl, rj)) return false;
    /* the reader runs in the writer's pt loop, but on a broadcast axis of its own: the
     * element it reads does not follow threadIdx.pt, so other threads wrote it */
    if (!reads_follow_thread(rop, p, (cf_parallel_type)pt)) return false;
  }
  return true;
}

static void request(SyncCtx *s, KBlock *b, KNode *before, bool grid) {
  for (int i = 0; i < s->requests.len; i++) {
    Request *r = s->requests.items[i];
    if (r->block == b && r->before == before) {
      r->grid |= grid;
      return;
    }
  }
  Request *r = ARENA_NEW(s->c->a, Request);
  r->block = b;
  r->before = before;
  r->grid = grid;
  ptrvec_push(s->c->a, &s->requests, r);
}

/* A grid sync must be reached by every thread of every block: none of the nodes that
 * enclose it (rp's first d) may be a condition. */
static void check_unconditional(SyncCtx *s, const Path *rp, int d, const KNode *rop, Val *p) {
  for (int k = 0; k < d; k++)
    if (rp->node[k]->kind == KN_IF)
      lower_fail(s->c, CF_ERR_UNSUPPORTED,
                 "compile: %s reads %s, which other blocks write in global memory: that needs a grid sync between "
                 "the write and the read, but both run under a condition that not every thread reaches",
                 TV(rop->u.op.src->out[0])->display_name, TV(p)->display_name);
}

static void reader(SyncCtx *s, const Path *rp, const KNode *rop, Val *p, bool grid) {
  const Path *wp = s->writer[p->id];
  if (!wp || (!grid && thread_dims_match(s->c, wp->op, rop, p))) return;
  int d = 0;
  while (d < wp->depth && d < rp->depth && wp->node[d] == rp->node[d]) d++;
  if (grid) check_unconditional(s, rp, d, rop, p);
  request(s, rp->block[d], rp->node[d], grid);
  /* The innermost serial loop around both accesses iterates: guard its next write. */
  for (int k = d - 1; k >= 0; k--) {
    KNode *l = rp->node[k];
    if (l->kind == KN_FOR && l->u.loop.var && l->u.loop.pt != CF_PT_VECTORIZE) {
      int64_t ext;
      if (!(kx_is_const(l->u.loop.extent, &ext) && ext == 1)) request(s, &l->u.loop.body, NULL, grid);
      break;
    }
  }
}

static void visit_op(SyncCtx *s, Path *path, KNode *op) {
  const Expr *e = op->u.op.src;
  Val *cv = e->out[0];
  if (!op->u.op.reduction_init)
    for (int i = 0; i < e->nin; i++) {
      Val *p = e->in[i];
      if (p->kind == VAL_TV && ir_mem_shared_across(TV(p)->mem, CF_PT_TIDX))
        reader(s, path, op, p, lower_reads_across_blocks(s->c, p, cv));
    }
  Path *w = ARENA_NEW(s->c->a, Path);
  w->depth = path->depth;
  w->op = op;
  w->block = ARENA_ARRAY(s->c->a, KBlock *, path->depth);
  w->node = ARENA_ARRAY(s->c->a, KNode *, path->depth);
  memcpy(w->block, path->block, sizeof(KBlock *) * (size_t)path->depth);
  memcpy(w->node, path->node, sizeof(KNode *) * (size_t)path->depth);
  s->writer[cv->id] = w;
}

static bool on_op(KVisitor *v, KNode *op) {
  Path path = {v->path.block, v->path.node, v->path.depth, NULL};
  visit_op(v->user, &path, op);
  return true;
}

static KNode *sync_node(LowerCtx *c, bool grid) {
  KNode *n = ARENA_NEW(c->a, KNode);
  n->kind = KN_SYNC;
  n->u.sync.grid = grid;
  if (grid) lower_grid_semaphore(c);
  return n;
}

/* A grid sync is a block sync too: it replaces one requested at the same place. */
static void apply(LowerCtx *c, Request *r) {
  KBlock *b = r->block;
  int pos = b->len;
  for (int i = 0; r->before && i < b->len; i++)
    if (b->items[i] == r->before) pos = i;
  if (pos > 0 && b->items[pos - 1]->kind == KN_SYNC) {
    if (r->grid && !b->items[pos - 1]->u.sync.grid) b->items[pos - 1] = sync_node(c, true);
    return;
  }
  kb_insert(c->a, b, pos, sync_node(c, r->grid));
}

void lower_sync(LowerCtx *c) {
  SyncCtx s = {c, ARENA_ARRAY(c->a, Path *, c->f->vals.len + 1), {0}};
  KVisitor v = {.pre = {[KN_OP] = on_op}, .user = &s, .arena = c->a};
  kir_visit(&v, &c->k->body);
  for (int i = 0; i < s.requests.len; i++) apply(c, s.requests.items[i]);
  c->k->synced = true;
}
