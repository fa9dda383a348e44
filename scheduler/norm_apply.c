/* scheduler/norm_apply.c: the inner persistent scheduler's schedule
 * (sched_inner_persistent_apply), a client of the public scheduling calls: it applies the
 * parameters norm_sched.c planned (SchedInnerParams) to an unscheduled copy of a fusion
 * that scheduler accepted.
 *   0. multipass: each softmax's max and sum of exponentials become one online softmax
 *      reduction (online_softmax.c), before the checks find the reductions;
 *   1. inputs of the rows' shape are cached after (read with vector loads), and in
 *      registers mode with v > 1 the row parameters too (read once per thread of each
 *      block, vector loads); outputs of the rows' shape are cached before (vector stores)
 *      when v > 1;
 *   2. projected registers, shared memory: every computed row tensor is recomputed at
 *      each reader, so only the caches persist (recompute.c, SCHED_KEEP_CACHES);
 *      multipass: the caches too (SCHED_CLONE_CACHES): nothing persists;
 *   3. shared memory: each cache still read across a reduction lives in shared memory,
 *      and each of its readers reads a register copy of its own (vector loads);
 *   4. the first reduction's loop axes are reordered kept-first when a kept axis stands
 *      between reduced ones ([r, i, r] -> [i, r, r]), its reduced axes merged and split
 *      [p, t, v] or, over the grid, [p, gy, t, v] (registers with a symbolic row: split
 *      outer by p, so register arrays keep a constant size) and
 *      propagated; each reduction is rfactored over p and v (a serial fold per thread),
 *      leaving a threadIdx.x block all-reduce (and a blockIdx.y grid all-reduce) whose
 *      result every thread holds; then the
 *      outer axes are merged (after the rfactor: its iteration axes must be untransformed)
 *      and split [I / ty, ty] and propagated: blockIdx.x, threadIdx.y; threadIdx.x takes t and the caches vectorize v;
 *   5. everything is inlined as deep as legal: the loop graph stops every tensor that a
 *      reduction and the tensors computed from that reduction both read at the row,
 *      which makes it a per-thread register array of p*v elements (or, in shared memory,
 *      the block's row): the persistent buffer. */
#include "scheduler/norm.h"

/* The tensors to vectorize, found after the rewrites: copies of a cached input (the caches
 * and their clones), the outputs written from their caches, and shared memory's register
 * copies (in `extra`). */
typedef struct Vectors {
  Val **tvs;
  int n;
} Vectors;

static bool cached_input(cf_fusion *f, const bool *cached, const Val *v) {
  for (int i = 0; i < f->inputs.len; i++)
    if (f->inputs.items[i] == v) return cached[i];
  return false;
}

static void collect_vectors(cf_fusion *f, const bool *cached, const bool *out_cached, Vectors *vs) {
  for (int i = 0; i < f->vals.len; i++) {
    Val *v = f->vals.items[i];
    if (v->kind != VAL_TV || !v->def || v->def->op != OP_SET) continue;
    bool of_input = cached_input(f, cached, v->def->in[0]);
    bool output = false;
    for (int o = 0; o < f->outputs.len && !output; o++) output = f->outputs.items[o] == v && out_cached[o];
    if (of_input || output) vs->tvs[vs->n++] = v;
  }
}

/* Step 1: caches; returns per input whether it was cached. */
static bool *make_caches(cf_fusion *f, Arena *a, const NormPlan *p, bool *out_cached) {
  const SchedInnerParams *q = &p->q;
  bool *cached = ARENA_ARRAY(a, bool, f->inputs.len);
  /* a row parameter's cache (rank 1) is computed whole before the rows, a register array
   * read by the epilogue: only worth it for its vector loads; unvectorized, the epilogue
   * reads the parameter where it uses it (an H200, RMS norm bfloat16 4096 x 8191: 82.5 ->
   * 65.1 us, its loads no longer ahead of the row's) */
  bool param_vector = q->mode == SCHED_NORM_REGISTERS && q->vec > 1;
  for (int i = 0; cached && i < f->inputs.len; i++) {
    cached[i] = p->vec_in[i] && (p->full_in[i] || param_vector);
    if (cached[i] && !cf_cache_after(f, ir_tv_handle(f->inputs.items[i]))) return NULL;
  }
  for (int o = 0; cached && o < f->outputs.len; o++) {
    out_cached[o] = q->vec > 1 && p->row_out[o];
    if (out_cached[o] && !cf_cache_before(f, ir_tv_handle(f->outputs.items[o]))) return NULL;
  }
  return cached;
}

/* Steps 2 and 3: recompute, shared memory and its register copies (into vs). */
static cf_status rewrite_rows(cf_fusion *f, Arena *a, const NormPlan *p, Vectors *vs) {
  const SchedInnerParams *q = &p->q;
  if (q->mode == SCHED_NORM_REGISTERS && !q->project) return CF_OK;
  Val *ref = p->r.reds[0];
  IdMap *m = an_idmap_build(f, false);
  bool *row = m ? sched_row_tensors(f, a, m, ref, p->r.reduced) : NULL;
  an_idmap_free(m);
  if (!row) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "inner_persistent: out of memory");
  if (sched_recompute(f, a, row, q->mode == SCHED_NORM_MULTIPASS ? SCHED_CLONE_CACHES : SCHED_KEEP_CACHES))
    return f->status;
  if (q->mode != SCHED_NORM_SHARED) return CF_OK;
  m = an_idmap_build(f, false);
  row = m ? sched_row_tensors(f, a, m, ref, p->r.reduced) : NULL;
  an_idmap_free(m);
  bool *live = row ? sched_live_tensors(f, a, &p->r, row, p->full_in) : NULL;
  if (!live) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "inner_persistent: out of memory");
  int nvals = f->vals.len;
  for (int i = 0; i < nvals && !f->status; i++) {
    Val *v = f->vals.items[i];
    if (v->kind != VAL_TV || !live[i] || !v->def || v->def->op != OP_SET || !ir_tv_is_input(f, v->def->in[0])) continue;
    cf_set_memory_type(f, ir_tv_handle(v), CF_MEM_SHARED);
    sched_copy_reads(f, v, vs->tvs, &vs->n);
  }
  return f->status;
}

static bool unrolled(const SchedInnerParams *q) { return q->unroll > 1; }

/* The reference's loop axes reordered kept-first when a kept axis stands between reduced
 * ones ([r, i, r] -> [i, r, r]: the merged row then runs along the innermost axis, read
 * coalesced), its reduced axes merged and split into [p, t, v]. */
static void split_row(cf_fusion *f, const NormPlan *p, cf_tv *ref) {
  const SchedInnerParams *q = &p->q;
  int ri = p->r.rank - p->r.nred;
  if (p->r.reduced != sched_axis_range(ri, p->r.nred)) {
    int order[CF_MAX_RANK], kept = 0, red = ri;
    for (int x = 0; x < p->r.rank; x++) order[x] = sched_axis_in(p->r.reduced, x) ? red++ : kept++;
    cf_reorder_all(f, ref, p->r.rank, order);
  }
  for (int k = 1; k < p->r.nred; k++) cf_merge(f, ref, ri);
  if (q->vec > 1) cf_split(f, ref, ri, q->vec);
  if (q->symbolic) cf_split_outer(f, ref, ri, q->persist);
  else cf_split(f, ref, ri, q->threads);
  if (q->grid > 1 && q->symbolic) cf_split_outer(f, ref, ri + 1, q->grid); /* [p, gy, t at run time] */
  else if (q->grid > 1) cf_split(f, ref, ri, q->grid);                     /* [p, gy, t, v] */
  if (unrolled(q)) cf_split(f, ref, ri, q->unroll);                        /* [p / u, u, (gy,) t] */
}

/* The rfactor tensor's outer axes merged and split [I / ty, ty]; returns the
 * position of threadIdx.x's axis. */
static int split_rows(cf_fusion *f, const NormPlan *p, cf_tv *rf) {
  const SchedInnerParams *q = &p->q;
  int ri = p->r.rank - p->r.nred;
  if (ri == 0) return 1;
  for (int k = 1; k < ri; k++) cf_merge(f, rf, 0);
  int pos = 1;
  if (q->rows_y > 1) cf_split(f, rf, 0, q->rows_y), pos++;
  if (ri > 1 || pos > 1) cf_propagate_transforms(f, rf);
  return pos + 1; /* past p */
}

static void print_params(const NormPlan *p, bool blocks, char *params) {
  const SchedInnerParams *q = &p->q;
  static const char *const mode[] = {"registers", "shared", "multipass"};
  char y[32] = "", grid[48] = "";
  char u[32] = "";
  if (q->grid > 1) snprintf(grid, sizeof grid, " grid=blockIdx.y{%lld}", (long long)q->grid);
  if (q->rows_y > 1) snprintf(y, sizeof y, "x%lld", (long long)q->rows_y);
  if (unrolled(q)) snprintf(u, sizeof u, " unroll=%lld", (long long)q->unroll);
  snprintf(params, SCHED_PARAMS_MAX, "%s threads=%lld%s%s %s=%lld%s vector=%lld rows=%s%s%s%s", mode[q->mode],
           (long long)q->threads, y, q->symbolic ? " (ceilDiv(row, persistent) at run time)" : "",
           q->mode == SCHED_NORM_MULTIPASS ? "chunks" : "persistent", (long long)q->persist, u, (long long)q->vec,
           blocks ? "blockIdx.x" : "1", grid,
           q->mode == SCHED_NORM_REGISTERS && q->project ? " buffers=inputs" : "", q->online ? " online_softmax" : "");
}

/* Steps 4 and 5 on the rewritten fusion. */
static cf_status schedule_loops(cf_fusion *f, const NormPlan *p, const Vectors *vs, char *params) {
  const SchedInnerParams *q = &p->q;
  cf_tv *ref = ir_tv_handle(p->r.reds[0]);
  int ri = p->r.rank - p->r.nred;
  split_row(f, p, ref);
  cf_propagate_transforms(f, ref);
  int g = q->grid > 1, u = unrolled(q);
  int rf_axes[2] = {ri, u ? ri + 1 : ri + 2 + g}; /* p and v, or p / u and u */
  cf_tv *rf = NULL;
  for (int r = 0; r < p->r.nreds && !f->status; r++) {
    cf_tv *t = cf_rfactor(f, ir_tv_handle(p->r.reds[r]), q->vec > 1 || u ? 2 : 1, rf_axes);
    if (r == 0) rf = t;
  }
  if (f->status) return f->status;
  int tx = split_rows(f, p, rf) + g + u;
  cf_parallel_type types[5];
  int ntypes = 0;
  if (ri > 0) cf_parallelize(f, rf, 0, types[ntypes++] = CF_PT_BIDX);
  if (g) cf_parallelize(f, rf, tx - 1, types[ntypes++] = CF_PT_BIDY);
  if (u) cf_parallelize(f, rf, tx - 1 - g, types[ntypes++] = CF_PT_UNROLL);
  if (q->rows_y > 1) cf_parallelize(f, rf, tx - 2 - g - u, types[ntypes++] = CF_PT_TIDY);
  cf_parallelize(f, rf, tx, types[ntypes++] = CF_PT_TIDX);
  cf_parallelize_all_like(f, rf, ntypes, types);
  for (int c = 0; c < vs->n && q->vec > 1; c++) sched_vectorize_innermost(f, vs->tvs[c]);
  if (f->status) return f->status;
  print_params(p, ri > 0, params);
  if (cf_inline_most(f)) return f->status;
  /* unrolled: each pass's u loads of a thread land in a register array first */
  for (int c = 0; c < vs->n && u; c++) cf_inline_at(f, ir_tv_handle(vs->tvs[c]), tx - 1 - g);
  return f->status;
}

cf_status sched_inner_persistent_apply(cf_fusion *f, const SchedCall *call, const SchedInnerParams *q, char *params) {
  NormPlan p = {0};
  if (q->online) { /* before the checks: they find the reductions of the rewritten fusion */
    Arena *s = arena_create();
    cf_status st = s ? sched_online_softmax(f, s)
                     : ir_error(f, CF_ERR_OUT_OF_MEMORY, "inner_persistent: out of memory");
    arena_destroy(s);
    if (st) return st;
  }
  Arena *a = sched_norm_begin(f, call, &p);
  if (!a) return f->status;
  p.q = *q;
  bool *out_cached = ARENA_ARRAY(a, bool, f->outputs.len);
  bool *cached = out_cached ? make_caches(f, a, &p, out_cached) : NULL;
  Vectors vs = {ARENA_ARRAY(a, Val *, 2 * f->vals.len + 4 * SCHED_RECOMPUTE_MAX_OPS), 0};
  if (!cached || !vs.tvs) {
    arena_destroy(a);
    return f->status ? f->status : ir_error(f, CF_ERR_OUT_OF_MEMORY, "inner_persistent: out of memory");
  }
  if (!rewrite_rows(f, a, &p, &vs)) {
    collect_vectors(f, cached, out_cached, &vs);
    schedule_loops(f, &p, &vs, params);
  }
  arena_destroy(a);
  return f->status;
}
