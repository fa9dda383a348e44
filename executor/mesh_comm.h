/* executor/mesh_comm.h: the process group over NCCL (mesh_comm.c) as the NCCL executor
 * (mesh_nccl.c) sees it. Internal. */
#ifndef CFUSER_MESH_COMM_H
#define CFUSER_MESH_COMM_H

#include "executor/mesh.h"
#include "executor/mesh_store.h"
#include "executor/nccl_api.h"

/* The most mesh lines (sub-communicators) one group keeps. */
#define MESH_COMM_MAX_SUBS 32

/* What a collective call is, for the warm-up rule of mesh_comm_collective: NCCL picks
 * its algorithm (and so the connections it makes on first use) from these. */
typedef struct MeshCallSig {
  int kind; /* MeshCommKind */
  int op, type;
  size_t count;
} MeshCallSig;

/* A line of ranks: `comm` is non-blocking (made and split under the group's deadline),
 * `fast` its blocking twin (a split of comm sharing its resources), on which the
 * collectives run. A non-blocking communicator launches every collective from a thread
 * NCCL creates for that call (its group of one) and answers ncclInProgress until the
 * thread is done: tens of microseconds a call that a blocking one does not pay. `warm`:
 * the signatures fast has run (each after one barrier on comm). */
typedef struct MeshLine {
  ncclComm_t comm, fast;
  bool ready; /* fast is made (until then NCCL's thread may write it) */
  MeshCallSig *warm;
  int nwarm, capwarm;
} MeshLine;

typedef struct MeshSub {
  cf_device_mesh mesh;
  int dim;
  MeshLine line;
} MeshSub;

/* The driver entry points the group and the plan need beyond cuda_driver.c's, resolved
 * from the loaded libcuda (NULL when one is missing). */
typedef struct MeshCu {
  int (*memcpy2d)(const void *copy2d, void *stream);
  int (*event_create)(void **, unsigned);
  int (*event_record)(void *, void *);
  int (*event_destroy)(void *);
  int (*stream_wait_event)(void *, void *, unsigned);
  int (*stream_query)(void *);
} MeshCu;
const MeshCu *mesh_cu(void);

struct cf_comm {
  int rank, size, local_rank, timeout_ms;
  const NcclApi *nccl;
  MeshStore *store; /* NULL when bootstrapped through the id file */
  MeshLine world;
  MeshSub subs[MESH_COMM_MAX_SUBS];
  int nsubs;
  void *comm_stream, *compute_stream;
  DLManagedTensor *barrier; /* one int32 on the device: the barriers' allreduce */
  int64_t barriers;         /* barriers run (the warm-up rule's count) */
  bool aborted;
  cf_status status;
  char error[512];
};

/* Polls check(arg) (1 done, 0 not yet, -1 failed) with the group's deadline, NCCL's
 * asynchronous errors and the failure channel; aborts the group on any failure. */
cf_status mesh_comm_poll(cf_comm *c, int (*check)(void *), void *arg, const char *what);
/* The result of an NCCL call (ncclInProgress: polled to completion). */
cf_status mesh_comm_check(cf_comm *c, ncclResult_t r, const char *what);
/* The line through this rank along mesh axis dim of m (NULL: not on it). */
cf_status mesh_comm_line(cf_comm *c, const cf_device_mesh *m, int dim, MeshLine **out);

/* One collective on line l (MC_ALLREDUCE, MC_ALLGATHER or MC_REDUCE_SCATTER; count as
 * NCCL counts it: the elements reduced, sent, or received per rank) on its blocking twin
 * and the group's communication stream. The first call of a signature on l comes after
 * a barrier (a one-element allreduce on the non-blocking comm, waited for under the
 * deadline): that call may make connections, which block the host until every peer
 * makes them too, so it starts only once every peer is known to be there; a peer that
 * failed before it is reported by the barrier's wait, never waited for inside NCCL.
 * Later calls enqueue on the calling thread and return. */
cf_status mesh_comm_collective(cf_comm *c, MeshLine *l, MeshCommKind kind, const void *send, void *recv, size_t count,
                               ncclDataType_t type, ncclRedOp_t op, const char *what);

#endif
