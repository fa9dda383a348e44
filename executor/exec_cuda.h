/* executor/exec_cuda.h: the CUDA plumbing of the executor (internal header).
 *
 * Three pieces, each behind plain C types so that this header needs no CUDA header and
 * tests can include it anywhere:
 *   - cuda_driver.c: the driver API loaded with dlopen("libcuda.so.1") once per process,
 *     the primary context of device 0, device memory, modules, launches, synchronization;
 *   - nvrtc.c: NVRTC loaded with dlopen, CUDA C++ -> cubin for an "sm_XYa" architecture;
 *   - cuda_tensor.c: device tensors as DLManagedTensors, copies between host and device,
 *     and the by-value kernel argument of a tensor (DESIGN.md section 7).
 * Every function that can fail returns a cf_status and writes a one-line message naming
 * the failed call and the CUDA/NVRTC error into the caller's buffer (err, errlen; err
 * may be NULL). The driver and NVRTC handles are the one process-wide state of cfuser:
 * loaded lazily, once, under pthread_once, and never unloaded. */
#ifndef CFUSER_EXEC_CUDA_H
#define CFUSER_EXEC_CUDA_H

#include <dlpack/dlpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfuser.h"

/* ---- the driver (cuda_driver.c) -------------------------------------------------------- */

/* A device address (CUdeviceptr). */
typedef uint64_t ExecDevPtr;

/* The device cfuser runs on (device 0 of the process, as CUDA_VISIBLE_DEVICES orders them). */
typedef struct ExecDeviceInfo {
  int ordinal;
  int cc_major, cc_minor;  /* compute capability, 9.0 on Hopper */
  int num_sms;
  int max_smem_per_block;  /* bytes of static + dynamic shared memory without opt-in */
  int max_smem_optin;      /* bytes a kernel may use after raising its dynamic limit */
  int max_smem_per_sm;     /* bytes of shared memory of one SM */
  int max_threads_per_block, max_threads_per_sm;
  int regs_per_sm;         /* 32-bit registers of one SM */
  int l2_bytes;            /* the L2 cache */
  int driver_version;      /* e.g. 13000 */
  char name[128];          /* "NVIDIA H100 80GB HBM3" */
  char arch[16];           /* "sm_90a": what NVRTC compiles for on this device */
} ExecDeviceInfo;

/* Loads the driver, initializes it, retains the primary context of device 0 (all once per
 * process) and makes that context current on the calling thread. CF_ERR_NO_DEVICE with
 * the reason when there is no driver or device. Every exec_ driver call below does this
 * itself; calling it first is never required. */
cf_status exec_cuda_init(char *err, size_t errlen);
/* The device; NULL when there is none (exec_cuda_init would fail). */
const ExecDeviceInfo *exec_device_info(void);
/* "sm_90a" on Hopper, "sm_100a" on Blackwell ("sm_XY" below compute capability 9.0, which
 * has no architecture-specific variant); NULL when there is no device. */
const char *exec_device_arch(void);
/* The NVRTC architecture of a compute capability, written into buf (at least 16 bytes). */
void exec_arch_for_cc(int major, int minor, char *buf, size_t buflen);

/* Device memory on cuda:device (EXEC_PROCESS_DEVICE: the process's device), in that
 * device's primary context, which stays current on return. */
enum { EXEC_PROCESS_DEVICE = -1 };
cf_status exec_mem_alloc(int device, size_t bytes, ExecDevPtr *out, char *err, size_t errlen);
/* Frees a pointer from exec_mem_alloc of the same device; 0 is ok. */
cf_status exec_mem_free(int device, ExecDevPtr p, char *err, size_t errlen);
/* Sets bytes of device memory to zero in the order of stream (of cuda:device). */
cf_status exec_mem_zero_async(int device, ExecDevPtr p, size_t bytes, void *stream, char *err, size_t errlen);
/* Synchronous copies in the context of cuda:device, the device memory's (EXEC_PROCESS_DEVICE:
 * the process's device). */
cf_status exec_memcpy_htod(int device, ExecDevPtr dst, const void *src, size_t bytes, char *err, size_t errlen);
cf_status exec_memcpy_dtoh(int device, void *dst, ExecDevPtr src, size_t bytes, char *err, size_t errlen);
cf_status exec_memcpy_dtod(int device, ExecDevPtr dst, ExecDevPtr src, size_t bytes, char *err, size_t errlen);

/* A loaded cubin and one kernel of it (CUmodule, CUfunction). */
typedef struct ExecKernel {
  void *module;
  void *function;
  int device; /* the ordinal whose primary context holds the module */
} ExecKernel;

/* Named limits: device ordinals a process may use; dimensions of a tensor. */
#define EXEC_MAX_DEVICES 64
#define EXEC_MAX_RANK 64

/* Opens device `ordinal` (its attributes, its primary context, its memory pool; once per
 * process, thread-safe) and makes its primary context current on the calling thread. An
 * ordinal the process does not see is CF_ERR_INVALID_ARGUMENT naming it. */
cf_status exec_device_open(int ordinal, const ExecDeviceInfo **info, char *err, size_t errlen);
/* Device memory in the order of `stream` (cuMemAllocAsync / cuMemFreeAsync on the device's
 * default pool, which keeps freed memory for reuse); stream NULL: the legacy default stream. */
cf_status exec_mem_alloc_async(int device, size_t bytes, void *stream, ExecDevPtr *out, char *err,
                               size_t errlen);
cf_status exec_mem_free_async(int device, ExecDevPtr p, void *stream, char *err, size_t errlen);
/* cuStreamSynchronize: where faults of kernels launched on the stream are reported. */
cf_status exec_stream_synchronize(int device, void *stream, char *err, size_t errlen);

/* A CUDA graph of captured launches, instantiated (executor/fusion_graph.c uses it). */
typedef struct ExecGraph {
  int device;
  void *exec; /* CUgraphExec; NULL: none */
} ExecGraph;
/* Starts capturing the launches of `stream` (not the legacy default stream) on device;
 * ends the capture, instantiating the graph when keep (else discarding it); launches an
 * instantiated graph on stream (one launch for every captured kernel); destroys it. */
cf_status exec_graph_begin(int device, void *stream, char *err, size_t errlen);
cf_status exec_graph_end(int device, void *stream, bool keep, ExecGraph *out, char *err, size_t errlen);
cf_status exec_graph_launch(const ExecGraph *g, void *stream, char *err, size_t errlen);
void exec_graph_destroy(ExecGraph *g);
/* A non-blocking stream of device (tests and benches), and its destruction. */
cf_status exec_stream_create(int device, void **stream, char *err, size_t errlen);
void exec_stream_destroy(int device, void *stream);

/* Loads a cubin (cuModuleLoadData) and looks up the kernel by its lowered name. On
 * failure nothing stays loaded and *out is zeroed. */
cf_status exec_kernel_load(const void *cubin, const char *lowered_name, ExecKernel *out,
                           char *err, size_t errlen);
/* The same into device `device`'s primary context (exec_kernel_load: device 0). */
cf_status exec_kernel_load_on(int device, const void *cubin, const char *lowered_name,
                              ExecKernel *out, char *err, size_t errlen);
/* Unloads the module; a zeroed kernel is ok. */
cf_status exec_kernel_unload(ExecKernel *k, char *err, size_t errlen);
/* Raises the kernel's dynamic shared memory limit (needed above 48 KiB); fails with a
 * clear message when bytes exceed the device's opt-in limit. */
cf_status exec_kernel_set_max_dynamic_smem(const ExecKernel *k, int64_t bytes, char *err,
                                           size_t errlen);
/* Launches on the default stream. grid and block are checked against the hardware limits
 * first; args is the kernel's parameter array (one pointer to each argument's bytes). */
cf_status exec_launch(const ExecKernel *k, const int64_t grid[3], const int64_t block[3],
                      int64_t smem, void **args, char *err, size_t errlen);
/* Launches on `stream` (a CUstream of the kernel's device; NULL: its legacy default stream)
 * and returns without waiting. The kernel's device must be current on the calling thread
 * (exec_device_open, which gave info), so that a run opens its device once. */
cf_status exec_launch_async(const ExecKernel *k, const ExecDeviceInfo *info, const int64_t grid[3],
                            const int64_t block[3], int64_t smem, void *stream, void **args,
                            char *err, size_t errlen);
/* A TMA tensor map (the 128-byte CUtensorMap, written to out, 64-byte aligned) of a tensor
 * at device address addr of cuda:device (whose context it leaves current, as a run needs
 * for its launch) with elements of esz bytes: rank dimensions innermost first
 * (dims elements each, strides[d] bytes between indices of dimension d + 1), the box
 * copied and the shared-memory swizzle in bytes (0, 32, 64, 128); out-of-bounds elements
 * read as zero. cuTensorMapEncodeTiled; its refusal names the fields. */
cf_status exec_tensor_map_encode(int device, void *out, int esz, int rank, uint64_t addr, const uint64_t *dims,
                                 const uint64_t *strides, const uint32_t *box, int swizzle, char *err, size_t errlen);
/* exec_launch_async for a kernel with grid syncs: refused (CF_ERR_INVALID_ARGUMENT, the
 * counts in the message) unless every block of the grid can be resident at once
 * (cuOccupancyMaxActiveBlocksPerMultiprocessor x SMs), then cuLaunchCooperativeKernel. */
cf_status exec_launch_cooperative_async(const ExecKernel *k, const ExecDeviceInfo *info, const int64_t grid[3],
                                        const int64_t block[3], int64_t smem, void *stream, void **args, char *err,
                                        size_t errlen);

/* cuCtxSynchronize: where faults of launched kernels are reported. */
cf_status exec_synchronize(char *err, size_t errlen);

/* ---- NVRTC (nvrtc.c) ------------------------------------------------------------------- */

typedef struct ExecNvrtcOptions {
  const char *arch;         /* "sm_90a", "sm_100a", ...; NULL: exec_device_arch() */
  const char *kernel_name;  /* name expression of the __global__ function, e.g.
                               "CudaCodeGen::kernel1" or an extern "C" name; may be NULL */
  bool lineinfo;            /* -lineinfo */
  int nextra;               /* more options passed as given, e.g. "-DFOO=1" */
  const char *const *extra;
} ExecNvrtcOptions;

/* The result of a compile; every pointer malloc'd, freed by exec_cubin_free. */
typedef struct ExecCubin {
  void *data;           /* the cubin (NULL on failure) */
  size_t size;
  char *lowered_name;   /* the kernel's mangled name for cuModuleGetFunction, or NULL */
  char *log;            /* NVRTC's log (warnings; the errors of a failed compile), or NULL */
  char arch[16];        /* the architecture compiled for */
} ExecCubin;

/* True when NVRTC can be loaded; reason (may be NULL) says why not. */
bool exec_nvrtc_available(const char **reason);
/* The PTX NVRTC makes of source for arch's virtual architecture (caller frees *ptx). */
cf_status exec_nvrtc_ptx(const char *source, const char *arch, char **ptx, char *err, size_t errlen);
/* "13.0" or NULL when NVRTC cannot be loaded. */
const char *exec_nvrtc_version(void);
/* Compiles source (program_name: the file name NVRTC's messages use) straight to a cubin.
 * A rejected program gives CF_ERR_COMPILE, the whole log in out->log and its first lines
 * in err; an NVRTC that cannot be loaded gives CF_ERR_UNSUPPORTED with the reason; a bad
 * architecture string CF_ERR_INVALID_ARGUMENT. The caller frees out with exec_cubin_free
 * in every case. */
cf_status exec_nvrtc_compile(const char *source, const char *program_name,
                             const ExecNvrtcOptions *opts, ExecCubin *out, char *err,
                             size_t errlen);
void exec_cubin_free(ExecCubin *c);
/* How many times this process ran nvrtcCompileProgram (tests check that a cached kernel
 * compiles nothing). */
int64_t exec_nvrtc_compile_count(void);
/* Everything besides the source that decides a compile's result, as text (malloc'd): the
 * NVRTC version, the kernel name and every option for `arch`; NULL when NVRTC cannot be
 * loaded. */
char *exec_nvrtc_key(const ExecNvrtcOptions *o, const char *arch);
/* exec_nvrtc_compile through the disk cache of cubins (cubin_cache.c), keyed by the exact
 * source and exec_nvrtc_key: a verified entry is a hit (*hit set, no NVRTC call); a miss
 * compiles and stores the cubin atomically. An unusable cache directory compiles without
 * it, with one warning; $CFUSER_CACHE=0 turns the cache off. */
cf_status exec_nvrtc_compile_cached(const char *source, const char *program_name,
                                    const ExecNvrtcOptions *opts, ExecCubin *out, bool *hit,
                                    char *err, size_t errlen);

/* ---- tensors (cuda_tensor.c) ----------------------------------------------------------- */

/* A contiguous device tensor (strides filled in) on the process's device, freed by its
 * deleter (cuMemFree). */
cf_status exec_tensor_device(cf_dtype dtype, int rank, const int64_t *sizes,
                             DLManagedTensor **out, char *err, size_t errlen);
/* The same on cuda:device. */
cf_status exec_tensor_device_on(int device, cf_dtype dtype, int rank, const int64_t *sizes,
                                DLManagedTensor **out, char *err, size_t errlen);
/* The same on device `device`, allocated in the order of `stream`; its deleter frees it in
 * the order of the same stream, which must therefore outlive the tensor. */
cf_status exec_tensor_device_async(int device, void *stream, cf_dtype dtype, int rank,
                                   const int64_t *sizes, DLManagedTensor **out, char *err,
                                   size_t errlen);
/* Copies src to dst: host<->device, device<->device or host<->host. Both contiguous, of
 * equal dtype and sizes; byte_offset honored. Host is kDLCPU or kDLCUDAHost, device is
 * kDLCUDA or kDLCUDAManaged of any device the process sees (a device-to-device copy: of
 * one device); the copy runs in that device's context. */
cf_status exec_tensor_copy(DLTensor *dst, const DLTensor *src, char *err, size_t errlen);

/* The by-value kernel argument of a tensor, laid out as the CUDA-side struct of
 * codegen/runtime/tensor.cuh:
 *   template <typename T, int N, int A, typename I> struct Tensor {
 *     T* data; I logical_size[N]; I alloc_stride[A]; };
 * with I = int64_t (index_bytes 8) or int32_t (index_bytes 4): the pointer at offset 0,
 * the N sizes from offset 8, the A strides right after them, the whole padded to a
 * multiple of 8 bytes (the struct's alignment). */
size_t exec_tensor_arg_size(int rank, int alloc_rank, int index_bytes);
/* Packs the argument from its parts: data is the address the kernel sees (byte offset
 * already applied), strides are in elements. Writes exec_tensor_arg_size(...) bytes into
 * buf (cap bytes available). With 4-byte indices a size or stride beyond int32 is an
 * error naming the axis. */
cf_status exec_pack_tensor_arg_parts(uint64_t data, int rank, const int64_t *sizes,
                                     int alloc_rank, const int64_t *alloc_strides,
                                     int index_bytes, void *buf, size_t cap, char *err,
                                     size_t errlen);
/* Packs a DLTensor whose allocation domain is its logical domain (A = N): data +
 * byte_offset, its sizes, its strides (compact row-major when strides is NULL). rank is
 * what the kernel expects; a different t->ndim is an error. */
cf_status exec_pack_tensor_arg(const DLTensor *t, int rank, int index_bytes, void *buf,
                               size_t cap, char *err, size_t errlen);

/* ---- shared helpers (cuda_driver.c) ----------------------------------------------------- */

/* snprintf into err when err is not NULL; returns s (for `return exec_fail(...)`). */
cf_status exec_fail(cf_status s, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
