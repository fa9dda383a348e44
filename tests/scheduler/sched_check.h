/* tests/scheduler/sched_check.h: the harness of the automatic schedulers' tests (the inner
 * and outer persistent ones): a fixture fusion f, the fusion's inputs and outputs, and
 * the two checks of a scheduler on f for a call of given sizes: accepted, scheduled (its
 * printed parameters compared) and run against the evaluator (kc_check), or refused with
 * an exact reason. Header-only; a test includes it once, after defining
 *   SC_HEURISTIC  the SchedHeuristic under test,
 *   SC_PRINT      the environment variable that prints every kernel it schedules,
 * and SC_PRINT_TRANSFORMS (1) to print the loop transforms too; then declares its suite
 * with TestSuite(name, .init = setup, .fini = teardown). */
#ifndef CFUSER_SCHED_CHECK_H
#define CFUSER_SCHED_CHECK_H

#include "executor/fusion_cache.h"
#include "kernels/kernel_check.h"
#include "scheduler/heuristic.h"

#ifndef SC_PRINT_TRANSFORMS
#define SC_PRINT_TRANSFORMS 0
#endif

static cf_fusion *f;
/* The device the calls describe: NULL for the default (an H100); tests scale it down to
 * reach each heuristic branch with small shapes. */
static const SchedDevice *sc_dev;
/* A device scaled down for the persistent schedulers' branches: 64 threads per block,
 * 4096 registers per SM (64 per thread at 64 threads: 16 left for buffers, so registers
 * hold rows of 1024 floats), 8 KiB of shared memory per block, 2 SMs. */
static const SchedDevice sc_tiny = {.sm_count = 2,
                                    .max_threads_per_block = 64,
                                    .max_threads_per_sm = 128,
                                    .regs_per_sm = 4096,
                                    .max_regs_per_thread = 255,
                                    .smem_per_block = 8192,
                                    .smem_per_sm = 8192,
                                    .l2_bytes = 1 << 20,
                                    .max_cluster = 1};
static inline void setup(void) { f = cf_fusion_create(); }
static inline void teardown(void) { cf_fusion_destroy(f); }

static const double EPS = 1e-5;

static inline void fresh(void) {
  cf_fusion_destroy(f);
  f = cf_fusion_create();
}

/* The call: host tensors of the inputs' sizes (their data is not read). */
typedef struct Call {
  SchedCall call;
  DLManagedTensor *t[TU_MAX_IO];
  const DLTensor *dl[TU_MAX_IO];
} Call;

static inline void call_make(Call *c, int n, const KcInput *in) {
  cr_assert(n <= TU_MAX_IO, "%d inputs: Call holds TU_MAX_IO = %d", n, TU_MAX_IO);
  for (int i = 0; i < n; i++) {
    c->t[i] = cf_tensor_host(in[i].dtype, in[i].rank, in[i].sizes);
    c->dl[i] = &c->t[i]->dl_tensor;
  }
  c->call = (SchedCall){n, c->dl, sc_dev ? sc_dev : sched_device_default()};
}

static inline void call_free(Call *c) {
  for (int i = 0; i < c->call.ninputs; i++) cf_tensor_free(c->t[i]);
}

/* Accepts and schedules f for a call of the inputs' sizes, comparing the printed
 * parameters when want_params is not NULL. */
static inline void planned(int n, const KcInput *in, const char *want_params) {
  Call c;
  call_make(&c, n, in);
  char why[SCHED_WHY_MAX] = "", params[SCHED_PARAMS_MAX] = "";
  cr_assert(SC_HEURISTIC.accepts(f, &c.call, why), "%s", why);
  cr_assert_eq(SC_HEURISTIC.schedule(f, &c.call, params), CF_OK, "%s", cf_fusion_error(f));
  call_free(&c);
  if (want_params) cr_expect_str_eq(params, want_params);
}

/* planned(), then f checked against the evaluator on every backend (kc_check). */
static inline void schedule_and_check(int n, const KcInput *in, const char *want_params, double tol) {
  planned(n, in, want_params);
  if (getenv(SC_PRINT)) {
    if (SC_PRINT_TRANSFORMS) cf_fusion_print_transforms(f, stdout);
    cf_fusion_print_kernel(f, stdout);
  }
  free(kc_check(f, n, in, tol));
}

static inline void refused(int n, const KcInput *in, const char *want_why) {
  Call c;
  call_make(&c, n, in);
  char why[SCHED_WHY_MAX] = "";
  cr_expect_not(SC_HEURISTIC.accepts(f, &c.call, why));
  cr_expect_str_eq(why, want_why);
  call_free(&c);
}

/* Runs f unscheduled through define and run on the host backend (planned for sc_dev when
 * set) and compares every output with the evaluator's of f itself: the schedulers'
 * rewrites (recomputation, the online softmax) are checked against the user's math. */
static inline cf_fusion_cache *execute_vs_eval(int n, const KcInput *in, double tol) {
  return kc_define_and_run(f, sc_dev, n, in, 90, tol, "define and run");
}

/* A fusion input, symbolic (sizes NULL) or of the given sizes. */
static inline cf_tv *input(cf_dtype dt, int rank, const int64_t *sizes, bool symbolic) {
  cf_tv *x = symbolic ? cf_tensor_symbolic(f, dt, rank) : cf_tensor_concrete(f, dt, rank, sizes);
  cf_fusion_add_input(f, x);
  return x;
}

/* Computed in float: bfloat16 (and half) inputs widened, outputs narrowed back. */
static inline cf_tv *widen(cf_tv *x) { return cf_tv_dtype(x) == CF_FLOAT ? x : cf_cast(f, x, CF_FLOAT); }
static inline void output(cf_tv *y, cf_dtype dt) {
  cf_fusion_add_output(f, dt == CF_FLOAT ? y : cf_cast(f, y, dt));
}

/* An input of dtype dt and the given sizes: IN(CF_BFLOAT16, 4, 8). */
#define IN(dt, ...) ((KcInput){dt, sizeof((int64_t[]){__VA_ARGS__}) / 8, {__VA_ARGS__}, NULL})

/* f, a fusion without a reduction (-x over [4, 8]), is refused with want_why. */
static inline void refused_without_reduction(const char *want_why) {
  cf_tv *x = input(CF_FLOAT, 2, (int64_t[]){4, 8}, false);
  cf_fusion_add_output(f, cf_neg(f, x));
  refused(1, &IN(CF_FLOAT, 4, 8), want_why);
}

static inline double tol(cf_dtype dt) { return dt == CF_FLOAT ? 1e-4 : 5e-2; }

#endif
