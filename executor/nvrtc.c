/* executor/nvrtc.c: CUDA C++ to cubin with NVRTC, loaded at run time.
 *
 * The last step of the CUDA backend's compile (codegen -> here -> cuda_driver.c's
 * exec_kernel_load). NVRTC needs no GPU, so kernels compile for a named architecture
 * ("sm_90a", "sm_100a") on any machine with the toolkit, which is how CI checks every
 * generated kernel. libnvrtc is opened with dlopen once per process (pthread_once), first
 * from the toolkit cfuser was configured with (CFUSER_CUDA_LIB_DIR, matching the headers
 * passed with -I), then by soname; the library therefore has no link-time CUDA
 * dependency. Key decision: compile straight to SASS (nvrtcGetCUBIN for a real "sm_XYa"
 * target) rather than PTX, so that architecture-specific instructions (wgmma, tcgen05) are
 * assembled and checked at compile time and loading needs no JIT; the kernel's lowered
 * name comes from nvrtcAddNameExpression so namespaced and templated kernels work. */
#include "executor/exec_cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__has_include)
#if __has_include(<nvrtc.h>)
#include <nvrtc.h>
#define EXEC_HAVE_NVRTC_H 1
#endif
#endif

void exec_cubin_free(ExecCubin *c) {
  if (c == NULL) return;
  free(c->data);
  free(c->lowered_name);
  free(c->log);
  memset(c, 0, sizeof *c);
}

/* "sm_" digits, then at most one of 'a' (architecture-specific) or 'f' (family). */
static bool arch_is_valid(const char *arch) {
  if (strncmp(arch, "sm_", 3) != 0) return false;
  const char *p = arch + 3;
  size_t digits = strspn(p, "0123456789");
  if (digits < 2 || digits > 3) return false;
  p += digits;
  return *p == '\0' || ((*p == 'a' || *p == 'f') && p[1] == '\0');
}

#ifdef EXEC_HAVE_NVRTC_H

#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#define EXEC_NVRTC_FUNCS(X)                                                               \
  X(nvrtcGetErrorString) X(nvrtcVersion) X(nvrtcCreateProgram) X(nvrtcDestroyProgram)     \
  X(nvrtcCompileProgram) X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN) X(nvrtcGetProgramLogSize)  \
  X(nvrtcGetProgramLog) X(nvrtcAddNameExpression) X(nvrtcGetLoweredName) X(nvrtcGetPTXSize) \
  X(nvrtcGetPTX)

typedef struct NvrtcApi {
#define EXEC_X(name) __typeof__(name) *name;
  EXEC_NVRTC_FUNCS(EXEC_X)
#undef EXEC_X
} NvrtcApi;

/* Written once by nvrtc_init_once, read-only afterwards. */
typedef struct NvrtcState {
  bool ok;
  char reason[512];
  void *lib;
  NvrtcApi api;
  char version[16];
  char include_opt[512]; /* "-I<dir>" or "" when no toolkit headers were found */
} NvrtcState;

static NvrtcState g_nvrtc;
static pthread_once_t g_nvrtc_once = PTHREAD_ONCE_INIT;
static int64_t g_nvrtc_compiles; /* nvrtcCompileProgram calls, for tests (atomic) */
#define NV (&g_nvrtc.api)

/* dlopen candidates, most specific first; returns the handle or NULL with reason set. */
static void *open_nvrtc(char *reason, size_t len) {
  const char *cands[6];
  int n = 0;
  const char *env = getenv("CFUSER_NVRTC_LIBRARY"); /* when set, the only candidate */
  if (env && *env) cands[n++] = env;
  else {
#ifdef CFUSER_CUDA_LIB_DIR
    cands[n++] = CFUSER_CUDA_LIB_DIR "/libnvrtc.so";
#endif
    cands[n++] = "libnvrtc.so.13";
    cands[n++] = "libnvrtc.so.12";
    cands[n++] = "libnvrtc.so";
  }
  const char *last = "";
  for (int i = 0; i < n; i++) {
    void *h = dlopen(cands[i], RTLD_NOW | RTLD_LOCAL);
    if (h) return h;
    const char *why = dlerror();
    if (why) last = why;
  }
  int k = snprintf(reason, len, "libnvrtc not found (tried");
  for (int i = 0; i < n && k > 0 && (size_t)k < len; i++)
    k += snprintf(reason + k, len - (size_t)k, "%s %s", i ? "," : "", cands[i]);
  if (k > 0 && (size_t)k < len) snprintf(reason + k, len - (size_t)k, "): %s", last);
  return NULL;
}

/* The toolkit headers NVRTC is pointed at, for <cuda_fp16.h> and <cuda_bf16.h>. */
static void find_include_dir(NvrtcState *s) {
  const char *cands[3];
  int n = 0;
#ifdef CFUSER_CUDA_INCLUDE_DIR
  cands[n++] = CFUSER_CUDA_INCLUDE_DIR;
#endif
  const char *home = getenv("CUDA_HOME");
  char buf[400];
  if (home && *home) {
    snprintf(buf, sizeof buf, "%s/include", home);
    cands[n++] = buf;
  }
  cands[n++] = "/usr/local/cuda/include";
  for (int i = 0; i < n; i++) {
    char probe[480];
    snprintf(probe, sizeof probe, "%s/cuda_fp16.h", cands[i]);
    if (access(probe, R_OK) == 0) {
      snprintf(s->include_opt, sizeof s->include_opt, "-I%s", cands[i]);
      return;
    }
  }
  s->include_opt[0] = '\0';
}

static void nvrtc_init_once(void) {
  NvrtcState *s = &g_nvrtc;
  s->lib = open_nvrtc(s->reason, sizeof s->reason);
  if (s->lib == NULL) return;
  void *sym = NULL;
#define EXEC_X(name)                                                                       \
  sym = dlsym(s->lib, #name);                                                              \
  memcpy(&s->api.name, &sym, sizeof sym);                                                  \
  if (sym == NULL) {                                                                       \
    snprintf(s->reason, sizeof s->reason, "libnvrtc lacks %s (too old)", #name);           \
    return;                                                                                \
  }
  EXEC_NVRTC_FUNCS(EXEC_X)
#undef EXEC_X
  int major = 0, minor = 0;
  if (NV->nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) {
    snprintf(s->reason, sizeof s->reason, "nvrtcVersion failed");
    return;
  }
  snprintf(s->version, sizeof s->version, "%d.%d", major, minor);
  find_include_dir(s);
  s->ok = true;
}

bool exec_nvrtc_available(const char **reason) {
  pthread_once(&g_nvrtc_once, nvrtc_init_once);
  if (reason) *reason = g_nvrtc.ok ? "" : g_nvrtc.reason;
  return g_nvrtc.ok;
}

const char *exec_nvrtc_version(void) {
  return exec_nvrtc_available(NULL) ? g_nvrtc.version : NULL;
}

/* The option list: fixed options, then the caller's extras. Returns the count; opts must
 * hold 8 + nextra entries; arch_opt is storage for the architecture option. */
static int build_options(const ExecNvrtcOptions *o, const char *arch, char *arch_opt,
                         size_t arch_len, const char **opts) {
  int n = 0;
  snprintf(arch_opt, arch_len, "--gpu-architecture=%s", arch);
  opts[n++] = "--std=c++17";
  opts[n++] = arch_opt;
  opts[n++] = "-default-device";
  opts[n++] = "--fmad=true";
  opts[n++] = "-DNDEBUG";
  if (g_nvrtc.include_opt[0]) opts[n++] = g_nvrtc.include_opt;
  if (o && o->lineinfo) opts[n++] = "-lineinfo";
  for (int i = 0; o && i < o->nextra; i++) opts[n++] = o->extra[i];
  return n;
}

int64_t exec_nvrtc_compile_count(void) { return __atomic_load_n(&g_nvrtc_compiles, __ATOMIC_RELAXED); }

char *exec_nvrtc_key(const ExecNvrtcOptions *o, const char *arch) {
  if (!exec_nvrtc_available(NULL) || !arch) return NULL;
  int nextra = o && o->nextra > 0 ? o->nextra : 0;
  const char **opts = malloc(sizeof(char *) * (size_t)(8 + nextra));
  if (opts == NULL) return NULL;
  char arch_opt[64];
  int n = build_options(o, arch, arch_opt, sizeof arch_opt, opts);
  size_t len = 64 + strlen(g_nvrtc.version) + (o && o->kernel_name ? strlen(o->kernel_name) : 0);
  for (int i = 0; i < n; i++) len += strlen(opts[i]) + 1;
  char *key = malloc(len);
  if (key) {
    int k = snprintf(key, len, "nvrtc %s\nkernel %s\n", g_nvrtc.version, o && o->kernel_name ? o->kernel_name : "");
    for (int i = 0; i < n && k > 0; i++) k += snprintf(key + k, len - (size_t)k, "%s\n", opts[i]);
  }
  free(opts);
  return key;
}

static cf_status nv_fail(nvrtcResult r, const char *call, char *err, size_t errlen) {
  return exec_fail(r == NVRTC_ERROR_OUT_OF_MEMORY ? CF_ERR_OUT_OF_MEMORY : CF_ERR_INTERNAL, err,
                   errlen, "%s failed: %s", call, NV->nvrtcGetErrorString(r));
}

/* Copies the program's log into out->log (NULL when empty). */
static cf_status take_log(nvrtcProgram prog, ExecCubin *out, char *err, size_t errlen) {
  size_t size = 0;
  nvrtcResult r = NV->nvrtcGetProgramLogSize(prog, &size);
  if (r != NVRTC_SUCCESS) return nv_fail(r, "nvrtcGetProgramLogSize", err, errlen);
  if (size <= 1) return CF_OK;
  out->log = malloc(size);
  if (out->log == NULL) return exec_fail(CF_ERR_OUT_OF_MEMORY, err, errlen, "out of memory");
  r = NV->nvrtcGetProgramLog(prog, out->log);
  if (r != NVRTC_SUCCESS) return nv_fail(r, "nvrtcGetProgramLog", err, errlen);
  out->log[size - 1] = '\0';
  return CF_OK;
}

/* After a successful compile: the cubin and the lowered kernel name. */
static cf_status take_cubin(nvrtcProgram prog, const char *name_expr, ExecCubin *out, char *err,
                            size_t errlen) {
  size_t size = 0;
  nvrtcResult r = NV->nvrtcGetCUBINSize(prog, &size);
  if (r != NVRTC_SUCCESS) return nv_fail(r, "nvrtcGetCUBINSize", err, errlen);
  if (size == 0)
    return exec_fail(CF_ERR_INTERNAL, err, errlen, "NVRTC produced no cubin for %s", out->arch);
  out->data = malloc(size);
  if (out->data == NULL) return exec_fail(CF_ERR_OUT_OF_MEMORY, err, errlen, "out of memory");
  if ((r = NV->nvrtcGetCUBIN(prog, out->data)) != NVRTC_SUCCESS)
    return nv_fail(r, "nvrtcGetCUBIN", err, errlen);
  out->size = size;
  if (name_expr == NULL) return CF_OK;
  const char *lowered = NULL;
  r = NV->nvrtcGetLoweredName(prog, name_expr, &lowered);
  if (r != NVRTC_SUCCESS || lowered == NULL)
    return exec_fail(CF_ERR_COMPILE, err, errlen,
                     "nvrtcGetLoweredName(\"%s\") failed: %s (is it a __global__ function?)",
                     name_expr, NV->nvrtcGetErrorString(r));
  out->lowered_name = strdup(lowered);
  if (out->lowered_name == NULL) return exec_fail(CF_ERR_OUT_OF_MEMORY, err, errlen, "out of memory");
  return CF_OK;
}

/* Compile the created program; the log is kept whatever happens. */
static cf_status compile_program(nvrtcProgram prog, const char *name, const ExecNvrtcOptions *o,
                                 ExecCubin *out, char *err, size_t errlen) {
  const char *kname = o ? o->kernel_name : NULL;
  nvrtcResult r;
  if (kname && (r = NV->nvrtcAddNameExpression(prog, kname)) != NVRTC_SUCCESS)
    return nv_fail(r, "nvrtcAddNameExpression", err, errlen);
  int nextra = o && o->nextra > 0 ? o->nextra : 0;
  const char **opts = malloc(sizeof(char *) * (size_t)(8 + nextra));
  if (opts == NULL) return exec_fail(CF_ERR_OUT_OF_MEMORY, err, errlen, "out of memory");
  char arch_opt[64];
  int nopts = build_options(o, out->arch, arch_opt, sizeof arch_opt, opts);
  __atomic_add_fetch(&g_nvrtc_compiles, 1, __ATOMIC_RELAXED);
  nvrtcResult cr = NV->nvrtcCompileProgram(prog, nopts, opts);
  free(opts);
  cf_status st = take_log(prog, out, err, errlen);
  if (st != CF_OK) return st;
  if (cr == NVRTC_ERROR_COMPILATION || cr == NVRTC_ERROR_INVALID_OPTION)
    return exec_fail(cr == NVRTC_ERROR_COMPILATION ? CF_ERR_COMPILE : CF_ERR_INVALID_ARGUMENT, err,
                     errlen, "NVRTC %s could not compile %s for %s (%s):\n%s", g_nvrtc.version,
                     name, out->arch, NV->nvrtcGetErrorString(cr), out->log ? out->log : "");
  if (cr != NVRTC_SUCCESS) return nv_fail(cr, "nvrtcCompileProgram", err, errlen);
  return take_cubin(prog, kname, out, err, errlen);
}

/* The architecture to compile for: the caller's, else the device's. */
static cf_status resolve_arch(const ExecNvrtcOptions *o, ExecCubin *out, char *err, size_t errlen) {
  const char *arch = o && o->arch ? o->arch : NULL;
  if (arch == NULL) {
    arch = exec_device_arch();
    if (arch == NULL)
      return exec_fail(CF_ERR_NO_DEVICE, err, errlen,
                       "NVRTC: no architecture given and no CUDA device to take it from");
  }
  if (!arch_is_valid(arch) || strlen(arch) >= sizeof out->arch)
    return exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen,
                     "NVRTC: invalid architecture \"%s\" (expected e.g. \"sm_90a\" or \"sm_100a\")",
                     arch);
  snprintf(out->arch, sizeof out->arch, "%s", arch);
  return CF_OK;
}

cf_status exec_nvrtc_compile(const char *source, const char *program_name,
                             const ExecNvrtcOptions *opts, ExecCubin *out, char *err,
                             size_t errlen) {
  if (out == NULL || source == NULL)
    return exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen, "exec_nvrtc_compile: %s is NULL",
                     out == NULL ? "out" : "source");
  memset(out, 0, sizeof *out);
  cf_status st = resolve_arch(opts, out, err, errlen);
  if (st != CF_OK) return st;
  const char *reason = NULL;
  if (!exec_nvrtc_available(&reason))
    return exec_fail(CF_ERR_UNSUPPORTED, err, errlen, "NVRTC unavailable: %s", reason);
  const char *name = program_name ? program_name : "cfuser_kernel.cu";
  nvrtcProgram prog = NULL;
  nvrtcResult r = NV->nvrtcCreateProgram(&prog, source, name, 0, NULL, NULL);
  if (r != NVRTC_SUCCESS) return nv_fail(r, "nvrtcCreateProgram", err, errlen);
  st = compile_program(prog, name, opts, out, err, errlen);
  NV->nvrtcDestroyProgram(&prog);
  if (st != CF_OK) {
    free(out->data);
    out->data = NULL;
    out->size = 0;
  }
  return st;
}

/* The PTX of a compile for arch's virtual architecture (compute_90a for sm_90a): a second
 * compile, since one for a real architecture yields only the cubin (CFUSER_DUMP=ptx). */
cf_status exec_nvrtc_ptx(const char *source, const char *arch, char **ptx, char *err, size_t errlen) {
  *ptx = NULL;
  if (!exec_nvrtc_available(NULL) || !arch_is_valid(arch))
    return exec_fail(CF_ERR_UNSUPPORTED, err, errlen, "NVRTC unavailable or invalid architecture %s", arch);
  char virt[64], arch_opt[96];
  snprintf(virt, sizeof virt, "compute_%s", arch + 3);
  const char *opts[8];
  int nopts = build_options(NULL, virt, arch_opt, sizeof arch_opt, opts);
  nvrtcProgram prog = NULL;
  nvrtcResult r = NV->nvrtcCreateProgram(&prog, source, "cfuser_kernel.cu", 0, NULL, NULL);
  if (r != NVRTC_SUCCESS) return nv_fail(r, "nvrtcCreateProgram", err, errlen);
  size_t size = 0;
  if ((r = NV->nvrtcCompileProgram(prog, nopts, opts)) == NVRTC_SUCCESS &&
      (r = NV->nvrtcGetPTXSize(prog, &size)) == NVRTC_SUCCESS && (*ptx = malloc(size + 1)) &&
      (r = NV->nvrtcGetPTX(prog, *ptx)) == NVRTC_SUCCESS)
    (*ptx)[size] = '\0';
  NV->nvrtcDestroyProgram(&prog);
  if (r == NVRTC_SUCCESS && *ptx) return CF_OK;
  free(*ptx);
  *ptx = NULL;
  return r != NVRTC_SUCCESS ? nv_fail(r, "the PTX compile", err, errlen)
                            : exec_fail(CF_ERR_OUT_OF_MEMORY, err, errlen, "out of memory");
}

#else /* !EXEC_HAVE_NVRTC_H */

static const char k_no_nvrtc[] = "cfuser was built without the NVRTC header <nvrtc.h>";

bool exec_nvrtc_available(const char **reason) {
  if (reason) *reason = k_no_nvrtc;
  return false;
}
const char *exec_nvrtc_version(void) { return NULL; }
int64_t exec_nvrtc_compile_count(void) { return 0; }
char *exec_nvrtc_key(const ExecNvrtcOptions *o, const char *arch) {
  (void)o, (void)arch;
  return NULL;
}
cf_status exec_nvrtc_compile(const char *source, const char *program_name,
                             const ExecNvrtcOptions *opts, ExecCubin *out, char *err,
                             size_t errlen) {
  (void)source, (void)program_name, (void)opts;
  if (out) memset(out, 0, sizeof *out);
  (void)arch_is_valid;
  return exec_fail(CF_ERR_UNSUPPORTED, err, errlen, "NVRTC unavailable: %s", k_no_nvrtc);
}

cf_status exec_nvrtc_ptx(const char *source, const char *arch, char **ptx, char *err, size_t errlen) {
  (void)source, (void)arch;
  *ptx = NULL;
  return exec_fail(CF_ERR_UNSUPPORTED, err, errlen, "NVRTC unavailable: %s", k_no_nvrtc);
}

#endif

bool cf_nvrtc_available(const char **reason) { return exec_nvrtc_available(reason); }
