/* executor/fusion_cache.h: the define-and-run cache (include/cfuser/execute.h), shared by
 * fusion_cache.c (the object, call signatures, the hash table, running an entry) and
 * fusion_plan.c (compiling an entry for a new signature). Internal. */
#ifndef CFUSER_FUSION_CACHE_H
#define CFUSER_FUSION_CACHE_H

#include <pthread.h>

#include "cfuser/execute.h"
#include "ir/ir.h"
#include "scheduler/heuristic.h"

/* Where a segment's tensor comes from, relative to a call: an input of the call
 * (0 .. nin-1), an output (nin .. nin+nout-1), or an intermediate the entry owns
 * (nin+nout+k is bufs[k]). */
typedef struct FcSegment {
  cf_executor *e;        /* NULL: a view (a reshape), its output buffer pointed at its input */
  cf_fusion *scheduled;  /* the scheduled copy e compiled (for cf_fusion_cache_print_kernel); NULL for a view */
  const char *scheduler; /* the heuristic's name (static) */
  int nin, nout;
  int *in_ref, *out_ref;
  const DLTensor **ins;  /* filled per run */
  DLManagedTensor **outs;
} FcSegment;

/* The compiled plan of one signature. */
typedef struct FcEntry {
  uint64_t hash;
  int64_t *key;
  int nkey;
  bool direct;           /* one segment taking the call's inputs and outputs as they are */
  int nseg, nbuf;
  FcSegment *seg;
  DLManagedTensor **bufs;
  bool *given;           /* per call output: given by the caller (filled per run) */
} FcEntry;

struct cf_fusion_cache {
  cf_fusion *f;          /* the user's math, copied at creation */
  cf_executor_options opts;
  cf_status status;      /* sticky: the copy failed */
  char *error;           /* malloc'd message of the last failure */
  FcEntry **slots;       /* open addressing, power-of-two capacity */
  int cap, len, nkernels;
  int64_t hits, misses;
  const FcEntry *last;
  const SchedDevice *dev_override; /* tests: the device description the heuristics get (fc_set_device) */
  pthread_mutex_t lock;  /* held by each execute: entries' buffers and scratch are per call */
};

/* Tests: plan every later signature of c for this device description instead of the one
 * the executor reads from the GPU (or the default on the host); NULL restores that. Reaches
 * each heuristic branch with small shapes by scaling the device down. */
void fc_set_device(cf_fusion_cache *c, const SchedDevice *dev);

/* Records a message on c and returns s. */
cf_status fc_error(cf_fusion_cache *c, cf_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Checks the call's inputs against the fusion (dtype, rank, sizes) and compiles the
 * plan of their signature into *en (hash and key already set): copy with the call's
 * sizes, segments, schedulers, executors, intermediates. */
cf_status fc_plan(cf_fusion_cache *c, const DLTensor *const *in, int nout, DLManagedTensor **out, FcEntry *en);
/* Frees an entry's segments and intermediates (keeping its key), or all of it. */
void fc_entry_clear(FcEntry *en);
void fc_entry_free(FcEntry *en);

#endif
