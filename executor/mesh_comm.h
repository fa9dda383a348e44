/* executor/mesh_comm.h: the process group over NCCL (mesh_comm.c) as the NCCL executor
 * (mesh_nccl.c) sees it. Internal. */
#ifndef CFUSER_MESH_COMM_H
#define CFUSER_MESH_COMM_H

#include "executor/mesh.h"
#include "executor/mesh_store.h"
#include "executor/nccl_api.h"

/* The most mesh lines (sub-communicators) one group keeps. */
#define MESH_COMM_MAX_SUBS 32

typedef struct MeshSub {
  cf_device_mesh mesh;
  int dim;
  ncclComm_t comm;
} MeshSub;

struct cf_comm {
  int rank, size, local_rank, timeout_ms;
  const NcclApi *nccl;
  MeshStore *store; /* NULL when bootstrapped through the id file */
  ncclComm_t world;
  MeshSub subs[MESH_COMM_MAX_SUBS];
  int nsubs;
  void *comm_stream, *compute_stream;
  bool aborted;
  cf_status status;
  char error[512];
};

/* Polls check(arg) (1 done, 0 not yet, -1 failed) with the group's deadline, NCCL's
 * asynchronous errors and the failure channel; aborts the group on any failure. */
cf_status mesh_comm_poll(cf_comm *c, int (*check)(void *), void *arg, const char *what);
/* The result of an NCCL call (ncclInProgress: polled to completion). */
cf_status mesh_comm_check(cf_comm *c, ncclResult_t r, const char *what);
/* The communicator of this rank's line along mesh axis dim of m (NULL: not on it). */
cf_status mesh_comm_line(cf_comm *c, const cf_device_mesh *m, int dim, ncclComm_t *out);

#endif
