/* executor/executor_internal.h: the executor object shared by executor.c (create,
 * compile, accessors) and run.c (argument checks, binding, launch). Internal. */
#ifndef CFUSER_EXECUTOR_INTERNAL_H
#define CFUSER_EXECUTOR_INTERNAL_H

#include "codegen/codegen.h"
#include "executor/exec_cuda.h"
#include "executor/exec_host.h"
#include "lower/lower.h"

enum { EXEC_MAX_WORK = 16 }; /* grid-reduction buffers of one kernel */

/* Everything a compiled kernel is: owned by one executor, or by a kernel cache that
 * lends it to every executor compiling the same fusion for the same target. */
typedef struct Compiled {
  cf_backend backend;
  KKernel *k;           /* the lowered kernel (owns its arena) */
  char *source;
  bool compile_only;
  ExecCubin cubin;      /* CUDA */
  ExecKernel kernel;    /* loaded on device 0 at compile */
  ExecKernel *kernels;  /* per device ordinal, loaded on first run there (grows) */
  int nkernels;
  ExecHostModule *host; /* host backend */
  ExecHostCall *call;
} Compiled;

void exec_compiled_free(Compiled *c);

/* What CFUSER_DUMP=times prints after compiling k (two lines: the stages, then each
 * lowering pass) and the note a compile over 5 s prints unasked (naming the slowest
 * pass); t[0..3]: before lowering, after lowering, after codegen, after NVRTC or the C
 * compiler, in seconds (executor.c). */
void exec_times_text(StrBuf *b, const KKernel *k, bool cuda, bool disk_hit, const double t[4]);
void exec_slow_note_text(StrBuf *b, const KKernel *k, bool cuda, const double t[4]);

/* What a run needs, sized and precomputed once per compile (run.c). */
typedef struct ExecPlan ExecPlan;
cf_status exec_plan_make(const KKernel *k, ExecPlan **out);
void exec_plan_free(ExecPlan *p);

/* Where a CUDA run goes: the device of its tensors and the caller's stream. */
typedef struct RunTarget {
  int device;
  void *stream;
  const ExecKernel *kernel; /* the kernel loaded on that device */
  const ExecDeviceInfo *info; /* that device, opened and current until the launch */
} RunTarget;

struct cf_executor {
  cf_executor_options opts;
  char arch[16];
  ErrMsg error;         /* the message of the last failure (ir.h: kept one call longer) */
  cf_lowering_hook hook;
  void *hook_user;
  Compiled *cc;         /* NULL until compiled */
  bool borrowed;        /* cc belongs to opts.cache */
  cf_launch_params last;
  ExecPlan *plan;       /* NULL until compiled */
  /* The last asynchronous launch, for errors reported later and cf_executor_synchronize. */
  bool launched;
  RunTarget last_target;
  DLManagedTensor *work[EXEC_MAX_WORK]; /* grid-reduction buffers, reused run after run */
};

/* The CUDA side of a run (run_cuda.c): the device of the tensors (mixed devices and a
 * device of another architecture refused), then the launch on the caller's stream. */
cf_status exec_run_target_cuda(cf_executor *e, int nin, const DLTensor *const *in, int nout,
                               DLManagedTensor **out, RunTarget *rt);
cf_status exec_run_launch_cuda(cf_executor *e, const RunTarget *rt, void **values);

/* The exact fingerprint of a fusion for a target (fingerprint.c): bytes (malloc'd),
 * their length and their hash. */
typedef struct ExecFingerprint {
  unsigned char *bytes;
  size_t len;
  uint64_t hash;
} ExecFingerprint;
cf_status exec_fingerprint(cf_fusion *f, cf_backend backend, const cf_executor_options *opts, ExecFingerprint *out);

/* The kernel cache (kernel_cache.c): the entry for a fingerprint, or NULL; storing hands
 * the compiled kernel and the fingerprint's bytes to the cache (false, nothing handed
 * over, when out of memory). */
Compiled *exec_cache_lookup(cf_kernel_cache *c, const ExecFingerprint *fp);
bool exec_cache_store(cf_kernel_cache *c, ExecFingerprint *fp, Compiled *cc);

/* Records a message on e and returns s. */
cf_status exec_error(cf_executor *e, cf_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* run.c: the bytes [lo, hi) t's elements of dtype dt occupy (strides of any sign; two a byte
 * for packed dtypes, whose byte count is half the elements'); empty
 * for no elements; false when the footprint overflows. The aliasing checks of a run and of
 * a define-and-run plan. */
bool exec_byte_range(const DLTensor *t, cf_dtype dt, int64_t *lo, int64_t *hi);
/* t's element count and the largest distance in elements of an element from element 0
 * (either way, under its strides); false when either overflows int64. */
bool exec_index_extent(const DLTensor *t, int64_t *numel, int64_t *span);

#endif
