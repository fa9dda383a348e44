/* executor/fusion_cache.h: the define-and-run cache (include/cfuser/execute.h), shared by
 * fusion_cache.c (the object, call signatures, the table of entries, running an entry),
 * fusion_plan.c (planning an entry for a new signature with the scheduler registry),
 * fusion_reuse.c (the kernels, shared across signatures whose plans agree) and
 * fusion_graph.c (replaying a multi-kernel entry as one CUDA graph). Internal. */
#ifndef CFUSER_FUSION_CACHE_H
#define CFUSER_FUSION_CACHE_H

#include <pthread.h>

#include "cfuser/execute.h"
#include "ir/ir.h"
#include "scheduler/registry.h"

/* A compiled kernel, shared by every segment (of any entry) whose scheduled copy has the
 * same exact fingerprint; freed with its executor when no segment holds it. */
typedef struct FcKernel {
  uint64_t hash;
  unsigned char *key;    /* the fingerprint of `scheduled` for the backend */
  size_t nkey;
  cf_executor *e;
  cf_fusion *scheduled;  /* the scheduled copy e compiled (for cf_fusion_cache_print_kernel) */
  int refs;              /* segments holding it */
} FcKernel;

/* Where a segment's tensor comes from, relative to a call: an input of the call
 * (0 .. nin-1), an output (nin .. nin+nout-1), or an intermediate the entry owns
 * (nin+nout+k is bufs[k]). */
typedef struct FcSegment {
  FcKernel *k;           /* NULL: a view (a reshape), its output buffer pointed at its input */
  cf_executor *e;        /* k->e, or NULL for a view */
  SchedPlan plan;        /* the registry's row and its parameters */
  int nin, nout;
  int *in_ref, *out_ref;
  const DLTensor **ins;  /* filled per run */
  DLManagedTensor **outs;
  /* A segment whose outputs all have no element runs no kernel (e NULL, scheduler
   * "empty"): per output, an empty host tensor of its dtype and sizes that a fusion output
   * the caller did not give is made like (on the backend's device); NULL for intermediates. */
  DLManagedTensor **empty;
  bool on_host;          /* an empty segment: its outputs are host tensors */
} FcSegment;

typedef struct FcGraph FcGraph; /* fusion_graph.c */
typedef struct FcDynamic FcDynamic; /* fusion_dynamic.c */

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
  struct FcEntry *newer, *older; /* the recency list (least recently used evicted first) */
  FcGraph *graph;        /* a captured CUDA graph of the entry's launches, or NULL */
} FcEntry;

/* The default bound on a cache's entries (cf_fusion_cache_set_max_entries). */
enum { FC_DEFAULT_MAX_ENTRIES = 256 };

struct cf_fusion_cache {
  cf_fusion *f;          /* the user's math, copied at creation */
  cf_executor_options opts;
  cf_status status;      /* sticky: the copy failed */
  ErrMsg error;          /* the message of the last failure (ir.h: kept one call longer) */
  FcEntry **slots;       /* open addressing, power-of-two capacity */
  int cap, len, nkernels;
  int max_entries;       /* entries kept; the least recently used beyond it is evicted */
  int64_t hits, misses, evictions, reuses;
  FcEntry *newest, *oldest;
  FcKernel **kernels;    /* the live kernels (unordered) */
  int nlive, capk;
  bool *free_sym;        /* per Val id of f: a size symbol a shared kernel leaves symbolic */
  const FcEntry *last;
  const SchedDevice *dev_override; /* tests: the device description the heuristics get (fc_set_device) */
  int graphs;            /* CUDA graphs: -1 off, 1 capture at once, 0 the default rule (fusion_graph.c) */
  int64_t graph_captures, graph_replays;
  pthread_mutex_t lock;  /* held by each execute: entries' buffers and scratch are per call */
  FcDynamic *dyn;        /* f has dynamic ops: calls go to a cache per concretization */
};

/* Tests: plan every later signature of c for this device description instead of the one
 * the executor reads from the GPU (or the default on the host); NULL restores that. Reaches
 * each heuristic branch with small shapes by scaling the device down. */
void fc_set_device(cf_fusion_cache *c, const SchedDevice *dev);

/* Records a message on c and returns s. */
cf_status fc_error(cf_fusion_cache *c, cf_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Checks the call's inputs against the fusion (dtype, rank, sizes) and plans the entry of
 * their signature into *en (hash and key already set): copy with the call's sizes,
 * segments, rows, kernels (shared where they agree), intermediates. */
cf_status fc_plan(cf_fusion_cache *c, const DLTensor *const *in, int nout, DLManagedTensor **out, FcEntry *en);
/* Frees an entry's segments (releasing their kernels), graph and intermediates (keeping
 * its key), or all of it. */
void fc_entry_clear(cf_fusion_cache *c, FcEntry *en);
void fc_entry_free(cf_fusion_cache *c, FcEntry *en);

/* ---- kernels (fusion_reuse.c) ------------------------------------------------------------ */

/* Marks, per Val id of c->f, the size symbols a kernel may leave symbolic (c->free_sym):
 * those that are never the extent of a reduced axis or of a tensor's innermost axis. */
cf_status fc_find_free_symbols(cf_fusion_cache *c);
/* The copy of segment seg of w (the concrete copy, made from c->f with map fmap: c->f's
 * Val id -> w's Val) in which the free symbols are symbolic again, bound to the first
 * input axis of that extent; NULL when out of memory. */
cf_fusion *fc_reuse_copy(const cf_fusion_cache *c, cf_fusion *w, Val *const *fmap, const SchedSegment *seg);
/* The kernel of a scheduled copy g (taken: kept by the kernel, or destroyed) with that
 * index type: a live one with the same fingerprint (refs + 1), or a new one compiled
 * from g. */
cf_status fc_kernel_get(cf_fusion_cache *c, cf_fusion *g, cf_index_type index, FcKernel **out, const char **error);
void fc_kernel_release(cf_fusion_cache *c, FcKernel *k);

/* Runs en's segments one by one (fusion_cache.c), asynchronously on stream when async. */
cf_status fc_run_segments(cf_fusion_cache *c, FcEntry *en, void *stream, bool async, int nin,
                          const DLTensor *const *in, int nout, DLManagedTensor **out);

/* ---- fusions with dynamic ops (fusion_dynamic.c) ------------------------------------------ */

/* Makes c a cache of concrete fusions: one inner cache per distinct set of the dynamic
 * ops' parameters (ir_dynamic_params), made from ir_concretize of the call. */
cf_status fc_dyn_create(cf_fusion_cache *c);
/* A call of such a cache: the parameters read, the inner cache found or made, the call
 * run by it, and c's counters and last entry taken from the inner caches. */
cf_status fc_dyn_execute(cf_fusion_cache *c, void *stream, bool async, int nin, const DLTensor *const *in, int nout,
                         DLManagedTensor **out);
void fc_dyn_free(FcDynamic *d);

/* ---- CUDA graphs (fusion_graph.c) -------------------------------------------------------- */

/* What the graph rule reads of an entry and a call. */
typedef struct FcGraphFacts {
  int mode;           /* the cache's setting: -1 off, 0 the default rule, 1 capture at once */
  bool cuda;          /* every kernel of the entry runs on the CUDA backend */
  bool stream;        /* the call gives a stream (not the legacy default one) */
  int kernels;        /* kernels the entry launches */
  bool outputs_given; /* the caller gives every output */
  bool workspaces;    /* a kernel needs workspaces (grid-reduction buffers, global intermediates) */
  bool failed;        /* a capture of this entry failed before */
  bool captured;      /* the entry holds a graph */
  bool same_pointers; /* the call's tensors are where the entry's previous call had them */
} FcGraphFacts;

typedef enum FcGraphStep {
  FC_GRAPH_NO,       /* run kernel by kernel */
  FC_GRAPH_REMEMBER, /* run kernel by kernel, noting the tensors' addresses */
  FC_GRAPH_CAPTURE,  /* capture the launches, then replay the graph */
  FC_GRAPH_REPLAY    /* one launch of the captured graph */
} FcGraphStep;

/* The rule (fusion_graph.c's header); *why receives the reason, a static string. */
FcGraphStep fc_graph_step(const FcGraphFacts *f, const char **why);
const char *fc_graph_step_name(FcGraphStep s);

/* Runs en's segments on stream, as a graph replay where the rule allows (fusion_graph.c);
 * *ran false when it did not (the caller launches the segments itself). */
cf_status fc_graph_run(cf_fusion_cache *c, FcEntry *en, void *stream, int nin, const DLTensor *const *in, int nout,
                       DLManagedTensor **out, bool *ran);
void fc_graph_free(FcGraph *g);

#endif
