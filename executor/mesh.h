/* executor/mesh.h: the multi-device plan (mesh_plan.c) and the pieces that run it: local
 * fusions and shards (mesh_local.c), the host mesh (mesh_host.c), NCCL (mesh_nccl.c,
 * nccl.c), the executor object (mesh_exec.c). Internal. */
#ifndef CFUSER_EXECUTOR_MESH_H
#define CFUSER_EXECUTOR_MESH_H

#include "analysis/sharding.h"
#include "ir/ir.h"

/* X(enumerator, printed name): the primitive communications a resharding lowers to. */
#define MESH_COMM_TABLE(X)               \
  X(MC_ALLGATHER, "allgather")           \
  X(MC_SLICE, "slice")                   \
  X(MC_ALLREDUCE, "allreduce")           \
  X(MC_REDUCE_SCATTER, "reduce_scatter") \
  X(MC_BROADCAST, "broadcast")           \
  X(MC_SEND_RECV, "send_recv")

typedef enum MeshCommKind {
#define MC_X(e, name) e,
  MESH_COMM_TABLE(MC_X)
#undef MC_X
  MC_COUNT
} MeshCommKind;
const char *mesh_comm_name(MeshCommKind k);
/* Whether the kind moves data between devices (a slice is local). */
bool mesh_comm_communicates(MeshCommKind k);

/* A tensor as some step holds it: its tensor of the concrete global fusion, its layout on
 * its mesh (per logical axis, the mesh axis sharding it or -1), and whether it holds the
 * partial results of a reduction over a sharded axis. */
typedef struct MeshValue {
  Val *tv;
  int8_t dim[CF_MAX_RANK];
  const cf_device_mesh *mesh;
  bool partial;
} MeshValue;

typedef struct MeshComm {
  MeshCommKind kind;
  int src, dst;   /* values */
  int dim;        /* the mesh axis whose lines of devices take part (gather, slice, reduce) */
  int axis;       /* the tensor's logical axis gathered, sliced or scattered, or -1 */
  IrOp redop;     /* allreduce, reduce-scatter */
  int root;       /* broadcast, send/recv: the sending device */
  bool in_place;  /* an allreduce whose result takes src's buffer (mesh_plan_in_place) */
} MeshComm;

typedef struct MeshSegment {
  cf_fusion *local; /* its math on the local shard shapes, unscheduled */
  cf_fusion_cache *cache;
  int nin, nout;
  int *in, *out; /* values, in the order of local's inputs and outputs */
  const cf_device_mesh *mesh;
} MeshSegment;

typedef struct MeshStep {
  bool is_comm;
  MeshComm comm;
  MeshSegment seg;
} MeshStep;

typedef struct MeshPlan {
  cf_fusion *global; /* the fusion with the call's global sizes, constant */
  MeshValue *values;
  int nvalues, capvalues;
  MeshStep *steps;
  int nsteps, capsteps;
  int *inputs, *outputs; /* values of the fusion's inputs and outputs */
  int ninputs, noutputs;
} MeshPlan;

/* Lowers f_global (sizes constant) with its layouts s into steps; the error is recorded
 * on f_global. opts: the executor options each segment's define-and-run cache gets. */
cf_status mesh_plan_build(MeshPlan *p, cf_fusion *f_global, const AnShardings *s, const cf_executor_options *opts);
void mesh_plan_free(MeshPlan *p);
/* Marks in place every allreduce whose source is read by no other step, and is neither
 * an input (the caller's memory) nor an output of the plan: its result overwrites the
 * source (a reduction's partials), with no buffer or copy of its own. */
void mesh_plan_in_place(MeshPlan *p);
void mesh_plan_print(const MeshPlan *p, FILE *out);

/* The devices of the line through `device` along mesh axis dim (count returned, its
 * own position in *pos); 0 when the mesh does not hold the device. */
int mesh_team(const cf_device_mesh *m, int dim, int device, int *team, int *pos);
/* The local extent of value v's logical axis a (global over the mesh axis size). */
int64_t mesh_local_extent(const MeshValue *v, int a);

/* The local fusion of a segment: exprs of `global` reading values `in` and writing the
 * tensors of values `out`, every sharded axis of the local shard's extent. */
cf_fusion *mesh_local_fusion(const MeshPlan *p, int nexprs, Expr *const *exprs, int nin, const int *in, int nout,
                             const int *out);

/* Whether t is row-major and dense (size-1 axes' strides aside): what the collectives,
 * which move whole blocks, read and write. */
bool mesh_contiguous(const DLTensor *t);

/* The local shape of value v (its iteration axes at their local extents): the rank. */
int mesh_value_shape(const MeshValue *v, int64_t *sizes);

/* What an executor's runs made, counted since its creation (cf_mesh_executor's state):
 * buffers kept across runs (values that stay inside a run, the scratch of a pack or a
 * reduction), CUDA events, and buffers made for the caller (the outputs). A run in the
 * steady state (the plan of the run before) makes no kept buffer and no event. */
typedef struct MeshStats {
  int64_t runs, buffers, events, outputs;
} MeshStats;

/* A tensor of dtype and shape (NULL with err set on failure): host memory on the host
 * mesh, this process's GPU on NCCL's. */
typedef DLManagedTensor *(*MeshAllocFn)(void *ctx, cf_dtype dt, int rank, const int64_t *sizes, char *err,
                                        size_t errlen);

/* What runs of one executor keep for the next (mesh_state.c). Slots are value * ndev +
 * device (ndev 1 on NCCL's mesh: this process's device). Kept buffers, the scratch and
 * the events are made the first time a plan needs them and reused while the plan stays
 * (a new plan, of new sizes, drops them); what a run hands the caller is made per run. */
typedef struct MeshState {
  const MeshPlan *plan;
  uint64_t gen; /* the generation of the plan the arrays were made for */
  int ndev, nvalues, nslots;
  const DLTensor **view;   /* per slot: what the run holds of the value */
  DLManagedTensor **own;   /* per slot: a buffer of this run that goes to the caller */
  DLManagedTensor **kept;  /* per slot: the buffer kept across runs */
  bool *fresh;             /* per value: its buffer goes to the caller (an output, or made in place for one) */
  DLManagedTensor *scratch;
  void **events;           /* per value (NCCL): recorded after the communication that makes it */
  bool *recorded;          /* per value: recorded in this run */
  void *pre;               /* (NCCL) the event the communication stream waits on */
  MeshStats stats;
} MeshState;

/* Readies s for a run of plan p (generation gen) on ndev devices: the arrays sized, the
 * views and ownership of the last run cleared, kept buffers dropped when the plan is new. */
cf_status mesh_state_begin(MeshState *s, const MeshPlan *p, uint64_t gen, int ndev);
/* The kept buffer of slot (value v, device dev) in v's local shape, made when missing. */
DLManagedTensor *mesh_state_kept(MeshState *s, int v, int dev, MeshAllocFn alloc, void *ctx, char *err, size_t errlen);
/* A scratch buffer of at least `bytes`, grown (never shrunk) when smaller. */
void *mesh_state_scratch(MeshState *s, size_t bytes, MeshAllocFn alloc, void *ctx, char *err, size_t errlen);
/* Frees what the last run did not hand out (own). */
void mesh_state_end(MeshState *s);
void mesh_state_free(MeshState *s);

/* Host-memory collectives on contiguous buffers (mesh_host.c): the block of `src` along
 * axis (outer, n, inner elements of size es) at index k of d, into dst. */
void mesh_copy_block(void *dst, const void *src, int64_t outer, int64_t n, int64_t inner, size_t es, int k, int d,
                     bool gather);

/* Runs plan p (generation gen) on the host mesh of ndev devices (see cf_mesh_run_host),
 * keeping its buffers in st; on failure the message is written to err. */
cf_status mesh_host_run(MeshState *st, uint64_t gen, const MeshPlan *p, int ndev, const DLTensor *const *inputs,
                        DLManagedTensor **outputs, char *err, size_t errlen);

/* The executor's plan for this device's shards (mesh_exec.c), and recording a failure
 * on it, for the NCCL executor. */
cf_status mesh_exec_plan(cf_mesh_executor *x, const DLTensor *const *shards, const MeshPlan **plan);
/* The executor's run state and its plan's generation (a new plan, a new generation). */
MeshState *mesh_exec_state(cf_mesh_executor *x, uint64_t *gen);
/* Its counts (mesh.h, MeshStats), for tests and benches. */
MeshStats mesh_exec_stats(const cf_mesh_executor *x);
void mesh_exec_fail(cf_mesh_executor *x, cf_status st, const char *msg);

#endif
