/* executor/executor_internal.h: the executor object shared by executor.c (create,
 * compile, accessors) and run.c (argument checks, binding, launch). Internal. */
#ifndef CFUSER_EXECUTOR_INTERNAL_H
#define CFUSER_EXECUTOR_INTERNAL_H

#include "codegen/codegen.h"
#include "executor/exec_cuda.h"
#include "executor/exec_host.h"
#include "lower/lower.h"

struct cf_executor {
  cf_executor_options opts;
  char arch[16];
  cf_backend backend;
  char *error;          /* malloc'd message of the last failure */
  cf_lowering_hook hook;
  void *hook_user;
  KKernel *k;           /* the lowered kernel (owns its arena) */
  char *source;
  bool compile_only;
  ExecCubin cubin;      /* CUDA */
  ExecKernel kernel;
  ExecHostModule *host; /* host backend */
  ExecHostCall *call;
  cf_launch_params last;
};

/* Records a message on e and returns s. */
cf_status exec_error(cf_executor *e, cf_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
