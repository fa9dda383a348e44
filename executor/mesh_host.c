/* executor/mesh_host.c: the host mesh. Runs a multi-device plan for N simulated devices
 * in one process: each compute segment once per device of its mesh through its
 * define-and-run cache, each communication over host memory with NCCL's semantics
 * (allgather concatenates the line's blocks in line order, reduce-scatter leaves device k
 * block k of the reduction, broadcast copies the root's buffer).
 *
 * Key decision: a loop over devices, step by step, rather than a thread per device: a
 * step sees every device's buffers at once, so a collective is a plain function of them
 * and the run is deterministic; what it cannot show (a device that stops half-way) is
 * the NCCL executor's failure model, tested there. Reductions across devices combine in
 * double and round once to the element type, in line order. Every buffer a run makes
 * (segment outputs, communication results, a reduction's scratch) is kept in the
 * executor's state (mesh_state.c) for the next run; the outputs are copied out, so a run
 * in the steady state allocates only what it returns. An in-place allreduce (the plan's
 * rule) writes the line's result over each device's partials, as NCCL's does. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "executor/mesh.h"

void mesh_copy_block(void *dst, const void *src, int64_t outer, int64_t n, int64_t inner, size_t es, int k, int d,
                     bool gather) {
  int64_t b = n / d;
  size_t row = (size_t)(b * inner) * es;
  for (int64_t o = 0; o < outer; o++) {
    char *full = (char *)(gather ? dst : (void *)(uintptr_t)src) + (size_t)((o * n + k * b) * inner) * es;
    char *blk = (char *)(gather ? (void *)(uintptr_t)src : dst) + (size_t)o * row;
    if (gather) memcpy(full, blk, row);
    else memcpy(blk, full, row);
  }
}

typedef struct HostRun {
  MeshState *s;
  const MeshPlan *p;
  int ndev;
  const DLTensor **view; /* [value * ndev + device]: s->view */
  char err[512];
} HostRun;

static DLManagedTensor *host_alloc(void *ctx, cf_dtype dt, int rank, const int64_t *sizes, char *err, size_t errlen) {
  (void)ctx;
  DLManagedTensor *t = cf_tensor_host(dt, rank, sizes);
  if (!t) snprintf(err, errlen, "mesh: out of memory");
  return t;
}

static cf_status fail(HostRun *r, cf_status st, const char *msg) {
  snprintf(r->err, sizeof r->err, "%s", msg);
  return st;
}

/* The buffer axis of logical axis a (reduction axes are not stored). */
static int buf_axis(const Val *tv, int a) {
  int k = 0;
  for (int i = 0; i < a; i++) k += ID(TV((Val *)tv)->logical[i])->iter_type != CF_ITER_REDUCTION;
  return k;
}

static void split_at(const DLTensor *t, int axis, int64_t *outer, int64_t *inner) {
  *outer = *inner = 1;
  for (int i = 0; i < axis; i++) *outer *= t->shape[i];
  for (int i = axis + 1; i < t->ndim; i++) *inner *= t->shape[i];
}

/* The kept buffer of (value, dev) in the value's local shape, now its view. */
static DLManagedTensor *new_value(HostRun *r, int value, int dev) {
  DLManagedTensor *m = mesh_state_kept(r->s, value, dev, host_alloc, NULL, r->err, sizeof r->err);
  if (m) r->view[value * r->ndev + dev] = &m->dl_tensor;
  return m;
}

/* A host tensor over the run's scratch, of src's dtype (es bytes) and shape (NULL: out
 * of memory). */
static DLTensor *scratch_like(HostRun *r, const DLTensor *src, size_t es, DLTensor *t) {
  *t = *src;
  t->strides = NULL;
  t->byte_offset = 0;
  t->data = mesh_state_scratch(r->s, (size_t)cf_tensor_numel(src) * es, host_alloc, NULL, r->err, sizeof r->err);
  return t->data ? t : NULL;
}

static double get(const DLTensor *t, int64_t i) { return cf_tensor_get(t, i); }

static bool put(DLTensor *t, int64_t i, double v) {
  switch (t->dtype.code * 1000 + t->dtype.bits) {
  case kDLFloat * 1000 + 32: ((float *)t->data)[i] = (float)v; return true;
  case kDLFloat * 1000 + 64: ((double *)t->data)[i] = v; return true;
  case kDLInt * 1000 + 32: ((int32_t *)t->data)[i] = (int32_t)v; return true;
  case kDLInt * 1000 + 64: ((int64_t *)t->data)[i] = (int64_t)v; return true;
  default: return false;
  }
}

static double combine(IrOp op, double a, double b) {
  if (op == OP_PROD) return a * b;
  if (op == OP_MAX_REDUCE) return isnan(a) || a > b ? a : b;
  if (op == OP_MIN_REDUCE) return isnan(a) || a < b ? a : b;
  return a + b;
}

/* dst = the reduction of the line's src buffers, element by element. */
static cf_status reduce_line(HostRun *r, const MeshComm *c, const int *team, int n, DLTensor *dst) {
  int64_t numel = cf_tensor_numel(dst);
  for (int64_t i = 0; i < numel; i++) {
    double acc = get(r->view[c->src * r->ndev + team[0]], i);
    for (int j = 1; j < n; j++) acc = combine(c->redop, acc, get(r->view[c->src * r->ndev + team[j]], i));
    if (!put(dst, i, acc)) return fail(r, CF_ERR_UNSUPPORTED, "mesh: reductions across devices take float, double, int "
                                                              "and int64 tensors");
  }
  return CF_OK;
}

/* An allreduce over the line's buffers, in place: the device first in the line (the
 * run visits devices in mesh order) reduces into the scratch and copies the result over
 * every member's partials; each member's result is its own buffer. */
static cf_status allreduce_in_place(HostRun *r, const MeshComm *c, const int *team, int n, int pos, int dev,
                                    const DLTensor *src, size_t es) {
  if (pos == 0) {
    DLTensor t;
    if (!scratch_like(r, src, es, &t)) return CF_ERR_OUT_OF_MEMORY;
    cf_status st = reduce_line(r, c, team, n, &t);
    for (int j = 0; !st && j < n; j++)
      memcpy(r->view[c->src * r->ndev + team[j]]->data, t.data, (size_t)cf_tensor_numel(src) * es);
    if (st) return st;
  }
  r->view[c->dst * r->ndev + dev] = src;
  return CF_OK;
}

static cf_status comm_on(HostRun *r, const MeshComm *c, int dev) {
  const MeshValue *sv = &r->p->values[c->src];
  int team[CF_MESH_MAX_DEVICES], pos = 0;
  int n = mesh_team(sv->mesh, c->dim, c->kind == MC_BROADCAST || c->kind == MC_SEND_RECV ? c->root : dev, team, &pos);
  const DLTensor *src = r->view[c->src * r->ndev + (c->kind == MC_BROADCAST || c->kind == MC_SEND_RECV ? c->root : dev)];
  if (!src || !mesh_contiguous(src))
    return snprintf(r->err, sizeof r->err, "mesh: device %d has %s shard of %s", dev, src ? "a non-contiguous" : "no",
                    TV(sv->tv)->display_name),
           src ? CF_ERR_UNSUPPORTED : CF_ERR_INVALID_ARGUMENT;
  int axis = c->axis >= 0 ? buf_axis(sv->tv, c->axis) : -1;
  int64_t outer = 1, inner = 1, ext = axis >= 0 ? src->shape[axis] : 0;
  size_t es = cf_dtype_size(sv->tv->dtype);
  if (axis >= 0) split_at(src, axis, &outer, &inner);
  DLManagedTensor *m = NULL;
  switch (c->kind) {
  case MC_ALLGATHER:
    if (!(m = new_value(r, c->dst, dev))) break;
    for (int j = 0; j < n; j++)
      mesh_copy_block(m->dl_tensor.data, r->view[c->src * r->ndev + team[j]]->data, outer, ext * n, inner, es, j, n, true);
    return CF_OK;
  case MC_SLICE:
    if (!(m = new_value(r, c->dst, dev))) break;
    mesh_copy_block(m->dl_tensor.data, src->data, outer, ext, inner, es, pos, n, false);
    return CF_OK;
  case MC_ALLREDUCE:
    if (c->in_place) return allreduce_in_place(r, c, team, n, pos, dev, src, es);
    if (!(m = new_value(r, c->dst, dev))) break;
    return reduce_line(r, c, team, n, &m->dl_tensor);
  case MC_REDUCE_SCATTER: {
    DLTensor full;
    cf_status st = scratch_like(r, src, es, &full) ? reduce_line(r, c, team, n, &full) : CF_ERR_OUT_OF_MEMORY;
    if (!st && (m = new_value(r, c->dst, dev)))
      mesh_copy_block(m->dl_tensor.data, full.data, outer, ext, inner, es, pos, n, false);
    if (st) return st;
    break;
  }
  case MC_BROADCAST:
  case MC_SEND_RECV:
    if (!(m = new_value(r, c->dst, dev))) break;
    memcpy(m->dl_tensor.data, src->data, (size_t)cf_tensor_numel(src) * es);
    return CF_OK;
  default: return fail(r, CF_ERR_INTERNAL, "mesh: internal error: an unknown communication");
  }
  return m ? CF_OK : CF_ERR_OUT_OF_MEMORY;
}

static cf_status segment_on(HostRun *r, const MeshSegment *s, int dev) {
  const DLTensor *ins[64];
  DLManagedTensor *outs[64] = {0};
  if (s->nin > 64 || s->nout > 64) return fail(r, CF_ERR_UNSUPPORTED, "mesh: a segment has more than 64 tensors");
  for (int k = 0; k < s->nin; k++)
    if (!(ins[k] = r->view[s->in[k] * r->ndev + dev]))
      return snprintf(r->err, sizeof r->err, "mesh: device %d has no shard of %s", dev,
                      TV(r->p->values[s->in[k]].tv)->display_name),
             CF_ERR_INVALID_ARGUMENT;
  for (int k = 0; k < s->nout; k++)
    if (!(outs[k] = mesh_state_kept(r->s, s->out[k], dev, host_alloc, NULL, r->err, sizeof r->err)))
      return CF_ERR_OUT_OF_MEMORY;
  cf_status st = cf_fusion_execute(s->cache, s->nin, ins, s->nout, outs);
  if (st) {
    snprintf(r->err, sizeof r->err, "mesh: device %d: %s", dev, cf_fusion_cache_error(s->cache));
    return st;
  }
  for (int k = 0; k < s->nout; k++) r->view[s->out[k] * r->ndev + dev] = &outs[k]->dl_tensor;
  return CF_OK;
}

static cf_status run_step(HostRun *r, const MeshStep *s) {
  const cf_device_mesh *m = s->is_comm ? r->p->values[s->comm.dst].mesh : s->seg.mesh;
  int n = cf_device_mesh_size(m);
  for (int i = 0; i < (m ? n : r->ndev); i++) {
    int dev = m ? m->devices[i] : i;
    if (dev >= r->ndev) return fail(r, CF_ERR_INVALID_ARGUMENT, "mesh: the mesh holds a device beyond the host mesh");
    cf_status st = s->is_comm ? comm_on(r, &s->comm, dev) : segment_on(r, &s->seg, dev);
    if (st) return st;
  }
  return CF_OK;
}

static cf_status copy_out(HostRun *r, int noutputs, DLManagedTensor **outputs) {
  for (int o = 0; o < noutputs; o++)
    for (int d = 0; d < r->ndev; d++) {
      const DLTensor *t = r->view[r->p->outputs[o] * r->ndev + d];
      const cf_device_mesh *m = r->p->values[r->p->outputs[o]].mesh;
      if (!t || (m && cf_device_mesh_index(m, d) < 0)) continue;
      DLManagedTensor *c = cf_tensor_host(r->p->values[r->p->outputs[o]].tv->dtype, t->ndim, t->shape);
      if (!c) return fail(r, CF_ERR_OUT_OF_MEMORY, "mesh: out of memory");
      memcpy(c->dl_tensor.data, t->data, (size_t)cf_tensor_numel(t) * cf_dtype_size(r->p->values[r->p->outputs[o]].tv->dtype));
      outputs[d * noutputs + o] = c;
      r->s->stats.outputs++;
    }
  return CF_OK;
}

cf_status mesh_host_run(MeshState *ms, uint64_t gen, const MeshPlan *p, int ndev, const DLTensor *const *inputs,
                        DLManagedTensor **outputs, char *err, size_t errlen) {
  HostRun r = {ms, p, ndev, NULL, {0}};
  cf_status st = mesh_state_begin(ms, p, gen, ndev);
  if (st) fail(&r, st, "mesh: out of memory");
  r.view = ms->view;
  for (int i = 0; i < p->ninputs && !st; i++)
    for (int d = 0; d < ndev; d++) r.view[p->inputs[i] * ndev + d] = inputs[d * p->ninputs + i];
  for (int i = 0; i < p->nsteps && !st; i++) st = run_step(&r, &p->steps[i]);
  for (int o = 0; o < p->noutputs * ndev; o++) outputs[o] = NULL;
  if (!st) st = copy_out(&r, p->noutputs, outputs);
  if (!st) mesh_state_end(ms);
  if (st) snprintf(err, errlen, "%s", r.err[0] ? r.err : "mesh: out of memory");
  return st;
}
