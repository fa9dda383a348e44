/* executor/host_module.h: what executor/host.c (the compiler driver and loader) and
 * executor/host_call.c (calls and launches) share of a loaded host kernel: its module and
 * the runtime's launch entry point. Internal to executor/. */
#ifndef CFUSER_EXECUTOR_HOST_MODULE_H
#define CFUSER_EXECUTOR_HOST_MODULE_H

#include <stdbool.h>
#include <stddef.h>

#include "executor/exec_host.h"

/* cfh_launch in host_runtime.h */
typedef int (*CfhLaunchFn)(const unsigned int grid[3], const unsigned int block[3], size_t smem,
                           void (*body)(void *), void *arg, char *err, size_t errlen);
enum { CFH_OK = 0, CFH_ERR_CONFIG = 1, CFH_ERR_RUNTIME = 2, CFH_ERR_NOMEM = 3 };

struct ExecHostModule {
  void *handle;
  void (*kernel)(void);
  CfhLaunchFn launch;
  char *path;
  bool cache_hit;
  double seconds;
  void *binary;
  size_t binary_size;
};

/* Formats a message into e (nothing when e is NULL). */
__attribute__((format(printf, 2, 3))) void exec_host_set_error(ExecHostError *e, const char *fmt, ...);

#endif
