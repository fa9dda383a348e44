/* lower/kir_verify.c: checks what the kernel IR means between passes (CFUSER_VERIFY=1, on
 * in tests), in program order:
 *   - structure: loops have an extent and an index, a serial loop's index is its own
 *     variable, no sync sits under an if (a thread-dependent condition would deadlock),
 *     ops carry their loop indices and, once indexed, name their tensors;
 *   - scope: every loop variable an index, bound, condition or extent uses belongs to an
 *     enclosing loop;
 *   - storage: every accessed tensor is a parameter or an allocation of the kernel, and an
 *     allocation is written before it is read;
 *   - loops: a buffer that holds only the iterations right of its compute-at position is
 *     read inside the serial loops its writer ran in left of that position (else the
 *     reader sees another iteration's value);
 *   - syncs (once the sync pass ran): a shared or tensor-memory buffer read with other
 *     thread indices than it was written with (in its index or the conditions around the
 *     access) has a __syncthreads between the write and the read;
 *   - tensor-memory regions are allocated and deallocated exactly once.
 * Key decision: one walk that reports the first broken rule; the pipeline turns a failure
 * into an internal error naming the pass. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"

typedef struct Written {
  const KNode *op;   /* the last op that wrote the tensor (NULL: not yet) */
  KNode **loops;     /* the loops enclosing it then */
  int nloops;
  long syncs;        /* syncs seen before that write */
  unsigned threads;  /* thread types its write index uses (bit per parallel type) */
} Written;

typedef struct Verify {
  const KKernel *k;
  char *err;
  size_t errlen;
  KNode **stack; /* enclosing loops */
  int depth, cap;
  long syncs;
  unsigned guard_threads; /* thread types the enclosing ifs test */
  Written *written; /* by tensor: index in params then allocs */
  int *allocs, *deallocs, nregions;
} Verify;

static bool fail(Verify *v, const char *fmt, const char *name) {
  snprintf(v->err, v->errlen, fmt, name ? name : "?");
  return false;
}

static bool var_in_scope(const Verify *v, const char *name) {
  for (int i = 0; i < v->depth; i++)
    if (v->stack[i]->u.loop.var && !strcmp(v->stack[i]->u.loop.var, name)) return true;
  return false;
}

static bool single_thread(const Verify *v, cf_parallel_type pt) {
  int64_t ext;
  const KExpr *dim = v->k->block[ir_ptype_launch_dim(pt)];
  return dim && kx_is_const(dim, &ext) && ext == 1;
}

/* Checks scope; accumulates the thread types e reads into *threads. */
static bool expr_ok(Verify *v, const KExpr *e, unsigned *threads) {
  if (!e) return true;
  if (e->kind == KX_VAR && !var_in_scope(v, e->name)) return fail(v, "loop variable %s used outside its loop", e->name);
  /* only thread indices of a dimension launched wider than 1: a block's shared memory is
   * its own, whatever its blockIdx */
  if (e->kind == KX_THREAD && !e->is_dim && ir_ptype_is_thread(e->pt) && threads && !single_thread(v, e->pt))
    *threads |= 1u << e->pt;
  return expr_ok(v, e->a, threads) && expr_ok(v, e->b, threads) && expr_ok(v, e->c, threads);
}

static int tensor_slot(const Verify *v, const KTensor *t) {
  if (t->param >= 0 && t->param < v->k->nparams && v->k->params[t->param] == t) return t->param;
  for (int i = 0; i < v->k->nallocs; i++)
    if (v->k->allocs[i] == t) return v->k->nparams + i;
  return -1;
}

static bool in_stack(const Verify *v, const KNode *loop) {
  for (int i = 0; i < v->depth; i++)
    if (v->stack[i] == loop) return true;
  return false;
}

/* A read of allocation t by an op: written before, inside the writer's uncovered loops,
 * and behind a sync when other threads wrote it. */
static bool read_ok(Verify *v, const KAccess *a, unsigned threads) {
  const KTensor *t = a->t;
  const Written *w = &v->written[tensor_slot(v, t)];
  if (t->param >= 0) return true;
  if (!w->op) return fail(v, "%s is read before it is written", t->name);
  const Expr *src = w->op->kind == KN_OP ? w->op->u.op.src : NULL;
  int ca = src ? TV(src->out[0])->ca_pos : 0;
  for (int j = 0; j < ca && j < w->nloops; j++)
    if (w->loops[j] && w->loops[j]->u.loop.var && !in_stack(v, w->loops[j]))
      return fail(v, "%s is read outside a loop it was computed in (left of its compute-at position)", t->name);
  bool shared = t->mem == CF_MEM_SHARED || t->mem == CF_MEM_TENSOR;
  if (v->k->synced && shared && threads != w->threads && v->syncs == w->syncs)
    return fail(v, "%s is read by other threads than wrote it with no __syncthreads between", t->name);
  return true;
}

static bool access_ok(Verify *v, const KAccess *a, unsigned *threads) {
  if (!a->t) return true;
  if (tensor_slot(v, a->t) < 0) return fail(v, "%s is accessed but neither a parameter nor allocated", a->t->name);
  return expr_ok(v, a->index, threads) && expr_ok(v, a->lane, threads) && expr_ok(v, a->col, threads);
}

static void record_write(Verify *v, const KNode *op, const KTensor *t, unsigned threads) {
  Written *w = &v->written[tensor_slot(v, t)];
  w->op = op;
  w->nloops = op->kind == KN_OP && op->u.op.loops ? op->u.op.nloop : 0;
  w->loops = w->nloops ? op->u.op.loops : NULL;
  w->syncs = v->syncs;
  w->threads = threads | v->guard_threads;
}

static bool op_ok(Verify *v, const KNode *n) {
  if (n->u.op.src && !n->u.op.loop_index) return fail(v, "%s", "an op without loop indices");
  if ((n->u.op.out.index || n->u.op.out.lane) && !n->u.op.out.t && !n->u.op.out.var)
    return fail(v, "%s", "an indexed op without output tensor");
  if (!n->u.op.out.t) return true; /* before the index pass */
  for (int i = 0; i < n->u.op.nin && !n->u.op.reduction_init; i++) {
    unsigned th = v->guard_threads;
    if (!access_ok(v, &n->u.op.in[i], &th)) return false;
    if (n->u.op.in[i].t && !(n->u.op.in[i].t == n->u.op.out.t) && !read_ok(v, &n->u.op.in[i], th)) return false;
  }
  unsigned th = 0;
  if (!access_ok(v, &n->u.op.out, &th)) return false;
  record_write(v, n, n->u.op.out.t, th);
  return true;
}

static bool tmem_ok(Verify *v, const KNode *n) {
  unsigned rt = 0, tt = 0;
  if (!access_ok(v, &n->u.tmem.reg, &rt) || !access_ok(v, &n->u.tmem.tmem, &tt)) return false;
  const KAccess *dst = n->kind == KN_TMEM_LD ? &n->u.tmem.reg : &n->u.tmem.tmem;
  if (dst->t) record_write(v, n, dst->t, n->kind == KN_TMEM_LD ? rt : tt);
  return true;
}

static bool block(Verify *v, const KBlock *b, bool under_if);

static bool loop_ok(Verify *v, const KNode *n, bool under_if) {
  if (!n->u.loop.extent || !n->u.loop.index) return fail(v, "%s", "a loop without extent or index");
  if (n->u.loop.var && (n->u.loop.index->kind != KX_VAR || n->u.loop.index->name != n->u.loop.var))
    return fail(v, "%s", "a serial loop whose index is not its variable");
  if (!expr_ok(v, n->u.loop.extent, NULL)) return false;
  if (v->depth == v->cap) {
    int cap = v->cap ? 2 * v->cap : 16;
    KNode **s = realloc(v->stack, sizeof(KNode *) * (size_t)cap);
    if (!s) return fail(v, "%s", "out of memory verifying the kernel IR");
    v->stack = s;
    v->cap = cap;
  }
  v->stack[v->depth++] = (KNode *)n;
  bool ok = block(v, &n->u.loop.body, under_if);
  v->depth--;
  return ok;
}

static bool node(Verify *v, const KNode *n, bool under_if) {
  switch (n->kind) {
  case KN_FOR: return loop_ok(v, n, under_if);
  case KN_IF:
    if (!n->u.cond.cond) return fail(v, "%s", "an if without condition");
  {
    unsigned th = 0, saved = v->guard_threads;
    if (!expr_ok(v, n->u.cond.cond, &th)) return false;
    v->guard_threads |= th;
    bool ok = block(v, &n->u.cond.then, true);
    v->guard_threads = saved;
    return ok;
  }
  case KN_SYNC:
  case KN_BLOCK_REDUCE: /* it synchronizes the block */
    v->syncs++;
    return under_if ? fail(v, "%s", "a __syncthreads under a condition") : true;
    v->syncs++;
    return under_if ? fail(v, "%s", "a __syncthreads under a condition") : true;
  case KN_OP: return op_ok(v, n);
  case KN_TMEM_LD:
  case KN_TMEM_ST: return tmem_ok(v, n);
  case KN_TMEM_ALLOC:
  case KN_TMEM_DEALLOC:
    if (n->u.region.region < 0 || n->u.region.region >= v->nregions) return fail(v, "%s", "a tensor-memory region out of range");
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

static bool regions_paired(Verify *v) {
  bool any = false;
  for (int r = 0; r < v->nregions; r++) any |= v->allocs[r] || v->deallocs[r];
  if (!any) return true; /* before the lifetime pass there is nothing to pair */
  for (int r = 0; r < v->nregions; r++)
    if (v->allocs[r] != 1 || v->deallocs[r] != 1) {
      snprintf(v->err, v->errlen, "tensor-memory region %d is allocated %d times and deallocated %d times", r,
               v->allocs[r], v->deallocs[r]);
      return false;
    }
  return true;
}

bool kir_verify(const KKernel *k, char *err, size_t errlen) {
  Verify v = {.k = k, .err = err, .errlen = errlen, .nregions = k->nregions};
  v.written = calloc((size_t)(k->nparams + k->nallocs + 1), sizeof(Written));
  v.allocs = calloc((size_t)k->nregions + 1, sizeof(int));
  v.deallocs = calloc((size_t)k->nregions + 1, sizeof(int));
  bool ok = v.written && v.allocs && v.deallocs ? block(&v, &k->body, false) && regions_paired(&v)
                                                : fail(&v, "%s", "out of memory verifying the kernel IR");
  free(v.written);
  free(v.allocs);
  free(v.deallocs);
  free(v.stack);
  return ok;
}
