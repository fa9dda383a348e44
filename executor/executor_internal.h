/* executor/executor_internal.h: the executor object shared by executor.c (create,
 * compile, accessors) and run.c (argument checks, binding, launch). Internal. */
#ifndef CFUSER_EXECUTOR_INTERNAL_H
#define CFUSER_EXECUTOR_INTERNAL_H

#include "codegen/codegen.h"
#include "executor/exec_cuda.h"
#include "executor/exec_host.h"
#include "lower/lower.h"

/* Everything a compiled kernel is: owned by one executor, or by a kernel cache that
 * lends it to every executor compiling the same fusion for the same target. */
typedef struct Compiled {
  cf_backend backend;
  KKernel *k;           /* the lowered kernel (owns its arena) */
  char *source;
  bool compile_only;
  ExecCubin cubin;      /* CUDA */
  ExecKernel kernel;
  ExecHostModule *host; /* host backend */
  ExecHostCall *call;
} Compiled;

void exec_compiled_free(Compiled *c);

/* The most tensor parameters (inputs and outputs) a kernel may take: run.c binds them in
 * fixed arrays; compile refuses a kernel with more. */
enum { EXEC_MAX_PARAMS = 64 };

struct cf_executor {
  cf_executor_options opts;
  char arch[16];
  char *error;          /* malloc'd message of the last failure */
  cf_lowering_hook hook;
  void *hook_user;
  Compiled *cc;         /* NULL until compiled */
  bool borrowed;        /* cc belongs to opts.cache */
  cf_launch_params last;
};

/* The kernel cache (kernel_cache.c): the entry for a fingerprint, or NULL; storing hands
 * the compiled kernel to the cache. */
Compiled *exec_cache_lookup(cf_kernel_cache *c, const char *fingerprint);
void exec_cache_store(cf_kernel_cache *c, const char *fingerprint, Compiled *cc);
/* The fingerprint of a fusion for a target (malloc'd): its printed math and transforms
 * (memory types, parallel types, positions, allocation domains), backend and arch. */
char *exec_fingerprint(cf_fusion *f, cf_backend backend, const char *arch);

/* Records a message on e and returns s. */
cf_status exec_error(cf_executor *e, cf_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
