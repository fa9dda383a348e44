/* executor/nccl_api.h: the few NCCL types and entry points cfuser calls, declared here so
 * that building cfuser needs no nccl.h (NCCL is loaded with dlopen at run time, nccl.c).
 * Values and layouts are NCCL's public ABI (nccl.h of NCCL 2.18 and later). The config
 * struct is NCCL 2.18's: NCCL reads its size and version fields and takes the fields of
 * that version, so one declaration serves every later NCCL. Internal. */
#ifndef CFUSER_NCCL_API_H
#define CFUSER_NCCL_API_H

#include <stddef.h>

typedef struct ncclComm *ncclComm_t;
#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7
} ncclResult_t;

typedef enum {
  ncclInt8 = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclFloat32 = 7,
  ncclFloat64 = 8,
  ncclBfloat16 = 9
} ncclDataType_t;

typedef enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3 } ncclRedOp_t;

#define NCCL_API_MAGIC 0xcafebeefu
#define NCCL_CONFIG_UNDEF_INT (-2147483647 - 1)
/* ncclConfig_t as of NCCL 2.18 (version code 21800). */
typedef struct ncclConfig_2_18 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char *netName;
  int splitShare;
} ncclConfig_2_18;
#define NCCL_CONFIG_2_18_VERSION 21800u

/* X(name, return type, parameters): the entry points, resolved by name with dlsym. */
#define NCCL_FN_TABLE(X)                                                                                   \
  X(ncclGetVersion, ncclResult_t, (int *version))                                                          \
  X(ncclGetUniqueId, ncclResult_t, (ncclUniqueId * id))                                                    \
  X(ncclCommInitRankConfig, ncclResult_t,                                                                  \
    (ncclComm_t * comm, int nranks, ncclUniqueId id, int rank, ncclConfig_2_18 *config))                    \
  X(ncclCommSplit, ncclResult_t, (ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_2_18 *config)) \
  X(ncclCommGetAsyncError, ncclResult_t, (ncclComm_t comm, ncclResult_t * err))                            \
  X(ncclCommAbort, ncclResult_t, (ncclComm_t comm))                                                        \
  X(ncclCommFinalize, ncclResult_t, (ncclComm_t comm))                                                     \
  X(ncclCommDestroy, ncclResult_t, (ncclComm_t comm))                                                      \
  X(ncclGetErrorString, const char *, (ncclResult_t r))                                                    \
  X(ncclAllGather, ncclResult_t,                                                                           \
    (const void *send, void *recv, size_t count, ncclDataType_t t, ncclComm_t comm, void *stream))          \
  X(ncclReduceScatter, ncclResult_t,                                                                       \
    (const void *send, void *recv, size_t count, ncclDataType_t t, ncclRedOp_t op, ncclComm_t comm, void *stream)) \
  X(ncclAllReduce, ncclResult_t,                                                                           \
    (const void *send, void *recv, size_t count, ncclDataType_t t, ncclRedOp_t op, ncclComm_t comm, void *stream)) \
  X(ncclBroadcast, ncclResult_t,                                                                           \
    (const void *send, void *recv, size_t count, ncclDataType_t t, int root, ncclComm_t comm, void *stream)) \
  X(ncclSend, ncclResult_t, (const void *send, size_t count, ncclDataType_t t, int peer, ncclComm_t comm, void *stream)) \
  X(ncclRecv, ncclResult_t, (void *recv, size_t count, ncclDataType_t t, int peer, ncclComm_t comm, void *stream)) \
  X(ncclGroupStart, ncclResult_t, (void))                                                                  \
  X(ncclGroupEnd, ncclResult_t, (void))

typedef struct NcclApi {
#define NCCL_X(name, ret, params) ret(*name) params;
  NCCL_FN_TABLE(NCCL_X)
#undef NCCL_X
} NcclApi;

/* NCCL's entry points, loaded once (nccl.c); NULL with *why set when unavailable. */
const NcclApi *nccl_api(const char **why);

#endif
