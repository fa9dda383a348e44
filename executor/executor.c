/* executor/executor.c: the public executor: create, compile, accessors.
 *
 * cf_executor_compile chooses the backend (CUDA when a device is usable, the host
 * backend otherwise, or as the options or CFUSER_BACKEND say), lowers the fusion, lets the
 * user's lowering hook look at the kernel, generates the source and compiles it: with
 * NVRTC for the device's architecture (or a named one, compile-only, when there is no
 * device), or with the system C compiler for the host backend.
 * Key decision: the executor owns everything it needs after compile (kernel IR, source,
 * binary, launch expressions), so the fusion may be destroyed; a failed compile keeps the
 * NVRTC log or the C compiler's output in the error message. */
#include <stdlib.h>
#include <string.h>

#include "executor/executor_internal.h"
#include "executor/repro.h"
#include "ir/checked.h"

cf_status exec_error(cf_executor *e, cf_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  errmsg_vset(&e->error, fmt, ap);
  va_end(ap);
  return s;
}

cf_executor *cf_executor_create(const cf_executor_options *opts) {
  cf_executor *e = calloc(1, sizeof *e);
  if (!e) return NULL;
  if (opts) e->opts = *opts;
  if (opts && opts->arch) {
    snprintf(e->arch, sizeof e->arch, "%s", opts->arch);
    e->opts.arch = e->arch;
  }
  return e;
}

void exec_compiled_free(Compiled *c) {
  if (!c) return;
  exec_host_call_free(c->call);
  exec_host_module_free(c->host);
  exec_kernel_unload(&c->kernel, NULL, 0);
  for (int d = 0; d < c->nkernels; d++) exec_kernel_unload(&c->kernels[d], NULL, 0);
  free(c->kernels);
  exec_cubin_free(&c->cubin);
  kkernel_free(c->k);
  free(c->source);
  free(c);
}

static void release(cf_executor *e) {
  if (!e->borrowed) exec_compiled_free(e->cc);
  exec_plan_free(e->plan);
  e->cc = NULL;
  e->plan = NULL;
  e->borrowed = false;
  e->launched = false;
}

void cf_executor_destroy(cf_executor *e) {
  if (!e) return;
  release(e);
  for (int i = 0; i < EXEC_MAX_WORK; i++) cf_tensor_free(e->work[i]);
  errmsg_free(&e->error);
  free(e);
}

const char *cf_executor_error(const cf_executor *e) {
  if (!e) return "executor is NULL";
  return errmsg_get(&e->error);
}

cf_status cf_executor_set_lowering_hook(cf_executor *e, cf_lowering_hook hook, void *user) {
  if (!e) return CF_ERR_INVALID_ARGUMENT;
  e->hook = hook;
  e->hook_user = user;
  return CF_OK;
}

static void hook_adapter(const KKernel *k, void *user) {
  cf_executor *e = user;
  e->hook((const cf_kernel_info *)(const void *)k, e->hook_user);
}

static bool cuda_usable(const char **reason) { return cf_cuda_available(reason); }

/* CFUSER_DUMP=ptx: the PTX of the kernel just compiled, for its architecture. */
static void dump_ptx(const Compiled *c) {
  char err[512], *ptx = NULL;
  if (exec_nvrtc_ptx(c->source, c->cubin.arch, &ptx, err, sizeof err) == CF_OK)
    fprintf(lower_dump_out(), "=== PTX of %s (%s) ===\n%s\n", c->k->name, c->cubin.arch, ptx);
  else
    fprintf(lower_dump_out(), "=== PTX of %s: unavailable: %s ===\n", c->k->name, err);
  free(ptx);
}

static cf_status compile_cuda(cf_executor *e, Compiled *c) {
  const char *reason = NULL;
  bool device = cf_cuda_available(&reason);
  const char *arch = e->opts.arch;
  if (!arch && !device)
    return exec_error(e, CF_ERR_NO_DEVICE,
                      "compile: no CUDA device (%s); name an architecture in the options (e.g. \"sm_90a\") to "
                      "compile only, or use the host backend", reason ? reason : "unknown reason");
  c->compile_only = !device || (arch && strcmp(arch, exec_device_arch()) != 0);
  ExecNvrtcOptions o = {.arch = arch, .kernel_name = c->k->name};
  char err[1024];
  bool hit = false;
  cf_status s = exec_nvrtc_compile_cached(c->source, "cfuser_kernel.cu", &o, &c->cubin, &hit, err, sizeof err);
  if (s) return exec_error(e, s, "compile: NVRTC failed: %s\n%s", err, c->cubin.log ? c->cubin.log : "");
  if (lower_dump_requested("ptx")) dump_ptx(c);
  if (c->compile_only) return CF_OK;
  s = exec_kernel_load(c->cubin.data, c->cubin.lowered_name ? c->cubin.lowered_name : c->k->name, &c->kernel, err,
                       sizeof err);
  if (s) return exec_error(e, s, "compile: %s", err);
  int64_t smem;
  if (kx_is_const(c->k->smem, &smem) && smem > 48 * 1024 &&
      (s = exec_kernel_set_max_dynamic_smem(&c->kernel, smem, err, sizeof err)))
    return exec_error(e, s, "compile: %s", err);
  return CF_OK;
}

static cf_status compile_host(cf_executor *e, Compiled *c) {
  ExecHostError err = {{0}, NULL, NULL};
  cf_status s = exec_host_compile(c->source, c->k->name, &c->host, &err);
  ExecHostParam *params = s == CF_OK ? calloc((size_t)c->k->nparams + 1, sizeof *params) : NULL;
  if (s == CF_OK && !params) {
    s = CF_ERR_OUT_OF_MEMORY;
    snprintf(err.msg, sizeof err.msg, "out of memory");
  }
  if (s == CF_OK) {
    for (int i = 0; i < c->k->nparams; i++)
      params[i] = (ExecHostParam){true, c->k->params[i]->dtype, c->k->params[i]->rank, c->k->params[i]->alloc_rank,
                                  c->k->index32};
    s = exec_host_call_prepare(c->host, c->k->nparams, params, &c->call, &err);
  }
  free(params);
  if (s) exec_error(e, s, "compile: %s%s%s", err.msg, err.compiler_output ? "\n" : "",
                    err.compiler_output ? err.compiler_output : "");
  exec_host_error_clear(&err);
  return s;
}


/* A compile slower than this says so on stderr, even without CFUSER_DUMP=times (a
 * 3,000-op fusion compiled for 20 s without a word). */
#define SLOW_COMPILE_SECONDS 5.0

void exec_times_text(StrBuf *b, const KKernel *k, bool cuda, bool disk_hit, const double t[4]) {
  sb_printf(b, "=== compile of %s (%s): lowering %.1f ms, codegen %.1f ms, %s %.1f ms%s ===\n", k->name,
            cuda ? "CUDA" : "host", (t[1] - t[0]) * 1e3, (t[2] - t[1]) * 1e3, cuda ? "NVRTC" : "C compiler",
            (t[3] - t[2]) * 1e3, disk_hit ? " (disk cache hit)" : "");
  sb_printf(b, "=== lowering of %s by pass:", k->name);
  for (int i = 0; i < k->npass_times; i++)
    sb_printf(b, "%s %s %.1f ms", i ? "," : "", k->pass_times[i].pass, k->pass_times[i].seconds * 1e3);
  sb_puts(b, " ===\n");
}

void exec_slow_note_text(StrBuf *b, const KKernel *k, bool cuda, const double t[4]) {
  const struct KPassTime *slow = lower_slowest_pass(k);
  sb_printf(b, "cfuser: note: compiling %s took %.1f s (lowering %.1f s, its slowest pass %s %.1f s; codegen %.1f s, "
            "%s %.1f s); CFUSER_DUMP=times reports every compile\n", k->name, t[3] - t[0], t[1] - t[0],
            slow ? slow->pass : "none", slow ? slow->seconds : 0.0, t[2] - t[1], cuda ? "NVRTC" : "C compiler",
            t[3] - t[2]);
}

/* CFUSER_DUMP=times: each kernel's compile time by stage, then its lowering by pass; a
 * slow compile: a note naming the slowest pass. t[0..3]: before lowering, after lowering,
 * after codegen, after the compile. */
static void report_times(const Compiled *c, cf_backend backend, const double t[4]) {
  bool cuda = backend != CF_BACKEND_HOST;
  StrBuf b = {0};
  if (lower_dump_requested("times")) {
    exec_times_text(&b, c->k, cuda, !cuda && exec_host_module_cache_hit(c->host), t);
    fputs(b.data, lower_dump_out());
    sb_free(&b);
  }
  if (t[3] - t[0] <= SLOW_COMPILE_SECONDS) return;
  exec_slow_note_text(&b, c->k, cuda, t);
  fputs(b.data, stderr);
  sb_free(&b);
}

/* The blocks per SM a cooperative kernel of constant grid needs resident on this device
 * (ceil(blocks / SMs)), which its launch bounds then promise: the schedulers size such
 * grids by the SMs x the blocks per SM they expect to fit (scheduler/persistent.h), and
 * the bound makes the compiler keep to the registers that allow it. 0: not cooperative,
 * a grid of symbolic size, or no device. */
static int cooperative_blocks_per_sm(const KKernel *k) {
  const ExecDeviceInfo *in = k->grid_sem ? exec_device_info() : NULL;
  int64_t blocks = 1, v;
  if (!in || in->num_sms <= 0) return 0;
  for (int d = 0; d < 3; d++) {
    if (!kx_is_const(k->grid[d], &v)) return 0;
    blocks *= v;
  }
  return (int)ck_ceil_div(blocks, in->num_sms);
}

/* The source of c's kernel for the backend. A parameter the code dereferences that lowering
 * marked unused (lower/param_use.c) is an internal error: run.c does not check where such
 * a parameter's data lives, so the kernel could read memory the backend cannot. */
static cf_status generate(cf_executor *e, Compiled *c, cf_backend backend) {
  const char *unmarked = NULL;
  if (backend != CF_BACKEND_HOST) {
    int coop = cooperative_blocks_per_sm(c->k), planned = c->k->planned_blocks_per_sm;
    c->k->min_blocks_per_sm = coop > planned ? coop : planned;
  }
  c->source = backend == CF_BACKEND_HOST ? cg_host_source(c->k, &unmarked) : cg_cuda_source(c->k, &unmarked);
  if (!c->source) return exec_error(e, CF_ERR_OUT_OF_MEMORY, "compile: out of memory generating the source");
  if (unmarked)
    return exec_error(e, CF_ERR_INTERNAL, "internal error: kernel %s reads or writes elements of %s, which lowering "
                      "(param_use) marked unused; please report this bug", c->k->name, unmarked);
  return CF_OK;
}

/* Lowers, generates and compiles f for the chosen backend into a new Compiled. */
static cf_status build(cf_executor *e, cf_fusion *f, cf_backend backend, Compiled **out) {
  Compiled *c = calloc(1, sizeof *c);
  if (!c) return exec_error(e, CF_ERR_OUT_OF_MEMORY, "compile: out of memory");
  c->backend = backend;
  LowerOptions lo = {.skip_tmem_validation = e->opts.skip_tmem_validation, .index_type = e->opts.index_type};
  if (e->hook) {
    lo.hook = hook_adapter;
    lo.hook_user = e;
  }
  char *msg = NULL;
  double t[4] = {lower_seconds_now(), 0, 0, 0};
  /* The verifier refuses graphs no builder call catches (an output nothing computes, an
   * operand never added as an input) before they become a kernel reading garbage. */
  cf_status s = cf_fusion_verify(f);
  if (s) msg = strdup(cf_fusion_error(f));
  else s = lower_fusion(f, &lo, &c->k, &msg);
  if (s) {
    exec_error(e, s, "%s", msg ? msg : "compile: lowering failed");
    free(msg);
  }
  if (!s) {
    t[1] = lower_seconds_now();
    s = generate(e, c, backend);
    t[2] = lower_seconds_now();
    if (!s) {
      if (lower_dump_requested("source"))
        fprintf(lower_dump_out(), "=== %s source of %s ===\n%s\n", backend == CF_BACKEND_HOST ? "host C" : "CUDA",
                c->k->name, c->source);
      s = backend == CF_BACKEND_HOST ? compile_host(e, c) : compile_cuda(e, c);
      t[3] = lower_seconds_now();
      if (!s) report_times(c, backend, t);
    }
  }
  if (s) {
    exec_compiled_free(c);
    return s;
  }
  *out = c;
  return CF_OK;
}

cf_status cf_executor_compile(cf_executor *e, cf_fusion *f) {
  if (!e) return CF_ERR_INVALID_ARGUMENT;
  errmsg_begin(&e->error);
  if (!f) return exec_error(e, CF_ERR_INVALID_ARGUMENT, "compile: fusion is NULL");
  const Expr *dyn = f->status ? NULL : ir_fusion_dynamic_expr(f);
  if (dyn)
    return exec_error(e, CF_ERR_UNSUPPORTED, "compile: %s = %s(%s) has sizes given at run time; a kernel needs them "
                      "constant: run the fusion with define and run (cf_fusion_cache), which makes it static per "
                      "call, or give constant sizes", TV(dyn->out[0])->display_name, ir_op_name(dyn->op),
                      dyn->nin > dyn->ndyn ? TV(dyn->in[0])->display_name : "");
  release(e);
  char err[512] = "";
  cf_backend backend;
  cf_status s = exec_backend_choose(e->opts.backend, cuda_usable, &backend, err, sizeof err);
  if (s) return exec_error(e, s, "compile: %s", err);
  /* A lowering hook must see the lowering, so it bypasses the cache. */
  ExecFingerprint key = {0};
  bool cached = e->opts.cache && !e->hook && !f->status &&
                exec_fingerprint(f, backend, &e->opts, &key) == CF_OK;
  Compiled *hit = cached ? exec_cache_lookup(e->opts.cache, &key) : NULL;
  if (hit) {
    e->cc = hit;
    e->borrowed = true;
  } else {
    s = build(e, f, backend, &e->cc);
    if (!s && cached) e->borrowed = exec_cache_store(e->opts.cache, &key, e->cc);
    if (s) exec_repro_failed(f, 0, NULL, false, e->opts.backend, s, cf_executor_error(e)); /* $CFUSER_REPRO_DIR */
  }
  free(key.bytes);
  if (!s && exec_plan_make(e->cc->k, &e->plan)) {
    release(e);
    return exec_error(e, CF_ERR_OUT_OF_MEMORY, "compile: out of memory");
  }
  return s;
}

cf_launch_params cf_executor_last_launch_params(const cf_executor *e) {
  cf_launch_params p = {{0, 0, 0}, {0, 0, 0}, 0};
  return e ? e->last : p;
}
const char *cf_executor_source(const cf_executor *e) { return e && e->cc ? e->cc->source : ""; }
cf_backend cf_executor_backend(const cf_executor *e) { return e && e->cc ? e->cc->backend : CF_BACKEND_AUTO; }
bool cf_executor_compile_only(const cf_executor *e) { return e && e->cc && e->cc->compile_only; }

const void *cf_executor_binary(const cf_executor *e, size_t *size) {
  if (size) *size = 0;
  if (!e || !e->cc) return NULL;
  Compiled *c = e->cc;
  if (c->host) {
    const void *data = NULL;
    size_t n = 0;
    ExecHostError err = {{0}, NULL, NULL};
    exec_host_module_binary(c->host, &data, &n, &err);
    exec_host_error_clear(&err);
    if (size) *size = n;
    return data;
  }
  if (size) *size = c->cubin.size;
  return c->cubin.data;
}

cf_status cf_fusion_print_kernel(cf_fusion *f, FILE *out) {
  if (!f) return CF_ERR_INVALID_ARGUMENT;
  KKernel *k = NULL;
  char *msg = NULL;
  cf_status s = cf_fusion_verify(f);
  if (s) return s;
  s = lower_fusion(f, NULL, &k, &msg);
  if (s) {
    ir_error(f, s, "%s", msg ? msg : "print_kernel: lowering failed");
    free(msg);
    return s;
  }
  char *src = cg_cuda_source(k, NULL); /* for reading only */
  const char *kernel = strstr(src, "extern \"C\" __global__");
  if (out) fputs(kernel ? kernel : src, out);
  free(src);
  kkernel_free(k);
  return CF_OK;
}
