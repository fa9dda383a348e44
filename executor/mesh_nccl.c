/* executor/mesh_nccl.c: cf_mesh_run, a multi-device plan on this process's GPU with NCCL.
 *
 * Every rank walks the same plan (made from the global sizes, so identical everywhere):
 * compute segments of its mesh run on the compute stream through their define-and-run
 * caches; communications run on the communication stream, after an event recorded on
 * the compute stream when they read a segment's output, and the compute stream waits for
 * an event after them before the next segment. A collective along a tensor axis other
 * than the outermost packs or unpacks blocks with 2-D copies (NCCL gathers and scatters
 * contiguous chunks). A broadcast between meshes runs on the world communicator, every
 * rank taking part (those off the target mesh receive into scratch). The run ends with
 * one wait for both streams, polled with the group's deadline (mesh_comm.c): a failure
 * on any rank is reported on every rank, never a hang.
 * Key decision: buffers are sized from the plan (the value's local extents), not from
 * tensors received, so a rank off a tensor's mesh still knows what to take part with. */
#include <dlfcn.h>
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

typedef struct CuExtra {
  int (*memcpy2d)(const CuMemcpy2D *, void *);
  int (*event_create)(void **, unsigned);
  int (*event_record)(void *, void *);
  int (*event_destroy)(void *);
  int (*stream_wait_event)(void *, void *, unsigned);
  int (*stream_query)(void *);
} CuExtra;

/* The driver entry points the plan needs beyond cuda_driver.c's (libcuda is loaded by
 * then: exec_device_open opened the device). */
static const CuExtra *cu_extra(void) {
  static CuExtra x;
  static bool done;
  if (done) return x.memcpy2d ? &x : NULL;
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (h) {
    *(void **)&x.memcpy2d = dlsym(h, "cuMemcpy2DAsync_v2");
    *(void **)&x.event_create = dlsym(h, "cuEventCreate");
    *(void **)&x.event_record = dlsym(h, "cuEventRecord");
    *(void **)&x.event_destroy = dlsym(h, "cuEventDestroy_v2");
    *(void **)&x.stream_wait_event = dlsym(h, "cuStreamWaitEvent");
    *(void **)&x.stream_query = dlsym(h, "cuStreamQuery");
  }
  done = true;
  bool all = x.memcpy2d && x.event_create && x.event_record && x.event_destroy && x.stream_wait_event && x.stream_query;
  if (!all) x.memcpy2d = NULL;
  return all ? &x : NULL;
}

typedef struct NcclRun {
  cf_comm *c;
  const MeshPlan *p;
  const CuExtra *cu;
  const DLTensor **view; /* by value */
  DLManagedTensor **own;
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

/* A device buffer of value v's local shape (axis `axis` times `scale` when >= 0). */
static DLManagedTensor *alloc_value(NcclRun *r, int v, int axis, int64_t scale) {
  const MeshValue *mv = &r->p->values[v];
  int64_t sizes[CF_MAX_RANK];
  int rank = 0;
  for (int a = 0; a < TV(mv->tv)->nlogical; a++)
    if (ID(TV(mv->tv)->logical[a])->iter_type != CF_ITER_REDUCTION)
      sizes[rank++] = mesh_local_extent(mv, a) * (a == axis ? scale : 1);
  DLManagedTensor *t = NULL;
  exec_tensor_device_async(r->c->local_rank, r->c->comm_stream, mv->tv->dtype, rank, sizes, &t, r->err, sizeof r->err);
  return t;
}

static void keep(NcclRun *r, int v, DLManagedTensor *t) {
  r->own[v] = t;
  r->view[v] = &t->dl_tensor;
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

static cf_status gather_or_scatter(NcclRun *r, const MeshComm *c, ncclComm_t line, int n, int pos) {
  const NcclApi *nc = r->c->nccl;
  const MeshValue *sv = &r->p->values[c->src];
  const DLTensor *src = r->view[c->src];
  ncclDataType_t type = nccl_type(sv->tv->dtype);
  size_t es = cf_dtype_size(sv->tv->dtype);
  int64_t outer = 1, ext = 1, inner = 1, numel = cf_tensor_numel(src);
  if (c->axis >= 0) around(sv, c->axis, &outer, &ext, &inner);
  size_t row = (size_t)(ext * inner) * es, blk = row / (size_t)n;
  DLManagedTensor *dst = alloc_value(r, c->dst, -1, 1), *tmp = NULL;
  if (!dst) return CF_ERR_CUDA;
  keep(r, c->dst, dst);
  void *stream = r->c->comm_stream;
  if (c->kind == MC_ALLREDUCE)
    return nccl_step(r, nc->ncclAllReduce(at(src, 0), dst->dl_tensor.data, (size_t)numel, type, nccl_op(c->redop), line, stream),
                     "ncclAllReduce");
  if (c->kind == MC_SLICE)
    return copy2d(r, dst->dl_tensor.data, blk, at(src, (int64_t)blk * pos), row, blk, (size_t)outer) ? CF_OK : CF_ERR_CUDA;
  bool packed = outer > 1;
  int64_t tmp_n = c->kind == MC_ALLGATHER ? numel * n : numel;
  if (packed && exec_tensor_device_async(r->c->local_rank, stream, sv->tv->dtype, 1, &tmp_n, &tmp, r->err, sizeof r->err))
    return CF_ERR_CUDA;
  cf_status st = CF_OK;
  if (c->kind == MC_ALLGATHER) {
    st = nccl_step(r, nc->ncclAllGather(at(src, 0), packed ? tmp->dl_tensor.data : dst->dl_tensor.data, (size_t)numel,
                                        type, line, stream), "ncclAllGather");
    for (int j = 0; packed && !st && j < n; j++)
      if (!copy2d(r, (char *)dst->dl_tensor.data + (size_t)j * row, row * (size_t)n,
                  (char *)tmp->dl_tensor.data + (size_t)(j * numel) * es, row, row, (size_t)outer))
        st = CF_ERR_CUDA;
  } else {
    for (int j = 0; packed && !st && j < n; j++)
      if (!copy2d(r, (char *)tmp->dl_tensor.data + (size_t)j * blk * (size_t)outer, blk, at(src, (int64_t)blk * j), row,
                  blk, (size_t)outer))
        st = CF_ERR_CUDA;
    if (!st)
      st = nccl_step(r, nc->ncclReduceScatter(packed ? tmp->dl_tensor.data : at(src, 0), dst->dl_tensor.data,
                                              (size_t)(numel / n), type, nccl_op(c->redop), line, stream),
                     "ncclReduceScatter");
  }
  cf_tensor_free(tmp); /* freed in stream order */
  return st;
}

/* A move between meshes: a broadcast on the world (everyone takes part) or a send/recv. */
static cf_status move(NcclRun *r, const MeshComm *c) {
  const NcclApi *nc = r->c->nccl;
  const MeshValue *dv = &r->p->values[c->dst];
  int me = r->c->rank, to = dv->mesh->devices[0];
  bool in_dst = cf_device_mesh_index(dv->mesh, me) >= 0;
  DLManagedTensor *buf = (in_dst || c->kind == MC_BROADCAST) ? alloc_value(r, c->dst, -1, 1) : NULL;
  if ((in_dst || c->kind == MC_BROADCAST) && !buf) return CF_ERR_CUDA;
  const DLTensor *src = me == c->root ? r->view[c->src] : NULL;
  if (me == c->root && !src) return snprintf(r->err, sizeof r->err, "mesh: rank %d holds no shard to send", me), CF_ERR_INVALID_ARGUMENT;
  size_t n = buf ? (size_t)cf_tensor_numel(&buf->dl_tensor) : (size_t)cf_tensor_numel(src);
  ncclDataType_t type = nccl_type(dv->tv->dtype);
  cf_status st = CF_OK;
  if (c->kind == MC_BROADCAST)
    st = nccl_step(r, nc->ncclBroadcast(src ? at(src, 0) : buf->dl_tensor.data, buf->dl_tensor.data, n, type, c->root,
                                        r->c->world, r->c->comm_stream), "ncclBroadcast");
  else if (me == c->root && me == to)
    st = copy2d(r, buf->dl_tensor.data, 0, at(src, 0), 0, n * cf_dtype_size(dv->tv->dtype), 1) ? CF_OK : CF_ERR_CUDA;
  else if (me == c->root || me == to) {
    nc->ncclGroupStart();
    if (me == c->root) nc->ncclSend(at(src, 0), n, type, to, r->c->world, r->c->comm_stream);
    if (me == to) nc->ncclRecv(buf->dl_tensor.data, n, type, c->root, r->c->world, r->c->comm_stream);
    st = nccl_step(r, nc->ncclGroupEnd(), "ncclSend/ncclRecv");
  }
  if (buf && in_dst) keep(r, c->dst, buf);
  else cf_tensor_free(buf);
  return st;
}

static cf_status run_comm(NcclRun *r, const MeshComm *c) {
  if (c->kind == MC_BROADCAST || c->kind == MC_SEND_RECV) return move(r, c);
  const MeshValue *sv = &r->p->values[c->src];
  ncclComm_t line = NULL;
  if (c->kind != MC_SLICE && mesh_comm_line(r->c, sv->mesh, c->dim, &line)) return r->c->status; /* collective: all ranks */
  int team[CF_MESH_MAX_DEVICES], pos = 0, n = mesh_team(sv->mesh, c->dim, r->c->rank, team, &pos);
  if (!n) return CF_OK; /* not on the source mesh */
  if (!r->view[c->src] || !mesh_contiguous(r->view[c->src]))
    return snprintf(r->err, sizeof r->err, "mesh: rank %d holds %s shard of %s", r->c->rank,
                    r->view[c->src] ? "a non-contiguous" : "no", TV(sv->tv)->display_name),
           CF_ERR_INVALID_ARGUMENT;
  return gather_or_scatter(r, c, line, n, pos);
}

static cf_status run_segment(NcclRun *r, const MeshSegment *s, void **events) {
  const DLTensor *ins[64];
  DLManagedTensor *outs[64] = {0};
  if (cf_device_mesh_index(s->mesh, r->c->rank) < 0) return CF_OK;
  if (s->nin > 64 || s->nout > 64) return snprintf(r->err, sizeof r->err, "mesh: a segment has more than 64 tensors"), CF_ERR_UNSUPPORTED;
  for (int k = 0; k < s->nin; k++) {
    if (!(ins[k] = r->view[s->in[k]]))
      return snprintf(r->err, sizeof r->err, "mesh: rank %d holds no shard of %s", r->c->rank,
                      TV(r->p->values[s->in[k]].tv)->display_name),
             CF_ERR_INVALID_ARGUMENT;
    if (events[s->in[k]]) r->cu->stream_wait_event(r->c->compute_stream, events[s->in[k]], 0);
  }
  cf_status st = cf_fusion_execute_async(s->cache, r->c->compute_stream, s->nin, ins, s->nout, outs);
  if (st) return snprintf(r->err, sizeof r->err, "rank %d: %s", r->c->rank, cf_fusion_cache_error(s->cache)), st;
  for (int k = 0; k < s->nout; k++) keep(r, s->out[k], outs[k]);
  return CF_OK;
}

static int streams_done(void *arg) {
  NcclRun *r = arg;
  int a = r->cu->stream_query(r->c->compute_stream), b = r->cu->stream_query(r->c->comm_stream);
  if ((a && a != 600) || (b && b != 600)) return -1; /* 600: CUDA_ERROR_NOT_READY */
  return !a && !b;
}

static cf_status run_steps(NcclRun *r, void **events) {
  cf_status st = CF_OK;
  for (int i = 0; i < r->p->nsteps && !st; i++) {
    const MeshStep *s = &r->p->steps[i];
    if (!s->is_comm) {
      st = run_segment(r, &s->seg, events);
      continue;
    }
    void *ev = NULL;
    r->cu->event_create(&ev, 2 /* CU_EVENT_DISABLE_TIMING */);
    r->cu->event_record(ev, r->c->compute_stream);
    r->cu->stream_wait_event(r->c->comm_stream, ev, 0);
    r->cu->event_destroy(ev);
    st = run_comm(r, &s->comm);
    if (!st && !r->c->aborted) {
      r->cu->event_create(&events[s->comm.dst], 2);
      r->cu->event_record(events[s->comm.dst], r->c->comm_stream);
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
    DLManagedTensor *c = alloc_value(r, v, -1, 1);
    if (c) copy2d(r, c->dl_tensor.data, 0, at(r->view[v], 0), 0,
                  (size_t)cf_tensor_numel(r->view[v]) * cf_dtype_size(r->p->values[v].tv->dtype), 1);
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
  NcclRun r = {comm, p, cu_extra(), calloc((size_t)p->nvalues + 1, sizeof(DLTensor *)),
               calloc((size_t)p->nvalues + 1, sizeof(DLManagedTensor *)), ""};
  void **events = calloc((size_t)p->nvalues + 1, sizeof(void *));
  if (!r.cu) snprintf(r.err, sizeof r.err, "mesh: the CUDA driver lacks cuMemcpy2DAsync or events"), st = CF_ERR_CUDA;
  else if (!r.view || !r.own || !events) snprintf(r.err, sizeof r.err, "mesh: out of memory"), st = CF_ERR_OUT_OF_MEMORY;
  for (int i = 0; !st && i < p->ninputs; i++)
    if (cf_device_mesh_index(p->values[p->inputs[i]].mesh, comm->rank) >= 0) r.view[p->inputs[i]] = inputs[i];
  if (!st) st = run_steps(&r, events);
  if (st && !comm->aborted) cf_comm_report_failure(comm, r.err[0] ? r.err : "a step failed");
  if (!st) st = mesh_comm_poll(comm, streams_done, &r, "cf_mesh_run");
  if (!st) hand_out(&r, noutputs, outputs);
  for (int i = 0; i < p->nvalues; i++) {
    if (r.own) cf_tensor_free(r.own[i]);
    if (events && events[i] && r.cu) r.cu->event_destroy(events[i]);
  }
  free(r.own);
  free((void *)r.view);
  free(events);
  if (st) mesh_exec_fail(x, st, comm->error[0] ? comm->error : r.err);
  return st;
}
