/* lower/tensors.c: the tensors pass. Makes the kernel's tensors: a parameter for each fusion input
 * and output, an allocation for each intermediate, and decides which axes of each
 * intermediate are allocated (the allocation rule of DESIGN.md section 5):
 *   1. axes on a parallel type across which the memory is distributed are not allocated
 *      (Local across TID/BID/DID; Shared and Tensor across BID/DID);
 *   2. axes on a parallel type across which the memory is shared are always allocated
 *      (Shared and Tensor across TID);
 *   3. otherwise axes right of the compute-at position are allocated, those left of it
 *      are not; broadcast, reduction and extent-1 axes never are.
 * Requires: c->tvs, c->model.exact. Establishes: TvInfo (kernel tensor, allocation domain,
 * allocated flags, strides) for every TensorView; c->k->params and c->k->allocs.
 * Key decision: an intermediate's allocation domain is its loop domain unless the user
 * set one; strides are row-major over the allocated axes (per side of the dim-sep
 * position for tensor memory), so indexing needs no other layout knowledge. */
#include <string.h>

#include "lower/lower.h"


/* Is `id` (an allocation axis of tv) one of tv's loop axes left of its compute-at
 * position? By identity, or through the exact map for allocation domains set apart. */
static bool left_of_ca(LowerCtx *c, Val *tv, Val *id) {
  TensorView *t = TV(tv);
  for (int i = 0; i < t->ca_pos; i++)
    if (t->loop[i] == id || an_idmap_same(c->model.exact, t->loop[i], id)) return true;
  return false;
}

/* left: the axis lies left of tv's compute-at position (the loop runs around tv's consumers
 * too): allocated only where the memory is shared across the loop's parallel type. */
static bool is_allocated(LowerCtx *c, Val *tv, Val *id, bool left) {
  IterDomain *d = ID(id);
  int64_t e;
  if (d->iter_type != CF_ITER_ITERATION) return false;
  if (ir_scalar_const_value(d->extent, &e) && e == 1) return false;
  cf_memory_type m = TV(tv)->mem;
  cf_parallel_type p = lower_ptype(c, id); /* a serial axis in a parallel loop runs on it */
  if (ir_mem_distributed_across(m, p)) return false;
  if (ir_mem_shared_across(m, p)) return true;
  return !left;
}

/* An intermediate's default allocation domain: its loop domain, with each axis left of
 * the compute-at position that a promoted loop iterates replaced by the IterDomain the
 * loop runs over (analysis/loop_model.c's promotion). Such an axis is allocated only when
 * the memory is shared across its parallel type, one slot per thread (or block): the
 * loop's extent counts the slots and the loop's index picks one (lower/index.c), so each
 * thread writes and reads its own. The tensor's own axis may count fewer positions (a
 * broadcast merged before the split), and its logical index repeats across threads: slots
 * from it would be written by several threads at once. A broadcast axis stays: the value
 * is the same at every position of the loop, one slot holds it for all. */
static void default_alloc_domain(LowerCtx *c, Val *tv, TvInfo *ti) {
  TensorView *t = TV(tv);
  ti->nalloc_ids = t->nloop;
  ti->alloc_ids = ARENA_ARRAY(c->a, Val *, t->nloop);
  for (int i = 0; i < t->nloop; i++) {
    Val *id = t->loop[i];
    bool promoted = i < t->ca_pos && ID(id)->iter_type == CF_ITER_ITERATION && an_promoting_tensor(&c->model, tv, i);
    ti->alloc_ids[i] = promoted ? an_promoted(&c->model, id) : id;
  }
}

static KTensor *new_tensor(LowerCtx *c, Val *tv) {
  KTensor *kt = ARENA_NEW(c->a, KTensor);
  kt->name = arena_strdup(c->a, TV(tv)->display_name); /* the kernel outlives the fusion */
  kt->fusion_tv_name = tv->name;
  kt->mem = TV(tv)->mem;
  kt->dtype = tv->dtype;
  kt->param = -1;
  kt->tmem_region = -1;
  return kt;
}

/* Row-major strides over the allocated axes in [lo, hi); returns their extent product. */
static KExpr *row_major(LowerCtx *c, TvInfo *ti, int lo, int hi) {
  KExpr *stride = kx_const(c->a, 1);
  for (int i = hi - 1; i >= lo; i--) {
    if (!ti->allocated[i]) continue;
    ti->strides[i] = stride;
    stride = kx_bin(c->a, OP_MUL, stride, lower_extent(c, ti->alloc_ids[i]));
  }
  return stride;
}

static void make_allocation(LowerCtx *c, Val *tv) {
  TvInfo *ti = lower_info(c, tv);
  TensorView *t = TV(tv);
  ti->kt = new_tensor(c, tv);
  if (t->alloc) {
    ti->alloc_ids = t->alloc;
    ti->nalloc_ids = t->nalloc;
  } else {
    default_alloc_domain(c, tv, ti);
  }
  ti->allocated = ARENA_ARRAY(c->a, bool, ti->nalloc_ids);
  ti->strides = ARENA_ARRAY(c->a, KExpr *, ti->nalloc_ids);
  for (int i = 0; i < ti->nalloc_ids; i++)
    ti->allocated[i] = is_allocated(c, tv, ti->alloc_ids[i], t->alloc ? left_of_ca(c, tv, ti->alloc_ids[i]) : i < t->ca_pos);
  ti->is_tmem = t->mem == CF_MEM_TENSOR;
  if (ti->is_tmem) {
    ti->dim_sep = t->tmem_dim_sep;
    KExpr *lanes = row_major(c, ti, 0, ti->dim_sep);
    KExpr *cols = row_major(c, ti, ti->dim_sep, ti->nalloc_ids);
    ti->kt->size = kx_bin(c->a, OP_MUL, lanes, cols);
  } else {
    ti->kt->size = row_major(c, ti, 0, ti->nalloc_ids);
  }
  if (t->mem == CF_MEM_LOCAL && !kx_is_const(ti->kt->size, NULL))
    lower_fail(c, CF_ERR_UNSUPPORTED, "compile: %s in local memory has a symbolic size; registers need a constant "
               "size (inline it deeper or split by a constant)", t->display_name);
}

/* The logical axes a global tensor has in memory: all but reduction axes. */
static Val **memory_axes(LowerCtx *c, Val *tv, int *n) {
  TensorView *t = TV(tv);
  Val **ids = ARENA_ARRAY(c->a, Val *, t->nlogical);
  *n = 0;
  for (int i = 0; i < t->nlogical; i++)
    if (ID(t->logical[i])->iter_type != CF_ITER_REDUCTION) ids[(*n)++] = t->logical[i];
  return ids;
}

/* Global tensors: logical axes with the strides of the run-time tensor, folded to
 * constants when the tensor is contiguous with constant sizes. */
static void make_param(LowerCtx *c, Val *tv, int param, bool is_output) {
  TvInfo *ti = lower_info(c, tv);
  TensorView *t = TV(tv);
  KTensor *kt = ti->kt = new_tensor(c, tv);
  int n;
  Val **ids = memory_axes(c, tv, &n);
  kt->param = param;
  kt->is_output = is_output;
  kt->rank = kt->alloc_rank = n;
  ti->alloc_ids = ids;
  ti->nalloc_ids = n;
  ti->allocated = ARENA_ARRAY(c->a, bool, n);
  ti->strides = ARENA_ARRAY(c->a, KExpr *, n);
  kt->extents = ARENA_ARRAY(c->a, KExpr *, n);
  kt->broadcast = ARENA_ARRAY(c->a, bool, n);
  kt->contiguous = !t->has_strides;
  for (int i = 0; i < n; i++) {
    kt->extents[i] = lower_extent(c, ids[i]);
    kt->broadcast[i] = ID(ids[i])->iter_type == CF_ITER_BROADCAST;
  }
  for (int i = 0; i < t->nlogical; i++)
    if (t->contiguity[i] == 0) kt->contiguous = false;
  bool constant = kt->contiguous;
  for (int i = 0; i < n; i++)
    if (!ir_scalar_is_const(ID(ids[i])->extent)) constant = false;
  KExpr *stride = kx_const(c->a, 1);
  for (int i = n - 1; i >= 0; i--) {
    ti->allocated[i] = !kt->broadcast[i];
    ti->strides[i] = constant ? stride : kx_param_stride(c->a, param, i);
    if (ti->allocated[i]) stride = kx_bin(c->a, OP_MUL, stride, lower_extent(c, ids[i]));
  }
}

/* 32-bit indexing when every parameter has constant sizes with fewer than 2^31 elements
 * and is contiguous. A tensor of arbitrary strides (cf_tensor_strided) may span any
 * range of offsets, negative ones included (a NumPy x[::-1] view): its offsets are only
 * known at run time, so its kernel indexes in 64 bits (in 32, an unsigned thread index
 * times a negative stride is a huge unsigned offset, and a large stride overflows). */
static bool fits_int32(const KKernel *k) {
  for (int i = 0; i < k->nparams; i++) {
    int64_t numel = 1, e;
    if (!k->params[i]->contiguous) return false;
    for (int a = 0; a < k->params[i]->rank; a++) {
      if (!kx_is_const(k->params[i]->extents[a], &e)) return false;
      numel *= e;
      if (numel >= ((int64_t)1 << 31)) return false;
    }
  }
  return true;
}

static bool global_intermediate(cf_fusion *f, Val *tv) {
  return !ir_tv_is_input(f, tv) && !ir_tv_is_output(f, tv) && TV(tv)->mem == CF_MEM_GLOBAL;
}

/* Parameters: the inputs, the outputs, then the intermediates in global memory, whole
 * tensors the executor allocates for the run like an output it does not return (a
 * workspace; nvFuser's global buffers). */
void lower_tensors(LowerCtx *c) {
  cf_fusion *f = c->f;
  KKernel *k = c->k;
  int nglobal = 0;
  for (int t = 0; t < c->ntvs; t++) nglobal += global_intermediate(f, c->tvs[t]);
  k->nparams = f->inputs.len + f->outputs.len + nglobal;
  k->params = ARENA_ARRAY(c->a, KTensor *, k->nparams);
  k->param_names = ARENA_ARRAY(c->a, const char *, k->nparams);
  for (int i = 0; i < f->inputs.len; i++) {
    make_param(c, f->inputs.items[i], i, false);
    k->params[i] = lower_info(c, f->inputs.items[i])->kt;
  }
  for (int i = 0; i < f->outputs.len; i++) {
    int p = f->inputs.len + i;
    make_param(c, f->outputs.items[i], p, true);
    k->params[p] = lower_info(c, f->outputs.items[i])->kt;
  }
  int p = f->inputs.len + f->outputs.len;
  for (int t = 0; t < c->ntvs; t++) {
    if (!global_intermediate(f, c->tvs[t])) continue;
    make_param(c, c->tvs[t], p, false);
    lower_info(c, c->tvs[t])->kt->is_workspace = true;
    k->params[p++] = lower_info(c, c->tvs[t])->kt;
  }
  PtrVec allocs = {0};
  for (int t = 0; t < c->ntvs; t++) {
    Val *tv = c->tvs[t];
    if (ir_tv_is_input(f, tv) || ir_tv_is_output(f, tv) || global_intermediate(f, tv)) continue;
    make_allocation(c, tv);
    ptrvec_push(c->a, &allocs, lower_info(c, tv)->kt);
  }
  k->allocs = (KTensor **)allocs.items;
  k->nallocs = allocs.len;
  for (int i = 0; i < k->nparams; i++) k->param_names[i] = k->params[i]->name;
  k->name = "cfuser_kernel";
  bool proved = fits_int32(k);
  k->index32 = c->opts->index_type == CF_INDEX_32 || (c->opts->index_type == CF_INDEX_AUTO && proved);
  k->index32_checked = k->index32 && !proved;
  k->signed_coords = k->index32 && f->signed_coords; /* the schedule's choice (cf_fusion.signed_coords) */
  k->planned_blocks_per_sm = f->blocks_per_sm;
  for (int i = 0; k->index32 && i < k->nparams; i++) k->signed_coords |= !k->params[i]->contiguous;
}
