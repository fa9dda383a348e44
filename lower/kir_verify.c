/* lower/kir_verify.c: checks what the kernel IR means between passes (CFUSER_VERIFY=1, on
 * in tests), in program order:
 *   - structure: loops have an extent and an index, a serial loop's index is its own
 *     variable, no sync sits under an if whose condition depends on a thread index (the
 *     threads would part at the barrier; an unswitched nest's block-uniform if is fine),
 *     ops carry their loop indices and, once indexed, name their tensors;
 *   - scope: every loop variable an index, bound, condition or extent uses belongs to an
 *     enclosing loop;
 *   - storage: every accessed tensor is a parameter or an allocation of the kernel, and an
 *     allocation is written before it is read (a grouped block reduction reads and writes
 *     its array, of its group's size);
 *   - loops: a buffer that holds only the iterations right of its compute-at position is
 *     read inside the serial loops its writer ran in left of that position (else the
 *     reader sees another iteration's value);
 *   - syncs (once the sync pass ran): a shared or tensor-memory buffer read with other
 *     thread indices than it was written with (in its index or the conditions around the
 *     access) has a __syncthreads between the write and the read;
 *   - proxies: a tile a wgmma or tcgen05.mma reads through a descriptor (the async proxy) has a barrier
 *     with fence.proxy.async between its last write (st.shared, cp.async: the generic
 *     proxy) and the wgmma, as well as the sync above;
 *   - TMA: a tile a TMA load wrote (the async proxy, completing on an mbarrier) is read
 *     only after a wait on that mbarrier follows the load, instead of the sync above;
 *   - tensor-memory regions are allocated and deallocated exactly once.
 * Key decision: one walk (kir_visit) that reports the first broken rule; the pipeline
 * turns a failure into an internal error naming the pass. The two branches of an if/else
 * are checked each from the state before the if. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"

typedef struct Written {
  const KNode *op;   /* the last op that wrote the tensor (NULL: not yet) */
  KNode **loops;     /* the loops enclosing it then */
  int nloops;
  long syncs;        /* syncs seen before that write */
  long fences;       /* barriers with fence.proxy.async seen before that write */
  unsigned threads;  /* thread types its write index uses (bit per parallel type) */
  int bar;           /* written by a TMA load: the slot of its mbarrier, else -1 */
  long bar_waits;    /* waits on that barrier seen before the load */
} Written;

/* An if with an else branch: each branch starts from the state before the if, and after
 * it a tensor counts as written by the last branch that wrote it. */
typedef struct IfFrame {
  unsigned guard_threads;
  int thread_ifs;
  Written *before, *then_state; /* copies of `written` (NULL for an if without else) */
  long syncs_before, then_syncs;
} IfFrame;

typedef struct Verify {
  const KKernel *k;
  char *err;
  size_t errlen;
  KPath *path; /* the visitor's: the enclosing loops and ifs */
  long fences; /* barriers with fence.proxy.async seen */
  long syncs;
  unsigned guard_threads; /* thread types the enclosing ifs test */
  int thread_ifs;         /* enclosing ifs whose condition depends on a thread index */
  Written *written;       /* by tensor: index in params then allocs */
  int nslots;
  IfFrame *frames;
  int nframes, capframes;
  int *allocs, *deallocs, nregions;
  long *waits; /* by tensor slot: mbarrier waits seen on it */
} Verify;

static bool fail(Verify *v, const char *fmt, const char *name) {
  snprintf(v->err, v->errlen, fmt, name ? name : "?");
  return false;
}

/* Whether a loop among the first `upto` nodes of the path binds `name`. */
static bool var_in_scope(const Verify *v, const char *name, int upto) {
  for (int i = 0; i < upto; i++) {
    const KNode *n = v->path->node[i];
    if (n->kind == KN_FOR && n->u.loop.var && !strcmp(n->u.loop.var, name)) return true;
  }
  return false;
}

static bool single_thread(const Verify *v, cf_parallel_type pt) {
  int64_t ext;
  const KExpr *dim = v->k->block[ir_ptype_launch_dim(pt)];
  return dim && kx_is_const(dim, &ext) && ext == 1;
}

/* Checks scope (loops among the first `upto` of the path); accumulates the thread types e
 * reads into *threads. */
static bool expr_in(Verify *v, const KExpr *e, unsigned *threads, int upto) {
  if (!e) return true;
  if (e->kind == KX_VAR && !var_in_scope(v, e->name, upto)) return fail(v, "loop variable %s used outside its loop", e->name);
  if (e->kind == KX_BLOCK_ALL) { /* a barrier, whose value every thread shares */
    if (v->thread_ifs) return fail(v, "%s", "a block vote under a condition that depends on the thread index");
    return expr_in(v, e->a, NULL, upto);
  }
  /* only thread indices of a dimension launched wider than 1: a block's shared memory is
   * its own, whatever its blockIdx */
  if (e->kind == KX_THREAD && !e->is_dim && ir_ptype_is_thread(e->pt) && threads && !single_thread(v, e->pt))
    *threads |= 1u << e->pt;
  return expr_in(v, e->a, threads, upto) && expr_in(v, e->b, threads, upto) && expr_in(v, e->c, threads, upto);
}

static bool expr_ok(Verify *v, const KExpr *e, unsigned *threads) { return expr_in(v, e, threads, v->path->depth); }

static int tensor_slot(const Verify *v, const KTensor *t) {
  if (t->param >= 0 && t->param < v->k->nparams && v->k->params[t->param] == t) return t->param;
  for (int i = 0; i < v->k->nallocs; i++)
    if (v->k->allocs[i] == t) return v->k->nparams + i;
  return -1;
}

static bool in_path(const Verify *v, const KNode *loop) {
  for (int i = 0; i < v->path->depth; i++)
    if (v->path->node[i] == loop) return true;
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
    if (w->loops[j] && w->loops[j]->u.loop.var && !in_path(v, w->loops[j]))
      return fail(v, "%s is read outside a loop it was computed in (left of its compute-at position)", t->name);
  bool shared = t->mem == CF_MEM_SHARED || t->mem == CF_MEM_TENSOR;
  if (w->bar >= 0) /* the async proxy wrote it: a wait on its barrier orders that, not a __syncthreads */
    return v->waits[w->bar] > w->bar_waits ? true
                                           : fail(v, "%s is read after a TMA load with no wait on its mbarrier between", t->name);
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
  w->fences = v->fences;
  w->threads = threads | v->guard_threads;
  w->bar = -1;
}

/* A TMA load: the tile written by the async proxy, complete once its barrier is waited for. */
static bool tma_ok(Verify *v, const KNode *n) {
  unsigned th = 0;
  if (!access_ok(v, &n->u.tma.dst, &th) || !access_ok(v, &n->u.tma.bar, &th)) return false;
  for (int d = 0; d < v->k->tmaps[n->u.tma.map].rank; d++)
    if (!expr_ok(v, n->u.tma.coord[d], &th)) return false;
  record_write(v, n, n->u.tma.dst.t, th);
  Written *w = &v->written[tensor_slot(v, n->u.tma.dst.t)];
  w->bar = tensor_slot(v, n->u.tma.bar.t);
  w->bar_waits = v->waits[w->bar];
  return true;
}

static bool mbar_ok(Verify *v, const KNode *n) {
  unsigned th = 0;
  if (!access_ok(v, &n->u.mbar.bar, &th) || !expr_ok(v, n->u.mbar.parity, &th)) return false;
  if (n->kind == KN_MBAR_WAIT) v->waits[tensor_slot(v, n->u.mbar.bar.t)]++;
  return true;
}

/* A wgmma's or tcgen05.mma's operand tiles: read behind a sync and, being read by the
 * async proxy, behind a fence.proxy.async after their last write; tcgen05.mma writes its
 * accumulator in tensor memory (one thread: no thread index). */
static bool wgmma_ok(Verify *v, const KNode *n) {
  if (!ir_mma_by_descriptor(n->u.mma.instr)) return true;
  unsigned acc_th = 0;
  if (ir_mma_is_tcgen05(n->u.mma.instr) && n->u.mma.acc[0].t) {
    if (!access_ok(v, &n->u.mma.acc[0], &acc_th) || !expr_ok(v, n->u.mma.enable_d, &acc_th)) return false;
    record_write(v, n, n->u.mma.acc[0].t, 0);
  }
  for (int op = 0; op < 2; op++) {
    const KAccess *a = &n->u.mma.desc_start[op];
    unsigned th = v->guard_threads;
    if (!a->t) continue;
    if (!access_ok(v, a, &th) || !read_ok(v, a, th)) return false;
    const Written *w = &v->written[tensor_slot(v, a->t)];
    if (a->t->param < 0 && w->bar < 0 && w->fences == v->fences)
      return fail(v, "%s is read by a wgmma (the async proxy) with no fence.proxy.async after its last write", a->t->name);
  }
  return true;
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
  unsigned th = 0, zth = 0;
  if (!access_ok(v, &n->u.op.out, &th) || !expr_ok(v, n->u.op.zfill, &zth)) return false;
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

static bool loop_ok(Verify *v, const KNode *n) {
  if (!n->u.loop.extent || !n->u.loop.index) return fail(v, "%s", "a loop without extent or index");
  if (n->u.loop.var && (n->u.loop.index->kind != KX_VAR || n->u.loop.index->name != n->u.loop.var))
    return fail(v, "%s", "a serial loop whose index is not its variable");
  return expr_in(v, n->u.loop.extent, NULL, v->path->depth - 1); /* not in the scope of its own variable */
}

static Written *snapshot(Verify *v) {
  Written *s = malloc(sizeof(Written) * (size_t)v->nslots);
  if (s) memcpy(s, v->written, sizeof(Written) * (size_t)v->nslots);
  return s;
}

static bool if_enter(Verify *v, const KNode *n) {
  if (!n->u.cond.cond) return fail(v, "%s", "an if without condition");
  unsigned th = 0;
  if (!expr_ok(v, n->u.cond.cond, &th)) return false;
  if (v->nframes == v->capframes) {
    int cap = v->capframes ? 2 * v->capframes : 16;
    IfFrame *fr = realloc(v->frames, sizeof(IfFrame) * (size_t)cap);
    if (!fr) return fail(v, "%s", "out of memory verifying the kernel IR");
    v->frames = fr;
    v->capframes = cap;
  }
  IfFrame *f = &v->frames[v->nframes++];
  *f = (IfFrame){v->guard_threads, v->thread_ifs, NULL, NULL, v->syncs, 0};
  if (n->u.cond.otherwise.len && !n->u.cond.concurrent && !(f->before = snapshot(v)))
    return fail(v, "%s", "out of memory verifying the kernel IR");
  v->guard_threads |= th;
  v->thread_ifs += th != 0;
  return true;
}

/* Before the else branch: the then branch's state is kept aside, the state before the if
 * comes back. */
static bool if_else(Verify *v, const KNode *n) {
  IfFrame *f = &v->frames[v->nframes - 1];
  if (n->u.cond.concurrent) return true; /* the else branch runs after the then branch's writes, as far as it reads */
  if (!(f->then_state = snapshot(v))) return fail(v, "%s", "out of memory verifying the kernel IR");
  f->then_syncs = v->syncs;
  memcpy(v->written, f->before, sizeof(Written) * (size_t)v->nslots);
  v->syncs = f->syncs_before;
  return true;
}

static void if_leave(Verify *v) {
  IfFrame *f = &v->frames[--v->nframes];
  if (f->then_state) {
    for (int s = 0; s < v->nslots; s++)
      if (v->written[s].op == f->before[s].op && v->written[s].syncs == f->before[s].syncs) v->written[s] = f->then_state[s];
    if (f->then_syncs > v->syncs) v->syncs = f->then_syncs;
  }
  free(f->before);
  free(f->then_state);
  v->guard_threads = f->guard_threads;
  v->thread_ifs = f->thread_ifs;
}

static bool region_ok(Verify *v, const KNode *n) {
  if (n->u.region.region < 0 || n->u.region.region >= v->nregions) return fail(v, "%s", "a tensor-memory region out of range");
  (n->kind == KN_TMEM_ALLOC ? v->allocs : v->deallocs)[n->u.region.region]++;
  return true;
}

/* A barrier (a sync, a block reduction): every thread of the block reaches it. */
static bool barrier_ok(Verify *v) {
  v->syncs++;
  return v->thread_ifs ? fail(v, "%s", "a __syncthreads under a condition that depends on the thread index") : true;
}

/* A grouped reduction reads every element of its array, its group's size (written
 * before, in the loop of the elements: the array holds each iteration's, so the
 * compute-at rule of read_ok does not apply), and writes them back. */
static bool group_ok(Verify *v, const KNode *n) {
  int64_t size;
  if (!n->u.acc.group) return true;
  const KAccess all = {.t = n->u.acc.array};
  if (!all.t || !kx_is_const(all.t->size, &size) || size != n->u.acc.group)
    return fail(v, "the array of grouped reduction %s is not of its group's size", n->u.acc.var);
  unsigned th = v->guard_threads;
  if (!access_ok(v, &all, &th)) return false;
  if (!v->written[tensor_slot(v, all.t)].op) return fail(v, "%s is read before it is written", all.t->name);
  record_write(v, n, all.t, 0);
  return true;
}

/* The visitor's callbacks: a failed check stops the walk. */
static bool pre(KVisitor *kv, KNode *n) {
  Verify *v = kv->user;
  bool ok = true;
  switch (n->kind) {
  case KN_FOR: ok = loop_ok(v, n); break;
  case KN_IF: ok = if_enter(v, n); break;
  case KN_MMA: ok = wgmma_ok(v, n); break;
  case KN_SYNC:
    v->fences += n->u.sync.proxy_async;
    ok = barrier_ok(v);
    break;
  case KN_BLOCK_REDUCE: ok = group_ok(v, n) && barrier_ok(v); break; /* it synchronizes the block */
  case KN_OP: ok = op_ok(v, n); break;
  case KN_TMEM_LD:
  case KN_TMEM_ST: ok = tmem_ok(v, n); break;
  case KN_TMEM_ALLOC:
  case KN_TMEM_DEALLOC: ok = region_ok(v, n); break;
  case KN_TMA_LOAD: ok = tma_ok(v, n); break;
  case KN_MBAR_INIT:
  case KN_MBAR_EXPECT_TX:
  case KN_MBAR_WAIT:
  case KN_MBAR_ARRIVE:
  case KN_TC05_COMMIT: ok = mbar_ok(v, n); break;
  default: break;
  }
  kv->stop |= !ok;
  return ok;
}

static void between(KVisitor *kv, KNode *n, int block) {
  (void)block;
  if (n->kind == KN_IF && n->u.cond.otherwise.len) kv->stop |= !if_else(kv->user, n);
}

static void post_if(KVisitor *kv, KNode *n) {
  (void)n;
  if_leave(kv->user);
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

static bool walk(Verify *v) {
  KVisitor kv = {.between = between, .user = v};
  kir_visit_all(&kv, pre, NULL);
  kv.post[KN_IF] = post_if;
  v->path = &kv.path;
  bool ok = kir_visit(&kv, (KBlock *)&v->k->body); /* a read-only walk */
  if (kv.oom) return fail(v, "%s", "out of memory verifying the kernel IR");
  while (v->nframes > 0) if_leave(v); /* a walk stopped inside ifs */
  return ok;
}

bool kir_verify(const KKernel *k, char *err, size_t errlen) {
  Verify v = {.k = k, .err = err, .errlen = errlen, .nregions = k->nregions, .nslots = k->nparams + k->nallocs + 1};
  v.written = calloc((size_t)v.nslots, sizeof(Written));
  v.allocs = calloc((size_t)k->nregions + 1, sizeof(int));
  v.deallocs = calloc((size_t)k->nregions + 1, sizeof(int));
  v.waits = calloc((size_t)v.nslots, sizeof(long));
  bool ok = v.written && v.allocs && v.deallocs && v.waits ? walk(&v) && regions_paired(&v)
                                                : fail(&v, "%s", "out of memory verifying the kernel IR");
  free(v.written);
  free(v.allocs);
  free(v.deallocs);
  free(v.waits);
  free(v.frames);
  return ok;
}
