/* scheduler/reduction_sched.c: the automatic reduction scheduler (sched_reduction_heuristic),
 * the last of its three steps (see reduction_heuristic.h): applies a plan's parameters
 * to an unscheduled fusion with the public scheduling calls, and builds the accepts and
 * schedule entry points of the define-and-run table on plan + apply.
 *
 * INNER: the reduction's axes reordered kept-first, the reduced ones merged into one row
 * axis and split
 *     [kept..., serial, grid (blockIdx.x, an outer split), unroll, threadIdx.x, vector];
 * the split is propagated to the prologue, serial, unroll and vector are rfactored (each
 * thread folds its part of the row into a register), then the kept axes (which rfactor
 * takes untransformed) are merged into one and split [blocks, threadIdx.y] (rows on
 * blockIdx.y when a grid splits them, else on blockIdx.x). The final reduction is a block
 * reduction over threadIdx.x and, with a grid, a grid reduction over blockIdx.x.
 * OUTER: the axes reordered reduced-first, the reduced ones merged and split
 *     [serial, grid (blockIdx.y, an outer split), unroll, threadIdx.y, kept...],
 * serial and unroll rfactored, then the kept axes merged into one column axis and split
 * [blocks (blockIdx.x), threadIdx.x, vector]; the partial reduction runs
 *     [blockIdx.x, threadIdx.x, serial, blockIdx.y, unroll, threadIdx.y, vector]
 * (each thread folds a vector of adjacent columns down its rows: coalesced loads) and the
 * final one [blockIdx.x, threadIdx.x, vector, blockIdx.y, threadIdx.y] reduces threadIdx.y
 * in the block and blockIdx.y across the grid, one column of the vector at a time.
 * A reduction no thread shares (INNER rows of one vector, OUTER columns of one row) is
 * folded serially by each thread, without rfactor.
 * The inputs are cached (cf_cache_after) so their loads are vectors; inline_most stops
 * the caches and the prologue before the unroll axis, so a thread issues all its loads of
 * a step before using them.
 * Key decisions: the rfactor partial is what every thread keeps between the serial fold and
 * the block/grid combine, so it is retyped to the accumulation type (a bfloat16 sum
 * otherwise rounds every thread's partial to 8 bits of mantissa). The grid axis stands
 * after the serial one: the partial's iteration axis on a block index must not be
 * inlined into the final reduction's reduction axis on that index (lowering refuses one
 * loop over both), and the partial's first serial reduction axis stops its inlining
 * before it. */
#include <stdlib.h>

#include "scheduler/persistent.h"
#include "scheduler/reduction_heuristic.h"
#include "scheduler/sched.h"

bool sched_reduction_plan(cf_fusion *f, const SchedCall *call, RedParams *p, char *why) {
  RedShape s;
  if (!sched_reduction_shape(f, call, &s, why)) return false;
  const SchedDevice *dev = call && call->dev ? call->dev : sched_device_default();
  *p = sched_reduction_heuristic_for(&s, dev);
  return true;
}

/* ---- printing and comparing -------------------------------------------------------------- */

void sched_reduction_params_print(const RedParams *p, char *out) {
  snprintf(out, SCHED_PARAMS_MAX, "%s vector=%d unroll=%d block=%dx%d grid=%lldx%lld%s",
           p->layout == RED_INNER ? "inner" : "outer", p->vec, p->unroll, p->bdimx, p->bdimy, (long long)p->blocks,
           (long long)p->grid, p->reordered ? (p->layout == RED_INNER ? " kept-axes-first" : " reduced-axes-first") : "");
}

bool sched_reduction_params_equal(const RedParams *a, const RedParams *b) {
  if (a->layout != b->layout || a->rank != b->rank || a->nkept != b->nkept || a->reordered != b->reordered ||
      a->vec != b->vec || a->unroll != b->unroll || a->bdimx != b->bdimx || a->bdimy != b->bdimy ||
      a->blocks != b->blocks || a->grid != b->grid)
    return false;
  for (int i = 0; i < a->rank; i++)
    if (a->order[i] != b->order[i]) return false;
  return true;
}

/* ---- applying ---------------------------------------------------------------------------- */

/* The (one) reduction of an accepted fusion. */
static Val *the_reduction(cf_fusion *f) {
  int n;
  Expr **exprs = ir_fusion_tensor_exprs(f, &n);
  for (int i = 0; i < n; i++)
    if (ir_op_kind(exprs[i]->op) == OPK_REDUCTION) return exprs[i]->out[0];
  return NULL;
}

/* rfactor of r over the given loop axes (those < 0 skipped); the partial is in the
 * reduction's accumulation type (cf_rfactor: float for half and bfloat16). */
static cf_tv *rfactor(cf_fusion *f, cf_tv *r, int n, const int *axes) {
  int list[4], k = 0;
  for (int i = 0; i < n; i++)
    if (axes[i] >= 0) list[k++] = axes[i];
  return cf_rfactor(f, r, k, list);
}

/* The inputs that vary along the innermost axis (the reduction's rank, the last axis not
 * a broadcast) cached for vector loads, into caches; the others (scalars, a column
 * scale, a row bias broadcast in the fusion) are read as they are. */
static int cache_inputs(cf_fusion *f, int rank, Val **caches) {
  int n = 0, nin = f->inputs.len;
  for (int i = 0; i < nin; i++) {
    Val *in = f->inputs.items[i];
    if (in->uses.len == 0 || TV(in)->nlogical != rank || ID(TV(in)->logical[rank - 1])->iter_type == CF_ITER_BROADCAST)
      continue;
    cf_tv *c = cf_cache_after(f, ir_tv_handle(f->inputs.items[i]));
    if (c) caches[n++] = ir_tv(c);
  }
  return n;
}

static const cf_parallel_type all_types[] = {CF_PT_BIDX, CF_PT_BIDY, CF_PT_TIDX, CF_PT_TIDY, CF_PT_UNROLL};

/* The caches vectorized, everything inlined as deep as legal (which stops the caches and
 * the prologue before the unroll axis: a thread's loads of one step come before their
 * use). */
static cf_status finish(cf_fusion *f, const RedParams *p, Val **caches, int ncaches) {
  for (int c = 0; c < ncaches && p->vec > 1; c++) sched_vectorize_innermost(f, caches[c]);
  if (f->status) return f->status;
  return cf_inline_most(f);
}

/* OUTER's loop positions: the first kept axis before the columns are scheduled, the
 * axes then, and where each goes. */
typedef struct OuterPos {
  int k, n, to[CF_MAX_RANK + 4];
} OuterPos;

/* Merges the loop axes [at, at + n) of tv into one. */
static void merge_run(cf_fusion *f, cf_tv *tv, int at, int n) {
  for (int k = 1; k < n; k++) cf_merge(f, tv, at);
}

static cf_status apply_inner(cf_fusion *f, const RedParams *p, cf_tv *r, Val **caches, int ncaches) {
  int nk = p->nkept, pos = nk;
  merge_run(f, r, nk, p->rank - nk);
  if (p->vec > 1) cf_split(f, r, nk, p->vec);
  cf_split(f, r, nk, p->bdimx);
  if (p->unroll > 1) cf_split(f, r, nk, p->unroll);
  if (p->grid > 1) cf_split_outer(f, r, nk, p->grid);
  if (p->grid > 1) cf_reorder(f, r, 1, (int[]){nk, nk + 1}); /* [serial, grid]: see the header */
  int rem = pos++, g = p->grid > 1 ? pos++ : -1, u = p->unroll > 1 ? pos++ : -1, x = pos++, v = p->vec > 1 ? pos : -1;
  if (cf_propagate_transforms(f, r)) return f->status;
  cf_tv *rf = rfactor(f, r, 3, (int[]){rem, u, v});
  if (!rf) return f->status;
  int shift = 0; /* the kept axes become [blocks, threadIdx.y] (or nothing) */
  if (nk > 0) {
    merge_run(f, rf, 0, nk);
    if (p->bdimy > 1) cf_split(f, rf, 0, p->bdimy);
    shift = (p->bdimy > 1 ? 2 : 1) - nk;
    if (cf_propagate_transforms(f, rf)) return f->status;
    cf_parallelize(f, rf, 0, p->grid > 1 ? CF_PT_BIDY : CF_PT_BIDX);
    if (p->bdimy > 1) cf_parallelize(f, rf, 1, CF_PT_TIDY);
  }
  if (g >= 0) cf_parallelize(f, rf, g + shift, CF_PT_BIDX);
  if (u >= 0) cf_parallelize(f, rf, u + shift, CF_PT_UNROLL);
  cf_parallelize(f, rf, x + shift, CF_PT_TIDX);
  cf_parallelize_all_like(f, rf, 5, all_types);
  return finish(f, p, caches, ncaches);
}

/* OUTER's kept axes of tv (from loop position k on: [..., kept...]) merged and split
 * [blocks, x, v?], then the loop axes reordered [blocks, x, g?, serial, u?, y, v?]. */
static void outer_columns(cf_fusion *f, const RedParams *p, cf_tv *tv, const OuterPos *o) {
  merge_run(f, tv, o->k, p->nkept);
  if (p->vec > 1) cf_split(f, tv, o->k, p->vec);
  cf_split(f, tv, o->k, p->bdimx);
  cf_reorder_all(f, tv, o->n, o->to);
}

static cf_status apply_outer(cf_fusion *f, const RedParams *p, cf_tv *r, Val **caches, int ncaches) {
  int nr = p->rank - p->nkept, pos = 0;
  merge_run(f, r, 0, nr);
  cf_split(f, r, 0, p->bdimy);
  if (p->unroll > 1) cf_split(f, r, 0, p->unroll);
  if (p->grid > 1) cf_split_outer(f, r, 0, p->grid);
  OuterPos o;
  int g = p->grid > 1 ? pos++ : -1, rem = pos++, u = p->unroll > 1 ? pos++ : -1, y = pos++;
  o.k = pos;
  o.n = o.k + (p->vec > 1 ? 3 : 2);
  int at = 0;
  o.to[o.k] = at++;     /* blocks */
  o.to[o.k + 1] = at++; /* x */
  o.to[rem] = at++;
  if (g >= 0) o.to[g] = at++;
  if (u >= 0) o.to[u] = at++;
  o.to[y] = at++;
  if (p->vec > 1) o.to[o.k + 2] = at++;
  /* The prologue gets the reduced axes' splits, which the rfactor moves into the partial's
   * root-to-logical history; then the columns are scheduled on the partial's producer and
   * propagated from there: the partial reuses the identical splits of its root. */
  if (cf_propagate_transforms(f, r)) return f->status;
  cf_tv *rf = rfactor(f, r, 2, (int[]){rem, u});
  if (!rf) return f->status;
  cf_tv *src = ir_tv_handle(ir_tv(rf)->def->in[0]);
  outer_columns(f, p, src, &o);
  if (cf_propagate_transforms(f, src)) return f->status;
  /* r: [blocks, x, g?, y, v?] -> [blocks, x, v?, g?, y]: one column of the vector at a
   * time, its block (and grid) reduction innermost */
  if (p->vec > 1) cf_reorder(f, r, 1, (int[]){-1, 2});
  int ur = u >= 0 ? o.to[u] : -1;
  cf_parallelize(f, rf, 0, CF_PT_BIDX);
  cf_parallelize(f, rf, 1, CF_PT_TIDX);
  if (g >= 0) cf_parallelize(f, rf, o.to[g], CF_PT_BIDY);
  if (ur >= 0) cf_parallelize(f, rf, ur, CF_PT_UNROLL);
  cf_parallelize(f, rf, o.to[y], CF_PT_TIDY);
  cf_parallelize_all_like(f, rf, 5, all_types);
  return finish(f, p, caches, ncaches);
}

/* A reduction no thread shares (INNER rows of one vector, OUTER columns of one row): each
 * thread folds its own output serially, no rfactor; INNER [blocks, threadIdx.y, serial,
 * vector?], OUTER [blocks, threadIdx.x, serial, vector?] (a full reduction of one vector:
 * one thread). */
static cf_status apply_serial(cf_fusion *f, const RedParams *p, cf_tv *r, Val **caches, int ncaches) {
  int nk = p->nkept, nr = p->rank - nk;
  bool inner = p->layout == RED_INNER;
  merge_run(f, r, inner ? nk : 0, nr);
  merge_run(f, r, inner ? 0 : 1, nk);
  int ri = inner ? (nk > 0 ? 1 : 0) : 0, ii = inner ? 0 : 1; /* [I?, R] or [R, I] */
  if (p->vec > 1) cf_split(f, r, inner ? ri : ii, p->vec);
  if (nk > 0) cf_split(f, r, ii, inner ? p->bdimy : p->bdimx);
  if (!inner) cf_reorder(f, r, 1, (int[]){0, 2}); /* [R, I/x, x, v?] -> [I/x, x, R, v?] */
  if (cf_propagate_transforms(f, r)) return f->status;
  if (nk > 0) {
    cf_parallelize(f, r, 0, CF_PT_BIDX);
    cf_parallelize(f, r, 1, inner ? CF_PT_TIDY : CF_PT_TIDX);
    cf_parallelize_all_like(f, r, 3, all_types);
  }
  return finish(f, p, caches, ncaches);
}

cf_status sched_reduction_apply(cf_fusion *f, const RedParams *p) {
  Val *red = the_reduction(f);
  if (!red || TV(red)->nlogical != p->rank)
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "reduction: the plan is for a reduction of %d axes, the fusion has %s",
                    p->rank, red ? "another" : "none");
  cf_tv *r = ir_tv_handle(red);
  Val **caches = calloc((size_t)f->inputs.len + 1, sizeof *caches);
  if (!caches) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "reduction: out of memory");
  int ncaches = p->vec > 1 || p->unroll > 1 ? cache_inputs(f, p->rank, caches) : 0;
  if (p->reordered) {
    int order[CF_MAX_RANK];
    for (int a = 0; a < p->rank; a++) order[a] = p->order[a];
    cf_reorder_all(f, r, p->rank, order);
  }
  bool serial = p->layout == RED_INNER ? p->bdimx == 1 : p->bdimy == 1;
  cf_status s = serial                    ? apply_serial(f, p, r, caches, ncaches)
                : p->layout == RED_INNER ? apply_inner(f, p, r, caches, ncaches)
                                         : apply_outer(f, p, r, caches, ncaches);
  free(caches);
  return s;
}

/* ---- the define-and-run entry points ------------------------------------------------------ */

static bool red_accepts(cf_fusion *f, const SchedCall *call, char *why) {
  RedParams p;
  return sched_reduction_plan(f, call, &p, why);
}

static cf_status red_schedule(cf_fusion *f, const SchedCall *call, char *params) {
  char why[SCHED_WHY_MAX];
  RedParams p;
  if (!sched_reduction_plan(f, call, &p, why)) return ir_error(f, CF_ERR_UNSUPPORTED, "%s", why);
  if (sched_reduction_apply(f, &p)) return f->status;
  sched_reduction_params_print(&p, params);
  return CF_OK;
}

const SchedHeuristic sched_reduction_heuristic = {"reduction", red_accepts, red_schedule};
