/* lower/mma_tcgen05.c: Blackwell's tcgen05.mma, a part of the mma pass (lower/mma.c finds
 * each sum whose last three loop axes are on MMA and that lives in tensor memory, asks here
 * to validate it, builds its KN_MMA as for wgmma, with the operands' descriptors found by
 * lower/mma_wgmma.c from the tiles' own indices, and asks here to finish it; at the end of
 * the pass, the groups).
 *
 * tcgen05.mma.cta_group::1.kind::f16 [d], a-desc, b-desc, idesc, enable-input-d: one
 * thread issues it; D (128 x N float, N a multiple of 16 up to 256) is tensor memory, row m
 * in lane m and column n in column n from d (PTX ISA, "tcgen05 Matrix fragments", layout D
 * for M = 128); A (128 x 16) and B (16 x N) come from shared memory through 64-bit
 * descriptors in the canonical layouts wgmma reads (same LBO and SBO), encoded
 * differently: start >> 4 (bits 0..13), LBO >> 4 (16..29), SBO >> 4 (32..45), the fixed
 * 0b001 at 46..48, base offset (49..51, 0 here), LBO mode (52, 0: relative), layout type at
 * 61..63 (0 none, 1 128-byte with 32-byte atoms, 2 128-byte, 4 64-byte, 6 32-byte
 * swizzle) (PTX ISA, "Shared Memory Descriptor"). The 32-bit instruction descriptor: D
 * format at bits 4..5 (1: f32), A and B formats at 7..9 and 10..12 (0 f16, 1 bf16), negate
 * bits 13, 14, the major-ness of A and B at 15 and 16 (1: MN-major), N >> 3 at 17..22, M >>
 * 4 at 24..28; sparsity, saturation and the .ws shift 0 (PTX ISA, "Instruction
 * descriptor", kind::f16).
 *
 * Requires: the KN_MMA (acc[0]: the accumulator at (0, 0, 0); desc, mn_major, desc_start
 * as lower_wgmma_operands found them) and the sum op it replaces. Establishes: the
 * accumulator's layout checked (lane m, column col(0, 0) + n for every element of the
 * tile), the descriptors re-encoded, idesc, enable_d (0 on the sum's first K step, where
 * the instruction writes D = A x B: the sum's initialization, a write of tensor memory no
 * instruction does, is dropped); then around each outermost statement holding only
 * tcgen05.mmas (a K tile's K/16 loop): tcgen05.fence::after_thread_sync before it, and
 * after it the elected thread's tcgen05.commit to the group's mbarrier (an int64 of shared
 * memory, one arrival a phase, initialized by the elected thread at the kernel's start),
 * every thread's wait on the phase of this iteration (the parity of the linear index of the
 * serial loops around it) and tcgen05.fence::after_thread_sync, so that the next fill of
 * the stage and the epilogue's tcgen05.ld come after the instructions; the barrier before
 * the group gets fence.proxy.async (the tiles were written by the generic proxy).
 * Key decision: one K tile's instructions, commit, wait (no instruction in flight across
 * iterations): simple and correct first; the host emulation (codegen/runtime/
 * host_tcgen05.h) performs the instructions only when their commit's barrier is waited for,
 * so a missing wait reads a refilled stage or an unwritten accumulator and the kernel
 * differs from the evaluator. */
#include <string.h>

#include "lower/lower.h"

enum { TC_M = 128, TC_K = 16, TC_N_STEP = 16, TC_N_MAX = 256 };

static _Noreturn void refuse(LowerCtx *c, Val *r, const char *rule) {
  lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: the tcgen05.mma of %s: %s", lower_tv_str(c, r), rule);
}

/* The MMA axes' extents, or refused. */
static void mma_extents(LowerCtx *c, Val *r, int64_t ext[3]) {
  int nl = TV(r)->nloop, j0 = nl - 3, nmma = 0;
  for (int j = 0; j < nl; j++) nmma += ID(TV(r)->loop[j])->ptype == CF_PT_MMA;
  bool ok = j0 >= 0 && nmma == 3;
  for (int j = 0; ok && j < 3; j++)
    ok = ID(TV(r)->loop[j0 + j])->ptype == CF_PT_MMA && ir_scalar_const_value(ID(TV(r)->loop[j0 + j])->extent, &ext[j]);
  if (!ok) refuse(c, r, "its MMA axes must be its last three loop axes, of constant extents (schedule them with cf_mma_tile)");
  if (ext[0] != TC_M || ext[1] % TC_N_STEP || ext[1] < TC_N_STEP || ext[1] > TC_N_MAX || ext[2] != TC_K)
    lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: the tcgen05.mma of %s: m128nNk16 needs MMA axes of 128, a multiple "
               "of 16 up to 256, and 16; they are %lld, %lld and %lld", lower_tv_str(c, r), (long long)ext[0],
               (long long)ext[1], (long long)ext[2]);
}

const IrMmaInstr *lower_tcgen05_validate(LowerCtx *c, Val *r, IrMmaPattern *p) {
  const IrMmaInstr *in = ir_mma_instr(CF_MMA_TCGEN05_M128NK16);
  int64_t ext[3];
  mma_extents(c, r, ext);
  int j0 = TV(r)->nloop - 3;
  for (int j = 0; j < j0; j++) {
    Val *id = TV(r)->loop[j];
    cf_parallel_type pt = lower_ptype(c, id);
    if (ID(id)->iter_type == CF_ITER_REDUCTION && pt != CF_PT_SERIAL && pt != CF_PT_UNROLL)
      refuse(c, r, "its K steps must be serial loops of the one thread that issues it (a reduced axis outside the "
                   "instruction is parallelized)");
  }
  char why[512];
  if (!ir_mma_match(r, in, ir_mma_root_axis(r, TV(r)->loop[j0]), p, why, sizeof why, "compile"))
    lower_fail(c, CF_ERR_INVALID_SCHEDULE, "%s", why);
  /* an empty K leaves the accumulator unwritten (its initialization is the first K step's) */
  lower_validate(c, kx_bin(c->a, OP_GT, lower_extent(c, TV(r)->root[p->k_axis]), kx_const(c->a, 0)),
                 "compile: the tcgen05.mma of %s: its K is empty, and D = 0 is no instruction's (the matmul row keeps "
                 "mma.sync for it)", TV(r)->display_name);
  return in;
}

/* ---- the instruction ------------------------------------------------------------------- */

/* The M, N and K loop variables of the sum at their values. */
typedef struct TcEnv {
  const char *var[3];
  int64_t val[3];
} TcEnv;

static bool tc_leaf(void *user, const KExpr *e, int64_t *out) {
  const TcEnv *v = user;
  for (int i = 0; i < 3; i++)
    if (e->kind == KX_VAR && v->var[i] && !strcmp(e->name, v->var[i])) return *out = v->val[i], true;
  return false;
}

/* Element (m, n) of the tile is the accumulator's lane m and column col(0, 0) + n, for
 * every m and n: the hardware's layout D. */
static void check_layout(LowerCtx *c, const KNode *sum, int64_t n_ext) {
  Val *r = sum->u.op.src->out[0];
  const KAccess *out = &sum->u.op.out;
  int j0 = TV(r)->nloop - 3;
  TcEnv v = {{NULL}, {0}};
  for (int j = 0; j < 3; j++) v.var[j] = sum->u.op.loops[j0 + j]->u.loop.var;
  KxEnv env = {0, NULL, NULL, tc_leaf, &v};
  int64_t lane, col, col0 = 0;
  for (int64_t m = 0; m < TC_M; m++)
    for (int64_t n = 0; n < n_ext; n++) {
      v.val[0] = m, v.val[1] = n;
      if (!out->lane || !out->col || !kx_eval(out->lane, &env, &lane) || !kx_eval(out->col, &env, &col))
        refuse(c, r, "the tensor-memory lane and column of its accumulator must depend on the instruction's M and N "
                     "alone (tile the whole accumulator with cf_mma_tile)");
      if (!m && !n) col0 = col;
      if (lane != m || col != col0 + n)
        refuse(c, r, "its accumulator must hold row m of the tile in lane m and column n in column n (its dim-sep "
                     "position between the M and N tiles, cf_set_tmem_dim_sep_pos; the tile's rows the allocated "
                     "lanes)");
    }
}

uint64_t lower_tcgen05_desc_bits(int64_t lbo, int64_t sbo, int swizzle_bits) {
  uint64_t layout = swizzle_bits == 3 ? 2 : swizzle_bits == 2 ? 4 : swizzle_bits == 1 ? 6 : 0;
  return ((uint64_t)(lbo >> 4) & 0x3FFF) << 16 | ((uint64_t)(sbo >> 4) & 0x3FFF) << 32 | (uint64_t)1 << 46 | layout << 61;
}

uint32_t lower_tcgen05_idesc(cf_dtype ab, int m, int n, bool a_mn_major, bool b_mn_major) {
  uint32_t fmt = ab == CF_BFLOAT16 ? 1u : 0u;
  return 1u << 4 | fmt << 7 | fmt << 10 | (uint32_t)a_mn_major << 15 | (uint32_t)b_mn_major << 16 |
         ((uint32_t)n >> 3 & 0x3Fu) << 17 | ((uint32_t)m >> 4 & 0x1Fu) << 24;
}

/* A descriptor lower_wgmma_operands encoded for wgmma (swizzle mode at bit 62: 1 128-byte,
 * 2 64-byte, 3 32-byte) in tcgen05's encoding. */
static uint64_t from_wgmma(uint64_t w) {
  uint64_t mode = w >> 62;
  int bits = mode == 1 ? 3 : mode == 2 ? 2 : mode == 3 ? 1 : 0;
  return lower_tcgen05_desc_bits((int64_t)((w >> 16) & 0x3FFF) << 4, (int64_t)((w >> 32) & 0x3FFF) << 4, bits);
}

/* Whether an earlier K step wrote the accumulator (non-zero): a reduced loop of the sum
 * outside the instruction at a non-zero index, counted. */
static KExpr *accumulate(LowerCtx *c, const KNode *sum) {
  Val *r = sum->u.op.src->out[0];
  KExpr *e = kx_const(c->a, 0);
  for (int j = 0; j < TV(r)->nloop - 3 && j < sum->u.op.nloop; j++)
    if (ID(TV(r)->loop[j])->iter_type == CF_ITER_REDUCTION && sum->u.op.loop_index[j])
      e = kx_bin(c->a, OP_ADD, e, kx_bin(c->a, OP_NE, sum->u.op.loop_index[j], kx_const(c->a, 0)));
  return e;
}

void lower_tcgen05_finish(LowerCtx *c, KNode *n, const KNode *sum) {
  check_layout(c, sum, n->u.mma.n);
  for (int op = 0; op < 2; op++) n->u.mma.desc[op] = from_wgmma(n->u.mma.desc[op]);
  n->u.mma.idesc = lower_tcgen05_idesc(n->u.mma.in_dtype, TC_M, n->u.mma.n, n->u.mma.mn_major[0], n->u.mma.mn_major[1]);
  n->u.mma.enable_d = accumulate(c, sum);
  c->k->tcgen05_mma = true;
}

/* ---- the accumulators' initializations --------------------------------------------------- */

static bool on_mma_axes(const Val *tv) {
  for (int j = 0; j < TV((Val *)tv)->nloop; j++)
    if (ID(TV((Val *)tv)->loop[j])->ptype == CF_PT_MMA) return true;
  return false;
}

/* The initialization of a tcgen05 accumulator: the instruction's enable_d does it. */
static void drop_init(KMutator *m, KNode *n, KBlock *out) {
  Val *tv = n->u.op.src ? n->u.op.src->out[0] : NULL;
  if (n->u.op.reduction_init && tv && TV(tv)->mem == CF_MEM_TENSOR && on_mma_axes(tv)) return;
  kb_push(m->arena, out, n);
}

/* A loop emptied by that goes too. */
static void drop_emptied(KMutator *m, KNode *n, KBlock *out) {
  bool had = n->u.loop.body.len > 0;
  kir_mutate_children(m, n);
  if (!had || n->u.loop.body.len) kb_push(m->arena, out, n);
}

/* ---- groups: fence, commit, wait ---------------------------------------------------------- */

static bool is_tc05(const KNode *n) { return n->kind == KN_MMA && ir_mma_is_tcgen05(n->u.mma.instr); }

/* A statement holding tcgen05.mmas and nothing else (comments aside). */
static bool only_tc05(const KNode *n) {
  if (is_tc05(n)) return true;
  if (n->kind != KN_FOR || !n->u.loop.body.len) return false;
  bool any = false;
  for (int i = 0; i < n->u.loop.body.len; i++) {
    const KNode *o = n->u.loop.body.items[i];
    if (o->kind == KN_COMMENT) continue;
    if (!only_tc05(o)) return false;
    any = true;
  }
  return any;
}

static bool has_tc05(const KBlock *b) {
  for (int i = 0; i < b->len; i++) {
    if (is_tc05(b->items[i])) return true;
    KBlock *inner[KN_MAX_BLOCKS];
    int nb = kn_blocks(b->items[i], inner);
    for (int k = 0; k < nb; k++)
      if (has_tc05(inner[k])) return true;
  }
  return false;
}

/* A block being walked and the statement at hand, linked to the enclosing one's frame. */
typedef struct TcFrame {
  KBlock *b;
  int i;
  const struct TcFrame *up;
} TcFrame;

/* The barrier nearest before the statement at hand: a __syncthreads, or a TMA tile's wait. */
static KNode *barrier_before(const TcFrame *fr) {
  for (; fr; fr = fr->up)
    for (int j = fr->i - 1; j >= 0; j--) {
      KNode *n = fr->b->items[j];
      if ((n->kind == KN_SYNC && !n->u.sync.grid) || n->kind == KN_MBAR_WAIT) return n;
    }
  return NULL;
}

/* The parity of the phase the group at fr completes: its count so far, the linear index of
 * the serial loops around it (each iteration commits once), modulo 2. */
static KExpr *parity(LowerCtx *c, const TcFrame *fr) {
  Arena *a = c->a;
  KExpr *idx = kx_const(a, 0), *scale = kx_const(a, 1);
  for (const TcFrame *f = fr; f->up; f = f->up) {
    KNode *l = f->up->b->items[f->up->i];
    if (l->kind != KN_FOR || !l->u.loop.var || &l->u.loop.body != f->b) continue;
    idx = kx_bin(a, OP_ADD, idx, kx_bin(a, OP_MUL, kx_var(a, l->u.loop.var), scale));
    scale = kx_bin(a, OP_MUL, scale, l->u.loop.extent);
  }
  return kx_bin(a, OP_MOD, idx, kx_const(a, 2));
}

static KNode *node(LowerCtx *c, KnKind kind, KTensor *bar) {
  KNode *n = ARENA_NEW(c->a, KNode);
  n->kind = kind;
  if (bar) n->u.mbar.bar = (KAccess){.t = bar, .index = kx_const(c->a, 0)};
  return n;
}

/* The group's mbarrier: an int64 of shared memory, one arrival a phase (the commit); its
 * initialization is kept in `inits` until the walk is over (place_inits). */
static KTensor *barrier(LowerCtx *c, const KNode *mma, KBlock *inits) {
  KKernel *k = c->k;
  KTensor *b = ARENA_NEW(c->a, KTensor);
  *b = (KTensor){.name = arena_printf(c->a, "%s_mma_bar%d", mma->u.mma.acc[0].t->name, inits->len), .fusion_tv_name = -1,
                 .mem = CF_MEM_SHARED, .dtype = CF_INT64, .param = -1, .size = kx_const(c->a, 1), .tmem_region = -1};
  KTensor **all = ARENA_ARRAY(c->a, KTensor *, k->nallocs + 1);
  if (k->nallocs) memcpy(all, k->allocs, sizeof(KTensor *) * (size_t)k->nallocs);
  all[k->nallocs++] = b;
  k->allocs = all;
  KNode *i = node(c, KN_MBAR_INIT, b);
  i->u.mbar.value = 1;
  kb_push(c->a, inits, i);
  return b;
}

/* The barriers' initializations by the elected thread at the kernel's start, before a
 * __syncthreads (beside the TMA tiles' barriers when there are: one block, one sync). */
static void place_inits(LowerCtx *c, const KBlock *inits) {
  KKernel *k = c->k;
  KNode *init = k->body.len ? k->body.items[0] : NULL;
  if (!init || init->kind != KN_IF || !init->u.cond.then.len || init->u.cond.then.items[0]->kind != KN_MBAR_INIT) {
    init = node(c, KN_IF, NULL);
    init->u.cond.cond = lower_elected_thread(c);
    kb_insert(c->a, &k->body, 0, node(c, KN_SYNC, NULL));
    kb_insert(c->a, &k->body, 0, init);
  }
  for (int i = 0; i < inits->len; i++) kb_push(c->a, &init->u.cond.then, inits->items[i]);
}

/* The first tcgen05.mma of an only_tc05 statement. */
static const KNode *first_tc05(const KNode *n) {
  if (is_tc05(n)) return n;
  for (int i = 0; i < n->u.loop.body.len; i++)
    if (n->u.loop.body.items[i]->kind != KN_COMMENT) return first_tc05(n->u.loop.body.items[i]);
  return NULL;
}

/* fence; the group; commit; wait for the phase; fence. Returns the nodes added after it. */
static int wrap(LowerCtx *c, const TcFrame *fr, KBlock *inits) {
  KBlock *b = fr->b;
  KNode *sync = barrier_before(fr);
  if (!sync)
    lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: a tcgen05.mma reads shared tiles with no barrier before it (the "
               "async proxy reads them: their writes need fence.proxy.async and a __syncthreads)");
  if (sync->kind == KN_SYNC) sync->u.sync.proxy_async = true; /* TMA's boxes need none: the async proxy wrote them */
  KTensor *bar = barrier(c, first_tc05(b->items[fr->i]), inits);
  KNode *wait = node(c, KN_MBAR_WAIT, bar);
  wait->u.mbar.parity = parity(c, fr);
  kb_insert(c->a, b, fr->i, node(c, KN_TC05_FENCE, NULL));
  kb_insert(c->a, b, fr->i + 2, node(c, KN_TC05_COMMIT, bar));
  kb_insert(c->a, b, fr->i + 3, wait);
  kb_insert(c->a, b, fr->i + 4, node(c, KN_TC05_FENCE, NULL));
  return 4;
}

static void groups(LowerCtx *c, KBlock *b, const TcFrame *up, KBlock *inits) {
  TcFrame fr = {b, 0, up};
  for (fr.i = 0; fr.i < b->len; fr.i++) {
    KNode *n = b->items[fr.i];
    if (only_tc05(n)) {
      fr.i += wrap(c, &fr, inits);
      continue;
    }
    KBlock *inner[KN_MAX_BLOCKS];
    int nb = kn_blocks(n, inner);
    for (int k = 0; k < nb; k++)
      if (has_tc05(inner[k])) groups(c, inner[k], &fr, inits);
  }
}

/* Descends only into blocks holding a tcgen05.mma, so other kernels cost a scan. */
void lower_tcgen05_groups(LowerCtx *c) {
  if (!has_tc05(&c->k->body)) return;
  KMutator m = {.arena = c->a, .fn = {[KN_OP] = drop_init, [KN_FOR] = drop_emptied}, .user = c};
  kir_mutate(&m, &c->k->body);
  KBlock inits = {0};
  groups(c, &c->k->body, NULL, &inits);
  place_inits(c, &inits);
}
