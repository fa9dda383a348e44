/* lower/local_reuse.c: pass "local_reuse", after every pass that adds accesses (before
 * the shared-memory layout). Local arrays whose lifetimes do not overlap share one
 * buffer, and the local memory a thread needs is checked against CUDA's limit.
 *
 * Requires: the kernel IR complete (ops, tensor-memory copies, reduction tails).
 * Establishes: each local allocation of at least LOWER_REUSE_MIN_BYTES either keeps its
 * buffer or has its accesses moved to an earlier one of its dtype (which grows to the
 * larger size); the kernel's local bytes per thread within LOWER_MAX_LOCAL_BYTES.
 * Key decisions: a tensor's lifetime is the interval of program positions from its first
 * to its last access, widened to whole loops: the innermost serial loop enclosing all of
 * its accesses (or the kernel) is where it lives, and each loop below it that holds an
 * access is covered entirely (a value written in one iteration and read after the loop
 * must survive the loop's other iterations). Lifetimes are then coloured greedily by
 * start (optimal for intervals), per dtype. Small arrays are left alone: they are
 * registers, which the CUDA compiler allocates itself; a 3000-op chain that nothing
 * inlines had 3000 arrays of 1024 floats (12 MB per thread), now two. */
#include <stdlib.h>
#include <string.h>

#include "ir/checked.h"
#include "lower/lower.h"

/* Arrays smaller than this are registers: not shared. */
#define LOWER_REUSE_MIN_BYTES 256
/* CUDA's local memory per thread (512 KiB): a kernel needing more cannot launch. */
#define LOWER_MAX_LOCAL_BYTES (512 * 1024)

typedef struct LoopRec {
  long start, end; /* program positions of the loop's opening and closing */
} LoopRec;

typedef struct Life {
  KTensor *t;
  long first, last;          /* positions of the first and last access */
  LoopRec **first_at, **last_at; /* the serial loops around them, outermost first */
  int nfirst, nlast, lca;    /* depths, and the loops all accesses share */
  bool seen, pinned;         /* pinned: accessed by tensor-memory copies (left alone) */
  KTensor *into;             /* the buffer it is given */
} Life;

typedef struct Reuse {
  LowerCtx *c;
  Life *life;
  int n;
  KTensor **keys; /* open addressing: tensor -> index in life */
  int *vals, cap;
  LoopRec **stack;
  int depth, maxdepth;
  long pos;
} Reuse;

static unsigned hash_ptr(const void *p) { return (unsigned)(((uintptr_t)p >> 4) * 2654435761u); }

static Life *life_of(Reuse *r, const KTensor *t) {
  if (!t || !r->cap) return NULL;
  for (unsigned i = hash_ptr(t) & (unsigned)(r->cap - 1);; i = (i + 1) & (unsigned)(r->cap - 1)) {
    if (!r->keys[i]) return NULL;
    if (r->keys[i] == t) return &r->life[r->vals[i]];
  }
}

/* The local allocations of constant size worth sharing, indexed. */
static void candidates(Reuse *r) {
  KKernel *k = r->c->k;
  Arena *a = r->c->a;
  r->life = ARENA_ARRAY(a, Life, k->nallocs + 1);
  r->cap = 16;
  while (r->cap < 2 * k->nallocs + 2) r->cap *= 2;
  r->keys = ARENA_ARRAY(a, KTensor *, r->cap);
  r->vals = ARENA_ARRAY(a, int, r->cap);
  for (int i = 0; i < k->nallocs; i++) {
    KTensor *t = k->allocs[i];
    int64_t n;
    /* a tensor spilled to shared memory keeps its own arrays (its accesses name both) */
    if (t->mem != CF_MEM_LOCAL || t->spill || !kx_is_const(t->size, &n) ||
        n * (int64_t)cf_dtype_size(t->dtype) < LOWER_REUSE_MIN_BYTES)
      continue;
    r->life[r->n] = (Life){.t = t, .into = t};
    unsigned h = hash_ptr(t) & (unsigned)(r->cap - 1);
    while (r->keys[h]) h = (h + 1) & (unsigned)(r->cap - 1);
    r->keys[h] = t;
    r->vals[h] = r->n++;
  }
}

static LoopRec **snapshot(Reuse *r) {
  LoopRec **s = ARENA_ARRAY(r->c->a, LoopRec *, r->depth + 1);
  if (r->depth) memcpy(s, r->stack, sizeof *s * (size_t)r->depth);
  return s;
}

static void access(Reuse *r, const KAccess *x, bool pinned) {
  Life *l = life_of(r, x->t);
  if (!l) return;
  l->pinned |= pinned;
  if (!l->seen) {
    l->seen = true;
    l->first = r->pos;
    l->first_at = snapshot(r);
    l->nfirst = l->lca = r->depth;
  }
  int common = 0;
  while (common < l->lca && common < r->depth && l->first_at[common] == r->stack[common]) common++;
  l->lca = common;
  l->last = r->pos;
  l->last_at = snapshot(r);
  l->nlast = r->depth;
}

/* The walk in program order (the kernel IR's visitor: every block, else branches and
 * reduction tails included): each node is one position, a loop's closing another. */
static bool on_node(KVisitor *v, KNode *n) {
  Reuse *r = v->user;
  r->pos++;
  switch (n->kind) {
  case KN_FOR:
    if (n->u.loop.var) { /* a serial loop: where lifetimes widen to */
      if (r->depth == r->maxdepth) {
        LoopRec **s = ARENA_ARRAY(r->c->a, LoopRec *, 2 * r->maxdepth + 8);
        if (r->depth) memcpy(s, r->stack, sizeof *s * (size_t)r->depth);
        r->stack = s;
        r->maxdepth = 2 * r->maxdepth + 8;
      }
      LoopRec *rec = ARENA_NEW(r->c->a, LoopRec);
      rec->start = r->pos;
      r->stack[r->depth++] = rec;
    }
    break;
  case KN_OP:
    for (int i = 0; i < n->u.op.nin; i++) access(r, &n->u.op.in[i], false);
    access(r, &n->u.op.out, false);
    break;
  case KN_TMEM_LD:
  case KN_TMEM_ST: access(r, &n->u.tmem.reg, true); break;
  case KN_MMA: access(r, &n->u.mma.acc[0], true); break;
  case KN_BLOCK_REDUCE: /* a grouped reduction's array: the node names it, not an access */
    if (n->u.acc.array) access(r, &(KAccess){.t = n->u.acc.array}, true);
    break;
  default: break;
  }
  return true;
}

static void after_loop(KVisitor *v, KNode *n) {
  Reuse *r = v->user;
  ++r->pos;
  if (n->u.loop.var) r->stack[--r->depth]->end = r->pos;
}

/* [start, end] of l's lifetime, widened to the loops below where all its accesses meet. */
static void lifetime(const Life *l, long *start, long *end) {
  *start = l->nfirst > l->lca ? l->first_at[l->lca]->start : l->first;
  *end = l->nlast > l->lca ? l->last_at[l->lca]->end : l->last;
}

static int by_start(const void *pa, const void *pb) {
  const long *a = pa, *b = pb;
  return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[2] < b[2] ? -1 : a[2] > b[2];
}

/* Greedy colouring by start: each tensor takes the first buffer of its dtype free before
 * its lifetime begins, or keeps its own. */
static void colour(Reuse *r) {
  long (*iv)[3] = (long (*)[3])ARENA_ARRAY(r->c->a, long, 3 * (r->n + 1));
  int m = 0;
  for (int i = 0; i < r->n; i++)
    if (r->life[i].seen && !r->life[i].pinned) {
      lifetime(&r->life[i], &iv[m][0], &iv[m][1]);
      iv[m++][2] = i;
    }
  qsort(iv, (size_t)m, sizeof *iv, by_start);
  Life **bufs = ARENA_ARRAY(r->c->a, Life *, m + 1);
  long *free_after = ARENA_ARRAY(r->c->a, long, m + 1);
  int nb = 0;
  for (int k = 0; k < m; k++) {
    Life *l = &r->life[iv[k][2]];
    int b = 0;
    while (b < nb && !(bufs[b]->t->dtype == l->t->dtype && free_after[b] < iv[k][0])) b++;
    if (b == nb) bufs[nb++] = l;
    free_after[b] = iv[k][1];
    l->into = bufs[b]->t;
    int64_t need, have;
    kx_is_const(l->t->size, &need);
    kx_is_const(l->into->size, &have);
    if (need > have) l->into->size = l->t->size;
  }
}

static void move_access(Reuse *r, KAccess *x) {
  Life *l = life_of(r, x->t);
  if (l) x->t = l->into;
}

static bool move_op(KVisitor *v, KNode *n) {
  Reuse *r = v->user;
  for (int k = 0; k < n->u.op.nin; k++) move_access(r, &n->u.op.in[k]);
  move_access(r, &n->u.op.out);
  return true;
}

/* The local allocations that keep a buffer, and the bytes per thread of the arrays in
 * local memory (each aligned to 16 bytes as the code generators declare them; small
 * arrays are registers, which the CUDA compiler allocates by liveness). */
static int64_t keep_buffers(Reuse *r) {
  KKernel *k = r->c->k;
  int m = 0;
  int64_t bytes = 0, n;
  for (int i = 0; i < k->nallocs; i++) {
    KTensor *t = k->allocs[i];
    Life *l = life_of(r, t);
    if (l && l->into != t) continue;
    k->allocs[m++] = t;
    int64_t b;
    if (t->mem != CF_MEM_LOCAL || !kx_is_const(t->size, &n)) continue;
    if (!ck_mul(n, (int64_t)cf_dtype_size(t->dtype), &b) || !ck_add(b, 15, &b)) b = INT64_MAX - 15; /* saturated */
    if (b - 15 >= LOWER_REUSE_MIN_BYTES && !ck_add(bytes, b / 16 * 16, &bytes)) bytes = INT64_MAX;
  }
  k->nallocs = m;
  return bytes;
}

void lower_local_reuse(LowerCtx *c) {
  Reuse r = {.c = c};
  candidates(&r);
  KVisitor walk = {.user = &r, .arena = c->a};
  kir_visit_all(&walk, on_node, NULL);
  walk.post[KN_FOR] = after_loop;
  kir_visit(&walk, &c->k->body);
  colour(&r);
  KVisitor move = {.pre = {[KN_OP] = move_op}, .user = &r, .arena = c->a};
  kir_visit(&move, &c->k->body);
  int64_t bytes = keep_buffers(&r);
  if (bytes > LOWER_MAX_LOCAL_BYTES)
    lower_fail(c, CF_ERR_UNSUPPORTED,
               "compile: the kernel's local arrays take %lld bytes per thread (after sharing the buffers of arrays "
               "whose lifetimes do not overlap), over the %d bytes a CUDA thread may have (LOWER_MAX_LOCAL_BYTES); "
               "inline the tensors deeper, or put the large ones in shared or global memory",
               (long long)bytes, LOWER_MAX_LOCAL_BYTES);
}
