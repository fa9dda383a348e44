/* scheduler/matmul_mma.c: the matmul row's tensor-core schedule (issue 24's first slice):
 * mma.sync m16n8k16 through cf_mma_tile, for half and bfloat16 operands.
 *   1. the sum r, [b?, M, N, K], is tiled [b, M/BM, N/BN, K/BK, BM, BN, BK] and that is
 *      propagated to every tensor (blockIdx.z, .y, .x over batch, M tiles, N tiles);
 *   2. the operand tiles x (BM x BK) and y (BN x BK) live in shared memory, computed at
 *      the K-tile loop, stored along their input's contiguous axis (K, or M / N: B of
 *      matmul's [K, N] is [BK, BN]); their inner axes are merged and split over all the
 *      block's threads ([.., threadIdx.z, threadIdx.y, threadIdx.x]), 16-byte vectors a
 *      thread (cp.async in the lowering) where the tile is a copy of its input whose
 *      contiguous extent is a multiple of 8 (fill_of: the params say which, and why not),
 *      else one element;
 *   3. r's inner tile becomes [warp M (threadIdx.z), warp N (threadIdx.y), K/16, M/16 per
 *      warp, N/8 per warp, 16, 8, 16], the last three handed to cf_mma_tile; the same
 *      transforms go to the mul, its casts and the epilogue (cf_propagate_transforms_to),
 *      so the epilogue reads the accumulator's fragments in the lane's own registers;
 *   4. x and y inlined at the K-tile loop, the prologue into them, everything else as deep
 *      as legal (the product into the instruction, the sum into the epilogue at the block
 *      tile).
 * Non-divisible M, N, K: the tiles are zero-filled where the operand is out of bounds
 * (lower/predicate.c, cp.async's source size), so the instruction reads them unmasked
 * (lower/mma.c); the output's stores are predicated. The tiles are stored through the XOR swizzle layout/ picks
 * for their 16-byte chunks, so the lowering's ldmatrix loads (lower/mma_ldmatrix.c) are
 * bank-conflict free.
 * On Hopper (the device's cc 90, t->wgmma): wgmma.mma_async m64nNk16 instead, block tile
 * 128 x BN x 64 (BN 256 by default): step 2 stores a K-contiguous tile as rows of 64
 * elements (128 bytes) through Sw<3,3,3> and an M- or N-contiguous one as [BN / 64, BK, 64]
 * (the K- and MN-major canonical layouts of wgmma's descriptors, which lower/mma_wgmma.c
 * finds), over [iters, threadIdx.y{2}, threadIdx.x{128}]; step 3 is [warpgroup
 * (threadIdx.y), K/16, 64, BN, 16], the last three handed to cf_mma_tile's wgmma row; the
 * epilogue's register loops are unrolled after step 4. TMA and warp specialization come
 * next here: a TMA fill would replace tile_threads' thread split of each tile (the layout
 * it stores stays: TMA's 128-byte swizzle is the same Sw<3,4,3>), and a producer
 * warpgroup a third value of threadIdx.y with the fills alone, the circular buffer's
 * cp.async waits becoming mbarrier waits.
 * Key decision: correctness and a structure the next slices refine (TMA, warp
 * specialization): one tile shape per instruction. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/matmul_mma.h"

#include "cfuser/layout.h"
#include "ir/checked.h"
#include "ir/mma.h"
#include "scheduler/registry.h"

enum { MMA_WM = 2, MMA_WN = 2, MMA_TM = 4, MMA_TN = 8, MMA_KW = 2, MMA_THREADS = 32 * MMA_WM * MMA_WN };
enum { MMA_IM = 16, MMA_IN = 8, MMA_IK = 16, MMA_STAGES = 3 };
enum { MMA_BM = MMA_WM * MMA_TM * MMA_IM, MMA_BN = MMA_WN * MMA_TN * MMA_IN, MMA_BK = MMA_KW * MMA_IK };
enum { MMA_FILL_BYTES = 16 }; /* a fill's vector: one cp.async */
/* wgmma (Hopper): 2 warpgroups (threadIdx.y) of 128 threads (threadIdx.x), each a 64 x BN
 * m64nNk16 instruction per 16 of K; K tiles of 64 (128-byte rows of 16-bit elements, the
 * widest swizzle a descriptor names); by default BN 256 (CUTLASS's Hopper tile: 128
 * accumulator floats a thread) and 4 stages of (128 + 256) x 64 x 2 B = 48 KiB, unless
 * fewer than half the SMs would get a block (a few tokens: M of 16 to 128 against a
 * 4096-wide weight gives 16 blocks): then the widest of 128 and 64 that gives them one,
 * else 64 (wgmma_bn). CFUSER_WGMMA_TILE=<BN>x<stages> (BN 64, 128, 192 or 256; stages 2
 * to 4, cf_circular_buffer's limit) chooses another, for measuring on the GPU; the params
 * name what was chosen. With 3 stages and more the tiles are filled stages - 2 K tiles
 * ahead (cf_circular_buffer_prefetch), so each K tile's wgmmas stay in flight while the
 * next tile's issue (wgmma.wait_group 1: lower/mma_wgmma.c; the params say
 * " wgmma_wait=1"): on an H200, 8192^3 bfloat16 2588 -> 2167-2247 us, linear + gelu 8192^3
 * 2426 -> 1874 us. CFUSER_WGMMA_PIPELINE=0 waits for each K tile's wgmmas instead (for
 * measuring). Measured and not taken: two blocks an SM of 128 x 128 x 64 tiles in 3
 * stages (__launch_bounds__(256, 2)): 8192^3 2494 us against 2172, linear + gelu 2159
 * against 1892; one block of them 2395.
 * TMA (cf_tma_load, lower/tma.c) fills both tiles where both are copies of their inputs
 * (16-byte rows, no permute or cast), no block tile crosses the outer axes of a role that
 * is several axes merged (within_spans), and the block tile's N is 256: the elected
 * thread's boxes complete on a barrier a stage, which the readers wait on instead of a
 * __syncthreads. On an H200 (bench/results/tma_h200_20261128/, two
 * runs alternated): bf16 4096^3 313 -> 298 us, 8192^3 2179-2223 -> 2071-2088, linear +
 * gelu 8192^3 1912-1978 -> 1810-1821, 8192 x 11008 @ 11008x4096 1420-1439 -> 1357-1360;
 * the narrower tiles of a few tokens were slower with it (16 x 4096 @ 4096x11008 41 -> 54
 * us, 16 x 11008 @ 11008x4096 75 -> 85), so they keep cp.async. CFUSER_WGMMA_TMA=0 keeps
 * cp.async everywhere (for measuring).
 * With TMA, the fills run in a producer warpgroup (cf_warp_specialize, threadIdx.y 2;
 * lower/warp_specialize.c; params " producer=tidy"): on the H200, two runs alternated
 * (bench/results/ws_h200_20261128/), without / with it: bf16 4096^3 302-307 -> 243 us
 * (cuBLAS 188.5), 8192^3 2095-2098 -> 1688-1698 (cuBLAS 1447), 8192 x 11008 @ 11008x4096
 * 1376-1379 -> 1059 (cuBLAS 1002), 1024 x 11008 @ 11008x4096 184-187 -> 145-148 (cuBLAS
 * 144), 8192 x 4096 @ 4096x11008 1550 -> 1271 (cuBLAS 991). Linear layers (B = w [N, K]
 * K-major) were slower with it in every run: x @ w^T + bias 8192^3 1676-1792 -> 1788-1852
 * us, with gelu 1700-1877 -> 1851-1953 (under ncu's locked clocks the other way round,
 * 1.99 -> 1.94 ms: power at boost clocks is the suspect, not yet shown), so only a B
 * tile that is MN-major (matmul's [K, N]) got the producer; with the epilogue's pair
 * stores (below) the linears are faster with it too (4 x H200, alternated twice, without
 * / with: + bias 1473-1491 -> 1442-1443 us, with gelu 1533-1552 -> 1509-1510;
 * bench/results/epilogue_h200_20261128/linear_producer_4xh200.txt), so every TMA fill
 * gets it. CFUSER_WGMMA_WS=0 keeps the fills in the readers' loop (for measuring).
 * The epilogue stores pairs (pair_stores: a thread's two adjacent columns of wgmma's
 * fragment as one 4-byte or 8-byte vector, from a register copy of each output) where N
 * is a multiple of BN; it stored one element at a time, 8 partial sectors a warp's store.
 * Where B is larger than the L2, consecutive blocks take group_m M tiles of one N tile
 * (block_axes). On an H200 (bench/results/epilogue_h200_20261128/, 4 x H200, each
 * variant twice, us): pairs: bf16 4096^3 244-249 -> 212-213, 8192^3 1664-1682 -> 1541-
 * 1550, x @ w^T + bias 8192^3 1733-1838 -> 1523-1542, with gelu 1807-1824 -> 1636-1691;
 * then groups of 16: 8192^3 1494-1512, + bias 1455-1477, with gelu 1520-1540 (groups of 8
 * and 4 between), 4096^3 no better (213 -> 217-225: B, 32 MiB, stays in the L2, so no
 * groups there); groups that did not divide the M tiles ran idle blocks (16 x 4096 @
 * 4096x4096 32 -> 169 us), hence only dividing ones. Final (final_h200.txt, one H200,
 * cuBLAS in the same call): bf16 4096^3 217.6 (cuBLAS 190.6-191.1: 0.88x), 8192^3 1511.9
 * (1411.2-1411.6: 0.93x), f16 8192^3 1586.6 (1472-1474: 0.93x), linear + bias + gelu
 * 1539.9 (torch.compile 1525-1631, eager 1494-1569). One release a warp (lane 0 after its
 * wgmma wait) instead of one a thread was slower again (4096^3 213 -> 222, 8192^3 1545 ->
 * 1612). */
enum { WG_GROUPS = 2, WG_IM = 64, WG_BN = 256, WG_IK = 16, WG_BK = 64, WG_STAGES = 4 };
enum { WG_MAX_STAGES = 4 }; /* cf_circular_buffer's limit */
enum { WG_BM = WG_GROUPS * WG_IM, WG_THREADS = 128 * WG_GROUPS, WG_ATOM = 64 /* elements of a 128-byte row */ };

/* The block tile and threads of the schedule t chose. */
typedef struct MmaShape {
  int bm, bn, bk, threads, stages;
  bool pipelined; /* wgmma: the fill stages - 2 ahead, one group in flight */
  bool tma;       /* wgmma: both tiles filled by TMA boxes (copies of their inputs) */
  bool producer;  /* tma: the fills in a producer warpgroup (threadIdx.y 2) */
  bool pair_stores; /* wgmma: the outputs store a thread's two adjacent columns as one vector */
  int group_m;      /* wgmma: M tiles a group of consecutive blocks takes (block_axes); 0: none */
  bool persist;     /* producer: a persistent kernel (persist_of) of persist_m x persist_n blocks */
  int persist_m, persist_n;
} MmaShape;

static bool g_tile_warned; /* CFUSER_WGMMA_TILE's warning, given once a process */

/* The block tile's N on Hopper (above): 256, 128 or 64, the first whose blocks reach half
 * the SMs; 256 when a size is symbolic. */
static int wgmma_bn(const MmaTiles *t) {
  if (t->size_m <= 0 || t->size_n <= 0 || t->size_b <= 0 || t->sm_count <= 0) return WG_BN;
  int64_t rows = t->size_b * ck_ceil_div(t->size_m, WG_BM);
  for (int bn = WG_BN; bn > WG_ATOM; bn /= 2)
    if (2 * rows * ck_ceil_div(t->size_n, bn) >= t->sm_count) return bn;
  return WG_ATOM;
}

/* The M tiles of a group of consecutive blocks (block_axes): where B (K x N) is larger than
 * the L2, a wave of blocks along N would read all of it from memory again for every few M
 * tiles; the largest of 16, 8, 4 and 2 that divides the M tiles (no block left idle), else
 * none; none for a batch or symbolic sizes. CFUSER_WGMMA_GROUP=<g> chooses g (1: none),
 * for measuring. */
static int group_of(const MmaTiles *t, int bm) {
  const char *env = getenv("CFUSER_WGMMA_GROUP");
  if (env && *env) return atoi(env) > 1 && !t->batch ? atoi(env) : 0;
  int64_t esz = (int64_t)cf_dtype_size(t->x->dtype), tiles = ck_ceil_div(t->size_m, bm);
  if (t->batch || t->size_m <= 0 || t->size_k <= 0 || t->size_n <= 0 || t->size_k * t->size_n * esz <= t->l2_bytes)
    return 0;
  for (int g = 16; g > 1; g /= 2)
    if (tiles % g == 0) return g;
  return 0;
}

/* A persistent kernel (block_axes): where the tiles outnumber the SMs, the M tiles split
 * [Mo / gm, gm] and the N tiles [No / gn, gn], the outer two serial loops of every block,
 * so that gm x gn blocks loop over the tiles, each step a gm x gn window of them. The
 * window: at most one block an SM, the fewest steps (ceil(Mo / gm) x ceil(No / gn)), then
 * the fewest idle tiles (a window that does not divide the tiles runs its last steps
 * partly past M or N: those blocks' TMA boxes lie outside the operands, zeros counted in
 * full on the barriers, and their stores are predicated off), then gn nearest 2 gm;
 * taken where it has at least half the SMs' blocks and at most a tenth more steps than
 * one block a tile has waves (ceil(tiles / SMs)). The producer then fills the next
 * tile's stages while the readers store this one's outputs: the per-tile prologue and
 * epilogue of one block a tile, which bench_matmul's sweep over K measured as ~40 us of
 * 4096 x K @ K x 4096 on an H200 (cuBLAS ~30). (Not the M and N tiles merged into one
 * tile loop: an operand tile has no axis of the other operand's, so it could not be
 * indexed from the merged loop.) Only with the producer (its barriers count on across
 * tiles: lower/warp_specialize.c); none for a batch or symbolic sizes.
 * Measured on an H200 (bench/results/persistent_h200_20261128/, us; one block a tile /
 * windows 8x16, 16x8, 4x32): 4096^3 212.9 / 194.9, 200.4, 198.6; 8192^3 1513.8 / 1399.7,
 * 1421.9, 1481.3; 8192 x 11008 @ 11008x4096 999.5 / 936.8, 953.6, 946.6; 8192 x 4096 @
 * 4096x4096 413.1 / 368.4, 382.2, 382.3; the window of the fewest operand bytes (16x8) is
 * not the fastest. The windows past the tiles (bench/results/matmul_windows_h200_20261129/,
 * two rounds, us): 8192 x 4096 @ 4096x11008 (64 x 43 tiles: 22 steps against 21 waves)
 * one block a tile in groups of 16 1072.0, 1075.3 / 32x4 (the rule's) 1062.4, 1057.5,
 * 64x2 1074.2, 1073.6, 6x22 1132.4, 1130.5, 3x43 1152.5, 1163.7 (cuBLAS 975.3, 980.8);
 * 1024 x 4096 @ 4096x11008 161.2, 160.7 -> 158.3, 158.7. A linear's K-major weight was
 * slower with it once (x @ w^T + bias 8192^3, each call timed alone: 1435.1 / 1458.0,
 * 1463.4, 1498.8); measured again with the calls queued (bench/results/
 * linear_gelu_h200_20261129/kmajor_persist.txt: bench/linear_gelu.py --queued, bfloat16
 * x @ w^T + bias without / with the rule's window, two rounds, us): where the window
 * divides the tiles, faster or even: 4096^3 207.0, 206.8 -> 193.6, 193.9; 8192 x 4096 ->
 * 4096 407.8, 406.6 -> 383.4, 383.2; 8192 x 11008 -> 4096 951.9, 951.7 -> 957.0, 957.5;
 * 8192^3 1461.9, 1461.6 -> 1466.6, 1461.4 (with gelu alike); past the tiles, slower:
 * 8192 x 4096 -> 11008 1036.5 -> 1134.9, 1139.6; 1024 x 4096 -> 11008 151.6, 151.1 ->
 * 163.9, 163.8 (not understood: an MN-major B gains there). So a K-major B persists only
 * in a window that divides the tiles. CFUSER_WGMMA_PERSIST=0 keeps one block a tile,
 * =<gm>x<gn> takes that window where gm and gn are at most the M and N tiles (for
 * measuring). Returns whether persistent. */
static bool persist_of(const MmaTiles *t, MmaShape *sh) {
  const char *env = getenv("CFUSER_WGMMA_PERSIST");
  if ((env && !strcmp(env, "0")) || !sh->producer || t->batch || t->size_m <= 0 || t->size_n <= 0 || t->sm_count <= 0)
    return false;
  int64_t mt = ck_ceil_div(t->size_m, sh->bm), nt = ck_ceil_div(t->size_n, sh->bn), sm = t->sm_count;
  int gm, gn;
  char end;
  if (env && sscanf(env, "%dx%d%c", &gm, &gn, &end) == 2 && gm > 0 && gn > 0 && gm <= mt && gn <= nt)
    return sh->persist_m = gm, sh->persist_n = gn, true;
  int64_t steps = 0, idle = 0, skew = 0, waves = ck_ceil_div(mt * nt, sm);
  for (int64_t m = 1; m <= mt && m <= sm; m++)
    for (int64_t n = 1; n <= nt && m * n <= sm; n++) {
      int64_t st = ck_ceil_div(mt, m) * ck_ceil_div(nt, n), id = st * m * n - mt * nt, sk = llabs(n - 2 * m);
      if (!steps || st < steps || (st == steps && (id < idle || (id == idle && sk < skew))))
        steps = st, idle = id, skew = sk, sh->persist_m = (int)m, sh->persist_n = (int)n;
    }
  bool k_major = t->fill[1].role != 'N'; /* a linear's weight: only windows that divide (measured, above) */
  return mt * nt > sm && 2 * sh->persist_m * sh->persist_n >= sm && 10 * steps <= 11 * waves && !(k_major && idle);
}

/* Whether every block tile lies within one step of the outer axes of a merged M or N (a
 * batch of A alone: [b, M] -> b x M rows): the span a multiple of the tile, so a TMA box
 * of the input's axes describes the tile. */
static bool within_spans(const MmaTiles *t, const MmaShape *sh) {
  return (!t->m_span || (t->m_span > 0 && t->m_span % sh->bm == 0)) && (!t->n_span || (t->n_span > 0 && t->n_span % sh->bn == 0));
}

static MmaShape shape_of(const MmaTiles *t) {
  if (!t->wgmma) return (MmaShape){.bm = MMA_BM, .bn = MMA_BN, .bk = MMA_BK, .threads = MMA_THREADS, .stages = MMA_STAGES};
  MmaShape sh = {.bm = WG_BM, .bn = wgmma_bn(t), .bk = WG_BK, .threads = WG_THREADS, .stages = WG_STAGES};
  const char *pipe = getenv("CFUSER_WGMMA_PIPELINE");
  const char *env = getenv("CFUSER_WGMMA_TILE");
  int bn, st;
  char end;
  if (env && *env) {
    if (sscanf(env, "%dx%d%c", &bn, &st, &end) == 2 && bn > 0 && bn % WG_ATOM == 0 && bn <= 256 && st >= 2 && st <= WG_MAX_STAGES)
      sh.bn = bn, sh.stages = st;
    else if (!__atomic_exchange_n(&g_tile_warned, true, __ATOMIC_RELAXED)) /* a heuristic has no error channel */
      fprintf(stderr, "cfuser: CFUSER_WGMMA_TILE=\"%s\" ignored: expected <N>x<stages>, N a multiple of 64 up to 256 "
                      "and 2 to %d stages (e.g. 128x3); using %dx%d\n", env, WG_MAX_STAGES, sh.bn, WG_STAGES);
  }
  sh.pipelined = !(pipe && !strcmp(pipe, "0")) && sh.stages >= 3; /* a stage to spare: 3 and more */
  const char *tma = getenv("CFUSER_WGMMA_TMA");
  sh.tma = !t->fill[0].why[0] && !t->fill[1].why[0] && within_spans(t, &sh) && sh.bn == WG_BN && !(tma && !strcmp(tma, "0"));
  const char *ws = getenv("CFUSER_WGMMA_WS");
  sh.producer = sh.tma && !(ws && !strcmp(ws, "0")); /* measured: above */
  /* a pair never straddles N's end, but the lowering vectorizes only where every split
   * above the pair divides (lower/vectorize.c): N by BN; and only adjacent columns that
   * are adjacent in the outputs (analysis/vector_access.c's rule 1) */
  sh.pair_stores = t->n_innermost && t->size_n > 0 && t->size_n % sh.bn == 0;
  sh.group_m = group_of(t, sh.bm);
  sh.persist = persist_of(t, &sh);
  if (sh.persist) sh.group_m = 0; /* each step's window groups the tiles instead */
  return sh;
}

static Val *cast_input(Val *v) {
  Expr *e = v->def;
  return e && ir_op_kind(e->op) == OPK_CAST && e->nin == 1 && (e->in[0]->dtype == CF_HALF || e->in[0]->dtype == CF_BFLOAT16)
             ? e->in[0] : NULL;
}

/* How operand `operand` of the product r's mul fills its tile (is_b: the second, along N):
 * 16-byte vectors (cp.async) when the tile is a copy of its input along the input's
 * contiguous axis, whose extent is a multiple of the vector, else one element a thread
 * and o->why says why. Decided from the sizes, so the plan and the schedule agree. */
static void fill_of(Val *r, Val *operand, bool is_b, MmaFill *o) {
  *o = (MmaFill){.role = '?'};
  if (!sched_matmul_operand_fill(r->fusion, operand, &o->chain)) {
    snprintf(o->why, sizeof o->why, "out of memory");
    return;
  }
  Val *x = o->chain.x;
  int c = o->chain.contig, in = an_innermost_axis(x);
  int64_t e, vec = MMA_FILL_BYTES / (int64_t)cf_dtype_size(x->dtype);
  if (c >= 0) o->role = ID(TV(r)->logical[c])->iter_type == CF_ITER_REDUCTION ? 'K' : is_b ? 'N' : 'M';
  if (o->chain.permuted || o->chain.cast)
    snprintf(o->why, sizeof o->why, "a %s of %s", o->chain.permuted ? "permute" : "cast", TV(x)->display_name);
  else if (c < 0 || TV(x)->has_strides || TV(x)->contiguity[in] != 1)
    snprintf(o->why, sizeof o->why, "%s strided", TV(x)->display_name);
  else if (!ir_scalar_const_value(ID(TV(x)->logical[in])->extent, &e))
    snprintf(o->why, sizeof o->why, "%c symbolic", o->role);
  else if (e % vec)
    snprintf(o->why, sizeof o->why, "%c=%lld", o->role, (long long)e);
}

bool sched_matmul_mma_fits(Val *r, int m_axes, int n_axes, const SchedDevice *dev, MmaTiles *t) {
  Expr *mul = r->def->in[0]->def;
  Val *u = cast_input(mul->in[0]), *v = cast_input(mul->in[1]);
  if (!u || !v || u->dtype != v->dtype || m_axes < 1 || n_axes < 1) return false;
  cf_fusion *f = r->fusion;
  /* an input operand becomes its tile's copy (stage_operands): only when the cast is its one reader */
  if ((ir_tv_is_input(f, u) && u->uses.len != 1) || (ir_tv_is_input(f, v) && v->uses.len != 1) || r->dtype != CF_FLOAT)
    return false;
  t->r = r, t->mul = mul->out[0], t->x = u, t->y = v, t->ca = mul->in[0], t->cb = mul->in[1];
  t->wgmma = dev && dev->cc == 90; /* sm_90a only: Blackwell has tcgen05 instead */
  t->tcgen05 = sched_matmul_tcgen05_takes(r, dev); /* sm_100a: matmul_tcgen05.c */
  for (int i = 0; i < 2; i++) fill_of(r, mul->in[i], i, &t->fill[i]);
  return true;
}

void sched_matmul_mma_params(const MmaTiles *t, char *text) {
  if (t->tcgen05) {
    sched_matmul_tcgen05_params(t, text);
    return;
  }
  char fill[2][64];
  for (int i = 0; i < 2; i++)
    snprintf(fill[i], sizeof fill[i], t->fill[i].why[0] ? "scalar(%s)" : "cp.async16", t->fill[i].why);
  if (t->wgmma) {
    MmaShape sh = shape_of(t);
    for (int i = 0; i < 2 && sh.tma; i++) snprintf(fill[i], sizeof fill[i], "tma");
    char group[64] = "";
    if (sh.group_m > 1) snprintf(group, sizeof group, " group_m=%d", sh.group_m);
    if (sh.persist)
      snprintf(group + strlen(group), sizeof group - strlen(group), " persistent=%dx%d", sh.persist_m, sh.persist_n);
    snprintf(text, SCHED_PARAMS_MAX, "tile=%dx%dx%d warpgroups=%d mma=m64n%dk16 smem=operands stages=%d fill=%s,%s%s%s%s%s",
             sh.bm, sh.bn, sh.bk, WG_GROUPS, sh.bn, sh.stages, fill[0], fill[1], sh.producer ? " producer=tidy" : "",
             sh.pipelined ? " wgmma_wait=1" : "", sh.pair_stores ? " store=pairs" : "", group);
    return;
  }
  snprintf(text, SCHED_PARAMS_MAX, "tile=%dx%dx%d warps=%dx%d mma=m16n8k16 smem=operands stages=%d fill=%s,%s", MMA_BM,
           MMA_BN, MMA_BK, MMA_WM, MMA_WN, MMA_STAGES, fill[0], fill[1]);
}

/* [b?, M, N, K] -> [b?, M/BM, N/BN, K/BK, BM, BN, BK]. */
static void block_tile(cf_fusion *f, cf_tv *r, int b, const MmaShape *sh) {
  cf_split(f, r, b + 2, sh->bk);
  cf_split(f, r, b + 1, sh->bn);
  cf_split(f, r, b, sh->bm); /* [b, Mo, BM, No, BN, Ko, BK] */
  cf_reorder(f, r, 2, (int[]){b + 1, b + 3, b + 3, b + 4}); /* [b, Mo, No, Ko, BM, BN, BK] */
}

static int log2_of(int64_t v) {
  int k = 0;
  while (v > 1) v >>= 1, k++;
  return k;
}

/* The tile's [rows, BK] at p -> [rows, BK] stored through the swizzle layout/ gives for
 * rows of BK elements of esz bytes (Sw<2,3,3> for 64-byte rows of half: chunk c of row r
 * at chunk c ^ (r / 2) % 4), as an XOR of axes: K split into [chunks, 2^M elements], the
 * rows into [.., 2^B rows, rows below bit M + S], the chunk bits that address a 16-byte
 * slot XORed with the 2^B rows, everything merged back into one axis (the loop domain is a shared
 * tensor's storage). ldmatrix's phases (8 rows, one chunk each) then hit 32 banks. */
bool sched_matmul_tile_swizzle(cf_fusion *f, cf_tv *x, int p, int64_t esz, int64_t row) {
  cf_swizzle s;
  if (cf_swizzle_for_rows(esz, row * esz, &s, NULL) != CF_OK || !s.bits) return false;
  int c = log2_of(row * esz / 16), n = 3;
  cf_split(f, x, p + 1, (int64_t)1 << s.base); /* [rows, chunks{2^c}, elems] */
  if (c > s.bits) cf_split(f, x, p + 1, (int64_t)1 << s.bits), n++;
  if (s.shift > c) cf_split(f, x, p, (int64_t)1 << (s.shift - c)), n++;
  cf_split(f, x, p, (int64_t)1 << s.bits); /* [rows.., 2^B rows, rows below, chunks.., elems] */
  n++;
  cf_swizzle_xor(f, x, p + 1, p + n - 2);
  for (int i = 1; i < n; i++) cf_merge(f, x, p);
  return true;
}

/* A tile's [BM, BN, BK] (one of the first two a broadcast) -> [rows, cols] stored along
 * its input's contiguous axis (cols: BK, or BM / BN when that is the input's innermost
 * axis, as B of matmul's [K, N]: its fill then reads consecutive elements of the input),
 * swizzled, then over all the block's threads: [iters, z, y, lane], or [iters, z, y, lane,
 * V] with 16-byte vectors V when fill->why is empty (a copy: cp.async in the lowering).
 * wgmma: threads [iters, y, x{128}], and an M- or N-contiguous tile as [BM / 64, BK, 64]
 * (columns of 128-byte rows, the MN-major layout a descriptor names: LBO between the
 * columns, SBO between 8 rows of K); a K-contiguous one is [rows, BK = 64] as it is. */
static void tile_threads(cf_fusion *f, cf_tv *x, int b, int64_t esz, int mn, const MmaFill *fill, const MmaTiles *t,
                         const MmaShape *shape) {
  int p = b + 3;
  MmaShape sh = *shape;
  int64_t cols = sh.bk, vec = MMA_FILL_BYTES / esz;
  if (fill->role == 'M' || fill->role == 'N') { /* the M or N tile (at p + mn) last */
    cols = mn ? sh.bn : sh.bm;
    cf_reorder(f, x, mn ? 2 : 3, mn ? (int[]){p + 1, p + 2, p + 2, p + 1} : (int[]){p, p + 2, p + 1, p, p + 2, p + 1});
  }
  if (t->wgmma && cols > WG_ATOM) { /* [.., bcast, BK, cols] -> [.., bcast * cols / 64, BK, 64] */
    cf_split(f, x, p + 2, WG_ATOM);
    cf_reorder(f, x, 1, (int[]){p + 2, p + 1});
    cf_merge(f, x, p);
    cols = WG_ATOM;
  }
  cf_merge(f, x, p); /* [.., rows, cols] */
  if (!sched_matmul_tile_swizzle(f, x, p, esz, cols)) cf_merge(f, x, p); /* [.., rows*cols] */
  bool v = !fill->why[0];
  if (v) cf_split(f, x, p, vec);
  cf_split(f, x, p, sh.threads);
  if (t->wgmma) {
    cf_split(f, x, p + 1, 128); /* [.., iters, y, x{128}, V?] */
    cf_parallelize(f, x, p + 1, CF_PT_TIDY);
    cf_parallelize(f, x, p + 2, CF_PT_TIDX);
  } else {
    cf_split(f, x, p + 1, 32);
    cf_split(f, x, p + 1, MMA_WN); /* [.., iters, z, y, lane, V?] */
    cf_parallelize(f, x, p + 1, CF_PT_TIDZ);
    cf_parallelize(f, x, p + 2, CF_PT_TIDY);
    cf_parallelize(f, x, p + 3, CF_PT_TIDX);
  }
  if (v && !f->status && !sched_vectorize_innermost(f, ir_tv(x)))
    ir_error(f, CF_ERR_INTERNAL, "matmul: the fill of %s was planned as 16-byte vectors, which analysis/ refuses",
             TV(ir_tv(x))->display_name);
}

Expr **sched_matmul_exprs(cf_fusion *f, Arena **a, int *n, cf_tv ***set) {
  *a = arena_create();
  Expr **ex = *a ? ir_fusion_tensor_exprs_in(*a, f, n) : NULL;
  *set = ex ? ARENA_ARRAY(*a, cf_tv *, *n + 1) : NULL;
  if (*set) return ex;
  arena_destroy(*a);
  *a = NULL;
  ir_error(f, CF_ERR_OUT_OF_MEMORY, "matmul: out of memory");
  return NULL;
}

/* The tile's producers computed in the kernel (the rest of its operand chain: a
 * broadcast of the input, a permute, a cast, each of the tile's rank after
 * sched_matmul_operand_order) take its transforms and threads, so that inline_all puts
 * them inside the tile's writes: each element is read from the input and converted where
 * it is stored, not computed for the block by every thread as a statement of its own
 * (which the circular buffer's prefetch would read before it is written). set holds
 * room for every tensor. */
void sched_matmul_tile_producers(cf_fusion *f, Val *x, cf_tv **set) {
  int n = 0;
  for (Val *w = x->def->in[0]; w->def && !ir_tv_is_input(f, w); w = w->def->in[0]) set[n++] = ir_tv_handle(w);
  static const cf_parallel_type threads[] = {CF_PT_TIDZ, CF_PT_TIDY, CF_PT_TIDX};
  if (n && !cf_propagate_transforms_to(f, ir_tv_handle(x), -1, n, set))
    cf_parallelize_all_like(f, ir_tv_handle(x), 3, threads);
}

/* wgmma: r's [BM, BN, BK] -> [groups (threadIdx.y), K/16, 64, BN, 16], the last three
 * tiled by cf_mma_tile: each warpgroup one m64nBNk16 per 16 of K. */
static void warpgroup_tile(cf_fusion *f, cf_tv *r, int b) { /* BN: the instruction's N */
  int p = b + 3;
  cf_split(f, r, p + 2, WG_IK); /* [BM, BN, KW, 16] */
  cf_split(f, r, p, WG_IM);     /* [G, 64, BN, KW, 16] */
  cf_reorder(f, r, 1, (int[]){p + 3, p + 1}); /* [G, KW, 64, BN, 16] */
  cf_parallelize(f, r, p, CF_PT_TIDY);
  cf_mma_tile(f, r, p + 2, CF_MMA_WGMMA_M64NK16);
}

/* r's [BM, BN, BK] -> [WM, WN, K/16, TM, TN, 16, 8, 16], the last three tiled by cf_mma_tile. */
static void warp_tile(cf_fusion *f, cf_tv *r, int b) {
  int p = b + 3;
  cf_split(f, r, p + 2, MMA_IK);         /* [BM, BN, KW, 16] */
  cf_split(f, r, p + 1, MMA_IN);         /* [BM, BN/8, 8, KW, 16] */
  cf_split(f, r, p + 1, MMA_TN);         /* [BM, WN, TN, 8, KW, 16] */
  cf_split(f, r, p, MMA_IM);             /* [BM/16, 16, WN, TN, 8, KW, 16] */
  cf_split(f, r, p, MMA_TM);             /* [WM, TM, 16, WN, TN, 8, KW, 16] */
  int new_pos[CF_MAX_RANK + 8];
  static const int order[8] = {0, 3, 5, 1, 4, 6, 2, 7}; /* -> [WM, WN, KW, TM, TN, 16, 8, 16] */
  for (int i = 0; i < p; i++) new_pos[i] = i;
  for (int i = 0; i < 8; i++) new_pos[p + i] = p + order[i];
  cf_reorder_all(f, r, p + 8, new_pos);
  cf_parallelize(f, r, p, CF_PT_TIDZ);
  cf_parallelize(f, r, p + 1, CF_PT_TIDY);
  cf_mma_tile(f, r, p + 5, CF_MMA_M16N8K16);
}

/* Whether v is x, y or a tensor of their prologue (an ancestor of theirs). */
bool sched_matmul_in_prologue(const MmaTiles *t, Val *v) {
  for (int i = 0; i < 2; i++)
    for (Val *w = i ? t->y : t->x; w; w = w->def && w->def->nin == 1 ? w->def->in[0] : NULL)
      if (w == v) return true;
  return false;
}

/* The tensors r's inner schedule goes to: the product's casts and mul, and the epilogue:
 * every computed tensor but r, the tiles and their prologue. */
static int inner_set(Expr **ex, int n, const MmaTiles *t, cf_tv **out) {
  int k = 0;
  for (int i = 0; i < n; i++) {
    Val *v = ex[i]->out[0];
    if (v != t->r && !sched_matmul_in_prologue(t, v)) out[k++] = ir_tv_handle(v);
  }
  return k;
}

/* Whether v is an epilogue tensor: neither an operand's cast nor the product's mul
 * (inlined into the instruction, they keep its axes). */
static bool in_epilogue(const MmaTiles *t, Val *v) { return v != t->ca && v != t->cb && v != t->mul; }

/* wgmma: the epilogue's accumulator axes (its last two, M-registers and N-registers, 2 x
 * N / 4 of them; three when the N-registers are [N / 8, 2] pairs) unrolled, so that the
 * accumulator's 64 floats a thread stay registers: wgmma's asynchronous writes to them are
 * only right in registers. The product's casts and mul (inlined into the instruction)
 * keep theirs. */
static void unroll_epilogue(cf_fusion *f, cf_tv **set, int ns, const MmaTiles *t, const MmaShape *sh) {
  for (int i = 0; i < ns && !f->status; i++) {
    Val *v = ir_tv(set[i]);
    int nl = TV(v)->nloop, k = sh->pair_stores ? 3 : 2;
    if (!in_epilogue(t, v) || nl < k) continue;
    for (int j = nl - k; j < nl; j++) cf_parallelize(f, set[i], j, CF_PT_UNROLL);
  }
}

/* pair_stores: the epilogue's N-registers [N / 4] -> [N / 8, 2]: a thread's two adjacent
 * columns (wgmma's accumulator fragment holds columns 2c and 2c + 1 of a row), which the
 * outputs store as one vector (store_pairs). Before inlining: the loops stay shared. */
static void pair_epilogue(cf_fusion *f, cf_tv **set, int ns, const MmaTiles *t) {
  for (int i = 0; i < ns && !f->status; i++) {
    Val *v = ir_tv(set[i]);
    if (in_epilogue(t, v) && TV(v)->nloop >= 2) cf_split(f, set[i], TV(v)->nloop - 1, 2);
  }
}

/* Whether v is the register copy of an output cache_stores made: it stays outside the
 * output's pair loop, which then copies its two elements as one vector. */
static bool is_store_cache(cf_fusion *f, Val *v) {
  Expr *use = v->uses.len == 1 ? v->uses.items[0] : NULL;
  return use && ir_op_kind(use->op) == OPK_SET && ir_tv_is_output(f, use->out[0]) && TV(v)->mem == CF_MEM_LOCAL;
}

/* pair_stores: each output computed by the epilogue is computed into a register copy
 * (cf_cache_before, as the pointwise row caches its vectorized outputs), which the output
 * copies: only copies are vectorized. */
static void cache_stores(cf_fusion *f, const MmaTiles *t) {
  for (int i = 0, no = f->outputs.len; i < no && !f->status; i++) {
    Val *o = f->outputs.items[i];
    if (o->def && ir_op_kind(o->def->op) != OPK_SET && !sched_matmul_in_prologue(t, o)) cf_cache_before(f, ir_tv_handle(o));
  }
}

/* pair_stores: the outputs' pair loops vectorized (after unroll_epilogue, which they replace). */
static void store_pairs(cf_fusion *f, cf_tv **set, int ns, const MmaTiles *t) {
  for (int i = 0; i < ns && !f->status; i++) {
    Val *v = ir_tv(set[i]);
    if (in_epilogue(t, v) && ir_tv_is_output(f, v) && !sched_vectorize_innermost(f, v))
      ir_error(f, CF_ERR_INTERNAL, "matmul: the stores of %s were planned as pairs, which analysis/ refuses",
               TV(v)->display_name);
  }
}

/* x and y at the K-tile loop, their prologues into them, the rest as deep as legal (an
 * output's register copy outside its pair loop). */
static void inline_all(cf_fusion *f, Expr **ex, int n, const MmaTiles *t, const MmaShape *sh, int tile_pos) {
  for (int i = n - 1; i >= 0 && !f->status; i--) {
    Val *v = ex[i]->out[0];
    if (v == t->x || v == t->y) cf_inline_at(f, ir_tv_handle(v), tile_pos);
    else if (sh->pair_stores && v != t->r && is_store_cache(f, v)) cf_inline_at_best_effort(f, ir_tv_handle(v), TV(v)->nloop - 1);
    else cf_inline_at_best_effort(f, ir_tv_handle(v), TV(v)->nloop);
  }
}

/* The tensor cores read shared-memory tiles and accumulate in registers. An operand cast
 * straight from a fusion input (its broadcast axes in the input) gets a copy to be its
 * tile (cacheAfter, as nvFuser stages its operands); a product that is itself an output
 * (no epilogue cast) is summed into a local cache that a copy writes out (cacheBefore, as
 * nvFuser caches its mma's output): the fragments would otherwise be addresses in global
 * memory. The cache takes r's domain, so the schedule so far carries over. */
cf_status sched_matmul_stage_operands(cf_fusion *f, MmaTiles *t) {
  for (int i = 0; i < 2 && !f->status; i++) {
    Val **x = i ? &t->y : &t->x;
    cf_tv *c = ir_tv_is_input(f, *x) ? cf_cache_after(f, ir_tv_handle(*x)) : NULL;
    if (c) *x = ir_tv(c);
  }
  cf_tv *c = !f->status && ir_tv_is_output(f, t->r) ? cf_cache_before(f, ir_tv_handle(t->r)) : NULL;
  if (c) t->r = ir_tv(c);
  return f->status;
}

/* r's block axes [b?, Mo, No] -> blockIdx (z, y, x); grouped (sh->group_m > 1: b is 0):
 * [Mo / g, g, No] -> (z, x, y), so that consecutive blocks take g M tiles of one N
 * tile and a wave reads fewer B panels (Triton's GROUP_M; the launch order of blocks is
 * x fastest, then y, then z). Returns the axes before Ko. */
static int block_axes(cf_fusion *f, cf_tv *r, int b, const MmaShape *sh) {
  static const cf_parallel_type blocks[] = {CF_PT_BIDZ, CF_PT_BIDY, CF_PT_BIDX};
  if (sh->persist) { /* [Mo, No] -> [Mo / gm, No / gn (serial), gm, gn (BIDy, BIDx)] */
    cf_split(f, r, 1, sh->persist_n);
    cf_split(f, r, 0, sh->persist_m);
    cf_reorder(f, r, 1, (int[]){2, 1});
    cf_propagate_transforms(f, r);
    cf_parallelize(f, r, 2, CF_PT_BIDY);
    cf_parallelize(f, r, 3, CF_PT_BIDX);
    cf_parallelize_all_like(f, r, 3, blocks);
    return 4;
  }
  if (sh->group_m > 1) {
    cf_split(f, r, 0, sh->group_m);
    cf_propagate_transforms(f, r);
    cf_parallelize(f, r, 0, CF_PT_BIDZ);
    cf_parallelize(f, r, 1, CF_PT_BIDX);
    cf_parallelize(f, r, 2, CF_PT_BIDY);
  } else {
    cf_propagate_transforms(f, r);
    for (int k = 0; k < 3; k++)
      if (k >= 1 - b) cf_parallelize(f, r, k - (1 - b), blocks[k]);
  }
  cf_parallelize_all_like(f, r, 3, blocks);
  return sh->group_m > 1 ? 3 : b + 2;
}

cf_status sched_matmul_mma(cf_fusion *f, MmaTiles *t) {
  if (t->tcgen05) return sched_matmul_tcgen05(f, t);
  MmaShape sh = shape_of(t);
  if (sched_matmul_stage_operands(f, t)) return f->status;
  if (sh.pair_stores) cache_stores(f, t);
  cf_tv *r = ir_tv_handle(t->r);
  Arena *a;
  int n;
  cf_tv **set;
  Expr **ex = sched_matmul_exprs(f, &a, &n, &set);
  if (!ex) return f->status;
  block_tile(f, r, t->batch, &sh);
  int b = block_axes(f, r, t->batch, &sh) - 2; /* the tile's axes start at b + 3 */
  for (int i = 0; i < 2 && !f->status; i++) {
    cf_tv *x = ir_tv_handle(i ? t->y : t->x);
    tile_threads(f, x, b, (int64_t)cf_dtype_size(t->x->dtype), i, &t->fill[i], t, &sh);
    cf_set_memory_type(f, x, CF_MEM_SHARED);
    sched_matmul_tile_producers(f, ir_tv(x), set);
  }
  if (t->wgmma) warpgroup_tile(f, r, b);
  else warp_tile(f, r, b);
  int ns = inner_set(ex, n, t, set);
  if (!f->status && ns) cf_propagate_transforms_to(f, r, -1, ns, set);
  static const cf_parallel_type threads[] = {CF_PT_TIDZ, CF_PT_TIDY, CF_PT_TIDX};
  if (!f->status && ns) cf_parallelize_all_like(f, r, 3, threads);
  if (!f->status && sh.pair_stores) pair_epilogue(f, set, ns, t);
  if (!f->status) inline_all(f, ex, n, t, &sh, b + 3);
  if (!f->status && t->wgmma) unroll_epilogue(f, set, ns, t, &sh); /* after: Unroll loops are not shared */
  if (!f->status && sh.pair_stores) store_pairs(f, set, ns, t);
  for (int i = 0; i < 2 && !f->status; i++) {
    cf_tv *x = ir_tv_handle(i ? t->y : t->x);
    cf_circular_buffer_prefetch(f, x, sh.stages, sh.stages - (sh.pipelined ? 2 : 1));
    if (sh.tma && !f->status) cf_tma_load(f, x);
    if (sh.tma && sh.producer && !f->status) cf_warp_specialize(f, x, CF_PT_TIDY);
  }
  arena_destroy(a);
  return f->status;
}
