/* executor/exec_host.h: the host backend (internal). Compiles a host kernel source (C11,
 * the runtime codegen/runtime/host_{runtime,tmem,math}.h prepended, see
 * exec_host_runtime_source) with the system C compiler into a shared object cached on
 * disk, loads it with dlopen, and launches the kernel through libffi: every emulated CUDA
 * thread calls the kernel with its by-value tensor structs, exactly the signature of the
 * CUDA kernel. Also the backend choice shared by both backends (exec_backend_choose).
 *
 * Errors come back as a cf_status plus an ExecHostError: a message, and for a failed C
 * compile the compiler's output and the source. Nothing here aborts or exits; a kernel that
 * breaks a rule of the emulated GPU returns CF_ERR_RUNTIME with the runtime's message. */
#ifndef CFUSER_EXEC_HOST_H
#define CFUSER_EXEC_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfuser/executor.h"
#include "cfuser/status.h"
#include "cfuser/types.h"

typedef struct ExecHostError {
  char msg[2048];        /* what failed; "" when nothing did */
  char *compiler_output; /* CF_ERR_COMPILE: the compiler's stdout and stderr (malloc'd) */
  char *source;          /* CF_ERR_COMPILE: the source that failed to compile (malloc'd) */
} ExecHostError;

/* Frees the strings of e and empties it; e may be reused afterwards. */
void exec_host_error_clear(ExecHostError *e);

/* The three runtime parts, concatenated in order (malloc'd; NULL when out of memory or
 * when the library was built without them). Generated code follows it. */
char *exec_host_runtime_source(void);

/* ---- compiling and loading -------------------------------------------------------------- */

typedef struct ExecHostModule ExecHostModule;

/* Compiles `source` (runtime included) with `$CC` (default cc) -std=c11 -O2 -shared -fPIC
 * -fno-strict-aliasing, plus the words of $CFUSER_HOST_CFLAGS, and loads it. The shared
 * object is cached in the checked cache directory of disk_cache.h as one entry,
 * <SHA-256 of the compile command and the source>.so, the object followed by a record of
 * that hash and the object's size and hash: a hit needs an entry that verifies before it
 * is loaded, so a truncated or foreign object is compiled again. A miss compiles in a
 * private temporary directory and then stores the object; an unusable cache directory
 * (or CFUSER_CACHE=0) only skips the cache,
 * after one warning. A kernel's unit (codegen/host.c's source, starting with
 * CG_HOST_KERNEL_TU_LINE: the runtime's functions declared, not defined) is linked with
 * the runtime's object for the same command (codegen/host_split.c's runtime unit with -c,
 * built once per process and command, cached as <SHA-256>.o), whose name joins the
 * command in the kernel's key; a source holding the whole runtime compiles alone.
 * kernel_name: the kernel's (exported) function. On success *out owns
 * the loaded module. Errors: CF_ERR_COMPILE (compiler failed: err->compiler_output and
 * err->source are set; or the object does not load or lacks the kernel or cfh_launch),
 * CF_ERR_INVALID_ARGUMENT, CF_ERR_OUT_OF_MEMORY, CF_ERR_IO (the cache directory's path is
 * too long, or no directory can be written), CF_ERR_INTERNAL (spawning the compiler). */
cf_status exec_host_compile(const char *source, const char *kernel_name, ExecHostModule **out,
                            ExecHostError *err);
void exec_host_module_free(ExecHostModule *m);
/* True when the module came from the disk cache without compiling. */
bool exec_host_module_cache_hit(const ExecHostModule *m);
/* Seconds spent in exec_host_compile (hash, cache lookup, compile, dlopen). */
double exec_host_module_compile_seconds(const ExecHostModule *m);
/* The shared object's path in the cache (where it was stored; a private path, since removed,
 * when it could not be). */
const char *exec_host_module_path(const ExecHostModule *m);
/* The shared object's bytes, read on first call and owned by m. */
cf_status exec_host_module_binary(ExecHostModule *m, const void **data, size_t *size,
                                  ExecHostError *err);

/* ---- the kernel's parameters -------------------------------------------------------------- */

/* One by-value parameter of the kernel. A tensor is the C struct
 *   struct { T *data; I logical_size[rank]; I alloc_stride[alloc_rank]; }
 * with I = int64_t, or int32_t when index32 (rank 0 and alloc_rank 0: just the pointer).
 * A scalar is its dtype's C type (bool: 1 byte; __half and __nv_bfloat16: a struct of one
 * uint16_t). */
typedef struct ExecHostParam {
  bool is_tensor;
  cf_dtype dtype; /* scalar: its type; tensor: element type (informative) */
  int rank;       /* tensor: number of logical sizes, 0..EXEC_HOST_MAX_RANK */
  int alloc_rank; /* tensor: number of allocation strides, 0..EXEC_HOST_MAX_RANK */
  bool index32;
} ExecHostParam;

/* Bytes of the value of p (the size of its C type). */
size_t exec_host_param_size(const ExecHostParam *p);
/* Writes the tensor struct of p into buf (exec_host_param_size(p) bytes): data, then
 * rank sizes, then alloc_rank strides, narrowed to int32 when p->index32 (an error if a
 * value does not fit). */
cf_status exec_host_pack_tensor(const ExecHostParam *p, void *data, const int64_t *sizes,
                                const int64_t *strides, void *buf, ExecHostError *err);

/* ---- launching ---------------------------------------------------------------------------- */

#define EXEC_HOST_MAX_PARAMS 256
#define EXEC_HOST_MAX_RANK 8 /* logical and allocation rank of a tensor parameter */

/* A kernel signature prepared for libffi (types and call interface), reusable for any
 * number of launches. */
typedef struct ExecHostCall ExecHostCall;

cf_status exec_host_call_prepare(const ExecHostModule *m, int nparams, const ExecHostParam *params,
                                 ExecHostCall **out, ExecHostError *err);
void exec_host_call_free(ExecHostCall *c);
/* Runs the kernel over grid x block threads with smem bytes of dynamic shared memory.
 * values[i] points to parameter i's value (for a tensor, its packed struct). Errors:
 * CF_ERR_INVALID_ARGUMENT (launch dimensions), CF_ERR_RUNTIME (a run-time check fired or
 * the threads deadlocked: err->msg names the block, the warp and the lanes),
 * CF_ERR_OUT_OF_MEMORY. */
cf_status exec_host_call_launch(const ExecHostCall *c, const int64_t grid[3], const int64_t block[3],
                                int64_t smem, void **values, ExecHostError *err);
/* prepare + launch + free, for one-off launches. */
cf_status exec_host_launch(const ExecHostModule *m, const int64_t grid[3], const int64_t block[3],
                           int64_t smem, int nparams, const ExecHostParam *params, void **values,
                           ExecHostError *err);

/* ---- which backend ------------------------------------------------------------------------ */

/* The backend to use for `requested`: CUDA or HOST as asked; for AUTO, $CFUSER_BACKEND
 * (host|cuda) when set and not empty, else CUDA when cuda_usable (may be NULL: none) says
 * a device is usable, else HOST. An invalid $CFUSER_BACKEND gives CF_ERR_INVALID_ARGUMENT
 * with a message in err. */
cf_status exec_backend_choose(cf_backend requested, bool (*cuda_usable)(const char **reason),
                              cf_backend *out, char *err, size_t errlen);

/* Whether backend b (CUDA or HOST) reads tensors in memory of type t: host memory and
 * pinned host memory for the host backend, device and managed memory for CUDA. */
bool exec_backend_reads(cf_backend b, DLDeviceType t);
/* The memory of type t in words, for messages: "host memory (kDLCPU)". */
const char *exec_memory_name(DLDeviceType t);

#endif
