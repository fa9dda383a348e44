/* lower/kir_visit.c: the kernel IR's shared walks: the visitor (read-only, per-kind pre
 * and post callbacks), the mutator (Halide's IRMutator in C: per-kind callbacks append
 * what replaces a node), and deep copies of nodes and blocks.
 *
 * Every pass and printer walks the tree through these, so which nodes hold blocks is said
 * once (kn_blocks). Key decisions: nodes are mutable arena objects, so a mutation keeps a
 * node's identity and changes its blocks in place (ops point to their loops, and those
 * pointers must stay valid), and a block's item array is rebuilt only when one of its
 * items was replaced, removed or expanded. A copy shares the KExprs (immutable once
 * folded) and the tensors, and points the copied ops at the copied loops. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lower/kir.h"

static const bool collective[] = {
#define KN_X(kind, coll) [kind] = coll,
    KN_KIND_TABLE(KN_X)
#undef KN_X
};
_Static_assert(sizeof collective / sizeof collective[0] == KN_KIND_COUNT, "a node kind without its columns");

bool kn_is_collective(KnKind k) { return (unsigned)k < KN_KIND_COUNT && collective[k]; }

int kn_blocks(KNode *n, KBlock *out[KN_MAX_BLOCKS]) {
  switch (n->kind) {
  case KN_FOR: out[0] = &n->u.loop.body; return 1;
  case KN_IF:
    out[0] = &n->u.cond.then;
    out[1] = &n->u.cond.otherwise;
    return 2;
  case KN_BLOCK_REDUCE: out[0] = &n->u.acc.tail; return 1;
  default: return 0;
  }
}

static void each(const KAccess *x, int n, void (*fn)(KTensor *, void *), void *user) {
  for (int i = 0; i < n; i++)
    if (x[i].t) fn(x[i].t, user);
}

static void each_tensor(KTensor *t, void (*fn)(KTensor *, void *), void *user) {
  if (t) fn(t, user);
}

/* A switch without a default: a new node kind is a compile warning (-Wswitch) here until
 * it says what it dereferences. */
void kn_data_tensors(const KKernel *k, const KNode *n, void (*fn)(KTensor *t, void *user), void *user) {
  switch (n->kind) {
  case KN_OP:
    each(&n->u.op.out, 1, fn, user);
    each(n->u.op.in, n->u.op.nin, fn, user);
    break;
  case KN_TMEM_LD:
  case KN_TMEM_ST:
    each(&n->u.tmem.reg, 1, fn, user);
    each(&n->u.tmem.tmem, 1, fn, user);
    break;
  case KN_MMA: {
    const IrMmaInstr *in = n->u.mma.instr;
    each(n->u.mma.acc, n->u.mma.nacc, fn, user);
    each(n->u.mma.a, in->a.n, fn, user);
    each(n->u.mma.b, in->b.n, fn, user);
    for (int op = 0; op < 2; op++)
      if (n->u.mma.ldm[op]) each(&n->u.mma.ldm_row[op], 1, fn, user);
    if (ir_mma_by_descriptor(in)) each(n->u.mma.desc_start, 2, fn, user);
    break;
  }
  case KN_BLOCK_REDUCE:
    each_tensor(n->u.acc.ws, fn, user);
    each_tensor(n->u.acc.work, fn, user);
    each_tensor(n->u.acc.sem, fn, user);
    each_tensor(n->u.acc.flag, fn, user);
    each_tensor(n->u.acc.array, fn, user); /* grouped: its accumulators */
    if (n->u.acc.all_blocks) each_tensor(k->grid_sem, fn, user); /* its grid sync */
    break;
  case KN_SYNC:
    if (n->u.sync.grid) each_tensor(k->grid_sem, fn, user);
    break;
  case KN_TMA_LOAD:
    each(&n->u.tma.dst, 1, fn, user);
    each(&n->u.tma.bar, 1, fn, user);
    each_tensor(k->params[k->tmaps[n->u.tma.map].param], fn, user);
    break;
  case KN_MBAR_INIT:
  case KN_MBAR_EXPECT_TX:
  case KN_MBAR_WAIT:
  case KN_MBAR_ARRIVE:
  case KN_TC05_COMMIT: each(&n->u.mbar.bar, 1, fn, user); break;
  case KN_SETMAXNREG: break;
  case KN_TMEM_ALLOC:
  case KN_TMEM_DEALLOC: each_tensor(k->regions[n->u.region.region].slot, fn, user); break;
  case KN_FOR:
  case KN_IF:
  case KN_ALLOC:
  case KN_TMEM_RELINQUISH:
  case KN_COMMENT:
  case KN_ACC_DECL:
  case KN_ASYNC_COMMIT:
  case KN_ASYNC_WAIT:
  case KN_WGMMA_FENCE:
  case KN_WGMMA_COMMIT:
  case KN_WGMMA_WAIT:
  case KN_TC05_FENCE: break;
  }
}

/* ---- the path of enclosing nodes -------------------------------------------------------- */

/* Grows p by one entry: in arena a, or with realloc when a is NULL (the printers and the
 * verifier, which have no arena and never unwind). False when out of memory. */
static bool path_push(KPath *p, Arena *a, KBlock *b, KNode *n) {
  if (p->depth == p->cap) {
    int cap = p->cap ? 2 * p->cap : 16;
    KNode **nodes;
    KBlock **blocks;
    if (a) {
      nodes = ARENA_ARRAY(a, KNode *, cap);
      blocks = ARENA_ARRAY(a, KBlock *, cap);
      if (!nodes || !blocks) return false;
      if (p->depth) {
        memcpy(nodes, p->node, sizeof(KNode *) * (size_t)p->depth);
        memcpy(blocks, p->block, sizeof(KBlock *) * (size_t)p->depth);
      }
    } else {
      nodes = realloc(p->node, sizeof(KNode *) * (size_t)cap);
      if (!nodes) return false;
      p->node = nodes;
      blocks = realloc(p->block, sizeof(KBlock *) * (size_t)cap);
      if (!blocks) return false;
    }
    p->node = nodes;
    p->block = blocks;
    p->cap = cap;
  }
  p->node[p->depth] = n;
  p->block[p->depth++] = b;
  return true;
}

/* ---- the visitor ------------------------------------------------------------------------- */

static void visit_block(KVisitor *v, KBlock *b);

static void visit_node(KVisitor *v, KBlock *b, KNode *n) {
  if (!path_push(&v->path, v->arena, b, n)) {
    v->stop = v->oom = true;
    return;
  }
  if (!v->pre[n->kind] || v->pre[n->kind](v, n)) {
    KBlock *blocks[KN_MAX_BLOCKS];
    int nb = kn_blocks(n, blocks);
    for (int i = 0; i < nb && !v->stop; i++) {
      if (i > 0 && v->between) v->between(v, n, i);
      if (!v->stop) visit_block(v, blocks[i]);
    }
  }
  if (!v->stop && v->post[n->kind]) v->post[n->kind](v, n);
  v->path.depth--;
}

static void visit_block(KVisitor *v, KBlock *b) {
  for (int i = 0; i < b->len && !v->stop; i++) visit_node(v, b, b->items[i]);
}

bool kir_visit(KVisitor *v, KBlock *b) {
  bool outermost = v->path.node == NULL;
  v->stop = v->oom = false;
  visit_block(v, b);
  if (outermost) {
    if (!v->arena) free(v->path.node), free(v->path.block);
    v->path = (KPath){0};
  }
  return !v->stop;
}

void kir_visit_all(KVisitor *v, bool (*pre)(KVisitor *, KNode *), void (*post)(KVisitor *, KNode *)) {
  for (int k = 0; k < KN_KIND_COUNT; k++) {
    v->pre[k] = pre;
    v->post[k] = post;
  }
}

/* ---- the mutator ------------------------------------------------------------------------- */

bool kir_mutate(KMutator *m, KBlock *b) {
  KBlock out = {0};
  bool changed = false;
  for (int i = 0; i < b->len; i++) {
    KNode *n = b->items[i];
    KBlock r = {0};
    if (!path_push(&m->path, m->arena, b, n)) return changed; /* out of memory: nothing more is rewritten */
    if (m->fn[n->kind]) {
      m->fn[n->kind](m, n, &r);
    } else {
      kir_mutate_children(m, n);
      kb_push(m->arena, &r, n);
    }
    m->path.depth--;
    if (!changed && r.len == 1 && r.items[0] == n) continue;
    if (!changed) {
      changed = true;
      for (int j = 0; j < i; j++) kb_push(m->arena, &out, b->items[j]);
    }
    for (int j = 0; j < r.len; j++) kb_push(m->arena, &out, r.items[j]);
  }
  if (changed) *b = out;
  return changed;
}

void kir_mutate_children(KMutator *m, KNode *n) {
  KBlock *blocks[KN_MAX_BLOCKS];
  int nb = kn_blocks(n, blocks);
  for (int i = 0; i < nb; i++) kir_mutate(m, blocks[i]);
}

/* ---- deep copies ------------------------------------------------------------------------- */

/* The loops copied so far (original -> copy), sorted by address once the copy is made. */
typedef struct LoopPair {
  const KNode *from;
  KNode *to;
} LoopPair;

typedef struct CloneMap {
  Arena *a;
  LoopPair *pairs;
  int n, cap;
} CloneMap;

static void remember(CloneMap *cm, const KNode *from, KNode *to) {
  if (cm->n == cm->cap) {
    int cap = cm->cap ? 2 * cm->cap : 16;
    LoopPair *p = ARENA_ARRAY(cm->a, LoopPair, cap);
    if (cm->n) memcpy(p, cm->pairs, sizeof(LoopPair) * (size_t)cm->n);
    cm->pairs = p;
    cm->cap = cap;
  }
  cm->pairs[cm->n++] = (LoopPair){from, to};
}

static void *copy_array(Arena *a, const void *src, size_t size, int n) {
  return src && n > 0 ? arena_memdup(a, src, size * (size_t)n) : NULL;
}

static KNode *clone_node(CloneMap *cm, const KNode *n);

static void clone_into(CloneMap *cm, KBlock *dst, const KBlock *src) {
  KBlock copy = {0};
  for (int i = 0; i < src->len; i++) kb_push(cm->a, &copy, clone_node(cm, src->items[i]));
  *dst = copy;
}

static KNode *clone_node(CloneMap *cm, const KNode *n) {
  KNode *c = ARENA_NEW(cm->a, KNode);
  *c = *n;
  KBlock *blocks[KN_MAX_BLOCKS];
  int nb = kn_blocks(c, blocks);
  for (int i = 0; i < nb; i++) {
    KBlock src = *blocks[i]; /* still the original's items */
    clone_into(cm, blocks[i], &src);
  }
  if (n->kind == KN_FOR) remember(cm, n, c);
  if (n->kind == KN_OP) {
    c->u.op.loop_index = copy_array(cm->a, n->u.op.loop_index, sizeof(KExpr *), n->u.op.nloop);
    c->u.op.loops = copy_array(cm->a, n->u.op.loops, sizeof(KNode *), n->u.op.nloop);
    c->u.op.bounds = copy_array(cm->a, n->u.op.bounds, sizeof(KExpr *), n->u.op.nbounds);
  }
  if (n->kind == KN_MMA) c->u.mma.acc = copy_array(cm->a, n->u.mma.acc, sizeof(KAccess), n->u.mma.nacc);
  return c;
}

static int by_address(const void *x, const void *y) {
  uintptr_t a = (uintptr_t)((const LoopPair *)x)->from, b = (uintptr_t)((const LoopPair *)y)->from;
  return a < b ? -1 : a > b;
}

static bool remap_loops(KVisitor *v, KNode *op) {
  CloneMap *cm = v->user;
  for (int j = 0; op->u.op.loops && j < op->u.op.nloop; j++) {
    LoopPair key = {op->u.op.loops[j], NULL};
    LoopPair *p = key.from ? bsearch(&key, cm->pairs, (size_t)cm->n, sizeof(LoopPair), by_address) : NULL;
    if (p) op->u.op.loops[j] = p->to;
  }
  return true;
}

/* Points the copied ops at the copied loops. */
static void finish(CloneMap *cm, KBlock *copy) {
  if (cm->n == 0) return;
  qsort(cm->pairs, (size_t)cm->n, sizeof(LoopPair), by_address);
  KVisitor v = {.pre = {[KN_OP] = remap_loops}, .user = cm, .arena = cm->a};
  kir_visit(&v, copy);
}

void kir_clone_block(Arena *a, const KBlock *src, KBlock *dst) {
  CloneMap cm = {.a = a};
  clone_into(&cm, dst, src);
  finish(&cm, dst);
}

KNode *kir_clone(Arena *a, const KNode *n) {
  KBlock one = {0};
  kb_push(a, &one, (KNode *)n);
  KBlock copy;
  kir_clone_block(a, &one, &copy);
  return copy.items[0];
}
