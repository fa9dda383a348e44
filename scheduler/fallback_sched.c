/* scheduler/fallback_sched.c: the last row of the registry (sched_fallback_row,
 * "fallback"): a parallel schedule of any one op, so that every fusion the evaluator
 * computes runs on define and run, one kernel per op at worst, never serially.
 * Segmentation starts from one group per op and only merges groups some row accepts, so a
 * group the other rows all refuse is one op, and this row takes it.
 *
 * It takes a fusion of one tensor op (any kind but a reshape, which is the view row's),
 * or a Welford reduction with the fields read from its states (the states are not a tensor
 * a kernel can write). Its output (the reduction's, for a Welford one) is the reference:
 *   - its axes are reordered broadcasts first (left out of the tile: a broadcast merged
 *     with concrete axes cannot be indexed), then the kept axes, then the reduced ones;
 *   - with kept axes: they are merged and split [blockIdx.x, threadIdx.x{128}], each
 *     thread computing one output element (its reduced axes a serial loop in it): a
 *     middle-axis reduction, a reduction keeping a broadcast axis, a permute, a squeeze,
 *     an expand, a full, a broadcast alone;
 *   - without kept axes (a reduction to one element): the reduced axes are merged and
 *     split [serial, threadIdx.x{128}] and the serial part rfactored, a block all-reduce
 *     of 128 partials;
 *   - a packed output (float4_e2m1fn, written a byte at a time): the same with two
 *     elements per thread, copied out by a vector of 2 (tile_pairs);
 *   - without axes (a 0-d result): one thread;
 * propagated to the rest (a Welford reduction's fields), parallelized alike and inlined
 * as deep as legal.
 * Key decision: correctness and parallelism over speed: no vector accesses (but a packed
 * output's pairs), no staging,
 * uncoalesced reads for permutes and middle axes. The rows before it exist for speed; this
 * one exists so that nothing is refused and nothing runs on one thread over a whole
 * tensor. Its parameters are fixed ("threads=128 ..."), so one kernel serves every size. */
#include "ir/dtype.h"
#include "scheduler/registry.h"
#include "scheduler/sched.h"

enum { FB_THREADS = 128 };

static bool welford_field(const Expr *e, const Val *w) {
  return e->nin == 1 && e->in[0] == w && (e->op == OP_WELFORD_AVG || e->op == OP_WELFORD_M2 || e->op == OP_WELFORD_N);
}

bool sched_fallback_accepts(cf_fusion *f, char *why) {
  int n;
  Expr **exprs = ir_fusion_tensor_exprs(f, &n);
  if (n == 0) return snprintf(why, SCHED_WHY_MAX, "fallback: the fusion computes nothing"), false;
  if (exprs[0]->op == OP_RESHAPE)
    return snprintf(why, SCHED_WHY_MAX, "fallback: %s is a reshape (a view)", TV(exprs[0]->out[0])->display_name), false;
  bool welford = exprs[0]->op == OP_WELFORD;
  for (int i = 1; i < n; i++)
    if (!welford || !welford_field(exprs[i], exprs[0]->out[0]))
      return snprintf(why, SCHED_WHY_MAX, "fallback: %d ops (it takes one op, a Welford reduction with its fields)",
                      n), false;
  return true;
}

/* The order that puts tv's broadcast axes first, then its kept axes, then its reduced
 * ones; counts in nb, nk. */
static void axis_order(Val *tv, int *order, int *nb, int *nk) {
  int r = TV(tv)->nloop, k = 0;
  *nb = *nk = 0;
  for (int pass = 0; pass < 3; pass++)
    for (int a = 0; a < r; a++) {
      cf_iter_type t = ID(TV(tv)->loop[a])->iter_type;
      int which = t == CF_ITER_BROADCAST ? 0 : t == CF_ITER_REDUCTION ? 2 : 1;
      if (which != pass) continue;
      order[a] = k++;
      *nb += pass == 0;
      *nk += pass == 1;
    }
}

/* [broadcasts.., blockIdx.x, threadIdx.x{128}, reduced..]. */
static void tile_kept(cf_fusion *f, cf_tv *r, int nb, int nk) {
  for (int k = 1; k < nk; k++) cf_merge(f, r, nb);
  cf_split(f, r, nb, FB_THREADS);
  cf_propagate_transforms(f, r);
  cf_parallelize(f, r, nb, CF_PT_BIDX);
  cf_parallelize(f, r, nb + 1, CF_PT_TIDX);
  cf_parallelize_all_like(f, r, 2, (cf_parallel_type[]){CF_PT_BIDX, CF_PT_TIDX});
}

/* A packed output (float4_e2m1fn, two elements per byte; a move or a cast: no reduced
 * axes): its op computed into a cache, two elements per thread, copied out by a vector of
 * 2 so that one thread writes each byte whole (lower/vectorize.c):
 * [broadcasts.., blockIdx.x, threadIdx.x{128}, vector{2}], the innermost kept axis (the
 * logical innermost; even by the packed rule, validated when symbolic) split by 2 first. */
static void tile_pairs(cf_fusion *f, cf_tv *r, int nb, int nk) {
  cf_cache_before(f, r);
  cf_split(f, r, nb + nk - 1, 2); /* the pair after the kept axes, which tile_kept merges */
  tile_kept(f, r, nb, nk);
  cf_parallelize(f, r, nb + 2, CF_PT_VECTORIZE);
}

/* [broadcasts.., serial (rfactored), threadIdx.x{128}]: a block all-reduce. */
static void tile_reduced(cf_fusion *f, cf_tv *r, int nb, int nred) {
  for (int k = 1; k < nred; k++) cf_merge(f, r, nb);
  cf_split(f, r, nb, FB_THREADS);
  if (cf_propagate_transforms(f, r)) return;
  cf_tv *rf = cf_rfactor(f, r, 1, (int[]){nb});
  if (!rf) return;
  cf_parallelize(f, rf, nb + 1, CF_PT_TIDX);
  cf_parallelize(f, r, nb, CF_PT_TIDX);
  cf_parallelize_all_like(f, rf, 1, (cf_parallel_type[]){CF_PT_TIDX});
}

cf_status sched_fallback_schedule(cf_fusion *f) {
  char why[SCHED_WHY_MAX];
  if (f->status) return f->status;
  if (!sched_fallback_accepts(f, why)) return ir_error(f, CF_ERR_UNSUPPORTED, "%s", why);
  int n;
  Val *ref = ir_fusion_tensor_exprs(f, &n)[0]->out[0];
  int r = TV(ref)->nloop, order[CF_MAX_RANK], nb, nk;
  if (r == 0) return cf_inline_most(f);
  if (r > CF_MAX_RANK) return ir_error(f, CF_ERR_UNSUPPORTED, "fallback: %s has more than %d axes", TV(ref)->display_name, CF_MAX_RANK);
  axis_order(ref, order, &nb, &nk);
  cf_tv *h = ir_tv_handle(ref);
  cf_reorder_all(f, h, r, order);
  if (nk > 0 && nb + nk == r && ir_dtype_is_packed(ref->dtype)) tile_pairs(f, h, nb, nk);
  else if (nk > 0) tile_kept(f, h, nb, nk);
  else if (r > nb) tile_reduced(f, h, nb, r - nb);
  return f->status ? f->status : cf_inline_most(f);
}

static bool fb_can(cf_fusion *f, const SchedCall *call, char *why) {
  (void)call;
  return sched_fallback_accepts(f, why);
}

static bool fb_plan(cf_fusion *f, const SchedCall *call, SchedParams *p, char *why) {
  if (!fb_can(f, call, why)) return false;
  sched_params_text(p, "threads=%d, one op", FB_THREADS);
  return true;
}

static cf_status fb_apply(cf_fusion **f, const SchedCall *call, const SchedParams *p, SchedParams *used) {
  (void)call;
  *used = *p;
  return sched_fallback_schedule(*f);
}

const SchedRow sched_fallback_row = {"fallback", SCHED_ROW_KERNEL, false, fb_can, fb_plan, fb_apply};
