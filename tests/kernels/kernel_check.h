/* tests/kernels/kernel_check.h: the harness of the scheduled-fusion tests. For one
 * scheduled fusion and its inputs it
 *   1. compiles the CUDA kernel with NVRTC for sm_90a (works without a GPU),
 *   2. compiles and runs it on the host backend and compares every output with the
 *      reference evaluator (exactly for copies, within a tolerance for math),
 *   3. when a CUDA device is present, runs it there too and compares likewise.
 * Header-only; tests include it once. */
#ifndef CFUSER_KERNEL_CHECK_H
#define CFUSER_KERNEL_CHECK_H

#include <criterion/criterion.h>
#include <string.h>

#include "executor/fusion_cache.h"
#include "test_util.h"

typedef struct KcInput {
  cf_dtype dtype;
  int rank;
  int64_t sizes[CF_MAX_RANK];
  const int64_t *strides; /* NULL: contiguous */
} KcInput;

/* A contiguous float input of the given sizes: F32(4, 8). */
#define F32(...) ((KcInput){CF_FLOAT, sizeof((int64_t[]){__VA_ARGS__}) / 8, {__VA_ARGS__}, NULL})

static inline DLManagedTensor *kc_make_input(const KcInput *in, uint64_t seed) {
  DLManagedTensor *t = in->strides ? cf_tensor_host_strided(in->dtype, in->rank, in->sizes, in->strides)
                                   : cf_tensor_host(in->dtype, in->rank, in->sizes);
  cf_tensor_fill_random(&t->dl_tensor, seed);
  return t;
}

/* A fusion input (tu_input) also recorded as in[*nin] for kc_check (in[] holds TU_MAX_IO);
 * sizes NULL: symbolic (kc_check then needs in[]'s sizes set by the caller). */
static inline cf_tv *kc_input(cf_fusion *f, KcInput *in, int *nin, cf_dtype dt, int rank, const int64_t *sizes) {
  cr_assert(*nin < TU_MAX_IO && rank <= CF_MAX_RANK, "input %d of rank %d: the harness holds TU_MAX_IO = %d inputs "
            "of rank CF_MAX_RANK = %d at most", *nin, rank, TU_MAX_IO, CF_MAX_RANK);
  in[*nin] = (KcInput){dt, rank, {0}, NULL};
  for (int i = 0; sizes && i < rank; i++) in[*nin].sizes[i] = sizes[i];
  (*nin)++;
  return tu_input(f, dt, rank, sizes);
}

/* Names the case in the harness's failure messages (the fuzz test sets its seed here). */
static char kc_label[64] = "";

static inline void kc_compare(DLManagedTensor **got, DLManagedTensor **want, int n, double tol, const char *where) {
  for (int i = 0; i < n; i++) {
    char msg[512] = "";
    bool ok = tol == 0 ? cf_tensor_equal(&got[i]->dl_tensor, &want[i]->dl_tensor)
                       : cf_tensor_allclose(&got[i]->dl_tensor, &want[i]->dl_tensor, tol, tol, msg, sizeof msg);
    cr_expect(ok, "%s%s: output %d differs from the reference evaluator %s", kc_label, where, i, msg);
  }
}

/* Define and run against the evaluator: f through a fusion cache on the host backend,
 * planned for dev (NULL: the default description), its inputs made from in (random, seeds
 * seed, seed + 1, ..), every output equal to the evaluator's within tol (`where` names the
 * case in a failure). Returns the cache, its last plan readable (kc_plan_text); the caller
 * destroys it. */
static inline cf_fusion_cache *kc_define_and_run(cf_fusion *f, const SchedDevice *dev, int n, const KcInput *in,
                                                 uint64_t seed, double tol, const char *where) {
  cf_fusion_cache *c = cf_fusion_cache_create(f, &(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_assert_not_null(c);
  if (dev) fc_set_device(c, dev);
  tu_assert_io_fits(f, n);
  DLManagedTensor *t[TU_MAX_IO] = {0}, *got[TU_MAX_IO] = {0}, *want[TU_MAX_IO] = {0};
  const DLTensor *ins[TU_MAX_IO];
  for (int i = 0; i < n; i++) ins[i] = &(t[i] = kc_make_input(&in[i], seed + (uint64_t)i))->dl_tensor;
  int nout = cf_fusion_num_outputs(f);
  cr_assert_eq(cf_fusion_execute(c, n, ins, nout, got), CF_OK, "%s: %s", where, cf_fusion_cache_error(c));
  cr_assert_eq(cf_fusion_evaluate(f, n, ins, want), CF_OK, "%s", cf_fusion_error(f));
  kc_compare(got, want, nout, tol, where);
  for (int i = 0; i < TU_MAX_IO; i++) cf_tensor_free(t[i]), cf_tensor_free(got[i]), cf_tensor_free(want[i]);
  return c;
}

/* The cache's last plan, a line per segment "<indent><row>: <params>" (caller frees). */
static inline char *kc_plan_text(cf_fusion_cache *c, const char *indent) {
  StrBuf plan = {0};
  for (int s = 0; s < cf_fusion_cache_last_segments(c); s++)
    sb_printf(&plan, "%s%s: %s\n", indent, cf_fusion_cache_last_scheduler(c, s), cf_fusion_cache_last_params(c, s));
  return sb_take(&plan);
}

/* Compiles for `arch` (e.g. "sm_90a", "sm_80") with NVRTC; returns the generated source
 * (caller frees). Without NVRTC: the kernel function's text, and the host backend still runs. */
static inline char *kc_compile_for(cf_fusion *f, const char *arch) {
  if (!tu_nvrtc_or_note()) return tu_cuda_kernel_text(f);
  cf_executor_options o = {.backend = CF_BACKEND_CUDA, .arch = arch};
  cf_executor *e = cf_executor_create(&o);
  cf_status s = cf_executor_compile(e, f);
  cr_expect_eq(s, CF_OK, "NVRTC compile for %s failed: %s", arch, cf_executor_error(e));
  char *src = strdup(cf_executor_source(e));
  cf_executor_destroy(e);
  return src;
}

static inline char *kc_compile_sm90(cf_fusion *f) { return kc_compile_for(f, "sm_90a"); }

/* A device copy of a host input that keeps its strides: the raw footprint is copied as a
 * 1-D tensor and `view` is set up over it with the host tensor's shape and strides. */
static inline DLManagedTensor *kc_to_device(const DLTensor *h, cf_dtype dt, DLTensor *view) {
  int64_t extent = 1;
  for (int a = 0; a < h->ndim; a++) extent += h->strides ? (h->shape[a] - 1) * h->strides[a] : 0;
  if (!h->strides) extent = cf_tensor_numel(h);
  DLManagedTensor *d = cf_tensor_device(dt, 1, &extent);
  DLTensor flat = *h;
  flat.ndim = 1;
  flat.shape = &extent;
  flat.strides = NULL;
  cf_tensor_copy(&d->dl_tensor, &flat);
  *view = *h;
  view->data = d->dl_tensor.data;
  view->device = d->dl_tensor.device;
  return d;
}

/* Device copies (kc_to_device) of f's nin host inputs: dev[i] owns the memory (the caller
 * frees it), views[i] is the host tensor's shape and strides over it, ins[i] points there. */
static inline void kc_inputs_to_device(cf_fusion *f, int nin, DLManagedTensor **host_in, DLManagedTensor **dev,
                                       DLTensor *views, const DLTensor **ins) {
  for (int i = 0; i < nin; i++) {
    dev[i] = kc_to_device(&host_in[i]->dl_tensor, cf_tv_dtype(cf_fusion_input(f, i)), &views[i]);
    ins[i] = &views[i];
  }
}

/* Host copies of f's nout device outputs into back[] (the caller frees both). */
static inline void kc_outputs_to_host(cf_fusion *f, int nout, DLManagedTensor **out, DLManagedTensor **back) {
  for (int i = 0; i < nout; i++) {
    DLTensor *d = &out[i]->dl_tensor;
    back[i] = cf_tensor_host(cf_tv_dtype(cf_fusion_output(f, i)), d->ndim, d->shape);
    cf_tensor_copy(&back[i]->dl_tensor, d);
  }
}

static inline void kc_run_backend(cf_fusion *f, cf_backend backend, int nin, DLManagedTensor **host_in,
                                  DLManagedTensor **want, double tol) {
  tu_assert_io_fits(f, nin);
  cf_executor_options o = {.backend = backend};
  cf_executor *e = cf_executor_create(&o);
  cf_status s = cf_executor_compile(e, f);
  cr_assert_eq(s, CF_OK, "compile failed: %s", cf_executor_error(e));
  int nout = cf_fusion_num_outputs(f);
  const DLTensor *ins[TU_MAX_IO];
  DLTensor views[TU_MAX_IO];
  DLManagedTensor *dev_in[TU_MAX_IO] = {0}, *out[TU_MAX_IO] = {0}, *back[TU_MAX_IO] = {0};
  if (backend == CF_BACKEND_CUDA) kc_inputs_to_device(f, nin, host_in, dev_in, views, ins);
  else
    for (int i = 0; i < nin; i++) ins[i] = &host_in[i]->dl_tensor;
  s = cf_executor_run(e, nin, ins, nout, out);
  cr_assert_eq(s, CF_OK, "run failed: %s", cf_executor_error(e));
  if (backend == CF_BACKEND_CUDA) kc_outputs_to_host(f, nout, out, back);
  else
    for (int i = 0; i < nout; i++) back[i] = out[i], out[i] = NULL;
  kc_compare(back, want, nout, tol, backend == CF_BACKEND_CUDA ? "cuda" : "host");
  for (int i = 0; i < TU_MAX_IO; i++) {
    cf_tensor_free(dev_in[i]);
    cf_tensor_free(out[i]);
    cf_tensor_free(back[i]);
  }
  cf_executor_destroy(e);
}

/* For a fusion scheduled by nothing but define and run: the evaluator's outputs, then define
 * and run's and a hand-inlined executor's on the host (within tol; 0: exactly) and on CUDA
 * when present (within cuda_tol: CUDA's libm is not glibc's), each compared with them; the
 * NVRTC source of the inlined fusion (caller frees). Frees the inputs. */
static inline char *kc_run_everywhere(cf_fusion *f, int nin, DLManagedTensor **in, double tol, double cuda_tol) {
  const cf_executor_options host = {.backend = CF_BACKEND_HOST};
  tu_assert_io_fits(f, nin);
  int nout = cf_fusion_num_outputs(f);
  const DLTensor *ins[TU_MAX_IO];
  for (int i = 0; i < nin; i++) ins[i] = &in[i]->dl_tensor;
  DLManagedTensor *want[TU_MAX_IO] = {0}, *got[TU_MAX_IO] = {0};
  cr_assert_eq(cf_fusion_evaluate(f, nin, ins, want), CF_OK, "evaluator: %s", cf_fusion_error(f));
  cf_fusion_cache *c = cf_fusion_cache_create(f, &host);
  cr_assert_eq(cf_fusion_execute(c, nin, ins, nout, got), CF_OK, "define and run: %s", cf_fusion_cache_error(c));
  kc_compare(got, want, nout, tol, "define and run");
  for (int i = 0; i < nout; i++) cf_tensor_free(got[i]), got[i] = NULL;
  cf_fusion_cache_destroy(c);
  cf_inline_most(f);
  char *src = kc_compile_sm90(f);
  cf_executor *e = cf_executor_create(&host);
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  cr_assert_eq(cf_executor_run(e, nin, ins, nout, got), CF_OK, "%s", cf_executor_error(e));
  kc_compare(got, want, nout, tol, "inlined on the host");
  if (cf_cuda_available(NULL)) kc_run_backend(f, CF_BACKEND_CUDA, nin, in, want, cuda_tol);
  for (int i = 0; i < nout; i++) cf_tensor_free(got[i]), cf_tensor_free(want[i]);
  for (int i = 0; i < nin; i++) cf_tensor_free(in[i]);
  cf_executor_destroy(e);
  return src;
}


/* A suite whose tests each build one fusion `f`, its inputs recorded in `in` and `nin` by
 * kc_input (a fresh fusion before each test, destroyed after). */
#define KC_FUSION_SUITE(name)                        \
  static cf_fusion *f;                               \
  static KcInput in[TU_MAX_IO];                      \
  static int nin;                                    \
  static void kc_suite_setup_(void) {                \
    f = cf_fusion_create();                          \
    nin = 0;                                         \
  }                                                  \
  static void kc_suite_teardown_(void) { cf_fusion_destroy(f); } \
  TestSuite(name, .init = kc_suite_setup_, .fini = kc_suite_teardown_)

/* The whole check. Returns the sm_90a CUDA source for further assertions (caller frees). */
static inline char *kc_check(cf_fusion *f, int nin, const KcInput *inputs, double tol) {
  cr_assert_eq(cf_fusion_status(f), CF_OK, "scheduling failed: %s", cf_fusion_error(f));
  cr_assert_eq(cf_fusion_verify(f), CF_OK, "IR verifier: %s", cf_fusion_error(f));
  tu_assert_io_fits(f, nin);
  DLManagedTensor *host_in[TU_MAX_IO] = {0}, *want[TU_MAX_IO] = {0};
  const DLTensor *ins[TU_MAX_IO];
  for (int i = 0; i < nin; i++) {
    host_in[i] = kc_make_input(&inputs[i], 1234 + (uint64_t)i);
    ins[i] = &host_in[i]->dl_tensor;
  }
  cr_assert_eq(cf_fusion_evaluate(f, nin, ins, want), CF_OK, "evaluator: %s", cf_fusion_error(f));
  char *src = kc_compile_sm90(f);
  kc_run_backend(f, CF_BACKEND_HOST, nin, host_in, want, tol);
  if (cf_cuda_available(NULL)) kc_run_backend(f, CF_BACKEND_CUDA, nin, host_in, want, tol);
  for (int i = 0; i < TU_MAX_IO; i++) {
    cf_tensor_free(host_in[i]);
    cf_tensor_free(want[i]);
  }
  return src;
}

#endif
