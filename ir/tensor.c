/* ir/tensor.c: making IterDomains and TensorViews, the tensor constructors of the public
 * API (concrete, symbolic, strided) and the read-only inspection calls.
 *
 * Key decision: a TensorView adopts the IterDomains of its logical domain (their `tv`
 * field points back at it), and every domain array is copied into the arena, so callers
 * may pass stack arrays. Size-1 axes of concrete tensors are broadcast axes, as in
 * nvFuser's makeContigConcreteTensor. */
#include <string.h>

#include "ir/checked.h"
#include "ir/dtype.h"
#include "ir/ir.h"

Val *ir_id_new(cf_fusion *f, Val *extent, cf_iter_type type) {
  Val *id = ir_val_new(f, VAL_ID, CF_INT64);
  if (!id) return NULL;
  ID(id)->extent = extent;
  ID(id)->iter_type = type;
  ID(id)->ptype = CF_PT_SERIAL;
  return id;
}

Val *ir_id_clone(cf_fusion *f, Val *id) {
  Val *c = ir_id_new(f, ID(id)->extent, ID(id)->iter_type);
  if (c) ID(c)->ptype = ID(id)->ptype;
  return c;
}

Val *ir_tv_new(cf_fusion *f, cf_dtype dtype, int n, Val *const *logical) {
  Val *tv = ir_val_new(f, VAL_TV, dtype);
  if (!tv) return NULL;
  TensorView *t = TV(tv);
  t->logical = arena_memdup(f->arena, logical, sizeof(Val *) * (size_t)n);
  t->nlogical = t->nroot = t->nloop = n;
  t->root = t->logical;
  t->loop = arena_memdup(f->arena, logical, sizeof(Val *) * (size_t)n);
  t->contiguity = ARENA_ARRAY(f->arena, int8_t, n);
  for (int i = 0; i < n; i++) {
    ID(logical[i])->tv = tv;
    t->contiguity[i] = ID(logical[i])->iter_type == CF_ITER_BROADCAST ? -1 : 1;
  }
  t->mem = CF_MEM_LOCAL;
  t->display_name = arena_printf(f->arena, "T%d", tv->name);
  return tv;
}

Val *ir_tv_like(cf_fusion *f, Val *in, cf_dtype dtype) {
  TensorView *t = TV(in);
  Val **ids = ARENA_ARRAY(f->arena, Val *, t->nlogical);
  int n = 0;
  for (int i = 0; i < t->nlogical; i++) {
    Val *src = t->logical[i];
    if (ID(src)->iter_type == CF_ITER_REDUCTION) continue;
    ids[n] = ir_id_new(f, ID(src)->extent, ID(src)->iter_type);
    if (!ids[n]) return NULL;
    n++;
  }
  return ir_tv_new(f, dtype, n, ids);
}

static bool valid_dtype(cf_dtype d) { return (unsigned)d < CF_DTYPE_COUNT; }

static cf_status check_new_tensor(cf_fusion *f, const char *what, cf_dtype dtype, int rank) {
  if (!f) return CF_ERR_INVALID_ARGUMENT;
  if (f->status) return f->status;
  if (!valid_dtype(dtype))
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "%s: invalid dtype %d", what, (int)dtype);
  if (ir_dtype_is_welford(dtype))
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "%s: %s is the state of a Welford reduction, not an element type "
                    "of inputs (make states with cf_welford)", what, cf_dtype_name(dtype));
  if (rank < 0 || rank > CF_MAX_RANK)
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "%s: rank %d is outside 0..%d", what, rank, CF_MAX_RANK);
  return CF_OK;
}

cf_tv *cf_tensor_concrete(cf_fusion *f, cf_dtype dtype, int rank, const int64_t *sizes) {
  if (check_new_tensor(f, "tensor_concrete", dtype, rank)) return NULL;
  if (rank > 0 && !sizes) {
    ir_error(f, CF_ERR_INVALID_ARGUMENT, "tensor_concrete: sizes is NULL");
    return NULL;
  }
  Val *ids[CF_MAX_RANK] = {0};
  for (int i = 0; i < rank; i++) {
    if (sizes[i] <= 0) {
      ir_error(f, CF_ERR_INVALID_ARGUMENT, "tensor_concrete: size %lld of axis %d is not positive",
               (long long)sizes[i], i);
      return NULL;
    }
    ids[i] = ir_id_new(f, ir_const_int(f, sizes[i]), sizes[i] == 1 ? CF_ITER_BROADCAST : CF_ITER_ITERATION);
  }
  int64_t numel;
  size_t bytes;
  if (!ck_numel(rank, sizes, &numel) || !ck_bytes(numel, cf_dtype_size(dtype), 1, &bytes)) {
    ir_error(f, CF_ERR_INVALID_ARGUMENT, "tensor_concrete: the sizes' product overflows int64 bytes of %s",
             cf_dtype_name(dtype));
    return NULL;
  }
  return ir_tv_handle(ir_tv_new(f, dtype, rank, ids));
}

static Val *symbolic_tensor(cf_fusion *f, cf_dtype dtype, int rank) {
  Val *ids[CF_MAX_RANK] = {0};
  Val *extents[CF_MAX_RANK] = {0};
  for (int i = 0; i < rank; i++) {
    extents[i] = ir_scalar_symbol(f, NULL);
    ids[i] = ir_id_new(f, extents[i], CF_ITER_ITERATION);
  }
  Val *tv = ir_tv_new(f, dtype, rank, ids);
  for (int i = 0; tv && i < rank; i++) {
    SC(extents[i])->input_tv = tv;
    SC(extents[i])->input_axis = i;
  }
  return tv;
}

cf_tv *cf_tensor_symbolic(cf_fusion *f, cf_dtype dtype, int rank) {
  if (check_new_tensor(f, "tensor_symbolic", dtype, rank)) return NULL;
  return ir_tv_handle(symbolic_tensor(f, dtype, rank));
}

cf_tv *cf_tensor_strided(cf_fusion *f, cf_dtype dtype, int rank) {
  if (check_new_tensor(f, "tensor_strided", dtype, rank)) return NULL;
  Val *tv = symbolic_tensor(f, dtype, rank);
  if (!tv) return NULL;
  TensorView *t = TV(tv);
  t->has_strides = true;
  t->strides = ARENA_ARRAY(f->arena, Val *, rank);
  for (int i = 0; i < rank; i++) {
    t->contiguity[i] = 0;
    t->strides[i] = ir_scalar_symbol(f, arena_printf(f->arena, "%s.stride[%d]", t->display_name, i));
    SC(t->strides[i])->input_tv = tv;
    SC(t->strides[i])->input_axis = i;
    SC(t->strides[i])->stride_of = true;
  }
  return ir_tv_handle(tv);
}

const char *cf_tv_name(const cf_tv *t) { return t ? TV(ir_tv(t))->display_name : "(null)"; }
cf_dtype cf_tv_dtype(const cf_tv *t) { return t ? ir_tv(t)->dtype : CF_FLOAT; }
int cf_tv_logical_rank(const cf_tv *t) { return t ? TV(ir_tv(t))->nlogical : 0; }
int cf_tv_naxes(const cf_tv *t) { return t ? TV(ir_tv(t))->nloop : 0; }
cf_memory_type cf_tv_memory_type(const cf_tv *t) { return t ? TV(ir_tv(t))->mem : CF_MEM_LOCAL; }
int cf_tv_compute_at_pos(const cf_tv *t) { return t ? TV(ir_tv(t))->ca_pos : 0; }

cf_id *cf_tv_axis(const cf_tv *t, int i) {
  if (!t) return NULL;
  TensorView *tv = TV(ir_tv(t));
  int a = ir_wrap_axis(i, tv->nloop);
  return a < 0 ? NULL : ir_id_handle(tv->loop[a]);
}

int64_t cf_id_extent(const cf_id *id) {
  int64_t v;
  return id && ir_scalar_const_value(ID(ir_idv(id))->extent, &v) ? v : -1;
}
cf_parallel_type cf_id_parallel_type(const cf_id *id) { return id ? ID(ir_idv(id))->ptype : CF_PT_SERIAL; }
cf_iter_type cf_id_iter_type(const cf_id *id) { return id ? ID(ir_idv(id))->iter_type : CF_ITER_ITERATION; }
