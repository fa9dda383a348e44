/* scheduler/reduction_sched.c: the automatic scheduler of inner reductions
 * (sched_reduction_heuristic, issue 11), a client of the public scheduling calls.
 * Heuristic, in order:
 *   1. accepts a fusion of elementwise ops and exactly one reduction whose output is the
 *      fusion's only output and whose reduced axes are its innermost ones (an inner
 *      reduction: sum/max/min/prod over the last axes, with an elementwise prologue);
 *   2. the reduced axes are merged into one, split into [serial, threadIdx.x{128}]; the
 *      iteration axes are merged into one (blockIdx.x: one block per row) after step 3,
 *      since rfactor takes iteration axes untransformed;
 *   3. the serial part is rfactored: each thread folds ceilDiv(row, 128) elements into a
 *      register, then the block all-reduces the 128 partials (a row of any length is one
 *      block: no grid reduction);
 *   4. the split is propagated to the prologue before the rfactor, the rfactor tensor's
 *      parallel types after it, and everything is inlined as deep as legal.
 * Outer (column) reduction of a 2-D [r, i] tensor: blockIdx.x over 32-column groups,
 * threadIdx.x over the 32 columns (coalesced), each thread folds its column serially.
 * Not yet: vectorized loads, a threadIdx.y split of the reduced axis, other outer
 * reductions and epilogues are refused with a reason; the thread counts are fixed (the
 * call's sizes are not read). */
#include "scheduler/heuristic.h"
#include "scheduler/sched.h"

enum { RED_THREADS = 128, RED_COLUMNS = 32 };

static bool red_elementwise(const Expr *e) {
  OpKind k = ir_op_kind(e->op);
  return k == OPK_SET || k == OPK_UNARY || k == OPK_BINARY || k == OPK_TERNARY || k == OPK_CAST;
}

/* The reduction output, or NULL with the reason in why. */
static Val *find_reduction(cf_fusion *f, char *why) {
  int n;
  Expr **exprs = ir_fusion_tensor_exprs(f, &n);
  Val *red = NULL;
  for (int i = 0; i < n; i++) {
    if (ir_op_kind(exprs[i]->op) == OPK_REDUCTION) {
      if (red) {
        snprintf(why, SCHED_WHY_MAX, "reduction: %s is a second reduction", TV(exprs[i]->out[0])->display_name);
        return NULL;
      }
      red = exprs[i]->out[0];
    } else if (!red_elementwise(exprs[i])) {
      snprintf(why, SCHED_WHY_MAX, "reduction: %s is computed by %s, not an elementwise op",
               TV(exprs[i]->out[0])->display_name, ir_op_name(exprs[i]->op));
      return NULL;
    }
  }
  if (!red) snprintf(why, SCHED_WHY_MAX, "reduction: the fusion has no reduction");
  return red;
}

/* A 2-D [r, i] reduction: a sum of columns. */
static bool column_reduction(Val *red) {
  return TV(red)->nlogical == 2 && ID(TV(red)->logical[0])->iter_type == CF_ITER_REDUCTION &&
         ID(TV(red)->logical[1])->iter_type == CF_ITER_ITERATION;
}

static bool red_accepts(cf_fusion *f, const SchedCall *call, char *why) {
  (void)call;
  Val *red = find_reduction(f, why);
  if (!red) return false;
  if (f->outputs.len != 1 || f->outputs.items[0] != red) {
    snprintf(why, SCHED_WHY_MAX, "reduction: the only output must be the reduction %s", TV(red)->display_name);
    return false;
  }
  bool seen_reduced = false, outer = column_reduction(red);
  for (int a = 0; a < TV(red)->nlogical && !outer; a++) {
    bool r = ID(TV(red)->logical[a])->iter_type == CF_ITER_REDUCTION;
    if (ID(TV(red)->logical[a])->iter_type == CF_ITER_BROADCAST) {
      snprintf(why, SCHED_WHY_MAX, "reduction: %s has a broadcast axis (a constant extent of 1)", TV(red)->display_name);
      return false;
    }
    if (seen_reduced && !r) {
      snprintf(why, SCHED_WHY_MAX,
               "reduction: %s reduces an axis before a kept one "
               "(only inner reductions and 2-D column sums are scheduled)",
               TV(red)->display_name);
      return false;
    }
    seen_reduced |= r;
  }
  return true;
}

/* [r, i] -> [r (serial), i / 32 (blockIdx.x), 32 (threadIdx.x)]: each thread sums one
 * column, a warp reads 32 consecutive columns of a row (coalesced). */
static cf_status outer_schedule(cf_fusion *f, cf_tv *r, char *params) {
  cf_split(f, r, 1, RED_COLUMNS);
  if (cf_propagate_transforms(f, r)) return f->status;
  cf_parallelize(f, r, 1, CF_PT_BIDX);
  cf_parallelize(f, r, 2, CF_PT_TIDX);
  cf_parallelize_all_like(f, r, 2, (cf_parallel_type[]){CF_PT_BIDX, CF_PT_TIDX});
  if (f->status) return f->status;
  snprintf(params, SCHED_PARAMS_MAX, "outer columns=%d serial=rows", RED_COLUMNS);
  return cf_inline_most(f);
}

static cf_status red_schedule(cf_fusion *f, const SchedCall *call, char *params) {
  char why[SCHED_WHY_MAX];
  if (!red_accepts(f, call, why)) return ir_error(f, CF_ERR_UNSUPPORTED, "%s", why);
  Val *red = f->outputs.items[0];
  cf_tv *r = ir_tv_handle(red);
  if (column_reduction(red)) return outer_schedule(f, r, params);
  int niter = 0;
  while (ID(TV(red)->logical[niter])->iter_type != CF_ITER_REDUCTION) niter++;
  int nred = TV(red)->nlogical - niter;
  for (int k = 1; k < nred; k++) cf_merge(f, r, niter);
  cf_split(f, r, niter, RED_THREADS);
  /* Propagated before the rfactor: the prologue gets [rows.., serial, threads] too. */
  if (cf_propagate_transforms(f, r)) return f->status;
  cf_tv *rf = cf_rfactor(f, r, 1, (int[]){niter});
  if (!rf) return f->status;
  /* rfactor takes iteration axes as they are: merged into one row axis after it. */
  for (int k = 1; k < niter; k++) cf_merge(f, rf, 0);
  if (niter > 1 && cf_propagate_transforms(f, rf)) return f->status;
  int ri = niter > 0 ? 1 : 0;
  if (niter > 0) cf_parallelize(f, rf, 0, CF_PT_BIDX), cf_parallelize(f, r, 0, CF_PT_BIDX);
  cf_parallelize(f, rf, ri + 1, CF_PT_TIDX);
  cf_parallelize(f, r, ri, CF_PT_TIDX);
  cf_parallelize_all_like(f, rf, 2, (cf_parallel_type[]){CF_PT_BIDX, CF_PT_TIDX});
  if (f->status) return f->status;
  snprintf(params, SCHED_PARAMS_MAX, "threads=%d rows=%s", RED_THREADS, niter > 0 ? "blockIdx.x" : "1");
  return cf_inline_most(f);
}

const SchedHeuristic sched_reduction_heuristic = {"reduction", red_accepts, red_schedule};
