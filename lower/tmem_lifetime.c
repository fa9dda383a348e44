/* lower/tmem_lifetime.c: the tmem_lifetime pass. Gives tensor memory its final form in the kernel IR:
 * every validated load and store becomes a tcgen05 instruction node, and every region
 * gets its allocation at the top of the kernel and its deallocation after its last use.
 *
 *   KN_TMEM_ALLOC r ...        warp 0: tcgen05.alloc of region r into its shared slot
 *   KN_TMEM_RELINQUISH         warp 0: tcgen05.relinquish_alloc_permit
 *   KN_SYNC                    every thread sees the addresses
 *   ... KN_TMEM_ST / KN_TMEM_LD (each followed by its wait in codegen) ...
 *   KN_SYNC                    after the last top-level node touching region r
 *   KN_TMEM_DEALLOC r          warp 0
 *
 * Requires: ops accessing tensor memory validated by tmem_pattern, indexed by index,
 * never predicated (predicate refuses them), and the RAW/WAR syncs of the sync pass
 * (which must see them as ops, so the conversion happens here, after it); k->regions.
 * Establishes: KN_TMEM_LD / KN_TMEM_ST in place of those ops (reg: the local tensor and
 * the index of the first element moved; tmem: the tensor with the op's lane and column in
 * elements, as indexed, the lane not yet rounded to the warp's base; words = vector
 * elements x dtype bytes / 4; elems = vector elements), and the region lifetime nodes.
 * Key decision: the last use of a region is the last top-level node that touches any of
 * its tensors (every tensor of the region, not only its first as in nvFuser); regions
 * whose last uses end at the same node share one __syncthreads before their deallocs. */
#include "lower/lower.h"

static KNode *new_node(LowerCtx *c, KnKind kind) {
  KNode *n = ARENA_NEW(c->a, KNode);
  n->kind = kind;
  return n;
}

static bool is_tmem_tensor(const KTensor *t) { return t && t->mem == CF_MEM_TENSOR; }

/* The tcgen05 node of an op that loads or stores tensor memory, or NULL for other ops. */
static KNode *convert(LowerCtx *c, const KNode *op) {
  if (op->u.op.reduction_init) return NULL;
  bool store = is_tmem_tensor(op->u.op.out.t);
  if (!store && !(op->u.op.nin == 1 && is_tmem_tensor(op->u.op.in[0].t))) return NULL;
  KNode *n = new_node(c, store ? KN_TMEM_ST : KN_TMEM_LD);
  n->u.tmem.tmem = store ? op->u.op.out : op->u.op.in[0];
  n->u.tmem.reg = store ? op->u.op.in[0] : op->u.op.out;
  n->u.tmem.elems = op->u.op.vector > 1 ? op->u.op.vector : 1;
  n->u.tmem.words = n->u.tmem.elems * (int)cf_dtype_size(n->u.tmem.tmem.t->dtype) / 4;
  return n;
}

static void on_op(KMutator *m, KNode *n, KBlock *out) {
  KNode *t = convert(m->user, n);
  kb_push(m->arena, out, t ? t : n);
}

static bool mark_region(KVisitor *v, KNode *n) {
  bool *used = v->user;
  if (n->kind == KN_MMA) { /* tcgen05.mma: its accumulator */
    if (ir_mma_is_tcgen05(n->u.mma.instr)) used[n->u.mma.acc[0].t->tmem_region] = true;
    return true;
  }
  used[n->u.tmem.tmem.t->tmem_region] = true;
  return true;
}

/* Marks in `used` (by region) the regions the subtree of n touches. */
static void regions_touched(KNode *n, bool *used) {
  KBlock one = {&n, 1, 1};
  KVisitor v = {.pre = {[KN_TMEM_LD] = mark_region, [KN_TMEM_ST] = mark_region, [KN_MMA] = mark_region}, .user = used};
  kir_visit(&v, &one);
}

static void prologue(LowerCtx *c) {
  KKernel *k = c->k;
  int pos = 0;
  for (int r = 0; r < k->nregions; r++) {
    KNode *a = new_node(c, KN_TMEM_ALLOC);
    a->u.region.region = r;
    kb_insert(c->a, &k->body, pos++, a);
  }
  kb_insert(c->a, &k->body, pos++, new_node(c, KN_TMEM_RELINQUISH));
  kb_insert(c->a, &k->body, pos, new_node(c, KN_SYNC));
}

/* After the prologue: per region, the index of its last top-level use (or the prologue's
 * sync when it has none); then one sync and the deallocs after each such node, from the
 * back so that earlier positions stay valid. */
static void deallocs(LowerCtx *c) {
  KKernel *k = c->k;
  int first = k->nregions + 1; /* the prologue's sync */
  int *last = ARENA_ARRAY(c->a, int, k->nregions);
  bool *used = ARENA_ARRAY(c->a, bool, k->nregions);
  for (int r = 0; r < k->nregions; r++) last[r] = first;
  for (int i = first + 1; i < k->body.len; i++) {
    for (int r = 0; r < k->nregions; r++) used[r] = false;
    regions_touched(k->body.items[i], used);
    for (int r = 0; r < k->nregions; r++)
      if (used[r]) last[r] = i;
  }
  for (int i = k->body.len - 1; i >= first; i--) {
    int pos = i + 1;
    for (int r = 0; r < k->nregions; r++) {
      if (last[r] != i) continue;
      if (pos == i + 1 && i != first) kb_insert(c->a, &k->body, pos++, new_node(c, KN_SYNC));
      KNode *d = new_node(c, KN_TMEM_DEALLOC);
      d->u.region.region = r;
      kb_insert(c->a, &k->body, pos++, d);
    }
  }
}

void lower_tmem_lifetime(LowerCtx *c) {
  if (!c->k->nregions) return;
  KMutator m = {.arena = c->a, .fn = {[KN_OP] = on_op}, .user = c};
  kir_mutate(&m, &c->k->body);
  prologue(c);
  deallocs(c);
}
