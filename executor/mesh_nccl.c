/* executor/mesh_nccl.c: cf_mesh_run, a multi-device plan on this process's GPU with NCCL.
 *
 * Every rank walks the same plan (made from the global sizes, so identical everywhere):
 * compute segments of its mesh run on the compute stream through their define-and-run
 * caches; communications run on the communication stream, after an event recorded on
 * the compute stream when a segment ran since the last one, and a segment reading a
 * communication's result waits for an event recorded after it. Collectives go through
 * the group's blocking twin of their line (mesh_comm.c). A collective along a tensor
 * axis other than the outermost packs or unpacks blocks with 2-D copies through a
 * scratch buffer (NCCL gathers and scatters contiguous chunks); an allreduce the plan
 * marks in place runs on its partials' buffer. A broadcast between meshes runs on the
 * world communicator, every rank taking part (those off the target mesh receive into
 * scratch). The run ends with one wait for both streams, polled with the group's
 * deadline (mesh_comm.c): a failure on any rank is reported on every rank, never a hang.
 * Buffers of values that stay inside a run, the scratch and the events are the
 * executor's (mesh_state.c), made once per plan: a call in the steady state allocates
 * only its outputs.
 * Key decision: buffers are sized from the plan (the value's local extents), not from
 * tensors received, so a rank off a tensor's mesh still knows what to take part with. */
#include <stdlib.h>
#include <string.h>

#include "executor/exec_cuda.h"
#include "executor/mesh_comm.h"

typedef struct {
  size_t srcXInBytes, srcY;
  int srcMemoryType;
  const void *srcHost;
  uint64_t srcDevice;
  void *srcArray;
  size_t srcPitch;
  size_t dstXInBytes, dstY;
  int dstMemoryType;
  void *dstHost;
  uint64_t dstDevice;
  void *dstArray;
  size_t dstPitch;
  size_t WidthInBytes, Height;
} CuMemcpy2D;

typedef struct NcclRun {
  cf_comm *c;
  const MeshPlan *p;
  const MeshCu *cu;
  MeshState *s;
  const DLTensor **view; /* by value: s->view */
  DLManagedTensor **own; /* by value: s->own, what goes to the caller */
  bool compute_dirty;    /* a segment ran since the communication stream last waited for it */
  char err[300];
} NcclRun;

static ncclDataType_t nccl_type(cf_dtype t) {
  switch (t) {
  case CF_DOUBLE: return ncclFloat64;
  case CF_HALF: return ncclFloat16;
  case CF_BFLOAT16: return ncclBfloat16;
  case CF_INT8: return ncclInt8;
  case CF_INT32: return ncclInt32;
  case CF_INT64: return ncclInt64;
  case CF_UINT32: return ncclUint32;
  case CF_BOOL: return ncclUint8;
  default: return ncclFloat32;
  }
}

static ncclRedOp_t nccl_op(IrOp op) {
  return op == OP_PROD ? ncclProd : op == OP_MAX_REDUCE ? ncclMax : op == OP_MIN_REDUCE ? ncclMin : ncclSum;
}

/* A buffer that goes to the caller: in the order of the communication stream. */
static DLManagedTensor *alloc_fresh(NcclRun *r, cf_dtype dt, int rank, const int64_t *sizes) {
  DLManagedTensor *t = NULL;
  exec_tensor_device_async(r->c->local_rank, r->c->comm_stream, dt, rank, sizes, &t, r->err, sizeof r->err);
  r->s->stats.outputs += t != NULL;
  return t;
}

/* A buffer kept across runs (MeshAllocFn): allocated on the legacy stream and waited for,
 * so that any stream may use it and freeing it never needs the group's streams. */
static DLManagedTensor *alloc_kept(void *ctx, cf_dtype dt, int rank, const int64_t *sizes, char *err, size_t errlen) {
  NcclRun *r = ctx;
  DLManagedTensor *t = NULL;
  if (exec_tensor_device_async(r->c->local_rank, NULL, dt, rank, sizes, &t, err, errlen) ||
      exec_stream_synchronize(r->c->local_rank, NULL, err, errlen))
    cf_tensor_free(t), t = NULL;
  return t;
}

/* The buffer of value v made by a communication, now its view: the caller's (fresh) or
 * kept. */
static DLManagedTensor *value_buffer(NcclRun *r, int v) {
  int64_t sizes[CF_MAX_RANK];
  const MeshValue *mv = &r->p->values[v];
  DLManagedTensor *t = r->s->fresh[v] ? alloc_fresh(r, mv->tv->dtype, mesh_value_shape(mv, sizes), sizes)
                                      : mesh_state_kept(r->s, v, 0, alloc_kept, r, r->err, sizeof r->err);
  if (t && r->s->fresh[v]) r->own[v] = t;
  if (t) r->view[v] = &t->dl_tensor;
  return t;
}

/* Blocks of `rows` rows of `width` bytes: dst row i at dst + i * dpitch from src + i * spitch. */
static bool copy2d(NcclRun *r, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t rows) {
  CuMemcpy2D m = {0};
  m.srcMemoryType = m.dstMemoryType = 2; /* CU_MEMORYTYPE_DEVICE */
  m.srcDevice = (uint64_t)(uintptr_t)src;
  m.dstDevice = (uint64_t)(uintptr_t)dst;
  m.srcPitch = spitch;
  m.dstPitch = dpitch;
  m.WidthInBytes = width;
  m.Height = rows;
  return r->cu->memcpy2d(&m, r->c->comm_stream) == 0;
}

/* The outer, own and inner element counts of value v around logical axis a. */
static void around(const MeshValue *v, int a, int64_t *outer, int64_t *ext, int64_t *inner) {
  *outer = *inner = 1;
  for (int i = 0; i < TV(v->tv)->nlogical; i++) {
    if (ID(TV(v->tv)->logical[i])->iter_type == CF_ITER_REDUCTION) continue;
    int64_t e = mesh_local_extent(v, i);
    if (i < a) *outer *= e;
    else if (i > a) *inner *= e;
    else *ext = e;
  }
}

static char *at(const DLTensor *t, int64_t bytes) { return (char *)t->data + t->byte_offset + bytes; }

static cf_status nccl_step(NcclRun *r, ncclResult_t res, const char *what) { return mesh_comm_check(r->c, res, what); }

/* An allreduce the plan marks in place: on src's buffer, which becomes dst's. */
static cf_status allreduce_in_place(NcclRun *r, const MeshComm *c, MeshLine *line, const DLTensor *src) {
  const MeshValue *sv = &r->p->values[c->src];
  void *data = at(src, 0);
  cf_status st = mesh_comm_collective(r->c, line, MC_ALLREDUCE, data, data, (size_t)cf_tensor_numel(src),
                                      nccl_type(sv->tv->dtype), nccl_op(c->redop), "ncclAllReduce");
  r->view[c->dst] = src;
  r->own[c->dst] = r->own[c->src];
  r->own[c->src] = NULL;
  return st;
}

/* Copies of the blocks of a gather (unpack: tmp's blocks j into dst's column blocks) or
 * of a reduce-scatter (pack: src's column blocks into tmp's blocks j). */
static bool pack(NcclRun *r, bool unpack, char *tmp, char *full, int n, size_t row, size_t blk, size_t outer) {
  for (int j = 0; j < n; j++) {
    bool ok = unpack ? copy2d(r, full + (size_t)j * row, row * (size_t)n, tmp + (size_t)j * row * outer, row, row, outer)
                     : copy2d(r, tmp + (size_t)j * blk * outer, blk, full + blk * (size_t)j, row, blk, outer);
    if (!ok) return false;
  }
  return true;
}

static cf_status gather_or_scatter(NcclRun *r, const MeshComm *c, MeshLine *line, int n, int pos) {
  const MeshValue *sv = &r->p->values[c->src];
  const DLTensor *src = r->view[c->src];
  if (c->kind == MC_ALLREDUCE && c->in_place) return allreduce_in_place(r, c, line, src);
  ncclDataType_t type = nccl_type(sv->tv->dtype);
  size_t es = cf_dtype_size(sv->tv->dtype);
  int64_t outer = 1, ext = 1, inner = 1, numel = cf_tensor_numel(src);
  if (c->axis >= 0) around(sv, c->axis, &outer, &ext, &inner);
  size_t row = (size_t)(ext * inner) * es, blk = row / (size_t)n;
  DLManagedTensor *dst = value_buffer(r, c->dst);
  if (!dst) return CF_ERR_CUDA;
  char *out = dst->dl_tensor.data, *tmp = NULL;
  if (c->kind == MC_ALLREDUCE)
    return mesh_comm_collective(r->c, line, MC_ALLREDUCE, at(src, 0), out, (size_t)numel, type, nccl_op(c->redop),
                                "ncclAllReduce");
  if (c->kind == MC_SLICE)
    return copy2d(r, out, blk, at(src, (int64_t)blk * pos), row, blk, (size_t)outer) ? CF_OK : CF_ERR_CUDA;
  bool packed = outer > 1; /* the axis is not the outermost one of more than one element */
  size_t tmp_bytes = (size_t)numel * es * (c->kind == MC_ALLGATHER ? (size_t)n : 1);
  if (packed && !(tmp = mesh_state_scratch(r->s, tmp_bytes, alloc_kept, r, r->err, sizeof r->err))) return CF_ERR_CUDA;
  if (c->kind == MC_ALLGATHER) {
    cf_status st = mesh_comm_collective(r->c, line, MC_ALLGATHER, at(src, 0), packed ? tmp : out, (size_t)numel, type,
                                        ncclSum, "ncclAllGather");
    return st || !packed || pack(r, true, tmp, out, n, row, blk, (size_t)outer) ? st : CF_ERR_CUDA;
  }
  if (packed && !pack(r, false, tmp, at(src, 0), n, row, blk, (size_t)outer)) return CF_ERR_CUDA;
  return mesh_comm_collective(r->c, line, MC_REDUCE_SCATTER, packed ? tmp : at(src, 0), out, (size_t)(numel / n), type,
                              nccl_op(c->redop), "ncclReduceScatter");
}

/* A move between meshes: a broadcast on the world (everyone takes part) or a send/recv,
 * on the non-blocking world communicator (rare; each polled to its launch). */
static cf_status move(NcclRun *r, const MeshComm *c) {
  const NcclApi *nc = r->c->nccl;
  const MeshValue *dv = &r->p->values[c->dst];
  int me = r->c->rank, to = dv->mesh->devices[0];
  bool in_dst = cf_device_mesh_index(dv->mesh, me) >= 0;
  DLManagedTensor *buf = in_dst                    ? value_buffer(r, c->dst)
                         : c->kind == MC_BROADCAST ? mesh_state_kept(r->s, c->dst, 0, alloc_kept, r, r->err, sizeof r->err)
                                                   : NULL;
  if ((in_dst || c->kind == MC_BROADCAST) && !buf) return CF_ERR_CUDA;
  const DLTensor *src = me == c->root ? r->view[c->src] : NULL;
  if (me == c->root && !src) return snprintf(r->err, sizeof r->err, "mesh: rank %d holds no shard to send", me), CF_ERR_INVALID_ARGUMENT;
  size_t n = buf ? (size_t)cf_tensor_numel(&buf->dl_tensor) : (size_t)cf_tensor_numel(src);
  ncclDataType_t type = nccl_type(dv->tv->dtype);
  ncclComm_t world = r->c->world.comm;
  if (c->kind == MC_BROADCAST)
    return nccl_step(r, nc->ncclBroadcast(src ? at(src, 0) : buf->dl_tensor.data, buf->dl_tensor.data, n, type, c->root,
                                          world, r->c->comm_stream), "ncclBroadcast");
  if (me == c->root && me == to)
    return copy2d(r, buf->dl_tensor.data, 0, at(src, 0), 0, n * cf_dtype_size(dv->tv->dtype), 1) ? CF_OK : CF_ERR_CUDA;
  if (me != c->root && me != to) return CF_OK;
  nc->ncclGroupStart();
  if (me == c->root) nc->ncclSend(at(src, 0), n, type, to, world, r->c->comm_stream);
  if (me == to) nc->ncclRecv(buf->dl_tensor.data, n, type, c->root, world, r->c->comm_stream);
  return nccl_step(r, nc->ncclGroupEnd(), "ncclSend/ncclRecv");
}

static cf_status run_comm(NcclRun *r, const MeshComm *c) {
  if (c->kind == MC_BROADCAST || c->kind == MC_SEND_RECV) return move(r, c);
  const MeshValue *sv = &r->p->values[c->src];
  MeshLine *line = NULL;
  if (c->kind != MC_SLICE && mesh_comm_line(r->c, sv->mesh, c->dim, &line)) return r->c->status; /* collective: all ranks */
  int team[CF_MESH_MAX_DEVICES], pos = 0, n = mesh_team(sv->mesh, c->dim, r->c->rank, team, &pos);
  if (!n) return CF_OK; /* not on the source mesh */
  if (!r->view[c->src] || !mesh_contiguous(r->view[c->src]))
    return snprintf(r->err, sizeof r->err, "mesh: rank %d holds %s shard of %s", r->c->rank,
                    r->view[c->src] ? "a non-contiguous" : "no", TV(sv->tv)->display_name),
           CF_ERR_INVALID_ARGUMENT;
  return gather_or_scatter(r, c, line, n, pos);
}

/* A segment: its inputs made by communications waited for, its outputs the caller's
 * (allocated by the cache) or kept buffers given to it. */
static cf_status run_segment(NcclRun *r, const MeshSegment *s) {
  const DLTensor *ins[64];
  DLManagedTensor *outs[64] = {0};
  if (cf_device_mesh_index(s->mesh, r->c->rank) < 0) return CF_OK;
  if (s->nin > 64 || s->nout > 64) return snprintf(r->err, sizeof r->err, "mesh: a segment has more than 64 tensors"), CF_ERR_UNSUPPORTED;
  for (int k = 0; k < s->nin; k++) {
    if (!(ins[k] = r->view[s->in[k]]))
      return snprintf(r->err, sizeof r->err, "mesh: rank %d holds no shard of %s", r->c->rank,
                      TV(r->p->values[s->in[k]].tv)->display_name),
             CF_ERR_INVALID_ARGUMENT;
    if (r->s->recorded[s->in[k]]) r->cu->stream_wait_event(r->c->compute_stream, r->s->events[s->in[k]], 0);
  }
  for (int k = 0; k < s->nout; k++)
    if (!r->s->fresh[s->out[k]] && !(outs[k] = mesh_state_kept(r->s, s->out[k], 0, alloc_kept, r, r->err, sizeof r->err)))
      return CF_ERR_CUDA;
  DLManagedTensor *given[64];
  memcpy(given, outs, sizeof(DLManagedTensor *) * (size_t)s->nout);
  cf_status st = cf_fusion_execute_async(s->cache, r->c->compute_stream, s->nin, ins, s->nout, outs);
  if (st) return snprintf(r->err, sizeof r->err, "rank %d: %s", r->c->rank, cf_fusion_cache_error(s->cache)), st;
  for (int k = 0; k < s->nout; k++) {
    if (outs[k] != given[k]) r->own[s->out[k]] = outs[k]; /* made by the cache: the run's */
    r->s->stats.outputs += !given[k];
    r->view[s->out[k]] = &outs[k]->dl_tensor;
  }
  r->compute_dirty = true;
  return CF_OK;
}

/* The event of slot ev (created on first use, kept), recorded on stream. */
static void record(NcclRun *r, void **ev, void *stream) {
  if (!*ev && !r->cu->event_create(ev, 2 /* CU_EVENT_DISABLE_TIMING */)) r->s->stats.events++;
  if (*ev) r->cu->event_record(*ev, stream);
}

static int streams_done(void *arg) {
  NcclRun *r = arg;
  int a = r->cu->stream_query(r->c->compute_stream), b = r->cu->stream_query(r->c->comm_stream);
  if ((a && a != 600) || (b && b != 600)) return -1; /* 600: CUDA_ERROR_NOT_READY */
  return !a && !b;
}

static cf_status run_steps(NcclRun *r) {
  cf_status st = CF_OK;
  for (int i = 0; i < r->p->nsteps && !st; i++) {
    const MeshStep *s = &r->p->steps[i];
    if (!s->is_comm) {
      st = run_segment(r, &s->seg);
      continue;
    }
    if (r->compute_dirty) {
      record(r, &r->s->pre, r->c->compute_stream);
      if (r->s->pre) r->cu->stream_wait_event(r->c->comm_stream, r->s->pre, 0);
      r->compute_dirty = false;
    }
    st = run_comm(r, &s->comm);
    if (!st && !r->c->aborted) {
      record(r, &r->s->events[s->comm.dst], r->c->comm_stream);
      r->s->recorded[s->comm.dst] = r->s->events[s->comm.dst] != NULL;
    }
  }
  return st;
}

static void hand_out(NcclRun *r, int noutputs, DLManagedTensor **outputs) {
  for (int o = 0; o < noutputs; o++) {
    int v = r->p->outputs[o];
    outputs[o] = NULL;
    if (cf_device_mesh_index(r->p->values[v].mesh, r->c->rank) < 0 || !r->view[v]) continue;
    if (r->own[v]) {
      outputs[o] = r->own[v];
      r->own[v] = NULL;
      continue;
    }
    const DLTensor *t = r->view[v];
    DLManagedTensor *c = alloc_fresh(r, r->p->values[v].tv->dtype, t->ndim, t->shape);
    if (c) copy2d(r, c->dl_tensor.data, 0, at(t, 0), 0, (size_t)cf_tensor_numel(t) * cf_dtype_size(r->p->values[v].tv->dtype), 1);
    outputs[o] = c;
  }
}

cf_status cf_mesh_run(cf_mesh_executor *x, cf_comm *comm, int ninputs, const DLTensor *const *inputs, int noutputs,
                      DLManagedTensor **outputs) {
  if (!x || !comm || !outputs) return CF_ERR_INVALID_ARGUMENT;
  if (comm->aborted) return mesh_exec_fail(x, comm->status, comm->error), comm->status;
  const MeshPlan *p = NULL;
  cf_status st = mesh_exec_plan(x, inputs, &p);
  if (st) { /* said on every rank, this one too, as "rank N failed: ..." */
    cf_comm_report_failure(comm, cf_mesh_executor_error(x));
    if (comm->error[0]) mesh_exec_fail(x, st, comm->error);
    return st;
  }
  if (ninputs != p->ninputs || noutputs != p->noutputs) {
    mesh_exec_fail(x, CF_ERR_INVALID_ARGUMENT, "mesh: cf_mesh_run takes the fusion's inputs and outputs");
    return cf_comm_report_failure(comm, cf_mesh_executor_error(x)), CF_ERR_INVALID_ARGUMENT;
  }
  uint64_t gen = 0;
  MeshState *ms = mesh_exec_state(x, &gen);
  NcclRun r = {comm, p, mesh_cu(), ms, NULL, NULL, false, ""};
  if (!r.cu) snprintf(r.err, sizeof r.err, "mesh: the CUDA driver lacks cuMemcpy2DAsync or events"), st = CF_ERR_CUDA;
  else if (mesh_state_begin(ms, p, gen, 1)) snprintf(r.err, sizeof r.err, "mesh: out of memory"), st = CF_ERR_OUT_OF_MEMORY;
  r.view = ms->view, r.own = ms->own;
  for (int i = 0; !st && i < p->ninputs; i++)
    if (cf_device_mesh_index(p->values[p->inputs[i]].mesh, comm->rank) >= 0) r.view[p->inputs[i]] = inputs[i];
  if (!st) st = run_steps(&r);
  if (st && !comm->aborted) cf_comm_report_failure(comm, r.err[0] ? r.err : "a step failed");
  if (!st) st = mesh_comm_poll(comm, streams_done, &r, "cf_mesh_run");
  if (!st) hand_out(&r, noutputs, outputs);
  if (r.view) mesh_state_end(ms); /* frees what was not handed out */
  if (st) mesh_exec_fail(x, st, comm->error[0] ? comm->error : r.err);
  return st;
}
