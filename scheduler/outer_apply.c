/* scheduler/outer_apply.c: the outer persistent scheduler's schedule
 * (sched_outer_persistent_apply), a client of the public scheduling calls: it applies the
 * parameters outer_persistent_sched.c planned (SchedOuterParams) to an unscheduled copy
 * of a fusion that scheduler accepted.
 *   1. inputs of the full shape and column parameters are cached after (read once, vector
 *      loads), outputs of the full shape cached before (vector stores) when v > 1;
 *   2. projected registers: every computed tensor of the rows is recomputed at each
 *      reader, so only the caches persist; multipass: the caches too, nothing persists
 *      (recompute.c);
 *   3. the first reduction's reduced axes are merged and split into the rows' loops,
 *      [p, ty] (a block per column group; a symbolic count split outer by p) or
 *      [p, gy, ty] (blocks of rows on blockIdx.y; each block's rows interleave the others'
 *      every gy x ty rows, the order every rfactor keeps), and propagated; every reduction is
 *      rfactored over p (a serial fold per thread), leaving a threadIdx.y block all-reduce
 *      (and a blockIdx.y grid all-reduce) that every thread of the column receives;
 *   4. the rfactor tensor's kept axes (rfactor takes them untransformed) are merged and
 *      split [Io, tx, v] and the loops ordered [Io, tx, p, (gy,) ty, v]: the column's
 *      parallel axes outermost (every tensor shares them), then the serial fold over p,
 *      which bounds how deep the rfactor inlines into its reduction (whose reduced axes
 *      cannot share its loops), the vector innermost; propagated;
 *   5. everything is inlined as deep as legal: a tensor read by a reduction and by what is
 *      computed from that reduction stays whole per thread (the loop graph's rule), a
 *      register array of p*v elements: the persistent slab of the column. */
#include "scheduler/outer.h"

static bool grid_mode(const SchedOuterParams *q) {
  return q->mode == SCHED_OUTER_GRID || q->mode == SCHED_OUTER_GRID_MULTIPASS;
}

static bool multipass(const SchedOuterParams *q) {
  return q->mode == SCHED_OUTER_BLOCK_MULTIPASS || q->mode == SCHED_OUTER_GRID_MULTIPASS;
}

/* Step 2: recompute the rows' tensors (projected registers, multipass). */
static cf_status rewrite_rows(cf_fusion *f, Arena *a, const OuterPlan *p) {
  const SchedOuterParams *q = &p->q;
  if (!multipass(q) && !q->project) return CF_OK;
  IdMap *m = an_idmap_build(f, false);
  bool *row = m ? sched_row_tensors(f, a, m, p->r.reds[0], p->r.reduced) : NULL;
  an_idmap_free(m);
  if (!row) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "outer_persistent: out of memory");
  return sched_recompute(f, a, row, multipass(q) ? SCHED_CLONE_CACHES : SCHED_KEEP_CACHES);
}

/* Step 3: the rows of the reference; returns the position of p (rfactored). */
static int split_rows(cf_fusion *f, const OuterPlan *p, cf_tv *ref) {
  const SchedOuterParams *q = &p->q;
  for (int k = 1; k < p->r.nred; k++) cf_merge(f, ref, 0);
  if (q->symbolic_rows) {
    cf_split_outer(f, ref, 0, q->persist);
    return 0;
  }
  cf_split(f, ref, 0, q->ty);
  if (grid_mode(q)) cf_split(f, ref, 0, q->grid_y); /* [p, gy, ty]: the order the loops keep */
  return 0;
}

/* Step 4 on the rfactor tensor: [rows..., kept...] -> [Io, tx, p, (gy,) ty, v]. */
static void split_columns(cf_fusion *f, const OuterPlan *p, cf_tv *rf) {
  const SchedOuterParams *q = &p->q;
  int nr = grid_mode(q) ? 3 : 2;
  for (int k = 1; k < p->r.rank - p->r.nred; k++) cf_merge(f, rf, nr);
  if (q->vec > 1) cf_split(f, rf, nr, q->vec);
  cf_split(f, rf, nr, q->tx);
  static const int block_order[] = {2, 3, 0, 1, 4}, grid_order[] = {2, 3, 4, 0, 1, 5};
  cf_reorder_all(f, rf, nr + (q->vec > 1 ? 3 : 2), grid_mode(q) ? grid_order : block_order);
}

/* Whether loop axis id of tv comes from a kept (column) axis: up its splits and merges
 * (the rfactor's split of the reduced axis included) to a root or logical axis. */
static bool from_columns(const OuterPlan *p, Val *tv, Val *id) {
  while (id->def && (id->def->op == OP_SPLIT || id->def->op == OP_MERGE)) id = id->def->in[0];
  TensorView *t = TV(tv);
  for (int x = 0; x < t->nroot; x++)
    if (t->root[x] == id) return x >= p->r.nred;
  for (int x = 0; x < t->nlogical; x++)
    if (t->logical[x] == id) return x >= p->r.nred;
  return false;
}

/* Each reduction's reduced axes go innermost, in order (a reduction across threads or
 * blocks keeps one accumulator per thread: no iteration axis inside it). */
static void reductions_inner(cf_fusion *f, Val *red) {
  int n = TV(red)->nloop, kept = 0, order[CF_MAX_RANK + 4];
  if (n > CF_MAX_RANK + 4) return;
  for (int x = 0; x < n; x++) kept += ID(TV(red)->loop[x])->iter_type != CF_ITER_REDUCTION;
  for (int x = 0, i = 0, r = kept; x < n; x++)
    order[x] = ID(TV(red)->loop[x])->iter_type == CF_ITER_REDUCTION ? r++ : i++;
  cf_reorder_all(f, ir_tv_handle(red), n, order);
}

/* Propagation orders each tensor's axes by the neighbour it was replayed from, so a tensor
 * of the full shape may have its vector axis before the rows' ones: each is put in rf's
 * order (loops shared position by position, the vector innermost); reductions get their
 * reduced axes innermost. Column tensors ([Io, tx, v]) are in order already. */
static void order_rows_inner(cf_fusion *f, const OuterPlan *p, cf_tv *rf) {
  int n = TV(ir_tv(rf))->nloop;
  for (int i = 0; i < f->vals.len && !f->status && p->q.vec > 1; i++) {
    Val *v = f->vals.items[i];
    if (v->kind != VAL_TV || v == ir_tv(rf) || TV(v)->nloop != n) continue;
    for (int x = 2; x < n - 1; x++)
      if (from_columns(p, v, TV(v)->loop[x])) {
        cf_reorder(f, ir_tv_handle(v), 1, (int[]){x, n - 1});
        break;
      }
  }
  for (int r = 0; r < p->r.nreds && !f->status; r++) reductions_inner(f, p->r.reds[r]);
}

static void parallelize(cf_fusion *f, const OuterPlan *p, cf_tv *rf) {
  const SchedOuterParams *q = &p->q;
  cf_parallel_type types[4] = {CF_PT_BIDX, CF_PT_TIDX};
  int n = 2;
  cf_parallelize(f, rf, 0, CF_PT_BIDX);
  cf_parallelize(f, rf, 1, CF_PT_TIDX);
  if (grid_mode(q)) {
    cf_parallelize(f, rf, 3, types[n++] = CF_PT_BIDY);
    cf_parallelize(f, rf, 4, types[n++] = CF_PT_TIDY);
  } else if (q->symbolic_rows || q->ty > 1) {
    /* a column of one row (sizes made constant by define and run) leaves ty serial: an
     * extent-1 threadIdx.y axis is not one the reduction reads across threads */
    cf_parallelize(f, rf, 3, types[n++] = CF_PT_TIDY);
  }
  cf_parallelize_all_like(f, rf, n, types);
}

static void print_params(const SchedOuterParams *q, char *params) {
  static const char *const mode[] = {"block", "block multipass", "grid", "grid multipass"};
  char gy[48] = "";
  if (grid_mode(q)) snprintf(gy, sizeof gy, " rows=blockIdx.y{%lld}", (long long)q->grid_y);
  char spill[48] = "";
  if (q->spill) snprintf(spill, sizeof spill, " (%lld in shared memory)", (long long)q->spill);
  snprintf(params, SCHED_PARAMS_MAX, "%s threads=%lldx%lld%s %s=%lld%s vector=%lld columns=blockIdx.x%s%s", mode[q->mode],
           (long long)q->tx, (long long)q->ty, q->symbolic_rows ? " (ceilDiv(rows, persistent) at run time)" : "",
           multipass(q) ? "chunks" : "persistent", (long long)q->persist, spill, (long long)q->vec, gy,
           q->project && !multipass(q) ? " buffers=inputs" : "");
}

/* Steps 3 to 5 on the rewritten fusion. */
static cf_status schedule_loops(cf_fusion *f, const OuterPlan *p, Val **caches, int ncaches, char *params) {
  cf_tv *ref = ir_tv_handle(p->r.reds[0]);
  int pi = split_rows(f, p, ref);
  cf_propagate_transforms(f, ref);
  cf_tv *rf = NULL;
  for (int r = 0; r < p->r.nreds && !f->status; r++) {
    cf_tv *t = cf_rfactor(f, ir_tv_handle(p->r.reds[r]), 1, (int[]){pi});
    if (r == 0) rf = t;
  }
  if (f->status) return f->status;
  split_columns(f, p, rf);
  cf_propagate_transforms(f, rf);
  order_rows_inner(f, p, rf);
  parallelize(f, p, rf);
  for (int c = 0; c < ncaches && p->q.vec > 1; c++) sched_vectorize_innermost(f, caches[c]);
  if (f->status) return f->status;
  print_params(&p->q, params);
  return cf_inline_most(f);
}

/* The vectorized tensors after the rewrites: copies of a cached input (the caches and
 * their clones) and the outputs written from their caches. */
static int vector_tensors(cf_fusion *f, const bool *cached, const bool *out_cached, Val **out) {
  int n = 0;
  for (int i = 0; i < f->vals.len; i++) {
    Val *v = f->vals.items[i];
    if (v->kind != VAL_TV || !v->def || v->def->op != OP_SET) continue;
    bool keep = false;
    for (int k = 0; k < f->inputs.len && !keep; k++) keep = f->inputs.items[k] == v->def->in[0] && cached[k];
    for (int o = 0; o < f->outputs.len && !keep; o++) keep = f->outputs.items[o] == v && out_cached[o];
    if (keep) out[n++] = v;
  }
  return n;
}

cf_status sched_outer_persistent_apply(cf_fusion *f, const SchedCall *call, const SchedOuterParams *q, char *params) {
  OuterPlan p = {0};
  Arena *a = sched_outer_begin(f, call, &p);
  if (!a) return f->status;
  p.q = *q;
  bool *out_cached = ARENA_ARRAY(a, bool, f->outputs.len);
  cf_tv *full_cache = NULL; /* rule 3 spills it (the lone cached input of the full shape) */
  for (int i = 0; out_cached && i < f->inputs.len && !f->status; i++) {
    cf_tv *c = p.cached[i] ? cf_cache_after(f, ir_tv_handle(f->inputs.items[i])) : NULL;
    if (c && p.full_in[i]) full_cache = c;
  }
  for (int o = 0; out_cached && o < f->outputs.len && !f->status; o++)
    if ((out_cached[o] = q->vec > 1 && p.full_out[o])) cf_cache_before(f, ir_tv_handle(f->outputs.items[o]));
  if (!out_cached) ir_error(f, CF_ERR_OUT_OF_MEMORY, "outer_persistent: out of memory");
  if (!f->status) rewrite_rows(f, a, &p);
  Val **vecs = f->status ? NULL : ARENA_ARRAY(a, Val *, f->vals.len);
  if (vecs) schedule_loops(f, &p, vecs, vector_tensors(f, p.cached, out_cached, vecs), params);
  if (!f->status && q->spill && full_cache) { /* its allocation is [persist, vector]: the first rows stay */
    cf_spill_to_shared(f, full_cache, (q->persist - q->spill) * q->vec);
    f->blocks_per_sm = OUTER_WIDE_BLOCKS_PER_SM;
  }
  /* the block form's rows in registers: with int coordinates nvcc folds each row's offset
   * into its address instead of keeping every row's 64-bit address live from the loads to
   * the stores (unsigned 32-bit indices may wrap): on an H200, batch norm 512 x 65536 float
   * 216 -> 168 registers, 77.9 -> 76.0 us (bench/results/bn_ceiling_h200_20261129/) */
  f->signed_coords = !f->status && q->mode == SCHED_OUTER_BLOCK;
  arena_destroy(a);
  return f->status;
}
