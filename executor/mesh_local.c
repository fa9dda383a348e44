/* executor/mesh_local.c: what one device sees of a sharded fusion: the lines of devices
 * a collective runs over, local extents, the local fusion of a compute segment, and the
 * shard of a host tensor (cf_shard_tensor).
 *
 * A segment's local fusion is a copy of its expressions (ir_fusion_copy_part) whose
 * sharded axes get the local extent N/D. The layout of each tensor in the segment is
 * the one its inputs are read in, carried forward through the pairwise map (inside a
 * segment no tensor changes layout, by construction of the plan), so a reduction's
 * sharded reduction axis shrinks with its operand and the reduced partials stay local.
 * Key decision: constants derived from global extents (a mean's 1/N) stay global; they
 * are applied after the collectives that complete the sums they divide. */
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "executor/mesh.h"

int mesh_team(const cf_device_mesh *m, int dim, int device, int *team, int *pos) {
  int idx = cf_device_mesh_index(m, device);
  if (idx < 0) return 0;
  if (dim < 0 || m->ndims == 1) {
    int n = cf_device_mesh_size(m);
    for (int i = 0; i < n; i++) team[i] = m->devices[i];
    *pos = idx;
    return n;
  }
  int inner = m->shape[1], row = idx / inner, col = idx % inner;
  int n = m->shape[dim];
  for (int i = 0; i < n; i++) team[i] = dim == 0 ? m->devices[i * inner + col] : m->devices[row * inner + i];
  *pos = dim == 0 ? row : col;
  return n;
}

int64_t mesh_local_extent(const MeshValue *v, int a) {
  int64_t ext = 1;
  ir_scalar_const_value(ID(TV(v->tv)->logical[a])->extent, &ext);
  return v->dim[a] >= 0 ? ext / an_mesh_axis_size(v->mesh, v->dim[a]) : ext;
}

static int pos_of(const Val *tv, const Val *id) {
  for (int a = 0; a < TV((Val *)tv)->nlogical; a++)
    if (TV((Val *)tv)->logical[a] == id) return a;
  return -1;
}

/* The layout of each computed tensor: its operands' layouts through the pairwise map. */
static void carry_layout(int8_t (*lay)[CF_MAX_RANK], const Expr *e) {
  Val *c = e->out[0];
  memset(lay[c->id], -1, CF_MAX_RANK);
  for (int j = e->nin - 1; j >= 0; j--) {
    Val *p = e->in[j], *pids[CF_MAX_RANK], *cids[CF_MAX_RANK];
    if (p->kind != VAL_TV) continue;
    int n = an_shard_pairs(p, c, pids, cids);
    for (int k = 0; k < n; k++) {
      int pa = pos_of(p, pids[k]), ca = pos_of(c, cids[k]);
      if (pa >= 0 && ca >= 0 && lay[p->id][pa] >= 0 && ID(cids[k])->iter_type != CF_ITER_BROADCAST)
        lay[c->id][ca] = lay[p->id][pa];
    }
  }
}

/* Gives every copied axis of tv sharded in `lay` its local extent. */
static void shrink(cf_fusion *g, Val *const *map, const Val *tv, const int8_t *lay, const cf_device_mesh *m) {
  for (int a = 0; a < TV((Val *)tv)->nlogical; a++) {
    Val *id = TV((Val *)tv)->logical[a], *copy = map[id->id];
    int64_t ext;
    if (lay[a] < 0 || !copy || !ir_scalar_const_value(ID(id)->extent, &ext)) continue;
    int d = an_mesh_axis_size(m, lay[a]);
    if (ext % d) {
      ir_error_tv(g, CF_ERR_INVALID_ARGUMENT, (Val *)tv,
                  "mesh: logical axis %d of extent %lld is sharded over %d devices, which do not divide it", a,
                  (long long)ext, d);
      return;
    }
    ID(copy)->extent = ir_const_int(g, ext / d);
  }
}

cf_fusion *mesh_local_fusion(const MeshPlan *p, int nexprs, Expr *const *exprs, int nin, const int *in, int nout,
                             const int *out) {
  cf_fusion *f = p->global;
  Val **ins = calloc((size_t)nin + 1, sizeof(Val *)), **outs = calloc((size_t)nout + 1, sizeof(Val *));
  Val **map = calloc((size_t)f->vals.len + 1, sizeof(Val *));
  int8_t (*lay)[CF_MAX_RANK] = malloc(sizeof *lay * (size_t)(f->vals.len + 1));
  cf_fusion *g = NULL;
  if (ins && outs && map && lay) {
    for (int i = 0; i < nin; i++) ins[i] = p->values[in[i]].tv;
    for (int i = 0; i < nout; i++) outs[i] = p->values[out[i]].tv;
    g = ir_fusion_copy_part(f, nexprs, exprs, nin, ins, nout, outs, NULL, map);
  }
  const cf_device_mesh *m = nin ? p->values[in[0]].mesh : nout ? p->values[out[0]].mesh : NULL;
  if (g && !g->status) {
    for (int i = 0; i < nin; i++) memcpy(lay[ins[i]->id], p->values[in[i]].dim, CF_MAX_RANK);
    for (int i = 0; i < nexprs; i++) carry_layout(lay, exprs[i]);
    for (int i = 0; i < nin && !g->status; i++) shrink(g, map, ins[i], lay[ins[i]->id], m);
    for (int i = 0; i < nexprs && !g->status; i++) shrink(g, map, exprs[i]->out[0], lay[exprs[i]->out[0]->id], m);
  }
  free(ins);
  free(outs);
  free(map);
  free(lay);
  return g;
}

/* ---- cf_shard_tensor ------------------------------------------------------------------ */

bool mesh_contiguous(const DLTensor *t) {
  int64_t st = 1;
  for (int a = t->ndim - 1; a >= 0 && t->strides; a--) {
    if (t->shape[a] != 1 && t->strides[a] != st) return false;
    st *= t->shape[a];
  }
  return true;
}

/* Slices one sharded axis of *cur (contiguous, sizes[]) to device's block. */
static DLManagedTensor *slice_axis(DLManagedTensor *cur, const void *data, cf_dtype dt, int rank, int64_t *sizes,
                                   int a, int k, int d) {
  int64_t outer = 1, inner = 1, n = sizes[a];
  for (int i = 0; i < a; i++) outer *= sizes[i];
  for (int i = a + 1; i < rank; i++) inner *= sizes[i];
  sizes[a] = n / d;
  DLManagedTensor *next = cf_tensor_host(dt, rank, sizes);
  if (next) mesh_copy_block(next->dl_tensor.data, data, outer, n, inner, cf_dtype_size(dt), k, d, false);
  cf_tensor_free(cur);
  return next;
}

cf_status cf_shard_tensor(cf_fusion *f, cf_tv *tv, const DLTensor *global, int device, DLManagedTensor **local) {
  if (ir_check_tv(f, "shard_tensor", tv)) return f ? f->status : CF_ERR_INVALID_ARGUMENT;
  if (!local || !global || global->device.device_type != kDLCPU || !mesh_contiguous(global))
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "shard_tensor: the tensor is NULL or not a contiguous host tensor");
  *local = NULL;
  AnShardings s;
  if (an_shardings_compute(f, &s)) return f->status;
  Val *t = ir_tv(tv);
  const cf_device_mesh *m = an_sharding_of(&s, t)->mesh;
  int8_t dim[CF_MAX_RANK];
  int rank = 0;
  for (int a = 0; a < TV(t)->nlogical; a++)
    if (ID(TV(t)->logical[a])->iter_type != CF_ITER_REDUCTION) dim[rank++] = an_sharding_of(&s, t)->dim[a];
  an_shardings_free(&s);
  if (m && cf_device_mesh_index(m, device) < 0)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, t, "shard_tensor: device %d is not in the tensor's mesh", device);
  if (rank != global->ndim || global->dtype.bits != 8 * cf_dtype_size(t->dtype))
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, t, "shard_tensor: the host tensor has %d axes of %d bits, not %d of %d",
                       global->ndim, global->dtype.bits, rank, (int)(8 * cf_dtype_size(t->dtype)));
  int64_t sizes[CF_MAX_RANK];
  for (int a = 0; a < rank; a++) sizes[a] = global->shape[a];
  DLManagedTensor *cur = cf_tensor_host(t->dtype, rank, sizes);
  if (!cur) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "shard_tensor: out of memory");
  memcpy(cur->dl_tensor.data, (char *)global->data + global->byte_offset,
         (size_t)cf_tensor_numel(global) * cf_dtype_size(t->dtype));
  for (int a = 0; a < rank && cur; a++) {
    if (dim[a] < 0) continue;
    int team[CF_MESH_MAX_DEVICES], pos = 0, d = mesh_team(m, dim[a], device, team, &pos);
    if (sizes[a] % d) {
      cf_tensor_free(cur);
      return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, t, "shard_tensor: axis %d of size %lld is not divisible by %d",
                         a, (long long)sizes[a], d);
    }
    cur = slice_axis(cur, cur->dl_tensor.data, t->dtype, rank, sizes, a, pos, d);
  }
  if (!cur) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "shard_tensor: out of memory");
  *local = cur;
  return CF_OK;
}
