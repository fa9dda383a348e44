/* cfuser/executor.h: compiling a scheduled fusion into a kernel and running it.
 *
 * cf_executor_compile lowers the fusion (which it never modifies), generates CUDA C++ or
 * host C, and compiles it: with NVRTC for the CUDA device, or for a named architecture
 * when there is none (compile-only), or with the system C compiler for the host backend,
 * which runs the same kernel on the CPU with the GPU execution model emulated. A compiled
 * executor owns everything it needs: the fusion may be destroyed after compile.
 * cf_executor_run takes DLPack tensors. Errors are kept on the executor
 * (cf_executor_error); the executor stays usable after a failed run.
 * Compiled kernels (cubins and host shared objects) are also kept on disk, in
 * $CFUSER_CACHE_DIR, else $XDG_CACHE_HOME/cfuser, else ~/.cache/cfuser, else
 * /tmp/cfuser-<uid>: a directory created 0700 and used only when it is the user's own and
 * writable by nobody else (otherwise kernels are compiled without it, after one warning on
 * stderr); a path longer than 3900 characters is CF_ERR_IO. CFUSER_CACHE=0 turns the disk
 * cache off. */
#ifndef CFUSER_EXECUTOR_H
#define CFUSER_EXECUTOR_H

#include <dlpack/dlpack.h>
#include <stdbool.h>
#include <stdint.h>

#include "fusion.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cf_executor cf_executor;
/* An in-memory cache of compiled kernels keyed by the fusion's exact fingerprint (its
 * structure, dtypes, constants bit for bit and schedule, computed in time linear in the
 * fusion) and the target (backend and architecture). Executors given the same
 * cache (cf_executor_options.cache) compile a fusion they have seen once: a hit skips
 * lowering, code generation and NVRTC / the C compiler. The cache owns the kernels: destroy
 * every executor that used it before the cache. Not thread-safe: one cache per thread. */
typedef struct cf_kernel_cache cf_kernel_cache;
typedef struct cf_kernel_info cf_kernel_info; /* read-only view of a lowered kernel */

typedef enum cf_backend {
  CF_BACKEND_AUTO = 0, /* CUDA when a usable device exists, host otherwise; CFUSER_BACKEND
                          (host|cuda) in the environment overrides */
  CF_BACKEND_CUDA,
  CF_BACKEND_HOST
} cf_backend;

/* The integer type of a kernel's index arithmetic (nvFuser's index type). 32-bit indices
 * take fewer instructions and registers than 64-bit ones. */
typedef enum cf_index_type {
  CF_INDEX_AUTO = 0, /* 32-bit when every tensor of the fusion is contiguous with constant
                        sizes and fewer than 2^31 elements, else 64-bit */
  CF_INDEX_32,       /* 32-bit: each run checks that every tensor's element count and
                        largest element offset are below 2^31, and refuses it otherwise,
                        naming the tensor (define and run chooses this per call signature
                        when the call's tensors are well within it) */
  CF_INDEX_64        /* 64-bit always */
} cf_index_type;

typedef struct cf_executor_options {
  cf_backend backend;
  /* For CUDA without a device: the architecture NVRTC compiles for, e.g. "sm_90a" or
   * "sm_100a"; the executor is then compile-only. NULL: the device's own. */
  const char *arch;
  /* Internal: skip the static tensor-memory access validation (tests of the host
   * backend's run-time checks use it). */
  bool skip_tmem_validation;
  /* Optional: compiled kernels are looked up here first and stored here after. */
  cf_kernel_cache *cache;
  cf_index_type index_type; /* CF_INDEX_AUTO (0) by default */
} cf_executor_options;

typedef struct cf_launch_params {
  int64_t grid[3];  /* gridDim x, y, z */
  int64_t block[3]; /* blockDim x, y, z */
  int64_t smem;     /* dynamic shared memory in bytes */
} cf_launch_params;

/* Called after lowering, before code generation, with read access to the kernel. */
typedef void (*cf_lowering_hook)(const cf_kernel_info *kernel, void *user);

CF_API cf_executor *cf_executor_create(const cf_executor_options *opts /* NULL: defaults */);
CF_API void cf_executor_destroy(cf_executor *e);
/* The message of the last failed call on e, or "". It stays valid until the second
 * failing call on e after it (or cf_executor_destroy), so `check(cf_executor_run(e, ...),
 * cf_executor_error(e))` is safe whichever argument C evaluates first (then it may show
 * the message of the call before). Copy it to keep it longer. */
CF_API const char *cf_executor_error(const cf_executor *e);
CF_API cf_status cf_executor_set_lowering_hook(cf_executor *e, cf_lowering_hook hook, void *user);
CF_API cf_status cf_executor_compile(cf_executor *e, cf_fusion *f);
/* Runs the kernel. inputs: one per fusion input, on the backend's device (host memory
 * for the host backend), except a tensor the kernel reads only through its sizes and
 * strides (cf_param_info.data_used false), which may be in any memory at any alignment.
 * A tensor the fusion made contiguous may have any stride on a size-1 axis, and any
 * strides when it has no element. outputs: ninputs... one per fusion output; each either
 * a tensor given by the caller (outputs[i] != NULL on entry) or NULL, in which case a new
 * tensor is allocated and stored there for the caller to free with cf_tensor_free.
 * Every tensor is checked before anything is launched: sizes not negative and their byte
 * count within int64, a data pointer wherever there is an element, and a caller's output
 * of exactly the sizes the fusion computes for these inputs.
 * Aliasing: no output may share any byte with an input or with another output (refused
 * with CF_ERR_INVALID_ARGUMENT; cfuser has no in-place ops, so there is no alias to
 * declare); inputs may share memory with each other, since they are only read.
 * When every output has zero elements, nothing is launched and the run succeeds; launch
 * dimensions beyond CUDA's limits for the given sizes are CF_ERR_INVALID_ARGUMENT. */
CF_API cf_status cf_executor_run(cf_executor *e, int ninputs, const DLTensor *const *inputs,
                                 int noutputs, DLManagedTensor **outputs);
/* The same, asynchronous: launches on `stream` (a CUstream of the tensors' device, e.g.
 * PyTorch's current stream; NULL: that device's legacy default stream) and returns without
 * waiting; the results are ready when the stream reaches them. The run goes to the device
 * the tensors are on (DLPack device_id, all the same), with that device's primary context.
 * Outputs the executor allocates are allocated in the order of `stream` from the device's
 * memory pool, and cf_tensor_free frees them in the order of the same stream: free them
 * before destroying that stream. A fault of the kernel itself is reported by a later call
 * (the next run, or cf_executor_synchronize) with the kernel named. cf_executor_run is
 * run_async on the default stream followed by cf_executor_synchronize. On the host backend
 * the run completes before returning. */
CF_API cf_status cf_executor_run_async(cf_executor *e, void *stream, int ninputs,
                                       const DLTensor *const *inputs, int noutputs,
                                       DLManagedTensor **outputs);
/* Waits for the stream of the executor's last asynchronous run; an asynchronous failure
 * of its kernel is reported here, naming the kernel. */
CF_API cf_status cf_executor_synchronize(cf_executor *e);
CF_API cf_launch_params cf_executor_last_launch_params(const cf_executor *e);
/* The generated source (CUDA C++ or host C) of the compiled kernel, owned by e. */
CF_API const char *cf_executor_source(const cf_executor *e);
/* The backend the executor compiled for. */
CF_API cf_backend cf_executor_backend(const cf_executor *e);
/* True when the executor compiled without a device and cannot run (compile-only). */
CF_API bool cf_executor_compile_only(const cf_executor *e);
/* The compiled binary (cubin or shared object) and its size, owned by e. */
CF_API const void *cf_executor_binary(const cf_executor *e, size_t *size);

CF_API cf_kernel_cache *cf_kernel_cache_create(void);
CF_API void cf_kernel_cache_destroy(cf_kernel_cache *c);
/* Lookups that found a compiled kernel, and lookups that did not. */
CF_API int64_t cf_kernel_cache_hits(const cf_kernel_cache *c);
CF_API int64_t cf_kernel_cache_misses(const cf_kernel_cache *c);

/* Lowers f and prints its CUDA kernel function (for reading; compiles nothing). The
 * runtime preamble every kernel starts with is left out; cf_executor_source has it all. */
CF_API cf_status cf_fusion_print_kernel(cf_fusion *f, FILE *out);

/* ---- the lowered kernel, as a lowering hook sees it ------------------------------- */

typedef struct cf_allocation_info {
  const char *tensor;      /* "T1" */
  cf_memory_type memory;
  cf_dtype dtype;
  int64_t size;            /* elements; -1 when symbolic */
} cf_allocation_info;

typedef struct cf_tmem_region_info {
  int ntensors;
  const char *const *tensors; /* names of the TensorViews in the region */
  int64_t num_columns;        /* allocated: a power of two >= 32 */
  int64_t raw_columns;        /* before rounding */
  int64_t num_lanes;          /* largest lane count of its tensors */
} cf_tmem_region_info;

/* A kernel parameter: the fusion's inputs, then its outputs, then the buffers the executor
 * provides (global intermediates, grid reductions' partials and semaphores). */
typedef struct cf_param_info {
  const char *tensor;      /* "T0" */
  cf_dtype dtype;
  int rank;
  bool is_output;
  bool is_workspace;       /* a buffer the executor allocates */
  /* The kernel loads, stores or takes the address of one of its elements. When false it
   * reads only the sizes and strides, and cf_executor_run takes the tensor in any memory
   * (a size given at run time in host memory to a CUDA kernel) at any alignment. */
  bool data_used;
} cf_param_info;

CF_API int cf_kernel_num_params(const cf_kernel_info *k);
/* Parameter i, or all zeros (tensor NULL) when i is out of range. */
CF_API cf_param_info cf_kernel_param(const cf_kernel_info *k, int i);
CF_API int cf_kernel_num_allocations(const cf_kernel_info *k);
CF_API cf_allocation_info cf_kernel_allocation(const cf_kernel_info *k, int i);
CF_API int cf_kernel_num_tmem_regions(const cf_kernel_info *k);
CF_API cf_tmem_region_info cf_kernel_tmem_region(const cf_kernel_info *k, int i);

/* ---- devices ------------------------------------------------------------------------ */

/* True when NVRTC (the CUDA toolkit's runtime compiler) can be loaded, so kernels compile
 * for CUDA with or without a device; reason (may be NULL) says why not. */
CF_API bool cf_nvrtc_available(const char **reason);
/* True when a CUDA driver and device are present; reason (may be NULL) says why not.
 * cfuser runs on one device per process, chosen at the first CUDA call: the ordinal in
 * CFUSER_DEVICE when set (one the process does not see makes CUDA unavailable, with that
 * reason), else torchrun's LOCAL_RANK when it names a device (a process per GPU, each
 * seeing all of them), else cuda:0. */
CF_API bool cf_cuda_available(const char **reason);
/* A contiguous tensor on the process's device (above), freed by cf_tensor_free; NULL on
 * failure. */
CF_API DLManagedTensor *cf_tensor_device(cf_dtype dtype, int rank, const int64_t *sizes);
/* Copies src to dst, host or device (contiguous, equal dtype and sizes): a device tensor
 * may be on any device the process sees (a run's outputs are on its inputs' device), the
 * copy made in that device's context; a copy between two devices is refused (go through a
 * host tensor). */
CF_API cf_status cf_tensor_copy(DLTensor *dst, const DLTensor *src);

#ifdef __cplusplus
}
#endif
#endif
