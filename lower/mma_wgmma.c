/* lower/mma_wgmma.c: Hopper's warpgroup instruction, a part of the mma pass (lower/mma.c
 * builds each KN_MMA, then asks here for a wgmma's matrix descriptors; at the end of the
 * pass, the wgmma groups and their fences).
 *
 * wgmma.mma_async reads A (64 x 16) and B (16 x N) from shared memory through 64-bit matrix
 * descriptors: the start address >> 4 (bits 0..13), the leading byte offset >> 4 (16..29),
 * the stride byte offset >> 4 (32..45), the swizzle mode (62..63: 1 128-byte, 2 64-byte,
 * 3 32-byte). Element (mn, k) of the operand (mn: A's row m, B's column n) lies, for 16-bit
 * elements (8 to a 16-byte chunk) in rows of W chunks (W = 8, 4, 2 for 128, 64, 32 bytes),
 * at the byte address start + off, swizzled by Sw<log2 W, 4, 3> (the chunk bits 4.. XORed
 * with the row bits 7..: layout/'s cf_swizzle_apply), where off is
 *   K-major (rows along mn, K contiguous): (mn % 8) 16 W + (mn / 8) SBO + 2 k
 *   MN-major (rows along k, mn contiguous): 2 (mn % 8W) + (mn / 8W) LBO + (k % 8) 16 W + (k / 8) SBO
 * (PTX ISA, "Matrix Descriptor Format" and the canonical layouts of "Shared Memory Matrix
 * Layout"; CuTe's make_gmma_desc). MN-major is the transpose bit, which 16-bit types have.
 *
 * Requires: the KN_MMA and moved_at (operand op's tile access at an instruction position,
 * the cast's own index with the loop variables and the lane replaced). Establishes: desc,
 * desc_start, mn_major of each operand, the tile's smem_align (the swizzle's period: its
 * base must be aligned to it, 1024 bytes for 128-byte rows, as the hardware swizzles
 * absolute addresses); then wgmma.fence before, and commit + wait_group 0 after, each
 * outermost statement holding only wgmmas (a K tile's K/16 loop), and the barrier before
 * it marked to run fence.proxy.async first (the tiles were written by the generic proxy:
 * st.shared and cp.async). When that statement is its loop's body's and both tiles are
 * circular-buffered a stage short of their prefetch limit (pipelined()), the wait is
 * wait_group 1, one group in flight while the next K tile's issues, and a wait_group 0
 * follows the loop (before the epilogue reads the accumulator).
 * Key decision: the layout is found, not assumed: each candidate (K- or MN-major, each
 * swizzle) takes LBO and SBO from the tile's own index at three probe positions and must
 * then give every element of the instruction's tile exactly the address the tile's index
 * names, at sampled values of every variable around the instruction (each loop and thread
 * index at 0, 1 and its last value, run-time extents and block indices at samples), the
 * index compiled once for it (kx_program, lower/kx_program.c: 3.1 -> 0.26 s for a 128 x
 * 256 tile's B); no candidate: refused naming the tile. The host emulation (codegen/runtime/host_wgmma.h)
 * decodes the descriptor again on its own, so a wrong field fails against the evaluator. */
#include <string.h>

#include "cfuser/layout.h"
#include "lower/lower.h"

enum { WG_MAX_LEAVES = 16, WG_MAX_COMBOS = 4096, WG_ESZ = 2 };

/* The variables an index reads and the values the check gives each. */
typedef struct WgEnv {
  const KExpr *leaf[WG_MAX_LEAVES];
  int64_t val[WG_MAX_LEAVES][3];
  int nval[WG_MAX_LEAVES], nleaf;
  /* the values of the current point: the leaves', then the instruction position mn, k */
  int64_t cur[WG_MAX_LEAVES + 2];
  KxProgram *index; /* the operand's index, compiled over those slots */
} WgEnv;

static const char *const POS_MN = "cfw_mn", *const POS_K = "cfw_k";

static bool same_leaf(const KExpr *x, const KExpr *y) {
  if (x->kind != y->kind) return false;
  return x->kind == KX_VAR ? !strcmp(x->name, y->name) : x->pt == y->pt && x->is_dim == y->is_dim;
}

/* A leaf's slot in cur (kx_program's leaf_slot). */
static int leaf_slot(void *user, const KExpr *e) {
  WgEnv *v = user;
  if (e->kind == KX_VAR && !strcmp(e->name, POS_MN)) return v->nleaf;
  if (e->kind == KX_VAR && !strcmp(e->name, POS_K)) return v->nleaf + 1;
  for (int i = 0; i < v->nleaf; i++)
    if (same_leaf(v->leaf[i], e)) return i;
  return -1;
}

static void add_values(WgEnv *v, int i, int64_t lo, int64_t hi) {
  int64_t c[3] = {lo, lo + 1 <= hi ? lo + 1 : lo, hi};
  v->nval[i] = 0;
  for (int j = 0; j < 3; j++)
    if (!v->nval[i] || v->val[i][v->nval[i] - 1] != c[j]) v->val[i][v->nval[i]++] = c[j];
}

/* Records e's leaves with the values to check: a loop variable over its constant extent
 * (0, 1, last) or samples, a thread index over its launch extent, block indices and
 * unknown extents at samples. False past WG_MAX_LEAVES. */
static bool collect(LowerCtx *c, const KPath *path, const KExpr *e, WgEnv *v) {
  if (!e) return true;
  if (e->kind == KX_BINARY || e->kind == KX_SELECT)
    return collect(c, path, e->a, v) && collect(c, path, e->b, v) && collect(c, path, e->c, v);
  if (e->kind != KX_VAR && e->kind != KX_THREAD) return true;
  if (e->kind == KX_VAR && (!strcmp(e->name, POS_MN) || !strcmp(e->name, POS_K))) return true;
  for (int i = 0; i < v->nleaf; i++)
    if (same_leaf(v->leaf[i], e)) return true;
  if (v->nleaf == WG_MAX_LEAVES) return false;
  int i = v->nleaf++;
  int64_t ext = 0;
  v->leaf[i] = e;
  if (e->kind == KX_VAR) {
    for (int d = 0; d < path->depth; d++) {
      const KNode *n = path->node[d];
      if (n->kind == KN_FOR && n->u.loop.var && !strcmp(n->u.loop.var, e->name) && !kx_is_const(n->u.loop.extent, &ext)) ext = 0;
    }
  } else if (e->pt <= CF_PT_TIDZ || e->is_dim) {
    if (!c->pdim[e->pt] || !kx_is_const(c->pdim[e->pt], &ext)) ext = 0;
    if (e->is_dim) return add_values(v, i, ext ? ext : 7, ext ? ext : 7), true;
  }
  add_values(v, i, 0, ext > 0 ? ext - 1 : 6);
  return true;
}

/* A candidate layout of an operand tile. */
typedef struct WgLayout {
  bool mn_major;
  int bits;         /* the swizzle's B: rows of 16 << B bytes */
  int64_t lbo, sbo; /* bytes */
} WgLayout;

/* The byte address, relative to the tile's base, of element (mn, k) under l from start. */
static int64_t canonical(const WgLayout *l, int64_t start, int64_t mn, int64_t k) {
  int64_t w = (int64_t)1 << l->bits, row = 16 * w, per_row = row / WG_ESZ, off;
  if (l->mn_major) off = (mn % per_row) * WG_ESZ + (mn / per_row) * l->lbo + (k % 8) * row + (k / 8) * l->sbo;
  else off = (mn % 8) * row + (mn / 8) * l->sbo + k * WG_ESZ;
  return cf_swizzle_apply((cf_swizzle){l->bits, 4, 3}, start + off);
}

/* The operand's index at instruction position (mn, k) and the current leaf values. */
static bool eval_at(WgEnv *v, int64_t mn, int64_t k, int64_t *out) {
  v->cur[v->nleaf] = mn, v->cur[v->nleaf + 1] = k;
  return kx_program_run(v->index, v->cur, out);
}

/* LBO and SBO from the index at the current values: the distance to the next 8 rows of K
 * (K-major: along mn; MN-major: along k) and, MN-major, to the next row width along mn. */
static bool probe(WgEnv *v, int64_t mn_ext, WgLayout *l) {
  int64_t s, x, per_row = (16 << l->bits) / WG_ESZ;
  if (!eval_at(v, 0, 0, &s)) return false;
  l->lbo = 16, l->sbo = 16;
  if (!l->mn_major) return mn_ext <= 8 || (eval_at(v, 8, 0, &x) && (l->sbo = WG_ESZ * (x - s), true));
  if (!eval_at(v, 0, 8, &x)) return false;
  l->sbo = WG_ESZ * (x - s);
  return mn_ext <= per_row || (eval_at(v, per_row, 0, &x) && (l->lbo = WG_ESZ * (x - s), true));
}

/* Whether l gives every element of the mn_ext x 16 tile the address its index names, at the
 * current values of the leaves. */
static bool matches(WgEnv *v, int64_t mn_ext, const WgLayout *l) {
  int64_t s, x;
  if (!eval_at(v, 0, 0, &s) || (s * WG_ESZ) % 16) return false;
  for (int64_t mn = 0; mn < mn_ext; mn++)
    for (int64_t k = 0; k < 16; k++)
      if (!eval_at(v, mn, k, &x) || x * WG_ESZ != canonical(l, s * WG_ESZ, mn, k)) return false;
  return true;
}

static bool offsets_fit(const WgLayout *l) {
  return l->lbo >= 0 && l->sbo >= 0 && l->lbo % 16 == 0 && l->sbo % 16 == 0 && l->lbo >> 4 < (1 << 14) &&
         l->sbo >> 4 < (1 << 14);
}

/* Every combination of the leaves' values (the first one also probes the offsets). */
static bool holds(WgEnv *v, int64_t mn_ext, WgLayout *l) {
  int64_t combos = 1;
  for (int i = 0; i < v->nleaf; i++) combos *= v->nval[i];
  if (combos > WG_MAX_COMBOS) return false;
  for (int64_t c = 0; c < combos; c++) {
    int64_t r = c;
    for (int i = 0; i < v->nleaf; i++) v->cur[i] = v->val[i][r % v->nval[i]], r /= v->nval[i];
    if (!c && (!probe(v, mn_ext, l) || !offsets_fit(l))) return false;
    if (!matches(v, mn_ext, l)) return false;
  }
  return true;
}

/* The descriptor's constant bits: LBO, SBO, swizzle mode (1: 128 B, 2: 64 B, 3: 32 B). */
uint64_t lower_wgmma_desc_bits(int64_t lbo, int64_t sbo, int swizzle_bits) {
  uint64_t mode = swizzle_bits == 3 ? 1 : swizzle_bits == 2 ? 2 : swizzle_bits == 1 ? 3 : 0;
  return ((uint64_t)(lbo >> 4) & 0x3FFF) << 16 | ((uint64_t)(sbo >> 4) & 0x3FFF) << 32 | mode << 62;
}

/* Operand op's descriptor: the first candidate that holds, or refused. */
static void operand(LowerCtx *c, const KPath *path, KNode *n, int op, KAccess (*moved_at)(void *, int, KExpr *, KExpr *),
                    void *ctx, const char *rname) {
  Arena *a = c->a;
  KExpr *mn = kx_var(a, POS_MN), *k = kx_var(a, POS_K), *zero = kx_const(a, 0);
  KAccess at = op ? moved_at(ctx, 1, k, mn) : moved_at(ctx, 0, mn, k);
  int64_t mn_ext = op ? n->u.mma.n : n->u.mma.instr->m;
  char name = op ? 'B' : 'A';
  if (!at.t || at.t->mem != CF_MEM_SHARED)
    lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: wgmma reads operand %c of %s from shared memory through a "
               "descriptor; %s is not in shared memory", name, rname, at.t ? at.t->name : "it");
  WgEnv v = {.nleaf = 0};
  bool ok = collect(c, path, at.index, &v);
  if (ok) v.index = kx_program(a, at.index, leaf_slot, &v);
  for (int major = 0; major < 2 && ok; major++)
    for (int bits = 3; bits >= 1; bits--) {
      WgLayout l = {major == 1, bits, 0, 0};
      if (!holds(&v, mn_ext, &l)) continue;
      n->u.mma.desc[op] = lower_wgmma_desc_bits(l.lbo, l.sbo, bits);
      n->u.mma.mn_major[op] = l.mn_major;
      n->u.mma.desc_start[op] = op ? moved_at(ctx, 1, zero, zero) : moved_at(ctx, 0, zero, zero);
      int64_t align = (int64_t)128 << bits; /* the swizzle's period over absolute addresses */
      if (at.t->smem_align < align) at.t->smem_align = align;
      return;
    }
  lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: operand %c of %s's wgmma, %s, is not stored in a layout a wgmma "
             "descriptor names (K- or MN-major rows of 32, 64 or 128 bytes under their swizzle Sw<B,4,3>, 16-byte "
             "aligned; the matmul row's tiles are)", name, rname, at.t->name);
}

void lower_wgmma_operands(LowerCtx *c, const KPath *path, KNode *n, KAccess (*moved_at)(void *, int, KExpr *, KExpr *),
                          void *ctx, const char *rname) {
  for (int op = 0; op < 2; op++) operand(c, path, n, op, moved_at, ctx, rname);
}

/* ---- groups and fences ------------------------------------------------------------------- */

static bool is_wgmma(const KNode *n) { return n->kind == KN_MMA && ir_mma_is_wgmma(n->u.mma.instr); }

/* A statement holding wgmmas and nothing else (comments aside): a wgmma, or loops of them. */
static bool only_wgmma(const KNode *n) {
  if (is_wgmma(n)) return true;
  if (n->kind != KN_FOR || !n->u.loop.body.len) return false;
  bool any = false;
  for (int i = 0; i < n->u.loop.body.len; i++) {
    const KNode *o = n->u.loop.body.items[i];
    if (o->kind == KN_COMMENT) continue;
    if (!only_wgmma(o)) return false;
    any = true;
  }
  return any;
}

/* The first wgmma of an only_wgmma statement. */
static const KNode *first_wgmma(const KNode *n) {
  if (is_wgmma(n)) return n;
  for (int i = 0; i < n->u.loop.body.len; i++)
    if (n->u.loop.body.items[i]->kind != KN_COMMENT) return first_wgmma(n->u.loop.body.items[i]);
  return NULL;
}

static KNode *node(LowerCtx *c, KnKind kind, const KNode *group, int pending) {
  KNode *n = ARENA_NEW(c->a, KNode);
  n->kind = kind;
  n->u.async.pending = pending;
  n->u.async.mma = first_wgmma(group);
  return n;
}

/* A block being walked and the statement at hand, linked to the enclosing one's frame. */
typedef struct WgFrame {
  KBlock *b;
  int i;
  const struct WgFrame *up;
} WgFrame;

/* The barrier nearest before the statement at hand, in its block or an enclosing one: a
 * __syncthreads, or the mbarrier wait of TMA-filled tiles (lower/tma.c). */
static KNode *barrier_before(const WgFrame *fr) {
  for (; fr; fr = fr->up)
    for (int j = fr->i - 1; j >= 0; j--) {
      KNode *n = fr->b->items[j];
      if ((n->kind == KN_SYNC && !n->u.sync.grid) || n->kind == KN_MBAR_WAIT) return n;
    }
  return NULL;
}

static bool has_wgmma(const KBlock *b) {
  for (int i = 0; i < b->len; i++) {
    if (is_wgmma(b->items[i])) return true;
    KBlock *inner[KN_MAX_BLOCKS];
    int nb = kn_blocks(b->items[i], inner);
    for (int k = 0; k < nb; k++)
      if (has_wgmma(inner[k])) return true;
  }
  return false;
}

/* Whether a group may stay in flight across an iteration of its enclosing loop: it is the
 * loop's body's statement, and both its tiles are circular-buffered with a stage to spare
 * (cb_slack >= 2: a stage is refilled two iterations after it is read, lower/
 * circular_buffer.c), so waiting for it one iteration late reads no refilled stage. */
static bool pipelined(const KNode *group, const WgFrame *fr) {
  const KNode *w = first_wgmma(group), *loop = fr->up ? fr->up->b->items[fr->up->i] : NULL;
  if (!w || !loop || loop->kind != KN_FOR || &loop->u.loop.body != fr->b) return false;
  for (int op = 0; op < 2; op++)
    if (w->u.mma.desc_start[op].t->cb_slack < 2) return false;
  return true;
}

static void groups(LowerCtx *c, KBlock *b, const WgFrame *up) {
  WgFrame fr = {b, 0, up};
  for (fr.i = 0; fr.i < b->len; fr.i++) {
    KNode *n = b->items[fr.i];
    if (!only_wgmma(n)) {
      KBlock *inner[KN_MAX_BLOCKS];
      int nb = kn_blocks(n, inner);
      for (int k = 0; k < nb; k++)
        if (has_wgmma(inner[k])) groups(c, inner[k], &fr);
      continue;
    }
    KNode *sync = barrier_before(&fr);
    if (!sync)
      lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: a wgmma reads shared tiles with no barrier before it (the "
                 "async proxy reads them: their writes need fence.proxy.async and a __syncthreads)");
    if (sync->kind == KN_SYNC) sync->u.sync.proxy_async = true; /* TMA's boxes need no fence: the async proxy wrote them */
    bool late = pipelined(n, &fr);
    kb_insert(c->a, b, fr.i, node(c, KN_WGMMA_FENCE, n, 0));
    kb_insert(c->a, b, fr.i + 2, node(c, KN_WGMMA_COMMIT, n, 0));
    /* wait for all, unless the tiles have a stage to spare: then this iteration's group
     * stays in flight while the next issues, and the loop is followed by a wait for all */
    kb_insert(c->a, b, fr.i + 3, node(c, KN_WGMMA_WAIT, n, late ? 1 : 0));
    if (late) kb_insert(c->a, up->b, up->i + 1, node(c, KN_WGMMA_WAIT, n, 0));
    fr.i += 3;
  }
}

/* Descends only into blocks holding a wgmma, so kernels without one cost a scan. */
void lower_wgmma_groups(LowerCtx *c) {
  if (has_wgmma(&c->k->body)) groups(c, &c->k->body, NULL);
}
