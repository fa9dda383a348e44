/* executor/nccl.c: NCCL loaded with dlopen("libnccl.so.2"), once per process, as the
 * CUDA driver is (cuda_driver.c), so cfuser builds and loads where NCCL is missing and
 * says what it lacks. Every entry point of nccl_api.h is resolved by name; one missing
 * symbol makes NCCL unavailable (an older NCCL than 2.18: no ncclCommSplit). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "executor/nccl_api.h"
#include "ir/ir.h"

static NcclApi api;
static const char *api_why;
static char why_buf[256];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void) {
  const char *lib = getenv("CFUSER_NCCL_LIBRARY");
  void *h = dlopen(lib && *lib ? lib : "libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(why_buf, sizeof why_buf, "NCCL unavailable: %s not found (%s)", lib && *lib ? lib : "libnccl.so.2",
             dlerror());
    api_why = why_buf;
    return;
  }
#define NCCL_X(name, ret, params)                                                                          \
  if (!(*(void **)&api.name = dlsym(h, #name))) {                                                          \
    snprintf(why_buf, sizeof why_buf, "NCCL unavailable: libnccl.so.2 has no %s (NCCL 2.18 or later needed)", \
             #name);                                                                                       \
    api_why = why_buf;                                                                                     \
    return;                                                                                                \
  }
  NCCL_FN_TABLE(NCCL_X)
#undef NCCL_X
}

const NcclApi *nccl_api(const char **why) {
  pthread_once(&once, load);
  if (why) *why = api_why;
  return api_why ? NULL : &api;
}

bool cf_nccl_available(const char **why) { return nccl_api(why) != NULL; }
