/* tests/scheduler/red_check.h: the harness of the reduction scheduler's tests. A fixture
 * fusion f; devices scaled down so that every heuristic branch is reached with small
 * shapes; and the check of one fusion for one call: planned on that device (parameters
 * compared as the exact printed string), scheduled, compiled with NVRTC for sm_90a and
 * run on the host backend (and the GPU when there is one) against the evaluator
 * (kc_check), then run again through define and run (cf_fusion_execute on the host
 * backend, the cache planning for the same device, its one segment the reduction
 * scheduler's) against the evaluator. RED_PRINT=1 prints each scheduled fusion's
 * transforms and kernel. Header-only; a test includes it once and declares its suite
 * with TestSuite(name, .init = setup, .fini = teardown). */
#ifndef CFUSER_RED_CHECK_H
#define CFUSER_RED_CHECK_H

#include "executor/fusion_cache.h"
#include "kernels/kernel_check.h"
#include "scheduler/reduction_heuristic.h"

static cf_fusion *f;
static inline void setup(void) { f = cf_fusion_create(); }
static inline void teardown(void) { cf_fusion_destroy(f); }

/* The scheduler define and run must choose (a Welford fusion that the inner persistent
 * scheduler takes once translated to two sums names that one). */
static const char *rc_scheduler = "reduction";

static inline void fresh(void) {
  cf_fusion_destroy(f);
  f = cf_fusion_create();
}

/* Two SMs of 128 threads, blocks of at most 64: a full wave is 4 blocks of 64 threads. */
static const SchedDevice tiny = {.sm_count = 2,
                                 .max_threads_per_block = 64,
                                 .max_threads_per_sm = 128,
                                 .regs_per_sm = 65536,
                                 .max_regs_per_thread = 255,
                                 .smem_per_block = 48 * 1024,
                                 .smem_per_sm = 64 * 1024,
                                 .l2_bytes = 1 << 20,
                                 .max_cluster = 1};

/* An input of dtype dt and the given sizes: IN(CF_BFLOAT16, 4, 8). */
#define IN(dt, ...) ((KcInput){dt, sizeof((int64_t[]){__VA_ARGS__}) / 8, {__VA_ARGS__}, NULL})

/* A fusion input, symbolic or of the sizes of in. */
static inline cf_tv *input_of(const KcInput *in, bool symbolic) {
  cf_tv *x = symbolic ? cf_tensor_symbolic(f, in->dtype, in->rank) : cf_tensor_concrete(f, in->dtype, in->rank, in->sizes);
  cf_fusion_add_input(f, x);
  return x;
}

static inline cf_tv *widen(cf_tv *x) { return cf_tv_dtype(x) == CF_FLOAT ? x : cf_cast(f, x, CF_FLOAT); }

static inline double tol_of(cf_dtype dt) { return dt == CF_FLOAT ? 1e-4 : 2e-2; }

/* Host tensors of the inputs' sizes (data unread), as the call the plan reads. */
typedef struct RcCall {
  SchedCall call;
  DLManagedTensor *t[TU_MAX_IO];
  const DLTensor *dl[TU_MAX_IO];
} RcCall;

static inline void rc_call(RcCall *c, int n, const KcInput *in, const SchedDevice *dev) {
  cr_assert(n <= TU_MAX_IO, "%d inputs: RcCall holds TU_MAX_IO = %d", n, TU_MAX_IO);
  for (int i = 0; i < n; i++) {
    c->t[i] = cf_tensor_host(in[i].dtype, in[i].rank, in[i].sizes);
    c->dl[i] = &c->t[i]->dl_tensor;
  }
  c->call = (SchedCall){n, c->dl, dev};
}

static inline void rc_call_free(RcCall *c) {
  for (int i = 0; i < c->call.ninputs; i++) cf_tensor_free(c->t[i]);
}

/* Runs an unscheduled copy of f through define and run on the host backend, planned for
 * dev, and compares its outputs with the evaluator's. */
static inline void rc_define_and_run(cf_fusion *g, int n, const KcInput *in, const SchedDevice *dev, double tol) {
  cf_fusion_cache *c = kc_define_and_run(g, dev, n, in, 99, tol, "define and run");
  cr_expect_eq(cf_fusion_cache_last_segments(c), 1);
  cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), rc_scheduler);
  cf_fusion_cache_destroy(c);
}

/* The whole check of f for inputs in on dev (want_params: the exact printed plan).
 * Returns the sm_90a CUDA source (caller frees). */
static inline char *rc_check(int n, const KcInput *in, const SchedDevice *dev, const char *want_params, double tol) {
  cf_fusion *unscheduled = cf_fusion_copy(f);
  cr_assert(unscheduled);
  RcCall c;
  rc_call(&c, n, in, dev);
  char why[SCHED_WHY_MAX] = "", params[SCHED_PARAMS_MAX] = "";
  cr_assert(sched_reduction_heuristic.accepts(f, &c.call, why), "%s", why);
  cr_assert_eq(sched_reduction_heuristic.schedule(f, &c.call, params), CF_OK, "%s", cf_fusion_error(f));
  rc_call_free(&c);
  cr_expect_str_eq(params, want_params);
  if (getenv("RED_PRINT")) {
    printf("=== %s\n", params);
    cf_fusion_print_transforms(f, stdout);
    cf_fusion_print_kernel(f, stdout);
  }
  char *src = kc_check(f, n, in, tol);
  rc_define_and_run(unscheduled, n, in, dev, tol);
  cf_fusion_destroy(unscheduled);
  return src;
}

/* The check, the source discarded. */
static inline void rc_run(int n, const KcInput *in, const SchedDevice *dev, const char *want_params, double tol) {
  free(rc_check(n, in, dev, want_params, tol));
}

/* The plan alone (no run): its printed parameters. */
static inline void rc_expect_plan(int n, const KcInput *in, const SchedDevice *dev, const char *want_params) {
  RcCall c;
  rc_call(&c, n, in, dev);
  char why[SCHED_WHY_MAX] = "", params[SCHED_PARAMS_MAX] = "";
  RedParams p;
  cr_assert(sched_reduction_plan(f, &c.call, &p, why), "%s", why);
  rc_call_free(&c);
  sched_reduction_params_print(&p, params);
  cr_expect_str_eq(params, want_params);
}

static inline void rc_refused(int n, const KcInput *in, const char *want_why) {
  RcCall c;
  rc_call(&c, n, in, &tiny);
  char why[SCHED_WHY_MAX] = "";
  cr_expect_not(sched_reduction_heuristic.accepts(f, &c.call, why));
  cr_expect_str_eq(why, want_why);
  rc_call_free(&c);
}

#endif
