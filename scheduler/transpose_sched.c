/* scheduler/transpose_sched.c: the automatic scheduler of transposes
 * (sched_transpose_heuristic, issue 11), a client of the public scheduling calls.
 * Heuristic, in order:
 *   1. accepts a fusion of elementwise ops and permutes (cf_transpose, cf_permute) with no
 *      broadcast axis, in which some input is transposed: the output's innermost axis is
 *      not that input's contiguous axis (its last, or the stride-1 axis the call passes
 *      for a strided input). Every input is traced to each output (which output axis each
 *      of its axes becomes); the outputs must read the inputs in one order (their axes
 *      correspond; the first is the reference), and the transposed ("staged") inputs
 *      must all have their contiguous axis on one output axis p;
 *   2. the output is tiled on p and its innermost axis, TILE x TILE elements (32 x 32):
 *      [others.., p, inner] -> [blockIdx.x (others x tiles), p-tile{32}, inner-tile{32}],
 *      the p-tile split into [unroll{4}, threadIdx.y{8}], the inner tile on threadIdx.x:
 *      256 threads per block, 4 elements per thread, a warp writes 32 consecutive output
 *      elements (coalesced); propagated to every tensor and parallelized alike;
 *   3. each staged input is cached after, in shared memory (one tile), and that cache's
 *      tile is rescheduled in the input's own order: [inner-tile{32}, p-tile{32}] ->
 *      XOR-swizzled (i, j) -> (i, i ^ j), the first split into [unroll{4}, threadIdx.y{8}],
 *      the second on threadIdx.x: a warp reads 32 consecutive input elements (coalesced,
 *      permuted within the segment). Its allocation is its loop domain, so the swizzle is
 *      the storage layout: the transposed reads (a warp over the tile's rows) hit 32
 *      distinct banks instead of one (padding is not expressible);
 *   4. everything is inlined as deep as legal: up to the block's tile (inlining stops at
 *      the unrolled axis, so each tensor's 4 accesses are issued together), lowering
 *      putting the __syncthreads between the tile's write and its reads. The prologue
 *      runs after the tile, in the output's order (each element computed once); inputs
 *      that are not transposed are read directly in the output's order (coalesced).
 * Non-divisible extents (and symbolic ones) are predicated tiles. Not yet: vectorized
 * accesses, tile sizes from the call's sizes or dtype (a bfloat16 warp moves 64 bytes;
 * tiny transposed extents waste most of a tile), outputs in different axis orders,
 * broadcasts. */
#include <string.h>

#include "scheduler/heuristic.h"
#include "scheduler/sched.h"

enum { TP_TILE = 32, TP_ROWS = 8 };

/* What the analysis found: the reference output (the first), its rank, its axis p that is
 * the staged inputs' innermost axis, and which fusion inputs are staged (by input index). */
typedef struct TpPlan {
  Val *out;
  int rank;
  int tile_axis;
  bool *staged;
  int nstaged;
} TpPlan;

static bool tp_check_tv(Val *tv, int rank, char *why) {
  int nl = TV(tv)->nlogical;
  if (nl != rank && nl != 0) {
    snprintf(why, SCHED_WHY_MAX, "transpose: %s has rank %d, the output has rank %d", TV(tv)->display_name, nl,
             rank);
    return false;
  }
  for (int a = 0; a < nl; a++)
    if (ID(TV(tv)->logical[a])->iter_type == CF_ITER_BROADCAST) {
      snprintf(why, SCHED_WHY_MAX, "transpose: %s has a broadcast axis (a constant extent of 1)",
               TV(tv)->display_name);
      return false;
    }
  return true;
}

/* map[v->id * rank + a]: the axis of tensor v that becomes axis a of output `out` (-1:
 * none). Walks the exprs from the outputs back, through elementwise ops (same axes) and
 * permutes. */
static int *tp_trace(Arena *a, cf_fusion *f, Val *out, int r, char *why) {
  int n;
  Expr **ex = ir_fusion_tensor_exprs_in(a, f, &n);
  int *map = ARENA_ARRAY(a, int, f->vals.len * r);
  if (!ex || !map) {
    snprintf(why, SCHED_WHY_MAX, "transpose: out of memory");
    return NULL;
  }
  for (int i = 0; i < f->vals.len * r; i++) map[i] = -1;
  for (int k = 0; k < r; k++) map[out->id * r + k] = k;
  if (!tp_check_tv(out, r, why)) return NULL;
  for (int i = n - 1; i >= 0; i--) {
    Expr *e = ex[i];
    Val *o = e->out[0];
    bool permute = ir_op_kind(e->op) == OPK_PERMUTE;
    if (!permute && !ir_op_is_elementwise(e->op)) {
      snprintf(why, SCHED_WHY_MAX, "transpose: %s is computed by %s, not an elementwise op or a permute",
               TV(o)->display_name, ir_op_name(e->op));
      return NULL;
    }
    const int *om = &map[o->id * r];
    for (int k = 0; k < e->nin; k++) {
      Val *v = e->in[k];
      if (v->kind != VAL_TV) continue;
      if (!tp_check_tv(v, r, why)) return NULL;
      if (TV(v)->nlogical == 0 || om[0] < 0) continue;
      int *vm = &map[v->id * r];
      for (int ax = 0; ax < r; ax++) {
        int want = permute ? e->attr.permute.perm[om[ax]] : om[ax];
        if (vm[ax] >= 0 && vm[ax] != want) {
          snprintf(why, SCHED_WHY_MAX, "transpose: %s is read in two axis orders", TV(v)->display_name);
          return NULL;
        }
        vm[ax] = want;
      }
    }
  }
  return map;
}

/* Folds the inputs' maps of output k into the reference's (map): every input both read
 * must be read in the same order (output k's axes are the reference's), and output k
 * must read at least one input the reference reads. */
static bool tp_join_output(cf_fusion *f, const TpPlan *p, Val *out, int *map, const int *mk, char *why) {
  int r = p->rank;
  bool shared = false;
  for (int i = 0; i < f->inputs.len; i++) {
    Val *in = f->inputs.items[i];
    int *m0 = &map[in->id * r];
    const int *m1 = &mk[in->id * r];
    if (TV(in)->nlogical == 0 || m1[0] < 0) continue;
    if (m0[0] < 0) {
      for (int ax = 0; ax < r; ax++) m0[ax] = m1[ax];
      continue;
    }
    shared = true;
    if (memcmp(m0, m1, sizeof(int) * (size_t)r)) {
      snprintf(why, SCHED_WHY_MAX, "transpose: outputs %s and %s read %s in different axis orders",
               TV(p->out)->display_name, TV(out)->display_name, TV(in)->display_name);
      return false;
    }
  }
  if (!shared)
    snprintf(why, SCHED_WHY_MAX, "transpose: output %s reads no input that %s reads", TV(out)->display_name,
             TV(p->out)->display_name);
  return shared;
}

/* The contiguous axis of input i: its last, unless the call passes it strided with
 * stride 1 on another axis of more than one element (a column-major matrix). Only the
 * speed depends on it: indexing uses the run-time strides whatever is chosen. */
static int tp_inner_axis(const SchedCall *call, int i, int r) {
  const DLTensor *t = call && i < call->ninputs ? call->inputs[i] : NULL;
  if (!t || !t->strides || t->ndim != r) return r - 1;
  for (int a = r - 1; a >= 0; a--)
    if (t->strides[a] == 1 && t->shape[a] > 1) return a;
  return r - 1;
}

/* Marks the inputs whose contiguous axis is not the output's innermost and checks that
 * they all put it on one output axis. */
static bool tp_find_staged(cf_fusion *f, const SchedCall *call, TpPlan *p, const int *map, char *why) {
  int r = p->rank, first = -1;
  p->tile_axis = -1;
  for (int i = 0; i < f->inputs.len; i++) {
    Val *in = f->inputs.items[i];
    const int *im = &map[in->id * r];
    int inner = tp_inner_axis(call, i, r);
    if (TV(in)->nlogical != r || im[0] < 0 || im[r - 1] == inner) continue;
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
  p->staged = ARENA_ARRAY(a, bool, f->inputs.len);
  int *map = p->staged ? tp_trace(a, f, p->out, p->rank, why) : NULL;
  if (!p->staged) snprintf(why, SCHED_WHY_MAX, "transpose: out of memory");
  for (int k = 1; map && k < f->outputs.len; k++) {
    Val *out = f->outputs.items[k];
    const int *mk = tp_trace(a, f, out, p->rank, why);
    if (!mk || !tp_join_output(f, p, out, map, mk, why)) return false;
  }
  return map && tp_find_staged(f, call, p, map, why);
}

static bool tp_accepts(cf_fusion *f, const SchedCall *call, char *why) {
  Arena *a = arena_create();
  TpPlan p;
  bool ok = a && tp_plan(a, f, call, &p, why);
  if (!a) snprintf(why, SCHED_WHY_MAX, "transpose: out of memory");
  arena_destroy(a);
  return ok;
}

/* out [.., p, .., inner] -> [blockIdx.x, serial{4}, threadIdx.y{8}, threadIdx.x{32}]. */
static void tp_tile_output(cf_fusion *f, cf_tv *out, int r, int p) {
  cf_reorder(f, out, 1, (int[]){p, r - 2}); /* [others.., p, inner] */
  cf_split(f, out, r - 1, TP_TILE);         /* [others.., p, inner/T, T] */
  cf_split(f, out, r - 2, TP_TILE);         /* [others.., p/T, T, inner/T, T] */
  cf_reorder(f, out, 1, (int[]){r - 1, r}); /* [others.., p/T, inner/T, Tp, Ti] */
  for (int k = 1; k < r; k++) cf_merge(f, out, 0);
  cf_split(f, out, 1, TP_ROWS);             /* [B, Tp/8, 8, Ti] */
}

/* The shared cache of a staged input, propagated as [B, Tp/8, 8, Ti] (Tp its innermost
 * axis), becomes [B, Ti'/8, 8 (threadIdx.y), Tp' (threadIdx.x)] with (Ti', Tp') the XOR
 * swizzle of (Ti, Tp). */
static void tp_schedule_cache(cf_fusion *f, cf_tv *c) {
  cf_set_memory_type(f, c, CF_MEM_SHARED);
  cf_merge(f, c, 1);                        /* [B, Tp, Ti] */
  cf_reorder(f, c, 1, (int[]){2, 1});       /* [B, Ti, Tp] */
  cf_swizzle_xor(f, c, 1, 2);
  cf_split(f, c, 1, TP_ROWS);               /* [B, Ti/8, 8, Tp] */
  cf_parallelize(f, c, 0, CF_PT_BIDX);
  cf_parallelize(f, c, 1, CF_PT_UNROLL);
  cf_parallelize(f, c, 2, CF_PT_TIDY);
  cf_parallelize(f, c, 3, CF_PT_TIDX);
}

/* "T0,T3": the staged inputs' names, cut short at SCHED_PARAMS_MAX / 2 bytes. */
static void tp_staged_names(cf_fusion *f, const TpPlan *p, Val **ins, char *names, size_t cap) {
  size_t len = 0;
  names[0] = '\0';
  for (int i = 0; i < f->inputs.len && len < cap; i++)
    if (p->staged[i]) len += (size_t)snprintf(names + len, cap - len, "%s%s", len ? "," : "", TV(ins[i])->display_name);
}

static cf_status tp_schedule_plan(cf_fusion *f, const TpPlan *p, char *params) {
  int nin = f->inputs.len;
  cf_tv **caches = ARENA_ARRAY(f->arena, cf_tv *, nin);
  Val **ins = arena_memdup(f->arena, f->inputs.items, sizeof(Val *) * (size_t)nin);
  if (!caches || !ins) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "transpose: out of memory");
  char names[SCHED_PARAMS_MAX / 2];
  tp_staged_names(f, p, ins, names, sizeof names);
  snprintf(params, SCHED_PARAMS_MAX, "tile=%dx%d threads=%dx%d swizzle=xor staged=%s", TP_TILE, TP_TILE, TP_TILE,
           TP_ROWS, names);
  for (int i = 0; i < nin; i++)
    if (p->staged[i]) caches[i] = cf_cache_after(f, ir_tv_handle(ins[i]));
  cf_tv *out = ir_tv_handle(p->out);
  tp_tile_output(f, out, p->rank, p->tile_axis);
  if (f->status || cf_propagate_transforms(f, out)) return f->status;
  /* The caches first: their new axes map to none of the output's, so parallelizing
   * alike afterwards leaves them as they are. */
  for (int i = 0; i < nin; i++)
    if (p->staged[i]) tp_schedule_cache(f, caches[i]);
  cf_parallelize(f, out, 0, CF_PT_BIDX);
  cf_parallelize(f, out, 1, CF_PT_UNROLL);
  cf_parallelize(f, out, 2, CF_PT_TIDY);
  cf_parallelize(f, out, 3, CF_PT_TIDX);
  cf_parallelize_all_like(f, out, 4, (cf_parallel_type[]){CF_PT_BIDX, CF_PT_UNROLL, CF_PT_TIDY, CF_PT_TIDX});
  if (f->status) return f->status;
  return cf_inline_most(f);
}

static cf_status tp_schedule(cf_fusion *f, const SchedCall *call, char *params) {
  char why[SCHED_WHY_MAX];
  Arena *a = arena_create();
  TpPlan p;
  if (!a) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "transpose: out of memory");
  cf_status s = tp_plan(a, f, call, &p, why) ? tp_schedule_plan(f, &p, params) : ir_error(f, CF_ERR_UNSUPPORTED, "%s", why);
  arena_destroy(a);
  return s;
}

const SchedHeuristic sched_transpose_heuristic = {"transpose", tp_accepts, tp_schedule};
