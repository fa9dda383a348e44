/* scheduler/transpose_sched.c: the automatic scheduler of transposes
 * (sched_transpose_heuristic, issue 11), a client of the public scheduling calls.
 * Heuristic, in order:
 *   1. accepts a fusion of elementwise ops, permutes (cf_transpose, cf_permute) and
 *      broadcasts, with no broadcast axis in its inputs and outputs, in which some input
 *      is transposed: it varies along the output's innermost axis, which is not its
 *      contiguous axis (its last, or the stride-1 axis the call passes for a strided
 *      input). Every tensor is traced to each output (which output axis each of its axes
 *      becomes); the outputs must read the tensors in one order (the first output is the
 *      reference), and the transposed ("staged") inputs must be of the output's rank and
 *      all have their contiguous axis on one output axis p; every broadcast axis is
 *      concretized against one exact class by all its readers (everything is inlined, so a
 *      broadcast of two unrelated concretizations would join two domains in one loop);
 *   2. the output is tiled on p and its innermost axis, 64 x 64 elements:
 *      [others.., p, inner] -> [blockIdx.x (others x p tiles), blockIdx.y (inner tiles),
 *      unroll{8}, threadIdx.y{8}, threadIdx.x{64}]: 512 threads per block, 8 elements per
 *      thread, a warp writes 32 consecutive output elements (coalesced); propagated to
 *      every tensor and parallelized alike. Tuned on an H200 (bench/transpose.c, 8192^2
 *      float, device copy 3992 GB/s): tiles x rows of threadIdx.y 32x8 3461 GB/s, 32x4
 *      3501, 32x16 2861, 64x8 3745, 64x4 3686, 64x16 3406;
 *   3. each staged input is cached after, in shared memory (one tile), and that cache's
 *      tile is rescheduled in the input's own order: [inner-tile{64}, p-tile{64}] ->
 *      XOR-swizzled (i, j) -> (i, i ^ j), the first split into [unroll{8}, threadIdx.y{8}],
 *      the second on threadIdx.x: a warp reads 32 consecutive input elements (coalesced,
 *      permuted within the segment). Its allocation is its loop domain, so the swizzle is
 *      the storage layout: the transposed reads (a warp over the tile's rows) hit 32
 *      distinct banks instead of one (padding is not expressible);
 *   4. everything is inlined as deep as legal: up to the block's tile (inlining stops at
 *      the unrolled axis, so each tensor's 4 accesses are issued together), lowering
 *      putting the __syncthreads between the tile's write and its reads. The prologue
 *      runs after the tile, in the output's order (each element computed once); inputs
 *      that are not staged are read directly in the output's order.
 * Non-divisible extents (and symbolic ones) are predicated tiles.
 * Key decision: two grid axes, not one merged blockIdx.x: lowering cannot index a
 * broadcast axis merged with concrete tiles ("cannot be indexed in the loops of ..."), so
 * the tile counts stay apart; a broadcast along an axis that blockIdx.x merges with the p
 * tiles (N-D) is refused, and so are lower-rank inputs that would need staging. The inner
 * extent is at most 65535 tiles (gridDim.y; the launch checks it). Not yet: vectorized
 * accesses, tile sizes from the call's sizes or dtype (a bfloat16 warp moves 64 bytes;
 * tiny transposed extents waste most of a tile), outputs in different axis orders. */
#include <string.h>

#include "scheduler/registry.h"
#include "scheduler/sched.h"

enum { TP_TILE = 64, TP_ROWS = 8 }; /* tuned on the H200: see the header */

/* What the analysis found: the reference output (the first), its rank, its axis p that is
 * the staged inputs' contiguous axis, and which fusion inputs are staged (by input index). */
typedef struct TpPlan {
  Val *out;
  int rank;
  int tile_axis;
  bool *staged;
  int nstaged;
} TpPlan;

/* Where each tensor's axes go in one output: axis[v->id * rank + a] is the axis of tensor
 * v that becomes axis a of the output (-1: none, a broadcast or a lower rank); reached:
 * v is read on the way to that output. */
typedef struct TpMap {
  int *axis;
  bool *reached;
} TpMap;

/* Fusion inputs and outputs: a constant extent of 1 is a broadcast axis. */
static bool tp_no_broadcast(Val *tv, char *why) {
  for (int a = 0; a < TV(tv)->nlogical; a++)
    if (ID(TV(tv)->logical[a])->iter_type == CF_ITER_BROADCAST) {
      snprintf(why, SCHED_WHY_MAX, "transpose: %s has a broadcast axis (a constant extent of 1)",
               TV(tv)->display_name);
      return false;
    }
  return true;
}

/* Pushes e's output's map to its tensor inputs; an input reached twice must agree. */
static bool tp_trace_expr(const Expr *e, int r, TpMap *m, char *why) {
  const int *om = &m->axis[e->out[0]->id * r];
  for (int k = 0; k < e->nin; k++) {
    Val *v = e->in[k];
    if (v->kind != VAL_TV || TV(v)->nlogical == 0) continue;
    int *vm = &m->axis[v->id * r];
    for (int ax = 0; ax < r; ax++) {
      int want = an_operand_axis(e, om[ax]);
      if (m->reached[v->id] && vm[ax] != want) {
        snprintf(why, SCHED_WHY_MAX, "transpose: %s is read in two axis orders", TV(v)->display_name);
        return false;
      }
      vm[ax] = want;
    }
    m->reached[v->id] = true;
  }
  return true;
}

/* The map of output `out` (rank r): walks the exprs from the output back through
 * elementwise ops (same axes), permutes and broadcasts. */
static bool tp_trace(Arena *a, cf_fusion *f, Val *out, int r, TpMap *m, char *why) {
  int n;
  Expr **ex = ir_fusion_tensor_exprs_in(a, f, &n);
  m->axis = ARENA_ARRAY(a, int, f->vals.len * r);
  m->reached = ARENA_ARRAY(a, bool, f->vals.len);
  if (!ex || !m->axis || !m->reached) {
    snprintf(why, SCHED_WHY_MAX, "transpose: out of memory");
    return false;
  }
  for (int k = 0; k < r; k++) m->axis[out->id * r + k] = k;
  m->reached[out->id] = true;
  for (int i = n - 1; i >= 0; i--) {
    Expr *e = ex[i];
    OpKind kind = ir_op_kind(e->op);
    if (kind != OPK_PERMUTE && kind != OPK_BROADCAST && !ir_op_is_elementwise(e->op)) {
      snprintf(why, SCHED_WHY_MAX, "transpose: %s is computed by %s, not an elementwise op, a permute or a broadcast",
               TV(e->out[0])->display_name, ir_op_name(e->op));
      return false;
    }
    if (m->reached[e->out[0]->id] && !tp_trace_expr(e, r, m, why)) return false;
  }
  return true;
}

/* Folds the map for output k into the reference's (m): every tensor both read must be
 * read in the same order (output k's axes are the reference's), and output k must read
 * at least one tensor of the outputs' rank that the reference reads: the reference's
 * tiles reach output k's tensors through it (through a tensor of lower rank, a 1-D bias
 * both read, they would arrive without the tiled axis: a staged input's cache there could
 * not be scheduled; found by the hostile define-and-run fuzzer, seed 38500351). */
static bool tp_join_output(cf_fusion *f, const TpPlan *p, Val *out, TpMap *m, const TpMap *mk, char *why) {
  int r = p->rank;
  bool shared = false;
  for (int i = 0; i < f->vals.len; i++) {
    Val *v = f->vals.items[i];
    if (v->kind != VAL_TV || v == out || !mk->reached[v->id]) continue;
    int *m0 = &m->axis[v->id * r];
    const int *m1 = &mk->axis[v->id * r];
    if (!m->reached[v->id]) {
      memcpy(m0, m1, sizeof(int) * (size_t)r);
      m->reached[v->id] = true;
      continue;
    }
    shared |= TV(v)->nlogical == r;
    if (memcmp(m0, m1, sizeof(int) * (size_t)r)) {
      snprintf(why, SCHED_WHY_MAX, "transpose: outputs %s and %s read %s in different axis orders",
               TV(p->out)->display_name, TV(out)->display_name, TV(v)->display_name);
      return false;
    }
  }
  if (!shared)
    snprintf(why, SCHED_WHY_MAX, "transpose: output %s reads no tensor of rank %d that %s reads",
             TV(out)->display_name, r, TV(p->out)->display_name);
  return shared;
}

/* The last axis of tv whose extent is not a constant 1; -1 when all are. */
static int tp_last_wide_axis(Val *tv) {
  for (int a = TV(tv)->nlogical - 1; a >= 0; a--) {
    int64_t e;
    if (!ir_scalar_const_value(ID(TV(tv)->logical[a])->extent, &e) || e != 1) return a;
  }
  return -1;
}

/* The contiguous axis of input i: its last of more than one element (an axis of one
 * element moves nothing), unless the call passes it strided with stride 1 on another axis
 * of more than one element (a column-major matrix). Only the speed depends on it:
 * indexing uses the run-time strides whatever is chosen. */
static int tp_inner_axis(cf_fusion *f, const SchedCall *call, int i, int r) {
  const DLTensor *t = call && i < call->ninputs ? call->inputs[i] : NULL;
  int wide = tp_last_wide_axis(f->inputs.items[i]);
  if (wide < 0 || !t || !t->strides || t->ndim != r) return wide;
  for (int a = r - 1; a >= 0; a--)
    if (t->strides[a] == 1 && t->shape[a] > 1) return a;
  return r - 1;
}

/* Marks the inputs that vary along the output's innermost axis (its last of more than one
 * element: a transpose that moves only axes of one element is a copy, the pointwise row's)
 * but whose contiguous axis is another (none when every axis has one element), and checks
 * that they all put it on one output axis p. The others are read in the output's order: a warp reads consecutive elements, or one
 * (an input broadcast along the output's innermost axis). Inputs of lower rank are not
 * staged. */
static bool tp_find_staged(cf_fusion *f, const SchedCall *call, TpPlan *p, const TpMap *m, char *why) {
  int r = p->rank, first = -1, oi = tp_last_wide_axis(p->out);
  p->tile_axis = -1;
  for (int i = 0; i < f->inputs.len; i++) {
    Val *in = f->inputs.items[i];
    const int *im = &m->axis[in->id * r];
    int inner = TV(in)->nlogical == r ? tp_inner_axis(f, call, i, r) : TV(in)->nlogical - 1;
    if (!m->reached[in->id] || TV(in)->nlogical == 0 || oi < 0 || inner < 0 || im[oi] == inner || im[oi] < 0)
      continue;
    if (TV(in)->nlogical != r) {
      snprintf(why, SCHED_WHY_MAX,
               "transpose: %s, broadcast to the rank of %s, is transposed (only inputs of the output's rank are "
               "staged)",
               TV(in)->display_name, TV(p->out)->display_name);
      return false;
    }
    int axis = 0;
    while (im[axis] != inner) axis++;
    if (p->tile_axis >= 0 && axis != p->tile_axis) {
      snprintf(why, SCHED_WHY_MAX, "transpose: %s and %s are transposed along different axes of %s",
               TV((Val *)f->inputs.items[first])->display_name, TV(in)->display_name, TV(p->out)->display_name);
      return false;
    }
    if (first < 0) first = i;
    p->tile_axis = axis;
    p->staged[i] = true;
    p->nstaged++;
  }
  if (p->nstaged == 0)
    snprintf(why, SCHED_WHY_MAX,
             "transpose: no input is transposed: the innermost axis of %s is the innermost axis of every input "
             "(a pointwise fusion)",
             TV(p->out)->display_name);
  return p->nstaged > 0;
}

/* Every output of the reference's rank, no broadcast axis in the inputs and outputs. */
static bool tp_check_ends(cf_fusion *f, const TpPlan *p, char *why) {
  for (int k = 0; k < f->outputs.len; k++) {
    Val *out = f->outputs.items[k];
    if (TV(out)->nlogical != p->rank) {
      snprintf(why, SCHED_WHY_MAX, "transpose: output %s has rank %d, %s has rank %d", TV(out)->display_name,
               TV(out)->nlogical, TV(p->out)->display_name, p->rank);
      return false;
    }
    if (!tp_no_broadcast(out, why)) return false;
  }
  for (int i = 0; i < f->inputs.len; i++)
    if (!tp_no_broadcast(f->inputs.items[i], why)) return false;
  return true;
}

/* blockIdx.x merges the output axes other than p and the innermost with the p tiles;
 * lowering cannot index a broadcast axis in such a merge (see docs/architecture.md). */
static bool tp_check_broadcasts(Arena *a, cf_fusion *f, const TpPlan *p, const TpMap *m, char *why) {
  int n, r = p->rank;
  Expr **ex = ir_fusion_tensor_exprs_in(a, f, &n);
  for (int i = 0; ex && i < n; i++) {
    if (ir_op_kind(ex[i]->op) != OPK_BROADCAST) continue;
    const int *om = &m->axis[ex[i]->out[0]->id * r];
    for (int ax = 0; ax < r - 1; ax++)
      if (ax != p->tile_axis && om[ax] >= 0 && ex[i]->attr.broadcast.is_broadcast[om[ax]]) {
        snprintf(why, SCHED_WHY_MAX,
                 "transpose: %s is broadcast along axis %d of %s, which blockIdx.x merges with the tiles of axis %d",
                 TV(ex[i]->out[0])->display_name, ax, TV(p->out)->display_name, p->tile_axis);
        return false;
      }
  }
  if (!ex) snprintf(why, SCHED_WHY_MAX, "transpose: out of memory");
  return ex != NULL;
}

/* Every broadcast axis is concretized against one exact class (analysis/
 * broadcast_readers.c): everything is inlined into the tile's loops (cf_inline_most), a
 * broadcast into the loops of each reader, so one that two readers concretize against
 * unrelated axes (b [1, N] in transpose(x) [A, N] + b and y [B, N] * b) would join two
 * domains in one loop, which lowering refuses: the row would accept a fusion it cannot
 * schedule (the hostile define-and-run fuzzer's seed 41200614). Refused with the reason;
 * the pointwise row refuses it too, and define and run cuts it finer. */
static bool tp_one_concretization(Arena *a, cf_fusion *f, char *why) {
  AnBroadcastConflict c;
  int found = an_broadcast_conflict(a, f, &c);
  if (found < 0) snprintf(why, SCHED_WHY_MAX, "transpose: out of memory");
  if (found > 0) an_broadcast_conflict_str(&c, "transpose: ", why, SCHED_WHY_MAX);
  return found == 0;
}

static bool tp_plan(Arena *a, cf_fusion *f, const SchedCall *call, TpPlan *p, char *why) {
  if (f->outputs.len == 0) {
    snprintf(why, SCHED_WHY_MAX, "transpose: the fusion has no outputs");
    return false;
  }
  p->out = f->outputs.items[0];
  p->rank = TV(p->out)->nlogical;
  p->nstaged = 0;
  if (p->rank < 2) {
    snprintf(why, SCHED_WHY_MAX, "transpose: %s has rank %d (a transpose needs two axes)", TV(p->out)->display_name,
             p->rank);
    return false;
  }
  TpMap m, mk;
  if (!tp_check_ends(f, p, why) || !tp_trace(a, f, p->out, p->rank, &m, why)) return false;
  for (int k = 1; k < f->outputs.len; k++) {
    Val *out = f->outputs.items[k];
    if (!tp_trace(a, f, out, p->rank, &mk, why) || !tp_join_output(f, p, out, &m, &mk, why)) return false;
  }
  p->staged = ARENA_ARRAY(a, bool, f->inputs.len);
  if (!p->staged) {
    snprintf(why, SCHED_WHY_MAX, "transpose: out of memory");
    return false;
  }
  return tp_find_staged(f, call, p, &m, why) && tp_check_broadcasts(a, f, p, &m, why) &&
         tp_one_concretization(a, f, why);
}

static bool tp_accepts(cf_fusion *f, const SchedCall *call, char *why) {
  Arena *a = arena_create();
  TpPlan p;
  bool ok = a && tp_plan(a, f, call, &p, why);
  if (!a) snprintf(why, SCHED_WHY_MAX, "transpose: out of memory");
  arena_destroy(a);
  return ok;
}

/* out [.., p, .., inner] -> [X (others x p tiles), Y (inner tiles), Tp/8, 8, Ti]. */
static void tp_tile_output(cf_fusion *f, cf_tv *out, int r, int p) {
  cf_reorder(f, out, 1, (int[]){p, r - 2}); /* [others.., p, inner] */
  cf_split(f, out, r - 1, TP_TILE);         /* [others.., p, inner/T, T] */
  cf_split(f, out, r - 2, TP_TILE);         /* [others.., p/T, T, inner/T, T] */
  cf_reorder(f, out, 1, (int[]){r - 1, r}); /* [others.., p/T, inner/T, Tp, Ti] */
  for (int k = 2; k < r; k++) cf_merge(f, out, 0);
  cf_split(f, out, 2, TP_ROWS);             /* [X, Y, Tp/8, 8, Ti] */
}

/* The shared cache of a staged input, propagated as [X, Y, Tp/8, 8, Ti] (Tp its
 * contiguous axis), becomes [X, Y, Ti'/8, 8 (threadIdx.y), Tp' (threadIdx.x)] with
 * (Ti', Tp') the XOR swizzle of (Ti, Tp). */
static void tp_schedule_cache(cf_fusion *f, cf_tv *c) {
  cf_set_memory_type(f, c, CF_MEM_SHARED);
  cf_merge(f, c, 2);                        /* [X, Y, Tp, Ti] */
  cf_reorder(f, c, 1, (int[]){3, 2});       /* [X, Y, Ti, Tp] */
  cf_swizzle_xor(f, c, 2, 3);
  cf_split(f, c, 2, TP_ROWS);               /* [X, Y, Ti/8, 8, Tp] */
  cf_parallelize(f, c, 0, CF_PT_BIDX);
  cf_parallelize(f, c, 1, CF_PT_BIDY);
  cf_parallelize(f, c, 2, CF_PT_UNROLL);
  cf_parallelize(f, c, 3, CF_PT_TIDY);
  cf_parallelize(f, c, 4, CF_PT_TIDX);
}

/* "T0,T3": the staged inputs' names, cut short at SCHED_PARAMS_MAX / 2 bytes. */
static void tp_staged_names(cf_fusion *f, const TpPlan *p, Val **ins, char *names, size_t cap) {
  size_t len = 0;
  names[0] = '\0';
  for (int i = 0; i < f->inputs.len && len < cap; i++)
    if (p->staged[i]) len += (size_t)snprintf(names + len, cap - len, "%s%s", len ? "," : "", TV(ins[i])->display_name);
}

/* "tile=64x64 threads=64x8 swizzle=xor staged=T0,T3". */
static void tp_params(cf_fusion *f, const TpPlan *p, char *params) {
  char names[SCHED_PARAMS_MAX / 2];
  tp_staged_names(f, p, (Val **)f->inputs.items, names, sizeof names);
  snprintf(params, SCHED_PARAMS_MAX, "tile=%dx%d threads=%dx%d swizzle=xor staged=%s", TP_TILE, TP_TILE, TP_TILE,
           TP_ROWS, names);
}

static cf_status tp_schedule_plan(cf_fusion *f, const TpPlan *p) {
  int nin = f->inputs.len;
  cf_tv **caches = ARENA_ARRAY(f->arena, cf_tv *, nin);
  Val **ins = arena_memdup(f->arena, f->inputs.items, sizeof(Val *) * (size_t)nin);
  if (!caches || !ins) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "transpose: out of memory");
  for (int i = 0; i < nin; i++)
    if (p->staged[i]) caches[i] = cf_cache_after(f, ir_tv_handle(ins[i]));
  cf_tv *out = ir_tv_handle(p->out);
  tp_tile_output(f, out, p->rank, p->tile_axis);
  if (f->status || cf_propagate_transforms(f, out)) return f->status;
  /* The caches first: their new axes map to none of the output's, so parallelizing
   * alike afterwards leaves them as they are. */
  for (int i = 0; i < nin; i++)
    if (p->staged[i]) tp_schedule_cache(f, caches[i]);
  static const cf_parallel_type pts[] = {CF_PT_BIDX, CF_PT_BIDY, CF_PT_UNROLL, CF_PT_TIDY, CF_PT_TIDX};
  for (int k = 0; k < 5; k++) cf_parallelize(f, out, k, pts[k]);
  cf_parallelize_all_like(f, out, 5, pts);
  if (f->status) return f->status;
  return cf_inline_most(f);
}

/* ---- as a row of the registry ---------------------------------------------------------- */

static bool tp_row_plan(cf_fusion *f, const SchedCall *call, SchedParams *out, char *why) {
  Arena *a = arena_create();
  TpPlan p;
  bool ok = a && tp_plan(a, f, call, &p, why);
  if (!a) snprintf(why, SCHED_WHY_MAX, "transpose: out of memory");
  *out = (SchedParams){0};
  if (ok) tp_params(f, &p, out->text);
  arena_destroy(a);
  return ok;
}

/* The plan depends on the fusion's structure and the call's strides, not on sizes: it is
 * derived again here, and what was applied is reported for the caller to compare. */
static cf_status tp_row_apply(cf_fusion **pf, const SchedCall *call, const SchedParams *in, SchedParams *used) {
  cf_fusion *f = *pf;
  char why[SCHED_WHY_MAX];
  Arena *a = arena_create();
  TpPlan p;
  (void)in;
  *used = (SchedParams){0};
  if (!a) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "transpose: out of memory");
  cf_status s = CF_OK;
  if (!tp_plan(a, f, call, &p, why)) s = ir_error(f, CF_ERR_UNSUPPORTED, "%s", why);
  else tp_params(f, &p, used->text), s = tp_schedule_plan(f, &p);
  arena_destroy(a);
  return s;
}

const SchedRow sched_transpose_row = {"transpose", SCHED_ROW_KERNEL, false, tp_accepts, tp_row_plan, tp_row_apply};

static cf_status tp_schedule(cf_fusion *f, const SchedCall *call, char *params) {
  SchedParams used;
  cf_status s = tp_row_apply(&f, call, NULL, &used);
  snprintf(params, SCHED_PARAMS_MAX, "%s", used.text);
  return s;
}

const SchedHeuristic sched_transpose_heuristic = {"transpose", tp_accepts, tp_schedule};
