/* executor/backend.c: which backend a compile uses, CUDA or host, and which memory each
 * backend reads.
 *
 * Shared by the executor's two backends; it sits before lowering in cf_executor_compile.
 * An explicit request (an executor option) wins; CF_BACKEND_AUTO consults
 * $CFUSER_BACKEND (host|cuda, any case) and otherwise probes for a usable CUDA device
 * through a callback, so this file depends on neither backend and the probe (which loads
 * the driver) runs only when needed. An invalid $CFUSER_BACKEND is an error, never
 * silently ignored: a CI job that asks for the host backend must not run elsewhere. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "executor/exec_host.h"

cf_status exec_backend_choose(cf_backend requested, bool (*cuda_usable)(const char **reason),
                              cf_backend *out, char *err, size_t errlen) {
  if (err && errlen) err[0] = 0;
  if (!out) return CF_ERR_INVALID_ARGUMENT;
  if (requested == CF_BACKEND_CUDA || requested == CF_BACKEND_HOST) {
    *out = requested;
    return CF_OK;
  }
  if (requested != CF_BACKEND_AUTO) {
    if (err && errlen) snprintf(err, errlen, "unknown backend %d", (int)requested);
    return CF_ERR_INVALID_ARGUMENT;
  }
  const char *env = getenv("CFUSER_BACKEND");
  if (env && *env) {
    if (strcasecmp(env, "host") == 0) *out = CF_BACKEND_HOST;
    else if (strcasecmp(env, "cuda") == 0) *out = CF_BACKEND_CUDA;
    else {
      if (err && errlen)
        snprintf(err, errlen, "CFUSER_BACKEND=%s is not a backend: use host or cuda, or unset "
                 "it to choose automatically (CUDA when a device is usable, host otherwise)", env);
      return CF_ERR_INVALID_ARGUMENT;
    }
    return CF_OK;
  }
  *out = cuda_usable && cuda_usable(NULL) ? CF_BACKEND_CUDA : CF_BACKEND_HOST;
  return CF_OK;
}

bool exec_backend_reads(cf_backend b, DLDeviceType t) {
  return b == CF_BACKEND_HOST ? (t == kDLCPU || t == kDLCUDAHost) : (t == kDLCUDA || t == kDLCUDAManaged);
}

const char *exec_memory_name(DLDeviceType t) {
  switch (t) {
  case kDLCPU: return "host memory (kDLCPU)";
  case kDLCUDA: return "device memory (kDLCUDA)";
  case kDLCUDAHost: return "pinned host memory (kDLCUDAHost)";
  case kDLCUDAManaged: return "managed memory (kDLCUDAManaged)";
  default: return "an unsupported device";
  }
}
