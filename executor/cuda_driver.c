/* executor/cuda_driver.c: the CUDA driver API, loaded at run time.
 *
 * The executor's only way to a GPU. libcuda.so.1 is opened with dlopen the first time
 * anything asks for the device, under pthread_once, and its entry points go into a table
 * of function pointers; then cuInit, device 0, its attributes and its primary context
 * (retained, never released: the process-wide state DESIGN.md section 9 allows). Every
 * wrapper below makes that context current on the calling thread, checks its driver call
 * and turns a failure into a cf_status and a message naming the call and the CUDA error
 * ("cuMemAlloc_v2(4096 bytes) failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)").
 * Key decision: <cuda.h> supplies only types, enums and, through __typeof__ and its own
 * #defines, the exact versioned symbol names (cuMemAlloc -> cuMemAlloc_v2), so the table
 * cannot drift from the header; the library never links libcuda, so it loads and compiles
 * kernels where no driver exists. Built without <cuda.h>, every entry point reports
 * CF_ERR_NO_DEVICE. */
#include "executor/exec_cuda.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#if defined(__has_include)
#if __has_include(<cuda.h>)
#include <cuda.h>
#define EXEC_HAVE_CUDA_H 1
#endif
#endif

cf_status exec_fail(cf_status s, char *err, size_t errlen, const char *fmt, ...) {
  if (err && errlen > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return s;
}

void exec_arch_for_cc(int major, int minor, char *buf, size_t buflen) {
  /* Architecture-specific features (wgmma, setmaxnreg, tcgen05) exist from 9.0 on and only
   * in the "a" targets; older devices have none. */
  snprintf(buf, buflen, "sm_%d%d%s", major, minor, major >= 9 ? "a" : "");
}

#ifdef EXEC_HAVE_CUDA_H

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>

#define EXEC_STR_(x) #x
#define EXEC_STR(x) EXEC_STR_(x) /* expands the header's #defines first: "cuMemAlloc_v2" */

/* X(api name): every driver entry point cfuser uses. */
#define EXEC_CU_FUNCS(X)                                                                   \
  X(cuGetErrorName) X(cuGetErrorString) X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) \
  X(cuDeviceGet) X(cuDeviceGetAttribute) X(cuDeviceGetName) X(cuDevicePrimaryCtxRetain)     \
  X(cuCtxGetCurrent) X(cuCtxSetCurrent) X(cuCtxSynchronize) X(cuMemAlloc) X(cuMemFree)      \
  X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyDtoD) X(cuModuleLoadData) X(cuModuleUnload)     \
  X(cuModuleGetFunction) X(cuFuncGetAttribute) X(cuFuncSetAttribute) X(cuLaunchKernel)      \
  X(cuMemAllocAsync) X(cuMemFreeAsync) X(cuStreamSynchronize) X(cuDeviceGetDefaultMemPool)   \
  X(cuMemPoolSetAttribute) X(cuLaunchCooperativeKernel) X(cuOccupancyMaxActiveBlocksPerMultiprocessor) \
  X(cuStreamBeginCapture) X(cuStreamEndCapture)                                              \
  X(cuGraphInstantiateWithFlags) X(cuGraphLaunch) X(cuGraphExecDestroy) X(cuGraphDestroy)      \
  X(cuStreamCreate) X(cuStreamDestroy) X(cuMemsetD8Async) X(cuTensorMapEncodeTiled)

typedef struct CuApi {
#define EXEC_X(name) __typeof__(name) *name;
  EXEC_CU_FUNCS(EXEC_X)
#undef EXEC_X
} CuApi;

/* Written once by cuda_init_once, read-only afterwards. */
typedef struct CudaState {
  cf_status status;
  char reason[320];
  void *lib;
  CuApi api;
  CUdevice dev;
  CUcontext ctx;
  ExecDeviceInfo info;
  int count;         /* devices visible to the process */
} CudaState;

static CudaState g_cuda;
static pthread_once_t g_cuda_once = PTHREAD_ONCE_INIT;
#define CU (&g_cuda.api)

static cf_status status_of(CUresult r) {
  if (r == CUDA_ERROR_OUT_OF_MEMORY) return CF_ERR_OUT_OF_MEMORY;
  if (r == CUDA_ERROR_NO_DEVICE) return CF_ERR_NO_DEVICE;
  return CF_ERR_CUDA;
}

/* "<what> failed: CUDA_ERROR_X (description)"; what is a printf format naming the call. */
static cf_status cu_fail(CUresult r, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static cf_status cu_fail(CUresult r, char *err, size_t errlen, const char *fmt, ...) {
  char what[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  const char *name = NULL, *desc = NULL;
  if (CU->cuGetErrorName == NULL || CU->cuGetErrorName(r, &name) != CUDA_SUCCESS) name = NULL;
  if (CU->cuGetErrorString == NULL || CU->cuGetErrorString(r, &desc) != CUDA_SUCCESS) desc = NULL;
  if (r == CUDA_ERROR_STUB_LIBRARY && name == NULL) /* the stub cannot name its own error */
    return exec_fail(CF_ERR_NO_DEVICE, err, errlen, "%s failed: CUDA_ERROR_STUB_LIBRARY "
                     "(libcuda.so.1 is the toolkit's stub, not an NVIDIA driver)", what);
  if (name == NULL)
    return exec_fail(status_of(r), err, errlen, "%s failed: CUDA error %d", what, (int)r);
  return exec_fail(status_of(r), err, errlen, "%s failed: %s (%s)", what, name,
                   desc ? desc : "no description");
}

static bool load_driver(CudaState *s) {
  void *sym = NULL;
  s->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (s->lib == NULL) {
    const char *why = dlerror();
    if (why == NULL || strstr(why, "No such file") != NULL)
      snprintf(s->reason, sizeof s->reason, "libcuda.so.1 not found (no NVIDIA driver)");
    else
      snprintf(s->reason, sizeof s->reason, "libcuda.so.1 could not be loaded: %s", why);
    return false;
  }
  /* memcpy: ISO C has no conversion from dlsym's void * to a function pointer. */
#define EXEC_X(name)                                                                         \
  sym = dlsym(s->lib, EXEC_STR(name));                                                       \
  memcpy(&s->api.name, &sym, sizeof sym);                                                    \
  if (sym == NULL) {                                                                         \
    snprintf(s->reason, sizeof s->reason,                                                    \
             "libcuda.so.1 lacks %s (the NVIDIA driver is older than the CUDA headers "      \
             "cfuser was built with)", EXEC_STR(name));                                      \
    return false;                                                                            \
  }
  EXEC_CU_FUNCS(EXEC_X)
#undef EXEC_X
  return true;
}

static CUresult read_attributes(CUdevice dev, ExecDeviceInfo *in) {
  struct { int *out; CUdevice_attribute a; } q[] = {
      {&in->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR},
      {&in->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR},
      {&in->num_sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT},
      {&in->max_smem_per_block, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK},
      {&in->max_smem_optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN},
      {&in->max_smem_per_sm, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR},
      {&in->max_threads_per_block, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK},
      {&in->max_threads_per_sm, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR},
      {&in->regs_per_sm, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR},
      {&in->l2_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE},
  };
  for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
    CUresult r = CU->cuDeviceGetAttribute(q[i].out, q[i].a, dev);
    if (r != CUDA_SUCCESS) return r;
  }
  return CU->cuDeviceGetName(in->name, (int)sizeof in->name, dev);
}

/* The process's device: CFUSER_DEVICE when set, else torchrun's LOCAL_RANK (one process
 * per GPU of the node, all of them visible: rank 1 runs on cuda:1) when it names a device,
 * else 0. -1 (why set) for a CFUSER_DEVICE that names no device. */
static int process_ordinal(int count, char *why, size_t len) {
  const char *dev = getenv("CFUSER_DEVICE"), *local = getenv("LOCAL_RANK");
  char *end = NULL;
  if (dev && *dev) {
    long n = strtol(dev, &end, 10);
    if (!*end && n >= 0 && n < count) return (int)n;
    exec_fail(CF_ERR_NO_DEVICE, why, len, "CFUSER_DEVICE=%s names no device: this process sees %d CUDA device%s", dev,
              count, count == 1 ? "" : "s");
    return -1;
  }
  if (local && *local) {
    long n = strtol(local, &end, 10);
    if (!*end && n >= 0 && n < count) return (int)n;
  }
  return 0;
}

/* cuInit, the process's device (process_ordinal), its attributes and primary context;
 * the reason on failure. */
static cf_status open_device(CudaState *s) {
  char *why = s->reason;
  size_t len = sizeof s->reason;
  CUresult r = CU->cuInit(0);
  if (r == CUDA_ERROR_NO_DEVICE)
    return exec_fail(CF_ERR_NO_DEVICE, why, len, "no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE)");
  if (r != CUDA_SUCCESS) {
    cf_status st = cu_fail(r, why, len, "cuInit");
    return st == CF_ERR_CUDA ? CF_ERR_NO_DEVICE : st;
  }
  int count = 0;
  r = CU->cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS) return cu_fail(r, why, len, "cuDeviceGetCount");
  s->count = count;
  if (count == 0) return exec_fail(CF_ERR_NO_DEVICE, why, len, "no CUDA device");
  int ordinal = process_ordinal(count, why, len);
  if (ordinal < 0) return CF_ERR_NO_DEVICE;
  if ((r = CU->cuDeviceGet(&s->dev, ordinal)) != CUDA_SUCCESS) return cu_fail(r, why, len, "cuDeviceGet(%d)", ordinal);
  if ((r = CU->cuDriverGetVersion(&s->info.driver_version)) != CUDA_SUCCESS)
    return cu_fail(r, why, len, "cuDriverGetVersion");
  if ((r = read_attributes(s->dev, &s->info)) != CUDA_SUCCESS)
    return cu_fail(r, why, len, "cuDeviceGetAttribute/cuDeviceGetName");
  r = CU->cuDevicePrimaryCtxRetain(&s->ctx, s->dev);
  if (r != CUDA_SUCCESS) return cu_fail(r, why, len, "cuDevicePrimaryCtxRetain");
  s->info.ordinal = ordinal;
  exec_arch_for_cc(s->info.cc_major, s->info.cc_minor, s->info.arch, sizeof s->info.arch);
  return CF_OK;
}

static void cuda_init_once(void) {
  CudaState *s = &g_cuda;
  if (!load_driver(s)) {
    s->status = CF_ERR_NO_DEVICE;
    return;
  }
  s->status = open_device(s);
}

/* The one-time initialization, then the primary context made current on this thread
 * (a cheap check when it already is). */
cf_status exec_cuda_init(char *err, size_t errlen) {
  pthread_once(&g_cuda_once, cuda_init_once);
  if (g_cuda.status != CF_OK) return exec_fail(g_cuda.status, err, errlen, "%s", g_cuda.reason);
  CUcontext cur = NULL;
  CUresult r = CU->cuCtxGetCurrent(&cur);
  if (r != CUDA_SUCCESS) return cu_fail(r, err, errlen, "cuCtxGetCurrent");
  if (cur == g_cuda.ctx) return CF_OK;
  r = CU->cuCtxSetCurrent(g_cuda.ctx);
  if (r != CUDA_SUCCESS) return cu_fail(r, err, errlen, "cuCtxSetCurrent(primary context)");
  return CF_OK;
}

const ExecDeviceInfo *exec_device_info(void) {
  pthread_once(&g_cuda_once, cuda_init_once);
  return g_cuda.status == CF_OK ? &g_cuda.info : NULL;
}

const char *exec_device_arch(void) {
  const ExecDeviceInfo *in = exec_device_info();
  return in ? in->arch : NULL;
}

bool cf_cuda_available(const char **reason) {
  pthread_once(&g_cuda_once, cuda_init_once);
  if (reason) *reason = g_cuda.status == CF_OK ? "" : g_cuda.reason;
  return g_cuda.status == CF_OK;
}

/* ---- memory ------------------------------------------------------------------------------ */

/* The device's primary context made current (the process's device for EXEC_PROCESS_DEVICE). */
static cf_status use_device(int device, char *err, size_t errlen) {
  const ExecDeviceInfo *info = NULL;
  return device == EXEC_PROCESS_DEVICE ? exec_cuda_init(err, errlen) : exec_device_open(device, &info, err, errlen);
}

cf_status exec_mem_alloc(int device, size_t bytes, ExecDevPtr *out, char *err, size_t errlen) {
  *out = 0;
  cf_status st = use_device(device, err, errlen);
  if (st != CF_OK) return st;
  CUdeviceptr p = 0;
  CUresult r = CU->cuMemAlloc(&p, bytes);
  if (r != CUDA_SUCCESS) return cu_fail(r, err, errlen, "%s(%zu bytes)", EXEC_STR(cuMemAlloc), bytes);
  *out = (ExecDevPtr)p;
  return CF_OK;
}

cf_status exec_mem_free(int device, ExecDevPtr p, char *err, size_t errlen) {
  if (p == 0) return CF_OK;
  cf_status st = use_device(device, err, errlen);
  if (st != CF_OK) return st;
  CUresult r = CU->cuMemFree((CUdeviceptr)p);
  if (r != CUDA_SUCCESS) return cu_fail(r, err, errlen, "%s(0x%llx)", EXEC_STR(cuMemFree),
                                        (unsigned long long)p);
  return CF_OK;
}

cf_status exec_tensor_map_encode(int device, void *out, int esz, int rank, uint64_t addr, const uint64_t *dims,
                                 const uint64_t *strides, const uint32_t *box, int swizzle, char *err, size_t errlen) {
  cf_status st = use_device(device, err, errlen);
  if (st != CF_OK) return st;
  static const CUtensorMapDataType types[9] = {[1] = CU_TENSOR_MAP_DATA_TYPE_UINT8, [2] = CU_TENSOR_MAP_DATA_TYPE_UINT16,
                                               [4] = CU_TENSOR_MAP_DATA_TYPE_UINT32, [8] = CU_TENSOR_MAP_DATA_TYPE_UINT64};
  CUtensorMapSwizzle sw = swizzle == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
                          : swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                          : swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                          : CU_TENSOR_MAP_SWIZZLE_NONE;
  if (esz < 1 || esz > 8 || (esz & (esz - 1)) || rank < 1 || rank > 5)
    return exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen, "a tensor map of rank %d with %d-byte elements", rank, esz);
  cuuint64_t d[5], s[4];
  cuuint32_t b[5], one[5] = {1, 1, 1, 1, 1};
  for (int i = 0; i < rank; i++) {
    d[i] = dims[i], b[i] = box[i];
    if (i + 1 < rank) s[i] = strides[i];
  }
  CUresult r = CU->cuTensorMapEncodeTiled((CUtensorMap *)out, types[esz], (cuuint32_t)rank, (void *)(uintptr_t)addr, d, s,
                                          b, one, CU_TENSOR_MAP_INTERLEAVE_NONE, sw, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                          CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return cu_fail(r, err, errlen, "cuTensorMapEncodeTiled(rank %d, address 0x%llx, box %ux%u, swizzle %d)", rank,
                   (unsigned long long)addr, b[0], rank > 1 ? b[1] : 1, swizzle);
  return CF_OK;
}

cf_status exec_mem_zero_async(int device, ExecDevPtr p, size_t bytes, void *stream, char *err, size_t errlen) {
  if (bytes == 0) return CF_OK;
  cf_status st = use_device(device, err, errlen);
  if (st != CF_OK) return st;
  CUresult r = CU->cuMemsetD8Async((CUdeviceptr)p, 0, bytes, (CUstream)stream);
  if (r != CUDA_SUCCESS) return cu_fail(r, err, errlen, "cuMemsetD8Async(%zu bytes on cuda:%d)", bytes, device);
  return CF_OK;
}

cf_status exec_memcpy_htod(int device, ExecDevPtr dst, const void *src, size_t bytes, char *err, size_t errlen) {
  cf_status st = use_device(device, err, errlen);
  if (st != CF_OK || bytes == 0) return st;
  CUresult r = CU->cuMemcpyHtoD((CUdeviceptr)dst, src, bytes);
  if (r != CUDA_SUCCESS)
    return cu_fail(r, err, errlen, "%s(%zu bytes)", EXEC_STR(cuMemcpyHtoD), bytes);
  return CF_OK;
}

cf_status exec_memcpy_dtoh(int device, void *dst, ExecDevPtr src, size_t bytes, char *err, size_t errlen) {
  cf_status st = use_device(device, err, errlen);
  if (st != CF_OK || bytes == 0) return st;
  CUresult r = CU->cuMemcpyDtoH(dst, (CUdeviceptr)src, bytes);
  if (r != CUDA_SUCCESS)
    return cu_fail(r, err, errlen, "%s(%zu bytes)", EXEC_STR(cuMemcpyDtoH), bytes);
  return CF_OK;
}

cf_status exec_memcpy_dtod(int device, ExecDevPtr dst, ExecDevPtr src, size_t bytes, char *err, size_t errlen) {
  cf_status st = use_device(device, err, errlen);
  if (st != CF_OK || bytes == 0) return st;
  CUresult r = CU->cuMemcpyDtoD((CUdeviceptr)dst, (CUdeviceptr)src, bytes);
  if (r != CUDA_SUCCESS)
    return cu_fail(r, err, errlen, "%s(%zu bytes)", EXEC_STR(cuMemcpyDtoD), bytes);
  return CF_OK;
}

/* ---- modules and launches ------------------------------------------------------------------ */

cf_status exec_kernel_load(const void *cubin, const char *lowered_name, ExecKernel *out,
                           char *err, size_t errlen) {
  return exec_kernel_load_on(0, cubin, lowered_name, out, err, errlen);
}

cf_status exec_kernel_load_on(int device, const void *cubin, const char *lowered_name,
                              ExecKernel *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  if (cubin == NULL || lowered_name == NULL)
    return exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen, "exec_kernel_load: %s is NULL",
                     cubin == NULL ? "cubin" : "kernel name");
  const ExecDeviceInfo *info = NULL;
  cf_status st = exec_device_open(device, &info, err, errlen);
  if (st != CF_OK) return st;
  CUmodule mod = NULL;
  CUresult r = CU->cuModuleLoadData(&mod, cubin);
  if (r != CUDA_SUCCESS)
    return cu_fail(r, err, errlen, "cuModuleLoadData (a cubin for cuda:%d's %s?)", device,
                   info->arch);
  CUfunction fn = NULL;
  r = CU->cuModuleGetFunction(&fn, mod, lowered_name);
  if (r != CUDA_SUCCESS) {
    cf_status fs = cu_fail(r, err, errlen, "cuModuleGetFunction(\"%s\")", lowered_name);
    CU->cuModuleUnload(mod); /* the first error is the one worth reporting */
    return fs;
  }
  out->module = mod;
  out->function = fn;
  out->device = device;
  return CF_OK;
}

cf_status exec_kernel_unload(ExecKernel *k, char *err, size_t errlen) {
  if (k == NULL || k->module == NULL) return CF_OK;
  const ExecDeviceInfo *info = NULL;
  cf_status st = exec_device_open(k->device, &info, err, errlen);
  if (st != CF_OK) return st;
  CUresult r = CU->cuModuleUnload((CUmodule)k->module);
  k->module = k->function = NULL;
  if (r != CUDA_SUCCESS) return cu_fail(r, err, errlen, "cuModuleUnload");
  return CF_OK;
}

cf_status exec_kernel_set_max_dynamic_smem(const ExecKernel *k, int64_t bytes, char *err,
                                           size_t errlen) {
  if (k == NULL || k->function == NULL)
    return exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen, "no kernel loaded");
  const ExecDeviceInfo *info = NULL;
  cf_status st = exec_device_open(k->device, &info, err, errlen);
  if (st != CF_OK) return st;
  if (bytes < 0 || bytes > info->max_smem_optin)
    return exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen,
                     "%lld bytes of dynamic shared memory exceed the limit of %s (%d bytes)",
                     (long long)bytes, info->name, info->max_smem_optin);
  CUresult r = CU->cuFuncSetAttribute((CUfunction)k->function,
                                     CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)bytes);
  if (r != CUDA_SUCCESS)
    return cu_fail(r, err, errlen, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, %lld)",
                   (long long)bytes);
  return CF_OK;
}

/* Hardware limits of every GPU since compute capability 3.0. */
static cf_status check_launch_dims(const ExecDeviceInfo *info, const int64_t grid[3],
                                   const int64_t block[3], int64_t smem, char *err, size_t errlen) {
  static const int64_t grid_max[3] = {INT32_MAX, 65535, 65535};
  static const int64_t block_max[3] = {1024, 1024, 64};
  static const char axis[3] = {'x', 'y', 'z'};
  for (int i = 0; i < 3; i++) {
    if (grid[i] < 1 || grid[i] > grid_max[i])
      return exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen,
                       "launch: gridDim.%c = %lld is outside [1, %lld]", axis[i],
                       (long long)grid[i], (long long)grid_max[i]);
    if (block[i] < 1 || block[i] > block_max[i])
      return exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen,
                       "launch: blockDim.%c = %lld is outside [1, %lld]", axis[i],
                       (long long)block[i], (long long)block_max[i]);
  }
  int64_t threads = block[0] * block[1] * block[2];
  if (threads > 1024)
    return exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen,
                     "launch: %lldx%lldx%lld = %lld threads per block exceed 1024",
                     (long long)block[0], (long long)block[1], (long long)block[2],
                     (long long)threads);
  if (smem < 0 || smem > info->max_smem_optin)
    return exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen,
                     "launch: %lld bytes of dynamic shared memory exceed the limit of %s "
                     "(%d bytes)", (long long)smem, info->name, info->max_smem_optin);
  return CF_OK;
}

/* Raises the kernel's dynamic shared memory limit when smem is above it. */
static cf_status fit_dynamic_smem(const ExecKernel *k, int64_t smem, char *err, size_t errlen) {
  if (smem == 0) return CF_OK;
  int limit = 0;
  CUresult r = CU->cuFuncGetAttribute(&limit, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                     (CUfunction)k->function);
  if (r != CUDA_SUCCESS)
    return cu_fail(r, err, errlen, "cuFuncGetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  return smem <= limit ? CF_OK : exec_kernel_set_max_dynamic_smem(k, smem, err, errlen);
}

cf_status exec_launch(const ExecKernel *k, const int64_t grid[3], const int64_t block[3],
                      int64_t smem, void **args, char *err, size_t errlen) {
  if (k == NULL || k->function == NULL)
    return exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen, "launch: no kernel loaded");
  const ExecDeviceInfo *info = NULL;
  cf_status st = exec_device_open(k->device, &info, err, errlen);
  if (st != CF_OK) return st;
  return exec_launch_async(k, info, grid, block, smem, NULL, args, err, errlen);
}

/* What every launch checks first: a loaded kernel, CUDA's limits, the dynamic shared memory. */
static cf_status launch_ready(const ExecKernel *k, const ExecDeviceInfo *info, const int64_t grid[3],
                              const int64_t block[3], int64_t smem, char *err, size_t errlen) {
  if (k == NULL || k->function == NULL || info == NULL)
    return exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen, "launch: no kernel loaded");
  cf_status st = check_launch_dims(info, grid, block, smem, err, errlen);
  return st != CF_OK ? st : fit_dynamic_smem(k, smem, err, errlen);
}

cf_status exec_launch_async(const ExecKernel *k, const ExecDeviceInfo *info, const int64_t grid[3],
                            const int64_t block[3], int64_t smem, void *stream, void **args,
                            char *err, size_t errlen) {
  cf_status st = launch_ready(k, info, grid, block, smem, err, errlen);
  if (st != CF_OK) return st;
  CUresult r = CU->cuLaunchKernel((CUfunction)k->function, (unsigned)grid[0], (unsigned)grid[1],
                                 (unsigned)grid[2], (unsigned)block[0], (unsigned)block[1],
                                 (unsigned)block[2], (unsigned)smem, (CUstream)stream, args, NULL);
  if (r != CUDA_SUCCESS)
    return cu_fail(r, err, errlen, "cuLaunchKernel(grid %lldx%lldx%lld, block %lldx%lldx%lld, "
                   "%lld bytes of shared memory)", (long long)grid[0], (long long)grid[1],
                   (long long)grid[2], (long long)block[0], (long long)block[1],
                   (long long)block[2], (long long)smem);
  return CF_OK;
}

cf_status exec_launch_cooperative_async(const ExecKernel *k, const ExecDeviceInfo *info, const int64_t grid[3],
                                        const int64_t block[3], int64_t smem, void *stream, void **args, char *err,
                                        size_t errlen) {
  cf_status st = launch_ready(k, info, grid, block, smem, err, errlen);
  if (st != CF_OK) return st;
  int per_sm = 0;
  long long threads = (long long)(block[0] * block[1] * block[2]), blocks = (long long)(grid[0] * grid[1] * grid[2]);
  CUresult r = CU->cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, (CUfunction)k->function, (int)threads,
                                                               (size_t)smem);
  if (r != CUDA_SUCCESS) return cu_fail(r, err, errlen, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  if (blocks > (long long)per_sm * info->num_sms)
    return exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen,
                     "cooperative launch: the grid has %lld blocks of %lld threads (%lld bytes of shared memory "
                     "each), but only %d per SM x %d SMs can be resident at once, and a grid sync needs them all",
                     blocks, threads, (long long)smem, per_sm, info->num_sms);
  r = CU->cuLaunchCooperativeKernel((CUfunction)k->function, (unsigned)grid[0], (unsigned)grid[1], (unsigned)grid[2],
                                    (unsigned)block[0], (unsigned)block[1], (unsigned)block[2], (unsigned)smem,
                                    (CUstream)stream, args);
  if (r != CUDA_SUCCESS)
    return cu_fail(r, err, errlen, "cuLaunchCooperativeKernel(grid %lldx%lldx%lld, block %lldx%lldx%lld, "
                   "%lld bytes of shared memory)", (long long)grid[0], (long long)grid[1], (long long)grid[2],
                   (long long)block[0], (long long)block[1], (long long)block[2], (long long)smem);
  return CF_OK;
}

cf_status exec_synchronize(char *err, size_t errlen) {
  cf_status st = exec_cuda_init(err, errlen);
  if (st != CF_OK) return st;
  CUresult r = CU->cuCtxSynchronize();
  if (r != CUDA_SUCCESS) return cu_fail(r, err, errlen, "cuCtxSynchronize (after the kernel)");
  return CF_OK;
}

/* ---- every device: primary contexts, streams, stream-ordered memory ------------------------ */

/* One per device ordinal, opened on first use under g_devs_lock; `ready` is published last
 * (release) so that the fast path reads it without the lock. */
typedef struct DeviceSlot {
  bool ready;
  CUcontext ctx;
  ExecDeviceInfo info;
} DeviceSlot;

static DeviceSlot g_devs[EXEC_MAX_DEVICES];
static pthread_mutex_t g_devs_lock = PTHREAD_MUTEX_INITIALIZER;

/* The device's attributes, its primary context, and a default memory pool that keeps freed
 * memory cached (release threshold: unlimited), so that a loop of runs allocating outputs in
 * stream order gets them from the pool after the first. */
static cf_status open_slot(int ordinal, DeviceSlot *d, char *err, size_t errlen) {
  CUdevice dev;
  CUresult r = CU->cuDeviceGet(&dev, ordinal);
  if (r != CUDA_SUCCESS) return cu_fail(r, err, errlen, "cuDeviceGet(%d)", ordinal);
  d->info.driver_version = g_cuda.info.driver_version;
  if ((r = read_attributes(dev, &d->info)) != CUDA_SUCCESS)
    return cu_fail(r, err, errlen, "cuDeviceGetAttribute/cuDeviceGetName(cuda:%d)", ordinal);
  if ((r = CU->cuDevicePrimaryCtxRetain(&d->ctx, dev)) != CUDA_SUCCESS)
    return cu_fail(r, err, errlen, "cuDevicePrimaryCtxRetain(cuda:%d)", ordinal);
  d->info.ordinal = ordinal;
  exec_arch_for_cc(d->info.cc_major, d->info.cc_minor, d->info.arch, sizeof d->info.arch);
  CUmemoryPool pool;
  cuuint64_t keep = UINT64_MAX;
  if ((r = CU->cuDeviceGetDefaultMemPool(&pool, dev)) == CUDA_SUCCESS)
    r = CU->cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep);
  if (r != CUDA_SUCCESS) return cu_fail(r, err, errlen, "setting up the memory pool of cuda:%d", ordinal);
  __atomic_store_n(&d->ready, true, __ATOMIC_RELEASE);
  return CF_OK;
}

cf_status exec_device_open(int ordinal, const ExecDeviceInfo **info, char *err, size_t errlen) {
  pthread_once(&g_cuda_once, cuda_init_once);
  if (g_cuda.status != CF_OK) return exec_fail(g_cuda.status, err, errlen, "%s", g_cuda.reason);
  if (ordinal < 0 || ordinal >= g_cuda.count)
    return exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen,
                     "cuda:%d does not exist: this process sees %d CUDA device%s", ordinal,
                     g_cuda.count, g_cuda.count == 1 ? "" : "s");
  if (ordinal >= EXEC_MAX_DEVICES)
    return exec_fail(CF_ERR_UNSUPPORTED, err, errlen,
                     "cuda:%d: cfuser uses at most %d devices per process", ordinal,
                     EXEC_MAX_DEVICES);
  DeviceSlot *d = &g_devs[ordinal];
  cf_status st = CF_OK;
  if (!__atomic_load_n(&d->ready, __ATOMIC_ACQUIRE)) {
    pthread_mutex_lock(&g_devs_lock);
    if (!d->ready) st = open_slot(ordinal, d, err, errlen);
    pthread_mutex_unlock(&g_devs_lock);
    if (st != CF_OK) return st;
  }
  CUcontext cur = NULL;
  CUresult r = CU->cuCtxGetCurrent(&cur);
  if (r == CUDA_SUCCESS && cur != d->ctx) r = CU->cuCtxSetCurrent(d->ctx);
  if (r != CUDA_SUCCESS) return cu_fail(r, err, errlen, "making cuda:%d's primary context current", ordinal);
  *info = &d->info;
  return CF_OK;
}

cf_status exec_mem_alloc_async(int device, size_t bytes, void *stream, ExecDevPtr *out, char *err,
                               size_t errlen) {
  *out = 0;
  const ExecDeviceInfo *info = NULL;
  cf_status st = exec_device_open(device, &info, err, errlen);
  if (st != CF_OK) return st;
  CUdeviceptr p = 0;
  CUresult r = CU->cuMemAllocAsync(&p, bytes, (CUstream)stream);
  if (r != CUDA_SUCCESS)
    return cu_fail(r, err, errlen, "cuMemAllocAsync(%zu bytes on cuda:%d)", bytes, device);
  *out = (ExecDevPtr)p;
  return CF_OK;
}

cf_status exec_mem_free_async(int device, ExecDevPtr p, void *stream, char *err, size_t errlen) {
  if (p == 0) return CF_OK;
  const ExecDeviceInfo *info = NULL;
  cf_status st = exec_device_open(device, &info, err, errlen);
  if (st != CF_OK) return st;
  CUresult r = CU->cuMemFreeAsync((CUdeviceptr)p, (CUstream)stream);
  if (r != CUDA_SUCCESS) return cu_fail(r, err, errlen, "cuMemFreeAsync(0x%llx)", (unsigned long long)p);
  return CF_OK;
}

cf_status exec_stream_synchronize(int device, void *stream, char *err, size_t errlen) {
  const ExecDeviceInfo *info = NULL;
  cf_status st = exec_device_open(device, &info, err, errlen);
  if (st != CF_OK) return st;
  CUresult r = CU->cuStreamSynchronize((CUstream)stream);
  if (r != CUDA_SUCCESS) return cu_fail(r, err, errlen, "cuStreamSynchronize");
  return CF_OK;
}

/* ---- CUDA graphs: one capture of a stream's launches, replayed as one launch ----------------- */

cf_status exec_graph_begin(int device, void *stream, char *err, size_t errlen) {
  const ExecDeviceInfo *info = NULL;
  cf_status st = exec_device_open(device, &info, err, errlen);
  if (st != CF_OK) return st;
  /* thread-local: only this thread's unsafe calls (a synchronous copy) end the capture */
  CUresult r = CU->cuStreamBeginCapture((CUstream)stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  return r == CUDA_SUCCESS ? CF_OK : cu_fail(r, err, errlen, "cuStreamBeginCapture");
}

cf_status exec_graph_end(int device, void *stream, bool keep, ExecGraph *out, char *err, size_t errlen) {
  const ExecDeviceInfo *info = NULL;
  CUgraph graph = NULL;
  CUgraphExec exec = NULL;
  *out = (ExecGraph){0};
  cf_status st = exec_device_open(device, &info, err, errlen);
  if (st != CF_OK) return st;
  CUresult r = CU->cuStreamEndCapture((CUstream)stream, &graph);
  if (r != CUDA_SUCCESS) return cu_fail(r, err, errlen, "cuStreamEndCapture");
  if (keep) r = CU->cuGraphInstantiateWithFlags(&exec, graph, 0);
  CU->cuGraphDestroy(graph);
  if (r != CUDA_SUCCESS) return cu_fail(r, err, errlen, "cuGraphInstantiateWithFlags");
  *out = (ExecGraph){device, exec};
  return CF_OK;
}

cf_status exec_graph_launch(const ExecGraph *g, void *stream, char *err, size_t errlen) {
  const ExecDeviceInfo *info = NULL;
  cf_status st = exec_device_open(g->device, &info, err, errlen);
  if (st != CF_OK) return st;
  CUresult r = CU->cuGraphLaunch((CUgraphExec)g->exec, (CUstream)stream);
  return r == CUDA_SUCCESS ? CF_OK : cu_fail(r, err, errlen, "cuGraphLaunch");
}

cf_status exec_stream_create(int device, void **stream, char *err, size_t errlen) {
  const ExecDeviceInfo *info = NULL;
  CUstream st = NULL;
  *stream = NULL;
  cf_status s = exec_device_open(device, &info, err, errlen);
  if (s != CF_OK) return s;
  CUresult r = CU->cuStreamCreate(&st, CU_STREAM_NON_BLOCKING);
  if (r != CUDA_SUCCESS) return cu_fail(r, err, errlen, "cuStreamCreate");
  *stream = st;
  return CF_OK;
}

void exec_stream_destroy(int device, void *stream) {
  const ExecDeviceInfo *info = NULL;
  char err[256];
  if (stream && exec_device_open(device, &info, err, sizeof err) == CF_OK) CU->cuStreamDestroy((CUstream)stream);
}

void exec_graph_destroy(ExecGraph *g) {
  const ExecDeviceInfo *info = NULL;
  char err[256];
  if (g->exec && exec_device_open(g->device, &info, err, sizeof err) == CF_OK) CU->cuGraphExecDestroy((CUgraphExec)g->exec);
  *g = (ExecGraph){0};
}

#else /* !EXEC_HAVE_CUDA_H: built without the driver header, there is never a device. */

static const char k_no_header[] =
    "cfuser was built without the CUDA driver header <cuda.h>: no CUDA device support";

static cf_status no_device(char *err, size_t errlen) {
  return exec_fail(CF_ERR_NO_DEVICE, err, errlen, "%s", k_no_header);
}

cf_status exec_cuda_init(char *err, size_t errlen) { return no_device(err, errlen); }
const ExecDeviceInfo *exec_device_info(void) { return NULL; }
const char *exec_device_arch(void) { return NULL; }
bool cf_cuda_available(const char **reason) {
  if (reason) *reason = k_no_header;
  return false;
}
cf_status exec_mem_alloc(int device, size_t bytes, ExecDevPtr *out, char *err, size_t errlen) {
  (void)device, (void)bytes;
  *out = 0;
  return no_device(err, errlen);
}
cf_status exec_mem_free(int device, ExecDevPtr p, char *err, size_t errlen) {
  (void)device;
  return p == 0 ? CF_OK : no_device(err, errlen);
}
cf_status exec_mem_zero_async(int device, ExecDevPtr p, size_t bytes, void *stream, char *err, size_t errlen) {
  (void)device, (void)p, (void)stream;
  return bytes == 0 ? CF_OK : no_device(err, errlen);
}
cf_status exec_tensor_map_encode(int device, void *out, int esz, int rank, uint64_t addr, const uint64_t *dims,
                                 const uint64_t *strides, const uint32_t *box, int swizzle, char *err, size_t errlen) {
  (void)device, (void)out, (void)esz, (void)rank, (void)addr, (void)dims, (void)strides, (void)box, (void)swizzle;
  return no_device(err, errlen);
}
cf_status exec_memcpy_htod(int device, ExecDevPtr dst, const void *src, size_t bytes, char *err, size_t errlen) {
  (void)device, (void)dst, (void)src, (void)bytes;
  return no_device(err, errlen);
}
cf_status exec_memcpy_dtoh(int device, void *dst, ExecDevPtr src, size_t bytes, char *err, size_t errlen) {
  (void)device, (void)dst, (void)src, (void)bytes;
  return no_device(err, errlen);
}
cf_status exec_memcpy_dtod(int device, ExecDevPtr dst, ExecDevPtr src, size_t bytes, char *err, size_t errlen) {
  (void)device, (void)dst, (void)src, (void)bytes;
  return no_device(err, errlen);
}
cf_status exec_kernel_load(const void *cubin, const char *lowered_name, ExecKernel *out,
                           char *err, size_t errlen) {
  (void)cubin, (void)lowered_name;
  memset(out, 0, sizeof *out);
  return no_device(err, errlen);
}
cf_status exec_kernel_unload(ExecKernel *k, char *err, size_t errlen) {
  return k == NULL || k->module == NULL ? CF_OK : no_device(err, errlen);
}
cf_status exec_kernel_set_max_dynamic_smem(const ExecKernel *k, int64_t bytes, char *err,
                                           size_t errlen) {
  (void)k, (void)bytes;
  return no_device(err, errlen);
}
cf_status exec_launch(const ExecKernel *k, const int64_t grid[3], const int64_t block[3],
                      int64_t smem, void **args, char *err, size_t errlen) {
  (void)k, (void)grid, (void)block, (void)smem, (void)args;
  return no_device(err, errlen);
}
cf_status exec_launch_cooperative_async(const ExecKernel *k, const ExecDeviceInfo *info, const int64_t grid[3],
                                        const int64_t block[3], int64_t smem, void *stream, void **args, char *err,
                                        size_t errlen) {
  (void)k, (void)info, (void)grid, (void)block, (void)smem, (void)stream, (void)args;
  return no_device(err, errlen);
}
cf_status exec_synchronize(char *err, size_t errlen) { return no_device(err, errlen); }
cf_status exec_device_open(int ordinal, const ExecDeviceInfo **info, char *err, size_t errlen) {
  (void)ordinal;
  *info = NULL;
  return no_device(err, errlen);
}
cf_status exec_kernel_load_on(int device, const void *cubin, const char *lowered_name,
                              ExecKernel *out, char *err, size_t errlen) {
  (void)device;
  return exec_kernel_load(cubin, lowered_name, out, err, errlen);
}
cf_status exec_launch_async(const ExecKernel *k, const ExecDeviceInfo *info, const int64_t grid[3],
                            const int64_t block[3], int64_t smem, void *stream, void **args,
                            char *err, size_t errlen) {
  (void)k, (void)info, (void)grid, (void)block, (void)smem, (void)stream, (void)args;
  return no_device(err, errlen);
}
cf_status exec_mem_alloc_async(int device, size_t bytes, void *stream, ExecDevPtr *out, char *err,
                               size_t errlen) {
  (void)device, (void)bytes, (void)stream;
  *out = 0;
  return no_device(err, errlen);
}
cf_status exec_mem_free_async(int device, ExecDevPtr p, void *stream, char *err, size_t errlen) {
  (void)device, (void)stream;
  return p == 0 ? CF_OK : no_device(err, errlen);
}
cf_status exec_stream_synchronize(int device, void *stream, char *err, size_t errlen) {
  (void)device, (void)stream;
  return no_device(err, errlen);
}
cf_status exec_graph_begin(int device, void *stream, char *err, size_t errlen) {
  (void)device, (void)stream;
  return no_device(err, errlen);
}
cf_status exec_graph_end(int device, void *stream, bool keep, ExecGraph *out, char *err, size_t errlen) {
  (void)device, (void)stream, (void)keep;
  *out = (ExecGraph){0};
  return no_device(err, errlen);
}
cf_status exec_graph_launch(const ExecGraph *g, void *stream, char *err, size_t errlen) {
  (void)g, (void)stream;
  return no_device(err, errlen);
}
void exec_graph_destroy(ExecGraph *g) { *g = (ExecGraph){0}; }
cf_status exec_stream_create(int device, void **stream, char *err, size_t errlen) {
  (void)device;
  *stream = NULL;
  return no_device(err, errlen);
}
void exec_stream_destroy(int device, void *stream) { (void)device, (void)stream; }

#endif
