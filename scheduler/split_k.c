/* scheduler/split_k.c: the split-K rewrite of define and run's concrete copy
 * (sched_split_k), applied once before any row is asked (executor/fusion_plan.c, before
 * the reshapes become views), so the segmenter sees the split product.
 *
 * A product of few output tiles and a deep K (a few tokens through a wide weight: 16 x
 * 11008 @ 11008 x 4096 is 64 blocks of the narrowest tensor-core tile, half an H200's
 * SMs, each streaming 11008 rows of B) leaves SMs idle. The rewrite splits K into ks
 * slices: R = sum_K(a * b) becomes
 *   A3 = reshape(A, K -> [ks, Kk]), B3 = reshape(B, K -> [ks, Kk])   (views: no kernel)
 *   R' = sum_Kk(a3 * b3)   (one float partial product per slice: a batched matmul, the
 *                           slices on blockIdx.z, ks times the blocks)
 *   R  = sum_ks(R')        (the reduction scheduler, with R's epilogue: bias, activation,
 *                           the cast)
 * R keeps its readers (they read the new sum instead); the old product goes. The partials
 * cost ks x M x N floats written and read once more, small beside B when M is small.
 * Taken where (all constant in the call): one sum of a mul of two operands, each a
 * broadcast, then a cast to float, of a 2-D fusion input of half or bfloat16 read by
 * nothing else, as cf_matmul and cf_linear build ([M, K] @ [K, N], or x [M, K] with w
 * [N, K]), no batch; the blocks of the narrowest tile, ceil(M / SPLIT_K_TILE_M) x
 * ceil(N / SPLIT_K_TILE_N), fewer than half the SMs. ks is the largest divisor of K whose
 * slices keep 16-byte rows (Kk a multiple of 8), at least SPLIT_K_MIN_SLICE deep, that
 * keeps the blocks within SPLIT_K_BLOCKS_PER_SM a SM; none below 2: no split. An M or N of
 * 1 is not split: its slices' view makes that axis a broadcast, and the product a
 * matrix-vector one, which the reduction scheduler takes (it splits a long K over blocks
 * itself). Measured
 * on an H200 (bench_matmul, CFUSER_BENCH_SHAPES, us, no split / 2 slices / 4): 16 x 4096
 * @ 4096x4096 31.7-32.4 / 22.1-24.1 / 19.6-19.9, 128 x 4096 @ 4096x4096 36.7-37.7 /
 * 25.6-26.0 / 23.1-24.1, 16 x 11008 @ 11008x4096 75.8-76.9 / 45.5-47.4 / 35.3-35.9, 128 x
 * 11008 @ 11008x4096 84.8-85.4 / 49.2-50.5 / 41.1-41.6 (four slices are 256 blocks: two an
 * SM); where the tiles fill the SMs a split is slower (1024 x 11008 @ 11008x4096 133 ->
 * 166 in 4 slices) or no faster (16 x 4096 @ 4096x11008, 172 blocks: 41.5-44.1 -> 43-45).
 * A linear's partials are [M, N, ks] (ks innermost), stored ks floats apart; partials [M,
 * ks, N] (the weight's view permuted to [ks, N, K / ks]) were tried and measured slower
 * (bench/results/split_k_layout_h200_20261129/: the permuted tile was filled through a
 * register array, not by cp.async; 16 x 11008 -> 4096's matmul 28.6 -> 111 us).
 * The sums change order (each slice summed, then the slices), as cuBLAS's split-K does;
 * both in float. CFUSER_SPLIT_K=<ks> forces a split (0: never), for measuring.
 * Key decision: a rewrite into existing rows (a batched matmul and a reduction) rather
 * than a grid reduction of the accumulator inside the matmul kernel: every piece is
 * already scheduled, lowered, emulated and tested, and the plan says what it did
 * (CFUSER_DUMP=segments: two views, a matmul over a batch of ks, a reduction). */
#include <stdlib.h>

#include "ir/checked.h"
#include "scheduler/registry.h"

enum {
  SPLIT_K_TILE_M = 128,    /* the tensor-core schedule's block tile M (matmul_mma.c) */
  SPLIT_K_TILE_N = 64,     /* its narrowest block tile N */
  SPLIT_K_MIN_SLICE = 1024, /* a slice's K at least this (a K of 2048 and more is split) */
  SPLIT_K_BLOCKS_PER_SM = 2  /* the narrowest tile's blocks one SM holds at once */
};

/* One operand of the mul: the fusion input it reads and its chain. */
typedef struct SkOperand {
  Val *x;              /* the 2-D fusion input */
  Val *bcast;          /* broadcast(x) */
  Val *cast;           /* cast(bcast) to float */
  bool flags[3];       /* the product's axes the broadcast inserts */
  int kx;              /* x's K axis (0 or 1) */
} SkOperand;

/* The product found: r = sum(p, k), p = mul(op[0], op[1]). */
typedef struct SkMatch {
  Expr *sum, *mul;
  int k; /* the reduced axis of p */
  SkOperand op[2];
} SkMatch;

static bool one_use(const Val *v) { return v->uses.len == 1; }

/* Operand v of the mul (rank 3): a cast to float of a broadcast of a 2-D half/bfloat16
 * input with every axis iterated, each tensor read once; its K axis is x's axis at p's k.
 * The product then sums in float, so the slices' partials are float sums as the unsplit
 * sum's are (a product of 16-bit values summed in 16 bits would round each partial). */
static bool operand(cf_fusion *f, Val *v, int k, SkOperand *o) {
  *o = (SkOperand){0};
  if (!one_use(v) || !v->def || v->def->op != OP_CAST || v->dtype != CF_FLOAT) return false;
  o->cast = v;
  v = v->def->in[0];
  if (!one_use(v) || !v->def) return false;
  if (v->def->op != OP_BROADCAST || TV(v)->nlogical != 3) return false;
  o->bcast = v;
  o->x = v->def->in[0];
  if (!ir_tv_is_input(f, o->x) || TV(o->x)->nlogical != 2 || !one_use(o->x)) return false;
  if (o->x->dtype != CF_HALF && o->x->dtype != CF_BFLOAT16) return false;
  for (int a = 0; a < 2; a++)
    if (ID(TV(o->x)->logical[a])->iter_type != CF_ITER_ITERATION) return false;
  int nb = 0;
  for (int a = 0; a < 3; a++) nb += o->flags[a] = ID(TV(v)->logical[a])->iter_type == CF_ITER_BROADCAST;
  if (nb != 1 || o->flags[k]) return false;
  o->kx = 0;
  for (int a = 0; a < k; a++) o->kx += !o->flags[a];
  return true;
}

static bool match(cf_fusion *f, Expr *e, SkMatch *m) {
  if (e->op != OP_SUM || e->nin != 1) return false;
  Val *r = e->out[0], *p = e->in[0];
  if (ir_tv_is_output(f, r) || TV(r)->nlogical != 3 || !p->def || p->def->op != OP_MUL || !one_use(p)) return false;
  int nred = 0;
  for (int a = 0; a < 3; a++)
    if (ID(TV(r)->logical[a])->iter_type == CF_ITER_REDUCTION) m->k = a, nred++;
  if (nred != 1) return false;
  m->sum = e, m->mul = p->def;
  if (m->mul->nin != 2 || m->mul->in[0]->kind != VAL_TV || m->mul->in[1]->kind != VAL_TV) return false;
  for (int i = 0; i < 2; i++)
    if (!operand(f, m->mul->in[i], m->k, &m->op[i])) return false;
  /* one M and one N: the two broadcasts insert different axes */
  for (int a = 0; a < 3; a++)
    if (m->op[0].flags[a] && m->op[1].flags[a]) return false;
  return true;
}

/* Whether ks slices of K keep 16-byte rows of 16-bit elements. */
static bool slices_rows(int64_t k, int64_t ks) { return k % ks == 0 && (k / ks) % 8 == 0; }

static int64_t extent_of(Val *tv, int a) {
  int64_t e = -1;
  return ir_scalar_const_value(ID(TV(tv)->logical[a])->extent, &e) ? e : -1;
}

/* ks for the match on dev (above); 0: no split. */
static int64_t slices(const SkMatch *m, const SchedDevice *dev) {
  Val *x = m->op[0].x, *y = m->op[1].x;
  int64_t kk = extent_of(x, m->op[0].kx), mm = extent_of(x, 1 - m->op[0].kx), nn = extent_of(y, 1 - m->op[1].kx);
  if (kk <= 0 || mm < 2 || nn < 2) return 0; /* M or N of 1: a matrix-vector product (above) */
  const char *env = getenv("CFUSER_SPLIT_K");
  if (env && *env) {
    int64_t ks = atoll(env);
    return ks >= 2 && slices_rows(kk, ks) ? ks : 0;
  }
  int64_t blocks = ck_ceil_div(mm, SPLIT_K_TILE_M) * ck_ceil_div(nn, SPLIT_K_TILE_N);
  if (2 * blocks >= dev->sm_count) return 0;
  int64_t best = 0;
  for (int64_t ks = 2; ks * blocks <= SPLIT_K_BLOCKS_PER_SM * dev->sm_count && kk / ks >= SPLIT_K_MIN_SLICE; ks++)
    if (slices_rows(kk, ks)) best = ks;
  return best;
}

/* reshape(x) with its K axis kx split into [ks, K / ks]. */
static cf_tv *split_input(cf_fusion *f, const SkOperand *o, int64_t ks) {
  int64_t sizes[3];
  for (int a = 0, d = 0; a < 2; a++) {
    int64_t e = extent_of(o->x, a);
    if (a == o->kx) sizes[d++] = ks, sizes[d++] = e / ks;
    else sizes[d++] = e;
  }
  return cf_reshape(f, ir_tv_handle(o->x), 3, sizes);
}

/* The operand on the split product (rank 4: K at k becomes [ks, Kk] at k, k + 1). */
static cf_tv *split_operand(cf_fusion *f, const SkOperand *o, int k, int64_t ks) {
  cf_tv *x3 = split_input(f, o, ks);
  bool flags[4];
  for (int a = 0, d = 0; a < 3; a++) {
    flags[d++] = o->flags[a];
    if (a == k) flags[d++] = false;
  }
  cf_tv *b = x3 ? cf_broadcast(f, x3, 4, flags) : NULL;
  return b ? cf_cast(f, b, CF_FLOAT) : NULL;
}

static cf_status rewrite(cf_fusion *f, const SkMatch *m, int64_t ks) {
  cf_tv *a = split_operand(f, &m->op[0], m->k, ks);
  cf_tv *b = a ? split_operand(f, &m->op[1], m->k, ks) : NULL;
  cf_tv *p = b ? cf_mul(f, a, b) : NULL;
  int kk = m->k + 1;
  cf_tv *partial = p ? cf_sum(f, p, 1, &kk) : NULL;
  cf_tv *r = partial ? cf_sum(f, partial, 1, &m->k) : NULL;
  if (!r) return f->status ? f->status : ir_error(f, CF_ERR_INTERNAL, "split-K: the rewrite failed");
  ir_tv_replace_uses(f, m->sum->out[0], ir_tv(r));
  ir_expr_drop(f, m->sum);
  ir_expr_drop(f, m->mul);
  for (int i = 0; i < 2; i++) {
    ir_expr_drop(f, m->op[i].cast->def);
    ir_expr_drop(f, m->op[i].bcast->def);
  }
  return CF_OK;
}

cf_status sched_split_k(cf_fusion *f, const SchedDevice *dev) {
  if (f->status) return f->status;
  int n;
  Expr **ex = ir_fusion_tensor_exprs(f, &n);
  if (!ex) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "split-K: out of memory");
  SkMatch m, one;
  int found = 0;
  for (int i = 0; i < n; i++)
    if (match(f, ex[i], &one)) m = one, found++;
  if (found != 1) return CF_OK; /* none, or several products: left as they are */
  int64_t ks = slices(&m, dev);
  return ks >= 2 ? rewrite(f, &m, ks) : CF_OK;
}
