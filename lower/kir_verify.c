/* lower/kir_verify.c: checks the kernel IR's invariants between passes (CFUSER_VERIFY=1,
 * on in tests): loops have an extent and an index, a serial loop's index is its own
 * variable, no sync sits under an if (a thread-dependent condition would deadlock), ops
 * carry their loop indices and, once indexed, name their tensors, and every
 * tensor-memory region allocated is deallocated exactly once.
 * Key decision: a plain recursive walk that reports the first broken invariant; the
 * pipeline turns a failure into an internal error naming the pass. */
#include <stdio.h>

#include "lower/lower.h"

typedef struct Verify {
  char *err;
  size_t errlen;
  int allocs[64], deallocs[64];
} Verify;

static bool fail(Verify *v, const char *msg) {
  snprintf(v->err, v->errlen, "%s", msg);
  return false;
}

static bool block(Verify *v, const KBlock *b, bool under_if);

static bool node(Verify *v, const KNode *n, bool under_if) {
  switch (n->kind) {
  case KN_FOR:
    if (!n->u.loop.extent || !n->u.loop.index) return fail(v, "a loop without extent or index");
    if (n->u.loop.var && (n->u.loop.index->kind != KX_VAR || n->u.loop.index->name != n->u.loop.var))
      return fail(v, "a serial loop whose index is not its variable");
    return block(v, &n->u.loop.body, under_if);
  case KN_IF:
    if (!n->u.cond.cond) return fail(v, "an if without condition");
    return block(v, &n->u.cond.then, true);
  case KN_SYNC:
  case KN_BLOCK_REDUCE: /* it synchronizes the block */
    return under_if ? fail(v, "a __syncthreads under a condition") : true;
  case KN_OP:
    if (n->u.op.src && !n->u.op.loop_index) return fail(v, "an op without loop indices");
    /* indices exist from the index pass on: then they must name their tensor */
    if ((n->u.op.out.index || n->u.op.out.lane) && !n->u.op.out.t && !n->u.op.out.var)
      return fail(v, "an indexed op without output tensor");
    return true;
  case KN_TMEM_ALLOC:
  case KN_TMEM_DEALLOC:
    if (n->u.region.region < 0 || n->u.region.region >= 64) return fail(v, "a tensor-memory region out of range");
    (n->kind == KN_TMEM_ALLOC ? v->allocs : v->deallocs)[n->u.region.region]++;
    return true;
  default: return true;
  }
}

static bool block(Verify *v, const KBlock *b, bool under_if) {
  for (int i = 0; i < b->len; i++)
    if (!node(v, b->items[i], under_if)) return false;
  return true;
}

bool kir_verify(const KKernel *k, char *err, size_t errlen) {
  Verify v = {err, errlen, {0}, {0}};
  if (!block(&v, &k->body, false)) return false;
  bool any = false;
  for (int r = 0; r < 64; r++) any |= v.allocs[r] || v.deallocs[r];
  if (!any) return true; /* before the lifetime pass there is nothing to pair */
  for (int r = 0; r < k->nregions && r < 64; r++)
    if (v.allocs[r] != 1 || v.deallocs[r] != 1) {
      snprintf(err, errlen, "tensor-memory region %d is allocated %d times and deallocated %d times", r, v.allocs[r],
               v.deallocs[r]);
      return false;
    }
  return true;
}
