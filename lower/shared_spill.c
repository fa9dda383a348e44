/* lower/shared_spill.c: the shared_spill pass. A Local tensor given cf_spill_to_shared(K)
 * keeps its first K elements (per thread, in allocation order) in registers and the rest
 * in shared memory: the pass makes that shared part a Shared allocation of its own, named
 * after the tensor (`T5_s`), of ceil((size - K) / V) chunks a thread, laid out in 16-byte chunks
 * of V = 16 / element-size elements: chunk j of thread t at (j x threads + t) x V, so the
 * threads of a warp touch consecutive chunks (no bank conflict). The tensor's accesses keep
 * their element index i; the code generator places i < K in the register array and the
 * others in the chunk (codegen/runtime/cuda_helpers.cuh, cf_spill_at), which the CUDA
 * compiler resolves at compile time once the constant loops are unrolled.
 * Where the tensor is filled by 16-byte vector copies from global memory, once per thread
 * (no serial loop outside its compute-at position runs the fill again), the copies into
 * the shared part are cp.async (no register holds them on the way),
 * and one commit and wait(0) follow each fill's loop nest (the outermost statement inside
 * the tensor's compute-at position): each thread reads back only its own chunks, so its
 * own wait is all the ordering needed, and no barrier is added. The commit names the
 * tensor, whose register part the same nest loads with ordinary loads: the CUDA code makes
 * those loads issue before it (ptxas, free to move an ordinary load past a cp.async wait,
 * put 4 of batch norm's 16 after it, a second trip to memory: 74.0 against 71.6 us).
 * Requires: the kernel IR complete (after simplify: no pass moves accesses later), block
 * dimensions known. Establishes: KTensor.spill, reg_elems and spill_threads; the shared part
 * among k->allocs, before local_reuse (which leaves spilled tensors alone) and smem_layout.
 * Key decision: the host backend places the elements as CUDA does (host_race.h's
 * cfh_spill_at: an access outside the shared part stops the kernel, the shared accesses
 * are recorded for the race detector), its fills plain copies (the wait follows before any
 * read either way). Refused, naming the tensor: not Local, a symbolic block,
 * elements wider than a chunk, K not below the size or not a multiple of V. */
#include "ir/checked.h"
#include "lower/lower.h"

typedef struct Spill {
  LowerCtx *c;
  const KTensor *t;
  int ca;              /* the tensor's compute-at position */
  const KNode **after; /* statements a commit and wait follow */
  int nafter, cap;
} Spill;

/* Block threads, a constant, or a refusal naming tv. */
static int64_t block_threads(LowerCtx *c, Val *tv) {
  int64_t n = 1, v;
  for (int d = 0; d < 3; d++) {
    if (!kx_is_const(c->k->block[d], &v))
      lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: %s is spilled to shared memory (cf_spill_to_shared), which needs "
                 "a constant block size; blockDim.%c is symbolic", TV(tv)->display_name, "xyz"[d]);
    n *= v;
  }
  return n;
}

/* The statement a fill's commit and wait follow: its loop just inside the tensor's
 * compute-at position, else the op itself. */
static const KNode *fill_statement(const KNode *n, int ca) {
  for (int j = ca; j < n->u.op.nloop; j++)
    if (n->u.op.loops[j]) return n->u.op.loops[j];
  return n;
}

/* The serial loops of constant extent inside the compute-at position around an access
 * are unrolled: its index is then a constant wherever it is used, which keeps the register
 * part in registers (a loop the CUDA compiler keeps rolled, as one with a cp.async in it,
 * would put the array in local memory: 256 bytes of stack for batch norm's 64 floats). */
static void unroll_around(const Spill *s, KNode *n) {
  int64_t e;
  for (int j = s->ca; j < n->u.op.nloop; j++) {
    KNode *l = n->u.op.loops[j];
    if (l && l->u.loop.var && l->u.loop.pt == CF_PT_SERIAL && kx_is_const(l->u.loop.extent, &e)) l->u.loop.pt = CF_PT_UNROLL;
  }
}

/* Whether a serial loop outside the compute-at position runs the fill again: the next
 * fill's cp.async could then land before this thread's reads of the last one have (no
 * ordering between a shared load and a later asynchronous copy to the same place is
 * promised), so such a fill stays an ordinary copy. */
static bool refilled(const Spill *s, const KNode *n) {
  int64_t e;
  for (int j = 0; j < s->ca && j < n->u.op.nloop; j++) {
    const KNode *l = n->u.op.loops[j];
    if (l && l->u.loop.var && !(kx_is_const(l->u.loop.extent, &e) && e == 1)) return true;
  }
  return false;
}

static bool visit_op(KVisitor *v, KNode *n) {
  Spill *s = v->user;
  bool writes = n->u.op.out.t == s->t, accessed = writes;
  for (int k = 0; k < n->u.op.nin; k++) accessed |= n->u.op.in[k].t == s->t;
  if (!accessed) return true;
  /* a vector moves at most 16 bytes from an aligned index: it never crosses a chunk */
  unroll_around(s, n);
  if (!writes || n->u.op.reduction_init || n->u.op.zfill || !lower_copies_16_bytes_from_global(n) || refilled(s, n))
    return true;
  n->u.op.async = true; /* the code generators' cp_async: cp.async for the shared part */
  const KNode *at = fill_statement(n, s->ca);
  for (int i = 0; i < s->nafter; i++)
    if (s->after[i] == at) return true;
  if (s->nafter == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 4;
    const KNode **grown = ARENA_ARRAY(s->c->a, const KNode *, s->cap);
    for (int i = 0; i < s->nafter; i++) grown[i] = s->after[i];
    s->after = grown;
  }
  s->after[s->nafter++] = at;
  return true;
}

/* Each fill statement, then its commit and wait. */
static void after_fills(KMutator *m, KNode *n, KBlock *out) {
  Spill *s = m->user;
  kir_mutate_children(m, n);
  kb_push(m->arena, out, n);
  for (int i = 0; i < s->nafter; i++)
    if (s->after[i] == n) {
      KNode *commit = lower_async_node(s->c, KN_ASYNC_COMMIT, 0);
      commit->u.async.issued = s->t;
      kb_push(m->arena, out, commit);
      kb_push(m->arena, out, lower_async_node(s->c, KN_ASYNC_WAIT, 0));
    }
}

static KTensor *shared_part(LowerCtx *c, const KTensor *t, int64_t elems) {
  KTensor *p = ARENA_NEW(c->a, KTensor);
  p->name = arena_printf(c->a, "%s_s", t->name);
  p->fusion_tv_name = t->fusion_tv_name;
  p->mem = CF_MEM_SHARED;
  p->dtype = t->dtype;
  p->param = -1;
  p->tmem_region = -1;
  p->size = kx_const(c->a, elems);
  return p;
}

static void spill(LowerCtx *c, Val *tv, PtrVec *allocs) {
  KTensor *t = c->info[tv->id].kt;
  int64_t k = TV(tv)->reg_elems, size, bytes = (int64_t)cf_dtype_size(t->dtype), chunk = bytes > 0 ? 16 / bytes : 0;
  const char *name = TV(tv)->display_name;
  if (t->mem != CF_MEM_LOCAL)
    lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: %s is spilled to shared memory (cf_spill_to_shared) but is not a "
               "Local tensor", name);
  kx_is_const(t->size, &size); /* a constant: the tensors pass refuses Local tensors of symbolic size */
  if (chunk < 1)
    lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: %s is spilled to shared memory (cf_spill_to_shared) in 16-byte "
               "chunks, but its elements of %s are wider", name, cf_dtype_name(t->dtype));
  if (k >= size || k % chunk)
    lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: %s keeps %lld of its %lld elements in registers "
               "(cf_spill_to_shared): it must be fewer than all and a multiple of a 16-byte chunk (%lld elements)",
               name, (long long)k, (long long)size, (long long)chunk);
  int64_t chunks = ck_ceil_div(size - k, chunk); /* the last may be partly used */
  t->spill_threads = block_threads(c, tv);
  t->spill = shared_part(c, t, chunks * chunk * t->spill_threads);
  t->reg_elems = k;
  ptrvec_push(c->a, allocs, t->spill);
  Spill s = {c, t, TV(tv)->ca_pos, NULL, 0, 0};
  KVisitor v = {.pre = {[KN_OP] = visit_op}, .user = &s, .arena = c->a};
  kir_visit(&v, &c->k->body);
  if (!s.nafter) return;
  KMutator m = {.arena = c->a, .user = &s};
  m.fn[KN_FOR] = m.fn[KN_OP] = m.fn[KN_IF] = after_fills;
  kir_mutate(&m, &c->k->body);
}

void lower_shared_spill(LowerCtx *c) {
  PtrVec allocs = {0};
  for (int i = 0; i < c->k->nallocs; i++) ptrvec_push(c->a, &allocs, c->k->allocs[i]);
  int before = allocs.len;
  for (int i = 0; i < c->ntvs; i++)
    if (TV(c->tvs[i])->reg_elems > 0 && c->info[c->tvs[i]->id].kt) spill(c, c->tvs[i], &allocs);
  if (allocs.len == before) return;
  c->k->allocs = (KTensor **)allocs.items;
  c->k->nallocs = allocs.len;
}
