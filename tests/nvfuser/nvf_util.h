/* tests/nvfuser/nvf_util.h: helpers of the ports of nvFuser's own tests (tests/cpp of
 * github:NVIDIA/Fuser, ported by idea, not code). Each test builds nvFuser's fusion and
 * schedule through cfuser's public calls and asserts nvFuser's outcome:
 *   nv_check:         the outputs equal the reference evaluator (nvFuser's testValidate)
 *                     on the host backend, and on CUDA when a device is present;
 *   nv_expect_refused: compiling fails with a message naming the tensor and the axis
 *                     (where nvFuser throws);
 *   nv_expect_gap:    the exact refusal where cfuser refuses what nvFuser accepts;
 *   NV_EXPECT_POS:    nvFuser's compute-at and max-producer positions, where it checks.
 * A suite-wide fusion `f` is made and freed by nv_setup / nv_teardown. Header-only. */
#ifndef CFUSER_NVF_UTIL_H
#define CFUSER_NVF_UTIL_H

#include "cfuser/execute.h"
#include "kernels/kernel_check.h"

static cf_fusion *f;
static void nv_setup(void) { f = cf_fusion_create(); }
static void nv_teardown(void) { cf_fusion_destroy(f); }

static inline cf_tv *nv_input(cf_tv *tv) {
  cf_fusion_add_input(f, tv);
  return tv;
}
static inline cf_tv *nv_symbolic(int rank) { return nv_input(cf_tensor_symbolic(f, CF_FLOAT, rank)); }
static inline cf_tv *nv_concrete(int rank, const int64_t *sizes) {
  return nv_input(cf_tensor_concrete(f, CF_FLOAT, rank, sizes));
}

/* Runs the scheduled fusion on inputs of the given shapes (random values) on the host
 * backend, and on CUDA with a device, comparing every output with the evaluator within
 * tol (long float sums are summed in another order than the evaluator's doubles). */
static inline void nv_check_tol(int nin, const KcInput *inputs, double tol) {
  cr_assert_eq(cf_fusion_status(f), CF_OK, "scheduling failed: %s", cf_fusion_error(f));
  cr_assert_eq(cf_fusion_verify(f), CF_OK, "IR verifier: %s", cf_fusion_error(f));
  tu_assert_io_fits(f, nin);
  DLManagedTensor *in[TU_MAX_IO] = {0}, *want[TU_MAX_IO] = {0};
  const DLTensor *ins[TU_MAX_IO];
  for (int i = 0; i < nin; i++) {
    in[i] = kc_make_input(&inputs[i], 77 + (uint64_t)i);
    ins[i] = &in[i]->dl_tensor;
  }
  cr_assert_eq(cf_fusion_evaluate(f, nin, ins, want), CF_OK, "evaluator: %s", cf_fusion_error(f));
  kc_run_backend(f, CF_BACKEND_HOST, nin, in, want, tol);
  if (cf_cuda_available(NULL)) kc_run_backend(f, CF_BACKEND_CUDA, nin, in, want, tol);
  for (int i = 0; i < TU_MAX_IO; i++) cf_tensor_free(in[i]), cf_tensor_free(want[i]);
}
static inline void nv_check(int nin, const KcInput *inputs) { nv_check_tol(nin, inputs, 1e-5); }

/* What define and run (cf_fusion_execute: the automatic schedulers, nvFuser's
 * FusionExecutorCache) must give and report for a fusion, nvFuser's checks of its
 * FusionKernelRuntime; a zero or NULL field is not checked. */
typedef struct NvRun {
  double tol;                /* every output against the evaluator */
  const double *scalars;     /* the values of the 0-d inputs in order (nvFuser's alpha, beta); NULL: random */
  int segments;              /* the segments of the run */
  const char *schedulers[4]; /* the row that scheduled each segment, in order */
  const char *params;        /* the params of segment 0 */
} NvRun;

/* Writes v into the 0-d floating tensor t. */
static inline void nv_set_scalar(DLManagedTensor *t, cf_dtype dt, double v) {
  cr_assert(dt == CF_DOUBLE || dt == CF_FLOAT, "a scalar input's value is set for float and double only");
  if (dt == CF_DOUBLE) *(double *)t->dl_tensor.data = v;
  else *(float *)t->dl_tensor.data = (float)v;
}

/* Runs the unscheduled fusion through define and run on the host backend, comparing every
 * output with the evaluator within want->tol and the plan with want's fields. */
static inline void nv_execute_expect(int nin, const KcInput *inputs, const NvRun *want) {
  tu_assert_io_fits(f, nin);
  DLManagedTensor *in[TU_MAX_IO] = {0}, *ref[TU_MAX_IO] = {0}, *got[TU_MAX_IO] = {0};
  const DLTensor *ins[TU_MAX_IO];
  for (int i = 0, s = 0; i < nin; i++) {
    in[i] = kc_make_input(&inputs[i], 77 + (uint64_t)i);
    if (inputs[i].rank == 0 && want->scalars) nv_set_scalar(in[i], inputs[i].dtype, want->scalars[s++]);
    ins[i] = &in[i]->dl_tensor;
  }
  int nout = cf_fusion_num_outputs(f);
  cr_assert_eq(cf_fusion_evaluate(f, nin, ins, ref), CF_OK, "evaluator: %s", cf_fusion_error(f));
  cf_fusion_cache *c = cf_fusion_cache_create(f, &(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_assert_eq(cf_fusion_execute(c, nin, ins, nout, got), CF_OK, "execute: %s", cf_fusion_cache_error(c));
  kc_compare(got, ref, nout, want->tol, "define and run");
  if (want->segments) cr_expect_eq(cf_fusion_cache_last_segments(c), want->segments);
  for (int i = 0; i < 4; i++) {
    const char *row = cf_fusion_cache_last_scheduler(c, i);
    if (want->schedulers[i]) cr_expect_str_eq(row ? row : "(none)", want->schedulers[i], "segment %d", i);
  }
  if (want->params) cr_expect_str_eq(cf_fusion_cache_last_params(c, 0), want->params);
  cf_fusion_cache_destroy(c);
  for (int i = 0; i < TU_MAX_IO; i++) cf_tensor_free(in[i]), cf_tensor_free(ref[i]), cf_tensor_free(got[i]);
}

/* nv_execute_expect within 1e-5, the plan unchecked. */
static inline void nv_execute_check(int nin, const KcInput *inputs) {
  nv_execute_expect(nin, inputs, &(NvRun){.tol = 1e-5});
}

/* nv_expect_gap for define and run: the first call through cf_fusion_execute fails with
 * exactly msg. */
static inline void nv_execute_gap(int nin, const KcInput *inputs, const char *msg) {
  tu_assert_io_fits(f, nin);
  DLManagedTensor *in[TU_MAX_IO] = {0}, *got[TU_MAX_IO] = {0};
  const DLTensor *ins[TU_MAX_IO];
  for (int i = 0; i < nin; i++) {
    in[i] = kc_make_input(&inputs[i], 77 + (uint64_t)i);
    ins[i] = &in[i]->dl_tensor;
  }
  cf_fusion_cache *c = cf_fusion_cache_create(f, &(cf_executor_options){.backend = CF_BACKEND_HOST});
  cf_status s = cf_fusion_execute(c, nin, ins, cf_fusion_num_outputs(f), got);
  const char *got_msg = s == CF_OK ? "" : cf_fusion_cache_error(c);
  cr_expect_str_eq(got_msg, msg, "the refusal changed (or the gap closed: check the results with nv_execute_check): "
                   "%s", got_msg);
  cf_fusion_cache_destroy(c);
  for (int i = 0; i < TU_MAX_IO; i++) cf_tensor_free(in[i]), cf_tensor_free(got[i]);
}

/* The error of compiling f for the host backend ("" when it compiled); caller frees. */
static inline char *nv_compile_error(void) {
  if (cf_fusion_status(f) != CF_OK) return strdup(cf_fusion_error(f));
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cf_status s = cf_executor_compile(e, f);
  char *msg = strdup(s == CF_OK ? "" : cf_executor_error(e));
  cf_executor_destroy(e);
  return msg;
}

/* Where nvFuser throws: the schedule or the compile is refused, and the message names
 * each of the given words (the tensor, "axis", ...). */
static inline void nv_expect_refused(int nwords, const char *const *words) {
  char *msg = nv_compile_error();
  cr_expect_neq(msg[0], 0, "accepted, but nvFuser refuses this schedule");
  for (int i = 0; msg[0] && i < nwords; i++)
    cr_expect(strstr(msg, words[i]) != NULL, "the message does not name %s: %s", words[i], msg);
  free(msg);
}
/* Where cfuser refuses what nvFuser accepts (its known gaps, listed in docs/architecture.md
 * under the loop model): the schedule or the compile fails with exactly msg, never a
 * wrong result. When a gap closes this fails, and the test goes back to nv_check. */
static inline void nv_expect_gap(const char *msg) {
  char *got = nv_compile_error();
  cr_expect_str_eq(got, msg, "the refusal changed (or the gap closed: check the results with nv_check): %s", got);
  free(got);
}

#define NV_EXPECT_REFUSED(...)                                                    \
  nv_expect_refused(sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *), \
                    (const char *[]){__VA_ARGS__})

/* The max-producer position, read from the printed tensor (" produce_pos( N )"). */
static inline int nv_produce_pos(cf_tv *tv) {
  char *raw = tu_tv_str(f, tv), *s = strdup(raw); /* a copy: see tu_capture_fusion */
  free(raw);
  const char *p = strstr(s, "produce_pos( ");
  int n = p ? atoi(p + strlen("produce_pos( ")) : 0;
  free(s);
  return n;
}

/* nvFuser's position checks: compute-at position, and max-producer position (-1: not
 * checked by nvFuser). */
#define NV_EXPECT_POS(tv, ca, pp)                                                                     \
  do {                                                                                                \
    cr_expect_eq(cf_tv_compute_at_pos(tv), (ca), "%s: ca_pos %d, nvFuser %d", cf_tv_name(tv),         \
                 cf_tv_compute_at_pos(tv), (ca));                                                     \
    if ((pp) >= 0)                                                                                    \
      cr_expect_eq(nv_produce_pos(tv), (pp), "%s: produce_pos %d, nvFuser %d", cf_tv_name(tv),        \
                   nv_produce_pos(tv), (pp));                                                         \
  } while (0)

/* nvFuser's gemm as a fusion (FusionSimpleGemm, FusionSmemIndexing): tv[0] = A[M, K] and
 * tv[1] = B[K, N] (symbolic inputs), tv[2] = A[M, K, 1], tv[3] = B[1, K, N], tv[4] their
 * product, tv[5] = sum(tv[4], 1) (the output). */
static inline void nv_gemm(cf_tv **tv) {
  tv[0] = nv_symbolic(2);
  tv[1] = nv_symbolic(2);
  tv[2] = cf_broadcast(f, tv[0], 3, (bool[]){false, false, true});
  tv[3] = cf_broadcast(f, tv[1], 3, (bool[]){true, false, false});
  tv[4] = cf_mul(f, tv[2], tv[3]);
  tv[5] = cf_sum(f, tv[4], 1, (int[]){1});
  cf_fusion_add_output(f, tv[5]);
}

/* Parallelizes axis `axis` of each of the n tensors (nvFuser's loops over fusion.vals()). */
static inline void nv_parallelize_each(int n, cf_tv *const *tvs, int axis, cf_parallel_type p) {
  for (int i = 0; i < n; i++) cf_parallelize(f, tvs[i], axis, p);
}

#endif
