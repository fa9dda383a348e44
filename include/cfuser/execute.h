/* cfuser/execute.h: define and run. A cf_fusion_cache runs an unscheduled fusion
 * directly, as nvFuser's FusionExecutorCache does: the user defines the math, and each
 * call schedules, compiles and runs it as needed.
 *
 * The first call with a new input signature (per input: dtype, rank, exact sizes,
 * strides, whether its data starts 16-byte aligned, device type; per output: whether it
 * is given and aligned) copies the fusion with the call's sizes made constant and asks
 * the scheduler registry for a plan: the automatic schedulers in order (reduction,
 * normalizations, transpose, pointwise, ...), the first that accepts scheduling it. A
 * fusion no scheduler accepts whole is segmented by a greedy merge of neighbouring ops
 * (a merge made only where a scheduler takes the merged part, the one removing the most
 * intermediate bytes first); segments run one after the other, the tensors between them
 * in memory the cache allocates. The last resort is a parallel kernel per op, so every
 * fusion the evaluator computes runs. A reshape is a view (no kernel).
 * A segment's kernel is shared with every signature whose plan agrees: it is scheduled on
 * a copy whose free sizes (never a reduced or innermost extent: the rows of a softmax,
 * the batch of a layer norm) stay symbolic, and compiled once per exact schedule.
 * Later calls with the same signature go straight to the compiled kernels: hashing the
 * signature and comparing it allocate nothing. Signatures are bounded (see
 * cf_fusion_cache_set_max_entries): the least recently used is evicted with the kernels
 * only it held.
 * CFUSER_DUMP=segments prints each compile's segments (math, the scheduler chosen and its
 * parameters, why the others refused, whether the kernel is new or shared) on stderr.
 * The user's fusion is copied at creation and never modified; it may be destroyed after.
 * Threads: cf_fusion_execute and cf_fusion_execute_async may be called on one cache from
 * several threads at once; the calls take turns (a lock per cache), each with its own
 * arguments. The other calls on a cache (its counters, cf_fusion_cache_error, the last
 * call's segments) describe whichever call finished last: read them from the thread that
 * made the calls, or serialize the calls yourself. */
#ifndef CFUSER_EXECUTE_H
#define CFUSER_EXECUTE_H

#include <dlpack/dlpack.h>
#include <stdint.h>

#include "executor.h"
#include "fusion.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cf_fusion_cache cf_fusion_cache;

/* A cache for running f (unscheduled) with the given executor options (NULL: defaults;
 * opts->cache, when set, also shares compiled kernels with other executors). NULL only
 * when out of memory; when f has an error or cannot be copied, the cache keeps that error
 * and every execute returns it. */
CF_API cf_fusion_cache *cf_fusion_cache_create(cf_fusion *f, const cf_executor_options *opts);
CF_API void cf_fusion_cache_destroy(cf_fusion_cache *c);
/* The message of the last failed call on c, or "". It stays valid until the second
 * failing call on c after it (or cf_fusion_cache_destroy), as cf_executor_error's does. */
CF_API const char *cf_fusion_cache_error(const cf_fusion_cache *c);

/* Runs the fusion: the same conventions as cf_executor_run (one input per fusion input,
 * on the backend's device; each output given or NULL, then allocated for the caller to
 * free with cf_tensor_free). The first call with a signature schedules and compiles;
 * an error of that compile is reported for each call with that signature (it is not
 * cached). */
CF_API cf_status cf_fusion_execute(cf_fusion_cache *c, int ninputs, const DLTensor *const *inputs, int noutputs,
                                   DLManagedTensor **outputs);
/* The same, asynchronous on `stream` (see cf_executor_run_async); segments run in order
 * on that stream. */
CF_API cf_status cf_fusion_execute_async(cf_fusion_cache *c, void *stream, int ninputs, const DLTensor *const *inputs,
                                         int noutputs, DLManagedTensor **outputs);

/* CUDA graphs: an asynchronous execute on the CUDA backend whose plan launches several
 * kernels is captured once as a CUDA graph and replayed as one launch when its tensors
 * stay where they were (the graph bakes in their addresses): the call gives a stream (not
 * the legacy default stream) and every output, no kernel of the plan has workspaces (grid
 * reductions), and the tensors are where the same signature's previous call had them:
 * that repeat captures, later ones replay; tensors elsewhere run kernel by kernel. A
 * failed capture runs the kernels and is not tried again for the signature. mode: 0 this
 * rule (the default), -1 never, 1 capture at the first eligible call. */
CF_API cf_status cf_fusion_cache_set_cuda_graphs(cf_fusion_cache *c, int mode);
/* Graphs captured, and calls that replayed one. */
CF_API int64_t cf_fusion_cache_graph_captures(const cf_fusion_cache *c);
CF_API int64_t cf_fusion_cache_graph_replays(const cf_fusion_cache *c);

/* Waits for the stream of the last asynchronous execute (see cf_executor_synchronize);
 * CF_OK when nothing ran. */
CF_API cf_status cf_fusion_cache_synchronize(cf_fusion_cache *c);

/* Signatures held (at most the bound below), and kernels compiled for them so far: a
 * segment whose plan agrees with one of an earlier signature shares its kernel (see the
 * top of this file) and compiles nothing. */
CF_API int cf_fusion_cache_num_entries(const cf_fusion_cache *c);
CF_API int cf_fusion_cache_num_kernels(const cf_fusion_cache *c);
/* Kernels held now (compiled ones less those released with evicted entries), segments
 * that found their kernel compiled already, and entries evicted. */
CF_API int cf_fusion_cache_num_live_kernels(const cf_fusion_cache *c);
CF_API int64_t cf_fusion_cache_kernel_reuses(const cf_fusion_cache *c);
CF_API int64_t cf_fusion_cache_evictions(const cf_fusion_cache *c);
/* Bounds the signatures c keeps (default 256): past it, the least recently used one is
 * evicted, and the kernels only it held are destroyed (their host shared objects and
 * CUDA modules unloaded). An error for n < 1. */
CF_API cf_status cf_fusion_cache_set_max_entries(cf_fusion_cache *c, int n);
/* Calls that found their signature compiled, and calls that compiled. */
CF_API int64_t cf_fusion_cache_hits(const cf_fusion_cache *c);
CF_API int64_t cf_fusion_cache_misses(const cf_fusion_cache *c);
/* The segments of the last successful call's kernel and the scheduler of segment i
 * ("pointwise", "reduction", ...; NULL when out of range). */
CF_API int cf_fusion_cache_last_segments(const cf_fusion_cache *c);
CF_API const char *cf_fusion_cache_last_scheduler(const cf_fusion_cache *c, int i);
/* The parameters its scheduler planned for segment i ("vector=4 threads=128"), owned by
 * c until the entry is evicted; NULL when out of range. */
CF_API const char *cf_fusion_cache_last_params(const cf_fusion_cache *c, int i);
/* The executor that ran segment i of the last call (NULL when out of range), owned by c:
 * for cf_executor_last_launch_params and cf_executor_source of each segment. */
CF_API cf_executor *cf_fusion_cache_last_executor(const cf_fusion_cache *c, int i);
/* Prints the CUDA kernel of segment i of the last call as cf_fusion_print_kernel prints
 * a scheduled fusion (whatever the backend that ran it); an error when i is out of range.
 * Each compiled segment keeps its scheduled fusion for this. */
CF_API cf_status cf_fusion_cache_print_kernel(cf_fusion_cache *c, int i, FILE *out);

#ifdef __cplusplus
}
#endif
#endif
