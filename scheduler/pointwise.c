/* scheduler/pointwise.c: the automatic pointwise scheduler (cf_schedule_pointwise), a
 * client of the public scheduling calls like nvFuser's pointwise scheduler.
 * Heuristic, in order:
 *   1. the reference is the first output; every output must have its rank and extents;
 *   2. the vector width is 16 bytes over the widest element of the tensors it touches
 *      (inputs of the reference's rank and the outputs), halved until it divides the
 *      innermost extent, which must be a constant; 1 when a touched tensor's innermost
 *      axis has no unit stride (strided, or not contiguous there); a tensor whose
 *      innermost loop axis the rule for vector accesses refuses (sched_vectorize_innermost)
 *      or whose vector would pass 16 bytes is left scalar, the others keep their vectors.
 *      A packed output (float4_e2m1fn, written only by even vectors) makes it at least 2,
 *      and 2 with a symbolic innermost extent (even at run time by the packed rule), which
 *      is then split by 2 before the merges (split_symbolic_innermost). Where the touched
 *      tensors lie in memory as one contiguous run and none is packed, the flat vector
 *      (pointwise_vector.c, issue 22: 16 bytes over the widest element whatever the
 *      extents, the last vector partial where it does not divide the element count,
 *      "vector=8 tail") replaces a narrower one along rows, the break point of 5 too
 *      where the inner extents are constants (a bias is then read at its index);
 *   3. those inputs are cached after (vector loads), the outputs cached before (vector
 *      stores);
 *   4. without a break point (5), the reference's axes are merged into one and split into
 *      [blockIdx.x, threadIdx.x{128}, vector{v}], propagated to every tensor and
 *      parallelized alike (an output the propagation reaches with part of the reference's
 *      axes or none, of another connected component or a second lookup of one weight by
 *      one index, gets the same tile itself and roots the propagation too); the caches'
 *      innermost axes are vectorized; everything is inlined as deep as legal;
 *   5. the 2-D break point (nvFuser's idea, our own rule): when some input broadcasts
 *      along some of the reference's axes (it varies along a non-empty strict subset of
 *      them, by the exact IterDomain map: a bias [N] broadcast as [1, N], a column
 *      [M, 1]), a break point b in [1, rank) cuts the reference into an outer half
 *      [0, b) and an inner half [b, rank), merged separately: [outer -> blockIdx.y,
 *      inner -> [blockIdx.x, threadIdx.x{128}, vector{v}]], so each broadcast input is
 *      indexed from the half (or halves) it varies along, never by a div/mod of the
 *      whole merged extent. The rule: with L(b) and R(b) the element counts of the two
 *      halves, a tensor (input or output) "crosses" a half when it varies along some axis
 *      of it; the bytes moved for b are estimated as L(b) x (bytes per element of the
 *      tensors crossing the outer half) + R(b) x (those crossing the inner half), each
 *      half's index enumerating its elements once for every tensor it addresses; a
 *      tensor broadcast along a whole half costs nothing there (it is reused). b
 *      minimizes that estimate (ties: the larger inner half), among the break points
 *      whose inner half has at least 128 elements (a block of threads; symbolic extents
 *      count as 1024). An outer half of more than 65535 elements (gridDim.y's limit)
 *      is split, the blocks of blockIdx.y each running a serial loop over F rows; a
 *      symbolic outer half is bound to blockIdx.y whole, the launch checking the limit.
 *      No eligible break point, or an input axis that maps to no axis of the reference
 *      (a squeeze), keeps the 1-D schedule, the reason recorded in the parameters
 *      ("break=none (reason) ..."). Without a broadcasting input (0-d inputs broadcast
 *      along everything and do not count) the 1-D schedule and its parameters are as
 *      before.
 * As the registry's pointwise row (sched_pointwise_row: plan, then apply), it accepts a
 * fusion of elementwise ops, broadcasts, squeezes, fulls and permutes that move only axes
 * of one element (copies) whose outputs share the first one's shape, except where
 * lowering could not share a loop: a broadcast result two readers concretize against
 * unrelated axes, or a tensor of lower rank computed in the fusion and broadcast along
 * part of a half of the tile (define and run hoists such broadcasts onto the inputs
 * first, hoist_broadcasts.c; alignment is the executor's: it devectorizes the schedule of
 * a call with a misaligned tensor). A computed tensor of the tile's rank whose broadcast
 * axis is merged with others in a half is copied for each reader (recompute_rows), so
 * each copy is inlined whole. Its plan (break point, vector width, rows per blockIdx.y)
 * is read from the constant sizes of define and run's copy; apply takes it as it is, so
 * the schedule also fits a copy whose outer sizes are symbolic (a kernel shared across
 * sizes).
 * Key decision: the 1-D schedule for every fusion without broadcasting inputs (it moves
 * data at the device's copy bandwidth on contiguous tensors, bench/pointwise.c), the 2-D
 * one with a fixed block of 128 threads along the inner half (nvFuser adapts blockDim.x
 * and blockDim.y to the halves' sizes: not yet); the two grid axes stay apart because
 * lowering cannot index a broadcast axis merged with concrete tiles (transpose_sched.c).
 * Measured on an H200 (bench/run_define_and_run.sh, device copy 4185-4200 GB/s):
 * relu(a*b+c) over 2^28 floats 4472 GB/s (1-D); bias+gelu 16384x4096 4082 GB/s with the
 * 1-D tile, 3948 with the break point (its bias indexed from one half; no faster). */
#include "ir/dtype.h"
#include "scheduler/persistent.h"
#include "scheduler/pointwise.h"
#include "scheduler/registry.h"
#include "scheduler/sched.h"

enum { THREADS = 128, GRID_Y_MAX = 65535, SYMBOLIC_GUESS = 1024 };

/* A permute that moves only axes of one element (a constant extent of 1): the axes of more
 * elements keep their order, so it is a copy (a transpose of [N, 1]). */
static bool copying_permute(const Expr *e) {
  if (ir_op_kind(e->op) != OPK_PERMUTE) return false;
  int last = -1;
  for (int a = 0; a < e->attr.permute.rank; a++) {
    int64_t x;
    int from = e->attr.permute.perm[a];
    if (ir_scalar_const_value(ID(TV(e->out[0])->logical[a])->extent, &x) && x == 1) continue;
    if (from < last) return false;
    last = from;
  }
  return true;
}

static bool elementwise(const Expr *e) { return ir_op_is_pointwise(e->op) || copying_permute(e); }

/* Whether some broadcast axis is concretized against unrelated axes by its readers
 * (analysis/broadcast_readers.c): inlined into all of their loops (inline_most does), it
 * would share one loop that lowering cannot give one domain (DAG fuzzer mode 4, seed 438:
 * b = broadcast(v) in x - b and b * y). 1 with *tv and the reason, 0 when none, -1 out of
 * memory. */
static int two_concretizations(cf_fusion *f, Val **tv, char *why) {
  Arena *a = arena_create();
  AnBroadcastConflict c;
  int found = a ? an_broadcast_conflict(a, f, &c) : -1;
  if (found > 0) {
    *tv = c.tv;
    an_broadcast_conflict_str(&c, "", why, SCHED_WHY_MAX);
  }
  arena_destroy(a);
  return found;
}

/* A resize op's operand that is read at other positions (an axis of it resized) but
 * computed in the fusion: lowering indexes such an operand from its consumer's index, so it
 * must be a kernel parameter (lower/index.c); NULL when there is none. */
static Val *resized_computed_operand(cf_fusion *f, const Expr *e) {
  for (int j = 0; j < e->nin; j++)
    if (e->in[j]->kind == VAL_TV && !ir_tv_is_input(f, e->in[j]) && ir_operand_read_elsewhere(e, j)) return e->in[j];
  return NULL;
}

/* Whether what permute e reads (its operand and every tensor it is computed from) is read
 * by nothing but e and itself, and is no output: a tensor read both through e and in its
 * own order is read in two axis orders in one kernel (x + transpose(x) of [1, 1]), which
 * lowering refuses even when the axes moved have one element. */
static bool permute_reads_alone(cf_fusion *f, const Expr *e) {
  char *cone = ARENA_ARRAY(f->arena, char, f->vals.len);
  Val **stack = ARENA_ARRAY(f->arena, Val *, f->vals.len), **seen = ARENA_ARRAY(f->arena, Val *, f->vals.len);
  if (!cone || !stack || !seen) return false;
  int top = 0, n = 0;
  cone[e->in[0]->id] = 1;
  stack[top++] = seen[n++] = e->in[0];
  while (top > 0) {
    Expr *d = stack[--top]->def;
    for (int i = 0; d && i < d->nin; i++)
      if (d->in[i]->kind == VAL_TV && !cone[d->in[i]->id]) cone[d->in[i]->id] = 1, stack[top++] = seen[n++] = d->in[i];
  }
  for (int k = 0; k < n; k++) {
    if (ir_tv_is_output(f, seen[k])) return false;
    for (int u = 0; u < seen[k]->uses.len; u++) {
      const Expr *r = seen[k]->uses.items[u];
      if (r != e && ir_op_kind(r->op) != OPK_TRANSFORM && !cone[r->out[0]->id]) return false;
    }
  }
  return true;
}

/* Why the pointwise scheduler cannot take f: the reason (after "schedule_pointwise: ")
 * in why, the tensor it is about in *tv, and the status; CF_OK when it can. */
static cf_status refusal(cf_fusion *f, Val *ref, char *why, Val **tv) {
  int n;
  Expr **exprs = ir_fusion_tensor_exprs(f, &n);
  for (int i = 0; i < n; i++)
    if (!elementwise(exprs[i])) {
      *tv = exprs[i]->out[0];
      snprintf(why, SCHED_WHY_MAX, "%s is computed by %s; the pointwise scheduler takes elementwise ops only",
               TV(*tv)->display_name, ir_op_name(exprs[i]->op));
      return CF_ERR_UNSUPPORTED;
    }
  for (int i = 0; i < n; i++)
    if (ir_op_kind(exprs[i]->op) == OPK_PERMUTE && !permute_reads_alone(f, exprs[i])) {
      *tv = exprs[i]->out[0];
      snprintf(why, SCHED_WHY_MAX, "%s = permute(%s) moves only axes of one element, but what it reads is also read "
               "in its own order (two axis orders in one kernel)", TV(*tv)->display_name,
               TV(exprs[i]->in[0])->display_name);
      return CF_ERR_UNSUPPORTED;
    }
  for (int i = 0; i < n; i++)
    if ((*tv = resized_computed_operand(f, exprs[i]))) {
      snprintf(why, SCHED_WHY_MAX, "%s = %s(%s...) reads %s at other positions, and %s is computed in the fusion (a "
               "%s operand must be a segment input: define and run cuts the fusion before it)",
               TV(exprs[i]->out[0])->display_name, ir_op_name(exprs[i]->op), TV(*tv)->display_name,
               TV(*tv)->display_name, TV(*tv)->display_name,
               ir_op_kind(exprs[i]->op) == OPK_RESIZE ? "resize's" : "lookup, scatter or scan");
      return CF_ERR_UNSUPPORTED;
    }
  Val **tvs = ir_fusion_all_tvs(f, &n);
  for (int i = 0; i < n; i++)
    if (!ir_tv_is_input(f, tvs[i]) && (TV(tvs[i])->nloop != TV(tvs[i])->nlogical || TV(tvs[i])->ca_pos > 0)) {
      *tv = tvs[i];
      snprintf(why, SCHED_WHY_MAX, "%s is scheduled already", TV(*tv)->display_name);
      return CF_ERR_INVALID_SCHEDULE;
    }
  for (int o = 1; o < f->outputs.len; o++) {
    Val *out = f->outputs.items[o];
    bool same = TV(out)->nlogical == TV(ref)->nlogical;
    for (int a = 0; same && a < TV(ref)->nlogical; a++)
      same = ID(TV(out)->logical[a])->extent == ID(TV(ref)->logical[a])->extent ||
             (ir_scalar_is_const(ID(TV(out)->logical[a])->extent) &&
              SC(ID(TV(out)->logical[a])->extent)->i == SC(ID(TV(ref)->logical[a])->extent)->i);
    if (!same) {
      *tv = out;
      snprintf(why, SCHED_WHY_MAX, "output %s has another shape than %s", TV(out)->display_name, TV(ref)->display_name);
      return CF_ERR_UNSUPPORTED;
    }
  }
  int found = two_concretizations(f, tv, why);
  if (found < 0) {
    *tv = f->outputs.items[0];
    snprintf(why, SCHED_WHY_MAX, "out of memory");
  }
  return found > 0 ? CF_ERR_UNSUPPORTED : found < 0 ? CF_ERR_OUT_OF_MEMORY : CF_OK;
}

/* Whether a squeeze, a permute (one the row takes moves only axes of one element) or a
 * resize (slice, pad, cat) reads tv or a tensor computed from it: tv's axes then do not
 * line up with the reference's position by position (a resize reads its operand whole,
 * from memory), so it is not cached for vector loads. */
static bool reaches_squeeze(cf_fusion *f, Val *tv) {
  bool *seen = ARENA_ARRAY(f->arena, bool, f->vals.len);
  Val **stack = ARENA_ARRAY(f->arena, Val *, f->vals.len);
  if (!seen || !stack) return true; /* out of memory: the safe answer */
  int top = 0;
  stack[top++] = tv;
  seen[tv->id] = true;
  while (top > 0) {
    Val *v = stack[--top];
    for (int k = 0; k < v->uses.len; k++) {
      const Expr *e = v->uses.items[k];
      if (ir_op_kind(e->op) == OPK_TRANSFORM) continue;
      if (e->op == OP_SQUEEZE || ir_op_kind(e->op) == OPK_RESIZE || ir_op_kind(e->op) == OPK_PERMUTE ||
          ir_op_kind(e->op) == OPK_INDEXED)
        return true;
      if (!seen[e->out[0]->id]) seen[e->out[0]->id] = true, stack[top++] = e->out[0];
    }
  }
  return false;
}

/* Caches the full-rank inputs and the outputs; returns how many caches it listed. */
static int add_caches(cf_fusion *f, Val *ref, Val **caches) {
  int n = 0;
  int nin = f->inputs.len, nout = f->outputs.len;
  Val **ins = arena_memdup(f->arena, f->inputs.items, sizeof(Val *) * (size_t)nin);
  for (int i = 0; i < nin; i++) {
    bool used = false;
    for (int k = 0; k < ins[i]->uses.len; k++) used |= ir_op_kind(((Expr *)ins[i]->uses.items[k])->op) != OPK_TRANSFORM;
    if (used && sched_pw_full_rank_input(ins[i], ref) && !reaches_squeeze(f, ins[i])) caches[n++] = ir_tv(cf_cache_after(f, ir_tv_handle(ins[i])));
  }
  for (int o = 0; o < nout; o++) cf_cache_before(f, ir_tv_handle(f->outputs.items[o]));
  return f->status ? 0 : n;
}

/* Moves tv's broadcast axes (an output of extent 1 along them) to the front, left out of
 * the tile; returns how many. Merged in, they would index the rest through a modulo
 * (x % extent), and a row that is one vector would lose its thread index. All broadcast:
 * none move. */
static int broadcasts_first(cf_fusion *f, Val *tv) {
  int n = TV(tv)->nloop, nb = 0, order[CF_MAX_RANK];
  if (n > CF_MAX_RANK) return 0;
  for (int a = 0; a < n; a++)
    if (ID(TV(tv)->loop[a])->iter_type == CF_ITER_BROADCAST) order[a] = nb++;
  if (nb == 0 || nb == n) return 0;
  for (int a = 0, k = nb; a < n; a++)
    if (ID(TV(tv)->loop[a])->iter_type != CF_ITER_BROADCAST) order[a] = k++;
  cf_reorder_all(f, ir_tv_handle(tv), n, order);
  return nb;
}

/* Splits tv's innermost axis by v before the merges when its extent is symbolic and an
 * output is packed (even at run time, lowering validating the split): the vector then
 * walks that axis alone, where a merge with a symbolic inner input is refused by the rule
 * for vector accesses (a vector could straddle two rows). A flat vector (no packed tensor)
 * walks the merge of every axis instead. Returns whether it split. */
static bool split_symbolic_innermost(cf_fusion *f, Val *tv, int64_t v) {
  int n = TV(tv)->nloop;
  int64_t e;
  if (v < 2 || n == 0 || !sched_pw_packed_output(f) || ir_scalar_const_value(ID(TV(tv)->loop[n - 1])->extent, &e))
    return false;
  return cf_split(f, ir_tv_handle(tv), n - 1, v) == CF_OK;
}

/* [broadcasts.., blockIdx.x, unswitch{1}, threadIdx.x{128}, vector{v}] over tv's other
 * axes merged; returns the position of blockIdx.x. */
static int tile(cf_fusion *f, Val *tv, int64_t v) {
  cf_tv *r = ir_tv_handle(tv);
  int nb = broadcasts_first(f, tv), n = TV(tv)->nloop;
  bool first = split_symbolic_innermost(f, tv, v);
  for (int a = n - 1; a > nb; a--) cf_merge(f, r, nb);
  if (v > 1 && !first) cf_split(f, r, nb, v);
  cf_split(f, r, nb, THREADS);
  cf_split(f, r, nb, 1);
  return nb;
}

/* tile's axes parallelized from position nb, and alike on every tensor mapped to them. */
static void parallelize_tile(cf_fusion *f, Val *tv, int nb) {
  cf_tv *r = ir_tv_handle(tv);
  cf_parallelize(f, r, nb, CF_PT_BIDX);
  cf_parallelize(f, r, nb + 1, CF_PT_UNSWITCH);
  cf_parallelize(f, r, nb + 2, CF_PT_TIDX);
  cf_parallelize_all_like(f, r, 3, (cf_parallel_type[]){CF_PT_BIDX, CF_PT_UNSWITCH, CF_PT_TIDX});
}

/* Vectorizes tv's innermost axis where the split by v reached it, when the rule for vector
 * accesses of global memory accepts it (sched_vectorize_innermost, the rule lowering
 * applies). A tensor the propagation reached only through a broadcast (an input of lower
 * rank between it and the reference) keeps axes the reference's merge never saw, its
 * innermost of any extent, v too (the rows of a [4, 32] input or output, left innermost
 * by a propagation through a [32] broadcast: DAG seed 12000229 of define and run, which
 * lowering refused): it stays scalar; the other tensors keep their vectors. */
static void vectorize_split(cf_fusion *f, Val *tv, int64_t v) {
  int64_t e;
  int n = TV(tv)->nloop;
  if (n > 0 && ir_scalar_const_value(ID(TV(tv)->loop[n - 1])->extent, &e) && e == v &&
      v * (int64_t)cf_dtype_size(tv->dtype) <= 16) /* a packed output's 2 of complex128: scalar */
    sched_vectorize_innermost(f, tv);
}

/* ---- the 2-D break point ---------------------------------------------------------------- */

/* The break point chosen: at 0 is the 1-D schedule; broadcasting: some input varies along
 * a non-empty strict subset of the reference's axes (why then says why 1-D was kept). */
typedef struct PwBreak {
  int at;
  bool broadcasting;
  char why[SCHED_WHY_MAX / 2];
} PwBreak;

static int64_t pw_extent(Val *id) {
  int64_t e;
  return ir_scalar_const_value(ID(id)->extent, &e) ? e : -1;
}

/* varies[a]: whether input `in` varies along reference axis a (one of its non-broadcast
 * logical axes is exactly mapped to it); false when an axis of in maps to none. */
static bool pw_varies(const IdMap *m, Val *in, Val *ref, bool *varies) {
  int r = TV(ref)->nlogical;
  for (int a = 0; a < r; a++) varies[a] = false;
  for (int k = 0; k < TV(in)->nlogical; k++) {
    Val *id = TV(in)->logical[k];
    if (ID(id)->iter_type == CF_ITER_BROADCAST || ID(id)->iter_type == CF_ITER_REDUCTION) continue;
    bool found = false;
    for (int a = 0; a < r && !found; a++)
      if (an_idmap_same(m, id, TV(ref)->logical[a])) varies[a] = found = true;
    if (!found) return false;
  }
  return true;
}

/* The estimate of the header for break point b: L(b) x bytes crossing the outer half +
 * R(b) x bytes crossing the inner half; vary[t * r + a] for the n tensors of bytes[t]. */
static double pw_cost(const double *ext, int r, int b, int n, const bool *vary, const double *bytes) {
  double left = 1, right = 1, lb = 0, rb = 0;
  for (int a = 0; a < r; a++) *(a < b ? &left : &right) *= ext[a];
  for (int t = 0; t < n; t++) {
    bool l = false, rr = false;
    for (int a = 0; a < r; a++) *(a < b ? &l : &rr) |= vary[t * r + a];
    lb += l ? bytes[t] : 0;
    rb += rr ? bytes[t] : 0;
  }
  return left * lb + right * rb;
}

/* Fills vary/bytes for the inputs (then the outputs, varying everywhere); false with the
 * reason when an input axis maps to no reference axis. */
static bool pw_tensor_table(cf_fusion *f, Val *ref, bool *vary, double *bytes, PwBreak *bp) {
  int r = TV(ref)->nlogical, nin = f->inputs.len;
  IdMap *m = an_idmap_build(f, false);
  if (!m) return false;
  bool ok = true;
  for (int i = 0; i < nin + f->outputs.len; i++) {
    Val *t = i < nin ? f->inputs.items[i] : f->outputs.items[i - nin];
    bytes[i] = t->kind == VAL_TV ? (double)cf_dtype_size(t->dtype) : 0;
    bool *v = &vary[i * r];
    for (int a = 0; a < r; a++) v[a] = i >= nin && ID(TV(ref)->logical[a])->iter_type != CF_ITER_BROADCAST;
    if (i >= nin || t->kind != VAL_TV) continue;
    if (!pw_varies(m, t, ref, v)) {
      ok = false;
      snprintf(bp->why, sizeof bp->why, "an axis of %s maps to no axis of %s", TV(t)->display_name,
               TV(ref)->display_name);
      break;
    }
    int nv = 0, nconcrete = 0;
    for (int a = 0; a < r; a++) nv += v[a], nconcrete += ID(TV(ref)->logical[a])->iter_type != CF_ITER_BROADCAST;
    bp->broadcasting |= nv > 0 && nv < nconcrete;
  }
  an_idmap_free(m);
  return ok;
}

/* The break point of the header's rule (0: the 1-D schedule). */
static PwBreak pw_break_point(cf_fusion *f, Val *ref) {
  PwBreak bp = {0, false, ""};
  int r = TV(ref)->nlogical, n = f->inputs.len + f->outputs.len;
  bool *vary = ARENA_ARRAY(f->arena, bool, (size_t)(n * r) + 1);
  double *bytes = ARENA_ARRAY(f->arena, double, n), *ext = ARENA_ARRAY(f->arena, double, r + 1);
  if (r < 2 || !vary || !bytes || !ext || !pw_tensor_table(f, ref, vary, bytes, &bp) || !bp.broadcasting) {
    bp.broadcasting &= r >= 2;
    return bp;
  }
  for (int a = 0; a < r; a++) {
    int64_t e = pw_extent(TV(ref)->logical[a]);
    ext[a] = e < 0 ? SYMBOLIC_GUESS : (double)e;
  }
  double best = 0;
  for (int b = 1; b < r; b++) {
    double inner = 1;
    for (int a = b; a < r; a++) inner *= ext[a];
    if (inner < THREADS) continue;
    double c = pw_cost(ext, r, b, n, vary, bytes);
    if (bp.at == 0 || c < best) best = c, bp.at = b;
  }
  if (bp.at == 0) snprintf(bp.why, sizeof bp.why, "every inner half has fewer than %d elements", THREADS);
  return bp;
}

/* How many rows of the outer half each blockIdx.y runs (1 when it fits gridDim.y or is
 * symbolic). */
static int64_t pw_rows_per_block(Val *ref, int b) {
  int64_t left = 1;
  for (int a = 0; a < b; a++) {
    int64_t e = pw_extent(TV(ref)->logical[a]);
    if (e < 0) return 1;
    left *= e;
  }
  return ck_ceil_div(left, GRID_Y_MAX);
}

/* [blockIdx.y (outer half), (S{rows}), blockIdx.x, unswitch{1}, threadIdx.x{128},
 * vector{v}] over tv's two halves at break point b; returns the position of blockIdx.x. */
static int tile_2d(cf_fusion *f, Val *tv, int b, int64_t rows, int64_t v) {
  cf_tv *t = ir_tv_handle(tv);
  int n = TV(tv)->nloop;
  bool first = split_symbolic_innermost(f, tv, v);
  for (int a = n - 1; a > b; a--) cf_merge(f, t, b);
  for (int a = b - 1; a > 0; a--) cf_merge(f, t, 0);
  if (v > 1 && !first) cf_split(f, t, 1, v);
  cf_split(f, t, 1, THREADS); /* [outer, inner/128v, 128, v] */
  cf_split(f, t, 1, 1);       /* [outer, inner/128v, 1, 128, v] */
  if (rows > 1) cf_split(f, t, 0, rows);
  return rows > 1 ? 2 : 1;
}

/* tile_2d's axes parallelized (blockIdx.x at x), and alike on every tensor mapped to them. */
static void parallelize_tile_2d(cf_fusion *f, Val *tv, int x) {
  cf_tv *t = ir_tv_handle(tv);
  cf_parallelize(f, t, 0, CF_PT_BIDY);
  cf_parallelize(f, t, x, CF_PT_BIDX);
  cf_parallelize(f, t, x + 1, CF_PT_UNSWITCH);
  cf_parallelize(f, t, x + 2, CF_PT_TIDX);
  cf_parallelize_all_like(f, t, 4, (cf_parallel_type[]){CF_PT_BIDY, CF_PT_BIDX, CF_PT_UNSWITCH, CF_PT_TIDX});
}

/* Whether tv has broadcast and other axes both in [from, to). */
static bool mixed(Val *tv, int from, int to) {
  int nb = 0;
  for (int a = from; a < to; a++) nb += ID(TV(tv)->logical[a])->iter_type == CF_ITER_BROADCAST;
  return nb > 0 && nb < to - from;
}

/* A lower-rank tensor computed in the fusion and broadcast within a half of the tile at
 * break point `at` (the whole, when 0) is tiled on its own extent, not inlined into the
 * half's merged loop, and read from other blocks (lowering refuses: DAG seeds 148, 152
 * of the registry's invariant test); the first such broadcast result, or NULL. A
 * broadcast input is read from global memory and is fine. */
static Val *computed_broadcast_at(cf_fusion *f, Val *ref, int at) {
  int n, r = TV(ref)->nlogical;
  Expr **exprs = ir_fusion_tensor_exprs(f, &n);
  for (int i = 0; i < n; i++) {
    Val *b = exprs[i]->out[0];
    if (ir_op_kind(exprs[i]->op) != OPK_BROADCAST || !exprs[i]->in[0]->def) continue;
    if (TV(b)->nlogical != r || mixed(b, 0, at ? at : r) || (at && mixed(b, at, r))) return b;
  }
  return NULL;
}

/* The parameters: the break point (0: the 1-D schedule), the vector width, whether the
 * last vector may be partial (a flat vector's tail: informative, lowering decides it from
 * the extents it sees), the rows of the outer half each blockIdx.y runs, and the input a
 * call gives misaligned (NULL: none). */
typedef struct PwPlan {
  PwBreak bp;
  int64_t vector, rows;
  bool tail;
  const char *misaligned;
} PwPlan;

/* Whether the reference's extents but the outermost are constants: a broadcast input read
 * along the flat tensor is then indexed by divisions by constants, not by run-time sizes. */
static bool inner_extents_constant(Val *ref) {
  int64_t e;
  for (int a = 1; a < TV(ref)->nlogical; a++)
    if (!ir_scalar_const_value(ID(TV(ref)->logical[a])->extent, &e)) return false;
  return true;
}

/* The plan for f as it is (its constant extents; f is not modified). The flat vector
 * (scheduler/pointwise_vector.c) replaces a narrower one along rows, and the break point
 * too (a bias is then read element by element at its index) where the inner extents are
 * constants and no broadcast computed in the fusion would be mixed into the 1-D tile. */
static cf_status pw_plan_of(cf_fusion *f, PwPlan *p) {
  Val *ref = f->outputs.items[0];
  bool tail;
  p->bp = pw_break_point(f, ref);
  p->vector = sched_pw_row_vector(f, ref);
  p->tail = false;
  p->misaligned = NULL;
  int64_t flat = sched_pw_flat_vector(f, ref, &tail);
  if (flat > p->vector && (!p->bp.at || (inner_extents_constant(ref) && !computed_broadcast_at(f, ref, 0)))) {
    if (p->bp.at)
      snprintf(p->bp.why, sizeof p->bp.why, "vectors of %lld along rows, %lld along the flat tensor",
               (long long)p->vector, (long long)flat);
    p->bp.at = 0;
    p->vector = flat;
    p->tail = tail;
  }
  p->rows = p->bp.at ? pw_rows_per_block(ref, p->bp.at) : 1;
  return f->status;
}

/* The tensors recomputed for each reader (a row mask for sched_recompute, by Val id): those
 * computed in the fusion with a broadcast axis merged with other axes in a half of the
 * tile at break point `at` (the whole tile when 0). Read by two consumers whose innermost
 * loops differ, such a tensor is inlined short of its innermost loop, which then iterates
 * the merged broadcast alone and cannot index its operands (DAG seed 148: relu(broadcast(
 * b)) read by a sub and an add); a copy per reader is inlined whole into it. NULL when out
 * of memory. */
static bool *recompute_rows(cf_fusion *f, Arena *a, Val *ref, int at) {
  int n, r = TV(ref)->nlogical;
  Val **tvs = ir_fusion_all_tvs_in(a, f, &n);
  bool *row = tvs ? ARENA_ARRAY(a, bool, f->vals.len) : NULL;
  for (int i = 0; row && i < n; i++) {
    Val *t = tvs[i];
    row[t->id] = t->def && !ir_tv_is_input(f, t) && TV(t)->nlogical == r &&
                 (at ? mixed(t, 0, at) || mixed(t, at, r) : mixed(t, 0, r));
  }
  return row;
}

/* The outputs the reference's propagation reaches with part of its axes or not at all
 * (sched_span_forest's whole): another connected component (outputs of inputs that share
 * no op, a full alone), or a lookup's result whose axes reach it from the reference apart,
 * the looked-up axis through its index, the others through the table or a bias broadcast
 * (issue 28: two index_selects of one weight by one index). Each is tiled as the reference
 * is and roots the propagation itself, so every tensor it computes is reached whole; a
 * tree from the reference alone gave such an output one part (or none) of the tile and its
 * producers another, and lowering refused the loops they share. -1 when out of memory. */
static int partial_outputs(cf_fusion *f, Val *ref, Val **roots) {
  Arena *a = arena_create();
  SpanTree tree;
  bool *whole = a ? ARENA_ARRAY(a, bool, f->vals.len) : NULL;
  int n = -1;
  if (whole && sched_span_tree(a, ref, TV(ref)->nloop, NULL, NULL, &tree)) {
    for (int i = 0; i < tree.n; i++) whole[tree.tvs[i]->id] = tree.whole[i];
    n = 0;
    for (int o = 1; o < f->outputs.len; o++)
      if (!whole[((Val *)f->outputs.items[o])->id]) roots[n++] = f->outputs.items[o];
  }
  arena_destroy(a);
  return n;
}

/* Tiles the reference (plan p), then the outputs it would reach in part (partial_outputs),
 * propagates from all of them at once and parallelizes each. */
static cf_status pw_tile_all(cf_fusion *f, const PwPlan *p) {
  Val *ref = f->outputs.items[0];
  int n = f->outputs.len, *at = ARENA_ARRAY(f->arena, int, n);
  Val **roots = ARENA_ARRAY(f->arena, Val *, n);
  if (!at || !roots) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "schedule_pointwise: out of memory");
  at[0] = p->bp.at ? tile_2d(f, ref, p->bp.at, p->rows, p->vector) : tile(f, ref, p->vector);
  int nroots = partial_outputs(f, ref, roots);
  if (nroots < 0) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "schedule_pointwise: out of memory");
  for (int r = 0; r < nroots; r++)
    at[r + 1] = p->bp.at ? tile_2d(f, roots[r], p->bp.at, p->rows, p->vector) : tile(f, roots[r], p->vector);
  if (f->status || sched_propagate_from_roots(f, ref, nroots, roots)) return f->status;
  for (int r = 0; r <= nroots; r++) {
    Val *tv = r ? roots[r - 1] : ref;
    if (p->bp.at) parallelize_tile_2d(f, tv, at[r]);
    else parallelize_tile(f, tv, at[r]);
  }
  return f->status;
}

/* Schedules f with plan p; f's sizes may be symbolic where the plan's were constant (the
 * plan's vector width divides the innermost extent, kept constant by define and run). */
static cf_status pw_apply_plan(cf_fusion *f, const PwPlan *p) {
  int64_t v = p->vector;
  Arena *a = arena_create();
  bool *row = a ? recompute_rows(f, a, f->outputs.items[0], p->bp.at) : NULL;
  cf_status s = row ? sched_recompute(f, a, row, SCHED_CLONE_CACHES) : CF_ERR_OUT_OF_MEMORY;
  arena_destroy(a);
  if (s) return f->status ? f->status : ir_error(f, s, "schedule_pointwise: out of memory");
  Val **caches = ARENA_ARRAY(f->arena, Val *, f->inputs.len + 1);
  int ncaches = add_caches(f, f->outputs.items[0], caches);
  if (f->status) return f->status;
  if ((s = pw_tile_all(f, p))) return s;
  if (v > 1) {
    for (int i = 0; i < ncaches; i++) vectorize_split(f, caches[i], v);
    for (int o = 0; o < f->outputs.len; o++) vectorize_split(f, f->outputs.items[o], v);
  }
  return cf_inline_most(f);
}

cf_status cf_schedule_pointwise(cf_fusion *f) {
  if (!f) return CF_ERR_INVALID_ARGUMENT;
  if (f->status) return f->status;
  if (f->outputs.len == 0) return ir_error(f, CF_ERR_INVALID_ARGUMENT, "schedule_pointwise: the fusion has no outputs");
  char why[SCHED_WHY_MAX];
  Val *tv = NULL;
  cf_status s = refusal(f, f->outputs.items[0], why, &tv);
  if (s) return ir_error_tv(f, s, tv, "schedule_pointwise: %s", why);
  PwPlan p;
  return pw_plan_of(f, &p) ? f->status : pw_apply_plan(f, &p);
}

/* ---- as a row of the registry ------------------------------------------------------------ */

/* Whether the copies recompute_rows asks for stay within SCHED_RECOMPUTE_MAX_OPS. */
static bool recompute_fits(cf_fusion *f, Val *ref, int at, char *why) {
  Arena *a = arena_create();
  bool *row = a ? recompute_rows(f, a, ref, at) : NULL;
  int64_t n = row ? sched_recompute_count(f, a, row, SCHED_CLONE_CACHES, NULL) : -1;
  arena_destroy(a);
  if (n < 0) snprintf(why, SCHED_WHY_MAX, "pointwise: out of memory");
  else if (n > SCHED_RECOMPUTE_MAX_OPS)
    snprintf(why, SCHED_WHY_MAX, "pointwise: a copy of each broadcast tensor for each of its readers would add %lld "
             "ops (at most %d)", (long long)n, SCHED_RECOMPUTE_MAX_OPS);
  return n >= 0 && n <= SCHED_RECOMPUTE_MAX_OPS;
}

static bool pw_accepts(cf_fusion *f, const SchedCall *call, char *why) {
  (void)call;
  if (f->outputs.len == 0) {
    snprintf(why, SCHED_WHY_MAX, "pointwise: the fusion has no outputs");
    return false;
  }
  Val *ref = f->outputs.items[0], *tv = NULL;
  if (TV(ref)->nlogical == 0) {
    snprintf(why, SCHED_WHY_MAX, "pointwise: output %s has no axes", TV(ref)->display_name);
    return false;
  }
  char reason[SCHED_WHY_MAX];
  if (refusal(f, ref, reason, &tv)) {
    snprintf(why, SCHED_WHY_MAX, "pointwise: %.240s", reason);
    return false;
  }
  PwPlan p;
  if (pw_plan_of(f, &p)) return snprintf(why, SCHED_WHY_MAX, "pointwise: %.240s", cf_fusion_error(f)), false;
  if ((tv = computed_broadcast_at(f, ref, p.bp.at)))
    return snprintf(why, SCHED_WHY_MAX, "pointwise: %s broadcasts a tensor computed in the fusion along part of a "
                    "half of the tile (its own tile would run in other blocks)", TV(tv)->display_name), false;
  return recompute_fits(f, ref, p.bp.at, why);
}

/* "break=1 vector=4 threads=128" (then " rows=F" when each blockIdx.y runs F rows of the
 * outer half); the 1-D form "vector=4 threads=128", after "break=none (why) " when an
 * input broadcasts; "vector=8 tail" when the last flat vector may be partial, "vector=1
 * (T0 is not 16-byte aligned)" for a call with a misaligned input. Sizes are not
 * parameters: the grid follows from them at launch. */
static void pw_params(const PwPlan *p, SchedParams *out) {
  *out = (SchedParams){.nwords = 5, .w = {p->bp.at, p->vector, p->rows, p->bp.broadcasting, p->tail}};
  char *t = out->text;
  size_t cap = sizeof out->text, len = 0; /* the reason is at most half of the text */
  if (p->bp.at) len = (size_t)snprintf(t, cap, "break=%d ", p->bp.at);
  else if (p->bp.broadcasting) len = (size_t)snprintf(t, cap, "break=none (%s) ", p->bp.why);
  len += (size_t)snprintf(t + len, cap - len, "vector=%lld%s", (long long)p->vector, p->tail ? " tail" : "");
  if (p->misaligned && len < cap) len += (size_t)snprintf(t + len, cap - len, " (%s is not 16-byte aligned)", p->misaligned);
  if (len < cap) len += (size_t)snprintf(t + len, cap - len, " threads=%d", THREADS);
  if (p->rows > 1 && len < cap) snprintf(t + len, cap - len, " rows=%lld", (long long)p->rows);
}

/* The first input of the call whose data is not 16-byte aligned (a view at an offset),
 * or NULL: define and run devectorizes its kernel (sched_devectorize), so the plan says
 * so, unless an output is packed (its vectors need no alignment and stay). */
static Val *misaligned_input(cf_fusion *f, const SchedCall *call) {
  for (int i = 0; call && i < call->ninputs && i < f->inputs.len; i++)
    if (!sched_aligned16(1, &call->inputs[i]) && ((Val *)f->inputs.items[i])->kind == VAL_TV)
      return sched_pw_packed_output(f) ? NULL : f->inputs.items[i];
  return NULL;
}

static bool pw_plan(cf_fusion *f, const SchedCall *call, SchedParams *out, char *why) {
  PwPlan p;
  if (!pw_accepts(f, call, why)) return false;
  if (pw_plan_of(f, &p)) return snprintf(why, SCHED_WHY_MAX, "pointwise: %.240s", cf_fusion_error(f)), false;
  Val *m = misaligned_input(f, call);
  if (m && p.vector > 1) p.vector = 1, p.tail = false, p.misaligned = TV(m)->display_name;
  pw_params(&p, out);
  return true;
}

static cf_status pw_apply(cf_fusion **f, const SchedCall *call, const SchedParams *in, SchedParams *used) {
  (void)call;
  PwPlan p = {.bp = {.at = (int)in->w[0], .broadcasting = in->w[3] != 0}, .vector = in->w[1], .rows = in->w[2],
              .tail = in->w[4] != 0};
  *used = *in;
  return pw_apply_plan(*f, &p);
}

const SchedRow sched_pointwise_row = {"pointwise", SCHED_ROW_KERNEL, false, pw_accepts, pw_plan, pw_apply};

/* The scheduler's own entry points (tests, benches): plan and apply at once. */
static cf_status pw_schedule(cf_fusion *f, const SchedCall *call, char *params) {
  char why[SCHED_WHY_MAX];
  SchedParams p, used;
  if (!pw_plan(f, call, &p, why)) return f->status ? f->status : ir_error(f, CF_ERR_UNSUPPORTED, "%s", why);
  snprintf(params, SCHED_PARAMS_MAX, "%s", p.text);
  return pw_apply(&f, call, &p, &used);
}

const SchedHeuristic sched_pointwise_heuristic = {"pointwise", pw_accepts, pw_schedule};
