/* executor/mesh_state.c: what the runs of one multi-device executor keep for the next
 * (MeshState, mesh.h): the per-slot views, the buffers of values that live only inside a
 * run, a scratch buffer and the NCCL executor's events.
 *
 * Both meshes use it: the host mesh (mesh_host.c) for every buffer it makes (it copies
 * the outputs out), the NCCL executor (mesh_nccl.c) for the values that do not reach the
 * caller, the pack scratch and the events that order its two streams. A call in the
 * steady state allocates nothing but what it returns, which a GPU collective of a few
 * microseconds must not pay for (stream-ordered allocations, event creation).
 * Key decision: the buffers belong to the plan's generation, not to a size key of their
 * own: a new plan (new global sizes) drops them all, so a kept buffer never has a stale
 * shape; within a plan every slot's shape is fixed, and the scratch grows to the largest
 * need and stays. */
#include <stdlib.h>
#include <string.h>

#include "executor/mesh_comm.h"

int mesh_value_shape(const MeshValue *v, int64_t *sizes) {
  int rank = 0;
  for (int a = 0; a < TV(v->tv)->nlogical; a++)
    if (ID(TV(v->tv)->logical[a])->iter_type != CF_ITER_REDUCTION) sizes[rank++] = mesh_local_extent(v, a);
  return rank;
}

static void drop_kept(MeshState *s) {
  for (int i = 0; s->kept && i < s->nslots; i++) cf_tensor_free(s->kept[i]);
  cf_tensor_free(s->scratch);
  s->scratch = NULL;
  const MeshCu *cu = s->events ? mesh_cu() : NULL;
  for (int i = 0; cu && i < s->nvalues; i++)
    if (s->events[i]) cu->event_destroy(s->events[i]);
  if (s->pre && mesh_cu()) mesh_cu()->event_destroy(s->pre);
  s->pre = NULL;
  free(s->view), free(s->own), free(s->kept), free(s->fresh), free(s->events), free(s->recorded);
  s->view = NULL, s->own = NULL, s->kept = NULL, s->fresh = NULL, s->events = NULL, s->recorded = NULL;
}

/* Per value: whether its buffer goes to the caller: an output, or the source of an
 * in-place allreduce whose result does (its buffer becomes the result's). */
static void mark_fresh(MeshState *s, const MeshPlan *p) {
  for (int o = 0; o < p->noutputs; o++) s->fresh[p->outputs[o]] = true;
  for (int i = p->nsteps - 1; i >= 0; i--) {
    const MeshComm *c = &p->steps[i].comm;
    if (p->steps[i].is_comm && c->in_place && s->fresh[c->dst]) s->fresh[c->src] = true;
  }
}

cf_status mesh_state_begin(MeshState *s, const MeshPlan *p, uint64_t gen, int ndev) {
  if (s->plan != p || s->gen != gen || s->ndev != ndev || !s->view) {
    if (s->plan) drop_kept(s);
    s->plan = p, s->gen = gen, s->ndev = ndev, s->nvalues = p->nvalues, s->nslots = p->nvalues * ndev;
    size_t n = (size_t)s->nslots + 1, nv = (size_t)p->nvalues + 1;
    s->view = calloc(n, sizeof *s->view);
    s->own = calloc(n, sizeof *s->own);
    s->kept = calloc(n, sizeof *s->kept);
    s->fresh = calloc(nv, sizeof *s->fresh);
    s->events = calloc(nv, sizeof *s->events);
    s->recorded = calloc(nv, sizeof *s->recorded);
    if (!s->view || !s->own || !s->kept || !s->fresh || !s->events || !s->recorded) {
      drop_kept(s);
      s->plan = NULL;
      return CF_ERR_OUT_OF_MEMORY;
    }
    mark_fresh(s, p);
  }
  memset(s->view, 0, sizeof *s->view * (size_t)s->nslots);
  memset(s->own, 0, sizeof *s->own * (size_t)s->nslots);
  memset(s->recorded, 0, sizeof *s->recorded * (size_t)p->nvalues);
  s->stats.runs++;
  return CF_OK;
}

DLManagedTensor *mesh_state_kept(MeshState *s, int v, int dev, MeshAllocFn alloc, void *ctx, char *err, size_t errlen) {
  DLManagedTensor **k = &s->kept[v * s->ndev + dev];
  if (*k) return *k;
  int64_t sizes[CF_MAX_RANK];
  const MeshValue *mv = &s->plan->values[v];
  *k = alloc(ctx, mv->tv->dtype, mesh_value_shape(mv, sizes), sizes, err, errlen);
  s->stats.buffers += *k != NULL;
  return *k;
}

void *mesh_state_scratch(MeshState *s, size_t bytes, MeshAllocFn alloc, void *ctx, char *err, size_t errlen) {
  if (s->scratch && (size_t)s->scratch->dl_tensor.shape[0] >= bytes) return s->scratch->dl_tensor.data;
  cf_tensor_free(s->scratch);
  int64_t n = (int64_t)bytes;
  s->scratch = alloc(ctx, CF_INT8, 1, &n, err, errlen);
  s->stats.buffers += s->scratch != NULL;
  return s->scratch ? s->scratch->dl_tensor.data : NULL;
}

void mesh_state_end(MeshState *s) {
  for (int i = 0; s->own && i < s->nslots; i++) {
    cf_tensor_free(s->own[i]);
    s->own[i] = NULL;
  }
}

void mesh_state_free(MeshState *s) {
  if (!s->plan) return;
  mesh_state_end(s);
  drop_kept(s);
  memset(s, 0, sizeof *s);
}
