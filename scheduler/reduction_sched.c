/* scheduler/reduction_sched.c: the automatic scheduler of inner reductions
 * (sched_reduction_heuristic, issue 11), a client of the public scheduling calls.
 * Heuristic, in order:
 *   1. accepts a fusion of elementwise ops and exactly one reduction whose reduced axes
 *      are its innermost ones (an inner reduction: sum/max/min/prod/welford over the last
 *      axes, with an elementwise prologue), whose outputs are the reduction or an
 *      elementwise epilogue on the reduced shape computed from it alone (Welford's fields,
 *      var_mean's division; inner reductions only), computed by the block after its
 *      all-reduce;
 *   2. the reduced axes are merged into one, split into [serial, threadIdx.x{128}]; the
 *      iteration axes are merged into one (blockIdx.x: one block per row) after step 3,
 *      since rfactor takes iteration axes untransformed;
 *   3. the serial part is rfactored: each thread folds ceilDiv(row, 128) elements into a
 *      register, then the block all-reduces the 128 partials (a row of any length is one
 *      block: no grid reduction);
 *   4. the split is propagated to the prologue before the rfactor, the rfactor tensor's
 *      parallel types after it, and everything is inlined as deep as legal.
 *   Long rows (constant, at least RED_VEC_MIN_ROW elements, the innermost extent a
 *   multiple of the vector): the inputs are cached with 16-byte vector loads
 *   (cf_cache_after), the reduced axis split [serial, threadIdx.x{128}, vector] and both
 *   serial and vector rfactored, as the inner persistent scheduler does: a row of 16384
 *   floats is 32 vector loads per thread instead of 128 scalar ones.
 * Outer (column) reduction of a 2-D [r, i] tensor: blockIdx.x over 32-column groups,
 * threadIdx.x over the 32 columns (coalesced), each thread folds its column serially.
 * Tall columns (constant, at least RED_TALL_ROWS rows): the rows are also split over
 * threadIdx.y{16} and unrolled by 4 ([i/32, 32, r/64, unroll 4, threadIdx.y 16], as
 * bench/reduction.c's hand schedule), so a block of 512 threads keeps 16 rows in flight
 * and 16384 columns give 512 blocks (a wave of 132 SMs at 4 blocks each); the 16 partial
 * sums of a column meet in a block reduction over threadIdx.y.
 * Measured on an H200 (bench/run_define_and_run.sh, device copy 4185 GB/s): row sum of
 * 16384x16384 floats 4499 GB/s (vector 4), column sum 4305 GB/s (threadIdx.y 16, unroll
 * 4); the thresholds RED_VEC_MIN_ROW and RED_TALL_ROWS are not swept yet.
 * A reduction of middle axes ([a, r, b] over r) with no epilogue: its loop axes are
 * reordered kept-first ([a, b, r]) and scheduled as an inner reduction without vectors;
 * correct, but each warp reads with the stride of b (uncoalesced): a batched form of the
 * column schedule would be the fast one (not measured).
 * Not yet: other outer reductions and epilogues are refused with a reason; no grid
 * reduction (a few long rows, or few columns, leave SMs idle). */
#include <stdlib.h>

#include "scheduler/heuristic.h"
#include "scheduler/sched.h"

enum {
  RED_THREADS = 128,
  RED_COLUMNS = 32,
  RED_VECTOR_BYTES = 16,
  RED_VEC_MIN_ROW = RED_THREADS * 4 * 4, /* 4 vectors of 4 floats per thread at the least */
  RED_COL_TIDY = 16,
  RED_COL_UNROLL = 4,
  RED_TALL_ROWS = RED_COL_TIDY * RED_COL_UNROLL * 16,
};

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

/* The kept (non-reduction) axes of tv. */
static int kept_rank(Val *tv) {
  int n = 0;
  for (int a = 0; a < TV(tv)->nlogical; a++) n += ID(TV(tv)->logical[a])->iter_type != CF_ITER_REDUCTION;
  return n;
}

/* The outputs: the reduction alone, or an epilogue of elementwise ops on the reduced
 * shape that reads only the reduction and tensors computed from it (Welford's fields and
 * var_mean's division: the states themselves cannot be outputs); every input of the
 * reduction's shape (they are all cached as rows). */
static bool red_outputs(cf_fusion *f, Val *red, char *why) {
  if (f->outputs.len == 1 && f->outputs.items[0] == red) return true;
  int n;
  Expr **exprs = ir_fusion_tensor_exprs(f, &n);
  bool *after = calloc((size_t)f->vals.len + 1, 1);
  if (!after) return snprintf(why, SCHED_WHY_MAX, "reduction: out of memory"), false;
  after[red->id] = true;
  bool ok = true;
  for (int i = 0; i < n && ok; i++) {
    Expr *e = exprs[i];
    bool reads = false, other = false;
    for (int j = 0; j < e->nin; j++)
      if (e->in[j]->kind == VAL_TV) after[e->in[j]->id] ? (reads = true) : (other = true);
    if (!reads || e->out[0] == red) continue;
    after[e->out[0]->id] = true;
    ok = !other && kept_rank(e->out[0]) == kept_rank(red);
  }
  for (int o = 0; o < f->outputs.len && ok; o++) ok = after[((Val *)f->outputs.items[o])->id];
  for (int i = 0; i < f->inputs.len && ok; i++) ok = TV((Val *)f->inputs.items[i])->nlogical == TV(red)->nlogical;
  free(after);
  if (!ok)
    snprintf(why, SCHED_WHY_MAX, "reduction: the outputs must be the reduction %s or computed from it alone",
             TV(red)->display_name);
  return ok;
}

/* Whether the reduction is the only output (no epilogue). */
static bool red_outputs_single(cf_fusion *f, Val *red) { return f->outputs.len == 1 && f->outputs.items[0] == red; }

static bool red_accepts(cf_fusion *f, const SchedCall *call, char *why) {
  (void)call;
  Val *red = find_reduction(f, why);
  if (!red || !red_outputs(f, red, why)) return false;
  if (column_reduction(red) && !(f->outputs.len == 1 && f->outputs.items[0] == red)) {
    snprintf(why, SCHED_WHY_MAX, "reduction: a column reduction must be the only output");
    return false;
  }
  bool seen_reduced = false, outer = column_reduction(red);
  for (int a = 0; a < TV(red)->nlogical && !outer; a++) {
    bool r = ID(TV(red)->logical[a])->iter_type == CF_ITER_REDUCTION;
    if (ID(TV(red)->logical[a])->iter_type == CF_ITER_BROADCAST) {
      snprintf(why, SCHED_WHY_MAX, "reduction: %s has a broadcast axis (a constant extent of 1)", TV(red)->display_name);
      return false;
    }
    if (seen_reduced && !r && !red_outputs_single(f, red)) {
      snprintf(why, SCHED_WHY_MAX,
               "reduction: %s reduces an axis before a kept one and has an epilogue "
               "(a middle reduction is scheduled alone)",
               TV(red)->display_name);
      return false;
    }
    seen_reduced |= r;
  }
  return true;
}

/* Tall columns: [r, i] -> [i/32 (blockIdx.x), 32 (threadIdx.x), r/64, 4 (unrolled),
 * 16 (threadIdx.y)]. */
static cf_status tall_outer_schedule(cf_fusion *f, cf_tv *r, char *params) {
  cf_split(f, r, 1, RED_COLUMNS);    /* [r, i/32, 32] */
  cf_split(f, r, 0, RED_COL_TIDY);   /* [r/16, 16, i/32, 32] */
  cf_split(f, r, 0, RED_COL_UNROLL); /* [r/64, 4, 16, i/32, 32] */
  cf_reorder_all(f, r, 5, (int[]){2, 3, 4, 0, 1});
  if (cf_propagate_transforms(f, r)) return f->status;
  cf_parallelize(f, r, 0, CF_PT_BIDX);
  cf_parallelize(f, r, 1, CF_PT_TIDX);
  cf_parallelize(f, r, 3, CF_PT_UNROLL);
  cf_parallelize(f, r, 4, CF_PT_TIDY);
  cf_parallelize_all_like(f, r, 4, (cf_parallel_type[]){CF_PT_BIDX, CF_PT_TIDX, CF_PT_TIDY, CF_PT_UNROLL});
  if (f->status) return f->status;
  snprintf(params, SCHED_PARAMS_MAX, "outer columns=%d rows=threadIdx.y{%d} unroll=%d", RED_COLUMNS, RED_COL_TIDY,
           RED_COL_UNROLL);
  return cf_inline_most(f);
}

/* [r, i] -> [r (serial), i / 32 (blockIdx.x), 32 (threadIdx.x)]: each thread sums one
 * column, a warp reads 32 consecutive columns of a row (coalesced). */
static cf_status outer_schedule(cf_fusion *f, cf_tv *r, char *params) {
  int64_t rows;
  if (ir_scalar_const_value(ID(TV(ir_tv(r))->logical[0])->extent, &rows) && rows >= RED_TALL_ROWS)
    return tall_outer_schedule(f, r, params);
  cf_split(f, r, 1, RED_COLUMNS);
  if (cf_propagate_transforms(f, r)) return f->status;
  cf_parallelize(f, r, 1, CF_PT_BIDX);
  cf_parallelize(f, r, 2, CF_PT_TIDX);
  cf_parallelize_all_like(f, r, 2, (cf_parallel_type[]){CF_PT_BIDX, CF_PT_TIDX});
  if (f->status) return f->status;
  snprintf(params, SCHED_PARAMS_MAX, "outer columns=%d serial=rows", RED_COLUMNS);
  return cf_inline_most(f);
}

/* The vector width of long rows: 16 bytes over the widest input, halved until it divides
 * the innermost extent; 1 when a reduced extent is symbolic, the row shorter than
 * RED_VEC_MIN_ROW or an input strided. (A misaligned call is the executor's: it
 * devectorizes.) */
static int64_t row_vector(cf_fusion *f, Val *red, int niter) {
  int64_t row = 1, inner = 1;
  for (int a = niter; a < TV(red)->nlogical; a++) {
    if (!ir_scalar_const_value(ID(TV(red)->logical[a])->extent, &inner)) return 1;
    row *= inner;
  }
  size_t widest = 1;
  for (int i = 0; i < f->inputs.len; i++) {
    Val *in = f->inputs.items[i];
    if (TV(in)->has_strides) return 1;
    if (cf_dtype_size(in->dtype) > widest) widest = cf_dtype_size(in->dtype);
  }
  int64_t v = RED_VECTOR_BYTES / (int64_t)widest;
  while (v > 1 && inner % v != 0) v /= 2;
  return row >= RED_VEC_MIN_ROW && v > 1 ? v : 1;
}

/* Caches every input (all of the reduction's shape: the prologue is elementwise) for
 * vector loads; the caches, into caches[], are vectorized once their loops are final. */
static int cache_inputs(cf_fusion *f, cf_tv **caches) {
  int n = 0;
  int nin = f->inputs.len;
  for (int i = 0; i < nin; i++) {
    cf_tv *c = cf_cache_after(f, ir_tv_handle(f->inputs.items[i]));
    if (c) caches[n++] = c;
  }
  return n;
}

static cf_status red_schedule(cf_fusion *f, const SchedCall *call, char *params) {
  char why[SCHED_WHY_MAX];
  if (!red_accepts(f, call, why)) return ir_error(f, CF_ERR_UNSUPPORTED, "%s", why);
  Val *red = find_reduction(f, why);
  cf_tv *r = ir_tv_handle(red);
  if (column_reduction(red)) return outer_schedule(f, r, params);
  int n = TV(red)->nlogical, niter = 0, order[CF_MAX_RANK];
  bool middle = false; /* a reduced axis before a kept one: the kept ones go first */
  for (int a = 0; a < n; a++)
    if (ID(TV(red)->logical[a])->iter_type != CF_ITER_REDUCTION) middle |= niter != a, order[a] = niter++;
  for (int a = 0, k = niter; a < n; a++)
    if (ID(TV(red)->logical[a])->iter_type == CF_ITER_REDUCTION) order[a] = k++;
  if (middle) cf_reorder_all(f, r, n, order);
  int nred = n - niter;
  int64_t vec = middle ? 1 : row_vector(f, red, niter);
  cf_tv **caches = vec > 1 ? calloc((size_t)f->inputs.len + 1, sizeof *caches) : NULL;
  if (vec > 1 && !caches) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "reduction: out of memory");
  int ncaches = vec > 1 ? cache_inputs(f, caches) : 0;
  for (int k = 1; k < nred; k++) cf_merge(f, r, niter);
  if (vec > 1) cf_split(f, r, niter, vec);
  cf_split(f, r, niter, RED_THREADS);
  /* Propagated before the rfactor: the prologue gets [rows.., serial, threads(, vector)]. */
  cf_tv *rf = cf_propagate_transforms(f, r) ? NULL : cf_rfactor(f, r, vec > 1 ? 2 : 1, (int[]){niter, niter + 2});
  if (!rf) return free(caches), f->status;
  /* rfactor takes iteration axes as they are: merged into one row axis after it. */
  for (int k = 1; k < niter; k++) cf_merge(f, rf, 0);
  if (niter > 1 && cf_propagate_transforms(f, rf)) return free(caches), f->status;
  int ri = niter > 0 ? 1 : 0;
  if (niter > 0) cf_parallelize(f, rf, 0, CF_PT_BIDX), cf_parallelize(f, r, 0, CF_PT_BIDX);
  cf_parallelize(f, rf, ri + 1, CF_PT_TIDX);
  cf_parallelize(f, r, ri, CF_PT_TIDX);
  cf_parallelize_all_like(f, rf, 2, (cf_parallel_type[]){CF_PT_BIDX, CF_PT_TIDX});
  for (int c = 0; c < ncaches; c++) cf_parallelize(f, caches[c], -1, CF_PT_VECTORIZE);
  free(caches);
  if (f->status) return f->status;
  if (vec > 1) snprintf(params, SCHED_PARAMS_MAX, "threads=%d vector=%lld rows=%s", RED_THREADS, (long long)vec,
                        niter > 0 ? "blockIdx.x" : "1");
  else snprintf(params, SCHED_PARAMS_MAX, "threads=%d rows=%s%s", RED_THREADS, niter > 0 ? "blockIdx.x" : "1",
                middle ? " kept-axes-first" : "");
  return cf_inline_most(f);
}

const SchedHeuristic sched_reduction_heuristic = {"reduction", red_accepts, red_schedule};
